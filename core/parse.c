/* Recursive-descent reader for the high-level text IR, character by
 * character so that every error can point at its column. */
#include "core/parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/infer.h"
#include "core/print.h"

typedef struct Sym {
    const char *label; /* NULL for numeric ids */
    int id;
    Node *node;
} Sym;

typedef struct Parser {
    const char *text, *p, *end;
    int line;
    const char *line_start;
    DiagList *d;
    Module *m;
    Function *f;
    Sym *syms;
    int nsyms, syms_cap;
    jmp_buf fail; /* one syntax error ends the parse */
    jmp_buf oom;
} Parser;

/* ---- errors -------------------------------------------------------------- */

/* Line and column of `at`: on the current line in the common case, else found
 * by counting from the start (only on the error path). */
static SrcLoc loc_here(const Parser *ps, const char *at) {
    if (at >= ps->line_start)
        return (SrcLoc){ps->line, (int)(at - ps->line_start) + 1};
    int line = 1;
    const char *ls = ps->text;
    for (const char *q = ps->text; q < at; q++) {
        if (*q == '\n') {
            line++;
            ls = q + 1;
        }
    }
    return (SrcLoc){line, (int)(at - ls) + 1};
}

static char *line_text(Parser *ps, const char *at) {
    const char *ls = at;
    while (ls > ps->text && ls[-1] != '\n')
        ls--;
    const char *le = at;
    while (le < ps->end && *le != '\n')
        le++;
    return arena_strndup(ps->m->arena, ls, (size_t)(le - ls));
}

__attribute__((noreturn, format(printf, 3, 4))) static void error_at(Parser *ps, const char *at,
                                                                     const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_add(ps->d, DIAG_ERROR, NULL, loc_here(ps, at), line_text(ps, at), "%s", msg);
    longjmp(ps->fail, 1);
}

/* ---- lexical helpers ------------------------------------------------------ */

static void skip_ws(Parser *ps) {
    while (ps->p < ps->end) {
        char c = *ps->p;
        if (c == '\n') {
            ps->p++;
            ps->line++;
            ps->line_start = ps->p;
        } else if (c == ' ' || c == '\t' || c == '\r') {
            ps->p++;
        } else if (c == '/' && ps->p + 1 < ps->end && ps->p[1] == '/') {
            while (ps->p < ps->end && *ps->p != '\n')
                ps->p++;
        } else {
            break;
        }
    }
}

static bool peek_char(Parser *ps, char c) {
    skip_ws(ps);
    return ps->p < ps->end && *ps->p == c;
}

static bool accept_char(Parser *ps, char c) {
    if (!peek_char(ps, c))
        return false;
    ps->p++;
    return true;
}

static void expect_char(Parser *ps, char c, const char *what) {
    if (accept_char(ps, c))
        return;
    if (ps->p >= ps->end)
        error_at(ps, ps->p, "expected '%c' %s, found the end of the file", c, what);
    error_at(ps, ps->p, "expected '%c' %s", c, what);
}

static bool is_ident_start(char c) {
    return isalpha((unsigned char)c) || c == '_';
}

static bool is_ident_char(char c) {
    return isalnum((unsigned char)c) || c == '_' || c == '.';
}

/* An identifier at the cursor (after whitespace); its length, 0 if none. */
static size_t peek_ident(Parser *ps) {
    skip_ws(ps);
    const char *q = ps->p;
    if (q >= ps->end || !is_ident_start(*q))
        return 0;
    while (q < ps->end && is_ident_char(*q))
        q++;
    return (size_t)(q - ps->p);
}

static bool accept_keyword(Parser *ps, const char *kw) {
    size_t n = peek_ident(ps);
    if (n != strlen(kw) || memcmp(ps->p, kw, n))
        return false;
    ps->p += n;
    return true;
}

static void expect_keyword(Parser *ps, const char *kw) {
    if (!accept_keyword(ps, kw))
        error_at(ps, ps->p, "expected '%s'", kw);
}

/* A double-quoted string with C escapes. */
static char *parse_string(Parser *ps) {
    skip_ws(ps);
    const char *start = ps->p;
    if (ps->p >= ps->end || *ps->p != '"')
        error_at(ps, ps->p, "expected a string");
    ps->p++;
    StrBuf sb;
    sb_init(&sb);
    while (ps->p < ps->end && *ps->p != '"') {
        char c = *ps->p++;
        if (c == '\n') {
            sb_free(&sb);
            error_at(ps, start, "unterminated string");
        }
        if (c == '\\' && ps->p < ps->end) {
            char e = *ps->p++;
            if (e == 'n')
                c = '\n';
            else if (e == 't')
                c = '\t';
            else if (e == 'x' && ps->end - ps->p >= 2 && isxdigit((unsigned char)ps->p[0]) &&
                     isxdigit((unsigned char)ps->p[1])) {
                char hex[3] = {ps->p[0], ps->p[1], 0};
                c = (char)strtol(hex, NULL, 16);
                ps->p += 2;
            } else
                c = e;
        }
        if (c == 0) {
            sb_free(&sb);
            error_at(ps, start, "NUL character in string");
        }
        sb_putc(&sb, c);
    }
    if (ps->p >= ps->end) {
        sb_free(&sb);
        error_at(ps, start, "unterminated string");
    }
    ps->p++;
    char *s = arena_strdup(ps->m->arena, sb_str(&sb));
    sb_free(&sb);
    return s;
}

static int64_t parse_int(Parser *ps, const char *what) {
    skip_ws(ps);
    const char *start = ps->p;
    char buf[32];
    size_t n = 0;
    if (ps->p < ps->end && (*ps->p == '-' || *ps->p == '+'))
        buf[n++] = *ps->p++;
    while (ps->p < ps->end && isdigit((unsigned char)*ps->p) && n < sizeof buf - 1)
        buf[n++] = *ps->p++;
    buf[n] = 0;
    if (n == 0 || !isdigit((unsigned char)buf[n - 1]))
        error_at(ps, start, "expected an integer %s", what);
    if (ps->p < ps->end && isdigit((unsigned char)*ps->p))
        error_at(ps, start, "integer too long");
    errno = 0;
    long long v = strtoll(buf, NULL, 10);
    if (errno == ERANGE)
        error_at(ps, start, "integer out of range");
    return v;
}

/* A number in any of the printer's forms: integer, decimal, nan, inf. */
static double parse_number(Parser *ps, bool *is_int, const char *what) {
    skip_ws(ps);
    const char *start = ps->p;
    char buf[64];
    size_t n = 0;
    while (ps->p < ps->end && n < sizeof buf - 1 &&
           (isalnum((unsigned char)*ps->p) || strchr("+-.", *ps->p)))
        buf[n++] = *ps->p++;
    buf[n] = 0;
    const char *s = buf + (buf[0] == '-' || buf[0] == '+');
    if (!strcmp(s, "nan") || !strcmp(s, "inf")) {
        *is_int = false;
        double v = !strcmp(s, "nan") ? NAN : INFINITY;
        return buf[0] == '-' ? -v : v;
    }
    char *endp;
    double v = strtod(buf, &endp);
    if (n == 0 || *endp || !(isdigit((unsigned char)*s) || *s == '.'))
        error_at(ps, start, "expected a number %s", what);
    *is_int = !strpbrk(buf, ".eE");
    return v;
}

/* ---- types ---------------------------------------------------------------- */

static ElemKind parse_elem(Parser *ps) {
    size_t n = peek_ident(ps);
    ElemKind k;
    if (!n || !elem_from_name(ps->p, n, &k))
        error_at(ps, ps->p, "expected an element kind (f32, i64, ...)");
    ps->p += n;
    return k;
}

static Type parse_type(Parser *ps) {
    Type t = {.elem = parse_elem(ps)};
    if (ps->p >= ps->end || *ps->p != '<')
        error_at(ps, ps->p, "expected '<' after element kind");
    ps->p++;
    if (ps->p < ps->end && *ps->p == '>') {
        ps->p++;
        return t;
    }
    for (;;) {
        const char *at = ps->p;
        if (ps->p >= ps->end || !isdigit((unsigned char)*ps->p))
            error_at(ps, at, "expected a dimension");
        int64_t v = 0;
        while (ps->p < ps->end && isdigit((unsigned char)*ps->p)) {
            if (v > (INT64_MAX - 9) / 10)
                error_at(ps, at, "dimension too large");
            v = v * 10 + (*ps->p++ - '0');
        }
        if (t.rank == MAX_RANK)
            error_at(ps, at, "more than %d dimensions", MAX_RANK);
        t.dims[t.rank++] = v;
        if (ps->p < ps->end && *ps->p == 'x') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == '>') {
            ps->p++;
            break;
        }
        error_at(ps, ps->p, "expected 'x' or '>' in type");
    }
    int64_t numel;
    if (!type_numel_checked(&t, &numel))
        error_at(ps, ps->p - 1, "type has too many elements");
    return t;
}

/* ---- symbols -------------------------------------------------------------- */

typedef struct Label {
    const char *name; /* NULL: numeric */
    int id;
    const char *at;
} Label;

static Label parse_label(Parser *ps) {
    skip_ws(ps);
    Label l = {.at = ps->p};
    if (ps->p >= ps->end || *ps->p != '%')
        error_at(ps, ps->p, "expected a value (%%name or %%number)");
    ps->p++;
    if (ps->p < ps->end && isdigit((unsigned char)*ps->p)) {
        int64_t v = 0;
        while (ps->p < ps->end && isdigit((unsigned char)*ps->p)) {
            v = v * 10 + (*ps->p++ - '0');
            if (v > 100000000)
                error_at(ps, l.at, "value number too large");
        }
        l.id = (int)v;
        return l;
    }
    if (ps->p < ps->end && *ps->p == '"') {
        l.name = parse_string(ps);
        return l;
    }
    size_t n = 0;
    while (ps->p + n < ps->end && is_ident_char(ps->p[n]))
        n++;
    if (!n || !is_ident_start(ps->p[0]))
        error_at(ps, ps->p, "expected a name or number after '%%'");
    l.name = arena_strndup(ps->m->arena, ps->p, n);
    ps->p += n;
    return l;
}

static Sym *find_sym(Parser *ps, const Label *l) {
    for (int i = 0; i < ps->nsyms; i++) {
        Sym *s = &ps->syms[i];
        if (l->name ? (s->label && !strcmp(s->label, l->name)) : (!s->label && s->id == l->id))
            return s;
    }
    return NULL;
}

static void define_sym(Parser *ps, const Label *l, Node *n) {
    if (find_sym(ps, l))
        error_at(ps, l->at, "value redefined");
    if (ps->nsyms == ps->syms_cap) {
        int cap = ps->syms_cap ? ps->syms_cap * 2 : 64;
        ps->syms = arena_grow(ps->m->arena, ps->syms, (size_t)ps->nsyms, (size_t)cap, sizeof(Sym));
        ps->syms_cap = cap;
    }
    ps->syms[ps->nsyms++] = (Sym){l->name, l->id, n};
}

/* Numeric labels are node ids; named ones get ids after every numeric one
 * (assign_ids), so that printing keeps both. */
static void name_node(Parser *ps, Node *n, const Label *l) {
    if (l->name) {
        n->label = l->name;
        n->id = -1;
    } else {
        n->id = l->id;
    }
    define_sym(ps, l, n);
}

static Value *parse_ref(Parser *ps) {
    Label l = parse_label(ps);
    Sym *s = find_sym(ps, &l);
    if (!s)
        error_at(ps, l.at, "use of undefined value");
    int index = 0;
    if (ps->p < ps->end && *ps->p == '#') {
        ps->p++;
        index = (int)parse_int(ps, "after '#'");
    }
    if (index < 0 || index >= s->node->nres)
        error_at(ps, l.at, "value has %d result%s; #%d does not exist", s->node->nres,
                 s->node->nres == 1 ? "" : "s", index);
    return &s->node->res[index];
}

/* ---- constants ------------------------------------------------------------ */

static void store_number(Parser *ps, Tensor *t, int64_t i, const char *at) {
    ElemKind k = t->type.elem;
    if (k == ELEM_BOOL && (accept_keyword(ps, "true") || accept_keyword(ps, "false"))) {
        tensor_set_i64(t, i, ps->p[-1] == 'e' && ps->p[-2] == 'u');
        return;
    }
    bool is_int;
    skip_ws(ps);
    const char *start = ps->p;
    if (elem_is_int(k) || k == ELEM_BOOL) {
        if (k == ELEM_U64) { /* beyond int64: digits only, no sign */
            uint64_t v = 0;
            if (ps->p >= ps->end || !isdigit((unsigned char)*ps->p))
                error_at(ps, start, "expected an unsigned integer");
            for (; ps->p < ps->end && isdigit((unsigned char)*ps->p); ps->p++) {
                unsigned digit = (unsigned)(*ps->p - '0');
                if (v > (UINT64_MAX - digit) / 10)
                    error_at(ps, start, "integer out of range");
                v = v * 10 + digit;
            }
            ((uint64_t *)t->data)[i] = v;
            return;
        }
        int64_t v = parse_int(ps, "element");
        tensor_set_i64(t, i, v);
        int64_t back = tensor_get_i64(t, i);
        if (back != v)
            error_at(ps, start, "%lld does not fit in %s", (long long)v, elem_name(k));
        return;
    }
    double v = parse_number(ps, &is_int, "element");
    (void)at;
    tensor_set_f64(t, i, v);
}

/* An opaque constant has no data in the text: only its type is kept, so a
 * dump of a large model reads back without allocating its weights. */
static Tensor *parse_opaque(Parser *ps, const Type *t) {
    Tensor *x = arena_alloc(ps->m->arena, sizeof *x);
    x->type = *t;
    expect_char(ps, '<', "after opaque");
    const char *at = ps->p;
    char *h = parse_string(ps);
    size_t n = strlen(h);
    if (!n || n > 16 || strspn(h, "0123456789abcdefABCDEF") != n)
        error_at(ps, at, "expected a hexadecimal hash");
    x->elided_hash = strtoull(h, NULL, 16);
    expect_char(ps, '>', "to end opaque");
    return x;
}

static Tensor *parse_constant_data(Parser *ps, const Type *t) {
    if (accept_keyword(ps, "opaque"))
        return parse_opaque(ps, t);
    Tensor *x = tensor_new(ps->m->arena, t);
    if (!x)
        error_at(ps, ps->p, "constant too large");
    int64_t numel = tensor_numel(x);
    if (accept_keyword(ps, "splat")) {
        expect_char(ps, '<', "after splat");
        store_number(ps, x, 0, ps->p);
        size_t es = elem_size(t->elem);
        for (int64_t i = 1; i < numel; i++)
            memcpy((char *)x->data + (size_t)i * es, x->data, es);
        expect_char(ps, '>', "to end splat");
    } else if (accept_keyword(ps, "dense")) {
        expect_char(ps, '<', "after dense");
        expect_char(ps, '[', "to start the elements");
        const char *start = ps->p;
        int64_t i = 0;
        if (!peek_char(ps, ']')) {
            do {
                skip_ws(ps); /* point at the element, not the space before it */
                if (i == numel)
                    error_at(ps, ps->p, "more than %lld elements", (long long)numel);
                store_number(ps, x, i++, ps->p);
            } while (accept_char(ps, ','));
        }
        if (i != numel)
            error_at(ps, start, "%lld elements given, type has %lld", (long long)i,
                     (long long)numel);
        expect_char(ps, ']', "to end the elements");
        expect_char(ps, '>', "to end dense");
    } else {
        error_at(ps, ps->p, "expected constant data: dense<[...]>, splat<v> or opaque<\"hash\">");
    }
    return x;
}

/* ---- attributes ----------------------------------------------------------- */

static void parse_attr(Parser *ps, Node *n) {
    skip_ws(ps);
    const char *at = ps->p;
    size_t len = peek_ident(ps);
    AttrKey key;
    if (!len)
        error_at(ps, at, "expected an attribute name");
    if (!attr_key_from_name(ps->p, len, &key) || !node_kind_has_attr(n->kind, key))
        error_at(ps, at, "%s has no attribute '%.*s'", node_kind_name(n->kind), (int)len, ps->p);
    ps->p += len;
    if (node_has_attr(n, key))
        error_at(ps, at, "attribute '%s' given twice", attr_key_name(key));
    expect_char(ps, '=', "after the attribute name");
    skip_ws(ps);
    const char *vat = ps->p;
    switch (attr_key_type(key)) {
    case AT_INT: node_set_int(n, key, parse_int(ps, "attribute value")); break;
    case AT_FLOAT: {
        bool is_int;
        node_set_float(n, key, (float)parse_number(ps, &is_int, "attribute value"));
        break;
    }
    case AT_STR: node_set_str(n, key, parse_string(ps)); break;
    case AT_ELEM: node_set_elem(n, key, parse_elem(ps)); break;
    case AT_INTS:
    case AT_FLOATS: {
        expect_char(ps, '[', "to start a list");
        int64_t iv[64];
        float fv[64];
        int k = 0;
        if (!peek_char(ps, ']')) {
            do {
                skip_ws(ps);
                if (k == 64)
                    error_at(ps, ps->p, "list too long");
                if (attr_key_type(key) == AT_INTS) {
                    iv[k++] = parse_int(ps, "in list");
                } else {
                    bool is_int;
                    fv[k++] = (float)parse_number(ps, &is_int, "in list");
                }
            } while (accept_char(ps, ','));
        }
        expect_char(ps, ']', "to end the list");
        if (attr_key_type(key) == AT_INTS)
            node_set_ints(n, key, k, iv);
        else
            node_set_floats(n, key, k, fv);
        break;
    }
    }
    (void)vat;
}

static void parse_attrs(Parser *ps, Node *n) {
    if (!accept_char(ps, '{'))
        return;
    while (!accept_char(ps, '}')) {
        if (ps->p >= ps->end)
            error_at(ps, ps->p, "expected '}' to end the attributes");
        parse_attr(ps, n);
        accept_char(ps, ',');
    }
}

/* ---- statements ----------------------------------------------------------- */

static const char *parse_loc(Parser *ps) {
    if (!accept_keyword(ps, "loc"))
        return NULL;
    expect_char(ps, '(', "after loc");
    const char *s = parse_string(ps);
    expect_char(ps, ')', "to end loc");
    return s;
}

static void parse_result_types(Parser *ps, Node *n, const char *at) {
    expect_char(ps, ':', "before the result type");
    bool paren = accept_char(ps, '(');
    int count = 0;
    do {
        Type t = parse_type(ps);
        if (count < n->nres)
            n->res[count].type = t;
        count++;
        skip_ws(ps);
    } while (paren && accept_char(ps, ','));
    if (paren)
        expect_char(ps, ')', "to end the result types");
    if (count != n->nres)
        error_at(ps, at, "%d result types for %d results", count, n->nres);
}

static void parse_statement(Parser *ps) {
    Label l = parse_label(ps);
    int nres = 1;
    if (ps->p < ps->end && *ps->p == ':') {
        ps->p++;
        const char *at = ps->p;
        int64_t v = parse_int(ps, "result count");
        if (v < 1 || v > 1024)
            error_at(ps, at, "bad result count");
        nres = (int)v;
    }
    expect_char(ps, '=', "after the value name");
    skip_ws(ps);
    const char *kat = ps->p;
    size_t klen = peek_ident(ps);
    NodeKind kind;
    if (!klen || !node_kind_from_name(ps->p, klen, &kind) || kind == NK_PLACEHOLDER)
        error_at(ps, kat, "unknown operation '%.*s'", (int)(klen ? klen : 1), ps->p);
    ps->p += klen;
    SrcLoc loc = loc_here(ps, kat);
    if (kind == NK_CONSTANT) {
        if (nres != 1)
            error_at(ps, l.at, "a constant has one result");
        Type t = parse_type(ps);
        Tensor *x = parse_constant_data(ps, &t);
        Node *n = graph_add_constant(ps->f, "", x);
        n->loc = loc;
        const char *name = parse_loc(ps);
        n->name = name ? name : l.name ? l.name : "";
        name_node(ps, n, &l);
        return;
    }
    Value *ops[256];
    int nops = 0;
    expect_char(ps, '(', "before the operands");
    if (!peek_char(ps, ')')) {
        do {
            skip_ws(ps);
            if (nops == 256)
                error_at(ps, ps->p, "too many operands");
            ops[nops++] = parse_ref(ps);
        } while (accept_char(ps, ','));
    }
    expect_char(ps, ')', "after the operands");
    Node *n = graph_add_node(ps->f, kind, nops, ops, nres);
    n->loc = loc;
    parse_attrs(ps, n);
    parse_result_types(ps, n, kat);
    const char *name = parse_loc(ps);
    n->name = name ? name : "";
    name_node(ps, n, &l);
}

static void parse_params(Parser *ps) {
    expect_char(ps, '(', "before the parameters");
    if (accept_char(ps, ')'))
        return;
    do {
        Label l = parse_label(ps);
        expect_char(ps, ':', "after the parameter name");
        Type t = parse_type(ps);
        Node *n = graph_add_param(ps->f, l.name ? l.name : "", &t);
        n->loc = loc_here(ps, l.at);
        if (!l.name)
            n->name = arena_printf(ps->m->arena, "%d", l.id);
        name_node(ps, n, &l);
    } while (accept_char(ps, ','));
    expect_char(ps, ')', "after the parameters");
}

typedef struct OutDecl {
    const char *name;
    Type type;
    const char *at;
} OutDecl;

static int parse_output_decls(Parser *ps, OutDecl *outs, int max) {
    expect_char(ps, '(', "before the result list");
    int n = 0;
    if (accept_char(ps, ')'))
        return 0;
    do {
        skip_ws(ps);
        if (n == max)
            error_at(ps, ps->p, "too many results");
        outs[n].at = ps->p;
        if (*ps->p == '"') {
            outs[n].name = parse_string(ps);
        } else {
            size_t len = peek_ident(ps);
            if (!len)
                error_at(ps, ps->p, "expected a result name");
            outs[n].name = arena_strndup(ps->m->arena, ps->p, len);
            ps->p += len;
        }
        expect_char(ps, ':', "after the result name");
        outs[n].type = parse_type(ps);
        n++;
    } while (accept_char(ps, ','));
    expect_char(ps, ')', "after the result list");
    return n;
}

static void parse_return(Parser *ps, OutDecl *outs, int nouts) {
    const char *at = ps->p;
    Value *vals[256];
    const char *names[256];
    int n = 0;
    skip_ws(ps);
    if (peek_char(ps, '%')) {
        do {
            if (n == 256)
                error_at(ps, ps->p, "too many returned values");
            skip_ws(ps);
            const char *vat = ps->p;
            vals[n] = parse_ref(ps);
            if (n < nouts && !type_equal(&vals[n]->type, &outs[n].type)) {
                char a[TYPE_STR_MAX], b[TYPE_STR_MAX];
                error_at(ps, vat, "returns %s where the signature says %s",
                         type_str(&vals[n]->type, a), type_str(&outs[n].type, b));
            }
            names[n] = n < nouts ? outs[n].name : "";
            n++;
        } while (accept_char(ps, ','));
    }
    if (n != nouts)
        error_at(ps, at, "returns %d values, the signature declares %d", n, nouts);
    graph_set_outputs(ps->f, n, vals, names);
}

/* Named values get ids after the largest numeric one, in order of appearance. */
static void assign_ids(Parser *ps) {
    int next = 0;
    for (int i = 0; i < ps->nsyms; i++)
        if (!ps->syms[i].label && ps->syms[i].id >= next)
            next = ps->syms[i].id + 1;
    for (int i = 0; i < ps->nsyms; i++)
        if (ps->syms[i].label)
            ps->syms[i].node->id = next++;
    ps->f->next_id = next;
}

static void parse_function(Parser *ps) {
    expect_keyword(ps, "func");
    expect_char(ps, '@', "before the function name");
    size_t n = peek_ident(ps);
    if (!n)
        error_at(ps, ps->p, "expected a function name");
    ps->f = function_new(ps->m, arena_strndup(ps->m->arena, ps->p, n));
    ps->p += n;
    parse_params(ps);
    skip_ws(ps);
    if (ps->end - ps->p < 2 || ps->p[0] != '-' || ps->p[1] != '>')
        error_at(ps, ps->p, "expected '->' before the result list");
    ps->p += 2;
    OutDecl outs[256];
    int nouts = parse_output_decls(ps, outs, 256);
    expect_char(ps, '{', "to open the function body");
    for (;;) {
        if (accept_keyword(ps, "return"))
            break;
        skip_ws(ps);
        if (ps->p >= ps->end)
            error_at(ps, ps->p, "expected 'return' before the end of the function");
        parse_statement(ps);
    }
    parse_return(ps, outs, nouts);
    expect_char(ps, '}', "to close the function body");
    assign_ids(ps);
}

/* After the syntax: every node's declared types must be what the shape rules
 * say. Reports every mismatching node, not only the first. */
static bool check_types(Parser *ps) {
    bool ok = true;
    for (Node *n = ps->f->first; n; n = n->next) {
        Type declared[256];
        int k = n->nres < 256 ? n->nres : 256;
        for (int i = 0; i < k; i++)
            declared[i] = n->res[i].type;
        if (!infer_node(n, ps->d)) {
            ok = false;
            continue;
        }
        for (int i = 0; i < k; i++) {
            if (!type_equal(&declared[i], &n->res[i].type)) {
                char a[TYPE_STR_MAX], b[TYPE_STR_MAX];
                node_error(ps->d, n, "result %d declared %s but the operands give %s", i,
                           type_str(&declared[i], a), type_str(&n->res[i].type, b));
                n->res[i].type = declared[i];
                ok = false;
            }
        }
    }
    return ok;
}

Module *parse_module(const char *text, size_t len, const char *filename, DiagList *d) {
    Parser ps = {.text = text, .p = text, .end = text + len, .line = 1, .line_start = text, .d = d};
    if (memchr(text, 0, len)) {
        diag_error(d, NULL, "%s: file contains a NUL byte", filename);
        return NULL;
    }
    ps.m = module_new(filename);
    if (!ps.m) {
        diag_error(d, NULL, "out of memory");
        return NULL;
    }
    ps.m->text = arena_strndup(ps.m->arena, text, len);
    if (!ps.m->text) {
        diag_error(d, NULL, "out of memory");
        module_destroy(ps.m);
        return NULL;
    }
    /* Read the NUL-terminated copy: the caller's buffer need not be, and a
     * look at the character under the cursor at the end must stay inside. */
    ps.text = ps.p = ps.line_start = ps.m->text;
    ps.end = ps.text + len;
    arena_set_oom_handler(ps.m->arena, &ps.oom);
    if (setjmp(ps.oom)) {
        diag_error(d, NULL, "out of memory while parsing");
        module_destroy(ps.m);
        return NULL;
    }
    if (setjmp(ps.fail)) {
        module_destroy(ps.m);
        return NULL;
    }
    parse_function(&ps);
    skip_ws(&ps);
    if (ps.p < ps.end)
        error_at(&ps, ps.p, "expected end of file after the function");
    bool ok = check_types(&ps);
    arena_set_oom_handler(ps.m->arena, NULL);
    if (!ok) {
        module_destroy(ps.m);
        return NULL;
    }
    return ps.m;
}
