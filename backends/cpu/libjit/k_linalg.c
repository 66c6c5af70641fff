/* lrn (local response normalisation across channels) and det (the
 * determinant of each trailing square matrix) for every float kind, as
 * libjit_lrn_any and libjit_det_any, and max_unpool for every kind. Both
 * float kernels compute in double as the
 * interpreter does, in the same order, so results are identical to it
 * (tests/kernels/any.c). */
#include <math.h>

/* No fused multiply-adds: the interpreter rounds every product, and these
 * kernels are held to its results exactly. */
#pragma STDC FP_CONTRACT OFF

#include "backends/cpu/libjit/elem.h"
#include "backends/cpu/libjit/kernels.h"
#include "core/det.h"

/* ---- lrn ---------------------------------------------------------------------------- */

LIBJIT_WORK libjit_lrn_any_work(const int64_t *d) {
    int64_t planes = lj_dim(d, 1, 0) * lj_dim(d, 1, 1);
    return planes > 0 ? planes : 1;
}

/* Units: (image, channel) planes; each sums the squares of its window of
 * channels at every inner position. */
LIBJIT_KERNEL libjit_lrn_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                             LjScratch *sc) {
    int ey = lj_elem(d, 0), ex = lj_elem(d, 1);
    double alpha = lj_attr_float(d, AK_alpha, (double)1e-4f);
    double beta = lj_attr_float(d, AK_beta, (double)0.75f);
    double bias = lj_attr_float(d, AK_bias, 1.0);
    int64_t size = lj_attr_int(d, AK_size, 1);
    int64_t nb = lj_dim(d, 1, 0), c = lj_dim(d, 1, 1);
    int64_t inner = nb * c ? lj_numel(d, 1) / (nb * c) : 0;
    int64_t down = (size - 1) / 2, up = size / 2;
    for (int64_t u = lo; u < hi && u < nb * c; u++) {
        int64_t b = u / c, ch = u % c;
        int64_t k0 = ch - down < 0 ? 0 : ch - down, k1 = ch + up >= c ? c - 1 : ch + up;
        for (int64_t i = 0; i < inner; i++) {
            double sq = 0;
            for (int64_t k = k0; k <= k1; k++) {
                double v = lj_ld_f64(ex, ops[1], (b * c + k) * inner + i);
                sq += v * v;
            }
            int64_t at = u * inner + i;
            double scale = pow(bias + alpha / (double)size * sq, beta);
            lj_st_f64(ey, ops[0], at, lj_ld_f64(ex, ops[1], at) / scale);
        }
    }
}

/* ---- det ------------------------------------------------------------------------------ */

/* det_lu: core/det.h. */

LJ_INLINE int64_t det_order(const int64_t *d) {
    return lj_dim(d, 1, lj_rank(d, 1) - 1);
}

LIBJIT_WORK libjit_det_any_work(const int64_t *d) {
    return lj_numel(d, 0) > 0 ? lj_numel(d, 0) : 1;
}

LIBJIT_SCRATCH libjit_det_any_scratch(const int64_t *d, int slot) {
    int64_t n = det_order(d);
    return slot == LJ_SCRATCH_PLANES ? (n * n + 1) * (int64_t)sizeof(double) : 0;
}

/* Units: matrices. */
LIBJIT_KERNEL libjit_det_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                             LjScratch *sc) {
    int ey = lj_elem(d, 0), ex = lj_elem(d, 1);
    int64_t n = det_order(d), nmat = lj_numel(d, 0);
    double *m = lj_scratch_get(sc, LJ_SCRATCH_PLANES, (size_t)(n * n + 1) * sizeof(double));
    if (!m) {
        lj_fail_run(sc, LJ_NO_SCRATCH);
        return;
    }
    for (int64_t b = lo; b < hi && b < nmat; b++) {
        for (int64_t i = 0; i < n * n; i++)
            m[i] = lj_ld_f64(ex, ops[1], b * n * n + i);
        lj_st_f64(ey, ops[0], b, det_lu(m, n));
    }
    lj_scratch_put(sc, m);
}

/* ---- max_unpool ------------------------------------------------------------------------- */

LJ_INLINE int64_t ints_or(const int64_t *d, int key, int i, int64_t dflt) {
    int n;
    const int64_t *v = lj_attr(d, key, &n);
    return v && i < n ? v[i] : dflt;
}

LIBJIT_WORK libjit_max_unpool_any_work(const int64_t *d) {
    return 1;
}

/* Operands: y, x, indices. y is zero but where an index puts an element of
 * x; indices are flat over the unpooled size (x's spatial dims grown back
 * by the window), which may differ from y's declared one. One unit: two
 * indices may name one element, and the last one wins as in the
 * interpreter. An index the interpreter refuses (outside) is skipped. */
LIBJIT_KERNEL libjit_max_unpool_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                    LjScratch *sc) {
    int rank = lj_rank(d, 1), ns = rank - 2, ei = lj_elem(d, 2);
    size_t es = lj_elem_size(lj_elem(d, 0));
    int64_t src[DESC_MAX_RANK], total = 1;
    for (int i = 0; i < rank; i++) {
        src[i] = lj_dim(d, 1, i);
        if (i >= 2)
            src[i] = (src[i] - 1) * ints_or(d, AK_strides, i - 2, 1) + ints_or(d, AK_kernel, i - 2, 1) -
                     ints_or(d, AK_pads, i - 2, 0) - ints_or(d, AK_pads, i - 2 + ns, 0);
        total *= src[i];
    }
    memset(ops[0], 0, (size_t)lj_numel(d, 0) * es);
    for (int64_t i = 0; i < lj_numel(d, 1); i++) {
        int64_t k = lj_ld_i64(ei, ops[2], i), off = 0, stride = 1, r = k;
        bool inside = k >= 0 && k < total;
        for (int a = rank - 1; a >= 0 && inside; a--) {
            int64_t c = r % src[a];
            r /= src[a];
            inside = c < lj_dim(d, 0, a);
            off += c * stride;
            stride *= lj_dim(d, 0, a);
        }
        if (inside)
            memcpy((char *)ops[0] + (size_t)off * es, (const char *)ops[1] + (size_t)i * es, es);
    }
}
