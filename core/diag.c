/* Diagnostic list and its rendering. */
#include "core/diag.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void diag_init(DiagList *d, const char *file) {
    memset(d, 0, sizeof *d);
    d->arena = arena_new();
    d->file = file ? arena_strdup(d->arena, file) : NULL;
}

void diag_free(DiagList *d) {
    arena_destroy(d->arena);
    memset(d, 0, sizeof *d);
}

void diag_clear(DiagList *d) {
    char *file = d->file ? strdup(d->file) : NULL;
    diag_free(d);
    diag_init(d, file);
    free(file);
}

static void push(DiagList *d, DiagLevel level, const char *file, const char *where, SrcLoc loc,
                 const char *src_line, const char *msg) {
    Diag *g = arena_alloc(d->arena, sizeof *g);
    if (!g)
        return;
    g->level = level;
    g->file = file ? arena_strdup(d->arena, file) : NULL;
    g->where = where ? arena_strdup(d->arena, where) : NULL;
    g->loc = loc;
    g->src_line = src_line ? arena_strdup(d->arena, src_line) : NULL;
    g->msg = msg;
    if (d->tail)
        d->tail->next = g;
    else
        d->head = g;
    d->tail = g;
    if (level == DIAG_ERROR)
        d->errors++;
    else if (level == DIAG_WARNING)
        d->warnings++;
}

static void vadd(DiagList *d, DiagLevel level, const char *where, SrcLoc loc,
                 const char *src_line, const char *fmt, va_list ap) {
    char *msg = arena_vprintf(d->arena, fmt, ap);
    if (msg)
        push(d, level, d->file, where, loc, src_line, msg);
}

void diag_add(DiagList *d, DiagLevel level, const char *where, SrcLoc loc, const char *src_line,
              const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vadd(d, level, where, loc, src_line, fmt, ap);
    va_end(ap);
}

void diag_error(DiagList *d, const char *where, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vadd(d, DIAG_ERROR, where, (SrcLoc){0, 0}, NULL, fmt, ap);
    va_end(ap);
}

void diag_note(DiagList *d, const char *where, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vadd(d, DIAG_NOTE, where, (SrcLoc){0, 0}, NULL, fmt, ap);
    va_end(ap);
}

void diag_error_at(DiagList *d, SrcLoc loc, const char *src_line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vadd(d, DIAG_ERROR, NULL, loc, src_line, fmt, ap);
    va_end(ap);
}

bool diag_has_errors(const DiagList *d) {
    return d->errors > 0;
}

void diag_append(DiagList *dst, const DiagList *src) {
    for (const Diag *g = src->head; g; g = g->next) {
        char *msg = arena_strdup(dst->arena, g->msg);
        if (msg)
            push(dst, g->level, g->file, g->where, g->loc, g->src_line, msg);
    }
}

static const char *level_name(DiagLevel l) {
    switch (l) {
    case DIAG_ERROR: return "error";
    case DIAG_WARNING: return "warning";
    case DIAG_NOTE: return "note";
    }
    return "error";
}

/* The source line, then a caret under the column (tabs kept so it lines up). */
static void render_caret(const Diag *g, StrBuf *out) {
    sb_append(out, "  ");
    sb_append(out, g->src_line);
    sb_append(out, "\n  ");
    for (int i = 1; i < g->loc.col && g->src_line[i - 1]; i++)
        sb_putc(out, g->src_line[i - 1] == '\t' ? '\t' : ' ');
    sb_append(out, "^\n");
}

void diag_render(const DiagList *d, StrBuf *out) {
    for (const Diag *g = d->head; g; g = g->next) {
        if (g->file)
            sb_printf(out, "%s:", g->file);
        if (g->loc.line > 0)
            sb_printf(out, "%d:%d:", g->loc.line, g->loc.col);
        if (g->file || g->loc.line > 0)
            sb_putc(out, ' ');
        if (g->where)
            sb_printf(out, "%s: ", g->where);
        sb_printf(out, "%s: %s\n", level_name(g->level), g->msg);
        if (g->src_line && g->loc.line > 0)
            render_caret(g, out);
    }
}
