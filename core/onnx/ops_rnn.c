/* Import of RNN, GRU and LSTM. The graph nodes take every operand, so the
 * absent optional ones become constants with ONNX's meaning: zero biases,
 * states and peepholes, and sequence lengths that cover the whole input.
 * Activation names are checked and spelt canonically, and each activation
 * gets its alpha and beta (ONNX consumes the lists in order, one value per
 * activation that takes it). */
#include <string.h>

#include "core/infer.h"
#include "core/onnx/import.h"

enum { MAX_ACTS = 6 }; /* two directions of f, g, h */

/* Sets n's activations ("Sigmoid,Tanh,...") and the alpha and beta lists
 * aligned to them; absent, the shape rule supplies ONNX's defaults. */
static bool read_activations(OnnxNode *on, Node *n) {
    const char *names[MAX_ACTS + 1];
    float alpha[MAX_ACTS], beta[MAX_ACTS], av[MAX_ACTS], bv[MAX_ACTS];
    int k = on_attr_strs(on, "activations", names, MAX_ACTS + 1);
    int na = on_attr_floats(on, "activation_alpha", av, MAX_ACTS);
    int nb = on_attr_floats(on, "activation_beta", bv, MAX_ACTS);
    if (k > MAX_ACTS) {
        on_error(on, "too many activations");
        return false;
    }
    if (k < 0) {
        if (na > 0 || nb > 0) {
            on_error(on, "activation_alpha and activation_beta need activations");
            return false;
        }
        return true;
    }
    char list[MAX_ACTS * 24] = "";
    int ia = 0, ib = 0;
    for (int i = 0; i < k; i++) {
        RnnAct act;
        if (!rnn_act_from_name(names[i], strlen(names[i]), &act)) {
            on_error(on, "unknown activation '%s'", names[i]);
            return false;
        }
        bool uses_alpha, uses_beta;
        rnn_act_uses(act.kind, &uses_alpha, &uses_beta);
        alpha[i] = uses_alpha && ia < na ? av[ia++] : act.alpha;
        beta[i] = uses_beta && ib < nb ? bv[ib++] : act.beta;
        strcat(list, i ? "," : "");
        strcat(list, rnn_act_name(act.kind));
    }
    node_set_str(n, AK_activations, list);
    node_set_floats(n, AK_activation_alpha, k, alpha);
    node_set_floats(n, AK_activation_beta, k, beta);
    return true;
}

/* Input i, or a constant of the given type: zeros, or for sequence_lens
 * (fill >= 0) that value everywhere. */
static Value *input_or(OnnxNode *on, int i, ElemKind e, int rank, const int64_t *dims,
                       int64_t fill) {
    if (on_in(on, i))
        return on->in[i];
    Type t = type_make(e, rank, dims);
    Tensor *z = on_tensor(on, &t);
    for (int64_t k = 0; fill >= 0 && k < tensor_numel(z); k++)
        tensor_set_i64(z, k, fill);
    return on_const(on, z);
}

static bool recurrent(OnnxNode *on, NodeKind k) {
    bool lstm = k == NK_LSTM;
    if (!on_need_inputs(on, 3, lstm ? 8 : 6))
        return false;
    const Type *x = &on->in[0]->type, *r = &on->in[2]->type;
    const char *dir = on_attr_str(on, "direction", "forward");
    int64_t layout = on_attr_int(on, "layout", 0);
    int64_t gates = k == NK_RNN ? 1 : k == NK_GRU ? 3 : 4;
    int64_t hidden = on_attr_int(on, "hidden_size", r->rank == 3 ? r->dims[2] : 0);
    if (x->rank != 3 || r->rank != 3 || hidden < 1 || hidden > (1 << 24)) {
        on_error(on, "X and R must have rank 3, hidden_size be positive");
        return false;
    }
    int64_t dirs = strcmp(dir, "bidirectional") ? 1 : 2, seq = x->dims[layout ? 1 : 0];
    int64_t batch = x->dims[layout ? 0 : 1];
    int64_t state[3] = {layout ? batch : dirs, layout ? dirs : batch, hidden};
    Value *ops[8] = {on->in[0], on->in[1], on->in[2]};
    ops[3] = input_or(on, 3, x->elem, 2, (int64_t[]){dirs, 2 * gates * hidden}, -1);
    ops[4] = input_or(on, 4, ELEM_I32, 1, &batch, seq);
    ops[5] = input_or(on, 5, x->elem, 3, state, -1);
    if (lstm) {
        ops[6] = input_or(on, 6, x->elem, 3, state, -1);
        ops[7] = input_or(on, 7, x->elem, 2, (int64_t[]){dirs, 3 * hidden}, -1);
    }
    int nres = 1;
    for (int i = 1; i < on->nout && i < (lstm ? 3 : 2); i++)
        if (on->proto->output[i][0])
            nres = i + 1;
    Node *n = on_node(on, k, lstm ? 8 : 6, ops, nres);
    node_set_int(n, AK_hidden_size, hidden);
    if (!on_set_enum(on, n, AK_direction, dir))
        return false;
    node_set_int(n, AK_layout, layout);
    if (on_has_attr(on, "clip"))
        node_set_float(n, AK_clip, on_attr_float(on, "clip", 0));
    if (k == NK_GRU)
        node_set_int(n, AK_linear_before_reset, on_attr_int(on, "linear_before_reset", 0));
    if (lstm)
        node_set_int(n, AK_input_forget, on_attr_int(on, "input_forget", 0));
    if (!read_activations(on, n)) {
        graph_remove_node(on->f, n);
        return false;
    }
    return on_done(on, n);
}

bool import_rnn(OnnxNode *on) {
    return recurrent(on, NK_RNN);
}

bool import_gru(OnnxNode *on) {
    return recurrent(on, NK_GRU);
}

bool import_lstm(OnnxNode *on) {
    return recurrent(on, NK_LSTM);
}
