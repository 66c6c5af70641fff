/* resize for every element kind, as libjit_resize_any: nearest, linear and
 * cubic interpolation (with antialias and exclude_outside), every
 * coordinate transformation mode the interpreter has, including
 * tf_crop_and_resize.
 *
 * Interpolation is separable. Each call first builds, for every axis, the
 * input offsets and weights each output coordinate reads (core/resize.h,
 * the interpreter's rules, one source for both). A unit of work is one output row (every axis but
 * the last fixed): for each combination of the leading axes' taps, with
 * their weight product, the row accumulates the last axis's taps. Each
 * element thus sums the same products in the same order as the
 * interpreter's (leading taps outermost, last axis innermost), in double,
 * rounded once. Nearest mode, where every axis has one tap of weight 1,
 * copies elements, which keeps 64-bit integers exact. */
#include <math.h>

/* No fused multiply-adds: the interpreter rounds every product, and these
 * kernels are held to its results exactly. */
#pragma STDC FP_CONTRACT OFF

#include "backends/cpu/libjit/elem.h"
#include "backends/cpu/libjit/kernels.h"
#include "backends/cpu/libjit/vec.h"
#include "core/resize.h"

typedef struct Rs {
    ResizeFilter f;
    int rank, elem;
    double extrapolation;
    int nscales, nroi;
    const int64_t *scales, *roi; /* doubles' bits */
    int64_t in[DESC_MAX_RANK], out[DESC_MAX_RANK], xs[DESC_MAX_RANK];
    int64_t per[DESC_MAX_RANK]; /* most taps of one output coordinate */
} Rs;

/* One axis's taps: output coordinate o reads off[k] with weight w[k] for k
 * in [first[o], first[o + 1]); outside[o]: a tf_crop_and_resize coordinate
 * off the input. */
typedef struct RsAxis {
    int64_t *first, *off;
    double *w;
    int64_t *outside;
} RsAxis;

LJ_INLINE double scale_attr(const Rs *p, int i) {
    return p->scales && i < p->nscales ? (double)(float)lj_bits_f64(p->scales[i]) : -1;
}

/* The filter's stretch: a downscaling antialiased filter widens by 1/scale. */
LJ_INLINE double axis_scale(const Rs *p, int i) {
    double s = scale_attr(p, i);
    return s > 0 ? s : (double)p->out[i] / (double)p->in[i];
}

LJ_INLINE Rs rs_plan(const int64_t *d) {
    Rs p = {.rank = lj_rank(d, 0), .elem = lj_elem(d, 0)};
    p.f.mode = (int)lj_attr_int(d, AK_mode, MODE_NEAREST);
    p.f.ctm = (int)lj_attr_int(d, AK_coordinate_transformation_mode, CTM_HALF_PIXEL);
    p.f.nearest_mode = (int)lj_attr_int(d, AK_nearest_mode, NEAREST_ROUND_PREFER_FLOOR);
    p.f.cubic_a = lj_attr_float(d, AK_cubic_coeff_a, (double)-0.75f);
    p.extrapolation = lj_attr_float(d, AK_extrapolation_value, 0.0);
    p.f.exclude_outside = lj_attr_int(d, AK_exclude_outside, 0) != 0;
    p.f.antialias = lj_attr_int(d, AK_antialias, 0) != 0;
    p.scales = lj_attr(d, AK_scales, &p.nscales);
    p.roi = lj_attr(d, AK_roi, &p.nroi);
    int64_t st = 1;
    for (int i = p.rank - 1; i >= 0; i--) {
        p.in[i] = lj_dim(d, 1, i);
        p.out[i] = lj_dim(d, 0, i);
        p.xs[i] = st;
        st *= p.in[i];
    }
    for (int i = 0; i < p.rank; i++) {
        int64_t cap = resize_coeff_cap(&p.f, axis_scale(&p, i));
        p.per[i] = cap < p.in[i] ? cap : p.in[i];
        if (p.per[i] < 1)
            p.per[i] = 1;
    }
    return p;
}

/* 8-byte words of axis i's tables, and of the filter coefficients. */
LJ_INLINE int64_t axis_words(const Rs *p, int i) {
    return 2 * (p->out[i] + 1) + 2 * p->out[i] * p->per[i] + 1;
}

LJ_INLINE int64_t rs_words(const Rs *p) {
    int64_t n = 0, cap = 0;
    for (int i = 0; i < p->rank; i++) {
        n += axis_words(p, i);
        cap = 2 * p->per[i] + 8 > cap ? 2 * p->per[i] + 8 : cap;
    }
    return n + cap + 2 * (p->rank ? p->out[p->rank - 1] : 1);
}

LJ_INLINE bool rs_axis(const Rs *p, int i, RsAxis *t, double *c, int64_t cap) {
    int64_t in = p->in[i], out = p->out[i];
    double sa = scale_attr(p, i), scale = sa, width;
    if (sa > 0) {
        width = (double)((float)sa * (float)in); /* f32 as in the reference */
    } else {
        scale = (double)out / (double)in;
        width = scale * (double)in;
    }
    int r = p->rank;
    double r0 = p->roi && i < p->nroi ? (double)(float)lj_bits_f64(p->roi[i]) : 0;
    double r1 = p->roi && r + i < p->nroi ? (double)(float)lj_bits_f64(p->roi[r + i]) : 1;
    int64_t k = 0;
    for (int64_t o = 0; o < out; o++) {
        t->first[o] = k;
        double x_ori = resize_source(&p->f, (double)o, scale, width, out, in, r0, r1);
        t->outside[o] =
            p->f.ctm == CTM_TF_CROP_AND_RESIZE && (x_ori < 0 || x_ori > (double)(in - 1));
        if (!t->outside[o] &&
            !resize_coord_taps(&p->f, t->off, t->w, &k, x_ori, scale, in, p->xs[i], c, cap))
            return false;
    }
    t->first[out] = k;
    return true;
}

LIBJIT_WORK libjit_resize_any_work(const int64_t *d) {
    Rs p = rs_plan(d);
    int64_t rows = 1;
    for (int i = 0; i + 1 < p.rank; i++)
        rows *= p.out[i];
    return rows > 0 ? rows : 1;
}

LIBJIT_SCRATCH libjit_resize_any_scratch(const int64_t *d, int slot) {
    Rs p = rs_plan(d);
    return slot == LJ_SCRATCH_PLANES ? rs_words(&p) * 8 : 0;
}

/* Output row `row` (every axis but the last), acc of out_last doubles. */
LJ_INLINE void rs_row(const Rs *p, const RsAxis *t, const void *x, void *y, int64_t row,
                      double *acc) {
    int r = p->rank, last = r - 1;
    int64_t olast = p->out[last], idx[DESC_MAX_RANK], lo[DESC_MAX_RANK], hi[DESC_MAX_RANK],
            k[DESC_MAX_RANK];
    size_t es = lj_elem_size(p->elem);
    int64_t rest = row;
    bool outside = false, empty = false;
    for (int i = last - 1; i >= 0; i--) {
        idx[i] = rest % p->out[i];
        rest /= p->out[i];
    }
    for (int i = 0; i < last; i++) {
        outside |= t[i].outside[idx[i]] != 0;
        lo[i] = k[i] = t[i].first[idx[i]];
        hi[i] = t[i].first[idx[i] + 1];
        empty |= hi[i] == lo[i];
    }
    const RsAxis *tl = &t[last];
    int64_t y0 = row * olast;
    if (outside || empty) {
        for (int64_t o = 0; o < olast; o++)
            lj_st_f64(p->elem, y, y0 + o, outside || tl->outside[o] ? p->extrapolation : NAN);
        return;
    }
    bool single = true; /* the leading axes: one tap of weight 1 each */
    for (int i = 0; i < last; i++)
        single &= hi[i] - lo[i] == 1 && t[i].w[lo[i]] == 1;
    if (p->f.mode == MODE_NEAREST) { /* one tap of weight 1 on every axis */
        int64_t base = 0;
        for (int i = 0; i < last; i++)
            base += t[i].off[lo[i]];
        for (int64_t o = 0; o < olast; o++) {
            if (tl->outside[o] || tl->first[o + 1] == tl->first[o])
                lj_st_f64(p->elem, y, y0 + o, tl->outside[o] ? p->extrapolation : NAN);
            else
                memcpy((char *)y + (size_t)(y0 + o) * es,
                       (const char *)x + (size_t)(base + tl->off[tl->first[o]]) * es, es);
        }
        return;
    }
    for (int64_t o = 0; o < olast; o++)
        acc[o] = 0;
    for (;;) {
        int64_t off = 0;
        double w = 1;
        for (int i = 0; i < last; i++) {
            off += t[i].off[k[i]];
            w *= t[i].w[k[i]];
        }
        for (int64_t o = 0; o < olast; o++) {
            double a = acc[o];
            for (int64_t j = tl->first[o]; j < tl->first[o + 1]; j++)
                a += w * tl->w[j] * lj_ld_f64(p->elem, x, off + tl->off[j]);
            acc[o] = a;
        }
        int i = last - 1;
        for (; i >= 0; i--) {
            if (++k[i] < hi[i])
                break;
            k[i] = lo[i];
        }
        if (i < 0)
            break;
    }
    int64_t base = 0;
    for (int i = 0; i < last; i++)
        base += t[i].off[lo[i]];
    for (int64_t o = 0; o < olast; o++) {
        int64_t f = tl->first[o], n = tl->first[o + 1] - f;
        if (!tl->outside[o] && single && n == 1 && tl->w[f] == 1) /* a copy, as nearest */
            memcpy((char *)y + (size_t)(y0 + o) * es, (const char *)x + (size_t)(base + tl->off[f]) * es,
                   es);
        else
            lj_st_f64(p->elem, y, y0 + o, tl->outside[o] ? p->extrapolation : n == 0 ? NAN : acc[o]);
    }
}

/* Builds every axis's tables in buf (rs_words words) into t; false, with
 * the failure recorded, when the geometry is absurd (the interpreter
 * reports it too). acc: room for a row of doubles after the tables. */
LJ_INLINE bool rs_tables(const Rs *p, int64_t *buf, RsAxis *t, double **acc, LjScratch *sc) {
    int64_t *at = buf, cap = 0;
    for (int i = 0; i < p->rank; i++) {
        int64_t o = p->out[i], n = o * p->per[i];
        t[i].first = at;
        t[i].outside = at + o + 1;
        t[i].off = at + 2 * (o + 1);
        t[i].w = (double *)(void *)(at + 2 * (o + 1) + n);
        at += axis_words(p, i);
        cap = 2 * p->per[i] + 8 > cap ? 2 * p->per[i] + 8 : cap;
    }
    double *c = (double *)(void *)at;
    *acc = c + cap;
    bool ok = true;
    for (int i = 0; i < p->rank && ok; i++)
        ok = rs_axis(p, i, &t[i], c, cap);
    if (!ok)
        lj_fail_run(sc, "a coordinate far outside the input");
    return ok;
}

/* The scratch of a call: the per-axis tap tables (rs_tables) then `extra`
 * words for the caller; NULL, with the run failed, when the scratch cannot
 * be had or a coordinate falls far outside the input. The caller puts back
 * what it got. */
static int64_t *rs_prepare(const Rs *p, int64_t extra, RsAxis *t, double **acc, LjScratch *sc) {
    int64_t *buf = lj_scratch_get(sc, LJ_SCRATCH_PLANES, (size_t)(rs_words(p) + extra) * 8);
    if (!buf) {
        lj_fail_run(sc, LJ_NO_SCRATCH);
        return NULL;
    }
    if (!rs_tables(p, buf, t, acc, sc)) {
        lj_scratch_put(sc, buf);
        return NULL;
    }
    return buf;
}

/* Operands: y, x. */
LIBJIT_KERNEL libjit_resize_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                LjScratch *sc) {
    Rs p = rs_plan(d);
    int64_t rows = 1;
    for (int i = 0; i < p.rank; i++)
        rows *= p.out[i];
    if (rows == 0)
        return;
    if (p.rank == 0) {
        memcpy(ops[0], ops[1], lj_elem_size(p.elem));
        return;
    }
    RsAxis t[DESC_MAX_RANK];
    double *acc;
    int64_t *buf = rs_prepare(&p, 0, t, &acc, sc);
    if (!buf)
        return;
    int64_t nrows = libjit_resize_any_work(d);
    for (int64_t row = lo; row < hi && row < nrows; row++)
        rs_row(&p, t, ops[1], ops[0], row, acc);
    lj_scratch_put(sc, buf);
}

/* libjit_resize_f32: the f32 form for what real models resize: nearest,
 * linear and cubic (without antialias) over the last two axes (H and W of
 * NCHW, every leading axis kept), any coordinate mode but
 * tf_crop_and_resize. It reads the same per-axis taps as
 * libjit_resize_any (rs_tables, the interpreter's rules), then turns H's
 * and W's into compact tables of at most RS_TAPS source positions and f32
 * weights per output coordinate, once per call. A unit is still one output
 * row (plane, oy).
 *
 * Nearest copies: a row whose W taps are the identity is one memcpy, one
 * that doubles W (every integer-2x upsampling) duplicates each input lane
 * with vector permutes, others gather through the index table; an output
 * row with the same source row as the one above it copies that one.
 * Linear and cubic are separable: an input row interpolated along W is
 * kept (RS_TAPS such rows, keyed by plane and source row, are live at a
 * time, so an upsampling interpolates each input row once), and each
 * output row is a vector sum of its H taps' rows times their weights. Only
 * a coordinate's own taps are read (no zero weight meets an inf).
 *
 * Nearest is exact. Linear and cubic sum in f32, not in double as the
 * interpreter does (tests/kernels, test_resize, bounds the difference).
 * Every other resize (antialias, crop, another axis resized, rank 1) runs
 * rows of libjit_resize_any with the tables already built. */
enum { RS_TAPS = 4 };

typedef struct RsTap {
    int32_t n, i[RS_TAPS]; /* source positions on the axis */
    float w[RS_TAPS];
} RsTap;

/* The last two axes, or false when the tables are not of the f32 form. */
LJ_INLINE bool rs_fast_axis(const Rs *p, const RsAxis *t, int i, RsTap *tap) {
    int64_t stride = p->xs[i];
    for (int64_t o = 0; o < p->out[i]; o++) {
        int64_t f = t->first[o], n = t->first[o + 1] - f;
        if (t->outside[o] || n < 1 || n > RS_TAPS || (p->f.mode == MODE_NEAREST && (n != 1 || t->w[f] != 1)))
            return false;
        tap[o].n = (int32_t)n;
        for (int64_t k = 0; k < n; k++) {
            tap[o].i[k] = (int32_t)(t->off[f + k] / stride);
            tap[o].w[k] = (float)t->w[f + k];
        }
    }
    return true;
}

LJ_INLINE bool rs_fast_plan(const Rs *p) {
    if (p->elem != ELEM_F32 || p->rank < 2 || p->f.ctm == CTM_TF_CROP_AND_RESIZE ||
        (p->f.mode != MODE_NEAREST && p->f.antialias))
        return false;
    for (int i = 0; i + 2 < p->rank; i++)
        if (p->in[i] != p->out[i])
            return false;
    return p->in[p->rank - 1] < INT32_MAX && p->in[p->rank - 2] < INT32_MAX;
}

/* The leading axes' taps must be the identity. */
LJ_INLINE bool rs_leading_identity(const Rs *p, const RsAxis *t) {
    for (int i = 0; i + 2 < p->rank; i++)
        for (int64_t o = 0; o < p->out[i]; o++) {
            int64_t f = t[i].first[o];
            if (t[i].outside[o] || t[i].first[o + 1] - f != 1 || t[i].off[f] != o * p->xs[i] ||
                t[i].w[f] != 1)
                return false;
        }
    return true;
}

/* Words of the compact tables and the RS_TAPS interpolated rows. */
LJ_INLINE int64_t rs_fast_words(const Rs *p) {
    int64_t oh = p->out[p->rank - 2], ow = p->out[p->rank - 1];
    int64_t tap = (int64_t)(sizeof(RsTap) + 7) / 8;
    return tap * (oh + ow) + (RS_TAPS * ow + 1) / 2 + 8;
}

#define RS_DUP_LO(l, _) ((l) / 2)
#define RS_DUP_HI(l, _) ((LJ_VL + (l)) / 2)

/* y[2i] = y[2i + 1] = x[i] for i < n. */
LJ_INLINE void rs_double(float *restrict y, const float *restrict x, int64_t n) {
    int64_t i = 0;
    for (; i + LJ_VL <= n; i += LJ_VL) {
        vf32 v = lj_load(x + i);
        lj_store(y + 2 * i, __builtin_shufflevector(v, v, LJ_LANES(RS_DUP_LO, )));
        lj_store(y + 2 * i + LJ_VL, __builtin_shufflevector(v, v, LJ_LANES(RS_DUP_HI, )));
    }
    for (; i < n; i++)
        y[2 * i] = y[2 * i + 1] = x[i];
}

/* Row src of an input plane interpolated along W into h. */
LJ_INLINE void rs_lerp_w(float *restrict h, const float *restrict src, const RsTap *tw, int64_t ow) {
    for (int64_t o = 0; o < ow; o++) {
        const RsTap *t = &tw[o];
        float v = t->w[0] * src[t->i[0]];
        if (t->n == 2) {
            v += t->w[1] * src[t->i[1]];
        } else {
            for (int k = 1; k < t->n; k++)
                v += t->w[k] * src[t->i[k]];
        }
        h[o] = v;
    }
}

/* y = sum of w[k] * rows[k] for k < n, in order. */
LJ_INLINE void rs_blend(float *restrict y, const float *const *rows, const float *w, int n,
                        int64_t len) {
    vf32 v0 = lj_splat(w[0]);
    const float *a = rows[0];
    int64_t i = 0;
    if (n == 1) {
        for (; i + LJ_VL <= len; i += LJ_VL)
            lj_store(y + i, v0 * lj_load(a + i));
        for (; i < len; i++)
            y[i] = w[0] * a[i];
        return;
    }
    const float *b = rows[1];
    vf32 v1 = lj_splat(w[1]);
    if (n == 2) {
        for (; i + LJ_VL <= len; i += LJ_VL)
            lj_store(y + i, v0 * lj_load(a + i) + v1 * lj_load(b + i));
        for (; i < len; i++)
            y[i] = w[0] * a[i] + w[1] * b[i];
        return;
    }
    for (; i + LJ_VL <= len; i += LJ_VL) {
        vf32 acc = v0 * lj_load(a + i) + v1 * lj_load(b + i);
        for (int k = 2; k < n; k++)
            acc += lj_splat(w[k]) * lj_load(rows[k] + i);
        lj_store(y + i, acc);
    }
    for (; i < len; i++) {
        float acc = w[0] * a[i] + w[1] * b[i];
        for (int k = 2; k < n; k++)
            acc += w[k] * rows[k][i];
        y[i] = acc;
    }
}

typedef struct RsRows {
    float *h[RS_TAPS];  /* input rows interpolated along W */
    int64_t k[RS_TAPS]; /* which: plane * ih + source row; -1 none */
} RsRows;

/* The interpolated rows of keys[0 .. n), each made (in a slot that holds
 * none of them) unless it is kept already. */
LJ_INLINE void rs_rows_w(RsRows *r, const int64_t *keys, int n, const float **rows, const float *x,
                         int64_t iw, const RsTap *tw, int64_t ow) {
    for (int j = 0; j < n; j++) {
        rows[j] = NULL;
        for (int s = 0; s < RS_TAPS; s++)
            if (r->k[s] == keys[j])
                rows[j] = r->h[s];
    }
    for (int j = 0; j < n; j++) {
        if (rows[j])
            continue;
        int s = 0;
        for (; s < RS_TAPS; s++) {
            bool wanted = false;
            for (int q = 0; q < n; q++)
                wanted |= r->k[s] == keys[q];
            if (!wanted)
                break;
        }
        rs_lerp_w(r->h[s], x + keys[j] * iw, tw, ow);
        r->k[s] = keys[j];
        rows[j] = r->h[s];
    }
}

LJ_VECTOR_FN static void rs_fast_rows(const Rs *p, const RsTap *th, const RsTap *tw, float *rowbuf,
                                      const float *x, float *y, int64_t lo, int64_t hi) {
    int r = p->rank;
    int64_t ih = p->in[r - 2], iw = p->in[r - 1], oh = p->out[r - 2], ow = p->out[r - 1];
    if (p->f.mode == MODE_NEAREST) {
        bool same = ow == iw, dbl = ow == 2 * iw;
        for (int64_t o = 0; o < ow; o++) {
            same &= tw[o].i[0] == o;
            dbl &= tw[o].i[0] == o / 2;
        }
        for (int64_t row = lo; row < hi; row++) {
            int64_t plane = row / oh, oy = row % oh;
            float *dst = y + row * ow;
            if (row > lo && oy > 0 && th[oy].i[0] == th[oy - 1].i[0]) {
                memcpy(dst, dst - ow, (size_t)ow * sizeof(float));
                continue;
            }
            const float *src = x + (plane * ih + th[oy].i[0]) * iw;
            if (same)
                memcpy(dst, src, (size_t)ow * sizeof(float));
            else if (dbl)
                rs_double(dst, src, iw);
            else
                for (int64_t o = 0; o < ow; o++)
                    dst[o] = src[tw[o].i[0]];
        }
        return;
    }
    RsRows rr;
    for (int s = 0; s < RS_TAPS; s++) {
        rr.h[s] = rowbuf + s * ow;
        rr.k[s] = -1;
    }
    for (int64_t row = lo; row < hi; row++) {
        int64_t plane = row / oh, oy = row % oh, keys[RS_TAPS];
        const float *rows[RS_TAPS];
        int n = th[oy].n;
        for (int j = 0; j < n; j++)
            keys[j] = plane * ih + th[oy].i[j];
        rs_rows_w(&rr, keys, n, rows, x, iw, tw, ow);
        rs_blend(y + row * ow, rows, th[oy].w, n, ow);
    }
}

LIBJIT_WORK libjit_resize_f32_work(const int64_t *d) {
    return libjit_resize_any_work(d);
}

LIBJIT_SCRATCH libjit_resize_f32_scratch(const int64_t *d, int slot) {
    Rs p = rs_plan(d);
    int64_t fast = rs_fast_plan(&p) ? rs_fast_words(&p) : 0;
    return slot == LJ_SCRATCH_PLANES ? (rs_words(&p) + fast) * 8 : 0;
}

/* Operands: y, x. */
LIBJIT_KERNEL libjit_resize_f32(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                LjScratch *sc) {
    Rs p = rs_plan(d);
    if (!rs_fast_plan(&p)) {
        libjit_resize_any(d, ops, lo, hi, sc);
        return;
    }
    int64_t nrows = libjit_resize_any_work(d);
    hi = hi < nrows ? hi : nrows;
    for (int i = 0; i < p.rank; i++)
        if (p.out[i] == 0)
            return;
    int64_t words = rs_words(&p);
    RsAxis t[DESC_MAX_RANK];
    double *acc;
    int64_t *buf = rs_prepare(&p, rs_fast_words(&p), t, &acc, sc);
    if (!buf)
        return;
    int r = p.rank;
    int64_t tap = (int64_t)(sizeof(RsTap) + 7) / 8;
    RsTap *th = (RsTap *)(void *)(buf + words), *tw = th + p.out[r - 2];
    float *rowbuf = (float *)(void *)(buf + words + tap * (p.out[r - 2] + p.out[r - 1]));
    if (rs_leading_identity(&p, t) && rs_fast_axis(&p, &t[r - 2], r - 2, th) &&
        rs_fast_axis(&p, &t[r - 1], r - 1, tw))
        rs_fast_rows(&p, th, tw, rowbuf, ops[1], ops[0], lo, hi);
    else
        for (int64_t row = lo; row < hi; row++)
            rs_row(&p, t, ops[1], ops[0], row, acc);
    lj_scratch_put(sc, buf);
}
