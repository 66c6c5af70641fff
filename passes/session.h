/* The compilation session: a model, a pipeline, the snapshot each step
 * leaves, and the current step. Every glowc command that compiles goes
 * through it, and the explorer (REPL and TUI) is a viewer over its steps --
 * it knows no pass by name.
 *
 * Step 0 is the import. Each later step runs one pass of the pipeline on the
 * working graph and keeps a snapshot: the graph itself (a clone that shares
 * the immutable weights), its text, node counts, lines added and removed
 * against the previous step, the pass's statistics and its time. */
#ifndef GLOWC_PASSES_SESSION_H
#define GLOWC_PASSES_SESSION_H

#include "backends/backend.h"
#include "core/onnx/onnx.h"
#include "passes/pass.h"

typedef struct SessionOptions {
    const DimBinding *dims;
    int ndims;
    const KnownInput *known;
    int nknown;
    uint64_t max_memory;
    const char *break_pass; /* --break-pass */
    bool no_verify;         /* --no-verify: skip the verifier after each pass (the default runs it) */
    const Backend *backend; /* what lowering targets (default: interp) */
    BackendOptions codegen; /* compiling backends: target, output kind, entry, ... */
    int threads;            /* compiling backends: worker threads when running (0: every CPU) */
    const struct QuantConfig *quant; /* --quantize: the pipeline starts with quantize */
    const TrainSpec *train; /* the differentiate pass's loss and optimiser (NULL: inference) */
    bool no_winograd;       /* --no-winograd: a named level (-O2) without the winograd pass */
} SessionOptions;

typedef struct Step {
    const char *name; /* "import" or the pass name */
    PassLevel level;
    StepKind kind;    /* a pass, irgen, or a backend's code generation or optimisation */
    bool planned;     /* this step made the memory plan (the arena figures below are its) */
    bool changed;
    bool failed;      /* the pass failed or broke the verifier */
    bool invalid;     /* failed: the verifier rejected the IR the pass left */
    Module *graph;    /* the graph after this step (graph steps only) */
    char *text;       /* the graph's text IR (LIR steps: the graph irgen saw) */
    LirProgram *lir;  /* the low-level program after this step (from irgen on) */
    char *lir_text;
    char *llvm_text;  /* the LLVM IR after codegen / after llvm-opt */
    BackendSnapshot *native; /* that module, kept to be loaded and run */
    const Backend *backend;  /* whose snapshot it is */
    int ninstrs;
    int64_t arena_bytes, lower_bound, naive_bytes; /* allocate */
    int nnodes, nconsts;
    int kind_counts[NK_COUNT];
    int lines_added, lines_removed;
    PassStat stats[32];
    int nstats;
    int64_t peak_before, peak_after; /* schedule only */
    bool one_order;                  /* schedule: no other order exists */
    double seconds;
    double verify_seconds; /* the verifier after it (not with --no-verify) */
} Step;

typedef struct Session {
    SessionOptions opt;
    char *path;
    bool unsupported; /* the import failed on an unsupported operator or type */
    DiagList diags;   /* everything said while loading and running */
    Module *work;     /* the graph being transformed (NULL if the import failed) */
    LirProgram *lir;  /* the low-level program, once irgen has run */
    BackendModule *module; /* the backend's module, once codegen has run */
    BackendExec *exec;     /* its loaded form, made on first execution */
    double phase_seconds[BACKEND_NPHASES]; /* the module's, kept when loading frees it */
    bool from_lir;    /* the input was a .lir file */
    Step *steps;
    int nsteps, cap;
    char **pipeline;  /* pass names still to run are pipeline[next ..] */
    int npipeline, next;
    bool broken;      /* --break-pass has struck */
    bool npipeline_ran; /* a pass has run on `work` since the import */
    Module **retired; /* earlier working graphs, whose weights snapshots share */
    int nretired;
    LirProgram **retired_lir;
    int nretired_lir;
    int current;      /* the step the explorer shows */
} Session;

/* Loads the model (.hl or .lir text, or ONNX) as step 0. Returns a session even when
 * the import fails (work == NULL, diags say why), so a viewer can show it. */
Session *session_open(const char *path, const SessionOptions *opt);
/* The same from a graph already imported (a copy of m, which must outlive
 * the session: the copy shares its weights): one import for several runs
 * of a model (--keep-float=auto). `path` is used in messages. */
Session *session_open_module(const char *path, const Module *m, const SessionOptions *opt);
/* The same from .hl text already in memory; `name` is used in messages. */
Session *session_open_text(const char *name, const char *text, size_t len,
                           const SessionOptions *opt);
void session_free(Session *s);

/* "-O0", "-O1", "-O2", or a comma-separated list of pass names. An unknown
 * name is an error listing the known passes. Resets the steps after import. */
bool session_set_pipeline(Session *s, const char *spec);
/* Runs the next pass; false when there is none or it failed. */
bool session_step(Session *s);
/* Runs the rest of the pipeline; false if a pass failed. */
bool session_run(Session *s);
bool session_done(const Session *s);

/* The compiled model's inputs and outputs, in order (graph parameters and
 * outputs, or the program's mutable weights for a .lir input). */
int session_ninputs(const Session *s);
const char *session_input_name(const Session *s, int i);
const Type *session_input_type(const Session *s, int i);
int session_noutputs(const Session *s);
const char *session_output_name(const Session *s, int i);

/* Appends passes to the pipeline (a comma-separated list). */
bool session_append_pipeline(Session *s, const char *spec);
/* Makes sure the pipeline ends with an allocated low-level program, adding
 * irgen and allocate when it does not. */
bool session_want_lir(Session *s);
/* The pipeline makes a memory plan (it ends at an allocated program). */
bool session_pipeline_plans(const Session *s);
/* Same as session_want_lir, then the backend's code generation and its
 * optimisation (compiling backends). */
bool session_want_codegen(Session *s);
/* Runs the compiled model on the session's backend: the final graph on the
 * interpreter, or the allocated program on interp-lir. Outputs go to `a`. */
bool session_execute(Session *s, Tensor *const *inputs, Tensor **outputs, Arena *a,
                     DiagList *d);

/* ---- running any step (the explorer's layer-by-layer views) ----------------- */

/* One value computed while a step runs: the provenance name of what computed
 * it (the graph node's name, or the instruction's), which of its results,
 * and the tensor, valid only during the call. A low-level instruction that
 * writes through a view reports the view, then the whole buffer it lies in. */
typedef void (*StepObserver)(void *ctx, const char *name, int result, const Tensor *value);

/* Runs the model as it is after step k: a graph step on the interpreter, a
 * low-level step on a copy of its program, given a memory plan when it has
 * none yet, a codegen or llvm-opt step as native code (its LLVM IR
 * JIT-compiled; with `observe`, compiled again with a probe after every
 * instruction, see session_step_exec). Inputs as for session_execute;
 * `observe` may be NULL. */
bool session_run_step(Session *s, int k, Tensor *const *inputs, Tensor **outputs, Arena *a,
                      DiagList *d, StepObserver observe, void *observe_ctx);

/* Step k runs as native code. */
bool session_step_is_native(const Session *s, int k);

/* session_execute reporting every value the backend computes, by name:
 * the graph's nodes, the low-level program's instructions, or the native
 * code's (opt.instrument), read from its memory after each instruction. */
bool session_execute_observed(Session *s, Tensor *const *inputs, Tensor **outputs, Arena *a,
                              DiagList *d, StepObserver observe, void *observe_ctx);
/* Seconds the backend spent in phase p (the module's, or its last ones
 * once loading consumed it): --time-passes. */
double session_phase_seconds(const Session *s, BackendPhase p);
/* The loaded program, loading it on first use (compiling backends). */
BackendExec *session_exec(Session *s, DiagList *d);
/* Step k (codegen or llvm-opt) compiled again for the JIT from the allocated
 * program, instrumented if asked, with --break-pass's miscompile where it
 * struck; the caller frees it (the backend's exec_free). NULL with a diagnostic. */
BackendExec *session_step_exec(Session *s, int k, bool instrument, DiagList *d);

/* ---- naming steps (every command that takes a step uses these) --------------- */

/* The name of step k of the pipeline (run or still to run): "import", or its
 * pass, as "cse#2" for the second run of a pass that runs more than once.
 * The step's number and this name are what a person types to choose it. */
void session_step_label(const Session *s, int k, char *buf, size_t size);
/* The steps `spec` names, in order, into ks (room for session_nplanned(s)):
 * a step number "7", "PASS#K" for the K-th run of PASS, or a bare "PASS"
 * for every run of it. Resolved against the pipeline, so before it runs
 * too. Returns the count, or -1 after an error (prefixed by `what`, e.g.
 * "dot: --after") that lists the steps, or the runs when K is too big. */
int session_find_steps(const Session *s, const char *spec, const char *what, int *ks,
                       DiagList *d);
/* One step: the first that session_find_steps names; -1 after an error. */
int session_find_step(const Session *s, const char *spec, const char *what, DiagList *d);
/* Steps the pipeline makes when every pass runs: the import and one per pass. */
int session_nplanned(const Session *s);

/* The pipelines by level, NULL-terminated. */
const char *const *pipeline_by_level(const char *level);
/* A pipeline (-O0..-O2 or a list of passes) names only passes that exist;
 * false after "unknown pass" (pass_lookup). Its order is checked when a
 * session takes it. */
bool pipeline_check(const char *spec, DiagList *d);

#endif
