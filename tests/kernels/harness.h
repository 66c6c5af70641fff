/* The kernel harness: builds an instruction's descriptor at run time, in the
 * layout code generation emits (backends/cpu/libjit/desc.h), runs a libjit
 * kernel on it -- split into its work units, in an order threads could take
 * them -- and the reference interpreter's kernel on the same operands
 * through libjit_generic, which rebuilds the node from the descriptor just
 * as the generic fallback does in generated code. */
#ifndef GLOWC_TESTS_KERNELS_HARNESS_H
#define GLOWC_TESTS_KERNELS_HARNESS_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/cpu/libjit/desc.h"
#include "core/graph.h"

enum { DESC_WORDS = 4096, CASE_OPS = 12 }; /* lstm: 3 results and 8 inputs; qlinear_conv: 10 operands */

typedef struct Desc {
    int64_t w[DESC_WORDS];
    int nwords;
} Desc;

/* Operands first (outputs, then inputs), then attributes. */
void desc_begin(Desc *d, NodeKind kind, int nres);
void desc_operand(Desc *d, int rank, const int64_t *dims); /* f32 */
void desc_operand_elem(Desc *d, ElemKind e, int rank, const int64_t *dims);
/* With t's quantization (scale, offset). */
void desc_operand_type(Desc *d, const Type *t);
void desc_int(Desc *d, AttrKey k, int64_t v);
void desc_ints(Desc *d, AttrKey k, int n, const int64_t *v);
void desc_float(Desc *d, AttrKey k, float v);
void desc_floats(Desc *d, AttrKey k, int n, const float *v);
void desc_str(Desc *d, AttrKey k, const char *s);
void desc_act(Desc *d, const char *name);
int64_t desc_numel(const Desc *d, int op);
/* The descriptor code generation emits for a compute instruction. */
struct LirInstr;
void desc_from_instr(Desc *d, const struct LirInstr *i);

typedef void (*KernelFn)(const int64_t *d, void *const *ops, int64_t lo, int64_t hi,
                         LjScratch *sc);
typedef int64_t (*WorkFn)(const int64_t *d);

/* Runs fn over its work units [0, work(d)) one unit at a time, in a
 * scrambled order (as threads might), or whole when work is NULL. */
void run_kernel(const Desc *d, KernelFn fn, WorkFn work, void *const *ops);

/* Operands: f32 inputs random in [-1, 1), integer inputs in [-1000, 1000)
 * (a fixed seed per case), f32 outputs poisoned with NaN so that an element
 * a kernel never writes is caught. */
typedef struct Case {
    int alias[CASE_OPS]; /* output k writes over input alias[k] - 1 when nonzero */
    Desc d;
    Desc dmag; /* for the magnitudes run when it differs (no activation), else empty */
    void *fast[CASE_OPS], *ref[CASE_OPS], *mag[CASE_OPS];
} Case;

void case_alloc(Case *c, uint64_t seed);
/* Makes output `out` the very buffer of input `in` (in place). */
void case_alias(Case *c, int out, int in);
void case_free(Case *c);
/* The reference result in ref, and in mag the reference applied to |inputs|
 * (for sums: sum |a_i b_i|, the scale of the rounding error), by dmag's
 * instruction when it has one (the same without a fused activation). */
bool case_reference(Case *c, bool magnitudes);

/* Element kinds of one operand (inputs of other kinds get small integers). */
float *case_f32(Case *c, int op);

/* Largest violation of |fast - ref| <= bound(i) over output `op`, as a
 * ratio (<= 1 passes); bound(i) = rel_mag * mag[i] + ulps * ulp(ref[i]) +
 * abs. Reports the worst element on stderr when it fails. */
typedef struct Tol {
    double rel_mag, ulps, abs;
} Tol;
double case_check(Case *c, int op, Tol tol, const char *what);

/* gamma_n = n u / (1 - n u), u = 2^-24: the bound on the relative error of
 * an n-term f32 sum in any order (Higham, Accuracy and Stability, 3.1). */
double gamma_f32(int64_t n);

uint64_t rng_next(uint64_t *s);

#endif
