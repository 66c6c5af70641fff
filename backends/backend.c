/* The backends glowc knows: one row each. */
#include "backends/backend.h"

#include <string.h>

static const Backend *const all[] = {&interp_backend, &interp_lir_backend, &cpu_backend};
#define NBACKENDS (int)(sizeof all / sizeof all[0])

/* The lists in messages are constants that a unit test checks against the
 * table (test_backend.c), so that no caller needs a buffer. */

const char *backend_names(void) {
    return "interp, interp-lir, cpu";
}

const char *backend_compiling_names(void) {
    return "cpu";
}

const Backend *backend_at(int i) {
    return i >= 0 && i < NBACKENDS ? all[i] : NULL;
}

const Backend *backend_compiling(void) {
    for (int i = 0; i < NBACKENDS; i++)
        if (all[i]->compiles)
            return all[i];
    return NULL;
}

const Backend *backend_find(const char *name) {
    for (int i = 0; i < NBACKENDS; i++)
        if (!strcmp(all[i]->name, name))
            return all[i];
    return NULL;
}
