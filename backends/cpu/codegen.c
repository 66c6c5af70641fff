/* LIR to LLVM IR. The libjit bitcode (with the kernel engine, only its
 * interface: engine.c) is parsed into a fresh module and the entry point is
 * added to it; each compute instruction becomes
 *   ops[...] = the operands' addresses (base + planned offset)
 *   n = libjit_K_work(desc_i)                    (folds to a constant)
 *   libjit_parallel(rt, n, worker_i, ops)        worker_i calls libjit_K(desc_i, ...)
 * where desc_i is a private constant array (backends/cpu/libjit/desc.h),
 * and instructions with the same kernel and descriptor share a worker:
 * once the kernel is inlined into worker_i, every shape, stride and
 * attribute is a constant to the optimiser. Copies become memmove, views
 * and allocations cost nothing (their addresses are constants). */
#include "backends/cpu/cpu_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/BitReader.h>

#include "backends/cpu/libjit/desc.h"
#include "backends/cpu/libjit/libjit.h"
#include "core/infer.h"
#include "core/lir_verify.h"

#include <stddef.h>

enum { MAX_DESC = 4096 };

typedef struct CG {
    CpuModule *m;
    LirProgram *p;
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMTypeRef i8, i32, i64, ptr, worker_ty;
    LLVMValueRef entry, weights, mutables, acts, rt, ops;
    LLVMValueRef probe; /* instrumented: glowc_probe_call(instr, event), else NULL */
    LLVMValueRef scratch; /* no_threads: the entry's LjScratch over the activations */
    LLVMValueRef scratch_fn[LJ_SCRATCH_SLOTS]; /* no_threads: CPU_SCRATCH_FN k */
    int max_ops;
    DiagList *d;
    bool ok;
    /* Workers made so far, by kernel and descriptor: instructions with the
     * same shapes and attributes share one (ResNet-50's 53 convolutions
     * have 23 distinct ones), which is that much less code for O3. */
    struct Worker {
        uint64_t hash;
        LLVMValueRef kernel, desc, fn;
        LLVMValueRef scratch; /* libjit_K_scratch, or NULL */
        int64_t *words;
        int nwords;
    } *workers;
    int nworkers, cap_workers;
    /* Control flow open around the current instruction: for beginif the
     * else block then the join block, for beginloop the test block and the
     * exit block. */
    struct Open {
        LLVMBasicBlockRef a, b;
    } *open;
    int depth;
    Arena *nodes; /* instructions viewed as nodes (dyn_rule), one arena for all */
} CG;

static int64_t f64_bits(double x) {
    int64_t bits;
    memcpy(&bits, &x, sizeof bits);
    return bits;
}

/* ---- descriptors ------------------------------------------------------------- */

static int put_operand(int64_t *w, int n, const LirBuf *b) {
    w[n++] = b->type.elem;
    w[n++] = b->type.rank;
    for (int i = 0; i < DESC_MAX_RANK; i++)
        w[n++] = i < b->type.rank ? b->type.dims[i] : 1;
    w[n++] = b->type.quant;
    w[n++] = f64_bits((double)b->type.scale);
    w[n++] = b->type.offset;
    w[n++] = b->type.qaxis;
    return n;
}

/* One attribute record; false if it does not fit the descriptor. */
static bool put_attr(int64_t *w, int *n, const Attr *a) {
    int64_t *r = w + *n;
    memset(r, 0, DESC_ATTR_WORDS * sizeof *r);
    r[0] = a->key;
    r[1] = 1;
    switch (attr_key_type(a->key)) {
    case AT_INT: r[2] = a->i; break;
    case AT_FLOAT: r[2] = f64_bits(a->f); break;
    case AT_ELEM: r[2] = a->elem; break;
    case AT_ENUM: r[2] = a->i; break;
    case AT_STR: {
        size_t len = strlen(a->s);
        if (len > 8 * DESC_ATTR_VALUES - 1)
            return false;
        memcpy(r + 2, a->s, len);
        r[1] = (int64_t)(len + 8) / 8;
        break;
    }
    case AT_INTS:
        if (a->ints.n > DESC_ATTR_VALUES)
            return false;
        r[1] = a->ints.n;
        for (int i = 0; i < a->ints.n; i++)
            r[2 + i] = a->ints.v[i];
        break;
    case AT_FLOATS:
        if (a->floats.n > DESC_ATTR_VALUES)
            return false;
        r[1] = a->floats.n;
        for (int i = 0; i < a->floats.n; i++)
            r[2 + i] = f64_bits(a->floats.v[i]);
        break;
    }
    *n += DESC_ATTR_WORDS;
    return true;
}

/* The descriptor words of instruction i; 0 if it does not fit. */
static int build_desc(const LirInstr *i, int64_t kind, int64_t *w) {
    int nres = 0;
    while (nres < i->nops && i->roles[nres] != ROLE_IN)
        nres++;
    int n = DESC_OPS;
    w[DESC_KIND] = kind;
    w[DESC_NRES] = nres;
    w[DESC_NOPS] = i->nops;
    w[DESC_NATTRS] = i->nattrs;
    if (DESC_OPS + (i->nops * DESC_OP_WORDS) + i->nattrs * DESC_ATTR_WORDS > MAX_DESC)
        return 0;
    for (int k = 0; k < i->nops; k++)
        n = put_operand(w, n, i->ops[k]);
    for (int k = 0; k < i->nattrs; k++)
        if (!put_attr(w, &n, &i->attrs[k]))
            return 0;
    return n;
}

static LLVMValueRef desc_global(CG *g, const int64_t *w, int n, int index) {
    LLVMValueRef *vals = malloc((size_t)n * sizeof *vals);
    for (int k = 0; k < n; k++)
        vals[k] = LLVMConstInt(g->i64, (unsigned long long)w[k], true);
    LLVMValueRef init = LLVMConstArray2(g->i64, vals, (uint64_t)n);
    free(vals);
    char name[32];
    if (index >= 0)
        snprintf(name, sizeof name, "glowc_desc%d", index);
    else /* a dynamic instruction's shape slots (emit_dynamic_compute) */
        snprintf(name, sizeof name, "glowc_slots%d", -1 - index);
    LLVMValueRef gv = LLVMAddGlobal(g->mod, LLVMTypeOf(init), name);
    LLVMSetInitializer(gv, init);
    LLVMSetGlobalConstant(gv, true);
    LLVMSetLinkage(gv, LLVMPrivateLinkage);
    LLVMSetUnnamedAddress(gv, LLVMGlobalUnnamedAddr);
    return gv;
}

/* ---- addresses --------------------------------------------------------------- */

/* A string constant's slots as a global of the module: pointers into one
 * private array of its characters (NUL after each), which the linker
 * relocates, so that an executable holds the characters and not this
 * process's addresses; the JIT takes the same path. Its slots in the
 * weights stay zero (cpu_weights_blob). */
static LLVMValueRef str_constant(CG *g, const LirBuf *s) {
    char name[48];
    snprintf(name, sizeof name, "glowc_strs%d", s->id);
    LLVMValueRef gv = LLVMGetNamedGlobal(g->mod, name);
    if (gv)
        return gv;
    int64_t n = type_numel(&s->type);
    StrBuf chars;
    sb_init(&chars);
    int64_t *at = malloc((size_t)(n + 1) * sizeof *at);
    LLVMValueRef *slots = malloc((size_t)(n + 1) * sizeof *slots);
    for (int64_t i = 0; at && i < n; i++) {
        const char *t = tensor_get_str(s->payload, i);
        at[i] = (int64_t)chars.len;
        sb_append(&chars, t ? t : "");
        sb_putc(&chars, 0);
    }
    LLVMValueRef text = LLVMConstStringInContext2(g->ctx, chars.data ? chars.data : "", chars.len, true);
    LLVMValueRef tg = LLVMAddGlobal(g->mod, LLVMTypeOf(text), "glowc_chars");
    LLVMSetInitializer(tg, text);
    LLVMSetGlobalConstant(tg, true);
    LLVMSetLinkage(tg, LLVMPrivateLinkage);
    for (int64_t i = 0; at && slots && i < n; i++) {
        LLVMValueRef idx = LLVMConstInt(g->i64, (unsigned long long)at[i], false);
        slots[i] = LLVMConstInBoundsGEP2(g->i8, tg, &idx, 1);
    }
    LLVMValueRef init = LLVMConstArray2(g->ptr, slots, at && slots ? (uint64_t)n : 0);
    gv = LLVMAddGlobal(g->mod, LLVMTypeOf(init), name);
    LLVMSetInitializer(gv, init);
    LLVMSetGlobalConstant(gv, true);
    LLVMSetLinkage(gv, LLVMPrivateLinkage);
    LLVMSetAlignment(gv, 64);
    if (!at || !slots)
        g->ok = false;
    free(at);
    free(slots);
    sb_free(&chars);
    return gv;
}

static LLVMValueRef buf_address(CG *g, const LirBuf *b) {
    const LirBuf *s = b->kind == LB_VIEW ? b->base : b;
    LLVMValueRef base = s->kind == LB_ALLOC ? g->acts : s->kind == LB_CONST ? g->weights : g->mutables;
    int64_t off = s->address;
    if (s->kind == LB_CONST && s->type.elem == ELEM_STR && s->payload) {
        base = str_constant(g, s);
        off = 0;
    }
    if (b->kind == LB_VIEW)
        off += b->offset * (int64_t)elem_size(b->type.elem);
    LLVMValueRef idx = LLVMConstInt(g->i64, (unsigned long long)off, false);
    return LLVMBuildGEP2(g->b, g->i8, base, &idx, 1, "");
}

static void store_operands(CG *g, const LirInstr *i) {
    LLVMTypeRef arr = LLVMArrayType2(g->ptr, (uint64_t)g->max_ops);
    for (int k = 0; k < i->nops; k++) {
        LLVMValueRef idx[2] = {LLVMConstInt(g->i64, 0, false), LLVMConstInt(g->i64, k, false)};
        LLVMValueRef slot = LLVMBuildGEP2(g->b, arr, g->ops, idx, 2, "");
        LLVMBuildStore(g->b, buf_address(g, i->ops[k]), slot);
    }
}

/* ---- calls ------------------------------------------------------------------- */

static LLVMValueRef call(CG *g, LLVMValueRef fn, LLVMValueRef *args, unsigned n) {
    return LLVMBuildCall2(g->b, LLVMGlobalGetValueType(fn), fn, args, n, "");
}

static LLVMValueRef runtime_fn(CG *g, const char *name) {
    LLVMValueRef fn = LLVMGetNamedFunction(g->mod, name);
    if (!fn) {
        diag_error(g->d, NULL, "the libjit bitcode lacks %s (a build problem)", name);
        g->ok = false;
    }
    return fn;
}

/* ---- instrumentation (BackendOptions.instrument) ------------------------------------ */

/* glowc_probe = {fn, ctx}, set by the JIT (cpu_exec_set_probe), and
 *   glowc_probe_call(instr, event) { if (fn) fn(ctx, instr, event); } */
static void make_probe(CG *g) {
    LLVMTypeRef pair = LLVMArrayType2(g->ptr, 2);
    LLVMValueRef gv = LLVMAddGlobal(g->mod, pair, CPU_PROBE_GLOBAL);
    LLVMSetInitializer(gv, LLVMConstNull(pair));
    LLVMTypeRef params[2] = {g->i32, g->i32};
    LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(g->ctx), params, 2, false);
    g->probe = LLVMAddFunction(g->mod, "glowc_probe_call", fty);
    LLVMSetLinkage(g->probe, LLVMInternalLinkage);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(g->ctx);
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(g->ctx, g->probe, "entry");
    LLVMBasicBlockRef call_bb = LLVMAppendBasicBlockInContext(g->ctx, g->probe, "call");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, g->probe, "done");
    LLVMPositionBuilderAtEnd(b, entry);
    LLVMValueRef fn = LLVMBuildLoad2(b, g->ptr, gv, "fn");
    LLVMValueRef one = LLVMConstInt(g->i64, 1, false);
    LLVMValueRef ctx = LLVMBuildLoad2(b, g->ptr, LLVMBuildGEP2(b, g->ptr, gv, &one, 1, ""), "ctx");
    LLVMBuildCondBr(b, LLVMBuildIsNull(b, fn, ""), done, call_bb);
    LLVMPositionBuilderAtEnd(b, call_bb);
    LLVMTypeRef cparams[3] = {g->ptr, g->i32, g->i32};
    LLVMTypeRef cty = LLVMFunctionType(LLVMVoidTypeInContext(g->ctx), cparams, 3, false);
    LLVMValueRef args[3] = {ctx, LLVMGetParam(g->probe, 0), LLVMGetParam(g->probe, 1)};
    LLVMBuildCall2(b, cty, fn, args, 3, "");
    LLVMBuildBr(b, done);
    LLVMPositionBuilderAtEnd(b, done);
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);
}

static void emit_probe(CG *g, LLVMBuilderRef b, int instr, ProbeEvent event) {
    if (!g->probe)
        return;
    LLVMValueRef args[2] = {LLVMConstInt(g->i32, (unsigned long long)instr, true),
                            LLVMConstInt(g->i32, (unsigned long long)event, false)};
    LLVMBuildCall2(b, LLVMGlobalGetValueType(g->probe), g->probe, args, 2, "");
}

/* worker_i(ops, lo, hi, sc) { kernel(desc_i, ops, lo, hi, sc); } */
static LLVMValueRef make_worker(CG *g, LLVMValueRef kernel, LLVMValueRef desc, int index) {
    char name[32];
    snprintf(name, sizeof name, "glowc_worker%d", index);
    LLVMValueRef w = LLVMAddFunction(g->mod, name, g->worker_ty);
    LLVMSetLinkage(w, LLVMInternalLinkage);
    /* Called directly without threads, and kept a function as with them:
     * the same code, and aot.c can tell which instruction's still calls
     * the interpreter's kernel. */
    if (g->m->opt.no_threads)
        LLVMAddAttributeAtIndex(w, (unsigned)LLVMAttributeFunctionIndex,
                                LLVMCreateEnumAttribute(g->ctx,
                                                        LLVMGetEnumAttributeKindForName("noinline", 8), 0));
    LLVMBasicBlockRef bb = LLVMAppendBasicBlockInContext(g->ctx, w, "entry");
    LLVMBuilderRef b = LLVMCreateBuilderInContext(g->ctx);
    LLVMPositionBuilderAtEnd(b, bb);
    LLVMValueRef args[5] = {desc, LLVMGetParam(w, 0), LLVMGetParam(w, 1), LLVMGetParam(w, 2),
                            LLVMGetParam(w, 3)};
    emit_probe(g, b, -1, PROBE_CHUNK_BEGIN);
    LLVMBuildCall2(b, LLVMGlobalGetValueType(kernel), kernel, args, 5, "");
    emit_probe(g, b, -1, PROBE_CHUNK_END);
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);
    return w;
}

static uint64_t words_hash(const int64_t *w, int n) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a over the words */
    for (int k = 0; k < n; k++) {
        h ^= (uint64_t)w[k];
        h *= 1099511628211ull;
    }
    return h;
}

/* The worker (and descriptor) for kernel + words: an existing one with the
 * same of both, or a new one named after instruction `index`. */
static struct Worker *find_worker(CG *g, LLVMValueRef kernel, const int64_t *w, int nw,
                                  int index) {
    uint64_t h = words_hash(w, nw);
    for (int k = 0; k < g->nworkers; k++) {
        struct Worker *x = &g->workers[k];
        if (x->hash == h && x->kernel == kernel && x->nwords == nw &&
            !memcmp(x->words, w, (size_t)nw * sizeof *w))
            return x;
    }
    if (g->nworkers == g->cap_workers) {
        int cap = g->cap_workers ? 2 * g->cap_workers : 64;
        struct Worker *grown = realloc(g->workers, (size_t)cap * sizeof *grown);
        if (!grown)
            return NULL;
        g->workers = grown;
        g->cap_workers = cap;
    }
    struct Worker *x = &g->workers[g->nworkers];
    x->words = malloc((size_t)nw * sizeof *w);
    if (!x->words)
        return NULL;
    memcpy(x->words, w, (size_t)nw * sizeof *w);
    x->nwords = nw;
    x->hash = h;
    x->kernel = kernel;
    x->desc = desc_global(g, w, nw, index);
    x->fn = make_worker(g, kernel, x->desc, index);
    x->scratch = NULL;
    g->nworkers++;
    return x;
}

/* A call that returns nonzero on failure: the entry returns instruction
 * index + 1 there, which the caller reports by name. */
static void return_on_failure(CG *g, LLVMValueRef status, int index) {
    LLVMValueRef failed = LLVMBuildICmp(g->b, LLVMIntNE, status, LLVMConstInt(g->i32, 0, false), "");
    LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(g->ctx, g->entry, "fail");
    LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(g->ctx, g->entry, "ok");
    LLVMBuildCondBr(g->b, failed, bad, ok);
    LLVMPositionBuilderAtEnd(g->b, bad);
    LLVMBuildRet(g->b, LLVMConstInt(g->i32, (unsigned long long)index + 1, false));
    LLVMPositionBuilderAtEnd(g->b, ok);
}

/* A kernel K that can fail on its input (libjit_K_fails(desc) says when)
 * records it in its threads' scratch; so does one with scratch
 * (libjit_K_scratch) that cannot have it (out of memory). The entry
 * returns index + 1 then, and the caller names the instruction and the
 * element or the reason (jit.c). Without threads (a --no-threads bundle,
 * which holds no strings and whose scratch is fixed) nothing fails. */
static void check_failure(CG *g, const char *name, LLVMValueRef desc, int index) {
    char fails_name[160];
    snprintf(fails_name, sizeof fails_name, "%s_fails", name);
    LLVMValueRef fails = LLVMGetNamedFunction(g->mod, fails_name);
    snprintf(fails_name, sizeof fails_name, "%s_scratch", name);
    bool scratch = LLVMGetNamedFunction(g->mod, fails_name) != NULL;
    if ((!fails && !scratch) || g->scratch)
        return;
    LLVMValueRef failed = runtime_fn(g, "libjit_failed");
    if (!failed)
        return;
    LLVMValueRef did = call(g, failed, &g->rt, 1);
    if (fails && !scratch)
        did = LLVMBuildAnd(g->b, LLVMBuildTrunc(g->b, call(g, fails, &desc, 1), g->i32, ""), did,
                           "");
    return_on_failure(g, did, index);
}

static void emit_kernel(CG *g, LLVMValueRef kernel, const char *name, const int64_t *w, int nw,
                        int index) {
    struct Worker *x = find_worker(g, kernel, w, nw, index);
    LLVMValueRef par = g->scratch ? NULL : runtime_fn(g, "libjit_parallel");
    if (!x || (!g->scratch && !par)) {
        g->ok = false;
        return;
    }
    char work_name[160];
    snprintf(work_name, sizeof work_name, "%s_work", name);
    LLVMValueRef work_fn = LLVMGetNamedFunction(g->mod, work_name);
    LLVMValueRef n = work_fn ? call(g, work_fn, &x->desc, 1) : LLVMConstInt(g->i64, 1, false);
    if (g->scratch) {
        /* No threads: the worker takes every unit, with the fixed scratch. */
        snprintf(work_name, sizeof work_name, "%s_scratch", name);
        x->scratch = LLVMGetNamedFunction(g->mod, work_name);
        LLVMValueRef args[4] = {g->ops, LLVMConstInt(g->i64, 0, false), n, g->scratch};
        call(g, x->fn, args, 4);
    } else {
        LLVMValueRef args[4] = {g->rt, n, x->fn, g->ops};
        call(g, par, args, 4);
    }
    size_t len;
    g->m->instr_worker[index] = strdup(LLVMGetValueName2(x->fn, &len));
    check_failure(g, name, x->desc, index);
}



/* if (libjit_generic(desc, ops)) return index + 1; -- the fallback lives in
 * glowc (JIT) or is linked in (executables and bundles, aot.c), so only
 * declared here. */
static void emit_generic(CG *g, LLVMValueRef desc, int index) {
    LLVMValueRef fn = LLVMGetNamedFunction(g->mod, "libjit_generic");
    if (!fn) {
        LLVMTypeRef params[2] = {g->ptr, g->ptr};
        fn = LLVMAddFunction(g->mod, "libjit_generic", LLVMFunctionType(g->i32, params, 2, false));
    }
    LLVMValueRef args[2] = {desc, g->ops};
    LLVMValueRef status = call(g, fn, args, 2);
    return_on_failure(g, status, index);
}

static void note_function(CG *g, int index, const char *name) {
    g->m->instr_fn[index] = strdup(name);
}

/* A depthwise convolution (one channel per group, more than one group):
 * its own kernel, libjit_conv_dw_f32 (k_conv.c says why). */
static bool is_depthwise_conv(const LirInstr *i) {
    if (i->kind != IK_OF_NODE(NK_CONV) || i->nops < 3 || i->ops[1]->type.rank < 3)
        return false;
    const Attr *a = instr_attr(i, AK_group);
    int64_t group = a ? a->i : 1, c = i->ops[1]->type.dims[1], m = i->ops[0]->type.dims[1];
    return group > 1 && group == c && group == m;
}

/* libjit_K_VARIANT_E, named into name when the module has it. */
static LLVMValueRef variant_kernel(CG *g, NodeKind nk, const LirInstr *i, const char *variant,
                                   char *name, size_t size) {
    char vn[128];
    snprintf(vn, sizeof vn, "libjit_%s_%s_%s", node_kind_name(nk), variant,
             elem_name(i->ops[0]->type.elem));
    LLVMValueRef k = LLVMGetNamedFunction(g->mod, vn);
    if (k)
        snprintf(name, size, "%s", vn);
    return k;
}

/* Whether a float conv's products are large enough for AMX's tiles (as
 * gemm_amx.c's lj_sgemm_amx_any decides at run time: at least 16 rows,
 * columns and k), so that the explorer names the kernel that runs. */
static bool f32_conv_tiles(const LirInstr *i) {
    if (i->kind != IK_OF_NODE(NK_CONV) || i->nops < 3)
        return false;
    const Type *y = &i->ops[0]->type, *w = &i->ops[2]->type;
    if (y->rank < 3 || y->rank > 4 || w->rank != y->rank)
        return false;
    const Attr *a = instr_attr(i, AK_group);
    int64_t group = a ? a->i : 1, n = 1, k = w->dims[1];
    for (int d = 2; d < y->rank; d++)
        n *= y->dims[d], k *= w->dims[d];
    return group > 0 && y->dims[1] / group >= 16 && n >= 16 && k >= 16;
}

/* libjit_K_amx_E, Intel AMX's tiles where the module has them (k_qconvp.c;
 * a float conv's bf16 tiles, gemm_amx.c, unless --f32-precision=highest),
 * else libjit_K_vnni_E: a kernel using AVX-512 VNNI's vpdpbusd (k_qconv.c),
 * or libjit_K_sdot_E, AArch64's sdot (k_qconvp.c), which only a target
 * that has it may call. */
static LLVMValueRef vnni_kernel(CG *g, NodeKind nk, const LirInstr *i, char *name, size_t size) {
    const char *dot = cpu_dot_kernels(g->m);
    if (!dot)
        return NULL;
    bool f32 = i->ops[0]->type.elem == ELEM_F32;
    bool tiles = cpu_has_amx(g->m) && (!f32 || (!g->m->opt.f32_highest && f32_conv_tiles(i)));
    LLVMValueRef k = tiles ? variant_kernel(g, nk, i, "amx", name, size) : NULL;
    return k ? k : variant_kernel(g, nk, i, dot, name, size);
}

static void emit_compute(CG *g, LirInstr *i, int index) {
    NodeKind nk = NODE_OF_IK(i->kind);
    char name[128];
    snprintf(name, sizeof name, "libjit_%s%s_%s", node_kind_name(nk),
             is_depthwise_conv(i) ? "_dw" : "", elem_name(i->ops[0]->type.elem));
    int64_t w[MAX_DESC];
    int nw = build_desc(i, nk, w);
    /* (Depthwise convolutions keep their own kernel: no product to tile.) */
    LLVMValueRef kernel = nw && !is_depthwise_conv(i) ? vnni_kernel(g, nk, i, name, sizeof name) : NULL;
    if (nw && !kernel)
        kernel = LLVMGetNamedFunction(g->mod, name);
    if (nw && !kernel) { /* the kernel for every element kind (k_table.c) */
        char any[128];
        snprintf(any, sizeof any, "libjit_%s_any", node_kind_name(nk));
        if ((kernel = LLVMGetNamedFunction(g->mod, any)))
            memcpy(name, any, sizeof any);
    }
    if (!kernel && !g->m->opt.fallback) {
        cpu_note_missing(g->m, i, nw ? name : "an attribute too large for a descriptor");
        return;
    }
    if (!nw) {
        diag_error(g->d, NULL, "instruction %d (%s): an attribute does not fit a descriptor", index,
                   node_kind_name(nk));
        g->ok = false;
        return;
    }
    store_operands(g, i);
    if (kernel) {
        emit_kernel(g, kernel, name, w, nw, index);
        note_function(g, index, name);
    } else {
        cpu_note_fallback(g->m, i);
        emit_generic(g, desc_global(g, w, nw, index), index);
        note_function(g, index, "libjit_generic");
    }
}

static void emit_copy(CG *g, const LirInstr *i) {
    LLVMValueRef dst = buf_address(g, i->ops[0]), src = buf_address(g, i->ops[1]);
    LLVMValueRef size = LLVMConstInt(g->i64, type_bytes(&i->ops[1]->type), false);
    LLVMBuildMemMove(g->b, dst, 1, src, 1, size);
}

static void emit_insert(CG *g, LirInstr *i, int index) {
    int64_t w[MAX_DESC];
    int nw = build_desc(i, -1, w);
    LLVMValueRef fn = runtime_fn(g, "libjit_insert");
    if (!fn || !nw)
        return;
    LLVMValueRef desc = desc_global(g, w, nw, index);
    store_operands(g, i);
    LLVMValueRef args[2] = {desc, g->ops};
    call(g, fn, args, 2);
    note_function(g, index, "libjit_insert");
}

/* ---- control flow: blocks of the entry function ---- */

static LLVMValueRef load_scalar(CG *g, const LirBuf *b, LLVMTypeRef t) {
    return LLVMBuildLoad2(g->b, t, buf_address(g, b), "");
}

static LLVMBasicBlockRef block(CG *g, const char *name) {
    return LLVMAppendBasicBlockInContext(g->ctx, g->entry, name);
}

/* beginif: branch on the condition's byte; else: the first part joins,
 * the second starts; endif: the second part joins. beginloop: a test block
 * (iteration < trip count and condition) entering the part or leaving past
 * it; endloop: the iteration counts and the test runs again. */
static void emit_control(CG *g, const LirInstr *i) {
    struct Open *o = &g->open[g->depth];
    switch (i->kind) {
    case IK_BEGINIF: {
        LLVMValueRef c = LLVMBuildICmp(g->b, LLVMIntNE, load_scalar(g, i->ops[0], g->i8),
                                       LLVMConstInt(g->i8, 0, false), "");
        LLVMBasicBlockRef then = block(g, "then");
        *o = (struct Open){block(g, "else"), block(g, "endif")};
        g->depth++;
        LLVMBuildCondBr(g->b, c, then, o->a);
        LLVMPositionBuilderAtEnd(g->b, then);
        return;
    }
    case IK_ELSE:
        o = &g->open[g->depth - 1];
        LLVMBuildBr(g->b, o->b);
        LLVMPositionBuilderAtEnd(g->b, o->a);
        return;
    case IK_ENDIF:
        o = &g->open[--g->depth];
        LLVMBuildBr(g->b, o->b);
        LLVMPositionBuilderAtEnd(g->b, o->b);
        return;
    case IK_BEGINLOOP: {
        *o = (struct Open){block(g, "loop"), block(g, "endloop")};
        g->depth++;
        LLVMBasicBlockRef body = block(g, "body");
        LLVMBuildBr(g->b, o->a);
        LLVMPositionBuilderAtEnd(g->b, o->a);
        LLVMValueRef it = load_scalar(g, i->ops[0], g->i64);
        LLVMValueRef max = load_scalar(g, i->ops[1], g->i64);
        LLVMValueRef go = LLVMBuildICmp(g->b, LLVMIntNE, load_scalar(g, i->ops[2], g->i8),
                                        LLVMConstInt(g->i8, 0, false), "");
        go = LLVMBuildAnd(g->b, go, LLVMBuildICmp(g->b, LLVMIntSLT, it, max, ""), "");
        LLVMBuildCondBr(g->b, go, body, o->b);
        LLVMPositionBuilderAtEnd(g->b, body);
        return;
    }
    case IK_ENDLOOP: {
        o = &g->open[--g->depth];
        LLVMValueRef at = buf_address(g, i->ops[0]);
        LLVMValueRef it = LLVMBuildLoad2(g->b, g->i64, at, "");
        LLVMBuildStore(g->b, LLVMBuildAdd(g->b, it, LLVMConstInt(g->i64, 1, false), ""), at);
        LLVMBuildBr(g->b, o->a);
        LLVMPositionBuilderAtEnd(g->b, o->b);
        return;
    }
    default: return;
    }
}

/* A trap (a branch that does not fit the compiled shapes) returns its
 * instruction's failure, as a kernel that fails does. */
static void emit_trap(CG *g, int index) {
    LLVMBasicBlockRef after = block(g, "after_trap");
    LLVMBuildRet(g->b, LLVMConstInt(g->i32, (unsigned long long)index + 1, false));
    LLVMPositionBuilderAtEnd(g->b, after);
    note_function(g, index, "trap");
}

/* ---- bounded-dynamic buffers: run-time shapes in the mutable area ---- */

static bool instr_dynamic(const LirInstr *i) {
    for (int k = 0; k < i->nops; k++)
        if (type_is_dynamic(&i->ops[k]->type))
            return true;
    return false;
}

static LLVMValueRef mutable_at(CG *g, int64_t off) {
    LLVMValueRef idx = LLVMConstInt(g->i64, (unsigned long long)off, false);
    return LLVMBuildGEP2(g->b, g->i8, g->mutables, &idx, 1, "");
}

/* A copy into a bounded-dynamic buffer copies the source's bytes (its
 * bound's, or its static size: an If's branch may give a static value to a
 * dynamic result) and the run-time shape: the source's slot, or its static
 * dimensions stored into the destination's. */
static void emit_dynamic_copy(CG *g, const LirInstr *i) {
    emit_copy(g, i);
    const LirBuf *dst = i->ops[0], *src = i->ops[1];
    if (dst->has_shape_slot && src->has_shape_slot) {
        LLVMBuildMemMove(g->b, mutable_at(g, dst->shape_slot), 8, mutable_at(g, src->shape_slot),
                         8, LLVMConstInt(g->i64, MAX_RANK * sizeof(int64_t), false));
    } else if (dst->has_shape_slot && !type_is_dynamic(&src->type)) {
        for (int k = 0; k < src->type.rank; k++)
            LLVMBuildStore(g->b, LLVMConstInt(g->i64, (unsigned long long)src->type.dims[k], false),
                           mutable_at(g, dst->shape_slot + 8 * k));
    }
}

/* The shape rule (nodes.def's infer column) of a node kind. */
static const char *infer_rule(NodeKind k) {
    switch (k) {
#define NODE(E, nm, omin, omax, rmin, rmax, ty, infer, facts, attrs)                               \
    case NK_##E: return #infer;
#include "core/nodes.def"
    default: return "";
    }
}

enum { MAX_DYN_MAP = 64 };

typedef struct DynRule {
    int64_t words[2 * 256 + 2 + 4 * MAX_DYN_MAP]; /* the slots array of desc.h */
    int n;
    const char *why; /* when no libjit kernel takes it at run-time sizes */
} DynRule;

/* Result r's dim ri is (among others) operand k's dim kj at run time. */
static void dyn_source(DynRule *u, int r, int ri, const LirInstr *i, int k, int kj) {
    if (!type_dim_dynamic(&i->ops[k]->type, kj))
        return; /* a static source is 1 or the size itself: nothing to broadcast */
    int64_t *count = &u->words[2 * i->nops + 1];
    if (*count == MAX_DYN_MAP) {
        u->why = "too many run-time dims";
        return;
    }
    int64_t *e = &u->words[2 * i->nops + 2 + 4 * (*count)++];
    e[0] = r, e[1] = ri, e[2] = k, e[3] = kj;
    u->n += 4;
}

/* LJ_DYN_MAP's sources from the shape rules: elementwise kinds broadcast
 * their operands aligned at the last axis; transpose permutes; gather
 * splices the indices' dims in at the axis; reductions keep the axes they
 * do not reduce. */
static void dyn_map(DynRule *u, const LirInstr *i, int nres, const Node *n) {
    NodeKind nk = NODE_OF_IK(i->kind);
    const char *rule = infer_rule(nk);
    const Type *y = &i->ops[0]->type;
    if (node_kind_has(nk, NF_EW)) {
        for (int r = 0; r < nres; r++)
            for (int d = 0; d < i->ops[r]->type.rank; d++)
                for (int k = nres; k < i->nops; k++) {
                    int j = d - (i->ops[r]->type.rank - i->ops[k]->type.rank);
                    if (j >= 0)
                        dyn_source(u, r, d, i, k, j);
                }
    } else if (nk == NK_TRANSPOSE) {
        int np;
        const int64_t *perm = node_attr_ints(n, AK_perm, &np);
        for (int d = 0; d < y->rank; d++)
            dyn_source(u, 0, d, i, 1, perm && np == y->rank ? (int)perm[d] : y->rank - 1 - d);
    } else if (nk == NK_GATHER) {
        int rank = i->ops[1]->type.rank, ri = i->ops[2]->type.rank, axis;
        axis_normalize(node_attr_int(n, AK_axis, 0), rank, &axis);
        for (int d = 0; d < y->rank; d++) {
            if (d < axis)
                dyn_source(u, 0, d, i, 1, d);
            else if (d < axis + ri)
                dyn_source(u, 0, d, i, 2, d - axis);
            else
                dyn_source(u, 0, d, i, 1, d - ri + 1);
        }
    } else if (!strcmp(rule, "reduce") || !strcmp(rule, "arg_reduce")) {
        int rank = i->ops[1]->type.rank, axis;
        uint32_t mask;
        if (!strcmp(rule, "reduce")) {
            mask = reduce_axes_mask(n, rank);
        } else {
            axis_normalize(node_attr_int(n, AK_axis, 0), rank, &axis);
            mask = 1u << axis;
        }
        bool keep = node_attr_int(n, AK_keepdims, 1) != 0;
        for (int d = 0, out = 0; d < rank; d++) {
            if (!(mask & (1u << d)))
                dyn_source(u, 0, out, i, 1, d);
            if (keep || !(mask & (1u << d)))
                out++;
        }
    } else if (nk == NK_SCATTER_ELEMENTS || nk == NK_SPLIT) {
        /* each result is the data's shape (split: but along the axis) */
        int rank = i->ops[nres]->type.rank, axis = -1;
        if (nk == NK_SPLIT)
            axis_normalize(node_attr_int(n, AK_axis, 0), rank, &axis);
        for (int r = 0; r < nres; r++)
            for (int d = 0; d < rank; d++)
                if (d != axis)
                    dyn_source(u, r, d, i, nres, d);
    } else if (nk == NK_FULLY_CONNECTED) {
        dyn_source(u, 0, 0, i, 1, 0); /* y [M, N] of x [M, K] */
    } else if (nk == NK_ROI_ALIGN) {
        dyn_source(u, 0, 0, i, 2, 0); /* one output per roi (and batch index) */
        dyn_source(u, 0, 0, i, 3, 0);
    } else if (nk == NK_GATHER_ND) {
        /* the indices' rows, then the data's dims after the indexed ones */
        int ri = i->ops[2]->type.rank;
        int last = (int)i->ops[2]->type.dims[ri - 1], b = (int)node_attr_int(n, AK_batch_dims, 0);
        if (type_dim_dynamic(&i->ops[2]->type, ri - 1))
            u->why = "a run-time index depth";
        for (int d = 0; d < y->rank; d++)
            dyn_source(u, 0, d, i, d < ri - 1 ? 2 : 1, d < ri - 1 ? d : d - (ri - 1) + b + last);
    } else if (nk == NK_SHAPE) {
        /* a static result: the kernel reads the run-time dims */
    } else {
        u->why = "no libjit kernel takes them yet";
    }
}

/* How instruction i's results get their run-time dims (desc.h's rules),
 * or u->why set when it stays on the interpreter's kernels. n: i viewed
 * as a node, for the shape rules' attributes (NULL: out of memory). */
static void dyn_rule(DynRule *u, const LirInstr *i, const Node *n) {
    int nres = 0;
    while (nres < i->nops && i->roles[nres] != ROLE_IN)
        nres++;
    *u = (DynRule){.n = 2 * i->nops + 1};
    for (int k = 0; k < i->nops && k < 256; k++) {
        u->words[2 * k] = i->ops[k]->has_shape_slot ? i->ops[k]->shape_slot : -1;
        u->words[2 * k + 1] = i->ops[k]->type.dyn;
    }
    if (i->nops > 256 || !n) {
        u->why = n ? "too many operands" : "out of memory";
        return;
    }
    int64_t *rule = &u->words[2 * i->nops];
    const Type *x = nres < i->nops ? &i->ops[nres]->type : NULL;
    switch (NODE_OF_IK(i->kind)) {
    case NK_NONZERO: *rule = LJ_DYN_NONZERO; break;
    case NK_COMPRESS: *rule = LJ_DYN_COMPRESS; break;
    case NK_NMS: *rule = LJ_DYN_NMS; break;
    case NK_UNIQUE: *rule = LJ_DYN_UNIQUE; break;
    case NK_SLICE: *rule = LJ_DYN_SLICE; break; /* run-time ends too (operand 2) */
    case NK_EXPAND:
        if (i->nops > nres + 1) { /* to a run-time shape: its values */
            *rule = LJ_DYN_EXPAND;
            break;
        }
        *rule = LJ_DYN_MAP;
        u->words[u->n++] = 0;
        dyn_map(u, i, nres, n);
        break;
    case NK_CONCAT: *rule = LJ_DYN_CONCAT; break;
    case NK_RANGE: *rule = LJ_DYN_RANGE; break;
    case NK_TILE: *rule = LJ_DYN_TILE; break;
    case NK_SCAN_ROW: *rule = LJ_DYN_SCAN_ROW; break;
    case NK_RESHAPE:
        *rule = LJ_DYN_RESHAPE;
        if (__builtin_popcount(i->ops[0]->type.dyn) != 1)
            u->why = "a reshape to more than one run-time dim";
        break;
    case NK_TOP_K:
        /* k a run-time operand; x dynamic, if at all, only along the axis */
        *rule = LJ_DYN_TOP_K;
        if (i->nops != 4 || !x || (x->dyn & ~i->ops[0]->type.dyn))
            u->why = "an input dynamic off the axis";
        break;
    default:
        *rule = LJ_DYN_MAP;
        u->words[u->n++] = 0;
        dyn_map(u, i, nres, n);
    }
}

/* kernel(*(ops + max_ops), ops, lo, hi, sc): a worker whose descriptor is
 * made at run time (libjit_dyn_prepare), passed after the operands. */
static LLVMValueRef make_dyn_worker(CG *g, LLVMValueRef kernel, int index) {
    char name[48];
    snprintf(name, sizeof name, "glowc_dworker%d", index);
    LLVMValueRef w = LLVMAddFunction(g->mod, name, g->worker_ty);
    LLVMSetLinkage(w, LLVMInternalLinkage);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(g->ctx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->ctx, w, "entry"));
    LLVMValueRef idx = LLVMConstInt(g->i64, (unsigned long long)g->max_ops - 1, false);
    LLVMValueRef at = LLVMBuildGEP2(b, g->ptr, LLVMGetParam(w, 0), &idx, 1, "");
    LLVMValueRef args[5] = {LLVMBuildLoad2(b, g->ptr, at, "desc"), LLVMGetParam(w, 0),
                            LLVMGetParam(w, 1), LLVMGetParam(w, 2), LLVMGetParam(w, 3)};
    LLVMBuildCall2(b, LLVMGlobalGetValueType(kernel), kernel, args, 5, "");
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);
    return w;
}

/* The kernel an instruction over bounded-dynamic buffers runs: the one
 * for every kind first (it takes every shape in one loop; an f32 form
 * hands a shape it has no fast path for to it anyway), then its element
 * kind's. */
static LLVMValueRef dyn_kernel(CG *g, const LirInstr *i, char *name, size_t size) {
    const char *kind = node_kind_name(NODE_OF_IK(i->kind));
    snprintf(name, size, "libjit_%s_any", kind);
    LLVMValueRef k = LLVMGetNamedFunction(g->mod, name);
    if (!k) {
        snprintf(name, size, "libjit_%s_%s", kind, elem_name(i->ops[0]->type.elem));
        k = LLVMGetNamedFunction(g->mod, name);
    }
    return k;
}

/* An instruction over bounded-dynamic buffers as libjit code:
 *   if (libjit_dyn_prepare(rd, desc, ops, mutables, slots)) return index + 1;
 *   libjit_parallel(rt, K_work(rd), worker, ops)  -- rd after the operands
 * false when it has no such path (u->why says why). */
static bool emit_dynamic_native(CG *g, LirInstr *i, int index, const int64_t *w, int nw,
                                const DynRule *u) {
    char name[128];
    LLVMValueRef kernel = dyn_kernel(g, i, name, sizeof name);
    LLVMValueRef prep = LLVMGetNamedFunction(g->mod, "libjit_dyn_prepare");
    LLVMValueRef par = runtime_fn(g, "libjit_parallel");
    if (!kernel || !prep || !par || g->scratch)
        return false;
    /* rd lives in the entry block, so that a loop's body does not grow the stack */
    LLVMBasicBlockRef here = LLVMGetInsertBlock(g->b);
    LLVMBasicBlockRef first = LLVMGetEntryBasicBlock(g->entry);
    LLVMBuilderRef top = LLVMCreateBuilderInContext(g->ctx);
    LLVMValueRef head = LLVMGetFirstInstruction(first);
    if (head)
        LLVMPositionBuilderBefore(top, head);
    else
        LLVMPositionBuilderAtEnd(top, first);
    LLVMValueRef rd = LLVMBuildAlloca(top, LLVMArrayType2(g->i64, (uint64_t)nw), "rd");
    LLVMDisposeBuilder(top);
    (void)here;
    store_operands(g, i);
    LLVMValueRef args[5] = {rd, desc_global(g, w, nw, index), g->ops, g->mutables,
                            desc_global(g, u->words, u->n, -1 - index)};
    return_on_failure(g, call(g, prep, args, 5), index);
    LLVMValueRef idx[2] = {LLVMConstInt(g->i64, 0, false),
                           LLVMConstInt(g->i64, (unsigned long long)g->max_ops - 1, false)};
    LLVMBuildStore(g->b, rd,
                   LLVMBuildGEP2(g->b, LLVMArrayType2(g->ptr, (uint64_t)g->max_ops), g->ops, idx,
                                 2, ""));
    char work_name[160];
    snprintf(work_name, sizeof work_name, "%s_work", name);
    LLVMValueRef work_fn = LLVMGetNamedFunction(g->mod, work_name);
    LLVMValueRef n = work_fn ? call(g, work_fn, &rd, 1) : LLVMConstInt(g->i64, 1, false);
    LLVMValueRef pargs[4] = {g->rt, n, make_dyn_worker(g, kernel, index), g->ops};
    call(g, par, pargs, 4);
    check_failure(g, name, rd, index);
    note_function(g, index, name);
    return true;
}

/* An instruction over bounded-dynamic buffers: libjit code at its
 * run-time sizes where there is a rule and a kernel, else
 *   if (libjit_dynamic(desc, ops, mutables, slots)) return index + 1;
 * the interpreter's kernel at the run-time sizes (fallback.c), listed at
 * compile time with the reason (cpu_note_dynamic). */
static void emit_dynamic_compute(CG *g, LirInstr *i, int index) {
    int64_t w[MAX_DESC];
    int nw = build_desc(i, NODE_OF_IK(i->kind), w);
    if (!nw) {
        diag_error(g->d, NULL, "instruction %d (%s): an attribute does not fit a descriptor", index,
                   instr_kind_name(i->kind));
        g->ok = false;
        return;
    }
    DynRule *u = malloc(sizeof *u);
    if (!u) {
        g->ok = false;
        return;
    }
    if (!g->nodes)
        g->nodes = arena_new();
    dyn_rule(u, i, g->nodes ? instr_as_node(g->p, i, g->nodes) : NULL);
    if (!u->why && emit_dynamic_native(g, i, index, w, nw, u)) {
        free(u);
        return;
    }
    cpu_note_dynamic(g->m, i, u->why ? u->why : "no libjit kernel for its kind");
    LLVMValueRef fn = LLVMGetNamedFunction(g->mod, "libjit_dynamic");
    if (!fn) {
        LLVMTypeRef params[4] = {g->ptr, g->ptr, g->ptr, g->ptr};
        fn = LLVMAddFunction(g->mod, "libjit_dynamic", LLVMFunctionType(g->i32, params, 4, false));
    }
    store_operands(g, i);
    LLVMValueRef args[4] = {desc_global(g, w, nw, index), g->ops, g->mutables,
                            desc_global(g, u->words, 2 * i->nops, -1 - index)};
    LLVMValueRef status = call(g, fn, args, 4);
    return_on_failure(g, status, index);
    note_function(g, index, "libjit_dynamic");
    free(u);
}

static void emit_instr(CG *g, LirInstr *i, int index) {
    switch (i->kind) {
    case IK_ALLOC:
    case IK_DEALLOC:
    case IK_TENSORVIEW: return; /* addresses are constants of the plan */
    default: break;
    }
    if (instr_is_control(i->kind)) {
        emit_control(g, i);
        return;
    }
    if (i->kind == IK_OF_NODE(NK_TRAP)) {
        emit_trap(g, index);
        return;
    }
    emit_probe(g, g->b, index, PROBE_BEGIN);
    if (instr_dynamic(i) && i->kind == IK_COPY)
        emit_dynamic_copy(g, i);
    else if (instr_dynamic(i))
        emit_dynamic_compute(g, i, index);
    else if (i->kind == IK_COPY)
        emit_copy(g, i);
    else if (i->kind == IK_INSERT)
        emit_insert(g, i, index);
    else
        emit_compute(g, i, index);
    emit_probe(g, g->b, index, PROBE_END);
}

/* ---- the module ------------------------------------------------------------- */

/* ---- no threads: the kernels' scratch inside the activations memory -------- */

/* CPU_SCRATCH_FN k: max over the workers of libjit_K_scratch(desc, k),
 * which O3 folds to a constant (read back by aot.c for the header). */
static void define_scratch_fns(CG *g) {
    LLVMBuilderRef b = LLVMCreateBuilderInContext(g->ctx);
    for (int k = 0; k < LJ_SCRATCH_SLOTS; k++) {
        LLVMValueRef fn = g->scratch_fn[k];
        LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(g->ctx, fn, "entry"));
        LLVMValueRef most = LLVMConstInt(g->i64, 0, false);
        LLVMTypeRef sty = LLVMFunctionType(g->i64, (LLVMTypeRef[]){g->ptr, g->i32}, 2, false);
        for (int i = 0; i < g->nworkers; i++) {
            if (!g->workers[i].scratch)
                continue;
            LLVMValueRef args[2] = {g->workers[i].desc, LLVMConstInt(g->i32, (unsigned)k, false)};
            LLVMValueRef v = LLVMBuildCall2(b, sty, g->workers[i].scratch, args, 2, "");
            most = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGT, v, most, ""), v, most, "");
        }
        LLVMBuildRet(b, most);
    }
    LLVMDisposeBuilder(b);
}

static LLVMValueRef round64(CG *g, LLVMValueRef x) {
    LLVMValueRef up = LLVMBuildAdd(g->b, x, LLVMConstInt(g->i64, 63, false), "");
    return LLVMBuildAnd(g->b, up, LLVMConstInt(g->i64, ~63ull, false), "");
}

static LLVMValueRef field(CG *g, size_t offset) {
    LLVMValueRef idx = LLVMConstInt(g->i64, offset, false);
    return LLVMBuildGEP2(g->b, g->i8, g->scratch, &idx, 1, "");
}

/* The entry's LjScratch: slot k at the activations' end (the plan's arena
 * rounded up to 64 bytes), after slots 0 .. k-1, each CPU_SCRATCH_FN k
 * bytes rounded up to 64. */
static void begin_static_scratch(CG *g) {
    LLVMTypeRef bytes = LLVMArrayType2(g->i8, sizeof(LjScratch));
    g->scratch = LLVMBuildAlloca(g->b, bytes, "scratch");
    LLVMSetAlignment(g->scratch, 16);
    LLVMTypeRef fty = LLVMFunctionType(g->i64, NULL, 0, false);
    LLVMValueRef off = round64(g, LLVMConstInt(g->i64, (unsigned long long)g->p->arena_bytes, false));
    for (int k = 0; k < LJ_SCRATCH_SLOTS; k++) {
        char name[40];
        snprintf(name, sizeof name, CPU_SCRATCH_FN "%d", k);
        g->scratch_fn[k] = LLVMAddFunction(g->mod, name, fty);
        LLVMValueRef size = LLVMBuildCall2(g->b, fty, g->scratch_fn[k], NULL, 0, "");
        LLVMValueRef at = LLVMBuildGEP2(g->b, g->i8, g->acts, &off, 1, "");
        LLVMBuildStore(g->b, at, field(g, offsetof(LjScratch, p) + (size_t)k * sizeof(void *)));
        LLVMBuildStore(g->b, size, field(g, offsetof(LjScratch, cap) + (size_t)k * sizeof(size_t)));
        off = LLVMBuildAdd(g->b, off, round64(g, size), "");
    }
    /* The AMX tile state not asked for yet (gemm_amx.c). */
    LLVMBuildStore(g->b, LLVMConstInt(g->i32, 0, false),
                   field(g, offsetof(LjScratch, amx_state)));
}

/* The libjit bitcode's scratch mode, a constant of this module. */
static void set_scratch_mode(CG *g, bool fixed) {
    LLVMValueRef gv = LLVMGetNamedGlobal(g->mod, "libjit_static_scratch");
    if (!gv) {
        diag_error(g->d, NULL, "the libjit bitcode lacks libjit_static_scratch (a build problem)");
        g->ok = false;
        return;
    }
    LLVMSetInitializer(gv, LLVMConstInt(LLVMGlobalGetValueType(gv), fixed, false));
    LLVMSetGlobalConstant(gv, true);
}

static void begin_entry(CG *g, const char *name) {
    LLVMTypeRef params[4] = {g->ptr, g->ptr, g->ptr, g->ptr};
    LLVMTypeRef fty = LLVMFunctionType(g->i32, params, 4, false);
    g->entry = LLVMAddFunction(g->mod, name, fty);
    g->weights = LLVMGetParam(g->entry, 0);
    g->mutables = LLVMGetParam(g->entry, 1);
    g->acts = LLVMGetParam(g->entry, 2);
    g->rt = LLVMGetParam(g->entry, 3);
    LLVMSetValueName2(g->weights, "weights", 7);
    LLVMSetValueName2(g->mutables, "mutables", 8);
    LLVMSetValueName2(g->acts, "activations", 11);
    LLVMSetValueName2(g->rt, "rt", 2);
    LLVMBasicBlockRef bb = LLVMAppendBasicBlockInContext(g->ctx, g->entry, "entry");
    LLVMPositionBuilderAtEnd(g->b, bb);
    g->ops = LLVMBuildAlloca(g->b, LLVMArrayType2(g->ptr, (uint64_t)g->max_ops), "ops");
    if (g->m->opt.no_threads)
        begin_static_scratch(g);
}

CpuModule *cpu_codegen(LirProgram *p, const BackendOptions *o, DiagList *d) {
    if (!p->allocated) {
        diag_error(d, NULL, "code generation needs a memory plan (run allocate first)");
        return NULL;
    }
    if (o->no_threads && (o->output != OUTPUT_BUNDLE || o->fallback)) {
        diag_error(d, NULL, "--no-threads is for bundles without --fallback=interp");
        return NULL;
    }
    /* The kernels trust every shape they are given: ill-typed IR (a pass
     * run with --no-verify) is refused here, not compiled into code that
     * writes out of bounds. */
    if (!lir_check_runnable(p, "the cpu backend", d))
        return NULL;
    CpuModule *m = cpu_module_new(p, o, d);
    if (!m)
        return NULL;
    CG g = {.m = m, .p = p, .ctx = m->ctx, .d = d, .ok = true, .max_ops = 1};
    g.i8 = LLVMInt8TypeInContext(g.ctx);
    g.i32 = LLVMInt32TypeInContext(g.ctx);
    g.i64 = LLVMInt64TypeInContext(g.ctx);
    g.ptr = LLVMPointerTypeInContext(g.ctx, 0);
    LLVMTypeRef wparams[4] = {g.ptr, g.i64, g.i64, g.ptr};
    g.worker_ty = LLVMFunctionType(LLVMVoidTypeInContext(g.ctx), wparams, 4, false);
    if (!cpu_libjit_module(m, &g.mod, d)) {
        cpu_module_free(m);
        return NULL;
    }
    m->mod = g.mod;
    set_scratch_mode(&g, o->no_threads);
    if (o->instrument && o->output == OUTPUT_JIT)
        make_probe(&g);
    for (LirInstr *i = p->first; i; i = i->next)
        if (i->nops > g.max_ops)
            g.max_ops = i->nops;
    g.max_ops++; /* the last: a run-time descriptor (emit_dynamic_native) */
    g.b = LLVMCreateBuilderInContext(g.ctx);
    begin_entry(&g, m->entry);
    lir_number(p);
    m->ninstrs = p->ninstrs;
    m->instr_fn = calloc((size_t)p->ninstrs + 1, sizeof *m->instr_fn);
    m->instr_worker = calloc((size_t)p->ninstrs + 1, sizeof *m->instr_worker);
    g.open = calloc((size_t)p->ninstrs + 1, sizeof *g.open);
    int index = 0;
    for (LirInstr *i = p->first; i && g.open; i = i->next, index++)
        emit_instr(&g, i, index);
    g.ok = g.ok && g.open;
    free(g.open);
    if (g.scratch)
        define_scratch_fns(&g);
    arena_destroy(g.nodes);
    for (int k = 0; k < g.nworkers; k++)
        free(g.workers[k].words);
    free(g.workers);
    LLVMBuildRet(g.b, LLVMConstInt(g.i32, 0, false));
    LLVMDisposeBuilder(g.b);
    if (!cpu_report_missing(m, d) || !g.ok || !cpu_add_output_parts(m, d)) {
        cpu_module_free(m);
        return NULL;
    }
    cpu_finish_module(m);
    return m;
}
