/* The CPU backend's capabilities. It lowers what the interpreter lowers, so
 * both run the same graph, and runs every remaining kind for which libjit
 * has a kernel (code generation refuses the rest, listing them). */
#include "backends/backend.h"
#include "backends/interp/interp.h"

static bool cpu_is_native(const Node *n) {
    return interp_is_native(n);
}

const Backend cpu_backend = {"cpu", cpu_is_native, true, true};
