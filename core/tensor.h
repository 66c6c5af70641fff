/* Tensors: a static type plus a pointer to row-major data owned by an arena.
 *
 * Element access by double or int64 lets generic code (constant folding, the
 * printer, the interpreter's slow paths) handle every element kind; hot paths
 * cast `data` to the C type directly. */
#ifndef GLOWC_CORE_TENSOR_H
#define GLOWC_CORE_TENSOR_H

#include "core/arena.h"
#include "core/types.h"

typedef struct Tensor {
    Type type;
    void *data;           /* NULL for a constant whose data was elided in text */
    uint64_t elided_hash; /* when data is NULL: the hash the text gave */
    /* tensor_hash's memo: constant data is immutable once it is a weight. */
    uint64_t hash;
    bool hashed;
} Tensor;

/* A tensor with zeroed data from `a` (NULL if out of memory). */
Tensor *tensor_new(Arena *a, const Type *t);
/* Same, data uninitialised and releasable early (arena_release). */
Tensor *tensor_new_big(Arena *a, const Type *t);
/* A tensor over `data`, a block of a's (arena_alloc_big) it now owns. */
Tensor *tensor_wrap(Arena *a, const Type *t, void *data);
Tensor *tensor_clone(Arena *a, const Tensor *src);
size_t tensor_bytes(const Tensor *t);
int64_t tensor_numel(const Tensor *t);

double tensor_get_f64(const Tensor *t, int64_t i);
int64_t tensor_get_i64(const Tensor *t, int64_t i);
/* Stores with C conversion semantics (float to int truncates; out-of-range
 * integers wrap, as ONNX Cast does). */
void tensor_set_f64(Tensor *t, int64_t i, double v);
void tensor_set_i64(Tensor *t, int64_t i, int64_t v);
/* Raw element i read as double / written from double, for any kind. */
double elem_load_f64(ElemKind k, const void *data, int64_t i);
int64_t elem_load_i64(ElemKind k, const void *data, int64_t i);
void elem_store_f64(ElemKind k, void *data, int64_t i, double v);
void elem_store_i64(ElemKind k, void *data, int64_t i, int64_t v);

/* Strings (kind str): element i, "" for an empty slot; a store copies the
 * len bytes of s (no NUL needed) into arena a and returns false when out of
 * memory. Copies between tensors go through these, never memcpy of slots,
 * when the source's arena may die first. */
const char *elem_load_str(const void *data, int64_t i);
bool elem_store_str(Arena *a, void *data, int64_t i, const char *s, size_t len);
const char *tensor_get_str(const Tensor *t, int64_t i);
bool tensor_set_str(Arena *a, Tensor *t, int64_t i, const char *s, size_t len);
/* Re-homes every string of t (kind str) in arena a. */
bool tensor_own_strs(Arena *a, Tensor *t);
/* true when s[0..len) is well-formed UTF-8 (no overlong forms, no
 * surrogates, nothing above U+10FFFF). */
bool utf8_valid(const char *s, size_t len);

/* true when every element equals the first (a splat). */
bool tensor_is_splat(const Tensor *t);
/* 64-bit FNV-1a hash of the type and the data, computed once per tensor:
 * callers that change data afterwards must not ask again. */
uint64_t tensor_hash(const Tensor *t);
bool tensor_equal(const Tensor *a, const Tensor *b);

/* Elementwise comparison of `got` with `want` (same type required):
 * floats pass when |got - want| <= atol + rtol * |want| (NaN matches NaN,
 * infinities must match exactly); other kinds must be equal. */
typedef struct TensorDiff {
    bool same_type;
    bool ok;
    int64_t mismatches;
    int64_t worst;        /* index of the largest violation (or first mismatch) */
    double max_abs;       /* largest |got - want| over all elements */
    double want_at_worst, got_at_worst;
    double max_abs_want;  /* largest |want|, to judge differences relatively */
} TensorDiff;
TensorDiff tensor_compare(const Tensor *got, const Tensor *want, double rtol, double atol);

#endif
