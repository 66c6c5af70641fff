/* Growable string buffer. */
#include "core/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sb_init(StrBuf *sb) {
    memset(sb, 0, sizeof *sb);
}

void sb_free(StrBuf *sb) {
    free(sb->data);
    sb_init(sb);
}

void sb_clear(StrBuf *sb) {
    sb->len = 0;
    if (sb->data)
        sb->data[0] = 0;
}

static bool reserve(StrBuf *sb, size_t extra) {
    if (sb->oom)
        return false;
    if (sb->len + extra + 1 <= sb->cap)
        return true;
    size_t cap = sb->cap ? sb->cap : 256;
    while (cap < sb->len + extra + 1)
        cap *= 2;
    char *p = realloc(sb->data, cap);
    if (!p) {
        sb->oom = true;
        return false;
    }
    sb->data = p;
    sb->cap = cap;
    return true;
}

void sb_append_n(StrBuf *sb, const char *s, size_t n) {
    if (!reserve(sb, n))
        return;
    if (n) /* s may be NULL when empty */
        memcpy(sb->data + sb->len, s, n);
    sb->len += n;
    sb->data[sb->len] = 0;
}

void sb_append(StrBuf *sb, const char *s) {
    sb_append_n(sb, s, strlen(s));
}

void sb_putc(StrBuf *sb, char c) {
    sb_append_n(sb, &c, 1);
}

void sb_vprintf(StrBuf *sb, const char *fmt, va_list ap) {
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n <= 0 || !reserve(sb, (size_t)n))
        return;
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    sb->len += (size_t)n;
}

void sb_printf(StrBuf *sb, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(sb, fmt, ap);
    va_end(ap);
}

void sb_quote(StrBuf *sb, const char *s) {
    sb_putc(sb, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': sb_append(sb, "\\\""); break;
        case '\\': sb_append(sb, "\\\\"); break;
        case '\n': sb_append(sb, "\\n"); break;
        case '\t': sb_append(sb, "\\t"); break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                sb_printf(sb, "\\x%02x", *p);
            else
                sb_putc(sb, (char)*p);
        }
    }
    sb_putc(sb, '"');
}

const char *sb_str(const StrBuf *sb) {
    return sb->data ? sb->data : "";
}

char *sb_take(StrBuf *sb) {
    char *p = sb->data ? sb->data : calloc(1, 1);
    sb_init(sb);
    return p;
}
