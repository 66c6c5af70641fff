#include "passes/graph/qbuild.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/interp/interp.h"
#include "core/infer.h"

QuantParams qb_params_of(const Value *v) {
    return (QuantParams){v->type.elem, v->type.scale, v->type.offset};
}

const Tensor *qb_weight_of(const Value *v) {
    while (v && v->def->kind == NK_IDENTITY && v->def->nops == 1)
        v = v->def->ops[0];
    return v ? value_constant(v) : NULL;
}

void qb_set(Value *v, const QuantParams *p) {
    v->type.quant = QUANT_TENSOR;
    v->type.scale = p->scale;
    v->type.offset = p->offset;
}

bool qb_same(const QuantParams *a, const QuantParams *b) {
    return a->elem == b->elem && a->scale == b->scale && a->offset == b->offset;
}

int64_t qb_quantize(double real, const QuantParams *p) {
    double lo = p->elem == ELEM_U8 ? 0 : -128, hi = p->elem == ELEM_U8 ? 255 : 127;
    double v = nearbyint(real / (double)p->scale) + p->offset;
    if (v != v)
        return p->offset;
    return (int64_t)(v < lo ? lo : v > hi ? hi : v);
}

Value *qb_scalar(Function *f, ElemKind elem, double v, const char *name) {
    Type t = type_scalar(elem);
    Tensor *x = tensor_new(f->module->arena, &t);
    tensor_set_f64(x, 0, v);
    return &graph_add_constant(f, name, x)->res[0];
}

Value *qb_vector(Function *f, ElemKind elem, int64_t m, const double *v, const char *name,
                 bool per_channel) {
    Type t = type_make(elem, 1, (int64_t[]){m});
    Tensor *x = tensor_new(f->module->arena, &t);
    for (int64_t i = 0; i < m; i++)
        tensor_set_f64(x, i, v[i]);
    Node *n = graph_add_constant(f, name, x);
    if (per_channel) {
        n->res[0].type.quant = QUANT_CHANNEL;
        n->res[0].type.qaxis = 0;
        x->type = n->res[0].type;
    }
    return &n->res[0];
}

Value *qb_reshape(Function *f, Node *pos, Value *iv, int rank, const int64_t *dims) {
    Node *r = graph_insert_before(f, pos, NK_RESHAPE, 1, &iv, 1);
    r->name = iv->def->name;
    r->res[0].type = type_make(iv->type.elem, rank, dims);
    type_copy_quant(&r->res[0].type, &iv->type);
    return &r->res[0];
}

Value *qb_like(Function *f, DiagList *d, Node *n, NodeKind k, int nops, Value **ops,
               const QuantParams *p) {
    Node *m = graph_insert_before(f, n, k, nops, ops, 1);
    m->name = n->name;
    m->nattrs = n->nattrs;
    m->attrs = n->attrs;
    m->res[0].type = n->res[0].type;
    m->res[0].type.elem = p->elem;
    qb_set(&m->res[0], p);
    if (!infer_node(m, d))
        return NULL;
    /* Inference gives the shape; the kind and parameters are the caller's. */
    m->res[0].type.elem = p->elem;
    qb_set(&m->res[0], p);
    return &m->res[0];
}

Value *qb_qconv(Function *f, DiagList *d, Node *pos, Value *xi, const QuantWeights *w,
                Value *bias, const QuantParams *yp, const Node *attrs_from, const char *name) {
    QuantParams xp = qb_params_of(xi);
    Value *ops[9] = {xi,    qb_scalar(f, ELEM_F32, xp.scale, name),
                     qb_scalar(f, xp.elem, xp.offset, name),
                     w->w,  w->ws,
                     w->wz, qb_scalar(f, ELEM_F32, yp->scale, name),
                     qb_scalar(f, yp->elem, yp->offset, name),
                     bias};
    Node *c = graph_insert_before(f, pos, NK_QLINEAR_CONV, 9, ops, 1);
    c->name = name;
    if (attrs_from) {
        c->nattrs = attrs_from->nattrs;
        c->attrs = arena_alloc_array(f->module->arena, (size_t)c->nattrs + 1, sizeof(Attr));
        memcpy(c->attrs, attrs_from->attrs, (size_t)c->nattrs * sizeof(Attr));
    } else {
        node_set_ints(c, AK_kernel, 2, (int64_t[]){1, 1});
    }
    if (!infer_node(c, d))
        return NULL;
    qb_set(&c->res[0], yp);
    return &c->res[0];
}

/* ---- chains ---------------------------------------------------------------- */

/* How far past n the chain's nodes may lie (other nodes interleave). */
enum { CHAIN_WINDOW = 48, CHAIN_OPS_MAX = 8 };

static bool in_chain(Node *const *chain, int count, const Node *n) {
    for (int i = 0; i < count; i++)
        if (chain[i] == n)
            return true;
    return false;
}

/* A float constant with one value per channel, [1, C, 1, ...] (rank >= 3:
 * NCHW's axis 1), as equalisation's rescalings are: a chain with one is a
 * table per channel. */
static bool channel_constant(const Value *o) {
    const Tensor *t = value_constant(o);
    if (!t || !elem_is_float(t->type.elem) || t->type.rank < 3 || t->type.dims[0] != 1)
        return false;
    for (int d = 2; d < t->type.rank; d++)
        if (t->type.dims[d] != 1)
            return false;
    return true;
}

/* m can join a chain over x: elementwise, float, x's shape, and every operand
 * x, a chain node's result, a one-value constant or a per-channel constant
 * of x's rank and channels -- at least one not a constant. */
static bool chain_member(const Node *m, const Value *x, Node *const *chain, int count,
                         QbChainAccept accept, void *ctx) {
    if (!node_kind_has(m->kind, NF_EW) || m->nres != 1 || m->nops > CHAIN_OPS_MAX ||
        !elem_is_float(m->res[0].type.elem) ||
        !type_same_shape(&m->res[0].type, &x->type) || !accept(ctx, m, false))
        return false;
    bool varying = false;
    for (int i = 0; i < m->nops; i++) {
        const Value *o = m->ops[i];
        double v;
        if (!o)
            continue;
        if (o == x || (o->index == 0 && in_chain(chain, count, o->def)))
            varying = true;
        else if (channel_constant(o) && o->type.rank == x->type.rank &&
                 o->type.dims[1] == x->type.dims[1])
            continue;
        else if (!value_splat(o, &v) || !elem_is_float(o->type.elem))
            return false;
    }
    return varying;
}

/* Whether every node of chain[0..count) other than the last is read only
 * by chain nodes (none is a graph output). */
static bool chain_closed(Function *f, Node *const *chain, int count) {
    for (int i = 0; i < f->noutputs; i++)
        for (int j = 0; j < count - 1; j++)
            if (f->outputs[i]->def == chain[j])
                return false;
    for (Node *m = f->first; m; m = m->next) {
        if (in_chain(chain, count, m))
            continue;
        for (int i = 0; i < m->nops; i++)
            if (m->ops[i] && in_chain(chain, count - 1, m->ops[i]->def))
                return false;
    }
    return true;
}

Value *qb_chain_input(const Node *n) {
    Value *x = NULL;
    for (int i = 0; i < n->nops; i++) {
        double v;
        if (!n->ops[i] || value_splat(n->ops[i], &v) || channel_constant(n->ops[i]))
            continue;
        if (x && x != n->ops[i])
            return NULL;
        x = n->ops[i];
    }
    return x;
}

int64_t qb_chain_channels(const Value *x, Node *const *chain, int count) {
    for (int j = 0; j < count; j++)
        for (int i = 0; i < chain[j]->nops; i++)
            if (chain[j]->ops[i] && channel_constant(chain[j]->ops[i]))
                return x->type.dims[1];
    return 1;
}

/* By the interpreter, over a scratch function of x[256], or of x[1, C, 256,
 * 1, ...] (x's rank) when per-channel constants broadcast over axis 1. */
bool qb_chain_table(const Value *x, const QuantParams *xp, Node *const *chain, int count,
                    int64_t nch, double *table) {
    Module *sm = module_new("qlookup");
    Function *sf = function_new(sm, "chain");
    Type xt = type_make(x->type.elem, 1, (int64_t[]){256});
    if (nch > 1) {
        xt = x->type;
        xt.quant = QUANT_NONE;
        xt.dims[0] = 1;
        xt.dims[1] = nch;
        xt.dims[2] = 256;
        for (int d = 3; d < xt.rank; d++)
            xt.dims[d] = 1;
    }
    Node *xn = graph_add_param(sf, "x", &xt);
    Value *map[QB_CHAIN_MAX];
    DiagList d;
    diag_init(&d, NULL);
    bool ok = true;
    for (int j = 0; j < count && ok; j++) {
        const Node *r = chain[j];
        Value *ops[CHAIN_OPS_MAX];
        for (int i = 0; i < r->nops; i++) {
            const Value *o = r->ops[i];
            double v;
            ops[i] = NULL;
            if (!o)
                continue;
            if (o == x)
                ops[i] = &xn->res[0];
            for (int k = 0; k < j && !ops[i]; k++)
                if (o->def == chain[k])
                    ops[i] = map[k];
            if (!ops[i] && channel_constant(o)) {
                Tensor *c = tensor_clone(sm->arena, value_constant(o));
                ops[i] = &graph_add_constant(sf, "c", c)->res[0];
            }
            if (!ops[i] && value_splat(o, &v)) {
                Type t = type_scalar(o->type.elem);
                Tensor *c = tensor_new(sm->arena, &t);
                tensor_set_f64(c, 0, v);
                ops[i] = &graph_add_constant(sf, "c", c)->res[0];
            }
        }
        Node *m = graph_add_node(sf, r->kind, r->nops, ops, 1);
        m->name = r->name;
        m->nattrs = r->nattrs;
        m->attrs = r->attrs;
        m->res[0].type.elem = r->res[0].type.elem;
        ok = infer_node(m, &d);
        map[j] = &m->res[0];
    }
    Tensor *out = NULL;
    if (ok) {
        const char *name = "y";
        graph_set_outputs(sf, 1, &map[count - 1], &name);
        Tensor *in = tensor_new(sm->arena, &xt);
        int64_t base = xp->elem == ELEM_U8 ? 0 : -128;
        for (int64_t i = 0; i < 256 * nch; i++)
            tensor_set_f64(in, i, (double)xp->scale * (double)(base + i % 256 - xp->offset));
        ok = interp_run(sf, &in, &out, sm->arena, &d, NULL, NULL) &&
             tensor_numel(out) == 256 * nch;
    }
    for (int64_t i = 0; ok && i < 256 * nch; i++)
        table[i] = tensor_get_f64(out, i);
    diag_free(&d);
    module_destroy(sm);
    return ok;
}

int qb_find_chain(Function *f, Node *n, const Value *x, Node **chain, QbChainAccept accept,
                  void *ctx) {
    if (!chain_member(n, x, NULL, 0, accept, ctx))
        return 0;
    int count = 0;
    chain[count++] = n;
    int seen = 0;
    for (Node *m = n->next; m && seen < CHAIN_WINDOW && count < QB_CHAIN_MAX; m = m->next, seen++)
        if (chain_member(m, x, chain, count, accept, ctx))
            chain[count++] = m;
    for (; count > 0; count--) {
        /* The nodes the last one needs, in order. */
        Node *need[QB_CHAIN_MAX];
        int k = 0;
        bool mark[QB_CHAIN_MAX] = {0};
        mark[count - 1] = true;
        for (int j = count - 1; j >= 0; j--) {
            if (!mark[j])
                continue;
            for (int i = 0; i < chain[j]->nops; i++)
                for (int l = 0; l < j; l++)
                    if (chain[j]->ops[i] && chain[j]->ops[i]->def == chain[l])
                        mark[l] = true;
        }
        for (int j = 0; j < count; j++)
            if (mark[j])
                need[k++] = chain[j];
        if (!mark[0] || !accept(ctx, chain[count - 1], true) || !chain_closed(f, need, k))
            continue;
        memcpy(chain, need, (size_t)k * sizeof *need);
        return k;
    }
    return 0;
}


Value *qb_lookup(Function *f, DiagList *d, Node *pos, Value *xi, const double *reals,
                 int64_t nch, const QuantParams *yp) {
    Type tt = nch > 1 ? type_make(yp->elem, 2, (int64_t[]){nch, 256})
                      : type_make(yp->elem, 1, (int64_t[]){256});
    Tensor *table = tensor_new(f->module->arena, &tt);
    for (int64_t i = 0; i < 256 * nch; i++)
        tensor_set_i64(table, i, qb_quantize(reals[i], yp));
    Value *ops[2] = {xi, &graph_add_constant(f, pos->name, table)->res[0]};
    Node *m = graph_insert_before(f, pos, NK_QLOOKUP, 2, ops, 1);
    m->name = pos->name;
    m->res[0].type = xi->type;
    m->res[0].type.elem = yp->elem;
    qb_set(&m->res[0], yp);
    return infer_node(m, d) ? &m->res[0] : NULL;
}

bool qb_walk(Function *f, QbVisit visit, void *ctx, const bool *failed) {
    Node **order = malloc(((size_t)f->nnodes + 1) * sizeof *order);
    if (!order)
        return false;
    int k = 0;
    for (Node *n = f->first; n; n = n->next)
        order[k++] = n;
    bool changed = false;
    for (int i = 0; i < k && !*failed; i++)
        if (!order[i]->dead)
            changed |= visit(ctx, order[i]);
    free(order);
    return changed;
}

static bool is_output(const Function *f, const Node *n) {
    for (int i = 0; i < f->noutputs; i++)
        if (f->outputs[i]->def == n)
            return true;
    return false;
}

void qb_sweep(Function *f, QbRemovable removable) {
    for (bool again = true; again;) {
        again = false;
        int *uses = pass_use_counts(f);
        if (!uses)
            return;
        graph_for_each_node(f, n, tmp) {
            if (!uses[n->id] && !is_output(f, n) && (!removable || removable(n))) {
                graph_remove_node(f, n);
                again = true;
            }
        }
        for (int i = f->nconsts - 1; i >= 0; i--) {
            if (!uses[f->consts[i]->id]) {
                graph_remove_node(f, f->consts[i]);
                again = true;
            }
        }
        free(uses);
    }
}
