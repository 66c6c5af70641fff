#include "passes/graph/qbuild.h"

#include <string.h>

#include "core/infer.h"

QuantParams qb_params_of(const Value *v) {
    return (QuantParams){v->type.elem, v->type.scale, v->type.offset};
}

void qb_set(Value *v, const QuantParams *p) {
    v->type.quant = QUANT_TENSOR;
    v->type.scale = p->scale;
    v->type.offset = p->offset;
}

bool qb_same(const QuantParams *a, const QuantParams *b) {
    return a->elem == b->elem && a->scale == b->scale && a->offset == b->offset;
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
