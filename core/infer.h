/* Shape and type inference: one rule per `infer` entry of nodes.def.
 *
 * infer_node computes every result type of a node from its operands and
 * attributes (kinds whose result shape is declared -- reshape, expand,
 * resize, one_hot, einsum -- check the declared type instead). A rule that
 * finds operands that do not fit adds one diagnostic naming the node and
 * returns false. The verifier reuses the same rules. The geometry helpers
 * below are shared with the kernels so that shapes and loops never disagree. */
#ifndef GLOWC_CORE_INFER_H
#define GLOWC_CORE_INFER_H

#include "core/diag.h"
#include "core/einsum.h"
#include "core/graph.h"

bool infer_node(Node *n, DiagList *d);
/* The result types of n at run time, from its operands' run-time types
 * (bounded-dynamic sizes resolved): an error naming the node when a size
 * exceeds its bound or a static size changes. Scratch memory from `a`. */
bool infer_run_time(const Node *n, const Type *ops, Type *res, DiagList *d, Arena *a);
/* Adds an error located at the node (text position or ONNX name). */
void node_error(DiagList *d, const Node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Normalises a possibly negative axis; false if outside [-rank, rank). */
bool axis_normalize(int64_t axis, int rank, int *out);

/* Window geometry of conv/pool nodes, attributes filled with defaults. */
typedef struct Window {
    int nspatial;
    int64_t kernel[MAX_RANK], stride[MAX_RANK], dilation[MAX_RANK];
    int64_t pad_begin[MAX_RANK], pad_end[MAX_RANK];
    int64_t out_padding[MAX_RANK];
    int64_t group;
    bool ceil_mode, count_include_pad;
} Window;
/* kernel_from: the weight type (conv) or NULL (pooling: the kernel attribute). */
bool window_from_node(const Node *n, int nspatial, const Type *kernel_from, Window *w);
/* Output size of a window sliding over `in` positions (pooling/conv); -1
 * when the window's attributes overflow 64 bits. */
int64_t window_out_size(const Window *w, int axis, int64_t in);

/* slice: per-axis start, step and element count after ONNX clamping. */
void slice_params(const Node *n, const Type *in, int64_t *start, int64_t *step, int64_t *count);
/* The same with run-time ends (operand 1, one per entry of axes) written
 * over the ends attribute: `ends` is x's rank of them, NULL for none. */
void slice_params_ends(const Node *n, const Type *in, const int64_t *ends, int64_t *start,
                       int64_t *step, int64_t *count);

/* Reduction axes as a mask (bit i: axis i reduced). */
uint32_t reduce_axes_mask(const Node *n, int rank);

bool einsum_parse(const char *eq, int nops, const Type *const *ops, EinsumSpec *s,
                  char *err, size_t errlen);

/* Recurrent layers: ONNX's activation functions, each with its alpha and
 * beta (the defaults of the ONNX operator of that name when not given).
 * Columns: enum suffix, ONNX name, takes alpha, takes beta, alpha's and
 * beta's defaults. The libjit kernels parse the names from this table too. */
#define RNN_ACT_TABLE(X)                                                                      \
    X(RELU, "Relu", false, false, 0, 0)                                                       \
    X(TANH, "Tanh", false, false, 0, 0)                                                       \
    X(SIGMOID, "Sigmoid", false, false, 0, 0)                                                 \
    X(AFFINE, "Affine", true, true, 1.0f, 0.0f)                                               \
    X(LEAKY_RELU, "LeakyRelu", true, false, 0.01f, 0)                                         \
    X(THRESHOLDED_RELU, "ThresholdedRelu", true, false, 1.0f, 0)                              \
    X(SCALED_TANH, "ScaledTanh", true, true, 1.0f, 1.0f)                                      \
    X(HARD_SIGMOID, "HardSigmoid", true, true, 0.2f, 0.5f)                                    \
    X(ELU, "Elu", true, false, 1.0f, 0)                                                       \
    X(SOFTSIGN, "Softsign", false, false, 0, 0)                                               \
    X(SOFTPLUS, "Softplus", false, false, 0, 0)
#define RNN_ACT_ENUM(E, name, a, b, ad, bd) RNN_ACT_##E,
typedef enum { RNN_ACT_TABLE(RNN_ACT_ENUM) RNN_ACT_COUNT } RnnActKind;
#undef RNN_ACT_ENUM
typedef struct RnnAct {
    RnnActKind kind;
    float alpha, beta;
} RnnAct;
/* Case-insensitive ONNX name (len bytes); defaults filled in. The canonical
 * name is rnn_act_name(kind); rnn_act_uses says whether alpha / beta apply. */
bool rnn_act_from_name(const char *name, size_t len, RnnAct *out);
const char *rnn_act_name(RnnActKind k);
void rnn_act_uses(RnnActKind k, bool *alpha, bool *beta);

/* Sizes of a recurrent node and its activations: act[d][i] is activation i
 * (f, g, h in ONNX's naming) of direction d. */
typedef struct RnnGeom {
    int dirs, gates, nact;
    bool reverse, batch_first;
    int64_t seq, batch, input, hidden;
    RnnAct act[2][3];
} RnnGeom;
bool rnn_geom(const Node *n, RnnGeom *g, char *err, size_t errlen);

#endif
