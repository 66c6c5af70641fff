/* Kernels of the reference interpreter: one per node kind, named k_<name>
 * after the kind's keyword in nodes.def, in files by family. */
#ifndef GLOWC_BACKENDS_INTERP_KERNELS_H
#define GLOWC_BACKENDS_INTERP_KERNELS_H

#include "core/diag.h"
#include "core/graph.h"
#include "core/infer.h"

typedef struct KernelArgs {
    const Node *n;
    Tensor *const *in;
    Tensor *const *out;
    DiagList *d;
    Arena *strs; /* where computed strings live: the run's arena (NULL: none) */
} KernelArgs;

typedef bool (*KernelFn)(const KernelArgs *a);

#define NODE(E, nm, omin, omax, rmin, rmax, ty, inf, facts, attrs) bool k_##nm(const KernelArgs *a);
#include "core/nodes.def"

/* A kernel's error, said at the node. */
bool kernel_fail(const KernelArgs *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Stores s as element i of a str result, in the run's arena. */
bool kernel_set_str(const KernelArgs *a, Tensor *t, int64_t i, const char *s, size_t len);

/* Applies a node's fused activation (attribute act) to t in place. */
void kernel_apply_act(const Node *n, Tensor *t);
void kernel_apply_summand(const KernelArgs *a, int op);

/* Walks the elements of an output shape while tracking each operand's offset
 * under numpy broadcasting (stride 0 along broadcast axes). */
typedef struct Bcast {
    int rank, nops;
    int64_t dims[MAX_RANK];
    int64_t strides[4][MAX_RANK];
    int64_t idx[MAX_RANK];
    int64_t off[4];
} Bcast;
void bcast_init(Bcast *b, const Type *out, const Type *const *ops, int nops);
/* Advances to the next output element; offsets in b->off. */
void bcast_next(Bcast *b);

/* numpy matmul's shapes: a 1-D operand is promoted to a row (a) or a
 * column (b), the batch dimensions broadcast. Batch i multiplies a's
 * [m][k] at bc.off[0] * m * k by b's [k][n] at bc.off[1] * k * n; bc
 * starts at batch 0 (bcast_next moves on). */
typedef struct MatmulShape {
    int64_t m, k, n, nbatch;
    Bcast bc;
} MatmulShape;
void matmul_shape(MatmulShape *s, const Type *a, const Type *b);

#endif
