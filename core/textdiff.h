/* Line diff (Myers' O(ND) algorithm): how a step's text differs from the
 * previous one, as counts or as a unified diff. */
#ifndef GLOWC_CORE_TEXTDIFF_H
#define GLOWC_CORE_TEXTDIFF_H

#include "core/strbuf.h"

typedef struct DiffCounts {
    int added, removed;
} DiffCounts;

DiffCounts textdiff_count(const char *a, const char *b);
/* Unified diff with `context` lines around each change; empty when equal. */
void textdiff_unified(const char *a, const char *b, const char *name_a, const char *name_b,
                      int context, StrBuf *out);

#endif
