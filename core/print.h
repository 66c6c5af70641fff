/* The high-level IR as text, and back (parse.c).
 *
 *   func @main(%input: f32<1x1x8x8>) -> (output: f32<1x10>) {
 *     %w = constant f32<8x1x3x3> opaque<"9f3a1c2e5b7d0e11">
 *     %b = constant f32<8> splat<0>
 *     %2 = conv(%input, %w, %b) {kernel=[3,3] pads=[1,1,1,1]} : f32<1x8x8x8> loc("Conv_0")
 *     %3:2 = split(%2) {axis=1 split=[4,4]} : (f32<1x4x8x8>, f32<1x4x8x8>)
 *     return %3#0
 *   }
 *
 * Values print as %label when the node has one, else %id; results of a
 * multi-result node as %id#k. Constants print their data inline when small
 * (dense<[...]>), as splat<v> when all equal, else as a content hash
 * (opaque<"...">) whose data is not in the text. Attributes print in the
 * order of nodes.def; floats in the shortest form that reads back exactly. */
#ifndef GLOWC_CORE_PRINT_H
#define GLOWC_CORE_PRINT_H

#include "core/graph.h"
#include "core/strbuf.h"

typedef struct PrintOptions {
    int dense_limit; /* constants with at most this many elements print inline */
    bool no_loc;     /* leave out loc("...") */
} PrintOptions;

#define PRINT_DEFAULTS ((PrintOptions){.dense_limit = 16})

void print_function(const Function *f, const PrintOptions *opt, StrBuf *out);
void print_module(const Module *m, const PrintOptions *opt, StrBuf *out);
/* One node's line (without indentation or newline). */
void print_node(const Node *n, const PrintOptions *opt, StrBuf *out);
/* "%12", "%w", "%7#1". */
void print_value_ref(const Value *v, StrBuf *out);
void print_type(const Type *t, StrBuf *out);
/* Shortest decimal text that reads back as the same f32 / f64. */
void print_f32(float v, StrBuf *out);
void print_f64(double v, StrBuf *out);
/* One element of a tensor in its kind's text form. */
void print_elem(const Tensor *t, int64_t i, StrBuf *out);
/* Does s need quotes to be a label or name? */
bool print_needs_quotes(const char *s);
/* s bare when it can be, quoted otherwise. */
void print_name(const char *s, StrBuf *out);
/* dense<[...]>, splat<v> or opaque<"hash">, as the constant's line shows it. */
void print_tensor_data(const Tensor *t, const PrintOptions *opt, StrBuf *out);
/* " {k=v ...}" in the order of `order` (AK_NONE-terminated); nothing if empty. */
void print_attr_list(const Attr *attrs, int nattrs, const AttrKey *order, StrBuf *out);

#endif
