/* Pooling, f32 NCHW: max_pool and avg_pool over 1 or 2 spatial axes (LJ_VL
 * channels in the vector lanes, depthwise.c; without heap memory, the
 * phase-plane kernel of window.c), global_avg_pool and global_max_pool
 * (one vector reduction per plane), max_pool with its index result (a
 * plane at a time). Other ranks, a column-major index, and no memory at
 * all run the interpreter's kernel. Threads split
 * (image, block of LJ_VL channels) units, and planes for the global pools. */
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
        if (lo == 0)
            libjit_generic(d, ops);
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
 * storage_order runs the interpreter's kernel. */
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

/* Sum of n floats, four vector accumulators (the add latency). */
LJ_INLINE float plane_sum(const float *x, int64_t n) {
    vf32 acc[4] = {{0}, {0}, {0}, {0}};
    int64_t i = 0;
    for (; i + 4 * LJ_VL <= n; i += 4 * LJ_VL)
        for (int u = 0; u < 4; u++)
            acc[u] += lj_load(x + i + u * LJ_VL);
    for (; i + LJ_VL <= n; i += LJ_VL)
        acc[0] += lj_load(x + i);
    vf32 v = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    float s = 0;
    for (int l = 0; l < LJ_VL; l++)
        s += v[l];
    for (; i < n; i++)
        s += x[i];
    return s;
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

/* The sum is divided (not multiplied by 1/n) so that it rounds once. */
LIBJIT_KERNEL libjit_global_avg_pool_f32(const int64_t *d, void *const *ops, int64_t lo,
                                         int64_t hi, LjScratch *sc) {
    int64_t p0, p1, n = plane_size(d);
    unit_planes(d, lo, hi, &p0, &p1);
    float *y = ops[0];
    const float *x = ops[1];
    for (int64_t p = p0; p < p1; p++)
        y[p] = plane_sum(x + p * n, n) / (float)(n ? n : 1);
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
