/* Scatter kernels: the result starts as a copy of the data, then each update
 * lands where its index says -- by element along an axis (scatter_elements),
 * by N-d index of a slice (scatter_nd), or by flat index (max_unpool).
 * Updates apply in order, so with duplicate indices and no reduction the
 * last one wins (ONNX leaves that case open; its reference does the same). */
#include <string.h>

#include "backends/interp/kernels.h"

/* RED_NONE, RED_ADD, RED_MUL, RED_MAX or RED_MIN (core/enums.def). */
typedef EnumValue Reduction;

static Reduction reduction_of(const Node *n) {
    return (Reduction)node_attr_enum(n, AK_reduction, RED_NONE);
}

/* y[dst] = y[dst] (op) u[src]: floats combine in double, integers in int64
 * (wrapping), so every element kind is exact up to its own rounding. */
static void combine(Tensor *Y, int64_t dst, const Tensor *U, int64_t src, Reduction r) {
    size_t es = elem_size(Y->type.elem);
    if (r == RED_NONE) {
        memcpy((char *)Y->data + (size_t)dst * es, (const char *)U->data + (size_t)src * es, es);
        return;
    }
    if (elem_is_float(Y->type.elem)) {
        double y = tensor_get_f64(Y, dst), u = tensor_get_f64(U, src);
        double v = r == RED_ADD ? y + u : r == RED_MUL ? y * u : r == RED_MAX ? (u > y ? u : y)
                                                                             : (u < y ? u : y);
        tensor_set_f64(Y, dst, v);
        return;
    }
    int64_t y = tensor_get_i64(Y, dst), u = tensor_get_i64(U, src);
    int64_t v = r == RED_ADD   ? (int64_t)((uint64_t)y + (uint64_t)u)
                : r == RED_MUL ? (int64_t)((uint64_t)y * (uint64_t)u)
                : r == RED_MAX ? (u > y ? u : y)
                               : (u < y ? u : y);
    tensor_set_i64(Y, dst, v);
}

static int64_t wrapped(int64_t k, int64_t len) {
    return k < 0 ? k + len : k;
}

/* Update i goes to the data position of its own coordinates, with the axis
 * coordinate replaced by indices[i]; `base` follows the other coordinates. */
bool k_scatter_elements(const KernelArgs *a) {
    const Tensor *X = a->in[0], *I = a->in[1], *U = a->in[2];
    Tensor *Y = a->out[0];
    const Type *xt = &X->type, *it = &I->type;
    memcpy(Y->data, X->data, tensor_bytes(X));
    Reduction red = reduction_of(a->n);
    int axis;
    axis_normalize(node_attr_int(a->n, AK_axis, 0), xt->rank, &axis);
    int64_t xs[MAX_RANK], idx[MAX_RANK] = {0}, base = 0, len = xt->dims[axis];
    type_strides(xt, xs);
    int64_t n = tensor_numel(I);
    for (int64_t i = 0; i < n; i++) {
        int64_t raw = tensor_get_i64(I, i), k = wrapped(raw, len);
        if (k < 0 || k >= len)
            return kernel_fail(a, "index %lld out of range for axis of size %lld",
                               (long long)raw, (long long)len);
        combine(Y, base + k * xs[axis], U, i, red);
        for (int d = it->rank - 1; d >= 0; d--) {
            int64_t st = d == axis ? 0 : xs[d];
            base += st;
            if (++idx[d] < it->dims[d])
                break;
            base -= st * it->dims[d];
            idx[d] = 0;
        }
    }
    return true;
}

/* Each row of `last` indices names a slice of the data; the matching slice
 * of the updates combines into it. */
bool k_scatter_nd(const KernelArgs *a) {
    const Tensor *X = a->in[0], *I = a->in[1], *U = a->in[2];
    Tensor *Y = a->out[0];
    const Type *xt = &X->type, *it = &I->type;
    memcpy(Y->data, X->data, tensor_bytes(X));
    Reduction red = reduction_of(a->n);
    int last = (int)it->dims[it->rank - 1];
    int64_t xs[MAX_RANK], rows = 1;
    type_strides(xt, xs);
    for (int i = 0; i < it->rank - 1; i++)
        rows *= it->dims[i];
    int64_t slice = last > 0 ? xs[last - 1] : tensor_numel(X);
    for (int64_t r = 0; r < rows; r++) {
        int64_t off = 0;
        for (int j = 0; j < last; j++) {
            int64_t raw = tensor_get_i64(I, r * last + j), k = wrapped(raw, xt->dims[j]);
            if (k < 0 || k >= xt->dims[j])
                return kernel_fail(a, "index %lld out of range for axis %d of size %lld",
                                   (long long)raw, j, (long long)xt->dims[j]);
            off += k * xs[j];
        }
        for (int64_t e = 0; e < slice; e++)
            combine(Y, off + e, U, r * slice + e, red);
    }
    return true;
}

/* Zeros, then every input value where its index says. Indices are flat
 * positions in the shape the pooling window undoes ((in - 1) * stride +
 * kernel - pads, max_pool's argmax convention); a larger declared result
 * (ONNX's output_shape) keeps those coordinates, padded at the end, as the
 * ONNX reference does. */
bool k_max_unpool(const KernelArgs *a) {
    const Tensor *X = a->in[0], *I = a->in[1];
    Tensor *Y = a->out[0];
    const Type *xt = &X->type, *yt = &Y->type;
    Window w;
    window_from_node(a->n, xt->rank - 2, NULL, &w);
    Type src = *xt;
    for (int i = 0; i < w.nspatial; i++)
        src.dims[2 + i] = (xt->dims[2 + i] - 1) * w.stride[i] + w.kernel[i] - w.pad_begin[i] -
                          w.pad_end[i];
    memset(Y->data, 0, tensor_bytes(Y));
    int64_t n = tensor_numel(X), total = type_numel(&src);
    for (int64_t i = 0; i < n; i++) {
        int64_t k = tensor_get_i64(I, i), off = 0, stride = 1, r = k;
        if (k < 0 || k >= total)
            return kernel_fail(a, "index %lld out of range for an unpooled size of %lld",
                               (long long)k, (long long)total);
        for (int d = src.rank - 1; d >= 0; d--) {
            int64_t c = r % src.dims[d];
            r /= src.dims[d];
            if (c >= yt->dims[d])
                return kernel_fail(a, "index %lld falls outside the result", (long long)k);
            off += c * stride;
            stride *= yt->dims[d];
        }
        combine(Y, off, X, i, RED_NONE);
    }
    return true;
}
