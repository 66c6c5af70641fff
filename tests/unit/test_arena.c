/* Unit tests for core/arena: alignment, big blocks and early release,
 * byte accounting, and the failure-injection hook with and without an
 * out-of-memory handler. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/arena.h"

static Arena *arena;

static int setup(void **state) {
    (void)state;
    arena = arena_new();
    return arena ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    arena_destroy(arena);
    return 0;
}

static bool all_zero(const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return false;
    return true;
}

static void test_small_alignment(void **state) {
    (void)state;
    /* Odd sizes must not knock later blocks off the 16-byte grid. */
    size_t sizes[] = {1, 3, 7, 15, 16, 17, 31, 33, 100, 1000, 4095};
    unsigned char *prev = NULL;
    for (int round = 0; round < 50; round++) {
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            unsigned char *p = arena_alloc(arena, sizes[i]);
            assert_non_null(p);
            assert_int_equal((uintptr_t)p % 16, 0);
            assert_true(all_zero(p, sizes[i]));
            memset(p, 0xab, sizes[i]); /* ASan catches an overlap or overrun */
            assert_ptr_not_equal(p, prev);
            prev = p;
        }
    }
    /* A zero-byte request still gives a usable, distinct pointer. */
    void *z1 = arena_alloc(arena, 0), *z2 = arena_alloc(arena, 0);
    assert_non_null(z1);
    assert_non_null(z2);
}

static void test_big_blocks(void **state) {
    (void)state;
    size_t before = arena_bytes(arena);
    /* arena_alloc switches to big blocks at 16 KiB: 64-byte aligned, zeroed. */
    size_t sizes[] = {16 * 1024, 16 * 1024 + 1, 100000, 3 << 20};
    size_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        unsigned char *p = arena_alloc(arena, sizes[i]);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % 64, 0);
        assert_true(all_zero(p, sizes[i]));
        p[0] = p[sizes[i] - 1] = 1;
        total += sizes[i];
    }
    assert_int_equal(arena_bytes(arena) - before, total);

    /* arena_alloc_big is 64-aligned even for small sizes; release returns
     * exactly its size to the count, in any order. */
    unsigned char *a = arena_alloc_big(arena, 10);
    unsigned char *b = arena_alloc_big(arena, 5000);
    unsigned char *c = arena_alloc_big(arena, 70);
    assert_int_equal((uintptr_t)a % 64, 0);
    assert_int_equal((uintptr_t)b % 64, 0);
    assert_int_equal((uintptr_t)c % 64, 0);
    memset(a, 1, 10);
    memset(b, 2, 5000);
    memset(c, 3, 70);
    assert_int_equal(arena_bytes(arena) - before, total + 5080);
    arena_release(arena, b); /* middle of the list */
    assert_int_equal(arena_bytes(arena) - before, total + 80);
    arena_release(arena, c); /* head of the list */
    arena_release(arena, a);
    assert_int_equal(arena_bytes(arena) - before, total);
    arena_release(arena, NULL); /* harmless */
    assert_int_equal(arena_bytes(arena) - before, total);
}

static void test_strings_and_grow(void **state) {
    (void)state;
    assert_string_equal(arena_strdup(arena, "conv1.weight"), "conv1.weight");
    assert_string_equal(arena_strdup(arena, NULL), "");
    assert_string_equal(arena_strndup(arena, "abcdef", 3), "abc");
    assert_string_equal(arena_printf(arena, "%s_%d", "node", 42), "node_42");
    /* A long formatted string goes through the big-block path. */
    char *big = arena_printf(arena, "%20000d", 7);
    assert_int_equal(strlen(big), 20000);
    assert_int_equal(big[19999], '7');

    int *v = arena_alloc_array(arena, 4, sizeof(int));
    for (int i = 0; i < 4; i++)
        v[i] = i + 1;
    int *w = arena_grow(arena, v, 4, 10, sizeof(int));
    assert_ptr_not_equal(v, w);
    for (int i = 0; i < 4; i++)
        assert_int_equal(w[i], i + 1);
    for (int i = 4; i < 10; i++)
        assert_int_equal(w[i], 0);
    int *s = arena_grow(arena, w, 10, 2, sizeof(int)); /* shrinking copies the prefix */
    assert_int_equal(s[0], 1);
    assert_int_equal(s[1], 2);
    int *fresh = arena_grow(arena, NULL, 0, 3, sizeof(int));
    assert_non_null(fresh);
    assert_true(all_zero(fresh, 3 * sizeof(int)));
}

static void test_array_overflow(void **state) {
    (void)state;
    /* count * size wraps around: must fail, not allocate a tiny block. */
    assert_null(arena_alloc_array(arena, SIZE_MAX / 2 + 2, 2));
    assert_null(arena_alloc_array(arena, (size_t)1 << 62, 8));
    assert_null(arena_alloc_big(arena, SIZE_MAX - 16));
    assert_non_null(arena_alloc_array(arena, 0, 8));
}

static void test_fail_after_returns_null(void **state) {
    (void)state;
    arena_fail_after(arena, 3);
    assert_non_null(arena_alloc(arena, 8));
    assert_non_null(arena_alloc_big(arena, 100));
    assert_null(arena_alloc(arena, 8)); /* the 3rd */
    assert_non_null(arena_alloc(arena, 8)); /* one failure only */
    assert_non_null(arena_alloc(arena, 8));

    /* Every kind of allocation counts: strdup, printf, big blocks. */
    arena_fail_after(arena, 1);
    assert_null(arena_strdup(arena, "x"));
    arena_fail_after(arena, 1);
    assert_null(arena_printf(arena, "%d", 5));
    arena_fail_after(arena, 1);
    assert_null(arena_alloc(arena, 1 << 20));
    arena_fail_after(arena, 2);
    assert_non_null(arena_alloc_big(arena, 64));
    assert_null(arena_grow(arena, NULL, 0, 4, 4));

    /* 0 disables a pending failure. */
    arena_fail_after(arena, 1);
    arena_fail_after(arena, 0);
    assert_non_null(arena_alloc(arena, 8));
}

static void test_fail_after_longjmps(void **state) {
    (void)state;
    jmp_buf oom;
    volatile int reached = 0;
    arena_set_oom_handler(arena, &oom);
    if (setjmp(oom) == 0) {
        arena_fail_after(arena, 2);
        arena_alloc(arena, 8);
        reached = 1;
        arena_alloc(arena, 8); /* fails: longjmp */
        reached = 2;
    }
    assert_int_equal(reached, 1);

    /* The arena is still usable afterwards; a NULL handler restores NULL. */
    assert_non_null(arena_alloc(arena, 8));
    arena_set_oom_handler(arena, NULL);
    arena_fail_after(arena, 1);
    assert_null(arena_alloc(arena, 8));

    /* Overflowing array sizes also go to the handler. */
    arena_set_oom_handler(arena, &oom);
    reached = 0;
    if (setjmp(oom) == 0) {
        arena_alloc_array(arena, SIZE_MAX, 4);
        reached = 1;
    }
    assert_int_equal(reached, 0);
    arena_set_oom_handler(arena, NULL);
}

/* Failing each allocation in turn of a sequence: every one of them must be
 * reachable by the hook (SQLite's OOM loop in miniature). */
static void test_fail_each_in_turn(void **state) {
    (void)state;
    for (long k = 1; k <= 6; k++) {
        Arena *a = arena_new();
        arena_fail_after(a, k);
        void *p[6] = {
            arena_alloc(a, 8),
            arena_alloc_big(a, 8),
            arena_strdup(a, "s"),
            arena_alloc(a, 20000),
            arena_printf(a, "%d", 1),
            arena_alloc_array(a, 3, 4),
        };
        for (long i = 0; i < 6; i++) {
            if (i == k - 1)
                assert_null(p[i]);
            else
                assert_non_null(p[i]);
        }
        arena_destroy(a);
    }
}

int main(void) {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_small_alignment),  T(test_big_blocks),
        T(test_strings_and_grow), T(test_array_overflow),
        T(test_fail_after_returns_null), T(test_fail_after_longjmps),
        T(test_fail_each_in_turn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
