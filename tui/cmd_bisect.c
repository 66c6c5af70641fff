/* glowc bisect: runs the pipeline one pass at a time, executes the graph
 * after every pass that changed it, and names the first pass whose outputs
 * leave the imported graph's beyond tolerance -- with the largest
 * difference and the lines of the graph that pass changed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/explore_core.h"

static int bisect(CommonArgs *ca, const Tolerance *tol, DiagList *d) {
    Arena *a = arena_new();
    KnownInput known[MAX_CLI_INPUTS];
    Session *s = args_load_inputs(ca, a, d) ? args_open_session(ca, "-O2", known, d) : NULL;
    Tensor **inputs = s ? args_bind_inputs(ca, s, a, true, d) : NULL;
    int found = -1;
    if (inputs) {
        StrBuf out;
        sb_init(&out);
        found = explore_bisect_session(s, inputs, tol, &out, d);
        fputs(sb_str(&out), stdout);
        sb_free(&out);
        if (s && found >= 0)
            diag_append(d, &s->diags); /* why a failing pass failed; a --break-pass that did nothing */
    }
    session_free(s);
    arena_destroy(a);
    return found == 0 ? 0 : 1;
}

static int tolerance_option(OptionId id, const char *v, void *ctx, DiagList *d) {
    if (id != OPT_RTOL && id != OPT_ATOL)
        return 0;
    return tolerance_set(ctx, id == OPT_RTOL, v, "bisect", d) ? 1 : -1;
}

int cmd_bisect(int argc, char **argv) {
    DiagList d;
    diag_init(&d, NULL);
    CommonArgs ca = {.runs_native = true};
    Tolerance tol = {.rtol = 1e-3};
    int status = 1;
    if (args_parse(&ca, argc, argv, "bisect", tolerance_option, &tol, &d))
        status = bisect(&ca, &tol, &d);
    cli_report(&d);
    args_free(&ca);
    diag_free(&d);
    return status;
}
