/* The fast libjit kernels against the reference interpreter's kernels, over
 * many shapes: odd sizes, every stride, pad, dilation and group form,
 * tails of every tile, in-place operands, fused activations.
 *
 * Error bounds. Where a kernel sums (conv, fully_connected, matmul, average
 * pooling, sum reductions), it and the interpreter add the same terms in
 * different orders (and one with FMA): each is within gamma_n * S of the
 * exact sum, S = sum |terms|, gamma_n = n u / (1 - n u), u = 2^-24, n the
 * number of terms (Higham, ch. 3), so they differ by at most 2 gamma_n S.
 * S is measured by running the reference on |inputs| (without the
 * activation). An activation after the sum scales that by its Lipschitz
 * constant (1, or 1/4 for sigmoid) and adds its own error: the vector
 * exp/sigmoid/tanh are within 1/2/4 ulp of the correctly rounded value
 * (measured on a dense sweep of [-120, 120]), and sigmoid's quotient flushes
 * to 0 below 1.2e-38. Kernels that do not sum (max, relu, add, mul, copies)
 * must match exactly. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "backends/cpu/libjit/kernels.h"
#include "tests/kernels/harness.h"

static const double FLT_TINY = 1.1754943508222875e-38;

static int64_t rnd(uint64_t *s, int64_t lo, int64_t hi) {
    return lo + (int64_t)(rng_next(s) % (uint64_t)(hi - lo + 1));
}

/* The tolerance of an n-term sum followed by activation `act`. */
static Tol sum_tol(int64_t n, const char *act) {
    Tol t = {2.1 * gamma_f32(n), 0, 0};
    if (act && !strcmp(act, "sigmoid")) {
        t.rel_mag *= 0.25;
        t.ulps = 2;
        t.abs = FLT_TINY;
    } else if (act && !strcmp(act, "tanh")) {
        t.ulps = 4;
    }
    return t;
}

/* ---- conv ---------------------------------------------------------------- */

typedef struct ConvSpec {
    int ns; /* spatial axes: 1 or 2 */
    int64_t n, c, h, w, m, kh, kw, sh, sw, dh, dw, group;
    int64_t pads[4]; /* top, left, bottom, right */
    const char *act;
    float alpha, beta;
    bool bias;
} ConvSpec;

static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1) {
    int64_t span = d * (k - 1) + 1;
    return in + p0 + p1 < span ? 0 : (in + p0 + p1 - span) / s + 1;
}

static void build_conv(Desc *d, const ConvSpec *k, bool with_act) {
    int64_t oh = out_size(k->h, k->kh, k->sh, k->dh, k->pads[0], k->pads[2]);
    int64_t ow = out_size(k->w, k->kw, k->sw, k->dw, k->pads[1], k->pads[3]);
    desc_begin(d, NK_CONV, 1);
    if (k->ns == 2) {
        desc_operand(d, 4, (int64_t[]){k->n, k->m, oh, ow});
        desc_operand(d, 4, (int64_t[]){k->n, k->c, k->h, k->w});
        desc_operand(d, 4, (int64_t[]){k->m, k->c / k->group, k->kh, k->kw});
    } else {
        desc_operand(d, 3, (int64_t[]){k->n, k->m, ow});
        desc_operand(d, 3, (int64_t[]){k->n, k->c, k->w});
        desc_operand(d, 3, (int64_t[]){k->m, k->c / k->group, k->kw});
    }
    if (k->bias)
        desc_operand(d, 1, (int64_t[]){k->m});
    if (k->ns == 2) {
        desc_ints(d, AK_kernel, 2, (int64_t[]){k->kh, k->kw});
        desc_ints(d, AK_strides, 2, (int64_t[]){k->sh, k->sw});
        desc_ints(d, AK_pads, 4, k->pads);
        desc_ints(d, AK_dilations, 2, (int64_t[]){k->dh, k->dw});
    } else {
        desc_ints(d, AK_kernel, 1, (int64_t[]){k->kw});
        desc_ints(d, AK_strides, 1, (int64_t[]){k->sw});
        desc_ints(d, AK_pads, 2, (int64_t[]){k->pads[1], k->pads[3]});
        desc_ints(d, AK_dilations, 1, (int64_t[]){k->dw});
    }
    desc_int(d, AK_group, k->group);
    if (with_act && k->act) {
        desc_str(d, AK_act, k->act);
        desc_float(d, AK_act_alpha, k->alpha);
        desc_float(d, AK_act_beta, k->beta);
    }
}

static double check_conv(const ConvSpec *k, uint64_t seed) {
    Case c = {0};
    build_conv(&c.d, k, true);
    build_conv(&c.dmag, k, false);
    case_alloc(&c, seed);
    assert_true(case_reference(&c, true));
    run_kernel(&c.d, libjit_conv_f32, libjit_conv_f32_work, c.fast);
    char what[200];
    snprintf(what, sizeof what,
             "conv n%lld c%lld %lldx%lld -> m%lld k%lldx%lld s%lld,%lld d%lld,%lld "
             "p%lld,%lld,%lld,%lld g%lld %s%s",
             (long long)k->n, (long long)k->c, (long long)k->h, (long long)k->w,
             (long long)k->m, (long long)k->kh, (long long)k->kw, (long long)k->sh,
             (long long)k->sw, (long long)k->dh, (long long)k->dw, (long long)k->pads[0],
             (long long)k->pads[1], (long long)k->pads[2], (long long)k->pads[3],
             (long long)k->group, k->act ? k->act : "-", k->bias ? " bias" : "");
    double worst = case_check(&c, 0, sum_tol(k->c / k->group * k->kh * k->kw + 1, k->act), what);
    case_free(&c);
    return worst;
}

static const char *const acts[] = {NULL, "relu", "clip", "sigmoid", "tanh", "leaky_relu"};

static ConvSpec random_conv(uint64_t *s) {
    ConvSpec k = {.ns = rnd(s, 0, 9) ? 2 : 1, .n = rnd(s, 0, 4) ? 1 : 2};
    int form = (int)rnd(s, 0, 19); /* 0-11 dense, 12-16 depthwise, 17-19 grouped */
    k.group = 1;
    k.c = rnd(s, 1, 40);
    k.m = rnd(s, 1, rnd(s, 0, 3) ? 40 : 150);
    if (form >= 12 && form <= 16) {
        k.group = k.c = k.m = rnd(s, 1, 24);
    } else if (form > 16) {
        k.group = rnd(s, 2, 4);
        k.c = k.group * rnd(s, 1, 8);
        k.m = k.group * rnd(s, 1, 12);
    }
    int64_t big = rnd(s, 0, 5) ? 24 : 64;
    k.h = k.ns == 2 ? rnd(s, 1, big) : 1;
    k.w = rnd(s, 1, big);
    static const int64_t ks[] = {1, 1, 2, 3, 3, 3, 5, 7};
    k.kh = k.ns == 2 ? ks[rnd(s, 0, 7)] : 1;
    k.kw = k.ns == 2 && rnd(s, 0, 3) ? k.kh : ks[rnd(s, 0, 7)];
    k.sh = k.ns == 2 ? rnd(s, 1, 3) : 1;
    k.sw = rnd(s, 0, 2) ? k.sh : rnd(s, 1, 3);
    k.dh = k.ns == 2 && !rnd(s, 0, 5) ? 2 : 1;
    k.dw = !rnd(s, 0, 5) ? 2 : 1;
    for (int i = 0; i < 4; i++)
        k.pads[i] = (k.ns == 2 || i % 2) && rnd(s, 0, 2) ? rnd(s, 0, (i % 2 ? k.kw : k.kh) - 1) : 0;
    k.act = acts[rnd(s, 0, 5)];
    k.alpha = k.act && !strcmp(k.act, "clip") ? -0.5f : 0.1f;
    k.beta = 0.75f;
    k.bias = rnd(s, 0, 4) != 0;
    return k;
}

static void test_conv_shapes(void **state) {
    /* The product's blockings: K past one k block (256), N past one column
     * block (480), row counts past one work unit (64), and the shapes of
     * the models at reduced size. */
    static const ConvSpec fixed[] = {
        {2, 1, 64, 30, 30, 72, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1}, "relu", 0, 0, true},
        {2, 1, 300, 7, 7, 130, 1, 1, 1, 1, 1, 1, 1, {0}, NULL, 0, 0, true},
        {2, 1, 520, 5, 9, 17, 1, 1, 1, 1, 1, 1, 1, {0}, "clip", 0, 6, false},
        {2, 1, 3, 45, 45, 16, 7, 7, 2, 2, 1, 1, 1, {3, 3, 3, 3}, "relu", 0, 0, true},
        {2, 1, 32, 28, 28, 32, 3, 3, 1, 1, 1, 1, 32, {1, 1, 1, 1}, "clip", 0, 6, true},
        {2, 1, 48, 29, 29, 48, 3, 3, 2, 2, 1, 1, 48, {1, 1, 1, 1}, "clip", 0, 6, true},
        {2, 1, 24, 14, 14, 24, 5, 5, 2, 2, 1, 1, 24, {2, 2, 2, 2}, NULL, 0, 0, true},
        {2, 1, 40, 16, 16, 80, 1, 1, 2, 2, 1, 1, 1, {0}, NULL, 0, 0, true},
        {2, 1, 16, 112, 112, 8, 3, 3, 1, 1, 1, 1, 8, {1, 1, 1, 1}, "sigmoid", 0, 0, true},
        {2, 2, 8, 9, 9, 8, 3, 3, 1, 1, 2, 2, 8, {2, 2, 2, 2}, "tanh", 0, 0, false},
    };
    double worst = 0;
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
        double r = check_conv(&fixed[i], i);
        worst = r > worst ? r : worst;
    }
    printf("conv fixed shapes: worst error %.3f of the bound\n", worst);
    assert_true(worst <= 1);
}

static void test_conv_random(void **state) {
    uint64_t s = 12345;
    double worst = 0;
    int ran = 0;
    for (int i = 0; i < 400; i++) {
        ConvSpec k = random_conv(&s);
        if (out_size(k.h, k.kh, k.sh, k.dh, k.pads[0], k.pads[2]) < 1 ||
            out_size(k.w, k.kw, k.sw, k.dw, k.pads[1], k.pads[3]) < 1)
            continue;
        double r = check_conv(&k, (uint64_t)i);
        worst = r > worst ? r : worst;
        ran++;
    }
    printf("conv: %d random shapes, worst error %.3f of the bound\n", ran, worst);
    assert_true(worst <= 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_shapes),
        cmocka_unit_test(test_conv_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
