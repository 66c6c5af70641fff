/* ONNX export of trained weights: the model a training run started from,
 * with some of its initializers' values replaced. Everything else of the
 * file (graph, opsets, metadata) is kept as it was. */
#ifndef GLOWC_CORE_ONNX_EXPORT_H
#define GLOWC_CORE_ONNX_EXPORT_H

#include "core/diag.h"
#include "core/tensor.h"

/* Reads `src`, replaces the initializer named names[i] by values[i] (same
 * type required) for every i, and writes the result to `dst` (whole or not
 * at all). False with a diagnostic, e.g. for a name that is no initializer. */
bool onnx_write_with_weights(const char *src, const char *dst, int n, const char *const *names,
                             const Tensor *const *values, DiagList *d);

#endif
