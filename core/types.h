/* Element kinds and tensor types: every value in both IRs has a static type,
 * an element kind plus a fixed list of dimensions (rank 0 is a scalar). */
#ifndef GLOWC_CORE_TYPES_H
#define GLOWC_CORE_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
#define ELEM(E, name, ctype, size, onnx, cls) ELEM_##E,
#include "core/elems.def"
    ELEM_COUNT
} ElemKind;

typedef enum { ECLS_FLOAT, ECLS_SINT, ECLS_UINT, ECLS_BOOL, ECLS_STR } ElemClass;

enum { MAX_RANK = 8 };

/* A quantized integer type stands for real = scale * (q - offset). Per
 * tensor, scale and offset are in the type. Per channel (QUANT_CHANNEL),
 * the type names only the channel axis: the scales and offsets are tensors,
 * operands of the node that makes or reads the value (quantize_linear,
 * qlinear_conv's w_scale), as in ONNX and Glow's channelwise convolution --
 * a type is copied by value everywhere, so it holds no list. */
typedef enum { QUANT_NONE, QUANT_TENSOR, QUANT_CHANNEL } QuantMode;

typedef struct Type {
    ElemKind elem;
    int rank;
    int64_t dims[MAX_RANK];
    QuantMode quant;
    float scale;    /* QUANT_TENSOR */
    int32_t offset; /* QUANT_TENSOR */
    int32_t qaxis;  /* QUANT_CHANNEL */
    /* Bounded-dynamic dimensions (XLA's): bit i set means dims[i] is an
     * upper bound, the memory planned for it, and the size is known only at
     * run time, where it travels with the value (the interpreter's tensor
     * holds its run-time type). Text form `?<=N`. */
    uint8_t dyn;
} Type;

/* Element kinds. */
const char *elem_name(ElemKind k);
size_t elem_size(ElemKind k);
ElemClass elem_class(ElemKind k);
bool elem_is_float(ElemKind k);
bool elem_is_int(ElemKind k); /* signed or unsigned integer, not bool */
/* Returns false when the name or ONNX code is not a kind we know. */
bool elem_from_name(const char *name, size_t len, ElemKind *out);
bool elem_from_onnx(int onnx_type, ElemKind *out);
int elem_to_onnx(ElemKind k);
/* Name of an ONNX TensorProto.DataType code, for messages ("STRING"...). */
const char *onnx_type_name(int onnx_type);

/* Half-precision conversions (round to nearest even). */
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
float bf16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);

/* Types. */
Type type_make(ElemKind elem, int rank, const int64_t *dims);
Type type_scalar(ElemKind elem);
bool type_equal(const Type *a, const Type *b); /* quantization included */
bool type_same_quant(const Type *a, const Type *b);
/* Copies src's quantization (or its absence) onto dst. */
void type_copy_quant(Type *dst, const Type *src);
/* The range of q in a quantized kind (i8, u8, i32): false for others. */
bool quant_elem_range(ElemKind k, int64_t *lo, int64_t *hi);
/* NULL when t's quantization is valid, else what is wrong with it. */
const char *type_quant_problem(const Type *t);
bool type_same_shape(const Type *a, const Type *b); /* dims and dynamic marks */
/* Whether a value of type `t` (static, or dynamic with smaller bounds) may
 * stand where `decl` is declared: same kind and rank, each static dimension
 * of decl equal, each dynamic one at most its bound. */
bool type_fits(const Type *t, const Type *decl);
/* The type that holds a value of either (an If's result from its two
 * branches): false when kind or rank differ; a dimension where they differ
 * (or either is dynamic) becomes dynamic, bounded by the larger. */
bool type_join(const Type *a, const Type *b, Type *out);
/* Whether dimension i (any dimension) is bounded-dynamic. */
static inline bool type_dim_dynamic(const Type *t, int i) {
    return (t->dyn >> i) & 1;
}
static inline bool type_is_dynamic(const Type *t) {
    return t->dyn != 0;
}
/* Element count; false on overflow of int64 or of size_t bytes. */
bool type_numel_checked(const Type *t, int64_t *numel);
int64_t type_numel(const Type *t); /* for types already checked */
size_t type_bytes(const Type *t);
/* Row-major strides in elements. */
void type_strides(const Type *t, int64_t *strides);
/* "f32<1x3x224x224>", "i64<>" (scalar), "i8<1x64, scale=0.5, offset=-3>",
 * "i8<64x3x3x3, axis=0>" (per channel), "i64<2x?<=60>" (bounded-dynamic). buf of at least TYPE_STR_MAX bytes. */
enum { TYPE_STR_MAX = 8 + MAX_RANK * 24 + 48 };
const char *type_str(const Type *t, char *buf);
/* Numpy-style broadcast of two shapes; false if incompatible. */
bool type_broadcast(const Type *a, const Type *b, Type *out);

#endif
