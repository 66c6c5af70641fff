/* grid_sample and roi_align (at the end) for every float kind.
 *
 * libjit_grid_sample_any: nearest,
 * bilinear and bicubic reads of x at the grid's normalised positions, with
 * zeros, border or reflection padding and either align_corners.
 *
 * A unit of work is one output row of one image. Each grid point's taps
 * (at most 16 offsets into a channel plane, with their weights) are worked
 * out once and then read from every channel, where the interpreter
 * recomputes them per channel. Each output sums the same products, in the
 * same association and order, as the interpreter's (backends/interp/
 * k_sample.c, which follows PyTorch's grid_sampler), so the results are
 * the same. */
#include <math.h>

/* No fused multiply-adds: the interpreter rounds every product, and these
 * kernels are held to its results exactly. */
#pragma STDC FP_CONTRACT OFF

#include "backends/cpu/libjit/elem.h"
#include "backends/cpu/libjit/kernels.h"
#include "core/roi_align.h"

enum { GS_TAPS = 16 };

typedef struct Gs {
    int elem, mode, pad;
    bool align;
    int64_t n, c, h, w, ho, wo;
} Gs;

/* The taps of one point: value = sum of (x[off] * a) * b (bilinear) or
 * (a * b) * x[off] (bicubic, nearest with a = b = 1); off < 0 reads 0. */
typedef struct GsTaps {
    int n;
    int64_t off[GS_TAPS];
    double a[GS_TAPS], b[GS_TAPS];
} GsTaps;

LJ_INLINE Gs gs_plan(const int64_t *d) {
    Gs g = {.elem = lj_elem(d, 0)};
    g.mode = (int)lj_attr_int(d, AK_mode, MODE_BILINEAR);
    g.pad = (int)lj_attr_int(d, AK_padding_mode, PADDING_ZEROS);
    g.align = lj_attr_int(d, AK_align_corners, 0) != 0;
    g.n = lj_dim(d, 1, 0);
    g.c = lj_dim(d, 1, 1);
    g.h = lj_dim(d, 1, 2);
    g.w = lj_dim(d, 1, 3);
    g.ho = lj_dim(d, 0, 2);
    g.wo = lj_dim(d, 0, 3);
    return g;
}

LJ_INLINE double gs_unnormalize(double c, int64_t size, bool align) {
    return align ? (c + 1) / 2 * (double)(size - 1) : ((c + 1) * (double)size - 1) / 2;
}

LJ_INLINE double gs_clip(double c, int64_t size) {
    return c < 0 ? 0 : c > (double)(size - 1) ? (double)(size - 1) : c;
}

LJ_INLINE double gs_reflect(double c, double lo2, double hi2) {
    if (lo2 == hi2)
        return 0;
    double lo = lo2 / 2, span = (hi2 - lo2) / 2;
    c = fabs(c - lo);
    double extra = fmod(c, span);
    int64_t flips = (int64_t)floor(c / span);
    return flips % 2 == 0 ? extra + lo : span - extra + lo;
}

LJ_INLINE double gs_pad(const Gs *g, double c, int64_t size) {
    if (g->pad == PADDING_BORDER)
        return gs_clip(c, size);
    if (g->pad == PADDING_REFLECTION) {
        c = g->align ? gs_reflect(c, 0, 2.0 * (double)(size - 1))
                     : gs_reflect(c, -1, 2.0 * (double)size - 1);
        return gs_clip(c, size);
    }
    return c;
}

LJ_INLINE void gs_tap(const Gs *g, GsTaps *t, int64_t y, int64_t x, double a, double b) {
    t->off[t->n] = y < 0 || y >= g->h || x < 0 || x >= g->w ? -1 : y * g->w + x;
    t->a[t->n] = a;
    t->b[t->n] = b;
    t->n++;
}

LJ_INLINE void gs_cubic(double t, double *w) {
    const double A = -0.75;
    double x = t + 1;
    w[0] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
    x = t;
    w[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
    x = 1 - t;
    w[2] = ((A + 2) * x - (A + 3)) * x * x + 1;
    w[3] = 1 - w[0] - w[1] - w[2];
}

LJ_INLINE void gs_taps(const Gs *g, double ix, double iy, GsTaps *t) {
    t->n = 0;
    if (g->mode == MODE_NEAREST) {
        ix = gs_pad(g, ix, g->w);
        iy = gs_pad(g, iy, g->h);
        gs_tap(g, t, (int64_t)nearbyint(iy), (int64_t)nearbyint(ix), 1, 1);
    } else if (g->mode == MODE_BICUBIC) {
        double x0 = floor(ix), y0 = floor(iy), wx[4], wy[4];
        gs_cubic(ix - x0, wx);
        gs_cubic(iy - y0, wy);
        for (int j = 0; j < 4; j++)
            for (int i = 0; i < 4; i++) {
                double tx = gs_pad(g, x0 - 1 + i, g->w), ty = gs_pad(g, y0 - 1 + j, g->h);
                gs_tap(g, t, (int64_t)ty, (int64_t)tx, wx[i], wy[j]);
            }
    } else {
        ix = gs_pad(g, ix, g->w);
        iy = gs_pad(g, iy, g->h);
        double x0 = floor(ix), y0 = floor(iy), tx = ix - x0, ty = iy - y0;
        int64_t xi = (int64_t)x0, yi = (int64_t)y0;
        gs_tap(g, t, yi, xi, 1 - tx, 1 - ty);
        gs_tap(g, t, yi, xi + 1, tx, 1 - ty);
        gs_tap(g, t, yi + 1, xi, 1 - tx, ty);
        gs_tap(g, t, yi + 1, xi + 1, tx, ty);
    }
}

LIBJIT_WORK libjit_grid_sample_any_work(const int64_t *d) {
    Gs g = gs_plan(d);
    return g.n * g.ho > 0 ? g.n * g.ho : 1;
}

/* Operands: y [N, C, Ho, Wo], x [N, C, H, W], grid [N, Ho, Wo, 2]. */
LIBJIT_KERNEL libjit_grid_sample_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                     LjScratch *sc) {
    Gs g = gs_plan(d);
    int eg = lj_elem(d, 2);
    bool cubic = g.mode == MODE_BICUBIC;
    for (int64_t u = lo; u < hi && u < g.n * g.ho; u++) {
        int64_t n = u / g.ho, oy = u % g.ho;
        for (int64_t ox = 0; ox < g.wo; ox++) {
            int64_t at = ((n * g.ho + oy) * g.wo + ox) * 2;
            double ix = gs_unnormalize(lj_ld_f64(eg, ops[2], at), g.w, g.align);
            double iy = gs_unnormalize(lj_ld_f64(eg, ops[2], at + 1), g.h, g.align);
            GsTaps t;
            gs_taps(&g, ix, iy, &t);
            for (int64_t c = 0; c < g.c; c++) {
                int64_t plane = (n * g.c + c) * g.h * g.w;
                double v = 0;
                for (int k = 0; k < t.n; k++) {
                    double x = t.off[k] < 0 ? 0 : lj_ld_f64(g.elem, ops[1], plane + t.off[k]);
                    double term = cubic ? t.a[k] * t.b[k] * x : x * t.a[k] * t.b[k];
                    v = k == 0 && !cubic ? term : v + term;
                }
                lj_st_f64(g.elem, ops[0], ((n * g.c + c) * g.ho + oy) * g.wo + ox, v);
            }
        }
    }
}

/* ---- roi_align ----------------------------------------------------------------- */

/* roi_align for every float kind, as libjit_roi_align_any: the
 * interpreter's arithmetic (core/roi_align.h, one source for both). A unit
 * of work is one output plane (region, channel). A batch index out of
 * range, which the interpreter reports, leaves its planes zero. */
typedef struct RaLoad {
    int elem;
    const void *p;
} RaLoad;

static double ra_load(const void *ctx, int64_t i) {
    const RaLoad *l = ctx;
    return lj_ld_f64(l->elem, l->p, i);
}

LIBJIT_WORK libjit_roi_align_any_work(const int64_t *d) {
    int64_t n = lj_dim(d, 0, 0) * lj_dim(d, 0, 1);
    return n > 0 ? n : 1;
}

LIBJIT_KERNEL libjit_roi_align_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                   LjScratch *sc) {
    int ey = lj_elem(d, 0), er = lj_elem(d, 2), eb = lj_elem(d, 3);
    int64_t nb = lj_dim(d, 1, 0), channels = lj_dim(d, 1, 1), oh = lj_dim(d, 0, 2),
            ow = lj_dim(d, 0, 3);
    bool max = lj_attr_int(d, AK_mode, MODE_AVG) == MODE_MAX;
    bool half = lj_attr_int(d, AK_coordinate_transformation_mode, CTM_HALF_PIXEL) == CTM_HALF_PIXEL;
    double scale = lj_attr_float(d, AK_spatial_scale, 1.0);
    int64_t ratio = lj_attr_int(d, AK_sampling_ratio, 0);
    RaLoad load = {lj_elem(d, 1), ops[1]};
    RoiPlane p = {ra_load, &load, 0, lj_dim(d, 1, 2), lj_dim(d, 1, 3)};
    for (int64_t u = lo; u < hi && u < lj_dim(d, 0, 0) * channels; u++) {
        int64_t r = u / channels, c = u % channels, b = lj_ld_i64(eb, ops[3], r);
        if (b < 0 || b >= nb) {
            for (int64_t o = 0; o < oh * ow; o++)
                lj_st_f64(ey, ops[0], u * oh * ow + o, 0);
            continue;
        }
        double box[4];
        for (int k = 0; k < 4; k++)
            box[k] = lj_ld_f64(er, ops[2], r * 4 + k);
        Roi g = roi_geometry(box, scale, half, ratio, oh, ow);
        p.base = (b * channels + c) * p.h * p.w;
        for (int64_t ph = 0; ph < oh; ph++)
            for (int64_t pw = 0; pw < ow; pw++)
                lj_st_f64(ey, ops[0], (u * oh + ph) * ow + pw, roi_bin(&p, &g, ph, pw, max));
    }
}
