/* The rest of what the models need, f32: reductions (sum, mean, max, min)
 * over one contiguous block of axes -- the last axis of a lowered softmax
 * or layer norm, the spatial axes of a mean -- or two (a batch norm's
 * statistics in training), and data movement:
 * transpose, slice, gather, cast to f32. Inputs they do not cover (another
 * kind, reduced axes in more than two blocks, indices of another kind) run
 * the operator's kernel for every kind (k_table.c, k_data.c).
 *
 * Data movement copies rows: axes are collapsed first (those of size 1
 * dropped, neighbours that stay neighbours merged), so that a channel
 * shuffle or an attention head split becomes a few long contiguous copies. */
#include "backends/cpu/libjit/kernels.h"
#include "backends/cpu/libjit/vec.h"

enum { CHUNK = 1 << 15 }; /* elements per work unit */

/* red_shape's loop unrolls where the rank is a constant: in a worker, not
 * in the bitcode. */
#pragma clang diagnostic ignored "-Wpass-failed" /* not unrolled yet: as intended */

LJ_INLINE int64_t min64(int64_t a, int64_t b) {
    return a < b ? a : b;
}

LJ_INLINE int64_t chunks(int64_t n) {
    return n > 0 ? (n + CHUNK - 1) / CHUNK : 1;
}

/* ---- reductions ------------------------------------------------------------ */

typedef enum { RK_SUM, RK_MEAN, RK_MAX, RK_MIN } Red;

/* x seen as [outer][len][inner][len2]: reduced axes in one block (len2
 * 1), or in two with kept axes between them -- a batch norm's statistics
 * over N and H x W of [N, C, H, W]; false for more blocks (axes of size 1
 * go either way). */
typedef struct RedShape {
    int64_t outer, len, inner, len2;
} RedShape;

LJ_INLINE bool red_shape(const int64_t *d, RedShape *s) {
    int rank = lj_rank(d, 1), n;
    const int64_t *axes = lj_attr(d, AK_axes, &n);
    uint32_t mask = 0;
    for (int i = 0; i < n; i++)
        mask |= 1u << (axes[i] < 0 ? axes[i] + rank : axes[i]);
    if (!axes || n == 0)
        mask = (1u << rank) - 1;
    *s = (RedShape){1, 1, 1, 1};
    int phase = 0; /* 0: before the block, 1: in it, 2: after, 3: in the second */
    /* Unrolled whole, so that with a constant descriptor the test folds
     * and the kernel for every kind drops out of code that never needs it
     * (O3 alone keeps this loop). */
#pragma clang loop unroll(full)
    for (int i = 0; i < rank; i++) {
        int64_t dim = lj_dim(d, 1, i);
        bool red = (mask >> i) & 1;
        if (dim == 1)
            continue;
        if (!red && phase == 3)
            return false;
        if (red)
            phase = phase >= 2 ? 3 : 1;
        else if (phase == 1)
            phase = 2;
        *(phase == 0 ? &s->outer : phase == 1 ? &s->len : phase == 2 ? &s->inner : &s->len2) *= dim;
    }
    return true;
}

LJ_INLINE vf32 red_vec(Red r, vf32 acc, vf32 v) {
    return r == RK_MAX ? lj_max(acc, v) : r == RK_MIN ? lj_min(acc, v) : acc + v;
}

LJ_INLINE float red_one(Red r, float acc, float v) {
    return r == RK_MAX ? (v > acc ? v : acc) : r == RK_MIN ? (v < acc ? v : acc) : acc + v;
}

/* max and min propagate NaN, as the interpreter's. */
LJ_INLINE float red_one_nan(Red r, float acc, float v) {
    if ((r == RK_MAX || r == RK_MIN) && (acc != acc || v != v))
        return __builtin_nanf("");
    return red_one(r, acc, v);
}

LJ_INLINE float red_init(Red r) {
    return r == RK_MAX ? -__builtin_inff() : r == RK_MIN ? __builtin_inff() : 0.0f;
}

/* One row of len contiguous values: four accumulators (latency), NaN
 * tracked apart for max/min, which propagate it as the interpreter does. */
LJ_INLINE float red_row(Red r, const float *x, int64_t len) {
    vf32 acc[4];
    vi32 nan = {0};
    for (int u = 0; u < 4; u++)
        acc[u] = lj_splat(red_init(r));
    int64_t i = 0;
    for (; i + 4 * LJ_VL <= len; i += 4 * LJ_VL) {
        for (int u = 0; u < 4; u++) {
            vf32 v = lj_load(x + i + u * LJ_VL);
            nan |= v != v;
            acc[u] = red_vec(r, acc[u], v);
        }
    }
    for (; i + LJ_VL <= len; i += LJ_VL) {
        vf32 v = lj_load(x + i);
        nan |= v != v;
        acc[0] = red_vec(r, acc[0], v);
    }
    vf32 v = red_vec(r, red_vec(r, acc[0], acc[1]), red_vec(r, acc[2], acc[3]));
    float s = red_init(r);
    bool any_nan = false;
    for (int l = 0; l < LJ_VL; l++) {
        s = red_one(r, s, v[l]);
        any_nan |= nan[l] != 0;
    }
    for (; i < len; i++) {
        s = red_one(r, s, x[i]);
        any_nan |= x[i] != x[i];
    }
    return (r == RK_MAX || r == RK_MIN) && any_nan ? __builtin_nanf("") : s;
}

/* y[0 .. inner) = reduction over len rows of inner values, inner apart. */
LJ_INLINE void red_cols(Red r, float *y, const float *x, int64_t len, int64_t inner) {
    for (int64_t i = 0; i < inner; i++)
        y[i] = red_init(r);
    for (int64_t k = 0; k < len; k++) {
        const float *row = x + k * inner;
        int64_t i = 0;
        for (; i + LJ_VL <= inner; i += LJ_VL) {
            vf32 a = lj_load(y + i), v = lj_load(row + i);
            vf32 m = red_vec(r, a, v);
            if (r == RK_MAX || r == RK_MIN)
                m = lj_select(v != v, v, lj_select(a != a, a, m));
            lj_store(y + i, m);
        }
        for (; i < inner; i++)
            y[i] = red_one_nan(r, y[i], row[i]);
    }
}

/* Units of whole outer rows; with two blocks, of output elements. */
LJ_INLINE int64_t red_rows(const RedShape *s, int64_t *count) {
    int64_t per = s->len * s->inner * s->len2;
    *count = s->outer;
    if (s->len2 > 1) {
        per = s->len * s->len2;
        *count = s->outer * s->inner;
    }
    return per ? (CHUNK + per - 1) / per : *count;
}

LJ_INLINE int64_t red_work(const int64_t *d) {
    RedShape s;
    if (!red_shape(d, &s))
        return 1;
    int64_t count, rows = red_rows(&s, &count);
    return count && rows ? (count + rows - 1) / rows : 1;
}

/* Units of whole outer rows (rows per unit sized to about a chunk). Sums
 * run in f32, within gamma_len * sum |x| of the interpreter's double sum. */
LJ_INLINE bool red_covers(const int64_t *d) {
    RedShape s;
    return red_shape(d, &s) && lj_elem(d, 1) == ELEM_F32;
}

LJ_INLINE void red_run(Red r, const int64_t *d, void *const *ops, int64_t lo, int64_t hi) {
    RedShape s;
    red_shape(d, &s);
    int64_t count, rows = red_rows(&s, &count);
    int64_t o0 = min64(lo * rows, count), o1 = min64(hi * rows, count);
    float *y = ops[0];
    const float *x = ops[1];
    float scale = r == RK_MEAN ? (float)(s.len * s.len2 ? s.len * s.len2 : 1) : 1.0f;
    if (s.len2 > 1) {
        /* output element e = (o, i): rows of len2 at x[o][l][i], l < len */
        for (int64_t e = o0; e < o1; e++) {
            int64_t o = e / s.inner, i = e % s.inner;
            const float *xe = x + (o * s.len * s.inner + i) * s.len2;
            float acc = red_init(r);
            for (int64_t l = 0; l < s.len; l++)
                acc = red_one_nan(r, acc, red_row(r, xe + l * s.inner * s.len2, s.len2));
            y[e] = r == RK_MEAN ? acc / scale : acc;
        }
        return;
    }
    int64_t per = s.len * s.inner;
    for (int64_t o = o0; o < o1; o++) {
        float *yo = y + o * s.inner;
        const float *xo = x + o * per;
        if (s.inner == 1)
            yo[0] = red_row(r, xo, s.len);
        else
            red_cols(r, yo, xo, s.len, s.inner);
        if (r == RK_MEAN)
            for (int64_t i = 0; i < s.inner; i++)
                yo[i] /= scale;
    }
}

#define REDUCE_KERNEL(name, RED)                                                              \
    LIBJIT_WORK libjit_##name##_f32_work(const int64_t *d) {                                  \
        return red_covers(d) ? red_work(d) : libjit_##name##_any_work(d);                     \
    }                                                                                         \
    LIBJIT_KERNEL libjit_##name##_f32(const int64_t *d, void *const *ops, int64_t lo,         \
                                      int64_t hi, LjScratch *sc) {                            \
        if (red_covers(d))                                                                    \
            red_run(RED, d, ops, lo, hi);                                                     \
        else                                                                                  \
            libjit_##name##_any(d, ops, lo, hi, sc);                                          \
    }

REDUCE_KERNEL(reduce_sum, RK_SUM)
REDUCE_KERNEL(reduce_mean, RK_MEAN)
REDUCE_KERNEL(reduce_max, RK_MAX)
REDUCE_KERNEL(reduce_min, RK_MIN)

/* ---- strided copies --------------------------------------------------------- */

/* A copy walked in output order: y[i] = x[offset of i], where output axis j
 * has size dims[j] and input stride st[j] (the last axis is the row). */
typedef struct Walk {
    int rank;
    int64_t dims[DESC_MAX_RANK], st[DESC_MAX_RANK];
    int64_t base; /* input offset of output element 0 */
} Walk;

/* Drops axes of size 1, merges an axis into the next when its stride is
 * the next one's times its size. */
LJ_INLINE Walk walk_collapse(Walk w) {
    Walk c = {.rank = 0, .base = w.base};
    for (int i = 0; i < w.rank; i++) {
        if (w.dims[i] == 1)
            continue;
        int t = c.rank - 1;
        if (t >= 0 && c.st[t] == w.st[i] * w.dims[i]) {
            c.dims[t] *= w.dims[i];
            c.st[t] = w.st[i];
            continue;
        }
        c.dims[c.rank] = w.dims[i];
        c.st[c.rank] = w.st[i];
        c.rank++;
    }
    if (c.rank == 0) {
        c.rank = 1;
        c.dims[0] = 1;
        c.st[0] = 1;
    }
    return c;
}

/* Output elements [e0, e1): contiguous rows are copied by vectors,
 * strided ones gathered. */
LJ_INLINE void walk_copy(const Walk *w, float *y, const float *x, int64_t e0, int64_t e1) {
    int r = w->rank - 1;
    int64_t row = w->dims[r], s = w->st[r];
    for (int64_t i = e0; i < e1;) {
        int64_t rest = i / row, col = i % row, off = w->base + col * s;
        for (int j = r - 1; j >= 0; j--) {
            off += rest % w->dims[j] * w->st[j];
            rest /= w->dims[j];
        }
        int64_t len = min64(row - col, e1 - i);
        const float *src = x + off;
        float *dst = y + i;
        int64_t k = 0;
        if (s == 1) {
            for (; k + LJ_VL <= len; k += LJ_VL)
                lj_store(dst + k, lj_load(src + k));
            for (; k < len; k++)
                dst[k] = src[k];
        } else {
            for (; k < len; k++)
                dst[k] = src[k * s];
        }
        i += len;
    }
}

LJ_INLINE void walk_run(const Walk *w, const int64_t *d, void *const *ops, int64_t lo,
                        int64_t hi) {
    int64_t n = lj_numel(d, 0);
    walk_copy(w, ops[0], ops[1], min64(lo * CHUNK, n), min64(hi * CHUNK, n));
}

LJ_INLINE void input_strides(const int64_t *d, int op, int64_t *st) {
    int64_t s = 1;
    for (int i = lj_rank(d, op) - 1; i >= 0; i--) {
        st[i] = s;
        s *= lj_dim(d, op, i);
    }
}

/* ---- transpose ------------------------------------------------------------- */

LJ_INLINE Walk transpose_walk(const int64_t *d) {
    int rank = lj_rank(d, 1), n;
    const int64_t *perm = lj_attr(d, AK_perm, &n);
    int64_t st[DESC_MAX_RANK];
    input_strides(d, 1, st);
    Walk w = {.rank = rank};
    for (int i = 0; i < rank; i++) {
        int p = perm && n == rank ? (int)perm[i] : rank - 1 - i;
        w.dims[i] = lj_dim(d, 1, p);
        w.st[i] = st[p];
    }
    return walk_collapse(w);
}

LIBJIT_WORK libjit_transpose_f32_work(const int64_t *d) {
    return chunks(lj_numel(d, 0));
}

LIBJIT_KERNEL libjit_transpose_f32(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                   LjScratch *sc) {
    Walk w = transpose_walk(d);
    walk_run(&w, d, ops, lo, hi);
}

/* ---- slice ------------------------------------------------------------------ */

/* The start clamped the ONNX way, as slice_params (core/infer.c); the
 * counts are the output's dims, so the ends are not needed. */
LJ_INLINE Walk slice_walk(const int64_t *d) {
    int rank = lj_rank(d, 1), ks, kt;
    const int64_t *s = lj_attr(d, AK_starts, &ks), *t = lj_attr(d, AK_steps, &kt);
    int64_t st[DESC_MAX_RANK];
    input_strides(d, 1, st);
    Walk w = {.rank = rank};
    for (int i = 0; i < rank; i++) {
        int64_t dim = lj_dim(d, 1, i);
        int64_t step = t && i < kt && t[i] ? t[i] : 1;
        int64_t b = s && i < ks ? s[i] : (step > 0 ? 0 : INT64_MAX);
        if (b < 0)
            b = b < -dim ? 0 : b + dim;
        b = step > 0 ? min64(b, dim) : min64(b, dim - 1);
        w.base += b * st[i];
        w.dims[i] = lj_dim(d, 0, i);
        w.st[i] = step * st[i];
    }
    return walk_collapse(w);
}

LIBJIT_WORK libjit_slice_f32_work(const int64_t *d) {
    return chunks(lj_numel(d, 0));
}

LIBJIT_KERNEL libjit_slice_f32(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                               LjScratch *sc) {
    Walk w = slice_walk(d);
    walk_run(&w, d, ops, lo, hi);
}

/* ---- gather ----------------------------------------------------------------- */

/* y[o][j][...] = x[o][indices[j]][...], blocks of `inner` contiguous values.
 * Indices are i64 or i32, negative ones count from the end; one out of
 * range (the interpreter's kernel fails there) gives a block of zeros, as a
 * kernel cannot fail. Units: (o, j) blocks. */
LJ_INLINE void gather_shape(const int64_t *d, int64_t *outer, int64_t *len, int64_t *inner) {
    int rank = lj_rank(d, 1);
    int64_t axis = lj_attr_int(d, AK_axis, 0);
    axis = axis < 0 ? axis + rank : axis;
    *outer = *inner = 1;
    for (int i = 0; i < rank; i++)
        if (i != axis)
            *(i < axis ? outer : inner) *= lj_dim(d, 1, i);
    *len = lj_dim(d, 1, (int)axis);
}

/* Indices of other kinds: gather_any, over its own units (kernels.h). */
LJ_INLINE bool gather_index_ok(const int64_t *d) {
    return lj_elem(d, 2) == ELEM_I64 || lj_elem(d, 2) == ELEM_I32;
}

LIBJIT_WORK libjit_gather_f32_work(const int64_t *d) {
    return gather_index_ok(d) ? chunks(lj_numel(d, 0)) : libjit_gather_any_work(d);
}

LIBJIT_KERNEL libjit_gather_f32(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                LjScratch *sc) {
    int ie = lj_elem(d, 2);
    if (!gather_index_ok(d)) {
        libjit_gather_any(d, ops, lo, hi, sc);
        return;
    }
    int64_t outer, len, inner, nidx = lj_numel(d, 2), n = lj_numel(d, 0);
    gather_shape(d, &outer, &len, &inner);
    if (inner == 0 || nidx == 0)
        return;
    /* Blocks overlapping the unit's elements [e0, e1). */
    int64_t e0 = min64(lo * CHUNK, n), e1 = min64(hi * CHUNK, n);
    float *y = ops[0];
    const float *x = ops[1];
    for (int64_t blk = e0 / inner; blk * inner < e1; blk++) {
        int64_t o = blk / nidx, j = blk % nidx;
        int64_t k = ie == ELEM_I64 ? ((const int64_t *)ops[2])[j] : ((const int32_t *)ops[2])[j];
        k = k < 0 ? k + len : k;
        int64_t c0 = e0 > blk * inner ? e0 - blk * inner : 0;
        int64_t c1 = min64(e1 - blk * inner, inner);
        float *dst = y + blk * inner;
        const float *src = x + (o * len + k) * inner;
        for (int64_t c = c0; c < c1; c++)
            dst[c] = k >= 0 && k < len ? src[c] : 0.0f;
    }
}

/* ---- cast to f32 ------------------------------------------------------------ */

LIBJIT_WORK libjit_cast_f32_work(const int64_t *d) {
    return chunks(lj_numel(d, 0));
}

/* Through double, as the interpreter's element accessors round. */
LIBJIT_KERNEL libjit_cast_f32(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                              LjScratch *sc) {
    int64_t n = lj_numel(d, 0), e0 = min64(lo * CHUNK, n), e1 = min64(hi * CHUNK, n);
    float *y = ops[0];
    switch (lj_elem(d, 1)) {
    case ELEM_F32:
        for (int64_t i = e0; i < e1; i++)
            y[i] = ((const float *)ops[1])[i];
        return;
    case ELEM_F64:
        for (int64_t i = e0; i < e1; i++)
            y[i] = (float)((const double *)ops[1])[i];
        return;
    case ELEM_I64:
        for (int64_t i = e0; i < e1; i++)
            y[i] = (float)(double)((const int64_t *)ops[1])[i];
        return;
    case ELEM_I32:
        for (int64_t i = e0; i < e1; i++)
            y[i] = (float)((const int32_t *)ops[1])[i];
        return;
    default: /* every other kind, strings too: the table's kernel, whose
              * units are the same chunks */
        libjit_cast_any(d, ops, lo, hi, sc);
        return;
    }
}

LIBJIT_WORK libjit_cast_f32_fails(const int64_t *d) {
    return libjit_cast_any_fails(d);
}
