/* The LIR verifier (see lir_verify.c). One diagnostic per problem. */
#ifndef GLOWC_CORE_LIR_VERIFY_H
#define GLOWC_CORE_LIR_VERIFY_H

#include "core/diag.h"
#include "core/lir.h"

bool lir_verify(LirProgram *p, DiagList *d);

/* What an executor of p relies on: lir_verify, and once p is allocated, every
 * buffer inside its region of the plan. Failing, a note says that `who`
 * (e.g. "the LIR interpreter") refuses to run it. */
bool lir_check_runnable(LirProgram *p, const char *who, DiagList *d);

#endif
