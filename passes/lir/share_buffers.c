/* share-buffers: an elementwise instruction whose input dies there writes
 * its result over that input (in place) instead of into a new activation:
 *   relu @out %b, @in %a   (last use of %a)  ->  relu @out %a, @in %a
 * The input's buffer then lives as long as the result did. Only kinds that
 * read element i before writing element i qualify (instr_allows_inplace),
 * and only same-typed whole activations. Requires a verified program;
 * invalidates the memory plan.
 * Each storage buffer's last use and its dealloc are found in one walk and
 * kept up to date as buffers merge (a walk per candidate took seconds on a
 * training step's program). */
#include "passes/lir/lir_util.h"
#include "passes/pass.h"

typedef struct Uses {
    BufIndex ix;
    int *last;          /* per buffer: the index of the last instruction touching it, or -1 */
    LirInstr **dealloc; /* per buffer: its deallocactivation */
} Uses;

static Uses uses_of(LirProgram *p) {
    lir_number(p);
    Uses u = {buf_index_new(p), NULL, NULL};
    u.last = arena_alloc_array(p->arena, (size_t)u.ix.n + 1, sizeof *u.last);
    u.dealloc = arena_alloc_array(p->arena, (size_t)u.ix.n + 1, sizeof *u.dealloc);
    for (int b = 0; b < u.ix.n; b++) {
        u.last[b] = -1;
        u.dealloc[b] = NULL;
    }
    for (LirInstr *i = p->first; i; i = i->next) {
        if (i->kind == IK_DEALLOC) {
            int b = buf_index_of(&u.ix, i->ops[0]);
            if (b >= 0 && !u.dealloc[b])
                u.dealloc[b] = i;
        }
        if (i->kind == IK_DEALLOC || i->kind == IK_ALLOC || i->kind == IK_TENSORVIEW)
            continue; /* they touch no data (instr_touches) */
        for (int k = 0; k < i->nops; k++) {
            int b = buf_index_of(&u.ix, lir_storage(i->ops[k]));
            if (b >= 0)
                u.last[b] = i->index;
        }
    }
    return u;
}

static bool share(LirProgram *p, Uses *u, LirInstr *i, int out) {
    LirBuf *o = i->ops[out];
    if (o->kind != LB_ALLOC)
        return false;
    for (int k = 0; k < i->nops; k++) {
        if (i->roles[k] != ROLE_IN)
            continue;
        LirBuf *in = i->ops[k], *s = lir_storage(in);
        int sb = buf_index_of(&u->ix, s), ob = buf_index_of(&u->ix, o);
        if (s->kind != LB_ALLOC || !buf_is_whole(in) || !type_equal(&in->type, &o->type) ||
            s == o || sb < 0 || ob < 0 || u->last[sb] > i->index)
            continue;
        /* The input's storage takes over the output's lifetime. */
        LirInstr *in_dealloc = u->dealloc[sb], *out_dealloc = u->dealloc[ob];
        LirInstr *out_alloc = find_alloc_instr(o);
        lir_replace_buf(p, o, in);
        if (in_dealloc)
            lir_remove(p, in_dealloc);
        if (out_dealloc)
            out_dealloc->ops[0] = s;
        if (out_alloc)
            lir_remove(p, out_alloc);
        u->dealloc[sb] = out_dealloc;
        u->dealloc[ob] = NULL;
        if (u->last[ob] > u->last[sb])
            u->last[sb] = u->last[ob];
        return true;
    }
    return false;
}

bool lir_share_buffers(LirProgram *p, PassContext *ctx) {
    if (lir_has_control(p))
        return false; /* time is not program order there (lir.h) */
    Uses u = uses_of(p);
    bool changed = false;
    for (LirInstr *i = p->first; i; i = i->next) {
        if (!instr_allows_inplace(i->kind))
            continue;
        for (int k = 0; k < i->nops && i->roles[k] != ROLE_IN; k++) {
            if (share(p, &u, i, k)) {
                pass_stat(ctx, "buffers-shared", 1);
                changed = true;
            }
        }
    }
    return changed;
}
