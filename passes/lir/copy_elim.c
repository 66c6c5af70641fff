/* copy-elim: `copy @out %dst, @in %src` where %src is an activation that
 * dies at the copy: everything that wrote %src writes the destination
 * instead, and the copy goes. This is how outputs are written in place, and
 * how the parts of a concatenation are computed straight into their slots
 * of its buffer (the destination's allocation moves up when it must).
 * Refused when something between the first use of %src and the copy touches
 * the destination region.
 *
 * The other direction: an activation written only by copies whose sources
 * already lie side by side, in the same order, in one other buffer, becomes
 * a view of that buffer. DenseNet concatenates all earlier features at every
 * layer; once the last concatenation writes them into one block (above),
 * every earlier concatenation is a prefix of that block, and no copy is left.
 * Requires a verified program; invalidates the memory plan. */
#include "passes/lir/lir_util.h"
#include "passes/pass.h"

/* The first instruction that `is` about `storage` (instr_mentions: also a
 * view's definition; instr_touches: its data only). */
static LirInstr *first_such(LirProgram *p, LirBuf *storage,
                            bool (*is)(const LirInstr *, Region)) {
    Region whole = {storage, 0, type_numel(&storage->type)};
    for (LirInstr *i = p->first; i; i = i->next)
        if (is(i, whole))
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
    LirInstr *salloc = find_alloc_instr(s), *start = first_such(p, s, instr_mentions);
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

/* The instructions that write `storage`; false if one is not a copy. */
static int copies_into(LirProgram *p, LirBuf *storage, LirInstr **out, int max) {
    Region whole = {storage, 0, type_numel(&storage->type)};
    int n = 0;
    for (LirInstr *i = p->first; i; i = i->next) {
        if (!instr_writes(i, whole))
            continue;
        if (i->kind != IK_COPY || n == max)
            return -1;
        out[n++] = i;
    }
    return n;
}

static bool alias_copies(LirProgram *p, LirBuf *d) {
    LirInstr *copies[256];
    int n = copies_into(p, d, copies, 256);
    if (n <= 0)
        return false;
    Region first = buf_region(copies[0]->ops[1]);
    LirBuf *s = first.storage;
    if (s == d)
        return false;
    int64_t delta = first.begin - buf_region(copies[0]->ops[0]).begin, covered = 0;
    for (int k = 0; k < n; k++) {
        Region src = buf_region(copies[k]->ops[1]), dst = buf_region(copies[k]->ops[0]);
        if (src.storage != s || src.begin - dst.begin != delta)
            return false;
        covered += dst.end - dst.begin;
    }
    if (covered != type_numel(&d->type) || delta < 0 ||
        delta + type_numel(&d->type) > type_numel(&s->type))
        return false;
    /* The source region must keep its value while d is in use: no writes to
     * it from the first copy to d's last use. */
    Region src_region = {s, delta, delta + type_numel(&d->type)};
    Region whole = {d, 0, type_numel(&d->type)};
    LirInstr *last = NULL;
    for (LirInstr *i = copies[0]; i; i = i->next)
        if (instr_touches(i, whole))
            last = i;
    for (LirInstr *i = copies[0]; i && i != last; i = i->next) {
        bool is_copy = false;
        for (int k = 0; k < n; k++)
            is_copy |= i == copies[k];
        if (!is_copy && instr_writes(i, src_region))
            return false;
    }
    /* ... and the source buffer must outlive d. */
    LirInstr *sdealloc = s->kind == LB_ALLOC ? lir_find_dealloc(p, s) : NULL;
    if (sdealloc)
        for (LirInstr *i = sdealloc; i; i = i->next)
            if (i == last)
                return false;
    LirInstr *dalloc = find_alloc_instr(d), *ddealloc = lir_find_dealloc(p, d);
    if (!dalloc)
        return false;
    LirBuf *view = lir_view(p, copies[0], s, delta, &d->type, d->name);
    if (ddealloc)
        lir_remove(p, ddealloc);
    lir_remove(p, dalloc);
    lir_replace_buf(p, d, view);
    for (int k = 0; k < n; k++)
        lir_remove(p, copies[k]); /* each now copies a region onto itself */
    return true;
}

/* The third case: `copy @out D[o..e), @in T[o..e)` between two activations
 * of the same size, the part already at the offset the destination wants
 * (ShuffleNet's unit: the untouched half of the shuffled input is
 * concatenated with the branch's result, at the same place). When T's other
 * parts are read for the last time before anything writes D, and nothing
 * writes D's part [o, e) before the copy, D can be T: every later write to D
 * lands in T's dead parts, and the copy is a copy onto itself. */
static bool coalesce(LirProgram *p, LirInstr *copy) {
    Region dr = buf_region(copy->ops[0]), sr = buf_region(copy->ops[1]);
    LirBuf *d = dr.storage, *t = sr.storage;
    if (d == t || d->kind != LB_ALLOC || t->kind != LB_ALLOC || dr.begin != sr.begin ||
        d->type.elem != t->type.elem || type_numel(&d->type) != type_numel(&t->type))
        return false;
    LirInstr *dalloc = find_alloc_instr(d), *talloc = find_alloc_instr(t);
    LirInstr *start = first_such(p, d, instr_touches), *mention = first_such(p, d, instr_mentions);
    if (!dalloc || !talloc || !start || !mention)
        return false;
    /* T exists before D is first mentioned (where D's stand-in view goes). */
    bool t_first = false;
    for (LirInstr *i = p->first; i && i != mention; i = i->next)
        t_first |= i == talloc;
    if (!t_first)
        return false;
    Region twhole = {t, 0, type_numel(&t->type)};
    LirInstr *i = start;
    for (; i && i != copy; i = i->next)
        if (instr_touches(i, twhole) || instr_writes(i, dr))
            return false;
    if (!i || used_after(copy, t))
        return false;
    /* T now lives as long as D did: D's deallocation becomes T's. */
    LirInstr *tdealloc = lir_find_dealloc(p, t), *ddealloc = lir_find_dealloc(p, d);
    LirBuf *view = lir_view(p, mention, t, 0, &d->type, d->name);
    if (tdealloc)
        lir_remove(p, tdealloc);
    if (ddealloc)
        ddealloc->ops[0] = t;
    lir_remove(p, dalloc);
    lir_replace_buf(p, d, view);
    lir_remove(p, copy);
    return true;
}

bool lir_copy_elim(LirProgram *p, PassContext *ctx) {
    if (lir_has_control(p))
        return false; /* time is not program order there (lir.h) */
    bool changed = false;
    for (LirInstr *i = p->first, *next; i; i = next) {
        next = i->next;
        if (i->kind != IK_COPY || !eliminate(p, i))
            continue;
        pass_stat(ctx, "copies-eliminated", 1);
        changed = true;
    }
    for (int b = 0; b < p->nbufs; b++) {
        LirBuf *d = p->bufs[b];
        if (d->kind == LB_ALLOC && !d->dead && alias_copies(p, d)) {
            pass_stat(ctx, "buffers-aliased", 1);
            changed = true;
        }
    }
    for (LirInstr *i = p->first, *next; i; i = next) {
        next = i->next;
        if (i->kind != IK_COPY || !coalesce(p, i))
            continue;
        pass_stat(ctx, "buffers-coalesced", 1);
        changed = true;
    }
    long copies = 0;
    for (LirInstr *i = p->first; i; i = i->next)
        copies += i->kind == IK_COPY || i->kind == IK_INSERT;
    pass_stat(ctx, "copies-left", copies);
    return changed;
}
