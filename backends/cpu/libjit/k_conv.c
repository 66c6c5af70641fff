/* libjit_conv_f32: NCHW convolution with 1 or 2 spatial axes (others run
 * conv_direct, a plain loop).
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
 * The bias, a fused residual add's summand (operand 4, fuse-conv-add: read
 * at the positions written, so never the output's own buffer) and the
 * fused activation are applied in the product's epilogue, while the tile
 * is in registers. Depthwise convolutions take no summand (the pass does
 * not fuse one).
 *
 * Threads split images, groups, and the product's rows or columns in units
 * of equal cost (grid_of).
 *
 * The phase planes and the offset table live on the heap (about the size of
 * the input): when they cannot be had, the kernel records that it could not
 * run (lj_fail_run) and the program reports it.
 *
 * Other ranks (3-D convolutions), and a depthwise window that fits neither
 * dwconv.c nor the stack, run conv_direct: a plain loop over output planes. */
#include <stdlib.h>

#include "backends/cpu/libjit/gemm.h"
#include "backends/cpu/libjit/kernels.h"
#include "backends/cpu/libjit/window.h"

/* The product of one (image, group), mg rows by n columns, is split into
 * units of equal cost: one register tile of rows (LJ_GEMM_MR) by, when
 * threads split columns, one vector of them (LJ_VL). The runtime hands
 * each thread an equal range of units, so equal units are equal work for
 * any thread count; blocks of 64 rows by 96+ columns left 3 blocks to 2
 * threads, or a narrow last block to one of them (a 2-thread speedup of
 * 1.4-1.6x on ResNet-50's 14x14 and stride-2 layers). A thread's range is
 * cut back into at most three products (conv_parts), so its share costs
 * what one product over it would.
 *
 * Threads split the rows (output channels) when B, k x n, is under half
 * the size of A, mg x k (2n < mg: the late layers' small maps and large
 * weights), and the columns otherwise: each thread reads all of one
 * operand and its share of the other. Splitting columns, a thread also
 * builds only the rows of the phase planes (or of the subsampled input)
 * that its columns read; splitting rows, each builds all of them, which
 * costs more than reading A twice until A is twice B's size (ResNet-50's
 * 256-channel stride-2 3x3, n = 210: 1.81x split by rows, 1.99x by
 * columns, bench_conv --split 2). */
enum { MR = LJ_GEMM_MR, VL = LJ_VL, PANEL = LJ_GEMM_NR };

typedef struct Conv {
    int64_t n, c, h, w, m, oh, ow, group, cg, mg;
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
    bool fast;    /* 1 or 2 spatial axes */
    bool summand; /* fuse-conv-add's operand 4: conv_lanes takes none */
    bool tiles;   /* the products on AMX's tiles (libjit_conv_amx_f32: grid_of) */
} Conv;

/* Operands: 0 y, 1 x, 2 w, 3 bias (optional), 4 summand (optional). One spatial axis is two with
 * a height of 1. */
LJ_INLINE Conv conv_of(const int64_t *d) {
    Conv s = {0};
    int ns = lj_rank(d, 1) - 2;
    s.fast = ns == 1 || ns == 2;
    s.summand = lj_nops(d) > 4;
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

/* Columns of one (image, group)'s product: the output positions. Read
 * from the phase planes, the product packs B run by run (LjGemm's koff):
 * over the planes' wider rows it computed wq - ow columns per output row
 * to drop them -- 35% more work for a 1x7 window on a 17x17 map, 25% for
 * 3x3 on 8x8, 14% for 3x3 stride 2 onto 7x7 -- where the runs cost a few
 * copies per panel row, shared by all of the product's row tiles. */
LJ_INLINE int64_t product_cols(const Conv *s) {
    if (is_pointwise(s))
        return s->h * s->w;
    return s->oh * s->ow;
}

/* Units of one (image, group): `outer` lines of `inner` units each --
 * row tiles of one unit (all columns) when threads split rows, else column
 * vectors of one unit per row tile. */
typedef struct Grid {
    int64_t n;     /* product columns */
    int64_t outer, inner;
    bool by_rows;
} Grid;

LJ_INLINE int64_t cdiv(int64_t x, int64_t to) {
    return (x + to - 1) / to;
}

LJ_INLINE Grid grid_of(const Conv *s) {
    Grid g;
    g.n = product_cols(s);
    /* On AMX's tiles each thread splits all of the operand it does not
     * share into bf16 pairs (gemm_amx.c): A, the weights, when threads
     * split columns, so rows as soon as A is the larger. resnet50's 256
     * -> 256 3x3 on 14x14 (n = 196) by columns took longer at 2 threads
     * than at 1 (0.85 against 0.72 ms). */
    g.by_rows = s->tiles ? g.n < s->mg : 2 * g.n < s->mg;
    g.outer = g.by_rows ? cdiv(s->mg, MR) : cdiv(g.n, VL);
    g.inner = g.by_rows ? 1 : cdiv(s->mg, MR);
    return g;
}

/* ---- output channels in the lanes ------------------------------------------ */

/* A product of few rows (up to LANES_NV vectors of output channels: DenseNet's
 * 128 -> 32 3x3 convolutions, Inception's 32-channel stems) has little to
 * amortise B's packing over: each packed column of the phase planes feeds
 * 2-4 row tiles, and the packing cost as much as the multiply-adds
 * (DenseNet's 3x3 on 14x14 ran at 65 GFLOP/s, ORT's NCHWc kernel at 165).
 * So the roles turn: the weights, transposed once per call into
 * wt[k][mg], are the vector operand, and the input is broadcast straight
 * from the phase planes -- a register tile of lanes_pt(nv) output positions,
 * consecutive over the flattened oh x wq grid (columns past ow computed and
 * dropped), by nv vectors of channels: 24 accumulators, nv loads and
 * lanes_pt broadcasts per step of k. Each output is its bias plus the
 * k-ordered multiply-adds, as on the product's path. Only from LANES_MIN_K
 * deep: the outputs are scattered from a tile buffer, a store per output
 * that a shallow k does not amortise (bench_conv, 1 thread: 128 -> 32 3x3 at
 * 28x28 124 -> 162 GFLOP/s, 14x14 80 -> 112, Inception's
 * 32 -> 32 at 149x149 122 -> 140; its 3 -> 32 stride-2 stem, k = 27, 95 ->
 * 67). */
enum {
    LANES_NV = 3,
    LANES_ACC = 24,
    LANES_MIN_K = 128,
    LANES_ROW_PT = 14, /* rows' tiles: 2 vectors by 14 positions */
    LANES_MAX_PT = 24, /* positions of any tile */
    LANES_MAX_ACC = 28 /* accumulators of any tile */
};

LJ_INLINE int64_t lanes_pt(int64_t nv) {
    return LANES_ACC / nv;
}

/* How the tiles cover one image's outputs: tiles of pt consecutive
 * positions over the flattened oh x wq grid, or (`rows`) per output row,
 * tiles of pt columns from column 0, per_row of them, the last one's
 * columns past ow computed and dropped. Rows of 14 positions by 2 vectors
 * (28 accumulators) fit a 14-wide map exactly, where the flattened grid's
 * 16-wide rows in tiles of 12 computed 228 positions for 196 (DenseNet's
 * 128 -> 32 3x3 on 14x14; 28x28 is two such tiles a row, 784 for 840). */
typedef struct LanesPlan {
    int64_t pt, tiles, per_row, wq;
    bool rows;
} LanesPlan;

LJ_INLINE LanesPlan lanes_plan(const Conv *s) {
    LjWindow win = window_of(s);
    LjPhases q = lj_phases(&win, 1);
    int64_t nv = s->mg / VL, pt = lanes_pt(nv);
    LanesPlan p = {pt, cdiv(s->oh * q.wq, pt), 0, q.wq, false};
    if (nv == 2) {
        int64_t per_row = cdiv(s->ow, LANES_ROW_PT);
        if (s->oh * per_row * LANES_ROW_PT < p.tiles * p.pt)
            p = (LanesPlan){LANES_ROW_PT, s->oh * per_row, per_row, q.wq, true};
    }
    return p;
}

/* Where tile t's positions start on the flattened grid, and how many of
 * them are outputs; *ox is the first one's column in its output row. */
LJ_INLINE int64_t lanes_tile_at(const LanesPlan *p, int64_t t, int64_t *ox) {
    if (p->rows) {
        int64_t oy = t / p->per_row;
        *ox = t % p->per_row * p->pt;
        return oy * p->wq + *ox;
    }
    *ox = t * p->pt % p->wq;
    return t * p->pt;
}

/* Tiles per image. */
LJ_INLINE int64_t lanes_tiles(const Conv *s) {
    return lanes_plan(s).tiles;
}

/* Whether at least 4/5 of the positions the tiles compute are outputs:
 * not on a 7x7 map, whose 9-wide grid rounds up to 72 positions for 49
 * (1.0 -> 1.26 ms over DenseNet's sixteen 128 -> 32 3x3 at 7x7). */
LJ_INLINE bool lanes_dense_enough(const Conv *s) {
    LanesPlan p = lanes_plan(s);
    return 5 * s->oh * s->ow >= 4 * p.tiles * p.pt;
}

LJ_INLINE bool is_lanes(const Conv *s) {
    return !s->summand && s->group == 1 && s->mg % VL == 0 && s->mg / VL <= LANES_NV &&
           s->cg * s->kh * s->kw >= LANES_MIN_K && !is_depthwise(s) && !is_pointwise(s) &&
           !is_subsampled(s) && lanes_dense_enough(s);
}

/* Whether libjit_conv_amx_f32's products take AMX's tiles: those of at
 * least 16 rows, columns and k (fewer would be mostly zeros in them); the
 * same test as code generation's (codegen.c: f32_conv_tiles), on the
 * whole product, so that every thread's share rounds the same. */
LJ_INLINE bool conv_tiles(const Conv *s) {
    return s->fast && s->mg >= 16 && product_cols(s) >= 16 && s->cg * s->kh * s->kw >= 16;
}

/* Whether the by-lanes tiles run the conv: not where the products take
 * AMX's tiles (amx: conv_tiles) with 32 or more output channels, which
 * run them faster (DenseNet's 128 -> 32 3x3s). */
LJ_INLINE bool uses_lanes(const Conv *s, bool amx) {
    return is_lanes(s) && !(amx && s->mg >= 32);
}

/* ---- conv_direct: any number of spatial axes ------------------------------------ */

LJ_INLINE int64_t conv_direct_planes(const int64_t *d) {
    return lj_dim(d, 0, 0) * lj_dim(d, 0, 1);
}

/* Output planes [p0, p1) of (image, output channel): each element the sum
 * over its group's input channels and the taps inside the input, in f32 in
 * (channel, tap) order, then the bias and the fused activation. The
 * reference for what the fast paths do not cover; no scratch. */
static void conv_direct(const int64_t *d, void *const *ops, int64_t p0, int64_t p1) {
    LjConvGeom g = lj_conv_geom(d, 1, 0, 2);
    const float *x = ops[1], *w = ops[2], *bias = lj_nops(d) > 3 ? ops[3] : NULL;
    const float *sum = lj_nops(d) > 4 ? ops[4] : NULL;
    float *y = ops[0];
    LjAct act = lj_act_of(d);
    for (int64_t pl = p0; pl < p1 && pl < conv_direct_planes(d); pl++) {
        int64_t img = pl / g.m, m = pl % g.m, c0 = m / g.mg * g.cg;
        float *yp = y + pl * g.out_size;
        const float *sp = sum ? sum + pl * g.out_size : NULL;
        int64_t oidx[DESC_MAX_RANK] = {0};
        for (int64_t o = 0; o < g.out_size; o++) {
            float acc = 0;
            for (int64_t c = 0; c < g.cg; c++) {
                const float *xc = x + (img * g.c + c0 + c) * g.in_size;
                const float *wc = w + (m * g.cg + c) * g.ksize;
                int64_t kidx[DESC_MAX_RANK] = {0};
                for (int64_t t = 0; t < g.ksize; t++) {
                    int64_t off = 0;
                    for (int i = 0; i < g.ns && off >= 0; i++) {
                        int64_t q = oidx[i] * g.st[i] - g.pad[i] + kidx[i] * g.dil[i];
                        off = q < 0 || q >= g.in[i] ? -1 : off * g.in[i] + q;
                    }
                    if (off >= 0)
                        acc += xc[off] * wc[t];
                    for (int i = g.ns - 1; i >= 0 && ++kidx[i] == g.k[i]; i--)
                        kidx[i] = 0;
                }
            }
            yp[o] = acc + (bias ? bias[m] : 0.0f);
            if (sp)
                yp[o] += sp[o];
            for (int i = g.ns - 1; i >= 0 && ++oidx[i] == g.out[i]; i--)
                oidx[i] = 0;
        }
        if (act.kind != ACT_NONE)
            lj_act_span(yp, g.out_size, act);
    }
}

/* Units: channel planes for depthwise and conv_direct, else (image, group,
 * outer, inner). */
LJ_INLINE int64_t conv_work(const int64_t *d, bool amx) {
    Conv s = conv_of(d);
    s.tiles = amx;
    if (!s.fast)
        return conv_direct_planes(d) > 0 ? conv_direct_planes(d) : 1;
    if (is_depthwise(&s))
        return s.n * s.c;
    if (uses_lanes(&s, amx))
        return s.n * lanes_tiles(&s);
    Grid g = grid_of(&s);
    return s.n * s.group * g.outer * g.inner;
}

LIBJIT_WORK libjit_conv_f32_work(const int64_t *d) {
    return conv_work(d, false);
}

/* Depthwise planes [lo, hi): over phase rows, or without the memory for
 * that (or past 64 taps), over phase planes on the stack, or conv_direct
 * when even those do not fit. */
LJ_INLINE void conv_depthwise(const int64_t *d, const Conv *s, void *const *ops, const float *bias,
                              LjAct act, int64_t lo, int64_t hi, LjScratch *sc) {
    LjWindow g = window_of(s);
    if (lj_dwconv(&g, s->c, ops[1], ops[2], bias, ops[0], act, lo, hi, sc))
        return;
    if (!lj_window_fits(&g)) {
        conv_direct(d, ops, lo, hi); /* the same units: planes */
        return;
    }
    lj_depthwise(&g, s->c, ops[1], ops[2], bias, ops[0], act, lo, hi);
}

/* One product of a thread's range: rows [r0, r1) by columns [c0, c1) of
 * one (image, group). */
typedef struct ConvPart {
    int64_t img, g, r0, r1, c0, c1;
} ConvPart;

LJ_INLINE int64_t min64(int64_t a, int64_t b) {
    return a < b ? a : b;
}

/* Lines [o0, o1) of inner units [i0, i1) as rows and columns. */
LJ_INLINE void part_span(const Conv *s, const Grid *gr, int64_t o0, int64_t o1, int64_t i0,
                         int64_t i1, ConvPart *p) {
    if (gr->by_rows) {
        p->r0 = o0 * MR, p->r1 = min64(o1 * MR, s->mg);
        p->c0 = 0, p->c1 = gr->n;
    } else {
        p->r0 = i0 * MR, p->r1 = min64(i1 * MR, s->mg);
        p->c0 = o0 * VL, p->c1 = min64(o1 * VL, gr->n);
    }
}

/* The next part of units [*u, hi): the rest of a line begun, then the
 * whole lines, then the start of the last one; false when there is none. */
LJ_INLINE bool conv_parts(const Conv *s, const Grid *gr, int64_t hi, ConvPart *part,
                          int64_t *u) {
    if (*u >= hi)
        return false;
    int64_t per_ig = gr->outer * gr->inner, ig = *u / per_ig, in = *u % per_ig;
    int64_t o = in / gr->inner, i = in % gr->inner, left = min64(hi, (ig + 1) * per_ig) - *u;
    part->img = ig / s->group;
    part->g = ig % s->group;
    int64_t lines = left / gr->inner;
    if (i > 0 || lines == 0) {
        int64_t i1 = min64(gr->inner, i + left);
        part_span(s, gr, o, o + 1, i, i1, part);
        *u += i1 - i;
    } else {
        part_span(s, gr, o, o + lines, 0, gr->inner, part);
        *u += lines * gr->inner;
    }
    return true;
}

/* The columns [*c0, *c1) that units [u, hi) read of their first (image,
 * group): a thread builds its B over those alone. */
LJ_INLINE void range_cols(const Grid *gr, int64_t u, int64_t hi, int64_t *c0, int64_t *c1) {
    int64_t per_ig = gr->outer * gr->inner, base = u / per_ig * per_ig;
    int64_t in0 = u - base, in1 = min64(hi, base + per_ig) - base;
    if (gr->by_rows) {
        *c0 = 0, *c1 = gr->n;
        return;
    }
    *c0 = in0 / gr->inner * VL;
    *c1 = min64(cdiv(in1, gr->inner) * VL, gr->n);
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
    /* A vector more: the product's packing reads up to LJ_VL - 1 floats
     * past a run of the planes (gemm.h). */
    return (size_t)kdim * sizeof(int64_t) + (size_t)(s->cg * per_c + VL) * sizeof(float);
}

/* sub[c][p] = x[c][oy*sh][ox*sw] for channels [ch0, ch1) and output
 * positions p = oy*ow + ox in [p0, p1). */
LJ_INLINE void subsample(const Conv *s, const float *xg, float *sub, int64_t ch0, int64_t ch1,
                         int64_t p0, int64_t p1) {
    int64_t plane = s->oh * s->ow;
    for (int64_t c = ch0; c < ch1; c++)
        for (int64_t pos = p0; pos < p1;) {
            int64_t oy = pos / s->ow, ox = pos % s->ow, end = min64(p1 - pos, s->ow - ox);
            const float *src = xg + (c * s->h + oy * s->sh) * s->w;
            float *dst = sub + c * plane + pos - ox;
            for (int64_t e = ox; e < ox + end; e++)
                dst[e] = src[e * s->sw];
            pos += end;
        }
}

/* ---- B built once per call, shared by the threads ---------------------------
 *
 * Split by rows, every unit of an (image, group) reads all of its B (the
 * phase planes or the subsampled input, and B packed from them or from
 * the input): each piece of each thread built and packed all of it again,
 * 4 times per call at 2 threads -- ResNet-50's 512-channel 3x3 stride 2 on
 * 14x14 repeated +33% of its work, its 3x3 on 7x7 +16% (bench_conv --split
 * 2), finer pieces more. When the call is one (image, group) (batch 1, no
 * groups: every model's late layers), its B goes to the buffer the call's
 * threads share (libjit.h: LjShared), built and then packed whole (gemm.h:
 * lj_sgemm_pack) by whichever threads claim the items, and every piece's
 * tiles read it. The same values whoever builds them: the same result bit
 * for bit. Otherwise (several images or groups, whose ranges the pieces
 * mostly follow; no runtime; a --no-threads bundle) each piece builds and
 * packs its own, as before. */
enum { SHARE_FLOATS = 8192 };

/* Not on AMX's tiles: they split B from the planes (or the input) in
 * place, so a shared f32 copy of B packed whole is work they do not need,
 * read from the other core's cache (resnet50's 3x3s on 14x14 took as
 * long at 2 threads as at 1 with it). */
LJ_INLINE bool shares_b(const Conv *s, const Grid *gr) {
    return gr->by_rows && s->n * s->group == 1 && !s->tiles;
}

/* The items of a shared B's channels, per_c floats each: per_item
 * channels an item. */
typedef struct Claims {
    int64_t per_item, items;
} Claims;

LJ_INLINE Claims claims_of(const Conv *s, int64_t per_c) {
    Claims cl = {SHARE_FLOATS / per_c > 1 ? SHARE_FLOATS / per_c : 1, 0};
    cl.items = cdiv(s->cg, cl.per_item);
    return cl;
}

/* The channels [*c0, *c1) of item it. */
LJ_INLINE void item_channels(const Claims *cl, const Conv *s, int64_t it, int64_t *c0,
                             int64_t *c1) {
    *c0 = it * cl->per_item;
    *c1 = min64(s->cg, *c0 + cl->per_item);
}

/* Item it of a shared B: items [0, cl->items) are the caller's to build
 * (true); the others pack `whole` into `packed` once all of those are
 * built -- items are claimed in order, and no pack item is done before
 * every built one is, so done >= cl->items is all of them. The caller
 * calls lj_shared_done either way. */
LJ_INLINE bool shared_item(const Claims *cl, const LjGemm *whole, float *packed, int64_t it,
                           LjScratch *sc) {
    if (it < cl->items)
        return true;
    lj_shared_wait(sc, cl->items);
    lj_sgemm_pack(whole, packed, it - cl->items);
    return false;
}

/* A plain B (rows ldb apart) of the call's one (image, group), m rows of
 * A by n columns by k. */
LJ_INLINE LjGemm plain_gemm(const float *b, int64_t ldb, int64_t m, int64_t n, int64_t k) {
    LjGemm g = {.m = m, .n = n, .k = k, .b = b, .ldb = ldb, .tail_dots = true};
    return g;
}

/* The 1x1 stride-1 conv's B (the input itself) packed whole, shared;
 * NULL where shares_b says no or the buffer cannot be had. */
static float *shared_pointwise(const Conv *s, const Grid *gr, const float *x, LjScratch *sc) {
    if (!shares_b(s, gr))
        return NULL;
    LjGemm whole = plain_gemm(x, s->h * s->w, s->mg, gr->n, s->cg);
    float *packed = lj_shared_get(sc, (size_t)lj_sgemm_packed_floats(&whole) * sizeof(float));
    if (!packed)
        return NULL;
    int64_t items = lj_sgemm_pack_items(&whole);
    for (int64_t it; (it = lj_shared_claim(sc, items)) >= 0; lj_shared_done(sc))
        lj_sgemm_pack(&whole, packed, it);
    lj_shared_wait(sc, items);
    return packed;
}

/* The subsampled input of the call's one (image, group), then B packed
 * whole from it (*packed), shared; NULL where shares_b says no or the
 * buffer cannot be had. */
static float *shared_subsample(const Conv *s, const Grid *gr, const float *x, float **packed,
                               LjScratch *sc) {
    if (!shares_b(s, gr))
        return NULL;
    int64_t plane = s->oh * s->ow, sub_floats = cdiv(s->cg * plane, VL) * VL;
    LjGemm whole = plain_gemm(NULL, plane, s->mg, gr->n, s->cg);
    float *sub = lj_shared_get(
        sc, (size_t)(sub_floats + lj_sgemm_packed_floats(&whole)) * sizeof(float));
    if (!sub)
        return NULL;
    whole.b = sub;
    *packed = sub + sub_floats;
    Claims cl = claims_of(s, plane);
    int64_t items = cl.items + lj_sgemm_pack_items(&whole);
    for (int64_t it, c0, c1; (it = lj_shared_claim(sc, items)) >= 0; lj_shared_done(sc)) {
        if (!shared_item(&cl, &whole, *packed, it, sc))
            continue;
        item_channels(&cl, s, it, &c0, &c1);
        subsample(s, x, sub, c0, c1, 0, plane);
    }
    lj_shared_wait(sc, items);
    return sub;
}

/* Strided 1x1: B is the group's input channels subsampled (the columns the
 * range reads), built once per (image, group). False if the buffer cannot
 * be had. */
LJ_VECTOR_FN static bool conv_subsampled(const Conv *s, const float *x, const float *w,
                                         const float *bias, const float *sum, float *y,
                                         LjAct act, int64_t lo, int64_t hi, LjScratch *sc, LjGemmFn *gemm) {
    int64_t plane = s->oh * s->ow;
    Grid gr = grid_of(s);
    float *packed = NULL;
    float *shared = shared_subsample(s, &gr, x, &packed, sc);
    float *sub = shared ? shared : lj_scratch_get(sc, LJ_SCRATCH_PLANES, subsampled_bytes(s));
    if (!sub)
        return false;
    int64_t built = shared ? 0 : -1; /* the (image, group) in sub */
    ConvPart p;
    for (int64_t u = lo, first = lo; conv_parts(s, &gr, hi, &p, &u); first = u) {
        int64_t ig = p.img * s->group + p.g;
        if (ig != built) {
            int64_t c0, c1;
            range_cols(&gr, first, hi, &c0, &c1);
            subsample(s, x + (p.img * s->c + p.g * s->cg) * s->h * s->w, sub, 0, s->cg, c0, c1);
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
            .sum = sum ? sum + (p.img * s->m + m0) * plane + p.c0 : NULL,
            .act = act,
            .sc = sc,
            .tail_dots = true,
            .packed = packed,
        };
        gemm(&g);
    }
    if (!shared)
        lj_scratch_put(sc, sub);
    return true;
}

/* The phase rows [*r0, *r1) that output positions [c0, c1) read: from
 * the first one's row to the last one's plus the window's reach below
 * (the dense product reads no position outside its columns' runs). */
LJ_INLINE void band_of(const Conv *s, const LjPhases *q, int64_t c0, int64_t c1, int64_t *r0,
                       int64_t *r1) {
    int64_t reach = (s->kh - 1) * s->dh / s->sh, rows = q->size / q->wq;
    *r0 = c0 / s->ow;
    *r1 = min64((c1 - 1) / s->ow + reach + 1, rows);
}

/* The table of row offsets into the phase planes of rows [r0, r1) of a
 * group's channels (each channel's planes (r1 - r0) rows, row r0 first),
 * shifted back by r0 rows so that column n still reads at koff[k] + n.
 * Returns the floats a channel's planes take. */
LJ_INLINE int64_t band_offsets(const Conv *s, const LjWindow *win, const LjPhases *q,
                               int64_t *koff, int64_t r0, int64_t r1) {
    LjPhases band = *q;
    band.size = (r1 - r0) * q->wq;
    int64_t per_c = s->sh * s->sw * band.size;
    for (int64_t c = 0; c < s->cg; c++)
        for (int64_t i = 0; i < s->kh; i++)
            for (int64_t j = 0; j < s->kw; j++)
                koff[(c * s->kh + i) * s->kw + j] =
                    c * per_c + lj_tap_offset(win, &band, i, j) - r0 * q->wq;
    return per_c;
}

/* Channels [c0, c1) of those planes, from the group's channels xg. */
LJ_INLINE void band_planes(const Conv *s, const LjWindow *win, const LjPhases *q, const float *xg,
                           float *planes, int64_t per_c, int64_t c0, int64_t c1, int64_t r0,
                           int64_t r1) {
    for (int64_t c = c0; c < c1; c++)
        lj_build_phase_rows(win, q, xg + c * s->h * s->w, 0.0f, planes + c * per_c, r0, r1);
}

/* The offsets and the planes of all the group's channels. */
LJ_INLINE int64_t build_band(const Conv *s, const LjWindow *win, const LjPhases *q, const float *xg,
                             float *planes, int64_t *koff, int64_t r0, int64_t r1) {
    int64_t per_c = band_offsets(s, win, q, koff, r0, r1);
    band_planes(s, win, q, xg, planes, per_c, 0, s->cg, r0, r1);
    return per_c;
}

/* The product's B over the phase planes (koff from band_offsets), rows
 * of A from m0 on, the columns of units [c0, c1) of one (image, group). */
LJ_INLINE LjGemm planes_gemm(const Conv *s, const LjPhases *q, const float *planes,
                             const int64_t *koff, int64_t m, int64_t c0, int64_t c1) {
    LjGemm g = {
        .m = m,
        .n = c1 - c0,
        .k = s->cg * s->kh * s->kw,
        .b = planes,
        .koff = koff,
        .wq = q->wq,
        .ow = s->ow,
        .n0 = c0,
        .tail_dots = true, /* shares start at multiples of VL columns */
    };
    return g;
}

/* ---- B split once for AMX's tiles, shared -------------------------------------
 *
 * On the tiles, threads splitting the rows of the call's one (image,
 * group) would each split all of B into bf16 pairs (and build all of its
 * phase planes): 30% of resnet50's work repeated at 2 threads, its 14x14
 * layers no faster than at one (bench_conv --amx --split 2). So B is split
 * once, into the buffer the threads share, in items of SPLIT_COLS columns
 * (a phase-plane B's band for them built first, in the claiming thread's
 * scratch), by whichever threads claim them; the product's tiles then read
 * it (LjGemm.bsplit). The same pairs as each thread's own split: the same
 * result. A value the split cannot carry (infinite, NaN) is flagged with
 * the call's number, and every thread then splits its own, as without. */
enum { SPLIT_COLS = 64, SPLIT_HEAD = 64 };

LJ_INLINE bool shares_split(const Conv *s, const Grid *gr, const LjAmxOps *amx, LjScratch *sc) {
    return amx && gr->by_rows && s->n * s->group == 1 && !libjit_static_scratch && sc &&
           sc->shared && amx->ready(sc);
}

/* B split whole for the tiles (NULL: not shared, see shares_split). planes
 * and koff: this thread's buffers for a band of phase planes (pointwise:
 * unused). */
static const uint16_t *shared_split(const Conv *s, const Grid *gr, const LjAmxOps *amx,
                                    const float *x, float *planes, int64_t *koff, LjScratch *sc) {
    if (!shares_split(s, gr, amx, sc))
        return NULL;
    int64_t kdim = s->cg * s->kh * s->kw, items = cdiv(gr->n, SPLIT_COLS);
    char *buf = lj_shared_get(sc, SPLIT_HEAD + amx->split_bytes(gr->n, kdim));
    if (!buf)
        return NULL;
    _Atomic int64_t *bad = (_Atomic int64_t *)buf; /* the call's number: a value not split */
    uint16_t *out = (uint16_t *)(buf + SPLIT_HEAD);
    int64_t call = sc->shared->call;
    bool pw = is_pointwise(s);
    LjWindow win = window_of(s);
    LjPhases q = lj_phases(&win, PANEL);
    for (int64_t it; (it = lj_shared_claim(sc, items)) >= 0; lj_shared_done(sc)) {
        int64_t c0 = it * SPLIT_COLS, c1 = min64(gr->n, c0 + SPLIT_COLS);
        LjGemm g = plain_gemm(x + c0, s->h * s->w, s->mg, c1 - c0, s->cg);
        if (!pw) {
            int64_t r0, r1;
            band_of(s, &q, c0, c1, &r0, &r1);
            build_band(s, &win, &q, x, planes, koff, r0, r1);
            g = planes_gemm(s, &q, planes, koff, s->mg, c0, c1);
        }
        if (!amx->split(&g, 0, c1 - c0, c1 == gr->n, c0, out))
            atomic_store_explicit(bad, call, memory_order_relaxed);
    }
    lj_shared_wait(sc, items);
    return atomic_load_explicit(bad, memory_order_relaxed) == call ? NULL : out;
}

/* The product on a shared split B; false where the tiles say no (a
 * weight they cannot carry), bsplit cleared: the caller then runs the FMA
 * product on B itself (a phase-plane B's band built first). */
LJ_INLINE bool product_on_split(const LjAmxOps *amx, LjGemm *g) {
    if (amx->product(g))
        return true;
    g->bsplit = NULL;
    return false;
}

/* 1x1, stride 1, no pad: B is the input itself, row-major. */
LJ_VECTOR_FN static void conv_pointwise(const Conv *s, const float *x, const float *w,
                                        const float *bias, const float *sum, float *y, LjAct act,
                                        int64_t lo, int64_t hi, LjScratch *sc,
                                        const LjAmxOps *amx) {
    int64_t plane = s->h * s->w;
    Grid gr = grid_of(s);
    const float *packed = shared_pointwise(s, &gr, x, sc);
    const uint16_t *split = shared_split(s, &gr, amx, x, NULL, NULL, sc);
    ConvPart p;
    for (int64_t u = lo; conv_parts(s, &gr, hi, &p, &u);) {
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
            .sum = sum ? sum + (p.img * s->m + m0) * plane + p.c0 : NULL,
            .act = act,
            .sc = sc,
            .tail_dots = true, /* shares start at multiples of VL columns */
            .packed = packed,
            .bsplit = split,
        };
        if (!split || !product_on_split(amx, &g))
            (amx ? amx->gemm : lj_sgemm)(&g);
    }
}

/* Floats of the call's one (image, group)'s phase planes, rows [r0, r1),
 * with the vector more that planes_bytes has (the packing reads past a
 * run), rounded to whole vectors: the packed B follows them. */
LJ_INLINE int64_t shared_planes_floats(const Conv *s, const LjPhases *q, int64_t r0, int64_t r1) {
    return cdiv(s->cg * s->sh * s->sw * (r1 - r0) * q->wq + VL, VL) * VL;
}

/* The shared B of conv_planes (shares_b): the phase planes, rows [r0,
 * r1) -- items of channels -- then B packed whole from them (gemm.h:
 * lj_sgemm_pack) -- items of panel rows, each begun once every plane is
 * built -- by whichever threads claim them; returns once all are done. */
static void build_shared_b(const Conv *s, const LjWindow *win, const LjPhases *q, const float *x,
                           float *planes, const int64_t *koff, int64_t r0, int64_t r1, int64_t n,
                           LjScratch *sc) {
    int64_t per_c = s->sh * s->sw * (r1 - r0) * q->wq;
    Claims cl = claims_of(s, per_c);
    LjGemm whole = planes_gemm(s, q, planes, koff, s->mg, 0, n);
    float *packed = planes + shared_planes_floats(s, q, r0, r1);
    int64_t items = cl.items + lj_sgemm_pack_items(&whole);
    for (int64_t it, c0, c1; (it = lj_shared_claim(sc, items)) >= 0; lj_shared_done(sc)) {
        if (!shared_item(&cl, &whole, packed, it, sc))
            continue;
        item_channels(&cl, s, it, &c0, &c1);
        band_planes(s, win, q, x, planes, per_c, c0, c1, r0, r1);
    }
    lj_shared_wait(sc, items);
}

/* The rest: B's rows are runs of the phase planes of the group's input
 * channels -- the band of rows the range reads, built once per (image,
 * group) -- through a table of row offsets. False if the buffers cannot
 * be had. */
LJ_VECTOR_FN static bool conv_planes(const Conv *s, const float *x, const float *w,
                                     const float *bias, const float *sum, float *y, LjAct act,
                                     int64_t lo, int64_t hi, LjScratch *sc, const LjAmxOps *amx) {
    LjWindow win = window_of(s);
    LjPhases q = lj_phases(&win, PANEL);
    int64_t kdim = s->cg * s->kh * s->kw;
    Grid gr = grid_of(s);
    int64_t sr0, sr1; /* a shared B: all the rows (by rows, every column) */
    band_of(s, &q, 0, gr.n, &sr0, &sr1);
    float *shared = NULL;
    if (shares_b(s, &gr)) {
        LjGemm whole = planes_gemm(s, &q, NULL, NULL, s->mg, 0, gr.n);
        int64_t floats = shared_planes_floats(s, &q, sr0, sr1) + lj_sgemm_packed_floats(&whole);
        shared = lj_shared_get(sc, (size_t)floats * sizeof(float));
    }
    int64_t *koff = lj_scratch_get(sc, LJ_SCRATCH_PLANES,
                                   shared ? (size_t)kdim * sizeof(int64_t) : planes_bytes(s));
    if (!koff)
        return false;
    float *planes = shared ? shared : (float *)(koff + kdim), *packed = NULL;
    int64_t built = -1; /* the (image, group) in the planes */
    const uint16_t *split = shared ? NULL : shared_split(s, &gr, amx, x, planes, koff, sc);
    if (shared) {
        band_offsets(s, &win, &q, koff, sr0, sr1);
        build_shared_b(s, &win, &q, x, planes, koff, sr0, sr1, gr.n, sc);
        packed = planes + shared_planes_floats(s, &q, sr0, sr1);
        built = 0;
    }
    ConvPart p;
    for (int64_t u = lo, first = lo; conv_parts(s, &gr, hi, &p, &u); first = u) {
        int64_t ig = p.img * s->group + p.g;
        if (ig != built && !split) {
            int64_t c0, c1, r0, r1;
            range_cols(&gr, first, hi, &c0, &c1);
            band_of(s, &q, c0, c1, &r0, &r1);
            build_band(s, &win, &q, x + (p.img * s->c + p.g * s->cg) * s->h * s->w, planes, koff,
                       r0, r1);
            built = ig;
        }
        int64_t m0 = p.g * s->mg + p.r0;
        LjGemm g = planes_gemm(s, &q, planes, koff, p.r1 - p.r0, p.c0, p.c1);
        g.a = w + m0 * kdim;
        g.lda = kdim;
        g.c = y + (p.img * s->m + m0) * s->oh * s->ow + p.c0;
        g.ldc = s->oh * s->ow;
        g.bias = bias ? bias + m0 : NULL;
        g.bias_rows = true;
        g.sum = sum ? sum + (p.img * s->m + m0) * s->oh * s->ow + p.c0 : NULL;
        g.act = act;
        g.sc = sc;
        g.packed = packed;
        g.bsplit = split;
        if (split && product_on_split(amx, &g))
            continue;
        if (split) { /* the tiles said no: this part's own band, on the FMAs */
            int64_t r0, r1;
            band_of(s, &q, p.c0, p.c1, &r0, &r1);
            build_band(s, &win, &q, x, planes, koff, r0, r1);
            lj_sgemm(&g);
            continue;
        }
        (amx ? amx->gemm : lj_sgemm)(&g);
    }
    lj_scratch_put(sc, koff);
    return true;
}

/* Reads past a band's last plane by positions past the output (a tile's
 * tail): at most a tile and a window's width. */
LJ_INLINE int64_t lanes_slack(const Conv *s) {
    return LANES_MAX_PT + s->kw * s->dw + VL;
}

LJ_INLINE size_t lanes_bytes(const Conv *s) {
    LjWindow win = window_of(s);
    LjPhases q = lj_phases(&win, lanes_plan(s).pt);
    int64_t kdim = s->cg * s->kh * s->kw;
    return (size_t)kdim * sizeof(int64_t) +
           (size_t)(kdim * s->mg + s->cg * s->sh * s->sw * q.size + lanes_slack(s)) *
               sizeof(float);
}

/* One tile: positions src[koff[k] + r], r < pt, by the nv vectors of
 * wt[k]; bias and activation; into tmp[r][nv * VL]. */
LJ_INLINE void lanes_tile(const int pt, const int nv, const float *src, const int64_t *koff,
                          int64_t kdim, const float *wt, const float *bias, LjAct act,
                          float *tmp) {
    vf32 acc[LANES_MAX_PT][LANES_NV];
    _Pragma("clang loop unroll(full)") for (int r = 0; r < pt; r++)
        _Pragma("clang loop unroll(full)") for (int v = 0; v < nv; v++)
            acc[r][v] = bias ? lj_load(bias + v * VL) : lj_splat(0);
    _Pragma("clang loop unroll(disable)") for (int64_t k = 0; k < kdim; k++) {
        const float *x = src + koff[k];
        vf32 bv[LANES_NV];
        _Pragma("clang loop unroll(full)") for (int v = 0; v < nv; v++)
            bv[v] = lj_load(wt + k * nv * VL + v * VL);
        _Pragma("clang loop unroll(full)") for (int r = 0; r < pt; r++) {
            float av = x[r];
            _Pragma("clang loop unroll(full)") for (int v = 0; v < nv; v++)
                acc[r][v] += av * bv[v];
        }
    }
    _Pragma("clang loop unroll(full)") for (int r = 0; r < pt; r++)
        _Pragma("clang loop unroll(full)") for (int v = 0; v < nv; v++)
            lj_store(tmp + (r * nv + v) * VL, lj_act(acc[r][v], act));
}

LJ_VECTOR_FN static void lanes_tile_nv(int nv, int pt, const float *src, const int64_t *koff,
                                       int64_t kdim, const float *wt, const float *bias,
                                       LjAct act, float *tmp) {
    if (pt == LANES_ROW_PT)
        lanes_tile(LANES_ROW_PT, 2, src, koff, kdim, wt, bias, act, tmp);
    else if (nv == 1)
        lanes_tile(LANES_ACC, 1, src, koff, kdim, wt, bias, act, tmp);
    else if (nv == 2)
        lanes_tile(LANES_ACC / 2, 2, src, koff, kdim, wt, bias, act, tmp);
    else
        lanes_tile(LANES_ACC / 3, 3, src, koff, kdim, wt, bias, act, tmp);
}

/* The weights with k outer, m inner (wt[k * mg + m]), which the tiles
 * read a vector of output channels at a time: built once per call, in the
 * buffer the call's threads share when there is one (each of a thread's
 * pieces built them again before: four times DenseNet's 147 KB per conv at
 * two threads), else in the caller's own `own`. Claimed LANES_WT_K values
 * of k at a time, each item's block of wt small enough to stay in L1 while
 * its rows of w stream through. */
enum { LANES_WT_K = 16 };

/* Stage b of an LJ_VL x LJ_VL transpose in registers: within each 2b x 2b
 * block, the top-right and bottom-left b x b blocks trade places (one
 * two-source shuffle per row); the stages for b = LJ_VL/2, ..., 1 together
 * transpose. */
#define TR_LO(l, b) (((l) & (b)) ? LJ_VL + (l) - (b) : (l))
#define TR_HI(l, b) (((l) & (b)) ? LJ_VL + (l) : (l) + (b))
#define TR_STAGE(r, b)                                                                      \
    for (int i = 0; i < LJ_VL; i++)                                                         \
        if (!(i & (b))) {                                                                   \
            vf32 lo = __builtin_shufflevector(r[i], r[i + (b)], LJ_LANES(TR_LO, b));        \
            r[i + (b)] = __builtin_shufflevector(r[i], r[i + (b)], LJ_LANES(TR_HI, b));     \
            r[i] = lo;                                                                      \
        }

LJ_INLINE void transpose_block(vf32 r[LJ_VL]) {
#if LJ_VL > 8
    TR_STAGE(r, 8)
#endif
#if LJ_VL > 4
    TR_STAGE(r, 4)
#endif
    TR_STAGE(r, 2)
    TR_STAGE(r, 1)
}

/* wt[k][m] for k in [k0, k1): blocks of LJ_VL x LJ_VL transposed in
 * registers (as scalar copies, DenseNet's 128 -> 32 3x3 on 14x14 ran at
 * 144 GFLOP/s, 150 this way), a scalar tail past the last whole block of k. */
LJ_INLINE void lanes_wt_rows(const float *w, int64_t kdim, int64_t mg, int64_t k0, int64_t k1,
                             float *wt) {
    int64_t kv = k0 + (k1 - k0) / VL * VL;
    for (int64_t m0 = 0; m0 < mg; m0 += VL)
        for (int64_t k = k0; k < kv; k += VL) {
            vf32 r[LJ_VL];
            for (int i = 0; i < VL; i++)
                r[i] = lj_load(w + (m0 + i) * kdim + k);
            transpose_block(r);
            for (int i = 0; i < VL; i++)
                lj_store(wt + (k + i) * mg + m0, r[i]);
        }
    for (int64_t m = 0; m < mg; m++)
        for (int64_t k = kv; k < k1; k++)
            wt[k * mg + m] = w[m * kdim + k];
}

LJ_VECTOR_FN static float *lanes_weights(const float *w, int64_t kdim, int64_t mg, float *own,
                                         LjScratch *sc) {
    float *wt = lj_shared_get(sc, (size_t)(kdim * mg) * sizeof(float));
    int64_t items = cdiv(kdim, LANES_WT_K);
    if (!wt) {
        for (int64_t it = 0; it < items; it++)
            lanes_wt_rows(w, kdim, mg, it * LANES_WT_K, min64(kdim, (it + 1) * LANES_WT_K), own);
        return own;
    }
    for (int64_t it; (it = lj_shared_claim(sc, items)) >= 0;) {
        lanes_wt_rows(w, kdim, mg, it * LANES_WT_K, min64(kdim, (it + 1) * LANES_WT_K), wt);
        lj_shared_done(sc);
    }
    lj_shared_wait(sc, items);
    return wt;
}

/* Units: (image, tile of positions). False if the buffers cannot be had. */
static bool conv_lanes(const Conv *s, const float *x, const float *w, const float *bias,
                       float *y, LjAct act, int64_t lo, int64_t hi, LjScratch *sc) {
    const LanesPlan plan = lanes_plan(s);
    const int64_t nv = s->mg / VL, pt = plan.pt, tiles = plan.tiles;
    const int64_t kdim = s->cg * s->kh * s->kw, plane = s->oh * s->ow, mg = s->mg;
    LjWindow win = window_of(s);
    LjPhases q = lj_phases(&win, pt);
    int64_t *koff = lj_scratch_get(sc, LJ_SCRATCH_PLANES, lanes_bytes(s));
    if (!koff)
        return false;
    float *own_wt = (float *)(koff + kdim), *planes = own_wt + kdim * mg;
    float *wt = lanes_weights(w, kdim, mg, own_wt, sc);
    float tmp[LANES_MAX_ACC * LJ_VL] __attribute__((aligned(64)));
    for (int64_t u = lo; u < hi;) {
        int64_t img = u / tiles, t0 = u % tiles, t1 = min64(tiles, t0 + hi - u);
        /* The band of phase rows tiles [t0, t1) read (band_of); past
         * it, the slack or the next channel's band, read only for
         * positions that are dropped. */
        int64_t ox;
        int64_t p0 = lanes_tile_at(&plan, t0, &ox);
        int64_t p1 = min64(lanes_tile_at(&plan, t1 - 1, &ox) + pt, q.npos);
        int64_t reach = (s->kh - 1) * s->dh / s->sh, rows = q.size / q.wq;
        int64_t r0 = p0 / q.wq, r1 = min64((p1 - 1) / q.wq + reach + 1, rows);
        int64_t per_c = build_band(s, &win, &q, x + img * s->c * s->h * s->w, planes, koff, r0, r1);
        for (int64_t e = 0; e < lanes_slack(s); e++)
            planes[s->cg * per_c + e] = 0;
        float *yi = y + img * s->m * plane;
        for (int64_t t = t0; t < t1; t++) {
            int64_t start = lanes_tile_at(&plan, t, &ox);
            lanes_tile_nv((int)nv, (int)pt, planes + start, koff, kdim, wt, bias, act, tmp);
            for (int64_t r = 0; r < pt; r++) {
                int64_t p = start + r, oy = p / q.wq, col = plan.rows ? ox + r : p % q.wq;
                if (oy >= s->oh || col >= s->ow)
                    continue;
                float *yp = yi + oy * s->ow + col;
                for (int64_t m = 0; m < mg; m++)
                    yp[m * plane] = tmp[r * mg + m];
            }
        }
        u += t1 - t0;
    }
    lj_scratch_put(sc, koff);
    return true;
}

LJ_INLINE void conv_f32(const int64_t *d, void *const *ops, int64_t lo, int64_t hi, LjScratch *sc,
                        const LjAmxOps *amx) {
    Conv s = conv_of(d);
    s.tiles = amx != NULL;
    LjGemmFn *gemm = amx ? amx->gemm : lj_sgemm;
    if (!s.fast) {
        conv_direct(d, ops, lo, hi);
        return;
    }
    const float *bias = lj_nops(d) > 3 ? ops[3] : NULL, *sum = lj_nops(d) > 4 ? ops[4] : NULL;
    LjAct act = lj_act_of(d);
    if (is_depthwise(&s)) {
        if (sum) /* the pass does not fuse a summand into a depthwise conv */
            lj_fail_run(sc, "a depthwise convolution with a summand");
        else
            conv_depthwise(d, &s, ops, bias, act, lo, hi, sc);
        return;
    }
    if (uses_lanes(&s, amx != NULL)) {
        if (!conv_lanes(&s, ops[1], ops[2], bias, ops[0], act, lo, hi, sc))
            lj_fail_run(sc, LJ_NO_SCRATCH);
    } else if (is_pointwise(&s))
        conv_pointwise(&s, ops[1], ops[2], bias, sum, ops[0], act, lo, hi, sc, amx);
    else if (is_subsampled(&s)) {
        if (!conv_subsampled(&s, ops[1], ops[2], bias, sum, ops[0], act, lo, hi, sc, gemm))
            lj_fail_run(sc, LJ_NO_SCRATCH);
    } else if (!conv_planes(&s, ops[1], ops[2], bias, sum, ops[0], act, lo, hi, sc, amx))
        lj_fail_run(sc, LJ_NO_SCRATCH);
}

LIBJIT_KERNEL libjit_conv_f32(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                              LjScratch *sc) {
    conv_f32(d, ops, lo, hi, sc, NULL);
}

/* What one call over all units asks (a --no-threads bundle's fixed
 * scratch): one product per (image, group), all of it (conv_parts).
 * Threads' shares may ask other sizes of their own, growing scratch. */
LJ_INLINE int64_t conv_pack_bytes(const Conv *s, bool by_offsets) {
    return (int64_t)lj_sgemm_scratch(s->mg, product_cols(s), s->cg * s->kh * s->kw, by_offsets);
}

LJ_INLINE int64_t conv_scratch(const int64_t *d, int slot, bool amx) {
    Conv s = conv_of(d);
    s.tiles = amx;
    if (!s.fast)
        return 0;
    if (is_depthwise(&s)) {
        LjWindow g = window_of(&s);
        return slot == LJ_SCRATCH_PLANES ? (int64_t)lj_dwconv_scratch(&g) : 0;
    }
    if (uses_lanes(&s, amx))
        return slot == LJ_SCRATCH_PLANES ? (int64_t)lanes_bytes(&s) : 0;
    bool pointwise = is_pointwise(&s), subsampled = !pointwise && is_subsampled(&s);
    if (slot == LJ_SCRATCH_PACK) {
        int64_t n = conv_pack_bytes(&s, !pointwise && !subsampled);
        return amx && n < LJ_SGEMM_AMX_BYTES ? LJ_SGEMM_AMX_BYTES : n;
    }
    if (slot != LJ_SCRATCH_PLANES || pointwise)
        return 0;
    return (int64_t)(subsampled ? subsampled_bytes(&s) : planes_bytes(&s));
}

LIBJIT_SCRATCH libjit_conv_f32_scratch(const int64_t *d, int slot) {
    return conv_scratch(d, slot, false);
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
    if (lj_nops(d) > 4) { /* a summand: not fused into depthwise convs */
        lj_fail_run(sc, "a depthwise convolution with a summand");
        return;
    }
    const float *bias = lj_nops(d) > 3 ? ops[3] : NULL;
    conv_depthwise(d, &s, ops, bias, lj_act_of(d), lo, hi, sc);
}

#if defined(__x86_64__)
/* The products on AMX's bf16 tiles where the module's CPU has them and
 * the f32 precision allows (code generation: cpu_has_amx), the same
 * units otherwise but for uses_lanes; depthwise convolutions keep their
 * kernels. */
LIBJIT_WORK libjit_conv_amx_f32_work(const int64_t *d) {
    Conv s = conv_of(d);
    return conv_work(d, conv_tiles(&s));
}

LIBJIT_SCRATCH libjit_conv_amx_f32_scratch(const int64_t *d, int slot) {
    Conv s = conv_of(d);
    return conv_scratch(d, slot, conv_tiles(&s));
}

LIBJIT_KERNEL libjit_conv_amx_f32(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                  LjScratch *sc) {
    Conv s = conv_of(d);
    bool tiles = conv_tiles(&s);
    static const LjAmxOps ops_amx = {lj_sgemm_amx_any, lj_sgemm_amx, lj_sgemm_amx_ready,
                                     lj_sgemm_amx_split_bytes, lj_sgemm_amx_split};
    conv_f32(d, ops, lo, hi, sc, tiles ? &ops_amx : NULL);
}
#endif
