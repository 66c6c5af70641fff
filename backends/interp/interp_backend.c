/* The interpreter as a backend: it can run every node kind, but it declares
 * the small post-lowering set as native, so that running a lowered graph
 * (-O2) exercises every lowering rule against the same kernels. */
#include "backends/backend.h"
#include "backends/interp/interp.h"

/* Everything lowering has a rule for is lowered, except fully_connected: the
 * interpreter has its kernel (the fused form the CPU backend wants too). */
bool interp_is_native(const Node *n) {
    return n->kind == NK_FULLY_CONNECTED || !node_lowers(n);
}

const Backend interp_backend = {
    .name = "interp",
    .summary = "the reference interpreter, on the final graph",
    .is_native = interp_is_native,
};
const Backend interp_lir_backend = {
    .name = "interp-lir",
    .summary = "the reference interpreter, on the allocated low-level program",
    .is_native = interp_is_native,
    .runs_lir = true,
};
