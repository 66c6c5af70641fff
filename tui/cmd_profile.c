/* glowc profile: runs the imported float graph on the interpreter over every
 * calibration sample and records, per named value (the ONNX node that
 * computes it, and each graph input), its range and a histogram: the
 * profile the quantize pass (--quantize=PROFILE.json) chooses scales from. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/file.h"
#include "core/npy.h"
#include "passes/quant_profile.h"
#include "tui/args.h"
#include "tui/cli.h"

typedef struct ProfOpts {
    const char *out;
} ProfOpts;

/* The samples of one input: tensors of the model's input type. */
typedef struct Samples {
    Tensor **t;
    const char **file; /* where each came from, for messages */
    int n, cap;
} Samples;

static void samples_push(Samples *s, Tensor *t, const char *file) {
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 16;
        s->t = realloc(s->t, (size_t)s->cap * sizeof *s->t);
        s->file = realloc(s->file, (size_t)s->cap * sizeof *s->file);
    }
    s->t[s->n] = t;
    s->file[s->n++] = file;
}

static Tensor *read_npy(const char *path, Arena *a, DiagList *d) {
    size_t len;
    char *data = file_read_all(path, &len, d);
    if (!data)
        return NULL;
    Tensor *t = npy_read(data, len, path, a, d);
    free(data);
    return t;
}

static bool same_dims(const int64_t *a, const int64_t *b, int rank) {
    for (int i = 0; i < rank; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

/* One file: the model's input itself, or samples along its leading axis
 * (rank one more than the input's, or the input's batch of 1 repeated). */
static bool split_file(Tensor *t, const char *path, const Type *want, Samples *s, Arena *a,
                       DiagList *d) {
    char w[TYPE_STR_MAX], g[TYPE_STR_MAX];
    const Type *got = &t->type;
    int64_t count = -1;
    if (got->elem == want->elem && type_equal(got, want))
        count = 1;
    else if (got->elem == want->elem && got->rank == want->rank + 1 &&
             same_dims(got->dims + 1, want->dims, want->rank))
        count = got->dims[0];
    else if (got->elem == want->elem && got->rank == want->rank && want->rank > 0 &&
             want->dims[0] == 1 && same_dims(got->dims + 1, want->dims + 1, want->rank - 1))
        count = got->dims[0];
    if (count < 0) {
        diag_error(d, path, "holds %s; the model's input is %s (one sample), or samples of it "
                   "along a leading axis", type_str(got, g), type_str(want, w));
        return false;
    }
    if (count == 1 && type_equal(got, want)) {
        samples_push(s, t, path);
        return true;
    }
    size_t bytes = type_bytes(want);
    for (int64_t k = 0; k < count; k++) {
        Tensor *x = tensor_new(a, want);
        memcpy(x->data, (char *)t->data + (size_t)k * bytes, bytes);
        samples_push(s, x, path);
    }
    return true;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every .npy file of a folder, in name order (deterministic profiles). */
static bool read_dir(const char *dir, const Type *want, Samples *s, Arena *a, DiagList *d) {
    DIR *dp = opendir(dir);
    if (!dp) {
        diag_error(d, dir, "cannot open the folder");
        return false;
    }
    char **names = NULL;
    int n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(dp));) {
        if (!cli_has_suffix(e->d_name, ".npy"))
            continue;
        if (n == cap)
            names = realloc(names, (size_t)(cap = cap ? 2 * cap : 64) * sizeof *names);
        names[n++] = strdup(e->d_name);
    }
    closedir(dp);
    if (n)
        qsort(names, (size_t)n, sizeof *names, by_name);
    bool ok = n > 0;
    if (!ok)
        diag_error(d, dir, "the sample folder holds no .npy file");
    for (int i = 0; ok && i < n; i++) {
        size_t len = strlen(dir) + strlen(names[i]) + 2;
        char *path = arena_alloc(a, len);
        snprintf(path, len, "%s/%s", dir, names[i]);
        Tensor *t = read_npy(path, a, d);
        char w[TYPE_STR_MAX], g[TYPE_STR_MAX];
        if (t && !type_equal(&t->type, want)) {
            diag_error(d, path, "holds %s; the model's input is %s", type_str(&t->type, g),
                       type_str(want, w));
            t = NULL;
        }
        ok = t != NULL;
        if (ok)
            samples_push(s, t, path);
    }
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return ok;
}

static bool load_samples(const char *path, const Type *want, Samples *s, Arena *a,
                         DiagList *d) {
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return read_dir(path, want, s, a, d);
    Tensor *t = read_npy(path, a, d);
    return t && split_file(t, path, want, s, a, d);
}

/* Calibration data must be numbers: a NaN would make every range NaN. */
static bool check_finite(const Samples *s, DiagList *d) {
    for (int k = 0; k < s->n; k++) {
        const Tensor *t = s->t[k];
        if (!elem_is_float(t->type.elem))
            continue;
        for (int64_t i = 0; i < tensor_numel(t); i++) {
            double x = tensor_get_f64(t, i);
            if (!isfinite(x)) {
                diag_error(d, s->file[k], "sample %d holds %s at element %lld: calibration "
                           "data must be finite", k, isnan(x) ? "NaN" : x > 0 ? "inf" : "-inf",
                           (long long)i);
                return false;
            }
        }
    }
    return true;
}

typedef struct Observe {
    QProfile *p;
    int sample;
    DiagList *d;
    bool failed;
} Observe;

static void observe(void *ctx, const char *name, int result, const Tensor *value) {
    Observe *o = ctx;
    if (o->failed || !name || !*name)
        return;
    char key[512];
    if (result)
        snprintf(key, sizeof key, "%s#%d", name, result);
    else
        snprintf(key, sizeof key, "%s", name);
    double bad;
    if (!qprof_add(o->p, key, value, &bad)) {
        diag_error(o->d, NULL, "value '%s' is %s on sample %d: it has no range to quantize",
                   key, isnan(bad) ? "NaN" : bad > 0 ? "inf" : "-inf", o->sample);
        o->failed = true;
    }
}

static bool run_samples(CommonArgs *ca, Session *s, Samples *in, QProfile *p, DiagList *d) {
    int n = in[0].n;
    for (int i = 1; i < ca->ninputs; i++) {
        if (in[i].n != n) {
            diag_error(d, NULL, "--input %s has %d samples but --input %s has %d",
                       ca->input_names[0], n, ca->input_names[i], in[i].n);
            return false;
        }
    }
    Observe o = {.p = p, .d = d};
    for (int k = 0; k < n && !o.failed; k++) {
        Arena *a = arena_new();
        for (int i = 0; i < ca->ninputs; i++) {
            ca->input_values[i] = in[i].t[k];
            double bad;
            qprof_add(p, ca->input_names[i], in[i].t[k], &bad); /* finite: checked */
        }
        Tensor **inputs = args_bind_inputs(ca, s, a, false, d);
        Tensor **outputs = arena_alloc_array(a, (size_t)session_noutputs(s) + 1, sizeof *outputs);
        o.sample = k;
        bool ok = inputs && session_execute_observed(s, inputs, outputs, a, d, observe, &o);
        arena_destroy(a);
        if (!ok)
            return false;
    }
    p->samples = n;
    return !o.failed;
}

static int profile(CommonArgs *ca, const ProfOpts *po, DiagList *d) {
    if (!po->out) {
        diag_error(d, NULL, "profile: -o PROFILE.json is required");
        return 1;
    }
    if (ca->ninputs == 0) {
        diag_error(d, NULL, "profile: give the samples of every input (--input NAME=FILE.npy|DIR)");
        return 1;
    }
    size_t len;
    char *model = file_read_all(ca->model, &len, d);
    if (!model)
        return 1;
    QProfile p = {.model_hash = qprof_hash_bytes(model, len)};
    free(model);
    Arena *a = arena_new();
    Session *s = args_open_session(ca, "-O0", NULL, d);
    bool ok = s && session_run(s);
    if (s && !ok)
        diag_append(d, &s->diags);
    Samples in[MAX_CLI_INPUTS] = {0};
    if (ok && session_ninputs(s) != ca->ninputs) {
        diag_error(d, NULL, "profile: the model has %d inputs and %d are given: calibration "
                   "needs samples of each", session_ninputs(s), ca->ninputs);
        ok = false;
    }
    for (int i = 0; ok && i < ca->ninputs; i++) {
        int idx = -1;
        for (int j = 0; j < session_ninputs(s); j++)
            if (ca->input_names[i] && !strcmp(session_input_name(s, j), ca->input_names[i]))
                idx = j;
        if (idx < 0) {
            diag_error(d, NULL, "--input %s: the model has no input of that name",
                       ca->input_names[i] ? ca->input_names[i] : ca->input_files[i]);
            ok = false;
            break;
        }
        ok = load_samples(ca->input_files[i], session_input_type(s, idx), &in[i], a, d) &&
             check_finite(&in[i], d);
    }
    ok = ok && run_samples(ca, s, in, &p, d);
    char *json = ok ? qprof_to_json(&p) : NULL;
    ok = ok && json && cli_write_file(po->out, json, strlen(json), d);
    if (ok)
        printf("%d values over %d samples written to %s\n", p.n, p.samples, po->out);
    free(json);
    for (int i = 0; i < ca->ninputs; i++) {
        free(in[i].t);
        free(in[i].file);
        ca->input_values[i] = NULL;
    }
    qprof_free(&p);
    session_free(s);
    arena_destroy(a);
    return ok ? 0 : 1;
}

static int profile_option(OptionId id, const char *v, void *ctx, DiagList *d) {
    if (id != OPT_OUTPUT)
        return 0;
    ((ProfOpts *)ctx)->out = v;
    return 1;
}

int cmd_profile(int argc, char **argv) {
    DiagList d;
    diag_init(&d, NULL);
    CommonArgs ca = {0};
    ProfOpts po = {0};
    int status = 1;
    if (args_parse(&ca, argc, argv, "profile", profile_option, &po, &d))
        status = profile(&ca, &po, &d);
    cli_report(&d);
    args_free(&ca);
    diag_free(&d);
    return status;
}
