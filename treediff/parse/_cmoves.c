/*
 * treediff.parse._cmoves: legality of UCI move paths, in C.
 *
 * A Checker holds one search's root position and replays that search's UCI
 * paths ("e2e4/e7e5/0000/g1f3"; "" or "-" is the root) in the order they
 * come, telling for each path whether every move in it is legal.  The rules
 * are python-chess's Board.is_legal for a standard (not Chess960) board,
 * including its readings of odd positions (checked against python-chess by
 * tests/parse/test_uci_validation_oracle.py):
 *
 *   - the piece on the from-square is the side to move's; the to-square does
 *     not hold one of its pieces;
 *   - geometry: pawn pushes (a double step onto the 3rd/4th rank, or the
 *     6th/5th for black, over an empty square), pawn captures (onto an enemy
 *     piece, or onto the en-passant square with the pawn on its 5th rank),
 *     knight and king steps, slides with nothing in between;
 *   - a pawn reaching the last rank promotes (q, r, b or n), and only a pawn
 *     reaching it may carry a promotion letter;
 *   - castling as e1g1/e1c1 (or the king onto its own rook: e1h1/e1a1):
 *     the right, king on e1 and rook on its corner, the squares between them
 *     empty, the king's start, crossing and arrival squares not attacked;
 *   - the mover's own king not attacked afterwards (pins, discovered checks,
 *     en-passant captures that uncover a rank, evasions); no king: no check;
 *   - the null move (0000, or any other spelling of it) is always accepted (as
 *     the parser resolves it: the side to move passes and the en-passant square
 *     is forfeited).
 *
 * Why a stack and not a table of positions: trace lines come depth-first,
 * so consecutive paths share most of their moves.  The checker keeps the
 * previous path (its bytes, its moves packed) and the board after each of its
 * moves; a new path is compared byte by byte with the previous one, and only
 * the moves after the shared prefix are read, tested and played (about one per
 * line).  A shared prefix
 * that holds an illegal move makes the new path illegal without a test.  Any
 * order is correct; an order that jumps around only replays more moves.
 *
 * The paths come as an Arrow string-view array (16-byte views, values of
 * more than 12 bytes in the data buffers), read without a copy.  Only the
 * CPython API and the buffer protocol are used.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Reason codes, one per path (0: every move legal).  Python names them in
 * treediff.parse.paths.ILLEGAL_REASONS; keep the two in step. */
enum {
    OK = 0,
    BAD_TOKEN = 1,   /* not a UCI move (e.g. an empty move between two '/') */
    NO_PIECE = 2,    /* the from-square holds no piece of the side to move */
    OWN_PIECE = 3,   /* the to-square holds a piece of the side to move */
    GEOMETRY = 4,    /* the piece does not move that way */
    BLOCKED = 5,     /* a piece stands in the way (a slide, a pawn push) */
    PROMOTION = 6,   /* a promotion missing, or where there is none */
    CASTLING = 7,    /* castling without the right, through pieces or through/out of check */
    NO_CAPTURE = 8,  /* a pawn's diagonal step onto an empty square that is not en passant */
    IN_CHECK = 9,    /* leaves (or puts) the mover's own king in check */
    N_REASONS = 10
};

/* Pieces: 0 empty, +1..+6 white pawn..king, -1..-6 black. */
enum { PAWN = 1, KNIGHT = 2, BISHOP = 3, ROOK = 4, QUEEN = 5, KING = 6 };
#define WHITE 0
#define BLACK 1

/* Castling rights: one bit per rook corner. */
#define CR_H1 1
#define CR_A1 2
#define CR_H8 4
#define CR_A8 8

#define SQ_A1 0
#define SQ_C1 2
#define SQ_D1 3
#define SQ_E1 4
#define SQ_F1 5
#define SQ_G1 6
#define SQ_H1 7
#define SQ_A8 56
#define SQ_E8 60
#define SQ_H8 63

typedef struct {
    int8_t sq[64];
    int8_t side;   /* WHITE or BLACK to move */
    int8_t ep;     /* en-passant square, -1 none */
    int8_t castling;
    int8_t king[2]; /* each colour's king (the highest square, as python-chess's Board.king), -1 none */
    int8_t check;   /* whether the side to move is in check: -1 not known yet (found when first needed) */
    int8_t kings[2]; /* how many kings each colour has (1 but in odd positions) */
} Board;

/* A move token packed in an int32: from | to << 6 | promotion piece << 12; nulls and bad tokens apart. */
#define TOKEN_NULL (1 << 16)
#define TOKEN_BAD (1 << 17)

/* ---------------------------------------------------------------- tables */

static int8_t KNIGHT_TO[64][9]; /* -1 terminated */
static int8_t KING_TO[64][9];
/* Rays in the 8 directions: 0..3 orthogonal (N, S, E, W), 4..7 diagonal (NE, NW, SE, SW). */
static int8_t RAY[64][8][8];
/* LINE[a][b]: the direction from a to b when they share a rank, file or diagonal, else -1. */
static int8_t LINE[64][64];
static const int DFILE[8] = {0, 0, 1, -1, 1, -1, 1, -1};
static const int DRANK[8] = {1, -1, 0, 0, 1, 1, -1, -1};

static void init_tables(void)
{
    static const int kn[8][2] = {{1, 2}, {2, 1}, {2, -1}, {1, -2}, {-1, -2}, {-2, -1}, {-2, 1}, {-1, 2}};
    for (int sq = 0; sq < 64; sq++) {
        int f = sq & 7, r = sq >> 3, n = 0, k = 0;
        for (int i = 0; i < 8; i++) {
            int tf = f + kn[i][0], tr = r + kn[i][1];
            if (tf >= 0 && tf < 8 && tr >= 0 && tr < 8)
                KNIGHT_TO[sq][n++] = (int8_t)(tr * 8 + tf);
        }
        KNIGHT_TO[sq][n] = -1;
        for (int df = -1; df <= 1; df++)
            for (int dr = -1; dr <= 1; dr++) {
                int tf = f + df, tr = r + dr;
                if ((df || dr) && tf >= 0 && tf < 8 && tr >= 0 && tr < 8)
                    KING_TO[sq][k++] = (int8_t)(tr * 8 + tf);
            }
        KING_TO[sq][k] = -1;
        for (int to = 0; to < 64; to++)
            LINE[sq][to] = -1;
        for (int d = 0; d < 8; d++) {
            int m = 0, tf = f + DFILE[d], tr = r + DRANK[d];
            while (tf >= 0 && tf < 8 && tr >= 0 && tr < 8) {
                LINE[sq][tr * 8 + tf] = (int8_t)d;
                RAY[sq][d][m++] = (int8_t)(tr * 8 + tf);
                tf += DFILE[d];
                tr += DRANK[d];
            }
            if (m < 8)
                RAY[sq][d][m] = -1;
        }
    }
}

/* ----------------------------------------------------------------- board */

static inline int colour_of(int8_t piece) { return piece > 0 ? WHITE : BLACK; }

/* Whether `sq` is attacked by a piece of colour `by` (the board as it stands). */
static int attacked(const Board *b, int sq, int by)
{
    int s = by == WHITE ? 1 : -1;
    int f = sq & 7;
    /* Pawns of `by` attack diagonally forward (white up), so they stand one rank behind sq. */
    int pr = (sq >> 3) - s;
    if (pr >= 0 && pr < 8) {
        if (f > 0 && b->sq[pr * 8 + f - 1] == s * PAWN)
            return 1;
        if (f < 7 && b->sq[pr * 8 + f + 1] == s * PAWN)
            return 1;
    }
    for (const int8_t *t = KNIGHT_TO[sq]; *t >= 0; t++)
        if (b->sq[*t] == s * KNIGHT)
            return 1;
    for (const int8_t *t = KING_TO[sq]; *t >= 0; t++)
        if (b->sq[*t] == s * KING)
            return 1;
    for (int d = 0; d < 8; d++) {
        int8_t slider = (int8_t)(s * (d < 4 ? ROOK : BISHOP));
        const int8_t *ray = RAY[sq][d];
        for (int m = 0; m < 8 && ray[m] >= 0; m++) {
            int8_t p = b->sq[ray[m]];
            if (p) {
                if (p == slider || p == s * QUEEN)
                    return 1;
                break;
            }
        }
    }
    return 0;
}

static void find_kings(Board *b)
{
    b->king[WHITE] = b->king[BLACK] = -1;
    b->kings[WHITE] = b->kings[BLACK] = 0;
    for (int sq = 63; sq >= 0; sq--) {
        int8_t p = b->sq[sq];
        if (p == KING || p == -KING) {
            if (b->king[colour_of(p)] < 0)
                b->king[colour_of(p)] = (int8_t)sq;
            b->kings[colour_of(p)]++;
        }
    }
}

static inline int castle_bit(int sq)
{
    switch (sq) {
    case SQ_H1: return CR_H1;
    case SQ_A1: return CR_A1;
    case SQ_H8: return CR_H8;
    case SQ_A8: return CR_A8;
    default: return 0;
    }
}

/* Castling of the side to move, kingside or not: OK or CASTLING.  Plays it into `out` when OK. */
static int castle(Board *b, int kingside, Board *out)
{
    int side = b->side, s = side == WHITE ? 1 : -1, base = side == WHITE ? 0 : 56;
    int king = base + 4, rook = base + (kingside ? 7 : 0);
    int bit = kingside ? (side == WHITE ? CR_H1 : CR_H8) : (side == WHITE ? CR_A1 : CR_A8);
    if (!(b->castling & bit) || b->sq[king] != s * KING || b->sq[rook] != s * ROOK)
        return CASTLING;
    /* Between king and rook: f, g (kingside) or b, c, d; the king's squares: e, f, g or e, d, c. */
    if (kingside) {
        if (b->sq[base + 5] || b->sq[base + 6])
            return CASTLING;
    } else if (b->sq[base + 1] || b->sq[base + 2] || b->sq[base + 3]) {
        return CASTLING;
    }
    int by = side ^ 1;
    for (int i = 0; i < 3; i++)
        if (attacked(b, king + (kingside ? i : -i), by))
            return CASTLING;
    *out = *b;
    out->sq[king] = 0;
    out->sq[rook] = 0;
    out->sq[base + (kingside ? 6 : 2)] = (int8_t)(s * KING);
    out->sq[base + (kingside ? 5 : 3)] = (int8_t)(s * ROOK);
    out->castling &= (int8_t)~(side == WHITE ? (CR_H1 | CR_A1) : (CR_H8 | CR_A8));
    out->ep = -1;
    out->side = (int8_t)by;
    out->check = -1;
    if (out->kings[side] == 1)
        out->king[side] = (int8_t)(base + (kingside ? 6 : 2));
    else
        find_kings(out);
    return OK;
}

/* Whether the squares strictly between `from` and `to` (on one line) are empty. */
static int clear_between(const Board *b, int from, int to, int df, int dr)
{
    int step = dr * 8 + df;
    for (int at = from + step; at != to; at += step)
        if (b->sq[at])
            return 0;
    return 1;
}

/* Whether the side to move is in check in `b` (found once per board). */
static inline int in_check(Board *b)
{
    if (b->check < 0)
        b->check = (int8_t)(b->king[b->side] >= 0 && attacked(b, b->king[b->side], b->side ^ 1));
    return b->check;
}

/* Whether the first piece from `king` in direction `d` is an enemy slider that moves that way. */
static inline int slider_on_ray(const Board *b, int king, int d, int by)
{
    int s = by == WHITE ? 1 : -1;
    int8_t slider = (int8_t)(s * (d < 4 ? ROOK : BISHOP));
    const int8_t *ray = RAY[king][d];
    for (int m = 0; m < 8 && ray[m] >= 0; m++) {
        int8_t p = b->sq[ray[m]];
        if (p)
            return p == slider || p == s * QUEEN;
    }
    return 0;
}

/* Test the move `token` in `b`; when legal, the position after it goes to `out`.  Returns a reason code. */
static int play(Board *b, int32_t token, Board *out)
{
    if (token & TOKEN_BAD)
        return BAD_TOKEN;
    if (token & TOKEN_NULL) {
        *out = *b;
        out->ep = -1;
        out->side ^= 1;
        out->check = -1;
        return OK;
    }
    int from = token & 63, to = (token >> 6) & 63, promo = (token >> 12) & 7;
    if (from == to)
        return GEOMETRY; /* python-chess cannot even read it: "use 0000 for null moves" */
    int side = b->side, s = side == WHITE ? 1 : -1;
    int8_t piece = b->sq[from];
    if (!piece || colour_of(piece) != side)
        return NO_PIECE;
    int type = piece * s;
    int ff = from & 7, fr = from >> 3, tf = to & 7, tr = to >> 3;
    int last = side == WHITE ? 7 : 0;
    if (promo && (type != PAWN || tr != last))
        return PROMOTION;
    /* Castling, as python-chess reads a king move from e1 (e8) to g1/h1 or c1/a1 (g8/h8, c8/a8). */
    int castle_reason = OK;
    if (type == KING && from == (side == WHITE ? SQ_E1 : SQ_E8) && tr == fr && tf != 4
            && (tf == 6 || tf == 7 || tf == 2 || tf == 0)) {
        int r = castle(b, tf >= 6, out);
        if (r == OK)
            return OK; /* castling never leaves the king attacked: its squares were tested */
        castle_reason = r;
    }
    int8_t target = b->sq[to];
    if (target && colour_of(target) == side)
        return castle_reason ? castle_reason : OWN_PIECE;
    int df = tf - ff, dr = tr - fr, adf = df < 0 ? -df : df, adr = dr < 0 ? -dr : dr;
    int ep_capture = 0;
    switch (type) {
    case PAWN:
        if (df == 0) {
            if (dr == s) {
                if (target)
                    return BLOCKED;
            } else if (dr == 2 * s && (side == WHITE ? (tr == 2 || tr == 3) : (tr == 5 || tr == 4))) {
                if (target || b->sq[from + 8 * s])
                    return BLOCKED;
            } else {
                return GEOMETRY;
            }
        } else if (adf == 1 && dr == s) {
            if (!target) {
                if (to != b->ep || fr != (side == WHITE ? 4 : 3))
                    return NO_CAPTURE;
                ep_capture = 1;
            }
        } else {
            return GEOMETRY;
        }
        if (tr == last && !promo)
            return PROMOTION;
        break;
    case KNIGHT:
        if (!((adf == 1 && adr == 2) || (adf == 2 && adr == 1)))
            return GEOMETRY;
        break;
    case BISHOP:
    case ROOK:
    case QUEEN: {
        int straight = df == 0 || dr == 0, diagonal = adf == adr;
        if ((type == BISHOP && !diagonal) || (type == ROOK && !straight) || (!straight && !diagonal))
            return GEOMETRY;
        if (!clear_between(b, from, to, df > 0 ? 1 : df < 0 ? -1 : 0, dr > 0 ? 1 : dr < 0 ? -1 : 0))
            return BLOCKED;
        break;
    }
    case KING:
        if (adf > 1 || adr > 1)
            return castle_reason ? castle_reason : GEOMETRY;
        break;
    default:
        return NO_PIECE;
    }
    /* Play it (as python-chess's push), then the mover's king must not be attacked. */
    *out = *b;
    out->ep = -1;
    out->castling &= (int8_t)~(castle_bit(from) | castle_bit(to));
    if (type == KING)
        out->castling &= (int8_t)~(side == WHITE ? (CR_H1 | CR_A1) : (CR_H8 | CR_A8));
    else if (target == -s * KING) {
        if (side == WHITE && tr == 7)
            out->castling &= (int8_t)~(CR_H8 | CR_A8);
        else if (side == BLACK && tr == 0)
            out->castling &= (int8_t)~(CR_H1 | CR_A1);
    }
    if (type == PAWN) {
        if (dr == 2 * s && fr == (side == WHITE ? 1 : 6))
            out->ep = (int8_t)(from + 8 * s);
        else if (ep_capture)
            out->sq[b->ep - 8 * s] = 0; /* whatever stands behind the en-passant square, as python-chess */
    }
    out->sq[from] = 0;
    out->sq[to] = (int8_t)(promo ? s * promo : piece);
    out->side = (int8_t)(side ^ 1);
    out->check = -1;
    if (type == KING && out->kings[side] == 1 && target != -s * KING)
        out->king[side] = (int8_t)to; /* the one king moved: no need to look for it */
    else if (type == KING || target == KING || target == -KING || ep_capture)
        find_kings(out);
    int king = out->king[side];
    if (king < 0)
        return OK; /* no king: nothing can be left in check (python-chess) */
    if (type == KING || ep_capture || king != b->king[side] || in_check(b))
        return attacked(out, king, side ^ 1) ? IN_CHECK : OK;
    /* Not in check before, and neither the king nor two pawns moved: only a slide through the emptied
     * from-square can reach the king, so only that line is looked at (most moves are off it). */
    int d = LINE[king][from];
    if (d < 0 || LINE[king][to] == d)
        return OK; /* not on a line with the king, or along that line (a pinned piece moving on its pin) */
    return slider_on_ray(out, king, d, side ^ 1) ? IN_CHECK : OK;
}

/* Every spelling of the null move (treediff.model.notation.NULL_SPELLINGS), lower-cased: coordinate
 * dialects' paths are read as their normalization reads them (lower-cased, nulls to 0000), so the
 * parser need not rewrite them first.  The parser only hands over paths that normalize to UCI. */
static const char *const NULLS[] = {"0000", "(null)", "null", "--", "@@@@", "z0"};

static inline unsigned char lower(unsigned char c) { return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c; }

/* One move token [t, t+len) packed (TOKEN_BAD if it is neither a UCI move nor a null spelling). */
static inline int32_t pack_token(const unsigned char *t, Py_ssize_t len)
{
    if ((len == 4 || len == 5) && t[0] >= 'a' && t[0] <= 'h') { /* the usual case: lower-case squares */
        if (t[1] < '1' || t[1] > '8' || t[2] < 'a' || t[2] > 'h' || t[3] < '1' || t[3] > '8')
            return TOKEN_BAD;
        int32_t from = (t[1] - '1') * 8 + (t[0] - 'a'), to = (t[3] - '1') * 8 + (t[2] - 'a'), promo = 0;
        if (len == 5) {
            switch (t[4]) {
            case 'n': case 'N': promo = KNIGHT; break;
            case 'b': case 'B': promo = BISHOP; break;
            case 'r': case 'R': promo = ROOK; break;
            case 'q': case 'Q': promo = QUEEN; break;
            default: return TOKEN_BAD;
            }
        }
        return from | to << 6 | promo << 12;
    }
    /* Anything else: lower-cased, it is a null spelling or a move with capital squares, or nothing. */
    unsigned char low[6];
    if (len < 2 || len > 6)
        return TOKEN_BAD;
    for (Py_ssize_t i = 0; i < len; i++)
        low[i] = lower(t[i]);
    for (size_t k = 0; k < sizeof NULLS / sizeof NULLS[0]; k++)
        if (strlen(NULLS[k]) == (size_t)len && memcmp(low, NULLS[k], (size_t)len) == 0)
            return TOKEN_NULL;
    if ((len == 4 || len == 5) && low[0] >= 'a' && low[0] <= 'h')
        return pack_token(low, len);
    return TOKEN_BAD;
}

/* --------------------------------------------------------------- Checker */

typedef struct {
    PyObject_HEAD
    Board *boards;   /* boards[k]: the position after the previous path's first k moves; boards[0] the root */
    int32_t *tok;    /* the previous path's moves, packed */
    int32_t *ends;   /* where each of them ends in the previous path's bytes (its '/' or the end) */
    Py_ssize_t n_tok;
    unsigned char *path; /* the previous path's bytes */
    Py_ssize_t cap;  /* room in boards (cap + 1) and tok (cap) */
    Py_ssize_t path_cap, path_len;
    Py_ssize_t valid;     /* boards[0..valid] are known for the previous path */
    Py_ssize_t bad_at;    /* index of the previous path's first illegal move, -1 if it is legal */
    int bad_reason;
    int busy;
} Checker;

static int grow(Checker *c, Py_ssize_t need)
{
    if (need <= c->cap)
        return 0;
    Py_ssize_t cap = c->cap;
    while (cap < need)
        cap *= 2;
    Board *boards = (Board *)realloc(c->boards, (size_t)(cap + 1) * sizeof(Board));
    if (!boards)
        return -1;
    c->boards = boards;
    int32_t *tok = (int32_t *)realloc(c->tok, (size_t)cap * sizeof(int32_t));
    if (!tok)
        return -1;
    c->tok = tok;
    int32_t *ends = (int32_t *)realloc(c->ends, (size_t)cap * sizeof(int32_t));
    if (!ends)
        return -1;
    c->ends = ends;
    c->cap = cap;
    return 0;
}

/* Length of the common prefix of a and b (limit bytes at most), eight bytes at a time where it can. */
static inline Py_ssize_t common_prefix(const unsigned char *a, const unsigned char *b, Py_ssize_t limit)
{
    Py_ssize_t i = 0;
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    while (i + 8 <= limit) {
        uint64_t x, y;
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y)
            return i + (__builtin_ctzll(x ^ y) >> 3); /* the first differing byte */
        i += 8;
    }
#endif
    while (i < limit && a[i] == b[i])
        i++;
    return i;
}

/* The reason code for the path [p, p+len) ("" and "-" are the root); -1 when out of memory. */
static int check_path(Checker *c, const unsigned char *p, Py_ssize_t len)
{
    if (len == 1 && p[0] == '-')
        len = 0;
    if (len > INT32_MAX)
        return BAD_TOKEN;
    /* The bytes shared with the previous path say which moves are shared: a previous move is shared
     * when its '/' is, or when both paths end (or go on with a '/') right after it.  Only the others
     * are read. */
    Py_ssize_t qlen = c->path_len, common = 0;
    Py_ssize_t i = common_prefix(p, c->path, len < qlen ? len : qlen);
    if (len > 0 && qlen > 0) {
        int boundary = i == len || p[i] == '/';
        while (common < c->n_tok && (c->ends[common] < i || (c->ends[common] == i && boundary)))
            common++;
    }
    Py_ssize_t n = common, tok_start = common ? c->ends[common - 1] + 1 : 0;
    if (len > 0 && tok_start <= len) {
        Py_ssize_t from = tok_start;
        for (Py_ssize_t j = tok_start; j <= len; j++) {
            if (j == len || p[j] == '/') {
                if (n >= c->cap && grow(c, n + 1) < 0)
                    return -1;
                c->tok[n] = pack_token(p + from, j - from);
                c->ends[n++] = (int32_t)j;
                from = j + 1;
            }
        }
    }
    c->n_tok = n;
    if (len > c->path_cap) {
        Py_ssize_t cap = c->path_cap;
        while (cap < len)
            cap *= 2;
        unsigned char *path = (unsigned char *)realloc(c->path, (size_t)cap);
        if (!path)
            return -1;
        c->path = path;
        c->path_cap = cap;
    }
    memcpy(c->path + i, p + i, (size_t)(len - i));
    c->path_len = len;
    if (c->bad_at >= 0 && common > c->bad_at)
        return c->bad_reason; /* the shared moves hold the illegal one: boards and bad_at stay */
    Py_ssize_t k = common < c->valid ? common : c->valid;
    c->bad_at = -1;
    for (; k < n; k++) {
        int r = play(&c->boards[k], c->tok[k], &c->boards[k + 1]);
        if (r != OK) {
            c->valid = k;
            c->bad_at = k;
            c->bad_reason = r;
            return r;
        }
    }
    c->valid = n;
    return OK;
}

static void Checker_dealloc(Checker *c)
{
    free(c->boards);
    free(c->tok);
    free(c->ends);
    free(c->path);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static int Checker_init(Checker *c, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"squares", "white_to_move", "castling", "ep", NULL};
    Py_buffer squares;
    int white, castling, ep;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "y*pii", kwlist, &squares, &white, &castling, &ep))
        return -1;
    int bad = squares.len != 64 || ep < -1 || ep > 63 || castling < 0 || castling > 15;
    Board root;
    if (!bad) {
        const signed char *sq = (const signed char *)squares.buf;
        for (int i = 0; i < 64; i++) {
            if (sq[i] < -KING || sq[i] > KING)
                bad = 1;
            root.sq[i] = (int8_t)sq[i];
        }
    }
    PyBuffer_Release(&squares);
    if (bad) {
        PyErr_SetString(PyExc_ValueError,
                        "Checker: squares must be 64 bytes of -6..6, castling 0..15, ep -1..63");
        return -1;
    }
    root.side = white ? WHITE : BLACK;
    root.castling = (int8_t)castling;
    root.ep = (int8_t)ep;
    root.check = -1;
    find_kings(&root);
    if (!c->boards) {
        c->cap = 64;
        c->path_cap = 256;
        c->boards = (Board *)malloc((size_t)(c->cap + 1) * sizeof(Board));
        c->tok = (int32_t *)malloc((size_t)c->cap * sizeof(int32_t));
        c->ends = (int32_t *)malloc((size_t)c->cap * sizeof(int32_t));
        c->path = (unsigned char *)malloc((size_t)c->path_cap);
        if (!c->boards || !c->tok || !c->ends || !c->path) {
            PyErr_NoMemory();
            return -1;
        }
    }
    c->boards[0] = root;
    c->path_len = 0;
    c->n_tok = 0;
    c->valid = 0;
    c->bad_at = -1;
    c->bad_reason = OK;
    return 0;
}

PyDoc_STRVAR(check_doc,
"check(views, data, out, skip=None)\n--\n\n"
"Check paths, in order: ``views`` is the 16-byte view buffer of an Arrow string-view array (exactly\n"
"len(out) views, its offset applied), ``data`` a tuple of its data buffers, ``out`` a writable\n"
"uint8 buffer that gets each path's reason code (0: every move legal).  Rows where ``skip``\n"
"(uint8, optional) is nonzero are not read (out gets 0).  Paths must follow each other in the\n"
"search's order for speed only: any order gives the same codes.");

static PyObject *Checker_check(Checker *c, PyObject *args)
{
    PyObject *views_obj, *data_obj, *out_obj, *skip_obj = Py_None;
    if (!PyArg_ParseTuple(args, "OO!O|O", &views_obj, &PyTuple_Type, &data_obj, &out_obj, &skip_obj))
        return NULL;
    if (c->busy || !c->boards) {
        PyErr_SetString(PyExc_RuntimeError, "Checker.check: not initialized, or running in another thread");
        return NULL;
    }
    Py_ssize_t n_data = PyTuple_GET_SIZE(data_obj);
    Py_buffer views, out, skip;
    memset(&views, 0, sizeof views);
    memset(&out, 0, sizeof out);
    memset(&skip, 0, sizeof skip);
    Py_buffer *data = (Py_buffer *)calloc((size_t)(n_data ? n_data : 1), sizeof(Py_buffer));
    Py_ssize_t got_data = 0;
    PyObject *result = NULL;
    int failed = 0;
    if (!data)
        return PyErr_NoMemory();
    if (PyObject_GetBuffer(views_obj, &views, PyBUF_C_CONTIGUOUS) < 0)
        goto done;
    if (PyObject_GetBuffer(out_obj, &out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        goto done;
    if (skip_obj != Py_None && PyObject_GetBuffer(skip_obj, &skip, PyBUF_C_CONTIGUOUS) < 0)
        goto done;
    for (; got_data < n_data; got_data++)
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(data_obj, got_data), &data[got_data], PyBUF_C_CONTIGUOUS) < 0)
            goto done;
    Py_ssize_t n = out.len;
    if (views.len < n * 16 || (skip.obj && skip.len != n)) {
        PyErr_SetString(PyExc_ValueError, "Checker.check: views, out and skip of inconsistent sizes");
        goto done;
    }
    const unsigned char *v = (const unsigned char *)views.buf;
    /* Every view's bytes must lie in its buffer: checked first, so the scan cannot read out of bounds. */
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t len, buf, off;
        memcpy(&len, v + i * 16, 4);
        if (len < 0) {
            failed = 1;
            break;
        }
        if (len > 12) {
            memcpy(&buf, v + i * 16 + 8, 4);
            memcpy(&off, v + i * 16 + 12, 4);
            if (buf < 0 || buf >= n_data || off < 0 || (Py_ssize_t)off + len > data[buf].len) {
                failed = 1;
                break;
            }
        }
    }
    if (failed) {
        PyErr_SetString(PyExc_ValueError, "Checker.check: a string view points outside its data buffer");
        goto done;
    }
    const unsigned char *sk = skip.obj ? (const unsigned char *)skip.buf : NULL;
    unsigned char *o = (unsigned char *)out.buf;
    /* The GIL is kept: a call is one search's share of a chunk (about a millisecond), and taking the
     * GIL back from the converting threads would cost the parser's thread more than it frees. */
    c->busy = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (sk && sk[i]) {
            o[i] = 0;
            continue;
        }
        int32_t len, buf, off;
        memcpy(&len, v + i * 16, 4);
        const unsigned char *p;
        if (len <= 12) {
            p = v + i * 16 + 4;
        } else {
            memcpy(&buf, v + i * 16 + 8, 4);
            memcpy(&off, v + i * 16 + 12, 4);
            p = (const unsigned char *)data[buf].buf + off;
        }
        int r = check_path(c, p, len);
        if (r < 0) {
            failed = 1;
            break;
        }
        o[i] = (unsigned char)r;
    }
    c->busy = 0;
    if (failed) {
        PyErr_NoMemory();
        goto done;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    if (views.obj)
        PyBuffer_Release(&views);
    if (out.obj)
        PyBuffer_Release(&out);
    if (skip.obj)
        PyBuffer_Release(&skip);
    for (Py_ssize_t i = 0; i < got_data; i++)
        PyBuffer_Release(&data[i]);
    free(data);
    return result;
}

PyDoc_STRVAR(check_one_doc,
"check_one(path)\n--\n\n"
"The reason code of one path (bytes or str, '/'-separated UCI moves; '' or '-' the root), in order\n"
"with the paths checked before it.  For tests and small inputs.");

static PyObject *Checker_check_one(Checker *c, PyObject *arg)
{
    const char *p;
    Py_ssize_t len;
    if (PyUnicode_Check(arg)) {
        p = PyUnicode_AsUTF8AndSize(arg, &len);
        if (!p)
            return NULL;
    } else if (PyBytes_Check(arg)) {
        p = PyBytes_AS_STRING(arg);
        len = PyBytes_GET_SIZE(arg);
    } else {
        PyErr_SetString(PyExc_TypeError, "check_one: a str or bytes path");
        return NULL;
    }
    if (c->busy || !c->boards) {
        PyErr_SetString(PyExc_RuntimeError, "Checker.check_one: not initialized, or running in another thread");
        return NULL;
    }
    int r = check_path(c, (const unsigned char *)p, len);
    if (r < 0)
        return PyErr_NoMemory();
    return PyLong_FromLong(r);
}

static PyMethodDef Checker_methods[] = {
    {"check", (PyCFunction)Checker_check, METH_VARARGS, check_doc},
    {"check_one", (PyCFunction)Checker_check_one, METH_O, check_one_doc},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(Checker_doc,
"Checker(squares, white_to_move, castling, ep)\n--\n\n"
"One search's root position: ``squares`` 64 bytes (a1=0 .. h8=63; 0 empty, 1..6 a white pawn, knight,\n"
"bishop, rook, queen, king, -1..-6 black), ``castling`` bits 1 h1, 2 a1, 4 h8, 8 a8 (python-chess's\n"
"clean_castling_rights), ``ep`` the en-passant square or -1.");

static PyTypeObject CheckerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "treediff.parse._cmoves.Checker",
    .tp_basicsize = sizeof(Checker),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = Checker_doc,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Checker_init,
    .tp_dealloc = (destructor)Checker_dealloc,
    .tp_methods = Checker_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "treediff.parse._cmoves",
    "Legality of UCI move paths against a search's root position (see Checker).", -1, NULL,
};

PyMODINIT_FUNC PyInit__cmoves(void)
{
    init_tables();
    if (PyType_Ready(&CheckerType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    Py_INCREF(&CheckerType);
    if (PyModule_AddObject(m, "Checker", (PyObject *)&CheckerType) < 0) {
        Py_DECREF(&CheckerType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddIntConstant(m, "N_REASONS", N_REASONS) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
