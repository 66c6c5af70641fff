/* merge-reshapes: a reshape-like node (reshape, flatten, squeeze, unsqueeze)
 * of another one becomes a single reshape of the original value, since only
 * the final shape matters for row-major data. Requires nothing; invalidates
 * nothing. */
#include "passes/pass.h"

static bool reshape_like(NodeKind k) {
    return k == NK_RESHAPE || k == NK_FLATTEN || k == NK_SQUEEZE || k == NK_UNSQUEEZE;
}

bool pass_merge_reshapes(Function *f, PassContext *ctx) {
    bool changed = false;
    for (Node *n = f->first, *next; n; n = next) {
        next = n->next;
        if (!reshape_like(n->kind) || !reshape_like(n->ops[0]->def->kind))
            continue;
        Value *x = n->ops[0]->def->ops[0];
        Node *r = graph_insert_before(f, n, NK_RESHAPE, 1, &x, 1);
        r->name = n->name;
        r->res[0].type = n->res[0].type;
        graph_replace_uses(f, &n->res[0], &r->res[0]);
        graph_remove_node(f, n);
        pass_stat(ctx, "reshapes-merged", 1);
        pass_rewrote(ctx, f, &r->res[0]);
        changed = true;
    }
    return changed;
}
