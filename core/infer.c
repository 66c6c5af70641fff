/* Shape rules for every node kind, and the window/slice/reduce geometry that
 * the kernels share. */
#include "core/infer.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
    if (n->loc.line > 0) {
        char line[512];
        diag_add(d, DIAG_ERROR, NULL, n->loc, line_of(n, line, sizeof line), "%s: %s",
                 node_kind_name(n->kind), msg);
    } else {
        diag_error(d, node_where(n), "%s", msg);
    }
}

bool axis_normalize(int64_t axis, int rank, int *out) {
    if (axis < -rank || axis >= rank)
        return false;
    *out = (int)(axis < 0 ? axis + rank : axis);
    return true;
}

/* Dimension arithmetic on attribute values, which a hostile file may set to
 * anything: false on overflow instead of undefined behaviour. */
static bool dim_add(int64_t a, int64_t b, int64_t *out) {
    return !__builtin_add_overflow(a, b, out);
}

static bool dim_mul(int64_t a, int64_t b, int64_t *out) {
    return !__builtin_mul_overflow(a, b, out);
}

static const Type *op_type(const Node *n, int i) {
    return &n->ops[i]->type;
}

static char *tstr(const Type *t, char *buf) {
    type_str(t, buf);
    return buf;
}

/* The `ty` column of nodes.def: which element kinds operand 0 may have. */
typedef enum { TY_ANY, TY_NUM, TY_FLOAT, TY_INT, TY_BOOL, TY_SIGNED } TyClass;

static const TyClass kind_ty[NK_COUNT] = {
#define NODE(E, nm, omin, omax, rmin, rmax, ty, inf, attrs) [NK_##E] = TY_##ty,
#include "core/nodes.def"
};

static bool ty_accepts(TyClass c, ElemKind e) {
    switch (c) {
    case TY_ANY: return true;
    case TY_NUM: return e != ELEM_BOOL;
    case TY_FLOAT: return elem_is_float(e);
    case TY_INT: return elem_is_int(e);
    case TY_BOOL: return e == ELEM_BOOL;
    case TY_SIGNED: return elem_is_float(e) || elem_class(e) == ECLS_SINT;
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

/* ---- rules -------------------------------------------------------------- */

static bool infer_storage(Node *n, DiagList *d) {
    if (n->kind == NK_CONSTANT && n->payload && !type_equal(&n->payload->type, &n->res[0].type)) {
        node_error(d, n, "constant data does not match its type");
        return false;
    }
    return true;
}

static bool infer_unary(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0);
    if (n->kind == NK_TRILU && x->rank < 2) {
        node_error(d, n, "operand must have rank >= 2");
        return false;
    }
    if (n->kind == NK_LRN && x->rank < 3) {
        node_error(d, n, "operand must be N x C x D1 ...");
        return false;
    }
    if (n->kind == NK_LP_NORM) {
        int axis;
        if (!axis_normalize(node_attr_int(n, AK_axis, -1), x->rank, &axis)) {
            node_error(d, n, "axis out of range");
            return false;
        }
    }
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

static bool infer_matmul(Node *n, DiagList *d) {
    if (!same_elem(n, d, 0, 1))
        return false;
    Type a = *op_type(n, 0), b = *op_type(n, 1);
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
        node_error(d, n, "inner dimensions differ: %s times %s", tstr(op_type(n, 0), x),
                   tstr(op_type(n, 1), y));
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
    n->res[0].type = r;
    return true;
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

static bool check_act(Node *n, DiagList *d) {
    const char *act = node_attr_str(n, AK_act, NULL);
    static const char *const known[] = {"relu", "clip", "sigmoid", "tanh", "leaky_relu"};
    if (!act)
        return true;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(act, known[i]))
            return true;
    node_error(d, n, "unknown fused activation '%s'", act);
    return false;
}

static bool infer_fully_connected(Node *n, DiagList *d) {
    if (!same_elem(n, d, 0, 1) || !same_elem(n, d, 0, 2) || !need_rank(n, d, 0, 2, 2) ||
        !need_rank(n, d, 1, 2, 2) || !need_rank(n, d, 2, 1, 1) || !check_act(n, d))
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

static int einsum_term(const char *p, const char *end, char *labels, int *has_ellipsis) {
    int n = 0;
    *has_ellipsis = -1;
    for (; p < end; p++) {
        if (*p == ' ')
            continue;
        if (*p == '.') {
            if (end - p < 3 || p[1] != '.' || p[2] != '.' || *has_ellipsis >= 0)
                return -1;
            *has_ellipsis = n;
            p += 2;
            continue;
        }
        if (!isalpha((unsigned char)*p) || n >= MAX_RANK)
            return -1;
        labels[n++] = *p;
    }
    return n;
}

bool einsum_parse(const char *eq, int nops, const Type *const *ops, EinsumSpec *s, char *err,
                  size_t errlen) {
    memset(s, 0, sizeof *s);
    if (nops > 16) {
        snprintf(err, errlen, "too many operands");
        return false;
    }
    const char *arrow = strstr(eq, "->");
    const char *lhs_end = arrow ? arrow : eq + strlen(eq);
    const char *p = eq;
    int ell_rank = 0;
    int ell_dims_at[16];
    for (int i = 0; i < nops; i++) {
        const char *comma = memchr(p, ',', (size_t)(lhs_end - p));
        const char *tend = comma ? comma : lhs_end;
        if ((i < nops - 1) != (comma != NULL)) {
            snprintf(err, errlen, "equation has a different number of terms than operands");
            return false;
        }
        char labels[MAX_RANK];
        int ell;
        int nl = einsum_term(p, tend, labels, &ell);
        if (nl < 0) {
            snprintf(err, errlen, "bad term in equation '%s'", eq);
            return false;
        }
        int er = ell >= 0 ? ops[i]->rank - nl : 0;
        if (er < 0 || (ell < 0 && nl != ops[i]->rank)) {
            snprintf(err, errlen, "term %d has %d labels but operand has rank %d", i, nl,
                     ops[i]->rank);
            return false;
        }
        if (er > ell_rank)
            ell_rank = er;
        /* Expand the ellipsis into '0'+k placeholders, right-aligned. */
        int r = 0;
        for (int j = 0; j < nl; j++) {
            if (j == ell)
                for (int k = 0; k < er; k++)
                    s->labels[i][r++] = (char)('0' + (MAX_RANK - er + k));
            s->labels[i][r++] = labels[j];
        }
        if (ell == nl)
            for (int k = 0; k < er; k++)
                s->labels[i][r++] = (char)('0' + (MAX_RANK - er + k));
        s->rank[i] = r;
        ell_dims_at[i] = ell;
        p = tend + 1;
    }
    s->nops = nops;
    (void)ell_dims_at;
    if (arrow) {
        char labels[MAX_RANK];
        int ell;
        int nl = einsum_term(arrow + 2, arrow + 2 + strlen(arrow + 2), labels, &ell);
        if (nl < 0 || nl + ell_rank > MAX_RANK) {
            snprintf(err, errlen, "bad output term in equation '%s'", eq);
            return false;
        }
        int r = 0;
        for (int j = 0; j <= nl; j++) {
            if (j == ell)
                for (int k = 0; k < ell_rank; k++)
                    s->out_labels[r++] = (char)('0' + (MAX_RANK - ell_rank + k));
            if (j < nl)
                s->out_labels[r++] = labels[j];
        }
        s->out_rank = r;
    } else {
        /* Implicit mode: broadcast dims, then letters seen once, alphabetically. */
        int r = 0;
        for (int k = 0; k < ell_rank; k++)
            s->out_labels[r++] = (char)('0' + (MAX_RANK - ell_rank + k));
        for (int c = 'A'; c <= 'z'; c++) {
            int seen = 0;
            for (int i = 0; i < nops; i++)
                for (int j = 0; j < s->rank[i]; j++)
                    seen += s->labels[i][j] == c;
            if (seen == 1 && r < MAX_RANK)
                s->out_labels[r++] = (char)c;
        }
        s->out_rank = r;
    }
    return true;
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
    Type r = {.elem = op_type(n, 0)->elem, .rank = s.out_rank};
    for (int o = 0; o < s.out_rank; o++) {
        int64_t dim = -1;
        for (int i = 0; i < n->nops; i++) {
            for (int j = 0; j < s.rank[i]; j++) {
                if (s.labels[i][j] != s.out_labels[o])
                    continue;
                int64_t v = ops[i]->dims[j];
                if (dim < 0 || dim == 1)
                    dim = v;
                else if (v != dim && v != 1) {
                    node_error(d, n, "label '%c' has sizes %lld and %lld", s.out_labels[o],
                               (long long)dim, (long long)v);
                    return false;
                }
            }
        }
        if (dim < 0) {
            node_error(d, n, "output label '%c' does not appear in the inputs", s.out_labels[o]);
            return false;
        }
        r.dims[o] = dim;
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
        if (w->kernel[i] < 1 || !dim_mul(ksize, w->kernel[i], &ksize))
            return false;
    }
    int64_t pads[2 * MAX_RANK];
    if (!fill_list(n, AK_strides, nspatial, 1, w->stride) ||
        !fill_list(n, AK_dilations, nspatial, 1, w->dilation) ||
        !fill_list(n, AK_pads, 2 * nspatial, 0, pads) ||
        !fill_list(n, AK_output_padding, nspatial, 0, w->out_padding))
        return false;
    for (int i = 0; i < nspatial; i++) {
        w->pad_begin[i] = pads[i];
        w->pad_end[i] = pads[nspatial + i];
        if (w->stride[i] < 1 || w->dilation[i] < 1 || w->pad_begin[i] < 0 || w->pad_end[i] < 0)
            return false;
    }
    w->group = node_attr_int(n, AK_group, 1);
    w->ceil_mode = node_attr_int(n, AK_ceil_mode, 0) != 0;
    w->count_include_pad = node_attr_int(n, AK_count_include_pad, 0) != 0;
    return w->group >= 1;
}

int64_t window_out_size(const Window *w, int i, int64_t in) {
    int64_t span, padded, last;
    if (!dim_mul(w->dilation[i], w->kernel[i] - 1, &span) ||
        !dim_add(in, w->pad_begin[i], &padded) || !dim_add(padded, w->pad_end[i], &padded))
        return -1;
    int64_t avail = padded - span - 1; /* both operands >= 0: no overflow */
    if (avail < 0)
        return 0;
    if (!w->ceil_mode)
        return avail / w->stride[i] + 1;
    int64_t out = avail / w->stride[i] + (avail % w->stride[i] != 0) + 1;
    /* The last window must start inside the input or the begin padding. */
    if (!dim_mul(out - 1, w->stride[i], &last) || last >= in + w->pad_begin[i])
        out--;
    return out;
}

/* Sets result i to r unless a window size overflowed (-1). */
static bool set_window_result(Node *n, DiagList *d, const Type *r, int i) {
    for (int k = 2; k < r->rank; k++) {
        if (r->dims[k] < 0) {
            node_error(d, n, "window attributes overflow the size of axis %d", k);
            return false;
        }
    }
    n->res[i].type = *r;
    return true;
}

static bool infer_conv(Node *n, DiagList *d) {
    if (!same_elem(n, d, 0, 1) || !need_rank(n, d, 0, 3, MAX_RANK) || !check_act(n, d))
        return false;
    const Type *x = op_type(n, 0), *w = op_type(n, 1);
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
    int64_t c = x->dims[1], m = w->dims[0];
    if (c % win.group || m % win.group || w->dims[1] != c / win.group) {
        node_error(d, n, "input has %lld channels but weight expects %lld x group %lld",
                   (long long)c, (long long)w->dims[1], (long long)win.group);
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
    for (int i = 0; i < ns; i++)
        r.dims[2 + i] = window_out_size(&win, i, x->dims[2 + i]);
    return set_window_result(n, d, &r, 0);
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
    int64_t m;
    if (!dim_mul(w->dims[1], win.group, &m)) {
        node_error(d, n, "group %lld is too large", (long long)win.group);
        return false;
    }
    if (n->nops == 3) {
        const Type *b = op_type(n, 2);
        if (b->rank != 1 || b->dims[0] != m) {
            node_error(d, n, "bias must have %lld elements", (long long)m);
            return false;
        }
    }
    Type r = *x;
    r.dims[1] = m;
    for (int i = 0; i < ns; i++) {
        /* stride * (in - 1) + out_padding + (kernel - 1) * dilation + 1 - pads */
        int64_t a, b, o;
        if (!dim_mul(win.stride[i], x->dims[2 + i] - 1, &a) ||
            !dim_mul(win.kernel[i] - 1, win.dilation[i], &b) || !dim_add(a, b, &o) ||
            !dim_add(o, win.out_padding[i], &o) || !dim_add(o, 1, &o) ||
            !dim_add(o, -win.pad_begin[i], &o) ||
            !dim_add(o, -win.pad_end[i], &o)) {
            node_error(d, n, "window attributes overflow the size of axis %d", 2 + i);
            return false;
        }
        if (o < 0) {
            node_error(d, n, "negative output size");
            return false;
        }
        r.dims[2 + i] = o;
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
    for (int i = 0; i < win.nspatial; i++)
        r.dims[2 + i] = window_out_size(&win, i, x->dims[2 + i]);
    if (!set_window_result(n, d, &r, 0))
        return false;
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
        if (!dim_add(r.dims[axis], t->dims[axis], &r.dims[axis])) {
            node_error(d, n, "concatenated axis overflows 64 bits");
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
        if (!dim_add(total, s, &total)) {
            node_error(d, n, "split sizes overflow 64 bits");
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
    int ks, ke, kt;
    const int64_t *s = node_attr_ints(n, AK_starts, &ks);
    const int64_t *e = node_attr_ints(n, AK_ends, &ke);
    const int64_t *t = node_attr_ints(n, AK_steps, &kt);
    for (int i = 0; i < in->rank; i++) {
        int64_t dim = in->dims[i];
        int64_t st = t && i < kt && t[i] ? t[i] : 1;
        int64_t b = s && i < ks ? s[i] : (st > 0 ? 0 : INT64_MAX);
        int64_t en = e && i < ke ? e[i] : (st > 0 ? INT64_MAX : INT64_MIN);
        if (b < 0)
            b = b < -dim ? 0 : b + dim;
        if (en < 0)
            en = en < -dim ? (st > 0 ? 0 : -1) : en + dim;
        if (st > 0) {
            b = b > dim ? dim : b;
            en = en > dim ? dim : en;
        } else {
            b = b > dim - 1 ? dim - 1 : b;
            en = en > dim - 1 ? dim - 1 : en;
        }
        /* b and en are clamped to [-1, dim]; the step may be anything */
        int64_t c;
        if (st > 0)
            c = en > b ? (en - b - 1) / st + 1 : 0;
        else
            c = b > en ? (int64_t)((uint64_t)(b - en - 1) / (0 - (uint64_t)st)) + 1 : 0;
        start[i] = b;
        step[i] = st;
        count[i] = c;
    }
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

static bool infer_gather_elements(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0), *idx = op_type(n, 1);
    int axis;
    if (!need_int_indices(n, d, 1))
        return false;
    if (idx->rank != x->rank || !axis_normalize(node_attr_int(n, AK_axis, 0), x->rank, &axis)) {
        node_error(d, n, "indices must have the data's rank, axis in range");
        return false;
    }
    n->res[0].type = *idx;
    n->res[0].type.elem = x->elem;
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
    if (b < 0 || b >= idx->rank || b + last > x->rank) {
        node_error(d, n, "indices' last dimension %lld too large for data rank %d",
                   (long long)last, x->rank);
        return false;
    }
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

static bool infer_scatter(Node *n, DiagList *d) {
    if (!need_int_indices(n, d, 1) || !same_elem(n, d, 0, 2))
        return false;
    if (n->kind == NK_SCATTER_ELEMENTS) {
        int axis;
        const Type *x = op_type(n, 0);
        if (!axis_normalize(node_attr_int(n, AK_axis, 0), x->rank, &axis) ||
            op_type(n, 1)->rank != x->rank || !type_same_shape(op_type(n, 1), op_type(n, 2))) {
            node_error(d, n, "indices and updates must have the data's rank and one shape");
            return false;
        }
    }
    n->res[0].type = *op_type(n, 0);
    return true;
}

static bool infer_expand(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0);
    Type *r = &n->res[0].type, t;
    if (r->elem != x->elem || !type_broadcast(x, r, &t) || !type_same_shape(&t, r)) {
        char a[TYPE_STR_MAX], b[TYPE_STR_MAX];
        node_error(d, n, "cannot expand %s to %s", tstr(x, a), tstr(r, b));
        return false;
    }
    return true;
}

static bool infer_tile(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0);
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
        if (!dim_mul(r.dims[i], rep[i], &r.dims[i])) {
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
    const char *mode = node_attr_str(n, AK_mode, "constant");
    if (strcmp(mode, "constant") && strcmp(mode, "reflect") && strcmp(mode, "edge")) {
        node_error(d, n, "unknown mode '%s'", mode);
        return false;
    }
    Type r = *x;
    for (int i = 0; i < x->rank; i++) {
        if (pads[i] < -x->dims[i] || pads[x->rank + i] < -x->dims[i]) {
            node_error(d, n, "padding of axis %d removes more than the axis holds", i);
            return false;
        }
        if (!dim_add(r.dims[i], pads[i], &r.dims[i]) ||
            !dim_add(r.dims[i], pads[x->rank + i], &r.dims[i])) {
            node_error(d, n, "padding of axis %d overflows 64 bits", i);
            return false;
        }
        if (r.dims[i] < 0 || (strcmp(mode, "constant") && x->dims[i] == 0 && r.dims[i] > 0)) {
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
    if (b >= 1 && !dim_mul(b, b, &bb)) {
        node_error(d, n, "blocksize %lld is too large", (long long)b);
        return false;
    }
    if (b < 1 || x->dims[1] % bb) {
        node_error(d, n, "channels not divisible by blocksize squared");
        return false;
    }
    Type r = *x;
    r.dims[1] /= bb;
    if (!dim_mul(r.dims[2], b, &r.dims[2]) || !dim_mul(r.dims[3], b, &r.dims[3])) {
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
    if (b < 1 || x->dims[2] % b || x->dims[3] % b) {
        node_error(d, n, "spatial size not divisible by blocksize");
        return false;
    }
    Type r = *x;
    int64_t bb;
    if (!dim_mul(b, b, &bb) || !dim_mul(r.dims[1], bb, &r.dims[1])) {
        node_error(d, n, "result too large");
        return false;
    }
    r.dims[2] /= b;
    r.dims[3] /= b;
    n->res[0].type = r;
    return true;
}

static bool infer_resize(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0);
    Type *r = &n->res[0].type;
    int k;
    node_attr_floats(n, AK_scales, &k);
    if (r->elem != x->elem || r->rank != x->rank || (k && k != x->rank)) {
        node_error(d, n, "result must keep the input's kind and rank");
        return false;
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
    int64_t k = node_attr_int(n, AK_k, -1);
    if (k < 0 || k > x->dims[axis]) {
        node_error(d, n, "k=%lld out of range for axis of size %lld", (long long)k,
                   (long long)x->dims[axis]);
        return false;
    }
    Type r = *x;
    r.dims[axis] = k;
    n->res[0].type = r;
    r.elem = ELEM_I64;
    n->res[1].type = r;
    return true;
}

static bool infer_reverse_sequence(Node *n, DiagList *d) {
    const Type *x = op_type(n, 0);
    int64_t b = node_attr_int(n, AK_batch_axis, 1), t = node_attr_int(n, AK_time_axis, 0);
    if (x->rank < 2 || b < 0 || t < 0 || b > 1 || t > 1 || b == t ||
        op_type(n, 1)->rank != 1 || op_type(n, 1)->dims[0] != x->dims[b]) {
        node_error(d, n, "bad batch/time axes or sequence lengths");
        return false;
    }
    n->res[0].type = *x;
    return true;
}

/* ---- dispatch ----------------------------------------------------------- */

static const InferFn infer_fns[NK_COUNT] = {
#define NODE(E, nm, omin, omax, rmin, rmax, ty, inf, attrs) [NK_##E] = infer_##inf,
#include "core/nodes.def"
};

bool infer_node(Node *n, DiagList *d) {
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
    if (!infer_fns[n->kind](n, d))
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
