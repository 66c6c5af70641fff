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

/* k_gemm.c */
LJ_DECLARE_KERNEL(fully_connected_f32)
LJ_DECLARE_WORK(fully_connected_f32)
LJ_DECLARE_SCRATCH(fully_connected_f32)
LJ_DECLARE_KERNEL(matmul_f32)
LJ_DECLARE_WORK(matmul_f32)
LJ_DECLARE_SCRATCH(matmul_f32)

/* k_pool.c */
LJ_DECLARE_KERNEL(max_pool_f32)
LJ_DECLARE_WORK(max_pool_f32)
LJ_DECLARE_SCRATCH(max_pool_f32)
LJ_DECLARE_KERNEL(avg_pool_f32)
LJ_DECLARE_WORK(avg_pool_f32)
LJ_DECLARE_SCRATCH(avg_pool_f32)
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
    X(min, NK_MIN) X(prelu, NK_PRELU) X(pow, NK_POW)
#define LJ_DECLARE_F32(name, kind) LJ_DECLARE_KERNEL(name##_f32) LJ_DECLARE_WORK(name##_f32)
LJ_UNARY_KERNELS(LJ_DECLARE_F32)
LJ_BINARY_KERNELS(LJ_DECLARE_F32)

#endif
