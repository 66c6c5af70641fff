/* Import of indexing operators: gathers and scatters by element and by N-d
 * index, one-hot, triangles, top-k and sequence reversal. Operands that
 * decide a shape (OneHot's depth, TopK's k, Trilu's k) must be constants and
 * become attributes. NonZero, Compress and Unique have shapes that depend on
 * values: they import only when those values are known, NonZero and Unique
 * folded to constants, Compress turned into a gather of the kept positions. */
#include <math.h>
#include <string.h>

#include "core/onnx/import.h"

/* ---- gathers and scatters ------------------------------------------------- */

bool import_gather_elements(OnnxNode *on) {
    if (!on_need_inputs(on, 2, 2))
        return false;
    Node *n = on_node(on, NK_GATHER_ELEMENTS, 2, on->in, 1);
    node_set_int(n, AK_axis, on_attr_int(on, "axis", 0));
    return on_done(on, n);
}

bool import_gather_nd(OnnxNode *on) {
    if (!on_need_inputs(on, 2, 2))
        return false;
    Node *n = on_node(on, NK_GATHER_ND, 2, on->in, 1);
    node_set_int(n, AK_batch_dims, on_attr_int(on, "batch_dims", 0));
    return on_done(on, n);
}

/* Scatter (opsets 9-10) is ScatterElements without a reduction. */
bool import_scatter_elements(OnnxNode *on) {
    if (!on_need_inputs(on, 3, 3))
        return false;
    Node *n = on_node(on, NK_SCATTER_ELEMENTS, 3, on->in, 1);
    node_set_int(n, AK_axis, on_attr_int(on, "axis", 0));
    return on_set_enum(on, n, AK_reduction, on_attr_str(on, "reduction", "none")) &&
           on_done(on, n);
}

bool import_scatter_nd(OnnxNode *on) {
    if (!on_need_inputs(on, 3, 3))
        return false;
    Node *n = on_node(on, NK_SCATTER_ND, 3, on->in, 1);
    return on_set_enum(on, n, AK_reduction, on_attr_str(on, "reduction", "none")) &&
           on_done(on, n);
}

/* ---- one-hot, triangles, top-k, reversal ------------------------------------ */

/* A scalar (or one-element) constant input read as an integer; float
 * values truncate, as ONNX casts OneHot's depth. */
static bool const_scalar(OnnxNode *on, int i, const char *what, int64_t *out) {
    Tensor *t = on_const_input(on, i, what);
    if (!t)
        return false;
    if (tensor_numel(t) != 1) {
        on_error(on, "input %d (%s) must hold one value", i, what);
        return false;
    }
    *out = tensor_get_i64(t, 0);
    return true;
}

/* (indices, depth, values): the result shape inserts depth at axis. */
bool import_one_hot(OnnxNode *on) {
    if (!on_need_inputs(on, 3, 3))
        return false;
    int64_t depth, axis = on_attr_int(on, "axis", -1);
    if (!const_scalar(on, 1, "depth", &depth))
        return false;
    const Type *idx = &on->in[0]->type;
    int rank = idx->rank + 1, ax;
    if (depth < 1 || rank > MAX_RANK || axis < -rank || axis >= rank) {
        on_error(on, "depth must be positive and axis in range");
        return false;
    }
    ax = (int)(axis < 0 ? axis + rank : axis);
    Type r = {.elem = on->in[2]->type.elem, .rank = rank};
    for (int i = 0, j = 0; i < rank; i++)
        r.dims[i] = i == ax ? depth : idx->dims[j++];
    Value *ops[2] = {on->in[0], on->in[2]};
    Node *n = on_node(on, NK_ONE_HOT, 2, ops, 1);
    node_set_int(n, AK_axis, axis);
    n->res[0].type = r;
    return on_done(on, n);
}

bool import_trilu(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 2))
        return false;
    int64_t k = 0;
    if (on_in(on, 1) && !const_scalar(on, 1, "k", &k))
        return false;
    Node *n = on_node(on, NK_TRILU, 1, on->in, 1);
    node_set_int(n, AK_upper, on_attr_int(on, "upper", 1));
    node_set_int(n, AK_k, k);
    return on_done(on, n);
}

/* k is an attribute before opset 10 and a constant input from it on. */
bool import_top_k(OnnxNode *on) {
    int64_t k;
    if (on->opset < 10) {
        if (!on_need_inputs(on, 1, 1))
            return false;
        k = on_attr_int(on, "k", -1);
    } else if (!on_need_inputs(on, 2, 2) || !const_scalar(on, 1, "k", &k)) {
        return false;
    }
    Node *n = on_node(on, NK_TOP_K, 1, on->in, 2);
    node_set_int(n, AK_axis, on_attr_int(on, "axis", -1));
    node_set_int(n, AK_largest, on_attr_int(on, "largest", 1));
    node_set_int(n, AK_sorted, on_attr_int(on, "sorted", 1));
    node_set_int(n, AK_k, k);
    return on_done(on, n);
}

bool import_reverse_sequence(OnnxNode *on) {
    if (!on_need_inputs(on, 2, 2))
        return false;
    Node *n = on_node(on, NK_REVERSE_SEQUENCE, 2, on->in, 1);
    node_set_int(n, AK_batch_axis, on_attr_int(on, "batch_axis", 1));
    node_set_int(n, AK_time_axis, on_attr_int(on, "time_axis", 0));
    return on_done(on, n);
}

/* ---- value-dependent shapes ---------------------------------------------------- */

/* Input i's value, or NULL after saying the operator needs it known. */
static Tensor *known_values(OnnxNode *on, int i, const char *what) {
    Tensor *t = on_try_const(on, on_in(on, i));
    if (!t)
        on_unsupported(on, "the result shape depends on the values of %s, which are not known "
                           "at compile time", what);
    return t;
}

/* [rank, count]: the coordinates of the non-zero elements, in row-major
 * order. */
bool import_nonzero(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 1))
        return false;
    Tensor *x = known_values(on, 0, "the input");
    if (!x)
        return false;
    const Type *xt = &x->type;
    int64_t n = tensor_numel(x), count = 0, idx[MAX_RANK] = {0};
    for (int64_t i = 0; i < n; i++)
        count += tensor_get_f64(x, i) != 0;
    int rank = xt->rank ? xt->rank : 1;
    Type t = type_make(ELEM_I64, 2, (int64_t[]){rank, count});
    Tensor *y = on_tensor(on, &t);
    for (int64_t i = 0, j = 0; i < n; i++) {
        if (tensor_get_f64(x, i) != 0) {
            for (int d = 0; d < xt->rank; d++)
                tensor_set_i64(y, d * count + j, idx[d]);
            j++;
        }
        for (int d = xt->rank - 1; d >= 0; d--) {
            if (++idx[d] < xt->dims[d])
                break;
            idx[d] = 0;
        }
    }
    on_bind(on, 0, on_const(on, y));
    return true;
}

/* Positions kept along the axis (the whole flattened input without one);
 * a condition shorter than the axis drops the rest. */
bool import_compress(OnnxNode *on) {
    if (!on_need_inputs(on, 2, 2))
        return false;
    Tensor *cond = known_values(on, 1, "the condition");
    if (!cond)
        return false;
    const Type *x = &on->in[0]->type;
    bool has_axis = on_has_attr(on, "axis");
    int64_t axis = on_attr_int(on, "axis", 0);
    if (has_axis && (axis < -x->rank || axis >= x->rank)) {
        on_error(on, "axis out of range");
        return false;
    }
    int ax = (int)(axis < 0 ? axis + x->rank : axis);
    int64_t len = has_axis ? x->dims[ax] : type_numel(x), ncond = tensor_numel(cond), kept = 0;
    for (int64_t i = 0; i < ncond; i++) {
        if (tensor_get_f64(cond, i) != 0 && i >= len) {
            on_error(on, "condition selects position %lld of an axis of %lld", (long long)i,
                     (long long)len);
            return false;
        }
        kept += tensor_get_f64(cond, i) != 0;
    }
    Type it = type_make(ELEM_I64, 1, (int64_t[]){kept});
    Tensor *idx = on_tensor(on, &it);
    for (int64_t i = 0, j = 0; i < ncond; i++)
        if (tensor_get_f64(cond, i) != 0)
            tensor_set_i64(idx, j++, i);
    Value *data = on->in[0];
    if (!has_axis && x->rank != 1) {
        Node *flat = on_node(on, NK_RESHAPE, 1, &data, 1);
        flat->res[0].type = type_make(x->elem, 1, (int64_t[]){len});
        if (!(data = on_tmp(on, flat)))
            return false;
    }
    Value *ops[2] = {data, on_const(on, idx)};
    Node *g = on_node(on, NK_GATHER, 2, ops, 1);
    node_set_int(g, AK_axis, has_axis ? axis : 0);
    return on_done(on, g);
}

/* ---- Unique ----------------------------------------------------------------- */

/* The input seen as `count` slices of `size` elements along the axis (single
 * elements without one): element e = o * inner + i of slice s sits at
 * (o * count + s) * inner + i. */
typedef struct Slices {
    const Tensor *x;
    int64_t count, size, inner;
} Slices;

static int64_t slice_at(const Slices *s, int64_t slice, int64_t e) {
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
    const Slices *s = ctx;
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

typedef struct Uniques {
    int64_t n;
    int64_t *first;   /* per unique slice: its first occurrence */
    int64_t *counts;  /* per unique slice */
    int64_t *inverse; /* per input slice: its unique slice */
} Uniques;

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
static void find_uniques(const Slices *s, bool sorted, Uniques *u, Arena *a) {
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

static Value *i64_vector(OnnxNode *on, const int64_t *v, int64_t n) {
    Type t = type_make(ELEM_I64, 1, (int64_t[]){n});
    Tensor *x = on_tensor(on, &t);
    for (int64_t i = 0; i < n; i++)
        tensor_set_i64(x, i, v[i]);
    return on_const(on, x);
}

/* The unique slices, gathered from their first occurrences. */
static Tensor *unique_values(OnnxNode *on, const Slices *s, const Uniques *u, int axis) {
    const Type *xt = &s->x->type;
    Type t = axis >= 0 ? *xt : type_make(xt->elem, 1, (int64_t[]){u->n});
    if (axis >= 0)
        t.dims[axis] = u->n;
    Tensor *y = on_tensor(on, &t);
    size_t es = elem_size(xt->elem);
    Slices ys = {y, u->n, s->size, s->inner};
    for (int64_t g = 0; g < u->n; g++)
        for (int64_t e = 0; e < s->size; e++)
            memcpy((char *)y->data + (size_t)slice_at(&ys, g, e) * es,
                   (const char *)s->x->data + (size_t)slice_at(s, u->first[g], e) * es, es);
    return y;
}

bool import_unique(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 1))
        return false;
    Tensor *x = known_values(on, 0, "the input");
    if (!x)
        return false;
    const Type *xt = &x->type;
    int axis = -1;
    Slices s = {x, type_numel(xt), 1, 1};
    if (on_has_attr(on, "axis")) {
        int64_t a = on_attr_int(on, "axis", 0);
        if (a < -xt->rank || a >= xt->rank) {
            on_error(on, "axis out of range");
            return false;
        }
        axis = (int)(a < 0 ? a + xt->rank : a);
        s.count = xt->dims[axis];
        for (int i = axis + 1; i < xt->rank; i++)
            s.inner *= xt->dims[i];
        s.size = s.count ? type_numel(xt) / s.count : 0;
    }
    Uniques u;
    find_uniques(&s, on_attr_int(on, "sorted", 1) != 0, &u, on->f->module->arena);
    on_bind(on, 0, on_const(on, unique_values(on, &s, &u, axis)));
    on_bind(on, 1, i64_vector(on, u.first, u.n));
    on_bind(on, 2, i64_vector(on, u.inverse, s.count));
    on_bind(on, 3, i64_vector(on, u.counts, u.n));
    return true;
}
