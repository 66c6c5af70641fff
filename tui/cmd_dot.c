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

/* The step --after names (its first occurrence), or the last step. */
static int chosen_step(const Session *s, const DotArgs *da, DiagList *d) {
    if (!da->after)
        return s->nsteps - 1;
    for (int k = 0; k < s->nsteps; k++)
        if (!strcmp(s->steps[k].name, da->after))
            return k;
    StrBuf sb;
    sb_init(&sb);
    for (int k = 0; k < s->nsteps; k++)
        sb_printf(&sb, "%s%s", k ? ", " : "", s->steps[k].name);
    diag_error(d, NULL, "dot: --after=%s: no such step in the pipeline; the steps are: %s",
               da->after, sb_str(&sb));
    sb_free(&sb);
    return -1;
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
    bool ok = (!da->lir || da->after || session_want_lir(s)) && session_run(s);
    int k = da->lir && !da->after ? last_lir_step(s, d) : chosen_step(s, da, d);
    /* A failed pipeline still shows its last good snapshot on stdout, but
     * leaves no file behind: a written file means a command that worked. */
    ok = k >= 0 && (ok || !da->output) && emit(s, k, da, d) && ok;
    diag_append(d, &s->diags);
    session_free(s);
    return ok ? 0 : 1;
}

int cmd_dot(int argc, char **argv) {
    DiagList d;
    diag_init(&d, NULL);
    CommonArgs ca = {0};
    DotArgs da = {0};
    int status = 1;
    for (int i = 1; i < argc; i++) {
        bool bad;
        const char *a = argv[i];
        if (args_common(&ca, argc, argv, &i, &bad, &d)) {
            if (bad)
                goto done;
        } else if (!strncmp(a, "--after=", 8)) {
            da.after = a + 8;
        } else if (!strcmp(a, "--level=graph") || !strcmp(a, "--level=lir")) {
            da.lir = !strcmp(a, "--level=lir");
        } else if (!strncmp(a, "--level=", 8)) {
            diag_error(&d, NULL, "dot: --level takes graph or lir, not '%s'", a + 8);
            goto done;
        } else if (!strcmp(a, "-o") && i + 1 < argc) {
            da.output = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            diag_error(&d, NULL, "dot: unknown option '%s' (or missing value)", a);
            goto done;
        } else if (!ca.model) {
            ca.model = a;
        } else {
            diag_error(&d, NULL, "dot: more than one model given");
            goto done;
        }
    }
    if (!ca.model)
        diag_error(&d, NULL, "dot: no model given");
    else
        status = dot_model(&ca, &da, &d);
done:
    cli_report(&d);
    args_free(&ca);
    diag_free(&d);
    return status;
}
