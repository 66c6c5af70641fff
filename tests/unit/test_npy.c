/* Unit tests for core/npy: write/read round trips for every kind numpy has
 * and ranks 0 to 4, files as numpy writes them, and every malformed input
 * rejected with one diagnostic naming the file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/npy.h"

static Arena *arena;
static DiagList diags;

static int setup(void **state) {
    (void)state;
    arena = arena_new();
    diag_init(&diags, NULL);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    arena_destroy(arena);
    diag_free(&diags);
    return 0;
}

/* numpy's descr for each kind (np.dtype(...).str), '|' for one-byte kinds. */
static const struct { ElemKind k; const char *descr; } kinds[] = {
    {ELEM_F32, "<f4"}, {ELEM_F16, "<f2"}, {ELEM_F64, "<f8"}, {ELEM_I8, "|i1"},
    {ELEM_I16, "<i2"}, {ELEM_I32, "<i4"}, {ELEM_I64, "<i8"}, {ELEM_U8, "|u1"},
    {ELEM_U16, "<u2"}, {ELEM_U32, "<u4"}, {ELEM_U64, "<u8"}, {ELEM_BOOL, "|b1"},
};

static const struct { int rank; int64_t dims[4]; const char *text; } shapes[] = {
    {0, {0}, "()"},
    {1, {5}, "(5,)"},
    {2, {2, 3}, "(2, 3)"},
    {3, {2, 1, 3}, "(2, 1, 3)"},
    {4, {1, 2, 2, 2}, "(1, 2, 2, 2)"},
    {2, {0, 3}, "(0, 3)"},
};

static void fill(Tensor *t) {
    unsigned char *b = t->data;
    size_t n = tensor_bytes(t);
    for (size_t i = 0; i < n; i++)
        b[i] = t->type.elem == ELEM_BOOL ? (unsigned char)(i % 3 == 0) : (unsigned char)(i * 37 + 11);
}

static void test_round_trip_every_kind_and_rank(void **state) {
    (void)state;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            Type t = type_make(kinds[k].k, shapes[s].rank, shapes[s].dims);
            Tensor *x = tensor_new(arena, &t);
            fill(x);
            StrBuf sb;
            sb_init(&sb);
            assert_true(npy_write(x, &sb));

            /* The header is numpy's dict, and magic + length + header is a
             * multiple of 64 bytes ending in a newline (format 1.0). */
            assert_memory_equal(sb.data, "\x93NUMPY\x01\x00", 8);
            size_t hlen = (size_t)(unsigned char)sb.data[8] | (size_t)(unsigned char)sb.data[9] << 8;
            assert_int_equal((10 + hlen) % 64, 0);
            assert_int_equal(sb.data[10 + hlen - 1], '\n');
            char want[128];
            snprintf(want, sizeof want, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                     kinds[k].descr, shapes[s].text);
            assert_memory_equal(sb.data + 10, want, strlen(want));
            assert_int_equal(sb.len, 10 + hlen + tensor_bytes(x));

            Tensor *y = npy_read(sb.data, sb.len, "rt.npy", arena, &diags);
            assert_non_null(y);
            assert_true(type_equal(&x->type, &y->type));
            assert_memory_equal(x->data, y->data, tensor_bytes(x) ? tensor_bytes(x) : 1);
            assert_int_equal(diags.errors, 0);
            sb_free(&sb);
        }
    }
}

static void test_bf16_not_written(void **state) {
    (void)state;
    Type t = type_make(ELEM_BF16, 1, (int64_t[]){2});
    Tensor *x = tensor_new(arena, &t);
    StrBuf sb;
    sb_init(&sb);
    assert_false(npy_write(x, &sb)); /* numpy has no bfloat16 */
    sb_free(&sb);
}

/* An .npy image: magic, version, header (padded with spaces to `align`),
 * then `data`. */
static size_t make_npy(unsigned char *out, int major, const char *dict, size_t align,
                       const void *data, size_t dlen) {
    size_t pre = major == 1 ? 10 : 12;
    size_t hlen = strlen(dict) + 1;
    while ((pre + hlen) % align)
        hlen++;
    memcpy(out, "\x93NUMPY", 6);
    out[6] = (unsigned char)major;
    out[7] = 0;
    out[8] = (unsigned char)(hlen & 0xff);
    out[9] = (unsigned char)(hlen >> 8);
    if (major != 1) {
        out[10] = out[11] = 0;
    }
    memset(out + pre, ' ', hlen);
    memcpy(out + pre, dict, strlen(dict));
    out[pre + hlen - 1] = '\n';
    memcpy(out + pre + hlen, data, dlen);
    return pre + hlen + dlen;
}

/* numpy 1.24 pads its headers to 128 bytes (room to grow the shape):
 *   np.save(f, np.arange(6, dtype='<i4').reshape(2, 3)) writes 152 bytes,
 *   a header of length 118 (0x76). */
static void test_read_numpy_file(void **state) {
    (void)state;
    unsigned char buf[256];
    int32_t data[6] = {0, 1, 2, 3, 4, 5};
    size_t len = make_npy(buf, 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }",
                          128, data, sizeof data);
    assert_int_equal(len, 152);
    assert_int_equal(buf[8], 0x76);
    Tensor *t = npy_read(buf, len, "np.npy", arena, &diags);
    assert_non_null(t);
    Type want = type_make(ELEM_I32, 2, (int64_t[]){2, 3});
    assert_true(type_equal(&t->type, &want));
    assert_int_equal(((int32_t *)t->data)[5], 5);

    /* Keys in another order, format 2.0, native '=' byte order, booleans
     * stored as non-zero bytes other than 1. */
    unsigned char raw[3] = {0, 2, 255};
    len = make_npy(buf, 2, "{'shape': (3,), 'fortran_order': False, 'descr': '|b1'}", 64, raw, 3);
    t = npy_read(buf, len, "b.npy", arena, &diags);
    assert_non_null(t);
    assert_int_equal(t->type.elem, ELEM_BOOL);
    assert_int_equal(((uint8_t *)t->data)[0], 0);
    assert_int_equal(((uint8_t *)t->data)[1], 1);
    assert_int_equal(((uint8_t *)t->data)[2], 1);
    double d = 2.5;
    len = make_npy(buf, 1, "{'descr': '=f8', 'fortran_order': False, 'shape': (), }", 64, &d, 8);
    t = npy_read(buf, len, "s.npy", arena, &diags);
    assert_non_null(t);
    assert_int_equal(t->type.rank, 0);
    assert_true(((double *)t->data)[0] == 2.5);
    assert_int_equal(diags.errors, 0);
}

/* Reading `buf` must fail with one diagnostic on file "bad.npy" saying what. */
static void expect_reject(const unsigned char *buf, size_t len, const char *what) {
    diag_clear(&diags);
    assert_null(npy_read(buf, len, "bad.npy", arena, &diags));
    assert_int_equal(diags.errors, 1);
    const char *msg = diags.head->msg, *file = diags.head->file;
    if (!file || strcmp(file, "bad.npy") || !strstr(msg, what))
        print_error("got '%s: %s', want 'bad.npy: ...%s'\n", file ? file : "(none)", msg, what);
    assert_non_null(file);
    assert_string_equal(file, "bad.npy");
    assert_non_null(strstr(msg, what));
}

static void test_malformed_rejected(void **state) {
    (void)state;
    unsigned char buf[512];
    float data[6] = {0};
    const char *ok_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    size_t len = make_npy(buf, 1, ok_dict, 64, data, sizeof data);
    assert_non_null(npy_read(buf, len, "good.npy", arena, &diags));

    expect_reject(buf, 0, "bad magic");
    expect_reject(buf, 9, "bad magic");
    unsigned char copy[512];
    memcpy(copy, buf, len);
    copy[1] = 'M';
    expect_reject(copy, len, "bad magic");
    memcpy(copy, buf, len);
    copy[6] = 4;
    expect_reject(copy, len, "unsupported .npy format version");
    memcpy(copy, buf, len);
    copy[6] = 2;
    expect_reject(copy, 11, "truncated header");
    memcpy(copy, buf, len);
    copy[9] = 0x10; /* header length 4096 + 54 */
    expect_reject(copy, len, "header longer than the file");
    expect_reject(buf, 40, "header longer than the file");

    /* Data size must match the shape exactly. */
    expect_reject(buf, len - 1, "data holds 23 bytes, the header's shape needs 24");
    unsigned char more[600];
    memcpy(more, buf, len);
    more[len] = 0;
    expect_reject(more, len + 1, "data holds 25 bytes, the header's shape needs 24");

    len = make_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, }", 64, data, 4);
    expect_reject(buf, len, "malformed header");
    len = make_npy(buf, 1, "{'fortran_order': False, 'shape': (1,), }", 64, data, 4);
    expect_reject(buf, len, "malformed header");
    len = make_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }", 64,
                   data, 8);
    expect_reject(buf, len, "malformed header");
    len = make_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", 64,
                   data, 8);
    expect_reject(buf, len, "malformed header");
    len = make_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3", 64, data,
                   24);
    expect_reject(buf, len, "malformed header");
    len = make_npy(buf, 1, "{'descr': '<f4, 'fortran_order': False, 'shape': (1,), }", 64, data,
                   4);
    expect_reject(buf, len, "unsupported element type");
    len = make_npy(buf, 1,
                   "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }",
                   64, data, 4);
    expect_reject(buf, len, "malformed header"); /* rank 9 > MAX_RANK */
    len = make_npy(buf, 1,
                   "{'descr': '<f4', 'fortran_order': False, "
                   "'shape': (4294967296, 4294967296), }",
                   64, data, 4);
    expect_reject(buf, len, "shape overflows");

    len = make_npy(buf, 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", 64,
                   data, 4);
    expect_reject(buf, len, "big-endian arrays are not supported");
    len = make_npy(buf, 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 64,
                   data, 24);
    expect_reject(buf, len, "Fortran-order arrays are not supported");
    len = make_npy(buf, 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", 64, data,
                   8);
    expect_reject(buf, len, "unsupported element type '<c8'");
    len = make_npy(buf, 1, "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", 64, data,
                   8);
    expect_reject(buf, len, "unsupported element type '|O'");
    len = make_npy(buf, 1, "{'descr': '', 'fortran_order': False, 'shape': (1,), }", 64, data, 4);
    expect_reject(buf, len, "unsupported element type ''");
}

/* Strings are '<Un' (UTF-32LE, NUL padded): numpy's own bytes for
 * np.save(np.array(['a', 'bc', 'Ü'])), read and written back identically. */
static void test_strings(void **state) {
    (void)state;
    unsigned char buf[256];
    static const unsigned char data[24] = {'a', 0, 0, 0, 0, 0, 0, 0, 'b', 0, 0, 0,
                                           'c', 0, 0, 0, 0xdc, 0, 0, 0, 0, 0, 0, 0};
    size_t len = make_npy(buf, 1, "{'descr': '<U2', 'fortran_order': False, 'shape': (3,), }",
                          128, data, sizeof data);
    assert_int_equal(len, 152);
    Tensor *t = npy_read(buf, len, "u.npy", arena, &diags);
    assert_non_null(t);
    assert_int_equal(t->type.elem, ELEM_STR);
    assert_string_equal(tensor_get_str(t, 0), "a");
    assert_string_equal(tensor_get_str(t, 1), "bc");
    assert_string_equal(tensor_get_str(t, 2), "\xc3\x9c"); /* Ü in UTF-8 */
    StrBuf sb;
    sb_init(&sb);
    assert_true(npy_write(t, &sb));
    assert_int_equal(sb.len, len);
    assert_memory_equal(sb.data, buf, len);
    sb_free(&sb);
    /* a surrogate is no character; the data must fill the shape */
    unsigned char bad[8] = {0x00, 0xd8, 0, 0, 0, 0, 0, 0};
    len = make_npy(buf, 1, "{'descr': '<U2', 'fortran_order': False, 'shape': (1,), }", 64, bad, 8);
    expect_reject(buf, len, "no Unicode character");
    len = make_npy(buf, 1, "{'descr': '<U2', 'fortran_order': False, 'shape': (2,), }", 64, bad, 8);
    expect_reject(buf, len, "data holds 8 bytes");
}

int main(void) {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_round_trip_every_kind_and_rank),
        T(test_bf16_not_written),
        T(test_read_numpy_file),
        T(test_malformed_rejected),
        T(test_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
