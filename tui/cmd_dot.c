/* glowc dot: the graph (or the low-level program) after a pipeline step as
 * DOT, SVG or PNG. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/explore_core.h"

typedef struct DotArgs {
    const char *after;  /* a step name; NULL: the last step */
    bool lir;           /* --level=lir */
    const char *output; /* NULL: DOT on stdout */
} DotArgs;

/* The step --after names (N, PASS#K, or a PASS's first run), or the last
 * step; -1 after an error, or when the pipeline stopped before it. */
static int chosen_step(const Session *s, int k, DiagList *d) {
    if (k >= s->nsteps) {
        diag_error(d, NULL, "dot: step %d did not run: the pipeline stopped at step %d", k,
                   s->nsteps - 1);
        return -1;
    }
    return k < 0 ? s->nsteps - 1 : k;
}

/* With --level=lir and no --after: the last step with a low-level program. */
static int last_lir_step(const Session *s, DiagList *d) {
    int k = s->nsteps - 1;
    while (k >= 0 && !s->steps[k].lir)
        k--;
    if (k < 0)
        diag_error(d, NULL, "dot: no step has low-level IR (irgen did not run)");
    return k;
}

static bool emit(const Session *s, int k, const DotArgs *da, DiagList *d) {
    DotFormat fmt = DOT_SOURCE;
    if (da->output && !dot_format_from_path(da->output, &fmt)) {
        diag_error(d, NULL, "dot: cannot tell the format of '%s': name it .dot, .svg or .png",
                   da->output);
        return false;
    }
    StrBuf sb;
    sb_init(&sb);
    DotContext *c = fmt == DOT_SOURCE ? NULL : dot_context_new();
    bool ok = explore_dot(c, s, k, da->lir, fmt, &sb, d);
    dot_context_free(c);
    if (ok && da->output)
        ok = cli_write_file(da->output, sb.data, sb.len, d);
    else if (ok)
        fwrite(sb_str(&sb), 1, sb.len, stdout);
    sb_free(&sb);
    return ok;
}

static int dot_model(CommonArgs *ca, const DotArgs *da, DiagList *d) {
    KnownInput known[MAX_CLI_INPUTS];
    Session *s = args_open_session(ca, "-O2", known, d);
    if (!s)
        return 1;
    bool ok = !da->lir || da->after || session_want_lir(s);
    int after = ok && da->after ? session_find_step(s, da->after, "dot: --after", d) : -1;
    if (da->after && after < 0) {
        diag_append(d, &s->diags);
        session_free(s);
        return 1;
    }
    ok = ok && session_run(s);
    int k = da->lir && !da->after ? last_lir_step(s, d) : chosen_step(s, after, d);
    /* A failed pipeline still shows its last good snapshot on stdout, but
     * leaves no file behind: a written file means a command that worked. */
    ok = k >= 0 && (ok || !da->output) && emit(s, k, da, d) && ok;
    diag_append(d, &s->diags);
    session_free(s);
    return ok ? 0 : 1;
}

static int dot_option(OptionId id, const char *v, void *ctx, DiagList *d) {
    DotArgs *da = ctx;
    if (id == OPT_AFTER) {
        da->after = v;
    } else if (id == OPT_LEVEL) {
        if (strcmp(v, "graph") && strcmp(v, "lir")) {
            diag_error(d, NULL, "dot: --level takes graph or lir, not '%s'", v);
            return -1;
        }
        da->lir = !strcmp(v, "lir");
    } else if (id == OPT_OUTPUT) {
        da->output = v;
    } else {
        return 0;
    }
    return 1;
}

int cmd_dot(int argc, char **argv) {
    DiagList d;
    diag_init(&d, NULL);
    CommonArgs ca = {0};
    DotArgs da = {0};
    int status = 1;
    if (args_parse(&ca, argc, argv, "dot", dot_option, &da, &d))
        status = dot_model(&ca, &da, &d);
    cli_report(&d);
    args_free(&ca);
    diag_free(&d);
    return status;
}
