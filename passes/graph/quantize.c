/* quantize: the float graph to integers, from a profile of its values
 * (glowc profile), as Glow's profile-guided quantization does. Runs first,
 * on the imported graph, whose node names are the profile's.
 *
 *   conv(x, W, b)            -> qlinear_conv(q(x), Wq, bias i32)   per-channel Wq
 *   gemm(x, W, c) / matmul   -> the same as a 1x1 qlinear_conv on x [M,K,1,1]
 *   relu after those         -> folded into the output range when the range's
 *                               zero is the kind's minimum (saturation is relu)
 *   max_pool, reshape, flatten of an integer value -> the same on integers
 *   relu, clip of an integer value -> clip at the bounds' quantized values
 *   avg pools of an integer value  -> qavg_pool, qglobal_avg_pool at its scale
 *   add, mul                 -> qadd, qmul to the result's profiled range,
 *                               when an operand is already an integer value
 *   concat                   -> concat of integers, rescaled to its range
 *   elementwise nodes of one varying input, itself an integer value or an
 *   input (hard-swish, sigmoid, a scale and a shift ...)
 *                            -> qlookup: one 256-entry table for the whole
 *                               chain, to the last node's profiled range
 *   anything else            -> float, between dequantize_linear and
 *                               quantize_linear (constants are quantized
 *                               from their own range)
 * A quantize of a dequantize with the same parameters is never made: an
 * integer value read again as integers is read directly. Weights are
 * symmetric int8 (offset 0, scale max|w|/127 per output channel); biases are
 * i32 with scale x_scale * w_scale, as ONNX's QLinearConv defines them.
 * First, cross-layer equalisation (qequalize.c) rescales activation channels
 * where the next layer can undo it, and gives the rescaled values' ranges.
 * Requires a profile (ctx->quant); invalidates nothing. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/infer.h"
#include "passes/graph/qbuild.h"
#include "passes/graph/qequalize.h"
#include "passes/pass.h"
#include "passes/quant_profile.h"

typedef struct Quant {
    Function *f;
    PassContext *ctx;
    const QuantConfig *cfg;
    QEqRanges eq;  /* values whose channels equalisation rescaled */
    Value **intv;  /* by node id: the integer form of that node's float result 0 */
    Value **srcv;  /* by node id of a dequantize made here: the integer value it reads */
    int cap;
    bool failed;
    bool rewrote;
} Quant;

static bool grow_maps(Quant *q) {
    int need = q->f->next_id + 1;
    if (need <= q->cap)
        return true;
    int cap = need * 2;
    Value **a = realloc(q->intv, (size_t)cap * sizeof *a);
    if (a)
        q->intv = a;
    Value **b = realloc(q->srcv, (size_t)cap * sizeof *b);
    if (b)
        q->srcv = b;
    if (!a || !b)
        return false;
    memset(q->intv + q->cap, 0, (size_t)(cap - q->cap) * sizeof *a);
    memset(q->srcv + q->cap, 0, (size_t)(cap - q->cap) * sizeof *b);
    q->cap = cap;
    return true;
}

static const char *value_name(const Value *v) {
    const Node *n = v->def;
    if (n->name && *n->name)
        return n->name;
    return n->label ? n->label : "";
}

/* The calibrated range of a profiled value: min/max, or the histogram cut
 * where a fraction of the elements lies beyond (percentile), or the cut
 * that keeps the distribution closest in KL divergence (kl). */
static double hist_edge(const QProfValue *v, int b) {
    return v->lo + (v->hi - v->lo) * b / QPROF_BINS;
}

static void percentile_range(const QProfValue *v, double *lo, double *hi) {
    /* 99.99%: drops one element in ten thousand at each end (outliers a
     * handful of pixels make), as ONNX Runtime's default percentile. */
    uint64_t cut = (uint64_t)((double)v->count * 1e-4);
    uint64_t acc = 0;
    int b = 0;
    while (b < QPROF_BINS - 1 && acc + v->bins[b] <= cut)
        acc += v->bins[b++];
    *lo = fmax(v->min, hist_edge(v, b));
    acc = 0;
    b = QPROF_BINS - 1;
    while (b > 0 && acc + v->bins[b] <= cut)
        acc += v->bins[b--];
    *hi = fmin(v->max, hist_edge(v, b + 1));
}

/* KL calibration (TensorRT's): over |x|'s histogram, the threshold whose
 * 255-level quantization of the clipped distribution diverges least from
 * it. The histogram is folded at 0 first. */
static double kl_threshold(const QProfValue *v) {
    enum { FOLD = 1024, LEVELS = 128 };
    double amax = fmax(fabs(v->min), fabs(v->max));
    if (amax == 0)
        return 0;
    double *h = calloc(FOLD, sizeof *h);
    for (int b = 0; b < QPROF_BINS; b++) {
        double mid = fabs((hist_edge(v, b) + hist_edge(v, b + 1)) / 2);
        int k = (int)(mid / amax * FOLD);
        h[k >= FOLD ? FOLD - 1 : k] += (double)v->bins[b];
    }
    double best = INFINITY;
    int best_i = FOLD;
    double *p = calloc(FOLD, sizeof *p), *qd = calloc(FOLD, sizeof *qd);
    for (int i = LEVELS; i <= FOLD; i++) {
        double outliers = 0;
        for (int k = i; k < FOLD; k++)
            outliers += h[k];
        for (int k = 0; k < i; k++)
            p[k] = h[k];
        p[i - 1] += outliers;
        /* q: the first i bins merged into LEVELS levels, spread back over
         * the bins that were non-zero. */
        for (int lvl = 0; lvl < LEVELS; lvl++) {
            int s = lvl * i / LEVELS, e = (lvl + 1) * i / LEVELS;
            double sum = 0;
            int nz = 0;
            for (int k = s; k < e; k++) {
                sum += h[k];
                nz += h[k] > 0;
            }
            for (int k = s; k < e; k++)
                qd[k] = h[k] > 0 ? sum / nz : 0;
        }
        double ps = 0, qs = 0;
        for (int k = 0; k < i; k++) {
            ps += p[k];
            qs += qd[k];
        }
        double kl = 0;
        for (int k = 0; k < i && ps > 0 && qs > 0; k++) {
            if (p[k] <= 0)
                continue;
            double pk = p[k] / ps, qk = qd[k] / qs;
            kl += qk > 0 ? pk * log(pk / qk) : pk * 20; /* a level lost: heavily penalised */
        }
        if (kl < best) {
            best = kl;
            best_i = i;
        }
    }
    free(h);
    free(p);
    free(qd);
    return amax * best_i / FOLD;
}

static void calibrated_range(const QuantConfig *cfg, const QProfValue *v, double *lo,
                             double *hi) {
    *lo = v->min;
    *hi = v->max;
    if (cfg->calibration == QC_PERCENTILE) {
        percentile_range(v, lo, hi);
    } else if (cfg->calibration == QC_KL) {
        double t = kl_threshold(v);
        *lo = fmax(v->min, -t);
        *hi = fmin(v->max, t);
    }
}

static bool error(Quant *q, const char *name, const char *fmt, const char *detail) {
    diag_error(q->ctx->d, q->cfg->profile_path, fmt, name, detail);
    q->failed = true;
    return false;
}

/* The scale and offset the schema gives [lo, hi], widened to hold 0. */
static bool params_for_range(Quant *q, const char *name, double lo, double hi, QuantParams *out) {
    lo = fmin(lo, 0);
    hi = fmax(hi, 0);
    if (!(hi > lo))
        return error(q, name, "value '%s' has a single-point range%s: its scale would be 0",
                     " [0, 0]");
    double scale;
    int32_t offset = 0;
    ElemKind elem = ELEM_I8;
    double amax = fmax(-lo, hi);
    switch (q->cfg->schema) {
    case QS_ASYMMETRIC:
        scale = (hi - lo) / 255;
        offset = (int32_t)fmin(127, fmax(-128, nearbyint(-128 - lo / scale)));
        break;
    case QS_SYMMETRIC_UINT8:
        if (lo >= 0) {
            elem = ELEM_U8;
            scale = hi / 255;
            break;
        }
        scale = amax / 127;
        break;
    case QS_SYMMETRIC_POW2:
        scale = exp2(ceil(log2(amax / 127)));
        break;
    default:
        scale = amax / 127;
        break;
    }
    if (!(scale >= FLT_MIN) || !isfinite((float)scale))
        return error(q, name, "value '%s' has a range too narrow or too wide for a float "
                     "scale%s", "");
    *out = (QuantParams){elem, (float)scale, offset};
    return true;
}

/* Whether v is computed from the graph's inputs (else from constants
 * alone: a constant the pass meets before constant folding). */
static bool reads_input(const Value *v, int depth) {
    const Node *n = v->def;
    if (n->kind == NK_PLACEHOLDER || depth > 64)
        return true; /* (deeper than any exporter's constant expression) */
    for (int i = 0; i < n->nops; i++)
        if (reads_input(n->ops[i], depth + 1))
            return true;
    return false;
}

/* Whether the value `name` has a range: the profile's, or equalisation's. */
static bool has_range(const Quant *q, const char *name) {
    return qprof_find(q->cfg->profile, name) || qeq_find(&q->eq, name);
}

/* The parameters of a profiled value v, from its calibrated range. A value
 * computed from the inputs that is 0 on every sample is an error (its scale
 * would be 0: a dead layer, or too few samples); one computed from
 * constants alone (an Identity of a zero bias, as transformer exports
 * have) is held exactly by any scale. */
static bool choose(Quant *q, const Value *val, QuantParams *out) {
    const char *name = value_name(val);
    const QProfValue *v = qprof_find(q->cfg->profile, name);
    const QEqRange *e = qeq_find(&q->eq, name);
    if (!v && !e)
        return error(q, name, "the profile has no value '%s'%s (is it from this graph, "
                     "profiled with the same inputs?)", "");
    double lo, hi;
    if (e) {
        lo = e->lo;
        hi = e->hi;
    } else {
        calibrated_range(q->cfg, v, &lo, &hi);
    }
    if (lo == 0 && hi == 0 && !reads_input(val, 0))
        hi = 1;
    return params_for_range(q, name, lo, hi, out);
}

/* Where a node computing from v goes: right after v's definition. */
static Node *after_def(Quant *q, const Value *v) {
    return node_is_storage(v->def) ? q->f->first : v->def->next;
}

static Value *int_constant(Quant *q, Value *v, const Tensor *c) {
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < tensor_numel(c); i++) {
        double x = tensor_get_f64(c, i);
        lo = fmin(lo, x);
        hi = fmax(hi, x);
    }
    QuantParams p;
    if (!(lo <= hi) || !isfinite(lo) || !isfinite(hi)) {
        error(q, value_name(v), "constant '%s' is empty or not finite%s", "");
        return NULL;
    }
    /* All zeros (a bias exported as zeros): every scale holds it exactly,
     * and the zero point is 0 whatever scale the unit range gives. */
    if (lo == 0 && hi == 0)
        hi = 1;
    if (!params_for_range(q, value_name(v), lo, hi, &p))
        return NULL;
    Type t = c->type;
    t.elem = p.elem;
    Tensor *x = tensor_new(q->f->module->arena, &t);
    for (int64_t i = 0; i < tensor_numel(c); i++)
        tensor_set_i64(x, i, qb_quantize(tensor_get_f64(c, i), &p));
    Node *n = graph_add_constant(q->f, v->def->name, x);
    qb_set(&n->res[0], &p);
    x->type = n->res[0].type;
    q->intv[v->def->id] = &n->res[0];
    pass_stat(q->ctx, "constants-quantized", 1);
    return &n->res[0];
}

/* The integer form of float value v: the value a dequantize made here
 * reads, one made before, or a new quantize_linear. NULL after an error. */
static Value *int_of(Quant *q, Value *v) {
    if (!grow_maps(q))
        return NULL;
    if (q->srcv[v->def->id])
        return q->srcv[v->def->id];
    if (v->index == 0 && q->intv[v->def->id])
        return q->intv[v->def->id];
    QuantParams p;
    const Tensor *c = value_constant(v);
    if (c && elem_is_float(c->type.elem)) /* quantized now, from its own range */
        return int_constant(q, v, c);
    if (v->index != 0 || !choose(q, v, &p))
        return NULL;
    Value *ops[3] = {v, qb_scalar(q->f, ELEM_F32, p.scale, value_name(v)),
                     qb_scalar(q->f, p.elem, p.offset, value_name(v))};
    Node *n = graph_insert_before(q->f, after_def(q, v), NK_QUANTIZE_LINEAR, 3, ops, 1);
    n->name = v->def->name;
    infer_node(n, q->ctx->d);
    qb_set(&n->res[0], &p);
    if (!grow_maps(q))
        return NULL;
    q->intv[v->def->id] = &n->res[0];
    pass_stat(q->ctx, "quantizes", 1);
    return &n->res[0];
}

/* The float form of integer value iv, for float users: a dequantize_linear. */
static Value *float_of(Quant *q, Value *iv) {
    QuantParams p = qb_params_of(iv);
    Value *ops[3] = {iv, qb_scalar(q->f, ELEM_F32, p.scale, iv->def->name),
                     qb_scalar(q->f, p.elem, p.offset, iv->def->name)};
    Node *n = graph_insert_before(q->f, iv->def->next, NK_DEQUANTIZE_LINEAR, 3, ops, 1);
    n->name = iv->def->name;
    infer_node(n, q->ctx->d);
    grow_maps(q);
    q->srcv[n->id] = iv;
    return &n->res[0];
}

/* Float node old is now computed by integer value iv: its users read the
 * dequantized value; old goes. */
static void replace(Quant *q, Node *old, Value *iv) {
    Value *fv = float_of(q, iv);
    graph_replace_uses(q->f, &old->res[0], fv);
    graph_remove_node(q->f, old);
    if (!q->rewrote) {
        q->rewrote = true;
        pass_rewrote(q->ctx, q->f, fv);
    }
}

static bool kept_float(const Quant *q, const Node *n) {
    const char *list = q->cfg->keep_float;
    const char *kind = node_kind_name(n->kind);
    for (const char *s = list; s && *s;) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if ((n->name && strlen(n->name) == len && !strncmp(n->name, s, len)) ||
            (strlen(kind) == len && !strncmp(kind, s, len)))
            return true;
        s = e ? e + 1 : s + len;
    }
    return false;
}


/* Symmetric int8 weights w [M, ...] (one scale per row m, or one for all),
 * and their i32 bias with scale xs * ws[m]. */
static void quantize_weights(Quant *q, const Tensor *w, const double *bias, float xs,
                             const char *name, Value **wq, Value **ws, Value **wz, Value **bq) {
    Arena *a = q->f->module->arena;
    int64_t m = w->type.dims[0], per = tensor_numel(w) / (m ? m : 1);
    bool per_channel = !q->cfg->per_tensor_weights;
    double *scale = calloc((size_t)m + 1, sizeof *scale);
    double all = 0;
    for (int64_t c = 0; c < m; c++) {
        double amax = 0;
        for (int64_t i = 0; i < per; i++)
            amax = fmax(amax, fabs(tensor_get_f64(w, c * per + i)));
        scale[c] = amax;
        all = fmax(all, amax);
    }
    for (int64_t c = 0; c < m; c++) {
        double amax = per_channel ? scale[c] : all;
        /* An all-zero channel quantizes to zeros under any scale. */
        scale[c] = amax > 0 ? (double)(float)(amax / 127) : 1.0;
    }
    Type wt = w->type;
    wt.elem = ELEM_I8;
    Tensor *wt_q = tensor_new(a, &wt);
    for (int64_t c = 0; c < m; c++)
        for (int64_t i = 0; i < per; i++)
            tensor_set_i64(wt_q, c * per + i,
                           (int64_t)fmin(127, fmax(-127, nearbyint(tensor_get_f64(w, c * per + i) /
                                                                   scale[c]))));
    Type st = type_make(ELEM_F32, 1, (int64_t[]){m}), zt = type_make(ELEM_I8, 1, (int64_t[]){m});
    Type bt = type_make(ELEM_I32, 1, (int64_t[]){m});
    Tensor *s = tensor_new(a, &st), *z = tensor_new(a, &zt), *b = tensor_new(a, &bt);
    for (int64_t c = 0; c < m; c++) {
        tensor_set_f64(s, c, scale[c]);
        double bs = (double)xs * (double)(float)scale[c];
        double v = bias ? nearbyint(bias[c] / bs) : 0;
        tensor_set_i64(b, c, (int64_t)fmin(INT32_MAX, fmax(INT32_MIN, v)));
    }
    Node *wn = graph_add_constant(q->f, name, wt_q);
    if (per_channel) {
        wn->res[0].type.quant = QUANT_CHANNEL;
        wn->res[0].type.qaxis = 0;
    } else {
        qb_set(&wn->res[0], &(QuantParams){ELEM_I8, (float)scale[0], 0});
    }
    wt_q->type = wn->res[0].type;
    *wq = &wn->res[0];
    *ws = &graph_add_constant(q->f, name, s)->res[0];
    *wz = &graph_add_constant(q->f, name, z)->res[0];
    Node *bn = graph_add_constant(q->f, name, b);
    bn->res[0].type.quant = QUANT_CHANNEL;
    bn->res[0].type.qaxis = 0;
    b->type = bn->res[0].type;
    *bq = &bn->res[0];
    pass_stat(q->ctx, per_channel ? "weights-per-channel" : "weights-per-tensor", 1);
    free(scale);
}

/* The output of a conv-like node: its own profile, or a relu user's when
 * that relu's zero is the kind's minimum (saturation then computes it). */
static bool output_params(Quant *q, Node *n, Node **relu, QuantParams *out) {
    Node *u = graph_only_user(q->f, n);
    *relu = NULL;
    QuantParams rp;
    if (u && u->kind == NK_RELU && !kept_float(q, u) && has_range(q, u->name) &&
        choose(q, &u->res[0], &rp) && rp.offset == (rp.elem == ELEM_U8 ? 0 : -128)) {
        *relu = u;
        *out = rp;
        pass_stat(q->ctx, "relus-folded", 1);
        return true;
    }
    return !q->failed && choose(q, &n->res[0], out);
}


/* qlinear_conv(xi, w, bias) before pos, result with params yp. */
static Value *emit_qconv(Quant *q, Node *pos, Value *xi, const Tensor *w, const double *bias,
                         const QuantParams *yp, const Node *attrs_from, const char *name) {
    QuantWeights qw;
    Value *bq;
    quantize_weights(q, w, bias, qb_params_of(xi).scale, pos->name, &qw.w, &qw.ws, &qw.wz, &bq);
    Value *y = qb_qconv(q->f, q->ctx->d, pos, xi, &qw, bq, yp, attrs_from, name);
    q->failed |= !y;
    return y;
}

static const Tensor *weight_of(const Value *v) {
    return qb_weight_of(v);
}

static double *bias_vector(const Value *v, int64_t m, double scale) {
    double *b = calloc((size_t)m + 1, sizeof *b);
    const Tensor *t = weight_of(v);
    int64_t n = t ? tensor_numel(t) : 0;
    for (int64_t i = 0; t && i < m; i++)
        b[i] = scale * tensor_get_f64(t, n == 1 ? 0 : i);
    return b;
}

static bool rewrite_conv(Quant *q, Node *n) {
    const Tensor *w = weight_of(n->ops[1]);
    if (!w || n->ops[0]->type.rank != 4 || !elem_is_float(w->type.elem) ||
        (n->nops > 2 && !weight_of(n->ops[2])))
        return false;
    Node *relu;
    QuantParams yp;
    Value *xi = int_of(q, n->ops[0]);
    if (!xi || !output_params(q, n, &relu, &yp))
        return false;
    double *b = bias_vector(n->nops > 2 ? n->ops[2] : NULL, w->type.dims[0], 1);
    /* With the relu folded in, the node computes the relu's value: it takes
     * that name, which is what the float graph calls the value (compare). */
    Value *y = emit_qconv(q, n, xi, w, b, &yp, n, relu ? relu->name : n->name);
    free(b);
    if (!y)
        return false;
    if (relu) {
        Value *fv = float_of(q, y);
        graph_replace_uses(q->f, &relu->res[0], fv);
        graph_remove_node(q->f, relu);
        graph_remove_node(q->f, n);
    } else {
        replace(q, n, y);
    }
    grow_maps(q);
    pass_stat(q->ctx, "convs", 1);
    return true;
}

/* x [M,K] times constant W (gemm: alpha, W^T with trans_b, beta*c) as a 1x1
 * qlinear_conv over x [M,K,1,1] with weights [N,K,1,1]. */
static bool rewrite_matmul(Quant *q, Node *n) {
    const Tensor *w = weight_of(n->ops[1]);
    Value *x = n->ops[0];
    bool gemm = n->kind == NK_GEMM;
    if (!w || x->type.rank != 2 || w->type.rank != 2 || !elem_is_float(w->type.elem) ||
        (gemm && node_attr_int(n, AK_trans_a, 0)) ||
        (gemm && n->nops > 2 && !weight_of(n->ops[2])))
        return false;
    bool tb = gemm && node_attr_int(n, AK_trans_b, 0);
    double alpha = gemm ? node_attr_float(n, AK_alpha, 1) : 1;
    double beta = gemm ? node_attr_float(n, AK_beta, 1) : 1;
    int64_t k = tb ? w->type.dims[1] : w->type.dims[0], m = tb ? w->type.dims[0] : w->type.dims[1];
    const Tensor *c = gemm && n->nops > 2 ? weight_of(n->ops[2]) : NULL;
    if (c && tensor_numel(c) != m && tensor_numel(c) != 1)
        return false; /* a bias per row too: float */
    Node *relu;
    QuantParams yp;
    Value *xi = int_of(q, x);
    if (!xi || !output_params(q, n, &relu, &yp))
        return false;
    Type wt = type_make(w->type.elem, 4, (int64_t[]){m, k, 1, 1});
    Tensor *w4 = tensor_new(q->f->module->arena, &wt);
    for (int64_t o = 0; o < m; o++)
        for (int64_t i = 0; i < k; i++)
            tensor_set_f64(w4, o * k + i,
                           alpha * tensor_get_f64(w, tb ? o * k + i : i * m + o));
    double *b = bias_vector(c ? n->ops[2] : NULL, m, beta);
    int64_t rows = x->type.dims[0];
    Value *x4 = qb_reshape(q->f, n, xi, 4, (int64_t[]){rows, k, 1, 1});
    Value *y4 = emit_qconv(q, n, x4, w4, b, &yp, NULL, relu ? relu->name : n->name);
    free(b);
    if (!y4)
        return false;
    Value *y = qb_reshape(q->f, n, y4, 2, (int64_t[]){rows, m});
    if (relu) {
        graph_replace_uses(q->f, &relu->res[0], float_of(q, y));
        graph_remove_node(q->f, relu);
        graph_remove_node(q->f, n);
    } else {
        replace(q, n, y);
    }
    pass_stat(q->ctx, gemm ? "gemms" : "matmuls", 1);
    return true;
}

/* A node of kind k over integer operands, its result at params p in the
 * shape of float node n's result. */
static Value *emit_int(Quant *q, Node *n, NodeKind k, int nops, Value **ops,
                       const QuantParams *p) {
    Value *y = qb_like(q->f, q->ctx->d, n, k, nops, ops, p);
    q->failed |= !y;
    return y;
}

/* No window of the max pool lies wholly in its padding: the float kernel
 * gives -inf there, which no integer holds. */
static bool max_pool_windows_real(const Node *n) {
    int nk, np, nd;
    const int64_t *k = node_attr_ints(n, AK_kernel, &nk), *p = node_attr_ints(n, AK_pads, &np);
    const int64_t *dl = node_attr_ints(n, AK_dilations, &nd);
    if (node_attr_int(n, AK_ceil_mode, 0))
        return false;
    for (int i = 0; i < np; i++) {
        int axis = i % (nk ? nk : 1);
        int64_t extent = axis < nk ? (k[axis] - 1) * (axis < nd ? dl[axis] : 1) + 1 : 1;
        if (p[i] >= extent)
            return false;
    }
    return true;
}

/* A node that commutes with a monotonic quantization (max_pool, reshape,
 * flatten) runs on the integers when its operand already is one. */
static bool rewrite_passthrough(Quant *q, Node *n) {
    if (!grow_maps(q) || n->nres != 1 || (n->kind == NK_MAX_POOL && !max_pool_windows_real(n)))
        return false;
    Value *src = q->srcv[n->ops[0]->def->id];
    if (!src)
        return false;
    QuantParams p = qb_params_of(src);
    Value *y = emit_int(q, n, n->kind, 1, &src, &p);
    if (!y)
        return false;
    replace(q, n, y);
    pass_stat(q->ctx, "integer-passthroughs", 1);
    return true;
}

/* add and mul in real numbers, to the result's profiled range. A relu
 * after an add (a residual block's) folds into the add's range, as after a
 * conv: saturation at the relu's zero computes it, and the sum gets all 256
 * levels of [0, max] instead of a clip of the add's own range. */
static bool rewrite_binary(Quant *q, Node *n) {
    QuantParams p;
    Node *relu = NULL;
    /* Only where integers already flow: an add or mul of float values
     * (a float matmul's bias) would quantize both to add once. */
    if (!elem_is_float(n->res[0].type.elem) || !grow_maps(q) ||
        (!q->srcv[n->ops[0]->def->id] && !q->srcv[n->ops[1]->def->id]) ||
        !(n->kind == NK_ADD ? output_params(q, n, &relu, &p) : choose(q, &n->res[0], &p)))
        return false;
    Value *ops[2] = {int_of(q, n->ops[0]), int_of(q, n->ops[1])};
    if (!ops[0] || !ops[1])
        return false;
    Value *y = emit_int(q, n, n->kind == NK_ADD ? NK_QADD : NK_QMUL, 2, ops, &p);
    if (!y)
        return false;
    if (relu) {
        y->def->name = relu->name;
        graph_replace_uses(q->f, &relu->res[0], float_of(q, y));
        graph_remove_node(q->f, relu);
        graph_remove_node(q->f, n);
    } else {
        replace(q, n, y);
    }
    pass_stat(q->ctx, n->kind == NK_ADD ? "adds" : "muls", 1);
    return true;
}

/* concat of integers at one scale: operands at another are rescaled. */
static bool rewrite_concat(Quant *q, Node *n) {
    QuantParams p;
    if (!elem_is_float(n->res[0].type.elem) || n->nops > 64 ||
        !choose(q, &n->res[0], &p))
        return false;
    Value *ops[64];
    for (int i = 0; i < n->nops; i++) {
        ops[i] = int_of(q, n->ops[i]);
        if (!ops[i])
            return false;
        QuantParams o = qb_params_of(ops[i]);
        if (o.elem == p.elem && o.scale == p.scale && o.offset == p.offset)
            continue;
        Node *r = graph_insert_before(q->f, n, NK_RESCALE, 1, &ops[i], 1);
        r->name = ops[i]->def->name;
        r->res[0].type = ops[i]->type;
        r->res[0].type.elem = p.elem;
        qb_set(&r->res[0], &p);
        infer_node(r, q->ctx->d);
        ops[i] = &r->res[0];
        pass_stat(q->ctx, "rescales", 1);
    }
    Value *y = emit_int(q, n, NK_CONCAT, n->nops, ops, &p);
    if (!y)
        return false;
    replace(q, n, y);
    pass_stat(q->ctx, "concats", 1);
    return true;
}

/* relu, and clip with constant bounds, of an integer value: a clip at the
 * bounds' quantized values, exact since quantization is monotonic and maps
 * 0 to the offset. */
static bool rewrite_clip(Quant *q, Node *n) {
    if (!grow_maps(q) || (n->kind == NK_CLIP && n->nops != 1))
        return false;
    Value *src = q->srcv[n->ops[0]->def->id];
    if (!src)
        return false;
    QuantParams p = qb_params_of(src);
    Node *m = graph_insert_before(q->f, n, NK_CLIP, 1, &src, 1);
    m->name = n->name;
    bool relu = n->kind == NK_RELU;
    if (relu || node_has_attr(n, AK_min))
        node_set_float(m, AK_min, (float)qb_quantize(relu ? 0 : node_attr_float(n, AK_min, 0), &p));
    if (!relu && node_has_attr(n, AK_max))
        node_set_float(m, AK_max, (float)qb_quantize(node_attr_float(n, AK_max, 0), &p));
    infer_node(m, q->ctx->d);
    type_copy_quant(&m->res[0].type, &src->type);
    replace(q, n, &m->res[0]);
    pass_stat(q->ctx, "clips", 1);
    return true;
}

/* An average pool of an integer value, to its own profiled range (means
 * spread less than what they average: a finer scale), else at its input's. */
static bool rewrite_avg_pool(Quant *q, Node *n) {
    if (!grow_maps(q) || n->ops[0]->type.elem != ELEM_F32)
        return false;
    Value *src = q->srcv[n->ops[0]->def->id];
    if (!src)
        return false;
    QuantParams p = qb_params_of(src);
    if (has_range(q, value_name(&n->res[0])) &&
        !choose(q, &n->res[0], &p))
        return false;
    Value *y = emit_int(q, n, n->kind == NK_AVG_POOL ? NK_QAVG_POOL : NK_QGLOBAL_AVG_POOL, 1,
                        &src, &p);
    if (!y)
        return false;
    replace(q, n, y);
    pass_stat(q->ctx, "avg-pools", 1);
    return true;
}

/* ---- elementwise chains as one table (qbuild.c) ------------------------------ */

static bool chain_filter(void *ctx, const Node *n, bool last) {
    Quant *q = ctx;
    return last ? has_range(q, value_name(&n->res[0])) : !kept_float(q, n);
}

static bool rewrite_chain(Quant *q, Node *n) {
    if (!grow_maps(q))
        return false;
    Value *x = qb_chain_input(n);
    /* x is an integer value's float form, or a graph input (quantized
     * here, as a conv reading it would be). */
    Value *xi = x ? q->srcv[x->def->id] : NULL;
    bool input = x && x->def->kind == NK_PLACEHOLDER;
    Node *chain[QB_CHAIN_MAX];
    int count = xi || input ? qb_find_chain(q->f, n, x, chain, chain_filter, q) : 0;
    /* A lone relu or clip stays the exact integer clip (no new rounding). */
    if (count == 0 || (count == 1 && (n->kind == NK_RELU || n->kind == NK_CLIP)))
        return false;
    if (!xi && !(xi = int_of(q, x)))
        return false;
    Node *last = chain[count - 1];
    QuantParams xp = qb_params_of(xi), yp;
    int64_t nch = qb_chain_channels(x, chain, count);
    double *table = malloc((size_t)(256 * nch) * sizeof *table);
    bool ok = table && choose(q, &last->res[0], &yp) &&
              qb_chain_table(x, &xp, chain, count, nch, table);
    Value *y = ok ? qb_lookup(q->f, q->ctx->d, last, xi, table, nch, &yp) : NULL;
    free(table);
    if (!ok)
        return false;
    if (!y) {
        q->failed = true;
        return false;
    }
    replace(q, last, y);
    for (int j = count - 2; j >= 0; j--)
        graph_remove_node(q->f, chain[j]);
    pass_stat(q->ctx, "chains-to-tables", 1);
    pass_stat(q->ctx, "nodes-in-tables", count);
    return true;
}

static bool rewrite(Quant *q, Node *n) {
    if (kept_float(q, n)) {
        pass_stat(q->ctx, "kept-float", 1);
        return false;
    }
    if (rewrite_chain(q, n))
        return true;
    switch (n->kind) {
    case NK_CONV: return rewrite_conv(q, n);
    case NK_GEMM:
    case NK_MATMUL: return rewrite_matmul(q, n);
    case NK_MAX_POOL:
    case NK_RESHAPE:
    case NK_FLATTEN: return rewrite_passthrough(q, n);
    case NK_ADD:
    case NK_MUL: return rewrite_binary(q, n);
    case NK_CONCAT: return rewrite_concat(q, n);
    case NK_AVG_POOL:
    case NK_GLOBAL_AVG_POOL: return rewrite_avg_pool(q, n);
    case NK_RELU:
    case NK_CLIP: return rewrite_clip(q, n);
    default: return false;
    }
}

/* Quantizes and dequantizes that nothing reads (an integer value read
 * directly instead), and the reshapes and identities of the float weights
 * the rewrites replaced. */
static bool sweepable(const Node *n) {
    return n->kind == NK_DEQUANTIZE_LINEAR || n->kind == NK_QUANTIZE_LINEAR ||
           n->kind == NK_RESHAPE || n->kind == NK_IDENTITY;
}

static bool visit(void *ctx, Node *n) {
    return rewrite(ctx, n);
}

bool pass_quantize(Function *f, PassContext *ctx) {
    if (!ctx->quant || !ctx->quant->profile) {
        diag_error(ctx->d, NULL, "quantize: no profile (give --quantize=PROFILE.json)");
        return false;
    }
    Quant q = {.f = f, .ctx = ctx, .cfg = ctx->quant};
    qeq_apply(f, ctx, q.cfg, chain_filter, &q, &q.eq);
    bool changed = qb_walk(f, visit, &q, &q.failed) || q.eq.n > 0;
    free(q.intv);
    free(q.srcv);
    qeq_free(&q.eq);
    if (changed && !q.failed)
        qb_sweep(f, sweepable);
    return changed;
}
