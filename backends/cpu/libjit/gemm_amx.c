/* The f32 product (gemm.h) on Intel AMX's bf16 tiles: lj_sgemm_amx.
 *
 * AMX (Sapphire Rapids and later) multiplies tiles held in eight 1 KB
 * registers: tdpbf16ps adds to a 16 x 16 tile of f32 sums the products of
 * a 16 x 32 bf16 tile A and a 32 x 16 one B (B's row p holds, for each of
 * 16 columns, the pair of k = 2p, 2p + 1), 8192 multiply-adds an
 * instruction. Measured here (Xeon, one core): 3.37 TFLOP/s, against
 * 0.24 for AVX-512's f32 FMAs.
 *
 * bf16 keeps 8 of f32's 24 bits, so each operand is split in two: x = hi +
 * lo + e, hi = bf16(x), lo = bf16(x - hi), |e| <= 2^-16 |x|, and the
 * product takes three of the four partial products, hi*hi + hi*lo +
 * lo*hi, accumulated in f32 (the "bf16x3" of oneDNN's and PyTorch's
 * float32 matmul precision "high"). A product a*b is then off by at most
 * |lo_a*lo_b| + |e_a b| + |a e_b| <= 3 * 2^-16 |a b| (4.6e-5, the bound;
 * random data sees 4e-6 of the largest sum: tests/kernels), where f32
 * FMAs are off by 2^-24: the rounding changes, as Winograd's does, and
 * `--f32-precision=highest` keeps the FMA kernels. 3.37 / 3 = 1.1
 * TFLOP/s of f32 products, 4.7 times the FMA peak.
 *
 * Blocking: column blocks of up to NCA columns by k blocks (pick_kc_amx): B's
 * block split into bf16 pairs (hi, lo: the tile layout) once, in the
 * scratch (512 KB, in L2), from wherever B is (in place, packed whole, or
 * the phase planes' runs, read in place by masked loads: BRows); then per
 * 32 rows of A (split too: 16 KB, L1; up to 128 KB in a deep k block) the
 * block's column tiles in pairs, 2 x 2 C
 * tiles (32 x 32 sums) a step: 10 tile loads and 12 products per 32 of k.
 * C goes through memory between k blocks (tiles loaded from and stored to
 * C), the bias, summand and activation after the last. Rows past m, columns
 * past n and k past the block are zeros in the split operands, so every
 * shape takes the same tiles. The result of an element depends on k
 * alone (pick_kc_amx): the same whatever the threads' split. An infinite
 * or NaN operand, which the split cannot carry, leaves the product to the
 * FMA kernel. */
#include "backends/cpu/libjit/gemm.h"

#if defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>

#define AMXF_TARGET                                                                                \
    target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,evex512,amx-tile,amx-bf16"),            \
        min_vector_width(512)
#define AMXF_INLINE static inline __attribute__((always_inline, AMXF_TARGET))

enum {
    KCA = 128,         /* k block: 32 rows of split A = 16 KB */
    KCA_MAX = 1024,    /* a deep one (pick_kc_amx): 128 KB */
    TW = 512,          /* uint16s in a tile (16 rows of 64 bytes) */
    NCA = LJ_SGEMM_AMX_BYTES / (KCA * 4), /* block columns: split B = 512 KB */
};

typedef uint16_t v32u16 __attribute__((vector_size(64)));
typedef uint16_t v16u16 __attribute__((vector_size(32)));
typedef uint32_t v16u32 __attribute__((vector_size(64)));

typedef struct AmxCfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} AmxCfg;

/* The first min(n, 16) floats at p, zeros after (vec.h's helpers are
 * not for this target's functions: their vectors' ABI differs). */
AMXF_INLINE uint16_t lanes(int64_t n) {
    return n >= 16 ? 0xffff : (uint16_t)((1u << n) - 1);
}

AMXF_INLINE vf32 ld_n(const float *p, int64_t n) {
    return __builtin_ia32_loadups512_mask(p, (vf32){0}, lanes(n));
}

AMXF_INLINE void st_n(float *p, vf32 v, int64_t n) {
    __builtin_ia32_storeups512_mask(p, v, lanes(n));
}

/* hi and lo of 32 floats (x0 then x1), as bf16 words in order; lanes of
 * *bad set where hi is infinite or NaN (the split cannot carry them: inf's
 * lo is inf - inf, and a lo of 0 times an infinite hi is NaN where f32's
 * product is infinite). */
AMXF_INLINE void split32(vf32 x0, vf32 x1, v32u16 *hi, v32u16 *lo, vi32 *bad) {
    v32u16 h = (v32u16)__builtin_ia32_cvtne2ps2bf16_512(x1, x0); /* x0 in the low half */
    v16u16 h0 = __builtin_shufflevector(h, h, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    v16u16 h1 = __builtin_shufflevector(h, h, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28,
                                        29, 30, 31);
    vf32 f0 = (vf32)(__builtin_convertvector(h0, v16u32) << 16);
    vf32 f1 = (vf32)(__builtin_convertvector(h1, v16u32) << 16);
    /* exponent all ones: inf or NaN */
    vi32 e = (vi32){0} + 0x7f800000;
    *bad |= (((vi32)f0 & e) == e) | (((vi32)f1 & e) == e);
    *hi = h;
    *lo = (v32u16)__builtin_ia32_cvtne2ps2bf16_512(x1 - f1, x0 - f0);
}

AMXF_INLINE bool any_lane(vi32 m) {
    int32_t v[16];
    __builtin_memcpy(v, &m, sizeof v);
    int32_t any = 0;
    for (int i = 0; i < 16; i++)
        any |= v[i];
    return any != 0;
}

/* Floats [k, kc) of a row, at most 16: zeros past kc. */
AMXF_INLINE vf32 row_part(const float *row, int64_t k, int64_t kc) {
    return k < kc ? ld_n(row + k, kc - k) : (vf32){0};
}

/* Rows [0, 32) of A (mv of them real, the rest zero), kc deep, split
 * (the next `ahead` rows' prefetched):
 * out[h][s] (h the 16-row half, s the 32-step of k) is the hi tile, then
 * the lo tile, each row 32 words of k. */
AMXF_INLINE void split_a(const float *a, int64_t lda, int64_t mv, int64_t kc, int64_t ks,
                         int64_t ahead, uint16_t *out, vi32 *bad) {
    for (int64_t r = 0; r < 32; r++) {
        uint16_t *o = out + (r / 16) * ks * 2 * TW + (r % 16) * 32;
        for (int64_t s = 0; s < ks; s++) {
            if (r < ahead) { /* the next 32 rows' (from memory: the weights) */
                __builtin_prefetch(a + (r + 32) * lda + 32 * s);
                __builtin_prefetch(a + (r + 32) * lda + 32 * s + 16);
            }
            v32u16 hi = {0}, lo = {0};
            if (r < mv)
                split32(row_part(a + r * lda, 32 * s, kc), row_part(a + r * lda, 32 * s + 16, kc),
                        &hi, &lo, bad);
            __builtin_memcpy(o + s * 2 * TW, &hi, sizeof hi);
            __builtin_memcpy(o + s * 2 * TW + TW, &lo, sizeof lo);
        }
    }
}

/* Where a column tile's 16 floats of B's row kk are: row kk at b +
 * koff[kk] (a B by row offsets) or b + (kk - k_base) * ss, and in it up to RUNS runs,
 * run i's lanes (mask[i]) at row + off[i] + lane: masked loads, so the
 * runs of a tile that crosses output rows (gemm.h: koff) are read in place
 * from the phase planes, with no panel packed first. */
enum { RUNS = 4 };
typedef struct BRows {
    const float *b;
    const int64_t *koff;
    int64_t ss, k_base; /* b + (kk - k_base) * ss */
    int runs;
    int64_t off[RUNS];
    uint16_t mask[RUNS];
} BRows;

AMXF_INLINE vf32 b_row(const BRows *r, int64_t kk) {
    const float *row = r->koff ? r->b + r->koff[kk] : r->b + (kk - r->k_base) * r->ss;
    vf32 x = {0};
    for (int i = 0; i < r->runs; i++)
        x = __builtin_ia32_loadups512_mask(row + r->off[i], x, r->mask[i]);
    return x;
}

/* One column tile of B: rows [k0, k0 + kc) (zeros past them), split into
 * out[s] (hi tile, lo tile), row p of a step holding each column's pair
 * (k = 2p, 2p + 1). */
AMXF_INLINE void split_b(const BRows *r, int64_t k0, int64_t kc, int64_t ks, uint16_t *out,
                         vi32 *bad) {
    for (int64_t p = 0; p < ks * 16; p++) {
        vf32 x0 = 2 * p < kc ? b_row(r, k0 + 2 * p) : (vf32){0};
        vf32 x1 = 2 * p + 1 < kc ? b_row(r, k0 + 2 * p + 1) : (vf32){0};
        v32u16 hi, lo;
        split32(x0, x1, &hi, &lo, bad);
#define PAIRS 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23, 8, 24, 9, 25, 10, 26, 11, 27, \
              12, 28, 13, 29, 14, 30, 15, 31
        hi = __builtin_shufflevector(hi, hi, PAIRS);
        lo = __builtin_shufflevector(lo, lo, PAIRS);
#undef PAIRS
        uint16_t *o = out + p / 16 * 2 * TW + p % 16 * 32;
        __builtin_memcpy(o, &hi, sizeof hi);
        __builtin_memcpy(o + TW, &lo, sizeof lo);
    }
}

/* The 2 x 2 C tiles (0: rows 0-15 by columns 0-15, 1: by 16-31, 2 and
 * 3: rows 16-31) += A (halves a, a + ks tiles' pairs) times B (column
 * tiles b0, b1), ks steps of 32. */
#define PRODUCTS_2X2()                                                                             \
    do {                                                                                           \
        __builtin_ia32_tdpbf16ps(0, 4, 6);                                                         \
        __builtin_ia32_tdpbf16ps(1, 4, 7);                                                         \
        __builtin_ia32_tdpbf16ps(2, 5, 6);                                                         \
        __builtin_ia32_tdpbf16ps(3, 5, 7);                                                         \
    } while (0)
AMXF_INLINE void tile_steps(const uint16_t *a, const uint16_t *b0, const uint16_t *b1, int64_t ks) {
    const uint16_t *a1 = a + ks * 2 * TW;
    for (int64_t s = 0; s < ks; s++) {
        int64_t o = s * 2 * TW;
        __builtin_ia32_tileloadd64(4, a + o, 64);
        __builtin_ia32_tileloadd64(5, a1 + o, 64);
        __builtin_ia32_tileloadd64(6, b0 + o, 64);
        __builtin_ia32_tileloadd64(7, b1 + o, 64);
        PRODUCTS_2X2();
        __builtin_ia32_tileloadd64(6, b0 + o + TW, 64); /* hi * lo */
        __builtin_ia32_tileloadd64(7, b1 + o + TW, 64);
        PRODUCTS_2X2();
        __builtin_ia32_tileloadd64(4, a + o + TW, 64); /* lo * hi */
        __builtin_ia32_tileloadd64(5, a1 + o + TW, 64);
        __builtin_ia32_tileloadd64(6, b0 + o, 64);
        __builtin_ia32_tileloadd64(7, b1 + o, 64);
        PRODUCTS_2X2();
    }
}
#undef PRODUCTS_2X2

/* C's 32 x 32 block at c (mv rows, cols columns of it real) into the
 * tiles: in place when whole, else through t (32 x 32, zeros outside). */
AMXF_INLINE void load_c(const float *c, int64_t ldc, int64_t mv, int64_t cols, float *t) {
    const float *p = c;
    int64_t stride = ldc * 4;
    if (mv < 32 || cols < 32) {
        for (int64_t r = 0; r < 32; r++)
            for (int v = 0; v < 2; v++)
                st_n(t + r * 32 + 16 * v,
                     r < mv && cols > 16 * v ? ld_n(c + r * ldc + 16 * v, cols - 16 * v) : (vf32){0},
                     16);
        p = t, stride = 128;
    }
    __builtin_ia32_tileloadd64(0, p, stride);
    __builtin_ia32_tileloadd64(1, p + 16, stride);
    __builtin_ia32_tileloadd64(2, (const char *)p + 16 * stride, stride);
    __builtin_ia32_tileloadd64(3, (const char *)p + 16 * stride + 64, stride);
}

AMXF_INLINE void store_tiles(float *t) {
    __builtin_ia32_tilestored64(0, t, 128);
    __builtin_ia32_tilestored64(1, t + 16, 128);
    __builtin_ia32_tilestored64(2, t + 16 * 32, 128);
    __builtin_ia32_tilestored64(3, t + 16 * 32 + 16, 128);
}

/* The tiles' sums back to C's block (partial sums: a k block not the
 * last): in place when whole, else through t. */
AMXF_INLINE void save_c(float *c, int64_t ldc, int64_t mv, int64_t cols, float *t) {
    if (mv == 32 && cols == 32) {
        int64_t stride = ldc * 4;
        __builtin_ia32_tilestored64(0, c, stride);
        __builtin_ia32_tilestored64(1, c + 16, stride);
        __builtin_ia32_tilestored64(2, (char *)c + 16 * stride, stride);
        __builtin_ia32_tilestored64(3, (char *)c + 16 * stride + 64, stride);
        return;
    }
    store_tiles(t);
    for (int64_t r = 0; r < mv; r++)
        for (int v = 0; v < 2 && cols > 16 * v; v++)
            st_n(c + r * ldc + 16 * v, ld_n(t + r * 32 + 16 * v, 16), cols - 16 * v);
}

/* Linux gives a process the AMX state only when asked (as k_qconvp.c's
 * int8 tiles): asked once per thread's scratch (the answer is the
 * process's), at every call without one. */
AMXF_INLINE bool amx_allowed(LjScratch *sc) {
    if (sc && sc->amx_state)
        return sc->amx_state > 0;
    bool ok = syscall(158 /* SYS_arch_prctl */, 0x1023 /* ARCH_REQ_XCOMP_PERM */,
                      18 /* XFEATURE_XTILEDATA */) == 0;
    if (sc)
        sc->amx_state = ok ? 1 : -1;
    return ok;
}

/* Column tile t of the block at column j0 (cv columns), split into out
 * from wherever B is: packed whole (its panels' tiles), runs of phase
 * planes (through `panel`, kc x 16), or in place. */
AMXF_INLINE void split_col_tile(const LjGemm *g, int64_t j, int64_t cv, int64_t k0, int64_t kc,
                                int64_t ks, float *panel, uint16_t *out, vi32 *bad) {
    int64_t tiled = g->n - lj_sgemm_tail_cols(g);
    BRows r = {.runs = 1, .mask = {lanes(cv)}};
    if (g->packed && j + cv <= tiled) {
        int64_t p0 = j / LJ_GEMM_NR * LJ_GEMM_NR, left = tiled - p0;
        r.ss = left < LJ_GEMM_NR ? (left + LJ_VL - 1) / LJ_VL * LJ_VL : LJ_GEMM_NR;
        r.b = g->packed + p0 * g->k + (j - p0);
    } else if (g->koff) { /* the runs of output rows in the tile (as pack_dense finds them) */
        r.b = g->b, r.koff = g->koff, r.runs = 0;
        for (int64_t c = 0; c < cv;) {
            int64_t p = g->n0 + j + c, ox = p % g->ow, at = p / g->ow * g->wq + ox;
            int64_t run = g->ow - ox < cv - c ? g->ow - ox : cv - c;
            if (r.runs == RUNS) { /* narrow rows: a panel first */
                lj_sgemm_pack_runs(g, k0, kc, j, cv, 16, panel);
                r = (BRows){.b = panel, .ss = 16, .k_base = k0, .runs = 1, .mask = {lanes(cv)}};
                break;
            }
            r.off[r.runs] = at - c;
            r.mask[r.runs++] = (uint16_t)(lanes(c + run) & ~lanes(c));
            c += run;
        }
    } else
        r.b = g->b + j, r.ss = g->ldb;
    split_b(&r, k0, kc, ks, out, bad);
}

/* The k block: KCA, A's split rows in L1, where B is the larger operand;
 * where A (the weights, from memory) is, as deep as the split B block
 * holds at all its columns (at most KCA_MAX), so that A's rows are read in
 * runs of kc floats, not 512-byte pieces of every row in turn (a 3x3 conv
 * of 512 channels: rows 18 KB apart). Any multiple of 32 gives the same
 * result: the tiles take the same steps of k in the same order, and C
 * goes through memory exactly between blocks. */
AMXF_INLINE int64_t pick_kc_amx(const LjGemm *g, int64_t nc) {
    if (g->m <= 4 * g->n)
        return KCA;
    int64_t width = (nc + 31) / 32 * 32, kc = LJ_SGEMM_AMX_BYTES / 4 / width / 32 * 32;
    return kc < KCA ? KCA : kc > KCA_MAX ? KCA_MAX : kc;
}

/* A non-finite operand (infinite or NaN) stops it: false, and the FMA
 * product then runs, with f32's infinities (some of C written meanwhile,
 * which it writes again). */
__attribute__((noinline, AMXF_TARGET)) bool lj_sgemm_amx(const LjGemm *g) {
    if (g->m <= 0 || g->n <= 0)
        return true;
    if (!amx_allowed(g->sc))
        return false;
    uint16_t *bb = g->bsplit ? NULL : lj_scratch_get(g->sc, LJ_SCRATCH_PACK, LJ_SGEMM_AMX_BYTES);
    if (!bb && !g->bsplit)
        return false;
    int64_t kall = g->k > 0 ? (g->k + 31) / 32 : 1; /* bsplit's steps a tile */
    uint16_t ab[2 * (KCA_MAX / 32) * 2 * TW] __attribute__((aligned(64)));
    float panel[KCA_MAX * 16] __attribute__((aligned(64)));
    float t[32 * 32] __attribute__((aligned(64)));
    vi32 bad = {0};
    AmxCfg cfg = {.palette = 1};
    for (int i = 0; i < 8; i++)
        cfg.colsb[i] = 64, cfg.rows[i] = 16;
    __builtin_ia32_tile_loadconfig(&cfg);
    for (int64_t j0 = 0; j0 < g->n; j0 += NCA) {
        int64_t nc = g->n - j0 < NCA ? g->n - j0 : NCA, nt = (nc + 15) / 16;
        int64_t k0 = 0, kc_max = pick_kc_amx(g, nc);
        do { /* k == 0: one block of zeros, for the bias and activation */
            int64_t kc = g->k - k0 < kc_max ? g->k - k0 : kc_max, ks = kc > 0 ? (kc + 31) / 32 : 1;
            for (int64_t ti = 0; ti < nt && !g->bsplit; ti++) {
                int64_t j = j0 + 16 * ti, cv = g->n - j < 16 ? g->n - j : 16;
                split_col_tile(g, j, cv, k0, kc, ks, panel, bb + ti * ks * 2 * TW, &bad);
            }
            if (nt % 2 && !g->bsplit)
                __builtin_memset(bb + nt * ks * 2 * TW, 0, (size_t)ks * 2 * TW * 2);
            if (any_lane(bad))
                goto done;
            bool first = k0 == 0, last = k0 + kc >= g->k;
            for (int64_t i0 = 0; i0 < g->m; i0 += 32) {
                int64_t mv = g->m - i0 < 32 ? g->m - i0 : 32;
                split_a(g->a + i0 * g->lda + k0, g->lda, mv, kc, ks, g->m - i0 - 32, ab, &bad);
                if (any_lane(bad))
                    goto done;
                for (int64_t ti = 0; ti < nt; ti += 2) {
                    int64_t j = j0 + 16 * ti, cols = g->n - j < 32 ? g->n - j : 32;
                    float *c = g->c + i0 * g->ldc + j;
                    if (first) {
                        __builtin_ia32_tilezero(0);
                        __builtin_ia32_tilezero(1);
                        __builtin_ia32_tilezero(2);
                        __builtin_ia32_tilezero(3);
                    } else
                        load_c(c, g->ldc, mv, cols, t);
                    if (last && g->sum) /* the epilogue's summand, while the tiles run */
                        for (int64_t r = 0; r < mv; r++) {
                            __builtin_prefetch(g->sum + (i0 + r) * g->ldc + j);
                            __builtin_prefetch(g->sum + (i0 + r) * g->ldc + j + 16);
                        }
                    const uint16_t *b0, *b1;
                    if (g->bsplit) /* tile (j0 + 16 ti) / 16 of all, from step k0 / 32 */
                        b0 = g->bsplit + ((j0 / 16 + ti) * kall + k0 / 32) * 2 * TW,
                        b1 = b0 + kall * 2 * TW;
                    else
                        b0 = bb + ti * ks * 2 * TW, b1 = b0 + ks * 2 * TW;
                    tile_steps(ab, b0, b1, ks);
                    if (last) {
                        store_tiles(t);
                        lj_sgemm_finish(g, t, i0, j, mv, cols);
                    }
                    else
                        save_c(c, g->ldc, mv, cols, t);
                }
            }
            k0 += kc;
        } while (k0 < g->k);
    }
done:
    __builtin_ia32_tilerelease();
    if (bb)
        lj_scratch_put(g->sc, bb);
    return !any_lane(bad); /* else the FMA product writes all of C again */
}

__attribute__((noinline, AMXF_TARGET)) bool lj_sgemm_amx_ready(LjScratch *sc) {
    return amx_allowed(sc);
}

/* Tiles (even: the last pair's odd one zeros) by steps of k. */
__attribute__((noinline, AMXF_TARGET)) size_t lj_sgemm_amx_split_bytes(int64_t n, int64_t k) {
    int64_t tiles = (n + 31) / 32 * 2, ks = k > 0 ? (k + 31) / 32 : 1;
    return (size_t)(tiles * ks * 2 * TW) * sizeof(uint16_t);
}

__attribute__((noinline, AMXF_TARGET)) bool lj_sgemm_amx_split(const LjGemm *g, int64_t j0,
                                                              int64_t j1, bool last,
                                                              int64_t at, uint16_t *out) {
    float panel[KCA_MAX * 16] __attribute__((aligned(64)));
    int64_t kall = g->k > 0 ? (g->k + 31) / 32 : 1, tiles = (at + j1 + 15) / 16;
    vi32 bad = {0};
    for (int64_t j = j0; j < j1; j += 16) {
        int64_t cv = j1 - j < 16 ? j1 - j : 16;
        int64_t k0 = 0;
        do {
            int64_t kc = g->k - k0 < KCA_MAX ? g->k - k0 : KCA_MAX, ks = kc > 0 ? (kc + 31) / 32 : 1;
            split_col_tile(g, j, cv, k0, kc, ks, panel,
                           out + ((at + j) / 16 * kall + k0 / 32) * 2 * TW, &bad);
            k0 += kc;
        } while (k0 < g->k);
    }
    if (last && tiles % 2)
        __builtin_memset(out + tiles * kall * 2 * TW, 0, (size_t)kall * 2 * TW * 2);
    return !any_lane(bad);
}

__attribute__((noinline, AMXF_TARGET)) void lj_sgemm_amx_any(const LjGemm *g) {
    if (!lj_sgemm_amx(g))
        lj_sgemm(g);
}
#endif
