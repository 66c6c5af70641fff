/* Normalisations and losses for every float kind: layer_norm with its mean
 * and inverse-deviation outputs (the form lowering leaves alone),
 * softmax, log_softmax and hardmax along one axis, nll_loss and
 * mean_variance_norm, as libjit_<kind>_any.
 *
 * Statistics accumulate in double as the interpreter's do, in the same
 * order, so results are identical to it; each row is a unit of work. */
#include <math.h>

#include "backends/cpu/libjit/elem.h"
#include "backends/cpu/libjit/kernels.h"

LJ_INLINE int64_t min64(int64_t a, int64_t b) {
    return a < b ? a : b;
}

/* ---- layer_norm ---------------------------------------------------------------- */

/* Outputs y[, mean[, inv_std_dev]], inputs x, scale[, bias]; x seen as
 * [outer][inner] split at the axis; scale and bias broadcast to the
 * normalised shape x.dims[axis ..]. */
typedef struct Ln {
    int nres, x, scale, bias; /* operand numbers; bias -1 when absent */
    int64_t outer, inner;
    int nrank;
    int64_t ndims[DESC_MAX_RANK], sst[DESC_MAX_RANK], bst[DESC_MAX_RANK];
} Ln;

/* Strides of operand op broadcast to the normalised shape. */
LJ_INLINE void ln_bcast(const int64_t *d, const Ln *l, int op, int64_t *st) {
    int r = lj_rank(d, op);
    int64_t s = 1;
    for (int i = l->nrank - 1; i >= 0; i--) {
        int j = i - (l->nrank - r);
        int64_t dim = j >= 0 ? lj_dim(d, op, j) : 1;
        st[i] = dim == 1 ? 0 : s;
        s *= dim;
    }
}

LJ_INLINE Ln ln_plan(const int64_t *d) {
    Ln l = {.nres = lj_nres(d)};
    l.x = l.nres;
    l.scale = l.nres + 1;
    l.bias = lj_nops(d) - l.nres == 3 ? l.nres + 2 : -1;
    int rank = lj_rank(d, l.x);
    int64_t axis = lj_attr_int(d, AK_axis, -1);
    axis = axis < 0 ? axis + rank : axis;
    l.outer = l.inner = 1;
    for (int i = 0; i < rank; i++)
        *(i < axis ? &l.outer : &l.inner) *= lj_dim(d, l.x, i);
    l.nrank = rank - (int)axis;
    for (int i = 0; i < l.nrank; i++)
        l.ndims[i] = lj_dim(d, l.x, (int)axis + i);
    ln_bcast(d, &l, l.scale, l.sst);
    if (l.bias >= 0)
        ln_bcast(d, &l, l.bias, l.bst);
    return l;
}

LJ_INLINE int64_t ln_offset(const Ln *l, const int64_t *st, int64_t i) {
    int64_t off = 0;
    for (int j = l->nrank - 1; j >= 0; j--) {
        off += i % l->ndims[j] * st[j];
        i /= l->ndims[j];
    }
    return off;
}

LIBJIT_WORK libjit_layer_norm_any_work(const int64_t *d) {
    Ln l = ln_plan(d);
    return l.outer ? l.outer : 1;
}

LIBJIT_KERNEL libjit_layer_norm_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                    LjScratch *sc) {
    Ln l = ln_plan(d);
    int ex = lj_elem(d, l.x), ey = lj_elem(d, 0), es = lj_elem(d, l.scale);
    int eb = l.bias >= 0 ? lj_elem(d, l.bias) : es;
    double eps = lj_attr_float(d, AK_epsilon, (double)1e-5f);
    double n = (double)(l.inner ? l.inner : 1);
    for (int64_t o = lo; o < min64(hi, l.outer); o++) {
        const void *x = (const char *)ops[l.x] + (size_t)(o * l.inner) * lj_elem_size(ex);
        double mean = 0, var = 0;
        for (int64_t i = 0; i < l.inner; i++)
            mean += lj_ld_f64(ex, x, i);
        mean /= n;
        for (int64_t i = 0; i < l.inner; i++) {
            double dv = lj_ld_f64(ex, x, i) - mean;
            var += dv * dv;
        }
        var /= n;
        double inv = 1 / sqrt(var + eps);
        for (int64_t i = 0; i < l.inner; i++) {
            double v = (lj_ld_f64(ex, x, i) - mean) * inv;
            v *= lj_ld_f64(es, ops[l.scale], ln_offset(&l, l.sst, i));
            if (l.bias >= 0)
                v += lj_ld_f64(eb, ops[l.bias], ln_offset(&l, l.bst, i));
            lj_st_f64(ey, ops[0], o * l.inner + i, v);
        }
        if (l.nres > 1)
            lj_st_f64(lj_elem(d, 1), ops[1], o, mean);
        if (l.nres > 2)
            lj_st_f64(lj_elem(d, 2), ops[2], o, inv);
    }
}

/* ---- softmax, log_softmax, hardmax ------------------------------------------------ */

typedef enum { SM_SOFTMAX, SM_LOG_SOFTMAX, SM_HARDMAX } SmKind;

LJ_INLINE void sm_shape(const int64_t *d, int64_t *outer, int64_t *len, int64_t *inner) {
    int rank = lj_rank(d, 1);
    int64_t axis = lj_attr_int(d, AK_axis, -1);
    axis = axis < 0 ? axis + (rank ? rank : 1) : axis;
    *outer = *inner = 1;
    *len = rank ? lj_dim(d, 1, (int)axis) : 1;
    for (int i = 0; i < rank; i++)
        if (i != axis)
            *(i < axis ? outer : inner) *= lj_dim(d, 1, i);
}

LJ_INLINE int64_t sm_work(const int64_t *d) {
    int64_t outer, len, inner;
    sm_shape(d, &outer, &len, &inner);
    return outer ? outer : 1;
}

/* Units are outer slices: (len x inner) values each. Every value of a line
 * is read before the line is written, so y may be x. */
LJ_INLINE void sm_run(SmKind kind, const int64_t *d, void *const *ops, int64_t lo, int64_t hi) {
    int ey = lj_elem(d, 0), ex = lj_elem(d, 1);
    int64_t outer, len, inner;
    sm_shape(d, &outer, &len, &inner);
    for (int64_t o = lo; o < min64(hi, outer); o++)
        for (int64_t in = 0; in < inner; in++) {
            int64_t base = o * len * inner + in, arg = 0;
            double mx = -INFINITY, sum = 0;
            for (int64_t k = 0; k < len; k++) {
                double v = lj_ld_f64(ex, ops[1], base + k * inner);
                if (v > mx) {
                    mx = v;
                    arg = k;
                }
            }
            if (kind != SM_HARDMAX)
                for (int64_t k = 0; k < len; k++)
                    sum += exp(lj_ld_f64(ex, ops[1], base + k * inner) - mx);
            for (int64_t k = 0; k < len; k++) {
                double v = lj_ld_f64(ex, ops[1], base + k * inner);
                double r = kind == SM_SOFTMAX       ? exp(v - mx) / sum
                           : kind == SM_LOG_SOFTMAX ? v - mx - log(sum)
                                                    : (double)(k == arg);
                lj_st_f64(ey, ops[0], base + k * inner, r);
            }
        }
}

#define SOFTMAX_ANY(name, KIND)                                                                   \
    LIBJIT_WORK libjit_##name##_any_work(const int64_t *d) {                                      \
        return sm_work(d);                                                                        \
    }                                                                                             \
    LIBJIT_KERNEL libjit_##name##_any(const int64_t *d, void *const *ops, int64_t lo,             \
                                      int64_t hi, LjScratch *sc) {                                \
        sm_run(KIND, d, ops, lo, hi);                                                             \
    }

SOFTMAX_ANY(softmax, SM_SOFTMAX)
SOFTMAX_ANY(log_softmax, SM_LOG_SOFTMAX)
SOFTMAX_ANY(hardmax, SM_HARDMAX)

/* ---- nll_loss --------------------------------------------------------------------- */

/* Minus the log-probability of the target class at every position (times
 * the class weight), kept, summed, or averaged by the weights of the
 * targets that counted. One unit: the reduction is a sum over everything.
 * A target outside [0, classes) (the interpreter refuses it) counts as
 * ignored, so that no read leaves the operands. */
LIBJIT_KERNEL libjit_nll_loss_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                  LjScratch *sc) {
    int ey = lj_elem(d, 0), ex = lj_elem(d, 1), et = lj_elem(d, 2), rank = lj_rank(d, 1);
    bool has_w = lj_nops(d) == 4;
    int ew = has_w ? lj_elem(d, 3) : ex;
    int64_t batch = lj_dim(d, 1, 0), classes = lj_dim(d, 1, 1), inner = 1;
    for (int i = 2; i < rank; i++)
        inner *= lj_dim(d, 1, i);
    bool has_ignore = lj_has_attr(d, AK_ignore_index);
    int64_t ignore = lj_attr_int(d, AK_ignore_index, 0);
    int red = (int)lj_attr_int(d, AK_reduction, RED_MEAN);
    bool none = red == RED_NONE, mean = red == RED_MEAN;
    double sum = 0, weights = 0;
    for (int64_t j = 0; j < batch * inner; j++) {
        int64_t t = lj_ld_i64(et, ops[2], j), n = j / inner, in = j % inner;
        double loss = 0, w = 0;
        if ((!has_ignore || t != ignore) && t >= 0 && t < classes) {
            w = has_w ? lj_ld_f64(ew, ops[3], t) : 1;
            loss = -w * lj_ld_f64(ex, ops[1], (n * classes + t) * inner + in);
        }
        if (none)
            lj_st_f64(ey, ops[0], j, loss);
        sum += loss;
        weights += w;
    }
    if (!none)
        lj_st_f64(ey, ops[0], 0, mean ? sum / weights : sum);
}

LIBJIT_WORK libjit_nll_loss_any_work(const int64_t *d) {
    return 1;
}

/* ---- mean_variance_norm ---------------------------------------------------------- */

/* (x - mean) / (stddev + 1e-9) over `axes`, the variance E[x^2] - E[x]^2
 * as ONNX's function body and the interpreter take it. A unit of work is
 * one group (an index of the kept axes); its elements are visited in
 * row-major order, the interpreter's, so the sums agree exactly. */
typedef struct Mvn {
    int rank, nk, nr;
    int64_t kdim[DESC_MAX_RANK], kst[DESC_MAX_RANK]; /* kept axes */
    int64_t rdim[DESC_MAX_RANK], rst[DESC_MAX_RANK]; /* reduced axes */
    int64_t groups, count;
} Mvn;

LJ_INLINE Mvn mvn_plan(const int64_t *d) {
    Mvn m = {.rank = lj_rank(d, 1), .groups = 1, .count = 1};
    int n;
    const int64_t *axes = lj_attr(d, AK_axes, &n);
    /* No axes: all of them (reduce_axes_mask, as the interpreter). */
    uint32_t mask = axes && n ? 0 : (1u << m.rank) - 1;
    for (int i = 0; i < n && axes; i++)
        mask |= 1u << ((axes[i] % m.rank + m.rank) % m.rank);
    int64_t st = 1, kst[DESC_MAX_RANK], rst[DESC_MAX_RANK];
    int64_t kdim[DESC_MAX_RANK], rdim[DESC_MAX_RANK];
    for (int i = m.rank - 1; i >= 0; i--) {
        int64_t dim = lj_dim(d, 1, i);
        if (mask & (1u << i)) {
            rdim[m.nr] = dim;
            rst[m.nr++] = st;
            m.count *= dim;
        } else {
            kdim[m.nk] = dim;
            kst[m.nk++] = st;
            m.groups *= dim;
        }
        st *= dim;
    }
    /* Collected innermost first; stored outermost first. */
    for (int i = 0; i < m.nk; i++) {
        m.kdim[i] = kdim[m.nk - 1 - i];
        m.kst[i] = kst[m.nk - 1 - i];
    }
    for (int i = 0; i < m.nr; i++) {
        m.rdim[i] = rdim[m.nr - 1 - i];
        m.rst[i] = rst[m.nr - 1 - i];
    }
    return m;
}

/* The offset of element j (row-major over the given axes). */
LJ_INLINE int64_t mvn_offset(int n, const int64_t *dim, const int64_t *st, int64_t j) {
    int64_t off = 0;
    for (int i = n - 1; i >= 0; i--) {
        off += j % dim[i] * st[i];
        j /= dim[i];
    }
    return off;
}

LIBJIT_WORK libjit_mean_variance_norm_any_work(const int64_t *d) {
    Mvn m = mvn_plan(d);
    return m.groups > 0 ? m.groups : 1;
}

LIBJIT_KERNEL libjit_mean_variance_norm_any(const int64_t *d, void *const *ops, int64_t lo,
                                            int64_t hi, LjScratch *sc) {
#pragma STDC FP_CONTRACT OFF /* the interpreter rounds every product */
    Mvn m = mvn_plan(d);
    int ey = lj_elem(d, 0), ex = lj_elem(d, 1);
    for (int64_t g = lo; g < hi && g < m.groups && m.count > 0; g++) {
        int64_t base = mvn_offset(m.nk, m.kdim, m.kst, g);
        double sum = 0, sumsq = 0;
        for (int64_t j = 0; j < m.count; j++) {
            double v = lj_ld_f64(ex, ops[1], base + mvn_offset(m.nr, m.rdim, m.rst, j));
            sum += v;
            sumsq += v * v;
        }
        double mean = sum / (double)m.count, var = sumsq / (double)m.count - mean * mean;
        double den = sqrt(var > 0 ? var : 0) + 1e-9;
        for (int64_t j = 0; j < m.count; j++) {
            int64_t at = base + mvn_offset(m.nr, m.rdim, m.rst, j);
            lj_st_f64(ey, ops[0], at, (lj_ld_f64(ex, ops[1], at) - mean) / den);
        }
    }
}
