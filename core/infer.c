/* Shape rules for every node kind, and the window/slice/reduce geometry that
 * the kernels share. */
#include "core/infer.h"
#include "core/slice.h"
#include "core/winograd.h"

#include <assert.h>
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

typedef bool (*InferFn)(Node *n, DiagList *d);

/* ---- helpers ---------------------------------------------------------- */

static const char *line_of(const Node *n, char *buf, size_t len) {
    const char *text = n->func && n->func->module ? n->func->module->text : NULL;
    if (!text || n->loc.line <= 0)
        return NULL;
    const char *p = text;
    for (int l = 1; l < n->loc.line && p; l++) {
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    if (!p)
        return NULL;
    size_t k = strcspn(p, "\n");
    if (k >= len)
        k = len - 1;
    memcpy(buf, p, k);
    buf[k] = 0;
    return buf;
}

void node_error(DiagList *d, const Node *n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* A list without a file (a command's own, at run time) is given the
     * node's: "model.onnx: node ..." or "file.hl:3:8: ..." either way. */
    const char *saved = d->file;
    if (!saved && n->func && n->func->module && n->func->module->source[0])
        d->file = n->func->module->source;
    if (n->loc.line > 0) {
        char line[512];
        diag_add(d, DIAG_ERROR, NULL, n->loc, line_of(n, line, sizeof line), "%s: %s",
                 node_kind_name(n->kind), msg);
    } else {
        diag_error(d, node_where(n), "%s", msg);
    }
    d->file = saved;
}

bool axis_normalize(int64_t axis, int rank, int *out) {
    if (axis < -rank || axis >= rank)
        return false;
    *out = (int)(axis < 0 ? axis + rank : axis);
    return true;
}

static const Type *op_type(const Node *n, int i) {
    return &n->ops[i]->type;
}

static char *tstr(const Type *t, char *buf) {
    type_str(t, buf);
    return buf;
}

/* Dimension arithmetic on attribute values a text file or a model may set
 * to anything: false instead of signed overflow. */
static bool add_dims(int64_t a, int64_t b, int64_t *out) {
    return !__builtin_add_overflow(a, b, out);
}

static bool mul_dims(int64_t a, int64_t b, int64_t *out) {
    return !__builtin_mul_overflow(a, b, out);
}

/* The `ty` column of nodes.def: which element kinds operand 0 may have. */
typedef enum { TY_ALL, TY_ANY, TY_NUM, TY_FLOAT, TY_INT, TY_BOOL, TY_SIGNED, TY_STR } TyClass;

static const TyClass kind_ty[NK_COUNT] = {
#define NODE(E, nm, omin, omax, rmin, rmax, ty, inf, facts, attrs) [NK_##E] = TY_##ty,
#include "core/nodes.def"
};

static bool ty_accepts(TyClass c, ElemKind e) {
    switch (c) {
    case TY_ALL: return true;
    case TY_ANY: return e != ELEM_STR;
    case TY_NUM: return e != ELEM_BOOL && e != ELEM_STR;
    case TY_FLOAT: return elem_is_float(e);
    case TY_INT: return elem_is_int(e);
    case TY_BOOL: return e == ELEM_BOOL;
    case TY_SIGNED: return elem_is_float(e) || elem_class(e) == ECLS_SINT;
    case TY_STR: return e == ELEM_STR;
    }
    return false;
}

static bool same_elem(Node *n, DiagList *d, int a, int b) {
    if (op_type(n, a)->elem == op_type(n, b)->elem)
        return true;
    node_error(d, n, "operand %d is %s but operand %d is %s", a, elem_name(op_type(n, a)->elem),
               b, elem_name(op_type(n, b)->elem));
    return false;
}

static bool need_rank(Node *n, DiagList *d, int op, int min_rank, int max_rank) {
    int r = op_type(n, op)->rank;
    if (r >= min_rank && r <= max_rank)
        return true;
    char b[TYPE_STR_MAX];
    if (min_rank == max_rank)
        node_error(d, n, "operand %d must have rank %d, got %s", op, min_rank,
                   tstr(op_type(n, op), b));
    else
        node_error(d, n, "operand %d must have rank %d to %d, got %s", op, min_rank, max_rank,
                   tstr(op_type(n, op), b));
    return false;
}

static bool need_int_indices(Node *n, DiagList *d, int op) {
    ElemKind e = op_type(n, op)->elem;
    if (e == ELEM_I32 || e == ELEM_I64)
        return true;
    node_error(d, n, "operand %d (indices) must be i32 or i64, got %s", op, elem_name(e));
    return false;
}

/* The axes attribute, when present, names distinct axes in range. */
static bool distinct_axes(Node *n, DiagList *d, int rank) {
    int k;
    const int64_t *axes = node_attr_ints(n, AK_axes, &k);
    uint32_t seen = 0;
    for (int i = 0; i < k; i++) {
        int a;
        if (!axis_normalize(axes[i], rank, &a) || (seen & (1u << a))) {
            node_error(d, n, "bad or repeated axis %lld for rank %d", (long long)axes[i], rank);
            return false;
        }
        seen |= 1u << a;
    }
    return true;
}

/* ---- rules -------------------------------------------------------------- */

static bool infer_storage(Node *n, DiagList *d) {
    if (n->kind == NK_CONSTANT && n->payload && !type_equal(&n->payload->type, &n->res[0].type)) {
        node_error(d, n, "constant data does not match its type");
        return false;
    }
    return true;
}

static bool infer_clip(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0);
    if (n->nops == 2) {
        node_error(d, n, "takes both bounds as operands or neither");
        return false;
    }
    for (int i = 1; i < n->nops; i++) {
        const Type *b = op_type(n, i);
        if (b->elem != x->elem || type_numel(b) != 1 || b->rank > 1) {
            char a[TYPE_STR_MAX];
            node_error(d, n, "bound %s must be a single %s", tstr(b, a), elem_name(x->elem));
            return false;
        }
    }
    n->res[0].type = *x;
    return true;
}

static bool infer_unary(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0);
    if (n->kind == NK_TRILU && x->rank < 2) {
        node_error(d, n, "operand must have rank >= 2");
        return false;
    }
    if (n->kind == NK_LRN && (x->rank < 3 || node_attr_int(n, AK_size, 0) < 1)) {
        node_error(d, n, "operand must be N x C x D1 ... and size positive");
        return false;
    }
    if (n->kind == NK_LP_NORM) {
        int axis;
        int64_t p = node_attr_int(n, AK_p, 2);
        if (!axis_normalize(node_attr_int(n, AK_axis, -1), x->rank, &axis) || (p != 1 && p != 2)) {
            node_error(d, n, "axis out of range or p not 1 or 2");
            return false;
        }
    }
    if (n->kind == NK_MEAN_VARIANCE_NORM && !distinct_axes(n, d, x->rank))
        return false;
    n->res[0].type = *x;
    return true;
}

static bool infer_predicate(Node *n, DiagList *d) {
    n->res[0].type = *op_type(n, 0);
    n->res[0].type.elem = ELEM_BOOL;
    return true;
}

static bool infer_cast(Node *n, DiagList *d) {
    const Attr *to = node_attr(n, AK_to);
    if (!to) {
        node_error(d, n, "missing attribute 'to'");
        return false;
    }
    n->res[0].type = *op_type(n, 0);
    n->res[0].type.elem = to->elem;
    return true;
}

static bool broadcast_ops(Node *n, DiagList *d, int nops, Type *out) {
    Type t = *op_type(n, 0);
    for (int i = 1; i < nops; i++) {
        if (!type_broadcast(&t, op_type(n, i), &t)) {
            char a[TYPE_STR_MAX], b[TYPE_STR_MAX];
            node_error(d, n, "operands %s and %s do not broadcast", tstr(op_type(n, 0), a),
                       tstr(op_type(n, i), b));
            return false;
        }
    }
    *out = t;
    return true;
}

static bool infer_binary(Node *n, DiagList *d) {
    if (!same_elem(n, d, 0, 1))
        return false;
    Type t;
    if (!broadcast_ops(n, d, 2, &t))
        return false;
    if (n->kind == NK_PRELU && !type_same_shape(&t, op_type(n, 0))) {
        node_error(d, n, "slope must broadcast to the input's shape");
        return false;
    }
    t.elem = op_type(n, 0)->elem;
    n->res[0].type = t;
    return true;
}

static bool infer_binary_any(Node *n, DiagList *d) {
    if (op_type(n, 1)->elem == ELEM_BOOL) {
        node_error(d, n, "operand 1 must be numeric");
        return false;
    }
    Type t;
    if (!broadcast_ops(n, d, 2, &t))
        return false;
    t.elem = op_type(n, 0)->elem;
    n->res[0].type = t;
    return true;
}

static bool infer_compare(Node *n, DiagList *d) {
    if (!same_elem(n, d, 0, 1))
        return false;
    Type t;
    if (!broadcast_ops(n, d, 2, &t))
        return false;
    t.elem = ELEM_BOOL;
    n->res[0].type = t;
    return true;
}

static bool infer_where(Node *n, DiagList *d) {
    if (!same_elem(n, d, 1, 2))
        return false;
    Type t;
    if (!broadcast_ops(n, d, 3, &t))
        return false;
    t.elem = op_type(n, 1)->elem;
    n->res[0].type = t;
    return true;
}

/* numpy matmul of operands ia and ib; the result takes ia's element kind. */
static bool matmul_shape(Node *n, DiagList *d, int ia, int ib, Type *out) {
    Type a = *op_type(n, ia), b = *op_type(n, ib);
    if (a.rank < 1 || b.rank < 1) {
        node_error(d, n, "operands must have rank >= 1");
        return false;
    }
    bool a_vec = a.rank == 1, b_vec = b.rank == 1;
    if (a_vec) { /* [K] -> [1, K] */
        a.dims[1] = a.dims[0];
        a.dims[0] = 1;
        a.rank = 2;
    }
    if (b_vec) { /* [K] -> [K, 1] */
        b.dims[1] = 1;
        b.rank = 2;
    }
    int64_t m = a.dims[a.rank - 2], k = a.dims[a.rank - 1];
    int64_t k2 = b.dims[b.rank - 2], nn = b.dims[b.rank - 1];
    if (k != k2) {
        char x[TYPE_STR_MAX], y[TYPE_STR_MAX];
        node_error(d, n, "inner dimensions differ: %s times %s", tstr(op_type(n, ia), x),
                   tstr(op_type(n, ib), y));
        return false;
    }
    Type ba = a, bb = b, batch;
    ba.rank -= 2;
    bb.rank -= 2;
    if (!type_broadcast(&ba, &bb, &batch)) {
        node_error(d, n, "batch dimensions do not broadcast");
        return false;
    }
    Type r = batch;
    r.elem = a.elem;
    if (r.rank + 2 > MAX_RANK) {
        node_error(d, n, "result rank too large");
        return false;
    }
    if (!a_vec)
        r.dims[r.rank++] = m;
    if (!b_vec)
        r.dims[r.rank++] = nn;
    *out = r;
    return true;
}

static bool infer_matmul(Node *n, DiagList *d) {
    return same_elem(n, d, 0, 1) && matmul_shape(n, d, 0, 1, &n->res[0].type);
}

static bool infer_gemm(Node *n, DiagList *d) {
    if (!same_elem(n, d, 0, 1) || !need_rank(n, d, 0, 2, 2) || !need_rank(n, d, 1, 2, 2))
        return false;
    const Type *a = op_type(n, 0), *b = op_type(n, 1);
    bool ta = node_attr_int(n, AK_trans_a, 0), tb = node_attr_int(n, AK_trans_b, 0);
    int64_t m = ta ? a->dims[1] : a->dims[0], k = ta ? a->dims[0] : a->dims[1];
    int64_t k2 = tb ? b->dims[1] : b->dims[0], nn = tb ? b->dims[0] : b->dims[1];
    if (k != k2) {
        node_error(d, n, "inner dimensions differ (%lld and %lld)", (long long)k, (long long)k2);
        return false;
    }
    Type r = type_make(a->elem, 2, (int64_t[]){m, nn});
    if (n->nops == 3) {
        Type t;
        if (!same_elem(n, d, 0, 2))
            return false;
        if (!type_broadcast(&r, op_type(n, 2), &t) || !type_same_shape(&t, &r)) {
            node_error(d, n, "operand 2 (c) does not broadcast to %lldx%lld", (long long)m,
                       (long long)nn);
            return false;
        }
    }
    n->res[0].type = r;
    return true;
}

static bool infer_fully_connected(Node *n, DiagList *d) {
    if (!same_elem(n, d, 0, 1) || !same_elem(n, d, 0, 2) || !need_rank(n, d, 0, 2, 2) ||
        !need_rank(n, d, 1, 2, 2) || !need_rank(n, d, 2, 1, 1))
        return false;
    const Type *x = op_type(n, 0), *w = op_type(n, 1), *b = op_type(n, 2);
    if (x->dims[1] != w->dims[0] || b->dims[0] != w->dims[1]) {
        char a[TYPE_STR_MAX], c[TYPE_STR_MAX], e[TYPE_STR_MAX];
        node_error(d, n, "shapes %s x %s + %s do not fit", tstr(x, a), tstr(w, c), tstr(b, e));
        return false;
    }
    n->res[0].type = type_make(x->elem, 2, (int64_t[]){x->dims[0], w->dims[1]});
    return true;
}

/* ---- einsum ------------------------------------------------------------- */

bool einsum_parse(const char *eq, int nops, const Type *const *ops, EinsumSpec *s, char *err,
                  size_t errlen) {
    int ranks[16];
    for (int i = 0; i < nops && i < 16; i++)
        ranks[i] = ops[i]->rank;
    return einsum_parse_ranks(eq, nops, ranks, s, err, errlen);
}

/* The size a label stands for: equal wherever it appears, except that a size
 * of 1 broadcasts. -1 after an error. */
static int64_t einsum_dim(Node *n, DiagList *d, const EinsumSpec *s, char label) {
    int64_t dim = -1;
    for (int i = 0; i < n->nops; i++) {
        for (int j = 0; j < s->rank[i]; j++) {
            if (s->labels[i][j] != label)
                continue;
            int64_t v = op_type(n, i)->dims[j];
            if (dim < 0 || dim == 1) {
                dim = v;
            } else if (v != dim && v != 1) {
                node_error(d, n, "label '%c' has sizes %lld and %lld", label, (long long)dim,
                           (long long)v);
                return -1;
            }
        }
    }
    if (dim < 0)
        node_error(d, n, "output label '%c' does not appear in the inputs", label);
    return dim;
}

static bool infer_einsum(Node *n, DiagList *d) {
    const char *eq = node_attr_str(n, AK_equation, NULL);
    if (!eq) {
        node_error(d, n, "missing attribute 'equation'");
        return false;
    }
    const Type *ops[16];
    for (int i = 0; i < n->nops && i < 16; i++)
        ops[i] = op_type(n, i);
    EinsumSpec s;
    char err[256];
    if (!einsum_parse(eq, n->nops, ops, &s, err, sizeof err)) {
        node_error(d, n, "%s", err);
        return false;
    }
    for (int i = 1; i < n->nops; i++)
        if (!same_elem(n, d, 0, i))
            return false;
    for (int i = 0; i < n->nops; i++)
        for (int j = 0; j < s.rank[i]; j++)
            if (einsum_dim(n, d, &s, s.labels[i][j]) < 0)
                return false;
    Type r = {.elem = op_type(n, 0)->elem, .rank = s.out_rank};
    for (int o = 0; o < s.out_rank; o++) {
        if (memchr(s.out_labels, s.out_labels[o], (size_t)o)) {
            node_error(d, n, "output label '%c' appears twice", s.out_labels[o]);
            return false;
        }
        r.dims[o] = einsum_dim(n, d, &s, s.out_labels[o]);
        if (r.dims[o] < 0)
            return false;
    }
    n->res[0].type = r;
    return true;
}

static bool infer_det(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0);
    if (x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2]) {
        node_error(d, n, "operand must be [..., M, M]");
        return false;
    }
    n->res[0].type = *x;
    n->res[0].type.rank -= 2;
    return true;
}

/* ---- windows ------------------------------------------------------------ */

static bool fill_list(const Node *n, AttrKey key, int count, int64_t dflt, int64_t *out) {
    int k;
    const int64_t *v = node_attr_ints(n, key, &k);
    if (v && k != count)
        return false;
    for (int i = 0; i < count; i++)
        out[i] = v ? v[i] : dflt;
    return true;
}

bool window_from_node(const Node *n, int nspatial, const Type *kernel_from, Window *w) {
    memset(w, 0, sizeof *w);
    w->nspatial = nspatial;
    if (nspatial < 0 || nspatial > MAX_RANK - 2)
        return false;
    int kn;
    const int64_t *k = node_attr_ints(n, AK_kernel, &kn);
    if (k && kn != nspatial)
        return false;
    int64_t ksize = 1; /* the kernels walk every window position */
    for (int i = 0; i < nspatial; i++) {
        if (k)
            w->kernel[i] = k[i];
        else if (kernel_from)
            w->kernel[i] = kernel_from->dims[2 + i];
        else
            return false;
        if (w->kernel[i] < 1 || !mul_dims(ksize, w->kernel[i], &ksize))
            return false;
    }
    int64_t pads[2 * MAX_RANK];
    if (!fill_list(n, AK_strides, nspatial, 1, w->stride) ||
        !fill_list(n, AK_dilations, nspatial, 1, w->dilation) ||
        !fill_list(n, AK_pads, 2 * nspatial, 0, pads) ||
        !fill_list(n, AK_output_padding, nspatial, 0, w->out_padding))
        return false;
    /* A transposed convolution crops its pads from the output, so a
     * negative pad simply grows it (ONNX's reference computes such pads). */
    bool negative_ok = n->kind == NK_CONV_TRANSPOSE;
    for (int i = 0; i < nspatial; i++) {
        w->pad_begin[i] = pads[i];
        w->pad_end[i] = pads[nspatial + i];
        if (w->stride[i] < 1 || w->dilation[i] < 1 ||
            (!negative_ok && (w->pad_begin[i] < 0 || w->pad_end[i] < 0)))
            return false;
    }
    w->group = node_attr_int(n, AK_group, 1);
    w->ceil_mode = node_attr_int(n, AK_ceil_mode, 0) != 0;
    w->count_include_pad = node_attr_int(n, AK_count_include_pad, 0) != 0;
    return w->group >= 1;
}

int64_t window_out_size(const Window *w, int i, int64_t in) {
    int64_t span, padded, begin;
    if (!mul_dims(w->dilation[i], w->kernel[i] - 1, &span) || !add_dims(span, 1, &span) ||
        !add_dims(in, w->pad_begin[i], &begin) || !add_dims(begin, w->pad_end[i], &padded))
        return -1;
    int64_t avail = padded - span;
    if (avail < 0)
        return 0;
    if (!w->ceil_mode)
        return avail / w->stride[i] + 1;
    int64_t out = avail / w->stride[i] + (avail % w->stride[i] != 0) + 1;
    /* The last window must start inside the input or the begin padding. */
    int64_t last;
    if (!mul_dims(out - 1, w->stride[i], &last) || last >= begin)
        out--;
    return out;
}

/* Output sizes of a window over the spatial axes of x into r; false when
 * the attributes are so large that the arithmetic overflows. */
static bool window_out_sizes(Node *n, DiagList *d, const Window *win, const Type *x, Type *r) {
    for (int i = 0; i < win->nspatial; i++) {
        r->dims[2 + i] = window_out_size(win, i, x->dims[2 + i]);
        if (r->dims[2 + i] < 0) {
            node_error(d, n, "kernel, strides, pads or dilations too large");
            return false;
        }
    }
    return true;
}

/* Result of convolving operand ix with weight iw (kinds are the caller's). */
/* The output of a convolution of x by weights of type w (operand ix's and
 * iw's, or w given: qconv_packed's, whose channels are padded). */
static bool conv_shape_w(Node *n, DiagList *d, int ix, const Type *w, Type *out) {
    if (!need_rank(n, d, ix, 3, MAX_RANK))
        return false;
    const Type *x = op_type(n, ix);
    int ns = x->rank - 2;
    if (w->rank != x->rank) {
        char a[TYPE_STR_MAX], b[TYPE_STR_MAX];
        node_error(d, n, "weight %s does not match input %s", tstr(w, a), tstr(x, b));
        return false;
    }
    Window win;
    if (!window_from_node(n, ns, w, &win)) {
        node_error(d, n, "bad kernel, strides, pads, dilations or group");
        return false;
    }
    for (int i = 0; i < ns; i++) {
        if (win.kernel[i] != w->dims[2 + i]) {
            node_error(d, n, "kernel attribute does not match the weight's shape");
            return false;
        }
    }
    int64_t c = x->dims[1], m = w->dims[0], wc;
    if (c % win.group || m % win.group || !mul_dims(w->dims[1], win.group, &wc) || wc != c) {
        node_error(d, n, "input has %lld channels but weight expects %lld x group %lld",
                   (long long)c, (long long)w->dims[1], (long long)win.group);
        return false;
    }
    Type r = *x;
    r.dims[1] = m;
    if (!window_out_sizes(n, d, &win, x, &r))
        return false;
    *out = r;
    return true;
}

static bool conv_shape(Node *n, DiagList *d, int ix, int iw, Type *out) {
    return conv_shape_w(n, d, ix, op_type(n, iw), out);
}

static bool need_bias(Node *n, DiagList *d, int op, ElemKind k, int64_t m) {
    const Type *b = op_type(n, op);
    if (b->rank == 1 && b->dims[0] == m && b->elem == k)
        return true;
    node_error(d, n, "bias must be %s<%lld>", elem_name(k), (long long)m);
    return false;
}

/* A fused residual summand (operand 3 of a conv or winograd_conv) is read
 * at the positions the result is written: the result's type exactly, no
 * broadcast. */
static bool need_summand(Node *n, DiagList *d) {
    if (n->nops < 4 || type_equal(op_type(n, 3), &n->res[0].type))
        return true;
    char buf[TYPE_STR_MAX];
    node_error(d, n, "the summand must have the result's type %s", type_str(&n->res[0].type, buf));
    return false;
}

static bool infer_conv(Node *n, DiagList *d) {
    if (!same_elem(n, d, 0, 1) || !conv_shape(n, d, 0, 1, &n->res[0].type))
        return false;
    return (n->nops < 3 || need_bias(n, d, 2, op_type(n, 0)->elem, n->res[0].type.dims[1])) &&
           need_summand(n, d);
}

/* x [N,C,H,W] with u [alpha^2,M,C] (alpha^2 16 or 36): [N,M,H+pads-2,W+pads-2]. */
static bool infer_winograd_conv(Node *n, DiagList *d) {
    if (!same_elem(n, d, 0, 1) || !need_rank(n, d, 0, 4, 4) || !need_rank(n, d, 1, 3, 3))
        return false;
    const Type *x = op_type(n, 0), *u = op_type(n, 1);
    if (!wino_of_rows(u->dims[0]) || u->dims[2] != x->dims[1]) {
        node_error(d, n, "transformed filter must be <16 or 36 x M x %lld>", (long long)x->dims[1]);
        return false;
    }
    int k;
    const int64_t *p = node_attr_ints(n, AK_pads, &k);
    if (p && k != 4) {
        node_error(d, n, "pads must have 4 values");
        return false;
    }
    Type r = *x;
    r.dims[1] = u->dims[1];
    for (int i = 0; i < 2; i++) {
        int64_t size = x->dims[2 + i] + (p ? p[i] + p[2 + i] : 0) - 2;
        if ((p && (p[i] < 0 || p[2 + i] < 0 || p[i] > 2 || p[2 + i] > 2)) || size < 1) {
            node_error(d, n, "pads must be 0 to 2 and leave an output");
            return false;
        }
        r.dims[2 + i] = size;
    }
    n->res[0].type = r;
    return (n->nops < 3 || need_bias(n, d, 2, x->elem, r.dims[1])) && need_summand(n, d);
}

/* x [N, C, in...] and dy [N, M, out...], out the conv's output sizes over
 * x: [M, C/group, kernel...]. */
static bool infer_conv_weight_grad(Node *n, DiagList *d) {
    if (!same_elem(n, d, 0, 1) || !need_rank(n, d, 0, 3, MAX_RANK))
        return false;
    const Type *x = op_type(n, 0), *dy = op_type(n, 1);
    int ns = x->rank - 2;
    Window win;
    int kn;
    if (dy->rank != x->rank || !node_attr_ints(n, AK_kernel, &kn) ||
        !window_from_node(n, ns, NULL, &win)) {
        node_error(d, n, "dy must have x's rank, and the kernel, strides, pads, dilations "
                         "and group must be valid");
        return false;
    }
    if (dy->dims[0] != x->dims[0] || x->dims[1] % win.group || dy->dims[1] % win.group) {
        node_error(d, n, "x has %lld images of %lld channels and dy %lld of %lld: the batch "
                   "must agree and group %lld divide both channel counts",
                   (long long)x->dims[0], (long long)x->dims[1], (long long)dy->dims[0],
                   (long long)dy->dims[1], (long long)win.group);
        return false;
    }
    Type r = *dy;
    r.dims[0] = dy->dims[1];
    r.dims[1] = x->dims[1] / win.group;
    for (int i = 0; i < ns; i++) {
        int64_t out = window_out_size(&win, i, x->dims[2 + i]);
        if (out != dy->dims[2 + i]) {
            node_error(d, n, "dy's spatial axis %d is %lld; the window over x gives %lld", i,
                       (long long)dy->dims[2 + i], (long long)out);
            return false;
        }
        r.dims[2 + i] = win.kernel[i];
    }
    n->res[0].type = r;
    return true;
}

static bool infer_conv_transpose(Node *n, DiagList *d) {
    if (!same_elem(n, d, 0, 1) || !need_rank(n, d, 0, 3, MAX_RANK))
        return false;
    const Type *x = op_type(n, 0), *w = op_type(n, 1);
    int ns = x->rank - 2;
    Window win;
    if (w->rank != x->rank || !window_from_node(n, ns, w, &win)) {
        node_error(d, n, "bad weight shape or window attributes");
        return false;
    }
    if (w->dims[0] != x->dims[1] || x->dims[1] % win.group) {
        node_error(d, n, "input has %lld channels but weight has %lld", (long long)x->dims[1],
                   (long long)w->dims[0]);
        return false;
    }
    for (int i = 0; i < ns; i++) {
        if (win.kernel[i] != w->dims[2 + i]) {
            node_error(d, n, "kernel attribute does not match the weight's shape");
            return false;
        }
    }
    int64_t m;
    if (!mul_dims(w->dims[1], win.group, &m)) {
        node_error(d, n, "group too large");
        return false;
    }
    if (n->nops == 3) {
        const Type *b = op_type(n, 2);
        if (b->rank != 1 || b->dims[0] != m || b->elem != x->elem) {
            node_error(d, n, "bias must be %s<%lld>", elem_name(x->elem), (long long)m);
            return false;
        }
    }
    Type r = *x;
    r.dims[1] = m;
    for (int i = 0; i < ns; i++) {
        /* stride * (in - 1) + output_padding + (kernel - 1) * dilation + 1 - pads */
        int64_t a, b, size;
        if (!mul_dims(win.stride[i], x->dims[2 + i] - 1, &a) ||
            !mul_dims(win.kernel[i] - 1, win.dilation[i], &b) || !add_dims(a, b, &size) ||
            !add_dims(size, win.out_padding[i], &size) || !add_dims(size, 1, &size) ||
            !add_dims(size, -win.pad_begin[i], &size) || !add_dims(size, -win.pad_end[i], &size)) {
            node_error(d, n, "output size overflows");
            return false;
        }
        r.dims[2 + i] = size;
        if (r.dims[2 + i] < 0) {
            node_error(d, n, "negative output size");
            return false;
        }
    }
    n->res[0].type = r;
    return true;
}

static bool infer_pool(Node *n, DiagList *d) {
    if (!need_rank(n, d, 0, 3, MAX_RANK))
        return false;
    const Type *x = op_type(n, 0);
    Window win;
    if (!window_from_node(n, x->rank - 2, NULL, &win)) {
        node_error(d, n, "bad kernel, strides, pads or dilations");
        return false;
    }
    Type r = *x;
    if (!window_out_sizes(n, d, &win, x, &r))
        return false;
    n->res[0].type = r;
    if (n->nres == 2) {
        n->res[1].type = r;
        n->res[1].type.elem = ELEM_I64;
    }
    return true;
}

static bool infer_global_pool(Node *n, DiagList *d) {
    if (!need_rank(n, d, 0, 3, MAX_RANK))
        return false;
    Type r = *op_type(n, 0);
    for (int i = 2; i < r.rank; i++)
        r.dims[i] = 1;
    n->res[0].type = r;
    return true;
}

/* ---- normalisation ------------------------------------------------------ */

static bool per_channel(Node *n, DiagList *d, int op, int64_t c) {
    const Type *t = op_type(n, op);
    if (t->rank == 1 && t->dims[0] == c && elem_is_float(t->elem))
        return true;
    char b[TYPE_STR_MAX];
    node_error(d, n, "operand %d must be a vector of %lld channels, got %s", op, (long long)c,
               tstr(t, b));
    return false;
}

static bool infer_batch_norm(Node *n, DiagList *d) {
    if (!need_rank(n, d, 0, 2, MAX_RANK))
        return false;
    int64_t c = op_type(n, 0)->dims[1];
    for (int i = 1; i < 5; i++)
        if (!per_channel(n, d, i, c))
            return false;
    n->res[0].type = *op_type(n, 0);
    return true;
}

static bool infer_instance_norm(Node *n, DiagList *d) {
    if (!need_rank(n, d, 0, 3, MAX_RANK))
        return false;
    int64_t c = op_type(n, 0)->dims[1];
    if (!per_channel(n, d, 1, c) || !per_channel(n, d, 2, c))
        return false;
    n->res[0].type = *op_type(n, 0);
    return true;
}

static bool infer_layer_norm(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0);
    int axis;
    if (!axis_normalize(node_attr_int(n, AK_axis, -1), x->rank, &axis)) {
        node_error(d, n, "axis out of range");
        return false;
    }
    Type norm = {.elem = x->elem, .rank = x->rank - axis};
    for (int i = axis; i < x->rank; i++)
        norm.dims[i - axis] = x->dims[i];
    for (int i = 1; i < n->nops; i++) {
        Type t;
        if (!type_broadcast(&norm, op_type(n, i), &t) || !type_same_shape(&t, &norm)) {
            node_error(d, n, "operand %d does not broadcast to the normalised axes", i);
            return false;
        }
    }
    n->res[0].type = *x;
    for (int i = 1; i < n->nres; i++) {
        Type s = *x;
        s.elem = ELEM_F32;
        for (int j = axis; j < x->rank; j++)
            s.dims[j] = 1;
        n->res[i].type = s;
    }
    return true;
}

static bool infer_axis_op(Node *n, DiagList *d) {
    int axis;
    const Type *x = op_type(n, 0);
    if (!axis_normalize(node_attr_int(n, AK_axis, -1), x->rank > 0 ? x->rank : 1, &axis)) {
        node_error(d, n, "axis %lld out of range for rank %d",
                   (long long)node_attr_int(n, AK_axis, -1), x->rank);
        return false;
    }
    n->res[0].type = *x;
    return true;
}

/* ---- reductions --------------------------------------------------------- */

uint32_t reduce_axes_mask(const Node *n, int rank) {
    int k;
    const int64_t *axes = node_attr_ints(n, AK_axes, &k);
    uint32_t mask = 0;
    if (!axes || k == 0)
        return rank ? (1u << rank) - 1 : 0;
    for (int i = 0; i < k; i++) {
        int a;
        if (axis_normalize(axes[i], rank, &a))
            mask |= 1u << a;
    }
    return mask;
}

static bool infer_reduce(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0);
    int k;
    const int64_t *axes = node_attr_ints(n, AK_axes, &k);
    for (int i = 0; i < k; i++) {
        int a;
        if (!axis_normalize(axes[i], x->rank, &a)) {
            node_error(d, n, "axis %lld out of range for rank %d", (long long)axes[i], x->rank);
            return false;
        }
    }
    uint32_t mask = reduce_axes_mask(n, x->rank);
    bool keep = node_attr_int(n, AK_keepdims, 1) != 0;
    Type r = {.elem = x->elem};
    for (int i = 0; i < x->rank; i++) {
        if (!(mask & (1u << i)))
            r.dims[r.rank++] = x->dims[i];
        else if (keep)
            r.dims[r.rank++] = 1;
    }
    n->res[0].type = r;
    return true;
}

static bool infer_arg_reduce(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0);
    int axis;
    if (!axis_normalize(node_attr_int(n, AK_axis, 0), x->rank, &axis)) {
        node_error(d, n, "axis out of range");
        return false;
    }
    if (x->dims[axis] == 0) {
        node_error(d, n, "reduced axis is empty");
        return false;
    }
    bool keep = node_attr_int(n, AK_keepdims, 1) != 0;
    Type r = {.elem = ELEM_I64};
    for (int i = 0; i < x->rank; i++) {
        if (i != axis)
            r.dims[r.rank++] = x->dims[i];
        else if (keep)
            r.dims[r.rank++] = 1;
    }
    n->res[0].type = r;
    return true;
}

/* ---- data movement ------------------------------------------------------ */

static bool infer_reshape(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0);
    Type *r = &n->res[0].type;
    /* One declared dynamic dimension holds the elements the others leave
     * (ONNX's -1 on a bounded-dynamic input). */
    if (r->dyn && !(r->dyn & (r->dyn - 1))) {
        int dd = __builtin_ctz(r->dyn);
        int64_t rest = 1;
        for (int i = 0; i < r->rank; i++)
            if (i != dd)
                rest *= r->dims[i];
        if (rest > 0 && type_numel(x) % rest == 0)
            r->dims[dd] = type_numel(x) / rest;
    }
    if (r->elem != x->elem || type_numel(r) != type_numel(x)) {
        char a[TYPE_STR_MAX], b[TYPE_STR_MAX];
        node_error(d, n, "cannot reshape %s to %s", tstr(x, a), tstr(r, b));
        return false;
    }
    return true;
}

static bool infer_flatten(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0);
    int64_t axis = node_attr_int(n, AK_axis, 1);
    if (axis < 0)
        axis += x->rank;
    if (axis < 0 || axis > x->rank) {
        node_error(d, n, "axis out of range");
        return false;
    }
    int64_t a = 1, b = 1;
    for (int i = 0; i < x->rank; i++)
        *(i < axis ? &a : &b) *= x->dims[i];
    n->res[0].type = type_make(x->elem, 2, (int64_t[]){a, b});
    return true;
}

static bool infer_squeeze(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0);
    int k;
    const int64_t *axes = node_attr_ints(n, AK_axes, &k);
    uint32_t mask = 0;
    for (int i = 0; i < k; i++) {
        int a;
        if (!axis_normalize(axes[i], x->rank, &a) || x->dims[a] != 1) {
            node_error(d, n, "cannot squeeze axis %lld", (long long)axes[i]);
            return false;
        }
        mask |= 1u << a;
    }
    Type r = {.elem = x->elem};
    for (int i = 0; i < x->rank; i++)
        if (axes ? !(mask & (1u << i)) : x->dims[i] != 1)
            r.dims[r.rank++] = x->dims[i];
    n->res[0].type = r;
    return true;
}

static bool infer_unsqueeze(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0);
    int k;
    const int64_t *axes = node_attr_ints(n, AK_axes, &k);
    int rank = x->rank + k;
    if (!axes || rank > MAX_RANK) {
        node_error(d, n, "missing axes or rank too large");
        return false;
    }
    uint32_t mask = 0;
    for (int i = 0; i < k; i++) {
        int a;
        if (!axis_normalize(axes[i], rank, &a) || (mask & (1u << a))) {
            node_error(d, n, "bad axis %lld", (long long)axes[i]);
            return false;
        }
        mask |= 1u << a;
    }
    Type r = {.elem = x->elem, .rank = rank};
    for (int i = 0, j = 0; i < rank; i++)
        r.dims[i] = (mask & (1u << i)) ? 1 : x->dims[j++];
    n->res[0].type = r;
    return true;
}

static bool infer_transpose(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0);
    int k;
    const int64_t *perm = node_attr_ints(n, AK_perm, &k);
    if (perm && k != x->rank) {
        node_error(d, n, "perm has %d entries for rank %d", k, x->rank);
        return false;
    }
    Type r = {.elem = x->elem, .rank = x->rank};
    uint32_t seen = 0;
    for (int i = 0; i < x->rank; i++) {
        int64_t p = perm ? perm[i] : x->rank - 1 - i;
        if (p < 0 || p >= x->rank || (seen & (1u << p))) {
            node_error(d, n, "perm is not a permutation");
            return false;
        }
        seen |= 1u << p;
        r.dims[i] = x->dims[p];
    }
    n->res[0].type = r;
    return true;
}

static bool infer_concat(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0);
    int axis;
    if (!axis_normalize(node_attr_int(n, AK_axis, 0), x->rank, &axis)) {
        node_error(d, n, "axis out of range");
        return false;
    }
    Type r = *x;
    for (int i = 1; i < n->nops; i++) {
        const Type *t = op_type(n, i);
        bool ok = t->elem == x->elem && t->rank == x->rank;
        for (int j = 0; ok && j < x->rank; j++)
            ok = j == axis || t->dims[j] == x->dims[j];
        if (!ok) {
            char a[TYPE_STR_MAX], b[TYPE_STR_MAX];
            node_error(d, n, "operand %d %s does not fit operand 0 %s", i, tstr(t, a),
                       tstr(x, b));
            return false;
        }
        if (!add_dims(r.dims[axis], t->dims[axis], &r.dims[axis])) {
            node_error(d, n, "result too large");
            return false;
        }
    }
    n->res[0].type = r;
    return true;
}

static bool infer_split(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0);
    int axis;
    if (!axis_normalize(node_attr_int(n, AK_axis, 0), x->rank, &axis)) {
        node_error(d, n, "axis out of range");
        return false;
    }
    int k;
    const int64_t *split = node_attr_ints(n, AK_split, &k);
    int64_t total = 0;
    if (split && k != n->nres) {
        node_error(d, n, "split has %d sizes for %d results", k, n->nres);
        return false;
    }
    for (int i = 0; i < n->nres; i++) {
        int64_t s = split ? split[i] : x->dims[axis] / n->nres;
        if (s < 0) {
            node_error(d, n, "negative split size");
            return false;
        }
        n->res[i].type = *x;
        n->res[i].type.dims[axis] = s;
        if (!add_dims(total, s, &total)) {
            node_error(d, n, "split sizes overflow");
            return false;
        }
    }
    if (total != x->dims[axis]) {
        node_error(d, n, "split sizes add up to %lld, axis has %lld", (long long)total,
                   (long long)x->dims[axis]);
        return false;
    }
    return true;
}

void slice_params(const Node *n, const Type *in, int64_t *start, int64_t *step, int64_t *count) {
    slice_params_ends(n, in, NULL, start, step, count);
}

void slice_params_ends(const Node *n, const Type *in, const int64_t *ends, int64_t *start,
                       int64_t *step, int64_t *count) {
    int ks, ke, kt;
    const int64_t *s = node_attr_ints(n, AK_starts, &ks);
    const int64_t *e = node_attr_ints(n, AK_ends, &ke);
    const int64_t *t = node_attr_ints(n, AK_steps, &kt);
    if (ends) {
        e = ends;
        ke = in->rank;
    }
    for (int i = 0; i < in->rank; i++)
        slice_axis(in->dims[i], s && i < ks, s && i < ks ? s[i] : 0, e && i < ke,
                   e && i < ke ? e[i] : 0, t && i < kt ? t[i] : 1, &start[i], &step[i],
                   &count[i]);
}

static bool infer_slice(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0);
    int k;
    const int64_t *steps = node_attr_ints(n, AK_steps, &k);
    for (int i = 0; i < k; i++) {
        if (steps[i] == 0) {
            node_error(d, n, "step 0");
            return false;
        }
    }
    AttrKey keys[3] = {AK_starts, AK_ends, AK_steps};
    for (int i = 0; i < 3; i++) {
        node_attr_ints(n, keys[i], &k);
        if (node_has_attr(n, keys[i]) && k != x->rank) {
            node_error(d, n, "%s has %d entries for rank %d", attr_key_name(keys[i]), k,
                       x->rank);
            return false;
        }
    }
    int64_t start[MAX_RANK], step[MAX_RANK], count[MAX_RANK];
    slice_params(n, x, start, step, count);
    Type r = *x;
    for (int i = 0; i < x->rank; i++)
        r.dims[i] = count[i];
    if (n->nops > 1) { /* run-time ends: their axes are bounded-dynamic */
        int na;
        const int64_t *axes = node_attr_ints(n, AK_axes, &na);
        const Type *e = op_type(n, 1);
        if (e->elem != ELEM_I64 || e->rank != 1 || !axes || e->dims[0] != na) {
            node_error(d, n, "operand 1 (the ends) must be i64<%d>, one per entry of axes", na);
            return false;
        }
        for (int i = 0; i < na; i++) {
            if (axes[i] < 0 || axes[i] >= x->rank) {
                node_error(d, n, "axis %lld out of range", (long long)axes[i]);
                return false;
            }
            r.dyn |= (uint8_t)(1u << axes[i]);
        }
    }
    n->res[0].type = r;
    return true;
}

static bool infer_gather(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0), *idx = op_type(n, 1);
    int axis;
    if (!need_int_indices(n, d, 1))
        return false;
    if (!axis_normalize(node_attr_int(n, AK_axis, 0), x->rank, &axis)) {
        node_error(d, n, "axis out of range");
        return false;
    }
    if (x->rank - 1 + idx->rank > MAX_RANK) {
        node_error(d, n, "result rank too large");
        return false;
    }
    Type r = {.elem = x->elem};
    for (int i = 0; i < axis; i++)
        r.dims[r.rank++] = x->dims[i];
    for (int i = 0; i < idx->rank; i++)
        r.dims[r.rank++] = idx->dims[i];
    for (int i = axis + 1; i < x->rank; i++)
        r.dims[r.rank++] = x->dims[i];
    n->res[0].type = r;
    return true;
}

/* Indices of gather_elements and scatter_elements address the data along
 * `axis` only: on every other axis they must not reach past the data. */
static bool fits_beside_axis(Node *n, DiagList *d, const Type *x, const Type *idx, int axis) {
    if (idx->rank != x->rank) {
        node_error(d, n, "indices must have the data's rank %d, got %d", x->rank, idx->rank);
        return false;
    }
    for (int i = 0; i < x->rank; i++) {
        if (i != axis && idx->dims[i] > x->dims[i]) {
            char a[TYPE_STR_MAX], b[TYPE_STR_MAX];
            node_error(d, n, "indices %s reach past data %s on axis %d", tstr(idx, a),
                       tstr(x, b), i);
            return false;
        }
    }
    return true;
}

static bool infer_gather_elements(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0), *idx = op_type(n, 1);
    int axis;
    if (!need_int_indices(n, d, 1))
        return false;
    if (!axis_normalize(node_attr_int(n, AK_axis, 0), x->rank, &axis)) {
        node_error(d, n, "axis out of range");
        return false;
    }
    if (!fits_beside_axis(n, d, x, idx, axis))
        return false;
    n->res[0].type = *idx;
    n->res[0].type.elem = x->elem;
    return true;
}

/* The leading batch_dims axes of data and indices pair up one to one. */
static bool same_batch(Node *n, DiagList *d, const Type *x, const Type *idx, int64_t b) {
    for (int64_t i = 0; i < b; i++) {
        if (x->dims[i] != idx->dims[i]) {
            node_error(d, n, "batch axis %lld has size %lld in data but %lld in indices",
                       (long long)i, (long long)x->dims[i], (long long)idx->dims[i]);
            return false;
        }
    }
    return true;
}

static bool infer_gather_nd(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0), *idx = op_type(n, 1);
    int64_t b = node_attr_int(n, AK_batch_dims, 0);
    if (!need_int_indices(n, d, 1))
        return false;
    if (idx->rank < 1) {
        node_error(d, n, "indices must have rank >= 1");
        return false;
    }
    int64_t last = idx->dims[idx->rank - 1];
    if (b < 0 || b >= idx->rank || b >= x->rank || last > x->rank - b) {
        node_error(d, n, "indices' last dimension %lld too large for data rank %d",
                   (long long)last, x->rank);
        return false;
    }
    if (!same_batch(n, d, x, idx, b))
        return false;
    Type r = {.elem = x->elem};
    for (int i = 0; i < idx->rank - 1; i++)
        r.dims[r.rank++] = idx->dims[i];
    for (int64_t i = b + last; i < x->rank; i++) {
        if (r.rank >= MAX_RANK) {
            node_error(d, n, "result rank too large");
            return false;
        }
        r.dims[r.rank++] = x->dims[i];
    }
    n->res[0].type = r;
    return true;
}

/* Is v one of ok[] (ending in 0)? */
static bool enum_in(int v, const int *ok) {
    for (; *ok; ok++)
        if (*ok == v)
            return true;
    return false;
}

/* The values of an ATTR_ENUM attribute this kind takes (ok[] ends in 0);
 * an absent attribute is dflt. */
static bool enum_allowed(Node *n, DiagList *d, AttrKey key, int dflt, const int *ok) {
    int v = node_attr_enum(n, key, dflt);
    if (enum_in(v, ok))
        return true;
    node_error(d, n, "%s=%s does not apply to %s", attr_key_name(key),
               enum_name(attr_key_set(key), v), node_kind_name(n->kind));
    return false;
}

static bool known_reduction(Node *n, DiagList *d) {
    return enum_allowed(n, d, AK_reduction, RED_NONE,
                        (const int[]){RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN, 0});
}

/* scatter_nd: updates = indices.shape[:-1] + data.shape[indices.shape[-1]:]. */
static bool scatter_nd_fits(Node *n, DiagList *d, const Type *x, const Type *idx,
                            const Type *upd) {
    int64_t last = idx->rank ? idx->dims[idx->rank - 1] : -1;
    bool ok = idx->rank >= 1 && last <= x->rank && upd->rank == idx->rank - 1 + x->rank - last;
    for (int i = 0; ok && i < idx->rank - 1; i++)
        ok = upd->dims[i] == idx->dims[i];
    for (int64_t i = last; ok && i < x->rank; i++)
        ok = upd->dims[idx->rank - 1 + i - last] == x->dims[i];
    if (!ok) {
        char a[TYPE_STR_MAX], b[TYPE_STR_MAX], c[TYPE_STR_MAX];
        node_error(d, n, "updates %s do not fit indices %s into data %s", tstr(upd, a),
                   tstr(idx, b), tstr(x, c));
    }
    return ok;
}

static bool infer_scatter(Node *n, DiagList *d) {
    if (!need_int_indices(n, d, 1) || !same_elem(n, d, 0, 2) || !known_reduction(n, d))
        return false;
    const Type *x = op_type(n, 0), *idx = op_type(n, 1), *upd = op_type(n, 2);
    if (n->kind == NK_SCATTER_ELEMENTS) {
        int axis;
        if (!axis_normalize(node_attr_int(n, AK_axis, 0), x->rank, &axis)) {
            node_error(d, n, "axis out of range");
            return false;
        }
        if (!fits_beside_axis(n, d, x, idx, axis))
            return false;
        if (!type_same_shape(idx, upd)) {
            node_error(d, n, "indices and updates must have one shape");
            return false;
        }
    } else if (!scatter_nd_fits(n, d, x, idx, upd)) {
        return false;
    }
    n->res[0].type = *x;
    return true;
}

static bool infer_expand(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0);
    Type *r = &n->res[0].type, t;
    if (n->nops > 1) { /* a run-time shape: the declared bounds must hold x */
        const Type *s = op_type(n, 1);
        if (s->elem != ELEM_I64 || s->rank != 1 || s->dims[0] > r->rank) {
            node_error(d, n, "operand 1 (the shape) must be i64 with at most %d elements", r->rank);
            return false;
        }
        /* x's size is 1, the result's, or within a dynamic result's bound
         * (both sizes known only at run time, which the kernel checks). */
        bool ok = r->elem == x->elem && x->rank <= r->rank;
        for (int i = 0; ok && i < x->rank; i++) {
            int64_t xd = x->dims[i], rd = r->dims[r->rank - x->rank + i];
            ok = xd == 1 || xd == rd || (type_dim_dynamic(r, r->rank - x->rank + i) && xd <= rd);
        }
        if (!ok) {
            char a[TYPE_STR_MAX], b[TYPE_STR_MAX];
            node_error(d, n, "cannot expand %s to %s", tstr(x, a), tstr(r, b));
        }
        return ok;
    }
    if (r->elem != x->elem || !type_broadcast(x, r, &t) || !type_same_shape(&t, r)) {
        char a[TYPE_STR_MAX], b[TYPE_STR_MAX];
        node_error(d, n, "cannot expand %s to %s", tstr(x, a), tstr(r, b));
        return false;
    }
    return true;
}

/* Tile by run-time repeats: the declared bounds stand (the importer took
 * them from the repeats' value ranges); the kernel checks the sizes. */
static bool infer_tile_run_time(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0), *rep = op_type(n, 1), *r = &n->res[0].type;
    if (rep->elem != ELEM_I64 || rep->rank != 1 || rep->dims[0] != x->rank) {
        node_error(d, n, "operand 1 (the repeats) must be i64<%d>", x->rank);
        return false;
    }
    if (r->elem != x->elem || r->rank != x->rank) {
        char a[TYPE_STR_MAX], b[TYPE_STR_MAX];
        node_error(d, n, "cannot tile %s to %s", tstr(x, a), tstr(r, b));
        return false;
    }
    return true;
}

static bool infer_tile(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0);
    if (n->nops > 1)
        return infer_tile_run_time(n, d);
    int k;
    const int64_t *rep = node_attr_ints(n, AK_repeats, &k);
    if (k != x->rank) {
        node_error(d, n, "repeats has %d entries for rank %d", k, x->rank);
        return false;
    }
    Type r = *x;
    for (int i = 0; i < x->rank; i++) {
        if (rep[i] < 0) {
            node_error(d, n, "negative repeat");
            return false;
        }
        if (!mul_dims(r.dims[i], rep[i], &r.dims[i])) {
            node_error(d, n, "result too large");
            return false;
        }
    }
    int64_t numel;
    if (!type_numel_checked(&r, &numel)) {
        node_error(d, n, "result too large");
        return false;
    }
    n->res[0].type = r;
    return true;
}

static bool infer_pad(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0);
    int k;
    const int64_t *pads = node_attr_ints(n, AK_pads, &k);
    if (k != 2 * x->rank) {
        node_error(d, n, "pads has %d entries for rank %d", k, x->rank);
        return false;
    }
    int mode = node_attr_enum(n, AK_mode, MODE_CONSTANT);
    if (!enum_allowed(n, d, AK_mode, MODE_CONSTANT,
                      (const int[]){MODE_CONSTANT, MODE_REFLECT, MODE_EDGE, 0}))
        return false;
    Type r = *x;
    for (int i = 0; i < x->rank; i++) {
        if (!add_dims(r.dims[i], pads[i], &r.dims[i]) ||
            !add_dims(r.dims[i], pads[x->rank + i], &r.dims[i])) {
            node_error(d, n, "result too large");
            return false;
        }
        if (r.dims[i] < 0 || (mode != MODE_CONSTANT && x->dims[i] == 0 && r.dims[i] > 0)) {
            node_error(d, n, "bad padding for axis %d", i);
            return false;
        }
    }
    n->res[0].type = r;
    return true;
}

static bool infer_depth_to_space(Node *n, DiagList *d) {
    if (!need_rank(n, d, 0, 4, 4))
        return false;
    const Type *x = op_type(n, 0);
    int64_t b = node_attr_int(n, AK_blocksize, 0), bb;
    if (!enum_allowed(n, d, AK_mode, MODE_DCR, (const int[]){MODE_DCR, MODE_CRD, 0}))
        return false;
    if (b < 1 || !mul_dims(b, b, &bb) || x->dims[1] % bb) {
        node_error(d, n, "channels not divisible by blocksize squared");
        return false;
    }
    Type r = *x;
    r.dims[1] /= bb;
    if (!mul_dims(r.dims[2], b, &r.dims[2]) || !mul_dims(r.dims[3], b, &r.dims[3])) {
        node_error(d, n, "result too large");
        return false;
    }
    n->res[0].type = r;
    return true;
}

static bool infer_space_to_depth(Node *n, DiagList *d) {
    if (!need_rank(n, d, 0, 4, 4))
        return false;
    const Type *x = op_type(n, 0);
    int64_t b = node_attr_int(n, AK_blocksize, 0);
    if (b < 1 || b > INT32_MAX || x->dims[2] % b || x->dims[3] % b) {
        node_error(d, n, "spatial size not divisible by blocksize");
        return false;
    }
    Type r = *x;
    int64_t bb;
    if (!mul_dims(b, b, &bb) || !mul_dims(r.dims[1], bb, &r.dims[1])) {
        node_error(d, n, "result too large");
        return false;
    }
    r.dims[2] /= b;
    r.dims[3] /= b;
    n->res[0].type = r;
    return true;
}

/* Every nearest_mode applies, and every transformation but roi_align's. */
static bool resize_modes_ok(const Node *n) {
    int mode = node_attr_enum(n, AK_mode, MODE_NEAREST);
    return enum_in(mode, (const int[]){MODE_NEAREST, MODE_LINEAR, MODE_CUBIC, 0}) &&
           node_attr_enum(n, AK_coordinate_transformation_mode, CTM_HALF_PIXEL) !=
               CTM_OUTPUT_HALF_PIXEL &&
           !(node_attr_int(n, AK_antialias, 0) && mode == MODE_NEAREST);
}

static bool infer_resize(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0);
    Type *r = &n->res[0].type;
    int k, kr;
    const float *scales = node_attr_floats(n, AK_scales, &k);
    node_attr_floats(n, AK_roi, &kr);
    if (r->elem != x->elem || r->rank != x->rank || (k && k != x->rank) ||
        (kr && kr != 2 * x->rank)) {
        node_error(d, n, "result must keep the input's kind and rank; scales one per axis, "
                         "roi two");
        return false;
    }
    if (!resize_modes_ok(n)) {
        node_error(d, n, "unknown mode, coordinate_transformation_mode or nearest_mode, or "
                         "antialias with nearest");
        return false;
    }
    /* Given scales must agree with the sizes (floor or round of scale * in). */
    for (int i = 0; i < x->rank; i++) {
        if ((scales && !(scales[i] > 0 &&
                         fabs((double)r->dims[i] - scales[i] * (double)x->dims[i]) <= 1)) ||
            r->dims[i] < 0 || (r->dims[i] > 0 && x->dims[i] == 0)) {
            node_error(d, n, "cannot resize axis %d from %lld to %lld", i,
                       (long long)x->dims[i], (long long)r->dims[i]);
            return false;
        }
    }
    return true;
}

static bool infer_one_hot(Node *n, DiagList *d) {
    const Type *idx = op_type(n, 0), *vals = op_type(n, 1);
    Type *r = &n->res[0].type;
    if (vals->rank != 1 || vals->dims[0] != 2) {
        node_error(d, n, "values must be a vector of 2 elements");
        return false;
    }
    int axis;
    if (r->rank != idx->rank + 1 || r->elem != vals->elem ||
        !axis_normalize(node_attr_int(n, AK_axis, -1), r->rank, &axis)) {
        node_error(d, n, "result must add one axis to the indices");
        return false;
    }
    for (int i = 0, j = 0; i < r->rank; i++) {
        if (i == axis)
            continue;
        if (r->dims[i] != idx->dims[j++]) {
            node_error(d, n, "result shape does not match the indices");
            return false;
        }
    }
    return true;
}

static bool infer_top_k(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0);
    int axis;
    if (!axis_normalize(node_attr_int(n, AK_axis, -1), x->rank, &axis)) {
        node_error(d, n, "axis out of range");
        return false;
    }
    /* k as operand 1 is a run-time value: as many as the axis holds. */
    bool run_time_k = n->nops > 1;
    if (run_time_k && (type_numel(op_type(n, 1)) != 1 || op_type(n, 1)->elem != ELEM_I64)) {
        node_error(d, n, "operand 1 (k) must be one i64");
        return false;
    }
    int64_t k = run_time_k ? x->dims[axis] : node_attr_int(n, AK_k, -1);
    if (k < 0 || k > x->dims[axis]) {
        node_error(d, n, "k=%lld out of range for axis of size %lld", (long long)k,
                   (long long)x->dims[axis]);
        return false;
    }
    Type r = *x;
    r.dims[axis] = k;
    if (run_time_k)
        r.dyn |= (uint8_t)(1u << axis);
    n->res[0].type = r;
    r.elem = ELEM_I64;
    n->res[1].type = r;
    return true;
}

static bool infer_reverse_sequence(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0);
    if (!need_int_indices(n, d, 1))
        return false;
    int64_t b = node_attr_int(n, AK_batch_axis, 1), t = node_attr_int(n, AK_time_axis, 0);
    if (x->rank < 2 || b < 0 || t < 0 || b > 1 || t > 1 || b == t ||
        op_type(n, 1)->rank != 1 || op_type(n, 1)->dims[0] != x->dims[b]) {
        node_error(d, n, "bad batch/time axes or sequence lengths");
        return false;
    }
    n->res[0].type = *x;
    return true;
}

/* ---- recurrent layers ----------------------------------------------------- */

/* ONNX's activation functions for recurrent layers: name, whether alpha and
 * beta apply, and their defaults (those of the ONNX operator of that name). */
static const struct {
    const char *name;
    bool alpha, beta;
    float alpha_dflt, beta_dflt;
} rnn_acts[] = {
#define RNN_ACT_ROW(E, nm, a, b, ad, bd) [RNN_ACT_##E] = {nm, a, b, ad, bd},
    RNN_ACT_TABLE(RNN_ACT_ROW)
#undef RNN_ACT_ROW
};

bool rnn_act_from_name(const char *name, size_t len, RnnAct *out) {
    for (size_t k = 0; k < sizeof rnn_acts / sizeof rnn_acts[0]; k++) {
        if (strlen(rnn_acts[k].name) != len || strncasecmp(rnn_acts[k].name, name, len))
            continue;
        *out = (RnnAct){(RnnActKind)k, rnn_acts[k].alpha_dflt, rnn_acts[k].beta_dflt};
        return true;
    }
    return false;
}

const char *rnn_act_name(RnnActKind k) {
    return rnn_acts[k].name;
}

void rnn_act_uses(RnnActKind k, bool *alpha, bool *beta) {
    *alpha = rnn_acts[k].alpha;
    *beta = rnn_acts[k].beta;
}

/* The activations attribute: nact names per direction, comma-separated,
 * with alpha and beta lists aligned to them when present. Absent, each
 * direction takes ONNX's default list. */
static bool rnn_parse_acts(const Node *n, RnnGeom *g, char *err, size_t errlen) {
    static const char *const dflt[] = {[NK_RNN] = "Tanh", [NK_GRU] = "Sigmoid,Tanh",
                                       [NK_LSTM] = "Sigmoid,Tanh,Tanh"};
    const char *given = node_attr_str(n, AK_activations, NULL);
    int na, nb, want = g->dirs * g->nact;
    const float *alpha = node_attr_floats(n, AK_activation_alpha, &na);
    const float *beta = node_attr_floats(n, AK_activation_beta, &nb);
    if ((alpha && na != want) || (beta && nb != want)) {
        snprintf(err, errlen, "activation_alpha and activation_beta need %d entries", want);
        return false;
    }
    const char *list = given ? given : dflt[n->kind], *p = list;
    for (int i = 0; i < want; i++) {
        if (!given && i % g->nact == 0)
            p = list;
        else if (i > 0 && *p++ != ',')
            break;
        size_t len = strcspn(p, ",");
        RnnAct *act = &g->act[i / g->nact][i % g->nact];
        if (!rnn_act_from_name(p, len, act)) {
            snprintf(err, errlen, "unknown activation '%.*s'", (int)len, p);
            return false;
        }
        act->alpha = alpha ? alpha[i] : act->alpha;
        act->beta = beta ? beta[i] : act->beta;
        p += len;
        if (i == want - 1 && !*p)
            return true;
    }
    snprintf(err, errlen, "activations must name %d functions", want);
    return false;
}

bool rnn_geom(const Node *n, RnnGeom *g, char *err, size_t errlen) {
    memset(g, 0, sizeof *g);
    int dir = node_attr_enum(n, AK_direction, DIR_FORWARD);
    if (!enum_in(dir, (const int[]){DIR_FORWARD, DIR_REVERSE, DIR_BIDIRECTIONAL, 0})) {
        snprintf(err, errlen, "direction=%s does not apply", enum_name(ES_DIR, dir));
        return false;
    }
    g->dirs = dir == DIR_BIDIRECTIONAL ? 2 : 1;
    g->reverse = dir == DIR_REVERSE;
    g->gates = n->kind == NK_RNN ? 1 : n->kind == NK_GRU ? 3 : 4;
    g->nact = n->kind == NK_RNN ? 1 : n->kind == NK_GRU ? 2 : 3;
    g->batch_first = node_attr_int(n, AK_layout, 0) != 0;
    g->hidden = node_attr_int(n, AK_hidden_size, 0);
    const Type *x = &n->ops[0]->type;
    if (x->rank != 3 || g->hidden < 1 || g->hidden > (1 << 24)) {
        snprintf(err, errlen, "input must have rank 3 and hidden_size be positive");
        return false;
    }
    g->seq = x->dims[g->batch_first ? 1 : 0];
    g->batch = x->dims[g->batch_first ? 0 : 1];
    g->input = x->dims[2];
    return rnn_parse_acts(n, g, err, errlen);
}

/* Operand i must have these dims and operand 0's kind (sequence_lens, operand
 * 4, is i32 or i64). */
static bool rnn_operand(Node *n, DiagList *d, int i, const char *what, int rank,
                        const int64_t *dims) {
    const Type *t = op_type(n, i);
    ElemKind e = i != 4 ? op_type(n, 0)->elem : t->elem == ELEM_I64 ? ELEM_I64 : ELEM_I32;
    Type want = type_make(e, rank, dims);
    if (type_equal(t, &want))
        return true;
    char a[TYPE_STR_MAX], b[TYPE_STR_MAX];
    node_error(d, n, "%s must be %s, got %s", what, tstr(&want, a), tstr(t, b));
    return false;
}

static bool infer_recurrent(Node *n, DiagList *d) {
    RnnGeom g;
    char err[256];
    if (!rnn_geom(n, &g, err, sizeof err)) {
        node_error(d, n, "%s", err);
        return false;
    }
    int64_t D = g.dirs, B = g.batch, H = g.hidden, GH = g.gates * H;
    int64_t state[3] = {g.batch_first ? B : D, g.batch_first ? D : B, H};
    if (!rnn_operand(n, d, 1, "w", 3, (int64_t[]){D, GH, g.input}) ||
        !rnn_operand(n, d, 2, "r", 3, (int64_t[]){D, GH, H}) ||
        !rnn_operand(n, d, 3, "b", 2, (int64_t[]){D, 2 * GH}) ||
        !rnn_operand(n, d, 4, "sequence_lens", 1, (int64_t[]){B}) ||
        !rnn_operand(n, d, 5, "initial_h", 3, state) ||
        (n->kind == NK_LSTM && (!rnn_operand(n, d, 6, "initial_c", 3, state) ||
                                !rnn_operand(n, d, 7, "p", 2, (int64_t[]){D, 3 * H}))))
        return false;
    ElemKind e = op_type(n, 0)->elem;
    n->res[0].type = g.batch_first ? type_make(e, 4, (int64_t[]){B, g.seq, D, H})
                                   : type_make(e, 4, (int64_t[]){g.seq, D, B, H});
    for (int i = 1; i < n->nres; i++)
        n->res[i].type = type_make(e, 3, state);
    return true;
}

/* The result shape is declared (max_unpool's output_shape is an input in
 * ONNX); indices must pair with x, and N and C are kept. */
static bool infer_max_unpool(Node *n, DiagList *d) {
    if (!need_rank(n, d, 0, 3, MAX_RANK) || !need_int_indices(n, d, 1))
        return false;
    const Type *x = op_type(n, 0), *r = &n->res[0].type;
    Window win;
    if (!window_from_node(n, x->rank - 2, NULL, &win)) {
        node_error(d, n, "bad kernel, strides or pads");
        return false;
    }
    if (!type_same_shape(x, op_type(n, 1))) {
        node_error(d, n, "indices must have the input's shape");
        return false;
    }
    if (r->elem != x->elem || r->rank != x->rank || r->dims[0] != x->dims[0] ||
        r->dims[1] != x->dims[1]) {
        char a[TYPE_STR_MAX], b[TYPE_STR_MAX];
        node_error(d, n, "result %s must keep the kind, N and C of %s", tstr(r, a), tstr(x, b));
        return false;
    }
    return true;
}

/* ---- sampling ----------------------------------------------------------- */

static bool infer_grid_sample(Node *n, DiagList *d) {
    if (!need_rank(n, d, 0, 4, 4) || !need_rank(n, d, 1, 4, 4) || !same_elem(n, d, 0, 1) ||
        !enum_allowed(n, d, AK_mode, MODE_BILINEAR,
                      (const int[]){MODE_BILINEAR, MODE_NEAREST, MODE_BICUBIC, 0}) ||
        !enum_allowed(n, d, AK_padding_mode, PADDING_ZEROS,
                      (const int[]){PADDING_ZEROS, PADDING_BORDER, PADDING_REFLECTION, 0}))
        return false;
    const Type *x = op_type(n, 0), *g = op_type(n, 1);
    if (g->dims[0] != x->dims[0] || g->dims[3] != 2) {
        char a[TYPE_STR_MAX];
        node_error(d, n, "grid %s must be N x H x W x 2", tstr(g, a));
        return false;
    }
    Type r = *x;
    r.dims[2] = g->dims[1];
    r.dims[3] = g->dims[2];
    n->res[0].type = r;
    return true;
}

static bool infer_roi_align(Node *n, DiagList *d) {
    if (!need_rank(n, d, 0, 4, 4) || !need_rank(n, d, 1, 2, 2) || !need_rank(n, d, 2, 1, 1) ||
        !same_elem(n, d, 0, 1) || !need_int_indices(n, d, 2) ||
        !enum_allowed(n, d, AK_mode, MODE_AVG, (const int[]){MODE_AVG, MODE_MAX, 0}) ||
        !enum_allowed(n, d, AK_coordinate_transformation_mode, CTM_HALF_PIXEL,
                      (const int[]){CTM_HALF_PIXEL, CTM_OUTPUT_HALF_PIXEL, 0}))
        return false;
    const Type *x = op_type(n, 0), *rois = op_type(n, 1), *bi = op_type(n, 2);
    int64_t oh = node_attr_int(n, AK_output_height, 1), ow = node_attr_int(n, AK_output_width, 1);
    if (rois->dims[1] != 4 || bi->dims[0] != rois->dims[0]) {
        node_error(d, n, "rois must be R x 4 with R batch indices");
        return false;
    }
    if (oh < 1 || ow < 1 || node_attr_int(n, AK_sampling_ratio, 0) < 0) {
        node_error(d, n, "output size must be positive, sampling_ratio not negative");
        return false;
    }
    n->res[0].type = type_make(x->elem, 4, (int64_t[]){rois->dims[0], x->dims[1], oh, ow});
    return true;
}

/* ---- text ---------------------------------------------------------------- */

static bool infer_tfidf_vectorizer(Node *n, DiagList *d) {
    if (!need_rank(n, d, 0, 1, 2) || !need_rank(n, d, 1, 1, 1) || !need_rank(n, d, 2, 1, 1) ||
        !need_rank(n, d, 3, 1, 1) ||
        !enum_allowed(n, d, AK_mode, MODE_TF, (const int[]){MODE_TF, MODE_IDF, MODE_TFIDF, 0}))
        return false;
    const Type *x = op_type(n, 0), *w = op_type(n, 3);
    if ((x->elem != ELEM_I32 && x->elem != ELEM_I64) || op_type(n, 1)->elem != ELEM_I64 ||
        op_type(n, 2)->elem != ELEM_I64 || w->elem != ELEM_F32) {
        node_error(d, n, "takes i32 or i64 tokens, an i64 pool and indexes, and f32 weights");
        return false;
    }
    int64_t lo = node_attr_int(n, AK_min_gram_length, 1), hi = node_attr_int(n, AK_max_gram_length, 1);
    int k;
    node_attr_ints(n, AK_ngram_counts, &k);
    if (lo < 1 || hi < lo || hi > k || node_attr_int(n, AK_max_skip_count, 0) < 0) {
        node_error(d, n, "needs 1 <= min_gram_length <= max_gram_length <= %d (the ngram_counts), "
                         "max_skip_count >= 0", k);
        return false;
    }
    int64_t dims[2] = {x->dims[0], w->dims[0]};
    n->res[0].type = x->rank == 1 ? type_make(ELEM_F32, 1, dims + 1) : type_make(ELEM_F32, 2, dims);
    return true;
}

static bool infer_string_normalizer(Node *n, DiagList *d) {
    if (!need_rank(n, d, 0, 1, 2) || !need_rank(n, d, 1, 1, 1))
        return false;
    const Type *x = op_type(n, 0), *r = &n->res[0].type;
    if (op_type(n, 1)->elem != ELEM_STR) {
        node_error(d, n, "operand 1 (stopwords) must be str");
        return false;
    }
    if (x->rank == 2 && x->dims[0] != 1) {
        node_error(d, n, "operand 0 must be [C] or [1, C], got [%lld, %lld]",
                   (long long)x->dims[0], (long long)x->dims[1]);
        return false;
    }
    if (type_numel(op_type(n, 1)) == 0) { /* nothing to remove: the shape stays */
        n->res[0].type = *x;
        return true;
    }
    /* Removing every string leaves one empty string (ONNX). */
    int64_t c = x->dims[x->rank - 1];
    if (r->elem != ELEM_STR || r->rank != x->rank || (x->rank == 2 && r->dims[0] != 1) ||
        r->dims[r->rank - 1] < 1 || r->dims[r->rank - 1] > (c ? c : 1)) {
        char a[TYPE_STR_MAX], b[TYPE_STR_MAX];
        node_error(d, n, "declared result %s does not fit input %s", tstr(r, a), tstr(x, b));
        return false;
    }
    return true;
}

/* ---- losses ------------------------------------------------------------- */

static bool infer_nll_loss(Node *n, DiagList *d) {
    if (!need_rank(n, d, 0, 2, MAX_RANK) || !need_int_indices(n, d, 1) ||
        !enum_allowed(n, d, AK_reduction, RED_MEAN, (const int[]){RED_NONE, RED_SUM, RED_MEAN, 0}))
        return false;
    const Type *x = op_type(n, 0), *t = op_type(n, 1);
    bool ok = t->rank == x->rank - 1 && t->dims[0] == x->dims[0];
    for (int i = 1; ok && i < t->rank; i++)
        ok = t->dims[i] == x->dims[i + 1];
    if (!ok) {
        char a[TYPE_STR_MAX], b[TYPE_STR_MAX];
        node_error(d, n, "target %s must be input %s without its class axis", tstr(t, a),
                   tstr(x, b));
        return false;
    }
    if (n->nops == 3 && !per_channel(n, d, 2, x->dims[1]))
        return false;
    if (n->nops == 3 && !same_elem(n, d, 0, 2))
        return false;
    Type r = *t;
    r.elem = x->elem;
    if (node_attr_enum(n, AK_reduction, RED_MEAN) != RED_NONE)
        r.rank = 0;
    n->res[0].type = r;
    return true;
}

/* ---- quantization --------------------------------------------------------- */

static bool is_quant_kind(ElemKind k) {
    return k == ELEM_U8 || k == ELEM_I8 || k == ELEM_U16 || k == ELEM_I16;
}

static bool need_quant_kind(Node *n, DiagList *d, int op, bool allow_i32) {
    ElemKind k = op_type(n, op)->elem;
    if (is_quant_kind(k) || (allow_i32 && k == ELEM_I32))
        return true;
    node_error(d, n, "operand %d must be a quantized integer kind, got %s", op, elem_name(k));
    return false;
}

static bool need_float(Node *n, DiagList *d, int op) {
    if (elem_is_float(op_type(n, op)->elem))
        return true;
    node_error(d, n, "operand %d (scale) must be a float, got %s", op,
               elem_name(op_type(n, op)->elem));
    return false;
}

/* A scale or zero point holds one value, or one per slice of `len` (per
 * axis, per row or per column). */
static bool one_or_per(Node *n, DiagList *d, int op, int64_t len, const char *what) {
    const Type *t = op_type(n, op);
    if (type_numel(t) == 1 && t->rank <= 1)
        return true;
    if (t->rank == 1 && t->dims[0] == len)
        return true;
    char a[TYPE_STR_MAX];
    node_error(d, n, "operand %d %s must hold 1 or %lld values (%s)", op, tstr(t, a),
               (long long)len, what);
    return false;
}

/* (x, scale, zero_point) with scale and zero_point of one shape. */
static bool quant_params(Node *n, DiagList *d, int *axis) {
    const Type *x = op_type(n, 0), *s = op_type(n, 1), *z = op_type(n, 2);
    if (!need_float(n, d, 1))
        return false;
    if (!type_same_shape(s, z)) {
        node_error(d, n, "scale and zero point must have one shape");
        return false;
    }
    if (type_numel(s) == 1 && s->rank <= 1) {
        *axis = -1;
        return true;
    }
    if (!axis_normalize(node_attr_int(n, AK_axis, 1), x->rank, axis)) {
        node_error(d, n, "axis out of range");
        return false;
    }
    return one_or_per(n, d, 1, x->dims[*axis], "per axis");
}

static bool infer_quantize_linear(Node *n, DiagList *d) {
    int axis;
    if (!need_quant_kind(n, d, 2, false) || !quant_params(n, d, &axis))
        return false;
    n->res[0].type = *op_type(n, 0);
    n->res[0].type.elem = op_type(n, 2)->elem;
    return true;
}

static bool infer_dequantize_linear(Node *n, DiagList *d) {
    int axis;
    if (!need_quant_kind(n, d, 0, true) || !same_elem(n, d, 0, 2) || !quant_params(n, d, &axis))
        return false;
    n->res[0].type = *op_type(n, 0);
    n->res[0].type.elem = op_type(n, 1)->elem;
    return true;
}

static bool infer_dynamic_quantize_linear(Node *n, DiagList *d) {
    n->res[0].type = *op_type(n, 0);
    n->res[0].type.elem = ELEM_U8;
    n->res[1].type = type_scalar(op_type(n, 0)->elem);
    n->res[2].type = type_scalar(ELEM_U8);
    return true;
}

/* The matrix rows of operand op (a) or its columns (b). */
static int64_t mat_dim(const Node *n, int op, bool rows) {
    const Type *t = op_type(n, op);
    if (t->rank == 1)
        return rows ? 1 : t->dims[0];
    return t->dims[t->rank - (rows ? 2 : 1)];
}

static bool infer_matmul_integer(Node *n, DiagList *d) {
    if (!need_quant_kind(n, d, 0, false) || !need_quant_kind(n, d, 1, false) ||
        !same_elem(n, d, 0, 2) || !same_elem(n, d, 1, 3) ||
        !one_or_per(n, d, 2, mat_dim(n, 0, true), "per row of a") ||
        !one_or_per(n, d, 3, mat_dim(n, 1, false), "per column of b") ||
        !matmul_shape(n, d, 0, 1, &n->res[0].type))
        return false;
    n->res[0].type.elem = ELEM_I32;
    return true;
}

static bool infer_qlinear_matmul(Node *n, DiagList *d) {
    if (!need_quant_kind(n, d, 0, false) || !need_quant_kind(n, d, 3, false) ||
        !need_quant_kind(n, d, 7, false) || !same_elem(n, d, 0, 2) || !same_elem(n, d, 3, 5) ||
        !need_float(n, d, 1) || !need_float(n, d, 4) || !need_float(n, d, 6) ||
        !one_or_per(n, d, 1, mat_dim(n, 0, true), "per row of a") ||
        !one_or_per(n, d, 2, mat_dim(n, 0, true), "per row of a") ||
        !one_or_per(n, d, 4, mat_dim(n, 3, false), "per column of b") ||
        !one_or_per(n, d, 5, mat_dim(n, 3, false), "per column of b") ||
        !one_or_per(n, d, 6, 1, "per tensor") || !one_or_per(n, d, 7, 1, "per tensor") ||
        !matmul_shape(n, d, 0, 3, &n->res[0].type))
        return false;
    n->res[0].type.elem = op_type(n, 7)->elem;
    return true;
}

static bool infer_conv_integer(Node *n, DiagList *d) {
    if (!need_quant_kind(n, d, 0, false) || !need_quant_kind(n, d, 1, false) ||
        !same_elem(n, d, 0, 2) || !same_elem(n, d, 1, 3) ||
        !conv_shape(n, d, 0, 1, &n->res[0].type))
        return false;
    n->res[0].type.elem = ELEM_I32;
    return one_or_per(n, d, 2, 1, "per tensor") &&
           one_or_per(n, d, 3, n->res[0].type.dims[1], "per output channel");
}

/* qlinear_conv's rules, with weights of type w. */
static bool qconv_rules(Node *n, DiagList *d, const Type *w) {
    if (!need_quant_kind(n, d, 0, false) || !need_quant_kind(n, d, 3, false) ||
        !need_quant_kind(n, d, 7, false) || !same_elem(n, d, 0, 2) || !same_elem(n, d, 3, 5) ||
        !need_float(n, d, 1) || !need_float(n, d, 4) || !need_float(n, d, 6) ||
        !conv_shape_w(n, d, 0, w, &n->res[0].type))
        return false;
    int64_t m = n->res[0].type.dims[1];
    n->res[0].type.elem = op_type(n, 7)->elem;
    return one_or_per(n, d, 1, 1, "per tensor") && one_or_per(n, d, 2, 1, "per tensor") &&
           one_or_per(n, d, 4, m, "per output channel") &&
           one_or_per(n, d, 5, m, "per output channel") && one_or_per(n, d, 6, 1, "per tensor") &&
           one_or_per(n, d, 7, 1, "per tensor") &&
           (n->nops < 9 || need_bias(n, d, 8, ELEM_I32, m));
}

static bool infer_qlinear_conv(Node *n, DiagList *d) {
    return qconv_rules(n, d, op_type(n, 3));
}

/* qlinear_conv's rules on the unpadded weights, and the packing's: 2-D,
 * M a multiple of 4, w's channels x's rounded up to one (w's zero points
 * 0: the pass checks their values). */
static bool infer_qconv_packed(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0), *w = op_type(n, 3);
    if (w->rank != 4 || x->rank != 4 || w->dims[0] % 4 || w->dims[1] != (x->dims[1] + 3) / 4 * 4) {
        char a[TYPE_STR_MAX], b[TYPE_STR_MAX];
        node_error(d, n, "packed weights %s for input %s: 2-D, output channels a multiple of 4, "
                   "input channels the input's rounded up to one", tstr(w, a), tstr(x, b));
        return false;
    }
    Type u = *w;
    u.dims[1] = x->dims[1];
    return qconv_rules(n, d, &u);
}

/* Operand i has a per-tensor quantized type: the integer forms read their
 * scales from the types. */
static bool need_quantized(Node *n, DiagList *d, int i, const Type *t) {
    if (t->quant == QUANT_TENSOR)
        return true;
    char a[TYPE_STR_MAX];
    if (i < 0)
        node_error(d, n, "result type %s is not quantized per tensor (scale=, offset=)",
                   tstr(t, a));
    else
        node_error(d, n, "operand %d has type %s, not quantized per tensor (scale=, offset=)", i,
                   tstr(t, a));
    return false;
}

static bool infer_rescale(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0);
    Type *r = &n->res[0].type;
    if (!need_quantized(n, d, 0, x) || !need_quantized(n, d, -1, r))
        return false;
    if (!type_same_shape(r, x) || (r->elem != ELEM_I8 && r->elem != ELEM_U8)) {
        char a[TYPE_STR_MAX], b[TYPE_STR_MAX];
        node_error(d, n, "cannot rescale %s to %s (same shape, to i8 or u8)", tstr(x, a),
                   tstr(r, b));
        return false;
    }
    return true;
}

static bool infer_qbinary(Node *n, DiagList *d) {
    Type declared = n->res[0].type, t;
    if (!need_quantized(n, d, 0, op_type(n, 0)) || !need_quantized(n, d, 1, op_type(n, 1)) ||
        !need_quantized(n, d, -1, &declared) || !broadcast_ops(n, d, 2, &t))
        return false;
    if (declared.elem != ELEM_I8 && declared.elem != ELEM_U8) {
        node_error(d, n, "result must be i8 or u8");
        return false;
    }
    t.elem = declared.elem;
    n->res[0].type = t;
    return true;
}

static bool infer_gradient(Node *n, DiagList *d) {
    if (n->nres != n->nops - 1) {
        node_error(d, n, "%d results for %d values to differentiate by", n->nres, n->nops - 1);
        return false;
    }
    for (int i = 0; i < n->nops; i++) {
        if (!elem_is_float(op_type(n, i)->elem)) {
            char a[TYPE_STR_MAX];
            node_error(d, n, "operand %d has type %s, not a float tensor", i,
                       tstr(op_type(n, i), a));
            return false;
        }
    }
    for (int i = 1; i < n->nops; i++)
        n->res[i - 1].type = *op_type(n, i);
    return true;
}

static bool infer_qlookup(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0), *t = op_type(n, 1);
    Type *r = &n->res[0].type;
    char a[TYPE_STR_MAX], b[TYPE_STR_MAX];
    if (!need_quantized(n, d, 0, x) || !need_quantized(n, d, -1, r))
        return false;
    if (x->elem != ELEM_I8 && x->elem != ELEM_U8) {
        node_error(d, n, "operand 0 has type %s, not i8 or u8", tstr(x, a));
        return false;
    }
    bool rows = t->rank == 2 && x->rank >= 2 && t->dims[0] == x->dims[1];
    if ((t->rank != 1 && !rows) || t->dims[t->rank - 1] != 256 ||
        (t->elem != ELEM_I8 && t->elem != ELEM_U8)) {
        node_error(d, n, "the table has type %s, not i8<256> or u8<256>, or [C, 256] for x's "
                   "C channels (axis 1)", tstr(t, a));
        return false;
    }
    if (r->elem != t->elem) {
        node_error(d, n, "result %s is not of the table's kind (%s)", tstr(r, a), tstr(t, b));
        return false;
    }
    ElemKind elem = r->elem;
    Type declared = *r;
    *r = *x;
    r->elem = elem;
    type_copy_quant(r, &declared);
    return true;
}

static bool infer_qpool(Node *n, DiagList *d) {
    ElemKind declared = n->res[0].type.elem;
    if (!need_quantized(n, d, 0, op_type(n, 0)) || !need_quantized(n, d, -1, &n->res[0].type))
        return false;
    if (declared != ELEM_I8 && declared != ELEM_U8) {
        node_error(d, n, "result must be i8 or u8");
        return false;
    }
    bool ok = n->kind == NK_QAVG_POOL ? infer_pool(n, d) : infer_global_pool(n, d);
    n->res[0].type.elem = declared;
    return ok;
}

/* A scalar constant operand's value (false when it is computed or elided). */
static bool const_scalar(const Value *v, double *out) {
    const Node *c = v->def;
    if (c->kind != NK_CONSTANT || !c->payload || !c->payload->data ||
        tensor_numel(c->payload) != 1)
        return false;
    *out = tensor_get_f64(c->payload, 0);
    return true;
}

/* A quantized type beside ONNX-style scale and zero point operands must say
 * what they say, or a reader of the type is misled. */
static bool quant_agrees(Node *n, DiagList *d, const Type *t, int scale_op, int zp_op,
                         const char *what) {
    double s, z;
    if (t->quant != QUANT_TENSOR || !const_scalar(n->ops[scale_op], &s) ||
        !const_scalar(n->ops[zp_op], &z) || ((float)s == t->scale && z == t->offset))
        return true;
    char a[TYPE_STR_MAX];
    node_error(d, n, "%s has type %s but its scale and zero point operands are %.9g and %.9g",
               what, tstr(t, a), s, z);
    return false;
}

static bool check_declared_quant(Node *n, DiagList *d) {
    const Type *r = &n->res[0].type;
    switch (n->kind) {
    case NK_QUANTIZE_LINEAR: return quant_agrees(n, d, r, 1, 2, "the result");
    case NK_DEQUANTIZE_LINEAR: return quant_agrees(n, d, op_type(n, 0), 1, 2, "operand 0");
    case NK_QLINEAR_MATMUL:
        return quant_agrees(n, d, op_type(n, 0), 1, 2, "operand 0") &&
               quant_agrees(n, d, op_type(n, 3), 4, 5, "operand 3") &&
               quant_agrees(n, d, r, 6, 7, "the result");
    case NK_QLINEAR_CONV:
    case NK_QCONV_PACKED:
        if (op_type(n, 3)->quant == QUANT_CHANNEL && op_type(n, 3)->qaxis != 0) {
            node_error(d, n, "weights quantized per channel along axis %d, not 0 (the output "
                       "channels)", (int)op_type(n, 3)->qaxis);
            return false;
        }
        return quant_agrees(n, d, op_type(n, 0), 1, 2, "operand 0") &&
               quant_agrees(n, d, op_type(n, 3), 4, 5, "operand 3") &&
               quant_agrees(n, d, r, 6, 7, "the result");
    default: return true;
    }
}

/* ---- regions ----------------------------------------------------------- */

/* Body b of n takes the node's operands from `first` on as its parameters
 * `pfirst`..., one for one and of the same types. */
static bool body_params_fit(Node *n, DiagList *d, const Function *b, int first, int pfirst) {
    if (!b) {
        node_error(d, n, "is missing a body (%s takes %d)", node_kind_name(n->kind),
                   node_kind_bodies(n->kind));
        return false;
    }
    if (b->nparams - pfirst != n->nops - first) {
        node_error(d, n, "its %s body takes %d parameters; the node gives it %d", b->name,
                   b->nparams, n->nops - first + pfirst);
        return false;
    }
    for (int i = first; i < n->nops; i++) {
        const Type *p = &b->params[i - first + pfirst]->res[0].type;
        /* At run time the operands have their run-time sizes, within the
         * bounds the body was typed at. */
        if (!type_equal(p, op_type(n, i)) && !type_fits(op_type(n, i), p)) {
            char a[TYPE_STR_MAX], c[TYPE_STR_MAX];
            node_error(d, n, "operand %d is %s but its %s body's parameter %d is %s", i,
                       tstr(op_type(n, i), a), b->name, i - first + pfirst, tstr(p, c));
            return false;
        }
    }
    return true;
}

static bool need_scalar(Node *n, DiagList *d, const Type *t, ElemKind k, const char *what) {
    if (t->elem == k && type_numel(t) == 1)
        return true;
    char a[TYPE_STR_MAX];
    node_error(d, n, "%s is %s; it must be one %s", what, tstr(t, a), elem_name(k));
    return false;
}

/* The declared types stand: a trap computes nothing. */
static bool infer_trap(Node *n, DiagList *d) {
    (void)n;
    (void)d;
    return true;
}

/* Both branches take the captured values and return the results: branches
 * that disagree in type are the node's error, since the value after it has
 * one type whichever ran. */
static bool infer_if_region(Node *n, DiagList *d) {
    if (!need_scalar(n, d, op_type(n, 0), ELEM_BOOL, "the condition"))
        return false;
    const Function *t = n->bodies[0], *e = n->bodies[1];
    if (!body_params_fit(n, d, t, 1, 0) || !body_params_fit(n, d, e, 1, 0))
        return false;
    if (t->noutputs != n->nres || e->noutputs != n->nres) {
        node_error(d, n, "has %d results but its branches return %d (then) and %d (else)",
                   n->nres, t->noutputs, e->noutputs);
        return false;
    }
    for (int i = 0; i < n->nres; i++) {
        /* Branches may differ in sizes (an empty constant in one, a
         * bounded-dynamic value in the other, as torchvision's batched_nms
         * exports): the result is dynamic there, bounded by the larger. */
        const Type *a = &t->outputs[i]->type, *b = &e->outputs[i]->type;
        if (!type_join(a, b, &n->res[i].type)) {
            char x[TYPE_STR_MAX], y[TYPE_STR_MAX];
            node_error(d, n, "its branches disagree on result %d: then returns %s, else %s", i,
                       tstr(a, x), tstr(b, y));
            return false;
        }
    }
    return true;
}

/* The body maps (iteration, cond, carried...) to (cond, carried...) with the
 * carried values' types kept, so every iteration sees the same types. */
static bool infer_loop_region(Node *n, DiagList *d) {
    if (!need_scalar(n, d, op_type(n, 0), ELEM_I64, "the trip count") ||
        !need_scalar(n, d, op_type(n, 1), ELEM_BOOL, "the condition"))
        return false;
    const Function *b = n->bodies[0];
    if (!body_params_fit(n, d, b, 2, 2))
        return false;
    if (!need_scalar(n, d, &b->params[0]->res[0].type, ELEM_I64, "the body's iteration") ||
        !need_scalar(n, d, &b->params[1]->res[0].type, ELEM_BOOL, "the body's condition"))
        return false;
    if (b->noutputs != 1 + n->nres || n->nres > n->nops - 2) {
        node_error(d, n, "has %d results but its body returns %d values (the condition and the "
                   "carried values)", n->nres, b->noutputs);
        return false;
    }
    if (!need_scalar(n, d, &b->outputs[0]->type, ELEM_BOOL, "the body's result 0 (the condition)"))
        return false;
    for (int i = 0; i < n->nres; i++) {
        /* At run time a carried value has its run-time size, within the
         * bounds the body returns. */
        const Type *o = &b->outputs[1 + i]->type, *in = op_type(n, 2 + i);
        if (!type_equal(o, in) && !type_fits(in, o)) {
            char x[TYPE_STR_MAX], y[TYPE_STR_MAX];
            node_error(d, n, "carried value %d enters the loop as %s but the body returns %s", i,
                       tstr(in, x), tstr(o, y));
            return false;
        }
        n->res[i].type = *o;
    }
    return true;
}

/* The rows of a loop's scan output after an iteration: acc's kind and row
 * shape, its length declared at the bound (the kernel checks the run-time
 * one). */
static bool infer_scan_row(Node *n, DiagList *d) {
    const Type *acc = op_type(n, 0), *r = &n->res[0].type;
    char a[TYPE_STR_MAX], b[TYPE_STR_MAX];
    if (!need_scalar(n, d, op_type(n, 1), ELEM_I64, "operand 1 (the row index)"))
        return false;
    bool ok = acc->rank >= 1 && r->rank == acc->rank && r->elem == acc->elem &&
              type_dim_dynamic(r, 0);
    for (int k = 1; ok && k < acc->rank; k++)
        ok = r->dims[k] == acc->dims[k] && !type_dim_dynamic(r, k);
    if (!ok) {
        node_error(d, n, "cannot grow %s into %s (a bounded-dynamic first dimension, the same "
                   "rows)", tstr(acc, a), tstr(r, b));
        return false;
    }
    if (n->nops < 3)
        return true;
    const Type *row = op_type(n, 2);
    ok = row->elem == acc->elem && row->rank == acc->rank - 1;
    for (int k = 0; ok && k < row->rank; k++)
        ok = row->dims[k] == acc->dims[k + 1];
    if (!ok) {
        node_error(d, n, "row %s does not fit the rows of %s", tstr(row, a), tstr(r, b));
        return false;
    }
    return true;
}

/* Range with run-time operands: one kind of scalar, a 1-D result declared
 * at the bound the importer found. */
static bool infer_range(Node *n, DiagList *d) {
    const Type *s = op_type(n, 0), *r = &n->res[0].type;
    for (int i = 0; i < 3; i++)
        if (!need_scalar(n, d, op_type(n, i), s->elem, i == 0   ? "operand 0 (start)"
                                                       : i == 1 ? "operand 1 (limit)"
                                                                : "operand 2 (delta)"))
            return false;
    if (r->rank != 1 || r->elem != s->elem) {
        char a[TYPE_STR_MAX];
        node_error(d, n, "its result is %s; it must be a 1-D %s", tstr(r, a), elem_name(s->elem));
        return false;
    }
    return true;
}

/* ---- value-dependent shapes ------------------------------------------------ */

static bool infer_static(Node *n, DiagList *d);

/* The coordinates of the non-zero elements: [rank, count], count at most
 * the element count. A scalar counts as rank 1, as ONNX says. */
static bool infer_nonzero(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0);
    int64_t bound = type_numel(x);
    n->res[0].type = type_make(ELEM_I64, 2, (int64_t[]){x->rank ? x->rank : 1, bound});
    n->res[0].type.dyn = 2;
    return true;
}

/* The slices along the axis whose condition is true (the importer flattens
 * first when ONNX gives no axis). */
static bool infer_compress(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0), *c = op_type(n, 1);
    int axis;
    if (!axis_normalize(node_attr_int(n, AK_axis, 0), x->rank, &axis)) {
        node_error(d, n, "axis out of range");
        return false;
    }
    if (c->rank != 1 || (c->elem != ELEM_BOOL && !elem_is_int(c->elem))) {
        node_error(d, n, "operand 1 (condition) must be a 1-D bool or integer tensor");
        return false;
    }
    n->res[0].type = *x;
    n->res[0].type.dyn |= (uint8_t)(1u << axis);
    return true;
}

/* y: the unique slices along the axis (the importer flattens first when
 * ONNX gives none); first occurrences; each input slice's unique slice;
 * counts. All but the inverse have a run-time length. */
static bool infer_unique(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0);
    int axis;
    if (!axis_normalize(node_attr_int(n, AK_axis, 0), x->rank, &axis)) {
        node_error(d, n, "axis out of range");
        return false;
    }
    int64_t len = x->dims[axis];
    Type v = type_make(ELEM_I64, 1, &len);
    n->res[0].type = *x;
    n->res[0].type.dyn |= (uint8_t)(1u << axis);
    n->res[2].type = v;
    v.dyn = 1;
    n->res[1].type = v;
    n->res[3].type = v;
    return true;
}

static bool infer_shape(Node *n, DiagList *d) {
    int64_t rank = op_type(n, 0)->rank;
    n->res[0].type = type_make(ELEM_I64, 1, &rank);
    return true;
}

/* boxes [batch, boxes, 4], scores [batch, classes, boxes], then optional
 * max_output_boxes_per_class, iou_threshold, score_threshold (scalars or
 * [1]). The result: [selected, 3] rows of (batch, class, box), at most
 * batch * classes * boxes. (Not tightened by a constant
 * max_output_boxes_per_class: the low-level IR's copy of the node no longer
 * sees constants, and both levels must agree on the bound.) */
static bool infer_nms(Node *n, DiagList *d) {
    const Type *b = op_type(n, 0), *s = op_type(n, 1);
    if (!need_rank(n, d, 0, 3, 3) || !need_rank(n, d, 1, 3, 3))
        return false;
    if (b->elem != ELEM_F32 || s->elem != ELEM_F32) {
        node_error(d, n, "boxes and scores must be f32");
        return false;
    }
    if (b->dims[2] != 4 || s->dims[0] != b->dims[0] || s->dims[2] != b->dims[1]) {
        char bb[TYPE_STR_MAX], sb[TYPE_STR_MAX];
        node_error(d, n, "boxes %s and scores %s do not fit [batch, boxes, 4] and "
                   "[batch, classes, boxes]", tstr(b, bb), tstr(s, sb));
        return false;
    }
    for (int i = 2; i < n->nops; i++) {
        if (type_numel(op_type(n, i)) != 1 || op_type(n, i)->rank > 1) {
            node_error(d, n, "operand %d must be a scalar or one element", i);
            return false;
        }
    }
    int64_t bound;
    if (!mul_dims(s->dims[0] * s->dims[1], b->dims[1], &bound)) {
        node_error(d, n, "too many boxes");
        return false;
    }
    n->res[0].type = type_make(ELEM_I64, 2, (int64_t[]){bound, 3});
    n->res[0].type.dyn = 1;
    return true;
}

/* ---- bounded-dynamic operands ------------------------------------------------ */

/* n's rule run on a copy whose operands have the types `ops`; the result
 * types land in `res`. Nothing of n changes. */
static bool infer_shadow(const Node *n, const Type *ops, Type *res, DiagList *d, Arena *a) {
    Node s = *n;
    Value *opv = arena_alloc_array(a, (size_t)n->nops + 1, sizeof(Value));
    Value **opp = arena_alloc_array(a, (size_t)n->nops + 1, sizeof(Value *));
    Value *resv = arena_alloc_array(a, (size_t)n->nres + 1, sizeof(Value));
    for (int i = 0; i < n->nops; i++) {
        opv[i] = *n->ops[i];
        opv[i].type = ops[i];
        opp[i] = &opv[i];
    }
    for (int i = 0; i < n->nres; i++) {
        resv[i] = n->res[i]; /* a declared type (reshape's) keeps its dynamic marks */
        resv[i].def = &s;
    }
    s.ops = opp;
    s.res = resv;
    if (!infer_static(&s, d))
        return false;
    for (int i = 0; i < n->nres; i++)
        res[i] = resv[i].type;
    return true;
}

static int first_dynamic_operand(const Node *n) {
    for (int i = 0; i < n->nops; i++)
        if (n->ops[i] && type_is_dynamic(&n->ops[i]->type))
            return i;
    return -1;
}

/* The rules are written for static shapes. A node with bounded-dynamic
 * operands is typed twice on a copy: at the bounds, and with every dynamic
 * size at a probe of 0 (below a slice's clamp, divisible by anything, and
 * broadcast only with 1, as a run-time size must be). A result dimension
 * that differs between the two depends on the run-time sizes: it is
 * dynamic, bounded by the first. A rule that refuses the probe cannot take
 * a run-time size (a reshape to a fixed shape, a window wider than the
 * input, a static size not 1 beside a dynamic one), which is then an error
 * naming the operand.
 * At run time the same rule types the node from its operands' real sizes
 * (infer_run_time). */
static bool infer_dynamic(Node *n, DiagList *d, int first) {
    Arena *a = n->func->module->arena;
    Type *at = arena_alloc_array(a, (size_t)n->nops + 1, sizeof(Type));
    Type *probe = arena_alloc_array(a, (size_t)n->nops + 1, sizeof(Type));
    Type *ra = arena_alloc_array(a, (size_t)n->nres + 1, sizeof(Type));
    Type *rb = arena_alloc_array(a, (size_t)n->nres + 1, sizeof(Type));
    for (int i = 0; i < n->nops; i++) {
        at[i] = probe[i] = n->ops[i]->type;
        for (int k = 0; k < at[i].rank; k++)
            if (type_dim_dynamic(&at[i], k))
                probe[i].dims[k] = 0;
        at[i].dyn = probe[i].dyn = 0;
    }
    DiagList scratch;
    diag_init(&scratch, NULL);
    bool ok = infer_shadow(n, at, ra, &scratch, a);
    if (!ok) { /* the rule's message, said to be about the bounds */
        const Diag *g = scratch.head;
        while (g && g->level != DIAG_ERROR)
            g = g->next;
        const char *msg = g ? g->msg : "does not type";
        size_t kl = strlen(node_kind_name(n->kind));
        if (n->loc.line > 0 && !strncmp(msg, node_kind_name(n->kind), kl) && msg[kl] == ':')
            msg += kl + 2; /* node_error says the kind again */
        node_error(d, n, "%s (at the bounds of its bounded-dynamic operands)", msg);
        diag_free(&scratch);
        return false;
    }
    diag_clear(&scratch);
    ok = infer_shadow(n, probe, rb, &scratch, a);
    diag_free(&scratch);
    for (int r = 0; ok && r < n->nres; r++)
        ok = ra[r].rank == rb[r].rank;
    if (!ok) {
        char b[TYPE_STR_MAX];
        node_error(d, n, "operand %d (%s) has a bounded-dynamic dimension, which %s cannot take",
                   first, tstr(&n->ops[first]->type, b), node_kind_name(n->kind));
        return false;
    }
    for (int r = 0; r < n->nres; r++) {
        for (int k = 0; k < ra[r].rank; k++)
            if (ra[r].dims[k] != rb[r].dims[k])
                ra[r].dyn |= (uint8_t)(1u << k);
        n->res[r].type = ra[r];
    }
    return true;
}

bool infer_node(Node *n, DiagList *d) {
    int first = first_dynamic_operand(n);
    if (first < 0)
        return infer_static(n, d);
    /* A region's bodies were typed with the bounds of its dynamic operands
     * (their parameters carry the marks, so the nodes inside are probed as
     * any other); its own rule reads the bodies' result types. */
    if (node_kind_has(n->kind, NF_REGION))
        return infer_static(n, d);
    assert(n->func && n->func->module); /* the probe's scratch is the module's arena */
    return infer_dynamic(n, d, first);
}

bool infer_run_time(const Node *n, const Type *ops, Type *res, DiagList *d, Arena *a) {
    if (!infer_shadow(n, ops, res, d, a))
        return false;
    for (int r = 0; r < n->nres; r++) {
        const Type *st = &n->res[r].type;
        for (int k = 0; k < st->rank && k < res[r].rank; k++) {
            if (res[r].dims[k] > st->dims[k] ||
                (!type_dim_dynamic(st, k) && res[r].dims[k] != st->dims[k])) {
                node_error(d, n, "result %d: run-time size %lld of dimension %d does not fit "
                           "its %s %lld", r, (long long)res[r].dims[k], k,
                           type_dim_dynamic(st, k) ? "bound" : "size", (long long)st->dims[k]);
                return false;
            }
        }
    }
    return true;
}

/* ---- dispatch ----------------------------------------------------------- */

static const InferFn infer_fns[NK_COUNT] = {
#define NODE(E, nm, omin, omax, rmin, rmax, ty, inf, facts, attrs) [NK_##E] = infer_##inf,
#include "core/nodes.def"
};

static bool infer_static(Node *n, DiagList *d) {
    int omin = node_kind_ops_min(n->kind), omax = node_kind_ops_max(n->kind);
    int rmin = node_kind_res_min(n->kind), rmax = node_kind_res_max(n->kind);
    if (n->nops < omin || (omax >= 0 && n->nops > omax)) {
        if (omax == omin)
            node_error(d, n, "has %d operands, expected %d", n->nops, omin);
        else if (omax < 0)
            node_error(d, n, "has %d operands, expected at least %d", n->nops, omin);
        else
            node_error(d, n, "has %d operands, expected %d to %d", n->nops, omin, omax);
        return false;
    }
    if (n->nres < rmin || (rmax >= 0 && n->nres > rmax)) {
        node_error(d, n, "has %d results, expected %d to %d", n->nres, rmin, rmax);
        return false;
    }
    for (int i = 0; i < n->nops; i++) {
        if (!n->ops[i]) {
            node_error(d, n, "operand %d is missing", i);
            return false;
        }
    }
    if (n->nops > 0 && !ty_accepts(kind_ty[n->kind], op_type(n, 0)->elem)) {
        node_error(d, n, "does not accept element kind %s", elem_name(op_type(n, 0)->elem));
        return false;
    }
    /* Kinds whose result type is declared (reshape, expand...) read it. */
    for (int i = 0; i < n->nres; i++) {
        int64_t numel;
        if (!type_numel_checked(&n->res[i].type, &numel)) {
            node_error(d, n, "declared result %d has too many elements", i);
            return false;
        }
    }
    /* Quantization is declared, not inferred: whoever made the node (the
     * quantize pass, the text) chose the scale, so a result keeps the one it
     * had while its element kind stays, and otherwise has none. */
    Type declared[8];
    int nkeep = n->nres < 8 ? n->nres : 8;
    for (int i = 0; i < nkeep; i++)
        declared[i] = n->res[i].type;
    if (!infer_fns[n->kind](n, d))
        return false;
    for (int i = 0; i < n->nres; i++) {
        Type none = {.quant = QUANT_NONE};
        bool keep = i < nkeep && declared[i].elem == n->res[i].type.elem;
        type_copy_quant(&n->res[i].type, keep ? &declared[i] : &none);
    }
    if (!check_declared_quant(n, d))
        return false;
    for (int i = 0; i < n->nres; i++) {
        int64_t numel;
        if (!type_numel_checked(&n->res[i].type, &numel)) {
            node_error(d, n, "result %d has too many elements", i);
            return false;
        }
    }
    return true;
}
