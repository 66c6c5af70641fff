/* What the integer kernels (k_qint.c) and the fast quantized convolution
 * (k_qconv.c) share: a convolution's geometry and zero points read from its
 * descriptor, and the interpreter's requantizing store. */
#ifndef GLOWC_LIBJIT_K_QINT_H
#define GLOWC_LIBJIT_K_QINT_H

#include <math.h>

#include "backends/cpu/libjit/elem.h"
#include "backends/cpu/libjit/kernels.h"

/* Rounds half to even, adds the zero point, saturates to kind e's range:
 * the interpreter's store_quantized, in the same double operations. */
LJ_INLINE void lj_store_q(int e, void *y, int64_t i, double v, int64_t zp) {
    double lo = e == ELEM_I8 ? -128.0 : e == ELEM_I16 ? -32768.0 : e == ELEM_I32 ? -2147483648.0 : 0.0;
    double hi = e == ELEM_I8    ? 127.0
                : e == ELEM_I16 ? 32767.0
                : e == ELEM_I32 ? 2147483647.0
                : e == ELEM_U8  ? 255.0
                : e == ELEM_U16 ? 65535.0
                                : 9223372036854775807.0;
    double q = nearbyint(v) + (double)zp;
    lj_st_i64(e, y, i, (int64_t)(q != q ? lo : q < lo ? lo : q > hi ? hi : q));
}

typedef struct LjQWin {
    int ns;
    int64_t kernel[DESC_MAX_RANK], stride[DESC_MAX_RANK], dilation[DESC_MAX_RANK];
    int64_t pad_begin[DESC_MAX_RANK], pad_end[DESC_MAX_RANK];
} LjQWin;

/* A 2-D max pool without indices of i8 or u8 planes [lo, hi), in vectors
 * (k_qvec.c); false for shapes and kinds it leaves to the scalar loop. */
bool lj_qmax_pool_2d(const int64_t *d, const LjQWin *w, void *const *ops, int64_t lo, int64_t hi);

/* y[0, n) (i8 or u8) from sums: acc[t] + base - zsx sx[t] (sx read only
 * when zsx is not 0) times mult, then lj_store_q's steps, in vectors
 * (k_qvec.c). */
void lj_qrequant_row(int ey, void *y, const int32_t *acc, const int32_t *sx, int64_t zsx,
                     int64_t base, double mult, double yz, int64_t n);

/* conv_integer (y; x, w, x_zp, w_zp) and qlinear_conv (y; x, x_scale,
 * x_zp, w, w_scale, w_zp, y_scale, y_zp, bias?) alike. */
typedef struct LjQConv {
    LjQWin win;
    int64_t batch, cin, cout, cg, mg, group, ksize, out_size, in_size;
    int64_t idims[DESC_MAX_RANK], odims[DESC_MAX_RANK];
    int ex, ew, ezw, ey, ews, ebias;
    const void *x, *w, *zw, *ws, *bias;
    void *y;
    int64_t zx, zw0, yz;
    bool zw_per_m, ws_per_m;
    float xs, ys;
} LjQConv;

LJ_INLINE LjQConv lj_qconv_of(const int64_t *d, void *const *ops, bool requant) {
    int xo = 1, wo = requant ? 4 : 2, zxo = requant ? 3 : 3, zwo = requant ? 6 : 4;
    LjQConv g = {.batch = lj_dim(d, xo, 0), .cin = lj_dim(d, xo, 1), .cout = lj_dim(d, 0, 1)};
    g.win.ns = lj_rank(d, xo) - 2;
    g.group = lj_attr_int(d, AK_group, 1);
    g.cg = g.cin / g.group;
    g.mg = g.cout / g.group;
    g.ksize = 1;
    g.out_size = 1;
    g.in_size = 1;
    for (int i = 0; i < g.win.ns; i++) {
        g.win.kernel[i] = lj_dim(d, wo, 2 + i);
        g.win.stride[i] = lj_attr_at(d, AK_strides, i, 1);
        g.win.dilation[i] = lj_attr_at(d, AK_dilations, i, 1);
        g.win.pad_begin[i] = lj_attr_at(d, AK_pads, i, 0);
        g.win.pad_end[i] = lj_attr_at(d, AK_pads, g.win.ns + i, 0);
        g.idims[i] = lj_dim(d, xo, 2 + i);
        g.odims[i] = lj_dim(d, 0, 2 + i);
        g.ksize *= g.win.kernel[i];
        g.out_size *= g.odims[i];
        g.in_size *= g.idims[i];
    }
    g.ex = lj_elem(d, xo);
    g.ew = lj_elem(d, wo);
    g.ey = lj_elem(d, 0);
    g.ebias = lj_nops(d) == 10 ? lj_elem(d, 9) : 0;
    if (!ops) /* the geometry alone (a kernel's _work and _scratch) */
        return g;
    g.ew = lj_elem(d, wo);
    g.ezw = lj_elem(d, zwo);
    g.ey = lj_elem(d, 0);
    g.x = ops[xo];
    g.w = ops[wo];
    g.zw = ops[zwo];
    g.y = ops[0];
    g.zx = lj_ld_i64(lj_elem(d, zxo), ops[zxo], 0);
    g.zw_per_m = lj_numel(d, zwo) > 1;
    g.zw0 = lj_ld_i64(g.ezw, g.zw, 0);
    if (requant) {
        g.xs = (float)lj_ld_f64(lj_elem(d, 2), ops[2], 0);
        g.ews = lj_elem(d, 5);
        g.ws = ops[5];
        g.ws_per_m = lj_numel(d, 5) > 1;
        g.ys = (float)lj_ld_f64(lj_elem(d, 7), ops[7], 0);
        g.yz = lj_ld_i64(lj_elem(d, 8), ops[8], 0);
        g.bias = lj_nops(d) == 10 ? ops[9] : 0;
    }
    return g;
}

/* x_scale * w_scale / y_scale in f32, as the interpreter forms it. */
LJ_INLINE float lj_qconv_mult(const LjQConv *g, int64_t m) {
    float ws = (float)lj_ld_f64(g->ews, g->ws, g->ws_per_m ? m : 0);
    return g->xs * ws / g->ys;
}

/* Output yo of channel m from its sum s: bias added, requantized. */
LJ_INLINE void lj_qconv_store(const LjQConv *g, int64_t yo, int64_t m, int64_t s) {
    s += g->bias ? lj_ld_i64(g->ebias, g->bias, m) : 0;
    lj_store_q(g->ey, g->y, yo, (double)s * lj_qconv_mult(g, m), g->yz);
}

/* Which phases of stride s the taps i * d (i < k) fall in: each phase's
 * index in idx (-1 when no tap uses it); returns their count. The packed
 * and the depthwise int8 convs split their planes by these phases. */
LJ_INLINE int lj_tap_phases(int64_t k, int64_t d, int64_t s, int *idx) {
    for (int64_t r = 0; r < s; r++)
        idx[r] = -1;
    for (int64_t i = 0; i < k; i++)
        idx[(i * d) % s] = 0;
    int n = 0;
    for (int64_t r = 0; r < s; r++)
        if (idx[r] == 0)
            idx[r] = n++;
    return n;
}

#endif
