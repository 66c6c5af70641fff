/* glowc compare: every value the compiled model computes, matched by ONNX
 * name with the -O0 interpreter's (as TVM's debug executor and Glow's
 * network debugger do), on any backend -- native code through its
 * per-instruction probe. The comparison is the explorer's (explore_core.c),
 * run at the pipeline's last step. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/args.h"
#include "tui/cli.h"
#include "tui/explore_core.h"
#include "tui/values.h"

/* ---- --quantize: where accuracy is lost ------------------------------------------ */

typedef struct QuantRow {
    const char *name;
    int result;
    double max_err, sqnr; /* sqnr in dB; INFINITY when equal */
    const Tensor *ref;
} QuantRow;

/* An element of a value as a real number: an integer of a quantized type
 * through its scale and offset. */
static double real_at(const Tensor *t, int64_t i) {
    double v = tensor_get_f64(t, i);
    return t->type.quant == QUANT_TENSOR ? t->type.scale * (v - t->type.offset) : v;
}

static const NamedValue *find_value(const ValueSet *vs, const char *name, int result) {
    for (int i = 0; i < vs->n; i++)
        if (vs->v[i].result == result && !strcmp(vs->v[i].name, name))
            return &vs->v[i];
    return NULL;
}

/* Signal to quantization noise: 10 log10(sum ref^2 / sum (ref - got)^2). */
static QuantRow measure(const NamedValue *ref, const Tensor *got) {
    QuantRow r = {ref->name, ref->result, 0, INFINITY, ref->value};
    double sig = 0, noise = 0;
    for (int64_t i = 0; i < tensor_numel(got); i++) {
        double w = tensor_get_f64(ref->value, i), e = real_at(got, i) - w;
        sig += w * w;
        noise += e * e;
        r.max_err = fmax(r.max_err, fabs(e));
    }
    if (noise > 0)
        r.sqnr = sig > 0 ? 10 * log10(sig / noise) : -INFINITY;
    return r;
}

static int by_sqnr(const void *a, const void *b) {
    const QuantRow *x = a, *y = b;
    if (x->sqnr != y->sqnr)
        return x->sqnr < y->sqnr ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Runs the model once in float (the imported graph) and once quantized, on
 * the interpreter, keeping every named value of both. */
static bool run_both(CommonArgs *ca, ValueSet *vf, ValueSet *vq, DiagList *d) {
    Arena *a = arena_new();
    KnownInput known[MAX_CLI_INPUTS];
    bool ok = args_load_inputs(ca, a, d);
    for (int pass = 0; ok && pass < 2; pass++) {
        SessionOptions so = args_session_options(ca, known);
        if (pass == 0)
            so.quant = NULL;
        so.codegen.instrument = true;
        Session *s = args_open_session_with(ca, &so, "-O0", d);
        ok = s && session_run(s);
        if (s && !ok)
            diag_append(d, &s->diags);
        Tensor **in = ok ? args_bind_inputs(ca, s, a, pass == 0, d) : NULL;
        Tensor **out = arena_alloc_array(a, (size_t)(s ? session_noutputs(s) : 0) + 1,
                                         sizeof(Tensor *));
        ValueSet *vs = pass ? vq : vf;
        if (ok)
            values_init(vs, s);
        ok = ok && in && session_execute_observed(s, in, out, a, d, values_observe, vs);
        /* The inputs as the float graph sees them (the quantized graph's
         * first quantize_linear bears the input's name), and the outputs. */
        for (int i = 0; ok && pass == 0 && i < session_ninputs(s); i++)
            values_observe(vs, session_input_name(s, i), 0, in[i]);
        for (int i = 0; ok && i < session_noutputs(s); i++) {
            char name[300];
            snprintf(name, sizeof name, "output '%s'", session_output_name(s, i));
            values_observe(vs, name, 0, out[i]);
        }
        session_free(s);
    }
    arena_destroy(a);
    return ok;
}

static int compare_quantized(CommonArgs *ca, DiagList *d) {
    ValueSet vf = {0}, vq = {0};
    bool ok = run_both(ca, &vf, &vq, d);
    QuantRow *rows = calloc((size_t)vf.n + 1, sizeof *rows);
    int n = 0;
    for (int i = 0; ok && i < vf.n; i++) {
        const NamedValue *q = find_value(&vq, vf.v[i].name, vf.v[i].result);
        if (q && elem_is_float(vf.v[i].value->type.elem) &&
            tensor_numel(q->value) == tensor_numel(vf.v[i].value))
            rows[n++] = measure(&vf.v[i], q->value);
    }
    qsort(rows, (size_t)n, sizeof *rows, by_sqnr);
    if (ok) {
        printf("float (import) against quantized (%s), values matched by name, worst first\n",
               ca->quantize);
        printf("%10s  %-12s  %-24s %s\n", "SQNR dB", "max error", "type", "value");
    }
    for (int i = 0; i < n; i++) {
        char sq[32], ty[TYPE_STR_MAX];
        if (isinf(rows[i].sqnr))
            snprintf(sq, sizeof sq, "%s", rows[i].sqnr > 0 ? "exact" : "-inf");
        else
            snprintf(sq, sizeof sq, "%.1f", rows[i].sqnr);
        printf("%10s  %-12.6g  %-24s %s", sq, rows[i].max_err, type_str(&rows[i].ref->type, ty),
               rows[i].name);
        printf(rows[i].result ? "#%d\n" : "\n", rows[i].result);
    }
    if (ok)
        printf("%d values compared\n", n);
    free(rows);
    values_free(&vf);
    values_free(&vq);
    return ok ? 0 : 1;
}

static int compare(CommonArgs *ca, const Tolerance *tol, DiagList *d) {
    Explorer e;
    explore_init(&e, ca, ca->pipeline ? ca->pipeline : "-O2");
    StrBuf out;
    sb_init(&out);
    char *specs[MAX_CLI_INPUTS];
    for (int i = 0; i < ca->ninputs; i++) {
        size_t n = strlen(ca->input_files[i]) + (ca->input_names[i] ? strlen(ca->input_names[i]) : 0) + 2;
        specs[i] = malloc(n);
        if (ca->input_names[i])
            snprintf(specs[i], n, "%s=%s", ca->input_names[i], ca->input_files[i]);
        else
            snprintf(specs[i], n, "%s", ca->input_files[i]);
    }
    int status = -1;
    /* Its backend is known now (the explorer's default): native code runs here. */
    if (args_check_target(ca, true, d) && explore_load(&e, ca->model, &out, d)) {
        /* The graph interpreter runs the last graph; the others the last step. */
        int k = explore_nsteps(&e) - 1;
        const Backend *b = e.s->opt.backend;
        while (k > 0 && !b->runs_lir && !b->compiles && !explore_step(&e, k)->graph)
            k--;
        status = explore_compare_step(&e, k, tol, specs, ca->ninputs, &out, d);
    }
    fputs(sb_str(&out), stdout);
    if (status == 1)
        printf("an output is beyond tolerance\n");
    sb_free(&out);
    for (int i = 0; i < ca->ninputs; i++)
        free(specs[i]);
    explore_free(&e);
    return status == 0 ? 0 : 1;
}

static int tolerance_option(OptionId id, const char *v, void *ctx, DiagList *d) {
    if (id != OPT_RTOL && id != OPT_ATOL)
        return 0;
    return tolerance_set(ctx, id == OPT_RTOL, v, "compare", d) ? 1 : -1;
}

int cmd_compare(int argc, char **argv) {
    DiagList d;
    diag_init(&d, NULL);
    CommonArgs ca = {0};
    Tolerance tol = {.rtol = 1e-3};
    int status = 1;
    if (args_parse(&ca, argc, argv, "compare", tolerance_option, &tol, &d))
        status = ca.quantize ? compare_quantized(&ca, &d) : compare(&ca, &tol, &d);
    cli_report(&d);
    args_free(&ca);
    diag_free(&d);
    return status;
}
