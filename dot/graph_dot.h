/* Both IRs as Graphviz graphs: DOT built with libcgraph, rendered to SVG or
 * PNG with gvc's dot layout.
 *
 * The graph level draws one node per compute node (op kind, name, result
 * type), small grey boxes for constants, distinct shapes for the inputs and
 * the outputs, and edges labelled with the tensor type. The low-level IR
 * draws one node per instruction in program order and one per buffer (with
 * its offset and size once allocated), edges marked @in/@out/@inout.
 *
 * Given the previous step's IR, what this step added or changed is
 * highlighted: a graph node whose id is new or whose printed line differs,
 * an instruction whose printed line the previous program does not have. */
#ifndef GLOWC_DOT_GRAPH_DOT_H
#define GLOWC_DOT_GRAPH_DOT_H

#include "core/diag.h"
#include "core/graph.h"
#include "core/lir.h"
#include "core/strbuf.h"

typedef enum { DOT_SOURCE, DOT_SVG, DOT_PNG } DotFormat;

/* A Graphviz context, for rendering. Make one and keep it for the process's
 * work: Graphviz 2.42's pango plugin remembers a font name that freeing a
 * context frees, so a second context would read freed memory. */
typedef struct DotContext DotContext;
DotContext *dot_context_new(void);
void dot_context_free(DotContext *c);

/* The format a file name asks for (.dot, .gv, .svg, .png); false if none. */
bool dot_format_from_path(const char *path, DotFormat *out);

/* The graph of f, highlighting what differs from `prev` (NULL: nothing),
 * with `title` on top (NULL: none). Binary formats land in `out` with their
 * length in out->len; they need a context (DOT_SOURCE takes NULL). */
bool dot_graph(DotContext *c, const Function *f, const Function *prev, const char *title, DotFormat fmt,
               StrBuf *out, DiagList *d);
/* The program p, highlighting what differs from `prev` (NULL: nothing). */
bool dot_lir(DotContext *c, const LirProgram *p, const LirProgram *prev, const char *title, DotFormat fmt,
             StrBuf *out, DiagList *d);

#endif
