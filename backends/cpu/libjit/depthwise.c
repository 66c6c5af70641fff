/* Depthwise convolution with the channels in the vector lanes.
 *
 * In NCHW, a depthwise convolution has nothing to share between planes and
 * little work per plane: on the 14x14 and 7x7 maps of MobileNet the fixed
 * cost of each plane (padding it, splitting it by stride) outweighed its
 * nine multiply-adds per output many times over. Here 16 channels at a time
 * are transposed to [position][16 channels] (4 shuffle rounds per 16x16
 * block, in registers), every output position is then one vector
 * accumulating its window's taps -- windows clipped at the borders, so no
 * padding is ever built -- and the result is transposed back. The
 * transposes cost about as much as copying the input and the output once;
 * every vector lane does useful work whatever the feature map's size.
 * Max and average pooling run the same way (lj_pool_lanes). A blocked
 * channel layout (NCHW16c) would make both transposes vanish. */
#include <stdlib.h>

#include "backends/cpu/libjit/window.h"

/* 16x16 transpose in registers: in the round of bit B, rows i and i + B
 * (i & B == 0) swap their off-diagonal B-wide blocks; after B = 1, 2, 4, 8
 * row j holds what was column j. */
#define SHUF(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)

LJ_INLINE void transpose_16x16(v16f *r) {
    for (int i = 0; i < LJ_VL; i += 2) {
        v16f a = r[i], b = r[i + 1];
        r[i] = SHUF(a, b, 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30);
        r[i + 1] = SHUF(a, b, 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31);
    }
    for (int i = 0; i < LJ_VL; i++) {
        if (i & 2)
            continue;
        v16f a = r[i], b = r[i + 2];
        r[i] = SHUF(a, b, 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29);
        r[i + 2] = SHUF(a, b, 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31);
    }
    for (int i = 0; i < LJ_VL; i++) {
        if (i & 4)
            continue;
        v16f a = r[i], b = r[i + 4];
        r[i] = SHUF(a, b, 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27);
        r[i + 4] = SHUF(a, b, 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31);
    }
    for (int i = 0; i < 8; i++) {
        v16f a = r[i], b = r[i + 8];
        r[i] = SHUF(a, b, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
        r[i + 8] = SHUF(a, b, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
    }
}

/* t[p][l] = x[l][p] for l < cn channels (the other lanes 0), p < n;
 * x rows `stride` apart. */
static void to_lanes(float *t, const float *x, int64_t stride, int cn, int64_t n) {
    for (int64_t p0 = 0; p0 < n; p0 += LJ_VL) {
        int64_t len = n - p0 < LJ_VL ? n - p0 : LJ_VL;
        v16f r[LJ_VL];
        for (int l = 0; l < LJ_VL; l++) {
            const float *src = x + l * stride + p0;
            r[l] = l >= cn ? lj_splat(0) : len == LJ_VL ? lj_load(src) : lj_load_part(src, len);
        }
        transpose_16x16(r);
        for (int64_t j = 0; j < len; j++)
            lj_store(t + (p0 + j) * LJ_VL, r[j]);
    }
}

/* y[l][q] = t[q][l] for l < cn, q < n. */
static void from_lanes(float *y, const float *t, int64_t stride, int cn, int64_t n) {
    for (int64_t q0 = 0; q0 < n; q0 += LJ_VL) {
        int64_t len = n - q0 < LJ_VL ? n - q0 : LJ_VL;
        v16f r[LJ_VL];
        for (int j = 0; j < LJ_VL; j++)
            r[j] = j < len ? lj_load(t + (q0 + j) * LJ_VL) : lj_splat(0);
        transpose_16x16(r);
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
LJ_INLINE v16f win_init(WinOp op, v16f bias) {
    return op == WIN_CONV ? bias : lj_splat(op == WIN_MAX ? -__builtin_inff() : 0.0f);
}

/* Tap t of a window (pooling has no weights: wt is NULL there). */
LJ_INLINE v16f win_tap(WinOp op, v16f acc, const float *wt, int64_t t, v16f x) {
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
LJ_INLINE v16f one_window(WinOp op, bool include_pad, const LjWindow *g, const float *xt,
                          const float *wt, v16f bias, int64_t oy, int64_t ox) {
    int64_t iy = oy * g->sh - g->ph, ix = ox * g->sw - g->pw, i0, i1, j0, j1;
    tap_range(iy, g->dh, g->kh, g->h, &i0, &i1);
    tap_range(ix, g->dw, g->kw, g->w, &j0, &j1);
    v16f acc = win_init(op, bias);
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

/* One block of channels: xt [h*w][16] in, ot [oh*ow][16] out. Where the
 * windows of OX neighbouring outputs are whole along x, they advance
 * together: OX independent accumulators, each tap's weights loaded once.
 * op is a constant in each caller, so its tests fold. */
LJ_INLINE void block_windows(WinOp op, bool include_pad, const LjWindow *g, const float *xt,
                             const float *wt, v16f bias, LjAct act, float *ot) {
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
            v16f acc[OX];
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
                v16f v = op == WIN_AVG ? acc[u] / (n > 0 ? n : 1.0f) : acc[u];
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
