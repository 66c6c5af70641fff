/* Kernels not written yet: each says so at the node, so a model that needs
 * one fails with a clear message instead of a wrong answer. */
#include "backends/interp/kernels.h"

#define PENDING(nm)                                                                          \
    bool k_##nm(const KernelArgs *a) {                                                       \
        return kernel_fail(a, "the interpreter has no kernel for " #nm " yet");              \
    }

