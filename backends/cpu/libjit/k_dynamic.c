/* Instructions over bounded-dynamic buffers (issue 16) as libjit code.
 * libjit_dyn_prepare makes the descriptor an instruction's kernel runs on:
 * the constant one with each dynamic operand's run-time dims (from its
 * shape slot) and the results' run-time dims by the instruction's rule
 * (desc.h), which it also writes to the results' slots. The kernels are
 * then the ordinary ones (elementwise, transpose, gather, reductions,
 * top_k take their dims from the descriptor), plus the two producers
 * whose result size is a count: nonzero and compress. A buffer at a
 * run-time size is packed at that size from its start, as the
 * interpreters lay it out. */
#include "backends/cpu/libjit/elem.h"
#include "backends/cpu/libjit/kernels.h"
#include "core/nms.h"
#include "core/range.h"
#include "core/str_ops.h"
#include "core/unique_sort.h"

LJ_INLINE int64_t *dyn_dims(int64_t *rd, int k) {
    return rd + DESC_OPS + k * DESC_OP_WORDS + 2;
}

LJ_INLINE int64_t dyn_words(const int64_t *d) {
    return DESC_OPS + lj_nops(d) * DESC_OP_WORDS + d[DESC_NATTRS] * DESC_ATTR_WORDS;
}

LJ_INLINE bool dyn_nonzero(int elem, const void *x, int64_t i) {
    return lj_is_float(elem) ? lj_ld_f64(elem, x, i) != 0 : lj_ld_i64(elem, x, i) != 0;
}

/* Compress's axis (the importer flattens an axis-less one) and its
 * condition's count; -1 when a true lies beyond the axis (ONNX Runtime's
 * error, the interpreter's). */
static int64_t dyn_compress_count(const int64_t *rd, void *const *ops, int *axis) {
    int rank = lj_rank(rd, 1);
    int64_t a = lj_attr_int(rd, AK_axis, 0);
    *axis = (int)(a < 0 ? a + rank : a);
    int64_t len = lj_dim(rd, 1, *axis), nc = lj_numel(rd, 2), kept = 0;
    for (int64_t i = 0; i < nc; i++) {
        if (!dyn_nonzero(lj_elem(rd, 2), ops[2], i))
            continue;
        if (i >= len)
            return -1;
        kept++;
    }
    return kept;
}

/* LJ_DYN_MAP: every dynamic result dim starts unknown (-1); each source
 * (result r, dim i, operand k, dim j) broadcasts into it. */
static bool dyn_map(int64_t *rd, const int64_t *d, const int64_t *slots, const int64_t *map) {
    for (int r = 0; r < lj_nres(d); r++)
        for (int i = 0; i < lj_rank(d, r); i++)
            if (slots[2 * r + 1] & (1 << i))
                dyn_dims(rd, r)[i] = -1;
    for (int64_t e = 0; e < map[0]; e++) {
        const int64_t *m = map + 1 + 4 * e;
        int64_t *cur = &dyn_dims(rd, (int)m[0])[m[1]];
        int64_t v = dyn_dims(rd, (int)m[2])[m[3]];
        if (*cur == -1 || *cur == 1)
            *cur = v;
        else if (v != 1 && v != *cur)
            return false; /* sizes that do not broadcast */
    }
    for (int r = 0; r < lj_nres(d); r++)
        for (int i = 0; i < lj_rank(d, r); i++)
            if (dyn_dims(rd, r)[i] < 0)
                return false;
    return true;
}

/* Operand k's scalar (an optional operand absent: dflt). */
LJ_INLINE double dyn_scalar(const int64_t *rd, void *const *ops, int k, double dflt) {
    return k < lj_nops(rd) ? lj_ld_f64(lj_elem(rd, k), ops[k], 0) : dflt;
}

/* NonMaxSuppression (operands: selected [rows, 3] i64, boxes [b, n, 4],
 * scores [b, c, n], then max_output_boxes_per_class, iou_threshold,
 * score_threshold, each optional) by core/nms.h's selection, as the
 * interpreter makes it. The rows written; < 0 beyond the bound or out of
 * memory. */
static int64_t dyn_nms(const int64_t *rd, void *const *ops) {
    int64_t max_out = lj_nops(rd) > 3 ? lj_ld_i64(lj_elem(rd, 3), ops[3], 0) : 0;
    float iou = (float)dyn_scalar(rd, ops, 4, 0), thr = (float)dyn_scalar(rd, ops, 5, -INFINITY);
    if (lj_elem(rd, 1) != ELEM_F32 || lj_elem(rd, 2) != ELEM_F32)
        return -1;
    return nms_select(ops[1], ops[2], lj_dim(rd, 2, 0), lj_dim(rd, 2, 1), lj_dim(rd, 2, 2), max_out,
                      iou, thr, lj_attr_int(rd, AK_center_point_box, 0) != 0, ops[0],
                      lj_dim(rd, 0, 0));
}

/* Slice's run-time ends (operand 2, one per entry of axes) written over
 * the ends attribute of rd, so that core/slice.h clamps them as it clamps
 * constant ones, both in the rule and in the kernel's starts. */
static bool dyn_slice_ends(int64_t *rd, void *const *ops) {
    int na, ne;
    const int64_t *axes = lj_attr(rd, AK_axes, &na);
    int64_t *ends = (int64_t *)lj_attr(rd, AK_ends, &ne);
    if (!axes || !ends || lj_numel(rd, 2) != na)
        return false;
    for (int i = 0; i < na; i++) {
        if (axes[i] < 0 || axes[i] >= ne)
            return false;
        ends[axes[i]] = lj_ld_i64(lj_elem(rd, 2), ops[2], i);
    }
    return true;
}

/* Expand to a run-time shape (operand 2): each result dim is the shape's
 * value broadcast with x's run-time dim, both aligned at the last axis, as
 * ONNX's Expand (and the interpreter's expand_size) take them. */
static bool dyn_expand(int64_t *rd, void *const *ops) {
    int rank = lj_rank(rd, 0), rx = lj_rank(rd, 1);
    int64_t ns = lj_numel(rd, 2);
    for (int i = 0; i < rank; i++) {
        int64_t s = i >= rank - ns ? lj_ld_i64(lj_elem(rd, 2), ops[2], i - (rank - ns)) : 1;
        int64_t x = i >= rank - rx ? lj_dim(rd, 1, i - (rank - rx)) : 1;
        if (s < 0 || (s != x && s != 1 && x != 1))
            return false;
        dyn_dims(rd, 0)[i] = s == 1 ? x : s;
    }
    return true;
}

/* Unique's operand x seen as slices along the axis (core/unique_sort.h). */
typedef struct DynSlices {
    const void *x;
    int elem;
    int64_t count, size, inner;
} DynSlices;

/* Lexicographic over the slices' elements, by core/unique_sort.h's order
 * of values (the interpreter's; strings by their bytes). */
static int dyn_slice_cmp(const void *ctx, int64_t a, int64_t b) {
    const DynSlices *s = ctx;
    bool flt = lj_is_float(s->elem), uns = lj_is_uint(s->elem);
    for (int64_t e = 0; e < s->size; e++) {
        int64_t i = unique_at(s->count, s->inner, a, e), j = unique_at(s->count, s->inner, b, e);
        int c = s->elem == ELEM_STR ? str_cmp(lj_str_at(s->x, i), lj_str_at(s->x, j))
                : flt ? unique_cmp_f64(lj_ld_f64(s->elem, s->x, i), lj_ld_f64(s->elem, s->x, j))
                    : unique_cmp_i64(lj_ld_i64(s->elem, s->x, i), lj_ld_i64(s->elem, s->x, j), uns);
        if (c)
            return c;
    }
    return 0;
}

/* Unique (operands: y, indices, inverse, counts, x) along the axis, the
 * whole of it made here -- a sort and a grouping, one thread's work (y's
 * strings are x's slots: their characters are x's, as a copy's are): the
 * groups' count is the run-time size of y's axis and of indices and
 * counts. False when out of memory. */
static bool dyn_unique(int64_t *rd, void *const *ops) {
    int rank = lj_rank(rd, 4);
    int64_t a = lj_attr_int(rd, AK_axis, 0), axis = a < 0 ? a + rank : a;
    DynSlices s = {ops[4], lj_elem(rd, 4), lj_dim(rd, 4, (int)axis), 0, 1};
    for (int i = (int)axis + 1; i < rank; i++)
        s.inner *= lj_dim(rd, 4, i);
    s.size = s.count ? lj_numel(rd, 4) / s.count : 0;
    int64_t *scratch = malloc((size_t)(5 * s.count + 5) * sizeof *scratch);
    if (!scratch)
        return false;
    int64_t *first = ops[1], *counts = ops[3];
    int64_t n = unique_group(s.count, lj_attr_int(rd, AK_sorted, 1) != 0, dyn_slice_cmp, &s,
                             scratch, first, counts, ops[2]);
    free(scratch);
    size_t es = lj_elem_size(s.elem);
    for (int64_t g = 0; g < n; g++)
        for (int64_t e = 0; e < s.size; e++)
            memcpy((char *)ops[0] + (size_t)unique_at(n, s.inner, g, e) * es,
                   (const char *)s.x + (size_t)unique_at(s.count, s.inner, first[g], e) * es, es);
    for (int i = 0; i < rank; i++) /* x's run-time dims but the axis */
        dyn_dims(rd, 0)[i] = i == axis ? n : lj_dim(rd, 4, i);
    dyn_dims(rd, 1)[0] = dyn_dims(rd, 3)[0] = n;
    dyn_dims(rd, 2)[0] = s.count;
    return true;
}

/* ---- rules whose sizes are operand values (Range, Tile, scan_row) ---- */

/* Range (operands: y, start, limit, delta): y's length; -1 when delta is 0
 * or the length is not a count. */
static int64_t dyn_range_count(const int64_t *rd, void *const *ops) {
    int e = lj_elem(rd, 1);
    if (lj_is_float(e))
        return range_count_float(lj_ld_f64(e, ops[1], 0), lj_ld_f64(e, ops[2], 0),
                                 lj_ld_f64(e, ops[3], 0));
    return range_count_int(lj_ld_i64(e, ops[1], 0), lj_ld_i64(e, ops[2], 0),
                           lj_ld_i64(e, ops[3], 0));
}

/* Tile (operands: y, x, repeats when known only at run time, else the
 * attribute): x's run-time dims times the repeats; false on a negative
 * repeat or a product past 64 bits. */
static bool dyn_tile(int64_t *rd, void *const *ops) {
    for (int i = 0; i < lj_rank(rd, 1); i++) {
        int64_t r = lj_nops(rd) > 2 ? lj_ld_i64(lj_elem(rd, 2), ops[2], i)
                                    : lj_attr_at(rd, AK_repeats, i, 1);
        if (r < 0 || __builtin_mul_overflow(lj_dim(rd, 1, i), r, &dyn_dims(rd, 0)[i]))
            return false;
    }
    return true;
}

/* scan_row (operands: y, acc, i, row?): y keeps acc's first i rows, then
 * the row; false when i is not within acc's rows. */
static bool dyn_scan_row(int64_t *rd, void *const *ops) {
    int64_t i = lj_ld_i64(lj_elem(rd, 2), ops[2], 0);
    if (i < 0 || i > lj_dim(rd, 1, 0))
        return false;
    dyn_dims(rd, 0)[0] = lj_nops(rd) > 3 ? i + 1 : i;
    return true;
}

/* Returns 0, or 1 when the run-time sizes do not fit the instruction
 * (sizes that do not broadcast, a k beyond its axis, a result beyond its
 * bound): the caller names the instruction. */
int libjit_dyn_prepare(int64_t *rd, const int64_t *d, void *const *ops, unsigned char *mutables,
                       const int64_t *slots) {
    int nres = lj_nres(d), nops = lj_nops(d);
    memcpy(rd, d, (size_t)dyn_words(d) * sizeof *rd);
    for (int k = nres; k < nops; k++)
        if (slots[2 * k] >= 0)
            memcpy(dyn_dims(rd, k), mutables + slots[2 * k], (size_t)lj_rank(d, k) * sizeof *rd);
    const int64_t *rule = slots + 2 * nops;
    switch (rule[0]) {
    case LJ_DYN_MAP:
        if (!dyn_map(rd, d, slots, rule + 1))
            return 1;
        break;
    case LJ_DYN_NONZERO: {
        int64_t n = lj_numel(rd, 1), count = 0;
        for (int64_t i = 0; i < n; i++)
            count += dyn_nonzero(lj_elem(rd, 1), ops[1], i);
        dyn_dims(rd, 0)[1] = count;
        break;
    }
    case LJ_DYN_COMPRESS: {
        int axis;
        int64_t kept = dyn_compress_count(rd, ops, &axis);
        if (kept < 0)
            return 1;
        dyn_dims(rd, 0)[axis] = kept;
        break;
    }
    case LJ_DYN_TOP_K: {
        int rank = lj_rank(rd, 2);
        int64_t a = lj_attr_int(rd, AK_axis, -1), axis = a < 0 ? a + rank : a;
        int64_t k = lj_ld_i64(lj_elem(rd, 3), ops[3], 0);
        if (k < 0 || k > lj_dim(rd, 2, (int)axis))
            return 1;
        dyn_dims(rd, 0)[axis] = dyn_dims(rd, 1)[axis] = k;
        break;
    }
    case LJ_DYN_NMS: {
        int64_t rows = dyn_nms(rd, ops);
        if (rows < 0)
            return 1;
        dyn_dims(rd, 0)[0] = rows;
        break;
    }
    case LJ_DYN_RESHAPE: {
        int64_t rest = 1;
        int dd = -1;
        for (int i = 0; i < lj_rank(d, 0); i++) {
            if (slots[1] & (1 << i))
                dd = i;
            else
                rest *= lj_dim(d, 0, i);
        }
        int64_t n = lj_numel(rd, 1);
        if (dd < 0 || (rest ? n % rest : n))
            return 1;
        dyn_dims(rd, 0)[dd] = rest ? n / rest : 0;
        break;
    }
    case LJ_DYN_SLICE:
        if (nops > nres + 1 && !dyn_slice_ends(rd, ops))
            return 1;
        for (int i = 0; i < lj_rank(rd, 1); i++) {
            int64_t b, st;
            lj_slice_axis(rd, i, &b, &st, &dyn_dims(rd, 0)[i]);
        }
        break;
    case LJ_DYN_CONCAT: {
        int rank = lj_rank(rd, 0);
        int64_t a = lj_attr_int(rd, AK_axis, 0), axis = a < 0 ? a + rank : a, sum = 0;
        for (int k = 1; k < nops; k++) {
            for (int i = 0; i < rank; i++)
                if (i != axis && lj_dim(rd, k, i) != lj_dim(rd, 1, i))
                    return 1;
            sum += lj_dim(rd, k, (int)axis);
        }
        for (int i = 0; i < rank; i++)
            dyn_dims(rd, 0)[i] = i == axis ? sum : lj_dim(rd, 1, i);
        break;
    }
    case LJ_DYN_RANGE: {
        int64_t n = dyn_range_count(rd, ops);
        if (n < 0)
            return 1;
        dyn_dims(rd, 0)[0] = n;
        break;
    }
    case LJ_DYN_TILE:
        if (!dyn_tile(rd, ops))
            return 1;
        break;
    case LJ_DYN_SCAN_ROW:
        if (!dyn_scan_row(rd, ops))
            return 1;
        break;
    case LJ_DYN_EXPAND:
        if (!dyn_expand(rd, ops))
            return 1;
        break;
    case LJ_DYN_UNIQUE:
        if (!dyn_unique(rd, ops))
            return 1;
        break;
    default: return 1;
    }
    for (int r = 0; r < nres; r++) {
        for (int i = 0; i < lj_rank(d, r); i++) {
            int64_t got = dyn_dims(rd, r)[i], want = lj_dim(d, r, i);
            if (got > want || (!(slots[2 * r + 1] & (1 << i)) && got != want))
                return 1; /* beyond its bound (never written past the buffer), or
                           * a static size that changed */
        }
        if (slots[2 * r] >= 0)
            memcpy(mutables + slots[2 * r], dyn_dims(rd, r), (size_t)lj_rank(d, r) * sizeof *rd);
    }
    return 0;
}

/* ---- the producers: their result's size is a count --------------------- */

LIBJIT_WORK libjit_nonzero_any_work(const int64_t *d) {
    return 1;
}

/* Operands: y (i64 [rank, count]), x. The coordinates of x's nonzero
 * elements in row-major order, one row per axis; count is y's dim 1 (the
 * descriptor's, at run time libjit_dyn_prepare's). */
LIBJIT_KERNEL libjit_nonzero_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                 LjScratch *sc) {
    int rank = lj_rank(d, 1), ex = lj_elem(d, 1);
    int64_t n = lj_numel(d, 1), count = lj_dim(d, 0, 1), idx[DESC_MAX_RANK] = {0};
    int64_t *y = ops[0];
    for (int64_t i = 0, j = 0; i < n && j < count; i++) {
        if (dyn_nonzero(ex, ops[1], i)) {
            for (int a = 0; a < rank; a++)
                y[a * count + j] = idx[a];
            if (!rank)
                y[j] = 0;
            j++;
        }
        for (int a = rank - 1; a >= 0; a--) {
            if (++idx[a] < lj_dim(d, 1, a))
                break;
            idx[a] = 0;
        }
    }
}

LIBJIT_WORK libjit_compress_any_work(const int64_t *d) {
    return 1;
}

/* Operands: y, x, condition. The slices of x along the axis whose
 * condition is true, in order (a condition shorter than the axis drops
 * the rest). */
LIBJIT_KERNEL libjit_compress_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                  LjScratch *sc) {
    int rank = lj_rank(d, 1);
    int64_t a = lj_attr_int(d, AK_axis, 0);
    int axis = (int)(a < 0 ? a + rank : a);
    int64_t len = lj_dim(d, 1, axis), nc = lj_numel(d, 2), outer = 1, inner = 1;
    for (int i = 0; i < rank; i++)
        if (i != axis)
            *(i < axis ? &outer : &inner) *= lj_dim(d, 1, i);
    size_t row = (size_t)inner * lj_elem_size(lj_elem(d, 1));
    char *dst = ops[0];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < nc && i < len; i++)
            if (dyn_nonzero(lj_elem(d, 2), ops[2], i)) {
                memcpy(dst, (const char *)ops[1] + (size_t)(o * len + i) * row, row);
                dst += row;
            }
}

/* ---- the consumers that only move data or read sizes ---------------------- */

LIBJIT_WORK libjit_reshape_any_work(const int64_t *d) {
    return 1;
}

/* A reshape not made a view (its input or result bounded-dynamic): the
 * elements in order. */
LIBJIT_KERNEL libjit_reshape_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                 LjScratch *sc) {
    memmove(ops[0], ops[1], (size_t)lj_numel(d, 1) * lj_elem_size(lj_elem(d, 1)));
}

LIBJIT_WORK libjit_shape_any_work(const int64_t *d) {
    return 1;
}

/* The input's dims (at run time, libjit_dyn_prepare's). */
LIBJIT_KERNEL libjit_shape_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                               LjScratch *sc) {
    int64_t *y = ops[0];
    for (int i = 0; i < lj_rank(d, 1); i++)
        y[i] = lj_dim(d, 1, i);
}

/* The selection is made in libjit_dyn_prepare (LJ_DYN_NMS); this kernel
 * only names the instruction's native path. */
LIBJIT_WORK libjit_nms_any_work(const int64_t *d) {
    return 0;
}

LIBJIT_KERNEL libjit_nms_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                             LjScratch *sc) {
}

LIBJIT_WORK libjit_concat_any_work(const int64_t *d) {
    return 1;
}

/* Operands: y, then the inputs, joined along the axis: per outer index,
 * each input's block in turn. */
LIBJIT_KERNEL libjit_concat_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                LjScratch *sc) {
    int rank = lj_rank(d, 0);
    int64_t a = lj_attr_int(d, AK_axis, 0), axis = a < 0 ? a + rank : a, outer = 1, inner = 1;
    for (int i = 0; i < rank; i++)
        if (i != axis)
            *(i < axis ? &outer : &inner) *= lj_dim(d, 0, i);
    size_t es = lj_elem_size(lj_elem(d, 0));
    char *dst = ops[0];
    for (int64_t o = 0; o < outer; o++)
        for (int k = 1; k < lj_nops(d); k++) {
            size_t block = (size_t)(lj_dim(d, k, (int)axis) * inner) * es;
            memcpy(dst, (const char *)ops[k] + (size_t)o * block, block);
            dst += block;
        }
}

LIBJIT_WORK libjit_range_any_work(const int64_t *d) {
    return 1;
}

/* Operands: y, start, limit, delta; y's length is the count (the
 * descriptor's, at run time libjit_dyn_prepare's). Integers step exactly,
 * wrapping like the element kind; floats as start + i * delta, as the
 * interpreter does. */
LIBJIT_KERNEL libjit_range_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                               LjScratch *sc) {
    int e = lj_elem(d, 0);
    int64_t n = lj_dim(d, 0, 0);
    if (lj_is_float(e)) {
        double start = lj_ld_f64(e, ops[1], 0), delta = lj_ld_f64(e, ops[3], 0);
        for (int64_t i = 0; i < n; i++)
            lj_st_f64(e, ops[0], i, start + (double)i * delta);
        return;
    }
    uint64_t start = (uint64_t)lj_ld_i64(e, ops[1], 0), delta = (uint64_t)lj_ld_i64(e, ops[3], 0);
    for (int64_t i = 0; i < n; i++)
        lj_st_i64(e, ops[0], i, (int64_t)(start + (uint64_t)i * delta));
}

LIBJIT_WORK libjit_scan_row_any_work(const int64_t *d) {
    return 1;
}

/* Operands: y, acc, i, row?: a loop's scan output after iteration i. The
 * accumulator's first i rows move unless y is acc (in place), then the
 * row lands after them. */
LIBJIT_KERNEL libjit_scan_row_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                  LjScratch *sc) {
    int64_t rows = lj_dim(d, 0, 0), i = lj_ld_i64(lj_elem(d, 2), ops[2], 0);
    if (!rows)
        return;
    size_t row = (size_t)(lj_numel(d, 0) / rows) * lj_elem_size(lj_elem(d, 0));
    if (ops[0] != ops[1])
        memmove(ops[0], ops[1], row * (size_t)i);
    if (lj_nops(d) > 3)
        memcpy((char *)ops[0] + row * (size_t)i, ops[3], row);
}

/* The groups are made in libjit_dyn_prepare (LJ_DYN_UNIQUE); this kernel
 * only names the instruction's native path. */
LIBJIT_WORK libjit_unique_any_work(const int64_t *d) {
    return 0;
}

LIBJIT_KERNEL libjit_unique_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                LjScratch *sc) {
}
