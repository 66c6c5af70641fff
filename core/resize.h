/* Resize's taps (ONNX's reference implementation, step by step), shared by
 * the interpreter's kernel and libjit's: static inline, so both build the
 * same tables and sum the same products in the same order.
 *
 * Interpolation is separable, so each axis gets a table: for every output
 * coordinate, the input positions it reads (as offsets) and their weights.
 * ONNX defines the taps of one axis like this: map the output coordinate x
 * to x_ori in the input; let ratio be x_ori's distance past the sample on
 * its left, in (0, 1] (an integral x_ori counts as ratio 1, so the "left"
 * sample is x_ori - 1); the filter gives n coefficients for the n samples
 * around it, chosen among the input extended by n/2 edge copies on each
 * side. */
#ifndef GLOWC_CORE_RESIZE_H
#define GLOWC_CORE_RESIZE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/graph.h" /* MODE_*, CTM_*, NEAREST_* */

typedef struct ResizeFilter {
    int mode, ctm, nearest_mode; /* MODE_, CTM_ and NEAREST_ values (core/enums.def) */
    double cubic_a;
    bool exclude_outside, antialias;
} ResizeFilter;

/* Where output coordinate x lands in the input. `width` is the output size
 * as the scale gives it (not rounded), as the reference computes it; r0, r1
 * the axis's roi (tf_crop_and_resize). */
static inline double resize_source(const ResizeFilter *p, double x, double scale, double width,
                                   int64_t out, int64_t in, double r0, double r1) {
    switch (p->ctm) {
    case CTM_ALIGN_CORNERS: return width == 1 ? 0 : x * (double)(in - 1) / (width - 1);
    case CTM_ASYMMETRIC: return x / scale;
    case CTM_TF_HALF_PIXEL_FOR_NN: return (x + 0.5) / scale;
    case CTM_PYTORCH_HALF_PIXEL: return width == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
    case CTM_TF_CROP_AND_RESIZE: {
        double span = (r1 - r0) * (double)(in - 1);
        return (width == 1 ? span / 2 : x * span / (width - 1)) + r0 * (double)(in - 1);
    }
    case CTM_HALF_PIXEL_SYMMETRIC: {
        double offset = (double)in / 2 * (1 - (double)out / width);
        return offset + (x + 0.5) / scale - 0.5;
    }
    default: return (x + 0.5) / scale - 0.5; /* half_pixel */
    }
}

static inline double resize_cubic_kernel(double x, double A) {
    x = fabs(x);
    if (x <= 1)
        return ((A + 2) * x - (A + 3)) * x * x + 1;
    if (x < 2)
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
    return 0;
}

/* The most taps one output coordinate of an axis scaled by `scale` needs:
 * a downscaling antialiased filter is stretched by 1/scale. */
static inline int64_t resize_coeff_cap(const ResizeFilter *p, double scale) {
    double s = p->antialias && scale < 1 ? scale : 1;
    return 2 * (int64_t)ceil(2 / s) + 4;
}

/* The filter's coefficients for samples left - n/2 + 1 ... left + n/2;
 * returns n, -1 if more than cap. With antialias, a downscaling filter is
 * stretched by 1/scale (so it has more taps) and normalised. */
static inline int64_t resize_coeffs(const ResizeFilter *p, double ratio, double scale, double *c,
                                    int64_t cap) {
    if (p->mode == MODE_NEAREST) {
        bool right = ratio == 1;
        if (ratio != 1) {
            int nm = p->nearest_mode;
            right = nm == NEAREST_CEIL                ? true
                    : nm == NEAREST_FLOOR             ? false
                    : nm == NEAREST_ROUND_PREFER_CEIL ? ratio >= 0.5
                                                       : ratio > 0.5;
        }
        c[0] = !right;
        c[1] = right;
        return 2;
    }
    double s = p->antialias && scale < 1 ? scale : 1;
    double support = p->mode == MODE_LINEAR ? 1 : 2;
    int64_t start = (int64_t)floor(-support / s) + 1, n = 2 - 2 * start;
    if (n > cap)
        return -1;
    if (!p->antialias && p->mode == MODE_CUBIC) {
        /* The reference's own polynomial forms, for bit-faithful weights. */
        double A = p->cubic_a, r = ratio, q = 1 - r;
        c[0] = ((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A;
        c[1] = ((A + 2) * r - (A + 3)) * r * r + 1;
        c[2] = ((A + 2) * q - (A + 3)) * q * q + 1;
        c[3] = ((A * (q + 1) - 5 * A) * (q + 1) + 8 * A) * (q + 1) - 4 * A;
        return 4;
    }
    if (!p->antialias) {
        c[0] = 1 - ratio;
        c[1] = ratio;
        return 2;
    }
    double sum = 0;
    for (int64_t i = 0; i < n; i++) {
        double arg = (double)(start + i - ratio) * s;
        c[i] = p->mode == MODE_LINEAR ? fmax(0, 1 - fabs(arg)) : resize_cubic_kernel(arg, p->cubic_a);
        sum += c[i];
    }
    for (int64_t i = 0; i < n; i++)
        c[i] /= sum;
    return n;
}

/* Appends the taps of the output coordinate at x_ori to off[] and w[] at
 * *k (offsets are input positions times stride); c is room for cap
 * coefficients. False when the geometry is absurd. */
static inline bool resize_coord_taps(const ResizeFilter *p, int64_t *off, double *w, int64_t *k,
                                     double x_ori, double scale, int64_t in, int64_t stride,
                                     double *c, int64_t cap) {
    if (!(fabs(x_ori) < 1e15))
        return false;
    double base = floor(x_ori);
    double ratio = x_ori == base ? 1 : x_ori - base;
    int64_t n = resize_coeffs(p, ratio, scale, c, cap);
    if (n < 0)
        return false;
    int64_t left = (int64_t)base - (ratio == 1);
    /* The n nearest samples of the edge-extended input [-n/2, in + n/2). */
    int64_t lo = left - n / 2 + 1;
    if (lo > in - n / 2)
        lo = in - n / 2;
    if (lo < -n / 2)
        lo = -n / 2;
    double kept = 0;
    for (int64_t i = 0; i < n; i++) {
        if (p->exclude_outside && (lo + i < 0 || lo + i >= in))
            c[i] = 0;
        kept += c[i];
    }
    /* Samples past an edge repeat the edge one: they share a tap, so an
     * axis never has more taps per coordinate than input positions. */
    int64_t first = *k;
    for (int64_t i = 0; i < n; i++) {
        if (c[i] == 0)
            continue;
        int64_t q = lo + i < 0 ? 0 : lo + i >= in ? in - 1 : lo + i;
        double wi = p->exclude_outside ? c[i] / kept : c[i];
        if (*k > first && off[*k - 1] == q * stride) {
            w[*k - 1] += wi;
            continue;
        }
        off[*k] = q * stride;
        w[*k] = wi;
        (*k)++;
    }
    return true;
}

#endif
