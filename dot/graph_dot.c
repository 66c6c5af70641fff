/* DOT of the graph and of the low-level IR (libcgraph), SVG and PNG (gvc). */
#include "dot/graph_dot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include "core/lir_print.h"
#include "core/print.h"

/* dot's time goes into the virtual nodes it threads along every edge that
 * spans several ranks: a DenseNet, whose layers each read every earlier
 * layer of their block, has tens of thousands and takes minutes. Past
 * DOT_BIG drawn nodes a graph is drawn for speed: an edge longer than
 * DOT_LONG ranks ends in a small reference box beside its user instead
 * (naming the value), a constant is drawn once per use, edges are straight
 * and the layout's iterations are bounded. */
enum { DOT_BIG = 300, DOT_LONG = 6 };

typedef struct Style {
    const char *shape, *style, *fill, *border;
    const char *fontsize;
} Style;

static const Style style_compute = {"box", "rounded,filled", "#e3ecfa", "#4a5b70", "10"};
static const Style style_elementwise = {"box", "rounded,filled", "#fdf6d8", "#4a5b70", "10"};
static const Style style_reduce = {"box", "rounded,filled", "#e6f4e1", "#4a5b70", "10"};
static const Style style_constant = {"box", "filled", "#eeeeee", "#9a9a9a", "8"};
static const Style style_input = {"invhouse", "filled", "#cfe3ff", "#2f5d9a", "10"};
static const Style style_output = {"house", "filled", "#d6f0d0", "#2f7a3a", "10"};
static const Style style_memory = {"box", "filled", "#f4f4f4", "#9a9a9a", "8"};
static const Style style_alloc = {"cylinder", "filled", "#fff1cc", "#8a6d1f", "9"};
static const Style style_view = {"cylinder", "dashed,filled", "#fff8e6", "#8a6d1f", "9"};

typedef enum { MARK_NONE, MARK_ADDED, MARK_CHANGED } Mark;

/* ---- cgraph helpers ------------------------------------------------------------ */

typedef struct Dot {
    Agraph_t *g;
    StrBuf text; /* scratch for labels */
    bool big;
    int *rank; /* big graphs: each node's longest path from an input */
} Dot;

/* cgraph takes char *, never writes through it. */
static void set(void *obj, const char *key, const char *value) {
    agsafeset(obj, (char *)key, (char *)value, "");
}

/* Text for a label: a backslash would start a DOT escape (\N, \n). */
static void label_text(StrBuf *out, const char *s) {
    for (; *s; s++) {
        if (*s == '\\')
            sb_append(out, "\\\\");
        else
            sb_putc(out, *s);
    }
}

static void dot_open(Dot *dt, const char *title, int nodes) {
    Agdesc_t desc = Agdirected;
    dt->g = agopen("glowc", desc, NULL);
    dt->big = nodes > DOT_BIG;
    sb_init(&dt->text);
    label_text(&dt->text, title ? title : "");
    agattr(dt->g, AGRAPH, "label", (char *)sb_str(&dt->text));
    sb_clear(&dt->text);
    agattr(dt->g, AGRAPH, "rankdir", "TB");
    agattr(dt->g, AGRAPH, "fontname", "Helvetica");
    agattr(dt->g, AGRAPH, "labelloc", "t");
    agattr(dt->g, AGRAPH, "labeljust", "l");
    agattr(dt->g, AGRAPH, "nodesep", "0.25");
    agattr(dt->g, AGRAPH, "ranksep", "0.35");
    if (dt->big) {
        agattr(dt->g, AGRAPH, "splines", "line");
        agattr(dt->g, AGRAPH, "mclimit", "0.2");
        agattr(dt->g, AGRAPH, "nslimit", "2");
        agattr(dt->g, AGRAPH, "remincross", "false");
    }
    agattr(dt->g, AGNODE, "fontname", "Helvetica");
    agattr(dt->g, AGNODE, "shape", "box");
    agattr(dt->g, AGNODE, "style", "filled");
    agattr(dt->g, AGNODE, "fillcolor", "white");
    agattr(dt->g, AGNODE, "color", "black");
    agattr(dt->g, AGNODE, "fontsize", "10");
    agattr(dt->g, AGNODE, "penwidth", "1");
    agattr(dt->g, AGNODE, "height", "0.3");
    agattr(dt->g, AGNODE, "margin", "0.08,0.03");
    agattr(dt->g, AGEDGE, "fontname", "Helvetica");
    agattr(dt->g, AGEDGE, "fontsize", "8");
    agattr(dt->g, AGEDGE, "fontcolor", "#55606e");
    agattr(dt->g, AGEDGE, "color", "#7a8593");
    agattr(dt->g, AGEDGE, "arrowsize", "0.6");
}

static void dot_close(Dot *dt) {
    agclose(dt->g);
    sb_free(&dt->text);
}

static Agnode_t *add_node(Dot *dt, const char *id, const Style *st, Mark mark) {
    Agnode_t *n = agnode(dt->g, (char *)id, 1);
    set(n, "label", sb_str(&dt->text));
    set(n, "shape", st->shape);
    set(n, "style", st->style);
    set(n, "fillcolor", st->fill);
    set(n, "color", st->border);
    set(n, "fontsize", st->fontsize);
    if (mark != MARK_NONE) {
        set(n, "fillcolor", mark == MARK_ADDED ? "#c7f0c2" : "#ffd6a5");
        set(n, "color", mark == MARK_ADDED ? "#1e7b34" : "#c2410c");
        set(n, "penwidth", "2.5");
    }
    sb_clear(&dt->text);
    return n;
}

/* A big graph's edge labels are external labels, placed after the layout:
 * an ordinary label is a node of its own in the middle of the edge, which
 * doubles the ranks dot has to lay out. */
static Agedge_t *add_edge(Dot *dt, Agnode_t *from, Agnode_t *to, const char *label) {
    Agedge_t *e = agedge(dt->g, from, to, NULL, 1);
    if (label)
        set(e, dt->big ? "xlabel" : "label", label);
    return e;
}

static const Style style_ref = {"box", "dashed,filled", "#ffffff", "#8a94a3", "8"};

/* In a big graph, a node `ranks` away is replaced by a reference box
 * (labelled `ref`) made for this one use. */
static Agnode_t *near(Dot *dt, Agnode_t *node, int ranks, const char *ref, const char *use_id) {
    if (!dt->big || abs(ranks) <= DOT_LONG)
        return node;
    sb_append(&dt->text, "from ");
    label_text(&dt->text, ref);
    return add_node(dt, use_id, &style_ref, MARK_NONE);
}

/* ---- rendering ------------------------------------------------------------------ */

static int silent(char *msg) {
    (void)msg;
    return 0;
}

static bool write_source(Agraph_t *g, StrBuf *out, DiagList *d) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        diag_error(d, NULL, "out of memory writing DOT");
        return false;
    }
    bool ok = agwrite(g, f) == 0;
    fclose(f);
    if (ok)
        sb_append_n(out, buf, len);
    free(buf);
    if (!ok)
        diag_error(d, NULL, "cannot write the graph as DOT");
    return ok;
}

struct DotContext {
    GVC_t *gvc;
};

DotContext *dot_context_new(void) {
    DotContext *c = calloc(1, sizeof *c);
    if (c)
        c->gvc = gvContext();
    return c;
}

void dot_context_free(DotContext *c) {
    if (c && c->gvc)
        gvFreeContext(c->gvc);
    free(c);
}

static bool render(DotContext *c, Agraph_t *g, DotFormat fmt, StrBuf *out, DiagList *d) {
    if (fmt == DOT_SOURCE)
        return write_source(g, out, d);
    if (!c || !c->gvc) {
        diag_error(d, NULL, "graphviz is not available to render the graph");
        return false;
    }
    /* Graphviz reports on stderr, which would tear a terminal UI. */
    agseterrf(silent);
    GVC_t *gvc = c->gvc;
    if (gvLayout(gvc, g, "dot")) {
        diag_error(d, NULL, "graphviz could not lay out the graph");
        return false;
    }
    char *data = NULL;
    unsigned int len = 0;
    bool ok = gvRenderData(gvc, g, fmt == DOT_SVG ? "svg" : "png", &data, &len) == 0;
    if (ok)
        sb_append_n(out, data, len);
    else
        diag_error(d, NULL, "graphviz could not render %s", fmt == DOT_SVG ? "SVG" : "PNG");
    if (data)
        gvFreeRenderData(data);
    gvFreeLayout(gvc, g);
    return ok;
}

bool dot_format_from_path(const char *path, DotFormat *out) {
    const char *dot = strrchr(path, '.');
    if (!dot)
        return false;
    if (!strcmp(dot, ".dot") || !strcmp(dot, ".gv"))
        *out = DOT_SOURCE;
    else if (!strcmp(dot, ".svg"))
        *out = DOT_SVG;
    else if (!strcmp(dot, ".png"))
        *out = DOT_PNG;
    else
        return false;
    return true;
}

/* ---- the graph level ------------------------------------------------------------ */

static const Style *node_style(const Node *n) {
    if (n->kind == NK_CONSTANT)
        return &style_constant;
    if (n->kind == NK_PLACEHOLDER)
        return &style_input;
    if (node_kind_has(n->kind, NF_EW))
        return &style_elementwise;
    if (node_kind_is_reduce(n->kind))
        return &style_reduce;
    return &style_compute;
}

static char *node_line(const Node *n) {
    PrintOptions po = PRINT_DEFAULTS;
    StrBuf sb;
    sb_init(&sb);
    print_node(n, &po, &sb);
    return sb_take(&sb);
}

/* Each node of prev printed, by id. */
typedef struct PrevLines {
    char **line;
    int n;
} PrevLines;

static void prev_lines_add(PrevLines *pl, const Node *n) {
    if (n->id >= 0 && n->id < pl->n)
        pl->line[n->id] = node_line(n);
}

static PrevLines prev_lines_of(const Function *prev) {
    PrevLines pl = {NULL, 0};
    if (!prev)
        return pl;
    pl.n = prev->next_id;
    pl.line = calloc((size_t)pl.n + 1, sizeof *pl.line);
    for (int i = 0; i < prev->nparams; i++)
        prev_lines_add(&pl, prev->params[i]);
    for (int i = 0; i < prev->nconsts; i++)
        prev_lines_add(&pl, prev->consts[i]);
    for (const Node *n = prev->first; n; n = n->next)
        prev_lines_add(&pl, n);
    return pl;
}

static void prev_lines_free(PrevLines *pl) {
    for (int i = 0; i < pl->n; i++)
        free(pl->line[i]);
    free(pl->line);
}

static Mark mark_of(const PrevLines *pl, const Node *n) {
    if (!pl->line)
        return MARK_NONE;
    if (n->id >= pl->n || !pl->line[n->id])
        return MARK_ADDED;
    char *line = node_line(n);
    Mark m = strcmp(line, pl->line[n->id]) ? MARK_CHANGED : MARK_NONE;
    free(line);
    return m;
}

static void type_text(StrBuf *out, const Type *t) {
    char buf[TYPE_STR_MAX];
    sb_append(out, type_str(t, buf));
}

/* Short string attributes say what the kind alone does not (act=relu on a
 * fused conv, mode=reflect on a pad); the rest are in the tooltip. */
static void short_attrs(StrBuf *out, const Node *n) {
    for (int i = 0; i < n->nattrs; i++) {
        const Attr *a = &n->attrs[i];
        const char *text = attr_key_type(a->key) == AT_ENUM
                               ? enum_name(attr_key_set(a->key), (int)a->i)
                           : attr_key_type(a->key) == AT_STR ? a->s
                                                             : NULL;
        if (!text || strlen(text) > 16)
            continue;
        sb_printf(out, " %s=", attr_key_name(a->key));
        label_text(out, text);
    }
}

static void node_label(StrBuf *out, const Node *n) {
    if (n->kind == NK_PLACEHOLDER) {
        sb_append(out, "input\\n");
        label_text(out, n->name);
    } else if (n->kind == NK_CONSTANT) {
        sb_putc(out, '%');
        label_text(out, n->label ? n->label : "");
        if (!n->label)
            sb_printf(out, "%d", n->id);
    } else {
        sb_append(out, node_kind_name(n->kind));
        short_attrs(out, n);
        if (n->name && n->name[0]) {
            sb_append(out, "\\n");
            label_text(out, n->name);
        }
    }
    for (int r = 0; r < n->nres; r++) {
        sb_append(out, r ? ", " : "\\n");
        type_text(out, &n->res[r].type);
    }
}

static Agnode_t *graph_node(Dot *dt, Agnode_t **by_id, const Node *n, const PrevLines *pl) {
    char id[32];
    snprintf(id, sizeof id, "n%d", n->id);
    node_label(&dt->text, n);
    by_id[n->id] = add_node(dt, id, node_style(n), mark_of(pl, n));
    if (!dt->big) {
        char *line = node_line(n);
        set(by_id[n->id], "tooltip", line);
        free(line);
    }
    return by_id[n->id];
}

/* In a big graph a constant is drawn once per use, beside its user: one
 * shared box would sit at the top with edges down through hundreds of ranks,
 * and those long edges are what makes dot's layout slow. */
static Agnode_t *constant_for_use(Dot *dt, const Node *c, const Node *user, int k) {
    char id[64];
    snprintf(id, sizeof id, "n%d_%d_%d", c->id, user->id, k);
    node_label(&dt->text, c);
    return add_node(dt, id, &style_constant, MARK_NONE);
}

/* The edge of operand k of `user` (NULL: a graph output, slot k). */
static void value_edge(Dot *dt, Agnode_t **by_id, const Value *v, const Node *user, int k,
                       Agnode_t *to) {
    char label[TYPE_STR_MAX + 8], use_id[64];
    type_str(&v->type, label);
    if (v->def->nres > 1)
        snprintf(label + strlen(label), 8, " #%d", v->index);
    Agnode_t *from = by_id[v->def->id];
    if (!from)
        return;
    if (user) {
        StrBuf ref;
        sb_init(&ref);
        print_value_ref(v, &ref);
        sb_printf(&ref, " (%s)",
                  v->def->kind == NK_PLACEHOLDER ? "input" : node_kind_name(v->def->kind));
        snprintf(use_id, sizeof use_id, "r%d_%d", user->id, k);
        from = near(dt, from, dt->rank[user->id] - dt->rank[v->def->id], sb_str(&ref), use_id);
        sb_free(&ref);
    }
    add_edge(dt, from, to, label);
}

static void operand_edge(Dot *dt, Agnode_t **by_id, const Node *n, int k, Agnode_t *to) {
    const Value *v = n->ops[k];
    if (dt->big && v->def->kind == NK_CONSTANT) {
        add_edge(dt, constant_for_use(dt, v->def, n, k), to, NULL);
        return;
    }
    value_edge(dt, by_id, v, n, k, to);
}

static void graph_outputs(Dot *dt, Agnode_t **by_id, const Function *f) {
    for (int i = 0; i < f->noutputs; i++) {
        char id[32];
        snprintf(id, sizeof id, "out%d", i);
        sb_append(&dt->text, "output\\n");
        label_text(&dt->text, f->output_names[i]);
        Agnode_t *o = add_node(dt, id, &style_output, MARK_NONE);
        value_edge(dt, by_id, f->outputs[i], NULL, i, o);
    }
}

/* Each node's rank as dot will about place it: its longest path from a
 * source (nodes are in schedule order, so one pass does). Constants are
 * drawn beside their users and do not count. */
static int *longest_paths(const Function *f) {
    int *rank = calloc((size_t)f->next_id + 1, sizeof *rank);
    for (const Node *n = f->first; n; n = n->next) {
        for (int k = 0; k < n->nops; k++) {
            const Node *def = n->ops[k]->def;
            if (def->kind != NK_CONSTANT && rank[def->id] + 1 > rank[n->id])
                rank[n->id] = rank[def->id] + 1;
        }
    }
    return rank;
}

/* ---- regions: each body is a cluster beside its node ---- */

static void draw_bodies(Dot *dt, const Node *n, const char *prefix, Agnode_t *owner);

/* Body b of a region as a cluster (a Graphviz subgraph whose name starts
 * with "cluster"): its parameters, constants, nodes and returned values,
 * named under `prefix` so that bodies never share a node; its returned
 * values point at the node that runs it. */
static void draw_body(Dot *dt, const Function *b, const char *prefix, const char *title,
                      Agnode_t *owner) {
    char name[160], id[200];
    snprintf(name, sizeof name, "cluster_%s", prefix);
    Agraph_t *outer = dt->g, *sub = agsubg(outer, name, 1);
    set(sub, "label", title);
    set(sub, "style", "dashed,rounded");
    set(sub, "color", "#8a94a3");
    set(sub, "fontsize", "9");
    dt->g = sub;
    Agnode_t **by_id = calloc((size_t)b->next_id + 1, sizeof *by_id);
    for (int i = 0; by_id && i < b->nparams; i++) {
        const Node *p = b->params[i];
        snprintf(id, sizeof id, "%s_n%d", prefix, p->id);
        node_label(&dt->text, p);
        by_id[p->id] = add_node(dt, id, &style_input, MARK_NONE);
    }
    for (int i = 0; by_id && i < b->nconsts; i++) {
        const Node *k = b->consts[i];
        snprintf(id, sizeof id, "%s_n%d", prefix, k->id);
        node_label(&dt->text, k);
        by_id[k->id] = add_node(dt, id, &style_constant, MARK_NONE);
    }
    for (const Node *n = by_id ? b->first : NULL; n; n = n->next) {
        snprintf(id, sizeof id, "%s_n%d", prefix, n->id);
        node_label(&dt->text, n);
        Agnode_t *to = by_id[n->id] = add_node(dt, id, node_style(n), MARK_NONE);
        for (int k = 0; k < n->nops; k++) {
            char label[TYPE_STR_MAX];
            if (by_id[n->ops[k]->def->id])
                add_edge(dt, by_id[n->ops[k]->def->id], to, type_str(&n->ops[k]->type, label));
        }
        snprintf(id, sizeof id, "%s_n%d", prefix, n->id);
        draw_bodies(dt, n, id, to);
    }
    for (int i = 0; by_id && i < b->noutputs; i++) {
        snprintf(id, sizeof id, "%s_out%d", prefix, i);
        sb_append(&dt->text, "return\\n");
        label_text(&dt->text, b->output_names[i]);
        Agnode_t *o = add_node(dt, id, &style_output, MARK_NONE);
        if (by_id[b->outputs[i]->def->id])
            add_edge(dt, by_id[b->outputs[i]->def->id], o, NULL);
        dt->g = outer;
        set(add_edge(dt, o, owner, NULL), "style", "dashed");
        dt->g = sub;
    }
    free(by_id);
    dt->g = outer;
}

static void draw_bodies(Dot *dt, const Node *n, const char *prefix, Agnode_t *owner) {
    for (int i = 0; i < n->nbodies; i++) {
        char sub[160], title[200];
        snprintf(sub, sizeof sub, "%s_%s", prefix, node_kind_body_name(n->kind, i));
        const char *who = n->name && n->name[0] ? n->name : node_kind_name(n->kind);
        snprintf(title, sizeof title, "%s: %s", who, node_kind_body_name(n->kind, i));
        if (n->bodies[i])
            draw_body(dt, n->bodies[i], sub, title, owner);
    }
}

bool dot_graph(DotContext *c, const Function *f, const Function *prev, const char *title, DotFormat fmt,
               StrBuf *out, DiagList *d) {
    Dot dt;
    dot_open(&dt, title, f->nparams + f->nconsts + f->nnodes + f->noutputs);
    Agnode_t **by_id = calloc((size_t)f->next_id + 1, sizeof *by_id);
    dt.rank = longest_paths(f);
    PrevLines pl = prev_lines_of(prev);
    for (int i = 0; i < f->nparams; i++)
        graph_node(&dt, by_id, f->params[i], &pl);
    for (int i = 0; i < f->nconsts && !dt.big; i++)
        graph_node(&dt, by_id, f->consts[i], &pl);
    for (const Node *n = f->first; n; n = n->next) {
        Agnode_t *to = graph_node(&dt, by_id, n, &pl);
        for (int k = 0; k < n->nops; k++)
            operand_edge(&dt, by_id, n, k, to);
        char prefix[32];
        snprintf(prefix, sizeof prefix, "n%d", n->id);
        draw_bodies(&dt, n, prefix, to);
    }
    graph_outputs(&dt, by_id, f);
    bool ok = render(c, dt.g, fmt, out, d);
    prev_lines_free(&pl);
    free(dt.rank);
    free(by_id);
    dot_close(&dt);
    return ok;
}

/* ---- the low-level IR ---------------------------------------------------------- */

static char *instr_line(const LirInstr *i) {
    PrintOptions po = PRINT_DEFAULTS;
    StrBuf sb;
    sb_init(&sb);
    lir_print_instr(i, &po, &sb);
    return sb_take(&sb);
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The previous program's instruction lines, sorted, each matched at most
 * once (a multiset): an instruction is new if no unmatched equal line is
 * left for it. */
typedef struct LineSet {
    char **line;
    bool *used;
    int n;
} LineSet;

static LineSet line_set_of(const LirProgram *prev) {
    LineSet ls = {NULL, NULL, 0};
    if (!prev)
        return ls;
    ls.line = calloc((size_t)prev->ninstrs + 1, sizeof *ls.line);
    ls.used = calloc((size_t)prev->ninstrs + 1, sizeof *ls.used);
    for (const LirInstr *i = prev->first; i && ls.n <= prev->ninstrs; i = i->next)
        if (!i->dead)
            ls.line[ls.n++] = instr_line(i);
    qsort(ls.line, (size_t)ls.n, sizeof *ls.line, cmp_str);
    return ls;
}

static bool line_set_take(LineSet *ls, const char *line) {
    int lo = 0, hi = ls->n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (strcmp(ls->line[mid], line) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < ls->n && !strcmp(ls->line[lo], line); lo++) {
        if (!ls->used[lo]) {
            ls->used[lo] = true;
            return true;
        }
    }
    return false;
}

static void line_set_free(LineSet *ls) {
    for (int i = 0; i < ls->n; i++)
        free(ls->line[i]);
    free(ls->line);
    free(ls->used);
}

static const Style *buf_style(const LirBuf *b) {
    switch (b->kind) {
    case LB_CONST: return &style_constant;
    case LB_IN: return &style_input;
    case LB_OUT: return &style_output;
    case LB_VIEW: return &style_view;
    case LB_ALLOC: return &style_alloc;
    }
    return &style_alloc;
}

static const char *buf_kind_name(LirBufKind k) {
    switch (k) {
    case LB_CONST: return "weight const";
    case LB_IN: return "weight in";
    case LB_OUT: return "weight out";
    case LB_VIEW: return "view";
    case LB_ALLOC: return "activation";
    }
    return "";
}

static void buf_label(StrBuf *out, const LirProgram *p, const LirBuf *b) {
    StrBuf ref;
    sb_init(&ref);
    lir_print_buf_ref(b, &ref);
    label_text(out, sb_str(&ref));
    sb_free(&ref);
    sb_printf(out, " %s\\n", buf_kind_name(b->kind));
    type_text(out, &b->type);
    int64_t bytes = (int64_t)type_bytes(&b->type);
    if (b->kind == LB_VIEW)
        sb_printf(out, "\\n+%lld elements", (long long)b->offset);
    else if (b->kind == LB_ALLOC && p->allocated)
        sb_printf(out, "\\n@%lld, %lld B", (long long)b->address, (long long)bytes);
    else
        sb_printf(out, "\\n%lld B", (long long)bytes);
}

typedef struct LirDot {
    Dot dt;
    const LirProgram *p;
    Agnode_t **buf; /* by buffer id, made on first use */
    int *rank;      /* by buffer id: the instruction index it was drawn at */
} LirDot;

static Agnode_t *buf_node(LirDot *ld, const LirBuf *b, int at);

/* The buffer's node as seen from instruction `at`: itself, or in a big
 * program when it was drawn far away, a reference box (`use`: a unique id). */
static Agnode_t *buf_use(LirDot *ld, const LirBuf *b, int at, const char *use) {
    Agnode_t *n = buf_node(ld, b, at);
    StrBuf ref;
    sb_init(&ref);
    lir_print_buf_ref(b, &ref);
    n = near(&ld->dt, n, at - ld->rank[b->id], sb_str(&ref), use);
    sb_free(&ref);
    return n;
}

static Agnode_t *buf_node(LirDot *ld, const LirBuf *b, int at) {
    if (ld->buf[b->id])
        return ld->buf[b->id];
    char id[32];
    snprintf(id, sizeof id, "b%d", b->id);
    buf_label(&ld->dt.text, ld->p, b);
    ld->buf[b->id] = add_node(&ld->dt, id, buf_style(b), MARK_NONE);
    ld->rank[b->id] = at;
    if (b->kind == LB_VIEW && b->base) {
        snprintf(id, sizeof id, "v%d", b->id);
        Agedge_t *e = add_edge(&ld->dt, ld->buf[b->id], buf_use(ld, b->base, at, id), "view of");
        set(e, "style", "dashed");
    }
    return ld->buf[b->id];
}

static void instr_label(StrBuf *out, const LirInstr *i) {
    sb_printf(out, "%d: %s", i->index, instr_kind_name(i->kind));
    if (i->name && i->name[0]) {
        sb_append(out, "\\n");
        label_text(out, i->name);
    }
}

static const char *role_name(OperandRole r) {
    return r == ROLE_IN ? "@in" : r == ROLE_OUT ? "@out" : "@inout";
}

static void instr_edges(LirDot *ld, const LirInstr *i, Agnode_t *in) {
    char use[48];
    for (int k = 0; k < i->nops; k++) {
        snprintf(use, sizeof use, "u%d_%d", i->index, k);
        Agnode_t *b = buf_use(ld, i->ops[k], i->index, use);
        if (i->kind == IK_DEALLOC) {
            /* Its @out marks the buffer free, not written: drawn as the end
             * of the buffer's lifetime, from the buffer to where it ends. */
            Agedge_t *e = add_edge(&ld->dt, b, in, "ends");
            set(e, "style", "dashed");
            set(e, "color", "#888888");
            set(e, "arrowhead", "tee");
            continue;
        }
        if (i->roles[k] == ROLE_IN) {
            add_edge(&ld->dt, b, in, "@in");
            continue;
        }
        Agedge_t *e = add_edge(&ld->dt, in, b, role_name(i->roles[k]));
        set(e, "color", "#b3541e");
        if (i->roles[k] == ROLE_INOUT)
            set(e, "dir", "both");
    }
    if (i->result) {
        Agedge_t *e = add_edge(&ld->dt, in, buf_node(ld, i->result, i->index), "defines");
        set(e, "style", "dotted");
    }
}

/* Instructions that only manage memory. A big program leaves them out:
 * the buffer nodes say as much, at half the nodes to lay out. */
static bool is_bookkeeping(const LirInstr *i) {
    return i->kind == IK_ALLOC || i->kind == IK_DEALLOC || i->kind == IK_TENSORVIEW;
}

static Agnode_t *instr_node(LirDot *ld, const LirInstr *i, LineSet *prev) {
    char id[32];
    snprintf(id, sizeof id, "i%d", i->index);
    instr_label(&ld->dt.text, i);
    bool memory = is_bookkeeping(i);
    Mark m = MARK_NONE;
    if (prev->line) {
        char *line = instr_line(i);
        m = line_set_take(prev, line) ? MARK_NONE : MARK_CHANGED;
        free(line);
    }
    return add_node(&ld->dt, id, memory ? &style_memory : &style_compute, m);
}

/* Program order top to bottom: an invisible heavy edge from each
 * instruction to the next keeps them in one column. */
static void order_edge(LirDot *ld, Agnode_t *from, Agnode_t *to) {
    Agedge_t *e = agedge(ld->dt.g, from, to, NULL, 1);
    set(e, "style", "invis");
    set(e, "weight", "20");
}

bool dot_lir(DotContext *c, const LirProgram *p, const LirProgram *prev, const char *title, DotFormat fmt,
             StrBuf *out, DiagList *d) {
    LirProgram *pm = (LirProgram *)p; /* numbering only rewrites the indices */
    lir_number(pm);
    LirDot ld = {.p = p};
    dot_open(&ld.dt, title, p->ninstrs + p->nbufs);
    ld.buf = calloc((size_t)p->next_id + 1, sizeof *ld.buf);
    ld.rank = calloc((size_t)p->next_id + 1, sizeof *ld.rank);
    LineSet ls = line_set_of(prev);
    for (int b = 0; b < p->nbufs; b++)
        if (!p->bufs[b]->dead && p->bufs[b]->kind == LB_IN)
            buf_node(&ld, p->bufs[b], 0);
    Agnode_t *last = NULL;
    for (const LirInstr *i = p->first; i; i = i->next) {
        if (i->dead || (ld.dt.big && is_bookkeeping(i)))
            continue;
        Agnode_t *in = instr_node(&ld, i, &ls);
        instr_edges(&ld, i, in);
        if (last)
            order_edge(&ld, last, in);
        last = in;
    }
    bool ok = render(c, ld.dt.g, fmt, out, d);
    line_set_free(&ls);
    free(ld.rank);
    free(ld.buf);
    dot_close(&ld.dt);
    return ok;
}
