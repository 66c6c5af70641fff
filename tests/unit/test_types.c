/* Unit tests for core/types: element kinds, half-precision conversion,
 * element counts and broadcasting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "core/types.h"

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float f32_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---- element kinds ------------------------------------------------------ */

static void test_elem_names_and_sizes(void **state) {
    (void)state;
    /* Every kind's name reads back to the same kind. */
    for (int k = 0; k < ELEM_COUNT; k++) {
        const char *nm = elem_name((ElemKind)k);
        ElemKind back;
        assert_true(elem_from_name(nm, strlen(nm), &back));
        assert_int_equal(back, k);
    }
    ElemKind k;
    assert_true(elem_from_name("bf16xyz", 4, &k)); /* length-limited */
    assert_int_equal(k, ELEM_BF16);
    assert_false(elem_from_name("f3", 2, &k));
    assert_false(elem_from_name("f32", 2, &k) && k == ELEM_F32);
    assert_false(elem_from_name("float", 5, &k));
    assert_false(elem_from_name("", 0, &k));
    assert_string_equal(elem_name(ELEM_COUNT), "?");

    assert_int_equal(elem_size(ELEM_F32), 4);
    assert_int_equal(elem_size(ELEM_F16), 2);
    assert_int_equal(elem_size(ELEM_BF16), 2);
    assert_int_equal(elem_size(ELEM_F64), 8);
    assert_int_equal(elem_size(ELEM_I8), 1);
    assert_int_equal(elem_size(ELEM_U16), 2);
    assert_int_equal(elem_size(ELEM_I64), 8);
    assert_int_equal(elem_size(ELEM_BOOL), 1);
}

static void test_elem_classes(void **state) {
    (void)state;
    assert_true(elem_is_float(ELEM_F32));
    assert_true(elem_is_float(ELEM_BF16));
    assert_false(elem_is_float(ELEM_I32));
    assert_false(elem_is_float(ELEM_BOOL));
    assert_true(elem_is_int(ELEM_I8));
    assert_true(elem_is_int(ELEM_U64));
    assert_false(elem_is_int(ELEM_BOOL));
    assert_false(elem_is_int(ELEM_F16));
    assert_int_equal(elem_class(ELEM_I16), ECLS_SINT);
    assert_int_equal(elem_class(ELEM_U32), ECLS_UINT);
    assert_int_equal(elem_class(ELEM_BOOL), ECLS_BOOL);
    assert_int_equal(elem_class(ELEM_F64), ECLS_FLOAT);
}

/* TensorProto.DataType codes from onnx.proto (FLOAT=1, UINT8=2, INT8=3,
 * UINT16=4, INT16=5, INT32=6, INT64=7, STRING=8, BOOL=9, FLOAT16=10,
 * DOUBLE=11, UINT32=12, UINT64=13, COMPLEX64=14, BFLOAT16=16). */
static void test_elem_onnx_codes(void **state) {
    (void)state;
    static const struct { int code; ElemKind k; } table[] = {
        {1, ELEM_F32},  {2, ELEM_U8},   {3, ELEM_I8},   {4, ELEM_U16},  {5, ELEM_I16},
        {6, ELEM_I32},  {7, ELEM_I64},  {9, ELEM_BOOL}, {10, ELEM_F16}, {11, ELEM_F64},
        {12, ELEM_U32}, {13, ELEM_U64}, {16, ELEM_BF16}, {8, ELEM_STR},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        ElemKind k;
        assert_true(elem_from_onnx(table[i].code, &k));
        assert_int_equal(k, table[i].k);
        assert_int_equal(elem_to_onnx(table[i].k), table[i].code);
    }
    ElemKind k;
    assert_false(elem_from_onnx(0, &k));  /* UNDEFINED */
    assert_false(elem_from_onnx(14, &k)); /* COMPLEX64 */
    assert_false(elem_from_onnx(99, &k));
    assert_string_equal(onnx_type_name(8), "STRING");
    assert_string_equal(onnx_type_name(16), "BFLOAT16");
    assert_string_equal(onnx_type_name(-1), "unknown");
    assert_string_equal(onnx_type_name(17), "unknown");
}

/* ---- f16 / bf16 ----------------------------------------------------------- */

/* Expected bit patterns computed with numpy 1.24 on this machine:
 *   np.array([x], np.float32).astype(np.float16).view(np.uint16)
 * and for bf16 with torch 1.13:
 *   torch.tensor([x], dtype=torch.float32).to(torch.bfloat16).view(torch.int16)
 * The inputs are given as f32 bit patterns (np.array([bits], np.uint32)
 * .view(np.float32)), so the cases are exact. */
typedef struct HalfCase {
    uint32_t f32;
    uint16_t f16, bf16;
    const char *what;
} HalfCase;

static const HalfCase half_cases[] = {
    {0x3f800000, 0x3c00, 0x3f80, "1.0"},
    {0xc0000000, 0xc000, 0xc000, "-2.0"},
    {0x3dcccccd, 0x2e66, 0x3dcd, "0.1"},
    {0x3eaaaaab, 0x3555, 0x3eab, "1/3"},
    {0x477fe000, 0x7bff, 0x4780, "65504, largest f16"},
    {0x477fef00, 0x7bff, 0x4780, "65519 rounds down to 65504"},
    {0x477ff000, 0x7c00, 0x4780, "65520 rounds to f16 infinity"},
    {0x47c35000, 0x7c00, 0x47c3, "1e5 overflows f16"},
    {0x33800000, 0x0001, 0x3380, "2^-24, smallest f16 subnormal"},
    {0x33000000, 0x0000, 0x3300, "2^-25: tie between 0 and 1 ulp, to even 0"},
    {0x33000001, 0x0001, 0x3300, "just above 2^-25 rounds up"},
    {0x33c00000, 0x0002, 0x33c0, "3 * 2^-25: tie, to even 2 ulp"},
    {0x3356bf95, 0x0001, 0x3357, "5e-8"},
    {0x2edbe6ff, 0x0000, 0x2edc, "1e-10 underflows f16"},
    {0x387fc000, 0x03ff, 0x3880, "largest f16 subnormal"},
    {0x387fe000, 0x0400, 0x3880, "subnormal tie carries into the smallest normal"},
    {0x38800000, 0x0400, 0x3880, "2^-14, smallest f16 normal"},
    {0x3f801000, 0x3c00, 0x3f80, "1 + 2^-11: tie, to even"},
    {0x3f803000, 0x3c02, 0x3f80, "1 + 3 * 2^-11: tie, to even (up)"},
    {0x7f800000, 0x7c00, 0x7f80, "+inf"},
    {0xff800000, 0xfc00, 0xff80, "-inf"},
    {0x80000000, 0x8000, 0x8000, "-0"},
    {0x00000000, 0x0000, 0x0000, "+0"},
    /* bf16-specific rounding: ties to even, carries, f32 subnormals. */
    {0x3f808000, 0x3c04, 0x3f80, "bf16 tie to even (down)"},
    {0x3f818000, 0x3c0c, 0x3f82, "bf16 tie to even (up)"},
    {0x3f808001, 0x3c04, 0x3f81, "bf16 just above the tie"},
    {0x3f7fffff, 0x3c00, 0x3f80, "bf16 carry into the exponent"},
    {0x7f7fffff, 0x7c00, 0x7f80, "FLT_MAX rounds to bf16 infinity"},
    {0x00010000, 0x0000, 0x0001, "f32 subnormal exact in bf16"},
    {0x00008000, 0x0000, 0x0000, "f32 subnormal tie to even 0"},
    {0x00018000, 0x0000, 0x0002, "f32 subnormal tie to even 2"},
};

static void test_f32_to_half(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof half_cases / sizeof half_cases[0]; i++) {
        const HalfCase *c = &half_cases[i];
        float f = f32_from_bits(c->f32);
        uint16_t h = f32_to_f16(f), b = f32_to_bf16(f);
        if (h != c->f16 || b != c->bf16)
            print_error("case %s (0x%08x): f16 0x%04x want 0x%04x, bf16 0x%04x want 0x%04x\n",
                        c->what, c->f32, h, c->f16, b, c->bf16);
        assert_int_equal(h, c->f16);
        assert_int_equal(b, c->bf16);
    }
}

/* f16 -> f32 is exact; expected values from
 *   np.array([h], np.uint16).view(np.float16).astype(np.float32). */
static void test_f16_to_f32(void **state) {
    (void)state;
    static const struct { uint16_t h; uint32_t f32; } cases[] = {
        {0x0001, 0x33800000}, {0x8001, 0xb3800000}, {0x03ff, 0x387fc000},
        {0x0400, 0x38800000}, {0x3c00, 0x3f800000}, {0x7bff, 0x477fe000},
        {0x7c00, 0x7f800000}, {0xfc00, 0xff800000}, {0x3555, 0x3eaaa000},
        {0xc000, 0xc0000000}, {0x0000, 0x00000000}, {0x8000, 0x80000000},
        {0x0200, 0x38000000}, /* 2^-15, a subnormal with one leading zero bit */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_int_equal(f32_bits(f16_to_f32(cases[i].h)), cases[i].f32);
}

/* Every finite f16 converts to f32 and back to the same bits; so does
 * every bf16 (bf16 is the top half of an f32, so the round trip is exact). */
static void test_half_round_trips(void **state) {
    (void)state;
    for (uint32_t h = 0; h <= 0xffff; h++) {
        bool is_nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
        if (!is_nan)
            assert_int_equal(f32_to_f16(f16_to_f32((uint16_t)h)), h);
        bool bnan = (h & 0x7f80) == 0x7f80 && (h & 0x7f);
        if (!bnan)
            assert_int_equal(f32_to_bf16(bf16_to_f32((uint16_t)h)), h);
    }
}

static void test_half_nan(void **state) {
    (void)state;
    uint32_t nans[] = {0x7fc00000, 0xffc00000, 0x7f800001, 0x7fa00000, 0xff800001};
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
        float f = f32_from_bits(nans[i]);
        uint16_t h = f32_to_f16(f), b = f32_to_bf16(f);
        /* Still a NaN (all-ones exponent, non-zero mantissa), sign kept. */
        assert_int_equal(h & 0x7c00, 0x7c00);
        assert_true(h & 0x3ff);
        assert_int_equal(h >> 15, nans[i] >> 31);
        assert_int_equal(b & 0x7f80, 0x7f80);
        assert_true(b & 0x7f);
        assert_int_equal(b >> 15, nans[i] >> 31);
        assert_true(isnan(f16_to_f32(h)));
        assert_true(isnan(bf16_to_f32(b)));
    }
    /* numpy: np.float32('nan').astype(np.float16) is 0x7e00. */
    assert_int_equal(f32_to_f16(NAN), 0x7e00);
}

/* ---- types ------------------------------------------------------------------ */

static void test_type_basics(void **state) {
    (void)state;
    char buf[TYPE_STR_MAX];
    Type t = type_make(ELEM_F32, 4, (int64_t[]){1, 3, 224, 224});
    assert_string_equal(type_str(&t, buf), "f32<1x3x224x224>");
    Type s = type_scalar(ELEM_I64);
    assert_string_equal(type_str(&s, buf), "i64<>");
    assert_int_equal(type_numel(&s), 1);
    assert_int_equal(type_numel(&t), 3 * 224 * 224);
    assert_int_equal(type_bytes(&t), 4 * 3 * 224 * 224);
    int64_t st[MAX_RANK];
    type_strides(&t, st);
    assert_int_equal(st[0], 3 * 224 * 224);
    assert_int_equal(st[1], 224 * 224);
    assert_int_equal(st[2], 224);
    assert_int_equal(st[3], 1);

    Type u = type_make(ELEM_F16, 4, (int64_t[]){1, 3, 224, 224});
    assert_true(type_same_shape(&t, &u));
    assert_false(type_equal(&t, &u));
    u.elem = ELEM_F32;
    assert_true(type_equal(&t, &u));
    u.dims[3] = 223;
    assert_false(type_same_shape(&t, &u));
    Type v = type_make(ELEM_F32, 3, (int64_t[]){1, 3, 224});
    assert_false(type_equal(&t, &v));

    /* The longest type string fits TYPE_STR_MAX. */
    Type big = {.elem = ELEM_BOOL, .rank = MAX_RANK};
    for (int i = 0; i < MAX_RANK; i++)
        big.dims[i] = INT64_MAX;
    type_str(&big, buf);
    assert_true(strlen(buf) < TYPE_STR_MAX);
    assert_int_equal(buf[strlen(buf) - 1], '>');
    big.dyn = 0xff; /* every dimension bounded-dynamic: "?<=" each */
    type_str(&big, buf);
    assert_true(strlen(buf) < TYPE_STR_MAX);
    assert_int_equal(buf[strlen(buf) - 1], '>');

    /* Bounded-dynamic dimensions print as ?<=N and take part in equality. */
    Type dy = type_make(ELEM_I64, 2, (int64_t[]){2, 60});
    dy.dyn = 2;
    assert_string_equal(type_str(&dy, buf), "i64<2x?<=60>");
    assert_true(type_is_dynamic(&dy));
    assert_true(type_dim_dynamic(&dy, 1));
    assert_false(type_dim_dynamic(&dy, 0));
    Type st2 = type_make(ELEM_I64, 2, (int64_t[]){2, 60});
    assert_false(type_equal(&dy, &st2));
    assert_false(type_same_shape(&dy, &st2));
}

static void test_type_numel_checked(void **state) {
    (void)state;
    int64_t n = -1;
    Type t = type_make(ELEM_F32, 2, (int64_t[]){3, 5});
    assert_true(type_numel_checked(&t, &n));
    assert_int_equal(n, 15);

    Type zero = type_make(ELEM_F32, 3, (int64_t[]){4, 0, 7});
    assert_true(type_numel_checked(&zero, &n));
    assert_int_equal(n, 0);

    Type neg = type_make(ELEM_F32, 2, (int64_t[]){4, -1});
    assert_false(type_numel_checked(&neg, &n));

    /* 2^32 * 2^32 overflows int64. */
    Type ovf = type_make(ELEM_U8, 2, (int64_t[]){1ll << 32, 1ll << 32});
    assert_false(type_numel_checked(&ovf, &n));
    /* INT64_MAX elements fit int64 but not as 8-byte elements in size_t. */
    Type big = type_make(ELEM_I64, 1, (int64_t[]){INT64_MAX});
    assert_false(type_numel_checked(&big, &n));
    /* 2^62 one-byte elements: fits both (64-bit size_t). */
    Type ok = type_make(ELEM_I8, 2, (int64_t[]){1ll << 31, 1ll << 31});
    assert_true(type_numel_checked(&ok, &n));
    assert_int_equal(n, 1ll << 62);
    /* ...but 2^62 four-byte elements is 2^64 bytes. */
    ok.elem = ELEM_F32;
    assert_false(type_numel_checked(&ok, &n));
    /* An overflow hidden behind many modest dims: 2^8 eight times = 2^64. */
    Type many = {.elem = ELEM_U8, .rank = 8};
    for (int i = 0; i < 8; i++)
        many.dims[i] = 256;
    assert_false(type_numel_checked(&many, &n));
}

static void expect_broadcast(int ra, const int64_t *a, int rb, const int64_t *b, int rr,
                             const int64_t *r) {
    Type ta = type_make(ELEM_F32, ra, a), tb = type_make(ELEM_I8, rb, b), out;
    assert_true(type_broadcast(&ta, &tb, &out));
    assert_int_equal(out.elem, ELEM_F32); /* the kind of the first operand */
    assert_int_equal(out.rank, rr);
    for (int i = 0; i < rr; i++)
        assert_int_equal(out.dims[i], r[i]);
}

static void test_type_broadcast(void **state) {
    (void)state;
    /* numpy: np.broadcast_shapes((3,1,5), (4,1)) == (3,4,5) */
    expect_broadcast(3, (int64_t[]){3, 1, 5}, 2, (int64_t[]){4, 1}, 3, (int64_t[]){3, 4, 5});
    expect_broadcast(2, (int64_t[]){4, 1}, 3, (int64_t[]){3, 1, 5}, 3, (int64_t[]){3, 4, 5});
    expect_broadcast(0, NULL, 2, (int64_t[]){2, 3}, 2, (int64_t[]){2, 3});
    expect_broadcast(2, (int64_t[]){2, 3}, 0, NULL, 2, (int64_t[]){2, 3});
    expect_broadcast(1, (int64_t[]){0}, 1, (int64_t[]){1}, 1, (int64_t[]){0});
    expect_broadcast(2, (int64_t[]){1, 0}, 2, (int64_t[]){5, 1}, 2, (int64_t[]){5, 0});
    expect_broadcast(4, (int64_t[]){8, 1, 6, 1}, 3, (int64_t[]){7, 1, 5}, 4,
                     (int64_t[]){8, 7, 6, 5});

    Type a = type_make(ELEM_F32, 2, (int64_t[]){2, 3});
    Type b = type_make(ELEM_F32, 2, (int64_t[]){3, 2});
    Type out = type_make(ELEM_F32, 1, (int64_t[]){42});
    assert_false(type_broadcast(&a, &b, &out));
    assert_int_equal(out.rank, 1); /* untouched on failure */
    assert_int_equal(out.dims[0], 42);
    Type z = type_make(ELEM_F32, 1, (int64_t[]){0});
    Type three = type_make(ELEM_F32, 1, (int64_t[]){3});
    assert_false(type_broadcast(&z, &three, &out));
    /* The output may alias an operand. */
    Type c = type_make(ELEM_F32, 2, (int64_t[]){1, 4});
    Type d = type_make(ELEM_F32, 3, (int64_t[]){2, 3, 1});
    assert_true(type_broadcast(&c, &d, &c));
    assert_int_equal(c.rank, 3);
    assert_int_equal(c.dims[0], 2);
    assert_int_equal(c.dims[1], 3);
    assert_int_equal(c.dims[2], 4);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_elem_names_and_sizes),
        cmocka_unit_test(test_elem_classes),
        cmocka_unit_test(test_elem_onnx_codes),
        cmocka_unit_test(test_f32_to_half),
        cmocka_unit_test(test_f16_to_f32),
        cmocka_unit_test(test_half_round_trips),
        cmocka_unit_test(test_half_nan),
        cmocka_unit_test(test_type_basics),
        cmocka_unit_test(test_type_numel_checked),
        cmocka_unit_test(test_type_broadcast),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
