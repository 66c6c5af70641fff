/* A growable byte buffer: every printer writes into one, so that the same text
 * can go to a file, a snapshot, or a TUI pane. */
#ifndef GLOWC_CORE_STRBUF_H
#define GLOWC_CORE_STRBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct StrBuf {
    char *data; /* always NUL-terminated when non-NULL */
    size_t len, cap;
    bool oom; /* an append failed; the text is truncated */
} StrBuf;

void sb_init(StrBuf *sb);
void sb_free(StrBuf *sb);
void sb_clear(StrBuf *sb);
void sb_append(StrBuf *sb, const char *s);
void sb_append_n(StrBuf *sb, const char *s, size_t n);
void sb_putc(StrBuf *sb, char c);
void sb_printf(StrBuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_vprintf(StrBuf *sb, const char *fmt, va_list ap);
/* Appends s as a double-quoted string with C escapes. */
void sb_quote(StrBuf *sb, const char *s);
/* The text (never NULL), and a malloc'd copy the caller frees. */
const char *sb_str(const StrBuf *sb);
char *sb_take(StrBuf *sb);

#endif
