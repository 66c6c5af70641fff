/* Unit tests for the backend table (backends/backend.h): the names in
 * messages are the table's, a compiling backend fills every function of the
 * interface (the session calls them without checking), and the others fill
 * none, so that a half-written row is caught here, not by a crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "backends/backend.h"
#include "core/strbuf.h"

static void test_names_match_table(void **state) {
    (void)state;
    StrBuf all, compiling;
    sb_init(&all);
    sb_init(&compiling);
    for (int i = 0; backend_at(i); i++) {
        const Backend *b = backend_at(i);
        sb_printf(&all, "%s%s", i ? ", " : "", b->name);
        if (b->compiles)
            sb_printf(&compiling, "%s%s", compiling.len ? ", " : "", b->name);
        assert_ptr_equal(backend_find(b->name), b);
        assert_non_null(b->summary);
        assert_non_null(b->is_native);
    }
    assert_string_equal(sb_str(&all), backend_names());
    assert_string_equal(sb_str(&compiling), backend_compiling_names());
    assert_non_null(backend_compiling());
    assert_true(backend_compiling()->compiles);
    assert_null(backend_find("no-such-backend"));
    sb_free(&all);
    sb_free(&compiling);
}

/* Every function pointer of the row, by name, for the message. */
#define FNS(X)                                                                                  \
    X(compile) X(optimize) X(print_ir) X(emit) X(nfallback) X(fallback_what) X(instr_function) \
    X(instr_worker) X(miscompile) X(write_executable) X(write_bundle) X(phase_seconds)         \
    X(module_free)                                                                              \
    X(snapshot) X(snapshot_run) X(snapshot_free) X(load) X(run) X(set_probe) X(address)        \
    X(program) X(threads) X(fma_peak) X(exec_free) X(list_targets) X(check_target)

static void test_rows_complete(void **state) {
    (void)state;
    for (int i = 0; backend_at(i); i++) {
        const Backend *b = backend_at(i);
#define CHECK(f)                                                                          \
    if ((b->f != NULL) != b->compiles)                                                   \
        fail_msg("backend %s: %s is %s", b->name, #f, b->compiles ? "missing" : "set but " \
                                                                    "it does not compile");
        FNS(CHECK)
#undef CHECK
        /* The table's struct has no member the list above forgets: its size is
         * the known fields plus one pointer per function. */
        size_t fns = 0;
#define COUNT(f) fns++;
        FNS(COUNT)
#undef COUNT
        assert_int_equal(sizeof(Backend), offsetof(Backend, compile) + fns * sizeof(void (*)(void)));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_match_table),
        cmocka_unit_test(test_rows_complete),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
