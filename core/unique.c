/* Unique (ONNX's, numpy's np.unique with return_index, return_inverse and
 * return_counts): the importer folds it on known values, the interpreter
 * runs it at run time; both call these, over core/unique_sort.h's order
 * and grouping, which libjit's kernel shares. */
#include "core/unique.h"

#include <string.h>

#include "core/str_ops.h"
#include "core/unique_sort.h"

static int64_t slice_at(const UniqueSlices *s, int64_t slice, int64_t e) {
    return unique_at(s->count, s->inner, slice, e);
}

static int value_cmp(const Tensor *x, int64_t a, int64_t b) {
    if (x->type.elem == ELEM_STR)
        return str_cmp(tensor_get_str(x, a), tensor_get_str(x, b));
    if (elem_is_float(x->type.elem))
        return unique_cmp_f64(tensor_get_f64(x, a), tensor_get_f64(x, b));
    return unique_cmp_i64(tensor_get_i64(x, a), tensor_get_i64(x, b),
                          elem_class(x->type.elem) == ECLS_UINT);
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

void unique_find(const UniqueSlices *s, bool sorted, Uniques *u, Arena *a) {
    size_t n = (size_t)s->count + 1;
    int64_t *scratch = arena_alloc_array(a, 5 * n, sizeof(int64_t));
    u->first = arena_alloc_array(a, n, sizeof(int64_t));
    u->counts = arena_alloc_array(a, n, sizeof(int64_t));
    u->inverse = arena_alloc_array(a, n, sizeof(int64_t));
    u->n = unique_group(s->count, sorted, slice_cmp, s, scratch, u->first, u->counts, u->inverse);
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
