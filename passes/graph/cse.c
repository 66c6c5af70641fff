/* cse: a node equal to an earlier one (same kind, operands, attributes and
 * result types) is replaced by it; constants with equal type and data are
 * merged. One forward walk suffices: replacing a node's uses makes its users
 * comparable with their twins before the walk reaches them.
 * Requires nothing; invalidates nothing. */
#include <stdlib.h>
#include <string.h>

#include "passes/pass.h"

static uint64_t mix(uint64_t h, uint64_t v) {
    return (h ^ v) * 1099511628211ull;
}

/* Attribute order does not matter: hashes are summed. */
static uint64_t node_hash(const Node *n) {
    uint64_t h = mix(1469598103934665603ull, (uint64_t)n->kind);
    for (int i = 0; i < n->nops; i++)
        h = mix(mix(h, (uint64_t)n->ops[i]->def->id), (uint64_t)n->ops[i]->index);
    uint64_t attrs = 0;
    for (int i = 0; i < n->nattrs; i++)
        attrs += attr_hash(&n->attrs[i]);
    h = mix(h, attrs);
    for (int i = 0; i < n->nres; i++)
        for (int k = 0; k < n->res[i].type.rank; k++)
            h = mix(h, (uint64_t)n->res[i].type.dims[k]);
    return h;
}

static bool same_node(const Node *a, const Node *b) {
    if (a->nbodies || b->nbodies)
        return false; /* regions: equal operands, but bodies not compared */
    if (a->kind != b->kind || a->nops != b->nops || a->nres != b->nres || a->nattrs != b->nattrs)
        return false;
    for (int i = 0; i < a->nops; i++)
        if (a->ops[i] != b->ops[i])
            return false;
    for (int i = 0; i < a->nres; i++)
        if (!type_equal(&a->res[i].type, &b->res[i].type))
            return false;
    for (int i = 0; i < a->nattrs; i++) {
        const Attr *other = node_attr(b, a->attrs[i].key);
        if (!other || !attr_equal(&a->attrs[i], other))
            return false;
    }
    return true;
}

typedef struct Table {
    const Node **slots;
    uint64_t *hashes;
    size_t cap;
} Table;

/* Returns the earlier equal node, or inserts n and returns NULL. */
static const Node *lookup_or_insert(Table *t, const Node *n, uint64_t h,
                                    bool (*eq)(const Node *, const Node *)) {
    size_t i = h & (t->cap - 1);
    while (t->slots[i]) {
        if (t->hashes[i] == h && eq(t->slots[i], n))
            return t->slots[i];
        i = (i + 1) & (t->cap - 1);
    }
    t->slots[i] = n;
    t->hashes[i] = h;
    return NULL;
}

static bool same_constant(const Node *a, const Node *b) {
    return tensor_equal(a->payload, b->payload);
}

static bool table_init(Table *t, size_t n) {
    t->cap = 64;
    while (t->cap < 2 * n + 2)
        t->cap *= 2;
    t->slots = calloc(t->cap, sizeof *t->slots);
    t->hashes = calloc(t->cap, sizeof *t->hashes);
    return t->slots && t->hashes;
}

static void table_free(Table *t) {
    free(t->slots);
    free(t->hashes);
}

static bool merge_constants(Function *f, PassContext *ctx) {
    Table t;
    bool changed = false;
    if (!table_init(&t, (size_t)f->nconsts)) {
        table_free(&t);
        return false;
    }
    for (int i = 0; i < f->nconsts; i++) {
        Node *c = f->consts[i];
        if (!c->payload || !c->payload->data)
            continue;
        const Node *twin = lookup_or_insert(&t, c, tensor_hash(c->payload), same_constant);
        if (!twin)
            continue;
        graph_replace_uses(f, &c->res[0], (Value *)&twin->res[0]);
        pass_stat(ctx, "constants-merged", 1);
        changed = true;
    }
    table_free(&t);
    return changed;
}

bool pass_cse(Function *f, PassContext *ctx) {
    bool changed = merge_constants(f, ctx);
    Table t;
    if (!table_init(&t, (size_t)f->nnodes)) {
        table_free(&t);
        return changed;
    }
    for (Node *n = f->first, *next; n; n = next) {
        next = n->next;
        const Node *twin = lookup_or_insert(&t, n, node_hash(n), same_node);
        if (!twin)
            continue;
        for (int i = 0; i < n->nres; i++)
            graph_replace_uses(f, &n->res[i], (Value *)&twin->res[i]);
        graph_remove_node(f, n);
        pass_stat(ctx, "nodes-merged", 1);
        pass_rewrote(ctx, f, (Value *)&twin->res[0]);
        changed = true;
    }
    table_free(&t);
    return changed;
}
