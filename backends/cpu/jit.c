/* JIT execution through LLVM's ORC LLJIT: the optimised module is compiled
 * for the host, symbols it does not define (libc, libm, pthreads) resolve
 * against the process, and the entry point is called on memories laid out
 * by the program's plan. Also the snapshots of a module that the session
 * keeps per step, to run any step as native code. */
#include "backends/cpu/cpu_internal.h"
#include "backends/cpu/libjit/libjit.h"
#include "core/infer.h"
#include "core/str_ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Transforms/PassBuilder.h>

typedef int (*EntryFn)(uint8_t *, uint8_t *, uint8_t *, void *);
typedef void *(*RuntimeNewFn)(int);
typedef void (*RuntimeFreeFn)(void *);
typedef double (*FmaPeakFn)(void *, int64_t);
typedef int64_t (*RuntimeFailureFn)(void *, const char **);

struct CpuExec {
    LLVMOrcLLJITRef jit;
    EntryFn entry;
    RuntimeFreeFn runtime_free;
    RuntimeFreeFn free_strings; /* the run's strings, once the outputs are copied */
    RuntimeFailureFn failure;   /* what a kernel that failed on its input recorded */
    void *rt;
    LirProgram *p;
    Arena *mem; /* weights, mutables, activations */
    uint8_t *weights, *mutables, *acts;
    int nthreads;
    void **probe;      /* instrumented: the module's {fn, ctx} pair */
    FmaPeakFn fma_peak; /* instrumented: libjit_fma_peak */
};

static bool failed(LLVMErrorRef err, const char *what, DiagList *d) {
    if (!err)
        return false;
    char *msg = LLVMGetErrorMessage(err);
    diag_error(d, NULL, "JIT %s failed: %s", what, msg);
    LLVMDisposeErrorMessage(msg);
    return true;
}

static bool lookup(CpuExec *e, const char *name, void **out, DiagList *d) {
    LLVMOrcExecutorAddress addr = 0;
    if (failed(LLVMOrcLLJITLookup(e->jit, &addr, name), name, d))
        return false;
    *out = (void *)(uintptr_t)addr;
    return true;
}

/* The precompiled kernels (engine.c) beside the module, as an object file. */
static bool add_engine(CpuExec *e, LLVMOrcJITDylibRef main, CpuModule *m, DiagList *d) {
    StrBuf obj;
    sb_init(&obj);
    bool ok = cpu_engine_object(m, &obj, d);
    if (ok) {
        LLVMMemoryBufferRef buf =
            LLVMCreateMemoryBufferWithMemoryRangeCopy(obj.data, obj.len, "glowc-engine.o");
        ok = !failed(LLVMOrcLLJITAddObjectFile(e->jit, main, buf), "kernel engine", d);
    }
    sb_free(&obj);
    return ok;
}

static bool create_jit(CpuExec *e, CpuModule *m, DiagList *d) {
    LLVMOrcLLJITBuilderRef jb = LLVMOrcCreateLLJITBuilder();
    LLVMTargetMachineRef tm = cpu_new_target_machine(m);
    LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(
        jb, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(tm));
    if (failed(LLVMOrcCreateLLJIT(&e->jit, jb), "creation", d))
        return false;
    LLVMOrcDefinitionGeneratorRef gen;
    if (failed(LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
                   &gen, LLVMOrcLLJITGetGlobalPrefix(e->jit), NULL, NULL),
               "symbol search", d))
        return false;
    LLVMOrcJITDylibRef main = LLVMOrcLLJITGetMainJITDylib(e->jit);
    LLVMOrcJITDylibAddGenerator(main, gen);
    if (cpu_uses_engine(&m->opt) && !add_engine(e, main, m, d))
        return false;
    if (m->object.len) { /* compiled already (the model cache): the module stays printable */
        LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(
            m->object.data, m->object.len, "glowc-model.o");
        return !failed(LLVMOrcLLJITAddObjectFile(e->jit, main, buf), "module", d);
    }
    LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(m->mod, m->tsc);
    m->mod = NULL; /* the JIT owns it now */
    return !failed(LLVMOrcLLJITAddLLVMIRModule(e->jit, main, tsm), "module", d);
}

static uint8_t *zeroed(Arena *a, int64_t bytes) {
    uint8_t *p = arena_alloc_big(a, (size_t)(bytes > 0 ? bytes : 64));
    if (p)
        memset(p, 0, (size_t)(bytes > 0 ? bytes : 64));
    return p;
}

CpuExec *cpu_jit(CpuModule *m, int threads, DiagList *d) {
    if (!m->host) {
        cpu_refuse_foreign(m->target, d);
        return NULL;
    }
    CpuExec *e = calloc(1, sizeof *e);
    e->p = m->p;
    e->mem = arena_new();
    void *rt_new = NULL;
    if (!create_jit(e, m, d)) {
        cpu_exec_free(e);
        return NULL;
    }
    /* The first lookup compiles the module and links it. */
    double t0 = cpu_seconds();
    bool found = lookup(e, m->entry, (void **)&e->entry, d) &&
                 lookup(e, "libjit_runtime_new", &rt_new, d) &&
                 lookup(e, "libjit_runtime_free", (void **)&e->runtime_free, d) &&
                 lookup(e, "libjit_runtime_free_strings", (void **)&e->free_strings, d) &&
                 lookup(e, "libjit_runtime_failure", (void **)&e->failure, d);
    m->phase[BACKEND_PHASE_EMIT] += cpu_seconds() - t0;
    if (!found) {
        cpu_exec_free(e);
        return NULL;
    }
    e->weights = zeroed(e->mem, m->p->const_bytes);
    e->mutables = zeroed(e->mem, m->p->mutable_bytes);
    e->acts = zeroed(e->mem, m->p->arena_bytes);
    if (!e->weights || !e->mutables || !e->acts) {
        diag_error(d, NULL, "out of memory for the weights, inputs, outputs and activations");
        cpu_exec_free(e);
        return NULL;
    }
    if (!cpu_weights_blob(m->p, e->weights, d)) {
        cpu_exec_free(e);
        return NULL;
    }
    if (m->opt.instrument && (!lookup(e, CPU_PROBE_GLOBAL, (void **)&e->probe, d) ||
                              !lookup(e, "libjit_fma_peak", (void **)&e->fma_peak, d))) {
        cpu_exec_free(e);
        return NULL;
    }
    e->rt = ((RuntimeNewFn)rt_new)(threads); /* one thread too: it keeps the scratch */
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    e->nthreads = threads > 0 ? threads : online > 0 ? (int)online : 1;
    return e;
}

void cpu_exec_free(CpuExec *e) {
    if (!e)
        return;
    if (e->rt && e->runtime_free)
        e->runtime_free(e->rt);
    if (e->jit)
        LLVMOrcDisposeLLJIT(e->jit);
    arena_destroy(e->mem);
    free(e);
}
/* A kernel that failed on its input (libjit_runtime_failure: a string that
 * is no number, the only kind so far): the interpreter's message, at the
 * node's place in the source, as -O0 reports it; or one that could not run
 * (its scratch memory could not be had): why, at the same place. */
static bool report_input_failure(CpuExec *e, const LirInstr *at, DiagList *d) {
    const char *text;
    int64_t elem = e->failure(e->rt, &text);
    if ((elem < 0 && elem != LJ_FAILED_RUN) || !at)
        return false;
    Arena *a = arena_new();
    if (!a)
        return false;
    if (elem == LJ_FAILED_RUN) /* a kernel that could not run (out of memory) */
        node_error(d, instr_as_node(e->p, at, a), "%s", text);
    else
        node_error(d, instr_as_node(e->p, at, a), STR_NOT_A_NUMBER, (long long)elem,
                   text ? text : "");
    arena_destroy(a);
    return true;
}

/* A failed instruction: a trap says why (the branch it stands for does not
 * fit the compiled shapes), a kernel that failed on its input what it
 * read, any other by its index. */
static void report_failure(CpuExec *e, int index, DiagList *d) {
    LirProgram *p = e->p;
    lir_number(p);
    const LirInstr *at = p->first;
    while (at && at->index != index)
        at = at->next;
    if (report_input_failure(e, at, d))
        return;
    const Attr *why = at && at->kind == IK_OF_NODE(NK_TRAP) ? instr_attr(at, AK_message) : NULL;
    if (!why && at && at->kind != IK_COPY) {
        bool dynamic = false;
        for (int k = 0; k < at->nops; k++)
            dynamic |= type_is_dynamic(&at->ops[k]->type);
        if (dynamic) { /* libjit_dynamic: a run-time size that breaks the node's shape rule */
            diag_error(d, NULL, "instruction %d '%s' (%s) failed in the generated code: its "
                       "run-time sizes do not fit it (the interpreters say how)",
                       index, at->name ? at->name : "", instr_kind_name(at->kind));
            return;
        }
    }
    if (!why) {
        diag_error(d, NULL, "instruction %d failed in the generated code", index);
        return;
    }
    char where[256];
    snprintf(where, sizeof where, "node '%s' (trap)", at->name);
    diag_error(d, where, "%s", why->s);
}


/* Inputs are copied into the mutable area, outputs out of it, in the order
 * of the program's mutable weights. */
bool cpu_exec_run(CpuExec *e, Tensor *const *inputs, Tensor **outputs, Arena *a, DiagList *d) {
    int nin = 0, nout = 0;
    for (int b = 0; b < e->p->nbufs; b++) {
        const LirBuf *w = e->p->bufs[b];
        if (w->dead || w->kind != LB_IN)
            continue;
        const Tensor *t = inputs[nin++];
        if (!t || !type_equal(&t->type, &w->type)) {
            char want[TYPE_STR_MAX];
            diag_error(d, NULL, "input '%s' must be %s", w->name, type_str(&w->type, want));
            return false;
        }
        memcpy(e->mutables + w->address, t->data, tensor_bytes(t));
    }
    int status = e->entry(e->weights, e->mutables, e->acts, e->rt);
    bool ok = status == 0;
    if (!ok)
        report_failure(e, status - 1, d);
    for (int b = 0; b < e->p->nbufs && ok; b++) {
        const LirBuf *w = e->p->bufs[b];
        if (w->dead || w->kind != LB_OUT)
            continue;
        Tensor *t = tensor_new(a, &w->type);
        if (!t) {
            ok = false;
            break;
        }
        if (w->has_shape_slot) { /* written at its run-time size */
            const int64_t *dims = (const int64_t *)(e->mutables + w->shape_slot);
            for (int i = 0; i < t->type.rank; i++)
                t->type.dims[i] = dims[i];
            t->type.dyn = 0;
        }
        memcpy(t->data, e->mutables + w->address, tensor_bytes(t));
        /* computed strings move to the caller's arena before the run's go */
        if (!tensor_own_strs(a, t)) {
            diag_error(d, NULL, "out of memory for the strings of output '%s'", w->name);
            ok = false;
            break;
        }
        outputs[nout++] = t;
    }
    e->free_strings(e->rt);
    return ok;
}

/* ---- snapshots: a step's LLVM IR, run later ---------------------------------- */

struct CpuSnapshot {
    BackendOptions opt;
    LLVMMemoryBufferRef bitcode;
};

CpuSnapshot *cpu_snapshot(const CpuModule *m) {
    if (!m || !m->mod || m->opt.output != OUTPUT_JIT)
        return NULL; /* executables and bundles are written, not run here */
    CpuSnapshot *s = calloc(1, sizeof *s);
    s->opt = m->opt;
    s->bitcode = LLVMWriteBitcodeToMemoryBuffer(m->mod);
    return s;
}

void cpu_snapshot_free(CpuSnapshot *s) {
    if (!s)
        return;
    LLVMDisposeMemoryBuffer(s->bitcode);
    free(s);
}

bool cpu_snapshot_run(const CpuSnapshot *s, LirProgram *p, int threads, Tensor *const *inputs,
                      Tensor **outputs, Arena *a, DiagList *d) {
    CpuModule *m = cpu_module_new(p, &s->opt, d);
    if (!m)
        return false;
    /* The parser does not take the buffer; the module gets a fresh context. */
    if (LLVMParseBitcodeInContext2(m->ctx, s->bitcode, &m->mod)) {
        diag_error(d, NULL, "cannot read back the step's LLVM IR");
        cpu_module_free(m);
        return false;
    }
    /* Only what the entry point reaches is compiled: the unoptimised step
     * carries every libjit kernel, and dropping the ones no instruction calls
     * changes nothing the program computes. */
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMErrorRef err = LLVMRunPasses(m->mod, "globaldce", m->tm, po);
    LLVMDisposePassBuilderOptions(po);
    if (err)
        LLVMConsumeError(err); /* only a saving: run the whole module then */
    CpuExec *e = cpu_jit(m, threads, d);
    cpu_module_free(m);
    bool ok = e && cpu_exec_run(e, inputs, outputs, a, d);
    cpu_exec_free(e);
    return ok;
}

bool cpu_exec_set_probe(CpuExec *e, Probe probe, void *ctx) {
    if (!e->probe)
        return false;
    e->probe[0] = (void *)probe;
    e->probe[1] = ctx;
    return true;
}

void *cpu_exec_address(const CpuExec *e, const LirBuf *b) {
    const LirBuf *s = b->kind == LB_VIEW ? b->base : b;
    uint8_t *base = s->kind == LB_ALLOC ? e->acts : s->kind == LB_CONST ? e->weights : e->mutables;
    int64_t off = s->address;
    if (b->kind == LB_VIEW)
        off += b->offset * (int64_t)elem_size(b->type.elem);
    return base + off;
}

const LirProgram *cpu_exec_program(const CpuExec *e) {
    return e->p;
}

int cpu_exec_threads(const CpuExec *e) {
    return e->nthreads;
}

/* The best of 100 rounds of about 0.1 ms: a shared machine's peak is what
 * its cores reach when they hold them, and short rounds are the likeliest
 * to. Each thread times itself (libjit_fma_peak), so waking the threads
 * is not counted. */
double cpu_exec_fma_peak(CpuExec *e) {
    if (!e->fma_peak)
        return 0;
    enum { ITERS = 20000 };
    double best = 0;
    for (int k = 0; k < 100; k++) {
        double rate = e->fma_peak(e->rt, ITERS);
        best = rate > best ? rate : best;
    }
    return best * 1e-9;
}
