/* The CPU backend's module: target selection, the refusal list, O3, and
 * printing or emitting the result. */
#include "backends/cpu/cpu_internal.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "target_names.h"

/* ---- targets (targets.def) ----------------------------------------------------- */

/* What the build made for each target: its kernels, its executables' main()
 * and its fallback object (embedded arrays, build/gen), and the CPU and
 * feature names LLVM knows for it (target_names.h, from llc). */
#define TARGET(arch, triple, llvm, cpu, crt, crt_pkg, libgcc, libgcc_pkg, elf)                   \
    extern const unsigned char libjit_bc_##arch[], exe_runtime_bc_##arch[],                     \
        fallback_rt_o_##arch[];                                                                 \
    extern const unsigned int libjit_bc_##arch##_len, exe_runtime_bc_##arch##_len,              \
        fallback_rt_o_##arch##_len;                                                             \
    static const char *const cpus_##arch[] = {TARGET_CPUS_##arch};                              \
    static const char *const features_##arch[] = {TARGET_FEATURES_##arch};                      \
    static void init_##arch(void) {                                                             \
        LLVMInitialize##llvm##TargetInfo();                                                     \
        LLVMInitialize##llvm##Target();                                                         \
        LLVMInitialize##llvm##TargetMC();                                                       \
        LLVMInitialize##llvm##AsmPrinter();                                                     \
        LLVMInitialize##llvm##AsmParser();                                                      \
    }
#include "backends/cpu/targets.def"

#define COUNT(a) ((int)(sizeof a / sizeof *a))
static const CpuTarget targets[] = {
#define TARGET(arch, triple, llvm, cpu, crt, crt_pkg, libgcc, libgcc_pkg, elf)                   \
    {#arch, triple, cpu, crt, crt_pkg, libgcc, libgcc_pkg, elf,                                  \
     cpus_##arch, COUNT(cpus_##arch), features_##arch, COUNT(features_##arch),                   \
     libjit_bc_##arch, &libjit_bc_##arch##_len, exe_runtime_bc_##arch,                           \
     &exe_runtime_bc_##arch##_len, fallback_rt_o_##arch, &fallback_rt_o_##arch##_len,           \
     init_##arch},
#include "backends/cpu/targets.def"
};

/* A triple's component k (0 arch, 1 vendor, 2 OS, 3 environment) in buf. */
static const char *component(const char *triple, int k, char *buf, size_t len) {
    const char *p = triple;
    for (int i = 0; i < k && p; i++) {
        p = strchr(p, '-');
        p = p ? p + 1 : NULL;
    }
    size_t n = p ? strcspn(p, "-") : 0;
    snprintf(buf, len, "%.*s", (int)(n < len ? n : len - 1), p ? p : "");
    return buf;
}

static bool same_component(const char *a, const char *b, int k) {
    char x[64], y[64];
    return !strcmp(component(a, k, x, sizeof x), component(b, k, y, sizeof y));
}

/* Triples name the same target when LLVM's normal forms agree but for the
 * vendor (x86_64-pc-linux-gnu is x86_64-linux-gnu). */
static bool same_target(const char *a, const char *b) {
    char *na = LLVMNormalizeTargetTriple(a), *nb = LLVMNormalizeTargetTriple(b);
    bool same = same_component(na, nb, 0) && same_component(na, nb, 2) && same_component(na, nb, 3);
    LLVMDisposeMessage(na);
    LLVMDisposeMessage(nb);
    return same;
}

bool cpu_target_is_host(const CpuTarget *t) {
    char *host = LLVMGetDefaultTargetTriple();
    bool same = same_target(t->triple, host);
    LLVMDisposeMessage(host);
    return same;
}

/* t's triple as glowc shows it (malloc'd): LLVM's spelling of the host's own,
 * the normal form of any other. */
static char *shown_triple(const CpuTarget *t) {
    if (cpu_target_is_host(t)) {
        char *host = LLVMGetDefaultTargetTriple(), *copy = strdup(host);
        LLVMDisposeMessage(host);
        return copy;
    }
    char *n = LLVMNormalizeTargetTriple(t->triple), *copy = strdup(n);
    LLVMDisposeMessage(n);
    return copy;
}

/* The supported triples, for messages: "x86_64-pc-linux-gnu (host), ...". */
static void list_triples(StrBuf *sb) {
    for (int i = 0; i < COUNT(targets); i++) {
        char *n = shown_triple(&targets[i]);
        sb_printf(sb, "%s%s%s", i ? ", " : "", n, cpu_target_is_host(&targets[i]) ? " (host)" : "");
        free(n);
    }
}

const CpuTarget *cpu_target_find(const char *triple, DiagList *d) {
    char *host = LLVMGetDefaultTargetTriple();
    const char *want = triple ? triple : host;
    const CpuTarget *found = NULL;
    for (int i = 0; i < COUNT(targets) && !found; i++)
        if (same_target(targets[i].triple, want))
            found = &targets[i];
    if (!found) {
        StrBuf sb;
        sb_init(&sb);
        list_triples(&sb);
        if (triple)
            diag_error(d, NULL, "unknown --target '%s'; this glowc generates code for: %s", triple,
                       sb_str(&sb));
        else
            diag_error(d, NULL, "this machine (%s) is no target of this glowc (--target: %s)", host,
                       sb_str(&sb));
        sb_free(&sb);
    }
    LLVMDisposeMessage(host);
    return found;
}

static bool in_list(const char *name, size_t len, const char *const *v, int n) {
    for (int i = 0; i < n; i++)
        if (strlen(v[i]) == len && !strncmp(name, v[i], len))
            return true;
    return false;
}

static void name_list(StrBuf *sb, const char *const *v, int n) {
    for (int i = 0; i < n; i++)
        sb_printf(sb, "%s%s", i ? " " : "", v[i]);
}

static bool is_native_cpu(const char *cpu) {
    return !cpu || !strcmp(cpu, "native") || !strcmp(cpu, "host");
}

/* --target-cpu for t: NULL (the host's CPU, or t's baseline elsewhere),
 * native/host (on the host only), or a name LLVM knows for t. */
static bool check_cpu(const CpuTarget *t, const char *cpu, bool host, DiagList *d) {
    if (cpu && (is_native_cpu(cpu) ? host : in_list(cpu, strlen(cpu), t->cpus, t->ncpus)))
        return true;
    if (!cpu)
        return true;
    StrBuf sb;
    sb_init(&sb);
    name_list(&sb, t->cpus, t->ncpus);
    char *n = shown_triple(t);
    if (is_native_cpu(cpu))
        diag_error(d, NULL,
                   "--target-cpu=%s is this machine's CPU, and %s is not this machine; "
                   "its CPUs: %s",
                   cpu, n, sb_str(&sb));
    else
        diag_error(d, NULL, "unknown --target-cpu '%s' for %s; its CPUs: %s%s", cpu, n,
                   host ? "native " : "", sb_str(&sb));
    free(n);
    sb_free(&sb);
    return false;
}

/* --target-features: "+a,-b", each a feature LLVM knows for t. */
static bool check_features(const CpuTarget *t, const char *features, DiagList *d) {
    for (const char *p = features; p && *p;) {
        size_t len = strcspn(p, ",");
        if (len < 2 || (p[0] != '+' && p[0] != '-') || !in_list(p + 1, len - 1, t->features,
                                                                   t->nfeatures)) {
            StrBuf sb;
            sb_init(&sb);
            name_list(&sb, t->features, t->nfeatures);
            char *n = shown_triple(t);
            diag_error(d, NULL,
                       "--target-features: '%.*s' is not +FEATURE or -FEATURE with a feature "
                       "of %s; "
                       "its features: %s",
                       (int)len, p, n, sb_str(&sb));
            free(n);
            sb_free(&sb);
            return false;
        }
        p += len + (p[len] == ',');
    }
    return true;
}

bool cpu_check_target(const BackendOptions *o, bool here, DiagList *d) {
    const CpuTarget *t = cpu_target_find(o->target, d);
    if (!t)
        return false;
    bool host = cpu_target_is_host(t);
    if (!check_cpu(t, o->target_cpu, host, d) || !check_features(t, o->target_features, d))
        return false;
    if (here && !host)
        return cpu_refuse_foreign(t, d);
    return true;
}

/* glowc compiles for other machines but never runs their code itself. */
bool cpu_refuse_foreign(const CpuTarget *t, DiagList *d) {
    char *n = LLVMNormalizeTargetTriple(t->triple);
    char *host = LLVMGetDefaultTargetTriple();
    diag_error(d, NULL,
               "code for %s cannot run in glowc on this %s machine: write an executable "
               "(glowc compile --target=%s -o EXE) and run it there, or under qemu-%s",
               n, host, t->triple, t->arch);
    LLVMDisposeMessage(host);
    LLVMDisposeMessage(n);
    return false;
}

static LLVMTargetMachineRef target_machine(const CpuModule *m, LLVMCodeGenOptLevel level) {
    LLVMTargetRef target;
    char *err = NULL;
    if (LLVMGetTargetFromTriple(m->triple, &target, &err)) {
        LLVMDisposeMessage(err);
        return NULL;
    }
    return LLVMCreateTargetMachine(target, m->triple, m->cpu, m->features, level, LLVMRelocPIC,
                                   LLVMCodeModelDefault);
}

/* Whether mod defines nothing but the model's own glue (glowc_*: the entry,
 * its workers, probes): every kernel it calls is the engine's. */
static bool glue_only(LLVMModuleRef mod) {
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
        size_t len;
        if (!LLVMIsDeclaration(fn) && strncmp(LLVMGetValueName2(fn, &len), "glowc_", 6))
            return false;
    }
    return true;
}

/* The glue is a list of calls: its instruction selection and register
 * allocation at O3 were most of a small model's emission (40 ms of the
 * transformer's 0.2 s compile -o) for code that runs for microseconds
 * beside its kernels, so it is generated without optimisation (LLVM's
 * fast paths). A module that still holds a kernel body (a bundle, a
 * specialised.def row) gets the optimising code generator. */
LLVMTargetMachineRef cpu_new_target_machine(const CpuModule *m) {
    bool glue = m->mod && cpu_uses_engine(&m->opt) && glue_only(m->mod);
    return target_machine(m, glue ? LLVMCodeGenLevelNone : LLVMCodeGenLevelAggressive);
}

/* The CPU and features code is generated for: the host's own unless a CPU
 * is named; a foreign target's baseline CPU unless one is. */
static void pick_cpu(CpuModule *m, const BackendOptions *o) {
    const char *extra = o->target_features ? o->target_features : "";
    if (m->host && is_native_cpu(o->target_cpu)) {
        char *name = LLVMGetHostCPUName();
        m->cpu = strdup(name);
        LLVMDisposeMessage(name);
        char *f = LLVMGetHostCPUFeatures();
        size_t len = strlen(f) + strlen(extra) + 2;
        m->features = malloc(len);
        snprintf(m->features, len, "%s%s%s", f, *f && *extra ? "," : "", extra);
        LLVMDisposeMessage(f);
        return;
    }
    m->cpu = strdup(o->target_cpu ? o->target_cpu : m->target->default_cpu);
    m->features = strdup(extra);
}

static bool emit(CpuModule *m, bool assembly, StrBuf *out, DiagList *d) {
    LLVMMemoryBufferRef buf;
    char *err = NULL;
    LLVMTargetMachineRef tm = cpu_new_target_machine(m);
    bool failed = !tm || LLVMTargetMachineEmitToMemoryBuffer(
                             tm, m->mod, assembly ? LLVMAssemblyFile : LLVMObjectFile, &err, &buf);
    if (tm)
        LLVMDisposeTargetMachine(tm);
    if (failed) {
        diag_error(d, NULL, "LLVM code generation failed: %s", err ? err : "?");
        LLVMDisposeMessage(err);
        return false;
    }
    sb_append_n(out, LLVMGetBufferStart(buf), LLVMGetBufferSize(buf));
    LLVMDisposeMemoryBuffer(buf);
    return !out->oom;
}

double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* LLVM's diagnostics while it optimises and emits a module. Warnings and
 * remarks are dropped: libjit asks for loops to be unrolled whole (a hint
 * that pays when the descriptor makes the trip count a constant), and LLVM
 * warns "loop not unrolled" wherever the shape leaves it a variable -- as
 * intended, and nothing a user can act on (the bitcode's own build silences
 * it with -Wno-pass-failed). Errors are printed as LLVM's default handler
 * would; the call that failed also reports through its result. */
static void llvm_diagnostic(LLVMDiagnosticInfoRef info, void *ctx) {
    (void)ctx;
    if (LLVMGetDiagInfoSeverity(info) != LLVMDSError)
        return;
    char *what = LLVMGetDiagInfoDescription(info);
    fprintf(stderr, "error: LLVM: %s\n", what);
    LLVMDisposeMessage(what);
}

CpuModule *cpu_module_new(LirProgram *p, const BackendOptions *o, DiagList *d) {
    if (!cpu_check_target(o, false, d))
        return NULL;
    CpuModule *m = calloc(1, sizeof *m);
    sb_init(&m->object);
    m->opt = *o;
    m->p = p;
    m->target = cpu_target_find(o->target, d);
    m->host = cpu_target_is_host(m->target);
    m->target->init();
    snprintf(m->entry, sizeof m->entry, "%s", o->entry ? o->entry : "glowc_main");
    m->tsc = LLVMOrcCreateNewThreadSafeContext();
    m->ctx = LLVMOrcThreadSafeContextGetContext(m->tsc);
    LLVMContextSetDiagnosticHandler(m->ctx, llvm_diagnostic, NULL);
    /* The host keeps LLVM's own spelling of its triple; others are normalised. */
    m->triple = m->host ? LLVMGetDefaultTargetTriple()
                        : LLVMNormalizeTargetTriple(m->target->triple);
    pick_cpu(m, o);
    m->engine_key = cpu_engine_key(m);
    m->tm = target_machine(m, LLVMCodeGenLevelAggressive);
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
    if (m->triple)
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
    sb_free(&m->object);
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
static void note_fallback(CpuModule *m, const LirInstr *i, const char *key);

void cpu_note_fallback(CpuModule *m, const LirInstr *i) {
    char key[160];
    snprintf(key, sizeof key, "%s on %s", instr_kind_name(i->kind),
             elem_name(i->ops[0]->type.elem));
    note_fallback(m, i, key);
}

/* An instruction over bounded-dynamic buffers left to the interpreter's
 * kernel (libjit_dynamic), with the reason: listed like the fallbacks, so
 * that nothing runs the interpreter's code silently. */
void cpu_note_dynamic(CpuModule *m, const LirInstr *i, const char *why) {
    char key[256];
    snprintf(key, sizeof key, "%s on %s at run-time sizes: %s", instr_kind_name(i->kind),
             elem_name(i->ops[0]->type.elem), why);
    note_fallback(m, i, key);
}

static void note_fallback(CpuModule *m, const LirInstr *i, const char *key) {
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

double cpu_phase_seconds(const CpuModule *m, BackendPhase phase) {
    return m->phase[phase];
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
 * called with; for an executable, what its main() needs; for a bundle, its
 * three names. */
static bool keep_external(const CpuModule *m, const char *name) {
    char buf[160];
    switch (m->opt.output) {
    case OUTPUT_JIT:
        return !strcmp(name, m->entry) || !strcmp(name, "libjit_runtime_new") ||
               !strcmp(name, "libjit_runtime_free") || !strcmp(name, "libjit_runtime_free_strings") ||
               !strcmp(name, "libjit_runtime_failure") ||
               (m->opt.instrument && (!strcmp(name, "libjit_fma_peak") ||
                                      !strcmp(name, CPU_PROBE_GLOBAL)));
    case OUTPUT_EXECUTABLE: /* what the precompiled main() calls and reads */
        return !strcmp(name, m->entry) || !strcmp(name, "glowc_model_info");
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

static void set_target_attributes(const CpuModule *m, LLVMContextRef ctx, LLVMValueRef fn) {
    unsigned idx = (unsigned)LLVMAttributeFunctionIndex;
    LLVMRemoveStringAttributeAtIndex(fn, idx, "target-cpu", 10);
    LLVMRemoveStringAttributeAtIndex(fn, idx, "target-features", 15);
    LLVMRemoveStringAttributeAtIndex(fn, idx, "tune-cpu", 8);
    LLVMAddAttributeAtIndex(fn, idx, LLVMCreateStringAttribute(ctx, "target-cpu", 10, m->cpu,
                                                               (unsigned)strlen(m->cpu)));
    LLVMAddAttributeAtIndex(fn, idx,
                            LLVMCreateStringAttribute(ctx, "target-features", 15, m->features,
                                                      (unsigned)strlen(m->features)));
}

/* What the module's features (the host's, then --target-features) say of
 * feature f ("avx512vnni"): 1 on, -1 off, 0 nothing; the last of "+f" and
 * "-f" in "+a,+f,-b,-f" decides, as for LLVM. */
static int feature_sign(const CpuModule *m, const char *f) {
    size_t n = strlen(f);
    int sign = 0;
    for (const char *p = m->features; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n + 1 && (*p == '+' || *p == '-') && !strncmp(p + 1, f, n))
            sign = *p == '+' ? 1 : -1;
        p = end ? end + 1 : NULL;
    }
    return sign;
}

/* Whether the features turn f on. A CPU named by --target-cpu alone brings
 * its features to LLVM but not to this list, and is given the kernels every
 * CPU of the target runs (but for dotprod: cpu_has_dotprod). */
static bool has_feature(const CpuModule *m, const char *f) {
    return feature_sign(m, f) > 0;
}

bool cpu_has_vnni(const CpuModule *m) {
    return has_feature(m, "avx512vnni") && has_feature(m, "evex512");
}

/* Intel's AMX tiles, int8 (libjit_qconv_packed_amx_*) and bf16
 * (libjit_conv_amx_f32): named by the features, with VNNI (the int8
 * kernel falls back to it where AMX does not apply or the OS refuses the
 * tile state; the f32 one to the FMA product). Every CPU with AMX has
 * both kinds. */
bool cpu_has_amx(const CpuModule *m) {
    return cpu_has_vnni(m) && has_feature(m, "amx-int8") && has_feature(m, "amx-tile") &&
           has_feature(m, "amx-bf16") && has_feature(m, "avx512bf16");
}

/* AArch64's dot product instructions (sdot): named by --target-features, or
 * brought by the --target-cpu (target_names.h lists the CPUs whose features
 * clang-19 expands to +dotprod), unless -dotprod takes them away. */
bool cpu_has_dotprod(const CpuModule *m) {
    if (strcmp(m->target->arch, "aarch64"))
        return false;
    int sign = feature_sign(m, "dotprod");
    if (sign)
        return sign > 0;
    static const char *const cpus[] = {TARGET_DOTPROD_CPUS_aarch64};
    return in_list(m->cpu, strlen(m->cpu), cpus, COUNT(cpus));
}

bool cpu_f32_tiles(const BackendOptions *o) {
    if (o->f32_highest)
        return false;
    DiagList quiet;
    diag_init(&quiet, NULL);
    CpuModule m = {0};
    m.target = cpu_target_find(o->target, &quiet);
    diag_free(&quiet);
    if (!m.target)
        return false;
    m.host = cpu_target_is_host(m.target);
    pick_cpu(&m, o);
    bool tiles = cpu_has_amx(&m);
    free(m.cpu);
    free(m.features);
    return tiles;
}

const char *cpu_dot_kernels(const CpuModule *m) {
    return cpu_has_vnni(m) ? "vnni" : cpu_has_dotprod(m) ? "sdot" : NULL;
}

void cpu_prepare_module(const CpuModule *m, LLVMModuleRef mod,
                        bool (*keep)(const CpuModule *, const char *)) {
    /* The VNNI kernels (libjit_*_vnni_*) are for targets that have it
     * (and the AMX ones, libjit_*_amx_*, likewise):
     * elsewhere they are never called, and their 512-bit dot products do
     * not even select (LLVM aborts), so they are made internal here and
     * dropped as unused before code generation; the sdot ones likewise. */
    bool vnni = cpu_has_vnni(m), sdot = cpu_has_dotprod(m), amx = cpu_has_amx(m);
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    LLVMSetTarget(mod, m->triple);
    LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(m->tm);
    LLVMSetModuleDataLayout(mod, dl);
    LLVMDisposeTargetData(dl);
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
        if (LLVMIsDeclaration(fn))
            continue;
        set_target_attributes(m, ctx, fn);
        size_t len;
        const char *name = LLVMGetValueName2(fn, &len);
        if (!keep(m, name) || (!vnni && strstr(name, "_vnni")) || (!sdot && strstr(name, "_sdot")) ||
            (!amx && strstr(name, "_amx")))
            LLVMSetLinkage(fn, LLVMInternalLinkage);
    }
    for (LLVMValueRef gv = LLVMGetFirstGlobal(mod); gv; gv = LLVMGetNextGlobal(gv)) {
        size_t len;
        if (!LLVMIsDeclaration(gv) && !keep(m, LLVMGetValueName2(gv, &len)))
            LLVMSetLinkage(gv, LLVMInternalLinkage);
    }
}

void cpu_finish_module(CpuModule *m) {
    cpu_prepare_module(m, m->mod, keep_external);
}

bool cpu_optimize(CpuModule *m, DiagList *d) {
    if (cpu_model_cached(m, d))
        return true;
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
    return cpu_model_store(m, d);
}

void cpu_print_llvm(CpuModule *m, StrBuf *out) {
    char *s = LLVMPrintModuleToString(m->mod);
    sb_append(out, s);
    LLVMDisposeMessage(s);
}

bool cpu_emit(CpuModule *m, bool assembly, StrBuf *out, DiagList *d) {
    double t0 = cpu_seconds();
    bool ok = emit(m, assembly, out, d);
    m->phase[BACKEND_PHASE_EMIT] += cpu_seconds() - t0;
    return ok;
}

bool cpu_weights_present(const LirProgram *p, DiagList *d) {
    for (int b = 0; b < p->nbufs; b++) {
        const LirBuf *w = p->bufs[b];
        if (w->kind == LB_CONST && !w->dead && (!w->payload || !w->payload->data)) {
            diag_error(d, NULL, "weight '%s' has no data (elided in the text form)", w->name);
            return false;
        }
    }
    return true;
}

bool cpu_weights_blob(const LirProgram *p, unsigned char *blob, DiagList *d) {
    if (!cpu_weights_present(p, d))
        return false;
    for (int b = 0; b < p->nbufs; b++) {
        const LirBuf *w = p->bufs[b];
        if (w->kind != LB_CONST || w->dead)
            continue;
        if (w->type.elem == ELEM_STR) /* the module's own global (codegen str_constant) */
            memset(blob + w->address, 0, type_bytes(&w->type));
        else
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
    /* In an optimised executable the entry point is internal: O3 may have
     * inlined it into main() or dropped its unused parameters (reading a
     * fifth of four overran the stack). */
    if (!out || !inner || LLVMIsDeclaration(inner) || LLVMCountParams(inner) != 4 ||
        type_numel(&out->type) == 0)
        return false;
    char name[160];
    snprintf(name, sizeof name, "%s.unbroken", m->entry);
    LLVMSetValueName2(inner, name, strlen(name));
    LLVMSetLinkage(inner, LLVMInternalLinkage);
    LLVMTypeRef fty = LLVMGlobalGetValueType(inner);
    LLVMValueRef fn = LLVMAddFunction(m->mod, m->entry, fty);
    /* Callers in the module (an executable's main()) call the broken one. */
    LLVMReplaceAllUsesWith(inner, fn);
    set_target_attributes(m, m->ctx, fn);
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
    for (int i = 0; i < COUNT(targets); i++) {
        const CpuTarget *t = &targets[i];
        if (cpu_target_is_host(t)) {
            char *triple = LLVMGetDefaultTargetTriple(), *cpu = LLVMGetHostCPUName();
            sb_printf(out, "%s (host: --target=%s or none; --target-cpu default native, here %s)\n",
                      triple, t->triple, cpu);
            LLVMDisposeMessage(cpu);
            LLVMDisposeMessage(triple);
        } else {
            char *n = LLVMNormalizeTargetTriple(t->triple);
            sb_printf(out,
                      "%s (--target=%s: executables and bundles, run there or under qemu-%s; "
                      "--target-cpu default %s)\n",
                      n, t->triple, t->arch, t->default_cpu);
            LLVMDisposeMessage(n);
        }
        sb_printf(out, "  cpus:");
        for (int k = 0; k < t->ncpus; k++)
            sb_printf(out, " %s", t->cpus[k]);
        sb_printf(out, "\n");
    }
}
