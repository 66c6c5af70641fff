/* shorten-lifetimes: every allocactivation moves down to just before the
 * first instruction that uses the buffer, every deallocactivation up to just
 * after the last one, so that the allocator sees the real live ranges.
 * Requires a verified program; invalidates the memory plan.
 * One walk finds every buffer's first and last use and its dealloc (a
 * training step's program has tens of thousands of instructions and
 * buffers: a walk per buffer took seconds). Moving allocs and deallocs does
 * not change which instructions use a buffer. */
#include "passes/lir/lir_util.h"
#include "passes/pass.h"

bool lir_shorten_lifetimes(LirProgram *p, PassContext *ctx) {
    if (lir_has_control(p))
        return false; /* time is not program order there (lir.h) */
    BufIndex ix = buf_index_new(p);
    LirInstr **first = arena_alloc_array(p->arena, (size_t)ix.n + 1, sizeof *first);
    LirInstr **last = arena_alloc_array(p->arena, (size_t)ix.n + 1, sizeof *last);
    LirInstr **dealloc = arena_alloc_array(p->arena, (size_t)ix.n + 1, sizeof *dealloc);
    for (int b = 0; b < ix.n; b++)
        first[b] = last[b] = dealloc[b] = NULL;
    for (LirInstr *i = p->first; i; i = i->next) {
        if (i->kind == IK_DEALLOC) {
            int b = buf_index_of(&ix, i->ops[0]);
            if (b >= 0 && !dealloc[b])
                dealloc[b] = i;
            continue;
        }
        for (int k = 0; k < i->nops; k++) {
            LirBuf *s = lir_storage(i->ops[k]);
            int b = buf_index_of(&ix, s);
            if (b < 0 || last[b] == i || s->kind != LB_ALLOC ||
                !instr_mentions(i, (Region){s, 0, type_numel(&s->type)}))
                continue;
            if (!first[b])
                first[b] = i;
            last[b] = i;
        }
    }
    bool changed = false;
    for (int n = 0; n < p->nbufs; n++) {
        LirBuf *s = p->bufs[n];
        if (s->kind != LB_ALLOC || s->dead)
            continue;
        int b = buf_index_of(&ix, s);
        LirInstr *alloc = find_alloc_instr(s);
        if (!first[b] || !alloc)
            continue;
        if (alloc->next != first[b]) {
            lir_move_before(p, alloc, first[b]);
            pass_stat(ctx, "allocs-sunk", 1);
            changed = true;
        }
        if (dealloc[b] && last[b]->next != dealloc[b]) {
            lir_move_before(p, dealloc[b], last[b]->next);
            pass_stat(ctx, "deallocs-hoisted", 1);
            changed = true;
        }
    }
    return changed;
}
