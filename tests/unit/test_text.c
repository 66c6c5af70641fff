/* Unit tests for the text IR (core/parse.c, core/print.c): printing what was
 * parsed gives back the same bytes, and every error is one diagnostic at the
 * right line and column. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/parse.h"
#include "core/print.h"
#include "core/verify.h"

static DiagList diags;

static int setup(void **state) {
    (void)state;
    diag_init(&diags, "in.hl");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    diag_free(&diags);
    return 0;
}

static void dump_diags(void) {
    StrBuf sb;
    sb_init(&sb);
    diag_render(&diags, &sb);
    print_error("%s", sb_str(&sb));
    sb_free(&sb);
}

/* Parses from an exact-length heap copy (no NUL after it), so that ASan sees
 * any read past the end of the input. */
static Module *parse(const char *text) {
    size_t len = strlen(text);
    char *copy = malloc(len ? len : 1);
    memcpy(copy, text, len);
    Module *m = parse_module(copy, len, "in.hl", &diags);
    free(copy);
    return m;
}

static char *print(const Module *m) {
    StrBuf sb;
    sb_init(&sb);
    print_module(m, NULL, &sb);
    return sb_take(&sb);
}

/* parse -> print must give back `text` byte for byte, and the graph must
 * also pass the structural verifier. */
static void expect_round_trip(const char *text) {
    Module *m = parse(text);
    if (!m)
        dump_diags();
    assert_non_null(m);
    assert_int_equal(diags.errors, 0);
    assert_true(verify_function(m->main, &diags));
    char *out = print(m);
    if (strcmp(out, text))
        print_error("printed:\n%s\nexpected:\n%s\n", out, text);
    assert_string_equal(out, text);
    free(out);
    module_destroy(m);
}

/* Labels, quoted labels and output names, multi-result values, the three
 * constant forms, loc, an unused value, a parameter used twice. */
static const char *const syntax_forms =
    "func @main(%x: f32<1x3x8x8>, %\"my input\": f32<2>) -> (out: f32<1x4x8x8>, \"second out\": "
    "f32<1x2x8x8>, sum: f32<1x2x8x8>) {\n"
    "  %w = constant f32<4x3x3x3> splat<0.5>\n"
    "  %b = constant f32<4> dense<[1, 2.5, -3, 1e-07]>\n"
    "  %c = constant f32<4x3x3x3> opaque<\"0123456789abcdef\">\n"
    "  %0 = constant f32<2> dense<[0, 1]> loc(\"onnx::Const_7\")\n"
    "  %\"conv 1\" = conv(%x, %w, %b) {kernel=[3,3] strides=[1,1] pads=[1,1,1,1] "
    "dilations=[1,1] group=1} : f32<1x4x8x8> loc(\"Conv_0\")\n"
    "  %5:2 = split(%\"conv 1\") {axis=1 split=[2,2]} : (f32<1x2x8x8>, f32<1x2x8x8>)\n"
    "  %6 = add(%5#0, %5#1) : f32<1x2x8x8> loc(\"with \\\"quotes\\\" and \\\\\")\n"
    "  %7 = add(%\"my input\", %\"my input\") : f32<2>\n"
    "  return %\"conv 1\", %5#1, %6\n"
    "}\n";

/* Every attribute value type: INT, FLOAT (incl. infinities), INTS with
 * negative entries, FLOATS, STR, ELEM. */
static const char *const attribute_types =
    "func @main(%x: f32<1x2x4x4>) -> (y: f32<1x2x6x6>, z: i8<1x2x4x4>) {\n"
    "  %0 = pad(%x) {mode=reflect pads=[0,0,1,1,0,0,1,1] value=-0.5} : f32<1x2x6x6>\n"
    "  %1 = cast(%x) {to=i8} : i8<1x2x4x4>\n"
    "  %2 = leaky_relu(%x) {alpha=0.1} : f32<1x2x4x4>\n"
    "  %3 = clip(%x) {min=-inf max=inf} : f32<1x2x4x4>\n"
    "  %4 = resize(%x) {mode=nearest scales=[1,1,1.5,1.5]} : f32<1x2x6x6>\n"
    "  %5 = slice(%x) {starts=[0,0,-1,0] ends=[1,2,-5,4] steps=[1,1,-1,2]} : f32<1x2x4x2>\n"
    "  %6 = reduce_sum(%x) {axes=[-1] keepdims=0} : f32<1x2x4>\n"
    "  %7 = einsum(%6, %6) {equation=\"abc,abc->ab\"} : f32<1x2>\n"
    "  return %0, %1\n"
    "}\n";

/* A constant of every element kind at the edges of its range. */
static const char *const element_kinds =
    "func @main() -> () {\n"
    "  %0 = constant bool<3> dense<[true, false, true]>\n"
    "  %1 = constant i8<2> dense<[-128, 127]>\n"
    "  %2 = constant u8<2> dense<[0, 255]>\n"
    "  %3 = constant i16<2> dense<[-32768, 32767]>\n"
    "  %4 = constant u16<1> dense<[65535]>\n"
    "  %5 = constant i32<2> dense<[-2147483648, 2147483647]>\n"
    "  %6 = constant u32<1> dense<[4294967295]>\n"
    "  %7 = constant i64<2> dense<[-9223372036854775808, 9223372036854775807]>\n"
    "  %8 = constant u64<2> dense<[0, 18446744073709551615]>\n"
    "  %9 = constant f64<3> dense<[0.1, -1e+300, 5e-324]>\n"
    "  %10 = constant f16<3> dense<[0.099975586, 65504, 5.9604645e-08]>\n"
    "  %11 = constant bf16<2> dense<[0.100097656, -3.3895314e+38]>\n"
    "  %12 = constant f32<5> dense<[nan, -nan, -inf, inf, -0]>\n"
    "  %13 = constant f32<> dense<[3.25]>\n"
    "  %14 = constant i64<0x3> dense<[]>\n"
    "  %15 = constant i32<2x2> splat<-7>\n"
    "  return\n"
    "}\n";

/* Scalars, rank 8, a zero-size dimension, a huge opaque constant that must
 * not be allocated, numeric ids out of order. */
static const char *const shapes =
    "func @main(%7: f32<>, %3: f32<1x1x1x1x1x1x1x2>) -> (a: f32<>, b: f32<1x1x1x1x1x1x1x2>) {\n"
    "  %big = constant f32<1000000x1000000x1000> opaque<\"00000000000000ff\">\n"
    "  %e = constant f32<0x5> dense<[]>\n"
    "  %0 = neg(%7) : f32<>\n"
    "  %12 = add(%3, %0) : f32<1x1x1x1x1x1x1x2>\n"
    "  return %0, %12\n"
    "}\n";

static void test_round_trips(void **state) {
    (void)state;
    expect_round_trip(syntax_forms);
    expect_round_trip(attribute_types);
    expect_round_trip(element_kinds);
    expect_round_trip(shapes);
}

/* Non-canonical input (comments, spacing, trailing commas, needless quotes)
 * prints in the canonical form, which then round-trips. */
static void test_canonical_form(void **state) {
    (void)state;
    const char *messy = "// leading comment\n"
                        "func @main( %x : f32<2> ) -> ( \"y\" : f32<2> ) {   // trailing\n"
                        "\t%\"a\" = relu( %x ) : f32<2>\n"
                        "  %1 = leaky_relu(%a) {alpha = 0.25, } : f32<2>\n"
                        "  %s = constant f32<2> dense<[ 1.50 , 1.5 ]>\n"
                        "  %2 = add(%1, %s)   :   f32<2>   loc(\"n\")\n"
                        "  return %2\n"
                        "}\n\n";
    const char *canonical = "func @main(%x: f32<2>) -> (y: f32<2>) {\n"
                            "  %s = constant f32<2> splat<1.5>\n"
                            "  %a = relu(%x) : f32<2>\n"
                            "  %1 = leaky_relu(%a) {alpha=0.25} : f32<2>\n"
                            "  %2 = add(%1, %s) : f32<2> loc(\"n\")\n"
                            "  return %2\n"
                            "}\n";
    Module *m = parse(messy);
    assert_non_null(m);
    char *out = print(m);
    assert_string_equal(out, canonical);
    free(out);
    module_destroy(m);
    expect_round_trip(canonical);
}

/* Attributes print in the table's order whatever order they were set in. */
static void test_attribute_order(void **state) {
    (void)state;
    const char *text = "func @main(%x: f32<1x1x4x4>) -> (y: f32<1x1x2x2>) {\n"
                       "  %0 = max_pool(%x) {ceil_mode=0 strides=[2,2] kernel=[2,2]} : "
                       "f32<1x1x2x2>\n"
                       "  return %0\n"
                       "}\n";
    Module *m = parse(text);
    assert_non_null(m);
    char *out = print(m);
    assert_non_null(strstr(out, "{kernel=[2,2] strides=[2,2] ceil_mode=0}"));
    free(out);
    module_destroy(m);
}

/* ---- errors --------------------------------------------------------------- */

typedef struct ErrorCase {
    const char *text;
    int line, col;
    const char *msg;
} ErrorCase;

#define HEAD "func @main(%x: f32<2>, %i: i32<2>) -> (y: f32<2>) {\n"

/* Columns counted by hand, 1-based, on the line shown in each comment. */
static const ErrorCase errors[] = {
    /* "  %0 relu(%x) : f32<2>": the 'r' at 6 */
    {HEAD "  %0 relu(%x) : f32<2>\n  return %0\n}\n", 2, 6, "expected '=' after the value name"},
    /* "  %0 = relu(%y) : f32<2>": %y at 13 */
    {HEAD "  %0 = relu(%y) : f32<2>\n  return %0\n}\n", 2, 13, "use of undefined value"},
    /* used before its definition: same message, at %1 (col 13) */
    {HEAD "  %0 = relu(%1) : f32<2>\n  %1 = relu(%x) : f32<2>\n  return %0\n}\n", 2, 13,
     "use of undefined value"},
    /* "  %0 = relu(%x) {axis=1} : f32<2>": 'axis' at 18 */
    {HEAD "  %0 = relu(%x) {axis=1} : f32<2>\n  return %0\n}\n", 2, 18,
     "relu has no attribute 'axis'"},
    {HEAD "  %0 = relu(%x) {frob=1} : f32<2>\n  return %0\n}\n", 2, 18,
     "relu has no attribute 'frob'"},
    /* "  %0 = leaky_relu(%x) {alpha=1 alpha=2} : f32<2>": second alpha at 32 */
    {HEAD "  %0 = leaky_relu(%x) {alpha=1 alpha=2} : f32<2>\n  return %0\n}\n", 2, 32,
     "attribute 'alpha' given twice"},
    /* "  %0 = leaky_relu(%x) {alpha=[1]} : f32<2>": '[' at 30 */
    {HEAD "  %0 = leaky_relu(%x) {alpha=[1]} : f32<2>\n  return %0\n}\n", 2, 30,
     "expected a number attribute value"},
    /* "  %0 = max_pool(%x) {kernel=2} : f32<2>": '2' at 29 */
    {HEAD "  %0 = max_pool(%x) {kernel=2} : f32<2>\n  return %0\n}\n", 2, 29,
     "expected '[' to start a list"},
    /* type errors point at the operation keyword, col 8 */
    {HEAD "  %0 = relu(%x) : f32<3>\n  return %x\n}\n", 2, 8,
     "relu: result 0 declared f32<3> but the operands give f32<2>"},
    {HEAD "  %0 = add(%x, %i) : f32<2>\n  return %0\n}\n", 2, 8,
     "add: operand 0 is f32 but operand 1 is i32"},
    {HEAD "  %0 = softmax(%x) {axis=1} : f32<2>\n  return %0\n}\n", 2, 8,
     "softmax: axis 1 out of range for rank 1"},
    {HEAD "  %0 = relu(%x, %x) : f32<2>\n  return %0\n}\n", 2, 8,
     "relu: has 2 operands, expected 1"},
    /* "  return %0" with %0: f32<1>: %0 at 10 */
    {"func @main(%x: f32<1>) -> (y: f32<2>) {\n  %0 = relu(%x) : f32<1>\n  return %0\n}\n", 3,
     10, "returns f32<1> where the signature says f32<2>"},
    /* "  return %x, %x": the list starts at 9 */
    {HEAD "  return %x, %x\n}\n", 2, 9, "returns 2 values, the signature declares 1"},
    {HEAD "  %0 = frobnicate(%x) : f32<2>\n  return %0\n}\n", 2, 8,
     "unknown operation 'frobnicate'"},
    {HEAD "  %0 = placeholder() : f32<2>\n  return %0\n}\n", 2, 8,
     "unknown operation 'placeholder'"},
    /* "  %0 = relu(%x) : f32<2x>": the '>' after 'x', col 25 */
    {HEAD "  %0 = relu(%x) : f32<2x>\n  return %0\n}\n", 2, 25, "expected a dimension"},
    {HEAD "  %0 = relu(%x) : q32<2>\n  return %0\n}\n", 2, 19, "expected an element kind"},
    {HEAD "  %0 = relu(%x) : f32<1x1x1x1x1x1x1x1x1>\n  return %0\n}\n", 2, 39,
     "more than 8 dimensions"},
    /* the type ends with the '>' at 44 */
    {HEAD "  %0 = relu(%x) : f32<4294967296x4294967296>\n  return %0\n}\n", 2, 44,
     "type has too many elements"},
    {HEAD "  %0 = relu(%x) : f32<99999999999999999999>\n  return %0\n}\n", 2, 23,
     "dimension too large"},
    /* "  %0:2 = split(%x) {axis=0} : (f32<1>, f32<1>)" then %0#2: '%' at 10 */
    {HEAD "  %0:2 = split(%x) {axis=0} : (f32<1>, f32<1>)\n  return %0#2\n}\n", 3, 10,
     "value has 2 results; #2 does not exist"},
    /* "  %0:2 = split(%x) {axis=0} : f32<2>": split at 10 */
    {HEAD "  %0:2 = split(%x) {axis=0} : f32<2>\n  return %0#0\n}\n", 2, 10,
     "1 result types for 2 results"},
    {HEAD "  %x = relu(%x) : f32<2>\n  return %x\n}\n", 2, 3, "value redefined"},
    /* "  %0 = relu(%x) : f32<2> loc(\"abc": the opening quote at 30 */
    {HEAD "  %0 = relu(%x) : f32<2> loc(\"abc\n  return %0\n}\n", 2, 30, "unterminated string"},
    /* "  %c = constant f32<2> dense<[1, 2, 3]>": the 3rd element at 37 */
    {HEAD "  %c = constant f32<2> dense<[1, 2, 3]>\n  return %x\n}\n", 2, 37,
     "more than 2 elements"},
    /* "  %c = constant f32<3> dense<[1, 2]>": after '[' at 31 */
    {HEAD "  %c = constant f32<3> dense<[1, 2]>\n  return %x\n}\n", 2, 31,
     "2 elements given, type has 3"},
    /* "  %c = constant i8<2> dense<[1, 300]>": 300 at 33 */
    {HEAD "  %c = constant i8<2> dense<[1, 300]>\n  return %x\n}\n", 2, 33,
     "300 does not fit in i8"},
    {HEAD "  %c = constant u64<1> dense<[-1]>\n  return %x\n}\n", 2, 31,
     "expected an unsigned integer"},
    {HEAD "  %c = constant u64<1> dense<[18446744073709551616]>\n  return %x\n}\n", 2, 31,
     "integer out of range"},
    {HEAD "  %c = constant f32<2> zeros\n  return %x\n}\n", 2, 24, "expected constant data"},
    {HEAD "  %c = constant f32<2> opaque<\"xyz\">\n  return %x\n}\n", 2, 31,
     "expected a hexadecimal hash"},
    {HEAD "  %c:2 = constant f32<2> splat<1>\n  return %x\n}\n", 2, 3,
     "a constant has one result"},
    /* the file ends after the last statement: at the end of line 2, col 25 */
    {HEAD "  %0 = relu(%x) : f32<2>", 2, 25, "expected 'return' before the end of the function"},
    {HEAD "  return %x\n", 3, 1, "expected '}' to close the function body, found the end"},
    {HEAD "  return %x\n} junk\n", 3, 3, "expected end of file after the function"},
    /* Inputs cut short where the old parser read past the end of the buffer. */
    {HEAD "  %c = constant u64<1> dense<[5", 2, 32,
     "expected ']' to end the elements, found the end of the file"},
    {"func @main() -> (", 1, 18, "expected a result name"},
    {"", 1, 1, "expected 'func'"},
    {"func main() -> () {\n  return\n}\n", 1, 6, "expected '@' before the function name"},
    {"func @main(%x: f32<2>) (y: f32<2>) {\n  return %x\n}\n", 1, 24,
     "expected '->' before the result list"},
    {"func @main(%x: f32<2>) -> (y: f32<2>) {\n  return %x\n}\n\n// ok\n%", 6, 1,
     "expected end of file after the function"},
};

static void test_errors(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
        const ErrorCase *e = &errors[i];
        diag_clear(&diags);
        Module *m = parse(e->text);
        bool ok = !m && diags.errors == 1 && diags.head->loc.line == e->line &&
                  diags.head->loc.col == e->col && strstr(diags.head->msg, e->msg) &&
                  diags.head->src_line;
        if (!ok) {
            print_error("case %zu: want %d:%d '%s'\n", i, e->line, e->col, e->msg);
            dump_diags();
        }
        module_destroy(m);
        assert_true(ok);
    }
}

/* The rendered form: file:line:col, the source line, a caret under the column. */
static void test_error_rendering(void **state) {
    (void)state;
    assert_null(parse(HEAD "  %0 = relu(%y) : f32<2>\n  return %0\n}\n"));
    StrBuf sb;
    sb_init(&sb);
    diag_render(&diags, &sb);
    assert_string_equal(sb_str(&sb), "in.hl:2:13: error: use of undefined value\n"
                                     "    %0 = relu(%y) : f32<2>\n"
                                     "              ^\n");
    sb_free(&sb);
}

/* Two nodes with wrong types: the first ends the parse with one message at
 * its operation (types are checked as each node is read, so a later node
 * never sees an operand of a type it was not declared with). */
static void test_type_errors_accumulate(void **state) {
    (void)state;
    assert_null(parse(HEAD "  %0 = relu(%x) : f32<3>\n  %1 = neg(%i) : i32<5>\n"
                           "  return %x\n}\n"));
    assert_int_equal(diags.errors, 1);
    assert_int_equal(diags.head->loc.line, 2);
    assert_int_equal(diags.head->loc.col, 8);
}

/* print_f32 must give text that the parser (strtod, then rounding to f32)
 * reads back to the same bits: checked on 200000 bit patterns from an LCG
 * plus the edges (subnormals, FLT_MAX, powers of ten). */
static void check_f32_text(uint32_t bits) {
    float f;
    memcpy(&f, &bits, 4);
    if (f != f)
        return;
    StrBuf sb;
    sb_init(&sb);
    print_f32(f, &sb);
    float back = (float)strtod(sb_str(&sb), NULL);
    uint32_t back_bits;
    memcpy(&back_bits, &back, 4);
    if (back_bits != bits)
        print_error("0x%08x printed as %s reads back as 0x%08x\n", bits, sb_str(&sb), back_bits);
    assert_int_equal(back_bits, bits);
    sb_free(&sb);
}

static void test_f32_text_round_trip(void **state) {
    (void)state;
    uint32_t edges[] = {0x00000001, 0x007fffff, 0x00800000, 0x7f7fffff, 0x3f800001,
                        0x3dcccccd, 0x4b800001, 0x80000001, 0x322bcc77, 0x5368d4a5};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
        check_f32_text(edges[i]);
    uint32_t x = 1;
    for (int i = 0; i < 200000; i++) {
        x = x * 1664525u + 1013904223u;
        check_f32_text(x);
    }
}

static void test_nul_byte(void **state) {
    (void)state;
    static const char text[] = "func @main() -> () {\n  return\n}\0\n";
    assert_null(parse_module(text, sizeof text - 1, "in.hl", &diags));
    assert_int_equal(diags.errors, 1);
    assert_non_null(strstr(diags.head->msg, "NUL byte"));
}

int main(void) {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_round_trips),    T(test_canonical_form),         T(test_attribute_order),
        T(test_errors),         T(test_error_rendering),        T(test_type_errors_accumulate),
        T(test_nul_byte),       T(test_f32_text_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
