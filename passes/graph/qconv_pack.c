/* qconv-pack: a 2-D qlinear_conv of one group with constant i8 weights whose
 * zero points are 0 becomes qconv_packed (core/nodes.def), its weights laid
 * out once, here, as the CPU int8 kernel reads them (k_qconvp.c), and the
 * weight row sums folded into the bias:
 *   qlinear_conv(x, xs, xz, w, ws, 0, ys, yz, b)
 *     -> qconv_packed(x, xs, xz, w' (core/qpack.h), ws, 0, ys, yz,
 *                     b - (xz + sh) * sum_k w[m][k])
 * so that no call packs weights or sums them. For backends that say it pays
 * (Backend.qconv_pack). Output channels must be a multiple of 4 (a block
 * is four rows); input channels are padded to one with zero weights (a
 * word is four channels, as RGB's 3 become 4); strides at most 4; the sums fit the
 * kernel's i32 lanes: K * 255 * 128 and the folded bias. Requires the
 * quantized graph (quantize or fold-qdq); invalidates nothing. */
#include <string.h>

#include "core/qpack.h"
#include "passes/pass.h"

enum { MAX_STRIDE = 4, MIN_POSITIONS = 16 };

/* Channels rounded up to whole words (the extra weights are zero). */
static int64_t padded(int64_t c) {
    return (c + QPACK_CHANNELS - 1) / QPACK_CHANNELS * QPACK_CHANNELS;
}

static bool attr_ok(const Node *n, AttrKey key, int64_t lo, int64_t hi) {
    int k;
    const int64_t *v = node_attr_ints(n, key, &k);
    for (int i = 0; v && i < k; i++)
        if (v[i] < lo || v[i] > hi)
            return false;
    return true;
}

static bool all_zero(const Tensor *t) {
    for (int64_t i = 0; i < tensor_numel(t); i++)
        if (tensor_get_i64(t, i))
            return false;
    return true;
}

static bool fits(const Node *n) {
    if (n->kind != NK_QLINEAR_CONV || n->nops != 9 || node_attr_int(n, AK_group, 1) != 1)
        return false;
    const Type *x = &n->ops[0]->type, *w = &n->ops[3]->type, *y = &n->res[0].type;
    /* the kernel's tiles are 64 positions of the map: a fully connected
     * layer's one position stays with qlinear_conv's dot product per row */
    if (y->rank == 4 && y->dims[2] * y->dims[3] < MIN_POSITIONS)
        return false;
    if (x->rank != 4 || (x->elem != ELEM_I8 && x->elem != ELEM_U8) || w->elem != ELEM_I8)
        return false;
    if (w->dims[0] % QPACK_ROWS_MIN)
        return false;
    if (!attr_ok(n, AK_strides, 1, MAX_STRIDE) || !attr_ok(n, AK_dilations, 1, INT32_MAX))
        return false;
    const Tensor *wz = value_constant(n->ops[5]), *xz = value_constant(n->ops[2]);
    const Tensor *b = value_constant(n->ops[8]);
    int64_t k = padded(w->dims[1]) * w->dims[2] * w->dims[3];
    return value_constant(n->ops[3]) && wz && all_zero(wz) && xz && tensor_numel(xz) == 1 && b &&
           b->type.elem == ELEM_I32 && k * 255 * 128 < INT32_MAX;
}

/* The packed weights and folded bias as new constants; false when a sum or
 * the bias leaves i32 (the kernel's lanes), or out of memory. */
static bool pack(Function *f, const Node *n, Value **wv, Value **bv) {
    const Tensor *w = value_constant(n->ops[3]), *b = value_constant(n->ops[8]);
    int64_t M = w->type.dims[0], C = w->type.dims[1], T = w->type.dims[2] * w->type.dims[3];
    int64_t xz = tensor_get_i64(value_constant(n->ops[2]), 0);
    int64_t sh = n->ops[0]->type.elem == ELEM_I8 ? 128 : 0;
    Type pt = w->type;
    pt.dims[1] = padded(C);
    const Type *yt = &n->res[0].type;
    int64_t g = qpack_rows(M, T, yt->dims[2] * yt->dims[3], pt.dims[1]);
    Tensor *wp = tensor_new_big(f->module->arena, &pt); /* zeroed: the padding channels */
    Tensor *bp = tensor_new(f->module->arena, &b->type);
    if (!wp || !bp)
        return false;
    memset(wp->data, 0, tensor_bytes(wp));
    const int8_t *src = w->data;
    int8_t *dst = wp->data;
    for (int64_t m = 0; m < M; m++) {
        int64_t sum = 0;
        for (int64_t c = 0; c < C; c++)
            for (int64_t t = 0; t < T; t++) {
                int8_t v = src[(m * C + c) * T + t];
                dst[qpack_at(g, pt.dims[1], T, m, c, t)] = v;
                sum += v;
            }
        int64_t folded = tensor_get_i64(b, m) - (xz + sh) * sum;
        if (folded < INT32_MIN || folded > INT32_MAX)
            return false;
        tensor_set_i64(bp, m, folded);
    }
    *wv = &graph_add_constant(f, n->ops[3]->def->name, wp)->res[0];
    *bv = &graph_add_constant(f, n->ops[8]->def->name, bp)->res[0];
    return true;
}

static Node *rewrite(Function *f, Node *conv) {
    Value *wv, *bv;
    if (!pack(f, conv, &wv, &bv))
        return NULL;
    Value *ops[9];
    for (int i = 0; i < 9; i++)
        ops[i] = conv->ops[i];
    ops[3] = wv;
    ops[8] = bv;
    Node *n = graph_insert_before(f, conv, NK_QCONV_PACKED, 9, ops, 1);
    n->name = conv->name;
    n->res[0].type = conv->res[0].type;
    static const AttrKey keys[] = {AK_kernel, AK_strides, AK_pads, AK_dilations};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        int k;
        const int64_t *v = node_attr_ints(conv, keys[i], &k);
        if (v)
            node_set_ints(n, keys[i], k, v);
    }
    graph_replace_uses(f, &conv->res[0], &n->res[0]);
    graph_remove_node(f, conv);
    return n;
}

bool pass_qconv_pack(Function *f, PassContext *ctx) {
    if (!ctx->backend || !ctx->backend->qconv_pack)
        return false;
    bool changed = false;
    for (Node *n = f->first, *next; n; n = next) {
        next = n->next;
        Node *r = fits(n) ? rewrite(f, n) : NULL;
        if (!r)
            continue;
        pass_stat(ctx, "convs-packed", 1);
        pass_rewrote(ctx, f, &r->res[0]);
        changed = true;
    }
    return changed;
}
