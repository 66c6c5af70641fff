/* winograd: a float 2-D convolution with a constant 3x3 filter, stride 1,
 * dilation 1, one group and pads of at most 2 becomes winograd_conv, its
 * filter transformed here (core/winograd.h), once, into the 36 M x C
 * matrices (16 for F(2x2), on small maps) the kernel's products read in place:
 *   conv(x, w [M,C,3,3], b) -> winograd_conv(x, u [36,M,C], b)
 * For backends that say it pays (Backend.winograd) and for shapes where it
 * does: enough channels that the products, not the transforms, dominate,
 * and feature maps large enough that the tiles are not mostly padding
 * (the thresholds below), and not where float products run on matrix
 * tiles (Backend.f32_tiles: AMX, unless --f32-precision=highest). Its
 * rounding error is
 * bounded in tests/kernels/test_kernels.c. Requires activations fused
 * (fuse-activation) first; invalidates nothing. */
#include <string.h>

#include "core/winograd.h"
#include "passes/pass.h"

/* Where it pays, measured with `build/tests/bench_wino --cold --split 2`
 * (against libjit_conv_f32, weights evicted from the cache between runs as
 * in a model; one thread, and the largest of two threads' shares; under
 * load, 3-4 runs each) on an AVX-512 machine (236 GFLOP/s per thread): the
 * transformed filter is 4x (F(4x4)) or 16/9 (F(2x2)) the direct one's
 * bytes, read once per block of tiles, and the direct conv is the better
 * product where the products are small.
 *  - F(4x4) on maps of at least 7x7 4x4 tiles, with C + M >= 64 (the
 *    transforms cost per channel what the products cost per channel pair;
 *    at 64, Inception-v3's 32 -> 32 at 147x147, in the model, glowc bench
 *    --per-node medians on a Xeon: 2.88 -> 1.97 ms at 1 thread, ONNX
 *    Runtime's 1.92; 1.39 -> 1.24 at 2; the limit was 80)
 *    and tiles x min(C, M) >= 4096 (the products' smaller side times their
 *    columns; below it they are too small to win back the transforms):
 *    1 and 2 threads, 64 -> 64 at 56x56 1.3x and 1.2-1.4x, 128 -> 128 at
 *    28x28 1.2-1.4x and 1.2-1.4x, 128 -> 32 at 56x56 1.1-1.3x and 1.1-1.2x,
 *    32 -> 64 at 147x147 1.3-1.5x and 1.05-1.3x, 96 -> 96 at 35x35 1.3x and
 *    1.2-1.3x; declined: 128 -> 32 at 28x28 0.9-1.1x and 0.8-0.85x (1568),
 *    32 -> 128 at 27x27 0.8-1.1x and 0.8-0.9x (1568), 16 -> 64 at 55x55
 *    0.75-0.9x and 0.7-0.9x (3136).
 *  - F(2x2) on maps of at least 13x13 (7x7 2x2 tiles), with 192 output and
 *    128 input channels: 256 -> 256 at 14x14 1.1-1.2x and 1.0-1.15x (F(4x4),
 *    4x4 tiles: 1.0x); declined: 512 -> 512 at 7x7 (16 tiles) 0.75-0.9x and
 *    0.8-0.9x, 448 -> 384 at 8x8 0.93x and 1.0x, 64 -> 256 at 13x13
 *    0.75-0.9x and 0.8-1.0x, 48 -> 192 at 13x13 0.7-0.8x and 0.7-1.0x. */
enum {
    MIN_CHANNELS = 16,
    F4_MIN_TILES = 49,
    F4_MIN_C_PLUS_M = 64,
    F4_MIN_TILE_CHANNELS = 4096,
    F2_MIN_TILES = 49,
    F2_MIN_M = 192,
    F2_MIN_C = 128,
};

static bool fits(const Node *n) {
    if (n->kind != NK_CONV || n->ops[0]->type.elem != ELEM_F32 || n->ops[0]->type.rank != 4)
        return false;
    const Type *w = &n->ops[1]->type;
    if (w->dims[2] != 3 || w->dims[3] != 3 || node_attr_int(n, AK_group, 1) != 1)
        return false;
    int k;
    const int64_t *s = node_attr_ints(n, AK_strides, &k);
    for (int i = 0; s && i < k; i++)
        if (s[i] != 1)
            return false;
    const int64_t *dl = node_attr_ints(n, AK_dilations, &k);
    for (int i = 0; dl && i < k; i++)
        if (dl[i] != 1)
            return false;
    const int64_t *p = node_attr_ints(n, AK_pads, &k);
    for (int i = 0; p && i < k; i++)
        if (p[i] < 0 || p[i] > 2)
            return false;
    if (p && k != 4)
        return false;
    return w->dims[0] >= MIN_CHANNELS && w->dims[1] >= MIN_CHANNELS && value_constant(n->ops[1]);
}

/* The transform that pays for this conv, or NULL. */
static const WinoTransform *transform_for(const Node *n) {
    const Type *y = &n->res[0].type, *w = &n->ops[1]->type;
    int64_t m = w->dims[0], c = w->dims[1];
    int64_t t4 = (y->dims[2] + 3) / 4 * ((y->dims[3] + 3) / 4);
    int64_t t2 = (y->dims[2] + 1) / 2 * ((y->dims[3] + 1) / 2);
    if (t4 >= F4_MIN_TILES && c + m >= F4_MIN_C_PLUS_M &&
        t4 * (c < m ? c : m) >= F4_MIN_TILE_CHANNELS)
        return &wino_f4;
    if (t2 >= F2_MIN_TILES && m >= F2_MIN_M && c >= F2_MIN_C)
        return &wino_f2;
    return NULL;
}

static Node *rewrite(Function *f, Node *conv, const WinoTransform *t) {
    const Tensor *w = value_constant(conv->ops[1]);
    int64_t M = w->type.dims[0], C = w->type.dims[1], rows = (int64_t)t->alpha * t->alpha;
    Type ut = type_make(ELEM_F32, 3, (int64_t[]){rows, M, C});
    Tensor *u = tensor_new_big(f->module->arena, &ut);
    if (!u)
        return NULL;
    winograd_filter(t, w->data, M, C, u->data);
    Node *cu = graph_add_constant(f, conv->ops[1]->def->name, u);
    Value *ops[4] = {conv->ops[0], &cu->res[0], conv->nops > 2 ? conv->ops[2] : NULL,
                     conv->nops > 3 ? conv->ops[3] : NULL}; /* the summand (fuse-conv-add) */
    Node *n = graph_insert_before(f, conv, NK_WINOGRAD_CONV, conv->nops, ops, 1);
    n->name = conv->name;
    n->res[0].type = conv->res[0].type;
    int k;
    const int64_t *p = node_attr_ints(conv, AK_pads, &k);
    if (p)
        node_set_ints(n, AK_pads, k, p);
    if (node_has_attr(conv, AK_act))
        node_set_act(n, AK_act, node_attr_act(conv, AK_act));
    if (node_has_attr(conv, AK_act_alpha))
        node_set_float(n, AK_act_alpha, node_attr_float(conv, AK_act_alpha, 0));
    if (node_has_attr(conv, AK_act_beta))
        node_set_float(n, AK_act_beta, node_attr_float(conv, AK_act_beta, 0));
    graph_replace_uses(f, &conv->res[0], &n->res[0]);
    graph_remove_node(f, conv);
    return n;
}

bool pass_winograd(Function *f, PassContext *ctx) {
    if (!ctx->backend || !ctx->backend->winograd)
        return false;
    /* Products on matrix tiles (AMX) run every 3x3 faster direct, and
     * their split operands' rounding would add to the transforms'
     * (resnet50's 3x3s on 28x28 and 14x14, glowc bench --per-node, Xeon,
     * one thread: 0.91-0.94 and 1.30-1.48 ms as Winograd, 0.73-0.75 and
     * 0.80-0.85 direct). */
    if (ctx->codegen && ctx->backend->f32_tiles && ctx->backend->f32_tiles(ctx->codegen)) {
        pass_stat(ctx, "left-for-tiles", 1);
        return false;
    }
    bool changed = false;
    for (Node *n = f->first, *next; n; n = next) {
        next = n->next;
        const WinoTransform *t = fits(n) ? transform_for(n) : NULL;
        Node *r = t ? rewrite(f, n, t) : NULL;
        if (!r)
            continue;
        pass_stat(ctx, t->m == 4 ? "convs-to-f4x4" : "convs-to-f2x2", 1);
        pass_rewrote(ctx, f, &r->res[0]);
        changed = true;
    }
    return changed;
}
