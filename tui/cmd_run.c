/* glowc run: a model on the reference interpreter, inputs from .npy files
 * (or a fixed-seed generator), one .npy per output. With --stream the model
 * is compiled once and run once per step, a streamed input's slice fed to
 * each step and --carry's outputs fed back as the next step's inputs (a
 * recurrent model's state): each output is written stacked over the steps. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backends/interp/interp.h"
#include "core/file.h"
#include "core/npy.h"
#include "core/print.h"
#include "tui/timing.h"
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
    const char *carry_out[MAX_CLI_INPUTS], *carry_in[MAX_CLI_INPUTS]; /* --carry OUT=IN */
    int ncarry;
    bool time_passes;
} RunOpts;

/* Step k of a --stream value: a view of its k-th slice on the leading axis. */
static Tensor *step_slice(const Tensor *full, int64_t k, Arena *a) {
    Tensor *t = arena_alloc(a, sizeof *t);
    *t = (Tensor){.type = full->type};
    t->type.rank = full->type.rank - 1;
    for (int i = 0; i < t->type.rank; i++)
        t->type.dims[i] = full->type.dims[i + 1];
    t->data = (char *)full->data + (size_t)k * type_bytes(&t->type);
    return t;
}

/* The steps' values of one output, stacked on a new leading axis. */
static Tensor *stack_steps(Tensor **per_step, int64_t steps, Arena *a) {
    Type t = per_step[0]->type;
    for (int i = t.rank; i > 0; i--)
        t.dims[i] = t.dims[i - 1];
    t.dims[0] = steps;
    t.rank++;
    Tensor *all = tensor_new(a, &t);
    size_t one = type_bytes(&per_step[0]->type);
    for (int64_t k = 0; all && k < steps; k++)
        memcpy((char *)all->data + (size_t)k * one, per_step[k]->data, one);
    return all;
}

static int find_input(const Session *s, const char *name) {
    for (int i = 0; i < session_ninputs(s); i++)
        if (!strcmp(session_input_name(s, i), name))
            return i;
    return -1;
}

static int find_output(const Session *s, const char *name) {
    for (int i = 0; i < session_noutputs(s); i++)
        if (!strcmp(session_output_name(s, i), name))
            return i;
    return -1;
}

/* --stream: the number of steps (every stream value's leading axis, which
 * must agree); each stream input is given to the compiler as its first
 * step's slice. 0 without --stream; -1 after an error. */
static int64_t stream_steps(CommonArgs *ca, const RunOpts *ro, Tensor **full, Arena *a,
                            DiagList *d) {
    int64_t steps = 0;
    for (int i = 0; i < ca->ninputs; i++) {
        if (!ca->input_stream[i])
            continue;
        const Tensor *t = ca->input_values[i];
        if (t->type.rank < 1 || t->type.dims[0] < 1) {
            diag_error(d, ca->input_files[i], "--stream %s: the value needs a leading step axis "
                       "of at least one step", ca->input_names[i]);
            return -1;
        }
        if (steps && t->type.dims[0] != steps) {
            diag_error(d, ca->input_files[i], "--stream %s has %lld steps; the first --stream has "
                       "%lld", ca->input_names[i], (long long)t->type.dims[0], (long long)steps);
            return -1;
        }
        steps = t->type.dims[0];
        full[i] = ca->input_values[i];
        ca->input_values[i] = step_slice(full[i], 0, a);
    }
    if (ro->ncarry && !steps) {
        diag_error(d, NULL, "--carry needs --stream (the steps are its value's leading axis)");
        return -1;
    }
    if (steps && ro->dump_dir) {
        diag_error(d, NULL, "--dump-values writes one run's values; it does not take --stream");
        return -1;
    }
    return steps;
}

/* The inputs that change from step to step must not have been read by the
 * compiler (a value that decides a shape or a branch is compiled in), and
 * each --carry names an output and an input of the same type. */
static bool check_stream(const CommonArgs *ca, const RunOpts *ro, const Session *s,
                         const bool *read, int *carry_from, int *carry_to, DiagList *d) {
    for (int i = 0; i < ca->ninputs; i++) {
        bool carried = false;
        for (int c = 0; c < ro->ncarry; c++)
            carried |= !strcmp(ro->carry_in[c], ca->input_names[i]);
        if ((ca->input_stream[i] || carried) && read[i]) {
            diag_error(d, NULL, "input '%s' is read at compile time (it decides a shape or a "
                       "branch), so it cannot change from step to step", ca->input_names[i]);
            return false;
        }
    }
    for (int c = 0; c < ro->ncarry; c++) {
        carry_from[c] = find_output(s, ro->carry_out[c]);
        carry_to[c] = find_input(s, ro->carry_in[c]);
        if (carry_from[c] < 0 || carry_to[c] < 0) {
            diag_error(d, NULL, "--carry %s=%s: the model has no %s '%s'", ro->carry_out[c],
                       ro->carry_in[c], carry_from[c] < 0 ? "output" : "input",
                       carry_from[c] < 0 ? ro->carry_out[c] : ro->carry_in[c]);
            return false;
        }
        for (int e = 0; e < c; e++)
            if (carry_to[e] == carry_to[c]) {
                diag_error(d, NULL, "--carry: input '%s' is carried into twice", ro->carry_in[c]);
                return false;
            }
        for (int i = 0; i < ca->ninputs; i++)
            if (ca->input_stream[i] && !strcmp(ca->input_names[i], ro->carry_in[c])) {
                diag_error(d, NULL, "--carry %s=%s: '%s' is a --stream input", ro->carry_out[c],
                           ro->carry_in[c], ro->carry_in[c]);
                return false;
            }
    }
    return true;
}

/* Runs `steps` steps (--stream), each output stacked over the steps in
 * outputs; prints every step's outputs. */
static bool run_steps(CommonArgs *ca, const RunOpts *ro, Session *s, Tensor **inputs,
                      Tensor **full, int64_t steps, const int *carry_from, const int *carry_to,
                      Tensor **outputs, Arena *a, DiagList *d) {
    int nout = session_noutputs(s);
    Tensor ***per = arena_alloc_array(a, (size_t)nout + 1, sizeof(Tensor **));
    for (int j = 0; j < nout; j++)
        per[j] = arena_alloc_array(a, (size_t)steps, sizeof(Tensor *));
    Tensor **out = arena_alloc_array(a, (size_t)nout + 1, sizeof(Tensor *));
    for (int64_t k = 0; k < steps; k++) {
        for (int i = 0; i < ca->ninputs; i++)
            if (ca->input_stream[i])
                inputs[find_input(s, ca->input_names[i])] = step_slice(full[i], k, a);
        if (!session_execute(s, inputs, out, a, d))
            return false;
        for (int c = 0; c < ro->ncarry; c++) {
            const Type *want = session_input_type(s, carry_to[c]);
            if (!type_equal(&out[carry_from[c]]->type, want)) {
                char t1[TYPE_STR_MAX], t2[TYPE_STR_MAX];
                diag_error(d, NULL, "--carry %s=%s: the output is %s, the input %s",
                           ro->carry_out[c], ro->carry_in[c], type_str(&out[carry_from[c]]->type, t1),
                           type_str(want, t2));
                return false;
            }
            inputs[carry_to[c]] = out[carry_from[c]];
        }
        for (int j = 0; j < nout; j++) {
            per[j][k] = out[j];
            printf("[%lld] ", (long long)k);
            print_output(session_output_name(s, j), out[j]);
        }
        out = arena_alloc_array(a, (size_t)nout + 1, sizeof(Tensor *));
    }
    for (int j = 0; j < nout; j++) {
        if (per[j][0]->type.rank >= MAX_RANK) {
            diag_error(d, NULL, "output '%s' has rank %d: stacked over the steps it would exceed "
                       "%d", session_output_name(s, j), per[j][0]->type.rank, MAX_RANK);
            return false;
        }
        if (!(outputs[j] = stack_steps(per[j], steps, a))) {
            diag_error(d, NULL, "out of memory stacking output '%s'", session_output_name(s, j));
            return false;
        }
    }
    return true;
}

static int run_model(CommonArgs *ca, const RunOpts *ro, DiagList *d) {
    Arena *a = arena_new();
    KnownInput known[MAX_CLI_INPUTS];
    bool read[MAX_CLI_INPUTS] = {false};
    Tensor *full[MAX_CLI_INPUTS] = {NULL};
    int carry_from[MAX_CLI_INPUTS], carry_to[MAX_CLI_INPUTS];
    /* The graph interpreter runs the imported graph as is by default; a
     * backend that runs the low-level program or native code is a compiler,
     * and compiles with -O2 unless told otherwise. */
    const Backend *b = ca->backend ? backend_find(ca->backend) : NULL;
    const char *dflt = b && (b->runs_lir || b->compiles) ? "-O2" : "-O0";
    bool loaded = (!ro->dump_dir || values_check_dir(ro->dump_dir, d)) &&
                  args_load_inputs(ca, a, d);
    int64_t steps = loaded ? stream_steps(ca, ro, full, a, d) : -1;
    loaded = loaded && steps >= 0;
    SessionOptions so = args_session_options(ca, known); /* the inputs bind dimensions */
    for (int i = 0; i < ca->ninputs; i++)
        known[i].read = &read[i];
    so.codegen.instrument = ro->dump_dir != NULL;                 /* native code reports its values */
    double t0 = timing_now();
    Session *s = loaded ? args_open_session_with(ca, &so, dflt, d) : NULL;
    double import_s = timing_now() - t0, first_s = -1;
    bool ok = s && session_run(s);
    if (s && !ok)
        diag_append(d, &s->diags);
    ok = ok && (!steps || check_stream(ca, ro, s, read, carry_from, carry_to, d));
    Tensor **inputs = ok ? args_bind_inputs(ca, s, a, true, d) : NULL;
    int nout = ok ? session_noutputs(s) : 0;
    Tensor **outputs = arena_alloc_array(a, (size_t)nout + 1, sizeof(Tensor *));
    ValueSet vs = {0};
    if (ok)
        values_init(&vs, s);
    if (steps)
        ok = ok && inputs &&
             run_steps(ca, ro, s, inputs, full, steps, carry_from, carry_to, outputs, a, d);
    else {
        t0 = timing_now();
        ok = ok && inputs &&
             session_execute_observed(s, inputs, outputs, a, d,
                                      ro->dump_dir ? values_observe : NULL, &vs);
        first_s = timing_now() - t0;
    }
    if (ok && ro->time_passes)
        timing_print(s, import_s, first_s);
    ok = ok && (!ro->dump_dir || values_dump(&vs, ro->dump_dir, d));
    ok = ok && run_write_outputs(s, outputs, ro->out_dir, d);
    if (ok && ro->dump_dir)
        printf("%d values written to %s/ (index: %s/values.txt)\n", vs.n, ro->dump_dir,
               ro->dump_dir);
    values_free(&vs);
    for (int i = 0; ok && !steps && i < nout; i++)
        print_output(session_output_name(s, i), outputs[i]);
    if (s && ok)
        diag_append(d, &s->diags); /* notes (batch dimension bound, ...) */
    session_free(s);
    arena_destroy(a);
    return ok ? 0 : 1;
}

static int run_option(OptionId id, const char *v, void *ctx, DiagList *d) {
    RunOpts *ro = ctx;
    if (id == OPT_CARRY) {
        const char *eq = strchr(v, '=');
        if (!eq || eq == v || !eq[1]) {
            diag_error(d, NULL, "--carry expects OUT=IN (an output and an input), got '%s'", v);
            return -1;
        }
        if (ro->ncarry == MAX_CLI_INPUTS) {
            diag_error(d, NULL, "--carry: more than %d given", MAX_CLI_INPUTS);
            return -1;
        }
        ro->carry_out[ro->ncarry] = strndup(v, (size_t)(eq - v));
        ro->carry_in[ro->ncarry++] = eq + 1;
        return 1;
    }
    if (id == OPT_TIME_PASSES) {
        ro->time_passes = true;
        return 1;
    }
    if (id != OPT_OUTPUT_DIR && id != OPT_DUMP_VALUES)
        return 0;
    *(id == OPT_OUTPUT_DIR ? &ro->out_dir : &ro->dump_dir) = v;
    return 1;
}

int cmd_run(int argc, char **argv) {
    DiagList d;
    diag_init(&d, NULL);
    CommonArgs ca = {.runs_native = true};
    RunOpts ro = {0};
    int status = 1;
    if (args_parse(&ca, argc, argv, "run", run_option, &ro, &d))
        status = run_model(&ca, &ro, &d);
    cli_report(&d);
    for (int c = 0; c < ro.ncarry; c++)
        free((char *)ro.carry_out[c]);
    args_free(&ca);
    diag_free(&d);
    return status;
}
