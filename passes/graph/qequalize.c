/* Cross-layer equalisation before quantizing (after Nagel et al. 2019,
 * "Data-Free Quantization", section 4.1, but driven by the profile's
 * per-channel activation ranges rather than by weight ranges alone).
 *
 * A per-tensor activation scale is set by its widest channel: after PaddleOCR
 * v4's first batch norm the widest channel spans 26.7 and the median 2.8, so
 * most channels get a tenth of the 256 levels. A producer P (conv, or
 * batch_norm) can multiply its output channel c by s_c > 0 (its weight row
 * and bias, free under per-channel weights; or its scale and shift) when
 * whatever reads it can undo that exactly:
 *   - a depthwise conv C2 right after it: C2's rows reading c over s_c (its
 *     per-channel weight scales absorb that too);
 *   - a dense conv C2, directly or through a relu (positively homogeneous:
 *     relu(s x) = s relu(x)), with --quant-equalize=dense: C2's weight column
 *     c over s_c, which costs that column precision;
 *   - an elementwise chain that becomes a table (conv P only: its result is
 *     an integer value), then a conv C2: a mul by 1/s_c before the chain and
 *     a mul by r_c after it, both with [1, C, 1, 1] constants, join the
 *     chain, which becomes one qlookup with a table per channel, absorbing
 *     both; C2's reading of c is divided by r_c. The chain's output (C2's
 *     input) is equalised by r_c as x is by s_c.
 * The graph computes the same outputs in real arithmetic throughout.
 *
 * Choosing the factors (choose_factors) for a value x read by C2 (weights
 * W2). Let a_c = max |x_c| over the profile and w_c = max |W2[., c, ...]|.
 * After scaling, channel c of x spans s_c a_c and C2's weights reading it
 * w_c / s_c. Under x's per-tensor scale (set by the widest scaled channel)
 * channel c's relative precision is s_c a_c / max_k(s_k a_k); under C2's
 * weight scale (per output row, over all input channels) column c's is about
 * (w_c / s_c) / max_k(w_k / s_k). Nagel et al. maximise the sum over c of the
 * product of the two, which makes s_c a_c and w_c / s_c proportional:
 * s_c = k sqrt(w_c / a_c), k common. Before a depthwise conv or a table
 * only the activation matters: s_c as large as keeps channel c inside the
 * tensor's range (the asymmetric schema's [min, max] widened to hold 0,
 * a symmetric one's [-A, A]); before a dense conv k is the largest common
 * factor that does. s_c is held to [2^-10, 2^10]: a channel that is nearly
 * always 0 would otherwise take a factor its weights' float range pays for
 * with nothing to gain.
 *
 * P's per-tensor weight scale (--quant-per-tensor) would not absorb s_c, and
 * a calibration over the histogram (kl, percentile) has no per-channel
 * histogram to cut: equalisation runs with per-channel weights and minmax
 * only. */
#include "passes/graph/qequalize.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/infer.h"
#include "passes/graph/qbuild.h"

enum { EQ_MAX_LOG2 = 10 };

typedef struct QEq {
    const QuantConfig *cfg;
    QbChainAccept accept; /* which chains the quantize pass makes tables of */
    void *actx;
    QEqRanges *out;
    bool asym; /* the schema's range is [min, max], not symmetric */
} QEq;

const QEqRange *qeq_find(const QEqRanges *r, const char *name) {
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->r[i].name, name))
            return &r->r[i];
    return NULL;
}

void qeq_free(QEqRanges *r) {
    free(r->r);
    *r = (QEqRanges){0};
}

static const char *name_of(const Node *n) {
    if (n->name && *n->name)
        return n->name;
    return n->label ? n->label : "";
}

/* The per-channel profile of node n's value when it has c channels. */
static const QProfValue *channels_of(const QuantConfig *cfg, const Node *n, int64_t c) {
    const QProfValue *v = qprof_find(cfg->profile, name_of(n));
    return v && v->nch == c ? v : NULL;
}

/* P's float parameters that scale its output channel c: a conv's weight
 * rows and bias, a batch norm's scale and shift. */
static bool producer_params(const Node *p, int64_t *channels) {
    if (p->nres != 1 || p->res[0].type.rank != 4 || p->res[0].type.elem != ELEM_F32)
        return false;
    *channels = p->res[0].type.dims[1];
    if (p->kind == NK_CONV) {
        const Tensor *w = qb_weight_of(p->ops[1]);
        return w && w->type.elem == ELEM_F32 && w->type.dims[0] == *channels &&
               (p->nops < 3 || qb_weight_of(p->ops[2]));
    }
    if (p->kind == NK_BATCH_NORM) {
        const Tensor *s = qb_weight_of(p->ops[1]), *b = qb_weight_of(p->ops[2]);
        return s && b && tensor_numel(s) == *channels && tensor_numel(b) == *channels;
    }
    return false;
}

/* C2 reads x (channels ch) as a conv with constant weights: dense (group 1)
 * or depthwise (one input channel per group, any multiplier). */
static bool consumer_ok(const Node *c2, const Value *x, int64_t ch, bool *depthwise) {
    if (!c2 || c2->kind != NK_CONV || c2->ops[0] != x || c2->nops < 2)
        return false;
    for (int i = 1; i < c2->nops; i++)
        if (c2->ops[i] == x)
            return false;
    const Tensor *w = qb_weight_of(c2->ops[1]);
    int64_t g = node_attr_int(c2, AK_group, 1);
    if (!w || w->type.elem != ELEM_F32 || w->type.rank != 4)
        return false;
    *depthwise = g == ch && ch > 1 && w->type.dims[1] == 1;
    return g == 1 ? w->type.dims[1] == ch : *depthwise;
}

/* A copy of constant t with element i multiplied by f[channel(i)]. */
static Value *scaled(Function *f, const Value *orig, const Tensor *t, const double *fac,
                     int64_t ch, int64_t inner, bool divide) {
    Tensor *x = tensor_new_big(f->module->arena, &t->type);
    if (!x)
        return NULL;
    int64_t n = tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        int64_t c = i / inner % ch;
        double v = tensor_get_f64(t, i);
        tensor_set_f64(x, i, divide ? v / fac[c] : v * fac[c]);
    }
    Node *k = graph_add_constant(f, orig->def->name, x);
    return &k->res[0];
}

/* The factors s_c (see the top of the file) for x's channels read by a conv
 * with weights w2. Channel c fits the tensor's range [lo, hi] (widened to
 * hold 0; symmetric schemas: [-A, A], A the widest |x|) when s_c is at most
 * fit_c = min(hi / max_c, lo / min_c): before a depthwise conv or a table
 * s_c = fit_c, every channel as wide as the range lets it be; before a dense
 * conv s_c = k sqrt(w_c / a_c), k the largest common factor that keeps
 * every channel in the range. */
static void choose_factors(const QProfValue *xv, const Tensor *w2, bool depthwise, bool asym,
                           double *s) {
    int64_t ch = xv->nch;
    double lo = 0, hi = 0, amax = 0;
    for (int64_t c = 0; c < ch; c++) {
        lo = fmin(lo, xv->cmin[c]);
        hi = fmax(hi, xv->cmax[c]);
    }
    amax = fmax(-lo, hi);
    if (!asym) {
        lo = -amax;
        hi = amax;
    }
    double k = INFINITY;
    for (int64_t c = 0; c < ch; c++) {
        double fit = fmin(xv->cmax[c] > 0 ? hi / xv->cmax[c] : INFINITY,
                          xv->cmin[c] < 0 ? lo / xv->cmin[c] : INFINITY);
        double a = fmax(-xv->cmin[c], xv->cmax[c]), w = 0;
        if (depthwise || !w2) {
            s[c] = isfinite(fit) ? fit : 1;
            continue;
        }
        int64_t m = w2->type.dims[0], per = w2->type.dims[2] * w2->type.dims[3];
        for (int64_t o = 0; o < m; o++)
            for (int64_t i = 0; i < per; i++)
                w = fmax(w, fabs(tensor_get_f64(w2, (o * ch + c) * per + i)));
        /* a dead channel (a = 0) takes any factor: 1 after k below */
        s[c] = a > 0 ? sqrt(w / a) : -1;
        if (s[c] > 0 && isfinite(fit))
            k = fmin(k, fit / s[c]);
    }
    double lim = exp2(EQ_MAX_LOG2);
    for (int64_t c = 0; c < ch; c++) {
        double v = depthwise || !w2 ? s[c] : s[c] < 0 || !isfinite(k) ? 1 : k * s[c];
        s[c] = fmin(lim, fmax(1 / lim, v));
    }
}

/* n's value is rescaled: it is renamed "NAME/equalised", so that nothing
 * matches it by name with the float graph's (compare, --keep-float=auto),
 * and its range is listed under that name. */
static void add_range(Function *f, QEqRanges *out, Node *n, const QProfValue *v,
                      const double *s) {
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t c = 0; c < v->nch; c++) {
        lo = fmin(lo, s[c] * v->cmin[c]);
        hi = fmax(hi, s[c] * v->cmax[c]);
    }
    if (out->n == out->cap) {
        out->cap = out->cap ? 2 * out->cap : 16;
        out->r = realloc(out->r, (size_t)out->cap * sizeof *out->r);
    }
    size_t len = strlen(v->name) + sizeof "/equalised";
    char *name = arena_alloc(f->module->arena, len);
    snprintf(name, len, "%s/equalised", v->name);
    n->name = name;
    out->r[out->n++] = (QEqRange){name, lo, hi};
}

/* P's parameters times s_c: a conv's weights [M, ...] and bias [M], a batch
 * norm's scale and shift [C]. */
static void scale_producer(Function *f, Node *p, int64_t ch, const double *s) {
    int nparams = p->kind == NK_CONV ? p->nops - 1 : 2;
    for (int i = 1; i <= nparams; i++) {
        const Tensor *t = qb_weight_of(p->ops[i]);
        int64_t inner = tensor_numel(t) / ch;
        Value *nv = scaled(f, p->ops[i], t, s, ch, inner ? inner : 1, false);
        if (nv)
            p->ops[i] = nv;
    }
}

/* C2's weights reading channel c over s_c: a dense conv's [M2, C, kh, kw]
 * by axis 1, a depthwise conv's [C * mult, 1, kh, kw] by row, mult rows per
 * channel. */
static void scale_consumer(Function *f, Node *c2, int64_t ch, bool depthwise, const double *s) {
    const Tensor *w2 = qb_weight_of(c2->ops[1]);
    int64_t kk = w2->type.dims[2] * w2->type.dims[3];
    int64_t inner = depthwise ? kk * (w2->type.dims[0] / ch) : kk;
    Value *nw2 = scaled(f, c2->ops[1], w2, s, ch, inner, true);
    if (nw2)
        c2->ops[1] = nw2;
}

/* mul(v, k) before pos, k [1, C, 1, ...] at v's rank holding fac (inverted
 * when invert). */
static Node *channel_mul(Function *f, PassContext *ctx, Node *pos, Value *v, const double *fac,
                         bool invert, const char *name) {
    Type kt = v->type;
    for (int d = 0; d < kt.rank; d++)
        kt.dims[d] = d == 1 ? v->type.dims[1] : 1;
    Tensor *k = tensor_new(f->module->arena, &kt);
    if (!k)
        return NULL;
    for (int64_t c = 0; c < kt.dims[1]; c++)
        tensor_set_f64(k, c, invert ? 1 / fac[c] : fac[c]);
    Value *ops[2] = {v, &graph_add_constant(f, name, k)->res[0]};
    Node *m = graph_insert_before(f, pos, NK_MUL, 2, ops, 1);
    m->name = name;
    if (!infer_node(m, ctx->d))
        return NULL;
    return m;
}

/* Whether every reader of v is one of chain[0..count). */
static bool read_only_by(Function *f, const Value *v, Node *const *chain, int count) {
    for (int i = 0; i < f->noutputs; i++)
        if (f->outputs[i] == v)
            return false;
    for (Node *m = f->first; m; m = m->next)
        for (int i = 0; i < m->nops; i++) {
            if (m->ops[i] != v)
                continue;
            bool in = false;
            for (int j = 0; j < count && !in; j++)
                in = chain[j] == m;
            if (!in)
                return false;
        }
    return true;
}

/* Whether the quantize pass may rewrite n (--keep-float does not name it):
 * a node kept in float keeps its name and weights. */
static bool free_to_change(const QEq *e, const Node *n) {
    return !n || e->accept(e->actx, n, false);
}

/* The first compute node after p that reads p's result. */
static Node *first_reader(const Node *p) {
    for (Node *m = p->next; m; m = m->next)
        for (int i = 0; i < m->nops; i++)
            if (m->ops[i] == &p->res[0])
                return m;
    return NULL;
}

/* conv P -> elementwise chain (a table to be) -> conv C2. P's channel c
 * times s_c, and mul(x', 1/s) before the chain gives the chain its float
 * input back; mul(y, r) after it and C2's reading of c over r_c. The two
 * muls have per-channel constants: the chain with them becomes one qlookup
 * with a table per channel (qbuild.c), which absorbs both, so x' and r y
 * each reach the full range per channel at no cost. */
static bool equalise_chain(Function *f, PassContext *ctx, const QEq *e, Node *p, int64_t ch,
                           const QProfValue *pv) {
    Node *chain[QB_CHAIN_MAX];
    Node *first = p->kind == NK_CONV ? first_reader(p) : NULL;
    int count = first ? qb_find_chain(f, first, &p->res[0], chain, e->accept, e->actx) : 0;
    /* A lone relu or clip stays an integer clip, exact and vectorised: a
     * table would cost mobilenet_v2's 34 relu6 clips 40% of its int8 time
     * for 0.6 dB. */
    if (count == 0 || (count == 1 && (first->kind == NK_RELU || first->kind == NK_CLIP)) ||
        !read_only_by(f, &p->res[0], chain, count))
        return false;
    Node *last = chain[count - 1], *c2 = graph_only_user(f, last);
    const QProfValue *yv = channels_of(e->cfg, last, ch);
    bool depthwise;
    if (!yv || !consumer_ok(c2, &last->res[0], ch, &depthwise) || !free_to_change(e, c2))
        return false;
    double *s = malloc((size_t)ch * sizeof *s), *r = malloc((size_t)ch * sizeof *r);
    choose_factors(pv, NULL, true, e->asym, s);
    choose_factors(yv, qb_weight_of(c2->ops[1]), depthwise, e->asym, r);
    const char *pname = name_of(p);
    scale_producer(f, p, ch, s);
    Node *pre = channel_mul(f, ctx, first, &p->res[0], s, true, pname);
    Node *post = pre ? channel_mul(f, ctx, last->next, &last->res[0], r, false, name_of(last))
                     : NULL;
    bool ok = pre && post;
    if (ok) {
        for (int j = 0; j < count; j++)
            for (int i = 0; i < chain[j]->nops; i++)
                if (chain[j]->ops[i] == &p->res[0])
                    chain[j]->ops[i] = &pre->res[0];
        for (int i = 0; i < c2->nops; i++)
            if (c2->ops[i] == &last->res[0])
                c2->ops[i] = &post->res[0];
        scale_consumer(f, c2, ch, depthwise, r);
        add_range(f, e->out, p, pv, s);
        add_range(f, e->out, post, yv, r);
        pass_stat(ctx, "equalised-through-tables", 1);
    }
    free(s);
    free(r);
    return ok;
}

/* Equalises P -> [relu ->] C2, or P -> chain -> C2, when it is such a pair. */
static bool equalise(Function *f, PassContext *ctx, const QEq *e, Node *p) {
    int64_t ch;
    if (!producer_params(p, &ch) || ch < 2 || !free_to_change(e, p))
        return false;
    Node *relu = graph_only_user(f, p), *c2 = relu;
    if (relu && relu->kind == NK_RELU)
        c2 = graph_only_user(f, relu);
    else
        relu = NULL;
    const QProfValue *pv = channels_of(e->cfg, p, ch);
    const QProfValue *rv = relu ? channels_of(e->cfg, relu, ch) : NULL;
    const QProfValue *xv = relu ? rv : pv;
    bool depthwise;
    if (!pv || !free_to_change(e, relu) || !free_to_change(e, c2))
        return false;
    if (!xv || !consumer_ok(c2, relu ? &relu->res[0] : &p->res[0], ch, &depthwise))
        return !relu && equalise_chain(f, ctx, e, p, ch, pv);
    if (!depthwise && e->cfg->equalize != QE_DENSE)
        return false;
    double *s = malloc((size_t)ch * sizeof *s);
    choose_factors(xv, qb_weight_of(c2->ops[1]), depthwise, e->asym, s);
    scale_producer(f, p, ch, s);
    scale_consumer(f, c2, ch, depthwise, s);
    add_range(f, e->out, p, pv, s);
    if (relu)
        add_range(f, e->out, relu, rv, s);
    free(s);
    pass_stat(ctx, depthwise ? "equalised-depthwise" : "equalised-dense", 1);
    return true;
}

void qeq_apply(Function *f, PassContext *ctx, const QuantConfig *cfg, QbChainAccept accept,
               void *actx, QEqRanges *out) {
    *out = (QEqRanges){0};
    if (cfg->equalize == QE_OFF || cfg->per_tensor_weights || cfg->calibration != QC_MINMAX)
        return;
    QEq e = {cfg, accept, actx, out, cfg->schema == QS_ASYMMETRIC};
    /* The muls equalise_chain inserts come after their producer: the walk
     * meets them as nodes that produce nothing equalisable. */
    for (Node *n = f->first; n; n = n->next)
        equalise(f, ctx, &e, n);
}
