/* glowc bench: times inference runs after a warm-up and prints the median and
 * the minimum, for one backend (the interpreter, until code generation
 * lands). Inputs come from --input or the fixed-seed generator. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/interp/interp.h"
#include "tui/args.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int bench(CommonArgs *ca, int iters, DiagList *d) {
    Arena *a = arena_new();
    KnownInput known[MAX_CLI_INPUTS];
    Session *s = args_load_inputs(ca, a, d) ? args_open_session(ca, "-O2", known, d) : NULL;
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
    }
    if (inputs) {
        qsort(times, (size_t)iters, sizeof *times, cmp_double);
        double median = iters % 2 ? times[iters / 2] : (times[iters / 2 - 1] + times[iters / 2]) / 2;
        printf("%s: %s backend, pipeline %s, compile %.1f ms\n", ca->model,
               s->opt.backend->name, ca->pipeline ? ca->pipeline : "-O2", compile_ms);
        printf("median %.3f ms, min %.3f ms\n", median, times[0]);
        status = 0;
    }
done:
    free(times);
    session_free(s);
    arena_destroy(a);
    return status;
}

static int iters_option(OptionId id, const char *v, void *ctx, DiagList *d) {
    if (id != OPT_ITERS)
        return 0;
    long long n;
    if (!cli_parse_int(v, 1, 100000, &n)) {
        diag_error(d, NULL, "bench: --iters takes 1 to 100000, not '%s'", v);
        return -1;
    }
    *(int *)ctx = (int)n;
    return 1;
}

int cmd_bench(int argc, char **argv) {
    DiagList d;
    diag_init(&d, NULL);
    CommonArgs ca = {0};
    int iters = 10, status = 1;
    if (args_parse(&ca, argc, argv, "bench", iters_option, &iters, &d))
        status = bench(&ca, iters, &d);
    cli_report(&d);
    args_free(&ca);
    diag_free(&d);
    return status;
}
