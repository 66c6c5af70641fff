/* The resize kernel: nearest, linear and cubic interpolation over every axis,
 * following ONNX's reference implementation step by step.
 *
 * Interpolation is separable, so each axis gets a table first: for every
 * output coordinate, the input positions it reads (as offsets) and their
 * weights. An output element is then the sum over the product of its
 * axes' taps. ONNX defines the taps of one axis like this: map the output
 * coordinate x to x_ori in the input; let ratio be x_ori's distance past
 * the sample on its left, in (0, 1] (an integral x_ori counts as ratio 1, so
 * the "left" sample is x_ori - 1); the filter gives n coefficients for the
 * n samples around it, chosen among the input extended by n/2 edge copies
 * on each side. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/interp/kernels.h"

typedef struct ResizeParams {
    int mode, ctm, nearest_mode; /* MODE_, CTM_ and NEAREST_ values (core/enums.def) */
    double cubic_a, extrapolation;
    bool exclude_outside, antialias;
} ResizeParams;

/* One axis's taps: output coordinate o reads off[k] with weight w[k] for k
 * in [first[o], first[o + 1]); outside[o] marks tf_crop_and_resize
 * coordinates that fall off the input and take the extrapolation value. */
typedef struct AxisTaps {
    int64_t *first, *off;
    double *w;
    bool *outside;
} AxisTaps;

/* Where output coordinate x lands in the input. `width` is the output size
 * as the scale gives it (not rounded), as the reference computes it. */
static double resize_source(const ResizeParams *p, double x, double scale, double width,
                            int64_t out, int64_t in, const float *roi) {
    switch (p->ctm) {
    case CTM_ALIGN_CORNERS: return width == 1 ? 0 : x * (double)(in - 1) / (width - 1);
    case CTM_ASYMMETRIC: return x / scale;
    case CTM_TF_HALF_PIXEL_FOR_NN: return (x + 0.5) / scale;
    case CTM_PYTORCH_HALF_PIXEL: return width == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
    case CTM_TF_CROP_AND_RESIZE: {
        double r0 = roi ? roi[0] : 0, r1 = roi ? roi[1] : 1;
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

static double cubic_kernel(double x, double A) {
    x = fabs(x);
    if (x <= 1)
        return ((A + 2) * x - (A + 3)) * x * x + 1;
    if (x < 2)
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
    return 0;
}

/* The filter's coefficients for samples left - n/2 + 1 ... left + n/2;
 * returns n. With antialias, a downscaling filter is stretched by 1/scale
 * (so it has more taps) and normalised. c has room for cap values. */
static int64_t resize_coeffs(const ResizeParams *p, double ratio, double scale, double *c,
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
        c[i] = p->mode == MODE_LINEAR ? fmax(0, 1 - fabs(arg)) : cubic_kernel(arg, p->cubic_a);
        sum += c[i];
    }
    for (int64_t i = 0; i < n; i++)
        c[i] /= sum;
    return n;
}

/* Taps of output coordinate x: appends to t at *k. */
static bool axis_coord_taps(const ResizeParams *p, AxisTaps *t, int64_t *k, double x_ori,
                            double scale, int64_t in, int64_t stride, double *c, int64_t cap) {
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
        double w = p->exclude_outside ? c[i] / kept : c[i];
        if (*k > first && t->off[*k - 1] == q * stride) {
            t->w[*k - 1] += w;
            continue;
        }
        t->off[*k] = q * stride;
        t->w[*k] = w;
        (*k)++;
    }
    return true;
}

static void axis_taps_free(AxisTaps *t) {
    free(t->first);
    free(t->off);
    free(t->w);
    free(t->outside);
}

/* Tables for one axis. scale_attr <= 0: none given, the scale is out / in.
 * False when out of memory or the geometry is absurd (a window of billions). */
static bool axis_taps(const KernelArgs *a, const ResizeParams *p, int axis, double scale_attr,
                      const float *roi, int64_t stride, AxisTaps *t) {
    int64_t in = a->in[0]->type.dims[axis], out = a->out[0]->type.dims[axis];
    double scale = scale_attr, width;
    if (scale_attr > 0) {
        width = (double)((float)scale_attr * (float)in); /* f32 as in the reference */
    } else {
        scale = (double)out / (double)in;
        width = scale * (double)in;
    }
    double s = p->antialias && scale < 1 ? scale : 1;
    if (!(2 / s < 1e9))
        return false;
    int64_t cap = 2 * (int64_t)ceil(2 / s) + 4, per = cap < in ? cap : in;
    double *c = malloc((size_t)cap * sizeof(double));
    t->first = malloc((size_t)(out + 1) * sizeof(int64_t));
    t->off = malloc((size_t)(out * per + 1) * sizeof(int64_t));
    t->w = malloc((size_t)(out * per + 1) * sizeof(double));
    t->outside = calloc((size_t)out + 1, sizeof(bool));
    bool ok = c && t->first && t->off && t->w && t->outside;
    int64_t k = 0;
    bool crop = p->ctm == CTM_TF_CROP_AND_RESIZE;
    for (int64_t o = 0; ok && o < out; o++) {
        t->first[o] = k;
        double x_ori = resize_source(p, (double)o, scale, width, out, in, roi);
        if (crop && (x_ori < 0 || x_ori > (double)(in - 1)))
            t->outside[o] = true;
        else
            ok = axis_coord_taps(p, t, &k, x_ori, scale, in, stride, c, cap);
    }
    if (ok)
        t->first[out] = k;
    free(c);
    return ok;
}

static void resize_params(const Node *n, ResizeParams *p) {
    p->mode = node_attr_enum(n, AK_mode, MODE_NEAREST);
    p->ctm = node_attr_enum(n, AK_coordinate_transformation_mode, CTM_HALF_PIXEL);
    p->nearest_mode = node_attr_enum(n, AK_nearest_mode, NEAREST_ROUND_PREFER_FLOOR);
    p->cubic_a = node_attr_float(n, AK_cubic_coeff_a, -0.75f);
    p->extrapolation = node_attr_float(n, AK_extrapolation_value, 0.0f);
    p->exclude_outside = node_attr_int(n, AK_exclude_outside, 0) != 0;
    p->antialias = node_attr_int(n, AK_antialias, 0) != 0;
}

/* One output element: the sum over every combination of its axes' taps. A
 * single tap of weight 1 (nearest, or an axis left alone) copies the element,
 * which keeps 64-bit integers exact. An axis without taps (exclude_outside
 * dropped them all) gives 0/0, as in the reference. */
static void resize_element(const Tensor *X, Tensor *Y, int64_t yo, int rank,
                           const AxisTaps *t, const int64_t *oidx) {
    int64_t k[MAX_RANK], lo[MAX_RANK], hi[MAX_RANK], single = 1;
    for (int i = 0; i < rank; i++) {
        lo[i] = k[i] = t[i].first[oidx[i]];
        hi[i] = t[i].first[oidx[i] + 1];
        if (hi[i] == lo[i]) {
            tensor_set_f64(Y, yo, NAN);
            return;
        }
        single &= hi[i] - lo[i] == 1 && t[i].w[lo[i]] == 1;
    }
    if (single) {
        int64_t off = 0;
        for (int i = 0; i < rank; i++)
            off += t[i].off[lo[i]];
        size_t es = elem_size(X->type.elem);
        memcpy((char *)Y->data + (size_t)yo * es, (const char *)X->data + (size_t)off * es, es);
        return;
    }
    bool f32 = X->type.elem == ELEM_F32;
    double acc = 0;
    for (;;) {
        int64_t off = 0;
        double w = 1;
        for (int i = 0; i < rank; i++) {
            off += t[i].off[k[i]];
            w *= t[i].w[k[i]];
        }
        acc += w * (f32 ? ((const float *)X->data)[off] : tensor_get_f64(X, off));
        int i = rank - 1;
        for (; i >= 0; i--) {
            if (++k[i] < hi[i])
                break;
            k[i] = lo[i];
        }
        if (i < 0)
            break;
    }
    tensor_set_f64(Y, yo, acc);
}

bool k_resize(const KernelArgs *a) {
    const Tensor *X = a->in[0];
    Tensor *Y = a->out[0];
    const Type *yt = &Y->type;
    int rank = yt->rank;
    if (tensor_numel(Y) == 0)
        return true;
    ResizeParams p;
    resize_params(a->n, &p);
    int ns, nr;
    const float *scales = node_attr_floats(a->n, AK_scales, &ns);
    const float *roi = node_attr_floats(a->n, AK_roi, &nr);
    int64_t xs[MAX_RANK];
    type_strides(&X->type, xs);
    AxisTaps taps[MAX_RANK] = {0};
    bool ok = true;
    for (int i = 0; i < rank && ok; i++) {
        float r2[2] = {roi ? roi[i] : 0, roi ? roi[rank + i] : 1};
        ok = axis_taps(a, &p, i, scales ? scales[i] : -1, r2, xs[i], &taps[i]);
    }
    int64_t n = tensor_numel(Y), oidx[MAX_RANK] = {0};
    for (int64_t yo = 0; ok && yo < n; yo++) {
        bool outside = false;
        for (int i = 0; i < rank; i++)
            outside |= taps[i].outside[oidx[i]];
        if (outside)
            tensor_set_f64(Y, yo, p.extrapolation);
        else
            resize_element(X, Y, yo, rank, taps, oidx);
        for (int i = rank - 1; i >= 0; i--) {
            if (++oidx[i] < yt->dims[i])
                break;
            oidx[i] = 0;
        }
    }
    for (int i = 0; i < rank; i++)
        axis_taps_free(&taps[i]);
    return ok || kernel_fail(a, "out of memory for the interpolation tables, or a "
                                "coordinate far outside the input");
}
