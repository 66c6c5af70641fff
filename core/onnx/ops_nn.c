/* Import of neural-network operators: convolutions and pooling (auto_pad
 * resolved to explicit pads), normalisations, the softmax family (pre-13
 * semantics rewritten), CumSum, Gemm, MatMul, Einsum and Det. */
#include <string.h>

#include "core/onnx/import.h"

/* ---- windows -------------------------------------------------------------- */

typedef struct WindowAttrs {
    int ns;
    int64_t kernel[MAX_RANK], strides[MAX_RANK], dilations[MAX_RANK];
    int64_t pads[2 * MAX_RANK];
} WindowAttrs;

/* Reads kernel_shape (or the weight's spatial dims), strides, dilations, and
 * pads or auto_pad, for input x. */
static bool read_window(OnnxNode *on, const Type *x, const Type *w, WindowAttrs *wa) {
    wa->ns = x->rank - 2;
    if (wa->ns < 1) {
        on_error(on, "input must be N x C x D1 ..., got rank %d", x->rank);
        return false;
    }
    int k = on_attr_ints(on, "kernel_shape", wa->kernel, MAX_RANK);
    if (k < 0 && w) {
        for (int i = 0; i < wa->ns; i++)
            wa->kernel[i] = w->rank == x->rank ? w->dims[2 + i] : 1;
        k = wa->ns;
    }
    if (k != wa->ns) {
        on_error(on, "kernel_shape must have %d entries", wa->ns);
        return false;
    }
    for (int i = 0; i < wa->ns; i++)
        wa->strides[i] = wa->dilations[i] = 1;
    if (on_attr_ints(on, "strides", wa->strides, MAX_RANK) > 0 &&
        on_attr_ints(on, "strides", wa->strides, MAX_RANK) != wa->ns) {
        on_error(on, "strides must have %d entries", wa->ns);
        return false;
    }
    if (on_attr_ints(on, "dilations", wa->dilations, MAX_RANK) > 0 &&
        on_attr_ints(on, "dilations", wa->dilations, MAX_RANK) != wa->ns) {
        on_error(on, "dilations must have %d entries", wa->ns);
        return false;
    }
    memset(wa->pads, 0, sizeof wa->pads);
    int np = on_attr_ints(on, "pads", wa->pads, 2 * MAX_RANK);
    if (np > 0 && np != 2 * wa->ns) {
        on_error(on, "pads must have %d entries", 2 * wa->ns);
        return false;
    }
    for (int i = 0; i < wa->ns; i++) {
        if (wa->kernel[i] < 1 || wa->strides[i] < 1 || wa->dilations[i] < 1) {
            on_error(on, "kernel, strides and dilations must be positive");
            return false;
        }
    }
    const char *ap = on_attr_str(on, "auto_pad", "NOTSET");
    if (!strcmp(ap, "VALID")) {
        memset(wa->pads, 0, sizeof wa->pads);
    } else if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
        for (int i = 0; i < wa->ns; i++) {
            int64_t in = x->dims[2 + i], s = wa->strides[i];
            int64_t out = in / s + (in % s != 0);
            /* total = (out - 1) * s + (kernel - 1) * dilation + 1 - in */
            int64_t a, span, total;
            if (__builtin_mul_overflow(out - 1, s, &a) ||
                __builtin_mul_overflow(wa->kernel[i] - 1, wa->dilations[i], &span) ||
                __builtin_add_overflow(a, span, &total) ||
                __builtin_sub_overflow(total, in - 1, &total)) {
                on_error(on, "kernel, strides or dilations overflow 64 bits");
                return false;
            }
            if (total < 0)
                total = 0;
            int64_t small = total / 2, big = total - small;
            bool upper = !strcmp(ap, "SAME_UPPER");
            wa->pads[i] = upper ? small : big;
            wa->pads[wa->ns + i] = upper ? big : small;
        }
    } else if (strcmp(ap, "NOTSET")) {
        on_error(on, "unknown auto_pad '%s'", ap);
        return false;
    }
    return true;
}

static void set_window(Node *n, const WindowAttrs *wa, bool dilations) {
    node_set_ints(n, AK_kernel, wa->ns, wa->kernel);
    node_set_ints(n, AK_strides, wa->ns, wa->strides);
    node_set_ints(n, AK_pads, 2 * wa->ns, wa->pads);
    if (dilations)
        node_set_ints(n, AK_dilations, wa->ns, wa->dilations);
}

bool import_conv(OnnxNode *on) {
    if (!on_need_inputs(on, 2, 3))
        return false;
    WindowAttrs wa;
    if (!read_window(on, &on->in[0]->type, &on->in[1]->type, &wa))
        return false;
    Node *n = on_node(on, NK_CONV, on_in(on, 2) ? 3 : 2, on->in, 1);
    set_window(n, &wa, true);
    node_set_int(n, AK_group, on_attr_int(on, "group", 1));
    return on_done(on, n);
}

/* The total padding that makes a transposed convolution's axis i `out` long:
 * strides * (in - 1) + outpad + (kernel - 1) * dilations + 1 - out; false
 * when a hostile attribute overflows 64 bits. */
static bool transpose_padding(const WindowAttrs *wa, int i, int64_t in, int64_t outpad,
                              int64_t out, int64_t *total) {
    int64_t a, b;
    return !__builtin_mul_overflow(wa->strides[i], in - 1, &a) &&
           !__builtin_mul_overflow(wa->kernel[i] - 1, wa->dilations[i], &b) &&
           !__builtin_add_overflow(a, b, total) && !__builtin_add_overflow(*total, outpad, total) &&
           !__builtin_add_overflow(*total, 1, total) && !__builtin_sub_overflow(*total, out, total);
}

/* output_shape, when given, decides the padding, split as ONNX's reference
 * does: SAME_UPPER puts the larger half at the end, anything else at the
 * start. A negative total (the output is larger than the input covers)
 * gives negative pads, which grow the output. */
bool import_conv_transpose(OnnxNode *on) {
    if (!on_need_inputs(on, 2, 3))
        return false;
    const Type *x = &on->in[0]->type, *w = &on->in[1]->type;
    WindowAttrs wa;
    const char *ap = on_attr_str(on, "auto_pad", "NOTSET");
    bool same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
    if (!read_window(on, x, w, &wa))
        return false;
    int64_t outpad[MAX_RANK] = {0}, outshape[MAX_RANK + 2];
    if (on_attr_ints(on, "output_padding", outpad, MAX_RANK) > 0 &&
        on_attr_ints(on, "output_padding", outpad, MAX_RANK) != wa.ns) {
        on_error(on, "output_padding must have %d entries", wa.ns);
        return false;
    }
    int nos = on_attr_ints(on, "output_shape", outshape, MAX_RANK + 2);
    if (nos > 0 && nos < wa.ns) {
        on_error(on, "output_shape must have at least %d entries", wa.ns);
        return false;
    }
    if (nos > 0 || same) {
        bool upper = !strcmp(ap, "SAME_UPPER");
        for (int i = 0; i < wa.ns; i++) {
            int64_t in = x->dims[2 + i];
            int64_t out, total;
            bool ok = nos > 0 ? (out = outshape[nos - wa.ns + i], true)
                              : !__builtin_mul_overflow(in, wa.strides[i], &out);
            if (!ok || !transpose_padding(&wa, i, in, outpad[i], out, &total)) {
                on_error(on, "window attributes overflow 64 bits");
                return false;
            }
            int64_t half = total / 2 - (total < 0 && total % 2 != 0); /* floor */
            wa.pads[i] = upper ? half : total - half;
            wa.pads[wa.ns + i] = upper ? total - half : half;
        }
    }
    Node *n = on_node(on, NK_CONV_TRANSPOSE, on_in(on, 2) ? 3 : 2, on->in, 1);
    set_window(n, &wa, true);
    node_set_int(n, AK_group, on_attr_int(on, "group", 1));
    node_set_ints(n, AK_output_padding, wa.ns, outpad);
    return on_done(on, n);
}

static bool pool(OnnxNode *on, NodeKind k) {
    if (!on_need_inputs(on, 1, 1))
        return false;
    WindowAttrs wa;
    if (!read_window(on, &on->in[0]->type, NULL, &wa))
        return false;
    int nres = k == NK_MAX_POOL && on->nout > 1 && on->proto->output[1][0] ? 2 : 1;
    Node *n = on_node(on, k, 1, on->in, nres);
    set_window(n, &wa, true);
    node_set_int(n, AK_ceil_mode, on_attr_int(on, "ceil_mode", 0));
    if (nres == 2) /* the layout of the indices */
        node_set_int(n, AK_storage_order, on_attr_int(on, "storage_order", 0));
    if (k == NK_AVG_POOL)
        node_set_int(n, AK_count_include_pad, on_attr_int(on, "count_include_pad", 0));
    if (k == NK_LP_POOL)
        node_set_int(n, AK_p, on_attr_int(on, "p", 2));
    return on_done(on, n);
}

bool import_max_pool(OnnxNode *on) {
    return pool(on, NK_MAX_POOL);
}

bool import_avg_pool(OnnxNode *on) {
    return pool(on, NK_AVG_POOL);
}

bool import_lp_pool(OnnxNode *on) {
    return pool(on, NK_LP_POOL);
}

static bool global_pool(OnnxNode *on, NodeKind k) {
    if (!on_need_inputs(on, 1, 1))
        return false;
    Node *n = on_node(on, k, 1, on->in, 1);
    if (k == NK_GLOBAL_LP_POOL)
        node_set_int(n, AK_p, on_attr_int(on, "p", 2));
    return on_done(on, n);
}

bool import_global_avg_pool(OnnxNode *on) {
    return global_pool(on, NK_GLOBAL_AVG_POOL);
}

bool import_global_max_pool(OnnxNode *on) {
    return global_pool(on, NK_GLOBAL_MAX_POOL);
}

bool import_global_lp_pool(OnnxNode *on) {
    return global_pool(on, NK_GLOBAL_LP_POOL);
}

/* ---- normalisations ------------------------------------------------------- */

static bool extra_outputs_used(const OnnxNode *on, int from) {
    for (int i = from; i < on->nout; i++)
        if (on->proto->output[i][0])
            return true;
    return false;
}

bool import_batch_norm(OnnxNode *on) {
    if (!on_need_inputs(on, 5, 5))
        return false;
    if (on_attr_int(on, "training_mode", 0))
        return import_batch_norm_training(on);
    /* Before opset 14 there is no training_mode: naming the running mean and
     * variance outputs is what asks for training mode (torch exports its
     * train() BatchNorm so, with all five outputs named). */
    if (on->opset < 14 && extra_outputs_used(on, 1))
        return import_batch_norm_training(on);
    if (extra_outputs_used(on, 1)) {
        on_unsupported(on, "training-mode batch normalization is not supported");
        return false;
    }
    if (on->opset < 9 && on_attr_int(on, "spatial", 1) == 0) {
        on_error(on, "spatial=0 batch normalization is not supported");
        return false;
    }
    Node *n = on_node(on, NK_BATCH_NORM, 5, on->in, 1);
    node_set_float(n, AK_epsilon, on_attr_float(on, "epsilon", 1e-5f));
    return on_done(on, n);
}

bool import_instance_norm(OnnxNode *on) {
    if (!on_need_inputs(on, 3, 3))
        return false;
    Node *n = on_node(on, NK_INSTANCE_NORM, 3, on->in, 1);
    node_set_float(n, AK_epsilon, on_attr_float(on, "epsilon", 1e-5f));
    return on_done(on, n);
}

bool import_layer_norm(OnnxNode *on) {
    if (!on_need_inputs(on, 2, 3))
        return false;
    int nres = 1;
    for (int i = 1; i < on->nout && i < 3; i++)
        if (on->proto->output[i][0])
            nres = i + 1;
    Node *n = on_node(on, NK_LAYER_NORM, on_in(on, 2) ? 3 : 2, on->in, nres);
    node_set_int(n, AK_axis, on_attr_int(on, "axis", -1));
    node_set_float(n, AK_epsilon, on_attr_float(on, "epsilon", 1e-5f));
    return on_done(on, n);
}

bool import_lrn(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 1))
        return false;
    if (!on_has_attr(on, "size")) {
        on_error(on, "missing attribute 'size'");
        return false;
    }
    Node *n = on_node(on, NK_LRN, 1, on->in, 1);
    node_set_float(n, AK_alpha, on_attr_float(on, "alpha", 1e-4f));
    node_set_float(n, AK_beta, on_attr_float(on, "beta", 0.75f));
    node_set_float(n, AK_bias, on_attr_float(on, "bias", 1.0f));
    node_set_int(n, AK_size, on_attr_int(on, "size", 1));
    return on_done(on, n);
}

bool import_mean_variance_norm(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 1))
        return false;
    int64_t axes[MAX_RANK] = {0, 2, 3};
    int k = on_attr_ints(on, "axes", axes, MAX_RANK);
    Node *n = on_node(on, NK_MEAN_VARIANCE_NORM, 1, on->in, 1);
    node_set_ints(n, AK_axes, k < 0 ? 3 : k, axes);
    return on_done(on, n);
}

bool import_lp_norm(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 1))
        return false;
    Node *n = on_node(on, NK_LP_NORM, 1, on->in, 1);
    node_set_int(n, AK_axis, on_attr_int(on, "axis", -1));
    node_set_int(n, AK_p, on_attr_int(on, "p", 2));
    return on_done(on, n);
}

/* ---- softmax family ------------------------------------------------------- */

/* From opset 13 the op works along one axis. Before, it flattened the input
 * to 2-D at `axis` (default 1) and worked along the second dimension: we
 * express that as reshape -> op(axis=1) -> reshape. */
static bool softmax_like(OnnxNode *on, NodeKind k) {
    if (!on_need_inputs(on, 1, 1))
        return false;
    Value *x = on->in[0];
    if (on->opset >= 13) {
        Node *n = on_node(on, k, 1, &x, 1);
        node_set_int(n, AK_axis, on_attr_int(on, "axis", -1));
        return on_done(on, n);
    }
    int64_t axis = on_attr_int(on, "axis", 1);
    int rank = x->type.rank;
    if (axis < 0)
        axis += rank;
    if (axis < 0 || axis > rank) {
        on_error(on, "axis out of range");
        return false;
    }
    if (axis == rank - 1 || (rank == 0)) {
        Node *n = on_node(on, k, 1, &x, 1);
        node_set_int(n, AK_axis, rank ? rank - 1 : 0);
        return on_done(on, n);
    }
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < rank; i++)
        *(i < axis ? &outer : &inner) *= x->type.dims[i];
    Node *r = on_node(on, NK_RESHAPE, 1, &x, 1);
    r->res[0].type = type_make(x->type.elem, 2, (int64_t[]){outer, inner});
    Value *flat = on_tmp(on, r);
    if (!flat)
        return false;
    Node *n = on_node(on, k, 1, &flat, 1);
    node_set_int(n, AK_axis, 1);
    Value *y = on_tmp(on, n);
    if (!y)
        return false;
    Node *back = on_node(on, NK_RESHAPE, 1, &y, 1);
    back->res[0].type = x->type;
    return on_done(on, back);
}

bool import_softmax(OnnxNode *on) {
    return softmax_like(on, NK_SOFTMAX);
}

bool import_log_softmax(OnnxNode *on) {
    return softmax_like(on, NK_LOG_SOFTMAX);
}

bool import_hardmax(OnnxNode *on) {
    return softmax_like(on, NK_HARDMAX);
}

/* The axis is an input, but it decides which loop runs: a constant. */
bool import_cumsum(OnnxNode *on) {
    if (!on_need_inputs(on, 2, 2))
        return false;
    int64_t axis;
    int n;
    if (!on_const_ints(on, 1, "axis", &axis, 1, &n))
        return false;
    if (n != 1) {
        on_error(on, "axis must hold one integer");
        return false;
    }
    Node *c = on_node(on, NK_CUMSUM, 1, on->in, 1);
    node_set_int(c, AK_axis, axis);
    node_set_int(c, AK_exclusive, on_attr_int(on, "exclusive", 0));
    node_set_int(c, AK_reverse, on_attr_int(on, "reverse", 0));
    return on_done(on, c);
}

/* ---- matrix products ------------------------------------------------------ */

bool import_gemm(OnnxNode *on) {
    if (!on_need_inputs(on, 2, 3))
        return false;
    Node *n = on_node(on, NK_GEMM, on_in(on, 2) ? 3 : 2, on->in, 1);
    node_set_float(n, AK_alpha, on_attr_float(on, "alpha", 1.0f));
    node_set_float(n, AK_beta, on_attr_float(on, "beta", 1.0f));
    node_set_int(n, AK_trans_a, on_attr_int(on, "transA", 0));
    node_set_int(n, AK_trans_b, on_attr_int(on, "transB", 0));
    return on_done(on, n);
}

bool import_matmul(OnnxNode *on) {
    if (!on_need_inputs(on, 2, 2))
        return false;
    return on_done(on, on_node(on, NK_MATMUL, 2, on->in, 1));
}

bool import_einsum(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 16))
        return false;
    for (int i = 0; i < on->nin; i++) {
        if (!on->in[i]) {
            on_error(on, "input %d is empty", i);
            return false;
        }
    }
    const char *eq = on_attr_str(on, "equation", NULL);
    if (!eq) {
        on_error(on, "missing attribute 'equation'");
        return false;
    }
    Node *n = on_node(on, NK_EINSUM, on->nin, on->in, 1);
    node_set_str(n, AK_equation, eq);
    return on_done(on, n);
}

bool import_det(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 1))
        return false;
    return on_done(on, on_node(on, NK_DET, 1, on->in, 1));
}

/* ---- integer convolutions and unpooling ------------------------------------- */

static Node *conv_like(OnnxNode *on, NodeKind k, int nops, Value *const *ops, int weight) {
    WindowAttrs wa;
    if (!read_window(on, &on->in[0]->type, &on->in[weight]->type, &wa))
        return NULL;
    Node *n = on_node(on, k, nops, ops, 1);
    set_window(n, &wa, true);
    node_set_int(n, AK_group, on_attr_int(on, "group", 1));
    return n;
}

bool import_conv_integer(OnnxNode *on) {
    if (!on_need_inputs(on, 2, 4))
        return false;
    Value *ops[4] = {on->in[0], on->in[1], on_in_or_zero(on, 2, on->in[0]->type.elem),
                     on_in_or_zero(on, 3, on->in[1]->type.elem)};
    Node *n = conv_like(on, NK_CONV_INTEGER, 4, ops, 1);
    return n && on_done(on, n);
}

bool import_qlinear_conv(OnnxNode *on) {
    if (!on_need_inputs(on, 8, 9))
        return false;
    Node *n = conv_like(on, NK_QLINEAR_CONV, on_in(on, 8) ? 9 : 8, on->in, 3);
    return n && on_done(on, n);
}

/* The result shape is output_shape when given, else what the pooling
 * window undoes: (in - 1) * stride + kernel - pads. */
bool import_max_unpool(OnnxNode *on) {
    if (!on_need_inputs(on, 2, 3))
        return false;
    const Type *x = &on->in[0]->type;
    WindowAttrs wa;
    if (!read_window(on, x, NULL, &wa))
        return false;
    Type r = *x;
    int n = x->rank;
    if (on_in(on, 2) && !on_const_ints(on, 2, "output_shape", r.dims, MAX_RANK, &n))
        return false;
    if (n != x->rank) {
        on_error(on, "output_shape must have %d entries", x->rank);
        return false;
    }
    for (int i = 0; !on_in(on, 2) && i < wa.ns; i++)
        r.dims[2 + i] = (x->dims[2 + i] - 1) * wa.strides[i] + wa.kernel[i] - wa.pads[i] -
                        wa.pads[wa.ns + i];
    Node *u = on_node(on, NK_MAX_UNPOOL, 2, on->in, 1);
    set_window(u, &wa, false);
    u->res[0].type = r;
    return on_done(on, u);
}

/* ---- sampling --------------------------------------------------------------- */

bool import_grid_sample(OnnxNode *on) {
    if (!on_need_inputs(on, 2, 2))
        return false;
    Node *n = on_node(on, NK_GRID_SAMPLE, 2, on->in, 1);
    node_set_int(n, AK_align_corners, on_attr_int(on, "align_corners", 0));
    return on_set_enum(on, n, AK_mode, on_attr_str(on, "mode", "bilinear")) &&
           on_set_enum(on, n, AK_padding_mode, on_attr_str(on, "padding_mode", "zeros")) &&
           on_done(on, n);
}

/* Before opset 16 RoiAlign had no coordinate_transformation_mode and
 * behaved as output_half_pixel (no half-pixel shift). */
bool import_roi_align(OnnxNode *on) {
    if (!on_need_inputs(on, 3, 3))
        return false;
    Node *n = on_node(on, NK_ROI_ALIGN, 3, on->in, 1);
    node_set_int(n, AK_output_height, on_attr_int(on, "output_height", 1));
    node_set_int(n, AK_output_width, on_attr_int(on, "output_width", 1));
    node_set_int(n, AK_sampling_ratio, on_attr_int(on, "sampling_ratio", 0));
    node_set_float(n, AK_spatial_scale, on_attr_float(on, "spatial_scale", 1.0f));
    return on_set_enum(on, n, AK_mode, on_attr_str(on, "mode", "avg")) &&
           on_set_enum(on, n, AK_coordinate_transformation_mode,
                       on_attr_str(on, "coordinate_transformation_mode",
                                   on->opset < 16 ? "output_half_pixel" : "half_pixel")) &&
           on_done(on, n);
}
