/* The f32 products of gemm.h with one row or one column: memory-bound, so
 * shaped around reading the matrix operand once, front to back.
 *
 *  - One row (fully_connected at batch 1: C[0][n] = sum_k A[0][k] B[k][n]):
 *    gemm.c's tiles walked B a 48-column panel at a time down 256 rows
 *    4 KB apart (for a 1000-wide classifier): 192 bytes a row, a short run
 *    for the prefetchers (the likely cost); with one row of A there is no
 *    reuse to block for. Here the row of C, a chunk of it at a time, stays
 *    in L1 while four rows of B at once stream through it whole: four
 *    sequential streams, each element read once (MobileNet-V2's and
 *    EfficientNet-B0's 1280 x 1000 classifier, alone, one thread, under
 *    load: 0.100 -> 0.072 ms with the weights in cache, 0.46 -> 0.37 ms
 *    from memory).
 *  - One column (a 1x1 convolution on a 1x1 map: EfficientNet's
 *    squeeze-excite, C[m][0] = sum_k A[m][k] B[k][0]): the tiles broadcast
 *    A and used one lane of sixteen; here each output is a dot product
 *    along a row of A, contiguous, with the column of B in vectors.
 *  - A few last columns (tail_dots: a 1x1 convolution on a 7x7 map has 49
 *    columns, three vectors and one column): the tiles gave the one column
 *    a vector of its own, 16 lanes of multiply-adds for one of use, a
 *    quarter of the product; as dot products along A's rows, against the
 *    tail columns gathered once, it costs k/16 multiply-adds a row. The
 *    same for a convolution's dense product over its phase planes (3x3
 *    stride 2 onto 7x7, inception's 17x17 maps: 289 = 18 vectors and one). */
#include "backends/cpu/libjit/gemm.h"

enum {
    VL = LJ_VL,
    CHUNK = 1024, /* floats of the row of C kept in L1: 4 KB */
    ROWS = 4,     /* rows of A (one column) at a time */
    B_ROWS = 8,   /* rows of B (one row) at a time */
};

/* R is a constant in every caller, so the rows' loops unroll whole and
 * their vectors stay in registers. */
#pragma clang diagnostic ignored "-Wpass-failed"
#define LOOP_R _Pragma("clang loop unroll(full)") for (int r = 0; r < R; r++)

/* acc[0 .. n) += sum over rows r < R of x[r] * b[r*ldb + 0 .. n). The
 * last partial vector is a whole one: acc is a CHUNK array (its lanes past
 * n are never read out), and a row of b past n is read on into the next
 * one -- its lanes zeroed -- where that stays before `end`, the matrix's
 * last element; else copied a float at a time. The copies were five
 * scalar loops a call (1000 = 62 vectors and 8 floats). */
LJ_INLINE void row_axpy(int R, float *acc, const float *x, const float *b, int64_t ldb,
                        int64_t n, const float *end) {
    vf32 xs[B_ROWS];
    LOOP_R xs[r] = lj_splat(x[r]);
    int64_t j = 0;
    for (; j + VL <= n; j += VL) {
        vf32 s = lj_load(acc + j);
        LOOP_R s += xs[r] * lj_load(b + r * ldb + j);
        lj_store(acc + j, s);
    }
    if (j < n) {
        vf32 s = lj_load(acc + j);
        LOOP_R {
            const float *p = b + r * ldb + j;
            s += xs[r] * (p + VL <= end ? lj_first(lj_load(p), n - j) : lj_load_part(p, n - j));
        }
        lj_store(acc + j, s);
    }
}

/* One row of A: C[0][j0 ..) by chunks of CHUNK columns, B_ROWS rows of B
 * at a time: that many sequential streams from memory (4: 0.171 ms for
 * MobileNet-V2's 1280 x 1000 classifier in the model, 30 GB/s; ONNX
 * Runtime 0.124). */
static void gemv_row(const LjGemm *g) {
    float acc[CHUNK] __attribute__((aligned(64)));
    const float *end = g->b + (g->k - 1) * g->ldb + g->n;
    for (int64_t j0 = 0; j0 < g->n; j0 += CHUNK) {
        int64_t nc = g->n - j0 < CHUNK ? g->n - j0 : CHUNK;
        int64_t whole = (nc + VL - 1) / VL * VL;
        for (int64_t j = 0; j < whole; j++)
            acc[j] = j >= nc ? 0.0f : !g->bias ? 0.0f : g->bias_rows ? g->bias[0] : g->bias[j0 + j];
        const float *b = g->b + j0;
        int64_t k = 0;
        for (; k + B_ROWS <= g->k; k += B_ROWS)
            row_axpy(B_ROWS, acc, g->a + k, b + k * g->ldb, g->ldb, nc, end);
        for (; k < g->k; k++)
            row_axpy(1, acc, g->a + k, b + k * g->ldb, g->ldb, nc, end);
        float *c = g->c + j0;
        for (int64_t j = 0; j < nc; j += VL) {
            vf32 x = lj_load_n(acc + j, nc - j);
            if (g->sum)
                x += lj_load_n(g->sum + j0 + j, nc - j);
            lj_store_n(c + j, lj_act(x, g->act), nc - j);
        }
    }
}

/* Rows [i0, i0 + R) of column j of C from their sums s (lanes past R
 * unused): the bias, the activation on all of them at once. */
LJ_INLINE void store_rows(const LjGemm *g, vf32 s, int64_t i0, int64_t R, int64_t j) {
    if (g->bias && g->bias_rows)
        s += lj_load_n(g->bias + i0, R);
    else if (g->bias)
        s += lj_splat(g->bias[j]);
    if (g->sum) { /* fuse-conv-add's summand, after the bias as the interpreter adds it */
        float t[VL] = {0};
        for (int64_t r = 0; r < R; r++)
            t[r] = g->sum[(i0 + r) * g->ldc + j];
        s += lj_load(t);
    }
    s = lj_act(s, g->act);
    for (int64_t r = 0; r < R; r++)
        g->c[(i0 + r) * g->ldc + j] = s[r];
}

/* Rows [i, i + R) of A dotted with the column x (k floats, contiguous),
 * lane by lane into v[0 .. R). */
LJ_INLINE void dot_rows(int R, const LjGemm *g, const float *x, int64_t i, vf32 *v) {
    vf32 acc[ROWS];
    LOOP_R acc[r] = lj_splat(0);
    const float *a = g->a + i * g->lda;
    int64_t k = 0;
    for (; k + VL <= g->k; k += VL) {
        vf32 xv = lj_load(x + k);
        LOOP_R acc[r] += lj_load(a + r * g->lda + k) * xv;
    }
    if (k < g->k) {
        vf32 xv = lj_load_part(x + k, g->k - k);
        for (int r = 0; r < R; r++)
            acc[r] += lj_load_part(a + r * g->lda + k, g->k - k) * xv;
    }
    for (int r = 0; r < R; r++)
        v[r] = acc[r];
}

/* One column of B, contiguous: C[i][0] = act(bias + A[i] . B[.][0]), VL
 * rows a block (lj_sum_rows). */
static void gemv_col(const LjGemm *g) {
    for (int64_t i0 = 0; i0 < g->m; i0 += VL) {
        int64_t R = g->m - i0 < VL ? g->m - i0 : VL, r = 0;
        vf32 v[VL];
        for (; r + ROWS <= R; r += ROWS)
            dot_rows(ROWS, g, g->b, i0 + r, v + r);
        for (; r < R; r++)
            dot_rows(1, g, g->b, i0 + r, v + r);
        for (; r < VL; r++)
            v[r] = lj_splat(0);
        store_rows(g, lj_sum_rows(v), i0, R, 0);
    }
}

/* The tail's columns, at most TAIL_MAX of them, gathered k floats each
 * (LJ_SGEMM_TAIL_FLOATS with their rounding up to vectors). */
enum { TAIL_MAX = LJ_SGEMM_TAIL_MAX, TAIL_FLOATS = LJ_SGEMM_TAIL_K };

LJ_INLINE bool tail_pays(const LjGemm *g, int64_t t) {
    /* dot products: t (k/VL multiply-adds + a horizontal sum of ~8 steps)
     * a row; the tiles: k a row for the tail's vector. At most half. */
    return t > 0 && t <= TAIL_MAX && t * g->k <= TAIL_FLOATS &&
           2 * t * (g->k / VL + 8) < g->k;
}

#define LOOP_Q _Pragma("clang loop unroll(full)") for (int q = 0; q < RB; q++)
#define LOOP_C _Pragma("clang loop unroll(full)") for (int c = 0; c < T; c++)
/* Rows i .. i + RB of A against T gathered columns bt (k floats each,
 * VL-padded), lane by lane: column c of row i + q into v[c][r + q]. Each
 * row's sums in k order, whatever RB, so the bits do not depend on how
 * rows are grouped. A vector of each row and of each column is loaded
 * once a step for RB x T multiply-adds: one row at a time loaded two
 * vectors for one multiply-add (one column: 7x7 and 17x17 maps), the load
 * ports' limit at half the FMA rate. */
LJ_INLINE void dot_tail_rows(int T, int RB, const LjGemm *g, const float *bt, int64_t kp,
                             int64_t i, vf32 (*v)[VL], int64_t r) {
    vf32 acc[TAIL_MAX][VL];
    const float *a[VL];
    LOOP_Q {
        a[q] = g->a + (i + q) * g->lda;
        LOOP_C
            acc[c][q] = lj_splat(0);
    }
    int64_t k = 0;
    for (; k + VL <= g->k; k += VL) {
        vf32 av[VL];
        LOOP_Q
            av[q] = lj_load(a[q] + k);
        LOOP_C {
            vf32 bv = lj_load(bt + c * kp + k);
            LOOP_Q
                acc[c][q] += av[q] * bv;
        }
    }
    if (k < g->k) {
        vf32 av[VL];
        LOOP_Q
            av[q] = lj_load_part(a[q] + k, g->k - k);
        LOOP_C {
            vf32 bv = lj_load(bt + c * kp + k);
            LOOP_Q
                acc[c][q] += av[q] * bv;
        }
    }
    LOOP_C
        LOOP_Q
            v[c][r + q] = acc[c][q];
}

int64_t lj_sgemm_tail_cols(const LjGemm *g) {
    int64_t t = g->n % VL;
    return g->tail_dots && g->m > 0 && tail_pays(g, t) ? t : 0;
}

LJ_VECTOR_FN int64_t lj_sgemm_tail_gather(const LjGemm *g, float *bt) {
    int64_t t = lj_sgemm_tail_cols(g);
    if (!t)
        return 0;
    int64_t kp = (g->k + VL - 1) / VL * VL, j0 = g->n - t;
    for (int64_t c = 0; c < t; c++) {
        if (g->koff) { /* by offsets: column p's run of every row of B (gemm.h) */
            int64_t p = g->n0 + j0 + c, at = p / g->ow * g->wq + p % g->ow;
            for (int64_t k = 0; k < g->k; k++)
                bt[c * kp + k] = g->b[g->koff[k] + at];
        } else {
            for (int64_t k = 0; k < g->k; k++)
                bt[c * kp + k] = g->b[k * g->ldb + j0 + c];
        }
        for (int64_t k = g->k; k < kp; k++)
            bt[c * kp + k] = 0;
    }
    return t;
}

LJ_VECTOR_FN void lj_sgemm_tail_rows(const LjGemm *g, const float *bt, int64_t t, int64_t i0,
                                     int64_t i1) {
    int64_t kp = (g->k + VL - 1) / VL * VL, j0 = g->n - t;
    for (int64_t b0 = i0; b0 < i1; b0 += VL) {
        int64_t R = i1 - b0 < VL ? i1 - b0 : VL, r = 0;
        vf32 v[TAIL_MAX][VL];
        /* A constant T keeps the accumulators in registers: with T known
         * only at run time they went through the stack on every step (a
         * store-forwarding chain, 13-20% of a 1x1 conv on a 7x7 map). One
         * column (7x7, 17x17 maps) and four (14x14) are the common tails. */
        if (t == 1)
            for (; r + 8 <= R; r += 8)
                dot_tail_rows(1, 8, g, bt, kp, b0 + r, v, r);
        if (t == 4)
            for (; r + 4 <= R; r += 4)
                dot_tail_rows(4, 4, g, bt, kp, b0 + r, v, r);
        for (; r < R; r++) {
            if (t == 1)
                dot_tail_rows(1, 1, g, bt, kp, b0 + r, v, r);
            else if (t == 4)
                dot_tail_rows(4, 1, g, bt, kp, b0 + r, v, r);
            else
                dot_tail_rows((int)t, 1, g, bt, kp, b0 + r, v, r);
        }
        for (int64_t c = 0; c < t; c++) {
            for (int64_t z = R; z < VL; z++)
                v[c][z] = lj_splat(0);
            store_rows(g, lj_sum_rows(v[c]), b0, R, j0 + c);
        }
    }
}

/* One row: the order of gemm.c's tiles (the bias, then k in order, one
 * fused multiply-add each), so a product is bit-identical whether a
 * thread's share of it has one row or more (k_conv.c's row tails).
 * One column only where the whole B is one (ldb 1): a share of one column
 * out of many (a column split's tail) stays on the tiles, whose order the
 * dot products do not keep. */
LJ_VECTOR_FN bool lj_sgemv(const LjGemm *g) {
    if (g->koff || g->m <= 0 || g->n <= 0)
        return false;
    if (g->m == 1) {
        gemv_row(g);
        return true;
    }
    if (g->n == 1 && g->ldb == 1) {
        gemv_col(g);
        return true;
    }
    return false;
}
