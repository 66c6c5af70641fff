/* Cross-layer equalisation of activation channels, the quantize pass's
 * first step (qequalize.c says how and why). */
#ifndef GLOWC_PASSES_GRAPH_QEQUALIZE_H
#define GLOWC_PASSES_GRAPH_QEQUALIZE_H

#include "core/graph.h"
#include "passes/graph/qbuild.h"
#include "passes/pass.h"
#include "passes/quant_profile.h"

/* A value whose channels were rescaled: its range now, in place of the
 * profile's (which is of the graph before). */
typedef struct QEqRange {
    const char *name;
    double lo, hi;
} QEqRange;

typedef struct QEqRanges {
    int n, cap;
    QEqRange *r;
} QEqRanges;

/* Rescales the channels of each equalisable pair in f's float graph (f
 * computes the same outputs in real arithmetic) and lists the rescaled
 * values' ranges in out (free with qeq_free). accept(actx, ...) is the
 * quantize pass's test of a chain it makes a table of (qb_find_chain). */
void qeq_apply(Function *f, PassContext *ctx, const QuantConfig *cfg, QbChainAccept accept,
               void *actx, QEqRanges *out);
const QEqRange *qeq_find(const QEqRanges *r, const char *name);
void qeq_free(QEqRanges *r);

#endif
