/* fold-batchnorm: batch_norm(conv(x, w, b)) with constant parameters becomes
 * one conv with rescaled weights and a new bias (the conv's result must have
 * no other user, and no activation fused yet):
 *   s = scale / sqrt(var + eps);  w' = w * s (per output channel);
 *   b' = (b - mean) * s + bias.
 * Computed in double, rounded once. Requires nothing; invalidates nothing. */
#include <math.h>
#include <stdlib.h>

#include "passes/pass.h"

static Tensor *new_like(Function *f, const Type *t) {
    return tensor_new(f->module->arena, t);
}

static Node *fold_one(Function *f, Node *bn, Node *conv) {
    const Tensor *w = value_constant(conv->ops[1]);
    const Tensor *b = conv->nops == 3 ? value_constant(conv->ops[2]) : NULL;
    const Tensor *scale = value_constant(bn->ops[1]), *bias = value_constant(bn->ops[2]);
    const Tensor *mean = value_constant(bn->ops[3]), *var = value_constant(bn->ops[4]);
    if (!w || (conv->nops == 3 && !b) || !scale || !bias || !mean || !var)
        return NULL;
    double eps = node_attr_float(bn, AK_epsilon, 1e-5f);
    int64_t m = w->type.dims[0], per = tensor_numel(w) / (m ? m : 1);
    Tensor *nw = new_like(f, &w->type);
    Type bt = type_make(w->type.elem, 1, (int64_t[]){m});
    Tensor *nb = new_like(f, &bt);
    for (int64_t c = 0; c < m; c++) {
        double s = tensor_get_f64(scale, c) / sqrt(tensor_get_f64(var, c) + eps);
        for (int64_t k = 0; k < per; k++)
            tensor_set_f64(nw, c * per + k, tensor_get_f64(w, c * per + k) * s);
        double b0 = b ? tensor_get_f64(b, c) : 0;
        tensor_set_f64(nb, c, (b0 - tensor_get_f64(mean, c)) * s + tensor_get_f64(bias, c));
    }
    Node *cw = graph_add_constant(f, conv->ops[1]->def->name, nw);
    Node *cb = graph_add_constant(f, bn->name, nb);
    Value *ops[3] = {conv->ops[0], &cw->res[0], &cb->res[0]};
    Node *n = graph_insert_before(f, conv, NK_CONV, 3, ops, 1);
    n->name = conv->name;
    n->res[0].type = bn->res[0].type;
    n->attrs = conv->attrs; /* the conv is removed; its attributes move over */
    n->nattrs = conv->nattrs;
    graph_replace_uses(f, &bn->res[0], &n->res[0]);
    graph_remove_node(f, bn);
    graph_remove_node(f, conv);
    return n;
}

bool pass_fold_batchnorm(Function *f, PassContext *ctx) {
    int *uses = pass_use_counts(f);
    if (!uses)
        return false;
    bool changed = false;
    for (Node *n = f->first, *next; n; n = next) {
        next = n->next;
        if (n->kind != NK_BATCH_NORM)
            continue;
        Node *conv = n->ops[0]->def;
        if (conv->kind != NK_CONV || uses[conv->id] != 1 || node_has_attr(conv, AK_act))
            continue;
        Node *folded = fold_one(f, n, conv);
        if (!folded)
            continue;
        pass_stat(ctx, "batchnorms-folded", 1);
        pass_rewrote(ctx, f, &folded->res[0]);
        changed = true;
    }
    free(uses);
    return changed;
}
