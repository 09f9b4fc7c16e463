/*
 * treediff.report._ctries: the move-try derivation of treediff.report.tries in C.
 *
 * derive() does, for one batch of records in trace order, exactly what the
 * numpy implementation (treediff.report.tries._derive_numpy, with
 * treediff.parse.visits.visit_tree) does: path dictionary, nodes (a path in
 * one run: one iteration of one search), node visits, move tries, cutoff
 * classes, fail highs and, with full=1, the visit tree (entering decisions,
 * parent visits, main visits, RESULT records under each visit) and every
 * try's subtree nodes.  It is a few linear passes over the records with hash
 * tables (paths, visits, tries) and counting sorts (plies, visits), instead of
 * numpy's factorizations, sorts and ufunc.at reductions.  The tests hold both
 * implementations equal on every fixture and on random traces
 * (tests/report/test_ctries.py).
 *
 * first_codes() numbers the groups of packed keys in order of first appearance (group_rows) through a
 * table indexed by the key, where pandas.factorize hashes (tests/report/test_grouped.py).
 *
 * last_in_runs() marks the last row of each (run, key) pair where runs come one after the other (residual's
 * last decision of each move in an iteration) in one pass, where numpy sorts (tests/report/test_residual.py).
 *
 * cell_counts() is the per-cell counting of several tables (np.bincount of packed keys over masked
 * records) in one pass, without the masked copies (tests/report/test_cell_counts.py).
 *
 * scope_visits() does the node-visit part of the scope table
 * (treediff.report.tables.scope, its numpy path with the parser's visit
 * columns): visits, their members and what each prune needs, in a few linear
 * passes (tests/report/test_scope_kernel.py holds the two equal).
 *
 * Every index given or returned is a record position in trace order (0..n-1),
 * or an index into the RESULT records in trace order (parent_result, prev).
 * Only the CPython API and the buffer protocol are used (no numpy headers);
 * the passes run without the GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <sys/mman.h>
#ifdef CTRIES_TIMING
#include <stdio.h>
#include <time.h>
/* Thread CPU seconds of each phase: the read-ahead thread decoding the next batch is not counted. */
#define PHASE(name) do { struct timespec ts_; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts_); double now_ = ts_.tv_sec + ts_.tv_nsec * 1e-9; fprintf(stderr, "%-12s %.3f\n", name, now_ - t0_); t0_ = now_; } while (0)
#else
#define PHASE(name) do { } while (0)
#endif

/* Cutoff classes: must match treediff.report.tries.CLASSES. */
#define C_MOVE 0
#define C_NULL 1
#define C_PROBCUT 2
#define C_MULTICUT 3
#define C_NONE 4

#include "../_chash.h"  /* mix64, hash_bytes */

/* Large tables are accessed at random: ask for transparent huge pages (fewer TLB misses), where the kernel
 * gives them on request. */
static void *big_alloc(size_t bytes, int zero)
{
    void *p = NULL;
    if (bytes >= ((size_t)4 << 20)) {
#ifdef MADV_HUGEPAGE
        if (posix_memalign(&p, (size_t)2 << 20, bytes) != 0)
            p = NULL;
        if (p)
            madvise(p, bytes, MADV_HUGEPAGE);
#endif
    }
    if (!p)
        p = malloc(bytes ? bytes : 1);
    if (p && zero)
        memset(p, 0, bytes);
    return p;
}

static inline void *big_alloc0(size_t bytes)
{
    return big_alloc(bytes, 0);
}

static uint64_t pow2_at_least(uint64_t x)
{
    uint64_t p = 16;
    while (p < x)
        p <<= 1;
    return p;
}

/* ------------------------------------------------------------------ strings -> codes */
typedef struct {
    uint64_t *slots;  /* 0: empty; else (hash >> 32) << 32 | (code + 1) */
    uint64_t mask;
    int64_t *start, *len;
    uint64_t *hash;   /* per code, to grow the table */
    int64_t n;
} StrTab;

/* cap: the most codes there can be; the slot table starts for ``guess`` of them and grows. */
static int strtab_init(StrTab *t, int64_t cap, int64_t guess)
{
    uint64_t size = pow2_at_least((uint64_t)(guess * 2 + 1));
    t->slots = big_alloc(size * sizeof(uint64_t), 1);
    t->start = big_alloc(sizeof(int64_t) * (size_t)(cap + 1), 0);
    t->len = big_alloc(sizeof(int64_t) * (size_t)(cap + 1), 0);
    t->hash = big_alloc(sizeof(uint64_t) * (size_t)(cap + 1), 0);
    t->mask = size - 1;
    t->n = 0;
    return t->slots && t->start && t->len && t->hash;
}

static void strtab_free(StrTab *t)
{
    free(t->slots);
    free(t->start);
    free(t->len);
    free(t->hash);
}

static int strtab_grow(StrTab *t)
{
    uint64_t size = (t->mask + 1) * 2;
    uint64_t *slots = big_alloc(size * sizeof(uint64_t), 1);
    if (!slots)
        return 0;
    for (int64_t c = 0; c < t->n; c++) {
        uint64_t h = t->hash[c], i = h & (size - 1);
        while (slots[i])
            i = (i + 1) & (size - 1);
        slots[i] = ((h >> 32) << 32) | (uint64_t)(c + 1);
    }
    free(t->slots);
    t->slots = slots;
    t->mask = size - 1;
    return 1;
}

/* The code of a string (a new one, numbered from 0, when it is new); -1 when memory runs out. */
static int64_t strtab_get(StrTab *t, const unsigned char *data, int64_t st, int64_t ln)
{
    uint64_t h = hash_bytes(data + st, ln);
    uint64_t tag = h >> 32;
    uint64_t i = h & t->mask;
    for (;;) {
        uint64_t s = t->slots[i];
        if (!s)
            break;
        if ((s >> 32) == tag) {
            int64_t c = (int64_t)(s & 0xffffffffULL) - 1;
            if (t->len[c] == ln && memcmp(data + t->start[c], data + st, (size_t)ln) == 0)
                return c;
        }
        i = (i + 1) & t->mask;
    }
    if ((uint64_t)(t->n + 1) * 2 > t->mask + 1) {
        if (!strtab_grow(t))
            return -1;
        i = h & t->mask;
        while (t->slots[i])
            i = (i + 1) & t->mask;
    }
    int64_t c = t->n++;
    t->start[c] = st;
    t->len[c] = ln;
    t->hash[c] = h;
    t->slots[i] = (tag << 32) | (uint64_t)(c + 1);
    return c;
}

/* The path code of a whole string looked up in ``t``: ``t``'s own numbers are mapped to the walk's codes
 * (``to_code``), a new string taking the next one (``*n_codes``); -1 when memory runs out. */
static inline int64_t whole_string_code(StrTab *t, int64_t *to_code, int64_t *n_codes, const unsigned char *data,
                                        int64_t st, int64_t ln)
{
    int64_t before = t->n;
    int64_t c = strtab_get(t, data, st, ln);
    if (c < 0)
        return -1;
    if (c == before)
        to_code[c] = (*n_codes)++;
    return to_code[c];
}

/* ------------------------------------------------------------------ (int64, int64) -> id */
typedef struct {
    int64_t a, b, val;  /* val -1: empty; one slot is one cache line's third, so a probe costs one miss */
} PairSlot;

typedef struct {
    PairSlot *slot;
    uint64_t mask;
    int64_t n;
} PairTab;

static int pairtab_alloc(PairTab *t, uint64_t size)
{
    t->slot = big_alloc(sizeof(PairSlot) * size, 0);
    t->mask = size - 1;
    t->n = 0;
    if (!t->slot)
        return 0;
    for (uint64_t i = 0; i < size; i++)
        t->slot[i].val = -1;
    return 1;
}

static int pairtab_init(PairTab *t, int64_t cap)
{
    return pairtab_alloc(t, pow2_at_least((uint64_t)(cap * 2 + 1)));
}

static void pairtab_free(PairTab *t)
{
    free(t->slot);
}

static inline uint64_t pair_hash(int64_t a, int64_t b)
{
    return mix64((uint64_t)a * 0x9E3779B97F4A7C15ULL ^ mix64((uint64_t)b + 0x632BE59BD9B4E019ULL));
}

/* The value of (a, b); when absent: -1 if newval < 0, else (a, b) is inserted with value newval (and -2 when
 * memory runs out).  The table grows (load at most 1/2). */
static int64_t pairtab_get(PairTab *t, int64_t a, int64_t b, int64_t newval)
{
    uint64_t i = pair_hash(a, b) & t->mask;
    for (;;) {
        PairSlot *sl = &t->slot[i];
        if (sl->val < 0)
            break;
        if (sl->a == a && sl->b == b)
            return sl->val;
        i = (i + 1) & t->mask;
    }
    if (newval < 0)
        return -1;
    if ((uint64_t)(t->n + 1) * 2 > t->mask + 1) {
        PairTab old = *t;
        if (!pairtab_alloc(t, (old.mask + 1) * 2)) {
            *t = old;
            return -2;
        }
        for (uint64_t j = 0; j <= old.mask; j++) {
            if (old.slot[j].val < 0)
                continue;
            uint64_t k = pair_hash(old.slot[j].a, old.slot[j].b) & t->mask;
            while (t->slot[k].val >= 0)
                k = (k + 1) & t->mask;
            t->slot[k] = old.slot[j];
        }
        t->n = old.n;
        pairtab_free(&old);
        i = pair_hash(a, b) & t->mask;
        while (t->slot[i].val >= 0)
            i = (i + 1) & t->mask;
    }
    t->slot[i].a = a;
    t->slot[i].b = b;
    t->slot[i].val = newval;
    t->n++;
    return newval;
}

/* (key, sub) -> id with one cached (sub, id) per key in front of a pair table: most keys (a node) have one
 * sub-key (a visit number) only.  A key's cached pair, when replaced, goes to the table, so every pair is in
 * one of the two.  EMPTY marks an unused cache entry. */
#define EMPTY INT64_MIN
static inline int64_t cached_get(int64_t *c_sub, int64_t *c_id, PairTab *t, int64_t key, int64_t sub,
                                 int64_t newval)
{
    if (c_sub[key] == sub)
        return c_id[key];
    int64_t id;
    if (c_sub[key] == EMPTY) {
        id = newval;
    } else {
        id = pairtab_get(t, key, sub, -1);
        if (id == -1)
            id = newval;
        if (pairtab_get(t, key, c_sub[key], c_id[key]) == -2)
            return -2;
    }
    c_sub[key] = sub;
    c_id[key] = id;
    return id;
}

/* ------------------------------------------------------------------ children lists: (parent code, short move) -> code */
/* A path with a short last component is found as a child of its parent's code.  Most nodes have few children
 * and a depth-first trace makes them right after their parent, so each node keeps its children in a list
 * (in the order made): a lookup walks memory just written, where the pair table costs a random probe (a
 * cache miss) for every path, most of them new.  A node with more than KID_LIST_MAX children (the root, a
 * few wide nodes) moves them to the pair table, so no walk is longer than that.  Codes are made in the same
 * order either way. */
#define KID_LIST_MAX 16
typedef struct {
    uint64_t key;  /* the packed last component of the code's path (short components only) */
    int64_t next;  /* the next child of the same parent (made later), -1 */
} KidSlot;

typedef struct {
    int64_t first, last;  /* the code's children list (-1: none) */
    int64_t count;        /* children made; above KID_LIST_MAX they are in the pair table, not the list */
} KidParent;

typedef struct {
    KidSlot *kid;
    KidParent *par;
    int64_t cap;  /* codes the arrays hold */
} KidTab;

static int kidtab_reserve(KidTab *k, int64_t codes)
{
    if (codes <= k->cap)
        return 1;
    int64_t cap = k->cap ? k->cap : 1024;
    while (cap < codes)
        cap *= 2;
    KidSlot *kid = realloc(k->kid, sizeof(KidSlot) * (size_t)cap);
    if (!kid)
        return 0;
    k->kid = kid;
    KidParent *par = realloc(k->par, sizeof(KidParent) * (size_t)cap);
    if (!par)
        return 0;
    k->par = par;
    for (int64_t c = k->cap; c < cap; c++) {
        par[c].first = par[c].last = -1;
        par[c].count = 0;
    }
    k->cap = cap;
    return 1;
}

static void kidtab_free(KidTab *k)
{
    free(k->kid);
    free(k->par);
}

/* The code of the path (parent's path, packed short component): found, or made as ``(*n_codes)++``; -1 when
 * memory runs out.  The arrays must hold ``*n_codes + 1`` codes (kidtab_reserve). */
static int64_t kid_code(KidTab *k, PairTab *pt, int64_t parent, uint64_t packed, int64_t *n_codes)
{
    KidParent *p = &k->par[parent];
    int64_t code;
    if (p->count > KID_LIST_MAX) {
        code = pairtab_get(pt, parent, (int64_t)packed, -1);
        if (code >= 0)
            return code;
        code = (*n_codes)++;
        return pairtab_get(pt, parent, (int64_t)packed, code) == -2 ? -1 : code;
    }
    for (int64_t c = p->first; c >= 0; c = k->kid[c].next)
        if (k->kid[c].key == packed)
            return c;
    code = (*n_codes)++;
    k->kid[code].key = packed;
    k->kid[code].next = -1;
    if (p->last >= 0)
        k->kid[p->last].next = code;
    else
        p->first = code;
    p->last = code;
    if (++p->count > KID_LIST_MAX) {  /* a wide node: its children go to the pair table */
        for (int64_t c = p->first; c >= 0; c = k->kid[c].next)
            if (pairtab_get(pt, parent, (int64_t)k->kid[c].key, c) == -2)
                return -1;
        p->first = p->last = -1;
    }
    return code;
}

/* ------------------------------------------------------------------ grouped positions (CSR) */
/* start[g]..start[g+1] index items[] holding, for group g, the values val[j] of the j with key[j] == g (key
 * >= 0), in the order of j (ascending). */
static int csr_build(int64_t groups, const int64_t *key, const int64_t *val, int64_t m, int64_t **start_out,
                     int64_t **items_out)
{
    int64_t *start = big_alloc(((size_t)(groups + 1)) * sizeof(int64_t), 1);
    int64_t *items = big_alloc0(sizeof(int64_t) * (size_t)(m + 1));
    int64_t *fill = NULL;
    if (!start || !items)
        goto fail;
    for (int64_t j = 0; j < m; j++)
        if (key[j] >= 0)
            start[key[j] + 1]++;
    for (int64_t g = 0; g < groups; g++)
        start[g + 1] += start[g];
    fill = big_alloc0(sizeof(int64_t) * (size_t)(groups + 1));
    if (!fill)
        goto fail;
    memcpy(fill, start, sizeof(int64_t) * (size_t)(groups + 1));
    for (int64_t j = 0; j < m; j++)
        if (key[j] >= 0)
            items[fill[key[j]]++] = val[j];
    free(fill);
    *start_out = start;
    *items_out = items;
    return 1;
fail:
    free(start);
    free(items);
    free(fill);
    return 0;
}

/* csr_build over the MOVE records only: group g lists, in record order, the MOVE records i with
 * key[i] == g.  Returns 0 when out of memory. */
static int csr_of_moves(int64_t n, const uint8_t *is_move, const int64_t *key, int64_t groups,
                        int64_t **start_out, int64_t **items_out)
{
    int64_t *mkey = big_alloc0(sizeof(int64_t) * (size_t)(n + 1));
    int64_t *mpos = big_alloc0(sizeof(int64_t) * (size_t)(n + 1));
    int built = 0;
    if (mkey && mpos) {
        int64_t m = 0;
        for (int64_t i = 0; i < n; i++)
            if (is_move[i]) {
                mkey[m] = key[i];
                mpos[m] = i;
                m++;
            }
        built = csr_build(groups, mkey, mpos, m, start_out, items_out);
    }
    free(mkey);
    free(mpos);
    return built;
}

/* First index in sorted items[lo..hi) whose value is >= x. */
static inline int64_t lower_bound(const int64_t *items, int64_t lo, int64_t hi, int64_t x)
{
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (items[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* ------------------------------------------------------------------ derive */
PyDoc_STRVAR(derive_doc,
"derive(data, offsets, srow, iters, is_move, is_result, kind, kind_class, kind_alone, lower, pv, rv, depth, ply,\n"
"       full, rec_pcode, rec_node, rec_try, rec_in_main, rec_run, t_first, t_last, t_fh, t_subtree,\n"
"       r_class, r_decision, r_first, r_entering, r_main, r_parent, r_nodes, r_in_parent_main, rec_parent)\n"
"       -> n_tries\n\n"
"Inputs per record, trace order: data, offsets (int64, n+1): the paths as an Arrow large_string array's\n"
"buffers (no nulls); srow, iters (int64: search row and iteration, records of a search together);\n"
"is_move, is_result, lower (uint8); kind (int64 code, -1 missing); pv, rv (float64, NaN missing, or empty\n"
"when the column is missing: the parent_visit and visit columns, taken as 1 where missing or < 1); depth\n"
"(float64, NaN unknown); ply (int64).  Per kind code + 1: kind_class (int64: the cutoff class of a decision\n"
"kind, -1 for other kinds), kind_alone (uint8: NODE_CUT, a try of its own).  full: 0 or 1.\n"
"Outputs (written): per record (int64, n) rec_pcode, rec_node, rec_try (-1: not a MOVE), rec_in_main\n"
"(uint8), rec_run (the run: one iteration of one search, numbered in trace order); per try (room for every\n"
"MOVE record) t_first, t_last, t_fh (uint8), t_subtree; per RESULT (trace order) r_class, r_decision,\n"
"r_first, r_entering, r_main (uint8), r_parent (index of the parent visit's RESULT, -1), r_nodes,\n"
"r_in_parent_main (uint8); per record (int64, n) rec_parent: the parent path's code in rec_pcode's numbering\n"
"(the path without its last move; -1 when ply < 1).  Returns the number of tries.");

#define N_BUF 32
#define N_IN 14

/* A visit number as numpy's float64 -> int64 cast gives it, at least 1 (missing: 1). */
static inline int64_t visit_number(const double *col, int64_t n_col, int64_t i)
{
    if (n_col == 0)
        return 1;
    double x = col[i];
    int64_t v = (x != x) ? 0 : (x > -9.2e18 && x < 9.2e18) ? (int64_t)x : INT64_MIN;
    return v < 1 ? 1 : v;
}

static PyObject *derive(PyObject *self, PyObject *args)
{
    PyObject *objs[N_BUF];
    int full = 0;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOOpOOOOOOOOOOOOOOOOOO", &objs[0], &objs[1], &objs[2], &objs[3],
                          &objs[4], &objs[5], &objs[6], &objs[7], &objs[8], &objs[9], &objs[10], &objs[11],
                          &objs[12], &objs[13], &full, &objs[14], &objs[15], &objs[16], &objs[17], &objs[18],
                          &objs[19], &objs[20], &objs[21], &objs[22], &objs[23], &objs[24], &objs[25], &objs[26],
                          &objs[27], &objs[28], &objs[29], &objs[30], &objs[31]))
        return NULL;
    Py_buffer b[N_BUF];
    memset(b, 0, sizeof b);
    PyObject *result = NULL;
    int ok = 0;
    const char *err = "derive: out of memory";
    StrTab st;
    PairTab vt, tt, pt;
    KidTab kt;
    memset(&kt, 0, sizeof kt);
    memset(&pt, 0, sizeof pt);
    memset(&st, 0, sizeof st);
    memset(&vt, 0, sizeof vt);
    memset(&tt, 0, sizeof tt);
    int64_t n_codes = 0;
    int64_t *st_code = NULL, *tmp_own = NULL, *tmp_par = NULL, *renum = NULL, *stamp = NULL, *nid = NULL, *par_node = NULL,
            *parent_of = NULL, *ply_of = NULL, *rec_v = NULL, *res_pos = NULL, *res_of_v = NULL,
            *first_res_of_v = NULL, *last_move_of = NULL, *last_res_of = NULL, *prev_res = NULL,
            *first_move = NULL, *last_dec = NULL, *r_pv = NULL, *main_visit = NULL, *lvl_start = NULL,
            *lvl_items = NULL, *r_level = NULL, *best = NULL, *buf = NULL, *span_end = NULL, *t_end = NULL,
            *rcsr_start = NULL, *rcsr_items = NULL, *mcsr_start = NULL, *mcsr_items = NULL, *vcsr_start = NULL,
            *vcsr_items = NULL, *key = NULL, *posv = NULL, *vc_sub = NULL, *vc_id = NULL, *tc_sub = NULL,
            *tc_id = NULL, *s_bnd = NULL, *s_code = NULL, *pv = NULL, *rv = NULL;
    int64_t vt_n = 0;
    for (int i = 0; i < N_BUF; i++) {
        int flags = PyBUF_C_CONTIGUOUS | (i >= N_IN ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(objs[i], &b[i], flags) < 0)
            goto done;
    }
    const int64_t n = (int64_t)b[4].len;
    const int64_t n_kinds1 = (int64_t)(b[7].len / 8);
    const int64_t n_pv = (int64_t)(b[10].len / 8), n_rv = (int64_t)(b[11].len / 8);
    if (b[1].len != (n + 1) * 8 || b[2].len != n * 8 || b[3].len != n * 8 || b[5].len != n || b[6].len != n * 8
            || b[8].len != n_kinds1 || b[9].len != n || (n_pv != 0 && n_pv != n) || (n_rv != 0 && n_rv != n)
            || b[12].len != n * 8 || b[13].len != n * 8 || b[14].len != n * 8 || b[15].len != n * 8
            || b[16].len != n * 8 || b[17].len != n || b[18].len != n * 8 || b[31].len != n * 8) {
        PyErr_SetString(PyExc_ValueError, "derive: buffers of inconsistent sizes");
        goto done;
    }
    const unsigned char *data = (const unsigned char *)b[0].buf;
    const int64_t *off = (const int64_t *)b[1].buf;
    const int64_t *srow = (const int64_t *)b[2].buf;
    const int64_t *iters = (const int64_t *)b[3].buf;
    const uint8_t *is_move = (const uint8_t *)b[4].buf;
    const uint8_t *is_result = (const uint8_t *)b[5].buf;
    const int64_t *kind = (const int64_t *)b[6].buf;
    const int64_t *kind_class = (const int64_t *)b[7].buf;
    const uint8_t *kind_alone = (const uint8_t *)b[8].buf;
    const uint8_t *lower = (const uint8_t *)b[9].buf;
    const double *pv_col = (const double *)b[10].buf;
    const double *rv_col = (const double *)b[11].buf;
    const double *depth = (const double *)b[12].buf;
    const int64_t *ply = (const int64_t *)b[13].buf;
    int64_t *rec_pcode = (int64_t *)b[14].buf;
    int64_t *own = (int64_t *)b[15].buf;  /* rec_node: each record's own node */
    int64_t *try_of = (int64_t *)b[16].buf;
    uint8_t *rec_in_main = (uint8_t *)b[17].buf;
    int64_t *run = (int64_t *)b[18].buf;
    int64_t *rec_parent = (int64_t *)b[31].buf;  /* each record's parent path code (rec_pcode's numbers), -1 */
    int64_t n_mov = 0, n_res = 0;
    for (int64_t i = 0; i < n; i++) {
        n_mov += is_move[i] != 0;
        n_res += is_result[i] != 0;
        if (off[i] < 0 || off[i] > off[i + 1] || off[i + 1] > (int64_t)b[0].len) {
            PyErr_SetString(PyExc_ValueError, "derive: offsets out of range");
            goto done;
        }
        if (kind[i] < -1 || kind[i] + 1 >= n_kinds1) {
            PyErr_SetString(PyExc_ValueError, "derive: kind code out of range");
            goto done;
        }
        /* runs: one iteration of one search (a repeated ITER d starts a new run) */
        run[i] = i == 0 ? 0 : run[i - 1] + (srow[i] != srow[i - 1] || iters[i] != iters[i - 1]);
    }
    if (b[19].len != n_mov * 8 || b[20].len != n_mov * 8 || b[21].len != n_mov || b[22].len != n_mov * 8
            || b[23].len != n_res * 8 || b[24].len != n_res * 8 || b[25].len != n_res * 8 || b[26].len != n_res * 8
            || b[27].len != n_res || b[28].len != n_res * 8 || b[29].len != n_res * 8 || b[30].len != n_res) {
        PyErr_SetString(PyExc_ValueError, "derive: output buffers of inconsistent sizes");
        goto done;
    }
    /* visit numbers: parent_visit on MOVE records, visit on RESULT records (numpy's: 1 where < 1 or missing) */
    pv = big_alloc0(sizeof(int64_t) * (size_t)(n + 1));
    rv = big_alloc0(sizeof(int64_t) * (size_t)(n + 1));
    if (!pv || !rv) {
        PyErr_NoMemory();
        goto done;
    }
    for (int64_t i = 0; i < n; i++) {
        pv[i] = is_move[i] ? visit_number(pv_col, n_pv, i) : 0;
        rv[i] = is_result[i] ? visit_number(rv_col, n_rv, i) : 0;
    }
    int64_t *t_first = (int64_t *)b[19].buf, *t_last = (int64_t *)b[20].buf, *t_subtree = (int64_t *)b[22].buf;
    uint8_t *t_fh = (uint8_t *)b[21].buf;
    int64_t *r_class = (int64_t *)b[23].buf, *r_decision = (int64_t *)b[24].buf, *r_first = (int64_t *)b[25].buf,
            *r_entering = (int64_t *)b[26].buf, *r_parent = (int64_t *)b[28].buf, *r_nodes = (int64_t *)b[29].buf;
    uint8_t *r_main = (uint8_t *)b[27].buf, *r_in_parent_main = (uint8_t *)b[30].buf;
    int64_t n_t = 0;

    Py_BEGIN_ALLOW_THREADS
#ifdef CTRIES_TIMING
    double t0_;
    {
        struct timespec ts0_;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts0_);
        t0_ = ts0_.tv_sec + ts0_.tv_nsec * 1e-9;
    }
    int64_t n_look = 0, n_plook = 0, n_comp = 0;
#endif
    /* -------- paths: own path and parent path (without its last move) of every record, one dictionary */
    tmp_own = big_alloc0(sizeof(int64_t) * (size_t)(n + 1));
    tmp_par = big_alloc0(sizeof(int64_t) * (size_t)(n + 1));
    st_code = big_alloc0(sizeof(int64_t) * (size_t)(2 * n + 2));
    /* st holds only the strings whose last component is long (and ""): a path is reached by one route only,
     * its last component's (a short one: the pair table; a long one: its whole string), so a pair-table miss
     * is a new path and needs no whole-string hash.  Codes count the paths in the order they are first met. */
    if (!tmp_own || !tmp_par || !st_code || !strtab_init(&st, 2 * n + 1, 1024))
        goto nogil_done;
    /* (the pair table holds wide nodes' children only: kid_code) */
    if (!pairtab_init(&pt, 512) || !kidtab_reserve(&kt, n + 2))
        goto nogil_done;
    {
        /* A walk down each path's prefixes (its text before each '/'), starting from the prefixes it shares
         * with the previous record's path (in a depth-first trace, all but its last move or two): a new
         * prefix is looked up as (its parent prefix's code, its last move) when that move is short, which
         * needs no long string hashed or compared (pt holds only pairs whose string has its code in st),
         * else as a whole string.  s_bnd[d], s_code[d]: end and code of the previous path's prefix at depth
         * d (depth 0: ""; the top: the path itself). */
        int64_t max_ln = 0;
        for (int64_t i = 0; i < n; i++)
            if (off[i + 1] - off[i] > max_ln)
                max_ln = off[i + 1] - off[i];
        s_bnd = big_alloc0(sizeof(int64_t) * (size_t)(max_ln + 3));
        s_code = big_alloc0(sizeof(int64_t) * (size_t)(max_ln + 3));
        if (!s_bnd || !s_code)
            goto nogil_done;
        PHASE("path-init");
        int64_t top = 0, p_st = 0, p_ln = 0;
        s_bnd[0] = 0;
        if ((s_code[0] = whole_string_code(&st, st_code, &n_codes, data, 0, 0)) < 0)
            goto nogil_done;
        for (int64_t i = 0; i < n; i++) {
            int64_t s0 = off[i], ln = off[i + 1] - off[i];
            const unsigned char *q = data + s0, *pp = data + p_st;
            int64_t lim = ln < p_ln ? ln : p_ln, L = 0;
            while (L + 8 <= lim) {
                uint64_t x, y;
                memcpy(&x, q + L, 8);
                memcpy(&y, pp + L, 8);
                if (x != y)
                    break;
                L += 8;
            }
            while (L < lim && q[L] == pp[L])
                L++;
            int64_t d = top;
            while (d > 0 && !(s_bnd[d] <= L && (s_bnd[d] == ln || q[s_bnd[d]] == '/')))
                d--;
            int64_t bnd = s_bnd[d];
            while (bnd < ln) {
                int64_t slash = d > 0;  /* a prefix past depth 0 continues after its '/' */
                int64_t start = d > 0 ? bnd + 1 : 0;
                int64_t next = start;
                while (next < ln && q[next] != '/')
                    next++;
                int64_t len = next - start, code;
#ifdef CTRIES_TIMING
                n_comp++;
#endif
                if (!kidtab_reserve(&kt, n_codes + 2))
                    goto nogil_done;
                if (len <= 7) {
                    uint64_t packed = 0;
                    memcpy(&packed, q + start, (size_t)len);
                    packed |= ((uint64_t)len << 56) | ((uint64_t)slash << 63);
#ifdef CTRIES_TIMING
                    int64_t before_ = n_codes;
#endif
                    if ((code = kid_code(&kt, &pt, s_code[d], packed, &n_codes)) < 0)
                        goto nogil_done;
#ifdef CTRIES_TIMING
                    n_look += n_codes != before_;
#endif
                } else {
#ifdef CTRIES_TIMING
                    n_plook++;
#endif
                    if ((code = whole_string_code(&st, st_code, &n_codes, data, s0, next)) < 0)
                        goto nogil_done;
                }
                d++;
                s_bnd[d] = next;
                s_code[d] = code;
                bnd = next;
            }
            top = d;
            tmp_own[i] = s_code[top];
            tmp_par[i] = ply[i] >= 1 ? s_code[top > 0 ? top - 1 : 0] : -1;
            p_st = s0;
            p_ln = ln;
        }
    }
#ifdef CTRIES_TIMING
    fprintf(stderr, "own lookups %lld parent lookups %lld unique %lld components %lld pt size %lld\n", (long long)n_look, (long long)n_plook, (long long)n_codes, (long long)n_comp, (long long)(pt.mask + 1));
#endif
    pairtab_free(&pt);
    memset(&pt, 0, sizeof pt);
    kidtab_free(&kt);
    memset(&kt, 0, sizeof kt);
    PHASE("paths");
    /* Codes numbered like a dictionary encoding of the own paths followed by the parent paths. */
    int64_t n_paths = 0;
    renum = big_alloc0(sizeof(int64_t) * (size_t)(n_codes + 1));
    if (!renum)
        goto nogil_done;
    memset(renum, 0xff, sizeof(int64_t) * (size_t)(n_codes + 1));
    for (int64_t i = 0; i < n; i++) {
        if (renum[tmp_own[i]] < 0)
            renum[tmp_own[i]] = n_paths++;
        rec_pcode[i] = renum[tmp_own[i]];
    }
    for (int64_t i = 0; i < n; i++) {
        if (tmp_par[i] >= 0) {
            if (renum[tmp_par[i]] < 0)
                renum[tmp_par[i]] = n_paths++;
            tmp_par[i] = renum[tmp_par[i]];
        }
        rec_parent[i] = tmp_par[i];
    }
    strtab_free(&st);
    memset(&st, 0, sizeof st);
    free(renum);
    renum = NULL;
    free(st_code);
    st_code = NULL;

    PHASE("renumber");
    /* -------- nodes: (run, path); runs are contiguous, so a stamp per path code numbers them */
    int64_t n_nodes = 0;
    stamp = big_alloc0(sizeof(int64_t) * (size_t)(n_paths + 1));
    nid = big_alloc0(sizeof(int64_t) * (size_t)(n_paths + 1));
    par_node = big_alloc0(sizeof(int64_t) * (size_t)(n + 1));
    if (!stamp || !nid || !par_node)
        goto nogil_done;
    memset(stamp, 0xff, sizeof(int64_t) * (size_t)(n_paths + 1));
    for (int64_t i = 0; i < n; i++) {
        int64_t p = rec_pcode[i];
        if (stamp[p] != run[i]) {
            stamp[p] = run[i];
            nid[p] = n_nodes++;
        }
        own[i] = nid[p];
        p = tmp_par[i];
        if (p >= 0) {
            if (stamp[p] != run[i]) {
                stamp[p] = run[i];
                nid[p] = n_nodes++;
            }
            par_node[i] = nid[p];
        } else {
            par_node[i] = -1;
        }
    }
    free(stamp); stamp = NULL;
    free(nid); nid = NULL;
    free(tmp_own); tmp_own = NULL;
    free(tmp_par); tmp_par = NULL;
    parent_of = big_alloc0(sizeof(int64_t) * (size_t)(n_nodes + 1));
    ply_of = big_alloc(((size_t)(n_nodes + 1)) * sizeof(int64_t), 1);
    if (!parent_of || !ply_of)
        goto nogil_done;
    memset(parent_of, 0xff, sizeof(int64_t) * (size_t)(n_nodes + 1));
    /* Last assignment wins, as numpy's fancy assignment: own plies first, then parents'. */
    for (int64_t i = 0; i < n; i++) {
        if (par_node[i] >= 0)
            parent_of[own[i]] = par_node[i];
        ply_of[own[i]] = ply[i];
    }
    for (int64_t i = 0; i < n; i++)
        if (par_node[i] >= 0)
            ply_of[par_node[i]] = ply[i] - 1;

    PHASE("nodes");
    /* -------- one scan: visits, tries, entering decisions, each RESULT's previous RESULT of its node */
    rec_v = big_alloc0(sizeof(int64_t) * (size_t)(n + 1));
    res_pos = big_alloc0(sizeof(int64_t) * (size_t)(n_res + 1));
    prev_res = big_alloc0(sizeof(int64_t) * (size_t)(n_res + 1));
    last_move_of = big_alloc0(sizeof(int64_t) * (size_t)(n_nodes + 1));
    last_res_of = big_alloc0(sizeof(int64_t) * (size_t)(n_nodes + 1));
    res_of_v = big_alloc0(sizeof(int64_t) * (size_t)(n_mov + n_res + 1));
    first_res_of_v = big_alloc0(sizeof(int64_t) * (size_t)(n_mov + n_res + 1));
    first_move = big_alloc0(sizeof(int64_t) * (size_t)(n_mov + n_res + 1));
    last_dec = big_alloc0(sizeof(int64_t) * (size_t)(n_mov + n_res + 1));
    if (!rec_v || !res_pos || !prev_res || !last_move_of || !last_res_of || !res_of_v || !first_res_of_v
            || !first_move || !last_dec || !pairtab_init(&vt, 1024) || !pairtab_init(&tt, 1024))
        goto nogil_done;
    vc_sub = big_alloc(sizeof(int64_t) * (size_t)(n_nodes + 1), 0);
    vc_id = big_alloc(sizeof(int64_t) * (size_t)(n_nodes + 1), 0);
    tc_sub = big_alloc(sizeof(int64_t) * (size_t)(n_nodes + 1), 0);
    tc_id = big_alloc(sizeof(int64_t) * (size_t)(n_nodes + 1), 0);
    if (!vc_sub || !vc_id || !tc_sub || !tc_id)
        goto nogil_done;
    for (int64_t c = 0; c <= n_nodes; c++) {
        vc_sub[c] = EMPTY;
        tc_sub[c] = EMPTY;
    }
    memset(last_move_of, 0xff, sizeof(int64_t) * (size_t)(n_nodes + 1));
    memset(last_res_of, 0xff, sizeof(int64_t) * (size_t)(n_nodes + 1));
    {
        int64_t k = 0;
        for (int64_t i = 0; i < n; i++) {
            int64_t v = -1;
            if (is_move[i] || is_result[i]) {
                int64_t node = is_move[i] ? par_node[i] : own[i];
                if (node >= 0) {
                    int64_t fresh = vt_n;
                    v = cached_get(vc_sub, vc_id, &vt, node, is_move[i] ? pv[i] : rv[i], fresh);
                    if (v == -2)
                        goto nogil_done;
                    if (v == fresh)
                        vt_n++;
                    if (v == fresh) {  /* a new visit */
                        res_of_v[v] = -1;
                        first_res_of_v[v] = -1;
                        first_move[v] = -1;
                        last_dec[v] = -1;
                    }
                }
            }
            rec_v[i] = v;
            try_of[i] = -1;
            if (is_result[i]) {
                res_pos[k] = i;
                if (v >= 0) {
                    res_of_v[v] = i;  /* the last RESULT, as numpy's fancy assignment */
                    if (first_res_of_v[v] < 0)
                        first_res_of_v[v] = k;
                }
                r_entering[k] = last_move_of[own[i]];
                prev_res[k] = last_res_of[own[i]];
                last_res_of[own[i]] = k;
                k++;
            } else if (is_move[i]) {
                /* tries numbered in order of first appearance; a NODE_CUT record is one of its own */
                int64_t t = kind_alone[kind[i] + 1] ? n_t : cached_get(tc_sub, tc_id, &tt, own[i], v, n_t);
                if (t == -2)
                    goto nogil_done;
                if (t == n_t) {
                    n_t++;
                    t_first[t] = i;
                    t_fh[t] = 0;
                    t_subtree[t] = 0;
                }
                t_last[t] = i;
                try_of[i] = t;
                last_move_of[own[i]] = i;
                if (v >= 0) {
                    if (first_move[v] < 0)
                        first_move[v] = i;
                    if (kind_class[kind[i] + 1] >= 0)
                        last_dec[v] = i;
                }
            }
        }
    }
    pairtab_free(&tt);
    memset(&tt, 0, sizeof tt);

    PHASE("scan");
    /* -------- cutoff classes, decisions, fail highs */
    for (int64_t k = 0; k < n_res; k++) {
        int64_t i = res_pos[k], v = rec_v[i];
        int64_t dec = v >= 0 ? last_dec[v] : -1;
        int64_t cls = -1;
        if (lower[i]) {
            cls = dec >= 0 ? kind_class[kind[dec] + 1] : C_NONE;
            /* multicut: the node's previous visit, shallower, entered by the same decision, ended lower,
             * and no decision of this visit follows it */
            int64_t p = prev_res[k];
            if (p >= 0 && r_entering[k] >= 0 && r_entering[p] == r_entering[k] && lower[res_pos[p]]
                    && depth[res_pos[p]] < depth[i] && dec < res_pos[p])
                cls = C_MULTICUT;
        }
        r_class[k] = cls;
        if (cls >= 0 && cls <= C_PROBCUT && dec >= 0)
            t_fh[try_of[dec]] = 1;
        r_decision[k] = (cls >= 0 && cls != C_MULTICUT) ? dec : -1;
        r_first[k] = (v >= 0 && first_move[v] >= 0) ? first_move[v] : i;
        r_main[k] = 0;
        r_parent[k] = -1;
        r_nodes[k] = 1;
        r_in_parent_main[k] = 0;
    }
    for (int64_t i = 0; i < n; i++)
        rec_in_main[i] = 0;
    if (!full) {
        ok = 1;
        goto nogil_done;
    }

    PHASE("classes");
    /* -------- the visit tree (treediff.parse.visits.visit_tree) */
    r_pv = big_alloc0(sizeof(int64_t) * (size_t)(n_res + 1));
    main_visit = big_alloc(((size_t)(n_nodes + 1)) * sizeof(int64_t), 1);
    if (!r_pv || !main_visit)
        goto nogil_done;
    int any_lost = 0;
    for (int64_t k = 0; k < n_res; k++) {
        int64_t e = r_entering[k];
        r_pv[k] = e >= 0 ? pv[e] : 0;
        if (r_pv[k] < 1 && parent_of[own[res_pos[k]]] >= 0)
            any_lost = 1;
    }
    if (any_lost) {
        /* Without an entering decision: the parent's first visit to close after it (the one still open if
         * none does).  RESULT positions per node, ascending. */
        key = big_alloc0(sizeof(int64_t) * (size_t)(n_res + 1));
        if (!key)
            goto nogil_done;
        for (int64_t k = 0; k < n_res; k++)
            key[k] = own[res_pos[k]];
        if (!csr_build(n_nodes, key, res_pos, n_res, &rcsr_start, &rcsr_items))
            goto nogil_done;
        for (int64_t k = 0; k < n_res; k++) {
            int64_t i = res_pos[k], rp = parent_of[own[i]];
            if (r_pv[k] >= 1 || rp < 0)
                continue;
            int64_t lo = rcsr_start[rp], hi = rcsr_start[rp + 1];
            int64_t q = lower_bound(rcsr_items, lo, hi, i);
            r_pv[k] = q < hi ? rv[rcsr_items[q]] : q - lo + 1;
        }
    }
    for (int64_t k = 0; k < n_res; k++) {
        int64_t rp = parent_of[own[res_pos[k]]];
        if (rp < 0) {
            r_pv[k] = 0;
            continue;
        }
        /* the parent visit's RESULT: the first RESULT of the parent node with that visit number */
        int64_t pvid = vc_sub[rp] == r_pv[k] ? vc_id[rp] : pairtab_get(&vt, rp, r_pv[k], -1);
        r_parent[k] = pvid >= 0 ? first_res_of_v[pvid] : -1;
    }
    /* Main visit of a node without a parent: its last visit, or the one its MOVE records show still open. */
    for (int64_t k = 0; k < n_res; k++) {
        int64_t c = own[res_pos[k]];
        if (parent_of[c] < 0 && rv[res_pos[k]] > main_visit[c])
            main_visit[c] = rv[res_pos[k]];
    }
    for (int64_t i = 0; i < n; i++) {
        if (!is_move[i])
            continue;
        int64_t mp = parent_of[own[i]];
        if (mp >= 0 && parent_of[mp] < 0 && pv[i] > main_visit[mp])
            main_visit[mp] = pv[i];
    }
    PHASE("tree-prep");
    /* RESULTs by ply (their node's), trace order within a ply. */
    int64_t pmin = 0, pmax = 0;
    for (int64_t k = 0; k < n_res; k++) {
        int64_t p = ply_of[own[res_pos[k]]];
        if (k == 0 || p < pmin)
            pmin = p;
        if (k == 0 || p > pmax)
            pmax = p;
    }
    int64_t n_lvl = n_res ? pmax - pmin + 1 : 0;
    r_level = big_alloc0(sizeof(int64_t) * (size_t)(n_res + 1));
    posv = big_alloc0(sizeof(int64_t) * (size_t)(n_res + 1));
    best = big_alloc0(sizeof(int64_t) * (size_t)(n_nodes + 1));
    buf = big_alloc0(sizeof(int64_t) * (size_t)(n_res + 1));
    if (!r_level || !posv || !best || !buf)
        goto nogil_done;
    for (int64_t k = 0; k < n_res; k++) {
        r_level[k] = ply_of[own[res_pos[k]]] - pmin;
        posv[k] = k;
    }
    if (!csr_build(n_lvl, r_level, posv, n_res, &lvl_start, &lvl_items))
        goto nogil_done;
    memset(best, 0xff, sizeof(int64_t) * (size_t)(n_nodes + 1));
    for (int64_t L = 0; L < n_lvl; L++) {
        int64_t lo = lvl_start[L], hi = lvl_start[L + 1];
        /* nodes without a parent: the last RESULT with the main visit's number */
        for (int64_t j = lo; j < hi; j++) {
            int64_t k = lvl_items[j], c = own[res_pos[k]];
            if (parent_of[c] < 0 && rv[res_pos[k]] == main_visit[c])
                best[c] = k;
        }
        for (int64_t j = lo; j < hi; j++) {
            int64_t k = lvl_items[j], c = own[res_pos[k]];
            if (parent_of[c] < 0 && best[c] == k)
                r_main[k] = 1;
        }
        /* the others: among the visits belonging to the parent's main visit, the deepest, the last among
         * equals (the parents' main visits read before this ply's are chosen) */
        for (int64_t j = lo; j < hi; j++) {
            int64_t k = lvl_items[j], c = own[res_pos[k]], rp = parent_of[c];
            buf[j - lo] = rp >= 0 ? main_visit[rp] : 0;
        }
        for (int64_t j = lo; j < hi; j++) {
            int64_t k = lvl_items[j], c = own[res_pos[k]];
            int64_t mv = buf[j - lo];
            if (parent_of[c] < 0 || !(mv > 0 && r_pv[k] == mv))
                continue;
            int64_t bk = best[c];
            if (bk < 0) {
                best[c] = k;
                continue;
            }
            double d1 = depth[res_pos[k]], d0 = depth[res_pos[bk]];
            if (d1 != d1)  /* NaN depths sort as -inf */
                d1 = -HUGE_VAL;
            if (d0 != d0)
                d0 = -HUGE_VAL;
            if (d1 >= d0)
                best[c] = k;
        }
        for (int64_t j = lo; j < hi; j++) {
            int64_t k = lvl_items[j], c = own[res_pos[k]];
            int64_t mv = buf[j - lo];
            if (parent_of[c] < 0 || !(mv > 0 && r_pv[k] == mv))
                continue;
            if (best[c] == k) {
                r_main[k] = 1;
                main_visit[c] = rv[res_pos[k]];
            }
        }
    }
    PHASE("levels");
    /* Bottom-up: RESULT records under each visit (a ply's values read before they are added up). */
    for (int64_t L = n_lvl - 1; L >= 0; L--) {
        int64_t lo = lvl_start[L], hi = lvl_start[L + 1];
        for (int64_t j = lo; j < hi; j++)
            buf[j - lo] = r_nodes[lvl_items[j]];
        for (int64_t j = lo; j < hi; j++) {
            int64_t k = lvl_items[j];
            if (r_parent[k] >= 0)
                r_nodes[r_parent[k]] += buf[j - lo];
        }
    }

    PHASE("nodes-up");
    /* -------- spans: the next MOVE record of another move in the same visit, else the visit's RESULT */
    span_end = big_alloc0(sizeof(int64_t) * (size_t)(n + 1));
    t_end = big_alloc0(sizeof(int64_t) * (size_t)(n_t + 1));
    if (!span_end || !t_end)
        goto nogil_done;
    {
        int64_t n_v = vt_n;
        for (int64_t i = 0; i < n; i++)
            span_end[i] = n;
        if (!csr_of_moves(n, is_move, rec_v, n_v, &vcsr_start, &vcsr_items))
            goto nogil_done;
        for (int64_t v = 0; v < n_v; v++) {
            int64_t lo = vcsr_start[v], hi = vcsr_start[v + 1];
            if (lo == hi)
                continue;
            int64_t end = res_of_v[v] >= 0 ? res_of_v[v] : n;
            for (int64_t j = hi - 1; j >= lo; j--) {
                if (j + 1 < hi && own[vcsr_items[j]] != own[vcsr_items[j + 1]])
                    end = vcsr_items[j + 1];
                span_end[vcsr_items[j]] = end;
            }
        }
        for (int64_t t = 0; t < n_t; t++)
            t_end[t] = span_end[t_first[t]];
    }
    PHASE("spans");
#define IN_SPAN(rec) ((rec) < t_end[try_of[(rec)]])
    /* -------- subtree nodes: RESULT records under the visits each try entered */
    for (int64_t k = 0; k < n_res; k++) {
        int64_t e = r_entering[k];
        if (e >= 0 && IN_SPAN(e))
            t_subtree[try_of[e]] += r_nodes[k];
    }
    /* A visit whose parent visit never closed: its nodes go to every try on its chain of open decisions. */
    {
        int any_orphan = 0;
        for (int64_t k = 0; k < n_res && !any_orphan; k++)
            any_orphan = r_parent[k] < 0 && ply[res_pos[k]] >= 2;
        if (any_orphan && n_mov) {
            if (!csr_of_moves(n, is_move, own, n_nodes, &mcsr_start, &mcsr_items))
                goto nogil_done;
            for (int64_t k = 0; k < n_res; k++) {
                int64_t i = res_pos[k];
                if (!(r_parent[k] < 0 && ply[i] >= 2))
                    continue;
                int64_t weight = r_nodes[k];
                int64_t cur = r_entering[k] >= 0 ? r_entering[k] : i;
                for (;;) {
                    int64_t pc = par_node[cur];
                    if (pc < 0)
                        break;
                    int64_t lo = mcsr_start[pc], hi = mcsr_start[pc + 1];
                    int64_t q = lower_bound(mcsr_items, lo, hi, cur) - 1;
                    if (q < lo)
                        break;
                    int64_t up = mcsr_items[q];
                    if (IN_SPAN(up))
                        t_subtree[try_of[up]] += weight;
                    if (ply[up] < 2)
                        break;
                    cur = up;
                }
            }
        }
    }
#undef IN_SPAN
    PHASE("subtree");
    /* -------- main-visit flags */
    for (int64_t i = 0; i < n; i++) {
        int64_t p = par_node[i];
        rec_in_main[i] = is_move[i] && p >= 0 && main_visit[p] > 0 && pv[i] == main_visit[p];
    }
    for (int64_t k = 0; k < n_res; k++) {
        int64_t rp = parent_of[own[res_pos[k]]];
        r_in_parent_main[k] = rp >= 0 && r_pv[k] == main_visit[rp] && main_visit[rp] > 0;
    }
    ok = 1;
nogil_done:
    Py_END_ALLOW_THREADS
    if (!ok) {
        PyErr_SetString(PyExc_MemoryError, err);
        goto done;
    }
    result = PyLong_FromLongLong((long long)n_t);

done:
    for (int i = 0; i < N_BUF; i++)
        if (b[i].obj)
            PyBuffer_Release(&b[i]);
    strtab_free(&st);
    pairtab_free(&vt);
    pairtab_free(&tt);
    pairtab_free(&pt);
    kidtab_free(&kt);
    free(st_code); free(tmp_own); free(tmp_par); free(renum); free(stamp); free(nid); free(par_node); free(parent_of);
    free(ply_of); free(rec_v); free(res_pos); free(res_of_v); free(first_res_of_v); free(last_move_of);
    free(last_res_of); free(prev_res); free(first_move); free(last_dec); free(r_pv); free(main_visit);
    free(lvl_start); free(lvl_items); free(r_level); free(best); free(buf); free(span_end); free(t_end);
    free(rcsr_start); free(rcsr_items); free(mcsr_start); free(mcsr_items); free(vcsr_start); free(vcsr_items);
    free(key); free(posv); free(pv); free(rv); free(vc_sub); free(vc_id); free(tc_sub); free(tc_id); free(s_bnd); free(s_code);
    return result;
}

/* ------------------------------------------------------------------ scope's node visits */
PyDoc_STRVAR(scope_visits_doc,
"scope_visits(is_move, is_result, at_level, run_key, node, pv, rv, lower, prune, probcut, null, move, act,\n"
"             p_rec, p_visit, p_upto, p_later, p_followed, p_cutoff, p_first_act, p_first_visit, v_first_prune)\n"
"             -> (n_prunes, n_visits)\n\n"
"The node visits of treediff.report.tables.scope (its numpy path, with the parser's visit columns) and, for\n"
"the visits holding a prune, what each prune needs.  Inputs per record, in (search, seq) order (n): is_move,\n"
"is_result, at_level (a node ply holding a prune), lower (a RESULT's bound is lower), prune, probcut, null\n"
"(uint8); run_key (int64: search row * 65536 + iteration); node (int64: a MOVE record's parent path code, a\n"
"RESULT's own path code; >= 0 where read); pv, rv (float64, NaN missing: parent_visit, visit); move, act\n"
"(int64 codes, -1 missing).  A visit is (run_key, node, int(pv)) of a MOVE record at a level with a pv, or\n"
"(run_key, node, int(rv)) of a RESULT at a level with an rv; visits are numbered as they first appear among\n"
"those MOVE records, then those RESULTs.  The members of a visit holding a prune are its MOVE records, the\n"
"visits in that order and each one's records in trace order.  Outputs (room for every prune record), per\n"
"prune member in member order: p_rec (its record), p_visit (its visit, numbered 0.. over the visits holding a\n"
"prune, in order), p_upto (distinct moves decided in the visit up to it, itself included: a member decides\n"
"its move when it is not PROBCUT, not a null move and has a move), p_later (the visit's distinct decided\n"
"moves minus p_upto), p_followed (a later member that is not PROBCUT), p_cutoff (a RESULT of the visit has a\n"
"lower bound), p_first_act (the visit's first prune of its act), p_first_visit (the visit's first prune)\n"
"(uint8 for flags, int64 else); per visit v_first_prune (its first prune's record).");

#define SV_BUF 22
#define SV_IN 13

static PyObject *scope_visits(PyObject *self, PyObject *args)
{
    PyObject *objs[SV_BUF];
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOOOOOOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4],
                          &objs[5], &objs[6], &objs[7], &objs[8], &objs[9], &objs[10], &objs[11], &objs[12],
                          &objs[13], &objs[14], &objs[15], &objs[16], &objs[17], &objs[18], &objs[19], &objs[20],
                          &objs[21]))
        return NULL;
    Py_buffer b[SV_BUF];
    memset(b, 0, sizeof b);
    PyObject *result = NULL;
    PairTab runs, visits;
    memset(&runs, 0, sizeof runs);
    memset(&visits, 0, sizeof visits);
    int64_t *vid = NULL, *v_count = NULL, *v_start = NULL, *members = NULL, *v_rank = NULL, *move_seen = NULL,
            *act_seen = NULL, *stamp = NULL, *stamp_nr = NULL, *c_sub = NULL, *c_id = NULL;
    uint8_t *v_cut = NULL, *v_pruned = NULL;
    for (int i = 0; i < SV_BUF; i++) {
        int flags = PyBUF_C_CONTIGUOUS | (i >= SV_IN ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(objs[i], &b[i], flags) < 0)
            goto done;
    }
    const int64_t n = (int64_t)b[0].len;
    const int64_t n_out = (int64_t)(b[13].len / 8);
    int sizes_ok = b[1].len == n && b[2].len == n && b[3].len == n * 8 && b[4].len == n * 8 && b[5].len == n * 8
                   && b[6].len == n * 8 && b[7].len == n && b[8].len == n && b[9].len == n && b[10].len == n
                   && b[11].len == n * 8 && b[12].len == n * 8;
    for (int i = 13; i < SV_BUF; i++) {
        int flag = i == 17 || i == 18 || i == 19 || i == 20;
        sizes_ok = sizes_ok && b[i].len == n_out * (flag ? 1 : 8);
    }
    if (!sizes_ok) {
        PyErr_SetString(PyExc_ValueError, "scope_visits: buffers of inconsistent sizes");
        goto done;
    }
    const uint8_t *is_move = b[0].buf, *is_result = b[1].buf, *at_level = b[2].buf;
    const int64_t *run_key = b[3].buf, *node = b[4].buf;
    const double *pv = b[5].buf, *rv = b[6].buf;
    const uint8_t *lower = b[7].buf, *prune = b[8].buf, *probcut = b[9].buf, *nul = b[10].buf;
    const int64_t *move = b[11].buf, *act = b[12].buf;
    int64_t *p_rec = b[13].buf, *p_visit = b[14].buf, *p_upto = b[15].buf, *p_later = b[16].buf;
    uint8_t *p_followed = b[17].buf, *p_cutoff = b[18].buf, *p_first_act = b[19].buf, *p_first_visit = b[20].buf;
    int64_t *v_first_prune = b[21].buf;
    int64_t max_move = -1, max_act = -1, max_node = -1, n_prunes_in = 0;
    for (int64_t i = 0; i < n; i++) {
        if (move[i] > max_move)
            max_move = move[i];
        if (act[i] > max_act)
            max_act = act[i];
        n_prunes_in += prune[i] != 0;
        if (prune[i] && !is_move[i]) {
            PyErr_SetString(PyExc_ValueError, "scope_visits: a prune that is not a MOVE record");
            goto done;
        }
        if (move[i] < -1 || act[i] < -1) {
            PyErr_SetString(PyExc_ValueError, "scope_visits: a move or act code below -1");
            goto done;
        }
        double x = is_move[i] ? pv[i] : rv[i];
        if ((is_move[i] || is_result[i]) && at_level[i] && x == x) {  /* a record the visits read */
            if (node[i] < 0) {
                PyErr_SetString(PyExc_ValueError, "scope_visits: a read record without a node code");
                goto done;
            }
            if (node[i] > max_node)
                max_node = node[i];
        }
    }
    if (n_prunes_in > n_out) {
        PyErr_SetString(PyExc_ValueError, "scope_visits: no room for every prune");
        goto done;
    }
    int64_t n_p = 0, n_vis = 0, n_pruned = 0;
    int nomem = 0;
    Py_BEGIN_ALLOW_THREADS
    vid = big_alloc0(sizeof(int64_t) * (size_t)(n + 1));
    move_seen = big_alloc0(sizeof(int64_t) * (size_t)(max_move + 2));
    act_seen = big_alloc0(sizeof(int64_t) * (size_t)(max_act + 3));
    if (!vid || !move_seen || !act_seen || !pairtab_init(&runs, 1024) || !pairtab_init(&visits, 1024)) {
        nomem = 1;
        goto nogil_done;
    }
    /* A (run_key, node) pair is numbered through a stamp per node code when each run_key is one contiguous
     * stretch of records (the usual trace: the records of an iteration together), else through a pair table;
     * a visit (that number, the visit number) through the number's cached last visit, a pair table behind it
     * (most nodes have one visit an iteration).  Random probes of big tables were most of the kernel's time. */
    int64_t n_changes = 0, n_keys = 0;
    for (int64_t i = 0; i < n; i++) {
        if (i == 0 || run_key[i] != run_key[i - 1]) {
            n_changes++;
            if (pairtab_get(&runs, run_key[i], 0, -1) == -1) {
                if (pairtab_get(&runs, run_key[i], 0, n_keys) == -2) {
                    nomem = 1;
                    goto nogil_done;
                }
                n_keys++;
            }
        }
    }
    int contiguous = n_changes == n_keys;
    pairtab_free(&runs);
    if (!pairtab_init(&runs, 1024)) {
        nomem = 1;
        goto nogil_done;
    }
    stamp = big_alloc0(sizeof(int64_t) * (size_t)(max_node + 2));
    stamp_nr = big_alloc0(sizeof(int64_t) * (size_t)(max_node + 2));
    c_sub = big_alloc0(sizeof(int64_t) * (size_t)(n + 1));
    c_id = big_alloc0(sizeof(int64_t) * (size_t)(n + 1));
    if (!stamp || !stamp_nr || !c_sub || !c_id) {
        nomem = 1;
        goto nogil_done;
    }
    memset(stamp, 0xff, sizeof(int64_t) * (size_t)(max_node + 2));
    /* First each read record's (run_key, node) number, in one pass (vid holds it for now, -1 elsewhere). */
    int64_t n_nr = 0, stretch = -1;
    for (int64_t i = 0; i < n; i++) {
        vid[i] = -1;
        if (i == 0 || run_key[i] != run_key[i - 1])
            stretch++;
        double x = is_move[i] ? pv[i] : rv[i];
        if (!(is_move[i] || is_result[i]) || !at_level[i] || x != x)
            continue;
        int64_t nr;
        if (contiguous) {
            if (stamp[node[i]] != stretch) {
                stamp[node[i]] = stretch;
                stamp_nr[node[i]] = n_nr;
                c_sub[n_nr++] = EMPTY;
            }
            nr = stamp_nr[node[i]];
        } else {
            nr = pairtab_get(&runs, run_key[i], node[i], -1);
            if (nr == -1) {
                if ((nr = pairtab_get(&runs, run_key[i], node[i], n_nr)) == -2) {
                    nomem = 1;
                    goto nogil_done;
                }
                c_sub[n_nr++] = EMPTY;
            }
        }
        vid[i] = nr;
    }
    /* Visits numbered as they first appear among the MOVE records, then among the RESULTs (numpy's order). */
    for (int pass = 0; pass < 2; pass++) {
        const uint8_t *tag = pass == 0 ? is_move : is_result;
        const double *col = pass == 0 ? pv : rv;
        for (int64_t i = 0; i < n; i++) {
            if (!tag[i] || vid[i] < 0)
                continue;
            double x = col[i];
            int64_t number = (int64_t)x;  /* (|x| < 2**62: the caller checks; numpy's cast) */
            int64_t v = cached_get(c_sub, c_id, &visits, vid[i], number, n_vis);
            if (v == -2) {
                nomem = 1;
                goto nogil_done;
            }
            if (v == n_vis)
                n_vis++;
            vid[i] = v;
        }
    }
    v_cut = calloc((size_t)n_vis + 1, 1);
    v_pruned = calloc((size_t)n_vis + 1, 1);
    v_count = big_alloc(sizeof(int64_t) * (size_t)(n_vis + 2), 1);
    v_rank = big_alloc0(sizeof(int64_t) * (size_t)(n_vis + 1));
    if (!v_cut || !v_pruned || !v_count || !v_rank) {
        nomem = 1;
        goto nogil_done;
    }
    for (int64_t i = 0; i < n; i++) {
        if (vid[i] < 0)
            continue;
        if (is_result[i] && lower[i])
            v_cut[vid[i]] = 1;
        if (prune[i])
            v_pruned[vid[i]] = 1;
    }
    /* The members (MOVE records of the visits holding a prune), by visit, trace order within: a counting sort. */
    for (int64_t v = 0; v < n_vis; v++)
        v_rank[v] = v_pruned[v] ? n_pruned++ : -1;
    int64_t n_members = 0;
    for (int64_t i = 0; i < n; i++)
        if (vid[i] >= 0 && is_move[i] && v_pruned[vid[i]]) {
            v_count[v_rank[vid[i]] + 1]++;
            n_members++;
        }
    for (int64_t r = 0; r < n_pruned; r++)
        v_count[r + 1] += v_count[r];
    v_start = big_alloc0(sizeof(int64_t) * (size_t)(n_pruned + 1));
    members = big_alloc0(sizeof(int64_t) * (size_t)(n_members + 1));
    if (!v_start || !members) {
        nomem = 1;
        goto nogil_done;
    }
    memcpy(v_start, v_count, sizeof(int64_t) * (size_t)(n_pruned + 1));
    for (int64_t i = 0; i < n; i++)
        if (vid[i] >= 0 && is_move[i] && v_pruned[vid[i]])
            members[v_count[v_rank[vid[i]]]++] = i;
    memset(move_seen, 0xff, sizeof(int64_t) * (size_t)(max_move + 2));
    memset(act_seen, 0xff, sizeof(int64_t) * (size_t)(max_act + 3));
    /* Per visit: distinct moves decided so far, the last sibling decision, each prune's figures. */
    for (int64_t r = 0; r < n_pruned; r++) {
        int64_t upto = 0, last_sibling = -1, first_p = n_p;
        for (int64_t j = v_start[r]; j < v_start[r + 1]; j++) {
            int64_t i = members[j];
            int sibling = !probcut[i];
            if (sibling) {
                last_sibling = j;
                if (!nul[i] && move[i] >= 0 && move_seen[move[i]] != r) {
                    move_seen[move[i]] = r;
                    upto++;
                }
            }
            if (prune[i]) {
                p_rec[n_p] = i;
                p_visit[n_p] = r;
                p_upto[n_p] = upto;
                p_later[n_p] = j;  /* (the member index for now: followed below) */
                p_cutoff[n_p] = v_cut[vid[i]];
                p_first_visit[n_p] = n_p == first_p;
                p_first_act[n_p] = act_seen[act[i] + 1] != r;
                act_seen[act[i] + 1] = r;
                if (n_p == first_p)
                    v_first_prune[r] = i;
                n_p++;
            }
        }
        for (int64_t k = first_p; k < n_p; k++) {
            p_followed[k] = last_sibling > p_later[k];
            p_later[k] = upto - p_upto[k];
        }
    }
nogil_done:
    Py_END_ALLOW_THREADS
    if (nomem) {
        PyErr_NoMemory();
        goto done;
    }
    result = Py_BuildValue("(LL)", (long long)n_p, (long long)n_pruned);
done:
    for (int i = 0; i < SV_BUF; i++)
        if (b[i].obj)
            PyBuffer_Release(&b[i]);
    pairtab_free(&runs);
    pairtab_free(&visits);
    free(vid); free(v_count); free(v_start); free(members); free(v_rank); free(move_seen); free(act_seen);
    free(v_cut); free(v_pruned); free(stamp); free(stamp_nr); free(c_sub); free(c_id);
    return result;
}

/* ------------------------------------------------------------------------------------------------------ */
/* cell_counts: the tables' per-cell counts (acts, why, lmr, ebf's RESULT records per ply), one pass.      */

#define CC_MAX_KEYS 4

PyDoc_STRVAR(cell_counts_doc,
"cell_counts(out, mask, weights, keys, offsets, strides) -> None\n\n"
"For every record i with mask[i] (uint8; None: every record), adds 1 (weights None; out int64) or weights[i]\n"
"(float64; out float64) to out[sum_j (keys[j][i] + offsets[j]) * strides[j]]: what\n"
"np.bincount(packed[mask], weights[mask], minlength=len(out)) gives (sums in record order, as bincount's),\n"
"without the masked copies and packed temporaries.  keys: 1 to 4 int64 arrays of the records; offsets,\n"
"strides: that many ints.  A cell outside out raises ValueError (nothing is written there).");

/* The passes of cell_counts; each returns the first record whose cell is outside [0, size), else -1.
 * One key (a batch's cell: search, iteration): the records come cell after cell, so the running cell's
 * total is kept in a local and stored when the cell changes (counts[cell]++ record after record waited on
 * the previous store: ~2.7 ns a record); a masked-out record stays in the running cell and adds 0, without
 * a branch (a mispredicted one cost ~2 ns a record at a quarter masked out). */
static int64_t cc_counts1(int64_t *counts, int64_t size, const uint8_t *m, const int64_t *key, int64_t offset,
                          int64_t stride, int64_t n)
{
    int64_t cur = -1, count = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t take = m ? m[i] != 0 : 1;
        int64_t cell = (key[i] + offset) * stride;
        if (__builtin_expect(take & ((uint64_t)cell >= (uint64_t)size), 0)) {
            if (cur >= 0)
                counts[cur] = count;
            return i;
        }
        cell = cur + ((cell - cur) & -take);  /* take ? cell : cur, without a branch */
        if (cell != cur) {
            if (cur >= 0)
                counts[cur] = count;
            cur = cell;
            count = counts[cell];
        }
        count += take;
    }
    if (cur >= 0)
        counts[cur] = count;
    return -1;
}

/* Several keys: the cell changes from record to record (acts, kinds), so each record adds to its cell directly
 * (a running total would mispredict at nearly every record); a masked-out record adds 0 to cell 0. */
static int64_t cc_counts(int64_t *counts, int64_t size, const uint8_t *m, const int64_t *const *key,
                         const int64_t *offsets, const int64_t *strides, int n_keys, int64_t n)
{
    if (size < 1) {  /* no cell 0 for the masked-out records to add 0 to: any record counted is outside */
        for (int64_t i = 0; i < n; i++)
            if (!m || m[i])
                return i;
        return -1;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t take = m ? m[i] != 0 : 1;
        int64_t cell = 0;
        for (int j = 0; j < n_keys; j++)
            cell += (key[j][i] + offsets[j]) * strides[j];
        if (__builtin_expect(take & ((uint64_t)cell >= (uint64_t)size), 0))
            return i;
        counts[cell & -take] += take;
    }
    return -1;
}

/* Weighted: each record adds to its cell in record order, as bincount's (the same float sums). */
static int64_t cc_sums(double *sums, int64_t size, const uint8_t *m, const double *w, const int64_t *const *key,
                       const int64_t *offsets, const int64_t *strides, int n_keys, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        if (m && !m[i])
            continue;
        int64_t cell = 0;
        for (int j = 0; j < n_keys; j++)
            cell += (key[j][i] + offsets[j]) * strides[j];
        if ((uint64_t)cell >= (uint64_t)size)
            return i;
        sums[cell] += w[i];
    }
    return -1;
}

static PyObject *cell_counts(PyObject *self, PyObject *args)
{
    PyObject *out_o, *mask_o, *weights_o, *keys_o, *offsets_o, *strides_o;
    if (!PyArg_ParseTuple(args, "OOOOOO", &out_o, &mask_o, &weights_o, &keys_o, &offsets_o, &strides_o))
        return NULL;
    Py_buffer out = {0}, mask = {0}, weights = {0}, keys[CC_MAX_KEYS];
    memset(keys, 0, sizeof keys);
    int64_t offsets[CC_MAX_KEYS], strides[CC_MAX_KEYS];
    int n_keys = 0, have_mask = mask_o != Py_None, have_weights = weights_o != Py_None;
    PyObject *result = NULL;
    PyObject *key_seq = PySequence_Fast(keys_o, "cell_counts: keys must be a sequence");
    PyObject *off_seq = key_seq ? PySequence_Fast(offsets_o, "cell_counts: offsets must be a sequence") : NULL;
    PyObject *str_seq = off_seq ? PySequence_Fast(strides_o, "cell_counts: strides must be a sequence") : NULL;
    if (!str_seq)
        goto done;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(key_seq);
    if (k < 1 || k > CC_MAX_KEYS || PySequence_Fast_GET_SIZE(off_seq) != k || PySequence_Fast_GET_SIZE(str_seq) != k) {
        PyErr_SetString(PyExc_ValueError, "cell_counts: 1 to 4 keys, with one offset and one stride each");
        goto done;
    }
    for (Py_ssize_t j = 0; j < k; j++) {
        offsets[j] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(off_seq, j));
        strides[j] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(str_seq, j));
        if (PyErr_Occurred())
            goto done;
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(key_seq, j), &keys[j], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
            goto done;
        n_keys++;
    }
    if (PyObject_GetBuffer(out_o, &out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        goto done;
    if (have_mask && PyObject_GetBuffer(mask_o, &mask, PyBUF_C_CONTIGUOUS) < 0)
        goto done;
    if (have_weights && PyObject_GetBuffer(weights_o, &weights, PyBUF_C_CONTIGUOUS) < 0)
        goto done;
    const int64_t n = (int64_t)(keys[0].len / 8);
    int ok = out.len % 8 == 0 && (!have_mask || mask.len == n) && (!have_weights || weights.len == n * 8);
    for (int j = 0; j < n_keys; j++)
        ok = ok && keys[j].len == n * 8 && keys[j].itemsize == 8 && keys[j].format && strchr("lq", keys[j].format[0]);
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "cell_counts: int64 keys of one length, a mask and weights of that length");
        goto done;
    }
    const int64_t size = (int64_t)(out.len / 8);
    const int64_t *key[CC_MAX_KEYS];
    for (int j = 0; j < n_keys; j++)
        key[j] = (const int64_t *)keys[j].buf;
    const uint8_t *m = have_mask ? (const uint8_t *)mask.buf : NULL;
    const double *w = have_weights ? (const double *)weights.buf : NULL;
    int64_t *counts = (int64_t *)out.buf;
    double *sums = (double *)out.buf;
    int64_t bad = -1;
    Py_BEGIN_ALLOW_THREADS
    if (w)
        bad = cc_sums(sums, size, m, w, key, offsets, strides, n_keys, n);
    else if (n_keys == 1)
        bad = cc_counts1(counts, size, m, key[0], offsets[0], strides[0], n);
    else
        bad = cc_counts(counts, size, m, key, offsets, strides, n_keys, n);
    Py_END_ALLOW_THREADS
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "cell_counts: record %lld falls outside the %lld cells", (long long)bad,
                     (long long)size);
        goto done;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    for (int j = 0; j < n_keys; j++)
        PyBuffer_Release(&keys[j]);
    if (out.obj)
        PyBuffer_Release(&out);
    if (mask.obj)
        PyBuffer_Release(&mask);
    if (weights.obj)
        PyBuffer_Release(&weights);
    Py_XDECREF(key_seq);
    Py_XDECREF(off_seq);
    Py_XDECREF(str_seq);
    return result;
}

/* first_codes: the groups of packed keys numbered in order of first appearance (group_rows), one pass.   */

PyDoc_STRVAR(first_codes_doc,
"first_codes(keys, span, codes, first) -> number of groups\n\n"
"keys: int64, each in [0, span).  Writes codes[i] (int64): key i's group, groups numbered 0, 1, ... in\n"
"order of first appearance (pandas.factorize's codes), and first[g] (int64): group g's first row.  A table\n"
"of span int32 entries stands in for factorize's hash table.  ValueError on a key outside [0, span).");

static PyObject *first_codes(PyObject *self, PyObject *args)
{
    PyObject *keys_o, *codes_o, *first_o;
    Py_ssize_t span;
    if (!PyArg_ParseTuple(args, "OnOO", &keys_o, &span, &codes_o, &first_o))
        return NULL;
    Py_buffer keys = {0}, codes = {0}, first = {0};
    PyObject *result = NULL;
    int32_t *table = NULL;
    if (PyObject_GetBuffer(keys_o, &keys, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0
            || PyObject_GetBuffer(codes_o, &codes, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0
            || PyObject_GetBuffer(first_o, &first, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        goto done;
    const Py_ssize_t n = keys.len / 8;
    if (keys.itemsize != 8 || !keys.format || !strchr("lq", keys.format[0]) || codes.len != n * 8
            || first.len != n * 8 || span < 1 || n >= INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "first_codes: int64 keys, codes and first of one length (< 2**31), span >= 1");
        goto done;
    }
    table = (int32_t *)calloc((size_t)span, sizeof(int32_t));  /* group + 1; 0: not seen */
    if (!table) {
        PyErr_NoMemory();
        goto done;
    }
    const int64_t *k = (const int64_t *)keys.buf;
    int64_t *c = (int64_t *)codes.buf, *f = (int64_t *)first.buf;
    int32_t groups = 0;
    Py_ssize_t bad = -1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t key = (uint64_t)k[i];
        if (key >= (uint64_t)span) {
            bad = i;
            break;
        }
        int32_t g = table[key];
        if (!g) {
            f[groups] = i;
            g = table[key] = ++groups;
        }
        c[i] = g - 1;
    }
    Py_END_ALLOW_THREADS
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "first_codes: key %zd is outside [0, %zd)", bad, span);
        goto done;
    }
    result = PyLong_FromLong(groups);
done:
    free(table);
    if (keys.obj)
        PyBuffer_Release(&keys);
    if (codes.obj)
        PyBuffer_Release(&codes);
    if (first.obj)
        PyBuffer_Release(&first);
    return result;
}

/* last_in_runs: residual's last decision of each (run, path), one pass instead of a sort.                 */

PyDoc_STRVAR(last_in_runs_doc,
"last_in_runs(run, key, span, last) -> None\n\n"
"run, key: int64 of one length m, run non-decreasing (each run one stretch), each key in [0, span).  Sets\n"
"last[i] (uint8) to 1 where row i is the last row of its (run, key) pair, else 0.  ValueError when a run\n"
"decreases or a key is outside [0, span).");

static PyObject *last_in_runs(PyObject *self, PyObject *args)
{
    PyObject *run_o, *key_o, *last_o;
    Py_ssize_t span;
    if (!PyArg_ParseTuple(args, "OOnO", &run_o, &key_o, &span, &last_o))
        return NULL;
    Py_buffer runs = {0}, keys = {0}, last = {0};
    PyObject *result = NULL;
    int64_t *stamp = NULL, *row = NULL;
    if (PyObject_GetBuffer(run_o, &runs, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0
            || PyObject_GetBuffer(key_o, &keys, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0
            || PyObject_GetBuffer(last_o, &last, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        goto done;
    const Py_ssize_t m = keys.len / 8;
    if (keys.itemsize != 8 || runs.itemsize != 8 || !keys.format || !strchr("lq", keys.format[0]) || !runs.format
            || !strchr("lq", runs.format[0]) || runs.len != m * 8 || last.len != m || span < 1) {
        PyErr_SetString(PyExc_ValueError, "last_in_runs: int64 runs and keys of one length, a uint8 output, span >= 1");
        goto done;
    }
    stamp = (int64_t *)malloc(sizeof(int64_t) * (size_t)span);
    row = (int64_t *)malloc(sizeof(int64_t) * (size_t)span);
    if (!stamp || !row) {
        PyErr_NoMemory();
        goto done;
    }
    const int64_t *r = (const int64_t *)runs.buf, *k = (const int64_t *)keys.buf;
    uint8_t *out = (uint8_t *)last.buf;
    Py_ssize_t bad = -1;
    int why = 0;
    Py_BEGIN_ALLOW_THREADS
    /* stamp[key]: the run of the key's latest row; only keys met in the current run are compared, so a stamp
     * from an earlier run (or the initial fill's) never matches: runs only grow. */
    for (Py_ssize_t j = 0; j < span; j++)
        stamp[j] = INT64_MIN;
    for (Py_ssize_t i = 0; i < m; i++) {
        uint64_t key = (uint64_t)k[i];
        if (key >= (uint64_t)span || r[i] == INT64_MIN || (i && r[i] < r[i - 1])) {
            bad = i;
            why = key >= (uint64_t)span ? 1 : 2;
            break;
        }
        if (stamp[key] == r[i])
            out[row[key]] = 0;  /* a later row of the same (run, key) */
        stamp[key] = r[i];
        row[key] = i;
        out[i] = 1;
    }
    Py_END_ALLOW_THREADS
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, why == 1 ? "last_in_runs: key %zd is outside [0, %zd)"
                                                : "last_in_runs: the runs decrease at row %zd (span %zd)", bad, span);
        goto done;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    free(stamp);
    free(row);
    if (runs.obj)
        PyBuffer_Release(&runs);
    if (keys.obj)
        PyBuffer_Release(&keys);
    if (last.obj)
        PyBuffer_Release(&last);
    return result;
}

static PyMethodDef methods[] = {
    {"derive", derive, METH_VARARGS, derive_doc},
    {"scope_visits", scope_visits, METH_VARARGS, scope_visits_doc},
    {"cell_counts", cell_counts, METH_VARARGS, cell_counts_doc},
    {"first_codes", first_codes, METH_VARARGS, first_codes_doc},
    {"last_in_runs", last_in_runs, METH_VARARGS, last_in_runs_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_ctries",
    "Compiled move-try derivation (optional; see treediff.report.tries).",
    -1, methods,
};

PyMODINIT_FUNC PyInit__ctries(void)
{
    return PyModule_Create(&module);
}
