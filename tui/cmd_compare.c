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
#include "tui/quant_report.h"
#include "tui/values.h"

/* --quantize: where accuracy is lost (quant_report.h). */
static int compare_quantized(CommonArgs *ca, DiagList *d) {
    QuantReport r;
    bool ok = quant_report_run(ca, true, &r, d);
    if (ok) {
        StrBuf out;
        sb_init(&out);
        quant_report_print(&r, ca->quantize, &out);
        fputs(sb_str(&out), stdout);
        sb_free(&out);
    }
    quant_report_free(&r);
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
