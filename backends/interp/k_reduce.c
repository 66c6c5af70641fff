/* Reductions over a set of axes, and argmax/argmin and top-k along one.
 *
 * Every input element is folded into the output element it reduces to (the
 * output index ignores the reduced axes). Floats accumulate in double;
 * integers in int64 (wrapping), so sums of large i64 stay exact. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/interp/kernels.h"

typedef enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_L1, R_L2, R_LOG_SUM, R_LOG_SUM_EXP,
               R_SUM_SQUARE } ReduceKind;

static ReduceKind reduce_kind(NodeKind k) {
    switch (k) {
    case NK_REDUCE_MEAN: return R_MEAN;
    case NK_REDUCE_MAX: return R_MAX;
    case NK_REDUCE_MIN: return R_MIN;
    case NK_REDUCE_PROD: return R_PROD;
    case NK_REDUCE_L1: return R_L1;
    case NK_REDUCE_L2: return R_L2;
    case NK_REDUCE_LOG_SUM: return R_LOG_SUM;
    case NK_REDUCE_LOG_SUM_EXP: return R_LOG_SUM_EXP;
    case NK_REDUCE_SUM_SQUARE: return R_SUM_SQUARE;
    default: return R_SUM;
    }
}

/* For each input element, the offset of its output element. */
static void out_strides(const Type *xt, uint32_t mask, int64_t *st) {
    int64_t s = 1;
    for (int i = xt->rank - 1; i >= 0; i--) {
        st[i] = (mask & (1u << i)) ? 0 : s;
        if (!(mask & (1u << i)))
            s *= xt->dims[i];
    }
}

static bool reduce(const KernelArgs *a) {
    const Tensor *X = a->in[0];
    Tensor *Y = a->out[0];
    const Type *xt = &X->type;
    ReduceKind kind = reduce_kind(a->n->kind);
    uint32_t mask = reduce_axes_mask(a->n, xt->rank);
    int64_t st[MAX_RANK], idx[MAX_RANK] = {0};
    out_strides(xt, mask, st);
    int64_t nout = tensor_numel(Y), nin = tensor_numel(X);
    int64_t count = nout ? nin / nout : 0;
    bool flt = elem_is_float(xt->elem);
    double *acc = malloc((size_t)(nout ? nout : 1) * sizeof(double));
    int64_t *iacc = malloc((size_t)(nout ? nout : 1) * sizeof(int64_t));
    if (!acc || !iacc) {
        free(acc);
        free(iacc);
        return kernel_fail(a, "out of memory");
    }
    double init = kind == R_MAX ? -INFINITY : kind == R_MIN ? INFINITY : kind == R_PROD ? 1 : 0;
    int64_t iinit = kind == R_MAX ? INT64_MIN : kind == R_MIN ? INT64_MAX : kind == R_PROD;
    for (int64_t o = 0; o < nout; o++) {
        acc[o] = init;
        iacc[o] = iinit;
    }
    int64_t off = 0;
    for (int64_t i = 0; i < nin; i++) {
        if (flt) {
            double v = tensor_get_f64(X, i), *r = &acc[off];
            switch (kind) {
            case R_SUM: case R_MEAN: case R_LOG_SUM: *r += v; break;
            case R_MAX: *r = (v > *r || isnan(v)) ? v : *r; break;
            case R_MIN: *r = (v < *r || isnan(v)) ? v : *r; break;
            case R_PROD: *r *= v; break;
            case R_L1: *r += fabs(v); break;
            case R_L2: case R_SUM_SQUARE: *r += v * v; break;
            case R_LOG_SUM_EXP: *r += exp(v); break;
            }
        } else {
            int64_t v = tensor_get_i64(X, i), *r = &iacc[off];
            switch (kind) {
            case R_MAX: *r = v > *r ? v : *r; break;
            case R_MIN: *r = v < *r ? v : *r; break;
            case R_PROD: *r = (int64_t)((uint64_t)*r * (uint64_t)v); break;
            case R_L1: *r = (int64_t)((uint64_t)*r + (v < 0 ? 0 - (uint64_t)v : (uint64_t)v)); break;
            case R_L2: case R_SUM_SQUARE: *r = (int64_t)((uint64_t)*r + (uint64_t)v * (uint64_t)v); break;
            default: *r = (int64_t)((uint64_t)*r + (uint64_t)v); break;
            }
        }
        for (int d = xt->rank - 1; d >= 0; d--) {
            off += st[d];
            if (++idx[d] < xt->dims[d])
                break;
            off -= st[d] * xt->dims[d];
            idx[d] = 0;
        }
    }
    for (int64_t o = 0; o < nout; o++) {
        if (flt) {
            double v = acc[o];
            if (kind == R_MEAN)
                v /= (double)(count ? count : 1);
            else if (kind == R_L2)
                v = sqrt(v);
            else if (kind == R_LOG_SUM || kind == R_LOG_SUM_EXP)
                v = log(v);
            tensor_set_f64(Y, o, v);
        } else {
            /* the double results go through tensor_set_f64, which defines
             * NaN and out-of-range conversions */
            int64_t v = iacc[o];
            if (kind == R_L2)
                tensor_set_f64(Y, o, sqrt((double)v));
            else if (kind == R_LOG_SUM || kind == R_LOG_SUM_EXP)
                tensor_set_f64(Y, o, log((double)v));
            else
                tensor_set_i64(Y, o, kind == R_MEAN ? (count ? v / count : 0) : v);
        }
    }
    free(acc);
    free(iacc);
    return true;
}

bool k_reduce_sum(const KernelArgs *a) { return reduce(a); }
bool k_reduce_mean(const KernelArgs *a) { return reduce(a); }
bool k_reduce_max(const KernelArgs *a) { return reduce(a); }
bool k_reduce_min(const KernelArgs *a) { return reduce(a); }
bool k_reduce_prod(const KernelArgs *a) { return reduce(a); }
bool k_reduce_l1(const KernelArgs *a) { return reduce(a); }
bool k_reduce_l2(const KernelArgs *a) { return reduce(a); }
bool k_reduce_log_sum(const KernelArgs *a) { return reduce(a); }
bool k_reduce_log_sum_exp(const KernelArgs *a) { return reduce(a); }
bool k_reduce_sum_square(const KernelArgs *a) { return reduce(a); }

/* First (or, with select_last_index, last) position of the extreme value. */
static bool arg_reduce(const KernelArgs *a, bool want_max) {
    const Tensor *X = a->in[0];
    const Type *xt = &X->type;
    int axis;
    axis_normalize(node_attr_int(a->n, AK_axis, 0), xt->rank, &axis);
    bool last = node_attr_int(a->n, AK_select_last_index, 0) != 0;
    int64_t outer = 1, len = xt->dims[axis], inner = 1;
    for (int i = 0; i < axis; i++)
        outer *= xt->dims[i];
    for (int i = axis + 1; i < xt->rank; i++)
        inner *= xt->dims[i];
    int64_t *y = a->out[0]->data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            int64_t base = o * len * inner + in, best = 0;
            double bv = tensor_get_f64(X, base);
            for (int64_t k = 1; k < len; k++) {
                double v = tensor_get_f64(X, base + k * inner);
                bool better = want_max ? (last ? v >= bv : v > bv) : (last ? v <= bv : v < bv);
                if (better) {
                    bv = v;
                    best = k;
                }
            }
            y[o * inner + in] = best;
        }
    return true;
}

bool k_argmax(const KernelArgs *a) { return arg_reduce(a, true); }
bool k_argmin(const KernelArgs *a) { return arg_reduce(a, false); }

/* ---- top-k ---------------------------------------------------------------- */

/* One element of a slice along the axis: its value and its position. */
typedef struct SortKey {
    double f;
    int64_t i;
    int64_t pos;
} SortKey;

typedef struct SortOrder {
    bool largest, flt, uns; /* uns: u64 values above INT64_MAX compare right */
} SortOrder;

/* Strictly before in the requested order; NaN ranks above every number. */
static bool key_before(const SortKey *x, const SortKey *y, SortOrder o) {
    if (o.uns)
        return o.largest ? (uint64_t)x->i > (uint64_t)y->i : (uint64_t)x->i < (uint64_t)y->i;
    if (!o.flt)
        return o.largest ? x->i > y->i : x->i < y->i;
    if (isnan(x->f) || isnan(y->f))
        return o.largest ? !isnan(y->f) : !isnan(x->f);
    return o.largest ? x->f > y->f : x->f < y->f;
}

/* Stable merge sort, so equal values keep the lower index first as ONNX
 * requires. */
static void sort_keys(SortKey *k, SortKey *tmp, int64_t n, SortOrder o) {
    if (n < 2)
        return;
    int64_t h = n / 2;
    sort_keys(k, tmp, h, o);
    sort_keys(k + h, tmp, n - h, o);
    int64_t i = 0, j = h, t = 0;
    while (i < h && j < n)
        tmp[t++] = key_before(&k[j], &k[i], o) ? k[j++] : k[i++];
    while (i < h)
        tmp[t++] = k[i++];
    memcpy(k, tmp, (size_t)t * sizeof *k);
}

/* Values and indices of the k first elements of each slice, sorted whether
 * or not `sorted` asks for it (any order is allowed when it does not). */
bool k_top_k(const KernelArgs *a) {
    const Tensor *X = a->in[0];
    Tensor *V = a->out[0], *I = a->out[1];
    const Type *xt = &X->type;
    int axis;
    axis_normalize(node_attr_int(a->n, AK_axis, -1), xt->rank, &axis);
    int64_t k = V->type.dims[axis], len = xt->dims[axis], outer = 1, inner = 1;
    if (a->n->nops > 1) { /* a run-time k: the results were allocated for the whole axis */
        k = tensor_get_i64(a->in[1], 0);
        if (k < 0 || k > len)
            return kernel_fail(a, "k=%lld out of range for an axis of %lld", (long long)k,
                               (long long)len);
        V->type.dims[axis] = I->type.dims[axis] = k;
        V->type.dyn = I->type.dyn = 0;
    }
    for (int i = 0; i < axis; i++)
        outer *= xt->dims[i];
    for (int i = axis + 1; i < xt->rank; i++)
        inner *= xt->dims[i];
    SortOrder ord = {node_attr_int(a->n, AK_largest, 1) != 0, elem_is_float(xt->elem),
                     elem_class(xt->elem) == ECLS_UINT};
    SortKey *keys = malloc((size_t)(len ? len : 1) * 2 * sizeof *keys);
    if (!keys)
        return kernel_fail(a, "out of memory");
    size_t es = elem_size(xt->elem);
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t in = 0; in < inner; in++) {
            int64_t src = o * len * inner + in, dst = o * k * inner + in;
            for (int64_t p = 0; p < len; p++) {
                int64_t at = src + p * inner;
                keys[p] = (SortKey){ord.flt ? tensor_get_f64(X, at) : 0,
                                    ord.flt ? 0 : tensor_get_i64(X, at), p};
            }
            sort_keys(keys, keys + len, len, ord);
            for (int64_t j = 0; j < k; j++) {
                int64_t from = src + keys[j].pos * inner, to = dst + j * inner;
                memcpy((char *)V->data + (size_t)to * es, (const char *)X->data + (size_t)from * es,
                       es);
                ((int64_t *)I->data)[to] = keys[j].pos;
            }
        }
    }
    free(keys);
    return true;
}
