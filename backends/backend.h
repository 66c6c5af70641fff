/* The backend interface. A backend is one row of the table in backend.c:
 * what it runs natively (the lowering pass rewrites everything else), and,
 * when it compiles, the functions that turn an allocated low-level program
 * into a module of its own, optimise, print, emit, write and run it. The
 * session and tui/ reach backends only through this table; a module, a
 * loaded executable and a frozen copy are pointers the backend owns.
 *
 * Adding a backend: a folder under backends/ that defines a `Backend`, and
 * its row in backend.c. A compiling backend fills every function below; the
 * pipeline's codegen step calls `compile`, its optimisation step `optimize`. */
#ifndef GLOWC_BACKENDS_BACKEND_H
#define GLOWC_BACKENDS_BACKEND_H

#include <stdbool.h>

#include "core/diag.h"
#include "core/graph.h"
#include "core/lir.h"
#include "core/strbuf.h"

typedef enum { OUTPUT_JIT, OUTPUT_EXECUTABLE, OUTPUT_BUNDLE } BackendOutput;

/* How a compiling backend generates code. NULLs mean "the host". */
typedef struct BackendOptions {
    const char *target;          /* --target: a triple */
    const char *target_cpu;      /* --target-cpu: NULL, "native" or "host" for this machine */
    const char *target_features; /* --target-features: "+a,-b" added to the CPU's */
    const char *entry;           /* the entry point's name; NULL: "glowc_main" */
    bool fallback;               /* run kinds without a native kernel by the interpreter's */
    bool f32_highest;            /* --f32-precision=highest: float products by f32 FMAs only */
    BackendOutput output;        /* executables link main() and embed the weights */
    bool instrument;             /* JIT only: call a probe around each instruction */
    bool no_threads;             /* bundles: no thread pool, no pthreads, no malloc */
    const char *cache_dir;       /* cpu: where compiled kernels are kept; NULL: nowhere */
} BackendOptions;

/* Instrumented code calls the probe before and after every instruction that
 * does something (by program index), and before and after each thread's
 * share of a parallel one (instr -1, on that thread). */
typedef enum { PROBE_BEGIN, PROBE_END, PROBE_CHUNK_BEGIN, PROBE_CHUNK_END } ProbeEvent;
typedef void (*Probe)(void *ctx, int instr, int event);

/* The phases of making native code that are no session step, timed by the
 * backend for --time-passes: (ID, what the table calls it). */
#define BACKEND_PHASES(X)                                                                       \
    X(BITCODE, "libjit bitcode parse")                                                          \
    X(ENGINE, "kernel engine (precompiled kernels: cache or compile)")                          \
    X(EMIT, "machine-code emission (JIT: and its in-memory link)")                              \
    X(LINK, "linking (executables, bundles)")
typedef enum {
#define X(id, name) BACKEND_PHASE_##id,
    BACKEND_PHASES(X)
#undef X
    BACKEND_NPHASES
} BackendPhase;

typedef struct BackendModule BackendModule;     /* compiled, not yet loaded */
typedef struct BackendExec BackendExec;         /* loaded and runnable */
typedef struct BackendSnapshot BackendSnapshot; /* a frozen copy of a module */

typedef struct Backend {
    const char *name;
    const char *summary; /* one line for `glowc targets` and --help */
    /* Does the backend run this node kind (with these attributes) itself? */
    bool (*is_native)(const Node *n);
    /* Does it run the allocated low-level program (else the final graph)? */
    bool runs_lir;
    /* Does it compile that program (the codegen steps)? Then all below are set. */
    bool compiles;
    /* Does it run 3x3 convolutions faster as winograd_conv? The winograd pass
     * rewrites them for such a backend only. */
    bool winograd;
    /* Do float products run on matrix tiles for these options (cpu: AMX's
     * bf16 tiles, each operand split in two)? Then 3x3 convolutions run
     * faster direct, and the winograd pass leaves them. NULL: never. */
    bool (*f32_tiles)(const BackendOptions *o);
    /* Does it run qlinear_conv as qconv_packed, weights packed at compile
     * time (the qconv-pack pass rewrites them for such a backend only)? */
    bool qconv_pack;

    /* The module for an allocated program; NULL with a diagnostic listing every
     * operator without a kernel (unless o->fallback), or naming a bad target. */
    BackendModule *(*compile)(LirProgram *p, const BackendOptions *o, DiagList *d);
    bool (*optimize)(BackendModule *m, DiagList *d);
    /* The module's IR as text (LLVM IR for the cpu backend), and its assembly
     * (or object code when !assembly). */
    void (*print_ir)(BackendModule *m, StrBuf *out);
    bool (*emit)(BackendModule *m, bool assembly, StrBuf *out, DiagList *d);
    /* The instructions run by the interpreter's kernels, as "kind (name)". */
    int (*nfallback)(const BackendModule *m);
    const char *(*fallback_what)(const BackendModule *m, int i);
    /* The kernel each instruction calls, and the worker that calls it on the
     * thread pool (NULL if none), by program index. */
    const char *(*instr_function)(const BackendModule *m, int index);
    const char *(*instr_worker)(const BackendModule *m, int index);
    /* --break-pass on a native step: a deliberate, deterministic miscompile
     * of the first output (false if there is none). */
    bool (*miscompile)(BackendModule *m);
    /* Ahead of time: an executable, or a bundle (object, header, weights). */
    bool (*write_executable)(BackendModule *m, const char *path, DiagList *d);
    bool (*write_bundle)(BackendModule *m, const char *dir, const char *model_path, DiagList *d);
    /* Seconds spent in phase so far (loading and writing add to them). */
    double (*phase_seconds)(const BackendModule *m, BackendPhase phase);
    void (*module_free)(BackendModule *m);

    /* A frozen copy, run later for the program it was made from. */
    BackendSnapshot *(*snapshot)(const BackendModule *m);
    bool (*snapshot_run)(const BackendSnapshot *s, LirProgram *p, int threads,
                         Tensor *const *inputs, Tensor **outputs, Arena *a, DiagList *d);
    void (*snapshot_free)(BackendSnapshot *s);

    /* Loading for this process (the module is consumed), and running. NULL
     * with a diagnostic when the module's target is not this machine. */
    BackendExec *(*load)(BackendModule *m, int threads, DiagList *d);
    bool (*run)(BackendExec *e, Tensor *const *inputs, Tensor **outputs, Arena *a, DiagList *d);
    /* Instrumented code only (false otherwise): the probe later runs call. */
    bool (*set_probe)(BackendExec *e, Probe probe, void *ctx);
    /* Where buffer b lies in the running memories (inside the probe: the
     * kernels' values themselves). */
    void *(*address)(const BackendExec *e, const LirBuf *b);
    const LirProgram *(*program)(const BackendExec *e);
    int (*threads)(const BackendExec *e);
    /* Instrumented code only: the measured FMA peak of its threads, GFLOP/s. */
    double (*fma_peak)(BackendExec *e);
    void (*exec_free)(BackendExec *e);

    /* `glowc targets`: the targets and CPUs this build supports. */
    void (*list_targets)(StrBuf *out);
    /* Before a model is loaded: o's target, CPU and features are ones this
     * build supports, and with `here` the target is this machine (native
     * code runs only there); false after an error listing the valid ones. */
    bool (*check_target)(const BackendOptions *o, bool here, DiagList *d);
} Backend;

/* The reference interpreter, on the graph and on the low-level program. */
extern const Backend interp_backend;
extern const Backend interp_lir_backend;
/* LLVM code generation (backends/cpu). */
extern const Backend cpu_backend;

const Backend *backend_find(const char *name);
/* The backend that native code comes from when none is named: the first
 * compiling one in the table. */
const Backend *backend_compiling(void);
/* Every backend, in the table's order; NULL after the last. */
const Backend *backend_at(int i);
const char *backend_names(void); /* for messages */
const char *backend_compiling_names(void);

#endif
