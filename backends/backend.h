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
    /* Does it run the allocated low-level program (else the final graph)? */
    bool runs_lir;
    /* Does it compile that program to native code (the codegen steps)? */
    bool compiles;
} Backend;

/* The reference interpreter, on the graph and on the low-level program. */
extern const Backend interp_backend;
extern const Backend interp_lir_backend;
/* LLVM code generation for the host (backends/cpu). */
extern const Backend cpu_backend;
const Backend *backend_find(const char *name);
const char *backend_names(void); /* for messages */

#endif
