/* The LIR verifier: buffers live where they are used, operand roles as the
 * instruction kind says, no writes to constants or inputs, views inside
 * their buffers, and each compute instruction's types by the same shape rule
 * as its graph node. */
#include "core/lir_verify.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/infer.h"

typedef enum { ST_UNBORN, ST_LIVE, ST_DEAD } BufState;

typedef struct Verifier {
    LirProgram *p;
    DiagList *d;
    BufState *state; /* by buffer id */
    bool ok;
    /* Control flow: the markers open around the current instruction, and
     * the part (numbered as it opens) each buffer was allocated in. */
    LirInstr **open;
    int depth, nparts;
    int *part_of, *part; /* by buffer id; by depth: the open part's number */
} Verifier;

static void fail(Verifier *v, const LirInstr *i, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail(Verifier *v, const LirInstr *i, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    v->ok = false;
    if (i->loc.line > 0)
        diag_add(v->d, DIAG_ERROR, NULL, i->loc, NULL, "%s: %s", instr_kind_name(i->kind), msg);
    else
        diag_error(v->d, NULL, "instruction %d (%s%s%s): %s", i->index, instr_kind_name(i->kind),
                   i->name[0] ? " of " : "", i->name, msg);
}

static const char *buf_name(const LirBuf *b, char *buf, size_t len) {
    if (b->label)
        snprintf(buf, len, "%%%s", b->label);
    else
        snprintf(buf, len, "%%%d", b->id);
    return buf;
}

static bool is_weight(const LirBuf *b) {
    return b->kind == LB_CONST || b->kind == LB_IN || b->kind == LB_OUT;
}

static BufState state_of(const Verifier *v, const LirBuf *b) {
    if (is_weight(b))
        return ST_LIVE;
    if (b->kind == LB_VIEW) {
        BufState base = state_of(v, b->base);
        if (base != ST_LIVE)
            return base;
    }
    return v->state[b->id];
}

static void check_operands_live(Verifier *v, const LirInstr *i) {
    for (int k = 0; k < i->nops; k++) {
        const LirBuf *b = i->ops[k];
        char nm[64];
        BufState st = state_of(v, b);
        if (st == ST_UNBORN)
            fail(v, i, "uses %s before it is defined", buf_name(b, nm, sizeof nm));
        else if (st == ST_DEAD)
            fail(v, i, "uses %s after its deallocactivation", buf_name(b, nm, sizeof nm));
        if (i->roles[k] != ROLE_IN) {
            const LirBuf *s = lir_storage((LirBuf *)b);
            if (s->kind == LB_CONST)
                fail(v, i, "writes to the constant weight %s", buf_name(b, nm, sizeof nm));
            else if (s->kind == LB_IN)
                fail(v, i, "writes to the input %s", buf_name(b, nm, sizeof nm));
        }
    }
}

static bool need_roles(Verifier *v, const LirInstr *i, int nouts, int nins) {
    if (i->nops != nouts + nins) {
        fail(v, i, "takes %d operands, has %d", nouts + nins, i->nops);
        return false;
    }
    for (int k = 0; k < i->nops; k++) {
        bool out = k < nouts;
        if (out ? i->roles[k] == ROLE_IN : i->roles[k] != ROLE_IN) {
            fail(v, i, "operand %d must be %s", k, out ? "@out or @inout" : "@in");
            return false;
        }
    }
    return true;
}

static void check_view(Verifier *v, const LirInstr *i) {
    const LirBuf *view = i->result, *base = i->ops[0];
    if (base->kind == LB_VIEW) {
        fail(v, i, "a view's base must be a buffer, not another view");
        return;
    }
    if (view->type.elem != base->type.elem) {
        fail(v, i, "a view keeps its buffer's element kind");
        return;
    }
    int64_t size = type_numel(&view->type), have = type_numel(&base->type);
    if (view->offset < 0 || size > have || view->offset > have - size)
        fail(v, i, "view of %lld elements at offset %lld exceeds its buffer of %lld",
             (long long)type_numel(&view->type), (long long)view->offset,
             (long long)type_numel(&base->type));
}

static void check_insert(Verifier *v, const LirInstr *i) {
    const Type *dst = &i->ops[0]->type, *src = &i->ops[1]->type;
    const Attr *a = instr_attr(i, AK_offsets);
    if (!a || a->ints.n != dst->rank || src->rank != dst->rank || src->elem != dst->elem) {
        fail(v, i, "needs offsets for every axis and operands of one rank and kind");
        return;
    }
    for (int k = 0; k < dst->rank; k++) {
        if (a->ints.v[k] < 0 || src->dims[k] > dst->dims[k] ||
            a->ints.v[k] > dst->dims[k] - src->dims[k]) {
            fail(v, i, "the inserted tensor does not fit at axis %d", k);
            return;
        }
    }
}

/* The node's shape rule on the instruction's operand types. */
static void check_compute(Verifier *v, const LirInstr *i) {
    Arena *a = arena_new();
    Node *n = instr_as_node(v->p, i, a);
    int omin = node_kind_ops_min(n->kind), omax = node_kind_ops_max(n->kind);
    int rmin = node_kind_res_min(n->kind), rmax = node_kind_res_max(n->kind);
    if (n->nres < rmin || (rmax >= 0 && n->nres > rmax) || n->nops < omin ||
        (omax >= 0 && n->nops > omax)) {
        fail(v, i, "has %d outputs and %d inputs", n->nres, n->nops);
    } else {
        for (int k = n->nres; k < i->nops; k++)
            if (i->roles[k] != ROLE_IN)
                fail(v, i, "operand %d must be @in", k);
        Type declared[64];
        for (int k = 0; k < n->nres && k < 64; k++)
            declared[k] = n->res[k].type;
        DiagList scratch;
        diag_init(&scratch, NULL);
        if (!infer_node(n, &scratch)) {
            fail(v, i, "%s", scratch.head ? scratch.head->msg : "bad operands");
        } else {
            for (int k = 0; k < n->nres && k < 64; k++) {
                char x[TYPE_STR_MAX], y[TYPE_STR_MAX];
                if (!type_equal(&declared[k], &n->res[k].type))
                    fail(v, i, "output %d is %s but the inputs give %s", k,
                         type_str(&declared[k], x), type_str(&n->res[k].type, y));
            }
        }
        diag_free(&scratch);
    }
    arena_destroy(a);
}

static void need_scalar(Verifier *v, const LirInstr *i, int k, ElemKind e, const char *what) {
    const Type *t = &i->ops[k]->type;
    if (t->elem != e || type_numel(t) != 1) {
        char ty[TYPE_STR_MAX];
        fail(v, i, "%s is %s; it must be one %s", what, type_str(t, ty), elem_name(e));
    }
}

/* The part that ends here: a buffer allocated in it must be deallocated in
 * it, as the other part (or the next run of a loop) may not see it. */
static void close_part(Verifier *v, const LirInstr *i) {
    int part = v->part[v->depth - 1];
    for (int b = 0; b < v->p->nbufs; b++) {
        const LirBuf *x = v->p->bufs[b];
        if (x->kind == LB_ALLOC && !x->dead && v->state[x->id] == ST_LIVE &&
            v->part_of[x->id] == part) {
            char nm[64];
            fail(v, i, "%s is allocated in the part this ends but not deallocated in it",
                 buf_name(x, nm, sizeof nm));
        }
    }
}

static void open_part(Verifier *v, LirInstr *i) {
    v->open[v->depth] = i;
    v->part[v->depth++] = ++v->nparts;
}

/* Markers nest: beginif .. else .. endif, beginloop .. endloop. */
static void check_control(Verifier *v, LirInstr *i) {
    LirInstr *top = v->depth ? v->open[v->depth - 1] : NULL;
    InstrKind want = i->kind == IK_ELSE ? IK_BEGINIF : i->kind == IK_ENDIF ? IK_ELSE : IK_BEGINLOOP;
    switch (i->kind) {
    case IK_BEGINIF:
        check_operands_live(v, i);
        need_scalar(v, i, 0, ELEM_BOOL, "the condition");
        open_part(v, i);
        return;
    case IK_BEGINLOOP:
        check_operands_live(v, i);
        need_scalar(v, i, 0, ELEM_I64, "the iteration");
        need_scalar(v, i, 1, ELEM_I64, "the trip count");
        need_scalar(v, i, 2, ELEM_BOOL, "the condition");
        open_part(v, i);
        return;
    default: break;
    }
    if (!top || top->kind != want) {
        fail(v, i, "without its %s", instr_kind_name(want));
        return;
    }
    close_part(v, i);
    v->depth--;
    if (i->kind == IK_ELSE)
        open_part(v, i);
    if (i->kind == IK_ENDLOOP) {
        check_operands_live(v, i);
        if (i->ops[0] != top->ops[0])
            fail(v, i, "counts another iteration buffer than its beginloop");
    }
}

static void check_instr(Verifier *v, LirInstr *i) {
    if (!instr_is_compute(i->kind) &&
        !need_roles(v, i, instr_memory_nouts(i->kind), instr_memory_nins(i->kind)))
        return;
    if (instr_is_control(i->kind)) {
        check_control(v, i);
        return;
    }
    switch (i->kind) {
    case IK_ALLOC:
        v->state[i->result->id] = ST_LIVE;
        v->part_of[i->result->id] = v->depth ? v->part[v->depth - 1] : 0;
        return;
    case IK_DEALLOC:
        check_operands_live(v, i);
        if (i->ops[0]->kind != LB_ALLOC)
            fail(v, i, "deallocates something that is not an allocactivation");
        v->state[i->ops[0]->id] = ST_DEAD;
        return;
    case IK_TENSORVIEW:
        check_operands_live(v, i);
        check_view(v, i);
        v->state[i->result->id] = ST_LIVE;
        return;
    case IK_COPY:
        check_operands_live(v, i);
        /* Into a bounded-dynamic buffer, anything within its bounds. */
        if (!type_equal(&i->ops[0]->type, &i->ops[1]->type) &&
            !(type_is_dynamic(&i->ops[0]->type) && type_fits(&i->ops[1]->type, &i->ops[0]->type)))
            fail(v, i, "copies between different types");
        return;
    case IK_INSERT:
        check_operands_live(v, i);
        check_insert(v, i);
        return;
    default:
        check_operands_live(v, i);
        check_compute(v, i);
        return;
    }
}

bool lir_verify(LirProgram *p, DiagList *d) {
    lir_number(p);
    Verifier v = {.p = p, .d = d, .ok = true};
    v.state = calloc((size_t)p->next_id + 1, sizeof(BufState));
    v.open = calloc((size_t)p->ninstrs + 1, sizeof *v.open);
    v.part = calloc((size_t)p->ninstrs + 1, sizeof *v.part);
    v.part_of = calloc((size_t)p->next_id + 1, sizeof *v.part_of);
    if (!v.state || !v.open || !v.part || !v.part_of) {
        diag_error(d, NULL, "out of memory in the verifier");
        free(v.state);
        free(v.open);
        free(v.part);
        free(v.part_of);
        return false;
    }
    for (int b = 0; b < p->nbufs; b++) {
        const char *problem = p->bufs[b]->dead ? NULL : type_quant_problem(&p->bufs[b]->type);
        if (problem) {
            char nm[64], ty[TYPE_STR_MAX];
            diag_error(d, NULL, "%s has type %s: %s", buf_name(p->bufs[b], nm, sizeof nm),
                       type_str(&p->bufs[b]->type, ty), problem);
            v.ok = false;
        }
    }
    for (LirInstr *i = p->first; i; i = i->next)
        check_instr(&v, i);
    if (v.depth)
        fail(&v, v.open[v.depth - 1], "is never closed");
    free(v.open);
    free(v.part);
    free(v.part_of);
    for (int b = 0; b < p->nbufs; b++) {
        const LirBuf *x = p->bufs[b];
        if (x->kind == LB_ALLOC && !x->dead && v.state[x->id] == ST_LIVE) {
            char nm[64];
            diag_error(d, NULL, "%s is never deallocated", buf_name(x, nm, sizeof nm));
            v.ok = false;
        }
    }
    free(v.state);
    return v.ok;
}

/* A placed buffer lies inside its memory: the arena for activations, the
 * mutable area for inputs and outputs. */
static bool check_plan(const LirProgram *p, DiagList *d) {
    bool ok = true;
    for (int b = 0; b < p->nbufs; b++) {
        const LirBuf *x = p->bufs[b];
        if (x->dead || (x->kind != LB_ALLOC && x->kind != LB_IN && x->kind != LB_OUT))
            continue;
        int64_t size = x->kind == LB_ALLOC ? p->arena_bytes : p->mutable_bytes;
        int64_t bytes = (int64_t)type_bytes(&x->type);
        if (x->address < 0 || bytes > size || x->address > size - bytes) {
            char nm[64];
            diag_error(d, NULL, "%s (%lld bytes at %lld) lies outside its memory of %lld bytes",
                       buf_name(x, nm, sizeof nm), (long long)bytes, (long long)x->address,
                       (long long)size);
            ok = false;
        }
    }
    return ok;
}

bool lir_check_runnable(LirProgram *p, const char *who, DiagList *d) {
    bool ok = lir_verify(p, d) && (!p->allocated || check_plan(p, d));
    if (!ok)
        diag_note(d, NULL, "%s does not run invalid low-level IR", who);
    return ok;
}
