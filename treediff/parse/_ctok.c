/*
 * treediff.parse._ctok: the fast-path TREEDUMP tokenizer in C.
 *
 * Does for a chunk of lines exactly what the polars regex of
 * treediff.parse.tokenizer.FAST_PATTERN does:
 *
 *   ^(MOVE|RESULT)( path=V)?( ply=V)?...( ctx=V)?\r?\n?$     V = [!-~]+
 *
 * i.e. a tag, then keys in canonical order, each at most once, each preceded
 * by exactly one space, values of printable non-space ASCII, then an optional
 * CR, an optional LF and the end of the line.  A line that does not have this
 * shape gets nulls in every field (the Python slow path handles it).
 *
 * Output is Arrow string views (16 bytes per value) that point into the
 * chunk's own data buffer (buffer index 0) for values longer than 12 bytes,
 * so no value is copied twice; Python wraps them with
 * pyarrow.Array.from_buffers(pa.string_view(), ...).
 *
 * Only the CPython API and the buffer protocol are used; the scan runs
 * without the GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Field 0 is the tag; fields 1..N_KEYS are ROW_KEYS in canonical order
 * (must match treediff.parse.tokenizer.ROW_KEYS; checked by the tests). */
#define N_KEYS 16
#define N_FIELDS (N_KEYS + 1)
#define VIEW_BYTES 16

static const char *const KEYS[N_KEYS] = {
    "path", "ply", "mn", "d", "nd", "act", "red", "a", "b", "nt", "see", "hist", "why",
    "score", "bound", "ctx",
};
static size_t KEY_LENS[N_KEYS];

static inline int is_value_byte(unsigned char c) { return c >= 0x21 && c <= 0x7e; }

/* Index (0-based, into KEYS) of the key [k, k+len) among KEYS[from..], or -1. */
static inline int find_key(const unsigned char *k, size_t len, int from)
{
    for (int j = from; j < N_KEYS; j++) {
        if (KEY_LENS[j] == len && memcmp(KEYS[j], k, len) == 0)
            return j;
    }
    return -1;
}

/* Match one line; on success fill start/len for each field (len -1 = absent) and return 1. */
static inline int match_line(const unsigned char *line, Py_ssize_t size,
                             Py_ssize_t *start, int32_t *len)
{
    Py_ssize_t end = size;
    if (end > 0 && line[end - 1] == '\n')
        end--;
    if (end > 0 && line[end - 1] == '\r')
        end--;

    Py_ssize_t pos;
    if (end >= 4 && memcmp(line, "MOVE", 4) == 0)
        pos = 4;
    else if (end >= 6 && memcmp(line, "RESULT", 6) == 0)
        pos = 6;
    else
        return 0;
    start[0] = 0;
    len[0] = (int32_t)pos;
    for (int f = 1; f < N_FIELDS; f++)
        len[f] = -1;

    int next_key = 0; /* keys before this index are used up */
    while (pos < end) {
        if (line[pos] != ' ')
            return 0;
        pos++;
        Py_ssize_t tok = pos, eq = -1;
        while (pos < end && is_value_byte(line[pos])) {
            if (eq < 0 && line[pos] == '=')
                eq = pos;
            pos++;
        }
        /* The token ends at a space, at the end, or at a byte that cannot occur anywhere:
         * the next round (or the end test) rejects the latter. */
        if (eq <= tok || eq + 1 >= pos)
            return 0; /* no '=', empty key or empty value */
        int k = find_key(line + tok, (size_t)(eq - tok), next_key);
        if (k < 0)
            return 0; /* unknown, repeated or out-of-order key */
        start[k + 1] = eq + 1;
        len[k + 1] = (int32_t)(pos - eq - 1);
        next_key = k + 1;
    }
    return 1;
}

/* Shape of a path= value, so the parser need not run a regex over every path:
 * PATH_UCI: UCI moves or 0000, '/'-separated (treediff.parse.moves.UCI_PATH_PATTERN);
 * PATH_ROOT: "-"; PATH_OTHER: anything else (coordinates, SAN, other null spellings). */
enum { PATH_NONE = 0, PATH_UCI = 1, PATH_ROOT = 2, PATH_OTHER = 3 };

static inline int is_uci_move(const unsigned char *m, Py_ssize_t len)
{
    if (len == 4 && memcmp(m, "0000", 4) == 0)
        return 1;
    if (len != 4 && len != 5)
        return 0;
    if (m[0] < 'a' || m[0] > 'h' || m[1] < '1' || m[1] > '8' || m[2] < 'a' || m[2] > 'h' || m[3] < '1' || m[3] > '8')
        return 0;
    return len == 4 || m[4] == 'q' || m[4] == 'r' || m[4] == 'b' || m[4] == 'n';
}

static inline unsigned char path_shape(const unsigned char *v, Py_ssize_t len)
{
    if (len == 1 && v[0] == '-')
        return PATH_ROOT;
    Py_ssize_t from = 0;
    for (Py_ssize_t i = 0; i <= len; i++) {
        if (i == len || v[i] == '/') {
            if (!is_uci_move(v + from, i - from))
                return PATH_OTHER;
            from = i + 1;
        }
    }
    return PATH_UCI;
}

/* Write the Arrow string view of data[offset, offset+length) (little-endian, like Arrow itself).
 * Values of up to 12 bytes are stored inline, zero-padded; longer ones by prefix, buffer 0, offset. */
static inline void write_view(unsigned char *view, const unsigned char *data, Py_ssize_t data_len,
                              Py_ssize_t offset, int32_t length)
{
    uint32_t len32 = (uint32_t)length;
    const unsigned char *src = data + offset;
    if (length <= 12) {
        uint64_t a = 0;
        uint32_t b = 0;
        if (offset + 12 <= data_len) { /* fixed-size loads, then mask off the bytes past the value */
            memcpy(&a, src, 8);
            memcpy(&b, src + 8, 4);
            if (length < 8) {
                a = length ? a & (~0ULL >> (64 - 8 * length)) : 0;
                b = 0;
            } else if (length < 12) {
                b = length > 8 ? b & (~0U >> (32 - 8 * (length - 8))) : 0;
            }
            memcpy(view, &len32, 4);
            memcpy(view + 4, &a, 8);
            memcpy(view + 12, &b, 4);
        } else { /* near the end of the buffer: no reads past it */
            memset(view, 0, 16);
            memcpy(view, &len32, 4);
            memcpy(view + 4, src, (size_t)length);
        }
    } else {
        uint32_t buffer_index = 0, off32 = (uint32_t)offset;
        memcpy(view, &len32, 4);
        memcpy(view + 4, src, 4);
        memcpy(view + 8, &buffer_index, 4);
        memcpy(view + 12, &off32, 4);
    }
}

PyDoc_STRVAR(fast_fields_doc,
"fast_fields(data, offsets, views, validity, shapes) -> null_counts\n\n"
"data: the chunk's bytes (any contiguous buffer, at most 2**31-1 bytes).\n"
"offsets: int64 buffer of n+1 line boundaries into data (as split_lines makes them).\n"
"views, validity: writable, ZEROED buffers of 17*n*16 and 17*ceil(n/8) bytes.\n"
"Fills, for the 17 fields tag + ROW_KEYS in order, Arrow string views (field f at\n"
"views[f*n*16:(f+1)*n*16]) and validity bitmaps (field f at validity[f*ceil(n/8):...]);\n"
"null entries are left untouched (zero).  Views longer than 12 bytes point into data\n"
"as variadic buffer 0.  shapes: writable, zeroed, n bytes: each matched line's path shape\n"
"(1 UCI path, 2 the root '-', 3 anything else; 0 no path or no match).\n"
"Returns the tuple of the 17 null counts.");

static PyObject *fast_fields(PyObject *self, PyObject *args)
{
    PyObject *data_obj, *offsets_obj, *views_obj, *validity_obj, *shapes_obj;
    if (!PyArg_ParseTuple(args, "OOOOO", &data_obj, &offsets_obj, &views_obj, &validity_obj, &shapes_obj))
        return NULL;

    Py_buffer data = {0}, offs = {0}, views = {0}, validity = {0}, shapes = {0};
    PyObject *result = NULL;
    Py_ssize_t null_counts[N_FIELDS] = {0};

    if (PyObject_GetBuffer(data_obj, &data, PyBUF_C_CONTIGUOUS) < 0)
        goto done;
    if (PyObject_GetBuffer(offsets_obj, &offs, PyBUF_C_CONTIGUOUS) < 0)
        goto done;
    if (PyObject_GetBuffer(views_obj, &views, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        goto done;
    if (PyObject_GetBuffer(validity_obj, &validity, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        goto done;
    if (PyObject_GetBuffer(shapes_obj, &shapes, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        goto done;

    if (data.len > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "chunk larger than 2**31-1 bytes");
        goto done;
    }
    if (offs.len % 8 != 0 || offs.len < 8) {
        PyErr_SetString(PyExc_ValueError, "offsets must be n+1 int64 values");
        goto done;
    }
    const int64_t *off = (const int64_t *)offs.buf;
    Py_ssize_t n = offs.len / 8 - 1;
    if (off[0] < 0 || off[n] > data.len) {
        PyErr_SetString(PyExc_ValueError, "offsets must be within data");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (off[i] > off[i + 1]) {
            PyErr_SetString(PyExc_ValueError, "offsets must be non-decreasing");
            goto done;
        }
    }
    Py_ssize_t bitmap_bytes = (n + 7) / 8;
    if (views.len != (Py_ssize_t)N_FIELDS * n * VIEW_BYTES || validity.len != (Py_ssize_t)N_FIELDS * bitmap_bytes
            || shapes.len != n) {
        PyErr_SetString(PyExc_ValueError, "views/validity/shapes buffers have the wrong size");
        goto done;
    }
    unsigned char *shape = (unsigned char *)shapes.buf;
    unsigned char *vw = (unsigned char *)views.buf;
    unsigned char *vb = (unsigned char *)validity.buf;
    const unsigned char *buf = (const unsigned char *)data.buf;
    Py_ssize_t data_len = data.len;

    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t start[N_FIELDS];
    int32_t len[N_FIELDS];
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!match_line(buf + off[i], (Py_ssize_t)(off[i + 1] - off[i]), start, len)) {
            for (int f = 0; f < N_FIELDS; f++)
                null_counts[f]++;
            continue;
        }
        if (len[1] >= 0) /* field 1 is path */
            shape[i] = path_shape(buf + off[i] + start[1], len[1]);
        unsigned char bit = (unsigned char)(1u << (i & 7));
        for (int f = 0; f < N_FIELDS; f++) {
            if (len[f] >= 0) {
                write_view(vw + ((Py_ssize_t)f * n + i) * VIEW_BYTES, buf, data_len, off[i] + start[f], len[f]);
                vb[f * bitmap_bytes + (i >> 3)] |= bit;
            } else {
                null_counts[f]++;
            }
        }
    }
    Py_END_ALLOW_THREADS

    result = PyTuple_New(N_FIELDS);
    if (result == NULL)
        goto done;
    for (int f = 0; f < N_FIELDS; f++) {
        PyObject *c = PyLong_FromSsize_t(null_counts[f]);
        if (c == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        PyTuple_SET_ITEM(result, f, c);
    }

done:
    if (data.obj) PyBuffer_Release(&data);
    if (offs.obj) PyBuffer_Release(&offs);
    if (views.obj) PyBuffer_Release(&views);
    if (validity.obj) PyBuffer_Release(&validity);
    if (shapes.obj) PyBuffer_Release(&shapes);
    return result;
}

static PyObject *row_keys(PyObject *self, PyObject *unused)
{
    PyObject *t = PyTuple_New(N_KEYS);
    if (t == NULL)
        return NULL;
    for (int j = 0; j < N_KEYS; j++) {
        PyObject *s = PyUnicode_FromString(KEYS[j]);
        if (s == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, j, s);
    }
    return t;
}

static PyMethodDef methods[] = {
    {"fast_fields", fast_fields, METH_VARARGS, fast_fields_doc},
    {"row_keys", row_keys, METH_NOARGS, "The keys, in the order of the fields after the tag."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_ctok",
    "Compiled fast-path TREEDUMP tokenizer (optional; see treediff.parse.tokenizer).",
    -1, methods,
};

PyMODINIT_FUNC PyInit__ctok(void)
{
    for (int j = 0; j < N_KEYS; j++)
        KEY_LENS[j] = strlen(KEYS[j]);
    return PyModule_Create(&module);
}
