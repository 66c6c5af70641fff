/* Passes: functions over the IR that say whether they changed it.
 *
 * Every pass is one file and one function, registered in passes.def with its
 * name, level and a one-line description. A pass reports what it did through
 * named counters (pass_stat), which `glowc opt --stats` prints, and names the
 * first node it rewrites (pass_rewrote) so that --break-pass can deliberately
 * miscompile exactly there and bisection can be tested. */
#ifndef GLOWC_PASSES_PASS_H
#define GLOWC_PASSES_PASS_H

#include "backends/backend.h"
#include "core/diag.h"
#include "core/graph.h"
#include "core/lir.h"

typedef enum { PASS_GRAPH, PASS_LOWERING, PASS_SCHEDULE, PASS_LIR, PASS_CODEGEN } PassLevel;

typedef struct PassStat {
    char name[48]; /* e.g. "batchnorms-folded" */
    long count;
} PassStat;

/* What the differentiate pass makes of the forward function: the loss over
 * its first output, and the step (torch's SGD: weight decay added to the
 * gradient, then momentum, then the learning rate; or torch's Adam, with
 * its bias correction). */
typedef enum { LOSS_SOFTMAX_CE, LOSS_MSE } LossKind;
typedef enum { OPTIM_SGD, OPTIM_ADAM } OptimizerKind;
typedef struct TrainSpec {
    LossKind loss;
    OptimizerKind optimizer;
    double lr, momentum, weight_decay;
    double beta1, beta2, eps; /* Adam's (zero: torch's defaults 0.9, 0.999, 1e-8) */
    bool forward_only; /* the loss and outputs with the weights as inputs, no step */
} TrainSpec;

typedef struct PassContext {
    DiagList *d;
    const Backend *backend; /* what lowering lowers to */
    const BackendOptions *codegen; /* how it generates code (NULL: nothing said) */
    const TrainSpec *train; /* differentiate: what to make (NULL: nothing to do) */
    /* Statistics of the pass being run (reset by the pass manager). */
    PassStat stats[32];
    int nstats;
    /* --break-pass: this pass perturbs the first value it rewrites. */
    bool break_this_pass;
    bool broken;
    /* Peak live activation bytes before and after scheduling (schedule pass). */
    int64_t peak_before, peak_after;
    bool one_order; /* schedule: the graph admits a single order */
    /* The quantize pass's profile and options (NULL without --quantize). */
    const struct QuantConfig *quant;
    /* The memory plan's figures (allocate pass). */
    int64_t arena_bytes, lower_bound, naive_bytes;
} PassContext;

typedef bool (*GraphPassFn)(Function *f, PassContext *ctx);
typedef bool (*LirPassFn)(LirProgram *p, PassContext *ctx);

/* Graph passes have `run`, LIR passes `run_lir`. The steps from one form
 * to the next -- irgen, codegen, LLVM's optimisation -- have neither: the
 * session performs them (`step` says which). */
typedef enum { STEP_PASS, STEP_IRGEN, STEP_CODEGEN, STEP_LLVM_OPT } StepKind;

typedef struct PassInfo {
    const char *name;
    PassLevel level;
    GraphPassFn run;
    LirPassFn run_lir;
    StepKind step;
    const char *description;
    bool main_only; /* PASS_MAIN: not run on the bodies of regions */
} PassInfo;

#define PASS(nm, level, fn, desc) bool fn(Function *f, PassContext *ctx);
#define LIR_PASS(nm, fn, desc) bool fn(LirProgram *p, PassContext *ctx);
#define IRGEN_PASS(nm, desc)
#define CODEGEN_PASS(nm, step, desc)
#include "passes/passes.def"

const PassInfo *pass_find(const char *name);
/* pass_find, or NULL after "OPTION: unknown pass 'NAME'; the passes are:
 * ..." (option may be NULL). */
const PassInfo *pass_lookup(const char *name, const char *option, DiagList *d);
int pass_count(void);
const PassInfo *pass_at(int i);
const char *pass_level_name(PassLevel l);

/* Adds n to the counter `name` of the running pass. */
void pass_stat(PassContext *ctx, const char *name, long n);
/* A pass calls this with the value its first rewrite produced. Under
 * --break-pass for this pass, the value is perturbed once (a constant is
 * added to it), so that the miscompile is real and visible. */
void pass_rewrote(PassContext *ctx, Function *f, Value *v);

/* The low-level counterpart: adds 1 to the first output weight at the end
 * of the program (a LIR pass that changed anything, under --break-pass). */
void pass_break_lir(PassContext *ctx, LirProgram *p);

/* Shared helpers for passes. */
int *pass_use_counts(Function *f); /* malloc'd, by node id */
bool value_is_constant(const Value *v);
const Tensor *value_constant(const Value *v); /* NULL unless a constant with data */
/* A scalar-or-splat constant's value (false if not one). */
bool value_splat(const Value *v, double *out);

#endif
