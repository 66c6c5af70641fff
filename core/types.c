/* Element kinds, half-precision conversion and static tensor types. */
#include "core/types.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ElemInfo {
    const char *name;
    size_t size;
    int onnx;
    ElemClass cls;
} ElemInfo;

static const ElemInfo elem_info[ELEM_COUNT] = {
#define ELEM(E, nm, ctype, sz, ox, c) [ELEM_##E] = {#nm, sz, ox, ECLS_##c},
#include "core/elems.def"
};

const char *elem_name(ElemKind k) {
    return (unsigned)k < ELEM_COUNT ? elem_info[k].name : "?";
}

size_t elem_size(ElemKind k) {
    return elem_info[k].size;
}

ElemClass elem_class(ElemKind k) {
    return elem_info[k].cls;
}

bool elem_is_float(ElemKind k) {
    return elem_info[k].cls == ECLS_FLOAT;
}

bool elem_is_int(ElemKind k) {
    return elem_info[k].cls == ECLS_SINT || elem_info[k].cls == ECLS_UINT;
}

bool elem_from_name(const char *name, size_t len, ElemKind *out) {
    for (int k = 0; k < ELEM_COUNT; k++) {
        if (strlen(elem_info[k].name) == len && !memcmp(elem_info[k].name, name, len)) {
            *out = (ElemKind)k;
            return true;
        }
    }
    return false;
}

bool elem_from_onnx(int onnx_type, ElemKind *out) {
    for (int k = 0; k < ELEM_COUNT; k++) {
        if (elem_info[k].onnx == onnx_type) {
            *out = (ElemKind)k;
            return true;
        }
    }
    return false;
}

int elem_to_onnx(ElemKind k) {
    return elem_info[k].onnx;
}

const char *onnx_type_name(int t) {
    static const char *const names[] = {
        "UNDEFINED", "FLOAT", "UINT8",  "INT8",   "UINT16",    "INT16",      "INT32",
        "INT64",     "STRING", "BOOL",  "FLOAT16", "DOUBLE",   "UINT32",     "UINT64",
        "COMPLEX64", "COMPLEX128", "BFLOAT16",
    };
    if (t >= 0 && t < (int)(sizeof names / sizeof names[0]))
        return names[t];
    return "unknown";
}

/* IEEE half <-> single, round to nearest even, NaN and infinity preserved. */
float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ff;
    uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while (!(man & 0x400));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
        }
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) /* inf or nan */
        return (uint16_t)(sign | 0x7c00 | (absx > 0x7f800000u ? 0x200 | ((absx >> 13) & 0x3ff) : 0));
    if (absx >= 0x477ff000u) /* rounds to >= 65520: overflow to infinity */
        return (uint16_t)(sign | 0x7c00);
    if (absx < 0x38800000u) { /* result is subnormal or zero */
        if (absx < 0x33000000u)
            return (uint16_t)sign;
        uint32_t e = absx >> 23;
        uint32_t man = (absx & 0x7fffff) | 0x800000;
        uint32_t shift = 126 - e; /* 14 + (112 - e) + ... */
        uint32_t half = man >> (shift);
        uint32_t rem = man & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t v = absx - 0x38000000u; /* rebias exponent 127 -> 15 */
    uint32_t half = v >> 13;
    uint32_t rem = v & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1)))
        half++;
    return (uint16_t)(sign | half);
}

float bf16_to_f32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40);
    uint32_t lsb = (x >> 16) & 1;
    return (uint16_t)((x + 0x7fff + lsb) >> 16);
}

Type type_make(ElemKind elem, int rank, const int64_t *dims) {
    Type t = {.elem = elem, .rank = rank};
    for (int i = 0; i < rank; i++)
        t.dims[i] = dims[i];
    return t;
}

Type type_scalar(ElemKind elem) {
    return type_make(elem, 0, NULL);
}

bool type_same_shape(const Type *a, const Type *b) {
    if (a->rank != b->rank || a->dyn != b->dyn)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

bool type_fits(const Type *t, const Type *decl) {
    if (t->elem != decl->elem || t->rank != decl->rank || !type_same_quant(t, decl))
        return false;
    for (int i = 0; i < t->rank; i++) {
        bool fit = type_dim_dynamic(decl, i) ? t->dims[i] <= decl->dims[i]
                                             : !type_dim_dynamic(t, i) && t->dims[i] == decl->dims[i];
        if (!fit)
            return false;
    }
    return true;
}

bool type_join(const Type *a, const Type *b, Type *out) {
    if (a->elem != b->elem || a->rank != b->rank || !type_same_quant(a, b))
        return false;
    *out = *a;
    for (int i = 0; i < a->rank; i++) {
        if (a->dims[i] == b->dims[i] && !type_dim_dynamic(a, i) && !type_dim_dynamic(b, i))
            continue;
        out->dims[i] = a->dims[i] > b->dims[i] ? a->dims[i] : b->dims[i];
        out->dyn |= (uint8_t)(1u << i);
    }
    return true;
}

bool type_same_quant(const Type *a, const Type *b) {
    if (a->quant != b->quant)
        return false;
    if (a->quant == QUANT_TENSOR)
        return a->scale == b->scale && a->offset == b->offset;
    return a->quant != QUANT_CHANNEL || a->qaxis == b->qaxis;
}

bool type_equal(const Type *a, const Type *b) {
    return a->elem == b->elem && type_same_shape(a, b) && type_same_quant(a, b);
}

void type_copy_quant(Type *dst, const Type *src) {
    dst->quant = src->quant;
    dst->scale = src->scale;
    dst->offset = src->offset;
    dst->qaxis = src->qaxis;
}

bool quant_elem_range(ElemKind k, int64_t *lo, int64_t *hi) {
    switch (k) {
    case ELEM_I8: *lo = INT8_MIN; *hi = INT8_MAX; return true;
    case ELEM_U8: *lo = 0; *hi = UINT8_MAX; return true;
    case ELEM_I32: *lo = INT32_MIN; *hi = INT32_MAX; return true;
    default: return false;
    }
}

const char *type_quant_problem(const Type *t) {
    if (t->quant == QUANT_NONE)
        return NULL;
    int64_t lo, hi;
    if (!quant_elem_range(t->elem, &lo, &hi))
        return "a quantized type must be i8, u8 or i32";
    if (t->quant == QUANT_CHANNEL)
        return t->qaxis >= 0 && t->qaxis < t->rank ? NULL : "the channel axis is not a dimension";
    if (!(t->scale > 0) || !isfinite(t->scale))
        return "the scale must be positive and finite";
    if (t->offset < lo || t->offset > hi)
        return "the offset is outside the element kind's range";
    return NULL;
}

/* The shortest decimal that reads back as the same float, so a printed type
 * parses to the identical scale and prints identically again. */
static int print_scale(char *buf, size_t size, float v) {
    int n = 0;
    for (int p = 1; p <= 9; p++) {
        n = snprintf(buf, size, "%.*g", p, (double)v);
        if (strtof(buf, NULL) == v)
            break;
    }
    return n;
}

bool type_numel_checked(const Type *t, int64_t *numel) {
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i] < 0)
            return false;
        if (t->dims[i] && n > INT64_MAX / t->dims[i])
            return false;
        n *= t->dims[i];
    }
    if ((uint64_t)n > SIZE_MAX / elem_size(t->elem))
        return false;
    *numel = n;
    return true;
}

int64_t type_numel(const Type *t) {
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= t->dims[i];
    return n;
}

size_t type_bytes(const Type *t) {
    return (size_t)type_numel(t) * elem_size(t->elem);
}

void type_strides(const Type *t, int64_t *strides) {
    int64_t s = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= t->dims[i];
    }
}

const char *type_str(const Type *t, char *buf) {
    int n = snprintf(buf, TYPE_STR_MAX, "%s<", elem_name(t->elem));
    for (int i = 0; i < t->rank && n < TYPE_STR_MAX; i++)
        n += snprintf(buf + n, (size_t)(TYPE_STR_MAX - n), "%s%s%lld", i ? "x" : "",
                      type_dim_dynamic(t, i) ? "?<=" : "", (long long)t->dims[i]);
    if (t->quant == QUANT_TENSOR && n < TYPE_STR_MAX) {
        n += snprintf(buf + n, (size_t)(TYPE_STR_MAX - n), t->rank ? ", scale=" : "scale=");
        if (n < TYPE_STR_MAX)
            n += print_scale(buf + n, (size_t)(TYPE_STR_MAX - n), t->scale);
        if (n < TYPE_STR_MAX)
            n += snprintf(buf + n, (size_t)(TYPE_STR_MAX - n), ", offset=%d", (int)t->offset);
    } else if (t->quant == QUANT_CHANNEL && n < TYPE_STR_MAX) {
        n += snprintf(buf + n, (size_t)(TYPE_STR_MAX - n), ", axis=%d", (int)t->qaxis);
    }
    if (n < TYPE_STR_MAX - 1)
        snprintf(buf + n, (size_t)(TYPE_STR_MAX - n), ">");
    return buf;
}

bool type_broadcast(const Type *a, const Type *b, Type *out) {
    int rank = a->rank > b->rank ? a->rank : b->rank;
    Type t = {.elem = a->elem, .rank = rank};
    for (int i = 0; i < rank; i++) {
        int ia = i - (rank - a->rank), ib = i - (rank - b->rank);
        int64_t da = ia >= 0 ? a->dims[ia] : 1;
        int64_t db = ib >= 0 ? b->dims[ib] : 1;
        if (da == db || db == 1)
            t.dims[i] = da;
        else if (da == 1)
            t.dims[i] = db;
        else
            return false;
    }
    *out = t;
    return true;
}
