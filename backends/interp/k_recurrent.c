/* Recurrent layer kernels: rnn, gru and lstm with ONNX's equations.
 *
 * Every float kind takes one path: the weights, biases and peepholes are
 * read into double arrays once, and each batch entry runs its own sequence
 * (of its own length) as matrix-vector products in double. Steps past a
 * sequence's end leave zeros in y; y_h and y_c hold the state after the
 * last step taken, which for the reverse direction is time step 0. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/interp/kernels.h"

static double act_apply(const RnnAct *a, double clip, double x) {
    if (clip > 0)
        x = x < -clip ? -clip : x > clip ? clip : x;
    double al = a->alpha, be = a->beta;
    switch (a->kind) {
    case RNN_ACT_RELU: return x > 0 ? x : 0;
    case RNN_ACT_TANH: return tanh(x);
    case RNN_ACT_SIGMOID: return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x));
    case RNN_ACT_AFFINE: return al * x + be;
    case RNN_ACT_LEAKY_RELU: return x < 0 ? al * x : x;
    case RNN_ACT_THRESHOLDED_RELU: return x > al ? x : 0;
    case RNN_ACT_SCALED_TANH: return al * tanh(be * x);
    case RNN_ACT_HARD_SIGMOID: return fmax(0, fmin(1, al * x + be));
    case RNN_ACT_ELU: return x < 0 ? al * (exp(x) - 1) : x;
    case RNN_ACT_SOFTSIGN: return x / (1 + fabs(x));
    case RNN_ACT_SOFTPLUS: return x > 30 ? x : log1p(exp(x));
    case RNN_ACT_COUNT: break;
    }
    return x;
}

/* A whole operand as doubles (NULL when out of memory). */
static double *load_all(const Tensor *t) {
    int64_t n = tensor_numel(t);
    double *v = malloc((size_t)(n + 1) * sizeof(double));
    for (int64_t i = 0; v && i < n; i++)
        v[i] = tensor_get_f64(t, i);
    return v;
}

/* out[j] = sum_k m[j][k] * v[k] for rows j of a row-major matrix. */
static void matvec(double *out, const double *m, int64_t rows, int64_t cols, const double *v) {
    for (int64_t j = 0; j < rows; j++) {
        double acc = 0;
        const double *row = m + j * cols;
        for (int64_t k = 0; k < cols; k++)
            acc += row[k] * v[k];
        out[j] = acc;
    }
}

typedef struct RnnRun {
    const KernelArgs *a;
    RnnGeom g;
    double clip;
    bool linear_before_reset, input_forget;
    double *w, *r, *b, *p; /* all directions */
    double *x, *h, *c, *xw, *hr, *tmp; /* one step's vectors */
} RnnRun;

/* Offsets in x / y / the state operands under either layout. */
static int64_t x_at(const RnnRun *s, int64_t t, int64_t b) {
    const RnnGeom *g = &s->g;
    return (g->batch_first ? b * g->seq + t : t * g->batch + b) * g->input;
}

static int64_t y_at(const RnnRun *s, int64_t t, int d, int64_t b) {
    const RnnGeom *g = &s->g;
    int64_t i = g->batch_first ? (b * g->seq + t) * g->dirs + d : (t * g->dirs + d) * g->batch + b;
    return i * g->hidden;
}

static int64_t state_at(const RnnRun *s, int d, int64_t b) {
    const RnnGeom *g = &s->g;
    return (g->batch_first ? b * g->dirs + d : d * g->batch + b) * g->hidden;
}

/* One time step of direction d: s->x is the input, s->h (and s->c) the state,
 * updated in place. xw and hr receive x * W' and h * R' for every gate. */
static void rnn_step(RnnRun *s, int d) {
    const RnnGeom *g = &s->g;
    int64_t H = g->hidden, GH = g->gates * H;
    const double *wb = s->b + d * 2 * GH, *rb = wb + GH;
    const RnnAct *act = s->g.act[d];
    matvec(s->xw, s->w + d * GH * g->input, GH, g->input, s->x);
    matvec(s->hr, s->r + d * GH * H, GH, H, s->h);
    for (int64_t j = 0; j < GH; j++)
        s->xw[j] += wb[j];
    if (s->a->n->kind == NK_RNN) {
        for (int64_t j = 0; j < H; j++)
            s->h[j] = act_apply(&act[0], s->clip, s->xw[j] + s->hr[j] + rb[j]);
        return;
    }
    if (s->a->n->kind == NK_GRU) {
        /* gates z, r, h */
        double *z = s->tmp, *rr = s->tmp + H;
        for (int64_t j = 0; j < H; j++) {
            z[j] = act_apply(&act[0], s->clip, s->xw[j] + s->hr[j] + rb[j]);
            rr[j] = act_apply(&act[0], s->clip, s->xw[H + j] + s->hr[H + j] + rb[H + j]);
        }
        const double *rh = s->r + d * GH * H + 2 * H * H;
        double *hh = s->hr + 2 * H; /* reused: R_h * (r . h) when reset comes first */
        if (!s->linear_before_reset) {
            double *rhp = s->tmp + 2 * H;
            for (int64_t j = 0; j < H; j++)
                rhp[j] = rr[j] * s->h[j];
            matvec(hh, rh, H, H, rhp);
        }
        for (int64_t j = 0; j < H; j++) {
            double pre = s->linear_before_reset
                             ? s->xw[2 * H + j] + rr[j] * (hh[j] + rb[2 * H + j])
                             : s->xw[2 * H + j] + hh[j] + rb[2 * H + j];
            double cand = act_apply(&act[1], s->clip, pre);
            s->h[j] = (1 - z[j]) * cand + z[j] * s->h[j];
        }
        return;
    }
    /* lstm: gates i, o, f, c; peepholes i, o, f */
    const double *pp = s->p + d * 3 * H;
    for (int64_t j = 0; j < H; j++) {
        double *pre = s->tmp;
        for (int k = 0; k < 4; k++)
            pre[k] = s->xw[k * H + j] + s->hr[k * H + j] + rb[k * H + j];
        double c = s->c[j];
        double i = act_apply(&act[0], s->clip, pre[0] + pp[j] * c);
        double f = s->input_forget ? 1 - i
                                   : act_apply(&act[0], s->clip, pre[2] + pp[2 * H + j] * c);
        double cand = act_apply(&act[1], s->clip, pre[3]);
        c = f * c + i * cand;
        double o = act_apply(&act[0], s->clip, pre[1] + pp[H + j] * c);
        s->c[j] = c;
        s->h[j] = o * act_apply(&act[2], s->clip, c);
    }
}

/* Direction d of batch entry b, over its sequence length. */
static bool rnn_sequence(RnnRun *s, int d, int64_t b) {
    const KernelArgs *a = s->a;
    const RnnGeom *g = &s->g;
    bool lstm = a->n->kind == NK_LSTM;
    int64_t H = g->hidden, len = tensor_get_i64(a->in[4], b);
    if (len < 0 || len > g->seq)
        return kernel_fail(a, "sequence length %lld of batch entry %lld outside [0, %lld]",
                           (long long)len, (long long)b, (long long)g->seq);
    for (int64_t j = 0; j < H; j++) {
        s->h[j] = tensor_get_f64(a->in[5], state_at(s, d, b) + j);
        s->c[j] = lstm ? tensor_get_f64(a->in[6], state_at(s, d, b) + j) : 0;
    }
    bool backward = g->reverse || d == 1;
    for (int64_t step = 0; step < g->seq; step++) {
        int64_t t = backward ? len - 1 - step : step;
        if (step >= len) /* past the end: y stays zero */
            t = step;
        else {
            for (int64_t k = 0; k < g->input; k++)
                s->x[k] = tensor_get_f64(a->in[0], x_at(s, t, b) + k);
            rnn_step(s, d);
        }
        for (int64_t j = 0; j < H; j++)
            tensor_set_f64(a->out[0], y_at(s, t, d, b) + j, step < len ? s->h[j] : 0);
    }
    for (int i = 1; i < a->n->nres; i++)
        for (int64_t j = 0; j < H; j++)
            tensor_set_f64(a->out[i], state_at(s, d, b) + j, i == 1 ? s->h[j] : s->c[j]);
    return true;
}

static bool recurrent(const KernelArgs *a) {
    RnnRun s = {.a = a};
    char err[256];
    if (!rnn_geom(a->n, &s.g, err, sizeof err))
        return kernel_fail(a, "%s", err);
    s.clip = node_attr_float(a->n, AK_clip, 0);
    s.linear_before_reset = node_attr_int(a->n, AK_linear_before_reset, 0) != 0;
    s.input_forget = node_attr_int(a->n, AK_input_forget, 0) != 0;
    int64_t H = s.g.hidden, GH = s.g.gates * H;
    s.w = load_all(a->in[1]);
    s.r = load_all(a->in[2]);
    s.b = load_all(a->in[3]);
    s.p = a->n->kind == NK_LSTM ? load_all(a->in[7]) : NULL;
    /* x, h, c, tmp (GRU: z, r, r . h; LSTM: four pre-activations), xw, hr */
    double *work = malloc((size_t)(s.g.input + 5 * H + 4 + 2 * GH) * sizeof(double));
    bool have = s.w && s.r && s.b && work && (s.p || a->n->kind != NK_LSTM);
    bool ok = have;
    if (have) {
        s.x = work;
        s.h = s.x + s.g.input;
        s.c = s.h + H;
        s.tmp = s.c + H;
        s.xw = s.tmp + 3 * H + 4;
        s.hr = s.xw + GH;
    }
    for (int d = 0; ok && d < s.g.dirs; d++)
        for (int64_t b = 0; ok && b < s.g.batch; b++)
            ok = rnn_sequence(&s, d, b);
    free(s.w);
    free(s.r);
    free(s.b);
    free(s.p);
    free(work);
    return have ? ok : kernel_fail(a, "out of memory");
}

bool k_rnn(const KernelArgs *a) {
    return recurrent(a);
}

bool k_gru(const KernelArgs *a) {
    return recurrent(a);
}

bool k_lstm(const KernelArgs *a) {
    return recurrent(a);
}
