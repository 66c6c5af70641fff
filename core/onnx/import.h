/* What an ONNX operator handler sees: the node being imported, its inputs as
 * graph values, its attributes, and helpers to emit graph nodes.
 *
 * A handler normalises ONNX's many opset versions into one node kind with
 * explicit attributes (defaults filled in, negative axes kept as given,
 * auto_pad resolved to pads, shape operands turned into attributes). It
 * returns false after adding a diagnostic. Handlers are listed in ops.def. */
#ifndef GLOWC_CORE_ONNX_IMPORT_H
#define GLOWC_CORE_ONNX_IMPORT_H

#include "core/graph.h"
#include "core/onnx/onnx.h"
#include "onnx/onnx.pb-c.h"

typedef struct ImportCtx ImportCtx;
/* A sequence value, which lives only during import (ops_sequence.c): its
 * length is static, so it resolves to graph values and never reaches the IR. */
typedef struct OnnxSeq OnnxSeq;

typedef struct OnnxNode {
    ImportCtx *ic;
    Function *f;
    DiagList *d;
    const Onnx__NodeProto *proto;
    const char *op;    /* op_type */
    const char *name;  /* the node's name, or a generated "<OpType>_<index>" */
    const char *where; /* "node 'Conv_3' (Conv)" */
    int opset;         /* of the default domain */
    int nin, nout;
    Value **in;    /* NULL for an absent optional input, or a sequence */
    OnnxSeq **seq; /* the sequence inputs (ONNX_SEQ_OP handlers only), else NULL */
} OnnxNode;

typedef bool (*OpHandler)(OnnxNode *on);

#define ONNX_OP(op_type, handler) bool handler(OnnxNode *on);
#define ONNX_SEQ_OP(op_type, handler) bool handler(OnnxNode *on);
#include "core/onnx/ops.def"
/* BatchNormalization with training_mode=1 (ops_training.c). */
bool import_batch_norm_training(OnnxNode *on);

/* ---- attributes ---- */
bool on_has_attr(const OnnxNode *on, const char *name);
int64_t on_attr_int(const OnnxNode *on, const char *name, int64_t dflt);
float on_attr_float(const OnnxNode *on, const char *name, float dflt);
const char *on_attr_str(const OnnxNode *on, const char *name, const char *dflt);
/* Number of values copied into out (at most max), or -1 when absent. */
int on_attr_ints(const OnnxNode *on, const char *name, int64_t *out, int max);
int on_attr_floats(const OnnxNode *on, const char *name, float *out, int max);
/* A list of strings (arena copies), the same way. */
int on_attr_strs(const OnnxNode *on, const char *name, const char **out, int max);
/* A tensor attribute (Constant's value...), NULL when absent or unreadable. */
Tensor *on_attr_tensor(OnnxNode *on, const char *name);

/* ---- inputs ---- */
Value *on_in(const OnnxNode *on, int i); /* NULL when absent */
/* The value an ONNX name stands for so far, or NULL (unknown, or a sequence). */
Value *on_value(const OnnxNode *on, const char *name);
bool on_need_inputs(OnnxNode *on, int min, int max);
/* Input i, or a zero scalar constant of kind k standing for it when it is
 * absent (optional zero points). */
Value *on_in_or_zero(OnnxNode *on, int i, ElemKind k);
/* The value of input i as a constant, evaluating a constant subgraph or
 * using a known input when needed; NULL with an error naming `what` (e.g.
 * "shape") when it cannot be known at compile time. */
Tensor *on_const_input(OnnxNode *on, int i, const char *what);
/* Same, read as integers: count in *n (at most max). */
bool on_const_ints(OnnxNode *on, int i, const char *what, int64_t *out, int max, int *n);
/* Same, read as floats. */
bool on_const_floats(OnnxNode *on, int i, const char *what, float *out, int max, int *n);
/* Like on_const_input, but NULL without an error when the value is not known. */
Tensor *on_try_const(OnnxNode *on, Value *v);
/* Upper bounds of the values of a run-time list of integers (a shape
 * operand computed from the sizes of bounded-dynamic values): hi[i] bounds
 * element i, and bit i of *dyn is clear when it is known exactly. False
 * when no bound is derivable (the value depends on data). */
bool on_value_bounds(OnnxNode *on, Value *v, int64_t *hi, uint8_t *dyn, int max, int *n);
/* The same with the lower bounds. */
bool on_value_range(OnnxNode *on, Value *v, int64_t *lo, int64_t *hi, int max, int *n);
/* Like on_try_const, but never through a known input: for values that decide
 * no shape, which the graph can take at run time instead of specialising the
 * model to them. */
Tensor *on_try_static(OnnxNode *on, Value *v);
/* The sequence given as input i, or NULL when it is a tensor or absent. */
OnnxSeq *on_seq_in(const OnnxNode *on, int i);

/* ---- emitting ---- */
/* A new node (named after the ONNX node) appended to the function. */
Node *on_node(OnnxNode *on, NodeKind k, int nops, Value *const *ops, int nres);
/* Sets the ATTR_ENUM attribute `key` of n from ONNX's spelling; false, with
 * an error listing the set's names, for a spelling it does not have. */
bool on_set_enum(OnnxNode *on, Node *n, AttrKey key, const char *value);
/* Infers n's types; on success binds n's results to the ONNX outputs in order. */
bool on_done(OnnxNode *on, Node *n);
/* Infers n's types; returns its first result for further use (not bound). */
Value *on_tmp(OnnxNode *on, Node *n);
/* Binds ONNX output i to v. */
void on_bind(OnnxNode *on, int i, Value *v);
/* Binds ONNX output i to a sequence (allocated in the module's arena). */
void on_bind_seq(OnnxNode *on, int i, OnnxSeq *s);
/* A loop that runs at run time carrying a list (torch's list.append): the
 * body's formal for carried list j (an empty initial list, else an error);
 * the one element a body output appended to it (else an error naming the
 * output); the loop's result, the rows stacked [?<=bound x ...], as a list
 * of run-time length. */
OnnxSeq *seq_loop_formal(OnnxNode *on, OnnxSeq *init, int j);
Value *seq_loop_row(OnnxNode *on, OnnxSeq *out, const char *name);
OnnxSeq *seq_loop_result(OnnxNode *on, Value *stacked);
/* Such a list's stacked rows; NULL for a list of compile-time length. */
Value *seq_run_time_rows(const OnnxSeq *s);
/* A constant node holding t (named after the ONNX node). */
Value *on_const(OnnxNode *on, Tensor *t);
Value *on_scalar_const(OnnxNode *on, ElemKind k, double v);
/* A zeroed tensor counted against the memory budget; NULL after an error. */
Tensor *on_tensor(OnnxNode *on, const Type *t);
void on_error(OnnxNode *on, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An error that marks the model as using something unsupported (a feature of
 * an operator, such as training mode), so test runners count it as skipped. */
void on_unsupported(OnnxNode *on, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void on_note(OnnxNode *on, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Tensor from a TensorProto (initializers, attributes, .pb files). `dir` is
 * the model's folder for external data (NULL: external data refused); a
 * tensor of more than max_bytes is refused. */
Tensor *tensor_from_proto(const Onnx__TensorProto *tp, Arena *a, const char *dir,
                          uint64_t max_bytes, const char *what, DiagList *d);
/* Same, but a raw_data block that protobuf-c unpacked into `a` (a big
 * block of it) becomes the tensor's data, not copied: for a TensorProto
 * made into a tensor only once. */
Tensor *tensor_from_proto_owned(const Onnx__TensorProto *tp, Arena *a, const char *dir,
                                uint64_t max_bytes, const char *what, DiagList *d);

/* Whether a protobuf message of this descriptor nests at most 64 deep (the
 * unpacker recurses once per level). */
bool pb_depth_ok(const ProtobufCMessageDescriptor *desc, const uint8_t *p, size_t len, int depth);

/* The version of the default (ai.onnx) domain the model imports, 0 if none. */
int onnx_default_opset(const Onnx__ModelProto *mp);

/* A model file unpacked (export.c; free with onnx__model_proto__free_unpacked),
 * or NULL with a diagnostic naming the file and what is wrong with it. */
Onnx__ModelProto *onnx_model_read(const char *src, DiagList *d);
/* mp packed and written to dst, whole or not at all. */
bool onnx_model_write(const Onnx__ModelProto *mp, const char *dst, DiagList *d);

#endif
