/* Depthwise convolution and pooling over phase planes (window.h). */
#include "backends/cpu/libjit/window.h"

enum {
    U = 4,                       /* vectors of outputs per step: independent accumulators */
    STEP = U * LJ_VL,            /* flattened outputs per step */
    PLANE_FLOATS = 40 * 1024,    /* phase planes of one input plane: 160 KB of stack */
    OUT_FLOATS = 16 * 1024,      /* one flattened output plane: 64 KB */
};

LjPhases lj_phases(const LjWindow *g, int64_t step) {
    LjPhases q;
    q.hq = g->oh + (g->kh - 1) * g->dh / g->sh;
    q.wq = g->ow + (g->kw - 1) * g->dw / g->sw;
    q.npos = (g->oh * q.wq + step - 1) / step * step;
    /* The last step reads up to npos - 1 + (hq - oh) * wq + (wq - ow). */
    int64_t rows = (q.npos + q.wq - 1) / q.wq + (q.hq - g->oh) + 1;
    q.size = rows * q.wq;
    return q;
}

bool lj_window_fits(const LjWindow *g) {
    if (g->oh <= 0 || g->ow <= 0)
        return false;
    LjPhases q = lj_phases(g, STEP);
    return g->sh * g->sw * q.size <= PLANE_FLOATS && q.npos <= OUT_FLOATS;
}

LJ_INLINE void fill_run(float *dst, int64_t n, float fill) {
    vf32 f = lj_splat(fill);
    int64_t i = 0;
    for (; i + LJ_VL <= n; i += LJ_VL)
        lj_store(dst + i, f);
    for (; i < n; i++)
        dst[i] = fill;
}

/* dst[0 .. n) = src[0 .. n) for 2 <= n < LJ_VL: two copies of the largest
 * power of two w <= n floats, [0, w) and [n - w, n), overlapping. Rows of a
 * 14x14 or 7x7 map are shorter than a vector, and DenseNet's 3x3 convs on
 * them spent a sixth of their time copying them a float at a time. */
LJ_INLINE void copy_short(float *dst, const float *src, int64_t n) {
#define COPY_PAIR(w)                                                                        \
    do {                                                                                    \
        float t0[w], t1[w];                                                                 \
        __builtin_memcpy(t0, src, sizeof t0);                                               \
        __builtin_memcpy(t1, src + n - (w), sizeof t1);                                     \
        __builtin_memcpy(dst, t0, sizeof t0);                                               \
        __builtin_memcpy(dst + n - (w), t1, sizeof t1);                                     \
    } while (0)
#if LJ_VL > 8
    if (n >= 8) {
        COPY_PAIR(8);
        return;
    }
#endif
#if LJ_VL > 4
    if (n >= 4) {
        COPY_PAIR(4);
        return;
    }
#endif
    COPY_PAIR(2);
#undef COPY_PAIR
}

/* dst[i] = src[i*stride] for i < n. Runs of LJ_VL or more end with a vector
 * that overlaps the one before instead of a scalar tail, shorter runs take
 * copy_short; stride 2 takes the even lanes of 32 loads while they stay
 * inside the run. */
LJ_INLINE void copy_run(float *dst, const float *src, int64_t stride, int64_t n) {
    int64_t i = 0;
    if (stride == 1 && n >= LJ_VL) {
        for (; i + LJ_VL <= n; i += LJ_VL)
            lj_store(dst + i, lj_load(src + i));
        if (i < n)
            lj_store(dst + n - LJ_VL, lj_load(src + n - LJ_VL));
        return;
    }
    if (stride == 1 && n >= 2) {
        copy_short(dst, src, n);
        return;
    }
    if (stride == 2) {
        /* reads up to src[2i + 2 LJ_VL - 1] <= src[2(n-1)] */
        for (; i + LJ_VL < n; i += LJ_VL)
            lj_store(dst + i, lj_even(lj_load(src + 2 * i), lj_load(src + 2 * i + LJ_VL)));
    }
    for (; i < n; i++)
        dst[i] = src[i * stride];
}

/* dst[i] = row[col0 + i*stride] for i < n, `fill` outside [0, w). */
LJ_INLINE void gather_row(float *dst, const float *row, int64_t w, int64_t col0, int64_t stride,
                          int64_t n, float fill) {
    int64_t lo = col0 >= 0 ? 0 : (-col0 + stride - 1) / stride;
    int64_t hi = col0 >= w ? 0 : (w - col0 + stride - 1) / stride;
    hi = hi < n ? hi : n;
    lo = lo < hi ? lo : hi;
    fill_run(dst, lo, fill);
    copy_run(dst + lo, row + col0 + lo * stride, stride, hi - lo);
    fill_run(dst + hi, n - hi, fill);
}

/* Whether some tap reads phase (rp, cp). */
static bool phase_used(const LjWindow *g, int64_t rp, int64_t cp) {
    bool row = false, col = false;
    for (int64_t i = 0; i < g->kh; i++)
        row |= i * g->dh % g->sh == rp;
    for (int64_t j = 0; j < g->kw; j++)
        col |= j * g->dw % g->sw == cp;
    return row && col;
}

void lj_build_phase_rows(const LjWindow *g, const LjPhases *q, const float *x, float fill,
                         float *buf, int64_t r0, int64_t r1) {
    int64_t size = (r1 - r0) * q->wq;
    for (int64_t rp = 0; rp < g->sh; rp++) {
        for (int64_t cp = 0; cp < g->sw; cp++) {
            if (!phase_used(g, rp, cp))
                continue;
            float *p = buf + (rp * g->sw + cp) * size;
            for (int64_t r = r0; r < r1; r++) {
                int64_t y = r * g->sh + rp - g->ph;
                float *row = p + (r - r0) * q->wq;
                if (y < 0 || y >= g->h || r >= q->hq) {
                    fill_run(row, q->wq, fill);
                    continue;
                }
                gather_row(row, x + y * g->w, g->w, cp - g->pw, g->sw, q->wq, fill);
            }
        }
    }
}

void lj_build_phases(const LjWindow *g, const LjPhases *q, const float *x, float fill,
                     float *buf) {
    lj_build_phase_rows(g, q, x, fill, buf, 0, q->size / q->wq);
}

int64_t lj_tap_offset(const LjWindow *g, const LjPhases *q, int64_t i, int64_t j) {
    int64_t ri = i * g->dh, cj = j * g->dw;
    return ((ri % g->sh) * g->sw + cj % g->sw) * q->size + (ri / g->sh) * q->wq + cj / g->sw;
}

/* y[oy][0 .. ow) = out[oy*wq ..]: drops the columns computed past ow. */
static void compact(const LjWindow *g, const LjPhases *q, const float *out, float *y) {
    for (int64_t oy = 0; oy < g->oh; oy++) {
        const float *src = out + oy * q->wq;
        float *dst = y + oy * g->ow;
        int64_t ox = 0;
        for (; ox + LJ_VL <= g->ow; ox += LJ_VL)
            lj_store(dst + ox, lj_load(src + ox));
        for (; ox < g->ow; ox++)
            dst[ox] = src[ox];
    }
}

LJ_VECTOR_FN void lj_depthwise(const LjWindow *g, int64_t c, const float *x, const float *w,
                               const float *bias, float *y, LjAct act, int64_t lo, int64_t hi) {
    float buf[PLANE_FLOATS] __attribute__((aligned(64)));
    float out[OUT_FLOATS] __attribute__((aligned(64)));
    LjPhases q = lj_phases(g, STEP);
    int64_t taps = g->kh * g->kw;
    for (int64_t pl = lo; pl < hi; pl++) {
        int64_t ch = pl % c;
        lj_build_phases(g, &q, x + pl * g->h * g->w, 0.0f, buf);
        const float *wk = w + ch * taps;
        vf32 b0 = lj_splat(bias ? bias[ch] : 0.0f);
        for (int64_t p0 = 0; p0 < q.npos; p0 += STEP) {
            vf32 acc[U];
            for (int u = 0; u < U; u++)
                acc[u] = b0;
            for (int64_t i = 0; i < g->kh; i++) {
                for (int64_t j = 0; j < g->kw; j++) {
                    const float *src = buf + lj_tap_offset(g, &q, i, j) + p0;
                    float wv = wk[i * g->kw + j];
                    for (int u = 0; u < U; u++)
                        acc[u] += wv * lj_load(src + u * LJ_VL);
                }
            }
            for (int u = 0; u < U; u++)
                lj_store(out + p0 + u * LJ_VL, lj_act(acc[u], act));
        }
        compact(g, &q, out, y + pl * g->oh * g->ow);
    }
}

/* How many taps of a window along one axis ONNX's average counts: those
 * inside the input, or with count_include_pad those inside the padded
 * input (never the overhang that ceil_mode adds past the end pad). */
static int64_t axis_count(int64_t o, int64_t s, int64_t p, int64_t p_end, int64_t d, int64_t k,
                          int64_t in, bool include_pad) {
    int64_t n = 0;
    for (int64_t i = 0; i < k; i++) {
        int64_t at = o * s - p + i * d;
        n += include_pad ? at < in + p_end : at >= 0 && at < in;
    }
    return n;
}

/* The divisor of every flattened output position (1 past ow). */
static void avg_counts(const LjWindow *g, const LjPhases *q, bool include_pad, float *cnt) {
    for (int64_t p = 0; p < q->npos; p++)
        cnt[p] = 1;
    for (int64_t oy = 0; oy < g->oh; oy++) {
        int64_t cy = axis_count(oy, g->sh, g->ph, g->ph_end, g->dh, g->kh, g->h, include_pad);
        for (int64_t ox = 0; ox < g->ow; ox++) {
            int64_t n = cy * axis_count(ox, g->sw, g->pw, g->pw_end, g->dw, g->kw, g->w,
                                        include_pad);
            cnt[oy * q->wq + ox] = (float)(n ? n : 1);
        }
    }
}

/* The average divides (not multiplies by a reciprocal) so that it rounds
 * once, as the interpreter's does. */
LJ_VECTOR_FN void lj_pool(const LjWindow *g, LjPool kind, bool count_include_pad, const float *x,
                          float *y, int64_t lo, int64_t hi) {
    float buf[PLANE_FLOATS] __attribute__((aligned(64)));
    float out[OUT_FLOATS] __attribute__((aligned(64)));
    float cnt[OUT_FLOATS] __attribute__((aligned(64)));
    LjPhases q = lj_phases(g, STEP);
    bool max = kind == LJ_POOL_MAX;
    /* -inf, never read into a max but by a window wholly in the padding,
     * which gives -inf as the interpreter does (README, "Pooling"). */
    float fill = max ? -__builtin_inff() : 0.0f;
    if (!max)
        avg_counts(g, &q, count_include_pad, cnt);
    for (int64_t pl = lo; pl < hi; pl++) {
        lj_build_phases(g, &q, x + pl * g->h * g->w, fill, buf);
        for (int64_t p0 = 0; p0 < q.npos; p0 += STEP) {
            vf32 acc[U];
            for (int u = 0; u < U; u++)
                acc[u] = lj_splat(fill);
            for (int64_t i = 0; i < g->kh; i++) {
                for (int64_t j = 0; j < g->kw; j++) {
                    const float *src = buf + lj_tap_offset(g, &q, i, j) + p0;
                    for (int u = 0; u < U; u++) {
                        vf32 v = lj_load(src + u * LJ_VL);
                        acc[u] = max ? lj_max(acc[u], v) : acc[u] + v;
                    }
                }
            }
            for (int u = 0; u < U; u++) {
                vf32 v = max ? acc[u] : acc[u] / lj_load(cnt + p0 + u * LJ_VL);
                lj_store(out + p0 + u * LJ_VL, v);
            }
        }
        compact(g, &q, out, y + pl * g->oh * g->ow);
    }
}
