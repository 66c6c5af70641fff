/* The ONNX model walk: initializers, inputs with their dimensions bound,
 * every node through its handler (ops.def), outputs; then the nodes that only
 * served to compute folded shapes are dropped. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "core/infer.h"
#include "core/onnx/import.h"
#include "core/print.h"

/* An ONNX name stands for a graph value or, during import only, a sequence. */
typedef struct MapEntry {
    const char *name;
    Value *value;
    OnnxSeq *seq;
} MapEntry;

typedef struct Unsupported {
    const char *op;
    const char *first_where;
    int count;
} Unsupported;

/* What belongs to the function being imported (main, or a region's body):
 * saved and replaced as one when a body starts, restored when it ends, so a
 * new per-function field cannot be forgotten in one of the two places. */
typedef struct FuncScope {
    Function *f;
    struct Region *region; /* the body of a region node being imported (f), or NULL */
    Tensor ***folded;      /* by node id: the results of a folded node */
    int folded_cap;
    Node **walk; /* depends_on_input: nodes visited, and a mark by node id */
    bool *walk_seen;
    int walk_cap;
    bool bounding; /* fold_value asked value bounds; they do not ask again */
} FuncScope;

struct ImportCtx {
    Module *m;
    FuncScope fs;
    DiagList *d;
    const ImportOptions *opt;
    const char *dir;
    int opset;
    MapEntry *map;
    size_t map_cap, map_count;
    Value poison;        /* stands for outputs of nodes that failed to import */
    Value **known_const; /* by param index: the constant made from a known input */
    Unsupported unsupported[64];
    int nunsupported;
    bool any_unsupported;
    uint64_t tensor_bytes; /* tensors made so far, against opt->max_memory */
    const char *scope;     /* inside an If's branch: the If's name, for generated names */
    bool scope_all;        /* inside an unrolled loop: every node's name takes the scope */
};

/* A body of a region node being imported: the values it reads from the
 * function around it become its parameters (after its own `nformals`), one
 * for each outer value, in order of first use; the node takes the outer
 * values as operands. A body inside a body captures through the one around
 * it. */
typedef struct Region {
    Function *body, *outer;
    int nformals;
    Value **outer_vals; /* in outer */
    Node **params;      /* in body: the parameter standing for outer_vals[i] */
    int n, cap;
    struct Region *up;  /* the region whose body is `outer`, NULL when outer is main */
} Region;

/* ---- value map ---------------------------------------------------------- */

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static void map_put_entry(ImportCtx *ic, const char *name, Value *v, OnnxSeq *seq);

static void map_grow(ImportCtx *ic) {
    MapEntry *old = ic->map;
    size_t old_cap = ic->map_cap;
    ic->map_cap = old_cap ? old_cap * 2 : 256;
    ic->map = arena_alloc_array(ic->m->arena, ic->map_cap, sizeof(MapEntry));
    ic->map_count = 0;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].name)
            map_put_entry(ic, old[i].name, old[i].value, old[i].seq);
}

static void map_put_entry(ImportCtx *ic, const char *name, Value *v, OnnxSeq *seq) {
    if ((ic->map_count + 1) * 2 > ic->map_cap)
        map_grow(ic);
    size_t i = hash_str(name) & (ic->map_cap - 1);
    while (ic->map[i].name && strcmp(ic->map[i].name, name))
        i = (i + 1) & (ic->map_cap - 1);
    if (!ic->map[i].name) {
        ic->map[i].name = arena_strdup(ic->m->arena, name);
        ic->map_count++;
    }
    ic->map[i].value = v;
    ic->map[i].seq = seq;
}

static void map_put(ImportCtx *ic, const char *name, Value *v) {
    map_put_entry(ic, name, v, NULL);
}

static const MapEntry *map_find(const ImportCtx *ic, const char *name) {
    if (!ic->map_cap)
        return NULL;
    size_t i = hash_str(name) & (ic->map_cap - 1);
    while (ic->map[i].name) {
        if (!strcmp(ic->map[i].name, name))
            return &ic->map[i];
        i = (i + 1) & (ic->map_cap - 1);
    }
    return NULL;
}

/* The value named `name`, or NULL when the name is unknown or a sequence. */
static Value *map_get(const ImportCtx *ic, const char *name) {
    const MapEntry *e = map_find(ic, name);
    return e ? e->value : NULL;
}

static OnnxSeq *map_get_seq(const ImportCtx *ic, const char *name) {
    const MapEntry *e = map_find(ic, name);
    return e ? e->seq : NULL;
}

/* ---- the memory budget ------------------------------------------------------ */

/* What is left of --max-memory for tensors made at import (UINT64_MAX: no
 * limit). Initializers, constants and folded values all count, so that a
 * hostile model cannot add up many tensors that each fit. */
static uint64_t budget_left(const ImportCtx *ic) {
    uint64_t max = ic->opt->max_memory;
    if (!max)
        return UINT64_MAX;
    return max > ic->tensor_bytes ? max - ic->tensor_bytes : 0;
}

/* Takes `bytes` from the budget, or says what does not fit (at `where`). */
static bool budget_take(ImportCtx *ic, uint64_t bytes, const char *where) {
    if (bytes > budget_left(ic)) {
        diag_error(ic->d, where,
                   "needs %llu bytes, more than the %llu bytes left of the memory budget "
                   "(--max-memory)",
                   (unsigned long long)bytes, (unsigned long long)budget_left(ic));
        return false;
    }
    ic->tensor_bytes += bytes;
    return true;
}

/* ---- handler helpers: attributes ------------------------------------------ */

static const Onnx__AttributeProto *find_attr(const OnnxNode *on, const char *name) {
    for (size_t i = 0; i < on->proto->n_attribute; i++)
        if (on->proto->attribute[i]->name && !strcmp(on->proto->attribute[i]->name, name))
            return on->proto->attribute[i];
    return NULL;
}

bool on_has_attr(const OnnxNode *on, const char *name) {
    return find_attr(on, name) != NULL;
}

int64_t on_attr_int(const OnnxNode *on, const char *name, int64_t dflt) {
    const Onnx__AttributeProto *a = find_attr(on, name);
    return a && a->has_i ? a->i : dflt;
}

float on_attr_float(const OnnxNode *on, const char *name, float dflt) {
    const Onnx__AttributeProto *a = find_attr(on, name);
    if (!a)
        return dflt;
    if (a->has_f)
        return a->f;
    if (a->has_i)
        return (float)a->i;
    return dflt;
}

const char *on_attr_str(const OnnxNode *on, const char *name, const char *dflt) {
    const Onnx__AttributeProto *a = find_attr(on, name);
    if (!a || !a->has_s)
        return dflt;
    return arena_strndup(on->f->module->arena, (const char *)a->s.data, a->s.len);
}

int on_attr_ints(const OnnxNode *on, const char *name, int64_t *out, int max) {
    const Onnx__AttributeProto *a = find_attr(on, name);
    if (!a)
        return -1;
    int n = (int)(a->n_ints < (size_t)max ? a->n_ints : (size_t)max);
    for (int i = 0; i < n; i++)
        out[i] = a->ints[i];
    return n;
}

int on_attr_floats(const OnnxNode *on, const char *name, float *out, int max) {
    const Onnx__AttributeProto *a = find_attr(on, name);
    if (!a)
        return -1;
    int n = (int)(a->n_floats < (size_t)max ? a->n_floats : (size_t)max);
    for (int i = 0; i < n; i++)
        out[i] = a->floats[i];
    return n;
}

int on_attr_strs(const OnnxNode *on, const char *name, const char **out, int max) {
    const Onnx__AttributeProto *a = find_attr(on, name);
    if (!a)
        return -1;
    int n = (int)(a->n_strings < (size_t)max ? a->n_strings : (size_t)max);
    for (int i = 0; i < n; i++)
        out[i] = arena_strndup(on->f->module->arena, (const char *)a->strings[i].data,
                               a->strings[i].len);
    return n;
}

Tensor *on_attr_tensor(OnnxNode *on, const char *name) {
    const Onnx__AttributeProto *a = find_attr(on, name);
    if (!a || !a->t)
        return NULL;
    const char *what = arena_printf(on->d->arena, "%s: attribute '%s'", on->where, name);
    Tensor *t = tensor_from_proto(a->t, on->f->module->arena, on->ic->dir,
                                  budget_left(on->ic), what, on->d);
    if (t)
        on->ic->tensor_bytes += tensor_bytes(t);
    return t;
}

/* ---- handler helpers: diagnostics ------------------------------------------ */

void on_error(OnnxNode *on, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_error(on->d, on->where, "%s", msg);
}

void on_unsupported(OnnxNode *on, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_error(on->d, on->where, "%s", msg);
    on->ic->any_unsupported = true;
}

void on_note(OnnxNode *on, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_note(on->d, on->where, "%s", msg);
}

/* ---- handler helpers: inputs and folding ------------------------------------ */

Value *on_value(const OnnxNode *on, const char *name) {
    return map_get(on->ic, name);
}

Value *on_in(const OnnxNode *on, int i) {
    return i < on->nin ? on->in[i] : NULL;
}

bool on_need_inputs(OnnxNode *on, int min, int max) {
    int present = on->nin;
    while (present > 0 && !on->in[present - 1])
        present--;
    if (present < min || present > max) {
        if (min == max)
            on_error(on, "expects %d inputs, has %d", min, present);
        else
            on_error(on, "expects %d to %d inputs, has %d", min, max, present);
        return false;
    }
    for (int i = 0; i < min; i++) {
        if (!on->in[i]) {
            on_error(on, "input %d is required", i);
            return false;
        }
    }
    return true;
}

static int param_index(const ImportCtx *ic, const Node *n) {
    for (int i = 0; i < ic->fs.f->nparams; i++)
        if (ic->fs.f->params[i] == n)
            return i;
    return -1;
}

static const KnownInput *known_entry(ImportCtx *ic, const Node *param) {
    int pi = param_index(ic, param);
    for (int i = 0; i < ic->opt->nknown; i++) {
        const KnownInput *k = &ic->opt->known[i];
        if (k->name && k->name[0] ? strcmp(k->name, param->name) : k->index != pi)
            continue;
        /* (A command that names inputs without reading them gives no value;
         * a late one gives its value for its shape only.) */
        if (!k->value || k->late || !type_equal(&k->value->type, &param->res[0].type))
            return NULL;
        return k;
    }
    return NULL;
}

/* Folding at import is for shape computations, which are small: bigger
 * values, and windowed operators (whose cost their sizes do not bound), are
 * left to the graph's constant folding, so that a short hostile model cannot
 * make the import compute for minutes. */
enum { FOLD_MAX_ELEMENTS = 4096 };

static bool foldable(const Node *n) {
    if (node_kind_has_attr(n->kind, AK_kernel))
        return false;
    for (int i = 0; i < n->nops; i++)
        if (type_numel(&n->ops[i]->type) > FOLD_MAX_ELEMENTS)
            return false;
    for (int i = 0; i < n->nres; i++)
        if (type_numel(&n->res[i].type) > FOLD_MAX_ELEMENTS)
            return false;
    return true;
}

static Tensor *fold_value(ImportCtx *ic, Value *v, int depth);
static bool depends_on_input(ImportCtx *ic, const Value *v);

static Tensor *static_value(ImportCtx *ic, Value *v) {
    return v && !depends_on_input(ic, v) ? fold_value(ic, v, 0) : NULL;
}

/* ---- bounds of run-time shape values ---------------------------------------- */

/* The range [lo, hi] of each element of v, through what exporters compute
 * shapes with: Shape of a bounded-dynamic value (0 to its bound),
 * constants, and the gathers, slices, concats, reshapes, casts, min/max,
 * sums, products, comparisons and Wheres that follow (torch's Expand with
 * -1 is Where(Equal(shape, -1), 1, shape)). An element is known exactly
 * when lo == hi. depth stops a long chain. */
typedef struct Bounds {
    int n;
    int64_t lo[MAX_RANK], hi[MAX_RANK];
} Bounds;

static bool bounds_of(ImportCtx *ic, Value *v, Bounds *b, int depth);

static bool bounds_const(ImportCtx *ic, Value *v, Bounds *b) {
    Tensor *t = static_value(ic, v);
    if (!t || elem_is_float(t->type.elem) || tensor_numel(t) > MAX_RANK)
        return false;
    b->n = (int)tensor_numel(t);
    for (int i = 0; i < b->n; i++)
        b->lo[i] = b->hi[i] = tensor_get_i64(t, i);
    return true;
}

static int64_t min64(int64_t a, int64_t b) {
    return a < b ? a : b;
}

static int64_t max64(int64_t a, int64_t b) {
    return a > b ? a : b;
}

/* x op y elementwise, a one-element side broadcast. */
static bool bounds_binary(NodeKind k, const Bounds *x, const Bounds *y, Bounds *b) {
    if (x->n != y->n && x->n != 1 && y->n != 1)
        return false;
    b->n = x->n > y->n ? x->n : y->n;
    for (int i = 0; i < b->n; i++) {
        int xi = x->n == 1 ? 0 : i, yi = y->n == 1 ? 0 : i;
        int64_t pl = x->lo[xi], ph = x->hi[xi], ql = y->lo[yi], qh = y->hi[yi];
        bool ok = true;
        switch (k) {
        case NK_MIN: b->lo[i] = min64(pl, ql), b->hi[i] = min64(ph, qh); break;
        case NK_MAX: b->lo[i] = max64(pl, ql), b->hi[i] = max64(ph, qh); break;
        case NK_ADD:
            ok = !__builtin_add_overflow(pl, ql, &b->lo[i]) &&
                 !__builtin_add_overflow(ph, qh, &b->hi[i]);
            break;
        case NK_MUL: /* of non-negative values only, where the corners are the ends */
            ok = pl >= 0 && ql >= 0 && !__builtin_mul_overflow(pl, ql, &b->lo[i]) &&
                 !__builtin_mul_overflow(ph, qh, &b->hi[i]);
            break;
        case NK_EQUAL: /* known where both are, or where the ranges do not meet */
            b->lo[i] = pl == ph && ql == qh && pl == ql;
            b->hi[i] = !(ph < ql || qh < pl);
            break;
        default: return false;
        }
        if (!ok)
            return false;
    }
    return true;
}

/* Element j of x as element i of b. */
static void bounds_pick(Bounds *b, int i, const Bounds *x, int j) {
    b->lo[i] = x->lo[j];
    b->hi[i] = x->hi[j];
}

static bool bounds_node(ImportCtx *ic, const Node *n, Bounds *b, int depth) {
    Bounds x, y, c;
    switch (n->kind) {
    case NK_SHAPE: {
        const Type *t = &n->ops[0]->type;
        b->n = t->rank;
        for (int i = 0; i < t->rank; i++) {
            b->hi[i] = t->dims[i];
            b->lo[i] = type_dim_dynamic(t, i) ? 0 : t->dims[i];
        }
        return true;
    }
    case NK_RESHAPE:
    case NK_SQUEEZE:
    case NK_UNSQUEEZE:
    case NK_IDENTITY:
    case NK_CAST:
        return !elem_is_float(n->res[0].type.elem) && !elem_is_float(n->ops[0]->type.elem) &&
               bounds_of(ic, n->ops[0], b, depth + 1);
    case NK_CONCAT:
        b->n = 0;
        for (int k = 0; k < n->nops; k++) {
            if (!bounds_of(ic, n->ops[k], &x, depth + 1) || b->n + x.n > MAX_RANK)
                return false;
            for (int i = 0; i < x.n; i++)
                bounds_pick(b, b->n + i, &x, i);
            b->n += x.n;
        }
        return true;
    case NK_GATHER: {
        Tensor *idx = static_value(ic, n->ops[1]);
        if (!idx || n->ops[0]->type.rank != 1 || !bounds_of(ic, n->ops[0], &x, depth + 1))
            return false;
        b->n = (int)tensor_numel(idx);
        for (int i = 0; i < b->n; i++) {
            int64_t j = tensor_get_i64(idx, i);
            j += j < 0 ? x.n : 0;
            if (j < 0 || j >= x.n)
                return false;
            bounds_pick(b, i, &x, (int)j);
        }
        return true;
    }
    case NK_SLICE: {
        int k;
        const int64_t *st = node_attr_ints(n, AK_starts, &k), *sp = node_attr_ints(n, AK_steps, &k);
        if (n->ops[0]->type.rank != 1 || !st || !sp || !bounds_of(ic, n->ops[0], &x, depth + 1))
            return false;
        b->n = (int)n->res[0].type.dims[0];
        for (int i = 0; i < b->n; i++) {
            int64_t j = st[0] + i * sp[0];
            if (j < 0 || j >= x.n)
                return false;
            bounds_pick(b, i, &x, (int)j);
        }
        return true;
    }
    case NK_REDUCE_SUM: { /* of a mask cast to integers: a count (torch's (x > 0).sum()) */
        const Value *c = n->ops[0];
        int64_t all = type_numel(&c->type), each = type_numel(&n->res[0].type);
        if (c->def->kind != NK_CAST || c->def->ops[0]->type.elem != ELEM_BOOL || !each ||
            type_is_dynamic(&c->type))
            return false;
        b->n = (int)each;
        for (int i = 0; i < b->n; i++)
            b->lo[i] = 0, b->hi[i] = all / each;
        return true;
    }
    case NK_REDUCE_MIN:
    case NK_REDUCE_MAX:
        if (n->ops[0]->type.rank != 1 || !bounds_of(ic, n->ops[0], &x, depth + 1) || x.n < 1)
            return false;
        b->n = 1;
        bounds_pick(b, 0, &x, 0);
        for (int i = 1; i < x.n; i++) {
            bool mn = n->kind == NK_REDUCE_MIN;
            b->lo[0] = mn ? min64(b->lo[0], x.lo[i]) : max64(b->lo[0], x.lo[i]);
            b->hi[0] = mn ? min64(b->hi[0], x.hi[i]) : max64(b->hi[0], x.hi[i]);
        }
        return true;
    case NK_WHERE: /* the side the condition picks, or either */
        if (!bounds_of(ic, n->ops[0], &c, depth + 1) || !bounds_of(ic, n->ops[1], &x, depth + 1) ||
            !bounds_of(ic, n->ops[2], &y, depth + 1) || !bounds_binary(NK_MAX, &x, &y, b) ||
            (c.n != 1 && c.n != b->n))
            return false;
        for (int i = 0; i < b->n; i++) {
            int ci = c.n == 1 ? 0 : i, xi = x.n == 1 ? 0 : i, yi = y.n == 1 ? 0 : i;
            b->lo[i] = min64(x.lo[xi], y.lo[yi]);
            if (c.lo[ci] == c.hi[ci])
                bounds_pick(b, i, c.lo[ci] ? &x : &y, c.lo[ci] ? xi : yi);
        }
        return true;
    case NK_MIN:
    case NK_MAX:
    case NK_ADD:
    case NK_MUL:
    case NK_EQUAL:
        return bounds_of(ic, n->ops[0], &x, depth + 1) && bounds_of(ic, n->ops[1], &y, depth + 1) &&
               bounds_binary(n->kind, &x, &y, b);
    default: return false;
    }
}

static bool bounds_of(ImportCtx *ic, Value *v, Bounds *b, int depth) {
    if (depth > 64 || type_numel(&v->type) > MAX_RANK || v->type.rank > 1 ||
        elem_is_float(v->type.elem))
        return false;
    if (bounds_const(ic, v, b))
        return true;
    return v->index == 0 && bounds_node(ic, v->def, b, depth);
}

bool on_value_range(OnnxNode *on, Value *v, int64_t *lo, int64_t *hi, int max, int *n) {
    Bounds b;
    if (!bounds_of(on->ic, v, &b, 0) || b.n > max)
        return false;
    for (int i = 0; i < b.n; i++)
        lo[i] = b.lo[i], hi[i] = b.hi[i];
    *n = b.n;
    return true;
}

bool on_value_bounds(OnnxNode *on, Value *v, int64_t *hi, uint8_t *dyn, int max, int *n) {
    Bounds b;
    if (!bounds_of(on->ic, v, &b, 0) || b.n > max)
        return false;
    *dyn = 0;
    for (int i = 0; i < b.n; i++) {
        hi[i] = b.hi[i];
        if (b.lo[i] != b.hi[i])
            *dyn |= (uint8_t)(1u << i);
    }
    *n = b.n;
    return true;
}

/* A small list of integers computed from sizes, all of them static (the
 * second dimension of a [?<=150x1] value), is a constant although the
 * shape it was taken from is not. */
static Tensor *fold_exact_bounds(ImportCtx *ic, Value *v) {
    const Type *t = &v->type;
    if (ic->fs.bounding || elem_is_float(t->elem) || t->elem == ELEM_BOOL || t->rank > 1 ||
        type_numel(t) > MAX_RANK || !ic->opt->fold)
        return NULL;
    ic->fs.bounding = true;
    Bounds b;
    bool ok = v->index == 0 && bounds_node(ic, v->def, &b, 0) && b.n == type_numel(t);
    for (int i = 0; ok && i < b.n; i++)
        ok = b.lo[i] == b.hi[i];
    ic->fs.bounding = false;
    Tensor *c = ok ? tensor_new(ic->m->arena, t) : NULL;
    for (int i = 0; c && i < b.n; i++)
        tensor_set_i64(c, i, b.hi[i]);
    return c;
}

/* Evaluates v at compile time if everything it depends on is constant. */
static Tensor *fold_value(ImportCtx *ic, Value *v, int depth) {
    Node *n = v->def;
    if (n->kind == NK_CONSTANT)
        return n->payload && n->payload->data ? n->payload : NULL;
    if (n->kind == NK_PLACEHOLDER && n->func != ic->m->main)
        return NULL; /* a body's parameter: a value of each run */
    if (n->kind == NK_PLACEHOLDER) {
        const KnownInput *k = known_entry(ic, n);
        Tensor *t = k ? (Tensor *)k->value : NULL;
        if (k && k->read)
            *k->read = true;
        int pi = param_index(ic, n);
        if (t && pi >= 0 && !ic->known_const[pi]) {
            ic->known_const[pi] = &n->res[0]; /* mark: noted once */
            diag_note(ic->d, NULL,
                      "input '%s' is read at compile time (it decides a shape or a branch), so the model is specialised to its value",
                      n->name);
        }
        return t;
    }
    if (depth > 256 || !ic->opt->fold || !foldable(n))
        return NULL;
    if (n->id < ic->fs.folded_cap && ic->fs.folded[n->id])
        return ic->fs.folded[n->id][v->index];
    Tensor *ops[256];
    if (n->nops > 256)
        return NULL;
    for (int i = 0; i < n->nops; i++)
        if (!(ops[i] = fold_value(ic, n->ops[i], depth + 1)))
            return fold_exact_bounds(ic, v);
    uint64_t bytes = 0;
    for (int i = 0; i < n->nres; i++)
        bytes += type_bytes(&n->res[i].type); /* each checked by infer_node */
    if (!budget_take(ic, bytes, node_where(n)))
        return NULL;
    Tensor **res = arena_alloc_array(ic->m->arena, (size_t)n->nres, sizeof *res);
    DiagList scratch;
    diag_init(&scratch, NULL);
    bool ok = ic->opt->fold(ic->opt->fold_ctx, n, ops, res, ic->m->arena, &scratch);
    diag_free(&scratch);
    if (!ok)
        return NULL;
    if (n->id >= ic->fs.folded_cap) {
        int cap = ic->fs.folded_cap ? ic->fs.folded_cap : 256;
        while (cap <= n->id)
            cap *= 2;
        ic->fs.folded = arena_grow(ic->m->arena, ic->fs.folded, (size_t)ic->fs.folded_cap, (size_t)cap,
                                sizeof *ic->fs.folded);
        ic->fs.folded_cap = cap;
    }
    ic->fs.folded[n->id] = res;
    return res[v->index];
}

Tensor *on_try_const(OnnxNode *on, Value *v) {
    return v ? fold_value(on->ic, v, 0) : NULL;
}

/* Does v depend on a graph input? A walk over its operands, each node once
 * (a chain of diamonds must not take exponential time), and at most
 * WALK_MAX nodes (many nodes each asking about a long chain must not take
 * quadratic time): a bigger subgraph counts as depending on an input, which
 * is always correct, as the callers then take the value at run time. */
enum { WALK_MAX = 1024 };

static bool walk_inputs(ImportCtx *ic, const Value *v, StrBuf *names) {
    Function *f = ic->fs.f;
    if (f->next_id > ic->fs.walk_cap) {
        int cap = f->next_id * 2;
        ic->fs.walk = arena_grow(ic->m->arena, ic->fs.walk, (size_t)ic->fs.walk_cap, (size_t)cap,
                              sizeof *ic->fs.walk);
        ic->fs.walk_seen = arena_grow(ic->m->arena, ic->fs.walk_seen, (size_t)ic->fs.walk_cap,
                                   (size_t)cap, sizeof *ic->fs.walk_seen);
        ic->fs.walk_cap = cap;
    }
    int nwalk = 0;
    bool found = false;
    ic->fs.walk[nwalk++] = v->def;
    ic->fs.walk_seen[v->def->id] = true;
    for (int i = 0; i < nwalk && !found; i++) {
        Node *n = ic->fs.walk[i];
        if (n->kind == NK_PLACEHOLDER && names)
            sb_printf(names, "%s'%s'", names->len ? ", " : "", n->name);
        found = (n->kind == NK_PLACEHOLDER && !names) || nwalk > WALK_MAX;
        for (int k = 0; k < n->nops; k++) {
            Node *d = n->ops[k]->def;
            if (!ic->fs.walk_seen[d->id]) {
                ic->fs.walk_seen[d->id] = true;
                ic->fs.walk[nwalk++] = d;
            }
        }
    }
    for (int i = 0; i < nwalk; i++)
        ic->fs.walk_seen[ic->fs.walk[i]->id] = false;
    return found;
}

static bool depends_on_input(ImportCtx *ic, const Value *v) {
    return walk_inputs(ic, v, NULL);
}

Tensor *on_try_static(OnnxNode *on, Value *v) {
    return static_value(on->ic, v);
}

OnnxSeq *on_seq_in(const OnnxNode *on, int i) {
    return i < on->nin && on->seq ? on->seq[i] : NULL;
}

Tensor *on_const_input(OnnxNode *on, int i, const char *what) {
    Value *v = on_in(on, i);
    if (!v) {
        on_error(on, "input %d (%s) is missing", i, what);
        return NULL;
    }
    Tensor *t = fold_value(on->ic, v, 0);
    if (!t)
        on_error(on, "input %d (%s) must be known at compile time: its value decides a shape",
                 i, what);
    return t;
}

bool on_const_ints(OnnxNode *on, int i, const char *what, int64_t *out, int max, int *n) {
    Tensor *t = on_const_input(on, i, what);
    if (!t)
        return false;
    int64_t numel = tensor_numel(t);
    if (t->type.rank > 1 || numel > max || elem_is_float(t->type.elem)) {
        on_error(on, "input %d (%s) must be a list of at most %d integers", i, what, max);
        return false;
    }
    for (int64_t k = 0; k < numel; k++)
        out[k] = tensor_get_i64(t, k);
    *n = (int)numel;
    return true;
}

bool on_const_floats(OnnxNode *on, int i, const char *what, float *out, int max, int *n) {
    Tensor *t = on_const_input(on, i, what);
    if (!t)
        return false;
    int64_t numel = tensor_numel(t);
    if (t->type.rank > 1 || numel > max) {
        on_error(on, "input %d (%s) must be a list of at most %d numbers", i, what, max);
        return false;
    }
    for (int64_t k = 0; k < numel; k++)
        out[k] = (float)tensor_get_f64(t, k);
    *n = (int)numel;
    return true;
}

/* ---- handler helpers: emitting -------------------------------------------- */

Node *on_node(OnnxNode *on, NodeKind k, int nops, Value *const *ops, int nres) {
    Node *n = graph_add_node(on->f, k, nops, ops, nres);
    n->name = on->name;
    return n;
}

/* A value no machine within the budget could hold is refused here, at
 * import, rather than when a run tries to allocate it. */
static bool results_fit(OnnxNode *on, const Node *n) {
    uint64_t max = on->ic->opt->max_memory;
    for (int i = 0; max && i < n->nres; i++) {
        uint64_t bytes = type_bytes(&n->res[i].type);
        if (bytes > max) {
            char t[TYPE_STR_MAX];
            on_error(on, "result %s needs %llu bytes, more than the memory budget of %llu bytes "
                     "(--max-memory)", type_str(&n->res[i].type, t),
                     (unsigned long long)bytes, (unsigned long long)max);
            return false;
        }
    }
    return true;
}

static bool infer_at(OnnxNode *on, Node *n) {
    DiagList scratch;
    diag_init(&scratch, NULL);
    bool ok = infer_node(n, &scratch);
    if (!ok) {
        /* Re-say the message at the ONNX node (the graph node may be a helper). */
        for (const Diag *g = scratch.head; g; g = g->next)
            on_error(on, "%s", g->msg);
    }
    diag_free(&scratch);
    ok = ok && results_fit(on, n);
    if (!ok)
        graph_remove_node(on->f, n);
    return ok;
}

void on_bind(OnnxNode *on, int i, Value *v) {
    if (i < on->nout && on->proto->output[i][0])
        map_put(on->ic, on->proto->output[i], v);
}

void on_bind_seq(OnnxNode *on, int i, OnnxSeq *s) {
    if (i < on->nout && on->proto->output[i][0])
        map_put_entry(on->ic, on->proto->output[i], NULL, s);
}

bool on_set_enum(OnnxNode *on, Node *n, AttrKey key, const char *value) {
    EnumSet set = attr_key_set(key);
    int v = enum_by_name(set, value, strlen(value));
    if (!v) {
        char names[512];
        enum_set_names(set, names, sizeof names);
        on_error(on, "%s '%s' is not one of %s", attr_key_name(key), value, names);
        return false;
    }
    node_set_enum(n, key, v);
    return true;
}

bool on_done(OnnxNode *on, Node *n) {
    if (!infer_at(on, n))
        return false;
    for (int i = 0; i < n->nres; i++)
        on_bind(on, i, &n->res[i]);
    return true;
}

Value *on_tmp(OnnxNode *on, Node *n) {
    return infer_at(on, n) ? &n->res[0] : NULL;
}

Tensor *on_tensor(OnnxNode *on, const Type *t) {
    int64_t numel;
    if (!type_numel_checked(t, &numel)) {
        on_error(on, "tensor has more elements than 64 bits count");
        return NULL;
    }
    if (!budget_take(on->ic, type_bytes(t), on->where))
        return NULL;
    return tensor_new(on->f->module->arena, t);
}

Value *on_const(OnnxNode *on, Tensor *t) {
    Node *n = graph_add_constant(on->f, on->name, t);
    return &n->res[0];
}

Value *on_scalar_const(OnnxNode *on, ElemKind k, double v) {
    Type t = type_scalar(k);
    Tensor *x = on_tensor(on, &t);
    if (!x)
        return NULL;
    tensor_set_f64(x, 0, v);
    return on_const(on, x);
}

Value *on_in_or_zero(OnnxNode *on, int i, ElemKind k) {
    Value *v = on_in(on, i);
    return v ? v : on_scalar_const(on, k, 0);
}

/* ---- the walk -------------------------------------------------------------- */

typedef struct OpEntry {
    const char *op;
    OpHandler fn;
    bool takes_seq;
} OpEntry;

static const OpEntry op_table[] = {
#define ONNX_OP(op_type, handler) {op_type, handler, false},
#define ONNX_SEQ_OP(op_type, handler) {op_type, handler, true},
#include "core/onnx/ops.def"
};

static const OpEntry *find_handler(const char *op) {
    for (size_t i = 0; i < sizeof op_table / sizeof op_table[0]; i++)
        if (!strcmp(op_table[i].op, op))
            return &op_table[i];
    return NULL;
}

static void record_unsupported(ImportCtx *ic, const char *op, const char *where) {
    ic->any_unsupported = true;
    for (int i = 0; i < ic->nunsupported; i++) {
        if (!strcmp(ic->unsupported[i].op, op)) {
            ic->unsupported[i].count++;
            return;
        }
    }
    if (ic->nunsupported < 64)
        ic->unsupported[ic->nunsupported++] =
            (Unsupported){arena_strdup(ic->m->arena, op), where, 1};
}

static void report_unsupported(ImportCtx *ic) {
    for (int i = 0; i < ic->nunsupported; i++) {
        Unsupported *u = &ic->unsupported[i];
        if (u->count > 1)
            diag_error(ic->d, u->first_where, "unsupported operator %s (and %d more node%s)",
                       u->op, u->count - 1, u->count > 2 ? "s" : "");
        else
            diag_error(ic->d, u->first_where, "unsupported operator %s", u->op);
    }
}

/* v (of a function around r's body) as seen in the body: a constant is
 * copied in (the body's passes fold with it), any other value becomes a
 * parameter, once. */
static Value *capture(ImportCtx *ic, Region *r, Value *v, const char *name) {
    if (!r || v->def->func == r->body)
        return v;
    Arena *a = ic->m->arena;
    if (v->def->kind == NK_CONSTANT) {
        for (int i = 0; i < r->body->nconsts; i++)
            if (r->body->consts[i]->payload == v->def->payload)
                return &r->body->consts[i]->res[0];
        return &graph_add_constant(r->body, v->def->name, v->def->payload)->res[0];
    }
    Value *outer = capture(ic, r->up, v, name);
    for (int i = 0; i < r->n; i++)
        if (r->outer_vals[i] == outer)
            return &r->params[i]->res[0];
    if (r->n == r->cap) {
        int cap = r->cap ? r->cap * 2 : 8;
        r->outer_vals = arena_grow(a, r->outer_vals, (size_t)r->n, (size_t)cap, sizeof(Value *));
        r->params = arena_grow(a, r->params, (size_t)r->n, (size_t)cap, sizeof(Node *));
        r->cap = cap;
    }
    r->outer_vals[r->n] = outer;
    r->params[r->n] = graph_add_param(r->body, name, &outer->type);
    return &r->params[r->n++]->res[0];
}

static void import_node(ImportCtx *ic, const Onnx__NodeProto *np, int index) {
    Arena *a = ic->m->arena;
    const char *op = np->op_type ? np->op_type : "";
    OnnxNode on = {.ic = ic, .f = ic->fs.f, .d = ic->d, .proto = np, .op = op, .opset = ic->opset};
    /* Copied: the nodes keep their name, and the protobuf dies with the scratch arena. */
    on.name = np->name && np->name[0]
                  ? (ic->scope_all ? arena_printf(a, "%s/%s", ic->scope, np->name)
                                   : arena_strdup(a, np->name))
              : ic->scope ? arena_printf(a, "%s/%s_%d", ic->scope, op, index)
                          : arena_printf(a, "%s_%d", op, index);
    on.where = arena_printf(a, "node '%s' (%s)", on.name, op);
    on.nin = (int)np->n_input;
    on.nout = (int)np->n_output;
    on.in = arena_alloc_array(a, (size_t)(on.nin ? on.nin : 1), sizeof(Value *));
    /* the training domain's rows in ops.def carry its name */
    bool training = np->domain && !strcmp(np->domain, "ai.onnx.preview.training");
    bool foreign = np->domain && np->domain[0] && strcmp(np->domain, "ai.onnx") && !training;
    const OpEntry *entry = foreign ? NULL
                         : find_handler(training ? arena_printf(a, "%s.%s", np->domain, op) : op);
    OpHandler fn = entry ? entry->fn : NULL;
    if (entry && entry->takes_seq)
        on.seq = arena_alloc_array(a, (size_t)(on.nin ? on.nin : 1), sizeof(OnnxSeq *));
    bool poisoned = false;
    for (int i = 0; i < on.nin; i++) {
        const char *name = np->input[i];
        if (!name[0])
            continue;
        on.in[i] = map_get(ic, name);
        OnnxSeq *seq = map_get_seq(ic, name);
        Value *rows = seq ? seq_run_time_rows(seq) : NULL;
        if (rows && ic->fs.region && rows->def->func != ic->fs.f) /* a body reads a loop's list */
            seq = seq_loop_result(&on, capture(ic, ic->fs.region, rows, name));
        if (seq && on.seq) {
            on.seq[i] = seq;
        } else if (seq) {
            /* an unsupported operator is listed as such below instead */
            if (fn)
                on_unsupported(&on, "input '%s' is a sequence; glowc resolves sequences at "
                                    "import, through the sequence operators only", name);
            poisoned = true;
        } else if (!on.in[i]) {
            on_error(&on, "input '%s' is not defined before this node", name);
            poisoned = true;
        } else if (on.in[i] == &ic->poison) {
            poisoned = true;
        } else if (ic->fs.region && on.in[i]->def->func != ic->fs.f) {
            on.in[i] = capture(ic, ic->fs.region, on.in[i], name);
        }
    }
    if (!foreign && !training && ic->opset == 0) {
        on_error(&on, "the model imports no opset of the default domain");
        poisoned = true;
    } else if (!fn) {
        /* also after an unsupported node upstream: every one is listed */
        record_unsupported(ic, foreign ? arena_printf(a, "%s.%s", np->domain, op) : op,
                           on.where);
    }
    bool ok = !poisoned && fn && fn(&on);
    for (int i = 0; i < on.nout; i++) {
        if (!np->output[i][0])
            continue;
        bool bound = map_get(ic, np->output[i]) || map_get_seq(ic, np->output[i]);
        if (!ok || !bound)
            map_put(ic, np->output[i], &ic->poison);
        if (ok && !bound && i == 0) /* a handler must bind every output it produces */
            on_error(&on, "output '%s' was not produced", np->output[i]);
    }
}

/* ---- inputs -------------------------------------------------------------- */

typedef struct UnboundDim {
    const char *input, *name;
    int axis;
} UnboundDim;

/* The value given for the graph input that will be parameter `index`
 * (conform's test data, run --input), matched as known_input does. */
static const Tensor *given_value(const ImportCtx *ic, const char *name, int index) {
    for (int i = 0; i < ic->opt->nknown; i++) {
        const KnownInput *k = &ic->opt->known[i];
        if (k->name && k->name[0] ? !strcmp(k->name, name) : k->index == index)
            return k->value;
    }
    return NULL;
}

/* A symbolic dimension: bound by --dim, else by the shape of the value given
 * for the input (it runs on that value, so no other size would do), else a
 * leading one defaults to 1. */
static bool bind_dim(ImportCtx *ic, const char *input, int axis, const char *sym,
                     const Tensor *given, int rank, int64_t *out, UnboundDim *unbound,
                     int *nunbound) {
    for (int i = 0; i < ic->opt->ndims; i++) {
        if (sym && !strcmp(ic->opt->dims[i].name, sym)) {
            *out = ic->opt->dims[i].value;
            return true;
        }
    }
    if (given && given->type.rank == rank) {
        *out = given->type.dims[axis];
        return true;
    }
    if (axis == 0) {
        *out = 1;
        diag_note(ic->d, NULL, "input '%s': batch dimension%s%s%s set to 1 (bind with --dim)",
                  input, sym ? " '" : "", sym ? sym : "", sym ? "'" : "");
        return true;
    }
    if (*nunbound < 32)
        unbound[(*nunbound)++] = (UnboundDim){input, sym ? sym : "?", axis};
    return false;
}

static bool import_input(ImportCtx *ic, const Onnx__ValueInfoProto *vi, UnboundDim *unbound,
                         int *nunbound) {
    const char *name = vi->name ? vi->name : "";
    const char *where = arena_printf(ic->m->arena, "input '%s'", name);
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) {
        diag_error(ic->d, where, "is not a tensor (sequences, maps and optionals are not supported)");
        ic->any_unsupported = true;
        return false;
    }
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    ElemKind k;
    if (!tt->has_elem_type || !elem_from_onnx(tt->elem_type, &k)) {
        diag_error(ic->d, where, "unsupported element type %s",
                   onnx_type_name(tt->has_elem_type ? tt->elem_type : 0));
        ic->any_unsupported = true;
        return false;
    }
    if (!tt->shape) {
        diag_error(ic->d, where, "has no shape; glowc compiles static shapes");
        return false;
    }
    if (tt->shape->n_dim > MAX_RANK) {
        diag_error(ic->d, where, "rank %zu exceeds the maximum of %d", tt->shape->n_dim, MAX_RANK);
        return false;
    }
    Type t = {.elem = k, .rank = (int)tt->shape->n_dim};
    const Tensor *given = given_value(ic, name, ic->fs.f->nparams);
    bool ok = true;
    for (int i = 0; i < t.rank; i++) {
        const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[i];
        if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
            dim->dim_value >= 0) {
            t.dims[i] = dim->dim_value;
            continue;
        }
        const char *sym =
            dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                    dim->dim_param[0]
                ? dim->dim_param
                : NULL;
        ok &= bind_dim(ic, name, i, sym, given, t.rank, &t.dims[i], unbound, nunbound);
    }
    int64_t numel;
    if (ok && !type_numel_checked(&t, &numel)) {
        diag_error(ic->d, where, "element count overflows 64 bits");
        return false;
    }
    if (ok && ic->opt->max_memory && (uint64_t)numel * elem_size(k) > ic->opt->max_memory) {
        diag_error(ic->d, where,
                   "needs %llu bytes, more than the memory budget of %llu bytes (--max-memory)",
                   (unsigned long long)numel * elem_size(k),
                   (unsigned long long)ic->opt->max_memory);
        return false;
    }
    if (!ok)
        return false;
    Node *p = graph_add_param(ic->fs.f, name, &t);
    p->label = p->name;
    map_put(ic, name, &p->res[0]);
    return true;
}

static void report_unbound(ImportCtx *ic, const UnboundDim *u, int n) {
    if (!n)
        return;
    StrBuf sb;
    sb_init(&sb);
    for (int i = 0; i < n; i++)
        sb_printf(&sb, "%s'%s' (input '%s', axis %d)", i ? ", " : "", u[i].name, u[i].input,
                  u[i].axis);
    diag_error(ic->d, NULL, "unbound symbolic dimensions: %s; bind them with --dim NAME=VALUE",
               sb_str(&sb));
    sb_free(&sb);
}

/* The symbolic dimension names of the graph's inputs, each once, in order. */
static int symbolic_dims(const Onnx__GraphProto *g, const char **names, int max) {
    int n = 0;
    for (size_t i = 0; i < g->n_input; i++) {
        const Onnx__TypeProto *tp = g->input[i]->type;
        const Onnx__TensorShapeProto *sh =
            tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && tp->tensor_type
                ? tp->tensor_type->shape
                : NULL;
        for (size_t k = 0; sh && k < sh->n_dim; k++) {
            const Onnx__TensorShapeProto__Dimension *dim = sh->dim[k];
            if (dim->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM ||
                !dim->dim_param[0])
                continue;
            bool seen = false;
            for (int j = 0; j < n && !seen; j++)
                seen = !strcmp(names[j], dim->dim_param);
            if (!seen && n < max)
                names[n++] = dim->dim_param;
        }
    }
    return n;
}

/* A --dim that names no symbolic dimension (a typo, or another model's) is
 * an error that lists the names there are. */
static void report_unused_dims(ImportCtx *ic, const Onnx__GraphProto *g) {
    const char *names[64];
    int n = symbolic_dims(g, names, 64);
    for (int b = 0; b < ic->opt->ndims; b++) {
        const char *want = ic->opt->dims[b].name;
        bool found = false;
        for (int j = 0; j < n && !found; j++)
            found = !strcmp(names[j], want);
        if (found)
            continue;
        StrBuf sb;
        sb_init(&sb);
        for (int j = 0; j < n; j++)
            sb_printf(&sb, "%s'%s'", j ? ", " : "", names[j]);
        diag_error(ic->d, NULL, "--dim %s: the model has no symbolic dimension of that name (%s%s)",
                   want, n ? "its symbolic dimensions: " : "it has none", sb_str(&sb));
        sb_free(&sb);
    }
}

/* ---- cleanup ------------------------------------------------------------- */

/* Drops nodes and constants nothing reaches from the outputs: the shape
 * subgraphs that were folded, and ONNX outputs nobody returns. */
static void drop_unreachable(Function *f) {
    Arena *a = f->module->arena;
    bool *live = arena_alloc_array(a, (size_t)(f->next_id ? f->next_id : 1), sizeof(bool));
    for (int i = 0; i < f->noutputs; i++)
        live[f->outputs[i]->def->id] = true;
    for (Node *n = f->last; n; n = n->prev)
        if (live[n->id])
            for (int i = 0; i < n->nops; i++)
                live[n->ops[i]->def->id] = true;
    for (Node *n = f->last, *prev; n; n = prev) {
        prev = n->prev;
        if (!live[n->id])
            graph_remove_node(f, n);
    }
    for (int i = f->nconsts - 1; i >= 0; i--)
        if (!live[f->consts[i]->id])
            graph_remove_node(f, f->consts[i]);
}

/* Initializers and Constant outputs print as %name when the name is a plain
 * identifier not already taken by a parameter or an earlier constant. */
static bool label_taken(const Function *f, int upto, const char *name) {
    for (int j = 0; j < f->nparams; j++)
        if (!strcmp(f->params[j]->name, name))
            return true;
    for (int j = 0; j < upto; j++)
        if (f->consts[j]->label && !strcmp(f->consts[j]->label, name))
            return true;
    return false;
}

/* A body's parameters print as %name too (the main function's inputs do,
 * from import_input), each name once. */
static void label_params(Function *f) {
    for (int i = 0; i < f->nparams; i++) {
        Node *p = f->params[i];
        bool taken = false;
        for (int j = 0; j < i && !taken; j++)
            taken = f->params[j]->label && !strcmp(f->params[j]->label, p->name);
        if (p->name[0] && !print_needs_quotes(p->name) && !taken)
            p->label = p->name;
    }
}

static void label_constants(Function *f) {
    for (int i = 0; i < f->nconsts; i++) {
        Node *c = f->consts[i];
        if (c->name[0] && !print_needs_quotes(c->name) && !label_taken(f, i, c->name))
            c->label = c->name;
    }
}

/* ---- entry points ---------------------------------------------------------- */

int onnx_default_opset(const Onnx__ModelProto *mp) {
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
        if (!o->domain || !o->domain[0] || !strcmp(o->domain, "ai.onnx"))
            return o->has_version ? (int)o->version : 1;
    }
    return 0;
}

/* protobuf-c asks of its allocator only what malloc gives (it initialises
 * what it allocates), so the large blocks, the weights' raw_data, are not
 * zeroed before it copies into them (a tenth of ResNet-18's import), and
 * they come from the module's arena: the main graph's initializers keep
 * them as their data (tensor_from_proto_owned) instead of a second copy.
 * The rest of the message is scratch. */
enum { PB_RAW_MIN = 16384 };

typedef struct PbArenas {
    Arena *scratch, *module;
} PbArenas;

static void *pb_alloc(void *ctx, size_t size) {
    PbArenas *a = ctx;
    return size >= PB_RAW_MIN ? arena_alloc_big(a->module, size)
                              : arena_alloc(a->scratch, size ? size : 1);
}

static void pb_free(void *ctx, void *p) {
    (void)ctx;
    (void)p;
}

/* protobuf-c unpacks nested messages by recursion, without a limit: a
 * GraphProto nested in attributes thousands deep would overflow the stack.
 * So the wire format is walked first, following only message-typed fields
 * (as the generated descriptors say), and nesting beyond PB_MAX_DEPTH is
 * refused. Malformed bytes are left for protobuf-c to report. */
enum { PB_MAX_DEPTH = 64 };

static bool pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    *v = 0;
    for (int shift = 0; *p < end && shift < 64; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return true;
    }
    return false;
}

bool pb_depth_ok(const ProtobufCMessageDescriptor *desc, const uint8_t *p, size_t len, int depth) {
    if (depth > PB_MAX_DEPTH)
        return false;
    const uint8_t *end = p + len;
    while (p < end) {
        uint64_t tag, n;
        if (!pb_varint(&p, end, &tag))
            return true;
        switch (tag & 7) {
        case 0:
            if (!pb_varint(&p, end, &n))
                return true;
            break;
        case 1:
            if (end - p < 8)
                return true;
            p += 8;
            break;
        case 5:
            if (end - p < 4)
                return true;
            p += 4;
            break;
        case 2: {
            if (!pb_varint(&p, end, &n) || n > (uint64_t)(end - p))
                return true;
            const ProtobufCFieldDescriptor *f =
                tag >> 3 <= UINT32_MAX
                    ? protobuf_c_message_descriptor_get_field(desc, (unsigned)(tag >> 3))
                    : NULL;
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE &&
                !pb_depth_ok(f->descriptor, p, (size_t)n, depth + 1))
                return false;
            p += n;
            break;
        }
        default:
            return true; /* groups: protobuf-c refuses them */
        }
    }
    return true;
}

/* `once`: g is imported once (the main graph; a body may be unrolled into
 * copies), so its initializers may own their raw_data. */
static void import_initializers(ImportCtx *ic, const Onnx__GraphProto *g, bool once) {
    Function *f = ic->fs.f;
    for (size_t i = 0; i < g->n_initializer; i++) {
        const Onnx__TensorProto *tp = g->initializer[i];
        const char *name = tp->name ? tp->name : "";
        const char *what = arena_printf(ic->d->arena, "initializer '%s'", name);
        Tensor *t = (once ? tensor_from_proto_owned : tensor_from_proto)(
            tp, ic->m->arena, ic->dir, budget_left(ic), what, ic->d);
        if (!t) {
            map_put(ic, name, &ic->poison);
            continue;
        }
        ic->tensor_bytes += tensor_bytes(t);
        map_put(ic, name, &graph_add_constant(f, name, t)->res[0]);
    }
}

/* ---- control flow ------------------------------------------------------------ */

/* A subgraph imported in place: its formal inputs are bound to `formals`
 * (none for an If's branch, which sees the outer scope only), its
 * initializers and nodes join the function under `scope` (every node's name
 * takes it when `scope_all`, so the copies of an unrolled body stay apart),
 * and outs receives its outputs. */
/* A run-time loop's carried lists (torch's list.append in a loop): formal
 * i of the body is formals[i] when that is set, and an output that is a
 * list lands in outs[i] (its value in the caller's outs stays NULL). */
typedef struct BodySeqs {
    OnnxSeq **formals, **outs;
} BodySeqs;

static bool import_body(OnnxNode *on, const Onnx__GraphProto *g, const char *what,
                        const char *scope, bool scope_all, Value *const *formals, int nformals,
                        Value **outs, const BodySeqs *bs) {
    ImportCtx *ic = on->ic;
    if (g->n_input != (size_t)nformals) {
        on_error(on, "its %s takes %zu inputs; the node gives it %d", what, g->n_input, nformals);
        return false;
    }
    for (int i = 0; i < nformals; i++)
        map_put_entry(ic, g->input[i]->name ? g->input[i]->name : "",
                      bs && bs->formals[i] ? NULL : formals[i], bs ? bs->formals[i] : NULL);
    int errors = ic->d->errors, nunsupported = ic->nunsupported;
    const char *outer = ic->scope;
    bool outer_all = ic->scope_all;
    ic->scope = scope;
    ic->scope_all = outer_all || scope_all;
    import_initializers(ic, g, false);
    for (size_t i = 0; i < g->n_node; i++)
        import_node(ic, g->node[i], (int)i);
    ic->scope = outer;
    ic->scope_all = outer_all;
    if (ic->d->errors > errors || ic->nunsupported > nunsupported)
        return false;
    for (size_t i = 0; i < g->n_output; i++) {
        const char *name = g->output[i]->name ? g->output[i]->name : "";
        Value *v = map_get(ic, name);
        if (v == &ic->poison)
            return false; /* its cause is reported */
        if (!v && map_get_seq(ic, name) && bs) {
            bs->outs[i] = map_get_seq(ic, name);
            outs[i] = NULL;
            continue;
        }
        if (!v && map_get_seq(ic, name)) {
            on_unsupported(on, "output '%s' of its %s is a sequence; glowc resolves sequences at "
                               "import, so only in a branch or loop known at compile time",
                           name, what);
            return false;
        }
        if (!v) {
            on_error(on, "output '%s' of its %s is not produced by any node", name, what);
            return false;
        }
        outs[i] = v;
    }
    return true;
}

static const Onnx__GraphProto *graph_attr(OnnxNode *on, const char *name) {
    const Onnx__AttributeProto *at = find_attr(on, name);
    if (!at || at->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH || !at->g) {
        on_error(on, "attribute '%s' (a graph) is missing", name);
        return NULL;
    }
    return at->g;
}

/* The refusal of a value only known at run time, naming the inputs it
 * depends on and how to specialise the model to them. */
static void refuse_run_time(OnnxNode *on, Value *v, const char *what, const char *supported) {
    StrBuf names;
    sb_init(&names);
    walk_inputs(on->ic, v, &names);
    bool many = strchr(sb_str(&names), ',') != NULL;
    on_unsupported(on, "%s is known only at run time (it depends on input%s %s); glowc imports %s: "
                       "give %s with --input to specialise the model",
                   what, many ? "s" : "", sb_str(&names), supported, many ? "them" : "it");
    sb_free(&names);
}

/* A scalar condition's truth, folded; false with an error when it does not fold. */
static bool fold_cond(OnnxNode *on, Value *c, const char *what, const char *supported, bool *out) {
    Tensor *t = fold_value(on->ic, c, 0);
    if (!t) {
        refuse_run_time(on, c, what, supported);
        return false;
    }
    if (tensor_numel(t) != 1) {
        on_error(on, "%s has %lld elements; it must have one", what, (long long)tensor_numel(t));
        return false;
    }
    *out = tensor_get_i64(t, 0) != 0;
    return true;
}

/* ---- regions: control flow at run time ---- */

/* Body `bi` of region node n, imported from g: parameters for its own
 * inputs (of `ftypes`), then one for each outer value it reads (r). The
 * importer's per-function state (folding cache, walk marks) is set aside
 * while it is read: node ids are per function. */
static Function *import_region_body(OnnxNode *on, const Onnx__GraphProto *g, const char *what,
                                    Node *n, int bi, Region *r, const Type *ftypes,
                                    int nformals, const BodySeqs *bs) {
    ImportCtx *ic = on->ic;
    Arena *a = ic->m->arena;
    if (g->n_input != (size_t)nformals) {
        on_error(on, "its %s takes %zu inputs; the node gives it %d", what, g->n_input, nformals);
        return NULL;
    }
    Function *b = function_new_body(n, bi);
    *r = (Region){.body = b, .outer = ic->fs.f, .nformals = nformals, .up = ic->fs.region};
    Value **formals = arena_alloc_array(a, (size_t)nformals + 1, sizeof(Value *));
    for (int i = 0; i < nformals; i++)
        formals[i] = &graph_add_param(b, g->input[i]->name ? g->input[i]->name : "",
                                      &ftypes[i])->res[0];
    FuncScope outer = ic->fs;
    ic->fs = (FuncScope){.f = b, .region = r};
    Value **outs = arena_alloc_array(a, g->n_output + 1, sizeof(Value *));
    const char **names = arena_alloc_array(a, g->n_output + 1, sizeof(char *));
    bool ok = import_body(on, g, what, on->name, false, formals, nformals, outs, bs);
    for (size_t i = 0; ok && i < g->n_output; i++) {
        names[i] = g->output[i]->name ? g->output[i]->name : "";
        if (!outs[i] && !(outs[i] = seq_loop_row(on, bs->outs[i], names[i])))
            ok = false; /* a carried list returns the row appended to it */
        else
            outs[i] = capture(ic, r, outs[i], names[i]); /* an outer value returned as is */
    }
    ic->fs = outer;
    if (!ok)
        return NULL;
    graph_set_outputs(b, (int)g->n_output, outs, names);
    drop_unreachable(b);
    label_params(b);
    label_constants(b);
    return b;
}

/* The region node's captured operands: the outer values its bodies read,
 * in order of first use over the bodies, appended to n's `nfixed` operands;
 * every body gets a parameter for each, in that order (a branch that does
 * not read one takes it unused), so the bodies have one signature. */
static void attach_captures(ImportCtx *ic, Node *n, int nfixed, Region *rs, int nr) {
    Arena *a = ic->m->arena;
    int total = 0, nu = 0;
    for (int k = 0; k < nr; k++)
        total += rs[k].n;
    Value **u = arena_alloc_array(a, (size_t)total + 1, sizeof(Value *));
    for (int k = 0; k < nr; k++)
        for (int i = 0; i < rs[k].n; i++) {
            int j = 0;
            while (j < nu && u[j] != rs[k].outer_vals[i])
                j++;
            if (j == nu)
                u[nu++] = rs[k].outer_vals[i];
        }
    for (int k = 0; k < nr; k++) {
        Function *b = rs[k].body;
        Node **params = arena_alloc_array(a, (size_t)(rs[k].nformals + nu) + 1, sizeof(Node *));
        for (int i = 0; i < rs[k].nformals; i++)
            params[i] = b->params[i];
        for (int j = 0; j < nu; j++) {
            Node *p = NULL;
            for (int i = 0; i < rs[k].n && !p; i++)
                if (rs[k].outer_vals[i] == u[j])
                    p = rs[k].params[i];
            params[rs[k].nformals + j] = p ? p : graph_add_param(b, "unused", &u[j]->type);
        }
        b->params = params;
        b->nparams = rs[k].nformals + nu;
    }
    Value **ops = arena_alloc_array(a, (size_t)(nfixed + nu) + 1, sizeof(Value *));
    for (int i = 0; i < nfixed; i++)
        ops[i] = n->ops[i];
    for (int j = 0; j < nu; j++)
        ops[nfixed + j] = u[j];
    n->ops = ops;
    n->nops = nfixed + nu;
}

/* Branch k of if node n does not import on the shapes the model is compiled
 * for (an exporter's branch for another input size, as silero VAD's 8 kHz
 * branch given 16 kHz chunks): its body becomes a trap of the other branch's
 * result types, which says why if it is ever taken. A branch that uses an
 * unsupported operator is never trapped: that is reported. */
static void trap_body(OnnxNode *on, Node *n, int k, Region *r, const Function *other,
                      const DiagList *said) {
    Function *b = function_new_body(n, k);
    *r = (Region){.body = b, .outer = on->ic->fs.f, .up = on->ic->fs.region};
    Node *t = graph_add_node(b, NK_TRAP, 0, NULL, other->noutputs);
    t->name = on->name;
    for (int i = 0; i < other->noutputs; i++)
        t->res[i].type = other->outputs[i]->type;
    const char *why = said->head ? said->head->msg : "it does not import";
    const char *where = said->head && said->head->where ? said->head->where : on->where;
    node_set_str(t, AK_message,
                 arena_printf(on->ic->m->arena, "its %s was taken, which does not fit the shapes "
                              "the model was compiled for (%s: %s)",
                              k ? "else_branch" : "then_branch", where, why));
    Arena *a = on->ic->m->arena;
    Value **outs = arena_alloc_array(a, (size_t)other->noutputs + 1, sizeof(Value *));
    for (int i = 0; i < other->noutputs; i++)
        outs[i] = &t->res[i];
    graph_set_outputs(b, other->noutputs, outs, other->output_names);
    on_note(on, "its %s does not fit the shapes the model is compiled for (%s); taking it at run "
                "time is an error", k ? "else_branch" : "then_branch", why);
}

/* If on a condition known only at run time: an if node whose bodies are the
 * two branches. */
static bool import_if_region(OnnxNode *on, Value *c) {
    ImportCtx *ic = on->ic;
    const Onnx__GraphProto *g[2] = {graph_attr(on, "then_branch"), graph_attr(on, "else_branch")};
    if (!g[0] || !g[1])
        return false;
    for (int k = 0; k < 2; k++)
        if (g[k]->n_output != (size_t)on->nout) {
            on_error(on, "its %s has %zu outputs; the node has %d",
                     k ? "else_branch" : "then_branch", g[k]->n_output, on->nout);
            return false;
        }
    Node *n = on_node(on, NK_IF, 1, &c, on->nout);
    Region r[2];
    DiagList said[2];
    DiagList *d = ic->d;
    bool ok[2], any_unsupported = ic->any_unsupported;
    int nunsupported = ic->nunsupported;
    for (int k = 0; k < 2; k++) {
        diag_init(&said[k], d->file);
        ic->d = &said[k];
        ok[k] = import_region_body(on, g[k], k ? "else_branch" : "then_branch", n, k, &r[k], NULL,
                                   0, NULL);
        ic->d = d;
    }
    bool unsupported = ic->any_unsupported != any_unsupported || ic->nunsupported != nunsupported;
    int trap = !unsupported && ok[0] != ok[1] ? (ok[0] ? 1 : 0) : -1;
    for (int k = 0; k < 2; k++)
        if (k != trap)
            diag_append(d, &said[k]);
    if (trap >= 0)
        trap_body(on, n, trap, &r[trap], n->bodies[1 - trap], &said[trap]);
    diag_free(&said[0]);
    diag_free(&said[1]);
    if (!(ok[0] && ok[1]) && trap < 0) { /* both failed, or an unsupported operator */
        graph_remove_node(ic->fs.f, n);
        return false;
    }
    attach_captures(ic, n, 1, r, 2);
    return on_done(on, n);
}

/* A bound on the iterations of a loop that runs at run time: M when it is a
 * constant or has a bound from the importer's value ranges (the sizes of
 * bounded-dynamic values); -1 with an error naming the node, the scan
 * output that needs one and the value that would give it. */
static int64_t loop_trip_bound(OnnxNode *on, const Onnx__GraphProto *g, int oi,
                               const char *what) {
    Value *m = on_in(on, 0);
    const char *out = g->output[oi]->name ? g->output[oi]->name : "";
    const char *mname = on->proto->n_input > 0 && on->proto->input[0][0] ? on->proto->input[0]
                                                                         : "";
    int64_t lo, hi;
    int k;
    Tensor *t = m ? fold_value(on->ic, m, 0) : NULL;
    if (t && tensor_numel(t) == 1)
        hi = tensor_get_i64(t, 0);
    else if (!(m && on_value_range(on, m, &lo, &hi, 1, &k) && k == 1))
        hi = -1;
    if (!m) {
        on_unsupported(on, "its %s '%s' needs a bound on the number of iterations for its memory, "
                     "and the loop has none: give the trip count M (input 0) a constant or a "
                     "bounded value", what, out);
        return -1;
    }
    if (hi < 0 || hi == INT64_MAX) {
        on_unsupported(on, "its %s '%s' needs a bound on the number of iterations for its memory; "
                     "the trip count M ('%s') %s", what, out, mname,
                 hi == INT64_MAX ? "is the largest i64 (no bound): give it a smaller constant"
                                 : "is known only at run time and has no bound: it must be a "
                                   "constant or come from the sizes of values (Shape of a "
                                   "bounded-dynamic value, and arithmetic on it)");
        return -1;
    }
    return hi;
}

/* Scan output k of a run-time loop as a carried value: it enters as an
 * empty [?<=bound x row] (scan_row of a one-row zero constant and 0), the
 * body's parameter `acc` takes it, and the body returns scan_row(acc,
 * iteration, row). */
static bool loop_scan_carried(OnnxNode *on, Node *loop, Function *b, int out, int64_t bound,
                              Value **init, Node **param) {
    Arena *a = on->ic->m->arena;
    Value *row = b->outputs[out];
    Type rt = row->type;
    char ty[TYPE_STR_MAX];
    if (type_is_dynamic(&rt) || rt.rank + 1 > MAX_RANK || rt.elem == ELEM_STR) {
        on_unsupported(on, "its scan output '%s' is %s at each iteration; glowc stacks only "
                           "static numeric values in a loop that runs at run time",
                       b->output_names[out], type_str(&rt, ty));
        return false;
    }
    Type acc = {.elem = rt.elem, .rank = rt.rank + 1, .dyn = 1};
    acc.dims[0] = bound;
    memcpy(acc.dims + 1, rt.dims, (size_t)rt.rank * sizeof(int64_t));
    Type one = acc;
    one.dims[0] = 1;
    one.dyn = 0;
    Tensor *z = on_tensor(on, &one);
    Value *zero = on_scalar_const(on, ELEM_I64, 0);
    if (!z || !zero)
        return false;
    Value *iops[2] = {on_const(on, z), zero};
    Node *e = graph_insert_before(on->f, loop, NK_SCAN_ROW, 2, iops, 1); /* loop reads it */
    e->name = on->name;
    e->res[0].type = acc;
    if (!(*init = on_tmp(on, e)))
        return false;
    if (*param) /* a carried list's: typed now that its row is known */
        (*param)->res[0].type = acc;
    else
        *param = graph_add_param(b, arena_printf(a, "%s.acc", b->output_names[out]), &acc);
    Value *ops[3] = {&(*param)->res[0], &b->params[0]->res[0], row};
    Node *put = graph_add_node(b, NK_SCAN_ROW, 3, ops, 1);
    put->name = on->name;
    put->res[0].type = acc;
    DiagList said;
    diag_init(&said, on->d->file);
    bool ok = infer_node(put, &said);
    diag_free(&said);
    if (!ok) {
        on_error(on, "its scan output '%s' does not stack", b->output_names[out]);
        return false;
    }
    b->outputs[out] = &put->res[0];
    return true;
}

/* Loop whose trip count or condition is known only at run time (or too long
 * to unroll): a loop node whose body is the Loop's. Its scan outputs are
 * carried values the body grows by a row (loop_scan_carried), typed at a
 * bound on the trip count: bounded-dynamic results written at the run-time
 * length. */
static bool import_loop_region(OnnxNode *on, const Onnx__GraphProto *g, int n, int nscan) {
    ImportCtx *ic = on->ic;
    Arena *a = ic->m->arena;
    int64_t bound = 0;
    /* Carried lists (a list.append in the body) grow like scan outputs. */
    BodySeqs bs = {arena_alloc_array(a, (size_t)n + 2, sizeof(OnnxSeq *)),
                   arena_alloc_array(a, g->n_output + 1, sizeof(OnnxSeq *))};
    int nlists = 0, first_list = -1;
    for (int j = 0; j < n; j++)
        if (on_seq_in(on, 2 + j)) {
            if (!(bs.formals[2 + j] = seq_loop_formal(on, on_seq_in(on, 2 + j), j)))
                return false;
            first_list = nlists++ ? first_list : 1 + j;
        }
    if ((nscan || nlists) &&
        (bound = loop_trip_bound(on, g, nscan ? 1 + n : first_list, nscan ? "scan output" : "list")) < 0)
        return false;
    int nfixed = n + 2 + nscan;
    Value **ops = arena_alloc_array(a, (size_t)nfixed, sizeof(Value *));
    Type *ftypes = arena_alloc_array(a, (size_t)n + 2, sizeof(Type));
    ops[0] = on_in(on, 0);
    if (!ops[0]) { /* no trip count: as many as the condition lets */
        Type t = type_scalar(ELEM_I64);
        Tensor *x = on_tensor(on, &t);
        if (!x)
            return false;
        tensor_set_i64(x, 0, INT64_MAX);
        ops[0] = on_const(on, x);
    }
    ops[1] = on_in(on, 1) ? on_in(on, 1) : on_scalar_const(on, ELEM_BOOL, 1);
    if (!ops[1])
        return false;
    ftypes[0] = type_scalar(ELEM_I64);
    ftypes[1] = type_scalar(ELEM_BOOL);
    for (int j = 0; j < n; j++) {
        if (bs.formals[2 + j]) { /* typed once its row is known */
            ftypes[2 + j] = type_scalar(ELEM_I64);
            continue;
        }
        if (!(ops[2 + j] = on_in(on, 2 + j))) {
            on_error(on, "loop-carried input %d is missing", 2 + j);
            return false;
        }
        ftypes[2 + j] = ops[2 + j]->type;
    }
    Node *node = on_node(on, NK_LOOP, nfixed, ops, n + nscan);
    Region r;
    Function *b = import_region_body(on, g, "body", node, 0, &r, ftypes, n + 2, &bs);
    if (!b) {
        graph_remove_node(ic->fs.f, node);
        return false;
    }
    for (int j = 0; j < n; j++) {
        if (!bs.formals[2 + j])
            continue;
        if (!bs.outs[1 + j]) {
            on_error(on, "its body returns a tensor as carried value %d, which enters as a list",
                     j);
            graph_remove_node(ic->fs.f, node);
            return false;
        }
        if (!loop_scan_carried(on, node, b, 1 + j, bound, &node->ops[2 + j], &b->params[2 + j])) {
            graph_remove_node(ic->fs.f, node);
            return false;
        }
    }
    if (nscan) {
        /* The accumulators are parameters after the carried values, before
         * the captured ones (attach_captures appends those). */
        int ncap = b->nparams - (n + 2);
        Node **params = arena_alloc_array(a, (size_t)(b->nparams + nscan) + 1, sizeof(Node *));
        memcpy(params, b->params, (size_t)(n + 2) * sizeof(Node *));
        memcpy(params + n + 2 + nscan, b->params + n + 2, (size_t)ncap * sizeof(Node *));
        for (int k = 0; k < nscan; k++)
            if (!loop_scan_carried(on, node, b, 1 + n + k, bound, &node->ops[n + 2 + k],
                                   &params[n + 2 + k])) {
                graph_remove_node(ic->fs.f, node);
                return false;
            }
        b->params = params;
        b->nparams = n + 2 + nscan + ncap;
        r.nformals += nscan;
    }
    attach_captures(ic, node, nfixed, &r, 1);
    if (!on_done(on, node))
        return false;
    for (int j = 0; j < n; j++)
        if (bs.formals[2 + j])
            on_bind_seq(on, j, seq_loop_result(on, &node->res[j]));
    return true;
}

/* If. Exporters emit an If mostly on something fixed once the model is
 * compiled: a shape (a rank or a length compared with a constant), or an
 * input such as a sample rate that a deployment fixes. When the condition
 * folds to a constant (initializers, shapes, inputs given with --input), the
 * taken branch is imported in the If's place: its initializers and nodes join
 * the graph, seeing the outer scope's values, and its outputs become the
 * If's. Nested Ifs fold the same way. A condition known only at run time
 * makes an if node holding both branches as bodies. */
bool import_if(OnnxNode *on) {
    Value *c = on_in(on, 0);
    if (!c) {
        on_error(on, "input 0 (cond) is missing");
        return false;
    }
    if (!fold_value(on->ic, c, 0))
        return import_if_region(on, c);
    bool taken;
    if (!fold_cond(on, c, "the condition", "an If whose condition is known at compile time",
                   &taken))
        return false;
    const char *which = taken ? "then_branch" : "else_branch";
    const Onnx__GraphProto *g = graph_attr(on, which);
    if (!g)
        return false;
    if (g->n_output != (size_t)on->nout) {
        on_error(on, "its %s has %zu outputs; the node has %d", which, g->n_output, on->nout);
        return false;
    }
    Value **outs = arena_alloc_array(on->ic->m->arena, g->n_output + 1, sizeof(Value *));
    if (!import_body(on, g, which, on->name, false, NULL, 0, outs, NULL))
        return false;
    for (int i = 0; i < on->nout; i++)
        on_bind(on, i, outs[i]);
    return true;
}

/* ---- unrolled loops ---- */

/* A loop is unrolled at import when its trip count is known then (from
 * initializers, shapes, or inputs given with --input), as an If on a known
 * condition is replaced by its branch: each iteration's copy of the body
 * joins the graph, and the passes see straight-line code. A bound keeps a
 * long loop from swamping the graph. */
enum { UNROLL_MAX_NODES = 100000 };

static bool unroll_fits(const Onnx__GraphProto *g, int64_t iters) {
    int64_t per = (int64_t)g->n_node + (int64_t)g->n_initializer + 2;
    return iters <= UNROLL_MAX_NODES / per;
}

/* The refusal of a loop too long to unroll whose scan outputs keep it from
 * running as a region. */
static bool unroll_fits_say(OnnxNode *on, const Onnx__GraphProto *g, int64_t iters) {
    int64_t per = (int64_t)g->n_node + (int64_t)g->n_initializer + 2;
    if (!unroll_fits(g, iters)) {
        on_unsupported(on, "the loop runs %lld times; glowc unrolls loops whose trip count is known "
                           "at compile time, up to %d body nodes in all (this one needs %lld)",
                       (long long)iters, UNROLL_MAX_NODES, (long long)iters * (per - 2));
        return false;
    }
    return true;
}

/* x's index i along axis, without that axis. */
static Value *take_index(OnnxNode *on, Value *x, int axis, int64_t i) {
    const Type *t = &x->type;
    int64_t s[MAX_RANK], e[MAX_RANK], st[MAX_RANK];
    for (int k = 0; k < t->rank; k++) {
        s[k] = k == axis ? i : 0;
        e[k] = k == axis ? i + 1 : t->dims[k];
        st[k] = 1;
    }
    Node *sl = on_node(on, NK_SLICE, 1, &x, 1);
    node_set_ints(sl, AK_starts, t->rank, s);
    node_set_ints(sl, AK_ends, t->rank, e);
    node_set_ints(sl, AK_steps, t->rank, st);
    Value *v = on_tmp(on, sl);
    if (!v)
        return NULL;
    Node *sq = on_node(on, NK_SQUEEZE, 1, &v, 1);
    int64_t ax = axis;
    node_set_ints(sq, AK_axes, 1, &ax);
    return on_tmp(on, sq);
}

/* vals[0..n) stacked along a new axis (in reverse order when `reverse`). */
static Value *stack(OnnxNode *on, Value **vals, int64_t n, int axis, bool reverse) {
    Value **parts = arena_alloc_array(on->ic->m->arena, (size_t)n, sizeof(Value *));
    int64_t ax = axis;
    for (int64_t i = 0; i < n; i++) {
        Value *v = vals[reverse ? n - 1 - i : i];
        if (axis > v->type.rank) {
            on_error(on, "scan output axis %d is beyond the rank %d of its iterations' values",
                     axis, v->type.rank);
            return NULL;
        }
        Node *u = on_node(on, NK_UNSQUEEZE, 1, &v, 1);
        node_set_ints(u, AK_axes, 1, &ax);
        if (!(parts[i] = on_tmp(on, u)))
            return NULL;
    }
    if (n == 1)
        return parts[0];
    Node *c = on_node(on, NK_CONCAT, (int)n, parts, 1);
    node_set_int(c, AK_axis, axis);
    return on_tmp(on, c);
}

/* Loop(M, cond, v...) with body (iteration, cond, v...) -> (cond, v..., scan...):
 * runs while the iteration is below M (when given) and cond holds, both
 * checked before each iteration; the scan outputs are the iterations' values
 * stacked on a new leading axis. */
bool import_loop(OnnxNode *on) {
    ImportCtx *ic = on->ic;
    if (on->nin < 2) {
        on_error(on, "it takes at least 2 inputs (M and cond, which may be empty); it has %d",
                 on->nin);
        return false;
    }
    const Onnx__GraphProto *g = graph_attr(on, "body");
    if (!g)
        return false;
    int n = on->nin - 2;
    int nscan = (int)g->n_output - 1 - n;
    if (nscan < 0 || n + nscan != on->nout) {
        on_error(on, "its body has %zu outputs; with %d loop-carried values and %d outputs it must "
                     "have %d", g->n_output, n, on->nout, 1 + on->nout);
        return false;
    }
    int64_t trip = INT64_MAX;
    Value *m = on_in(on, 0), *c = on_in(on, 1);
    for (int j = 0; j < n; j++)
        if (on_seq_in(on, 2 + j)) /* a list.append in a loop: grown at run time */
            return import_loop_region(on, g, n, nscan);
    if (m && !fold_value(ic, m, 0))
        return import_loop_region(on, g, n, nscan);
    if (c && !fold_value(ic, c, 0))
        return import_loop_region(on, g, n, nscan);
    if (m) {
        Tensor *t = fold_value(ic, m, 0);
        if (tensor_numel(t) != 1) {
            on_error(on, "the trip count M has %lld elements; it must have one",
                     (long long)tensor_numel(t));
            return false;
        }
        trip = tensor_get_i64(t, 0);
    }
    bool cond = true;
    if (c && !fold_cond(on, c, "the condition",
                        "a Loop whose trip count or condition is known at compile time", &cond))
        return false;
    if (trip != INT64_MAX && trip > 0 && cond && !unroll_fits(g, trip))
        return import_loop_region(on, g, n, nscan);
    Arena *a = ic->m->arena;
    Value **carried = arena_alloc_array(a, (size_t)n + 1, sizeof(Value *));
    for (int j = 0; j < n; j++)
        if (!(carried[j] = on_in(on, 2 + j))) {
            on_error(on, "loop-carried input %d is missing", 2 + j);
            return false;
        }
    int64_t cap = 16, iters = 0;
    Value ***scans = arena_alloc_array(a, (size_t)nscan + 1, sizeof(Value **));
    for (int k = 0; k < nscan; k++)
        scans[k] = arena_alloc_array(a, (size_t)cap, sizeof(Value *));
    Value **formals = arena_alloc_array(a, (size_t)n + 2, sizeof(Value *));
    Value **outs = arena_alloc_array(a, g->n_output + 1, sizeof(Value *));
    for (; iters < trip && cond; iters++) {
        if (trip == INT64_MAX && !unroll_fits_say(on, g, iters + 1))
            return false;
        formals[0] = on_scalar_const(on, ELEM_I64, (double)iters);
        formals[1] = on_scalar_const(on, ELEM_BOOL, 1);
        if (!formals[0] || !formals[1])
            return false;
        for (int j = 0; j < n; j++)
            formals[2 + j] = carried[j];
        const char *scope = arena_printf(a, "%s[%lld]", on->name, (long long)iters);
        if (!import_body(on, g, "body", scope, true, formals, n + 2, outs, NULL))
            return false;
        if (!fold_cond(on, outs[0], "the body's condition",
                       "a Loop whose condition is known at compile time", &cond))
            return false;
        for (int j = 0; j < n; j++)
            carried[j] = outs[1 + j];
        if (iters == cap) {
            for (int k = 0; k < nscan; k++) {
                Value **grown = arena_alloc_array(a, (size_t)cap * 2, sizeof(Value *));
                memcpy(grown, scans[k], (size_t)cap * sizeof(Value *));
                scans[k] = grown;
            }
            cap *= 2;
        }
        for (int k = 0; k < nscan; k++)
            scans[k][iters] = outs[1 + n + k];
    }
    if (nscan && iters == 0) {
        on_unsupported(on, "the loop runs no iteration, so its scan outputs are empty with a shape "
                           "only the body's declared types could give");
        return false;
    }
    for (int j = 0; j < n; j++)
        on_bind(on, j, carried[j]);
    for (int k = 0; k < nscan; k++) {
        Value *v = stack(on, scans[k], iters, 0, false);
        if (!v)
            return false;
        on_bind(on, n + k, v);
    }
    return true;
}

/* An axis attribute list (scan_input_axes, ...): `count` entries, each
 * normalised against ranks[i]; absent, all zero. */
static bool scan_axes(OnnxNode *on, const char *name, int count, const int *ranks, int64_t *out) {
    int64_t v[64];
    int got = on_attr_ints(on, name, v, 64);
    if (got >= 0 && got != count) {
        on_error(on, "attribute '%s' has %d entries; it must have %d", name, got, count);
        return false;
    }
    for (int i = 0; i < count; i++) {
        int64_t x = got < 0 ? 0 : v[i];
        if (ranks) {
            if (x < -ranks[i] || x >= ranks[i]) {
                on_error(on, "attribute '%s'[%d] = %lld is outside the rank %d", name, i,
                         (long long)x, ranks[i]);
                return false;
            }
            if (x < 0)
                x += ranks[i];
        } else if (x != 0 && x != 1) {
            on_error(on, "attribute '%s'[%d] = %lld must be 0 (forward) or 1 (reverse)", name, i,
                     (long long)x);
            return false;
        }
        out[i] = x;
    }
    return true;
}

/* One Scan over `states` and `xs` (the scanned inputs, already without a
 * batch axis): the body runs once per index of the scanned axis, carrying
 * the states; results: the final states, then the scan outputs stacked. */
static bool scan_run(OnnxNode *on, const Onnx__GraphProto *g, int n, int m, Value **states,
                     Value **xs, const int64_t *in_axes, const int64_t *in_dirs,
                     const int64_t *out_axes_attr, bool out_axes_given, const int64_t *out_dirs,
                     const char *scope, Value **results) {
    Arena *a = on->ic->m->arena;
    int nscan = (int)g->n_output - n;
    int64_t len = -1;
    for (int i = 0; i < m; i++) {
        int64_t d = xs[i]->type.dims[in_axes[i]];
        if (len >= 0 && d != len) {
            on_error(on, "scan input %d has %lld iterations along axis %lld; the first has %lld", i,
                     (long long)d, (long long)in_axes[i], (long long)len);
            return false;
        }
        len = d;
    }
    if (len <= 0) {
        on_unsupported(on, "the scan runs no iteration");
        return false;
    }
    if (!unroll_fits_say(on, g, len))
        return false;
    Value **formals = arena_alloc_array(a, (size_t)(n + m), sizeof(Value *));
    Value **outs = arena_alloc_array(a, g->n_output + 1, sizeof(Value *));
    Value ***scans = arena_alloc_array(a, (size_t)nscan + 1, sizeof(Value **));
    for (int k = 0; k < nscan; k++)
        scans[k] = arena_alloc_array(a, (size_t)len, sizeof(Value *));
    for (int64_t it = 0; it < len; it++) {
        for (int j = 0; j < n; j++)
            formals[j] = states[j];
        for (int i = 0; i < m; i++) {
            int64_t at = in_dirs[i] ? len - 1 - it : it;
            if (!(formals[n + i] = take_index(on, xs[i], (int)in_axes[i], at)))
                return false;
        }
        const char *s = arena_printf(a, "%s[%lld]", scope, (long long)it);
        if (!import_body(on, g, "body", s, true, formals, n + m, outs, NULL))
            return false;
        for (int j = 0; j < n; j++)
            states[j] = outs[j];
        for (int k = 0; k < nscan; k++)
            scans[k][it] = outs[n + k];
    }
    for (int j = 0; j < n; j++)
        results[j] = states[j];
    for (int k = 0; k < nscan; k++) {
        int rank = scans[k][0]->type.rank + 1;
        int64_t ax = out_axes_given ? out_axes_attr[k] : 0;
        if (ax < -rank || ax >= rank) {
            on_error(on, "scan_output_axes[%d] = %lld is outside the rank %d", k, (long long)ax,
                     rank);
            return false;
        }
        if (ax < 0)
            ax += rank;
        if (!(results[n + k] = stack(on, scans[k], len, (int)ax, out_dirs[k] != 0)))
            return false;
    }
    return true;
}

/* Opset 8's Scan: every input has a leading batch axis; each batch element
 * is scanned along its axis 1 (axis 0 once the batch axis is taken off) and
 * the results are stacked back on the batch axis. */
static bool scan_batched(OnnxNode *on, const Onnx__GraphProto *g, int n, int m, Value **states,
                         Value **xs, const int64_t *in_dirs, const int64_t *out_dirs,
                         Value **results) {
    Arena *a = on->ic->m->arena;
    int nres = on->nout;
    int64_t batch = xs[0]->type.dims[0];
    for (int i = 0; i < n + m; i++) {
        Value *v = i < n ? states[i] : xs[i - n];
        if (v->type.rank < 1 || v->type.dims[0] != batch) {
            on_error(on, "input %d has no batch axis of %lld (opset 8's Scan batches every input)",
                     1 + i, (long long)batch);
            return false;
        }
    }
    Value *lens = on_in(on, 0);
    if (lens) {
        Tensor *t = fold_value(on->ic, lens, 0);
        if (!t) {
            refuse_run_time(on, lens, "sequence_lens", "a Scan whose sequence lengths are known");
            return false;
        }
        int64_t full = xs[0]->type.rank > 1 ? xs[0]->type.dims[1] : 0;
        for (int64_t b = 0; b < tensor_numel(t); b++)
            if (tensor_get_i64(t, b) != full) {
                on_unsupported(on, "sequence_lens[%lld] is %lld, shorter than the scanned axis (%lld): "
                                   "glowc scans whole sequences", (long long)b,
                               (long long)tensor_get_i64(t, b), (long long)full);
                return false;
            }
    }
    int64_t axes[64] = {0};
    Value **st = arena_alloc_array(a, (size_t)n + 1, sizeof(Value *));
    Value **xb = arena_alloc_array(a, (size_t)m, sizeof(Value *));
    Value ***per = arena_alloc_array(a, (size_t)nres + 1, sizeof(Value **));
    for (int i = 0; i < nres; i++)
        per[i] = arena_alloc_array(a, (size_t)batch, sizeof(Value *));
    Value **res = arena_alloc_array(a, (size_t)nres + 1, sizeof(Value *));
    for (int64_t b = 0; b < batch; b++) {
        for (int j = 0; j < n; j++)
            if (!(st[j] = take_index(on, states[j], 0, b)))
                return false;
        for (int i = 0; i < m; i++)
            if (!(xb[i] = take_index(on, xs[i], 0, b)))
                return false;
        const char *scope = arena_printf(a, "%s<%lld>", on->name, (long long)b);
        if (!scan_run(on, g, n, m, st, xb, axes, in_dirs, axes, false, out_dirs, scope, res))
            return false;
        for (int i = 0; i < nres; i++)
            per[i][b] = res[i];
    }
    for (int i = 0; i < nres; i++)
        if (!(results[i] = stack(on, per[i], batch, 0, false)))
            return false;
    return true;
}

/* Scan: opset 9 and later scan along given axes; opset 8 has a leading
 * batch axis on every input, scanning axis 1 of each batch element, and an
 * optional sequence_lens (which must then be the full length everywhere). */
bool import_scan(OnnxNode *on) {
    Arena *a = on->ic->m->arena;
    const Onnx__GraphProto *g = graph_attr(on, "body");
    if (!g)
        return false;
    bool v8 = on->opset < 9;
    int first = v8 ? 1 : 0;
    int m = (int)on_attr_int(on, "num_scan_inputs", -1);
    int total = on->nin - first;
    if (m < 1 || m > total || m > 64) {
        on_error(on, "num_scan_inputs is %d; it must be between 1 and the %d inputs", m, total);
        return false;
    }
    int n = total - m, nscan = (int)g->n_output - n;
    if (nscan < 0 || n + nscan != on->nout || nscan > 64) {
        on_error(on, "its body has %zu outputs; with %d states and %d outputs it must have %d",
                 g->n_output, n, on->nout, on->nout);
        return false;
    }
    Value **states = arena_alloc_array(a, (size_t)n + 1, sizeof(Value *));
    Value **xs = arena_alloc_array(a, (size_t)m, sizeof(Value *));
    int ranks[64];
    for (int i = 0; i < total; i++) {
        Value *v = on_in(on, first + i);
        if (!v) {
            on_error(on, "input %d is missing", first + i);
            return false;
        }
        if (i < n)
            states[i] = v;
        else
            xs[i - n] = v;
    }
    int64_t in_axes[64], in_dirs[64], out_axes[64], out_dirs[64];
    for (int i = 0; i < m; i++)
        ranks[i] = xs[i]->type.rank - (v8 ? 1 : 0);
    if (!scan_axes(on, v8 ? "directions" : "scan_input_directions", m, NULL, in_dirs) ||
        !scan_axes(on, "scan_output_directions", nscan, NULL, out_dirs))
        return false;
    if (v8) {
        for (int i = 0; i < m; i++)
            in_axes[i] = 0;
    } else if (!scan_axes(on, "scan_input_axes", m, ranks, in_axes)) {
        return false;
    }
    for (int i = 0; i < m; i++)
        if (ranks[i] < 1) {
            on_error(on, "scan input %d has no axis to scan", i);
            return false;
        }
    int64_t raw[64];
    int got = on_attr_ints(on, "scan_output_axes", raw, 64);
    if (got >= 0 && got != nscan) {
        on_error(on, "attribute 'scan_output_axes' has %d entries; it must have %d", got, nscan);
        return false;
    }
    for (int k = 0; k < nscan; k++)
        out_axes[k] = got < 0 ? 0 : raw[k];
    Value **results = arena_alloc_array(a, (size_t)on->nout + 1, sizeof(Value *));
    if (!v8) {
        if (!scan_run(on, g, n, m, states, xs, in_axes, in_dirs, out_axes, got >= 0, out_dirs,
                      on->name, results))
            return false;
    } else if (!scan_batched(on, g, n, m, states, xs, in_dirs, out_dirs, results)) {
        return false;
    }
    for (int i = 0; i < on->nout; i++)
        on_bind(on, i, results[i]);
    return true;
}

static bool import_graph(ImportCtx *ic, const Onnx__GraphProto *g) {
    Function *f = ic->fs.f;
    import_initializers(ic, g, true);
    UnboundDim unbound[32];
    int nunbound = 0;
    for (size_t i = 0; i < g->n_input; i++) {
        const Onnx__ValueInfoProto *vi = g->input[i];
        if (!vi->name || map_get(ic, vi->name))
            continue; /* an initializer also listed as input (IR < 4) */
        if (!import_input(ic, vi, unbound, &nunbound))
            map_put(ic, vi->name ? vi->name : "", &ic->poison);
    }
    report_unbound(ic, unbound, nunbound);
    report_unused_dims(ic, g);
    ic->known_const = arena_alloc_array(ic->m->arena, (size_t)f->nparams + 1, sizeof(Value *));
    for (size_t i = 0; i < g->n_node; i++)
        import_node(ic, g->node[i], (int)i);
    report_unsupported(ic);
    if (diag_has_errors(ic->d))
        return false;
    Value **outs = arena_alloc_array(ic->m->arena, g->n_output + 1, sizeof(Value *));
    const char **names = arena_alloc_array(ic->m->arena, g->n_output + 1, sizeof(char *));
    for (size_t i = 0; i < g->n_output; i++) {
        names[i] = g->output[i]->name ? g->output[i]->name : "";
        if (map_get_seq(ic, names[i])) {
            diag_error(ic->d, NULL, "graph output '%s' is a sequence; glowc resolves sequences "
                       "at import and returns tensors only", names[i]);
            ic->any_unsupported = true;
            return false;
        }
        outs[i] = map_get(ic, names[i]);
        if (!outs[i] || outs[i] == &ic->poison) {
            diag_error(ic->d, NULL, "graph output '%s' is not produced by any node", names[i]);
            return false;
        }
    }
    if (g->n_output == 0) {
        diag_error(ic->d, NULL, "the graph has no outputs");
        return false;
    }
    graph_set_outputs(f, (int)g->n_output, outs, names);
    drop_unreachable(f);
    label_constants(f);
    return true;
}

Module *onnx_import_buffer(const void *data, size_t len, const char *path,
                           const ImportOptions *opt, DiagList *d) {
    ImportOptions none = {0};
    if (!opt)
        opt = &none;
    if (opt->unsupported)
        *opt->unsupported = false;
    Arena *scratch = arena_new();
    Module *m = module_new(path);
    if (!scratch || !m) {
        diag_error(d, NULL, "out of memory");
        arena_destroy(scratch);
        module_destroy(m);
        return NULL;
    }
    /* Any allocation failure below lands here; both arenas own everything. */
    jmp_buf oom;
    if (setjmp(oom)) {
        diag_error(d, NULL, "out of memory while importing");
        arena_destroy(scratch);
        module_destroy(m);
        return NULL;
    }
    arena_set_oom_handler(scratch, &oom);
    arena_set_oom_handler(m->arena, &oom);
    PbArenas arenas = {scratch, m->arena};
    ProtobufCAllocator alloc = {pb_alloc, pb_free, &arenas};
    bool shallow = pb_depth_ok(&onnx__model_proto__descriptor, data, len, 0);
    Onnx__ModelProto *mp = shallow ? onnx__model_proto__unpack(&alloc, len, data) : NULL;
    bool ok = mp && mp->graph;
    if (!ok)
        diag_error(d, NULL, "not a valid ONNX model (%s)",
                   !shallow ? "messages nested more than 64 deep"
                   : mp     ? "it has no graph"
                            : "truncated or corrupted protobuf");
    ImportCtx ic = {.d = d, .opt = opt, .m = m};
    if (ok) {
        ic.opset = onnx_default_opset(mp);
        if (ic.opset > 18) {
            diag_error(d, NULL, "opset %d of the default domain is newer than glowc knows (1 to 18)",
                       ic.opset);
            ok = false;
        }
    }
    if (ok) {
        ic.fs.f = function_new(m, "main");
        const char *slash = strrchr(path, '/');
        ic.dir = slash ? arena_strndup(m->arena, path, (size_t)(slash - path)) : ".";
        int errors_before = d->errors;
        ok = import_graph(&ic, mp->graph) && d->errors == errors_before;
    }
    arena_destroy(scratch);
    arena_set_oom_handler(m->arena, NULL);
    if (opt->unsupported)
        *opt->unsupported = ic.any_unsupported;
    if (!ok) {
        module_destroy(m);
        return NULL;
    }
    return m;
}

Module *onnx_import_file(const char *path, const ImportOptions *opt, DiagList *d) {
    FileMap f;
    if (!file_map(path, &f, d))
        return NULL;
    Module *m = onnx_import_buffer(f.data, f.len, path, opt, d);
    file_unmap(&f);
    return m;
}
