/* Import of the ONNX sequence operators. A sequence's length is static in
 * every model glowc takes, so a sequence lives only during import, as a
 * compile-time list of graph values, and each operator becomes plain nodes.
 *
 * A list is kept in one of three forms: its elements as values (what
 * SequenceConstruct and SplitToSequence make); one value stacking them along
 * a new axis 0, [n, ...] (what a position known only at run time makes:
 * Gather with a computed index picks, removes or places elements); or, for
 * SplitToSequence with sizes known only at run time, the length alone, until
 * an element's shape is asked for. Each form converts to the others on
 * demand, and conversions are kept, so a sequence used twice converts once. */
#include "core/infer.h"
#include "core/onnx/import.h"

/* Each element becomes nodes, so a sequence is as long as a graph can
 * reasonably be wide: a hostile SplitToSequence of a long axis is refused. */
enum { SEQ_MAX_LENGTH = 4096 };

struct OnnxSeq {
    ElemKind elem;  /* known even when the sequence is empty */
    int n;          /* -1: known only at run time (a run-time loop's list, stacked) */
    const OnnxSeq *from; /* what SequenceInsert inserted into */
    bool loop_formal;    /* a run-time loop body's carried list (empty) */
    Value **items;  /* the n elements, or NULL until asked for */
    Value *stacked; /* [n, ...], or NULL until asked for (all elements of one type) */
    /* SplitToSequence with sizes known only at run time: */
    Value *split_src, *split_sizes;
    int split_axis;
    const char *split_where;
};

static OnnxSeq *seq_new(OnnxNode *on, ElemKind k, int n) {
    OnnxSeq *s = arena_alloc(on->f->module->arena, sizeof *s);
    s->elem = k;
    s->n = n;
    return s;
}

static Value **seq_alloc_items(OnnxNode *on, int n) {
    return arena_alloc_array(on->f->module->arena, (size_t)(n ? n : 1), sizeof(Value *));
}

/* ---- inputs ------------------------------------------------------------------- */

/* Present inputs (tensors or sequences) within [min, max]. */
static bool seq_arity(OnnxNode *on, int min, int max) {
    int present = on->nin;
    while (present > 0 && !on->in[present - 1] && !on_seq_in(on, present - 1))
        present--;
    if (present >= min && present <= max)
        return true;
    if (min == max)
        on_error(on, "expects %d inputs, has %d", min, present);
    else
        on_error(on, "expects %d to %d inputs, has %d", min, max, present);
    return false;
}

static OnnxSeq *seq_arg(OnnxNode *on, int i) {
    OnnxSeq *s = on_seq_in(on, i);
    if (!s)
        on_error(on, "input %d must be a sequence, %s", i,
                 on_in(on, i) ? "got a tensor" : "it is missing");
    /* A list a run-time loop built has a run-time length: only the
     * operators that take it whole read it. */
    if (s && s->n < 0 && strcmp(on->op, "ConcatFromSequence") && strcmp(on->op, "SequenceLength")) {
        char t[TYPE_STR_MAX];
        on_unsupported(on, "input %d is a list a loop built at run time (its elements stacked as "
                           "%s, a length known only then); glowc takes such a list only into "
                           "ConcatFromSequence and SequenceLength", i,
                       type_str(&s->stacked->type, t));
        return NULL;
    }
    return s;
}

/* Tensor input i; NULL with an error when it is a sequence or, unless
 * optional, missing. */
static bool tensor_arg(OnnxNode *on, int i, bool optional, Value **out) {
    *out = on_in(on, i);
    if (on_seq_in(on, i)) {
        on_error(on, "input %d must be a tensor, got a sequence", i);
        return false;
    }
    if (!*out && !optional) {
        on_error(on, "input %d is required", i);
        return false;
    }
    return true;
}

/* ---- emitting ----------------------------------------------------------------- */

static Value *i64_const(OnnxNode *on, ElemKind k, int n, const int64_t *v) {
    Type t = type_make(k, 1, (int64_t[]){n});
    Tensor *x = on_tensor(on, &t);
    if (!x)
        return NULL;
    for (int i = 0; i < n; i++)
        tensor_set_i64(x, i, v[i]);
    return on_const(on, x);
}

static Value *emit(OnnxNode *on, NodeKind k, int nops, Value *const *ops) {
    for (int i = 0; i < nops; i++)
        if (!ops[i])
            return NULL; /* an operand that failed, its error already said */
    return on_tmp(on, on_node(on, k, nops, ops, 1));
}

static Value *emit_axis(OnnxNode *on, NodeKind k, int nops, Value *const *ops, int64_t axis) {
    for (int i = 0; i < nops; i++)
        if (!ops[i])
            return NULL;
    Node *n = on_node(on, k, nops, ops, 1);
    node_set_int(n, AK_axis, axis);
    return on_tmp(on, n);
}

static Value *unsqueeze(OnnxNode *on, Value *v, int64_t axis) {
    Node *n = on_node(on, NK_UNSQUEEZE, 1, &v, 1);
    node_set_ints(n, AK_axes, 1, &axis);
    return on_tmp(on, n);
}

/* Elements [start, start + len) of x along axis, keeping the axis. */
static Value *slice_axis(OnnxNode *on, Value *x, int axis, int64_t start, int64_t len) {
    const Type *t = &x->type;
    int64_t s[MAX_RANK], e[MAX_RANK], st[MAX_RANK];
    for (int i = 0; i < t->rank; i++) {
        s[i] = i == axis ? start : 0;
        e[i] = i == axis ? start + len : t->dims[i];
        st[i] = 1;
    }
    Node *n = on_node(on, NK_SLICE, 1, &x, 1);
    node_set_ints(n, AK_starts, t->rank, s);
    node_set_ints(n, AK_ends, t->rank, e);
    node_set_ints(n, AK_steps, t->rank, st);
    return on_tmp(on, n);
}

/* Element k of a stacked value: a Gather with a constant index. */
static Value *gather_at(OnnxNode *on, Value *stacked, int64_t k) {
    Value *ops[2] = {stacked, on_scalar_const(on, ELEM_I64, (double)k)};
    return emit_axis(on, NK_GATHER, 2, ops, 0);
}

/* ---- the three forms ------------------------------------------------------------ */

/* Slices of x along axis of the given sizes (count n, sum the axis). */
static Value **split_items(OnnxNode *on, Value *x, int axis, const int64_t *sizes, int n) {
    Value **items = seq_alloc_items(on, n);
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        if (!(items[i] = slice_axis(on, x, axis, at, sizes[i])))
            return NULL;
        at += sizes[i];
    }
    return items;
}

/* Split sizes from a constant: a 1-D list that fills the axis exactly. */
static bool read_sizes(OnnxNode *on, const Tensor *t, int64_t dim, int64_t *sizes, int n) {
    int64_t sum = 0;
    for (int i = 0; i < n; i++) {
        sizes[i] = tensor_get_i64(t, i);
        if (sizes[i] < 0 || sizes[i] > dim) {
            on_error(on, "split size %lld is out of range [0, %lld]", (long long)sizes[i],
                     (long long)dim);
            return false;
        }
        sum += sizes[i];
    }
    if (sum != dim) {
        on_error(on, "split sizes add up to %lld, the axis has %lld", (long long)sum,
                 (long long)dim);
        return false;
    }
    return true;
}

/* The elements of s as values; NULL after an error. */
static Value **seq_items(OnnxNode *on, OnnxSeq *s) {
    if (s->items || s->n == 0)
        return s->items ? s->items : seq_alloc_items(on, 0);
    if (s->stacked) {
        Value **items = seq_alloc_items(on, s->n);
        for (int i = 0; i < s->n; i++)
            if (!(items[i] = gather_at(on, s->stacked, i)))
                return NULL;
        return s->items = items;
    }
    /* A run-time split: its sizes decide the elements' shapes. Through a
     * known input the model is specialised to them (import.c notes it). */
    Tensor *t = on_try_const(on, s->split_sizes);
    if (!t) {
        on_unsupported(on, "the elements of the sequence from %s have sizes known only at run "
                           "time (its split input): their shapes would depend on an input value",
                       s->split_where);
        return NULL;
    }
    if (tensor_numel(t) != s->n || elem_is_float(t->type.elem)) {
        on_error(on, "split of the sequence from %s must be %d integers", s->split_where, s->n);
        return NULL;
    }
    int64_t *sizes = arena_alloc_array(on->f->module->arena, (size_t)s->n, sizeof *sizes);
    if (!read_sizes(on, t, s->split_src->type.dims[s->split_axis], sizes, s->n))
        return NULL;
    return s->items = split_items(on, s->split_src, s->split_axis, sizes, s->n);
}

/* Whether every element has the same type (then the list stacks). */
static bool seq_uniform(OnnxNode *on, OnnxSeq *s, bool *uniform) {
    *uniform = true;
    if (s->stacked || s->n <= 1)
        return true;
    Value **items = seq_items(on, s);
    if (!items)
        return false;
    for (int i = 1; i < s->n; i++)
        *uniform &= type_equal(&items[i]->type, &items[0]->type);
    return true;
}

/* The element type of a non-empty sequence. */
static bool seq_elem_type(OnnxNode *on, OnnxSeq *s, Type *t) {
    if (s->stacked) {
        *t = s->stacked->type;
        t->rank--;
        for (int i = 0; i < t->rank; i++)
            t->dims[i] = t->dims[i + 1];
        return true;
    }
    Value **items = seq_items(on, s);
    if (items)
        *t = items[0]->type;
    return items != NULL;
}

/* All elements in one value [n, ...]: Unsqueeze each, Concat on axis 0.
 * The caller checked that the sequence is uniform and not empty. */
static Value *seq_stacked(OnnxNode *on, OnnxSeq *s) {
    if (s->stacked)
        return s->stacked;
    Value **items = seq_items(on, s);
    if (!items)
        return NULL;
    Value **ops = seq_alloc_items(on, s->n);
    for (int i = 0; i < s->n; i++)
        if (!(ops[i] = unsqueeze(on, items[i], 0)))
            return NULL;
    return s->stacked = s->n == 1 ? ops[0] : emit_axis(on, NK_CONCAT, s->n, ops, 0);
}

/* ---- positions -------------------------------------------------------------------- */

typedef enum { POS_ERROR, POS_ABSENT, POS_STATIC, POS_RUNTIME } PosKind;

/* Input i as a position: a constant (*k), a value known at run time only
 * (*v, never folded through a known input: the graph can take it as it is). */
static PosKind read_pos(OnnxNode *on, int i, bool optional, int64_t *k, Value **v) {
    if (!tensor_arg(on, i, optional, v))
        return POS_ERROR;
    if (!*v)
        return POS_ABSENT;
    const Type *t = &(*v)->type;
    if (t->rank != 0 || !elem_is_int(t->elem)) {
        char b[TYPE_STR_MAX];
        on_error(on, "position must be an integer scalar, got %s", type_str(t, b));
        return POS_ERROR;
    }
    Tensor *c = on_try_static(on, *v);
    if (!c)
        return POS_RUNTIME;
    *k = tensor_get_i64(c, 0);
    return POS_STATIC;
}

/* A position in [-n, hi] made non-negative; out of range is an error. */
static bool pos_normalize(OnnxNode *on, int64_t k, int n, int hi, int64_t *out) {
    if (k < -n || k > hi) {
        on_error(on, "position %lld is out of range [%d, %d] for a sequence of %d element%s",
                 (long long)k, -n, hi, n, n == 1 ? "" : "s");
        return false;
    }
    *out = k < 0 ? k + n : k;
    return true;
}

/* A position known at run time among elements of different shapes: a shape
 * then depends on its value. Through a known input the model is specialised
 * to it (import.c notes it); otherwise it is refused, saying `why`. */
static bool pos_decides_shape(OnnxNode *on, Value *v, const char *why, int64_t *k) {
    Tensor *c = on_try_const(on, v);
    if (!c) {
        on_unsupported(on, "%s at a position known only at run time %s", on->op, why);
        return false;
    }
    *k = tensor_get_i64(c, 0);
    return true;
}

/* A 1-D constant [base, base + 1, ...] of n integers of kind k. */
static Value *iota(OnnxNode *on, ElemKind k, int n, int64_t base) {
    int64_t *v = arena_alloc_array(on->f->module->arena, (size_t)(n ? n : 1), sizeof *v);
    for (int i = 0; i < n; i++)
        v[i] = base + i;
    return i64_const(on, k, n, v);
}

/* A run-time position in [-n, n - 1] (SequenceErase) made non-negative in
 * the graph by Gather([0 .. n-1], p): Gather counts negative indices from
 * the end as ONNX positions do, and refuses out-of-range ones at run time. */
static Value *pos_runtime_erase(OnnxNode *on, Value *p, int n) {
    return emit_axis(on, NK_GATHER, 2, (Value *[]){iota(on, p->type.elem, n, 0), p}, 0);
}

/* The same for [-n, n] (SequenceInsert): Gather([0 .. n], p < 0 ? p - 1 : p),
 * since -1 must name n - 1 in a table of n + 1 entries. */
static Value *pos_runtime_insert(OnnxNode *on, Value *p, int n) {
    ElemKind k = p->type.elem;
    Value *zero = on_scalar_const(on, k, 0), *one = on_scalar_const(on, k, 1);
    Value *neg = emit(on, NK_LESS, 2, (Value *[]){p, zero});
    Value *back = emit(on, NK_SUB, 2, (Value *[]){p, one});
    Value *q = emit(on, NK_WHERE, 3, (Value *[]){neg, back, p});
    return emit_axis(on, NK_GATHER, 2, (Value *[]){iota(on, k, n + 1, 0), q}, 0);
}

/* ---- the operators ------------------------------------------------------------------ */

bool import_sequence_empty(OnnxNode *on) {
    if (!seq_arity(on, 0, 0))
        return false;
    int dtype = (int)on_attr_int(on, "dtype", 1 /* FLOAT */);
    ElemKind k;
    if (!elem_from_onnx(dtype, &k)) {
        on_unsupported(on, "dtype %s is not supported", onnx_type_name(dtype));
        return false;
    }
    on_bind_seq(on, 0, seq_new(on, k, 0));
    return true;
}

bool import_sequence_construct(OnnxNode *on) {
    if (on->nin < 1) {
        on_error(on, "takes at least one tensor");
        return false;
    }
    if (on->nin > SEQ_MAX_LENGTH) {
        on_unsupported(on, "sequences longer than %d elements are not supported", SEQ_MAX_LENGTH);
        return false;
    }
    Value **items = seq_alloc_items(on, on->nin);
    for (int i = 0; i < on->nin; i++) {
        if (!tensor_arg(on, i, false, &items[i]))
            return false;
        if (items[i]->type.elem != items[0]->type.elem) {
            on_error(on, "input %d is %s, input 0 is %s: a sequence holds one element kind", i,
                     elem_name(items[i]->type.elem), elem_name(items[0]->type.elem));
            return false;
        }
    }
    OnnxSeq *s = seq_new(on, items[0]->type.elem, on->nin);
    s->items = items;
    on_bind_seq(on, 0, s);
    return true;
}

bool import_sequence_length(OnnxNode *on) {
    OnnxSeq *s;
    if (!seq_arity(on, 1, 1) || !(s = seq_arg(on, 0)))
        return false;
    if (s->n < 0) { /* the stacked rows' run-time count */
        Value *sh = emit(on, NK_SHAPE, 1, &s->stacked), *zero = on_scalar_const(on, ELEM_I64, 0);
        Value *len = sh && zero ? emit_axis(on, NK_GATHER, 2, (Value *[]){sh, zero}, 0) : NULL;
        if (!len)
            return false;
        on_bind(on, 0, len);
        return true;
    }
    Value *v = on_scalar_const(on, ELEM_I64, s->n);
    if (!v)
        return false;
    on_bind(on, 0, v);
    return true;
}

bool import_sequence_at(OnnxNode *on) {
    OnnxSeq *s;
    Value *p;
    int64_t k = 0;
    if (!seq_arity(on, 2, 2) || !(s = seq_arg(on, 0)))
        return false;
    PosKind pk = read_pos(on, 1, false, &k, &p);
    if (pk == POS_ERROR)
        return false;
    if (s->n == 0) {
        on_error(on, "the sequence is empty");
        return false;
    }
    bool uniform = true;
    if (pk == POS_RUNTIME && !seq_uniform(on, s, &uniform))
        return false;
    if (pk == POS_RUNTIME && uniform) {
        Value *stacked = seq_stacked(on, s);
        if (!stacked)
            return false;
        Node *g = on_node(on, NK_GATHER, 2, (Value *[]){stacked, p}, 1);
        node_set_int(g, AK_axis, 0);
        return on_done(on, g);
    }
    if (pk == POS_RUNTIME &&
        !pos_decides_shape(on, p,
                           "over elements of different shapes: the output shape would depend on "
                           "an input value",
                           &k))
        return false;
    if (!pos_normalize(on, k, s->n, s->n - 1, &k))
        return false;
    Value *v;
    if (!s->items && s->stacked) {
        v = gather_at(on, s->stacked, k);
    } else {
        Value **items = seq_items(on, s);
        v = items ? items[k] : NULL;
    }
    if (!v)
        return false;
    on_bind(on, 0, v);
    return true;
}

/* The elements at the given indices of s, in a new sequence: the same
 * values when s is a list, one Gather when it is stacked. */
static OnnxSeq *seq_pick(OnnxNode *on, OnnxSeq *s, const int64_t *idx, int n) {
    OnnxSeq *r = seq_new(on, s->elem, n);
    if (n == 0)
        return r;
    if (s->stacked && !s->items) {
        Value *ops[2] = {s->stacked, i64_const(on, ELEM_I64, n, idx)};
        return (r->stacked = emit_axis(on, NK_GATHER, 2, ops, 0)) ? r : NULL;
    }
    Value **items = seq_items(on, s);
    if (!items)
        return NULL;
    r->items = seq_alloc_items(on, n);
    for (int i = 0; i < n; i++)
        r->items[i] = items[idx[i]];
    return r;
}

bool import_sequence_erase(OnnxNode *on) {
    OnnxSeq *s;
    Value *p;
    int64_t k = -1;
    if (!seq_arity(on, 1, 2) || !(s = seq_arg(on, 0)))
        return false;
    PosKind pk = read_pos(on, 1, true, &k, &p);
    if (pk == POS_ERROR)
        return false;
    if (s->n == 0) {
        on_error(on, "the sequence is empty");
        return false;
    }
    int n = s->n - 1;
    bool uniform = true;
    if (pk == POS_RUNTIME && n > 0 && !seq_uniform(on, s, &uniform))
        return false;
    if (pk == POS_RUNTIME && n > 0 && uniform) {
        /* Element j of the result is j before the position, j + 1 from it. */
        Value *stacked = seq_stacked(on, s), *at = pos_runtime_erase(on, p, s->n);
        ElemKind ik = p->type.elem;
        Value *j = iota(on, ik, n, 0), *j1 = iota(on, ik, n, 1);
        Value *before = emit(on, NK_LESS, 2, (Value *[]){j, at});
        Value *idx = emit(on, NK_WHERE, 3, (Value *[]){before, j, j1});
        OnnxSeq *r = seq_new(on, s->elem, n);
        if (!(r->stacked = emit_axis(on, NK_GATHER, 2, (Value *[]){stacked, idx}, 0)))
            return false;
        on_bind_seq(on, 0, r);
        return true;
    }
    /* Erasing the only element leaves an empty sequence wherever it is. */
    if (pk == POS_RUNTIME && n > 0 &&
        !pos_decides_shape(on, p,
                           "over elements of different shapes: the shapes of the remaining "
                           "elements would depend on an input value",
                           &k))
        return false;
    if (pk == POS_RUNTIME && n == 0)
        k = 0;
    if (!pos_normalize(on, k, s->n, s->n - 1, &k))
        return false;
    int64_t *idx = arena_alloc_array(on->f->module->arena, (size_t)(n ? n : 1), sizeof *idx);
    for (int i = 0; i < n; i++)
        idx[i] = i < k ? i : i + 1;
    OnnxSeq *r = seq_pick(on, s, idx, n);
    if (!r)
        return false;
    on_bind_seq(on, 0, r);
    return true;
}

/* s with t inserted at a position: the list with one more value, or for a
 * stacked sequence Gather(Concat(s, [t]), idx) with idx from the position
 * (`at`, a value, or `k`, a constant). */
static OnnxSeq *seq_insert(OnnxNode *on, OnnxSeq *s, Value *t, Value *at, int64_t k) {
    int n = s->n;
    OnnxSeq *r = seq_new(on, s->elem, n + 1);
    r->from = s;
    Type et;
    bool stack = n > 0 && (at || (s->stacked && !s->items));
    if (stack && !seq_elem_type(on, s, &et))
        return NULL;
    if (stack && type_equal(&et, &t->type)) {
        Value *stacked = seq_stacked(on, s), *tt = unsqueeze(on, t, 0);
        Value *all = emit_axis(on, NK_CONCAT, 2, (Value *[]){stacked, tt}, 0);
        ElemKind ik = at ? at->type.elem : ELEM_I64;
        Value *idx;
        if (!at && k == n)
            return (r->stacked = all) ? r : NULL; /* appended: already in place */
        if (at) {
            /* Element j is j before the position, t (at n) on it, j - 1 after. */
            Value *j = iota(on, ik, n + 1, 0), *jm1 = iota(on, ik, n + 1, -1);
            Value *last = on_scalar_const(on, ik, n);
            Value *before = emit(on, NK_LESS, 2, (Value *[]){j, at});
            Value *after = emit(on, NK_GREATER, 2, (Value *[]){j, at});
            Value *tail = emit(on, NK_WHERE, 3, (Value *[]){after, jm1, last});
            idx = emit(on, NK_WHERE, 3, (Value *[]){before, j, tail});
        } else {
            int64_t *v = arena_alloc_array(on->f->module->arena, (size_t)n + 1, sizeof *v);
            for (int i = 0; i <= n; i++)
                v[i] = i < k ? i : i == k ? n : i - 1;
            idx = i64_const(on, ik, n + 1, v);
        }
        r->stacked = emit_axis(on, NK_GATHER, 2, (Value *[]){all, idx}, 0);
        return r->stacked ? r : NULL;
    }
    Value **items = seq_items(on, s);
    if (!items)
        return NULL;
    r->items = seq_alloc_items(on, n + 1);
    for (int i = 0; i <= n; i++)
        r->items[i] = i < k ? items[i] : i == k ? t : items[i - 1];
    return r;
}

bool import_sequence_insert(OnnxNode *on) {
    OnnxSeq *s;
    Value *t, *p;
    int64_t k = 0;
    if (!seq_arity(on, 2, 3) || !(s = seq_arg(on, 0)) || !tensor_arg(on, 1, false, &t))
        return false;
    PosKind pk = read_pos(on, 2, true, &k, &p);
    if (pk == POS_ERROR)
        return false;
    if (t->type.elem != s->elem) {
        on_error(on, "the tensor is %s, the sequence holds %s", elem_name(t->type.elem),
                 elem_name(s->elem));
        return false;
    }
    if (s->n >= SEQ_MAX_LENGTH) {
        on_unsupported(on, "sequences longer than %d elements are not supported", SEQ_MAX_LENGTH);
        return false;
    }
    if (pk == POS_ABSENT)
        k = s->n;
    bool uniform = true;
    Type et = {0};
    if (pk == POS_RUNTIME && s->n > 0 &&
        (!seq_uniform(on, s, &uniform) || (uniform && !seq_elem_type(on, s, &et))))
        return false;
    Value *at = NULL;
    if (pk == POS_RUNTIME && s->n > 0 && uniform && type_equal(&et, &t->type)) {
        if (!(at = pos_runtime_insert(on, p, s->n)))
            return false;
    } else if (pk == POS_RUNTIME && s->n > 0) {
        if (!pos_decides_shape(on, p,
                               "among elements of different shapes: where each shape lands "
                               "would depend on an input value",
                               &k))
            return false;
    } else if (pk == POS_RUNTIME) {
        k = 0; /* into an empty sequence: the only place there is */
    }
    if (!at && !pos_normalize(on, k, s->n, s->n, &k))
        return false;
    OnnxSeq *r = seq_insert(on, s, t, at, k);
    if (!r)
        return false;
    on_bind_seq(on, 0, r);
    return true;
}

/* ConcatFromSequence (no new axis) of a run-time loop's list, stacked as
 * [?<=B x d0 x ...]: along axis 0, one [?<=B*d0 x ...] value. */
static bool concat_rows(OnnxNode *on, Value *stacked, int a) {
    const Type *st = &stacked->type;
    if (a != 0 || st->rank < 2) {
        on_unsupported(on, "concatenates a list a loop built at run time along axis %d; glowc "
                           "concatenates such lists along axis 0 only", a);
        return false;
    }
    Type t = *st;
    t.rank--;
    t.dims[0] = st->dims[0] * st->dims[1];
    for (int i = 1; i < t.rank; i++)
        t.dims[i] = st->dims[i + 1];
    t.dyn = st->dims[1] ? 1 : 0;
    Node *r = on_node(on, NK_RESHAPE, 1, &stacked, 1);
    r->res[0].type = t;
    return on_done(on, r);
}

bool import_concat_from_sequence(OnnxNode *on) {
    OnnxSeq *s;
    if (!seq_arity(on, 1, 1) || !(s = seq_arg(on, 0)))
        return false;
    if (!on_has_attr(on, "axis")) {
        on_error(on, "missing attribute 'axis'");
        return false;
    }
    if (s->n == 0) {
        on_error(on, "the sequence is empty: the result's shape is not defined");
        return false;
    }
    int64_t axis = on_attr_int(on, "axis", 0);
    bool new_axis = on_attr_int(on, "new_axis", 0) != 0;
    Type et;
    if (!seq_elem_type(on, s, &et))
        return false;
    int a;
    if (!axis_normalize(axis, et.rank + new_axis, &a)) {
        on_error(on, "axis %lld is out of range for elements of rank %d%s", (long long)axis,
                 et.rank, new_axis ? " and a new axis" : "");
        return false;
    }
    if (new_axis && s->stacked && !s->items) {
        /* Already stacked on axis 0: move that axis to a. */
        if (a == 0) {
            on_bind(on, 0, s->stacked);
            return true;
        }
        int64_t perm[MAX_RANK];
        for (int i = 0; i <= et.rank; i++)
            perm[i] = i < a ? i + 1 : i == a ? 0 : i;
        Node *t = on_node(on, NK_TRANSPOSE, 1, &s->stacked, 1);
        node_set_ints(t, AK_perm, et.rank + 1, perm);
        return on_done(on, t);
    }
    if (s->n < 0) /* concatenated rows of a run-time count: the stack's first two axes merged */
        return concat_rows(on, s->stacked, a);
    Value **items = seq_items(on, s);
    if (!items)
        return false;
    Value **ops = seq_alloc_items(on, s->n);
    for (int i = 0; i < s->n; i++)
        if (!(ops[i] = new_axis ? unsqueeze(on, items[i], a) : items[i]))
            return false;
    Node *c = on_node(on, NK_CONCAT, s->n, ops, 1);
    node_set_int(c, AK_axis, a);
    return on_done(on, c);
}

/* keepdims=0 without split: the sequence is the input itself with the split
 * axis in front, stacked. */
static OnnxSeq *split_unstacked(OnnxNode *on, Value *x, int a) {
    OnnxSeq *s = seq_new(on, x->type.elem, (int)x->type.dims[a]);
    if (a == 0 || x->type.dims[a] == 0) {
        s->stacked = x->type.dims[a] ? x : NULL;
        return s;
    }
    int64_t perm[MAX_RANK];
    perm[0] = a;
    for (int i = 0, j = 1; i < x->type.rank; i++)
        if (i != a)
            perm[j++] = i;
    Node *t = on_node(on, NK_TRANSPOSE, 1, &x, 1);
    node_set_ints(t, AK_perm, x->type.rank, perm);
    return (s->stacked = on_tmp(on, t)) ? s : NULL;
}

bool import_split_to_sequence(OnnxNode *on) {
    Value *x, *sv;
    if (!seq_arity(on, 1, 2) || !tensor_arg(on, 0, false, &x) || !tensor_arg(on, 1, true, &sv))
        return false;
    const Type *xt = &x->type;
    int a;
    if (xt->rank == 0 || !axis_normalize(on_attr_int(on, "axis", 0), xt->rank, &a)) {
        on_error(on, "axis %lld is out of range for an input of rank %d",
                 (long long)on_attr_int(on, "axis", 0), xt->rank);
        return false;
    }
    int64_t dim = xt->dims[a];
    Tensor *st = sv ? on_try_static(on, sv) : NULL;
    int64_t n;
    if (!sv)
        n = dim;
    else if (sv->type.rank > 1 || elem_is_float(sv->type.elem) || sv->type.elem == ELEM_BOOL) {
        on_error(on, "split must be an integer scalar or list");
        return false;
    } else if (sv->type.rank == 1)
        n = sv->type.dims[0];
    else if (!st) {
        on_unsupported(on, "split is a scalar known only at run time: the sequence's length "
                           "would depend on an input value");
        return false;
    } else if (tensor_get_i64(st, 0) <= 0) {
        on_error(on, "split must be positive, got %lld", (long long)tensor_get_i64(st, 0));
        return false;
    } else {
        int64_t chunk = tensor_get_i64(st, 0);
        n = dim / chunk + (dim % chunk != 0);
    }
    if (n > SEQ_MAX_LENGTH) {
        on_unsupported(on, "a sequence of %lld elements is longer than glowc unrolls (%d)",
                       (long long)n, SEQ_MAX_LENGTH);
        return false;
    }
    if (!sv && !on_attr_int(on, "keepdims", 1)) {
        OnnxSeq *s = split_unstacked(on, x, a);
        if (!s)
            return false;
        on_bind_seq(on, 0, s);
        return true;
    }
    OnnxSeq *s = seq_new(on, xt->elem, (int)n);
    if (sv && sv->type.rank == 1 && !st) {
        /* Only the length is known until an element is asked for. */
        s->split_src = x;
        s->split_sizes = sv;
        s->split_axis = a;
        s->split_where = on->where;
        on_bind_seq(on, 0, s);
        return true;
    }
    int64_t *sizes = arena_alloc_array(on->f->module->arena, (size_t)(n ? n : 1), sizeof *sizes);
    if (sv && sv->type.rank == 1) {
        if (!read_sizes(on, st, dim, sizes, (int)n))
            return false;
    } else {
        int64_t chunk = sv ? tensor_get_i64(st, 0) : 1;
        for (int64_t i = 0; i < n; i++)
            sizes[i] = dim - i * chunk < chunk ? dim - i * chunk : chunk;
    }
    if (!(s->items = split_items(on, x, a, sizes, (int)n)))
        return false;
    on_bind_seq(on, 0, s);
    return true;
}

/* ---- lists carried by a loop that runs at run time ---------------------------------- */

OnnxSeq *seq_loop_formal(OnnxNode *on, OnnxSeq *init, int j) {
    if (init->n != 0) {
        on_unsupported(on, "its carried value %d is a list of %d elements; glowc carries into a "
                           "loop that runs at run time only an empty list that the body appends "
                           "to (a list.append in a loop)", j, init->n);
        return NULL;
    }
    OnnxSeq *s = seq_new(on, init->elem, 0);
    s->loop_formal = true;
    return s;
}

Value *seq_loop_row(OnnxNode *on, OnnxSeq *out, const char *name) {
    if (out->n != 1 || !out->from || !out->from->loop_formal || !out->items) {
        on_unsupported(on, "its body's list output '%s' is not its carried list with one element "
                           "appended; glowc runs such a loop at run time only for a list.append "
                           "in each iteration", name);
        return NULL;
    }
    return out->items[0];
}

OnnxSeq *seq_loop_result(OnnxNode *on, Value *stacked) {
    OnnxSeq *s = seq_new(on, stacked->type.elem, -1);
    s->stacked = stacked;
    return s;
}

Value *seq_run_time_rows(const OnnxSeq *s) {
    return s->n < 0 ? s->stacked : NULL;
}
