/* Unique's order and grouping: slices compared by a callback, sorted
 * stably and grouped, in ascending order or in order of first occurrence.
 * core/unique.c (the importer's folding and the interpreter's kernel, over
 * Tensors) and libjit's kernel (over raw operands) share this one source
 * (static inline), so that both find the same groups in the same order. */
#ifndef GLOWC_CORE_UNIQUE_SORT_H
#define GLOWC_CORE_UNIQUE_SORT_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* <0, 0, >0 as slice a sorts before, with or after slice b. */
typedef int (*UniqueCmp)(const void *ctx, int64_t a, int64_t b);

/* Element e of slice `slice` of `count` slices of `inner`-element rows
 * (e = o * inner + i sits at (o * count + slice) * inner + i). */
static inline int64_t unique_at(int64_t count, int64_t inner, int64_t slice, int64_t e) {
    return (e / inner * count + slice) * inner + e % inner;
}

/* A total order on floats: NaN above every number and equal to itself;
 * -0 equal to 0 (numpy's np.unique). */
static inline int unique_cmp_f64(double a, double b) {
    if (isnan(a) || isnan(b))
        return isnan(a) - isnan(b);
    return a < b ? -1 : a > b ? 1 : 0;
}

/* Integers as their 64 bits, unsigned ones without the sign's bias. */
static inline int unique_cmp_i64(int64_t a, int64_t b, bool is_unsigned) {
    uint64_t bias = is_unsigned ? 0 : 1ull << 63;
    uint64_t ua = (uint64_t)a ^ bias, ub = (uint64_t)b ^ bias;
    return ua < ub ? -1 : ua > ub ? 1 : 0;
}

/* Stable merge sort of v[0..n) (tmp as long), so that equal slices keep
 * their order of occurrence. */
static inline void unique_sort_stable(int64_t *v, int64_t *tmp, int64_t n, UniqueCmp cmp,
                                      const void *ctx) {
    if (n < 2)
        return;
    int64_t h = n / 2, i = 0, j = h, t = 0;
    unique_sort_stable(v, tmp, h, cmp, ctx);
    unique_sort_stable(v + h, tmp, n - h, cmp, ctx);
    while (i < h && j < n)
        tmp[t++] = cmp(ctx, v[j], v[i]) < 0 ? v[j++] : v[i++];
    while (i < h)
        tmp[t++] = v[i++];
    memcpy(v, tmp, (size_t)t * sizeof *v);
}

static inline int unique_by_key(const void *ctx, int64_t a, int64_t b) {
    const int64_t *key = ctx;
    return key[a] < key[b] ? -1 : key[a] > key[b];
}

/* The n groups of `count` slices: per group its first occurrence and
 * count, per slice its group; sorted ascending, else in order of first
 * occurrence. scratch: 5 * count + 5 words. Returns n. */
static inline int64_t unique_group(int64_t count, bool sorted, UniqueCmp cmp, const void *ctx,
                                   int64_t *scratch, int64_t *first, int64_t *counts,
                                   int64_t *inverse) {
    int64_t *order = scratch, *tmp = order + count + 1, n = 0;
    for (int64_t i = 0; i < count; i++)
        order[i] = i;
    unique_sort_stable(order, tmp, count, cmp, ctx);
    /* after a stable sort a group's first member is its first occurrence */
    for (int64_t p = 0; p < count; p++) {
        if (!p || cmp(ctx, order[p - 1], order[p])) {
            first[n] = order[p];
            counts[n++] = 0;
        }
        counts[n - 1]++;
        inverse[order[p]] = n - 1;
    }
    if (sorted)
        return n;
    /* the groups by their first occurrences: rank[g] is group g's place */
    int64_t *by_first = tmp + count + 1, *rank = by_first + count + 1;
    int64_t *moved = rank + count + 1;
    for (int64_t g = 0; g < n; g++)
        by_first[g] = g;
    unique_sort_stable(by_first, tmp, n, unique_by_key, first);
    for (int64_t r = 0; r < n; r++)
        rank[by_first[r]] = r;
    for (int64_t i = 0; i < count; i++)
        inverse[i] = rank[inverse[i]];
    for (int64_t r = 0; r < n; r++)
        moved[r] = first[by_first[r]];
    memcpy(first, moved, (size_t)n * sizeof *first);
    for (int64_t r = 0; r < n; r++)
        moved[r] = counts[by_first[r]];
    memcpy(counts, moved, (size_t)n * sizeof *counts);
    return n;
}

#endif
