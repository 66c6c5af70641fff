/* RoiAlign's arithmetic (onnxruntime's, which the ONNX test data comes
 * from), shared by the interpreter's kernel and libjit's: static inline
 * over a loader of the input plane's elements, so each side reads its own
 * tensors and both compute the same products in the same order. */
#ifndef GLOWC_CORE_ROI_ALIGN_H
#define GLOWC_CORE_ROI_ALIGN_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

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

static inline double roi_pixel(const RoiPlane *p, int64_t y, int64_t x) {
    return p->load(p->ctx, p->base + y * p->w + x);
}

/* onnxruntime's bilinear read: points beyond one pixel outside give
 * nothing, points near the border clamp to it. Writes the four corner
 * contributions (weight times value). */
static inline void roi_bilinear(const RoiPlane *p, double y, double x, double *v) {
    v[0] = v[1] = v[2] = v[3] = 0;
    if (y < -1.0 || y > (double)p->h || x < -1.0 || x > (double)p->w)
        return;
    y = y <= 0 ? 0 : y;
    x = x <= 0 ? 0 : x;
    int64_t y0 = (int64_t)y, x0 = (int64_t)x, y1 = y0 + 1, x1 = x0 + 1;
    if (y0 >= p->h - 1) {
        y0 = y1 = p->h - 1;
        y = (double)y0;
    }
    if (x0 >= p->w - 1) {
        x0 = x1 = p->w - 1;
        x = (double)x0;
    }
    double ly = y - (double)y0, lx = x - (double)x0, hy = 1 - ly, hx = 1 - lx;
    v[0] = hy * hx * roi_pixel(p, y0, x0);
    v[1] = hy * lx * roi_pixel(p, y0, x1);
    v[2] = ly * hx * roi_pixel(p, y1, x0);
    v[3] = ly * lx * roi_pixel(p, y1, x1);
}

/* One output bin: the average of its sample points, or (max mode, as
 * onnxruntime) the largest weighted corner among them. */
static inline double roi_bin(const RoiPlane *p, const Roi *r, int64_t ph, int64_t pw, bool max) {
    double acc = max ? -INFINITY : 0, v[4];
    for (int64_t iy = 0; iy < r->grid_h; iy++) {
        double y = r->y + (double)ph * r->bin_h + ((double)iy + 0.5) * r->bin_h / (double)r->grid_h;
        for (int64_t ix = 0; ix < r->grid_w; ix++) {
            double x =
                r->x + (double)pw * r->bin_w + ((double)ix + 0.5) * r->bin_w / (double)r->grid_w;
            roi_bilinear(p, y, x, v);
            for (int k = 0; k < 4; k++)
                acc = max ? (v[k] > acc ? v[k] : acc) : acc + v[k];
        }
    }
    int64_t count = r->grid_h * r->grid_w;
    if (max)
        return count ? acc : 0;
    return acc / (double)(count > 0 ? count : 1);
}

#endif
