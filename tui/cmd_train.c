/* glowc train: SGD or Adam on a model's weights through the compiled training
 * function (the differentiate pass, then the usual pipeline), one line per
 * epoch, and the trained weights written into a copy of the ONNX model.
 *
 * The training function takes the batch, its labels and every weight (and
 * velocity) and returns the loss, the model's outputs and the updated
 * weights (passes/graph/differentiate.c); this loop only carries the
 * weights from one step to the next. Validation runs a second function
 * made the same way without the gradients (TrainSpec.forward_only). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/file.h"
#include "core/npy.h"
#include "core/onnx/export.h"
#include "tui/args.h"
#include "tui/cli.h"

typedef struct TrainOpts {
    const char *labels, *validate, *out;
    long long epochs, batch, seed;
    bool print_steps;
} TrainOpts;

/* The data: samples along axis 0 of x, labels along axis 0 of y. */
typedef struct Data {
    Tensor *x, *y;
    int64_t n;
} Data;

/* Where each thing sits among a training function's inputs and outputs. */
typedef struct Layout {
    int x, labels;         /* input indices */
    int nstate;            /* weights and velocities carried between steps */
    int state_in[4096];     /* their input indices ... */
    int state_out[4096];    /* ... and the outputs that update them */
    int nnoise;            /* dropouts' noise inputs, drawn afresh every step */
    int noise_in[256];
} Layout;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int train_option(OptionId id, const char *v, void *ctx, DiagList *d) {
    TrainOpts *to = ctx;
    if (id == OPT_PRINT_STEPS) {
        to->print_steps = true;
        return 1;
    }
    long long *num = id == OPT_EPOCHS ? &to->epochs : id == OPT_BATCH ? &to->batch
                   : id == OPT_SEED   ? &to->seed : NULL;
    if (num) {
        long long lo = id == OPT_SEED ? 0 : 1;
        if (!cli_parse_int(v, lo, id == OPT_SEED ? INT64_MAX : 1 << 30, num)) {
            diag_error(d, NULL, "%s takes an integer >= %lld, not '%s'",
                       option_info(id)->spelling, lo, v);
            return -1;
        }
        return 1;
    }
    const char **s = id == OPT_LABELS ? &to->labels : id == OPT_VALIDATE ? &to->validate
                   : id == OPT_OUTPUT ? &to->out : NULL;
    if (!s)
        return 0;
    *s = v;
    return 1;
}

static Tensor *read_npy(const char *path, const char *what, Arena *a, DiagList *d) {
    size_t len;
    char *buf = file_read_all(path, &len, d);
    Tensor *t = buf ? npy_read(buf, len, path, a, d) : NULL;
    free(buf);
    if (t && t->type.rank < 1) {
        diag_error(d, NULL, "%s '%s': a scalar, not one entry per sample", what, path);
        return NULL;
    }
    return t;
}

/* Labels as the training function takes them: i64 class indices for
 * softmax-cross-entropy (each in [0, classes)), the output's float kind
 * for mse. */
static Tensor *labels_as(const Tensor *y, const char *path, const TrainSpec *spec,
                         const Type *out, Arena *a, DiagList *d) {
    bool ce = spec->loss == LOSS_SOFTMAX_CE;
    if (ce ? !elem_is_int(y->type.elem) : !elem_is_float(y->type.elem)) {
        diag_error(d, NULL, "--labels '%s' holds %s; %s", path, elem_name(y->type.elem),
                   ce ? "softmax-cross-entropy needs integer class indices"
                      : "mse needs floats shaped like the output");
        return NULL;
    }
    Type t = y->type;
    t.elem = ce ? ELEM_I64 : out->elem;
    Tensor *r = tensor_new(a, &t);
    int64_t classes = out->rank > 1 ? out->dims[1] : 0;
    for (int64_t i = 0; i < tensor_numel(y); i++) {
        if (!ce) {
            tensor_set_f64(r, i, tensor_get_f64(y, i));
            continue;
        }
        int64_t c = tensor_get_i64(y, i);
        if (c < 0 || c >= classes) {
            diag_error(d, NULL, "--labels '%s': label %lld (entry %lld) is not a class of the "
                       "output (0 to %lld)", path, (long long)c, (long long)i,
                       (long long)classes - 1);
            return NULL;
        }
        tensor_set_i64(r, i, c);
    }
    return r;
}

/* Labels per sample must match the output per sample (the class axis left
 * out for softmax-cross-entropy). */
static bool check_data(const Data *dt, const char *xpath, const char *ypath, const Type *in,
                       const Type *out, const TrainSpec *spec, DiagList *d) {
    const Type *x = &dt->x->type, *y = &dt->y->type;
    bool ok = x->rank == in->rank && x->elem == in->elem;
    for (int i = 1; ok && i < x->rank; i++)
        ok = x->dims[i] == in->dims[i];
    if (!ok) {
        char a[TYPE_STR_MAX], b[TYPE_STR_MAX];
        diag_error(d, NULL, "'%s' holds %s: the model takes samples of %s (any count on axis 0)",
                   xpath, type_str(x, a), type_str(in, b));
        return false;
    }
    if (y->dims[0] != x->dims[0]) {
        diag_error(d, NULL, "--labels '%s' has %lld labels for %lld samples in '%s'", ypath,
                   (long long)y->dims[0], (long long)x->dims[0], xpath);
        return false;
    }
    int skip = spec->loss == LOSS_SOFTMAX_CE ? 1 : 0; /* the class axis */
    ok = y->rank == out->rank - skip;
    for (int i = 1; ok && i < y->rank; i++)
        ok = y->dims[i] == out->dims[i + skip];
    if (!ok) {
        char a[TYPE_STR_MAX], b[TYPE_STR_MAX];
        diag_error(d, NULL, "--labels '%s' holds %s, which does not fit the output %s for %s",
                   ypath, type_str(y, a), type_str(out, b),
                   skip ? "softmax-cross-entropy (one class index per sample)" : "mse");
        return false;
    }
    return true;
}

static int input_index(const Session *s, const char *name) {
    for (int i = 0; i < session_ninputs(s); i++)
        if (!strcmp(session_input_name(s, i), name))
            return i;
    return -1;
}

/* Outputs named "P.updated" carry input P to the next step. */
static bool find_layout(const Session *s, const char *xname, Layout *l, DiagList *d) {
    l->x = input_index(s, xname);
    l->labels = input_index(s, "labels");
    l->nstate = 0;
    int n = session_noutputs(s);
    for (int o = 1; o < n; o++) {
        const char *name = session_output_name(s, o);
        size_t len = strlen(name), sl = strlen(".updated");
        if (len <= sl || strcmp(name + len - sl, ".updated"))
            continue;
        char *p = strndup(name, len - sl);
        int in = input_index(s, p);
        free(p);
        if (in < 0 || l->nstate == 4096) {
            diag_error(d, NULL, "train: the training function's output '%s' updates no input",
                       name);
            return false;
        }
        l->state_in[l->nstate] = in;
        l->state_out[l->nstate++] = o;
    }
    l->nnoise = 0;
    for (int i = 0; i < session_ninputs(s); i++) {
        const char *name = session_input_name(s, i);
        size_t len = strlen(name), sl = strlen(".noise");
        if (len <= sl || strcmp(name + len - sl, ".noise"))
            continue;
        if (l->nnoise == 256) {
            diag_error(d, NULL, "train: more than 256 dropouts");
            return false;
        }
        l->noise_in[l->nnoise++] = i;
    }
    if (l->x < 0 || l->labels < 0) {
        diag_error(d, NULL, "train: the training function lacks its '%s' or 'labels' input",
                   xname);
        return false;
    }
    return true;
}

/* Rows idx[0..count) of t (along axis 0) into dst, whose axis 0 is count. */
static void gather_rows(const Tensor *t, const int64_t *idx, int64_t count, Tensor *dst) {
    size_t row = tensor_bytes(t) / (size_t)t->type.dims[0];
    for (int64_t i = 0; i < count; i++)
        memcpy((char *)dst->data + (size_t)i * row, (const char *)t->data + (size_t)idx[i] * row,
               row);
}

static Tensor *batch_of(const Tensor *t, int64_t b, Arena *a) {
    Type ty = t->type;
    ty.dims[0] = b;
    return tensor_new(a, &ty);
}

/* Correct predictions among the first `count` rows: argmax over axis 1 of
 * [B, C] logits against the class index. */
static int64_t correct(const Tensor *logits, const Tensor *labels, int64_t count) {
    if (logits->type.rank != 2)
        return 0;
    int64_t c = logits->type.dims[1], hits = 0;
    for (int64_t i = 0; i < count; i++) {
        int64_t best = 0;
        for (int64_t k = 1; k < c; k++)
            if (tensor_get_f64(logits, i * c + k) > tensor_get_f64(logits, i * c + best))
                best = k;
        hits += best == tensor_get_i64(labels, i);
    }
    return hits;
}

/* splitmix64: the shuffle, reproducible from the seed by any program
 * (tests/train/ replays it in Python to give torch the same batches). */
static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform [0, 1) in 24 bits, exact in float32: the dropouts' noise. */
static void fill_noise(Tensor *t, uint64_t *rng) {
    for (int64_t i = 0; i < tensor_numel(t); i++)
        tensor_set_f64(t, i, (double)(splitmix(rng) >> 40) * 0x1p-24);
}

static void shuffle(int64_t *order, int64_t n, uint64_t *rng) {
    for (int64_t i = 0; i < n; i++)
        order[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(splitmix(rng) % (uint64_t)(i + 1));
        int64_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

typedef struct Trainer {
    CommonArgs *ca;
    const TrainOpts *to;
    DiagList *d;
    Arena *a;
    Session *train, *eval;
    Layout lt, le;
    Tensor **state; /* by training-function input index (noise too) */
    uint64_t noise_rng; /* the dropouts' generator, apart from the shuffle's */
    bool *is_weight; /* by input index: a model initializer, not optimiser state */
    const char *xname;
} Trainer;

/* The weights' starting values: the imported model's constants; the
 * optimiser's state (velocities, Adam's moments and corrections) starts at
 * zero. */
static bool init_state(Trainer *t) {
    Session *s = t->train;
    const Function *f0 = s->steps[0].graph->main;
    t->state = arena_alloc_array(t->a, (size_t)session_ninputs(s) + 1, sizeof(Tensor *));
    t->is_weight = arena_alloc_array(t->a, (size_t)session_ninputs(s) + 1, sizeof(bool));
    for (int k = 0; k < t->lt.nstate; k++) {
        int in = t->lt.state_in[k];
        const char *name = session_input_name(s, in);
        t->state[in] = tensor_new(t->a, session_input_type(s, in));
        for (int c = 0; c < f0->nconsts; c++) {
            if (strcmp(f0->consts[c]->name, name) || !f0->consts[c]->payload->data)
                continue;
            memcpy(t->state[in]->data, f0->consts[c]->payload->data, tensor_bytes(t->state[in]));
            t->is_weight[in] = true;
        }
    }
    for (int k = 0; k < t->lt.nnoise; k++) {
        int in = t->lt.noise_in[k];
        t->state[in] = tensor_new(t->a, session_input_type(s, in));
    }
    return true;
}

/* Validation accuracy with the current weights (batches of the training
 * function's size, the last one filled up with sample 0 and not counted). */
static double validate(Trainer *t, const Data *v, bool *ok) {
    Session *s = t->eval;
    int n = session_ninputs(s);
    int64_t b = session_input_type(s, t->le.x)->dims[0], hits = 0;
    Tensor **in = arena_alloc_array(t->a, (size_t)n + 1, sizeof(Tensor *));
    for (int i = 0; i < n; i++) {
        int ti = input_index(t->train, session_input_name(s, i));
        in[i] = ti >= 0 ? t->state[ti] : NULL;
    }
    Tensor *xb = batch_of(v->x, b, t->a), *yb = batch_of(v->y, b, t->a);
    in[t->le.x] = xb;
    in[t->le.labels] = yb;
    int64_t *idx = calloc((size_t)b, sizeof *idx);
    for (int64_t at = 0; *ok && at < v->n; at += b) {
        int64_t count = v->n - at < b ? v->n - at : b;
        for (int64_t i = 0; i < b; i++)
            idx[i] = i < count ? at + i : 0;
        gather_rows(v->x, idx, b, xb);
        gather_rows(v->y, idx, b, yb);
        Arena *step = arena_new();
        Tensor **out = arena_alloc_array(step, (size_t)session_noutputs(s) + 1, sizeof(Tensor *));
        *ok = session_execute(s, in, out, step, t->d);
        if (*ok)
            hits += correct(out[1], yb, count);
        arena_destroy(step);
    }
    free(idx);
    return v->n ? 100.0 * (double)hits / (double)v->n : 0;
}

static void progress(int64_t step, int64_t steps) {
    if (!isatty(2))
        return;
    int width = 30, done = (int)(width * step / (steps ? steps : 1));
    fprintf(stderr, "\r[%.*s%*s] %lld/%lld", done, "##############################",
            width - done, "", (long long)step, (long long)steps);
    if (step == steps)
        fprintf(stderr, "\r%*s\r", width + 30, "");
    fflush(stderr);
}

/* One epoch: every full batch of a fresh shuffle. False after an error (a
 * non-finite loss stops it, the state left at the last good step). */
static bool epoch(Trainer *t, const Data *dt, uint64_t *rng, int e, double *loss, double *acc) {
    Session *s = t->train;
    int n = session_ninputs(s), nout = session_noutputs(s);
    int64_t b = session_input_type(s, t->lt.x)->dims[0], steps = dt->n / b, hits = 0;
    int64_t *order = calloc((size_t)dt->n, sizeof *order);
    shuffle(order, dt->n, rng);
    Tensor **in = arena_alloc_array(t->a, (size_t)n + 1, sizeof(Tensor *));
    memcpy(in, t->state, (size_t)n * sizeof *in);
    Tensor *xb = batch_of(dt->x, b, t->a), *yb = batch_of(dt->y, b, t->a);
    in[t->lt.x] = xb;
    in[t->lt.labels] = yb;
    bool ok = true;
    double sum = 0;
    for (int64_t k = 0; ok && k < steps; k++) {
        gather_rows(dt->x, order + k * b, b, xb);
        gather_rows(dt->y, order + k * b, b, yb);
        for (int i = 0; i < t->lt.nnoise; i++)
            fill_noise(in[t->lt.noise_in[i]], &t->noise_rng);
        Arena *step = arena_new();
        Tensor **out = arena_alloc_array(step, (size_t)nout + 1, sizeof(Tensor *));
        ok = session_execute(s, in, out, step, t->d);
        double l = ok ? tensor_get_f64(out[0], 0) : 0;
        if (ok && !isfinite(l)) {
            diag_error(t->d, NULL, "train: epoch %d, step %lld: the loss is %s; stopped, keeping "
                       "the weights from before this step", e, (long long)k + 1,
                       isnan(l) ? "NaN" : "infinite");
            ok = false;
        }
        for (int i = 0; ok && i < t->lt.nstate; i++)
            memcpy(t->state[t->lt.state_in[i]]->data, out[t->lt.state_out[i]]->data,
                   tensor_bytes(t->state[t->lt.state_in[i]]));
        if (ok && t->to->print_steps)
            printf("epoch %d step %lld loss %.9g\n", e, (long long)k + 1, l);
        if (ok) {
            sum += l;
            hits += correct(out[1], yb, b);
        }
        arena_destroy(step);
        progress(k + 1, steps);
    }
    free(order);
    *loss = steps ? sum / (double)steps : 0;
    *acc = steps ? 100.0 * (double)hits / (double)(steps * b) : 0;
    return ok;
}

/* The trained weights into a copy of the model. */
static bool write_model(Trainer *t) {
    int n = t->lt.nstate, nw = 0;
    const char **names = calloc((size_t)n + 1, sizeof *names);
    const Tensor **vals = calloc((size_t)n + 1, sizeof *vals);
    for (int i = 0; i < n; i++) {
        if (!t->is_weight[t->lt.state_in[i]])
            continue;
        names[nw] = session_input_name(t->train, t->lt.state_in[i]);
        vals[nw++] = t->state[t->lt.state_in[i]];
    }
    bool ok = onnx_write_with_weights(t->ca->model, t->to->out, nw, names, vals, t->d);
    free(names);
    free(vals);
    return ok;
}

static Session *open_function(Trainer *t, const TrainSpec *spec, Tensor *sample) {
    KnownInput known = {t->xname, -1, sample, NULL, false};
    SessionOptions so = args_session_options(t->ca, NULL);
    so.known = &known;
    so.nknown = 1;
    so.train = spec;
    so.codegen.fallback = true; /* the gradients' kinds without a libjit kernel */
    Session *s = args_open_session_with(t->ca, &so, "-O2", t->d);
    /* compiled and loaded before the first epoch's clock starts */
    if (s && (!session_run(s) || (s->opt.backend->compiles && !session_exec(s, t->d)))) {
        diag_append(t->d, &s->diags);
        session_free(s);
        return NULL;
    }
    return s;
}

static bool load_data(const char *xpath, Tensor *x, const char *ypath, Data *dt, Arena *a,
                      DiagList *d) {
    dt->x = x;
    dt->y = x ? read_npy(ypath, "--labels", a, d) : NULL;
    dt->n = x ? x->type.dims[0] : 0;
    return dt->x && dt->y;
}

static int train(CommonArgs *ca, const TrainOpts *to, DiagList *d) {
    if (!to->out || !to->labels || ca->ninputs != 1) {
        diag_error(d, NULL, "train: %s (see 'glowc train --help')",
                   !to->out      ? "-o TRAINED.onnx is required"
                   : !to->labels ? "--labels Y.npy is required"
                                 : "one --input NAME=X.npy is required: the training samples");
        return 1;
    }
    if (!cli_has_suffix(ca->model, ".onnx")) {
        diag_error(d, NULL, "train: '%s': the trained weights are written into a copy of the "
                   "model, which must be an ONNX file", ca->model);
        return 1;
    }
    Arena *a = arena_new();
    Trainer t = {.ca = ca, .to = to, .d = d, .a = a, .xname = ca->input_names[0]};
    Data dt = {0}, dv = {0};
    bool ok = args_load_inputs(ca, a, d) &&
              load_data(ca->input_files[0], ca->input_values[0], to->labels, &dt, a, d);
    if (ok && to->validate) {
        const char *comma = strchr(to->validate, ',');
        char *xv = comma ? strndup(to->validate, (size_t)(comma - to->validate)) : NULL;
        ok = comma && comma[1];
        if (!ok)
            diag_error(d, NULL, "--validate expects X.npy,Y.npy, got '%s'", to->validate);
        ok = ok && load_data(xv, read_npy(xv, "--validate", a, d), comma + 1, &dv, a, d);
        free(xv);
    }
    if (ok && (to->batch > dt.n)) {
        diag_error(d, NULL, "--batch %lld is larger than the %lld samples of '%s'", to->batch,
                   (long long)dt.n, ca->input_files[0]);
        ok = false;
    }
    ca->training = true;
    if (!ca->backend)
        ca->backend = backend_compiling()->name;
    Tensor *sample = ok ? batch_of(dt.x, to->batch, a) : NULL;
    TrainSpec spec = ca->train, fwd = ca->train;
    fwd.forward_only = true;
    if (!ca->lr_given)
        spec.lr = 0.01;
    t.train = ok ? open_function(&t, &spec, sample) : NULL;
    t.eval = t.train && to->validate ? open_function(&t, &fwd, sample) : NULL;
    ok = t.train && (!to->validate || t.eval);
    ok = ok && find_layout(t.train, t.xname, &t.lt, d) &&
         (!t.eval || find_layout(t.eval, t.xname, &t.le, d));
    const Type *in_t = ok ? session_input_type(t.train, t.lt.x) : NULL;
    if (ok && in_t->dims[0] != to->batch) {
        diag_error(d, NULL, "--batch %lld: the model's input '%s' has a fixed batch of %lld "
                   "(export it with a symbolic batch axis, or train with --batch %lld)",
                   to->batch, t.xname, (long long)in_t->dims[0], (long long)in_t->dims[0]);
        ok = false;
    }
    const Type *out_t = ok ? &t.train->work->main->outputs[1]->type : NULL;
    ok = ok && check_data(&dt, ca->input_files[0], to->labels, in_t, out_t, &spec, d);
    ok = ok && (!t.eval || check_data(&dv, "--validate", to->validate, in_t, out_t, &spec, d));
    ok = ok && (dt.y = labels_as(dt.y, to->labels, &spec, out_t, a, d)) != NULL;
    ok = ok && (!t.eval || (dv.y = labels_as(dv.y, to->validate, &spec, out_t, a, d)) != NULL);
    ok = ok && init_state(&t);
    if (ok && t.lt.nstate == 0) {
        diag_error(d, NULL, "train: the model has no weights the loss depends on");
        ok = false;
    }
    uint64_t rng = (uint64_t)to->seed;
    t.noise_rng = (uint64_t)to->seed ^ 0x6a09e667f3bcc909ull; /* a stream of its own */
    bool trained = ok;
    for (int e = 1; trained && e <= to->epochs; e++) {
        double t0 = now(), loss, acc;
        trained = epoch(&t, &dt, &rng, e, &loss, &acc);
        double secs = now() - t0;
        if (!trained)
            break;
        bool ce = spec.loss == LOSS_SOFTMAX_CE && out_t->rank == 2;
        printf("epoch %d/%lld  loss %.6f", e, to->epochs, loss);
        if (ce)
            printf("  train %.2f%%", acc);
        if (t.eval && ce) {
            double va = validate(&t, &dv, &trained);
            printf("  validation %.2f%%", va);
        }
        printf("  %.3f s\n", secs);
        fflush(stdout);
    }
    /* A stopped run still leaves the last good weights (the error says so). */
    bool wrote = ok && write_model(&t);
    if (wrote)
        printf("%s written to %s\n", trained ? "trained weights" : "the last good weights",
               to->out);
    session_free(t.train);
    session_free(t.eval);
    arena_destroy(a);
    return ok && trained && wrote ? 0 : 1;
}

int cmd_train(int argc, char **argv) {
    DiagList d;
    diag_init(&d, NULL);
    CommonArgs ca = {0};
    TrainOpts to = {.epochs = 10, .batch = 32};
    int status = 1;
    if (args_parse(&ca, argc, argv, "train", train_option, &to, &d))
        status = train(&ca, &to, &d);
    cli_report(&d);
    args_free(&ca);
    diag_free(&d);
    return status;
}
