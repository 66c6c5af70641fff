/* merge-reshapes: a view (reshape, flatten, squeeze, unsqueeze, identity:
 * the VIEW kinds of nodes.def) of another one becomes a single reshape of
 * the original value, since only the final shape matters for row-major
 * data. Requires nothing; invalidates nothing. */
#include "passes/pass.h"

bool pass_merge_reshapes(Function *f, PassContext *ctx) {
    bool changed = false;
    for (Node *n = f->first, *next; n; n = next) {
        next = n->next;
        if (!node_is_view(n) || !node_is_view(n->ops[0]->def))
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
