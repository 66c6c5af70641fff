/* Import of indexing operators: gathers and scatters by element and by N-d
 * index, one-hot, triangles, top-k and sequence reversal. Operands that
 * decide a shape (OneHot's depth, Trilu's k) must be constants and become
 * attributes. NonZero, Compress, Unique, NonMaxSuppression and TopK's k
 * decide their shapes by values: on known values the first three fold
 * (Compress to a gather of the kept positions); otherwise they become nodes
 * whose results have bounded-dynamic dimensions. */
#include <math.h>
#include <string.h>

#include "core/onnx/import.h"
#include "core/unique.h"

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
    int64_t k = -1;
    bool run_time_k = false;
    if (on->opset < 10) {
        if (!on_need_inputs(on, 1, 1))
            return false;
        k = on_attr_int(on, "k", -1);
    } else if (!on_need_inputs(on, 2, 2)) {
        return false;
    } else if (!on_try_const(on, on_in(on, 1))) {
        run_time_k = true; /* the result's length is bounded-dynamic */
    } else if (!const_scalar(on, 1, "k", &k)) {
        return false;
    }
    Node *n = on_node(on, NK_TOP_K, run_time_k ? 2 : 1, on->in, 2);
    node_set_int(n, AK_axis, on_attr_int(on, "axis", -1));
    node_set_int(n, AK_largest, on_attr_int(on, "largest", 1));
    node_set_int(n, AK_sorted, on_attr_int(on, "sorted", 1));
    if (!run_time_k)
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

/* The input seen as one dimension (its rank-1 self, or a reshape). */
static Value *flattened(OnnxNode *on, Value *v) {
    if (v->type.rank == 1)
        return v;
    Node *flat = on_node(on, NK_RESHAPE, 1, &v, 1);
    flat->res[0].type = type_make(v->type.elem, 1, (int64_t[]){type_numel(&v->type)});
    return on_tmp(on, flat);
}

/* [rank, count]: the coordinates of the non-zero elements, in row-major
 * order. Folded when the input is known; a nonzero node, whose count is
 * bounded-dynamic, otherwise. */
bool import_nonzero(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 1))
        return false;
    Tensor *x = on_try_const(on, on_in(on, 0));
    if (!x)
        return on_done(on, on_node(on, NK_NONZERO, 1, on->in, 1));
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
    const Type *x = &on->in[0]->type;
    bool has_axis = on_has_attr(on, "axis");
    int64_t axis = on_attr_int(on, "axis", 0);
    if (has_axis && (axis < -x->rank || axis >= x->rank)) {
        on_error(on, "axis out of range");
        return false;
    }
    Tensor *cond = on_try_const(on, on_in(on, 1));
    if (!cond) {
        /* A run-time condition: a compress node, its axis bounded-dynamic. */
        Value *ops[2] = {has_axis ? on->in[0] : flattened(on, on->in[0]), on->in[1]};
        if (!ops[0])
            return false;
        Node *n = on_node(on, NK_COMPRESS, 2, ops, 1);
        node_set_int(n, AK_axis, has_axis ? axis : 0);
        return on_done(on, n);
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

static Value *i64_vector(OnnxNode *on, const int64_t *v, int64_t n) {
    Type t = type_make(ELEM_I64, 1, (int64_t[]){n});
    Tensor *x = on_tensor(on, &t);
    for (int64_t i = 0; i < n; i++)
        tensor_set_i64(x, i, v[i]);
    return on_const(on, x);
}

/* A unique node on run-time values (flattened first without an axis). */
static bool unique_node(OnnxNode *on, int axis, bool sorted) {
    Value *x = axis < 0 ? flattened(on, on->in[0]) : on->in[0];
    if (!x)
        return false;
    Node *n = on_node(on, NK_UNIQUE, 1, &x, 4);
    node_set_int(n, AK_axis, axis < 0 ? 0 : axis);
    node_set_int(n, AK_sorted, sorted);
    return on_done(on, n);
}

bool import_unique(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 1))
        return false;
    const Type *it = &on->in[0]->type;
    int axis = -1;
    if (on_has_attr(on, "axis")) {
        int64_t a = on_attr_int(on, "axis", 0);
        if (a < -it->rank || a >= it->rank) {
            on_error(on, "axis out of range");
            return false;
        }
        axis = (int)(a < 0 ? a + it->rank : a);
    }
    bool sorted = on_attr_int(on, "sorted", 1) != 0;
    Tensor *x = on_try_const(on, on_in(on, 0));
    if (!x)
        return unique_node(on, axis, sorted);
    UniqueSlices s;
    unique_slices(x, axis, &s);
    Uniques u;
    unique_find(&s, sorted, &u, on->f->module->arena);
    Type yt = unique_type(x, axis, u.n);
    Tensor *y = on_tensor(on, &yt);
    unique_gather(&s, &u, y);
    on_bind(on, 0, on_const(on, y));
    on_bind(on, 1, i64_vector(on, u.first, u.n));
    on_bind(on, 2, i64_vector(on, u.inverse, s.count));
    on_bind(on, 3, i64_vector(on, u.counts, u.n));
    return true;
}

/* ---- NonMaxSuppression ---------------------------------------------------- */

/* A run-time node whatever its inputs: its operands are ONNX's five, the
 * absent ones given their defaults (no boxes kept, IoU threshold 0, no score
 * threshold: -inf, which every number exceeds). */
bool import_nms(OnnxNode *on) {
    if (!on_need_inputs(on, 2, 5))
        return false;
    Value *ops[5] = {on->in[0], on->in[1], on_in(on, 2), on_in(on, 3), on_in(on, 4)};
    Type ti = type_scalar(ELEM_I64), tf = type_scalar(ELEM_F32);
    static const float dflt[3] = {0, 0, -INFINITY};
    for (int i = 2; i < 5; i++) {
        if (ops[i])
            continue;
        Tensor *t = on_tensor(on, i == 2 ? &ti : &tf);
        if (!t)
            return false;
        tensor_set_f64(t, 0, dflt[i - 2]);
        ops[i] = on_const(on, t);
    }
    Node *n = on_node(on, NK_NMS, 5, ops, 1);
    node_set_int(n, AK_center_point_box, on_attr_int(on, "center_point_box", 0));
    return on_done(on, n);
}
