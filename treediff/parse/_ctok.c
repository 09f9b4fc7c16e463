/*
 * treediff.parse._ctok: the fast-path TREEDUMP tokenizer in C.
 *
 * Does for a chunk of lines exactly what the polars regex of
 * treediff.parse.tokenizer.FAST_PATTERN does:
 *
 *   ^(MOVE|RESULT)( path=V)?( ply=V)?...( ctx=V)?\r?\n?$     V = [!-~]+
 *
 * It also holds the parser's node-visit post-pass (visits(), the same numbers
 * as treediff.parse.visits.visit_numbers).
 *
 * i.e. a tag, then keys in canonical order, each at most once, each preceded
 * by exactly one space, values of printable non-space ASCII, then an optional
 * CR, an optional LF and the end of the line.  A line that does not have this
 * shape gets nulls in every field (the Python slow path handles it).
 *
 * Output is typed column buffers (typed_fields): the ten integer keys parsed
 * to int64 with validity bitmaps (a value that is not an integer is null and
 * flagged per row), the string fields as Arrow string views (16 bytes per
 * value) that point into the chunk's own data buffer (buffer index 0) for
 * values longer than 12 bytes, so no value is copied twice, and each path's
 * shape and length in moves.  Python wraps them with
 * pyarrow.Array.from_buffers, no Python object per line.
 *
 * Only the CPython API and the buffer protocol are used; the scan runs
 * without the GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
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
/* "key=" of KEYS[j] as the low bytes of a little-endian word, and the mask of those bytes (keys are at
 * most 5 bytes, so "key=" fits in 8): a token starts with it exactly when (word ^ KEY_WORD) & KEY_MASK is 0. */
static uint64_t KEY_WORD[N_KEYS], KEY_MASK[N_KEYS];

static inline int is_value_byte(unsigned char c) { return c >= 0x21 && c <= 0x7e; }

/* End of the run of value bytes ([!-~]) that starts at line[pos], at most `end`.
 * Eight bytes at a time where the buffer has them (one load, two SWAR tests: a byte below 0x21,
 * a byte above 0x7e); the lowest flagged byte of each test is exact, which is all that is used. */
static inline Py_ssize_t value_end(const unsigned char *line, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t room)
{
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    while (pos + 8 <= room) {
        uint64_t w;
        memcpy(&w, line + pos, 8);
        uint64_t below = (w - ones * 0x21) & ~w & highs;  /* bytes < 0x21 */
        uint64_t above = ((w + ones * 1) | w) & highs;     /* bytes > 0x7e */
        uint64_t stop = below | above;
        if (stop) {
            pos += __builtin_ctzll(stop) >> 3;
            return pos < end ? pos : end;
        }
        pos += 8;
        if (pos >= end)
            return end;
    }
    while (pos < end && is_value_byte(line[pos]))
        pos++;
    return pos;
}

#if defined(__SSE2__)
#include <emmintrin.h>
#define TOKENS_BY_MASK 1
/* What match_line does after the tag, for the bytes [pos, end) of a line when they are at most MASK_SPAN
 * bytes and MASK_SPAN + 8 bytes are readable from pos: every byte's class is taken 16 at a time (a
 * space; a value byte [!-~]; anything else rejects the line), so each token's bounds come from the
 * bit mask of the spaces and the tokens' key tests do not wait on each other's value scans.
 * The same lines match, with the same fields, as the byte-by-byte scan below (tests/parse/test_ctok.py
 * compares both with the regex). */
#define MASK_SPAN 128
static inline int match_tokens_by_mask(const unsigned char *line, Py_ssize_t pos, Py_ssize_t end,
                                       Py_ssize_t *start, int32_t *len)
{
    Py_ssize_t n = end - pos;
    if (n == 0)
        return 1; /* the bare tag */
    uint64_t spaces[MASK_SPAN / 64];
    const __m128i space = _mm_set1_epi8(' '), below = _mm_set1_epi8(0x20), del = _mm_set1_epi8(0x7f);
    int words = (int)((n + 63) / 64);
    for (int w = 0; w < words; w++) {
        uint64_t sp = 0, ok = 0;
        for (int q = 0; q < 4; q++) {
            __m128i v = _mm_loadu_si128((const __m128i *)(line + pos + w * 64 + q * 16));
            __m128i is_space = _mm_cmpeq_epi8(v, space);
            /* (signed compare: 0x21..0x7f are above 0x20, 0x80..0xff are negative) */
            __m128i value_byte = _mm_andnot_si128(_mm_cmpeq_epi8(v, del), _mm_cmpgt_epi8(v, below));
            sp |= (uint64_t)(uint16_t)_mm_movemask_epi8(is_space) << (q * 16);
            ok |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_or_si128(is_space, value_byte)) << (q * 16);
        }
        Py_ssize_t left = n - (Py_ssize_t)w * 64;
        uint64_t inside = left >= 64 ? ~0ULL : (1ULL << left) - 1;
        if (~ok & inside)
            return 0; /* a byte that is neither a space nor a value byte */
        spaces[w] = sp & inside;
    }
    if (!(spaces[0] & 1))
        return 0; /* the tag must be followed by a space */
    int next_key = 0;
    Py_ssize_t token = -1; /* start of the token whose end is the next space (or the end) */
    for (int w = 0; w <= words; w++) {
        uint64_t sp = w < words ? spaces[w] : 0;
        for (;;) {
            Py_ssize_t stop;
            if (sp) {
                stop = (Py_ssize_t)w * 64 + __builtin_ctzll(sp);
                sp &= sp - 1;
            } else if (w == words) {
                stop = n;
            } else {
                break;
            }
            if (token >= 0) { /* the token [token, stop) */
                uint64_t word;
                memcpy(&word, line + pos + token, 8);
                int k = -1;
                for (int j = next_key; j < N_KEYS; j++) {
                    if (((word ^ KEY_WORD[j]) & KEY_MASK[j]) == 0 && token + (Py_ssize_t)KEY_LENS[j] < n) {
                        k = j;
                        break;
                    }
                }
                if (k < 0)
                    return 0; /* no '=', empty, unknown, repeated or out-of-order key */
                Py_ssize_t value = token + (Py_ssize_t)KEY_LENS[k] + 1;
                if (value >= stop)
                    return 0; /* empty value */
                start[k + 1] = pos + value;
                len[k + 1] = (int32_t)(stop - value);
                next_key = k + 1;
            }
            if (stop == n)
                return 1;
            token = stop + 1;
        }
    }
    return 1;
}
#endif

/* Match one line; on success fill start/len for each field (len -1 = absent) and return 1.
 * `room`: bytes readable from `line` on (to the end of the chunk), for the wide loads. */
static inline int match_line(const unsigned char *line, Py_ssize_t size, Py_ssize_t room,
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

#ifdef TOKENS_BY_MASK
    if (end - pos <= MASK_SPAN && pos + MASK_SPAN + 8 <= room)
        return match_tokens_by_mask(line, pos, end, start, len);
#endif
    int next_key = 0; /* keys before this index are used up */
    while (pos < end) {
        if (line[pos] != ' ')
            return 0;
        pos++;
        /* The token's key is what comes before its first '='; keys hold no '=', so it is KEYS[j]
         * exactly when the token starts with KEYS[j] then '='.  Only keys after the last one
         * found may follow (canonical order, each once). */
        int k = -1;
        if (pos + 8 <= room) { /* one 8-byte load, each key's "key=" compared under its mask */
            uint64_t w;
            memcpy(&w, line + pos, 8);
            for (int j = next_key; j < N_KEYS; j++) {
                if (((w ^ KEY_WORD[j]) & KEY_MASK[j]) == 0 && pos + (Py_ssize_t)KEY_LENS[j] < end) {
                    k = j;
                    break;
                }
            }
        } else {
            for (int j = next_key; j < N_KEYS; j++) {
                Py_ssize_t kl = (Py_ssize_t)KEY_LENS[j];
                if (pos + kl < end && line[pos] == (unsigned char)KEYS[j][0] && line[pos + kl] == '='
                        && memcmp(line + pos, KEYS[j], (size_t)kl) == 0) {
                    k = j;
                    break;
                }
            }
        }
        if (k < 0)
            return 0; /* no '=', empty, unknown, repeated or out-of-order key */
        Py_ssize_t value = pos + (Py_ssize_t)KEY_LENS[k] + 1;
        /* The token ends at a space, at the end, or at a byte that cannot occur anywhere:
         * the next round (or the end test) rejects the latter. */
        pos = value_end(line, value, end, room);
        if (pos == value)
            return 0; /* empty value */
        start[k + 1] = value;
        len[k + 1] = (int32_t)(pos - value);
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

/* The shape of path value v, and (in *plies) its length in moves: 0 for the root "-", else one more
 * than its '/' count (what treediff.parse.assemble.check_ply compares ply= with).
 * A UCI path is walked a move at a time (a move is 4 or 5 bytes, none of them '/'); only a path that
 * turns out not to be one has its '/' counted byte by byte. */
static inline unsigned char path_shape(const unsigned char *v, Py_ssize_t len, int32_t *plies)
{
    if (len == 1 && v[0] == '-') {
        *plies = 0;
        return PATH_ROOT;
    }
    int32_t moves = 1;
    Py_ssize_t from = 0;
    for (;;) {
        Py_ssize_t rest = len - from, size;
        if (rest == 4 || (rest > 4 && v[from + 4] == '/'))
            size = 4;
        else if (rest == 5 || (rest > 5 && v[from + 5] == '/'))
            size = 5;
        else
            break; /* a move of another length: not UCI */
        if (!is_uci_move(v + from, size))
            break;
        if (from + size == len) {
            *plies = moves;
            return PATH_UCI;
        }
        moves++;
        from += size + 1;
    }
    int32_t slashes = 0;
    for (Py_ssize_t i = 0; i < len; i++)
        slashes += v[i] == '/';
    *plies = slashes + 1;
    return PATH_OTHER;
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

/* The typed layout: which output each key goes to.  String fields (Arrow string views): the tag,
 * then path, act, nt, why, bound, ctx; integer fields (int64 + validity): the other ten keys, in
 * canonical order.  Must match treediff.parse.tokenizer.STRING_FIELDS / INT_FIELDS (checked by the tests). */
#define N_STR 7
#define N_INT 10
/* For KEYS[j]: its string slot (>= 0) or -1 - its int slot. */
static const int SLOT[N_KEYS] = {
    /* path */ 1, /* ply */ -1, /* mn */ -2, /* d */ -3, /* nd */ -4, /* act */ 2, /* red */ -5, /* a */ -6,
    /* b */ -7, /* nt */ 3, /* see */ -8, /* hist */ -9, /* why */ 4, /* score */ -10, /* bound */ 5, /* ctx */ 6,
};

/* v[0, len) as an integer the way polars' strict=False cast of a string to Int64 reads it:
 * [+-]?[0-9]+ within int64.  Returns 0 (and leaves *out) when it is not one. */
static inline int parse_int64(const unsigned char *v, int32_t len, int64_t *out)
{
    int32_t i = 0;
    int negative = 0;
    if (len > 0 && (v[0] == '-' || v[0] == '+')) {
        negative = v[0] == '-';
        i = 1;
    }
    if (i >= len)
        return 0;
    uint64_t acc = 0;
    if (len - i <= 18) { /* at most 18 digits: below 10**18, within int64 whatever they are */
        for (; i < len; i++) {
            unsigned d = (unsigned)v[i] - '0';
            if (d > 9)
                return 0;
            acc = acc * 10 + d;
        }
        *out = negative ? -(int64_t)acc : (int64_t)acc;
        return 1;
    }
    uint64_t limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < len; i++) {
        unsigned d = (unsigned)v[i] - '0';
        if (d > 9)
            return 0;
        if (acc > (limit - d) / 10)
            return 0; /* out of range */
        acc = acc * 10 + d;
    }
    *out = negative ? (int64_t)(0 - acc) : (int64_t)acc;
    return 1;
}

PyDoc_STRVAR(typed_fields_doc,
"typed_fields(data, offsets, views, validity, ints, int_validity, bad, shapes, plies) -> null_counts\n\n"
"data: the chunk's bytes (any contiguous buffer, at most 2**31-1 bytes).\n"
"offsets: int64 buffer of n+1 line boundaries into data (as split_lines makes them).\n"
"All output buffers writable; the validity bitmaps ZEROED (bits are only set).  Every entry of a\n"
"matched line's row is written (zero for a null value); an unmatched line's row (typed_fields)\n"
"is left untouched, so typed_fields needs zeroed buffers, record_fields only zeroed bitmaps:\n"
"views (7*n*16 bytes), validity (7*ceil(n/8)): Arrow string views of the tag, path, act, nt,\n"
"why, bound, ctx (field f at views[f*n*16:...], validity[f*ceil(n/8):...]); views longer than\n"
"12 bytes point into data as variadic buffer 0.\n"
"ints (10*n int64), int_validity (10*ceil(n/8)): ply, mn, d, nd, red, a, b, see, hist, score\n"
"parsed as integers ([+-]?[0-9]+ within int64); a value that is not one is null and sets\n"
"bit k of bad[i] (uint16, n) for int field k.\n"
"shapes (uint8, n): each matched line's path shape (1 UCI path, 2 the root '-', 3 anything\n"
"else; 0 no path or no match); plies (int32, n): the path's length in moves (root 0).\n"
"Returns the tuple of the 7 + 10 null counts (bad values count as null).");

/* typed_fields() and record_fields(): one scan.  `compact`: only the matched lines get a row, rows
 * 0..m-1 in line order, and idx[r] is row r's line (the others are left to the slow path); else row i
 * is line i and an unmatched line is a row of nulls. */
static PyObject *scan_fields(PyObject *args, int compact)
{
    enum { DATA, OFFS, VIEWS, VALID, INTS, IVALID, BAD, SHAPES, PLIES, IDX, N_ARGS };
    int n_args = compact ? N_ARGS : IDX;
    PyObject *objs[N_ARGS] = {NULL};
    if (compact) {
        if (!PyArg_ParseTuple(args, "OOOOOOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5],
                              &objs[6], &objs[7], &objs[8], &objs[9]))
            return NULL;
    } else if (!PyArg_ParseTuple(args, "OOOOOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5],
                                 &objs[6], &objs[7], &objs[8])) {
        return NULL;
    }
    Py_buffer b[N_ARGS];
    memset(b, 0, sizeof b);
    PyObject *result = NULL;
    Py_ssize_t str_nulls[N_STR] = {0}, int_nulls[N_INT] = {0};
    Py_ssize_t rows = 0;

    for (int i = 0; i < n_args; i++) {
        int flags = PyBUF_C_CONTIGUOUS | (i >= VIEWS ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(objs[i], &b[i], flags) < 0)
            goto done;
    }
    if (b[DATA].len > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "chunk larger than 2**31-1 bytes");
        goto done;
    }
    if (b[OFFS].len % 8 != 0 || b[OFFS].len < 8) {
        PyErr_SetString(PyExc_ValueError, "offsets must be n+1 int64 values");
        goto done;
    }
    const int64_t *off = (const int64_t *)b[OFFS].buf;
    Py_ssize_t n = b[OFFS].len / 8 - 1;
    if (off[0] < 0 || off[n] > b[DATA].len) {
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
    if (b[VIEWS].len != (Py_ssize_t)N_STR * n * VIEW_BYTES || b[VALID].len != (Py_ssize_t)N_STR * bitmap_bytes
            || b[INTS].len != (Py_ssize_t)N_INT * n * 8 || b[IVALID].len != (Py_ssize_t)N_INT * bitmap_bytes
            || b[BAD].len != n * 2 || b[SHAPES].len != n || b[PLIES].len != n * 4
            || (compact && b[IDX].len != n * 4)) {
        PyErr_SetString(PyExc_ValueError, "typed_fields: output buffers have the wrong size");
        goto done;
    }
    const unsigned char *buf = (const unsigned char *)b[DATA].buf;
    Py_ssize_t data_len = b[DATA].len;
    unsigned char *vw = (unsigned char *)b[VIEWS].buf, *vb = (unsigned char *)b[VALID].buf;
    int64_t *iv = (int64_t *)b[INTS].buf;
    unsigned char *ib = (unsigned char *)b[IVALID].buf;
    uint16_t *bad = (uint16_t *)b[BAD].buf;
    unsigned char *shape = (unsigned char *)b[SHAPES].buf;
    int32_t *plies = (int32_t *)b[PLIES].buf;
    uint32_t *idx = compact ? (uint32_t *)b[IDX].buf : NULL;

    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t start[N_FIELDS];
    int32_t len[N_FIELDS];
    /* The validity bits of the bitmap byte being filled (rows 8*acc_byte .. 8*acc_byte+7), stored (OR) when
     * a row of the next byte comes and at the end: one store a bitmap per 8 rows, not a load and store a
     * value. */
    unsigned char str_acc[N_STR] = {0}, int_acc[N_INT] = {0};
    Py_ssize_t acc_byte = 0;
#define FLUSH_VALIDITY()                                                     \
    do {                                                                     \
        for (int f_ = 0; f_ < N_STR; f_++)                                   \
            if (str_acc[f_]) {                                               \
                vb[f_ * bitmap_bytes + acc_byte] |= str_acc[f_];             \
                str_acc[f_] = 0;                                             \
            }                                                                \
        for (int k_ = 0; k_ < N_INT; k_++)                                   \
            if (int_acc[k_]) {                                               \
                ib[k_ * bitmap_bytes + acc_byte] |= int_acc[k_];             \
                int_acc[k_] = 0;                                             \
            }                                                                \
    } while (0)
    for (Py_ssize_t i = 0; i < n; i++) {
        const unsigned char *line = buf + off[i];
        if (!match_line(line, (Py_ssize_t)(off[i + 1] - off[i]), data_len - off[i], start, len)) {
            if (compact)
                continue;
            for (int f = 0; f < N_STR; f++)
                str_nulls[f]++;
            for (int f = 0; f < N_INT; f++)
                int_nulls[f]++;
            rows++;
            continue;
        }
        Py_ssize_t r = rows++;
        if (compact)
            idx[r] = (uint32_t)i;
        unsigned char bit = (unsigned char)(1u << (r & 7));
        Py_ssize_t byte = r >> 3;
        if (byte != acc_byte) {
            FLUSH_VALIDITY();
            acc_byte = byte;
        }
        /* the tag, always there */
        write_view(vw + r * VIEW_BYTES, buf, data_len, off[i] + start[0], len[0]);
        str_acc[0] |= bit;
        uint16_t bad_bits = 0;
        for (int j = 0; j < N_KEYS; j++) {
            int slot = SLOT[j];
            if (len[j + 1] < 0) {
                /* (every entry of a written row is written, zero for a null: the buffers need not be zeroed) */
                if (slot >= 0) {
                    str_nulls[slot]++;
                    memset(vw + ((Py_ssize_t)slot * n + r) * VIEW_BYTES, 0, VIEW_BYTES);
                } else {
                    int_nulls[-1 - slot]++;
                    iv[(Py_ssize_t)(-1 - slot) * n + r] = 0;
                }
                continue;
            }
            if (slot >= 0) {
                write_view(vw + ((Py_ssize_t)slot * n + r) * VIEW_BYTES, buf, data_len, off[i] + start[j + 1],
                           len[j + 1]);
                str_acc[slot] |= bit;
            } else {
                int k = -1 - slot;
                int64_t value;
                if (parse_int64(line + start[j + 1], len[j + 1], &value)) {
                    iv[(Py_ssize_t)k * n + r] = value;
                    int_acc[k] |= bit;
                } else {
                    bad_bits |= (uint16_t)(1u << k);
                    int_nulls[k]++;
                    iv[(Py_ssize_t)k * n + r] = 0;
                }
            }
        }
        bad[r] = bad_bits;
        if (len[1] >= 0) { /* field 1 is path */
            shape[r] = path_shape(line + start[1], len[1], &plies[r]);
        } else {
            shape[r] = PATH_NONE;
            plies[r] = 0;
        }
    }
    FLUSH_VALIDITY(); /* (only bits set are stored: nothing when there was no row) */
#undef FLUSH_VALIDITY
    Py_END_ALLOW_THREADS

    PyObject *counts = PyTuple_New(N_STR + N_INT);
    if (counts == NULL)
        goto done;
    for (int f = 0; f < N_STR + N_INT; f++) {
        PyObject *c = PyLong_FromSsize_t(f < N_STR ? str_nulls[f] : int_nulls[f - N_STR]);
        if (c == NULL) {
            Py_DECREF(counts);
            goto done;
        }
        PyTuple_SET_ITEM(counts, f, c);
    }
    if (compact) {
        result = Py_BuildValue("(nN)", rows, counts);
    } else {
        result = counts;
    }

done:
    for (int i = 0; i < n_args; i++) {
        if (b[i].obj)
            PyBuffer_Release(&b[i]);
    }
    return result;
}

static PyObject *typed_fields(PyObject *self, PyObject *args)
{
    return scan_fields(args, 0);
}

PyDoc_STRVAR(record_fields_doc,
"record_fields(data, offsets, views, validity, ints, int_validity, bad, shapes, plies, idx) -> (m, null_counts)\n\n"
"typed_fields for the matched lines only: rows 0..m-1 are the m lines that match, in line order,\n"
"idx (uint32, n) gives row r's line in the chunk; the buffers are sized for n rows as for\n"
"typed_fields (field f's views at views[f*n*16:], bitmaps at validity[f*ceil(n/8):]), and only\n"
"the first m rows are written.  null_counts are those of the m rows.  The lines not in idx are\n"
"the slow path's: they get no row, so the parser filters nothing out.");

static PyObject *record_fields(PyObject *self, PyObject *args)
{
    return scan_fields(args, 1);
}

PyDoc_STRVAR(line_offsets_doc,
"line_offsets(data) -> bytearray\n\n"
"The int64 offsets (native byte order) of the complete lines of data: 0, then one past each\n"
"newline, as treediff.parse.tokenizer.split_lines makes them (bytes after the last newline\n"
"are in no line).  One pass without the GIL (SSE2: 16 bytes a step; else two memchr passes).");

#if defined(__SSE2__)
/* The offsets one past each newline of buf[0..size), after a leading 0, into a malloc'd array grown as
 * needed; *count gets the number of newlines.  NULL when out of memory.  A line is ~80 bytes, so a
 * memchr call per line (two passes: count, then fill) cost more in call overhead than the scan itself
 * (~38 ns a line); here each 16-byte block is compared at once and its newlines taken from the bit mask. */
static int64_t *newline_offsets_sse2(const unsigned char *buf, Py_ssize_t size, Py_ssize_t *count)
{
    Py_ssize_t cap = size / 64 + 64, k = 0;
    int64_t *off = malloc((size_t)cap * sizeof(int64_t));
    if (off == NULL)
        return NULL;
    off[k++] = 0;
    const __m128i nl = _mm_set1_epi8('\n');
    Py_ssize_t i = 0;
    for (; i < size; i += 16) {
        unsigned int mask;
        if (i + 16 <= size) {
            mask = (unsigned int)_mm_movemask_epi8(
                _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(buf + i)), nl));
        } else {  /* the last, partial block: byte by byte */
            mask = 0;
            for (Py_ssize_t j = i; j < size; j++)
                mask |= (unsigned int)(buf[j] == '\n') << (j - i);
        }
        if (!mask)
            continue;
        if (k + 16 >= cap) {
            cap *= 2;
            int64_t *grown = realloc(off, (size_t)cap * sizeof(int64_t));
            if (grown == NULL) {
                free(off);
                return NULL;
            }
            off = grown;
        }
        while (mask) {
            off[k++] = (int64_t)(i + __builtin_ctz(mask)) + 1;
            mask &= mask - 1;
        }
    }
    *count = k - 1;
    return off;
}
#endif

static PyObject *line_offsets(PyObject *self, PyObject *arg)
{
    Py_buffer data = {0};
    if (PyObject_GetBuffer(arg, &data, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    const unsigned char *buf = (const unsigned char *)data.buf;
    Py_ssize_t size = data.len, count = 0;
#if defined(__SSE2__)
    int64_t *found;
    Py_BEGIN_ALLOW_THREADS
    found = newline_offsets_sse2(buf, size, &count);
    Py_END_ALLOW_THREADS
    if (found == NULL) {
        PyBuffer_Release(&data);
        return PyErr_NoMemory();
    }
    PyObject *out = PyByteArray_FromStringAndSize((const char *)found, (count + 1) * 8);
    free(found);
    PyBuffer_Release(&data);
    return out;
#else
    Py_BEGIN_ALLOW_THREADS
    for (const unsigned char *p = buf, *end = buf + size; p < end; p++) {
        p = memchr(p, '\n', (size_t)(end - p));
        if (p == NULL)
            break;
        count++;
    }
    Py_END_ALLOW_THREADS
    PyObject *out = PyByteArray_FromStringAndSize(NULL, (count + 1) * 8);
    if (out == NULL) {
        PyBuffer_Release(&data);
        return NULL;
    }
    int64_t *off = (int64_t *)PyByteArray_AS_STRING(out);
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t k = 0;
    off[k++] = 0;
    for (const unsigned char *p = buf, *end = buf + size; k <= count; p++) {
        p = memchr(p, '\n', (size_t)(end - p));
        off[k++] = (int64_t)(p - buf) + 1;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    return out;
#endif
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


/* ------------------------------------------------------------------ node visits
 * visits(): for records of whole iterations, each iteration's records one run
 * (starts[g] .. starts[g+1]), in record order, the number of each RESULT's visit of its node
 * and each MOVE's parent_visit, exactly as treediff.parse.visits.visit_numbers:
 * a node is (group, path) for a RESULT and (group, path without its last move)
 * for a MOVE; a RESULT's visit is its rank among its node's RESULTs; a MOVE
 * belongs to the first later RESULT of its node whose depth is >= its own, else
 * the next later RESULT, else the visit still open (RESULTs before it + 1).
 * Values the engine wrote (given != INT32_MIN) are used as is. */

#define NO_VISIT INT32_MIN

static inline uint64_t hash_bytes(const unsigned char *s, int32_t len, const unsigned char *end)
{
    /* Eight bytes at a time (a multiply-xorshift mix per word): paths are short, so the per-word
     * cost dominates, not the mixing quality; a collision only costs a memcmp.  The last word is
     * one 8-byte load, masked, where the buffer has 8 bytes left (a byte loop near its end). */
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)len;
    int32_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
    }
    if (i < len) {
        uint64_t w = 0;
        int32_t rest = len - i;
        if (s + i + 8 <= end) {
            memcpy(&w, s + i, 8);
            w &= ~0ULL >> (64 - 8 * rest);
        } else {
            for (int32_t k = 0; k < rest; k++)
                w |= (uint64_t)s[i + k] << (8 * k);
        }
        h = (h ^ w) * 0x94D049BB133111EBULL;
        h ^= h >> 29;
    }
    return h ^ (h >> 32);
}

/* a[0, len) == b[0, len), eight bytes at a time while both have eight bytes before end. */
static inline int same_bytes(const unsigned char *a, const unsigned char *b, int32_t len, const unsigned char *end)
{
    int32_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t x, y;
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y)
            return 0;
    }
    if (i < len) {
        int32_t rest = len - i;
        if (a + i + 8 <= end && b + i + 8 <= end) {
            uint64_t x, y, mask = ~0ULL >> (64 - 8 * rest);
            memcpy(&x, a + i, 8);
            memcpy(&y, b + i, 8);
            return ((x ^ y) & mask) == 0;
        }
        return memcmp(a + i, b + i, (size_t)rest) == 0;
    }
    return 1;
}

PyDoc_STRVAR(visits_doc,
"visits(data, offsets, starts, is_result, depth, given, out_visit, out_parent_visit)\n\n"
"data, offsets (int32, n+1): the records' paths as an Arrow string array's buffers.\n"
"starts (int64, groups+1): where each iteration's run of records starts, then n; is_result (uint8);\n"
"depth (float32, NaN unknown); given (int32, INT32_MIN where the engine wrote no visit=).\n"
"Fills out_visit (int32; RESULT records) and out_parent_visit (int32; MOVE records).");

static PyObject *visits(PyObject *self, PyObject *args)
{
    PyObject *objs[8];
    if (!PyArg_ParseTuple(args, "OOOOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5],
                          &objs[6], &objs[7]))
        return NULL;
    Py_buffer b[8];
    memset(b, 0, sizeof b);
    PyObject *result = NULL;
    int32_t *slots = NULL, *node_len = NULL, *cnt = NULL, *node_of = NULL, *tmp = NULL, *first = NULL,
            *fill = NULL, *rvis = NULL;
    int64_t *node_start = NULL;
    uint64_t *node_hash = NULL;
    float *rdepth = NULL;
    for (int i = 0; i < 8; i++) {
        int flags = PyBUF_C_CONTIGUOUS | (i >= 6 ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(objs[i], &b[i], flags) < 0)
            goto done;
    }
    Py_ssize_t n = b[3].len;
    Py_ssize_t groups = b[2].len / 8 - 1;
    if (groups < 0 || b[1].len != (n + 1) * 4 || b[4].len != n * 4 || b[5].len != n * 4
            || b[6].len != n * 4 || b[7].len != n * 4) {
        PyErr_SetString(PyExc_ValueError, "visits: buffers of inconsistent sizes");
        goto done;
    }
    const unsigned char *data = (const unsigned char *)b[0].buf;
    const unsigned char *data_end = data + b[0].len;
    const int32_t *off = (const int32_t *)b[1].buf;
    const int64_t *starts = (const int64_t *)b[2].buf;
    const uint8_t *is_res = (const uint8_t *)b[3].buf;
    const float *depth = (const float *)b[4].buf;
    const int32_t *given = (const int32_t *)b[5].buf;
    int32_t *out_visit = (int32_t *)b[6].buf;
    int32_t *out_pv = (int32_t *)b[7].buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (off[i] < 0 || off[i] > off[i + 1] || off[i + 1] > b[0].len) {
            PyErr_SetString(PyExc_ValueError, "visits: offsets out of range");
            goto done;
        }
    }
    /* Per-group arrays, sized for the largest group. */
    Py_ssize_t largest = 0;
    if (groups == 0 ? n != 0 : (starts[0] != 0 || starts[groups] != n)) {
        PyErr_SetString(PyExc_ValueError, "visits: starts must run from 0 to n");
        goto done;
    }
    for (Py_ssize_t g = 0; g < groups; g++) {
        if (starts[g + 1] < starts[g]) {
            PyErr_SetString(PyExc_ValueError, "visits: starts must not decrease");
            goto done;
        }
        if (starts[g + 1] - starts[g] > largest)
            largest = starts[g + 1] - starts[g];
    }
    size_t cap_max = 16;
    while (cap_max < (size_t)largest * 2)
        cap_max <<= 1;
    slots = (int32_t *)malloc(cap_max * sizeof(int32_t));
    node_len = (int32_t *)malloc((largest + 1) * sizeof(int32_t));
    cnt = (int32_t *)malloc((largest + 1) * sizeof(int32_t));
    first = (int32_t *)malloc((largest + 2) * sizeof(int32_t));
    fill = (int32_t *)malloc((largest + 1) * sizeof(int32_t));
    node_start = (int64_t *)malloc((largest + 1) * sizeof(int64_t));
    node_hash = (uint64_t *)malloc((largest + 1) * sizeof(uint64_t));
    node_of = (int32_t *)malloc((largest + 1) * sizeof(int32_t));
    tmp = (int32_t *)malloc((largest + 1) * sizeof(int32_t));
    rvis = (int32_t *)malloc((largest + 1) * sizeof(int32_t));
    rdepth = (float *)malloc((largest + 1) * sizeof(float));
    if (!slots || !node_len || !cnt || !first || !fill || !node_start || !node_hash || !node_of || !tmp
            || !rvis || !rdepth) {
        PyErr_NoMemory();
        goto done;
    }

    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t g = 0; g < groups; g++) {
        Py_ssize_t lo = starts[g], hi = starts[g + 1];
        size_t cap = 16;
        while (cap < (size_t)(hi - lo) * 2)
            cap <<= 1;
        memset(slots, 0, cap * sizeof(int32_t));
        int32_t nodes = 0;
        /* Pass 1: node of each record; RESULTs counted per node as they come. */
        for (Py_ssize_t i = lo; i < hi; i++) {
            int64_t start = off[i];
            int32_t len = off[i + 1] - off[i];
            if (!is_res[i]) { /* a MOVE's node is its parent: the path up to its last '/' */
                int32_t cut = 0;
                for (int32_t c = len - 1; c >= 0; c--) {
                    if (data[start + c] == '/') {
                        cut = c;
                        break;
                    }
                }
                len = cut;
            }
            uint64_t h = hash_bytes(data + start, len, data_end);
            size_t at = (size_t)h & (cap - 1);
            int32_t id = -1;
            while (slots[at]) {
                int32_t s = slots[at] - 1;
                if (node_hash[s] == h && node_len[s] == len
                        && same_bytes(data + node_start[s], data + start, len, data_end)) {
                    id = s;
                    break;
                }
                at = (at + 1) & (cap - 1);
            }
            if (id < 0) {
                id = nodes++;
                node_hash[id] = h;
                node_len[id] = len;
                node_start[id] = start;
                cnt[id] = 0;
                slots[at] = id + 1;
            }
            node_of[i - lo] = id;
            if (is_res[i])
                tmp[i - lo] = ++cnt[id];  /* its ordinal visit */
            else
                tmp[i - lo] = cnt[id];    /* RESULTs of its node before it */
        }
        /* Pass 2: each node's RESULTs in order (depth, visit number), as one array. */
        first[0] = 0;
        for (int32_t id = 0; id < nodes; id++) {
            first[id + 1] = first[id] + cnt[id];
            fill[id] = first[id];
        }
        for (Py_ssize_t i = lo; i < hi; i++) {
            if (!is_res[i])
                continue;
            int32_t slot = fill[node_of[i - lo]]++;
            rdepth[slot] = depth[i];
            rvis[slot] = given[i] != NO_VISIT ? given[i] : tmp[i - lo];
        }
        /* Pass 3: the outputs. */
        for (Py_ssize_t i = lo; i < hi; i++) {
            int32_t id = node_of[i - lo];
            if (is_res[i]) {
                out_visit[i] = given[i] != NO_VISIT ? given[i] : tmp[i - lo];
                out_pv[i] = 0;
                continue;
            }
            out_visit[i] = 0;
            if (given[i] != NO_VISIT) {
                out_pv[i] = given[i];
                continue;
            }
            int32_t k = tmp[i - lo], base = first[id], c = cnt[id];
            int32_t v = k;
            float d = depth[i];
            while (v < c && !(rdepth[base + v] >= d))
                v++;
            if (v < c)
                out_pv[i] = rvis[base + v];
            else if (k < c)
                out_pv[i] = rvis[base + k];
            else
                out_pv[i] = k + 1;
        }
    }
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);

done:
    for (int i = 0; i < 8; i++) {
        if (b[i].obj)
            PyBuffer_Release(&b[i]);
    }
    free(slots); free(node_len); free(cnt); free(first); free(fill); free(node_start); free(node_hash);
    free(node_of); free(tmp); free(rvis); free(rdepth);
    return result;
}

/* ------------------------------------------------------------------ dictionary codes of string views
 * view_dictionary(): pyarrow.compute.dictionary_encode of one Arrow string-view array (nulls as null
 * indices, the dictionary in order of first appearance), without pyarrow's generic hash kernel: a
 * chunk's label columns (tag, act, nt, bound) and its moves have a handful to a few thousand distinct
 * values.  Mode 1 encodes each value's UCI last move instead (treediff.parse.assemble._last_uci_move:
 * its last five characters without the leading '/', null for ""), so the move column is made from the
 * path column in the same pass. */

typedef struct {
    const unsigned char *ptr;
    int32_t len;
    uint64_t hash;
    uint64_t w0, w1; /* a value of up to 12 bytes: its length and bytes, zero-padded (see short_key) */
} DictEntry;

/* The key of a value of up to 12 bytes: the layout of an inline Arrow view (4 length bytes, then the
 * bytes), zero-padded, as two words.  Inline views are read in place, their bytes past the value
 * masked off (Arrow says zero, but a producer may leave anything there). */
static inline void short_key(const unsigned char *view, int inline_view, const unsigned char *p, int32_t len,
                             uint64_t *w0, uint64_t *w1)
{
    uint64_t a, b;
    if (inline_view) {
        memcpy(&a, view, 8);
        memcpy(&b, view + 8, 8);
        a &= len >= 4 ? ~0ULL : ~0ULL >> (64 - 8 * (4 + len));
        b = len <= 4 ? 0 : len >= 12 ? b : b & (~0ULL >> (64 - 8 * (len - 4)));
    } else {
        unsigned char tmp[16] = {0};
        memcpy(tmp, &len, 4);
        memcpy(tmp + 4, p, (size_t)len);
        memcpy(&a, tmp, 8);
        memcpy(&b, tmp + 8, 8);
    }
    *w0 = a;
    *w1 = b;
}

/* Mode 1's direct lookup: a move of four bytes [a-h][1-8][a-h][1-8], or five with a promotion letter
 * q, r, b or n, has a slot of its own (its squares, times 5 for the promotion), so most moves are found
 * without hashing; any other value (0000, another spelling) gets -1 and goes through the hash table.
 * A value's code is the same either way: a value that has a slot is entered in both. */
#define DIRECT_MOVES (64 * 64 * 5)
static inline int32_t direct_move_slot(const unsigned char *m, int32_t len)
{
    if (len != 4 && len != 5)
        return -1;
    unsigned f0 = (unsigned)m[0] - 'a', r0 = (unsigned)m[1] - '1', f1 = (unsigned)m[2] - 'a', r1 = (unsigned)m[3] - '1';
    if ((f0 | r0 | f1 | r1) > 7)
        return -1;
    int32_t promo = 0;
    if (len == 5) {
        switch (m[4]) {
        case 'q': promo = 1; break;
        case 'r': promo = 2; break;
        case 'b': promo = 3; break;
        case 'n': promo = 4; break;
        default: return -1;
        }
    }
    return (int32_t)((f0 | r0 << 3 | f1 << 6 | r1 << 9) * 5) + promo;
}

PyDoc_STRVAR(view_dictionary_doc,
"view_dictionary(views, validity, offset, n, datas, codes, out_validity, max_distinct, mode)\n"
"    -> (values, value_offsets, null_count) or None\n\n"
"views: an Arrow string-view array's views buffer; rows offset..offset+n are encoded.\n"
"validity: its validity bitmap (bits offset..offset+n) or None (no nulls); datas: its variadic\n"
"data buffers (a tuple).  codes (int32, n, writable): each row's index into the dictionary, -1\n"
"for a null; out_validity (ceil(n/8) bytes, writable): the codes' validity bitmap, from bit 0.\n"
"The dictionary lists the distinct non-null values in order of first appearance\n"
"(what pyarrow.compute.dictionary_encode gives), returned as the values' bytes joined and their\n"
"int32 offsets (k+1 of them).  mode 0 encodes the values; mode 1 their UCI last moves: the last\n"
"five bytes without the leading '/'s (an empty value gives a null), or None when one of those\n"
"bytes is not ASCII.  None also when there are more than max_distinct values (the caller then\n"
"uses pyarrow).");

static PyObject *view_dictionary(PyObject *self, PyObject *args)
{
    PyObject *views_obj, *valid_obj, *datas_obj, *codes_obj, *out_valid_obj;
    Py_ssize_t offset, n, max_distinct;
    int mode;
    if (!PyArg_ParseTuple(args, "OOnnOOOni", &views_obj, &valid_obj, &offset, &n, &datas_obj, &codes_obj,
                          &out_valid_obj, &max_distinct, &mode))
        return NULL;
    if (!PyTuple_Check(datas_obj)) {
        PyErr_SetString(PyExc_TypeError, "view_dictionary: datas must be a tuple of buffers");
        return NULL;
    }
    Py_ssize_t n_datas = PyTuple_GET_SIZE(datas_obj);
    if (offset < 0 || n < 0 || max_distinct < 1 || max_distinct > (1 << 24) || (mode != 0 && mode != 1)) {
        PyErr_SetString(PyExc_ValueError, "view_dictionary: bad offset, n, max_distinct or mode");
        return NULL;
    }
    Py_buffer views = {0}, valid = {0}, codes = {0}, out_valid = {0};
    Py_buffer *datas = NULL;
    DictEntry *entries = NULL;
    int32_t *table = NULL, *direct = NULL;
    PyObject *result = NULL;
    Py_ssize_t got_datas = 0;
    int has_valid = valid_obj != Py_None;

    if (PyObject_GetBuffer(views_obj, &views, PyBUF_C_CONTIGUOUS) < 0)
        goto done;
    if (has_valid && PyObject_GetBuffer(valid_obj, &valid, PyBUF_C_CONTIGUOUS) < 0)
        goto done;
    if (PyObject_GetBuffer(codes_obj, &codes, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        goto done;
    if (PyObject_GetBuffer(out_valid_obj, &out_valid, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        goto done;
    datas = PyMem_Calloc((size_t)(n_datas ? n_datas : 1), sizeof(Py_buffer));
    if (datas == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (; got_datas < n_datas; got_datas++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(datas_obj, got_datas), &datas[got_datas], PyBUF_C_CONTIGUOUS) < 0)
            goto done;
    }
    if (views.len < (offset + n) * VIEW_BYTES || codes.len != n * 4 || out_valid.len != (n + 7) / 8
            || (has_valid && valid.len * 8 < offset + n)) {
        PyErr_SetString(PyExc_ValueError, "view_dictionary: buffers too small for offset + n rows");
        goto done;
    }
    Py_ssize_t cap = 64;
    while (cap < 2 * max_distinct)
        cap <<= 1;
    Py_ssize_t table_cap = 64; /* grows with the distinct values, up to cap */
    entries = PyMem_Malloc((size_t)max_distinct * sizeof(DictEntry));
    table = PyMem_Malloc((size_t)cap * sizeof(int32_t));
    if (entries == NULL || table == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    memset(table, 0xff, (size_t)table_cap * sizeof(int32_t));
    if (mode == 1) { /* moves of the UCI shape are looked up by their squares, not hashed */
        direct = PyMem_Malloc((size_t)DIRECT_MOVES * sizeof(int32_t));
        if (direct == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        memset(direct, 0xff, (size_t)DIRECT_MOVES * sizeof(int32_t));
    }
    const unsigned char *vw = (const unsigned char *)views.buf + offset * VIEW_BYTES;
    const unsigned char *vb = has_valid ? (const unsigned char *)valid.buf : NULL;
    int32_t *out = (int32_t *)codes.buf;
    unsigned char *ov = (unsigned char *)out_valid.buf;
    Py_ssize_t k = 0, total = 0, nulls = 0;
    int32_t last = -1;
    int stop = 0; /* 1: too many values, 2: a non-ASCII move (mode 1), 3: a view outside its buffer */

    Py_BEGIN_ALLOW_THREADS
    memset(ov, 0, (size_t)out_valid.len);
    for (Py_ssize_t r = 0; r < n; r++) {
        Py_ssize_t bit = offset + r;
        if (vb != NULL && !((vb[bit >> 3] >> (bit & 7)) & 1)) {
            out[r] = -1;
            nulls++;
            continue;
        }
        const unsigned char *view = vw + r * VIEW_BYTES;
        int32_t len;
        memcpy(&len, view, 4);
        const unsigned char *p, *end;
        int inline_view = len <= 12;
        if (len < 0) {
            stop = 3;
            break;
        }
        if (inline_view) {
            p = view + 4;
            end = view + VIEW_BYTES;
        } else {
            uint32_t bi, off;
            memcpy(&bi, view + 8, 4);
            memcpy(&off, view + 12, 4);
            if ((Py_ssize_t)bi >= n_datas || (Py_ssize_t)off + len > datas[bi].len) {
                stop = 3;
                break;
            }
            p = (const unsigned char *)datas[bi].buf + off;
            end = (const unsigned char *)datas[bi].buf + datas[bi].len;
        }
        if (mode == 1) {
            if (len == 0) { /* the root: no move */
                out[r] = -1;
                nulls++;
                continue;
            }
            int32_t from = len > 5 ? len - 5 : 0;
            for (int32_t i = from; i < len; i++) {
                if (p[i] >= 0x80)
                    stop = 2;
            }
            if (stop)
                break;
            while (from < len && p[from] == '/')
                from++;
            p += from;
            len -= from;
            inline_view = 0; /* (the move is not the view's own value) */
        }
        uint64_t h, w0 = 0, w1 = 0;
        int32_t slot = mode == 1 ? direct_move_slot(p, len) : -1;
        if (slot >= 0 && direct[slot] >= 0) {
            last = direct[slot];
            out[r] = last;
            ov[r >> 3] |= (unsigned char)(1u << (r & 7));
            continue;
        }
        if (len <= 12) {
            short_key(view, inline_view, p, len, &w0, &w1);
            if (last >= 0 && entries[last].w0 == w0 && entries[last].w1 == w1 && entries[last].len == len) {
                out[r] = last; /* (runs of one value are common: the same tag, act or bound) */
                ov[r >> 3] |= (unsigned char)(1u << (r & 7));
                continue;
            }
            h = w0 ^ (w1 * 0x9E3779B97F4A7C15ULL); /* splitmix64's finalizer: every bit reaches the low ones */
            h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ULL;
            h = (h ^ (h >> 27)) * 0x94D049BB133111EBULL;
            h ^= h >> 31;
        } else {
            h = hash_bytes(p, len, end);
        }
        Py_ssize_t mask = table_cap - 1, at = (Py_ssize_t)(h & (uint64_t)mask);
        int32_t code = -1;
        while (table[at] >= 0) {
            DictEntry *e = &entries[table[at]];
            if (e->hash == h && e->len == len
                    && (len <= 12 ? e->w0 == w0 && e->w1 == w1 : memcmp(e->ptr, p, (size_t)len) == 0)) {
                code = table[at];
                break;
            }
            at = (at + 1) & mask;
        }
        if (code < 0) {
            if (k == max_distinct) {
                stop = 1;
                break;
            }
            code = (int32_t)k;
            entries[k].ptr = p;
            entries[k].len = len;
            entries[k].hash = h;
            entries[k].w0 = w0;
            entries[k].w1 = w1;
            table[at] = code;
            if (slot >= 0)
                direct[slot] = code;
            total += len;
            k++;
            if (2 * k > table_cap && table_cap < cap) { /* grow: rehash every entry */
                table_cap <<= 1;
                memset(table, 0xff, (size_t)table_cap * sizeof(int32_t));
                Py_ssize_t m2 = table_cap - 1;
                for (Py_ssize_t e = 0; e < k; e++) {
                    Py_ssize_t a2 = (Py_ssize_t)(entries[e].hash & (uint64_t)m2);
                    while (table[a2] >= 0)
                        a2 = (a2 + 1) & m2;
                    table[a2] = (int32_t)e;
                }
            }
        }
        last = code;
        out[r] = code;
        ov[r >> 3] |= (unsigned char)(1u << (r & 7));
    }
    Py_END_ALLOW_THREADS

    if (stop == 3) {
        PyErr_SetString(PyExc_ValueError, "view_dictionary: a view with a negative length or outside its buffer");
        goto done;
    }
    if (stop || total > INT32_MAX) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    PyObject *values = PyBytes_FromStringAndSize(NULL, total);
    PyObject *value_offsets = PyBytes_FromStringAndSize(NULL, (k + 1) * 4);
    if (values == NULL || value_offsets == NULL) {
        Py_XDECREF(values);
        Py_XDECREF(value_offsets);
        goto done;
    }
    char *vd = PyBytes_AS_STRING(values), *od = PyBytes_AS_STRING(value_offsets);
    int32_t pos = 0;
    for (Py_ssize_t e = 0; e < k; e++) {
        memcpy(od + e * 4, &pos, 4);
        memcpy(vd + pos, entries[e].ptr, (size_t)entries[e].len);
        pos += entries[e].len;
    }
    memcpy(od + k * 4, &pos, 4);
    result = Py_BuildValue("(NNn)", values, value_offsets, nulls);

done:
    PyMem_Free(entries);
    PyMem_Free(table);
    PyMem_Free(direct);
    if (datas != NULL) {
        for (Py_ssize_t i = 0; i < got_datas; i++)
            PyBuffer_Release(&datas[i]);
        PyMem_Free(datas);
    }
    if (views.obj)
        PyBuffer_Release(&views);
    if (valid.obj)
        PyBuffer_Release(&valid);
    if (codes.obj)
        PyBuffer_Release(&codes);
    if (out_valid.obj)
        PyBuffer_Release(&out_valid);
    return result;
}

static PyMethodDef methods[] = {
    {"typed_fields", typed_fields, METH_VARARGS, typed_fields_doc},
    {"record_fields", record_fields, METH_VARARGS, record_fields_doc},
    {"line_offsets", line_offsets, METH_O, line_offsets_doc},
    {"row_keys", row_keys, METH_NOARGS, "The keys, in the order of the fields after the tag."},
    {"visits", visits, METH_VARARGS, visits_doc},
    {"view_dictionary", view_dictionary, METH_VARARGS, view_dictionary_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_ctok",
    "Compiled fast-path TREEDUMP tokenizer (optional; see treediff.parse.tokenizer).",
    -1, methods,
};

PyMODINIT_FUNC PyInit__ctok(void)
{
    for (int j = 0; j < N_KEYS; j++) {
        KEY_LENS[j] = strlen(KEYS[j]);
        unsigned char word[8] = {0};
        memcpy(word, KEYS[j], KEY_LENS[j]);
        word[KEY_LENS[j]] = '=';
        memcpy(&KEY_WORD[j], word, 8);
        KEY_MASK[j] = ~0ULL >> (64 - 8 * (KEY_LENS[j] + 1));
    }
    return PyModule_Create(&module);
}
