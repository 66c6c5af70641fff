/* The lexical layer shared by the two text formats (high-level .hl and
 * low-level .lir): whitespace and // comments, identifiers, strings,
 * numbers, types, %labels, attribute lists, constant data and loc(...).
 * It reads character by character so that every error points at its
 * column; the first error longjmps to `fail` after adding one diagnostic
 * with file:line:col, the source line and a caret. */
#ifndef GLOWC_CORE_READER_H
#define GLOWC_CORE_READER_H

#include <setjmp.h>

#include "core/diag.h"
#include "core/graph.h"

typedef struct Reader {
    const char *text, *p, *end;
    int line;
    const char *line_start;
    DiagList *d;
    Arena *arena; /* strings and constant data */
    uint64_t budget; /* bytes constant data may still take (UINT64_MAX: no limit) */
    jmp_buf fail;
} Reader;

typedef struct RdLabel {
    const char *name; /* NULL: numeric */
    int id;
    const char *at;
} RdLabel;

/* Attribute keys an attribute list may hold (with `what` naming the op). */
typedef bool (*RdAttrAllowed)(AttrKey key, void *ctx);

/* text[len] must be a NUL (the parsers read their own copy): the few reads
 * that look one character ahead, and strtoull, stop there. Constant data may
 * take max_memory bytes in all (0: no limit). */
void rd_init(Reader *r, const char *text, size_t len, uint64_t max_memory, DiagList *d,
             Arena *a);
/* Whether text holds a NUL byte, said as the file's one error: a binary
 * file (a model given where text IR is read), not text IR. */
bool rd_is_binary(const char *text, size_t len, const char *filename, DiagList *d);
SrcLoc rd_loc(const Reader *r, const char *at);
__attribute__((noreturn, format(printf, 3, 4))) void rd_error(Reader *r, const char *at,
                                                              const char *fmt, ...);
void rd_skip_ws(Reader *r);
bool rd_peek(Reader *r, char c);
bool rd_accept(Reader *r, char c);
void rd_expect(Reader *r, char c, const char *what);
bool rd_is_ident_start(char c);
bool rd_is_ident_char(char c);
size_t rd_peek_ident(Reader *r);
bool rd_keyword(Reader *r, const char *kw);
void rd_expect_keyword(Reader *r, const char *kw);
char *rd_string(Reader *r);
int64_t rd_int(Reader *r, const char *what);
double rd_number(Reader *r, bool *is_int, const char *what);
ElemKind rd_elem(Reader *r);
Type rd_type(Reader *r);
RdLabel rd_label(Reader *r);
/* For the parsers' symbol indexes: a hash of a label (name, or number when
 * name is NULL). */
uint64_t rd_label_hash(const char *name, int id);
/* dense<[...]>, splat<v> or opaque<"hash"> for a tensor of type t. Data
 * beyond the budget is an error, not an allocation: splat<0> of a huge type
 * is a short text. */
Tensor *rd_constant_data(Reader *r, const Type *t);
/* One `key=value`, or a whole `{...}` list (absent braces: nothing). */
void rd_attr(Reader *r, Node *n, RdAttrAllowed allowed, void *ctx, const char *what);
void rd_attrs(Reader *r, Node *n, RdAttrAllowed allowed, void *ctx, const char *what);
/* An optional loc("name"): the name, or NULL. */
const char *rd_loc_name(Reader *r);

#endif
