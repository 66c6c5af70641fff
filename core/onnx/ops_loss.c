/* Import of losses. NegativeLogLikelihoodLoss is one nll_loss node;
 * SoftmaxCrossEntropyLoss is log_softmax over the class axis feeding
 * nll_loss, which is its definition, and its optional log_prob output is
 * that log_softmax. */
#include "core/onnx/import.h"

/* (log_prob, target, weight?) with ONNX's reduction and ignore_index; NULL
 * after an error. */
static Node *nll_node(OnnxNode *on, Value *log_prob) {
    Value *ops[3] = {log_prob, on->in[1], on_in(on, 2)};
    Node *n = on_node(on, NK_NLL_LOSS, ops[2] ? 3 : 2, ops, 1);
    if (!on_set_enum(on, n, AK_reduction, on_attr_str(on, "reduction", "mean")))
        return NULL;
    if (on_has_attr(on, "ignore_index"))
        node_set_int(n, AK_ignore_index, on_attr_int(on, "ignore_index", 0));
    return n;
}

bool import_nll_loss(OnnxNode *on) {
    if (!on_need_inputs(on, 2, 3))
        return false;
    Node *n = nll_node(on, on->in[0]);
    return n && on_done(on, n);
}

bool import_softmax_cross_entropy_loss(OnnxNode *on) {
    if (!on_need_inputs(on, 2, 3))
        return false;
    Node *ls = on_node(on, NK_LOG_SOFTMAX, 1, on->in, 1);
    node_set_int(ls, AK_axis, 1);
    Value *log_prob = on_tmp(on, ls);
    Node *n = log_prob ? nll_node(on, log_prob) : NULL;
    if (!n || !on_done(on, n))
        return false;
    on_bind(on, 1, log_prob);
    return true;
}
