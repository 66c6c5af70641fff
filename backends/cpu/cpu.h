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

#include "core/diag.h"
#include "core/lir.h"
#include "core/strbuf.h"

typedef struct CpuOptions {
    const char *target_cpu; /* NULL: the host */
    const char *entry;      /* the entry point's name; NULL: "glowc_main" */
    bool fallback;          /* run kinds without a libjit kernel by the interpreter's */
    bool embed_weights;     /* executables: the weights as a global in the object */
} CpuOptions;

typedef struct CpuModule CpuModule;

/* LLVM IR for an allocated program; NULL with a diagnostic listing every
 * operator without a kernel (unless fallback). */
CpuModule *cpu_codegen(LirProgram *p, const CpuOptions *o, DiagList *d);
bool cpu_optimize(CpuModule *m, DiagList *d);
void cpu_print_llvm(CpuModule *m, StrBuf *out);
bool cpu_emit(CpuModule *m, bool assembly, StrBuf *out, DiagList *d);
/* The instructions that run on the interpreter's kernel, as "kind (name)". */
int cpu_fallback_count(const CpuModule *m);
const char *cpu_fallback_what(const CpuModule *m, int i);
/* The kernel (or fallback) each instruction calls, by program index. */
const char *cpu_instr_function(const CpuModule *m, int index);
const char *cpu_target_cpu(const CpuModule *m);
void cpu_module_free(CpuModule *m);

/* JIT: compiles the optimised module (which it takes over) and runs it. */
typedef struct CpuExec CpuExec;
CpuExec *cpu_jit(CpuModule *m, int threads, DiagList *d);
bool cpu_exec_run(CpuExec *e, Tensor *const *inputs, Tensor **outputs, Arena *a, DiagList *d);
void cpu_exec_free(CpuExec *e);

/* The whole program's constant weights laid out as the plan says. */
bool cpu_weights_blob(const LirProgram *p, unsigned char *blob);

/* The fallback kernel generated code calls (see fallback.c). */
int libjit_generic(const int64_t *d, void *const *ops);

/* The embedded libjit bitcode (generated at build time). */
extern const unsigned char libjit_bc[];
extern const unsigned int libjit_bc_len;

#endif
