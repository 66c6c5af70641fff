/* What libjit kernels share: reading the descriptor (desc.h), always-inline
 * declarations, and the thread runtime. Kernels are plain C compiled to
 * bitcode; vector code uses clang's vector extensions, never intrinsics, so
 * that every target builds. */
#ifndef GLOWC_LIBJIT_H
#define GLOWC_LIBJIT_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>

#include "backends/cpu/libjit/desc.h"
#include "core/graph.h"
#include "core/slice.h"

/* Kernels are external (code generation finds them by name) and inlined at
 * every call site, where their descriptor is a constant. */
#define LIBJIT_KERNEL __attribute__((always_inline)) void
#define LIBJIT_WORK __attribute__((always_inline)) int64_t
#define LJ_INLINE static inline __attribute__((always_inline))
/* libjit_K_scratch(d, slot): the bytes kernel K asks slot `slot` of its
 * scratch for (lj_scratch_get) in one call over all its units [0, work);
 * 0 when it asks none. A kernel without one asks for no scratch. */
#define LIBJIT_SCRATCH __attribute__((always_inline)) int64_t
/* A size that some libjit_K_scratch returns, inlined into it whatever the
 * inliner's budget: a --no-threads bundle needs those sizes folded to
 * constants (aot.c), and dwconv.c's, grown past the budget, was left a call. */
#define LJ_FOLDED __attribute__((always_inline))

LJ_INLINE int lj_nres(const int64_t *d) {
    return (int)d[DESC_NRES];
}

LJ_INLINE int lj_nops(const int64_t *d) {
    return (int)d[DESC_NOPS];
}

LJ_INLINE const int64_t *lj_op(const int64_t *d, int k) {
    return d + DESC_OPS + k * DESC_OP_WORDS;
}

LJ_INLINE int lj_elem(const int64_t *d, int k) {
    return (int)lj_op(d, k)[0];
}

LJ_INLINE int lj_rank(const int64_t *d, int k) {
    return (int)lj_op(d, k)[1];
}

LJ_INLINE int64_t lj_dim(const int64_t *d, int k, int i) {
    return lj_op(d, k)[2 + i];
}

/* A per-tensor quantized operand's scale and offset (real = scale * (q -
 * offset)); 1 and 0 for others. */
LJ_INLINE double lj_qscale(const int64_t *d, int k) {
    int64_t bits = lj_op(d, k)[DESC_OP_QUANT + 1];
    double x;
    __builtin_memcpy(&x, &bits, sizeof x);
    return lj_op(d, k)[DESC_OP_QUANT] ? x : 1.0;
}

LJ_INLINE int64_t lj_qoffset(const int64_t *d, int k) {
    return lj_op(d, k)[DESC_OP_QUANT + 2];
}

/* numpy broadcasting of operand k against the result (operand 0): its
 * first kr axes align to the right of the result's first yr axes, and
 * st[a] is its stride along result axis a (0 where it has length 1 or no
 * axis). The one rule the broadcasting kernels share (k_table.c's plans,
 * k_qint.c's binary kinds and batched products). */
LJ_INLINE void lj_bcast_strides(const int64_t *d, int k, int kr, int yr, int64_t *st) {
    int64_t s = 1;
    for (int a = yr - 1; a >= 0; a--) {
        int j = a - (yr - kr);
        int64_t dim = j >= 0 ? lj_dim(d, k, j) : 1;
        st[a] = dim == 1 ? 0 : s;
        s *= dim;
    }
}

/* The offset, by strides st from lj_bcast_strides, of the element under
 * index i of the result's first yr axes. */
LJ_INLINE int64_t lj_bcast_offset(const int64_t *d, int yr, const int64_t *st, int64_t i) {
    int64_t off = 0;
    for (int a = yr - 1; a >= 0; a--) {
        int64_t len = lj_dim(d, 0, a);
        off += i % len * st[a];
        i /= len;
    }
    return off;
}

/* A 4-D operand's N, C, H, W (image kernels: winograd, grid_sample,
 * roi_align read their input's and output's this way). */
typedef struct LjImage {
    int64_t n, c, h, w;
} LjImage;

LJ_INLINE LjImage lj_image(const int64_t *d, int k) {
    LjImage g = {lj_dim(d, k, 0), lj_dim(d, k, 1), lj_dim(d, k, 2), lj_dim(d, k, 3)};
    return g;
}

LJ_INLINE int64_t lj_numel(const int64_t *d, int k) {
    int64_t n = 1;
    for (int i = 0; i < lj_rank(d, k); i++)
        n *= lj_dim(d, k, i);
    return n;
}

/* The record of attribute `key`, or NULL; *count gets its value count. */
LJ_INLINE const int64_t *lj_attr(const int64_t *d, int key, int *count) {
    const int64_t *a = d + DESC_OPS + lj_nops(d) * DESC_OP_WORDS;
    for (int j = 0; j < (int)d[DESC_NATTRS]; j++, a += DESC_ATTR_WORDS) {
        if (a[0] == key) {
            *count = (int)a[1];
            return a + 2;
        }
    }
    *count = 0;
    return 0;
}

LJ_INLINE int64_t lj_attr_int(const int64_t *d, int key, int64_t dflt) {
    int n;
    const int64_t *v = lj_attr(d, key, &n);
    return v ? v[0] : dflt;
}

/* Value i of an ints attribute, or dflt. */
LJ_INLINE int64_t lj_attr_at(const int64_t *d, int key, int i, int64_t dflt) {
    int n;
    const int64_t *v = lj_attr(d, key, &n);
    return v && i < n ? v[i] : dflt;
}

/* The geometry of a convolution-shaped kernel (conv_transpose, the weight
 * gradient): x is the side with C channels, y the side with M, w the
 * [.][.][k...] kernel; each kernel names which operand holds which.
 * Every spatial axis a descriptor can hold, so that conv_direct (any
 * number of axes) shares it. */
enum { LJ_CONV_MAX = DESC_MAX_RANK - 2 };

typedef struct LjConvGeom {
    int ns;
    int64_t n, c, m, group, cg, mg;
    int64_t in[LJ_CONV_MAX], out[LJ_CONV_MAX], k[LJ_CONV_MAX];
    int64_t st[LJ_CONV_MAX], pad[LJ_CONV_MAX], dil[LJ_CONV_MAX];
    int64_t in_size, out_size, ksize;
    int64_t kdim; /* an im2col column of x: C/group x the taps */
} LjConvGeom;

LJ_INLINE LjConvGeom lj_conv_geom(const int64_t *d, int x, int y, int w) {
    LjConvGeom g = {.ns = lj_rank(d, x) - 2};
    g.n = lj_dim(d, x, 0);
    g.c = lj_dim(d, x, 1);
    g.m = lj_dim(d, y, 1);
    g.group = lj_attr_int(d, AK_group, 1);
    g.cg = g.c / g.group;
    g.mg = g.m / g.group;
    g.in_size = g.out_size = g.ksize = 1;
    for (int i = 0; i < g.ns && i < LJ_CONV_MAX; i++) {
        g.in[i] = lj_dim(d, x, 2 + i);
        g.out[i] = lj_dim(d, y, 2 + i);
        g.k[i] = lj_dim(d, w, 2 + i);
        g.st[i] = lj_attr_at(d, AK_strides, i, 1);
        g.pad[i] = lj_attr_at(d, AK_pads, i, 0);
        g.dil[i] = lj_attr_at(d, AK_dilations, i, 1);
        g.in_size *= g.in[i];
        g.out_size *= g.out[i];
        g.ksize *= g.k[i];
    }
    g.kdim = g.cg * g.ksize;
    return g;
}

LJ_INLINE double lj_bits_f64(int64_t bits) {
    double x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

LJ_INLINE double lj_attr_float(const int64_t *d, int key, double dflt) {
    int n;
    const int64_t *v = lj_attr(d, key, &n);
    return v ? lj_bits_f64(v[0]) : dflt;
}

LJ_INLINE bool lj_has_attr(const int64_t *d, int key) {
    int n;
    return lj_attr(d, key, &n) != 0;
}

/* Slice's axis i of operand 1 (its run-time dim, at run time): the first
 * index, step and count, by core/slice.h's rule. */
LJ_INLINE void lj_slice_axis(const int64_t *d, int i, int64_t *start, int64_t *step,
                             int64_t *count) {
    int ks, ke, kt;
    const int64_t *s = lj_attr(d, AK_starts, &ks), *e = lj_attr(d, AK_ends, &ke);
    const int64_t *t = lj_attr(d, AK_steps, &kt);
    slice_axis(lj_dim(d, 1, i), s && i < ks, s && i < ks ? s[i] : 0, e && i < ke,
               e && i < ke ? e[i] : 0, t && i < kt ? t[i] : 1, start, step, count);
}

LJ_INLINE size_t lj_elem_size(int elem) {
    switch ((ElemKind)elem) {
#define ELEM(E, nm, ctype, size, onnx, cls)                                                        \
    case ELEM_##E: return size;
#include "core/elems.def"
    default: return 1;
    }
}
/* Runs the reference interpreter's kernel for d's node kind (fallback.c):
 * what --fallback=interp calls for an operator with no libjit kernel, and
 * the kernel test's reference. No libjit kernel calls it, so that programs
 * link no interpreter. Returns 0, or 1 if the kernel failed. */
int libjit_generic(const int64_t *d, void *const *ops);
/* The same with an arena for the strings a kernel computes (the kernel
 * test's reference). */
struct Arena;
int libjit_generic_strs(const int64_t *d, void *const *ops, struct Arena *strs);

/* Kernel scratch (packed panels, padded planes): one buffer per slot per
 * thread, kept by the runtime from call to call and grown to the largest
 * request, so that a program's memory beyond its weights and activations
 * is the sum of its largest requests rather than what malloc makes of a
 * few hundred allocations of varying size per inference (ResNet-50's
 * executable: 19 MB of heap for 3 MB of scratch). Mapped, not malloc'd:
 * the few buffers a slot outgrows (on the first inference) go back to the
 * system instead of staying in malloc's heap. Without a runtime (sc NULL)
 * a kernel allocates and frees its scratch per call. Slots: one per kind
 * of buffer that can be live at once in one kernel call. */
enum { LJ_SCRATCH_PLANES, LJ_SCRATCH_PACK, LJ_SCRATCH_SLOTS };
typedef struct LjStrChunk LjStrChunk;

/* One buffer that all threads of one parallel call see, for work that
 * every thread's units need and one thread's would otherwise repeat (the
 * winograd input transform of a block that the threads split by output
 * channel): items of it are claimed one at a time from `next`, so that
 * whichever threads run share them, and counted in `done` once written.
 * A thread waits only for items claimed by a thread that is running them
 * (a claim is followed by its work, never by a wait), so a call whose
 * units one thread runs alone completes alone. libjit_parallel resets the
 * counters before it hands out a call (lj_shared_reset); the buffer is
 * sized by the first thread that asks (state 1 while it does) and kept,
 * grown, from call to call. */
typedef struct LjShared {
    _Atomic int state; /* 0 unsized, 1 being sized, 2 ready, 3 could not be had */
    _Atomic int64_t next, done;
    void *buf;
    size_t cap;
    int64_t call; /* counts the calls (lj_shared_reset): this one's number */
} LjShared;

struct LjScratch {
    void *p[LJ_SCRATCH_SLOTS];
    size_t cap[LJ_SCRATCH_SLOTS];
    /* The runtime's buffer shared by its threads; NULL without a runtime
     * (and garbage in a --no-threads bundle's scratch: read it only when
     * libjit_static_scratch is false). */
    LjShared *shared;
    /* The characters of the strings this thread's kernels computed (kind
     * str): the run's string arena, a thread's own so that no lock is
     * needed; freed by libjit_runtime_free_strings once the caller has
     * copied the outputs, and with the runtime. */
    LjStrChunk *strs;
    /* A kernel that fails on its input (a string that is no number) has
     * nowhere to return it: it records here the first element of this
     * thread's units that failed (index + 1; 0: none) and the text, which
     * the generated code checks after the call (libjit_failed) and the
     * caller reports by name (libjit_runtime_failure). */
    int64_t fail_at;
    const char *fail_text;
    /* A kernel that could not run at all (its scratch could not be had)
     * says why here; checked the same way (libjit_failed). */
    const char *fail_why;
    /* Whether Linux gave the process the AMX tiles' state (gemm_amx.c):
     * 0 not asked yet, 1 yes, -1 no. */
    int amx_state;
    /* What this thread last built into its scratch (lj_scratch_built):
     * the call's number and the kernel's key for the contents. */
    int64_t built_call, built_key;
};

struct LjStrChunk {
    LjStrChunk *next;
    size_t used, cap;
    char data[];
};

/* n bytes for string characters, NULL when out of memory. Without a
 * runtime (sc NULL: a kernel test) the chunk is the caller's to leak. */
LJ_INLINE char *lj_str_alloc(LjScratch *sc, size_t n) {
    LjStrChunk *c = sc ? sc->strs : 0;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > 4000 ? n : 4000;
        LjStrChunk *fresh = malloc(sizeof *fresh + cap);
        if (!fresh)
            return 0;
        fresh->next = c;
        fresh->used = 0;
        fresh->cap = cap;
        if (sc)
            sc->strs = fresh;
        c = fresh;
    }
    char *p = c->data + c->used;
    c->used += n;
    return p;
}

/* Element i failed on text s (see fail_at). Without a runtime (sc NULL: a
 * kernel test) there is nowhere to record it. */
LJ_INLINE void lj_fail(LjScratch *sc, int64_t i, const char *s) {
    if (sc && (!sc->fail_at || i + 1 < sc->fail_at)) {
        sc->fail_at = i + 1;
        sc->fail_text = s;
    }
}

#define LJ_NO_SCRATCH "out of memory for the kernel's buffers"
/* The kernel could not run its units: `why` (a constant string). Without a
 * runtime (a kernel test) there is nowhere to record it. */
LJ_INLINE void lj_fail_run(LjScratch *sc, const char *why) {
    if (sc)
        sc->fail_why = why;
}

LJ_INLINE void lj_strs_free(LjScratch *sc) {
    while (sc->strs) {
        LjStrChunk *next = sc->strs->next;
        free(sc->strs);
        sc->strs = next;
    }
}

/* True only in a --no-threads bundle, whose caller owns all memory: code
 * generation sets it (as a constant of the module, so that the other
 * branches of lj_scratch_get and lj_scratch_put fold away, with their
 * malloc and mmap). Each slot is then a fixed part of the activations
 * memory, p[slot] with cap[slot] bytes, sized at compile time by the
 * kernels' libjit_K_scratch functions for one call over all units; a
 * request beyond it is a bug in one of those (trap: no library to call). */
extern bool libjit_static_scratch;

/* `bytes` (64-byte aligned) for `slot`, or NULL if they cannot be had.
 * Give it back with lj_scratch_put. */
LJ_INLINE void *lj_scratch_get(LjScratch *sc, int slot, size_t bytes) {
    if (libjit_static_scratch) {
        if (bytes > sc->cap[slot])
            __builtin_trap();
        void *fixed = sc->p[slot];
        /* Never NULL: the kernels' out-of-memory paths (the interpreter's
         * kernel, which allocates) fold away. */
        __builtin_assume(fixed != NULL);
        return fixed;
    }
    size_t want = bytes ? (bytes + 63) / 64 * 64 : 64;
    if (!sc)
        return aligned_alloc(64, want);
    if (sc->cap[slot] < want) {
        if (sc->cap[slot])
            munmap(sc->p[slot], sc->cap[slot]);
        want = (want + 4095) / 4096 * 4096;
        void *p = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        sc->p[slot] = p == MAP_FAILED ? NULL : p;
        sc->cap[slot] = p == MAP_FAILED ? 0 : want;
    }
    return sc->p[slot];
}

/* Unmaps a thread's scratch. */
LJ_INLINE void lj_scratch_release(LjScratch *sc) {
    lj_strs_free(sc);
    for (int k = 0; k < LJ_SCRATCH_SLOTS; k++) {
        if (sc->cap[k])
            munmap(sc->p[k], sc->cap[k]);
        sc->p[k] = NULL;
        sc->cap[k] = 0;
    }
}

LJ_INLINE void lj_scratch_put(LjScratch *sc, void *p) {
    if (!libjit_static_scratch && !sc)
        free(p);
}

LJ_INLINE void lj_shared_reset(LjShared *sh) {
    sh->call++;
    atomic_store_explicit(&sh->state, 0, memory_order_relaxed);
    atomic_store_explicit(&sh->next, 0, memory_order_relaxed);
    atomic_store_explicit(&sh->done, 0, memory_order_relaxed);
}

LJ_INLINE void lj_shared_free(LjShared *sh) {
    if (sh->cap)
        munmap(sh->buf, sh->cap);
    sh->buf = NULL;
    sh->cap = 0;
}

/* This call's shared buffer of `bytes` (64-byte aligned), the same for
 * every thread of the call, or NULL (no runtime, a --no-threads bundle, or
 * no memory: then every thread of the call gets NULL). */
LJ_INLINE void *lj_shared_get(LjScratch *sc, size_t bytes) {
    if (libjit_static_scratch || !sc || !sc->shared)
        return NULL;
    LjShared *sh = sc->shared;
    int expect = 0;
    if (atomic_compare_exchange_strong_explicit(&sh->state, &expect, 1, memory_order_acquire,
                                                memory_order_acquire)) {
        if (sh->cap < bytes) {
            lj_shared_free(sh);
            size_t want = (bytes + 4095) / 4096 * 4096;
            void *p = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p != MAP_FAILED) {
                sh->buf = p;
                sh->cap = want;
            }
        }
        expect = sh->cap >= bytes ? 2 : 3;
        atomic_store_explicit(&sh->state, expect, memory_order_release);
    }
    /* Another thread is sizing it: a short wait (one mmap at most). */
    while (expect == 0 || expect == 1) {
        expect = atomic_load_explicit(&sh->state, memory_order_acquire);
        if (expect == 1)
            sched_yield();
    }
    return expect == 2 ? sh->buf : NULL;
}

/* The next unclaimed item of n, or -1 when all are claimed. */
LJ_INLINE int64_t lj_shared_claim(LjScratch *sc, int64_t n) {
    int64_t i = atomic_fetch_add_explicit(&sc->shared->next, 1, memory_order_relaxed);
    return i < n ? i : -1;
}

/* Whether this thread's scratch already holds what `key` names, built by
 * an earlier piece of this same call on this thread (the runtime runs a
 * thread's range as LJ_PIECES calls of the kernel: at two threads, pieces
 * that each hold part of one block's units); if not, it is to be built
 * now and is recorded as such. Only within one call (its number, from
 * lj_shared_reset): a later call's input differs, and other kernels use
 * the scratch between calls. Without a runtime, never. */
LJ_INLINE bool lj_scratch_built(LjScratch *sc, int64_t key) {
    if (libjit_static_scratch || !sc || !sc->shared)
        return false;
    int64_t call = sc->shared->call;
    if (sc->built_call == call && sc->built_key == key)
        return true;
    sc->built_call = call;
    sc->built_key = key;
    return false;
}

/* Item written: its stores are seen by whoever waits for it. */
LJ_INLINE void lj_shared_done(LjScratch *sc) {
    atomic_fetch_add_explicit(&sc->shared->done, 1, memory_order_release);
}

/* Waits until all n items are written (by whichever threads claimed them). */
LJ_INLINE void lj_shared_wait(LjScratch *sc, int64_t n) {
    for (int spins = 0; atomic_load_explicit(&sc->shared->done, memory_order_acquire) < n; spins++)
        if (spins > 64)
            sched_yield();
}

/* libjit_parallel cuts [0, n) into one contiguous range per thread (equal,
 * the last shorter), and each range into LJ_PIECES pieces (equal, the last
 * shorter), which any thread may run (runtime.c says why). Piece k covers
 * units [*lo, *hi), maybe none. Kernels give the same bits for any such
 * cut (tests/kernels: check_thread_shares). */
enum { LJ_PIECES = 2 };

LJ_INLINE void lj_piece_bounds(int64_t n, int nthreads, int k, int64_t *lo, int64_t *hi) {
    int64_t per = (n + nthreads - 1) / nthreads, t = k / LJ_PIECES;
    int64_t r0 = per * t < n ? per * t : n, r1 = r0 + per < n ? r0 + per : n;
    int64_t pp = (r1 - r0 + LJ_PIECES - 1) / LJ_PIECES;
    *lo = r0 + pp * (k % LJ_PIECES) < r1 ? r0 + pp * (k % LJ_PIECES) : r1;
    *hi = *lo + pp < r1 ? *lo + pp : r1;
}

/* Runs worker over [0, n) on the runtime's threads (inline when rt is NULL
 * or has one thread). */
void libjit_parallel(LibjitRuntime *rt, int64_t n, LibjitWorker worker, void *const *ops);
/* 1 if a kernel of the last call failed on its input (LjScratch.fail_at)
 * or could not run (fail_why), else 0: generated code returns its
 * instruction's failure then. */
int libjit_failed(LibjitRuntime *rt);
/* The failed element with the lowest index over the threads, its text in
 * *text; else LJ_FAILED_RUN with why the kernel could not run in *text;
 * else -1. Clears every thread's record. */
enum { LJ_FAILED_RUN = -2 };
int64_t libjit_runtime_failure(LibjitRuntime *rt, const char **text);
/* Frees the strings the kernels computed (the run's string arena): the
 * caller calls it once it has copied the outputs. */
void libjit_runtime_free_strings(LibjitRuntime *rt);
/* Vector FMAs on every thread of rt at once (runtime.c); returns the sum
 * of the threads' rates in flop/s, each timed by the thread itself. */
double libjit_fma_peak(LibjitRuntime *rt, int64_t iters);

#endif
