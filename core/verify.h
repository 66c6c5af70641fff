/* The graph verifier: structural invariants (ids unique, operands defined
 * before use in the same function, attributes the kind allows) and then every
 * node's types against its shape rule. Passes run it between steps with
 * --verify-each; the parser runs the type half on every file it reads. */
#ifndef GLOWC_CORE_VERIFY_H
#define GLOWC_CORE_VERIFY_H

#include "core/diag.h"
#include "core/graph.h"

/* Adds one diagnostic per problem found; true when there were none. */
bool verify_function(Function *f, DiagList *d);

#endif
