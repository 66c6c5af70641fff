/* Import of elementwise operators: unary math and activations, casts,
 * broadcast arithmetic, comparisons, logic, and the variadic Sum/Mean/Min/Max
 * (chained into binary nodes). */
#include <math.h>
#include <string.h>

#include "core/onnx/import.h"

/* A node of kind k on the ONNX node's inputs, all of them required. */
static bool simple(OnnxNode *on, NodeKind k, int nin) {
    if (!on_need_inputs(on, nin, nin))
        return false;
    return on_done(on, on_node(on, k, nin, on->in, 1));
}

#define UNARY(handler, kind)                                                                 \
    bool handler(OnnxNode *on) {                                                             \
        return simple(on, kind, 1);                                                          \
    }

UNARY(import_abs, NK_ABS)
UNARY(import_neg, NK_NEG)
UNARY(import_ceil, NK_CEIL)
UNARY(import_floor, NK_FLOOR)
UNARY(import_round, NK_ROUND)
UNARY(import_sign, NK_SIGN)
UNARY(import_reciprocal, NK_RECIPROCAL)
UNARY(import_sqrt, NK_SQRT)
UNARY(import_exp, NK_EXP)
UNARY(import_log, NK_LOG)
UNARY(import_erf, NK_ERF)
UNARY(import_sin, NK_SIN)
UNARY(import_cos, NK_COS)
UNARY(import_tan, NK_TAN)
UNARY(import_asin, NK_ASIN)
UNARY(import_acos, NK_ACOS)
UNARY(import_atan, NK_ATAN)
UNARY(import_sinh, NK_SINH)
UNARY(import_cosh, NK_COSH)
UNARY(import_asinh, NK_ASINH)
UNARY(import_acosh, NK_ACOSH)
UNARY(import_atanh, NK_ATANH)
UNARY(import_tanh, NK_TANH)
UNARY(import_sigmoid, NK_SIGMOID)
UNARY(import_relu, NK_RELU)
UNARY(import_softplus, NK_SOFTPLUS)
UNARY(import_softsign, NK_SOFTSIGN)
UNARY(import_hard_swish, NK_HARD_SWISH)
UNARY(import_not, NK_NOT)
UNARY(import_identity, NK_IDENTITY)
UNARY(import_isnan, NK_ISNAN)

/* Activations with float attributes: the ONNX defaults are written out, so
 * the graph never depends on a default. */
static bool unary_attrs(OnnxNode *on, NodeKind k, const char *n1, AttrKey k1, float d1,
                        const char *n2, AttrKey k2, float d2) {
    if (!on_need_inputs(on, 1, 1))
        return false;
    Node *n = on_node(on, k, 1, on->in, 1);
    node_set_float(n, k1, on_attr_float(on, n1, d1));
    if (n2)
        node_set_float(n, k2, on_attr_float(on, n2, d2));
    return on_done(on, n);
}

bool import_leaky_relu(OnnxNode *on) {
    return unary_attrs(on, NK_LEAKY_RELU, "alpha", AK_alpha, 0.01f, NULL, AK_NONE, 0);
}

bool import_elu(OnnxNode *on) {
    return unary_attrs(on, NK_ELU, "alpha", AK_alpha, 1.0f, NULL, AK_NONE, 0);
}

/* Gelu (opset 20): the exact form only; the tanh approximation is another
 * function, refused rather than computed the exact way. */
bool import_gelu(OnnxNode *on) {
    const char *approx = on_attr_str(on, "approximate", "none");
    if (strcmp(approx, "none")) {
        on_error(on, "approximate='%s' is not supported (only 'none')", approx);
        return false;
    }
    return simple(on, NK_GELU, 1);
}

bool import_selu(OnnxNode *on) {
    return unary_attrs(on, NK_SELU, "alpha", AK_alpha, 1.67326319217681884765625f, "gamma",
                       AK_gamma, 1.05070102214813232421875f);
}

bool import_celu(OnnxNode *on) {
    return unary_attrs(on, NK_CELU, "alpha", AK_alpha, 1.0f, NULL, AK_NONE, 0);
}

bool import_hard_sigmoid(OnnxNode *on) {
    return unary_attrs(on, NK_HARD_SIGMOID, "alpha", AK_alpha, 0.2f, "beta", AK_beta, 0.5f);
}

bool import_thresholded_relu(OnnxNode *on) {
    return unary_attrs(on, NK_THRESHOLDED_RELU, "alpha", AK_alpha, 1.0f, NULL, AK_NONE, 0);
}

bool import_shrink(OnnxNode *on) {
    return unary_attrs(on, NK_SHRINK, "bias", AK_bias, 0.0f, "lambd", AK_lambd, 0.5f);
}

bool import_isinf(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 1))
        return false;
    Node *n = on_node(on, NK_ISINF, 1, on->in, 1);
    node_set_int(n, AK_detect_negative, on_attr_int(on, "detect_negative", 1));
    node_set_int(n, AK_detect_positive, on_attr_int(on, "detect_positive", 1));
    return on_done(on, n);
}

/* Before opset 11 the bounds are attributes; from 11 optional inputs, which
 * must be constants (they become attributes). */
/* The no-bound bound of kind e: an infinity, or the kind's extreme. */
static Value *no_bound(OnnxNode *on, ElemKind e, bool high) {
    if (elem_is_float(e))
        return on_scalar_const(on, e, high ? INFINITY : -INFINITY);
    Type t = type_scalar(e);
    Tensor *x = on_tensor(on, &t);
    if (!x)
        return NULL;
    int bits = 8 * (int)elem_size(e);
    uint64_t top = bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
    if (elem_class(e) == ECLS_SINT)
        top >>= 1;
    int64_t v = high ? (int64_t)top : elem_class(e) == ECLS_SINT ? -(int64_t)top - 1 : 0;
    tensor_set_i64(x, 0, v);
    return on_const(on, x);
}

/* A bound computed at run time (a log-mel front end clips to max(x) - 80):
 * both bounds are operands, a missing one no bound. */
static bool clip_at_run_time(OnnxNode *on, Node *n, Tensor *const *bound) {
    ElemKind e = on->in[0]->type.elem;
    Value *ops[3] = {on->in[0]};
    for (int i = 1; i < 3; i++) {
        ops[i] = on_in(on, i);
        if (!ops[i])
            ops[i] = no_bound(on, e, i == 2);
        if (!ops[i])
            return false;
    }
    graph_remove_node(on->f, n);
    return on_done(on, on_node(on, NK_CLIP, 3, ops, 1));
}

bool import_clip(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 3))
        return false;
    Node *n = on_node(on, NK_CLIP, 1, on->in, 1);
    if (on->opset < 11) {
        if (on_has_attr(on, "min"))
            node_set_float(n, AK_min, on_attr_float(on, "min", 0));
        if (on_has_attr(on, "max"))
            node_set_float(n, AK_max, on_attr_float(on, "max", 0));
        return on_done(on, n);
    }
    static const char *const what[3] = {"", "min", "max"};
    static const AttrKey keys[3] = {AK_NONE, AK_min, AK_max};
    Tensor *bound[3] = {NULL};
    bool at_run_time = false;
    for (int i = 1; i < 3; i++) {
        if (!on_in(on, i))
            continue;
        bound[i] = on_try_static(on, on_in(on, i));
        at_run_time |= !bound[i];
        if (bound[i] && tensor_numel(bound[i]) != 1) {
            on_error(on, "%s must be a scalar", what[i]);
            graph_remove_node(on->f, n);
            return false;
        }
    }
    if (at_run_time) /* both bounds become operands */
        return clip_at_run_time(on, n, bound);
    for (int i = 1; i < 3; i++)
        if (bound[i])
            node_set_float(n, keys[i], (float)tensor_get_f64(bound[i], 0));
    return on_done(on, n);
}

/* Training mode drops with probability ratio (input 1, default 0.5) and
 * scales the rest by 1 / (1 - ratio): with ratio 0 that is the identity
 * too (torchvision's Swin Transformer exports 24 such nodes). */
static bool dropout_is_identity(OnnxNode *on) {
    if (!on_in(on, 2))
        return true;
    Tensor *t = on_const_input(on, 2, "training_mode");
    if (!t)
        return false;
    if (tensor_numel(t) != 1) {
        on_error(on, "training_mode must be a scalar");
        return false;
    }
    if (!tensor_get_i64(t, 0))
        return true;
    Tensor *r = NULL;
    if (on_in(on, 1) && !(r = on_const_input(on, 1, "ratio")))
        return false;
    if (r && tensor_numel(r) != 1) {
        on_error(on, "ratio must be a scalar");
        return false;
    }
    if (r && tensor_get_f64(r, 0) == 0)
        return true;
    on_unsupported(on, "training-mode dropout with a non-zero ratio is not supported "
                       "(glowc compiles inference)");
    return false;
}

/* The ratio a training function would drop (opset 12 on: input 1, else an
 * attribute; 0.5 by default); 0 when it is not a constant. */
static double dropout_ratio(OnnxNode *on) {
    if (on->opset < 12)
        return on_attr_float(on, "ratio", 0.5f);
    if (!on_in(on, 1))
        return 0.5;
    Tensor *r = on_try_const(on, on_in(on, 1));
    return r && tensor_numel(r) == 1 ? tensor_get_f64(r, 0) : 0;
}

/* Inference: the identity. The mask output, when asked for, is all true.
 * The ratio is kept for the differentiate pass. */
bool import_dropout(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 3) || !dropout_is_identity(on))
        return false;
    Node *n = on_node(on, NK_DROPOUT, 1, on->in, 1);
    double ratio = dropout_ratio(on);
    if (ratio > 0 && ratio < 1)
        node_set_float(n, AK_ratio, (float)ratio);
    if (!on_done(on, n))
        return false;
    if (on->nout > 1 && on->proto->output[1][0]) {
        Type t = n->res[0].type;
        t.elem = on->opset >= 12 ? ELEM_BOOL : t.elem;
        Tensor *mask = on_tensor(on, &t);
        if (!mask)
            return false;
        for (int64_t i = 0; i < tensor_numel(mask); i++)
            tensor_set_f64(mask, i, 1);
        on_bind(on, 1, on_const(on, mask));
    }
    return true;
}

static bool cast_to(OnnxNode *on, ElemKind to) {
    Node *n = on_node(on, NK_CAST, 1, on->in, 1);
    node_set_elem(n, AK_to, to);
    return on_done(on, n);
}

bool import_cast(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 1))
        return false;
    int64_t to = on_attr_int(on, "to", 0);
    ElemKind k;
    if (!elem_from_onnx((int)to, &k)) {
        on_error(on, "cast to unsupported element type %s", onnx_type_name((int)to));
        return false;
    }
    return cast_to(on, k);
}

bool import_cast_like(OnnxNode *on) {
    if (!on_need_inputs(on, 2, 2))
        return false;
    return cast_to(on, on->in[1]->type.elem);
}

/* Opsets before 7 broadcast only with broadcast=1, and then B aligns with A
 * at `axis` rather than at the end: B becomes [1.. B ..1] first. */
static Value *legacy_broadcast(OnnxNode *on, Value *a, Value *b) {
    if (on->opset >= 7 || !on_attr_int(on, "broadcast", 0) || !on_has_attr(on, "axis"))
        return b;
    int64_t axis = on_attr_int(on, "axis", 0);
    if (axis < 0)
        axis += a->type.rank;
    if (axis < 0 || axis > a->type.rank - b->type.rank) {
        on_error(on, "broadcast axis out of range");
        return NULL;
    }
    Type t = b->type;
    t.rank = a->type.rank - (int)axis;
    for (int i = b->type.rank; i < t.rank; i++)
        t.dims[i] = 1;
    Node *r = on_node(on, NK_RESHAPE, 1, &b, 1);
    r->res[0].type = t;
    return on_tmp(on, r);
}

static bool binary(OnnxNode *on, NodeKind k) {
    if (!on_need_inputs(on, 2, 2))
        return false;
    Value *ops[2] = {on->in[0], legacy_broadcast(on, on->in[0], on->in[1])};
    if (!ops[1])
        return false;
    return on_done(on, on_node(on, k, 2, ops, 1));
}

#define BINARY(handler, kind)                                                                \
    bool handler(OnnxNode *on) {                                                             \
        return binary(on, kind);                                                             \
    }

BINARY(import_add, NK_ADD)
BINARY(import_sub, NK_SUB)
BINARY(import_mul, NK_MUL)
BINARY(import_div, NK_DIV)
BINARY(import_pow, NK_POW)
BINARY(import_and, NK_AND)
BINARY(import_or, NK_OR)
BINARY(import_xor, NK_XOR)
BINARY(import_equal, NK_EQUAL)
BINARY(import_less, NK_LESS)
BINARY(import_less_equal, NK_LESS_EQUAL)
BINARY(import_greater, NK_GREATER)
BINARY(import_greater_equal, NK_GREATER_EQUAL)

bool import_mod(OnnxNode *on) {
    if (!on_need_inputs(on, 2, 2))
        return false;
    Node *n = on_node(on, NK_MOD, 2, on->in, 1);
    node_set_int(n, AK_fmod, on_attr_int(on, "fmod", 0));
    return on_done(on, n);
}

bool import_bitshift(OnnxNode *on) {
    if (!on_need_inputs(on, 2, 2))
        return false;
    const char *dir = on_attr_str(on, "direction", "");
    if (strcmp(dir, "LEFT") && strcmp(dir, "RIGHT")) {
        on_error(on, "direction must be LEFT or RIGHT, got '%s'", dir);
        return false;
    }
    Node *n = on_node(on, NK_BITSHIFT, 2, on->in, 1);
    return on_set_enum(on, n, AK_direction, dir) && on_done(on, n);
}

/* The slope broadcasts to X. Opset 6 and earlier tests (PyTorch's) pass a
 * slope of shape [C] for X of [N, C, ...]: that means per channel. */
bool import_prelu(OnnxNode *on) {
    if (!on_need_inputs(on, 2, 2))
        return false;
    Value *x = on->in[0], *slope = on->in[1];
    Type t;
    if (slope->type.rank == 1 && x->type.rank >= 2 && slope->type.dims[0] == x->type.dims[1] &&
        slope->type.dims[0] != 1 &&
        !(type_broadcast(&x->type, &slope->type, &t) && type_same_shape(&t, &x->type))) {
        Type r = {.elem = slope->type.elem, .rank = x->type.rank - 1};
        r.dims[0] = slope->type.dims[0];
        for (int i = 1; i < r.rank; i++)
            r.dims[i] = 1;
        Node *rs = on_node(on, NK_RESHAPE, 1, &slope, 1);
        rs->res[0].type = r;
        if (!(slope = on_tmp(on, rs)))
            return false;
    }
    Value *ops[2] = {x, slope};
    return on_done(on, on_node(on, NK_PRELU, 2, ops, 1));
}

bool import_where(OnnxNode *on) {
    return simple(on, NK_WHERE, 3);
}

/* Variadic ops become a chain of binary nodes, left to right. */
static Value *chain(OnnxNode *on, NodeKind k) {
    int n = 0;
    for (int i = 0; i < on->nin; i++)
        n += on->in[i] != NULL;
    if (n == 0 || n != on->nin) {
        on_error(on, "needs at least one input and no empty ones");
        return NULL;
    }
    Value *acc = on->in[0];
    if (n == 1)
        return on_tmp(on, on_node(on, NK_IDENTITY, 1, &acc, 1));
    for (int i = 1; i < n && acc; i++) {
        Value *ops[2] = {acc, on->in[i]};
        acc = on_tmp(on, on_node(on, k, 2, ops, 1));
    }
    return acc;
}

static bool variadic(OnnxNode *on, NodeKind k) {
    Value *v = chain(on, k);
    if (v)
        on_bind(on, 0, v);
    return v != NULL;
}

bool import_sum(OnnxNode *on) {
    return variadic(on, NK_ADD);
}

bool import_min(OnnxNode *on) {
    return variadic(on, NK_MIN);
}

bool import_max(OnnxNode *on) {
    return variadic(on, NK_MAX);
}

bool import_mean(OnnxNode *on) {
    Value *sum = chain(on, NK_ADD);
    if (!sum)
        return false;
    Value *ops[2] = {sum, on_scalar_const(on, sum->type.elem, on->nin)};
    if (!ops[1])
        return false;
    return on_done(on, on_node(on, NK_DIV, 2, ops, 1));
}
