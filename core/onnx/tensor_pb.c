/* TensorProto to Tensor: typed fields, raw little-endian bytes, or external
 * data in a file beside the model (never outside the model's folder). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/onnx/import.h"

static const char *ext_value(const Onnx__TensorProto *tp, const char *key) {
    for (size_t i = 0; i < tp->n_external_data; i++)
        if (tp->external_data[i]->key && !strcmp(tp->external_data[i]->key, key))
            return tp->external_data[i]->value;
    return NULL;
}

/* The external file's path, if it stays inside dir once symlinks and ".."
 * are resolved. */
static char *external_path(const char *dir, const char *loc, Arena *a, const char *what,
                           DiagList *d) {
    if (!dir) {
        diag_error(d, what, "external data is not allowed here");
        return NULL;
    }
    if (loc[0] == '/') {
        diag_error(d, what, "external data location '%s' is an absolute path", loc);
        return NULL;
    }
    for (const char *p = loc; *p; p += strcspn(p, "/"), p += *p == '/') {
        if (!strncmp(p, "..", 2) && (p[2] == '/' || !p[2])) {
            diag_error(d, what, "external data location '%s' leaves the model's folder", loc);
            return NULL;
        }
    }
    char joined[PATH_MAX];
    if ((size_t)snprintf(joined, sizeof joined, "%s/%s", dir, loc) >= sizeof joined) {
        diag_error(d, what, "external data location '%s' is too long", loc);
        return NULL;
    }
    char real_dir[PATH_MAX], real_file[PATH_MAX];
    if (!realpath(dir, real_dir) || !realpath(joined, real_file)) {
        diag_error(d, what, "cannot open external data '%s': %s", loc, strerror(errno));
        return NULL;
    }
    size_t n = strlen(real_dir);
    if (n == 1) /* the model sits in "/" */
        n = 0;
    if (strncmp(real_file, real_dir, n) || real_file[n] != '/') {
        diag_error(d, what, "external data '%s' lies outside the model's folder", loc);
        return NULL;
    }
    return arena_strdup(a, real_file);
}

/* A decimal field of external_data ("offset", "length"): -1 when malformed. */
static long long ext_number(const char *s) {
    if (!s)
        return 0;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    return !*s || *end || errno || v < 0 ? -1 : v;
}

/* The external file of the tensor, once it is known to hold `want` bytes at
 * *offset: checked before the tensor is allocated, so that a hostile header
 * cannot make us reserve memory the file does not back. */
static const char *check_external(const Onnx__TensorProto *tp, const char *dir, uint64_t want,
                                  Arena *a, long long *offset, const char *what, DiagList *d) {
    const char *loc = ext_value(tp, "location");
    if (!loc) {
        diag_error(d, what, "external data without a location");
        return NULL;
    }
    const char *len_s = ext_value(tp, "length");
    long long off = ext_number(ext_value(tp, "offset")), len = ext_number(len_s);
    if (off < 0 || len < 0) {
        diag_error(d, what, "external data has a malformed %s", off < 0 ? "offset" : "length");
        return NULL;
    }
    if (len_s && (uint64_t)len != want) {
        diag_error(d, what, "external data length %lld does not match the tensor's %llu bytes",
                   len, (unsigned long long)want);
        return NULL;
    }
    const char *path = external_path(dir, loc, a, what, d);
    if (!path)
        return NULL;
    struct stat st;
    if (stat(path, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < (uint64_t)off ||
        (uint64_t)st.st_size - (uint64_t)off < want) {
        diag_error(d, what, "external data '%s' does not hold %llu bytes at offset %lld", loc,
                   (unsigned long long)want, off);
        return NULL;
    }
    *offset = off;
    return path;
}

static bool read_external(const char *path, long long off, Tensor *t, const char *what,
                          DiagList *d) {
    size_t want = tensor_bytes(t);
    FILE *f = fopen(path, "rb");
    bool ok = f && fseeko(f, (off_t)off, SEEK_SET) == 0 && fread(t->data, 1, want, f) == want;
    if (f)
        fclose(f);
    if (!ok)
        diag_error(d, what, "cannot read %zu bytes of external data at offset %lld", want, off);
    return ok;
}

/* Copies n typed values into t, converting to the element kind. */
static bool check_count(size_t have, int64_t numel, const char *field, const char *what,
                        DiagList *d) {
    if ((int64_t)have == numel)
        return true;
    diag_error(d, what, "%s holds %zu values for %lld elements", field, have, (long long)numel);
    return false;
}

static bool read_typed(const Onnx__TensorProto *tp, Tensor *t, int64_t numel, const char *what,
                       DiagList *d) {
    ElemKind k = t->type.elem;
    switch (k) {
    case ELEM_F32:
        if (!check_count(tp->n_float_data, numel, "float_data", what, d))
            return false;
        if (numel) /* no data pointer when empty */
            memcpy(t->data, tp->float_data, (size_t)numel * 4);
        return true;
    case ELEM_F64:
        if (!check_count(tp->n_double_data, numel, "double_data", what, d))
            return false;
        if (numel)
            memcpy(t->data, tp->double_data, (size_t)numel * 8);
        return true;
    case ELEM_I64:
        if (!check_count(tp->n_int64_data, numel, "int64_data", what, d))
            return false;
        if (numel)
            memcpy(t->data, tp->int64_data, (size_t)numel * 8);
        return true;
    case ELEM_U32:
    case ELEM_U64:
        if (!check_count(tp->n_uint64_data, numel, "uint64_data", what, d))
            return false;
        for (int64_t i = 0; i < numel; i++)
            tensor_set_i64(t, i, (int64_t)tp->uint64_data[i]);
        return true;
    case ELEM_F16:
    case ELEM_BF16: /* int32_data holds the 16-bit patterns */
        if (!check_count(tp->n_int32_data, numel, "int32_data", what, d))
            return false;
        for (int64_t i = 0; i < numel; i++)
            ((uint16_t *)t->data)[i] = (uint16_t)tp->int32_data[i];
        return true;
    default:
        if (!check_count(tp->n_int32_data, numel, "int32_data", what, d))
            return false;
        for (int64_t i = 0; i < numel; i++)
            tensor_set_i64(t, i, tp->int32_data[i]);
        return true;
    }
}

/* STRING tensors keep their bytes in string_data, never in raw_data (ONNX
 * says so); each must be UTF-8, as every string kernel assumes. */
static Tensor *strings_from_proto(const Onnx__TensorProto *tp, Arena *a, const Type *ty,
                                  int64_t numel, const char *what, DiagList *d) {
    if (tp->has_raw_data || (tp->has_data_location && tp->data_location ==
                                                           ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)) {
        diag_error(d, what, "a STRING tensor must hold its values in string_data");
        return NULL;
    }
    if (!check_count(tp->n_string_data, numel, "string_data", what, d))
        return NULL;
    Tensor *t = tensor_new(a, ty);
    if (!t) {
        diag_error(d, what, "out of memory");
        return NULL;
    }
    for (int64_t i = 0; i < numel; i++) {
        const ProtobufCBinaryData *s = &tp->string_data[i];
        if (!utf8_valid((const char *)s->data, s->len)) {
            diag_error(d, what, "string %lld is not valid UTF-8", (long long)i);
            return NULL;
        }
        if (s->len && memchr(s->data, 0, s->len)) {
            diag_error(d, what, "string %lld holds a NUL character", (long long)i);
            return NULL;
        }
        if (!tensor_set_str(a, t, i, (const char *)s->data, s->len)) {
            diag_error(d, what, "out of memory");
            return NULL;
        }
    }
    return t;
}

static Tensor *from_proto(const Onnx__TensorProto *tp, Arena *a, const char *dir,
                          uint64_t max_bytes, const char *what, DiagList *d, bool adopt) {
    ElemKind k;
    if (!tp->has_data_type || !elem_from_onnx(tp->data_type, &k)) {
        diag_error(d, what, "unsupported element type %s",
                   onnx_type_name(tp->has_data_type ? tp->data_type : 0));
        return NULL;
    }
    if (tp->n_dims > MAX_RANK) {
        diag_error(d, what, "rank %zu exceeds the maximum of %d", tp->n_dims, MAX_RANK);
        return NULL;
    }
    Type ty = {.elem = k, .rank = (int)tp->n_dims};
    for (size_t i = 0; i < tp->n_dims; i++) {
        if (tp->dims[i] < 0) {
            diag_error(d, what, "negative dimension %lld", (long long)tp->dims[i]);
            return NULL;
        }
        ty.dims[i] = tp->dims[i];
    }
    int64_t numel;
    if (!type_numel_checked(&ty, &numel)) {
        diag_error(d, what, "element count overflows 64 bits");
        return NULL;
    }
    uint64_t bytes = (uint64_t)numel * elem_size(k);
    if (bytes > max_bytes) {
        diag_error(d, what,
                   "needs %llu bytes, more than the %llu bytes left of the memory budget "
                   "(--max-memory)",
                   (unsigned long long)bytes, (unsigned long long)max_bytes);
        return NULL;
    }
    if (k == ELEM_STR)
        return strings_from_proto(tp, a, &ty, numel, what, d);
    if (tp->has_raw_data && tp->raw_data.len != bytes) {
        /* Checked before allocating, so a hostile header cannot make us
         * reserve memory the file does not back. */
        diag_error(d, what, "raw_data holds %zu bytes, the %s tensor needs %llu",
                   tp->raw_data.len, elem_name(k), (unsigned long long)bytes);
        return NULL;
    }
    bool external = tp->has_data_location &&
                    tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    if (!external && !tp->has_raw_data && numel > 0) {
        size_t have = tp->n_float_data + tp->n_int32_data + tp->n_int64_data +
                      tp->n_double_data + tp->n_uint64_data;
        if (have != (size_t)numel) {
            diag_error(d, what, "holds %zu values for %lld elements", have, (long long)numel);
            return NULL;
        }
    }
    long long ext_off = 0;
    const char *ext_path =
        external ? check_external(tp, dir, bytes, a, &ext_off, what, d) : NULL;
    if (external && !ext_path)
        return NULL;
    /* raw_data overwrites every byte: a large tensor is not zeroed first,
     * nor copied when the block is the arena's already. */
    bool whole = tp->has_raw_data && !external && bytes >= 16384;
    if (whole && adopt && arena_owns_big(a, tp->raw_data.data))
        return tensor_wrap(a, &ty, tp->raw_data.data);
    Tensor *t = whole ? tensor_new_big(a, &ty) : tensor_new(a, &ty);
    if (!t) {
        diag_error(d, what, "out of memory for %llu bytes", (unsigned long long)bytes);
        return NULL;
    }
    if (external)
        return read_external(ext_path, ext_off, t, what, d) ? t : NULL;
    if (tp->has_raw_data) {
        if (bytes)
            memcpy(t->data, tp->raw_data.data, bytes);
        return t;
    }
    if (numel == 0)
        return t;
    return read_typed(tp, t, numel, what, d) ? t : NULL;
}

Tensor *tensor_from_proto(const Onnx__TensorProto *tp, Arena *a, const char *dir,
                          uint64_t max_bytes, const char *what, DiagList *d) {
    return from_proto(tp, a, dir, max_bytes, what, d, false);
}

Tensor *tensor_from_proto_owned(const Onnx__TensorProto *tp, Arena *a, const char *dir,
                                uint64_t max_bytes, const char *what, DiagList *d) {
    return from_proto(tp, a, dir, max_bytes, what, d, true);
}

/* protobuf-c allocations come from a scratch arena, so that a failure at any
 * point frees everything with the arena. */
static void *pb_alloc(void *ctx, size_t size) {
    return arena_alloc(ctx, size ? size : 1);
}

static void pb_free(void *ctx, void *p) {
    (void)ctx;
    (void)p;
}

Tensor *onnx_read_tensor(const void *data, size_t len, const char *path, Arena *a,
                         const char **name, DiagList *d) {
    Arena *scratch = arena_new();
    ProtobufCAllocator alloc = {pb_alloc, pb_free, scratch};
    Onnx__TensorProto *tp =
        onnx__tensor_proto__unpack(&alloc, len, (const uint8_t *)data);
    Tensor *t = NULL;
    const char *saved_file = d->file;
    d->file = path;
    if (!tp) {
        diag_error(d, NULL, "not a valid TensorProto (truncated or corrupted)");
    } else {
        const char *what = arena_printf(d->arena, "tensor '%s'", tp->name ? tp->name : "");
        t = tensor_from_proto(tp, a, NULL, UINT64_MAX, what, d);
        if (t && name)
            *name = arena_strdup(a, tp->name ? tp->name : "");
    }
    d->file = saved_file;
    arena_destroy(scratch);
    return t;
}
