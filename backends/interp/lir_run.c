/* Runs a low-level program against its static memory plan, with the same
 * kernels as the graph interpreter. This is what checks the plan: the
 * activations live in one arena at their planned offsets, and every buffer
 * is poisoned (all bits set: NaN for floats) when it is allocated and when
 * it is deallocated, so a read of memory that is not the value it should be
 * shows up in the outputs. */
#include <string.h>

#include "backends/interp/interp.h"
#include "backends/interp/kernels.h"
#include "core/lir_verify.h"

typedef struct LirRun {
    LirProgram *p;
    unsigned char *arena;
    void **base; /* by buffer id: where its storage starts */
    Arena *scratch;
    Arena *step; /* per instruction records; renewed at each endloop, so a
                  * long loop runs in bounded memory */
    DiagList *d;
    /* By buffer id: the run-time type of a buffer whose type has
     * bounded-dynamic dimensions, once an instruction wrote it (irgen gives
     * such buffers no views). */
    Type *rt;
    bool *has_rt;
    Arena *strs; /* computed strings: the caller's arena, which holds the outputs */
} LirRun;

static Tensor operand(const LirRun *r, LirBuf *b) {
    LirBuf *s = lir_storage(b);
    size_t off = b->kind == LB_VIEW ? (size_t)b->offset * elem_size(b->type.elem) : 0;
    Type t = b == s && r->has_rt[s->id] ? r->rt[s->id] : b->type;
    return (Tensor){.type = t, .data = (unsigned char *)r->base[s->id] + off};
}

/* Records what an instruction wrote into a bounded-dynamic buffer. */
static void set_run_time(LirRun *r, LirBuf *b, const Type *t) {
    if (!type_is_dynamic(&b->type) || b != lir_storage(b))
        return;
    r->rt[b->id] = *t;
    r->has_rt[b->id] = true;
}

static void poison(const LirRun *r, LirBuf *b) {
    memset(r->base[b->id], 0xff, type_bytes(&b->type));
}

/* dst[offsets + i] = src[i], walking src in order. */
static void insert(Tensor dst, Tensor src, const Attr *offs) {
    int rank = src.type.rank;
    int64_t ds[MAX_RANK], idx[MAX_RANK] = {0};
    type_strides(&dst.type, ds);
    size_t es = elem_size(src.type.elem);
    int64_t n = tensor_numel(&src);
    for (int64_t i = 0; i < n; i++) {
        int64_t off = 0;
        for (int k = 0; k < rank; k++)
            off += (idx[k] + offs->ints.v[k]) * ds[k];
        memcpy((char *)dst.data + (size_t)off * es, (char *)src.data + (size_t)i * es, es);
        for (int k = rank - 1; k >= 0; k--) {
            if (++idx[k] < src.type.dims[k])
                break;
            idx[k] = 0;
        }
    }
}

static bool run_compute(LirRun *r, LirInstr *i) {
    Node *n = instr_as_node(r->p, i, r->step);
    Tensor *ins[256], *outs[64];
    Tensor *storage = arena_alloc_array(r->step, (size_t)i->nops + 1, sizeof(Tensor));
    for (int k = 0; k < i->nops; k++)
        storage[k] = operand(r, i->ops[k]);
    for (int k = 0; k < n->nres; k++)
        outs[k] = &storage[k];
    for (int k = 0; k < n->nops; k++)
        ins[k] = &storage[n->nres + k];
    const Node *rn = interp_run_time_node(n, ins, r->step, r->d);
    if (!rn)
        return false;
    for (int k = 0; k < n->nres; k++)
        storage[k].type = rn->res[k].type;
    if (!interp_eval_node(rn, ins, outs, r->strs, r->d))
        return false;
    for (int k = 0; k < n->nres; k++)
        set_run_time(r, i->ops[k], &outs[k]->type);
    return true;
}

static bool run_instr(LirRun *r, LirInstr *i) {
    switch (i->kind) {
    case IK_BEGINIF:
    case IK_ELSE:
    case IK_ENDIF:
    case IK_BEGINLOOP:
    case IK_ENDLOOP:
        return true; /* the walk in run_program follows them */
    case IK_ALLOC:
        poison(r, i->result);
        return true;
    case IK_DEALLOC:
        poison(r, i->ops[0]);
        return true;
    case IK_TENSORVIEW:
        return true;
    case IK_COPY: {
        Tensor dst = operand(r, i->ops[0]), src = operand(r, i->ops[1]);
        memmove(dst.data, src.data, tensor_bytes(&src));
        set_run_time(r, i->ops[0], &src.type);
        return true;
    }
    case IK_INSERT:
        insert(operand(r, i->ops[0]), operand(r, i->ops[1]), instr_attr(i, AK_offsets));
        return true;
    default:
        return run_compute(r, i);
    }
}

/* Hands the observer each operand and its whole storage. */
static void observe_instr(const LirRun *r, const LirInstr *i, LirObserver observe, void *ctx) {
    if (i->kind == IK_ALLOC || i->kind == IK_DEALLOC || i->kind == IK_TENSORVIEW)
        return;
    Tensor *ops = arena_alloc_array(r->step, (size_t)i->nops + 1, sizeof(Tensor));
    Tensor *storage = arena_alloc_array(r->step, (size_t)i->nops + 1, sizeof(Tensor));
    for (int k = 0; k < i->nops; k++) {
        LirBuf *s = lir_storage(i->ops[k]);
        ops[k] = operand(r, i->ops[k]);
        storage[k] = (Tensor){.type = s->type, .data = r->base[s->id]};
    }
    observe(ctx, i, ops, storage);
}

static int64_t scalar_of(const LirRun *r, LirBuf *b) {
    Tensor t = operand(r, b);
    return tensor_get_i64(&t, 0);
}

/* Each control-flow marker's partner: beginif -> else -> endif, and
 * beginloop <-> endloop (lir_verify has checked that they nest). */
static LirInstr **partners(LirProgram *p, Arena *a) {
    lir_number(p);
    LirInstr **to = arena_alloc_array(a, (size_t)p->ninstrs + 1, sizeof(LirInstr *));
    LirInstr **open = arena_alloc_array(a, (size_t)p->ninstrs + 1, sizeof(LirInstr *));
    int depth = 0;
    for (LirInstr *i = p->first; i; i = i->next) {
        switch (i->kind) {
        case IK_BEGINIF:
        case IK_BEGINLOOP: open[depth++] = i; break;
        case IK_ELSE:
            to[open[depth - 1]->index] = i;
            open[depth - 1] = i;
            break;
        case IK_ENDIF: to[open[--depth]->index] = i; break;
        case IK_ENDLOOP:
            to[open[--depth]->index] = i;
            to[i->index] = open[depth];
            break;
        default: break;
        }
    }
    return to;
}

/* The instruction after i: a beginif whose condition is false goes past its
 * else, an else (the end of the first part) past its endif, a beginloop
 * whose test fails past its endloop, and an endloop counts and goes back to
 * its beginloop's test. */
static LirInstr *next_instr(LirRun *r, LirInstr *i, LirInstr **to) {
    switch (i->kind) {
    case IK_BEGINIF: return scalar_of(r, i->ops[0]) ? i->next : to[i->index]->next;
    case IK_ELSE: return to[i->index]->next;
    case IK_BEGINLOOP:
        return scalar_of(r, i->ops[0]) < scalar_of(r, i->ops[1]) && scalar_of(r, i->ops[2])
                   ? i->next
                   : to[i->index]->next;
    case IK_ENDLOOP: {
        Tensor it = operand(r, i->ops[0]);
        tensor_set_i64(&it, 0, tensor_get_i64(&it, 0) + 1);
        Arena *fresh = arena_new();
        if (fresh) {
            arena_destroy(r->step);
            r->step = fresh;
        }
        return to[i->index];
    }
    default: return i->next;
    }
}

bool interp_run_lir(LirProgram *p, Tensor *const *inputs, Tensor **outputs, Arena *a,
                    DiagList *d) {
    return interp_run_lir_observed(p, inputs, outputs, a, d, NULL, NULL);
}

bool interp_run_lir_observed(LirProgram *p, Tensor *const *inputs, Tensor **outputs, Arena *a,
                             DiagList *d, LirObserver observe, void *observe_ctx) {
    if (!p->allocated) {
        diag_error(d, NULL, "the program has no memory plan (run the allocate pass)");
        return false;
    }
    /* The kernels trust the shapes, the plan the addresses: a program a pass
     * broke (under --no-verify) is refused, not run out of bounds. */
    if (!lir_check_runnable(p, "the LIR interpreter", d))
        return false;
    LirRun r = {p, NULL, NULL, arena_new(), arena_new(), d, NULL, NULL, a};
    if (!r.scratch || !r.step) {
        arena_destroy(r.scratch);
        arena_destroy(r.step);
        diag_error(d, NULL, "out of memory");
        return false;
    }
    r.arena = arena_alloc_big(r.scratch, (size_t)(p->arena_bytes ? p->arena_bytes : 1));
    r.base = arena_alloc_array(r.scratch, (size_t)p->next_id + 1, sizeof(void *));
    r.rt = arena_alloc_array(r.scratch, (size_t)p->next_id + 1, sizeof(Type));
    r.has_rt = arena_alloc_array(r.scratch, (size_t)p->next_id + 1, sizeof(bool));
    int nin = 0, nout = 0;
    bool ok = true;
    for (int b = 0; b < p->nbufs && ok; b++) {
        LirBuf *w = p->bufs[b];
        if (w->dead)
            continue;
        switch (w->kind) {
        case LB_ALLOC: r.base[w->id] = r.arena + w->address; break;
        case LB_CONST:
            if (!w->payload || !w->payload->data) {
                diag_error(d, NULL, "weight '%s' has no data (elided in the text form)", w->name);
                ok = false;
            } else {
                r.base[w->id] = w->payload->data;
            }
            break;
        case LB_IN:
            if (!inputs[nin] || !type_equal(&inputs[nin]->type, &w->type)) {
                char t[TYPE_STR_MAX];
                diag_error(d, NULL, "input '%s' must be %s", w->name, type_str(&w->type, t));
                ok = false;
            } else {
                r.base[w->id] = inputs[nin]->data;
            }
            nin++;
            break;
        case LB_OUT:
            outputs[nout] = tensor_new(a, &w->type);
            r.base[w->id] = outputs[nout++]->data;
            break;
        case LB_VIEW: break;
        }
    }
    LirInstr **to = partners(p, r.scratch);
    for (LirInstr *i = p->first; i && ok; i = ok ? next_instr(&r, i, to) : NULL) {
        ok = run_instr(&r, i);
        if (ok && observe && !instr_is_control(i->kind))
            observe_instr(&r, i, observe, observe_ctx);
    }
    /* Outputs with bounded-dynamic dimensions have their run-time sizes. */
    for (int b = 0, k = 0; b < p->nbufs && ok; b++) {
        LirBuf *w = p->bufs[b];
        if (w->dead || w->kind != LB_OUT)
            continue;
        if (r.has_rt[w->id])
            outputs[k]->type = r.rt[w->id];
        k++;
    }
    arena_destroy(r.step);
    arena_destroy(r.scratch);
    return ok;
}
