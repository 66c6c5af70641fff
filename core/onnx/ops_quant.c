/* Import of quantization operators. Absent zero points become explicit zero
 * constants (of the kind ONNX defaults to), so every node carries all its
 * operands and the kernels have one form. */
#include "core/onnx/import.h"

/* (x, scale, zero_point?): the result is u8 without a zero point. */
bool import_quantize_linear(OnnxNode *on) {
    if (!on_need_inputs(on, 2, 3))
        return false;
    Value *ops[3] = {on->in[0], on->in[1], on_in_or_zero(on, 2, ELEM_U8)};
    Node *n = on_node(on, NK_QUANTIZE_LINEAR, 3, ops, 1);
    node_set_int(n, AK_axis, on_attr_int(on, "axis", 1));
    return on_done(on, n);
}

bool import_dequantize_linear(OnnxNode *on) {
    if (!on_need_inputs(on, 2, 3))
        return false;
    Value *ops[3] = {on->in[0], on->in[1], on_in_or_zero(on, 2, on->in[0]->type.elem)};
    Node *n = on_node(on, NK_DEQUANTIZE_LINEAR, 3, ops, 1);
    node_set_int(n, AK_axis, on_attr_int(on, "axis", 1));
    return on_done(on, n);
}

bool import_dynamic_quantize_linear(OnnxNode *on) {
    if (!on_need_inputs(on, 1, 1))
        return false;
    return on_done(on, on_node(on, NK_DYNAMIC_QUANTIZE_LINEAR, 1, on->in, 3));
}

bool import_matmul_integer(OnnxNode *on) {
    if (!on_need_inputs(on, 2, 4))
        return false;
    Value *ops[4] = {on->in[0], on->in[1], on_in_or_zero(on, 2, on->in[0]->type.elem),
                     on_in_or_zero(on, 3, on->in[1]->type.elem)};
    return on_done(on, on_node(on, NK_MATMUL_INTEGER, 4, ops, 1));
}

bool import_qlinear_matmul(OnnxNode *on) {
    if (!on_need_inputs(on, 8, 8))
        return false;
    return on_done(on, on_node(on, NK_QLINEAR_MATMUL, 8, on->in, 1));
}
