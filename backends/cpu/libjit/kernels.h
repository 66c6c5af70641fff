/* The fast libjit kernels: code generation finds them by name
 * (libjit_<kind>_<elem>, desc.h); the declarations are for the kernel
 * tests and benchmarks, which call them directly. */
#ifndef GLOWC_LIBJIT_KERNELS_H
#define GLOWC_LIBJIT_KERNELS_H

#include "backends/cpu/libjit/libjit.h"

#define LJ_DECLARE_KERNEL(name)                                                              \
    LIBJIT_KERNEL libjit_##name(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,  \
                                LjScratch *sc);
#define LJ_DECLARE_WORK(name) LIBJIT_WORK libjit_##name##_work(const int64_t *d);
#define LJ_DECLARE_SCRATCH(name) LIBJIT_SCRATCH libjit_##name##_scratch(const int64_t *d, int slot);

/* k_conv.c */
LJ_DECLARE_KERNEL(conv_f32)
LJ_DECLARE_WORK(conv_f32)
LJ_DECLARE_SCRATCH(conv_f32)
LJ_DECLARE_KERNEL(conv_dw_f32)
LJ_DECLARE_WORK(conv_dw_f32)
LJ_DECLARE_SCRATCH(conv_dw_f32)
LJ_DECLARE_KERNEL(conv_amx_f32) /* AMX's bf16 tiles (gemm_amx.c) */
LJ_DECLARE_WORK(conv_amx_f32)
LJ_DECLARE_SCRATCH(conv_amx_f32)

/* k_wino.c */
LJ_DECLARE_KERNEL(winograd_conv_f32)
LJ_DECLARE_WORK(winograd_conv_f32)
LJ_DECLARE_SCRATCH(winograd_conv_f32)

/* k_gemm.c */
LJ_DECLARE_KERNEL(fully_connected_f32)
LJ_DECLARE_WORK(fully_connected_f32)
LJ_DECLARE_SCRATCH(fully_connected_f32)
LJ_DECLARE_KERNEL(matmul_f32)
LJ_DECLARE_WORK(matmul_f32)
LJ_DECLARE_SCRATCH(matmul_f32)

/* k_rnn.c */
LJ_DECLARE_KERNEL(rnn_f32)
LJ_DECLARE_WORK(rnn_f32)
LJ_DECLARE_SCRATCH(rnn_f32)
LJ_DECLARE_KERNEL(gru_f32)
LJ_DECLARE_WORK(gru_f32)
LJ_DECLARE_SCRATCH(gru_f32)
LJ_DECLARE_KERNEL(lstm_f32)
LJ_DECLARE_WORK(lstm_f32)
LJ_DECLARE_SCRATCH(lstm_f32)

/* k_pool.c */
LJ_DECLARE_KERNEL(max_pool_f32)
LJ_DECLARE_WORK(max_pool_f32)
LJ_DECLARE_SCRATCH(max_pool_f32)
LJ_DECLARE_KERNEL(avg_pool_f32)
LJ_DECLARE_WORK(avg_pool_f32)
LJ_DECLARE_SCRATCH(avg_pool_f32)
LJ_DECLARE_KERNEL(max_pool_any)
LJ_DECLARE_WORK(max_pool_any)
LJ_DECLARE_KERNEL(avg_pool_any)
LJ_DECLARE_WORK(avg_pool_any)
LJ_DECLARE_KERNEL(global_avg_pool_f32)
LJ_DECLARE_WORK(global_avg_pool_f32)
LJ_DECLARE_KERNEL(global_max_pool_f32)
LJ_DECLARE_WORK(global_max_pool_f32)

/* k_misc.c */
LJ_DECLARE_KERNEL(reduce_sum_f32)
LJ_DECLARE_WORK(reduce_sum_f32)
LJ_DECLARE_KERNEL(reduce_mean_f32)
LJ_DECLARE_WORK(reduce_mean_f32)
LJ_DECLARE_KERNEL(reduce_max_f32)
LJ_DECLARE_WORK(reduce_max_f32)
LJ_DECLARE_KERNEL(reduce_min_f32)
LJ_DECLARE_WORK(reduce_min_f32)
LJ_DECLARE_KERNEL(transpose_f32)
LJ_DECLARE_WORK(transpose_f32)
LJ_DECLARE_KERNEL(slice_f32)
LJ_DECLARE_WORK(slice_f32)
LJ_DECLARE_KERNEL(gather_f32)
LJ_DECLARE_WORK(gather_f32)
LJ_DECLARE_KERNEL(cast_f32)
LJ_DECLARE_WORK(cast_f32)

/* k_elementwise.c: (keyword, node kind) */
#define LJ_UNARY_KERNELS(X)                                                                   \
    X(abs, NK_ABS) X(neg, NK_NEG) X(ceil, NK_CEIL) X(floor, NK_FLOOR)                         \
    X(reciprocal, NK_RECIPROCAL) X(sqrt, NK_SQRT) X(exp, NK_EXP) X(erf, NK_ERF)              \
    X(tanh, NK_TANH) X(sigmoid, NK_SIGMOID) X(relu, NK_RELU) X(leaky_relu, NK_LEAKY_RELU)    \
    X(clip, NK_CLIP) X(hard_sigmoid, NK_HARD_SIGMOID) X(hard_swish, NK_HARD_SWISH)           \
    X(gelu, NK_GELU)
#define LJ_BINARY_KERNELS(X)                                                                  \
    X(add, NK_ADD) X(sub, NK_SUB) X(mul, NK_MUL) X(div, NK_DIV) X(max, NK_MAX)               \
    X(min, NK_MIN) X(prelu, NK_PRELU) X(pow, NK_POW) X(relu_grad, NK_RELU_GRAD)
#define LJ_DECLARE_F32(name, kind) LJ_DECLARE_KERNEL(name##_f32) LJ_DECLARE_WORK(name##_f32)
LJ_UNARY_KERNELS(LJ_DECLARE_F32)
LJ_BINARY_KERNELS(LJ_DECLARE_F32)

/* k_table.c: one kernel per operator for every element kind,
 * libjit_<kind>_any (code generation takes libjit_<kind>_<elem> first).
 * Unary and binary rows: (keyword, node kind, expression over double x
 * [and y] for floats, expression over int64 x [and y] for integers). */
#define LJ_WRAP(op) ((int64_t)((uint64_t)x op (uint64_t)y))
#define LJ_ANY_UNARY(X)                                                                       \
    X(abs, NK_ABS, fabs(x), x < 0 ? ineg(x) : x)                                              \
    X(neg, NK_NEG, -x, ineg(x))                                                               \
    X(ceil, NK_CEIL, ceil(x), x)                                                              \
    X(floor, NK_FLOOR, floor(x), x)                                                           \
    X(round, NK_ROUND, nearbyint(x), x)                                                       \
    X(sign, NK_SIGN, dsign(x), x > 0 ? 1 : x < 0 ? -1 : 0)                                    \
    X(reciprocal, NK_RECIPROCAL, 1 / x, x)                                                    \
    X(sqrt, NK_SQRT, sqrt(x), x)                                                              \
    X(exp, NK_EXP, exp(x), x)                                                                 \
    X(log, NK_LOG, log(x), x)                                                                 \
    X(erf, NK_ERF, erf(x), x)                                                                 \
    X(sin, NK_SIN, sin(x), x)                                                                 \
    X(cos, NK_COS, cos(x), x)                                                                 \
    X(tan, NK_TAN, tan(x), x)                                                                 \
    X(asin, NK_ASIN, asin(x), x)                                                              \
    X(acos, NK_ACOS, acos(x), x)                                                              \
    X(atan, NK_ATAN, atan(x), x)                                                              \
    X(sinh, NK_SINH, sinh(x), x)                                                              \
    X(cosh, NK_COSH, cosh(x), x)                                                              \
    X(asinh, NK_ASINH, asinh(x), x)                                                           \
    X(acosh, NK_ACOSH, acosh(x), x)                                                           \
    X(atanh, NK_ATANH, atanh(x), x)                                                           \
    X(tanh, NK_TANH, tanh(x), x)                                                              \
    X(sigmoid, NK_SIGMOID, sigmoid1(x), x)                                                    \
    X(relu, NK_RELU, x < 0 ? 0 : x, x > 0 ? x : 0)                                            \
    X(softplus, NK_SOFTPLUS, x > 30 ? x : log1p(exp(x)), x)                                   \
    X(softsign, NK_SOFTSIGN, x / (1 + fabs(x)), x)                                            \
    X(hard_swish, NK_HARD_SWISH, x * fmax(0, fmin(1, x / 6 + 0.5)), x)                        \
    X(leaky_relu, NK_LEAKY_RELU, x < 0 ? u.alpha * x : x, x)                                  \
    X(elu, NK_ELU, x < 0 ? u.alpha * (exp(x) - 1) : x, x)                                     \
    X(selu, NK_SELU, x <= 0 ? u.gamma * (u.alpha * exp(x) - u.alpha) : u.gamma * x, x)        \
    X(celu, NK_CELU, fmax(0, x) + fmin(0, u.alpha * (exp(x / u.alpha) - 1)), x)               \
    X(hard_sigmoid, NK_HARD_SIGMOID, fmax(0, fmin(1, u.alpha * x + u.beta)), x)               \
    X(thresholded_relu, NK_THRESHOLDED_RELU, x > u.alpha ? x : 0, x)                          \
    X(shrink, NK_SHRINK, x < -u.lambd ? x + u.bias : x > u.lambd ? x - u.bias : 0,            \
      x < -u.lambd ? lj_f64_to_i64(x + u.bias) : x > u.lambd ? lj_f64_to_i64(x - u.bias) : 0) \
    X(clip, NK_CLIP, clip_f(x, u.lo, u.hi), clip_i(x, u.lo, u.hi))                            \
    X(gelu, NK_GELU, 0.5 * x * (1 + erf(x / sqrt(2.0))), x)
#define LJ_ANY_BINARY(X)                                                                      \
    X(add, NK_ADD, x + y, LJ_WRAP(+))                                                         \
    X(sub, NK_SUB, x - y, LJ_WRAP(-))                                                         \
    X(mul, NK_MUL, x * y, LJ_WRAP(*))                                                         \
    X(div, NK_DIV, x / y, idiv(x, y))                                                         \
    X(min, NK_MIN, x != x || y != y ? NAN : fmin(x, y), x < y ? x : y)                        \
    X(max, NK_MAX, x != x || y != y ? NAN : fmax(x, y), x > y ? x : y)                        \
    X(mod, NK_MOD, use_fmod ? fmod(x, y) : fmod_python(x, y), use_fmod ? ifmod(x, y) : imod(x, y)) \
    X(pow, NK_POW, pow(x, y), ipow(x, y))                                                     \
    X(prelu, NK_PRELU, x < 0 ? y * x : x, x < 0 ? LJ_WRAP(*) : x)                           \
    X(relu_grad, NK_RELU_GRAD, y > 0 ? x : 0, y > 0 ? x : 0)
#define LJ_ANY_COMPARE(X)                                                                     \
    X(equal, NK_EQUAL, ==) X(less, NK_LESS, <) X(less_equal, NK_LESS_EQUAL, <=)               \
    X(greater, NK_GREATER, >) X(greater_equal, NK_GREATER_EQUAL, >=)
#define LJ_ANY_LOGIC(X) X(and, NK_AND, x && z) X(or, NK_OR, x || z) X(xor, NK_XOR, x != z)
#define LJ_ANY_REDUCE(X)                                                                      \
    X(reduce_sum, NK_REDUCE_SUM) X(reduce_mean, NK_REDUCE_MEAN) X(reduce_max, NK_REDUCE_MAX)  \
    X(reduce_min, NK_REDUCE_MIN) X(reduce_prod, NK_REDUCE_PROD) X(reduce_l1, NK_REDUCE_L1)    \
    X(reduce_l2, NK_REDUCE_L2) X(reduce_log_sum, NK_REDUCE_LOG_SUM)                           \
    X(reduce_log_sum_exp, NK_REDUCE_LOG_SUM_EXP) X(reduce_sum_square, NK_REDUCE_SUM_SQUARE)
/* The rest of k_table.c and k_data.c, by keyword. */
#define LJ_ANY_OTHER(X)                                                                       \
    X(bitshift) X(where) X(isnan) X(isinf) X(not) X(cast) X(argmax) X(argmin) X(cumsum)        \
    X(expand) X(tile) X(pad) X(trilu) X(split) X(gather_elements) X(gather_nd)                 \
    X(depth_to_space) X(space_to_depth) X(layer_norm) X(softmax) X(log_softmax) X(hardmax)      \
    X(nll_loss) X(scatter_elements) X(scatter_nd) X(one_hot) X(reverse_sequence)              \
    X(quantize_linear) X(dequantize_linear) X(dynamic_quantize_linear) X(conv_transpose)       \
    X(conv_weight_grad) X(gather) X(transpose) X(slice) X(matmul)
#define LJ_DECLARE_ANY4(name, kind, a, b) LJ_DECLARE_KERNEL(name##_any) LJ_DECLARE_WORK(name##_any)
#define LJ_DECLARE_ANY3(name, kind, a) LJ_DECLARE_KERNEL(name##_any) LJ_DECLARE_WORK(name##_any)
#define LJ_DECLARE_ANY2(name, kind) LJ_DECLARE_KERNEL(name##_any) LJ_DECLARE_WORK(name##_any)
#define LJ_DECLARE_ANY1(name) LJ_DECLARE_KERNEL(name##_any) LJ_DECLARE_WORK(name##_any)
LJ_ANY_UNARY(LJ_DECLARE_ANY4)
LJ_ANY_BINARY(LJ_DECLARE_ANY4)
LJ_ANY_COMPARE(LJ_DECLARE_ANY3)
LJ_ANY_LOGIC(LJ_DECLARE_ANY3)
LJ_ANY_REDUCE(LJ_DECLARE_ANY2)
LJ_ANY_OTHER(LJ_DECLARE_ANY1)
/* A fast f32 kernel's input it does not cover (another element kind, a
 * layout of axes it has no loop for) is run by the kernel for every kind
 * of the same operator: the f32 kernel's work function then gives that
 * kernel's units and the f32 kernel hands it its [lo, hi), so those inputs
 * split over the threads as the kernel for every kind splits them (the
 * same bytes for any thread count). */
/* k_dynamic.c: the producers of bounded-dynamic sizes, and the run-time
 * descriptor of an instruction over such buffers */
LJ_DECLARE_KERNEL(nonzero_any)
LJ_DECLARE_WORK(nonzero_any)
LJ_DECLARE_KERNEL(compress_any)
LJ_DECLARE_WORK(compress_any)
LJ_DECLARE_KERNEL(reshape_any)
LJ_DECLARE_WORK(reshape_any)
LJ_DECLARE_KERNEL(shape_any)
LJ_DECLARE_WORK(shape_any)
LJ_DECLARE_KERNEL(nms_any)
LJ_DECLARE_WORK(nms_any)
LJ_DECLARE_KERNEL(concat_any)
LJ_DECLARE_WORK(concat_any)
LJ_DECLARE_KERNEL(range_any)
LJ_DECLARE_WORK(range_any)
LJ_DECLARE_KERNEL(scan_row_any)
LJ_DECLARE_WORK(scan_row_any)
LJ_DECLARE_KERNEL(unique_any)
LJ_DECLARE_WORK(unique_any)
int libjit_dyn_prepare(int64_t *rd, const int64_t *d, void *const *ops, unsigned char *mutables,
                       const int64_t *slots);
/* Kernels that can fail on their input (libjit_K_fails, LjScratch.fail_at) */
LIBJIT_WORK libjit_cast_any_fails(const int64_t *d);
LIBJIT_WORK libjit_cast_f32_fails(const int64_t *d);
/* k_topk.c, k_resize.c (with scratch) */
LJ_DECLARE_KERNEL(top_k_any)
LJ_DECLARE_WORK(top_k_any)
LJ_DECLARE_SCRATCH(top_k_any)
LJ_DECLARE_KERNEL(resize_any)
LJ_DECLARE_WORK(resize_any)
LJ_DECLARE_SCRATCH(resize_any)
LJ_DECLARE_KERNEL(resize_f32)
LJ_DECLARE_WORK(resize_f32)
LJ_DECLARE_SCRATCH(resize_f32)
/* k_convt.c: the f32 form */
LJ_DECLARE_KERNEL(conv_transpose_f32)
LJ_DECLARE_WORK(conv_transpose_f32)
LJ_DECLARE_SCRATCH(conv_transpose_f32)
/* k_convwg.c: the f32 form */
LJ_DECLARE_KERNEL(conv_weight_grad_f32)
LJ_DECLARE_WORK(conv_weight_grad_f32)
LJ_DECLARE_SCRATCH(conv_weight_grad_f32)
/* k_vnorm.c */
LJ_DECLARE_KERNEL(softmax_f32)
LJ_DECLARE_WORK(softmax_f32)
LJ_DECLARE_KERNEL(log_softmax_f32)
LJ_DECLARE_WORK(log_softmax_f32)
LJ_DECLARE_KERNEL(layer_norm_f32)
LJ_DECLARE_WORK(layer_norm_f32)
/* k_linalg.c (with max_unpool) */
LJ_DECLARE_KERNEL(lrn_any)
LJ_DECLARE_WORK(lrn_any)
LJ_DECLARE_KERNEL(det_any)
LJ_DECLARE_WORK(det_any)
LJ_DECLARE_SCRATCH(det_any)
LJ_DECLARE_KERNEL(max_unpool_any)
LJ_DECLARE_WORK(max_unpool_any)
/* k_einsum.c */
LJ_DECLARE_KERNEL(einsum_any)
LJ_DECLARE_WORK(einsum_any)
/* k_text.c */
LJ_DECLARE_KERNEL(tfidf_vectorizer_any)
LJ_DECLARE_WORK(tfidf_vectorizer_any)
LJ_DECLARE_SCRATCH(tfidf_vectorizer_any)
LJ_DECLARE_KERNEL(string_normalizer_str)
LJ_DECLARE_WORK(string_normalizer_str)
/* Elements [e0, e1) of a cast from kind `from` to kind `to`, one of them str
 * (libjit_cast_any's string part). */
void lj_cast_strings(int to, void *y, int from, const void *x, int64_t e0, int64_t e1,
                     LjScratch *sc);
/* k_sample.c */
LJ_DECLARE_KERNEL(grid_sample_any)
LJ_DECLARE_WORK(grid_sample_any)
LJ_DECLARE_KERNEL(roi_align_any)
LJ_DECLARE_WORK(roi_align_any)
/* k_norm.c (beside the table's) */
LJ_DECLARE_KERNEL(mean_variance_norm_any)
LJ_DECLARE_WORK(mean_variance_norm_any)

/* k_qint.c: integer kernels of quantized graphs and ONNX's integer
 * products, for every kind; k_qconv.c: the fast qlinear_conv, by result
 * kind, and its VNNI form (x86-64 only; code generation calls it only on
 * CPUs with AVX-512 VNNI). */
#define LJ_ANY_QINT(X)                                                                        \
    X(rescale) X(qadd) X(qmul) X(qavg_pool) X(qglobal_avg_pool) X(conv_integer)                \
    X(qlinear_conv) X(matmul_integer) X(qlinear_matmul)
LJ_ANY_QINT(LJ_DECLARE_ANY1)
/* k_qlookup.c */
LJ_DECLARE_ANY1(qlookup)
/* k_qvec.c: the vector forms of rescale, qadd, qmul, clip and quantize_linear on i8/u8. */
#define LJ_QINT_BY_KIND(X)                                                                    \
    X(max_pool_i8) X(max_pool_u8) X(max_pool_i32) X(rescale_i8) X(rescale_u8) X(qadd_i8)      \
    X(qadd_u8) X(qmul_i8) X(qmul_u8) X(clip_i8) X(clip_u8) X(quantize_linear_i8)                \
    X(quantize_linear_u8)
#define LJ_DECLARE_KW(name) LJ_DECLARE_KERNEL(name) LJ_DECLARE_WORK(name)
LJ_QINT_BY_KIND(LJ_DECLARE_KW)
#define LJ_DECLARE_KWS(name) LJ_DECLARE_KERNEL(name) LJ_DECLARE_WORK(name) LJ_DECLARE_SCRATCH(name)
LJ_DECLARE_KWS(qlinear_conv_i8)
LJ_DECLARE_KWS(qlinear_conv_u8)
#if defined(__x86_64__)
LJ_DECLARE_KWS(qlinear_conv_vnni_i8)
LJ_DECLARE_KWS(qlinear_conv_vnni_u8)
#elif defined(__aarch64__)
LJ_DECLARE_KWS(qlinear_conv_sdot_i8)
LJ_DECLARE_KWS(qlinear_conv_sdot_u8)
#endif
/* k_qconvp.c: qconv_packed (weights packed by the qconv-pack pass). */
LJ_DECLARE_KWS(qconv_packed_i8)
LJ_DECLARE_KWS(qconv_packed_u8)
#if defined(__x86_64__)
LJ_DECLARE_KWS(qconv_packed_vnni_i8)
LJ_DECLARE_KWS(qconv_packed_vnni_u8)
LJ_DECLARE_KWS(qconv_packed_amx_i8) /* AMX where it applies, else the VNNI kernel */
LJ_DECLARE_KWS(qconv_packed_amx_u8)
#elif defined(__aarch64__)
LJ_DECLARE_KWS(qconv_packed_sdot_i8)
LJ_DECLARE_KWS(qconv_packed_sdot_u8)
#endif

#endif
