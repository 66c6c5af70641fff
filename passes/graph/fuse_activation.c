/* fuse-activation: relu, clip, sigmoid, tanh or leaky_relu applied to the
 * result of a conv or fully_connected (its only user) becomes that node's
 * `act` attribute, so the activation runs while the result is still in
 * cache. So does SiLU, x * sigmoid(x), which exporters write as those two
 * nodes (EfficientNet has one after nearly every convolution): fused, it
 * saves two passes over the tensor and a buffer of its size.
 * Requires nothing; invalidates nothing. */
#include <stdio.h>
#include <stdlib.h>

#include "passes/pass.h"

static bool fuse(Function *f, Node *act, Node *producer) {
    ActKind kind = act_of_kind(act->kind);
    if (kind == ACT_NONE || act->nops > 1 /* bounds known only at run time */ ||
        node_has_attr(producer, AK_act) ||
        !type_equal(&act->res[0].type, &producer->res[0].type))
        return false;
    node_fuse_act(producer, act);
    graph_replace_uses(f, &act->res[0], &producer->res[0]);
    graph_remove_node(f, act);
    return true;
}

/* mul(x, sigmoid(x)) or mul(sigmoid(x), x), x the result of a conv or
 * fully_connected used by these two nodes only: the sigmoid, else NULL. */
static Node *silu_sigmoid(const Node *mul, const int *uses) {
    if (mul->kind != NK_MUL || mul->nops != 2)
        return NULL;
    for (int i = 0; i < 2; i++) {
        Node *s = mul->ops[i]->def;
        Value *x = mul->ops[1 - i];
        Node *p = x->def;
        if (s->kind != NK_SIGMOID || s->ops[0] != x || uses[s->id] != 1 || uses[p->id] != 2 ||
            (p->kind != NK_CONV && p->kind != NK_FULLY_CONNECTED) ||
            node_has_attr(p, AK_act) || !type_equal(&mul->res[0].type, &x->type))
            continue;
        return s;
    }
    return NULL;
}

static bool fuse_silu(Function *f, PassContext *ctx, const int *uses) {
    bool changed = false;
    for (Node *n = f->first, *next; n; n = next) {
        next = n->next;
        Node *s = silu_sigmoid(n, uses);
        if (!s)
            continue;
        Node *p = s->ops[0]->def;
        if (next == s)
            next = s->next;
        node_set_act(p, AK_act, ACT_SILU);
        graph_replace_uses(f, &n->res[0], &p->res[0]);
        graph_remove_node(f, n);
        graph_remove_node(f, s);
        pass_stat(ctx, "silu-fused", 1);
        pass_rewrote(ctx, f, &p->res[0]);
        changed = true;
    }
    return changed;
}

bool pass_fuse_activation(Function *f, PassContext *ctx) {
    int *uses = pass_use_counts(f);
    if (!uses)
        return false;
    bool changed = false;
    for (Node *n = f->first, *next; n; n = next) {
        next = n->next;
        ActKind kind = act_of_kind(n->kind);
        if (kind == ACT_NONE)
            continue;
        Node *p = n->ops[0]->def;
        if ((p->kind != NK_CONV && p->kind != NK_FULLY_CONNECTED) || uses[p->id] != 1)
            continue;
        if (!fuse(f, n, p))
            continue;
        char stat[48];
        snprintf(stat, sizeof stat, "%s-fused", act_name(kind));
        pass_stat(ctx, stat, 1);
        pass_rewrote(ctx, f, &p->res[0]);
        changed = true;
    }
    /* The counts still hold for the nodes a SiLU is made of: the fusions
     * above only touch a sigmoid whose producer has one user. */
    changed |= fuse_silu(f, ctx, uses);
    free(uses);
    return changed;
}
