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
 * constant (1, 1/4 for sigmoid, 1.1 for silu) and adds its own error: the vector
 * exp/sigmoid/tanh are within 1/2/1 ulp of the correctly rounded value
 * (measured on a dense sweep of [-120, 120]; allowed 1/2/2 here), and
 * sigmoid's quotient flushes to 0 below 1.2e-38. The interpreter's gelu,
 * 0.5 x (1 + erf(x / sqrt 2)) in double, cancels for x << 0 to about 1e-16
 * |x| absolute; the kernel's form with erfc does not, so the bound there is
 * that absolute error. Kernels that do not sum (max, relu, add, mul, copies)
 * must match exactly. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "backends/cpu/exe/model_info.h"
#include "backends/cpu/libjit/kernels.h"
#include "core/winograd.h"
#include "tests/kernels/any.h"
#include "tests/kernels/harness.h"

static const double FLT_TINY = 1.1754943508222875e-38;

static int64_t rnd(uint64_t *s, int64_t lo, int64_t hi) {
    return lo + (int64_t)(rng_next(s) % (uint64_t)(hi - lo + 1));
}

typedef int64_t (*ScratchFn)(const int64_t *d, int slot);

/* A --no-threads bundle calls each kernel once over all its units, with
 * the fixed scratch libjit_K_scratch sized at compile time: every request
 * must fit (lj_scratch_get traps otherwise; the buffers have the exact
 * sizes, for AddressSanitizer) and the output must be the very bytes of
 * the same call with scratch allocated (a threaded bundle's one thread).
 * The mode is a constant of generated code; here, of this call only. */
static void check_static_scratch(Case *c, KernelFn fn, WorkFn work, ScratchFn scratch,
                                 const char *what) {
    size_t bytes = (size_t)desc_numel(&c->d, 0) * sizeof(float);
    int64_t n = work(c->d.w);
    fn(c->d.w, c->fast, 0, n, NULL);
    unsigned char *want = malloc(bytes + 1);
    memcpy(want, c->fast[0], bytes);
    memset(c->fast[0], 0xff, bytes);
    LjScratch sc = {0};
    for (int k = 0; k < LJ_SCRATCH_SLOTS; k++) {
        int64_t cap = scratch(c->d.w, k);
        assert_true(cap >= 0);
        sc.cap[k] = (size_t)cap;
        sc.p[k] = malloc(sc.cap[k] + 1);
    }
    libjit_static_scratch = true;
    fn(c->d.w, c->fast, 0, n, &sc);
    libjit_static_scratch = false;
    if (memcmp(want, c->fast[0], bytes))
        fail_msg("%s: the fixed scratch of a --no-threads bundle changes the result", what);
    for (int k = 0; k < LJ_SCRATCH_SLOTS; k++)
        free(sc.p[k]);
    free(want);
}

/* The units split as runtime.c hands them to T threads (lj_piece_bounds:
 * equal ranges, the last shorter, each cut into LJ_PIECES pieces, which any
 * thread may run), each piece a call of its own -- for T = 2, 3 and 5, last
 * piece first, one scratch kept from share to share so that a share that
 * reads what it did not build reads another's, and one shared buffer
 * (LjShared, reset once per T as libjit_parallel does) so that the first
 * share builds all of what the threads share and the others only read it
 * -- must give the one-call result bit for bit: each output is one
 * product's, summed in the same order whoever computes it (README: results
 * do not depend on --threads). */
static void check_thread_shares(Case *c, KernelFn fn, WorkFn work, const char *what) {
    size_t bytes = (size_t)desc_numel(&c->d, 0) * sizeof(float);
    int64_t n = work(c->d.w);
    fn(c->d.w, c->fast, 0, n, NULL);
    unsigned char *want = malloc(bytes + 1);
    memcpy(want, c->fast[0], bytes);
    static const int threads[] = {2, 3, 5};
    for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
        memset(c->fast[0], 0xff, bytes);
        LjShared shared = {0};
        LjScratch sc = {.shared = &shared};
        lj_shared_reset(&shared);
        for (int k = threads[t] * LJ_PIECES - 1; k >= 0; k--) {
            int64_t lo, hi;
            lj_piece_bounds(n, threads[t], k, &lo, &hi);
            if (lo < hi)
                fn(c->d.w, c->fast, lo, hi, &sc);
        }
        lj_scratch_release(&sc);
        lj_shared_free(&shared);
        if (memcmp(want, c->fast[0], bytes))
            fail_msg("%s: %d threads' shares differ from one call over all units", what,
                     threads[t]);
    }
    free(want);
}

/* The tolerance of an n-term sum followed by activation `act`. */
static Tol sum_tol(int64_t n, const char *act) {
    Tol t = {2.1 * gamma_f32(n), 0, 0};
    if (act && !strcmp(act, "sigmoid")) {
        t.rel_mag *= 0.25;
        t.ulps = 2;
        t.abs = FLT_TINY;
    } else if (act && !strcmp(act, "tanh")) {
        t.ulps = 2;
    } else if (act && !strcmp(act, "silu")) {
        /* x sigmoid(x): Lipschitz constant max (sigmoid(x) (1 + x (1 -
         * sigmoid(x)))) < 1.1; sigmoid's 2 ulps and the product's half.
         * Where sigmoid flushes to 0 (x < -87), x sigmoid(x) is below
         * 88 e^-87 < 2e-36 in magnitude: that much absolute error. */
        t.rel_mag *= 1.1;
        t.ulps = 3;
        t.abs = 2e-36;
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
    bool summand; /* a fused residual add's operand (fuse-conv-add); implies a bias */
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
    if (k->bias || k->summand)
        desc_operand(d, 1, (int64_t[]){k->m});
    if (k->summand && k->ns == 2)
        desc_operand(d, 4, (int64_t[]){k->n, k->m, oh, ow});
    else if (k->summand)
        desc_operand(d, 3, (int64_t[]){k->n, k->m, ow});
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
        desc_act(d, k->act);
        desc_float(d, AK_act_alpha, k->alpha);
        desc_float(d, AK_act_beta, k->beta);
    }
}

/* A conv case against the interpreter; a depthwise one also through the
 * kernel code generation calls for it (outputs poisoned again, then the
 * same check). The worse of the two. */
static double check_conv_case(Case *c, Tol tol, const char *what, bool depthwise) {
    double worst = case_check(c, 0, tol, what);
    if (depthwise) {
        float *y = c->fast[0];
        for (int64_t i = 0; i < desc_numel(&c->d, 0); i++)
            y[i] = NAN;
        run_kernel(&c->d, libjit_conv_dw_f32, libjit_conv_dw_f32_work, c->fast);
        double dw = case_check(c, 0, tol, what);
        worst = dw > worst ? dw : worst;
    }
    return worst;
}

/* bf16x3's bound on top of sum_tol (gemm_amx.c): each product off by at
 * most 3 * 2^-16 of its magnitude, and three products summed where f32
 * sums one; scaled by the activation's Lipschitz constant as sum_tol's. */
static Tol amx_tol(int64_t n, const char *act) {
    Tol t = sum_tol(3 * n, act);
    double lip = act && !strcmp(act, "sigmoid") ? 0.25 : act && !strcmp(act, "silu") ? 1.1 : 1;
    t.rel_mag += lip * 3 * 0x1p-16;
    return t;
}

/* The AMX conv kernel's functions (never asked for but on x86-64:
 * test_conv_amx). */
#if defined(__x86_64__)
#define AMX_CONV(suffix) libjit_conv_amx_f32##suffix
#else
#define AMX_CONV(suffix) libjit_conv_f32##suffix
#endif

/* libjit_conv_f32, or (amx) libjit_conv_amx_f32 with amx_tol. */
static double check_conv_kernel(const ConvSpec *k, uint64_t seed, bool amx) {
    KernelFn fn = amx ? AMX_CONV() : libjit_conv_f32;
    WorkFn work = amx ? AMX_CONV(_work) : libjit_conv_f32_work;
    ScratchFn scratch = amx ? AMX_CONV(_scratch) : libjit_conv_f32_scratch;
    Case c = {0};
    build_conv(&c.d, k, true);
    build_conv(&c.dmag, k, false);
    case_alloc(&c, seed);
    assert_true(case_reference(&c, true));
    run_kernel(&c.d, fn, work, c.fast);
    char what[200];
    snprintf(what, sizeof what,
             "conv%s n%lld c%lld %lldx%lld -> m%lld k%lldx%lld s%lld,%lld d%lld,%lld "
             "p%lld,%lld,%lld,%lld g%lld %s%s%s", amx ? " (amx)" : "",
             (long long)k->n, (long long)k->c, (long long)k->h, (long long)k->w,
             (long long)k->m, (long long)k->kh, (long long)k->kw, (long long)k->sh,
             (long long)k->sw, (long long)k->dh, (long long)k->dw, (long long)k->pads[0],
             (long long)k->pads[1], (long long)k->pads[2], (long long)k->pads[3],
             (long long)k->group, k->act ? k->act : "-", k->bias ? " bias" : "",
             k->summand ? " summand" : "");
    /* The summand is one more term of the sum (its magnitude is in mag). */
    int64_t terms = k->c / k->group * k->kh * k->kw + 1 + k->summand;
    Tol tol = amx ? amx_tol(terms, k->act) : sum_tol(terms, k->act);
    bool depthwise = k->group > 1 && k->group == k->c && k->group == k->m;
    double worst = check_conv_case(&c, tol, what, depthwise && !amx);
    check_static_scratch(&c, fn, work, scratch, what);
    check_thread_shares(&c, fn, work, what);
    if (depthwise && !amx)
        check_static_scratch(&c, libjit_conv_dw_f32, libjit_conv_dw_f32_work,
                             libjit_conv_dw_f32_scratch, what);
    case_free(&c);
    return worst;
}

static double check_conv(const ConvSpec *k, uint64_t seed) {
    return check_conv_kernel(k, seed, false);
}

static const char *const acts[] = {NULL, "relu", "clip", "sigmoid", "tanh", "leaky_relu", "silu"};

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
    k.act = acts[rnd(s, 0, 6)];
    k.alpha = k.act && !strcmp(k.act, "clip") ? -0.5f : 0.1f;
    k.beta = 0.75f;
    k.bias = rnd(s, 0, 4) != 0;
    return k;
}

static void test_conv_shapes(void **state) {
    /* The product's blockings: K past one k block (256), N past one column
     * block (240), row counts past one work unit (64), deep k blocks on the
     * heap (small N, large K), and the shapes of the models at reduced
     * size. */
    static const ConvSpec fixed[] = {
        {2, 1, 64, 30, 30, 72, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1}, "relu", 0, 0, true, false},
        {2, 1, 300, 7, 7, 130, 1, 1, 1, 1, 1, 1, 1, {0}, NULL, 0, 0, true, false},
        {2, 1, 520, 5, 9, 17, 1, 1, 1, 1, 1, 1, 1, {0}, "clip", 0, 6, false, false},
        {2, 1, 1500, 12, 12, 24, 1, 1, 1, 1, 1, 1, 1, {0}, "relu", 0, 0, true, false},
        {2, 1, 200, 9, 9, 20, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1}, NULL, 0, 0, true, false},
        {2, 1, 3, 45, 45, 16, 7, 7, 2, 2, 1, 1, 1, {3, 3, 3, 3}, "relu", 0, 0, true, false},
        {2, 1, 32, 28, 28, 32, 3, 3, 1, 1, 1, 1, 32, {1, 1, 1, 1}, "clip", 0, 6, true, false},
        {2, 1, 48, 29, 29, 48, 3, 3, 2, 2, 1, 1, 48, {1, 1, 1, 1}, "clip", 0, 6, true, false},
        {2, 1, 24, 14, 14, 24, 5, 5, 2, 2, 1, 1, 24, {2, 2, 2, 2}, NULL, 0, 0, true, false},
        /* every fixed-window depthwise copy of dwconv.c (DW_FIXED), two images */
        {2, 2, 19, 7, 7, 19, 3, 3, 1, 1, 1, 1, 19, {1, 1, 1, 1}, "silu", 0, 0, true, false},
        {2, 2, 19, 14, 14, 19, 3, 3, 1, 1, 1, 1, 19, {1, 1, 1, 1}, "relu", 0, 0, true, false},
        {2, 2, 9, 28, 28, 9, 3, 3, 1, 1, 1, 1, 9, {1, 1, 1, 1}, NULL, 0, 0, false, false},
        {2, 2, 17, 14, 14, 17, 3, 3, 2, 2, 1, 1, 17, {1, 1, 1, 1}, "clip", 0, 6, true, false},
        {2, 2, 17, 28, 28, 17, 3, 3, 2, 2, 1, 1, 17, {1, 1, 1, 1}, "silu", 0, 0, true, false},
        {2, 2, 9, 56, 56, 9, 3, 3, 2, 2, 1, 1, 9, {1, 1, 1, 1}, NULL, 0, 0, true, false},
        {2, 2, 19, 7, 7, 19, 5, 5, 1, 1, 1, 1, 19, {2, 2, 2, 2}, "silu", 0, 0, true, false},
        {2, 2, 19, 14, 14, 19, 5, 5, 1, 1, 1, 1, 19, {2, 2, 2, 2}, NULL, 0, 0, true, false},
        {2, 2, 9, 28, 28, 9, 5, 5, 1, 1, 1, 1, 9, {2, 2, 2, 2}, "relu", 0, 0, true, false},
        {2, 2, 17, 28, 28, 17, 5, 5, 2, 2, 1, 1, 17, {2, 2, 2, 2}, "silu", 0, 0, false, false},
        /* dwconv.c's bands (phase rows past 16 KB a plane): MobileNet's 112x112
         * stride 2; a dilated window reading the bottom pad, uneven pads; a
         * 5x5 stride 2 on an odd map (bands of 8 rows, the last of 6) */
        {2, 1, 5, 112, 112, 5, 3, 3, 2, 2, 1, 1, 5, {1, 1, 1, 1}, "clip", 0, 6, true, false},
        {2, 2, 3, 100, 90, 3, 3, 3, 1, 1, 2, 2, 3, {2, 1, 2, 3}, "relu", 0, 0, true, false},
        {2, 1, 4, 75, 61, 4, 5, 5, 2, 2, 1, 1, 4, {2, 2, 2, 2}, "silu", 0, 0, false, false},
        /* depthwise.c's padded channel blocks (outputs 7 wide or less): the
         * generic window (dilation, uneven pads and strides, 49 taps), and
         * blocks that end at an image's last channel */
        {2, 2, 37, 9, 6, 37, 3, 5, 2, 1, 2, 1, 37, {1, 2, 0, 3}, "silu", 0, 0, true, false},
        {2, 1, 33, 7, 7, 33, 7, 7, 1, 1, 1, 1, 33, {3, 3, 3, 3}, "relu", 0, 0, false, false},
        {2, 2, 5, 12, 12, 5, 3, 3, 3, 2, 1, 1, 5, {0, 1, 2, 1}, "tanh", 0, 0, true, false},
        /* near misses that take the generic path: end pad only, odd input */
        {2, 2, 17, 14, 14, 17, 3, 3, 2, 2, 1, 1, 17, {0, 0, 1, 1}, NULL, 0, 0, true, false},
        {2, 1, 17, 13, 13, 17, 3, 3, 2, 2, 1, 1, 17, {1, 1, 1, 1}, NULL, 0, 0, true, false},
        {2, 1, 40, 16, 16, 80, 1, 1, 2, 2, 1, 1, 1, {0}, NULL, 0, 0, true, false},
        {2, 1, 24, 17, 15, 40, 1, 1, 3, 2, 1, 1, 1, {0}, "relu", 0, 0, true, false},
        {2, 2, 12, 11, 13, 18, 1, 1, 2, 2, 1, 1, 3, {0}, NULL, 0, 0, false, false},
        {1, 1, 20, 1, 31, 70, 1, 1, 1, 2, 1, 1, 1, {0}, "tanh", 0, 0, true, false},
        {2, 1, 16, 112, 112, 8, 3, 3, 1, 1, 1, 1, 8, {1, 1, 1, 1}, "sigmoid", 0, 0, true, false},
        {2, 2, 8, 9, 9, 8, 3, 3, 1, 1, 2, 2, 8, {2, 2, 2, 2}, "tanh", 0, 0, false, false},
        /* depthwise, 81 taps (past dwconv.c's 64) on a plane whose phase
         * planes pass the stack's: conv_direct */
        {2, 1, 3, 200, 190, 3, 9, 9, 1, 1, 1, 1, 3, {4, 4, 4, 4}, "relu", 0, 0, true, false},
        /* squeeze-excite's 1x1 convs on 1x1 maps: one column (gemv.c), a k tail */
        {2, 2, 483, 1, 1, 21, 1, 1, 1, 1, 1, 1, 1, {0}, "silu", 0, 0, true, false},
        {2, 1, 21, 1, 1, 483, 1, 1, 1, 1, 1, 1, 1, {0}, "sigmoid", 0, 0, true, false},
        /* k under the tail's break-even: gemv_col's blocks of 16 rows, the
         * last one partial (37 rows) */
        {2, 2, 7, 1, 1, 37, 1, 1, 1, 1, 1, 1, 1, {0}, "relu", 0, 0, true, false},
        {2, 2, 7, 1, 1, 37, 1, 1, 1, 1, 1, 1, 1, {0}, "relu", 0, 0, true, true},
        /* the last n % 16 columns as dot products (gemv.c's tail_dots): 14x14's
         * four, and a stride-2 1x1's 7x7 (one), k past one vector with a tail */
        {2, 1, 203, 14, 14, 40, 1, 1, 1, 1, 1, 1, 1, {0}, "clip", 0, 6, true, false},
        {2, 1, 203, 14, 14, 40, 1, 1, 1, 1, 1, 1, 1, {0}, "clip", 0, 6, true, true},
        {2, 2, 99, 14, 14, 21, 1, 1, 2, 2, 1, 1, 1, {0}, "silu", 0, 0, true, false},
        /* dense columns (gemm.h): a panel's runs of output rows -- inception's
         * 1x7 and 7x1 on 17x17, 1x3 on 8x8 (runs under a vector), 3x3 stride 2
         * onto 7x7, 5x5 on 35x35 (runs of two vectors and an overlap) */
        {2, 2, 40, 17, 17, 72, 1, 7, 1, 1, 1, 1, 1, {0, 3, 0, 3}, "relu", 0, 0, true, false},
        {2, 1, 40, 17, 17, 36, 7, 1, 1, 1, 1, 1, 1, {3, 0, 3, 0}, NULL, 0, 0, true, false},
        {2, 1, 300, 8, 8, 40, 1, 3, 1, 1, 1, 1, 1, {0, 1, 0, 1}, "relu", 0, 0, true, false},
        {2, 2, 64, 14, 14, 48, 3, 3, 2, 2, 1, 1, 1, {1, 1, 1, 1}, "relu", 0, 0, true, false},
        /* 3x3 stride 2 onto 14x14 (runs of 14, each vector spilling into
         * the next run), k past one block (whose last rows are exact) */
        {2, 1, 40, 28, 28, 24, 3, 3, 2, 2, 1, 1, 1, {1, 1, 1, 1}, NULL, 0, 0, true, false},
        {2, 1, 24, 35, 35, 40, 5, 5, 1, 1, 1, 1, 1, {2, 2, 2, 2}, NULL, 0, 0, false, false},
        /* output channels in the lanes (k_conv.c's conv_lanes: 16, 32, 48
         * of them, k from 128): DenseNet's 3x3 on 14x14, a stride, a
         * dilation, uneven pads, two images, a 1-D window, a map whose grid
         * ends mid-tile; and 7x7, too sparse a grid for it (the product) */
        {2, 2, 128, 14, 14, 32, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1}, "relu", 0, 0, true, false},
        {2, 1, 20, 47, 23, 16, 3, 3, 2, 1, 1, 2, 1, {0, 2, 1, 1}, "silu", 0, 0, true, false},
        {2, 2, 9, 30, 40, 48, 5, 5, 1, 2, 2, 1, 1, {2, 1, 3, 0}, "clip", 0, 6, true, false},
        {1, 1, 40, 1, 200, 16, 1, 5, 1, 1, 1, 1, 1, {0, 2, 0, 2}, "tanh", 0, 0, true, false},
        {2, 1, 64, 11, 13, 32, 3, 3, 1, 1, 1, 1, 1, {0}, "leaky_relu", 0, 0, true, false},
        {2, 1, 130, 7, 7, 32, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1}, NULL, 0, 0, false, false},
        /* conv_lanes' tiles of a row's 14 positions (32 channels, where they
         * compute fewer positions than the flattened grid): two a row at
         * 28x28; 26 wide, the second 12 of 14; a stride; a dilation */
        {2, 1, 64, 28, 28, 32, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1}, "relu", 0, 0, true, false},
        {2, 2, 16, 26, 26, 32, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1}, NULL, 0, 0, true, false},
        {2, 1, 20, 27, 27, 32, 3, 3, 2, 2, 1, 1, 1, {1, 1, 1, 1}, "silu", 0, 0, true, false},
        {2, 1, 20, 14, 14, 32, 3, 3, 1, 1, 2, 2, 1, {2, 2, 2, 2}, "relu", 0, 0, false, false},
        /* a lanes shape with a fused summand: takes the planes path */
        {2, 2, 128, 14, 14, 32, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1}, "relu", 0, 0, true, true},
    };
    double worst = 0;
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
        double r = check_conv(&fixed[i], i);
        worst = r > worst ? r : worst;
    }
    printf("conv fixed shapes: worst error %.3f of the bound\n", worst);
    assert_true(worst <= 1);
}

/* A fused residual add's summand (fuse-conv-add) on every product path of
 * libjit_conv_f32: the tiles over several k blocks and column blocks, row
 * tails, one output channel (gemv.c's row), a 1x1 map (gemv.c's column),
 * the tail's dot products, the subsampled and phase-plane forms, groups,
 * one spatial axis, and the activations after the sum. */
static void test_conv_summand(void **state) {
    static const ConvSpec fixed[] = {
        {2, 1, 64, 14, 14, 256, 1, 1, 1, 1, 1, 1, 1, {0}, "relu", 0, 0, true, true},
        {2, 1, 300, 30, 30, 37, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1}, "relu", 0, 0, true, true},
        {2, 1, 40, 9, 9, 1, 1, 1, 1, 1, 1, 1, 1, {0}, NULL, 0, 0, true, true},
        {2, 2, 483, 1, 1, 21, 1, 1, 1, 1, 1, 1, 1, {0}, "clip", 0, 6, true, true},
        {2, 1, 203, 14, 14, 40, 1, 1, 1, 1, 1, 1, 1, {0}, "clip", 0, 6, true, true},
        {2, 2, 99, 14, 14, 21, 1, 1, 2, 2, 1, 1, 1, {0}, "leaky_relu", 0.1f, 0, true, true},
        {2, 1, 64, 28, 28, 128, 1, 1, 2, 2, 1, 1, 1, {0}, NULL, 0, 0, true, true},
        {2, 2, 64, 14, 14, 48, 3, 3, 2, 2, 1, 1, 1, {1, 1, 1, 1}, "relu", 0, 0, true, true},
        {2, 2, 12, 11, 13, 18, 3, 3, 1, 1, 1, 1, 3, {1, 1, 1, 1}, "relu", 0, 0, true, true},
        {1, 1, 20, 1, 31, 70, 1, 3, 1, 1, 1, 1, 1, {0, 1, 0, 1}, "relu", 0, 0, true, true},
        {2, 1, 24, 56, 56, 24, 1, 1, 1, 1, 1, 1, 1, {0}, NULL, 0, 0, true, true},
    };
    double worst = 0;
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
        double r = check_conv(&fixed[i], 900 + i);
        worst = r > worst ? r : worst;
    }
    printf("conv with a summand, fixed shapes: worst error %.3f of the bound\n", worst);
    assert_true(worst <= 1);
}

/* `count` random shapes from seed s (case seeds from base), through
 * check_conv_kernel: the worst error over the bound, *ran run. Every third
 * dense or grouped one has a summand (none with one channel in and out per
 * group: fuse-conv-add does not give those one, as the depthwise kernels
 * take none). */
static double random_convs(uint64_t s, int count, uint64_t base, bool amx, int *ran) {
    double worst = 0;
    for (int i = 0; i < count; i++) {
        ConvSpec k = random_conv(&s);
        k.summand = i % 3 == 0 && !(k.group == k.c && k.group == k.m);
        if (out_size(k.h, k.kh, k.sh, k.dh, k.pads[0], k.pads[2]) < 1 ||
            out_size(k.w, k.kw, k.sw, k.dw, k.pads[1], k.pads[3]) < 1)
            continue;
        double r = check_conv_kernel(&k, base + (uint64_t)i, amx);
        worst = r > worst ? r : worst;
        (*ran)++;
    }
    return worst;
}

static void test_conv_random(void **state) {
    int ran = 0;
    double worst = random_convs(12345, 400, 0, false, &ran);
    printf("conv: %d random shapes, worst error %.3f of the bound\n", ran, worst);
    assert_true(worst <= 1);
}

/* libjit_conv_amx_f32, the products on AMX's bf16 tiles (gemm_amx.c),
 * against the interpreter within amx_tol, where the CPU has AMX-BF16 (and
 * Linux gives the tiles' state; else the kernel runs the FMA product,
 * which the bound holds too): k blocks of 128 and a partial one, column
 * blocks of 1024 and a partial one, row blocks of 32 and partial ones (m
 * 1, 17, 40), B in place (1x1), packed whole and shared (few columns, many
 * rows), by phase planes (3x3, strides, 7x7) and subsampled; bias,
 * summand and every activation; then the random shapes of test_conv_random.
 * One C tile's lo * hi product dropped fails by 15 times the bound. */
static bool cpu_has_amx_bf16(void) {
#if defined(__x86_64__)
    unsigned a, b, c, d;
    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (d >> 22 & 1) && (d >> 24 & 1);
#else
    return false;
#endif
}

static void test_conv_amx(void **state) {
    if (!cpu_has_amx_bf16()) {
        printf("conv on AMX tiles: no AMX-BF16 on this CPU, not run\n");
        return;
    }
    static const ConvSpec fixed[] = {
        {2, 1, 64, 56, 56, 256, 1, 1, 1, 1, 1, 1, 1, {0}, "relu", 0, 0, true, true},
        {2, 1, 300, 9, 9, 40, 1, 1, 1, 1, 1, 1, 1, {0}, NULL, 0, 0, true, false},
        {2, 1, 512, 7, 7, 520, 1, 1, 1, 1, 1, 1, 1, {0}, "relu", 0, 0, true, true},
        {2, 1, 130, 14, 14, 17, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1}, "silu", 0, 0, true, false},
        {2, 1, 64, 30, 36, 72, 3, 3, 2, 2, 1, 1, 1, {1, 1, 1, 1}, "clip", 0, 6, true, true},
        {2, 1, 256, 7, 7, 512, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1}, "relu", 0, 0, true, false},
        {2, 1, 3, 45, 45, 64, 7, 7, 2, 2, 1, 1, 1, {3, 3, 3, 3}, "relu", 0, 0, true, false},
        {2, 1, 96, 28, 28, 48, 1, 1, 2, 2, 1, 1, 1, {0}, "sigmoid", 0, 0, true, true},
        {2, 2, 40, 11, 13, 33, 3, 3, 1, 1, 2, 2, 1, {2, 2, 2, 2}, "tanh", 0, 0, false, false},
        {1, 1, 70, 1, 200, 40, 1, 5, 1, 1, 1, 1, 1, {0, 2, 0, 2}, "leaky_relu", 0.1f, 0, true, true},
        {2, 1, 48, 20, 20, 64, 3, 3, 1, 1, 1, 1, 2, {1, 1, 1, 1}, "relu", 0, 0, true, false},
    };
    double worst = 0;
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
        double r = check_conv_kernel(&fixed[i], 1300 + i, true);
        worst = r > worst ? r : worst;
    }
    int ran = 0;
    double r = random_convs(4242, 150, 2000, true, &ran);
    worst = r > worst ? r : worst;
    printf("conv on AMX tiles (bf16x3): %zu fixed and %d random shapes, worst error %.3f of the "
           "bound\n", sizeof fixed / sizeof *fixed, ran, worst);
    assert_true(worst <= 1);
    /* An infinite input: infinite outputs as f32's (the split cannot carry
     * it: the FMA product runs), NaN where the interpreter's is; the map
     * small enough (n = 25 < m) that threads split rows and share B's
     * split, whose flag must send every share to the FMAs. */
    ConvSpec k = {2, 1, 40, 5, 5, 48, 3, 3, 1, 1, 1, 1, 1, {1, 1, 1, 1}, NULL, 0, 0, true, false};
    Case c = {0};
    build_conv(&c.d, &k, true);
    case_alloc(&c, 77);
    ((float *)c.fast[1])[2 * 5 + 2] = ((float *)c.ref[1])[2 * 5 + 2] = INFINITY;
    ((float *)c.fast[1])[25 + 5] = ((float *)c.ref[1])[25 + 5] = -INFINITY;
    assert_true(case_reference(&c, false));
    run_kernel(&c.d, AMX_CONV(), AMX_CONV(_work), c.fast);
    int infinite = 0;
    for (int64_t i = 0; i < desc_numel(&c.d, 0); i++) {
        float got = ((float *)c.fast[0])[i], want = ((float *)c.ref[0])[i];
        infinite += isinf(want) != 0;
        if (isfinite(want) ? !isfinite(got) : !(got == want || (isnan(got) && isnan(want))))
            fail_msg("conv (amx) with infinite inputs: element %lld %g, interpreter %g",
                     (long long)i, (double)got, (double)want);
    }
    assert_true(infinite > 0);
    check_thread_shares(&c, AMX_CONV(), AMX_CONV(_work), "conv (amx) with infinite inputs");
    case_free(&c);
}

/* Convolutions of 3 spatial axes (conv_direct: a plain loop), dense,
 * grouped and depthwise, with strides, pads, dilations, a bias and a fused
 * activation, against the interpreter: sums of C/group * taps + 1 terms in
 * another order, so sum_tol's bound. */
static void test_conv_3d(void **state) {
    uint64_t s = 777;
    double worst = 0;
    int ran = 0;
    for (int i = 0; i < 40; i++) {
        int64_t group = i % 3 == 0 ? 1 : rnd(&s, 1, 3), cg = rnd(&s, 1, 3), mg = rnd(&s, 1, 3);
        if (i % 5 == 0)
            cg = mg = 1; /* depthwise */
        int64_t n = rnd(&s, 1, 2), c = group * cg, m = group * mg;
        int64_t x[5] = {n, c}, y[5] = {n, m}, w[5] = {m, cg}, k[3], st[3], dil[3], pads[6];
        bool ok = true;
        for (int j = 0; j < 3; j++) {
            k[j] = w[2 + j] = rnd(&s, 1, 3);
            st[j] = rnd(&s, 1, 2);
            dil[j] = rnd(&s, 1, 2);
            pads[j] = rnd(&s, 0, 2);
            pads[3 + j] = rnd(&s, 0, 2);
            x[2 + j] = rnd(&s, 1, 7);
            y[2 + j] = out_size(x[2 + j], k[j], st[j], dil[j], pads[j], pads[3 + j]);
            ok = ok && y[2 + j] >= 1;
        }
        if (!ok)
            continue;
        const char *act = acts[rnd(&s, 0, 6)];
        Case cs = {0};
        for (int with_act = 1; with_act >= 0; with_act--) {
            Desc *d = with_act ? &cs.d : &cs.dmag;
            desc_begin(d, NK_CONV, 1);
            desc_operand(d, 5, y);
            desc_operand(d, 5, x);
            desc_operand(d, 5, w);
            desc_operand(d, 1, (int64_t[]){m});
            desc_ints(d, AK_kernel, 3, k);
            desc_ints(d, AK_strides, 3, st);
            desc_ints(d, AK_pads, 6, pads);
            desc_ints(d, AK_dilations, 3, dil);
            desc_int(d, AK_group, group);
            if (with_act && act) {
                desc_act(d, act);
                desc_float(d, AK_act_alpha, 0.1f);
                desc_float(d, AK_act_beta, 6);
            }
        }
        case_alloc(&cs, (uint64_t)i);
        assert_true(case_reference(&cs, true));
        run_kernel(&cs.d, libjit_conv_f32, libjit_conv_f32_work, cs.fast);
        char what[120];
        snprintf(what, sizeof what, "conv 3-D n%lld c%lld m%lld g%lld %s", (long long)n,
                 (long long)c, (long long)m, (long long)group, act ? act : "-");
        double r = check_conv_case(&cs, sum_tol(cg * k[0] * k[1] * k[2] + 1, act), what,
                                   cg == 1 && mg == 1 && group > 1);
        check_thread_shares(&cs, libjit_conv_f32, libjit_conv_f32_work, what);
        worst = r > worst ? r : worst;
        ran++;
        case_free(&cs);
    }
    printf("conv 3-D: %d random shapes, worst error %.3f of the bound\n", ran, worst);
    assert_true(ran > 20 && worst <= 1);
}

/* ---- winograd_conv --------------------------------------------------------- */

/* libjit_winograd_conv_f32, and the interpreter's winograd_conv (the
 * libjit kernel's fallback), against direct convolution computed here in
 * double, on random 3x3 stride-1 convolutions, for both transforms.
 *
 * The bound. Each stage rounds a sum of terms, so (Higham, ch. 3) the
 * computed output differs from the exact one by at most gamma_n times the
 * same computation on |values| with |matrices|, n the rounding steps along
 * the way: the filter rounded once to f32 (1), the input transform's two
 * sums of at most alpha products each (2 * alpha), the channel sum (C, and
 * 1 for its products), the output transform's two sums (2 * alpha), the
 * bias (1): n = C + 4 alpha + 3. That computation on magnitudes is at most
 * beta C max|w| max|x| + max|b|, beta = winograd_amplification (from the
 * transform's constants alone; direct convolution's is 9). So
 *     max |y - y_exact| <= gamma_{C + 4 alpha + 3} (beta C max|w| max|x| + max|b|)
 * relative to the largest magnitude the operands allow; relu, 1-Lipschitz,
 * keeps it. A wrong tile or transform is off by the output's own size,
 * about sqrt(9C) max|w| max|x| / 3, far above it. */
typedef struct WinoSpec {
    int64_t n, c, h, w, m;
    int64_t pads[4];
    bool relu, bias;
    bool summand; /* fuse-conv-add's operand, added before the relu; implies a bias */
} WinoSpec;

/* The worst error over the bound; *rel: the worst error over max|y|. */
static double check_winograd(const WinoTransform *t, const WinoSpec *k, uint64_t seed,
                             double *rel) {
    int64_t oh = k->h + k->pads[0] + k->pads[2] - 2, ow = k->w + k->pads[1] + k->pads[3] - 2;
    int64_t a2 = t->alpha * t->alpha;
    Case c = {0};
    desc_begin(&c.d, NK_WINOGRAD_CONV, 1);
    desc_operand(&c.d, 4, (int64_t[]){k->n, k->m, oh, ow});
    desc_operand(&c.d, 4, (int64_t[]){k->n, k->c, k->h, k->w});
    desc_operand(&c.d, 3, (int64_t[]){a2, k->m, k->c});
    if (k->bias || k->summand)
        desc_operand(&c.d, 1, (int64_t[]){k->m});
    if (k->summand)
        desc_operand(&c.d, 4, (int64_t[]){k->n, k->m, oh, ow});
    desc_ints(&c.d, AK_pads, 4, k->pads);
    if (k->relu)
        desc_act(&c.d, "relu");
    case_alloc(&c, seed);
    float *x = c.fast[1], *u = c.fast[2], *b = k->bias || k->summand ? c.fast[3] : NULL;
    const float *sum = k->summand ? c.fast[4] : NULL;
    float *w = malloc((size_t)(k->m * k->c * 9) * sizeof(float));
    uint64_t r = seed * 7919 + 1;
    double maxw = 0, maxx = 0, maxb = 0, maxy = 0, maxr = 0, worst = 0;
    for (int64_t i = 0; i < k->m * k->c * 9; i++) {
        w[i] = (float)((double)(rng_next(&r) >> 11) * 0x1p-53 * 2 - 1);
        maxw = fmax(maxw, fabs(w[i]));
    }
    winograd_filter(t, w, k->m, k->c, u);
    for (int64_t i = 0; i < k->n * k->c * k->h * k->w; i++)
        maxx = fmax(maxx, fabs(x[i]));
    for (int64_t i = 0; b && i < k->m; i++)
        maxb = fmax(maxb, fabs(b[i]));
    for (int64_t i = 0; sum && i < k->n * k->m * oh * ow; i++)
        maxr = fmax(maxr, fabs(sum[i]));
    run_kernel(&c.d, libjit_winograd_conv_f32, libjit_winograd_conv_f32_work, c.fast);
    assert_true(case_reference(&c, false)); /* the interpreter's winograd_conv, in c.ref */
    const float *y = c.fast[0], *yi = c.ref[0];
    /* The summand: one more rounding step and its magnitude. */
    double bound = gamma_f32(k->c + 4 * t->alpha + 3 + k->summand) *
                   (winograd_amplification(t) * (double)k->c * maxw * maxx + maxb + maxr);
    for (int64_t img = 0; img < k->n; img++)
        for (int64_t m = 0; m < k->m; m++)
            for (int64_t oy = 0; oy < oh; oy++)
                for (int64_t ox = 0; ox < ow; ox++) {
                    double s = b ? b[m] : 0;
                    for (int64_t ch = 0; ch < k->c; ch++)
                        for (int i = 0; i < 3; i++)
                            for (int j = 0; j < 3; j++) {
                                int64_t yy = oy + i - k->pads[0], xx = ox + j - k->pads[1];
                                if (yy >= 0 && yy < k->h && xx >= 0 && xx < k->w)
                                    s += (double)w[((m * k->c + ch) * 3 + i) * 3 + j] *
                                         x[((img * k->c + ch) * k->h + yy) * k->w + xx];
                            }
                    int64_t at = ((img * k->m + m) * oh + oy) * ow + ox;
                    if (sum)
                        s += sum[at];
                    if (k->relu)
                        s = s > 0 ? s : 0;
                    double got = y[at], ref = yi[at];
                    double e = isnan(got) ? INFINITY : fabs(got - s);
                    e = fmax(e, isnan(ref) ? INFINITY : fabs(ref - s));
                    maxy = fmax(maxy, fabs(s));
                    *rel = fmax(*rel, e);
                    worst = fmax(worst, e / bound);
                }
    *rel = maxy > 0 ? *rel / maxy : *rel;
    if (worst > 1)
        fprintf(stderr, "FAIL winograd F(%d) n%lld c%lld %lldx%lld -> m%lld p%lld,%lld,%lld,%lld: "
                "%.3g x the bound\n", t->m, (long long)k->n, (long long)k->c, (long long)k->h,
                (long long)k->w, (long long)k->m, (long long)k->pads[0], (long long)k->pads[1],
                (long long)k->pads[2], (long long)k->pads[3], worst);
    check_static_scratch(&c, libjit_winograd_conv_f32, libjit_winograd_conv_f32_work,
                         libjit_winograd_conv_f32_scratch, "winograd_conv");
    check_thread_shares(&c, libjit_winograd_conv_f32, libjit_winograd_conv_f32_work,
                        "winograd_conv");
    free(w);
    case_free(&c);
    return worst;
}

static void test_winograd(void **state) {
    static const WinoSpec fixed[] = {
        {1, 64, 56, 56, 64, {1, 1, 1, 1}, true, true, false},
        {1, 256, 14, 14, 256, {1, 1, 1, 1}, false, true, false},
        {1, 16, 55, 55, 64, {1, 1, 1, 1}, true, true, false},
        {2, 3, 9, 7, 5, {0, 2, 1, 0}, false, false, false},
        {8, 1300, 12, 12, 64, {1, 1, 1, 1}, true, true, false}, /* the products' deep block */
        /* rows of more tiles than a vector has lanes (the column split's
         * and merge's several steps): 70 wide, 18 tiles of 4 */
        {1, 8, 10, 70, 16, {1, 1, 1, 1}, true, true, false},
        {1, 8, 9, 93, 16, {1, 0, 1, 2}, true, true, true},
        /* with a summand (fuse-conv-add): ResNet's, a partial last tile */
        {1, 64, 56, 56, 64, {1, 1, 1, 1}, true, true, true},
        {2, 24, 13, 11, 40, {1, 0, 2, 1}, false, true, true},
    };
    const WinoTransform *ts[2] = {&wino_f2, &wino_f4};
    for (int f = 0; f < 2; f++) {
        double worst = 0, rel = 0;
        uint64_t s = 777 + (uint64_t)f;
        int ran = 0;
        for (int i = 0; i < 60; i++) {
            WinoSpec k = {rnd(&s, 1, 2), rnd(&s, 1, 40), rnd(&s, 1, 30), rnd(&s, 1, 30),
                          rnd(&s, 1, 40), {0}, rnd(&s, 0, 1) != 0, rnd(&s, 0, 3) != 0,
                          i % 4 == 0};
            int nfixed = (int)(sizeof fixed / sizeof *fixed);
            if (i < nfixed)
                k = fixed[i];
            for (int j = 0; i >= nfixed && j < 4; j++)
                k.pads[j] = rnd(&s, 0, 2);
            if (k.h + k.pads[0] + k.pads[2] < 3 || k.w + k.pads[1] + k.pads[3] < 3)
                continue;
            double r = 0, e = check_winograd(ts[f], &k, (uint64_t)i, &r);
            worst = fmax(worst, e);
            rel = fmax(rel, r);
            ran++;
        }
        printf("winograd F(%dx%d,3x3): amplification %.1f (direct 9), %d shapes, worst error "
               "%.3f of the bound, %.2e of max|y|\n",
               ts[f]->m, ts[f]->m, winograd_amplification(ts[f]), ran, worst, rel);
        assert_true(worst <= 1);
    }
}

/* ---- fully_connected, matmul ------------------------------------------------ */

static void test_fully_connected(void **state) {
    uint64_t s = 777;
    double worst = 0;
    for (int i = 0; i < 120; i++) {
        int64_t m = rnd(&s, 0, 2) ? 1 : rnd(&s, 1, 70), k = rnd(&s, 0, 3) ? rnd(&s, 1, 80) : rnd(&s, 200, 700);
        int64_t n = rnd(&s, 1, rnd(&s, 0, 1) ? 60 : 500);
        if (i == 0) /* B packed (m > 32) in one deep block: the heap's (scratch) */
            m = 48, k = 700, n = 100;
        if (i == 1) /* one row (gemv.c), C past one chunk of 1024 columns, a k tail of 3 */
            m = 1, k = 1283, n = 1100;
        const char *act = acts[rnd(&s, 0, 6)];
        Case c = {0};
        for (int pass = 0; pass < 2; pass++) {
            Desc *d = pass ? &c.dmag : &c.d;
            desc_begin(d, NK_FULLY_CONNECTED, 1);
            desc_operand(d, 2, (int64_t[]){m, n});
            desc_operand(d, 2, (int64_t[]){m, k});
            desc_operand(d, 2, (int64_t[]){k, n});
            desc_operand(d, 1, (int64_t[]){n});
            if (!pass && act) {
                desc_act(d, act);
                desc_float(d, AK_act_alpha, -0.25f);
                desc_float(d, AK_act_beta, 0.5f);
            }
        }
        case_alloc(&c, (uint64_t)i);
        assert_true(case_reference(&c, true));
        run_kernel(&c.d, libjit_fully_connected_f32, libjit_fully_connected_f32_work, c.fast);
        char what[120];
        snprintf(what, sizeof what, "fully_connected %lldx%lld . %lldx%lld %s", (long long)m,
                 (long long)k, (long long)k, (long long)n, act ? act : "-");
        double r = case_check(&c, 0, sum_tol(k + 1, act), what);
        check_static_scratch(&c, libjit_fully_connected_f32, libjit_fully_connected_f32_work,
                             libjit_fully_connected_f32_scratch, what);
        worst = r > worst ? r : worst;
        case_free(&c);
    }
    printf("fully_connected: worst error %.3f of the bound\n", worst);
    assert_true(worst <= 1);
}

static void test_matmul(void **state) {
    uint64_t s = 4242;
    double worst = 0;
    for (int i = 0; i < 150; i++) {
        int64_t m = rnd(&s, 1, 40), k = rnd(&s, 1, rnd(&s, 0, 3) ? 40 : 300), n = rnd(&s, 1, 120);
        if (i == 0) /* B packed (m > 32) in one deep block: the heap's (scratch) */
            m = 40, k = 900, n = 100;
        int ba = (int)rnd(&s, 0, 2), bb = (int)rnd(&s, 0, 2), rank = ba > bb ? ba : bb;
        int64_t batch[2] = {rnd(&s, 1, 4), rnd(&s, 1, 3)};
        int64_t ad[5], bd[5], yd[5];
        int ra = 0, rb = 0, ry = 0;
        /* Batch axes right-aligned; an operand has 1 where it broadcasts. */
        for (int j = 0; j < rank; j++) {
            int64_t full = batch[2 - rank + j];
            if (j >= rank - ba)
                ad[ra++] = rnd(&s, 0, 3) ? full : 1;
            if (j >= rank - bb)
                bd[rb++] = rnd(&s, 0, 3) ? full : 1;
        }
        for (int j = 0; j < rank; j++) {
            int64_t x = j >= rank - ba ? ad[j - (rank - ba)] : 1, y = j >= rank - bb ? bd[j - (rank - bb)] : 1;
            yd[ry++] = x > y ? x : y;
        }
        bool a1 = rank == 0 && !rnd(&s, 0, 5), b1 = rank == 0 && !rnd(&s, 0, 5);
        if (!a1)
            ad[ra++] = m;
        ad[ra++] = k;
        bd[rb++] = k;
        if (!b1)
            bd[rb++] = n;
        if (!a1)
            yd[ry++] = m;
        if (!b1)
            yd[ry++] = n;
        Case c = {0};
        desc_begin(&c.d, NK_MATMUL, 1);
        desc_operand(&c.d, ry, yd);
        desc_operand(&c.d, ra, ad);
        desc_operand(&c.d, rb, bd);
        case_alloc(&c, (uint64_t)i);
        assert_true(case_reference(&c, true));
        run_kernel(&c.d, libjit_matmul_f32, libjit_matmul_f32_work, c.fast);
        char what[120];
        snprintf(what, sizeof what, "matmul rank %d x rank %d, m%lld k%lld n%lld", ra, rb, (long long)m,
                 (long long)k, (long long)n);
        double r = case_check(&c, 0, sum_tol(k, NULL), what);
        check_static_scratch(&c, libjit_matmul_f32, libjit_matmul_f32_work,
                             libjit_matmul_f32_scratch, what);
        worst = r > worst ? r : worst;
        case_free(&c);
    }
    printf("matmul: worst error %.3f of the bound\n", worst);
    assert_true(worst <= 1);
}

/* ---- pooling ------------------------------------------------------------------ */

/* window_out_size (core/infer.c), for ceil_mode. */
static int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1, bool ceil) {
    int64_t avail = in + p0 + p1 - (d * (k - 1) + 1);
    if (avail < 0)
        return 0;
    if (!ceil)
        return avail / s + 1;
    int64_t out = (avail + s - 1) / s + 1;
    return (out - 1) * s >= in + p0 ? out - 1 : out;
}

static void test_pool(void **state) {
    uint64_t s = 99;
    double worst = 0;
    int ran = 0;
    for (int i = 0; i < 300; i++) {
        bool avg = rnd(&s, 0, 1), ceil = !rnd(&s, 0, 2), incl = rnd(&s, 0, 1);
        int ns = rnd(&s, 0, 7) ? 2 : 1;
        int64_t n = rnd(&s, 1, 2), c = rnd(&s, 1, 9), h = ns == 2 ? rnd(&s, 1, 40) : 1, w = rnd(&s, 1, 40);
        int64_t kh = ns == 2 ? rnd(&s, 1, 4) : 1, kw = rnd(&s, 1, 4), sh = ns == 2 ? rnd(&s, 1, 3) : 1;
        int64_t sw = rnd(&s, 1, 3), dh = ns == 2 && !rnd(&s, 0, 5) ? 2 : 1, dw = !rnd(&s, 0, 5) ? 2 : 1;
        int64_t p[4] = {ns == 2 ? rnd(&s, 0, kh - 1) : 0, rnd(&s, 0, kw - 1), ns == 2 ? rnd(&s, 0, kh - 1) : 0,
                        rnd(&s, 0, kw - 1)};
        int64_t oh = ns == 2 ? pool_out(h, kh, sh, dh, p[0], p[2], ceil) : 1;
        int64_t ow = pool_out(w, kw, sw, dw, p[1], p[3], ceil);
        if (oh < 1 || ow < 1)
            continue;
        /* Every other max pool also gives its index (the gradient's), exact. */
        bool index = !avg && i % 2;
        Case cs = {0};
        desc_begin(&cs.d, avg ? NK_AVG_POOL : NK_MAX_POOL, index ? 2 : 1);
        if (ns == 2) {
            desc_operand(&cs.d, 4, (int64_t[]){n, c, oh, ow});
            if (index)
                desc_operand_elem(&cs.d, ELEM_I64, 4, (int64_t[]){n, c, oh, ow});
            desc_operand(&cs.d, 4, (int64_t[]){n, c, h, w});
            desc_ints(&cs.d, AK_kernel, 2, (int64_t[]){kh, kw});
            desc_ints(&cs.d, AK_strides, 2, (int64_t[]){sh, sw});
            desc_ints(&cs.d, AK_pads, 4, p);
            desc_ints(&cs.d, AK_dilations, 2, (int64_t[]){dh, dw});
        } else {
            desc_operand(&cs.d, 3, (int64_t[]){n, c, ow});
            if (index)
                desc_operand_elem(&cs.d, ELEM_I64, 3, (int64_t[]){n, c, ow});
            desc_operand(&cs.d, 3, (int64_t[]){n, c, w});
            desc_ints(&cs.d, AK_kernel, 1, (int64_t[]){kw});
            desc_ints(&cs.d, AK_strides, 1, (int64_t[]){sw});
            desc_ints(&cs.d, AK_pads, 2, (int64_t[]){p[1], p[3]});
            desc_ints(&cs.d, AK_dilations, 1, (int64_t[]){dw});
        }
        desc_int(&cs.d, AK_ceil_mode, ceil);
        if (avg)
            desc_int(&cs.d, AK_count_include_pad, incl);
        case_alloc(&cs, (uint64_t)i);
        assert_true(case_reference(&cs, avg));
        run_kernel(&cs.d, avg ? libjit_avg_pool_f32 : libjit_max_pool_f32,
                   avg ? libjit_avg_pool_f32_work : libjit_max_pool_f32_work, cs.fast);
        char what[160];
        snprintf(what, sizeof what, "%s %lldx%lld k%lldx%lld s%lld,%lld d%lld,%lld p%lld,%lld,%lld,%lld%s%s",
                 avg ? "avg_pool" : "max_pool", (long long)h, (long long)w, (long long)kh, (long long)kw,
                 (long long)sh, (long long)sw, (long long)dh, (long long)dw, (long long)p[0], (long long)p[1],
                 (long long)p[2], (long long)p[3], ceil ? " ceil" : "", incl ? " incl" : "");
        /* The average: a sum of kh*kw terms, then one rounded division. */
        Tol t = avg ? sum_tol(kh * kw + 2, NULL) : (Tol){0, 0, 0};
        double r = case_check(&cs, 0, t, what);
        if (index) {
            if (memcmp(cs.fast[1], cs.ref[1], (size_t)desc_numel(&cs.d, 1) * sizeof(int64_t))) {
                printf("%s: the index differs from the interpreter's\n", what);
                fail();
            }
        } else {
            check_static_scratch(&cs, avg ? libjit_avg_pool_f32 : libjit_max_pool_f32,
                                 avg ? libjit_avg_pool_f32_work : libjit_max_pool_f32_work,
                                 avg ? libjit_avg_pool_f32_scratch : libjit_max_pool_f32_scratch, what);
        }
        worst = r > worst ? r : worst;
        ran++;
        case_free(&cs);
    }
    printf("pooling: %d shapes, worst error %.3f of the bound\n", ran, worst);
    assert_true(worst <= 1);
}

static void test_global_pool(void **state) {
    uint64_t s = 5;
    double worst = 0;
    for (int i = 0; i < 60; i++) {
        bool avg = rnd(&s, 0, 1);
        int64_t n = rnd(&s, 1, 2), c = rnd(&s, 1, 40), h = rnd(&s, 1, 30), w = rnd(&s, 1, 30);
        Case cs = {0};
        desc_begin(&cs.d, avg ? NK_GLOBAL_AVG_POOL : NK_GLOBAL_MAX_POOL, 1);
        desc_operand(&cs.d, 4, (int64_t[]){n, c, 1, 1});
        desc_operand(&cs.d, 4, (int64_t[]){n, c, h, w});
        case_alloc(&cs, (uint64_t)i);
        assert_true(case_reference(&cs, avg));
        run_kernel(&cs.d, avg ? libjit_global_avg_pool_f32 : libjit_global_max_pool_f32,
                   avg ? libjit_global_avg_pool_f32_work : libjit_global_max_pool_f32_work, cs.fast);
        double r = case_check(&cs, 0, avg ? sum_tol(h * w + 2, NULL) : (Tol){0, 0, 0},
                              avg ? "global_avg_pool" : "global_max_pool");
        worst = r > worst ? r : worst;
        case_free(&cs);
    }
    printf("global pooling: worst error %.3f of the bound\n", worst);
    assert_true(worst <= 1);
}

/* ---- every padding, stride and dilation at small sizes (issue 20) ----------
 *
 * The random shapes above drew pads from [0, k-1] on every side at once and
 * never met a 1x1 convolution padded only at its end, whose output is
 * larger than its input -- the native pointwise path took it for "output =
 * input plane". Here each axis takes every (size, kernel, stride,
 * dilation, begin pad, end pad) of a small set, pads up to 3 so that some
 * windows lie wholly in the padding (a convolution's output there is its
 * bias, a max pool's -inf, an average's 0). 1-D: the whole set for each
 * channel form (dense, grouped, depthwise); 2-D: the product of a smaller
 * set over both axes, the form rotating; 3-D (the interpreter's kernel on
 * both sides: libjit has no 3-D path) one axis at a time. */

typedef struct AxisSpec {
    int64_t in, k, s, d, p0, p1;
} AxisSpec;

/* The axis settings of one enumeration, in a fixed order; out-size 0 ones
 * included (the callers skip them). */
static int axis_specs(AxisSpec *out, int max, const int64_t *sizes, int nsizes, int64_t kmax,
                      int64_t smax, int64_t dmax, int64_t pmax) {
    int n = 0;
    for (int a = 0; a < nsizes; a++)
        for (int64_t k = 1; k <= kmax; k++)
            for (int64_t s = 1; s <= smax; s++)
                for (int64_t d = 1; d <= dmax; d++)
                    for (int64_t p0 = 0; p0 <= pmax; p0++)
                        for (int64_t p1 = 0; p1 <= pmax && n < max; p1++)
                            out[n++] = (AxisSpec){sizes[a], k, s, d, p0, p1};
    return n;
}

typedef enum { FORM_DENSE, FORM_GROUPED, FORM_DEPTHWISE, FORM_COUNT } ConvForm;

/* c, m, group of a form; 2 images so that image strides are exercised. */
static void form_channels(ConvForm f, int64_t *c, int64_t *m, int64_t *g) {
    static const int64_t t[FORM_COUNT][3] = {{3, 2, 1}, {4, 6, 2}, {3, 3, 3}};
    *c = t[f][0];
    *m = t[f][1];
    *g = t[f][2];
}

static void spec_text(char *buf, size_t len, const char *what, int ns, const AxisSpec *ax) {
    int at = snprintf(buf, len, "%s", what);
    for (int i = 0; i < ns && at < (int)len; i++)
        at += snprintf(buf + at, len - (size_t)at, " [in%lld k%lld s%lld d%lld p%lld,%lld]",
                       (long long)ax[i].in, (long long)ax[i].k, (long long)ax[i].s,
                       (long long)ax[i].d, (long long)ax[i].p0, (long long)ax[i].p1);
}

/* One convolution over ns axes; false if its output would be empty. */
static bool conv_axes(int ns, const AxisSpec *ax, ConvForm form, uint64_t seed, double *worst) {
    int64_t c, m, g, yd[5], xd[5], wd[5], k[3], s[3], d[3], p[6];
    form_channels(form, &c, &m, &g);
    yd[0] = xd[0] = 2;
    yd[1] = m;
    xd[1] = c;
    wd[0] = m;
    wd[1] = c / g;
    for (int i = 0; i < ns; i++) {
        yd[2 + i] = out_size(ax[i].in, ax[i].k, ax[i].s, ax[i].d, ax[i].p0, ax[i].p1);
        if (yd[2 + i] < 1)
            return false;
        xd[2 + i] = ax[i].in;
        wd[2 + i] = k[i] = ax[i].k;
        s[i] = ax[i].s;
        d[i] = ax[i].d;
        p[i] = ax[i].p0;
        p[ns + i] = ax[i].p1;
    }
    Case cs = {0};
    desc_begin(&cs.d, NK_CONV, 1);
    desc_operand(&cs.d, 2 + ns, yd);
    desc_operand(&cs.d, 2 + ns, xd);
    desc_operand(&cs.d, 2 + ns, wd);
    desc_operand(&cs.d, 1, (int64_t[]){m});
    desc_ints(&cs.d, AK_kernel, ns, k);
    desc_ints(&cs.d, AK_strides, ns, s);
    desc_ints(&cs.d, AK_pads, 2 * ns, p);
    desc_ints(&cs.d, AK_dilations, ns, d);
    desc_int(&cs.d, AK_group, g);
    case_alloc(&cs, seed);
    assert_true(case_reference(&cs, true));
    run_kernel(&cs.d, libjit_conv_f32, libjit_conv_f32_work, cs.fast);
    char what[300];
    static const char *const forms[FORM_COUNT] = {"conv", "grouped conv", "depthwise conv"};
    spec_text(what, sizeof what, forms[form], ns, ax);
    int64_t taps = 1;
    for (int i = 0; i < ns; i++)
        taps *= ax[i].k;
    Tol tol = sum_tol(c / g * taps + 1, NULL);
    double r = check_conv_case(&cs, tol, what, form == FORM_DEPTHWISE);
    case_free(&cs);
    *worst = r > *worst ? r : *worst;
    return true;
}

typedef enum { POOL_MAXP, POOL_AVG_EXCL, POOL_AVG_INCL, POOL_KINDS } PoolCase;

/* One pooling over ns axes (3 channels, 2 images); false if empty. */
static bool pool_axes(int ns, const AxisSpec *ax, PoolCase kind, bool ceil, uint64_t seed,
                      double *worst) {
    int64_t yd[5] = {2, 3}, xd[5] = {2, 3}, k[3], s[3], d[3], p[6];
    for (int i = 0; i < ns; i++) {
        yd[2 + i] = pool_out(ax[i].in, ax[i].k, ax[i].s, ax[i].d, ax[i].p0, ax[i].p1, ceil);
        if (yd[2 + i] < 1)
            return false;
        xd[2 + i] = ax[i].in;
        k[i] = ax[i].k;
        s[i] = ax[i].s;
        d[i] = ax[i].d;
        p[i] = ax[i].p0;
        p[ns + i] = ax[i].p1;
    }
    bool avg = kind != POOL_MAXP;
    Case cs = {0};
    desc_begin(&cs.d, avg ? NK_AVG_POOL : NK_MAX_POOL, 1);
    desc_operand(&cs.d, 2 + ns, yd);
    desc_operand(&cs.d, 2 + ns, xd);
    desc_ints(&cs.d, AK_kernel, ns, k);
    desc_ints(&cs.d, AK_strides, ns, s);
    desc_ints(&cs.d, AK_pads, 2 * ns, p);
    desc_ints(&cs.d, AK_dilations, ns, d);
    desc_int(&cs.d, AK_ceil_mode, ceil);
    if (avg)
        desc_int(&cs.d, AK_count_include_pad, kind == POOL_AVG_INCL);
    case_alloc(&cs, seed);
    assert_true(case_reference(&cs, avg));
    run_kernel(&cs.d, avg ? libjit_avg_pool_f32 : libjit_max_pool_f32,
               avg ? libjit_avg_pool_f32_work : libjit_max_pool_f32_work, cs.fast);
    static const char *const kinds[POOL_KINDS] = {"max_pool", "avg_pool", "avg_pool incl"};
    char what[300];
    spec_text(what, sizeof what, kinds[kind], ns, ax);
    if (ceil)
        strncat(what, " ceil", sizeof what - strlen(what) - 1);
    int64_t taps = 1;
    for (int i = 0; i < ns; i++)
        taps *= ax[i].k;
    /* The average: a sum of the window's taps, then one rounded division;
     * the maximum is exact. */
    double r = case_check(&cs, 0, avg ? sum_tol(taps + 2, NULL) : (Tol){0, 0, 0}, what);
    case_free(&cs);
    *worst = r > *worst ? r : *worst;
    return true;
}

enum { AXIS_MAX = 2048 };

static void test_conv_pads_exhaustive(void **state) {
    static AxisSpec one[AXIS_MAX], two[AXIS_MAX];
    int n1 = axis_specs(one, AXIS_MAX, (int64_t[]){1, 2, 3, 5}, 4, 3, 3, 2, 3);
    int n2 = axis_specs(two, AXIS_MAX, (int64_t[]){1, 3}, 2, 3, 2, 2, 2);
    double worst = 0;
    int ran[4] = {0};
    uint64_t seed = 0;
    for (int i = 0; i < n1; i++)
        for (int f = 0; f < FORM_COUNT; f++)
            ran[1] += conv_axes(1, &one[i], (ConvForm)f, seed++, &worst);
    for (int i = 0; i < n2; i++)
        for (int j = 0; j < n2; j++)
            ran[2] += conv_axes(2, (AxisSpec[]){two[i], two[j]}, (ConvForm)((i + j) % FORM_COUNT),
                                seed++, &worst);
    AxisSpec plain = {2, 1, 1, 1, 0, 1};
    for (int a = 0; a < 3; a++)
        for (int i = 0; i < n1; i += 3) {
            AxisSpec ax[3] = {plain, plain, plain};
            ax[a] = one[i];
            ran[3] += conv_axes(3, ax, (ConvForm)(i % FORM_COUNT), seed++, &worst);
        }
    printf("conv, every pad/stride/dilation: %d 1-D, %d 2-D, %d 3-D, worst error %.3f of the bound\n",
           ran[1], ran[2], ran[3], worst);
    assert_true(worst <= 1);
}

static void test_pool_pads_exhaustive(void **state) {
    static AxisSpec one[AXIS_MAX], two[AXIS_MAX];
    int n1 = axis_specs(one, AXIS_MAX, (int64_t[]){1, 2, 3, 5}, 4, 3, 3, 2, 3);
    int n2 = axis_specs(two, AXIS_MAX, (int64_t[]){1, 3}, 2, 3, 2, 2, 2);
    double worst = 0;
    int ran[4] = {0};
    uint64_t seed = 0;
    for (int i = 0; i < n1; i++)
        for (int k = 0; k < POOL_KINDS; k++)
            for (int ceil = 0; ceil < 2; ceil++)
                ran[1] += pool_axes(1, &one[i], (PoolCase)k, ceil, seed++, &worst);
    for (int i = 0; i < n2; i++)
        for (int j = 0; j < n2; j++)
            ran[2] += pool_axes(2, (AxisSpec[]){two[i], two[j]}, (PoolCase)((i + j) % POOL_KINDS),
                                (i + 2 * j) % 5 == 0, seed++, &worst);
    AxisSpec plain = {2, 1, 1, 1, 0, 1};
    for (int a = 0; a < 3; a++)
        for (int i = 0; i < n1; i += 3) {
            AxisSpec ax[3] = {plain, plain, plain};
            ax[a] = one[i];
            ran[3] += pool_axes(3, ax, (PoolCase)(i % POOL_KINDS), i % 2, seed++, &worst);
        }
    printf("pooling, every pad/stride/dilation: %d 1-D, %d 2-D, %d 3-D, worst error %.3f of the bound\n",
           ran[1], ran[2], ran[3], worst);
    assert_true(worst <= 1);
}

/* ---- elementwise ------------------------------------------------------------- */

typedef struct Elementwise {
    const char *name;
    NodeKind kind;
    KernelFn fn;
    WorkFn work;
} Elementwise;

#define ELEMENTWISE_ROW(name, KIND) {#name, KIND, libjit_##name##_f32, libjit_##name##_f32_work},
static const Elementwise unaries[] = {LJ_UNARY_KERNELS(ELEMENTWISE_ROW)};
static const Elementwise binaries[] = {LJ_BINARY_KERNELS(ELEMENTWISE_ROW)};

/* Exact, except the approximations vec.h states, gelu (libm's erfc in
 * double against erf, then the cancellation the header describes) and
 * powf (1 ulp); hard_sigmoid and hard_swish round alpha*x + beta in f32
 * where the interpreter rounds once from double. */
static Tol unary_tol(NodeKind k) {
    switch (k) {
    case NK_EXP: return (Tol){0, 1, FLT_TINY};
    case NK_SIGMOID: return (Tol){0, 2, FLT_TINY};
    case NK_TANH: return (Tol){0, 2, 0};
    case NK_GELU: return (Tol){0, 2, 1e-14};
    case NK_HARD_SIGMOID:
    case NK_HARD_SWISH: return (Tol){0, 3, 2e-7};
    default: return (Tol){0, 0, 0};
    }
}

static void test_unary(void **state) {
    uint64_t s = 31;
    double worst = 0;
    for (size_t u = 0; u < sizeof unaries / sizeof *unaries; u++) {
        const Elementwise *e = &unaries[u];
        for (int i = 0; i < 24; i++) {
            int64_t dims[3] = {rnd(&s, 1, 3), rnd(&s, 1, 40), rnd(&s, 1, i < 4 ? 20000 : 100)};
            float scale = i % 3 == 0 ? 100.0f : i % 3 == 1 ? 1.0f : 8.0f;
            Case c = {0};
            desc_begin(&c.d, e->kind, 1);
            desc_operand(&c.d, 3, dims);
            desc_operand(&c.d, 3, dims);
            if (e->kind == NK_CLIP) {
                if (i % 4 != 1)
                    desc_float(&c.d, AK_min, -0.3f);
                if (i % 4 != 2)
                    desc_float(&c.d, AK_max, 0.6f);
            }
            if (e->kind == NK_LEAKY_RELU && i % 2)
                desc_float(&c.d, AK_alpha, 0.2f);
            if (e->kind == NK_HARD_SIGMOID && i % 2) {
                desc_float(&c.d, AK_alpha, 0.3f);
                desc_float(&c.d, AK_beta, 0.4f);
            }
            case_alloc(&c, (uint64_t)i);
            float *x = c.fast[1];
            for (int64_t j = 0; j < desc_numel(&c.d, 1); j++)
                x[j] *= scale;
            if (i % 2)
                case_alias(&c, 0, 1);
            assert_true(case_reference(&c, false));
            run_kernel(&c.d, e->fn, e->work, c.fast);
            char what[80];
            snprintf(what, sizeof what, "%s %lldx%lldx%lld%s", e->name, (long long)dims[0],
                     (long long)dims[1], (long long)dims[2], i % 2 ? " in place" : "");
            double r = case_check(&c, 0, unary_tol(e->kind), what);
            worst = r > worst ? r : worst;
            case_free(&c);
        }
    }
    printf("unary: worst error %.3f of the bound\n", worst);
    assert_true(worst <= 1);
}

/* A random broadcast: the output shape, then each operand keeps a suffix
 * of its axes with some of them 1. */
static int bcast_operand(uint64_t *s, int rank, const int64_t *out, int64_t *dims) {
    int r = rnd(s, 0, 3) ? rank : (int)rnd(s, 0, rank);
    for (int i = 0; i < r; i++)
        dims[i] = rnd(s, 0, 2) ? out[rank - r + i] : 1;
    return r;
}

static void test_binary(void **state) {
    uint64_t s = 17;
    double worst = 0;
    for (size_t b = 0; b < sizeof binaries / sizeof *binaries; b++) {
        const Elementwise *e = &binaries[b];
        for (int i = 0; i < 60; i++) {
            int rank = (int)rnd(&s, 0, 4);
            int64_t out[4], ad[4], bd[4];
            for (int j = 0; j < rank; j++)
                out[j] = rnd(&s, 1, j == rank - 1 && i < 8 ? 3000 : 20);
            int ra = bcast_operand(&s, rank, out, ad), rb = bcast_operand(&s, rank, out, bd);
            if (i % 5 == 0) /* the per-channel and scalar forms of the models */
                ra = rank, memcpy(ad, out, sizeof out), rb = 0;
            /* The output is the broadcast of the two. */
            for (int j = 0; j < rank; j++) {
                int64_t x = j >= rank - ra ? ad[j - (rank - ra)] : 1, y = j >= rank - rb ? bd[j - (rank - rb)] : 1;
                out[j] = x > y ? x : y;
            }
            Case c = {0};
            desc_begin(&c.d, e->kind, 1);
            desc_operand(&c.d, rank, out);
            desc_operand(&c.d, ra, ad);
            desc_operand(&c.d, rb, bd);
            case_alloc(&c, (uint64_t)i);
            if (e->kind == NK_POW) { /* positive bases; exponent 2 as layer norm's */
                float *x = c.fast[1], *y = c.fast[2];
                for (int64_t j = 0; j < desc_numel(&c.d, 1); j++)
                    x[j] = fabsf(x[j]) * 4;
                for (int64_t j = 0; j < desc_numel(&c.d, 2); j++)
                    y[j] = rb == 0 && i % 2 ? 2.0f : y[j] * 3;
            }
            if (i % 3 == 1 && desc_numel(&c.d, 1) == desc_numel(&c.d, 0))
                case_alias(&c, 0, 1);
            else if (i % 3 == 2 && desc_numel(&c.d, 2) == desc_numel(&c.d, 0))
                case_alias(&c, 0, 2);
            assert_true(case_reference(&c, false));
            run_kernel(&c.d, e->fn, e->work, c.fast);
            char what[80];
            snprintf(what, sizeof what, "%s rank %d: %d, %d%s", e->name, rank, ra, rb, c.alias[0] ? " in place" : "");
            double r = case_check(&c, 0, e->kind == NK_POW ? (Tol){0, 1, 0} : (Tol){0, 0, 0}, what);
            worst = r > worst ? r : worst;
            case_free(&c);
        }
    }
    printf("binary: worst error %.3f of the bound\n", worst);
    assert_true(worst <= 1);
}

/* ---- reductions, data movement ------------------------------------------------ */

static void test_reduce(void **state) {
    static const struct {
        NodeKind kind;
        KernelFn fn;
        WorkFn work;
    } kinds[] = {
        {NK_REDUCE_SUM, libjit_reduce_sum_f32, libjit_reduce_sum_f32_work},
        {NK_REDUCE_MEAN, libjit_reduce_mean_f32, libjit_reduce_mean_f32_work},
        {NK_REDUCE_MAX, libjit_reduce_max_f32, libjit_reduce_max_f32_work},
        {NK_REDUCE_MIN, libjit_reduce_min_f32, libjit_reduce_min_f32_work},
    };
    uint64_t s = 3;
    double worst = 0;
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        for (int i = 0; i < 80; i++) {
            int rank = (int)rnd(&s, 1, 4), nax = 0;
            int64_t x[4], y[4], axes[4], len = 1;
            bool keep = rnd(&s, 0, 1), red[4];
            for (int j = 0; j < rank; j++) {
                x[j] = rnd(&s, 1, rnd(&s, 0, 3) ? 12 : 300);
                red[j] = rnd(&s, 0, 1);
            }
            if (i % 4 == 0) /* the last axis, as lowered softmax and layer norm */
                for (int j = 0; j < rank; j++)
                    red[j] = j == rank - 1;
            bool all = true; /* no axes: all of them (the attribute absent or empty) */
            for (int j = 0; j < rank; j++)
                all &= !red[j];
            bool list_none = all && rnd(&s, 0, 1);
            int ry = 0;
            for (int j = 0; j < rank; j++) {
                if (red[j] || all) {
                    if (!all)
                        axes[nax++] = rnd(&s, 0, 1) ? j : j - rank;
                    len *= x[j];
                    if (keep)
                        y[ry++] = 1;
                } else {
                    y[ry++] = x[j];
                }
            }
            Case c = {0};
            desc_begin(&c.d, kinds[k].kind, 1);
            desc_operand(&c.d, ry, y);
            desc_operand(&c.d, rank, x);
            if (!list_none)
                desc_ints(&c.d, AK_axes, nax, axes);
            desc_int(&c.d, AK_keepdims, keep);
            case_alloc(&c, (uint64_t)i);
            bool sum = kinds[k].kind == NK_REDUCE_SUM || kinds[k].kind == NK_REDUCE_MEAN;
            assert_true(case_reference(&c, sum));
            run_kernel(&c.d, kinds[k].fn, kinds[k].work, c.fast);
            /* f32 sums against the interpreter's double: gamma_len + 1 rounding. */
            Tol t = sum ? (Tol){1.05 * gamma_f32(len + 2), 0, 0} : (Tol){0, 0, 0};
            char what[120];
            int at = snprintf(what, sizeof what, "%s x", node_kind_name(kinds[k].kind));
            for (int j = 0; j < rank; j++)
                at += snprintf(what + at, sizeof what - (size_t)at, " %lld%s", (long long)x[j], red[j] ? "r" : "");
            double r = case_check(&c, 0, t, what);
            worst = r > worst ? r : worst;
            case_free(&c);
        }
    }
    printf("reductions: worst error %.3f of the bound\n", worst);
    assert_true(worst <= 1);
}

static void test_transpose(void **state) {
    uint64_t s = 8;
    double worst = 0;
    for (int i = 0; i < 120; i++) {
        int rank = (int)rnd(&s, 1, 5);
        int64_t x[5], y[5], perm[5];
        for (int j = 0; j < rank; j++) {
            x[j] = rnd(&s, 1, rank > 3 ? 7 : 40);
            perm[j] = j;
        }
        for (int j = rank - 1; j > 0; j--) {
            int t = (int)rnd(&s, 0, j);
            int64_t v = perm[j];
            perm[j] = perm[t];
            perm[t] = v;
        }
        bool given = rnd(&s, 0, 5) != 0;
        for (int j = 0; j < rank; j++)
            y[j] = x[given ? perm[j] : rank - 1 - j];
        Case c = {0};
        desc_begin(&c.d, NK_TRANSPOSE, 1);
        desc_operand(&c.d, rank, y);
        desc_operand(&c.d, rank, x);
        if (given)
            desc_ints(&c.d, AK_perm, rank, perm);
        case_alloc(&c, (uint64_t)i);
        assert_true(case_reference(&c, false));
        run_kernel(&c.d, libjit_transpose_f32, libjit_transpose_f32_work, c.fast);
        double r = case_check(&c, 0, (Tol){0, 0, 0}, "transpose");
        worst = r > worst ? r : worst;
        case_free(&c);
    }
    assert_true(worst <= 1);
}

/* slice_params (core/infer.c): the output's size along one axis. */
static int64_t slice_count(int64_t dim, int64_t b, int64_t e, int64_t st) {
    if (b < 0)
        b = b < -dim ? 0 : b + dim;
    if (e < 0)
        e = e < -dim ? (st > 0 ? 0 : -1) : e + dim;
    if (st > 0) {
        b = b > dim ? dim : b;
        e = e > dim ? dim : e;
    } else {
        b = b > dim - 1 ? dim - 1 : b;
        e = e > dim - 1 ? dim - 1 : e;
    }
    int64_t c = st > 0 ? (e - b + st - 1) / st : (b - e + (-st) - 1) / (-st);
    return c > 0 ? c : 0;
}

static void test_slice(void **state) {
    uint64_t s = 21;
    double worst = 0;
    int ran = 0;
    for (int i = 0; i < 200; i++) {
        int rank = (int)rnd(&s, 1, 4);
        int64_t x[4], y[4], st[4], en[4], sp[4];
        for (int j = 0; j < rank; j++) {
            x[j] = rnd(&s, 1, 30);
            sp[j] = rnd(&s, 0, 2) ? 1 : rnd(&s, 0, 1) ? rnd(&s, 2, 3) : -rnd(&s, 1, 3);
            st[j] = rnd(&s, -x[j] - 2, x[j] + 2);
            en[j] = rnd(&s, 0, 4) ? rnd(&s, -x[j] - 2, x[j] + 2) : (sp[j] > 0 ? INT64_MAX : INT64_MIN);
            y[j] = slice_count(x[j], st[j], en[j], sp[j]);
        }
        bool empty = false;
        for (int j = 0; j < rank; j++)
            empty |= y[j] == 0;
        if (empty)
            continue;
        Case c = {0};
        desc_begin(&c.d, NK_SLICE, 1);
        desc_operand(&c.d, rank, y);
        desc_operand(&c.d, rank, x);
        desc_ints(&c.d, AK_starts, rank, st);
        desc_ints(&c.d, AK_ends, rank, en);
        desc_ints(&c.d, AK_steps, rank, sp);
        case_alloc(&c, (uint64_t)i);
        assert_true(case_reference(&c, false));
        run_kernel(&c.d, libjit_slice_f32, libjit_slice_f32_work, c.fast);
        double r = case_check(&c, 0, (Tol){0, 0, 0}, "slice");
        worst = r > worst ? r : worst;
        ran++;
        case_free(&c);
    }
    printf("slice: %d shapes\n", ran);
    assert_true(worst <= 1);
}

static void test_gather(void **state) {
    uint64_t s = 64;
    double worst = 0;
    for (int i = 0; i < 100; i++) {
        int rank = (int)rnd(&s, 1, 4), irank = (int)rnd(&s, 0, 2);
        int64_t x[4], idx[2], y[6];
        for (int j = 0; j < rank; j++)
            x[j] = rnd(&s, 1, 20);
        for (int j = 0; j < irank; j++)
            idx[j] = rnd(&s, 1, 6);
        int axis = (int)rnd(&s, 0, rank - 1), ry = 0;
        for (int j = 0; j < rank; j++) {
            if (j == axis)
                for (int t = 0; t < irank; t++)
                    y[ry++] = idx[t];
            else
                y[ry++] = x[j];
        }
        ElemKind ie = rnd(&s, 0, 1) ? ELEM_I64 : ELEM_I32;
        Case c = {0};
        desc_begin(&c.d, NK_GATHER, 1);
        desc_operand(&c.d, ry, y);
        desc_operand(&c.d, rank, x);
        desc_operand_elem(&c.d, ie, irank, idx);
        desc_int(&c.d, AK_axis, rnd(&s, 0, 1) ? axis : axis - rank);
        case_alloc(&c, (uint64_t)i);
        for (int64_t j = 0; j < desc_numel(&c.d, 2); j++) {
            int64_t v = rnd(&s, -x[axis], x[axis] - 1);
            if (ie == ELEM_I64)
                ((int64_t *)c.fast[2])[j] = v;
            else
                ((int32_t *)c.fast[2])[j] = (int32_t)v;
        }
        assert_true(case_reference(&c, false));
        run_kernel(&c.d, libjit_gather_f32, libjit_gather_f32_work, c.fast);
        double r = case_check(&c, 0, (Tol){0, 0, 0}, "gather");
        worst = r > worst ? r : worst;
        case_free(&c);
    }
    assert_true(worst <= 1);
}

static void test_cast(void **state) {
    static const ElemKind from[] = {ELEM_I64, ELEM_I32, ELEM_F64, ELEM_F32};
    double worst = 0;
    for (size_t f = 0; f < sizeof from / sizeof *from; f++) {
        Case c = {0};
        int64_t dims[2] = {37, 1001};
        desc_begin(&c.d, NK_CAST, 1);
        desc_operand(&c.d, 2, dims);
        desc_operand_elem(&c.d, from[f], 2, dims);
        desc_int(&c.d, AK_to, ELEM_F32);
        case_alloc(&c, f);
        assert_true(case_reference(&c, false));
        run_kernel(&c.d, libjit_cast_f32, libjit_cast_f32_work, c.fast);
        double r = case_check(&c, 0, (Tol){0, 0, 0}, "cast");
        worst = r > worst ? r : worst;
        case_free(&c);
    }
    assert_true(worst <= 1);
}

/* ---- conv_transpose --------------------------------------------------------------- */

/* libjit_conv_transpose_any sums in double and rounds once;
 * libjit_conv_transpose_f32 sums cg terms in f32 (a matrix product), then
 * at most taps of those and the bias (col2im); the interpreter sums n = cg
 * * taps + 1 terms in f32 (a matrix product, then the bias). Each is within
 * gamma_n S of the exact sum (the f32 kernel's cg + taps + 1 <= n terms in
 * sequence: the same bound): so within 2 gamma_n S of each other, and an
 * ulp for the rounding of the double. The last 10 cases are large enough
 * for the f32 kernel's row blocks (more than 64 rows of channel x tap) and
 * column blocks (input planes over 384 positions). */
static void test_conv_transpose(void **state) {
    static const struct {
        KernelFn fn;
        WorkFn work;
        const char *name;
    } kernels[] = {
        {libjit_conv_transpose_any, libjit_conv_transpose_any_work, "any"},
        {libjit_conv_transpose_f32, libjit_conv_transpose_f32_work, "f32"},
    };
    uint64_t s = 77;
    double worst = 0;
    for (int i = 0; i < 100; i++) {
        bool big = i >= 90;
        int ns = big ? (int)rnd(&s, 1, 2) : (int)rnd(&s, 1, 3);
        int64_t group = rnd(&s, 1, 2), cg = rnd(&s, 1, big ? 24 : 4), mg = rnd(&s, 1, big ? 40 : 3);
        int64_t x[5] = {rnd(&s, 1, 2), group * cg}, w[5] = {group * cg, mg}, y[5] = {x[0], group * mg};
        int64_t k[3], st[3], dil[3], pads[6], taps = 1;
        for (int a = 0; a < ns; a++) {
            x[2 + a] = big ? rnd(&s, ns == 1 ? 300 : 15, ns == 1 ? 900 : 30)
                           : rnd(&s, 1, ns == 3 ? 4 : 9);
            k[a] = w[2 + a] = rnd(&s, 1, 3);
            st[a] = rnd(&s, 1, 3);
            dil[a] = rnd(&s, 1, 2);
            pads[a] = rnd(&s, 0, k[a] - 1);
            pads[a + ns] = rnd(&s, 0, k[a] - 1);
            int64_t outpad = rnd(&s, 0, st[a] - 1);
            y[2 + a] = (x[2 + a] - 1) * st[a] + (k[a] - 1) * dil[a] + 1 + outpad - pads[a] - pads[a + ns];
            if (y[2 + a] < 1)
                y[2 + a] = 1, pads[a] = pads[a + ns] = 0, outpad = 0;
            taps *= k[a];
        }
        bool bias = i % 2;
        int64_t b[1] = {group * mg};
        Case c = {0};
        desc_begin(&c.d, NK_CONV_TRANSPOSE, 1);
        desc_operand(&c.d, ns + 2, y);
        desc_operand(&c.d, ns + 2, x);
        desc_operand(&c.d, ns + 2, w);
        if (bias)
            desc_operand(&c.d, 1, b);
        desc_ints(&c.d, AK_kernel, ns, k);
        desc_ints(&c.d, AK_strides, ns, st);
        desc_ints(&c.d, AK_dilations, ns, dil);
        desc_ints(&c.d, AK_pads, 2 * ns, pads);
        desc_int(&c.d, AK_group, group);
        case_alloc(&c, (uint64_t)i);
        assert_true(case_reference(&c, true));
        for (size_t kn = 0; kn < sizeof kernels / sizeof *kernels; kn++) {
            run_kernel(&c.d, kernels[kn].fn, kernels[kn].work, c.fast);
            char what[64];
            snprintf(what, sizeof what, "conv_transpose_%s %dd case %d", kernels[kn].name, ns, i);
            double r = case_check(&c, 0, (Tol){2 * gamma_f32(cg * taps + 1), 1, 0}, what);
            worst = r > worst ? r : worst;
        }
        case_free(&c);
    }
    printf("conv_transpose: worst error %.3f of the bound\n", worst);
    assert_true(worst <= 1);
}

/* ---- conv_weight_grad ------------------------------------------------------------- */

/* The interpreter sums each dW entry's N * out terms in double and rounds
 * once. libjit_conv_weight_grad_any does the same (within an ulp);
 * libjit_conv_weight_grad_f32 sums in f32, in pieces of up to 256 terms (a
 * matrix product) added in turn, so every term passes through at most
 * N * out additions: within gamma_{N*out} S of the exact sum, S the sum of
 * the terms' magnitudes, plus the reference's rounding (an ulp). The last
 * 10 cases have maps over 256 positions (several pieces per image) and
 * more than 96 channel x tap columns (several units). */
static void test_conv_weight_grad(void **state) {
    static const struct {
        KernelFn fn;
        WorkFn work;
        const char *name;
    } kernels[] = {
        {libjit_conv_weight_grad_any, libjit_conv_weight_grad_any_work, "any"},
        {libjit_conv_weight_grad_f32, libjit_conv_weight_grad_f32_work, "f32"},
    };
    uint64_t s = 91;
    double worst = 0;
    for (int i = 0; i < 100; i++) {
        bool big = i >= 90;
        int ns = big ? (int)rnd(&s, 1, 2) : (int)rnd(&s, 1, 3);
        int64_t group = rnd(&s, 1, 3), cg = rnd(&s, 1, big ? 16 : 4), mg = rnd(&s, 1, big ? 20 : 5);
        int64_t x[5] = {rnd(&s, 1, 3), group * cg}, dy[5] = {x[0], group * mg};
        int64_t dw[5] = {group * mg, cg};
        int64_t k[3], st[3], dil[3], pads[6], out = 1;
        for (int a = 0; a < ns; a++) {
            x[2 + a] = big ? rnd(&s, ns == 1 ? 300 : 17, ns == 1 ? 900 : 30)
                           : rnd(&s, 1, ns == 3 ? 5 : 9);
            k[a] = dw[2 + a] = rnd(&s, 1, 3);
            st[a] = rnd(&s, 1, 2);
            dil[a] = rnd(&s, 1, 2);
            pads[a] = rnd(&s, 0, k[a] - 1);
            pads[a + ns] = rnd(&s, 0, k[a] - 1);
            int64_t span = (k[a] - 1) * dil[a] + 1, avail = x[2 + a] + pads[a] + pads[a + ns] - span;
            if (avail < 0) { /* the window must fit once */
                x[2 + a] += -avail;
                avail = 0;
            }
            dy[2 + a] = avail / st[a] + 1;
            out *= dy[2 + a];
        }
        Case c = {0};
        desc_begin(&c.d, NK_CONV_WEIGHT_GRAD, 1);
        desc_operand(&c.d, ns + 2, dw);
        desc_operand(&c.d, ns + 2, x);
        desc_operand(&c.d, ns + 2, dy);
        desc_ints(&c.d, AK_kernel, ns, k);
        desc_ints(&c.d, AK_strides, ns, st);
        desc_ints(&c.d, AK_dilations, ns, dil);
        desc_ints(&c.d, AK_pads, 2 * ns, pads);
        desc_int(&c.d, AK_group, group);
        case_alloc(&c, (uint64_t)i + 500);
        assert_true(case_reference(&c, true));
        for (size_t kn = 0; kn < sizeof kernels / sizeof *kernels; kn++) {
            run_kernel(&c.d, kernels[kn].fn, kernels[kn].work, c.fast);
            char what[64];
            snprintf(what, sizeof what, "conv_weight_grad_%s %dd case %d", kernels[kn].name, ns, i);
            double r = case_check(&c, 0, (Tol){gamma_f32(x[0] * out), 1, 0}, what);
            worst = r > worst ? r : worst;
        }
        case_free(&c);
    }
    printf("conv_weight_grad: worst error %.3f of the bound\n", worst);
    assert_true(worst <= 1);
}

/* rnn, gru and lstm against the interpreter (double throughout). Inputs,
 * weights and states are in [-1, 1), so a gate's pre-activation sums n =
 * input + hidden + 2 terms of magnitude < 1: the f32 products (gemm, any
 * order) are within gamma_n * n of it (Higham 3.1), the vector sigmoid and
 * tanh add 2 ulp (< 2^-22 here), and every gate function is 1-Lipschitz,
 * so one step's error is within e = 2 gamma_n n + 2^-21 (the cell update
 * adds two such terms). Carried through the state, an error is multiplied
 * per step by the derivative of the gates times R's row sums, below 1 on
 * average for random weights but not bounded by it in the worst case; the
 * bound is therefore e per step times seq^2 (a deliberately loose power)
 * plus 4 ulp, which real discrepancies (a wrong gate, index or bias)
 * exceed by orders of magnitude. */
static void test_recurrent(void **state) {
    static const NodeKind kinds[] = {NK_RNN, NK_GRU, NK_LSTM};
    static const char *const acts[3][2] = {{"Tanh,Relu", "LeakyRelu,Sigmoid"},
                                           {"Sigmoid,Tanh,HardSigmoid,Elu", "sigmoid,TANH,Affine,Softsign"},
                                           {"Sigmoid,Tanh,Tanh,ScaledTanh,Tanh,Softplus",
                                            "HardSigmoid,Tanh,ThresholdedRelu,Sigmoid,Elu,Tanh"}};
    uint64_t s = 91;
    double worst = 0;
    for (int i = 0; i < 72; i++) {
        int kind_i = i % 3;
        NodeKind kind = kinds[kind_i];
        int gates = kind == NK_RNN ? 1 : kind == NK_GRU ? 3 : 4, nact = kind_i + 1;
        int dir = (int)rnd(&s, 0, 2); /* forward, reverse, bidirectional */
        int64_t D = dir == 2 ? 2 : 1, S = rnd(&s, 1, 5), B = rnd(&s, 1, 4), I = rnd(&s, 1, 7);
        int64_t H = rnd(&s, 1, i < 6 ? 40 : 9), GH = gates * H;
        if (i >= 60) { /* batch 1 or 2 over many steps, R read in place (dot_state): a keyword
                          spotter's GRU (49 x 154), whole vectors of units and a partial last one */
            static const int64_t hs[] = {154, 16, 17, 33, 48, 154};
            S = i < 66 ? 49 : rnd(&s, 3, 12);
            B = rnd(&s, 1, 2);
            H = hs[i % 6];
            I = 10;
            GH = gates * H;
        }
        bool bf = rnd(&s, 0, 1), i64 = rnd(&s, 0, 1);
        int nres = (int)rnd(&s, 1, kind == NK_LSTM ? 3 : 2);
        int64_t y[4] = {S, D, B, H}, ybf[4] = {B, S, D, H}, st[3] = {D, B, H}, stbf[3] = {B, D, H};
        int64_t x[3] = {S, B, I}, xbf[3] = {B, S, I};
        Case c = {0};
        desc_begin(&c.d, kind, nres);
        desc_operand(&c.d, 4, bf ? ybf : y);
        for (int k = 1; k < nres; k++)
            desc_operand(&c.d, 3, bf ? stbf : st);
        desc_operand(&c.d, 3, bf ? xbf : x);
        desc_operand(&c.d, 3, (int64_t[]){D, GH, I});
        desc_operand(&c.d, 3, (int64_t[]){D, GH, H});
        desc_operand(&c.d, 2, (int64_t[]){D, 2 * GH});
        desc_operand_elem(&c.d, i64 ? ELEM_I64 : ELEM_I32, 1, (int64_t[]){B});
        desc_operand(&c.d, 3, bf ? stbf : st);
        if (kind == NK_LSTM) {
            desc_operand(&c.d, 3, bf ? stbf : st);
            desc_operand(&c.d, 2, (int64_t[]){D, 3 * H});
        }
        desc_int(&c.d, AK_hidden_size, H);
        desc_int(&c.d, AK_direction, dir == 0 ? DIR_FORWARD : dir == 1 ? DIR_REVERSE : DIR_BIDIRECTIONAL);
        desc_int(&c.d, AK_layout, bf);
        if (i % 4 == 1) { /* every direction's list: the first D * nact names */
            char list[160] = "";
            const char *src = acts[kind_i][(i / 4) % 2];
            int names = 0;
            for (const char *p = src; *p && names < D * nact; p++) {
                if (*p == ',' && ++names == D * nact)
                    break;
                strncat(list, p, 1);
            }
            desc_str(&c.d, AK_activations, list);
        }
        if (i % 5 == 2)
            desc_float(&c.d, AK_clip, 0.6f);
        if (kind == NK_GRU)
            desc_int(&c.d, AK_linear_before_reset, (i / 3) % 2);
        if (kind == NK_LSTM && i % 7 == 2)
            desc_int(&c.d, AK_input_forget, 1);
        case_alloc(&c, (uint64_t)i);
        int lens = nres + 4;
        for (int64_t b = 0; b < B; b++) {
            int64_t len = i % 2 ? rnd(&s, 0, S) : S;
            if (i64)
                ((int64_t *)c.fast[lens])[b] = len;
            else
                ((int32_t *)c.fast[lens])[b] = (int32_t)len;
        }
        assert_true(case_reference(&c, false));
        KernelFn fn = kind == NK_RNN ? libjit_rnn_f32 : kind == NK_GRU ? libjit_gru_f32 : libjit_lstm_f32;
        WorkFn work = kind == NK_RNN   ? libjit_rnn_f32_work
                      : kind == NK_GRU ? libjit_gru_f32_work
                                       : libjit_lstm_f32_work;
        ScratchFn scratch = kind == NK_RNN   ? libjit_rnn_f32_scratch
                            : kind == NK_GRU ? libjit_gru_f32_scratch
                                             : libjit_lstm_f32_scratch;
        run_kernel(&c.d, fn, work, c.fast);
        check_static_scratch(&c, fn, work, scratch, node_kind_name(kind));
        double e = 2 * gamma_f32(I + H + 2) * (double)(I + H + 2) + ldexp(1, -21);
        for (int k = 0; k < nres; k++) {
            char what[64];
            snprintf(what, sizeof what, "%s case %d output %d", node_kind_name(kind), i, k);
            double r = case_check(&c, k, (Tol){0, 4, e * (double)(S * S)}, what);
            worst = r > worst ? r : worst;
        }
        case_free(&c);
    }
    printf("rnn, gru, lstm: worst error %.3f of the bound\n", worst);
    assert_true(worst <= 1);
}

/* ---- resize ------------------------------------------------------------------------ */

/* libjit_resize_f32 against the interpreter, over nearest, linear and
 * cubic, every coordinate mode but crop (which, like antialias, a resized
 * leading axis and rank 1, it hands to the every-kind rows: a few such
 * cases check that hand-off), every nearest rounding, and scale classes:
 * integer 2x (the vector doubling) and 3x, fractional up and down, sizes
 * given without scales, and widths of a few vectors. Nearest copies
 * elements: exact. Linear sums at most two taps per axis in f32 where the
 * interpreter sums in double: the f32 weights (one rounding each), the
 * products and the sum of each axis's pass each add at most u = 2^-24 of
 * sum w|x| (the weights are at least 0), the first pass's error carries
 * through the second, so within 6u of mag (the interpreter on |x|) to
 * first order; 8u covers the second order terms, and an ulp the
 * reference's own rounding. Cubic's weights change sign, so mag bounds
 * nothing: each pass of four taps adds at most (1 + 1 + 3)u of
 * sum |w||x| <= W max|x|, W = sum |w| <= 1.375 for a = -0.75 (at ratio
 * 1/2; with exclude_outside renormalised, at most 2), and the first
 * pass's error is scaled by the second's W: 5u (W + W^2) max|x| <= 30u
 * for inputs in [-1, 1); 32u. */
static void test_resize(void **state) {
    static const int ctms[] = {CTM_HALF_PIXEL, CTM_ALIGN_CORNERS, CTM_ASYMMETRIC,
                               CTM_PYTORCH_HALF_PIXEL, CTM_TF_HALF_PIXEL_FOR_NN,
                               CTM_HALF_PIXEL_SYMMETRIC};
    static const int nearest[] = {NEAREST_ROUND_PREFER_FLOOR, NEAREST_ROUND_PREFER_CEIL,
                                  NEAREST_FLOOR, NEAREST_CEIL};
    /* output / input per axis as (num, den); 0: sizes only, no scales */
    static const int scales[][2] = {{2, 1}, {3, 1}, {3, 2}, {7, 3}, {1, 2}, {3, 5}, {1, 1}, {0, 0}};
    uint64_t s = 41;
    double worst = 0;
    int cases = 0;
    for (int i = 0; i < 240; i++) {
        int mode = i % 3 == 1 ? MODE_LINEAR : i % 3 == 2 ? MODE_CUBIC : MODE_NEAREST;
        int ctm = ctms[(i / 3) % 6];
        int rank = i % 11 == 3 ? 2 : i % 11 == 4 ? 3 : 4;
        bool fallback = i >= 220; /* antialias, a resized channel axis, crop */
        int64_t x[4], y[4];
        float sc[4];
        bool given = true;
        for (int a = 0; a < rank; a++) {
            x[a] = a + 2 < rank ? rnd(&s, 1, 3) : rnd(&s, 1, i % 5 == 0 ? 70 : 12);
            y[a] = x[a];
            sc[a] = 1;
            if (a + 2 < rank)
                continue;
            const int *q = scales[rnd(&s, 0, 7)];
            if (q[0] == 0) {
                y[a] = rnd(&s, 1, 2 * x[a] + 3);
                given = false;
            } else {
                sc[a] = (float)q[0] / (float)q[1];
                y[a] = (int64_t)floor((double)x[a] * sc[a]);
                y[a] = y[a] < 1 ? 1 : y[a];
            }
        }
        int fb = i % 4;
        if (fallback && fb == 2 && rank > 2) {
            y[1] = x[1] + 1;
            sc[1] = (float)y[1] / (float)x[1];
        }
        Case c = {0};
        desc_begin(&c.d, NK_RESIZE, 1);
        desc_operand(&c.d, rank, y);
        desc_operand(&c.d, rank, x);
        desc_int(&c.d, AK_mode, mode);
        desc_int(&c.d, AK_coordinate_transformation_mode,
                 fallback && fb == 3 ? CTM_TF_CROP_AND_RESIZE : ctm);
        desc_int(&c.d, AK_nearest_mode, nearest[rnd(&s, 0, 3)]);
        if (given)
            desc_floats(&c.d, AK_scales, rank, sc);
        if (fallback && fb <= 1)
            desc_int(&c.d, AK_antialias, 1);
        if (fallback && fb == 3) {
            float roi[8];
            for (int a = 0; a < rank; a++)
                roi[a] = 0.1f, roi[rank + a] = 0.8f;
            desc_floats(&c.d, AK_roi, 2 * rank, roi);
        }
        if (i % 13 == 5)
            desc_int(&c.d, AK_exclude_outside, 1);
        case_alloc(&c, (uint64_t)i);
        assert_true(case_reference(&c, true));
        run_kernel(&c.d, libjit_resize_f32, libjit_resize_f32_work, c.fast);
        char what[96];
        snprintf(what, sizeof what, "resize_f32 case %d (mode %d ctm %d, %lldx%lld -> %lldx%lld)", i,
                 mode, ctm, (long long)x[rank - 2], (long long)x[rank - 1], (long long)y[rank - 2],
                 (long long)y[rank - 1]);
        bool exact = mode == MODE_NEAREST && !fallback;
        Tol tol = exact               ? (Tol){0, 0, 0}
                  : mode == MODE_CUBIC ? (Tol){0, 1, 32 * ldexp(1, -24)}
                                       : (Tol){8 * ldexp(1, -24), 1, 0};
        double r = case_check(&c, 0, tol, what);
        worst = r > worst ? r : worst;
        check_thread_shares(&c, libjit_resize_f32, libjit_resize_f32_work, what);
        check_static_scratch(&c, libjit_resize_f32, libjit_resize_f32_work, libjit_resize_f32_scratch,
                             what);
        case_free(&c);
        cases++;
    }
    printf("resize_f32: %d cases, worst error %.3f of the bound\n", cases, worst);
    assert_true(worst <= 1);
}

/* The f32 vector softmax, log_softmax and layer_norm (k_vnorm.c) against
 * the interpreter's double. Inputs in [-1, 1), so x - max is in (-2, 0]:
 * its f32 rounding moves e^(x - max) by at most 2 * 2^-24 relative, lj_exp
 * adds 1 ulp, the f32 lane sums of n terms gamma_n (Higham 3.1), and the
 * final scale 1 ulp: softmax within 4 + n ulp (ulp(r) >= 2^-24 |r|).
 * log_softmax, (x - max) - log(sum), is absolute: each of its two
 * roundings at most 2^-24 of its operands (|x - max| < 2, log(sum) <=
 * log n), plus gamma_n for the sum inside the log. layer_norm: the mean
 * and variance sums within gamma_n relative (of values below 1 and 4), so
 * the normalised value (below sqrt(n) in magnitude) and its scaling and
 * bias carry at most 4 gamma_n (sqrt(n) + 1) + 4 ulp. */
static void test_norm_vector(void **state) {
    uint64_t s = 23;
    double worst = 0;
    for (int i = 0; i < 90; i++) {
        int kind = i % 3, rank = (int)rnd(&s, 1, 4);
        int64_t x[4], st[4], one[1] = {1};
        for (int j = 0; j < rank; j++)
            x[j] = rnd(&s, 1, j == rank - 1 && i % 2 ? 70 : 6);
        int64_t axis = rnd(&s, 0, rank - 1), len = x[axis], n = 1;
        for (int j = (int)axis; j < rank; j++)
            n *= x[j];
        Case c = {0};
        char what[64];
        Tol tol;
        KernelFn fn;
        WorkFn work;
        if (kind < 2) {
            desc_begin(&c.d, kind ? NK_LOG_SOFTMAX : NK_SOFTMAX, 1);
            desc_operand(&c.d, rank, x);
            desc_operand(&c.d, rank, x);
            desc_int(&c.d, AK_axis, i % 4 == 1 ? axis - rank : axis);
            fn = kind ? libjit_log_softmax_f32 : libjit_softmax_f32;
            work = kind ? libjit_log_softmax_f32_work : libjit_softmax_f32_work;
            tol = kind ? (Tol){0, 2, ldexp(1, -24) * (2 + log((double)len)) * 2 + gamma_f32(len)}
                       : (Tol){0, 4 + (double)len, 0};
        } else {
            int nres = (int)rnd(&s, 1, 3);
            for (int j = 0; j < rank; j++)
                st[j] = j < axis ? x[j] : 1;
            desc_begin(&c.d, NK_LAYER_NORM, nres);
            desc_operand(&c.d, rank, x);
            for (int k = 1; k < nres; k++)
                desc_operand(&c.d, rank, st);
            desc_operand(&c.d, rank, x);
            desc_operand(&c.d, i % 9 == 2 ? 1 : rank - (int)axis, i % 9 == 2 ? one : x + axis);
            if (i % 2)
                desc_operand(&c.d, rank - (int)axis, x + axis);
            desc_int(&c.d, AK_axis, axis);
            fn = libjit_layer_norm_f32;
            work = libjit_layer_norm_f32_work;
            tol = (Tol){0, 4, 4 * gamma_f32(n) * (sqrt((double)n) + 1)};
        }
        case_alloc(&c, (uint64_t)i + 500);
        assert_true(case_reference(&c, false));
        run_kernel(&c.d, fn, work, c.fast);
        for (int k = 0; k < lj_nres(c.d.w); k++) {
            snprintf(what, sizeof what, "%s case %d output %d", node_kind_name((NodeKind)c.d.w[DESC_KIND]), i, k);
            double r = case_check(&c, k, tol, what);
            worst = r > worst ? r : worst;
        }
        case_free(&c);
    }
    printf("softmax, log_softmax, layer_norm (f32 vectors): worst error %.3f of the bound\n", worst);
    assert_true(worst <= 1);
}

/* ---- every element kind (any.c says why exact) ------------------------------------- */

#define ANY_TEST(name)                                                                            \
    static void test_any_##name(void **state) {                                                   \
        int ran = any_##name##_cases(101);                                                        \
        printf("every element kind, %s: %d cases exact\n", #name, ran);                          \
        assert_true(ran > 0);                                                                     \
    }
ANY_TEST(unary)
ANY_TEST(binary)
ANY_TEST(misc)
ANY_TEST(reduce)
ANY_TEST(data)
ANY_TEST(norm)
ANY_TEST(quant)
ANY_TEST(qint)
ANY_TEST(select)
ANY_TEST(dynamic)
ANY_TEST(run_time)
ANY_TEST(gather_nd)
ANY_TEST(string)
ANY_TEST(shape)
ANY_TEST(pool_matmul)
ANY_TEST(threads)

/* ---- the runtime's pieces (runtime.c) ------------------------------------------ */

/* A job whose worker thread, once in its first piece, waits for its second
 * piece to have run: only a runtime that lets the caller take a piece its
 * thread has not begun finishes it (within the 10 s the wait allows). Every
 * unit must run once per job, over many jobs, whichever thread runs it. */
typedef struct PieceJob {
    pthread_t caller;
    int64_t n, k1, second; /* thread 1's pieces: [k1, second), [second, n) */
    _Atomic int second_ran, timed_out;
    _Atomic int runs[64];
    bool second_on_caller;
} PieceJob;

static double mono_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void piece_worker(void *const *ops, int64_t lo, int64_t hi, LjScratch *sc) {
    PieceJob *j = ops[0];
    bool on_caller = pthread_equal(pthread_self(), j->caller);
    if (lo == j->k1 && !on_caller)
        for (double end = mono_s() + 10; !atomic_load(&j->second_ran);)
            if (mono_s() > end) {
                atomic_store(&j->timed_out, 1);
                break;
            }
    for (int64_t u = lo; u < hi; u++)
        atomic_fetch_add(&j->runs[u], 1);
    if (lo == j->second) {
        j->second_on_caller = on_caller;
        atomic_store(&j->second_ran, 1);
    }
}

static void test_runtime_pieces(void **state) {
    LibjitRuntime *rt = libjit_runtime_new(2);
    assert_non_null(rt);
    for (int64_t n = 4; n <= 64; n += 3) {
        PieceJob *j = calloc(1, sizeof *j);
        j->caller = pthread_self();
        j->n = n;
        int64_t hi;
        lj_piece_bounds(n, 2, LJ_PIECES, &j->k1, &hi);
        lj_piece_bounds(n, 2, LJ_PIECES + 1, &j->second, &hi);
        void *ops[1] = {j};
        libjit_parallel(rt, n, piece_worker, ops);
        assert_false(atomic_load(&j->timed_out));
        assert_true(j->second_on_caller);
        for (int64_t u = 0; u < n; u++)
            if (atomic_load(&j->runs[u]) != 1)
                fail_msg("n %lld: unit %lld ran %d times", (long long)n, (long long)u,
                         atomic_load(&j->runs[u]));
        free(j);
    }
    libjit_runtime_free(rt);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_shapes),
        cmocka_unit_test(test_conv_summand),
        cmocka_unit_test(test_conv_random),
        cmocka_unit_test(test_conv_3d),
        cmocka_unit_test(test_conv_amx),
        cmocka_unit_test(test_winograd),
        cmocka_unit_test(test_fully_connected),
        cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_pool),
        cmocka_unit_test(test_global_pool),
        cmocka_unit_test(test_conv_pads_exhaustive),
        cmocka_unit_test(test_pool_pads_exhaustive),
        cmocka_unit_test(test_unary),
        cmocka_unit_test(test_binary),
        cmocka_unit_test(test_reduce),
        cmocka_unit_test(test_transpose),
        cmocka_unit_test(test_slice),
        cmocka_unit_test(test_gather),
        cmocka_unit_test(test_cast),
        cmocka_unit_test(test_conv_transpose),
        cmocka_unit_test(test_conv_weight_grad),
        cmocka_unit_test(test_recurrent),
        cmocka_unit_test(test_resize),
        cmocka_unit_test(test_norm_vector),
        cmocka_unit_test(test_any_unary),
        cmocka_unit_test(test_any_binary),
        cmocka_unit_test(test_any_misc),
        cmocka_unit_test(test_any_reduce),
        cmocka_unit_test(test_any_data),
        cmocka_unit_test(test_any_norm),
        cmocka_unit_test(test_any_quant),
        cmocka_unit_test(test_any_qint),
        cmocka_unit_test(test_any_select),
        cmocka_unit_test(test_any_dynamic),
        cmocka_unit_test(test_any_run_time),
        cmocka_unit_test(test_any_gather_nd),
        cmocka_unit_test(test_any_string),
        cmocka_unit_test(test_any_shape),
        cmocka_unit_test(test_any_pool_matmul),
        cmocka_unit_test(test_any_threads),
        cmocka_unit_test(test_runtime_pieces),
    };
    /* KERNELS_FILTER=test_any_qint: one test while working on its kernels */
    if (getenv("KERNELS_FILTER"))
        cmocka_set_test_filter(getenv("KERNELS_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
