/* Import of constants, shape queries and data movement. Shape operands
 * (Reshape's shape, Slice's starts...) are read as constants here and become
 * the result type or attributes of the graph node. */
#include <math.h>
#include <string.h>

#include "core/onnx/import.h"
#include "core/slice.h"

/* ---- constants and shape queries ------------------------------------------ */

bool import_constant(OnnxNode *on) {
    Tensor *t = NULL;
    if (on_has_attr(on, "value")) {
        t = on_attr_tensor(on, "value");
        if (!t)
            return false;
    } else if (on_has_attr(on, "value_float")) {
        Type ty = type_scalar(ELEM_F32);
        if (!(t = on_tensor(on, &ty)))
            return false;
        tensor_set_f64(t, 0, on_attr_float(on, "value_float", 0));
    } else if (on_has_attr(on, "value_int")) {
        Type ty = type_scalar(ELEM_I64);
        if (!(t = on_tensor(on, &ty)))
            return false;
        tensor_set_i64(t, 0, on_attr_int(on, "value_int", 0));
    } else if (on_has_attr(on, "value_floats") || on_has_attr(on, "value_ints")) {
        bool floats = on_has_attr(on, "value_floats");
        float fv[4096];
        int64_t iv[4096];
        int n = floats ? on_attr_floats(on, "value_floats", fv, 4096)
                       : on_attr_ints(on, "value_ints", iv, 4096);
        Type ty = type_make(floats ? ELEM_F32 : ELEM_I64, 1, (int64_t[]){n});
        if (!(t = on_tensor(on, &ty)))
            return false;
        for (int i = 0; i < n; i++) {
            if (floats)
                tensor_set_f64(t, i, fv[i]);
            else
                tensor_set_i64(t, i, iv[i]);
        }
    } else {
        on_error(on, "only tensor, float and int constants are supported");
        return false;
    }
    Value *v = on_const(on, t);
    if (on->nout > 0)
        v->def->name = arena_strdup(on->f->module->arena, on->proto->output[0]);
    on_bind(on, 0, v);
    return true;
}

/* Input `i` of `on`, a run-time shape (its value unknown at compile time):
 * the bounds of its elements (bit k of *dyn set where element k is known
 * only at run time), or an error naming the node when none is derivable. */
static bool run_time_shape(OnnxNode *on, int i, const char *what, int64_t *dims, uint8_t *dyn,
                           int *n) {
    Value *v = on_in(on, i);
    if (!on_value_bounds(on, v, dims, dyn, MAX_RANK, n)) {
        on_error(on, "input %d (%s) is known only at run time and has no bound: it must come "
                 "from the sizes of values (Shape of a bounded-dynamic value, and arithmetic "
                 "on it)", i, what);
        return false;
    }
    if (v->type.elem != ELEM_I64 || v->type.rank != 1) {
        on_error(on, "input %d (%s) must be a list of i64", i, what);
        return false;
    }
    for (int k = 0; k < *n; k++) {
        if (dims[k] < 0 && (*dyn >> k & 1)) { /* exact ones are the caller's (Reshape's -1) */
            on_error(on, "input %d (%s): element %d has no non-negative bound", i, what, k);
            return false;
        }
    }
    return true;
}

/* Expand of x to a run-time shape: the result is typed at the bounds
 * (bounded-dynamic where the shape is known only at run time) and the
 * kernel takes the size from operand 1, refusing one beyond the bound. */
static bool expand_run_time(OnnxNode *on, Value *x, const int64_t *dims, uint8_t dyn, int n) {
    for (int k = 0; k < n; k++) {
        if (dims[k] < 0) {
            on_error(on, "negative dimension %lld in shape", (long long)dims[k]);
            return false;
        }
    }
    Type want = type_make(x->type.elem, n, dims), t;
    if (!type_broadcast(&x->type, &want, &t)) {
        on_error(on, "input does not broadcast to the bounds of the shape");
        return false;
    }
    int off = t.rank - n; /* the shape is aligned to the right */
    t.dyn |= (uint8_t)(dyn << off);
    int64_t numel;
    if (!type_numel_checked(&t, &numel)) {
        on_error(on, "the shape's bounds have more elements than 64 bits count");
        return false;
    }
    Value *ops[2] = {x, on_in(on, on->nin - 1)};
    Node *e = on_node(on, NK_EXPAND, 2, ops, 1);
    e->res[0].type = t;
    return on_done(on, e);
}

bool import_constant_of_shape(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 1))
        return false;
    int64_t dims[MAX_RANK];
    int n;
    Tensor *value = on_has_attr(on, "value") ? on_attr_tensor(on, "value") : NULL;
    if (on_has_attr(on, "value") && (!value || tensor_numel(value) != 1)) {
        on_error(on, "value must be a one-element tensor");
        return false;
    }
    uint8_t dyn = 0;
    if (!on_try_const(on, on_in(on, 0))) { /* a scalar expanded to the run-time shape */
        if (!run_time_shape(on, 0, "shape", dims, &dyn, &n))
            return false;
        Type st = type_scalar(value ? value->type.elem : ELEM_F32);
        Tensor *s = on_tensor(on, &st);
        if (!s)
            return false;
        if (value)
            memcpy(s->data, value->data, elem_size(st.elem));
        return expand_run_time(on, on_const(on, s), dims, dyn, n);
    }
    if (!on_const_ints(on, 0, "shape", dims, MAX_RANK, &n))
        return false;
    Type t = type_make(value ? value->type.elem : ELEM_F32, n, dims);
    int64_t numel;
    if (!type_numel_checked(&t, &numel)) {
        on_error(on, "shape is too large");
        return false;
    }
    Tensor *x = on_tensor(on, &t);
    if (!x)
        return false;
    size_t es = elem_size(t.elem);
    for (int64_t i = 0; value && i < numel; i++)
        memcpy((char *)x->data + (size_t)i * es, value->data, es);
    on_bind(on, 0, on_const(on, x));
    return true;
}

/* Ones on the k-th diagonal of a matrix shaped like the input: the input's
 * values play no part, so the result is a constant. */
bool import_eye_like(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 1))
        return false;
    const Type *x = &on->in[0]->type;
    ElemKind k = x->elem;
    if (on_has_attr(on, "dtype") && !elem_from_onnx((int)on_attr_int(on, "dtype", 0), &k)) {
        on_unsupported(on, "dtype %s is not supported",
                       onnx_type_name((int)on_attr_int(on, "dtype", 0)));
        return false;
    }
    if (x->rank != 2) {
        on_error(on, "input must be a matrix, got rank %d", x->rank);
        return false;
    }
    Type t = type_make(k, 2, x->dims);
    Tensor *y = on_tensor(on, &t);
    int64_t diag = on_attr_int(on, "k", 0);
    for (int64_t i = 0; i < x->dims[0]; i++)
        if (i + diag >= 0 && i + diag < x->dims[1])
            tensor_set_f64(y, i * x->dims[1] + i + diag, 1);
    on_bind(on, 0, on_const(on, y));
    return true;
}

/* Shapes are static, so Shape is a constant (opset 15 adds start/end). */
/* The shape of a value with bounded-dynamic dimensions is a run-time
 * value: a shape node, its dimensions start..end gathered when not all. */
static bool dynamic_shape(OnnxNode *on, int64_t start, int64_t end) {
    Node *n = on_node(on, NK_SHAPE, 1, on->in, 1);
    Value *s = on_tmp(on, n);
    if (!s)
        return false;
    if (start == 0 && end == on->in[0]->type.rank) {
        on_bind(on, 0, s);
        return true;
    }
    Type it = type_make(ELEM_I64, 1, (int64_t[]){end - start});
    Tensor *idx = on_tensor(on, &it);
    if (!idx)
        return false;
    for (int64_t i = start; i < end; i++)
        tensor_set_i64(idx, i - start, i);
    Value *ops[2] = {s, on_const(on, idx)};
    Node *g = on_node(on, NK_GATHER, 2, ops, 1);
    node_set_int(g, AK_axis, 0);
    return on_done(on, g);
}

bool import_shape(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 1))
        return false;
    const Type *x = &on->in[0]->type;
    int64_t start = on_attr_int(on, "start", 0), end = on_attr_int(on, "end", x->rank);
    if (start < 0)
        start += x->rank;
    if (end < 0)
        end += x->rank;
    start = start < 0 ? 0 : start > x->rank ? x->rank : start;
    end = end < start ? start : end > x->rank ? x->rank : end;
    if (type_is_dynamic(x))
        return dynamic_shape(on, start, end);
    Type t = type_make(ELEM_I64, 1, (int64_t[]){end - start});
    Tensor *s = on_tensor(on, &t);
    if (!s)
        return false;
    for (int64_t i = start; i < end; i++)
        tensor_set_i64(s, i - start, x->dims[i]);
    on_bind(on, 0, on_const(on, s));
    return true;
}

bool import_size(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 1))
        return false;
    if (type_is_dynamic(&on->in[0]->type)) { /* the product of the run-time shape */
        Value *shape = on_tmp(on, on_node(on, NK_SHAPE, 1, on->in, 1));
        if (!shape)
            return false;
        Node *p = on_node(on, NK_REDUCE_PROD, 1, &shape, 1);
        node_set_int(p, AK_keepdims, 0);
        return on_done(on, p);
    }
    Type t = type_scalar(ELEM_I64);
    Tensor *s = on_tensor(on, &t);
    if (!s)
        return false;
    tensor_set_i64(s, 0, type_numel(&on->in[0]->type));
    on_bind(on, 0, on_const(on, s));
    return true;
}

/* Range of constants folds to a constant; otherwise its length depends on
 * values unknown at compile time, which static shapes cannot express. */
bool import_range(OnnxNode *on) {
    if (!on_need_inputs(on, 3, 3))
        return false;
    Tensor *s = on_try_const(on, on->in[0]), *l = on_try_const(on, on->in[1]),
           *d = on_try_const(on, on->in[2]);
    if (!s || !l || !d) {
        on_unsupported(on, "start, limit and delta must be known at compile time: "
                           "they decide the result's length");
        return false;
    }
    if (tensor_numel(s) != 1 || tensor_numel(l) != 1 || tensor_numel(d) != 1) {
        on_error(on, "start, limit and delta must be scalars");
        return false;
    }
    ElemKind k = s->type.elem;
    bool flt = elem_is_float(k);
    double start = tensor_get_f64(s, 0), limit = tensor_get_f64(l, 0), delta = tensor_get_f64(d, 0);
    if (delta == 0) {
        on_error(on, "delta is zero");
        return false;
    }
    double count = ceil((limit - start) / delta);
    if (count < 0)
        count = 0;
    if (!(count <= 1e9)) { /* also NaN, from infinite or NaN operands */
        on_error(on, "range too long");
        return false;
    }
    Type t = type_make(k, 1, (int64_t[]){(int64_t)count});
    Tensor *x = on_tensor(on, &t);
    if (!x)
        return false;
    /* Integer ranges wrap like the element kind would, never overflow. */
    uint64_t istart = (uint64_t)tensor_get_i64(s, 0), idelta = (uint64_t)tensor_get_i64(d, 0);
    for (int64_t i = 0; i < (int64_t)count; i++) {
        if (flt)
            tensor_set_f64(x, i, start + (double)i * delta);
        else
            tensor_set_i64(x, i, (int64_t)(istart + (uint64_t)i * idelta));
    }
    on_bind(on, 0, on_const(on, x));
    return true;
}

/* ---- reshapes ------------------------------------------------------------- */

static bool reshape_to(OnnxNode *on, const Type *t) {
    Node *n = on_node(on, NK_RESHAPE, 1, on->in, 1);
    n->res[0].type = *t;
    return on_done(on, n);
}

/* 0 copies the input's dimension (unless allowzero), -1 takes what is left. */
/* Reshape's shape known only at run time: its bounds, where one element
 * at most is a run-time size (*run_time, its index; torchvision's
 * box.reshape(N, -1, 4)). That dimension is bounded-dynamic and holds what
 * the others leave of the input's run-time size, as a -1 beside a dynamic
 * input does; a -1 beside it is resolved at the bounds. */
static bool run_time_shape_dims(OnnxNode *on, int64_t *shape, uint8_t *dyn, int *n,
                                int *run_time) {
    if (!run_time_shape(on, 1, "shape", shape, dyn, n))
        return false;
    if (*dyn & (*dyn - 1)) {
        on_error(on, "input 1 (shape) has %d elements known only at run time; one at most can be",
                 __builtin_popcount(*dyn));
        return false;
    }
    *run_time = *dyn ? __builtin_ctz(*dyn) : -1;
    return true;
}

bool import_reshape(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 2))
        return false;
    int64_t shape[MAX_RANK];
    int n, run_time = -1;
    if (on->opset < 5) {
        n = on_attr_ints(on, "shape", shape, MAX_RANK);
        if (n < 0) {
            on_error(on, "missing attribute 'shape'");
            return false;
        }
    } else if (!on_try_const(on, on_in(on, 1))) {
        uint8_t dyn;
        if (!run_time_shape_dims(on, shape, &dyn, &n, &run_time))
            return false;
    } else if (!on_const_ints(on, 1, "shape", shape, MAX_RANK, &n)) {
        return false;
    }
    const Type *x = &on->in[0]->type;
    bool allowzero = on_attr_int(on, "allowzero", 0) != 0;
    Type t = {.elem = x->elem, .rank = n};
    int infer = -1;
    int64_t known = 1;
    bool overflow = false;
    for (int i = 0; i < n; i++) {
        int64_t d = shape[i];
        if (d == 0 && !allowzero) {
            if (i >= x->rank) {
                on_error(on, "shape copies dimension %d, which the input does not have", i);
                return false;
            }
            d = x->dims[i];
        }
        if (d == -1) {
            if (infer >= 0) {
                on_error(on, "shape has more than one -1");
                return false;
            }
            infer = i;
            continue;
        }
        if (d < 0) {
            on_error(on, "negative dimension %lld in shape", (long long)d);
            return false;
        }
        t.dims[i] = d;
        overflow |= __builtin_mul_overflow(known, d, &known);
    }
    if (overflow) {
        on_error(on, "shape has more elements than 64 bits count");
        return false;
    }
    int64_t numel = type_numel(x);
    if (infer >= 0) {
        if (known == 0 || numel % known) {
            char b[TYPE_STR_MAX];
            on_error(on, "cannot infer the -1 dimension when reshaping %s", type_str(x, b));
            return false;
        }
        t.dims[infer] = numel / known;
        if (type_is_dynamic(x) && run_time < 0) /* the -1 takes what the run-time size leaves */
            t.dyn = (uint8_t)(1u << infer);
    }
    if (run_time >= 0)
        t.dyn = (uint8_t)(1u << run_time);
    return reshape_to(on, &t);
}

bool import_flatten(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 1))
        return false;
    Node *n = on_node(on, NK_FLATTEN, 1, on->in, 1);
    node_set_int(n, AK_axis, on_attr_int(on, "axis", 1));
    return on_done(on, n);
}

/* Axes from the attribute (before opset 13) or the constant input. */
static bool read_axes(OnnxNode *on, int64_t *axes, int *n) {
    if (on->opset < 13) {
        *n = on_attr_ints(on, "axes", axes, MAX_RANK);
        return true;
    }
    *n = -1;
    return !on_in(on, 1) || on_const_ints(on, 1, "axes", axes, MAX_RANK, n);
}

bool import_squeeze(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 2))
        return false;
    int64_t axes[MAX_RANK];
    int n;
    if (!read_axes(on, axes, &n))
        return false;
    Node *sq = on_node(on, NK_SQUEEZE, 1, on->in, 1);
    if (n >= 0)
        node_set_ints(sq, AK_axes, n, axes);
    return on_done(on, sq);
}

bool import_unsqueeze(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 2))
        return false;
    int64_t axes[MAX_RANK];
    int n;
    if (!read_axes(on, axes, &n))
        return false;
    if (n < 0) {
        on_error(on, "missing axes");
        return false;
    }
    Node *u = on_node(on, NK_UNSQUEEZE, 1, on->in, 1);
    node_set_ints(u, AK_axes, n, axes);
    return on_done(on, u);
}

bool import_transpose(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 1))
        return false;
    int rank = on->in[0]->type.rank;
    int64_t perm[MAX_RANK];
    int n = on_attr_ints(on, "perm", perm, MAX_RANK);
    if (n < 0) {
        for (int i = 0; i < rank; i++)
            perm[i] = rank - 1 - i;
        n = rank;
    }
    Node *t = on_node(on, NK_TRANSPOSE, 1, on->in, 1);
    node_set_ints(t, AK_perm, n, perm);
    return on_done(on, t);
}

/* ---- joining and splitting ------------------------------------------------ */

bool import_concat(OnnxNode *on) {
    for (int i = 0; i < on->nin; i++) {
        if (!on->in[i]) {
            on_error(on, "empty input name");
            return false;
        }
    }
    if (on->nin < 1) {
        on_error(on, "needs at least one input");
        return false;
    }
    Node *n = on_node(on, NK_CONCAT, on->nin, on->in, 1);
    node_set_int(n, AK_axis, on_attr_int(on, "axis", 1));
    return on_done(on, n);
}

bool import_split(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 2))
        return false;
    const Type *x = &on->in[0]->type;
    int64_t axis = on_attr_int(on, "axis", 0), split[256];
    int n = -1;
    if (on->opset < 13)
        n = on_attr_ints(on, "split", split, 256);
    else if (on_in(on, 1) && !on_const_ints(on, 1, "split", split, 256, &n))
        return false;
    int nres = on->nout;
    if (nres < 1 || nres > 256) {
        on_error(on, "has %d outputs; glowc splits into 1 to 256", nres);
        return false;
    }
    if (n >= 0 && n != nres) {
        on_error(on, "split has %d sizes for %d outputs", n, nres);
        return false;
    }
    int ax;
    if (!(axis >= -x->rank && axis < x->rank)) {
        on_error(on, "axis out of range");
        return false;
    }
    ax = (int)(axis < 0 ? axis + x->rank : axis);
    if (n < 0) {
        /* Equal parts; opset 18 lets the last be smaller. */
        int64_t len = x->dims[ax], part = len / nres + (len % nres != 0);
        if (on->opset < 18 && len % nres) {
            on_error(on, "axis of size %lld does not split into %d equal parts", (long long)len,
                     nres);
            return false;
        }
        for (int i = 0; i < nres; i++) {
            int64_t left = len - part * i;
            split[i] = left < part ? (left > 0 ? left : 0) : part;
        }
    }
    Node *s = on_node(on, NK_SPLIT, 1, on->in, nres);
    node_set_int(s, AK_axis, axis);
    node_set_ints(s, AK_split, nres, split);
    return on_done(on, s);
}

/* Per-axis start/end/step for every axis, clamped the ONNX way. An end of
 * "before index 0" (negative step) is stored as -(dim+1), which reads back
 * as itself under the clamping rules. */
/* Slice's ends known only at run time (torchvision's scores[:, :n] with n
 * a count of boxes): the slice is typed at their upper bounds, each of
 * them a bounded-dynamic dimension, and the kernel reads the ends (operand
 * 1) and takes the run-time size. Ends that may be negative (counted from
 * the end) have no such bound. */
static bool run_time_ends(OnnxNode *on, int64_t *ends, int *n, bool *run_time) {
    int64_t lo[MAX_RANK];
    if (!on_value_range(on, on_in(on, 2), lo, ends, MAX_RANK, n)) {
        on_error(on, "input 2 (ends) is known only at run time and has no bound: it must come "
                 "from the sizes of values (Shape of a bounded-dynamic value, and arithmetic "
                 "on it)");
        return false;
    }
    for (int i = 0; i < *n; i++) {
        if (lo[i] < 0) {
            on_error(on, "input 2 (ends): element %d is known only at run time and may be "
                     "negative", i);
            return false;
        }
    }
    *run_time = true;
    return true;
}

bool import_slice(OnnxNode *on) {
    if (!on_need_inputs(on, 1, on->opset < 10 ? 1 : 5))
        return false;
    const Type *x = &on->in[0]->type;
    int64_t starts[MAX_RANK], ends[MAX_RANK], axes[MAX_RANK], steps[MAX_RANK];
    int ns, ne, na = -1, nt = -1;
    bool run_time = false;
    if (on->opset < 10) {
        if (!on_need_inputs(on, 1, 1))
            return false;
        ns = on_attr_ints(on, "starts", starts, MAX_RANK);
        ne = on_attr_ints(on, "ends", ends, MAX_RANK);
        na = on_attr_ints(on, "axes", axes, MAX_RANK);
    } else {
        if (!on_need_inputs(on, 3, 5) || !on_const_ints(on, 1, "starts", starts, MAX_RANK, &ns) ||
            !(on_try_const(on, on_in(on, 2)) ? on_const_ints(on, 2, "ends", ends, MAX_RANK, &ne)
                                             : run_time_ends(on, ends, &ne, &run_time)) ||
            (on_in(on, 3) && !on_const_ints(on, 3, "axes", axes, MAX_RANK, &na)) ||
            (on_in(on, 4) && !on_const_ints(on, 4, "steps", steps, MAX_RANK, &nt)))
            return false;
    }
    if (ns != ne || (na >= 0 && na != ns) || (nt >= 0 && nt != ns)) {
        on_error(on, "starts, ends, axes and steps must have the same length");
        return false;
    }
    int64_t s[MAX_RANK], e[MAX_RANK], t[MAX_RANK];
    for (int i = 0; i < x->rank; i++) {
        s[i] = 0;
        e[i] = x->dims[i];
        t[i] = 1;
    }
    uint32_t seen = 0;
    for (int i = 0; i < ns; i++) {
        int64_t ax = na >= 0 ? axes[i] : i;
        if (ax < 0)
            ax += x->rank;
        if (ax < 0 || ax >= x->rank || (seen & (1u << ax))) {
            on_error(on, "bad or repeated axis %lld", (long long)(na >= 0 ? axes[i] : i));
            return false;
        }
        seen |= 1u << ax;
        int64_t st = nt >= 0 ? steps[i] : 1, dim = x->dims[ax];
        if (st == 0) {
            on_error(on, "step is zero");
            return false;
        }
        int64_t b, step, count;
        slice_axis(dim, true, starts[i], true, ends[i], st, &b, &step, &count);
        /* the node keeps a clamped end one step past the last element; a
         * backward slice through index 0 ends before it, which a negative
         * end would mean counted from the back, hence -dim - 1 */
        int64_t en = b + count * step;
        s[ax] = b;
        e[ax] = en < 0 ? -dim - 1 : en > dim ? dim : en;
        t[ax] = st;
        axes[i] = ax;
        if (run_time && st < 0) {
            on_error(on, "a negative step with ends known only at run time is not supported");
            return false;
        }
    }
    Value *ops[2] = {on->in[0], on_in(on, 2)};
    Node *n = on_node(on, NK_SLICE, run_time ? 2 : 1, ops, 1);
    node_set_ints(n, AK_starts, x->rank, s);
    node_set_ints(n, AK_ends, x->rank, e);
    node_set_ints(n, AK_steps, x->rank, t);
    if (run_time) /* which axis each run-time end is for */
        node_set_ints(n, AK_axes, ns, axes);
    return on_done(on, n);
}

bool import_gather(OnnxNode *on) {
    if (!on_need_inputs(on, 2, 2))
        return false;
    Node *n = on_node(on, NK_GATHER, 2, on->in, 1);
    node_set_int(n, AK_axis, on_attr_int(on, "axis", 0));
    return on_done(on, n);
}

/* ---- broadcasting, tiling, padding ---------------------------------------- */

bool import_expand(OnnxNode *on) {
    if (!on_need_inputs(on, 2, 2))
        return false;
    int64_t shape[MAX_RANK];
    int n;
    uint8_t dyn = 0;
    if (!on_try_const(on, on_in(on, 1)))
        return run_time_shape(on, 1, "shape", shape, &dyn, &n) &&
               expand_run_time(on, on->in[0], shape, dyn, n);
    if (!on_const_ints(on, 1, "shape", shape, MAX_RANK, &n))
        return false;
    for (int i = 0; i < n; i++) {
        if (shape[i] < 0) {
            on_error(on, "negative dimension %lld in shape", (long long)shape[i]);
            return false;
        }
    }
    Type want = type_make(on->in[0]->type.elem, n, shape), t;
    if (!type_broadcast(&on->in[0]->type, &want, &t)) {
        on_error(on, "input does not broadcast to the shape");
        return false;
    }
    int64_t numel;
    if (!type_numel_checked(&t, &numel)) {
        on_error(on, "shape has more elements than 64 bits count");
        return false;
    }
    Node *e = on_node(on, NK_EXPAND, 1, on->in, 1);
    e->res[0].type = t;
    return on_done(on, e);
}

bool import_tile(OnnxNode *on) {
    if (!on_need_inputs(on, 2, 2))
        return false;
    int64_t rep[MAX_RANK];
    int n;
    if (!on_const_ints(on, 1, "repeats", rep, MAX_RANK, &n))
        return false;
    Node *t = on_node(on, NK_TILE, 1, on->in, 1);
    node_set_ints(t, AK_repeats, n, rep);
    return on_done(on, t);
}

bool import_pad(OnnxNode *on) {
    if (!on_need_inputs(on, 1, on->opset < 11 ? 1 : 4))
        return false;
    const Type *x = &on->in[0]->type;
    int64_t pads[2 * MAX_RANK];
    int np;
    double value = 0;
    if (on->opset < 11) {
        if (!on_need_inputs(on, 1, 1))
            return false;
        np = on_attr_ints(on, on->opset < 2 ? "paddings" : "pads", pads, 2 * MAX_RANK);
        value = on_attr_float(on, "value", 0);
    } else {
        if (!on_need_inputs(on, 2, 4) || !on_const_ints(on, 1, "pads", pads, 2 * MAX_RANK, &np))
            return false;
        if (on_in(on, 2)) {
            Tensor *v = on_const_input(on, 2, "constant_value");
            if (!v)
                return false;
            value = tensor_numel(v) ? tensor_get_f64(v, 0) : 0;
        }
        if (on_in(on, 3)) {
            /* opset 18: pads given for some axes only */
            int64_t axes[MAX_RANK], full[2 * MAX_RANK] = {0};
            int na;
            if (!on_const_ints(on, 3, "axes", axes, MAX_RANK, &na) || np != 2 * na) {
                on_error(on, "pads must have two entries per axis");
                return false;
            }
            for (int i = 0; i < na; i++) {
                int64_t a = axes[i] < 0 ? axes[i] + x->rank : axes[i];
                if (a < 0 || a >= x->rank) {
                    on_error(on, "axis out of range");
                    return false;
                }
                full[a] = pads[i];
                full[x->rank + a] = pads[na + i];
            }
            memcpy(pads, full, sizeof full);
            np = 2 * x->rank;
        }
    }
    if (np != 2 * x->rank) {
        on_error(on, "pads must have %d entries", 2 * x->rank);
        return false;
    }
    const char *mode = on_attr_str(on, "mode", "constant");
    if (strcmp(mode, "constant") && strcmp(mode, "reflect") && strcmp(mode, "edge")) {
        on_error(on, "pad mode '%s' is not supported", mode);
        return false;
    }
    Node *n = on_node(on, NK_PAD, 1, on->in, 1);
    node_set_enum(n, AK_mode, enum_by_name(ES_MODE, mode, strlen(mode)));
    node_set_ints(n, AK_pads, np, pads);
    node_set_float(n, AK_value, (float)value);
    return on_done(on, n);
}

/* ---- depth and space ------------------------------------------------------ */

bool import_depth_to_space(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 1))
        return false;
    const char *mode = on_attr_str(on, "mode", "DCR");
    if (strcmp(mode, "DCR") && strcmp(mode, "CRD")) {
        on_error(on, "unknown mode '%s'", mode);
        return false;
    }
    Node *n = on_node(on, NK_DEPTH_TO_SPACE, 1, on->in, 1);
    node_set_int(n, AK_blocksize, on_attr_int(on, "blocksize", 0));
    node_set_enum(n, AK_mode, enum_by_name(ES_MODE, mode, strlen(mode)));
    return on_done(on, n);
}

bool import_space_to_depth(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 1))
        return false;
    Node *n = on_node(on, NK_SPACE_TO_DEPTH, 1, on->in, 1);
    node_set_int(n, AK_blocksize, on_attr_int(on, "blocksize", 0));
    return on_done(on, n);
}
