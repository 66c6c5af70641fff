/* grid_sample and roi_align (at the end) for every float kind.
 *
 * libjit_grid_sample_any: nearest,
 * bilinear and bicubic reads of x at the grid's normalised positions, with
 * zeros, border or reflection padding and either align_corners.
 *
 * A unit of work is one output row of one image. Each grid point's taps
 * (core/grid_sample.h, the interpreter's arithmetic, one source for both)
 * are worked out once and then read from every channel. */
#include <math.h>

/* No fused multiply-adds: the interpreter rounds every product, and these
 * kernels are held to its results exactly. */
#pragma STDC FP_CONTRACT OFF

#include "backends/cpu/libjit/elem.h"
#include "backends/cpu/libjit/kernels.h"
#include "core/grid_sample.h"
#include "core/roi_align.h"

typedef struct Gs {
    int elem;
    GsGeom geom;
    int64_t n, c, ho, wo;
} Gs;

LJ_INLINE Gs gs_plan(const int64_t *d) {
    Gs g = {.elem = lj_elem(d, 0)};
    g.geom.mode = (int)lj_attr_int(d, AK_mode, MODE_BILINEAR);
    g.geom.pad = (int)lj_attr_int(d, AK_padding_mode, PADDING_ZEROS);
    g.geom.align = lj_attr_int(d, AK_align_corners, 0) != 0;
    LjImage x = lj_image(d, 1), y = lj_image(d, 0);
    g.n = x.n;
    g.c = x.c;
    g.geom.h = x.h;
    g.geom.w = x.w;
    g.ho = y.h;
    g.wo = y.w;
    return g;
}

typedef struct GsLoadCtx {
    int elem;
    const void *p;
    int64_t plane;
} GsLoadCtx;

static double gs_load(const void *ctx, int64_t i) {
    const GsLoadCtx *l = ctx;
    return lj_ld_f64(l->elem, l->p, l->plane + i);
}

LIBJIT_WORK libjit_grid_sample_any_work(const int64_t *d) {
    Gs g = gs_plan(d);
    return g.n * g.ho > 0 ? g.n * g.ho : 1;
}

/* Operands: y [N, C, Ho, Wo], x [N, C, H, W], grid [N, Ho, Wo, 2]. */
LIBJIT_KERNEL libjit_grid_sample_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                     LjScratch *sc) {
    Gs g = gs_plan(d);
    int eg = lj_elem(d, 2);
    int64_t h = g.geom.h, w = g.geom.w;
    for (int64_t u = lo; u < hi && u < g.n * g.ho; u++) {
        int64_t n = u / g.ho, oy = u % g.ho;
        for (int64_t ox = 0; ox < g.wo; ox++) {
            int64_t at = ((n * g.ho + oy) * g.wo + ox) * 2;
            double ix = gs_unnormalize(lj_ld_f64(eg, ops[2], at), w, g.geom.align);
            double iy = gs_unnormalize(lj_ld_f64(eg, ops[2], at + 1), h, g.geom.align);
            GsTaps t;
            gs_taps(&g.geom, ix, iy, &t);
            for (int64_t c = 0; c < g.c; c++) {
                GsLoadCtx l = {g.elem, ops[1], (n * g.c + c) * h * w};
                double v = gs_value(&g.geom, &t, gs_load, &l);
                lj_st_f64(g.elem, ops[0], ((n * g.c + c) * g.ho + oy) * g.wo + ox, v);
            }
        }
    }
}

/* ---- roi_align ----------------------------------------------------------------- */

/* roi_align for every float kind, as libjit_roi_align_any: the
 * interpreter's arithmetic (core/roi_align.h, one source for both). A unit
 * of work is one output plane (region, channel); a region's taps (where
 * each sample reads and with what weights) are made once for the planes
 * of its channels in the range, and f32 planes are read directly. A batch
 * index out of range, which the interpreter reports, leaves its planes
 * zero. */
typedef struct RaLoad {
    int elem;
    const void *p;
} RaLoad;

static double ra_load(const void *ctx, int64_t i) {
    const RaLoad *l = ctx;
    return lj_ld_f64(l->elem, l->p, i);
}

static double ra_load_f32(const void *ctx, int64_t i) {
    const RaLoad *l = ctx;
    return (double)((const float *)l->p)[i];
}

/* One output plane from the region's taps (count per bin). */
LJ_INLINE void ra_plane(const RoiTap *taps, int64_t count, int64_t bins, RoiLoad load,
                        const RaLoad *l, int64_t base, bool max, int ey, void *y, int64_t at) {
    for (int64_t o = 0; o < bins; o++)
        lj_st_f64(ey, y, at + o, roi_bin_value(taps + o * count, count, load, l, base, max));
}

LIBJIT_WORK libjit_roi_align_any_work(const int64_t *d) {
    int64_t n = lj_dim(d, 0, 0) * lj_dim(d, 0, 1);
    return n > 0 ? n : 1;
}

LIBJIT_KERNEL libjit_roi_align_any(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                                   LjScratch *sc) {
    int ey = lj_elem(d, 0), er = lj_elem(d, 2), eb = lj_elem(d, 3);
    LjImage x = lj_image(d, 1), y = lj_image(d, 0);
    int64_t nb = x.n, channels = x.c, oh = y.h, ow = y.w;
    bool max = lj_attr_int(d, AK_mode, MODE_AVG) == MODE_MAX;
    bool half = lj_attr_int(d, AK_coordinate_transformation_mode, CTM_HALF_PIXEL) == CTM_HALF_PIXEL;
    double scale = lj_attr_float(d, AK_spatial_scale, 1.0);
    int64_t ratio = lj_attr_int(d, AK_sampling_ratio, 0), region = -1, count = 0;
    RaLoad load = {lj_elem(d, 1), ops[1]};
    RoiTap *taps = NULL;
    size_t cap = 0;
    for (int64_t u = lo; u < hi && u < y.n * channels; u++) {
        int64_t r = u / channels, c = u % channels, b = lj_ld_i64(eb, ops[3], r);
        if (b < 0 || b >= nb) {
            for (int64_t o = 0; o < oh * ow; o++)
                lj_st_f64(ey, ops[0], u * oh * ow + o, 0);
            continue;
        }
        if (r != region) {
            double box[4];
            for (int k = 0; k < 4; k++)
                box[k] = lj_ld_f64(er, ops[2], r * 4 + k);
            Roi g = roi_geometry(box, scale, half, ratio, oh, ow);
            count = g.grid_h * g.grid_w;
            size_t need = (size_t)(oh * ow * (count > 0 ? count : 1));
            if (need > cap) {
                free(taps);
                taps = malloc(need * sizeof *taps);
                cap = taps ? need : 0;
            }
            if (!taps)
                return; /* out of memory: planes left unwritten */
            for (int64_t ph = 0; ph < oh; ph++)
                for (int64_t pw = 0; pw < ow; pw++)
                    roi_bin_taps(&g, x.h, x.w, ph, pw, taps + (ph * ow + pw) * count);
            region = r;
        }
        int64_t base = (b * channels + c) * x.h * x.w;
        if (load.elem == ELEM_F32)
            ra_plane(taps, count, oh * ow, ra_load_f32, &load, base, max, ey, ops[0], u * oh * ow);
        else
            ra_plane(taps, count, oh * ow, ra_load, &load, base, max, ey, ops[0], u * oh * ow);
    }
    free(taps);
}
