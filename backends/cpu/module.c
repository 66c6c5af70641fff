/* The CPU backend's module: target selection, the refusal list, O3, and
 * printing or emitting the result. */
#include "backends/cpu/cpu_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>

static void init_llvm(void) {
    /* Idempotent in LLVM; the native target is all glowc generates for. */
    LLVMInitializeNativeTarget();
    LLVMInitializeNativeAsmPrinter();
    LLVMInitializeNativeAsmParser();
}

LLVMTargetMachineRef cpu_new_target_machine(const CpuModule *m) {
    LLVMTargetRef target;
    char *err = NULL;
    if (LLVMGetTargetFromTriple(m->triple, &target, &err)) {
        LLVMDisposeMessage(err);
        return NULL;
    }
    return LLVMCreateTargetMachine(target, m->triple, m->cpu, m->features,
                                   LLVMCodeGenLevelAggressive, LLVMRelocPIC, LLVMCodeModelDefault);
}

/* The CPU names of the host's target (generated from llc -mcpu=help). */
static const char *const target_cpus[] = {
#include "target_cpus.h"
};

static bool known_cpu(const char *name) {
    for (size_t i = 0; i < sizeof target_cpus / sizeof *target_cpus; i++)
        if (!strcmp(name, target_cpus[i]))
            return true;
    return false;
}

CpuModule *cpu_module_new(LirProgram *p, const BackendOptions *o, DiagList *d) {
    init_llvm();
    CpuModule *m = calloc(1, sizeof *m);
    m->opt = *o;
    m->p = p;
    snprintf(m->entry, sizeof m->entry, "%s", o->entry ? o->entry : "glowc_main");
    m->tsc = LLVMOrcCreateNewThreadSafeContext();
    m->ctx = LLVMOrcThreadSafeContextGetContext(m->tsc);
    m->triple = LLVMGetDefaultTargetTriple();
    bool host = !o->target_cpu || !strcmp(o->target_cpu, "native") || !strcmp(o->target_cpu, "host");
    if (host) {
        char *name = LLVMGetHostCPUName();
        m->cpu = strdup(name);
        LLVMDisposeMessage(name);
        char *f = LLVMGetHostCPUFeatures();
        m->features = strdup(f);
        LLVMDisposeMessage(f);
    } else {
        if (!known_cpu(o->target_cpu)) {
            StrBuf sb;
            sb_init(&sb);
            for (size_t i = 0; i < sizeof target_cpus / sizeof *target_cpus; i++)
                sb_printf(&sb, "%s%s", i ? " " : "", target_cpus[i]);
            diag_error(d, NULL, "unknown --target-cpu '%s'; LLVM knows: native %s",
                       o->target_cpu, sb_str(&sb));
            sb_free(&sb);
            cpu_module_free(m);
            return NULL;
        }
        m->cpu = strdup(o->target_cpu);
        m->features = strdup("");
    }
    m->tm = cpu_new_target_machine(m);
    if (!m->tm) {
        diag_error(d, NULL, "no LLVM target for %s", m->triple);
        cpu_module_free(m);
        return NULL;
    }
    return m;
}

void cpu_module_free(CpuModule *m) {
    if (!m)
        return;
    if (m->mod)
        LLVMDisposeModule(m->mod);
    if (m->tm)
        LLVMDisposeTargetMachine(m->tm);
    if (m->tsc)
        LLVMOrcDisposeThreadSafeContext(m->tsc);
    LLVMDisposeMessage(m->triple);
    free(m->cpu);
    free(m->features);
    for (int i = 0; i < m->nmissing; i++)
        free(m->missing[i]);
    free(m->missing);
    for (int i = 0; i < m->nfallback; i++)
        free(m->fallback[i]);
    free(m->fallback);
    for (int i = 0; i < m->ninstrs; i++) {
        free(m->instr_fn[i]);
        if (m->instr_worker)
            free(m->instr_worker[i]);
    }
    free(m->instr_fn);
    free(m->instr_worker);
    free(m);
}

static void push(char ***list, int *n, const char *s) {
    for (int i = 0; i < *n; i++)
        if (!strcmp((*list)[i], s))
            return;
    *list = realloc(*list, (size_t)(*n + 1) * sizeof **list);
    (*list)[(*n)++] = strdup(s);
}

void cpu_note_missing(CpuModule *m, const LirInstr *i, const char *kernel) {
    char what[160];
    snprintf(what, sizeof what, "%s on %s", instr_kind_name(i->kind),
             elem_name(i->ops[0]->type.elem));
    push(&m->missing, &m->nmissing, what);
    (void)kernel;
}

/* One entry per kind and element kind, with a count and the first node:
 * "conv on f32 (53 of them, the first /conv1/Conv)". */
void cpu_note_fallback(CpuModule *m, const LirInstr *i) {
    char key[160];
    snprintf(key, sizeof key, "%s on %s", instr_kind_name(i->kind),
             elem_name(i->ops[0]->type.elem));
    size_t klen = strlen(key);
    for (int k = 0; k < m->nfallback; k++) {
        if (strncmp(m->fallback[k], key, klen) || m->fallback[k][klen] != ' ')
            continue;
        int count = atoi(m->fallback[k] + klen + 2);
        const char *first = strstr(m->fallback[k], "the first ");
        char what[512];
        snprintf(what, sizeof what, "%s (%d of them, %s", key, count + 1,
                 first ? first : "the first ?)");
        free(m->fallback[k]);
        m->fallback[k] = strdup(what);
        return;
    }
    char what[512];
    snprintf(what, sizeof what, "%s (1 of them, the first %s)", key,
             i->name[0] ? i->name : "?");
    m->fallback = realloc(m->fallback, (size_t)(m->nfallback + 1) * sizeof *m->fallback);
    m->fallback[m->nfallback++] = strdup(what);
}

bool cpu_report_missing(CpuModule *m, DiagList *d) {
    if (!m->nmissing)
        return true;
    StrBuf sb;
    sb_init(&sb);
    for (int i = 0; i < m->nmissing; i++)
        sb_printf(&sb, "%s%s", i ? ", " : "", m->missing[i]);
    diag_error(d, NULL,
               "the cpu backend has no kernel for: %s (--fallback=interp runs them with the "
               "interpreter's kernels)",
               sb_str(&sb));
    sb_free(&sb);
    return false;
}

int cpu_fallback_count(const CpuModule *m) {
    return m->nfallback;
}

const char *cpu_fallback_what(const CpuModule *m, int i) {
    return m->fallback[i];
}

const char *cpu_instr_function(const CpuModule *m, int index) {
    return index >= 0 && index < m->ninstrs ? m->instr_fn[index] : NULL;
}

const char *cpu_instr_worker(const CpuModule *m, int index) {
    return index >= 0 && index < m->ninstrs && m->instr_worker ? m->instr_worker[index] : NULL;
}

const char *cpu_target_cpu(const CpuModule *m) {
    return m->cpu;
}

/* What stays visible: for the JIT, the entry point and the runtime it is
 * called with; for an executable, main(); for a bundle, its three names. */
static bool keep_external(const CpuModule *m, const char *name) {
    char buf[160];
    switch (m->opt.output) {
    case OUTPUT_JIT:
        return !strcmp(name, m->entry) || !strcmp(name, "libjit_runtime_new") ||
               !strcmp(name, "libjit_runtime_free") ||
               (m->opt.instrument && (!strcmp(name, "libjit_fma_peak") ||
                                      !strcmp(name, CPU_PROBE_GLOBAL)));
    case OUTPUT_EXECUTABLE: return !strcmp(name, "main");
    case OUTPUT_BUNDLE:
        if (!strcmp(name, m->entry))
            return true;
        if (m->opt.no_threads) /* the scratch sizes, until aot.c has read them */
            return !strncmp(name, CPU_SCRATCH_FN, strlen(CPU_SCRATCH_FN));
        snprintf(buf, sizeof buf, "%s_runtime_new", m->entry);
        if (!strcmp(name, buf))
            return true;
        snprintf(buf, sizeof buf, "%s_runtime_free", m->entry);
        return !strcmp(name, buf);
    }
    return false;
}

static void set_target_attributes(CpuModule *m, LLVMValueRef fn) {
    unsigned idx = (unsigned)LLVMAttributeFunctionIndex;
    LLVMRemoveStringAttributeAtIndex(fn, idx, "target-cpu", 10);
    LLVMRemoveStringAttributeAtIndex(fn, idx, "target-features", 15);
    LLVMRemoveStringAttributeAtIndex(fn, idx, "tune-cpu", 8);
    LLVMAddAttributeAtIndex(fn, idx, LLVMCreateStringAttribute(m->ctx, "target-cpu", 10, m->cpu,
                                                               (unsigned)strlen(m->cpu)));
    LLVMAddAttributeAtIndex(fn, idx,
                            LLVMCreateStringAttribute(m->ctx, "target-features", 15, m->features,
                                                      (unsigned)strlen(m->features)));
}

void cpu_finish_module(CpuModule *m) {
    LLVMSetTarget(m->mod, m->triple);
    LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(m->tm);
    LLVMSetModuleDataLayout(m->mod, dl);
    LLVMDisposeTargetData(dl);
    for (LLVMValueRef fn = LLVMGetFirstFunction(m->mod); fn; fn = LLVMGetNextFunction(fn)) {
        if (LLVMIsDeclaration(fn))
            continue;
        set_target_attributes(m, fn);
        size_t len;
        const char *name = LLVMGetValueName2(fn, &len);
        if (!keep_external(m, name))
            LLVMSetLinkage(fn, LLVMInternalLinkage);
    }
    for (LLVMValueRef gv = LLVMGetFirstGlobal(m->mod); gv; gv = LLVMGetNextGlobal(gv)) {
        size_t len;
        if (!LLVMIsDeclaration(gv) && !keep_external(m, LLVMGetValueName2(gv, &len)))
            LLVMSetLinkage(gv, LLVMInternalLinkage);
    }
}

bool cpu_optimize(CpuModule *m, DiagList *d) {
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMPassBuilderOptionsSetLoopVectorization(po, true);
    LLVMPassBuilderOptionsSetSLPVectorization(po, true);
    LLVMPassBuilderOptionsSetLoopUnrolling(po, true);
    /* First inline the kernels into their workers and fold their constant
     * descriptors, dropping what no worker reaches (the paths of other
     * shapes, unused kernels), so that O3 spends no time on dead code. */
    LLVMErrorRef err = LLVMRunPasses(
        m->mod, "always-inline,function(sccp,simplifycfg),globaldce,default<O3>", m->tm, po);
    LLVMDisposePassBuilderOptions(po);
    if (err) {
        char *msg = LLVMGetErrorMessage(err);
        diag_error(d, NULL, "LLVM optimisation failed: %s", msg);
        LLVMDisposeErrorMessage(msg);
        return false;
    }
    return true;
}

void cpu_print_llvm(CpuModule *m, StrBuf *out) {
    char *s = LLVMPrintModuleToString(m->mod);
    sb_append(out, s);
    LLVMDisposeMessage(s);
}

bool cpu_emit(CpuModule *m, bool assembly, StrBuf *out, DiagList *d) {
    LLVMMemoryBufferRef buf;
    char *err = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(m->tm, m->mod,
                                            assembly ? LLVMAssemblyFile : LLVMObjectFile, &err,
                                            &buf)) {
        diag_error(d, NULL, "LLVM code generation failed: %s", err ? err : "?");
        LLVMDisposeMessage(err);
        return false;
    }
    sb_append_n(out, LLVMGetBufferStart(buf), LLVMGetBufferSize(buf));
    LLVMDisposeMemoryBuffer(buf);
    return !out->oom;
}

bool cpu_weights_blob(const LirProgram *p, unsigned char *blob, DiagList *d) {
    for (int b = 0; b < p->nbufs; b++) {
        const LirBuf *w = p->bufs[b];
        if (w->kind != LB_CONST || w->dead)
            continue;
        if (!w->payload || !w->payload->data) {
            diag_error(d, NULL, "weight '%s' has no data (elided in the text form)", w->name);
            return false;
        }
        memcpy(blob + w->address, w->payload->data, type_bytes(&w->type));
    }
    return true;
}

/* ---- --break-pass: a deliberate miscompile ------------------------------------ */

static const LirBuf *first_output(const LirProgram *p) {
    for (int b = 0; b < p->nbufs; b++)
        if (p->bufs[b]->kind == LB_OUT && !p->bufs[b]->dead)
            return p->bufs[b];
    return NULL;
}

/* out[i] = 2 out[i] + 1 for i in [0, n): a loop appended where b stands. */
static void emit_perturbation(CpuModule *m, LLVMBuilderRef b, LLVMValueRef fn,
                              LLVMValueRef mutables, const LirBuf *out) {
    LLVMContextRef c = m->ctx;
    ElemKind k = out->type.elem;
    bool is_float = k == ELEM_F32 || k == ELEM_F64;
    LLVMTypeRef i8 = LLVMInt8TypeInContext(c), i64 = LLVMInt64TypeInContext(c);
    LLVMTypeRef ty = k == ELEM_F32   ? LLVMFloatTypeInContext(c)
                     : k == ELEM_F64 ? LLVMDoubleTypeInContext(c)
                                     : LLVMIntTypeInContext(c, (unsigned)elem_size(k) * 8);
    LLVMValueRef off = LLVMConstInt(i64, (unsigned long long)out->address, false);
    LLVMValueRef base = LLVMBuildGEP2(b, i8, mutables, &off, 1, "broken");
    LLVMBasicBlockRef from = LLVMGetInsertBlock(b);
    LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(c, fn, "break.loop");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c, fn, "break.done");
    LLVMBuildBr(b, loop);
    LLVMPositionBuilderAtEnd(b, loop);
    LLVMValueRef i = LLVMBuildPhi(b, i64, "i");
    LLVMValueRef at = LLVMBuildGEP2(b, ty, base, &i, 1, "");
    LLVMValueRef x = LLVMBuildLoad2(b, ty, at, "");
    LLVMValueRef y;
    if (is_float)
        y = LLVMBuildFAdd(b, LLVMBuildFMul(b, x, LLVMConstReal(ty, 2), ""), LLVMConstReal(ty, 1),
                          "");
    else if (k == ELEM_BOOL)
        y = LLVMBuildXor(b, x, LLVMConstInt(ty, 1, false), "");
    else
        y = LLVMBuildAdd(b, x, LLVMConstInt(ty, 1, false), "");
    LLVMBuildStore(b, y, at);
    LLVMValueRef next = LLVMBuildAdd(b, i, LLVMConstInt(i64, 1, false), "");
    LLVMValueRef zero = LLVMConstInt(i64, 0, false);
    LLVMAddIncoming(i, (LLVMValueRef[]){zero, next}, (LLVMBasicBlockRef[]){from, loop}, 2);
    LLVMValueRef n = LLVMConstInt(i64, (unsigned long long)type_numel(&out->type), false);
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, next, n, ""), loop, done);
    LLVMPositionBuilderAtEnd(b, done);
}

/* The entry point becomes an internal "NAME.unbroken"; a new NAME calls it
 * and then perturbs the first output. */
bool cpu_break_module(CpuModule *m) {
    const LirBuf *out = first_output(m->p);
    LLVMValueRef inner = LLVMGetNamedFunction(m->mod, m->entry);
    if (!out || !inner || type_numel(&out->type) == 0)
        return false;
    char name[160];
    snprintf(name, sizeof name, "%s.unbroken", m->entry);
    LLVMSetValueName2(inner, name, strlen(name));
    LLVMSetLinkage(inner, LLVMInternalLinkage);
    LLVMTypeRef fty = LLVMGlobalGetValueType(inner);
    LLVMValueRef fn = LLVMAddFunction(m->mod, m->entry, fty);
    set_target_attributes(m, fn);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(m->ctx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(m->ctx, fn, "entry"));
    LLVMValueRef args[4];
    for (unsigned k = 0; k < 4; k++)
        args[k] = LLVMGetParam(fn, k);
    LLVMValueRef status = LLVMBuildCall2(b, fty, inner, args, 4, "status");
    emit_perturbation(m, b, fn, args[1], out);
    LLVMBuildRet(b, status);
    LLVMDisposeBuilder(b);
    return true;
}

void cpu_list_targets(StrBuf *out) {
    char *triple = LLVMGetDefaultTargetTriple();
    char *host = LLVMGetHostCPUName();
    sb_printf(out, "%s (host; --target-cpu=native is %s)\n  cpus:", triple, host);
    for (size_t i = 0; i < sizeof target_cpus / sizeof *target_cpus; i++)
        sb_printf(out, " %s", target_cpus[i]);
    sb_printf(out, "\n");
    LLVMDisposeMessage(host);
    LLVMDisposeMessage(triple);
}
