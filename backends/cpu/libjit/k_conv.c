/* libjit_conv_f32: NCHW convolution with 1 or 2 spatial axes (others run
 * the interpreter's kernel).
 *
 * Two algorithms, chosen by shape:
 *  - depthwise (one input and one output channel per group): a direct
 *    kernel over phase-split padded planes (window.h), as the product would
 *    be 1 x (kh*kw) per output row -- all overhead, no reuse;
 *  - everything else: per image and group, the product
 *        y[m][oy*ow + ox] = sum_k w[m][k] * col[k][oy*ow + ox]
 *    with k = (channel, tap) -- a 1x1 stride-1 convolution's column matrix
 *    is its input itself, others are packed panel by panel from the input
 *    (gemm.h). Weights are the broadcast operand and need no packing.
 * The fused activation and the bias are applied in the product's epilogue,
 * while the tile is in registers.
 *
 * Threads split images, groups and blocks of output channels; a block is a
 * multiple of the register tile's 8 rows, so splitting costs no tails. */
#include "backends/cpu/libjit/gemm.h"
#include "backends/cpu/libjit/kernels.h"
#include "backends/cpu/libjit/window.h"

enum { ROWS_PER_UNIT = 64 };

typedef struct Conv {
    int64_t n, c, h, w, m, oh, ow, group, cg, mg;
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
    bool fast; /* 1 or 2 spatial axes */
} Conv;

LJ_INLINE int64_t list_at(const int64_t *d, int key, int i, int64_t dflt) {
    int n;
    const int64_t *v = lj_attr(d, key, &n);
    return v && i < n ? v[i] : dflt;
}

/* Operands: 0 y, 1 x, 2 w, 3 bias (optional). One spatial axis is two with
 * a height of 1. */
LJ_INLINE Conv conv_of(const int64_t *d) {
    Conv s = {0};
    int ns = lj_rank(d, 1) - 2;
    s.fast = ns == 1 || ns == 2;
    if (!s.fast)
        return s;
    int x = ns - 1; /* index of the last spatial axis */
    s.n = lj_dim(d, 1, 0);
    s.c = lj_dim(d, 1, 1);
    s.m = lj_dim(d, 0, 1);
    s.group = lj_attr_int(d, AK_group, 1);
    s.cg = s.c / s.group;
    s.mg = s.m / s.group;
    s.h = ns == 2 ? lj_dim(d, 1, 2) : 1;
    s.w = lj_dim(d, 1, 2 + x);
    s.oh = ns == 2 ? lj_dim(d, 0, 2) : 1;
    s.ow = lj_dim(d, 0, 2 + x);
    s.kh = ns == 2 ? lj_dim(d, 2, 2) : 1;
    s.kw = lj_dim(d, 2, 2 + x);
    s.sh = ns == 2 ? list_at(d, AK_strides, 0, 1) : 1;
    s.sw = list_at(d, AK_strides, x, 1);
    s.ph = ns == 2 ? list_at(d, AK_pads, 0, 0) : 0;
    s.pw = list_at(d, AK_pads, x, 0);
    s.dh = ns == 2 ? list_at(d, AK_dilations, 0, 1) : 1;
    s.dw = list_at(d, AK_dilations, x, 1);
    return s;
}

LJ_INLINE bool is_depthwise(const Conv *s) {
    return s->cg == 1 && s->mg == 1;
}

LJ_INLINE bool is_pointwise(const Conv *s) {
    return s->kh == 1 && s->kw == 1 && s->sh == 1 && s->sw == 1 && s->ph == 0 && s->pw == 0;
}

LJ_INLINE LjWindow window_of(const Conv *s) {
    LjWindow g = {s->h, s->w, s->oh, s->ow, s->kh, s->kw, s->sh, s->sw, s->ph, s->pw, s->dh, s->dw,
                  0, 0};
    return g;
}

/* Depthwise, and its planes fit the direct kernel's buffers (else the
 * product form runs it, one output channel per group). */
LJ_INLINE bool use_direct(const Conv *s) {
    LjWindow g = window_of(s);
    return is_depthwise(s) && lj_window_fits(&g);
}

LJ_INLINE int64_t row_blocks(const Conv *s) {
    return (s->mg + ROWS_PER_UNIT - 1) / ROWS_PER_UNIT;
}

/* Units: (image, channel) planes for depthwise, else (image, group, block
 * of ROWS_PER_UNIT output channels). */
LIBJIT_WORK libjit_conv_f32_work(const int64_t *d) {
    Conv s = conv_of(d);
    if (!s.fast)
        return 1;
    if (use_direct(&s))
        return s.n * s.c;
    return s.n * s.group * row_blocks(&s);
}

/* Units [lo, hi) of the product form: one product per (image, group) for
 * all the row blocks of the range in it, so that the column matrix is
 * packed once per thread, not once per block. */
LJ_VECTOR_FN static void conv_gemm(const Conv *s, const float *x, const float *w, const float *bias,
                                   float *y, LjAct act, int64_t lo, int64_t hi) {
    int64_t blocks = row_blocks(s), in_plane = s->h * s->w, out_plane = s->oh * s->ow;
    int64_t kdim = s->cg * s->kh * s->kw;
    for (int64_t u = lo; u < hi;) {
        int64_t img_group = u / blocks, blk = u % blocks;
        int64_t last = (img_group + 1) * blocks < hi ? (img_group + 1) * blocks : hi;
        int64_t img = img_group / s->group, g = img_group % s->group;
        int64_t r0 = blk * ROWS_PER_UNIT, r1 = (last - img_group * blocks) * ROWS_PER_UNIT;
        r1 = r1 < s->mg ? r1 : s->mg;
        int64_t m0 = g * s->mg + r0;
        const float *xg = x + (img * s->c + g * s->cg) * in_plane;
        LjIm2col q = {xg, s->h, s->w, s->kh, s->kw, s->sh, s->sw, s->ph, s->pw, s->dh, s->dw,
                      s->oh, s->ow};
        LjGemm p = {
            .m = r1 - r0,
            .n = out_plane,
            .k = kdim,
            .a = w + m0 * kdim,
            .lda = kdim,
            .b = xg,
            .ldb = out_plane,
            .im2col = is_pointwise(s) ? NULL : &q,
            .c = y + (img * s->m + m0) * out_plane,
            .ldc = out_plane,
            .bias = bias ? bias + m0 : NULL,
            .bias_rows = true,
            .act = act,
        };
        lj_sgemm(&p);
        u = last;
    }
}

LIBJIT_KERNEL libjit_conv_f32(const int64_t *d, void *const *ops, int64_t lo, int64_t hi) {
    Conv s = conv_of(d);
    if (!s.fast) {
        if (lo == 0)
            libjit_generic(d, ops);
        return;
    }
    const float *bias = lj_nops(d) > 3 ? ops[3] : NULL;
    LjAct act = lj_act_of(d);
    if (use_direct(&s)) {
        LjWindow g = window_of(&s);
        lj_depthwise(&g, s.c, ops[1], ops[2], bias, ops[0], act, lo, hi);
        return;
    }
    conv_gemm(&s, ops[1], ops[2], bias, ops[0], act, lo, hi);
}
