/* Kernels whose result sizes depend on values (bounded-dynamic results):
 * nonzero, compress, unique, nms. The driver allocates each result at its
 * bound; a kernel writes the run-time size into its result tensor's type,
 * which is how the size travels with the value. */
#include <math.h>
#include <string.h>

#include "backends/interp/kernels.h"
#include "core/nms.h"
#include "core/unique.h"

/* Shrinks a result to `n` along `axis` (it was allocated at the bound). */
static void set_size(Tensor *t, int axis, int64_t n) {
    t->type.dims[axis] = n;
    t->type.dyn = 0;
}

bool k_nonzero(const KernelArgs *a) {
    const Tensor *x = a->in[0];
    Tensor *y = a->out[0];
    const Type *xt = &x->type;
    int64_t n = tensor_numel(x), count = 0, idx[MAX_RANK] = {0};
    for (int64_t i = 0; i < n; i++)
        count += tensor_get_f64(x, i) != 0;
    set_size(y, 1, count);
    int64_t *out = y->data;
    for (int64_t i = 0, j = 0; i < n; i++) {
        if (tensor_get_f64(x, i) != 0) {
            for (int d = 0; d < xt->rank; d++)
                out[d * count + j] = idx[d];
            if (!xt->rank)
                out[j] = 0;
            j++;
        }
        for (int d = xt->rank - 1; d >= 0; d--) {
            if (++idx[d] < xt->dims[d])
                break;
            idx[d] = 0;
        }
    }
    return true;
}

/* A condition shorter than the axis drops the rest; a true beyond it is an
 * error, as ONNX Runtime makes it. */
bool k_compress(const KernelArgs *a) {
    const Tensor *x = a->in[0], *c = a->in[1];
    Tensor *y = a->out[0];
    const Type *xt = &x->type;
    int axis;
    axis_normalize(node_attr_int(a->n, AK_axis, 0), xt->rank, &axis);
    int64_t len = xt->dims[axis], nc = tensor_numel(c), outer = 1, inner = 1, kept = 0;
    for (int i = 0; i < axis; i++)
        outer *= xt->dims[i];
    for (int i = axis + 1; i < xt->rank; i++)
        inner *= xt->dims[i];
    for (int64_t i = 0; i < nc; i++) {
        if (tensor_get_f64(c, i) == 0)
            continue;
        if (i >= len)
            return kernel_fail(a, "the condition selects position %lld of an axis of %lld",
                               (long long)i, (long long)len);
        kept++;
    }
    set_size(y, axis, kept);
    size_t es = elem_size(xt->elem), row = (size_t)inner * es;
    char *dst = y->data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < nc; i++)
            if (tensor_get_f64(c, i) != 0) {
                memcpy(dst, (const char *)x->data + (size_t)(o * len + i) * row, row);
                dst += row;
            }
    return true;
}

bool k_unique(const KernelArgs *a) {
    const Tensor *x = a->in[0];
    int axis;
    axis_normalize(node_attr_int(a->n, AK_axis, 0), x->type.rank, &axis);
    Arena *tmp = arena_new();
    if (!tmp)
        return kernel_fail(a, "out of memory");
    UniqueSlices s;
    unique_slices(x, axis, &s);
    Uniques u;
    unique_find(&s, node_attr_int(a->n, AK_sorted, 1) != 0, &u, tmp);
    set_size(a->out[0], axis, u.n);
    unique_gather(&s, &u, a->out[0]);
    set_size(a->out[1], 0, u.n);
    set_size(a->out[3], 0, u.n);
    memcpy(a->out[1]->data, u.first, (size_t)u.n * sizeof(int64_t));
    memcpy(a->out[2]->data, u.inverse, (size_t)s.count * sizeof(int64_t));
    memcpy(a->out[3]->data, u.counts, (size_t)u.n * sizeof(int64_t));
    arena_destroy(tmp);
    return true;
}

/* The operand's type is its run-time type (the runner typed the node). */
bool k_shape(const KernelArgs *a) {
    const Type *t = &a->in[0]->type;
    for (int i = 0; i < t->rank; i++)
        ((int64_t *)a->out[0]->data)[i] = t->dims[i];
    return true;
}

/* ---- nms ---- */

static double scalar_or(const KernelArgs *a, int i, double dflt) {
    return a->n->nops > i ? tensor_get_f64(a->in[i], 0) : dflt;
}

/* core/nms.h's selection; more boxes than the bound is an error. */
bool k_nms(const KernelArgs *a) {
    const Tensor *boxes = a->in[0], *scores = a->in[1];
    Tensor *y = a->out[0];
    /* An integer read as one (exporters give INT64_MAX for "no limit"). */
    int64_t max_out = a->n->nops > 2 ? tensor_get_i64(a->in[2], 0) : 0;
    float iou = (float)scalar_or(a, 3, 0), thr = (float)scalar_or(a, 4, -INFINITY);
    int64_t bound = y->type.dims[0];
    int64_t rows = nms_select(boxes->data, scores->data, scores->type.dims[0],
                              scores->type.dims[1], scores->type.dims[2], max_out, iou, thr,
                              node_attr_int(a->n, AK_center_point_box, 0) != 0, y->data, bound);
    if (rows == NMS_NO_MEMORY)
        return kernel_fail(a, "out of memory");
    if (rows == NMS_BEYOND_BOUND)
        return kernel_fail(a, "more than the bound of %lld selected boxes", (long long)bound);
    set_size(y, 0, rows);
    return true;
}
