/* The resize kernel: nearest, linear and cubic interpolation over every axis,
 * with each axis's taps from core/resize.h (ONNX's reference, one source
 * for this kernel and libjit's). An output element is the sum over the
 * product of its axes' taps. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/interp/kernels.h"
#include "core/resize.h"

typedef struct ResizeParams {
    ResizeFilter f;
    double extrapolation;
} ResizeParams;

/* One axis's taps: output coordinate o reads off[k] with weight w[k] for k
 * in [first[o], first[o + 1]); outside[o] marks tf_crop_and_resize
 * coordinates that fall off the input and take the extrapolation value. */
typedef struct AxisTaps {
    int64_t *first, *off;
    double *w;
    bool *outside;
} AxisTaps;

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
    double s = p->f.antialias && scale < 1 ? scale : 1;
    if (!(2 / s < 1e9))
        return false;
    int64_t cap = resize_coeff_cap(&p->f, scale), per = cap < in ? cap : in;
    double *c = malloc((size_t)cap * sizeof(double));
    t->first = malloc((size_t)(out + 1) * sizeof(int64_t));
    t->off = malloc((size_t)(out * per + 1) * sizeof(int64_t));
    t->w = malloc((size_t)(out * per + 1) * sizeof(double));
    t->outside = calloc((size_t)out + 1, sizeof(bool));
    bool ok = c && t->first && t->off && t->w && t->outside;
    int64_t k = 0;
    bool crop = p->f.ctm == CTM_TF_CROP_AND_RESIZE;
    double r0 = roi ? roi[0] : 0, r1 = roi ? roi[1] : 1;
    for (int64_t o = 0; ok && o < out; o++) {
        t->first[o] = k;
        double x_ori = resize_source(&p->f, (double)o, scale, width, out, in, r0, r1);
        if (crop && (x_ori < 0 || x_ori > (double)(in - 1)))
            t->outside[o] = true;
        else
            ok = resize_coord_taps(&p->f, t->off, t->w, &k, x_ori, scale, in, stride, c, cap);
    }
    if (ok)
        t->first[out] = k;
    free(c);
    return ok;
}

static void resize_params(const Node *n, ResizeParams *p) {
    p->f.mode = node_attr_enum(n, AK_mode, MODE_NEAREST);
    p->f.ctm = node_attr_enum(n, AK_coordinate_transformation_mode, CTM_HALF_PIXEL);
    p->f.nearest_mode = node_attr_enum(n, AK_nearest_mode, NEAREST_ROUND_PREFER_FLOOR);
    p->f.cubic_a = node_attr_float(n, AK_cubic_coeff_a, -0.75f);
    p->extrapolation = node_attr_float(n, AK_extrapolation_value, 0.0f);
    p->f.exclude_outside = node_attr_int(n, AK_exclude_outside, 0) != 0;
    p->f.antialias = node_attr_int(n, AK_antialias, 0) != 0;
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
