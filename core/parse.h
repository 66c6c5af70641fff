/* Reader for the high-level text IR (the grammar is in print.h).
 *
 * The first syntax error stops the parse with file:line:col and a caret; then
 * every node's types are checked with the shape rules, so a file that parses
 * is a verified graph. Returns NULL on any error. */
#ifndef GLOWC_CORE_PARSE_H
#define GLOWC_CORE_PARSE_H

#include "core/diag.h"
#include "core/graph.h"

Module *parse_module(const char *text, size_t len, const char *filename, DiagList *d);
/* Same, refusing constant data beyond max_memory bytes in all (0: no
 * limit), so that a short file cannot ask for terabytes with splat<>. */
Module *parse_module_limited(const char *text, size_t len, const char *filename,
                             uint64_t max_memory, DiagList *d);

#endif
