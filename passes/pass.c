/* The pass registry and the helpers passes share. */
#include "passes/pass.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/infer.h"

static const PassInfo registry[] = {
#define PASS(nm, level, fn, desc) {nm, level, fn, NULL, STEP_PASS, desc, false},
#define PASS_MAIN(nm, level, fn, desc) {nm, level, fn, NULL, STEP_PASS, desc, true},
#define LIR_PASS(nm, fn, desc) {nm, PASS_LIR, NULL, fn, STEP_PASS, desc, false},
#define IRGEN_PASS(nm, desc) {nm, PASS_LIR, NULL, NULL, STEP_IRGEN, desc, false},
#define CODEGEN_PASS(nm, step, desc) {nm, PASS_CODEGEN, NULL, NULL, step, desc, false},
#include "passes/passes.def"
};

enum { NPASSES = sizeof registry / sizeof registry[0] };

const PassInfo *pass_find(const char *name) {
    for (int i = 0; i < NPASSES; i++)
        if (!strcmp(registry[i].name, name))
            return &registry[i];
    return NULL;
}

const PassInfo *pass_lookup(const char *name, const char *option, DiagList *d) {
    const PassInfo *p = pass_find(name);
    if (p)
        return p;
    StrBuf sb;
    sb_init(&sb);
    for (int i = 0; i < NPASSES; i++)
        sb_printf(&sb, "%s%s", i ? ", " : "", registry[i].name);
    diag_error(d, NULL, "%s%sunknown pass '%s'; the passes are: %s", option ? option : "",
               option ? ": " : "", name, sb_str(&sb));
    sb_free(&sb);
    return NULL;
}

int pass_count(void) {
    return NPASSES;
}

const PassInfo *pass_at(int i) {
    return i >= 0 && i < NPASSES ? &registry[i] : NULL;
}

const char *pass_level_name(PassLevel l) {
    switch (l) {
    case PASS_GRAPH: return "graph";
    case PASS_LOWERING: return "lowering";
    case PASS_SCHEDULE: return "schedule";
    case PASS_LIR: return "lir";
    case PASS_CODEGEN: return "codegen";
    }
    return "?";
}

void pass_stat(PassContext *ctx, const char *name, long n) {
    for (int i = 0; i < ctx->nstats; i++) {
        if (!strcmp(ctx->stats[i].name, name)) {
            ctx->stats[i].count += n;
            return;
        }
    }
    if (ctx->nstats < (int)(sizeof ctx->stats / sizeof ctx->stats[0])) {
        PassStat *s = &ctx->stats[ctx->nstats++];
        snprintf(s->name, sizeof s->name, "%s", name);
        s->count = n;
    }
}

/* The perturbation: v * 2 + 1 (v xor true for booleans), inserted after v's
 * definition and used instead of v everywhere. Both a scale and a shift, so
 * that shift-invariant consumers (softmax) and scale-invariant ones
 * (normalisations) still see a different value. */
static Value *break_value(Function *f, Node *at, Value *v) {
    Type one = type_scalar(v->type.elem);
    Value *x = v;
    NodeKind steps[2] = {NK_MUL, NK_ADD};
    double consts[2] = {2, 1};
    for (int k = v->type.elem == ELEM_BOOL ? 1 : 0; k < 2; k++) {
        Tensor *t = tensor_new(f->module->arena, &one);
        tensor_set_f64(t, 0, consts[k]);
        Node *c = graph_add_constant(f, "break-pass", t);
        Value *ops[2] = {x, &c->res[0]};
        NodeKind kind = v->type.elem == ELEM_BOOL ? NK_XOR : steps[k];
        Node *p = graph_insert_before(f, at, kind, 2, ops, 1);
        p->name = "break-pass";
        p->res[0].type = v->type;
        x = &p->res[0];
    }
    return x;
}

void pass_rewrote(PassContext *ctx, Function *f, Value *v) {
    if (!ctx->break_this_pass || ctx->broken || !v)
        return;
    ctx->broken = true;
    Node *at = node_is_storage(v->def) ? f->first : v->def->next;
    Value *x = break_value(f, at, v);
    /* Every use of v but the perturbation's own becomes a use of x. */
    Node *first = x->def->ops[0] == v ? x->def : x->def->ops[0]->def;
    graph_replace_uses(f, v, x);
    first->ops[0] = v;
}

void pass_break_lir(PassContext *ctx, LirProgram *p) {
    if (!ctx->break_this_pass || ctx->broken)
        return;
    LirBuf *out = NULL;
    for (int b = 0; b < p->nbufs && !out; b++)
        if (p->bufs[b]->kind == LB_OUT && !p->bufs[b]->dead)
            out = p->bufs[b];
    if (!out)
        return;
    ctx->broken = true;
    Type one = type_scalar(out->type.elem);
    Tensor *t = tensor_new(p->arena, &one);
    tensor_set_f64(t, 0, 1);
    LirBuf *c = lir_add_weight(p, LB_CONST, "break-pass", &one, t);
    c->address = p->const_bytes; /* outside the plan's blob: the interpreter reads the payload */
    LirBuf *ops[3] = {out, out, c};
    OperandRole roles[3] = {ROLE_OUT, ROLE_IN, ROLE_IN};
    NodeKind k = out->type.elem == ELEM_BOOL ? NK_XOR : NK_ADD;
    lir_insert(p, NULL, IK_OF_NODE(k), 3, ops, roles)->name = "break-pass";
    if (k == NK_ADD) /* and a scale, as in pass_rewrote */
        lir_insert(p, NULL, IK_OF_NODE(NK_ADD), 3, (LirBuf *[]){out, out, out}, roles)->name =
            "break-pass";
}

int *pass_use_counts(Function *f) {
    int *counts = calloc((size_t)(f->next_id ? f->next_id : 1), sizeof(int));
    if (!counts)
        return NULL;
    for (Node *n = f->first; n; n = n->next)
        for (int i = 0; i < n->nops; i++)
            counts[n->ops[i]->def->id]++;
    for (int i = 0; i < f->noutputs; i++)
        counts[f->outputs[i]->def->id]++;
    return counts;
}

bool value_is_constant(const Value *v) {
    return v->def->kind == NK_CONSTANT;
}

const Tensor *value_constant(const Value *v) {
    if (v->def->kind != NK_CONSTANT || !v->def->payload || !v->def->payload->data)
        return NULL;
    return v->def->payload;
}

bool value_splat(const Value *v, double *out) {
    const Tensor *t = value_constant(v);
    if (!t || tensor_numel(t) == 0 || (tensor_numel(t) > 1 && !tensor_is_splat(t)))
        return false;
    *out = tensor_get_f64(t, 0);
    return true;
}
