/* lower: every node the backend does not run natively is rewritten into
 * nodes it does (the Glow paper's central idea: a new backend implements a
 * small set of linear-algebra primitives). The rules:
 *   gemm            -> [transpose] matmul [* alpha] [+ beta * c]
 *   fully_connected -> matmul + b [activation]
 *   batch_norm      -> x * s + t      (s, t per channel, folded constants)
 *   instance_norm, layer_norm -> reduce_mean, sub, mul, sqrt, div, mul, add
 *   softmax         -> exp(x - max) / sum;  log_softmax likewise
 *   hard_swish, hard_sigmoid, gelu -> mul, add, clip, erf
 *   reduce_mean     -> reduce_sum * (1/n);  reduce_l1/l2/sum_square/log_sum/
 *                      log_sum_exp -> elementwise + reduce_sum (+ sqrt/log)
 *   flatten, squeeze, unsqueeze -> reshape
 *   pad (constant)  -> concat with splat constants, axis by axis
 *   resize          -> per resized axis: transpose, matmul with constant
 *                      weights, transpose back
 * A node without a rule stays as it is (the interpreter runs every kind).
 * Requires nothing; invalidates the schedule. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backends/interp/interp.h"
#include "core/infer.h"
#include "passes/pass.h"

typedef struct Builder {
    Function *f;
    Node *pos;
    const char *name;
    DiagList *d;
    bool ok;
} Builder;

static Value *b_add_node(Builder *b, Node *n) {
    n->name = b->name;
    if (!infer_node(n, b->d))
        b->ok = false;
    return &n->res[0];
}

static Value *b_op(Builder *b, NodeKind k, Value *x, Value *y) {
    Value *ops[2] = {x, y};
    return b_add_node(b, graph_insert_before(b->f, b->pos, k, y ? 2 : 1, ops, 1));
}

static Value *b_const(Builder *b, Tensor *t) {
    Node *c = graph_add_constant(b->f, b->name, t);
    return &c->res[0];
}

static Value *b_scalar(Builder *b, ElemKind e, double v) {
    Type t = type_scalar(e);
    Tensor *x = tensor_new(b->f->module->arena, &t);
    tensor_set_f64(x, 0, v);
    return b_const(b, x);
}

static Value *b_reshape(Builder *b, Value *x, const Type *t) {
    Node *n = graph_insert_before(b->f, b->pos, NK_RESHAPE, 1, &x, 1);
    n->res[0].type = *t;
    return b_add_node(b, n);
}

static Value *b_reduce(Builder *b, NodeKind k, Value *x, uint32_t mask, bool keep) {
    Node *n = graph_insert_before(b->f, b->pos, k, 1, &x, 1);
    int64_t axes[MAX_RANK];
    int na = 0;
    for (int i = 0; i < x->type.rank; i++)
        if (mask & (1u << i))
            axes[na++] = i;
    node_set_ints(n, AK_axes, na, axes);
    node_set_int(n, AK_keepdims, keep);
    return b_add_node(b, n);
}

static Value *b_clip(Builder *b, Value *x, float lo, float hi) {
    Node *n = graph_insert_before(b->f, b->pos, NK_CLIP, 1, &x, 1);
    node_set_float(n, AK_min, lo);
    node_set_float(n, AK_max, hi);
    return b_add_node(b, n);
}

static int64_t mask_count(const Type *t, uint32_t mask) {
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        if (mask & (1u << i))
            n *= t->dims[i];
    return n;
}

/* A per-channel vector [C] as [C, 1, ..., 1] for an NC... tensor of `rank`. */
static Value *b_channel(Builder *b, Tensor *v, int rank) {
    Type t = v->type;
    t.rank = rank - 1;
    for (int i = 1; i < t.rank; i++)
        t.dims[i] = 1;
    v->type = t;
    return b_const(b, v);
}

/* ---- rules ------------------------------------------------------------------ */

static Value *lower_gemm(Builder *b, Node *n) {
    Value *a = n->ops[0], *w = n->ops[1];
    int64_t perm[2] = {1, 0};
    if (node_attr_int(n, AK_trans_a, 0)) {
        Node *t = graph_insert_before(b->f, b->pos, NK_TRANSPOSE, 1, &a, 1);
        node_set_ints(t, AK_perm, 2, perm);
        a = b_add_node(b, t);
    }
    if (node_attr_int(n, AK_trans_b, 0)) {
        Node *t = graph_insert_before(b->f, b->pos, NK_TRANSPOSE, 1, &w, 1);
        node_set_ints(t, AK_perm, 2, perm);
        w = b_add_node(b, t);
    }
    ElemKind e = n->res[0].type.elem;
    Value *y = b_op(b, NK_MATMUL, a, w);
    double alpha = node_attr_float(n, AK_alpha, 1), beta = node_attr_float(n, AK_beta, 1);
    if (alpha != 1)
        y = b_op(b, NK_MUL, y, b_scalar(b, e, alpha));
    if (n->nops == 3 && beta != 0) {
        Value *c = n->ops[2];
        if (beta != 1)
            c = b_op(b, NK_MUL, c, b_scalar(b, e, beta));
        y = b_op(b, NK_ADD, y, c);
    }
    return y;
}

static Value *apply_act(Builder *b, const Node *n, Value *y) {
    switch (node_attr_act(n, AK_act)) {
    case ACT_RELU: return b_op(b, NK_RELU, y, NULL);
    case ACT_SIGMOID: return b_op(b, NK_SIGMOID, y, NULL);
    case ACT_TANH: return b_op(b, NK_TANH, y, NULL);
    case ACT_SILU: return b_op(b, NK_MUL, y, b_op(b, NK_SIGMOID, y, NULL));
    case ACT_CLIP:
        return b_clip(b, y, node_attr_float(n, AK_act_alpha, -INFINITY),
                      node_attr_float(n, AK_act_beta, INFINITY));
    case ACT_LEAKY_RELU: {
        Node *l = graph_insert_before(b->f, b->pos, NK_LEAKY_RELU, 1, &y, 1);
        node_set_float(l, AK_alpha, node_attr_float(n, AK_act_alpha, 0.01f));
        return b_add_node(b, l);
    }
    case ACT_NONE:
    case ACT_COUNT: break;
    }
    return y;
}

static Value *lower_fully_connected(Builder *b, Node *n) {
    Value *y = b_op(b, NK_ADD, b_op(b, NK_MATMUL, n->ops[0], n->ops[1]), n->ops[2]);
    return apply_act(b, n, y);
}

/* x * s + t with s = scale / sqrt(var + eps), t = bias - mean * s, when the
 * parameters are constants; the same computed at run time otherwise. */
static Value *lower_batch_norm(Builder *b, Node *n) {
    Value *x = n->ops[0];
    int rank = x->type.rank;
    double eps = node_attr_float(n, AK_epsilon, 1e-5f);
    const Tensor *scale = value_constant(n->ops[1]), *bias = value_constant(n->ops[2]);
    const Tensor *mean = value_constant(n->ops[3]), *var = value_constant(n->ops[4]);
    if (scale && bias && mean && var) {
        Arena *a = b->f->module->arena;
        Tensor *s = tensor_new(a, &scale->type), *t = tensor_new(a, &scale->type);
        for (int64_t c = 0; c < tensor_numel(scale); c++) {
            double sc = tensor_get_f64(scale, c) / sqrt(tensor_get_f64(var, c) + eps);
            tensor_set_f64(s, c, sc);
            tensor_set_f64(t, c, tensor_get_f64(bias, c) - tensor_get_f64(mean, c) * sc);
        }
        return b_op(b, NK_ADD, b_op(b, NK_MUL, x, b_channel(b, s, rank)), b_channel(b, t, rank));
    }
    Type ct = n->ops[1]->type;
    ct.rank = rank - 1;
    for (int i = 1; i < ct.rank; i++)
        ct.dims[i] = 1;
    Value *sd = b_op(b, NK_SQRT, b_op(b, NK_ADD, n->ops[4], b_scalar(b, ct.elem, eps)), NULL);
    Value *s = b_reshape(b, b_op(b, NK_DIV, n->ops[1], sd), &ct);
    Value *m = b_reshape(b, n->ops[3], &ct), *bi = b_reshape(b, n->ops[2], &ct);
    return b_op(b, NK_ADD, b_op(b, NK_MUL, b_op(b, NK_SUB, x, m), s), bi);
}

/* (x - mean) / sqrt(var + eps) over the axes in mask, means kept as dims. */
static Value *normalize(Builder *b, Value *x, uint32_t mask, double eps) {
    ElemKind e = x->type.elem;
    Value *mean = b_reduce(b, NK_REDUCE_MEAN, x, mask, true);
    Value *d = b_op(b, NK_SUB, x, mean);
    Value *var = b_reduce(b, NK_REDUCE_MEAN, b_op(b, NK_MUL, d, d), mask, true);
    Value *sd = b_op(b, NK_SQRT, b_op(b, NK_ADD, var, b_scalar(b, e, eps)), NULL);
    return b_op(b, NK_DIV, d, sd);
}

static Value *lower_instance_norm(Builder *b, Node *n) {
    Value *x = n->ops[0];
    int rank = x->type.rank;
    uint32_t spatial = ((1u << rank) - 1) & ~3u;
    Value *y = normalize(b, x, spatial, node_attr_float(n, AK_epsilon, 1e-5f));
    Type ct = n->ops[1]->type;
    ct.rank = rank - 1;
    for (int i = 1; i < ct.rank; i++)
        ct.dims[i] = 1;
    y = b_op(b, NK_MUL, y, b_reshape(b, n->ops[1], &ct));
    return b_op(b, NK_ADD, y, b_reshape(b, n->ops[2], &ct));
}

static Value *lower_layer_norm(Builder *b, Node *n) {
    Value *x = n->ops[0];
    int axis;
    axis_normalize(node_attr_int(n, AK_axis, -1), x->type.rank, &axis);
    uint32_t mask = ((1u << x->type.rank) - 1) & ~((1u << axis) - 1);
    Value *y = normalize(b, x, mask, node_attr_float(n, AK_epsilon, 1e-5f));
    y = b_op(b, NK_MUL, y, n->ops[1]);
    return n->nops == 3 ? b_op(b, NK_ADD, y, n->ops[2]) : y;
}

static Value *lower_softmax(Builder *b, Node *n, bool log_form) {
    Value *x = n->ops[0];
    int axis;
    axis_normalize(node_attr_int(n, AK_axis, -1), x->type.rank, &axis);
    uint32_t mask = 1u << axis;
    Value *shifted = b_op(b, NK_SUB, x, b_reduce(b, NK_REDUCE_MAX, x, mask, true));
    Value *e = b_op(b, NK_EXP, shifted, NULL);
    Value *sum = b_reduce(b, NK_REDUCE_SUM, e, mask, true);
    if (log_form)
        return b_op(b, NK_SUB, shifted, b_op(b, NK_LOG, sum, NULL));
    return b_op(b, NK_DIV, e, sum);
}

static Value *lower_hard_sigmoid(Builder *b, Value *x, double alpha, double beta) {
    ElemKind e = x->type.elem;
    Value *lin = b_op(b, NK_ADD, b_op(b, NK_MUL, x, b_scalar(b, e, alpha)), b_scalar(b, e, beta));
    return b_clip(b, lin, 0, 1);
}

static Value *lower_gelu(Builder *b, Value *x) {
    ElemKind e = x->type.elem;
    Value *erf = b_op(b, NK_ERF, b_op(b, NK_MUL, x, b_scalar(b, e, M_SQRT1_2)), NULL);
    Value *half = b_op(b, NK_MUL, x, b_scalar(b, e, 0.5));
    return b_op(b, NK_MUL, half, b_op(b, NK_ADD, erf, b_scalar(b, e, 1)));
}

static Value *lower_reduce(Builder *b, Node *n) {
    Value *x = n->ops[0];
    uint32_t mask = reduce_axes_mask(n, x->type.rank);
    bool keep = node_attr_int(n, AK_keepdims, 1) != 0;
    ElemKind e = x->type.elem;
    switch (n->kind) {
    case NK_REDUCE_MEAN: {
        int64_t count = mask_count(&x->type, mask);
        Value *s = b_reduce(b, NK_REDUCE_SUM, x, mask, keep);
        if (!elem_is_float(e))
            return b_op(b, NK_DIV, s, b_scalar(b, e, (double)count));
        return b_op(b, NK_MUL, s, b_scalar(b, e, 1.0 / (double)(count ? count : 1)));
    }
    case NK_REDUCE_L1: return b_reduce(b, NK_REDUCE_SUM, b_op(b, NK_ABS, x, NULL), mask, keep);
    case NK_REDUCE_SUM_SQUARE:
        return b_reduce(b, NK_REDUCE_SUM, b_op(b, NK_MUL, x, x), mask, keep);
    case NK_REDUCE_L2:
        return b_op(b, NK_SQRT, b_reduce(b, NK_REDUCE_SUM, b_op(b, NK_MUL, x, x), mask, keep),
                    NULL);
    case NK_REDUCE_LOG_SUM:
        return b_op(b, NK_LOG, b_reduce(b, NK_REDUCE_SUM, x, mask, keep), NULL);
    case NK_REDUCE_LOG_SUM_EXP:
        return b_op(b, NK_LOG, b_reduce(b, NK_REDUCE_SUM, b_op(b, NK_EXP, x, NULL), mask, keep),
                    NULL);
    default: return NULL;
    }
}

/* A splat block of `x`'s kind with dims[axis] = len, for constant padding. */
static Value *pad_block(Builder *b, const Type *t, int axis, int64_t len, double value) {
    Type bt = *t;
    bt.dims[axis] = len;
    Tensor *x = tensor_new(b->f->module->arena, &bt);
    for (int64_t i = 0; i < tensor_numel(x); i++)
        tensor_set_f64(x, i, value);
    return b_const(b, x);
}

/* Axis by axis: negative pads slice, positive pads concatenate splats. */
static Value *lower_pad(Builder *b, Node *n) {
    Value *x = n->ops[0];
    int k;
    const int64_t *pads = node_attr_ints(n, AK_pads, &k);
    double value = node_attr_float(n, AK_value, 0);
    int rank = x->type.rank;
    for (int ax = 0; ax < rank; ax++) {
        int64_t lo = pads[ax], hi = pads[rank + ax];
        if (lo < 0 || hi < 0) {
            int64_t st[MAX_RANK], en[MAX_RANK], sp[MAX_RANK];
            for (int i = 0; i < rank; i++) {
                st[i] = 0;
                en[i] = x->type.dims[i];
                sp[i] = 1;
            }
            st[ax] = lo < 0 ? -lo : 0;
            en[ax] = x->type.dims[ax] + (hi < 0 ? hi : 0);
            Node *s = graph_insert_before(b->f, b->pos, NK_SLICE, 1, &x, 1);
            node_set_ints(s, AK_starts, rank, st);
            node_set_ints(s, AK_ends, rank, en);
            node_set_ints(s, AK_steps, rank, sp);
            x = b_add_node(b, s);
        }
        if (lo <= 0 && hi <= 0)
            continue;
        Value *parts[3];
        int np = 0;
        if (lo > 0)
            parts[np++] = pad_block(b, &x->type, ax, lo, value);
        parts[np++] = x;
        if (hi > 0)
            parts[np++] = pad_block(b, &x->type, ax, hi, value);
        Node *c = graph_insert_before(b->f, b->pos, NK_CONCAT, np, parts, 1);
        node_set_int(c, AK_axis, ax);
        x = b_add_node(b, c);
    }
    return x;
}

/* Resize is linear and separable: along axis d it maps the input's in_d
 * positions to out_d outputs through weights W[in_d][out_d]. W is found by
 * resizing an identity -- basis vector i along another axis e, position
 * along d -- with the interpreter's own kernel, so the coordinate rules are
 * written once. NULL (no lowering) when that cannot be done: rank 1, or
 * crop-and-resize, whose extrapolated points are not linear in the input. */
static Tensor *resize_weights(const Node *n, int d, int64_t in_d, int64_t out_d, Arena *a) {
    const Type *x = &n->ops[0]->type;
    int e = d == 0 ? 1 : 0;
    Module *m = module_new("resize-weights");
    Function *f = function_new(m, "w");
    Type it = {.elem = ELEM_F32, .rank = x->rank}, ot;
    for (int i = 0; i < x->rank; i++)
        it.dims[i] = 1;
    it.dims[e] = in_d;
    it.dims[d] = in_d;
    ot = it;
    ot.dims[d] = out_d;
    Tensor *eye = tensor_new(m->arena, &it), *res[1];
    for (int64_t i = 0; i < in_d; i++)
        tensor_set_f64(eye, i * in_d + i, 1); /* (e, d) = (i, i): the only non-1 axes */
    Node *basis = graph_add_param(f, "basis", &it);
    Value *bv = &basis->res[0];
    Node *r = graph_add_node(f, NK_RESIZE, 1, &bv, 1);
    for (int k = 0; k < n->nattrs; k++) {
        const Attr *at = &n->attrs[k];
        if (at->key == AK_scales) {
            float sc[MAX_RANK];
            for (int i = 0; i < x->rank; i++)
                sc[i] = i == d && i < at->floats.n ? at->floats.v[i] : 1.0f;
            node_set_floats(r, AK_scales, x->rank, sc);
        } else if (at->key != AK_roi) {
            r->attrs = arena_grow(m->arena, r->attrs, (size_t)r->nattrs, (size_t)r->nattrs + 1,
                                  sizeof(Attr));
            r->attrs[r->nattrs++] = *at;
        }
    }
    r->res[0].type = ot;
    DiagList dl;
    diag_init(&dl, NULL);
    Tensor *w = NULL;
    if (interp_fold(NULL, r, &eye, res, m->arena, &dl)) {
        /* res[0]: axis e the basis index i, axis d the output o */
        Type wt = type_make(x->elem, 2, (int64_t[]){in_d, out_d});
        w = tensor_new(a, &wt);
        for (int64_t i = 0; i < in_d; i++)
            for (int64_t o = 0; o < out_d; o++)
                tensor_set_f64(w, i * out_d + o,
                               tensor_get_f64(res[0], e < d ? i * out_d + o : o * in_d + i));
    }
    diag_free(&dl);
    module_destroy(m);
    return w;
}

static Value *b_transpose(Builder *b, Value *x, const int64_t *perm) {
    Node *t = graph_insert_before(b->f, b->pos, NK_TRANSPOSE, 1, &x, 1);
    node_set_ints(t, AK_perm, x->type.rank, perm);
    return b_add_node(b, t);
}

static Value *lower_resize(Builder *b, Node *n) {
    Value *x = n->ops[0];
    int rank = x->type.rank;
    for (int d = 0; d < rank; d++) {
        int64_t in_d = x->type.dims[d], out_d = n->res[0].type.dims[d];
        int k;
        const float *sc = node_attr_floats(n, AK_scales, &k);
        if (in_d == out_d && (!sc || d >= k || sc[d] == 1.0f))
            continue;
        Tensor *w = resize_weights(n, d, in_d, out_d, b->f->module->arena);
        if (!w)
            return NULL;
        int64_t perm[MAX_RANK];
        for (int i = 0, j = 0; i < rank; i++)
            if (i != d)
                perm[j++] = i;
        perm[rank - 1] = d;
        int64_t back[MAX_RANK];
        for (int i = 0; i < rank; i++)
            back[perm[i]] = i;
        Value *y = d == rank - 1 ? x : b_transpose(b, x, perm);
        y = b_op(b, NK_MATMUL, y, b_const(b, w));
        x = d == rank - 1 ? y : b_transpose(b, y, back);
    }
    return x;
}

static Value *lower_node(Builder *b, Node *n) {
    switch (n->kind) {
    case NK_GEMM: return lower_gemm(b, n);
    case NK_FULLY_CONNECTED: return lower_fully_connected(b, n);
    case NK_BATCH_NORM: return lower_batch_norm(b, n);
    case NK_INSTANCE_NORM: return lower_instance_norm(b, n);
    case NK_LAYER_NORM: return lower_layer_norm(b, n);
    case NK_SOFTMAX: return lower_softmax(b, n, false);
    case NK_LOG_SOFTMAX: return lower_softmax(b, n, true);
    case NK_HARD_SIGMOID:
        return lower_hard_sigmoid(b, n->ops[0], node_attr_float(n, AK_alpha, 0.2f),
                                  node_attr_float(n, AK_beta, 0.5f));
    case NK_HARD_SWISH:
        return b_op(b, NK_MUL, n->ops[0], lower_hard_sigmoid(b, n->ops[0], 1.0 / 6, 0.5));
    case NK_GELU: return lower_gelu(b, n->ops[0]);
    case NK_PAD: return lower_pad(b, n);
    case NK_RESIZE: return lower_resize(b, n);
    default:
        if (node_is_view(n)) /* flatten, squeeze, unsqueeze */
            return b_reshape(b, n->ops[0], &n->res[0].type);
        return node_kind_is_reduce(n->kind) ? lower_reduce(b, n) : NULL;
    }
}

bool pass_lower(Function *f, PassContext *ctx) {
    if (!ctx->backend)
        return false;
    bool changed = false;
    for (Node *n = f->first, *next; n; n = next) {
        next = n->next;
        if (!node_lowers(n) || ctx->backend->is_native(n))
            continue;
        Builder b = {f, n, n->name, ctx->d, true};
        Value *y = lower_node(&b, n);
        if (!y)
            continue; /* no rule: the node stays */
        if (!b.ok || !type_equal(&y->type, &n->res[0].type)) {
            node_error(ctx->d, n, "lowering produced a wrong type (a bug in lower.c)");
            return changed;
        }
        graph_replace_uses(f, &n->res[0], y);
        graph_remove_node(f, n);
        char stat[48];
        snprintf(stat, sizeof stat, "%s-lowered", node_kind_name(n->kind));
        pass_stat(ctx, stat, 1);
        pass_rewrote(ctx, f, y);
        changed = true;
    }
    return changed;
}
