/* concat-slice: simplifications of concatenation and slicing:
 *   concat(a, concat(b, c), d) on one axis    -> concat(a, b, c, d)
 *   slice(concat(a, b, c)) covering exactly b -> b
 *   concat(slice(x), slice(x), ...) that reassembles x in order -> x
 * (single-operand concats are noop-elim's). Requires nothing; invalidates
 * nothing. */
#include <stdlib.h>

#include "core/infer.h"
#include "passes/pass.h"

static int concat_axis(const Node *n) {
    int axis = 0;
    axis_normalize(node_attr_int(n, AK_axis, 0), n->res[0].type.rank, &axis);
    return axis;
}

static bool flatten_nested(Function *f, Node *n, const int *uses, PassContext *ctx) {
    int axis = concat_axis(n), total = 0;
    bool any = false;
    for (int i = 0; i < n->nops; i++) {
        Node *in = n->ops[i]->def;
        if (in->kind == NK_CONCAT && uses[in->id] == 1 && concat_axis(in) == axis) {
            total += in->nops;
            any = true;
        } else {
            total++;
        }
    }
    if (!any || total > 4096)
        return false;
    Value **ops = malloc((size_t)total * sizeof *ops);
    int k = 0;
    for (int i = 0; i < n->nops; i++) {
        Node *in = n->ops[i]->def;
        if (in->kind == NK_CONCAT && uses[in->id] == 1 && concat_axis(in) == axis)
            for (int j = 0; j < in->nops; j++)
                ops[k++] = in->ops[j];
        else
            ops[k++] = n->ops[i];
    }
    Node *c = graph_insert_before(f, n, NK_CONCAT, total, ops, 1);
    free(ops);
    c->name = n->name;
    node_set_int(c, AK_axis, axis);
    c->res[0].type = n->res[0].type;
    graph_replace_uses(f, &n->res[0], &c->res[0]);
    graph_remove_node(f, n);
    pass_stat(ctx, "concats-flattened", 1);
    pass_rewrote(ctx, f, &c->res[0]);
    return true;
}

/* A unit-step slice that is full on every axis but `axis`; its range there. */
static bool axis_range(const Node *s, int *axis, int64_t *lo, int64_t *hi) {
    const Type *t = &s->ops[0]->type;
    int64_t start[MAX_RANK], step[MAX_RANK], count[MAX_RANK];
    slice_params(s, t, start, step, count);
    *axis = -1;
    for (int i = 0; i < t->rank; i++) {
        if (step[i] != 1)
            return false;
        if (start[i] == 0 && count[i] == t->dims[i])
            continue;
        if (*axis >= 0)
            return false;
        *axis = i;
        *lo = start[i];
        *hi = start[i] + count[i];
    }
    return *axis >= 0;
}

static bool slice_of_concat(Function *f, Node *s, PassContext *ctx) {
    Node *c = s->ops[0]->def;
    int axis;
    int64_t lo, hi;
    if (c->kind != NK_CONCAT || !axis_range(s, &axis, &lo, &hi) || axis != concat_axis(c))
        return false;
    int64_t off = 0;
    for (int i = 0; i < c->nops; i++) {
        int64_t len = c->ops[i]->type.dims[axis];
        if (off == lo && off + len == hi) {
            graph_replace_uses(f, &s->res[0], c->ops[i]);
            graph_remove_node(f, s);
            pass_stat(ctx, "slices-of-concat-removed", 1);
            pass_rewrote(ctx, f, c->ops[i]);
            return true;
        }
        off += len;
    }
    return false;
}

static bool concat_of_slices(Function *f, Node *n, PassContext *ctx) {
    int axis = concat_axis(n);
    Value *src = NULL;
    int64_t expect = 0;
    for (int i = 0; i < n->nops; i++) {
        Node *s = n->ops[i]->def;
        int sa;
        int64_t lo, hi;
        if (s->kind != NK_SLICE || !axis_range(s, &sa, &lo, &hi) || sa != axis || lo != expect)
            return false;
        if (src && s->ops[0] != src)
            return false;
        src = s->ops[0];
        expect = hi;
    }
    if (!src || !type_equal(&src->type, &n->res[0].type))
        return false;
    graph_replace_uses(f, &n->res[0], src);
    graph_remove_node(f, n);
    pass_stat(ctx, "concats-of-slices-removed", 1);
    pass_rewrote(ctx, f, src);
    return true;
}

bool pass_concat_slice(Function *f, PassContext *ctx) {
    bool changed = false;
    int *uses = pass_use_counts(f);
    if (!uses)
        return false;
    for (Node *n = f->first, *next; n; n = next) {
        next = n->next;
        bool did = false;
        if (node_is_dynamic(n))
            continue; /* offsets by static sizes */
        if (n->kind == NK_CONCAT)
            did = concat_of_slices(f, n, ctx) || flatten_nested(f, n, uses, ctx);
        else if (n->kind == NK_SLICE)
            did = slice_of_concat(f, n, ctx);
        if (did) {
            changed = true;
            free(uses);
            uses = pass_use_counts(f);
            if (!uses)
                return changed;
        }
    }
    free(uses);
    return changed;
}
