/* Cross-layer equalisation before quantizing (after Nagel et al. 2019,
 * "Data-Free Quantization", section 4.1, but driven by the profile's
 * per-channel activation ranges rather than by weight ranges alone).
 *
 * A per-tensor activation scale is set by its widest channel: after PaddleOCR
 * v4's first batch norm the widest channel spans 26.7 and the median 2.8, so
 * most channels get a tenth of the 256 levels. Where a producer P (conv, or
 * batch_norm) feeds a conv C2 directly or through a relu (positively
 * homogeneous: relu(s x) = s relu(x) for s > 0), P's output channel c can be
 * multiplied by s_c > 0 (its weight row and bias, or its batch-norm scale and
 * shift) and C2's weights reading channel c divided by s_c: the graph
 * computes the same outputs in real arithmetic, and the activation between
 * has channels of more equal range.
 *
 * Choosing s_c. Let a_c = max |x_c| over the profile (x: what C2 reads) and
 * w_c = max |W2[., c, ...]|. After scaling, channel c of x spans s_c a_c and
 * C2's weights reading it w_c / s_c. Under a per-tensor activation scale
 * (set by max_c s_c a_c) channel c's relative precision is
 * s_c a_c / max_k(s_k a_k); under C2's weight scale (per output row, over all
 * input channels) the column's is about (w_c / s_c) / max_k(w_k / s_k).
 * Nagel et al. maximise the sum over c of the product of the two, which
 * gives s_c a_c and w_c / s_c proportional: s_c = sqrt(w_c / a_c), up to a
 * common factor (the scales absorb it). A depthwise C2 (group = channels)
 * reads channel c with its own rows, whose per-channel weight scale absorbs
 * 1 / s_c exactly: there only the activation matters, s_c = 1 / a_c, every
 * channel at the full range. The common factor is chosen so that the widest
 * channel keeps its range (max_c s_c a_c = max_c a_c). s_c is held to
 * [2^-10, 2^10]: a channel that is nearly always 0 would otherwise take a
 * factor its weights' float range pays for with nothing to gain.
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

#include "passes/graph/qbuild.h"

enum { EQ_MAX_LOG2 = 10 };

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

/* The factors s_c (see the top of the file). */
static void choose_factors(const QProfValue *xv, const Tensor *w2, bool depthwise, double *s) {
    int64_t ch = xv->nch;
    double amax = 0, top = 0;
    for (int64_t c = 0; c < ch; c++)
        amax = fmax(amax, fmax(fabs(xv->cmin[c]), fabs(xv->cmax[c])));
    int64_t m = w2->type.dims[0], per = w2->type.dims[2] * w2->type.dims[3];
    for (int64_t c = 0; c < ch; c++) {
        double a = fmax(fabs(xv->cmin[c]), fabs(xv->cmax[c])), w = 0;
        if (!depthwise)
            for (int64_t o = 0; o < m; o++)
                for (int64_t k = 0; k < per; k++)
                    w = fmax(w, fabs(tensor_get_f64(w2, (o * ch + c) * per + k)));
        if (a <= 0 || (!depthwise && w <= 0))
            s[c] = 0; /* decided below: 1 relative to the widest */
        else
            s[c] = depthwise ? 1 / a : sqrt(w / a);
        top = fmax(top, s[c] * a);
    }
    double lim = exp2(EQ_MAX_LOG2);
    for (int64_t c = 0; c < ch; c++) {
        double v = s[c] > 0 && top > 0 ? s[c] * amax / top : 1;
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

/* Equalises P -> [relu ->] C2 when it is such a pair. */
static bool equalise(Function *f, PassContext *ctx, const QuantConfig *cfg, Node *p,
                     QEqRanges *out) {
    int64_t ch;
    if (!producer_params(p, &ch) || ch < 2)
        return false;
    Node *relu = graph_only_user(f, p), *c2 = relu;
    if (relu && relu->kind == NK_RELU)
        c2 = graph_only_user(f, relu);
    else
        relu = NULL;
    const QProfValue *pv = channels_of(cfg, p, ch), *rv = relu ? channels_of(cfg, relu, ch) : NULL;
    const QProfValue *xv = relu ? rv : pv;
    bool depthwise;
    if (!pv || !xv || !consumer_ok(c2, relu ? &relu->res[0] : &p->res[0], ch, &depthwise))
        return false;
    const Tensor *w2 = qb_weight_of(c2->ops[1]);
    double *s = malloc((size_t)ch * sizeof *s);
    choose_factors(xv, w2, depthwise, s);
    /* P's rows (a conv's weights [M, ...] and bias [M]; a batch norm's
     * scale and shift [C]) times s_c; C2's reading of channel c over s_c:
     * a dense conv's weights [M2, C, kh, kw] by axis 1, a depthwise conv's
     * [C * mult, 1, kh, kw] by row, mult rows per channel. */
    int nparams = p->kind == NK_CONV ? p->nops - 1 : 2;
    for (int i = 1; i <= nparams; i++) {
        const Tensor *t = qb_weight_of(p->ops[i]);
        int64_t inner = tensor_numel(t) / ch;
        Value *nv = scaled(f, p->ops[i], t, s, ch, inner ? inner : 1, false);
        if (nv)
            p->ops[i] = nv;
    }
    int64_t kk = w2->type.dims[2] * w2->type.dims[3];
    int64_t inner2 = depthwise ? kk * (w2->type.dims[0] / ch) : kk;
    Value *nw2 = scaled(f, c2->ops[1], w2, s, ch, inner2, true);
    if (nw2)
        c2->ops[1] = nw2;
    add_range(f, out, p, pv, s);
    if (relu)
        add_range(f, out, relu, rv, s);
    free(s);
    pass_stat(ctx, depthwise ? "equalised-depthwise" : "equalised-dense", 1);
    return true;
}

void qeq_apply(Function *f, PassContext *ctx, const QuantConfig *cfg, QEqRanges *out) {
    *out = (QEqRanges){0};
    if (cfg->no_equalize || cfg->per_tensor_weights || cfg->calibration != QC_MINMAX)
        return;
    for (Node *n = f->first; n; n = n->next)
        equalise(f, ctx, cfg, n, out);
}
