/* softmax, log_softmax and layer_norm in f32 vectors, as
 * libjit_{softmax,log_softmax,layer_norm}_f32 (code generation takes them
 * before the _any kernels of k_norm.c, which compute in double and which
 * these call for operands of other kinds).
 *
 * A softmax line along the last axis (inner size 1, the transformer's
 * case) is a row of vectors: max, then e^(x - max) stored and summed, then
 * one scale. Along another axis, a vector holds LJ_VL neighbouring lines
 * (consecutive inner positions) and the same three passes run over the
 * axis. layer_norm's rows are contiguous: mean and variance by vector sums
 * (two passes, as the interpreter, so no cancellation), then one fused
 * pass. Sums run in f32 lanes and the lanes are added in double; the
 * kernel test states the resulting bounds. Units: outer slices, as k_norm.c. */
#include <math.h>

#include "backends/cpu/libjit/kernels.h"
#include "backends/cpu/libjit/vec.h"

LJ_INLINE bool all_f32(const int64_t *d) {
    for (int k = 0; k < lj_nops(d); k++)
        if (lj_elem(d, k) != ELEM_F32)
            return false;
    return true;
}

LJ_INLINE double lanes_sum(vf32 v) {
    double s = 0;
    for (int l = 0; l < LJ_VL; l++)
        s += v[l];
    return s;
}

LJ_INLINE float lanes_max(vf32 v) {
    float m = v[0];
    for (int l = 1; l < LJ_VL; l++)
        m = v[l] > m || m != m ? v[l] : m;
    return m;
}

/* ---- softmax, log_softmax ------------------------------------------------------------ */

typedef struct Sm {
    int64_t outer, len, inner;
} Sm;

LJ_INLINE Sm sm_plan(const int64_t *d) {
    Sm s = {1, 1, 1};
    int rank = lj_rank(d, 1);
    int64_t axis = lj_attr_int(d, AK_axis, -1);
    axis = axis < 0 ? axis + (rank ? rank : 1) : axis;
    s.len = rank ? lj_dim(d, 1, (int)axis) : 1;
    for (int i = 0; i < rank; i++)
        if (i != axis)
            *(i < axis ? &s.outer : &s.inner) *= lj_dim(d, 1, i);
    return s;
}

/* One line along the last axis; y may be x. A NaN anywhere makes the
 * maximum NaN and every result NaN, as in double. */
LJ_VECTOR_FN static void sm_row(const float *x, float *y, int64_t n, bool log_form) {
    int64_t full = n / LJ_VL * LJ_VL;
    vf32 mv = lj_splat(-INFINITY);
    bool nan = false;
    for (int64_t i = 0; i < full; i += LJ_VL) {
        vf32 v = lj_load(x + i);
        nan |= __builtin_reduce_or((vi32)(v != v)) != 0;
        mv = lj_max(mv, v);
    }
    float mx = lanes_max(mv);
    for (int64_t i = full; i < n; i++) {
        nan |= x[i] != x[i];
        mx = x[i] > mx ? x[i] : mx;
    }
    if (nan)
        mx = NAN;
    vf32 m = lj_splat(mx), acc = lj_splat(0);
    double sum = 0;
    for (int64_t i = 0; i < full; i += LJ_VL) {
        vf32 e = lj_exp(lj_load(x + i) - m);
        if (!log_form)
            lj_store(y + i, e);
        acc += e;
    }
    if (full < n) {
        vf32 e = lj_exp(lj_load_part(x + full, n - full) - m);
        if (!log_form)
            lj_store_part(y + full, e, n - full);
        for (int64_t l = 0; l < n - full; l++) /* not the padding lanes */
            sum += e[l];
    }
    sum += lanes_sum(acc);
    if (log_form) {
        vf32 sub = lj_splat((float)((double)mx + log(sum)));
        for (int64_t i = 0; i < full; i += LJ_VL)
            lj_store(y + i, lj_load(x + i) - sub);
        for (int64_t i = full; i < n; i++)
            y[i] = x[i] - sub[0];
        return;
    }
    vf32 inv = lj_splat((float)(1 / sum));
    for (int64_t i = 0; i < full; i += LJ_VL)
        lj_store(y + i, lj_load(y + i) * inv);
    for (int64_t i = full; i < n; i++)
        y[i] = y[i] * inv[0];
}

/* Lines [in, in + w) of an outer slice along a non-last axis, w <= LJ_VL:
 * lane l is the line of inner position in + l. */
LJ_VECTOR_FN static void sm_lanes(const float *x, float *y, int64_t len, int64_t inner, int64_t w,
                                  bool log_form) {
#define SM_LD(p) (w == LJ_VL ? lj_load(p) : lj_load_part(p, w))
#define SM_ST(p, v) (w == LJ_VL ? lj_store(p, v) : lj_store_part(p, v, w))
    vf32 mx = lj_splat(-INFINITY);
    vi32 nan = (vi32)lj_splat(0);
    for (int64_t k = 0; k < len; k++) {
        vf32 v = SM_LD(x + k * inner);
        nan |= (vi32)(v != v);
        mx = lj_max(mx, v);
    }
    mx = lj_select(nan, lj_splat(NAN), mx);
    vf32 sum = lj_splat(0);
    for (int64_t k = 0; k < len; k++) {
        vf32 e = lj_exp(SM_LD(x + k * inner) - mx);
        if (!log_form)
            SM_ST(y + k * inner, e);
        sum += e;
    }
    if (log_form) {
        vf32 sub;
        for (int l = 0; l < LJ_VL; l++)
            sub[l] = mx[l] + logf(sum[l]);
        for (int64_t k = 0; k < len; k++)
            SM_ST(y + k * inner, SM_LD(x + k * inner) - sub);
        return;
    }
    vf32 inv = 1.0f / sum;
    for (int64_t k = 0; k < len; k++)
        SM_ST(y + k * inner, SM_LD(y + k * inner) * inv);
#undef SM_LD
#undef SM_ST
}

LJ_INLINE void sm_run(const int64_t *d, void *const *ops, int64_t lo, int64_t hi, bool log_form) {
    Sm s = sm_plan(d);
    const float *x = ops[1];
    float *y = ops[0];
    for (int64_t o = lo; o < hi && o < s.outer; o++) {
        int64_t base = o * s.len * s.inner;
        if (s.inner == 1) {
            sm_row(x + base, y + base, s.len, log_form);
            continue;
        }
        for (int64_t in = 0; in < s.inner; in += LJ_VL)
            sm_lanes(x + base + in, y + base + in, s.len, s.inner,
                     s.inner - in < LJ_VL ? s.inner - in : LJ_VL, log_form);
    }
}

LIBJIT_WORK libjit_softmax_f32_work(const int64_t *d) {
    return libjit_softmax_any_work(d);
}

LIBJIT_KERNEL libjit_softmax_f32(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                 LjScratch *sc) {
    if (!all_f32(d))
        libjit_softmax_any(d, ops, lo, hi, sc);
    else
        sm_run(d, ops, lo, hi, false);
}

LIBJIT_WORK libjit_log_softmax_f32_work(const int64_t *d) {
    return libjit_log_softmax_any_work(d);
}

LIBJIT_KERNEL libjit_log_softmax_f32(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                     LjScratch *sc) {
    if (!all_f32(d))
        libjit_log_softmax_any(d, ops, lo, hi, sc);
    else
        sm_run(d, ops, lo, hi, true);
}

/* ---- layer_norm ------------------------------------------------------------------------ */

/* The rows' geometry, and whether scale and bias cover the whole row
 * (else they broadcast, and the _any kernel takes the node). */
typedef struct Lnv {
    int nres, bias;
    int64_t outer, inner;
    bool plain;
} Lnv;

LJ_INLINE Lnv lnv_plan(const int64_t *d) {
    Lnv l = {.nres = lj_nres(d), .outer = 1, .inner = 1};
    l.bias = lj_nops(d) - l.nres == 3 ? l.nres + 2 : -1;
    int rank = lj_rank(d, l.nres);
    int64_t axis = lj_attr_int(d, AK_axis, -1);
    axis = axis < 0 ? axis + rank : axis;
    for (int i = 0; i < rank; i++)
        *(i < axis ? &l.outer : &l.inner) *= lj_dim(d, l.nres, i);
    l.plain = lj_numel(d, l.nres + 1) == l.inner && (l.bias < 0 || lj_numel(d, l.bias) == l.inner);
    return l;
}

LJ_VECTOR_FN static void ln_row(const float *x, float *y, const float *scale, const float *bias,
                                int64_t n, double eps, float *mean_out, float *inv_out) {
    int64_t full = n / LJ_VL * LJ_VL;
    vf32 acc = lj_splat(0);
    double sum = 0;
    for (int64_t i = 0; i < full; i += LJ_VL)
        acc += lj_load(x + i);
    for (int64_t i = full; i < n; i++)
        sum += x[i];
    double mean = (sum + lanes_sum(acc)) / (double)(n ? n : 1);
    vf32 m = lj_splat((float)mean);
    acc = lj_splat(0);
    double var = 0;
    for (int64_t i = 0; i < full; i += LJ_VL) {
        vf32 dv = lj_load(x + i) - m;
        acc += dv * dv;
    }
    for (int64_t i = full; i < n; i++) {
        double dv = x[i] - mean;
        var += dv * dv;
    }
    var = (var + lanes_sum(acc)) / (double)(n ? n : 1);
    double inv = 1 / sqrt(var + eps);
    vf32 iv = lj_splat((float)inv);
    for (int64_t i = 0; i < full; i += LJ_VL) {
        vf32 v = (lj_load(x + i) - m) * iv * lj_load(scale + i);
        lj_store(y + i, bias ? v + lj_load(bias + i) : v);
    }
    for (int64_t i = full; i < n; i++) {
        float v = (x[i] - m[0]) * iv[0] * scale[i];
        y[i] = bias ? v + bias[i] : v;
    }
    *mean_out = (float)mean;
    *inv_out = (float)inv;
}

LIBJIT_WORK libjit_layer_norm_f32_work(const int64_t *d) {
    return libjit_layer_norm_any_work(d);
}

/* Outputs y[, mean[, inv_std_dev]], inputs x, scale[, bias]. */
LIBJIT_KERNEL libjit_layer_norm_f32(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                    LjScratch *sc) {
    Lnv l = lnv_plan(d);
    if (!all_f32(d) || !l.plain) {
        libjit_layer_norm_any(d, ops, lo, hi, sc);
        return;
    }
    double eps = lj_attr_float(d, AK_epsilon, (double)1e-5f);
    const float *x = ops[l.nres], *scale = ops[l.nres + 1];
    const float *bias = l.bias >= 0 ? ops[l.bias] : NULL;
    for (int64_t o = lo; o < hi && o < l.outer; o++) {
        float mean, inv;
        ln_row(x + o * l.inner, (float *)ops[0] + o * l.inner, scale, bias, l.inner, eps, &mean,
               &inv);
        if (l.nres > 1)
            ((float *)ops[1])[o] = mean;
        if (l.nres > 2)
            ((float *)ops[2])[o] = inv;
    }
}
