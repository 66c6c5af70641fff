/* glowc compile: a model to a standalone executable (-o EXE) or to a bundle
 * for linking into another program (--bundle DIR). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/timing.h"
#include "tui/args.h"

/* The bundle's entry point: the model file's base name as a C identifier. */
static void entry_name(const char *model, char *out, size_t len) {
    const char *base = strrchr(model, '/');
    base = base ? base + 1 : model;
    size_t k = 0;
    if (!isalpha((unsigned char)*base) && *base != '_')
        out[k++] = 'm';
    for (; *base && *base != '.' && k + 1 < len; base++)
        out[k++] = isalnum((unsigned char)*base) ? *base : '_';
    out[k] = 0;
}

typedef struct CompileArgs {
    const char *out, *bundle;
    bool no_threads;
    bool time_passes;
} CompileArgs;

static int compile_option(OptionId id, const char *v, void *ctx, DiagList *d) {
    CompileArgs *c = ctx;
    if (id == OPT_OUTPUT)
        c->out = v;
    else if (id == OPT_BUNDLE)
        c->bundle = v;
    else if (id == OPT_NO_THREADS)
        c->no_threads = true;
    else if (id == OPT_TIME_PASSES)
        c->time_passes = true;
    else
        return 0;
    return 1;
}

int cmd_compile(int argc, char **argv) {
    DiagList d;
    diag_init(&d, NULL);
    CommonArgs ca = {0};
    CompileArgs co = {0};
    const char *out, *bundle;
    int status = 1;
    if (!args_parse(&ca, argc, argv, "compile", compile_option, &co, &d))
        goto done;
    out = co.out;
    bundle = co.bundle;
    if (!out == !bundle) {
        diag_error(&d, NULL, "usage: glowc compile MODEL (-o EXE | --bundle DIR)");
        goto done;
    }
    /* An executable's main() allocates its buffers and reads files anyway;
     * it takes --threads 1 at run time for one thread. */
    if (co.no_threads && !bundle) {
        diag_error(&d, NULL, "--no-threads is for bundles (--bundle DIR); an executable runs "
                             "on one thread with its own --threads 1");
        goto done;
    }
    /* The interpreter's kernels allocate their working memory. */
    if (co.no_threads && ca.fallback) {
        diag_error(&d, NULL, "--no-threads cannot take --fallback=interp: the interpreter's "
                             "kernels allocate memory (malloc), which a --no-threads bundle "
                             "never does");
        goto done;
    }
    if (!args_want_compiling(&ca, "compile", &d))
        goto done;
    char entry[128];
    entry_name(ca.model, entry, sizeof entry);
    KnownInput known[MAX_CLI_INPUTS];
    if (!args_ensure_inputs(&ca, &d))
        goto done;
    SessionOptions so = args_session_options(&ca, known);
    so.codegen.output = bundle ? OUTPUT_BUNDLE : OUTPUT_EXECUTABLE;
    so.codegen.entry = bundle ? entry : NULL;
    so.codegen.no_threads = co.no_threads;
    double t0 = timing_now();
    Session *s = args_open_session_with(&ca, &so, "-O2", &d);
    double import_s = timing_now() - t0;
    if (!s)
        goto done;
    bool ok = session_run(s) && s->module;
    if (ok)
        ok = bundle ? s->opt.backend->write_bundle(s->module, bundle, ca.model, &d)
                    : s->opt.backend->write_executable(s->module, out, &d);
    if (ok && bundle)
        printf("wrote %s/%s.o, %s/%s.h, %s/%s.weights\n", bundle, entry, bundle, entry, bundle,
               entry);
    else if (ok)
        printf("wrote %s\n", out);
    if (co.time_passes)
        timing_print(s, import_s, -1);
    diag_append(&d, &s->diags);
    session_free(s);
    status = ok ? 0 : 1;
done:
    cli_report(&d);
    args_free(&ca);
    diag_free(&d);
    return status;
}
