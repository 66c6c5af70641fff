/* irgen: the scheduled graph becomes a low-level program. Inputs and
 * outputs become mutable weights, constants constant weights (sharing the
 * graph's data), every other node an allocactivation for each result and
 * one compute instruction. Nodes that only re-describe memory emit no work:
 * reshape/flatten/squeeze/unsqueeze and contiguous slices and splits become
 * tensorviews; a concatenation writes each part through a view of its
 * buffer (a strided inserttensor when the part is not contiguous), which is
 * what lets copy elimination compute the parts in place.
 * Every activation is deallocated at the end: shorten-lifetimes moves that
 * to its last use. Outputs are copied into their weights: copy-elim writes
 * them in place. A region (if, loop) becomes its bodies' instructions
 * between control-flow markers, each part deallocating its own buffers. */
#include "passes/irgen.h"

#include <stdlib.h>
#include <string.h>

#include "core/infer.h"

typedef struct Gen {
    const Function *f;
    LirProgram *p;
    LirBuf ***vals; /* by node id, by result index */
    bool *regions;  /* set when a region is lowered (shared by the bodies' Gens) */
} Gen;

static LirBuf *buf_of(Gen *g, const Value *v) {
    return g->vals[v->def->id][v->index];
}

static void set_buf(Gen *g, const Node *n, int res, LirBuf *b) {
    if (!g->vals[n->id])
        g->vals[n->id] = arena_alloc_array(g->p->arena, (size_t)n->nres, sizeof(LirBuf *));
    g->vals[n->id][res] = b;
}

/* The element offset of a region of `t` that starts at `start` with sizes
 * `count`, if that region is one contiguous run of memory: every axis before
 * the first partial one has one index, every axis after it is whole. */
static bool contiguous_region(const Type *t, const int64_t *start, const int64_t *count,
                              int64_t *offset) {
    int64_t strides[MAX_RANK];
    type_strides(t, strides);
    int k = 0;
    while (k < t->rank && count[k] == 1)
        k++;
    for (int j = k + 1; j < t->rank; j++)
        if (start[j] != 0 || count[j] != t->dims[j])
            return false;
    *offset = 0;
    for (int j = 0; j < t->rank; j++)
        *offset += start[j] * strides[j];
    return true;
}

/* A view of b's memory at `offset` elements (b may itself be a view). */
static LirBuf *view_of(Gen *g, LirBuf *b, int64_t offset, const Type *t, const char *name) {
    return lir_view(g->p, NULL, b, offset, t, name);
}

static bool gen_slice_view(Gen *g, const Node *n) {
    const Type *in = &n->ops[0]->type;
    int64_t start[MAX_RANK], step[MAX_RANK], count[MAX_RANK], off;
    slice_params(n, in, start, step, count);
    for (int i = 0; i < in->rank; i++)
        if (step[i] != 1 && count[i] > 1)
            return false;
    if (!contiguous_region(in, start, count, &off))
        return false;
    set_buf(g, n, 0, view_of(g, buf_of(g, n->ops[0]), off, &n->res[0].type, n->name));
    return true;
}

static bool gen_split_views(Gen *g, const Node *n) {
    const Type *in = &n->ops[0]->type;
    int axis;
    axis_normalize(node_attr_int(n, AK_axis, 0), in->rank, &axis);
    int64_t start[MAX_RANK] = {0}, count[MAX_RANK], offs[64];
    if (n->nres > 64)
        return false;
    for (int r = 0; r < n->nres; r++) {
        for (int i = 0; i < in->rank; i++)
            count[i] = n->res[r].type.dims[i];
        if (!contiguous_region(in, start, count, &offs[r]))
            return false;
        start[axis] += count[axis];
    }
    for (int r = 0; r < n->nres; r++)
        set_buf(g, n, r, view_of(g, buf_of(g, n->ops[0]), offs[r], &n->res[r].type, n->name));
    return true;
}

static void gen_concat(Gen *g, const Node *n) {
    const Type *out = &n->res[0].type;
    LirBuf *dst = lir_alloc(g->p, NULL, out, n->name);
    set_buf(g, n, 0, dst);
    int axis;
    axis_normalize(node_attr_int(n, AK_axis, 0), out->rank, &axis);
    int64_t start[MAX_RANK] = {0}, count[MAX_RANK];
    for (int k = 0; k < n->nops; k++) {
        const Type *part = &n->ops[k]->type;
        for (int i = 0; i < out->rank; i++)
            count[i] = part->dims[i];
        LirBuf *src = buf_of(g, n->ops[k]);
        int64_t off;
        if (contiguous_region(out, start, count, &off)) {
            LirBuf *v = view_of(g, dst, off, part, n->name);
            LirBuf *ops[2] = {v, src};
            OperandRole roles[2] = {ROLE_OUT, ROLE_IN};
            lir_insert(g->p, NULL, IK_COPY, 2, ops, roles)->name = n->name;
        } else {
            LirBuf *ops[2] = {dst, src};
            OperandRole roles[2] = {ROLE_INOUT, ROLE_IN};
            LirInstr *i = lir_insert(g->p, NULL, IK_INSERT, 2, ops, roles);
            i->name = n->name;
            instr_set_ints(i, AK_offsets, out->rank, start);
        }
        start[axis] += part->dims[axis];
    }
}

static void gen_compute(Gen *g, const Node *n) {
    LirBuf *ops[256];
    OperandRole roles[256];
    int k = 0;
    for (int r = 0; r < n->nres && k < 256; r++) {
        LirBuf *b = lir_alloc(g->p, NULL, &n->res[r].type, n->name);
        set_buf(g, n, r, b);
        ops[k] = b;
        roles[k++] = ROLE_OUT;
    }
    for (int i = 0; i < n->nops && k < 256; i++) {
        ops[k] = buf_of(g, n->ops[i]);
        roles[k++] = ROLE_IN;
    }
    LirInstr *in = lir_insert(g->p, NULL, IK_OF_NODE(n->kind), k, ops, roles);
    in->name = n->name;
    in->loc = n->loc; /* a kernel's run-time error points at the node's line */
    instr_copy_attrs(g->p, in, n->attrs, n->nattrs);
}

static void gen_region(Gen *g, const Node *n);

static void gen_node(Gen *g, const Node *n) {
    if (n->nbodies) {
        gen_region(g, n);
        return;
    }
    /* Views, slices as views and concatenation by offsets assume static
     * sizes: a node with bounded-dynamic types computes instead (the runner
     * sizes its kernel by the run-time sizes). */
    if (node_is_dynamic(n)) {
        gen_compute(g, n);
        return;
    }
    if (node_is_view(n)) {
        set_buf(g, n, 0, view_of(g, buf_of(g, n->ops[0]), 0, &n->res[0].type, n->name));
        return;
    }
    if (n->kind == NK_SLICE && gen_slice_view(g, n))
        return;
    if (n->kind == NK_SPLIT && gen_split_views(g, n))
        return;
    if (n->kind == NK_CONCAT) {
        gen_concat(g, n);
        return;
    }
    gen_compute(g, n);
}

/* ---- regions: a body's instructions between control-flow markers ---- */

/* Body b's instructions, appended, its parameters bound to `params`; the
 * Gen of the body (its values) is returned for the caller's copies out. */
static Gen gen_body(Gen *g, const Function *b, LirBuf *const *params) {
    Gen sub = {b, g->p, arena_alloc_array(g->p->arena, (size_t)b->next_id + 1, sizeof(LirBuf **)),
               g->regions};
    for (int i = 0; i < b->nparams; i++)
        set_buf(&sub, b->params[i], 0, params[i]);
    for (int i = 0; i < b->nconsts; i++) {
        const Node *c = b->consts[i];
        set_buf(&sub, c, 0, lir_add_weight(g->p, LB_CONST, c->name, &c->res[0].type, c->payload));
    }
    for (const Node *n = b->first; n; n = n->next)
        gen_node(&sub, n);
    return sub;
}

/* dst = src, src seen with dst's type when they differ only in shape (a
 * bool<1> condition for a bool<>); nothing when they are one buffer. */
static void copy_to(Gen *g, LirBuf *dst, LirBuf *src, const char *name) {
    if (dst == src)
        return;
    bool fits = type_is_dynamic(&dst->type) && type_fits(&src->type, &dst->type);
    if (!type_equal(&dst->type, &src->type) && !fits)
        src = view_of(g, src, 0, &dst->type, name);
    LirBuf *ops[2] = {dst, src};
    OperandRole roles[2] = {ROLE_OUT, ROLE_IN};
    lir_insert(g->p, NULL, IK_COPY, 2, ops, roles)->name = name;
}

/* The activations allocated after `mark` and not yet deallocated are
 * deallocated here, at the end of the part: a body's buffers live within
 * the part of the region that runs it, and another part may reuse their
 * memory. */
static void free_since(Gen *g, LirInstr *mark) {
    for (LirInstr *i = mark->next; i; i = i->next) {
        if (i->kind != IK_ALLOC)
            continue;
        bool freed = false;
        for (LirInstr *j = i->next; j && !freed; j = j->next)
            freed = j->kind == IK_DEALLOC && j->ops[0] == i->result;
        if (freed)
            continue;
        OperandRole r = ROLE_OUT;
        lir_insert(g->p, NULL, IK_DEALLOC, 1, &i->result, &r);
    }
}

static LirInstr *marker(Gen *g, InstrKind k, int nops, LirBuf *const *ops,
                        const OperandRole *roles, const char *name) {
    LirInstr *i = lir_insert(g->p, NULL, k, nops, ops, roles);
    i->name = name;
    return i;
}

/* if: the results are allocated before beginif; each part computes its
 * branch on the captured buffers and copies the branch's values in. */
static void gen_if(Gen *g, const Node *n) {
    LirBuf **res = arena_alloc_array(g->p->arena, (size_t)n->nres + 1, sizeof(LirBuf *));
    LirBuf **caps = arena_alloc_array(g->p->arena, (size_t)n->nops, sizeof(LirBuf *));
    for (int r = 0; r < n->nres; r++) {
        res[r] = lir_alloc(g->p, NULL, &n->res[r].type, n->name);
        set_buf(g, n, r, res[r]);
    }
    for (int i = 1; i < n->nops; i++)
        caps[i - 1] = buf_of(g, n->ops[i]);
    LirBuf *cond = buf_of(g, n->ops[0]);
    OperandRole in = ROLE_IN;
    LirInstr *mark = marker(g, IK_BEGINIF, 1, &cond, &in, n->name);
    for (int k = 0; k < 2; k++) {
        const Function *b = n->bodies[k];
        Gen sub = gen_body(g, b, caps);
        for (int r = 0; r < n->nres; r++)
            copy_to(g, res[r], buf_of(&sub, b->outputs[r]), n->name);
        free_since(g, mark);
        mark = marker(g, k ? IK_ENDIF : IK_ELSE, 0, NULL, NULL, n->name);
    }
}

/* loop: the carried values live in the results' buffers, the iteration
 * number and the condition in two scalars, all allocated before the loop.
 * Each run computes the body, copies its values into fresh buffers and then
 * into the carried ones (a body may return them swapped). */
static void gen_loop(Gen *g, const Node *n) {
    LirProgram *p = g->p;
    int nc = n->nres, ncap = n->nops - 2 - nc;
    LirBuf **params = arena_alloc_array(p->arena, (size_t)n->nops, sizeof(LirBuf *));
    Type ti = type_scalar(ELEM_I64), tc = type_scalar(ELEM_BOOL);
    Tensor *zero = tensor_new(p->arena, &ti);
    LirBuf *iter = lir_alloc(p, NULL, &ti, n->name), *cond = lir_alloc(p, NULL, &tc, n->name);
    copy_to(g, iter, lir_add_weight(p, LB_CONST, "zero", &ti, zero), n->name);
    copy_to(g, cond, buf_of(g, n->ops[1]), n->name);
    params[0] = iter;
    params[1] = cond;
    for (int j = 0; j < nc; j++) {
        params[2 + j] = lir_alloc(p, NULL, &n->res[j].type, n->name);
        set_buf(g, n, j, params[2 + j]);
        copy_to(g, params[2 + j], buf_of(g, n->ops[2 + j]), n->name);
    }
    for (int i = 0; i < ncap; i++)
        params[2 + nc + i] = buf_of(g, n->ops[2 + nc + i]);
    LirBuf *head[3] = {iter, buf_of(g, n->ops[0]), cond};
    OperandRole roles[3] = {ROLE_INOUT, ROLE_IN, ROLE_IN};
    LirInstr *mark = marker(g, IK_BEGINLOOP, 3, head, roles, n->name);
    const Function *b = n->bodies[0];
    Gen sub = gen_body(g, b, params);
    LirBuf **tmp = arena_alloc_array(p->arena, (size_t)nc + 1, sizeof(LirBuf *));
    for (int j = 0; j < nc; j++) {
        tmp[j] = lir_alloc(p, NULL, &n->res[j].type, n->name);
        copy_to(g, tmp[j], buf_of(&sub, b->outputs[1 + j]), n->name);
    }
    copy_to(g, cond, buf_of(&sub, b->outputs[0]), n->name);
    for (int j = 0; j < nc; j++)
        copy_to(g, params[2 + j], tmp[j], n->name);
    free_since(g, mark);
    marker(g, IK_ENDLOOP, 1, &iter, roles, n->name);
}

static void gen_region(Gen *g, const Node *n) {
    *g->regions = true;
    if (n->kind == NK_IF)
        gen_if(g, n);
    else
        gen_loop(g, n);
}

/* Labels must be unique in the program: an output named like an input or a
 * weight gets a suffix. */
static const char *unique_label(LirProgram *p, const char *name) {
    const char *label = name;
    for (int k = 1;; k++) {
        bool taken = false;
        for (int b = 0; b < p->nbufs && !taken; b++)
            taken = p->bufs[b]->label && !strcmp(p->bufs[b]->label, label);
        if (!taken)
            return label;
        label = arena_printf(p->arena, "%s.%d", name, k);
    }
}

LirProgram *irgen(Function *f, DiagList *d) {
    for (const Node *n = f->first; n; n = n->next)
        if (n->kind == NK_TRAP) {
            diag_error(d, node_where(n), "%s", node_attr_str(n, AK_message, "a trap"));
            return NULL;
        }
    LirProgram *p = lir_new(f->module->source);
    /* the source's lines, for the caret under a kernel's run-time error */
    if (f->module->text)
        p->text = arena_strndup(p->arena, f->module->text, strlen(f->module->text));
    bool regions = false;
    Gen g = {f, p, arena_alloc_array(p->arena, (size_t)f->next_id + 1, sizeof(LirBuf **)),
             &regions};
    for (int i = 0; i < f->nparams; i++) {
        Node *n = f->params[i];
        LirBuf *b = lir_add_weight(p, LB_IN, n->name, &n->res[0].type, NULL);
        b->label = unique_label(p, n->label ? n->label : n->name);
        set_buf(&g, n, 0, b);
    }
    LirBuf **outs = arena_alloc_array(p->arena, (size_t)f->noutputs + 1, sizeof(LirBuf *));
    for (int i = 0; i < f->noutputs; i++) {
        outs[i] = lir_add_weight(p, LB_OUT, f->output_names[i], &f->outputs[i]->type, NULL);
        outs[i]->label = unique_label(p, f->output_names[i]);
    }
    for (int i = 0; i < f->nconsts; i++) {
        Node *n = f->consts[i];
        LirBuf *b = lir_add_weight(p, LB_CONST, n->name, &n->res[0].type, n->payload);
        b->label = n->label ? unique_label(p, n->label) : NULL;
        set_buf(&g, n, 0, b);
    }
    for (Node *n = f->first; n; n = n->next)
        gen_node(&g, n);
    for (int i = 0; i < f->noutputs; i++) {
        LirBuf *ops[2] = {outs[i], buf_of(&g, f->outputs[i])};
        OperandRole roles[2] = {ROLE_OUT, ROLE_IN};
        lir_insert(p, NULL, IK_COPY, 2, ops, roles)->name = f->output_names[i];
    }
    for (int b = 0; b < p->nbufs; b++) {
        if (p->bufs[b]->kind != LB_ALLOC)
            continue;
        /* the naive size: every value of the graph in its own buffer */
        p->naive_bytes += ((int64_t)type_bytes(&p->bufs[b]->type) + 63) / 64 * 64;
        if (regions && lir_find_dealloc(p, p->bufs[b]))
            continue; /* a region's parts deallocate their own */
        OperandRole r = ROLE_OUT;
        lir_insert(p, NULL, IK_DEALLOC, 1, &p->bufs[b], &r);
    }
    (void)d;
    return p;
}
