/* share-buffers: an elementwise instruction whose input dies there writes
 * its result over that input (in place) instead of into a new activation:
 *   relu @out %b, @in %a   (last use of %a)  ->  relu @out %a, @in %a
 * The input's buffer then lives as long as the result did. Only kinds that
 * read element i before writing element i qualify (instr_allows_inplace),
 * and only same-typed whole activations. Requires a verified program;
 * invalidates the memory plan. */
#include "passes/lir/lir_util.h"
#include "passes/pass.h"

static bool share(LirProgram *p, LirInstr *i, int out) {
    LirBuf *o = i->ops[out];
    if (o->kind != LB_ALLOC)
        return false;
    for (int k = 0; k < i->nops; k++) {
        if (i->roles[k] != ROLE_IN)
            continue;
        LirBuf *in = i->ops[k], *s = lir_storage(in);
        if (s->kind != LB_ALLOC || !buf_is_whole(in) || !type_equal(&in->type, &o->type) ||
            s == o || used_after(i, s))
            continue;
        /* The input's storage takes over the output's lifetime. */
        LirInstr *in_dealloc = lir_find_dealloc(p, s), *out_dealloc = lir_find_dealloc(p, o);
        LirInstr *out_alloc = find_alloc_instr(o);
        lir_replace_buf(p, o, in);
        if (in_dealloc)
            lir_remove(p, in_dealloc);
        if (out_dealloc)
            out_dealloc->ops[0] = s;
        if (out_alloc)
            lir_remove(p, out_alloc);
        return true;
    }
    return false;
}

bool lir_share_buffers(LirProgram *p, PassContext *ctx) {
    if (lir_has_control(p))
        return false; /* time is not program order there (lir.h) */
    bool changed = false;
    for (LirInstr *i = p->first; i; i = i->next) {
        if (!instr_allows_inplace(i->kind))
            continue;
        for (int k = 0; k < i->nops && i->roles[k] != ROLE_IN; k++) {
            if (share(p, i, k)) {
                pass_stat(ctx, "buffers-shared", 1);
                changed = true;
            }
        }
    }
    return changed;
}
