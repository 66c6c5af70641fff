/* The fast libjit kernels: code generation finds them by name
 * (libjit_<kind>_<elem>, desc.h); the declarations are for the kernel
 * tests and benchmarks, which call them directly. */
#ifndef GLOWC_LIBJIT_KERNELS_H
#define GLOWC_LIBJIT_KERNELS_H

#include "backends/cpu/libjit/libjit.h"

#define LJ_DECLARE_KERNEL(name)                                                              \
    LIBJIT_KERNEL libjit_##name(const int64_t *d, void *const *ops, int64_t lo, int64_t hi);
#define LJ_DECLARE_WORK(name) LIBJIT_WORK libjit_##name##_work(const int64_t *d);

/* k_conv.c */
LJ_DECLARE_KERNEL(conv_f32)
LJ_DECLARE_WORK(conv_f32)

#endif
