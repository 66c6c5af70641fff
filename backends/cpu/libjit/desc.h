/* The contract between code generation and the libjit kernels.
 *
 * Every compute instruction becomes a call
 *     libjit_<kind>_<elem>(const int64_t *desc, void *const *ops, int64_t lo, int64_t hi)
 * where <kind> is the instruction's keyword (nodes.def), <elem> the element
 * kind of its first output (f32, i64, ...), `ops` the data pointers of the
 * outputs then the inputs, and [lo, hi) the part of the work to do (the
 * caller splits [0, libjit_<kind>_<elem>_work(desc)) over threads; a kernel
 * that does not define _work is run whole, with lo = 0, hi = 1).
 * When there is no libjit_<kind>_<elem>, libjit_<kind>_any is taken: one
 * kernel for every element kind, which reads the kinds from the descriptor.
 *
 * `desc` is a constant array that code generation emits per instruction:
 *
 *   desc[DESC_KIND]       node kind (NodeKind)
 *   desc[DESC_NRES]       number of outputs
 *   desc[DESC_NOPS]       number of outputs + inputs
 *   desc[DESC_NATTRS]     number of attribute records
 *   operand k at DESC_OPS + k * DESC_OP_WORDS:
 *       [0] element kind, [1] rank, [2 .. 2 + MAX_RANK) dims (unused: 1),
 *       then its quantization (DESC_OP_QUANT + 0 ..): mode (QuantMode), scale
 *       as the bits of a double, offset, channel axis -- so integer kernels
 *       of quantized types (rescale, qadd, ...) read their scales here
 *   attribute j at DESC_OPS + nops * DESC_OP_WORDS + j * DESC_ATTR_WORDS:
 *       [0] attribute key (AttrKey), [1] count (1 for scalars), [2 ..] values:
 *       integers as they are, floats as the bits of a double, element kinds
 *       as ElemKind, named values (ATTR_ENUM) as their enum constant; a
 *       string as its bytes, 8 to a word (at most 127 of them)
 *
 * The kernels are compiled to bitcode and inlined at every call site, where
 * desc is a constant: every load from it folds, so loop bounds, strides and
 * attributes are constants to the optimiser -- the specialisation Glow's
 * CPU backend gets. */
#ifndef GLOWC_LIBJIT_DESC_H
#define GLOWC_LIBJIT_DESC_H

#include <stdint.h>

enum {
    DESC_KIND = 0,
    DESC_NRES = 1,
    DESC_NOPS = 2,
    DESC_NATTRS = 3,
    DESC_OPS = 4,
    DESC_MAX_RANK = 8,
    DESC_OP_QUANT = 2 + DESC_MAX_RANK,
    DESC_OP_WORDS = DESC_OP_QUANT + 4,
    DESC_ATTR_VALUES = 16,
    DESC_ATTR_WORDS = 2 + DESC_ATTR_VALUES,
};

/* An instruction over bounded-dynamic buffers (issue 16) runs its libjit
 * kernel on a copy of its descriptor with the run-time dims, which
 * libjit_dyn_prepare (k_dynamic.c) makes from the shape slots. Its slots
 * array: per operand k, [2k] the byte offset of its run-time dims in the
 * mutable area (-1: static) and [2k + 1] its dynamic mask; then the rule
 * that gives the results' run-time dims:
 *   LJ_DYN_MAP      each dynamic result dim is its sources' run-time dims
 *                   broadcast together (equal, or 1): then the number of
 *                   sources and, per source, (result, dim, operand, dim) --
 *                   elementwise, transpose, gather and reductions, whose
 *                   maps code generation works out from the shape rules
 *   LJ_DYN_NONZERO  result dim 1 counts the input's nonzero elements
 *   LJ_DYN_COMPRESS the axis (or the flattened input) counts the condition's
 *                   true elements
 *   LJ_DYN_TOP_K    the axis of both results is operand k's value
 *   LJ_DYN_NMS      the selection itself, made by libjit_dyn_prepare (its
 *                   row count is the result's size; no kernel runs after)
 *   LJ_DYN_RESHAPE  the result's one dynamic dim holds what its static ones
 *                   leave of the input's elements
 *   LJ_DYN_SLICE    each axis's count by Slice's clamping (core/slice.h);
 *                   run-time ends (operand 2, one per entry of axes) are
 *                   written over the ends attribute first, so that the
 *                   kernel's starts and counts read them too
 *   LJ_DYN_CONCAT   the inputs' dims along the axis add up; the others
 *                   must be equal
 *   LJ_DYN_RANGE    the result's length counts start, limit and delta's
 *                   steps (core/range.h)
 *   LJ_DYN_TILE     each dim is the input's times its repeat (operand 2's
 *                   value, or the attribute)
 *   LJ_DYN_SCAN_ROW dim 0 is operand 2's row index, plus one when a row is
 *                   given (at most the accumulator's rows)
 *   LJ_DYN_EXPAND   the values of the shape (operand 2) broadcast with x's
 *                   run-time dims, aligned at the last axis (ONNX's Expand)
 *   LJ_DYN_UNIQUE   Unique itself, made by libjit_dyn_prepare (the groups'
 *                   count is the size of y's axis, of indices and of counts;
 *                   no kernel runs after) */
enum {
    LJ_DYN_MAP,
    LJ_DYN_NONZERO,
    LJ_DYN_COMPRESS,
    LJ_DYN_TOP_K,
    LJ_DYN_NMS,
    LJ_DYN_RESHAPE,
    LJ_DYN_SLICE,
    LJ_DYN_CONCAT,
    LJ_DYN_RANGE,
    LJ_DYN_TILE,
    LJ_DYN_SCAN_ROW,
    LJ_DYN_EXPAND,
    LJ_DYN_UNIQUE
};

/* The runtime each generated program calls into for threads. */
typedef struct LibjitRuntime LibjitRuntime;
/* A thread's kernel scratch, owned by the runtime (libjit.h). */
typedef struct LjScratch LjScratch;
typedef void (*LibjitWorker)(void *const *ops, int64_t lo, int64_t hi, LjScratch *sc);

#endif
