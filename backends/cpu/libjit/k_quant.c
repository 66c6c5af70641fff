/* Linear quantization for every element kind: quantize_linear,
 * dequantize_linear and dynamic_quantize_linear as libjit_<kind>_any, with
 * the interpreter's arithmetic (f32 inputs divide in f32, others in double;
 * rounding half to even, then the zero point, then the kind's range), so
 * results are identical to it. Scale and zero point are one value or one
 * per coordinate along the axis. */
#include <math.h>

#include "backends/cpu/libjit/elem.h"
#include "backends/cpu/libjit/kernels.h"

enum { CHUNK = 1 << 15 };

LJ_INLINE int64_t min64(int64_t a, int64_t b) {
    return a < b ? a : b;
}

/* The range of a quantized kind (i8, u8, i16, u16, i32). */
LJ_INLINE double kind_lo(int e) {
    return e == ELEM_I8 ? -128.0 : e == ELEM_I16 ? -32768.0 : e == ELEM_I32 ? -2147483648.0 : 0.0;
}

LJ_INLINE double kind_hi(int e) {
    return e == ELEM_I8    ? 127.0
           : e == ELEM_I16 ? 32767.0
           : e == ELEM_I32 ? 2147483647.0
           : e == ELEM_U8  ? 255.0
           : e == ELEM_U16 ? 65535.0
                           : 9223372036854775807.0;
}

LJ_INLINE void store_q(int e, void *y, int64_t i, double v, int64_t zp) {
    double q = nearbyint(v) + (double)zp, lo = kind_lo(e), hi = kind_hi(e);
    lj_st_i64(e, y, i, (int64_t)(q != q ? lo : q < lo ? lo : q > hi ? hi : q));
}

/* Per axis when the scale has more than one value (or rank > 1): the
 * span of one coordinate (inner) and the axis length; else one value. */
LJ_INLINE void q_axis(const int64_t *d, int64_t *inner, int64_t *len) {
    int rank = lj_rank(d, 1);
    *inner = 1;
    *len = 0;
    if (lj_numel(d, 2) <= 1 && lj_rank(d, 2) <= 1)
        return;
    int64_t axis = lj_attr_int(d, AK_axis, 1);
    axis = axis < 0 ? axis + rank : axis;
    for (int i = (int)axis + 1; i < rank; i++)
        *inner *= lj_dim(d, 1, i);
    *len = lj_dim(d, 1, (int)axis);
}

LJ_INLINE int64_t q_param(int64_t i, int64_t inner, int64_t len) {
    return len ? i / inner % len : 0;
}

LIBJIT_WORK libjit_quantize_linear_any_work(const int64_t *d) {
    int64_t n = lj_numel(d, 0);
    return n > 0 ? (n + CHUNK - 1) / CHUNK : 1;
}

LIBJIT_KERNEL libjit_quantize_linear_any(const int64_t *d, void *const *ops, int64_t lo,
                                         int64_t hi, LjScratch *sc) {
    int ey = lj_elem(d, 0), ex = lj_elem(d, 1), es = lj_elem(d, 2), ez = lj_elem(d, 3);
    int64_t inner, len, n = lj_numel(d, 0);
    q_axis(d, &inner, &len);
    for (int64_t i = min64(lo * CHUNK, n); i < min64(hi * CHUNK, n); i++) {
        int64_t p = q_param(i, inner, len);
        double x = lj_ld_f64(ex, ops[1], i), s = lj_ld_f64(es, ops[2], p);
        double q = ex == ELEM_F32 ? (double)((float)x / (float)s) : x / s;
        store_q(ey, ops[0], i, q, lj_ld_i64(ez, ops[3], p));
    }
}

LIBJIT_WORK libjit_dequantize_linear_any_work(const int64_t *d) {
    int64_t n = lj_numel(d, 0);
    return n > 0 ? (n + CHUNK - 1) / CHUNK : 1;
}

LIBJIT_KERNEL libjit_dequantize_linear_any(const int64_t *d, void *const *ops, int64_t lo,
                                           int64_t hi, LjScratch *sc) {
    int ey = lj_elem(d, 0), ex = lj_elem(d, 1), es = lj_elem(d, 2), ez = lj_elem(d, 3);
    int64_t inner, len, n = lj_numel(d, 0);
    q_axis(d, &inner, &len);
    for (int64_t i = min64(lo * CHUNK, n); i < min64(hi * CHUNK, n); i++) {
        int64_t p = q_param(i, inner, len);
        double v = (double)(lj_ld_i64(ex, ops[1], i) - lj_ld_i64(ez, ops[3], p)) *
                   lj_ld_f64(es, ops[2], p);
        lj_st_f64(ey, ops[0], i, v);
    }
}

/* y, scale, zero point from x: [min(x, 0), max(x, 0)] onto [0, 255], in
 * f32 as ONNX defines it. One unit: the range is over all of x. */
LIBJIT_KERNEL libjit_dynamic_quantize_linear_any(const int64_t *d, void *const *ops, int64_t lo,
                                                 int64_t hi, LjScratch *sc) {
    int ey = lj_elem(d, 0), ex = lj_elem(d, 3);
    int64_t n = lj_numel(d, 3);
    float mn = 0, mx = 0;
    for (int64_t i = 0; i < n; i++) {
        float v = (float)lj_ld_f64(ex, ops[3], i);
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
    }
    float scale = (mx - mn) / 255.0f;
    float zpf = scale > 0 ? 0.0f - mn / scale : 0.0f;
    zpf = zpf < 0 ? 0 : zpf > 255 ? 255 : zpf;
    int64_t zp = (int64_t)__builtin_rintf(zpf);
    for (int64_t i = 0; i < n; i++) {
        float q = scale > 0 ? (float)lj_ld_f64(ex, ops[3], i) / scale : 0.0f;
        store_q(ey, ops[0], i, q, zp);
    }
    lj_st_f64(lj_elem(d, 1), ops[1], 0, scale);
    lj_st_i64(lj_elem(d, 2), ops[2], 0, zp);
}

LIBJIT_WORK libjit_dynamic_quantize_linear_any_work(const int64_t *d) {
    return 1;
}
