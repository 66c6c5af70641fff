/* ONNX export of trained weights: the model a training run started from,
 * with some of its initializers' values replaced. Everything else of the
 * file (graph, opsets, metadata) is kept as it was. */
#ifndef GLOWC_CORE_ONNX_EXPORT_H
#define GLOWC_CORE_ONNX_EXPORT_H

#include "core/diag.h"
#include "core/graph.h"
#include "core/tensor.h"

/* Reads `src`, replaces the initializer named names[i] by values[i] (same
 * type required) for every i, and writes the result to `dst` (whole or not
 * at all). False with a diagnostic, e.g. for a name that is no initializer. */
bool onnx_write_with_weights(const char *src, const char *dst, int n, const char *const *names,
                             const Tensor *const *values, DiagList *d);

/* Writes `src` in QDQ form (export_qdq.c): its float graph with
 * QuantizeLinear/DequantizeLinear where `quantized` (the quantize pass's
 * graph of src's import, node names intact) holds integers, int8 per-channel
 * weights and int32 biases. Whole or not at all; false with a diagnostic. */
bool onnx_write_qdq(const char *src, const char *dst, const Function *quantized, DiagList *d);

#endif
