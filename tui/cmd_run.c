/* glowc run: a model on the reference interpreter, inputs from .npy files
 * (or a fixed-seed generator), one .npy per output. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backends/interp/interp.h"
#include "core/file.h"
#include "core/npy.h"
#include "core/print.h"
#include "tui/args.h"
#include "tui/cli.h"
#include "tui/values.h"

/* Output names may hold '/' or ':' (ONNX names are free text). */
static char *output_file_name(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 8;
    char *p = malloc(n);
    snprintf(p, n, "%s/", dir);
    char *q = p + strlen(p);
    for (const char *s = name; *s; s++)
        *q++ = (*s == '/' || *s == '\\') ? '_' : *s;
    strcpy(q, ".npy");
    return p;
}

static void print_output(const char *name, const Tensor *t) {
    StrBuf sb;
    sb_init(&sb);
    print_type(&t->type, &sb);
    sb_append(&sb, " [");
    int64_t n = tensor_numel(t), show = n < 8 ? n : 8;
    for (int64_t i = 0; i < show; i++) {
        if (i)
            sb_append(&sb, ", ");
        print_elem(t, i, &sb);
    }
    sb_append(&sb, n > show ? ", ...]" : "]");
    printf("%s: %s\n", name, sb_str(&sb));
    sb_free(&sb);
}

/* Two output names that differ only where a file name cannot ('a/b' and
 * 'a_b') would be one file. */
static bool distinct_files(const Session *s, FileOut *files, int nout, DiagList *d) {
    for (int i = 0; i < nout; i++) {
        for (int j = 0; j < i; j++) {
            if (strcmp(files[i].path, files[j].path))
                continue;
            diag_error(d, NULL, "outputs '%s' and '%s' would both be written to '%s'",
                       session_output_name(s, j), session_output_name(s, i), files[i].path);
            return false;
        }
    }
    return true;
}

/* Writes every output as <dir>/<name>.npy, all or none (file_write_all). */
static bool run_write_outputs(const Session *s, Tensor *const *outputs, const char *out_dir,
                              DiagList *d) {
    int nout = session_noutputs(s);
    const char *dir = out_dir ? out_dir : ".";
    bool ok = true;
    StrBuf *bufs = calloc((size_t)nout + 1, sizeof(StrBuf));
    FileOut *files = calloc((size_t)nout + 1, sizeof(FileOut));
    for (int i = 0; ok && i < nout; i++) {
        files[i].path = output_file_name(dir, session_output_name(s, i));
        if (!npy_write(outputs[i], &bufs[i])) {
            diag_error(d, NULL, "output '%s': cannot write %s as .npy", session_output_name(s, i),
                       elem_name(outputs[i]->type.elem));
            ok = false;
        }
        files[i].data = bufs[i].data;
        files[i].len = bufs[i].len;
    }
    ok = ok && distinct_files(s, files, nout, d);
    if (ok && out_dir && mkdir(dir, 0777) && errno != EEXIST) {
        diag_error(d, NULL, "cannot create output directory '%s': %s", dir, strerror(errno));
        ok = false;
    }
    ok = ok && file_write_all(files, nout, d);
    for (int i = 0; i < nout; i++) {
        sb_free(&bufs[i]);
        free((char *)files[i].path);
    }
    free(bufs);
    free(files);
    return ok;
}

typedef struct RunOpts {
    const char *out_dir;
    const char *dump_dir; /* --dump-values */
} RunOpts;

static int run_model(CommonArgs *ca, const RunOpts *ro, DiagList *d) {
    Arena *a = arena_new();
    KnownInput known[MAX_CLI_INPUTS];
    /* The graph interpreter runs the imported graph as is by default; a
     * backend that runs the low-level program or native code is a compiler,
     * and compiles with -O2 unless told otherwise. */
    const Backend *b = ca->backend ? backend_find(ca->backend) : NULL;
    const char *dflt = b && (b->runs_lir || b->compiles) ? "-O2" : "-O0";
    bool loaded = (!ro->dump_dir || values_check_dir(ro->dump_dir, d)) &&
                  args_load_inputs(ca, a, d);
    SessionOptions so = args_session_options(ca, known); /* the inputs bind dimensions */
    so.codegen.instrument = ro->dump_dir != NULL;                 /* native code reports its values */
    Session *s = loaded ? args_open_session_with(ca, &so, dflt, d) : NULL;
    bool ok = s && session_run(s);
    if (s && !ok)
        diag_append(d, &s->diags);
    Tensor **inputs = ok ? args_bind_inputs(ca, s, a, true, d) : NULL;
    int nout = ok ? session_noutputs(s) : 0;
    Tensor **outputs = arena_alloc_array(a, (size_t)nout + 1, sizeof(Tensor *));
    ValueSet vs = {0};
    if (ok)
        values_init(&vs, s);
    ok = ok && inputs &&
         session_execute_observed(s, inputs, outputs, a, d, ro->dump_dir ? values_observe : NULL,
                                  &vs);
    ok = ok && (!ro->dump_dir || values_dump(&vs, ro->dump_dir, d));
    ok = ok && run_write_outputs(s, outputs, ro->out_dir, d);
    if (ok && ro->dump_dir)
        printf("%d values written to %s/ (index: %s/values.txt)\n", vs.n, ro->dump_dir,
               ro->dump_dir);
    values_free(&vs);
    for (int i = 0; ok && i < nout; i++)
        print_output(session_output_name(s, i), outputs[i]);
    if (s && ok)
        diag_append(d, &s->diags); /* notes (batch dimension bound, ...) */
    session_free(s);
    arena_destroy(a);
    return ok ? 0 : 1;
}

static int run_option(OptionId id, const char *v, void *ctx, DiagList *d) {
    RunOpts *ro = ctx;
    if (id != OPT_OUTPUT_DIR && id != OPT_DUMP_VALUES)
        return 0;
    *(id == OPT_OUTPUT_DIR ? &ro->out_dir : &ro->dump_dir) = v;
    return 1;
}

int cmd_run(int argc, char **argv) {
    DiagList d;
    diag_init(&d, NULL);
    CommonArgs ca = {0};
    RunOpts ro = {0};
    int status = 1;
    if (args_parse(&ca, argc, argv, "run", run_option, &ro, &d))
        status = run_model(&ca, &ro, &d);
    cli_report(&d);
    args_free(&ca);
    diag_free(&d);
    return status;
}
