/* Micro-benchmark of the int8 convolution (libjit_qlinear_conv_vnni_u8, or
 * the plain vector kernel without VNNI; and beside it qconv_packed, the
 * form the qconv-pack pass gives one-group convs) on resnet50's convolutions and
 * mobilenet_v2's depthwise ones at batch 1, single-threaded, for a profiler
 * and for before/after figures that a loaded machine does not blur as much
 * as whole-model runs: the minimum over repeated runs, in ms and GOP/s
 * (2 operations per multiply-add).
 *
 * --cold evicts the caches before each run (a 64 MB write) and reads the
 * input back, as a model runs a layer: its input just written by the layer
 * before, its weights last read an inference ago (so from memory). The
 * packed 1x1 convs ran 1.3-1.5x slower in resnet50 than here without it.
 *
 * usage: bench_qconv [--reps N] [--only I] [--cold] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cpu/libjit/kernels.h"
#include "tests/kernels/harness.h"

typedef struct QShape {
    const char *model;
    int count; /* times it occurs in the model */
    int64_t c, h, m, k, stride, pad, group;
} QShape;

/* The shapes of bench_conv.c's table that dominate the int8 models'
 * per-node profiles (glowc bench --per-node --quantize). */
static const QShape shapes[] = {
    {"resnet50", 1, 3, 224, 64, 7, 2, 3, 1},     {"resnet50", 1, 64, 56, 64, 1, 1, 0, 1},
    {"resnet50", 3, 64, 56, 64, 3, 1, 1, 1},     {"resnet50", 4, 64, 56, 256, 1, 1, 0, 1},
    {"resnet50", 2, 256, 56, 64, 1, 1, 0, 1},    {"resnet50", 1, 256, 56, 128, 1, 1, 0, 1},
    {"resnet50", 1, 128, 56, 128, 3, 2, 1, 1},   {"resnet50", 4, 128, 28, 512, 1, 1, 0, 1},
    {"resnet50", 1, 256, 56, 512, 1, 2, 0, 1},   {"resnet50", 3, 512, 28, 128, 1, 1, 0, 1},
    {"resnet50", 3, 128, 28, 128, 3, 1, 1, 1},   {"resnet50", 1, 512, 28, 256, 1, 1, 0, 1},
    {"resnet50", 1, 256, 28, 256, 3, 2, 1, 1},   {"resnet50", 6, 256, 14, 1024, 1, 1, 0, 1},
    {"resnet50", 1, 512, 28, 1024, 1, 2, 0, 1},  {"resnet50", 5, 1024, 14, 256, 1, 1, 0, 1},
    {"resnet50", 5, 256, 14, 256, 3, 1, 1, 1},   {"resnet50", 1, 1024, 14, 512, 1, 1, 0, 1},
    {"resnet50", 1, 512, 14, 512, 3, 2, 1, 1},   {"resnet50", 3, 512, 7, 2048, 1, 1, 0, 1},
    {"resnet50", 1, 1024, 14, 2048, 1, 2, 0, 1}, {"resnet50", 2, 2048, 7, 512, 1, 1, 0, 1},
    {"resnet50", 2, 512, 7, 512, 3, 1, 1, 1},    {"mobilenet_v2", 1, 32, 112, 32, 3, 1, 1, 32},
    {"mobilenet_v2", 1, 96, 112, 96, 3, 2, 1, 96}, {"mobilenet_v2", 1, 144, 56, 144, 3, 1, 1, 144},
    {"mobilenet_v2", 4, 384, 14, 384, 3, 1, 1, 384}, {"mobilenet_v2", 1, 144, 56, 144, 3, 2, 1, 144},
    {"mobilenet_v2", 2, 192, 28, 192, 3, 1, 1, 192}, {"mobilenet_v2", 1, 192, 28, 192, 3, 2, 1, 192},
    {"mobilenet_v2", 2, 576, 14, 576, 3, 1, 1, 576}, {"mobilenet_v2", 1, 576, 14, 576, 3, 2, 1, 576},
    {"mobilenet_v2", 3, 960, 7, 960, 3, 1, 1, 960},
};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* qlinear_conv (y; x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp,
 * bias), u8 activations, i8 weights per channel, i32 bias. */
static void build(Case *c, const QShape *s, bool packed) {
    int64_t o = (s->h + 2 * s->pad - s->k) / s->stride + 1, one[1] = {1};
    int64_t y[4] = {1, s->m, o, o}, x[4] = {1, s->c, s->h, s->h};
    int64_t w[4] = {s->m, s->c / s->group, s->k, s->k}, mlen[1] = {s->m};
    desc_begin(&c->d, packed ? NK_QCONV_PACKED : NK_QLINEAR_CONV, 1);
    desc_operand_elem(&c->d, ELEM_U8, 4, y);
    desc_operand_elem(&c->d, ELEM_U8, 4, x);
    desc_operand_elem(&c->d, ELEM_F32, 0, one);
    desc_operand_elem(&c->d, ELEM_U8, 0, one);
    desc_operand_elem(&c->d, ELEM_I8, 4, w);
    desc_operand_elem(&c->d, ELEM_F32, 1, mlen);
    desc_operand_elem(&c->d, ELEM_I8, 1, mlen);
    desc_operand_elem(&c->d, ELEM_F32, 0, one);
    desc_operand_elem(&c->d, ELEM_U8, 0, one);
    desc_operand_elem(&c->d, ELEM_I32, 1, mlen);
    desc_ints(&c->d, AK_kernel, 2, (int64_t[]){s->k, s->k});
    desc_ints(&c->d, AK_strides, 2, (int64_t[]){s->stride, s->stride});
    desc_ints(&c->d, AK_pads, 4, (int64_t[]){s->pad, s->pad, s->pad, s->pad});
    desc_ints(&c->d, AK_dilations, 2, (int64_t[]){1, 1});
    if (!packed)
        desc_int(&c->d, AK_group, s->group);
}

/* Scales and zero points as the quantize pass makes them (weights
 * symmetric), so the fast path is the one timed. */
static void set_params(Case *c, const QShape *s) {
    *(float *)c->fast[2] = 0.02f;
    *(uint8_t *)c->fast[3] = 3;
    for (int64_t m = 0; m < s->m; m++) {
        ((float *)c->fast[5])[m] = 0.01f;
        ((int8_t *)c->fast[6])[m] = 0;
    }
    *(float *)c->fast[7] = 0.5f;
    *(uint8_t *)c->fast[8] = 0;
}

static double ops_of(const QShape *s) {
    int64_t o = (s->h + 2 * s->pad - s->k) / s->stride + 1;
    return 2.0 * (double)(s->m * o * o) * (double)(s->c / s->group * s->k * s->k);
}

enum { COLD_BYTES = 64 << 20 };

/* The caches emptied of all but the input's xbytes (cold runs). */
static void chill(const Case *c, int64_t xbytes, uint8_t *junk) {
    if (!junk)
        return;
    memset(junk, (int)(junk[0] + 1), COLD_BYTES);
    volatile uint8_t sink = 0;
    for (int64_t i = 0; i < xbytes; i += 64)
        sink ^= ((const uint8_t *)c->fast[1])[i];
    (void)sink;
}

static double time_min(const Case *c, const QShape *s, int reps, bool packed, uint8_t *junk) {
    KernelFn fn = packed ? libjit_qconv_packed_u8 : libjit_qlinear_conv_u8;
    WorkFn work = packed ? libjit_qconv_packed_u8_work : libjit_qlinear_conv_u8_work;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512vnni")) {
        fn = packed ? libjit_qconv_packed_vnni_u8 : libjit_qlinear_conv_vnni_u8;
        work = packed ? libjit_qconv_packed_vnni_u8_work : libjit_qlinear_conv_vnni_u8_work;
    }
#endif
    /* One call over every unit with a kept scratch, as one runtime thread
     * makes it (the harness's run_kernel calls unit by unit, half of them
     * with fresh scratch: a test of the units, not a time). */
    double best = 1e30, start = now();
    LjScratch sc = {0};
    for (int r = 0; r < 2000 && (r < reps || now() - start < 0.2); r++) {
        chill(c, s->c * s->h * s->h, junk);
        double t0 = now();
        fn(c->d.w, c->fast, 0, work(c->d.w), &sc);
        double t = now() - t0;
        best = t < best ? t : best;
    }
    lj_scratch_release(&sc);
    return best;
}

int main(int argc, char **argv) {
    int reps = 20, only = -1;
    uint8_t *junk = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cold") && !junk)
            junk = calloc(COLD_BYTES, 1);
    }
    printf("%-13s %5s %4s %5s %2s %1s %4s %9s %9s %9s %9s\n", "model", "cin", "hw", "cout", "k", "s",
           "grp", "ms", "GOP/s", "packed ms", "GOP/s");
    double total[2] = {0, 0}, total_packed = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        const QShape *s = &shapes[i];
        if (only >= 0 && only != (int)i)
            continue;
        Case c;
        build(&c, s, false);
        case_alloc(&c, i);
        set_params(&c, s);
        double t = time_min(&c, s, reps, false, junk);
        case_free(&c);
        /* the packed form, back to back: one-group convs of whole words */
        double tp = 0;
        if (s->group == 1 && s->c % 4 == 0 && s->m % 4 == 0) {
            build(&c, s, true);
            case_alloc(&c, i);
            set_params(&c, s);
            tp = time_min(&c, s, reps, true, junk);
            case_free(&c);
        }
        total[strcmp(s->model, "resnet50") != 0] += t * s->count;
        total_packed += (tp ? tp : t) * s->count * !strcmp(s->model, "resnet50");
        printf("%-13s %5lld %4lld %5lld %2lld %1lld %4lld %9.3f %9.1f", s->model, (long long)s->c,
               (long long)s->h, (long long)s->m, (long long)s->k, (long long)s->stride,
               (long long)s->group, t * 1e3, ops_of(s) / t * 1e-9);
        if (tp)
            printf(" %9.3f %9.1f", tp * 1e3, ops_of(s) / tp * 1e-9);
        printf("\n");
    }
    printf("weighted by count: resnet50 %.2f ms (packed where it applies: %.2f ms), mobilenet_v2 "
           "depthwise (these) %.2f ms\n",
           total[0] * 1e3, total_packed * 1e3, total[1] * 1e3);
    free(junk);
    return 0;
}
