/*
 * treediff.store._cstore: the categorical codes of a dictionary-encoded Arrow column, in one pass.
 *
 * Arrow's to_pandas turns a dictionary column into a pandas Categorical element by element, with a bounds
 * check of every index first: ~5 ns a record per column (eleven such columns in a records table: ~1 CPU-s of
 * a 20M-record report, issue 17).  treediff.store.categorical unifies the chunks' dictionaries (a few to a few
 * thousand values) with Arrow's hash kernels and gives each chunk a transpose table; dictionary_codes() writes
 * each record's code through it (-1 for a null): ~1 ns a record in cache, ~2 in a report's batches.
 * tests/store/test_categorical.py holds the frames equal to to_pandas's.
 *
 * Only the CPython API and the buffer protocol are used (no numpy headers); the pass runs without the GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Branch-free (nulls and out-of-range indices are flags, not jumps): a null's index may hold anything. */
#define DC_WRITE(TYPE)                                                                                     \
    do {                                                                                                   \
        TYPE *o = (TYPE *)out.buf + at;                                                                     \
        const int32_t *k = idx + offset;                                                                   \
        for (Py_ssize_t i = 0; i < length; i++) {                                                          \
            Py_ssize_t bit = offset + i;                                                                   \
            int v = valid ? (valid[bit >> 3] >> (bit & 7)) & 1 : 1;                                        \
            uint32_t u = (uint32_t)k[i];                                                                   \
            int in_range = u < (uint32_t)n_map;                                                            \
            int32_t code = map[in_range ? u : 0];                                                          \
            o[i] = (TYPE)(v ? code : -1);                                                                  \
            outside |= v & !in_range;                                                                      \
        }                                                                                                  \
    } while (0)

PyDoc_STRVAR(dictionary_codes_doc,
"dictionary_codes(out, at, indices, offset, length, validity, transpose)\n\n"
"Write out[at:at + length] (a writable int8, int16 or int32 buffer) from one chunk of a dictionary array:\n"
"record i's code is transpose[indices[offset + i]] (transpose: int32, the chunk's dictionary index -> the\n"
"unified code), or -1 where bit offset + i of validity (a bitmap, or None: no nulls) is 0.  indices is the\n"
"chunk's int32 index buffer.  ValueError when a valid record's index is outside transpose.");

static PyObject *dictionary_codes(PyObject *self, PyObject *args)
{
    PyObject *out_o, *idx_o, *valid_o, *map_o;
    Py_ssize_t at, offset, length;
    if (!PyArg_ParseTuple(args, "OnOnnOO", &out_o, &at, &idx_o, &offset, &length, &valid_o, &map_o))
        return NULL;
    Py_buffer out = {0}, indices = {0}, validity = {0}, transpose = {0};
    PyObject *result = NULL;
    if (PyObject_GetBuffer(out_o, &out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE | PyBUF_FORMAT) < 0)
        goto done;
    if (PyObject_GetBuffer(idx_o, &indices, PyBUF_C_CONTIGUOUS) < 0)
        goto done;
    if (valid_o != Py_None && PyObject_GetBuffer(valid_o, &validity, PyBUF_C_CONTIGUOUS) < 0)
        goto done;
    if (PyObject_GetBuffer(map_o, &transpose, PyBUF_C_CONTIGUOUS) < 0)
        goto done;
    Py_ssize_t size = out.itemsize;
    int ok = (size == 1 || size == 2 || size == 4) && out.format && strchr("bhil", out.format[0])
             && at >= 0 && offset >= 0 && length >= 0 && at + length <= out.len / size
             && (offset + length) * 4 <= indices.len && transpose.len % 4 == 0 && transpose.len / 4 < INT32_MAX
             && (!validity.obj || (offset + length + 7) / 8 <= validity.len);
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "dictionary_codes: an int8/16/32 output with room for the chunk, int32 "
                                          "indices and transpose, a validity bitmap covering the chunk");
        goto done;
    }
    static const int32_t no_values[1] = {-1};  /* (an empty dictionary: every record must be null) */
    const int32_t *idx = (const int32_t *)indices.buf;
    const int32_t *map = transpose.len ? (const int32_t *)transpose.buf : no_values;
    const uint8_t *valid = validity.obj ? (const uint8_t *)validity.buf : NULL;
    const Py_ssize_t n_map = transpose.len / 4;
    int outside = 0;
    Py_BEGIN_ALLOW_THREADS
    if (size == 1)
        DC_WRITE(int8_t);
    else if (size == 2)
        DC_WRITE(int16_t);
    else
        DC_WRITE(int32_t);
    Py_END_ALLOW_THREADS
    if (outside) {
        PyErr_SetString(PyExc_ValueError, "dictionary_codes: a record's dictionary index is out of range");
        goto done;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    if (out.obj)
        PyBuffer_Release(&out);
    if (indices.obj)
        PyBuffer_Release(&indices);
    if (validity.obj)
        PyBuffer_Release(&validity);
    if (transpose.obj)
        PyBuffer_Release(&transpose);
    return result;
}

static PyMethodDef methods[] = {
    {"dictionary_codes", dictionary_codes, METH_VARARGS, dictionary_codes_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_cstore",
    "Compiled conversion of dictionary columns to categorical codes (optional; see treediff.store.categorical).",
    -1, methods,
};

PyMODINIT_FUNC PyInit__cstore(void)
{
    return PyModule_Create(&module);
}
