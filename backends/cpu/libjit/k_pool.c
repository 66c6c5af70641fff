/* Pooling, f32 NCHW: max_pool and avg_pool over 1 or 2 spatial axes (LJ_VL
 * channels in the vector lanes, depthwise.c; without heap memory, the
 * phase-plane kernel of window.c), global_avg_pool and global_max_pool
 * (one vector reduction per plane), max_pool with its index result (a
 * plane at a time). Other ranks, a column-major index, windows too large
 * for the stack with no memory, and the other float kinds run max_pool_any
 * and avg_pool_any: the plain loop over every window, as the interpreter's.
 * Threads split (image, block of LJ_VL channels) units, and planes for the
 * global pools. */
#include "backends/cpu/libjit/elem.h"
#include "backends/cpu/libjit/kernels.h"
#include "backends/cpu/libjit/window.h"

enum { PLANES_PER_UNIT = 4 };

/* Operand 0 is y, the input is the last operand. One spatial axis is two
 * with a height of 1. */
LJ_INLINE bool pool_window(const int64_t *d, LjWindow *g) {
    int x = lj_nops(d) - 1, ns = lj_rank(d, x) - 2;
    if (ns != 1 && ns != 2)
        return false;
    int a = ns - 1;
    *g = (LjWindow){
        .h = ns == 2 ? lj_dim(d, x, 2) : 1,
        .w = lj_dim(d, x, 2 + a),
        .oh = ns == 2 ? lj_dim(d, 0, 2) : 1,
        .ow = lj_dim(d, 0, 2 + a),
        .kh = ns == 2 ? lj_attr_at(d, AK_kernel, 0, 1) : 1,
        .kw = lj_attr_at(d, AK_kernel, a, 1),
        .sh = ns == 2 ? lj_attr_at(d, AK_strides, 0, 1) : 1,
        .sw = lj_attr_at(d, AK_strides, a, 1),
        .ph = ns == 2 ? lj_attr_at(d, AK_pads, 0, 0) : 0,
        .pw = lj_attr_at(d, AK_pads, a, 0),
        .dh = ns == 2 ? lj_attr_at(d, AK_dilations, 0, 1) : 1,
        .dw = lj_attr_at(d, AK_dilations, a, 1),
        .ph_end = ns == 2 ? lj_attr_at(d, AK_pads, 2, 0) : 0,
        .pw_end = lj_attr_at(d, AK_pads, ns + a, 0),
    };
    return true;
}

/* The window of a pool with one result. */
LJ_INLINE bool window_of(const int64_t *d, LjWindow *g) {
    return lj_nres(d) == 1 && pool_window(d, g);
}

LJ_INLINE int64_t planes(const int64_t *d) {
    return lj_dim(d, 0, 0) * lj_dim(d, 0, 1);
}

LJ_INLINE int64_t plane_units(const int64_t *d) {
    return (planes(d) + PLANES_PER_UNIT - 1) / PLANES_PER_UNIT;
}

LJ_INLINE void unit_planes(const int64_t *d, int64_t lo, int64_t hi, int64_t *p0, int64_t *p1) {
    *p0 = lo * PLANES_PER_UNIT < planes(d) ? lo * PLANES_PER_UNIT : planes(d);
    *p1 = hi * PLANES_PER_UNIT < planes(d) ? hi * PLANES_PER_UNIT : planes(d);
}

LJ_INLINE int64_t window_work(const int64_t *d) {
    LjWindow g;
    return window_of(d, &g) ? lj_dim(d, 0, 0) * lj_depthwise_blocks(lj_dim(d, 0, 1)) : 1;
}

/* ---- every rank and kind: max_pool_any, avg_pool_any ---------------------------- */

/* The interpreter's loop (backends/interp/k_nn.c), in the same order and
 * arithmetic, so that results are identical: each output element walks its
 * whole window; a max keeps the first greatest position (its index
 * row-major, or column-major with storage_order 1), an average sums in
 * double and divides by the count inside the input, or inside the padded
 * input with count_include_pad. A max over a window wholly in the padding
 * is -inf with index -1. Units: (image, channel) planes. */
typedef struct PoolNd {
    int ns, ex, ey;
    int64_t in[LJ_CONV_MAX], out[LJ_CONV_MAX], k[LJ_CONV_MAX], st[LJ_CONV_MAX];
    int64_t pb[LJ_CONV_MAX], pe[LJ_CONV_MAX], dil[LJ_CONV_MAX];
    int64_t in_size, out_size, ksize;
    bool col_major, incl;
} PoolNd;

LJ_INLINE bool pool_nd_of(const int64_t *d, PoolNd *p) {
    int x = lj_nops(d) - 1;
    p->ns = lj_rank(d, x) - 2;
    p->ex = lj_elem(d, x);
    p->ey = lj_elem(d, 0);
    p->in_size = p->out_size = p->ksize = 1;
    if (p->ns < 0 || p->ns > LJ_CONV_MAX)
        return false;
    for (int i = 0; i < p->ns; i++) {
        p->in[i] = lj_dim(d, x, 2 + i);
        p->out[i] = lj_dim(d, 0, 2 + i);
        p->k[i] = lj_attr_at(d, AK_kernel, i, 1);
        p->st[i] = lj_attr_at(d, AK_strides, i, 1);
        p->pb[i] = lj_attr_at(d, AK_pads, i, 0);
        p->pe[i] = lj_attr_at(d, AK_pads, p->ns + i, 0);
        p->dil[i] = lj_attr_at(d, AK_dilations, i, 1);
        p->in_size *= p->in[i];
        p->out_size *= p->out[i];
        p->ksize *= p->k[i];
    }
    p->col_major = lj_attr_int(d, AK_storage_order, 0) != 0;
    p->incl = lj_attr_int(d, AK_count_include_pad, 0) != 0;
    return true;
}

LJ_INLINE void pool_nd_plane(const PoolNd *p, LjPool kind, void *const *ops, int64_t *idx,
                             const void *x, int64_t pl) {
    int64_t oidx[LJ_CONV_MAX] = {0};
    for (int64_t op = 0; op < p->out_size; op++) {
        double acc = kind == LJ_POOL_MAX ? -__builtin_inf() : 0;
        int64_t arg = -1, arg_index = -1, count = 0, padded_count = 0;
        int64_t kidx[LJ_CONV_MAX] = {0};
        for (int64_t kp = 0; kp < p->ksize; kp++) {
            int64_t off = 0, off_cm = 0;
            bool inside = true, in_padded = true;
            for (int i = 0; i < p->ns; i++) {
                int64_t q = oidx[i] * p->st[i] - p->pb[i] + kidx[i] * p->dil[i];
                inside = inside && q >= 0 && q < p->in[i];
                in_padded = in_padded && q < p->in[i] + p->pe[i];
                if (inside)
                    off = off * p->in[i] + q;
            }
            for (int j = p->ns - 1; inside && p->col_major && j >= 0; j--)
                off_cm = off_cm * p->in[j] + oidx[j] * p->st[j] - p->pb[j] + kidx[j] * p->dil[j];
            padded_count += in_padded;
            if (inside) {
                int64_t at = pl * p->in_size + off;
                double v = lj_ld_f64(p->ex, x, at);
                count++;
                if (kind == LJ_POOL_MAX) {
                    if (arg < 0 || v > acc) {
                        acc = v;
                        arg = at;
                        arg_index = p->col_major ? pl * p->in_size + off_cm : at;
                    }
                } else {
                    acc += v;
                }
            }
            for (int i = p->ns - 1; i >= 0 && ++kidx[i] == p->k[i]; i--)
                kidx[i] = 0;
        }
        if (kind == LJ_POOL_AVG)
            acc /= (double)(p->incl ? padded_count : count ? count : 1);
        int64_t yo = pl * p->out_size + op;
        if (lj_is_float(p->ey))
            lj_st_f64(p->ey, ops[0], yo, acc);
        else
            lj_st_i64(p->ey, ops[0], yo, arg >= 0 ? lj_ld_i64(p->ex, x, arg) : 0);
        if (idx)
            idx[yo] = arg_index;
        for (int i = p->ns - 1; i >= 0 && ++oidx[i] == p->out[i]; i--)
            oidx[i] = 0;
    }
}

LJ_INLINE int64_t pool_nd_work(const int64_t *d) {
    return planes(d) > 0 ? planes(d) : 1;
}

LJ_INLINE void pool_nd(const int64_t *d, void *const *ops, LjPool kind, int64_t lo, int64_t hi) {
    PoolNd p;
    if (!pool_nd_of(d, &p))
        return; /* more spatial axes than the verifier lets through */
    const void *x = ops[lj_nops(d) - 1];
    int64_t *idx = lj_nres(d) == 2 ? ops[1] : NULL;
    for (int64_t pl = lo; pl < hi && pl < planes(d); pl++)
        pool_nd_plane(&p, kind, ops, idx, x, pl);
}

LIBJIT_WORK libjit_max_pool_any_work(const int64_t *d) {
    return pool_nd_work(d);
}

/* Operands: y, [index (i64)], x. */
LIBJIT_KERNEL libjit_max_pool_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                  LjScratch *sc) {
    pool_nd(d, ops, LJ_POOL_MAX, lo, hi);
}

LIBJIT_WORK libjit_avg_pool_any_work(const int64_t *d) {
    return pool_nd_work(d);
}

LIBJIT_KERNEL libjit_avg_pool_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                  LjScratch *sc) {
    pool_nd(d, ops, LJ_POOL_AVG, lo, hi);
}

/* ---- f32, 1 or 2 spatial axes ------------------------------------------------------ */

LJ_INLINE void pool_run(const int64_t *d, void *const *ops, LjPool kind, int64_t lo, int64_t hi,
                        LjScratch *sc) {
    LjWindow g;
    int64_t c = lj_dim(d, 0, 1), blocks = lj_depthwise_blocks(c);
    bool incl = lj_attr_int(d, AK_count_include_pad, 0) != 0;
    const float *x = ops[lj_nops(d) - 1];
    if (kind == LJ_POOL_MAX && window_of(d, &g) && lj_max_pool_rows_fits(&g)) {
        for (int64_t u = lo; u < hi; u++) { /* the unit's planes, as below */
            int64_t p0 = u / blocks * c + u % blocks * LJ_VL;
            int64_t p1 = p0 + (c - u % blocks * LJ_VL < LJ_VL ? c - u % blocks * LJ_VL : LJ_VL);
            lj_max_pool_rows(&g, x, ops[0], p0, p1);
        }
        return;
    }
    if (window_of(d, &g) && lj_pool_lanes(&g, kind, incl, c, x, ops[0], lo, hi, sc))
        return;
    if (!window_of(d, &g) || !lj_window_fits(&g)) {
        if (lo == 0) /* the any kernel's units are planes: all of them here */
            pool_nd(d, ops, kind, 0, planes(d));
        return;
    }
    for (int64_t u = lo; u < hi; u++) { /* the planes of the unit's channels */
        int64_t p0 = u / blocks * c + u % blocks * LJ_VL;
        int64_t p1 = p0 + (c - u % blocks * LJ_VL < LJ_VL ? c - u % blocks * LJ_VL : LJ_VL);
        lj_pool(&g, kind, incl, x, ops[0], p0, p1);
    }
}

LJ_INLINE int64_t window_scratch(const int64_t *d, int slot) {
    LjWindow g;
    return slot == LJ_SCRATCH_PLANES && window_of(d, &g) ? (int64_t)lj_pool_lanes_scratch(&g) : 0;
}

LIBJIT_SCRATCH libjit_max_pool_f32_scratch(const int64_t *d, int slot) {
    return window_scratch(d, slot);
}

LIBJIT_SCRATCH libjit_avg_pool_f32_scratch(const int64_t *d, int slot) {
    return window_scratch(d, slot);
}

/* ---- max_pool with its index result ---------------------------------------- */

/* The index result (ONNX's, over N, C and the spatial axes, row-major; the
 * gradient of a max pool scatters through it) of 1 or 2 spatial axes, a
 * plane at a time: the first position inside the window, replaced by each
 * greater one -- the interpreter's rule, so ties and NaN pick the same
 * position; a window wholly in the padding gives -inf and -1. Column-major
 * storage_order runs max_pool_any. */
LJ_INLINE bool index_window(const int64_t *d, LjWindow *g) {
    return lj_nres(d) == 2 && lj_nops(d) == 3 && lj_elem(d, 1) == ELEM_I64 &&
           lj_attr_int(d, AK_storage_order, 0) == 0 && pool_window(d, g);
}

LJ_INLINE void max_pool_index(const LjWindow *g, const float *x, float *y, int64_t *idx,
                              int64_t p0, int64_t p1) {
    int64_t in = g->h * g->w, out = g->oh * g->ow;
    for (int64_t pl = p0; pl < p1; pl++) {
        const float *xp = x + pl * in;
        for (int64_t oy = 0; oy < g->oh; oy++)
            for (int64_t ox = 0; ox < g->ow; ox++) {
                float best = -__builtin_inff();
                int64_t arg = -1;
                for (int64_t ky = 0; ky < g->kh; ky++) {
                    int64_t iy = oy * g->sh - g->ph + ky * g->dh;
                    if (iy < 0 || iy >= g->h)
                        continue;
                    for (int64_t kx = 0; kx < g->kw; kx++) {
                        int64_t ix = ox * g->sw - g->pw + kx * g->dw;
                        if (ix < 0 || ix >= g->w)
                            continue;
                        float v = xp[iy * g->w + ix];
                        if (arg < 0 || v > best) {
                            best = v;
                            arg = iy * g->w + ix;
                        }
                    }
                }
                y[pl * out + oy * g->ow + ox] = best;
                idx[pl * out + oy * g->ow + ox] = arg < 0 ? -1 : pl * in + arg;
            }
    }
}

LIBJIT_WORK libjit_max_pool_f32_work(const int64_t *d) {
    LjWindow g;
    if (index_window(d, &g))
        return plane_units(d);
    return window_work(d);
}

LIBJIT_KERNEL libjit_max_pool_f32(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                  LjScratch *sc) {
    LjWindow g;
    if (index_window(d, &g)) {
        int64_t p0, p1;
        unit_planes(d, lo, hi, &p0, &p1);
        max_pool_index(&g, ops[2], ops[0], ops[1], p0, p1);
        return;
    }
    pool_run(d, ops, LJ_POOL_MAX, lo, hi, sc);
}

LIBJIT_WORK libjit_avg_pool_f32_work(const int64_t *d) {
    return window_work(d);
}

LIBJIT_KERNEL libjit_avg_pool_f32(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                  LjScratch *sc) {
    pool_run(d, ops, LJ_POOL_AVG, lo, hi, sc);
}

/* ---- global pooling ------------------------------------------------------- */

/* Plane x's n floats as a vector of partial sums: four accumulators (the
 * add latency), the last partial vector one load whose lanes past the
 * plane are zeroed -- they read the next planes -- or, where fewer than a
 * vector of the tensor is left (`left` floats from x on), copied. */
LJ_INLINE vf32 plane_partial(const float *x, int64_t n, int64_t left) {
    vf32 acc[4] = {{0}, {0}, {0}, {0}};
    int64_t i = 0;
    for (; i + 4 * LJ_VL <= n; i += 4 * LJ_VL)
        for (int u = 0; u < 4; u++)
            acc[u] += lj_load(x + i + u * LJ_VL);
    for (int u = 0; i + LJ_VL <= n; i += LJ_VL, u++)
        acc[u] += lj_load(x + i);
    if (i < n)
        acc[3] += i + LJ_VL > left ? lj_load_part(x + i, n - i) : lj_first(lj_load(x + i), n - i);
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

/* Max of n floats; NaN anywhere gives NaN, as the interpreter. */
LJ_INLINE float plane_max(const float *x, int64_t n) {
    vf32 acc = lj_splat(-__builtin_inff());
    vi32 nan = {0};
    int64_t i = 0;
    for (; i + LJ_VL <= n; i += LJ_VL) {
        vf32 v = lj_load(x + i);
        nan |= v != v;
        acc = lj_max(acc, v);
    }
    float m = -__builtin_inff();
    bool any_nan = false;
    for (int l = 0; l < LJ_VL; l++) {
        any_nan |= nan[l] != 0;
        m = acc[l] > m ? acc[l] : m;
    }
    for (; i < n; i++) {
        any_nan |= x[i] != x[i];
        m = x[i] > m ? x[i] : m;
    }
    return any_nan ? __builtin_nanf("") : m;
}

LJ_INLINE int64_t plane_size(const int64_t *d) {
    int64_t p = planes(d);
    return p ? lj_numel(d, 1) / p : 0;
}

LIBJIT_WORK libjit_global_avg_pool_f32_work(const int64_t *d) {
    return plane_units(d);
}

/* LJ_VL planes at a time: each one's partial sums, then their lanes in
 * one tree (lj_sum_rows), so that a plane costs its loads and not a chain
 * of dependent adds: with the lanes summed one at a time and the tail a
 * float at a time, EfficientNet-B0's squeeze-excite pools (7x7 and 14x14
 * maps) took 2-2.5x ONNX Runtime's time. A plane's sum is the same
 * whichever planes share its block, so any thread split gives the same
 * bits. The sum is divided (not multiplied by 1/n) so that it rounds once. */
LIBJIT_KERNEL libjit_global_avg_pool_f32(const int64_t *d, void *const *ops, int64_t lo,
                                         int64_t hi, LjScratch *sc) {
    int64_t p0, p1, n = plane_size(d), all = planes(d);
    unit_planes(d, lo, hi, &p0, &p1);
    float *y = ops[0];
    const float *x = ops[1];
    for (int64_t p = p0; p < p1; p += LJ_VL) {
        int64_t rows = p1 - p < LJ_VL ? p1 - p : LJ_VL;
        vf32 v[LJ_VL];
        for (int64_t r = 0; r < LJ_VL; r++)
            v[r] = r < rows ? plane_partial(x + (p + r) * n, n, (all - p - r) * n) : lj_splat(0);
        lj_store_n(y + p, lj_sum_rows(v) / lj_splat((float)(n ? n : 1)), rows);
    }
}

LIBJIT_WORK libjit_global_max_pool_f32_work(const int64_t *d) {
    return plane_units(d);
}

LIBJIT_KERNEL libjit_global_max_pool_f32(const int64_t *d, void *const *ops, int64_t lo,
                                         int64_t hi, LjScratch *sc) {
    int64_t p0, p1, n = plane_size(d);
    unit_planes(d, lo, hi, &p0, &p1);
    float *y = ops[0];
    const float *x = ops[1];
    for (int64_t p = p0; p < p1; p++)
        y[p] = plane_max(x + p * n, n);
}
