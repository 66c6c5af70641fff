/* Sampling kernels: grid_sample (values of x read at arbitrary normalized
 * positions) and roi_align (regions of interest averaged or maxed onto a
 * fixed grid). Coordinates, padding and interpolation follow the reference
 * implementations the ONNX test data comes from (PyTorch's grid_sampler,
 * onnxruntime's RoiAlign), including their treatment of the borders. */
#include <math.h>
#include <string.h>

#include "backends/interp/kernels.h"
#include "core/roi_align.h"

/* ---- grid_sample ------------------------------------------------------------ */

typedef enum { PAD_ZEROS, PAD_BORDER, PAD_REFLECTION } PadMode;

typedef struct Plane {
    const Tensor *x;
    int64_t base, h, w; /* offset of one N, C plane and its size */
    PadMode pad;
    bool align;
} Plane;

/* [-1, 1] to pixel coordinates: the extremes are the corner pixels' centres
 * (align_corners) or their outer edges. */
static double unnormalize(double c, int64_t size, bool align) {
    return align ? (c + 1) / 2 * (double)(size - 1) : ((c + 1) * (double)size - 1) / 2;
}

static double clip_coord(double c, int64_t size) {
    return c < 0 ? 0 : c > (double)(size - 1) ? (double)(size - 1) : c;
}

/* Reflects c into [lo2 / 2, hi2 / 2] (bounds given doubled, as PyTorch). */
static double reflect_coord(double c, double lo2, double hi2) {
    if (lo2 == hi2)
        return 0;
    double lo = lo2 / 2, span = (hi2 - lo2) / 2;
    c = fabs(c - lo);
    double extra = fmod(c, span);
    int64_t flips = (int64_t)floor(c / span);
    return flips % 2 == 0 ? extra + lo : span - extra + lo;
}

/* The padding mode applied to a coordinate (zeros leaves it alone). */
static double pad_coord(const Plane *p, double c, int64_t size) {
    if (p->pad == PAD_BORDER)
        return clip_coord(c, size);
    if (p->pad == PAD_REFLECTION) {
        c = p->align ? reflect_coord(c, 0, 2.0 * (double)(size - 1))
                     : reflect_coord(c, -1, 2.0 * (double)size - 1);
        return clip_coord(c, size);
    }
    return c;
}

/* The pixel at integer (y, x), zero outside the plane. */
static double pixel(const Plane *p, int64_t y, int64_t x) {
    if (y < 0 || y >= p->h || x < 0 || x >= p->w)
        return 0;
    return tensor_get_f64(p->x, p->base + y * p->w + x);
}

static double sample_nearest(const Plane *p, double ix, double iy) {
    ix = pad_coord(p, ix, p->w);
    iy = pad_coord(p, iy, p->h);
    return pixel(p, (int64_t)nearbyint(iy), (int64_t)nearbyint(ix));
}

static double sample_bilinear(const Plane *p, double ix, double iy) {
    ix = pad_coord(p, ix, p->w);
    iy = pad_coord(p, iy, p->h);
    double x0 = floor(ix), y0 = floor(iy), tx = ix - x0, ty = iy - y0;
    int64_t xi = (int64_t)x0, yi = (int64_t)y0;
    return pixel(p, yi, xi) * (1 - tx) * (1 - ty) + pixel(p, yi, xi + 1) * tx * (1 - ty) +
           pixel(p, yi + 1, xi) * (1 - tx) * ty + pixel(p, yi + 1, xi + 1) * tx * ty;
}

/* Cubic convolution weights (A = -0.75) of the taps at -1, 0, 1, 2. */
static void cubic_weights(double t, double *w) {
    const double A = -0.75;
    double x = t + 1;
    w[0] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
    x = t;
    w[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
    x = 1 - t;
    w[2] = ((A + 2) * x - (A + 3)) * x * x + 1;
    w[3] = 1 - w[0] - w[1] - w[2];
}

/* Bicubic pads each of the 16 taps, not the sampling point. */
static double sample_bicubic(const Plane *p, double ix, double iy) {
    double x0 = floor(ix), y0 = floor(iy), wx[4], wy[4], v = 0;
    cubic_weights(ix - x0, wx);
    cubic_weights(iy - y0, wy);
    for (int j = 0; j < 4; j++) {
        for (int i = 0; i < 4; i++) {
            double tx = pad_coord(p, x0 - 1 + i, p->w), ty = pad_coord(p, y0 - 1 + j, p->h);
            v += wx[i] * wy[j] * pixel(p, (int64_t)ty, (int64_t)tx);
        }
    }
    return v;
}

bool k_grid_sample(const KernelArgs *a) {
    const Tensor *X = a->in[0], *G = a->in[1];
    Tensor *Y = a->out[0];
    const Type *xt = &X->type, *yt = &Y->type;
    int mode = node_attr_enum(a->n, AK_mode, MODE_BILINEAR);
    int pad = node_attr_enum(a->n, AK_padding_mode, PADDING_ZEROS);
    Plane p = {X, 0, xt->dims[2], xt->dims[3],
               pad == PADDING_BORDER ? PAD_BORDER
               : pad == PADDING_REFLECTION ? PAD_REFLECTION : PAD_ZEROS,
               node_attr_int(a->n, AK_align_corners, 0) != 0};
    double (*sample)(const Plane *, double, double) =
        mode == MODE_NEAREST ? sample_nearest
        : mode == MODE_BICUBIC ? sample_bicubic : sample_bilinear;
    int64_t ho = yt->dims[2], wo = yt->dims[3], o = 0;
    for (int64_t n = 0; n < yt->dims[0]; n++) {
        for (int64_t c = 0; c < yt->dims[1]; c++) {
            p.base = (n * xt->dims[1] + c) * p.h * p.w;
            for (int64_t i = 0; i < ho * wo; i++) {
                int64_t g = (n * ho * wo + i) * 2;
                double ix = unnormalize(tensor_get_f64(G, g), p.w, p.align);
                double iy = unnormalize(tensor_get_f64(G, g + 1), p.h, p.align);
                tensor_set_f64(Y, o++, sample(&p, ix, iy));
            }
        }
    }
    return true;
}

/* ---- roi_align -------------------------------------------------------------- */

static double roi_load(const void *ctx, int64_t i) {
    return tensor_get_f64(ctx, i);
}

/* The region's bins (core/roi_align.h). */
static Roi roi_of(const KernelArgs *a, int64_t r, int64_t oh, int64_t ow) {
    bool half = node_attr_enum(a->n, AK_coordinate_transformation_mode, CTM_HALF_PIXEL) ==
                CTM_HALF_PIXEL;
    double box[4];
    for (int k = 0; k < 4; k++)
        box[k] = tensor_get_f64(a->in[1], r * 4 + k);
    return roi_geometry(box, node_attr_float(a->n, AK_spatial_scale, 1.0f), half,
                        node_attr_int(a->n, AK_sampling_ratio, 0), oh, ow);
}

bool k_roi_align(const KernelArgs *a) {
    const Tensor *X = a->in[0], *B = a->in[2];
    Tensor *Y = a->out[0];
    const Type *xt = &X->type, *yt = &Y->type;
    bool max = node_attr_enum(a->n, AK_mode, MODE_AVG) == MODE_MAX;
    int64_t channels = xt->dims[1], oh = yt->dims[2], ow = yt->dims[3], o = 0;
    RoiPlane p = {roi_load, X, 0, xt->dims[2], xt->dims[3]};
    for (int64_t r = 0; r < yt->dims[0]; r++) {
        int64_t b = tensor_get_i64(B, r);
        if (b < 0 || b >= xt->dims[0])
            return kernel_fail(a, "batch index %lld out of range [0, %lld)", (long long)b,
                               (long long)xt->dims[0]);
        Roi g = roi_of(a, r, oh, ow);
        for (int64_t c = 0; c < channels; c++) {
            p.base = (b * channels + c) * p.h * p.w;
            for (int64_t ph = 0; ph < oh; ph++)
                for (int64_t pw = 0; pw < ow; pw++)
                    tensor_set_f64(Y, o++, roi_bin(&p, &g, ph, pw, max));
        }
    }
    return true;
}
