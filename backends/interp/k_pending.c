/* Kernels not written yet: each says so at the node, so a model that needs
 * one fails with a clear message instead of a wrong answer. */
#include "backends/interp/kernels.h"

#define PENDING(nm)                                                                          \
    bool k_##nm(const KernelArgs *a) {                                                       \
        return kernel_fail(a, "the interpreter has no kernel for " #nm " yet");              \
    }

PENDING(gather_elements)
PENDING(gather_nd)
PENDING(scatter_elements)
PENDING(scatter_nd)
PENDING(one_hot)
PENDING(trilu)
PENDING(top_k)
PENDING(reverse_sequence)
