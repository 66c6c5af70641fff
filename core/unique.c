/* Unique (ONNX's, numpy's np.unique with return_index, return_inverse and
 * return_counts): the importer folds it on known values, the interpreter
 * runs it at run time; both call these. */
#include "core/unique.h"

#include <math.h>
#include <string.h>

static int64_t slice_at(const UniqueSlices *s, int64_t slice, int64_t e) {
    return (e / s->inner * s->count + slice) * s->inner + e % s->inner;
}

/* A total order: NaN above every number and equal to itself. */
static int value_cmp(const Tensor *x, int64_t a, int64_t b) {
    if (elem_is_float(x->type.elem)) {
        double va = tensor_get_f64(x, a), vb = tensor_get_f64(x, b);
        if (isnan(va) || isnan(vb))
            return isnan(va) - isnan(vb);
        return va < vb ? -1 : va > vb ? 1 : 0;
    }
    uint64_t bias = elem_class(x->type.elem) == ECLS_UINT ? 0 : 1ull << 63;
    uint64_t va = (uint64_t)tensor_get_i64(x, a) ^ bias, vb = (uint64_t)tensor_get_i64(x, b) ^ bias;
    return va < vb ? -1 : va > vb ? 1 : 0;
}

/* Lexicographic, as numpy compares the rows it sorts. */
static int slice_cmp(const void *ctx, int64_t a, int64_t b) {
    const UniqueSlices *s = ctx;
    for (int64_t e = 0; e < s->size; e++) {
        int c = value_cmp(s->x, slice_at(s, a, e), slice_at(s, b, e));
        if (c)
            return c;
    }
    return 0;
}

/* By a key per element: the first occurrences of unique slices. */
static int key_cmp(const void *ctx, int64_t a, int64_t b) {
    const int64_t *key = ctx;
    return key[a] < key[b] ? -1 : key[a] > key[b];
}

/* Stable merge sort of v[0..n) (tmp as long), so equal slices keep their
 * order of occurrence. */
static void sort_stable(int64_t *v, int64_t *tmp, int64_t n,
                        int (*cmp)(const void *, int64_t, int64_t), const void *ctx) {
    if (n < 2)
        return;
    int64_t h = n / 2, i = 0, j = h, t = 0;
    sort_stable(v, tmp, h, cmp, ctx);
    sort_stable(v + h, tmp, n - h, cmp, ctx);
    while (i < h && j < n)
        tmp[t++] = cmp(ctx, v[j], v[i]) < 0 ? v[j++] : v[i++];
    while (i < h)
        tmp[t++] = v[i++];
    memcpy(v, tmp, (size_t)t * sizeof *v);
}

/* Puts the unique slices in order of first occurrence. */
static void order_by_first(Uniques *u, int64_t count, Arena *a) {
    int64_t *by_first = arena_alloc_array(a, (size_t)u->n + 1, sizeof(int64_t));
    int64_t *tmp = arena_alloc_array(a, (size_t)u->n + 1, sizeof(int64_t));
    int64_t *rank = arena_alloc_array(a, (size_t)u->n + 1, sizeof(int64_t));
    int64_t *first = arena_alloc_array(a, (size_t)u->n + 1, sizeof(int64_t));
    int64_t *counts = arena_alloc_array(a, (size_t)u->n + 1, sizeof(int64_t));
    for (int64_t g = 0; g < u->n; g++)
        by_first[g] = g;
    sort_stable(by_first, tmp, u->n, key_cmp, u->first);
    for (int64_t r = 0; r < u->n; r++) {
        rank[by_first[r]] = r;
        first[r] = u->first[by_first[r]];
        counts[r] = u->counts[by_first[r]];
    }
    for (int64_t i = 0; i < count; i++)
        u->inverse[i] = rank[u->inverse[i]];
    u->first = first;
    u->counts = counts;
}

/* Groups equal slices after a stable sort, so a group's first member is
 * its first occurrence. */
void unique_find(const UniqueSlices *s, bool sorted, Uniques *u, Arena *a) {
    size_t n = (size_t)s->count + 1;
    int64_t *order = arena_alloc_array(a, n, sizeof(int64_t));
    int64_t *tmp = arena_alloc_array(a, n, sizeof(int64_t));
    u->first = arena_alloc_array(a, n, sizeof(int64_t));
    u->counts = arena_alloc_array(a, n, sizeof(int64_t));
    u->inverse = arena_alloc_array(a, n, sizeof(int64_t));
    u->n = 0;
    for (int64_t i = 0; i < s->count; i++)
        order[i] = i;
    sort_stable(order, tmp, s->count, slice_cmp, s);
    for (int64_t p = 0; p < s->count; p++) {
        if (!p || slice_cmp(s, order[p - 1], order[p])) {
            u->first[u->n] = order[p];
            u->counts[u->n++] = 0;
        }
        u->counts[u->n - 1]++;
        u->inverse[order[p]] = u->n - 1;
    }
    if (!sorted)
        order_by_first(u, s->count, a);
}

void unique_slices(const Tensor *x, int axis, UniqueSlices *s) {
    const Type *xt = &x->type;
    *s = (UniqueSlices){x, type_numel(xt), 1, 1};
    if (axis < 0)
        return;
    s->count = xt->dims[axis];
    for (int i = axis + 1; i < xt->rank; i++)
        s->inner *= xt->dims[i];
    s->size = s->count ? type_numel(xt) / s->count : 0;
}

Type unique_type(const Tensor *x, int axis, int64_t n) {
    const Type *xt = &x->type;
    Type t = axis >= 0 ? *xt : type_make(xt->elem, 1, &n);
    if (axis >= 0)
        t.dims[axis] = n;
    t.dyn = 0;
    return t;
}

void unique_gather(const UniqueSlices *s, const Uniques *u, Tensor *y) {
    size_t es = elem_size(s->x->type.elem);
    UniqueSlices ys = {y, u->n, s->size, s->inner};
    for (int64_t g = 0; g < u->n; g++)
        for (int64_t e = 0; e < s->size; e++)
            memcpy((char *)y->data + (size_t)slice_at(&ys, g, e) * es,
                   (const char *)s->x->data + (size_t)slice_at(s, u->first[g], e) * es, es);
}
