/* The LIR verifier (see lir_verify.c). One diagnostic per problem. */
#ifndef GLOWC_CORE_LIR_VERIFY_H
#define GLOWC_CORE_LIR_VERIFY_H

#include "core/diag.h"
#include "core/lir.h"

bool lir_verify(LirProgram *p, DiagList *d);

#endif
