/* The kernels for every element kind (libjit_<kind>_any: k_table.c,
 * k_data.c, k_norm.c) against the interpreter's, for every element kind
 * each operator takes (the ty column of nodes.def): random shapes and
 * broadcasts, random values with NaN, infinities, signed zeros and ties
 * among the floats and the extremes of each integer kind.
 *
 * Exact: these kernels compute as the interpreter does (floats in double,
 * rounded once on store, in the same order; integers in wrapping int64;
 * data movement by bytes), so every output must match byte for byte. A NaN
 * matches any NaN of the same kind: the sign and payload of a NaN are not
 * specified by C's library functions.
 *
 * One bound: an f64 result is not rounded to a narrower kind at the end, so
 * it shows whether the compiler fused a multiply and an add into one FMA
 * (one rounding instead of two) in the kernel and in the interpreter, which
 * depends on the build (the sanitizer build at -O1 differed in the last bits
 * of selu, reduce_l2 and layer_norm). Each fused step moves a result by at
 * most 2^-53 of the values it sums, and the longest row here has 3,000
 * elements, so f64 results may differ by 1e-12 of max(1, |a|, |b|) (the 1:
 * a sum that cancels towards 0 keeps the error of its terms, which are O(1)
 * here). Every narrower float kind is rounded from double and stays exact. */
#include "tests/kernels/any.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "backends/cpu/libjit/kernels.h"
#include "core/arena.h"
#include "core/qpack.h"
#include "core/str_ops.h"
#include "core/tensor.h"

/* The ty column of nodes.def: which element kinds operand 0 may have. */
typedef enum { TY_ALL, TY_ANY, TY_NUM, TY_FLOAT, TY_INT, TY_BOOL, TY_SIGNED, TY_STR } TyClass;
static const TyClass kind_ty[NK_COUNT] = {
#define NODE(E, nm, omin, omax, rmin, rmax, ty, inf, facts, attrs) [NK_##E] = TY_##ty,
#include "core/nodes.def"
};

/* Strings have cases of their own (any_string_cases): random bits are no
 * string. */
static bool takes(NodeKind k, ElemKind e) {
    if (e == ELEM_STR)
        return false;
    switch (kind_ty[k]) {
    case TY_ALL:
    case TY_ANY: return true;
    case TY_STR: return false;
    case TY_NUM: return e != ELEM_BOOL;
    case TY_FLOAT: return elem_is_float(e);
    case TY_INT: return elem_is_int(e);
    case TY_BOOL: return e == ELEM_BOOL;
    case TY_SIGNED: return elem_is_float(e) || elem_class(e) == ECLS_SINT;
    }
    return false;
}

static int64_t rnd(uint64_t *s, int64_t lo, int64_t hi) {
    return lo + (int64_t)(rng_next(s) % (uint64_t)(hi - lo + 1));
}

/* Case i of operator k on kind e, drawing from s; counts the cases run
 * (and, for those at run-time sizes, the ones both sides refuse). */
typedef bool (*KindCaseFn)(NodeKind k, ElemKind e, uint64_t *s, int i, int *ran, int *refused);

/* A driver's table: `count` cases of each operator for every kind it takes
 * (but f32 when its f32 kernel has tests of its own). */
typedef struct KindCases {
    NodeKind kind;
    KindCaseFn fn;
    int count;
    bool skip_f32;
} KindCases;

/* Kind by kind, each row's cases in table order (the order that draws
 * from s, so a case is the same wherever the table grows). */
static bool kind_cases(const KindCases *t, size_t n, uint64_t *s, int *ran, int *refused) {
    bool ok = true;
    for (int e = 0; e < ELEM_COUNT && ok; e++)
        for (size_t r = 0; r < n && ok; r++)
            for (int i = 0; i < t[r].count && ok && takes(t[r].kind, (ElemKind)e) &&
                            !(t[r].skip_f32 && e == ELEM_F32);
                 i++)
                ok = t[r].fn(t[r].kind, (ElemKind)e, s, i, ran, refused);
    return ok;
}

/* Random values of kind e: small ones mostly, the kind's edges and the
 * float specials now and then (not when plain). */
static void fill(ElemKind e, void *p, int64_t n, uint64_t *s, bool plain) {
    static const double specials[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 0.5, -2.5, 1e30};
    for (int64_t i = 0; i < n; i++) {
        int64_t r = rnd(s, plain, 15);
        if (e == ELEM_BOOL)
            elem_store_i64(e, p, i, r & 1);
        else if (elem_is_float(e))
            elem_store_f64(e, p, i, r == 0 ? specials[rnd(s, 0, 7)] : (double)rnd(s, -4000, 4000) / 1000);
        else if (r == 0)
            elem_store_i64(e, p, i, rnd(s, 0, 1) ? INT64_MAX : INT64_MIN); /* wraps to the edges */
        else
            elem_store_i64(e, p, i, elem_class(e) == ECLS_UINT ? rnd(s, 0, 300) : rnd(s, -150, 150));
    }
}

typedef struct AnyCase {
    bool plain; /* no NaN or infinities among the inputs (sums and norms) */
    Desc d;
    void *fast[CASE_OPS], *ref[CASE_OPS];
} AnyCase;

static size_t bytes_of(const AnyCase *c, int k) {
    size_t n = (size_t)desc_numel(&c->d, k) * elem_size((ElemKind)lj_elem(c->d.w, k));
    return n ? n : 1;
}

/* Inputs random, outputs poisoned differently in the two runs, so an
 * element a kernel leaves unwritten cannot match. */
static void any_alloc(AnyCase *c, uint64_t seed) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 7;
    for (int k = 0; k < lj_nops(c->d.w); k++) {
        size_t b = bytes_of(c, k);
        c->fast[k] = malloc(b);
        c->ref[k] = malloc(b);
        if (k < lj_nres(c->d.w)) {
            memset(c->fast[k], 0xA5, b);
            memset(c->ref[k], 0x5A, b);
        } else {
            fill((ElemKind)lj_elem(c->d.w, k), c->fast[k], desc_numel(&c->d, k), &s, c->plain);
            memcpy(c->ref[k], c->fast[k], b);
        }
    }
}

static void any_free(AnyCase *c) {
    for (int k = 0; k < lj_nops(c->d.w); k++) {
        free(c->fast[k]);
        free(c->ref[k]);
    }
}

static bool same_elem(ElemKind e, const void *a, const void *b, int64_t i) {
    size_t es = elem_size(e);
    if (!memcmp((const char *)a + i * es, (const char *)b + i * es, es))
        return true;
    double x = elem_load_f64(e, a, i), y = elem_load_f64(e, b, i);
    if (elem_is_float(e) && isnan(x) && isnan(y))
        return true;
    if (e != ELEM_F64 || !isfinite(x) || !isfinite(y) || signbit(x) != signbit(y))
        return false;
    double scale = fmax(1.0, fmax(fabs(x), fabs(y)));
    return fabs(x - y) <= 1e-12 * scale;
}

/* The kernel's outputs against the interpreter's; false and a message on
 * the first element that differs (`threads` named when not 0). */
static bool same_outputs(const AnyCase *c, const char *what, int threads) {
    for (int k = 0; k < lj_nres(c->d.w); k++) {
        ElemKind e = (ElemKind)lj_elem(c->d.w, k);
        for (int64_t i = 0; i < desc_numel(&c->d, k); i++) {
            if (same_elem(e, c->fast[k], c->ref[k], i))
                continue;
            char at[32] = "";
            if (threads)
                snprintf(at, sizeof at, " at %d threads", threads);
            fprintf(stderr, "FAIL %s%s: output %d element %lld: kernel %.17g interpreter %.17g\n",
                    what, at, k, (long long)i, elem_load_f64(e, c->fast[k], i),
                    elem_load_f64(e, c->ref[k], i));
            return false;
        }
    }
    return true;
}

/* Runs the kernel (in scrambled work units) and the interpreter; false and
 * a message on the first output element that differs. A case the
 * interpreter refuses (an index out of range) is skipped. */
static bool any_run(AnyCase *c, const char *what, KernelFn fn, WorkFn work, int *ran) {
    if (libjit_generic(c->d.w, c->ref))
        return true;
    run_kernel(&c->d, fn, work, c->fast);
    ++*ran;
    return same_outputs(c, what, 0);
}

/* Axes of 1 to 6, but the last up to max_last (a long row). */
static int random_shape(uint64_t *s, int64_t *dims, int max_rank, int64_t max_last) {
    int rank = (int)rnd(s, 0, max_rank);
    for (int i = 0; i < rank; i++)
        dims[i] = rnd(s, 1, i == rank - 1 ? max_last : 6);
    return rank;
}

/* Operand dims broadcasting to out: a suffix of its axes, some of them 1. */
static int bcast_of(uint64_t *s, int rank, const int64_t *out, int64_t *dims) {
    int r = rnd(s, 0, 2) ? rank : (int)rnd(s, 0, rank);
    for (int i = 0; i < r; i++)
        dims[i] = rnd(s, 0, 2) ? out[rank - r + i] : 1;
    return r;
}

/* out = the broadcast of the operands' shapes (rank `rank`). */
static void bcast_out(int rank, int64_t *out, int n, const int *ranks, int64_t (*dims)[8]) {
    for (int j = 0; j < rank; j++) {
        out[j] = 1;
        for (int k = 0; k < n; k++) {
            int64_t x = j >= rank - ranks[k] ? dims[k][j - (rank - ranks[k])] : 1;
            out[j] = x > out[j] ? x : out[j];
        }
    }
}

typedef struct AnyKernel {
    const char *name;
    NodeKind kind;
    KernelFn fn;
    WorkFn work;
} AnyKernel;

#define ANY_ROW4(nm, K, a, b) {#nm, K, libjit_##nm##_any, libjit_##nm##_any_work},
#define ANY_ROW3(nm, K, a) {#nm, K, libjit_##nm##_any, libjit_##nm##_any_work},
#define ANY_ROW2(nm, K) {#nm, K, libjit_##nm##_any, libjit_##nm##_any_work},
static const AnyKernel any_unary[] = {LJ_ANY_UNARY(ANY_ROW4)};
static const AnyKernel any_binary[] = {LJ_ANY_BINARY(ANY_ROW4) LJ_ANY_COMPARE(ANY_ROW3)
                                           LJ_ANY_LOGIC(ANY_ROW3)};
static const AnyKernel any_reduce[] = {LJ_ANY_REDUCE(ANY_ROW2)};

static bool is_compare(NodeKind k) {
    return k == NK_EQUAL || k == NK_LESS || k == NK_LESS_EQUAL || k == NK_GREATER ||
           k == NK_GREATER_EQUAL;
}

int any_unary_cases(uint64_t seed) {
    uint64_t s = seed;
    int ran = 0;
    for (size_t u = 0; u < sizeof any_unary / sizeof *any_unary; u++)
        for (int e = 0; e < ELEM_COUNT; e++) {
            const AnyKernel *k = &any_unary[u];
            if (!takes(k->kind, (ElemKind)e))
                continue;
            for (int i = 0; i < 4; i++) {
                int64_t dims[8];
                int rank = random_shape(&s, dims, 3, i == 0 ? 3000 : 9);
                AnyCase c = {0};
                desc_begin(&c.d, k->kind, 1);
                desc_operand_elem(&c.d, (ElemKind)e, rank, dims);
                desc_operand_elem(&c.d, (ElemKind)e, rank, dims);
                if (i % 2 && k->kind == NK_CLIP) {
                    desc_float(&c.d, AK_min, -1.5f);
                    desc_float(&c.d, AK_max, 2.0f);
                } else if (i % 2) {
                    desc_float(&c.d, AK_alpha, 0.7f);
                    desc_float(&c.d, AK_bias, 0.25f);
                }
                any_alloc(&c, s + (uint64_t)i);
                char what[64];
                snprintf(what, sizeof what, "%s on %s", k->name, elem_name((ElemKind)e));
                bool ok = any_run(&c, what, k->fn, k->work, &ran);
                any_free(&c);
                if (!ok)
                    return -1;
            }
        }
    return ran;
}

int any_binary_cases(uint64_t seed) {
    uint64_t s = seed;
    int ran = 0;
    for (size_t b = 0; b < sizeof any_binary / sizeof *any_binary; b++)
        for (int e = 0; e < ELEM_COUNT; e++) {
            const AnyKernel *k = &any_binary[b];
            if (!takes(k->kind, (ElemKind)e))
                continue;
            for (int i = 0; i < 6; i++) {
                int64_t out[8], dims[2][8];
                int rank = random_shape(&s, out, 4, i == 0 ? 2000 : 7), ranks[2];
                for (int j = 0; j < 2; j++)
                    ranks[j] = bcast_of(&s, rank, out, dims[j]);
                bcast_out(rank, out, 2, ranks, dims);
                ElemKind ey = is_compare(k->kind) ? ELEM_BOOL : (ElemKind)e;
                AnyCase c = {0};
                desc_begin(&c.d, k->kind, 1);
                desc_operand_elem(&c.d, ey, rank, out);
                desc_operand_elem(&c.d, (ElemKind)e, ranks[0], dims[0]);
                desc_operand_elem(&c.d, (ElemKind)e, ranks[1], dims[1]);
                if (k->kind == NK_MOD && i % 2)
                    desc_int(&c.d, AK_fmod, 1);
                any_alloc(&c, s + (uint64_t)i);
                char what[64];
                snprintf(what, sizeof what, "%s on %s", k->name, elem_name((ElemKind)e));
                bool ok = any_run(&c, what, k->fn, k->work, &ran);
                any_free(&c);
                if (!ok)
                    return -1;
            }
        }
    return ran;
}

/* where, bitshift, isnan, isinf, not, cast between every pair. */
int any_misc_cases(uint64_t seed) {
    uint64_t s = seed;
    int ran = 0;
    bool ok = true;
    for (int e = 0; e < ELEM_COUNT && ok; e++) {
        if (e == ELEM_STR) /* any_string_cases */
            continue;
        for (int i = 0; i < 4 && ok; i++) {
            int64_t out[8], dims[3][8];
            int rank = random_shape(&s, out, 4, i == 0 ? 1500 : 6), ranks[3];
            for (int j = 0; j < 3; j++)
                ranks[j] = bcast_of(&s, rank, out, dims[j]);
            bcast_out(rank, out, 3, ranks, dims);
            AnyCase c = {0};
            desc_begin(&c.d, NK_WHERE, 1);
            desc_operand_elem(&c.d, (ElemKind)e, rank, out);
            desc_operand_elem(&c.d, ELEM_BOOL, ranks[0], dims[0]);
            desc_operand_elem(&c.d, (ElemKind)e, ranks[1], dims[1]);
            desc_operand_elem(&c.d, (ElemKind)e, ranks[2], dims[2]);
            any_alloc(&c, s);
            ok = any_run(&c, "where", libjit_where_any, libjit_where_any_work, &ran);
            any_free(&c);
        }
        for (int to = 0; to < ELEM_COUNT && ok; to++) {
            if (to == ELEM_STR)
                continue;
            int64_t dims[8];
            int rank = random_shape(&s, dims, 3, 40);
            AnyCase c = {0};
            desc_begin(&c.d, NK_CAST, 1);
            desc_operand_elem(&c.d, (ElemKind)to, rank, dims);
            desc_operand_elem(&c.d, (ElemKind)e, rank, dims);
            desc_int(&c.d, AK_to, to);
            any_alloc(&c, s);
            char what[64];
            snprintf(what, sizeof what, "cast %s to %s", elem_name((ElemKind)e), elem_name((ElemKind)to));
            ok = any_run(&c, what, libjit_cast_any, libjit_cast_any_work, &ran);
            any_free(&c);
        }
        static const struct {
            NodeKind kind;
            KernelFn fn;
            WorkFn work;
            bool to_bool;
        } unary[] = {
            {NK_ISNAN, libjit_isnan_any, libjit_isnan_any_work, true},
            {NK_ISINF, libjit_isinf_any, libjit_isinf_any_work, true},
            {NK_NOT, libjit_not_any, libjit_not_any_work, true},
            {NK_CUMSUM, libjit_cumsum_any, libjit_cumsum_any_work, false},
        };
        for (size_t u = 0; u < sizeof unary / sizeof *unary && ok; u++) {
            if (!takes(unary[u].kind, (ElemKind)e))
                continue;
            for (int i = 0; i < 4 && ok; i++) {
                int64_t dims[8];
                int rank = random_shape(&s, dims, 3, 30);
                if (unary[u].kind == NK_CUMSUM && rank == 0)
                    dims[rank++] = 5;
                AnyCase c = {0};
                desc_begin(&c.d, unary[u].kind, 1);
                desc_operand_elem(&c.d, unary[u].to_bool ? ELEM_BOOL : (ElemKind)e, rank, dims);
                desc_operand_elem(&c.d, (ElemKind)e, rank, dims);
                if (unary[u].kind == NK_ISINF && i % 2)
                    desc_int(&c.d, i == 1 ? AK_detect_negative : AK_detect_positive, 0);
                if (unary[u].kind == NK_CUMSUM) {
                    desc_int(&c.d, AK_axis, rnd(&s, -rank, rank - 1));
                    desc_int(&c.d, AK_exclusive, i & 1);
                    desc_int(&c.d, AK_reverse, i >> 1);
                }
                any_alloc(&c, s + (uint64_t)i);
                char what[64];
                snprintf(what, sizeof what, "%s on %s", node_kind_name(unary[u].kind), elem_name((ElemKind)e));
                ok = any_run(&c, what, unary[u].fn, unary[u].work, &ran);
                any_free(&c);
            }
        }
        if (elem_class((ElemKind)e) == ECLS_UINT) {
            for (int i = 0; i < 4 && ok; i++) {
                int64_t dims[8];
                int rank = random_shape(&s, dims, 3, 20);
                AnyCase c = {0};
                desc_begin(&c.d, NK_BITSHIFT, 1);
                for (int k = 0; k < 3; k++)
                    desc_operand_elem(&c.d, (ElemKind)e, rank, dims);
                desc_int(&c.d, AK_direction, i % 2 ? DIR_LEFT : DIR_RIGHT);
                any_alloc(&c, s + (uint64_t)i);
                /* shifts mostly within the width */
                for (int64_t j = 0; j < desc_numel(&c.d, 2); j++)
                    elem_store_i64((ElemKind)e, c.fast[2], j, rnd(&s, 0, j % 7 ? 8 : 70));
                memcpy(c.ref[2], c.fast[2], bytes_of(&c, 2));
                ok = any_run(&c, "bitshift", libjit_bitshift_any, libjit_bitshift_any_work, &ran);
                any_free(&c);
            }
        }
    }
    return ok ? ran : -1;
}

/* Reductions over random axes (or all), argmax and argmin along one. */
int any_reduce_cases(uint64_t seed) {
    uint64_t s = seed;
    int ran = 0;
    for (int e = 0; e < ELEM_COUNT; e++) {
        if (!takes(NK_REDUCE_SUM, (ElemKind)e))
            continue;
        for (size_t r = 0; r < sizeof any_reduce / sizeof *any_reduce + 2; r++) {
            bool arg = r >= sizeof any_reduce / sizeof *any_reduce;
            for (int i = 0; i < 4; i++) {
                int64_t x[8], y[8], axes[8];
                int rank = random_shape(&s, x, 4, i == 0 ? 700 : 6), nax = 0, ry = 0;
                if (rank == 0)
                    x[rank++] = 3;
                bool keep = rnd(&s, 0, 1);
                int64_t axis = rnd(&s, 0, rank - 1);
                for (int j = 0; j < rank; j++) {
                    bool red = arg ? j == axis : rnd(&s, 0, 1);
                    if (red)
                        axes[nax++] = rnd(&s, 0, 1) ? j : j - rank;
                    if (!red || keep)
                        y[ry++] = red ? 1 : x[j];
                }
                bool all = !arg && (nax == 0 || i == 3);
                if (all) {
                    ry = 0;
                    for (int j = 0; j < rank && keep; j++)
                        y[ry++] = 1;
                }
                const AnyKernel *k = arg ? NULL : &any_reduce[r];
                NodeKind kind = arg ? (r % 2 ? NK_ARGMIN : NK_ARGMAX) : k->kind;
                AnyCase c = {.plain = i % 2};
                desc_begin(&c.d, kind, 1);
                desc_operand_elem(&c.d, arg ? ELEM_I64 : (ElemKind)e, ry, y);
                desc_operand_elem(&c.d, (ElemKind)e, rank, x);
                if (arg) {
                    desc_int(&c.d, AK_axis, axes[0]);
                    desc_int(&c.d, AK_keepdims, keep);
                    desc_int(&c.d, AK_select_last_index, i % 2);
                } else {
                    if (!all)
                        desc_ints(&c.d, AK_axes, nax, axes);
                    desc_int(&c.d, AK_keepdims, keep);
                }
                any_alloc(&c, s + (uint64_t)i);
                char what[64];
                snprintf(what, sizeof what, "%s on %s", node_kind_name(kind), elem_name((ElemKind)e));
                bool ok = arg ? any_run(&c, what, kind == NK_ARGMAX ? libjit_argmax_any : libjit_argmin_any,
                                        kind == NK_ARGMAX ? libjit_argmax_any_work : libjit_argmin_any_work, &ran)
                              : any_run(&c, what, k->fn, k->work, &ran);
                any_free(&c);
                if (!ok)
                    return -1;
            }
        }
    }
    return ran;
}

/* Data movement, once per element size (bool, i16, f32, i64) and f16. */
int any_data_cases(uint64_t seed) {
    static const ElemKind kinds[] = {ELEM_BOOL, ELEM_I16, ELEM_F16, ELEM_F32, ELEM_I64};
    uint64_t s = seed;
    int ran = 0;
    bool ok = true;
    for (size_t ke = 0; ke < sizeof kinds / sizeof *kinds && ok; ke++) {
        ElemKind e = kinds[ke];
        char what[64];
        for (int i = 0; i < 6 && ok; i++) {
            AnyCase c = {0};
            int64_t x[8], y[8], rep[8];
            int rank = random_shape(&s, x, 4, 5);
            /* expand: y broadcast of x and a random shape */
            int ry = rank + (int)rnd(&s, 0, 1);
            for (int j = 0; j < ry; j++)
                y[j] = j < ry - rank || x[j - (ry - rank)] == 1 ? rnd(&s, 1, 4) : x[j - (ry - rank)];
            desc_begin(&c.d, NK_EXPAND, 1);
            desc_operand_elem(&c.d, e, ry, y);
            desc_operand_elem(&c.d, e, rank, x);
            any_alloc(&c, s);
            snprintf(what, sizeof what, "expand on %s", elem_name(e));
            ok = any_run(&c, what, libjit_expand_any, libjit_expand_any_work, &ran);
            any_free(&c);
            /* tile */
            for (int j = 0; j < rank; j++)
                rep[j] = rnd(&s, 1, 3), y[j] = x[j] * rep[j];
            c = (AnyCase){0};
            desc_begin(&c.d, NK_TILE, 1);
            desc_operand_elem(&c.d, e, rank, y);
            desc_operand_elem(&c.d, e, rank, x);
            desc_ints(&c.d, AK_repeats, rank, rep);
            any_alloc(&c, s);
            snprintf(what, sizeof what, "tile on %s", elem_name(e));
            ok = ok && any_run(&c, what, libjit_tile_any, libjit_tile_any_work, &ran);
            any_free(&c);
            if (rank == 0)
                continue;
            /* pad: every mode, pads that may cut (negative) for constant */
            int64_t pads[16];
            int mode = i % 3 == 0 ? MODE_CONSTANT : i % 3 == 1 ? MODE_REFLECT : MODE_EDGE;
            for (int j = 0; j < rank; j++) {
                int64_t m = mode == MODE_REFLECT ? x[j] - 1 : 3;
                pads[j] = rnd(&s, 0, m);
                pads[j + rank] = rnd(&s, 0, m);
                y[j] = x[j] + pads[j] + pads[j + rank];
            }
            c = (AnyCase){0};
            desc_begin(&c.d, NK_PAD, 1);
            desc_operand_elem(&c.d, e, rank, y);
            desc_operand_elem(&c.d, e, rank, x);
            desc_int(&c.d, AK_mode, mode);
            desc_ints(&c.d, AK_pads, 2 * rank, pads);
            desc_float(&c.d, AK_value, 1.5f);
            any_alloc(&c, s);
            snprintf(what, sizeof what, "pad on %s", elem_name(e));
            ok = ok && any_run(&c, what, libjit_pad_any, libjit_pad_any_work, &ran);
            any_free(&c);
            /* gather_elements along a random axis, indices in range */
            int64_t axis = rnd(&s, 0, rank - 1), idx[8];
            memcpy(idx, x, sizeof idx);
            idx[axis] = rnd(&s, 1, 6);
            c = (AnyCase){0};
            desc_begin(&c.d, NK_GATHER_ELEMENTS, 1);
            desc_operand_elem(&c.d, e, rank, idx);
            desc_operand_elem(&c.d, e, rank, x);
            desc_operand_elem(&c.d, i % 2 ? ELEM_I32 : ELEM_I64, rank, idx);
            desc_int(&c.d, AK_axis, rnd(&s, 0, 1) ? axis : axis - rank);
            any_alloc(&c, s);
            for (int64_t j = 0; j < desc_numel(&c.d, 2); j++)
                elem_store_i64((ElemKind)lj_elem(c.d.w, 2), c.fast[2], j, rnd(&s, -x[axis], x[axis] - 1));
            memcpy(c.ref[2], c.fast[2], bytes_of(&c, 2));
            snprintf(what, sizeof what, "gather_elements on %s", elem_name(e));
            ok = ok && any_run(&c, what, libjit_gather_elements_any, libjit_gather_elements_any_work, &ran);
            any_free(&c);
            /* scatter_elements, every reduction, indices in range */
            c = (AnyCase){0};
            desc_begin(&c.d, NK_SCATTER_ELEMENTS, 1);
            desc_operand_elem(&c.d, e, rank, x);
            desc_operand_elem(&c.d, e, rank, x);
            desc_operand_elem(&c.d, ELEM_I64, rank, idx);
            desc_operand_elem(&c.d, e, rank, idx);
            desc_int(&c.d, AK_axis, axis);
            static const int64_t reds[] = {RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN};
            if (e != ELEM_BOOL)
                desc_int(&c.d, AK_reduction, reds[rnd(&s, 0, 4)]);
            any_alloc(&c, s);
            for (int64_t j = 0; j < desc_numel(&c.d, 2); j++)
                ((int64_t *)c.fast[2])[j] = rnd(&s, -x[axis], x[axis] - 1);
            memcpy(c.ref[2], c.fast[2], bytes_of(&c, 2));
            snprintf(what, sizeof what, "scatter_elements on %s", elem_name(e));
            ok = ok && any_run(&c, what, libjit_scatter_elements_any, libjit_scatter_elements_any_work, &ran);
            any_free(&c);
            /* split along the axis into two parts */
            if (x[axis] >= 2) {
                int64_t p0[8], p1[8];
                memcpy(p0, x, sizeof p0);
                memcpy(p1, x, sizeof p1);
                p0[axis] = rnd(&s, 1, x[axis] - 1);
                p1[axis] = x[axis] - p0[axis];
                c = (AnyCase){0};
                desc_begin(&c.d, NK_SPLIT, 2);
                desc_operand_elem(&c.d, e, rank, p0);
                desc_operand_elem(&c.d, e, rank, p1);
                desc_operand_elem(&c.d, e, rank, x);
                desc_int(&c.d, AK_axis, axis);
                int64_t parts[2] = {p0[axis], p1[axis]};
                desc_ints(&c.d, AK_split, 2, parts);
                any_alloc(&c, s);
                snprintf(what, sizeof what, "split on %s", elem_name(e));
                ok = ok && any_run(&c, what, libjit_split_any, libjit_split_any_work, &ran);
                any_free(&c);
            }
            /* reverse_sequence: time axis 0, batch axis 1 */
            if (rank >= 2) {
                int64_t nb[1] = {x[1]};
                c = (AnyCase){0};
                desc_begin(&c.d, NK_REVERSE_SEQUENCE, 1);
                desc_operand_elem(&c.d, e, rank, x);
                desc_operand_elem(&c.d, e, rank, x);
                desc_operand_elem(&c.d, ELEM_I64, 1, nb);
                desc_int(&c.d, AK_batch_axis, 1);
                desc_int(&c.d, AK_time_axis, 0);
                any_alloc(&c, s);
                for (int64_t j = 0; j < x[1]; j++)
                    ((int64_t *)c.fast[2])[j] = rnd(&s, 0, x[0]);
                memcpy(c.ref[2], c.fast[2], bytes_of(&c, 2));
                snprintf(what, sizeof what, "reverse_sequence on %s", elem_name(e));
                ok = ok && any_run(&c, what, libjit_reverse_sequence_any, libjit_reverse_sequence_any_work, &ran);
                any_free(&c);
            }
            /* one_hot of i64 indices (some outside the depth), values [off, on] */
            if (e != ELEM_BOOL) {
                int64_t oh[8], two[1] = {2}, depth = rnd(&s, 1, 5);
                int64_t oaxis = rnd(&s, 0, rank);
                for (int j = 0, k = 0; j <= rank; j++)
                    oh[j] = j == oaxis ? depth : x[k++];
                c = (AnyCase){0};
                desc_begin(&c.d, NK_ONE_HOT, 1);
                desc_operand_elem(&c.d, e, rank + 1, oh);
                desc_operand_elem(&c.d, ELEM_I64, rank, x);
                desc_operand_elem(&c.d, e, 1, two);
                desc_int(&c.d, AK_axis, oaxis);
                any_alloc(&c, s);
                for (int64_t j = 0; j < desc_numel(&c.d, 1); j++)
                    ((int64_t *)c.fast[1])[j] = rnd(&s, -depth - 1, depth);
                memcpy(c.ref[1], c.fast[1], bytes_of(&c, 1));
                snprintf(what, sizeof what, "one_hot on %s", elem_name(e));
                ok = ok && any_run(&c, what, libjit_one_hot_any, libjit_one_hot_any_work, &ran);
                any_free(&c);
            }
            /* gather along the axis, i32 or i64 indices (negative too) */
            int64_t gi[2] = {rnd(&s, 1, 3), rnd(&s, 1, 3)}, gy[8];
            int gr = (int)rnd(&s, 0, 2), ny = 0;
            for (int j = 0; j < rank; j++) {
                if (j != axis) {
                    gy[ny++] = x[j];
                    continue;
                }
                for (int q = 0; q < gr; q++)
                    gy[ny++] = gi[q];
            }
            c = (AnyCase){0};
            desc_begin(&c.d, NK_GATHER, 1);
            desc_operand_elem(&c.d, e, ny, gy);
            desc_operand_elem(&c.d, e, rank, x);
            desc_operand_elem(&c.d, i % 2 ? ELEM_I32 : ELEM_I64, gr, gi);
            desc_int(&c.d, AK_axis, axis);
            any_alloc(&c, s);
            for (int64_t j = 0; j < desc_numel(&c.d, 2); j++)
                elem_store_i64((ElemKind)lj_elem(c.d.w, 2), c.fast[2], j, rnd(&s, -x[axis], x[axis] - 1));
            memcpy(c.ref[2], c.fast[2], bytes_of(&c, 2));
            snprintf(what, sizeof what, "gather on %s", elem_name(e));
            ok = ok && any_run(&c, what, libjit_gather_any, libjit_gather_any_work, &ran);
            any_free(&c);
            /* transpose by a random permutation */
            int64_t perm[8], ty[8];
            for (int j = 0; j < rank; j++)
                perm[j] = j;
            for (int j = rank - 1; j > 0; j--) {
                int q = (int)rnd(&s, 0, j);
                int64_t t = perm[j];
                perm[j] = perm[q];
                perm[q] = t;
            }
            for (int j = 0; j < rank; j++)
                ty[j] = x[perm[j]];
            c = (AnyCase){0};
            desc_begin(&c.d, NK_TRANSPOSE, 1);
            desc_operand_elem(&c.d, e, rank, ty);
            desc_operand_elem(&c.d, e, rank, x);
            desc_ints(&c.d, AK_perm, rank, perm);
            any_alloc(&c, s);
            snprintf(what, sizeof what, "transpose on %s", elem_name(e));
            ok = ok && any_run(&c, what, libjit_transpose_any, libjit_transpose_any_work, &ran);
            any_free(&c);
            /* slice with steps of either sign */
            int64_t starts[8], ends[8], steps[8], sy[8];
            for (int j = 0; j < rank; j++) {
                steps[j] = rnd(&s, 0, 2) ? rnd(&s, 1, 2) : -rnd(&s, 1, 2);
                starts[j] = rnd(&s, -x[j], x[j] - 1);
                int64_t b = starts[j] < 0 ? starts[j] + x[j] : starts[j];
                int64_t cnt = steps[j] > 0 ? (x[j] - b + steps[j] - 1) / steps[j] : (b + 1 + (-steps[j]) - 1) / (-steps[j]);
                sy[j] = rnd(&s, 1, cnt);
                ends[j] = b + sy[j] * steps[j];
                if (ends[j] < 0) /* past the front: a negative end would count from the back */
                    ends[j] = -x[j] - 1;
            }
            c = (AnyCase){0};
            desc_begin(&c.d, NK_SLICE, 1);
            desc_operand_elem(&c.d, e, rank, sy);
            desc_operand_elem(&c.d, e, rank, x);
            desc_ints(&c.d, AK_starts, rank, starts);
            desc_ints(&c.d, AK_ends, rank, ends);
            desc_ints(&c.d, AK_steps, rank, steps);
            any_alloc(&c, s);
            snprintf(what, sizeof what, "slice on %s", elem_name(e));
            ok = ok && any_run(&c, what, libjit_slice_any, libjit_slice_any_work, &ran);
            any_free(&c);
            /* trilu on the last two axes */
            if (rank >= 2) {
                c = (AnyCase){0};
                desc_begin(&c.d, NK_TRILU, 1);
                desc_operand_elem(&c.d, e, rank, x);
                desc_operand_elem(&c.d, e, rank, x);
                desc_int(&c.d, AK_upper, i % 2);
                desc_int(&c.d, AK_k, rnd(&s, -3, 3));
                any_alloc(&c, s);
                snprintf(what, sizeof what, "trilu on %s", elem_name(e));
                ok = ok && any_run(&c, what, libjit_trilu_any, libjit_trilu_any_work, &ran);
                any_free(&c);
            }
            /* depth_to_space and back */
            int64_t b = rnd(&s, 1, 3), deep[4] = {rnd(&s, 1, 2), rnd(&s, 1, 3) * b * b, rnd(&s, 1, 4), rnd(&s, 1, 4)};
            int64_t wide[4] = {deep[0], deep[1] / (b * b), deep[2] * b, deep[3] * b};
            for (int dir = 0; dir < 2 && ok; dir++) {
                c = (AnyCase){0};
                desc_begin(&c.d, dir ? NK_SPACE_TO_DEPTH : NK_DEPTH_TO_SPACE, 1);
                desc_operand_elem(&c.d, e, 4, dir ? deep : wide);
                desc_operand_elem(&c.d, e, 4, dir ? wide : deep);
                desc_int(&c.d, AK_blocksize, b);
                if (!dir)
                    desc_int(&c.d, AK_mode, i % 2 ? MODE_CRD : MODE_DCR);
                any_alloc(&c, s);
                snprintf(what, sizeof what, "%s on %s", dir ? "space_to_depth" : "depth_to_space", elem_name(e));
                ok = any_run(&c, what, dir ? libjit_space_to_depth_any : libjit_depth_to_space_any,
                             dir ? libjit_space_to_depth_any_work : libjit_depth_to_space_any_work, &ran);
                any_free(&c);
            }
        }
    }
    return ok ? ran : -1;
}

/* layer_norm (with its statistics), softmax, log_softmax, hardmax and
 * nll_loss on f32 and f64. */
int any_norm_cases(uint64_t seed) {
    static const ElemKind kinds[] = {ELEM_F32, ELEM_F64, ELEM_F16};
    uint64_t s = seed;
    int ran = 0;
    bool ok = true;
    for (size_t ke = 0; ke < sizeof kinds / sizeof *kinds && ok; ke++) {
        ElemKind e = kinds[ke];
        char what[64];
        for (int i = 0; i < 6 && ok; i++) {
            int64_t x[8], st[8], one[1] = {1};
            int rank = random_shape(&s, x, 4, i == 0 ? 300 : 6);
            if (rank == 0)
                x[rank++] = 4;
            int64_t axis = rnd(&s, 0, rank - 1);
            int nres = (int)rnd(&s, 1, 3), ns = rank - (int)axis;
            for (int j = 0; j < rank; j++)
                st[j] = j < axis ? x[j] : 1;
            AnyCase c = {.plain = true};
            desc_begin(&c.d, NK_LAYER_NORM, nres);
            desc_operand_elem(&c.d, e, rank, x);
            for (int k = 1; k < nres; k++)
                desc_operand_elem(&c.d, ELEM_F32, rank, st);
            desc_operand_elem(&c.d, e, rank, x);
            desc_operand_elem(&c.d, e, i % 2 ? 1 : ns, i % 2 ? one : x + axis);
            if (i % 3)
                desc_operand_elem(&c.d, e, ns, x + axis);
            desc_int(&c.d, AK_axis, rnd(&s, 0, 1) ? axis : axis - rank);
            any_alloc(&c, s);
            snprintf(what, sizeof what, "layer_norm on %s", elem_name(e));
            ok = any_run(&c, what, libjit_layer_norm_any, libjit_layer_norm_any_work, &ran);
            any_free(&c);
            static const struct {
                NodeKind kind;
                KernelFn fn;
                WorkFn work;
            } sm[] = {{NK_SOFTMAX, libjit_softmax_any, libjit_softmax_any_work},
                      {NK_LOG_SOFTMAX, libjit_log_softmax_any, libjit_log_softmax_any_work},
                      {NK_HARDMAX, libjit_hardmax_any, libjit_hardmax_any_work}};
            for (size_t k = 0; k < 3 && ok; k++) {
                c = (AnyCase){.plain = i % 2};
                desc_begin(&c.d, sm[k].kind, 1);
                desc_operand_elem(&c.d, e, rank, x);
                desc_operand_elem(&c.d, e, rank, x);
                desc_int(&c.d, AK_axis, axis);
                any_alloc(&c, s + k);
                snprintf(what, sizeof what, "%s on %s", node_kind_name(sm[k].kind), elem_name(e));
                ok = any_run(&c, what, sm[k].fn, sm[k].work, &ran);
                any_free(&c);
            }
            /* nll_loss: x [N, C, d...], targets [N, d...] in range or ignored */
            if (rank < 2 || !ok)
                continue;
            int64_t t[8], w[1] = {x[1]}, scalar[1];
            int rt = 0;
            for (int j = 0; j < rank; j++)
                if (j != 1)
                    t[rt++] = x[j];
            int red = i % 3 == 0 ? RED_NONE : i % 3 == 1 ? RED_SUM : RED_MEAN;
            c = (AnyCase){.plain = true};
            desc_begin(&c.d, NK_NLL_LOSS, 1);
            desc_operand_elem(&c.d, e, red == RED_NONE ? rt : 0, red == RED_NONE ? t : scalar);
            desc_operand_elem(&c.d, e, rank, x);
            desc_operand_elem(&c.d, ELEM_I64, rt, t);
            if (i % 2)
                desc_operand_elem(&c.d, e, 1, w);
            desc_int(&c.d, AK_reduction, red);
            if (i >= 3)
                desc_int(&c.d, AK_ignore_index, 0);
            any_alloc(&c, s);
            for (int64_t j = 0; j < desc_numel(&c.d, 2); j++)
                ((int64_t *)c.fast[2])[j] = rnd(&s, 0, x[1] - 1);
            memcpy(c.ref[2], c.fast[2], bytes_of(&c, 2));
            snprintf(what, sizeof what, "nll_loss on %s", elem_name(e));
            ok = any_run(&c, what, libjit_nll_loss_any, libjit_nll_loss_any_work, &ran);
            any_free(&c);
        }
    }
    return ok ? ran : -1;
}

/* quantize_linear to i8, u8, i16, u16, i32 from f32 and f64, per tensor and
 * per axis, and back; dynamic_quantize_linear from f32. */
int any_quant_cases(uint64_t seed) {
    static const ElemKind qk[] = {ELEM_I8, ELEM_U8, ELEM_I16, ELEM_U16, ELEM_I32};
    uint64_t s = seed;
    int ran = 0;
    bool ok = true;
    for (size_t q = 0; q < sizeof qk / sizeof *qk && ok; q++)
        for (int i = 0; i < 8 && ok; i++) {
            ElemKind f = i % 2 ? ELEM_F64 : ELEM_F32;
            int64_t x[8], one[1] = {1}, len[1];
            int rank = random_shape(&s, x, 3, 50);
            if (rank == 0)
                x[rank++] = 7;
            int64_t axis = rnd(&s, 0, rank - 1);
            bool per_axis = i % 4 >= 2;
            len[0] = x[axis];
            for (int dir = 0; dir < 2 && ok; dir++) {
                AnyCase c = {.plain = true};
                desc_begin(&c.d, dir ? NK_DEQUANTIZE_LINEAR : NK_QUANTIZE_LINEAR, 1);
                desc_operand_elem(&c.d, dir ? f : qk[q], rank, x);
                desc_operand_elem(&c.d, dir ? qk[q] : f, rank, x);
                desc_operand_elem(&c.d, f, per_axis ? 1 : 0, per_axis ? len : one);
                desc_operand_elem(&c.d, qk[q], per_axis ? 1 : 0, per_axis ? len : one);
                if (per_axis)
                    desc_int(&c.d, AK_axis, axis);
                any_alloc(&c, s + (uint64_t)dir);
                for (int64_t j = 0; j < desc_numel(&c.d, 2); j++) /* scales: positive */
                    elem_store_f64(f, c.fast[2], j, (double)rnd(&s, 1, 100) / 64);
                memcpy(c.ref[2], c.fast[2], bytes_of(&c, 2));
                char what[64];
                snprintf(what, sizeof what, "%s %s", dir ? "dequantize_linear" : "quantize_linear",
                         elem_name(qk[q]));
                ok = any_run(&c, what, dir ? libjit_dequantize_linear_any : libjit_quantize_linear_any,
                             dir ? libjit_dequantize_linear_any_work : libjit_quantize_linear_any_work, &ran);
                any_free(&c);
            }
            if (q == 1 && ok) {
                int64_t scalar[1];
                AnyCase c = {.plain = true};
                desc_begin(&c.d, NK_DYNAMIC_QUANTIZE_LINEAR, 3);
                desc_operand_elem(&c.d, ELEM_U8, rank, x);
                desc_operand_elem(&c.d, ELEM_F32, 0, scalar);
                desc_operand_elem(&c.d, ELEM_U8, 0, scalar);
                desc_operand_elem(&c.d, ELEM_F32, rank, x);
                any_alloc(&c, s);
                ok = any_run(&c, "dynamic_quantize_linear", libjit_dynamic_quantize_linear_any,
                             libjit_dynamic_quantize_linear_any_work, &ran);
                any_free(&c);
            }
        }
    return ok ? ran : -1;
}

/* ---- integer kernels of quantized graphs (k_qint.c, k_qconv.c) ----------------------
 * Against the interpreter exactly, like every kernel above: sums are
 * integers and each result is requantized by the same double operations.
 * Scales are dyadic (k/64), so ties of round-half-to-even come up often. */

static Type qtype(ElemKind e, int rank, const int64_t *dims, double scale, int64_t offset) {
    Type t = {.elem = e, .rank = rank, .quant = QUANT_TENSOR, .scale = (float)scale,
              .offset = (int32_t)offset};
    for (int i = 0; i < rank; i++)
        t.dims[i] = dims[i];
    return t;
}

static int64_t qoffset(uint64_t *s, ElemKind e) {
    return e == ELEM_U8 ? rnd(s, 0, 255) : rnd(s, -30, 30);
}

/* Sets a case's parameters (scales, zero points) after its random fill;
 * deterministic in seed, so every kernel of a case sees the same inputs. */
typedef void (*QFix)(AnyCase *c, uint64_t seed);

/* Runs every kernel of fns (those not NULL) on one case; false on a mismatch. */
static bool qrun(AnyCase *c, const char *what, QFix fix, const KernelFn *fns, const WorkFn *works,
                 int n, int *ran, uint64_t seed) {
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        if (!fns[i])
            continue;
        any_alloc(c, seed);
        if (fix)
            fix(c, seed);
        char name[160];
        snprintf(name, sizeof name, "%s (kernel %d)", what, i);
        ok = any_run(c, name, fns[i], works[i], ran);
        any_free(c);
    }
    return ok;
}

/* Operand k's n values, in both copies. */
static void qset_f64(AnyCase *c, int k, int64_t i, double v) {
    ElemKind e = (ElemKind)lj_elem(c->d.w, k);
    elem_store_f64(e, c->fast[k], i, v);
    elem_store_f64(e, c->ref[k], i, v);
}

static void qset_i64(AnyCase *c, int k, int64_t i, int64_t v) {
    ElemKind e = (ElemKind)lj_elem(c->d.w, k);
    elem_store_i64(e, c->fast[k], i, v);
    elem_store_i64(e, c->ref[k], i, v);
}

/* ---- rescale, qadd, qmul, pools ---- */

static const ElemKind qkinds[] = {ELEM_I8, ELEM_U8};

static bool qelementwise(uint64_t *s, int *ran) {
    for (int op = 0; op < 3; op++)
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 2; b++)
                for (int i = 0; i < 4; i++) {
                    ElemKind ex = qkinds[a], ey = qkinds[b];
                    int64_t y[8], x[2][8];
                    /* i == 3: several work units, split inside a vector */
                    int rank = random_shape(s, y, 3, i == 0 ? 300 : 9), r[2];
                    if (i == 3) {
                        rank = 2;
                        y[0] = 3;
                        y[1] = rnd(s, 20000, 30000);
                    }
                    for (int k = 0; k < 2; k++)
                        r[k] = op == 0 || i == 3 ? rank : bcast_of(s, rank, y, x[k]);
                    if (op == 0 || i == 3) {
                        memcpy(x[0], y, sizeof y);
                        memcpy(x[1], y, sizeof y);
                    } else {
                        bcast_out(rank, y, 2, r, x);
                    }
                    AnyCase c = {.plain = true};
                    NodeKind nk = op == 0 ? NK_RESCALE : op == 1 ? NK_QADD : NK_QMUL;
                    desc_begin(&c.d, nk, 1);
                    double sy = op == 2 ? (double)rnd(s, 1, 64) / 64 : (double)rnd(s, 1, 64) / 512;
                    Type ty = qtype(ey, rank, y, sy, qoffset(s, ey));
                    desc_operand_type(&c.d, &ty);
                    for (int k = 0; k < (op == 0 ? 1 : 2); k++) {
                        Type tx = qtype(k ? qkinds[b ^ a] : ex, r[k], x[k], (double)rnd(s, 1, 64) / 512,
                                        qoffset(s, k ? qkinds[b ^ a] : ex));
                        desc_operand_type(&c.d, &tx);
                    }
                    bool i8 = ey == ELEM_I8;
                    KernelFn fn[] = {op == 0 ? libjit_rescale_any : op == 1 ? libjit_qadd_any : libjit_qmul_any,
                                     op == 0   ? (i8 ? libjit_rescale_i8 : libjit_rescale_u8)
                                     : op == 1 ? (i8 ? libjit_qadd_i8 : libjit_qadd_u8)
                                               : (i8 ? libjit_qmul_i8 : libjit_qmul_u8)};
                    WorkFn wk[] = {op == 0 ? libjit_rescale_any_work
                                   : op == 1 ? libjit_qadd_any_work : libjit_qmul_any_work,
                                   op == 0   ? (i8 ? libjit_rescale_i8_work : libjit_rescale_u8_work)
                                   : op == 1 ? (i8 ? libjit_qadd_i8_work : libjit_qadd_u8_work)
                                             : (i8 ? libjit_qmul_i8_work : libjit_qmul_u8_work)};
                    char what[64];
                    snprintf(what, sizeof what, "%s %s -> %s", node_kind_name(nk), elem_name(ex),
                             elem_name(ey));
                    if (!qrun(&c, what, NULL, fn, wk, 2, ran, *s + (uint64_t)i))
                        return false;
                }
    return true;
}

/* clip of i8/u8 (relu6 after an integer conv): bounds inside the kind's
 * range, fractional, beyond it, crossed; libjit_clip_i8/u8 against the
 * interpreter, in chunks of several work units. */
static bool qclips(uint64_t *s, int *ran) {
    static const float bounds[][2] = {{0, 6},     {-3, 100},   {-1.5f, 2.5f}, {-300, 300},
                                      {10, -10},  {0, 255},    {-128, 127},   {200.5f, 1e9f},
                                      {-1e9f, -129}, {127, 127}};
    int nb = (int)(sizeof bounds / sizeof *bounds);
    for (int e = 0; e < 2; e++)
        for (int b = 0; b < nb; b++) {
            int64_t dims[2] = {rnd(s, 1, 3), b % 3 ? rnd(s, 1, 300) : rnd(s, 30000, 70000)};
            AnyCase c = {0};
            desc_begin(&c.d, NK_CLIP, 1);
            desc_operand_elem(&c.d, qkinds[e], 2, dims);
            desc_operand_elem(&c.d, qkinds[e], 2, dims);
            desc_float(&c.d, AK_min, bounds[b][0]);
            desc_float(&c.d, AK_max, bounds[b][1]);
            KernelFn fn[] = {e ? libjit_clip_u8 : libjit_clip_i8};
            WorkFn wk[] = {e ? libjit_clip_u8_work : libjit_clip_i8_work};
            char what[64];
            snprintf(what, sizeof what, "clip %s [%g, %g]", elem_name(qkinds[e]), bounds[b][0],
                     bounds[b][1]);
            if (!qrun(&c, what, NULL, fn, wk, 1, ran, *s + (uint64_t)b))
                return false;
        }
    return true;
}

/* quantize_linear of f32 by one scale (operand 2) to i8/u8: a scale that
 * makes ties (1/4) or one from the random fill (NaN, 0, negative too). */
static void quantize_fix(AnyCase *c, uint64_t seed) {
    uint64_t s = seed * 17 + 3;
    int64_t r = rnd(&s, 0, 2);
    if (r < 2)
        qset_f64(c, 2, 0, r ? 0.25 : (double)rnd(&s, 1, 64) / 1024);
}

static bool qquantizes(uint64_t *s, int *ran) {
    for (int e = 0; e < 2; e++)
        for (int i = 0; i < 8; i++) {
            int64_t dims[2] = {rnd(s, 1, 3), i % 3 ? rnd(s, 1, 300) : rnd(s, 30000, 70000)}, one[1] = {1};
            AnyCase c = {0};
            desc_begin(&c.d, NK_QUANTIZE_LINEAR, 1);
            desc_operand_elem(&c.d, qkinds[e], 2, dims);
            desc_operand_elem(&c.d, ELEM_F32, 2, dims);
            desc_operand_elem(&c.d, ELEM_F32, 0, one);
            desc_operand_elem(&c.d, qkinds[e], 0, one);
            KernelFn fn[] = {e ? libjit_quantize_linear_u8 : libjit_quantize_linear_i8};
            WorkFn wk[] = {e ? libjit_quantize_linear_u8_work : libjit_quantize_linear_i8_work};
            char what[64];
            snprintf(what, sizeof what, "quantize_linear f32 -> %s", elem_name(qkinds[e]));
            if (!qrun(&c, what, quantize_fix, fn, wk, 1, ran, *s + (uint64_t)i))
                return false;
        }
    return true;
}

/* 2-D max pools of i8/u8 on planes wider than a vector and than one block
 * of the vector kernel (512 columns), and the ResNet stem's. */
static bool qmax_pools_wide(uint64_t *s, int *ran) {
    for (int e = 0; e < 2; e++)
        for (int i = 0; i < 8; i++) {
            int64_t x[4] = {1, rnd(s, 1, 3), rnd(s, 1, 12), i < 2 ? rnd(s, 500, 1200) : rnd(s, 60, 200)};
            int64_t k[2], st[2], pads[4], dil[2], y[4] = {x[0], x[1], 0, 0};
            for (int a = 0; a < 2; a++) {
                k[a] = rnd(s, 1, 4);
                st[a] = rnd(s, 1, 3);
                dil[a] = rnd(s, 1, 2);
                pads[a] = rnd(s, 0, k[a] - 1);
                pads[2 + a] = rnd(s, 0, k[a] - 1);
                if (i == 2) /* the ResNet stem's: 3x3, stride 2, padding 1, 112 wide */
                    k[a] = 3, st[a] = 2, dil[a] = 1, pads[a] = pads[2 + a] = 1, x[3] = 112;
                int64_t span = (k[a] - 1) * dil[a] + 1, len = x[2 + a] + pads[a] + pads[2 + a];
                if (len < span)
                    x[2 + a] += span, len += span;
                y[2 + a] = (len - span) / st[a] + 1;
            }
            AnyCase c = {.plain = true};
            desc_begin(&c.d, NK_MAX_POOL, 1);
            desc_operand_elem(&c.d, qkinds[e], 4, y);
            desc_operand_elem(&c.d, qkinds[e], 4, x);
            desc_ints(&c.d, AK_kernel, 2, k);
            desc_ints(&c.d, AK_strides, 2, st);
            desc_ints(&c.d, AK_pads, 4, pads);
            desc_ints(&c.d, AK_dilations, 2, dil);
            KernelFn fn[] = {e ? libjit_max_pool_u8 : libjit_max_pool_i8};
            WorkFn wk[] = {e ? libjit_max_pool_u8_work : libjit_max_pool_i8_work};
            char what[96];
            snprintf(what, sizeof what, "max_pool %s %lldx%lld k%lldx%lld s%lldx%lld", elem_name(qkinds[e]),
                     (long long)x[2], (long long)x[3], (long long)k[0], (long long)k[1],
                     (long long)st[0], (long long)st[1]);
            if (!qrun(&c, what, NULL, fn, wk, 1, ran, *s + (uint64_t)i))
                return false;
        }
    return true;
}

/* 2-D (and, for max, 1-D) pools: windows with strides, padding (some
 * windows all padding), dilation for max; count_include_pad both ways. */
static bool qpools(uint64_t *s, int *ran) {
    for (int kind = 0; kind < 4; kind++) /* qavg, qglobal_avg, max 2-D, max 1-D (+indices) */
        for (int e = 0; e < 3; e++)
            for (int i = 0; i < 6; i++) {
                ElemKind ex = e < 2 ? qkinds[e] : ELEM_I32, ey = kind < 2 ? qkinds[(e + i) % 2] : ex;
                if (kind < 2 && e == 2)
                    continue;
                int ns = kind == 3 ? 1 : 2;
                /* global average pools: up to 40 planes of 1 to 81 (whole vectors of
                 * the integer sums and tails) */
                int64_t x[4] = {rnd(s, 1, 2), rnd(s, 1, kind == 1 ? 40 : 3), rnd(s, 1, 9), rnd(s, 1, 9)}, y[4];
                int64_t k[2], st[2], pads[4], dil[2];
                bool ok_shape = true;
                for (int a = 0; a < ns; a++) {
                    k[a] = rnd(s, 1, 3);
                    st[a] = rnd(s, 1, 2);
                    dil[a] = kind >= 2 ? rnd(s, 1, 2) : 1;
                    pads[a] = rnd(s, 0, k[a] - 1);
                    pads[ns + a] = rnd(s, 0, k[a] - 1);
                    int64_t span = (k[a] - 1) * dil[a] + 1, len = x[2 + a] + pads[a] + pads[ns + a];
                    ok_shape &= len >= span;
                    y[2 + a] = kind == 1 ? 1 : len >= span ? (len - span) / st[a] + 1 : 1;
                }
                if (!ok_shape)
                    continue;
                y[0] = x[0];
                y[1] = x[1];
                AnyCase c = {.plain = true};
                NodeKind nk = kind == 0 ? NK_QAVG_POOL : kind == 1 ? NK_QGLOBAL_AVG_POOL : NK_MAX_POOL;
                bool indices = kind == 3 && i % 2;
                desc_begin(&c.d, nk, indices ? 2 : 1);
                Type ty = qtype(ey, 2 + ns, y, (double)rnd(s, 1, 64) / 512, qoffset(s, ey));
                Type tx = qtype(ex, 2 + ns, x, (double)rnd(s, 1, 64) / 512, qoffset(s, ex));
                if (kind >= 2)
                    ty = tx, memcpy(ty.dims, y, sizeof y);
                desc_operand_type(&c.d, &ty);
                if (indices)
                    desc_operand_elem(&c.d, ELEM_I64, 2 + ns, y);
                desc_operand_type(&c.d, &tx);
                if (kind != 1) {
                    desc_ints(&c.d, AK_kernel, ns, k);
                    desc_ints(&c.d, AK_strides, ns, st);
                    desc_ints(&c.d, AK_pads, 2 * ns, pads);
                    desc_ints(&c.d, AK_dilations, ns, dil);
                    if (kind == 0)
                        desc_int(&c.d, AK_count_include_pad, i % 2);
                    if (indices)
                        desc_int(&c.d, AK_storage_order, i % 4 == 3);
                }
                KernelFn fn = kind == 0   ? libjit_qavg_pool_any
                              : kind == 1 ? libjit_qglobal_avg_pool_any
                              : e == 0    ? libjit_max_pool_i8
                              : e == 1    ? libjit_max_pool_u8
                                          : libjit_max_pool_i32;
                WorkFn wk = kind == 0   ? libjit_qavg_pool_any_work
                            : kind == 1 ? libjit_qglobal_avg_pool_any_work
                            : e == 0    ? libjit_max_pool_i8_work
                            : e == 1    ? libjit_max_pool_u8_work
                                        : libjit_max_pool_i32_work;
                char what[64];
                snprintf(what, sizeof what, "%s %s %d-D%s", node_kind_name(nk), elem_name(ex), ns,
                         indices ? " with indices" : "");
                if (!qrun(&c, what, NULL, &fn, &wk, 1, ran, *s + (uint64_t)i))
                    return false;
            }
    return true;
}

/* ---- convolutions ---- */

/* The shape classes: (N, C, H, W, M, kh, kw, stride, pad, dilation, group);
 * W = 0 makes a 1-D convolution over H. */
static const int64_t qconv_shapes[][11] = {
    {1, 8, 9, 9, 8, 3, 3, 1, 1, 1, 1},    /* regular 3x3 */
    {1, 5, 10, 7, 6, 3, 3, 2, 1, 1, 1},   /* stride 2, K = 45 (not a multiple of 4) */
    {1, 12, 8, 16, 10, 1, 1, 1, 0, 1, 1}, /* pointwise, whole tiles */
    {2, 7, 5, 5, 9, 1, 1, 1, 0, 1, 1},    /* pointwise, a partial tile, two images */
    {1, 6, 7, 7, 4, 3, 3, 1, 1, 1, 2},    /* grouped */
    {1, 5, 9, 9, 5, 3, 3, 1, 1, 1, 5},    /* depthwise */
    {2, 4, 10, 10, 4, 3, 3, 2, 1, 1, 4},  /* depthwise, stride 2 */
    {1, 3, 6, 6, 6, 3, 3, 1, 1, 1, 3},    /* depthwise, two channels each (grouped GEMM) */
    {1, 4, 9, 9, 5, 3, 3, 1, 2, 2, 1},    /* dilation 2 */
    {1, 3, 6, 8, 4, 1, 3, 1, 0, 1, 1},    /* 1x3 */
    {1, 64, 6, 6, 9, 3, 3, 1, 1, 1, 1},   /* K = 576: long sums, a partial row block */
    {1, 2048, 1, 1, 20, 1, 1, 1, 0, 1, 1},/* a fully connected layer (the quantize pass's form) */
    {1, 3, 10, 0, 4, 3, 1, 1, 1, 1, 1},   /* 1-D: the plain kernel */
    {1, 7, 6, 37, 7, 3, 3, 1, 1, 1, 7},   /* depthwise, rows wider than a vector, odd */
    {1, 3, 9, 41, 3, 3, 3, 2, 1, 1, 3},   /* depthwise, stride 2, odd width */
    {1, 3, 12, 23, 3, 5, 5, 3, 2, 1, 3},  /* depthwise 5x5, stride 3 */
    {1, 2, 11, 19, 2, 3, 3, 1, 2, 2, 2},  /* depthwise, dilation 2 */
    {2, 5, 8, 8, 5, 7, 7, 1, 3, 1, 5},    /* depthwise 7x7, two images */
    {1, 13, 20, 20, 11, 3, 3, 1, 1, 1, 1},/* several tiles, odd channel counts */
    {1, 300, 1, 1, 37, 1, 1, 1, 0, 1, 1}, /* fully connected, K and M odd */
    {1, 200, 1, 1, 12, 1, 1, 1, 0, 1, 1}, /* fully connected, K = 128 + 72: two 64-byte tails */
    {1, 64, 3, 3, 70, 1, 1, 1, 0, 1, 1},  /* pointwise on 9 positions */
    /* depthwise on two-row words (k_qconv.c's dw_unit): */
    {1, 4, 14, 14, 4, 3, 3, 2, 1, 1, 4},  /* stride 2 on an even map: two column phases */
    {1, 3, 9, 9, 3, 2, 4, 1, 1, 1, 3},    /* 2x4: one pair of rows, four column taps */
    {1, 3, 7, 11, 3, 1, 3, 1, 1, 1, 3},   /* 1x3: the pair's second row weighs 0 */
    {1, 2, 13, 13, 2, 3, 3, 2, 2, 2, 2},  /* stride 2, dilation 2: phases from both */
    {1, 2, 30, 70, 2, 3, 3, 1, 1, 1, 2},  /* rows wider than a tile, many tiles */
    {1, 2, 19, 23, 2, 5, 5, 4, 2, 1, 2},  /* 5x5 stride 4: four row phases */
    {1, 2, 12, 12, 2, 3, 3, 5, 1, 1, 2},  /* stride 5: beyond the phases, the grouped GEMM */
    {1, 16, 7, 7, 16, 3, 3, 1, 1, 1, 16}, /* 7x7 maps: tiles across rows */
};

/* x_scale, w_scale (per channel or not), y_scale so results spread over
 * the range and some saturate; zero points; bias. Operands of qlinear_conv:
 * 1 x, 2 x_scale, 3 x_zp, 4 w, 5 w_scale, 6 w_zp, 7 y_scale, 8 y_zp, 9 bias. */
static void qconv_fix(AnyCase *c, uint64_t seed) {
    uint64_t s = seed * 31 + 5;
    int64_t k = desc_numel(&c->d, 4) / lj_dim(c->d.w, 4, 0);
    double xs = (double)rnd(&s, 1, 32) / 64;
    qset_f64(c, 2, 0, xs);
    qset_i64(c, 3, 0, qoffset(&s, (ElemKind)lj_elem(c->d.w, 1)));
    for (int64_t m = 0; m < desc_numel(&c->d, 5); m++)
        qset_f64(c, 5, m, (double)rnd(&s, 1, 32) / 128);
    bool zw = rnd(&s, 0, 1);
    for (int64_t m = 0; m < desc_numel(&c->d, 6); m++)
        qset_i64(c, 6, m, zw ? rnd(&s, -5, 5) : 0);
    qset_f64(c, 7, 0, xs * 0.125 * sqrt((double)k) * 30 * (double)rnd(&s, 1, 4) / 2);
    if (rnd(&s, 0, 1)) { /* powers of two: the multiplier is 2^-n, and ties come up */
        int e = (int)lround(log2(sqrt((double)k) * 50));
        qset_f64(c, 2, 0, 1.0 / 32);
        for (int64_t m = 0; m < desc_numel(&c->d, 5); m++)
            qset_f64(c, 5, m, ldexp(1.0, -(int)rnd(&s, 3, 4)));
        qset_f64(c, 7, 0, ldexp(1.0, e - 8));
    }
    qset_i64(c, 8, 0, qoffset(&s, (ElemKind)lj_elem(c->d.w, 8)));
    if (lj_nops(c->d.w) == 10)
        for (int64_t m = 0; m < desc_numel(&c->d, 9); m++)
            qset_i64(c, 9, m, rnd(&s, -5000, 5000));
}

/* conv_integer: 1 x, 2 w, 3 x_zp, 4 w_zp. */
static void conv_integer_fix(AnyCase *c, uint64_t seed) {
    uint64_t s = seed * 31 + 7;
    qset_i64(c, 3, 0, qoffset(&s, (ElemKind)lj_elem(c->d.w, 1)));
    for (int64_t m = 0; m < desc_numel(&c->d, 4); m++)
        qset_i64(c, 4, m, qoffset(&s, (ElemKind)lj_elem(c->d.w, 2)) / 4);
}

static bool qconvs(uint64_t *s, int *ran) {
    int nshapes = (int)(sizeof qconv_shapes / sizeof *qconv_shapes);
    for (int sh = 0; sh < nshapes; sh++)
        for (int v = 0; v < 8; v++) {
            const int64_t *q = qconv_shapes[sh];
            int ns = q[3] ? 2 : 1;
            ElemKind ex = qkinds[v % 2], ey = qkinds[v / 2 % 2];
            ElemKind ew = v == 7 ? ELEM_U8 : ELEM_I8; /* u8 weights: the plain path */
            bool per_m = v % 3 != 2, bias = v % 4 != 3, integer = v == 5;
            int64_t x[4] = {q[0], q[1], q[2], q[3]}, w[4] = {q[4], q[1] / q[10], q[5], q[6]};
            int64_t y[4] = {q[0], q[4]}, st[2] = {q[7], q[7]}, pads[4], dil[2] = {q[9], q[9]};
            int64_t kern[2] = {q[5], q[6]}, one[1] = {1}, mlen[1] = {q[4]};
            for (int a = 0; a < ns; a++) {
                pads[a] = pads[ns + a] = q[8];
                y[2 + a] = (x[2 + a] + 2 * q[8] - (kern[a] - 1) * dil[a] - 1) / st[a] + 1;
            }
            AnyCase c = {.plain = true};
            desc_begin(&c.d, integer ? NK_CONV_INTEGER : NK_QLINEAR_CONV, 1);
            desc_operand_elem(&c.d, integer ? ELEM_I32 : ey, 2 + ns, y);
            desc_operand_elem(&c.d, ex, 2 + ns, x);
            if (integer) {
                desc_operand_elem(&c.d, ew, 2 + ns, w);
                desc_operand_elem(&c.d, ex, 0, one);
                desc_operand_elem(&c.d, ew, per_m ? 1 : 0, per_m ? mlen : one);
            } else {
                desc_operand_elem(&c.d, ELEM_F32, 0, one);
                desc_operand_elem(&c.d, ex, 0, one);
                desc_operand_elem(&c.d, ew, 2 + ns, w);
                desc_operand_elem(&c.d, ELEM_F32, per_m ? 1 : 0, per_m ? mlen : one);
                desc_operand_elem(&c.d, ew, per_m ? 1 : 0, per_m ? mlen : one);
                desc_operand_elem(&c.d, ELEM_F32, 0, one);
                desc_operand_elem(&c.d, ey, 0, one);
                if (bias)
                    desc_operand_elem(&c.d, ELEM_I32, 1, mlen);
            }
            desc_ints(&c.d, AK_kernel, ns, kern);
            desc_ints(&c.d, AK_strides, ns, st);
            desc_ints(&c.d, AK_pads, 2 * ns, pads);
            desc_ints(&c.d, AK_dilations, ns, dil);
            desc_int(&c.d, AK_group, q[10]);
            bool vnni = false;
#if defined(__x86_64__)
            vnni = __builtin_cpu_supports("avx512vnni");
#endif
            KernelFn fns[3] = {libjit_qlinear_conv_any, ey == ELEM_I8 ? libjit_qlinear_conv_i8 : libjit_qlinear_conv_u8};
            WorkFn wks[3] = {libjit_qlinear_conv_any_work,
                             ey == ELEM_I8 ? libjit_qlinear_conv_i8_work : libjit_qlinear_conv_u8_work};
#if defined(__x86_64__)
            if (vnni) {
                fns[2] = ey == ELEM_I8 ? libjit_qlinear_conv_vnni_i8 : libjit_qlinear_conv_vnni_u8;
                wks[2] = ey == ELEM_I8 ? libjit_qlinear_conv_vnni_i8_work : libjit_qlinear_conv_vnni_u8_work;
            }
#endif
            if (integer) {
                fns[0] = libjit_conv_integer_any;
                wks[0] = libjit_conv_integer_any_work;
                fns[1] = fns[2] = NULL;
            }
            char what[96];
            snprintf(what, sizeof what, "%s shape %d, x %s, w %s, y %s%s%s",
                     integer ? "conv_integer" : "qlinear_conv", sh, elem_name(ex), elem_name(ew),
                     integer ? "i32" : elem_name(ey), per_m ? ", per channel" : "",
                     bias && !integer ? ", bias" : "");
            if (!qrun(&c, what, integer ? conv_integer_fix : qconv_fix, fns, wks, 3, ran,
                      *s + (uint64_t)(sh * 8 + v)))
                return false;
        }
    return true;
}

/* ---- qconv_packed: weights packed at compile time (the qconv-pack pass) ---- */

/* Shape classes as qconv_shapes' (N, C, H, W, M, kh, kw, stride, pad,
 * dilation), one group, M a multiple of 4 (C padded to one): bands of rows
 * (maps over 512 flattened positions), stride phases, pointwise tiles. */
static const int64_t qpacked_shapes[][10] = {
    {1, 8, 9, 9, 8, 3, 3, 1, 1, 1},      /* 3x3, one band */
    {1, 8, 40, 30, 8, 3, 3, 1, 1, 1},    /* 3x3, three bands, the last short */
    {1, 8, 21, 37, 12, 3, 3, 2, 1, 1},   /* stride 2, odd width: four phases */
    {1, 4, 6, 70, 4, 3, 3, 2, 1, 1},     /* stride 2, rows of several vectors */
    {1, 16, 14, 14, 8, 1, 1, 2, 0, 1},   /* 1x1 stride 2: one phase used */
    {1, 4, 30, 30, 8, 7, 7, 2, 3, 1},    /* 7x7 stride 2, pad 3 (a stem) */
    {1, 4, 17, 17, 4, 3, 3, 3, 1, 1},    /* stride 3 */
    {1, 4, 19, 23, 4, 5, 5, 4, 2, 1},    /* 5x5 stride 4 */
    {1, 4, 9, 9, 8, 3, 3, 1, 2, 2},      /* dilation 2 */
    {1, 8, 12, 12, 8, 3, 3, 2, 2, 2},    /* dilation 2, stride 2: phases from both */
    {1, 16, 30, 30, 12, 1, 1, 1, 0, 1},  /* pointwise, bands and a partial tile */
    {2, 8, 5, 5, 8, 1, 1, 1, 0, 1},      /* pointwise, two images, one partial tile each */
    {1, 128, 6, 6, 12, 3, 3, 1, 1, 1},   /* K = 1152 */
    {2, 8, 7, 7, 16, 3, 3, 1, 1, 1},     /* few units: the rows split in two */
    {1, 12, 7, 7, 4, 3, 3, 1, 0, 1},     /* no padding, 5x5 out */
    {1, 4, 4, 4, 4, 3, 3, 1, 1, 1},      /* 16 positions, the least the pass packs */
    {1, 3, 30, 30, 8, 7, 7, 2, 3, 1},    /* RGB 7x7 stride 2: channels padded to 4 */
    {1, 5, 9, 9, 4, 3, 3, 1, 1, 1},      /* 5 channels padded to 8 */
    {1, 6, 10, 10, 8, 1, 1, 1, 0, 1},    /* pointwise, 6 channels padded to 8 */
    {1, 4, 5, 16, 4, 3, 3, 1, 1, 1},     /* rows of exactly 16 words (one vector) */
    {1, 4, 6, 8, 4, 3, 3, 1, 1, 1},      /* rows of exactly 8 words */
    {1, 4, 6, 32, 4, 3, 3, 2, 1, 1},     /* stride 2, phase rows of 16 words */
    {1, 4, 6, 16, 4, 3, 3, 2, 1, 1},     /* stride 2, phase rows of 8 words */
    {1, 4, 5, 25, 4, 3, 3, 2, 0, 1},     /* stride 2, 12 words: two overlapping 8s */
    {1, 4, 5, 150, 4, 3, 3, 2, 1, 1},    /* stride 2, phase rows of 76 words: two passes */
    {1, 8, 40, 7, 8, 1, 1, 2, 0, 1},     /* 1x1 stride 2, rows of 4 words, 20 rows (3 groups) */
    /* small maps, rows in groups of 16, sums of 1024 or more: output
     * channels in the lanes (k_qconvp.c's mconv_unit) */
    {1, 128, 7, 7, 32, 3, 3, 1, 1, 1},   /* 7x7: a last block of one position, one group a half */
    {1, 128, 8, 8, 16, 3, 3, 2, 1, 1},   /* 3x3 stride 2 to 4x4, one group: a half with none */
    {1, 128, 9, 9, 80, 3, 3, 2, 1, 1},   /* stride 2 to 5x5, five groups: halves of 2 and 3 */
    {2, 114, 6, 6, 64, 3, 3, 1, 1, 1},   /* two images, channels padded, halves inside a 64 */
    {1, 64, 14, 14, 144, 5, 5, 1, 2, 1}, /* 14x14, nine groups: a block of four and one of one */
    {1, 128, 7, 7, 128, 3, 3, 1, 1, 1},  /* rows packed in 64s: one per half */
    /* blocks of 6 positions by 4 groups (12 positions, 4 groups: fewer
     * unused lanes than 7 by 3; the halves of two groups take 7 by 3) */
    {1, 128, 6, 2, 64, 3, 3, 1, 1, 1},
    {1, 128, 14, 14, 64, 3, 3, 1, 1, 1}, /* 196 positions: 6 by 4 whole and in halves */
    /* 1x1 by lanes (49 positions or fewer, K >= 1024): the band's words one
     * run of the plane (fill_band); stride 2 through the phase fill */
    {1, 1024, 7, 7, 32, 1, 1, 1, 0, 1},  /* 7x7, two groups */
    {2, 1030, 5, 5, 64, 1, 1, 1, 0, 1},  /* two images, 25 positions, channels padded */
    {1, 1024, 14, 14, 48, 1, 1, 2, 0, 1}, /* stride 2 to 7x7 */
    /* stride 1 without padding (whole rows): the plane's run for bands too */
    {1, 4, 40, 30, 4, 3, 3, 1, 0, 1},    /* three bands */
    /* rows in fours, channels in 64s: AMX's path with the weights regrouped
     * (k_qconvp.c's aconv_regroup) */
    {1, 64, 30, 30, 32, 3, 3, 1, 1, 1},  /* two bands, each half of the rows one group */
    {2, 64, 24, 40, 48, 3, 3, 1, 1, 1},  /* two images of two bands, three groups (one odd) */
};

/* The pass's layout, written here from its definition in core/nodes.def:
 * w [M][C][T] -> [M/4][T][Cp/4][4 rows][4 channels], Cp = C rounded up to
 * a multiple of 4, the weights of the channels beyond C zero. */
static void pack_weights(const int8_t *w, int64_t M, int64_t C, int64_t Cp, int64_t T,
                         int64_t positions, int8_t *out) {
    int64_t g = qpack_rows(M, T, positions, Cp);
    memset(out, 0, (size_t)(M * Cp * T));
    for (int64_t m = 0; m < M; m++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t t = 0; t < T; t++)
                out[qpack_at(g, Cp, T, m, c, t)] = w[(m * C + c) * T + t];
}

/* Variants 6 and 7: the edges of the VNNI kernel's fused requantization
 * (k_qconvp.c's pq_fused), which it decides per block of four rows: rows
 * 0-3 all inside, each later block with one row outside (one edge per
 * block, so that a kernel wrong about that edge alone fails). x_scale =
 * y_scale = 1 so that a row's multiplier is its w_scale. Variant 6:
 * multipliers at and just past both ends of [2^-15, 1/4), and far outside.
 * Variant 7: packed biases (after folding): sums beyond +-2^24 whose
 * products would leave the f32 magic's range unclamped (1/8, just below
 * 1/4), a sum past 2^24 at 2^-17 (whose clamped product would not
 * saturate: the double path must take it), and beyond INT32_MAX - K * 255
 * * 128 either side (one past it, and far enough that sums wrap), beside
 * that bound itself. */
static void qconv_edges(AnyCase *c, int v, int64_t cp, int64_t zx, int64_t shift) {
    static const float mults[16] = {
        0x1p-15f, 0x1.fffffep-3f, 0.01f, 0x1p-12f, 0x1.fffffep-16f, 0x1p-12f, 0.01f, 0x1p-15f,
        0.01f, 0.25f, 0x1p-12f, 0.01f, 3.0f, 0x1p-20f, 0.01f, 0x1p-15f};
    int64_t M = lj_dim(c->d.w, 4, 0), C = lj_dim(c->d.w, 4, 1);
    int64_t T = lj_dim(c->d.w, 4, 2) * lj_dim(c->d.w, 4, 3);
    int64_t room = INT32_MAX - cp * T * 255 * 128;
    struct { int64_t bias; float mult; } edge[16] = {
        {1 << 26, 0.125f}, {-(1 << 26), 0x1.fffffep-3f}, {-(1 << 24) - 40000, 0x1p-15f}, {room, 0x1p-13f},
        {1 << 26, 0x1p-17f}, {12345, 0x1p-15f}, {-12345, 0x1p-14f}, {1 << 20, 0x1p-15f},
        {room + 1, 0x1p-13f}, {-room, 0x1p-13f}, {0, 0x1p-13f}, {-(1 << 26), 0x1p-14f},
        {-room - 1, 0x1p-13f}, {room, 0x1p-13f}, {5000, 0x1p-13f}, {1 << 26, 0.01f}};
    qset_f64(c, 2, 0, 1.0);
    qset_f64(c, 7, 0, 1.0);
    for (int64_t m = 0; m < M; m++) {
        int64_t sum = 0;
        for (int64_t k = 0; k < C * T; k++)
            sum += ((const int8_t *)c->ref[4])[m * C * T + k];
        int64_t fold = (zx + shift) * sum, bias = edge[m % 16].bias;
        if (m % 16 == 8 || m % 16 == 12) /* far past the bound, where i32 sums would wrap */
            bias = m % 16 == 8 ? INT32_MAX - 1000 - (fold > 0 ? fold : 0)
                               : INT32_MIN + 1000 - (fold < 0 ? fold : 0);
        qset_f64(c, 5, m, v == 6 ? mults[m % 16] : edge[m % 16].mult);
        if (v == 7) /* the packed bias is bias - (x_zp + sh) sum */
            qset_i64(c, 9, m, bias + fold);
    }
}

static void run_shares(const Desc *d, KernelFn fn, WorkFn work, void *const *ops, int threads);

/* Each case twice: as qlinear_conv with zero weight zero points, whose
 * interpreter result is the reference; and packed, the weights laid out
 * and the row sums folded into the bias here, run by the packed kernels
 * (plain and VNNI) and by the interpreter's qconv_packed, which must all
 * give the reference's bytes. */
static bool qconvs_packed(uint64_t *s, int *ran) {
    int nshapes = (int)(sizeof qpacked_shapes / sizeof *qpacked_shapes);
    for (int sh = 0; sh < nshapes; sh++)
        for (int v = 0; v < 8; v++) {
            const int64_t *q = qpacked_shapes[sh];
            ElemKind ex = qkinds[v % 2], ey = qkinds[v / 2 % 2];
            bool per_m = v != 4;
            int64_t cp = (q[1] + 3) / 4 * 4;
            int64_t x[4] = {q[0], q[1], q[2], q[3]}, w[2][4] = {{q[4], q[1], q[5], q[6]}, {q[4], cp, q[5], q[6]}};
            int64_t y[4] = {q[0], q[4]}, st[2] = {q[7], q[7]}, pads[4], dil[2] = {q[9], q[9]};
            int64_t kern[2] = {q[5], q[6]}, one[1] = {1}, mlen[1] = {q[4]};
            for (int a = 0; a < 2; a++) {
                pads[a] = pads[2 + a] = q[8];
                y[2 + a] = (x[2 + a] + 2 * q[8] - (kern[a] - 1) * dil[a] - 1) / st[a] + 1;
            }
            AnyCase c[2] = {{.plain = true}, {.plain = true}};
            for (int k = 0; k < 2; k++) {
                desc_begin(&c[k].d, k ? NK_QCONV_PACKED : NK_QLINEAR_CONV, 1);
                desc_operand_elem(&c[k].d, ey, 4, y);
                desc_operand_elem(&c[k].d, ex, 4, x);
                desc_operand_elem(&c[k].d, ELEM_F32, 0, one);
                desc_operand_elem(&c[k].d, ex, 0, one);
                desc_operand_elem(&c[k].d, ELEM_I8, 4, w[k]);
                desc_operand_elem(&c[k].d, ELEM_F32, per_m ? 1 : 0, per_m ? mlen : one);
                desc_operand_elem(&c[k].d, ELEM_I8, per_m ? 1 : 0, per_m ? mlen : one);
                desc_operand_elem(&c[k].d, ELEM_F32, 0, one);
                desc_operand_elem(&c[k].d, ey, 0, one);
                desc_operand_elem(&c[k].d, ELEM_I32, 1, mlen);
                desc_ints(&c[k].d, AK_kernel, 2, kern);
                desc_ints(&c[k].d, AK_strides, 2, st);
                desc_ints(&c[k].d, AK_pads, 4, pads);
                desc_ints(&c[k].d, AK_dilations, 2, dil);
            }
            uint64_t seed = *s + (uint64_t)(sh * 8 + v) + 1000;
            any_alloc(&c[0], seed);
            qconv_fix(&c[0], seed);
            for (int64_t m = 0; m < desc_numel(&c[0].d, 6); m++)
                qset_i64(&c[0], 6, m, 0);
            int64_t zx = elem_load_i64(ex, c[0].ref[3], 0), shift = ex == ELEM_I8 ? 128 : 0;
            if (v >= 6)
                qconv_edges(&c[0], v, cp, zx, shift);
            bool ok = !libjit_generic(c[0].d.w, c[0].ref);
            /* the packed operands from the reference's */
            int64_t M = q[4], C = q[1], T = q[5] * q[6];
            KernelFn fns[4] = {libjit_qconv_packed_i8, libjit_qconv_packed_u8, NULL, NULL};
            WorkFn wks[4] = {libjit_qconv_packed_i8_work, libjit_qconv_packed_u8_work, NULL, NULL};
#if defined(__x86_64__)
            if (__builtin_cpu_supports("avx512vnni")) {
                fns[2] = ey == ELEM_I8 ? libjit_qconv_packed_vnni_i8 : libjit_qconv_packed_vnni_u8;
                wks[2] = ey == ELEM_I8 ? libjit_qconv_packed_vnni_i8_work
                                       : libjit_qconv_packed_vnni_u8_work;
                /* AMX where the CPU and the kernel allow it, else VNNI again */
                fns[3] = ey == ELEM_I8 ? libjit_qconv_packed_amx_i8 : libjit_qconv_packed_amx_u8;
                wks[3] = ey == ELEM_I8 ? libjit_qconv_packed_amx_i8_work
                                       : libjit_qconv_packed_amx_u8_work;
            }
#endif
            fns[ey == ELEM_I8 ? 1 : 0] = NULL; /* the kernel of the result's kind */
            for (int f = 0; f < 4 && ok; f++) {
                if (!fns[f])
                    continue;
                any_alloc(&c[1], seed);
                for (int k = 1; k < 9; k++)
                    if (k != 4) {
                        memcpy(c[1].fast[k], c[0].ref[k], bytes_of(&c[1], k));
                        memcpy(c[1].ref[k], c[0].ref[k], bytes_of(&c[1], k));
                    }
                pack_weights(c[0].ref[4], M, C, cp, T, y[2] * y[3], c[1].fast[4]);
                memcpy(c[1].ref[4], c[1].fast[4], bytes_of(&c[1], 4));
                for (int64_t m = 0; m < M; m++) {
                    int64_t sum = 0;
                    for (int64_t k = 0; k < C * T; k++)
                        sum += ((const int8_t *)c[0].ref[4])[m * C * T + k];
                    qset_i64(&c[1], 9, m, elem_load_i64(ELEM_I32, c[0].ref[9], m) - (zx + shift) * sum);
                }
                char what[96];
                snprintf(what, sizeof what, "qconv_packed shape %d, x %s, y %s%s (kernel %d)", sh,
                         elem_name(ex), elem_name(ey), per_m ? ", per channel" : "", f);
                /* the kernel against the packed interpreter ... */
                ok = any_run(&c[1], what, fns[f], wks[f], ran);
                /* ... and against qlinear_conv's */
                for (int64_t i = 0; ok && i < desc_numel(&c[1].d, 0); i++)
                    if (!same_elem(ey, c[1].fast[0], c[0].ref[0], i)) {
                        fprintf(stderr, "FAIL %s: element %lld: %g, qlinear_conv's %g\n", what,
                                (long long)i, elem_load_f64(ey, c[1].fast[0], i),
                                elem_load_f64(ey, c[0].ref[0], i));
                        ok = false;
                    }
                /* ... and in the shares of 1 to 3 threads, whose calls hold several
                 * units (every row part of a band at once: its words filled once) */
                for (int t = 1; t <= 3 && ok; t++) {
                    memset(c[1].fast[0], 0xA5 + t, bytes_of(&c[1], 0));
                    run_shares(&c[1].d, fns[f], wks[f], c[1].fast, t);
                    for (int64_t i = 0; ok && i < desc_numel(&c[1].d, 0); i++)
                        if (!same_elem(ey, c[1].fast[0], c[0].ref[0], i)) {
                            fprintf(stderr, "FAIL %s at %d threads: element %lld: %g, qlinear_conv's %g\n",
                                    what, t, (long long)i, elem_load_f64(ey, c[1].fast[0], i),
                                    elem_load_f64(ey, c[0].ref[0], i));
                            ok = false;
                        }
                }
                any_free(&c[1]);
            }
            any_free(&c[0]);
            if (!ok)
                return false;
        }
    return true;
}

/* ---- matrix products ---- */

/* matmul_integer: 1 a, 2 b, 3 a_zp, 4 b_zp; qlinear_matmul: 1 a, 2 a_scale,
 * 3 a_zp, 4 b, 5 b_scale, 6 b_zp, 7 y_scale, 8 y_zp. */
static void matmul_integer_fix(AnyCase *c, uint64_t seed) {
    uint64_t s = seed * 31 + 9;
    for (int64_t i = 0; i < desc_numel(&c->d, 3); i++)
        qset_i64(c, 3, i, qoffset(&s, (ElemKind)lj_elem(c->d.w, 1)) / 2);
    for (int64_t i = 0; i < desc_numel(&c->d, 4); i++)
        qset_i64(c, 4, i, qoffset(&s, (ElemKind)lj_elem(c->d.w, 2)) / 2);
}

static void qlinear_matmul_fix(AnyCase *c, uint64_t seed) {
    uint64_t s = seed * 31 + 11;
    int64_t k = lj_dim(c->d.w, 4, 0);
    qset_f64(c, 2, 0, (double)rnd(&s, 1, 32) / 64);
    qset_i64(c, 3, 0, qoffset(&s, (ElemKind)lj_elem(c->d.w, 1)));
    for (int64_t i = 0; i < desc_numel(&c->d, 5); i++)
        qset_f64(c, 5, i, (double)rnd(&s, 1, 32) / 128);
    for (int64_t i = 0; i < desc_numel(&c->d, 6); i++)
        qset_i64(c, 6, i, qoffset(&s, (ElemKind)lj_elem(c->d.w, 4)) / 4);
    qset_f64(c, 7, 0, 0.25 * 0.125 * sqrt((double)k) * 30);
    qset_i64(c, 8, 0, qoffset(&s, (ElemKind)lj_elem(c->d.w, 8)));
}

static bool qmatmuls(uint64_t *s, int *ran) {
    /* (a dims, b dims): batched with broadcasting, 1-D on either side */
    static const int64_t shapes[][2][4] = {
        {{3, 5}, {5, 4}}, {{2, 3, 7}, {7, 6}}, {{2, 1, 3, 4}, {3, 4, 5}}, {{9}, {9, 3}}, {{2, 6}, {6}},
    };
    static const int ranks[][2] = {{2, 2}, {3, 2}, {4, 3}, {1, 2}, {2, 1}};
    static const int64_t ydims[][4] = {{3, 4}, {2, 3, 6}, {2, 3, 3, 5}, {3}, {2}};
    static const int yrank[] = {2, 3, 4, 1, 1};
    for (int sh = 0; sh < 5; sh++)
        for (int v = 0; v < 8; v++) {
            ElemKind ea = qkinds[v % 2], eb = qkinds[v / 2 % 2], ey = qkinds[v / 4 % 2];
            bool qlinear = v % 3 != 0;
            int ra = ranks[sh][0], rb = ranks[sh][1];
            int64_t one[1] = {1}, rows[1] = {ra == 1 ? 1 : shapes[sh][0][ra - 2]};
            int64_t cols[1] = {rb == 1 ? 1 : shapes[sh][1][rb - 1]};
            bool per_row = v % 2 && ra == 2 && !qlinear, per_col = v / 2 % 2 && rb == 2;
            AnyCase c = {.plain = true};
            desc_begin(&c.d, qlinear ? NK_QLINEAR_MATMUL : NK_MATMUL_INTEGER, 1);
            desc_operand_elem(&c.d, qlinear ? ey : ELEM_I32, yrank[sh], ydims[sh]);
            desc_operand_elem(&c.d, ea, ra, shapes[sh][0]);
            if (qlinear) {
                desc_operand_elem(&c.d, ELEM_F32, 0, one);
                desc_operand_elem(&c.d, ea, 0, one);
                desc_operand_elem(&c.d, eb, rb, shapes[sh][1]);
                desc_operand_elem(&c.d, ELEM_F32, per_col ? 1 : 0, per_col ? cols : one);
                desc_operand_elem(&c.d, eb, per_col ? 1 : 0, per_col ? cols : one);
                desc_operand_elem(&c.d, ELEM_F32, 0, one);
                desc_operand_elem(&c.d, ey, 0, one);
            } else {
                desc_operand_elem(&c.d, eb, rb, shapes[sh][1]);
                desc_operand_elem(&c.d, ea, per_row ? 1 : 0, per_row ? rows : one);
                desc_operand_elem(&c.d, eb, per_col ? 1 : 0, per_col ? cols : one);
            }
            KernelFn fn = qlinear ? libjit_qlinear_matmul_any : libjit_matmul_integer_any;
            WorkFn wk = qlinear ? libjit_qlinear_matmul_any_work : libjit_matmul_integer_any_work;
            char what[96];
            snprintf(what, sizeof what, "%s shape %d, %s x %s%s", qlinear ? "qlinear_matmul" : "matmul_integer",
                     sh, elem_name(ea), elem_name(eb), per_col ? ", per column" : "");
            if (!qrun(&c, what, qlinear ? qlinear_matmul_fix : matmul_integer_fix, &fn, &wk, 1, ran,
                      *s + (uint64_t)(sh * 8 + v)))
                return false;
        }
    return true;
}

/* qlookup: x i8/u8 through a 256-entry table of either kind (the random
 * fill makes every byte of both), in several work units for the large ones;
 * and through a table of a row per channel, [C, 256] (i >= 3), over x of
 * rank 3 and 4, where a work unit's chunk starts and ends inside a channel. */
static bool qlookups(uint64_t *s, int *ran) {
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            for (int i = 0; i < 6; i++) {
                int64_t dims[4] = {1 + (i == 5), rnd(s, 1, 7),
                                   i == 2 || i == 5 ? rnd(s, 40000, 80000) : rnd(s, 1, 300), 1};
                if (i == 4)
                    dims[3] = rnd(s, 2, 9);
                int64_t n256[2] = {256, 256};
                int rank = i >= 4 ? 4 : 3;
                if (i >= 3)
                    n256[0] = dims[1];
                AnyCase c = {0};
                desc_begin(&c.d, NK_QLOOKUP, 1);
                Type ty = qtype(qkinds[b], rank, dims, (double)rnd(s, 1, 64) / 512, qoffset(s, qkinds[b]));
                Type tx = qtype(qkinds[a], rank, dims, (double)rnd(s, 1, 64) / 512, qoffset(s, qkinds[a]));
                desc_operand_type(&c.d, &ty);
                desc_operand_type(&c.d, &tx);
                desc_operand_elem(&c.d, qkinds[b], i >= 3 ? 2 : 1, n256);
                KernelFn fn[] = {libjit_qlookup_any};
                WorkFn wk[] = {libjit_qlookup_any_work};
                char what[64];
                snprintf(what, sizeof what, "qlookup %s through %s%s", elem_name(qkinds[a]),
                         elem_name(qkinds[b]), i >= 3 ? " per channel" : "");
                if (!qrun(&c, what, NULL, fn, wk, 1, ran, *s + (uint64_t)i))
                    return false;
            }
    return true;
}

int any_qint_cases(uint64_t seed) {
    uint64_t s = seed;
    int ran = 0;
    bool ok = qelementwise(&s, &ran) && qclips(&s, &ran) && qquantizes(&s, &ran) &&
              qlookups(&s, &ran) && qpools(&s, &ran) &&
              qmax_pools_wide(&s, &ran) && qconvs(&s, &ran) && qconvs_packed(&s, &ran) && qmatmuls(&s, &ran);
    return ok ? ran : -1;
}

/* The kernels of bounded-dynamic sizes (k_dynamic.c), for every kind
 * they take: nonzero of inputs about half zeros, compress along a random
 * axis (negative too) by a condition up to the axis long, concat of one to
 * three inputs (empty ones too) along a random axis. The result's
 * run-time size (the count) is put in the descriptor, as libjit_dyn_prepare
 * does at run time; the interpreter's kernels lay the result out packed at
 * that size too. Exact: indices and copies. */
int any_dynamic_cases(uint64_t seed) {
    uint64_t s = seed;
    int ran = 0;
    bool ok = true;
    for (int e = 0; e < ELEM_COUNT && ok; e++) {
        for (int i = 0; i < 6 && ok && takes(NK_NONZERO, (ElemKind)e); i++) {
            int64_t x[8], y[2];
            int rank = random_shape(&s, x, 3, i == 0 ? 300 : 6);
            int64_t n = 1;
            for (int j = 0; j < rank; j++)
                n *= x[j];
            y[0] = rank ? rank : 1, y[1] = n;
            AnyCase c = {0};
            desc_begin(&c.d, NK_NONZERO, 1);
            desc_operand_elem(&c.d, ELEM_I64, 2, y);
            desc_operand_elem(&c.d, (ElemKind)e, rank, x);
            any_alloc(&c, s + (uint64_t)i);
            int64_t count = 0;
            for (int64_t j = 0; j < n; j++) {
                if (rnd(&s, 0, 1))
                    elem_store_i64((ElemKind)e, c.fast[1], j, 0);
                count += elem_load_f64((ElemKind)e, c.fast[1], j) != 0;
            }
            memcpy(c.ref[1], c.fast[1], bytes_of(&c, 1));
            c.d.w[DESC_OPS + 2 + 1] = count; /* y's dim 1 */
            char what[64];
            snprintf(what, sizeof what, "nonzero on %s", elem_name((ElemKind)e));
            ok = any_run(&c, what, libjit_nonzero_any, libjit_nonzero_any_work, &ran);
            any_free(&c);
        }
        for (int i = 0; i < 6 && ok && takes(NK_COMPRESS, (ElemKind)e); i++) {
            int64_t x[8], y[8], nc[1];
            int rank = random_shape(&s, x, 3, 6);
            if (rank == 0)
                x[rank++] = 5;
            int axis = (int)rnd(&s, 0, rank - 1);
            nc[0] = rnd(&s, 0, x[axis]);
            memcpy(y, x, sizeof x);
            AnyCase c = {0};
            desc_begin(&c.d, NK_COMPRESS, 1);
            desc_operand_elem(&c.d, (ElemKind)e, rank, y);
            desc_operand_elem(&c.d, (ElemKind)e, rank, x);
            desc_operand_elem(&c.d, ELEM_BOOL, 1, nc);
            desc_int(&c.d, AK_axis, rnd(&s, 0, 1) ? axis : axis - rank);
            any_alloc(&c, s + (uint64_t)i);
            int64_t kept = 0;
            for (int64_t j = 0; j < nc[0]; j++)
                kept += ((const uint8_t *)c.fast[2])[j] != 0;
            c.d.w[DESC_OPS + 2 + axis] = kept; /* y's dim along the axis */
            char what[64];
            snprintf(what, sizeof what, "compress on %s", elem_name((ElemKind)e));
            ok = any_run(&c, what, libjit_compress_any, libjit_compress_any_work, &ran);
            any_free(&c);
        }
        for (int i = 0; i < 6 && ok && takes(NK_CONCAT, (ElemKind)e); i++) {
            int64_t y[8], x[3][8];
            int rank = (int)rnd(&s, 1, 3), n = (int)rnd(&s, 1, 3);
            for (int j = 0; j < rank; j++)
                y[j] = rnd(&s, 1, 5);
            int axis = (int)rnd(&s, 0, rank - 1);
            y[axis] = 0;
            for (int k = 0; k < n; k++) {
                memcpy(x[k], y, sizeof y);
                x[k][axis] = rnd(&s, 0, 4);
                y[axis] += x[k][axis];
            }
            AnyCase c = {0};
            desc_begin(&c.d, NK_CONCAT, 1);
            desc_operand_elem(&c.d, (ElemKind)e, rank, y);
            for (int k = 0; k < n; k++)
                desc_operand_elem(&c.d, (ElemKind)e, rank, x[k]);
            desc_int(&c.d, AK_axis, rnd(&s, 0, 1) ? axis : axis - rank);
            any_alloc(&c, s + (uint64_t)i);
            char what[64];
            snprintf(what, sizeof what, "concat on %s", elem_name((ElemKind)e));
            ok = any_run(&c, what, libjit_concat_any, libjit_concat_any_work, &ran);
            any_free(&c);
        }
        for (int i = 0; i < 6 && ok && takes(NK_RANGE, (ElemKind)e); i++) {
            /* small integers, exact in every kind; unsigned ones count up */
            bool up = e == ELEM_U8 || e == ELEM_U16 || e == ELEM_U32 || e == ELEM_U64 || rnd(&s, 0, 1);
            int64_t count = rnd(&s, 0, 7), delta = rnd(&s, 1, 3) * (up ? 1 : -1);
            int64_t start = rnd(&s, up ? 0 : 20, up ? 5 : 25), y[1] = {count};
            int64_t v[3] = {start, start + count * delta, delta};
            AnyCase c = {0};
            desc_begin(&c.d, NK_RANGE, 1);
            desc_operand_elem(&c.d, (ElemKind)e, 1, y);
            for (int k = 0; k < 3; k++)
                desc_operand_elem(&c.d, (ElemKind)e, 0, NULL);
            any_alloc(&c, s + (uint64_t)i);
            for (int k = 0; k < 3; k++) {
                elem_store_i64((ElemKind)e, c.fast[1 + k], 0, v[k]);
                elem_store_i64((ElemKind)e, c.ref[1 + k], 0, v[k]);
            }
            char what[64];
            snprintf(what, sizeof what, "range on %s", elem_name((ElemKind)e));
            ok = any_run(&c, what, libjit_range_any, libjit_range_any_work, &ran);
            any_free(&c);
        }
        for (int i = 0; i < 6 && ok && takes(NK_SCAN_ROW, (ElemKind)e); i++) {
            /* a loop's scan output after row index k: acc's first k rows, then the row */
            int64_t r[8], y[8], acc[8];
            int rank = random_shape(&s, r, 2, 4);
            bool with_row = rnd(&s, 0, 1);
            int64_t rows = rnd(&s, with_row ? 1 : 0, 5), k = with_row ? rows - 1 : rows;
            y[0] = rows, acc[0] = k + rnd(&s, 0, 2);
            memcpy(y + 1, r, (size_t)rank * sizeof *r);
            memcpy(acc + 1, r, (size_t)rank * sizeof *r);
            AnyCase c = {0};
            desc_begin(&c.d, NK_SCAN_ROW, 1);
            desc_operand_elem(&c.d, (ElemKind)e, rank + 1, y);
            desc_operand_elem(&c.d, (ElemKind)e, rank + 1, acc);
            desc_operand_elem(&c.d, ELEM_I64, 0, NULL);
            if (with_row)
                desc_operand_elem(&c.d, (ElemKind)e, rank, r);
            any_alloc(&c, s + (uint64_t)i);
            elem_store_i64(ELEM_I64, c.fast[2], 0, k);
            elem_store_i64(ELEM_I64, c.ref[2], 0, k);
            char what[64];
            snprintf(what, sizeof what, "scan_row on %s", elem_name((ElemKind)e));
            ok = any_run(&c, what, libjit_scan_row_any, libjit_scan_row_any_work, &ran);
            any_free(&c);
        }
    }
    return ok ? ran : -1;
}

/* ---- at run-time sizes, as generated code runs them ----------------------- */

enum { RT_SLOT = DESC_MAX_RANK * (int)sizeof(int64_t) }; /* a shape slot's bytes */

/* An instruction over bounded-dynamic buffers: its descriptor at the
 * bounds, its slots (desc.h) and the two mutable areas the shape slots live
 * in, one per run. */
typedef struct RtCase {
    AnyCase c;
    int64_t slots[2 * CASE_OPS + 1];
    int64_t mut_fast[CASE_OPS * DESC_MAX_RANK], mut_ref[CASE_OPS * DESC_MAX_RANK];
} RtCase;

static void rt_begin(RtCase *r) {
    for (int k = 0; k < CASE_OPS; k++)
        r->slots[2 * k] = -1, r->slots[2 * k + 1] = 0;
}

/* Operand k bounded-dynamic along the axes of mask `dyn`, at run-time dims
 * `dims` (a result's: overwritten by the run); dims holds a whole slot,
 * DESC_MAX_RANK values. */
static void rt_slot(RtCase *r, int k, uint8_t dyn, const int64_t *dims) {
    r->slots[2 * k] = k * RT_SLOT;
    r->slots[2 * k + 1] = dyn;
    memcpy(r->mut_fast + k * DESC_MAX_RANK, dims, RT_SLOT);
    memcpy(r->mut_ref + k * DESC_MAX_RANK, dims, RT_SLOT);
}

/* libjit_dyn_prepare by `rule`, then the kernel on the run-time descriptor
 * it made (generated code's path), against libjit_dynamic (the
 * interpreter's kernel at the run-time sizes): both refuse the sizes or
 * neither, and then the results' run-time dims and their elements, packed
 * at those dims, are the same. */
static bool rt_run(RtCase *r, int64_t rule, const char *what, KernelFn fn, WorkFn work,
                   int *ran, int *refused) {
    AnyCase *c = &r->c;
    int nops = lj_nops(c->d.w), nres = lj_nres(c->d.w);
    r->slots[2 * nops] = rule;
    static Desc run; /* too big for the stack of a sanitizer build */
    int want = libjit_dynamic(c->d.w, c->ref, (unsigned char *)r->mut_ref, r->slots);
    int got = libjit_dyn_prepare(run.w, c->d.w, c->fast, (unsigned char *)r->mut_fast, r->slots);
    ++*ran;
    if (got != want) {
        fprintf(stderr, "%s: libjit %s the run-time sizes, the interpreter %s them\n", what,
                got ? "refuses" : "takes", want ? "refuses" : "takes");
        return false;
    }
    if (got) {
        ++*refused;
        return true;
    }
    run.nwords = c->d.nwords;
    run_kernel(&run, fn, work, c->fast);
    for (int k = 0; k < nres; k++) {
        const int64_t *gd = r->mut_fast + k * DESC_MAX_RANK, *wd = r->mut_ref + k * DESC_MAX_RANK;
        int64_t n = 1;
        for (int i = 0; i < lj_rank(c->d.w, k); i++) {
            int64_t dim = r->slots[2 * k] >= 0 ? wd[i] : lj_dim(c->d.w, k, i);
            if (r->slots[2 * k] >= 0 && gd[i] != wd[i]) {
                fprintf(stderr, "%s: result %d dim %d is %lld at run time, the interpreter's %lld\n",
                        what, k, i, (long long)gd[i], (long long)wd[i]);
                return false;
            }
            n *= dim;
        }
        ElemKind e = (ElemKind)lj_elem(c->d.w, k);
        for (int64_t i = 0; i < n; i++) {
            if (!same_elem(e, c->fast[k], c->ref[k], i)) {
                fprintf(stderr, "%s: result %d element %lld differs from the interpreter's\n", what,
                        k, (long long)i);
                return false;
            }
        }
    }
    return true;
}

/* Slice with run-time ends (operand 2, one per entry of axes) of an x
 * bounded-dynamic along some of those axes. On those axes starts and steps
 * as the importer makes them (clamped, so not negative; positive): the
 * interpreter checks the ends attribute's count at x's run-time size
 * against the bound, which a start counted from the end would move.
 * Elsewhere starts, steps and ends anywhere. Run-time ends from before the
 * axis to past it, now and then beyond the end the result's bound was
 * taken at (both must refuse). */
static bool rt_slice(NodeKind kind, ElemKind e, uint64_t *s, int i, int *ran, int *refused) {
    int64_t x[8], xr[8], y[8], st[8], en[8], sp[8], axes[8], ends[8];
    int rank = (int)rnd(s, 1, 3), na = 0;
    uint8_t xdyn = 0, ydyn = 0;
    for (int j = 0; j < rank; j++) {
        x[j] = xr[j] = rnd(s, 1, 6);
        bool run_time = rnd(s, 0, 1) || (j == rank - 1 && !na);
        st[j] = run_time ? rnd(s, 0, x[j]) : rnd(s, -x[j] - 1, x[j] + 1);
        sp[j] = run_time ? rnd(s, 1, 3) : rnd(s, 0, 1) ? rnd(s, 1, 3) : -rnd(s, 1, 2);
        en[j] = rnd(s, -x[j] - 1, x[j] + 1);
        if (run_time) {
            axes[na] = j;
            ends[na++] = rnd(s, -x[j] - 2, x[j] + 2);
            ydyn |= (uint8_t)(1u << j);
            en[j] = rnd(s, 0, 3) ? x[j] : rnd(s, 0, x[j]); /* the bound, from the ends' range */
            if (rnd(s, 0, 1)) {
                xdyn |= (uint8_t)(1u << j);
                xr[j] = rnd(s, 0, x[j]);
            }
        }
        int64_t b, step;
        slice_axis(x[j], true, st[j], true, en[j], sp[j], &b, &step, &y[j]);
    }
    RtCase r = {0};
    rt_begin(&r);
    desc_begin(&r.c.d, NK_SLICE, 1);
    desc_operand_elem(&r.c.d, e, rank, y);
    desc_operand_elem(&r.c.d, e, rank, x);
    desc_operand_elem(&r.c.d, ELEM_I64, 1, (int64_t[]){na});
    desc_ints(&r.c.d, AK_starts, rank, st);
    desc_ints(&r.c.d, AK_ends, rank, en);
    desc_ints(&r.c.d, AK_steps, rank, sp);
    desc_ints(&r.c.d, AK_axes, na, axes);
    any_alloc(&r.c, *s + (uint64_t)i);
    memcpy(r.c.fast[2], ends, (size_t)na * sizeof *ends);
    memcpy(r.c.ref[2], ends, (size_t)na * sizeof *ends);
    rt_slot(&r, 0, ydyn, y);
    if (xdyn)
        rt_slot(&r, 1, xdyn, xr);
    char what[64];
    snprintf(what, sizeof what, "slice on %s, run-time ends", elem_name(e));
    bool ok = rt_run(&r, LJ_DYN_SLICE, what, libjit_slice_any, libjit_slice_any_work, ran, refused);
    any_free(&r.c);
    return ok;
}

/* Expand to a run-time shape (operand 2) of an x bounded-dynamic along some
 * axes: each value of the shape 1, x's run-time size, or anything up to
 * past the bound (sizes that do not broadcast or fit: both must refuse). */
static bool rt_expand(NodeKind kind, ElemKind e, uint64_t *s, int i, int *ran, int *refused) {
    int64_t y[8], x[8], xr[8], shape[8];
    int rank = (int)rnd(s, 1, 3), rx = (int)rnd(s, 0, rank), ns = rnd(s, 0, 1) ? rank : (int)rnd(s, 0, rank);
    if (rx < rank && ns < rank)
        ns = rank;
    uint8_t xdyn = 0, ydyn = 0;
    for (int j = 0; j < rank; j++)
        y[j] = rnd(s, 1, 5);
    for (int j = 0; j < rx; j++) {
        int a = rank - rx + j;
        x[j] = xr[j] = rnd(s, 0, 2) ? y[a] : 1;
        if (x[j] > 1 && rnd(s, 0, 1)) {
            xdyn |= (uint8_t)(1u << j);
            xr[j] = rnd(s, 0, x[j]);
        }
    }
    for (int j = 0; j < ns; j++) {
        int a = rank - ns + j, k = a - (rank - rx);
        int64_t xd = k >= 0 ? xr[k] : 1, pick = rnd(s, 0, 5);
        shape[j] = pick < 2 ? 1 : pick < 4 ? xd : rnd(s, 0, y[a] + 1);
    }
    /* A static dim of the result is one whose size the shape gives exactly
     * (a constant of the model): the interpreter's kernel cannot tell it
     * from a bound. */
    for (int j = 0; j < rank; j++) {
        int k = j - (rank - ns), kx = j - (rank - rx);
        int64_t sd = k >= 0 ? shape[k] : 1, xd = kx >= 0 ? xr[kx] : 1;
        if ((sd == 1 ? xd : sd) != y[j] || rnd(s, 0, 3))
            ydyn |= (uint8_t)(1u << j);
    }
    RtCase r = {0};
    rt_begin(&r);
    desc_begin(&r.c.d, NK_EXPAND, 1);
    desc_operand_elem(&r.c.d, e, rank, y);
    desc_operand_elem(&r.c.d, e, rx, x);
    desc_operand_elem(&r.c.d, ELEM_I64, 1, (int64_t[]){ns});
    any_alloc(&r.c, *s + (uint64_t)i);
    memcpy(r.c.fast[2], shape, (size_t)ns * sizeof *shape);
    memcpy(r.c.ref[2], shape, (size_t)ns * sizeof *shape);
    rt_slot(&r, 0, ydyn, y);
    if (xdyn)
        rt_slot(&r, 1, xdyn, xr);
    char what[64];
    snprintf(what, sizeof what, "expand on %s, run-time shape", elem_name(e));
    bool ok = rt_run(&r, LJ_DYN_EXPAND, what, libjit_expand_any, libjit_expand_any_work, ran,
                     refused);
    any_free(&r.c);
    return ok;
}

/* Unique along a random axis (sorted or in order of occurrence) of an x
 * bounded-dynamic along some axes, its values from a few (and NaN and -0
 * among the floats; for strings, the empty one, a prefix, cases and bytes
 * past 0x7f, which order by their bytes) so that slices repeat. */
static bool rt_unique(NodeKind kind, ElemKind e, uint64_t *s, int i, int *ran, int *refused) {
    int64_t x[8], xr[8], len[DESC_MAX_RANK] = {0}; /* rt_slot reads a whole slot */
    int rank = (int)rnd(s, 1, 3), axis = (int)rnd(s, 0, rank - 1);
    uint8_t xdyn = 0;
    for (int j = 0; j < rank; j++) {
        x[j] = xr[j] = rnd(s, 1, j == axis ? 9 : 3);
        if (!rnd(s, 0, 2)) {
            xdyn |= (uint8_t)(1u << j);
            xr[j] = rnd(s, 0, x[j]);
        }
    }
    len[0] = x[axis];
    RtCase r = {0};
    rt_begin(&r);
    desc_begin(&r.c.d, NK_UNIQUE, 4);
    desc_operand_elem(&r.c.d, e, rank, x);
    for (int k = 0; k < 3; k++)
        desc_operand_elem(&r.c.d, ELEM_I64, 1, len);
    desc_operand_elem(&r.c.d, e, rank, x);
    desc_int(&r.c.d, AK_axis, rnd(s, 0, 1) ? axis : axis - rank);
    desc_int(&r.c.d, AK_sorted, i % 2);
    any_alloc(&r.c, *s + (uint64_t)i);
    static const double odd[] = {NAN, -0.0, 0.0};
    static const char *const words[] = {"", "a", "ab", "B", "é", "Łódź", "b"};
    for (int64_t j = 0; j < desc_numel(&r.c.d, 4); j++) {
        int64_t v = rnd(s, 0, 7);
        if (e == ELEM_STR)
            ((uint64_t *)r.c.fast[4])[j] = (uint64_t)(uintptr_t)words[v % 7];
        else if (elem_is_float(e) && v > 4)
            elem_store_f64(e, r.c.fast[4], j, odd[v - 5]);
        else
            elem_store_i64(e, r.c.fast[4], j, v % 3);
    }
    memcpy(r.c.ref[4], r.c.fast[4], bytes_of(&r.c, 4));
    rt_slot(&r, 0, (uint8_t)(xdyn | 1u << axis), x);
    rt_slot(&r, 1, 1, len);
    if (xdyn & (1u << axis))
        rt_slot(&r, 2, 1, len);
    rt_slot(&r, 3, 1, len);
    if (xdyn)
        rt_slot(&r, 4, xdyn, xr);
    char what[64];
    snprintf(what, sizeof what, "unique on %s, sorted=%d", elem_name(e), i % 2);
    bool ok = rt_run(&r, LJ_DYN_UNIQUE, what, libjit_unique_any, libjit_unique_any_work, ran,
                     refused);
    any_free(&r.c);
    return ok;
}

/* NonMaxSuppression (core/nms.h's selection in both) of up to 12 boxes in
 * up to 3 classes and 2 batches, corners in either order or centre and
 * size, random thresholds and limits (the bound is every box: the shape
 * rule's, which the interpreter checks). */
static bool rt_nms(uint64_t *s, int i, int *ran, int *refused) {
    int64_t nb = rnd(s, 1, 2), nc = rnd(s, 1, 3), n = rnd(s, 0, 12);
    int64_t y[DESC_MAX_RANK] = {nb * nc * n, 3}, bx[3] = {nb, n, 4}, sc[3] = {nb, nc, n};
    RtCase r = {.c.plain = true};
    rt_begin(&r);
    desc_begin(&r.c.d, NK_NMS, 1);
    desc_operand_elem(&r.c.d, ELEM_I64, 2, y);
    desc_operand_elem(&r.c.d, ELEM_F32, 3, bx);
    desc_operand_elem(&r.c.d, ELEM_F32, 3, sc);
    desc_operand_elem(&r.c.d, ELEM_I64, 0, NULL);
    desc_operand_elem(&r.c.d, ELEM_F32, 0, NULL);
    desc_operand_elem(&r.c.d, ELEM_F32, 0, NULL);
    desc_int(&r.c.d, AK_center_point_box, i % 2);
    any_alloc(&r.c, *s + (uint64_t)i);
    int64_t max_out = rnd(s, 0, n + 1);
    float iou = (float)rnd(s, 0, 7) / 10, thr = (float)rnd(s, -20, 20) / 10;
    for (int k = 0; k < 2; k++) {
        void **ops = k ? r.c.ref : r.c.fast;
        memcpy(ops[3], &max_out, sizeof max_out);
        memcpy(ops[4], &iou, sizeof iou);
        memcpy(ops[5], &thr, sizeof thr);
    }
    rt_slot(&r, 0, 1, y);
    char what[64];
    snprintf(what, sizeof what, "nms, center_point_box=%d", i % 2);
    bool ok = rt_run(&r, LJ_DYN_NMS, what, libjit_nms_any, libjit_nms_any_work, ran, refused);
    any_free(&r.c);
    return ok;
}

int any_run_time_cases(uint64_t seed) {
    uint64_t s = seed;
    int ran = 0, refused = 0;
    static const KindCases table[] = {{NK_SLICE, rt_slice, 12, false},
                                      {NK_EXPAND, rt_expand, 12, false},
                                      {NK_UNIQUE, rt_unique, 12, false}};
    bool ok = kind_cases(table, sizeof table / sizeof *table, &s, &ran, &refused);
    for (int i = 0; i < 40 && ok; i++)
        ok = rt_nms(&s, i, &ran, &refused);
    printf("at run-time sizes: %d of %d cases refused by both\n", refused, ran);
    return ok && refused < ran ? ran : -1;
}

/* gather_nd (batch_dims 0 and 1) for every kind: indices of the last axis
 * k <= the data's rank, in range, negative ones too (the interpreter
 * refuses others, and a refused case would not count). Exact: copies. */
int any_gather_nd_cases(uint64_t seed) {
    uint64_t s = seed;
    int ran = 0;
    bool ok = true;
    for (int e = 0; e < ELEM_COUNT && ok; e++) {
        for (int i = 0; i < 6 && ok && takes(NK_GATHER_ND, (ElemKind)e); i++) {
            int64_t x[8], ix[8], y[8];
            int b = i % 2, rx = (int)rnd(&s, 1 + b, 4), ri = (int)rnd(&s, 1 + b, 3);
            for (int j = 0; j < rx; j++)
                x[j] = rnd(&s, 1, 4);
            for (int j = 0; j < ri - 1; j++)
                ix[j] = j < b ? x[j] : rnd(&s, 1, 3);
            int64_t last = rnd(&s, 1, rx - b);
            ix[ri - 1] = last;
            int ry = 0;
            for (int j = 0; j < ri - 1; j++)
                y[ry++] = ix[j];
            for (int j = b + (int)last; j < rx; j++)
                y[ry++] = x[j];
            AnyCase c = {0};
            desc_begin(&c.d, NK_GATHER_ND, 1);
            desc_operand_elem(&c.d, (ElemKind)e, ry, y);
            desc_operand_elem(&c.d, (ElemKind)e, rx, x);
            desc_operand_elem(&c.d, ELEM_I64, ri, ix);
            desc_int(&c.d, AK_batch_dims, b);
            any_alloc(&c, s + (uint64_t)i);
            int64_t n = desc_numel(&c.d, 2);
            for (int64_t j = 0; j < n; j++) {
                int64_t dim = x[b + j % last], v = rnd(&s, -dim, dim - 1);
                ((int64_t *)c.fast[2])[j] = ((int64_t *)c.ref[2])[j] = v;
            }
            char what[64];
            snprintf(what, sizeof what, "gather_nd on %s", elem_name((ElemKind)e));
            int before = ran;
            ok = any_run(&c, what, libjit_gather_nd_any, libjit_gather_nd_any_work, &ran);
            if (ok && ran == before) {
                fprintf(stderr, "FAIL %s: the interpreter refused the case\n", what);
                ok = false;
            }
            any_free(&c);
        }
    }
    return ok ? ran : -1;
}

/* top_k along a random axis, k from 0 to the whole axis, largest or
 * smallest (ties and NaN included: the order must be the interpreter's
 * exactly), and resize in every mode, coordinate mode and nearest rounding,
 * with antialias, exclude_outside, given or derived scales and a crop
 * region, grid_sample in every mode and padding, lrn, det, max_unpool,
 * einsum (products, diagonals, sums, transposes, an ellipsis),
 * mean_variance_norm, roi_align and tfidf_vectorizer.
 * The float ones sum the same products in the same order as the
 * interpreter, so they are held to the same exactness. */
int any_select_cases(uint64_t seed) {
    static const int ctms[] = {CTM_HALF_PIXEL, CTM_HALF_PIXEL_SYMMETRIC, CTM_PYTORCH_HALF_PIXEL,
                               CTM_ALIGN_CORNERS, CTM_ASYMMETRIC, CTM_TF_HALF_PIXEL_FOR_NN,
                               CTM_TF_CROP_AND_RESIZE};
    static const int modes[] = {MODE_NEAREST, MODE_LINEAR, MODE_CUBIC};
    uint64_t s = seed;
    int ran = 0;
    bool ok = true;
    for (int e = 0; e < ELEM_COUNT && ok; e++) {
        for (int i = 0; i < 6 && ok && takes(NK_TOP_K, (ElemKind)e); i++) {
            int64_t x[8], y[8];
            int rank = random_shape(&s, x, 3, i == 0 ? 200 : 9);
            if (rank == 0)
                x[rank++] = 7;
            int64_t axis = rnd(&s, 0, rank - 1);
            memcpy(y, x, sizeof x);
            y[axis] = rnd(&s, 0, x[axis]);
            AnyCase c = {.plain = i % 3 == 2};
            desc_begin(&c.d, NK_TOP_K, 2);
            desc_operand_elem(&c.d, (ElemKind)e, rank, y);
            desc_operand_elem(&c.d, ELEM_I64, rank, y);
            desc_operand_elem(&c.d, (ElemKind)e, rank, x);
            desc_int(&c.d, AK_axis, rnd(&s, 0, 1) ? axis : axis - rank);
            desc_int(&c.d, AK_largest, i % 2);
            desc_int(&c.d, AK_sorted, 1);
            any_alloc(&c, s + (uint64_t)i);
            char what[64];
            snprintf(what, sizeof what, "top_k on %s", elem_name((ElemKind)e));
            ok = any_run(&c, what, libjit_top_k_any, libjit_top_k_any_work, &ran);
            any_free(&c);
        }
        for (int i = 0; i < 14 && ok && takes(NK_RESIZE, (ElemKind)e); i++) {
            int64_t x[8], y[8];
            int rank = (int)rnd(&s, 1, 4);
            float scales[8], roi[16];
            for (int j = 0; j < rank; j++) {
                x[j] = rnd(&s, 1, 6);
                y[j] = rnd(&s, 0, 3) ? rnd(&s, 1, 11) : x[j];
                scales[j] = rnd(&s, 0, 1) ? (float)y[j] / (float)x[j] : (float)rnd(&s, 3, 30) / 10;
                roi[j] = (float)rnd(&s, -2, 5) / 10;
                roi[rank + j] = (float)rnd(&s, 6, 12) / 10;
            }
            int mode = modes[i % 3], ctm = ctms[rnd(&s, 0, 6)];
            AnyCase c = {.plain = i % 2 == 0};
            desc_begin(&c.d, NK_RESIZE, 1);
            desc_operand_elem(&c.d, (ElemKind)e, rank, y);
            desc_operand_elem(&c.d, (ElemKind)e, rank, x);
            desc_int(&c.d, AK_mode, mode);
            desc_int(&c.d, AK_coordinate_transformation_mode, ctm);
            desc_int(&c.d, AK_nearest_mode, rnd(&s, NEAREST_ROUND_PREFER_FLOOR, NEAREST_CEIL));
            if (rnd(&s, 0, 1))
                desc_floats(&c.d, AK_scales, rank, scales);
            if (ctm == CTM_TF_CROP_AND_RESIZE) {
                desc_floats(&c.d, AK_roi, 2 * rank, roi);
                desc_float(&c.d, AK_extrapolation_value, -3.5f);
            }
            if (mode == MODE_CUBIC && i % 4 == 0)
                desc_float(&c.d, AK_cubic_coeff_a, -0.5f);
            if (i % 5 == 1)
                desc_int(&c.d, AK_exclude_outside, 1);
            if (mode != MODE_NEAREST && i % 4 == 3)
                desc_int(&c.d, AK_antialias, 1);
            any_alloc(&c, s + (uint64_t)i);
            char what[96];
            snprintf(what, sizeof what, "resize mode %d ctm %d on %s", mode, ctm, elem_name((ElemKind)e));
            ok = any_run(&c, what, libjit_resize_any, libjit_resize_any_work, &ran);
            any_free(&c);
        }
        for (int i = 0; i < 8 && ok && elem_is_float((ElemKind)e); i++) {
            int64_t x[5] = {rnd(&s, 1, 2), rnd(&s, 1, 7), rnd(&s, 1, 4), rnd(&s, 1, 4), 2};
            int rank = (int)rnd(&s, 2, 5);
            AnyCase c = {.plain = i % 2 == 0};
            desc_begin(&c.d, NK_LRN, 1);
            desc_operand_elem(&c.d, (ElemKind)e, rank, x);
            desc_operand_elem(&c.d, (ElemKind)e, rank, x);
            desc_int(&c.d, AK_size, rnd(&s, 1, 5));
            if (i % 3 == 1) {
                desc_float(&c.d, AK_alpha, 0.02f);
                desc_float(&c.d, AK_beta, 0.6f);
                desc_float(&c.d, AK_bias, 2.0f);
            }
            any_alloc(&c, s + (uint64_t)i);
            char what[64];
            snprintf(what, sizeof what, "lrn on %s", elem_name((ElemKind)e));
            ok = any_run(&c, what, libjit_lrn_any, libjit_lrn_any_work, &ran);
            any_free(&c);
        }
        for (int i = 0; i < 8 && ok && elem_is_float((ElemKind)e); i++) {
            int64_t x[4] = {rnd(&s, 1, 3), rnd(&s, 1, 2), 0, 0};
            int rank = (int)rnd(&s, 2, 4);
            x[rank - 1] = x[rank - 2] = rnd(&s, 1, 6);
            AnyCase c = {.plain = i % 2 == 0};
            desc_begin(&c.d, NK_DET, 1);
            desc_operand_elem(&c.d, (ElemKind)e, rank - 2, x);
            desc_operand_elem(&c.d, (ElemKind)e, rank, x);
            any_alloc(&c, s + (uint64_t)i);
            char what[64];
            snprintf(what, sizeof what, "det on %s", elem_name((ElemKind)e));
            ok = any_run(&c, what, libjit_det_any, libjit_det_any_work, &ran);
            any_free(&c);
        }
        for (int i = 0; i < 6 && ok && takes(NK_MAX_UNPOOL, (ElemKind)e); i++) {
            int64_t k[2] = {rnd(&s, 1, 3), rnd(&s, 1, 3)}, st[2] = {rnd(&s, 1, 3), rnd(&s, 1, 3)};
            int64_t x[4] = {rnd(&s, 1, 2), rnd(&s, 1, 3), rnd(&s, 1, 4), rnd(&s, 1, 4)}, y[4], total = 1;
            for (int j = 0; j < 4; j++) {
                y[j] = j < 2 ? x[j] : (x[j] - 1) * st[j - 2] + k[j - 2];
                total *= y[j];
                y[j] += j >= 2 && i % 3 == 1; /* a declared size larger than the unpooled one */
            }
            AnyCase c = {0};
            desc_begin(&c.d, NK_MAX_UNPOOL, 1);
            desc_operand_elem(&c.d, (ElemKind)e, 4, y);
            desc_operand_elem(&c.d, (ElemKind)e, 4, x);
            desc_operand_elem(&c.d, ELEM_I64, 4, x);
            desc_ints(&c.d, AK_kernel, 2, k);
            desc_ints(&c.d, AK_strides, 2, st);
            any_alloc(&c, s + (uint64_t)i);
            for (int64_t j = 0; j < desc_numel(&c.d, 2); j++) /* in range, some repeated */
                ((int64_t *)c.fast[2])[j] = ((int64_t *)c.ref[2])[j] = rnd(&s, 0, total - 1);
            char what[64];
            snprintf(what, sizeof what, "max_unpool on %s", elem_name((ElemKind)e));
            ok = any_run(&c, what, libjit_max_unpool_any, libjit_max_unpool_any_work, &ran);
            any_free(&c);
        }
        /* einsum: each operand's and the output's axes named by letters,
         * each letter a random size (x for an ellipsis' axis). */
        static const struct {
            const char *eq, *in[3], *out;
        } eqs[] = {
            {"ij,jk->ik", {"ij", "jk"}, "ik"},         {"bij,bkj->bik", {"bij", "bkj"}, "bik"},
            {"ii->i", {"ii"}, "i"},                    {"ii", {"ii"}, ""},
            {"bii->bi", {"bii"}, "bi"},                {"ij->", {"ij"}, ""},
            {"ij->ji", {"ij"}, "ji"},                  {"i,i", {"i", "i"}, ""},
            {"i,j->ij", {"i", "j"}, "ij"},             {"ij,jk,kl->il", {"ij", "jk", "kl"}, "il"},
            {"...ij,...jk->...ik", {"xij", "xjk"}, "xik"}, {"ij,ij->i", {"ij", "ij"}, "i"},
        };
        for (size_t i = 0; i < sizeof eqs / sizeof *eqs && ok && takes(NK_EINSUM, (ElemKind)e); i++) {
            int64_t size[26];
            for (int j = 0; j < 26; j++)
                size[j] = rnd(&s, 1, 5);
            int nin = 0;
            while (nin < 3 && eqs[i].in[nin])
                nin++;
            AnyCase c = {.plain = i % 2 == 0};
            desc_begin(&c.d, NK_EINSUM, 1);
            for (int k = -1; k < nin; k++) {
                const char *ax = k < 0 ? eqs[i].out : eqs[i].in[k];
                int64_t dims[8];
                int rank = (int)strlen(ax);
                for (int j = 0; j < rank; j++)
                    dims[j] = size[ax[j] - 'a'];
                desc_operand_elem(&c.d, (ElemKind)e, rank, dims);
            }
            desc_str(&c.d, AK_equation, eqs[i].eq);
            any_alloc(&c, s + (uint64_t)i);
            char what[96];
            snprintf(what, sizeof what, "einsum %s on %s", eqs[i].eq, elem_name((ElemKind)e));
            ok = any_run(&c, what, libjit_einsum_any, libjit_einsum_any_work, &ran);
            any_free(&c);
        }
        for (int i = 0; i < 8 && ok && takes(NK_MEAN_VARIANCE_NORM, (ElemKind)e); i++) {
            int64_t x[8], axes[8];
            int rank = (int)rnd(&s, 1, 4), na = 0;
            for (int j = 0; j < rank; j++) {
                x[j] = rnd(&s, 1, 6);
                if (rnd(&s, 0, 1))
                    axes[na++] = rnd(&s, 0, 1) ? j : j - rank;
            }
            AnyCase c = {.plain = i % 2 == 0};
            desc_begin(&c.d, NK_MEAN_VARIANCE_NORM, 1);
            desc_operand_elem(&c.d, (ElemKind)e, rank, x);
            desc_operand_elem(&c.d, (ElemKind)e, rank, x);
            desc_ints(&c.d, AK_axes, na, axes);
            any_alloc(&c, s + (uint64_t)i);
            char what[64];
            snprintf(what, sizeof what, "mean_variance_norm on %s", elem_name((ElemKind)e));
            ok = any_run(&c, what, libjit_mean_variance_norm_any, libjit_mean_variance_norm_any_work,
                         &ran);
            any_free(&c);
        }
        for (int i = 0; i < 8 && ok && takes(NK_ROI_ALIGN, (ElemKind)e); i++) {
            int64_t x[4] = {rnd(&s, 1, 3), rnd(&s, 1, 3), rnd(&s, 1, 9), rnd(&s, 1, 9)};
            int64_t nr = rnd(&s, 1, 4), y[4] = {nr, x[1], rnd(&s, 1, 4), rnd(&s, 1, 4)};
            int64_t rois[2] = {nr, 4}, bi[1] = {nr};
            AnyCase c = {.plain = i % 2 == 0};
            desc_begin(&c.d, NK_ROI_ALIGN, 1);
            desc_operand_elem(&c.d, (ElemKind)e, 4, y);
            desc_operand_elem(&c.d, (ElemKind)e, 4, x);
            desc_operand_elem(&c.d, (ElemKind)e, 2, rois);
            desc_operand_elem(&c.d, ELEM_I64, 1, bi);
            desc_int(&c.d, AK_mode, i % 2 ? MODE_MAX : MODE_AVG);
            desc_int(&c.d, AK_coordinate_transformation_mode,
                     i % 3 ? CTM_HALF_PIXEL : CTM_OUTPUT_HALF_PIXEL);
            desc_int(&c.d, AK_sampling_ratio, rnd(&s, 0, 2));
            desc_float(&c.d, AK_spatial_scale, i % 4 == 3 ? 0.5f : 1.0f);
            any_alloc(&c, s + (uint64_t)i);
            /* Boxes [x1, y1, x2, y2] over and past the plane; batch
             * indices in range (the interpreter refuses the others). */
            for (int64_t r = 0; r < nr; r++) {
                double b[4] = {(double)rnd(&s, -20, 60) / 10, (double)rnd(&s, -20, 60) / 10, 0, 0};
                b[2] = b[0] + (double)rnd(&s, 0, 80) / 10;
                b[3] = b[1] + (double)rnd(&s, 0, 80) / 10;
                for (int k = 0; k < 4; k++) {
                    elem_store_f64((ElemKind)e, c.fast[2], r * 4 + k, b[k]);
                    elem_store_f64((ElemKind)e, c.ref[2], r * 4 + k, b[k]);
                }
                ((int64_t *)c.fast[3])[r] = ((int64_t *)c.ref[3])[r] = rnd(&s, 0, x[0] - 1);
            }
            char what[64];
            snprintf(what, sizeof what, "roi_align on %s", elem_name((ElemKind)e));
            ok = any_run(&c, what, libjit_roi_align_any, libjit_roi_align_any_work, &ran);
            any_free(&c);
        }
        /* tfidf_vectorizer: tokens of a small alphabet, so that pool
         * n-grams match, with and without skips, in each mode. */
        for (int i = 0; i < 9 && ok && (e == ELEM_I32 || e == ELEM_I64); i++) {
            int64_t lo = rnd(&s, 1, 2), hi = lo + rnd(&s, 0, 1), nlev = hi + rnd(&s, 0, 1);
            int64_t levels[4], pool[64], npool = 0, nidx = 0;
            for (int64_t n = 1; n <= nlev; n++) {
                levels[n - 1] = npool;
                for (int64_t g = rnd(&s, 0, 3); g > 0; g--, nidx++)
                    for (int64_t j = 0; j < n; j++)
                        pool[npool++] = rnd(&s, 0, 4);
            }
            int64_t rows = rnd(&s, 0, 1) ? rnd(&s, 1, 3) : 0, len = rnd(&s, 1, 20);
            int64_t x[2] = {rows, len}, width = nidx + rnd(&s, 0, 2), pn[1] = {npool},
                    in[1] = {nidx}, wn[1] = {width}, y[2] = {rows, width};
            AnyCase c = {.plain = i % 2 == 0};
            desc_begin(&c.d, NK_TFIDF_VECTORIZER, 1);
            desc_operand_elem(&c.d, ELEM_F32, rows ? 2 : 1, rows ? y : y + 1);
            desc_operand_elem(&c.d, (ElemKind)e, rows ? 2 : 1, rows ? x : x + 1);
            desc_operand_elem(&c.d, ELEM_I64, 1, pn);
            desc_operand_elem(&c.d, ELEM_I64, 1, in);
            desc_operand_elem(&c.d, ELEM_F32, 1, wn);
            desc_int(&c.d, AK_mode, MODE_TF + i % 3);
            desc_int(&c.d, AK_min_gram_length, lo);
            desc_int(&c.d, AK_max_gram_length, hi);
            desc_int(&c.d, AK_max_skip_count, rnd(&s, 0, 3));
            desc_ints(&c.d, AK_ngram_counts, (int)nlev, levels);
            any_alloc(&c, s + (uint64_t)i);
            for (int64_t j = 0; j < desc_numel(&c.d, 1); j++) {
                int64_t v = rnd(&s, 0, 4);
                elem_store_f64((ElemKind)e, c.fast[1], j, (double)v);
                elem_store_f64((ElemKind)e, c.ref[1], j, (double)v);
            }
            for (int64_t j = 0; j < npool; j++)
                ((int64_t *)c.fast[2])[j] = ((int64_t *)c.ref[2])[j] = pool[j];
            for (int64_t j = 0; j < nidx; j++) /* columns out of order, some past the pool's */
                ((int64_t *)c.fast[3])[j] = ((int64_t *)c.ref[3])[j] = (j * 5 + 2) % width;
            char what[64];
            snprintf(what, sizeof what, "tfidf_vectorizer on %s", elem_name((ElemKind)e));
            ok = any_run(&c, what, libjit_tfidf_vectorizer_any, libjit_tfidf_vectorizer_any_work,
                         &ran);
            any_free(&c);
        }
        static const int gmodes[] = {MODE_NEAREST, MODE_BILINEAR, MODE_BICUBIC};
        static const int gpads[] = {PADDING_ZEROS, PADDING_BORDER, PADDING_REFLECTION};
        for (int i = 0; i < 18 && ok && elem_is_float((ElemKind)e); i++) {
            int64_t x[4] = {rnd(&s, 1, 2), rnd(&s, 1, 3), rnd(&s, 1, 6), rnd(&s, 1, 6)};
            int64_t y[4] = {x[0], x[1], rnd(&s, 1, 5), rnd(&s, 1, 5)}, grid[4] = {x[0], y[2], y[3], 2};
            AnyCase c = {.plain = true}; /* grid positions in [-4, 4]: all of each padding */
            desc_begin(&c.d, NK_GRID_SAMPLE, 1);
            desc_operand_elem(&c.d, (ElemKind)e, 4, y);
            desc_operand_elem(&c.d, (ElemKind)e, 4, x);
            desc_operand_elem(&c.d, (ElemKind)e, 4, grid);
            desc_int(&c.d, AK_mode, gmodes[i % 3]);
            desc_int(&c.d, AK_padding_mode, gpads[(i / 3) % 3]);
            desc_int(&c.d, AK_align_corners, i >= 9);
            any_alloc(&c, s + (uint64_t)i);
            char what[96];
            snprintf(what, sizeof what, "grid_sample case %d on %s", i, elem_name((ElemKind)e));
            ok = any_run(&c, what, libjit_grid_sample_any, libjit_grid_sample_any_work, &ran);
            any_free(&c);
        }
    }
    return ok ? ran : -1;
}

/* ---- every-kind work split over threads --------------------------------- */

/* Units [0, work) as runtime.c hands them to T threads: equal ranges (the
 * last shorter), each cut into LJ_PIECES pieces (lj_piece_bounds), a call
 * each, last piece first, one scratch throughout and one shared buffer
 * reset once, as libjit_parallel does per call: what a piece finds in the
 * scratch from an earlier piece of the same call (lj_scratch_built) must
 * be what it would have built. */
static void run_shares(const Desc *d, KernelFn fn, WorkFn work, void *const *ops, int threads) {
    int64_t n = work(d->w);
    LjShared shared = {0};
    LjScratch sc = {.shared = &shared};
    lj_shared_reset(&shared);
    for (int k = threads * LJ_PIECES - 1; k >= 0; k--) {
        int64_t lo, hi;
        lj_piece_bounds(n, threads, k, &lo, &hi);
        if (lo < hi)
            fn(d->w, ops, lo, hi, &sc);
    }
    lj_scratch_release(&sc);
    lj_shared_free(&shared);
}

/* The kernel at 1, 2 and 3 threads against the interpreter, exact, on a
 * case large enough for more than 3 units (else it proves nothing about
 * the split); inputs restored before each run (scatter may work in place
 * on its own output only, so the inputs do not change). */
static bool thread_run(AnyCase *c, const char *what, KernelFn fn, WorkFn work, int *ran) {
    if (work(c->d.w) <= 3) {
        fprintf(stderr, "FAIL %s: %lld units, too few to split\n", what, (long long)work(c->d.w));
        return false;
    }
    if (libjit_generic(c->d.w, c->ref)) {
        fprintf(stderr, "FAIL %s: the interpreter refused the case\n", what);
        return false;
    }
    for (int t = 1; t <= 3; t++) {
        for (int k = 0; k < lj_nres(c->d.w); k++)
            memset(c->fast[k], 0xA5 + t, bytes_of(c, k));
        run_shares(&c->d, fn, work, c->fast, t);
        ++*ran;
        if (!same_outputs(c, what, t))
            return false;
    }
    return true;
}

/* scatter_elements split by lines (frcnn's box_roi_pool scatters
 * 150x256x7x7 floats along axis 0), every reduction, duplicate and
 * negative indices; along a middle axis too. */
static bool thread_scatter(uint64_t *s, ElemKind e, int i, int *ran) {
    int64_t x[4] = {6, 256, 7, 7}, idx[4] = {6, 256, 7, 7};
    int rank = 4, axis = 0;
    if (i % 2) { /* [3, len, 4000] along axis 1 */
        rank = 3, axis = 1;
        x[0] = idx[0] = 3, x[1] = 5, idx[1] = 4, x[2] = idx[2] = 4000;
    }
    AnyCase c = {0};
    desc_begin(&c.d, NK_SCATTER_ELEMENTS, 1);
    desc_operand_elem(&c.d, e, rank, x);
    desc_operand_elem(&c.d, e, rank, x);
    desc_operand_elem(&c.d, i % 3 ? ELEM_I64 : ELEM_I32, rank, idx);
    desc_operand_elem(&c.d, e, rank, idx);
    desc_int(&c.d, AK_axis, i % 4 == 3 ? axis - rank : axis);
    static const int64_t reds[] = {RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN};
    if (e != ELEM_BOOL)
        desc_int(&c.d, AK_reduction, reds[i % 5]);
    c.plain = true;
    any_alloc(&c, *s + (uint64_t)i);
    ElemKind ei = (ElemKind)lj_elem(c.d.w, 2);
    for (int64_t j = 0; j < desc_numel(&c.d, 2); j++)
        elem_store_i64(ei, c.fast[2], j, rnd(s, -x[axis], x[axis] - 1));
    memcpy(c.ref[2], c.fast[2], bytes_of(&c, 2));
    char what[64];
    snprintf(what, sizeof what, "scatter_elements on %s, case %d", elem_name(e), i);
    bool ok = thread_run(&c, what, libjit_scatter_elements_any, libjit_scatter_elements_any_work, ran);
    any_free(&c);
    return ok;
}

/* The f32 kernels' hand-offs to the kernel for every kind, now over its
 * units: pow with an integer exponent, a reduction of three blocks of
 * axes (red_shape's two do not cover it), gather by i16 indices. */
static bool thread_handoffs(uint64_t *s, int i, int *ran) {
    AnyCase c = {.plain = true};
    char what[64];
    bool ok;
    if (i == 0) {
        int64_t y[2] = {300, 400}, b[1] = {400};
        desc_begin(&c.d, NK_POW, 1);
        desc_operand_elem(&c.d, ELEM_F32, 2, y);
        desc_operand_elem(&c.d, ELEM_F32, 2, y);
        desc_operand_elem(&c.d, ELEM_I64, 1, b);
        any_alloc(&c, *s);
        for (int64_t j = 0; j < 400; j++)
            ((int64_t *)c.fast[2])[j] = ((int64_t *)c.ref[2])[j] = rnd(s, -3, 3);
        snprintf(what, sizeof what, "pow_f32 of an i64 exponent");
        ok = thread_run(&c, what, libjit_pow_f32, libjit_pow_f32_work, ran);
    } else if (i == 1) {
        int64_t x[5] = {8, 40, 4, 40, 8}, y[2] = {40, 40}, axes[3] = {0, 2, 4};
        desc_begin(&c.d, NK_REDUCE_SUM, 1);
        desc_operand_elem(&c.d, ELEM_F32, 2, y);
        desc_operand_elem(&c.d, ELEM_F32, 5, x);
        desc_ints(&c.d, AK_axes, 3, axes);
        desc_int(&c.d, AK_keepdims, 0);
        any_alloc(&c, *s);
        snprintf(what, sizeof what, "reduce_sum_f32 over three blocks of axes");
        ok = thread_run(&c, what, libjit_reduce_sum_f32, libjit_reduce_sum_f32_work, ran);
    } else {
        int64_t x[2] = {50, 300}, ix[2] = {40, 30}, y[3] = {40, 30, 300};
        desc_begin(&c.d, NK_GATHER, 1);
        desc_operand_elem(&c.d, ELEM_F32, 3, y);
        desc_operand_elem(&c.d, ELEM_F32, 2, x);
        desc_operand_elem(&c.d, ELEM_I16, 2, ix);
        desc_int(&c.d, AK_axis, 0);
        any_alloc(&c, *s);
        for (int64_t j = 0; j < 1200; j++)
            ((int16_t *)c.fast[2])[j] = ((int16_t *)c.ref[2])[j] = (int16_t)rnd(s, -50, 49);
        snprintf(what, sizeof what, "gather_f32 by i16 indices");
        ok = thread_run(&c, what, libjit_gather_f32, libjit_gather_f32_work, ran);
    }
    any_free(&c);
    return ok;
}

/* Kernels for every kind whose work real models make large, split over
 * threads: the same bytes as the interpreter at 1, 2 and 3 threads. */
int any_threads_cases(uint64_t seed) {
    uint64_t s = seed;
    int ran = 0;
    bool ok = true;
    for (int e = 0; e < ELEM_COUNT && ok; e++)
        for (int i = 0; i < 2 && ok && takes(NK_SCATTER_ELEMENTS, (ElemKind)e); i++)
            ok = thread_scatter(&s, (ElemKind)e, i + 2 * e, &ran);
    for (int i = 0; i < 3 && ok; i++)
        ok = thread_handoffs(&s, i, &ran);
    return ok ? ran : -1;
}

/* ---- strings ------------------------------------------------------------ */

/* Strings the cases draw from: numbers in every spelling ONNX's Cast reads,
 * words in several cases (ASCII, Latin-1, Latin Extended-A, Greek,
 * Cyrillic), the empty string. */
static const char *const string_pool[] = {
    "1.5",   "-0",     "INF",   "+INF",   "-inf",   "NaN",     "1e5",    " 42 ", "-7",
    "3000000000", "0.1", "True", "false", "1e-45", "3.4e39", "monday", "Monday", "MONDAY",
    "Ünïcödé", "ÜNÏCÖDÉ", "Łódź", "ŁÓDŹ", "Σίσυφος", "ΣΊΣΥΦΟΣ", "Москва", "МОСКВА", "",
};
enum { STRING_POOL = sizeof string_pool / sizeof *string_pool, STRING_NUMBERS = 15 };

/* Random strings of the pool (the first `numbers` of it when > 0). */
static void fill_strings(void *p, int64_t n, uint64_t *s, int numbers) {
    for (int64_t i = 0; i < n; i++)
        ((uint64_t *)p)[i] =
            (uint64_t)(uintptr_t)string_pool[rnd(s, 0, (numbers ? numbers : STRING_POOL) - 1)];
}

/* Runs the kernel in scrambled units with one runtime scratch (whose string
 * arena holds its strings until the comparison) and the interpreter with an
 * arena; compares strings by their bytes, other kinds as any_run does. */
static bool string_run(AnyCase *c, const char *what, KernelFn fn, WorkFn work, int *ran) {
    Arena *strs = arena_new();
    if (libjit_generic_strs(c->d.w, c->ref, strs)) {
        fprintf(stderr, "FAIL %s: the interpreter refused the case\n", what);
        arena_destroy(strs);
        return false;
    }
    LjScratch sc = {0};
    int64_t n = work ? work(c->d.w) : 1;
    for (int64_t i = 0; i < n; i++) {
        int64_t u = i % 2 ? n - 1 - i / 2 : i / 2;
        fn(c->d.w, c->fast, u, u + 1, &sc);
    }
    ++*ran;
    bool ok = true;
    for (int k = 0; k < lj_nres(c->d.w) && ok; k++) {
        ElemKind e = (ElemKind)lj_elem(c->d.w, k);
        for (int64_t i = 0; i < desc_numel(&c->d, k) && ok; i++) {
            if (e != ELEM_STR) {
                ok = same_elem(e, c->fast[k], c->ref[k], i);
                if (!ok)
                    fprintf(stderr, "FAIL %s: element %lld: kernel %.17g interpreter %.17g\n", what,
                            (long long)i, elem_load_f64(e, c->fast[k], i),
                            elem_load_f64(e, c->ref[k], i));
                continue;
            }
            const char *x = elem_load_str(c->fast[k], i), *y = elem_load_str(c->ref[k], i);
            ok = !strcmp(x, y);
            if (!ok)
                fprintf(stderr, "FAIL %s: element %lld: kernel \"%s\" interpreter \"%s\"\n", what,
                        (long long)i, x, y);
        }
    }
    lj_scratch_release(&sc);
    arena_destroy(strs);
    return ok;
}

static void string_alloc(AnyCase *c, uint64_t seed, int numbers) {
    any_alloc(c, seed);
    uint64_t s = seed * 31 + 5;
    for (int k = lj_nres(c->d.w); k < lj_nops(c->d.w); k++) {
        if (lj_elem(c->d.w, k) != ELEM_STR)
            continue;
        fill_strings(c->fast[k], desc_numel(&c->d, k), &s, numbers);
        memcpy(c->ref[k], c->fast[k], bytes_of(c, k));
    }
}

/* Cast to and from str for every other kind, equal on strings under
 * broadcasting, string_normalizer for every case change and sensitivity,
 * unique at run-time sizes (rt_unique; sorted and not, along an axis).
 * Exact: both sides print, parse and order with core/str_ops.h, and
 * compare bytes (unique's results: the same slots of x). */
int any_string_cases(uint64_t seed) {
    uint64_t s = seed;
    int ran = 0;
    bool ok = true;
    for (int e = 0; e < ELEM_COUNT && ok; e++) {
        if (e == ELEM_STR)
            continue;
        for (int dir = 0; dir < 2 && ok; dir++) {
            int64_t dims[8];
            int rank = random_shape(&s, dims, 3, 40);
            ElemKind from = dir ? ELEM_STR : (ElemKind)e, to = dir ? (ElemKind)e : ELEM_STR;
            AnyCase c = {0};
            desc_begin(&c.d, NK_CAST, 1);
            desc_operand_elem(&c.d, to, rank, dims);
            desc_operand_elem(&c.d, from, rank, dims);
            desc_int(&c.d, AK_to, to);
            string_alloc(&c, s, STRING_NUMBERS);
            char what[64];
            snprintf(what, sizeof what, "cast %s to %s", elem_name(from), elem_name(to));
            ok = string_run(&c, what, libjit_cast_any, libjit_cast_any_work, &ran);
            any_free(&c);
        }
    }
    for (int i = 0; i < 6 && ok; i++) {
        int64_t out[8], dims[2][8];
        int rank = random_shape(&s, out, 3, i == 0 ? 300 : 6), ranks[2];
        for (int j = 0; j < 2; j++)
            ranks[j] = bcast_of(&s, rank, out, dims[j]);
        bcast_out(rank, out, 2, ranks, dims);
        AnyCase c = {0};
        desc_begin(&c.d, NK_EQUAL, 1);
        desc_operand_elem(&c.d, ELEM_BOOL, rank, out);
        desc_operand_elem(&c.d, ELEM_STR, ranks[0], dims[0]);
        desc_operand_elem(&c.d, ELEM_STR, ranks[1], dims[1]);
        string_alloc(&c, s + (uint64_t)i, 0);
        ok = string_run(&c, "equal on str", libjit_equal_any, libjit_equal_any_work, &ran);
        any_free(&c);
    }
    for (int mode = CASE_NONE; mode <= CASE_UPPER && ok; mode++) {
        for (int sensitive = 0; sensitive < 2 && ok; sensitive++) {
            int64_t n = rnd(&s, 1, 30), ns = rnd(&s, 0, 3);
            /* the stopwords and the input first, to count what is kept */
            uint64_t x[30], stop[3];
            fill_strings(x, n, &s, 0);
            fill_strings(stop, ns, &s, 0);
            int64_t keep = 0;
            for (int64_t i = 0; i < n; i++)
                keep += !str_is_stopword(elem_load_str(x, i), (const char *const *)stop, ns,
                                         sensitive);
            int64_t yd = ns ? (keep ? keep : 1) : n, two = rnd(&s, 0, 1);
            int64_t xdims[2] = {1, n}, ydims[2] = {1, yd};
            AnyCase c = {0};
            desc_begin(&c.d, NK_STRING_NORMALIZER, 1);
            desc_operand_elem(&c.d, ELEM_STR, 1 + (int)two, ydims + 1 - two);
            desc_operand_elem(&c.d, ELEM_STR, 1 + (int)two, xdims + 1 - two);
            desc_operand_elem(&c.d, ELEM_STR, 1, &ns);
            desc_int(&c.d, AK_case_change, mode);
            desc_int(&c.d, AK_case_sensitive, sensitive);
            any_alloc(&c, s);
            memcpy(c.fast[1], x, (size_t)n * 8);
            memcpy(c.ref[1], x, (size_t)n * 8);
            memcpy(c.fast[2], stop, (size_t)ns * 8);
            memcpy(c.ref[2], stop, (size_t)ns * 8);
            ok = string_run(&c, "string_normalizer", libjit_string_normalizer_str,
                            libjit_string_normalizer_str_work, &ran);
            any_free(&c);
        }
    }
    int refused = 0; /* unique refuses no size of its own bound */
    for (int i = 0; i < 24 && ok; i++)
        ok = rt_unique(NK_UNIQUE, ELEM_STR, &s, i, &ran, &refused);
    return ok && !refused ? ran : -1;
}

/* ---- scatter_nd, reshape, shape, nms; pools and matmul of every kind ---------------- */

/* A case the interpreter refuses would not count: each of these is built
 * to be valid, so a refusal fails it. */
static bool any_run_valid(AnyCase *c, const char *what, KernelFn fn, WorkFn work, int *ran) {
    int before = *ran;
    if (!any_run(c, what, fn, work, ran))
        return false;
    if (*ran == before) {
        fprintf(stderr, "FAIL %s: the interpreter refused the case\n", what);
        return false;
    }
    return true;
}

enum { SLOT_BYTES = 8 * 8 }; /* one operand's run-time dims in the mutable area */

/* An instruction over bounded-dynamic buffers, both ways: natively as
 * generated code runs it (libjit_dyn_prepare with `rule`, then the kernel
 * on the descriptor it made) and by the interpreter at the run-time sizes
 * (libjit_dynamic, the fallback). Operand k is dynamic along mask dyn[k],
 * an input's run-time dims in rt[k]. Exact: both succeed or both refuse,
 * with the same result sizes and the same elements within them. */
static bool dyn_run(AnyCase *c, const char *what, KernelFn fn, WorkFn work, const int64_t *rule,
                    int nrule, const unsigned *dyn, int64_t (*rt)[8], int *ran) {
    int nops = lj_nops(c->d.w), nres = lj_nres(c->d.w);
    int64_t slots[2 * CASE_OPS + 8];
    unsigned char mut_fast[CASE_OPS * SLOT_BYTES] = {0}, mut_ref[CASE_OPS * SLOT_BYTES] = {0};
    for (int k = 0; k < nops; k++) {
        slots[2 * k] = dyn[k] ? k * SLOT_BYTES : -1;
        slots[2 * k + 1] = dyn[k];
        if (dyn[k] && k >= nres) {
            memcpy(mut_fast + k * SLOT_BYTES, rt[k], (size_t)lj_rank(c->d.w, k) * 8);
            memcpy(mut_ref + k * SLOT_BYTES, rt[k], (size_t)lj_rank(c->d.w, k) * 8);
        }
    }
    memcpy(slots + 2 * nops, rule, (size_t)nrule * sizeof *rule);
    int want = libjit_dynamic(c->d.w, c->ref, mut_ref, slots);
    Desc r = c->d;
    int got = libjit_dyn_prepare(r.w, c->d.w, c->fast, mut_fast, slots);
    if (got != want) {
        fprintf(stderr, "FAIL %s: native %s, interpreter %s\n", what, got ? "refused" : "ran",
                want ? "refused" : "ran");
        return false;
    }
    ++*ran;
    if (got)
        return true;
    run_kernel(&r, fn, work, c->fast);
    for (int k = 0; k < nres; k++) {
        int64_t n = 1;
        for (int i = 0; i < lj_rank(c->d.w, k); i++) {
            int64_t df = dyn[k] ? ((int64_t *)(void *)(mut_fast + k * SLOT_BYTES))[i] : lj_dim(c->d.w, k, i);
            int64_t dr = dyn[k] ? ((int64_t *)(void *)(mut_ref + k * SLOT_BYTES))[i] : lj_dim(c->d.w, k, i);
            if (df != dr) {
                fprintf(stderr, "FAIL %s: output %d dim %d: native %lld interpreter %lld\n", what,
                        k, i, (long long)df, (long long)dr);
                return false;
            }
            n *= df;
        }
        ElemKind e = (ElemKind)lj_elem(c->d.w, k);
        for (int64_t i = 0; i < n; i++) {
            if (same_elem(e, c->fast[k], c->ref[k], i))
                continue;
            fprintf(stderr, "FAIL %s: output %d element %lld: kernel %.17g interpreter %.17g\n", what,
                    k, (long long)i, elem_load_f64(e, c->fast[k], i), elem_load_f64(e, c->ref[k], i));
            return false;
        }
    }
    return true;
}

/* scatter_nd: x of rank 1-3, indices [rows..., last] in range (negative
 * ones too, duplicates likely), every reduction (none for bool). */
static bool scatter_nd_case(NodeKind kind, ElemKind e, uint64_t *s, int i, int *ran,
                            int *refused) {
    int64_t x[8], ix[8], u[8];
    int rx = (int)rnd(s, 1, 3), ri = (int)rnd(s, 1, 3);
    for (int j = 0; j < rx; j++)
        x[j] = rnd(s, 1, 4);
    int64_t last = rnd(s, 1, rx);
    for (int j = 0; j < ri - 1; j++)
        ix[j] = rnd(s, 1, 3);
    ix[ri - 1] = last;
    int ru = 0;
    for (int j = 0; j < ri - 1; j++)
        u[ru++] = ix[j];
    for (int j = (int)last; j < rx; j++)
        u[ru++] = x[j];
    AnyCase c = {0};
    desc_begin(&c.d, NK_SCATTER_ND, 1);
    desc_operand_elem(&c.d, e, rx, x);
    desc_operand_elem(&c.d, e, rx, x);
    desc_operand_elem(&c.d, ELEM_I64, ri, ix);
    desc_operand_elem(&c.d, e, ru, u);
    static const int64_t reds[] = {RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN};
    if (e != ELEM_BOOL)
        desc_int(&c.d, AK_reduction, reds[rnd(s, 0, 4)]);
    any_alloc(&c, *s + (uint64_t)i);
    for (int64_t j = 0; j < desc_numel(&c.d, 2); j++) {
        int64_t dim = x[j % last];
        ((int64_t *)c.fast[2])[j] = ((int64_t *)c.ref[2])[j] = rnd(s, -dim, dim - 1);
    }
    char what[64];
    snprintf(what, sizeof what, "scatter_nd on %s", elem_name(e));
    bool ok = any_run_valid(&c, what, libjit_scatter_nd_any, libjit_scatter_nd_any_work, ran);
    any_free(&c);
    return ok;
}

/* reshape: static (x to [numel / k, k]), and from x [b, 2, 3] with b
 * bounded to [y0, 3] with y0 dynamic (LJ_DYN_RESHAPE), b from 0 to its
 * bound. */
static bool reshape_cases(NodeKind kind, ElemKind e, uint64_t *s, int i, int *ran, int *refused) {
    int64_t x[8], y[2];
    int rank = random_shape(s, x, 4, 6);
    int64_t n = 1;
    for (int j = 0; j < rank; j++)
        n *= x[j];
    int64_t k = rank ? x[rank - 1] : 1;
    y[0] = n / k, y[1] = k;
    AnyCase c = {0};
    desc_begin(&c.d, NK_RESHAPE, 1);
    desc_operand_elem(&c.d, e, 2, y);
    desc_operand_elem(&c.d, e, rank, x);
    any_alloc(&c, *s + (uint64_t)i);
    char what[64];
    snprintf(what, sizeof what, "reshape on %s", elem_name(e));
    bool ok = any_run_valid(&c, what, libjit_reshape_any, libjit_reshape_any_work, ran);
    any_free(&c);
    int64_t bound = rnd(s, 1, 5), xb[3] = {bound, 2, 3}, yb[2] = {bound * 2, 3};
    int64_t rt[CASE_OPS][8] = {{0}};
    rt[1][0] = rnd(s, 0, bound), rt[1][1] = 2, rt[1][2] = 3;
    c = (AnyCase){0};
    desc_begin(&c.d, NK_RESHAPE, 1);
    desc_operand_elem(&c.d, e, 2, yb);
    desc_operand_elem(&c.d, e, 3, xb);
    any_alloc(&c, *s + (uint64_t)i);
    static const unsigned dyn[CASE_OPS] = {1, 1};
    static const int64_t rule[] = {LJ_DYN_RESHAPE};
    snprintf(what, sizeof what, "reshape at run-time sizes on %s", elem_name(e));
    ok = ok && dyn_run(&c, what, libjit_reshape_any, libjit_reshape_any_work, rule, 1, dyn, rt, ran);
    any_free(&c);
    return ok;
}

/* shape: of a static x, and of an x dynamic along a random mask of its
 * axes (LJ_DYN_MAP with no sources: the result is static). */
static bool shape_cases(NodeKind kind, ElemKind e, uint64_t *s, int i, int *ran, int *refused) {
    int64_t x[8], y[1];
    int rank = random_shape(s, x, 4, 6);
    y[0] = rank;
    AnyCase c = {0};
    desc_begin(&c.d, NK_SHAPE, 1);
    desc_operand_elem(&c.d, ELEM_I64, 1, y);
    desc_operand_elem(&c.d, e, rank, x);
    any_alloc(&c, *s + (uint64_t)i);
    char what[64];
    snprintf(what, sizeof what, "shape on %s", elem_name(e));
    bool ok = any_run_valid(&c, what, libjit_shape_any, libjit_shape_any_work, ran);
    if (ok && rank > 0) {
        unsigned dyn[CASE_OPS] = {0, (unsigned)rnd(s, 1, (1 << rank) - 1)};
        int64_t rt[CASE_OPS][8] = {{0}};
        for (int j = 0; j < rank; j++)
            rt[1][j] = dyn[1] & (1u << j) ? rnd(s, 0, x[j]) : x[j];
        static const int64_t rule[] = {LJ_DYN_MAP, 0};
        snprintf(what, sizeof what, "shape at run-time sizes on %s", elem_name(e));
        ok = dyn_run(&c, what, libjit_shape_any, libjit_shape_any_work, rule, 2, dyn, rt, ran);
    }
    any_free(&c);
    return ok;
}

/* nms (boxes and scores f32, as the importer requires; the limit i64 or
 * i32, the thresholds f32 or f64), with every optional operand or not, both
 * box layouts, ties and NaN among the scores. */
static bool nms_case(uint64_t *s, int i, int *ran) {
    int64_t nb = rnd(s, 1, 2), nc = rnd(s, 1, 3), n = rnd(s, 0, 12);
    int64_t bx[3] = {nb, n, 4}, sc[3] = {nb, nc, n}, one[1] = {1};
    int64_t y[2] = {nb * nc * n, 3}; /* the bound the shape rule gives */
    int nopt = (int)rnd(s, 0, 3);
    AnyCase c = {.plain = i % 2 == 0};
    desc_begin(&c.d, NK_NMS, 1);
    desc_operand_elem(&c.d, ELEM_I64, 2, y);
    desc_operand_elem(&c.d, ELEM_F32, 3, bx);
    desc_operand_elem(&c.d, ELEM_F32, 3, sc);
    if (nopt > 0)
        desc_operand_elem(&c.d, i % 3 ? ELEM_I64 : ELEM_I32, 1, one);
    for (int k = 1; k < nopt; k++)
        desc_operand_elem(&c.d, i % 5 ? ELEM_F32 : ELEM_F64, 1, one);
    desc_int(&c.d, AK_center_point_box, rnd(s, 0, 1));
    any_alloc(&c, *s + (uint64_t)i);
    if (nopt > 0)
        elem_store_i64((ElemKind)lj_elem(c.d.w, 3), c.fast[3], 0, rnd(s, 0, n + 1));
    if (nopt > 1)
        elem_store_f64((ElemKind)lj_elem(c.d.w, 4), c.fast[4], 0, (double)rnd(s, 0, 10) / 10);
    if (nopt > 2)
        elem_store_f64((ElemKind)lj_elem(c.d.w, 5), c.fast[5], 0, (double)rnd(s, -2000, 2000) / 1000);
    for (int k = 0; k < 3; k++) /* ties among the scores: few distinct values */
        for (int64_t j = 0; j < desc_numel(&c.d, 2) && i % 3 == 2; j++)
            ((float *)c.fast[2])[j] = (float)rnd(s, 0, 3) / 4;
    for (int k = 1; k < lj_nops(c.d.w); k++)
        memcpy(c.ref[k], c.fast[k], bytes_of(&c, k));
    unsigned dyn[CASE_OPS] = {1};
    int64_t rt[CASE_OPS][8] = {{0}};
    static const int64_t rule[] = {LJ_DYN_NMS};
    char what[64];
    snprintf(what, sizeof what, "nms (case %d)", i);
    bool ok = dyn_run(&c, what, libjit_nms_any, libjit_nms_any_work, rule, 1, dyn, rt, ran);
    any_free(&c);
    return ok;
}

/* scatter_nd, reshape and shape for every kind each takes, nms for its one
 * kind; against the interpreter, exact (data movement and counts). */
int any_shape_cases(uint64_t seed) {
    uint64_t s = seed;
    int ran = 0, refused = 0;
    static const KindCases table[] = {{NK_SCATTER_ND, scatter_nd_case, 6, false},
                                      {NK_RESHAPE, reshape_cases, 4, false},
                                      {NK_SHAPE, shape_cases, 4, false}};
    bool ok = kind_cases(table, sizeof table / sizeof *table, &s, &ran, &refused);
    for (int i = 0; i < 40 && ok; i++)
        ok = nms_case(&s, i, &ran);
    return ok ? ran : -1;
}

/* max_pool (with and without its index, row- or column-major) and avg_pool
 * (count_include_pad or not) of 1 to 3 spatial axes, with strides, pads
 * and dilations, for every kind each takes: max_pool_any and avg_pool_any,
 * the interpreter's loop, exact. */
static bool pool_case(NodeKind kind, ElemKind e, uint64_t *s, int i, int *ran, int *refused) {
    int ns = (int)rnd(s, 1, 3);
    int64_t x[8] = {rnd(s, 1, 2), rnd(s, 1, 3)}, y[8] = {x[0], x[1]};
    int64_t k[3], st[3], dil[3], pads[6];
    for (int j = 0; j < ns; j++) {
        k[j] = rnd(s, 1, 3);
        st[j] = rnd(s, 1, 2);
        dil[j] = rnd(s, 1, 2);
        pads[j] = rnd(s, 0, k[j] - 1);
        pads[ns + j] = rnd(s, 0, k[j] - 1);
        int64_t span = (k[j] - 1) * dil[j] + 1;
        x[2 + j] = rnd(s, span, span + 5);
        y[2 + j] = (x[2 + j] + pads[j] + pads[ns + j] - span) / st[j] + 1;
    }
    bool index = kind == NK_MAX_POOL && i % 2;
    AnyCase c = {0};
    desc_begin(&c.d, kind, index ? 2 : 1);
    desc_operand_elem(&c.d, e, 2 + ns, y);
    if (index)
        desc_operand_elem(&c.d, ELEM_I64, 2 + ns, y);
    desc_operand_elem(&c.d, e, 2 + ns, x);
    desc_ints(&c.d, AK_kernel, ns, k);
    desc_ints(&c.d, AK_strides, ns, st);
    desc_ints(&c.d, AK_pads, 2 * ns, pads);
    desc_ints(&c.d, AK_dilations, ns, dil);
    if (kind == NK_MAX_POOL)
        desc_int(&c.d, AK_storage_order, rnd(s, 0, 1));
    else
        desc_int(&c.d, AK_count_include_pad, rnd(s, 0, 1));
    any_alloc(&c, *s + (uint64_t)i);
    char what[64];
    snprintf(what, sizeof what, "%s of %d axes on %s", node_kind_name(kind), ns, elem_name(e));
    bool ok = kind == NK_MAX_POOL
                  ? any_run_valid(&c, what, libjit_max_pool_any, libjit_max_pool_any_work, ran)
                  : any_run_valid(&c, what, libjit_avg_pool_any, libjit_avg_pool_any_work, ran);
    any_free(&c);
    return ok;
}

/* matmul: batch axes broadcast (one side 1 or absent), 1-D operands. */
static bool matmul_case(NodeKind kind, ElemKind e, uint64_t *s, int i, int *ran, int *refused) {
    int64_t m = rnd(s, 1, 5), k = rnd(s, 0, 6), n = rnd(s, 1, 5), b = rnd(s, 1, 3);
    int64_t a[4], bb[4], y[4];
    int ra = 0, rb = 0, ry = 0;
    int form = i % 4; /* 0: [b,m,k] x [k,n]; 1: [m,k] x [b,k,n]; 2: [b,m,k] x [1,k,n]; 3: [k] x [k,n] */
    if (form == 0 || form == 2)
        a[ra++] = b;
    if (form != 3)
        a[ra++] = m;
    a[ra++] = k;
    if (form == 1)
        bb[rb++] = b;
    if (form == 2)
        bb[rb++] = 1;
    bb[rb++] = k, bb[rb++] = n;
    if (form != 3)
        y[ry++] = b;
    if (form != 3)
        y[ry++] = m;
    y[ry++] = n;
    AnyCase c = {0};
    desc_begin(&c.d, NK_MATMUL, 1);
    desc_operand_elem(&c.d, e, ry, y);
    desc_operand_elem(&c.d, e, ra, a);
    desc_operand_elem(&c.d, e, rb, bb);
    any_alloc(&c, *s + (uint64_t)i);
    char what[64];
    snprintf(what, sizeof what, "matmul on %s", elem_name(e));
    bool ok = any_run_valid(&c, what, libjit_matmul_any, libjit_matmul_any_work, ran);
    any_free(&c);
    return ok;
}

int any_pool_matmul_cases(uint64_t seed) {
    uint64_t s = seed;
    int ran = 0, refused = 0;
    /* f32 runs libjit_matmul_f32 (test_matmul); the interpreter sums f32
     * products in f32, matmul_any in double as for the other kinds */
    static const KindCases table[] = {{NK_MAX_POOL, pool_case, 8, false},
                                      {NK_AVG_POOL, pool_case, 8, false},
                                      {NK_MATMUL, matmul_case, 8, true}};
    bool ok = kind_cases(table, sizeof table / sizeof *table, &s, &ran, &refused);
    return ok ? ran : -1;
}
