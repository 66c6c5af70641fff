/* Data-movement kernels: reshapes, transposes, concatenation, splitting,
 * slicing, gathering (by axis, by element, by N-d index), broadcasting,
 * padding, tiling, one-hot, triangles, sequence reversal and the depth/space
 * block moves. They move bytes and never look at data values (only at
 * indices), so one loop serves every element kind. */
#include <string.h>

#include "backends/interp/kernels.h"
#include "core/range.h"

static bool copy_bytes(const KernelArgs *a) {
    memcpy(a->out[0]->data, a->in[0]->data, tensor_bytes(a->in[0]));
    return true;
}

bool k_reshape(const KernelArgs *a) { return copy_bytes(a); }
bool k_flatten(const KernelArgs *a) { return copy_bytes(a); }
bool k_squeeze(const KernelArgs *a) { return copy_bytes(a); }
bool k_unsqueeze(const KernelArgs *a) { return copy_bytes(a); }

/* out[i0..] = in[index mapped through perm], walking the output in order. */
bool k_transpose(const KernelArgs *a) {
    const Tensor *X = a->in[0];
    Tensor *Y = a->out[0];
    const Type *xt = &X->type;
    int rank = xt->rank;
    int k;
    const int64_t *perm = node_attr_ints(a->n, AK_perm, &k);
    int64_t xs[MAX_RANK], st[MAX_RANK], dims[MAX_RANK], idx[MAX_RANK] = {0};
    type_strides(xt, xs);
    for (int i = 0; i < rank; i++) {
        int p = perm ? (int)perm[i] : rank - 1 - i;
        st[i] = xs[p];
        dims[i] = xt->dims[p];
    }
    size_t es = elem_size(xt->elem);
    int64_t n = tensor_numel(X), off = 0;
    const char *src = X->data;
    char *dst = Y->data;
    for (int64_t i = 0; i < n; i++) {
        memcpy(dst + (size_t)i * es, src + (size_t)off * es, es);
        for (int d = rank - 1; d >= 0; d--) {
            off += st[d];
            if (++idx[d] < dims[d])
                break;
            off -= st[d] * dims[d];
            idx[d] = 0;
        }
    }
    return true;
}

/* Outer = product of dims before axis; each operand contributes a block of
 * dims[axis] * inner elements per outer index. */
bool k_concat(const KernelArgs *a) {
    const Type *yt = &a->out[0]->type;
    int axis;
    axis_normalize(node_attr_int(a->n, AK_axis, 0), yt->rank, &axis);
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++)
        outer *= yt->dims[i];
    for (int i = axis + 1; i < yt->rank; i++)
        inner *= yt->dims[i];
    size_t es = elem_size(yt->elem);
    char *dst = a->out[0]->data;
    for (int64_t o = 0; o < outer; o++) {
        for (int k = 0; k < a->n->nops; k++) {
            const Tensor *x = a->in[k];
            size_t block = (size_t)(x->type.dims[axis] * inner) * es;
            memcpy(dst, (const char *)x->data + (size_t)o * block, block);
            dst += block;
        }
    }
    return true;
}

bool k_split(const KernelArgs *a) {
    const Tensor *X = a->in[0];
    const Type *xt = &X->type;
    int axis;
    axis_normalize(node_attr_int(a->n, AK_axis, 0), xt->rank, &axis);
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++)
        outer *= xt->dims[i];
    for (int i = axis + 1; i < xt->rank; i++)
        inner *= xt->dims[i];
    size_t es = elem_size(xt->elem);
    const char *src = X->data;
    for (int64_t o = 0; o < outer; o++) {
        for (int k = 0; k < a->n->nres; k++) {
            Tensor *y = a->out[k];
            size_t block = (size_t)(y->type.dims[axis] * inner) * es;
            memcpy((char *)y->data + (size_t)o * block, src, block);
            src += block;
        }
    }
    return true;
}

/* Run-time ends (operand 1, one per entry of axes) over the ends
 * attribute, so that core/slice.h clamps them as libjit's rule does; Y was
 * allocated at their bounds, which a size beyond is refused, never
 * written past. */
static bool slice_run_time(const KernelArgs *a, const Type *xt, Tensor *Y, int64_t *start,
                           int64_t *step, int64_t *count) {
    int na, ne, nt;
    const int64_t *axes = node_attr_ints(a->n, AK_axes, &na);
    const int64_t *e = node_attr_ints(a->n, AK_ends, &ne), *t = node_attr_ints(a->n, AK_steps, &nt);
    int64_t ends[MAX_RANK];
    for (int i = 0; i < xt->rank; i++) /* an end not given: past the last index stepped to */
        ends[i] = e && i < ne ? e[i] : t && i < nt && t[i] < 0 ? INT64_MIN : INT64_MAX;
    for (int i = 0; i < na; i++)
        ends[axes[i]] = tensor_get_i64(a->in[1], i);
    slice_params_ends(a->n, xt, ends, start, step, count);
    for (int i = 0; i < na; i++) {
        int64_t ax = axes[i];
        if (count[ax] > Y->type.dims[ax])
            return kernel_fail(a, "run-time size %lld of dimension %lld is beyond its bound %lld",
                               (long long)count[ax], (long long)ax,
                               (long long)Y->type.dims[ax]);
        Y->type.dims[ax] = count[ax];
    }
    Y->type.dyn = 0;
    return true;
}

bool k_slice(const KernelArgs *a) {
    const Tensor *X = a->in[0];
    Tensor *Y = a->out[0];
    const Type *xt = &X->type;
    int64_t start[MAX_RANK], step[MAX_RANK], count[MAX_RANK], xs[MAX_RANK];
    if (a->n->nops > 1) {
        if (!slice_run_time(a, xt, Y, start, step, count))
            return false;
    } else {
        slice_params(a->n, xt, start, step, count);
    }
    type_strides(xt, xs);
    int rank = xt->rank;
    int64_t n = tensor_numel(Y), idx[MAX_RANK] = {0}, off = 0;
    for (int i = 0; i < rank; i++)
        off += start[i] * xs[i];
    size_t es = elem_size(xt->elem);
    for (int64_t i = 0; i < n; i++) {
        memcpy((char *)Y->data + (size_t)i * es, (const char *)X->data + (size_t)off * es, es);
        for (int d = rank - 1; d >= 0; d--) {
            off += step[d] * xs[d];
            if (++idx[d] < count[d])
                break;
            off -= step[d] * xs[d] * count[d];
            idx[d] = 0;
        }
    }
    return true;
}

/* Negative indices count from the end; out-of-range ones are an error. */
bool k_gather(const KernelArgs *a) {
    const Tensor *X = a->in[0], *I = a->in[1];
    const Type *xt = &X->type;
    int axis;
    axis_normalize(node_attr_int(a->n, AK_axis, 0), xt->rank, &axis);
    int64_t outer = 1, inner = 1, len = xt->dims[axis];
    for (int i = 0; i < axis; i++)
        outer *= xt->dims[i];
    for (int i = axis + 1; i < xt->rank; i++)
        inner *= xt->dims[i];
    int64_t nidx = tensor_numel(I);
    size_t es = elem_size(xt->elem), block = (size_t)inner * es;
    char *dst = a->out[0]->data;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t j = 0; j < nidx; j++) {
            int64_t k = tensor_get_i64(I, j);
            if (k < 0)
                k += len;
            if (k < 0 || k >= len)
                return kernel_fail(a, "index %lld out of range [0, %lld)",
                                   (long long)tensor_get_i64(I, j), (long long)len);
            memcpy(dst, (const char *)X->data + ((size_t)(o * len + k) * block), block);
            dst += block;
        }
    }
    return true;
}

/* The result's size from a run-time shape (operand 1), each dimension
 * broadcast with x's as ONNX's Expand does; Y was allocated at the bound,
 * which a size beyond is refused, never written past. */
static bool expand_size(const KernelArgs *a, const Tensor *X, const Tensor *S, Tensor *Y) {
    Type *yt = &Y->type;
    int ns = (int)tensor_numel(S), off = yt->rank - ns, xoff = yt->rank - X->type.rank;
    for (int i = 0; i < yt->rank; i++) {
        int64_t s = i >= off ? tensor_get_i64(S, i - off) : 1;
        int64_t x = i >= xoff ? X->type.dims[i - xoff] : 1;
        if (s < 0)
            return kernel_fail(a, "negative dimension %lld in the shape", (long long)s);
        if (s != x && s != 1 && x != 1)
            return kernel_fail(a, "dimension %d: %lld does not broadcast with %lld", i,
                               (long long)x, (long long)s);
        int64_t r = s == 1 ? x : s;
        if (r > yt->dims[i])
            return kernel_fail(a, "run-time size %lld of dimension %d is beyond its bound %lld",
                               (long long)r, i, (long long)yt->dims[i]);
        yt->dims[i] = r;
    }
    yt->dyn = 0;
    return true;
}

bool k_expand(const KernelArgs *a) {
    const Tensor *X = a->in[0];
    Tensor *Y = a->out[0];
    if (a->n->nops > 1 && !expand_size(a, X, a->in[1], Y))
        return false;
    const Type *ts[1] = {&X->type};
    Bcast bc;
    bcast_init(&bc, &Y->type, ts, 1);
    size_t es = elem_size(X->type.elem);
    int64_t n = tensor_numel(Y);
    for (int64_t i = 0; i < n; i++, bcast_next(&bc))
        memcpy((char *)Y->data + (size_t)i * es, (const char *)X->data + (size_t)bc.off[0] * es,
               es);
    return true;
}

/* Tile's run-time repeats: the result's sizes, each within its bound. */
static bool tile_size(const KernelArgs *a, const Tensor *X, const Tensor *R, Tensor *Y) {
    Type *yt = &Y->type;
    for (int i = 0; i < yt->rank; i++) {
        int64_t r = tensor_get_i64(R, i), s;
        if (r < 0)
            return kernel_fail(a, "repeat %lld of dimension %d is negative", (long long)r, i);
        if (__builtin_mul_overflow(X->type.dims[i], r, &s) || s > yt->dims[i])
            return kernel_fail(a, "run-time size %lld x %lld of dimension %d is beyond its "
                               "bound %lld", (long long)X->type.dims[i], (long long)r, i,
                               (long long)yt->dims[i]);
        yt->dims[i] = s;
    }
    yt->dyn = 0;
    return true;
}

bool k_tile(const KernelArgs *a) {
    const Tensor *X = a->in[0];
    Tensor *Y = a->out[0];
    if (a->n->nops > 1 && !tile_size(a, X, a->in[1], Y))
        return false;
    const Type *xt = &X->type, *yt = &Y->type;
    int64_t xs[MAX_RANK], idx[MAX_RANK] = {0};
    type_strides(xt, xs);
    size_t es = elem_size(xt->elem);
    int64_t n = tensor_numel(Y);
    for (int64_t i = 0; i < n; i++) {
        int64_t off = 0;
        for (int d = 0; d < yt->rank; d++)
            off += (idx[d] % xt->dims[d]) * xs[d];
        memcpy((char *)Y->data + (size_t)i * es, (const char *)X->data + (size_t)off * es, es);
        for (int d = yt->rank - 1; d >= 0; d--) {
            if (++idx[d] < yt->dims[d])
                break;
            idx[d] = 0;
        }
    }
    return true;
}

/* Maps an output coordinate to an input one under reflect/edge padding. */
static int64_t pad_source(int64_t q, int64_t dim, bool reflect) {
    if (dim == 1)
        return 0;
    if (!reflect)
        return q < 0 ? 0 : q >= dim ? dim - 1 : q;
    int64_t period = 2 * (dim - 1);
    q %= period;
    if (q < 0)
        q += period;
    return q < dim ? q : period - q;
}

bool k_pad(const KernelArgs *a) {
    const Tensor *X = a->in[0];
    Tensor *Y = a->out[0];
    const Type *xt = &X->type, *yt = &Y->type;
    int k;
    const int64_t *pads = node_attr_ints(a->n, AK_pads, &k);
    int mode = node_attr_enum(a->n, AK_mode, MODE_CONSTANT);
    bool constant = mode == MODE_CONSTANT, reflect = mode == MODE_REFLECT;
    double value = node_attr_float(a->n, AK_value, 0);
    int rank = xt->rank;
    int64_t xs[MAX_RANK], idx[MAX_RANK] = {0};
    type_strides(xt, xs);
    size_t es = elem_size(xt->elem);
    int64_t n = tensor_numel(Y);
    for (int64_t i = 0; i < n; i++) {
        int64_t off = 0;
        bool inside = true;
        for (int d = 0; d < rank; d++) {
            int64_t q = idx[d] - pads[d];
            if (q < 0 || q >= xt->dims[d]) {
                if (constant) {
                    inside = false;
                    break;
                }
                q = pad_source(q, xt->dims[d], reflect);
            }
            off += q * xs[d];
        }
        if (inside)
            memcpy((char *)Y->data + (size_t)i * es, (const char *)X->data + (size_t)off * es,
                   es);
        else
            tensor_set_f64(Y, i, value);
        for (int d = rank - 1; d >= 0; d--) {
            if (++idx[d] < yt->dims[d])
                break;
            idx[d] = 0;
        }
    }
    return true;
}

/* depth_to_space and space_to_depth move one element at a time between
 * x[n][c][h][w] (the deep side) and y[n][c'][h*b + i][w*b + j] (the wide
 * side). DCR takes channel c = (i*b + j) * C' + c', CRD c = c' * b*b + i*b + j;
 * space_to_depth is the inverse of DCR. */
static bool block_move(const KernelArgs *a, const Tensor *deep, const Tensor *wide, bool crd,
                       bool to_space) {
    int64_t b = node_attr_int(a->n, AK_blocksize, 1);
    const int64_t *dd = deep->type.dims, *wd = wide->type.dims;
    int64_t nb = dd[0], cw = wd[1], h = dd[2], w = dd[3];
    size_t es = elem_size(deep->type.elem);
    char *dst = to_space ? wide->data : deep->data;
    const char *src = to_space ? deep->data : wide->data;
    for (int64_t n = 0; n < nb; n++)
        for (int64_t c = 0; c < cw; c++)
            for (int64_t i = 0; i < b; i++)
                for (int64_t j = 0; j < b; j++) {
                    int64_t cd = crd ? c * b * b + i * b + j : (i * b + j) * cw + c;
                    for (int64_t y = 0; y < h; y++)
                        for (int64_t x = 0; x < w; x++) {
                            int64_t od = ((n * dd[1] + cd) * h + y) * w + x;
                            int64_t ow = ((n * cw + c) * wd[2] + y * b + i) * wd[3] + x * b + j;
                            int64_t to = to_space ? ow : od, from = to_space ? od : ow;
                            memcpy(dst + (size_t)to * es, src + (size_t)from * es, es);
                        }
                }
    return true;
}

bool k_depth_to_space(const KernelArgs *a) {
    bool crd = node_attr_enum(a->n, AK_mode, MODE_DCR) == MODE_CRD;
    return block_move(a, a->in[0], a->out[0], crd, true);
}

bool k_space_to_depth(const KernelArgs *a) {
    return block_move(a, a->out[0], a->in[0], false, false);
}

/* ---- indexing ----------------------------------------------------------- */

/* An index read from an indices tensor, negative counting from the end;
 * false when it falls outside [0, len). */
static bool wrap_index(int64_t k, int64_t len, int64_t *out) {
    if (k < 0)
        k += len;
    *out = k;
    return k >= 0 && k < len;
}

/* out[i...] = x[i... with the axis coordinate replaced by indices[i...]].
 * `base` follows the data offset of every coordinate but the axis one. */
bool k_gather_elements(const KernelArgs *a) {
    const Tensor *X = a->in[0], *I = a->in[1];
    const Type *xt = &X->type, *it = &I->type;
    int axis;
    axis_normalize(node_attr_int(a->n, AK_axis, 0), xt->rank, &axis);
    int64_t xs[MAX_RANK], idx[MAX_RANK] = {0}, base = 0, len = xt->dims[axis];
    type_strides(xt, xs);
    size_t es = elem_size(xt->elem);
    int64_t n = tensor_numel(I);
    for (int64_t i = 0; i < n; i++) {
        int64_t k;
        if (!wrap_index(tensor_get_i64(I, i), len, &k))
            return kernel_fail(a, "index %lld out of range [-%lld, %lld)",
                               (long long)tensor_get_i64(I, i), (long long)len, (long long)len);
        memcpy((char *)a->out[0]->data + (size_t)i * es,
               (const char *)X->data + (size_t)(base + k * xs[axis]) * es, es);
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

/* Each row of `last` indices picks a slice of the data inside its batch. */
bool k_gather_nd(const KernelArgs *a) {
    const Tensor *X = a->in[0], *I = a->in[1];
    const Type *xt = &X->type, *it = &I->type;
    int b = (int)node_attr_int(a->n, AK_batch_dims, 0);
    int last = (int)it->dims[it->rank - 1];
    int64_t xs[MAX_RANK], rows = 1, batches = 1;
    type_strides(xt, xs);
    for (int i = 0; i < it->rank - 1; i++)
        rows *= it->dims[i];
    for (int i = 0; i < b; i++)
        batches *= it->dims[i];
    int64_t per_batch = batches ? rows / batches : 0;
    int64_t batch_stride = b ? xs[b - 1] : 0;
    size_t es = elem_size(xt->elem);
    size_t slice = (size_t)(b + last > 0 ? xs[b + last - 1] : tensor_numel(X)) * es;
    char *dst = a->out[0]->data;
    for (int64_t r = 0; r < rows; r++, dst += slice) {
        int64_t off = (per_batch ? r / per_batch : 0) * batch_stride;
        for (int j = 0; j < last; j++) {
            int64_t k, raw = tensor_get_i64(I, r * last + j);
            if (!wrap_index(raw, xt->dims[b + j], &k))
                return kernel_fail(a, "index %lld out of range for axis %d of size %lld",
                                   (long long)raw, b + j, (long long)xt->dims[b + j]);
            off += k * xs[b + j];
        }
        memcpy(dst, (const char *)X->data + (size_t)off * es, slice);
    }
    return true;
}

/* Every position is off_value but where the index names it; indices outside
 * [-depth, depth) leave their whole row off, as ONNX says. */
bool k_one_hot(const KernelArgs *a) {
    const Tensor *I = a->in[0], *V = a->in[1];
    Tensor *Y = a->out[0];
    const Type *yt = &Y->type;
    int axis;
    axis_normalize(node_attr_int(a->n, AK_axis, -1), yt->rank, &axis);
    int64_t depth = yt->dims[axis], inner = 1;
    for (int i = axis + 1; i < yt->rank; i++)
        inner *= yt->dims[i];
    size_t es = elem_size(yt->elem);
    const char *off = V->data, *on = off + es;
    char *y = Y->data;
    int64_t n = tensor_numel(Y), nidx = tensor_numel(I);
    for (int64_t i = 0; i < n; i++)
        memcpy(y + (size_t)i * es, off, es);
    for (int64_t j = 0; j < nidx; j++) {
        int64_t k;
        if (!wrap_index(tensor_get_i64(I, j), depth, &k))
            continue;
        int64_t o = j / inner, in = j % inner;
        memcpy(y + (size_t)((o * depth + k) * inner + in) * es, on, es);
    }
    return true;
}

/* Keeps element (i, j) of each matrix when j - i >= k (upper) or
 * j - i <= k (lower); the rest is zero, which is all-zero bytes in every
 * element kind. */
bool k_trilu(const KernelArgs *a) {
    const Tensor *X = a->in[0];
    const Type *xt = &X->type;
    bool upper = node_attr_int(a->n, AK_upper, 1) != 0;
    int64_t k = node_attr_int(a->n, AK_k, 0);
    int64_t rows = xt->dims[xt->rank - 2], cols = xt->dims[xt->rank - 1];
    int64_t n = tensor_numel(X);
    size_t es = elem_size(xt->elem);
    memset(a->out[0]->data, 0, tensor_bytes(X));
    for (int64_t i = 0; i < n; i++) {
        int64_t c = i % cols, r = (i / cols) % rows;
        if (upper ? c - r >= k : c - r <= k)
            memcpy((char *)a->out[0]->data + (size_t)i * es,
                   (const char *)X->data + (size_t)i * es, es);
    }
    return true;
}

/* Along the time axis, the first sequence_lens[b] steps of batch b are
 * reversed and the rest copied. */
bool k_reverse_sequence(const KernelArgs *a) {
    const Tensor *X = a->in[0], *L = a->in[1];
    const Type *xt = &X->type;
    int b = (int)node_attr_int(a->n, AK_batch_axis, 1);
    int t = (int)node_attr_int(a->n, AK_time_axis, 0);
    int64_t xs[MAX_RANK], idx[MAX_RANK] = {0};
    type_strides(xt, xs);
    for (int64_t i = 0; i < xt->dims[b]; i++) {
        int64_t len = tensor_get_i64(L, i);
        if (len < 0 || len > xt->dims[t])
            return kernel_fail(a, "sequence length %lld out of range [0, %lld]", (long long)len,
                               (long long)xt->dims[t]);
    }
    size_t es = elem_size(xt->elem);
    int64_t n = tensor_numel(X);
    for (int64_t i = 0; i < n; i++) {
        int64_t len = tensor_get_i64(L, idx[b]), step = idx[t];
        int64_t src = i + (step < len ? len - 1 - 2 * step : 0) * xs[t];
        memcpy((char *)a->out[0]->data + (size_t)i * es, (const char *)X->data + (size_t)src * es,
               es);
        for (int d = xt->rank - 1; d >= 0; d--) {
            if (++idx[d] < xt->dims[d])
                break;
            idx[d] = 0;
        }
    }
    return true;
}

/* Range with run-time operands: the result's length is the count of
 * core/range.h, within its declared bound. Integers step exactly (wrapping
 * like the element kind), floats as start + i * delta, as the importer's
 * folding does. */
bool k_range(const KernelArgs *a) {
    Tensor *Y = a->out[0];
    ElemKind k = a->in[0]->type.elem;
    bool flt = elem_is_float(k);
    int64_t n = flt ? range_count_float(tensor_get_f64(a->in[0], 0), tensor_get_f64(a->in[1], 0),
                                        tensor_get_f64(a->in[2], 0))
                    : range_count_int(tensor_get_i64(a->in[0], 0), tensor_get_i64(a->in[1], 0),
                                      tensor_get_i64(a->in[2], 0));
    if (n < 0)
        return kernel_fail(a, "delta is zero or the range has no finite length");
    if (n > Y->type.dims[0])
        return kernel_fail(a, "the range has %lld elements at run time, beyond its bound %lld",
                           (long long)n, (long long)Y->type.dims[0]);
    Y->type.dims[0] = n;
    Y->type.dyn = 0;
    double start = tensor_get_f64(a->in[0], 0), delta = tensor_get_f64(a->in[2], 0);
    uint64_t istart = (uint64_t)tensor_get_i64(a->in[0], 0);
    uint64_t idelta = (uint64_t)tensor_get_i64(a->in[2], 0);
    for (int64_t i = 0; i < n; i++) {
        if (flt)
            tensor_set_f64(Y, i, start + (double)i * delta);
        else
            tensor_set_i64(Y, i, (int64_t)(istart + (uint64_t)i * idelta));
    }
    return true;
}

/* A loop's scan output after iteration i: acc's first i rows (in place
 * when the loop hands the same buffer), then the row. */
bool k_scan_row(const KernelArgs *a) {
    const Tensor *acc = a->in[0];
    Tensor *Y = a->out[0];
    int64_t i = tensor_get_i64(a->in[1], 0), bound = Y->type.dims[0];
    int64_t rows = a->n->nops > 2 ? i + 1 : i;
    if (i < 0 || i > acc->type.dims[0])
        return kernel_fail(a, "row %lld of a scan output that has %lld", (long long)i,
                           (long long)acc->type.dims[0]);
    if (rows > bound)
        return kernel_fail(a, "the loop's scan output reaches %lld rows, beyond its bound of "
                           "%lld (the bound on the loop's trip count)", (long long)rows,
                           (long long)bound);
    Y->type.dims[0] = rows;
    Y->type.dyn = 0;
    size_t row = (size_t)(tensor_numel(Y) / (rows ? rows : 1)) * elem_size(Y->type.elem);
    if (!rows) /* nothing kept: the row size from the type alone */
        return true;
    if (Y->data != acc->data)
        memmove(Y->data, acc->data, row * (size_t)i);
    if (a->n->nops > 2)
        memcpy((char *)Y->data + row * (size_t)i, a->in[2]->data, row);
    return true;
}
