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

/* The tile's loops unroll whole where R and C are constants -- in a
 * worker, once the window is -- so that acc[][] lives in registers. In the
 * bitcode they are not yet (no switch over every (R, C) pair there: its
 * unrolled copies made each depthwise worker 80k lines for O3 to prune). */
#pragma clang diagnostic ignored "-Wpass-failed" /* not unrolled yet: as intended */
#define DW_LOOP_R _Pragma("clang loop unroll(full)") for (int64_t r = 0; r < R; r++)
#define DW_LOOP_C _Pragma("clang loop unroll(full)") for (int64_t c = 0; c < C; c++)

typedef struct DwPlan {
    LjWindow g;
    int64_t rows;   /* padded input rows the outputs read */
    int64_t pwidth; /* floats per phase row */
    int64_t c;      /* vectors per output row */
} DwPlan;

LJ_INLINE DwPlan dw_plan(const LjWindow *g) {
    DwPlan p;
    p.g = *g;
    p.rows = (g->oh - 1) * g->sh + (g->kh - 1) * g->dh + 1;
    p.c = (g->ow + LJ_VL - 1) / LJ_VL;
    int64_t reach = p.c * LJ_VL + (g->kw - 1) * g->dw / g->sw;
    p.pwidth = (reach + LJ_VL - 1) / LJ_VL * LJ_VL;
    return p;
}

LJ_INLINE float *phase_row(const DwPlan *p, float *buf, int64_t r, int64_t ph) {
    return buf + (r * p->g.sw + ph) * p->pwidth;
}

/* The inside of plane x into the phase rows (the rest stays 0). */
LJ_INLINE void dw_fill(const DwPlan *p, const float *x, float *buf) {
    const LjWindow *g = &p->g;
    for (int64_t r = 0; r < p->rows; r++) {
        int64_t y = r - g->ph;
        if (y < 0 || y >= g->h)
            continue;
        const float *src = x + y * g->w;
        for (int64_t ph = 0; ph < g->sw; ph++) {
            /* m*sw + ph - pw in [0, w), m < pwidth */
            int64_t first = g->pw - ph, m0 = first > 0 ? (first + g->sw - 1) / g->sw : 0;
            int64_t m1 = (g->w + g->pw - ph + g->sw - 1) / g->sw;
            m1 = m1 < p->pwidth ? m1 : p->pwidth;
            float *dst = phase_row(p, buf, r, ph);
            int64_t m = m0;
            if (g->sw == 1) {
                for (; m + LJ_VL <= m1; m += LJ_VL)
                    lj_store(dst + m, lj_load(src + m - g->pw));
            } else if (g->sw == 2) {
                /* even or odd lanes of 32 inputs, while all 32 are in the row */
                for (; m + LJ_VL <= m1 && 2 * m + ph - g->pw + 2 * LJ_VL <= g->w; m += LJ_VL) {
                    const float *s = src + 2 * m + ph - g->pw;
                    lj_store(dst + m, lj_even(lj_load(s), lj_load(s + LJ_VL)));
                }
            }
            for (; m < m1; m++)
                dst[m] = src[m * g->sw + ph - g->pw];
        }
    }
}

/* Rows oy .. oy+R-1, vectors cv .. cv+C-1 of one plane (R <= RMAX,
 * C <= CMAX); y is the plane's output. */
LJ_INLINE void dw_tile(int64_t R, int64_t C, const DwPlan *p, const float *buf, const float *wk,
                       float bias, LjAct act, float *y, int64_t oy, int64_t cv) {
    const LjWindow *g = &p->g;
    vf32 acc[RMAX][CMAX];
    DW_LOOP_R {
        DW_LOOP_C { acc[r][c] = lj_splat(bias); }
    }
    for (int64_t i = 0; i < g->kh; i++) {
        for (int64_t j = 0; j < g->kw; j++) {
            vf32 wv = lj_splat(wk[i * g->kw + j]);
            int64_t ph = j * g->dw % g->sw, shift = j * g->dw / g->sw + cv * LJ_VL;
            DW_LOOP_R {
                int64_t row = (oy + r) * g->sh + i * g->dh;
                const float *src = phase_row(p, (float *)buf, row, ph) + shift;
                DW_LOOP_C { acc[r][c] += wv * lj_load(src + c * LJ_VL); }
            }
        }
    }
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

/* Rows [oy, oy + R) across the whole row: tiles of CMAX vectors, then the
 * rest. */
LJ_INLINE void dw_rows(int64_t R, const DwPlan *p, const float *buf, const float *wk, float bias,
                       LjAct act, float *y, int64_t oy) {
    int64_t cv = 0;
    for (; cv + CMAX <= p->c; cv += CMAX)
        dw_tile(R, CMAX, p, buf, wk, bias, act, y, oy, cv);
    if (cv < p->c)
        dw_tile(R, p->c - cv, p, buf, wk, bias, act, y, oy, cv);
}

/* One plane: rows R at a time, R*C <= RMAX when a row is at most CMAX
 * vectors (so short rows still give 8 independent accumulators), else one
 * at a time; then the rows left over. */
LJ_INLINE void dw_plane(const DwPlan *p, const float *buf, const float *wk, float bias, LjAct act,
                        float *y) {
    int64_t R = p->c <= CMAX ? RMAX / p->c : 1, oh = p->g.oh, oy = 0;
    for (; oy + R <= oh; oy += R)
        dw_rows(R, p, buf, wk, bias, act, y, oy);
    if (oy < oh)
        dw_rows(oh - oy, p, buf, wk, bias, act, y, oy);
}

size_t lj_dwconv_scratch(const LjWindow *g) {
    DwPlan p = dw_plan(g);
    return (size_t)(p.rows * g->sw * p.pwidth) * sizeof(float);
}

/* Inlined into each convolution's worker, where the window is constant:
 * the tap loops unroll and the tile shape is chosen at compile time. */
__attribute__((always_inline)) bool lj_dwconv(const LjWindow *g, int64_t c, const float *x,
                                               const float *w, const float *bias, float *y,
                                               LjAct act, int64_t lo, int64_t hi, LjScratch *sc) {
    DwPlan p = dw_plan(g);
    size_t bytes = lj_dwconv_scratch(g);
    float *buf = lj_scratch_get(sc, LJ_SCRATCH_PLANES, bytes);
    if (!buf)
        return false;
    __builtin_memset(buf, 0, bytes);
    int64_t taps = g->kh * g->kw;
    for (int64_t pl = lo; pl < hi; pl++) {
        int64_t ch = pl % c;
        dw_fill(&p, x + pl * g->h * g->w, buf);
        dw_plane(&p, buf, w + ch * taps, bias ? bias[ch] : 0.0f, act, y + pl * g->oh * g->ow);
    }
    lj_scratch_put(sc, buf);
    return true;
}

LJ_VECTOR_FN bool lj_dwconv_outline(const LjWindow *g, int64_t c, const float *x, const float *w,
                                    const float *bias, float *y, LjAct act, int64_t lo,
                                    int64_t hi, LjScratch *sc) {
    return lj_dwconv(g, c, x, w, bias, y, act, lo, hi, sc);
}
