/* test-break-types: a deliberately wrong pass, so that the tests can show
 * what the verifier (run after every pass) does when a pass breaks the IR:
 * it changes the first node's first result type to one its operands cannot
 * give. */
#include "passes/pass.h"

bool pass_test_break_types(Function *f, PassContext *ctx) {
    if (!f->first || !f->first->nres)
        return false;
    Type *t = &f->first->res[0].type;
    if (t->rank < MAX_RANK)
        t->dims[t->rank++] = 7;
    else
        t->dims[0] += 7;
    pass_stat(ctx, "types-broken", 1);
    return true;
}
