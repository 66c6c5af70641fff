/* Micro-benchmark of libjit_conv_f32 against the interpreter's conv on the
 * convolutions of ResNet-50 and MobileNet-V2 at batch 1 (as glowc -O2 leaves
 * them: batch norms folded, activations fused), single-threaded. Reports the
 * minimum time over repeated runs, as GFLOP/s (2 flops per multiply-add).
 *
 * usage: bench_conv [resnet50|resnet18|mobilenet_v2|efficientnet_b0|densenet121|inception_v3|all] [--no-interp] [--reps N]
 *                   [--only I] (the I-th shape of the table alone, for a profiler)
 *                   [--split T] (each thread's share alone, see split_row)
 *                   [--amx] (libjit_conv_amx_f32: AMX's bf16 tiles, where the CPU has them)
 *                   [--cold] (the weights flushed from the caches before every run)
 *
 * --split T times, one after the other on this thread, the pieces the
 * runtime would hand T threads (lj_piece_bounds), a thread's share the sum
 * of its range's pieces, each a call of its own (what the threads share
 * built once per call: time_pieces): the largest share's
 * time bounds the T-thread time from below, whatever else runs on the
 * machine, and the shares' sum over the whole call's time is the work the
 * split repeats (packing or phase planes built by several threads). So the
 * split's imbalance and overhead are measured on a loaded machine, where T
 * threads' wall time is not. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cpu/libjit/kernels.h"
#include "tests/kernels/harness.h"

typedef struct Shape {
    const char *model;
    int count; /* times it occurs in the model */
    int64_t c, h, m, k, stride, pad, group;
    const char *act;
} Shape;

/* From `glowc opt -O2 MODEL.onnx` (square inputs and kernels throughout). */
static const Shape shapes[] = {
    {"resnet50", 1, 3, 224, 64, 7, 2, 3, 1, "relu"},
    {"resnet50", 1, 64, 56, 64, 1, 1, 0, 1, "relu"},
    {"resnet50", 3, 64, 56, 64, 3, 1, 1, 1, "relu"},
    {"resnet50", 4, 64, 56, 256, 1, 1, 0, 1, NULL},
    {"resnet50", 2, 256, 56, 64, 1, 1, 0, 1, "relu"},
    {"resnet50", 1, 256, 56, 128, 1, 1, 0, 1, "relu"},
    {"resnet50", 1, 128, 56, 128, 3, 2, 1, 1, "relu"},
    {"resnet50", 4, 128, 28, 512, 1, 1, 0, 1, NULL},
    {"resnet50", 1, 256, 56, 512, 1, 2, 0, 1, NULL},
    {"resnet50", 3, 512, 28, 128, 1, 1, 0, 1, "relu"},
    {"resnet50", 3, 128, 28, 128, 3, 1, 1, 1, "relu"},
    {"resnet50", 1, 512, 28, 256, 1, 1, 0, 1, "relu"},
    {"resnet50", 1, 256, 28, 256, 3, 2, 1, 1, "relu"},
    {"resnet50", 6, 256, 14, 1024, 1, 1, 0, 1, NULL},
    {"resnet50", 1, 512, 28, 1024, 1, 2, 0, 1, NULL},
    {"resnet50", 5, 1024, 14, 256, 1, 1, 0, 1, "relu"},
    {"resnet50", 5, 256, 14, 256, 3, 1, 1, 1, "relu"},
    {"resnet50", 1, 1024, 14, 512, 1, 1, 0, 1, "relu"},
    {"resnet50", 1, 512, 14, 512, 3, 2, 1, 1, "relu"},
    {"resnet50", 3, 512, 7, 2048, 1, 1, 0, 1, NULL},
    {"resnet50", 1, 1024, 14, 2048, 1, 2, 0, 1, NULL},
    {"resnet50", 2, 2048, 7, 512, 1, 1, 0, 1, "relu"},
    {"resnet50", 2, 512, 7, 512, 3, 1, 1, 1, "relu"},
    {"resnet18", 1, 3, 224, 64, 7, 2, 3, 1, "relu"},
    {"resnet18", 4, 64, 56, 64, 3, 1, 1, 1, "relu"},
    {"resnet18", 1, 64, 56, 128, 3, 2, 1, 1, "relu"},
    {"resnet18", 3, 128, 28, 128, 3, 1, 1, 1, "relu"},
    {"resnet18", 1, 64, 56, 128, 1, 2, 0, 1, NULL},
    {"resnet18", 1, 128, 28, 256, 3, 2, 1, 1, "relu"},
    {"resnet18", 3, 256, 14, 256, 3, 1, 1, 1, "relu"},
    {"resnet18", 1, 128, 28, 256, 1, 2, 0, 1, NULL},
    {"resnet18", 1, 256, 14, 512, 3, 2, 1, 1, "relu"},
    {"resnet18", 3, 512, 7, 512, 3, 1, 1, 1, "relu"},
    {"resnet18", 1, 256, 14, 512, 1, 2, 0, 1, NULL},
    {"mobilenet_v2", 1, 3, 224, 32, 3, 2, 1, 1, "clip"},
    {"mobilenet_v2", 1, 32, 112, 32, 3, 1, 1, 32, "clip"},
    {"mobilenet_v2", 1, 32, 112, 16, 1, 1, 0, 1, NULL},
    {"mobilenet_v2", 1, 16, 112, 96, 1, 1, 0, 1, "clip"},
    {"mobilenet_v2", 1, 96, 112, 96, 3, 2, 1, 96, "clip"},
    {"mobilenet_v2", 1, 96, 56, 24, 1, 1, 0, 1, NULL},
    {"mobilenet_v2", 2, 24, 56, 144, 1, 1, 0, 1, "clip"},
    {"mobilenet_v2", 1, 144, 56, 144, 3, 1, 1, 144, "clip"},
    {"mobilenet_v2", 1, 144, 56, 24, 1, 1, 0, 1, NULL},
    {"mobilenet_v2", 1, 144, 56, 144, 3, 2, 1, 144, "clip"},
    {"mobilenet_v2", 1, 144, 28, 32, 1, 1, 0, 1, NULL},
    {"mobilenet_v2", 3, 32, 28, 192, 1, 1, 0, 1, "clip"},
    {"mobilenet_v2", 2, 192, 28, 192, 3, 1, 1, 192, "clip"},
    {"mobilenet_v2", 2, 192, 28, 32, 1, 1, 0, 1, NULL},
    {"mobilenet_v2", 1, 192, 28, 192, 3, 2, 1, 192, "clip"},
    {"mobilenet_v2", 1, 192, 14, 64, 1, 1, 0, 1, NULL},
    {"mobilenet_v2", 4, 64, 14, 384, 1, 1, 0, 1, "clip"},
    {"mobilenet_v2", 4, 384, 14, 384, 3, 1, 1, 384, "clip"},
    {"mobilenet_v2", 3, 384, 14, 64, 1, 1, 0, 1, NULL},
    {"mobilenet_v2", 1, 384, 14, 96, 1, 1, 0, 1, NULL},
    {"mobilenet_v2", 3, 96, 14, 576, 1, 1, 0, 1, "clip"},
    {"mobilenet_v2", 2, 576, 14, 576, 3, 1, 1, 576, "clip"},
    {"mobilenet_v2", 2, 576, 14, 96, 1, 1, 0, 1, NULL},
    {"mobilenet_v2", 1, 576, 14, 576, 3, 2, 1, 576, "clip"},
    {"mobilenet_v2", 1, 576, 7, 160, 1, 1, 0, 1, NULL},
    {"mobilenet_v2", 3, 160, 7, 960, 1, 1, 0, 1, "clip"},
    {"mobilenet_v2", 3, 960, 7, 960, 3, 1, 1, 960, "clip"},
    {"mobilenet_v2", 2, 960, 7, 160, 1, 1, 0, 1, NULL},
    {"mobilenet_v2", 1, 960, 7, 320, 1, 1, 0, 1, NULL},
    {"mobilenet_v2", 1, 320, 7, 1280, 1, 1, 0, 1, "clip"},
    /* EfficientNet-B0's depthwise convolutions (its 1x1s are MobileNet's kind) */
    {"efficientnet_b0", 1, 32, 112, 32, 3, 1, 1, 32, "silu"},
    {"efficientnet_b0", 1, 96, 112, 96, 3, 2, 1, 96, "silu"},
    {"efficientnet_b0", 1, 144, 56, 144, 3, 1, 1, 144, "silu"},
    {"efficientnet_b0", 1, 144, 56, 144, 5, 2, 2, 144, "silu"},
    {"efficientnet_b0", 1, 240, 28, 240, 5, 1, 2, 240, "silu"},
    {"efficientnet_b0", 1, 240, 28, 240, 3, 2, 1, 240, "silu"},
    {"efficientnet_b0", 2, 480, 14, 480, 3, 1, 1, 480, "silu"},
    {"efficientnet_b0", 1, 480, 14, 480, 5, 1, 2, 480, "silu"},
    {"efficientnet_b0", 2, 672, 14, 672, 5, 1, 2, 672, "silu"},
    {"efficientnet_b0", 1, 672, 14, 672, 5, 2, 2, 672, "silu"},
    {"efficientnet_b0", 3, 1152, 7, 1152, 5, 1, 2, 1152, "silu"},
    {"efficientnet_b0", 1, 1152, 7, 1152, 3, 1, 1, 1152, "silu"},
    /* its squeeze-excite convs (1x1 on 1x1 maps: one dot product an output)
     * and a 1x1 on 7x7 (49 columns: one a dot product) */
    {"efficientnet_b0", 3, 672, 1, 28, 1, 1, 0, 1, "silu"},
    {"efficientnet_b0", 3, 28, 1, 672, 1, 1, 0, 1, "sigmoid"},
    {"efficientnet_b0", 4, 48, 1, 1152, 1, 1, 0, 1, "sigmoid"},
    {"efficientnet_b0", 4, 192, 7, 1152, 1, 1, 0, 1, "silu"},
    /* DenseNet-121's 3x3 growth convs (56x56 runs Winograd), Inception-v3's
     * 32-channel stem: 32 output channels, k_conv.c's lanes path */
    {"densenet121", 12, 128, 28, 32, 3, 1, 1, 1, "relu"},
    {"densenet121", 24, 128, 14, 32, 3, 1, 1, 1, "relu"},
    {"densenet121", 16, 128, 7, 32, 3, 1, 1, 1, "relu"},
    /* its 1x1 bottlenecks at 14x14 and 28x28 (inputs 256..992 and 128..480
     * channels: the middle one of each block) */
    {"densenet121", 24, 640, 14, 128, 1, 1, 0, 1, "relu"},
    {"densenet121", 12, 320, 28, 128, 1, 1, 0, 1, "relu"},
    {"inception_v3", 1, 3, 299, 32, 3, 2, 0, 1, "relu"},
    {"inception_v3", 1, 32, 149, 32, 3, 1, 0, 1, "relu"},
};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void build(Case *c, const Shape *s) {
    int64_t o = (s->h + 2 * s->pad - s->k) / s->stride + 1;
    int64_t y[4] = {1, s->m, o, o}, x[4] = {1, s->c, s->h, s->h};
    int64_t w[4] = {s->m, s->c / s->group, s->k, s->k}, b[1] = {s->m};
    desc_begin(&c->d, NK_CONV, 1);
    desc_operand(&c->d, 4, y);
    desc_operand(&c->d, 4, x);
    desc_operand(&c->d, 4, w);
    desc_operand(&c->d, 1, b);
    desc_ints(&c->d, AK_kernel, 2, (int64_t[]){s->k, s->k});
    desc_ints(&c->d, AK_strides, 2, (int64_t[]){s->stride, s->stride});
    desc_ints(&c->d, AK_pads, 4, (int64_t[]){s->pad, s->pad, s->pad, s->pad});
    desc_ints(&c->d, AK_dilations, 2, (int64_t[]){1, 1});
    desc_int(&c->d, AK_group, s->group);
    if (s->act) {
        desc_act(&c->d, s->act);
        if (!strcmp(s->act, "clip")) {
            desc_float(&c->d, AK_act_alpha, 0);
            desc_float(&c->d, AK_act_beta, 6);
        }
    }
}

static double flops(const Shape *s) {
    int64_t o = (s->h + 2 * s->pad - s->k) / s->stride + 1;
    return 2.0 * (double)(s->m * o * o) * (double)(s->c / s->group * s->k * s->k);
}

/* --cold: every run starts with the weights out of the caches, as in a
 * model, where each layer's weights are read once per inference and the
 * layers between evict them (the activations are the previous layer's
 * output, so they stay). Alone and hot, a kernel hides what its reads of
 * the weights cost: ResNet-50's and MobileNet-V2's 1x1 convolutions on
 * 14x14 and 7x7 maps run at 85% of the FMA peak here and at 55-70% in
 * the models (glowc bench --per-node). */
static void flush_weights(const Case *c) {
#if defined(__x86_64__)
    const char *w = c->fast[2];
    size_t bytes = (size_t)desc_numel(&c->d, 2) * sizeof(float);
    for (size_t i = 0; i < bytes; i += 64)
        __builtin_ia32_clflush(w + i);
    __builtin_ia32_mfence();
#else
    (void)c;
#endif
}

/* The kernel timed: libjit_conv_f32, or (--amx) libjit_conv_amx_f32, the
 * products on AMX's bf16 tiles where the CPU has them. */
typedef struct Kern {
    KernelFn fn;
    WorkFn work;
} Kern;

/* Minimum seconds of `reps` runs (at least 0.2 s of them, at most 2000) of
 * units [lo, hi) (hi < 0: all of them). */
static double time_range(const Kern *k, const Case *c, bool interp, bool cold, int reps, int64_t lo,
                         int64_t hi) {
    LjScratch sc = {0};
    double best = 1e30, start = now();
    if (hi < 0)
        hi = k->work(c->d.w);
    for (int r = 0; r < 2000 && (r < reps || now() - start < 0.2); r++) {
        if (cold)
            flush_weights(c);
        double t0 = now();
        if (interp)
            libjit_generic(c->d.w, c->ref);
        else
            k->fn(c->d.w, c->fast, lo, hi, &sc);
        double t = now() - t0;
        best = t < best ? t : best;
    }
    lj_scratch_release(&sc);
    return best;
}

static double time_min(const Kern *k, const Case *c, bool interp, bool cold, int reps) {
    return time_range(k, c, interp, cold, reps, 0, -1);
}

/* Each of the pieces libjit_parallel hands T threads (lj_piece_bounds),
 * the minimum seconds of repeated runs of them all in turn, as the one
 * call they make: one buffer shared by the pieces (LjShared, reset per
 * run as libjit_parallel does per call), so that what the threads share
 * (k_conv.c's shared B) is built once, by the pieces that claim it --
 * here the first -- and read by the others. */
static void time_pieces(const Kern *kn, const Case *c, int threads, bool cold, int reps,
                        double *piece) {
    int64_t n = kn->work(c->d.w);
    LjShared shared = {0};
    LjScratch sc = {.shared = &shared};
    for (int k = 0; k < threads * LJ_PIECES; k++)
        piece[k] = 1e30;
    double start = now();
    for (int r = 0; r < 2000 && (r < reps || now() - start < 0.2); r++) {
        lj_shared_reset(&shared);
        if (cold)
            flush_weights(c);
        for (int k = 0; k < threads * LJ_PIECES; k++) {
            int64_t lo, hi;
            lj_piece_bounds(n, threads, k, &lo, &hi);
            double t0 = now();
            if (lo < hi)
                kn->fn(c->d.w, c->fast, lo, hi, &sc);
            double t = lo < hi ? now() - t0 : 0;
            piece[k] = t < piece[k] ? t : piece[k];
        }
    }
    lj_scratch_release(&sc);
    lj_shared_free(&shared);
}

/* --split T: the whole call, then each of the T shares alone (the sum of
 * its pieces, time_pieces); prints the bound on the T-thread speedup
 * (whole / largest share) and the repeated work ((sum of shares - whole) /
 * whole). */
static void split_row(const Kern *k, const Case *c, const Shape *s, int threads, bool cold,
                      int reps, double *sums) {
    int64_t n = k->work(c->d.w);
    double whole = time_range(k, c, false, cold, reps, 0, n), most = 0, sum = 0;
    double piece[64 * LJ_PIECES];
    time_pieces(k, c, threads, cold, reps, piece);
    for (int t = 0; t < threads; t++) {
        double share = 0;
        for (int k = t * LJ_PIECES; k < (t + 1) * LJ_PIECES; k++)
            share += piece[k];
        most = share > most ? share : most;
        sum += share;
    }
    sums[0] += whole * s->count;
    sums[1] += most * s->count;
    sums[2] += sum * s->count;
    printf("%-13s %5lld %4lld %5lld %2lld %1lld %4lld %6lld %8.3f %8.3f %6.2fx %+6.1f%%\n", s->model,
           (long long)s->c, (long long)s->h, (long long)s->m, (long long)s->k, (long long)s->stride,
           (long long)s->group, (long long)n, whole * 1e3, most * 1e3, whole / most,
           100 * (sum - whole) / whole);
}

/* From shape *i on, the next one of `model` ("all": every one) or only
 * number `only` (-1: any), built with its reference inputs filled. */
static bool next_case(const char *model, int only, size_t *i, Case *c) {
    for (; *i < sizeof shapes / sizeof *shapes; ++*i) {
        const Shape *s = &shapes[*i];
        if ((strcmp(model, "all") && strcmp(model, s->model)) || (only >= 0 && only != (int)*i))
            continue;
        build(c, s);
        case_alloc(c, *i);
        case_reference(c, false);
        return true;
    }
    return false;
}

static int split_table(const Kern *k, const char *model, int only, int threads, bool cold,
                       int reps) {
    printf("%-13s %5s %4s %5s %2s %1s %4s %6s %8s %8s %7s %7s\n", "model", "cin", "hw", "cout",
           "k", "s", "grp", "units", "1T ms", "share ms", "bound", "repeat");
    double sums[3] = {0};
    Case c;
    for (size_t i = 0; next_case(model, only, &i, &c); i++) {
        split_row(k, &c, &shapes[i], threads, cold, reps, sums);
        case_free(&c);
    }
    printf("weighted by count: %.2f ms whole, %.2f ms largest shares (bound %.2fx), repeated %+.1f%%\n",
           sums[0] * 1e3, sums[1] * 1e3, sums[0] / sums[1], 100 * (sums[2] - sums[0]) / sums[0]);
    return 0;
}

int main(int argc, char **argv) {
    const char *model = "resnet50";
    bool interp = true, cold = false;
    int reps = 20, only = -1, split = 0;
    Kern k = {libjit_conv_f32, libjit_conv_f32_work};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--amx")) {
#if defined(__x86_64__)
            k = (Kern){libjit_conv_amx_f32, libjit_conv_amx_f32_work};
#else
            fprintf(stderr, "bench_conv: --amx is for x86-64\n");
            return 1;
#endif
        } else if (!strcmp(argv[i], "--no-interp"))
            interp = false;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--split") && i + 1 < argc)
            split = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cold"))
            cold = true;
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else
            model = argv[i];
    }
    if (split > 64)
        split = 64; /* time_pieces' array */
    if (split > 0)
        return split_table(&k, model, only, split, cold, reps);
    printf("%-13s %5s %4s %5s %2s %1s %4s %-5s %10s %9s %9s %7s\n", "model", "cin", "hw", "cout", "k",
           "s", "grp", "act", "MFLOP", "fast GF/s", "interp", "speedup");
    double total_flops = 0, total_fast = 0, total_interp = 0;
    Case c;
    for (size_t i = 0; next_case(model, only, &i, &c); i++) {
        const Shape *s = &shapes[i];
        double tf = time_min(&k, &c, false, cold, reps);
        double ti = interp ? time_min(&k, &c, true, cold, 2) : 0;
        double f = flops(s);
        total_flops += f * s->count;
        total_fast += tf * s->count;
        total_interp += ti * s->count;
        printf("%-13s %5lld %4lld %5lld %2lld %1lld %4lld %-5s %10.1f %9.1f %9.1f %7.1f\n", s->model,
               (long long)s->c, (long long)s->h, (long long)s->m, (long long)s->k,
               (long long)s->stride, (long long)s->group, s->act ? s->act : "-", f * 1e-6,
               f / tf * 1e-9, interp ? f / ti * 1e-9 : 0, interp ? ti / tf : 0);
        case_free(&c);
    }
    printf("all convolutions, weighted by count: %.2f GFLOP in %.2f ms fast (%.1f GFLOP/s)",
           total_flops * 1e-9, total_fast * 1e3, total_flops / total_fast * 1e-9);
    if (interp)
        printf(", %.1f ms interpreter (%.1f GFLOP/s)", total_interp * 1e3,
               total_flops / total_interp * 1e-9);
    printf("\n");
    return 0;
}
