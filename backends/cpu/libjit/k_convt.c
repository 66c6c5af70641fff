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
#include "backends/cpu/libjit/kernels.h"

enum { CT_MAX = 3 };

typedef struct Ct {
    int ns;
    int64_t n, c, m, group, cg, mg;
    int64_t in[CT_MAX], out[CT_MAX], k[CT_MAX], st[CT_MAX], pad[CT_MAX], dil[CT_MAX];
    int64_t in_size, out_size, ksize;
} Ct;

LJ_INLINE int64_t ints_at(const int64_t *d, int key, int i, int64_t dflt) {
    int n;
    const int64_t *v = lj_attr(d, key, &n);
    return v && i < n ? v[i] : dflt;
}

/* Operands: y, x, w[, bias]; w is [C][M/group][k...]. */
LJ_INLINE Ct ct_plan(const int64_t *d) {
    Ct g = {.ns = lj_rank(d, 1) - 2};
    g.n = lj_dim(d, 1, 0);
    g.c = lj_dim(d, 1, 1);
    g.m = lj_dim(d, 0, 1);
    g.group = lj_attr_int(d, AK_group, 1);
    g.cg = g.c / g.group;
    g.mg = g.m / g.group;
    g.in_size = g.out_size = g.ksize = 1;
    for (int i = 0; i < g.ns && i < CT_MAX; i++) {
        g.in[i] = lj_dim(d, 1, 2 + i);
        g.out[i] = lj_dim(d, 0, 2 + i);
        g.k[i] = lj_dim(d, 2, 2 + i);
        g.st[i] = ints_at(d, AK_strides, i, 1);
        g.pad[i] = ints_at(d, AK_pads, i, 0);
        g.dil[i] = ints_at(d, AK_dilations, i, 1);
        g.in_size *= g.in[i];
        g.out_size *= g.out[i];
        g.ksize *= g.k[i];
    }
    return g;
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
    if (g.ns < 1 || g.ns > CT_MAX)
        return;
    for (int64_t pl = lo; pl < hi && pl < g.n * g.m; pl++) {
        int64_t b = pl / g.m, m = pl % g.m, gr = m / g.mg, mm = m % g.mg;
        double bias = has_bias ? lj_ld_f64(eb, ops[3], m) : 0;
        for (int64_t op = 0; op < g.out_size; op++) {
            int64_t o[CT_MAX] = {0}, r = op;
            for (int i = g.ns - 1; i >= 0; i--) {
                o[i] = r % g.out[i];
                r /= g.out[i];
            }
            double acc = 0;
            for (int64_t kp = 0; kp < g.ksize; kp++) {
                int64_t ip = 0, kr = kp, kidx[CT_MAX];
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
