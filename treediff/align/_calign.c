/*
 * treediff.align._calign: the aligner's per-path passes in C (treediff.align.core uses them when built).
 *
 * tree()  does what core.py's dictionary encoding of both sides' paths and _tree_of do: one hash table of
 *         the path strings gives every record its path code (codes in order of first occurrence, A's records
 *         then B's, as pyarrow's dictionary_encode numbers them), then "" is added if absent, then every
 *         path's parent (the path cut at its last '/') is looked up, a missing parent being appended
 *         (first-lost-first, which is the order core._tree_of's rounds of pc.unique append them in), until
 *         the set is closed.  Returns the union's strings, ply and parent code.
 * order() does what core.py's sibling lexsort, _sum_subtrees, _preorder and the reordering after them do:
 *         children grouped by parent and sorted by (sibling key, code), a depth-first walk for the pre-order
 *         positions, and subtree sums of the per-path counts accumulated bottom-up.
 *
 * Only the CPython API and the buffer protocol are used (no numpy headers); the passes run without the GIL.
 * Every output is returned as a bytes object holding a native-endian int64 (or int32) array.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "../_chash.h"  /* mix64, hash_bytes */

/* ------------------------------------------------------------------ open addressing */
/* Slots for ``entries`` keys: the least power of two, at least ``least``, above twice the entries
 * (a load factor under one half keeps the linear probes short). */
static uint64_t slot_count(int64_t entries, uint64_t least)
{
    uint64_t size = least;
    while (size < (uint64_t)(entries * 2 + 1))
        size <<= 1;
    return size;
}

/* ``size`` int64 slots, every one -1 (empty); NULL when out of memory. */
static int64_t *empty_slots(uint64_t size)
{
    int64_t *slots = malloc(size * sizeof(int64_t));
    if (slots)
        memset(slots, 0xff, size * sizeof(int64_t));
    return slots;
}

/* ------------------------------------------------------------------ strings -> codes */
typedef struct {
    int64_t *slots;              /* -1: empty; else a code */
    uint64_t mask;
    const unsigned char **ptr;   /* per code: its bytes (inside an input buffer) */
    int64_t *len;
    uint64_t *hash;
    int64_t *ply, *parent;       /* per code, filled by tree() */
    int64_t n, cap;
} StrTab;

static int strtab_init(StrTab *t, int64_t cap)
{
    uint64_t size = slot_count(cap, 16);
    t->slots = empty_slots(size);
    t->ptr = malloc(sizeof(*t->ptr) * (size_t)(cap + 1));
    t->len = malloc(sizeof(int64_t) * (size_t)(cap + 1));
    t->hash = malloc(sizeof(uint64_t) * (size_t)(cap + 1));
    t->ply = malloc(sizeof(int64_t) * (size_t)(cap + 1));
    t->parent = malloc(sizeof(int64_t) * (size_t)(cap + 1));
    t->mask = size - 1;
    t->n = 0;
    t->cap = cap;
    if (!t->slots || !t->ptr || !t->len || !t->hash || !t->ply || !t->parent)
        return 0;
    return 1;
}

static void strtab_free(StrTab *t)
{
    free(t->slots);
    free(t->ptr);
    free(t->len);
    free(t->hash);
    free(t->ply);
    free(t->parent);
}

/* Twice the room for codes, and a slot table twice as large. */
static int strtab_grow(StrTab *t)
{
    int64_t cap = t->cap * 2 + 16;
    uint64_t size = slot_count(cap, (t->mask + 1) * 2);
    int64_t *slots = empty_slots(size);
    if (!slots)
        return 0;
    void *q;
    if (!(q = realloc(t->ptr, sizeof(*t->ptr) * (size_t)(cap + 1)))) { free(slots); return 0; }
    t->ptr = q;
    if (!(q = realloc(t->len, sizeof(int64_t) * (size_t)(cap + 1)))) { free(slots); return 0; }
    t->len = q;
    if (!(q = realloc(t->hash, sizeof(uint64_t) * (size_t)(cap + 1)))) { free(slots); return 0; }
    t->hash = q;
    if (!(q = realloc(t->ply, sizeof(int64_t) * (size_t)(cap + 1)))) { free(slots); return 0; }
    t->ply = q;
    if (!(q = realloc(t->parent, sizeof(int64_t) * (size_t)(cap + 1)))) { free(slots); return 0; }
    t->parent = q;
    free(t->slots);
    t->slots = slots;
    t->mask = size - 1;
    t->cap = cap;
    for (int64_t c = 0; c < t->n; c++) {
        uint64_t i = t->hash[c] & t->mask;
        while (slots[i] >= 0)
            i = (i + 1) & t->mask;
        slots[i] = c;
    }
    return 1;
}

/* The code of the string (p, len); added with the next code when ``add`` (else -1 when absent); -2 when out
 * of memory. */
static inline int64_t strtab_get(StrTab *t, const unsigned char *p, int64_t len, int add)
{
    uint64_t h = hash_bytes(p, len);
    uint64_t i = h & t->mask;
    for (;;) {
        int64_t c = t->slots[i];
        if (c < 0)
            break;
        if (t->hash[c] == h && t->len[c] == len && (len == 0 || memcmp(t->ptr[c], p, (size_t)len) == 0))
            return c;
        i = (i + 1) & t->mask;
    }
    if (!add)
        return -1;
    if (t->n >= t->cap) {
        if (!strtab_grow(t))
            return -2;
        i = h & t->mask;
        while (t->slots[i] >= 0)
            i = (i + 1) & t->mask;
    }
    int64_t c = t->n++;
    t->ptr[c] = p;
    t->len[c] = len;
    t->hash[c] = h;
    t->slots[i] = c;
    return c;
}

static int get_buffer(PyObject *obj, Py_buffer *view, int writable)
{
    return PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0));
}

PyDoc_STRVAR(tree_doc,
"tree(offsets_a, data_a, offsets_b, data_b, codes_out, idx_a=None, idx_b=None)\n"
"    -> (n_paths, offsets, data, ply, parent)\n\n"
"offsets_*: int64 buffers of the string offsets (n+1) into data_* (no nulls); idx_*: optional int64\n"
"buffers, the strings of the side's records (default: every string, in order); codes_out: a writable\n"
"int32 buffer of the records of A then B, filled with each record's path code.  Returns the union of\n"
"paths, closed under 'parent of' (offsets int64 bytes, data bytes), each path's ply (int64 bytes: '/'\n"
"count + 1, 0 for \"\") and parent code (int64 bytes, -1 for \"\").");

static PyObject *tree(PyObject *self, PyObject *args)
{
    PyObject *objs[7] = {NULL, NULL, NULL, NULL, NULL, Py_None, Py_None};
    if (!PyArg_ParseTuple(args, "OOOOO|OO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &objs[6]))
        return NULL;
    Py_buffer v[7];
    int used[7] = {0};
    for (int i = 0; i < 7; i++) {
        if (i >= 5 && objs[i] == Py_None)
            continue;
        if (get_buffer(objs[i], &v[i], i == 4) < 0)
            goto fail_buffers;
        used[i] = 1;
    }
    int64_t ns[2] = {(int64_t)(v[0].len / 8) - 1, (int64_t)(v[2].len / 8) - 1};  /* strings a side */
    const int64_t *idx[2] = {used[5] ? (const int64_t *)v[5].buf : NULL, used[6] ? (const int64_t *)v[6].buf : NULL};
    int64_t nn[2] = {used[5] ? (int64_t)(v[5].len / 8) : ns[0], used[6] ? (int64_t)(v[6].len / 8) : ns[1]};
    int64_t na = nn[0], nb = nn[1];
    if (ns[0] < 0 || ns[1] < 0 || v[4].len != (Py_ssize_t)((na + nb) * 4)) {
        PyErr_SetString(PyExc_ValueError, "tree: bad buffer sizes");
        goto fail_buffers;
    }
    const int64_t *off[2] = {(const int64_t *)v[0].buf, (const int64_t *)v[2].buf};
    const unsigned char *data[2] = {(const unsigned char *)v[1].buf, (const unsigned char *)v[3].buf};
    int64_t dlen[2] = {(int64_t)v[1].len, (int64_t)v[3].len};
    int32_t *codes = (int32_t *)v[4].buf;
    for (int s = 0; s < 2; s++) {
        if (ns[s] && (off[s][0] < 0 || off[s][ns[s]] > dlen[s])) {
            PyErr_SetString(PyExc_ValueError, "tree: offsets outside the data");
            goto fail_buffers;
        }
        for (int64_t i = 0; i < ns[s]; i++)
            if (off[s][i + 1] < off[s][i]) {
                PyErr_SetString(PyExc_ValueError, "tree: decreasing offsets");
                goto fail_buffers;
            }
        if (idx[s])
            for (int64_t i = 0; i < nn[s]; i++)
                if (idx[s][i] < 0 || idx[s][i] >= ns[s]) {
                    PyErr_SetString(PyExc_IndexError, "tree: index out of range");
                    goto fail_buffers;
                }
    }
    StrTab t;
    PyObject *result = NULL;
    int nomem = 0;
    if (!strtab_init(&t, na + nb + 16)) {
        strtab_free(&t);
        PyErr_NoMemory();
        goto fail_buffers;
    }
    static const unsigned char empty[1] = {0};
    Py_BEGIN_ALLOW_THREADS
    int64_t k = 0;
    for (int s = 0; s < 2 && !nomem; s++)
        for (int64_t r = 0; r < nn[s]; r++, k++) {
            int64_t i = idx[s] ? idx[s][r] : r;
            int64_t c = strtab_get(&t, data[s] + off[s][i], off[s][i + 1] - off[s][i], 1);
            if (c < 0) { nomem = 1; break; }
            codes[k] = (int32_t)c;
        }
    if (!nomem && strtab_get(&t, empty, 0, 1) < 0)
        nomem = 1;
    /* In code order; a missing parent is appended, and reached later in this same loop. */
    for (int64_t c = 0; c < t.n && !nomem; c++) {
        const unsigned char *p = t.ptr[c];
        int64_t len = t.len[c], slashes = 0, last = -1;
        for (int64_t j = 0; j < len; j++)
            if (p[j] == '/') {
                slashes++;
                last = j;
            }
        int64_t pl = len > 0 ? slashes + 1 : 0, par = -1;
        if (pl > 0) {
            par = slashes > 0 ? strtab_get(&t, p, last, 1) : strtab_get(&t, empty, 0, 1);
            if (par < 0) { nomem = 1; break; }
        }
        t.ply[c] = pl;      /* (after the lookup: it may have grown the arrays) */
        t.parent[c] = par;
    }
    Py_END_ALLOW_THREADS
    if (nomem) {
        PyErr_NoMemory();
        goto done;
    }
    {
        int64_t n = t.n, total = 0;
        for (int64_t c = 0; c < n; c++)
            total += t.len[c];
        PyObject *offsets = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)((n + 1) * 8));
        PyObject *bytes = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
        PyObject *ply_b = PyBytes_FromStringAndSize((const char *)t.ply, (Py_ssize_t)(n * 8));
        PyObject *par_b = PyBytes_FromStringAndSize((const char *)t.parent, (Py_ssize_t)(n * 8));
        if (offsets && bytes && ply_b && par_b) {
            int64_t *o = (int64_t *)PyBytes_AS_STRING(offsets);
            char *d = PyBytes_AS_STRING(bytes);
            int64_t at = 0;
            for (int64_t c = 0; c < n; c++) {
                o[c] = at;
                if (t.len[c])
                    memcpy(d + at, t.ptr[c], (size_t)t.len[c]);
                at += t.len[c];
            }
            o[n] = at;
            result = Py_BuildValue("(nNNNN)", (Py_ssize_t)n, offsets, bytes, ply_b, par_b);
        } else {
            Py_XDECREF(offsets);
            Py_XDECREF(bytes);
            Py_XDECREF(ply_b);
            Py_XDECREF(par_b);
        }
    }
done:
    strtab_free(&t);
    for (int i = 0; i < 7; i++)
        if (used[i])
            PyBuffer_Release(&v[i]);
    return result;
fail_buffers:
    for (int i = 0; i < 7; i++)
        if (used[i])
            PyBuffer_Release(&v[i]);
    return NULL;
}

/* ------------------------------------------------------------------ sibling order, subtree sums, pre-order */
static const int64_t *sort_key;

static int by_key(const void *x, const void *y)
{
    int64_t i = *(const int64_t *)x, j = *(const int64_t *)y;
    if (sort_key[i] != sort_key[j])
        return sort_key[i] < sort_key[j] ? -1 : 1;
    return i < j ? -1 : (i > j);
}

PyDoc_STRVAR(order_doc,
"order(ply, parent, key, sums, width) -> (src, parent_row, sums_out) or None\n\n"
"Per path code: ply (int64), parent (int64, -1 for the root only), sibling key (int64), and ``sums``\n"
"(int64, n x width, row-major) of its own counts.  Rows are ordered depth-first, siblings by (key,\n"
"code); returns each row's path code, its parent's row (-1 for the root) and its subtree sums (in row\n"
"order), as int64 bytes.  None when the tree is not one tree of consecutive plies rooted at the only\n"
"ply-0 path (core.py's numpy pass then runs).");

static PyObject *order(PyObject *self, PyObject *args)
{
    PyObject *objs[4];
    Py_ssize_t width;
    if (!PyArg_ParseTuple(args, "OOOOn", &objs[0], &objs[1], &objs[2], &objs[3], &width))
        return NULL;
    Py_buffer v[4];
    int got = 0;
    for (; got < 4; got++)
        if (get_buffer(objs[got], &v[got], 0) < 0)
            goto fail;
    int64_t n = (int64_t)(v[0].len / 8);
    if (width < 1 || v[1].len != v[0].len || v[2].len != v[0].len || v[3].len != (Py_ssize_t)(n * 8 * width)) {
        PyErr_SetString(PyExc_ValueError, "order: bad buffer sizes");
        goto fail;
    }
    const int64_t *ply = v[0].buf, *parent = v[1].buf, *key = v[2].buf, *sums = v[3].buf;
    PyObject *result = NULL;
    int64_t *start = calloc((size_t)(n + 2), sizeof(int64_t));
    int64_t *kids = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int64_t *src = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int64_t *pos = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int64_t *prow = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int64_t *stack = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int64_t *out = malloc(sizeof(int64_t) * (size_t)(n * width + 1));
    if (!start || !kids || !src || !pos || !prow || !stack || !out) {
        PyErr_NoMemory();
        goto done;
    }
    int ok = 1;
    int64_t root = -1;
    /* (The GIL stays held: qsort's comparator reads the static sort_key.) */
    for (int64_t c = 0; c < n && ok; c++) {
        int64_t p = parent[c];
        if (p < 0) {
            if (root >= 0 || ply[c] != 0)
                ok = 0;
            root = c;
        } else if (p >= n || ply[c] != ply[p] + 1) {
            ok = 0;
        } else {
            start[p + 1]++;
        }
    }
    if (root < 0)
        ok = 0;
    if (ok) {
        for (int64_t c = 0; c < n; c++)
            start[c + 1] += start[c];
        /* Children of each parent in code order (a stable counting sort), then by (key, code). */
        int64_t *fill = stack;
        memcpy(fill, start, sizeof(int64_t) * (size_t)n);
        for (int64_t c = 0; c < n; c++)
            if (parent[c] >= 0)
                kids[fill[parent[c]]++] = c;
        sort_key = key;
        for (int64_t p = 0; p < n; p++) {
            int64_t lo = start[p], hi = start[p + 1];
            if (hi - lo < 2)
                continue;
            if (hi - lo <= 16) {
                for (int64_t i = lo + 1; i < hi; i++) {
                    int64_t x = kids[i], j = i;
                    while (j > lo && (key[kids[j - 1]] > key[x] || (key[kids[j - 1]] == key[x] && kids[j - 1] > x))) {
                        kids[j] = kids[j - 1];
                        j--;
                    }
                    kids[j] = x;
                }
            } else {
                qsort(kids + lo, (size_t)(hi - lo), sizeof(int64_t), by_key);
            }
        }
        /* Pre-order: a stack of codes, children pushed in reverse. */
        int64_t top = 0, at = 0;
        stack[top++] = root;
        prow[root] = -1;
        while (top) {
            int64_t c = stack[--top];
            pos[c] = at;
            src[at++] = c;
            for (int64_t i = start[c + 1] - 1; i >= start[c]; i--) {
                stack[top++] = kids[i];
                prow[kids[i]] = at - 1;
            }
        }
        if (at != n)
            ok = 0;
        else {
            /* Subtree sums: rows in reverse pre-order come after all their descendants. */
            for (int64_t r = 0; r < n; r++) {  /* (a loop: memcpy of a row is a libc call) */
                const int64_t *from = sums + src[r] * width;
                int64_t *to = out + r * width;
                for (Py_ssize_t w = 0; w < width; w++)
                    to[w] = from[w];
            }
            for (int64_t r = n - 1; r > 0; r--) {
                int64_t q = prow[src[r]];
                for (Py_ssize_t w = 0; w < width; w++)
                    out[q * width + w] += out[r * width + w];
            }
            for (int64_t r = 0; r < n; r++)
                stack[r] = prow[src[r]];
        }
    }
    if (!ok) {
        result = Py_None;
        Py_INCREF(result);
    } else {
        result = Py_BuildValue("(y#y#y#)", (const char *)src, (Py_ssize_t)(n * 8), (const char *)stack,
                               (Py_ssize_t)(n * 8), (const char *)out, (Py_ssize_t)(n * 8 * width));
    }
done:
    free(start); free(kids); free(src); free(pos); free(prow); free(stack); free(out);
    for (int i = 0; i < 4; i++)
        PyBuffer_Release(&v[i]);
    return result;
fail:
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&v[i]);
    return NULL;
}


/* ------------------------------------------------------------------ the visit tree */
/* (code, visit) -> first RESULT index: open addressing over int64 keys. */
typedef struct {
    int64_t *keys, *vals;
    uint64_t mask;
} PairTab;

static int pairtab_init(PairTab *t, int64_t n)
{
    uint64_t size = slot_count(n, 16);
    t->keys = malloc(size * sizeof(int64_t));
    t->vals = empty_slots(size);  /* val -1: empty */
    t->mask = size - 1;
    if (!t->keys || !t->vals)
        return 0;
    return 1;
}

/* The slot of key (its value -1 when absent). */
static inline uint64_t pairtab_slot(const PairTab *t, int64_t key)
{
    uint64_t i = mix64((uint64_t)key) & t->mask;
    while (t->vals[i] >= 0 && t->keys[i] != key)
        i = (i + 1) & t->mask;
    return i;
}

PyDoc_STRVAR(visit_tree_doc,
"visit_tree(code, parent, ply, is_result, is_move, depth, visit, parent_visit, out, main_visit)\n\n"
"treediff.parse.visits.visit_tree in one pass per step.  Per record: code, visit, parent_visit (int64),\n"
"is_result, is_move (uint8), depth (float64, NaN: unknown); per path code: parent, ply (int64).  ``out``:\n"
"a writable int64 buffer of 8 x n_results, filled with the RESULT arrays (result, code, visit, entering,\n"
"parent_visit, parent_result, is_main, anchor) and ``main_visit`` (int64 per code); returns the nodes array\n"
"(int64 bytes, per RESULT).");

static PyObject *visit_tree(PyObject *self, PyObject *args)
{
    PyObject *objs[10];
    if (!PyArg_ParseTuple(args, "OOOOOOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5],
                          &objs[6], &objs[7], &objs[8], &objs[9]))
        return NULL;
    Py_buffer v[10];
    int got = 0;
    for (; got < 10; got++)
        if (get_buffer(objs[got], &v[got], got >= 8) < 0)
            goto fail;
    const int64_t *code = v[0].buf, *parent = v[1].buf, *ply = v[2].buf;
    const uint8_t *is_result = v[3].buf, *is_move = v[4].buf;
    const double *depth = v[5].buf;
    const int64_t *visit = v[6].buf, *pvis = v[7].buf;
    int64_t n = (int64_t)(v[0].len / 8), n_codes = (int64_t)(v[1].len / 8);
    int64_t nr = 0;
    for (int64_t i = 0; i < (int64_t)v[3].len && i < n; i++)
        nr += is_result[i] != 0;
    if (v[2].len != v[1].len || v[3].len != (Py_ssize_t)n || v[4].len != (Py_ssize_t)n || v[5].len != (Py_ssize_t)(n * 8)
        || v[6].len != (Py_ssize_t)(n * 8) || v[7].len != (Py_ssize_t)(n * 8) || v[8].len != (Py_ssize_t)(nr * 8 * 8)
        || v[9].len != (Py_ssize_t)(n_codes * 8)) {
        PyErr_SetString(PyExc_ValueError, "visit_tree: bad buffer sizes");
        goto fail;
    }
    for (int64_t i = 0; i < n; i++)
        if (code[i] < 0 || code[i] >= n_codes) {
            PyErr_SetString(PyExc_ValueError, "visit_tree: code out of range");
            goto fail;
        }
    for (int64_t c = 0; c < n_codes; c++)
        if (parent[c] >= n_codes || ply[c] < 0) {
            PyErr_SetString(PyExc_ValueError, "visit_tree: parent or ply out of range");
            goto fail;
        }
    int64_t *out = v[8].buf, *main_visit = v[9].buf;
    int64_t *res = out, *r_code = out + nr, *r_visit = out + 2 * nr, *entering = out + 3 * nr, *r_pv = out + 4 * nr,
            *parent_result = out + 5 * nr, *is_main = out + 6 * nr, *anchor = out + 7 * nr;
    PyObject *result = NULL;
    int64_t max_ply = 0;
    for (int64_t c = 0; c < n_codes; c++)
        if (ply[c] > max_ply)
            max_ply = ply[c];
    int64_t *last_move = malloc(sizeof(int64_t) * (size_t)(n_codes + 1));
    int64_t *next_res = malloc(sizeof(int64_t) * (size_t)(n_codes + 1));
    int64_t *count = calloc((size_t)(n_codes + 1), sizeof(int64_t));
    int64_t *lvl = calloc((size_t)(max_ply + 3), sizeof(int64_t));
    int64_t *by_ply = malloc(sizeof(int64_t) * (size_t)(nr + 1));
    int64_t *best = malloc(sizeof(int64_t) * (size_t)(n_codes + 1));
    int64_t *nodes = malloc(sizeof(int64_t) * (size_t)(nr + 1));
    PairTab pt = {NULL, NULL, 0};
    if (!last_move || !next_res || !count || !lvl || !by_ply || !best || !nodes || !pairtab_init(&pt, nr)) {
        PyErr_NoMemory();
        goto done;
    }
    /* RESULTs in record order, their entering decision (the latest MOVE of the path before them). */
    for (int64_t c = 0; c < n_codes; c++)
        last_move[c] = next_res[c] = best[c] = -1;
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        if (is_move[i])
            last_move[code[i]] = i;
        if (is_result[i]) {
            int64_t c = code[i];
            res[k] = i;
            r_code[k] = c;
            r_visit[k] = visit[i];
            entering[k] = last_move[c];
            r_pv[k] = last_move[c] >= 0 ? pvis[last_move[c]] : 0;
            count[c]++;
            k++;
        }
    }
    /* Without an entering decision (or its parent_visit): the parent's first visit to close after it (its
     * visit number), else the one still open (the parent's RESULT count + 1).  Then none for a top node. */
    for (k = nr - 1; k >= 0; k--) {
        int64_t p = parent[r_code[k]];
        if (p >= 0 && r_pv[k] < 1)
            r_pv[k] = next_res[p] >= 0 ? r_visit[next_res[p]] : count[p] + 1;
        if (p < 0)
            r_pv[k] = 0;
        next_res[r_code[k]] = k;
    }
    /* The parent visit's RESULT: the first RESULT of the parent with that visit number (negatives as 0). */
    int64_t vmax = 0;
    for (k = 0; k < nr; k++) {
        if (r_visit[k] > vmax) vmax = r_visit[k];
        if (r_pv[k] > vmax) vmax = r_pv[k];
    }
    vmax += 2;
    for (k = 0; k < nr; k++) {
        int64_t key = r_code[k] * vmax + (r_visit[k] > 0 ? r_visit[k] : 0);
        uint64_t s = pairtab_slot(&pt, key);
        if (pt.vals[s] < 0) {
            pt.keys[s] = key;
            pt.vals[s] = k;
        }
    }
    for (k = 0; k < nr; k++) {
        int64_t p = parent[r_code[k]];
        parent_result[k] = -1;
        if (p >= 0) {
            uint64_t s = pairtab_slot(&pt, p * vmax + (r_pv[k] > 0 ? r_pv[k] : 0));
            parent_result[k] = pt.vals[s];
        }
    }
    /* Main visit of a node without a parent: its last visit, or the one its MOVE records show still open. */
    for (int64_t c = 0; c < n_codes; c++)
        main_visit[c] = 0;
    for (k = 0; k < nr; k++)
        if (parent[r_code[k]] < 0 && r_visit[k] > main_visit[r_code[k]])
            main_visit[r_code[k]] = r_visit[k];
    for (int64_t i = 0; i < n; i++)
        if (is_move[i]) {
            int64_t p = parent[code[i]];
            if (p >= 0 && parent[p] < 0 && pvis[i] > main_visit[p])
                main_visit[p] = pvis[i];
        }
    /* RESULTs by ply (a stable counting sort: record order within a ply). */
    for (k = 0; k < nr; k++)
        lvl[ply[r_code[k]] + 1]++;
    for (int64_t l = 0; l <= max_ply; l++)
        lvl[l + 1] += lvl[l];
    {
        int64_t *fill = malloc(sizeof(int64_t) * (size_t)(max_ply + 2));
        if (!fill) {
            PyErr_NoMemory();
            goto done;
        }
        memcpy(fill, lvl, sizeof(int64_t) * (size_t)(max_ply + 1));
        for (k = 0; k < nr; k++)
            by_ply[fill[ply[r_code[k]]]++] = k;
        free(fill);
    }
    for (k = 0; k < nr; k++) {
        is_main[k] = 0;
        anchor[k] = -1;
    }
    /* Top-down, ply by ply: main visits, and each visit's anchor on the main line. */
    for (int64_t l = 0; l <= max_ply; l++) {
        int64_t lo = lvl[l], hi = lvl[l + 1];
        if (lo == hi)
            continue;
        /* Top nodes: the last RESULT with the main visit's number. */
        for (int64_t j = lo; j < hi; j++) {
            int64_t r = by_ply[j], c = r_code[r];
            if (parent[c] < 0 && r_visit[r] == main_visit[c])
                best[c] = r;
        }
        for (int64_t j = lo; j < hi; j++) {
            int64_t r = by_ply[j], c = r_code[r];
            if (parent[c] < 0 && best[c] >= 0) {
                is_main[best[c]] = 1;
                best[c] = -1;
            }
        }
        for (int64_t j = lo; j < hi; j++) {
            int64_t r = by_ply[j];
            if (parent[r_code[r]] < 0 && is_main[r])
                anchor[r] = r_code[r];
        }
        /* Other nodes: among the visits in the parent's main visit, the deepest (NaN lowest), the last among
         * equals. */
        for (int64_t j = lo; j < hi; j++) {
            int64_t r = by_ply[j], c = r_code[r], p = parent[c];
            if (p < 0)
                continue;
            int64_t mv = main_visit[p];
            if (!(mv > 0 && r_pv[r] == mv))
                continue;
            int64_t b = best[c];
            if (b < 0) {
                best[c] = r;
                continue;
            }
            double db = depth[res[b]], dr = depth[res[r]];
            if (db != db) db = -HUGE_VAL;
            if (dr != dr) dr = -HUGE_VAL;
            if (dr > db || (dr == db && res[r] > res[b]))
                best[c] = r;
        }
        for (int64_t j = lo; j < hi; j++) {
            int64_t r = by_ply[j], c = r_code[r];
            if (parent[c] >= 0 && best[c] >= 0) {
                is_main[best[c]] = 1;
                main_visit[c] = r_visit[best[c]];
                best[c] = -1;
            }
        }
        for (int64_t j = lo; j < hi; j++) {
            int64_t r = by_ply[j], c = r_code[r], p = parent[c];
            if (p < 0)
                continue;
            int64_t pr = parent_result[r];
            int64_t a = pr >= 0 ? anchor[pr] : -1;
            if (pr < 0 && parent[p] < 0 && r_pv[r] == main_visit[p] && main_visit[p] > 0)
                a = p;
            anchor[r] = is_main[r] ? c : a;
        }
    }
    /* Bottom-up: RESULT records under each visit. */
    for (k = 0; k < nr; k++)
        nodes[k] = 1;
    for (int64_t j = nr - 1; j >= 0; j--) {
        int64_t r = by_ply[j];
        if (parent_result[r] >= 0)
            nodes[parent_result[r]] += nodes[r];
    }
    result = PyBytes_FromStringAndSize((const char *)nodes, (Py_ssize_t)(nr * 8));
done:
    free(last_move); free(next_res); free(count); free(lvl); free(by_ply); free(best); free(nodes);
    free(pt.keys); free(pt.vals);
    for (int i = 0; i < 10; i++)
        PyBuffer_Release(&v[i]);
    return result;
fail:
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&v[i]);
    return NULL;
}

/* ------------------------------------------------------------------ decisions */
PyDoc_STRVAR(decisions_doc,
"decisions(code, is_move, parent_visit, parent, main_visit, order_out, count_out, start_out) -> m\n\n"
"core._main_decisions plus core._Decisions' grouping, for records in seq order.  Per record: code,\n"
"parent_visit (int64), is_move (uint8); per path code: parent, main_visit (int64).  A MOVE is kept when\n"
"its parent_visit is its parent's main visit (> 0), or, for a path its parent's main visit decided\n"
"nothing about, when it is the highest parent_visit among the path's MOVEs.  Fills order_out[:m] with the\n"
"kept MOVEs' record indices grouped by path code (record order within a code), count_out and start_out\n"
"(int64 per code: kept MOVEs, first index into order_out).");

static PyObject *decisions(PyObject *self, PyObject *args)
{
    PyObject *objs[8];
    if (!PyArg_ParseTuple(args, "OOOOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &objs[6],
                          &objs[7]))
        return NULL;
    Py_buffer v[8];
    int got = 0;
    for (; got < 8; got++)
        if (get_buffer(objs[got], &v[got], got >= 5) < 0)
            goto fail;
    int64_t n = (int64_t)(v[0].len / 8), np_ = (int64_t)(v[3].len / 8);
    if (v[1].len != (Py_ssize_t)n || v[2].len != (Py_ssize_t)(n * 8) || v[4].len != v[3].len
        || v[5].len != (Py_ssize_t)(n * 8) || v[6].len != v[3].len || v[7].len != v[3].len) {
        PyErr_SetString(PyExc_ValueError, "decisions: bad buffer sizes");
        goto fail;
    }
    const int64_t *code = v[0].buf, *pv = v[2].buf, *parent = v[3].buf, *main_visit = v[4].buf;
    const uint8_t *is_move = v[1].buf;
    int64_t *order = v[5].buf, *count = v[6].buf, *start = v[7].buf;
    for (int64_t i = 0; i < n; i++)
        if (code[i] < 0 || code[i] >= np_) {
            PyErr_SetString(PyExc_ValueError, "decisions: code out of range");
            goto fail;
        }
    for (int64_t c = 0; c < np_; c++)
        if (parent[c] >= np_) {
            PyErr_SetString(PyExc_ValueError, "decisions: parent out of range");
            goto fail;
        }
    uint8_t *decided = calloc((size_t)(np_ + 1), 1);
    int64_t *latest = malloc(sizeof(int64_t) * (size_t)(np_ + 1));
    if (!decided || !latest) {
        free(decided);
        free(latest);
        PyErr_NoMemory();
        goto fail;
    }
    for (int64_t c = 0; c < np_; c++) {
        latest[c] = INT64_MIN;
        count[c] = 0;
    }
    for (int64_t i = 0; i < n; i++) {
        if (!is_move[i])
            continue;
        int64_t c = code[i], p = parent[c];
        if (p >= 0 && main_visit[p] > 0 && pv[i] == main_visit[p])
            decided[c] = 1;
        if (pv[i] > latest[c])
            latest[c] = pv[i];
    }
    /* keep: counted, then placed (a stable counting sort by code). */
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            int64_t at = 0;
            for (int64_t c = 0; c < np_; c++) {
                start[c] = at;
                at += count[c];
            }
        }
        for (int64_t i = 0; i < n; i++) {
            if (!is_move[i])
                continue;
            int64_t c = code[i], p = parent[c];
            int in_main = p >= 0 && main_visit[p] > 0 && pv[i] == main_visit[p];
            if (!(in_main || (!decided[c] && pv[i] == latest[c])))
                continue;
            if (pass == 0)
                count[c]++;
            else
                order[start[c]++] = i;
        }
    }
    int64_t m = 0;
    for (int64_t c = 0; c < np_; c++) {  /* (start[c] was advanced past its group) */
        start[c] -= count[c];
        m += count[c];
    }
    free(decided);
    free(latest);
    for (int i = 0; i < 8; i++)
        PyBuffer_Release(&v[i]);
    return PyLong_FromLongLong((long long)m);
fail:
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&v[i]);
    return NULL;
}

static PyMethodDef methods[] = {
    {"tree", tree, METH_VARARGS, tree_doc},
    {"order", order, METH_VARARGS, order_doc},
    {"visit_tree", visit_tree, METH_VARARGS, visit_tree_doc},
    {"decisions", decisions, METH_VARARGS, decisions_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_calign",
    "Compiled per-path passes of the aligner (optional; see treediff.align.core).",
    -1, methods,
};

PyMODINIT_FUNC PyInit__calign(void)
{
    return PyModule_Create(&module);
}
