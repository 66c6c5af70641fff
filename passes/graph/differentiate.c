/* differentiate: the forward function and a loss become a training function
 * (Glow's differentiate()): the forward nodes, the loss over the first
 * output, the gradient of every node in reverse order, and one SGD step
 * (momentum, weight decay) or Adam step for every trainable weight. The gradients are
 * ordinary nodes (conv_transpose for a convolution's input, conv_weight_grad
 * for its weight, scatter_elements for a max pool, ...),
 * so they are optimised, lowered, scheduled, allocated and compiled like
 * everything else.
 *
 * The weights being trained become state the caller carries from step to
 * step: each one a parameter and its updated value an output.
 *   parameters: the model's inputs, `labels`, every weight W, then the
 *               optimiser's state: with momentum every `W.velocity`; with
 *               Adam `adam.bias_correction1/2`, every `W.adam_m`, `W.adam_v`;
 *               a batch norm's running statistics and a dropout's `D.noise`
 *               (batch norms and dropouts train in training mode)
 *   outputs:    `loss` (a scalar), the model's outputs, every `W.updated`,
 *               then every `S.updated` for each state parameter S (the
 *               noise has none: the caller draws it afresh every step)
 * Trainable weights are the float constants of rank >= 1 that the first
 * output depends on (a batch norm's running statistics excepted).
 * Runs only when a training spec is given (PassContext.train).
 * Requires a graph as imported (no fused activations); invalidates the schedule. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/infer.h"
#include "core/strbuf.h"
#include "passes/pass.h"

typedef struct Grad {
    Function *f;
    DiagList *d;
    PassContext *ctx;
    bool ok;
    int nids;         /* ids below this are the forward graph's */
    Value ***grad;    /* grad[id][result]: the gradient of that value so far */
    bool *wants;      /* node id depends on a trainable weight */
    bool *on_path;    /* node id is something the first output depends on */
    const char *name; /* what new nodes are named after: "<forward node>.grad" */
    Node *at;         /* new nodes go before this one (NULL: at the end) */
    /* batch norms' running statistics after the step, outputs besides the
     * optimiser's */
    Value **stats;
    const char **stat_names;
    int nstats;
} Grad;

/* ---- building ------------------------------------------------------------- */

static Node *new_node(Grad *g, NodeKind k, int nops, Value *const *ops, int nres) {
    return graph_insert_before(g->f, g->at, k, nops, ops, nres);
}

static Value *add_node(Grad *g, Node *n) {
    n->name = g->name;
    if (!infer_node(n, g->d))
        g->ok = false;
    return &n->res[0];
}

static Value *op1(Grad *g, NodeKind k, Value *x) {
    return add_node(g, new_node(g, k, 1, &x, 1));
}

static Value *op2(Grad *g, NodeKind k, Value *x, Value *y) {
    Value *ops[2] = {x, y};
    return add_node(g, new_node(g, k, 2, ops, 1));
}

static Value *scalar(Grad *g, ElemKind e, double v) {
    Type t = type_scalar(e);
    Tensor *x = tensor_new(g->f->module->arena, &t);
    tensor_set_f64(x, 0, v);
    return &graph_add_constant(g->f, "", x)->res[0];
}

static Value *filled(Grad *g, const Type *t, double v) {
    Tensor *x = tensor_new(g->f->module->arena, t);
    for (int64_t i = 0; v != 0 && i < tensor_numel(x); i++)
        tensor_set_f64(x, i, v);
    return &graph_add_constant(g->f, "", x)->res[0];
}

static Value *reshape(Grad *g, Value *x, const Type *t) {
    if (type_same_shape(&x->type, t))
        return x;
    Node *n = new_node(g, NK_RESHAPE, 1, &x, 1);
    n->res[0].type = x->type;
    n->res[0].type.rank = t->rank;
    memcpy(n->res[0].type.dims, t->dims, sizeof t->dims);
    return add_node(g, n);
}

static Value *transpose(Grad *g, Value *x, int rank, const int64_t *perm) {
    Node *n = new_node(g, NK_TRANSPOSE, 1, &x, 1);
    node_set_ints(n, AK_perm, rank, perm);
    return add_node(g, n);
}

/* The last two axes swapped. */
static Value *swap_last(Grad *g, Value *x) {
    int64_t perm[MAX_RANK];
    int r = x->type.rank;
    for (int i = 0; i < r; i++)
        perm[i] = i;
    perm[r - 2] = r - 1;
    perm[r - 1] = r - 2;
    return transpose(g, x, r, perm);
}

static Value *reduce(Grad *g, NodeKind k, Value *x, uint32_t mask, bool keep) {
    Node *n = new_node(g, k, 1, &x, 1);
    int64_t axes[MAX_RANK];
    int na = 0;
    for (int i = 0; i < x->type.rank; i++)
        if (mask & (1u << i))
            axes[na++] = i;
    node_set_ints(n, AK_axes, na, axes);
    node_set_int(n, AK_keepdims, keep);
    return add_node(g, n);
}

static Value *reduce_sum(Grad *g, Value *x, uint32_t mask, bool keep) {
    return reduce(g, NK_REDUCE_SUM, x, mask, keep);
}

static Value *slice(Grad *g, Value *x, const int64_t *starts, const int64_t *ends) {
    int r = x->type.rank;
    int64_t steps[MAX_RANK];
    for (int i = 0; i < r; i++)
        steps[i] = 1;
    Node *n = new_node(g, NK_SLICE, 1, &x, 1);
    node_set_ints(n, AK_starts, r, starts);
    node_set_ints(n, AK_ends, r, ends);
    node_set_ints(n, AK_steps, r, steps);
    return add_node(g, n);
}

/* A gradient of a broadcast result, summed back to the shape of an operand
 * of type t: over the leading axes t lacks and the axes where t has 1. */
static Value *unbroadcast(Grad *g, Value *dy, const Type *t) {
    if (type_same_shape(&dy->type, t))
        return dy;
    int off = dy->type.rank - t->rank;
    uint32_t mask = 0;
    for (int i = 0; i < off; i++)
        mask |= 1u << i;
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i] == 1 && dy->type.dims[i + off] != 1)
            mask |= 1u << (i + off);
    Value *r = mask ? reduce_sum(g, dy, mask, true) : dy;
    return reshape(g, r, t);
}

/* Operand i of n needs a gradient (it depends on a weight). */
static bool wants(const Grad *g, const Node *n, int i) {
    int id = n->ops[i]->def->id;
    return id < g->nids && g->wants[id];
}

/* ---- one rule per differentiable kind ---------------------------------------
 * A rule sets dx[i] for every operand i it differentiates (NULL: none) from
 * dy, the gradient of result 0, and returns false when the node's
 * attributes have no gradient here. */

typedef bool (*GradRule)(Grad *g, Node *n, Value *dy, Value **dx);

static bool grad_identity(Grad *g, Node *n, Value *dy, Value **dx) {
    dx[0] = dy;
    return true;
}

static bool grad_reshape(Grad *g, Node *n, Value *dy, Value **dx) {
    dx[0] = reshape(g, dy, &n->ops[0]->type);
    return true;
}

static bool grad_neg(Grad *g, Node *n, Value *dy, Value **dx) {
    dx[0] = op1(g, NK_NEG, dy);
    return true;
}

/* relu: dy where the result is positive (the result, not the operand, so
 * that a later pass may still fuse the relu into its producer), one
 * relu_grad node. */
static bool grad_relu(Grad *g, Node *n, Value *dy, Value **dx) {
    dx[0] = op2(g, NK_RELU_GRAD, dy, &n->res[0]);
    return true;
}

static bool grad_leaky_relu(Grad *g, Node *n, Value *dy, Value **dx) {
    ElemKind e = dy->type.elem;
    Value *pos = op2(g, NK_GREATER, n->ops[0], scalar(g, e, 0));
    Value *neg = op2(g, NK_MUL, dy, scalar(g, e, node_attr_float(n, AK_alpha, 0.01f)));
    Value *ops[3] = {pos, dy, neg};
    dx[0] = add_node(g, new_node(g, NK_WHERE, 3, ops, 1));
    return true;
}

static bool grad_sigmoid(Grad *g, Node *n, Value *dy, Value **dx) {
    Value *y = &n->res[0];
    Value *one_minus = op2(g, NK_SUB, scalar(g, y->type.elem, 1), y);
    dx[0] = op2(g, NK_MUL, dy, op2(g, NK_MUL, y, one_minus));
    return true;
}

static bool grad_tanh(Grad *g, Node *n, Value *dy, Value **dx) {
    Value *y = &n->res[0];
    Value *d = op2(g, NK_SUB, scalar(g, y->type.elem, 1), op2(g, NK_MUL, y, y));
    dx[0] = op2(g, NK_MUL, dy, d);
    return true;
}

static bool grad_exp(Grad *g, Node *n, Value *dy, Value **dx) {
    dx[0] = op2(g, NK_MUL, dy, &n->res[0]);
    return true;
}

static bool grad_log(Grad *g, Node *n, Value *dy, Value **dx) {
    dx[0] = op2(g, NK_DIV, dy, n->ops[0]);
    return true;
}

static bool grad_sqrt(Grad *g, Node *n, Value *dy, Value **dx) {
    Value *y = &n->res[0];
    dx[0] = op2(g, NK_DIV, dy, op2(g, NK_MUL, y, scalar(g, y->type.elem, 2)));
    return true;
}

static bool grad_add(Grad *g, Node *n, Value *dy, Value **dx) {
    for (int i = 0; i < 2; i++)
        if (wants(g, n, i))
            dx[i] = unbroadcast(g, dy, &n->ops[i]->type);
    return true;
}

static bool grad_sub(Grad *g, Node *n, Value *dy, Value **dx) {
    if (wants(g, n, 0))
        dx[0] = unbroadcast(g, dy, &n->ops[0]->type);
    if (wants(g, n, 1))
        dx[1] = unbroadcast(g, op1(g, NK_NEG, dy), &n->ops[1]->type);
    return true;
}

static bool grad_mul(Grad *g, Node *n, Value *dy, Value **dx) {
    for (int i = 0; i < 2; i++)
        if (wants(g, n, i))
            dx[i] = unbroadcast(g, op2(g, NK_MUL, dy, n->ops[1 - i]), &n->ops[i]->type);
    return true;
}

/* d(a/b) = dy / b and -dy * (a/b) / b. */
static bool grad_div(Grad *g, Node *n, Value *dy, Value **dx) {
    Value *q = op2(g, NK_DIV, dy, n->ops[1]);
    if (wants(g, n, 0))
        dx[0] = unbroadcast(g, q, &n->ops[0]->type);
    if (wants(g, n, 1))
        dx[1] = unbroadcast(g, op1(g, NK_NEG, op2(g, NK_MUL, q, &n->res[0])), &n->ops[1]->type);
    return true;
}

/* Both operands of rank >= 2 (a vector operand has no gradient rule yet). */
static bool grad_matmul(Grad *g, Node *n, Value *dy, Value **dx) {
    Value *a = n->ops[0], *b = n->ops[1];
    if (a->type.rank < 2 || b->type.rank < 2)
        return false;
    if (wants(g, n, 0))
        dx[0] = unbroadcast(g, op2(g, NK_MATMUL, dy, swap_last(g, b)), &a->type);
    if (wants(g, n, 1))
        dx[1] = unbroadcast(g, op2(g, NK_MATMUL, swap_last(g, a), dy), &b->type);
    return true;
}

static Value *gemm(Grad *g, Value *a, Value *b, bool ta, bool tb, double alpha) {
    Value *ops[2] = {a, b};
    Node *n = new_node(g, NK_GEMM, 2, ops, 1);
    node_set_float(n, AK_alpha, (float)alpha);
    node_set_float(n, AK_beta, 1);
    node_set_int(n, AK_trans_a, ta);
    node_set_int(n, AK_trans_b, tb);
    return add_node(g, n);
}

/* y = alpha A'B' + beta c with A' = A or A^T, B' likewise: each operand's
 * gradient is one gemm with the transpositions that give its layout. */
static bool grad_gemm(Grad *g, Node *n, Value *dy, Value **dx) {
    Value *a = n->ops[0], *b = n->ops[1];
    bool ta = node_attr_int(n, AK_trans_a, 0), tb = node_attr_int(n, AK_trans_b, 0);
    double alpha = node_attr_float(n, AK_alpha, 1), beta = node_attr_float(n, AK_beta, 1);
    if (wants(g, n, 0))
        dx[0] = ta ? gemm(g, b, dy, tb, true, alpha) : gemm(g, dy, b, false, !tb, alpha);
    if (wants(g, n, 1))
        dx[1] = tb ? gemm(g, dy, a, true, ta, alpha) : gemm(g, a, dy, !ta, false, alpha);
    if (n->nops == 3 && wants(g, n, 2)) {
        Value *dc = unbroadcast(g, dy, &n->ops[2]->type);
        dx[2] = beta == 1 ? dc : op2(g, NK_MUL, dc, scalar(g, dc->type.elem, beta));
    }
    return true;
}

/* With stride 1 the input's gradient is also an ordinary convolution: of
 * dy, padded by dilation * (k - 1) - pad on each side, with the weight
 * flipped in space and its two channel axes swapped within each group,
 * W'[g*ci + c, o, k] = W[g*co + o, c, K-1-k]. The forward convolution's
 * kernels (Winograd too) run it, faster than a transposed convolution's
 * column matrix on small maps; a pad wider than the kernel's reach keeps
 * the transposed form. */
static bool stride_one_input_grad(const Window *w) {
    for (int i = 0; i < w->nspatial; i++) {
        int64_t reach = w->dilation[i] * (w->kernel[i] - 1);
        if (w->stride[i] != 1 || w->pad_begin[i] > reach || w->pad_end[i] > reach)
            return false;
    }
    return true;
}

static Value *conv_input_grad_direct(Grad *g, Node *n, const Window *w, Value *dy) {
    Value *wt = n->ops[1];
    int ns = w->nspatial, r = wt->type.rank;
    int64_t G = w->group, co = wt->type.dims[0] / G, ci = wt->type.dims[1];
    Type t5 = wt->type; /* [G, co, ci, k...] */
    t5.rank = r + 1;
    t5.dims[0] = G;
    t5.dims[1] = co;
    t5.dims[2] = ci;
    for (int i = 0; i < ns; i++)
        t5.dims[3 + i] = w->kernel[i];
    int64_t perm[MAX_RANK] = {0, 2, 1};
    for (int i = 0; i < ns; i++)
        perm[3 + i] = 3 + i;
    Value *f = transpose(g, reshape(g, wt, &t5), r + 1, perm); /* [G, ci, co, k...] */
    Type ft = wt->type;
    ft.dims[0] = G * ci;
    ft.dims[1] = co;
    f = reshape(g, f, &ft);
    int64_t starts[MAX_RANK] = {0, 0}, ends[MAX_RANK] = {INT64_MAX, INT64_MAX};
    int64_t steps[MAX_RANK] = {1, 1}, pads[2 * MAX_RANK];
    for (int i = 0; i < ns; i++) {
        starts[2 + i] = -1;
        ends[2 + i] = INT64_MIN;
        steps[2 + i] = -1;
        int64_t reach = w->dilation[i] * (w->kernel[i] - 1);
        pads[i] = reach - w->pad_begin[i];
        pads[ns + i] = reach - w->pad_end[i];
    }
    Node *sl = new_node(g, NK_SLICE, 1, &f, 1);
    node_set_ints(sl, AK_starts, r, starts);
    node_set_ints(sl, AK_ends, r, ends);
    node_set_ints(sl, AK_steps, r, steps);
    f = add_node(g, sl);
    int64_t ones[MAX_RANK];
    for (int i = 0; i < ns; i++)
        ones[i] = 1;
    Value *ops[2] = {dy, f};
    Node *c = new_node(g, NK_CONV, 2, ops, 1);
    node_set_ints(c, AK_kernel, ns, w->kernel);
    node_set_ints(c, AK_strides, ns, ones);
    node_set_ints(c, AK_pads, 2 * ns, pads);
    node_set_ints(c, AK_dilations, ns, w->dilation);
    node_set_int(c, AK_group, G);
    return add_node(g, c);
}

/* The input's gradient is the transposed convolution of dy with the same
 * weight (its [C_out, C_in/group, k...] layout is conv_transpose's), with
 * output_padding making up the rows a stride skipped. */
static Value *conv_input_grad(Grad *g, Node *n, const Window *w, Value *dy) {
    const Type *x = &n->ops[0]->type;
    int ns = w->nspatial;
    if (stride_one_input_grad(w))
        return conv_input_grad_direct(g, n, w, dy);
    int64_t outpad[MAX_RANK], pads[2 * MAX_RANK];
    for (int i = 0; i < ns; i++) {
        int64_t made = (dy->type.dims[2 + i] - 1) * w->stride[i] - w->pad_begin[i] -
                       w->pad_end[i] + w->dilation[i] * (w->kernel[i] - 1) + 1;
        outpad[i] = x->dims[2 + i] - made;
        pads[i] = w->pad_begin[i];
        pads[ns + i] = w->pad_end[i];
    }
    Value *ops[2] = {dy, n->ops[1]};
    Node *t = new_node(g, NK_CONV_TRANSPOSE, 2, ops, 1);
    node_set_ints(t, AK_kernel, ns, w->kernel);
    node_set_ints(t, AK_strides, ns, w->stride);
    node_set_ints(t, AK_pads, 2 * ns, pads);
    node_set_ints(t, AK_dilations, ns, w->dilation);
    node_set_int(t, AK_group, w->group);
    node_set_ints(t, AK_output_padding, ns, outpad);
    return add_node(g, t);
}

/* dW[o, c, k] = sum over n and positions p of dy[n, o, p] * x[n, g(o)*ci
 * + c, p*stride + k*dilation - pad]: one conv_weight_grad node, which the
 * kernels compute as a matrix product over the batch (written as a
 * convolution with the roles swapped, its kernel would be the whole output
 * map, a shape direct convolution handles at a few percent of peak). */
static Value *conv_weight_grad(Grad *g, Node *n, const Window *w, Value *dy) {
    int ns = w->nspatial;
    int64_t pads[2 * MAX_RANK];
    for (int i = 0; i < ns; i++) {
        pads[i] = w->pad_begin[i];
        pads[ns + i] = w->pad_end[i];
    }
    Value *ops[2] = {n->ops[0], dy};
    Node *c = new_node(g, NK_CONV_WEIGHT_GRAD, 2, ops, 1);
    node_set_ints(c, AK_kernel, ns, w->kernel);
    node_set_ints(c, AK_strides, ns, w->stride);
    node_set_ints(c, AK_pads, 2 * ns, pads);
    node_set_ints(c, AK_dilations, ns, w->dilation);
    node_set_int(c, AK_group, w->group);
    return add_node(g, c);
}

static bool grad_conv(Grad *g, Node *n, Value *dy, Value **dx) {
    if (node_attr_act(n, AK_act) != ACT_NONE)
        return false;
    Window w;
    if (!window_from_node(n, n->ops[0]->type.rank - 2, &n->ops[1]->type, &w))
        return false;
    if (wants(g, n, 0))
        dx[0] = conv_input_grad(g, n, &w, dy);
    if (wants(g, n, 1))
        dx[1] = conv_weight_grad(g, n, &w, dy);
    if (n->nops == 3 && wants(g, n, 2))
        dx[2] = reduce_sum(g, dy, ((1u << dy->type.rank) - 1) & ~2u, false);
    return true;
}

/* The forward max pool also gives its argmax (flattened over N, C and the
 * spatial axes); dx is dy scattered, added, to those positions. */
static bool grad_max_pool(Grad *g, Node *n, Value *dy, Value **dx) {
    if (node_attr_int(n, AK_storage_order, 0) != 0)
        return false;
    Value *idx;
    if (n->nres == 2) {
        idx = &n->res[1];
    } else {
        Node *m = graph_insert_before(g->f, n, NK_MAX_POOL, 1, n->ops, 2);
        m->name = n->name;
        m->loc = n->loc;
        m->label = n->label;
        m->nattrs = n->nattrs;
        m->attrs = n->attrs;
        if (!infer_node(m, g->d))
            return g->ok = false;
        graph_replace_uses(g->f, &n->res[0], &m->res[0]);
        graph_remove_node(g->f, n); /* the walk has taken its predecessor already */
        idx = &m->res[1];
    }
    const Type *xt = &n->ops[0]->type;
    Type flat_x = type_make(xt->elem, 1, (int64_t[]){type_numel(xt)});
    Type flat_y = type_make(dy->type.elem, 1, (int64_t[]){type_numel(&dy->type)});
    Value *ops[3] = {filled(g, &flat_x, 0), reshape(g, idx, &flat_y), reshape(g, dy, &flat_y)};
    Node *s = new_node(g, NK_SCATTER_ELEMENTS, 3, ops, 1);
    node_set_int(s, AK_axis, 0);
    node_set_enum(s, AK_reduction, RED_ADD);
    dx[0] = reshape(g, add_node(g, s), xt);
    return true;
}

/* Every position gets dy / (its window's size) through a depthwise
 * transposed convolution with a kernel of ones; the divisor is the count of
 * the window that produced each output, padding counted or not. */
static bool grad_avg_pool(Grad *g, Node *n, Value *dy, Value **dx) {
    const Type *xt = &n->ops[0]->type;
    int ns = xt->rank - 2;
    Window w;
    if (!window_from_node(n, ns, NULL, &w) || w.ceil_mode)
        return false;
    Type ct = dy->type; /* [1, 1, Ho...] of 1/count */
    ct.dims[0] = ct.dims[1] = 1;
    Tensor *cnt = tensor_new(g->f->module->arena, &ct);
    int64_t strides[MAX_RANK];
    type_strides(&ct, strides);
    for (int64_t i = 0; i < tensor_numel(cnt); i++) {
        double c = 1;
        for (int a = 0; a < ns; a++) {
            int64_t o = i / strides[2 + a] % ct.dims[2 + a], in = 0;
            for (int64_t k = 0; k < w.kernel[a]; k++) {
                int64_t p = o * w.stride[a] + k * w.dilation[a] - w.pad_begin[a];
                in += w.count_include_pad ? (p < xt->dims[2 + a] + w.pad_end[a])
                                          : (p >= 0 && p < xt->dims[2 + a]);
            }
            c *= (double)in;
        }
        tensor_set_f64(cnt, i, c > 0 ? 1 / c : 0);
    }
    Value *scaled = op2(g, NK_MUL, dy, &graph_add_constant(g->f, "", cnt)->res[0]);
    Type kt = *xt; /* [C, 1, k...] of ones */
    kt.dims[0] = xt->dims[1];
    kt.dims[1] = 1;
    for (int a = 0; a < ns; a++)
        kt.dims[2 + a] = w.kernel[a];
    Value *ones = filled(g, &kt, 1);
    int64_t outpad[MAX_RANK], pads[2 * MAX_RANK];
    for (int a = 0; a < ns; a++) {
        int64_t made = (dy->type.dims[2 + a] - 1) * w.stride[a] - w.pad_begin[a] - w.pad_end[a] +
                       w.dilation[a] * (w.kernel[a] - 1) + 1;
        outpad[a] = xt->dims[2 + a] - made;
        pads[a] = w.pad_begin[a];
        pads[ns + a] = w.pad_end[a];
    }
    Value *ops[2] = {scaled, ones};
    Node *t = new_node(g, NK_CONV_TRANSPOSE, 2, ops, 1);
    node_set_ints(t, AK_kernel, ns, w.kernel);
    node_set_ints(t, AK_strides, ns, w.stride);
    node_set_ints(t, AK_pads, 2 * ns, pads);
    node_set_ints(t, AK_dilations, ns, w.dilation);
    node_set_int(t, AK_group, xt->dims[1]);
    node_set_ints(t, AK_output_padding, ns, outpad);
    dx[0] = add_node(g, t);
    return true;
}

static bool grad_global_avg_pool(Grad *g, Node *n, Value *dy, Value **dx) {
    Type t = n->ops[0]->type;
    t.dims[0] = t.dims[1] = 1;
    dx[0] = op2(g, NK_MUL, dy, filled(g, &t, 1.0 / (double)type_numel(&t)));
    return true;
}

/* dy goes to every position equal to the maximum (ties share it whole). */
static bool grad_global_max_pool(Grad *g, Node *n, Value *dy, Value **dx) {
    Value *at_max = op2(g, NK_EQUAL, n->ops[0], &n->res[0]);
    Value *ops[3] = {at_max, dy, scalar(g, dy->type.elem, 0)};
    dx[0] = add_node(g, new_node(g, NK_WHERE, 3, ops, 1));
    return true;
}

static uint32_t axis_mask(Node *n) {
    int axis = 0;
    axis_normalize(node_attr_int(n, AK_axis, -1), n->ops[0]->type.rank, &axis);
    return 1u << axis;
}

/* y (dy - sum(dy y)) along the axis. */
static bool grad_softmax(Grad *g, Node *n, Value *dy, Value **dx) {
    Value *y = &n->res[0];
    Value *s = reduce_sum(g, op2(g, NK_MUL, dy, y), axis_mask(n), true);
    dx[0] = op2(g, NK_MUL, y, op2(g, NK_SUB, dy, s));
    return true;
}

/* dy - exp(y) sum(dy) along the axis. */
static bool grad_log_softmax(Grad *g, Node *n, Value *dy, Value **dx) {
    Value *s = reduce_sum(g, dy, axis_mask(n), true);
    dx[0] = op2(g, NK_SUB, dy, op2(g, NK_MUL, op1(g, NK_EXP, &n->res[0]), s));
    return true;
}

static bool grad_transpose(Grad *g, Node *n, Value *dy, Value **dx) {
    int k, r = dy->type.rank;
    const int64_t *perm = node_attr_ints(n, AK_perm, &k);
    int64_t inv[MAX_RANK];
    for (int i = 0; i < r; i++)
        inv[perm ? perm[i] : r - 1 - i] = i;
    dx[0] = transpose(g, dy, r, inv);
    return true;
}

static bool grad_concat(Grad *g, Node *n, Value *dy, Value **dx) {
    int axis, r = dy->type.rank;
    if (!axis_normalize(node_attr_int(n, AK_axis, 0), r, &axis))
        return false;
    int64_t at = 0;
    for (int i = 0; i < n->nops; i++) {
        int64_t starts[MAX_RANK] = {0}, ends[MAX_RANK];
        memcpy(ends, dy->type.dims, sizeof ends);
        starts[axis] = at;
        ends[axis] = at += n->ops[i]->type.dims[axis];
        if (wants(g, n, i))
            dx[i] = slice(g, dy, starts, ends);
    }
    return true;
}

/* Unit steps only: dy padded with zeros back to the operand's shape. */
static bool grad_slice(Grad *g, Node *n, Value *dy, Value **dx) {
    const Type *xt = &n->ops[0]->type;
    int64_t start[MAX_RANK], step[MAX_RANK], count[MAX_RANK], pads[2 * MAX_RANK];
    slice_params(n, xt, start, step, count);
    for (int i = 0; i < xt->rank; i++) {
        if (step[i] != 1)
            return false;
        pads[i] = start[i];
        pads[xt->rank + i] = xt->dims[i] - start[i] - count[i];
    }
    Node *p = new_node(g, NK_PAD, 1, &dy, 1);
    node_set_ints(p, AK_pads, 2 * xt->rank, pads);
    node_set_enum(p, AK_mode, MODE_CONSTANT);
    node_set_float(p, AK_value, 0);
    dx[0] = add_node(g, p);
    return true;
}

/* Inference-form batch norm, y = (x - mean) s + bias with s = scale /
 * sqrt(var + eps): the statistics are constants of the model. */
static bool grad_batch_norm(Grad *g, Node *n, Value *dy, Value **dx) {
    Value *x = n->ops[0];
    int rank = x->type.rank;
    ElemKind e = x->type.elem;
    Type ct = n->ops[1]->type; /* [C, 1, ...] */
    ct.rank = rank - 1;
    for (int i = 1; i < ct.rank; i++)
        ct.dims[i] = 1;
    double eps = node_attr_float(n, AK_epsilon, 1e-5f);
    Value *inv = op2(g, NK_DIV, scalar(g, e, 1),
                     op1(g, NK_SQRT, op2(g, NK_ADD, n->ops[4], scalar(g, e, eps))));
    Value *invc = reshape(g, inv, &ct);
    uint32_t mask = ((1u << rank) - 1) & ~2u;
    if (wants(g, n, 0))
        dx[0] = op2(g, NK_MUL, dy, reshape(g, op2(g, NK_MUL, n->ops[1], inv), &ct));
    Value *xhat = op2(g, NK_MUL, op2(g, NK_SUB, x, reshape(g, n->ops[3], &ct)), invc);
    dx[1] = reduce_sum(g, op2(g, NK_MUL, dy, xhat), mask, false);
    dx[2] = reduce_sum(g, dy, mask, false);
    return true;
}


static Value *where0(Grad *g, Value *cond, Value *dy) {
    Value *ops[3] = {cond, dy, scalar(g, dy->type.elem, 0)};
    return add_node(g, new_node(g, NK_WHERE, 3, ops, 1));
}

/* dy where min <= x <= max (torch's clamp); bounds given as attributes. */
static bool grad_clip(Grad *g, Node *n, Value *dy, Value **dx) {
    if (n->nops != 1)
        return false;
    Value *x = n->ops[0], *grad = dy;
    ElemKind e = x->type.elem;
    if (node_has_attr(n, AK_min))
        grad = where0(g, op2(g, NK_GREATER_EQUAL, x, scalar(g, e, node_attr_float(n, AK_min, 0))),
                      grad);
    if (node_has_attr(n, AK_max))
        grad = where0(g, op2(g, NK_LESS_EQUAL, x, scalar(g, e, node_attr_float(n, AK_max, 0))),
                      grad);
    dx[0] = grad;
    return true;
}

/* dy (times 1/count for a mean) spread back over the reduced axes. */
static bool grad_reduce(Grad *g, Node *n, Value *dy, Value **dx) {
    const Type *xt = &n->ops[0]->type;
    uint32_t mask = reduce_axes_mask(n, xt->rank);
    Type keep = *xt;
    int64_t count = 1;
    for (int i = 0; i < xt->rank; i++) {
        if (mask & (1u << i)) {
            count *= xt->dims[i];
            keep.dims[i] = 1;
        }
    }
    Value *k = reshape(g, dy, &keep);
    if (n->kind == NK_REDUCE_MEAN)
        k = op2(g, NK_MUL, k, scalar(g, dy->type.elem, 1.0 / (double)(count ? count : 1)));
    Node *ex = new_node(g, NK_EXPAND, 1, &k, 1);
    ex->res[0].type = *xt;
    dx[0] = add_node(g, ex);
    return true;
}

/* A constant scalar exponent p: dy p x^(p-1). */
static bool grad_pow(Grad *g, Node *n, Value *dy, Value **dx) {
    double p;
    if (wants(g, n, 1) || !value_splat(n->ops[1], &p))
        return false;
    ElemKind e = dy->type.elem;
    Value *d = op2(g, NK_POW, n->ops[0], scalar(g, e, p - 1));
    dx[0] = op2(g, NK_MUL, dy, op2(g, NK_MUL, d, scalar(g, e, p)));
    return true;
}

/* d erf(x) = 2/sqrt(pi) exp(-x^2). */
static bool grad_erf(Grad *g, Node *n, Value *dy, Value **dx) {
    Value *x = n->ops[0];
    ElemKind e = x->type.elem;
    Value *ex = op1(g, NK_EXP, op1(g, NK_NEG, op2(g, NK_MUL, x, x)));
    dx[0] = op2(g, NK_MUL, dy, op2(g, NK_MUL, ex, scalar(g, e, 1.1283791670955126)));
    return true;
}

/* Constant padding: the padded region's gradient is dropped. */
static bool grad_pad(Grad *g, Node *n, Value *dy, Value **dx) {
    int k, r = dy->type.rank;
    const int64_t *pads = node_attr_ints(n, AK_pads, &k);
    if (node_attr_enum(n, AK_mode, MODE_CONSTANT) != MODE_CONSTANT || k != 2 * r)
        return false;
    int64_t starts[MAX_RANK], ends[MAX_RANK];
    for (int i = 0; i < r; i++) {
        if (pads[i] < 0 || pads[r + i] < 0)
            return false;
        starts[i] = pads[i];
        ends[i] = pads[i] + n->ops[0]->type.dims[i];
    }
    dx[0] = slice(g, dy, starts, ends);
    return true;
}

/* gelu(x) = x Phi(x) (the exact form): dy (Phi(x) + x phi(x)), with
 * Phi(x) = (1 + erf(x / sqrt 2)) / 2 and phi(x) = exp(-x^2 / 2) / sqrt(2 pi). */
static bool grad_gelu(Grad *g, Node *n, Value *dy, Value **dx) {
    Value *x = n->ops[0];
    ElemKind e = x->type.elem;
    Value *cdf = op2(g, NK_MUL, op2(g, NK_ADD, op1(g, NK_ERF, op2(g, NK_MUL, x,
                                                   scalar(g, e, 0.70710678118654752))),
                                     scalar(g, e, 1)),
                     scalar(g, e, 0.5));
    Value *pdf = op2(g, NK_MUL, op1(g, NK_EXP, op2(g, NK_MUL, op2(g, NK_MUL, x, x),
                                                   scalar(g, e, -0.5))),
                     scalar(g, e, 0.39894228040143268));
    dx[0] = op2(g, NK_MUL, dy, op2(g, NK_ADD, cdf, op2(g, NK_MUL, x, pdf)));
    return true;
}

/* Layer normalization over the axes from `axis` on, y = xh scale + bias with
 * xh = (x - mean) / sqrt(var + eps), recomputed here from x:
 *   dx = (dxh - mean(dxh) - xh mean(dxh xh)) / sqrt(var + eps), dxh = dy scale;
 * scale's and bias's gradients are dy xh and dy summed over the leading axes. */
static bool grad_layer_norm(Grad *g, Node *n, Value *dy, Value **dx) {
    Value *x = n->ops[0];
    int rank = x->type.rank, axis = (int)node_attr_int(n, AK_axis, -1);
    if (axis < 0)
        axis += rank;
    if (axis < 0 || axis >= rank)
        return false;
    ElemKind e = x->type.elem;
    uint32_t mask = ((1u << rank) - 1) & ~((1u << axis) - 1);
    double eps = node_attr_float(n, AK_epsilon, 1e-5f);
    Value *d = op2(g, NK_SUB, x, reduce(g, NK_REDUCE_MEAN, x, mask, true));
    Value *var = reduce(g, NK_REDUCE_MEAN, op2(g, NK_MUL, d, d), mask, true);
    Value *inv = op2(g, NK_DIV, scalar(g, e, 1),
                     op1(g, NK_SQRT, op2(g, NK_ADD, var, scalar(g, e, eps))));
    Value *xh = op2(g, NK_MUL, d, inv);
    if (wants(g, n, 0)) {
        Value *dxh = op2(g, NK_MUL, dy, n->ops[1]);
        Value *m1 = reduce(g, NK_REDUCE_MEAN, dxh, mask, true);
        Value *m2 = reduce(g, NK_REDUCE_MEAN, op2(g, NK_MUL, dxh, xh), mask, true);
        Value *c = op2(g, NK_SUB, op2(g, NK_SUB, dxh, m1), op2(g, NK_MUL, xh, m2));
        dx[0] = op2(g, NK_MUL, c, inv);
    }
    dx[1] = unbroadcast(g, op2(g, NK_MUL, dy, xh), &n->ops[1]->type);
    if (n->nops > 2)
        dx[2] = unbroadcast(g, dy, &n->ops[2]->type);
    return true;
}

/* gather along `axis`: dy added into zeros at the gathered positions
 * (scatter_elements with reduction add, so repeated indices accumulate).
 * The indices are flattened to one axis K and broadcast over dy's other
 * axes; negative ones count from the end, as gather's do. */
static bool grad_gather(Grad *g, Node *n, Value *dy, Value **dx) {
    const Type *xt = &n->ops[0]->type;
    Value *idx = n->ops[1];
    int rank = xt->rank, axis = (int)node_attr_int(n, AK_axis, 0);
    if (axis < 0)
        axis += rank;
    if (axis < 0 || axis >= rank || !wants(g, n, 0))
        return axis >= 0 && axis < rank;
    int64_t k = type_numel(&idx->type);
    Type yt = *xt, it = *xt;
    yt.elem = dy->type.elem;
    yt.dims[axis] = k;
    it.elem = idx->type.elem;
    for (int i = 0; i < rank; i++)
        it.dims[i] = i == axis ? k : 1;
    Value *ops3[3] = {op2(g, NK_LESS, idx, scalar(g, idx->type.elem, 0)),
                      op2(g, NK_ADD, idx, scalar(g, idx->type.elem, (double)xt->dims[axis])),
                      idx};
    Value *pos = add_node(g, new_node(g, NK_WHERE, 3, ops3, 1));
    Node *ex = new_node(g, NK_EXPAND, 1, (Value *[]){reshape(g, pos, &it)}, 1);
    ex->res[0].type = yt;
    ex->res[0].type.elem = idx->type.elem;
    Value *ops[3] = {filled(g, xt, 0), add_node(g, ex), reshape(g, dy, &yt)};
    Node *s = new_node(g, NK_SCATTER_ELEMENTS, 3, ops, 1);
    node_set_int(s, AK_axis, axis);
    node_set_enum(s, AK_reduction, RED_ADD);
    dx[0] = add_node(g, s);
    return true;
}

static const GradRule grad_rules[NK_COUNT] = {
    [NK_IDENTITY] = grad_identity,     [NK_DROPOUT] = grad_identity,
    [NK_RESHAPE] = grad_reshape,       [NK_FLATTEN] = grad_reshape,
    [NK_SQUEEZE] = grad_reshape,       [NK_UNSQUEEZE] = grad_reshape,
    [NK_NEG] = grad_neg,               [NK_RELU] = grad_relu,
    [NK_LEAKY_RELU] = grad_leaky_relu, [NK_SIGMOID] = grad_sigmoid,
    [NK_TANH] = grad_tanh,             [NK_EXP] = grad_exp,
    [NK_LOG] = grad_log,               [NK_SQRT] = grad_sqrt,
    [NK_ADD] = grad_add,               [NK_SUB] = grad_sub,
    [NK_MUL] = grad_mul,               [NK_DIV] = grad_div,
    [NK_MATMUL] = grad_matmul,         [NK_GEMM] = grad_gemm,
    [NK_CONV] = grad_conv,             [NK_MAX_POOL] = grad_max_pool,
    [NK_AVG_POOL] = grad_avg_pool,     [NK_GLOBAL_AVG_POOL] = grad_global_avg_pool,
    [NK_GLOBAL_MAX_POOL] = grad_global_max_pool,
    [NK_SOFTMAX] = grad_softmax,       [NK_LOG_SOFTMAX] = grad_log_softmax,
    [NK_TRANSPOSE] = grad_transpose,   [NK_CONCAT] = grad_concat,
    [NK_SLICE] = grad_slice,           [NK_BATCH_NORM] = grad_batch_norm,
    [NK_CLIP] = grad_clip,             [NK_REDUCE_SUM] = grad_reduce,
    [NK_REDUCE_MEAN] = grad_reduce,    [NK_POW] = grad_pow,
    [NK_ERF] = grad_erf,               [NK_PAD] = grad_pad,
    [NK_GELU] = grad_gelu,             [NK_LAYER_NORM] = grad_layer_norm,
    [NK_GATHER] = grad_gather,
};

/* ---- the backward walk ------------------------------------------------------ */

static bool is_trainable(const Node *c) {
    return c->kind == NK_CONSTANT && elem_is_float(c->res[0].type.elem) &&
           c->res[0].type.rank >= 1;
}

/* on_path: what the first output depends on; wants: what depends on a
 * trainable weight on that path. */
static void mark(Grad *g) {
    Function *f = g->f;
    g->on_path[f->outputs[0]->def->id] = true;
    for (Node *n = f->last; n; n = n->prev) {
        if (!g->on_path[n->id])
            continue;
        for (int i = 0; i < n->nops; i++) {
            /* a batch norm's running statistics are not trained */
            bool stats = n->kind == NK_BATCH_NORM && i >= 3;
            if (!stats || n->ops[i]->def->kind != NK_CONSTANT)
                g->on_path[n->ops[i]->def->id] = true;
        }
    }
    for (int i = 0; i < f->nconsts; i++)
        g->wants[f->consts[i]->id] = g->on_path[f->consts[i]->id] && is_trainable(f->consts[i]);
    for (Node *n = f->first; n; n = n->next)
        for (int i = 0; i < n->nops && !g->wants[n->id]; i++)
            g->wants[n->id] = g->wants[n->ops[i]->def->id] && g->on_path[n->id];
}

static void accumulate(Grad *g, Value *v, Value *dv) {
    Node *def = v->def;
    if (!dv || def->id >= g->nids || !g->wants[def->id])
        return;
    if (!g->grad[def->id])
        g->grad[def->id] = arena_alloc_array(g->f->module->arena, (size_t)def->nres,
                                             sizeof(Value *));
    Value **slot = &g->grad[def->id][v->index];
    *slot = *slot ? op2(g, NK_ADD, *slot, dv) : dv;
}

/* Every node on the path whose result depends on a weight, last first; the
 * nodes without a rule are listed together, in one error. */
static bool backward(Grad *g, Node *last) {
    StrBuf missing;
    sb_init(&missing);
    int nmissing = 0;
    /* reached: below an operator without a gradient, still searched for
     * more of them */
    bool *reached = calloc((size_t)g->nids, sizeof *reached);
    for (Node *n = last, *prev; n; n = prev) {
        prev = n->prev;
        if (n->id >= g->nids || !g->wants[n->id])
            continue;
        bool has = g->grad[n->id] && g->grad[n->id][0];
        if (!has && !reached[n->id])
            continue;
        GradRule rule = grad_rules[n->kind];
        g->name = arena_printf(g->f->module->arena, "%s.grad",
                               n->name[0] ? n->name : node_kind_name(n->kind));
        Value *const *ops = n->ops;
        int nops = n->nops;
        Value **dx = arena_alloc_array(g->f->module->arena, (size_t)nops + 1, sizeof *dx);
        if (n->nres != 1 && n->kind != NK_MAX_POOL)
            rule = NULL;
        bool ok = rule && (!has || rule(g, n, g->grad[n->id][0], dx));
        if (ok && has) {
            for (int i = 0; i < nops; i++)
                accumulate(g, ops[i], dx[i]);
            continue;
        }
        if (!ok) /* no rule, or one that declined these attributes */
            sb_printf(&missing, "%s%s", nmissing++ ? ", " : "", node_where(n));
        for (int i = 0; i < nops; i++)
            if (ops[i]->def->id < g->nids)
                reached[ops[i]->def->id] = true;
    }
    free(reached);
    if (nmissing)
        diag_error(g->d, NULL, "differentiate: no gradient for %d operator%s on the path to the loss: %s",
                   nmissing, nmissing > 1 ? "s" : "", sb_str(&missing));
    sb_free(&missing);
    return !nmissing && g->ok;
}

/* ---- training-mode batch normalization ----------------------------------- */

/* A batch norm's running statistic: the constant becomes a parameter of the
 * same name (state the caller carries); NULL when it is not a constant. */
static Value *stat_param(Grad *g, Value *v) {
    Node *c = v->def;
    if (c->kind == NK_PLACEHOLDER)
        return v;
    if (c->kind != NK_CONSTANT || !c->name[0])
        return NULL;
    Node *p = graph_add_param(g->f, c->name, &v->type);
    p->label = c->label;
    graph_replace_uses(g->f, v, &p->res[0]);
    graph_remove_node(g->f, c);
    return &p->res[0];
}

/* torch's BatchNorm in training mode (ONNX's training_mode=1), written with
 * reductions and arithmetic before the node it replaces, so that the
 * existing rules differentiate it:
 *   mu = mean(x), var = mean((x - mu)^2) over every axis but 1,
 *   y = (x - mu) / sqrt(var + eps) * gamma + beta;
 * the running statistics move by torch's momentum 0.1 (ONNX's 0.9), the
 * variance unbiased (times n/(n-1)) as torch's is. */
/* A running statistic the training function can carry: a named constant. */
static bool is_stat(const Value *v) {
    return v->def->kind == NK_CONSTANT && v->def->name[0];
}

static void train_batch_norm(Grad *g, Node *n) {
    Value *x = n->ops[0];
    if (!is_stat(n->ops[3]) || !is_stat(n->ops[4]) || x->type.rank < 2)
        return; /* statistics computed in the graph: left as inference */
    Value *rm = stat_param(g, n->ops[3]), *rv = stat_param(g, n->ops[4]);
    ElemKind e = x->type.elem;
    int rank = x->type.rank;
    Type kt = x->type, ct = n->ops[3]->type;
    int64_t count = 1;
    for (int i = 0; i < rank; i++) {
        if (i != 1) {
            count *= kt.dims[i];
            kt.dims[i] = 1;
        }
    }
    uint32_t mask = ((1u << rank) - 1) & ~2u;
    const double momentum = 0.1, eps = node_attr_float(n, AK_epsilon, 1e-5f);
    g->at = n;
    g->name = n->name[0] ? n->name : "batch_norm";
    Value *mu = reduce(g, NK_REDUCE_MEAN, x, mask, true);
    Value *d = op2(g, NK_SUB, x, mu);
    Value *var = reduce(g, NK_REDUCE_MEAN, op2(g, NK_MUL, d, d), mask, true);
    Value *inv = op2(g, NK_DIV, scalar(g, e, 1),
                     op1(g, NK_SQRT, op2(g, NK_ADD, var, scalar(g, e, eps))));
    Value *y = op2(g, NK_ADD, op2(g, NK_MUL, op2(g, NK_MUL, d, inv), reshape(g, n->ops[1], &kt)),
                   reshape(g, n->ops[2], &kt));
    double unbias = count > 1 ? (double)count / (double)(count - 1) : 1;
    Value *upd[2] = {
        op2(g, NK_ADD, op2(g, NK_MUL, rm, scalar(g, e, 1 - momentum)),
            op2(g, NK_MUL, reshape(g, mu, &ct), scalar(g, e, momentum))),
        op2(g, NK_ADD, op2(g, NK_MUL, rv, scalar(g, e, 1 - momentum)),
            op2(g, NK_MUL, reshape(g, var, &ct), scalar(g, e, momentum * unbias))),
    };
    g->at = NULL;
    for (int i = 0; i < 2; i++) {
        g->stats[g->nstats] = upd[i];
        g->stat_names[g->nstats++] =
            arena_printf(g->f->module->arena, "%s.updated", (i ? rv : rm)->def->name);
    }
    graph_replace_uses(g->f, &n->res[0], y);
    graph_remove_node(g->f, n);
}

/* Dropout in training mode (torch's): y = x * keep / (1 - ratio), keep =
 * noise >= ratio, with noise a new input `<node>.noise` shaped like x that
 * the caller fills with uniform [0, 1) values from a seeded generator, so
 * the graph stays a pure function and a run is reproducible. The mask is a
 * constant factor for the gradient (mul's rule). Ratio 0 stays the identity. */
static void train_dropout(Grad *g, Node *n) {
    double ratio = node_attr_float(n, AK_ratio, 0);
    Value *x = n->ops[0];
    if (ratio <= 0 || ratio >= 1 || !elem_is_float(x->type.elem))
        return;
    ElemKind e = x->type.elem;
    const char *base = n->name[0] ? n->name : "dropout";
    Node *p = graph_add_param(g->f, arena_printf(g->f->module->arena, "%s.noise", base),
                              &x->type);
    p->label = p->name;
    g->at = n;
    g->name = base;
    Node *c = new_node(g, NK_CAST, 1, (Value *[]){op2(g, NK_GREATER_EQUAL, &p->res[0],
                                                      scalar(g, e, ratio))}, 1);
    node_set_elem(c, AK_to, e);
    Value *keep = op2(g, NK_MUL, add_node(g, c), scalar(g, e, 1 / (1 - ratio)));
    Value *y = op2(g, NK_MUL, x, keep);
    g->at = NULL;
    graph_replace_uses(g->f, &n->res[0], y);
    graph_remove_node(g->f, n);
}

/* Every batch norm: in training mode for the training function; with its
 * statistics as inputs (the training function's, as they move) for the
 * forward-only one. Every dropout: in training mode for the training
 * function, the identity for the forward-only one. */
static void training_forms(Grad *g, bool forward_only) {
    int count = 0;
    for (Node *n = g->f->first; n; n = n->next)
        count += n->kind == NK_BATCH_NORM;
    g->stats = arena_alloc_array(g->f->module->arena, (size_t)count * 2 + 1, sizeof(Value *));
    g->stat_names = arena_alloc_array(g->f->module->arena, (size_t)count * 2 + 1,
                                      sizeof(const char *));
    for (Node *n = g->f->first, *next; n; n = next) {
        next = n->next;
        if (n->kind == NK_DROPOUT && !forward_only)
            train_dropout(g, n);
        if (n->kind != NK_BATCH_NORM || n->nres != 1)
            continue;
        if (!forward_only) {
            train_batch_norm(g, n);
        } else if (is_stat(n->ops[3]) && is_stat(n->ops[4])) {
            stat_param(g, n->ops[3]);
            stat_param(g, n->ops[4]);
        }
    }
}

/* ---- the loss and the update --------------------------------------------------- */

/* A new parameter is printed by its name, as the importer's are. */
static Value *labeled(Node *p) {
    p->label = p->name;
    return &p->res[0];
}

/* Adds `labels` and returns the scalar loss; seeds the output's gradient. */
static Value *add_loss(Grad *g, const TrainSpec *spec, Value *out) {
    Function *f = g->f;
    const Type *zt = &out->type;
    ElemKind e = zt->elem;
    if (spec->loss == LOSS_MSE) {
        Value *t = labeled(graph_add_param(f, "labels", zt));
        Value *diff = op2(g, NK_SUB, out, t);
        Value *sq = reduce_sum(g, op2(g, NK_MUL, diff, diff), (1u << zt->rank) - 1, false);
        double inv = 1.0 / (double)type_numel(zt);
        accumulate(g, out, op2(g, NK_MUL, diff, scalar(g, e, 2 * inv)));
        return op2(g, NK_MUL, sq, scalar(g, e, inv));
    }
    /* softmax cross-entropy over axis 1, integer labels: the mean of
     * -log_softmax at the label; its gradient (softmax - one_hot) / count */
    Type lt = *zt;
    lt.elem = ELEM_I64;
    lt.rank = zt->rank - 1;
    for (int i = 1; i < lt.rank; i++)
        lt.dims[i] = zt->dims[i + 1];
    Value *labels = labeled(graph_add_param(f, "labels", &lt));
    Node *ls = graph_add_node(f, NK_LOG_SOFTMAX, 1, &out, 1);
    node_set_int(ls, AK_axis, 1);
    Value *logp = add_node(g, ls);
    Value *ops[2] = {logp, labels};
    Node *nll = graph_add_node(f, NK_NLL_LOSS, 2, ops, 1);
    node_set_enum(nll, AK_reduction, RED_MEAN);
    Value *loss = add_node(g, nll);
    Type vt = type_make(e, 1, (int64_t[]){2});
    Tensor *onoff = tensor_new(f->module->arena, &vt);
    tensor_set_f64(onoff, 1, 1);
    Value *hot_ops[2] = {labels, &graph_add_constant(f, "", onoff)->res[0]};
    Node *hot = graph_add_node(f, NK_ONE_HOT, 2, hot_ops, 1);
    hot->res[0].type = *zt;
    node_set_int(hot, AK_axis, 1);
    Value *diff = op2(g, NK_SUB, op1(g, NK_EXP, logp), add_node(g, hot));
    accumulate(g, out, op2(g, NK_MUL, diff, scalar(g, e, 1.0 / (double)type_numel(&lt))));
    return loss;
}

static const char *suffixed(Function *f, const char *name, const char *suffix) {
    size_t n = strlen(name) + strlen(suffix) + 1;
    char *s = arena_alloc(f->module->arena, n);
    snprintf(s, n, "%s%s", name, suffix);
    return s;
}

/* The optimiser's state besides the weights: parameters that the caller
 * carries from step to step and starts at zero, each with its
 * "<name>.updated" output. */
typedef struct Step {
    Grad *g;
    Value **outs;
    const char **names;
    int nouts;
} Step;

static Value *state(Step *st, const char *name, const Type *t, const char *label) {
    Node *p = graph_add_param(st->g->f, name, t);
    p->label = label ? p->name : NULL;
    return &p->res[0];
}

static void update(Step *st, const char *name, Value *v) {
    st->outs[st->nouts] = v;
    st->names[st->nouts++] = suffixed(st->g->f, name, ".updated");
}

/* g += wd W; with momentum v' = m v + g; W' = W - lr v' (torch's SGD). */
static Value *sgd_step(Step *st, const TrainSpec *spec, Node *weight, Value *w, Value *grad) {
    Grad *g = st->g;
    ElemKind e = w->type.elem;
    if (spec->momentum != 0) {
        const char *name = suffixed(g->f, weight->name, ".velocity");
        Value *v = state(st, name, &w->type, weight->label);
        grad = op2(g, NK_ADD, op2(g, NK_MUL, v, scalar(g, e, spec->momentum)), grad);
        update(st, name, grad);
    }
    return op2(g, NK_SUB, w, op2(g, NK_MUL, grad, scalar(g, e, spec->lr)));
}

/* torch.optim.Adam (L2 weight decay added to the gradient, as torch's):
 *   m' = b1 m + (1-b1) g,  v' = b2 v + (1-b2) g^2,
 *   W' = W - lr/c1 * m' / (sqrt(v')/sqrt(c2) + eps)
 * with the bias corrections c_i = 1 - b_i^t. They are carried as state,
 * c' = (1-b) + b c from c = 0, rather than computed as pow(b, t): for b2 =
 * 0.999, 1 - pow(b2, t) in f32 loses five digits to cancellation in the
 * first steps, where the correction matters most. */
static Value *adam_step(Step *st, const TrainSpec *spec, Node *weight, Value *w, Value *grad,
                        Value *const c[2]) {
    Grad *g = st->g;
    ElemKind e = w->type.elem;
    const char *mname = suffixed(g->f, weight->name, ".adam_m");
    const char *vname = suffixed(g->f, weight->name, ".adam_v");
    Value *m = state(st, mname, &w->type, weight->label);
    Value *v = state(st, vname, &w->type, weight->label);
    double b1 = spec->beta1, b2 = spec->beta2;
    Value *m2 = op2(g, NK_ADD, op2(g, NK_MUL, m, scalar(g, e, b1)),
                    op2(g, NK_MUL, grad, scalar(g, e, 1 - b1)));
    Value *v2 = op2(g, NK_ADD, op2(g, NK_MUL, v, scalar(g, e, b2)),
                    op2(g, NK_MUL, op2(g, NK_MUL, grad, grad), scalar(g, e, 1 - b2)));
    update(st, mname, m2);
    update(st, vname, v2);
    Value *denom = op2(g, NK_ADD, op2(g, NK_DIV, op1(g, NK_SQRT, v2), op1(g, NK_SQRT, c[1])),
                       scalar(g, e, spec->eps));
    Value *rate = op2(g, NK_DIV, scalar(g, e, spec->lr), c[0]);
    return op2(g, NK_SUB, w, op2(g, NK_MUL, op2(g, NK_DIV, m2, denom), rate));
}

/* The two bias corrections after this step, and their state. */
static void adam_corrections(Step *st, const TrainSpec *spec, ElemKind e, Value *c[2]) {
    Grad *g = st->g;
    static const char *const names[2] = {"adam.bias_correction1", "adam.bias_correction2"};
    Type t = type_scalar(e);
    for (int i = 0; i < 2; i++) {
        double b = i ? spec->beta2 : spec->beta1;
        Value *prev = state(st, names[i], &t, names[i]);
        c[i] = op2(g, NK_ADD, op2(g, NK_MUL, prev, scalar(g, e, b)), scalar(g, e, 1 - b));
        update(st, names[i], c[i]);
    }
}

/* The weights become parameters; the outputs carry W' and the optimiser's
 * state after the step. */
static void add_updates(Grad *g, const TrainSpec *spec, Value *loss) {
    Function *f = g->f;
    int nout = f->noutputs, nw = 0;
    Node **weights = calloc((size_t)f->nconsts + 1, sizeof *weights);
    for (int i = 0; i < f->nconsts; i++) {
        Node *c = f->consts[i];
        if (c->id >= g->nids || !g->wants[c->id])
            continue;
        if ((g->grad[c->id] && g->grad[c->id][0]) || spec->forward_only)
            weights[nw++] = c;
    }
    /* at most: loss, outputs, per weight W' and two moments, two corrections */
    int cap = 1 + nout + 3 * nw + 2;
    Step st = {.g = g, .outs = calloc((size_t)cap, sizeof(Value *)),
               .names = calloc((size_t)cap, sizeof(const char *))};
    st.outs[st.nouts] = loss;
    st.names[st.nouts++] = "loss";
    for (int i = 0; i < nout; i++) {
        st.outs[st.nouts] = f->outputs[i];
        st.names[st.nouts++] = f->output_names[i];
    }
    Node **params = calloc((size_t)nw + 1, sizeof *params);
    g->name = spec->optimizer == OPTIM_ADAM ? "adam" : "sgd";
    /* printed by the constant's %name when it had one (it goes) */
    for (int i = 0; i < nw; i++) {
        params[i] = graph_add_param(f, weights[i]->name, &weights[i]->res[0].type);
        params[i]->label = weights[i]->label;
    }
    /* W' first, in weight order, then the state; the caller pairs them by name */
    Value **updated = calloc((size_t)nw + 1, sizeof *updated);
    Value *c[2] = {NULL, NULL};
    if (!spec->forward_only && nw && spec->optimizer == OPTIM_ADAM)
        adam_corrections(&st, spec, weights[0]->res[0].type.elem, c);
    for (int i = 0; !spec->forward_only && i < nw; i++) {
        Value *w = &weights[i]->res[0], *grad = g->grad[weights[i]->id][0];
        if (spec->weight_decay != 0)
            grad = op2(g, NK_ADD, grad,
                       op2(g, NK_MUL, w, scalar(g, w->type.elem, spec->weight_decay)));
        updated[i] = spec->optimizer == OPTIM_ADAM ? adam_step(&st, spec, weights[i], w, grad, c)
                                                   : sgd_step(&st, spec, weights[i], w, grad);
    }
    int nstate = st.nouts - 1 - nout, total = st.nouts + (spec->forward_only ? 0 : nw);
    Value **outs = calloc((size_t)(total + g->nstats) + 1, sizeof *outs);
    const char **names = calloc((size_t)(total + g->nstats) + 1, sizeof *names);
    memcpy(outs, st.outs, (size_t)(1 + nout) * sizeof *outs);
    memcpy(names, st.names, (size_t)(1 + nout) * sizeof *names);
    int k = 1 + nout;
    for (int i = 0; !spec->forward_only && i < nw; i++, k++) {
        outs[k] = updated[i];
        names[k] = suffixed(f, weights[i]->name, ".updated");
    }
    memcpy(outs + k, st.outs + 1 + nout, (size_t)nstate * sizeof *outs);
    memcpy(names + k, st.names + 1 + nout, (size_t)nstate * sizeof *names);
    memcpy(outs + total, g->stats, (size_t)g->nstats * sizeof *outs);
    memcpy(names + total, g->stat_names, (size_t)g->nstats * sizeof *names);
    graph_set_outputs(f, total + g->nstats, outs, names);
    for (int i = 0; i < nw; i++) {
        graph_replace_uses(f, &weights[i]->res[0], &params[i]->res[0]);
        graph_remove_node(f, weights[i]);
    }
    pass_stat(g->ctx, "weights-trained", nw);
    free(weights);
    free(st.outs);
    free(st.names);
    free(outs);
    free(names);
    free(updated);
    free(params);
}

bool pass_differentiate(Function *f, PassContext *ctx) {
    const TrainSpec *spec = ctx->train;
    if (!spec)
        return false;
    if (f->noutputs < 1 || !elem_is_float(f->outputs[0]->type.elem)) {
        diag_error(ctx->d, NULL, "differentiate: the first output must be a float tensor");
        return false;
    }
    const Type *zt = &f->outputs[0]->type;
    if (spec->loss == LOSS_SOFTMAX_CE && zt->rank < 2) {
        char b[TYPE_STR_MAX];
        diag_error(ctx->d, NULL,
                   "differentiate: softmax-cross-entropy needs an output of rank >= 2 "
                   "([batch, classes, ...]); '%s' is %s",
                   f->output_names[0], type_str(zt, b));
        return false;
    }
    for (int i = 0; i < f->nparams; i++) {
        if (!strcmp(f->params[i]->name, "labels")) {
            diag_error(ctx->d, NULL, "differentiate: the model has an input named 'labels', "
                                     "the name the training function gives the labels");
            return false;
        }
    }
    Grad g = {.f = f, .d = ctx->d, .ok = true, .ctx = ctx};
    training_forms(&g, spec->forward_only);
    g.name = "loss";
    g.nids = f->next_id;
    g.grad = calloc((size_t)g.nids, sizeof *g.grad);
    g.wants = calloc((size_t)g.nids, sizeof *g.wants);
    g.on_path = calloc((size_t)g.nids, sizeof *g.on_path);
    mark(&g);
    Node *last = f->last;
    Value *out = f->outputs[0];
    Value *loss = add_loss(&g, spec, out);
    bool ok = g.ok && (spec->forward_only || backward(&g, last));
    if (ok)
        add_updates(&g, spec, loss);
    free(g.grad);
    free(g.wants);
    free(g.on_path);
    return ok;
}

/* ---- ONNX's Gradient ---------------------------------------------------- */

/* One gradient node (y, xs...): the backward walk from y, seeded with ones,
 * over what depends on an x; each result becomes x's accumulated gradient,
 * or zeros when y does not depend on x. The new nodes go before it. */
static bool expand_gradient(Function *f, PassContext *ctx, Node *gn) {
    Grad g = {.f = f, .d = ctx->d, .ok = true, .ctx = ctx, .at = gn};
    g.name = gn->name;
    g.nids = f->next_id;
    g.grad = calloc((size_t)g.nids, sizeof *g.grad);
    g.wants = calloc((size_t)g.nids, sizeof *g.wants);
    g.on_path = calloc((size_t)g.nids, sizeof *g.on_path);
    Value *y = gn->ops[0];
    g.on_path[y->def->id] = true;
    for (Node *n = gn->prev; n; n = n->prev)
        for (int i = 0; g.on_path[n->id] && i < n->nops; i++)
            if (n->ops[i])
                g.on_path[n->ops[i]->def->id] = true;
    for (int i = 1; i < gn->nops; i++)
        g.wants[gn->ops[i]->def->id] = g.on_path[gn->ops[i]->def->id];
    for (Node *n = f->first; n && n != gn; n = n->next)
        for (int i = 0; i < n->nops && !g.wants[n->id]; i++)
            g.wants[n->id] = n->ops[i] && g.wants[n->ops[i]->def->id] && g.on_path[n->id];
    accumulate(&g, y, filled(&g, &y->type, 1));
    bool ok = g.ok && backward(&g, gn->prev);
    for (int i = 1; ok && i < gn->nops; i++) {
        Value *x = gn->ops[i];
        Value *dx = g.grad[x->def->id] ? g.grad[x->def->id][x->index] : NULL;
        graph_replace_uses(f, &gn->res[i - 1], dx ? dx : filled(&g, &x->type, 0));
    }
    if (ok)
        graph_remove_node(f, gn);
    free(g.grad);
    free(g.wants);
    free(g.on_path);
    return ok;
}

bool pass_gradients(Function *f, PassContext *ctx) {
    bool changed = false;
    for (Node *n = f->first, *next; n; n = next) {
        next = n->next;
        if (n->kind != NK_GRADIENT)
            continue;
        if (!expand_gradient(f, ctx, n))
            return false;
        pass_stat(ctx, "gradients", 1);
        changed = true;
    }
    return changed;
}
