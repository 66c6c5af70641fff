/* dce: drops compute nodes none of whose results are used, then constants
 * nothing uses. Requires nothing; invalidates the schedule's memory peak. */
#include <stdlib.h>

#include "passes/pass.h"

bool pass_dce(Function *f, PassContext *ctx) {
    int *uses = pass_use_counts(f);
    if (!uses)
        return false;
    bool changed = false;
    /* Backwards, so that removing a node frees its operands in the same walk. */
    for (Node *n = f->last, *prev; n; n = prev) {
        prev = n->prev;
        if (uses[n->id])
            continue;
        for (int i = 0; i < n->nops; i++)
            uses[n->ops[i]->def->id]--;
        graph_remove_node(f, n);
        pass_stat(ctx, "nodes-removed", 1);
        changed = true;
    }
    for (int i = f->nconsts - 1; i >= 0; i--) {
        if (uses[f->consts[i]->id])
            continue;
        graph_remove_node(f, f->consts[i]);
        pass_stat(ctx, "constants-removed", 1);
        changed = true;
    }
    free(uses);
    return changed;
}
