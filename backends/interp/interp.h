/* The reference interpreter: runs a Function node by node on tensors.
 *
 * It is the ground truth the other backends are compared with, and it is also
 * the evaluator behind constant folding (at import and in the graph passes),
 * so every node kind has exactly one kernel, here. Activations are freed at
 * their last use, so a large model runs in the memory it needs. */
#ifndef GLOWC_BACKENDS_INTERP_H
#define GLOWC_BACKENDS_INTERP_H

#include "core/diag.h"
#include "core/graph.h"
#include "core/lir.h"

/* Runs one node: `in` holds its operands, `out` its results (allocated with
 * the node's result types by the caller); strings it computes are allocated
 * in `strs`, which must outlive the results (NULL: a node computing strings
 * fails). */
/* A node with bounded-dynamic operands or results runs as a copy typed by
 * its operands' run-time types `in` (infer_run_time, which refuses a size
 * beyond its bound), so the kernels, which size their loops by the types,
 * respect them. Results of the kinds that decide their own sizes (nonzero...)
 * keep their bounds: the runner allocates that much, the kernel writes the
 * size into the result tensor's type. Returns n itself when nothing is
 * dynamic, NULL after an error; the copy lives in `a`. */
const Node *interp_run_time_node(const Node *n, Tensor *const *in, Arena *a, DiagList *d);
bool interp_eval_node(const Node *n, Tensor *const *in, Tensor *const *out, Arena *strs,
                      DiagList *d);

/* FoldFn (core/onnx/onnx.h): evaluates n, allocating results in `a`. */
bool interp_fold(void *ctx, const Node *n, Tensor *const *ops, Tensor **results, Arena *a,
                 DiagList *d);

/* Runs f. inputs[i] feeds f->params[i] (types must match); outputs[i]
 * receives a tensor allocated in `a`. Optionally reports every value
 * computed, in schedule order, to `observe` (layer-by-layer comparison). */
typedef void (*InterpObserver)(void *ctx, const Node *n, Tensor *const *results);
bool interp_run(Function *f, Tensor *const *inputs, Tensor **outputs, Arena *a, DiagList *d,
                InterpObserver observe, void *observe_ctx);

/* Runs an allocated low-level program: inputs in the order of its input
 * weights, outputs (allocated in `a`) in the order of its output weights. */
bool interp_run_lir(LirProgram *p, Tensor *const *inputs, Tensor **outputs, Arena *a,
                    DiagList *d);
/* The same, reporting every instruction that writes memory (not the
 * alloc/dealloc/view bookkeeping) right after it ran: ops[k] is operand k as
 * the instruction sees it, storage[k] the whole buffer it lies in (the same
 * for a non-view). Valid only during the call: a later instruction may reuse
 * the memory. */
typedef void (*LirObserver)(void *ctx, const LirInstr *i, const Tensor *ops,
                            const Tensor *storage);
bool interp_run_lir_observed(LirProgram *p, Tensor *const *inputs, Tensor **outputs, Arena *a,
                             DiagList *d, LirObserver observe, void *observe_ctx);

/* The interpreter's native set (what lowering leaves alone). */
bool interp_is_native(const Node *n);

#endif
