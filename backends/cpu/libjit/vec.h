/* What the fast libjit kernels share: a 16-lane f32 vector type, loads and
 * stores that never assume alignment, vector exp/sigmoid/tanh, and the fused
 * activations of conv and fully_connected.
 *
 * Vectors are clang's vector extensions, never intrinsics: the bitcode is
 * compiled for no particular CPU and optimised for the real one at code
 * generation. 16 lanes of f32 is one zmm register with AVX-512, two ymm with
 * AVX2, four xmm with SSE; the kernels size their register tiles for the
 * 32-register AVX-512 file (see gemm.c). */
#ifndef GLOWC_LIBJIT_VEC_H
#define GLOWC_LIBJIT_VEC_H

#include "backends/cpu/libjit/libjit.h"

/* Vectors cross function boundaries only between always-inline helpers
 * and the out-of-line LJ_VECTOR_FN functions that inline them, never an
 * ABI boundary; clang's warning that a 64-byte vector argument would be
 * passed differently with and without AVX-512 does not apply. */
#pragma clang diagnostic ignored "-Wpsabi"

enum { LJ_VL = 16 };

typedef float v16f __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));

/* Out-of-line helpers that hold vector loops carry this: without it clang
 * marks them "min-legal-vector-width"="0", and on CPUs tuned to prefer
 * 256-bit vectors (Skylake-X and later) LLVM would then split every v16f
 * into two ymm halves and spill the register tiles. Inlined code inherits
 * its caller's width, which code generation leaves unrestricted. */
#define LJ_VECTOR_FN __attribute__((noinline, min_vector_width(512)))

LJ_INLINE v16f lj_load(const float *p) {
    v16f v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
}

LJ_INLINE void lj_store(float *p, v16f v) {
    __builtin_memcpy(p, &v, sizeof v);
}

/* (Not 0 + x: that would turn -0 into +0.) */
LJ_INLINE v16f lj_splat(float x) {
    return (v16f){x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x};
}

/* The first n < 16 lanes; the others read as 0 (no access past p + n). */
LJ_INLINE v16f lj_load_part(const float *p, int64_t n) {
    float t[LJ_VL] = {0};
    for (int64_t i = 0; i < n; i++)
        t[i] = p[i];
    return lj_load(t);
}

LJ_INLINE void lj_store_part(float *p, v16f v, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        p[i] = v[i];
}

/* m ? a : b lane by lane, m from a comparison (all ones or zeros). C has no
 * ?: on vectors; LLVM turns this and-or into a blend, or into vmaxps and
 * vminps when it compares the same operands. */
LJ_INLINE v16f lj_select(v16i m, v16f a, v16f b) {
    return (v16f)(((v16i)a & m) | ((v16i)b & ~m));
}

LJ_INLINE v16f lj_max(v16f a, v16f b) {
    return lj_select(a > b, a, b);
}

LJ_INLINE v16f lj_min(v16f a, v16f b) {
    return lj_select(a < b, a, b);
}

/* e^x, Cephes' expf: x = n ln2 + r with |r| <= ln2/2, e^r by a degree-6
 * polynomial (about 1 ulp on [-ln2/2, ln2/2]), then 2^n built in the
 * exponent bits. 2^n is applied as two factors 2^(n/2) 2^(n - n/2) so that
 * n from -150 to 128 needs no special case: results underflow gradually to 0
 * and overflow to inf as expf does. NaN stays NaN. Within 1 ulp (a dense
 * sweep of [-120, 120]; below 1.2e-38 within that absolute). */
LJ_INLINE v16f lj_exp(v16f x) {
    v16f xc = lj_select(x < 88.8f, x, lj_splat(88.8f)); /* NaN takes the bound here ... */
    xc = lj_select(xc > -104.0f, xc, lj_splat(-104.0f));
    v16f fn = __builtin_elementwise_floor(xc * 1.44269504088896341f + 0.5f);
    v16f r = xc - fn * 0.693359375f;
    r = r - fn * -2.12194440e-4f;
    v16f p = lj_splat(1.9875691500e-4f);
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    v16f y = p * (r * r) + r + 1.0f;
    v16i n = __builtin_convertvector(fn, v16i);
    v16i h = n >> 1;
    v16f s1 = (v16f)((h + 127) << 23), s2 = (v16f)((n - h + 127) << 23);
    y = y * s1 * s2;
    return lj_select(x == x, y, x); /* ... and comes back here */
}

/* 1 / (1 + e^-x): e^-x overflows to inf below x = -88.7 and the quotient
 * to 0 (the true value is under 1.2e-38 there). Within 2 ulp. */
LJ_INLINE v16f lj_sigmoid(v16f x) {
    return 1.0f / (1.0f + lj_exp(-x));
}

/* tanh as Cephes' tanhf: below |x| = 0.625, x + x^3 P(x^2) with a
 * degree-4 minimax P; above, 1 - 2 / (e^2|x| + 1) with the sign put back --
 * no cancellation, as the result is over 0.55, and e^2|x| = inf gives
 * exactly 1. NaN stays NaN. Within 1 ulp (a dense sweep of [-120, 120]). */
LJ_INLINE v16f lj_tanh(v16f x) {
    v16f ax = __builtin_elementwise_abs(x);
    v16f z = x * x;
    v16f p = lj_splat(-5.70498872745e-3f);
    p = p * z + 2.06390887954e-2f;
    p = p * z + -5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z + -3.33332819422e-1f;
    v16f small = p * z * x + x;
    v16f big = 1.0f - 2.0f / (lj_exp(ax + ax) + 1.0f);
    big = (v16f)((v16i)big | ((v16i)x & (v16i)lj_splat(-0.0f))); /* the sign of x */
    return lj_select(ax < 0.625f, small, big);
}

/* ---- fused activations (attribute act of conv and fully_connected) ------- */

typedef struct LjAct {
    ActKind kind; /* ACT_NONE for none */
    float alpha, beta;
} LjAct;

/* The activation a node kind stands for (core/acts.def), ACT_NONE if none:
 * act_of_kind, inlined where the kind is a constant. */
LJ_INLINE ActKind lj_act_of_kind(NodeKind k) {
    switch (k) {
#define ACT(E, nm, node) case NK_##node: return ACT_##E;
#include "core/acts.def"
    default: return ACT_NONE;
    }
}

LJ_INLINE LjAct lj_act_of(const int64_t *d) {
    LjAct a = {(ActKind)lj_attr_int(d, AK_act, ACT_NONE), (float)lj_attr_float(d, AK_act_alpha, 0),
               (float)lj_attr_float(d, AK_act_beta, 0)};
    return a;
}

/* The vector form of core/acts.def, the same choices as act_scalar: relu
 * is x < 0 ? 0 : x (NaN stays NaN), clip x < lo ? lo : x > hi ? hi : x.
 * The unfused kernels (k_elementwise.c) call this too. */
LJ_INLINE v16f lj_act(v16f v, LjAct a) {
    switch (a.kind) {
    case ACT_RELU: return lj_select(v < 0, lj_splat(0), v);
    case ACT_CLIP:
        return lj_select(v < a.alpha, lj_splat(a.alpha), lj_select(v > a.beta, lj_splat(a.beta), v));
    case ACT_SIGMOID: return lj_sigmoid(v);
    case ACT_TANH: return lj_tanh(v);
    case ACT_LEAKY_RELU: return lj_select(v < 0, v * a.alpha, v);
    case ACT_SILU: return v * lj_sigmoid(v);
    case ACT_NONE:
    case ACT_COUNT: break;
    }
    return v;
}

/* Sigmoid, tanh and silu: worth a loop of their own rather than inlining into
 * every register of a tile. */
LJ_INLINE bool lj_act_is_costly(LjAct a) {
    return a.kind == ACT_SIGMOID || a.kind == ACT_TANH || a.kind == ACT_SILU;
}

/* p[0 .. n) = act(p[0 .. n)), out of line (gemm.c). */
void lj_act_span(float *p, int64_t n, LjAct a);

#endif
