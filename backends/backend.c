/* The backends glowc knows, by name. */
#include "backends/backend.h"

#include <string.h>

const char *backend_names(void) {
    return "interp, interp-lir, cpu";
}

const Backend *backend_find(const char *name) {
    static const Backend *const all[] = {&interp_backend, &interp_lir_backend, &cpu_backend};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (!strcmp(all[i]->name, name))
            return all[i];
    return NULL;
}
