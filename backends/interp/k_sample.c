/* Sampling kernels: grid_sample (values of x read at arbitrary normalized
 * positions) and roi_align (regions of interest averaged or maxed onto a
 * fixed grid). Coordinates, padding and interpolation follow the reference
 * implementations the ONNX test data comes from (PyTorch's grid_sampler,
 * onnxruntime's RoiAlign), including their treatment of the borders. */
#include <math.h>
#include <string.h>

#include "backends/interp/kernels.h"
#include "core/grid_sample.h"
#include "core/roi_align.h"

/* ---- grid_sample ------------------------------------------------------------ */

typedef struct PlaneLoad {
    const Tensor *x;
    int64_t base; /* offset of one N, C plane */
} PlaneLoad;

static double plane_load(const void *ctx, int64_t i) {
    const PlaneLoad *p = ctx;
    return tensor_get_f64(p->x, p->base + i);
}

/* The taps of each output point (core/grid_sample.h), per channel. */
bool k_grid_sample(const KernelArgs *a) {
    const Tensor *X = a->in[0], *G = a->in[1];
    Tensor *Y = a->out[0];
    const Type *xt = &X->type, *yt = &Y->type;
    GsGeom g = {node_attr_enum(a->n, AK_mode, MODE_BILINEAR),
                node_attr_enum(a->n, AK_padding_mode, PADDING_ZEROS),
                node_attr_int(a->n, AK_align_corners, 0) != 0, xt->dims[2], xt->dims[3]};
    int64_t ho = yt->dims[2], wo = yt->dims[3], o = 0;
    for (int64_t n = 0; n < yt->dims[0]; n++) {
        for (int64_t c = 0; c < yt->dims[1]; c++) {
            PlaneLoad p = {X, (n * xt->dims[1] + c) * g.h * g.w};
            for (int64_t i = 0; i < ho * wo; i++) {
                int64_t at = (n * ho * wo + i) * 2;
                double ix = gs_unnormalize(tensor_get_f64(G, at), g.w, g.align);
                double iy = gs_unnormalize(tensor_get_f64(G, at + 1), g.h, g.align);
                GsTaps t;
                gs_taps(&g, ix, iy, &t);
                tensor_set_f64(Y, o++, gs_value(&g, &t, plane_load, &p));
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
