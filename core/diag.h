/* Diagnostics: errors accumulate in a list (SQLite style) so one run can report
 * every problem at once; tui/ decides how to show them.
 *
 * Two shapes of location:
 *   text input   file:line:col: error: msg   (followed by the line and a caret)
 *   ONNX input   file: node 'conv_3' (Conv): error: msg */
#ifndef GLOWC_CORE_DIAG_H
#define GLOWC_CORE_DIAG_H

#include <stdbool.h>

#include "core/arena.h"
#include "core/strbuf.h"

typedef enum { DIAG_ERROR, DIAG_WARNING, DIAG_NOTE } DiagLevel;

typedef struct SrcLoc {
    int line, col; /* 1-based; 0 when the node did not come from text */
} SrcLoc;

typedef struct Diag {
    DiagLevel level;
    const char *file;     /* may be NULL */
    const char *where;    /* e.g. "node 'conv_3' (Conv)"; may be NULL */
    SrcLoc loc;
    const char *src_line; /* the text of loc.line, for the caret; may be NULL */
    const char *msg;
    struct Diag *next;
} Diag;

typedef struct DiagList {
    Arena *arena; /* owned */
    Diag *head, *tail;
    int errors, warnings;
    const char *file; /* default file name for new diagnostics */
} DiagList;

void diag_init(DiagList *d, const char *file);
void diag_free(DiagList *d);
void diag_clear(DiagList *d);

void diag_add(DiagList *d, DiagLevel level, const char *where, SrcLoc loc, const char *src_line,
              const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* The common cases. */
void diag_error(DiagList *d, const char *where, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void diag_note(DiagList *d, const char *where, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void diag_error_at(DiagList *d, SrcLoc loc, const char *src_line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

bool diag_has_errors(const DiagList *d);
/* Moves every diagnostic of src to the end of dst. */
void diag_append(DiagList *dst, const DiagList *src);
/* Renders all diagnostics, one per line (plus source line and caret). */
void diag_render(const DiagList *d, StrBuf *out);

#endif
