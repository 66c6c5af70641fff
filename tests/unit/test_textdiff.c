/* Unit tests for core/textdiff: the counts are those of a minimal edit
 * script, checked against an independent reference (the textbook O(NM)
 * longest-common-subsequence table: removed = n - LCS, added = m - LCS) on
 * random texts over small alphabets, where repeated lines make many
 * optimal alignments; the unified diff, applied to the first text, gives
 * the second; large texts with many edits do not give up; changed spans. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/textdiff.h"

static int lcs(const int *a, int n, const int *b, int m) {
    int *row = calloc((size_t)m + 1, sizeof *row), *prev = calloc((size_t)m + 1, sizeof *prev);
    for (int i = 1; i <= n; i++) {
        for (int j = 1; j <= m; j++)
            row[j] = a[i - 1] == b[j - 1] ? prev[j - 1] + 1
                     : row[j - 1] > prev[j] ? row[j - 1] : prev[j];
        int *t = prev;
        prev = row;
        row = t;
    }
    int r = prev[m];
    free(row);
    free(prev);
    return r;
}

static char *text_of(const int *v, int n) {
    char *t = malloc((size_t)n * 12 + 1), *p = t;
    for (int i = 0; i < n; i++)
        p += sprintf(p, "line %d\n", v[i]);
    *p = 0;
    return t;
}

static uint64_t rng = 88172645463325252ull;
static int next_int(int bound) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (int)(rng % (uint64_t)bound);
}

/* Applies a unified diff to `a` (hunks in order, context and '-' lines
 * checked against a); NULL if it does not apply. */
static char *apply(const char *a, const char *diff) {
    StrBuf out;
    sb_init(&out);
    const char *src = a;
    int line = 1;
    for (const char *p = diff; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = (size_t)(e - p);
        if (!strncmp(p, "---", 3) || !strncmp(p, "+++", 3)) {
        } else if (p[0] == '@') {
            int start = atoi(p + 4);
            int count = atoi(strchr(p + 4, ',') + 1);
            if (count == 0)
                start++; /* an empty range names the line before it */
            while (line < start) {
                const char *s = strchr(src, '\n');
                sb_append_n(&out, src, (size_t)(s - src) + 1);
                src = s + 1;
                line++;
            }
        } else if (p[0] == '+') {
            sb_append_n(&out, p + 1, len - 1);
            sb_putc(&out, '\n');
        } else {
            const char *s = strchr(src, '\n');
            if (!s || (size_t)(s - src) != len - 1 || strncmp(src, p + 1, len - 1)) {
                sb_free(&out);
                return NULL;
            }
            if (p[0] == ' ')
                sb_append_n(&out, src, len);
            src = s + 1;
            line++;
        }
        p = e + 1;
    }
    sb_append(&out, src);
    return sb_take(&out);
}

static void test_random_against_lcs(void **state) {
    (void)state;
    for (int iter = 0; iter < 2000; iter++) {
        int alpha = 1 + next_int(8), n = next_int(40), m = next_int(40);
        int a[40], b[40];
        for (int i = 0; i < n; i++)
            a[i] = next_int(alpha);
        for (int j = 0; j < m; j++)
            b[j] = iter % 2 && j < n && next_int(4) ? a[j] : next_int(alpha);
        char *ta = text_of(a, n), *tb = text_of(b, m);
        int common = lcs(a, n, b, m);
        DiffCounts c = textdiff_count(ta, tb);
        assert_int_equal(c.removed, n - common);
        assert_int_equal(c.added, m - common);
        StrBuf u;
        sb_init(&u);
        textdiff_unified(ta, tb, "a", "b", iter % 4, &u);
        char *back = apply(ta, sb_str(&u));
        assert_non_null(back);
        assert_string_equal(back, tb);
        assert_true((u.len == 0) == !strcmp(ta, tb));
        free(back);
        sb_free(&u);
        free(ta);
        free(tb);
    }
}

/* 20000 lines, every third one changed: far past the 2000 edits where the
 * old diff gave up and called everything removed and re-added. */
static void test_large_never_gives_up(void **state) {
    (void)state;
    enum { N = 20000 };
    int *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    for (int i = 0; i < N; i++) {
        a[i] = i;
        b[i] = i % 3 ? i : N + i;
    }
    char *ta = text_of(a, N), *tb = text_of(b, N);
    DiffCounts c = textdiff_count(ta, tb);
    assert_int_equal(c.removed, (N + 2) / 3);
    assert_int_equal(c.added, (N + 2) / 3);
    free(ta);
    free(tb);
    free(a);
    free(b);
}

static void test_changed_span(void **state) {
    (void)state;
    const char *a = "conv(%x) {group=1} : f32", *b = "conv(%x) {group=1 act=\"relu\"} : f32";
    TextSpan sa, sb;
    textdiff_changed_span(a, strlen(a), b, strlen(b), &sa, &sb);
    assert_int_equal(sa.start, sa.end); /* nothing removed: an insertion */
    assert_string_equal(b + sb.start, " act=\"relu\"} : f32");
    assert_int_equal(sb.end - sb.start, strlen(" act=\"relu\""));
    textdiff_changed_span("%12 = relu(%11)", 15, "%12 = relu(%10)", 15, &sa, &sb);
    assert_int_equal(sa.start, 13);
    assert_int_equal(sa.end, 14);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_against_lcs),
        cmocka_unit_test(test_large_never_gives_up),
        cmocka_unit_test(test_changed_span),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
