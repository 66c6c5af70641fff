/* Matrix products, f32: fully_connected (x [M,K] . w [K,N] + b [N], fused
 * activation) and matmul (numpy: batch axes broadcast, 1-D operands
 * promoted), both on the engine of gemm.c with the left operand broadcast
 * and the right one as vectors -- so the weights of fully_connected are
 * the vector operand, read in place at batch 1.
 *
 * Threads split the columns (and matmul's batches): at batch 1 a
 * fully_connected has one row, and columns are what there is to share.
 * matmul_any is the plain product for every other element kind. */
#include "backends/cpu/libjit/elem.h"
#include "backends/cpu/libjit/gemm.h"
#include "backends/cpu/libjit/kernels.h"

enum { COLS_PER_UNIT = 192 }; /* four 48-column panels */

LJ_INLINE int64_t col_units(int64_t n) {
    return n > 0 ? (n + COLS_PER_UNIT - 1) / COLS_PER_UNIT : 1;
}

/* ---- fully_connected ------------------------------------------------------ */

LIBJIT_WORK libjit_fully_connected_f32_work(const int64_t *d) {
    return col_units(lj_dim(d, 0, 1));
}

/* One call over all units is one product of all the columns. */
LIBJIT_SCRATCH libjit_fully_connected_f32_scratch(const int64_t *d, int slot) {
    return slot == LJ_SCRATCH_PACK ? (int64_t)lj_sgemm_scratch(lj_dim(d, 0, 0), lj_dim(d, 0, 1),
                                                               lj_dim(d, 1, 1), false)
                                   : 0;
}

/* Operands: 0 y [M,N], 1 x [M,K], 2 w [K,N], 3 b [N]. */
LIBJIT_KERNEL libjit_fully_connected_f32(const int64_t *d, void *const *ops, int64_t lo,
                                         int64_t hi, LjScratch *sc) {
    int64_t m = lj_dim(d, 0, 0), n = lj_dim(d, 0, 1), k = lj_dim(d, 1, 1);
    int64_t j0 = lo * COLS_PER_UNIT, j1 = hi * COLS_PER_UNIT < n ? hi * COLS_PER_UNIT : n;
    if (j0 >= j1)
        return;
    const float *x = ops[1], *w = ops[2], *b = ops[3];
    float *y = ops[0];
    LjGemm g = {
        .m = m,
        .n = j1 - j0,
        .k = k,
        .a = x,
        .lda = k,
        .b = w + j0,
        .ldb = n,
        .c = y + j0,
        .ldc = n,
        .bias = b + j0,
        .act = lj_act_of(d),
        .sc = sc,
    };
    lj_sgemm(&g);
}

/* ---- matmul --------------------------------------------------------------- */

/* A matmul's shape: batch axes (broadcast), then M x K by K x N. */
typedef struct MatmulShape {
    int64_t m, k, n, nbatch;
    int brank;
    int64_t bdims[DESC_MAX_RANK], sa[DESC_MAX_RANK], sb[DESC_MAX_RANK];
} MatmulShape;

/* Operand `op`'s matrix stride along each output batch axis (0: broadcast). */
LJ_INLINE void batch_strides(const int64_t *d, int op, int brank, int64_t mat, int64_t *st) {
    int r = lj_rank(d, op) - 2;
    int64_t s = mat;
    for (int i = brank - 1; i >= 0; i--) {
        int j = i - (brank - r);
        int64_t dim = j >= 0 ? lj_dim(d, op, j) : 1;
        st[i] = dim == 1 ? 0 : s;
        s *= dim;
    }
}

LJ_INLINE MatmulShape matmul_shape(const int64_t *d) {
    MatmulShape s = {0};
    int ra = lj_rank(d, 1), rb = lj_rank(d, 2);
    s.m = ra >= 2 ? lj_dim(d, 1, ra - 2) : 1;
    s.k = lj_dim(d, 1, ra - 1);
    s.n = rb >= 2 ? lj_dim(d, 2, rb - 1) : 1;
    s.brank = (ra > rb ? ra : rb) - 2;
    if (s.brank < 0)
        s.brank = 0;
    s.nbatch = 1;
    /* The output's batch axes: its leading axes, before the matrix ones
     * (a 1-D operand leaves one of M, N out of the output's shape). */
    int ry = lj_rank(d, 0);
    for (int i = 0; i < s.brank; i++) {
        s.bdims[i] = lj_dim(d, 0, ry - (ra >= 2 && rb >= 2 ? 2 : 1) - s.brank + i);
        s.nbatch *= s.bdims[i];
    }
    if (ra > 2)
        batch_strides(d, 1, s.brank, s.m * s.k, s.sa);
    if (rb > 2)
        batch_strides(d, 2, s.brank, s.k * s.n, s.sb);
    return s;
}

/* Operands of other kinds: matmul_any, over its own units (kernels.h). */
LJ_INLINE bool matmul_f32(const int64_t *d) {
    return lj_elem(d, 1) == ELEM_F32 && lj_elem(d, 2) == ELEM_F32;
}

LIBJIT_WORK libjit_matmul_f32_work(const int64_t *d) {
    if (!matmul_f32(d))
        return libjit_matmul_any_work(d);
    MatmulShape s = matmul_shape(d);
    return s.nbatch * col_units(s.n);
}

/* One call over all units is one product of all the columns per batch. */
LIBJIT_SCRATCH libjit_matmul_f32_scratch(const int64_t *d, int slot) {
    if (slot != LJ_SCRATCH_PACK || !matmul_f32(d))
        return 0;
    MatmulShape s = matmul_shape(d);
    return (int64_t)lj_sgemm_scratch(s.m, s.n, s.k, false);
}

/* ---- matmul of every kind ---------------------------------------------------- */

/* As the interpreter's: each element a dot product in k order, in double
 * for floats, in wrapping int64 for integers, rounded once on store.
 * Units: output rows (batch, m). */
LIBJIT_WORK libjit_matmul_any_work(const int64_t *d) {
    MatmulShape s = matmul_shape(d);
    return s.nbatch * s.m > 0 ? s.nbatch * s.m : 1;
}

LIBJIT_KERNEL libjit_matmul_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                LjScratch *sc) {
    MatmulShape s = matmul_shape(d);
    int ey = lj_elem(d, 0), ea = lj_elem(d, 1), eb = lj_elem(d, 2);
    bool flt = lj_is_float(ey);
    for (int64_t row = lo; row < hi && row < s.nbatch * s.m; row++) {
        int64_t batch = row / s.m, m = row % s.m, oa = 0, ob = 0, rest = batch;
        for (int i = s.brank - 1; i >= 0; i--) {
            int64_t idx = rest % s.bdims[i];
            rest /= s.bdims[i];
            oa += idx * s.sa[i];
            ob += idx * s.sb[i];
        }
        for (int64_t n = 0; n < s.n; n++) {
            double acc = 0;
            uint64_t iacc = 0;
            for (int64_t k = 0; k < s.k; k++) {
                int64_t ia = oa + m * s.k + k, ib = ob + k * s.n + n;
                if (flt)
                    acc += lj_ld_f64(ea, ops[1], ia) * lj_ld_f64(eb, ops[2], ib);
                else
                    iacc += (uint64_t)lj_ld_i64(ea, ops[1], ia) * (uint64_t)lj_ld_i64(eb, ops[2], ib);
            }
            if (flt)
                lj_st_f64(ey, ops[0], row * s.n + n, acc);
            else
                lj_st_i64(ey, ops[0], row * s.n + n, (int64_t)iacc);
        }
    }
}

LIBJIT_KERNEL libjit_matmul_f32(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                LjScratch *sc) {
    if (!matmul_f32(d)) {
        libjit_matmul_any(d, ops, lo, hi, sc);
        return;
    }
    MatmulShape s = matmul_shape(d);
    int64_t per = col_units(s.n);
    const float *a = ops[1], *b = ops[2];
    float *y = ops[0];
    for (int64_t u = lo; u < hi;) {
        int64_t batch = u / per, last = (batch + 1) * per < hi ? (batch + 1) * per : hi;
        int64_t j0 = (u % per) * COLS_PER_UNIT;
        int64_t j1 = (last - batch * per) * COLS_PER_UNIT;
        j1 = j1 < s.n ? j1 : s.n;
        int64_t oa = 0, ob = 0, rest = batch;
        for (int i = s.brank - 1; i >= 0; i--) {
            int64_t idx = rest % s.bdims[i];
            rest /= s.bdims[i];
            oa += idx * s.sa[i];
            ob += idx * s.sb[i];
        }
        LjGemm g = {
            .m = s.m,
            .n = j1 - j0,
            .k = s.k,
            .a = a + oa,
            .lda = s.k,
            .b = b + ob + j0,
            .ldb = s.n,
            .c = y + batch * s.m * s.n + j0,
            .ldc = s.n,
            .sc = sc,
        };
        lj_sgemm(&g);
        u = last;
    }
}
