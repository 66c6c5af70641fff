/* allocate: static offsets for every activation in one arena, for the
 * weights in one constant blob, and for the inputs and outputs in one
 * mutable area -- all 64-byte aligned, so the vector kernels can use
 * aligned loads.
 *
 * Activations are placed greedily by size, largest first, each at the
 * lowest-waste gap among the buffers already placed that are live at the
 * same time (their live range is alloc .. dealloc, which shorten-lifetimes
 * made tight). Placing big buffers first leaves small ones to fill holes;
 * on convolutional networks this lands within a few percent of the lower
 * bound (the most bytes ever live at once), which is also computed here,
 * with the naive size (every buffer apart) for comparison.
 * Requires a verified program; invalidates nothing. */
#include <stdlib.h>

#include "passes/lir/lir_util.h"
#include "passes/pass.h"

enum { ALIGN = 64 };

static int64_t align_up(int64_t n) {
    return (n + ALIGN - 1) / ALIGN * ALIGN;
}

typedef struct Item {
    LirBuf *buf;
    int64_t size;
} Item;

static int by_size(const void *a, const void *b) {
    const Item *x = a, *y = b;
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    if (x->buf->live_first != y->buf->live_first)
        return x->buf->live_first - y->buf->live_first;
    return x->buf->id - y->buf->id;
}

static int by_address(const void *a, const void *b) {
    const Item *x = a, *y = b;
    return x->buf->address < y->buf->address ? -1 : x->buf->address > y->buf->address;
}

static bool live_together(const LirBuf *a, const LirBuf *b) {
    return a->live_first <= b->live_last && b->live_first <= a->live_last;
}

/* The offset for `it` among the placed items live at the same time: the
 * smallest gap that fits, or the end. */
static int64_t place(const Item *it, const Item *placed, int nplaced, Item *scratch) {
    int k = 0;
    for (int i = 0; i < nplaced; i++)
        if (live_together(it->buf, placed[i].buf))
            scratch[k++] = placed[i];
    qsort(scratch, (size_t)k, sizeof *scratch, by_address);
    int64_t best = -1, best_waste = INT64_MAX, cursor = 0;
    for (int i = 0; i < k; i++) {
        int64_t gap = scratch[i].buf->address - cursor;
        if (gap >= it->size && gap - it->size < best_waste) {
            best = cursor;
            best_waste = gap - it->size;
        }
        int64_t end = scratch[i].buf->address + scratch[i].size;
        if (end > cursor)
            cursor = end;
    }
    return best >= 0 ? best : cursor;
}

/* Live ranges from the program's order: alloc .. dealloc (or last use). */
static int collect(LirProgram *p, Item *items) {
    lir_number(p);
    int n = 0;
    for (int b = 0; b < p->nbufs; b++) {
        LirBuf *s = p->bufs[b];
        if (s->kind != LB_ALLOC || s->dead || !s->def)
            continue;
        LirInstr *dealloc = lir_find_dealloc(p, s);
        s->live_first = s->def->index;
        s->live_last = dealloc ? dealloc->index : p->ninstrs;
        items[n++] = (Item){s, align_up((int64_t)type_bytes(&s->type))};
    }
    return n;
}

static int64_t lower_bound(const LirProgram *p, const Item *items, int n) {
    int64_t *delta = calloc((size_t)p->ninstrs + 2, sizeof *delta), best = 0, live = 0;
    for (int i = 0; i < n; i++) {
        delta[items[i].buf->live_first] += items[i].size;
        delta[items[i].buf->live_last + 1] -= items[i].size;
    }
    for (int k = 0; k <= p->ninstrs; k++) {
        live += delta[k];
        if (live > best)
            best = live;
    }
    free(delta);
    return best;
}

static void place_weights(LirProgram *p) {
    int64_t cbytes = 0, mbytes = 0;
    for (int b = 0; b < p->nbufs; b++) {
        LirBuf *w = p->bufs[b];
        if (w->dead)
            continue;
        int64_t size = align_up((int64_t)type_bytes(&w->type));
        if (w->kind == LB_CONST) {
            w->address = cbytes;
            cbytes += size;
        } else if (w->kind == LB_IN || w->kind == LB_OUT) {
            w->address = mbytes;
            mbytes += size;
        }
    }
    /* Run-time shapes of bounded-dynamic buffers, after the inputs and
     * outputs (native code keeps them there; the LIR interpreter on its own). */
    for (int b = 0; b < p->nbufs; b++) {
        LirBuf *w = p->bufs[b];
        w->has_shape_slot = !w->dead && (w->kind == LB_ALLOC || w->kind == LB_OUT) &&
                            type_is_dynamic(&w->type);
        if (w->has_shape_slot) {
            w->shape_slot = mbytes;
            mbytes += align_up(MAX_RANK * (int64_t)sizeof(int64_t));
        }
    }
    p->const_bytes = cbytes;
    p->mutable_bytes = mbytes;
}

bool lir_allocate(LirProgram *p, PassContext *ctx) {
    Item *items = malloc(((size_t)p->nbufs + 1) * sizeof *items);
    Item *placed = malloc(((size_t)p->nbufs + 1) * sizeof *placed);
    Item *scratch = malloc(((size_t)p->nbufs + 1) * sizeof *scratch);
    int n = collect(p, items);
    qsort(items, (size_t)n, sizeof *items, by_size);
    int64_t arena = 0, naive = 0;
    for (int i = 0; i < n; i++) {
        items[i].buf->address = place(&items[i], placed, i, scratch);
        placed[i] = items[i];
        if (items[i].buf->address + items[i].size > arena)
            arena = items[i].buf->address + items[i].size;
        naive += items[i].size;
    }
    p->arena_bytes = arena;
    /* irgen measured the naive size before any sharing; a parsed program
     * gets the size of its own buffers apart */
    if (!p->naive_bytes)
        p->naive_bytes = naive;
    p->lower_bound = lower_bound(p, items, n);
    place_weights(p);
    p->allocated = true;
    ctx->arena_bytes = arena;
    ctx->lower_bound = p->lower_bound;
    ctx->naive_bytes = p->naive_bytes;
    pass_stat(ctx, "buffers-placed", n);
    free(items);
    free(placed);
    free(scratch);
    return true;
}
