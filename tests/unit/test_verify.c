/* Unit tests for core/verify: a well-formed function passes with no
 * diagnostic; each kind of corruption is caught with one diagnostic. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/graph.h"
#include "core/verify.h"

/* The graph every test starts from:
 *   %x: f32<2x3>
 *   %c = constant f32<2x3> splat<1>
 *   %2 = add(%x, %c) : f32<2x3>
 *   %3 = relu(%2)    : f32<2x3>
 *   %4 = softmax(%3) {axis=1} : f32<2x3>
 *   return %4 */
typedef struct G {
    Module *m;
    Function *f;
    Node *x, *c, *add, *relu, *softmax;
    DiagList d;
} G;

static G g;

static int setup(void **state) {
    (void)state;
    memset(&g, 0, sizeof g);
    g.m = module_new("verify");
    g.f = function_new(g.m, "main");
    Type t = type_make(ELEM_F32, 2, (int64_t[]){2, 3});
    g.x = graph_add_param(g.f, "x", &t);
    Tensor *data = tensor_new(g.m->arena, &t);
    for (int i = 0; i < 6; i++)
        ((float *)data->data)[i] = 1;
    g.c = graph_add_constant(g.f, "c", data);
    Value *ops[2] = {&g.x->res[0], &g.c->res[0]};
    g.add = graph_add_node(g.f, NK_ADD, 2, ops, 1);
    g.relu = graph_add_node(g.f, NK_RELU, 1, (Value *[]){&g.add->res[0]}, 1);
    g.softmax = graph_add_node(g.f, NK_SOFTMAX, 1, (Value *[]){&g.relu->res[0]}, 1);
    node_set_int(g.softmax, AK_axis, 1);
    g.add->res[0].type = g.relu->res[0].type = g.softmax->res[0].type = t;
    graph_set_outputs(g.f, 1, (Value *[]){&g.softmax->res[0]}, (const char *[]){"y"});
    diag_init(&g.d, NULL);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    module_destroy(g.m);
    diag_free(&g.d);
    return 0;
}

/* verify_function must fail with exactly one error whose text holds `what`. */
static void expect_one_error(const char *what) {
    assert_false(verify_function(g.f, &g.d));
    if (g.d.errors != 1 || !strstr(g.d.head->msg, what)) {
        for (const Diag *e = g.d.head; e; e = e->next)
            print_error("diag: %s: %s\n", e->where ? e->where : "-", e->msg);
    }
    assert_int_equal(g.d.errors, 1);
    assert_non_null(strstr(g.d.head->msg, what));
}

static void test_valid_function(void **state) {
    (void)state;
    assert_true(verify_function(g.f, &g.d));
    assert_int_equal(g.d.errors, 0);
    assert_null(g.d.head);
}

static void test_use_before_definition(void **state) {
    (void)state;
    /* relu now reads softmax's result, which comes after it. */
    g.relu->ops[0] = &g.softmax->res[0];
    expect_one_error("operand 0 (%4) is not defined before its use");
    assert_non_null(strstr(g.d.head->where, "relu"));
}

static void test_use_of_removed_node(void **state) {
    (void)state;
    /* A node taken out of the function but still used. */
    Node *neg = graph_add_node(g.f, NK_NEG, 1, (Value *[]){&g.x->res[0]}, 1);
    neg->res[0].type = g.x->res[0].type;
    graph_remove_node(g.f, neg);
    g.relu->ops[0] = &neg->res[0];
    expect_one_error("is not defined before its use");
}

static void test_use_from_other_function(void **state) {
    (void)state;
    Module *other = module_new("other");
    Function *f2 = function_new(other, "main");
    Node *p = graph_add_param(f2, "p", &g.x->res[0].type);
    g.relu->ops[0] = &p->res[0];
    expect_one_error("is not defined before its use");
    module_destroy(other);
}

static void test_duplicate_ids(void **state) {
    (void)state;
    /* An unused node that reuses relu's id. */
    Node *neg = graph_add_node(g.f, NK_NEG, 1, (Value *[]){&g.x->res[0]}, 1);
    neg->res[0].type = g.x->res[0].type;
    neg->id = g.relu->id;
    expect_one_error("id 3 is used twice");
    assert_non_null(strstr(g.d.head->where, "neg"));
}

static void test_duplicate_id_of_used_node(void **state) {
    (void)state;
    /* When the duplicate is itself used, what follows may also complain, but
     * the first diagnostic names the duplicate. */
    g.softmax->id = g.relu->id;
    assert_false(verify_function(g.f, &g.d));
    assert_non_null(strstr(g.d.head->msg, "id 3 is used twice"));
    assert_non_null(strstr(g.d.head->where, "softmax"));
}

static void test_id_out_of_range(void **state) {
    (void)state;
    g.relu->id = g.f->next_id + 5;
    assert_false(verify_function(g.f, &g.d));
    assert_true(g.d.errors >= 1);
    assert_non_null(strstr(g.d.head->msg, "outside [0, 5)"));
}

static void test_wrong_result_type(void **state) {
    (void)state;
    g.relu->res[0].type = type_make(ELEM_F32, 2, (int64_t[]){3, 2});
    g.softmax->res[0].type = g.relu->res[0].type;
    /* The rule says f32<2x3>; softmax then sees f32<3x2> and is consistent. */
    expect_one_error("result 0 has type f32<3x2> but its operands give f32<2x3>");
    assert_non_null(strstr(g.d.head->where, "relu"));
    /* The verifier restores the declared type rather than fixing it. */
    assert_int_equal(g.relu->res[0].type.dims[0], 3);
}

static void test_wrong_result_kind(void **state) {
    (void)state;
    g.add->res[0].type.elem = ELEM_F16;
    /* add is wrong, and relu/softmax now take f16 and give f16: consistent. */
    g.relu->res[0].type.elem = ELEM_F16;
    g.softmax->res[0].type.elem = ELEM_F16;
    expect_one_error("result 0 has type f16<2x3> but its operands give f32<2x3>");
}

static void test_attribute_not_allowed(void **state) {
    (void)state;
    node_set_int(g.relu, AK_axis, 0);
    expect_one_error("has attribute 'axis', which relu does not take");
}

static void test_attribute_twice(void **state) {
    (void)state;
    /* node_set_* replaces; only a hand-made list can hold a key twice. */
    Attr *two = arena_alloc_array(g.m->arena, 2, sizeof(Attr));
    two[0] = two[1] = g.softmax->attrs[0];
    g.softmax->attrs = two;
    g.softmax->nattrs = 2;
    expect_one_error("has attribute 'axis' twice");
}

static void test_shape_rule_failure(void **state) {
    (void)state;
    node_set_int(g.softmax, AK_axis, 2);
    expect_one_error("axis 2 out of range for rank 2");
}

static void test_output_not_defined(void **state) {
    (void)state;
    Node *neg = graph_add_node(g.f, NK_NEG, 1, (Value *[]){&g.x->res[0]}, 1);
    neg->res[0].type = g.x->res[0].type;
    graph_remove_node(g.f, neg);
    g.f->outputs[0] = &neg->res[0];
    expect_one_error("output 'y' is not a value of the function");
}

static void test_bad_constant(void **state) {
    (void)state;
    g.c->payload->type.dims[0] = 3;
    expect_one_error("constant without data of its type");
}

static void test_node_count(void **state) {
    (void)state;
    g.f->nnodes++;
    expect_one_error("the function counts 4 nodes but lists 3");
}

/* A pass that leaves a quantized type on a float value is caught, and the
 * declared quantization survives the shape rule's re-run. */
static void test_quantized_float(void **state) {
    (void)state;
    g.relu->res[0].type.quant = QUANT_TENSOR;
    g.relu->res[0].type.scale = 0.5f;
    expect_one_error("result 0 has type f32<2x3, scale=0.5, offset=0>: a quantized type must "
                     "be i8, u8 or i32");
    assert_int_equal(g.relu->res[0].type.quant, QUANT_TENSOR);
}

/* Each invalid quantization of a graph input, alone. */
static void expect_bad_param(Type t, const char *what) {
    Module *m = module_new("quant");
    Function *f = function_new(m, "main");
    Node *p = graph_add_param(f, "q", &t);
    graph_set_outputs(f, 1, (Value *[]){&p->res[0]}, (const char *[]){"y"});
    DiagList d;
    diag_init(&d, NULL);
    assert_false(verify_function(f, &d));
    assert_int_equal(d.errors, 1);
    if (!strstr(d.head->msg, what))
        print_error("diag: %s\n", d.head->msg);
    assert_non_null(strstr(d.head->msg, what));
    diag_free(&d);
    module_destroy(m);
}

static void test_bad_quantization(void **state) {
    (void)state;
    Type t = type_make(ELEM_I8, 1, (int64_t[]){4});
    t.quant = QUANT_TENSOR;
    t.scale = 0;
    expect_bad_param(t, "i8<4, scale=0, offset=0>: the scale must be positive and finite");
    t.scale = -1;
    expect_bad_param(t, "the scale must be positive and finite");
    t.scale = (float)INFINITY;
    expect_bad_param(t, "the scale must be positive and finite");
    t.scale = 0.5f;
    t.offset = 128;
    expect_bad_param(t, "i8<4, scale=0.5, offset=128>: the offset is outside the element "
                     "kind's range");
    t.elem = ELEM_U8;
    t.offset = -1;
    expect_bad_param(t, "the offset is outside the element kind's range");
    t.elem = ELEM_I16;
    t.offset = 0;
    expect_bad_param(t, "a quantized type must be i8, u8 or i32");
    t.elem = ELEM_I8;
    t.quant = QUANT_CHANNEL;
    t.qaxis = 1;
    expect_bad_param(t, "i8<4, axis=1>: the channel axis is not a dimension");
}

int main(void) {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_valid_function),      T(test_use_before_definition),
        T(test_use_of_removed_node), T(test_use_from_other_function),
        T(test_duplicate_ids),       T(test_duplicate_id_of_used_node),
        T(test_id_out_of_range),
        T(test_wrong_result_type),   T(test_wrong_result_kind),
        T(test_attribute_not_allowed), T(test_attribute_twice),
        T(test_shape_rule_failure),  T(test_output_not_defined),
        T(test_bad_constant),        T(test_node_count),
        T(test_quantized_float),     T(test_bad_quantization),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
