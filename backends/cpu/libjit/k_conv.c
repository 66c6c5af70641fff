/* libjit_conv_f32: NCHW convolution with 1 or 2 spatial axes (others run
 * the interpreter's kernel).
 *
 * Two algorithms, chosen by shape:
 *  - depthwise (one input and one output channel per group): a direct
 *    kernel over each plane's phase rows (dwconv.c), as the product would
 *    be 1 x (kh*kw) per output row -- all overhead, no reuse;
 *  - everything else: per image and group, the product
 *        y[m][oy*ow + ox] = sum_k w[m][k] * col[k][oy*ow + ox]
 *    with k = (channel, tap) (gemm.h). A 1x1 stride-1 convolution's column
 *    matrix is its input itself; for the others, the input is copied once
 *    into phase planes (window.h) -- padded, split by stride residues --
 *    where the column matrix's row (c, i, j) is one contiguous run, so the
 *    product reads it in place through a table of row offsets, computing
 *    wq >= ow columns per output row and dropping the extra ones. Weights
 *    are the broadcast operand and need no packing.
 * The fused activation and the bias are applied in the product's epilogue,
 * while the tile is in registers.
 *
 * Threads split images, groups, and a grid of output-channel by column
 * blocks (grid_of): multiples of the register tile's 8 rows and of the
 * NR-column panels (gemm.h), so splitting costs no tails.
 *
 * The phase planes and the offset table live on the heap (about the size of
 * the input): when malloc fails, the interpreter's kernel runs instead. */
#include <stdlib.h>

#include "backends/cpu/libjit/gemm.h"
#include "backends/cpu/libjit/kernels.h"
#include "backends/cpu/libjit/window.h"

/* The product of one (image, group) is split into a grid of units: blocks
 * of at most ROWS_MAX output channels (multiples of the register tile's 8
 * rows) by blocks of columns (multiples of the NR-column panels), enough of
 * them (GRID_UNITS) that threads share even a 16-channel layer evenly,
 * none narrower than COLS_MIN so that a unit still amortises its panels. */
enum { ROWS_MAX = 64, GRID_UNITS = 8, COLS_MIN = 96, PANEL = LJ_GEMM_NR };

typedef struct Conv {
    int64_t n, c, h, w, m, oh, ow, group, cg, mg;
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
    bool fast; /* 1 or 2 spatial axes */
} Conv;

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
    s.sh = ns == 2 ? lj_attr_at(d, AK_strides, 0, 1) : 1;
    s.sw = lj_attr_at(d, AK_strides, x, 1);
    s.ph = ns == 2 ? lj_attr_at(d, AK_pads, 0, 0) : 0;
    s.pw = lj_attr_at(d, AK_pads, x, 0);
    s.dh = ns == 2 ? lj_attr_at(d, AK_dilations, 0, 1) : 1;
    s.dw = lj_attr_at(d, AK_dilations, x, 1);
    return s;
}

LJ_INLINE bool is_depthwise(const Conv *s) {
    return s->cg == 1 && s->mg == 1;
}

/* The output plane must be the input plane itself: conv_of keeps only the
 * begin pads, and a 1x1 stride-1 convolution padded at its end only has a
 * larger output (its last rows or columns the bias), which the product over
 * the input's own columns would fill with the wrong values (issue 20). */
LJ_INLINE bool is_pointwise(const Conv *s) {
    return s->kh == 1 && s->kw == 1 && s->sh == 1 && s->sw == 1 && s->ph == 0 && s->pw == 0 &&
           s->oh == s->h && s->ow == s->w;
}

LJ_INLINE LjWindow window_of(const Conv *s) {
    LjWindow g = {s->h, s->w, s->oh, s->ow, s->kh, s->kw, s->sh, s->sw, s->ph, s->pw, s->dh, s->dw,
                  0, 0};
    return g;
}

/* 1x1 with a stride, no padding read (ResNet's downsampling shortcuts):
 * B is the input subsampled, where phase planes would build every phase
 * and read one -- four times the buffer and the copying at stride 2. No
 * begin pad, and the last output's tap inside the input: an end pad that
 * some output reads goes to the phase planes, which fill it. */
LJ_INLINE bool is_subsampled(const Conv *s) {
    return s->kh == 1 && s->kw == 1 && s->ph == 0 && s->pw == 0 && !is_pointwise(s) &&
           (s->oh - 1) * s->sh < s->h && (s->ow - 1) * s->sw < s->w;
}

/* Columns of one (image, group)'s product: output positions, over the
 * phase planes' wider rows unless the input (or its subsampling) is its
 * own column matrix. */
LJ_INLINE int64_t product_cols(const Conv *s) {
    if (is_pointwise(s))
        return s->h * s->w;
    if (is_subsampled(s))
        return s->oh * s->ow;
    LjWindow win = window_of(s);
    return s->oh * lj_phases(&win, PANEL).wq;
}

typedef struct Grid {
    int64_t rows, nrb;  /* rows per block, row blocks */
    int64_t cols, ncb;  /* columns per block, column blocks */
} Grid;

LJ_INLINE int64_t round_up(int64_t x, int64_t to) {
    return (x + to - 1) / to * to;
}

LJ_INLINE Grid grid_of(const Conv *s) {
    Grid g;
    g.nrb = (s->mg + ROWS_MAX - 1) / ROWS_MAX;
    g.rows = round_up((s->mg + g.nrb - 1) / g.nrb, LJ_GEMM_MR);
    g.nrb = (s->mg + g.rows - 1) / g.rows;
    int64_t n = product_cols(s);
    int64_t want = (GRID_UNITS + g.nrb - 1) / g.nrb, most = n / COLS_MIN;
    g.ncb = want < most ? want : most > 0 ? most : 1;
    g.cols = round_up((n + g.ncb - 1) / g.ncb, PANEL);
    g.ncb = (n + g.cols - 1) / g.cols;
    return g;
}

/* Units: channel planes for depthwise, else (image, group,
 * column block, row block) -- row blocks innermost, so that a thread's
 * range is whole column blocks where it can be. */
LIBJIT_WORK libjit_conv_f32_work(const int64_t *d) {
    Conv s = conv_of(d);
    if (!s.fast)
        return 1;
    if (is_depthwise(&s))
        return s.n * s.c;
    Grid g = grid_of(&s);
    return s.n * s.group * g.nrb * g.ncb;
}

/* Depthwise planes [lo, hi): over phase rows, or without the memory for
 * that, over phase planes on the stack, or the interpreter's kernel when
 * even those do not fit. */
LJ_INLINE void conv_depthwise(const int64_t *d, const Conv *s, void *const *ops, const float *bias,
                              LjAct act, int64_t lo, int64_t hi, LjScratch *sc) {
    LjWindow g = window_of(s);
    if (lj_dwconv(&g, s->c, ops[1], ops[2], bias, ops[0], act, lo, hi, sc))
        return;
    if (!lj_window_fits(&g)) {
        if (lo == 0)
            libjit_generic(d, ops);
        return;
    }
    lj_depthwise(&g, s->c, ops[1], ops[2], bias, ops[0], act, lo, hi);
}

/* A run of units within one (image, group) and one column block: rows
 * [r0, r1) by product columns [c0, c1). */
typedef struct ConvPart {
    int64_t img, g, r0, r1, c0, c1;
} ConvPart;

/* The next part of units [*u, hi); false when there is none. */
LJ_INLINE bool conv_parts(const Conv *s, const Grid *gr, int64_t n, int64_t hi, ConvPart *part,
                          int64_t *u) {
    if (*u >= hi)
        return false;
    int64_t per_part = gr->nrb * gr->ncb, ig = *u / per_part, in = *u % per_part;
    int64_t cb = in / gr->nrb, rb = in % gr->nrb;
    int64_t run = gr->nrb - rb < hi - *u ? gr->nrb - rb : hi - *u;
    part->img = ig / s->group;
    part->g = ig % s->group;
    part->r0 = rb * gr->rows;
    part->r1 = (rb + run) * gr->rows < s->mg ? (rb + run) * gr->rows : s->mg;
    part->c0 = cb * gr->cols;
    part->c1 = part->c0 + gr->cols < n ? part->c0 + gr->cols : n;
    *u += run;
    return true;
}

/* 1x1, stride 1, no pad: B is the input itself, row-major. */
LJ_VECTOR_FN static void conv_pointwise(const Conv *s, const float *x, const float *w,
                                        const float *bias, float *y, LjAct act, int64_t lo,
                                        int64_t hi, LjScratch *sc) {
    int64_t plane = s->h * s->w;
    Grid gr = grid_of(s);
    ConvPart p;
    for (int64_t u = lo; conv_parts(s, &gr, plane, hi, &p, &u);) {
        int64_t m0 = p.g * s->mg + p.r0;
        LjGemm g = {
            .m = p.r1 - p.r0,
            .n = p.c1 - p.c0,
            .k = s->cg,
            .a = w + m0 * s->cg,
            .lda = s->cg,
            .b = x + (p.img * s->c + p.g * s->cg) * plane + p.c0,
            .ldb = plane,
            .c = y + (p.img * s->m + m0) * plane + p.c0,
            .ldc = plane,
            .bias = bias ? bias + m0 : NULL,
            .bias_rows = true,
            .act = act,
            .sc = sc,
        };
        lj_sgemm(&g);
    }
}

/* The buffers conv_subsampled and conv_planes ask for (one function for
 * them and for libjit_conv_f32_scratch). */
LJ_INLINE size_t subsampled_bytes(const Conv *s) {
    return (size_t)(s->cg * s->oh * s->ow) * sizeof(float);
}

LJ_INLINE size_t planes_bytes(const Conv *s) {
    LjWindow win = window_of(s);
    LjPhases q = lj_phases(&win, PANEL);
    int64_t kdim = s->cg * s->kh * s->kw, per_c = s->sh * s->sw * q.size;
    return (size_t)kdim * sizeof(int64_t) + (size_t)(s->cg * per_c) * sizeof(float);
}

/* Strided 1x1: B is the group's input channels subsampled, built once per
 * part. False if the buffer cannot be had. */
LJ_VECTOR_FN static bool conv_subsampled(const Conv *s, const float *x, const float *w,
                                         const float *bias, float *y, LjAct act, int64_t lo,
                                         int64_t hi, LjScratch *sc) {
    int64_t plane = s->oh * s->ow;
    float *sub = lj_scratch_get(sc, LJ_SCRATCH_PLANES, subsampled_bytes(s));
    if (!sub)
        return false;
    Grid gr = grid_of(s);
    int64_t built = -1; /* the (image, group) in sub */
    ConvPart p;
    for (int64_t u = lo; conv_parts(s, &gr, plane, hi, &p, &u);) {
        int64_t ig = p.img * s->group + p.g;
        if (ig != built) {
            const float *xg = x + (p.img * s->c + p.g * s->cg) * s->h * s->w;
            for (int64_t c = 0; c < s->cg; c++)
                for (int64_t oy = 0; oy < s->oh; oy++) {
                    const float *src = xg + (c * s->h + oy * s->sh) * s->w;
                    float *dst = sub + c * plane + oy * s->ow;
                    for (int64_t ox = 0; ox < s->ow; ox++)
                        dst[ox] = src[ox * s->sw];
                }
            built = ig;
        }
        int64_t m0 = p.g * s->mg + p.r0;
        LjGemm g = {
            .m = p.r1 - p.r0,
            .n = p.c1 - p.c0,
            .k = s->cg,
            .a = w + m0 * s->cg,
            .lda = s->cg,
            .b = sub + p.c0,
            .ldb = plane,
            .c = y + (p.img * s->m + m0) * plane + p.c0,
            .ldc = plane,
            .bias = bias ? bias + m0 : NULL,
            .bias_rows = true,
            .act = act,
            .sc = sc,
        };
        lj_sgemm(&g);
    }
    lj_scratch_put(sc, sub);
    return true;
}

/* The rest: B's rows are runs of the phase planes of the group's input
 * channels, built once per part. False if the buffers cannot be had. */
LJ_VECTOR_FN static bool conv_planes(const Conv *s, const float *x, const float *w,
                                     const float *bias, float *y, LjAct act, int64_t lo,
                                     int64_t hi, LjScratch *sc) {
    LjWindow win = window_of(s);
    LjPhases q = lj_phases(&win, PANEL);
    int64_t taps = s->kh * s->kw, kdim = s->cg * taps, per_c = s->sh * s->sw * q.size;
    int64_t *koff = lj_scratch_get(sc, LJ_SCRATCH_PLANES, planes_bytes(s));
    if (!koff)
        return false;
    float *planes = (float *)(koff + kdim);
    for (int64_t c = 0; c < s->cg; c++)
        for (int64_t i = 0; i < s->kh; i++)
            for (int64_t j = 0; j < s->kw; j++)
                koff[(c * s->kh + i) * s->kw + j] = c * per_c + lj_tap_offset(&win, &q, i, j);
    Grid gr = grid_of(s);
    int64_t n = s->oh * q.wq, built = -1; /* the (image, group) in the planes */
    ConvPart p;
    for (int64_t u = lo; conv_parts(s, &gr, n, hi, &p, &u);) {
        int64_t ig = p.img * s->group + p.g;
        if (ig != built) {
            const float *xg = x + (p.img * s->c + p.g * s->cg) * s->h * s->w;
            for (int64_t c = 0; c < s->cg; c++)
                lj_build_phases(&win, &q, xg + c * s->h * s->w, 0.0f, planes + c * per_c);
            built = ig;
        }
        int64_t m0 = p.g * s->mg + p.r0;
        LjGemm g = {
            .m = p.r1 - p.r0,
            .n = p.c1 - p.c0,
            .k = kdim,
            .a = w + m0 * kdim,
            .lda = kdim,
            .b = planes,
            .koff = koff,
            .wq = q.wq,
            .ow = s->ow,
            .n0 = p.c0,
            .c = y + (p.img * s->m + m0) * s->oh * s->ow,
            .ldc = s->oh * s->ow,
            .bias = bias ? bias + m0 : NULL,
            .bias_rows = true,
            .act = act,
            .sc = sc,
        };
        lj_sgemm(&g);
    }
    lj_scratch_put(sc, koff);
    return true;
}

LIBJIT_KERNEL libjit_conv_f32(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                              LjScratch *sc) {
    Conv s = conv_of(d);
    if (!s.fast) {
        if (lo == 0)
            libjit_generic(d, ops);
        return;
    }
    const float *bias = lj_nops(d) > 3 ? ops[3] : NULL;
    LjAct act = lj_act_of(d);
    if (is_depthwise(&s)) {
        conv_depthwise(d, &s, ops, bias, act, lo, hi, sc);
        return;
    }
    if (is_pointwise(&s))
        conv_pointwise(&s, ops[1], ops[2], bias, ops[0], act, lo, hi, sc);
    else if (is_subsampled(&s)) {
        if (!conv_subsampled(&s, ops[1], ops[2], bias, ops[0], act, lo, hi, sc) && lo == 0)
            libjit_generic(d, ops);
    } else if (!conv_planes(&s, ops[1], ops[2], bias, ops[0], act, lo, hi, sc) && lo == 0)
        libjit_generic(d, ops);
}

/* One call over all units runs, per (image, group), one part per column
 * block (conv_parts): all mg rows by `cols` columns, the last block by
 * what is left; each is one product. */
LJ_INLINE int64_t conv_pack_bytes(const Conv *s, bool by_offsets) {
    Grid gr = grid_of(s);
    int64_t n = product_cols(s), last = n - (gr.ncb - 1) * gr.cols;
    size_t full = lj_sgemm_scratch(s->mg, gr.cols < n ? gr.cols : n, s->cg * s->kh * s->kw,
                                   by_offsets);
    size_t tail = lj_sgemm_scratch(s->mg, last, s->cg * s->kh * s->kw, by_offsets);
    return (int64_t)(full > tail ? full : tail);
}

LIBJIT_SCRATCH libjit_conv_f32_scratch(const int64_t *d, int slot) {
    Conv s = conv_of(d);
    if (!s.fast)
        return 0;
    if (is_depthwise(&s)) {
        LjWindow g = window_of(&s);
        return slot == LJ_SCRATCH_PLANES ? (int64_t)lj_dwconv_scratch(&g) : 0;
    }
    bool pointwise = is_pointwise(&s), subsampled = !pointwise && is_subsampled(&s);
    if (slot == LJ_SCRATCH_PACK)
        return conv_pack_bytes(&s, !pointwise && !subsampled);
    if (slot != LJ_SCRATCH_PLANES || pointwise)
        return 0;
    return (int64_t)(subsampled ? subsampled_bytes(&s) : planes_bytes(&s));
}

LIBJIT_SCRATCH libjit_conv_dw_f32_scratch(const int64_t *d, int slot) {
    return libjit_conv_f32_scratch(d, slot);
}

/* Depthwise convolutions alone (code generation calls this one for them,
 * so that a profile names the depthwise kernel apart from the others). */
LIBJIT_WORK libjit_conv_dw_f32_work(const int64_t *d) {
    return libjit_conv_f32_work(d);
}

LIBJIT_KERNEL libjit_conv_dw_f32(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                 LjScratch *sc) {
    Conv s = conv_of(d);
    if (!s.fast || !is_depthwise(&s)) {
        libjit_conv_f32(d, ops, lo, hi, sc);
        return;
    }
    const float *bias = lj_nops(d) > 3 ? ops[3] : NULL;
    conv_depthwise(d, &s, ops, bias, lj_act_of(d), lo, hi, sc);
}
