/* sink-transpose: moves transposes down through elementwise nodes so that
 * they meet and cancel (the layout changes exporters insert around
 * elementwise code), merges consecutive transposes and drops identities.
 *   transpose(transpose(x, p), q)          -> transpose(x, p o q)
 *   unary(transpose(x, p))                 -> transpose(unary(x), p)
 *   binary(transpose(a, p), transpose(b, p)) -> transpose(binary(a, b), p)
 *   binary(transpose(a, p), scalar c)      -> transpose(binary(a, c), p)
 * A transpose is only moved when the node sinking it is its only user.
 * Requires nothing; invalidates nothing. */
#include <stdlib.h>

#include "core/infer.h"
#include "passes/pass.h"

static bool get_perm(const Node *t, int64_t *perm) {
    int k;
    const int64_t *p = node_attr_ints(t, AK_perm, &k);
    int rank = t->ops[0]->type.rank;
    for (int i = 0; i < rank; i++)
        perm[i] = p && k == rank ? p[i] : rank - 1 - i;
    return true;
}

static bool is_identity(const int64_t *perm, int rank) {
    for (int i = 0; i < rank; i++)
        if (perm[i] != i)
            return false;
    return true;
}

static Node *new_transpose(Function *f, Node *pos, Value *x, const int64_t *perm,
                           const char *name, DiagList *d) {
    Node *t = graph_insert_before(f, pos, NK_TRANSPOSE, 1, &x, 1);
    t->name = name;
    node_set_ints(t, AK_perm, x->type.rank, perm);
    infer_node(t, d);
    return t;
}

/* Elementwise kinds (nodes.def's EW) commute with a transpose of all their
 * operands. */
static bool sinkable_unary(const Node *n) {
    return node_kind_has(n->kind, NF_EW) && n->nops == 1;
}

static bool sinkable_binary(const Node *n) {
    return node_kind_has(n->kind, NF_EW) && n->nops == 2;
}

static bool is_scalar(const Value *v) {
    return type_numel(&v->type) == 1 && v->type.rank == 0;
}

/* Rewrites node n (a user of transposes) if a rule applies; returns the
 * transpose that now stands in for n's result, or NULL. */
static Node *sink(Function *f, Node *n, const int *uses, PassContext *ctx) {
    if (n->kind == NK_TRANSPOSE && n->ops[0]->def->kind == NK_TRANSPOSE &&
        uses[n->ops[0]->def->id] == 1) {
        Node *inner = n->ops[0]->def;
        int64_t p[MAX_RANK], q[MAX_RANK], r[MAX_RANK];
        get_perm(inner, p);
        get_perm(n, q);
        int rank = n->ops[0]->type.rank;
        for (int i = 0; i < rank; i++)
            r[i] = p[q[i]];
        Node *t = new_transpose(f, n, inner->ops[0], r, n->name, ctx->d);
        pass_stat(ctx, "transposes-merged", 1);
        return t;
    }
    if (sinkable_unary(n) && n->ops[0]->def->kind == NK_TRANSPOSE &&
        uses[n->ops[0]->def->id] == 1) {
        Node *tr = n->ops[0]->def;
        Value *x = tr->ops[0];
        Node *u = graph_insert_before(f, n, n->kind, 1, &x, 1);
        u->name = n->name;
        u->attrs = n->attrs;
        u->nattrs = n->nattrs;
        infer_node(u, ctx->d);
        int64_t p[MAX_RANK];
        get_perm(tr, p);
        pass_stat(ctx, "transposes-sunk", 1);
        return new_transpose(f, n, &u->res[0], p, tr->name, ctx->d);
    }
    if (!sinkable_binary(n))
        return NULL;
    Node *ta = n->ops[0]->def, *tb = n->ops[1]->def;
    bool a_tr = ta->kind == NK_TRANSPOSE && uses[ta->id] == 1;
    bool b_tr = tb->kind == NK_TRANSPOSE && uses[tb->id] == 1 && tb != ta;
    Value *ops[2];
    Node *tr;
    if (a_tr && b_tr) {
        int64_t p[MAX_RANK], q[MAX_RANK];
        get_perm(ta, p);
        get_perm(tb, q);
        int rank = ta->ops[0]->type.rank;
        if (tb->ops[0]->type.rank != rank || !type_same_shape(&ta->ops[0]->type, &tb->ops[0]->type))
            return NULL;
        for (int i = 0; i < rank; i++)
            if (p[i] != q[i])
                return NULL;
        ops[0] = ta->ops[0];
        ops[1] = tb->ops[0];
        tr = ta;
    } else if (a_tr && is_scalar(n->ops[1])) {
        ops[0] = ta->ops[0];
        ops[1] = n->ops[1];
        tr = ta;
    } else if (b_tr && is_scalar(n->ops[0])) {
        ops[0] = n->ops[0];
        ops[1] = tb->ops[0];
        tr = tb;
    } else {
        return NULL;
    }
    Node *b = graph_insert_before(f, n, n->kind, 2, ops, 1);
    b->name = n->name;
    b->attrs = n->attrs;
    b->nattrs = n->nattrs;
    if (!infer_node(b, ctx->d)) {
        graph_remove_node(f, b);
        return NULL;
    }
    int64_t p[MAX_RANK];
    get_perm(tr, p);
    pass_stat(ctx, "transposes-sunk", 1);
    return new_transpose(f, n, &b->res[0], p, tr->name, ctx->d);
}

static bool has_users(Function *f, const Node *t) {
    for (const Node *n = f->first; n; n = n->next)
        for (int i = 0; i < n->nops; i++)
            if (n->ops[i]->def == t)
                return true;
    for (int i = 0; i < f->noutputs; i++)
        if (f->outputs[i]->def == t)
            return true;
    return false;
}

bool pass_sink_transpose(Function *f, PassContext *ctx) {
    bool changed = false;
    int *uses = NULL;
    for (bool again = true; again;) {
        again = false;
        free(uses);
        uses = pass_use_counts(f);
        if (!uses)
            return changed;
        for (Node *n = f->first, *next; n; n = next) {
            next = n->next;
            if (n->kind == NK_TRANSPOSE) {
                int64_t p[MAX_RANK];
                get_perm(n, p);
                if (is_identity(p, n->ops[0]->type.rank)) {
                    graph_replace_uses(f, &n->res[0], n->ops[0]);
                    graph_remove_node(f, n);
                    pass_stat(ctx, "transposes-removed", 1);
                    changed = again = true;
                    break;
                }
            }
            Node *old_ops[2] = {n->nops > 0 ? n->ops[0]->def : NULL,
                                n->nops > 1 ? n->ops[1]->def : NULL};
            Node *t = sink(f, n, uses, ctx);
            if (!t)
                continue;
            graph_replace_uses(f, &n->res[0], &t->res[0]);
            graph_remove_node(f, n);
            for (int i = 0; i < 2; i++)
                if (old_ops[i] && old_ops[i]->kind == NK_TRANSPOSE && !has_users(f, old_ops[i]))
                    graph_remove_node(f, old_ops[i]);
            pass_rewrote(ctx, f, &t->res[0]);
            changed = again = true;
            break; /* use counts changed: recount (graphs here are small) */
        }
    }
    free(uses);
    return changed;
}
