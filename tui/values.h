/* Per-operator values: every value a run computes, by the ONNX name of the
 * node that computed it, collected through the session's value observer
 * (any backend, native code included), and written as one .npy each. */
#ifndef GLOWC_TUI_VALUES_H
#define GLOWC_TUI_VALUES_H

#include "passes/session.h"

typedef struct NamedValue {
    const char *name; /* provenance, or the node a fused one absorbed */
    int result;
    Tensor *value;    /* a copy */
} NamedValue;

typedef struct ValueSet {
    Arena *a;
    NamedValue *v;
    int n, cap;
    /* names whose node absorbed a later one (a fused activation), and the
     * name of the value they compute */
    const char **fused, **fused_as;
    int nfused;
    const void *last;    /* the report before (its data and size: the tensor reported may */
    uint64_t last_bytes; /* be a temporary), to drop a view's storage */
    const char *last_name;
    int last_result;
} ValueSet;

/* Ready for a run of s as it is now (its final graph or program). */
void values_init(ValueSet *vs, const Session *s);
void values_free(ValueSet *vs);
/* A StepObserver (ctx: the ValueSet): keeps a copy of each value, a later
 * one of the same name and result replacing the earlier. */
void values_observe(void *ctx, const char *name, int result, const Tensor *value);
/* Before a long compile: false (saying so) if DIR exists and is no folder. */
bool values_check_dir(const char *dir, DiagList *d);
/* DIR/<name>.npy for every value (names made file-safe and unique) and
 * DIR/values.txt (file, result, type, name per line), all or none. */
bool values_dump(const ValueSet *vs, const char *dir, DiagList *d);

#endif
