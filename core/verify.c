/* Graph verifier. */
#include "core/verify.h"

#include <stdlib.h>
#include <string.h>

#include "core/infer.h"

typedef struct Seen {
    const Node **by_id; /* by id: the node, once defined */
    int cap;
} Seen;

static bool define(Seen *s, const Node *n, DiagList *d) {
    if (n->id < 0 || n->id >= s->cap) {
        node_error(d, n, "id %d outside [0, %d)", n->id, s->cap);
        return false;
    }
    if (s->by_id[n->id]) {
        node_error(d, n, "id %d is used twice", n->id);
        return false;
    }
    s->by_id[n->id] = n;
    return true;
}

static bool check_operands(const Function *f, const Node *n, const Seen *s, DiagList *d) {
    bool ok = true;
    for (int i = 0; i < n->nops; i++) {
        const Value *v = n->ops[i];
        if (!v || !v->def) {
            node_error(d, n, "operand %d is missing", i);
            ok = false;
            continue;
        }
        const Node *def = v->def;
        if (def->dead || def->func != f || def->id < 0 || def->id >= s->cap ||
            s->by_id[def->id] != def) {
            node_error(d, n, "operand %d (%%%d) is not defined before its use", i, def->id);
            ok = false;
        } else if (v->index < 0 || v->index >= def->nres || &def->res[v->index] != v) {
            node_error(d, n, "operand %d refers to a result %%%d#%d that does not exist", i,
                       def->id, v->index);
            ok = false;
        }
    }
    return ok;
}

static bool check_attrs(const Node *n, DiagList *d) {
    for (int i = 0; i < n->nattrs; i++) {
        if (!node_kind_has_attr(n->kind, n->attrs[i].key)) {
            node_error(d, n, "has attribute '%s', which %s does not take",
                       attr_key_name(n->attrs[i].key), node_kind_name(n->kind));
            return false;
        }
        for (int j = 0; j < i; j++) {
            if (n->attrs[j].key == n->attrs[i].key) {
                node_error(d, n, "has attribute '%s' twice", attr_key_name(n->attrs[i].key));
                return false;
            }
        }
    }
    return true;
}

/* Re-runs the shape rule on a copy of the result types. */
static bool check_types(Node *n, DiagList *d) {
    Type saved[64];
    int k = n->nres < 64 ? n->nres : 64;
    for (int i = 0; i < k; i++)
        saved[i] = n->res[i].type;
    bool ok = infer_node(n, d);
    for (int i = 0; ok && i < k; i++) {
        if (!type_equal(&saved[i], &n->res[i].type)) {
            char a[TYPE_STR_MAX], b[TYPE_STR_MAX];
            node_error(d, n, "result %d has type %s but its operands give %s", i,
                       type_str(&saved[i], a), type_str(&n->res[i].type, b));
            ok = false;
        }
    }
    for (int i = 0; i < k; i++)
        n->res[i].type = saved[i];
    return ok;
}

/* A quantized type is an integer kind with a usable scale (a zero scale
 * would divide by zero in every dequantization downstream). */
static bool check_quant(const Node *n, DiagList *d) {
    for (int i = 0; i < n->nres; i++) {
        const char *problem = type_quant_problem(&n->res[i].type);
        if (problem) {
            char buf[TYPE_STR_MAX];
            node_error(d, n, "result %d has type %s: %s", i, type_str(&n->res[i].type, buf),
                       problem);
            return false;
        }
    }
    return true;
}

/* A region's bodies are functions of their own: a body refers only to its
 * own parameters, constants and nodes (check_operands holds it to that). */
static bool check_bodies(Node *n, DiagList *d) {
    if (n->nbodies != node_kind_bodies(n->kind)) {
        node_error(d, n, "holds %d bodies; %s takes %d", n->nbodies, node_kind_name(n->kind),
                   node_kind_bodies(n->kind));
        return false;
    }
    bool ok = true;
    for (int i = 0; i < n->nbodies; i++) {
        Function *b = n->bodies[i];
        if (!b || b->owner != n || b->module != n->func->module) {
            node_error(d, n, "its %s body is missing or not its own",
                       node_kind_body_name(n->kind, i));
            return false;
        }
        ok &= verify_function(b, d);
    }
    return ok;
}

bool verify_function(Function *f, DiagList *d) {
    Seen s = {.cap = f->next_id};
    s.by_id = calloc((size_t)(s.cap ? s.cap : 1), sizeof *s.by_id);
    if (!s.by_id) {
        diag_error(d, NULL, "out of memory in the verifier");
        return false;
    }
    bool ok = true;
    for (int i = 0; i < f->nparams; i++) {
        const Node *p = f->params[i];
        if (p->kind != NK_PLACEHOLDER || p->nres != 1) {
            node_error(d, p, "parameter %d is not a placeholder", i);
            ok = false;
        }
        ok &= check_quant(p, d);
        ok &= define(&s, p, d);
    }
    for (int i = 0; i < f->nconsts; i++) {
        Node *c = f->consts[i];
        if (c->kind != NK_CONSTANT || !c->payload ||
            !type_equal(&c->payload->type, &c->res[0].type)) {
            node_error(d, c, "constant without data of its type");
            ok = false;
        }
        ok &= check_quant(c, d);
        ok &= define(&s, c, d);
    }
    int count = 0;
    for (Node *n = f->first; n; n = n->next, count++) {
        bool node_ok = true;
        if (node_is_storage(n) || n->dead || n->func != f) {
            node_error(d, n, "does not belong in the node list");
            node_ok = false;
        }
        if (n->next && n->next->prev != n) {
            node_error(d, n, "node list links are broken");
            ok = false;
            break;
        }
        node_ok = node_ok && check_operands(f, n, &s, d) && check_attrs(n, d) &&
                  check_bodies(n, d) && check_types(n, d) && check_quant(n, d);
        ok &= node_ok;
        ok &= define(&s, n, d);
    }
    if (count != f->nnodes) {
        diag_error(d, NULL, "the function counts %d nodes but lists %d", f->nnodes, count);
        ok = false;
    }
    for (int i = 0; i < f->noutputs; i++) {
        const Value *v = f->outputs[i];
        if (!v || !v->def || v->def->dead || v->def->id >= s.cap ||
            s.by_id[v->def->id] != v->def) {
            diag_error(d, NULL, "output '%s' is not a value of the function", f->output_names[i]);
            ok = false;
        }
    }
    free(s.by_id);
    return ok;
}
