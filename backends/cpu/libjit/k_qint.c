/* Integer kernels of quantized graphs: the forms the quantize pass makes
 * (rescale, qadd, qmul, qavg_pool, qglobal_avg_pool, max_pool on integers)
 * and ONNX's integer products (conv_integer, matmul_integer,
 * qlinear_matmul; qlinear_conv's plain path). Each reproduces the
 * interpreter's arithmetic (backends/interp/k_quant.c) operation for
 * operation: sums in integers, requantization in double from the same f32
 * multiplier, rounding half to even, then the zero point, then saturation --
 * so native results are identical to the reference, not merely close.
 * The fast convolution (VNNI) is k_qconv.c. */
#include <math.h>

#include "backends/cpu/libjit/k_qint.h"
#include "backends/cpu/libjit/vec.h"

/* Contraction would fuse a real's product into a sum the interpreter
 * rounds twice. */
#pragma STDC FP_CONTRACT OFF

enum { QCHUNK = 1 << 14 };

LJ_INLINE int64_t qmin64(int64_t a, int64_t b) {
    return a < b ? a : b;
}

LJ_INLINE int64_t qchunks(int64_t n) {
    return n > 0 ? (n + QCHUNK - 1) / QCHUNK : 1;
}

/* ---- rescale, qadd, qmul ------------------------------------------------------ */

LJ_INLINE double real_at(const int64_t *d, int k, const void *p, int64_t i) {
    return lj_qscale(d, k) * (double)(lj_ld_i64(lj_elem(d, k), p, i) - lj_qoffset(d, k));
}

/* real / scale of result 0, stored as the interpreter's store_real does. */
LJ_INLINE void store_real(const int64_t *d, void *y, int64_t i, double real) {
    lj_store_q(lj_elem(d, 0), y, i, real / lj_qscale(d, 0), lj_qoffset(d, 0));
}

LIBJIT_WORK libjit_rescale_any_work(const int64_t *d) {
    return qchunks(lj_numel(d, 0));
}

LIBJIT_KERNEL libjit_rescale_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                 LjScratch *sc) {
    int64_t n = lj_numel(d, 0);
    for (int64_t i = qmin64(lo * QCHUNK, n); i < qmin64(hi * QCHUNK, n); i++)
        store_real(d, ops[0], i, real_at(d, 1, ops[1], i));
}

LJ_INLINE void qbinary(const int64_t *d, void *const *ops, int64_t lo, int64_t hi, bool mul) {
    int64_t n = lj_numel(d, 0), sa[DESC_MAX_RANK], sb[DESC_MAX_RANK];
    int rank = lj_rank(d, 0);
    bool same = lj_numel(d, 1) == n && lj_numel(d, 2) == n;
    lj_bcast_strides(d, 1, lj_rank(d, 1), rank, sa);
    lj_bcast_strides(d, 2, lj_rank(d, 2), rank, sb);
    for (int64_t i = qmin64(lo * QCHUNK, n); i < qmin64(hi * QCHUNK, n); i++) {
        int64_t ia = same ? i : lj_bcast_offset(d, rank, sa, i);
        int64_t ib = same ? i : lj_bcast_offset(d, rank, sb, i);
        double u = real_at(d, 1, ops[1], ia);
        double v = real_at(d, 2, ops[2], ib);
        double r = mul ? u * v : u + v;
        store_real(d, ops[0], i, r);
    }
}

LIBJIT_WORK libjit_qadd_any_work(const int64_t *d) {
    return qchunks(lj_numel(d, 0));
}

LIBJIT_KERNEL libjit_qadd_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                              LjScratch *sc) {
    qbinary(d, ops, lo, hi, false);
}

LIBJIT_WORK libjit_qmul_any_work(const int64_t *d) {
    return qchunks(lj_numel(d, 0));
}

LIBJIT_KERNEL libjit_qmul_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                              LjScratch *sc) {
    qbinary(d, ops, lo, hi, true);
}

/* ---- pools ---------------------------------------------------------------------- */

/* A pool's window over the input's spatial axes: the interpreter's
 * window_from_node (defaults: stride 1, no padding, dilation 1). */
LJ_INLINE LjQWin qwin_of(const int64_t *d, int x_op) {
    LjQWin w = {.ns = lj_rank(d, x_op) - 2};
    for (int i = 0; i < w.ns; i++) {
        w.kernel[i] = lj_attr_at(d, AK_kernel, i, 1);
        w.stride[i] = lj_attr_at(d, AK_strides, i, 1);
        w.dilation[i] = lj_attr_at(d, AK_dilations, i, 1);
        w.pad_begin[i] = lj_attr_at(d, AK_pads, i, 0);
        w.pad_end[i] = lj_attr_at(d, AK_pads, w.ns + i, 0);
    }
    return w;
}

LJ_INLINE int64_t spatial(const int64_t *d, int k) {
    int64_t s = 1;
    for (int i = 2; i < lj_rank(d, k); i++)
        s *= lj_dim(d, k, i);
    return s;
}

/* One output element of a max or average pool of integers. The average
 * sums the reals in window order in double and divides by the count, as the
 * interpreter's float pool does on them; the maximum is the first largest
 * integer (0 when the window is all padding) and its index. */
LJ_INLINE void pool_point(const int64_t *d, const LjQWin *w, void *const *ops, int64_t pl,
                          int64_t op, bool avg) {
    int ns = w->ns, ex = lj_elem(d, lj_nres(d));
    const void *x = ops[lj_nres(d)];
    int64_t in_size = spatial(d, lj_nres(d)), oidx[DESC_MAX_RANK], kidx[DESC_MAX_RANK] = {0};
    int64_t ksize = 1, r = op;
    for (int i = ns - 1; i >= 0; i--) {
        oidx[i] = r % lj_dim(d, 0, 2 + i);
        r /= lj_dim(d, 0, 2 + i);
        ksize *= w->kernel[i];
    }
    bool col_major = lj_attr_int(d, AK_storage_order, 0) != 0;
    double acc = 0;
    int64_t best = 0, arg = -1, arg_index = -1, count = 0, padded = 0;
    for (int64_t kp = 0; kp < ksize; kp++) {
        int64_t off = 0, off_cm = 0;
        bool inside = true, in_padded = true;
        for (int i = 0; i < ns; i++) {
            int64_t q = oidx[i] * w->stride[i] - w->pad_begin[i] + kidx[i] * w->dilation[i];
            int64_t len = lj_dim(d, lj_nres(d), 2 + i);
            inside &= q >= 0 && q < len;
            in_padded &= q < len + w->pad_end[i];
            off = inside ? off * len + q : off;
        }
        for (int j = ns - 1; inside && col_major && j >= 0; j--) {
            int64_t q = oidx[j] * w->stride[j] - w->pad_begin[j] + kidx[j] * w->dilation[j];
            off_cm = off_cm * lj_dim(d, lj_nres(d), 2 + j) + q;
        }
        padded += in_padded;
        if (inside) {
            int64_t at = pl * in_size + off;
            count++;
            if (avg) {
                double v = real_at(d, lj_nres(d), x, at);
                acc += v;
            } else {
                int64_t v = lj_ld_i64(ex, x, at);
                if (arg < 0 || v > best) {
                    best = v;
                    arg = at;
                    arg_index = col_major ? pl * in_size + off_cm : at;
                }
            }
        }
        for (int i = ns - 1; i >= 0; i--) {
            if (++kidx[i] < w->kernel[i])
                break;
            kidx[i] = 0;
        }
    }
    int64_t yo = pl * spatial(d, 0) + op;
    if (avg) {
        bool include = lj_attr_int(d, AK_count_include_pad, 0) != 0;
        acc /= (double)(include ? padded : count ? count : 1);
        store_real(d, ops[0], yo, acc);
        return;
    }
    lj_st_i64(lj_elem(d, 0), ops[0], yo, arg >= 0 ? best : 0);
    if (lj_nres(d) == 2)
        ((int64_t *)ops[1])[yo] = arg_index;
}

/* Units: planes (image x channel). */
LJ_INLINE int64_t planes(const int64_t *d) {
    return lj_dim(d, 0, 0) * lj_dim(d, 0, 1);
}

/* A 2-D max pool without indices: the window's largest value (only the
 * value matters, so which of equal ones is first does not), 0 when the
 * window is all padding. */
LJ_INLINE void max_pool_2d(const int64_t *d, const LjQWin *w, void *const *ops, int64_t lo,
                           int64_t hi) {
    int e = lj_elem(d, 0);
    int64_t ih = lj_dim(d, 1, 2), iw = lj_dim(d, 1, 3), oh = lj_dim(d, 0, 2), ow = lj_dim(d, 0, 3);
    for (int64_t pl = lo; pl < hi; pl++)
        for (int64_t y = 0; y < oh; y++)
            for (int64_t x = 0; x < ow; x++) {
                int64_t best = 0;
                bool any = false;
                for (int64_t i = 0; i < w->kernel[0]; i++) {
                    int64_t yy = y * w->stride[0] - w->pad_begin[0] + i * w->dilation[0];
                    if (yy < 0 || yy >= ih)
                        continue;
                    for (int64_t j = 0; j < w->kernel[1]; j++) {
                        int64_t xx = x * w->stride[1] - w->pad_begin[1] + j * w->dilation[1];
                        if (xx < 0 || xx >= iw)
                            continue;
                        int64_t v = lj_ld_i64(e, ops[1], (pl * ih + yy) * iw + xx);
                        best = !any || v > best ? v : best;
                        any = true;
                    }
                }
                lj_st_i64(e, ops[0], (pl * oh + y) * ow + x, best);
            }
}

LJ_INLINE void pool_planes(const int64_t *d, void *const *ops, int64_t lo, int64_t hi, bool avg) {
    LjQWin w = qwin_of(d, lj_nres(d));
    if (!avg && w.ns == 2 && lj_nres(d) == 1) {
        if (!lj_qmax_pool_2d(d, &w, ops, lo, hi))
            max_pool_2d(d, &w, ops, lo, hi);
        return;
    }
    for (int64_t pl = lo; pl < hi; pl++)
        for (int64_t op = 0; op < spatial(d, 0); op++)
            pool_point(d, &w, ops, pl, op, avg);
}

LIBJIT_WORK libjit_qavg_pool_any_work(const int64_t *d) {
    return planes(d);
}

LIBJIT_KERNEL libjit_qavg_pool_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                   LjScratch *sc) {
    pool_planes(d, ops, lo, hi, true);
}

/* Integer max pools, one per kind the quantize pass and ONNX make. */
#define QMAX_POOL(E)                                                                              \
    LIBJIT_WORK libjit_max_pool_##E##_work(const int64_t *d) {                                    \
        return planes(d);                                                                         \
    }                                                                                             \
    LIBJIT_KERNEL libjit_max_pool_##E(const int64_t *d, void *const *ops, int64_t lo, int64_t hi, \
                                      LjScratch *sc) {                                            \
        pool_planes(d, ops, lo, hi, false);                                                       \
    }
QMAX_POOL(i8)
QMAX_POOL(u8)
QMAX_POOL(i32)

LIBJIT_WORK libjit_qglobal_avg_pool_any_work(const int64_t *d) {
    return planes(d);
}

/* A global average pool of bytes whose scale is an f32 (a Type's scale
 * is one; the descriptor carries it as a double) and positive, over fewer than 2^21
 * positions: each real scale * (x - zx) is a multiple of the scale's last
 * bit below 2^33 of them (24 significant bits times 9), and so is every
 * partial sum, below 2^53 of them, so the interpreter's chain of double
 * adds is exact: the sum is scale * S, S the integer sum of x - zx, which
 * one product gives exactly too. Summing the bytes as integers took
 * resnet50's pool (2048 planes of 49) from 0.09 ms to 0.03 (the double
 * chain waits on each add, and eight chains side by side did no better:
 * the loads and conversions cost as much; ONNX Runtime: 0.02). */
LJ_INLINE bool qgap_exact(int e, double scale, int64_t size) {
    return (e == ELEM_U8 || e == ELEM_I8) && scale > 0 && (double)(float)scale == scale &&
           size < (1 << 21);
}

/* The sum of n bytes (signed or not), LJ_VL at a time. */
LJ_INLINE int64_t qgap_bytes(bool sign, const uint8_t *p, int64_t n) {
    vi32 acc = (vi32){0};
    int64_t i = 0;
    for (; i + LJ_VL <= n; i += LJ_VL) {
        uint8_t __attribute__((vector_size(LJ_VL))) b;
        __builtin_memcpy(&b, p + i, sizeof b);
        acc += sign ? __builtin_convertvector((int8_t __attribute__((vector_size(LJ_VL))))b, vi32)
                    : __builtin_convertvector(b, vi32);
    }
    int64_t t = 0;
    for (int l = 0; l < LJ_VL; l++)
        t += acc[l];
    for (; i < n; i++)
        t += sign ? (int8_t)p[i] : p[i];
    return t;
}

LIBJIT_KERNEL libjit_qglobal_avg_pool_any(const int64_t *d, void *const *ops, int64_t lo,
                                          int64_t hi, LjScratch *sc) {
    int64_t size = spatial(d, 1);
    double scale = lj_qscale(d, 1);
    if (qgap_exact(lj_elem(d, 1), scale, size)) {
        bool sign = lj_elem(d, 1) == ELEM_I8;
        for (int64_t pl = lo; pl < hi; pl++) {
            int64_t s = qgap_bytes(sign, (const uint8_t *)ops[1] + pl * size, size) -
                        size * lj_qoffset(d, 1);
            store_real(d, ops[0], pl, scale * (double)s / (double)(size ? size : 1));
        }
        return;
    }
    for (int64_t pl = lo; pl < hi; pl++) {
        double acc = 0;
        for (int64_t i = 0; i < size; i++) {
            double v = real_at(d, 1, ops[1], pl * size + i);
            acc += v;
        }
        acc /= (double)(size ? size : 1);
        store_real(d, ops[0], pl, acc);
    }
}

/* ---- integer convolutions: the plain path --------------------------------------- */

/* Sum over the window of output position p of channel m, image nb:
 * (x - zx) * (w - zw), padding contributing nothing. */
LJ_INLINE int64_t conv_point(const LjQConv *g, int64_t nb, int64_t m, int64_t p) {
    int64_t opos[DESC_MAX_RANK], r = p, s = 0;
    for (int i = g->win.ns - 1; i >= 0; i--) {
        opos[i] = r % g->odims[i];
        r /= g->odims[i];
    }
    int64_t zw = g->zw_per_m ? lj_ld_i64(g->ezw, g->zw, m) : g->zw0;
    for (int64_t c = 0; c < g->cg; c++) {
        int64_t ci = (m / g->mg) * g->cg + c;
        for (int64_t kp = 0; kp < g->ksize; kp++) {
            int64_t rr = kp, xoff = 0, stride = 1;
            bool inside = true;
            for (int i = g->win.ns - 1; i >= 0; i--) {
                int64_t kk = rr % g->win.kernel[i];
                rr /= g->win.kernel[i];
                int64_t ip = opos[i] * g->win.stride[i] - g->win.pad_begin[i] +
                             kk * g->win.dilation[i];
                inside &= ip >= 0 && ip < g->idims[i];
                xoff += ip * stride;
                stride *= g->idims[i];
            }
            if (!inside)
                continue;
            int64_t xv = lj_ld_i64(g->ex, g->x, (nb * g->cin + ci) * stride + xoff);
            int64_t wv = lj_ld_i64(g->ew, g->w, (m * g->cg + c) * g->ksize + kp);
            s += (xv - g->zx) * (wv - zw);
        }
    }
    return s;
}

/* Units: (image, output channel) pairs. */
LJ_INLINE void conv_plain(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                          bool requant) {
    LjQConv g = lj_qconv_of(d, ops, requant);
    for (int64_t u = lo; u < hi; u++) {
        int64_t nb = u / g.cout, m = u % g.cout;
        for (int64_t p = 0; p < g.out_size; p++) {
            int64_t s = conv_point(&g, nb, m, p), yo = u * g.out_size + p;
            if (requant)
                lj_qconv_store(&g, yo, m, s);
            else
                lj_st_i64(lj_elem(d, 0), ops[0], yo, s);
        }
    }
}

LIBJIT_WORK libjit_conv_integer_any_work(const int64_t *d) {
    return lj_dim(d, 0, 0) * lj_dim(d, 0, 1);
}

LIBJIT_KERNEL libjit_conv_integer_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                      LjScratch *sc) {
    conv_plain(d, ops, lo, hi, false);
}

LIBJIT_WORK libjit_qlinear_conv_any_work(const int64_t *d) {
    return lj_dim(d, 0, 0) * lj_dim(d, 0, 1);
}

LIBJIT_KERNEL libjit_qlinear_conv_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                      LjScratch *sc) {
    conv_plain(d, ops, lo, hi, true);
}

/* ---- integer matrix products ------------------------------------------------------ */

/* numpy matmul of a [..., M, K] and b [..., K, N] (a 1-D a is [1, K], a
 * 1-D b [K, 1]): a_op, b_op, their zero points' operands. */
typedef struct QMat {
    int64_t m, n, k, nbatch;
    int ra, rb, ry;
} QMat;

LJ_INLINE QMat qmat_of(const int64_t *d, int a_op, int b_op) {
    QMat q = {.ra = lj_rank(d, a_op), .rb = lj_rank(d, b_op), .ry = lj_rank(d, 0)};
    q.k = lj_dim(d, a_op, q.ra - 1);
    q.m = q.ra == 1 ? 1 : lj_dim(d, a_op, q.ra - 2);
    q.n = q.rb == 1 ? 1 : lj_dim(d, b_op, q.rb - 1);
    q.nbatch = lj_numel(d, 0) / (q.m * q.n ? q.m * q.n : 1);
    return q;
}

/* The batch offset (in matrices) of operand k for batch index b of the
 * result, whose batch axes are the result's leading ry - (2 or fewer). */
LJ_INLINE int64_t qmat_batch(const int64_t *d, int k, int mat_rank, int64_t b, const QMat *q) {
    int rk = lj_rank(d, k) - mat_rank; /* operand's batch axes */
    int yb = q->ry - ((q->ra == 1 ? 0 : 1) + (q->rb == 1 ? 0 : 1)); /* result's */
    int64_t st[DESC_MAX_RANK];
    lj_bcast_strides(d, k, rk, yb, st);
    return lj_bcast_offset(d, yb, st, b);
}

/* Result element i's sum (a - za) x (b - zb): za one value or one per row
 * of a, zb one or one per column of b. */
LJ_INLINE int64_t qmat_sum(const int64_t *d, void *const *ops, const QMat *q, int a_op, int za_op,
                           int b_op, int zb_op, int64_t i) {
    int64_t j = i % q->n, r = i / q->n % q->m, b = i / (q->m * q->n);
    int64_t oa = qmat_batch(d, a_op, q->ra == 1 ? 1 : 2, b, q) * q->m * q->k;
    int64_t ob = qmat_batch(d, b_op, q->rb == 1 ? 1 : 2, b, q) * q->k * q->n;
    int64_t za = lj_ld_i64(lj_elem(d, za_op), ops[za_op], lj_numel(d, za_op) > 1 ? r : 0);
    int64_t zb = lj_ld_i64(lj_elem(d, zb_op), ops[zb_op], lj_numel(d, zb_op) > 1 ? j : 0);
    int ea = lj_elem(d, a_op), eb = lj_elem(d, b_op);
    int64_t s = 0;
    for (int64_t p = 0; p < q->k; p++)
        s += (lj_ld_i64(ea, ops[a_op], oa + r * q->k + p) - za) *
             (lj_ld_i64(eb, ops[b_op], ob + p * q->n + j) - zb);
    return s;
}

LIBJIT_WORK libjit_matmul_integer_any_work(const int64_t *d) {
    return qchunks(lj_numel(d, 0));
}

/* (y; a, b, a_zp, b_zp) */
LIBJIT_KERNEL libjit_matmul_integer_any(const int64_t *d, void *const *ops, int64_t lo,
                                        int64_t hi, LjScratch *sc) {
    QMat q = qmat_of(d, 1, 2);
    int64_t n = lj_numel(d, 0);
    for (int64_t i = qmin64(lo * QCHUNK, n); i < qmin64(hi * QCHUNK, n); i++)
        lj_st_i64(lj_elem(d, 0), ops[0], i, qmat_sum(d, ops, &q, 1, 3, 2, 4, i));
}

LIBJIT_WORK libjit_qlinear_matmul_any_work(const int64_t *d) {
    return qchunks(lj_numel(d, 0));
}

/* (y; a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp): the f32
 * multiplier a_scale * b_scale / y_scale, as the interpreter forms it. */
LIBJIT_KERNEL libjit_qlinear_matmul_any(const int64_t *d, void *const *ops, int64_t lo,
                                        int64_t hi, LjScratch *sc) {
    QMat q = qmat_of(d, 1, 4);
    int64_t n = lj_numel(d, 0), yz = lj_ld_i64(lj_elem(d, 8), ops[8], 0);
    bool row = lj_numel(d, 2) > 1, col = lj_numel(d, 5) > 1;
    float ys = (float)lj_ld_f64(lj_elem(d, 7), ops[7], 0);
    for (int64_t i = qmin64(lo * QCHUNK, n); i < qmin64(hi * QCHUNK, n); i++) {
        int64_t j = i % q.n, r = i / q.n % q.m;
        float as = (float)lj_ld_f64(lj_elem(d, 2), ops[2], row ? r : 0);
        float bs = (float)lj_ld_f64(lj_elem(d, 5), ops[5], col ? j : 0);
        float mult = as * bs / ys;
        int64_t s = qmat_sum(d, ops, &q, 1, 3, 4, 6, i);
        lj_store_q(lj_elem(d, 0), ops[0], i, (double)s * mult, yz);
    }
}
