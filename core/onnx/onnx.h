/* ONNX import: a ModelProto (protobuf-c, generated at build time from the
 * installed onnx.proto) becomes a Module with static shapes.
 *
 * Symbolic dimensions are bound by name (--dim), else by the shape of a
 * `known` value given for the input, else a leading one defaults to 1.
 * Operands that decide a shape (Reshape's shape, Slice's starts, ...) must be
 * constants; a subgraph computing one from constants (Shape -> Gather ->
 * Concat, as exporters emit) is evaluated at import through `fold`, which the
 * caller wires to the reference interpreter -- the core knows no backend.
 * `known` inputs may be used the same way: the model is then specialised to
 * their values, and the importer says so in a note. */
#ifndef GLOWC_CORE_ONNX_H
#define GLOWC_CORE_ONNX_H

#include "core/diag.h"
#include "core/graph.h"

typedef struct DimBinding {
    const char *name;
    int64_t value;
} DimBinding;

/* An input's value, by name, or by position among the graph's inputs when
 * name is NULL (the ONNX test data does not always name its tensors). */
typedef struct KnownInput {
    const char *name;
    int index;
    const Tensor *value;
    bool *read; /* if set: made true when the import reads the value (the model is specialised to it) */
    bool late;  /* the value binds dimensions only: a branch or loop on it runs at run time */
} KnownInput;

/* Evaluates node n on constant operands; results are allocated in `a`. */
typedef bool (*FoldFn)(void *ctx, const Node *n, Tensor *const *ops, Tensor **results, Arena *a,
                       DiagList *d);

typedef struct ImportOptions {
    const DimBinding *dims;
    int ndims;
    const KnownInput *known;
    int nknown;
    FoldFn fold;
    void *fold_ctx;
    uint64_t max_memory; /* refuse tensors larger than this (0: no limit) */
    bool *unsupported;   /* out: set when an operator or type is not supported */
} ImportOptions;

Module *onnx_import_file(const char *path, const ImportOptions *opt, DiagList *d);
Module *onnx_import_buffer(const void *data, size_t len, const char *path,
                           const ImportOptions *opt, DiagList *d);

/* A serialized TensorProto (the .pb files of the ONNX test data). The tensor
 * and its name are allocated in `a`. */
Tensor *onnx_read_tensor(const void *data, size_t len, const char *path, Arena *a,
                         const char **name, DiagList *d);

#endif
