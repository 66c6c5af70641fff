/* What the passes that make integer nodes share: quantize (from a profile)
 * and fold-qdq (from an imported QDQ graph) build the same quantized kinds
 * the same way, so that a QDQ model glowc wrote imports to exactly the graph
 * the profile gave. */
#ifndef GLOWC_PASSES_GRAPH_QBUILD_H
#define GLOWC_PASSES_GRAPH_QBUILD_H

#include "core/graph.h"
#include "passes/pass.h"

/* One tensor's quantization: real = scale * (q - offset). */
typedef struct QuantParams {
    ElemKind elem;
    float scale;
    int32_t offset;
} QuantParams;

QuantParams qb_params_of(const Value *v);
/* The constant behind v, looking through identities (the importer keeps
 * torch's Identity of a shared initializer; noop-elim runs after quantize),
 * or NULL. */
const Tensor *qb_weight_of(const Value *v);
void qb_set(Value *v, const QuantParams *p);
bool qb_same(const QuantParams *a, const QuantParams *b);

/* real -> q as quantize_linear does: rounded half to even, saturated (NaN:
 * the offset, real zero). */
int64_t qb_quantize(double real, const QuantParams *p);

/* A constant holding one value, or m values (per_channel: typed with
 * QUANT_CHANNEL on axis 0, as an i32 bias is). */
Value *qb_scalar(Function *f, ElemKind elem, double v, const char *name);
Value *qb_vector(Function *f, ElemKind elem, int64_t m, const double *v, const char *name,
                 bool per_channel);

/* Integer value iv reshaped to dims, before pos, keeping its parameters. */
Value *qb_reshape(Function *f, Node *pos, Value *iv, int rank, const int64_t *dims);

/* A node of kind k before n with n's name and attributes over ops, its
 * result in n's shape at parameters p. NULL (and a diagnostic) when its
 * types do not infer. */
Value *qb_like(Function *f, DiagList *d, Node *n, NodeKind k, int nops, Value **ops,
               const QuantParams *p);

/* qlinear_conv(xi; w, ws, wz; bias) before pos at parameters yp: attributes
 * from attrs_from (copied), or a 1x1 kernel when NULL (a gemm's form). */
typedef struct QuantWeights {
    Value *w, *ws, *wz; /* i8 [M,...] per channel; f32 [M] scales; zero points [M] */
} QuantWeights;
Value *qb_qconv(Function *f, DiagList *d, Node *pos, Value *xi, const QuantWeights *w,
                Value *bias, const QuantParams *yp, const Node *attrs_from, const char *name);

/* Elementwise chains of one varying input as a table.
 *
 * A chain of elementwise nodes whose only varying input is one quantized
 * value x -- conv -> *a +b -> hard-swish (x * clip(x+3, 0, 6) / 6) -> *c +d
 * in MobileNetV3-like networks, a lone sigmoid -- is a function of x's 256
 * levels: qlookup(x, table) computes it with one rounding, where quantizing
 * node by node rounds at every step (and a product of two rounded values
 * loses the most).
 *
 * qb_find_chain: the chain that starts at n (x's reader, the chain's first
 * node in order), grown over the nodes that follow (elementwise, float, x's
 * shape, every operand x, a chain node's result, a one-value constant or a
 * per-channel constant [1, C, 1, ...]: one table per channel then),
 * cut back to the longest piece whose last node alone is read outside the
 * chain. accept(ctx, m, false) says whether m may join; accept(ctx, last,
 * true) whether the chain may end at last. Its length in chain[], or 0. */
enum { QB_CHAIN_MAX = 24 };
/* n's one operand that is not a one-value constant (several uses of it
 * allowed), or NULL: where a chain starting at n would start. */
Value *qb_chain_input(const Node *n);
typedef bool (*QbChainAccept)(void *ctx, const Node *n, bool last);
int qb_find_chain(Function *f, Node *n, const Value *x, Node **chain, QbChainAccept accept,
                  void *ctx);
/* How many tables the chain needs: x's channels (axis 1) when an operand is
 * a per-channel constant [1, C, 1, ...], else 1. */
int64_t qb_chain_channels(const Value *x, Node *const *chain, int count);
/* The chain's float function at each of x's levels under params xp (level
 * i is the value least+i of xp's kind), by the interpreter: table[c * 256 +
 * i] for channel c of nch (qb_chain_channels). */
bool qb_chain_table(const Value *x, const QuantParams *xp, Node *const *chain, int count,
                    int64_t nch, double *table);

/* qlookup(xi, table) before pos, named as pos: reals[c * 256 + i], the
 * function at channel c's level i, quantized to yp; a table [256] when nch
 * is 1, else [nch, 256]. NULL after a diagnostic. */
Value *qb_lookup(Function *f, DiagList *d, Node *pos, Value *xi, const double *reals,
                 int64_t nch, const QuantParams *yp);

/* The order walk of both passes: visit(ctx, n) for each compute node of f
 * in the order before the walk (a rewrite inserts before and removes
 * behind), skipping those a visit removed, until *failed. Whether any visit
 * returned true. */
typedef bool (*QbVisit)(void *ctx, Node *n);
bool qb_walk(Function *f, QbVisit visit, void *ctx, const bool *failed);

/* After the rewrites: removes, until none is left, every unread compute
 * node that is no graph output and that removable accepts (NULL: any), and
 * every unread constant. */
typedef bool (*QbRemovable)(const Node *n);
void qb_sweep(Function *f, QbRemovable removable);

#endif
