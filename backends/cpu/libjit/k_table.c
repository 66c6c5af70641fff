/* Kernels for every element kind, generated from the tables of kernels.h:
 * unary math, binary arithmetic, comparisons and logic under numpy
 * broadcasting, where, casts between every pair of kinds, predicates, bit
 * shifts, reductions, argmax/argmin and cumsum.
 *
 * One kernel per operator, libjit_<kind>_any, reads and writes elements
 * through elem.h with the kinds from the descriptor. Code generation inlines
 * it where the descriptor is a constant, so the kind switches fold and each
 * instruction gets a typed loop, which the target's O3 then vectorises
 * (the f32 kernels of k_elementwise.c, where vec.h's approximations are
 * worth it, are taken first).
 *
 * The arithmetic is the interpreter's, so results are identical: floats
 * compute in double and round once on store, integers in wrapping int64
 * (division and modulo by zero give 0); comparisons read floats as double
 * and integers as int64. */
#include <math.h>

#include "backends/cpu/libjit/elem.h"
#include "backends/cpu/libjit/kernels.h"
#include "core/str_ops.h"

enum { CHUNK = 1 << 15 }; /* output elements per work unit */

LJ_INLINE int64_t min64(int64_t a, int64_t b) {
    return a < b ? a : b;
}

LJ_INLINE int64_t chunks(int64_t n) {
    return n > 0 ? (n + CHUNK - 1) / CHUNK : 1;
}

/* ---- broadcasting ---------------------------------------------------------- */

enum { BC_MAX = 3 };

/* The output's axes collapsed for operands 1 .. nin: adjacent axes merge
 * when every operand continues contiguously (or broadcasts along both);
 * stride 0 broadcasts. The last axis is the row. */
typedef struct Bc {
    int rank, nin;
    int64_t dims[DESC_MAX_RANK], st[BC_MAX][DESC_MAX_RANK];
} Bc;

LJ_INLINE Bc bc_plan(const int64_t *d, int nin) {
    int rank = lj_rank(d, 0);
    int64_t st[BC_MAX][DESC_MAX_RANK];
    for (int k = 0; k < nin; k++)
        lj_bcast_strides(d, k + 1, lj_rank(d, k + 1), rank, st[k]);
    Bc p = {.rank = 0, .nin = nin};
    for (int i = 0; i < rank; i++) {
        int64_t dim = lj_dim(d, 0, i);
        if (dim == 1)
            continue;
        int t = p.rank - 1;
        bool merge = t >= 0;
        for (int k = 0; k < nin && merge; k++)
            merge = p.st[k][t] == st[k][i] * dim;
        if (merge) {
            p.dims[t] *= dim;
            for (int k = 0; k < nin; k++)
                p.st[k][t] = st[k][i];
            continue;
        }
        p.dims[p.rank] = dim;
        for (int k = 0; k < nin; k++)
            p.st[k][p.rank] = st[k][i];
        p.rank++;
    }
    if (p.rank == 0) {
        p.rank = 1;
        p.dims[0] = 1;
        for (int k = 0; k < nin; k++)
            p.st[k][0] = 0;
    }
    return p;
}

/* Offsets in each operand of output element i (the start of a row walk). */
LJ_INLINE void bc_offsets(const Bc *p, int64_t i, int64_t *off) {
    for (int k = 0; k < p->nin; k++)
        off[k] = 0;
    for (int j = p->rank - 1; j >= 0; j--) {
        int64_t idx = i % p->dims[j];
        i /= p->dims[j];
        for (int k = 0; k < p->nin; k++)
            off[k] += idx * p->st[k][j];
    }
}

/* Calls BODY(i, o0, o1, o2) for output elements [e0, e1) with the operands'
 * offsets, a row at a time so that the inner loop has constant strides. */
#define BC_FOR(p, e0, e1, ...)                                                                   \
    do {                                                                                          \
        int r_ = (p).rank - 1;                                                                    \
        int64_t row_ = (p).dims[r_], s0_ = (p).st[0][r_], s1_ = (p).st[1][r_],                   \
                s2_ = (p).st[2][r_];                                                              \
        for (int64_t i_ = (e0); i_ < (e1);) {                                                     \
            int64_t off_[BC_MAX] = {0, 0, 0};                                                     \
            bc_offsets(&(p), i_, off_);                                                           \
            int64_t col_ = i_ % row_, len_ = min64(row_ - col_, (e1) - i_);                      \
            for (int64_t c_ = 0; c_ < len_; c_++) {                                               \
                int64_t i = i_ + c_, o0 = off_[0] + c_ * s0_, o1 = off_[1] + c_ * s1_,            \
                        o2 = off_[2] + c_ * s2_;                                                  \
                (void)o1;                                                                         \
                (void)o2;                                                                         \
                __VA_ARGS__;                                                                          \
            }                                                                                     \
            i_ += len_;                                                                           \
        }                                                                                         \
    } while (0)

LJ_INLINE void elementwise_range(const int64_t *d, int64_t lo, int64_t hi, int64_t *e0,
                                 int64_t *e1) {
    int64_t n = lj_numel(d, 0);
    *e0 = min64(lo * CHUNK, n);
    *e1 = min64(hi * CHUNK, n);
}

/* ---- scalar helpers ------------------------------------------------------- */

LJ_INLINE double dsign(double x) {
    return x > 0 ? 1 : x < 0 ? -1 : x; /* keeps NaN and signed zero */
}

LJ_INLINE double sigmoid1(double x) {
    return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x));
}

LJ_INLINE int64_t ineg(int64_t x) {
    return (int64_t)(0 - (uint64_t)x);
}

LJ_INLINE int64_t idiv(int64_t x, int64_t y) {
    return y == 0 || (y == -1 && x == INT64_MIN) ? 0 : x / y;
}

/* Python's modulo (the divisor's sign): ONNX Mod with fmod=0. */
LJ_INLINE int64_t imod(int64_t x, int64_t y) {
    if (y == 0 || (y == -1 && x == INT64_MIN))
        return 0;
    int64_t r = x % y;
    return r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
}

LJ_INLINE int64_t ifmod(int64_t x, int64_t y) {
    return y == 0 || (y == -1 && x == INT64_MIN) ? 0 : x % y;
}

LJ_INLINE double fmod_python(double x, double y) {
    double r = fmod(x, y);
    return r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
}

LJ_INLINE int64_t ipow(int64_t x, int64_t y) {
    if (y < 0)
        return x == 1 ? 1 : x == -1 ? (y % 2 ? -1 : 1) : 0;
    uint64_t r = 1, b = (uint64_t)x;
    while (y) {
        if (y & 1)
            r *= b;
        b *= b;
        y >>= 1;
    }
    return (int64_t)r;
}

/* The interpreter's clip of non-f32 kinds: the lower bound, then the upper. */
LJ_INLINE double clip_f(double x, double lo, double hi) {
    x = x < lo ? lo : x;
    return x > hi ? hi : x;
}

LJ_INLINE int64_t clip_i(int64_t x, double lo, double hi) {
    x = (double)x < lo ? lj_f64_to_i64(lo) : x;
    return (double)x > hi ? lj_f64_to_i64(hi) : x;
}

/* ---- unary --------------------------------------------------------------- */

/* Attributes of the unary kinds, with ONNX's defaults (as f32 values,
 * which is how the node holds them). */
typedef struct Un {
    double alpha, beta, gamma, bias, lambd, lo, hi;
} Un;

LJ_INLINE Un un_args(NodeKind k, const int64_t *d, void *const *ops) {
    double alpha = k == NK_LEAKY_RELU   ? (double)0.01f
                   : k == NK_SELU       ? (double)1.67326319217681884765625f
                   : k == NK_HARD_SIGMOID ? (double)0.2f
                                        : 1.0;
    Un u = {.alpha = lj_attr_float(d, AK_alpha, alpha),
            .beta = lj_attr_float(d, AK_beta, (double)0.5f),
            .gamma = lj_attr_float(d, AK_gamma, (double)1.05070102214813232421875f),
            .bias = lj_attr_float(d, AK_bias, 0.0),
            .lambd = lj_attr_float(d, AK_lambd, (double)0.5f),
            .lo = lj_attr_float(d, AK_min, -INFINITY),
            .hi = lj_attr_float(d, AK_max, INFINITY)};
    if (k == NK_CLIP && lj_nops(d) == 4) { /* y, x, min, max: bounds at run time */
        u.lo = lj_ld_f64(lj_elem(d, 2), ops[2], 0);
        u.hi = lj_ld_f64(lj_elem(d, 3), ops[3], 0);
    }
    return u;
}

#define UNARY_ANY(name, KIND, FEXPR, IEXPR)                                                       \
    LIBJIT_WORK libjit_##name##_any_work(const int64_t *d) {                                      \
        return chunks(lj_numel(d, 0));                                                            \
    }                                                                                             \
    LIBJIT_KERNEL libjit_##name##_any(const int64_t *d, void *const *ops, int64_t lo,             \
                                      int64_t hi, LjScratch *sc) {                                \
        int ey = lj_elem(d, 0), ex = lj_elem(d, 1);                                               \
        int64_t e0, e1;                                                                           \
        elementwise_range(d, lo, hi, &e0, &e1);                                                   \
        Un u = un_args(KIND, d, ops);                                                             \
        (void)u;                                                                                  \
        if (lj_is_float(ex)) {                                                                    \
            for (int64_t i = e0; i < e1; i++) {                                                   \
                double x = lj_ld_f64(ex, ops[1], i);                                              \
                lj_st_f64(ey, ops[0], i, (FEXPR));                                                \
            }                                                                                     \
        } else {                                                                                  \
            for (int64_t i = e0; i < e1; i++) {                                                   \
                int64_t x = lj_ld_i64(ex, ops[1], i);                                             \
                lj_st_i64(ey, ops[0], i, (IEXPR));                                                \
            }                                                                                     \
        }                                                                                         \
    }

LJ_ANY_UNARY(UNARY_ANY)

/* ---- binary --------------------------------------------------------------- */

#define BINARY_ANY(name, KIND, FEXPR, IEXPR)                                                      \
    LIBJIT_WORK libjit_##name##_any_work(const int64_t *d) {                                      \
        return chunks(lj_numel(d, 0));                                                            \
    }                                                                                             \
    LIBJIT_KERNEL libjit_##name##_any(const int64_t *d, void *const *ops, int64_t lo,             \
                                      int64_t hi, LjScratch *sc) {                                \
        int ey = lj_elem(d, 0), ea = lj_elem(d, 1), eb = lj_elem(d, 2);                           \
        bool use_fmod = lj_attr_int(d, AK_fmod, 0) != 0;                                          \
        (void)use_fmod;                                                                           \
        int64_t e0, e1;                                                                           \
        elementwise_range(d, lo, hi, &e0, &e1);                                                   \
        Bc p = bc_plan(d, 2);                                                                     \
        if (lj_is_float(ea) || lj_is_float(eb))                                                   \
            BC_FOR(p, e0, e1, {                                                                   \
                double x = lj_ld_f64(ea, ops[1], o0), y = lj_ld_f64(eb, ops[2], o1);              \
                lj_st_f64(ey, ops[0], i, (FEXPR));                                                \
            });                                                                                   \
        else                                                                                      \
            BC_FOR(p, e0, e1, {                                                                   \
                int64_t x = lj_ld_i64(ea, ops[1], o0), y = lj_ld_i64(eb, ops[2], o1);             \
                lj_st_i64(ey, ops[0], i, (IEXPR));                                                \
            });                                                                                   \
    }

LJ_ANY_BINARY(BINARY_ANY)

/* Comparisons: bool results; floats compared as double, integers as int64,
 * strings (equal only) by their bytes. */
#define COMPARE_ANY(name, KIND, OP)                                                               \
    LIBJIT_WORK libjit_##name##_any_work(const int64_t *d) {                                      \
        return chunks(lj_numel(d, 0));                                                            \
    }                                                                                             \
    LIBJIT_KERNEL libjit_##name##_any(const int64_t *d, void *const *ops, int64_t lo,             \
                                      int64_t hi, LjScratch *sc) {                                \
        int ea = lj_elem(d, 1), eb = lj_elem(d, 2);                                               \
        uint8_t *y = ops[0];                                                                      \
        int64_t e0, e1;                                                                           \
        elementwise_range(d, lo, hi, &e0, &e1);                                                   \
        Bc p = bc_plan(d, 2);                                                                     \
        if (ea == ELEM_STR)                                                                       \
            BC_FOR(p, e0, e1, y[i] = str_cmp(lj_str_at(ops[1], o0), lj_str_at(ops[2], o1)) OP 0); \
        else if (lj_is_float(ea))                                                                 \
            BC_FOR(p, e0, e1, y[i] = lj_ld_f64(ea, ops[1], o0) OP lj_ld_f64(eb, ops[2], o1));     \
        else                                                                                      \
            BC_FOR(p, e0, e1, y[i] = lj_ld_i64(ea, ops[1], o0) OP lj_ld_i64(eb, ops[2], o1));     \
    }

LJ_ANY_COMPARE(COMPARE_ANY)

/* Logic on bool operands (one byte, 0 or 1). */
#define LOGIC_ANY(name, KIND, EXPR)                                                               \
    LIBJIT_WORK libjit_##name##_any_work(const int64_t *d) {                                      \
        return chunks(lj_numel(d, 0));                                                            \
    }                                                                                             \
    LIBJIT_KERNEL libjit_##name##_any(const int64_t *d, void *const *ops, int64_t lo,             \
                                      int64_t hi, LjScratch *sc) {                                \
        const uint8_t *a = ops[1], *b = ops[2];                                                   \
        uint8_t *y = ops[0];                                                                      \
        int64_t e0, e1;                                                                           \
        elementwise_range(d, lo, hi, &e0, &e1);                                                   \
        Bc p = bc_plan(d, 2);                                                                     \
        BC_FOR(p, e0, e1, {                                                                       \
            bool x = a[o0] != 0, z = b[o1] != 0;                                                  \
            y[i] = (EXPR);                                                                        \
        });                                                                                       \
    }

LJ_ANY_LOGIC(LOGIC_ANY)

/* Shifts of unsigned integers; by the width or more gives 0. */
LIBJIT_WORK libjit_bitshift_any_work(const int64_t *d) {
    return chunks(lj_numel(d, 0));
}

LIBJIT_KERNEL libjit_bitshift_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                  LjScratch *sc) {
    int ey = lj_elem(d, 0), ea = lj_elem(d, 1), eb = lj_elem(d, 2);
    bool left = lj_attr_int(d, AK_direction, DIR_LEFT) == DIR_LEFT;
    uint64_t bits = 8 * lj_elem_size(ea);
    int64_t e0, e1;
    elementwise_range(d, lo, hi, &e0, &e1);
    Bc p = bc_plan(d, 2);
    BC_FOR(p, e0, e1, {
        uint64_t x = (uint64_t)lj_ld_i64(ea, ops[1], o0), s = (uint64_t)lj_ld_i64(eb, ops[2], o1);
        lj_st_i64(ey, ops[0], i, (int64_t)(s >= bits ? 0 : left ? x << s : x >> s));
    });
}

/* y = c ? x : z, moved as bytes of the result's size. */
LIBJIT_WORK libjit_where_any_work(const int64_t *d) {
    return chunks(lj_numel(d, 0));
}

LIBJIT_KERNEL libjit_where_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                               LjScratch *sc) {
    size_t es = lj_elem_size(lj_elem(d, 0));
    const uint8_t *c = ops[1];
    int64_t e0, e1;
    elementwise_range(d, lo, hi, &e0, &e1);
    Bc p = bc_plan(d, 3);
    BC_FOR(p, e0, e1, {
        if (c[o0])
            lj_move(es, ops[0], i, ops[2], o1);
        else
            lj_move(es, ops[0], i, ops[3], o2);
    });
}

/* ---- predicates, not, cast -------------------------------------------------- */

LIBJIT_WORK libjit_isnan_any_work(const int64_t *d) {
    return chunks(lj_numel(d, 0));
}

LIBJIT_KERNEL libjit_isnan_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                               LjScratch *sc) {
    int ex = lj_elem(d, 1);
    uint8_t *y = ops[0];
    int64_t e0, e1;
    elementwise_range(d, lo, hi, &e0, &e1);
    for (int64_t i = e0; i < e1; i++) {
        double x = lj_ld_f64(ex, ops[1], i);
        y[i] = x != x;
    }
}

LIBJIT_WORK libjit_isinf_any_work(const int64_t *d) {
    return chunks(lj_numel(d, 0));
}

LIBJIT_KERNEL libjit_isinf_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                               LjScratch *sc) {
    int ex = lj_elem(d, 1);
    bool neg = lj_attr_int(d, AK_detect_negative, 1) != 0;
    bool pos = lj_attr_int(d, AK_detect_positive, 1) != 0;
    uint8_t *y = ops[0];
    int64_t e0, e1;
    elementwise_range(d, lo, hi, &e0, &e1);
    for (int64_t i = e0; i < e1; i++) {
        double x = lj_ld_f64(ex, ops[1], i);
        y[i] = (pos && x == INFINITY) || (neg && x == -INFINITY);
    }
}

LIBJIT_WORK libjit_not_any_work(const int64_t *d) {
    return chunks(lj_numel(d, 0));
}

LIBJIT_KERNEL libjit_not_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                             LjScratch *sc) {
    const uint8_t *x = ops[1];
    uint8_t *y = ops[0];
    int64_t e0, e1;
    elementwise_range(d, lo, hi, &e0, &e1);
    for (int64_t i = e0; i < e1; i++)
        y[i] = !x[i];
}

LIBJIT_WORK libjit_cast_any_work(const int64_t *d) {
    return chunks(lj_numel(d, 0));
}

/* Whether a cast can fail (LjScratch.fail_at): from a string to a number.
 * Code generation checks libjit_failed after a kernel K that has a
 * libjit_K_fails saying so. */
LIBJIT_WORK libjit_cast_any_fails(const int64_t *d) {
    return lj_elem(d, 1) == ELEM_STR && lj_elem(d, 0) != ELEM_STR;
}

/* Float to integer truncates (NaN 0, out of range defined), integer to
 * integer wraps, anything to bool is "!= 0"; the same kind is a copy. */
LIBJIT_KERNEL libjit_cast_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                              LjScratch *sc) {
    int to = lj_elem(d, 0), from = lj_elem(d, 1);
    int64_t e0, e1;
    elementwise_range(d, lo, hi, &e0, &e1);
    if (to != from && (to == ELEM_STR || from == ELEM_STR)) {
        lj_cast_strings(to, ops[0], from, ops[1], e0, e1, sc);
    } else if (to == from) {
        size_t es = lj_elem_size(to);
        for (int64_t i = e0; i < e1; i++)
            lj_move(es, ops[0], i, ops[1], i);
    } else if (to == ELEM_BOOL) {
        uint8_t *y = ops[0];
        for (int64_t i = e0; i < e1; i++)
            y[i] = lj_ld_f64(from, ops[1], i) != 0;
    } else if (lj_is_float(from) && !lj_is_float(to)) {
        for (int64_t i = e0; i < e1; i++)
            lj_st_i64(to, ops[0], i, lj_ld_i64(from, ops[1], i));
    } else if (lj_is_float(from) || lj_is_float(to)) {
        for (int64_t i = e0; i < e1; i++)
            lj_st_f64(to, ops[0], i, lj_ld_f64(from, ops[1], i));
    } else {
        for (int64_t i = e0; i < e1; i++)
            lj_st_i64(to, ops[0], i, lj_ld_i64(from, ops[1], i));
    }
}

/* ---- reductions ------------------------------------------------------------ */

/* Each output element folds the input elements that reduce to it, in
 * input order (the interpreter's order, so float sums are identical):
 * the kept axes address the output, the reduced ones are walked. */
typedef struct Red {
    int nred;
    int64_t rdims[DESC_MAX_RANK], rst[DESC_MAX_RANK]; /* reduced axes: size, input stride */
    int nkeep;
    int64_t kdims[DESC_MAX_RANK], kst[DESC_MAX_RANK]; /* kept axes */
    int64_t count;                                    /* elements per output */
} Red;

LJ_INLINE Red red_plan(const int64_t *d) {
    int rank = lj_rank(d, 1), n;
    const int64_t *axes = lj_attr(d, AK_axes, &n);
    uint32_t mask = 0;
    for (int i = 0; i < n; i++)
        mask |= 1u << (axes[i] < 0 ? axes[i] + rank : axes[i]);
    if (!axes || n == 0)
        mask = (1u << rank) - 1;
    Red r = {.count = 1};
    int64_t s = 1, st[DESC_MAX_RANK];
    for (int i = rank - 1; i >= 0; i--) {
        st[i] = s;
        s *= lj_dim(d, 1, i);
    }
    for (int i = 0; i < rank; i++) {
        if ((mask >> i) & 1) {
            r.rdims[r.nred] = lj_dim(d, 1, i);
            r.rst[r.nred++] = st[i];
            r.count *= lj_dim(d, 1, i);
        } else {
            r.kdims[r.nkeep] = lj_dim(d, 1, i);
            r.kst[r.nkeep++] = st[i];
        }
    }
    return r;
}

LJ_INLINE int64_t red_base(const Red *r, int64_t o) {
    int64_t base = 0;
    for (int j = r->nkeep - 1; j >= 0; j--) {
        base += o % r->kdims[j] * r->kst[j];
        o /= r->kdims[j];
    }
    return base;
}

LJ_INLINE int64_t red_offset(const Red *r, int64_t k) {
    int64_t off = 0;
    for (int j = r->nred - 1; j >= 0; j--) {
        off += k % r->rdims[j] * r->rst[j];
        k /= r->rdims[j];
    }
    return off;
}

LJ_INLINE double red_init_f(NodeKind k) {
    return k == NK_REDUCE_MAX ? -INFINITY : k == NK_REDUCE_MIN ? INFINITY : k == NK_REDUCE_PROD;
}

LJ_INLINE double red_fold_f(NodeKind k, double r, double v) {
    switch (k) {
    case NK_REDUCE_MAX: return v > r || v != v ? v : r;
    case NK_REDUCE_MIN: return v < r || v != v ? v : r;
    case NK_REDUCE_PROD: return r * v;
    case NK_REDUCE_L1: return r + fabs(v);
    case NK_REDUCE_L2:
    case NK_REDUCE_SUM_SQUARE: return r + v * v;
    case NK_REDUCE_LOG_SUM_EXP: return r + exp(v);
    default: return r + v;
    }
}

LJ_INLINE int64_t red_init_i(NodeKind k) {
    return k == NK_REDUCE_MAX ? INT64_MIN : k == NK_REDUCE_MIN ? INT64_MAX : k == NK_REDUCE_PROD;
}

LJ_INLINE int64_t red_fold_i(NodeKind k, int64_t r, int64_t v) {
    uint64_t ur = (uint64_t)r, uv = (uint64_t)v;
    switch (k) {
    case NK_REDUCE_MAX: return v > r ? v : r;
    case NK_REDUCE_MIN: return v < r ? v : r;
    case NK_REDUCE_PROD: return (int64_t)(ur * uv);
    case NK_REDUCE_L1: return (int64_t)(ur + (v < 0 ? 0 - uv : uv));
    case NK_REDUCE_L2:
    case NK_REDUCE_SUM_SQUARE: return (int64_t)(ur + uv * uv);
    default: return (int64_t)(ur + uv);
    }
}

/* Units of outputs, about a chunk of input elements each. */
LJ_INLINE int64_t red_per_unit(const Red *r) {
    return r->count >= CHUNK ? 1 : CHUNK / (r->count ? r->count : 1);
}

LJ_INLINE int64_t red_work_any(const int64_t *d) {
    Red r = red_plan(d);
    int64_t per = red_per_unit(&r), n = lj_numel(d, 0);
    return n ? (n + per - 1) / per : 1;
}

LJ_INLINE void red_run_any(NodeKind k, const int64_t *d, void *const *ops, int64_t lo,
                           int64_t hi) {
    Red r = red_plan(d);
    int ey = lj_elem(d, 0), ex = lj_elem(d, 1);
    int64_t per = red_per_unit(&r), n = lj_numel(d, 0);
    int64_t o0 = min64(lo * per, n), o1 = min64(hi * per, n);
    for (int64_t o = o0; o < o1; o++) {
        int64_t base = red_base(&r, o);
        if (lj_is_float(ex)) {
            double acc = red_init_f(k);
            for (int64_t j = 0; j < r.count; j++)
                acc = red_fold_f(k, acc, lj_ld_f64(ex, ops[1], base + red_offset(&r, j)));
            if (k == NK_REDUCE_MEAN)
                acc /= (double)(r.count ? r.count : 1);
            else if (k == NK_REDUCE_L2)
                acc = sqrt(acc);
            else if (k == NK_REDUCE_LOG_SUM || k == NK_REDUCE_LOG_SUM_EXP)
                acc = log(acc);
            lj_st_f64(ey, ops[0], o, acc);
        } else {
            int64_t acc = red_init_i(k);
            for (int64_t j = 0; j < r.count; j++)
                acc = red_fold_i(k, acc, lj_ld_i64(ex, ops[1], base + red_offset(&r, j)));
            if (k == NK_REDUCE_L2)
                lj_st_f64(ey, ops[0], o, sqrt((double)acc));
            else if (k == NK_REDUCE_LOG_SUM || k == NK_REDUCE_LOG_SUM_EXP)
                lj_st_f64(ey, ops[0], o, log((double)acc));
            else
                lj_st_i64(ey, ops[0], o, k == NK_REDUCE_MEAN ? (r.count ? acc / r.count : 0) : acc);
        }
    }
}

#define REDUCE_ANY(name, KIND)                                                                    \
    LIBJIT_WORK libjit_##name##_any_work(const int64_t *d) {                                      \
        return red_work_any(d);                                                                   \
    }                                                                                             \
    LIBJIT_KERNEL libjit_##name##_any(const int64_t *d, void *const *ops, int64_t lo,             \
                                      int64_t hi, LjScratch *sc) {                                \
        red_run_any(KIND, d, ops, lo, hi);                                                        \
    }

LJ_ANY_REDUCE(REDUCE_ANY)

/* ---- along one axis: argmax, argmin, cumsum --------------------------------- */

LJ_INLINE void axis_shape(const int64_t *d, int op, int64_t *outer, int64_t *len,
                          int64_t *inner) {
    int rank = lj_rank(d, op);
    int64_t axis = lj_attr_int(d, AK_axis, 0);
    axis = axis < 0 ? axis + rank : axis;
    *outer = *inner = 1;
    *len = rank ? lj_dim(d, op, (int)axis) : 1;
    for (int i = 0; i < rank; i++)
        if (i != axis)
            *(i < axis ? outer : inner) *= lj_dim(d, op, i);
}

LJ_INLINE int64_t lines_work(const int64_t *d, int op) {
    int64_t outer, len, inner;
    axis_shape(d, op, &outer, &len, &inner);
    int64_t lines = outer * inner, per = len >= CHUNK ? 1 : CHUNK / (len ? len : 1);
    return lines ? (lines + per - 1) / per : 1;
}

/* Lines [l0, l1) of unit [lo, hi): a line is one (outer, inner) pair. */
LJ_INLINE void lines_range(const int64_t *d, int op, int64_t lo, int64_t hi, int64_t *l0,
                           int64_t *l1) {
    int64_t outer, len, inner;
    axis_shape(d, op, &outer, &len, &inner);
    int64_t lines = outer * inner, per = len >= CHUNK ? 1 : CHUNK / (len ? len : 1);
    *l0 = min64(lo * per, lines);
    *l1 = min64(hi * per, lines);
}

/* The first (or with select_last_index the last) position of the extreme,
 * compared as double as the interpreter does. */
LJ_INLINE void arg_run(bool want_max, const int64_t *d, void *const *ops, int64_t lo,
                       int64_t hi) {
    int ex = lj_elem(d, 1);
    bool last = lj_attr_int(d, AK_select_last_index, 0) != 0;
    int64_t outer, len, inner, l0, l1;
    axis_shape(d, 1, &outer, &len, &inner);
    lines_range(d, 1, lo, hi, &l0, &l1);
    int64_t *y = ops[0];
    for (int64_t l = l0; l < l1; l++) {
        int64_t base = l / inner * len * inner + l % inner, best = 0;
        double bv = lj_ld_f64(ex, ops[1], base);
        for (int64_t k = 1; k < len; k++) {
            double v = lj_ld_f64(ex, ops[1], base + k * inner);
            bool better = want_max ? (last ? v >= bv : v > bv) : (last ? v <= bv : v < bv);
            if (better) {
                bv = v;
                best = k;
            }
        }
        y[l] = best;
    }
}

LIBJIT_WORK libjit_argmax_any_work(const int64_t *d) {
    return lines_work(d, 1);
}

LIBJIT_KERNEL libjit_argmax_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                LjScratch *sc) {
    arg_run(true, d, ops, lo, hi);
}

LIBJIT_WORK libjit_argmin_any_work(const int64_t *d) {
    return lines_work(d, 1);
}

LIBJIT_KERNEL libjit_argmin_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                LjScratch *sc) {
    arg_run(false, d, ops, lo, hi);
}

/* Running sums along the axis (exclusive ones leave the current element
 * out, reverse ones run from the end): floats in double, integers in
 * wrapping 64-bit arithmetic. */
LIBJIT_WORK libjit_cumsum_any_work(const int64_t *d) {
    return lines_work(d, 1);
}

LIBJIT_KERNEL libjit_cumsum_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                LjScratch *sc) {
    int e = lj_elem(d, 1);
    bool exclusive = lj_attr_int(d, AK_exclusive, 0) != 0;
    bool reverse = lj_attr_int(d, AK_reverse, 0) != 0;
    int64_t outer, len, inner, l0, l1;
    axis_shape(d, 1, &outer, &len, &inner);
    lines_range(d, 1, lo, hi, &l0, &l1);
    for (int64_t l = l0; l < l1; l++) {
        int64_t base = l / inner * len * inner + l % inner;
        double acc = 0;
        uint64_t iacc = 0;
        for (int64_t j = 0; j < len; j++) {
            int64_t at = base + (reverse ? len - 1 - j : j) * inner;
            double v = lj_is_float(e) ? lj_ld_f64(e, ops[1], at) : 0;
            uint64_t iv = lj_is_float(e) ? 0 : (uint64_t)lj_ld_i64(e, ops[1], at);
            if (!exclusive) {
                acc += v;
                iacc += iv;
            }
            if (lj_is_float(e))
                lj_st_f64(e, ops[0], at, acc);
            else
                lj_st_i64(e, ops[0], at, (int64_t)iacc);
            if (exclusive) {
                acc += v;
                iacc += iv;
            }
        }
    }
}
