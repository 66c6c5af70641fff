/* qconv_packed: the int8 convolution whose weights the qconv-pack pass
 * packed at compile time (core/nodes.def), with no im2col.
 *
 * The pass stores the weights as [M/4][kh][kw][C/4][4 rows][4 channels]
 * bytes, so the four bytes one vpdpbusd lane wants (four channels of one
 * tap of one output row) are one word, and a block of four rows' words is
 * one 16-byte read; and it folds the weight row sums into the bias (zero
 * weight zero points only): bias' = bias - (x_zp + sh) Sw, sh = 128 for i8
 * activations (stored shifted to u8 as vpdpbusd wants) and 0 for u8.
 *
 * Activations: a unit is a band of output rows. Its input rows are copied
 * once into channel-blocked words (four channels of one position in one
 * 32-bit lane) split into stride phases, padded with x_zp + sh:
 *   buf[c/4][phase y][phase x][yq][xq],  input row yq*s + phase - pad.
 * Output position (r, c) of the band, tap (i, j), reads word
 *   (r + i*d/s) * wq + c + j*d/s of phase ((i*d) % s, (j*d) % s),
 * which is the position's flattened index r * wq + c plus a per-tap
 * offset: 64 consecutive flattened positions are four 64-byte loads for
 * every (tap, channel group), used by four rows' broadcast weights (16
 * vpdpbusd). Positions c >= OW of the flattened rows are computed and not
 * stored. Then each row's 64 sums are requantized (lj_qrequant_row, the
 * interpreter's rounding) and the valid runs copied out.
 *
 * On small maps (core/qpack.h's qpack_by_lanes: 3x3 convs on 14x14 and
 * 7x7) those tiles would leave lanes idle, so the pass packs rows in
 * groups of 16 or 64 and the VNNI kernel turns the tile around
 * (mconv_unit): output channels in the lanes, each position's word
 * broadcast, every lane an output. The plain kernel reads either packing
 * with position tiles. */
#include "backends/cpu/libjit/k_qint.h"
#include "backends/cpu/libjit/vec.h"
#include "core/qpack.h"

#include <unistd.h>

#pragma STDC FP_CONTRACT OFF
/* 64-byte vectors cross only into always-inline helpers (vec.h says why). */
#pragma clang diagnostic ignored "-Wpsabi"

/* PT flattened positions per tile (PNV vectors of PV lanes), PMR weight rows
 * per block (the pass's packing: qconv_pack.c's QCONV_PACK_ROWS); a band
 * holds about BAND_POS positions (4-8 tiles: its halo rows amortised, and
 * enough bands on large maps for two threads); strides up to MAX_STRIDE.
 * PW_AHEAD: a tile prefetches its block's weights that many (tap, channel
 * group) steps ahead (1 KB). In a model the weights come from beyond L2 and
 * the 4 KB pages they cross stop the hardware prefetcher: ResNet-50's 512 to
 * 2048 1x1 conv on 7x7 (one tile, the weights read once) took 0.30-0.32 ms
 * in the model against 0.17 alone (bench_qconv); with the prefetch 0.197
 * (per-node minima, Xeon with 2 MB L2, 2026-11-27). A prefetch never faults,
 * so the steps past the last read nothing harmful. */
enum { PT = 64, PV = 16, PNV = PT / PV, PMR = 4, BAND_POS = 512, MAX_STRIDE = 4, PW_AHEAD = 64 };

typedef int32_t v16i __attribute__((vector_size(64)));

typedef struct PConv {
    LjQConv g;
    int64_t kh, kw, sy, sx, dy, dx, c4, taps, m4;
    int64_t wq, hq, rows, bands, tiles, msplit, plane, cstride, buf_words;
    bool pw;          /* pointwise: 1x1, stride 1, no padding */
    int64_t xstride;  /* words between a tile's channel groups (pointwise: PT) */
    int npy, npx, phy[MAX_STRIDE], phx[MAX_STRIDE]; /* used phases, their index */
    int64_t sh;
    int64_t wg;       /* rows per group of the packed weights (core/qpack.h) */
    bool ml;          /* small map: output channels in the lanes (mconv_unit) */
} PConv;


LJ_INLINE PConv pconv_of(const int64_t *d, void *const *ops) {
    PConv p = {.g = lj_qconv_of(d, ops, true)};
    LjQConv *g = &p.g;
    /* the packed weights' shape is the unpacked [M][C][kh][kw]'s */
    p.kh = lj_dim(d, 4, 2);
    p.kw = lj_dim(d, 4, 3);
    p.sy = g->win.stride[0];
    p.sx = g->win.stride[1];
    p.dy = g->win.dilation[0];
    p.dx = g->win.dilation[1];
    p.c4 = lj_dim(d, 4, 1) / 4; /* x's channels rounded up: the extra weights are zero */
    p.taps = p.kh * p.kw;
    p.m4 = g->cout / PMR;
    p.wg = qpack_rows(g->cout, p.taps, g->out_size, p.c4 * 4);
    p.sh = g->ex == ELEM_I8 ? 128 : 0;
    int64_t ow = g->odims[1], oh = g->odims[0];
    p.wq = ow + (p.kw - 1) * p.dx / p.sx;
    const LjQWin *w = &g->win;
    p.ml = p.wg >= QPACK_ROWS_VEC; /* the pass packed for output channels in the lanes */
    p.pw = !p.ml && p.taps == 1 && p.sy == 1 && p.sx == 1 && !w->pad_begin[0] && !w->pad_begin[1] &&
           !w->pad_end[0] && !w->pad_end[1];
    /* Units: bands of rows (pointwise: of tiles, no halo), shared out evenly
     * and an even count where there are enough, so that two threads get
     * the same work. */
    p.tiles = (g->out_size + PT - 1) / PT;
    int64_t bands = p.pw ? (p.tiles + 3) / 4 : p.ml ? 1 : (oh * p.wq + BAND_POS - 1) / BAND_POS;
    int64_t most = p.pw ? p.tiles : oh;
    bands += bands > 1 && bands % 2 && bands < most;
    p.bands = bands < 1 ? 1 : bands > most ? most : bands;
    p.rows = (oh + p.bands - 1) / p.bands; /* the most rows of a band */
    p.hq = p.rows + (p.kh - 1) * p.dy / p.sy;
    p.npy = lj_tap_phases(p.kh, p.dy, p.sy, p.phy);
    p.npx = lj_tap_phases(p.kw, p.dx, p.sx, p.phx);
    p.plane = p.hq * p.wq;
    p.cstride = p.npy * p.npx * p.plane;
    p.xstride = p.cstride;
    if (p.pw) { /* one tile's words, [c/4][PT], filled just before its products (still
                 * in L1), as a GEMM packs a panel: no window reads across tiles */
        p.cstride = PT;
        p.xstride = PT;
    }
    p.buf_words = (p.c4 * p.cstride + PT + 15) / 16 * 16; /* the tap offsets after it, aligned */
    /* few bands (small maps): the rows split too, for two threads */
    p.msplit = g->batch * p.bands < 4 && p.m4 >= 2 ? 2 : 1;
    return p;
}

LJ_INLINE int64_t pconv_units(const PConv *p) {
    return p->g.batch * p->bands * p->msplit;
}

/* ---- the band's channel-blocked words ------------------------------------------------- */

/* W words (W = 16 or 8) from four channel rows r[0..3] at input columns
 * x, x + step, ... (step 1 or 2, all inside the row), each byte xor shift.
 * Stride 2 takes the even bytes of p[0, 2W - 1) from two whole loads
 * inside that span. The four rows are written out, not looped over: the
 * bitcode is built without unrolling, and a loop over an array of vectors
 * kept that array on the stack (a store and a reload of every row: 17% of
 * a 1x1 conv's time on 1024 channels, perf on the compiled model). */
#define WORDS_ROW(W, j)                                                                            \
    __builtin_convertvector(words_bytes_##W(r[j] + x, step) ^ shift, vw##W)
#define WORDS_OF(W)                                                                                \
    typedef uint8_t vb##W __attribute__((vector_size(W)));                                         \
    typedef uint32_t vw##W __attribute__((vector_size(4 * W)));                                    \
    LJ_INLINE vb##W words_bytes_##W(const uint8_t *p, int64_t step) {                              \
        vb##W lo, hi;                                                                              \
        __builtin_memcpy(&lo, p, sizeof lo);                                                       \
        if (step == 1)                                                                             \
            return lo;                                                                             \
        __builtin_memcpy(&hi, p + W - 1, sizeof hi);                                               \
        return __builtin_shufflevector(lo, hi, WORDS_EVEN_##W);                                    \
    }                                                                                              \
    LJ_INLINE void words_##W(const uint8_t *const *r, int64_t x, int64_t step, uint8_t shift,      \
                             uint32_t *out) {                                                      \
        vw##W v = WORDS_ROW(W, 0) | WORDS_ROW(W, 1) << 8 | WORDS_ROW(W, 2) << 16 |                 \
                  WORDS_ROW(W, 3) << 24;                                                           \
        __builtin_memcpy(out, &v, sizeof v);                                                       \
    }
#define WORDS_EVEN_16 0, 2, 4, 6, 8, 10, 12, 14, 17, 19, 21, 23, 25, 27, 29, 31
#define WORDS_EVEN_8 0, 2, 4, 6, 9, 11, 13, 15
WORDS_OF(16)
WORDS_OF(8)

/* 64 words from four channel rows r[0..3] at input columns x, x + 1, ...,
 * each byte xor shift: the rows' bytes zipped in pairs (0 with 1, 2 with 3),
 * then the pairs' 16-bit halves zipped into words, eight two-vector
 * shuffles (one vpermt2b or vpermt2w each with AVX-512 VBMI; zip1/zip2 on
 * NEON) where words_16's widenings, shifts and ors took 16 + 24 operations.
 * The fill was a quarter of a 1x1 conv's time (256 to 64 channels on 56x56,
 * perf on bench_qconv). */
#define ZIP_2(a, n) a, a + n
#define ZIP_4(a, n) ZIP_2(a, n), ZIP_2(a + 1, n), ZIP_2(a + 2, n), ZIP_2(a + 3, n)
#define ZIP_16(a, n) ZIP_4(a, n), ZIP_4(a + 4, n), ZIP_4(a + 8, n), ZIP_4(a + 12, n)
#define ZIP_32(a, n) ZIP_16(a, n), ZIP_16(a + 16, n)
typedef uint8_t vb64 __attribute__((vector_size(64)));
typedef uint16_t vh32 __attribute__((vector_size(64)));
LJ_INLINE void words_64(const uint8_t *const *r, int64_t x, uint8_t shift, uint32_t *out) {
    vb64 b0, b1, b2, b3;
    __builtin_memcpy(&b0, r[0] + x, 64);
    __builtin_memcpy(&b1, r[1] + x, 64);
    __builtin_memcpy(&b2, r[2] + x, 64);
    __builtin_memcpy(&b3, r[3] + x, 64);
    b0 ^= shift, b1 ^= shift, b2 ^= shift, b3 ^= shift;
    vh32 lo01 = (vh32)__builtin_shufflevector(b0, b1, ZIP_32(0, 64));
    vh32 hi01 = (vh32)__builtin_shufflevector(b0, b1, ZIP_32(32, 64));
    vh32 lo23 = (vh32)__builtin_shufflevector(b2, b3, ZIP_32(0, 64));
    vh32 hi23 = (vh32)__builtin_shufflevector(b2, b3, ZIP_32(32, 64));
    vh32 w0 = __builtin_shufflevector(lo01, lo23, ZIP_16(0, 32));
    vh32 w1 = __builtin_shufflevector(lo01, lo23, ZIP_16(16, 32));
    vh32 w2 = __builtin_shufflevector(hi01, hi23, ZIP_16(0, 32));
    vh32 w3 = __builtin_shufflevector(hi01, hi23, ZIP_16(16, 32));
    __builtin_memcpy(out, &w0, 64);
    __builtin_memcpy(out + 16, &w1, 64);
    __builtin_memcpy(out + 32, &w2, 64);
    __builtin_memcpy(out + 48, &w3, 64);
}

/* n words from four channel rows r[0..3] at input columns x0, x0 + step,
 * ... (all inside the row), each byte xor shift: 64 at a time at step 1,
 * else sixteen (or eight) at a time for steps 1 and 2, the last vector
 * overlapping the one before. */
LJ_INLINE void words_of(const uint8_t *const *r, int64_t x0, int64_t step, int64_t n,
                        uint8_t shift, uint32_t *out) {
    if (step == 1 && n >= 64) {
        for (int64_t t = 0; t < n; t += 64) {
            t = t + 64 <= n ? t : n - 64;
            words_64(r, x0 + t, shift, out + t);
        }
        return;
    }
    int64_t w = step > 2 || n < 8 ? 0 : n < 16 ? 8 : 16;
    for (int64_t t = 0; w && t < n; t += w) {
        t = t + w <= n ? t : n - w;
        if (w == 16)
            words_16(r, x0 + step * t, step, shift, out + t);
        else
            words_8(r, x0 + step * t, step, shift, out + t);
    }
    for (int64_t t = 0; !w && t < n; t++) {
        int64_t x = x0 + t * step;
        out[t] = (uint32_t)(uint8_t)(r[0][x] ^ shift) | (uint32_t)(uint8_t)(r[1][x] ^ shift) << 8 |
                 (uint32_t)(uint8_t)(r[2][x] ^ shift) << 16 |
                 (uint32_t)(uint8_t)(r[3][x] ^ shift) << 24;
    }
}

/* One phase row: input columns xq * sx + rx - pad, padding where outside. */
LJ_INLINE void fill_phase_row(const PConv *p, const uint8_t *const *r, int64_t rx, uint32_t pad,
                              uint32_t *out) {
    int64_t iw = p->g.idims[1], pl = p->g.win.pad_begin[1], sx = p->sx;
    /* xq in [lo, hi) reads inside: 0 <= xq * sx + rx - pl < iw */
    int64_t x0 = rx - pl;
    int64_t lo = x0 >= 0 ? 0 : (-x0 + sx - 1) / sx;
    int64_t hi = x0 >= iw ? 0 : (iw - x0 + sx - 1) / sx;
    lo = lo < p->wq ? lo : p->wq;
    hi = hi < p->wq ? hi : p->wq;
    hi = hi > lo ? hi : lo;
    for (int64_t t = 0; t < lo; t++)
        out[t] = pad;
    words_of(r, x0 + lo * sx, sx, hi - lo, (uint8_t)p->sh, out + lo);
    for (int64_t t = hi; t < p->wq; t++)
        out[t] = pad;
}

/* Channel j of word group c: past x's channels (padded with zero weights),
 * any row that exists -- the last channel's. */
LJ_INLINE int64_t channel(const PConv *p, int64_t c, int j) {
    return 4 * c + j < p->g.cin ? 4 * c + j : p->g.cin - 1;
}

/* Stride 2: both column phases of PAIR_R rows at a time from one
 * conversion of each row's columns (PAIR_T outputs a pass). Converting at
 * step 2 took two loads and a byte permute per channel row of 8 or 16
 * words, once per phase (and words one by one under 8: 14x14 maps' phase
 * rows of 7), 20% of a 3x3 stride-2 conv on 28x28 (perf, bench_qconv); a
 * step-1 conversion is plain loads, and the phases are then the even and
 * odd words, one permute a vector. The rows are all converted before any
 * is taken apart: read back at once, the vectors straddle the stores that
 * wrote them, which the store buffer cannot forward (that version was
 * 10% slower than step 2). */
enum { PAIR_T = 64, PAIR_R = 8 };
typedef uint32_t vp16 __attribute__((vector_size(64)));
typedef uint32_t vp8 __attribute__((vector_size(32)));
#define PAIR_EVEN_16 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30
#define PAIR_EVEN_8 0, 2, 4, 6, 8, 10, 12, 14

/* n words every second one of src (src[0], src[2], ...): 16 or 8 at a
 * time (the last vector overlapping the one before), one by one under 8. */
LJ_INLINE void pair_take(const uint32_t *src, int64_t n, uint32_t *out) {
    int64_t w = n < 8 ? 0 : n < 16 ? 8 : 16;
    for (int64_t t = 0; w && t < n; t += w) {
        t = t + w <= n ? t : n - w;
        if (w == 16) {
            vp16 a, b;
            __builtin_memcpy(&a, src + 2 * t, sizeof a);
            __builtin_memcpy(&b, src + 2 * t + 16, sizeof b);
            vp16 v = __builtin_shufflevector(a, b, PAIR_EVEN_16);
            __builtin_memcpy(out + t, &v, sizeof v);
        } else {
            vp8 a, b;
            __builtin_memcpy(&a, src + 2 * t, sizeof a);
            __builtin_memcpy(&b, src + 2 * t + 8, sizeof b);
            vp8 v = __builtin_shufflevector(a, b, PAIR_EVEN_8);
            __builtin_memcpy(out + t, &v, sizeof v);
        }
    }
    for (int64_t t = 0; !w && t < n; t++)
        out[t] = src[2 * t];
}

/* Input row y's columns a + k, k < k1, as words into tmp (pad outside). */
LJ_INLINE void pair_convert(const PConv *p, const uint8_t *plane, int64_t c, int64_t y, int64_t a,
                            int64_t k1, uint32_t pad, uint32_t *tmp) {
    const LjQConv *g = &p->g;
    int64_t iw = g->idims[1];
    int64_t lo = a < 0 ? -a : 0, hi = iw - a < k1 ? iw - a : k1; /* inside: [lo, hi) */
    lo = lo < k1 ? lo : k1;
    hi = hi > lo ? hi : lo;
    if (y < 0 || y >= g->idims[0])
        lo = hi = k1;
    for (int64_t k = 0; k < lo; k++)
        tmp[k] = pad;
    if (hi > lo) {
        const uint8_t *r[4];
        for (int j = 0; j < 4; j++)
            r[j] = plane + channel(p, c, j) * g->in_size + y * iw;
        words_of(r, a + lo, 1, hi - lo, (uint8_t)p->sh, tmp + lo);
    }
    for (int64_t k = hi; k < k1; k++)
        tmp[k] = pad;
}

/* Row phase ry of channel group c (sx = 2): every row of the band, both
 * column phases (those used). */
LJ_INLINE void fill_rows_pair(const PConv *p, const uint8_t *plane, int64_t c, int64_t ry,
                              int64_t oh0, uint32_t pad, uint32_t *buf) {
    int64_t pt = p->g.win.pad_begin[0], pl = p->g.win.pad_begin[1];
    /* outputs [t0, t0 + n) read columns a + k, k < 2n + 1 (the odd
     * phase's vectors read one word past its last) */
    uint32_t tmp[PAIR_R][2 * PAIR_T + 1];
    for (int64_t t0 = 0; t0 < p->wq; t0 += PAIR_T) {
        int64_t n = p->wq - t0 < PAIR_T ? p->wq - t0 : PAIR_T, a = 2 * t0 - pl;
        for (int64_t y0 = 0; y0 < p->hq; y0 += PAIR_R) {
            int64_t ny = p->hq - y0 < PAIR_R ? p->hq - y0 : PAIR_R;
            for (int64_t i = 0; i < ny; i++)
                pair_convert(p, plane, c, (oh0 + y0 + i) * p->sy + ry - pt, a, 2 * n + 1, pad,
                             tmp[i]);
            for (int rx = 0; rx < 2; rx++) {
                if (p->phx[rx] < 0)
                    continue;
                uint32_t *out = buf + c * p->cstride + (p->phy[ry] * p->npx + p->phx[rx]) * p->plane +
                                y0 * p->wq + t0;
                for (int64_t i = 0; i < ny; i++)
                    pair_take(tmp[i] + rx, n, out + i * p->wq);
            }
        }
    }
}

/* Channel group c's rows r[0..3] at input row y of image nb. */
LJ_INLINE void group_rows(const PConv *p, int64_t nb, int64_t c, int64_t y, const uint8_t **r) {
    const LjQConv *g = &p->g;
    for (int j = 0; j < 4; j++)
        r[j] = (const uint8_t *)g->x + (nb * g->cin + channel(p, c, j)) * g->in_size + y * g->idims[1];
}

/* The most words of a band's rows that fill_rows_run takes through its buffer. */
enum { SHORT_WORDS = 256 };

/* Stride 1, every input column read (pl + iw <= wq): the band's rows
 * inside the image are one run of x, converted 16 words a vector. Where
 * the plane's rows are the input's (wq = iw: no column padding) and all
 * inside, the run is the plane; rows of under 8 words (maps of 7x7 and
 * less, which words_of would take a word at a time) go through tmp, each
 * then moved to its padded row as one vector of 8 (the words past the
 * row's land on its right padding or on the next row, both written after
 * it; the last row's on the tail or the next group's plane). Other shapes:
 * false, nothing written. */
LJ_INLINE bool fill_rows_run(const PConv *p, int64_t nb, int64_t oh0, uint32_t pad, uint32_t *buf) {
    const LjQConv *g = &p->g;
    int64_t ih = g->idims[0], iw = g->idims[1], pt = g->win.pad_begin[0], pl = g->win.pad_begin[1];
    bool direct = p->wq == iw;
    if (p->sy != 1 || p->sx != 1 || pl + iw > p->wq ||
        (!direct && (iw >= 8 || p->hq * iw > SHORT_WORDS)))
        return false;
    int64_t ya = pt > oh0 ? pt - oh0 : 0, yb = ih + pt - oh0; /* rows yq inside */
    yb = yb < p->hq ? yb : p->hq;
    yb = yb > ya ? yb : ya;
    if (direct && (ya > 0 || yb < p->hq))
        return false;
    uint32_t tmp[SHORT_WORDS + 8];
    for (int64_t t = (yb - ya) * iw; !direct && t < (yb - ya) * iw + 8; t++)
        tmp[t] = pad;
    for (int64_t c = 0; c < p->c4; c++) {
        const uint8_t *r[4];
        group_rows(p, nb, c, oh0 + ya - pt, r);
        uint32_t *plane = buf + c * p->cstride;
        words_of(r, 0, 1, (yb - ya) * iw, (uint8_t)p->sh, direct ? plane : tmp);
        for (int64_t yq = 0; yq < p->hq && !direct; yq++) {
            uint32_t *row = plane + yq * p->wq;
            bool in = yq >= ya && yq < yb;
            for (int64_t t = 0; t < (in ? pl : p->wq); t++)
                row[t] = pad;
            if (!in)
                continue;
            vp8 v;
            __builtin_memcpy(&v, tmp + (yq - ya) * iw, sizeof v);
            __builtin_memcpy(row + pl, &v, sizeof v);
            for (int64_t t = pl + iw; t < p->wq; t++)
                row[t] = pad;
        }
    }
    return true;
}

/* Every channel group, used phase and row of the band's window. */
LJ_INLINE void fill_phases(const PConv *p, int64_t nb, int64_t oh0, uint32_t pad, uint32_t *buf) {
    const LjQConv *g = &p->g;
    int64_t ih = g->idims[0], pt = g->win.pad_begin[0];
    for (int64_t c = 0; c < p->c4; c++) {
        const uint8_t *plane = (const uint8_t *)g->x + nb * g->cin * g->in_size;
        for (int64_t ry = 0; ry < p->sy; ry++) {
            if (p->phy[ry] < 0)
                continue;
            if (p->sx == 2) {
                fill_rows_pair(p, plane, c, ry, oh0, pad, buf);
                continue;
            }
            for (int64_t yq = 0; yq < p->hq; yq++) {
                int64_t y = (oh0 + yq) * p->sy + ry - pt;
                for (int64_t rx = 0; rx < p->sx; rx++) {
                    if (p->phx[rx] < 0)
                        continue;
                    uint32_t *out = buf + c * p->cstride +
                                    (p->phy[ry] * p->npx + p->phx[rx]) * p->plane + yq * p->wq;
                    if (y < 0 || y >= ih) {
                        for (int64_t t = 0; t < p->wq; t++)
                            out[t] = pad;
                        continue;
                    }
                    const uint8_t *r[4];
                    group_rows(p, nb, c, y, r);
                    fill_phase_row(p, r, rx, pad, out);
                }
            }
        }
    }
}

/* The words of band b of image nb: every channel group, used phase and
 * row of the band's window (pointwise: of its tile at p0 only). */
LJ_INLINE void fill_band(const PConv *p, int64_t nb, int64_t oh0, int64_t p0, uint32_t *buf) {
    const LjQConv *g = &p->g;
    uint32_t pad = (uint8_t)(g->zx + p->sh) * 0x01010101u;
    if (p->pw) { /* positions [p0, p0 + PT) of the map, one run of each channel */
        int64_t n = g->out_size - p0 < PT ? g->out_size - p0 : PT;
        for (int64_t c = 0; c < p->c4; c++) {
            const uint8_t *r[4];
            group_rows(p, nb, c, 0, r);
            words_of(r, p0, 1, n, (uint8_t)p->sh, buf + c * PT);
            for (int64_t t = n; t < PT; t++)
                buf[c * PT + t] = pad;
        }
        return;
    }
    if (!fill_rows_run(p, nb, oh0, pad, buf))
        fill_phases(p, nb, oh0, pad, buf);
    for (int64_t t = 0; t < PT; t++) /* read by the last tile's unused lanes */
        buf[p->c4 * p->cstride + t] = 0;
}

/* ---- the dot products ------------------------------------------------------------------- */

/* A block of four rows: the bias the accumulators start from, each row's
 * multiplier (x_scale * w_scale / y_scale in f32, as the interpreter forms
 * it), and whether the tile requantizes and stores them itself (pq_fused
 * says when it may); otherwise bias is 0 and pstore_row adds it. */
typedef struct PBlock {
    int32_t bias[PMR];
    float mult[PMR];
    bool fused;
} PBlock;

/* Where a tile's lanes go: runs of output positions (lane t, length len,
 * offset at in the output plane); for masked stores, each run's lanes as a
 * mask and its offset minus its first lane. */
typedef struct Runs {
    int n;
    int64_t t[PT + 1], len[PT + 1], at[PT + 1], off[PT + 1];
    uint64_t mask[PT + 1];
} Runs;

/* Where a fused tile stores: its rows' planes, the masked stores of the
 * tile's runs (tile_runs), y_zp folded into the f32 magic's bits. */
typedef struct PDest {
    uint8_t *y[PMR];
    const Runs *ru;
    int32_t zadj;
    bool i8;
} PDest;

/* acc[r][v] = bias[r] + sum over taps and channel groups of block row r's
 * word times the tile's words, vector v < N (a band's last tile may need
 * fewer than four vectors). 4N named accumulators so they stay in
 * registers (the bitcode is built without loop unrolling); one body per N. */
#define PV_DECL_1(r) a##r##0 = (v16i){0} + blk->bias[r]
#define PV_DECL_2(r) PV_DECL_1(r), a##r##1 = (v16i){0} + blk->bias[r]
#define PV_DECL_3(r) PV_DECL_2(r), a##r##2 = (v16i){0} + blk->bias[r]
#define PV_DECL_4(r) PV_DECL_3(r), a##r##3 = (v16i){0} + blk->bias[r]
#define PV_STEP_1(STEP, r, w) a##r##0 = STEP(a##r##0, x0, w)
#define PV_STEP_2(STEP, r, w) PV_STEP_1(STEP, r, w), a##r##1 = STEP(a##r##1, x1, w)
#define PV_STEP_3(STEP, r, w) PV_STEP_2(STEP, r, w), a##r##2 = STEP(a##r##2, x2, w)
#define PV_STEP_4(STEP, r, w) PV_STEP_3(STEP, r, w), a##r##3 = STEP(a##r##3, x3, w)
#define PV_LOAD_1 __builtin_memcpy(&x0, xt, 64)
#define PV_LOAD_2 PV_LOAD_1, __builtin_memcpy(&x1, xt + 16, 64)
#define PV_LOAD_3 PV_LOAD_2, __builtin_memcpy(&x2, xt + 32, 64)
#define PV_LOAD_4 PV_LOAD_3, __builtin_memcpy(&x3, xt + 48, 64)
#define PV_X_1 x0
#define PV_X_2 x0, x1
#define PV_X_3 x0, x1, x2
#define PV_X_4 x0, x1, x2, x3
#define PV_SAVE_1(r) acc[r][0] = a##r##0
#define PV_SAVE_2(r) PV_SAVE_1(r), acc[r][1] = a##r##1
#define PV_SAVE_3(r) PV_SAVE_2(r), acc[r][2] = a##r##2
#define PV_SAVE_4(r) PV_SAVE_3(r), acc[r][3] = a##r##3
#define PTILE_BODY(STEP, N)                                                                        \
    v16i PV_DECL_##N(0), PV_DECL_##N(1), PV_DECL_##N(2), PV_DECL_##N(3);                           \
    for (int64_t t = 0; t < taps; t++) {                                                           \
        const uint32_t *xt = xb + toff[t];                                                         \
        const uint32_t *wt = wb + t * c4 * wg;                                                     \
        for (int64_t c = 0; c < c4; c++, xt += cstride, wt += wg) {                                \
            v16i PV_X_##N;                                                                         \
            PV_LOAD_##N;                                                                           \
            __builtin_prefetch(wt + PW_AHEAD * wg);                                                \
            v16i w0 = (v16i){0} + (int32_t)wt[0], w1 = (v16i){0} + (int32_t)wt[1];                 \
            v16i w2 = (v16i){0} + (int32_t)wt[2], w3 = (v16i){0} + (int32_t)wt[3];                 \
            PV_STEP_##N(STEP, 0, w0);                                                              \
            PV_STEP_##N(STEP, 1, w1);                                                              \
            PV_STEP_##N(STEP, 2, w2);                                                              \
            PV_STEP_##N(STEP, 3, w3);                                                              \
        }                                                                                          \
    }
#define PTILE_SAVE(N) PV_SAVE_##N(0), PV_SAVE_##N(1), PV_SAVE_##N(2), PV_SAVE_##N(3);

/* Four u8 x s8 products per lane, in plain vector code. */
LJ_INLINE v16i pdot4_plain(v16i acc, v16i x, v16i w) {
    for (int j = 0; j < 4; j++) {
        v16i xj = (x >> (8 * j)) & 0xff;
        v16i wj = (w << (24 - 8 * j)) >> 24; /* sign-extended byte j */
        acc += xj * wj;
    }
    return acc;
}

#define PTILE_ARGS                                                                                 \
    const uint32_t *xb, const uint32_t *wb, int64_t wg, const int64_t *toff, int64_t taps,         \
        int64_t c4, int64_t cstride, const PBlock *blk, const PDest *dst, v16i acc[PMR][PNV]
LJ_INLINE void ptile_plain_1(PTILE_ARGS) { PTILE_BODY(pdot4_plain, 1) PTILE_SAVE(1) }
LJ_INLINE void ptile_plain_2(PTILE_ARGS) { PTILE_BODY(pdot4_plain, 2) PTILE_SAVE(2) }
LJ_INLINE void ptile_plain_3(PTILE_ARGS) { PTILE_BODY(pdot4_plain, 3) PTILE_SAVE(3) }
LJ_INLINE void ptile_plain_4(PTILE_ARGS) { PTILE_BODY(pdot4_plain, 4) PTILE_SAVE(4) }

/* ---- the fused requantization (VNNI tiles) ----------------------------------------------- */

/* The interpreter requantizes a sum s as nearbyint((double)s * mult) +
 * y_zp, saturated. When |s| < 2^24, s is exact in f32, and one f32 fma
 * s * mult + 1.5 * 2^23 rounds the exact product once, half to even, to
 * the integer whose bits are the low bits of the result (while |s * mult|
 * < 2^22): the same integer as the double product's, itself exact (24 + 24
 * significant bits). Sums beyond +-(2^24 - 1) are clamped to it: with mult
 * >= 2^-15 the clamped product is still at least 512 in magnitude, beyond
 * the result's range whatever y_zp, as the unclamped one is. So a block
 * whose rows have 2^-15 <= mult < 1/4 and whose bias keeps bias + sum inside
 * i32 (|sum| <= K * 255 * 128) is requantized in registers, 16 lanes an
 * fma, without leaving the tile; other blocks go through pstore_row. */
#define PQ_MAGIC 12582912.0f /* 1.5 * 2^23, bits 0x4B400000 */
enum { PQ_MAGIC_BITS = 0x4B400000, PQ_CLAMP = (1 << 24) - 1 };

LJ_INLINE bool pq_fused(float mult, int64_t bias, int64_t k) {
    int64_t room = INT32_MAX - k * 255 * 128;
    return mult >= 0x1p-15f && mult < 0.25f && bias >= -room && bias <= room;
}

#if defined(__x86_64__)
/* Not always-inline: clang would refuse to inline a VNNI function into the
 * shared code; LLVM inlines it once code generation has given every
 * function the target's features (and drops it, unused, on other CPUs). */
#define PX86_TARGET target("avx512f,avx512bw,avx512vnni,evex512"), min_vector_width(512)
#define PVNNI static __attribute__((PX86_TARGET)) void
#define PX86 static inline __attribute__((always_inline, PX86_TARGET))
#define PDOT4_VNNI(a, x, w) __builtin_ia32_vpdpbusd512(a, x, w)

typedef float v16f __attribute__((vector_size(64)));
typedef short v32s __attribute__((vector_size(64)));
typedef char v64c __attribute__((vector_size(64)));

/* One vector of sums (bias included) to y_zp + the rounded product, i32,
 * with a multiplier per lane; pq_requant, one for all lanes. */
PX86 v16i pq_requant_lanes(v16i a, v16f mult, int32_t zadj) {
    a = __builtin_elementwise_min(__builtin_elementwise_max(a, (v16i){0} - PQ_CLAMP),
                                  (v16i){0} + PQ_CLAMP);
    v16f f = __builtin_elementwise_fma(__builtin_convertvector(a, v16f), mult, (v16f){0} + PQ_MAGIC);
    return (v16i)f - zadj;
}

PX86 v16i pq_requant(v16i a, float mult, int32_t zadj) {
    return pq_requant_lanes(a, (v16f){0} + mult, zadj);
}

/* A row's four vectors saturated to bytes (two packs, which interleave
 * the vectors by 128-bit lane, and a dword permutation that undoes it),
 * then each run of the tile stored under its mask. A masked store touches
 * only its lanes' bytes (the others are not accessed, even where the
 * address they would have is not the output's). */
PX86 void pq_store(const PDest *d, int r, v16i q0, v16i q1, v16i q2, v16i q3) {
    v32s lo = __builtin_ia32_packssdw512(q0, q1), hi = __builtin_ia32_packssdw512(q2, q3);
    v64c b = d->i8 ? __builtin_ia32_packsswb512(lo, hi) : __builtin_ia32_packuswb512(lo, hi);
    v16i w = (v16i)b;
    w = __builtin_shufflevector(w, w, 0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    for (int i = 0; i < d->ru->n; i++)
        __builtin_ia32_storedquqi512_mask((v64c *)(d->y[r] + d->ru->off[i]), (v64c)w,
                                          d->ru->mask[i]);
}

#define Z16 ((v16i){0}) /* the lanes no run stores */
#define PQ_ROW_1(r) pq_requant(a##r##0, blk->mult[r], dst->zadj), Z16, Z16, Z16
#define PQ_ROW_2(r)                                                                                \
    pq_requant(a##r##0, blk->mult[r], dst->zadj), pq_requant(a##r##1, blk->mult[r], dst->zadj), Z16, Z16
#define PQ_ROW_3(r)                                                                                \
    pq_requant(a##r##0, blk->mult[r], dst->zadj), pq_requant(a##r##1, blk->mult[r], dst->zadj),    \
        pq_requant(a##r##2, blk->mult[r], dst->zadj), Z16
#define PQ_ROW_4(r)                                                                                \
    pq_requant(a##r##0, blk->mult[r], dst->zadj), pq_requant(a##r##1, blk->mult[r], dst->zadj),    \
        pq_requant(a##r##2, blk->mult[r], dst->zadj), pq_requant(a##r##3, blk->mult[r], dst->zadj)
/* The sums stored for pstore_row (dst NULL), or requantized and stored here. */
#define PTILE_END(N)                                                                               \
    if (!dst) {                                                                                    \
        PTILE_SAVE(N)                                                                              \
        return;                                                                                    \
    }                                                                                              \
    pq_store(dst, 0, PQ_ROW_##N(0));                                                               \
    pq_store(dst, 1, PQ_ROW_##N(1));                                                               \
    pq_store(dst, 2, PQ_ROW_##N(2));                                                               \
    pq_store(dst, 3, PQ_ROW_##N(3));

PVNNI ptile_vnni_1(PTILE_ARGS) { PTILE_BODY(PDOT4_VNNI, 1) PTILE_END(1) }
PVNNI ptile_vnni_2(PTILE_ARGS) { PTILE_BODY(PDOT4_VNNI, 2) PTILE_END(2) }
PVNNI ptile_vnni_3(PTILE_ARGS) { PTILE_BODY(PDOT4_VNNI, 3) PTILE_END(3) }
PVNNI ptile_vnni_4(PTILE_ARGS) { PTILE_BODY(PDOT4_VNNI, 4) PTILE_END(4) }

/* ---- small maps: output channels in the lanes (VNNI) ------------------------------------ */

/* A block of mp output positions by mv vectors of 16 rows (one packed
 * group each): per (tap, channel group) mv row vectors are loaded and
 * each position's word broadcast, mp x mv vpdpbusd. Every lane is an
 * output (no columns past a row's end); positions past the block's np and
 * groups past its nmv repeat the last ones and are not stored. Two
 * shapes, (mp, mv) = (6, 4) or (7, 3), whichever computes fewer unused
 * lanes for the map and the rows (mconv_7x3): 49 positions are 9 blocks
 * of 6 (10% unused) but 7 of 7. MW_AHEAD: the groups' weights prefetched
 * that many steps ahead (8 KB, as PW_AHEAD says why): ResNet-50's 3x3 convs on
 * 7x7 took 0.56-0.58 ms in the model and 0.32-0.34 alone, the weight loads
 * waiting (perf); prefetched 16, 32, 64 and 128 steps ahead, 0.46, 0.40, 0.43-0.45
 * and 0.51-0.52 (per-node minima, one run each, noisy host). */
enum { MP_MAX = 7, MV_MAX = 4, MW_AHEAD = 32 };

/* What a block of rows shares: its groups' weights, and per lane the bias
 * the sums start from, the multiplier and whether all its rows requantize
 * in registers (else the bias is 0 and lj_qconv_store adds it). */
typedef struct MRows {
    const uint32_t *w[MV_MAX];
    v16i bias[MV_MAX];
    v16f mult[MV_MAX];
    bool fused;
    int64_t m0, nmv; /* first row, groups used */
} MRows;

typedef uint8_t v16b __attribute__((vector_size(16)));
typedef uint8_t v32b __attribute__((vector_size(32)));
typedef uint8_t v64b __attribute__((vector_size(64)));
typedef uint64_t v8q __attribute__((vector_size(64)));

/* A fused block's bytes, transposed: each of a vector's 16 rows gets its
 * positions' bytes as one 8-byte word (the last position repeated in the
 * spare bytes), from the 16-byte vectors [position][row] (seven: with six
 * positions the sixth twice) by two byte shuffles. Storing a byte per
 * lane and position was 96 scalar stores per vector (and as many
 * extractions) against 24 vpdpbusd per (tap, channel group): 5-10% of a
 * 3x3 conv on 14x14. */
#define MT_ROW(i) i, 16 + i, 32 + i, 48 + i, 64 + i, 80 + i, 96 + i, 96 + i
#define MT_HALF(h)                                                                                 \
    MT_ROW(8 * h), MT_ROW(8 * h + 1), MT_ROW(8 * h + 2), MT_ROW(8 * h + 3), MT_ROW(8 * h + 4),     \
        MT_ROW(8 * h + 5), MT_ROW(8 * h + 6), MT_ROW(8 * h + 7)
#define MT_CAT32                                                                                   \
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,  \
        26, 27, 28, 29, 30, 31
#define MT_CAT64                                                                                   \
    MT_CAT32, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52,  \
        53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63

/* The requantized rows of the block, stored: where the bytes past the
 * block's positions are still the row's (pos0 + 8 <= n), each row is one
 * 8-byte store (those bytes are the next block's, which this unit writes
 * after); else np bytes a row. */
PX86 void mstore_fused(const PConv *p, const MRows *mr, const int mp, int64_t nb, int64_t pos0,
                       int64_t np, v16i a[MP_MAX][MV_MAX]) {
    const LjQConv *g = &p->g;
    int32_t zadj = PQ_MAGIC_BITS - (int32_t)g->yz;
    int32_t lo = g->ey == ELEM_I8 ? -128 : 0, hi = g->ey == ELEM_I8 ? 127 : 255;
    for (int64_t v = 0; v < mr->nmv; v++) {
        v16b b[MP_MAX];
#pragma clang loop unroll(full)
        for (int j = 0; j < mp; j++) /* i8: the same bits, modulo 256 */
            b[j] = __builtin_convertvector(
                __builtin_elementwise_min(
                    __builtin_elementwise_max(pq_requant_lanes(a[j][v], mr->mult[v], zadj),
                                              (v16i){0} + lo),
                    (v16i){0} + hi),
                v16b);
        if (mp == 6)
            b[6] = b[5];
        v32b b01 = __builtin_shufflevector(b[0], b[1], MT_CAT32);
        v32b b23 = __builtin_shufflevector(b[2], b[3], MT_CAT32);
        v32b b45 = __builtin_shufflevector(b[4], b[5], MT_CAT32);
        v32b b66 = __builtin_shufflevector(b[6], b[6], MT_CAT32);
        v64b lo4 = __builtin_shufflevector(b01, b23, MT_CAT64);
        v64b hi4 = __builtin_shufflevector(b45, b66, MT_CAT64);
        v8q t[2] = {(v8q)__builtin_shufflevector(lo4, hi4, MT_HALF(0)),
                    (v8q)__builtin_shufflevector(lo4, hi4, MT_HALF(1))};
        uint8_t *y = (uint8_t *)g->y + (nb * g->cout + mr->m0 + QPACK_ROWS_VEC * v) * g->out_size + pos0;
        bool whole = pos0 + 8 <= g->out_size;
        for (int i = 0; i < 16; i++, y += g->out_size) {
            uint64_t row = t[i / 8][i % 8];
            if (whole)
                __builtin_memcpy(y, &row, 8);
            else
                for (int64_t j = 0; j < np; j++)
                    y[j] = (uint8_t)(row >> 8 * j);
        }
    }
}

/* The block's sums requantized as pq_requant does, with a multiplier per
 * lane (mstore_fused), or through lj_qconv_store when a row may not, each lane's byte
 * stored in its row's plane: the output is NCHW, so the 16 rows of a
 * vector are 16 planes apart. */
PX86 void mstore(const PConv *p, const MRows *mr, const int mp, int64_t nb, int64_t pos0,
                 int64_t np, v16i a[MP_MAX][MV_MAX]) {
    const LjQConv *g = &p->g;
    if (mr->fused) {
        mstore_fused(p, mr, mp, nb, pos0, np, a);
        return;
    }
    for (int64_t v = 0; v < mr->nmv; v++)
        for (int64_t j = 0; j < np; j++) {
            int32_t q[16];
            __builtin_memcpy(q, &a[j][v], sizeof q);
            int64_t m = mr->m0 + QPACK_ROWS_VEC * v, yo = (nb * g->cout + m) * g->out_size + pos0 + j;
            for (int i = 0; i < 16; i++, yo += g->out_size)
                lj_qconv_store(g, yo, m + i, q[i]);
        }
}

PX86 void mtile_body(const PConv *p, const MRows *mr, const int mp, const int mv,
                     const uint32_t *buf, const int64_t *toff, const int64_t *off, int64_t nb,
                     int64_t pos0, int64_t np) {
    v16i a[MP_MAX][MV_MAX];
#pragma clang loop unroll(full)
    for (int j = 0; j < mp; j++)
#pragma clang loop unroll(full)
        for (int v = 0; v < mv; v++)
            a[j][v] = mr->bias[v];
    int64_t c4 = p->c4, cs = p->cstride;
    for (int64_t t = 0; t < p->taps; t++) {
        const uint32_t *x[MP_MAX], *w[MV_MAX];
#pragma clang loop unroll(full)
        for (int j = 0; j < mp; j++)
            x[j] = buf + toff[t] + off[j];
#pragma clang loop unroll(full)
        for (int v = 0; v < mv; v++)
            w[v] = mr->w[v] + t * c4 * p->wg;
        for (int64_t c = 0; c < c4; c++) {
            v16i wv[MV_MAX];
#pragma clang loop unroll(full)
            for (int v = 0; v < mv; v++) {
                __builtin_memcpy(&wv[v], w[v] + c * p->wg, 64);
                __builtin_prefetch(w[v] + (c + MW_AHEAD) * p->wg);
            }
#pragma clang loop unroll(full)
            for (int j = 0; j < mp; j++) {
                v16i xj = (v16i){0} + (int32_t)x[j][c * cs];
#pragma clang loop unroll(full)
                for (int v = 0; v < mv; v++)
                    a[j][v] = PDOT4_VNNI(a[j][v], xj, wv[v]);
            }
        }
    }
    mstore(p, mr, mp, nb, pos0, np, a);
}

#define MTILE_ARGS                                                                                 \
    const PConv *p, const MRows *mr, const uint32_t *buf, const int64_t *toff, const int64_t *off, \
        int64_t nb, int64_t pos0, int64_t np
PVNNI mtile_6x4(MTILE_ARGS) { mtile_body(p, mr, 6, 4, buf, toff, off, nb, pos0, np); }
PVNNI mtile_7x3(MTILE_ARGS) { mtile_body(p, mr, 7, 3, buf, toff, off, nb, pos0, np); }

/* The block shape for n positions and rows [r0, r1): 7 x 3 where its
 * blocks leave fewer lanes unused than 6 x 4's (computed lanes per
 * position block: mp x mv vectors). */
LJ_INLINE bool mconv_7x3(int64_t n, int64_t r0, int64_t r1) {
    int64_t groups = (r1 - r0) / QPACK_ROWS_VEC;
    int64_t c6 = (n + 5) / 6 * 6 * ((groups + 3) / 4 * 4), c7 = (n + 6) / 7 * 7 * ((groups + 2) / 3 * 3);
    return c7 < c6;
}

/* Rows [r0, r1) (whole groups) of image nb at every position of the map,
 * whose words fill_band has laid out (one band). */
LJ_INLINE void mconv_unit(const PConv *p, int64_t nb, int64_t r0, int64_t r1, const uint32_t *buf,
                          const int64_t *toff, const PBlock *blocks) {
    const LjQConv *g = &p->g;
    int64_t ow = g->odims[1], n = g->out_size;
    bool m7 = mconv_7x3(n, r0, r1);
    int64_t mp = m7 ? 7 : 6, mv = m7 ? 3 : 4;
    for (int64_t m0 = r0; m0 < r1; m0 += mv * QPACK_ROWS_VEC) {
        MRows mr = {.m0 = m0, .fused = true};
        mr.nmv = (r1 - m0) / QPACK_ROWS_VEC < mv ? (r1 - m0) / QPACK_ROWS_VEC : mv;
        for (int64_t v = 0; v < mv; v++) {
            int64_t m1 = v < mr.nmv ? m0 + v * QPACK_ROWS_VEC : m0; /* its first row */
            mr.w[v] = (const uint32_t *)g->w + m1 / p->wg * p->wg * p->taps * p->c4 + m1 % p->wg;
            int32_t bias[16];
            float mult[16];
            for (int i = 0; i < 16; i++) {
                const PBlock *b = &blocks[(m1 + i) / PMR];
                bias[i] = b->bias[i % PMR];
                mult[i] = b->mult[i % PMR];
                mr.fused &= b->fused || v >= mr.nmv;
            }
            __builtin_memcpy(&mr.bias[v], bias, sizeof bias);
            __builtin_memcpy(&mr.mult[v], mult, sizeof mult);
        }
        for (int64_t v = 0; v < mv && !mr.fused; v++) /* a fused block's rows keep theirs */
            mr.bias[v] = (v16i){0};
        for (int64_t pos0 = 0; pos0 < n; pos0 += mp) {
            int64_t np = n - pos0 < mp ? n - pos0 : mp, off[MP_MAX];
            for (int64_t j = 0; j < mp; j++) {
                int64_t i = pos0 + (j < np ? j : np - 1);
                off[j] = i / ow * p->wq + i % ow;
            }
            if (m7)
                mtile_7x3(p, &mr, buf, toff, off, nb, pos0, np);
            else
                mtile_6x4(p, &mr, buf, toff, off, nb, pos0, np);
        }
    }
}
#endif

#if defined(__aarch64__)
/* AArch64's dot product extension (dotprod: Armv8.2-A and later, every
 * Neoverse): sdot adds four s8 x s8 products to each i32 lane, sixteen in
 * a q register, and its by-element form takes the weight word from a lane
 * of another register -- one 16-byte read is a block's four row words.
 * sdot's activations are signed: pconv flips the band's shift (sh ^ 128,
 * so the band holds x + sh - 128 as s8), and psdot_bias puts the 128 *
 * (row's weight sum) that takes away back into each row's bias; the i32
 * sums wrap exactly as vpdpbusd's, so they end where the plain path's do.
 * Called with the module's features only when they have dotprod
 * (libjit_*_sdot_*, codegen.c); not always-inline for the reason PVNNI's
 * are not. */
#include <arm_neon.h>
#define PSDOT static __attribute__((target("dotprod")))

/* Each row's weight sum times 128, added to its bias (wrapping: the sums
 * that start from it wrap back). Block mb's four rows inside their group
 * of wg (core/qpack.h), as pconv_unit finds them. */
PSDOT void psdot_bias(const PConv *p, PBlock *blocks) {
    const uint32_t *w = (const uint32_t *)p->g.w;
    int64_t n = p->taps * p->c4;
    for (int64_t mb = 0; mb < p->m4; mb++) {
        const uint32_t *wb = w + mb * PMR / p->wg * p->wg * n + mb * PMR % p->wg;
        int32x4_t s = vdupq_n_s32(0);
        for (int64_t k = 0; k < n; k++)
            s = vdotq_s32(s, vld1q_s8((const int8_t *)(wb + k * p->wg)), vdupq_n_s8(1));
        int32_t sum[PMR];
        vst1q_s32(sum, s);
        for (int r = 0; r < PMR; r++)
            blocks[mb].bias[r] = (int32_t)((uint32_t)blocks[mb].bias[r] + 128u * (uint32_t)sum[r]);
    }
}

/* pq_requant's one f32 fma on four lanes, then saturated to 16 bits. */
PSDOT int16x4_t psdot_requant(int32x4_t a, float mult, int32_t zadj) {
    a = vminq_s32(vmaxq_s32(a, vdupq_n_s32(-PQ_CLAMP)), vdupq_n_s32(PQ_CLAMP));
    float32x4_t f = vfmaq_f32(vdupq_n_f32(PQ_MAGIC), vcvtq_f32_s32(a), vdupq_n_f32(mult));
    return vqmovn_s32(vsubq_s32(vreinterpretq_s32_f32(f), vdupq_n_s32(zadj)));
}

/* Sixteen positions of one row requantized into q (saturated to y's kind). */
PSDOT void psdot_bytes(const PDest *d, float mult, int32x4_t s0, int32x4_t s1, int32x4_t s2,
                       int32x4_t s3, uint8_t *q) {
    int16x8_t lo = vcombine_s16(psdot_requant(s0, mult, d->zadj), psdot_requant(s1, mult, d->zadj));
    int16x8_t hi = vcombine_s16(psdot_requant(s2, mult, d->zadj), psdot_requant(s3, mult, d->zadj));
    if (d->i8)
        vst1q_s8((int8_t *)q, vcombine_s8(vqmovn_s16(lo), vqmovn_s16(hi)));
    else
        vst1q_u8(q, vcombine_u8(vqmovun_s16(lo), vqmovun_s16(hi)));
}

/* A tile sixteen positions at a time: 4 rows x 4 q registers of sums, the
 * positions' 4 and the block's weights beside them (21 of 32 registers;
 * the x86 tile's 64 positions would spill here). The weights are read again
 * for every sixteen positions, one load per 16 sdot. Sums go to acc, or
 * (dst) are requantized into q and each run of the tile copied out. */
#define SD_DECL(r) a##r##0 = vdupq_n_s32(blk->bias[r]), a##r##1 = a##r##0, a##r##2 = a##r##0, \
                   a##r##3 = a##r##0
#define SD_ROW(r)                                                                                 \
    a##r##0 = vdotq_laneq_s32(a##r##0, x0, w, r), a##r##1 = vdotq_laneq_s32(a##r##1, x1, w, r),   \
    a##r##2 = vdotq_laneq_s32(a##r##2, x2, w, r), a##r##3 = vdotq_laneq_s32(a##r##3, x3, w, r)
#define SD_SAVE(r)                                                                                \
    if (dst)                                                                                      \
        psdot_bytes(dst, blk->mult[r], a##r##0, a##r##1, a##r##2, a##r##3, q[r] + 16 * v);        \
    else {                                                                                        \
        int32_t *o = (int32_t *)&acc[r][v];                                                       \
        vst1q_s32(o, a##r##0), vst1q_s32(o + 4, a##r##1), vst1q_s32(o + 8, a##r##2),              \
            vst1q_s32(o + 12, a##r##3);                                                           \
    }
PSDOT void ptile_sdot(int nv, PTILE_ARGS) {
    uint8_t q[PMR][PT];
    for (int v = 0; v < nv; v++) {
        int32x4_t SD_DECL(0), SD_DECL(1), SD_DECL(2), SD_DECL(3);
        for (int64_t t = 0; t < taps; t++) {
            const int8_t *xt = (const int8_t *)(xb + toff[t] + PV * v);
            const int8_t *wt = (const int8_t *)(wb + t * c4 * wg);
            for (int64_t c = 0; c < c4; c++, xt += 4 * cstride, wt += 4 * wg) {
                int8x16_t x0 = vld1q_s8(xt), x1 = vld1q_s8(xt + 16), x2 = vld1q_s8(xt + 32),
                          x3 = vld1q_s8(xt + 48), w = vld1q_s8(wt);
                SD_ROW(0), SD_ROW(1), SD_ROW(2), SD_ROW(3);
            }
        }
        SD_SAVE(0) SD_SAVE(1) SD_SAVE(2) SD_SAVE(3)
    }
    for (int r = 0; r < PMR && dst; r++)
        for (int i = 0; i < dst->ru->n; i++)
            __builtin_memcpy(dst->y[r] + dst->ru->at[i], q[r] + dst->ru->t[i],
                             (size_t)dst->ru->len[i]);
}
#endif

/* One tile of nv vectors of the kind's body; the sums of the lanes beyond
 * are 0. */
#define PTILE_CALL(KIND)                                                                           \
    switch (nv) {                                                                                  \
    case 4: ptile_##KIND##_4(xb, wb, wg, toff, taps, c4, cstride, blk, dst, acc); break;             \
    case 3: ptile_##KIND##_3(xb, wb, wg, toff, taps, c4, cstride, blk, dst, acc); break;             \
    case 2: ptile_##KIND##_2(xb, wb, wg, toff, taps, c4, cstride, blk, dst, acc); break;             \
    default: ptile_##KIND##_1(xb, wb, wg, toff, taps, c4, cstride, blk, dst, acc); break;             \
    }
LJ_INLINE void ptile(bool vnni, int nv, const uint32_t *xb, const uint32_t *wb, int64_t wg, const int64_t *toff,
                     int64_t taps, int64_t c4, int64_t cstride, const PBlock *blk, const PDest *dst,
                     v16i acc[PMR][PNV]) {
    for (int r = 0; r < PMR && !dst; r++)
        for (int v = nv; v < PNV; v++)
            acc[r][v] = (v16i){0};
#if defined(__x86_64__)
    if (vnni) {
        PTILE_CALL(vnni)
        return;
    }
#elif defined(__aarch64__)
    if (vnni) { /* sdot */
        ptile_sdot(nv, xb, wb, wg, toff, taps, c4, cstride, blk, dst, acc);
        return;
    }
#endif
    PTILE_CALL(plain)
}

/* ---- one unit: a band of one image, all (or half) the row blocks ------------------------ */

LJ_INLINE void tile_runs(const PConv *p, int64_t oh0, int64_t np, int64_t p0, Runs *ru) {
    int64_t ow = p->g.odims[1], r = p0 / p->wq, c = p0 % p->wq;
    ru->n = 0;
    for (int64_t t = 0; t < PT && p0 + t < np;) {
        int64_t run = p->wq - c;
        run = run < PT - t ? run : PT - t;
        run = run < np - p0 - t ? run : np - p0 - t;
        int64_t prev = ru->n - 1;
        if (c < ow && prev >= 0 && ru->t[prev] + ru->len[prev] == t &&
            ru->at[prev] + ru->len[prev] == (oh0 + r) * ow + c) /* rows of a pointwise conv */
            ru->len[prev] += ow - c < run ? ow - c : run;
        else if (c < ow) {
            ru->t[ru->n] = t;
            ru->len[ru->n] = ow - c < run ? ow - c : run;
            ru->at[ru->n++] = (oh0 + r) * ow + c;
        }
        t += run;
        r++;
        c = 0;
    }
    for (int i = 0; i < ru->n; i++) {
        ru->off[i] = ru->at[i] - ru->t[i];
        ru->mask[i] = (ru->len[i] == PT ? ~0ull : (1ull << ru->len[i]) - 1) << ru->t[i];
    }
}

/* Row m's sums of a tile: requantized (lj_qrequant_row, the interpreter's
 * rounding), the runs that are output positions copied out. */
LJ_INLINE void pstore_row(const PConv *p, int64_t nb, int64_t m, const Runs *ru,
                          const int32_t *acc) {
    const LjQConv *g = &p->g;
    uint8_t *y = (uint8_t *)g->y + (nb * g->cout + m) * g->out_size;
    uint8_t q[PT];
    bool direct = ru->n == 1 && ru->t[0] == 0; /* one run from lane 0: straight to y */
    lj_qrequant_row(g->ey, direct ? y + ru->at[0] : q, acc, acc, 0, lj_ld_i64(g->ebias, g->bias, m),
                    (double)lj_qconv_mult(g, m), (double)g->yz, direct ? ru->len[0] : PT);
    for (int i = 0; i < ru->n && !direct; i++)
        __builtin_memcpy(y + ru->at[i], q + ru->t[i], (size_t)ru->len[i]);
}

/* The vectors of the next tile when rv are left: whole tiles while two or
 * more remain, then the rest in two halves (14x14's 13 vectors as 4, 4, 3,
 * 2, not 4, 4, 4, 1): a tile of one vector has only four independent sums,
 * too few to hide vpdpbusd's latency (it took 9% of a 1024-channel 1x1
 * conv on 14x14 for 2% of its products, perf). */
LJ_INLINE int64_t pconv_tile_vectors(int64_t rv) {
    return rv >= 2 * PNV ? PNV : rv > PNV ? (rv + 1) / 2 : rv;
}

/* Where part h of msplit parts of n rows (blocks or groups) begins. */
LJ_INLINE int64_t pconv_part(const PConv *p, int64_t n, int64_t h) {
    return h == p->msplit ? n : h * (n / p->msplit);
}

/* Parts [h0, h1) of the rows of band b of image nb: one unit (h1 = h0 + 1),
 * or every part of the band when one call holds all its units, so that
 * the band's words are filled once for all its rows, not once a part. */
LJ_INLINE void pconv_unit(const PConv *p, int64_t nb, int64_t b, int64_t h0, int64_t h1, bool vnni,
                          uint32_t *buf, const int64_t *toff, const PBlock *blocks, LjScratch *sc) {
    const LjQConv *g = &p->g;
    int64_t blo = pconv_part(p, p->m4, h0), bhi = pconv_part(p, p->m4, h1);
    /* rows [oh0, oh1) as flattened positions [lo, np) of the band's words;
     * pointwise: tiles of the whole map */
    int64_t oh = g->odims[0], oh0 = b * oh / p->bands, oh1 = (b + 1) * oh / p->bands;
    int64_t lo = 0, np = (oh1 - oh0) * p->wq;
    if (p->pw) {
        oh0 = 0;
        lo = b * p->tiles / p->bands * PT;
        np = (b + 1) * p->tiles / p->bands * PT;
        np = np < g->out_size ? np : g->out_size;
    } else if (!lj_scratch_built(sc, nb * p->bands + b))
        fill_band(p, nb, oh0, 0, buf); /* once for both halves' pieces (two threads) */
#if defined(__x86_64__)
    if (p->ml && vnni) { /* the same halves of the rows, in whole groups */
        int64_t ng = g->cout / QPACK_ROWS_VEC, glo = pconv_part(p, ng, h0);
        int64_t ghi = pconv_part(p, ng, h1);
        mconv_unit(p, nb, glo * QPACK_ROWS_VEC, ghi * QPACK_ROWS_VEC, buf, toff, blocks);
        return;
    }
#endif
    const uint32_t *w = (const uint32_t *)g->w;
    for (int64_t p0 = lo, nv; p0 < np; p0 += nv * PV) {
        nv = pconv_tile_vectors((np - p0 + PV - 1) / PV);
        Runs ru;
        tile_runs(p, oh0, np - p0 < nv * PV ? np : p0 + nv * PV, p0, &ru);
        if (p->pw)
            fill_band(p, nb, 0, p0, buf);
        const uint32_t *xb = p->pw ? buf : buf + p0;
        PDest dst = {.ru = &ru, .zadj = PQ_MAGIC_BITS - (int32_t)g->yz, .i8 = g->ey == ELEM_I8};
        for (int64_t mb = blo; mb < bhi; mb++) {
            /* block mb's four rows inside their group of wg (core/qpack.h) */
            const uint32_t *wb = w + mb * PMR / p->wg * p->wg * p->taps * p->c4 + mb * PMR % p->wg;
            const PBlock *blk = &blocks[mb];
            for (int r = 0; r < PMR; r++)
                dst.y[r] = (uint8_t *)g->y + (nb * g->cout + mb * PMR + r) * g->out_size;
            v16i acc[PMR][PNV];
            ptile(vnni, (int)nv, xb, wb, p->wg, toff, p->taps, p->c4, p->xstride, blk, blk->fused ? &dst : NULL,
                  acc);
            for (int r = 0; r < PMR && !blk->fused; r++)
                pstore_row(p, nb, mb * PMR + r, &ru, (const int32_t *)acc[r]);
        }
    }
}

/* ---- entry points ------------------------------------------------------------------------ */

/* The band's words, then each tap's offset into them, then the row blocks. */
LJ_INLINE int64_t pconv_scratch(const int64_t *d, int slot) {
    if (slot != LJ_SCRATCH_PACK)
        return 0;
    PConv p = pconv_of(d, NULL);
    return p.buf_words * 4 + p.taps * 8 + p.m4 * (int64_t)sizeof(PBlock);
}

/* Each row block's bias and multipliers, and whether the tile requantizes
 * it (VNNI tiles only: the plain ones keep the double path). */
LJ_INLINE void pconv_blocks(const PConv *p, bool vnni, PBlock *blocks) {
    const LjQConv *g = &p->g;
    int64_t k = p->c4 * 4 * p->taps;
    for (int64_t mb = 0; mb < p->m4; mb++) {
        PBlock *b = &blocks[mb];
        b->fused = vnni;
        for (int r = 0; r < PMR; r++) {
            int64_t bias = lj_ld_i64(g->ebias, g->bias, mb * PMR + r);
            b->mult[r] = lj_qconv_mult(g, mb * PMR + r);
            b->bias[r] = (int32_t)bias;
            b->fused &= pq_fused(b->mult[r], bias, k);
        }
        for (int r = 0; r < PMR && !b->fused; r++)
            b->bias[r] = 0; /* pstore_row adds it */
    }
}

/* Each tap's offset into the band's words: its phase plane, then its rows
 * and columns there. */
LJ_INLINE void pconv_offsets(const PConv *p, int64_t *toff) {
    for (int64_t i = 0; i < p->kh; i++)
        for (int64_t j = 0; j < p->kw; j++) {
            int64_t ph = p->phy[i * p->dy % p->sy] * p->npx + p->phx[j * p->dx % p->sx];
            toff[i * p->kw + j] = ph * p->plane + i * p->dy / p->sy * p->wq + j * p->dx / p->sx;
        }
}

LJ_INLINE void pconv(const int64_t *d, void *const *ops, int64_t lo, int64_t hi, LjScratch *sc,
                     bool vnni) {
    PConv p = pconv_of(d, ops);
    uint32_t *buf = lj_scratch_get(sc, LJ_SCRATCH_PACK, (size_t)pconv_scratch(d, LJ_SCRATCH_PACK));
    if (!buf) /* out of memory: results left as they were (no other form reads these weights) */
        return;
    int64_t *toff = (int64_t *)(buf + p.buf_words);
    PBlock *blocks = (PBlock *)(toff + p.taps);
    pconv_offsets(&p, toff);
    pconv_blocks(&p, vnni, blocks);
#if defined(__aarch64__)
    if (vnni) { /* sdot: signed activations (psdot_bias says how) */
        psdot_bias(&p, blocks);
        p.sh ^= 128;
    }
#endif
    for (int64_t u = lo; u < hi;) {
        int64_t h = u % p.msplit, band = u / p.msplit, n = h == 0 && hi - u >= p.msplit ? p.msplit : 1;
        pconv_unit(&p, band / p.bands, band % p.bands, h, h + n, vnni, buf, toff, blocks, sc);
        u += n;
    }
    lj_scratch_put(sc, buf);
}

LJ_INLINE int64_t pconv_work(const int64_t *d) {
    PConv p = pconv_of(d, NULL);
    return pconv_units(&p) > 0 ? pconv_units(&p) : 1;
}

LJ_INLINE void pconv_plain(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                           LjScratch *sc) {
    pconv(d, ops, lo, hi, sc, false);
}

LJ_INLINE void pconv_dot(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                         LjScratch *sc) {
    pconv(d, ops, lo, hi, sc, true);
}

/* A form's three entry points: its scratch and its kernel named by SCRATCH
 * and RUN (the units are the same for all). */
#define PCONV_ENTRIES(E, SUFFIX, SCRATCH, RUN)                                                    \
    LIBJIT_WORK libjit_qconv_packed##SUFFIX##_##E##_work(const int64_t *d) {                      \
        return pconv_work(d);                                                                     \
    }                                                                                             \
    LIBJIT_SCRATCH libjit_qconv_packed##SUFFIX##_##E##_scratch(const int64_t *d, int slot) {      \
        return SCRATCH(d, slot);                                                                  \
    }                                                                                             \
    LIBJIT_KERNEL libjit_qconv_packed##SUFFIX##_##E(const int64_t *d, void *const *ops,           \
                                                   int64_t lo, int64_t hi, LjScratch *sc) {       \
        RUN(d, ops, lo, hi, sc);                                                                  \
    }
PCONV_ENTRIES(i8, , pconv_scratch, pconv_plain)
PCONV_ENTRIES(u8, , pconv_scratch, pconv_plain)
#if defined(__x86_64__)
/* ---- AMX: output channels by positions, 16 x 16 at a time -------------------------------- *
 *
 * Intel's AMX (Sapphire Rapids and later) multiplies tiles held in eight
 * 1 KB tile registers: tdpbusd adds to a 16 x 16 tile of i32 sums the
 * products of a 16 x 64-byte u8 tile A and a 16 x 64-byte s8 tile B
 * (B's row k holds, for each of 16 columns, the 4 bytes of K steps 4k..4k+3:
 * vpdpbusd's words), 16384 multiply-adds an instruction. Measured here
 * (Xeon, one core): 7.4 TOP/s against vpdpbusd's 0.96.
 *
 * The by-lanes packing (core/qpack.h, G = 16 or 64) is already B's layout:
 * a (tap, channel group)'s 16 rows are one 64-byte word row, and 16 groups
 * of a tap are 16 such rows, G * 4 bytes apart (rows packed in fours are
 * regrouped so, per call: aconv_regroup). A is the band transposed:
 * xa[flattened position][channel], so 16 positions by 64 channels at a
 * tap's offset are 16 rows Cp bytes apart. C is then 16 positions by 16
 * output channels, requantized a position (16 channels in the lanes) at a
 * time, as mstore_fused does, and stored transposed into the NCHW output.
 * Four C tiles (two A by two B) per step: 32 positions by 32 channels.
 * Strides and dilations as the band's phase planes give them (xa holds
 * every plane's positions; a tap reads its plane at a fixed offset).
 * Results are vpdpbusd's exactly (i32 sums of the same products). */
#define PAMX_TARGET target("avx512f,avx512bw,avx512vnni,evex512,amx-tile,amx-int8"), min_vector_width(512)
#define PAMX static __attribute__((PAMX_TARGET)) void
#define PAMX_INLINE static inline __attribute__((always_inline, PAMX_TARGET))

enum { AQ = 32 }; /* positions a step (two A tiles) */

LJ_INLINE bool aconv_fits(const PConv *p) {
    if (p->c4 % 16 || p->g.cout % QPACK_ROWS_VEC)
        return false;
    /* By rows of four (position tiles): 3x3s and wider (1x1s on large
     * maps measured slower than the VNNI tiles: their band's transpose and
     * stores cost more than their few products), each half of the rows
     * whole groups of 16. */
    return p->ml || (!p->pw && p->taps > 1 && (p->m4 / p->msplit) % 4 == 0);
}

/* Flattened output positions computed for a band of `rows` rows (rows of
 * wq, whole steps) and the positions xa holds: every phase plane's (a tap
 * offset is inside them), then as many as the steps read past one. */
LJ_INLINE int64_t aconv_steps(const PConv *p, int64_t rows) {
    return (rows * p->wq + AQ - 1) / AQ;
}
LJ_INLINE int64_t aconv_xa_bytes(const PConv *p) {
    return (p->cstride + aconv_steps(p, p->rows) * AQ) * p->c4 * 4;
}

/* The weights of rows in fours (core/qpack.h, G = 4) as groups of 16
 * (G = 16) for rows [r0, r1): 16-byte blocks of four rows moved to their
 * place in 64-byte rows, about a microsecond per 64 KB of weights. */
LJ_INLINE void aconv_regroup(const PConv *p, int64_t r0, int64_t r1, uint8_t *out) {
    const uint8_t *w = (const uint8_t *)p->g.w;
    int64_t steps = p->taps * p->c4;
    for (int64_t m = r0; m < r1; m += QPACK_ROWS_MIN) {
        const uint8_t *src = w + m / QPACK_ROWS_MIN * steps * 16;
        uint8_t *dst = out + ((m - r0) / 16 * steps * 16 + (m - r0) % 16) * 4;
        for (int64_t k = 0; k < steps; k++)
            __builtin_memcpy(dst + k * 64, src + k * 16, 16);
    }
}

/* xa from the band's words (fill_band: [channel group][position]), the
 * positions past the plane zero (they feed only positions not stored). */
LJ_INLINE void aconv_transpose(const PConv *p, const uint32_t *buf, uint32_t *xa) {
    int64_t npos = aconv_xa_bytes(p) / (p->c4 * 4), plane = p->cstride; /* the phase planes */
    for (int64_t q = 0; q < npos; q++) {
        uint32_t *row = xa + q * p->c4;
        if (q >= plane) {
            memset(row, 0, (size_t)p->c4 * 4);
            continue;
        }
        for (int64_t c = 0; c < p->c4; c++)
            row[c] = buf[c * p->cstride + q];
    }
}

/* Where a band's C tiles go: image nb, output rows [oh0, oh0 + rows). */
typedef struct ABand {
    int64_t nb, oh0, rows;
} ABand;

/* One C tile's sums (16 positions from q0 of the band, 16 channels from
 * m) stored: bias, requantization and saturation per lane where the rows'
 * blocks allow it (pq_fused), else lj_qconv_store's double path. */
PAMX_INLINE void aconv_store(const PConv *p, const PBlock *blocks, const ABand *b, int64_t m,
                             int64_t q0, const int32_t *sums) {
    const LjQConv *g = &p->g;
    int64_t ow = g->odims[1];
    int32_t bias[16];
    float mult[16];
    bool fused = true;
    for (int i = 0; i < 16; i++) {
        const PBlock *k = &blocks[(m + i) / PMR];
        bias[i] = k->bias[i % PMR];
        mult[i] = k->mult[i % PMR];
        fused &= k->fused;
    }
    v16i vb;
    v16f vm;
    __builtin_memcpy(&vb, bias, sizeof vb);
    __builtin_memcpy(&vm, mult, sizeof vm);
    int32_t lo = g->ey == ELEM_I8 ? -128 : 0, hi = g->ey == ELEM_I8 ? 127 : 255;
    int32_t zadj = PQ_MAGIC_BITS - (int32_t)g->yz;
    int64_t plane0 = (b->nb * g->cout + m) * g->out_size;
    uint8_t *y = (uint8_t *)g->y + plane0;
    for (int j = 0; j < 16; j++) {
        int64_t q = q0 + j, r = q / p->wq, c = q % p->wq;
        if (r >= b->rows || c >= ow)
            continue;
        int64_t at = (b->oh0 + r) * ow + c;
        v16i a;
        __builtin_memcpy(&a, sums + 16 * j, sizeof a);
        if (!fused) {
            int32_t v[16];
            __builtin_memcpy(v, &a, sizeof v);
            for (int i = 0; i < 16; i++)
                lj_qconv_store(g, plane0 + i * g->out_size + at, m + i, v[i]);
            continue;
        }
        v16i qv = pq_requant_lanes(a + vb, vm, zadj);
        qv = __builtin_elementwise_min(__builtin_elementwise_max(qv, (v16i){0} + lo), (v16i){0} + hi);
        int32_t v[16];
        __builtin_memcpy(v, &qv, sizeof v);
        for (int i = 0; i < 16; i++)
            y[i * g->out_size + at] = (uint8_t)v[i];
    }
}

typedef struct ATileCfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} ATileCfg;

/* Output channels [r0, r1) (whole groups of 16) at every position of the
 * band, from xa; row m's weights in groups of wg rows from w, which holds
 * rows from m_base. */
PAMX aconv_rows(const PConv *p, const PBlock *blocks, const ABand *b, int64_t r0, int64_t r1,
                const uint8_t *xa, const int64_t *toff, const uint8_t *w, int64_t wg,
                int64_t m_base) {
    ATileCfg cfg = {.palette = 1};
    for (int t = 0; t < 8; t++)
        cfg.colsb[t] = 64, cfg.rows[t] = 16;
    __builtin_ia32_tile_loadconfig(&cfg);
    int64_t cp = p->c4 * 4, kb = p->c4 / 16, wstride = wg * 4, steps = aconv_steps(p, b->rows);
    int32_t sums[4][256] __attribute__((aligned(64)));
#define AW(m) (w + (((m) - m_base) / wg * wg * p->taps * p->c4 + ((m) - m_base) % wg) * 4)
    for (int64_t m0 = r0; m0 < r1; m0 += 2 * QPACK_ROWS_VEC) {
        int64_t m1 = m0 + QPACK_ROWS_VEC < r1 ? m0 + QPACK_ROWS_VEC : m0; /* an odd group twice */
        const uint8_t *w0 = AW(m0), *w1 = AW(m1);
        /* the next block's weights, fetched during this one's first step */
        int64_t n0 = m0 + 2 * QPACK_ROWS_VEC < r1 ? m0 + 2 * QPACK_ROWS_VEC : m0;
        int64_t n1 = n0 + QPACK_ROWS_VEC < r1 ? n0 + QPACK_ROWS_VEC : n0;
        const uint8_t *f0 = AW(n0), *f1 = AW(n1);
        for (int64_t s = 0; s < steps; s++) {
            int64_t q0 = s * AQ;
            __builtin_ia32_tilezero(0);
            __builtin_ia32_tilezero(1);
            __builtin_ia32_tilezero(2);
            __builtin_ia32_tilezero(3);
            for (int64_t t = 0; t < p->taps; t++) {
                const uint8_t *a = xa + (q0 + toff[t]) * cp;
                for (int64_t k = 0; k < kb; k++) {
                    int64_t wo = (t * p->c4 + 16 * k) * wstride;
                    __builtin_ia32_tileloadd64(4, a + 64 * k, cp);
                    __builtin_ia32_tileloadd64(5, a + 16 * cp + 64 * k, cp);
                    __builtin_ia32_tileloadd64(6, w0 + wo, wstride);
                    __builtin_ia32_tileloadd64(7, w1 + wo, wstride);
                    __builtin_ia32_tdpbusd(0, 4, 6);
                    __builtin_ia32_tdpbusd(1, 4, 7);
                    __builtin_ia32_tdpbusd(2, 5, 6);
                    __builtin_ia32_tdpbusd(3, 5, 7);
                    if (s == 0 && n0 != m0)
                        for (int r = 0; r < 16; r++) {
                            __builtin_prefetch(f0 + wo + r * wstride);
                            __builtin_prefetch(f1 + wo + r * wstride);
                        }
                }
            }
            __builtin_ia32_tilestored64(0, sums[0], 64);
            __builtin_ia32_tilestored64(1, sums[1], 64);
            __builtin_ia32_tilestored64(2, sums[2], 64);
            __builtin_ia32_tilestored64(3, sums[3], 64);
            aconv_store(p, blocks, b, m0, q0, sums[0]);
            aconv_store(p, blocks, b, m0, q0 + 16, sums[2]);
            if (m1 != m0) {
                aconv_store(p, blocks, b, m1, q0, sums[1]);
                aconv_store(p, blocks, b, m1, q0 + 16, sums[3]);
            }
        }
    }
#undef AW
    __builtin_ia32_tilerelease();
}

/* The VNNI kernel's scratch, then xa (64-byte aligned), then (rows in
 * fours) the weights regrouped. */
LJ_INLINE int64_t aconv_scratch(const int64_t *d, int slot) {
    int64_t n = pconv_scratch(d, slot);
    PConv p = pconv_of(d, NULL);
    if (slot != LJ_SCRATCH_PACK || !aconv_fits(&p))
        return n;
    int64_t regroup = p.ml ? 0 : p.g.cout * p.taps * p.c4 * 4;
    return (n + 63) / 64 * 64 + aconv_xa_bytes(&p) + regroup;
}

/* Linux gives a process the AMX state only when asked (arch_prctl
 * ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, every thread after); asked
 * at every call (a system call, about a microsecond), so that nothing is
 * kept between calls. Refused (an older kernel), the VNNI kernel runs. */
LJ_INLINE bool aconv_allowed(void) {
    return syscall(158 /* SYS_arch_prctl */, 0x1023, 18) == 0;
}

LJ_INLINE void aconv(const int64_t *d, void *const *ops, int64_t lo, int64_t hi, LjScratch *sc) {
    PConv p = pconv_of(d, ops);
    if (!aconv_fits(&p) || !aconv_allowed()) {
        pconv(d, ops, lo, hi, sc, true);
        return;
    }
    int64_t words = pconv_scratch(d, LJ_SCRATCH_PACK);
    uint32_t *buf = lj_scratch_get(sc, LJ_SCRATCH_PACK, (size_t)aconv_scratch(d, LJ_SCRATCH_PACK));
    if (!buf) /* out of memory: results left as they were */
        return;
    int64_t *toff = (int64_t *)(buf + p.buf_words);
    PBlock *blocks = (PBlock *)(toff + p.taps);
    pconv_offsets(&p, toff); /* xa's positions are the band's words' */
    pconv_blocks(&p, true, blocks);
    uint8_t *xa = (uint8_t *)buf + (words + 63) / 64 * 64, *wr = xa + aconv_xa_bytes(&p);
    int64_t ng = p.g.cout / QPACK_ROWS_VEC, regrouped = -1, oh = p.g.odims[0];
    for (int64_t u = lo; u < hi; u++) {
        int64_t h = u % p.msplit, band = u / p.msplit, nb = band / p.bands, bi = band % p.bands;
        ABand b = {.nb = nb, .oh0 = bi * oh / p.bands};
        b.rows = (bi + 1) * oh / p.bands - b.oh0;
        if (!lj_scratch_built(sc, band)) {
            fill_band(&p, nb, b.oh0, 0, buf);
            aconv_transpose(&p, buf, (uint32_t *)xa);
        }
        int64_t r0 = pconv_part(&p, ng, h) * QPACK_ROWS_VEC, r1 = pconv_part(&p, ng, h + 1) * QPACK_ROWS_VEC;
        if (p.ml) {
            aconv_rows(&p, blocks, &b, r0, r1, xa, toff, (const uint8_t *)p.g.w, p.wg, 0);
            continue;
        }
        /* rows in fours: this part's rows regrouped once a call */
        r0 = pconv_part(&p, p.m4, h) * PMR, r1 = pconv_part(&p, p.m4, h + 1) * PMR;
        if (regrouped != h) {
            aconv_regroup(&p, r0, r1, wr);
            regrouped = h;
        }
        aconv_rows(&p, blocks, &b, r0, r1, xa, toff, wr, QPACK_ROWS_VEC, r0);
    }
    lj_scratch_put(sc, buf);
}

PCONV_ENTRIES(i8, _amx, aconv_scratch, aconv)
PCONV_ENTRIES(u8, _amx, aconv_scratch, aconv)
PCONV_ENTRIES(i8, _vnni, pconv_scratch, pconv_dot)
PCONV_ENTRIES(u8, _vnni, pconv_scratch, pconv_dot)
#elif defined(__aarch64__)
PCONV_ENTRIES(i8, _sdot, pconv_scratch, pconv_dot)
PCONV_ENTRIES(u8, _sdot, pconv_scratch, pconv_dot)
#endif
