/* Tensor allocation and per-element access for every element kind. */
#include "core/tensor.h"

#include <math.h>
#include <string.h>

static Tensor *tensor_alloc(Arena *a, const Type *t, bool big) {
    int64_t n;
    if (!type_numel_checked(t, &n))
        return NULL;
    Tensor *x = arena_alloc(a, sizeof *x);
    if (!x)
        return NULL;
    x->type = *t;
    size_t bytes = (size_t)n * elem_size(t->elem);
    /* Never a NULL data pointer, even for an empty tensor. */
    x->data = big ? arena_alloc_big(a, bytes ? bytes : 1) : arena_alloc(a, bytes ? bytes : 1);
    return x->data ? x : NULL;
}

Tensor *tensor_new(Arena *a, const Type *t) {
    return tensor_alloc(a, t, false);
}

Tensor *tensor_new_big(Arena *a, const Type *t) {
    return tensor_alloc(a, t, true);
}

Tensor *tensor_wrap(Arena *a, const Type *t, void *data) {
    Tensor *x = arena_alloc(a, sizeof *x);
    if (!x)
        return NULL;
    x->type = *t;
    x->data = data;
    return x;
}

Tensor *tensor_clone(Arena *a, const Tensor *src) {
    Tensor *x = tensor_new(a, &src->type);
    if (x && src->data) {
        memcpy(x->data, src->data, tensor_bytes(src));
        if (!tensor_own_strs(a, x))
            return NULL;
    }
    return x;
}

const char *elem_load_str(const void *data, int64_t i) {
    const char *s = (const char *)(uintptr_t)((const uint64_t *)data)[i];
    return s ? s : "";
}

bool elem_store_str(Arena *a, void *data, int64_t i, const char *s, size_t len) {
    char *p = arena_alloc(a, len + 1);
    if (!p)
        return false;
    if (len)
        memcpy(p, s, len);
    p[len] = 0;
    ((uint64_t *)data)[i] = (uint64_t)(uintptr_t)p;
    return true;
}

const char *tensor_get_str(const Tensor *t, int64_t i) {
    return elem_load_str(t->data, i);
}

bool tensor_set_str(Arena *a, Tensor *t, int64_t i, const char *s, size_t len) {
    return elem_store_str(a, t->data, i, s, len);
}

bool tensor_own_strs(Arena *a, Tensor *t) {
    if (t->type.elem != ELEM_STR || !t->data)
        return true;
    int64_t n = tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        const char *s = tensor_get_str(t, i);
        if (!tensor_set_str(a, t, i, s, strlen(s)))
            return false;
    }
    return true;
}

bool utf8_valid(const char *s, size_t len) {
    if (!len) /* protobuf gives an empty string no data pointer */
        return true;
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    while (p < end) {
        unsigned c = *p++;
        if (c < 0x80)
            continue;
        int more = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc2 ? 1 : -1;
        if (more < 0 || c > 0xf4 || end - p < more)
            return false;
        uint32_t cp = c & (0x3fu >> more);
        for (int k = 0; k < more; k++) {
            if ((p[k] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (p[k] & 0x3f);
        }
        static const uint32_t least[4] = {0, 0x80, 0x800, 0x10000};
        if (cp < least[more] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        p += more;
    }
    return true;
}

size_t tensor_bytes(const Tensor *t) {
    return type_bytes(&t->type);
}

int64_t tensor_numel(const Tensor *t) {
    return type_numel(&t->type);
}

double elem_load_f64(ElemKind k, const void *p, int64_t i) {
    switch (k) {
    case ELEM_F32: return ((const float *)p)[i];
    case ELEM_F16: return f16_to_f32(((const uint16_t *)p)[i]);
    case ELEM_BF16: return bf16_to_f32(((const uint16_t *)p)[i]);
    case ELEM_F64: return ((const double *)p)[i];
    case ELEM_I8: return ((const int8_t *)p)[i];
    case ELEM_I16: return ((const int16_t *)p)[i];
    case ELEM_I32: return ((const int32_t *)p)[i];
    case ELEM_I64: return (double)((const int64_t *)p)[i];
    case ELEM_U8: return ((const uint8_t *)p)[i];
    case ELEM_U16: return ((const uint16_t *)p)[i];
    case ELEM_U32: return ((const uint32_t *)p)[i];
    case ELEM_U64: return (double)((const uint64_t *)p)[i];
    case ELEM_BOOL: return ((const uint8_t *)p)[i] != 0;
    case ELEM_STR: /* not a number: the verifier keeps strings from arithmetic */
    case ELEM_COUNT: break;
    }
    return 0;
}

int64_t elem_load_i64(ElemKind k, const void *p, int64_t i) {
    switch (k) {
    case ELEM_I8: return ((const int8_t *)p)[i];
    case ELEM_I16: return ((const int16_t *)p)[i];
    case ELEM_I32: return ((const int32_t *)p)[i];
    case ELEM_I64: return ((const int64_t *)p)[i];
    case ELEM_U8: return ((const uint8_t *)p)[i];
    case ELEM_U16: return ((const uint16_t *)p)[i];
    case ELEM_U32: return ((const uint32_t *)p)[i];
    case ELEM_U64: return (int64_t)((const uint64_t *)p)[i];
    case ELEM_BOOL: return ((const uint8_t *)p)[i] != 0;
    case ELEM_STR: return 0;
    default: break;
    }
    /* Floats to integers truncate toward zero; NaN and out-of-range saturate
     * (C leaves them undefined, so we define them). */
    double v = elem_load_f64(k, p, i);
    if (isnan(v))
        return 0;
    if (v >= 9223372036854775807.0)
        return INT64_MAX;
    if (v <= -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)v;
}

/* Integer stores wrap modulo 2^bits, as ONNX Cast between integer kinds does. */
void elem_store_i64(ElemKind k, void *p, int64_t i, int64_t v) {
    switch (k) {
    case ELEM_F32: ((float *)p)[i] = (float)v; return;
    case ELEM_F16: ((uint16_t *)p)[i] = f32_to_f16((float)v); return;
    case ELEM_BF16: ((uint16_t *)p)[i] = f32_to_bf16((float)v); return;
    case ELEM_F64: ((double *)p)[i] = (double)v; return;
    case ELEM_I8: ((int8_t *)p)[i] = (int8_t)(uint8_t)v; return;
    case ELEM_I16: ((int16_t *)p)[i] = (int16_t)(uint16_t)v; return;
    case ELEM_I32: ((int32_t *)p)[i] = (int32_t)(uint32_t)v; return;
    case ELEM_I64: ((int64_t *)p)[i] = v; return;
    case ELEM_U8: ((uint8_t *)p)[i] = (uint8_t)v; return;
    case ELEM_U16: ((uint16_t *)p)[i] = (uint16_t)v; return;
    case ELEM_U32: ((uint32_t *)p)[i] = (uint32_t)v; return;
    case ELEM_U64: ((uint64_t *)p)[i] = (uint64_t)v; return;
    case ELEM_BOOL: ((uint8_t *)p)[i] = v != 0; return;
    case ELEM_STR:
    case ELEM_COUNT: return;
    }
}

/* Double to an integer kind: truncate toward zero, then wrap; NaN gives 0. */
static int64_t f64_to_int_bits(double v) {
    if (isnan(v))
        return 0;
    if (v >= 18446744073709551616.0 || v <= -9223372036854775808.0)
        return INT64_MIN;
    if (v >= 9223372036854775808.0)
        return (int64_t)(uint64_t)v;
    return (int64_t)v;
}

void elem_store_f64(ElemKind k, void *p, int64_t i, double v) {
    switch (k) {
    case ELEM_F32: ((float *)p)[i] = (float)v; return;
    case ELEM_F16: ((uint16_t *)p)[i] = f32_to_f16((float)v); return;
    case ELEM_BF16: ((uint16_t *)p)[i] = f32_to_bf16((float)v); return;
    case ELEM_F64: ((double *)p)[i] = v; return;
    case ELEM_BOOL: ((uint8_t *)p)[i] = v != 0; return;
    case ELEM_STR: return;
    default: elem_store_i64(k, p, i, f64_to_int_bits(v)); return;
    }
}

double tensor_get_f64(const Tensor *t, int64_t i) {
    return elem_load_f64(t->type.elem, t->data, i);
}

int64_t tensor_get_i64(const Tensor *t, int64_t i) {
    return elem_load_i64(t->type.elem, t->data, i);
}

void tensor_set_f64(Tensor *t, int64_t i, double v) {
    elem_store_f64(t->type.elem, t->data, i, v);
}

void tensor_set_i64(Tensor *t, int64_t i, int64_t v) {
    elem_store_i64(t->type.elem, t->data, i, v);
}

bool tensor_is_splat(const Tensor *t) {
    if (!t->data)
        return false;
    size_t es = elem_size(t->type.elem);
    int64_t n = tensor_numel(t);
    const unsigned char *p = t->data;
    for (int64_t i = 1; i < n; i++) {
        if (t->type.elem == ELEM_STR ? strcmp(tensor_get_str(t, 0), tensor_get_str(t, i))
                                     : memcmp(p, p + (size_t)i * es, es))
            return false;
    }
    return n > 0;
}

uint64_t tensor_hash(const Tensor *t) {
    if (t->hashed)
        return t->hash;
    uint64_t h = 1469598103934665603ull;
    const unsigned char *ty = (const unsigned char *)&t->type.elem;
    for (size_t i = 0; i < sizeof t->type.elem; i++)
        h = (h ^ ty[i]) * 1099511628211ull;
    for (int i = 0; i < t->type.rank; i++)
        h = (h ^ (uint64_t)t->type.dims[i]) * 1099511628211ull;
    if (!t->data)
        return h;
    if (t->type.elem == ELEM_STR) {
        /* the characters, not the pointers: equal tensors hash alike in
         * every run; each string's NUL ends it, so ["ab"] and ["a","b"]
         * differ */
        for (int64_t i = 0, n = tensor_numel(t); i < n; i++)
            for (const unsigned char *c = (const unsigned char *)tensor_get_str(t, i);; c++) {
                h = (h ^ *c) * 1099511628211ull;
                if (!*c)
                    break;
            }
    } else {
        /* The data 8 bytes at a time in four interleaved chains, folded at
         * the end, then the tail byte by byte: one byte per multiply in one
         * chain, hashing resnet50's weights was a fifth of its compile (cse
         * hashes every constant). The value is only compared within one
         * process (cse) and printed as opaque<"...">, which nothing reads
         * back as a key. */
        const unsigned char *p = t->data;
        size_t n = tensor_bytes(t), i = 0;
        uint64_t lane[4] = {h, h ^ 1, h ^ 2, h ^ 3};
        for (; i + 32 <= n; i += 32)
            for (int k = 0; k < 4; k++) {
                uint64_t w;
                memcpy(&w, p + i + 8 * k, sizeof w);
                lane[k] = (lane[k] ^ w) * 1099511628211ull;
                lane[k] ^= lane[k] >> 29;
            }
        for (int k = 0; k < 4; k++)
            h = (h ^ lane[k]) * 1099511628211ull;
        for (; i < n; i++)
            h = (h ^ p[i]) * 1099511628211ull;
    }
    Tensor *memo = (Tensor *)t; /* a cache, not a change of value */
    memo->hash = h;
    memo->hashed = true;
    return h;
}

bool tensor_equal(const Tensor *a, const Tensor *b) {
    if (!type_equal(&a->type, &b->type) || !a->data || !b->data)
        return false;
    if (a->type.elem == ELEM_STR) {
        for (int64_t i = 0, n = tensor_numel(a); i < n; i++)
            if (strcmp(tensor_get_str(a, i), tensor_get_str(b, i)))
                return false;
        return true;
    }
    return memcmp(a->data, b->data, tensor_bytes(a)) == 0;
}

TensorDiff tensor_compare(const Tensor *got, const Tensor *want, double rtol, double atol) {
    TensorDiff r = {.same_type = type_equal(&got->type, &want->type), .ok = true, .worst = -1};
    if (!r.same_type) {
        r.ok = false;
        return r;
    }
    int64_t n = tensor_numel(want);
    bool flt = elem_is_float(want->type.elem);
    double worst_excess = -1;
    for (int64_t i = 0; i < n; i++) {
        double g = tensor_get_f64(got, i), w = tensor_get_f64(want, i);
        if (isfinite(w) && fabs(w) > r.max_abs_want)
            r.max_abs_want = fabs(w);
        bool bad;
        double excess;
        if (flt) {
            if (isnan(w) || isnan(g)) {
                bad = isnan(w) != isnan(g);
                excess = bad ? INFINITY : 0;
            } else if (isinf(w) || isinf(g)) {
                bad = g != w;
                excess = bad ? INFINITY : 0;
            } else {
                double diff = fabs(g - w);
                if (diff > r.max_abs)
                    r.max_abs = diff;
                excess = diff - (atol + rtol * fabs(w));
                bad = excess > 0;
            }
        } else if (want->type.elem == ELEM_STR) {
            bad = strcmp(tensor_get_str(got, i), tensor_get_str(want, i)) != 0;
            excess = bad;
        } else {
            bad = tensor_get_i64(got, i) != tensor_get_i64(want, i);
            double diff = fabs(g - w);
            if (diff > r.max_abs)
                r.max_abs = diff;
            excess = bad ? diff : 0;
        }
        if (bad) {
            r.ok = false;
            r.mismatches++;
            if (excess > worst_excess) {
                worst_excess = excess;
                r.worst = i;
                r.want_at_worst = w;
                r.got_at_worst = g;
            }
        }
    }
    return r;
}
