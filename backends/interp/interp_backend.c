/* The interpreter as a backend: it can run every node kind, but it declares
 * the small post-lowering set as native, so that running a lowered graph
 * (-O2) exercises every lowering rule against the same kernels. */
#include <string.h>

#include "backends/backend.h"
#include "backends/interp/interp.h"

/* Kinds lowering rewrites for the interpreter. */
static const NodeKind lowered[] = {
    NK_GEMM,          NK_BATCH_NORM,     NK_INSTANCE_NORM,      NK_SOFTMAX,
    NK_LOG_SOFTMAX,   NK_HARD_SIGMOID,   NK_HARD_SWISH,         NK_GELU,
    NK_FLATTEN,       NK_SQUEEZE,        NK_UNSQUEEZE,          NK_REDUCE_MEAN,
    NK_REDUCE_L1,     NK_REDUCE_L2,      NK_REDUCE_SUM_SQUARE,  NK_REDUCE_LOG_SUM,
    NK_REDUCE_LOG_SUM_EXP, NK_RESIZE,
};

bool interp_is_native(const Node *n) {
    if (n->kind == NK_LAYER_NORM)
        return n->nres > 1; /* the statistics outputs have no lowering */
    if (n->kind == NK_PAD)
        return strcmp(node_attr_str(n, AK_mode, "constant"), "constant") != 0;
    /* crop-and-resize and 1-D resizes keep their kernel (see lower.c) */
    if (n->kind == NK_RESIZE)
        return n->ops[0]->type.rank < 2 || !elem_is_float(n->ops[0]->type.elem) ||
               !strcmp(node_attr_str(n, AK_coordinate_transformation_mode, ""),
                       "tf_crop_and_resize");
    for (size_t i = 0; i < sizeof lowered / sizeof lowered[0]; i++)
        if (lowered[i] == n->kind)
            return false;
    return true;
}

const Backend interp_backend = {"interp", interp_is_native, false, false};
const Backend interp_lir_backend = {"interp-lir", interp_is_native, true, false};
