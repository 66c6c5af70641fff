/* Element access for the kernels that take every element kind
 * (libjit_<kind>_any, k_table.c): a load or store of element i as double
 * or int64 with the kind as an argument. Inlined where the descriptor is a
 * constant, the switch folds and what is left is one typed load or store.
 *
 * The conversions are the interpreter's (core/tensor.c): floats to integers
 * truncate toward zero with NaN giving 0 and out-of-range values defined,
 * integer stores wrap, anything stored to bool is "!= 0", and the two
 * 16-bit floats are read and written through f32 with rounding to nearest
 * even. */
#ifndef GLOWC_LIBJIT_ELEM_H
#define GLOWC_LIBJIT_ELEM_H

#include <math.h>

#include "backends/cpu/libjit/libjit.h"

LJ_INLINE float lj_bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

LJ_INLINE uint32_t lj_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* IEEE half to single: every half is exactly a single. A subnormal half is
 * its mantissa times 2^-24, which a float multiply gives exactly. */
LJ_INLINE float lj_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 0) {
        float f = (float)m * 5.9604644775390625e-8f; /* 2^-24 */
        return lj_bits_f32(lj_f32_bits(f) | sign);
    }
    if (e == 0x1f)
        return lj_bits_f32(sign | 0x7f800000u | (m << 13));
    return lj_bits_f32(sign | ((e + 112) << 23) | (m << 13));
}

/* Single to half, to nearest even; NaN stays a quiet NaN with the top of
 * its payload. */
LJ_INLINE uint16_t lj_f32_to_f16(float f) {
    uint32_t x = lj_f32_bits(f), sign = (x >> 16) & 0x8000, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00 | ((ax >> 13) & 0x3ff));
    if (ax >= 0x477ff000u) /* rounds to 65520 or more: infinity */
        return (uint16_t)(sign | 0x7c00);
    if (ax < 0x38800000u) { /* below 2^-14: a subnormal half, a multiple of 2^-24 */
        float q = lj_bits_f32(ax) * 16777216.0f; /* exact: a power of two */
        float r = __builtin_rintf(q);             /* to nearest even */
        return (uint16_t)(sign | (uint32_t)r);
    }
    uint32_t lsb = (ax >> 13) & 1;
    uint32_t r = (ax + 0xfff + lsb) >> 13; /* rounds the mantissa; a carry bumps the exponent */
    return (uint16_t)(sign | (r - (112u << 10)));
}

LJ_INLINE float lj_bf16_to_f32(uint16_t h) {
    return lj_bits_f32((uint32_t)h << 16);
}

LJ_INLINE uint16_t lj_f32_to_bf16(float f) {
    uint32_t x = lj_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40);
    return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

LJ_INLINE bool lj_is_float(int e) {
    switch (e) {
#define ELEM(E, nm, ct, sz, onnx, cls)                                                            \
    case ELEM_##E: return LJ_CLS_IS_FLOAT_##cls;
#define LJ_CLS_IS_FLOAT_FLOAT 1
#define LJ_CLS_IS_FLOAT_SINT 0
#define LJ_CLS_IS_FLOAT_UINT 0
#define LJ_CLS_IS_FLOAT_BOOL 0
#define LJ_CLS_IS_FLOAT_STR 0
#include "core/elems.def"
    default: return false;
    }
}

LJ_INLINE bool lj_is_uint(int e) {
    switch (e) {
#define ELEM(E, nm, ct, sz, onnx, cls)                                                            \
    case ELEM_##E: return LJ_CLS_IS_UINT_##cls;
#define LJ_CLS_IS_UINT_FLOAT 0
#define LJ_CLS_IS_UINT_SINT 0
#define LJ_CLS_IS_UINT_UINT 1
#define LJ_CLS_IS_UINT_BOOL 0
#define LJ_CLS_IS_UINT_STR 0
#include "core/elems.def"
    default: return false;
    }
}

LJ_INLINE double lj_ld_f64(int e, const void *p, int64_t i) {
    if (e == ELEM_F16)
        return lj_f16_to_f32(((const uint16_t *)p)[i]);
    if (e == ELEM_BF16)
        return lj_bf16_to_f32(((const uint16_t *)p)[i]);
    switch (e) {
#define ELEM(E, nm, ct, sz, onnx, cls)                                                            \
    case ELEM_##E: return (double)((const ct *)p)[i];
#include "core/elems.def"
    default: return 0;
    }
}

/* Truncation toward zero, NaN 0, saturating at the int64 range. */
LJ_INLINE int64_t lj_f64_to_i64(double v) {
    if (v != v)
        return 0;
    if (v >= 9223372036854775807.0)
        return INT64_MAX;
    if (v <= -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)v;
}

LJ_INLINE int64_t lj_ld_i64(int e, const void *p, int64_t i) {
    if (lj_is_float(e))
        return lj_f64_to_i64(lj_ld_f64(e, p, i));
    switch (e) {
#define ELEM(E, nm, ct, sz, onnx, cls)                                                            \
    case ELEM_##E: return (int64_t)((const ct *)p)[i];
#include "core/elems.def"
    default: return 0;
    }
}

LJ_INLINE void lj_st_i64(int e, void *p, int64_t i, int64_t v) {
    switch (e) {
    case ELEM_F16: ((uint16_t *)p)[i] = lj_f32_to_f16((float)v); return;
    case ELEM_BF16: ((uint16_t *)p)[i] = lj_f32_to_bf16((float)v); return;
    case ELEM_BOOL: ((uint8_t *)p)[i] = v != 0; return;
    case ELEM_F32: ((float *)p)[i] = (float)v; return;
    case ELEM_F64: ((double *)p)[i] = (double)v; return;
    default: break;
    }
    switch (e) { /* the integer kinds wrap */
#define ELEM(E, nm, ct, sz, onnx, cls)                                                            \
    case ELEM_##E: ((ct *)p)[i] = (ct)(uint64_t)v; return;
#include "core/elems.def"
    default: return;
    }
}

/* Double to an integer kind: truncate, then wrap; NaN 0. */
LJ_INLINE int64_t lj_f64_to_int_bits(double v) {
    if (v != v)
        return 0;
    if (v >= 18446744073709551616.0 || v <= -9223372036854775808.0)
        return INT64_MIN;
    if (v >= 9223372036854775808.0)
        return (int64_t)(uint64_t)v;
    return (int64_t)v;
}

LJ_INLINE void lj_st_f64(int e, void *p, int64_t i, double v) {
    switch (e) {
    case ELEM_F32: ((float *)p)[i] = (float)v; return;
    case ELEM_F64: ((double *)p)[i] = v; return;
    case ELEM_F16: ((uint16_t *)p)[i] = lj_f32_to_f16((float)v); return;
    case ELEM_BF16: ((uint16_t *)p)[i] = lj_f32_to_bf16((float)v); return;
    case ELEM_BOOL: ((uint8_t *)p)[i] = v != 0; return;
    default: lj_st_i64(e, p, i, lj_f64_to_int_bits(v)); return;
    }
}

/* Moves element i of p to element j of q, both of size `size`: data
 * movement works on bytes, one loop per element size, not per kind. */
/* Element i of a str operand: the slot's pointer, "" for an empty slot. */
LJ_INLINE const char *lj_str_at(const void *p, int64_t i) {
    const char *s = (const char *)(uintptr_t)((const uint64_t *)p)[i];
    return s ? s : "";
}

LJ_INLINE void lj_move(size_t size, void *q, int64_t j, const void *p, int64_t i) {
    switch (size) {
    case 1: ((uint8_t *)q)[j] = ((const uint8_t *)p)[i]; return;
    case 2: ((uint16_t *)q)[j] = ((const uint16_t *)p)[i]; return;
    case 4: ((uint32_t *)q)[j] = ((const uint32_t *)p)[i]; return;
    default: ((uint64_t *)q)[j] = ((const uint64_t *)p)[i]; return;
    }
}

#endif
