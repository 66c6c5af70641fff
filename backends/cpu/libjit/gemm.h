/* The f32 matrix product behind conv, fully_connected and matmul:
 *
 *     C[m][n] = act(sum_k A[m][k] * B[k][n] + bias + S[m][n])
 *
 * (S, a fused residual add's summand, optional, laid out as C.)
 *
 * A is read in place (row-major, any leading dimension): its entries are
 * broadcast, so it needs no packing -- which matters because A is usually a
 * constant weight matrix that would otherwise be copied on every call. B is
 * the vector operand: a row-major matrix (packed panel by panel), or rows
 * given by offsets into one buffer -- a convolution's column matrix, whose
 * row for (channel, tap) is a run of the input's phase planes (window.h),
 * so that the column matrix never exists. */
#ifndef GLOWC_LIBJIT_GEMM_H
#define GLOWC_LIBJIT_GEMM_H

#include "backends/cpu/libjit/vec.h"

/* The register tile (gemm.c): MR rows of C by NV vectors, 24 accumulators
 * and 3 B vectors of the target's 32 registers; NR columns. Callers that
 * split a product block it in multiples of these. */
enum { LJ_GEMM_MR = 8, LJ_GEMM_NV = 3, LJ_GEMM_NR = LJ_GEMM_NV * LJ_VL };

typedef struct LjGemm {
    int64_t m, n, k;
    const float *a;
    int64_t lda;
    const float *b; /* B[k][n] = b[k*ldb + n] */
    int64_t ldb;
    /* Or B by row offsets (a convolution's phase planes, k_conv.c): the
     * product's columns are output positions p = n0 + n of a map ow wide
     * whose planes are wq wide, B[k][n] = b[koff[k] + (p / ow) * wq + p % ow]
     * (koff[k] may be negative, the sum not), and C is plain (c at column
     * n0, ldc apart). No column is computed to be dropped, which the planes'
     * wider rows would cost (a 1x7 window on a 17x17 map: 23 columns a row
     * for 17). B's panels are packed run by run (pack_dense). Bias per
     * row. B must be readable LJ_VL - 1 floats past every run (the
     * packing copies whole vectors; k_conv.c pads its planes). */
    const int64_t *koff;
    int64_t wq, ow;
    int64_t n0;
    float *c;
    int64_t ldc;
    const float *bias; /* NULL, or one value per row (bias_rows) or per column */
    bool bias_rows;
    /* NULL, or the summand: S[m][n] = sum[m*ldc + n], added after the
     * product and the bias, before act. Read at the positions C is written,
     * and only by the last k block's epilogue, so it must not be C itself:
     * earlier k blocks store partial sums in C. */
    const float *sum;
    LjAct act;
    LjScratch *sc; /* the deep packing block's buffer; NULL: malloc per call */
    /* NULL, or B already packed whole by lj_sgemm_pack for a product of
     * the same B (any rows of A): the tiles read it and nothing is packed. */
    const float *packed;
    /* NULL, or (lj_sgemm_amx only) B already split whole for the tiles by
     * lj_sgemm_amx_split, all of its columns from 0 and all of k: nothing
     * is split per call, and B itself is not read. */
    const uint16_t *bsplit;
    /* A B's last n % LJ_VL columns as dot products along A's rows
     * where that is cheaper than a vector of B per row (gemv.c): only for
     * callers whose every share of a product starts at a multiple of
     * LJ_VL columns, so the same columns are the tail whatever the split. */
    bool tail_dots;
} LjGemm;

/* The whole product on the calling thread. Threads split it by rows: each
 * takes a slice of A, C and a per-row bias. */
void lj_sgemm(const LjGemm *g);
/* One row or one column (gemv.c): the product streamed through the matrix
 * operand once; false (nothing done) for other shapes. lj_sgemm tries it
 * first. */
bool lj_sgemv(const LjGemm *g);
/* With tail_dots: how many of C's last columns are dot products (0 when
 * none are), their columns of B gathered into bt (LJ_SGEMM_TAIL_FLOATS);
 * then rows [i0, i1) of them. lj_sgemm runs each row tile's dot products
 * right after the tile, while its rows of A are still in cache: a pass of
 * its own read all of A again from memory (a 512-channel 3x3 conv's 9 MB,
 * 22% of its time). */
enum { LJ_SGEMM_TAIL_MAX = 8, LJ_SGEMM_TAIL_K = 8192 };
enum { LJ_SGEMM_TAIL_FLOATS = LJ_SGEMM_TAIL_K + LJ_SGEMM_TAIL_MAX * LJ_VL };
int64_t lj_sgemm_tail_gather(const LjGemm *g, float *bt);
void lj_sgemm_tail_rows(const LjGemm *g, const float *bt, int64_t t, int64_t i0, int64_t i1);
/* How many of C's last columns tail_dots makes dot products (0: none). */
int64_t lj_sgemm_tail_cols(const LjGemm *g);
/* B packed whole (every column but tail_dots' ones, all of k), for
 * products over the same B that the threads of a call run by rows of A
 * (k_conv.c): the floats it takes, in how many items it is packed, and
 * item i into `packed` (items independent: any thread may pack any). */
int64_t lj_sgemm_packed_floats(const LjGemm *g);
int64_t lj_sgemm_pack_items(const LjGemm *g);
void lj_sgemm_pack(const LjGemm *g, float *packed, int64_t item);
/* The scratch lj_sgemm asks for an m x n x k product (by_offsets: B's
 * rows by koff), in bytes. */
size_t lj_sgemm_scratch(int64_t m, int64_t n, int64_t k, bool by_offsets);
/* Rows [k0, k0 + kc) of columns [j0, j0 + cols) of a B by row offsets
 * into panel[k][0 .. w) (w a multiple of LJ_VL, >= cols), zero beyond
 * cols: the runs' copy the blocked product packs its panels with. */
void lj_sgemm_pack_runs(const LjGemm *g, int64_t k0, int64_t kc, int64_t j0, int64_t cols, int w,
                        float *panel);

/* The whole product on Intel AMX's bf16 tiles, each operand split in two
 * bf16s (gemm_amx.c: its error bound), in LJ_SGEMM_AMX_BYTES of the
 * scratch's LJ_SCRATCH_PACK slot; false (nothing done) where the system
 * refuses the tiles or the scratch cannot be had. Only code for a target
 * with amx-bf16 may call it (its name marks it: cpu_prepare_module). */
/* C's rows [i0, i0 + mv) by columns [j, j + cols) (at most 32 of each)
 * from the sums t[r][32]: the bias, the summand, the activation. */
void lj_sgemm_finish(const LjGemm *g, const float *t, int64_t i0, int64_t j, int64_t mv,
                     int64_t cols);
enum { LJ_SGEMM_AMX_BYTES = 512 << 10 };
bool lj_sgemm_amx(const LjGemm *g);
/* Whether the system gives this thread AMX's tiles (asked once per
 * thread's scratch). */
bool lj_sgemm_amx_ready(LjScratch *sc);
/* B split whole for lj_sgemm_amx (LjGemm.bsplit): its bytes for n columns
 * by k, and columns [j0, j1) of g's B (j0 a multiple of 16), all of k, into
 * their place in out, g's column 0 being B's column `at` (a multiple of 16;
 * `last`: they end B, whose odd last tile gets its pair of zeros); false
 * where a value is infinite or NaN (the split
 * cannot carry it). Threads that split a product's rows share one such B,
 * each splitting some of its columns. */
size_t lj_sgemm_amx_split_bytes(int64_t n, int64_t k);
bool lj_sgemm_amx_split(const LjGemm *g, int64_t j0, int64_t j1, bool last, int64_t at,
                        uint16_t *out);
/* lj_sgemm_amx, or lj_sgemm where it says no. Whether a product takes
 * the tiles must not depend on how threads split it (their shares would
 * round differently): callers decide by the whole product's shape. */
void lj_sgemm_amx_any(const LjGemm *g);
typedef void LjGemmFn(const LjGemm *g);
/* The AMX entry points a kernel is given (k_conv.c), so that the code it
 * shares with the FMA kernel names none of them. */
typedef struct LjAmxOps {
    LjGemmFn *gemm; /* lj_sgemm_amx_any */
    bool (*product)(const LjGemm *g); /* lj_sgemm_amx */
    bool (*ready)(LjScratch *sc);
    size_t (*split_bytes)(int64_t n, int64_t k);
    bool (*split)(const LjGemm *g, int64_t j0, int64_t j1, bool last, int64_t at, uint16_t *out);
} LjAmxOps;

#endif
