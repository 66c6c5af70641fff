/* shorten-lifetimes: every allocactivation moves down to just before the
 * first instruction that uses the buffer, every deallocactivation up to just
 * after the last one, so that the allocator sees the real live ranges.
 * Requires a verified program; invalidates the memory plan. */
#include "passes/lir/lir_util.h"
#include "passes/pass.h"

bool lir_shorten_lifetimes(LirProgram *p, PassContext *ctx) {
    if (lir_has_control(p))
        return false; /* time is not program order there (lir.h) */
    bool changed = false;
    for (int b = 0; b < p->nbufs; b++) {
        LirBuf *s = p->bufs[b];
        if (s->kind != LB_ALLOC || s->dead)
            continue;
        LirInstr *alloc = find_alloc_instr(s), *dealloc = lir_find_dealloc(p, s);
        Region whole = {s, 0, type_numel(&s->type)};
        LirInstr *first = NULL, *last = NULL;
        for (LirInstr *i = p->first; i; i = i->next) {
            if (!instr_mentions(i, whole))
                continue;
            if (!first)
                first = i;
            last = i;
        }
        if (!first || !alloc)
            continue;
        if (alloc->next != first) {
            lir_move_before(p, alloc, first);
            pass_stat(ctx, "allocs-sunk", 1);
            changed = true;
        }
        if (dealloc && last->next != dealloc) {
            lir_move_before(p, dealloc, last->next);
            pass_stat(ctx, "deallocs-hoisted", 1);
            changed = true;
        }
    }
    return changed;
}
