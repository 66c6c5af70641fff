/* fuse-matmul-add: a matrix product with constant weights becomes Glow's
 * fully_connected(x [M,K], w [K,N], b [N]), taking the bias from an Add that
 * follows (when the product has no other user) or from Gemm's C:
 *   add(matmul(x, W), b)  -> fully_connected(x, W, b)
 *   matmul(x, W)          -> fully_connected(x, W, 0)
 *   gemm(x, W, c)         -> fully_connected(x, W' , b)   (W' = W^T if transB,
 *                                                          alpha/beta folded in)
 * x of rank > 2 ([.., M, K], as transformers emit) is reshaped to 2-D around
 * the product. Requires nothing; invalidates nothing. */
#include <math.h>
#include <stdlib.h>

#include "core/infer.h"
#include "passes/pass.h"

static Value *constant_value(Function *f, const char *name, Tensor *t) {
    return &graph_add_constant(f, name, t)->res[0];
}

/* The bias as a [N] vector if `v` is a constant that broadcasts along rows
 * ([N], [1,N], or a scalar), times scale. NULL otherwise. */
static Tensor *row_bias(Function *f, const Value *v, int64_t n, double scale) {
    const Tensor *t = value_constant(v);
    if (!t)
        return NULL;
    int64_t numel = tensor_numel(t);
    for (int i = 0; i + 1 < t->type.rank; i++)
        if (t->type.dims[i] != 1)
            return NULL;
    if (numel != n && numel != 1)
        return NULL;
    Type bt = type_make(t->type.elem, 1, (int64_t[]){n});
    Tensor *b = tensor_new(f->module->arena, &bt);
    for (int64_t i = 0; i < n; i++)
        tensor_set_f64(b, i, tensor_get_f64(t, numel == 1 ? 0 : i) * scale);
    return b;
}

static Tensor *zeros(Function *f, ElemKind e, int64_t n) {
    Type t = type_make(e, 1, (int64_t[]){n});
    return tensor_new(f->module->arena, &t);
}

/* Builds reshape(x -> [M,K]) -> fully_connected -> reshape(-> out type)
 * before `pos`, and returns the final value. */
static Value *emit_fc(Function *f, Node *pos, Value *x, Value *w, Value *b, const Type *out,
                      const char *name, DiagList *d) {
    int64_t k = x->type.dims[x->type.rank - 1];
    int64_t m = type_numel(&x->type) / (k ? k : 1);
    if (x->type.rank != 2) {
        Node *r = graph_insert_before(f, pos, NK_RESHAPE, 1, &x, 1);
        r->name = name;
        r->res[0].type = type_make(x->type.elem, 2, (int64_t[]){m, k});
        x = &r->res[0];
    }
    Value *ops[3] = {x, w, b};
    Node *fc = graph_insert_before(f, pos, NK_FULLY_CONNECTED, 3, ops, 1);
    fc->name = name;
    infer_node(fc, d);
    if (type_equal(&fc->res[0].type, out))
        return &fc->res[0];
    Value *y = &fc->res[0];
    Node *back = graph_insert_before(f, pos, NK_RESHAPE, 1, &y, 1);
    back->name = name;
    back->res[0].type = *out;
    return &back->res[0];
}

static bool fc_candidate(const Node *mm) {
    const Value *w = mm->ops[1];
    return mm->kind == NK_MATMUL && elem_is_float(w->type.elem) && value_constant(w) &&
           w->type.rank == 2 && mm->ops[0]->type.rank >= 2;
}

static Node *single_add_user(Function *f, const Node *mm, const int *uses) {
    if (uses[mm->id] != 1)
        return NULL;
    for (Node *n = mm->next; n; n = n->next)
        if (n->kind == NK_ADD && (n->ops[0]->def == mm || n->ops[1]->def == mm))
            return n;
    return NULL;
}

/* *resume: the node after the rewrite, where the walk goes on. */
static bool fuse_matmul(Function *f, Node *mm, const int *uses, PassContext *ctx, Node **resume) {
    if (!fc_candidate(mm))
        return false;
    int64_t n = mm->ops[1]->type.dims[1];
    Node *add = single_add_user(f, mm, uses);
    Tensor *bias = NULL;
    if (add) {
        const Value *other = add->ops[0]->def == mm ? add->ops[1] : add->ops[0];
        bias = row_bias(f, other, n, 1.0);
        if (bias && !type_equal(&add->res[0].type, &mm->res[0].type))
            bias = NULL;
    }
    Node *replaced = bias ? add : mm;
    if (!bias)
        bias = zeros(f, mm->res[0].type.elem, n);
    Value *b = constant_value(f, replaced->name, bias);
    Value *y = emit_fc(f, replaced, mm->ops[0], mm->ops[1], b, &replaced->res[0].type, mm->name,
                       ctx->d);
    graph_replace_uses(f, &replaced->res[0], y);
    graph_remove_node(f, replaced);
    if (replaced != mm)
        graph_remove_node(f, mm);
    pass_stat(ctx, replaced == mm ? "matmul-to-fc" : "matmul-add-fused", 1);
    *resume = y->def->next;
    pass_rewrote(ctx, f, y);
    return true;
}

/* alpha * x * W' + beta * c with constant W and a row-broadcast constant c. */
static bool fuse_gemm(Function *f, Node *g, PassContext *ctx) {
    const Tensor *w = value_constant(g->ops[1]);
    if (!w || node_attr_int(g, AK_trans_a, 0) || !elem_is_float(w->type.elem))
        return false;
    bool tb = node_attr_int(g, AK_trans_b, 0) != 0;
    double alpha = node_attr_float(g, AK_alpha, 1), beta = node_attr_float(g, AK_beta, 1);
    int64_t k = tb ? w->type.dims[1] : w->type.dims[0], n = tb ? w->type.dims[0] : w->type.dims[1];
    Tensor *bias = g->nops == 3 ? row_bias(f, g->ops[2], n, beta) : zeros(f, w->type.elem, n);
    if (!bias)
        return false;
    Type wt = type_make(w->type.elem, 2, (int64_t[]){k, n});
    Tensor *nw = tensor_new(f->module->arena, &wt);
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < n; j++)
            tensor_set_f64(nw, i * n + j, alpha * tensor_get_f64(w, tb ? j * k + i : i * n + j));
    Value *wv = constant_value(f, g->ops[1]->def->name, nw);
    Value *bv = constant_value(f, g->name, bias);
    Value *y = emit_fc(f, g, g->ops[0], wv, bv, &g->res[0].type, g->name, ctx->d);
    graph_replace_uses(f, &g->res[0], y);
    graph_remove_node(f, g);
    pass_stat(ctx, "gemm-to-fc", 1);
    pass_rewrote(ctx, f, y);
    return true;
}

bool pass_fuse_matmul_add(Function *f, PassContext *ctx) {
    int *uses = pass_use_counts(f);
    if (!uses)
        return false;
    bool changed = false;
    for (Node *n = f->first, *next; n; n = next) {
        next = n->next;
        bool did = false;
        if (n->kind == NK_MATMUL) {
            did = fuse_matmul(f, n, uses, ctx, &next);
        } else if (n->kind == NK_GEMM) {
            did = fuse_gemm(f, n, ctx);
        }
        if (did) {
            changed = true;
            free(uses);
            uses = pass_use_counts(f);
            if (!uses)
                return changed;
        }
    }
    free(uses);
    return changed;
}
