/* The f32 matrix product engine (gemm.h), blocked after Goto and van de
 * Geijn, "Anatomy of high-performance matrix multiplication" (2008), in the
 * loop order of BLIS.
 *
 * Register tile: MR rows of C by NV vectors of 16 columns. Per step of k
 * the microkernel loads NV vectors of packed B and broadcasts MR entries of
 * A straight from memory (the broadcast folds into the FMA as a memory
 * operand), so a tile costs MR*NV accumulators + NV B registers. With the 32
 * zmm registers of AVX-512, MR = 8 and NV = 3 (24 accumulators) leaves room
 * for the B vectors and does 24 FMAs per 3 + 8 loads: enough independent
 * accumulators to cover the FMA latency (4 cycles x 2 ports needs 8) and
 * fewer loads than FMAs, so the two FMA ports stay the limit. MR = 8 also
 * divides the channel counts of the common CNNs, so row tails are rare; the
 * 48-column width keeps tails small on 56-, 28- and 14-wide feature maps.
 *
 * Blocking, from the outside in:
 *   j0: NC columns of C -- its m x NC block stays in L2 across the k passes;
 *   k0: KC deep -- the A block (m x KC) is read from L2 once per B panel;
 *   jr: one B panel (KC x 48, packed contiguously) -- it stays in L1 while
 *   i0: every MR-row tile of C consumes it.
 * KC is picked per product so that the A block fits half of L2. */
#include "backends/cpu/libjit/gemm.h"

enum {
    MR = 8,          /* rows of the register tile */
    NV = 3,          /* 16-lane vectors across it */
    NR = NV * LJ_VL, /* its columns */
    KC_MAX = 256,    /* B panel 256 x 48 floats = 48 KB: most of L1 */
    KC_MIN = 64,
    NC = 480,        /* C block columns */
    L2_BUDGET = 1 << 20,
};

enum { FIRST = 1, LAST = 2 };

typedef struct Tile {
    const float *a; /* MR rows of A at the block's first k */
    int64_t lda;
    const float *b; /* B panel: kc steps of nv*16 floats, bs floats apart */
    int64_t bs;
    float *c;
    int64_t ldc;
    int64_t ncols; /* valid columns in the tile (<= nv*16) */
    unsigned flags;
    const float *bias_row, *bias_col; /* at the tile's first row / column */
    LjAct act;
} Tile;

/* acc[r][v] starts from the bias (first k block) or from C (later ones). */
#define TILE_LOOP_R _Pragma("clang loop unroll(full)") for (int r = 0; r < mr; r++)
#define TILE_LOOP_V _Pragma("clang loop unroll(full)") for (int v = 0; v < nv; v++)

LJ_INLINE v16f load_c(const float *p, int64_t valid) {
    return valid >= LJ_VL ? lj_load(p) : lj_load_part(p, valid);
}

LJ_INLINE void store_c(float *p, v16f x, int64_t valid) {
    if (valid >= LJ_VL)
        lj_store(p, x);
    else
        lj_store_part(p, x, valid);
}

/* The microkernel for an mr x nv tile; mr and nv are constants in every
 * specialisation (tile_kernel's switch), so the loops unroll and acc lives
 * in registers. */
LJ_INLINE void tile_body(const int mr, const int nv, int64_t kc, const Tile *t) {
    v16f acc[MR][NV];
    const bool whole = t->ncols == nv * LJ_VL;
    TILE_LOOP_R {
        TILE_LOOP_V {
            int64_t valid = t->ncols - v * LJ_VL;
            if (!(t->flags & FIRST))
                acc[r][v] = whole ? lj_load(t->c + r * t->ldc + v * LJ_VL)
                                  : load_c(t->c + r * t->ldc + v * LJ_VL, valid);
            else if (t->bias_row)
                acc[r][v] = lj_splat(t->bias_row[r]);
            else if (t->bias_col)
                acc[r][v] = whole ? lj_load(t->bias_col + v * LJ_VL)
                                  : load_c(t->bias_col + v * LJ_VL, valid);
            else
                acc[r][v] = lj_splat(0);
        }
    }
    const float *a = t->a, *b = t->b;
    const int64_t lda = t->lda, bs = t->bs;
    for (int64_t k = 0; k < kc; k++, b += bs) {
        v16f bv[NV];
        TILE_LOOP_V { bv[v] = lj_load(b + v * LJ_VL); }
        TILE_LOOP_R {
            float av = a[r * lda + k];
            TILE_LOOP_V { acc[r][v] += av * bv[v]; }
        }
    }
    TILE_LOOP_R {
        TILE_LOOP_V {
            v16f x = acc[r][v];
            if (t->flags & LAST)
                x = lj_act(x, t->act);
            float *p = t->c + r * t->ldc + v * LJ_VL;
            if (whole)
                lj_store(p, x);
            else
                store_c(p, x, t->ncols - v * LJ_VL);
        }
    }
}

#define TILE_CASE(R)                                                                            \
    case R:                                                                                     \
        if (nv == 3)                                                                            \
            tile_body(R, 3, kc, t);                                                             \
        else if (nv == 2)                                                                       \
            tile_body(R, 2, kc, t);                                                             \
        else                                                                                    \
            tile_body(R, 1, kc, t);                                                             \
        return;

LJ_VECTOR_FN static void tile_kernel(int mr, int nv, int64_t kc, const Tile *t) {
    switch (mr) {
        TILE_CASE(8)
        TILE_CASE(7)
        TILE_CASE(6)
        TILE_CASE(5)
        TILE_CASE(4)
        TILE_CASE(3)
        TILE_CASE(2)
        TILE_CASE(1)
    }
}

/* ---- packing B ----------------------------------------------------------- */

/* Panel[k][0 .. w) = B[k0 + k][j0 .. j0 + cols), zero beyond cols (w is
 * nv*16 >= cols). */
static void pack_plain(const LjGemm *g, int64_t k0, int64_t kc, int64_t j0, int64_t cols, int w,
                       float *panel) {
    for (int64_t k = 0; k < kc; k++) {
        const float *src = g->b + (k0 + k) * g->ldb + j0;
        float *dst = panel + k * w;
        int64_t j = 0;
        for (; j + LJ_VL <= cols; j += LJ_VL)
            lj_store(dst + j, lj_load(src + j));
        for (; j < cols; j++)
            dst[j] = src[j];
        for (; j < w; j++)
            dst[j] = 0;
    }
}

/* dst[0 .. n) = x[row][col0 + i*stride], 0 where a column falls outside
 * [0, w) (row is inside). */
LJ_INLINE void gather_run(float *dst, const float *xrow, int64_t w, int64_t col0, int64_t stride,
                          int64_t n) {
    /* The columns inside the input: i in [lo, hi). */
    int64_t lo = col0 >= 0 ? 0 : (-col0 + stride - 1) / stride;
    int64_t hi = col0 >= w ? 0 : (w - col0 + stride - 1) / stride;
    if (hi > n)
        hi = n;
    if (lo > hi)
        lo = hi;
    int64_t i = 0;
    for (; i < lo; i++)
        dst[i] = 0;
    const float *src = xrow + col0;
    if (stride == 1) {
        for (; i + LJ_VL <= hi; i += LJ_VL)
            lj_store(dst + i, lj_load(src + i));
        for (; i < hi; i++)
            dst[i] = src[i];
    } else {
        for (; i < hi; i++)
            dst[i] = src[i * stride];
    }
    for (; i < n; i++)
        dst[i] = 0;
}

/* The panel of a convolution's column matrix: each of its kc rows is the
 * input plane of one (channel, kernel tap), sampled at the output
 * positions j0 .. j0 + cols, walked one output row at a time. */
static void pack_im2col(const LjIm2col *q, int64_t k0, int64_t kc, int64_t j0, int64_t cols,
                        int w, float *panel) {
    int64_t taps = q->kh * q->kw;
    for (int64_t k = 0; k < kc; k++) {
        int64_t kk = k0 + k, c = kk / taps, tap = kk % taps;
        int64_t i = tap / q->kw, j = tap % q->kw;
        const float *plane = q->x + c * q->h * q->w;
        float *dst = panel + k * w;
        int64_t oy = j0 / q->ow, ox = j0 % q->ow, done = 0;
        while (done < cols) {
            int64_t run = q->ow - ox < cols - done ? q->ow - ox : cols - done;
            int64_t y = oy * q->sh - q->ph + i * q->dh;
            if (y < 0 || y >= q->h) {
                for (int64_t t = 0; t < run; t++)
                    dst[done + t] = 0;
            } else {
                gather_run(dst + done, plane + y * q->w, q->w, ox * q->sw - q->pw + j * q->dw,
                           q->sw, run);
            }
            done += run;
            ox = 0;
            oy++;
        }
        for (int64_t t = cols; t < w; t++)
            dst[t] = 0;
    }
}

/* ---- the blocked product ------------------------------------------------- */

/* KC: as deep as allowed while the m x KC block of A fits the L2 budget;
 * then evened out so the last k block is not a sliver. */
static int64_t pick_kc(const LjGemm *g) {
    int64_t kc = L2_BUDGET / (4 * (g->m > 0 ? g->m : 1));
    kc = kc > KC_MAX ? KC_MAX : kc < KC_MIN ? KC_MIN : kc;
    int64_t blocks = (g->k + kc - 1) / kc;
    return blocks ? (g->k + blocks - 1) / blocks : 1;
}

/* A plain B that feeds few rows of A (fully_connected at batch 1: one) is read
 * in place: packing would copy each element to use it once or twice. The
 * last, partial panel is still packed, so that no load runs past a row. */
static bool packs_b(const LjGemm *g) {
    return g->im2col || g->m >= 2 * MR;
}

LJ_VECTOR_FN void lj_sgemm(const LjGemm *g) {
    float panel[KC_MAX * NR] __attribute__((aligned(64)));
    if (g->m <= 0 || g->n <= 0)
        return;
    bool packed = packs_b(g);
    int64_t kc_max = pick_kc(g);
    for (int64_t j0 = 0; j0 < g->n; j0 += NC) {
        int64_t nc = g->n - j0 < NC ? g->n - j0 : NC;
        /* k == 0: C is bias (+ act) alone; one pass with an empty panel. */
        int64_t k0 = 0;
        do {
            int64_t kc = g->k - k0 < kc_max ? g->k - k0 : kc_max;
            unsigned flags = (k0 == 0 ? FIRST : 0) | (k0 + kc >= g->k ? LAST : 0);
            for (int64_t jr = 0; jr < nc; jr += NR) {
                int64_t cols = nc - jr < NR ? nc - jr : NR;
                int nv = (int)((cols + LJ_VL - 1) / LJ_VL);
                Tile t = {.lda = g->lda, .b = panel, .bs = nv * LJ_VL, .ldc = g->ldc,
                          .ncols = cols, .flags = flags, .act = g->act};
                if (g->im2col)
                    pack_im2col(g->im2col, k0, kc, j0 + jr, cols, nv * LJ_VL, panel);
                else if (packed || cols < NR)
                    pack_plain(g, k0, kc, j0 + jr, cols, nv * LJ_VL, panel);
                else
                    t.b = g->b + k0 * g->ldb + j0 + jr, t.bs = g->ldb;
                if (g->bias && !g->bias_rows)
                    t.bias_col = g->bias + j0 + jr;
                for (int64_t i0 = 0; i0 < g->m; i0 += MR) {
                    int mr = g->m - i0 < MR ? (int)(g->m - i0) : MR;
                    t.a = g->a + i0 * g->lda + k0;
                    t.c = g->c + i0 * g->ldc + j0 + jr;
                    t.bias_row = g->bias && g->bias_rows ? g->bias + i0 : NULL;
                    tile_kernel(mr, nv, kc, &t);
                }
            }
            k0 += kc;
        } while (k0 < g->k);
    }
}
