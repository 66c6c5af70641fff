/* The scratch mode of libjit.h (lj_scratch_get), defined here so that the
 * kernels' native test objects have it too. Code generation replaces this
 * initializer with the module's mode and makes it a constant. */
#include "backends/cpu/libjit/libjit.h"

bool libjit_static_scratch = false;
