/* .npy reader and writer. The header is a Python dict literal; we accept
 * exactly the keys numpy writes, in any order. */
#include "core/npy.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct NpyKind {
    const char *descr; /* without the byte-order character */
    ElemKind elem;
} NpyKind;

static const NpyKind npy_kinds[] = {
    {"f4", ELEM_F32}, {"f8", ELEM_F64}, {"f2", ELEM_F16}, {"i1", ELEM_I8},  {"u1", ELEM_U8},
    {"i2", ELEM_I16}, {"u2", ELEM_U16}, {"i4", ELEM_I32}, {"u4", ELEM_U32}, {"i8", ELEM_I64},
    {"u8", ELEM_U64}, {"b1", ELEM_BOOL},
};

/* The file is named by the diagnostic's file field (npy_read sets it). */
static bool fail(DiagList *d, const char *msg) {
    diag_error(d, NULL, "%s", msg);
    return false;
}

/* Strings are numpy's '<Un': n UTF-32LE code points per element, NUL
 * padded (what np.array(['a', 'bc']) saves); in a tensor they are UTF-8. */
static bool unicode_width(const char *kind, int64_t *width) {
    if (kind[0] != 'U' || !isdigit((unsigned char)kind[1]))
        return false;
    char *end;
    long long w = strtoll(kind + 1, &end, 10);
    if (*end || w < 1 || w > 1 << 20)
        return false;
    *width = w;
    return true;
}

static void put_utf8(StrBuf *sb, uint32_t c) {
    if (c < 0x80) {
        sb_putc(sb, (char)c);
    } else if (c < 0x800) {
        sb_putc(sb, (char)(0xc0 | c >> 6));
        sb_putc(sb, (char)(0x80 | (c & 0x3f)));
    } else if (c < 0x10000) {
        sb_putc(sb, (char)(0xe0 | c >> 12));
        sb_putc(sb, (char)(0x80 | (c >> 6 & 0x3f)));
        sb_putc(sb, (char)(0x80 | (c & 0x3f)));
    } else {
        sb_putc(sb, (char)(0xf0 | c >> 18));
        sb_putc(sb, (char)(0x80 | (c >> 12 & 0x3f)));
        sb_putc(sb, (char)(0x80 | (c >> 6 & 0x3f)));
        sb_putc(sb, (char)(0x80 | (c & 0x3f)));
    }
}

static Tensor *read_unicode(const unsigned char *p, size_t have, Type t, int64_t width, Arena *a,
                            DiagList *d) {
    t.elem = ELEM_STR;
    int64_t numel;
    if (!type_numel_checked(&t, &numel) || numel > (int64_t)(SIZE_MAX / 4 / (size_t)width)) {
        fail(d, "shape overflows");
        return NULL;
    }
    if ((size_t)numel * (size_t)width * 4 != have) {
        diag_error(d, NULL, "data holds %zu bytes, the header's shape needs %zu", have,
                   (size_t)numel * (size_t)width * 4);
        return NULL;
    }
    Tensor *x = tensor_new(a, &t);
    StrBuf sb;
    sb_init(&sb);
    bool ok = x != NULL, bad_char = false;
    for (int64_t i = 0; ok && i < numel; i++) {
        sb.len = 0;
        for (int64_t k = 0; k < width; k++) {
            const unsigned char *q = p + ((size_t)i * (size_t)width + (size_t)k) * 4;
            uint32_t c = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 |
                         (uint32_t)q[3] << 24;
            if (!c)
                break;
            if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) {
                diag_error(d, NULL, "string %lld holds U+%X, which is no Unicode character",
                           (long long)i, c);
                ok = false;
                bad_char = true;
                break;
            }
            put_utf8(&sb, c);
        }
        ok = ok && !sb.oom && tensor_set_str(a, x, i, sb_str(&sb), sb.len);
    }
    sb_free(&sb);
    if (!ok && !bad_char)
        fail(d, "out of memory");
    return ok ? x : NULL;
}

/* A quoted string value for key in the header dict. */
static bool header_str(const char *h, const char *key, char *out, size_t outlen) {
    char pat[32];
    snprintf(pat, sizeof pat, "'%s'", key);
    const char *p = strstr(h, pat);
    if (!p)
        return false;
    p += strlen(pat);
    while (*p == ' ' || *p == ':')
        p++;
    if (*p != '\'' && *p != '"')
        return false;
    char q = *p++;
    size_t n = 0;
    while (*p && *p != q && n + 1 < outlen)
        out[n++] = *p++;
    out[n] = 0;
    return *p == q;
}

static bool parse_shape(const char *h, Type *t) {
    const char *p = strstr(h, "'shape'");
    if (!p)
        return false;
    p = strchr(p, '(');
    if (!p)
        return false;
    p++;
    t->rank = 0;
    for (;;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == ')')
            return true;
        if (!isdigit((unsigned char)*p) || t->rank == MAX_RANK)
            return false;
        char *end;
        long long v = strtoll(p, &end, 10);
        if (v < 0)
            return false;
        t->dims[t->rank++] = v;
        p = end;
        while (*p == 'L')
            p++;
    }
}

static Tensor *npy_parse(const void *data, size_t len, Arena *a, DiagList *d) {
    const unsigned char *b = data;
    if (len < 10 || memcmp(b, "\x93NUMPY", 6)) {
        fail(d, "not a .npy file (bad magic)");
        return NULL;
    }
    int major = b[6];
    size_t hlen, off;
    if (major == 1) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8;
        off = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12) {
            fail(d, "truncated header");
            return NULL;
        }
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        off = 12;
    } else {
        fail(d, "unsupported .npy format version");
        return NULL;
    }
    if (hlen > len - off || hlen > 1 << 20) {
        fail(d, "header longer than the file");
        return NULL;
    }
    char *h = malloc(hlen + 1);
    if (!h) {
        fail(d, "out of memory");
        return NULL;
    }
    memcpy(h, b + off, hlen);
    h[hlen] = 0;
    char descr[16], fortran[16];
    Type t = {0};
    bool ok = header_str(h, "descr", descr, sizeof descr) && parse_shape(h, &t);
    const char *fo = strstr(h, "'fortran_order'");
    if (fo) {
        fo = strchr(fo + 15, ':');
        snprintf(fortran, sizeof fortran, "%s", fo ? fo + 1 : "");
    }
    free(h);
    if (!ok) {
        fail(d, "malformed header (need 'descr' and 'shape')");
        return NULL;
    }
    if (fo && strstr(fortran, "True") == fortran + strspn(fortran, " ")) {
        fail(d, "Fortran-order arrays are not supported (save with C order)");
        return NULL;
    }
    if (descr[0] == '>') {
        fail(d, "big-endian arrays are not supported");
        return NULL;
    }
    /* strchr finds the terminator too: an empty descr has no order char. */
    const char *kind = descr[0] && strchr("<|=", descr[0]) ? descr + 1 : descr;
    int64_t width;
    if (unicode_width(kind, &width))
        return read_unicode(b + off + hlen, len - off - hlen, t, width, a, d);
    bool found = false;
    for (size_t i = 0; i < sizeof npy_kinds / sizeof npy_kinds[0]; i++) {
        if (!strcmp(kind, npy_kinds[i].descr)) {
            t.elem = npy_kinds[i].elem;
            found = true;
        }
    }
    if (!found) {
        diag_error(d, NULL, "unsupported element type '%s'", descr);
        return NULL;
    }
    int64_t numel;
    if (!type_numel_checked(&t, &numel)) {
        fail(d, "shape overflows");
        return NULL;
    }
    size_t bytes = (size_t)numel * elem_size(t.elem), have = len - off - hlen;
    if (bytes != have) {
        diag_error(d, NULL, "data holds %zu bytes, the header's shape needs %zu", have, bytes);
        return NULL;
    }
    Tensor *x = tensor_new(a, &t);
    if (!x) {
        fail(d, "out of memory");
        return NULL;
    }
    memcpy(x->data, b + off + hlen, bytes);
    if (t.elem == ELEM_BOOL)
        for (int64_t i = 0; i < numel; i++)
            ((uint8_t *)x->data)[i] = ((uint8_t *)x->data)[i] != 0;
    return x;
}

Tensor *npy_read(const void *data, size_t len, const char *path, Arena *a, DiagList *d) {
    const char *saved_file = d->file;
    d->file = path;
    Tensor *t = npy_parse(data, len, a, d);
    d->file = saved_file;
    return t;
}

/* Code points of the UTF-8 string s (valid: checked where strings enter). */
static int64_t code_points(const char *s) {
    int64_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        n += (*p & 0xc0) != 0x80;
    return n;
}

/* Strings as '<Un', n the longest string's code points (at least 1). */
static void write_unicode(const Tensor *t, int64_t width, StrBuf *out) {
    for (int64_t i = 0, n = tensor_numel(t); i < n; i++) {
        const unsigned char *p = (const unsigned char *)tensor_get_str(t, i);
        int64_t k = 0;
        while (*p) {
            uint32_t c = *p;
            int more = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : 0;
            c &= more ? 0x3fu >> more : 0x7fu;
            for (int j = 1; j <= more; j++)
                c = c << 6 | (p[j] & 0x3f);
            p += 1 + more;
            unsigned char le[4] = {(unsigned char)c, (unsigned char)(c >> 8),
                                   (unsigned char)(c >> 16), (unsigned char)(c >> 24)};
            sb_append_n(out, (const char *)le, 4);
            k++;
        }
        for (; k < width; k++)
            sb_append_n(out, "\0\0\0\0", 4);
    }
}

bool npy_write(const Tensor *t, StrBuf *out) {
    const char *descr = NULL;
    char ubuf[32];
    int64_t width = 1;
    for (size_t i = 0; i < sizeof npy_kinds / sizeof npy_kinds[0]; i++)
        if (npy_kinds[i].elem == t->type.elem)
            descr = npy_kinds[i].descr;
    if (t->type.elem == ELEM_STR) {
        for (int64_t i = 0, n = tensor_numel(t); i < n; i++) {
            int64_t w = code_points(tensor_get_str(t, i));
            width = w > width ? w : width;
        }
        snprintf(ubuf, sizeof ubuf, "U%lld", (long long)width);
        descr = ubuf;
    }
    if (!descr)
        return false;
    StrBuf h;
    sb_init(&h);
    sb_printf(&h, "{'descr': '%c%s', 'fortran_order': False, 'shape': (",
              elem_size(t->type.elem) == 1 ? '|' : '<', descr);
    for (int i = 0; i < t->type.rank; i++)
        sb_printf(&h, i ? ", %lld" : "%lld", (long long)t->type.dims[i]);
    if (t->type.rank == 1)
        sb_putc(&h, ',');
    sb_append(&h, "), }");
    /* Pad with spaces so that magic + length + header is a multiple of 64. */
    size_t total = 10 + h.len + 1;
    size_t pad = (64 - total % 64) % 64;
    for (size_t i = 0; i < pad; i++)
        sb_putc(&h, ' ');
    sb_putc(&h, '\n');
    sb_append_n(out, "\x93NUMPY\x01\x00", 8);
    unsigned char lenb[2] = {(unsigned char)(h.len & 0xff), (unsigned char)(h.len >> 8)};
    sb_append_n(out, (const char *)lenb, 2);
    sb_append_n(out, sb_str(&h), h.len);
    if (t->type.elem == ELEM_STR)
        write_unicode(t, width, out);
    else
        sb_append_n(out, t->data, tensor_bytes(t));
    sb_free(&h);
    return !out->oom;
}
