/* The CPU backend's row of the backend table. It lowers what the
 * interpreter lowers, so both run the same graph, and runs every remaining
 * kind for which libjit has a kernel (code generation refuses the rest,
 * listing them). The functions here only convert between the interface's
 * opaque types and the backend's own. */
#include "backends/backend.h"
#include "backends/cpu/cpu.h"
#include "backends/interp/interp.h"

#define MOD(m) ((CpuModule *)(m))
#define CMOD(m) ((const CpuModule *)(m))
#define EXEC(e) ((CpuExec *)(e))
#define CEXEC(e) ((const CpuExec *)(e))

static bool is_native(const Node *n) {
    return interp_is_native(n);
}

/* Code generation bakes every shape into the kernel calls. Instructions over
 * bounded-dynamic buffers call the interpreter's kernels at run time with the
 * sizes kept in the mutable area (codegen.c), in the JIT and in executables
 * (whose main reads the outputs' sizes there): bundles, whose API has no
 * place for a run-time size yet, and a buffer with no shape slot (a view, or
 * a program not allocated here), are refused, naming the instruction. */
static bool refuse_dynamic(const LirProgram *p, const BackendOptions *o, DiagList *d) {
    for (const LirInstr *i = p->first; i; i = i->next) {
        for (int k = 0; !i->dead && k < i->nops; k++) {
            const LirBuf *b = i->ops[k];
            if (!type_is_dynamic(&b->type))
                continue;
            bool slot = b->has_shape_slot;
            if (o->output != OUTPUT_BUNDLE && slot)
                continue;
            char t[TYPE_STR_MAX];
            diag_error(d, NULL,
                       "instruction %d '%s' (%s): operand %d is %s: bounded-dynamic dimensions "
                       "%s (glowc run --backend=cpu and executables run them, as do the interpreters)",
                       i->index, i->name ? i->name : "", instr_kind_name(i->kind), k,
                       type_str(&b->type, t),
                       !slot ? "need a run-time shape slot, which this buffer lacks"
                             : "are not compiled into bundles yet");
            return false;
        }
    }
    return true;
}

static BackendModule *compile(LirProgram *p, const BackendOptions *o, DiagList *d) {
    if (!refuse_dynamic(p, o, d))
        return NULL;
    return (BackendModule *)cpu_codegen(p, o, d);
}

static bool optimize(BackendModule *m, DiagList *d) {
    return cpu_optimize(MOD(m), d);
}

static void print_ir(BackendModule *m, StrBuf *out) {
    cpu_print_llvm(MOD(m), out);
}

static bool emit(BackendModule *m, bool assembly, StrBuf *out, DiagList *d) {
    return cpu_emit(MOD(m), assembly, out, d);
}

static int nfallback(const BackendModule *m) {
    return cpu_fallback_count(CMOD(m));
}

static const char *fallback_what(const BackendModule *m, int i) {
    return cpu_fallback_what(CMOD(m), i);
}

static const char *instr_function(const BackendModule *m, int index) {
    return cpu_instr_function(CMOD(m), index);
}

static const char *instr_worker(const BackendModule *m, int index) {
    return cpu_instr_worker(CMOD(m), index);
}

static bool miscompile(BackendModule *m) {
    return cpu_break_module(MOD(m));
}

static bool write_executable(BackendModule *m, const char *path, DiagList *d) {
    return cpu_write_executable(MOD(m), path, d);
}

static bool write_bundle(BackendModule *m, const char *dir, const char *model, DiagList *d) {
    return cpu_write_bundle(MOD(m), dir, model, d);
}

static double phase_seconds(const BackendModule *m, BackendPhase phase) {
    return cpu_phase_seconds(CMOD(m), phase);
}

static void module_free(BackendModule *m) {
    cpu_module_free(MOD(m));
}

static BackendSnapshot *snapshot(const BackendModule *m) {
    return (BackendSnapshot *)cpu_snapshot(CMOD(m));
}

static bool snapshot_run(const BackendSnapshot *s, LirProgram *p, int threads,
                         Tensor *const *inputs, Tensor **outputs, Arena *a, DiagList *d) {
    return cpu_snapshot_run((const CpuSnapshot *)s, p, threads, inputs, outputs, a, d);
}

static void snapshot_free(BackendSnapshot *s) {
    cpu_snapshot_free((CpuSnapshot *)s);
}

static BackendExec *load(BackendModule *m, int threads, DiagList *d) {
    return (BackendExec *)cpu_jit(MOD(m), threads, d);
}

static bool run(BackendExec *e, Tensor *const *inputs, Tensor **outputs, Arena *a, DiagList *d) {
    return cpu_exec_run(EXEC(e), inputs, outputs, a, d);
}

static bool set_probe(BackendExec *e, Probe probe, void *ctx) {
    return cpu_exec_set_probe(EXEC(e), probe, ctx);
}

static void *address(const BackendExec *e, const LirBuf *b) {
    return cpu_exec_address(CEXEC(e), b);
}

static const LirProgram *program(const BackendExec *e) {
    return cpu_exec_program(CEXEC(e));
}

static int threads(const BackendExec *e) {
    return cpu_exec_threads(CEXEC(e));
}

static double fma_peak(BackendExec *e) {
    return cpu_exec_fma_peak(EXEC(e));
}

static void exec_free(BackendExec *e) {
    cpu_exec_free(EXEC(e));
}

const Backend cpu_backend = {
    .name = "cpu",
    .summary = "native code through LLVM: JIT, executables and bundles",
    .is_native = is_native,
    .runs_lir = true,
    .compiles = true,
    .winograd = true,
    .f32_tiles = cpu_f32_tiles,
    .qconv_pack = true,
    .compile = compile,
    .optimize = optimize,
    .print_ir = print_ir,
    .emit = emit,
    .nfallback = nfallback,
    .fallback_what = fallback_what,
    .instr_function = instr_function,
    .instr_worker = instr_worker,
    .miscompile = miscompile,
    .write_executable = write_executable,
    .write_bundle = write_bundle,
    .phase_seconds = phase_seconds,
    .module_free = module_free,
    .snapshot = snapshot,
    .snapshot_run = snapshot_run,
    .snapshot_free = snapshot_free,
    .load = load,
    .run = run,
    .set_probe = set_probe,
    .address = address,
    .program = program,
    .threads = threads,
    .fma_peak = fma_peak,
    .exec_free = exec_free,
    .list_targets = cpu_list_targets,
    .check_target = cpu_check_target,
};
