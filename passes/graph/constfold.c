/* constfold: a node whose operands are all constants is evaluated with the
 * interpreter's kernel and replaced by constants, and an if whose condition
 * is then a constant by its taken branch (fold-if, which also runs alone). Results larger than
 * FOLD_LIMIT bytes stay computed at run time (a splat expanded into a large
 * weight would only cost memory). Requires nothing; invalidates nothing. */
#include "backends/interp/interp.h"
#include "passes/pass.h"

enum { FOLD_LIMIT = 64 << 20 };

static bool foldable(const Node *n) {
    if (n->nops == 0 || n->nbodies)
        return false; /* an if on a constant is fold-if's; a loop may run long */
    if (node_is_dynamic(n))
        return false; /* a constant has a static type (the importer folds these) */
    for (int i = 0; i < n->nops; i++)
        if (!value_constant(n->ops[i]))
            return false;
    for (int i = 0; i < n->nres; i++)
        if (type_bytes(&n->res[i].type) > FOLD_LIMIT)
            return false;
    return true;
}

bool pass_constfold(Function *f, PassContext *ctx) {
    bool changed = false;
    Arena *a = f->module->arena;
    for (Node *n = f->first, *next; n; n = next) {
        next = n->next;
        if (!foldable(n))
            continue;
        Tensor *ops[256], *res[64];
        if (n->nops > 256 || n->nres > 64)
            continue;
        for (int i = 0; i < n->nops; i++)
            ops[i] = n->ops[i]->def->payload;
        DiagList scratch;
        diag_init(&scratch, NULL);
        bool ok = interp_fold(NULL, n, ops, res, a, &scratch);
        diag_free(&scratch);
        if (!ok)
            continue; /* e.g. an index out of range: leave it to fail at run time */
        for (int i = 0; i < n->nres; i++) {
            Node *c = graph_add_constant(f, n->name, res[i]);
            graph_replace_uses(f, &n->res[i], &c->res[0]);
            if (i == 0)
                pass_rewrote(ctx, f, &c->res[0]);
        }
        graph_remove_node(f, n);
        pass_stat(ctx, "nodes-folded", 1);
        changed = true;
    }
    return pass_fold_if(f, ctx) || changed;
}
