/* GridSample's arithmetic (PyTorch's grid_sampler, which the ONNX test data
 * comes from), shared by the interpreter's kernel and libjit's: a grid
 * point's taps (at most 16 offsets into a channel plane, with their
 * weights) and their sum, static inline over a loader of the plane's
 * elements, so both compute the same products in the same order. libjit
 * works the taps out once per point and reads them from every channel. */
#ifndef GLOWC_CORE_GRID_SAMPLE_H
#define GLOWC_CORE_GRID_SAMPLE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/graph.h" /* MODE_*, PADDING_* */

enum { GS_TAPS = 16 };

/* The sampled plane's geometry and the node's modes (MODE_NEAREST,
 * MODE_BILINEAR, MODE_BICUBIC; PADDING_ZEROS, _BORDER, _REFLECTION). */
typedef struct GsGeom {
    int mode, pad;
    bool align;
    int64_t h, w;
} GsGeom;

/* The taps of one point: value = sum of (x[off] * a) * b (bilinear) or
 * (a * b) * x[off] (bicubic, nearest with a = b = 1); off < 0 reads 0. */
typedef struct GsTaps {
    int n;
    int64_t off[GS_TAPS];
    double a[GS_TAPS], b[GS_TAPS];
} GsTaps;

/* [-1, 1] to pixel coordinates: the extremes are the corner pixels' centres
 * (align_corners) or their outer edges. */
static inline double gs_unnormalize(double c, int64_t size, bool align) {
    return align ? (c + 1) / 2 * (double)(size - 1) : ((c + 1) * (double)size - 1) / 2;
}

static inline double gs_clip(double c, int64_t size) {
    return c < 0 ? 0 : c > (double)(size - 1) ? (double)(size - 1) : c;
}

/* Reflects c into [lo2 / 2, hi2 / 2] (bounds given doubled, as PyTorch). */
static inline double gs_reflect(double c, double lo2, double hi2) {
    if (lo2 == hi2)
        return 0;
    double lo = lo2 / 2, span = (hi2 - lo2) / 2;
    c = fabs(c - lo);
    double extra = fmod(c, span);
    int64_t flips = (int64_t)floor(c / span);
    return flips % 2 == 0 ? extra + lo : span - extra + lo;
}

/* The padding mode applied to a coordinate (zeros leaves it alone). */
static inline double gs_pad(const GsGeom *g, double c, int64_t size) {
    if (g->pad == PADDING_BORDER)
        return gs_clip(c, size);
    if (g->pad == PADDING_REFLECTION) {
        c = g->align ? gs_reflect(c, 0, 2.0 * (double)(size - 1))
                     : gs_reflect(c, -1, 2.0 * (double)size - 1);
        return gs_clip(c, size);
    }
    return c;
}

static inline void gs_tap(const GsGeom *g, GsTaps *t, int64_t y, int64_t x, double a, double b) {
    t->off[t->n] = y < 0 || y >= g->h || x < 0 || x >= g->w ? -1 : y * g->w + x;
    t->a[t->n] = a;
    t->b[t->n] = b;
    t->n++;
}

/* Cubic convolution weights (A = -0.75) of the taps at -1, 0, 1, 2. */
static inline void gs_cubic(double t, double *w) {
    const double A = -0.75;
    double x = t + 1;
    w[0] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
    x = t;
    w[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
    x = 1 - t;
    w[2] = ((A + 2) * x - (A + 3)) * x * x + 1;
    w[3] = 1 - w[0] - w[1] - w[2];
}

/* The taps of pixel position (ix, iy); bicubic pads each of its 16 taps,
 * the other modes the sampling point. */
static inline void gs_taps(const GsGeom *g, double ix, double iy, GsTaps *t) {
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

/* Element i (row-major) of the plane being read; ctx is the caller's. */
typedef double (*GsLoad)(const void *ctx, int64_t i);

/* The sampled value: the taps' products summed in order. */
static inline double gs_value(const GsGeom *g, const GsTaps *t, GsLoad load, const void *ctx) {
    bool cubic = g->mode == MODE_BICUBIC;
    double v = 0;
    for (int k = 0; k < t->n; k++) {
        double x = t->off[k] < 0 ? 0 : load(ctx, t->off[k]);
        double term = cubic ? t->a[k] * t->b[k] * x : x * t->a[k] * t->b[k];
        v = k == 0 && !cubic ? term : v + term;
    }
    return v;
}

#endif
