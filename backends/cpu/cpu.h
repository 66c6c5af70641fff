/* The CPU backend: the allocated low-level program becomes LLVM IR (one
 * kernel call per instruction, with a constant descriptor of every shape and
 * attribute), linked with the libjit kernels' bitcode, specialised and
 * optimised at O3 for the target CPU; then JIT-compiled and run, or written
 * as an object file for executables and bundles.
 *
 * The generated entry point is
 *   int NAME(uint8_t *weights, uint8_t *mutables, uint8_t *activations,
 *            LibjitRuntime *rt)
 * with the three memories laid out by the program's plan (allocate.c);
 * rt may be NULL (one thread). It returns 0, or 1 + the index of the
 * instruction whose (fallback) kernel failed. */
#ifndef GLOWC_BACKENDS_CPU_H
#define GLOWC_BACKENDS_CPU_H

#include "backends/backend.h"

/* The options (target, output kind, instrumentation) and the probe are the
 * backend interface's: BackendOptions, Probe (backends/backend.h). */
typedef struct CpuModule CpuModule;

/* LLVM IR for an allocated program; NULL with a diagnostic listing every
 * operator without a kernel (unless fallback). */
CpuModule *cpu_codegen(LirProgram *p, const BackendOptions *o, DiagList *d);
bool cpu_optimize(CpuModule *m, DiagList *d);
void cpu_print_llvm(CpuModule *m, StrBuf *out);
bool cpu_emit(CpuModule *m, bool assembly, StrBuf *out, DiagList *d);
/* The instructions that run on the interpreter's kernel, as "kind (name)". */
int cpu_fallback_count(const CpuModule *m);
/* Seconds spent so far in a phase that is no session step (--time-passes). */
double cpu_phase_seconds(const CpuModule *m, BackendPhase phase);
const char *cpu_fallback_what(const CpuModule *m, int i);
/* The kernel (or fallback) each instruction calls, by program index. */
const char *cpu_instr_function(const CpuModule *m, int index);
/* The generated worker function that runs it on the thread pool (shared by
 * instructions with the same kernel and descriptor), or NULL. */
const char *cpu_instr_worker(const CpuModule *m, int index);
const char *cpu_target_cpu(const CpuModule *m);
/* `glowc targets`: the triples and CPUs code generation supports. */
void cpu_list_targets(StrBuf *out);
/* o's --target, --target-cpu and --target-features are ones this build
 * supports (false after an error listing the valid ones); with `here`, the
 * target is also this machine, whose process is the only one glowc runs
 * native code in. */
bool cpu_check_target(const BackendOptions *o, bool here, DiagList *d);
/* Whether code for these options runs float convolutions' products on
 * AMX's bf16 tiles (libjit_conv_amx_f32): a CPU with AMX, and
 * --f32-precision not "highest". */
bool cpu_f32_tiles(const BackendOptions *o);
void cpu_module_free(CpuModule *m);

/* JIT: compiles the optimised module (which it takes over) and runs it. */
typedef struct CpuExec CpuExec;
CpuExec *cpu_jit(CpuModule *m, int threads, DiagList *d);
bool cpu_exec_run(CpuExec *e, Tensor *const *inputs, Tensor **outputs, Arena *a, DiagList *d);
void cpu_exec_free(CpuExec *e);
/* Instrumented code only (false otherwise): the probe the next runs call. */
bool cpu_exec_set_probe(CpuExec *e, Probe probe, void *ctx);
/* Where buffer b (of the executed program) lies in the running memories:
 * inside the probe, the native kernels' values themselves. */
void *cpu_exec_address(const CpuExec *e, const LirBuf *b);
const LirProgram *cpu_exec_program(const CpuExec *e);
int cpu_exec_threads(const CpuExec *e);
/* Instrumented code only: the FMA peak of the runtime's threads, in
 * GFLOP/s, measured with a vector-FMA loop (libjit_fma_peak); 0 if not. */
double cpu_exec_fma_peak(CpuExec *e);

/* A frozen copy of a module's LLVM IR (its bitcode), so that a step of the
 * pipeline can be run as native code after later steps changed the module:
 * each run parses it into a fresh module, JIT-compiles it for program p
 * (the program it was generated from) and runs it once. */
typedef struct CpuSnapshot CpuSnapshot;
CpuSnapshot *cpu_snapshot(const CpuModule *m);
void cpu_snapshot_free(CpuSnapshot *s);
bool cpu_snapshot_run(const CpuSnapshot *s, LirProgram *p, int threads, Tensor *const *inputs,
                      Tensor **outputs, Arena *a, DiagList *d);

/* --break-pass for codegen and llvm-opt: the entry point is wrapped so that
 * after the program it maps every element x of the first output to 2x + 1
 * (x + 1 for integers, x xor 1 for booleans) -- a deliberate, deterministic
 * miscompile that bisection must find. False if there is no output. */
bool cpu_break_module(CpuModule *m);

/* Ahead of time: an executable (object linked with clang-19 against libc,
 * libm and pthreads), or a bundle (DIR/NAME.o, NAME.h, NAME.weights). The
 * module must have been generated for that output and optimised. */
bool cpu_write_executable(CpuModule *m, const char *path, DiagList *d);
bool cpu_write_bundle(CpuModule *m, const char *dir, const char *model_path, DiagList *d);

/* The whole program's constant weights laid out as the plan says; false,
 * naming it, when a weight has no data (a text input that elided it). */
bool cpu_weights_blob(const LirProgram *p, unsigned char *blob, DiagList *d);
/* The same check alone: every weight has its data. */
bool cpu_weights_present(const LirProgram *p, DiagList *d);

/* The fallback kernel generated code calls (see fallback.c). */
int libjit_generic(const int64_t *d, void *const *ops);
int libjit_dynamic(const int64_t *d, void *const *ops, unsigned char *mutables,
                   const int64_t *slots);


#endif
