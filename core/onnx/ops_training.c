/* Import of the training operators: the optimisers of the
 * ai.onnx.preview.training domain (Adagrad, Adam, Momentum) and
 * BatchNormalization in training mode. Each becomes the arithmetic its
 * specification writes out, in existing node kinds (the same ones the
 * differentiate pass's steps use), so nothing downstream knows them.
 *
 * The optimisers take R (the learning rate, a scalar), T (the step count,
 * an integer scalar) and then n tensors of each role in turn (X..., G...,
 * state...); they return the updated X... and then the updated state. */
#include <string.h>

#include "core/onnx/import.h"

/* Emitting through NULLs: an operand that failed makes its users fail, so
 * a handler checks once at the end. */
static Value *op2(OnnxNode *on, NodeKind k, Value *a, Value *b) {
    if (!a || !b)
        return NULL;
    Value *ops[2] = {a, b};
    return on_tmp(on, on_node(on, k, 2, ops, 1));
}

static Value *op1(OnnxNode *on, NodeKind k, Value *a) {
    return a ? on_tmp(on, on_node(on, k, 1, &a, 1)) : NULL;
}

static Value *num(OnnxNode *on, ElemKind e, double v) {
    return on_scalar_const(on, e, v);
}

static Value *where(OnnxNode *on, Value *c, Value *a, Value *b) {
    if (!c || !a || !b)
        return NULL;
    Value *ops[3] = {c, a, b};
    return on_tmp(on, on_node(on, NK_WHERE, 3, ops, 1));
}

/* The common shape of the three: R and T scalars, then `roles` groups of
 * n inputs, and (roles - 1) groups of n outputs. */
static int optimizer_count(OnnxNode *on, int roles) {
    int n = (on->nin - 2) / roles;
    if (on->nin < 2 + roles || (on->nin - 2) % roles || on->nout != n * (roles - 1)) {
        on_error(on, "expects R, T and %d groups of equally many tensors, and %d groups of "
                     "outputs; got %d inputs and %d outputs", roles, roles - 1, on->nin, on->nout);
        return 0;
    }
    for (int i = 0; i < on->nin; i++) {
        if (!on->in[i]) {
            on_error(on, "input %d is missing", i);
            return 0;
        }
    }
    const Type *r = &on->in[0]->type, *t = &on->in[1]->type;
    if (type_numel(r) != 1 || !elem_is_float(r->elem) || type_numel(t) != 1 ||
        !elem_is_int(t->elem)) {
        on_error(on, "R must be a float scalar and T an integer scalar");
        return 0;
    }
    for (int i = 2; i < on->nin; i++) {
        if (!elem_is_float(on->in[i]->type.elem) ||
            !type_same_shape(&on->in[i]->type, &on->in[2 + (i - 2) % n]->type)) {
            on_error(on, "input %d must be a float tensor shaped like X%d", i, (i - 2) % n + 1);
            return 0;
        }
    }
    return n;
}

/* v as a scalar (rank 0) of kind e. */
static Value *scalar_of(OnnxNode *on, Value *v, ElemKind e) {
    if (v && v->type.rank) {
        Node *n = on_node(on, NK_RESHAPE, 1, &v, 1);
        n->res[0].type = type_scalar(v->type.elem);
        v = on_tmp(on, n);
    }
    if (v && v->type.elem != e) {
        Node *c = on_node(on, NK_CAST, 1, &v, 1);
        node_set_elem(c, AK_to, e);
        v = on_tmp(on, c);
    }
    return v;
}

/* R and T as scalars of X's kind. */
static void rate_and_count(OnnxNode *on, ElemKind e, Value **r, Value **t) {
    *r = scalar_of(on, on->in[0], e);
    *t = scalar_of(on, on->in[1], e);
}

/* G + norm_coefficient X */
static Value *regularized(OnnxNode *on, Value *x, Value *g, double norm) {
    if (norm == 0)
        return g;
    return op2(on, NK_ADD, g, op2(on, NK_MUL, x, num(on, x->type.elem, norm)));
}

static bool bind_all(OnnxNode *on, Value **outs) {
    for (int i = 0; i < on->nout; i++)
        if (!outs[i])
            return false;
    for (int i = 0; i < on->nout; i++)
        on_bind(on, i, outs[i]);
    return true;
}

/* r = R / (1 + T decay); H' = H + g^2; X' = X - r g / (sqrt(H') + eps). */
bool import_adagrad(OnnxNode *on) {
    int n = optimizer_count(on, 3);
    if (!n)
        return false;
    ElemKind e = on->in[2]->type.elem;
    double decay = on_attr_float(on, "decay_factor", 0);
    double eps = on_attr_float(on, "epsilon", 1e-6f);
    double norm = on_attr_float(on, "norm_coefficient", 0);
    Value *r, *t, **outs = arena_alloc_array(on->f->module->arena, (size_t)on->nout, sizeof *outs);
    rate_and_count(on, e, &r, &t);
    r = op2(on, NK_DIV, r, op2(on, NK_ADD, num(on, e, 1), op2(on, NK_MUL, t, num(on, e, decay))));
    for (int i = 0; i < n; i++) {
        Value *x = on->in[2 + i], *g = regularized(on, x, on->in[2 + n + i], norm);
        Value *h = op2(on, NK_ADD, on->in[2 + 2 * n + i], op2(on, NK_MUL, g, g));
        Value *den = op2(on, NK_ADD, op1(on, NK_SQRT, h), num(on, e, eps));
        outs[i] = op2(on, NK_SUB, x, op2(on, NK_MUL, r, op2(on, NK_DIV, g, den)));
        outs[n + i] = h;
    }
    return bind_all(on, outs);
}

/* V' = alpha V + (1-alpha) g, H' = beta H + (1-beta) g^2,
 * R' = R sqrt(1 - beta^T) / (1 - alpha^T) when T > 0 (else R),
 * X' = (1 - norm_post) (X - R' V' / (sqrt(H') + eps)). */
bool import_adam(OnnxNode *on) {
    int n = optimizer_count(on, 4);
    if (!n)
        return false;
    ElemKind e = on->in[2]->type.elem;
    double alpha = on_attr_float(on, "alpha", 0.9f), beta = on_attr_float(on, "beta", 0.999f);
    double eps = on_attr_float(on, "epsilon", 1e-6f);
    double norm = on_attr_float(on, "norm_coefficient", 0);
    double post = on_attr_float(on, "norm_coefficient_post", 0);
    Value *r, *t, **outs = arena_alloc_array(on->f->module->arena, (size_t)on->nout, sizeof *outs);
    rate_and_count(on, e, &r, &t);
    Value *c1 = op2(on, NK_SUB, num(on, e, 1), op2(on, NK_POW, num(on, e, alpha), t));
    Value *c2 = op2(on, NK_SUB, num(on, e, 1), op2(on, NK_POW, num(on, e, beta), t));
    Value *adjusted = op2(on, NK_DIV, op2(on, NK_MUL, r, op1(on, NK_SQRT, c2)), c1);
    r = where(on, op2(on, NK_GREATER, t, num(on, e, 0)), adjusted, r);
    for (int i = 0; i < n; i++) {
        Value *x = on->in[2 + i], *g = regularized(on, x, on->in[2 + n + i], norm);
        Value *v = op2(on, NK_ADD, op2(on, NK_MUL, on->in[2 + 2 * n + i], num(on, e, alpha)),
                       op2(on, NK_MUL, g, num(on, e, 1 - alpha)));
        Value *h = op2(on, NK_ADD, op2(on, NK_MUL, on->in[2 + 3 * n + i], num(on, e, beta)),
                       op2(on, NK_MUL, op2(on, NK_MUL, g, g), num(on, e, 1 - beta)));
        Value *den = op2(on, NK_ADD, op1(on, NK_SQRT, h), num(on, e, eps));
        Value *xn = op2(on, NK_SUB, x, op2(on, NK_MUL, r, op2(on, NK_DIV, v, den)));
        outs[i] = post != 0 ? op2(on, NK_MUL, xn, num(on, e, 1 - post)) : xn;
        outs[n + i] = v;
        outs[2 * n + i] = h;
    }
    return bind_all(on, outs);
}

/* V' = alpha V + beta' g with beta' = beta when T > 0 (else 1);
 * standard: X' = X - R V'; nesterov: X' = X - R (g + alpha V'). */
bool import_momentum(OnnxNode *on) {
    int n = optimizer_count(on, 3);
    if (!n)
        return false;
    const char *mode = on_attr_str(on, "mode", "standard");
    bool nesterov = !strcmp(mode, "nesterov");
    if (!nesterov && strcmp(mode, "standard")) {
        on_error(on, "mode '%s' is neither 'standard' nor 'nesterov'", mode);
        return false;
    }
    ElemKind e = on->in[2]->type.elem;
    double alpha = on_attr_float(on, "alpha", 0), beta = on_attr_float(on, "beta", 0);
    double norm = on_attr_float(on, "norm_coefficient", 0);
    Value *r, *t, **outs = arena_alloc_array(on->f->module->arena, (size_t)on->nout, sizeof *outs);
    rate_and_count(on, e, &r, &t);
    Value *b = where(on, op2(on, NK_GREATER, t, num(on, e, 0)), num(on, e, beta), num(on, e, 1));
    for (int i = 0; i < n; i++) {
        Value *x = on->in[2 + i], *g = regularized(on, x, on->in[2 + n + i], norm);
        Value *v = op2(on, NK_ADD, op2(on, NK_MUL, on->in[2 + 2 * n + i], num(on, e, alpha)),
                       op2(on, NK_MUL, g, b));
        Value *step = nesterov ? op2(on, NK_ADD, g, op2(on, NK_MUL, v, num(on, e, alpha))) : v;
        outs[i] = op2(on, NK_SUB, x, op2(on, NK_MUL, r, step));
        outs[n + i] = v;
    }
    return bind_all(on, outs);
}

static Value *reduce_mean(OnnxNode *on, Value *x, int rank) {
    if (!x)
        return NULL;
    int64_t axes[MAX_RANK];
    int na = 0;
    for (int i = 0; i < rank; i++)
        if (i != 1)
            axes[na++] = i;
    Node *n = on_node(on, NK_REDUCE_MEAN, 1, &x, 1);
    node_set_ints(n, AK_axes, na, axes);
    node_set_int(n, AK_keepdims, 1);
    return on_tmp(on, n);
}

static Value *reshaped(OnnxNode *on, Value *x, const Type *t) {
    if (!x)
        return NULL;
    Node *n = on_node(on, NK_RESHAPE, 1, &x, 1);
    n->res[0].type = *t;
    n->res[0].type.elem = x->type.elem;
    return on_tmp(on, n);
}

/* Training mode (ONNX's reference): the batch's mean and population
 * variance over every axis but 1 normalise x; the running statistics move
 * as mean' = mean momentum + batch_mean (1 - momentum), the same for var. */
bool import_batch_norm_training(OnnxNode *on) {
    Value *x = on->in[0];
    int rank = x->type.rank;
    if (rank < 2 || !elem_is_float(x->type.elem)) {
        on_error(on, "training mode needs a float input of rank >= 2");
        return false;
    }
    ElemKind e = x->type.elem;
    double eps = on_attr_float(on, "epsilon", 1e-5f);
    double momentum = on_attr_float(on, "momentum", 0.9f);
    Type kt = x->type;
    for (int i = 0; i < rank; i++)
        if (i != 1)
            kt.dims[i] = 1;
    Value *mu = reduce_mean(on, x, rank);
    Value *d = op2(on, NK_SUB, x, mu);
    Value *var = reduce_mean(on, op2(on, NK_MUL, d, d), rank);
    Value *inv = op2(on, NK_DIV, num(on, e, 1),
                     op1(on, NK_SQRT, op2(on, NK_ADD, var, num(on, e, eps))));
    Value *y = op2(on, NK_ADD,
                   op2(on, NK_MUL, op2(on, NK_MUL, d, inv), reshaped(on, on->in[1], &kt)),
                   reshaped(on, on->in[2], &kt));
    Value *outs[3] = {y, NULL, NULL};
    Value *batch[2] = {mu, var};
    for (int i = 0; i < 2 && i + 1 < on->nout; i++) {
        if (!on->proto->output[i + 1][0])
            continue;
        Value *running = on->in[3 + i];
        outs[i + 1] = op2(on, NK_ADD, op2(on, NK_MUL, running, num(on, e, momentum)),
                          op2(on, NK_MUL, reshaped(on, batch[i], &running->type),
                              num(on, e, 1 - momentum)));
        if (!outs[i + 1])
            return false;
    }
    if (!y)
        return false;
    for (int i = 0; i < 3 && i < on->nout; i++)
        if (outs[i])
            on_bind(on, i, outs[i]);
    /* Opsets 9-13 also have saved_mean and saved_var: the batch's mean and
     * (population) variance that normalised x, shaped like the statistics. */
    for (int i = 0; i < 2 && i + 3 < on->nout; i++) {
        if (!on->proto->output[i + 3][0])
            continue;
        Value *v = reshaped(on, batch[i], &on->in[3 + i]->type);
        if (!v)
            return false;
        on_bind(on, i + 3, v);
    }
    return true;
}

/* Gradient (xs..., zs...): d y / d x for each x of xs, y (an attribute) a
 * value computed before it; zs are y's other inputs, held constant, which
 * is what not differentiating by them means. A gradient node carries it to
 * the gradients pass, which writes the derivative out in the differentiate
 * pass's gradient nodes. */
bool import_gradient(OnnxNode *on) {
    const char *name = on_attr_str(on, "y", NULL);
    Value *y = name ? on_value(on, name) : NULL;
    if (!y) {
        on_error(on, "attribute y ('%s') names no value computed before it", name ? name : "");
        return false;
    }
    int n = on->nout;
    if (n < 1 || on->nin < n) {
        on_error(on, "expects at least as many inputs (xs, then zs) as outputs; got %d and %d",
                 on->nin, n);
        return false;
    }
    Value **ops = arena_alloc_array(on->f->module->arena, (size_t)n + 1, sizeof *ops);
    ops[0] = y;
    for (int i = 0; i < n; i++) {
        if (!(ops[i + 1] = on_in(on, i))) {
            on_error(on, "input %d (an x) is missing", i);
            return false;
        }
    }
    return on_done(on, on_node(on, NK_GRADIENT, n + 1, ops, n));
}
