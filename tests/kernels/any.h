/* Cases for the kernels of every element kind (any.c): each returns how
 * many cases ran against the interpreter, or -1 after reporting the first
 * that differs. */
#ifndef GLOWC_TESTS_KERNELS_ANY_H
#define GLOWC_TESTS_KERNELS_ANY_H

#include <stdint.h>

#include "tests/kernels/harness.h"

int any_unary_cases(uint64_t seed);
int any_binary_cases(uint64_t seed);
int any_misc_cases(uint64_t seed);
int any_reduce_cases(uint64_t seed);
int any_data_cases(uint64_t seed);
int any_norm_cases(uint64_t seed);
int any_quant_cases(uint64_t seed);
/* The integer kernels of quantized graphs, every shape class. */
int any_qint_cases(uint64_t seed);
int any_select_cases(uint64_t seed);
/* The producers of bounded-dynamic sizes: nonzero, compress. */
int any_dynamic_cases(uint64_t seed);
/* Instructions over bounded-dynamic buffers through libjit_dyn_prepare (a
 * slice with run-time ends, an expand to a run-time shape, unique, nms) against the
 * interpreter's kernels at the same run-time sizes. */
int any_run_time_cases(uint64_t seed);
/* gather_nd, batch_dims 0 and 1. */
int any_gather_nd_cases(uint64_t seed);
/* Strings: cast to and from str, equal, string_normalizer. */
int any_string_cases(uint64_t seed);
/* scatter_nd, reshape, shape (static and at run-time sizes), nms. */
int any_shape_cases(uint64_t seed);
/* max_pool and avg_pool of 1-3 spatial axes, matmul. */
int any_pool_matmul_cases(uint64_t seed);
/* Work split over threads: scatter_elements by lines, the f32 kernels'
 * hand-offs to the kernels for every kind; at 1, 2 and 3 threads. */
int any_threads_cases(uint64_t seed);

#endif
