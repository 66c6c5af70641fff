/* The backend interface: what a backend runs natively (the lowering pass
 * rewrites everything else), and its name. Code generation and execution
 * entry points join as backends grow. */
#ifndef GLOWC_BACKENDS_BACKEND_H
#define GLOWC_BACKENDS_BACKEND_H

#include <stdbool.h>

#include "core/graph.h"

typedef struct Backend {
    const char *name;
    /* Does the backend run this node kind (with these attributes) itself? */
    bool (*is_native)(const Node *n);
} Backend;

/* The reference interpreter's backend: the small native set after lowering. */
extern const Backend interp_backend;
const Backend *backend_find(const char *name);

#endif
