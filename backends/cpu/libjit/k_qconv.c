/* The fast quantized convolution: qlinear_conv with u8 or i8 activations
 * and i8 weights over 2-D images, results identical to the interpreter's.
 *
 * Regular and grouped convolutions are a GEMM per group: an im2col tile of
 * TILE output positions is packed as [K/4][TILE][4] bytes (four consecutive
 * k of one position in one 32-bit lane), and each weight row's four bytes
 * are broadcast to every lane, so one vpdpbusd (u8 x s8 -> s32, four
 * products per lane) adds four k of sixteen positions. The weights need no
 * packing: a row of ONNX's [M][C/g][kh][kw] is already k-contiguous.
 * vpdpbusd wants unsigned activations: i8 ones are shifted by 128 (x ^ 0x80)
 * and the shift comes back out exactly with the weight sums:
 *   sum (x - zx)(w - zw) = D - (sh + zx) Sw - zw (Sx - sh K) + K zx zw
 * where D is the packed dot product, sh the shift, Sw a row's weight sum and
 * Sx a position's sum of shifted activations (padding holds zx + sh, which
 * is zero after the zero point). Sums fit in i32: the kernel is taken only
 * when K * 255 * 255 does.
 * libjit_qlinear_conv_vnni_<y> is the same with vpdpbusd; code generation
 * calls it when the target has AVX-512 VNNI. Depthwise convolutions (one
 * channel per group) run plane by plane on a zero-padded i32 copy. Anything
 * else (3-D, u8 weights, wide sums) takes the plain kernel of k_qint.c. */
#include "backends/cpu/libjit/k_qint.h"
#include "backends/cpu/libjit/vec.h"

#pragma STDC FP_CONTRACT OFF
/* 64-byte vectors cross only into always-inline helpers (vec.h says why). */
#pragma clang diagnostic ignored "-Wpsabi"

enum { TILE = 64, VLANES = 16, NVEC = TILE / VLANES, MR = 4 };
/* The depthwise kernel holds a plane's weights for this many taps, and
 * splits strides up to DW_STRIDE into phases. */
enum { DW_TAPS = 64, DW_STRIDE = 4 };

typedef int32_t v16i __attribute__((vector_size(64)));

typedef struct QConvPlan {
    LjQConv g;
    bool fast, depthwise, any_zw;
    int64_t k, k4, tiles, msplit, sh;
} QConvPlan;

LJ_INLINE bool dw_fits(const LjQConv *g) {
    return g->win.stride[0] <= DW_STRIDE && g->win.stride[1] <= DW_STRIDE;
}

LJ_INLINE QConvPlan plan_of(const int64_t *d, void *const *ops) {
    QConvPlan s = {.g = lj_qconv_of(d, ops, true)};
    const LjQConv *g = &s.g;
    s.k = g->cg * g->ksize;
    s.k4 = (s.k + 3) / 4;
    bool kinds = (g->ex == ELEM_I8 || g->ex == ELEM_U8) && (g->ey == ELEM_I8 || g->ey == ELEM_U8) &&
                 (lj_nops(d) != 10 || g->ebias == ELEM_I32) && g->ew == ELEM_I8;
    s.depthwise = g->cg == 1 && g->mg == 1 && g->group > 1 && g->ksize <= DW_TAPS && dw_fits(g);
    s.fast = kinds && g->win.ns == 2 && s.k * 255 * 255 < 2147483647LL;
    s.sh = g->ex == ELEM_I8 ? 128 : 0;
    s.tiles = (g->out_size + TILE - 1) / TILE;
    /* Few tiles (7x7 images): split the channels too, for two threads. */
    int64_t units = g->batch * g->group * s.tiles;
    s.msplit = units < 4 && g->mg >= 2 * MR ? 2 : 1;
    for (int64_t m = 0; m < g->cout && ops; m++)
        s.any_zw |= (g->zw_per_m ? lj_ld_i64(g->ezw, g->zw, m) : g->zw0) != 0;
    return s;
}

LJ_INLINE int64_t plan_units(const QConvPlan *s) {
    if (s->depthwise)
        return s->g.batch * s->g.cin;
    return s->g.batch * s->g.group * s->tiles * s->msplit;
}

/* ---- packing ------------------------------------------------------------------------- */

/* Positions [p0, p0 + TILE) of image nb, group gr: xp[k4][TILE][4], the
 * shifted activations (padding: zx + sh; k beyond K: 0), and their sums. */
/* A 1x1 convolution of stride 1 and no padding over a whole tile: the
 * tile is TILE consecutive bytes of each channel, interleaved by four. */
/* Four rows of TILE bytes (each xor shift) as TILE 32-bit lanes, row j in
 * byte j, sixteen lanes at a time; the lanes' byte sums added to sx when
 * the store needs them (weights with a zero point). */
LJ_INLINE void interleave4(const uint8_t *const *r, uint8_t shift, uint8_t *lane, int32_t *sx,
                           bool sums) {
    typedef uint8_t v16b __attribute__((vector_size(VLANES)));
    for (int64_t t = 0; t < TILE; t += VLANES) {
        v16i b[4];
        for (int j = 0; j < 4; j++) {
            v16b v;
            __builtin_memcpy(&v, r[j] + t, sizeof v);
            b[j] = __builtin_convertvector(v ^ shift, v16i);
        }
        v16i v = b[0] | b[1] << 8 | b[2] << 16 | b[3] << 24;
        __builtin_memcpy(lane + 4 * t, &v, sizeof v);
        if (sums) {
            v16i a;
            __builtin_memcpy(&a, sx + t, sizeof a);
            a += b[0] + b[1] + b[2] + b[3];
            __builtin_memcpy(sx + t, &a, sizeof a);
        }
    }
}

LJ_INLINE void pack_pointwise(const QConvPlan *s, const uint8_t *x, uint8_t *xp, int32_t *sx) {
    const LjQConv *g = &s->g;
    uint8_t shift = (uint8_t)s->sh;
    for (int64_t q = 0; q < s->k4; q++) {
        const uint8_t *r[4];
        for (int j = 0; j < 4; j++)
            r[j] = q * 4 + j < s->k ? x + (q * 4 + j) * g->in_size : 0;
        uint32_t *lane = (uint32_t *)(xp + q * TILE * 4);
        if (q * 4 + 4 <= s->k) {
            interleave4(r, shift, (uint8_t *)lane, sx, s->any_zw);
            continue;
        }
        for (int64_t t = 0; t < TILE; t++) {
            uint32_t v = 0;
            for (int j = 0; j < 4; j++) {
                uint32_t b = r[j] ? (uint8_t)(r[j][t] ^ shift) : 0;
                v |= b << (8 * j);
                sx[t] += (int32_t)b;
            }
            __builtin_memcpy(&lane[t], &v, 4);
        }
    }
}

/* One k's bytes for positions [p0, p0 + np) of a tile (zero beyond):
 * along each output row the input is one row of the plane, read at the
 * stride, with padding (zx + sh) left and right of it. */
typedef struct Segs {
    int n;
    int64_t t[TILE + 1], y[TILE + 1], x[TILE + 1], run[TILE + 1];
} Segs;

/* The tile's runs along output rows: where each starts in the tile, its
 * window corner in the input, its length. */
LJ_INLINE void tile_segs(const LjQConv *g, int64_t p0, int64_t np, Segs *sg) {
    int64_t ow = g->odims[1], oh = p0 / ow, oc = p0 % ow;
    sg->n = 0;
    for (int64_t t = 0; t < np; sg->n++) {
        int64_t run = ow - oc < np - t ? ow - oc : np - t;
        sg->t[sg->n] = t;
        sg->y[sg->n] = oh * g->win.stride[0] - g->win.pad_begin[0];
        sg->x[sg->n] = oc * g->win.stride[1] - g->win.pad_begin[1];
        sg->run[sg->n] = run;
        t += run;
        oh++;
        oc = 0;
    }
}

LJ_INLINE void fill_row(const QConvPlan *s, const Segs *sg, const uint8_t *plane, int64_t np,
                        int64_t di, int64_t dj, uint8_t *row) {
    const LjQConv *g = &s->g;
    int64_t ih = g->idims[0], iw = g->idims[1], sw = g->win.stride[1];
    uint8_t shift = (uint8_t)s->sh, pad = (uint8_t)(g->zx + s->sh);
    for (int si = 0; si < sg->n; si++) {
        int64_t run = sg->run[si], y = sg->y[si] + di, x0 = sg->x[si] + dj;
        uint8_t *out = row + sg->t[si];
        if (y < 0 || y >= ih) {
            __builtin_memset(out, pad, (size_t)run);
            continue;
        }
        const uint8_t *in = plane + y * iw;
        /* u in [lo, hi) reads inside the row: 0 <= x0 + u * sw < iw (no
         * division at stride 1, called K times per tile) */
        int64_t lo = x0 >= 0 ? 0 : sw == 1 ? -x0 : (-x0 + sw - 1) / sw;
        int64_t hi = x0 >= iw ? 0 : sw == 1 ? iw - x0 : (iw - x0 + sw - 1) / sw;
        lo = lo < run ? lo : run;
        hi = hi < run ? hi : run;
        hi = hi > lo ? hi : lo;
        for (int64_t u = 0; u < lo; u++)
            out[u] = pad;
        if (sw == 1) { /* 16 bytes at a time, the last 16 overlapping (the loop
                          * vectorisers leave this one scalar) */
            int64_t u = lo;
            for (; u + 16 <= hi; u += 16) {
                uint8_t __attribute__((vector_size(16))) v;
                __builtin_memcpy(&v, in + x0 + u, 16);
                v ^= shift;
                __builtin_memcpy(out + u, &v, 16);
            }
            if (u < hi && hi - lo >= 16) {
                uint8_t __attribute__((vector_size(16))) v;
                __builtin_memcpy(&v, in + x0 + hi - 16, 16);
                v ^= shift;
                __builtin_memcpy(out + hi - 16, &v, 16);
                u = hi;
            }
            for (; u + 8 <= hi; u += 8) {
                uint64_t v;
                __builtin_memcpy(&v, in + x0 + u, 8);
                v ^= shift * 0x0101010101010101ull;
                __builtin_memcpy(out + u, &v, 8);
            }
            for (; u < hi; u++)
                out[u] = (uint8_t)(in[x0 + u] ^ shift);
        } else
            for (int64_t u = lo; u < hi; u++)
                out[u] = (uint8_t)(in[x0 + u * sw] ^ shift);
        for (int64_t u = hi; u < run; u++)
            out[u] = pad;
    }
    for (int64_t t = np; t < TILE; t++)
        row[t] = 0;
}

LJ_INLINE void pack_tile(const QConvPlan *s, int64_t nb, int64_t gr, int64_t p0, uint8_t *xp,
                         int32_t *sx) {
    const LjQConv *g = &s->g;
    const uint8_t *x = g->x;
    int64_t kw = g->win.kernel[1], np = g->out_size - p0 < TILE ? g->out_size - p0 : TILE;
    for (int64_t t = 0; t < TILE; t++)
        sx[t] = 0;
    if (g->ksize == 1 && g->win.stride[0] == 1 && g->win.stride[1] == 1 && !g->win.pad_begin[0] &&
        !g->win.pad_begin[1] && np == TILE) {
        pack_pointwise(s, x + (nb * g->cin + gr * g->cg) * g->in_size + p0, xp, sx);
        return;
    }
    /* Four k at a time: each k's TILE bytes as runs along output rows,
     * then the four rows interleaved into one 32-bit lane per position. */
    uint8_t rows[4][TILE];
    Segs sg;
    tile_segs(g, p0, np, &sg);
    int64_t c = gr * g->cg, i = 0, j = 0; /* k's coordinates, stepped without division */
    for (int64_t q = 0; q < s->k4; q++) {
        for (int r = 0; r < 4; r++) {
            if (q * 4 + r >= s->k) {
                __builtin_memset(rows[r], 0, TILE);
                continue;
            }
            fill_row(s, &sg, x + (nb * g->cin + c) * g->in_size, np, i * g->win.dilation[0],
                     j * g->win.dilation[1], rows[r]);
            if (++j == kw) {
                j = 0;
                if (++i == g->win.kernel[0]) {
                    i = 0;
                    c++;
                }
            }
        }
        const uint8_t *r[4] = {rows[0], rows[1], rows[2], rows[3]};
        interleave4(r, 0, xp + q * TILE * 4, sx, s->any_zw);
    }
}

/* Four bytes of weight row m from k4 (zero beyond K) as one lane. */
LJ_INLINE int32_t wgroup(const int8_t *w, int64_t k, int64_t k4) {
    if (k4 * 4 + 4 <= k) {
        int32_t v;
        __builtin_memcpy(&v, w + k4 * 4, 4);
        return v;
    }
    uint32_t v = 0;
    for (int64_t j = 0; j < 4 && k4 * 4 + j < k; j++)
        v |= (uint32_t)(uint8_t)w[k4 * 4 + j] << (8 * j);
    return (int32_t)v;
}

/* ---- the dot products -------------------------------------------------------------- */

/* acc[r][v] = sum over k4 of row r's four bytes x the tile's, vector v:
 * sixteen accumulators named, not an array, so they stay in registers
 * (the bitcode is built without loop unrolling). */
#define ACC_ROW(r) a##r##0 = (v16i){0}, a##r##1 = (v16i){0}, a##r##2 = (v16i){0}, a##r##3 = (v16i){0}
#define STEP_ROW(STEP, r, wv)                                                                      \
    do {                                                                                           \
        v16i ws_ = (v16i){0} + (wv);                                                               \
        a##r##0 = STEP(a##r##0, x0, ws_);                                                          \
        a##r##1 = STEP(a##r##1, x1, ws_);                                                          \
        a##r##2 = STEP(a##r##2, x2, ws_);                                                          \
        a##r##3 = STEP(a##r##3, x3, ws_);                                                          \
    } while (0)
#define STEP_K4(STEP, q, W0, W1, W2, W3)                                                           \
    do {                                                                                           \
        const uint8_t *xq_ = xp + (q) * TILE * 4;                                                  \
        v16i x0, x1, x2, x3;                                                                       \
        __builtin_memcpy(&x0, xq_, 64);                                                            \
        __builtin_memcpy(&x1, xq_ + 64, 64);                                                       \
        __builtin_memcpy(&x2, xq_ + 128, 64);                                                      \
        __builtin_memcpy(&x3, xq_ + 192, 64);                                                      \
        STEP_ROW(STEP, 0, W0);                                                                     \
        STEP_ROW(STEP, 1, W1);                                                                     \
        STEP_ROW(STEP, 2, W2);                                                                     \
        STEP_ROW(STEP, 3, W3);                                                                     \
    } while (0)
#define SAVE_ROW(r)                                                                                \
    acc[r][0] = a##r##0, acc[r][1] = a##r##1, acc[r][2] = a##r##2, acc[r][3] = a##r##3
#define DOT_BODY(STEP)                                                                             \
    v16i ACC_ROW(0), ACC_ROW(1), ACC_ROW(2), ACC_ROW(3);                                           \
    int64_t full = k / 4;                                                                          \
    for (int64_t q = 0; q < full; q++)                                                             \
        STEP_K4(STEP, q, ld32(w[0] + 4 * q), ld32(w[1] + 4 * q), ld32(w[2] + 4 * q),               \
                ld32(w[3] + 4 * q));                                                               \
    if (full < k4)                                                                                 \
        STEP_K4(STEP, full, wgroup(w[0], k, full), wgroup(w[1], k, full), wgroup(w[2], k, full),   \
                wgroup(w[3], k, full));                                                            \
    SAVE_ROW(0);                                                                                   \
    SAVE_ROW(1);                                                                                   \
    SAVE_ROW(2);                                                                                   \
    SAVE_ROW(3);

LJ_INLINE int32_t ld32(const int8_t *p) {
    int32_t v;
    __builtin_memcpy(&v, p, 4);
    return v;
}

/* Four u8 x s8 products per lane, in plain vector code. */
LJ_INLINE v16i dot4_plain(v16i acc, v16i x, v16i w) {
    for (int j = 0; j < 4; j++) {
        v16i xj = (x >> (8 * j)) & 0xff;
        v16i wj = (w << (24 - 8 * j)) >> 24; /* sign-extended byte j */
        acc += xj * wj;
    }
    return acc;
}

LJ_INLINE void dot_plain(const uint8_t *xp, const int8_t *const *w, int64_t k, int64_t k4,
                         v16i acc[MR][NVEC]) {
    DOT_BODY(dot4_plain)
}

#if defined(__x86_64__)
/* Not always-inline: clang would refuse to inline a VNNI function into the
 * shared code; LLVM inlines it once code generation has given every
 * function the target's features (and drops it, unused, on other CPUs). */
#define DOT4_VNNI(a, x, w) __builtin_ia32_vpdpbusd512(a, x, w)
static __attribute__((target("avx512f,avx512bw,avx512vnni,evex512"), min_vector_width(512))) void
dot_vnni(const uint8_t *xp, const int8_t *const *w, int64_t k,
                                    int64_t k4, v16i acc[MR][NVEC]) {
    DOT_BODY(DOT4_VNNI)
}
#endif

/* ---- one unit: a tile of positions, all (or half) the group's channels ------------ */

/* Results yo .. yo + n of channel m from sums acc[t] + base - zsx *
 * sx[t] (sx read only when zsx is not 0): lj_qconv_store for i8 and u8. */
LJ_INLINE void requant(const LjQConv *g, int64_t m, const int32_t *acc, int64_t zsx,
                       const int32_t *sx, int64_t base, int64_t yo, int64_t n) {
    lj_qrequant_row(g->ey, (uint8_t *)g->y + yo, acc, sx, zsx, base, (double)lj_qconv_mult(g, m),
                    (double)g->yz, n);
}

/* Row m's np results from its dot products: the shift and zero points
 * taken back out, the bias added, requantized. */
LJ_INLINE void store_row(const QConvPlan *s, int64_t nb, int64_t m, int64_t p0, int64_t np,
                         const v16i *dots, const int32_t *sx, int64_t sw) {
    const LjQConv *g = &s->g;
    int64_t zw = g->zw_per_m ? lj_ld_i64(g->ezw, g->zw, m) : g->zw0;
    int64_t base = -(s->sh + g->zx) * sw + s->k * g->zx * zw + s->sh * s->k * zw;
    base += g->bias ? lj_ld_i64(g->ebias, g->bias, m) : 0;
    requant(g, m, (const int32_t *)dots, s->any_zw ? zw : 0, sx, base,
            (nb * g->cout + m) * g->out_size + p0, np);
}

/* Weight row m's sum, computed on first use in a call and kept in sums
 * (INT32_MIN: not yet; a sum of K i8 is above -2^31 as K * 255 * 255 is). */
LJ_INLINE int32_t weight_sum(const QConvPlan *s, int32_t *sums, int64_t m) {
    if (sums[m] != INT32_MIN)
        return sums[m];
    const int8_t *w = (const int8_t *)s->g.w + m * s->k;
    vi32 acc = (vi32){0};
    int64_t j = 0;
    for (; j + LJ_VL <= s->k; j += LJ_VL) {
        int8_t __attribute__((vector_size(LJ_VL))) b;
        __builtin_memcpy(&b, w + j, sizeof b);
        acc += __builtin_convertvector(b, vi32);
    }
    int32_t t = 0;
    for (int l = 0; l < LJ_VL; l++)
        t += acc[l];
    for (; j < s->k; j++)
        t += w[j];
    return sums[m] = t;
}

/* ---- one position: a dot product per row ------------------------------------------ */

/* Row w's K bytes against x's (both read 64 at a time; x is zero beyond
 * K, and w's last part is copied so nothing past the row is read). */
#define ROW_DOT_BODY(STEP)                                                                         \
    v16i acc = (v16i){0}, xv, wv;                                                                  \
    int64_t j = 0;                                                                                 \
    for (; j + 64 <= k; j += 64) {                                                                 \
        __builtin_memcpy(&xv, x + j, 64);                                                          \
        __builtin_memcpy(&wv, w + j, 64);                                                          \
        acc = STEP(acc, xv, wv);                                                                   \
    }                                                                                              \
    if (j < k) {                                                                                   \
        int8_t t[64] = {0};                                                                        \
        __builtin_memcpy(t, w + j, (size_t)(k - j));                                               \
        __builtin_memcpy(&xv, x + j, 64);                                                          \
        __builtin_memcpy(&wv, t, 64);                                                              \
        acc = STEP(acc, xv, wv);                                                                   \
    }                                                                                              \
    int32_t sum = 0;                                                                               \
    for (int l = 0; l < VLANES; l++)                                                               \
        sum += acc[l];                                                                             \
    return sum;

LJ_INLINE int32_t row_dot_plain(const uint8_t *x, const int8_t *w, int64_t k) {
    ROW_DOT_BODY(dot4_plain)
}

#if defined(__x86_64__)
/* The row's dot product and its weight sum (the dot product with bytes of
 * 1), each in two chains: one chain of K / 64 dependent vpdpbusd waited on
 * their latency, and weight_sum widened 16 bytes at a time; together they
 * made a fully connected layer (2048 x 1000) 1.6 times ONNX Runtime's. */
static __attribute__((target("avx512f,avx512bw,avx512vnni,evex512"), min_vector_width(512))) int32_t
row_dot_vnni(const uint8_t *x, const int8_t *w, int64_t k, int32_t *wsum) {
    v16i a0 = (v16i){0}, a1 = a0, s0 = a0, s1 = a0, ones = (v16i){0} + 0x01010101, x0, x1, w0, w1;
    int64_t j = 0;
    for (; j + 128 <= k; j += 128) {
        __builtin_memcpy(&x0, x + j, 64);
        __builtin_memcpy(&x1, x + j + 64, 64);
        __builtin_memcpy(&w0, w + j, 64);
        __builtin_memcpy(&w1, w + j + 64, 64);
        a0 = DOT4_VNNI(a0, x0, w0);
        a1 = DOT4_VNNI(a1, x1, w1);
        s0 = DOT4_VNNI(s0, ones, w0);
        s1 = DOT4_VNNI(s1, ones, w1);
    }
    for (; j < k; j += 64) { /* x is zero beyond K; w's last part copied */
        int8_t t[64] = {0};
        __builtin_memcpy(t, w + j, (size_t)(k - j < 64 ? k - j : 64));
        __builtin_memcpy(&x0, x + j, 64);
        __builtin_memcpy(&w0, t, 64);
        a0 = DOT4_VNNI(a0, x0, w0);
        s0 = DOT4_VNNI(s0, ones, w0);
    }
    *wsum = __builtin_reduce_add(s0 + s1);
    return __builtin_reduce_add(a0 + a1);
}
#elif defined(__aarch64__)
#include <arm_neon.h>
/* The row's dot product with AArch64's sdot (libjit_qlinear_conv_sdot_*:
 * targets with dotprod), 16 bytes an instruction in four chains. sdot is
 * s8 x s8: x is flipped to x - 128 (xor 0x80), which takes 128 times the
 * weight sum away; gemv_rows adds it back. x is zero up to a multiple of
 * 64 (gemv_rows), so the last part needs only w's copied. */
static __attribute__((target("dotprod"))) int32_t row_dot_sdot(const uint8_t *x, const int8_t *w,
                                                                int64_t k) {
    int32x4_t a0 = vdupq_n_s32(0), a1 = a0, a2 = a0, a3 = a0;
    const uint8x16_t flip = vdupq_n_u8(0x80);
#define ROW_SDOT(a, j) a = vdotq_s32(a, vreinterpretq_s8_u8(veorq_u8(vld1q_u8(x + (j)), flip)), \
                                     vld1q_s8(w + (j)))
    int64_t j = 0;
    for (; j + 64 <= k; j += 64) {
        ROW_SDOT(a0, j);
        ROW_SDOT(a1, j + 16);
        ROW_SDOT(a2, j + 32);
        ROW_SDOT(a3, j + 48);
    }
    for (; j + 16 <= k; j += 16)
        ROW_SDOT(a0, j);
#undef ROW_SDOT
    if (j < k) {
        int8_t t[16] = {0};
        __builtin_memcpy(t, w + j, (size_t)(k - j));
        a0 = vdotq_s32(a0, vreinterpretq_s8_u8(veorq_u8(vld1q_u8(x + j), flip)), vld1q_s8(t));
    }
    return vaddvq_s32(vaddq_s32(vaddq_s32(a0, a1), vaddq_s32(a2, a3)));
}
#endif

/* A tile of one position (a fully connected layer): the packed bytes
 * (lane 0 of each group of four k) gathered to the front of xp, zero up to
 * a multiple of 64, then each row's dot product. */
LJ_INLINE void gemv_rows(const QConvPlan *s, int64_t nb, int64_t gr, int64_t mlo, int64_t mhi,
                         bool vnni, uint8_t *xp, int32_t *sx, int32_t *sums) {
    const LjQConv *g = &s->g;
    for (int64_t q = 0; q < s->k4; q++)
        __builtin_memmove(xp + 4 * q, xp + q * TILE * 4, 4);
    for (int64_t j = 4 * s->k4; j % 64; j++)
        xp[j] = 0;
    for (int64_t m = gr * g->mg + mlo; m < gr * g->mg + mhi; m++) {
        const int8_t *w = (const int8_t *)g->w + m * s->k;
        v16i dot = (v16i){0};
#if defined(__x86_64__)
        if (vnni) {
            int32_t wsum;
            dot[0] = row_dot_vnni(xp, w, s->k, &wsum);
            store_row(s, nb, m, 0, 1, &dot, sx, wsum);
            continue;
        } else
#elif defined(__aarch64__)
        if (vnni) /* sdot: 128 Sw back (row_dot_sdot), wrapping as the sums do */
            dot[0] = (int32_t)((uint32_t)row_dot_sdot(xp, w, s->k) +
                               128u * (uint32_t)weight_sum(s, sums, m));
        else
#endif
            dot[0] = row_dot_plain(xp, w, s->k);
        store_row(s, nb, m, 0, 1, &dot, sx, weight_sum(s, sums, m));
    }
}

LJ_INLINE void gemm_unit(const QConvPlan *s, int64_t u, bool vnni, uint8_t *xp, int32_t *sx,
                         int32_t *sums) {
    const LjQConv *g = &s->g;
    int64_t half = u % s->msplit, tile = u / s->msplit % s->tiles;
    int64_t gr = u / (s->msplit * s->tiles) % g->group, nb = u / (s->msplit * s->tiles * g->group);
    int64_t p0 = tile * TILE, np = g->out_size - p0 < TILE ? g->out_size - p0 : TILE;
    int64_t mlo = half * (g->mg / s->msplit), mhi = half + 1 == s->msplit ? g->mg : mlo + g->mg / s->msplit;
    pack_tile(s, nb, gr, p0, xp, sx);
    if (g->out_size == 1) {
        gemv_rows(s, nb, gr, mlo, mhi, vnni, xp, sx, sums);
        return;
    }
    const int8_t *wbase = g->w;
    for (int64_t m0 = mlo; m0 < mhi; m0 += MR) {
        const int8_t *w[MR];
        int64_t sw[MR];
        for (int r = 0; r < MR; r++) {
            int64_t m = gr * g->mg + (m0 + r < mhi ? m0 + r : m0);
            w[r] = wbase + m * s->k;
            sw[r] = weight_sum(s, sums, m);
        }
        v16i acc[MR][NVEC];
#if defined(__x86_64__)
        if (vnni)
            dot_vnni(xp, w, s->k, s->k4, acc);
        else
#endif
            dot_plain(xp, w, s->k, s->k4, acc);
        for (int r = 0; r < MR && m0 + r < mhi; r++)
            store_row(s, nb, gr * g->mg + m0 + r, p0, np, acc[r], sx, sw[r]);
    }
}

/* ---- depthwise ------------------------------------------------------------------------ */

/* A unit is a plane (image x channel). Its input less x_zp, zero-padded,
 * is widened to a 16-bit plane X, then copied into words that each hold
 * two kernel rows: word [yq][xq] of stride phase (ry, rx) is
 *   X(y, x) | X(y + dh, x) << 16,   y = yq sh + ry, x = xq sw + rx,
 * so kernel rows 2p and 2p + 1 at column tap j are one word, which one
 * vpdpwssd (VNNI; two multiplies in plain vector code) takes with the
 * weight pair (w[2p][j], w[2p + 1][j]) (0 past the last row): ceil(kh/2) kw
 * products of two per output, not kh kw of one. As in qconv_packed, output
 * (r, c) reads word r wq + c of its phase plus a per-tap offset, so 64
 * consecutive flattened positions are four loads per tap pair whatever the
 * row width (a 7x7 map fills 49 of 56 lanes, not 7 of 16); columns c >= ow
 * are computed and dropped. Sums are exact: |x - zx|, |w - zw| <= 255 and
 * K <= DW_TAPS keep them inside i32. */
enum { DW_T = 64 };

typedef struct DwPlan {
    int64_t kh, kw, sh, sw, dh, dw, oh, ow;
    int64_t pairs, taps2, wq, hq, plane, nq, xh, xw, words;
    int npy, npx, phy[DW_STRIDE], phx[DW_STRIDE];
} DwPlan;


LJ_INLINE DwPlan dw_plan(const LjQConv *g) {
    DwPlan p = {.kh = g->win.kernel[0], .kw = g->win.kernel[1], .sh = g->win.stride[0],
                .sw = g->win.stride[1], .dh = g->win.dilation[0], .dw = g->win.dilation[1],
                .oh = g->odims[0], .ow = g->odims[1]};
    p.pairs = (p.kh + 1) / 2;
    p.taps2 = p.pairs * p.kw;
    /* pair p's first row is 2p dh: phase (2p dh) % sh, row offset (2p dh) / sh */
    p.npy = lj_tap_phases(p.pairs, 2 * p.dh, p.sh, p.phy);
    p.npx = lj_tap_phases(p.kw, p.dw, p.sw, p.phx);
    p.hq = p.oh + (p.pairs - 1) * 2 * p.dh / p.sh;
    p.wq = p.ow + (p.kw - 1) * p.dw / p.sw;
    p.plane = p.hq * p.wq;
    p.nq = (p.oh * p.wq + DW_T - 1) / DW_T * DW_T;
    /* X: every row and column a word reads, and a vector of 16 words'
     * reach (32 values at stride 2) past the last column */
    p.xh = p.hq * p.sh + p.dh;
    p.xw = (p.wq + 16) * p.sw + p.sw;
    /* the words, then the last tile's reach past them (its lanes beyond the
     * map, plus the widest column offset) and a row's vector */
    p.words = p.npy * p.npx * p.plane + DW_T + 16 + p.wq;
    return p;
}

LJ_INLINE int64_t dw_align(int64_t bytes) {
    return (bytes + 63) / 64 * 64;
}

/* X (i16), the words, the sums (i32). */
LJ_INLINE size_t dw_bytes(const LjQConv *g) {
    DwPlan p = dw_plan(g);
    return (size_t)(dw_align(p.xh * p.xw * 2) + dw_align(p.words * 4) + dw_align(p.nq * 4));
}

typedef int16_t v16h __attribute__((vector_size(32)));
typedef int16_t v32h __attribute__((vector_size(64)));

/* n values x - zx of a row, widened W at a time, the last vector
 * overlapping the one before (n >= W): rows of 14 or 56 need no scalar
 * tail. */
#define DW_WIDEN(W)                                                                                \
    LJ_INLINE void dw_widen_##W(int ex, const uint8_t *in, int64_t n, int16_t zx, int16_t *out) { \
        typedef int16_t vh __attribute__((vector_size(2 * W)));                                    \
        for (int64_t t = 0; t < n; t += W) {                                                       \
            t = t + W <= n ? t : n - W;                                                            \
            vh v;                                                                                  \
            if (ex == ELEM_I8) {                                                                   \
                int8_t __attribute__((vector_size(W))) b;                                          \
                __builtin_memcpy(&b, in + t, W);                                                   \
                v = __builtin_convertvector(b, vh);                                                \
            } else {                                                                               \
                uint8_t __attribute__((vector_size(W))) b;                                         \
                __builtin_memcpy(&b, in + t, W);                                                   \
                v = __builtin_convertvector(b, vh);                                                \
            }                                                                                      \
            v -= zx;                                                                               \
            __builtin_memcpy(out + t, &v, sizeof v);                                               \
        }                                                                                          \
    }
DW_WIDEN(32)
DW_WIDEN(16)
DW_WIDEN(8)

/* X's rows: input row y at row y + pad top, column pad left, x - zx;
 * zero elsewhere. */
LJ_INLINE void dw_fill_x(const LjQConv *g, const DwPlan *p, const uint8_t *plane, int16_t *xp) {
    __builtin_memset(xp, 0, (size_t)(p->xh * p->xw * 2));
    int64_t iw = g->idims[1], pl = g->win.pad_begin[1], n = p->xw - pl < iw ? p->xw - pl : iw;
    int16_t zx = (int16_t)g->zx;
    for (int64_t y = 0; y < g->idims[0] && n > 0; y++) {
        int64_t yy = y + g->win.pad_begin[0];
        if (yy < 0 || yy >= p->xh)
            continue;
        const uint8_t *in = plane + y * iw;
        int16_t *out = xp + yy * p->xw + pl;
        if (n >= 32)
            dw_widen_32(g->ex, in, n, zx, out);
        else if (n >= 16)
            dw_widen_16(g->ex, in, n, zx, out);
        else if (n >= 8)
            dw_widen_8(g->ex, in, n, zx, out);
        else
            for (int64_t t = 0; t < n; t++)
                out[t] = (int16_t)((g->ex == ELEM_I8 ? (int16_t)(int8_t)in[t] : (int16_t)in[t]) - zx);
    }
}

/* 16 values of X row a at columns x0, x0 + s, ...: stride 1 and 2 in
 * vectors (the even lanes of 32), others one by one. */
LJ_INLINE v16h dw_cols(const int16_t *a, int64_t s) {
    if (s == 1) {
        v16h v;
        __builtin_memcpy(&v, a, sizeof v);
        return v;
    }
    if (s == 2) {
        v32h v;
        __builtin_memcpy(&v, a, sizeof v);
        return __builtin_shufflevector(v, v, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28,
                                       30);
    }
    v16h v;
    for (int l = 0; l < 16; l++)
        v[l] = a[l * s];
    return v;
}

/* The words of every used phase, 16 at a time (a row's last vector runs
 * into the next row, written after it, or into the slack). */
LJ_INLINE void dw_fill_words(const DwPlan *p, const int16_t *xp, uint32_t *words) {
    for (int64_t ry = 0; ry < p->sh; ry++)
        for (int64_t rx = 0; rx < p->sw && p->phy[ry] >= 0; rx++) {
            if (p->phx[rx] < 0)
                continue;
            uint32_t *out = words + (p->phy[ry] * p->npx + p->phx[rx]) * p->plane;
            for (int64_t yq = 0; yq < p->hq; yq++) {
                const int16_t *a = xp + (yq * p->sh + ry) * p->xw + rx, *b = a + p->dh * p->xw;
                for (int64_t xq = 0; xq < p->wq; xq += 16) {
                    v32h w = __builtin_shufflevector(dw_cols(a + xq * p->sw, p->sw),
                                                     dw_cols(b + xq * p->sw, p->sw), 0, 16, 1, 17,
                                                     2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23, 8,
                                                     24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14,
                                                     30, 15, 31);
                    __builtin_memcpy(out + yq * p->wq + xq, &w, sizeof w);
                }
            }
        }
    for (int64_t t = p->npy * p->npx * p->plane; t < p->words; t++)
        words[t] = 0;
}

/* Two i16 x i16 products per lane, in plain vector code. */
LJ_INLINE v16i dot2_plain(v16i acc, v16i x, v16i w) {
    return acc + ((x << 16) >> 16) * ((w << 16) >> 16) + (x >> 16) * (w >> 16);
}

/* sums[q, q + 64) for each tile q of the flattened positions: four
 * vectors over the tap pairs. */
#define DW_TILES_BODY(STEP)                                                                        \
    for (int64_t q = 0; q < nq; q += DW_T) {                                                       \
        v16i a0 = (v16i){0}, a1 = a0, a2 = a0, a3 = a0;                                            \
        for (int64_t t = 0; t < taps2; t++) {                                                      \
            const uint32_t *xt = words + toff[t] + q;                                              \
            v16i x0, x1, x2, x3, w = (v16i){0} + (int32_t)wpair[t];                                \
            __builtin_memcpy(&x0, xt, 64);                                                         \
            __builtin_memcpy(&x1, xt + 16, 64);                                                    \
            __builtin_memcpy(&x2, xt + 32, 64);                                                    \
            __builtin_memcpy(&x3, xt + 48, 64);                                                    \
            a0 = STEP(a0, x0, w), a1 = STEP(a1, x1, w), a2 = STEP(a2, x2, w), a3 = STEP(a3, x3, w); \
        }                                                                                          \
        __builtin_memcpy(sums + q, &a0, 64);                                                       \
        __builtin_memcpy(sums + q + 16, &a1, 64);                                                  \
        __builtin_memcpy(sums + q + 32, &a2, 64);                                                  \
        __builtin_memcpy(sums + q + 48, &a3, 64);                                                  \
    }
#define DW_TILES_ARGS                                                                              \
    const uint32_t *words, const uint32_t *wpair, const int64_t *toff, int64_t taps2, int64_t nq, \
        int32_t *sums

LJ_VECTOR_FN static void dw_tiles_plain(DW_TILES_ARGS) { DW_TILES_BODY(dot2_plain) }

#if defined(__x86_64__)
#define DOT2_VNNI(a, x, w) __builtin_ia32_vpdpwssd512(a, x, w)
static __attribute__((target("avx512f,avx512bw,avx512vnni,evex512"), min_vector_width(512))) void
dw_tiles_vnni(DW_TILES_ARGS) {
    DW_TILES_BODY(DOT2_VNNI)
}
#endif

LJ_INLINE void dw_unit(const QConvPlan *s, int64_t u, bool vnni, uint8_t *buf) {
    const LjQConv *g = &s->g;
    DwPlan p = dw_plan(g);
    int64_t c = u % g->cin;
    int16_t *xp = (int16_t *)buf;
    uint32_t *words = (uint32_t *)(buf + dw_align(p.xh * p.xw * 2));
    int32_t *sums = (int32_t *)((uint8_t *)words + dw_align(p.words * 4));
    dw_fill_x(g, &p, (const uint8_t *)g->x + u * g->in_size, xp);
    dw_fill_words(&p, xp, words);
    int64_t zw = g->zw_per_m ? lj_ld_i64(g->ezw, g->zw, c) : g->zw0;
    uint32_t wpair[DW_TAPS];
    int64_t toff[DW_TAPS];
    for (int64_t pi = 0; pi < p.pairs; pi++)
        for (int64_t j = 0; j < p.kw; j++) {
            int64_t i0 = 2 * pi, t0 = c * g->ksize + i0 * p.kw + j;
            int64_t lo = lj_ld_i64(g->ew, g->w, t0) - zw;
            int64_t hi = i0 + 1 < p.kh ? lj_ld_i64(g->ew, g->w, t0 + p.kw) - zw : 0;
            wpair[pi * p.kw + j] = (uint32_t)(uint16_t)lo | (uint32_t)(uint16_t)hi << 16;
            int64_t ph = p.phy[i0 * p.dh % p.sh] * p.npx + p.phx[j * p.dw % p.sw];
            toff[pi * p.kw + j] = ph * p.plane + i0 * p.dh / p.sh * p.wq + j * p.dw / p.sw;
        }
#if defined(__x86_64__)
    if (vnni)
        dw_tiles_vnni(words, wpair, toff, p.taps2, p.nq, sums);
    else
#endif
        dw_tiles_plain(words, wpair, toff, p.taps2, p.nq, sums);
    for (int64_t r = 1; r < p.oh; r++) /* the output columns, rows packed together */
        __builtin_memmove(sums + r * p.ow, sums + r * p.wq, (size_t)p.ow * 4);
    int64_t bias = g->bias ? lj_ld_i64(g->ebias, g->bias, c) : 0;
    /* the whole plane at once: small planes (7x7) fill vectors too */
    lj_qrequant_row(g->ey, (uint8_t *)g->y + u * g->out_size, sums, sums, 0, bias,
                    (double)lj_qconv_mult(g, c), (double)g->yz, g->out_size);
}

/* ---- entry points ---------------------------------------------------------------------- */

LJ_INLINE int64_t qconv_scratch(const int64_t *d, int slot) {
    QConvPlan s = plan_of(d, NULL);
    if (!s.fast || slot != LJ_SCRATCH_PACK)
        return 0;
    if (s.depthwise)
        return (int64_t)dw_bytes(&s.g);
    return s.k4 * TILE * 4 + TILE * 4 + s.g.cout * 4;
}

LJ_INLINE void qconv(const int64_t *d, void *const *ops, int64_t lo, int64_t hi, LjScratch *sc,
                     bool vnni) {
    QConvPlan s = plan_of(d, ops);
    if (!s.fast) { /* the plain kernel, with its units: (image, channel) */
        libjit_qlinear_conv_any(d, ops, lo, hi, sc);
        return;
    }
    void *buf = lj_scratch_get(sc, LJ_SCRATCH_PACK, (size_t)qconv_scratch(d, LJ_SCRATCH_PACK));
    if (!buf) { /* out of memory: the plain kernel needs none */
        libjit_qlinear_conv_any(d, ops, lo * s.g.batch * s.g.cout / plan_units(&s),
                                hi * s.g.batch * s.g.cout / plan_units(&s), sc);
        return;
    }
    int32_t *sx = (int32_t *)((uint8_t *)buf + s.k4 * TILE * 4), *sums = sx + TILE;
    for (int64_t m = 0; m < s.g.cout && !s.depthwise; m++)
        sums[m] = INT32_MIN;
    for (int64_t u = lo; u < hi; u++) {
        if (s.depthwise)
            dw_unit(&s, u, vnni, buf);
        else
            gemm_unit(&s, u, vnni, buf, sx, sums);
    }
    lj_scratch_put(sc, buf);
}

LJ_INLINE int64_t qconv_work(const int64_t *d) {
    QConvPlan s = plan_of(d, NULL);
    if (!s.fast)
        return s.g.batch * s.g.cout;
    return plan_units(&s) > 0 ? plan_units(&s) : 1;
}

#define QCONV_ENTRIES(E, SUFFIX, VNNI)                                                            \
    LIBJIT_WORK libjit_qlinear_conv##SUFFIX##_##E##_work(const int64_t *d) {                      \
        return qconv_work(d);                                                                     \
    }                                                                                             \
    LIBJIT_SCRATCH libjit_qlinear_conv##SUFFIX##_##E##_scratch(const int64_t *d, int slot) {      \
        return qconv_scratch(d, slot);                                                            \
    }                                                                                             \
    LIBJIT_KERNEL libjit_qlinear_conv##SUFFIX##_##E(const int64_t *d, void *const *ops,           \
                                                   int64_t lo, int64_t hi, LjScratch *sc) {       \
        qconv(d, ops, lo, hi, sc, VNNI);                                                          \
    }
QCONV_ENTRIES(i8, , false)
QCONV_ENTRIES(u8, , false)
#if defined(__x86_64__)
QCONV_ENTRIES(i8, _vnni, true)
QCONV_ENTRIES(u8, _vnni, true)
#elif defined(__aarch64__) /* sdot for fully connected rows only (gemv_rows) */
QCONV_ENTRIES(i8, _sdot, true)
QCONV_ENTRIES(u8, _sdot, true)
#endif
