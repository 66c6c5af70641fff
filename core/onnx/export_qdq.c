/* ONNX export of a quantized graph in QDQ form (what ONNX Runtime's own
 * quantizer writes): the source model's float operators kept, with
 * QuantizeLinear -> DequantizeLinear after every value the quantize pass made
 * an integer, and conv/gemm/matmul weights stored as int8 (per-channel, a
 * DequantizeLinear with axis) with int32 biases. The parameters are read off
 * the quantized graph, whose nodes bear the ONNX node names, so a runtime
 * that fuses DQ -> op -> Q into its integer kernels computes what glowc does.
 *
 * Ownership: the unpacked model is protobuf-c's (malloc); everything added
 * is malloc'd too and everything replaced is freed, so free_unpacked frees
 * the edited model whole. */
#include "core/onnx/export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "core/onnx/import.h"

/* An integer value of the quantized graph, by the ONNX name of the float
 * value it stands for. from_float: made by a quantize_linear of a float
 * value (which keeps its float readers); else the value itself is computed
 * in integers and every reader sees it dequantized. */
typedef struct ActQ {
    const char *name;
    ElemKind elem;
    float scale;
    int32_t offset;
    bool from_float;
    const Tensor *data; /* a quantized constant: its integers */
} ActQ;

typedef struct Qdq {
    const Function *f;
    Onnx__GraphProto *g;
    const char *src;
    DiagList *d;
    ActQ *acts;
    int nacts;
    const Node **convs; /* qlinear_conv nodes: their weights and biases */
    int nconvs;
    char **onnx_names;  /* by ONNX node index: the name glowc gave it */
    Onnx__NodeProto **out;
    size_t nout, capout;
    bool ok;
} Qdq;

static char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    memcpy(p, s, n);
    return p;
}

static char *xprintf2(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 1;
    char *p = malloc(n);
    snprintf(p, n, "%s%s", a, b);
    return p;
}

/* "SRC: error: ...", fmt taking one string. */
static bool fail(Qdq *q, const char *fmt, const char *what) {
    diag_error(q->d, q->src, fmt, what);
    q->ok = false;
    return false;
}

/* ---- what the quantized graph chose ---------------------------------------------- */

static const ActQ *act_find(const Qdq *q, const char *name) {
    for (int i = 0; i < q->nacts; i++)
        if (!strcmp(q->acts[i].name, name))
            return &q->acts[i];
    return NULL;
}

static bool is_weight_of_conv(const Qdq *q, const Node *c) {
    for (int i = 0; i < q->nconvs; i++)
        for (int k = 3; k < 9; k++)
            if (q->convs[i]->ops[k]->def == c)
                return true;
    return false;
}

/* A node of the quantized graph whose integer result names a float value:
 * not the rescales before a concat (the concat's readers rescale), nor the
 * reshapes a matmul's rewrite puts around its 1x1 conv (named after the
 * value they reshape, at its parameters). */
static bool names_a_value(const Node *n) {
    const Type *t = &n->res[0].type;
    if (n->nres < 1 || t->quant != QUANT_TENSOR || elem_is_float(t->elem) || !n->name ||
        !n->name[0] || strchr(n->name, '#'))
        return false;
    if (n->kind == NK_RESCALE)
        return false;
    return !(n->kind == NK_RESHAPE && n->nops == 1 && n->ops[0]->def->name &&
             !strcmp(n->name, n->ops[0]->def->name));
}

static void add_act(Qdq *q, const Node *n, bool from_float, const Tensor *data) {
    const Type *t = &n->res[0].type;
    const ActQ *old = act_find(q, n->name);
    if (old) {
        if (old->elem != t->elem || old->scale != t->scale || old->offset != t->offset)
            fail(q, "value '%s' has two quantizations in the quantized graph", n->name);
        return;
    }
    q->acts[q->nacts++] =
        (ActQ){n->name, t->elem, t->scale, t->offset, from_float && !data, data};
}

static void collect(Qdq *q) {
    const Function *f = q->f;
    int cap = f->nnodes + f->nconsts + 1;
    q->acts = calloc((size_t)cap, sizeof *q->acts);
    q->convs = calloc((size_t)cap, sizeof *q->convs);
    for (const Node *n = f->first; n; n = n->next)
        if (n->kind == NK_QLINEAR_CONV)
            q->convs[q->nconvs++] = n;
    for (int i = 0; i < f->nconsts; i++) {
        const Node *c = f->consts[i];
        if (names_a_value(c) && c->payload && !is_weight_of_conv(q, c))
            add_act(q, c, true, c->payload);
    }
    for (const Node *n = f->first; n; n = n->next)
        if (names_a_value(n))
            add_act(q, n, n->kind == NK_QUANTIZE_LINEAR, NULL);
}

/* An ONNX node glowc computes in integers: it reads the dequantized form of
 * a float value that was quantized for it. */
static bool reads_integers(const Qdq *q, const char *name) {
    const ActQ *a = act_find(q, name);
    if (a && !a->from_float && !a->data)
        return true;
    for (int i = 0; i < q->nconvs; i++)
        if (!strcmp(q->convs[i]->ops[3]->def->name, name))
            return true;
    return false;
}

/* ---- building protos ------------------------------------------------------------- */

static Onnx__TensorProto *tensor_proto(const char *name, int onnx_elem, int rank,
                                       const int64_t *dims, const void *data, size_t bytes) {
    Onnx__TensorProto *t = malloc(sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = xstrdup(name);
    t->has_data_type = true;
    t->data_type = onnx_elem;
    t->n_dims = (size_t)rank;
    t->dims = malloc(sizeof(int64_t) * (size_t)(rank ? rank : 1));
    if (rank > 0)
        memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
    t->has_raw_data = true;
    t->raw_data.len = bytes;
    t->raw_data.data = malloc(bytes ? bytes : 1);
    memcpy(t->raw_data.data, data, bytes);
    return t;
}

static void add_initializer(Qdq *q, Onnx__TensorProto *t) {
    Onnx__GraphProto *g = q->g;
    g->initializer = realloc(g->initializer, sizeof *g->initializer * (g->n_initializer + 1));
    g->initializer[g->n_initializer++] = t;
}

/* A scalar initializer: the scale (f32) or zero point of a value. */
static void add_scalar(Qdq *q, const char *name, ElemKind elem, double v) {
    union {
        float f;
        int8_t i8;
        uint8_t u8;
        int32_t i32;
    } u = {0};
    if (elem == ELEM_F32)
        u.f = (float)v;
    else if (elem == ELEM_U8)
        u.u8 = (uint8_t)v;
    else if (elem == ELEM_I32)
        u.i32 = (int32_t)v;
    else
        u.i8 = (int8_t)v;
    add_initializer(q, tensor_proto(name, elem_to_onnx(elem), 0, NULL, &u, elem_size(elem)));
}

static void push_node(Qdq *q, Onnx__NodeProto *n) {
    if (q->nout == q->capout) {
        q->capout = q->capout ? q->capout * 2 : 64;
        q->out = realloc(q->out, sizeof *q->out * q->capout);
    }
    q->out[q->nout++] = n;
}

/* op(in, scale, zero) -> out, named after out; axis >= 0 adds the attribute. */
static void push_qdq_node(Qdq *q, const char *op, const char *in, const char *scale,
                          const char *zero, const char *out, int axis) {
    Onnx__NodeProto *n = malloc(sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = xstrdup(op);
    n->name = xprintf2(out, op[0] == 'Q' ? "/QuantizeLinear" : "/DequantizeLinear");
    n->n_input = 3;
    n->input = malloc(3 * sizeof(char *));
    n->input[0] = xstrdup(in);
    n->input[1] = xstrdup(scale);
    n->input[2] = xstrdup(zero);
    n->n_output = 1;
    n->output = malloc(sizeof(char *));
    n->output[0] = xstrdup(out);
    if (axis >= 0) {
        Onnx__AttributeProto *a = malloc(sizeof *a);
        onnx__attribute_proto__init(a);
        a->name = xstrdup("axis");
        a->has_type = true;
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        a->has_i = true;
        a->i = axis;
        n->n_attribute = 1;
        n->attribute = malloc(sizeof *n->attribute);
        n->attribute[0] = a;
    }
    push_node(q, n);
}

/* ---- the rewrite ----------------------------------------------------------------- */

static void replace_str(char **slot, const char *s) {
    char *n = xstrdup(s);
    free(*slot);
    *slot = n;
}

/* Every reader of `from` that glowc computes in integers reads `to`. */
static void rewire_readers(Qdq *q, const char *from, const char *to) {
    for (size_t i = 0; i < q->g->n_node; i++) {
        Onnx__NodeProto *n = q->g->node[i];
        if (!reads_integers(q, q->onnx_names[i]))
            continue;
        for (size_t k = 0; k < n->n_input; k++)
            if (!strcmp(n->input[k], from))
                replace_str(&n->input[k], to);
    }
}

static bool is_graph_output(const Onnx__GraphProto *g, const char *name) {
    for (size_t i = 0; i < g->n_output; i++)
        if (!strcmp(g->output[i]->name, name))
            return true;
    return false;
}

/* Q of `in` (float value t) at a's parameters, then a DequantizeLinear of
 * its own for each reader of t -- all readers, or with `integer_readers`
 * those glowc computes in integers -- since ONNX Runtime fuses a DQ into
 * its reader's int8 kernel only when the DQ has no other reader. `t` itself
 * is then, if a graph output, the DQ's. */
static void push_q_dqs(Qdq *q, const ActQ *a, const char *in, const char *t,
                       bool integer_readers, bool output) {
    char *scale = xprintf2(t, "/scale"), *zero = xprintf2(t, "/zero_point");
    char *qv = xprintf2(t, "/quantized");
    add_scalar(q, scale, ELEM_F32, a->scale);
    /* int8 activations as uint8, every integer and the zero point shifted by
     * 128: the same reals and the same rounding, and the form ONNX Runtime's
     * x86 int8 kernels take (it fuses an int8 Q/DQ only when it can make
     * that shift itself, one reader per Q). */
    if (a->elem == ELEM_I8)
        add_scalar(q, zero, ELEM_U8, a->offset + 128);
    else
        add_scalar(q, zero, a->elem, a->offset);
    push_qdq_node(q, "QuantizeLinear", in, scale, zero, qv, -1);
    for (size_t i = 0; i < q->g->n_node; i++) {
        Onnx__NodeProto *n = q->g->node[i];
        if (integer_readers && !reads_integers(q, q->onnx_names[i]))
            continue;
        for (size_t k = 0; k < n->n_input; k++) {
            if (strcmp(n->input[k], t))
                continue;
            char idx[48];
            snprintf(idx, sizeof idx, "/dequantized/%zu/%zu", i, k);
            char *out = xprintf2(t, idx);
            push_qdq_node(q, "DequantizeLinear", qv, scale, zero, out, -1);
            replace_str(&n->input[k], out);
            free(out);
        }
    }
    if (output)
        push_qdq_node(q, "DequantizeLinear", qv, scale, zero, t, -1);
    free(scale);
    free(zero);
    free(qv);
}

static bool is_graph_input(const Onnx__GraphProto *g, const char *name) {
    for (size_t i = 0; i < g->n_input; i++)
        if (!strcmp(g->input[i]->name, name))
            return true;
    return false;
}

static Onnx__TensorProto *find_initializer(const Onnx__GraphProto *g, const char *name) {
    for (size_t i = 0; i < g->n_initializer; i++)
        if (!strcmp(g->initializer[i]->name, name))
            return g->initializer[i];
    return NULL;
}

static int onnx_node_index(const Qdq *q, const char *name) {
    for (size_t i = 0; i < q->g->n_node; i++)
        if (!strcmp(q->onnx_names[i], name))
            return (int)i;
    return -1;
}

/* A quantized constant: its integers as an initializer and a DQ, read by
 * the nodes glowc computes in integers. */
static void export_constant(Qdq *q, const ActQ *a) {
    int at = onnx_node_index(q, a->name);
    const char *t = at >= 0 ? q->g->node[at]->output[0] : a->name;
    if (at < 0 && !find_initializer(q->g, a->name)) {
        fail(q, "the quantized constant '%s' is no initializer or node of the model", a->name);
        return;
    }
    char *qv = xprintf2(t, "/quantized"), *out = xprintf2(t, "/dequantized");
    char *scale = xprintf2(out, "/scale"), *zero = xprintf2(out, "/zero_point");
    const Tensor *c = a->data;
    add_initializer(q, tensor_proto(qv, elem_to_onnx(c->type.elem), c->type.rank, c->type.dims,
                                    c->data, tensor_bytes(c)));
    add_scalar(q, scale, ELEM_F32, a->scale);
    add_scalar(q, zero, a->elem, a->offset);
    push_qdq_node(q, "DequantizeLinear", qv, scale, zero, out, -1);
    rewire_readers(q, t, out);
    free(qv);
    free(out);
    free(scale);
    free(zero);
}

static void attr_set_float(Onnx__NodeProto *n, const char *name, float v) {
    for (size_t i = 0; i < n->n_attribute; i++)
        if (!strcmp(n->attribute[i]->name, name))
            n->attribute[i]->f = v;
}

static int64_t attr_int(const Onnx__NodeProto *n, const char *name, int64_t dflt) {
    for (size_t i = 0; i < n->n_attribute; i++)
        if (!strcmp(n->attribute[i]->name, name))
            return n->attribute[i]->i;
    return dflt;
}

/* Input k of ONNX node n becomes DQ(ints, scales [m], zeros [m], axis). */
static void set_dq_input(Qdq *q, Onnx__NodeProto *n, size_t k, const char *what,
                         const Tensor *ints, const int64_t *dims, int rank, const float *scales,
                         const void *zeros, ElemKind zero_elem, int64_t m, int axis) {
    const char *base = n->output[0];
    char *qv = xprintf2(base, what), *out = xprintf2(qv, "/dequantized");
    char *scale = xprintf2(qv, "/scale"), *zero = xprintf2(qv, "/zero_point");
    add_initializer(q, tensor_proto(qv, elem_to_onnx(ints->type.elem), rank, dims, ints->data,
                                    tensor_bytes(ints)));
    add_initializer(q, tensor_proto(scale, elem_to_onnx(ELEM_F32), 1, &m, scales, 4 * (size_t)m));
    add_initializer(q, tensor_proto(zero, elem_to_onnx(zero_elem), 1, &m, zeros,
                                    elem_size(zero_elem) * (size_t)m));
    push_qdq_node(q, "DequantizeLinear", qv, scale, zero, out, axis);
    if (k >= n->n_input) {
        n->input = realloc(n->input, sizeof(char *) * (k + 1));
        while (n->n_input <= k)
            n->input[n->n_input++] = xstrdup("");
    }
    replace_str(&n->input[k], out);
    free(qv);
    free(out);
    free(scale);
    free(zero);
}

/* The weights and bias of the ONNX node a qlinear_conv came from, as
 * glowc quantized them. Gemm and MatMul: glowc's [N,K,1,1] weights (alpha
 * folded in) go back to the node's layout; alpha and beta become 1. */
static void export_weights(Qdq *q, const Node *c, Arena *a) {
    const char *name = c->ops[3]->def->name;
    int at = onnx_node_index(q, name);
    if (at < 0) {
        fail(q, "the quantized conv '%s' is no node of the model", name);
        return;
    }
    Onnx__NodeProto *n = q->g->node[at];
    const Tensor *w = c->ops[3]->def->payload, *ws = c->ops[4]->def->payload;
    const Tensor *wz = c->ops[5]->def->payload, *b = c->ops[8]->def->payload;
    const Tensor *xs = c->ops[1]->def->payload;
    if (!w || !ws || !wz || !b || !xs) {
        fail(q, "the quantized conv '%s' has weights that are not constants", name);
        return;
    }
    int64_t m = w->type.dims[0], k = tensor_numel(w) / (m ? m : 1);
    float *bscale = malloc(sizeof(float) * (size_t)m);
    float *wscale = malloc(sizeof(float) * (size_t)m);
    for (int64_t i = 0; i < m; i++) {
        wscale[i] = (float)tensor_get_f64(ws, tensor_numel(ws) == 1 ? 0 : i);
        bscale[i] = (float)(tensor_get_f64(xs, 0) * (double)wscale[i]);
    }
    int32_t *bzero = calloc((size_t)m, sizeof *bzero);
    int8_t *wzero = calloc((size_t)m, sizeof *wzero);
    bool conv = !strcmp(n->op_type, "Conv");
    bool rows = conv || (!strcmp(n->op_type, "Gemm") && attr_int(n, "transB", 0));
    const Tensor *wout = w;
    int64_t dims2[2] = {rows ? m : k, rows ? k : m};
    if (!rows) { /* [K, N]: the channel axis is 1 */
        Type t = type_make(ELEM_I8, 2, dims2);
        Tensor *tr = tensor_new(a, &t);
        for (int64_t o = 0; o < m; o++)
            for (int64_t i = 0; i < k; i++)
                ((int8_t *)tr->data)[i * m + o] = ((const int8_t *)w->data)[o * k + i];
        wout = tr;
    }
    set_dq_input(q, n, 1, "/weight_quantized", wout, conv ? w->type.dims : dims2,
                 conv ? w->type.rank : 2, wscale, wzero, ELEM_I8, m, rows ? 0 : 1);
    if (strcmp(n->op_type, "MatMul")) /* MatMul has no bias (glowc's is zero) */
        set_dq_input(q, n, 2, "/bias_quantized", b, &m, 1, bscale, bzero, ELEM_I32, m, 0);
    if (!strcmp(n->op_type, "Gemm")) {
        attr_set_float(n, "alpha", 1);
        attr_set_float(n, "beta", 1);
    }
    free(bscale);
    free(wscale);
    free(bzero);
    free(wzero);
}

/* The float weights the int8 ones replaced: no node reads them any more. */
static void drop_unread_initializers(Onnx__GraphProto *g) {
    size_t k = 0;
    for (size_t i = 0; i < g->n_initializer; i++) {
        Onnx__TensorProto *t = g->initializer[i];
        bool read = is_graph_input(g, t->name);
        for (size_t n = 0; n < g->n_node && !read; n++)
            for (size_t j = 0; j < g->node[n]->n_input && !read; j++)
                read = !strcmp(g->node[n]->input[j], t->name);
        for (size_t o = 0; o < g->n_output && !read; o++)
            read = !strcmp(g->output[o]->name, t->name);
        if (read)
            g->initializer[k++] = t;
        else
            onnx__tensor_proto__free_unpacked(t, NULL);
    }
    g->n_initializer = k;
}


/* ---- opset 13 forms -------------------------------------------------------------- *
 * Per-channel DequantizeLinear (an axis) needs opset 13, so an older model
 * is written as opset 13: each source node whose signature changed on the
 * way is rewritten to its opset-13 form in place (no node is added, so the
 * importer's OP_INDEX names stay valid); what became an input is a new
 * initializer named after the node's first output. */

typedef struct Up {
    Qdq *q;
    Onnx__GraphProto *g; /* the graph (or body) being converted */
} Up;

/* Removes attribute `name` from n and returns it (NULL if absent). */
static Onnx__AttributeProto *attr_take(Onnx__NodeProto *n, const char *name) {
    for (size_t i = 0; i < n->n_attribute; i++) {
        Onnx__AttributeProto *a = n->attribute[i];
        if (strcmp(a->name, name))
            continue;
        memmove(&n->attribute[i], &n->attribute[i + 1],
                (n->n_attribute - i - 1) * sizeof *n->attribute);
        n->n_attribute--;
        return a;
    }
    return NULL;
}

static void attr_add_str(Onnx__NodeProto *n, const char *name, const char *v) {
    Onnx__AttributeProto *a = malloc(sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = xstrdup(name);
    a->has_type = true;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    a->has_s = true;
    a->s.len = strlen(v);
    a->s.data = (uint8_t *)xstrdup(v);
    n->attribute = realloc(n->attribute, (n->n_attribute + 1) * sizeof *n->attribute);
    n->attribute[n->n_attribute++] = a;
}

/* Input k of n is `name` ("" fills the optional ones before it). */
static void set_input(Onnx__NodeProto *n, size_t k, const char *name) {
    if (k >= n->n_input) {
        n->input = realloc(n->input, (k + 1) * sizeof *n->input);
        for (size_t i = n->n_input; i <= k; i++)
            n->input[i] = xstrdup("");
        n->n_input = k + 1;
    }
    replace_str(&n->input[k], name);
}

/* An initializer "OUT0/what" of int64s or one float, made input k of n. */
static void input_ints(Up *u, Onnx__NodeProto *n, size_t k, const char *what, size_t count,
                       const int64_t *v) {
    char *name = xprintf2(n->output[0], what);
    int64_t dims[1] = {(int64_t)count};
    Onnx__TensorProto *t = tensor_proto(name, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, dims, v,
                                        count * sizeof *v);
    u->g->initializer = realloc(u->g->initializer, sizeof *u->g->initializer *
                                                       (u->g->n_initializer + 1));
    u->g->initializer[u->g->n_initializer++] = t;
    set_input(n, k, name);
    free(name);
}

static void input_float(Up *u, Onnx__NodeProto *n, size_t k, const char *what, float v) {
    char *name = xprintf2(n->output[0], what);
    Onnx__TensorProto *t = tensor_proto(name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0, NULL, &v,
                                        sizeof v);
    u->g->initializer = realloc(u->g->initializer, sizeof *u->g->initializer *
                                                       (u->g->n_initializer + 1));
    u->g->initializer[u->g->n_initializer++] = t;
    set_input(n, k, name);
    free(name);
}

/* Attribute `name` (ints) becomes input k, when present. */
static bool ints_to_input(Up *u, Onnx__NodeProto *n, const char *name, size_t k) {
    Onnx__AttributeProto *a = attr_take(n, name);
    if (a) {
        char what[32];
        snprintf(what, sizeof what, "/%s", name);
        input_ints(u, n, k, what, a->n_ints, a->ints);
        onnx__attribute_proto__free_unpacked(a, NULL);
    }
    return true;
}

/* Squeeze, Unsqueeze, ReduceSum (13): axes is input 1. Split (13): split. */
static bool up_axes(Up *u, Onnx__NodeProto *n) {
    return ints_to_input(u, n, "axes", 1);
}

static bool up_split(Up *u, Onnx__NodeProto *n) {
    return ints_to_input(u, n, "split", 1);
}

/* Slice (10): starts, ends, axes are inputs 1-3. */
static bool up_slice(Up *u, Onnx__NodeProto *n) {
    return ints_to_input(u, n, "starts", 1) && ints_to_input(u, n, "ends", 2) &&
           ints_to_input(u, n, "axes", 3);
}

/* TopK (10): k is input 1, one int64. */
static bool up_topk(Up *u, Onnx__NodeProto *n) {
    Onnx__AttributeProto *a = attr_take(n, "k");
    if (a) {
        input_ints(u, n, 1, "/k", 1, &a->i);
        onnx__attribute_proto__free_unpacked(a, NULL);
    }
    return true;
}

/* Clip (11): min and max are inputs 1 and 2 (float: opset < 11 Clip takes
 * float kinds, and glowc's importer read them as float). */
static bool up_clip(Up *u, Onnx__NodeProto *n) {
    Onnx__AttributeProto *lo = attr_take(n, "min"), *hi = attr_take(n, "max");
    if (lo)
        input_float(u, n, 1, "/min", lo->f);
    if (hi)
        input_float(u, n, 2, "/max", hi->f);
    onnx__attribute_proto__free_unpacked(lo, NULL);
    onnx__attribute_proto__free_unpacked(hi, NULL);
    return true;
}

/* Pad (11): pads is input 1, value input 2 (mode stays an attribute). */
static bool up_pad(Up *u, Onnx__NodeProto *n) {
    Onnx__AttributeProto *v = attr_take(n, "value");
    ints_to_input(u, n, "pads", 1);
    if (v && v->f != 0)
        input_float(u, n, 2, "/value", v->f);
    onnx__attribute_proto__free_unpacked(v, NULL);
    return true;
}

/* Dropout (12): ratio became an input; at inference it does nothing. */
static bool up_dropout(Up *u, Onnx__NodeProto *n) {
    (void)u;
    onnx__attribute_proto__free_unpacked(attr_take(n, "ratio"), NULL);
    onnx__attribute_proto__free_unpacked(attr_take(n, "is_test"), NULL);
    return true;
}

/* Upsample (9) and Resize (10): Resize (13) with an empty roi, scales input
 * 2, and the old sampling written out: asymmetric coordinates, nearest
 * rounding down. */
static bool up_resize(Up *u, Onnx__NodeProto *n) {
    if (n->n_input < 2)
        return fail(u->q, "node '%s' (Upsample/Resize) has no scales input", n->output[0]);
    char *scales = xstrdup(n->input[1]);
    set_input(n, 2, scales);
    replace_str(&n->input[1], "");
    free(scales);
    replace_str(&n->op_type, "Resize");
    onnx__attribute_proto__free_unpacked(attr_take(n, "coordinate_transformation_mode"), NULL);
    onnx__attribute_proto__free_unpacked(attr_take(n, "nearest_mode"), NULL);
    attr_add_str(n, "coordinate_transformation_mode", "asymmetric");
    attr_add_str(n, "nearest_mode", "floor");
    return true;
}

/* Softmax, LogSoftmax, Hardmax (13): over one axis, where older opsets
 * flattened to 2-D at `axis` (default 1). The same when axis is the last;
 * the rank is the glowc graph's (its node bears the ONNX name). */
static bool up_softmax(Up *u, Onnx__NodeProto *n) {
    const char *name = n->name && n->name[0] ? n->name : NULL;
    const Node *gn = name ? graph_last_named(u->q->f, name) : NULL;
    int rank = gn && gn->nres > 0 ? gn->res[0].type.rank : -1;
    Onnx__AttributeProto *a = attr_take(n, "axis");
    int64_t axis = a ? a->i : 1;
    onnx__attribute_proto__free_unpacked(a, NULL);
    if (rank < 0)
        return fail(u->q, "node '%s' (Softmax family, opset < 13): its rank is unknown, so its "
                    "axis cannot be written in opset 13's form", n->output[0]);
    if (axis < 0)
        axis += rank;
    if (axis != rank - 1)
        return fail(u->q, "node '%s' (Softmax family, opset < 13) flattens from an axis "
                    "before the last, which opset 13's one-axis form does not say", n->output[0]);
    Onnx__AttributeProto *b = malloc(sizeof *b);
    onnx__attribute_proto__init(b);
    b->name = xstrdup("axis");
    b->has_type = true;
    b->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    b->has_i = true;
    b->i = -1;
    n->attribute = realloc(n->attribute, (n->n_attribute + 1) * sizeof *n->attribute);
    n->attribute[n->n_attribute++] = b;
    return true;
}

/* Scatter (deprecated in 11): ScatterElements, the same operator. */
static bool up_scatter(Up *u, Onnx__NodeProto *n) {
    (void)u;
    replace_str(&n->op_type, "ScatterElements");
    return true;
}

/* Each operator whose form changed between the model's opset and 13: the
 * first opset of the new form (a model below it is converted). */
static const struct {
    const char *op;
    int since;
    bool (*fn)(Up *u, Onnx__NodeProto *n);
} upgrades[] = {
    {"Squeeze", 13, up_axes},      {"Unsqueeze", 13, up_axes},   {"ReduceSum", 13, up_axes},
    {"Split", 13, up_split},       {"Slice", 10, up_slice},      {"TopK", 10, up_topk},
    {"Clip", 11, up_clip},         {"Pad", 11, up_pad},          {"Dropout", 12, up_dropout},
    {"Upsample", 14, up_resize},   {"Resize", 11, up_resize},    {"Softmax", 13, up_softmax},
    {"LogSoftmax", 13, up_softmax}, {"Hardmax", 13, up_softmax}, {"Scatter", 14, up_scatter},
};

static bool upgrade_graph(Qdq *q, Onnx__GraphProto *g, int opset) {
    Up u = {q, g};
    for (size_t i = 0; i < g->n_node && q->ok; i++) {
        Onnx__NodeProto *n = g->node[i];
        if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx"))
            continue;
        for (size_t k = 0; k < sizeof upgrades / sizeof *upgrades; k++)
            if (!strcmp(n->op_type, upgrades[k].op) && opset < upgrades[k].since &&
                n->n_output > 0)
                upgrades[k].fn(&u, n);
        for (size_t k = 0; k < n->n_attribute; k++) {
            Onnx__AttributeProto *a = n->attribute[k];
            if (a->g)
                upgrade_graph(q, a->g, opset);
            for (size_t j = 0; j < a->n_graphs; j++)
                upgrade_graph(q, a->graphs[j], opset);
        }
    }
    return q->ok;
}

/* The model as opset 13 (IR version 7, the first to allow it). */
static bool upgrade_model(Qdq *q, Onnx__ModelProto *mp, int opset) {
    if (!upgrade_graph(q, mp->graph, opset))
        return false;
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        Onnx__OperatorSetIdProto *o = mp->opset_import[i];
        if (!o->domain || !o->domain[0] || !strcmp(o->domain, "ai.onnx")) {
            o->has_version = true;
            o->version = 13;
        }
    }
    if (mp->ir_version < 7) {
        mp->has_ir_version = true;
        mp->ir_version = 7;
    }
    return true;
}

/* Nodes: the weights' and constants' DQs and the inputs' Q/DQ first, then
 * each source node followed by the Q/DQ of its result. */
static void rewrite(Qdq *q, Arena *a) {
    Onnx__GraphProto *g = q->g;
    for (int i = 0; q->ok && i < q->nconvs; i++)
        export_weights(q, q->convs[i], a);
    for (int i = 0; q->ok && i < q->nacts; i++) {
        const ActQ *x = &q->acts[i];
        if (x->data) {
            export_constant(q, x);
        } else if (is_graph_input(g, x->name)) {
            push_q_dqs(q, x, x->name, x->name, true, false);
        } else if (onnx_node_index(q, x->name) < 0) {
            fail(q, "the quantized value '%s' is no node or input of the model", x->name);
        }
    }
    for (size_t i = 0; q->ok && i < g->n_node; i++) {
        Onnx__NodeProto *n = g->node[i];
        push_node(q, n);
        const ActQ *x = act_find(q, q->onnx_names[i]);
        if (!x || x->data || is_graph_input(g, x->name) || n->n_output < 1)
            continue;
        char *t = xstrdup(n->output[0]);
        if (x->from_float) { /* the float value stays; integer readers see Q/DQ */
            push_q_dqs(q, x, t, t, true, false);
        } else { /* computed in integers: every reader, outputs too, sees Q/DQ */
            char *fv = xprintf2(t, "/float");
            replace_str(&n->output[0], fv);
            push_q_dqs(q, x, fv, t, false, is_graph_output(g, t));
            free(fv);
        }
        free(t);
    }
    if (!q->ok)
        return;
    free(g->node);
    g->node = q->out;
    g->n_node = q->nout;
    q->out = NULL;
    drop_unread_initializers(g);
}

bool onnx_write_qdq(const char *src, const char *dst, const Function *f, DiagList *d) {
    Onnx__ModelProto *mp = onnx_model_read(src, d);
    if (!mp)
        return false;
    Qdq q = {.f = f, .g = mp->graph, .src = src, .d = d, .ok = true};
    /* The names the importer gave: the ONNX node's, or OP_INDEX for none. */
    size_t nsrc = q.g->n_node;
    q.onnx_names = calloc(nsrc + 1, sizeof(char *));
    for (size_t i = 0; i < nsrc; i++) {
        const Onnx__NodeProto *n = q.g->node[i];
        char idx[32];
        snprintf(idx, sizeof idx, "_%zu", i);
        q.onnx_names[i] = n->name && n->name[0] ? xstrdup(n->name) : xprintf2(n->op_type, idx);
    }
    /* Per-channel DequantizeLinear needs opset 13: an older model's nodes
     * are written in their opset-13 forms (after the names above, which a
     * renamed operator would change). */
    int opset = onnx_default_opset(mp);
    if (opset < 13)
        upgrade_model(&q, mp, opset);
    Arena *a = arena_new();
    if (q.ok)
        collect(&q);
    if (q.ok)
        rewrite(&q, a);
    bool ok = q.ok;
    if (ok)
        ok = onnx_model_write(mp, dst, d);
    for (size_t i = 0; i < nsrc; i++)
        free(q.onnx_names[i]);
    /* The nodes added before a failure are in q.out only. */
    for (size_t i = 0; q.out && i < q.nout; i++) {
        bool source = false;
        for (size_t k = 0; k < q.g->n_node && !source; k++)
            source = q.g->node[k] == q.out[i];
        if (!source)
            onnx__node_proto__free_unpacked(q.out[i], NULL);
    }
    free(q.out);
    free(q.onnx_names);
    free(q.acts);
    free(q.convs);
    arena_destroy(a);
    onnx__model_proto__free_unpacked(mp, NULL);
    return ok;
}
