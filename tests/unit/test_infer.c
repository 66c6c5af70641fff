/* Unit tests for core/infer: the shape rules, computed on hand-built nodes,
 * and their rejections (one diagnostic, false). Expected shapes are worked
 * out by hand from the ONNX operator definitions in the comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/graph.h"
#include "core/infer.h"

typedef struct Fixture {
    Module *m;
    Function *f;
    DiagList d;
    int nparams;
} Fixture;

static Fixture fx;

static int setup(void **state) {
    (void)state;
    memset(&fx, 0, sizeof fx);
    fx.m = module_new("test");
    fx.f = function_new(fx.m, "main");
    diag_init(&fx.d, NULL);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    module_destroy(fx.m);
    diag_free(&fx.d);
    return 0;
}

/* A graph input of the given kind and shape. */
static Value *input(ElemKind e, int rank, const int64_t *dims) {
    Type t = type_make(e, rank, dims);
    char name[16];
    snprintf(name, sizeof name, "in%d", fx.nparams++);
    return &graph_add_param(fx.f, name, &t)->res[0];
}
#define IN(e, ...) \
    input(e, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})
static Value *scalar(ElemKind e) {
    return input(e, 0, NULL);
}

static Node *node(NodeKind k, int nops, Value *a, Value *b, Value *c, int nres) {
    Value *ops[3] = {a, b, c};
    return graph_add_node(fx.f, k, nops, ops, nres);
}

static void set_ints(Node *n, AttrKey key, int count, const int64_t *v) {
    node_set_ints(n, key, count, v);
}
#define INTS(n, key, ...)                                                                   \
    set_ints(n, key, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),            \
             (int64_t[]){__VA_ARGS__})

/* Runs the rule, which must succeed without a diagnostic. */
static void infer_ok(Node *n) {
    diag_clear(&fx.d);
    bool ok = infer_node(n, &fx.d);
    if (!ok || fx.d.head)
        print_error("unexpected: %s\n", fx.d.head ? fx.d.head->msg : "(no message)");
    assert_true(ok);
    assert_int_equal(fx.d.errors, 0);
}

static void expect_type(const Node *n, int res, ElemKind e, int rank, const int64_t *dims) {
    const Type *t = &n->res[res].type;
    char got[TYPE_STR_MAX], want[TYPE_STR_MAX];
    Type w = type_make(e, rank, dims);
    if (!type_equal(t, &w))
        print_error("result %d: got %s, want %s\n", res, type_str(t, got), type_str(&w, want));
    assert_true(type_equal(t, &w));
}
#define EXPECT(n, res, e, ...)                                                              \
    expect_type(n, res, e, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),       \
                (int64_t[]){__VA_ARGS__})
#define EXPECT_SCALAR(n, res, e) expect_type(n, res, e, 0, NULL)

/* The rule must refuse with exactly one diagnostic containing `what`. */
static void infer_rejects(Node *n, const char *what) {
    diag_clear(&fx.d);
    assert_false(infer_node(n, &fx.d));
    assert_int_equal(fx.d.errors, 1);
    assert_non_null(fx.d.head);
    if (!strstr(fx.d.head->msg, what))
        print_error("message '%s' lacks '%s'\n", fx.d.head->msg, what);
    assert_non_null(strstr(fx.d.head->msg, what));
    /* The diagnostic names the node (no text location here). */
    assert_non_null(fx.d.head->where);
    assert_non_null(strstr(fx.d.head->where, node_kind_name(n->kind)));
}

/* ---- convolution ------------------------------------------------------------ */

static void test_conv_shapes(void **state) {
    (void)state;
    Value *x = IN(ELEM_F32, 1, 3, 32, 32);
    Value *w = IN(ELEM_F32, 8, 3, 3, 3);
    Value *b = IN(ELEM_F32, 8);
    /* No pads, stride 1: 32 - 3 + 1 = 30. */
    Node *n = node(NK_CONV, 3, x, w, b, 1);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 1, 8, 30, 30);

    /* pads 1, stride 2: floor((32 + 2 - 3) / 2) + 1 = 16. */
    n = node(NK_CONV, 2, x, w, NULL, 1);
    INTS(n, AK_pads, 1, 1, 1, 1);
    INTS(n, AK_strides, 2, 2);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 1, 8, 16, 16);

    /* dilation 2: span 2*(3-1)+1 = 5; asymmetric pads (0,1 | 2,0):
     * H: 32 + 0 + 2 - 5 + 1 = 30, W: 32 + 1 + 0 - 5 + 1 = 29. */
    n = node(NK_CONV, 2, x, w, NULL, 1);
    INTS(n, AK_dilations, 2, 2);
    INTS(n, AK_pads, 0, 1, 2, 0);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 1, 8, 30, 29);

    /* Groups: 6 input channels, group 3, weight [9, 6/3, 1, 1]. */
    Value *x6 = IN(ELEM_F32, 2, 6, 5, 7);
    Value *wg = IN(ELEM_F32, 9, 2, 1, 1);
    n = node(NK_CONV, 2, x6, wg, NULL, 1);
    node_set_int(n, AK_group, 3);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 2, 9, 5, 7);

    /* 1-D convolution: [1, 4, 10] * [2, 4, 3], stride 3: floor(7/3) + 1 = 3. */
    Value *x1 = IN(ELEM_F32, 1, 4, 10);
    Value *w1 = IN(ELEM_F32, 2, 4, 3);
    n = node(NK_CONV, 2, x1, w1, NULL, 1);
    INTS(n, AK_strides, 3);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 1, 2, 3);
}

static void test_conv_rejections(void **state) {
    (void)state;
    Value *x = IN(ELEM_F32, 1, 3, 8, 8);
    Value *w4 = IN(ELEM_F32, 8, 4, 3, 3); /* expects 4 channels */
    infer_rejects(node(NK_CONV, 2, x, w4, NULL, 1), "input has 3 channels");

    Value *w = IN(ELEM_F32, 8, 3, 3, 3);
    Value *b7 = IN(ELEM_F32, 7);
    infer_rejects(node(NK_CONV, 3, x, w, b7, 1), "bias must be f32<8>");

    Node *n = node(NK_CONV, 2, x, w, NULL, 1);
    INTS(n, AK_kernel, 5, 5);
    infer_rejects(n, "kernel attribute does not match");

    n = node(NK_CONV, 2, x, w, NULL, 1);
    INTS(n, AK_strides, 0, 1);
    infer_rejects(n, "bad kernel, strides");

    n = node(NK_CONV, 2, x, w, NULL, 1);
    INTS(n, AK_pads, 1, 1); /* needs 4 entries for 2 spatial axes */
    infer_rejects(n, "bad kernel, strides");

    /* group 2 does not divide 3 channels */
    Value *wg = IN(ELEM_F32, 8, 1, 3, 3);
    n = node(NK_CONV, 2, x, wg, NULL, 1);
    node_set_int(n, AK_group, 2);
    infer_rejects(n, "channels");

    Value *w3 = IN(ELEM_F32, 8, 3, 3);
    infer_rejects(node(NK_CONV, 2, x, w3, NULL, 1), "does not match input");

    Value *xi = IN(ELEM_I32, 1, 3, 8, 8);
    Value *wi = IN(ELEM_I32, 8, 3, 3, 3);
    infer_rejects(node(NK_CONV, 2, xi, wi, NULL, 1), "does not accept element kind i32");

    Value *w16 = IN(ELEM_F16, 8, 3, 3, 3);
    infer_rejects(node(NK_CONV, 2, x, w16, NULL, 1), "operand 0 is f32 but operand 1 is f16");

    infer_rejects(node(NK_CONV, 1, x, NULL, NULL, 1), "has 1 operands, expected 2 to 4");
}

/* ---- pooling ---------------------------------------------------------------- */

static void test_pool_shapes(void **state) {
    (void)state;
    Value *x = IN(ELEM_F32, 1, 2, 5, 5);
    /* kernel 2, stride 2 on 5: floor((5-2)/2)+1 = 2; ceil((5-2)/2)+1 = 3. */
    Node *n = node(NK_MAX_POOL, 1, x, NULL, NULL, 1);
    INTS(n, AK_kernel, 2, 2);
    INTS(n, AK_strides, 2, 2);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 1, 2, 2, 2);

    n = node(NK_MAX_POOL, 1, x, NULL, NULL, 2);
    INTS(n, AK_kernel, 2, 2);
    INTS(n, AK_strides, 2, 2);
    node_set_int(n, AK_ceil_mode, 1);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 1, 2, 3, 3);
    EXPECT(n, 1, ELEM_I64, 1, 2, 3, 3); /* the argmax indices */

    /* ceil_mode with padding 1/1, kernel 2, stride 2, input 5:
     * ceil((5+2-2)/2)+1 = 4 windows, but the 4th would start at 3*2 = 6,
     * past input + begin padding (5+1 = 6), so it is dropped: 3
     * (the rule of PyTorch's pooling_output_shape, which ONNX follows). */
    n = node(NK_AVG_POOL, 1, x, NULL, NULL, 1);
    INTS(n, AK_kernel, 2, 2);
    INTS(n, AK_strides, 2, 2);
    INTS(n, AK_pads, 1, 1, 1, 1);
    node_set_int(n, AK_ceil_mode, 1);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 1, 2, 3, 3);

    /* ceil_mode, input 6, kernel 3, stride 2, pads 1/1: ceil(5/2)+1 = 4,
     * last window starts at 6 < 6+1: kept. Without ceil: floor(5/2)+1 = 3. */
    Value *x6 = IN(ELEM_F32, 1, 1, 6, 6);
    n = node(NK_MAX_POOL, 1, x6, NULL, NULL, 1);
    INTS(n, AK_kernel, 3, 3);
    INTS(n, AK_strides, 2, 2);
    INTS(n, AK_pads, 1, 1, 1, 1);
    node_set_int(n, AK_ceil_mode, 1);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 1, 1, 4, 4);
    node_set_int(n, AK_ceil_mode, 0);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 1, 1, 3, 3);

    /* Dilated pooling: kernel 2 dilation 2 spans 3; 6 - 3 + 1 = 4 (stride 1). */
    n = node(NK_MAX_POOL, 1, x6, NULL, NULL, 1);
    INTS(n, AK_kernel, 2, 2);
    INTS(n, AK_dilations, 2, 2);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 1, 1, 4, 4);

    n = node(NK_GLOBAL_AVG_POOL, 1, x, NULL, NULL, 1);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 1, 2, 1, 1);
}

static void test_pool_rejections(void **state) {
    (void)state;
    Value *x = IN(ELEM_F32, 1, 2, 5, 5);
    infer_rejects(node(NK_MAX_POOL, 1, x, NULL, NULL, 1), "bad kernel");
    Node *n = node(NK_MAX_POOL, 1, x, NULL, NULL, 1);
    INTS(n, AK_kernel, 2);
    infer_rejects(n, "bad kernel");
    n = node(NK_AVG_POOL, 1, x, NULL, NULL, 1);
    INTS(n, AK_kernel, 2, 2);
    INTS(n, AK_pads, 0, 0, -1, 0);
    infer_rejects(n, "bad kernel");
    Value *v = IN(ELEM_F32, 5, 5);
    n = node(NK_MAX_POOL, 1, v, NULL, NULL, 1);
    INTS(n, AK_kernel, 2);
    infer_rejects(n, "operand 0 must have rank 3 to 8");
    n = node(NK_MAX_POOL, 1, x, NULL, NULL, 3);
    INTS(n, AK_kernel, 2, 2);
    infer_rejects(n, "has 3 results, expected 1 to 2");
}

/* ---- matmul and gemm ---------------------------------------------------------- */

static void test_matmul_shapes(void **state) {
    (void)state;
    /* numpy: np.matmul(np.zeros((2,1,3,4)), np.zeros((5,4,6))).shape == (2,5,3,6) */
    Node *n = node(NK_MATMUL, 2, IN(ELEM_F32, 2, 1, 3, 4), IN(ELEM_F32, 5, 4, 6), NULL, 1);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 2, 5, 3, 6);
    /* vector times batch of matrices: (4,) @ (3,4,5) -> (3,5) */
    n = node(NK_MATMUL, 2, IN(ELEM_F32, 4), IN(ELEM_F32, 3, 4, 5), NULL, 1);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 3, 5);
    /* matrix times vector: (3,4) @ (4,) -> (3,) */
    n = node(NK_MATMUL, 2, IN(ELEM_F32, 3, 4), IN(ELEM_F32, 4), NULL, 1);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 3);
    /* vector dot vector: (4,) @ (4,) -> () */
    n = node(NK_MATMUL, 2, IN(ELEM_I32, 4), IN(ELEM_I32, 4), NULL, 1);
    infer_ok(n);
    EXPECT_SCALAR(n, 0, ELEM_I32);
    /* (7,1,2,3) @ (6,3,2) -> (7,6,2,2) */
    n = node(NK_MATMUL, 2, IN(ELEM_F32, 7, 1, 2, 3), IN(ELEM_F32, 6, 3, 2), NULL, 1);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 7, 6, 2, 2);
}

static void test_matmul_rejections(void **state) {
    (void)state;
    infer_rejects(node(NK_MATMUL, 2, IN(ELEM_F32, 3, 4), IN(ELEM_F32, 5, 6), NULL, 1),
                  "inner dimensions differ: f32<3x4> times f32<5x6>");
    infer_rejects(node(NK_MATMUL, 2, IN(ELEM_F32, 2, 3, 4), IN(ELEM_F32, 3, 4, 5), NULL, 1),
                  "batch dimensions do not broadcast");
    infer_rejects(node(NK_MATMUL, 2, scalar(ELEM_F32), IN(ELEM_F32, 3), NULL, 1),
                  "rank >= 1");
    infer_rejects(node(NK_MATMUL, 2, IN(ELEM_F32, 3, 4), IN(ELEM_F64, 4, 2), NULL, 1),
                  "operand 0 is f32 but operand 1 is f64");
    infer_rejects(node(NK_MATMUL, 2, IN(ELEM_BOOL, 3, 4), IN(ELEM_BOOL, 4, 2), NULL, 1),
                  "does not accept element kind bool");
}

static void test_gemm_shapes(void **state) {
    (void)state;
    Value *a = IN(ELEM_F32, 3, 4), *b = IN(ELEM_F32, 4, 5);
    Node *n = node(NK_GEMM, 2, a, b, NULL, 1);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 3, 5);
    /* trans_a: a' is [4,3]x... use a = [4,3] -> M=3, K=4; trans_b: b [5,4] -> N=5. */
    Value *at = IN(ELEM_F32, 4, 3), *bt = IN(ELEM_F32, 5, 4);
    Value *c_row = IN(ELEM_F32, 5), *c_col = IN(ELEM_F32, 3, 1), *c_one = scalar(ELEM_F32);
    n = node(NK_GEMM, 3, at, bt, c_row, 1);
    node_set_int(n, AK_trans_a, 1);
    node_set_int(n, AK_trans_b, 1);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 3, 5);
    n = node(NK_GEMM, 3, a, b, c_col, 1);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 3, 5);
    n = node(NK_GEMM, 3, a, b, c_one, 1);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 3, 5);

    /* K = 4 from a [3,4], but b [3,5] has 3 rows. */
    infer_rejects(node(NK_GEMM, 2, a, IN(ELEM_F32, 3, 5), NULL, 1),
                  "inner dimensions differ (4 and 3)");
    infer_rejects(node(NK_GEMM, 3, a, b, IN(ELEM_F32, 4), 1), "operand 2 (c) does not broadcast");
    /* c may broadcast to the result but must not make it bigger. */
    infer_rejects(node(NK_GEMM, 3, a, b, IN(ELEM_F32, 2, 3, 5), 1),
                  "operand 2 (c) does not broadcast");
    infer_rejects(node(NK_GEMM, 2, IN(ELEM_F32, 2, 3, 4), b, NULL, 1),
                  "operand 0 must have rank 2");
}

/* ---- data movement -------------------------------------------------------------- */

static void test_reshape(void **state) {
    (void)state;
    Node *n = node(NK_RESHAPE, 1, IN(ELEM_F32, 2, 3, 4), NULL, NULL, 1);
    n->res[0].type = type_make(ELEM_F32, 2, (int64_t[]){6, 4});
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 6, 4); /* the declared type stays */
    n->res[0].type = type_make(ELEM_F32, 2, (int64_t[]){5, 5});
    infer_rejects(n, "cannot reshape f32<2x3x4> to f32<5x5>");
    n->res[0].type = type_make(ELEM_I32, 2, (int64_t[]){6, 4});
    infer_rejects(n, "cannot reshape");
}

static void test_concat(void **state) {
    (void)state;
    Value *a = IN(ELEM_F32, 2, 3, 4), *b = IN(ELEM_F32, 2, 5, 4), *c = IN(ELEM_F32, 2, 1, 4);
    Value *ops[3] = {a, b, c};
    Node *n = graph_add_node(fx.f, NK_CONCAT, 3, ops, 1);
    node_set_int(n, AK_axis, 1);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 2, 9, 4); /* 3 + 5 + 1 */
    node_set_int(n, AK_axis, -2);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 2, 9, 4);
    node_set_int(n, AK_axis, 0);
    infer_rejects(n, "operand 1 f32<2x5x4> does not fit operand 0 f32<2x3x4>");
    node_set_int(n, AK_axis, 3);
    infer_rejects(n, "axis out of range");
    Value *mixed[2] = {a, IN(ELEM_F16, 2, 3, 4)};
    n = graph_add_node(fx.f, NK_CONCAT, 2, mixed, 1);
    infer_rejects(n, "does not fit");
}

static void test_slice_clamping(void **state) {
    (void)state;
    Value *x = IN(ELEM_F32, 10, 6);
    /* Axis 0: starts -3 -> 7, ends huge -> 10: 3 elements.
     * Axis 1: 2:100:3 -> 2, 5: 2 elements (numpy: len(range(6)[2:100:3])). */
    Node *n = node(NK_SLICE, 1, x, NULL, NULL, 1);
    INTS(n, AK_starts, -3, 2);
    INTS(n, AK_ends, INT64_MAX, 100);
    INTS(n, AK_steps, 1, 3);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 3, 2);
    int64_t start[MAX_RANK], step[MAX_RANK], count[MAX_RANK];
    slice_params(n, &x->type, start, step, count);
    assert_int_equal(start[0], 7);
    assert_int_equal(start[1], 2);
    assert_int_equal(step[1], 3);

    /* Negative steps: x[::-1] over 10 -> 10 elements starting at 9;
     * range(6)[5:-100:-2] -> 5, 3, 1. */
    n = node(NK_SLICE, 1, x, NULL, NULL, 1);
    INTS(n, AK_starts, -1, 5);
    INTS(n, AK_ends, INT64_MIN, -100);
    INTS(n, AK_steps, -1, -2);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 10, 3);
    slice_params(n, &x->type, start, step, count);
    assert_int_equal(start[0], 9);
    assert_int_equal(start[1], 5);
    assert_int_equal(count[0], 10);

    /* Out-of-range begin past the end gives 0 elements: range(10)[20:30]
     * and an empty range backwards: range(6)[1:4:-1]. */
    n = node(NK_SLICE, 1, x, NULL, NULL, 1);
    INTS(n, AK_starts, 20, 1);
    INTS(n, AK_ends, 30, 4);
    INTS(n, AK_steps, 1, -1);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 0, 0);

    /* A backward start past the end clamps to the last element:
     * range(6)[100:0:-1] -> 5, 4, 3, 2, 1. */
    n = node(NK_SLICE, 1, x, NULL, NULL, 1);
    INTS(n, AK_starts, 0, 100);
    INTS(n, AK_ends, 10, 0);
    INTS(n, AK_steps, 1, -1);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 10, 5);

    n = node(NK_SLICE, 1, x, NULL, NULL, 1);
    INTS(n, AK_starts, 0, 0);
    INTS(n, AK_ends, 1, 1);
    INTS(n, AK_steps, 1, 0);
    infer_rejects(n, "step 0");
    n = node(NK_SLICE, 1, x, NULL, NULL, 1);
    INTS(n, AK_starts, 0);
    infer_rejects(n, "starts has 1 entries for rank 2");
}

static void test_gather(void **state) {
    (void)state;
    Value *x = IN(ELEM_F32, 3, 4, 5);
    Value *idx = IN(ELEM_I64, 2, 6);
    /* np.take(x, idx, axis=1).shape == (3, 2, 6, 5) */
    Node *n = node(NK_GATHER, 2, x, idx, NULL, 1);
    node_set_int(n, AK_axis, 1);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 3, 2, 6, 5);
    /* Scalar index on axis -1 drops the axis: (3, 4). */
    n = node(NK_GATHER, 2, x, scalar(ELEM_I32), NULL, 1);
    node_set_int(n, AK_axis, -1);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 3, 4);

    infer_rejects(node(NK_GATHER, 2, x, IN(ELEM_F32, 2), NULL, 1),
                  "operand 1 (indices) must be i32 or i64, got f32");
    n = node(NK_GATHER, 2, x, idx, NULL, 1);
    node_set_int(n, AK_axis, 3);
    infer_rejects(n, "axis out of range");
    /* Result rank 3 - 1 + 7 = 9 > 8. */
    n = node(NK_GATHER, 2, x, IN(ELEM_I64, 1, 1, 1, 1, 1, 1, 1), NULL, 1);
    infer_rejects(n, "result rank too large");
}

static void test_split(void **state) {
    (void)state;
    Value *x = IN(ELEM_F32, 2, 6);
    Node *n = node(NK_SPLIT, 1, x, NULL, NULL, 3);
    node_set_int(n, AK_axis, 1);
    infer_ok(n); /* equal parts: 6 / 3 */
    for (int i = 0; i < 3; i++)
        EXPECT(n, i, ELEM_F32, 2, 2);
    n = node(NK_SPLIT, 1, x, NULL, NULL, 2);
    node_set_int(n, AK_axis, -1);
    INTS(n, AK_split, 1, 5);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 2, 1);
    EXPECT(n, 1, ELEM_F32, 2, 5);

    INTS(n, AK_split, 2, 5);
    infer_rejects(n, "split sizes add up to 7, axis has 6");
    INTS(n, AK_split, 1, 2, 3);
    infer_rejects(n, "split has 3 sizes for 2 results");
    n = node(NK_SPLIT, 1, x, NULL, NULL, 4); /* 6 is not a multiple of 4 */
    node_set_int(n, AK_axis, 1);
    infer_rejects(n, "split sizes add up to 4, axis has 6");
}

static void test_reductions(void **state) {
    (void)state;
    Value *x = IN(ELEM_F32, 2, 3, 4);
    /* np.sum(x, axis=1, keepdims=True).shape == (2, 1, 4) */
    Node *n = node(NK_REDUCE_SUM, 1, x, NULL, NULL, 1);
    INTS(n, AK_axes, 1);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 2, 1, 4);
    node_set_int(n, AK_keepdims, 0);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 2, 4);
    INTS(n, AK_axes, -1, 0);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 3);
    /* No axes: everything. */
    n = node(NK_REDUCE_MAX, 1, x, NULL, NULL, 1);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 1, 1, 1);
    node_set_int(n, AK_keepdims, 0);
    infer_ok(n);
    EXPECT_SCALAR(n, 0, ELEM_F32);

    n = node(NK_ARGMAX, 1, x, NULL, NULL, 1);
    node_set_int(n, AK_axis, 2);
    node_set_int(n, AK_keepdims, 0);
    infer_ok(n);
    EXPECT(n, 0, ELEM_I64, 2, 3);

    n = node(NK_REDUCE_MEAN, 1, x, NULL, NULL, 1);
    INTS(n, AK_axes, 3);
    infer_rejects(n, "axis 3 out of range for rank 3");
    n = node(NK_REDUCE_MEAN, 1, x, NULL, NULL, 1);
    INTS(n, AK_axes, -4);
    infer_rejects(n, "axis -4 out of range for rank 3");
    n = node(NK_ARGMIN, 1, IN(ELEM_F32, 3, 0), NULL, NULL, 1);
    node_set_int(n, AK_axis, 1);
    infer_rejects(n, "reduced axis is empty");
}

static void test_softmax(void **state) {
    (void)state;
    Value *x = IN(ELEM_F32, 2, 3, 4);
    Node *n = node(NK_SOFTMAX, 1, x, NULL, NULL, 1);
    infer_ok(n); /* default axis -1 */
    EXPECT(n, 0, ELEM_F32, 2, 3, 4);
    node_set_int(n, AK_axis, -3);
    infer_ok(n);
    node_set_int(n, AK_axis, 3);
    infer_rejects(n, "axis 3 out of range for rank 3");
    node_set_int(n, AK_axis, -4);
    infer_rejects(n, "axis -4 out of range for rank 3");
    infer_rejects(node(NK_SOFTMAX, 1, IN(ELEM_I32, 4), NULL, NULL, 1),
                  "does not accept element kind i32");
}

static void test_elementwise(void **state) {
    (void)state;
    Node *n = node(NK_ADD, 2, IN(ELEM_F32, 3, 1, 5), IN(ELEM_F32, 4, 1), NULL, 1);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 3, 4, 5);
    infer_rejects(node(NK_ADD, 2, IN(ELEM_F32, 2, 3), IN(ELEM_F32, 3, 2), NULL, 1),
                  "operands f32<2x3> and f32<3x2> do not broadcast");
    n = node(NK_LESS, 2, IN(ELEM_I32, 3), scalar(ELEM_I32), NULL, 1);
    infer_ok(n);
    EXPECT(n, 0, ELEM_BOOL, 3);
    infer_rejects(node(NK_RELU, 1, IN(ELEM_BOOL, 3), NULL, NULL, 1),
                  "does not accept element kind bool");
    infer_rejects(node(NK_RELU, 1, IN(ELEM_U8, 3), NULL, NULL, 1),
                  "does not accept element kind u8");
    n = node(NK_CAST, 1, IN(ELEM_F32, 2), NULL, NULL, 1);
    infer_rejects(n, "missing attribute 'to'");
    node_set_elem(n, AK_to, ELEM_I8);
    infer_ok(n);
    EXPECT(n, 0, ELEM_I8, 2);
}

/* Attribute values near INT64_MAX: refused with a diagnostic, never signed
 * overflow (which UBSan turns into a crash under make test-san). */
static void test_overflow_rejections(void **state) {
    (void)state;
    const int64_t big = INT64_MAX, half = (int64_t)1 << 62;
    Value *x = IN(ELEM_F32, 1, 1, 4, 4);
    Node *n = node(NK_MAX_POOL, 1, x, NULL, NULL, 1);
    INTS(n, AK_kernel, half, 2);
    INTS(n, AK_dilations, 4, 1);
    infer_rejects(n, "bad kernel, strides, pads or dilations"); /* the window's size overflows */
    n = node(NK_AVG_POOL, 1, x, NULL, NULL, 1);
    INTS(n, AK_kernel, 2, 2);
    INTS(n, AK_pads, big, 0, big, 0);
    infer_rejects(n, "kernel, strides, pads or dilations too large");
    /* A huge stride in ceil mode is fine: one window. */
    n = node(NK_MAX_POOL, 1, x, NULL, NULL, 1);
    INTS(n, AK_kernel, 2, 2);
    INTS(n, AK_strides, big, 1);
    node_set_int(n, AK_ceil_mode, 1);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 1, 1, 1, 3);

    n = node(NK_CONV_TRANSPOSE, 2, x, x, NULL, 1);
    INTS(n, AK_strides, half, 1);
    infer_rejects(n, "output size overflows");
    n = node(NK_DEPTH_TO_SPACE, 1, x, NULL, NULL, 1);
    node_set_int(n, AK_blocksize, (int64_t)1 << 32);
    infer_rejects(n, "channels not divisible by blocksize squared");
    n = node(NK_TILE, 1, IN(ELEM_F32, 2, 2), NULL, NULL, 1);
    INTS(n, AK_repeats, half, 4);
    infer_rejects(n, "result too large");
    n = node(NK_PAD, 1, IN(ELEM_F32, 2), NULL, NULL, 1);
    INTS(n, AK_pads, big, big);
    infer_rejects(n, "result too large");
    Value *h = IN(ELEM_I8, half);
    Value *ops[3] = {h, h, h};
    n = graph_add_node(fx.f, NK_CONCAT, 3, ops, 1);
    infer_rejects(n, "result too large");
    n = node(NK_SPLIT, 1, IN(ELEM_F32, 6), NULL, NULL, 2);
    INTS(n, AK_split, big, big);
    infer_rejects(n, "split sizes overflow");

    /* Steps of any size count right: range(10)[0:10:INT64_MAX] has one
     * element, range(10)[5:0:INT64_MIN] too. */
    Value *v = IN(ELEM_F32, 10);
    n = node(NK_SLICE, 1, v, NULL, NULL, 1);
    INTS(n, AK_starts, 0);
    INTS(n, AK_ends, 10);
    INTS(n, AK_steps, big);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 1);
    INTS(n, AK_starts, 5);
    INTS(n, AK_ends, 0);
    INTS(n, AK_steps, INT64_MIN);
    infer_ok(n);
    EXPECT(n, 0, ELEM_F32, 1);

    n = node(NK_GATHER_ND, 2, IN(ELEM_F32, 3), IN(ELEM_I64, big), NULL, 1);
    infer_rejects(n, "too large for data rank 1");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_conv_shapes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conv_rejections, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pool_shapes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pool_rejections, setup, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_shapes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_rejections, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gemm_shapes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reshape, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concat, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slice_clamping, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gather, setup, teardown),
        cmocka_unit_test_setup_teardown(test_split, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reductions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_softmax, setup, teardown),
        cmocka_unit_test_setup_teardown(test_elementwise, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overflow_rejections, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
