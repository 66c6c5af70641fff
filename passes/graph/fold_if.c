/* fold-if: an if whose condition is a constant (after constant folding, or
 * given in the text) becomes its taken branch: the body's constants and
 * nodes are copied before the if, its parameters standing for the if's
 * operands, and the if's results become the body's outputs. Most exporters'
 * Ifs are on shapes, which constant folding settles. Requires nothing;
 * invalidates the schedule. */
#include <stdlib.h>

#include "passes/pass.h"

/* A value of body b as it is in f after inlining: a parameter's operand of
 * the if, or the copy of its node. */
static Value *mapped(const Value *v, Value *const *params, Node *const *nodes) {
    const Node *d = v->def;
    return d->kind == NK_PLACEHOLDER ? params[d->id] : &nodes[d->id]->res[v->index];
}

static bool inline_branch(Function *f, Node *n, const Function *b) {
    int cap = b->next_id ? b->next_id : 1;
    Value **params = calloc((size_t)cap, sizeof *params);
    Node **nodes = calloc((size_t)cap, sizeof *nodes);
    Value **ops = calloc((size_t)(n->nops + 1), sizeof *ops);
    bool ok = params && nodes && ops;
    for (int i = 0; ok && i < b->nparams; i++)
        params[b->params[i]->id] = n->ops[1 + i];
    for (int i = 0; ok && i < b->nconsts; i++)
        nodes[b->consts[i]->id] = graph_add_constant(f, b->consts[i]->name, b->consts[i]->payload);
    for (const Node *x = ok ? b->first : NULL; x; x = x->next) {
        Value **xops = x->nops > n->nops ? realloc(ops, (size_t)x->nops * sizeof *ops) : ops;
        if (!xops) {
            ok = false;
            break;
        }
        ops = xops;
        for (int i = 0; i < x->nops; i++)
            ops[i] = mapped(x->ops[i], params, nodes);
        nodes[x->id] = graph_copy_node(f, n, x, ops);
    }
    for (int i = 0; ok && i < n->nres; i++)
        graph_replace_uses(f, &n->res[i], mapped(b->outputs[i], params, nodes));
    free(params);
    free(nodes);
    free(ops);
    return ok;
}

bool pass_fold_if(Function *f, PassContext *ctx) {
    bool changed = false;
    for (Node *n = f->first, *next; n; n = next) {
        next = n->next;
        const Node *c = n->kind == NK_IF ? n->ops[0]->def : NULL;
        if (!c || c->kind != NK_CONSTANT || !c->payload || !c->payload->data)
            continue;
        Node *before = n->prev;
        if (!inline_branch(f, n, n->bodies[tensor_get_i64(c->payload, 0) ? 0 : 1]))
            return changed; /* out of memory: the graph is still whole */
        graph_remove_node(f, n);
        pass_stat(ctx, "ifs-folded", 1);
        Node *first = before ? before->next : f->first;
        if (first && first != next && first->nres)
            pass_rewrote(ctx, f, &first->res[0]);
        changed = true;
    }
    return changed;
}
