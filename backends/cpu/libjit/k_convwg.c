/* A convolution's weight gradient (conv_weight_grad, from the differentiate
 * pass) of 1 to 3 spatial axes:
 *
 *     dW[m][c * taps + tap] = sum over images b and output positions p of
 *                             dy[b][m][p] * x[b][group(m) * cg + c][at(p, tap)]
 *
 * where at(p, tap) is the input position the tap reads from p (nothing in
 * the padding). Operands: dW, x, dy. */
#include "backends/cpu/libjit/elem.h"
#include "backends/cpu/libjit/gemm.h"
#include "backends/cpu/libjit/kernels.h"

typedef LjConvGeom Wg;

/* Operands: dw, x, dy; dw is [M][C/group][k...]. */
LJ_INLINE Wg wg_plan(const int64_t *d) {
    return lj_conv_geom(d, 1, 2, 0);
}

LJ_INLINE void wg_tap(const Wg *g, int64_t kp, int64_t *kidx) {
    for (int i = g->ns - 1; i >= 0; i--) {
        kidx[i] = kp % g->k[i];
        kp /= g->k[i];
    }
}

LIBJIT_WORK libjit_conv_weight_grad_any_work(const int64_t *d) {
    Wg g = wg_plan(d);
    return g.m > 0 ? g.m : 1;
}

/* Rows [lo, hi) of dW, in double, every float kind: the interpreter's sum. */
LIBJIT_KERNEL libjit_conv_weight_grad_any(const int64_t *d, void *const *ops, int64_t lo,
                                          int64_t hi, LjScratch *sc) {
    Wg g = wg_plan(d);
    int ew = lj_elem(d, 0), ex = lj_elem(d, 1), ey = lj_elem(d, 2);
    if (g.ns < 1 || g.ns > LJ_CONV_MAX)
        return;
    for (int64_t m = lo; m < hi && m < g.m; m++) {
        int64_t gr = m / g.mg;
        for (int64_t r = 0; r < g.kdim; r++) {
            int64_t c = gr * g.cg + r / g.ksize, kidx[LJ_CONV_MAX];
            wg_tap(&g, r % g.ksize, kidx);
            double acc = 0;
            for (int64_t b = 0; b < g.n; b++)
                for (int64_t p = 0; p < g.out_size; p++) {
                    int64_t off = 0, pr = p, o[LJ_CONV_MAX];
                    for (int i = g.ns - 1; i >= 0; i--) {
                        o[i] = pr % g.out[i];
                        pr /= g.out[i];
                    }
                    for (int i = 0; i < g.ns && off >= 0; i++) {
                        int64_t q = o[i] * g.st[i] - g.pad[i] + kidx[i] * g.dil[i];
                        off = q < 0 || q >= g.in[i] ? -1 : off * g.in[i] + q;
                    }
                    if (off >= 0)
                        acc += lj_ld_f64(ex, ops[1], (b * g.c + c) * g.in_size + off) *
                               lj_ld_f64(ey, ops[2], (b * g.m + m) * g.out_size + p);
                }
            lj_st_f64(ew, ops[0], m * g.kdim + r, acc);
        }
    }
}

/* ---- f32: a matrix product over the batch ----------------------------------- */

/* Per group, dW_g [mg][kdim] = sum over images b of dy_b [mg][out] times
 * the transposed column matrix [out][kdim] (im2col of x_b). A unit of work
 * is a block of WG_COLS columns of dW_g (channel x tap), which it alone
 * writes: units run on any thread, and no unit repeats another's im2col.
 * dy is read in place as the product's A (its rows are broadcast); the
 * column block is built WG_POS output positions at a time, so it stays in
 * L2, and the product of each block is added into dW. */
enum { WG_COLS = 2 * LJ_GEMM_NR, WG_POS = 256 };

LJ_INLINE bool wg_fast(const int64_t *d, const Wg *g) {
    bool fast = g->ns >= 1 && g->ns <= LJ_CONV_MAX && g->mg > 0 && g->kdim > 0;
    for (int k = 0; k < 3; k++)
        fast = fast && lj_elem(d, k) == ELEM_F32;
    return fast;
}

LJ_INLINE int64_t wg_blocks(const Wg *g) {
    return (g->kdim + WG_COLS - 1) / WG_COLS;
}

LIBJIT_WORK libjit_conv_weight_grad_f32_work(const int64_t *d) {
    Wg g = wg_plan(d);
    if (!wg_fast(d, &g))
        return libjit_conv_weight_grad_any_work(d);
    int64_t n = g.group * wg_blocks(&g);
    return n > 0 ? n : 1;
}

LJ_INLINE int64_t wg_pos(const Wg *g) {
    return g->out_size < WG_POS ? g->out_size : WG_POS;
}

/* PLANES: the column block [WG_POS][WG_COLS] and the product [mg][WG_COLS];
 * PACK: the product's. */
LIBJIT_SCRATCH libjit_conv_weight_grad_f32_scratch(const int64_t *d, int slot) {
    Wg g = wg_plan(d);
    if (!wg_fast(d, &g))
        return 0;
    if (slot == LJ_SCRATCH_PLANES)
        return (wg_pos(&g) + g.mg) * WG_COLS * (int64_t)sizeof(float);
    return slot == LJ_SCRATCH_PACK ? (int64_t)lj_sgemm_scratch(g.mg, WG_COLS, wg_pos(&g), false)
                                   : 0;
}

/* Column jj of the block (ldc apart): channel plane x's values that tap
 * kidx reads at output positions p0 .. p0 + np, zero in the padding. The
 * positions go along the last axis in runs, whose input index moves by the
 * stride. */
LJ_INLINE void wg_im2col(const Wg *g, const float *x, const int64_t *kidx, int64_t p0,
                         int64_t np, float *col, int64_t ldc) {
    int last = g->ns - 1;
    int64_t o[LJ_CONV_MAX], pr = p0;
    for (int i = last; i >= 0; i--) {
        o[i] = pr % g->out[i];
        pr /= g->out[i];
    }
    int64_t st = g->st[last], nin = g->in[last];
    int64_t off = kidx[last] * g->dil[last] - g->pad[last];
    for (int64_t p = 0; p < np;) {
        int64_t run = g->out[last] - o[last] < np - p ? g->out[last] - o[last] : np - p;
        int64_t base = 0;
        bool ok = true;
        for (int i = 0; i < last && ok; i++) {
            int64_t q = o[i] * g->st[i] - g->pad[i] + kidx[i] * g->dil[i];
            ok = q >= 0 && q < g->in[i];
            base = base * g->in[i] + q;
        }
        const float *row = x + base * nin;
        for (int64_t t = 0; t < run; t++) {
            int64_t q = (o[last] + t) * st + off;
            col[(p + t) * ldc] = ok && q >= 0 && q < nin ? row[q] : 0.0f;
        }
        p += run;
        o[last] += run;
        for (int i = last; i > 0 && o[i] == g->out[i]; i--) {
            o[i] = 0;
            o[i - 1]++;
        }
    }
}

LJ_INLINE void wg_unit(const Wg *g, void *const *ops, int64_t u, float *buf, LjScratch *sc) {
    int64_t nblk = wg_blocks(g), gr = u / nblk, j0 = u % nblk * WG_COLS;
    int64_t nj = g->kdim - j0 < WG_COLS ? g->kdim - j0 : WG_COLS, npos = wg_pos(g);
    float *colb = buf, *prod = buf + npos * WG_COLS;
    float *dw = (float *)ops[0] + gr * g->mg * g->kdim + j0;
    for (int64_t m = 0; m < g->mg; m++)
        for (int64_t j = 0; j < nj; j++)
            dw[m * g->kdim + j] = 0.0f;
    int64_t taps[WG_COLS][LJ_CONV_MAX];
    for (int64_t j = 0; j < nj; j++)
        wg_tap(g, (j0 + j) % g->ksize, taps[j]);
    for (int64_t b = 0; b < g->n; b++) {
        const float *x = (const float *)ops[1] + (b * g->c + gr * g->cg) * g->in_size;
        const float *dy = (const float *)ops[2] + (b * g->m + gr * g->mg) * g->out_size;
        for (int64_t p0 = 0; p0 < g->out_size; p0 += npos) {
            int64_t np = g->out_size - p0 < npos ? g->out_size - p0 : npos;
            for (int64_t j = 0; j < nj; j++)
                wg_im2col(g, x + (j0 + j) / g->ksize * g->in_size, taps[j], p0, np, colb + j,
                          nj);
            LjGemm gm = {.m = g->mg, .n = nj, .k = np, .a = dy + p0, .lda = g->out_size,
                         .b = colb, .ldb = nj, .c = prod, .ldc = nj, .sc = sc};
            lj_sgemm(&gm);
            for (int64_t m = 0; m < g->mg; m++)
                for (int64_t j = 0; j < nj; j++)
                    dw[m * g->kdim + j] += prod[m * nj + j];
        }
    }
}

/* Units [lo, hi) of group * column blocks; shapes and kinds it does not
 * take go to the kernel above, whose units are then rows of dW. */
LIBJIT_KERNEL libjit_conv_weight_grad_f32(const int64_t *d, void *const *ops, int64_t lo,
                                          int64_t hi, LjScratch *sc) {
    Wg g = wg_plan(d);
    if (!wg_fast(d, &g)) {
        libjit_conv_weight_grad_any(d, ops, lo, hi, sc);
        return;
    }
    size_t bytes = (size_t)libjit_conv_weight_grad_f32_scratch(d, LJ_SCRATCH_PLANES);
    float *buf = lj_scratch_get(sc, LJ_SCRATCH_PLANES, bytes);
    int64_t nblk = wg_blocks(&g);
    for (int64_t u = lo; u < hi && u < g.group * nblk; u++) {
        if (buf) {
            wg_unit(&g, ops, u, buf, sc);
            continue;
        }
        /* No scratch: the unit's group's rows by the sum above, once per group. */
        if (u % nblk == 0)
            libjit_conv_weight_grad_any(d, ops, u / nblk * g.mg, (u / nblk + 1) * g.mg, sc);
    }
    if (buf)
        lj_scratch_put(sc, buf);
}
