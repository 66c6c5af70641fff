/* fold-qdq: a QDQ model (QuantizeLinear/DequantizeLinear around float
 * operators, as `glowc quantize` and ONNX Runtime's quantizer write it) to
 * the integer node kinds the quantize pass makes, so it runs in int8 with
 * no profile -- the scales are the model's own. Each group
 *
 *   DQ(x) [, DQ(W), DQ(b)] -> op [-> relu] -> Q(y)
 *
 * becomes the integer node the quantize pass would have made for op:
 *   conv                       -> qlinear_conv (per-channel or per-tensor W)
 *   gemm, matmul (2-D, W const) -> reshape, 1x1 qlinear_conv, reshape
 *   relu after a conv/gemm     -> folded when Q's zero point is the kind's
 *                                 minimum (saturation computes it)
 *   max_pool, reshape, flatten, relu, clip -> on the integers, when Q has
 *                                 DQ's parameters (the op commutes with them)
 *   add, mul                   -> qadd, qmul;  concat -> rescale + concat
 *   average pools              -> qavg_pool, qglobal_avg_pool
 *   elementwise nodes of one varying input (hard-swish, sigmoid, a scale
 *   and a shift ...)           -> qlookup, one table for the whole chain
 * and the Q's readers read the integer node. Anything else stays float
 * between its DQ and Q. ONNX's own integer kinds (QLinearConv,
 * QuantizeLinear...) get quantized types from their constant scale and zero
 * point operands, and a QLinearMatMul of a 2-D input by constant weights
 * becomes the same 1x1 qlinear_conv as a gemm. Runs first when the imported graph holds a
 * dequantize_linear; invalidates nothing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/infer.h"
#include "passes/graph/qbuild.h"
#include "passes/pass.h"

typedef struct Fold {
    Function *f;
    PassContext *ctx;
    bool failed;
    bool rewrote;
} Fold;

/* A scalar constant's value. */
static bool scalar_of(const Value *v, double *out) {
    const Tensor *t = value_constant(v);
    if (!t || tensor_numel(t) != 1)
        return false;
    *out = tensor_get_f64(t, 0);
    return true;
}

/* The per-tensor parameters of a quantize_linear or dequantize_linear. */
static bool qparams(const Node *n, QuantParams *p) {
    double s, z;
    if (n->nops < 3 || !scalar_of(n->ops[1], &s) || !scalar_of(n->ops[2], &z) || !(s > 0) ||
        !isfinite(s))
        return false;
    ElemKind k = n->kind == NK_QUANTIZE_LINEAR ? n->res[0].type.elem : n->ops[0]->type.elem;
    if (k != ELEM_I8 && k != ELEM_U8)
        return false;
    *p = (QuantParams){k, (float)s, (int32_t)z};
    return true;
}




/* The integer value behind float value v, when v is a per-tensor
 * dequantize_linear of a quantized value (or of a constant, quantized anew). */
static Value *int_of(Fold *q, Value *v) {
    const Node *dq = v->def;
    QuantParams p;
    if (dq->kind != NK_DEQUANTIZE_LINEAR || !qparams(dq, &p))
        return NULL;
    Value *iv = dq->ops[0];
    if (iv->type.quant == QUANT_TENSOR)
        return qb_same(&p, &(QuantParams){iv->type.elem, iv->type.scale, iv->type.offset}) ? iv : NULL;
    const Tensor *c = value_constant(iv);
    if (!c)
        return NULL;
    /* A constant integer tensor: a copy typed with its parameters (the
     * import's payload is shared with earlier snapshots). */
    Tensor *t = tensor_new(q->f->module->arena, &c->type);
    memcpy(t->data, c->data, tensor_bytes(c));
    Node *n = graph_add_constant(q->f, iv->def->name, t);
    qb_set(&n->res[0], &p);
    t->type = n->res[0].type;
    return &n->res[0];
}


/* The quantize_linear that is n's only reader, with its parameters. */
static Node *q_after(Fold *q, const Node *n, QuantParams *p) {
    Node *u = graph_only_user(q->f, n);
    return u && u->kind == NK_QUANTIZE_LINEAR && u->ops[0] == &n->res[0] && qparams(u, p) ? u
                                                                                           : NULL;
}

/* The integer node y now computes what quantize_linear qn did: its readers
 * read y. The float node and qn go with the sweep. */
static void take_over(Fold *q, Node *qn, Value *y, const char *stat) {
    graph_replace_uses(q->f, &qn->res[0], y);
    if (!q->rewrote) {
        q->rewrote = true;
        pass_rewrote(q->ctx, q->f, y);
    }
    pass_stat(q->ctx, stat, 1);
}



/* ---- weights ---------------------------------------------------------------- */

/* Conv weights as the quantize pass makes them: [M, ...] integers per output
 * channel (rows), from DQ(W, scale, zero, axis) of a constant. transpose:
 * W is [K, M] (gemm without trans_b, matmul) with its channels on axis 1. */
typedef struct Weights {
    Value *w, *ws, *wz;
    double *scale; /* [m] */
    int64_t m, k;
} Weights;

static bool weights_of(Fold *q, const Value *v, bool transpose, int rank4, Weights *out) {
    const Node *dq = v->def;
    if (dq->kind != NK_DEQUANTIZE_LINEAR)
        return false;
    const Tensor *w = value_constant(dq->ops[0]), *s = value_constant(dq->ops[1]);
    const Tensor *z = value_constant(dq->ops[2]);
    if (!w || !s || !z || w->type.elem != ELEM_I8 || w->type.rank < 2)
        return false;
    int64_t m = transpose ? w->type.dims[1] : w->type.dims[0];
    int64_t k = tensor_numel(w) / (m ? m : 1);
    int64_t ns = tensor_numel(s);
    int axis = (int)node_attr_int(dq, AK_axis, 1);
    if (ns != 1 && (ns != m || axis != (transpose ? 1 : 0)))
        return false;
    for (int64_t i = 0; i < tensor_numel(z); i++)
        if (tensor_get_i64(z, i) != 0)
            return false; /* the quantize pass's weights are symmetric */
    Arena *a = q->f->module->arena;
    int64_t dims4[4] = {m, k, 1, 1};
    Type wt = rank4 ? w->type : type_make(ELEM_I8, 4, dims4);
    Tensor *wq = tensor_new(a, &wt);
    for (int64_t o = 0; o < m; o++)
        for (int64_t i = 0; i < k; i++)
            tensor_set_i64(wq, o * k + i, tensor_get_i64(w, transpose ? i * m + o : o * k + i));
    Node *wn = graph_add_constant(q->f, dq->name, wq);
    out->scale = calloc((size_t)m + 1, sizeof *out->scale);
    for (int64_t o = 0; o < m; o++)
        out->scale[o] = tensor_get_f64(s, ns == 1 ? 0 : o);
    if (ns == 1) {
        qb_set(&wn->res[0], &(QuantParams){ELEM_I8, (float)out->scale[0], 0});
    } else {
        wn->res[0].type.quant = QUANT_CHANNEL;
        wn->res[0].type.qaxis = 0;
    }
    wq->type = wn->res[0].type;
    double *zero = calloc((size_t)m + 1, sizeof *zero);
    out->w = &wn->res[0];
    out->ws = qb_vector(q->f, ELEM_F32, m, out->scale, dq->name, false);
    out->wz = qb_vector(q->f, ELEM_I8, m, zero, dq->name, false);
    out->m = m;
    out->k = k;
    free(zero);
    return true;
}

/* The i32 bias at scale xs * ws[c]: DQ of an i32 constant (requantized if
 * its scale is another), a float constant, or none (zeros). */
static bool bias_of(Fold *q, const Value *v, double xs, const Weights *w, const char *name,
                    Value **out) {
    double *b = calloc((size_t)w->m + 1, sizeof *b);
    bool ok = true;
    if (v) {
        const Node *dq = v->def;
        const Tensor *t = NULL, *s = NULL;
        if (dq->kind == NK_DEQUANTIZE_LINEAR) {
            t = value_constant(dq->ops[0]);
            s = value_constant(dq->ops[1]);
            const Tensor *z = value_constant(dq->ops[2]);
            ok = t && s && z && tensor_numel(t) == w->m && (tensor_numel(s) == 1 ||
                                                            tensor_numel(s) == w->m);
            for (int64_t i = 0; ok && i < tensor_numel(z); i++)
                ok = tensor_get_i64(z, i) == 0;
        } else {
            t = value_constant(v);
            ok = t && elem_is_float(t->type.elem) &&
                 (tensor_numel(t) == w->m || tensor_numel(t) == 1);
        }
        for (int64_t c = 0; ok && c < w->m; c++) {
            double real = tensor_get_f64(t, tensor_numel(t) == 1 ? 0 : c);
            if (s)
                real *= tensor_get_f64(s, tensor_numel(s) == 1 ? 0 : c);
            double bs = xs * (double)(float)w->scale[c];
            double exact = s ? tensor_get_f64(t, c) : 0;
            /* An i32 bias already at x_scale * w_scale is taken as is. */
            b[c] = s && (float)tensor_get_f64(s, tensor_numel(s) == 1 ? 0 : c) == (float)bs
                       ? exact
                       : fmin(INT32_MAX, fmax(INT32_MIN, nearbyint(real / bs)));
        }
    }
    if (ok)
        *out = qb_vector(q->f, ELEM_I32, w->m, b, name, true);
    free(b);
    return ok;
}

/* The builders, with a failure to infer remembered for the pass's result. */
static Value *emit_qconv(Fold *q, Node *pos, Value *xi, const Weights *w, Value *bias,
                         const QuantParams *yp, const Node *attrs_from) {
    Value *y = qb_qconv(q->f, q->ctx->d, pos, xi, &(QuantWeights){w->w, w->ws, w->wz}, bias, yp,
                        attrs_from, pos->name);
    q->failed |= !y;
    return y;
}

static Value *emit_like(Fold *q, Node *n, NodeKind k, int nops, Value **ops,
                        const QuantParams *p) {
    Value *y = qb_like(q->f, q->ctx->d, n, k, nops, ops, p);
    q->failed |= !y;
    return y;
}

/* ---- the groups ------------------------------------------------------------- */

/* n's result goes through a relu the saturation computes (Q's zero point is
 * the kind's minimum) or straight to a Q: that Q, its params, the relu. */
static Node *conv_output(Fold *q, Node *n, QuantParams *yp, Node **relu) {
    *relu = NULL;
    Node *qn = q_after(q, n, yp);
    if (qn)
        return qn;
    Node *u = graph_only_user(q->f, n);
    if (!u || u->kind != NK_RELU)
        return NULL;
    qn = q_after(q, u, yp);
    if (!qn || yp->offset != (yp->elem == ELEM_U8 ? 0 : -128))
        return NULL;
    *relu = u;
    return qn;
}


static bool fold_conv(Fold *q, Node *n) {
    QuantParams yp;
    Node *relu;
    Value *xi = n->ops[0]->type.rank == 4 ? int_of(q, n->ops[0]) : NULL;
    Node *qn = xi ? conv_output(q, n, &yp, &relu) : NULL;
    Weights w = {0};
    Value *bias;
    bool ok = qn && weights_of(q, n->ops[1], false, 1, &w) &&
              bias_of(q, n->nops > 2 ? n->ops[2] : NULL, qb_params_of(xi).scale, &w, n->name, &bias);
    Value *y = ok ? emit_qconv(q, n, xi, &w, bias, &yp, n) : NULL;
    free(w.scale);
    if (!y)
        return false;
    take_over(q, qn, y, "convs");
    return true;
}


/* x [M,K] times DQ'd constant W as the quantize pass has it: a 1x1
 * qlinear_conv over x [M,K,1,1]. */
static bool fold_matmul(Fold *q, Node *n) {
    bool gemm = n->kind == NK_GEMM;
    if (n->ops[0]->type.rank != 2 || n->ops[1]->type.rank != 2 ||
        (gemm && (node_attr_int(n, AK_trans_a, 0) || node_attr_float(n, AK_alpha, 1) != 1 ||
                  node_attr_float(n, AK_beta, 1) != 1)))
        return false;
    bool tb = gemm && node_attr_int(n, AK_trans_b, 0);
    QuantParams yp;
    Node *relu;
    Value *xi = int_of(q, n->ops[0]);
    Node *qn = xi ? conv_output(q, n, &yp, &relu) : NULL;
    Weights w = {0};
    Value *bias;
    bool ok = qn && weights_of(q, n->ops[1], !tb, 0, &w) &&
              bias_of(q, gemm && n->nops > 2 ? n->ops[2] : NULL, qb_params_of(xi).scale, &w, n->name,
                      &bias);
    Value *y = NULL;
    if (ok) {
        int64_t rows = n->ops[0]->type.dims[0];
        Value *x4 = qb_reshape(q->f, n, xi, 4, (int64_t[]){rows, w.k, 1, 1});
        Value *y4 = emit_qconv(q, n, x4, &w, bias, &yp, NULL);
        y = y4 ? qb_reshape(q->f, n, y4, 2, (int64_t[]){rows, w.m}) : NULL;
    }
    free(w.scale);
    if (!y)
        return false;
    take_over(q, qn, y, gemm ? "gemms" : "matmuls");
    return true;
}

/* ONNX's QLinearMatMul of a 2-D a (one scale) and a constant b [K,N]: the
 * 1x1 qlinear_conv the quantize pass makes of a matmul, so that one integer
 * kind carries every product. The kernels compute the same: the int sum
 * times (a_scale * b_scale / y_scale) in float, rounded half to even. */
static bool fold_qlinear_matmul(Fold *q, Node *n) {
    const Tensor *b = value_constant(n->ops[3]), *bs = value_constant(n->ops[4]);
    const Tensor *bz = value_constant(n->ops[5]);
    double as, az, ys, yz;
    Value *a = n->ops[0];
    if (a->type.rank != 2 || !b || !bs || !bz || b->type.rank != 2 ||
        !scalar_of(n->ops[1], &as) || !scalar_of(n->ops[2], &az) ||
        !scalar_of(n->ops[6], &ys) || !scalar_of(n->ops[7], &yz) || !(as > 0) || !(ys > 0))
        return false;
    int64_t k = b->type.dims[0], m = b->type.dims[1], rows = a->type.dims[0];
    if ((tensor_numel(bs) != 1 && tensor_numel(bs) != m) ||
        (tensor_numel(bz) != 1 && tensor_numel(bz) != m))
        return false;
    Arena *ar = q->f->module->arena;
    Type wt = type_make(b->type.elem, 4, (int64_t[]){m, k, 1, 1});
    Tensor *w = tensor_new(ar, &wt);
    for (int64_t o = 0; o < m; o++)
        for (int64_t i = 0; i < k; i++)
            tensor_set_i64(w, o * k + i, tensor_get_i64(b, i * m + o));
    double *sv = calloc((size_t)m + 1, sizeof *sv), *zv = calloc((size_t)m + 1, sizeof *zv);
    for (int64_t o = 0; o < m; o++) {
        sv[o] = tensor_get_f64(bs, tensor_numel(bs) == 1 ? 0 : o);
        zv[o] = tensor_get_f64(bz, tensor_numel(bz) == 1 ? 0 : o);
    }
    Node *wn = graph_add_constant(q->f, n->name, w);
    wn->res[0].type.quant = QUANT_CHANNEL;
    wn->res[0].type.qaxis = 0;
    w->type = wn->res[0].type;
    Weights ws = {.w = &wn->res[0], .ws = qb_vector(q->f, ELEM_F32, m, sv, n->name, false),
                  .wz = qb_vector(q->f, b->type.elem, m, zv, n->name, false), .m = m, .k = k};
    free(sv);
    free(zv);
    /* The operand's type says its scale (a plain integer input does not). */
    QuantParams ap = {a->type.elem, (float)as, (int32_t)az}, yp = {n->res[0].type.elem, (float)ys,
                                                            (int32_t)yz};
    Value *ai = a;
    if (a->type.quant != QUANT_TENSOR) {
        Node *r = graph_insert_before(q->f, n, NK_RESHAPE, 1, &a, 1);
        r->name = n->name;
        r->res[0].type = a->type;
        qb_set(&r->res[0], &ap);
        ai = &r->res[0];
    } else if (!qb_same(&ap, &(QuantParams){a->type.elem, a->type.scale, a->type.offset})) {
        return false;
    }
    double *zero = calloc((size_t)m + 1, sizeof *zero);
    Value *bias = qb_vector(q->f, ELEM_I32, m, zero, n->name, true);
    free(zero);
    Value *x4 = qb_reshape(q->f, n, ai, 4, (int64_t[]){rows, k, 1, 1});
    Value *y4 = emit_qconv(q, n, x4, &ws, bias, &yp, NULL);
    Value *y = y4 ? qb_reshape(q->f, n, y4, 2, (int64_t[]){rows, m}) : NULL;
    if (!y)
        return false;
    graph_replace_uses(q->f, &n->res[0], y);
    if (!q->rewrote) {
        q->rewrote = true;
        pass_rewrote(q->ctx, q->f, y);
    }
    pass_stat(q->ctx, "qlinear-matmuls", 1);
    return true;
}


/* Ops that commute with a monotonic quantization, when Q keeps DQ's
 * parameters: the same op on the integers. */
static bool fold_passthrough(Fold *q, Node *n) {
    QuantParams yp;
    Value *xi = n->nres == 1 ? int_of(q, n->ops[0]) : NULL;
    Node *qn = xi ? q_after(q, n, &yp) : NULL;
    QuantParams xp = xi ? qb_params_of(xi) : yp;
    if (!qn || !qb_same(&xp, &yp))
        return false;
    if (n->kind == NK_RESHAPE && n->nops > 1)
        return false; /* a shape operand: the imported reshape keeps it as a value */
    Value *y = emit_like(q, n, n->kind, 1, &xi, &yp);
    if (!y)
        return false;
    take_over(q, qn, y, "integer-passthroughs");
    return true;
}

static bool fold_clip(Fold *q, Node *n) {
    QuantParams yp;
    Value *xi = int_of(q, n->ops[0]);
    Node *qn = xi ? q_after(q, n, &yp) : NULL;
    double lo = 0, hi = INFINITY;
    if (!qn || !qb_same(&yp, &(QuantParams){xi->type.elem, xi->type.scale, xi->type.offset}))
        return false;
    if (n->kind == NK_CLIP) {
        if ((n->nops > 1 && n->ops[1] && !scalar_of(n->ops[1], &lo)) ||
            (n->nops > 2 && n->ops[2] && !scalar_of(n->ops[2], &hi)))
            return false;
        if (n->nops < 2)
            lo = node_attr_float(n, AK_min, -INFINITY);
        if (n->nops < 3 && node_has_attr(n, AK_max))
            hi = node_attr_float(n, AK_max, INFINITY);
    }
    Node *m = graph_insert_before(q->f, n, NK_CLIP, 1, &xi, 1);
    m->name = n->name;
    double kmin = yp.elem == ELEM_U8 ? 0 : -128, kmax = yp.elem == ELEM_U8 ? 255 : 127;
    if (isfinite(lo))
        node_set_float(m, AK_min, (float)fmin(kmax, fmax(kmin, nearbyint(lo / yp.scale) + yp.offset)));
    if (isfinite(hi))
        node_set_float(m, AK_max, (float)fmin(kmax, fmax(kmin, nearbyint(hi / yp.scale) + yp.offset)));
    if (!infer_node(m, q->ctx->d)) {
        q->failed = true;
        return false;
    }
    qb_set(&m->res[0], &yp);
    take_over(q, qn, &m->res[0], "clips");
    return true;
}

static bool fold_binary(Fold *q, Node *n) {
    QuantParams yp;
    Value *ops[2] = {int_of(q, n->ops[0]), int_of(q, n->ops[1])};
    Node *qn = ops[0] && ops[1] ? q_after(q, n, &yp) : NULL;
    Value *y = qn ? emit_like(q, n, n->kind == NK_ADD ? NK_QADD : NK_QMUL, 2, ops, &yp) : NULL;
    if (!y)
        return false;
    take_over(q, qn, y, n->kind == NK_ADD ? "adds" : "muls");
    return true;
}

static bool fold_avg_pool(Fold *q, Node *n) {
    QuantParams yp;
    Value *xi = int_of(q, n->ops[0]);
    Node *qn = xi ? q_after(q, n, &yp) : NULL;
    Value *y = qn ? emit_like(q, n, n->kind == NK_AVG_POOL ? NK_QAVG_POOL : NK_QGLOBAL_AVG_POOL,
                              1, &xi, &yp)
                  : NULL;
    if (!y)
        return false;
    take_over(q, qn, y, "avg-pools");
    return true;
}

static bool fold_concat(Fold *q, Node *n) {
    QuantParams yp;
    Value *ops[64];
    Node *qn = n->nops <= 64 ? q_after(q, n, &yp) : NULL;
    for (int i = 0; qn && i < n->nops; i++)
        if (!(ops[i] = int_of(q, n->ops[i])))
            return false;
    if (!qn)
        return false;
    for (int i = 0; i < n->nops; i++) {
        QuantParams o = qb_params_of(ops[i]);
        if (qb_same(&o, &yp))
            continue;
        Node *r = graph_insert_before(q->f, n, NK_RESCALE, 1, &ops[i], 1);
        r->name = ops[i]->def->name;
        r->res[0].type = ops[i]->type;
        r->res[0].type.elem = yp.elem;
        qb_set(&r->res[0], &yp);
        infer_node(r, q->ctx->d);
        ops[i] = &r->res[0];
    }
    Value *y = emit_like(q, n, NK_CONCAT, n->nops, ops, &yp);
    if (!y)
        return false;
    take_over(q, qn, y, "concats");
    return true;
}

/* DQ -> elementwise nodes of that one varying input -> Q: one table, as the
 * quantize pass makes of such a chain (qbuild.h). */
static bool chain_ends_in_q(void *ctx, const Node *n, bool last) {
    QuantParams p;
    return !last || q_after(ctx, n, &p);
}

static bool fold_chain(Fold *q, Node *n) {
    Value *x = qb_chain_input(n);
    Node *chain[QB_CHAIN_MAX];
    int count = x && x->def->kind == NK_DEQUANTIZE_LINEAR
                    ? qb_find_chain(q->f, n, x, chain, chain_ends_in_q, q)
                    : 0;
    Value *xi = count ? int_of(q, x) : NULL;
    QuantParams yp;
    Node *qn = xi ? q_after(q, chain[count - 1], &yp) : NULL;
    QuantParams xp = xi ? qb_params_of(xi) : yp;
    int64_t nch = qn ? qb_chain_channels(x, chain, count) : 1;
    double *reals = malloc((size_t)(256 * nch) * sizeof *reals);
    bool ok = qn && reals && qb_chain_table(x, &xp, chain, count, nch, reals);
    Value *y = ok ? qb_lookup(q->f, q->ctx->d, chain[count - 1], xi, reals, nch, &yp) : NULL;
    free(reals);
    if (!ok)
        return false;
    if (!y) {
        q->failed = true;
        return false;
    }
    take_over(q, qn, y, "chains");
    return true;
}

static bool fold(Fold *q, Node *n) {
    /* A relu or clip at the same parameters is an integer clip, exactly. */
    if ((n->kind == NK_RELU || n->kind == NK_CLIP) && fold_clip(q, n))
        return true;
    if (fold_chain(q, n))
        return true;
    switch (n->kind) {
    case NK_CONV: return fold_conv(q, n);
    case NK_GEMM:
    case NK_MATMUL: return fold_matmul(q, n);
    case NK_MAX_POOL:
    case NK_RESHAPE:
    case NK_FLATTEN: return fold_passthrough(q, n);
    case NK_ADD:
    case NK_MUL: return fold_binary(q, n);
    case NK_AVG_POOL:
    case NK_GLOBAL_AVG_POOL: return fold_avg_pool(q, n);
    case NK_CONCAT: return fold_concat(q, n);
    case NK_QLINEAR_MATMUL: return fold_qlinear_matmul(q, n);
    default: return false;
    }
}

/* ONNX's integer kinds state their parameters in operands; their results'
 * types say them too, so that the integer forms can read them. */
static bool readers_agree(Function *f, const Node *qn, const QuantParams *p) {
    for (Node *m = qn->next; m; m = m->next) {
        QuantParams r;
        if (m->kind == NK_DEQUANTIZE_LINEAR && m->ops[0] == &qn->res[0] &&
            (!qparams(m, &r) || !qb_same(&r, p)))
            return false;
    }
    return true;
}

static bool type_onnx_kinds(Function *f) {
    bool typed = false;
    for (Node *n = f->first; n; n = n->next) {
        QuantParams p;
        double s, z;
        if (n->nres < 1 || n->res[0].type.quant != QUANT_NONE)
            continue;
        if (n->kind == NK_QUANTIZE_LINEAR && qparams(n, &p) && readers_agree(f, n, &p)) {
            qb_set(&n->res[0], &p);
            typed = true;
        } else if ((n->kind == NK_QLINEAR_CONV || n->kind == NK_QLINEAR_MATMUL) &&
                   scalar_of(n->ops[6], &s) && scalar_of(n->ops[7], &z) && s > 0 &&
                   (n->res[0].type.elem == ELEM_I8 || n->res[0].type.elem == ELEM_U8)) {
            qb_set(&n->res[0], &(QuantParams){n->res[0].type.elem, (float)s, (int32_t)z});
            typed = true;
        }
    }
    return typed;
}

static bool visit(void *ctx, Node *n) {
    fold(ctx, n);
    return false; /* q.rewrote says */
}

bool pass_fold_qdq(Function *f, PassContext *ctx) {
    Fold q = {.f = f, .ctx = ctx};
    bool typed = type_onnx_kinds(f);
    qb_walk(f, visit, &q, &q.failed);
    /* What the folds left unread: float ops, their Q and DQ nodes, constants. */
    if (q.rewrote && !q.failed)
        qb_sweep(f, NULL);
    return (typed || q.rewrote) && !q.failed;
}
