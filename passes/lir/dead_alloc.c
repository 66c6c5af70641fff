/* dead-alloc: an activation nothing reads is dropped with everything that
 * only writes it (compute instructions whose every output lands there,
 * copies and inserts into it, its views, its alloc and dealloc).
 * Requires a verified program; invalidates the memory plan. */
#include "passes/lir/lir_util.h"
#include "passes/pass.h"

static bool is_read(const LirProgram *p, Region whole) {
    for (const LirInstr *i = p->first; i; i = i->next)
        if (instr_reads(i, whole))
            return true;
    return false;
}

/* Does i write only into `storage` (so it is dead with it)? */
static bool writes_only(const LirInstr *i, LirBuf *storage) {
    if (i->kind == IK_TENSORVIEW)
        return lir_storage(i->ops[0]) == storage;
    if (i->kind == IK_ALLOC || i->kind == IK_DEALLOC)
        return i->result == storage || (i->nops && i->ops[0] == storage);
    bool any = false;
    for (int k = 0; k < i->nops; k++) {
        if (i->roles[k] == ROLE_IN)
            continue;
        if (lir_storage(i->ops[k]) != storage)
            return false;
        any = true;
    }
    return any;
}

/* Does an instruction write `storage` along with some other buffer? Then
 * it stays, and so does its place to write. */
static bool shared_writer(const LirProgram *p, LirBuf *storage, Region whole) {
    for (const LirInstr *i = p->first; i; i = i->next)
        if (instr_writes(i, whole) && !writes_only(i, storage))
            return true;
    return false;
}

bool lir_dead_alloc(LirProgram *p, PassContext *ctx) {
    if (lir_has_control(p))
        return false; /* time is not program order there (lir.h) */
    bool changed = false;
    for (int b = 0; b < p->nbufs; b++) {
        LirBuf *s = p->bufs[b];
        if (s->kind != LB_ALLOC || s->dead)
            continue;
        Region whole = {s, 0, type_numel(&s->type)};
        if (is_read(p, whole) || shared_writer(p, s, whole))
            continue;
        for (LirInstr *i = p->first, *next; i; i = next) {
            next = i->next;
            if (writes_only(i, s)) {
                if (instr_is_compute(i->kind) || i->kind == IK_COPY || i->kind == IK_INSERT)
                    pass_stat(ctx, "dead-stores-removed", 1);
                lir_remove(p, i);
            }
        }
        s->dead = true;
        pass_stat(ctx, "dead-allocs-removed", 1);
        changed = true;
    }
    return changed;
}
