/* What the fast libjit kernels share: an f32 vector type as wide as one
 * vector register of the target, loads and stores that never assume
 * alignment, vector exp/sigmoid/tanh, and the fused activations of conv and
 * fully_connected.
 *
 * Vectors are clang's vector extensions, never intrinsics: the bitcode is
 * compiled for no particular CPU of its target (one build per target, see
 * the Makefile) and optimised for the real one at code generation. */
#ifndef GLOWC_LIBJIT_VEC_H
#define GLOWC_LIBJIT_VEC_H

#include "backends/cpu/libjit/libjit.h"

/* Vectors cross function boundaries only between always-inline helpers
 * and the out-of-line LJ_VECTOR_FN functions that inline them, never an
 * ABI boundary; clang's warning that a 64-byte vector argument would be
 * passed differently with and without AVX-512 does not apply. */
#pragma clang diagnostic ignored "-Wpsabi"

/* LJ_VL, the lanes of a vector, is one register of the target: x86-64's
 * AVX-512 zmm (16 floats; two ymm with AVX2, four xmm with SSE) and
 * AArch64's NEON q registers (4). Both files have 32 such registers, and the
 * kernels count their register tiles in vectors (gemm.h), so the same tile
 * shapes fill both without spilling. LJ_LANES(F, ...) is F(l, ...) for every
 * lane l, comma-separated: the constant index lists of
 * __builtin_shufflevector at any width. */
#if defined(__aarch64__)
#define LJ_VL 4
#define LJ_LANES(F, ...) F(0, __VA_ARGS__), F(1, __VA_ARGS__), F(2, __VA_ARGS__), F(3, __VA_ARGS__)
#else
#define LJ_VL 16
#define LJ_LANES(F, ...)                                                                        \
    F(0, __VA_ARGS__), F(1, __VA_ARGS__), F(2, __VA_ARGS__), F(3, __VA_ARGS__),                 \
        F(4, __VA_ARGS__), F(5, __VA_ARGS__), F(6, __VA_ARGS__), F(7, __VA_ARGS__),             \
        F(8, __VA_ARGS__), F(9, __VA_ARGS__), F(10, __VA_ARGS__), F(11, __VA_ARGS__),           \
        F(12, __VA_ARGS__), F(13, __VA_ARGS__), F(14, __VA_ARGS__), F(15, __VA_ARGS__)
#endif

typedef float vf32 __attribute__((vector_size(LJ_VL * 4)));
typedef int32_t vi32 __attribute__((vector_size(LJ_VL * 4)));

/* Out-of-line helpers that hold vector loops carry this: without it clang
 * marks them "min-legal-vector-width"="0", and on CPUs tuned to prefer
 * 256-bit vectors (Skylake-X and later) LLVM would then split every vector
 * into two ymm halves and spill the register tiles. Inlined code inherits
 * its caller's width, which code generation leaves unrestricted. */
#define LJ_VECTOR_FN __attribute__((noinline, min_vector_width(LJ_VL * 32)))

LJ_INLINE vf32 lj_load(const float *p) {
    vf32 v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
}

LJ_INLINE void lj_store(float *p, vf32 v) {
    __builtin_memcpy(p, &v, sizeof v);
}

/* (Not 0 + x: that would turn -0 into +0.) */
#define LJ_SPLAT_LANE(l, x) x
LJ_INLINE vf32 lj_splat(float x) {
    return (vf32){LJ_LANES(LJ_SPLAT_LANE, x)};
}

/* The even lanes of a then b: every other float of 2 * LJ_VL in a row. */
#define LJ_EVEN_LANE(l, _) (2 * (l))
LJ_INLINE vf32 lj_even(vf32 a, vf32 b) {
    return __builtin_shufflevector(a, b, LJ_LANES(LJ_EVEN_LANE, ));
}

/* The odd lanes of a then b. */
#define LJ_ODD_LANE(l, _) (2 * (l) + 1)
LJ_INLINE vf32 lj_odd(vf32 a, vf32 b) {
    return __builtin_shufflevector(a, b, LJ_LANES(LJ_ODD_LANE, ));
}

/* The first n < LJ_VL lanes; the others read as 0 (no access past p + n). */
LJ_INLINE vf32 lj_load_part(const float *p, int64_t n) {
    float t[LJ_VL] = {0};
    for (int64_t i = 0; i < n; i++)
        t[i] = p[i];
    return lj_load(t);
}

LJ_INLINE void lj_store_part(float *p, vf32 v, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        p[i] = v[i];
}

/* The first min(n, LJ_VL) lanes: a whole vector when n allows. */
LJ_INLINE vf32 lj_load_n(const float *p, int64_t n) {
    return n >= LJ_VL ? lj_load(p) : lj_load_part(p, n);
}

LJ_INLINE void lj_store_n(float *p, vf32 v, int64_t n) {
    if (n >= LJ_VL)
        lj_store(p, v);
    else
        lj_store_part(p, v, n);
}

/* m ? a : b lane by lane, m from a comparison (all ones or zeros). C has no
 * ?: on vectors; LLVM turns this and-or into a blend, or into vmaxps and
 * vminps when it compares the same operands. */
LJ_INLINE vf32 lj_select(vi32 m, vf32 a, vf32 b) {
    return (vf32)(((vi32)a & m) | ((vi32)b & ~m));
}

/* The first n lanes of v, the others 0: the end of a row read a whole
 * vector at a time where the lanes past it are still inside the buffer
 * (dwconv.c's phase rows, k_pool.c's planes, gemv.c's rows of B). */
#define LJ_IOTA(l, _) (l)
LJ_INLINE vf32 lj_first(vf32 v, int64_t n) {
    vi32 lane = {LJ_LANES(LJ_IOTA, )};
    return lj_select(lane < (int32_t)n, v, lj_splat(0));
}

LJ_INLINE vf32 lj_max(vf32 a, vf32 b) {
    return lj_select(a > b, a, b);
}

LJ_INLINE vf32 lj_min(vf32 a, vf32 b) {
    return lj_select(a < b, a, b);
}

/* e^z = 2^fn e^r: fn = round(z / ln 2) (returned), r = z - fn ln 2 with
 * ln 2 in two parts so that r is exact enough, and e^r by Cephes' expf
 * polynomial. The caller clamps z and scales by 2^fn; lj_exp and
 * lj_sigmoid share it, so their e^x agree bit for bit. */
LJ_INLINE vf32 lj_exp_reduced(vf32 z, vf32 *fn_out) {
    vf32 fn = __builtin_elementwise_floor(z * 1.44269504088896341f + 0.5f);
    vf32 r = z - fn * 0.693359375f;
    r = r - fn * -2.12194440e-4f;
    vf32 p = lj_splat(1.9875691500e-4f);
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    *fn_out = fn;
    return p * (r * r) + r + 1.0f;
}

/* e^x, Cephes' expf: x = n ln2 + r with |r| <= ln2/2, e^r by a degree-6
 * polynomial (about 1 ulp on [-ln2/2, ln2/2]), then 2^n built in the
 * exponent bits. 2^n is applied as two factors 2^(n/2) 2^(n - n/2) so that
 * n from -150 to 128 needs no special case: results underflow gradually to 0
 * and overflow to inf as expf does. NaN stays NaN. Within 1 ulp (a dense
 * sweep of [-120, 120]; below 1.2e-38 within that absolute). */
LJ_INLINE vf32 lj_exp(vf32 x) {
    vf32 xc = lj_select(x < 88.8f, x, lj_splat(88.8f)); /* NaN takes the bound here ... */
    xc = lj_select(xc > -104.0f, xc, lj_splat(-104.0f));
    vf32 fn;
    vf32 y = lj_exp_reduced(xc, &fn);
    vi32 n = __builtin_convertvector(fn, vi32);
    vi32 h = n >> 1;
    vf32 s1 = (vf32)((h + 127) << 23), s2 = (vf32)((n - h + 127) << 23);
    y = y * s1 * s2;
    return lj_select(x == x, y, x); /* ... and comes back here */
}

/* 1 / (1 + e^-x): e^-x overflows to inf below x = -88.7 and the quotient
 * to 0 (the true value is under 1.2e-38 there). Within 2 ulp.
 *
 * e^-x is lj_exp's, bit for bit where the quotient can tell, at about
 * three quarters of its cost (silu, x * sigmoid(x), is a sixth of
 * EfficientNet's time): -x is clamped to [-86, 88.8] instead of
 * [-104, 88.8] -- below -86, e^-x < 2^-124 and 1 + e^-x rounds to 1 either
 * way -- so n is in [-124, 128] and 2^n one exact factor 2^(n-1) and a
 * final doubling, which rounds once as lj_exp's two factors do. The clamps
 * are written so that NaN passes through them (a comparison with NaN is
 * false and keeps z), and the polynomial carries it to the result with the
 * same payload as lj_exp's closing select gives it. */
LJ_INLINE vf32 lj_sigmoid(vf32 x) {
    vf32 z = -x;
    z = lj_select(z > 88.8f, lj_splat(88.8f), z);
    z = lj_select(z < -86.0f, lj_splat(-86.0f), z);
    vf32 fn;
    vf32 e = lj_exp_reduced(z, &fn);
    vi32 n = __builtin_convertvector(fn, vi32);
    e = e * (vf32)((n + 126) << 23);
    e = e * 2.0f;
    return 1.0f / (1.0f + e);
}

/* tanh as Cephes' tanhf: below |x| = 0.625, x + x^3 P(x^2) with a
 * degree-4 minimax P; above, 1 - 2 / (e^2|x| + 1) with the sign put back --
 * no cancellation, as the result is over 0.55, and e^2|x| = inf gives
 * exactly 1. NaN stays NaN. Within 1 ulp (a dense sweep of [-120, 120]). */
LJ_INLINE vf32 lj_tanh(vf32 x) {
    vf32 ax = __builtin_elementwise_abs(x);
    vf32 z = x * x;
    vf32 p = lj_splat(-5.70498872745e-3f);
    p = p * z + 2.06390887954e-2f;
    p = p * z + -5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z + -3.33332819422e-1f;
    vf32 small = p * z * x + x;
    vf32 big = 1.0f - 2.0f / (lj_exp(ax + ax) + 1.0f);
    big = (vf32)((vi32)big | ((vi32)x & (vi32)lj_splat(-0.0f))); /* the sign of x */
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
LJ_INLINE vf32 lj_act(vf32 v, LjAct a) {
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

/* The sums of LJ_VL rows' lanes as one vector (gemv.c's dot products,
 * k_pool.c's global average), lane r row r's (v[r], the
 * other vectors of v clobbered): each step halves the partial sums of
 * every row -- a row's upper half added to its lower half -- two rows'
 * halves packed into one vector, so LJ_VL rows cost log2 LJ_VL steps of two
 * shuffles and an add per pair. Summing the lanes one at a time was a chain
 * of LJ_VL dependent adds per output, and the activation a vector's work for
 * one float: EfficientNet's squeeze-excite convs, one dot product per
 * output, ran at 0.6 GFLOP/s. A row's tree of adds is the same in every
 * position of the block (lane l with lane l + h/2 of its own h partial
 * sums), so an output does not depend on which rows share its block: a
 * thread's share may begin anywhere. */
#define LJ_SHUF(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
/* Lane L of a step over blocks of h partial sums (LJ_VL / h rows a vector):
 * the lower halves of a's rows, then b's; LJ_HALF_HI the upper halves. */
#define LJ_HALF_LO(L, h)                                                                           \
    ((L) / ((h) / 2) < LJ_VL / (h) ? (L) / ((h) / 2) * (h) + (L) % ((h) / 2)                       \
                                : LJ_VL + ((L) / ((h) / 2) - LJ_VL / (h)) * (h) + (L) % ((h) / 2))
#define LJ_HALF_HI(L, h) (LJ_HALF_LO(L, h) + (h) / 2)
/* h / 2 pairs of vectors into h / 2 vectors. */
#define LJ_HALVE(h)                                                                                \
    for (int i = 0; i < (h) / 2; i++)                                                              \
        v[i] = LJ_SHUF(v[2 * i], v[2 * i + 1], LJ_LANES(LJ_HALF_LO, h)) +                          \
               LJ_SHUF(v[2 * i], v[2 * i + 1], LJ_LANES(LJ_HALF_HI, h));

LJ_INLINE vf32 lj_sum_rows(vf32 *v) {
#if LJ_VL == 16
    LJ_HALVE(16) LJ_HALVE(8)
#elif LJ_VL != 4
#error "lj_sum_rows halves 16 or 4 lanes"
#endif
    LJ_HALVE(4) LJ_HALVE(2)
    return v[0];
}

#endif
