/* Elementwise f32 kernels: unary math and activations, and binary
 * arithmetic under numpy broadcasting.
 *
 * Everything here is inlined whole at the call site, where the descriptor is
 * constant: the operator is a literal in each kernel, so the switch on it
 * folds, and the broadcast plan (shapes collapsed to the fewest axes) is
 * computed from constants. What is left per call is one vector loop per
 * row. The work splits into chunks of the flattened output.
 *
 * In place: share-buffers may make the output the very buffer of an input
 * of the same shape; every loop reads element i before writing element i,
 * and a broadcast operand can never be the output (it is smaller).
 *
 * Results equal the interpreter's (which computes in double and rounds
 * once) for + - * / min max abs neg relu clip sqrt reciprocal floor ceil
 * leaky_relu and erf; exp, sigmoid and tanh use vec.h's approximations
 * (1, 2, 1 ulp), gelu libm's erfc in double. */
#include <math.h>

#include "backends/cpu/libjit/kernels.h"
#include "backends/cpu/libjit/vec.h"

enum { CHUNK = 1 << 15 }; /* elements per work unit: 128 KB, L2-sized */

LJ_INLINE int64_t chunks(int64_t n) {
    return n > 0 ? (n + CHUNK - 1) / CHUNK : 1;
}

LJ_INLINE void chunk_range(int64_t n, int64_t lo, int64_t hi, int64_t *e0, int64_t *e1) {
    *e0 = lo * CHUNK < n ? lo * CHUNK : n;
    *e1 = hi * CHUNK < n ? hi * CHUNK : n;
}

/* ---- unary ----------------------------------------------------------------- */

typedef struct UnaryArgs {
    float alpha, beta; /* leaky_relu alpha; clip min/max; hard_sigmoid alpha, beta */
} UnaryArgs;

/* Lane by lane in double, rounded once: erf and gelu are rare, and this is
 * as accurate as libm (1 ulp), where an f32 argument x / sqrt 2 alone
 * would cost gelu 20 ulp in its tail (erfc magnifies it by 2z^2). */
LJ_INLINE vf32 lane_map(vf32 x, double (*f)(double)) {
    for (int i = 0; i < LJ_VL; i++)
        x[i] = (float)f(x[i]);
    return x;
}

/* gelu via erfc: 1 + erf(z) cancels for z << 0, erfc(-z) does not. */
LJ_INLINE double gelu1(double x) {
    return 0.5 * x * erfc(-x * 0.70710678118654752);
}

LJ_INLINE vf32 unary_vec(NodeKind k, vf32 x, const UnaryArgs *u) {
    switch (k) {
    case NK_ABS: return __builtin_elementwise_abs(x);
    case NK_NEG: return -x;
    case NK_CEIL: return __builtin_elementwise_ceil(x);
    case NK_FLOOR: return __builtin_elementwise_floor(x);
    case NK_RECIPROCAL: return 1.0f / x;
    case NK_SQRT: return __builtin_elementwise_sqrt(x);
    case NK_EXP: return lj_exp(x);
    case NK_ERF: return lane_map(x, erf);
    /* The activations a conv absorbs: the fused form's code (vec.h). */
    case NK_TANH:
    case NK_SIGMOID:
    case NK_RELU:
    case NK_LEAKY_RELU:
    case NK_CLIP: return lj_act(x, (LjAct){lj_act_of_kind(k), u->alpha, u->beta});
    case NK_HARD_SIGMOID: return lj_max(lj_splat(0), lj_min(lj_splat(1), x * u->alpha + u->beta));
    case NK_HARD_SWISH: return x * lj_max(lj_splat(0), lj_min(lj_splat(1), x / 6.0f + 0.5f));
    case NK_GELU: return lane_map(x, gelu1);
    default: return x;
    }
}

LJ_INLINE UnaryArgs unary_args(NodeKind k, const int64_t *d, void *const *ops) {
    UnaryArgs u = {0, 0};
    if (k == NK_LEAKY_RELU)
        u.alpha = (float)lj_attr_float(d, AK_alpha, 0.01);
    if (k == NK_HARD_SIGMOID) {
        u.alpha = (float)lj_attr_float(d, AK_alpha, 0.2);
        u.beta = (float)lj_attr_float(d, AK_beta, 0.5);
    }
    if (k == NK_CLIP && lj_nops(d) == 4) { /* y, x, min, max: bounds at run time */
        u.alpha = *(const float *)ops[2];
        u.beta = *(const float *)ops[3];
    } else if (k == NK_CLIP) { /* an absent bound is no bound */
        u.alpha = (float)lj_attr_float(d, AK_min, -__builtin_inf());
        u.beta = (float)lj_attr_float(d, AK_max, __builtin_inf());
    }
    return u;
}

LJ_INLINE void unary_run(NodeKind k, const int64_t *d, void *const *ops, int64_t lo, int64_t hi) {
    int64_t n = lj_numel(d, 0), i, end;
    chunk_range(n, lo, hi, &i, &end);
    UnaryArgs u = unary_args(k, d, ops);
    float *y = ops[0];
    const float *x = ops[1];
    for (; i + LJ_VL <= end; i += LJ_VL)
        lj_store(y + i, unary_vec(k, lj_load(x + i), &u));
    if (i < end)
        lj_store_part(y + i, unary_vec(k, lj_load_part(x + i, end - i), &u), end - i);
}

#define UNARY_KERNEL(name, KIND)                                                              \
    LIBJIT_WORK libjit_##name##_f32_work(const int64_t *d) {                                  \
        return chunks(lj_numel(d, 0));                                                        \
    }                                                                                         \
    LIBJIT_KERNEL libjit_##name##_f32(const int64_t *d, void *const *ops, int64_t lo,         \
                                      int64_t hi, LjScratch *sc) {                            \
        unary_run(KIND, d, ops, lo, hi);                                                      \
    }

LJ_UNARY_KERNELS(UNARY_KERNEL)

/* ---- binary ---------------------------------------------------------------- */

/* The output's axes, collapsed: adjacent axes merge when, for both
 * operands, the outer stride is the inner stride times the inner size
 * (contiguous continuation, or broadcast along both). Strides 0 broadcast.
 * Axis rank-1 is the row; its strides are 1 or 0. */
typedef struct Plan {
    int rank;
    int64_t dims[DESC_MAX_RANK], sa[DESC_MAX_RANK], sb[DESC_MAX_RANK];
} Plan;

LJ_INLINE Plan plan_of(const int64_t *d) {
    int rank = lj_rank(d, 0);
    int64_t sa[DESC_MAX_RANK], sb[DESC_MAX_RANK];
    lj_bcast_strides(d, 1, lj_rank(d, 1), rank, sa);
    lj_bcast_strides(d, 2, lj_rank(d, 2), rank, sb);
    Plan p = {0};
    for (int i = 0; i < rank; i++) {
        int64_t dim = lj_dim(d, 0, i);
        if (dim == 1)
            continue;
        int t = p.rank - 1;
        if (t >= 0 && p.sa[t] == sa[i] * dim && p.sb[t] == sb[i] * dim) {
            p.dims[t] *= dim;
            p.sa[t] = sa[i];
            p.sb[t] = sb[i];
            continue;
        }
        p.dims[p.rank] = dim;
        p.sa[p.rank] = sa[i];
        p.sb[p.rank] = sb[i];
        p.rank++;
    }
    if (p.rank == 0) { /* a single element */
        p.rank = 1;
        p.dims[0] = 1;
        p.sa[0] = p.sb[0] = 1;
    }
    return p;
}

LJ_INLINE vf32 binary_vec(NodeKind k, vf32 a, vf32 b) {
    switch (k) {
    case NK_ADD: return a + b;
    case NK_SUB: return a - b;
    case NK_MUL: return a * b;
    case NK_DIV: return a / b;
    /* NaN in either operand gives NaN, as numpy and the interpreter. */
    case NK_MAX: return lj_select(a != a, a, lj_select(b != b, b, lj_max(a, b)));
    case NK_MIN: return lj_select(a != a, a, lj_select(b != b, b, lj_min(a, b)));
    case NK_PRELU: return lj_select(a < 0, a * b, a);
    case NK_RELU_GRAD: return lj_select(b > 0, a, lj_splat(0));
    case NK_POW:
        for (int i = 0; i < LJ_VL; i++)
            a[i] = powf(a[i], b[i]);
        return a;
    default: return a;
    }
}

/* y[0 .. n) = a op b along one row, each operand contiguous (1) or one
 * value (0). */
LJ_INLINE void binary_row(NodeKind k, float *y, const float *a, int64_t sa, const float *b,
                          int64_t sb, int64_t n) {
    int64_t i = 0;
    if (sa && sb) {
        for (; i + LJ_VL <= n; i += LJ_VL)
            lj_store(y + i, binary_vec(k, lj_load(a + i), lj_load(b + i)));
        if (i < n)
            lj_store_part(y + i, binary_vec(k, lj_load_part(a + i, n - i), lj_load_part(b + i, n - i)),
                          n - i);
    } else if (sa) {
        vf32 bv = lj_splat(b[0]);
        for (; i + LJ_VL <= n; i += LJ_VL)
            lj_store(y + i, binary_vec(k, lj_load(a + i), bv));
        if (i < n)
            lj_store_part(y + i, binary_vec(k, lj_load_part(a + i, n - i), bv), n - i);
    } else {
        vf32 av = lj_splat(a[0]);
        if (!sb) { /* both one value: the row has one element */
            lj_store_part(y, binary_vec(k, av, lj_splat(b[0])), n);
            return;
        }
        for (; i + LJ_VL <= n; i += LJ_VL)
            lj_store(y + i, binary_vec(k, av, lj_load(b + i)));
        if (i < n)
            lj_store_part(y + i, binary_vec(k, av, lj_load_part(b + i, n - i)), n - i);
    }
}

LJ_INLINE void binary_run(NodeKind k, const int64_t *d, void *const *ops, int64_t lo, int64_t hi) {
    int64_t n = lj_numel(d, 0), i, end;
    chunk_range(n, lo, hi, &i, &end);
    float *y = ops[0];
    const float *a = ops[1], *b = ops[2];
    /* pow by one exponent 2 (layer norm's square): x * x, exactly the
     * interpreter's double pow rounded. One exponent means y and a have the
     * same elements in the same order. */
    if (k == NK_POW && lj_numel(d, 2) == 1 && b[0] == 2.0f) {
        for (; i + LJ_VL <= end; i += LJ_VL) {
            vf32 x = lj_load(a + i);
            lj_store(y + i, x * x);
        }
        for (; i < end; i++)
            y[i] = a[i] * a[i];
        return;
    }
    Plan p = plan_of(d);
    int r = p.rank - 1;
    int64_t row = p.dims[r];
    while (i < end) {
        /* Offsets of element i in a and b. */
        int64_t rest = i / row, col = i % row, oa = col * p.sa[r], ob = col * p.sb[r];
        for (int j = r - 1; j >= 0; j--) {
            int64_t idx = rest % p.dims[j];
            rest /= p.dims[j];
            oa += idx * p.sa[j];
            ob += idx * p.sb[j];
        }
        int64_t len = row - col < end - i ? row - col : end - i;
        binary_row(k, y + i, a + oa, p.sa[r], b + ob, p.sb[r], len);
        i += len;
    }
}

/* Operands of other kinds (pow's integer exponent): the kernel for every
 * kind, over its own units (kernels.h). */
LJ_INLINE bool binary_f32(const int64_t *d) {
    return lj_elem(d, 1) == ELEM_F32 && lj_elem(d, 2) == ELEM_F32;
}

#define BINARY_KERNEL(name, KIND)                                                             \
    LIBJIT_WORK libjit_##name##_f32_work(const int64_t *d) {                                  \
        return binary_f32(d) ? chunks(lj_numel(d, 0)) : libjit_##name##_any_work(d);         \
    }                                                                                         \
    LIBJIT_KERNEL libjit_##name##_f32(const int64_t *d, void *const *ops, int64_t lo,         \
                                      int64_t hi, LjScratch *sc) {                            \
        if (binary_f32(d))                                                                    \
            binary_run(KIND, d, ops, lo, hi);                                                 \
        else                                                                                  \
            libjit_##name##_any(d, ops, lo, hi, sc);                                          \
    }

LJ_BINARY_KERNELS(BINARY_KERNEL)
