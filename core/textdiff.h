/* Line diff: how a step's text differs from another's, as counts or as a
 * unified diff. The diff is always minimal (Myers' O(ND) algorithm in linear
 * space, never giving up), so its counts are those of GNU diff; and the part
 * of a changed line that changed, for highlighting. */
#ifndef GLOWC_CORE_TEXTDIFF_H
#define GLOWC_CORE_TEXTDIFF_H

#include <stddef.h>

#include "core/strbuf.h"

typedef struct DiffCounts {
    int added, removed;
} DiffCounts;

DiffCounts textdiff_count(const char *a, const char *b);
/* Unified diff with `context` lines around each change; empty when equal.
 * In a hunk, a change's removed lines come before its added ones. */
void textdiff_unified(const char *a, const char *b, const char *name_a, const char *name_b,
                      int context, StrBuf *out);

/* The changed part of a removed line `a` paired with an added line `b`:
 * bytes [start, end) of each, what is left between their common prefix and
 * common suffix (an empty span when one line only inserts into the other). */
typedef struct TextSpan {
    size_t start, end;
} TextSpan;
void textdiff_changed_span(const char *a, size_t alen, const char *b, size_t blen, TextSpan *sa,
                           TextSpan *sb);

#endif
