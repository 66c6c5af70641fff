/* Max pooling in NCHW straight from the planes' rows, for the common
 * windows (strides 1 and 2, no dilation, windows up to 8 wide): the
 * maximum over the window's input rows first (a whole row of vectors at a
 * time, the rows outside the input skipped), then over its columns from
 * that row, a stride-2 window's even and odd columns split by shuffles.
 *
 * k_pool.c's general path moves LJ_VL channels into the vector lanes and
 * back (two transposes of the whole tensor) for 3x3 stride-2 windows that
 * read each input about twice: SqueezeNet's three max pools cost 0.7 ms
 * there, ONNX Runtime's 0.15 ms. The maximum is exact, so the order of
 * the taps changes nothing but which NaN wins. */
#include "backends/cpu/libjit/window.h"

enum {
    VL = LJ_VL,
    KMAX = 8,
    ROW_MAX = 4096, /* floats of the row of column maxima, on the stack */
};

/* Floats of the padded row: pw of -inf, then the input's w, then -inf up
 * to the last window's end and one pair of vectors past it (the last
 * output vector's reads). */
LJ_INLINE int64_t row_len(const LjWindow *g) {
    int64_t ovec = (g->ow + VL - 1) / VL * VL;
    return (ovec - 1) * g->sw + g->kw + 2 * VL;
}

bool lj_max_pool_rows_fits(const LjWindow *g) {
    return (g->sw == 1 || g->sw == 2) && g->dh == 1 && g->dw == 1 && g->kw <= KMAX &&
           g->kh >= 1 && g->kw >= 1 && g->pw < g->kw && row_len(g) + g->pw <= ROW_MAX;
}

/* row[pw + x] = max over input rows [i0, i1) of x's column, for x < w. */
LJ_INLINE void column_max(const LjWindow *g, const float *xp, int64_t i0, int64_t i1,
                          float *row) {
    float *dst = row + g->pw;
    int64_t x = 0;
    /* A row of w >= VL ends with a vector overlapping the one before (the
     * same maxima, written twice), not floats one by one: 15 of each of
     * SqueezeNet's 111-wide rows were. */
    for (; x < g->w && g->w >= VL; x += VL) {
        int64_t at = x + VL > g->w ? g->w - VL : x;
        vf32 m = lj_load(xp + i0 * g->w + at);
        for (int64_t i = i0 + 1; i < i1; i++)
            m = lj_max(m, lj_load(xp + i * g->w + at));
        lj_store(dst + at, m);
    }
    for (; x < g->w; x++) {
        float m = xp[i0 * g->w + x];
        for (int64_t i = i0 + 1; i < i1; i++)
            m = m > xp[i * g->w + x] ? m : xp[i * g->w + x];
        dst[x] = m;
    }
}

/* y[ox] = max of row[ox*sw + j], j < kw, for one output row. */
LJ_INLINE void row_max(const LjWindow *g, const float *row, float *y) {
    for (int64_t ox = 0; ox < g->ow; ox += VL) {
        if (ox + VL > g->ow && g->ow >= VL) /* the last vector overlaps, as above */
            ox = g->ow - VL;
        const float *r = row + ox * g->sw;
        vf32 m;
        if (g->sw == 1) {
            m = lj_load(r);
            for (int64_t j = 1; j < g->kw; j++)
                m = lj_max(m, lj_load(r + j));
        } else {
            m = lj_even(lj_load(r), lj_load(r + VL));
            for (int64_t j = 1; j < g->kw; j++)
                m = lj_max(m, lj_even(lj_load(r + j), lj_load(r + j + VL)));
        }
        int64_t n = g->ow - ox;
        if (n >= VL)
            lj_store(y + ox, m);
        else
            lj_store_part(y + ox, m, n);
    }
}

LJ_VECTOR_FN void lj_max_pool_rows(const LjWindow *g, const float *x, float *y, int64_t p0,
                                   int64_t p1) {
    float row[ROW_MAX] __attribute__((aligned(64)));
    int64_t len = row_len(g) + g->pw;
    for (int64_t i = 0; i < len; i++)
        row[i] = -__builtin_inff();
    for (int64_t pl = p0; pl < p1; pl++) {
        const float *xp = x + pl * g->h * g->w;
        float *yp = y + pl * g->oh * g->ow;
        for (int64_t oy = 0; oy < g->oh; oy++) {
            int64_t i0 = oy * g->sh - g->ph, i1 = i0 + g->kh;
            i0 = i0 > 0 ? i0 : 0;
            i1 = i1 < g->h ? i1 : g->h;
            if (i0 >= i1) { /* wholly in the padding: -inf, as the interpreter */
                for (int64_t ox = 0; ox < g->ow; ox++)
                    yp[oy * g->ow + ox] = -__builtin_inff();
                continue;
            }
            column_max(g, xp, i0, i1, row);
            row_max(g, row, yp + oy * g->ow);
        }
    }
}
