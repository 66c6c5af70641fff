/* glowc bench: times inference runs after a warm-up and prints the median and
 * the minimum, for one backend (the interpreter, until code generation
 * lands). Inputs come from --input or the fixed-seed generator. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "backends/interp/interp.h"
#include "tui/timing.h"
#include "tui/args.h"
#include "tui/cli.h"
#include "tui/profile.h"

typedef struct BenchOpts {
    int iters;
    bool per_node;     /* --per-node */
    bool flops;        /* --flops */
    const char *trace; /* --trace FILE.json */
    bool time_passes;
} BenchOpts;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* --per-node and --trace: the same compiled code, its probe on, after the
 * end-to-end runs (probe off) it is measured against. */
static bool per_node(Session *s, Tensor *const *inputs, const BenchOpts *bo, double e2e_ms,
                     DiagList *d) {
    const Backend *be = s->opt.backend;
    BackendExec *e = session_exec(s, d);
    Profile *p = e ? profile_run(be, e, inputs, 0, bo->iters, bo->trace != NULL, d) : NULL;
    if (!p)
        return false;
    bool ok = true;
    if (bo->per_node) {
        double peak = be->fma_peak(e);
        printf("FMA peak %.1f GFLOP/s (%d threads, measured with a vector-FMA loop)\n", peak,
               be->threads(e));
        StrBuf out;
        sb_init(&out);
        profile_print(p, peak, e2e_ms, &out);
        fputs(sb_str(&out), stdout);
        sb_free(&out);
    }
    if (bo->trace) {
        ok = profile_write_trace(p, bo->trace, d);
        if (ok)
            printf("trace of one run written to %s\n", bo->trace);
    }
    profile_free(p);
    return ok;
}

static int bench(CommonArgs *ca, const BenchOpts *bo, DiagList *d) {
    int iters = bo->iters;
    Arena *a = arena_new();
    KnownInput known[MAX_CLI_INPUTS];
    const Backend *b = ca->backend ? backend_find(ca->backend) : NULL;
    bool profile = bo->per_node || bo->trace;
    if (profile && !(b && b->compiles)) {
        diag_error(d, NULL, "bench: --per-node and --trace time native code: add --backend=cpu");
        arena_destroy(a);
        return 1;
    }
    struct stat st;
    if (bo->trace && !stat(bo->trace, &st) && S_ISDIR(st.st_mode)) {
        diag_error(d, NULL, "bench: --trace '%s' is a directory, not a file", bo->trace);
        arena_destroy(a);
        return 1;
    }
    bool loaded = args_load_inputs(ca, a, d);
    SessionOptions so = args_session_options(ca, known); /* the inputs bind dimensions */
    so.codegen.instrument = profile;
    double t_open = now_ms();
    Session *s = loaded ? args_open_session_with(ca, &so, "-O2", d) : NULL;
    double import_ms = now_ms() - t_open, first_ms = -1;
    int status = 1;
    double t0 = now_ms();
    bool ok = s && session_run(s);
    double compile_ms = now_ms() - t0;
    if (s && !ok)
        diag_append(d, &s->diags);
    Tensor **inputs = ok ? args_bind_inputs(ca, s, a, false, d) : NULL;
    double *times = calloc((size_t)iters + 1, sizeof *times);
    for (int i = -1; inputs && i < iters; i++) { /* i = -1: the warm-up */
        Arena *run = arena_new();
        Tensor **outputs =
            arena_alloc_array(run, (size_t)session_noutputs(s) + 1, sizeof(Tensor *));
        double start = now_ms();
        bool ran = session_execute(s, inputs, outputs, run, d);
        double ms = now_ms() - start;
        arena_destroy(run);
        if (!ran)
            goto done;
        if (i >= 0)
            times[i] = ms;
        else
            first_ms = ms;
    }
    if (inputs && bo->time_passes)
        timing_print(s, import_ms / 1000, first_ms / 1000);
    if (inputs) {
        qsort(times, (size_t)iters, sizeof *times, cmp_double);
        double median = iters % 2 ? times[iters / 2] : (times[iters / 2 - 1] + times[iters / 2]) / 2;
        printf("%s: %s backend, pipeline %s, compile %.1f ms\n", ca->model,
               s->opt.backend->name, ca->pipeline ? ca->pipeline : "-O2", compile_ms);
        printf("median %.3f ms, min %.3f ms\n", median, times[0]);
        if (bo->flops) {
            double f = profile_program_flops(s->lir);
            printf("flops %.4f GFLOP per run, %.1f GFLOP/s at the median\n", f * 1e-9,
                   median > 0 ? f * 1e-6 / median : 0);
        }
        status = profile && !per_node(s, inputs, bo, median, d) ? 1 : 0;
    }
done:
    free(times);
    session_free(s);
    arena_destroy(a);
    return status;
}

static int iters_option(OptionId id, const char *v, void *ctx, DiagList *d) {
    BenchOpts *bo = ctx;
    if (id == OPT_PER_NODE) {
        bo->per_node = true;
        return 1;
    }
    if (id == OPT_FLOPS) {
        bo->flops = true;
        return 1;
    }
    if (id == OPT_TIME_PASSES) {
        bo->time_passes = true;
        return 1;
    }
    if (id == OPT_TRACE) {
        bo->trace = v;
        return 1;
    }
    if (id != OPT_ITERS)
        return 0;
    long long n;
    if (!cli_parse_int(v, 1, 100000, &n)) {
        diag_error(d, NULL, "bench: --iters takes 1 to 100000, not '%s'", v);
        return -1;
    }
    bo->iters = (int)n;
    return 1;
}

int cmd_bench(int argc, char **argv) {
    DiagList d;
    diag_init(&d, NULL);
    CommonArgs ca = {.runs_native = true};
    BenchOpts bo = {.iters = 10};
    int status = 1;
    if (args_parse(&ca, argc, argv, "bench", iters_option, &bo, &d))
        status = bench(&ca, &bo, &d);
    cli_report(&d);
    args_free(&ca);
    diag_free(&d);
    return status;
}
