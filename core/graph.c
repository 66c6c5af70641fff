/* The graph IR: per-kind tables expanded from nodes.def/attrs.def, building
 * and editing functions, attributes. */
#include "core/graph.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- tables ----------------------------------------------------------- */

#define A(key) AK_##key,
#define NODE(E, nm, omin, omax, rmin, rmax, ty, inf, facts, attrs)                                \
    static const AttrKey attrs_##E[] = {attrs AK_NONE};
#include "core/nodes.def"
#undef A

typedef struct NodeKindInfo {
    const char *name;
    int ops_min, ops_max, res_min, res_max;
    unsigned facts; /* NodeFact bits */
    const AttrKey *attrs;
} NodeKindInfo;

static const NodeKindInfo kind_info[NK_COUNT] = {
#define F(fact) NF_##fact |
#define NODE(E, nm, omin, omax, rmin, rmax, ty, inf, facts, attrs)                                \
    [NK_##E] = {#nm, omin, omax, rmin, rmax, facts 0, attrs_##E},
#include "core/nodes.def"
#undef F
};

typedef struct AttrInfo {
    const char *name;
    AttrType type;
    EnumSet set;
} AttrInfo;

static const AttrInfo attr_info[AK_COUNT] = {
#define ATTR(key, T) [AK_##key] = {#key, AT_##T, ES_NONE},
#define ATTR_ENUM(key, set) [AK_##key] = {#key, AT_ENUM, ES_##set},
#include "core/attrs.def"
};

enum {
#define NODE_RANGE(nm, first, last) RANGE_FIRST_##nm = NK_##first, RANGE_LAST_##nm = NK_##last,
#define NODE(E, nm, omin, omax, rmin, rmax, ty, inf, facts, attrs)
#include "core/nodes.def"
};

const char *node_kind_name(NodeKind k) {
    return (unsigned)k < NK_COUNT ? kind_info[k].name : "?";
}

bool node_kind_from_name(const char *name, size_t len, NodeKind *out) {
    for (int k = 0; k < NK_COUNT; k++) {
        if (strlen(kind_info[k].name) == len && !memcmp(kind_info[k].name, name, len)) {
            *out = (NodeKind)k;
            return true;
        }
    }
    return false;
}

int node_kind_ops_min(NodeKind k) { return kind_info[k].ops_min; }
int node_kind_ops_max(NodeKind k) { return kind_info[k].ops_max; }
int node_kind_res_min(NodeKind k) { return kind_info[k].res_min; }
int node_kind_res_max(NodeKind k) { return kind_info[k].res_max; }
const AttrKey *node_kind_attrs(NodeKind k) { return kind_info[k].attrs; }

bool node_kind_has_attr(NodeKind k, AttrKey key) {
    for (const AttrKey *a = kind_info[k].attrs; *a != AK_NONE; a++)
        if (*a == key)
            return true;
    return false;
}

bool node_kind_is_unary(NodeKind k) {
    return k >= RANGE_FIRST_UNARY && k <= RANGE_LAST_UNARY;
}
bool node_kind_is_binary(NodeKind k) {
    return k >= RANGE_FIRST_BINARY && k <= RANGE_LAST_BINARY;
}
bool node_kind_is_compare(NodeKind k) {
    return k >= RANGE_FIRST_COMPARE && k <= RANGE_LAST_COMPARE;
}
bool node_kind_is_reduce(NodeKind k) {
    return k >= RANGE_FIRST_REDUCE && k <= RANGE_LAST_REDUCE;
}

bool node_kind_has(NodeKind k, NodeFact fact) {
    return (unsigned)k < NK_COUNT && (kind_info[k].facts & fact);
}

/* The bodies of each REGION kind, by their names in the text form. */
static const char *const body_names[NK_COUNT][3] = {
    [NK_IF] = {"then", "else"},
    [NK_LOOP] = {"body"},
};

int node_kind_bodies(NodeKind k) {
    int n = 0;
    while ((unsigned)k < NK_COUNT && n < 3 && body_names[k][n])
        n++;
    return n;
}

const char *node_kind_body_name(NodeKind k, int i) {
    return i >= 0 && i < node_kind_bodies(k) ? body_names[k][i] : "?";
}

bool node_is_dynamic(const Node *n) {
    for (int i = 0; i < n->nops; i++)
        if (n->ops[i] && type_is_dynamic(&n->ops[i]->type))
            return true;
    for (int i = 0; i < n->nres; i++)
        if (type_is_dynamic(&n->res[i].type))
            return true;
    return false;
}

bool node_is_view(const Node *n) {
    return node_kind_has(n->kind, NF_VIEW) && n->nres == 1;
}

/* What libjit_resize_f32 runs itself (backends/cpu/libjit/k_resize.c): f32
 * nearest, linear and cubic without antialias, of the last two axes only.
 * Its one to four taps per coordinate beat the matmul by a dense
 * interpolation matrix (in_d multiply-adds per output) at every size.
 * Antialias (taps that grow with the downscaling), other kinds and resized
 * leading axes keep the matmul, which beats the every-kind loop. */
static bool resize_has_kernel(const Node *n) {
    const Type *x = &n->ops[0]->type, *y = &n->res[0].type;
    int mode = node_attr_enum(n, AK_mode, MODE_NEAREST);
    if (x->elem != ELEM_F32 || x->rank < 2 || x->rank != y->rank ||
        (mode != MODE_NEAREST && node_attr_int(n, AK_antialias, 0)))
        return false;
    for (int i = 0; i + 2 < x->rank; i++)
        if (x->dims[i] != y->dims[i])
            return false;
    return true;
}

/* The conditions of lower.c's rules that depend on more than the kind:
 * layer_norm's statistics outputs, edge and reflect padding, crop-and-resize
 * and 1-D or integer resizes have no rule, and keep their kernels; nor have
 * the resizes libjit_resize_f32 runs faster (resize_has_kernel). */
bool node_lowers(const Node *n) {
    if (!node_kind_has(n->kind, NF_LOWERS))
        return false;
    switch (n->kind) {
    case NK_LAYER_NORM: return n->nres == 1;
    case NK_PAD: return node_attr_enum(n, AK_mode, MODE_CONSTANT) == MODE_CONSTANT;
    case NK_RESIZE:
        return n->ops[0]->type.rank >= 2 && elem_is_float(n->ops[0]->type.elem) &&
               node_attr_enum(n, AK_coordinate_transformation_mode, CTM_HALF_PIXEL) !=
                   CTM_TF_CROP_AND_RESIZE &&
               !resize_has_kernel(n);
    default: return true;
    }
}

const char *attr_key_name(AttrKey k) {
    return (unsigned)k < AK_COUNT ? attr_info[k].name : "?";
}

AttrType attr_key_type(AttrKey k) {
    return attr_info[k].type;
}

EnumSet attr_key_set(AttrKey k) {
    return attr_info[k].set;
}

static const struct {
    EnumSet set;
    const char *name;
} enum_info[ENUM_COUNT] = {
    [ENUM_NONE] = {ES_NONE, "none"},
#define ENUM(set, E, nm) [set##_##E] = {ES_##set, #nm},
#include "core/enums.def"
};

int enum_by_name(EnumSet set, const char *name, size_t len) {
    if (set == ES_ACT)
        return act_by_name(name, len);
    for (int v = ENUM_NONE + 1; v < ENUM_COUNT; v++)
        if (enum_info[v].set == set && strlen(enum_info[v].name) == len &&
            !memcmp(enum_info[v].name, name, len))
            return v;
    return 0;
}

const char *enum_name(EnumSet set, int value) {
    if (set == ES_ACT)
        return act_name((ActKind)value);
    return value > ENUM_NONE && value < ENUM_COUNT && enum_info[value].set == set
               ? enum_info[value].name
               : "?";
}

void enum_set_names(EnumSet set, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = 0;
    int count = set == ES_ACT ? ACT_COUNT : ENUM_COUNT;
    for (int v = 1; v < count; v++) {
        if (set != ES_ACT && enum_info[v].set != set)
            continue;
        int w = snprintf(buf + used, size - used, "%s%s", used ? ", " : "", enum_name(set, v));
        if (w < 0 || (size_t)w >= size - used)
            return;
        used += (size_t)w;
    }
}

bool attr_key_from_name(const char *name, size_t len, AttrKey *out) {
    for (int k = 0; k < AK_COUNT; k++) {
        if (strlen(attr_info[k].name) == len && !memcmp(attr_info[k].name, name, len)) {
            *out = (AttrKey)k;
            return true;
        }
    }
    return false;
}

/* ---- modules and functions -------------------------------------------- */

Module *module_new(const char *source) {
    Arena *a = arena_new();
    if (!a)
        return NULL;
    Module *m = arena_alloc(a, sizeof *m);
    if (!m) {
        arena_destroy(a);
        return NULL;
    }
    m->arena = a;
    m->source = arena_strdup(a, source ? source : "");
    return m;
}

void module_destroy(Module *m) {
    if (m)
        arena_destroy(m->arena);
}

Function *function_new(Module *m, const char *name) {
    Function *f = arena_alloc(m->arena, sizeof *f);
    f->module = m;
    f->name = arena_strdup(m->arena, name);
    if (!m->main)
        m->main = f;
    return f;
}

Function *function_new_body(Node *n, int i) {
    Function *f = function_new(n->func->module, node_kind_body_name(n->kind, i));
    f->owner = n;
    n->bodies[i] = f;
    return f;
}

static void link_before(Function *f, Node *pos, Node *n);

static Attr *clone_attrs(Arena *a, const Attr *src, int n) {
    Attr *dst = arena_alloc_array(a, (size_t)(n ? n : 1), sizeof(Attr));
    for (int i = 0; i < n; i++) {
        dst[i] = src[i];
        switch (attr_key_type(src[i].key)) {
        case AT_STR: dst[i].s = arena_strdup(a, src[i].s); break;
        case AT_INTS:
            dst[i].ints.v = arena_grow(a, src[i].ints.v, (size_t)src[i].ints.n,
                                       (size_t)(src[i].ints.n ? src[i].ints.n : 1),
                                       sizeof(int64_t));
            break;
        case AT_FLOATS:
            dst[i].floats.v = arena_grow(a, src[i].floats.v, (size_t)src[i].floats.n,
                                         (size_t)(src[i].floats.n ? src[i].floats.n : 1),
                                         sizeof(float));
            break;
        default: break;
        }
    }
    return dst;
}

static void clone_function(Function *g, const Function *f);

/* Everything of src but its operands, id and label onto dst (made with
 * src's kind and result count): the one copy of a node's fields, shared by
 * cloning a function and copying a node, so a new field is copied by both. */
static void copy_node_fields(Arena *a, Node *dst, const Node *src) {
    dst->name = arena_strdup(a, src->name);
    dst->loc = src->loc;
    for (int i = 0; i < src->nres; i++)
        dst->res[i].type = src->res[i].type;
    dst->nattrs = src->nattrs;
    dst->attrs = clone_attrs(a, src->attrs, src->nattrs);
    dst->payload = src->payload;
    for (int i = 0; i < src->nbodies && i < dst->nbodies; i++)
        if (src->bodies[i])
            clone_function(function_new_body(dst, i), src->bodies[i]);
}

/* The copy of node `n` whose operands are looked up in map (by node id). */
static Node *clone_node(Function *f, const Node *n, Node **map) {
    Arena *a = f->module->arena;
    Value **ops = arena_alloc_array(a, (size_t)n->nops + 1, sizeof(Value *));
    for (int i = 0; i < n->nops; i++)
        ops[i] = &map[n->ops[i]->def->id]->res[n->ops[i]->index];
    Node *c = graph_new_node(f, n->kind, n->nops, ops, n->nres);
    f->next_id--; /* keep the original's id */
    c->id = n->id;
    c->label = n->label ? arena_strdup(a, n->label) : NULL;
    copy_node_fields(a, c, n);
    map[n->id] = c;
    return c;
}

/* g (new and empty) becomes a copy of f, ids kept. */
static void clone_function(Function *g, const Function *f) {
    Module *c = g->module;
    Node **map = arena_alloc_array(c->arena, (size_t)(f->next_id ? f->next_id : 1), sizeof(Node *));
    for (int i = 0; i < f->nparams; i++) {
        Node *p = graph_add_param(g, f->params[i]->name, &f->params[i]->res[0].type);
        g->next_id--;
        p->id = f->params[i]->id;
        p->label = f->params[i]->label ? arena_strdup(c->arena, f->params[i]->label) : NULL;
        map[p->id] = p;
    }
    for (int i = 0; i < f->nconsts; i++) {
        Node *k = graph_add_constant(g, f->consts[i]->name, f->consts[i]->payload);
        g->next_id--;
        k->id = f->consts[i]->id;
        k->label = f->consts[i]->label ? arena_strdup(c->arena, f->consts[i]->label) : NULL;
        k->loc = f->consts[i]->loc;
        map[k->id] = k;
    }
    for (const Node *n = f->first; n; n = n->next)
        link_before(g, NULL, clone_node(g, n, map));
    Value **outs = arena_alloc_array(c->arena, (size_t)f->noutputs + 1, sizeof(Value *));
    for (int i = 0; i < f->noutputs; i++)
        outs[i] = &map[f->outputs[i]->def->id]->res[f->outputs[i]->index];
    graph_set_outputs(g, f->noutputs, outs, f->output_names);
    g->next_id = f->next_id;
}

Node *graph_copy_node(Function *f, Node *pos, const Node *n, Value *const *ops) {
    Node *c = graph_insert_before(f, pos, n->kind, n->nops, ops, n->nres);
    c->label = NULL; /* labels are unique in a function: the copy prints as its id */
    copy_node_fields(f->module->arena, c, n);
    return c;
}

Module *module_clone(const Module *m) {
    Module *c = module_new(m->source);
    if (!c || !m->main)
        return c;
    clone_function(function_new(c, m->main->name), m->main);
    if (m->text)
        c->text = m->text; /* diagnostics only; lives as long as the original */
    return c;
}

/* ---- building --------------------------------------------------------- */

Node *graph_new_node(Function *f, NodeKind k, int nops, Value *const *ops, int nres) {
    Arena *a = f->module->arena;
    Node *n = arena_alloc(a, sizeof *n);
    n->kind = k;
    n->id = f->next_id++;
    n->name = "";
    n->func = f;
    n->nops = nops;
    n->ops = arena_alloc_array(a, (size_t)(nops ? nops : 1), sizeof *n->ops);
    for (int i = 0; i < nops; i++)
        n->ops[i] = ops[i];
    n->nres = nres;
    n->res = arena_alloc_array(a, (size_t)(nres ? nres : 1), sizeof *n->res);
    for (int i = 0; i < nres; i++) {
        n->res[i].def = n;
        n->res[i].index = i;
    }
    n->nbodies = node_kind_bodies(k);
    if (n->nbodies)
        n->bodies = arena_alloc_array(a, (size_t)n->nbodies, sizeof *n->bodies);
    return n;
}

static void link_before(Function *f, Node *pos, Node *n) {
    if (!pos) {
        n->prev = f->last;
        n->next = NULL;
        if (f->last)
            f->last->next = n;
        else
            f->first = n;
        f->last = n;
    } else {
        n->next = pos;
        n->prev = pos->prev;
        if (pos->prev)
            pos->prev->next = n;
        else
            f->first = n;
        pos->prev = n;
    }
    f->nnodes++;
}

Node *graph_insert_before(Function *f, Node *pos, NodeKind k, int nops, Value *const *ops,
                          int nres) {
    Node *n = graph_new_node(f, k, nops, ops, nres);
    link_before(f, pos, n);
    return n;
}

Node *graph_add_node(Function *f, NodeKind k, int nops, Value *const *ops, int nres) {
    return graph_insert_before(f, NULL, k, nops, ops, nres);
}

Node *graph_add_param(Function *f, const char *name, const Type *t) {
    Node *n = graph_new_node(f, NK_PLACEHOLDER, 0, NULL, 1);
    n->name = arena_strdup(f->module->arena, name);
    n->res[0].type = *t;
    f->params = arena_grow(f->module->arena, f->params, (size_t)f->nparams,
                           (size_t)f->nparams + 1, sizeof *f->params);
    f->params[f->nparams++] = n;
    return n;
}

Node *graph_add_constant(Function *f, const char *name, Tensor *payload) {
    Node *n = graph_new_node(f, NK_CONSTANT, 0, NULL, 1);
    n->name = arena_strdup(f->module->arena, name ? name : "");
    n->payload = payload;
    n->res[0].type = payload->type;
    if (f->nconsts == f->consts_cap) {
        int cap = f->consts_cap ? f->consts_cap * 2 : 16;
        f->consts = arena_grow(f->module->arena, f->consts, (size_t)f->nconsts, (size_t)cap,
                               sizeof *f->consts);
        f->consts_cap = cap;
    }
    f->consts[f->nconsts++] = n;
    return n;
}

void graph_set_outputs(Function *f, int n, Value *const *vals, const char *const *names) {
    Arena *a = f->module->arena;
    f->noutputs = n;
    f->outputs = arena_alloc_array(a, (size_t)(n ? n : 1), sizeof *f->outputs);
    f->output_names = arena_alloc_array(a, (size_t)(n ? n : 1), sizeof *f->output_names);
    for (int i = 0; i < n; i++) {
        f->outputs[i] = vals[i];
        f->output_names[i] = arena_strdup(a, names[i]);
    }
}

void graph_remove_node(Function *f, Node *n) {
    if (n->dead)
        return;
    n->dead = true;
    if (n->kind == NK_CONSTANT) {
        for (int i = 0; i < f->nconsts; i++) {
            if (f->consts[i] == n) {
                memmove(f->consts + i, f->consts + i + 1,
                        (size_t)(f->nconsts - i - 1) * sizeof *f->consts);
                f->nconsts--;
                break;
            }
        }
        return;
    }
    if (n->prev)
        n->prev->next = n->next;
    else
        f->first = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        f->last = n->prev;
    n->prev = n->next = NULL;
    f->nnodes--;
}

int graph_replace_uses(Function *f, const Value *from, Value *to) {
    int count = 0;
    for (Node *n = f->first; n; n = n->next) {
        for (int i = 0; i < n->nops; i++) {
            if (n->ops[i] == from) {
                n->ops[i] = to;
                count++;
            }
        }
    }
    for (int i = 0; i < f->noutputs; i++) {
        if (f->outputs[i] == from) {
            f->outputs[i] = to;
            count++;
        }
    }
    return count;
}

int *graph_use_counts(Function *f, Arena *a) {
    int *counts = arena_alloc_array(a, (size_t)(f->next_id ? f->next_id : 1), sizeof(int));
    if (!counts)
        return NULL;
    for (Node *n = f->first; n; n = n->next)
        for (int i = 0; i < n->nops; i++)
            if (n->ops[i])
                counts[n->ops[i]->def->id]++;
    for (int i = 0; i < f->noutputs; i++)
        counts[f->outputs[i]->def->id]++;
    return counts;
}

Node *graph_only_user(Function *f, const Node *n) {
    for (int i = 0; i < f->noutputs; i++)
        if (f->outputs[i]->def == n)
            return NULL;
    Node *user = NULL;
    for (Node *m = f->first; m; m = m->next) {
        for (int i = 0; i < m->nops; i++) {
            if (!m->ops[i] || m->ops[i]->def != n)
                continue;
            if (user && user != m)
                return NULL;
            user = m;
        }
    }
    return user;
}

Node *graph_find_id(Function *f, int id) {
    for (int i = 0; i < f->nparams; i++)
        if (f->params[i]->id == id)
            return f->params[i];
    for (int i = 0; i < f->nconsts; i++)
        if (f->consts[i]->id == id)
            return f->consts[i];
    for (Node *n = f->first; n; n = n->next)
        if (n->id == id)
            return n;
    return NULL;
}

Node *graph_find_name(Function *f, const char *name) {
    for (Node *n = f->first; n; n = n->next)
        if (!strcmp(n->name, name) || (n->label && !strcmp(n->label, name)))
            return n;
    for (int i = 0; i < f->nparams; i++)
        if (!strcmp(f->params[i]->name, name))
            return f->params[i];
    for (int i = 0; i < f->nconsts; i++)
        if (!strcmp(f->consts[i]->name, name) ||
            (f->consts[i]->label && !strcmp(f->consts[i]->label, name)))
            return f->consts[i];
    return NULL;
}

bool node_is_storage(const Node *n) {
    return n->kind == NK_PLACEHOLDER || n->kind == NK_CONSTANT;
}

const char *node_where(const Node *n) {
    Arena *a = n->func->module->arena;
    if (n->name && n->name[0])
        return arena_printf(a, "node '%s' (%s)", n->name, node_kind_name(n->kind));
    return arena_printf(a, "node %%%d (%s)", n->id, node_kind_name(n->kind));
}

/* ---- attributes ------------------------------------------------------- */

const Attr *node_attr(const Node *n, AttrKey key) {
    for (int i = 0; i < n->nattrs; i++)
        if (n->attrs[i].key == key)
            return &n->attrs[i];
    return NULL;
}

bool node_has_attr(const Node *n, AttrKey key) {
    return node_attr(n, key) != NULL;
}

int64_t node_attr_int(const Node *n, AttrKey key, int64_t dflt) {
    const Attr *a = node_attr(n, key);
    return a ? a->i : dflt;
}

float node_attr_float(const Node *n, AttrKey key, float dflt) {
    const Attr *a = node_attr(n, key);
    return a ? a->f : dflt;
}

const char *node_attr_str(const Node *n, AttrKey key, const char *dflt) {
    assert(attr_key_type(key) == AT_STR);
    const Attr *a = node_attr(n, key);
    return a ? a->s : dflt;
}

int node_attr_enum(const Node *n, AttrKey key, int dflt) {
    assert(attr_key_type(key) == AT_ENUM);
    const Attr *a = node_attr(n, key);
    return a ? (int)a->i : dflt;
}

ActKind node_attr_act(const Node *n, AttrKey key) {
    return (ActKind)node_attr_enum(n, key, ACT_NONE);
}

const int64_t *node_attr_ints(const Node *n, AttrKey key, int *count) {
    const Attr *a = node_attr(n, key);
    *count = a ? a->ints.n : 0;
    return a ? a->ints.v : NULL;
}

const float *node_attr_floats(const Node *n, AttrKey key, int *count) {
    const Attr *a = node_attr(n, key);
    *count = a ? a->floats.n : 0;
    return a ? a->floats.v : NULL;
}

/* The slot for key: the present one, or a new one at the end. */
static Attr *attr_slot(Node *n, AttrKey key) {
    for (int i = 0; i < n->nattrs; i++)
        if (n->attrs[i].key == key)
            return &n->attrs[i];
    Arena *a = n->func->module->arena;
    n->attrs = arena_grow(a, n->attrs, (size_t)n->nattrs, (size_t)n->nattrs + 1, sizeof(Attr));
    Attr *s = &n->attrs[n->nattrs++];
    s->key = key;
    return s;
}

void node_set_int(Node *n, AttrKey key, int64_t v) { attr_slot(n, key)->i = v; }
void node_set_float(Node *n, AttrKey key, float v) { attr_slot(n, key)->f = v; }
void node_set_elem(Node *n, AttrKey key, ElemKind e) { attr_slot(n, key)->elem = e; }
void node_set_enum(Node *n, AttrKey key, int value) {
    assert(attr_key_type(key) == AT_ENUM);
    attr_slot(n, key)->i = value;
}
void node_set_act(Node *n, AttrKey key, ActKind act) { node_set_enum(n, key, act); }

void node_fuse_act(Node *to, const Node *act) {
    node_set_act(to, AK_act, act_of_kind(act->kind));
    if (act->kind == NK_CLIP) {
        node_set_float(to, AK_act_alpha, node_attr_float(act, AK_min, -INFINITY));
        node_set_float(to, AK_act_beta, node_attr_float(act, AK_max, INFINITY));
    } else if (act->kind == NK_LEAKY_RELU) {
        node_set_float(to, AK_act_alpha, node_attr_float(act, AK_alpha, 0.01f));
    }
}

void node_set_str(Node *n, AttrKey key, const char *s) {
    assert(attr_key_type(key) == AT_STR);
    attr_slot(n, key)->s = arena_strdup(n->func->module->arena, s);
}

void node_set_ints(Node *n, AttrKey key, int count, const int64_t *v) {
    Attr *s = attr_slot(n, key);
    s->ints.n = count;
    s->ints.v = arena_alloc_array(n->func->module->arena, (size_t)(count ? count : 1),
                                  sizeof(int64_t));
    if (count)
        memcpy(s->ints.v, v, (size_t)count * sizeof(int64_t));
}

void node_set_floats(Node *n, AttrKey key, int count, const float *v) {
    Attr *s = attr_slot(n, key);
    s->floats.n = count;
    s->floats.v = arena_alloc_array(n->func->module->arena, (size_t)(count ? count : 1),
                                    sizeof(float));
    if (count)
        memcpy(s->floats.v, v, (size_t)count * sizeof(float));
}

void node_remove_attr(Node *n, AttrKey key) {
    for (int i = 0; i < n->nattrs; i++) {
        if (n->attrs[i].key == key) {
            memmove(n->attrs + i, n->attrs + i + 1, (size_t)(n->nattrs - i - 1) * sizeof(Attr));
            n->nattrs--;
            return;
        }
    }
}

/* Floats compare by bits so that NaN equals itself and CSE stays sound. */
static bool float_same(float a, float b) {
    return !memcmp(&a, &b, sizeof a);
}

bool attr_equal(const Attr *a, const Attr *b) {
    if (a->key != b->key)
        return false;
    switch (attr_key_type(a->key)) {
    case AT_INT: return a->i == b->i;
    case AT_FLOAT: return float_same(a->f, b->f);
    case AT_ELEM: return a->elem == b->elem;
    case AT_ENUM: return a->i == b->i;
    case AT_STR: return !strcmp(a->s, b->s);
    case AT_INTS:
        return a->ints.n == b->ints.n &&
               !memcmp(a->ints.v, b->ints.v, (size_t)a->ints.n * sizeof(int64_t));
    case AT_FLOATS:
        if (a->floats.n != b->floats.n)
            return false;
        for (int i = 0; i < a->floats.n; i++)
            if (!float_same(a->floats.v[i], b->floats.v[i]))
                return false;
        return true;
    }
    return false;
}

static uint64_t mix(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

uint64_t attr_hash(const Attr *a) {
    uint64_t h = mix(1469598103934665603ull, &a->key, sizeof a->key);
    switch (attr_key_type(a->key)) {
    case AT_INT: return mix(h, &a->i, sizeof a->i);
    case AT_FLOAT: return mix(h, &a->f, sizeof a->f);
    case AT_ELEM: return mix(h, &a->elem, sizeof a->elem);
    case AT_ENUM: return mix(h, &a->i, sizeof a->i);
    case AT_STR: return mix(h, a->s, strlen(a->s));
    case AT_INTS: return mix(h, a->ints.v, (size_t)a->ints.n * sizeof(int64_t));
    case AT_FLOATS: return mix(h, a->floats.v, (size_t)a->floats.n * sizeof(float));
    }
    return h;
}

/* ---- fused activations (core/acts.def) ------------------------------------ */

static const struct {
    const char *name;
    NodeKind node;
} act_info[ACT_COUNT] = {
    [ACT_NONE] = {"none", NK_COUNT},
#define ACT(E, nm, node) [ACT_##E] = {#nm, NK_##node},
#include "core/acts.def"
};

ActKind act_by_name(const char *name, size_t len) {
    for (int k = ACT_NONE + 1; k < ACT_COUNT; k++)
        if (strlen(act_info[k].name) == len && !memcmp(act_info[k].name, name, len))
            return (ActKind)k;
    return ACT_NONE;
}

const char *act_name(ActKind act) {
    return (unsigned)act < ACT_COUNT ? act_info[act].name : "?";
}

ActKind act_of_kind(NodeKind kind) {
    for (int k = ACT_NONE + 1; k < ACT_COUNT; k++)
        if (act_info[k].node == kind)
            return (ActKind)k;
    return ACT_NONE;
}

static double sigmoid(double x) {
    return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x));
}

/* relu is x < 0 ? 0 : x so that NaN stays NaN and -inf gives 0 (0 * x would
 * make NaN of it); clip lets NaN through (both comparisons fail). */
double act_scalar(ActKind act, double x, double alpha, double beta) {
    switch (act) {
    case ACT_RELU: return x < 0 ? 0 : x;
    case ACT_CLIP: return x < alpha ? alpha : x > beta ? beta : x;
    case ACT_SIGMOID: return sigmoid(x);
    case ACT_TANH: return tanh(x);
    case ACT_LEAKY_RELU: return x < 0 ? alpha * x : x;
    case ACT_SILU: return x * sigmoid(x);
    case ACT_NONE:
    case ACT_COUNT: break;
    }
    return x;
}

const Node *graph_last_named(const Function *f, const char *name) {
    const Node *found = NULL;
    for (const Node *n = f->first; n; n = n->next)
        if (!strcmp(n->name, name))
            found = n;
    return found;
}
