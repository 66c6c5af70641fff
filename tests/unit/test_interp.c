/* Unit tests for the reference interpreter: kernels on small inputs checked
 * against naive loops written here, or against values worked out by hand
 * in the comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "backends/interp/interp.h"
#include "core/infer.h"

static Module *mod;
static Function *fn;
static DiagList diags;

static int setup(void **state) {
    (void)state;
    mod = module_new("interp");
    fn = function_new(mod, "main");
    diag_init(&diags, NULL);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    module_destroy(mod);
    diag_free(&diags);
    return 0;
}

static Node *param(ElemKind e, int rank, const int64_t *dims) {
    Type t = type_make(e, rank, dims);
    char name[16];
    snprintf(name, sizeof name, "p%d", fn->nparams);
    return graph_add_param(fn, name, &t);
}

static Node *add_node(NodeKind k, int nops, Node *const *ops, int nres) {
    Value *v[4];
    for (int i = 0; i < nops; i++)
        v[i] = &ops[i]->res[0];
    return graph_add_node(fn, k, nops, v, nres);
}

/* Infers n's types, makes its results the outputs, runs the function. */
static void run(Node *n, Tensor *const *inputs, Tensor **outputs) {
    if (!infer_node(n, &diags)) {
        print_error("infer: %s\n", diags.head->msg);
        fail();
    }
    Value *outs[4];
    const char *names[4] = {"y0", "y1", "y2", "y3"};
    for (int i = 0; i < n->nres; i++)
        outs[i] = &n->res[i];
    graph_set_outputs(fn, n->nres, outs, names);
    bool ok = interp_run(fn, inputs, outputs, mod->arena, &diags, NULL, NULL);
    if (!ok)
        print_error("run: %s\n", diags.head ? diags.head->msg : "?");
    assert_true(ok);
    assert_int_equal(diags.errors, 0);
}

/* Deterministic values in [-1, 1) from a 32-bit LCG (Numerical Recipes). */
static uint32_t lcg = 12345;
static double next_value(void) {
    lcg = lcg * 1664525u + 1013904223u;
    return (double)(lcg >> 8) / (double)(1u << 23) - 1.0;
}

static Tensor *tensor_of(Node *p) {
    Tensor *t = tensor_new(mod->arena, &p->res[0].type);
    for (int64_t i = 0; i < tensor_numel(t); i++)
        tensor_set_f64(t, i, next_value());
    return t;
}

static Tensor *tensor_from(Node *p, const float *v) {
    Tensor *t = tensor_new(mod->arena, &p->res[0].type);
    for (int64_t i = 0; i < tensor_numel(t); i++)
        tensor_set_f64(t, i, v[i]);
    return t;
}

static void expect_close(const Tensor *got, const double *want, int64_t n, double tol) {
    assert_int_equal(tensor_numel(got), n);
    for (int64_t i = 0; i < n; i++) {
        double g = tensor_get_f64(got, i);
        if (!(fabs(g - want[i]) <= tol * (1 + fabs(want[i])))) {
            print_error("element %lld: got %.9g, want %.9g\n", (long long)i, g, want[i]);
            fail();
        }
    }
}

#define INTS(n, key, ...)                                                                   \
    node_set_ints(n, key, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),       \
                  (int64_t[]){__VA_ARGS__})

/* ---- convolution ------------------------------------------------------------- */

/* x = 1..9 as 3x3, w = 2x2 ones. Without padding, each output sums a 2x2
 * block: 1+2+4+5 = 12, 2+3+5+6 = 16, 4+5+7+8 = 24, 5+6+8+9 = 28. With pads
 * 1 and stride 2 the windows start at (-1,-1), (-1,1), (1,-1), (1,1) and
 * see only 1; 2+3 = 5; 4+7 = 11; 5+6+8+9 = 28. */
static void test_conv_by_hand(void **state) {
    (void)state;
    static const float xv[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, ones[4] = {1, 1, 1, 1};
    Node *x = param(ELEM_F32, 4, (int64_t[]){1, 1, 3, 3});
    Node *w = param(ELEM_F32, 4, (int64_t[]){1, 1, 2, 2});
    Node *c = add_node(NK_CONV, 2, (Node *[]){x, w}, 1);
    Tensor *in[2] = {tensor_from(x, xv), tensor_from(w, ones)}, *out[1];
    run(c, in, out);
    expect_close(out[0], (double[]){12, 16, 24, 28}, 4, 0);

    INTS(c, AK_pads, 1, 1, 1, 1);
    INTS(c, AK_strides, 2, 2);
    run(c, in, out);
    expect_close(out[0], (double[]){1, 5, 11, 28}, 4, 0);
}

/* Naive NCHW convolution with groups, strides, pads and dilations. */
static void conv_reference(const Tensor *X, const Tensor *W, const Tensor *B, const Window *win,
                           const Type *yt, double *y) {
    const int64_t *xd = X->type.dims, *wd = W->type.dims;
    int64_t N = xd[0], C = xd[1], H = xd[2], Wd = xd[3];
    int64_t M = wd[0], CG = wd[1], KH = wd[2], KW = wd[3];
    int64_t OH = yt->dims[2], OW = yt->dims[3], G = C / CG, MG = M / G;
    for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    double acc = B ? tensor_get_f64(B, m) : 0;
                    int64_t g = m / MG;
                    for (int64_t c = 0; c < CG; c++)
                        for (int64_t kh = 0; kh < KH; kh++)
                            for (int64_t kw = 0; kw < KW; kw++) {
                                int64_t ih = oh * win->stride[0] - win->pad_begin[0] +
                                             kh * win->dilation[0];
                                int64_t iw = ow * win->stride[1] - win->pad_begin[1] +
                                             kw * win->dilation[1];
                                if (ih < 0 || ih >= H || iw < 0 || iw >= Wd)
                                    continue;
                                acc += tensor_get_f64(X, ((n * C + g * CG + c) * H + ih) * Wd + iw) *
                                       tensor_get_f64(W, ((m * CG + c) * KH + kh) * KW + kw);
                            }
                    y[((n * M + m) * OH + oh) * OW + ow] = acc;
                }
}

static void conv_vs_reference(ElemKind e, double tol) {
    /* 2 images, 4 channels in 2 groups, 6 filters of 2x3 (dilated 2 in W),
     * stride (2,1), pads top 1 left 0 bottom 2 right 1. */
    Node *x = param(e, 4, (int64_t[]){2, 4, 7, 6});
    Node *w = param(e, 4, (int64_t[]){6, 2, 2, 3});
    Node *b = param(e, 1, (int64_t[]){6});
    Node *c = add_node(NK_CONV, 3, (Node *[]){x, w, b}, 1);
    INTS(c, AK_strides, 2, 1);
    INTS(c, AK_pads, 1, 0, 2, 1);
    INTS(c, AK_dilations, 1, 2);
    node_set_int(c, AK_group, 2);
    Tensor *in[3] = {tensor_of(x), tensor_of(w), tensor_of(b)}, *out[1];
    run(c, in, out);
    /* H: floor((7+1+2-2)/2)+1 = 5; W: span 5, 6+0+1-5+1 = 3. */
    assert_int_equal(out[0]->type.dims[2], 5);
    assert_int_equal(out[0]->type.dims[3], 3);
    Window win;
    assert_true(window_from_node(c, 2, &w->res[0].type, &win));
    double want[2 * 6 * 5 * 3];
    conv_reference(in[0], in[1], in[2], &win, &out[0]->type, want);
    expect_close(out[0], want, 2 * 6 * 5 * 3, tol);

}

/* A 1x1 convolution with stride 1 and no padding skips im2col (f32). */
static void pointwise_vs_reference(ElemKind e, double tol) {
    Node *x = param(e, 4, (int64_t[]){2, 4, 7, 6});
    Node *w = param(e, 4, (int64_t[]){3, 4, 1, 1});
    Node *c = add_node(NK_CONV, 2, (Node *[]){x, w}, 1);
    Tensor *in[2] = {tensor_of(x), tensor_of(w)}, *out[1];
    run(c, in, out);
    Window win;
    assert_true(window_from_node(c, 2, &w->res[0].type, &win));
    double want[2 * 3 * 7 * 6];
    conv_reference(in[0], in[1], NULL, &win, &out[0]->type, want);
    expect_close(out[0], want, 2 * 3 * 7 * 6, tol);
}

static void test_conv_f32_vs_reference(void **state) {
    (void)state;
    conv_vs_reference(ELEM_F32, 1e-5);
}

static void test_conv_f64_vs_reference(void **state) {
    (void)state;
    conv_vs_reference(ELEM_F64, 1e-12);
}

static void test_conv_pointwise_vs_reference(void **state) {
    (void)state;
    pointwise_vs_reference(ELEM_F32, 1e-5);
}

/* ---- matmul -------------------------------------------------------------------- */

static void test_matmul_batch_broadcast(void **state) {
    (void)state;
    /* [2,1,3,4] @ [5,4,2] -> [2,5,3,2]: a's batch 1 broadcasts to 5, b's
     * missing leading axis to 2. */
    Node *a = param(ELEM_F32, 4, (int64_t[]){2, 1, 3, 4});
    Node *b = param(ELEM_F32, 3, (int64_t[]){5, 4, 2});
    Node *mm = add_node(NK_MATMUL, 2, (Node *[]){a, b}, 1);
    Tensor *in[2] = {tensor_of(a), tensor_of(b)}, *out[1];
    run(mm, in, out);
    double want[2 * 5 * 3 * 2];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 5; j++)
            for (int r = 0; r < 3; r++)
                for (int c = 0; c < 2; c++) {
                    double acc = 0;
                    for (int k = 0; k < 4; k++)
                        acc += tensor_get_f64(in[0], (i * 3 + r) * 4 + k) *
                               tensor_get_f64(in[1], (j * 4 + k) * 2 + c);
                    want[((i * 5 + j) * 3 + r) * 2 + c] = acc;
                }
    expect_close(out[0], want, 60, 1e-5);
}

static void test_matmul_int_and_vectors(void **state) {
    (void)state;
    /* [[1,2,3],[4,5,6]] @ [1,0,-1] = [1-3, 4-6] = [-2, -2] */
    static const float av[6] = {1, 2, 3, 4, 5, 6}, bv[3] = {1, 0, -1};
    Node *a = param(ELEM_I32, 2, (int64_t[]){2, 3});
    Node *b = param(ELEM_I32, 1, (int64_t[]){3});
    Node *mm = add_node(NK_MATMUL, 2, (Node *[]){a, b}, 1);
    Tensor *in[2] = {tensor_from(a, av), tensor_from(b, bv)}, *out[1];
    run(mm, in, out);
    assert_int_equal(out[0]->type.rank, 1);
    assert_int_equal(((int32_t *)out[0]->data)[0], -2);
    assert_int_equal(((int32_t *)out[0]->data)[1], -2);
}

/* ---- softmax --------------------------------------------------------------------- */

/* Row [1,2,3]: e^k / (e + e^2 + e^3) = 0.0900305732, 0.244728471, 0.665240956;
 * a constant row gives 1/3 each; [1000, 1000] must not overflow: 0.5, 0.5. */
static void test_softmax(void **state) {
    (void)state;
    static const float xv[6] = {1, 2, 3, 1, 1, 1};
    Node *x = param(ELEM_F32, 2, (int64_t[]){2, 3});
    Node *s = add_node(NK_SOFTMAX, 1, (Node *[]){x}, 1);
    node_set_int(s, AK_axis, 1);
    Tensor *in[1] = {tensor_from(x, xv)}, *out[1];
    run(s, in, out);
    expect_close(out[0],
                 (double[]){0.0900305732, 0.244728471, 0.665240956, 1 / 3.0, 1 / 3.0, 1 / 3.0},
                 6, 1e-6);

    /* axis 0 over columns (1,1), (2,1), (3,1): 1/2; e/(e+1) = 0.731058579;
     * e^2/(e^2+1) = 0.880797078. */
    node_set_int(s, AK_axis, 0);
    run(s, in, out);
    expect_close(out[0],
                 (double[]){0.5, 0.731058579, 0.880797078, 0.5, 0.268941421, 0.119202922}, 6,
                 1e-6);
}

static void test_softmax_large_values(void **state) {
    (void)state;
    static const float xv[4] = {1000, 1000, -1000, 0};
    Node *x = param(ELEM_F32, 2, (int64_t[]){2, 2});
    Node *s = add_node(NK_SOFTMAX, 1, (Node *[]){x}, 1);
    Tensor *in[1] = {tensor_from(x, xv)}, *out[1];
    run(s, in, out);
    /* e^-1000 underflows to 0 next to e^0. */
    expect_close(out[0], (double[]){0.5, 0.5, 0, 1}, 4, 1e-7);
}

/* ---- max pool indices ------------------------------------------------------------ */

/* Channel 0 holds 0..15 row-major, so each 2x2 window's max is its
 * bottom-right element: 5, 7, 13, 15 at those flat indices. Channel 1 holds
 * 15..0, so the max is top-left: 15, 13, 7, 5 at 16 + {0, 2, 8, 10}. The
 * second image adds 32 (ONNX flattens N, C, H, W). */
static void test_max_pool_indices(void **state) {
    (void)state;
    float xv[64];
    for (int n = 0; n < 2; n++)
        for (int i = 0; i < 16; i++) {
            xv[n * 32 + i] = (float)i + 100 * n;
            xv[n * 32 + 16 + i] = (float)(15 - i) + 100 * n;
        }
    Node *x = param(ELEM_F32, 4, (int64_t[]){2, 2, 4, 4});
    Node *p = add_node(NK_MAX_POOL, 1, (Node *[]){x}, 2);
    INTS(p, AK_kernel, 2, 2);
    INTS(p, AK_strides, 2, 2);
    Tensor *in[1] = {tensor_from(x, xv)}, *out[2];
    run(p, in, out);
    expect_close(out[0],
                 (double[]){5, 7, 13, 15, 15, 13, 7, 5, 105, 107, 113, 115, 115, 113, 107, 105},
                 16, 0);
    static const int64_t idx[16] = {5,  7,  13, 15, 16, 18, 24, 26,
                                    37, 39, 45, 47, 48, 50, 56, 58};
    assert_int_equal(out[1]->type.elem, ELEM_I64);
    assert_memory_equal(out[1]->data, idx, sizeof idx);
}

/* Padding and ceil_mode: indices refer to the unpadded input.
 * x = [[1,4],[3,2]], kernel 3, pads 1, stride 1: every window holds the
 * whole input, so 4 at index 1 everywhere.
 * x = 1..9 (3x3), kernel 2, stride 2, ceil_mode: windows at rows/cols 0 and
 * 2, the last ones cut short: maxes 5, 6, 8, 9 at 4, 5, 7, 8. */
static void test_max_pool_pads_and_ceil(void **state) {
    (void)state;
    static const float xv[4] = {1, 4, 3, 2};
    Node *x = param(ELEM_F32, 4, (int64_t[]){1, 1, 2, 2});
    Node *p = add_node(NK_MAX_POOL, 1, (Node *[]){x}, 2);
    INTS(p, AK_kernel, 3, 3);
    INTS(p, AK_pads, 1, 1, 1, 1);
    Tensor *in[1] = {tensor_from(x, xv)}, *out[2];
    run(p, in, out);
    expect_close(out[0], (double[]){4, 4, 4, 4}, 4, 0);
    static const int64_t idx[4] = {1, 1, 1, 1};
    assert_memory_equal(out[1]->data, idx, sizeof idx);
}

static void test_max_pool_ceil(void **state) {
    (void)state;
    static const float xv[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    Node *x = param(ELEM_F32, 4, (int64_t[]){1, 1, 3, 3});
    Node *p = add_node(NK_MAX_POOL, 1, (Node *[]){x}, 2);
    INTS(p, AK_kernel, 2, 2);
    INTS(p, AK_strides, 2, 2);
    node_set_int(p, AK_ceil_mode, 1);
    Tensor *in[1] = {tensor_from(x, xv)}, *out[2];
    run(p, in, out);
    expect_close(out[0], (double[]){5, 6, 8, 9}, 4, 0);
    static const int64_t idx[4] = {4, 5, 7, 8};
    assert_memory_equal(out[1]->data, idx, sizeof idx);
}

/* A wrong input type is refused with a diagnostic, not run. */
static void test_run_rejects_wrong_input(void **state) {
    (void)state;
    Node *x = param(ELEM_F32, 1, (int64_t[]){3});
    Node *r = add_node(NK_RELU, 1, (Node *[]){x}, 1);
    assert_true(infer_node(r, &diags));
    graph_set_outputs(fn, 1, (Value *[]){&r->res[0]}, (const char *[]){"y"});
    Type t = type_make(ELEM_F32, 1, (int64_t[]){4});
    Tensor *in[1] = {tensor_new(mod->arena, &t)}, *out[1];
    assert_false(interp_run(fn, in, out, mod->arena, &diags, NULL, NULL));
    assert_int_equal(diags.errors, 1);
    assert_non_null(strstr(diags.head->msg, "input 'p0' must be f32<3>, got f32<4>"));
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_conv_by_hand),           T(test_conv_f32_vs_reference),
        T(test_conv_f64_vs_reference),  T(test_conv_pointwise_vs_reference),
        T(test_matmul_batch_broadcast),
        T(test_matmul_int_and_vectors), T(test_softmax),
        T(test_softmax_large_values),   T(test_max_pool_indices),
        T(test_max_pool_pads_and_ceil), T(test_max_pool_ceil),
        T(test_run_rejects_wrong_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
