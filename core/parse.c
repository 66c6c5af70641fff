/* Recursive-descent parser for the high-level text IR (grammar in
 * print.h), over the shared lexical layer of reader.h. */
#include "core/parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/infer.h"
#include "core/reader.h"

typedef struct Sym {
    const char *label; /* NULL for numeric ids */
    int id;
    Node *node;
} Sym;

/* The function being read and its names: a region's body has its own, so
 * the outer scope is set aside as one value while a body is read. */
typedef struct Scope {
    Function *f;
    Sym *syms;
    int nsyms, syms_cap;
    int *index; /* open addressing over syms: position + 1, 0 when empty */
    size_t index_cap;
} Scope;

typedef struct Parser {
    Reader r;
    Module *m;
    Scope sc;
    uint64_t max_memory; /* no value may need more (0: no limit) */
    int depth;           /* regions open around the current function */
    jmp_buf oom;
} Parser;

/* Deeper nesting is refused rather than recursed into (hostile input). */
enum { MAX_REGION_DEPTH = 64 };

static bool kind_allows(AttrKey key, void *ctx) {
    return node_kind_has_attr(((const Node *)ctx)->kind, key);
}

/* ---- symbols ---------------------------------------------------------------- */

/* The index slot of label (name, id): where it is, or the empty slot where
 * it would go. A hashed index keeps files with many values linear. */
static int *sym_slot(Parser *ps, const char *name, int id) {
    size_t mask = ps->sc.index_cap - 1, i = rd_label_hash(name, id) & mask;
    for (;; i = (i + 1) & mask) {
        int k = ps->sc.index[i];
        if (!k)
            return &ps->sc.index[i];
        const Sym *s = &ps->sc.syms[k - 1];
        if (name ? (s->label && !strcmp(s->label, name)) : (!s->label && s->id == id))
            return &ps->sc.index[i];
    }
}

static Sym *find_sym(Parser *ps, const RdLabel *l) {
    if (!ps->sc.index_cap)
        return NULL;
    int k = *sym_slot(ps, l->name, l->id);
    return k ? &ps->sc.syms[k - 1] : NULL;
}

static void define_sym(Parser *ps, const RdLabel *l, Node *n) {
    if (find_sym(ps, l))
        rd_error(&ps->r, l->at, "value redefined");
    if (ps->sc.nsyms == ps->sc.syms_cap) {
        int cap = ps->sc.syms_cap ? ps->sc.syms_cap * 2 : 64;
        ps->sc.syms = arena_grow(ps->m->arena, ps->sc.syms, (size_t)ps->sc.nsyms, (size_t)cap, sizeof(Sym));
        ps->sc.syms_cap = cap;
    }
    ps->sc.syms[ps->sc.nsyms++] = (Sym){l->name, l->id, n};
    if ((size_t)ps->sc.nsyms * 2 > ps->sc.index_cap) { /* rebuild, twice as large */
        ps->sc.index_cap = ps->sc.index_cap ? ps->sc.index_cap * 2 : 128;
        ps->sc.index = arena_alloc_array(ps->m->arena, ps->sc.index_cap, sizeof(int));
        for (int i = 0; i < ps->sc.nsyms; i++)
            *sym_slot(ps, ps->sc.syms[i].label, ps->sc.syms[i].id) = i + 1;
    } else {
        *sym_slot(ps, l->name, l->id) = ps->sc.nsyms;
    }
}

/* Numeric labels are node ids; named ones get ids after every numeric one
 * (assign_ids), so that printing keeps both. */
static void name_node(Parser *ps, Node *n, const RdLabel *l) {
    if (l->name) {
        n->label = l->name;
        n->id = -1;
    } else {
        n->id = l->id;
    }
    define_sym(ps, l, n);
}

static Value *parse_ref(Parser *ps) {
    RdLabel l = rd_label(&ps->r);
    Sym *s = find_sym(ps, &l);
    if (!s)
        rd_error(&ps->r, l.at, "use of undefined value");
    int index = 0;
    if (ps->r.p < ps->r.end && *ps->r.p == '#') {
        ps->r.p++;
        index = (int)rd_int(&ps->r, "after '#'");
    }
    if (index < 0 || index >= s->node->nres)
        rd_error(&ps->r, l.at, "value has %d result%s; #%d does not exist", s->node->nres,
                 s->node->nres == 1 ? "" : "s", index);
    return &s->node->res[index];
}

/* ---- statements ------------------------------------------------------------- */

static void parse_result_types(Parser *ps, Node *n, const char *at) {
    rd_expect(&ps->r, ':', "before the result type");
    bool paren = rd_accept(&ps->r, '(');
    int count = 0;
    do {
        Type t = rd_type(&ps->r);
        if (count < n->nres)
            n->res[count].type = t;
        count++;
        rd_skip_ws(&ps->r);
    } while (paren && rd_accept(&ps->r, ','));
    if (paren)
        rd_expect(&ps->r, ')', "to end the result types");
    if (count != n->nres)
        rd_error(&ps->r, at, "%d result types for %d results", count, n->nres);
}

/* A node's declared result types must be what the shape rules give; the
 * first node that disagrees ends the parse, pointing at its operation. */
static void check_node(Parser *ps, Node *n, const char *at) {
    Type declared[64];
    int k = n->nres < 64 ? n->nres : 64;
    for (int i = 0; i < k; i++)
        declared[i] = n->res[i].type;
    DiagList scratch;
    diag_init(&scratch, NULL);
    bool ok = infer_node(n, &scratch);
    char msg[600];
    snprintf(msg, sizeof msg, "%s", ok || !scratch.head ? "" : scratch.head->msg);
    diag_free(&scratch);
    if (!ok)
        rd_error(&ps->r, at, "%s", msg);
    for (int i = 0; ps->max_memory && i < n->nres; i++) {
        uint64_t bytes = type_bytes(&n->res[i].type);
        if (bytes > ps->max_memory)
            rd_error(&ps->r, at, "result %d needs %llu bytes, more than the memory budget of %llu "
                     "bytes", i, (unsigned long long)bytes, (unsigned long long)ps->max_memory);
    }
    for (int i = 0; i < k; i++) {
        if (!type_equal(&declared[i], &n->res[i].type)) {
            char a[TYPE_STR_MAX], b[TYPE_STR_MAX];
            rd_error(&ps->r, at, "%s: result %d declared %s but the operands give %s",
                     node_kind_name(n->kind), i, type_str(&declared[i], a),
                     type_str(&n->res[i].type, b));
        }
    }
}

static Function *parse_function(Parser *ps);

/* A region's bodies, after its line: "{ func @then(...) ... func @else(...) ... }".
 * Each body has its own names (it sees only its parameters), so the outer
 * function's symbols are set aside while it is read. */
static void parse_bodies(Parser *ps, Node *n) {
    rd_skip_ws(&ps->r);
    if (++ps->depth > MAX_REGION_DEPTH)
        rd_error(&ps->r, ps->r.p, "regions nested more than %d deep", MAX_REGION_DEPTH);
    rd_expect(&ps->r, '{', "to open the bodies");
    Scope outer = ps->sc;
    for (int i = 0; i < n->nbodies; i++) {
        rd_skip_ws(&ps->r);
        const char *bat = ps->r.p;
        ps->sc = (Scope){0};
        Function *b = parse_function(ps);
        const char *want = node_kind_body_name(n->kind, i);
        if (strcmp(b->name, want))
            rd_error(&ps->r, bat, "%s: body %d must be @%s, not @%s", node_kind_name(n->kind), i,
                     want, b->name);
        b->owner = n;
        n->bodies[i] = b;
    }
    ps->sc = outer;
    rd_skip_ws(&ps->r);
    if (!rd_accept(&ps->r, '}'))
        rd_error(&ps->r, ps->r.p, "%s takes %d bod%s; expected '}' after them",
                 node_kind_name(n->kind), n->nbodies, n->nbodies == 1 ? "y" : "ies");
    ps->depth--;
}

static void parse_statement(Parser *ps) {
    RdLabel l = rd_label(&ps->r);
    int nres = 1;
    if (ps->r.p < ps->r.end && *ps->r.p == ':') {
        ps->r.p++;
        const char *at = ps->r.p;
        int64_t v = rd_int(&ps->r, "result count");
        if (v < 1 || v > 1024)
            rd_error(&ps->r, at, "bad result count");
        nres = (int)v;
    }
    rd_expect(&ps->r, '=', "after the value name");
    rd_skip_ws(&ps->r);
    const char *kat = ps->r.p;
    size_t klen = rd_peek_ident(&ps->r);
    NodeKind kind;
    if (!klen || !node_kind_from_name(ps->r.p, klen, &kind) || kind == NK_PLACEHOLDER)
        rd_error(&ps->r, kat, "unknown operation '%.*s'", (int)(klen ? klen : 1), ps->r.p);
    ps->r.p += klen;
    SrcLoc loc = rd_loc(&ps->r, kat);
    if (kind == NK_CONSTANT) {
        if (nres != 1)
            rd_error(&ps->r, l.at, "a constant has one result");
        Type t = rd_type(&ps->r);
        Tensor *x = rd_constant_data(&ps->r, &t);
        Node *n = graph_add_constant(ps->sc.f, "", x);
        n->loc = loc;
        const char *name = rd_loc_name(&ps->r);
        n->name = name ? name : l.name ? l.name : "";
        name_node(ps, n, &l);
        return;
    }
    Value *ops[256];
    int nops = 0;
    rd_expect(&ps->r, '(', "before the operands");
    if (!rd_peek(&ps->r, ')')) {
        do {
            rd_skip_ws(&ps->r);
            if (nops == 256)
                rd_error(&ps->r, ps->r.p, "too many operands");
            ops[nops++] = parse_ref(ps);
        } while (rd_accept(&ps->r, ','));
    }
    rd_expect(&ps->r, ')', "after the operands");
    Node *n = graph_add_node(ps->sc.f, kind, nops, ops, nres);
    n->loc = loc;
    rd_attrs(&ps->r, n, kind_allows, n, node_kind_name(n->kind));
    parse_result_types(ps, n, kat);
    const char *name = rd_loc_name(&ps->r);
    n->name = name ? name : "";
    if (n->nbodies)
        parse_bodies(ps, n);
    name_node(ps, n, &l);
    check_node(ps, n, kat);
}

static void parse_params(Parser *ps) {
    rd_expect(&ps->r, '(', "before the parameters");
    if (rd_accept(&ps->r, ')'))
        return;
    do {
        RdLabel l = rd_label(&ps->r);
        rd_expect(&ps->r, ':', "after the parameter name");
        Type t = rd_type(&ps->r);
        if (ps->max_memory && type_bytes(&t) > ps->max_memory)
            rd_error(&ps->r, l.at, "parameter needs %llu bytes, more than the memory budget of %llu "
                     "bytes", (unsigned long long)type_bytes(&t), (unsigned long long)ps->max_memory);
        Node *n = graph_add_param(ps->sc.f, l.name ? l.name : "", &t);
        n->loc = rd_loc(&ps->r, l.at);
        if (!l.name)
            n->name = arena_printf(ps->m->arena, "%d", l.id);
        name_node(ps, n, &l);
    } while (rd_accept(&ps->r, ','));
    rd_expect(&ps->r, ')', "after the parameters");
}

typedef struct OutDecl {
    const char *name;
    Type type;
    const char *at;
} OutDecl;

static int parse_output_decls(Parser *ps, OutDecl *outs, int max) {
    rd_expect(&ps->r, '(', "before the result list");
    int n = 0;
    if (rd_accept(&ps->r, ')'))
        return 0;
    do {
        rd_skip_ws(&ps->r);
        if (n == max)
            rd_error(&ps->r, ps->r.p, "too many results");
        outs[n].at = ps->r.p;
        if (*ps->r.p == '"') {
            outs[n].name = rd_string(&ps->r);
        } else {
            size_t len = rd_peek_ident(&ps->r);
            if (!len)
                rd_error(&ps->r, ps->r.p, "expected a result name");
            outs[n].name = arena_strndup(ps->m->arena, ps->r.p, len);
            ps->r.p += len;
        }
        rd_expect(&ps->r, ':', "after the result name");
        outs[n].type = rd_type(&ps->r);
        n++;
    } while (rd_accept(&ps->r, ','));
    rd_expect(&ps->r, ')', "after the result list");
    return n;
}

static void parse_return(Parser *ps, OutDecl *outs, int nouts) {
    const char *at = ps->r.p;
    Value *vals[256];
    const char *names[256];
    int n = 0;
    rd_skip_ws(&ps->r);
    if (rd_peek(&ps->r, '%')) {
        do {
            if (n == 256)
                rd_error(&ps->r, ps->r.p, "too many returned values");
            rd_skip_ws(&ps->r);
            const char *vat = ps->r.p;
            vals[n] = parse_ref(ps);
            if (n < nouts && !type_equal(&vals[n]->type, &outs[n].type)) {
                char a[TYPE_STR_MAX], b[TYPE_STR_MAX];
                rd_error(&ps->r, vat, "returns %s where the signature says %s",
                         type_str(&vals[n]->type, a), type_str(&outs[n].type, b));
            }
            names[n] = n < nouts ? outs[n].name : "";
            n++;
        } while (rd_accept(&ps->r, ','));
    }
    if (n != nouts)
        rd_error(&ps->r, at, "returns %d values, the signature declares %d", n, nouts);
    graph_set_outputs(ps->sc.f, n, vals, names);
}

/* Named values get ids after the largest numeric one, in order of appearance. */
static void assign_ids(Parser *ps) {
    int next = 0;
    for (int i = 0; i < ps->sc.nsyms; i++)
        if (!ps->sc.syms[i].label && ps->sc.syms[i].id >= next)
            next = ps->sc.syms[i].id + 1;
    for (int i = 0; i < ps->sc.nsyms; i++)
        if (ps->sc.syms[i].label)
            ps->sc.syms[i].node->id = next++;
    ps->sc.f->next_id = next;
}

static Function *parse_function(Parser *ps) {
    rd_expect_keyword(&ps->r, "func");
    rd_expect(&ps->r, '@', "before the function name");
    size_t n = rd_peek_ident(&ps->r);
    if (!n)
        rd_error(&ps->r, ps->r.p, "expected a function name");
    ps->sc.f = function_new(ps->m, arena_strndup(ps->m->arena, ps->r.p, n));
    ps->r.p += n;
    parse_params(ps);
    rd_skip_ws(&ps->r);
    if (ps->r.end - ps->r.p < 2 || ps->r.p[0] != '-' || ps->r.p[1] != '>')
        rd_error(&ps->r, ps->r.p, "expected '->' before the result list");
    ps->r.p += 2;
    OutDecl outs[256];
    int nouts = parse_output_decls(ps, outs, 256);
    rd_expect(&ps->r, '{', "to open the function body");
    for (;;) {
        if (rd_keyword(&ps->r, "return"))
            break;
        rd_skip_ws(&ps->r);
        if (ps->r.p >= ps->r.end)
            rd_error(&ps->r, ps->r.p, "expected 'return' before the end of the function");
        parse_statement(ps);
    }
    parse_return(ps, outs, nouts);
    rd_expect(&ps->r, '}', "to close the function body");
    assign_ids(ps);
    return ps->sc.f;
}

Module *parse_module(const char *text, size_t len, const char *filename, DiagList *d) {
    return parse_module_limited(text, len, filename, 0, d);
}

Module *parse_module_limited(const char *text, size_t len, const char *filename,
                             uint64_t max_memory, DiagList *d) {
    if (rd_is_binary(text, len, filename, d))
        return NULL;
    Parser ps = {0};
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
    rd_init(&ps.r, ps.m->text, len, max_memory, d, ps.m->arena);
    ps.max_memory = max_memory;
    arena_set_oom_handler(ps.m->arena, &ps.oom);
    if (setjmp(ps.oom)) {
        diag_error(d, NULL, "out of memory while parsing");
        module_destroy(ps.m);
        return NULL;
    }
    if (setjmp(ps.r.fail)) {
        module_destroy(ps.m);
        return NULL;
    }
    parse_function(&ps);
    rd_skip_ws(&ps.r);
    if (ps.r.p < ps.r.end)
        rd_error(&ps.r, ps.r.p, "expected end of file after the function");
    arena_set_oom_handler(ps.m->arena, NULL);
    return ps.m;
}
