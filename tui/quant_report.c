/* Quantization accuracy by value (see quant_report.h). */
#include "tui/quant_report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"

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
    QuantRow r = {ref->name, ref->result, 0, INFINITY, !elem_is_float(got->type.elem), ref->value};
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

/* The session options of every run: the imported graph (quantized or not)
 * on the graph interpreter, whatever pipeline and backend the command uses. */
static SessionOptions run_options(CommonArgs *ca, KnownInput *known, const QuantConfig *quant) {
    SessionOptions so = args_session_options(ca, known);
    so.quant = quant;
    so.backend = backend_find("interp");
    return so;
}

/* One run, every named value kept: the float graph (quant NULL) or the
 * quantized one, on a copy of base's import when there is one. */
static bool run_one(CommonArgs *ca, const Session *base, const QuantConfig *quant, bool announce,
                    ValueSet *vs, Arena *a, DiagList *d) {
    KnownInput known[MAX_CLI_INPUTS];
    const char *pipeline = ca->pipeline;
    ca->pipeline = NULL;
    SessionOptions so = run_options(ca, known, quant);
    Session *s = base && base->work ? args_open_session_from(ca, &so, base->work, "-O0", d)
                                    : args_open_session_with(ca, &so, "-O0", d);
    ca->pipeline = pipeline;
    bool ok = s && session_run(s);
    if (s && !ok)
        diag_append(d, &s->diags);
    Tensor **in = ok ? args_bind_inputs(ca, s, a, announce, d) : NULL;
    Tensor **out =
        arena_alloc_array(a, (size_t)(s ? session_noutputs(s) : 0) + 1, sizeof(Tensor *));
    if (ok)
        values_init(vs, s);
    ok = ok && in && session_execute_observed(s, in, out, a, d, values_observe, vs);
    /* The inputs as the float graph sees them (the quantized graph's first
     * quantize_linear bears the input's name), and the outputs. */
    for (int i = 0; ok && !quant && i < session_ninputs(s); i++)
        values_observe(vs, session_input_name(s, i), 0, in[i]);
    for (int i = 0; ok && i < session_noutputs(s); i++) {
        char name[300];
        snprintf(name, sizeof name, "output '%s'", session_output_name(s, i));
        values_observe(vs, name, 0, out[i]);
    }
    session_free(s);
    return ok;
}

static void match_rows(QuantReport *r) {
    free(r->rows);
    r->rows = calloc((size_t)r->vf.n + 1, sizeof *r->rows);
    r->n = 0;
    for (int i = 0; i < r->vf.n; i++) {
        const NamedValue *q = find_value(&r->vq, r->vf.v[i].name, r->vf.v[i].result);
        if (q && elem_is_float(r->vf.v[i].value->type.elem) &&
            tensor_numel(q->value) == tensor_numel(r->vf.v[i].value))
            r->rows[r->n++] = measure(&r->vf.v[i], q->value);
    }
}

/* The model imported once, run by nothing: the copy each run starts from. */
static Session *import_once(CommonArgs *ca, DiagList *d) {
    KnownInput known[MAX_CLI_INPUTS];
    SessionOptions so = run_options(ca, known, NULL);
    Session *s = session_open(ca->model, &so);
    if (!s->work && !s->lir) {
        diag_append(d, &s->diags);
        session_free(s);
        return NULL;
    }
    return s;
}

bool quant_report_run(CommonArgs *ca, bool announce, QuantReport *r, DiagList *d) {
    memset(r, 0, sizeof *r);
    Arena *a = arena_new();
    bool ok = args_ensure_inputs(ca, d) && (r->base = import_once(ca, d)) &&
              run_one(ca, r->base, NULL, announce, &r->vf, a, d) &&
              run_one(ca, r->base, &ca->quant, false, &r->vq, a, d);
    arena_destroy(a);
    if (ok)
        match_rows(r);
    return ok;
}

static int by_sqnr(const void *a, const void *b) {
    const QuantRow *x = a, *y = b;
    if (x->sqnr != y->sqnr)
        return x->sqnr < y->sqnr ? -1 : 1;
    int c = strcmp(x->name, y->name);
    return c ? c : x->result - y->result;
}

void quant_report_print(const QuantReport *r, const char *profile, StrBuf *out) {
    QuantRow *rows = malloc(((size_t)r->n + 1) * sizeof *rows);
    memcpy(rows, r->rows, (size_t)r->n * sizeof *rows);
    qsort(rows, (size_t)r->n, sizeof *rows, by_sqnr);
    sb_printf(out, "float (import) against quantized (%s), values matched by name, worst first\n",
              profile);
    sb_printf(out, "%10s  %-12s  %-24s %s\n", "SQNR dB", "max error", "type", "value");
    for (int i = 0; i < r->n; i++) {
        char sq[32], ty[TYPE_STR_MAX];
        if (isinf(rows[i].sqnr))
            snprintf(sq, sizeof sq, "%s", rows[i].sqnr > 0 ? "exact" : "-inf");
        else
            snprintf(sq, sizeof sq, "%.1f", rows[i].sqnr);
        sb_printf(out, "%10s  %-12.6g  %-24s %s", sq, rows[i].max_err,
                  type_str(&rows[i].ref->type, ty), rows[i].name);
        sb_printf(out, rows[i].result ? "#%d\n" : "\n", rows[i].result);
    }
    sb_printf(out, "%d values compared\n", r->n);
    free(rows);
}

void quant_report_free(QuantReport *r) {
    session_free(r->base);
    values_free(&r->vf);
    values_free(&r->vq);
    free(r->rows);
    memset(r, 0, sizeof *r);
}

static bool in_list(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *s = list; *s;) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len == n && !strncmp(s, name, n))
            return true;
        s = e ? e + 1 : s + len;
    }
    return false;
}

bool quant_resolve_auto(CommonArgs *ca, DiagList *d) {
    StrBuf kept;
    sb_init(&kept);
    if (!ca->min_sqnr_given)
        ca->min_sqnr = QUANT_MIN_SQNR_DEFAULT;
    ca->quant.keep_float = "";
    QuantReport r;
    bool ok = quant_report_run(ca, false, &r, d);
    int rounds = 0;
    for (; ok && rounds < QUANT_AUTO_ROUNDS; rounds++) {
        const QuantRow *worst = NULL;
        for (int i = 0; i < r.n && !worst; i++)
            if (r.rows[i].integer && r.rows[i].sqnr < ca->min_sqnr &&
                !in_list(sb_str(&kept), r.rows[i].name))
                worst = &r.rows[i];
        if (!worst)
            break;
        fprintf(stderr, "glowc: --keep-float=auto: %s is %.1f dB (below %g): kept in float\n",
                worst->name, worst->sqnr, ca->min_sqnr);
        if (kept.len)
            sb_append(&kept, ",");
        sb_append(&kept, worst->name);
        ca->quant.keep_float = sb_str(&kept);
        /* The float run stays; the quantized one is measured again. */
        values_free(&r.vq);
        Arena *a = arena_new();
        ok = run_one(ca, r.base, &ca->quant, false, &r.vq, a, d);
        arena_destroy(a);
        if (ok)
            match_rows(&r);
    }
    quant_report_free(&r);
    if (ok && rounds == QUANT_AUTO_ROUNDS)
        fprintf(stderr, "glowc: --keep-float=auto: stopped after %d nodes kept in float\n",
                QUANT_AUTO_ROUNDS);
    if (ok && !kept.len)
        fprintf(stderr, "glowc: --keep-float=auto: every quantized value is at least %g dB\n",
                ca->min_sqnr);
    free(ca->keep_auto_list);
    ca->keep_auto_list = ok ? strdup(sb_str(&kept)) : NULL;
    ca->quant.keep_float = ca->keep_auto_list;
    sb_free(&kept);
    return ok;
}
