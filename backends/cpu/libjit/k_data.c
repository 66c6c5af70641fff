/* Data movement for every element kind: expand, tile, pad, trilu, split,
 * gather_elements, gather_nd, depth_to_space and space_to_depth as
 * libjit_<kind>_any. They move elements as bytes of the element's size
 * (elem.h's lj_move: one loop per size, not per kind), so they are exact.
 *
 * Each walks its output in order a row (the last axis) at a time: the
 * source offset of a row's first element is worked out from its
 * coordinates, and the row's inner loop has a constant stride where the
 * operator allows it. Work units are chunks of output elements. */
#include "backends/cpu/libjit/elem.h"
#include "backends/cpu/libjit/kernels.h"

enum { CHUNK = 1 << 15 };

LJ_INLINE int64_t min64(int64_t a, int64_t b) {
    return a < b ? a : b;
}

LJ_INLINE int64_t out_chunks(const int64_t *d) {
    int64_t n = lj_numel(d, 0);
    return n > 0 ? (n + CHUNK - 1) / CHUNK : 1;
}

LJ_INLINE void out_range(const int64_t *d, int op, int64_t lo, int64_t hi, int64_t *e0,
                         int64_t *e1) {
    int64_t n = lj_numel(d, op);
    *e0 = min64(lo * CHUNK, n);
    *e1 = min64(hi * CHUNK, n);
}

/* Coordinates of element i of operand op. */
LJ_INLINE void unravel(const int64_t *d, int op, int64_t i, int64_t *idx) {
    for (int j = lj_rank(d, op) - 1; j >= 0; j--) {
        idx[j] = i % lj_dim(d, op, j);
        i /= lj_dim(d, op, j);
    }
}

LJ_INLINE void strides(const int64_t *d, int op, int64_t *st) {
    int64_t s = 1;
    for (int i = lj_rank(d, op) - 1; i >= 0; i--) {
        st[i] = s;
        s *= lj_dim(d, op, i);
    }
}

/* Index k of an axis of length len, negative from the end, clamped into
 * range (the interpreter fails on an index out of range; a kernel cannot,
 * and must not read outside its operand). */
LJ_INLINE int64_t wrap_index(int64_t k, int64_t len) {
    k = k < 0 ? k + len : k;
    return k < 0 ? 0 : k >= len ? len - 1 : k;
}

/* ---- expand, tile ----------------------------------------------------------- */

LIBJIT_WORK libjit_expand_any_work(const int64_t *d) {
    return out_chunks(d);
}

/* Numpy broadcasting of x to y's shape: strides 0 along broadcast axes. */
LIBJIT_KERNEL libjit_expand_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                LjScratch *sc) {
    int rank = lj_rank(d, 0), rx = lj_rank(d, 1);
    size_t es = lj_elem_size(lj_elem(d, 0));
    int64_t st[DESC_MAX_RANK], s = 1, idx[DESC_MAX_RANK], e0, e1;
    for (int i = rank - 1; i >= 0; i--) {
        int j = i - (rank - rx);
        int64_t dim = j >= 0 ? lj_dim(d, 1, j) : 1;
        st[i] = dim == 1 ? 0 : s;
        s *= dim;
    }
    out_range(d, 0, lo, hi, &e0, &e1);
    int64_t row = rank ? lj_dim(d, 0, rank - 1) : 1, rs = rank ? st[rank - 1] : 0;
    for (int64_t i = e0; i < e1;) {
        unravel(d, 0, i, idx);
        int64_t off = 0;
        for (int j = 0; j < rank; j++)
            off += idx[j] * st[j];
        int64_t col = rank ? idx[rank - 1] : 0, len = min64(row - col, e1 - i);
        off -= col * rs;
        for (int64_t c = 0; c < len; c++)
            lj_move(es, ops[0], i + c, ops[1], off + (col + c) * rs);
        i += len;
    }
}

LIBJIT_WORK libjit_tile_any_work(const int64_t *d) {
    return out_chunks(d);
}

LIBJIT_KERNEL libjit_tile_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                              LjScratch *sc) {
    int rank = lj_rank(d, 0);
    size_t es = lj_elem_size(lj_elem(d, 0));
    int64_t xs[DESC_MAX_RANK], idx[DESC_MAX_RANK], e0, e1;
    strides(d, 1, xs);
    out_range(d, 0, lo, hi, &e0, &e1);
    for (int64_t i = e0; i < e1; i++) {
        unravel(d, 0, i, idx);
        int64_t off = 0;
        for (int j = 0; j < rank; j++)
            off += idx[j] % lj_dim(d, 1, j) * xs[j];
        lj_move(es, ops[0], i, ops[1], off);
    }
}

/* ---- pad --------------------------------------------------------------------- */

/* An output coordinate to an input one under reflect or edge padding. */
LJ_INLINE int64_t pad_source(int64_t q, int64_t dim, bool reflect) {
    if (dim == 1)
        return 0;
    if (!reflect)
        return q < 0 ? 0 : q >= dim ? dim - 1 : q;
    int64_t period = 2 * (dim - 1);
    q %= period;
    if (q < 0)
        q += period;
    return q < dim ? q : period - q;
}

LIBJIT_WORK libjit_pad_any_work(const int64_t *d) {
    return out_chunks(d);
}

LIBJIT_KERNEL libjit_pad_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                             LjScratch *sc) {
    int rank = lj_rank(d, 1), np, e = lj_elem(d, 0);
    const int64_t *pads = lj_attr(d, AK_pads, &np);
    int mode = (int)lj_attr_int(d, AK_mode, MODE_CONSTANT);
    bool constant = mode == MODE_CONSTANT, reflect = mode == MODE_REFLECT;
    double value = lj_attr_float(d, AK_value, 0);
    size_t es = lj_elem_size(e);
    int64_t xs[DESC_MAX_RANK], idx[DESC_MAX_RANK], e0, e1;
    strides(d, 1, xs);
    out_range(d, 0, lo, hi, &e0, &e1);
    for (int64_t i = e0; i < e1; i++) {
        unravel(d, 0, i, idx);
        int64_t off = 0;
        bool inside = true;
        for (int j = 0; j < rank && inside; j++) {
            int64_t q = idx[j] - (pads && j < np ? pads[j] : 0), dim = lj_dim(d, 1, j);
            if (q < 0 || q >= dim) {
                if (constant)
                    inside = false;
                q = pad_source(q, dim, reflect);
            }
            off += q * xs[j];
        }
        if (inside)
            lj_move(es, ops[0], i, ops[1], off);
        else
            lj_st_f64(e, ops[0], i, value);
    }
}

/* ---- trilu ------------------------------------------------------------------- */

LIBJIT_WORK libjit_trilu_any_work(const int64_t *d) {
    return out_chunks(d);
}

/* Keeps (r, c) of each matrix when c - r >= k (upper) or c - r <= k
 * (lower); the rest is zero, all-zero bytes in every kind. */
LIBJIT_KERNEL libjit_trilu_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                               LjScratch *sc) {
    int rank = lj_rank(d, 1);
    bool upper = lj_attr_int(d, AK_upper, 1) != 0;
    int64_t k = lj_attr_int(d, AK_k, 0), e0, e1;
    int64_t rows = lj_dim(d, 1, rank - 2), cols = lj_dim(d, 1, rank - 1);
    size_t es = lj_elem_size(lj_elem(d, 0));
    out_range(d, 0, lo, hi, &e0, &e1);
    for (int64_t i = e0; i < e1; i++) {
        int64_t c = i % cols, r = i / cols % rows;
        if (upper ? c - r >= k : c - r <= k)
            lj_move(es, ops[0], i, ops[1], i);
        else
            memset((char *)ops[0] + (size_t)i * es, 0, es);
    }
}

/* ---- split ------------------------------------------------------------------- */

/* Outputs 0 .. nres-1 take consecutive parts of the input along the axis;
 * the whole input is one unit of work per chunk of input elements. */
LIBJIT_WORK libjit_split_any_work(const int64_t *d) {
    int64_t n = lj_numel(d, lj_nres(d));
    return n > 0 ? (n + CHUNK - 1) / CHUNK : 1;
}

LIBJIT_KERNEL libjit_split_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                               LjScratch *sc) {
    int nres = lj_nres(d), rank = lj_rank(d, nres);
    int64_t axis = lj_attr_int(d, AK_axis, 0);
    axis = axis < 0 ? axis + rank : axis;
    size_t es = lj_elem_size(lj_elem(d, 0));
    int64_t inner = 1, e0, e1;
    for (int i = (int)axis + 1; i < rank; i++)
        inner *= lj_dim(d, nres, i);
    int64_t len = lj_dim(d, nres, (int)axis);
    out_range(d, nres, lo, hi, &e0, &e1);
    for (int64_t i = e0; i < e1; i++) {
        int64_t in = i % inner, a = i / inner % len, o = i / inner / len;
        int k = 0;
        int64_t part = lj_dim(d, 0, (int)axis);
        while (a >= part && k < nres - 1) {
            a -= part;
            part = lj_dim(d, ++k, (int)axis);
        }
        lj_move(es, ops[k], (o * part + a) * inner + in, ops[nres], i);
    }
}

/* ---- gather_elements, gather_nd ------------------------------------------------ */

LIBJIT_WORK libjit_gather_elements_any_work(const int64_t *d) {
    return out_chunks(d);
}

/* y[i...] = x[i... with the axis coordinate replaced by indices[i...]]. */
LIBJIT_KERNEL libjit_gather_elements_any(const int64_t *d, void *const *ops, int64_t lo,
                                         int64_t hi, LjScratch *sc) {
    int rank = lj_rank(d, 1), ei = lj_elem(d, 2);
    int64_t axis = lj_attr_int(d, AK_axis, 0);
    axis = axis < 0 ? axis + rank : axis;
    size_t es = lj_elem_size(lj_elem(d, 0));
    int64_t xs[DESC_MAX_RANK], idx[DESC_MAX_RANK], e0, e1, len = lj_dim(d, 1, (int)axis);
    strides(d, 1, xs);
    out_range(d, 0, lo, hi, &e0, &e1);
    for (int64_t i = e0; i < e1; i++) {
        unravel(d, 2, i, idx);
        idx[axis] = wrap_index(lj_ld_i64(ei, ops[2], i), len);
        int64_t off = 0;
        for (int j = 0; j < rank; j++)
            off += idx[j] * xs[j];
        lj_move(es, ops[0], i, ops[1], off);
    }
}

LIBJIT_WORK libjit_gather_nd_any_work(const int64_t *d) {
    return 1;
}

/* Each row of `last` indices picks a slice of the data within its batch. */
LIBJIT_KERNEL libjit_gather_nd_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                   LjScratch *sc) {
    int ri = lj_rank(d, 2), ei = lj_elem(d, 2);
    int b = (int)lj_attr_int(d, AK_batch_dims, 0), last = (int)lj_dim(d, 2, ri - 1);
    int64_t xs[DESC_MAX_RANK], rows = 1, batches = 1;
    strides(d, 1, xs);
    for (int i = 0; i < ri - 1; i++)
        rows *= lj_dim(d, 2, i);
    for (int i = 0; i < b; i++)
        batches *= lj_dim(d, 2, i);
    int64_t per_batch = batches ? rows / batches : 0, batch_stride = b ? xs[b - 1] : 0;
    size_t es = lj_elem_size(lj_elem(d, 0));
    int64_t slice = b + last > 0 ? xs[b + last - 1] : lj_numel(d, 1);
    for (int64_t r = 0; r < rows; r++) {
        int64_t off = (per_batch ? r / per_batch : 0) * batch_stride;
        for (int j = 0; j < last; j++)
            off += wrap_index(lj_ld_i64(ei, ops[2], r * last + j), lj_dim(d, 1, b + j)) * xs[b + j];
        memcpy((char *)ops[0] + (size_t)(r * slice) * es, (const char *)ops[1] + (size_t)off * es,
               (size_t)slice * es);
    }
}

/* ---- depth_to_space, space_to_depth ----------------------------------------------- */

/* Between x[n][c][h][w] (the deep side) and y[n][c'][h*b + i][w*b + j] (the
 * wide side): DCR takes channel c = (i*b + j) * C' + c', CRD c = c' * b*b +
 * i*b + j; space_to_depth is the inverse of DCR. Walked over the wide side. */
LJ_INLINE void block_move(const int64_t *d, void *const *ops, int deep, int wide, bool crd,
                          bool to_space, int64_t lo, int64_t hi) {
    int64_t b = lj_attr_int(d, AK_blocksize, 1), e0, e1;
    int64_t cd = lj_dim(d, deep, 1), h = lj_dim(d, deep, 2), w = lj_dim(d, deep, 3);
    int64_t cw = lj_dim(d, wide, 1), hw = lj_dim(d, wide, 2), ww = lj_dim(d, wide, 3);
    size_t es = lj_elem_size(lj_elem(d, 0));
    out_range(d, wide, lo, hi, &e0, &e1);
    for (int64_t ow = e0; ow < e1; ow++) {
        int64_t xw = ow % ww, yw = ow / ww % hw, c = ow / ww / hw % cw, n = ow / ww / hw / cw;
        int64_t i = yw % b, y = yw / b, j = xw % b, x = xw / b;
        int64_t ch = crd ? c * b * b + i * b + j : (i * b + j) * cw + c;
        int64_t od = ((n * cd + ch) * h + y) * w + x;
        if (to_space)
            lj_move(es, ops[0], ow, ops[1], od);
        else
            lj_move(es, ops[0], od, ops[1], ow);
    }
}

LIBJIT_WORK libjit_depth_to_space_any_work(const int64_t *d) {
    return out_chunks(d);
}

LIBJIT_KERNEL libjit_depth_to_space_any(const int64_t *d, void *const *ops, int64_t lo,
                                        int64_t hi, LjScratch *sc) {
    bool crd = lj_attr_int(d, AK_mode, MODE_DCR) == MODE_CRD;
    block_move(d, ops, 1, 0, crd, true, lo, hi);
}

LIBJIT_WORK libjit_space_to_depth_any_work(const int64_t *d) {
    return out_chunks(d);
}

LIBJIT_KERNEL libjit_space_to_depth_any(const int64_t *d, void *const *ops, int64_t lo,
                                        int64_t hi, LjScratch *sc) {
    block_move(d, ops, 0, 1, false, false, lo, hi);
}

/* ---- scatter_elements, scatter_nd ----------------------------------------------------- */

/* y[dst] = y[dst] (op) u[src]: floats combine in double, integers in
 * wrapping int64, as the interpreter does; no reduction is a byte move. */
LJ_INLINE void combine(const int64_t *d, void *y, int64_t dst, const void *u, int64_t src,
                       int red) {
    int e = lj_elem(d, 0);
    if (red == RED_NONE) {
        lj_move(lj_elem_size(e), y, dst, u, src);
    } else if (lj_is_float(e)) {
        double a = lj_ld_f64(e, y, dst), b = lj_ld_f64(e, u, src);
        lj_st_f64(e, y, dst, red == RED_ADD ? a + b : red == RED_MUL ? a * b
                             : red == RED_MAX ? (b > a ? b : a) : (b < a ? b : a));
    } else {
        int64_t a = lj_ld_i64(e, y, dst), b = lj_ld_i64(e, u, src);
        lj_st_i64(e, y, dst, red == RED_ADD   ? (int64_t)((uint64_t)a + (uint64_t)b)
                             : red == RED_MUL ? (int64_t)((uint64_t)a * (uint64_t)b)
                             : red == RED_MAX ? (b > a ? b : a) : (b < a ? b : a));
    }
}

/* The updates in order, the indices' coordinates stepped as an odometer
 * (the offset of all but the axis kept as it goes) rather than divided out
 * per element; always inlined, so that the common kinds below get loops
 * of their own. */
LJ_INLINE void scatter_elements(const int64_t *d, void *const *ops, int red, int ei, int rank,
                                int axis) {
    int64_t xs[DESC_MAX_RANK], idx[DESC_MAX_RANK] = {0}, len = lj_dim(d, 1, axis), rest = 0;
    strides(d, 1, xs);
    for (int64_t i = 0, n = lj_numel(d, 2); i < n; i++) {
        int64_t off = rest + wrap_index(lj_ld_i64(ei, ops[2], i), len) * xs[axis];
        combine(d, ops[0], off, ops[3], i, red);
        for (int j = rank - 1; j >= 0; j--) {
            int64_t step = j == axis ? 0 : xs[j];
            rest += step;
            if (++idx[j] < lj_dim(d, 2, j))
                break;
            rest -= step * idx[j];
            idx[j] = 0;
        }
    }
}

/* x seen as [outer][len][inner] about the axis. When the indices have x's
 * dims but along the axis (torchvision's, and ONNX's usual form), an
 * update at (o, k, i) lands at (o, index, i): the same line (o, i), which
 * no other line's updates touch. Units are then blocks of lines, each
 * copying its lines and applying their updates in order along the axis --
 * the order one pass over the indices gives them -- so the result is the
 * same for any split. Otherwise one unit does all. */
typedef struct ScLines {
    int axis;
    int64_t outer, len, inner, ilen, block, blocks; /* block: lines (of inner) per unit */
} ScLines;

LJ_INLINE bool sc_lines(const int64_t *d, ScLines *p) {
    int rank = lj_rank(d, 1);
    int64_t axis = lj_attr_int(d, AK_axis, 0);
    axis = axis < 0 ? axis + rank : axis;
    *p = (ScLines){.axis = (int)axis, .outer = 1, .inner = 1};
    for (int i = 0; i < rank; i++) {
        if (i != axis && lj_dim(d, 2, i) != lj_dim(d, 1, i))
            return false;
        if (i != axis)
            *(i < axis ? &p->outer : &p->inner) *= lj_dim(d, 1, i);
    }
    p->len = lj_dim(d, 1, (int)axis);
    p->ilen = lj_dim(d, 2, (int)axis);
    int64_t per_line = p->len + p->ilen > 0 ? p->len + p->ilen : 1;
    p->block = CHUNK / per_line > 0 ? CHUNK / per_line : 1;
    p->block = p->block < p->inner ? p->block : p->inner;
    p->blocks = p->block > 0 ? (p->inner + p->block - 1) / p->block : 0;
    return true;
}

/* Units [lo, hi) of lines: (o, a block of i). */
LJ_INLINE void scatter_lines(const int64_t *d, void *const *ops, const ScLines *p, int red, int ei,
                             int64_t lo, int64_t hi) {
    size_t es = lj_elem_size(lj_elem(d, 0));
    for (int64_t u = lo; u < hi && u < p->outer * p->blocks; u++) {
        int64_t o = u / p->blocks, i0 = u % p->blocks * p->block;
        int64_t i1 = i0 + p->block < p->inner ? i0 + p->block : p->inner;
        if (ops[0] != ops[1])
            for (int64_t k = 0; k < p->len; k++) {
                size_t at = (size_t)((o * p->len + k) * p->inner + i0) * es;
                memmove((char *)ops[0] + at, (const char *)ops[1] + at, (size_t)(i1 - i0) * es);
            }
        for (int64_t k = 0; k < p->ilen; k++)
            for (int64_t i = i0; i < i1; i++) {
                int64_t src = (o * p->ilen + k) * p->inner + i;
                int64_t to = wrap_index(lj_ld_i64(ei, ops[2], src), p->len);
                combine(d, ops[0], (o * p->len + to) * p->inner + i, ops[3], src, red);
            }
    }
}

/* Updates apply in order (with duplicate indices the last wins, or all
 * combine), by lines as above, else in one unit of work. y may be x (the
 * copy is then a no-op). */
LIBJIT_KERNEL libjit_scatter_elements_any(const int64_t *d, void *const *ops, int64_t lo,
                                          int64_t hi, LjScratch *sc) {
    int rank = lj_rank(d, 1), ei = lj_elem(d, 2), red = (int)lj_attr_int(d, AK_reduction, RED_NONE);
    ScLines p;
    if (sc_lines(d, &p)) {
        if (red == RED_NONE && ei == ELEM_I64 && lj_elem(d, 0) == ELEM_F32)
            scatter_lines(d, ops, &p, RED_NONE, ELEM_I64, lo, hi); /* torchvision's */
        else
            scatter_lines(d, ops, &p, red, ei, lo, hi);
        return;
    }
    if (lo != 0)
        return;
    if (ops[0] != ops[1])
        memmove(ops[0], ops[1], (size_t)lj_numel(d, 1) * lj_elem_size(lj_elem(d, 0)));
    scatter_elements(d, ops, red, ei, rank, p.axis);
}

LIBJIT_WORK libjit_scatter_elements_any_work(const int64_t *d) {
    ScLines p;
    if (!sc_lines(d, &p))
        return 1;
    return p.outer * p.blocks > 0 ? p.outer * p.blocks : 1;
}

LIBJIT_KERNEL libjit_scatter_nd_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                    LjScratch *sc) {
    int ri = lj_rank(d, 2), ei = lj_elem(d, 2), red = (int)lj_attr_int(d, AK_reduction, RED_NONE);
    int last = (int)lj_dim(d, 2, ri - 1);
    int64_t xs[DESC_MAX_RANK], rows = 1;
    strides(d, 1, xs);
    for (int i = 0; i < ri - 1; i++)
        rows *= lj_dim(d, 2, i);
    int64_t slice = last > 0 ? xs[last - 1] : lj_numel(d, 1);
    if (ops[0] != ops[1])
        memmove(ops[0], ops[1], (size_t)lj_numel(d, 1) * lj_elem_size(lj_elem(d, 0)));
    for (int64_t r = 0; r < rows; r++) {
        int64_t off = 0;
        for (int j = 0; j < last; j++)
            off += wrap_index(lj_ld_i64(ei, ops[2], r * last + j), lj_dim(d, 1, j)) * xs[j];
        for (int64_t e = 0; e < slice; e++)
            combine(d, ops[0], off + e, ops[3], r * slice + e, red);
    }
}

LIBJIT_WORK libjit_scatter_nd_any_work(const int64_t *d) {
    return 1;
}

/* ---- one_hot, reverse_sequence ----------------------------------------------------------- */

/* values = [off, on]; an index outside [-depth, depth) leaves its row off. */
LIBJIT_KERNEL libjit_one_hot_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                 LjScratch *sc) {
    int rank = lj_rank(d, 0), ei = lj_elem(d, 1);
    int64_t axis = lj_attr_int(d, AK_axis, -1);
    axis = axis < 0 ? axis + rank : axis;
    int64_t depth = lj_dim(d, 0, (int)axis), inner = 1;
    for (int i = (int)axis + 1; i < rank; i++)
        inner *= lj_dim(d, 0, i);
    size_t es = lj_elem_size(lj_elem(d, 0));
    for (int64_t i = 0; i < lj_numel(d, 0); i++)
        lj_move(es, ops[0], i, ops[2], 0);
    for (int64_t j = 0; j < lj_numel(d, 1); j++) {
        int64_t k = lj_ld_i64(ei, ops[1], j);
        k = k < 0 ? k + depth : k;
        if (k >= 0 && k < depth)
            lj_move(es, ops[0], (j / inner * depth + k) * inner + j % inner, ops[2], 1);
    }
}

LIBJIT_WORK libjit_one_hot_any_work(const int64_t *d) {
    return 1;
}

/* Along the time axis the first sequence_lens[b] steps of batch b are
 * reversed, the rest copied; lengths are clamped to [0, steps]. */
LIBJIT_WORK libjit_reverse_sequence_any_work(const int64_t *d) {
    return out_chunks(d);
}

LIBJIT_KERNEL libjit_reverse_sequence_any(const int64_t *d, void *const *ops, int64_t lo,
                                          int64_t hi, LjScratch *sc) {
    int b = (int)lj_attr_int(d, AK_batch_axis, 1), t = (int)lj_attr_int(d, AK_time_axis, 0);
    int el = lj_elem(d, 2);
    int64_t xs[DESC_MAX_RANK], idx[DESC_MAX_RANK], e0, e1, steps = lj_dim(d, 1, t);
    size_t es = lj_elem_size(lj_elem(d, 0));
    strides(d, 1, xs);
    out_range(d, 0, lo, hi, &e0, &e1);
    for (int64_t i = e0; i < e1; i++) {
        unravel(d, 0, i, idx);
        int64_t len = lj_ld_i64(el, ops[2], idx[b]), step = idx[t];
        len = len < 0 ? 0 : len > steps ? steps : len;
        lj_move(es, ops[0], i, ops[1], i + (step < len ? len - 1 - 2 * step : 0) * xs[t]);
    }
}

/* ---- gather, transpose, slice of the kinds k_misc.c's f32 kernels leave ------------- */

/* y[o][j...][i] = x[o][indices[j...]][i], blocks of `inner` elements. */
LIBJIT_WORK libjit_gather_any_work(const int64_t *d) {
    return out_chunks(d);
}

LIBJIT_KERNEL libjit_gather_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                LjScratch *sc) {
    int rank = lj_rank(d, 1), ei = lj_elem(d, 2);
    int64_t axis = lj_attr_int(d, AK_axis, 0), inner = 1, nidx = lj_numel(d, 2), e0, e1;
    axis = axis < 0 ? axis + rank : axis;
    for (int i = (int)axis + 1; i < rank; i++)
        inner *= lj_dim(d, 1, i);
    int64_t len = lj_dim(d, 1, (int)axis);
    size_t es = lj_elem_size(lj_elem(d, 0));
    out_range(d, 0, lo, hi, &e0, &e1);
    for (int64_t i = e0; i < e1 && inner && nidx; i++) {
        int64_t in = i % inner, j = i / inner % nidx, o = i / inner / nidx;
        int64_t k = wrap_index(lj_ld_i64(ei, ops[2], j), len);
        lj_move(es, ops[0], i, ops[1], (o * len + k) * inner + in);
    }
}

LIBJIT_WORK libjit_transpose_any_work(const int64_t *d) {
    return out_chunks(d);
}

LIBJIT_KERNEL libjit_transpose_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                   LjScratch *sc) {
    int rank = lj_rank(d, 1), n;
    const int64_t *perm = lj_attr(d, AK_perm, &n);
    int64_t xs[DESC_MAX_RANK], idx[DESC_MAX_RANK], e0, e1;
    size_t es = lj_elem_size(lj_elem(d, 0));
    strides(d, 1, xs);
    out_range(d, 0, lo, hi, &e0, &e1);
    for (int64_t i = e0; i < e1; i++) {
        unravel(d, 0, i, idx);
        int64_t off = 0;
        for (int j = 0; j < rank; j++)
            off += idx[j] * xs[perm && n == rank ? perm[j] : rank - 1 - j];
        lj_move(es, ops[0], i, ops[1], off);
    }
}

/* Starts clamped the ONNX way (as core/infer.c's slice_params); the counts
 * are the output's dims. */
LIBJIT_WORK libjit_slice_any_work(const int64_t *d) {
    return out_chunks(d);
}

LIBJIT_KERNEL libjit_slice_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                               LjScratch *sc) {
    int rank = lj_rank(d, 1);
    int64_t xs[DESC_MAX_RANK], idx[DESC_MAX_RANK], base = 0, step[DESC_MAX_RANK], e0, e1;
    size_t es = lj_elem_size(lj_elem(d, 0));
    strides(d, 1, xs);
    for (int i = 0; i < rank; i++) {
        int64_t b, count;
        lj_slice_axis(d, i, &b, &step[i], &count);
        base += b * xs[i];
    }
    out_range(d, 0, lo, hi, &e0, &e1);
    for (int64_t i = e0; i < e1; i++) {
        unravel(d, 0, i, idx);
        int64_t off = base;
        for (int j = 0; j < rank; j++)
            off += idx[j] * step[j] * xs[j];
        lj_move(es, ops[0], i, ops[1], off);
    }
}
