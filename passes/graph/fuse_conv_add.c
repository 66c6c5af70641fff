/* fuse-conv-add: a residual add of a conv's result, add(conv(x, w, b), r),
 * becomes the conv's fourth operand, conv(x, w, b, r): the conv's epilogue
 * adds r[i] where it writes y[i], while y is still in registers, instead of
 * one more pass over two large activations. A relu, clip or leaky_relu
 * after the add (ResNet's) becomes the conv's activation, applied after
 * the sum. ONNX Runtime does the same (FusedConv with Sum).
 * Only where the result is the same with it: the conv is the add's only
 * user and has no activation of its own (that one runs before the add), r
 * has the result's type exactly (no broadcast), and the conv is one whose
 * kernels all apply the summand (conv_takes_summand).
 * Requires fuse-activation first (its act on a conv refuses the fusion);
 * invalidates nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass.h"

/* The conv kinds and shapes whose every kernel adds the summand: f32,
 * with a bias (r is operand 3, after it), and not depthwise -- one input
 * and one output channel per group, which k_conv.c's is_depthwise sends
 * to dwconv.c or depthwise.c, kernels with no summand (a 1-channel conv of
 * one group too); no model's residual add follows one. */
static bool conv_takes_summand(const Node *c) {
    if (c->kind != NK_CONV || c->nops != 3 || c->res[0].type.elem != ELEM_F32 ||
        node_has_attr(c, AK_act))
        return false;
    int64_t group = node_attr_int(c, AK_group, 1);
    return !(group == c->ops[0]->type.dims[1] && group == c->res[0].type.dims[1]);
}

/* The activations fused after the sum: the cheap ones, which every
 * kernel's epilogue applies in registers. */
static bool act_after_sum(const Node *n) {
    return (n->kind == NK_RELU || n->kind == NK_CLIP || n->kind == NK_LEAKY_RELU) &&
           n->nops == 1 /* clip's bounds known now */;
}

/* The operand of add that is a conv it may absorb (the first such), or -1.
 * Nodes made by this pass (ids from nids on) are not counted in uses; they
 * already have a summand. */
static int fusable_operand(const Node *add, const int *uses, int nids) {
    if (add->kind != NK_ADD || add->nops != 2)
        return -1;
    for (int i = 0; i < 2; i++) {
        Node *c = add->ops[i]->def;
        const Value *r = add->ops[1 - i];
        if (conv_takes_summand(c) && c->id < nids && uses[c->id] == 1 && r != add->ops[i] &&
            type_equal(&r->type, &add->res[0].type) &&
            type_equal(&add->ops[i]->type, &add->res[0].type))
            return i;
    }
    return -1;
}

static void copy_attrs(Arena *a, Node *to, const Node *from) {
    to->nattrs = from->nattrs;
    to->attrs = arena_alloc_array(a, (size_t)(from->nattrs ? from->nattrs : 1), sizeof *to->attrs);
    memcpy(to->attrs, from->attrs, (size_t)from->nattrs * sizeof *to->attrs);
}

/* conv(x, w, b, r) [+ act] in place of add (and act), just before the last
 * of them: r may be computed after the conv was. */
static Node *fuse(Function *f, Node *add, int ci, Node *act) {
    Node *c = add->ops[ci]->def, *last = act ? act : add;
    Value *ops[4] = {c->ops[0], c->ops[1], c->ops[2], add->ops[1 - ci]};
    Node *n = graph_insert_before(f, last, NK_CONV, 4, ops, 1);
    n->name = c->name;
    n->loc = c->loc;
    n->res[0].type = add->res[0].type;
    copy_attrs(f->module->arena, n, c);
    if (act) {
        node_fuse_act(n, act);
        graph_replace_uses(f, &act->res[0], &n->res[0]);
        graph_remove_node(f, act);
    }
    graph_replace_uses(f, &add->res[0], &n->res[0]);
    graph_remove_node(f, add);
    graph_remove_node(f, c);
    return n;
}

bool pass_fuse_conv_add(Function *f, PassContext *ctx) {
    int *uses = pass_use_counts(f);
    if (!uses)
        return false;
    bool changed = false;
    int nids = f->next_id;
    for (Node *n = f->first, *next; n; n = next) {
        next = n->next;
        int ci = n->id < nids ? fusable_operand(n, uses, nids) : -1;
        if (ci < 0)
            continue;
        Node *user = uses[n->id] == 1 ? graph_only_user(f, n) : NULL;
        Node *act = user && act_after_sum(user) &&
                            type_equal(&user->res[0].type, &n->res[0].type)
                        ? user
                        : NULL;
        if (act && next == act)
            next = act->next;
        pass_stat(ctx, "adds-fused", 1);
        if (act) {
            char stat[48];
            snprintf(stat, sizeof stat, "%s-after-add-fused", act_name(act_of_kind(act->kind)));
            pass_stat(ctx, stat, 1);
        }
        Node *r = fuse(f, n, ci, act);
        pass_rewrote(ctx, f, &r->res[0]);
        changed = true;
    }
    free(uses);
    return changed;
}
