/* Depthwise convolution in NCHW, one channel plane at a time, vectors along
 * the output rows.
 *
 * A plane is first copied into phase rows: padded input row r split by the
 * column residue modulo the stride,
 *     P[r][p][m] = x[r - ph][m*sw + p - pw]   (0 outside the input),
 * so that tap (i, j) of the outputs ox .. ox+15 of output row oy is one
 * contiguous load, P[oy*sh + i*dh][(j*dw) % sw][ox + (j*dw) / sw .. +15],
 * for any stride, pad and dilation, with no edge tests. The buffer is zeroed
 * once per call and only the inside of the input is copied per plane, so the
 * padding costs nothing after the first plane.
 *
 * The outputs are computed in tiles of R rows by C vectors of LJ_VL (R*C
 * accumulators, enough to cover the multiply-add latency even on 7- and
 * 14-wide maps, where one row is one vector), every tap's weight
 * broadcast once for the tile. A vector that ends past its row is stored
 * whole -- the next row's store, which comes later, overwrites what spilled
 * -- except where it would leave the plane, the next plane being another
 * thread's. This replaced a channels-in-lanes kernel that transposed every
 * block of LJ_VL channels in and out (3-4x slower on MobileNet's layers). */
#include <stdlib.h>

#include "backends/cpu/libjit/window.h"

enum { RMAX = 8, CMAX = 8 };

/* The tile's loops unroll whole where R and C are constants (dw_tile_any's
 * copies), so that acc[][] lives in registers. */
#pragma clang diagnostic ignored "-Wpass-failed" /* not unrolled yet: as intended */
#define DW_LOOP_R _Pragma("clang loop unroll(full)") for (int64_t r = 0; r < R; r++)
#define DW_LOOP_C _Pragma("clang loop unroll(full)") for (int64_t c = 0; c < C; c++)

typedef struct DwPlan {
    LjWindow g;
    int64_t rows;   /* padded input rows the outputs read */
    int64_t pwidth; /* floats per phase row */
    int64_t c;      /* vectors per output row */
    int64_t r;      /* output rows per tile (dw_plane) */
    int64_t rs;     /* floats from one output row's phase rows to the next's */
} DwPlan;

LJ_INLINE DwPlan dw_plan(const LjWindow *g) {
    DwPlan p;
    p.g = *g;
    p.rows = (g->oh - 1) * g->sh + (g->kh - 1) * g->dh + 1;
    p.c = (g->ow + LJ_VL - 1) / LJ_VL;
    int64_t reach = p.c * LJ_VL + (g->kw - 1) * g->dw / g->sw;
    p.pwidth = (reach + LJ_VL - 1) / LJ_VL * LJ_VL;
    p.r = p.c <= CMAX ? RMAX / p.c : 1;
    p.rs = g->sh * g->sw * p.pwidth;
    return p;
}

LJ_INLINE float *phase_row(const DwPlan *p, float *buf, int64_t r, int64_t ph) {
    return buf + (r * p->g.sw + ph) * p->pwidth;
}

/* The end of a short row is copied a vector at a time (lj_first): the
 * lanes past the row read the next row (still inside the plane) and become
 * the right padding's zeros, which they overwrite in the phase row. One
 * float at a time, the copy of 14- and 28-wide rows cost stride-2 layers
 * more than their taps. */

/* The inside of plane x into the phase rows (the rest stays 0), phase ph
 * of every row: its columns [m0, m1) are inside the input. Phase by phase,
 * so that the bounds (two divisions by the stride) are found once per
 * phase and plane rather than per row: the window is not a constant here,
 * and on 7x7 maps those divisions cost more than the taps. */
LJ_INLINE void dw_fill_phase(const DwPlan *p, const float *x, float *buf, int64_t ph) {
    const LjWindow *g = &p->g;
    /* m*sw + ph - pw in [0, w), m < pwidth (no division at stride 1) */
    int64_t sw = g->sw, first = g->pw - ph;
    int64_t m0 = first <= 0 ? 0 : sw == 1 ? first : (first + sw - 1) / sw;
    int64_t m1 = sw == 1 ? g->w + g->pw : (g->w + g->pw - ph + sw - 1) / sw;
    m1 = m1 < p->pwidth ? m1 : p->pwidth;
    int64_t y0 = g->ph > 0 ? g->ph : 0, y1 = g->h + g->ph < p->rows ? g->h + g->ph : p->rows;
    for (int64_t r = y0; r < y1; r++) {
        const float *src = x + (r - g->ph) * g->w;
        float *dst = phase_row(p, buf, r, ph);
        int64_t m = m0;
        /* Reads up to `left` floats from src stay in the plane. */
        int64_t left = g->h * g->w - (r - g->ph) * g->w;
        if (sw == 1) {
            for (; m + LJ_VL <= m1; m += LJ_VL)
                lj_store(dst + m, lj_load(src + m - g->pw));
            for (; m < m1 && m - g->pw + LJ_VL <= left && m + LJ_VL <= p->pwidth; m += LJ_VL)
                lj_store(dst + m, lj_first(lj_load(src + m - g->pw), m1 - m));
        } else if (g->sw == 2) {
            /* even or odd lanes of 32 inputs, while all 32 are in the row */
            for (; m + LJ_VL <= m1 && 2 * m + ph - g->pw + 2 * LJ_VL <= g->w; m += LJ_VL) {
                const float *s = src + 2 * m + ph - g->pw;
                lj_store(dst + m, lj_even(lj_load(s), lj_load(s + LJ_VL)));
            }
            for (; m < m1 && 2 * m + ph - g->pw + 2 * LJ_VL <= left && m + LJ_VL <= p->pwidth;
                 m += LJ_VL) {
                const float *s = src + 2 * m + ph - g->pw;
                lj_store(dst + m, lj_first(lj_even(lj_load(s), lj_load(s + LJ_VL)), m1 - m));
            }
        }
        for (; m < m1; m++)
            dst[m] = src[m * g->sw + ph - g->pw];
    }
}

LJ_INLINE void dw_fill(const DwPlan *p, const float *x, float *buf) {
    for (int64_t ph = 0; ph < p->g.sw; ph++)
        dw_fill_phase(p, x, buf, ph);
}

/* Where tap t = i*kw + j of output (oy + r, cv*LJ_VL + c*LJ_VL) reads:
 * buf + oy*rs + cv*LJ_VL + off[t] + r*rs + c*LJ_VL, rs = sh*sw*pwidth the
 * distance between output rows. Computed once per call, so that the tiles
 * do no division (the tap's phase is j*dw % sw) whatever the window. */
enum { DW_MAX_TAPS = 64 };

LJ_INLINE void dw_offsets(const DwPlan *p, int64_t *off) {
    const LjWindow *g = &p->g;
    for (int64_t i = 0; i < g->kh; i++)
        for (int64_t j = 0; j < g->kw; j++)
            off[i * g->kw + j] = (i * g->dh * g->sw + j * g->dw % g->sw) * p->pwidth +
                                 j * g->dw / g->sw;
}

LJ_INLINE void dw_store(int64_t R, int64_t C, const DwPlan *p, vf32 (*acc)[CMAX], LjAct act,
                        float *y, int64_t oy, int64_t cv) {
    const LjWindow *g = &p->g;
    int64_t plane = g->oh * g->ow;
    DW_LOOP_R {
        DW_LOOP_C {
            int64_t at = (oy + r) * g->ow + (cv + c) * LJ_VL;
            vf32 v = lj_act(acc[r][c], act);
            if (at + LJ_VL <= plane)
                lj_store(y + at, v);
            else
                lj_store_part(y + at, v, plane - at);
        }
    }
}

/* Rows oy .. oy+R-1, vectors cv .. cv+C-1 of one plane (R*C <= RMAX), with
 * T taps (a constant where the caller made it one, else `taps`); y is the
 * plane's output. */
LJ_INLINE void dw_tile(int64_t R, int64_t C, int64_t T, const DwPlan *p, const float *buf,
                       const int64_t *off, const float *wk, float bias, LjAct act, float *y,
                       int64_t oy, int64_t cv) {
    int64_t rs = p->rs;
    const float *base = buf + oy * rs + cv * LJ_VL;
    vf32 acc[RMAX][CMAX];
    DW_LOOP_R {
        DW_LOOP_C { acc[r][c] = lj_splat(bias); }
    }
    for (int64_t t = 0; t < T; t++) {
        vf32 wv = lj_splat(wk[t]);
        const float *src = base + off[t];
        DW_LOOP_R {
            DW_LOOP_C { acc[r][c] += wv * lj_load(src + r * rs + c * LJ_VL); }
        }
    }
    /* The common activations' kinds made constants, so that no store asks
     * which one it is. */
    switch (act.kind) {
    case ACT_NONE: dw_store(R, C, p, acc, (LjAct){ACT_NONE, 0, 0}, y, oy, cv); break;
    case ACT_RELU: dw_store(R, C, p, acc, (LjAct){ACT_RELU, 0, 0}, y, oy, cv); break;
    case ACT_CLIP: dw_store(R, C, p, acc, (LjAct){ACT_CLIP, act.alpha, act.beta}, y, oy, cv); break;
    case ACT_SILU: dw_store(R, C, p, acc, (LjAct){ACT_SILU, 0, 0}, y, oy, cv); break;
    default: dw_store(R, C, p, acc, act, y, oy, cv); break;
    }
}

/* The tile for any R*C <= RMAX, each shape its own copy with acc[][] in
 * registers, and 3x3 and 5x5 windows (MobileNet's, EfficientNet's) with
 * their tap loops whole. This is compiled once, in the kernel engine: a
 * depthwise convolution runs from precompiled code, and no model's module
 * carries a kernel of its own (specialising it to each window cost
 * MobileNet-V2 1 s of O3 and code generation per compile). The price,
 * measured per layer on MobileNet-V2: 7x7 and 14x14 maps take 20-35% longer
 * than the specialised copies did (their per-plane costs -- the phase rows'
 * copy, the calls -- are no longer unrolled for the plane's size), 28x28
 * about 20%, 56x56 and 112x112 the same. */
#define DW_SHAPES(X) X(1, 1) X(1, 2) X(1, 3) X(1, 4) X(1, 5) X(1, 6) X(1, 7) X(1, 8) \
    X(2, 1) X(2, 2) X(2, 3) X(2, 4) X(3, 1) X(3, 2) X(4, 1) X(4, 2) X(5, 1) X(6, 1) X(7, 1) X(8, 1)
_Static_assert(RMAX == 8 && CMAX == 8, "DW_SHAPES lists the tiles of RMAX x CMAX");

/* One function per shape (a switch inlining all of them into one made
 * LLVM keep some tiles' accumulators on the stack). */
#define DW_TILE_FN(r, c)                                                                        \
    LJ_VECTOR_FN static void dw_tile_##r##x##c(const DwPlan *p, const float *buf,               \
                                               const int64_t *off, const float *wk, float bias, \
                                               LjAct act, float *y, int64_t oy, int64_t cv) {   \
        int64_t taps = p->g.kh * p->g.kw;                                                       \
        if (taps == 9)                                                                          \
            dw_tile(r, c, 9, p, buf, off, wk, bias, act, y, oy, cv);                            \
        else if (taps == 25)                                                                    \
            dw_tile(r, c, 25, p, buf, off, wk, bias, act, y, oy, cv);                           \
        else                                                                                    \
            dw_tile(r, c, taps, p, buf, off, wk, bias, act, y, oy, cv);                         \
    }
DW_SHAPES(DW_TILE_FN)
#undef DW_TILE_FN

LJ_INLINE void dw_tile_any(int64_t R, int64_t C, const DwPlan *p, const float *buf,
                           const int64_t *off, const float *wk, float bias, LjAct act, float *y,
                           int64_t oy, int64_t cv) {
#define DW_CASE(r, c)                                                                           \
    case (r) * 16 + (c): dw_tile_##r##x##c(p, buf, off, wk, bias, act, y, oy, cv); return;
    switch (R * 16 + C) {
        DW_SHAPES(DW_CASE)
    default: break;
    }
#undef DW_CASE
    /* Not reached (dw_plane keeps R*C <= RMAX); correct all the same. */
    for (int64_t r = 0; r < R; r++)
        for (int64_t c = 0; c < C; c++)
            dw_tile_1x1(p, buf, off, wk, bias, act, y, oy + r, cv + c);
}

/* Rows [oy, oy + R) across the whole row: tiles of CMAX vectors, then the
 * rest. */
LJ_INLINE void dw_rows(int64_t R, const DwPlan *p, const float *buf, const int64_t *off,
                       const float *wk, float bias, LjAct act, float *y, int64_t oy) {
    int64_t cv = 0;
    for (; cv + CMAX <= p->c; cv += CMAX)
        dw_tile_any(R, CMAX, p, buf, off, wk, bias, act, y, oy, cv);
    if (cv < p->c)
        dw_tile_any(R, p->c - cv, p, buf, off, wk, bias, act, y, oy, cv);
}

/* dw_rows for a window whose every size is a constant (DW_FIXED): R and
 * the tiles' widths fold, so the tile is inlined here with its loops whole
 * instead of reached through dw_tile_any's calls. */
LJ_INLINE void dw_rows_fixed(int64_t R, const DwPlan *p, const float *buf, const int64_t *off,
                             const float *wk, float bias, LjAct act, float *y, int64_t oy) {
    int64_t cv = 0, taps = p->g.kh * p->g.kw;
    for (; cv + CMAX <= p->c; cv += CMAX)
        dw_tile(R, CMAX, taps, p, buf, off, wk, bias, act, y, oy, cv);
    if (cv < p->c)
        dw_tile(R, p->c - cv, taps, p, buf, off, wk, bias, act, y, oy, cv);
}

/* One plane: rows R at a time, R*C <= RMAX when a row is at most CMAX
 * vectors (so short rows still give 8 independent accumulators), else one
 * at a time; then the rows left over. */
LJ_INLINE void dw_plane(bool fixed, const DwPlan *p, const float *buf, const int64_t *off,
                        const float *wk, float bias, LjAct act, float *y) {
    int64_t R = p->r, oh = p->g.oh, oy = 0;
    for (; oy + R <= oh; oy += R) {
        if (fixed)
            dw_rows_fixed(R, p, buf, off, wk, bias, act, y, oy);
        else
            dw_rows(R, p, buf, off, wk, bias, act, y, oy);
    }
    if (oy < oh && fixed)
        dw_rows_fixed(oh - oy, p, buf, off, wk, bias, act, y, oy);
    else if (oy < oh)
        dw_rows(oh - oy, p, buf, off, wk, bias, act, y, oy);
}

/* Planes [lo, hi) through the zeroed buffer; `fixed` where g is a constant. */
LJ_INLINE void dw_planes(bool fixed, const LjWindow *g, int64_t c, const float *x,
                         const float *w, const float *bias, float *y, LjAct act, int64_t lo,
                         int64_t hi, float *buf) {
    DwPlan p = dw_plan(g);
    int64_t off[DW_MAX_TAPS];
    dw_offsets(&p, off);
    int64_t taps = g->kh * g->kw;
    for (int64_t pl = lo, ch = lo % c; pl < hi; pl++, ch = ch + 1 == c ? 0 : ch + 1) {
        dw_fill(&p, x + pl * g->h * g->w, buf);
        dw_plane(fixed, &p, buf, off, w + ch * taps, bias ? bias[ch] : 0.0f, act,
                 y + pl * g->oh * g->ow);
    }
}

/* ---- bands: large maps ----------------------------------------------------
 *
 * On MobileNet's 112x112 maps a plane's phase rows pass L1 (72 KB at stride
 * 2), so the copy into them went out to L2 and the taps read them back from
 * there: the copy was three times the taps' time. Here a band of output
 * rows at a time has its phase rows filled into a buffer of about
 * DW_BAND_BYTES, just before its tiles read them: the band is a plane of its
 * own, a window over the input rows it reads (its pads those of the plane's
 * that it reaches), so the fill, the tiles and their taps are dw_planes'
 * own and each output is bit for bit what the whole plane gives. The
 * input rows two bands share (a 3x3 window's one) are copied twice. */
enum { DW_BAND_BYTES = 8 * 1024, DW_BAND_MIN = 16 * 1024 };

/* The phase rows that n output rows read, in bytes: a band's (dw_band
 * gives it the plane's widths, and the rows are n's alone) or, n = oh, the
 * whole plane's. A closed form of the window: lj_dwconv_scratch must fold
 * to a constant in a --no-threads bundle. */
LJ_INLINE size_t dw_rows_bytes(const DwPlan *p, int64_t n) {
    const LjWindow *g = &p->g;
    int64_t rows = (n - 1) * g->sh + (g->kh - 1) * g->dh + 1;
    return (size_t)(rows * g->sw * p->pwidth) * sizeof(float);
}

/* Output rows per band: a multiple of the tiles' rows; 0 where the whole
 * plane's phase rows are small enough. */
LJ_INLINE int64_t dw_band_rows(const DwPlan *p) {
    const LjWindow *g = &p->g;
    if (dw_rows_bytes(p, g->oh) <= DW_BAND_MIN)
        return 0;
    int64_t in = DW_BAND_BYTES / (int64_t)(g->sw * p->pwidth * sizeof(float));
    int64_t out = (in - (g->kh - 1) * g->dh - 1) / g->sh + 1;
    out = out / p->r * p->r;
    out = out > p->r ? out : p->r;
    return out < g->oh ? out : 0;
}

/* The window of output rows [oy0, oy0 + n) over the input rows they read;
 * *x0 its first input row. */
LJ_INLINE LjWindow dw_band(const LjWindow *g, int64_t oy0, int64_t n, int64_t *x0) {
    LjWindow b = *g;
    int64_t top = oy0 * g->sh - g->ph, rows = (n - 1) * g->sh + (g->kh - 1) * g->dh + 1;
    b.ph = top < 0 ? -top : 0;
    *x0 = top < 0 ? 0 : top;
    b.h = g->h - *x0 < rows - b.ph ? g->h - *x0 : rows - b.ph;
    b.h = b.h > 0 ? b.h : 0;
    b.oh = n;
    return b;
}

/* Planes [lo, hi) a band at a time (bands rows each); buf, zeroed, holds
 * one band's phase rows. The rows that fall in the padding are zeroed per
 * band (another band's input rows were there); the columns in the padding
 * are never written, the same for every row. */
LJ_INLINE void dw_planes_banded(const LjWindow *g, int64_t bands, int64_t c, const float *x,
                                const float *w, const float *bias, float *y, LjAct act,
                                int64_t lo, int64_t hi, float *buf) {
    DwPlan whole = dw_plan(g);
    int64_t off[DW_MAX_TAPS];
    dw_offsets(&whole, off);
    int64_t taps = g->kh * g->kw, row = g->sw * whole.pwidth;
    for (int64_t pl = lo, ch = lo % c; pl < hi; pl++, ch = ch + 1 == c ? 0 : ch + 1) {
        for (int64_t oy0 = 0; oy0 < g->oh; oy0 += bands) {
            int64_t n = g->oh - oy0 < bands ? g->oh - oy0 : bands, x0;
            LjWindow b = dw_band(g, oy0, n, &x0);
            DwPlan p = dw_plan(&b);
            __builtin_memset(buf, 0, (size_t)(b.ph * row) * sizeof(float));
            if (b.ph + b.h < p.rows)
                __builtin_memset(buf + (b.ph + b.h) * row, 0,
                                 (size_t)((p.rows - b.ph - b.h) * row) * sizeof(float));
            dw_fill(&p, x + (pl * g->h + x0) * g->w, buf);
            dw_plane(false, &p, buf, off, w + ch * taps, bias ? bias[ch] : 0.0f, act,
                     y + pl * g->oh * g->ow + oy0 * g->ow);
        }
    }
}

LJ_VECTOR_FN static void dw_banded(const LjWindow *g, int64_t bands, int64_t c, const float *x,
                                   const float *w, const float *bias, float *y, LjAct act,
                                   int64_t lo, int64_t hi, float *buf) {
    dw_planes_banded(g, bands, c, x, w, bias, y, act, lo, hi, buf);
}

/* The windows of MobileNet, EfficientNet and ShuffleNet on their small maps
 * (k x k, stride s, pads k/2, dilation 1, o x o outputs of a square input
 * o*s wide), each compiled with every size a constant. On 7x7 to 28x28
 * maps a plane's fixed costs -- the phase rows' bounds and copies, the
 * tiles' calls and shape dispatch -- are as large as its taps, and only
 * constants fold them away: this recovers the speed of the per-model
 * specialised copies without compiling anything per model. 56x56 and
 * larger maps gain nothing measurable, so they stay generic. */
#define DW_FIXED(X)                                                                             \
    X(3, 1, 7) X(3, 1, 14) X(3, 1, 28) X(3, 2, 7) X(3, 2, 14) X(3, 2, 28)                      \
    X(5, 1, 7) X(5, 1, 14) X(5, 1, 28) X(5, 2, 7) X(5, 2, 14)

#define DW_FIXED_FN(k, s, o)                                                                    \
    LJ_VECTOR_FN static void dw_fixed_##k##_##s##_##o(int64_t c, const float *x, const float *w, \
                                                      const float *bias, float *y, LjAct act,   \
                                                      int64_t lo, int64_t hi, float *buf) {     \
        const LjWindow g = {(o) * (s), (o) * (s), o, o, k, k, s, s, (k) / 2, (k) / 2, 1, 1, 0, 0}; \
        dw_planes(true, &g, c, x, w, bias, y, act, lo, hi, buf);                               \
    }
DW_FIXED(DW_FIXED_FN)
#undef DW_FIXED_FN

LJ_INLINE bool dw_fixed_form(const LjWindow *g) {
    return g->h == g->w && g->oh == g->ow && g->kh == g->kw && g->sh == g->sw &&
           g->ph == g->pw && g->dh == 1 && g->dw == 1 && g->ph == g->kh / 2 &&
           g->h == g->oh * g->sh;
}

/* Whether window g has a fixed copy: those run on whole planes, never in
 * bands (the buffer is sized for the one that runs). */
LJ_INLINE bool dw_has_fixed(const LjWindow *g) {
#define DW_HAS_CASE(k, s, o) || (g->kh == (k) && g->sh == (s) && g->oh == (o))
    return dw_fixed_form(g) && (false DW_FIXED(DW_HAS_CASE));
#undef DW_HAS_CASE
}

/* The fixed copy for window g, if there is one. */
LJ_INLINE bool dw_fixed(const LjWindow *g, int64_t c, const float *x, const float *w,
                        const float *bias, float *y, LjAct act, int64_t lo, int64_t hi,
                        float *buf) {
    if (!dw_fixed_form(g))
        return false;
#define DW_FIXED_CASE(k, s, o)                                                                  \
    if (g->kh == (k) && g->sh == (s) && g->oh == (o)) {                                         \
        dw_fixed_##k##_##s##_##o(c, x, w, bias, y, act, lo, hi, buf);                           \
        return true;                                                                            \
    }
    DW_FIXED(DW_FIXED_CASE)
#undef DW_FIXED_CASE
    return false;
}

/* One band's phase rows (every band but the last has `bands` rows), else
 * one plane's. */
LJ_FOLDED size_t lj_dwconv_scratch(const LjWindow *g) {
    if (lj_dwconv_lanes_fits(g))
        return lj_dwconv_lanes_scratch(g);
    DwPlan p = dw_plan(g);
    int64_t bands = dw_has_fixed(g) ? 0 : dw_band_rows(&p);
    return dw_rows_bytes(&p, bands ? bands : g->oh);
}

/* The phase rows of each plane, then its tiles. False if the buffer cannot
 * be had or the window has more taps than the offset table (the caller
 * then takes another kernel). */
LJ_VECTOR_FN bool lj_dwconv(const LjWindow *g, int64_t c, const float *x, const float *w,
                            const float *bias, float *y, LjAct act, int64_t lo, int64_t hi,
                            LjScratch *sc) {
    if (g->kh * g->kw > DW_MAX_TAPS)
        return false;
    if (lj_dwconv_lanes_fits(g))
        return lj_dwconv_lanes(g, c, x, w, bias, y, act, lo, hi, sc);
    size_t bytes = lj_dwconv_scratch(g);
    float *buf = lj_scratch_get(sc, LJ_SCRATCH_PLANES, bytes);
    if (!buf)
        return false;
    __builtin_memset(buf, 0, bytes);
    DwPlan p = dw_plan(g);
    int64_t bands = dw_has_fixed(g) ? 0 : dw_band_rows(&p);
    if (dw_fixed(g, c, x, w, bias, y, act, lo, hi, buf))
        ;
    else if (bands)
        dw_banded(g, bands, c, x, w, bias, y, act, lo, hi, buf);
    else
        dw_planes(false, g, c, x, w, bias, y, act, lo, hi, buf);
    lj_scratch_put(sc, buf);
    return true;
}
