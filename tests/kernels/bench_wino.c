/* Micro-benchmark of libjit_winograd_conv_f32 against libjit_conv_f32 on the
 * 3x3 stride-1 convolutions of ResNet-18/50, DenseNet-121, SqueezeNet and
 * Inception-v3 (batch 1,
 * relu fused), single-threaded: minimum time over repeated runs, and the
 * direct convolution's GFLOP/s (2 flops per multiply-add) for both, so the
 * winograd column is the effective rate.
 *
 * --cold writes 64 MB between runs, so that weights come from memory as in
 * a model (whose other layers evict them), not from the cache.
 *
 * --split T also times the winograd kernel's shares of T threads alone, as
 * bench_conv --split does: the largest bounds the T-thread time, and their
 * sum over the whole call's time is the work the split repeats. Where the
 * threads share the input transform (k_wino.c: shared_v), a share is
 * timed twice -- building the transform alone, and reading one already
 * built -- and counted as the second plus 1/T of the difference: the part
 * of the transform that T threads claiming its channels each build.
 *
 * usage: bench_wino [--f2] [--cold] [--reps N] [--only I] (the I-th shape alone) [--split T] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cpu/libjit/kernels.h"
#include "core/winograd.h"
#include "tests/kernels/harness.h"

typedef struct Shape {
    int64_t c, h, m;
} Shape;

static const Shape shapes[] = {
    {64, 56, 64}, {128, 28, 128}, {256, 14, 256}, {512, 7, 512}, {128, 56, 32},
    {128, 28, 32}, {128, 14, 32}, {128, 7, 32}, {32, 28, 32}, {16, 28, 16},
    {16, 55, 64}, {32, 27, 128}, {48, 13, 192}, {64, 13, 256},
    /* Inception-v3 (its 80 -> 192 at 71x71 has no padding; timed padded). */
    {32, 147, 64}, {64, 35, 96}, {96, 35, 96}, {448, 8, 384},
};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

enum { EVICT_BYTES = 64 << 20 };

/* How a share meets the buffer the threads share: none (one thread), to
 * build from scratch, or built (by the other threads). */
typedef enum { SHARE_NONE, SHARE_BUILD, SHARE_BUILT } ShareMode;

/* Units [lo, hi) (hi < 0: all). */
static double time_range(KernelFn fn, WorkFn work, const Desc *d, void *const *ops, int reps,
                         char *evict, int64_t lo, int64_t hi, ShareMode mode) {
    LjShared shared = {0};
    LjScratch sc = {.shared = mode == SHARE_NONE ? NULL : &shared};
    double best = 1e30, start = now();
    int64_t n = hi < 0 ? work(d->w) : hi;
    if (mode == SHARE_BUILT) { /* build it once; then every claim is taken and done */
        lj_shared_reset(&shared);
        fn(d->w, ops, lo, n, &sc);
    }
    for (int r = 0; r < 2000 && (r < reps || now() - start < 0.3); r++) {
        if (mode == SHARE_BUILD)
            lj_shared_reset(&shared);
        if (mode == SHARE_BUILT) {
            atomic_store(&shared.next, INT64_MAX / 2);
            atomic_store(&shared.done, INT64_MAX / 2);
        }
        if (evict)
            memset(evict, r, EVICT_BYTES);
        double t0 = now();
        fn(d->w, ops, lo, n, &sc);
        double t = now() - t0;
        best = t < best ? t : best;
    }
    lj_scratch_release(&sc);
    lj_shared_free(&shared);
    return best;
}

static double time_min(KernelFn fn, WorkFn work, const Desc *d, void *const *ops, int reps,
                       char *evict) {
    return time_range(fn, work, d, ops, reps, evict, 0, -1, SHARE_NONE);
}

/* The winograd kernel's largest share of `threads` and the shares' sum;
 * own[]: the same if each share built all it reads (no shared buffer). */
static void time_shares(const Desc *d, void *const *ops, int reps, char *evict, int threads,
                        double *most, double *sum, double own[2]) {
    int64_t n = libjit_winograd_conv_f32_work(d->w), per = (n + threads - 1) / threads;
    *most = *sum = own[0] = own[1] = 0;
    for (int t = 0; t < threads; t++) {
        int64_t lo = per * t, hi = lo + per < n ? lo + per : n;
        double share = 0;
        if (lo < hi) {
            double build = time_range(libjit_winograd_conv_f32, libjit_winograd_conv_f32_work, d,
                                      ops, reps, evict, lo, hi, SHARE_BUILD);
            double built = time_range(libjit_winograd_conv_f32, libjit_winograd_conv_f32_work, d,
                                      ops, reps, evict, lo, hi, SHARE_BUILT);
            share = built + (build - built) / threads;
            own[0] = build > own[0] ? build : own[0];
            own[1] += build;
        }
        *most = share > *most ? share : *most;
        *sum += share;
    }
}

int main(int argc, char **argv) {
    int reps = 20, only = -1, split = 0;
    char *evict = NULL;
    const WinoTransform *t = &wino_f4;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--f2"))
            t = &wino_f2;
        else if (!strcmp(argv[i], "--cold"))
            evict = malloc(EVICT_BYTES);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--split") && i + 1 < argc)
            split = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
    }
    printf("%-22s %10s %10s %8s", "c x h x h -> m", "direct ms", "wino ms", "speedup");
    if (split)
        printf(" %8s %7s %7s | unshared: %7s %7s", "share ms", "bound", "repeat", "bound",
               "repeat");
    printf("\n");
    for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
        const Shape *s = &shapes[k];
        if (only >= 0 && (size_t)only != k)
            continue;
        int64_t a2 = t->alpha * t->alpha;
        Desc dc, dw;
        desc_begin(&dc, NK_CONV, 1);
        desc_operand(&dc, 4, (int64_t[]){1, s->m, s->h, s->h});
        desc_operand(&dc, 4, (int64_t[]){1, s->c, s->h, s->h});
        desc_operand(&dc, 4, (int64_t[]){s->m, s->c, 3, 3});
        desc_operand(&dc, 1, (int64_t[]){s->m});
        desc_ints(&dc, AK_kernel, 2, (int64_t[]){3, 3});
        desc_ints(&dc, AK_strides, 2, (int64_t[]){1, 1});
        desc_ints(&dc, AK_pads, 4, (int64_t[]){1, 1, 1, 1});
        desc_ints(&dc, AK_dilations, 2, (int64_t[]){1, 1});
        desc_int(&dc, AK_group, 1);
        desc_act(&dc, "relu");
        desc_begin(&dw, NK_WINOGRAD_CONV, 1);
        desc_operand(&dw, 4, (int64_t[]){1, s->m, s->h, s->h});
        desc_operand(&dw, 4, (int64_t[]){1, s->c, s->h, s->h});
        desc_operand(&dw, 3, (int64_t[]){a2, s->m, s->c});
        desc_operand(&dw, 1, (int64_t[]){s->m});
        desc_ints(&dw, AK_pads, 4, (int64_t[]){1, 1, 1, 1});
        desc_act(&dw, "relu");
        size_t ny = (size_t)(s->m * s->h * s->h), nx = (size_t)(s->c * s->h * s->h);
        float *y = malloc(ny * 4), *x = malloc(nx * 4), *w = malloc((size_t)(s->m * s->c * 9) * 4);
        float *u = malloc((size_t)(a2 * s->m * s->c) * 4), *b = calloc((size_t)s->m, 4);
        for (size_t i = 0; i < nx; i++)
            x[i] = (float)((double)rand() / RAND_MAX - 0.5);
        for (int64_t i = 0; i < s->m * s->c * 9; i++)
            w[i] = (float)((double)rand() / RAND_MAX - 0.5);
        winograd_filter(t, w, s->m, s->c, u);
        void *oc[4] = {y, x, w, b}, *ow[4] = {y, x, u, b};
        double td = only >= 0 ? 1 : time_min(libjit_conv_f32, libjit_conv_f32_work, &dc, oc, reps, evict);
        double tw = time_min(libjit_winograd_conv_f32, libjit_winograd_conv_f32_work, &dw, ow, reps,
                             evict);
        char name[64];
        snprintf(name, sizeof name, "%lldx%lldx%lld -> %lld", (long long)s->c, (long long)s->h,
                 (long long)s->h, (long long)s->m);
        printf("%-22s %10.3f %10.3f %8.2f", name, td * 1e3, tw * 1e3, td / tw);
        if (split) {
            double most, sum, own[2];
            time_shares(&dw, ow, reps, evict, split, &most, &sum, own);
            printf(" %8.3f %6.2fx %+6.1f%% | %16.2fx %+6.1f%%", most * 1e3, tw / most,
                   100 * (sum - tw) / tw, tw / own[0], 100 * (own[1] - tw) / tw);
        }
        printf("\n");
        free(y), free(x), free(w), free(u), free(b);
    }
    free(evict);
    return 0;
}
