/* Depthwise convolution with the channels in the vector lanes.
 *
 * In NCHW, a depthwise convolution has nothing to share between planes and
 * little work per plane: on the 14x14 and 7x7 maps of MobileNet the fixed
 * cost of each plane (padding it, splitting it by stride) outweighed its
 * nine multiply-adds per output many times over. Here LJ_VL channels at a
 * time are transposed to [position][LJ_VL channels] (log2 LJ_VL shuffle
 * rounds per block, in registers), every output position is then one vector
 * accumulating its window's taps -- windows clipped at the borders, so no
 * padding is ever built -- and the result is transposed back. The
 * transposes cost about as much as copying the input and the output once;
 * every vector lane does useful work whatever the feature map's size.
 * Max and average pooling run the same way (lj_pool_lanes). A blocked
 * channel layout (NCHW16c on x86-64) would make both transposes vanish. */
#include <stdlib.h>

#include "backends/cpu/libjit/window.h"

/* LJ_VL x LJ_VL transpose in registers: in the round of bit B, rows i and
 * i + B (i & B == 0) swap their off-diagonal B-wide blocks -- lane l of row
 * i takes row i + B's lane l - B where l has bit B, and row i + B takes row
 * i's lane l + B where l has not; after B = 1, 2, ..., LJ_VL/2, row j holds
 * what was column j. */
#define SHUF(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#define LOW_LANE(l, B) ((l) & (B) ? (l) - (B) + LJ_VL : (l))
#define HIGH_LANE(l, B) ((l) & (B) ? (l) + LJ_VL : (l) + (B))
#define TRANSPOSE_PAIR(i, B)                                                                    \
    {                                                                                           \
        vf32 a = r[i], b = r[(i) + (B)];                                                        \
        r[i] = SHUF(a, b, LJ_LANES(LOW_LANE, B));                                               \
        r[(i) + (B)] = SHUF(a, b, LJ_LANES(HIGH_LANE, B));                                      \
    }

LJ_INLINE void transpose_lanes(vf32 *r) {
    for (int i = 0; i < LJ_VL; i += 2)
        TRANSPOSE_PAIR(i, 1)
    for (int i = 0; i < LJ_VL; i++) {
        if (i & 2)
            continue;
        TRANSPOSE_PAIR(i, 2)
    }
#if LJ_VL > 4
    for (int i = 0; i < LJ_VL; i++) {
        if (i & 4)
            continue;
        TRANSPOSE_PAIR(i, 4)
    }
#endif
#if LJ_VL > 8
    for (int i = 0; i < 8; i++)
        TRANSPOSE_PAIR(i, 8)
#endif
}

/* t[p][l] = x[l][p] for l < cn channels (the other lanes 0), p < n;
 * x rows `stride` apart. */
static void to_lanes(float *t, const float *x, int64_t stride, int cn, int64_t n) {
    for (int64_t p0 = 0; p0 < n; p0 += LJ_VL) {
        int64_t len = n - p0 < LJ_VL ? n - p0 : LJ_VL;
        vf32 r[LJ_VL];
        for (int l = 0; l < LJ_VL; l++) {
            const float *src = x + l * stride + p0;
            r[l] = l >= cn ? lj_splat(0) : len == LJ_VL ? lj_load(src) : lj_load_part(src, len);
        }
        transpose_lanes(r);
        for (int64_t j = 0; j < len; j++)
            lj_store(t + (p0 + j) * LJ_VL, r[j]);
    }
}

/* y[l][q] = t[q][l] for l < cn, q < n. */
static void from_lanes(float *y, const float *t, int64_t stride, int cn, int64_t n) {
    for (int64_t q0 = 0; q0 < n; q0 += LJ_VL) {
        int64_t len = n - q0 < LJ_VL ? n - q0 : LJ_VL;
        vf32 r[LJ_VL];
        for (int j = 0; j < LJ_VL; j++)
            r[j] = j < len ? lj_load(t + (q0 + j) * LJ_VL) : lj_splat(0);
        transpose_lanes(r);
        for (int l = 0; l < cn; l++) {
            float *dst = y + l * stride + q0;
            if (len == LJ_VL)
                lj_store(dst, r[l]);
            else
                lj_store_part(dst, r[l], len);
        }
    }
}

/* The taps of a window inside [0, in) along one axis: [*lo, *hi). */
LJ_INLINE void tap_range(int64_t at, int64_t d, int64_t k, int64_t in, int64_t *lo, int64_t *hi) {
    *lo = at >= 0 ? 0 : (-at + d - 1) / d;
    *hi = at + (k - 1) * d < in ? k : (in - at + d - 1) / d;
    if (*hi < *lo)
        *hi = *lo;
}

enum { OX = 8 }; /* outputs in flight: a window's taps are a chain of dependent ops */

/* What a window does with its taps: convolve (the block's weights), or
 * pool (max, or the sum divided by ONNX's count). */
typedef enum { WIN_CONV, WIN_MAX, WIN_AVG } WinOp;

/* A max over a window clipped to nothing (wholly in the padding) stays
 * -inf, as the interpreter's (README, "Pooling"). */
LJ_INLINE vf32 win_init(WinOp op, vf32 bias) {
    return op == WIN_CONV ? bias : lj_splat(op == WIN_MAX ? -__builtin_inff() : 0.0f);
}

/* Tap t of a window (pooling has no weights: wt is NULL there). */
LJ_INLINE vf32 win_tap(WinOp op, vf32 acc, const float *wt, int64_t t, vf32 x) {
    if (op == WIN_CONV)
        return acc + lj_load(wt + t * LJ_VL) * x;
    return op == WIN_MAX ? lj_max(acc, x) : acc + x;
}

/* The taps average pooling counts along one axis: those inside the input,
 * or with count_include_pad those before the end pad (ceil_mode's overhang
 * past it never counts). */
LJ_INLINE int64_t win_count(const LjWindow *g, bool include_pad, int64_t at, int64_t d, int64_t k,
                            int64_t in, int64_t pad_end) {
    int64_t lo, hi;
    tap_range(at, d, k, include_pad ? in + pad_end : in, &lo, &hi);
    return include_pad ? hi : hi - lo;
}

/* Output (oy, ox) of one block, its window clipped at the borders. */
LJ_INLINE vf32 one_window(WinOp op, bool include_pad, const LjWindow *g, const float *xt,
                          const float *wt, vf32 bias, int64_t oy, int64_t ox) {
    int64_t iy = oy * g->sh - g->ph, ix = ox * g->sw - g->pw, i0, i1, j0, j1;
    tap_range(iy, g->dh, g->kh, g->h, &i0, &i1);
    tap_range(ix, g->dw, g->kw, g->w, &j0, &j1);
    vf32 acc = win_init(op, bias);
    for (int64_t i = i0; i < i1; i++) {
        const float *row = xt + ((iy + i * g->dh) * g->w + ix) * LJ_VL;
        for (int64_t j = j0; j < j1; j++)
            acc = win_tap(op, acc, wt, i * g->kw + j, lj_load(row + j * g->dw * LJ_VL));
    }
    if (op == WIN_AVG) {
        int64_t n = win_count(g, include_pad, iy, g->dh, g->kh, g->h, g->ph_end) *
                    win_count(g, include_pad, ix, g->dw, g->kw, g->w, g->pw_end);
        acc /= (float)(n ? n : 1);
    }
    return acc;
}

/* One block of channels: xt [h*w][LJ_VL] in, ot [oh*ow][LJ_VL] out. Where the
 * windows of OX neighbouring outputs are whole along x, they advance
 * together: OX independent accumulators, each tap's weights loaded once.
 * op is a constant in each caller, so its tests fold. */
LJ_INLINE void block_windows(WinOp op, bool include_pad, const LjWindow *g, const float *xt,
                             const float *wt, vf32 bias, LjAct act, float *ot) {
    /* Outputs whose window is inside the input along x: [x_lo, x_hi). */
    int64_t x_lo = (g->pw + g->sw - 1) / g->sw;
    int64_t x_hi = g->w - 1 - (g->kw - 1) * g->dw + g->pw;
    x_hi = x_hi < 0 ? 0 : x_hi / g->sw + 1;
    x_hi = x_hi < g->ow ? x_hi : g->ow;
    x_lo = x_lo < x_hi ? x_lo : x_hi;
    for (int64_t oy = 0; oy < g->oh; oy++) {
        int64_t iy = oy * g->sh - g->ph, i0, i1;
        tap_range(iy, g->dh, g->kh, g->h, &i0, &i1);
        /* Inside along x, the count is kw whatever include_pad says. */
        float n = (float)(win_count(g, include_pad, iy, g->dh, g->kh, g->h, g->ph_end) * g->kw);
        float *orow = ot + oy * g->ow * LJ_VL;
        int64_t ox = 0;
        for (; ox < x_lo; ox++)
            lj_store(orow + ox * LJ_VL,
                     lj_act(one_window(op, include_pad, g, xt, wt, bias, oy, ox), act));
        for (; ox + OX <= x_hi; ox += OX) {
            vf32 acc[OX];
            for (int u = 0; u < OX; u++)
                acc[u] = win_init(op, bias);
            for (int64_t i = i0; i < i1; i++) {
                const float *row = xt + ((iy + i * g->dh) * g->w + ox * g->sw - g->pw) * LJ_VL;
                for (int64_t j = 0; j < g->kw; j++) {
                    const float *src = row + j * g->dw * LJ_VL;
                    for (int u = 0; u < OX; u++)
                        acc[u] = win_tap(op, acc[u], wt, i * g->kw + j, lj_load(src + u * g->sw * LJ_VL));
                }
            }
            for (int u = 0; u < OX; u++) {
                vf32 v = op == WIN_AVG ? acc[u] / (n > 0 ? n : 1.0f) : acc[u];
                lj_store(orow + (ox + u) * LJ_VL, lj_act(v, act));
            }
        }
        for (; ox < g->ow; ox++)
            lj_store(orow + ox * LJ_VL,
                     lj_act(one_window(op, include_pad, g, xt, wt, bias, oy, ox), act));
    }
}

int64_t lj_depthwise_blocks(int64_t c) {
    return (c + LJ_VL - 1) / LJ_VL;
}

LJ_VECTOR_FN bool lj_depthwise_lanes(const LjWindow *g, int64_t c, const float *x,
                                     const float *w, const float *bias, float *y, LjAct act,
                                     int64_t lo, int64_t hi, LjScratch *sc) {
    int64_t in = g->h * g->w, out = g->oh * g->ow, taps = g->kh * g->kw;
    float *xt =
        lj_scratch_get(sc, LJ_SCRATCH_PLANES, (size_t)(in + out + taps) * LJ_VL * sizeof(float));
    if (!xt)
        return false;
    float *ot = xt + in * LJ_VL, *wt = ot + out * LJ_VL;
    int64_t blocks = lj_depthwise_blocks(c);
    for (int64_t u = lo; u < hi; u++) {
        int64_t img = u / blocks, c0 = u % blocks * LJ_VL;
        int cn = (int)(c - c0 < LJ_VL ? c - c0 : LJ_VL);
        to_lanes(wt, w + c0 * taps, taps, cn, taps);
        float b[LJ_VL] = {0};
        for (int l = 0; l < cn && bias; l++)
            b[l] = bias[c0 + l];
        to_lanes(xt, x + (img * c + c0) * in, in, cn, in);
        block_windows(WIN_CONV, false, g, xt, wt, lj_load(b), act, ot);
        from_lanes(y + (img * c + c0) * out, ot, out, cn, out);
    }
    lj_scratch_put(sc, xt);
    return true;
}

size_t lj_pool_lanes_scratch(const LjWindow *g) {
    return (size_t)(g->h * g->w + g->oh * g->ow) * LJ_VL * sizeof(float);
}

LJ_VECTOR_FN bool lj_pool_lanes(const LjWindow *g, LjPool kind, bool count_include_pad,
                                int64_t c, const float *x, float *y, int64_t lo, int64_t hi,
                                LjScratch *sc) {
    int64_t in = g->h * g->w, out = g->oh * g->ow;
    float *xt = lj_scratch_get(sc, LJ_SCRATCH_PLANES, lj_pool_lanes_scratch(g));
    if (!xt)
        return false;
    float *ot = xt + in * LJ_VL;
    int64_t blocks = lj_depthwise_blocks(c);
    LjAct none = {0, 0, 0};
    for (int64_t u = lo; u < hi; u++) {
        int64_t img = u / blocks, c0 = u % blocks * LJ_VL;
        int cn = (int)(c - c0 < LJ_VL ? c - c0 : LJ_VL);
        to_lanes(xt, x + (img * c + c0) * in, in, cn, in);
        if (kind == LJ_POOL_MAX)
            block_windows(WIN_MAX, false, g, xt, NULL, lj_splat(0), none, ot);
        else
            block_windows(WIN_AVG, count_include_pad, g, xt, NULL, lj_splat(0), none, ot);
        from_lanes(y + (img * c + c0) * out, ot, out, cn, out);
    }
    lj_scratch_put(sc, xt);
    return true;
}

/* ---- depthwise convolution over a padded block of LJ_VL channels --------
 *
 * dwconv.c's vectors run along an output row, so a 7-wide row fills 7 of
 * 16 lanes and a stride-2 row is first copied into phase rows (more than
 * half of such a layer's time). Here LJ_VL channels are transposed into a
 * zero-padded buffer [hp][wp][LJ_VL] once per block, and every output
 * position is one vector: all lanes are useful whatever the map's width,
 * and a stride is only a step between loads. The taps are the same, in
 * the same order (bias, then row-major, padding's zeros included), as
 * dwconv.c's, so each output is bit for bit what that kernel gives. The
 * transposes cost about a shuffle per input float, so this pays where the
 * rows are short or strided (lj_dwconv_lanes_fits). */

enum { DL_N = 8 }; /* outputs of a row in flight: a window's taps are a chain */

typedef struct DlPlan {
    LjWindow g;
    int64_t hp, wp; /* the padded buffer: every row and column a tap reads */
    int64_t n;      /* outputs per chunk of a row (at most DL_N) */
} DlPlan;

LJ_INLINE DlPlan dl_plan(const LjWindow *g) {
    DlPlan p;
    p.g = *g;
    int64_t rows = (g->oh - 1) * g->sh + (g->kh - 1) * g->dh + 1;
    int64_t cols = (g->ow - 1) * g->sw + (g->kw - 1) * g->dw + 1;
    p.hp = rows > g->ph + g->h ? rows : g->ph + g->h;
    p.wp = cols > g->pw + g->w ? cols : g->pw + g->w;
    int64_t chunks = (g->ow + DL_N - 1) / DL_N;
    p.n = (g->ow + chunks - 1) / chunks; /* 7 and 7 for 14, not 8 and 6 */
    return p;
}

LJ_FOLDED size_t lj_dwconv_lanes_scratch(const LjWindow *g) {
    DlPlan p = dl_plan(g);
    return (size_t)(p.hp * p.wp + g->oh * g->ow + g->kh * g->kw) * LJ_VL * sizeof(float);
}

/* Maps of 7 outputs wide or less, where dwconv.c's rows fill under half
 * of their lanes. bench_conv, 1 thread: EfficientNet-B0's 7x7 5x5 16.6 ->
 * 27.7 GF/s, 7x7 3x3 9.0 -> 12.0, 14x14 5x5 stride 2 11.2 -> 18.9;
 * MobileNet-V2's 14x14 stride 2 7.0 -> 9.6, 7x7 16.2 -> 16.4. On 14-wide
 * and wider maps dwconv.c's rows were faster (its stride-2 phase copies
 * included): the transposes then cost more than the lanes gain. */
LJ_FOLDED bool lj_dwconv_lanes_fits(const LjWindow *g) {
    return g->ow <= 7;
}

/* v[j][l] = x[l * n + p0 + j] for the len (<= LJ_VL) positions from p0 of
 * the cn rows of n floats at x (lanes past cn 0): the rows of a block are
 * contiguous (row l + 1 follows row l), so a vector read past the end of
 * one row is whole while it stays in the block, else read by parts. */
LJ_INLINE void dl_block_lanes(vf32 v[LJ_VL], const float *x, int cn, int64_t n, int64_t p0,
                              int64_t len) {
    for (int l = 0; l < LJ_VL; l++) {
        const float *src = x + l * n + p0;
        v[l] = l >= cn                          ? lj_splat(0)
               : (l * n + p0 + LJ_VL <= cn * n) ? lj_load(src)
                                                : lj_load_part(src, len);
    }
    transpose_lanes(v);
}

/* t[p][l] = x[l * n + p], as to_lanes, one block of positions at a time
 * (dl_block_lanes). */
LJ_INLINE void dl_rows_to_lanes(float *t, const float *x, int cn, int64_t n) {
    for (int64_t p0 = 0; p0 < n; p0 += LJ_VL) {
        int64_t len = n - p0 < LJ_VL ? n - p0 : LJ_VL;
        vf32 v[LJ_VL];
        dl_block_lanes(v, x, cn, n, p0, len);
        for (int64_t j = 0; j < len; j++)
            lj_store(t + (p0 + j) * LJ_VL, v[j]);
    }
}

/* The cn channel planes at x (plane size h*w) into the inside of the padded
 * buffer, position by position; lanes past cn get 0. A vector read past a
 * plane's end lands in the following planes of the block (its lanes are
 * not stored); one that would pass the block's end is read by parts. */
LJ_INLINE void dl_fill(const DlPlan *p, const float *x, int cn, float *xt) {
    const LjWindow *g = &p->g;
    int64_t n = g->h * g->w, r = 0, col = 0;
    for (int64_t p0 = 0; p0 < n; p0 += LJ_VL) {
        int64_t len = n - p0 < LJ_VL ? n - p0 : LJ_VL;
        vf32 v[LJ_VL];
        dl_block_lanes(v, x, cn, n, p0, len);
        for (int64_t j = 0; j < len; j++) {
            lj_store(xt + ((r + g->ph) * p->wp + col + g->pw) * LJ_VL, v[j]);
            if (++col == g->w) {
                col = 0;
                r++;
            }
        }
    }
}

#pragma clang diagnostic ignored "-Wpass-failed" /* not unrolled where N is not a constant */
#define DL_LOOP_U _Pragma("clang loop unroll(full)") for (int64_t u = 0; u < N; u++)

LJ_INLINE void dl_store(int64_t N, vf32 *acc, LjAct act, float *ot) {
    DL_LOOP_U { lj_store(ot + u * LJ_VL, lj_act(acc[u], act)); }
}

/* Outputs (oy, ox .. ox+N-1) of the block: N accumulators, each tap's
 * weights loaded once for them. */
LJ_INLINE void dl_chunk(int64_t N, const DlPlan *p, const float *xt, const float *wt, vf32 bias,
                        LjAct act, float *ot, int64_t oy, int64_t ox) {
    const LjWindow *g = &p->g;
    vf32 acc[DL_N];
    DL_LOOP_U { acc[u] = bias; }
    for (int64_t i = 0; i < g->kh; i++) {
        const float *row = xt + ((oy * g->sh + i * g->dh) * p->wp + ox * g->sw) * LJ_VL;
        for (int64_t j = 0; j < g->kw; j++) {
            vf32 wv = lj_load(wt + (i * g->kw + j) * LJ_VL);
            const float *src = row + j * g->dw * LJ_VL;
            DL_LOOP_U { acc[u] += wv * lj_load(src + u * g->sw * LJ_VL); }
        }
    }
    float *dst = ot + (oy * g->ow + ox) * LJ_VL;
    /* The common activations' kinds made constants, as in dwconv.c. */
    switch (act.kind) {
    case ACT_NONE: dl_store(N, acc, (LjAct){ACT_NONE, 0, 0}, dst); break;
    case ACT_RELU: dl_store(N, acc, (LjAct){ACT_RELU, 0, 0}, dst); break;
    case ACT_CLIP: dl_store(N, acc, (LjAct){ACT_CLIP, act.alpha, act.beta}, dst); break;
    case ACT_SILU: dl_store(N, acc, (LjAct){ACT_SILU, 0, 0}, dst); break;
    default: dl_store(N, acc, act, dst); break;
    }
}

/* A chunk of n <= DL_N outputs, n made a constant. */
LJ_INLINE void dl_chunk_any(int64_t n, const DlPlan *p, const float *xt, const float *wt,
                            vf32 bias, LjAct act, float *ot, int64_t oy, int64_t ox) {
    switch (n) {
#define DL_CASE(k)                                                                              \
    case k: dl_chunk(k, p, xt, wt, bias, act, ot, oy, ox); return;
        DL_CASE(1) DL_CASE(2) DL_CASE(3) DL_CASE(4) DL_CASE(5) DL_CASE(6) DL_CASE(7) DL_CASE(8)
#undef DL_CASE
    default: break;
    }
}
_Static_assert(DL_N == 8, "dl_chunk_any has a case for each chunk width up to DL_N");

/* Planes [lo, hi) in blocks of up to LJ_VL channels of one image: fill,
 * every output row in chunks of p.n, back to planes. buf is zeroed and
 * lj_dwconv_lanes_scratch bytes long. */
LJ_INLINE void dl_planes(const LjWindow *gin, int64_t c, const float *x, const float *w,
                         const float *bias, float *y, LjAct act, int64_t lo, int64_t hi,
                         float *buf) {
    DlPlan p = dl_plan(gin);
    const LjWindow *g = &p.g;
    int64_t in = g->h * g->w, out = g->oh * g->ow, taps = g->kh * g->kw;
    float *xt = buf, *ot = xt + p.hp * p.wp * LJ_VL, *wt = ot + out * LJ_VL;
    for (int64_t pl = lo; pl < hi;) {
        int64_t ch = pl % c, cn = hi - pl;
        cn = cn < c - ch ? cn : c - ch;
        cn = cn < LJ_VL ? cn : LJ_VL;
        dl_rows_to_lanes(wt, w + ch * taps, (int)cn, taps);
        float b[LJ_VL] = {0};
        for (int64_t l = 0; l < cn && bias; l++)
            b[l] = bias[ch + l];
        vf32 bv = lj_load(b);
        dl_fill(&p, x + pl * in, (int)cn, xt);
        for (int64_t oy = 0; oy < g->oh; oy++) {
            int64_t ox = 0;
            for (; ox + p.n <= g->ow; ox += p.n)
                dl_chunk_any(p.n, &p, xt, wt, bv, act, ot, oy, ox);
            if (ox < g->ow)
                dl_chunk_any(g->ow - ox, &p, xt, wt, bv, act, ot, oy, ox);
        }
        from_lanes(y + pl * out, ot, out, (int)cn, out);
        pl += cn;
    }
}

/* The windows of MobileNet and EfficientNet (k x k, stride s, dilation 1)
 * compiled with those constants, so that the tap loops unroll; the map's
 * sizes and pads stay variables (the padded buffer makes them matter only
 * to the fill). */
#define DL_FIXED(X) X(3, 1) X(3, 2) X(5, 1) X(5, 2)

#define DL_FIXED_FN(k, s)                                                                       \
    LJ_VECTOR_FN static void dl_fixed_##k##_##s(const LjWindow *g0, int64_t c, const float *x,  \
                                                const float *w, const float *bias, float *y,    \
                                                LjAct act, int64_t lo, int64_t hi, float *buf) { \
        LjWindow g = *g0;                                                                       \
        g.kh = g.kw = (k);                                                                      \
        g.sh = g.sw = (s);                                                                      \
        g.dh = g.dw = 1;                                                                        \
        dl_planes(&g, c, x, w, bias, y, act, lo, hi, buf);                                      \
    }
DL_FIXED(DL_FIXED_FN)
#undef DL_FIXED_FN

LJ_VECTOR_FN static void dl_generic(const LjWindow *g, int64_t c, const float *x, const float *w,
                                    const float *bias, float *y, LjAct act, int64_t lo,
                                    int64_t hi, float *buf) {
    dl_planes(g, c, x, w, bias, y, act, lo, hi, buf);
}

LJ_VECTOR_FN bool lj_dwconv_lanes(const LjWindow *g, int64_t c, const float *x, const float *w,
                                  const float *bias, float *y, LjAct act, int64_t lo, int64_t hi,
                                  LjScratch *sc) {
    size_t bytes = lj_dwconv_lanes_scratch(g);
    float *buf = lj_scratch_get(sc, LJ_SCRATCH_PLANES, bytes);
    if (!buf)
        return false;
    __builtin_memset(buf, 0, bytes);
    bool square = g->kh == g->kw && g->sh == g->sw && g->dh == 1 && g->dw == 1;
#define DL_FIXED_CASE(k, s)                                                                     \
    if (square && g->kh == (k) && g->sh == (s))                                                 \
        dl_fixed_##k##_##s(g, c, x, w, bias, y, act, lo, hi, buf);                              \
    else
    DL_FIXED(DL_FIXED_CASE)
#undef DL_FIXED_CASE
    dl_generic(g, c, x, w, bias, y, act, lo, hi, buf);
    lj_scratch_put(sc, buf);
    return true;
}
