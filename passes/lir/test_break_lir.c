/* test-break-lir: a deliberately wrong low-level pass, the counterpart of
 * test-break-types, so that the tests can show what the verifier (and, with
 * --no-verify, the executors) do when a pass breaks the low-level IR: the
 * first activation a compute instruction writes gets a type its operands
 * cannot give, 7 times as many elements as the memory planned for it. */
#include "passes/pass.h"

bool lir_test_break_lir(LirProgram *p, PassContext *ctx) {
    for (LirInstr *i = p->first; i; i = i->next) {
        if (!instr_is_compute(i->kind) || !i->nops || i->roles[0] == ROLE_IN ||
            i->ops[0]->kind != LB_ALLOC)
            continue;
        Type *t = &i->ops[0]->type;
        if (t->rank < MAX_RANK)
            t->dims[t->rank++] = 7;
        else
            t->dims[0] *= 7;
        pass_stat(ctx, "types-broken", 1);
        return true;
    }
    return false;
}
