/* Region queries for the LIR passes. */
#include "passes/lir/lir_util.h"

#include <stdint.h>
#include <stdlib.h>

Region buf_region(LirBuf *b) {
    LirBuf *s = lir_storage(b);
    int64_t begin = b->kind == LB_VIEW ? b->offset : 0;
    return (Region){s, begin, begin + type_numel(&b->type)};
}

/* Empty regions (zero-size tensors) count as touching where they sit, so
 * that an empty buffer's readers and writers are still seen. */
bool regions_overlap(Region a, Region b) {
    if (a.storage != b.storage)
        return false;
    if (a.begin == a.end || b.begin == b.end)
        return a.begin <= b.end && b.begin <= a.end;
    return a.begin < b.end && b.begin < a.end;
}

bool buf_is_whole(LirBuf *b) {
    Region r = buf_region(b);
    return r.begin == 0 && r.end == type_numel(&r.storage->type);
}

static bool touches_role(const LirInstr *i, Region r, bool want_read, bool want_write) {
    if (i->kind == IK_DEALLOC || i->kind == IK_ALLOC)
        return false;
    for (int k = 0; k < i->nops; k++) {
        OperandRole role = i->roles[k];
        bool reads = role != ROLE_OUT || i->kind == IK_TENSORVIEW;
        bool writes = role != ROLE_IN;
        if (i->kind == IK_TENSORVIEW)
            reads = writes = false; /* defining a view touches no data */
        if (((want_read && reads) || (want_write && writes)) &&
            regions_overlap(buf_region(i->ops[k]), r))
            return true;
    }
    return false;
}

bool instr_reads(const LirInstr *i, Region r) {
    return touches_role(i, r, true, false);
}

bool instr_writes(const LirInstr *i, Region r) {
    return touches_role(i, r, false, true);
}

bool instr_touches(const LirInstr *i, Region r) {
    return touches_role(i, r, true, true);
}

bool instr_mentions(const LirInstr *i, Region r) {
    if (i->kind == IK_TENSORVIEW && lir_storage(i->ops[0]) == r.storage)
        return true;
    return touches_role(i, r, true, true);
}

bool used_after(const LirInstr *from, LirBuf *storage) {
    Region whole = {storage, 0, type_numel(&storage->type)};
    for (const LirInstr *i = from->next; i; i = i->next)
        if (instr_touches(i, whole))
            return true;
    return false;
}

LirInstr *find_alloc_instr(LirBuf *storage) {
    return storage->kind == LB_ALLOC ? storage->def : NULL;
}

static int by_address(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)*(LirBuf *const *)a, y = (uintptr_t)*(LirBuf *const *)b;
    return (x > y) - (x < y);
}

BufIndex buf_index_new(LirProgram *p) {
    BufIndex x = {arena_alloc_array(p->arena, (size_t)(p->nbufs > 0 ? p->nbufs : 1), sizeof(LirBuf *)),
                  0};
    for (int b = 0; b < p->nbufs; b++)
        x.sorted[x.n++] = p->bufs[b];
    qsort(x.sorted, (size_t)x.n, sizeof(LirBuf *), by_address);
    return x;
}

int buf_index_of(const BufIndex *x, const LirBuf *b) {
    int lo = 0, hi = x->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        uintptr_t m = (uintptr_t)x->sorted[mid], want = (uintptr_t)b;
        if (m == want)
            return mid;
        if (m < want)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}
