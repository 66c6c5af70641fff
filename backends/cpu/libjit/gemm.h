/* The f32 matrix product behind conv, fully_connected and matmul:
 *
 *     C[m][n] = act(sum_k A[m][k] * B[k][n] + bias)
 *
 * A is read in place (row-major, any leading dimension): its entries are
 * broadcast, so it needs no packing -- which matters because A is usually a
 * constant weight matrix that would otherwise be copied on every call. B is
 * the vector operand; it is packed panel by panel, either from a row-major
 * matrix or straight from a convolution's input (im2col done on the fly, so
 * the column matrix never exists whole). */
#ifndef GLOWC_LIBJIT_GEMM_H
#define GLOWC_LIBJIT_GEMM_H

#include "backends/cpu/libjit/vec.h"

/* A 2-D convolution seen as the B operand: B[(c*kh + i)*kw + j][oy*ow + ox]
 * = x[c][oy*sh - ph + i*dh][ox*sw - pw + j*dw], 0 outside the input. */
typedef struct LjIm2col {
    const float *x; /* [c][h][w] of one image and one group */
    int64_t h, w, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow;
} LjIm2col;

typedef struct LjGemm {
    int64_t m, n, k;
    const float *a;
    int64_t lda;
    const float *b; /* B[k][n] with leading dimension ldb, when im2col is NULL */
    int64_t ldb;
    const LjIm2col *im2col;
    float *c;
    int64_t ldc;
    const float *bias; /* NULL, or one value per row (bias_rows) or per column */
    bool bias_rows;
    LjAct act;
} LjGemm;

/* The whole product on the calling thread. Threads split it by rows: each
 * takes a slice of A, C and a per-row bias. */
void lj_sgemm(const LjGemm *g);

#endif
