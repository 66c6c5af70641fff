/* Inside the CPU backend: the module being built and the helpers the code
 * generator, the optimiser and the JIT share. */
#ifndef GLOWC_BACKENDS_CPU_INTERNAL_H
#define GLOWC_BACKENDS_CPU_INTERNAL_H

#include <llvm-c/Core.h>
#include <llvm-c/Orc.h>
#include <llvm-c/TargetMachine.h>

#include "backends/cpu/cpu.h"

/* The instrumented module's {probe, ctx} pair (codegen.c, jit.c). */
#define CPU_PROBE_GLOBAL "glowc_probe"
/* no_threads bundles: CPU_SCRATCH_FN "k" returns the bytes of the kernels'
 * scratch slot k (codegen.c), a constant once optimised (aot.c). */
#define CPU_SCRATCH_FN "glowc_scratch"

/* A row of targets.def with what the build made for it (module.c). */
typedef struct CpuTarget {
    const char *arch, *triple, *default_cpu;
    const char *crt, *crt_package, *libgcc, *libgcc_package; /* a static link's files (globs) */
    int elf_machine; /* EM_*: the weights' object (aot.c) */
    const char *const *cpus;
    int ncpus;
    const char *const *features;
    int nfeatures;
    const unsigned char *libjit; /* the kernels' bitcode */
    const unsigned int *libjit_len;
    const unsigned char *exe_runtime; /* executables' main() as bitcode */
    const unsigned int *exe_runtime_len;
    const unsigned char *fallback; /* the interpreter's kernels, an object file */
    const unsigned int *fallback_len;
    void (*init)(void); /* LLVM's target, MC layer and printers */
} CpuTarget;

/* The target a --target triple names (NULL: the host's), or NULL after an
 * error listing the supported ones. */
const CpuTarget *cpu_target_find(const char *triple, DiagList *d);
bool cpu_target_is_host(const CpuTarget *t);
/* The error for running t's code in this process: always false. */
bool cpu_refuse_foreign(const CpuTarget *t, DiagList *d);

struct CpuModule {
    BackendOptions opt;
    const CpuTarget *target;
    bool host; /* the target is this machine: the JIT may run its code */
    LirProgram *p;
    LLVMOrcThreadSafeContextRef tsc; /* owns ctx */
    LLVMContextRef ctx;
    LLVMModuleRef mod;               /* NULL once the JIT took it */
    LLVMTargetMachineRef tm;
    char *triple, *cpu, *features;
    char entry[128];
    char **missing; /* kinds without a kernel (deduplicated), for the refusal */
    int nmissing;
    char **fallback; /* instructions run by the interpreter's kernel */
    int nfallback;
    char **instr_fn; /* by instruction index: the function it calls (or NULL) */
    char **instr_worker; /* by instruction index: the worker that calls it (or NULL) */
    int ninstrs;
    double phase[BACKEND_NPHASES]; /* seconds, for --time-passes */
    StrBuf object; /* JIT: the optimised module's machine code, from or for the model cache */
    uint64_t model_key; /* its key (0: the module is not cached) */
    uint64_t engine_key; /* cpu_engine_key, once: it hashes the whole libjit bitcode */
};

/* A monotonic clock in seconds (the phase timings). */
double cpu_seconds(void);

CpuModule *cpu_module_new(LirProgram *p, const BackendOptions *o, DiagList *d);
void cpu_note_missing(CpuModule *m, const LirInstr *i, const char *kernel);
void cpu_note_fallback(CpuModule *m, const LirInstr *i);
void cpu_note_dynamic(CpuModule *m, const LirInstr *i, const char *why);
/* One error listing every kind without a kernel; false if there was one. */
bool cpu_report_missing(CpuModule *m, DiagList *d);
/* Target attributes on every function, everything but the entry and the
 * runtime API internal, so that O3 keeps only what the program uses. */
void cpu_finish_module(CpuModule *m);
/* mod for m's triple, data layout, CPU and features, with every definition
 * internal but those keep(m, name) names (module.c). */
/* The target has AVX-512 VNNI (its features list +avx512vnni, +evex512):
 * code generation may call the libjit_*_vnni_* kernels. */
bool cpu_has_vnni(const CpuModule *m);
bool cpu_has_amx(const CpuModule *m);
/* The target is AArch64 with the dot product extension (+dotprod, or a CPU
 * that has it): code generation may call the libjit_*_sdot_* kernels. */
bool cpu_has_dotprod(const CpuModule *m);
/* The infix of the dot-product kernels this target may call ("vnni",
 * "sdot"), or NULL. */
const char *cpu_dot_kernels(const CpuModule *m);
void cpu_prepare_module(const CpuModule *m, LLVMModuleRef mod,
                        bool (*keep)(const CpuModule *, const char *));
/* The precompiled engine (engine.c): whether o's output links it, the
 * libjit module code generation starts from (with the engine: only its
 * interface, the precompiled functions declared), and the engine's object
 * file (both from the cache in o->cache_dir when there is a valid entry). */
bool cpu_uses_engine(const BackendOptions *o);
bool cpu_libjit_module(CpuModule *m, LLVMModuleRef *mod, DiagList *d);
/* The executable's runtime (backends/cpu/exe) as an object file, compiled
 * once per target and cached like the engine. */
bool cpu_exe_runtime_object(CpuModule *m, StrBuf *out, DiagList *d);
/* The model cache (engine.c), for the JIT: before optimisation, whether an
 * entry for this module exists (then m->mod is the optimised module and
 * m->object its machine code); after it, m->object emitted and stored. */
bool cpu_model_cached(CpuModule *m, DiagList *d);
bool cpu_model_store(CpuModule *m, DiagList *d);
bool cpu_engine_object(CpuModule *m, StrBuf *out, DiagList *d);
/* The key of m's engine and of everything cached beside it: the libjit
 * bitcode, the LLVM version, triple, CPU, features and specialised.def. */
uint64_t cpu_engine_key(const CpuModule *m);
/* An entry of the cache in m->opt.cache_dir that its caller keys itself,
 * the file NAME-KEY in the engine's format: read (false if there is none to
 * use, with a note when it is damaged) or written (best effort). cpu_hash
 * is the FNV-1a the keys are made with, h = 0 to start. */
bool cpu_cache_read(const CpuModule *m, const char *name, uint64_t key, StrBuf *out,
                    DiagList *d);
void cpu_cache_write(const CpuModule *m, const char *name, uint64_t key, const StrBuf *data);
uint64_t cpu_hash(uint64_t h, const void *p, size_t n);
/* A target machine for m's triple/cpu/features, at the code generation
 * level m->mod wants (for the JIT, which takes ownership of its own; m->tm
 * is always the optimising one, which the engine is compiled with). */
LLVMTargetMachineRef cpu_new_target_machine(const CpuModule *m);
/* Before finishing: the executable's main() and model description, or the
 * bundle's exported runtime functions. */
bool cpu_add_output_parts(CpuModule *m, DiagList *d);

#endif
