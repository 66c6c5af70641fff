/* fold-pad: a zero constant Pad of the spatial axes only, whose result feeds
 * only a conv (as its input), an avg_pool counting the padding, or a max_pool
 * over values known to be >= 0 (pools without ceil_mode), is merged into
 * that node's own pads.
 * (Max pooling ignores its own padding, which equals padding with zeros
 * only when no window value is negative and no window lies wholly in the
 * padding.) Requires nothing; invalidates nothing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/infer.h"
#include "passes/pass.h"

static bool nonnegative(const Value *v) {
    const Node *n = v->def;
    if (n->kind == NK_RELU || n->kind == NK_SIGMOID)
        return true;
    if (n->kind == NK_CLIP)
        return node_has_attr(n, AK_min) && node_attr_float(n, AK_min, -1) >= 0;
    ActKind act = node_attr_act(n, AK_act);
    return act == ACT_RELU || act == ACT_SIGMOID;
}

/* The spatial pads of a zero constant pad, or false. */
static bool spatial_zero_pad(const Node *pad, int64_t *begin, int64_t *end, int *ns) {
    int k;
    const int64_t *p = node_attr_ints(pad, AK_pads, &k);
    int rank = pad->ops[0]->type.rank;
    if (!p || k != 2 * rank || rank < 3 || node_attr_enum(pad, AK_mode, MODE_CONSTANT) != MODE_CONSTANT ||
        node_attr_float(pad, AK_value, 0) != 0)
        return false;
    if (p[0] || p[1] || p[rank] || p[rank + 1])
        return false;
    *ns = rank - 2;
    for (int i = 0; i < *ns; i++) {
        begin[i] = p[2 + i];
        end[i] = p[rank + 2 + i];
        if (begin[i] < 0 || end[i] < 0)
            return false;
    }
    return true;
}

static bool can_fold_into(const Node *user, const Node *pad, const int64_t *begin,
                          const int64_t *end, int ns) {
    if (user->ops[0]->def != pad)
        return false;
    for (int i = 1; i < user->nops; i++)
        if (user->ops[i]->def == pad)
            return false;
    /* With ceil_mode a pool drops a last window that starts in its own end
     * padding, not one that starts in the pad node's zeros: folding could
     * change the result's shape. */
    if (node_attr_int(user, AK_ceil_mode, 0))
        return false;
    switch (user->kind) {
    case NK_CONV: return true;
    case NK_AVG_POOL: return node_attr_int(user, AK_count_include_pad, 0) != 0;
    case NK_MAX_POOL: {
        if (user->nres != 1 || !nonnegative(pad->ops[0]))
            return false;
        Window w;
        if (!window_from_node(user, ns, NULL, &w))
            return false;
        for (int i = 0; i < ns; i++)
            if (w.pad_begin[i] + begin[i] >= w.kernel[i] || w.pad_end[i] + end[i] >= w.kernel[i])
                return false;
        return true;
    }
    default: return false;
    }
}

bool pass_fold_pad(Function *f, PassContext *ctx) {
    bool changed = false;
    for (Node *pad = f->first, *next; pad; pad = next) {
        next = pad->next;
        int64_t begin[MAX_RANK], end[MAX_RANK];
        int ns;
        if (pad->kind != NK_PAD || !spatial_zero_pad(pad, begin, end, &ns))
            continue;
        Node *user = graph_only_user(f, pad);
        if (!user || !can_fold_into(user, pad, begin, end, ns))
            continue;
        int k;
        const int64_t *old = node_attr_ints(user, AK_pads, &k);
        int64_t pads[2 * MAX_RANK];
        for (int i = 0; i < ns; i++) {
            pads[i] = (old && k == 2 * ns ? old[i] : 0) + begin[i];
            pads[ns + i] = (old && k == 2 * ns ? old[ns + i] : 0) + end[i];
        }
        node_set_ints(user, AK_pads, 2 * ns, pads);
        user->ops[0] = pad->ops[0];
        graph_remove_node(f, pad);
        pass_stat(ctx, "pads-folded", 1);
        pass_rewrote(ctx, f, &user->res[0]);
        changed = true;
    }
    return changed;
}
