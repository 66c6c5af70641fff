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
void qb_set(Value *v, const QuantParams *p);
bool qb_same(const QuantParams *a, const QuantParams *b);

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

#endif
