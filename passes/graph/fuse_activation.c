/* fuse-activation: relu, clip, sigmoid, tanh or leaky_relu applied to the
 * result of a conv or fully_connected (its only user) becomes that node's
 * `act` attribute, so the activation runs while the result is still in
 * cache. Requires nothing; invalidates nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "passes/pass.h"

static const char *act_name(const Node *n) {
    switch (n->kind) {
    case NK_RELU: return "relu";
    case NK_CLIP: return "clip";
    case NK_SIGMOID: return "sigmoid";
    case NK_TANH: return "tanh";
    case NK_LEAKY_RELU: return "leaky_relu";
    default: return NULL;
    }
}

static bool fuse(Function *f, Node *act, Node *producer) {
    const char *name = act_name(act);
    if (!name || node_has_attr(producer, AK_act) ||
        !type_equal(&act->res[0].type, &producer->res[0].type))
        return false;
    node_set_str(producer, AK_act, name);
    if (act->kind == NK_CLIP) {
        node_set_float(producer, AK_act_alpha, node_attr_float(act, AK_min, -INFINITY));
        node_set_float(producer, AK_act_beta, node_attr_float(act, AK_max, INFINITY));
    } else if (act->kind == NK_LEAKY_RELU) {
        node_set_float(producer, AK_act_alpha, node_attr_float(act, AK_alpha, 0.01f));
    }
    graph_replace_uses(f, &act->res[0], &producer->res[0]);
    graph_remove_node(f, act);
    return true;
}

bool pass_fuse_activation(Function *f, PassContext *ctx) {
    int *uses = pass_use_counts(f);
    if (!uses)
        return false;
    bool changed = false;
    for (Node *n = f->first, *next; n; n = next) {
        next = n->next;
        if (!act_name(n))
            continue;
        Node *p = n->ops[0]->def;
        if ((p->kind != NK_CONV && p->kind != NK_FULLY_CONNECTED) || uses[p->id] != 1)
            continue;
        const char *name = act_name(n);
        if (!fuse(f, n, p))
            continue;
        char stat[48];
        snprintf(stat, sizeof stat, "%s-fused", name);
        pass_stat(ctx, stat, 1);
        pass_rewrote(ctx, f, &p->res[0]);
        changed = true;
    }
    free(uses);
    return changed;
}
