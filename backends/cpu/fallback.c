/* The fallback kernel (--fallback=interp): any instruction, run by the
 * reference interpreter's kernel for its node kind. It rebuilds the node --
 * kind, operand types, attributes -- from the descriptor, so the semantics
 * of every operator stay written once; libjit's kernels cover the hot ones.
 * It is native code in glowc (the JIT resolves generated code's calls to it
 * in the process; an executable links it), not bitcode: compiling the whole
 * interpreter into every program would cost seconds per compile.
 * Returns 0, or 1 if the kernel failed: also for a kernel computing strings
 * (kind str), which have no arena here that would outlive the call.
 * libjit_dynamic runs instructions over bounded-dynamic buffers the same
 * way, at their run-time sizes. */
#include <stdlib.h>

#include "backends/cpu/cpu.h"
#include "backends/cpu/libjit/libjit.h"
#include "backends/interp/interp.h"

static Type operand_type(const int64_t *d, int k) {
    Type t = {.elem = (ElemKind)lj_elem(d, k), .rank = lj_rank(d, k)};
    for (int i = 0; i < t.rank; i++)
        t.dims[i] = lj_dim(d, k, i);
    /* The integer forms of quantized types (rescale, qadd, ...) read them. */
    t.quant = (QuantMode)lj_op(d, k)[DESC_OP_QUANT];
    t.scale = (float)lj_bits_f64(lj_op(d, k)[DESC_OP_QUANT + 1]);
    t.offset = (int32_t)lj_op(d, k)[DESC_OP_QUANT + 2];
    t.qaxis = (int32_t)lj_op(d, k)[DESC_OP_QUANT + 3];
    return t;
}

static void set_attr(Node *n, AttrKey key, int count, const int64_t *v) {
    switch (attr_key_type(key)) {
    case AT_INT: node_set_int(n, key, v[0]); return;
    case AT_FLOAT: node_set_float(n, key, (float)lj_bits_f64(v[0])); return;
    case AT_ELEM: node_set_elem(n, key, (ElemKind)v[0]); return;
    case AT_ENUM: node_set_enum(n, key, (int)v[0]); return;
    case AT_STR: {
        char text[8 * DESC_ATTR_VALUES + 1];
        memcpy(text, v, sizeof text - 1);
        text[sizeof text - 1] = 0;
        node_set_str(n, key, text);
        return;
    }
    case AT_INTS: node_set_ints(n, key, count, v); return;
    case AT_FLOATS: {
        float f[DESC_ATTR_VALUES];
        for (int i = 0; i < count && i < DESC_ATTR_VALUES; i++)
            f[i] = (float)lj_bits_f64(v[i]);
        node_set_floats(n, key, count, f);
        return;
    }
    }
}

/* The node the descriptor describes, in `a`, its results and operands as
 * tensors over `ops` (out[k] results, in[k] operands). */
static Node *node_of_desc(Arena *a, const int64_t *d, void *const *ops, Tensor **in,
                          Tensor **out) {
    Module *m = arena_alloc(a, sizeof *m);
    *m = (Module){.arena = a, .source = ""};
    Function *f = arena_alloc(a, sizeof *f);
    *f = (Function){.module = m, .name = "main"};
    int nres = lj_nres(d), nin = lj_nops(d) - nres;
    Node *n = graph_new_node(f, (NodeKind)d[DESC_KIND], 0, NULL, nres);
    Value *vals = arena_alloc_array(a, (size_t)nin + 1, sizeof(Value));
    n->ops = arena_alloc_array(a, (size_t)nin + 1, sizeof(Value *));
    n->nops = nin;
    Tensor *tensors = arena_alloc_array(a, (size_t)lj_nops(d) + 1, sizeof(Tensor));
    for (int k = 0; k < lj_nops(d); k++) {
        tensors[k].type = operand_type(d, k);
        tensors[k].data = ops[k];
        if (k < nres) {
            n->res[k].type = tensors[k].type;
            out[k] = &tensors[k];
        } else {
            vals[k - nres].type = tensors[k].type;
            vals[k - nres].def = n;
            n->ops[k - nres] = &vals[k - nres];
            in[k - nres] = &tensors[k];
        }
    }
    const int64_t *rec = d + DESC_OPS + lj_nops(d) * DESC_OP_WORDS;
    for (int j = 0; j < (int)d[DESC_NATTRS]; j++, rec += DESC_ATTR_WORDS)
        set_attr(n, (AttrKey)rec[0], (int)rec[1], rec + 2);
    return n;
}

int libjit_generic(const int64_t *d, void *const *ops) {
    return libjit_generic_strs(d, ops, NULL);
}

int libjit_generic_strs(const int64_t *d, void *const *ops, Arena *strs) {
    Arena *a = arena_new();
    if (!a)
        return 1;
    Tensor *in[256], *out[64];
    Node *n = node_of_desc(a, d, ops, in, out);
    int status = interp_eval_node(n, in, out, strs, NULL) ? 0 : 1;
    arena_destroy(a);
    return status;
}

/* An instruction over bounded-dynamic buffers: the descriptor has their
 * bounds; slots[2k] is where operand k's run-time dimensions live in the
 * mutable area (-1 for a static operand) and slots[2k + 1] its dynamic
 * mask. The interpreter's kernel runs at the run-time sizes (the node typed
 * by them, as the interpreters do), and the results' sizes are written to
 * their slots. */
int libjit_dynamic(const int64_t *d, void *const *ops, unsigned char *mutables,
                   const int64_t *slots) {
    Arena *a = arena_new();
    if (!a)
        return 1;
    Tensor *in[256], *out[64];
    Node *n = node_of_desc(a, d, ops, in, out);
    int nres = lj_nres(d);
    for (int k = 0; k < lj_nops(d); k++) {
        if (slots[2 * k] < 0)
            continue;
        const int64_t *dims = (const int64_t *)(mutables + slots[2 * k]);
        Type *st = k < nres ? &n->res[k].type : &n->ops[k - nres]->type;
        st->dyn = (uint8_t)slots[2 * k + 1];
        if (k >= nres)
            for (int i = 0; i < st->rank; i++)
                in[k - nres]->type.dims[i] = dims[i];
    }
    /* The message has nowhere to go from generated code: the caller names
     * the instruction that failed. */
    DiagList quiet;
    diag_init(&quiet, NULL);
    const Node *rn = interp_run_time_node(n, in, a, &quiet);
    for (int k = 0; rn && k < nres; k++)
        out[k]->type = rn->res[k].type;
    int status = rn && interp_eval_node(rn, in, out, NULL, &quiet) ? 0 : 1;
    diag_free(&quiet);
    for (int k = 0; !status && k < nres; k++) {
        if (slots[2 * k] < 0)
            continue;
        int64_t *dims = (int64_t *)(mutables + slots[2 * k]);
        for (int i = 0; i < out[k]->type.rank; i++)
            dims[i] = out[k]->type.dims[i];
    }
    arena_destroy(a);
    return status;
}
