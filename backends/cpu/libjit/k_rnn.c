/* Recurrent layers, f32: rnn, gru and lstm with ONNX's equations, as
 * libjit_{rnn,gru,lstm}_f32.
 *
 * The input projection of every time step is one matrix product before
 * the recurrence, X [seq*batch, input] . W' (+ the biases, folded per
 * column), and each step is one product of the state of the whole batch,
 * H [batch, hidden] . R' -- both on gemm.c's engine, with W' and R'
 * transposed once per call so that the gate columns are its vector
 * operand. The gates are then vector loops over the hidden units of each
 * batch entry. Batch entries whose sequence has ended keep their state
 * (their rows of the product are computed and ignored); y is zero past a
 * sequence's end, and y_h / y_c are the state after the last step taken
 * (time step 0 for the reverse direction), as in the interpreter.
 *
 * One unit of work: both directions of a bidirectional layer run one after
 * the other (a failed scratch request fails the whole node). */
#include <math.h>

#include "backends/cpu/libjit/gemm.h"
#include "backends/cpu/libjit/kernels.h"
#include "core/infer.h"

typedef struct LjRnnAct {
    RnnActKind kind;
    float alpha, beta;
} LjRnnAct;

typedef struct Rnn {
    NodeKind kind;
    int nres, dirs, gates, nact;
    bool reverse, batch_first, lbr, input_forget;
    int64_t seq, batch, input, hidden, gh;
    float clip;
    LjRnnAct act[2][3];
} Rnn;

/* Operand numbers of the inputs, after the results. */
enum { IN_X, IN_W, IN_R, IN_B, IN_LENS, IN_H0, IN_C0, IN_P };

LJ_INLINE char lower(char c) {
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* The activation named by s[0 .. len), case-insensitive (RNN_ACT_TABLE);
 * the importer's checks (rnn_geom) let no other name through. */
LJ_INLINE LjRnnAct act_named(const char *s, int64_t len) {
    static const struct {
        const char *name;
        float alpha, beta;
    } table[] = {
#define RNN_ACT_ROW(E, nm, a, b, ad, bd) {nm, ad, bd},
        RNN_ACT_TABLE(RNN_ACT_ROW)
#undef RNN_ACT_ROW
    };
    for (int k = 0; k < RNN_ACT_COUNT; k++) {
        const char *n = table[k].name;
        int64_t i = 0;
        while (i < len && n[i] && lower(n[i]) == lower(s[i]))
            i++;
        if (i == len && !n[i])
            return (LjRnnAct){(RnnActKind)k, table[k].alpha, table[k].beta};
    }
    return (LjRnnAct){RNN_ACT_TANH, 0, 0};
}

/* The activations attribute as rnn_geom reads it: nact names per direction
 * (absent: ONNX's defaults), alpha and beta lists aligned to them. */
LJ_INLINE void parse_acts(const int64_t *d, Rnn *r) {
    static const char *const dflt[] = {"Tanh", "Sigmoid,Tanh", "Sigmoid,Tanh,Tanh"};
    int n, na, nb;
    const int64_t *words = lj_attr(d, AK_activations, &n);
    const int64_t *alpha = lj_attr(d, AK_activation_alpha, &na);
    const int64_t *beta = lj_attr(d, AK_activation_beta, &nb);
    const char *list = words ? (const char *)words : dflt[r->nact - 1], *p = list;
    for (int i = 0; i < r->dirs * r->nact; i++) {
        if (!words && i % r->nact == 0)
            p = list;
        else if (i > 0 && *p == ',')
            p++;
        int64_t len = 0;
        while (p[len] && p[len] != ',')
            len++;
        LjRnnAct *a = &r->act[i / r->nact][i % r->nact];
        *a = act_named(p, len);
        if (alpha && i < na)
            a->alpha = (float)lj_bits_f64(alpha[i]);
        if (beta && i < nb)
            a->beta = (float)lj_bits_f64(beta[i]);
        p += len;
    }
}

LJ_INLINE Rnn rnn_plan(const int64_t *d) {
    Rnn r = {.kind = (NodeKind)d[DESC_KIND], .nres = lj_nres(d)};
    int dir = (int)lj_attr_int(d, AK_direction, DIR_FORWARD);
    r.dirs = dir == DIR_BIDIRECTIONAL ? 2 : 1;
    r.reverse = dir == DIR_REVERSE;
    r.gates = r.kind == NK_RNN ? 1 : r.kind == NK_GRU ? 3 : 4;
    r.nact = r.kind == NK_RNN ? 1 : r.kind == NK_GRU ? 2 : 3;
    r.batch_first = lj_attr_int(d, AK_layout, 0) != 0;
    r.lbr = lj_attr_int(d, AK_linear_before_reset, 0) != 0;
    r.input_forget = lj_attr_int(d, AK_input_forget, 0) != 0;
    r.clip = (float)lj_attr_float(d, AK_clip, 0);
    int x = r.nres + IN_X;
    r.seq = lj_dim(d, x, r.batch_first ? 1 : 0);
    r.batch = lj_dim(d, x, r.batch_first ? 0 : 1);
    r.input = lj_dim(d, x, 2);
    r.hidden = lj_attr_int(d, AK_hidden_size, 1);
    r.gh = r.gates * r.hidden;
    parse_acts(d, &r);
    return r;
}

/* ---- offsets under either layout -------------------------------------------------- */

LJ_INLINE int64_t x_row(const Rnn *r, int64_t t, int64_t b) {
    return r->batch_first ? b * r->seq + t : t * r->batch + b;
}

LJ_INLINE int64_t y_at(const Rnn *r, int64_t t, int d, int64_t b) {
    int64_t i = r->batch_first ? (b * r->seq + t) * r->dirs + d : (t * r->dirs + d) * r->batch + b;
    return i * r->hidden;
}

LJ_INLINE int64_t state_at(const Rnn *r, int d, int64_t b) {
    return (r->batch_first ? b * r->dirs + d : d * r->batch + b) * r->hidden;
}

/* ---- activations, a vector at a time ---------------------------------------------- */

LJ_INLINE vf32 v_softplus(vf32 x) {
    vf32 y;
    for (int l = 0; l < LJ_VL; l++) /* rare: libm per lane */
        y[l] = x[l] > 30 ? x[l] : log1pf(expf(x[l]));
    return y;
}

/* act(clip(x)); the interpreter's choices at NaN and the edges. */
LJ_INLINE vf32 v_act(vf32 x, LjRnnAct a, float clip) {
    if (clip > 0)
        x = lj_select(x < -clip, lj_splat(-clip), lj_select(x > clip, lj_splat(clip), x));
    vf32 zero = lj_splat(0), al = lj_splat(a.alpha), be = lj_splat(a.beta);
    switch (a.kind) {
    case RNN_ACT_RELU: return lj_select(x > 0, x, zero);
    case RNN_ACT_TANH: return lj_tanh(x);
    case RNN_ACT_SIGMOID: return lj_sigmoid(x);
    case RNN_ACT_AFFINE: return al * x + be;
    case RNN_ACT_LEAKY_RELU: return lj_select(x < 0, al * x, x);
    case RNN_ACT_THRESHOLDED_RELU: return lj_select(x > al, x, zero);
    case RNN_ACT_SCALED_TANH: return al * lj_tanh(be * x);
    case RNN_ACT_HARD_SIGMOID: return lj_max(zero, lj_min(lj_splat(1), al * x + be));
    case RNN_ACT_ELU: return lj_select(x < 0, al * (lj_exp(x) - 1.0f), x);
    case RNN_ACT_SOFTSIGN: return x / (1.0f + __builtin_elementwise_abs(x));
    case RNN_ACT_SOFTPLUS: return v_softplus(x);
    case RNN_ACT_COUNT: break;
    }
    return x;
}

/* ---- scratch -------------------------------------------------------------------------- */

/* Floats of one direction's buffers: the sequence lengths (int64, first,
 * for their alignment), W' [input][gh], R' [hidden][gh], the
 * folded bias [gh], the input projection [seq*batch][gh], one step's
 * state product [batch][gh], and h, c, z, r.h [batch][hidden] each. */
LJ_INLINE int64_t rnn_floats(const Rnn *r) {
    return 2 * r->batch + r->input * r->gh + r->hidden * r->gh + r->gh +
           r->seq * r->batch * r->gh + r->batch * r->gh + 4 * r->batch * r->hidden;
}

LIBJIT_WORK libjit_rnn_f32_work(const int64_t *d) {
    return 1;
}
LIBJIT_WORK libjit_gru_f32_work(const int64_t *d) {
    return 1;
}
LIBJIT_WORK libjit_lstm_f32_work(const int64_t *d) {
    return 1;
}

LJ_INLINE int64_t rnn_scratch(const int64_t *d, int slot) {
    Rnn r = rnn_plan(d);
    if (slot == LJ_SCRATCH_PLANES)
        return rnn_floats(&r) * (int64_t)sizeof(float);
    if (slot != LJ_SCRATCH_PACK)
        return 0;
    size_t a = lj_sgemm_scratch(r.seq * r.batch, r.gh, r.input, false);
    size_t b = lj_sgemm_scratch(r.batch, r.gh, r.hidden, false);
    return (int64_t)(a > b ? a : b);
}

LIBJIT_SCRATCH libjit_rnn_f32_scratch(const int64_t *d, int slot) {
    return rnn_scratch(d, slot);
}
LIBJIT_SCRATCH libjit_gru_f32_scratch(const int64_t *d, int slot) {
    return rnn_scratch(d, slot);
}
LIBJIT_SCRATCH libjit_lstm_f32_scratch(const int64_t *d, int slot) {
    return rnn_scratch(d, slot);
}

/* ---- one direction --------------------------------------------------------------------- */

typedef struct Dir {
    const Rnn *r;
    int d;
    const float *p; /* lstm's peepholes i, o, f of this direction */
    const float *rbh; /* gru: R's bias of the h gate, kept out of the fold */
    const float *w, *rw; /* W and R of this direction, as given ([gh][input], [gh][hidden]) */
    float *wt, *rt, *bias, *xw, *hr, *h, *c, *z, *rh;
    int64_t *len;
} Dir;

LJ_INLINE int64_t seq_len(const int64_t *d, void *const *ops, const Rnn *r, int64_t b) {
    const void *lens = ops[r->nres + IN_LENS];
    int64_t n = lj_elem(d, r->nres + IN_LENS) == ELEM_I64 ? ((const int64_t *)lens)[b]
                                                            : ((const int32_t *)lens)[b];
    /* The interpreter refuses a length outside [0, seq]; here it is held
     * inside, so that no access leaves the operands. */
    return n < 0 ? 0 : n > r->seq ? r->seq : n;
}

/* Up to this many rows in all (seq x batch: the input projection's, and
 * all steps' state products together), the products read W and R in
 * place, one dot product per output along their contiguous rows
 * (rows_dot), rather than transposing them for the gemm: silero's one-step
 * LSTM spent 95% of its time writing W' and R' (2 x 64K floats, a column
 * at a time) for one row each. Over more rows the transpose pays for
 * itself (a 49-step GRU ran 2x slower on dot products). */
enum { DOT_ROWS = 2 };

LJ_INLINE bool few_rows(const Rnn *r) {
    return r->seq * r->batch <= DOT_ROWS;
}

/* The state product of a batch of at most DOT_ROWS entries reads R in
 * place as well, whatever the number of steps (state_dots): it is a
 * matrix-vector product per entry, which streams R once per step either
 * way, and R' would cost a transpose of gh x hidden floats per call (a
 * 49-step GRU of 154 units spent half its time there). It needs whole
 * vectors of the hidden units (hidden >= LJ_VL), for its last, overlapping
 * one. */
LJ_INLINE bool dot_state(const Rnn *r) {
    return few_rows(r) || (r->batch <= DOT_ROWS && r->hidden >= LJ_VL);
}

LJ_INLINE float lanes_sum(vf32 v) {
    float sum = 0;
    for (int l = 0; l < LJ_VL; l++)
        sum += v[l];
    return sum;
}

/* a . w over k, the last part vector zero-filled. */
LJ_INLINE float dot1(const float *a, const float *w, int64_t k) {
    vf32 acc = lj_splat(0);
    int64_t t = 0;
    for (; t + LJ_VL <= k; t += LJ_VL)
        acc += lj_load(a + t) * lj_load(w + t);
    if (t < k)
        acc += lj_load_part(a + t, k - t) * lj_load_part(w + t, k - t);
    return lanes_sum(acc);
}

/* c[i][j] = a[i] . w[j] (+ bias[j]) for rows i < m and outputs j in
 * [j0, j1), w row-major with rows of k; four outputs at a time, so that
 * each vector of a[i] feeds four independent accumulators. */
LJ_VECTOR_FN static void rows_dot(const float *a, int64_t lda, int64_t m, const float *w, int64_t k,
                                  int64_t j0, int64_t j1, const float *bias, float *c,
                                  int64_t ldc) {
    for (int64_t i = 0; i < m; i++) {
        const float *ai = a + i * lda;
        float *ci = c + i * ldc;
        int64_t j = j0;
        for (; j + 4 <= j1; j += 4) {
            const float *w0 = w + j * k, *w1 = w0 + k, *w2 = w1 + k, *w3 = w2 + k;
            vf32 a0 = lj_splat(0), a1 = a0, a2 = a0, a3 = a0;
            int64_t t = 0;
            for (; t + LJ_VL <= k; t += LJ_VL) {
                vf32 av = lj_load(ai + t);
                a0 += av * lj_load(w0 + t);
                a1 += av * lj_load(w1 + t);
                a2 += av * lj_load(w2 + t);
                a3 += av * lj_load(w3 + t);
            }
            if (t < k) {
                vf32 av = lj_load_part(ai + t, k - t);
                a0 += av * lj_load_part(w0 + t, k - t);
                a1 += av * lj_load_part(w1 + t, k - t);
                a2 += av * lj_load_part(w2 + t, k - t);
                a3 += av * lj_load_part(w3 + t, k - t);
            }
            ci[j] = lanes_sum(a0) + (bias ? bias[j] : 0.0f);
            ci[j + 1] = lanes_sum(a1) + (bias ? bias[j + 1] : 0.0f);
            ci[j + 2] = lanes_sum(a2) + (bias ? bias[j + 2] : 0.0f);
            ci[j + 3] = lanes_sum(a3) + (bias ? bias[j + 3] : 0.0f);
        }
        for (; j < j1; j++)
            ci[j] = dot1(ai, w + j * k, k) + (bias ? bias[j] : 0.0f);
    }
}

/* W' and R' of direction d (each only when a product will read it
 * transposed: DOT_ROWS), the bias folded per gate column (for gru's h
 * gate only W's: R's is added inside the reset when linear_before_reset,
 * after the product otherwise), and the initial state. */
LJ_VECTOR_FN static void dir_setup(Dir *s, const int64_t *d, void *const *ops) {
    const Rnn *r = s->r;
    int64_t gh = r->gh, in = r->input, hid = r->hidden;
    const float *w = (const float *)ops[r->nres + IN_W] + s->d * gh * in;
    const float *rw = (const float *)ops[r->nres + IN_R] + s->d * gh * hid;
    const float *b = (const float *)ops[r->nres + IN_B] + s->d * 2 * gh;
    s->w = w;
    s->rw = rw;
    for (int64_t g = 0; g < gh && !few_rows(r); g++)
        for (int64_t k = 0; k < in; k++)
            s->wt[k * gh + g] = w[g * in + k];
    for (int64_t g = 0; g < gh && !dot_state(r); g++)
        for (int64_t k = 0; k < hid; k++)
            s->rt[k * gh + g] = rw[g * hid + k];
    bool split = r->kind == NK_GRU;
    for (int64_t g = 0; g < gh; g++)
        s->bias[g] = b[g] + (split && g >= 2 * hid ? 0 : b[gh + g]);
    s->rbh = b + gh + 2 * hid;
    s->p = r->kind == NK_LSTM ? (const float *)ops[r->nres + IN_P] + s->d * 3 * hid : NULL;
    const float *h0 = ops[r->nres + IN_H0];
    const float *c0 = r->kind == NK_LSTM ? ops[r->nres + IN_C0] : NULL;
    for (int64_t bt = 0; bt < r->batch; bt++)
        for (int64_t j = 0; j < hid; j++) {
            s->h[bt * hid + j] = h0[state_at(r, s->d, bt) + j];
            s->c[bt * hid + j] = c0 ? c0[state_at(r, s->d, bt) + j] : 0;
            s->rh[bt * hid + j] = 0;
        }
}

/* The sum of v's lanes, halving: log2(LJ_VL) vector adds, not LJ_VL
 * dependent scalar ones. */
#if LJ_VL == 16
typedef float lj_v8 __attribute__((vector_size(32)));
typedef float lj_v4 __attribute__((vector_size(16)));
LJ_INLINE float lanes_tree(vf32 v) {
    lj_v8 a = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
              __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
    lj_v4 b = __builtin_shufflevector(a, a, 0, 1, 2, 3) + __builtin_shufflevector(a, a, 4, 5, 6, 7);
    return (b[0] + b[2]) + (b[1] + b[3]);
}
#else
LJ_INLINE float lanes_tree(vf32 v) {
    float sum = 0;
    for (int l = 0; l < LJ_VL; l++)
        sum += v[l];
    return sum;
}
#endif

/* hr[i][j] = h[i] . R[j] for the batch's rows i and j in [j0, j1), R
 * ([gh][hidden]) read in place, four rows of R at a time. The last vector
 * of a row overlaps the one before it (hidden >= LJ_VL: dot_state), its
 * lanes already counted masked out after the product, so that nothing
 * past a row is read and a non-finite R never meets a padding zero. */
LJ_VECTOR_FN static void state_dots(const float *h, int64_t m, int64_t hid, const float *rw,
                                    int64_t j0, int64_t j1, float *c, int64_t ldc) {
    int64_t full = hid / LJ_VL * LJ_VL, t0 = hid - LJ_VL, over = full - t0;
    vi32 keep;
    for (int l = 0; l < LJ_VL; l++)
        keep[l] = l >= over ? -1 : 0;
    vf32 zero = lj_splat(0);
    for (int64_t i = 0; i < m; i++) {
        const float *hi = h + i * hid;
        float *ci = c + i * ldc;
        vf32 ht = lj_load(hi + t0);
        int64_t j = j0;
        for (; j + 4 <= j1; j += 4) {
            const float *w0 = rw + j * hid, *w1 = w0 + hid, *w2 = w1 + hid, *w3 = w2 + hid;
            vf32 a0 = zero, a1 = zero, a2 = zero, a3 = zero;
            for (int64_t t = 0; t < full; t += LJ_VL) {
                vf32 hv = lj_load(hi + t);
                a0 += hv * lj_load(w0 + t);
                a1 += hv * lj_load(w1 + t);
                a2 += hv * lj_load(w2 + t);
                a3 += hv * lj_load(w3 + t);
            }
            if (over < LJ_VL) {
                a0 += lj_select(keep, ht * lj_load(w0 + t0), zero);
                a1 += lj_select(keep, ht * lj_load(w1 + t0), zero);
                a2 += lj_select(keep, ht * lj_load(w2 + t0), zero);
                a3 += lj_select(keep, ht * lj_load(w3 + t0), zero);
            }
            ci[j] = lanes_tree(a0);
            ci[j + 1] = lanes_tree(a1);
            ci[j + 2] = lanes_tree(a2);
            ci[j + 3] = lanes_tree(a3);
        }
        for (; j < j1; j++) {
            const float *w0 = rw + j * hid;
            vf32 a0 = zero;
            for (int64_t t = 0; t < full; t += LJ_VL)
                a0 += lj_load(hi + t) * lj_load(w0 + t);
            if (over < LJ_VL)
                a0 += lj_select(keep, ht * lj_load(w0 + t0), zero);
            ci[j] = lanes_tree(a0);
        }
    }
}

/* hr[:, 0 .. n) = h . R'[:, col .. col + n) */
LJ_INLINE void state_product(const Dir *s, const float *h, int64_t col, int64_t n, LjScratch *sc) {
    const Rnn *r = s->r;
    if (!few_rows(r) && dot_state(r)) {
        state_dots(h, r->batch, r->hidden, s->rw, col, col + n, s->hr, r->gh);
        return;
    }
    if (few_rows(r)) {
        rows_dot(h, r->hidden, r->batch, s->rw, r->hidden, col, col + n, NULL, s->hr, r->gh);
        return;
    }
    LjGemm g = {.m = r->batch, .n = n, .k = r->hidden, .a = h, .lda = r->hidden,
                .b = s->rt + col, .ldb = r->gh, .c = s->hr + col, .ldc = r->gh, .sc = sc};
    lj_sgemm(&g);
}

/* The time step of batch entry b at step `step`, -1 past its end. */
LJ_INLINE int64_t time_of(const Dir *s, int64_t b, int64_t step) {
    bool backward = s->r->reverse || s->d == 1;
    if (step >= s->len[b])
        return -1;
    return backward ? s->len[b] - 1 - step : step;
}

/* One vector of hidden units [j, j + n) of entry b, n <= LJ_VL. */
#define LD(p, off) (n == LJ_VL ? lj_load((p) + (off)) : lj_load_part((p) + (off), n))
#define ST(p, off, v) (n == LJ_VL ? lj_store((p) + (off), v) : lj_store_part((p) + (off), v, n))

LJ_VECTOR_FN static void rnn_gates(const Dir *s, const float *xw, int64_t b) {
    const Rnn *r = s->r;
    int64_t hid = r->hidden;
    const float *hr = s->hr + b * r->gh;
    float *h = s->h + b * hid;
    for (int64_t j = 0; j < hid; j += LJ_VL) {
        int64_t n = hid - j < LJ_VL ? hid - j : LJ_VL;
        ST(h, j, v_act(LD(xw, j) + LD(hr, j), r->act[s->d][0], r->clip));
    }
}

LJ_VECTOR_FN static void lstm_gates(const Dir *s, const float *xw, int64_t b) {
    const Rnn *r = s->r;
    int64_t hid = r->hidden;
    const float *hr = s->hr + b * r->gh, *p = s->p;
    float *h = s->h + b * hid, *c = s->c + b * hid;
    const LjRnnAct *act = r->act[s->d];
    for (int64_t j = 0; j < hid; j += LJ_VL) {
        int64_t n = hid - j < LJ_VL ? hid - j : LJ_VL;
        vf32 cv = LD(c, j);
        vf32 i = v_act(LD(xw, j) + LD(hr, j) + LD(p, j) * cv, act[0], r->clip);
        vf32 f = r->input_forget ? 1.0f - i
                                 : v_act(LD(xw, 2 * hid + j) + LD(hr, 2 * hid + j) +
                                             LD(p, 2 * hid + j) * cv,
                                         act[0], r->clip);
        vf32 cand = v_act(LD(xw, 3 * hid + j) + LD(hr, 3 * hid + j), act[1], r->clip);
        cv = f * cv + i * cand;
        vf32 o = v_act(LD(xw, hid + j) + LD(hr, hid + j) + LD(p, hid + j) * cv, act[0], r->clip);
        ST(c, j, cv);
        ST(h, j, o * v_act(cv, act[2], r->clip));
    }
}

/* gru's update and reset gates: z kept, r . h for the h gate's product. */
LJ_VECTOR_FN static void gru_reset(const Dir *s, const float *xw, int64_t b) {
    const Rnn *r = s->r;
    int64_t hid = r->hidden;
    const float *hr = s->hr + b * r->gh, *h = s->h + b * hid;
    float *z = s->z + b * hid, *rh = s->rh + b * hid;
    for (int64_t j = 0; j < hid; j += LJ_VL) {
        int64_t n = hid - j < LJ_VL ? hid - j : LJ_VL;
        ST(z, j, v_act(LD(xw, j) + LD(hr, j), r->act[s->d][0], r->clip));
        vf32 rr = v_act(LD(xw, hid + j) + LD(hr, hid + j), r->act[s->d][0], r->clip);
        ST(rh, j, r->lbr ? rr : rr * LD(h, j)); /* with lbr: r itself */
    }
}

LJ_VECTOR_FN static void gru_update(const Dir *s, const float *xw, int64_t b) {
    const Rnn *r = s->r;
    int64_t hid = r->hidden;
    const float *hr = s->hr + b * r->gh + 2 * hid, *z = s->z + b * hid, *rh = s->rh + b * hid;
    float *h = s->h + b * hid;
    for (int64_t j = 0; j < hid; j += LJ_VL) {
        int64_t n = hid - j < LJ_VL ? hid - j : LJ_VL;
        vf32 pre = r->lbr ? LD(xw, 2 * hid + j) + LD(rh, j) * (LD(hr, j) + LD(s->rbh, j))
                          : LD(xw, 2 * hid + j) + LD(hr, j) + LD(s->rbh, j);
        vf32 cand = v_act(pre, r->act[s->d][1], r->clip), zv = LD(z, j);
        ST(h, j, (1.0f - zv) * cand + zv * LD(h, j));
    }
}

/* With linear_before_reset nothing waits for r . h between the gates: the
 * reset and update of gru_reset and gru_update in one pass, each value
 * computed as there. */
LJ_VECTOR_FN static void gru_fused(const Dir *s, const float *xw, int64_t b) {
    const Rnn *r = s->r;
    int64_t hid = r->hidden;
    const float *hr = s->hr + b * r->gh;
    float *h = s->h + b * hid;
    LjRnnAct f = r->act[s->d][0], g = r->act[s->d][1];
    for (int64_t j = 0; j < hid; j += LJ_VL) {
        int64_t n = hid - j < LJ_VL ? hid - j : LJ_VL;
        vf32 zv = v_act(LD(xw, j) + LD(hr, j), f, r->clip);
        vf32 rr = v_act(LD(xw, hid + j) + LD(hr, hid + j), f, r->clip);
        vf32 pre = LD(xw, 2 * hid + j) + rr * (LD(hr, 2 * hid + j) + LD(s->rbh, j));
        vf32 cand = v_act(pre, g, r->clip);
        ST(h, j, (1.0f - zv) * cand + zv * LD(h, j));
    }
}

#undef LD
#undef ST

LJ_INLINE void run_direction(Dir *s, const int64_t *d, void *const *ops, LjScratch *sc) {
    const Rnn *r = s->r;
    int64_t gh = r->gh, hid = r->hidden;
    dir_setup(s, d, ops);
    /* The input projection of every step, biases folded in. */
    LjGemm g = {.m = r->seq * r->batch, .n = gh, .k = r->input,
                .a = ops[r->nres + IN_X], .lda = r->input, .b = s->wt, .ldb = gh,
                .c = s->xw, .ldc = gh, .bias = s->bias, .sc = sc};
    if (few_rows(r))
        rows_dot(g.a, g.lda, g.m, s->w, r->input, 0, gh, s->bias, s->xw, gh);
    else
        lj_sgemm(&g);
    float *y = ops[0];
    bool gru_split = r->kind == NK_GRU && !r->lbr;
    for (int64_t step = 0; step < r->seq; step++) {
        state_product(s, s->h, 0, gru_split ? 2 * hid : gh, sc);
        for (int64_t b = 0; b < r->batch; b++) {
            int64_t t = time_of(s, b, step);
            if (t < 0)
                continue;
            const float *xw = s->xw + x_row(r, t, b) * gh;
            if (r->kind == NK_RNN)
                rnn_gates(s, xw, b);
            else if (r->kind == NK_LSTM)
                lstm_gates(s, xw, b);
            else if (r->lbr)
                gru_fused(s, xw, b);
            else
                gru_reset(s, xw, b);
        }
        if (gru_split)
            state_product(s, s->rh, 2 * hid, hid, sc);
        for (int64_t b = 0; b < r->batch; b++) {
            int64_t t = time_of(s, b, step);
            if (t >= 0 && gru_split)
                gru_update(s, s->xw + x_row(r, t, b) * gh, b);
            float *yt = y + y_at(r, t < 0 ? step : t, s->d, b);
            for (int64_t j = 0; j < hid; j++)
                yt[j] = t < 0 ? 0 : s->h[b * hid + j];
        }
    }
    for (int i = 1; i < r->nres; i++)
        for (int64_t b = 0; b < r->batch; b++)
            for (int64_t j = 0; j < hid; j++)
                ((float *)ops[i])[state_at(r, s->d, b) + j] = (i == 1 ? s->h : s->c)[b * hid + j];
}

LJ_INLINE void recurrent(const int64_t *d, void *const *ops, LjScratch *sc) {
    Rnn r = rnn_plan(d);
    int64_t per = rnn_floats(&r);
    float *buf = lj_scratch_get(sc, LJ_SCRATCH_PLANES, (size_t)per * sizeof(float));
    if (!buf) {
        lj_fail_run(sc, LJ_NO_SCRATCH);
        return;
    }
    for (int dir = 0; dir < r.dirs; dir++) {
        Dir s = {.r = &r, .d = dir, .len = (int64_t *)(void *)buf, .wt = buf + 2 * r.batch};
        s.rt = s.wt + r.input * r.gh;
        s.bias = s.rt + r.hidden * r.gh;
        s.xw = s.bias + r.gh;
        s.hr = s.xw + r.seq * r.batch * r.gh;
        s.h = s.hr + r.batch * r.gh;
        s.c = s.h + r.batch * r.hidden;
        s.z = s.c + r.batch * r.hidden;
        s.rh = s.z + r.batch * r.hidden;
        for (int64_t b = 0; b < r.batch; b++)
            s.len[b] = seq_len(d, ops, &r, b);
        run_direction(&s, d, ops, sc);
    }
    lj_scratch_put(sc, buf);
}

LIBJIT_KERNEL libjit_rnn_f32(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                             LjScratch *sc) {
    recurrent(d, ops, sc);
}

LIBJIT_KERNEL libjit_gru_f32(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                             LjScratch *sc) {
    recurrent(d, ops, sc);
}

LIBJIT_KERNEL libjit_lstm_f32(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                              LjScratch *sc) {
    recurrent(d, ops, sc);
}
