/* copy-elim: `copy @out %dst, @in %src` where %src is an activation that
 * dies at the copy: everything that wrote %src writes the destination
 * instead, and the copy goes. This is how outputs are written in place, and
 * how the parts of a concatenation are computed straight into their slots
 * of its buffer (the destination's allocation moves up when it must).
 * Refused when something between the first use of %src and the copy touches
 * the destination region. Requires a verified program; invalidates the
 * memory plan. */
#include "passes/lir/lir_util.h"
#include "passes/pass.h"

static LirInstr *first_use(LirProgram *p, LirBuf *storage) {
    Region whole = {storage, 0, type_numel(&storage->type)};
    for (LirInstr *i = p->first; i; i = i->next)
        if (instr_touches(i, whole))
            return i;
    return NULL;
}

static bool region_free_between(const LirInstr *from, const LirInstr *to, Region r) {
    for (const LirInstr *i = from; i && i != to; i = i->next)
        if (instr_touches(i, r))
            return false;
    return true;
}

static bool eliminate(LirProgram *p, LirInstr *copy) {
    LirBuf *dst = copy->ops[0], *src = copy->ops[1];
    LirBuf *s = lir_storage(src), *d = lir_storage(dst);
    if (s->kind != LB_ALLOC || !buf_is_whole(src) || s == d ||
        (d->kind != LB_ALLOC && d->kind != LB_OUT))
        return false;
    if (used_after(copy, s))
        return false;
    LirInstr *salloc = find_alloc_instr(s), *start = first_use(p, s);
    if (!salloc || !start)
        return false;
    Region r = buf_region(dst);
    if (!region_free_between(start, copy, r))
        return false;
    /* The destination must exist before the source's first use. */
    LirInstr *dalloc = find_alloc_instr(d);
    if (dalloc) {
        for (LirInstr *i = salloc; i && i != copy; i = i->next)
            if (i == dalloc) {
                lir_move_before(p, dalloc, salloc);
                break;
            }
    }
    LirBuf *target = dst;
    if (!buf_is_whole(dst) || !type_equal(&dst->type, &s->type) || dst->kind == LB_VIEW)
        target = lir_view(p, salloc, d, r.begin, &s->type, s->name);
    LirInstr *dealloc = lir_find_dealloc(p, s);
    if (dealloc)
        lir_remove(p, dealloc);
    lir_replace_buf(p, s, target);
    lir_remove(p, salloc);
    lir_remove(p, copy);
    return true;
}

bool lir_copy_elim(LirProgram *p, PassContext *ctx) {
    bool changed = false;
    for (LirInstr *i = p->first, *next; i; i = next) {
        next = i->next;
        if (i->kind != IK_COPY || !eliminate(p, i))
            continue;
        pass_stat(ctx, "copies-eliminated", 1);
        changed = true;
    }
    long copies = 0;
    for (LirInstr *i = p->first; i; i = i->next)
        copies += i->kind == IK_COPY || i->kind == IK_INSERT;
    pass_stat(ctx, "copies-left", copies);
    return changed;
}
