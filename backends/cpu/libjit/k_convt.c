/* Transposed convolution (ConvTranspose) of 1 to 3 spatial axes, every
 * float kind, as libjit_conv_transpose_any. Written as a gather: each
 * output element sums, over its group's input channels and the kernel taps
 * whose input position q = (o + pad_begin - k * dilation) / stride is a
 * whole number inside the input, x * w -- no scatter, so output planes are
 * independent units of work and no element is written twice. Sums run in
 * double and round once (the interpreter's f32 path sums in f32 with a
 * matrix product: the two differ within its rounding, see the kernel
 * test). */
#include "backends/cpu/libjit/elem.h"
#include "backends/cpu/libjit/gemm.h"
#include "backends/cpu/libjit/kernels.h"

typedef LjConvGeom Ct;

/* Operands: y, x, w[, bias]; w is [C][M/group][k...]. */
LJ_INLINE Ct ct_plan(const int64_t *d) {
    return lj_conv_geom(d, 1, 0, 2);
}

LIBJIT_WORK libjit_conv_transpose_any_work(const int64_t *d) {
    Ct g = ct_plan(d);
    return g.n * g.m > 0 ? g.n * g.m : 1;
}

/* Output planes [lo, hi) of N * M. */
LIBJIT_KERNEL libjit_conv_transpose_any(const int64_t *d, void *const *ops, int64_t lo,
                                        int64_t hi, LjScratch *sc) {
    Ct g = ct_plan(d);
    int ey = lj_elem(d, 0), ex = lj_elem(d, 1), ew = lj_elem(d, 2);
    bool has_bias = lj_nops(d) == 4;
    int eb = has_bias ? lj_elem(d, 3) : ey;
    if (g.ns < 1 || g.ns > LJ_CONV_MAX)
        return;
    for (int64_t pl = lo; pl < hi && pl < g.n * g.m; pl++) {
        int64_t b = pl / g.m, m = pl % g.m, gr = m / g.mg, mm = m % g.mg;
        double bias = has_bias ? lj_ld_f64(eb, ops[3], m) : 0;
        for (int64_t op = 0; op < g.out_size; op++) {
            int64_t o[LJ_CONV_MAX] = {0}, r = op;
            for (int i = g.ns - 1; i >= 0; i--) {
                o[i] = r % g.out[i];
                r /= g.out[i];
            }
            double acc = 0;
            for (int64_t kp = 0; kp < g.ksize; kp++) {
                int64_t ip = 0, kr = kp, kidx[LJ_CONV_MAX];
                bool ok = true;
                for (int i = g.ns - 1; i >= 0; i--) {
                    kidx[i] = kr % g.k[i];
                    kr /= g.k[i];
                }
                for (int i = 0; i < g.ns && ok; i++) {
                    int64_t t = o[i] + g.pad[i] - kidx[i] * g.dil[i];
                    ok = t >= 0 && t % g.st[i] == 0 && t / g.st[i] < g.in[i];
                    ip = ip * g.in[i] + (ok ? t / g.st[i] : 0);
                }
                if (!ok)
                    continue;
                for (int64_t c = 0; c < g.cg; c++) {
                    int64_t ch = gr * g.cg + c;
                    double x = lj_ld_f64(ex, ops[1], (b * g.c + ch) * g.in_size + ip);
                    double w = lj_ld_f64(ew, ops[2], (ch * g.mg + mm) * g.ksize + kp);
                    acc += x * w;
                }
            }
            lj_st_f64(ey, ops[0], pl * g.out_size + op, acc + bias);
        }
    }
}

/* ---- f32: a matrix product and col2im --------------------------------------- */

/* The f32 kernel turns the gather above around (Caffe's and ORT's
 * formulation): per (image, group), the product of the transposed weights
 * [mg * taps][cg] and the input [cg][in_size] gives every (output channel,
 * tap)'s contribution of every input position -- the column matrix -- and
 * col2im adds each into the output position it lands on. The product is
 * lj_sgemm's (the same engine as conv), so almost all the work is
 * vectorised FMAs; col2im is one add per column entry, a vectorisable run
 * where the stride is 1. A unit of work is a block of CT_ROWS rows (whole
 * output channels) of one (image, group): its planes are written by it
 * alone, so units run on any thread. The input is taken CT_COLS columns at
 * a time so that the column block stays in L2 while col2im reads it. */
enum { CT_ROWS = 64, CT_COLS = 8 * LJ_GEMM_NR };

typedef struct CtF {
    Ct g;
    bool fast;
    int64_t mb, nblk; /* output channels per unit, units per (image, group) */
} CtF;

LJ_INLINE CtF ctf_plan(const int64_t *d) {
    CtF p = {.g = ct_plan(d)};
    p.fast = p.g.ns >= 1 && p.g.ns <= LJ_CONV_MAX && p.g.mg > 0 && p.g.cg > 0;
    for (int k = 1; k < lj_nops(d); k++)
        p.fast = p.fast && lj_elem(d, k) == ELEM_F32;
    if (!p.fast)
        return p;
    p.mb = (CT_ROWS + p.g.ksize - 1) / p.g.ksize;
    p.mb = p.mb < p.g.mg ? p.mb : p.g.mg;
    p.nblk = (p.g.mg + p.mb - 1) / p.mb;
    return p;
}

LJ_INLINE int64_t ctf_cols(const Ct *g) {
    return g->in_size < CT_COLS ? g->in_size : CT_COLS;
}

LIBJIT_WORK libjit_conv_transpose_f32_work(const int64_t *d) {
    CtF p = ctf_plan(d);
    if (!p.fast)
        return libjit_conv_transpose_any_work(d);
    int64_t n = p.g.n * p.g.group * p.nblk;
    return n > 0 ? n : 1;
}

/* PLANES: the unit's transposed weights and its column block; PACK: the
 * product's. */
LIBJIT_SCRATCH libjit_conv_transpose_f32_scratch(const int64_t *d, int slot) {
    CtF p = ctf_plan(d);
    if (!p.fast)
        return 0;
    int64_t rows = p.mb * p.g.ksize, cols = ctf_cols(&p.g);
    if (slot == LJ_SCRATCH_PLANES)
        return rows * (p.g.cg + cols) * (int64_t)sizeof(float);
    return slot == LJ_SCRATCH_PACK ? (int64_t)lj_sgemm_scratch(rows, cols, p.g.cg, false) : 0;
}

/* Adds row `col` of the column block (input positions j0..j1 of the
 * flattened input plane) into `plane`, the output channel's, at the
 * positions tap kidx sends them to: o = q * stride + k * dilation - pad on
 * each axis. Runs along the last axis, whose valid q are [qlo, qhi). */
LJ_INLINE void ct_col2im(const Ct *g, const float *col, int64_t j0, int64_t j1,
                         const int64_t *kidx, float *plane) {
    int last = g->ns - 1;
    int64_t off[LJ_CONV_MAX];
    for (int i = 0; i < g->ns; i++)
        off[i] = kidx[i] * g->dil[i] - g->pad[i];
    int64_t st = g->st[last], nin = g->in[last], nout = g->out[last];
    int64_t qlo = off[last] >= 0 ? 0 : (-off[last] + st - 1) / st;
    int64_t qhi = nout - off[last] <= 0 ? 0 : (nout - off[last] + st - 1) / st;
    qhi = qhi < nin ? qhi : nin;
    for (int64_t ip = j0; ip < j1;) {
        int64_t q = ip % nin, row = ip - q, end = row + nin < j1 ? row + nin : j1;
        int64_t base = 0, r = ip / nin, qs[LJ_CONV_MAX];
        bool ok = true;
        for (int i = last - 1; i >= 0; i--) {
            qs[i] = r % g->in[i];
            r /= g->in[i];
        }
        for (int i = 0; i < last && ok; i++) {
            int64_t o = qs[i] * g->st[i] + off[i];
            ok = o >= 0 && o < g->out[i];
            base = base * g->out[i] + o;
        }
        int64_t a = q > qlo ? q : qlo, b = end - row < qhi ? end - row : qhi;
        if (ok) {
            float *y = plane + base * nout;
            const float *c = col + row - j0;
            int64_t o = off[last];
            if (st == 1)
                for (int64_t k = a; k < b; k++)
                    y[k + o] += c[k];
            else
                for (int64_t k = a; k < b; k++)
                    y[k * st + o] += c[k];
        }
        ip = end;
    }
}

/* One unit: output channels [m0, m0 + nm) of group gr of image b. */
LJ_INLINE void ctf_unit(const CtF *p, void *const *ops, bool has_bias, int64_t u, float *buf,
                        LjScratch *sc) {
    const Ct *g = &p->g;
    int64_t blk = u % p->nblk, gr = u / p->nblk % g->group, b = u / p->nblk / g->group;
    int64_t m0 = blk * p->mb, nm = g->mg - m0 < p->mb ? g->mg - m0 : p->mb;
    int64_t rows = nm * g->ksize, cols = ctf_cols(g);
    const float *x = (const float *)ops[1] + (b * g->c + gr * g->cg) * g->in_size;
    const float *w = (const float *)ops[2] + gr * g->cg * g->mg * g->ksize + m0 * g->ksize;
    float *at = buf, *colb = buf + rows * g->cg;
    float *y = (float *)ops[0] + (b * g->m + gr * g->mg + m0) * g->out_size;
    /* at[r][c] = w[c][m0 + r / taps][r % taps]: row r of the product is
     * (output channel, tap); each input channel's rows are contiguous. */
    for (int64_t c = 0; c < g->cg; c++)
        for (int64_t r = 0; r < rows; r++)
            at[r * g->cg + c] = w[c * g->mg * g->ksize + r];
    for (int64_t mm = 0; mm < nm; mm++) {
        float v = has_bias ? ((const float *)ops[3])[gr * g->mg + m0 + mm] : 0.0f;
        for (int64_t o = 0; o < g->out_size; o++)
            y[mm * g->out_size + o] = v;
    }
    for (int64_t j0 = 0; j0 < g->in_size; j0 += cols) {
        int64_t n = g->in_size - j0 < cols ? g->in_size - j0 : cols;
        LjGemm gm = {.m = rows, .n = n, .k = g->cg, .a = at, .lda = g->cg, .b = x + j0,
                     .ldb = g->in_size, .c = colb, .ldc = n, .sc = sc};
        lj_sgemm(&gm);
        for (int64_t r = 0; r < rows; r++) {
            int64_t kidx[LJ_CONV_MAX], kr = r % g->ksize;
            for (int i = g->ns - 1; i >= 0; i--) {
                kidx[i] = kr % g->k[i];
                kr /= g->k[i];
            }
            ct_col2im(g, colb + r * n, j0, j0 + n, kidx, y + r / g->ksize * g->out_size);
        }
    }
}

/* Units [lo, hi) of N * group * nblk; shapes and kinds it does not take
 * go to the kernel above, whose units are then output planes. */
LIBJIT_KERNEL libjit_conv_transpose_f32(const int64_t *d, void *const *ops, int64_t lo,
                                        int64_t hi, LjScratch *sc) {
    CtF p = ctf_plan(d);
    if (!p.fast) {
        libjit_conv_transpose_any(d, ops, lo, hi, sc);
        return;
    }
    size_t bytes = (size_t)libjit_conv_transpose_f32_scratch(d, LJ_SCRATCH_PLANES);
    float *buf = lj_scratch_get(sc, LJ_SCRATCH_PLANES, bytes);
    for (int64_t u = lo; u < hi && u < p.g.n * p.g.group * p.nblk; u++) {
        if (buf) {
            ctf_unit(&p, ops, lj_nops(d) == 4, u, buf, sc);
            continue;
        }
        /* No scratch: the unit's planes by the gather. */
        int64_t first = u / p.nblk * p.g.mg + u % p.nblk * p.mb;
        int64_t last = first + (p.g.mg - u % p.nblk * p.mb < p.mb ? p.g.mg - u % p.nblk * p.mb : p.mb);
        libjit_conv_transpose_any(d, ops, first, last, sc);
    }
    if (buf)
        lj_scratch_put(sc, buf);
}
