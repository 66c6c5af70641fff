/* Import of reductions and argmax/argmin. Axes come from an attribute in
 * older opsets and from a (constant) input in newer ones. */
#include "core/onnx/import.h"

/* The opset from which an op's axes are an input instead of an attribute. */
static bool axes_from_input(const OnnxNode *on, NodeKind k) {
    return on->opset >= 18 || (k == NK_REDUCE_SUM && on->opset >= 13);
}

static bool reduce(OnnxNode *on, NodeKind k) {
    if (!on_need_inputs(on, 1, 2))
        return false;
    int64_t axes[MAX_RANK];
    int naxes = -1;
    if (axes_from_input(on, k)) {
        if (on_in(on, 1) && !on_const_ints(on, 1, "axes", axes, MAX_RANK, &naxes))
            return false;
    } else {
        naxes = on_attr_ints(on, "axes", axes, MAX_RANK);
    }
    if (naxes <= 0 && on_attr_int(on, "noop_with_empty_axes", 0))
        return on_done(on, on_node(on, NK_IDENTITY, 1, on->in, 1));
    Node *n = on_node(on, k, 1, on->in, 1);
    if (naxes > 0)
        node_set_ints(n, AK_axes, naxes, axes);
    node_set_int(n, AK_keepdims, on_attr_int(on, "keepdims", 1));
    return on_done(on, n);
}

#define REDUCE(handler, kind)                                                                \
    bool handler(OnnxNode *on) {                                                             \
        return reduce(on, kind);                                                             \
    }

REDUCE(import_reduce_sum, NK_REDUCE_SUM)
REDUCE(import_reduce_mean, NK_REDUCE_MEAN)
REDUCE(import_reduce_max, NK_REDUCE_MAX)
REDUCE(import_reduce_min, NK_REDUCE_MIN)
REDUCE(import_reduce_prod, NK_REDUCE_PROD)
REDUCE(import_reduce_l1, NK_REDUCE_L1)
REDUCE(import_reduce_l2, NK_REDUCE_L2)
REDUCE(import_reduce_log_sum, NK_REDUCE_LOG_SUM)
REDUCE(import_reduce_log_sum_exp, NK_REDUCE_LOG_SUM_EXP)
REDUCE(import_reduce_sum_square, NK_REDUCE_SUM_SQUARE)

static bool arg_reduce(OnnxNode *on, NodeKind k) {
    if (!on_need_inputs(on, 1, 1))
        return false;
    Node *n = on_node(on, k, 1, on->in, 1);
    node_set_int(n, AK_axis, on_attr_int(on, "axis", 0));
    node_set_int(n, AK_keepdims, on_attr_int(on, "keepdims", 1));
    node_set_int(n, AK_select_last_index, on_attr_int(on, "select_last_index", 0));
    return on_done(on, n);
}

bool import_argmax(OnnxNode *on) {
    return arg_reduce(on, NK_ARGMAX);
}

bool import_argmin(OnnxNode *on) {
    return arg_reduce(on, NK_ARGMIN);
}
