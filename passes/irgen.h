/* IRGen: from the scheduled graph to the low-level IR (see irgen.c). The
 * program shares the graph's constant data, so the graph must outlive it. */
#ifndef GLOWC_PASSES_IRGEN_H
#define GLOWC_PASSES_IRGEN_H

#include "core/diag.h"
#include "core/graph.h"
#include "core/lir.h"

LirProgram *irgen(Function *f, DiagList *d);

#endif
