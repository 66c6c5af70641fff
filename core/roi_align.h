/* RoiAlign's arithmetic (onnxruntime's, which the ONNX test data comes
 * from), shared by the interpreter's kernel and libjit's: static inline
 * over a loader of the input plane's elements, so each side reads its own
 * tensors and both compute the same products in the same order. */
#ifndef GLOWC_CORE_ROI_ALIGN_H
#define GLOWC_CORE_ROI_ALIGN_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

/* Element i (row-major) of the plane being read; ctx is the caller's. */
typedef double (*RoiLoad)(const void *ctx, int64_t i);

typedef struct RoiPlane {
    RoiLoad load;
    const void *ctx;
    int64_t base, h, w; /* offset of one N, C plane and its size */
} RoiPlane;

typedef struct Roi {
    double x, y, bin_w, bin_h;
    int64_t grid_w, grid_h;
} Roi;

/* The bins of one region [x1, y1, x2, y2] on an oh x ow output grid. */
static inline Roi roi_geometry(const double *box, double scale, bool half_pixel, int64_t ratio,
                               int64_t oh, int64_t ow) {
    double off = half_pixel ? 0.5 : 0;
    double x1 = box[0] * scale - off, y1 = box[1] * scale - off;
    double x2 = box[2] * scale - off, y2 = box[3] * scale - off;
    double rw = x2 - x1, rh = y2 - y1;
    if (!half_pixel) {
        rw = rw > 1 ? rw : 1;
        rh = rh > 1 ? rh : 1;
    }
    Roi g = {x1, y1, rw / (double)ow, rh / (double)oh, ratio, ratio};
    if (ratio <= 0) {
        g.grid_w = (int64_t)ceil(rw / (double)ow);
        g.grid_h = (int64_t)ceil(rh / (double)oh);
    }
    return g;
}

/* One sample's four corners: offsets in the plane and weights, which do not
 * depend on the channel, so a caller reading many planes computes them
 * once. Outside: onnxruntime's "nothing" (not weight 0 times a pixel,
 * which a NaN would make NaN). */
typedef struct RoiTap {
    int64_t at[4];
    double w[4];
    bool outside;
} RoiTap;

/* onnxruntime's bilinear read: points beyond one pixel outside give
 * nothing, points near the border clamp to it. */
static inline void roi_tap(int64_t h, int64_t w, double y, double x, RoiTap *t) {
    t->outside = y < -1.0 || y > (double)h || x < -1.0 || x > (double)w;
    if (t->outside)
        return;
    y = y <= 0 ? 0 : y;
    x = x <= 0 ? 0 : x;
    int64_t y0 = (int64_t)y, x0 = (int64_t)x, y1 = y0 + 1, x1 = x0 + 1;
    if (y0 >= h - 1) {
        y0 = y1 = h - 1;
        y = (double)y0;
    }
    if (x0 >= w - 1) {
        x0 = x1 = w - 1;
        x = (double)x0;
    }
    double ly = y - (double)y0, lx = x - (double)x0, hy = 1 - ly, hx = 1 - lx;
    t->at[0] = y0 * w + x0, t->w[0] = hy * hx;
    t->at[1] = y0 * w + x1, t->w[1] = hy * lx;
    t->at[2] = y1 * w + x0, t->w[2] = ly * hx;
    t->at[3] = y1 * w + x1, t->w[3] = ly * lx;
}

/* The taps of bin (ph, pw), grid_h * grid_w of them, row by row. */
static inline void roi_bin_taps(const Roi *r, int64_t h, int64_t w, int64_t ph, int64_t pw,
                                RoiTap *taps) {
    for (int64_t iy = 0; iy < r->grid_h; iy++) {
        double y = r->y + (double)ph * r->bin_h + ((double)iy + 0.5) * r->bin_h / (double)r->grid_h;
        for (int64_t ix = 0; ix < r->grid_w; ix++) {
            double x =
                r->x + (double)pw * r->bin_w + ((double)ix + 0.5) * r->bin_w / (double)r->grid_w;
            roi_tap(h, w, y, x, &taps[iy * r->grid_w + ix]);
        }
    }
}

/* One output bin from its taps over the plane at `base`: the average of
 * the weighted corners' sums, or (max mode, as onnxruntime) the largest
 * weighted corner. */
static inline double roi_bin_value(const RoiTap *taps, int64_t count, RoiLoad load,
                                   const void *ctx, int64_t base, bool max) {
    double acc = max ? -INFINITY : 0;
    for (int64_t s = 0; s < count; s++) {
        for (int k = 0; k < 4; k++) {
            double v = taps[s].outside ? 0 : taps[s].w[k] * load(ctx, base + taps[s].at[k]);
            acc = max ? (v > acc ? v : acc) : acc + v;
        }
    }
    if (max)
        return count ? acc : 0;
    return acc / (double)(count > 0 ? count : 1);
}

/* One output bin, its taps made here (the interpreter's way). */
static inline double roi_bin(const RoiPlane *p, const Roi *r, int64_t ph, int64_t pw, bool max) {
    int64_t count = r->grid_h * r->grid_w;
    RoiTap one[64], *taps = count <= 64 ? one : malloc((size_t)count * sizeof *taps);
    if (!taps)
        return NAN;
    roi_bin_taps(r, p->h, p->w, ph, pw, taps);
    double v = roi_bin_value(taps, count, p->load, p->ctx, p->base, max);
    if (taps != one)
        free(taps);
    return v;
}

#endif
