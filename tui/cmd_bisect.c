/* glowc bisect: runs the pipeline one pass at a time, executes the graph
 * after every pass that changed it, and names the first pass whose outputs
 * leave the imported graph's beyond tolerance -- with the largest
 * difference and the lines of the graph that pass changed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/interp/interp.h"
#include "core/textdiff.h"
#include "tui/args.h"

typedef struct Tolerance {
    double rtol, atol;
    bool atol_given;
} Tolerance;

/* The worst output of `got` against `want`. By default atol is relative to
 * each output's largest magnitude (1e-4 of it): random-weight models give
 * outputs anywhere from 1e-14 to 1e12, where any fixed atol is meaningless. */
typedef struct Verdict {
    bool ok;
    int output;
    TensorDiff diff;
    double atol;
} Verdict;

static Verdict judge(Function *f, Tensor **got, Tensor **want, const Tolerance *tol) {
    Verdict v = {.ok = true, .output = 0};
    for (int i = 0; i < f->noutputs; i++) {
        double scale = tensor_compare(want[i], want[i], 0, 0).max_abs_want;
        double atol = tol->atol_given ? tol->atol : 1e-4 * scale;
        TensorDiff df = tensor_compare(got[i], want[i], tol->rtol, atol);
        if (!df.ok) {
            if (v.ok) /* report the first output that fails */
                v = (Verdict){false, i, df, atol};
        } else if (v.ok && df.max_abs >= v.diff.max_abs) {
            v = (Verdict){true, i, df, atol};
        }
    }
    return v;
}

static void show_change(const Session *s, int step) {
    StrBuf sb;
    sb_init(&sb);
    const Step *a = &s->steps[step - 1], *b = &s->steps[step];
    bool lir = b->lir_text != NULL;
    textdiff_unified(lir ? (a->lir_text ? a->lir_text : "") : a->text ? a->text : "",
                     lir ? b->lir_text : b->text ? b->text : "", a->name, b->name, 1, &sb);
    printf("what %s changed:\n", s->steps[step].name);
    int lines = 0;
    for (const char *p = sb_str(&sb); *p && lines < 60; lines++) {
        const char *e = strchr(p, '\n');
        int len = e ? (int)(e - p) : (int)strlen(p);
        printf("  %.*s\n", len, p);
        p = e ? e + 1 : p + len;
    }
    if (lines == 60)
        printf("  ...\n");
    sb_free(&sb);
}

static int bisect(CommonArgs *ca, const Tolerance *tol, DiagList *d) {
    Arena *a = arena_new();
    KnownInput known[MAX_CLI_INPUTS];
    Session *s = args_load_inputs(ca, a, d) ? args_open_session(ca, "-O2", known, d) : NULL;
    int status = 1;
    if (!s)
        goto done;
    if (!s->steps[0].graph) {
        diag_error(d, NULL, "bisect needs a graph (an .onnx or .hl model)");
        goto done;
    }
    Function *f0 = s->steps[0].graph->main;
    Tensor **inputs = args_bind_inputs(ca, s, a, true, d);
    Tensor **ref = arena_alloc_array(a, (size_t)f0->noutputs + 1, sizeof(Tensor *));
    if (!inputs || !interp_run(f0, inputs, ref, a, d, NULL, NULL))
        goto done;
    printf("bisecting %d passes of %s against the imported graph\n", s->npipeline, ca->model);
    double max_seen = 0;
    while (!session_done(s)) {
        bool ran = session_step(s);
        int k = s->nsteps - 1;
        const Step *st = &s->steps[k];
        if (!ran) {
            printf("FIRST BAD PASS: %s (step %d) failed\n", st->name, k);
            diag_append(d, &s->diags);
            show_change(s, k);
            goto done;
        }
        if (!st->changed) {
            printf("  %-3d %-16s no change\n", k, st->name);
            continue;
        }
        Tensor **got = arena_alloc_array(a, (size_t)f0->noutputs + 1, sizeof(Tensor *));
        DiagList rd;
        diag_init(&rd, s->path);
        /* Graph steps run on the interpreter; a low-level step runs on a copy
         * of its program given a memory plan, if it has none yet. */
        bool ran_ok;
        if (st->graph) {
            ran_ok = interp_run(st->graph->main, inputs, got, a, &rd, NULL, NULL);
        } else {
            LirProgram *lp = lir_clone(st->lir);
            PassContext pc = {.d = &rd};
            if (!lp->allocated)
                lir_allocate(lp, &pc);
            ran_ok = interp_run_lir(lp, inputs, got, a, &rd);
            lir_destroy(lp);
        }
        if (!ran_ok) {
            printf("FIRST BAD PASS: %s (step %d): the graph no longer runs\n", st->name, k);
            diag_append(d, &rd);
            diag_free(&rd);
            show_change(s, k);
            goto done;
        }
        diag_free(&rd);
        Verdict v = judge(f0, got, ref, tol);
        if (v.diff.max_abs > max_seen)
            max_seen = v.diff.max_abs;
        if (v.ok) {
            printf("  %-3d %-16s ok (max abs diff %.3g)\n", k, st->name, v.diff.max_abs);
            continue;
        }
        const char *out = f0->output_names[v.output];
        printf("FIRST BAD PASS: %s (step %d)\n", st->name, k);
        if (!v.diff.same_type)
            printf("  output '%s' changed type\n", out);
        else
            printf("  output '%s': %lld elements beyond tolerance, largest difference %.6g at "
                   "index %lld (expected %.9g, got %.9g; atol %.3g, rtol %.3g)\n",
                   out, (long long)v.diff.mismatches, v.diff.max_abs, (long long)v.diff.worst,
                   v.diff.want_at_worst, v.diff.got_at_worst, v.atol, tol->rtol);
        show_change(s, k);
        goto done;
    }
    printf("no pass moves the outputs beyond tolerance (largest difference %.3g)\n", max_seen);
    status = 0;
done:
    session_free(s);
    arena_destroy(a);
    return status;
}

static int tolerance_option(int argc, char **argv, int *i, void *ctx, DiagList *d) {
    Tolerance *tol = ctx;
    if (*i + 1 >= argc)
        return 0;
    if (!strcmp(argv[*i], "--rtol")) {
        tol->rtol = atof(argv[++*i]);
    } else if (!strcmp(argv[*i], "--atol")) {
        tol->atol = atof(argv[++*i]);
        tol->atol_given = true;
    } else {
        return 0;
    }
    return 1;
}

int cmd_bisect(int argc, char **argv) {
    DiagList d;
    diag_init(&d, NULL);
    CommonArgs ca = {0};
    Tolerance tol = {.rtol = 1e-3};
    int status = 1;
    if (args_parse(&ca, argc, argv, "bisect", tolerance_option, &tol, &d))
        status = bisect(&ca, &tol, &d);
    cli_report(&d);
    args_free(&ca);
    diag_free(&d);
    return status;
}
