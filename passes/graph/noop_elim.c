/* noop-elim: nodes that return their operand unchanged are replaced by it:
 * identity, inference dropout, and reshape/flatten/squeeze/unsqueeze/
 * transpose/slice/cast/pad/expand/tile/concat/split/clip forms that do not
 * change anything, and arithmetic identities (x + 0, x * 1, x - 0, x / 1,
 * x ** 1 with a splat constant that broadcasts nothing), and an expand
 * feeding an elementwise node that broadcasts anyway. Each kind removed
 * has its own counter.
 * Requires nothing; invalidates nothing. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/infer.h"
#include "passes/pass.h"

static bool all_zero(const int64_t *v, int n) {
    for (int i = 0; i < n; i++)
        if (v[i])
            return false;
    return true;
}

static bool all_one(const int64_t *v, int n) {
    for (int i = 0; i < n; i++)
        if (v[i] != 1)
            return false;
    return true;
}

static bool identity_perm(const Node *n) {
    int k;
    const int64_t *p = node_attr_ints(n, AK_perm, &k);
    if (!p)
        return n->ops[0]->type.rank <= 1;
    for (int i = 0; i < k; i++)
        if (p[i] != i)
            return false;
    return true;
}

static bool full_slice(const Node *n) {
    int64_t start[MAX_RANK], step[MAX_RANK], count[MAX_RANK];
    const Type *t = &n->ops[0]->type;
    slice_params(n, t, start, step, count);
    for (int i = 0; i < t->rank; i++)
        if (start[i] != 0 || step[i] != 1 || count[i] != t->dims[i])
            return false;
    return true;
}

/* x + 0, x - 0, x * 1, x / 1, x ** 1 with a splat constant that does not
 * broadcast x to a larger shape. Returns the operand that survives. */
static Value *identity_operand(const Node *n) {
    double c;
    int k = -1;
    if (n->nops != 2 || !elem_is_float(n->res[0].type.elem))
        return NULL;
    for (int i = 0; i < 2 && k < 0; i++) {
        if (!value_splat(n->ops[i], &c) || !type_equal(&n->ops[1 - i]->type, &n->res[0].type))
            continue;
        bool right = i == 1;
        switch (n->kind) {
        case NK_ADD: k = c == 0 ? 1 - i : -1; break;
        case NK_MUL: k = c == 1 ? 1 - i : -1; break;
        case NK_SUB: k = right && c == 0 ? 0 : -1; break;
        case NK_DIV:
        case NK_POW: k = right && c == 1 ? 0 : -1; break;
        default: break;
        }
    }
    return k >= 0 ? n->ops[k] : NULL;
}

/* Is n's first result equal to its first operand, element for element? */
static bool is_noop(const Node *n) {
    int k;
    if (n->nres != 1 || n->nops < 1)
        return false;
    bool same_type = type_equal(&n->res[0].type, &n->ops[0]->type);
    if (node_is_view(n))
        return same_type;
    switch (n->kind) {
    case NK_EXPAND: return same_type && n->nops == 1; /* a run-time shape may differ */
    case NK_CAST: return same_type;
    case NK_TRANSPOSE: return identity_perm(n);
    case NK_SLICE: return same_type && n->nops == 1 && full_slice(n); /* not run-time ends */
    case NK_PAD: {
        const int64_t *p = node_attr_ints(n, AK_pads, &k);
        return p && all_zero(p, k);
    }
    case NK_TILE: {
        const int64_t *r = node_attr_ints(n, AK_repeats, &k);
        return r && all_one(r, k);
    }
    case NK_CONCAT: return n->nops == 1;
    case NK_CLIP:
        return n->nops == 1 && !node_has_attr(n, AK_min) && !node_has_attr(n, AK_max);
    default: return false;
    }
}

/* An elementwise node that broadcasts its operands anyway needs no expand
 * in front of one: expand(x) is replaced by x where the operands, with x
 * for it, still broadcast to the node's result shape (a batch norm's
 * gradient multiplies per-channel statistics expanded over the batch and
 * the map). The expand goes when nothing else reads it. */
static int unexpand_operands(Node *n) {
    if (!node_kind_has(n->kind, NF_EW) || n->nops < 2 || n->nres != 1)
        return 0;
    int count = 0;
    for (int i = 0; i < n->nops; i++) {
        const Node *e = n->ops[i]->def;
        if (e->kind != NK_EXPAND || e->nres != 1 || e->ops[0]->type.elem != n->ops[i]->type.elem)
            continue;
        Type shape = e->ops[0]->type;
        bool ok = true;
        for (int j = 0; j < n->nops && ok; j++)
            if (j != i)
                ok = type_broadcast(&shape, &n->ops[j]->type, &shape);
        if (ok && type_same_shape(&shape, &n->res[0].type)) {
            n->ops[i] = e->ops[0];
            count++;
        }
    }
    return count;
}

bool pass_noop_elim(Function *f, PassContext *ctx) {
    bool changed = false;
    for (Node *n = f->first, *next; n; n = next) {
        next = n->next;
        int unexpanded = unexpand_operands(n);
        if (unexpanded) {
            pass_stat(ctx, "expand-operands-removed", unexpanded);
            changed = true;
        }
        Value *x = identity_operand(n);
        if (x) {
            /* an arithmetic identity */
        } else if (n->kind == NK_SPLIT && n->nres == 1 &&
                   type_equal(&n->res[0].type, &n->ops[0]->type)) {
            x = n->ops[0]; /* a one-way split is its operand too */
        } else if (is_noop(n)) {
            x = n->ops[0];
        } else {
            continue;
        }
        graph_replace_uses(f, &n->res[0], x);
        graph_remove_node(f, n);
        char stat[48];
        snprintf(stat, sizeof stat, "%s-removed", node_kind_name(n->kind));
        pass_stat(ctx, stat, 1);
        pass_rewrote(ctx, f, x);
        changed = true;
    }
    return changed;
}
