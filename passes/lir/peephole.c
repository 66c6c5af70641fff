/* peephole: local cleanups of the low-level program:
 *   copy @out %a, @in %a                      -> nothing
 *   %v = tensorview of %a, never used         -> nothing
 *   %v = tensorview @in %a {offset=0} with %a's type -> %a
 *   allocactivation %a; deallocactivation %a  -> nothing
 * Requires a verified program; invalidates the memory plan. */
#include "passes/lir/lir_util.h"
#include "passes/pass.h"

static bool view_used(const LirProgram *p, const LirBuf *v) {
    for (const LirInstr *i = p->first; i; i = i->next)
        for (int k = 0; k < i->nops; k++)
            if (i->ops[k] == v && i->result != v)
                return true;
    return false;
}

bool lir_peephole(LirProgram *p, PassContext *ctx) {
    if (lir_has_control(p))
        return false; /* time is not program order there (lir.h) */
    bool changed = false;
    for (LirInstr *i = p->first, *next; i; i = next) {
        next = i->next;
        if (i->kind == IK_COPY && buf_region(i->ops[0]).storage == buf_region(i->ops[1]).storage &&
            buf_region(i->ops[0]).begin == buf_region(i->ops[1]).begin) {
            lir_remove(p, i);
            pass_stat(ctx, "self-copies-removed", 1);
            changed = true;
        } else if (i->kind == IK_TENSORVIEW && i->result->offset == 0 &&
                   type_equal(&i->result->type, &i->ops[0]->type)) {
            lir_replace_buf(p, i->result, i->ops[0]);
            lir_remove(p, i);
            pass_stat(ctx, "identity-views-removed", 1);
            changed = true;
        } else if (i->kind == IK_TENSORVIEW && !view_used(p, i->result)) {
            lir_remove(p, i);
            pass_stat(ctx, "unused-views-removed", 1);
            changed = true;
        } else if (i->kind == IK_ALLOC && next && next->kind == IK_DEALLOC &&
                   next->ops[0] == i->result) {
            next = next->next;
            lir_remove(p, i->next);
            lir_remove(p, i);
            pass_stat(ctx, "empty-buffers-removed", 1);
            changed = true;
        }
    }
    return changed;
}
