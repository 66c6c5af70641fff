/* top_k for every numeric kind, as libjit_top_k_any: the k first values of
 * each slice along the axis and their indices, in the requested order,
 * equal values keeping the lower index first (ONNX's rule).
 *
 * Every value becomes an unsigned 64-bit key whose ascending order is the
 * requested one (NaN above every number, as in the interpreter), so one
 * comparison serves every kind. A small k keeps a sorted buffer of the k
 * best so far (one pass, binary-searched insertion); a larger one sorts
 * the whole slice with a stable bottom-up merge sort. Slices are the units
 * of work. */
#include <math.h>

#include "backends/cpu/libjit/elem.h"
#include "backends/cpu/libjit/kernels.h"

enum { TK_SMALL_K = 32 };

typedef struct TkKey {
    uint64_t key;
    int64_t pos;
} TkKey;

typedef struct Tk {
    int elem;
    bool largest;
    int64_t outer, len, inner, k;
} Tk;

LJ_INLINE Tk tk_plan(const int64_t *d) {
    Tk t = {.elem = lj_elem(d, 2), .largest = lj_attr_int(d, AK_largest, 1) != 0};
    int rank = lj_rank(d, 2);
    int64_t axis = lj_attr_int(d, AK_axis, -1);
    axis = axis < 0 ? axis + rank : axis;
    t.outer = t.inner = 1;
    for (int i = 0; i < rank; i++)
        if (i != axis)
            *(i < axis ? &t.outer : &t.inner) *= lj_dim(d, 2, i);
    t.len = lj_dim(d, 2, (int)axis);
    t.k = lj_dim(d, 0, (int)axis);
    return t;
}

/* Ascending order of the key = the requested order of the value. */
LJ_INLINE uint64_t tk_key(const Tk *t, const void *x, int64_t i) {
    uint64_t u;
    bool nan = false;
    if (lj_is_float(t->elem)) {
        double v = lj_ld_f64(t->elem, x, i);
        int64_t bits;
        memcpy(&bits, &v, sizeof bits);
        /* Sign and magnitude to an order: negatives' bits all flipped, the
         * sign bit of the rest set; -0 and +0 equal; NaN above all. */
        nan = v != v;
        u = nan ? ~0ull : v == 0 ? 1ull << 63 : bits < 0 ? ~(uint64_t)bits : (uint64_t)bits | (1ull << 63);
    } else if (t->elem == ELEM_U64) {
        u = (uint64_t)lj_ld_i64(t->elem, x, i);
    } else {
        u = (uint64_t)lj_ld_i64(t->elem, x, i) ^ (1ull << 63);
    }
    /* Largest first: the complement, with NaN still first. */
    return t->largest ? (nan ? 0 : ~u) : u;
}

LJ_INLINE bool tk_before(TkKey a, TkKey b) {
    return a.key < b.key || (a.key == b.key && a.pos < b.pos);
}

/* best[0 .. *n) sorted; v goes in if it beats the last of k. */
LJ_INLINE void tk_insert(TkKey *best, int64_t *n, int64_t k, TkKey v) {
    if (*n == k && !tk_before(v, best[k - 1]))
        return;
    int64_t lo = 0, hi = *n;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (tk_before(best[mid], v))
            lo = mid + 1;
        else
            hi = mid;
    }
    int64_t last = *n < k ? *n : k - 1;
    for (int64_t i = last; i > lo; i--)
        best[i] = best[i - 1];
    best[lo] = v;
    if (*n < k)
        (*n)++;
}

/* Stable bottom-up merge sort of a[0 .. n) with tmp of n; returns the sorted one. */
LJ_INLINE TkKey *tk_sort(TkKey *a, TkKey *tmp, int64_t n) {
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi)
                tmp[o++] = tk_before(a[j], a[i]) ? a[j++] : a[i++];
            while (i < mid)
                tmp[o++] = a[i++];
            while (j < hi)
                tmp[o++] = a[j++];
        }
        TkKey *s = a;
        a = tmp;
        tmp = s;
    }
    return a;
}

LIBJIT_WORK libjit_top_k_any_work(const int64_t *d) {
    Tk t = tk_plan(d);
    return t.outer * t.inner > 0 ? t.outer * t.inner : 1;
}

LIBJIT_SCRATCH libjit_top_k_any_scratch(const int64_t *d, int slot) {
    Tk t = tk_plan(d);
    return slot == LJ_SCRATCH_PLANES ? (2 * t.len + 1) * (int64_t)sizeof(TkKey) : 0;
}

/* Operands: values, indices (i64), x. Slices [lo, hi) of outer * inner. */
LIBJIT_KERNEL libjit_top_k_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                               LjScratch *sc) {
    Tk t = tk_plan(d);
    if (t.k == 0 || t.len == 0)
        return;
    TkKey *buf = lj_scratch_get(sc, LJ_SCRATCH_PLANES, (size_t)(2 * t.len + 1) * sizeof(TkKey));
    if (!buf) {
        lj_fail_run(sc, LJ_NO_SCRATCH);
        return;
    }
    size_t es = lj_elem_size(t.elem);
    int64_t *idx = ops[1];
    for (int64_t s = lo; s < hi && s < t.outer * t.inner; s++) {
        int64_t o = s / t.inner, in = s % t.inner;
        int64_t src = o * t.len * t.inner + in, dst = o * t.k * t.inner + in;
        TkKey *best = buf;
        if (t.k <= TK_SMALL_K) {
            int64_t n = 0;
            for (int64_t p = 0; p < t.len; p++)
                tk_insert(buf, &n, t.k, (TkKey){tk_key(&t, ops[2], src + p * t.inner), p});
        } else {
            for (int64_t p = 0; p < t.len; p++)
                buf[p] = (TkKey){tk_key(&t, ops[2], src + p * t.inner), p};
            best = tk_sort(buf, buf + t.len, t.len);
        }
        for (int64_t j = 0; j < t.k; j++) {
            int64_t from = src + best[j].pos * t.inner, to = dst + j * t.inner;
            memcpy((char *)ops[0] + (size_t)to * es, (const char *)ops[2] + (size_t)from * es, es);
            idx[to] = best[j].pos;
        }
    }
    lj_scratch_put(sc, buf);
}
