/* The f32 matrix product engine (gemm.h), blocked after Goto and van de
 * Geijn, "Anatomy of high-performance matrix multiplication" (2008).
 *
 * Register tile: MR rows of C by NV vectors of LJ_VL columns (gemm.h). Per step of k
 * the microkernel loads NV vectors of packed B and broadcasts MR entries of
 * A straight from memory (the broadcast folds into the FMA as a memory
 * operand), so a tile costs MR*NV accumulators + NV B registers. With the 32
 * zmm registers of AVX-512, MR = 8 and NV = 3 (24 accumulators) leaves room
 * for the B vectors and does 24 FMAs per 3 + 8 loads: enough independent
 * accumulators to cover the FMA latency (4 cycles x 2 ports needs 8) and
 * fewer loads than FMAs, so the two FMA ports stay the limit. MR = 8 also
 * divides the channel counts of the common CNNs, so row tails are rare; the
 * 48-column width (x86-64) keeps tails small on 56-, 28- and 14-wide feature maps.
 * (The tile is sized for AVX-512: with AVX2's 16 ymm registers, 24 vf32
 * accumulators spill. The bitcode is compiled for no CPU, so choosing a
 * smaller tile there needs code generation to say which CPU it targets.)
 * On AArch64 a vector is one of NEON's 32 q registers (vec.h): the same
 * 8 x 3 tile is BLIS's 8x12 armv8a sgemm kernel: 24 accumulators
 * and 3 B registers, each A entry a by-element fmla operand.
 *
 * Blocking, from the outside in (Goto's order):
 *   j0: NC columns (more for a shallow product: pick_nc): the B block
 *       (KC x NC, packed as NR-column panels) is reused by every row of C
 *       from L2;
 *   k0: KC deep -- C is reloaded between k blocks;
 *   i0: MR rows: the A micro-panel (MR x KC) stays in L1 across
 *   jr: the block's panels, streamed from L2.
 * So A, usually the weights, is read once per NC columns: once in all for
 * the small feature maps of late layers, where the weights are largest
 * (and KC is then as deep as the B block allows, pick_kc). The block lives
 * on the stack (240 KB: generated code runs on threads with the default
 * 8 MB stacks), a deep one on the heap.
 *
 * A B given by row offsets (a convolution's input, gemm.h) is blocked the
 * same way: its panel rows are runs of the phase planes, one run per
 * output row, so packing a panel is vector copies -- where im2col's index
 * arithmetic and edge tests cost a third of a 3x3 convolution's time --
 * and the product's columns are the output positions, C plain. */
#include "backends/cpu/libjit/gemm.h"

#include <stdlib.h>

enum {
    MR = LJ_GEMM_MR,
    NV = LJ_GEMM_NV,
    NR = LJ_GEMM_NR,
    KC_MAX = 256,    /* B panel 256 x 48 floats = 48 KB: most of L1 (aarch64: 12 KB) */
    KC_MIN = 64,
    NC = 240,        /* B block columns, at least: 5 panels, KC x NC = 240 KB, in L2 */
    L2_BUDGET = 1 << 20,
    BIG_BLOCK = 1 << 20, /* a deep B block on the heap: 1 MB, half of L2 */
    /* A's rows (the weights) prefetched that many floats ahead, one row a
     * step of k in turn: in a model they come from beyond L2 (ResNet-50's
     * float weights are 100 MB), 8 streams 2-4 KB apart. resnet50 1T (Xeon,
     * glowc bench medians, four alternated pairs): 58.2-59.9 -> 56.0-57.6 ms.
     * Only in the first tile of a row group in each column block (Tile's
     * fetch_a): the others find the rows in cache, and there the prefetch
     * (three instructions a step) cost 4-8% (bench_conv resnet50, hot: 183
     * -> 190 GFLOP/s without; the executable's minima 45.9-46.4 -> 45.0-45.5
     * ms, four alternated runs). */
    A_AHEAD = 64,
    /* A B read in place (few rows of A: a transformer's 32 tokens against
     * its weights as B) prefetched that many rows of k ahead: its rows are
     * ldb apart (8 KB for a 2048-wide B), a page each, which the hardware
     * prefetchers do not follow. transformer_encoder's executable (Xeon,
     * three alternated runs): 1 thread 2.67-2.76 -> 2.37 ms, 2 threads
     * 1.95 -> 1.76; 4 rows ahead the same, 16 slower; ResNet-50,
     * MobileNet-V2, EfficientNet-B0, DenseNet-121 unchanged. */
    B_AHEAD = 8,
};

enum { FIRST = 1, LAST = 2 };

typedef struct Tile {
    const float *a; /* MR rows of A at the block's first k */
    int64_t lda;
    const float *b; /* B panel: kc steps of nv*LJ_VL floats, bs floats apart */
    int64_t bs;
    float *c;
    int64_t ldc;
    int64_t ncols; /* valid columns in the tile (<= nv*LJ_VL) */
    unsigned flags;
    bool fetch_a; /* prefetch A's rows: the first tile of its rows in a block */
    const float *bias_row, *bias_col; /* at the tile's first row / column */
    const float *sum; /* the summand at the tile's first element (ldc apart), or NULL */
    LjAct act;
} Tile;

/* acc[r][v] starts from the bias (first k block) or from C (later ones). */
#define TILE_LOOP_R _Pragma("clang loop unroll(full)") for (int r = 0; r < mr; r++)
#define TILE_LOOP_V _Pragma("clang loop unroll(full)") for (int v = 0; v < nv; v++)

/* Rows [0, rows) of n floats, ldc apart, through activation a of kind K
 * (a constant in act_rows' costly cases, so that lj_act's switch folds). */
LJ_INLINE void act_rows_k(ActKind K, float *c, int64_t ldc, int64_t rows, int64_t n, LjAct a) {
    a.kind = K;
    for (int64_t r = 0; r < rows; r++) {
        float *p = c + r * ldc;
        int64_t i = 0;
        for (; i + LJ_VL <= n; i += LJ_VL)
            lj_store(p + i, lj_act(lj_load(p + i), a));
        if (i < n)
            lj_store_part(p + i, lj_act(lj_load_part(p + i, n - i), a), n - i);
    }
}

/* A tile's costly activation (sigmoid, tanh, silu), after its store: one
 * call per tile with the kind's switch outside the loops. Called per row
 * (3 vectors of a 48-column tile), the call and the switch cost nearly as
 * much as the silu itself: EfficientNet's 16->96 expansion on a 112x112
 * map took twice MobileNet's (clip) time. */
LJ_VECTOR_FN static void act_rows(float *c, int64_t ldc, int64_t rows, int64_t n, LjAct a) {
    switch (a.kind) {
    case ACT_SILU: act_rows_k(ACT_SILU, c, ldc, rows, n, a); return;
    case ACT_SIGMOID: act_rows_k(ACT_SIGMOID, c, ldc, rows, n, a); return;
    case ACT_TANH: act_rows_k(ACT_TANH, c, ldc, rows, n, a); return;
    default: act_rows_k(a.kind, c, ldc, rows, n, a);
    }
}

/* The microkernel for an mr x nv tile; mr and nv are constants in every
 * specialisation (tile_kernel's switch), so the loops unroll and acc
 * lives in registers. */
LJ_INLINE void tile_body(const int mr, const int nv, int64_t kc, const Tile *t) {
    vf32 acc[MR][NV];
    const bool whole = t->ncols == nv * LJ_VL;
    TILE_LOOP_R {
        TILE_LOOP_V {
            int64_t valid = t->ncols - v * LJ_VL;
            if (!(t->flags & FIRST))
                acc[r][v] = whole ? lj_load(t->c + r * t->ldc + v * LJ_VL)
                                  : lj_load_n(t->c + r * t->ldc + v * LJ_VL, valid);
            else if (t->bias_row)
                acc[r][v] = lj_splat(t->bias_row[r]);
            else if (t->bias_col)
                acc[r][v] = whole ? lj_load(t->bias_col + v * LJ_VL)
                                  : lj_load_n(t->bias_col + v * LJ_VL, valid);
            else
                acc[r][v] = lj_splat(0);
        }
    }
    const float *b = t->b, *ar[MR];
    const int64_t bs = t->bs;
    /* One base register a row, made opaque so that LLVM does not rebuild
     * the rows from a + r * lda: it did, with a chain of seven adds and a
     * lea a step of k, integer work on the FMA ports; now every broadcast
     * is (row, k, 4). bench_conv resnet50 (Xeon, one thread): 179.5 ->
     * 192 GFLOP/s; the executable's minima 47.3 -> 45.6-46.2 ms. */
    TILE_LOOP_R {
        ar[r] = t->a + r * t->lda;
        __asm__("" : "+r"(ar[r]));
    }
    _Pragma("clang loop unroll(disable)") /* 24 multiply-adds a step: enough; unrolled
                                             * 48 tile shapes cost seconds of compile */
    for (int64_t k = 0; k < kc; k++, b += bs) {
        if (t->fetch_a)
            __builtin_prefetch(ar[k & (mr - 1)] + k + A_AHEAD);
        if (bs > NR)
            TILE_LOOP_V { __builtin_prefetch(b + B_AHEAD * bs + v * LJ_VL); }
        vf32 bv[NV];
        TILE_LOOP_V { bv[v] = lj_load(b + v * LJ_VL); }
        TILE_LOOP_R {
            float av = ar[r][k];
            TILE_LOOP_V { acc[r][v] += av * bv[v]; }
        }
    }
    /* The cheap activations in registers; sigmoid and tanh (dozens of
     * instructions each) once per row after the store, out of line, rather
     * than unrolled over every accumulator of all 48 tile shapes. */
    const bool late_act = (t->flags & LAST) && lj_act_is_costly(t->act);
    TILE_LOOP_R {
        TILE_LOOP_V {
            vf32 x = acc[r][v];
            if ((t->flags & LAST) && t->sum)
                x += whole ? lj_load(t->sum + r * t->ldc + v * LJ_VL)
                           : lj_load_n(t->sum + r * t->ldc + v * LJ_VL, t->ncols - v * LJ_VL);
            if ((t->flags & LAST) && !late_act)
                x = lj_act(x, t->act);
            float *p = t->c + r * t->ldc + v * LJ_VL;
            if (whole)
                lj_store(p, x);
            else
                lj_store_n(p, x, t->ncols - v * LJ_VL);
        }
    }
    if (late_act)
        act_rows(t->c, t->ldc, mr, t->ncols, t->act);
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
        TILE_CASE(4)
        TILE_CASE(2)
        TILE_CASE(1)
    }
}

LJ_VECTOR_FN void lj_act_span(float *p, int64_t n, LjAct a) {
    act_rows(p, n, 1, n, a);
}

/* ---- packing B ----------------------------------------------------------- */

/* Panel[k][0 .. w) = B[k0 + k][j0 .. j0 + cols), zero beyond cols (w is
 * nv*LJ_VL >= cols). */
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

/* ---- the blocked product ------------------------------------------------- */

/* KC: as deep as allowed while the m x KC block of A fits the L2 budget;
 * then evened out so the last k block is not a sliver. With one column
 * block (the small feature maps of late layers) A is read once whatever
 * KC is, and the deeper the better: it is read in runs of KC along its
 * rows, and short runs spread over many rows (8 rows of 1 KB at a time,
 * 18 KB apart, in a 512-channel 3x3 convolution) defeat the prefetchers;
 * there the B block alone bounds KC. (Unpacked, B's panels are read in
 * place and only a partial last one is packed, on the stack.) */
static int64_t pick_kc(const LjGemm *g, bool packed) {
    int64_t kc = L2_BUDGET / (4 * (g->m > 0 ? g->m : 1));
    kc = kc > KC_MAX ? KC_MAX : kc < KC_MIN ? KC_MIN : kc;
    if (packed && g->n <= NC) {
        int64_t width = (g->n + LJ_VL - 1) / LJ_VL * LJ_VL;
        kc = BIG_BLOCK / (4 * width);
        kc = kc > KC_MAX ? kc : KC_MAX;
    }
    int64_t blocks = (g->k + kc - 1) / kc;
    return blocks ? (g->k + blocks - 1) / blocks : 1;
}

/* A plain B that feeds few rows of A (fully_connected at batch 1: one; a
 * transformer's 32 tokens; a 1x1 convolution to at most 128 channels) is
 * read in place: packing would copy each element to use it at most 16
 * times, and the copy cost more than the strided reads it saves (measured:
 * 15-20% on the 32-row products of the transformer encoder; ResNet-50's
 * 1x1 convs to 64 and 128 channels, bench_conv, 3 alternated runs: 256 to
 * 64 on 56x56 183-186 -> 210 GFLOP/s, 64 to 64 156-167 -> 171-187, 256 to
 * 128 188-190 -> 197-202, 512 to 128 on 28x28 191-201 -> 198-211; to 256
 * channels neither way wins, so those keep packing). The last, partial
 * panel is still packed, so that no load runs past a row. */
static bool packs_b(const LjGemm *g) {
    return g->m > 16 * MR;
}

/* Panel[k][0 .. w) = B[k0 + k][j0 .. j0 + cols) of a B by row offsets
 * (gemm.h), zero beyond cols. The panel's columns are runs of at
 * most ow output positions (whole rows in one when the planes are no wider
 * than the output, a 7x1 window), each one run of the planes at the same
 * place for every k: found once, then copied per row in whole vectors, in
 * order, each run's last vector spilling past it into the next run's
 * columns (which that run then writes), the last run's into the columns
 * past cols (zeroed after) and the next panel row (written next). So a
 * run under a vector (7-, 14- and 28-wide maps: a 48-column panel of a
 * 14-wide map is four runs of 14 and one of 6) is one vector, not a float
 * at a time: that copy was 28% of a 3x3 stride-2 conv's time on a 28x28
 * map. The panel's last row, whose spill would leave the panel, is copied
 * exactly: a run's last vector overlapping the one before, a run under a
 * vector float by float. Reads go up to LJ_VL - 1 floats past a run
 * (gemm.h: koff). */
static void pack_dense(const LjGemm *g, int64_t k0, int64_t kc, int64_t j0, int64_t cols, int w,
                       float *panel) {
    int64_t dst[NR], src[NR], len[NR];
    int runs = 0;
    for (int64_t j = 0; j < cols;) {
        int64_t p = g->n0 + j0 + j, ox = p % g->ow, at = p / g->ow * g->wq + ox;
        int64_t run = g->ow - ox < cols - j ? g->ow - ox : cols - j;
        if (runs && src[runs - 1] + len[runs - 1] == at) /* wq == ow: one run */
            len[runs - 1] += run;
        else
            dst[runs] = j, src[runs] = at, len[runs] = run, runs++;
        j += run;
    }
    for (int64_t k = 0; k < kc; k++) {
        const float *row = g->b + g->koff[k0 + k]; /* koff alone may be negative */
        float *out = panel + k * w;
        if (k + 1 < kc) {
            for (int r = 0; r < runs; r++)
                for (int64_t i = 0; i < len[r]; i += LJ_VL)
                    lj_store(out + dst[r] + i, lj_load(row + src[r] + i));
            for (int64_t j = cols; j < w; j++)
                out[j] = 0;
            continue;
        }
        for (int r = 0; r < runs; r++) {
            const float *s = row + src[r];
            float *d = out + dst[r];
            int64_t n = len[r], i = 0;
            if (n < LJ_VL) {
                for (; i < n; i++)
                    d[i] = s[i];
                continue;
            }
            for (; i + LJ_VL <= n; i += LJ_VL)
                lj_store(d + i, lj_load(s + i));
            if (i < n)
                lj_store(d + n - LJ_VL, lj_load(s + n - LJ_VL));
        }
        for (int64_t j = cols; j < w; j++)
            out[j] = 0;
    }
}

LJ_VECTOR_FN void lj_sgemm_pack_runs(const LjGemm *g, int64_t k0, int64_t kc, int64_t j0,
                                     int64_t cols, int w, float *panel) {
    pack_dense(g, k0, kc, j0, cols, w, panel);
}

/* lj_sgemm_finish with activation kind K (a constant: lj_act's switch
 * folds) and, with `whole`, 32 columns. */
LJ_INLINE void finish_k(ActKind K, bool whole, const LjGemm *g, const float *t, int64_t i0,
                        int64_t j, int64_t mv, int64_t cols) {
    LjAct a = g->act;
    a.kind = K;
    for (int64_t r = 0; r < mv; r++)
        for (int v = 0; v < 32 / LJ_VL && cols > LJ_VL * v; v++) {
            int64_t n = whole ? LJ_VL : cols - LJ_VL * v, at = (i0 + r) * g->ldc + j + LJ_VL * v;
            vf32 x = lj_load(t + r * 32 + LJ_VL * v);
            if (g->bias && g->bias_rows)
                x += g->bias[i0 + r];
            else if (g->bias)
                x += lj_load_n(g->bias + j + LJ_VL * v, n);
            if (g->sum)
                x += lj_load_n(g->sum + at, n);
            lj_store_n(g->c + at, lj_act(x, a), n);
        }
}

LJ_VECTOR_FN void lj_sgemm_finish(const LjGemm *g, const float *t, int64_t i0, int64_t j,
                                  int64_t mv, int64_t cols) {
    bool whole = cols == 32;
    switch (g->act.kind) {
    case ACT_NONE: whole ? finish_k(ACT_NONE, true, g, t, i0, j, mv, cols)
                         : finish_k(ACT_NONE, false, g, t, i0, j, mv, cols); return;
    case ACT_RELU: whole ? finish_k(ACT_RELU, true, g, t, i0, j, mv, cols)
                         : finish_k(ACT_RELU, false, g, t, i0, j, mv, cols); return;
    case ACT_CLIP: whole ? finish_k(ACT_CLIP, true, g, t, i0, j, mv, cols)
                         : finish_k(ACT_CLIP, false, g, t, i0, j, mv, cols); return;
    default: finish_k(g->act.kind, false, g, t, i0, j, mv, cols);
    }
}

/* ---- B packed whole, shared ---------------------------------------------- *
 *
 * Panel j / NR (columns [j, j + NR)) of B at packed + j * k, its row kk
 * at + kk * w (w: the panel's width in whole vectors): a k block of it is
 * then the kc x w panel the tiles read, whatever kc. Packed in items of a
 * panel's PACK_ROWS rows, each one pack_dense or pack_plain call (whose
 * last row spills nowhere), so the items are independent. */
enum { PACK_ROWS = KC_MAX };

LJ_INLINE int64_t tiled_cols(const LjGemm *g) {
    return g->n - lj_sgemm_tail_cols(g);
}

int64_t lj_sgemm_packed_floats(const LjGemm *g) {
    return (tiled_cols(g) + NR - 1) / NR * NR * g->k;
}

int64_t lj_sgemm_pack_items(const LjGemm *g) {
    return (tiled_cols(g) + NR - 1) / NR * ((g->k + PACK_ROWS - 1) / PACK_ROWS);
}

LJ_VECTOR_FN void lj_sgemm_pack(const LjGemm *g, float *packed, int64_t item) {
    int64_t chunks = (g->k + PACK_ROWS - 1) / PACK_ROWS, n = tiled_cols(g);
    int64_t j = item / chunks * NR, k0 = item % chunks * PACK_ROWS;
    int64_t cols = n - j < NR ? n - j : NR, kc = g->k - k0 < PACK_ROWS ? g->k - k0 : PACK_ROWS;
    int w = (int)((cols + LJ_VL - 1) / LJ_VL) * LJ_VL;
    float *dst = packed + j * g->k + k0 * w;
    if (g->koff)
        pack_dense(g, k0, kc, j, cols, w, dst);
    else
        pack_plain(g, k0, kc, j, cols, w, dst);
}

/* NC: the B block's columns, as many as BIG_BLOCK holds at depth kc (at
 * least NC, at most all of n): a shallow product (k = 64 or 128, ResNet's
 * 1x1 convs on 56x56 and 28x28 maps) then writes C in rows of up to all n
 * columns, long runs for the prefetchers, where NC made runs of 960 bytes
 * in every row of C (and of a fused summand) in turn. resnet50's
 * executable, one thread, four alternated runs (Xeon): minima 45.8-46.3 ->
 * 45.3-45.8 ms; its layer1 alone 6.29-6.46 -> 6.19-6.33 ms; peak memory
 * +0.3 MB (a deeper block in the scratch). */
LJ_INLINE int64_t pick_nc(const LjGemm *g, int64_t kc) {
    int64_t whole = (g->n + NR - 1) / NR * NR;
    if (g->n < NC)
        return whole;
    int64_t nc = BIG_BLOCK / 4 / (kc > 0 ? kc : 1) / NR * NR;
    nc = nc < NC ? NC : nc;
    return nc < whole ? nc : whole;
}

static size_t block_bytes(int64_t m, int64_t n, int64_t k, bool by_offsets) {
    LjGemm g = {.m = m, .n = n, .k = k};
    if (m <= 0 || n <= 0)
        return 0;
    bool packed = by_offsets || packs_b(&g);
    int64_t kc_max = pick_kc(&g, packed), nc_max = pick_nc(&g, kc_max);
    return packed && kc_max * nc_max > KC_MAX * NC ? (size_t)(kc_max * nc_max) * sizeof(float)
                                                   : 0;
}

/* The deep B block's bytes, asked of the scratch; 0 when the stack's
 * block does. One function for lj_sgemm and the kernels' _scratch. The
 * product without its last n % LJ_VL columns too (tail_dots does those
 * apart): narrower, its block can be deeper. */
size_t lj_sgemm_scratch(int64_t m, int64_t n, int64_t k, bool by_offsets) {
    size_t all = block_bytes(m, n, k, by_offsets);
    size_t rest = block_bytes(m, n - n % LJ_VL, k, by_offsets);
    return all > rest ? all : rest;
}

/* The blocked product of g; with tail (> 0), full's last `tail` columns
 * as dot products (bt gathered), each row tile's after its last tiles. */
static void blocked(const LjGemm *g, const LjGemm *full, const float *bt, int64_t tail);

/* g without its last `tail` columns (plain: those done, or none). */
LJ_INLINE LjGemm without_tail(const LjGemm *g, int64_t tail) {
    LjGemm rest = *g;
    rest.n -= tail;
    rest.tail_dots = false;
    return rest;
}

/* A one-row product's tail (the one-row gemv takes the rest): a pass of
 * its own; with more rows, the tail goes with the tiles (lj_sgemm). */
LJ_VECTOR_FN static int64_t plain_tail(const LjGemm *g) {
    float bt[LJ_SGEMM_TAIL_FLOATS] __attribute__((aligned(64)));
    int64_t tail = lj_sgemm_tail_gather(g, bt);
    if (tail)
        lj_sgemm_tail_rows(g, bt, tail, 0, g->m);
    return tail;
}

/* The tail's dot products for each row tile right after it, while its
 * rows of A are in cache, for a B by offsets and a plain one alike. A
 * plain B's tail was one pass before the tiles, which read all of A once
 * more, from memory in a model: ResNet-50's 1x1 convs on 14x14 and 7x7
 * maps (4 and 1 tail columns; 1-4 MB of weights each), the executable,
 * one thread, three alternated runs (Xeon): minima 49.0-49.7 -> 47.2-47.3
 * ms. */
LJ_VECTOR_FN static void with_tail(const LjGemm *g) {
    float bt[LJ_SGEMM_TAIL_FLOATS] __attribute__((aligned(64)));
    int64_t tail = lj_sgemm_tail_gather(g, bt);
    LjGemm rest = without_tail(g, tail);
    if (rest.n <= 0)
        lj_sgemm_tail_rows(g, bt, tail, 0, g->m);
    else
        blocked(&rest, g, bt, tail);
}

LJ_VECTOR_FN void lj_sgemm(const LjGemm *g) {
    if (g->m <= 0 || g->n <= 0)
        return;
    if (g->tail_dots && (g->koff || g->m > 1)) {
        with_tail(g);
        return;
    }
    LjGemm rest = without_tail(g, plain_tail(g));
    if (rest.n <= 0 || lj_sgemv(&rest))
        return;
    blocked(&rest, NULL, NULL, 0);
}

/* Panel jr / NR of the block; unpacked, only a partial last panel is
 * packed, at the block's start (the block's columns may be many more than
 * the stack block holds panels). */
LJ_INLINE float *panel_at(float *block, bool packed, int64_t jr, int64_t kc) {
    return packed ? block + jr * kc : block;
}

LJ_VECTOR_FN static void blocked(const LjGemm *g, const LjGemm *full, const float *bt,
                                 int64_t tail) {
    float stack_block[KC_MAX * NC] __attribute__((aligned(64)));
    bool packed = g->packed || g->koff || packs_b(g);
    int64_t kc_max = pick_kc(g, packed);
    float *block = stack_block, *heap = NULL;
    size_t deep = g->packed ? 0 : block_bytes(g->m, g->n, g->k, g->koff != NULL);
    if (deep) {
        heap = lj_scratch_get(g->sc, LJ_SCRATCH_PACK, deep);
        if (heap)
            block = heap;
        else
            kc_max = KC_MAX; /* no memory for the deep block: shallow ones */
    }
    const int64_t ncb = deep && !heap ? NC : pick_nc(g, kc_max);
    for (int64_t j0 = 0; j0 < g->n; j0 += ncb) {
        int64_t nc = g->n - j0 < ncb ? g->n - j0 : ncb;
        /* k == 0: C is bias (+ act) alone; one pass with empty panels. */
        int64_t k0 = 0;
        do {
            int64_t kc = g->k - k0 < kc_max ? g->k - k0 : kc_max;
            unsigned flags = (k0 == 0 ? FIRST : 0) | (k0 + kc >= g->k ? LAST : 0);
            /* Panel jr / NR of the block at panel_at. */
            for (int64_t jr = 0; jr < nc; jr += NR) {
                int64_t cols = nc - jr < NR ? nc - jr : NR;
                int w = (int)((cols + LJ_VL - 1) / LJ_VL) * LJ_VL;
                if (g->packed)
                    break;
                if (g->koff)
                    pack_dense(g, k0, kc, j0 + jr, cols, w, block + jr * kc);
                else if (packed || cols < NR)
                    pack_plain(g, k0, kc, j0 + jr, cols, w, panel_at(block, packed, jr, kc));
            }
            /* Tails of rows as tiles of 4, 2, 1: fewer tile shapes to
             * compile, and MR = 8 divides most channel counts. */
            for (int64_t i0 = 0, mr; i0 < g->m; i0 += mr) {
                int64_t left = g->m - i0;
                mr = left >= MR ? MR : left >= 4 ? 4 : left >= 2 ? 2 : 1;
                for (int64_t jr = 0; jr < nc; jr += NR) {
                    int64_t cols = nc - jr < NR ? nc - jr : NR;
                    int nv = (int)((cols + LJ_VL - 1) / LJ_VL);
                    Tile t = {.a = g->a + i0 * g->lda + k0, .lda = g->lda,
                              .b = panel_at(block, packed, jr, kc),
                              .bs = nv * LJ_VL, .c = g->c + i0 * g->ldc + j0 + jr,
                              .ldc = g->ldc, .ncols = cols, .flags = flags, .act = g->act,
                              .fetch_a = jr == 0};
                    if (g->packed)
                        t.b = g->packed + (j0 + jr) * g->k + k0 * t.bs;
                    else if (!packed && cols == NR)
                        t.b = g->b + k0 * g->ldb + j0 + jr, t.bs = g->ldb;
                    if (g->sum)
                        t.sum = g->sum + i0 * g->ldc + j0 + jr;
                    if (g->bias && g->bias_rows)
                        t.bias_row = g->bias + i0;
                    else if (g->bias)
                        t.bias_col = g->bias + j0 + jr;
                    tile_kernel((int)mr, nv, kc, &t);
                }
                if (tail && (flags & LAST) && j0 + ncb >= g->n)
                    lj_sgemm_tail_rows(full, bt, tail, i0, i0 + mr);
            }
            k0 += kc;
        } while (k0 < g->k);
    }
    if (heap)
        lj_scratch_put(g->sc, heap);
}
