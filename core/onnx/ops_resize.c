/* Import of Resize (opsets 10 to 18) and of the deprecated Upsample, both as
 * one resize node.
 *
 * The scales or sizes operand decides the result shape, so it must be a
 * constant. The node keeps `scales` only when they are not simply result
 * size / input size (they were given as scales, or keep_aspect_ratio_policy
 * fixed one scale for several axes), and `roi` only for tf_crop_and_resize.
 * Opset 10 and Upsample sample like the asymmetric transformation, nearest
 * rounding down, which is how ONNX's version converter maps them onto
 * Resize-11. */
#include <math.h>
#include <string.h>

#include "core/onnx/import.h"

/* Scales, sizes and roi spread over every axis. */
typedef struct ResizeGeom {
    int rank;
    bool have_scales, scales_kept, have_roi;
    uint32_t axes; /* the axes the operands speak of (opset 18's attribute) */
    float scales[MAX_RANK];
    int64_t sizes[MAX_RANK];
    float roi[2 * MAX_RANK];
} ResizeGeom;

static bool one_of(const char *s, const char *const *set) {
    for (; *set; set++)
        if (!strcmp(s, *set))
            return true;
    return false;
}

/* opset 18's `axes`: which axes the scales, sizes and roi lists speak of. */
static bool read_axes(OnnxNode *on, int rank, int64_t *axes, int *naxes) {
    *naxes = on_attr_ints(on, "axes", axes, MAX_RANK);
    if (*naxes < 0) {
        for (int i = 0; i < rank; i++)
            axes[i] = i;
        *naxes = rank;
        return true;
    }
    uint32_t seen = 0;
    for (int i = 0; i < *naxes; i++) {
        if (axes[i] < 0)
            axes[i] += rank;
        if (axes[i] < 0 || axes[i] >= rank || (seen & (1u << axes[i]))) {
            on_error(on, "bad or repeated axis in 'axes'");
            return false;
        }
        seen |= 1u << axes[i];
    }
    return true;
}

/* A float list input that may be absent or empty (then n = 0). */
static bool optional_floats(OnnxNode *on, int i, const char *what, float *out, int max, int *n) {
    *n = 0;
    if (!on_in(on, i))
        return true;
    Tensor *t = on_const_input(on, i, what);
    if (!t)
        return false;
    if (tensor_numel(t) == 0)
        return true;
    return on_const_floats(on, i, what, out, max, n);
}

/* roi matters to tf_crop_and_resize only; there it is a constant attribute
 * of the node, though it does not decide the shape. */
static bool read_roi(OnnxNode *on, int i, float *roi, int *n) {
    *n = 0;
    if (!on_in(on, i))
        return true;
    Tensor *t = on_try_const(on, on->in[i]);
    if (!t) {
        on_unsupported(on, "input %d (roi) must be known at compile time", i);
        return false;
    }
    if (tensor_numel(t) == 0)
        return true;
    return on_const_floats(on, i, "roi", roi, 2 * MAX_RANK, n);
}

/* Reads scales or sizes (and roi, when it matters) for the axes in `axes`,
 * every other axis keeping its size. */
static bool read_geom(OnnxNode *on, int first_input, bool want_roi, ResizeGeom *g) {
    const Type *x = &on->in[0]->type;
    g->rank = x->rank;
    int64_t axes[MAX_RANK];
    int naxes, nscales, nsizes = 0, nroi = 0;
    float scales[MAX_RANK], roi[2 * MAX_RANK];
    int64_t sizes[MAX_RANK];
    if (!read_axes(on, x->rank, axes, &naxes))
        return false;
    if (want_roi && !read_roi(on, first_input - 1, roi, &nroi))
        return false;
    if (!optional_floats(on, first_input, "scales", scales, MAX_RANK, &nscales))
        return false;
    if (on_in(on, first_input + 1) &&
        !on_const_ints(on, first_input + 1, "sizes", sizes, MAX_RANK, &nsizes))
        return false;
    if ((nscales > 0) == (nsizes > 0)) {
        on_error(on, "exactly one of scales and sizes must be given");
        return false;
    }
    if ((nscales && nscales != naxes) || (nsizes && nsizes != naxes) ||
        (nroi && nroi != 2 * naxes)) {
        on_error(on, "scales, sizes and roi must have one entry per axis (roi two)");
        return false;
    }
    g->have_scales = nscales > 0;
    g->have_roi = nroi > 0;
    for (int i = 0; i < x->rank; i++) {
        g->scales[i] = 1;
        g->sizes[i] = x->dims[i];
        g->roi[i] = 0;
        g->roi[x->rank + i] = 1;
    }
    for (int i = 0; i < naxes; i++) {
        int64_t ax = axes[i];
        g->axes |= 1u << ax;
        if (nscales)
            g->scales[ax] = scales[i];
        if (nsizes)
            g->sizes[ax] = sizes[i];
        if (nroi) {
            g->roi[ax] = roi[i];
            g->roi[x->rank + ax] = roi[naxes + i];
        }
    }
    return true;
}

/* Result sizes: floor(scale * size) from scales; from sizes, as given, or
 * under one common scale when keep_aspect_ratio_policy asks for it. */
static bool result_sizes(OnnxNode *on, ResizeGeom *g, const char *policy) {
    const Type *x = &on->in[0]->type;
    if (g->have_scales) {
        for (int i = 0; i < g->rank; i++) {
            double d = floor((double)g->scales[i] * (double)x->dims[i]);
            if (!(g->scales[i] > 0) || !(d < 9e15)) {
                on_error(on, "scale %g out of range", (double)g->scales[i]);
                return false;
            }
            g->sizes[i] = (int64_t)d;
        }
        g->scales_kept = true;
        return true;
    }
    for (int i = 0; i < g->rank; i++) {
        if (g->sizes[i] < 0 || (g->sizes[i] > 0 && x->dims[i] == 0)) {
            on_error(on, "cannot resize axis %d of size %lld to %lld", i,
                     (long long)x->dims[i], (long long)g->sizes[i]);
            return false;
        }
    }
    if (!strcmp(policy, "stretch"))
        return true;
    bool larger = !strcmp(policy, "not_smaller");
    double scale = larger ? 0 : INFINITY;
    for (int i = 0; i < g->rank; i++) {
        if (!(g->axes & (1u << i)))
            continue;
        double s = (double)g->sizes[i] / (double)x->dims[i];
        scale = larger ? fmax(scale, s) : fmin(scale, s);
    }
    if (!(scale > 0 && scale < 9e15)) {
        on_error(on, "keep_aspect_ratio_policy needs sizes of non-empty axes");
        return false;
    }
    for (int i = 0; i < g->rank; i++) {
        if (!(g->axes & (1u << i)))
            continue;
        g->scales[i] = (float)scale;
        g->sizes[i] = (int64_t)(scale * (double)x->dims[i] + 0.5);
    }
    g->scales_kept = true;
    return true;
}

static Node *resize_node(OnnxNode *on, const ResizeGeom *g, const char *mode) {
    Node *n = on_node(on, NK_RESIZE, 1, on->in, 1);
    Type t = on->in[0]->type;
    for (int i = 0; i < g->rank; i++)
        t.dims[i] = g->sizes[i];
    n->res[0].type = t;
    node_set_enum(n, AK_mode, enum_by_name(ES_MODE, mode, strlen(mode)));
    if (g->scales_kept)
        node_set_floats(n, AK_scales, g->rank, g->scales);
    return n;
}

/* Opset 10 Resize and Upsample: scales only, asymmetric sampling. */
static bool resize_asymmetric(OnnxNode *on, ResizeGeom *g) {
    const char *mode = on_attr_str(on, "mode", "nearest");
    if (!strcmp(mode, "bilinear"))
        mode = "linear";
    if (strcmp(mode, "nearest") && strcmp(mode, "linear")) {
        on_error(on, "unknown mode '%s'", mode);
        return false;
    }
    if (!result_sizes(on, g, "stretch"))
        return false;
    Node *n = resize_node(on, g, mode);
    node_set_enum(n, AK_coordinate_transformation_mode, CTM_ASYMMETRIC);
    if (!strcmp(mode, "nearest"))
        node_set_enum(n, AK_nearest_mode, NEAREST_FLOOR);
    return on_done(on, n);
}

static const char *const resize_modes[] = {"nearest", "linear", "cubic", NULL};
static const char *const transforms[] = {
    "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
    "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize", NULL};
static const char *const nearest_modes[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                            "ceil", NULL};
static const char *const policies[] = {"stretch", "not_larger", "not_smaller", NULL};

bool import_resize(OnnxNode *on) {
    ResizeGeom g = {0};
    if (on->opset < 11) {
        if (!on_need_inputs(on, 2, 2) || !read_geom(on, 1, false, &g))
            return false;
        return resize_asymmetric(on, &g);
    }
    const char *ctm = on_attr_str(on, "coordinate_transformation_mode", "half_pixel");
    if (!on_need_inputs(on, 1, 4) || !read_geom(on, 2, !strcmp(ctm, "tf_crop_and_resize"), &g))
        return false;
    const char *mode = on_attr_str(on, "mode", "nearest");
    const char *nearest = on_attr_str(on, "nearest_mode", "round_prefer_floor");
    const char *policy = on_attr_str(on, "keep_aspect_ratio_policy", "stretch");
    int64_t antialias = on_attr_int(on, "antialias", 0);
    if (!one_of(mode, resize_modes) || !one_of(ctm, transforms) ||
        !one_of(nearest, nearest_modes) || !one_of(policy, policies)) {
        on_error(on, "unknown mode, coordinate_transformation_mode, nearest_mode or "
                     "keep_aspect_ratio_policy");
        return false;
    }
    if (antialias && !strcmp(mode, "nearest")) {
        on_error(on, "antialias does not apply to nearest mode");
        return false;
    }
    if (!result_sizes(on, &g, policy))
        return false;
    Node *n = resize_node(on, &g, mode);
    if (!on_set_enum(on, n, AK_coordinate_transformation_mode, ctm) ||
        (!strcmp(mode, "nearest") && !on_set_enum(on, n, AK_nearest_mode, nearest)))
        return false;
    if (!strcmp(mode, "cubic"))
        node_set_float(n, AK_cubic_coeff_a, on_attr_float(on, "cubic_coeff_a", -0.75f));
    node_set_int(n, AK_exclude_outside, on_attr_int(on, "exclude_outside", 0));
    node_set_int(n, AK_antialias, antialias);
    if (!strcmp(ctm, "tf_crop_and_resize")) {
        node_set_float(n, AK_extrapolation_value,
                       on_attr_float(on, "extrapolation_value", 0.0f));
        node_set_floats(n, AK_roi, 2 * g.rank, g.roi);
    }
    return on_done(on, n);
}

bool import_upsample(OnnxNode *on) {
    ResizeGeom g = {0};
    if (on->opset >= 9) {
        if (!on_need_inputs(on, 2, 2) || !read_geom(on, 1, false, &g))
            return false;
        return resize_asymmetric(on, &g);
    }
    if (!on_need_inputs(on, 1, 1))
        return false;
    g.rank = on->in[0]->type.rank;
    if (on_attr_floats(on, "scales", g.scales, MAX_RANK) != g.rank) {
        on_error(on, "scales must have one entry per axis");
        return false;
    }
    g.have_scales = true;
    return resize_asymmetric(on, &g);
}
