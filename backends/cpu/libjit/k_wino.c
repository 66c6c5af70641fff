/* libjit_winograd_conv_f32: a 3x3 stride-1 convolution by Winograd's
 * F(m x m, 3 x 3) (core/winograd.h), its filter transformed at compile time
 * by the winograd pass into u [alpha^2][M][C] -- the A operands of the
 * products, read in place by gemm.h.
 *
 * A work unit is a block of whole tile rows of one image by a block of
 * output channels (channel blocks innermost, so that a thread's range
 * shares its blocks' input transform):
 *  1. input transform: V[xi][c][t] = (B^T d B)[xi] for every input channel
 *     c and tile t of the block (built once per block of tile rows; when
 *     the call has one block, which the threads then split by output
 *     channel, once for all threads, in a buffer they share: shared_v);
 *  2. alpha^2 products Mo[xi] = U[xi] (mb x C) . V[xi] (C x tiles) on the
 *     packed microkernel;
 *  3. output transform A^T Mo A per channel and tile, with the bias, a
 *     fused residual add's summand and the fused activation, stored
 *     clipped to the output.
 * The transforms run over vectors of LJ_VL tiles of one tile row: an input
 * tile row is first copied into a zero-padded row and split by column
 * residue (dk), so that every (i, k) entry of LJ_VL tiles is one vector.
 * Their coefficients are constants once the loops unroll; zero ones are
 * skipped and sums start from -0, so no arithmetic is wasted on them
 * without fast-math. */
#include "backends/cpu/libjit/gemm.h"
#include "backends/cpu/libjit/kernels.h"
#include "core/winograd.h"

/* Tiles per block (whole tile rows): enough columns for the products to
 * amortise their A rows; output channels per block: the conv's own
 * ROWS_MAX; when channels allow, at least UNITS_MIN units, so that two
 * threads share even a small layer, and an even count below
 * UNITS_BALANCED, so that they share it equally. No more: every channel
 * block streams the block's V through the products once more (8 units of
 * 16 channels instead of 2 of 64 made 128 -> 128 at 28x28 7% slower). */
enum { TILES_TARGET = 96, ROWS_MAX = 64, UNITS_MIN = 2, UNITS_BALANCED = 8 };
/* Input channels per claim when the threads share a block's input
 * transform (shared_v): few enough claims that the atomics cost nothing,
 * enough that the threads finish the transform at about the same time. */
enum { SHARE_CHANNELS = 8 };

typedef struct Wino {
    const WinoTransform *t;
    int64_t n, c, h, w, m, oh, ow, pt, pl;
    int64_t ntx, nty;  /* tiles across, down */
    int64_t rpb, nrb;  /* tile rows per block, row blocks */
    int64_t mb, nmb;   /* output channels per block, channel blocks */
    int64_t ldt;       /* a block's tiles, padded: the rows of V, Mo, dk and ot */
    int64_t roww;      /* a padded input row */
    int64_t prows;     /* the input rows of a block's tiles (input_block's plane) */
    bool summed;       /* operand 4, a fused residual add's summand, is there */
} Wino;

LJ_INLINE int64_t up(int64_t x, int64_t to) {
    return (x + to - 1) / to * to;
}

/* Twice the channel blocks, while there are fewer than UNITS_MIN units or
 * an odd count below UNITS_BALANCED, and a block keeps at least 16
 * channels. */
LJ_INLINE void split_once(Wino *s) {
    int64_t units = s->n * s->nrb * s->nmb;
    if ((units < UNITS_MIN || (units % 2 && units < UNITS_BALANCED)) &&
        (s->m + 2 * s->nmb - 1) / (2 * s->nmb) >= 16)
        s->nmb *= 2;
}

LJ_INLINE Wino wino_of(const int64_t *d) {
    Wino s = {0};
    s.t = wino_of_rows(lj_dim(d, 2, 0));
    int mt = s.t ? s.t->m : 4;
    LjImage x = lj_image(d, 1), y = lj_image(d, 0);
    s.n = x.n;
    s.c = x.c;
    s.h = x.h;
    s.w = x.w;
    s.m = y.c;
    s.oh = y.h;
    s.ow = y.w;
    int np;
    const int64_t *p = lj_attr(d, AK_pads, &np);
    s.pt = p && np == 4 ? p[0] : 0;
    s.pl = p && np == 4 ? p[1] : 0;
    s.ntx = (s.ow + mt - 1) / mt;
    s.nty = (s.oh + mt - 1) / mt;
    s.rpb = (TILES_TARGET + s.ntx - 1) / s.ntx;
    s.rpb = s.rpb < s.nty ? s.rpb : s.nty;
    s.nrb = (s.nty + s.rpb - 1) / s.rpb;
    s.rpb = (s.nty + s.nrb - 1) / s.nrb; /* even the blocks out */
    s.nrb = (s.nty + s.rpb - 1) / s.rpb;
    s.nmb = (s.m + ROWS_MAX - 1) / ROWS_MAX;
    /* The conditions only turn false as nmb grows, and one doubling makes
     * the count even and at least UNITS_MIN; three are written out, not a
     * loop, so that a --no-threads bundle's scratch size folds to a
     * constant (libjit is built with -fno-unroll-loops, and O3 cannot
     * count this loop). */
    _Static_assert(UNITS_MIN <= 2, "one doubling reaches UNITS_MIN");
    split_once(&s);
    split_once(&s);
    split_once(&s);
    s.mb = up((s.m + s.nmb - 1) / s.nmb, LJ_GEMM_MR);
    s.nmb = (s.m + s.mb - 1) / s.mb;
    s.ldt = up(s.rpb * s.ntx + 1, LJ_VL) + LJ_VL;
    /* whole vectors, and zeros past the row for split6's last step */
    s.roww = up((s.ntx + 1) * mt + 2, mt * LJ_VL) + mt * LJ_VL;
    s.prows = s.rpb * mt + (s.t ? s.t->alpha - mt : 2);
    s.summed = lj_nops(d) > 4;
    return s;
}

/* The scratch of one unit, in floats: V, Mo, dk, the output tiles (ot)
 * and the padded row. */
LJ_INLINE int64_t v_floats(const Wino *s) {
    int64_t a2 = (int64_t)(s->t->alpha * s->t->alpha);
    return a2 * s->c * s->ldt;
}

LJ_INLINE int64_t scratch_floats(const Wino *s) {
    int64_t a2 = (int64_t)(s->t->alpha * s->t->alpha), mt = s->t->m;
    return v_floats(s) + a2 * s->mb * s->ldt + a2 * s->ldt + mt * mt * s->ldt + s->prows * s->roww;
}

LIBJIT_WORK libjit_winograd_conv_f32_work(const int64_t *d) {
    Wino s = wino_of(d);
    return s.t ? s.n * s.nrb * s.nmb : 1;
}

LIBJIT_SCRATCH libjit_winograd_conv_f32_scratch(const int64_t *d, int slot) {
    Wino s = wino_of(d);
    if (!s.t)
        return 0;
    if (slot == LJ_SCRATCH_PLANES)
        return scratch_floats(&s) * (int64_t)sizeof(float);
    if (slot != LJ_SCRATCH_PACK)
        return 0;
    /* The products' deep block: the largest of the four shapes of units
     * (the last row and channel blocks can be smaller, and a narrower
     * product may ask a deeper block). */
    int64_t r0 = s.mb, r1 = s.m - (s.nmb - 1) * s.mb;
    int64_t c0 = s.rpb * s.ntx, c1 = (s.nty - (s.nrb - 1) * s.rpb) * s.ntx;
    /* Written out, not a loop: it must fold in a --no-threads bundle
     * (libjit is built with -fno-unroll-loops). */
    size_t a = lj_sgemm_scratch(r0, c0, s.c, false), b = lj_sgemm_scratch(r0, c1, s.c, false);
    size_t e = lj_sgemm_scratch(r1, c0, s.c, false), f = lj_sgemm_scratch(r1, c1, s.c, false);
    size_t ab = a > b ? a : b, ef = e > f ? e : f;
    return (int64_t)(ab > ef ? ab : ef);
}

/* The transforms' loops unroll, so that t's coefficients (a constant table)
 * are constants and the zero ones drop out. */
#define LOOP_FULL _Pragma("clang loop unroll(full)")

/* F(4x4, 3x3)'s column split of one padded input row: d[k][tx] = row[4 tx
 * + k] for k < 6 (columns 4 and 5 of a tile are 0 and 1 of the next),
 * LJ_VL tiles a step, each from four vectors by two rounds of even and odd
 * lanes (and four more, a tile on, for k = 4, 5). Lanes past the row's
 * tiles read its zero padding, and store zeros past the tile row: into the
 * next tile row's place, written after, or dk's zero columns. The rows
 * were all written before (input_block's plane), so these loads do not
 * wait on the stores that wrote them, as loads straddling a row just
 * written would (store forwarding takes only a load inside one store). The
 * scalar loop this replaces was a third of a 28x28 Winograd conv (perf of
 * the compiled kernel, which LLVM did not vectorise). */
LJ_INLINE void split6(const float *row, int64_t ntx, int64_t ldt, float *d) {
    for (int64_t tx = 0; tx <= ntx; tx += LJ_VL) {
        const float *r = row + 4 * tx;
        vf32 a0 = lj_load(r), a1 = lj_load(r + LJ_VL), a2 = lj_load(r + 2 * LJ_VL);
        vf32 a3 = lj_load(r + 3 * LJ_VL);
        vf32 e01 = lj_even(a0, a1), o01 = lj_odd(a0, a1);
        vf32 e23 = lj_even(a2, a3), o23 = lj_odd(a2, a3);
        lj_store(d + tx, lj_even(e01, e23));
        lj_store(d + ldt + tx, lj_even(o01, o23));
        lj_store(d + 2 * ldt + tx, lj_odd(e01, e23));
        lj_store(d + 3 * ldt + tx, lj_odd(o01, o23));
        vf32 b0 = lj_load(r + 4), b1 = lj_load(r + 4 + LJ_VL), b2 = lj_load(r + 4 + 2 * LJ_VL);
        vf32 b3 = lj_load(r + 4 + 3 * LJ_VL);
        lj_store(d + 4 * ldt + tx, lj_even(lj_even(b0, b1), lj_even(b2, b3)));
        lj_store(d + 5 * ldt + tx, lj_even(lj_odd(b0, b1), lj_odd(b2, b3)));
    }
}

/* F(2x2, 3x3)'s: d[k][tx] = row[2 tx + k] for k < 4, the even and odd
 * lanes of two vectors, and of two more a tile on for k = 2, 3; as split6
 * (its notes hold here: the roww padding covers the last step's reads). */
LJ_INLINE void split4(const float *row, int64_t ntx, int64_t ldt, float *d) {
    for (int64_t tx = 0; tx <= ntx; tx += LJ_VL) {
        const float *r = row + 2 * tx;
        vf32 a0 = lj_load(r), a1 = lj_load(r + LJ_VL), b0 = lj_load(r + 2);
        vf32 b1 = lj_load(r + 2 + LJ_VL);
        lj_store(d + tx, lj_even(a0, a1));
        lj_store(d + ldt + tx, lj_odd(a0, a1));
        lj_store(d + 2 * ldt + tx, lj_even(b0, b1));
        lj_store(d + 3 * ldt + tx, lj_odd(b0, b1));
    }
}

/* Input transform of channel plane x over a block's tile rows [ty0, ty1)
 * into V (tile index (ty - ty0) * ntx + tx), vectors running over the
 * block's tiles, across tile rows.
 * dk[i][k][t] is entry (i, k) of tile t: the block's input rows are first
 * copied once into a zero-padded plane (`row`, prows rows), then each
 * tile row's al rows split by column residue mod mt by vector shuffles
 * (split6, split4: LLVM does not vectorise a plain loop in the compiled
 * kernel); columns mt .. al-1 of a tile are columns 0 .. of the next. */
LJ_INLINE void input_block(const WinoTransform *t, const int al, const int mt, const Wino *s,
                           const float *x, int64_t ty0, int64_t ty1, float *dk, float *row,
                           float *v) {
    const int64_t ldt = s->ldt, ntx = s->ntx, roww = s->roww;
    /* the block's input rows, zero-padded (rows outside the image all zeros) */
    int64_t nrows = (ty1 - ty0) * mt + al - mt;
    for (int64_t r = 0; r < nrows; r++) {
        float *pr = row + r * roww;
        int64_t yy = ty0 * mt - s->pt + r, xx = 0;
        if (yy >= 0 && yy < s->h) {
            const float *src = x + yy * s->w;
            int64_t end = s->pl + s->w < roww ? s->pl + s->w : roww;
            for (; xx < s->pl; xx++)
                pr[xx] = 0;
            for (; xx + LJ_VL <= end; xx += LJ_VL)
                lj_store(pr + xx, lj_load(src + xx - s->pl));
            for (; xx < end; xx++)
                pr[xx] = src[xx - s->pl];
        }
        for (; xx < roww; xx++)
            pr[xx] = 0;
    }
    for (int64_t ty = ty0; ty < ty1; ty++) {
        int64_t base = (ty - ty0) * ntx;
        for (int i = 0; i < al; i++) {
            float *d = dk + (int64_t)i * al * ldt + base;
            const float *pr = row + ((ty - ty0) * mt + i) * roww;
            if (mt == 4) /* F(4x4); else F(2x2), the only others (wino_of_rows) */
                split6(pr, ntx, ldt, d);
            else
                split4(pr, ntx, ldt, d);
        }
    }
    int64_t ntiles = (ty1 - ty0) * ntx;
    for (int64_t tt = 0; tt < ntiles; tt += LJ_VL) {
        vf32 bd[WINO_MAX_ALPHA][WINO_MAX_ALPHA];
        LOOP_FULL for (int j = 0; j < al; j++) {
            vf32 col[WINO_MAX_ALPHA];
            LOOP_FULL for (int k = 0; k < al; k++)
                col[k] = lj_load(dk + ((int64_t)k * al + j) * ldt + tt);
            LOOP_FULL for (int i = 0; i < al; i++) {
                vf32 acc = lj_splat(-0.0f);
                LOOP_FULL for (int k = 0; k < al; k++) if (t->bt[i][k] != 0)
                    acc += (float)t->bt[i][k] * col[k];
                bd[i][j] = acc;
            }
        }
        LOOP_FULL for (int i = 0; i < al; i++) LOOP_FULL for (int j = 0; j < al; j++) {
            vf32 acc = lj_splat(-0.0f);
            LOOP_FULL for (int k = 0; k < al; k++) if (t->bt[j][k] != 0)
                acc += (float)t->bt[j][k] * bd[i][k];
            lj_store(v + (int64_t)(i * al + j) * s->c * ldt + tt, acc);
        }
    }
}

/* Output transform of one output channel's products mo (entry xi of tile
 * t at mo[xi * mstride + t]) over the block's tiles, bias and activation,
 * into ot[p][q][t]; then interleaved into y's rows: whole tiles in one body
 * per row (an interleaved store group), a last partial tile alone. With a
 * summand r (the channel's plane, laid out as y; fuse-conv-add), ot holds
 * the sums before the activation, and the interleave adds r and applies
 * the activation as it writes y: r is in y's order, not the tiles'. */
LJ_INLINE void sum_row(float *dst, const float *src, int64_t ldt, const float *r, int mt,
                       int64_t whole, int64_t ow, LjAct act) {
    for (int64_t tx = 0; tx < whole; tx++)
        LOOP_FULL for (int q = 0; q < mt; q++) {
            int64_t o = tx * mt + q;
            dst[o] = lj_act(lj_splat(src[q * ldt + tx] + r[o]), act)[0];
        }
    for (int q = 0; whole * mt + q < ow; q++)
        dst[whole * mt + q] =
            lj_act(lj_splat(src[q * ldt + whole] + r[whole * mt + q]), act)[0];
}

LJ_INLINE void output_block(const WinoTransform *t, const int al, const int mt, const Wino *s,
                            const float *mo, int64_t mstride, float bias, const float *r,
                            LjAct act, int64_t ty0, int64_t ty1, float *ot, float *y) {
    LjAct tile_act = r ? (LjAct){.kind = ACT_NONE} : act;
    const int64_t ldt = s->ldt, ntx = s->ntx, ntiles = (ty1 - ty0) * ntx;
    for (int64_t tt = 0; tt < ntiles; tt += LJ_VL) {
        vf32 am[WINO_MAX_M][WINO_MAX_ALPHA];
        LOOP_FULL for (int j = 0; j < al; j++) {
            vf32 col[WINO_MAX_ALPHA];
            LOOP_FULL for (int i = 0; i < al; i++)
                col[i] = lj_load(mo + (int64_t)(i * al + j) * mstride + tt);
            LOOP_FULL for (int p = 0; p < mt; p++) {
                vf32 acc = lj_splat(-0.0f);
                LOOP_FULL for (int i = 0; i < al; i++) if (t->at[p][i] != 0)
                    acc += (float)t->at[p][i] * col[i];
                am[p][j] = acc;
            }
        }
        LOOP_FULL for (int p = 0; p < mt; p++) LOOP_FULL for (int q = 0; q < mt; q++) {
            vf32 acc = lj_splat(bias);
            LOOP_FULL for (int j = 0; j < al; j++) if (t->at[q][j] != 0)
                acc += (float)t->at[q][j] * am[p][j];
            lj_store(ot + (int64_t)(p * mt + q) * ldt + tt, lj_act(acc, tile_act));
        }
    }
    int64_t whole = s->ow / mt;
    for (int64_t ty = ty0; ty < ty1; ty++)
        for (int p = 0; p < mt && ty * mt + p < s->oh; p++) {
            float *dst = y + (ty * mt + p) * s->ow;
            const float *src = ot + (int64_t)p * mt * ldt + (ty - ty0) * ntx;
            if (r) {
                sum_row(dst, src, ldt, r + (ty * mt + p) * s->ow, mt, whole, s->ow, act);
                continue;
            }
            for (int64_t tx = 0; tx < whole; tx++)
                LOOP_FULL for (int q = 0; q < mt; q++) dst[tx * mt + q] = src[q * ldt + tx];
            for (int q = 0; whole * mt + q < s->ow; q++)
                dst[whole * mt + q] = src[q * ldt + whole];
        }
}

/* The input transform of the one block into the V that the call's threads
 * share: channels in claims of SHARE_CHANNELS, whoever gets there first,
 * then a wait for the others' claims. */
LJ_INLINE void shared_input(const WinoTransform *t, const int al, const int mt, const Wino *s,
                            const float *x, float *dk, float *row, float *v, LjScratch *sc) {
    int64_t items = (s->c + SHARE_CHANNELS - 1) / SHARE_CHANNELS;
    for (int64_t it; (it = lj_shared_claim(sc, items)) >= 0;) {
        int64_t c1 = (it + 1) * SHARE_CHANNELS < s->c ? (it + 1) * SHARE_CHANNELS : s->c;
        for (int64_t c = it * SHARE_CHANNELS; c < c1; c++)
            input_block(t, al, mt, s, x + c * s->h * s->w, 0, s->nty, dk, row, v + c * s->ldt);
        lj_shared_done(sc);
    }
    lj_shared_wait(sc, items);
}

/* Units [lo, hi) with the scratch `buf` (V first, unless the threads share
 * it: shared_v, the call's one block). */
LJ_INLINE void wino_units(const WinoTransform *t, const int al, const int mt, const Wino *s, void *const *ops,
                          const float *bias, LjAct act, int64_t lo, int64_t hi, float *buf,
                          float *shared_v, LjScratch *sc) {
    const float *x = ops[1], *u = ops[2], *sum = s->summed ? ops[4] : NULL;
    float *y = ops[0];
    int64_t a2 = al * al;
    float *v = shared_v ? shared_v : buf, *mo = shared_v ? buf : v + v_floats(s);
    float *dk = mo + a2 * s->mb * s->ldt;
    float *ot = dk + a2 * s->ldt, *row = ot + mt * mt * s->ldt;
    int64_t built = -1;
    if (shared_v) {
        shared_input(t, al, mt, s, x, dk, row, v, sc);
        built = 0;
    }
    for (int64_t unit = lo; unit < hi; unit++) {
        int64_t block = unit / s->nmb, mbk = unit % s->nmb;
        int64_t img = block / s->nrb, rb = block % s->nrb;
        int64_t ty0 = rb * s->rpb, ty1 = ty0 + s->rpb < s->nty ? ty0 + s->rpb : s->nty;
        int64_t ntiles = (ty1 - ty0) * s->ntx;
        if (block != built) {
            for (int64_t c = 0; c < s->c; c++)
                input_block(t, al, mt, s, x + (img * s->c + c) * s->h * s->w, ty0, ty1, dk, row,
                            v + c * s->ldt);
            built = block;
        }
        int64_t m0 = mbk * s->mb, rows = s->m - m0 < s->mb ? s->m - m0 : s->mb;
        for (int64_t xi = 0; xi < a2; xi++) {
            LjGemm g = {
                .m = rows,
                .n = ntiles,
                .k = s->c,
                .a = u + (xi * s->m + m0) * s->c,
                .lda = s->c,
                .b = v + xi * s->c * s->ldt,
                .ldb = s->ldt,
                .c = mo + xi * s->mb * s->ldt,
                .ldc = s->ldt,
                .sc = sc,
            };
            lj_sgemm(&g);
        }
        for (int64_t r = 0; r < rows; r++) {
            int64_t m = m0 + r;
            int64_t plane = (img * s->m + m) * s->oh * s->ow;
            output_block(t, al, mt, s, mo + r * s->ldt, s->mb * s->ldt, bias ? bias[m] : 0.0f,
                         sum ? sum + plane : NULL, act, ty0, ty1, ot, y + plane);
        }
    }
}

LJ_VECTOR_FN static void wino_run4(const Wino *s, void *const *ops, const float *bias, LjAct act,
                                 int64_t lo, int64_t hi, float *buf, float *shared_v,
                                 LjScratch *sc) {
    wino_units(&wino_f4, 6, 4, s, ops, bias, act, lo, hi, buf, shared_v, sc);
}

LJ_VECTOR_FN static void wino_run2(const Wino *s, void *const *ops, const float *bias, LjAct act,
                                 int64_t lo, int64_t hi, float *buf, float *shared_v,
                                 LjScratch *sc) {
    wino_units(&wino_f2, 4, 2, s, ops, bias, act, lo, hi, buf, shared_v, sc);
}

LIBJIT_KERNEL libjit_winograd_conv_f32(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                       LjScratch *sc) {
    Wino s = wino_of(d);
    /* One block (one image whose tiles make one row block; the threads
     * split its output channels): its input transform, which every
     * thread's units read, is built once into a buffer the threads share
     * rather than by each thread (bench_wino --split --cold counts 5-17% of
     * the conv repeated on 28x28 and smaller maps; in a model, where the
     * input is warm, about 2% of the convs' CPU time). Bit for bit the
     * same V, so the same result. */
    float *shared_v = s.t && s.n * s.nrb == 1
                          ? lj_shared_get(sc, (size_t)v_floats(&s) * sizeof(float))
                          : NULL;
    int64_t own = s.t ? scratch_floats(&s) - (shared_v ? v_floats(&s) : 0) : 0;
    float *buf = s.t ? lj_scratch_get(sc, LJ_SCRATCH_PLANES, (size_t)own * sizeof(float)) : NULL;
    if (!buf) { /* no transform: the winograd pass makes only those wino_of_rows has */
        lj_fail_run(sc, s.t ? LJ_NO_SCRATCH : "a Winograd tile size this kernel does not have");
        return;
    }
    /* dk's columns past the tiles are read by the last vector: zeros. */
    int64_t a2 = s.t->alpha * s.t->alpha;
    float *dk = buf + (shared_v ? 0 : v_floats(&s)) + a2 * s.mb * s.ldt;
    for (int64_t i = 0; i < a2 * s.ldt; i++)
        dk[i] = 0;
    const float *bias = lj_nops(d) > 3 ? ops[3] : NULL;
    if (s.t->m == 4)
        wino_run4(&s, ops, bias, lj_act_of(d), lo, hi, buf, shared_v, sc);
    else
        wino_run2(&s, ops, bias, lj_act_of(d), lo, hi, buf, shared_v, sc);
    lj_scratch_put(sc, buf);
}
