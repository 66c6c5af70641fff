/* The kernel engine: the libjit functions specialised.def does not keep in
 * each model's module, compiled once per (libjit bitcode, LLVM version,
 * triple, CPU, features, table) into an object file and cached on disk, so
 * that a model's module carries only its entry point, its workers and the
 * specialised kernels through LLVM. Without it, O3 and code generation of
 * every kernel, specialised to each descriptor, were 95% of a compile
 * (4 s for a 20 KB model, most of it the gemm tiles).
 *
 * The model's module starts from the engine's interface: the bitcode cut
 * down to the precompiled functions' declarations (and whatever
 * specialised.def inlines), made once and cached too, since parsing the
 * whole 13 MB took 0.1-0.2 s of every compile and printing what was left
 * of it for the session's step another 0.5 s.
 *
 * Cache entries are files "engine-KEY.o" and "interface-KEY.o" (bitcode)
 * under BackendOptions.cache_dir:
 *   "GLOWCENG" | key (8 bytes) | object length (8) | FNV-1a of the object (8; fnv) | object
 * written to a temporary and renamed, so concurrent runs see a whole entry
 * or none; an entry whose header, length or checksum is wrong is ignored
 * and rebuilt, with a note. */
#include "backends/cpu/cpu_internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Transforms/PassBuilder.h>

/* Bump when the entry's layout, how the engine is compiled or which
 * functions it holds (is_precompiled's rule) changes; the specialised list
 * itself is part of the key. */
enum { ENGINE_FORMAT = 3, HEADER = 32 };
static const char MAGIC[8] = {'G', 'L', 'O', 'W', 'C', 'E', 'N', 'G'};

/* specialised.def's rule: every external libjit_* function but the
 * specialised kernels (and their _work and _scratch), and the lj_* helpers
 * it names; the module's own functions (glowc_*) and the C library never. */
static bool is_precompiled(const CpuModule *m, const char *name) {
    (void)m;
#define SPECIALISED(n)
#define PRECOMPILED(n) if (!strcmp(name, #n)) return true;
#include "backends/cpu/libjit/specialised.def"
    if (strncmp(name, "libjit_", 7))
        return false;
#define SPECIALISED(n) if (!strncmp(name, #n, sizeof #n - 1) && \
                           (!name[sizeof #n - 1] || name[sizeof #n - 1] == '_')) return false;
#define PRECOMPILED(n)
#include "backends/cpu/libjit/specialised.def"
    return true;
}

bool cpu_uses_engine(const BackendOptions *o) {
    /* Bundles stay one self-contained object with no extra global symbols
     * (two of them link into one program), and --no-threads ones make the
     * scratch mode a constant of the module, which the engine cannot see. */
    return o->output != OUTPUT_BUNDLE;
}

/* In mod: each precompiled function's body dropped (a declaration of the
 * same name and type), so that LLVM neither optimises nor emits it. */
static void strip_precompiled(const CpuModule *m, LLVMModuleRef mod) {
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod), next; fn; fn = next) {
        next = LLVMGetNextFunction(fn);
        size_t len;
        const char *name = LLVMGetValueName2(fn, &len);
        if (LLVMIsDeclaration(fn) || LLVMGetLinkage(fn) != LLVMExternalLinkage ||
            !is_precompiled(m, name))
            continue;
        char keep[128];
        snprintf(keep, sizeof keep, "%s", name);
        LLVMSetValueName2(fn, "", 0);
        LLVMValueRef decl = LLVMAddFunction(mod, keep, LLVMGlobalGetValueType(fn));
        LLVMReplaceAllUsesWith(fn, decl);
        LLVMDeleteFunction(fn);
    }
}

static bool is_specialised(const char *name) {
    (void)name; /* when the table is empty */
#define SPECIALISED(n) if (!strcmp(name, #n)) return true;
#define PRECOMPILED(n)
#include "backends/cpu/libjit/specialised.def"
    return false;
}

static bool is_local(LLVMValueRef gv) {
    LLVMLinkage l = LLVMGetLinkage(gv);
    return l == LLVMInternalLinkage || l == LLVMPrivateLinkage;
}

/* The interface of the engine to a model's module: the precompiled
 * functions as declarations (code generation finds its kernels by name),
 * the global variables it sets (libjit_static_scratch), and nothing else --
 * every other function made internal and, with every internal function and
 * variable that nothing uses, dropped. Whatever is still defined is what
 * specialised.def inlines per model. Unused declarations stay: they are
 * the list of kernels. */
static void keep_interface(const CpuModule *m, LLVMModuleRef mod) {
    strip_precompiled(m, mod);
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
        size_t len;
        if (!LLVMIsDeclaration(fn) && !is_specialised(LLVMGetValueName2(fn, &len)))
            LLVMSetLinkage(fn, LLVMInternalLinkage);
    }
    for (bool changed = true; changed;) {
        changed = false;
        for (LLVMValueRef fn = LLVMGetFirstFunction(mod), next; fn; fn = next) {
            next = LLVMGetNextFunction(fn);
            if (!LLVMIsDeclaration(fn) && is_local(fn) && !LLVMGetFirstUse(fn)) {
                LLVMDeleteFunction(fn);
                changed = true;
            }
        }
        for (LLVMValueRef gv = LLVMGetFirstGlobal(mod), next; gv; gv = next) {
            next = LLVMGetNextGlobal(gv);
            if (is_local(gv) && !LLVMGetFirstUse(gv)) {
                LLVMDeleteGlobal(gv);
                changed = true;
            }
        }
    }
}

/* FNV-1a over 8-byte little-endian words (the tail a byte at a time): a
 * byte per step took 3 ms of every compile for the 13 MB libjit bitcode in
 * the engine's key, and as much again for the checksum of its 3 MB entry. */
static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, sizeof w);
        h ^= w;
        h *= 1099511628211ull;
    }
    for (; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

uint64_t cpu_engine_key(const CpuModule *m) {
    unsigned v[3];
    LLVMGetVersion(&v[0], &v[1], &v[2]);
    int format = ENGINE_FORMAT;
    uint64_t h = fnv(1469598103934665603ull, &format, sizeof format);
    h = fnv(h, v, sizeof v);
#define SPECIALISED(n) h = fnv(h, "s" #n, sizeof #n + 1);
#define PRECOMPILED(n) h = fnv(h, "p" #n, sizeof #n + 1);
#include "backends/cpu/libjit/specialised.def"
    h = fnv(h, m->target->libjit, *m->target->libjit_len);
    h = fnv(h, m->triple, strlen(m->triple) + 1);
    h = fnv(h, m->cpu, strlen(m->cpu) + 1);
    return fnv(h, m->features, strlen(m->features) + 1);
}

/* The unspecialised kernels keep loops whose unrolling their pragmas ask
 * for with constant trip counts; LLVM's warnings about them say nothing to
 * a user, so the engine's context drops every diagnostic but errors (which
 * fail the passes and are reported from there). */
static void quiet(LLVMDiagnosticInfoRef info, void *ctx) {
    (void)info;
    (void)ctx;
}

static bool parse(LLVMContextRef ctx, const void *data, size_t len, LLVMModuleRef *mod,
                  DiagList *d);
static bool build_exe_runtime(const CpuModule *m, StrBuf *out, DiagList *d);

/* mod through `passes` and code generation into out. */
static bool optimise_and_emit(const CpuModule *m, LLVMModuleRef mod, const char *passes,
                              const char *what, StrBuf *out, DiagList *d) {
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMPassBuilderOptionsSetLoopVectorization(po, true);
    LLVMPassBuilderOptionsSetSLPVectorization(po, true);
    LLVMPassBuilderOptionsSetLoopUnrolling(po, true);
    LLVMErrorRef err = LLVMRunPasses(mod, passes, m->tm, po);
    LLVMDisposePassBuilderOptions(po);
    if (err) {
        char *msg = LLVMGetErrorMessage(err);
        diag_error(d, NULL, "LLVM optimisation of %s failed: %s", what, msg);
        LLVMDisposeErrorMessage(msg);
        return false;
    }
    char *emsg = NULL;
    LLVMMemoryBufferRef obj;
    if (LLVMTargetMachineEmitToMemoryBuffer(m->tm, mod, LLVMObjectFile, &emsg, &obj)) {
        diag_error(d, NULL, "LLVM code generation of %s failed: %s", what, emsg ? emsg : "?");
        LLVMDisposeMessage(emsg);
        return false;
    }
    sb_append_n(out, LLVMGetBufferStart(obj), LLVMGetBufferSize(obj));
    LLVMDisposeMemoryBuffer(obj);
    return !out->oom;
}

/* The engine's object, compiled now: the libjit bitcode with everything but
 * the precompiled functions internal, through O3 and code generation. */
static bool build_engine(const CpuModule *m, StrBuf *out, DiagList *d) {
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMContextSetDiagnosticHandler(ctx, quiet, NULL);
    LLVMModuleRef mod = NULL;
    if (!parse(ctx, m->target->libjit, *m->target->libjit_len, &mod, d)) {
        LLVMContextDispose(ctx);
        return false;
    }
    cpu_prepare_module(m, mod, is_precompiled);
    bool ok = optimise_and_emit(m, mod, "globaldce,default<O3>", "the kernel engine", out, d);
    LLVMDisposeModule(mod);
    LLVMContextDispose(ctx);
    return ok;
}

static bool is_main(const CpuModule *m, const char *name) {
    (void)m;
    return !strcmp(name, "main");
}

static uint64_t get64(const unsigned char *p) {
    uint64_t x;
    memcpy(&x, p, sizeof x);
    return x;
}

/* The cached object for key at path into out; false (and a note when the
 * entry exists but is damaged) if there is none to use. */
static bool read_entry(const char *path, uint64_t key, StrBuf *out, DiagList *d) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    unsigned char h[HEADER];
    bool ok = fread(h, 1, HEADER, f) == HEADER && !memcmp(h, MAGIC, 8) && get64(h + 8) == key;
    uint64_t len = ok ? get64(h + 16) : 0;
    char *data = ok && len < ((uint64_t)1 << 32) ? malloc(len + 1) : NULL;
    ok = data && fread(data, 1, len, f) == len && fgetc(f) == EOF &&
         fnv(1469598103934665603ull, data, len) == get64(h + 24);
    fclose(f);
    if (ok)
        sb_append_n(out, data, len);
    else
        diag_note(d, NULL, "ignoring the damaged cache entry '%s'; rebuilding it", path);
    free(data);
    return ok && !out->oom;
}

/* mkdir -p; false if dir is not a directory afterwards. */
static bool make_dirs(const char *dir) {
    char p[4096];
    snprintf(p, sizeof p, "%s", dir);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = 0;
        mkdir(p, 0755);
        *s = '/';
    }
    struct stat st;
    return (!mkdir(p, 0755) || errno == EEXIST) && !stat(p, &st) && S_ISDIR(st.st_mode);
}

/* Best effort: a cache that cannot be written only costs the next run time. */
static void write_entry(const char *dir, const char *path, uint64_t key, const StrBuf *obj) {
    if (!make_dirs(dir))
        return;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return;
    unsigned char h[HEADER];
    uint64_t len = obj->len, sum = fnv(1469598103934665603ull, obj->data, obj->len);
    memcpy(h, MAGIC, 8);
    memcpy(h + 8, &key, 8);
    memcpy(h + 16, &len, 8);
    memcpy(h + 24, &sum, 8);
    bool ok = fwrite(h, 1, HEADER, f) == HEADER && fwrite(obj->data, 1, obj->len, f) == obj->len;
    ok = !fclose(f) && ok;
    if (!ok || rename(tmp, path))
        remove(tmp);
}

/* The cache entry PREFIX-KEY.o (key: the engine's, and which of its
 * entries) into out, made by build(m, out, d) and stored when there is none
 * to use. */
static bool cached(const CpuModule *m, const char *prefix,
                   bool (*build)(const CpuModule *, StrBuf *, DiagList *), StrBuf *out,
                   DiagList *d) {
    uint64_t key = fnv(m->engine_key, prefix, strlen(prefix));
    if (build == build_exe_runtime) /* its own bitcode too */
        key = fnv(key, m->target->exe_runtime, *m->target->exe_runtime_len);
    const char *dir = m->opt.cache_dir;
    char path[4200] = "";
    if (dir && *dir) {
        snprintf(path, sizeof path, "%s/%s-%016llx.o", dir, prefix, (unsigned long long)key);
        if (read_entry(path, key, out, d))
            return true;
        sb_clear(out);
    }
    if (!build(m, out, d))
        return false;
    if (path[0])
        write_entry(dir, path, key, out);
    return true;
}

bool cpu_cache_read(const CpuModule *m, const char *name, uint64_t key, StrBuf *out,
                    DiagList *d) {
    const char *dir = m->opt.cache_dir;
    if (!dir || !*dir)
        return false;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s-%016llx", dir, name, (unsigned long long)key);
    return read_entry(path, key, out, d);
}

void cpu_cache_write(const CpuModule *m, const char *name, uint64_t key, const StrBuf *data) {
    const char *dir = m->opt.cache_dir;
    if (!dir || !*dir)
        return;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s-%016llx", dir, name, (unsigned long long)key);
    write_entry(dir, path, key, data);
}

uint64_t cpu_hash(uint64_t h, const void *p, size_t n) {
    return fnv(h ? h : 1469598103934665603ull, p, n);
}

/* The executable's runtime (main() and the .npy code it reads and writes
 * files by: backends/cpu/exe) as an object, through O2 once per target
 * rather than through O3 with every executable (0.3 s of optimisation and
 * 0.3 s of code generation each time). It calls the model's glowc_main and
 * reads its glowc_model_info, which the model's object defines. */
static bool build_exe_runtime(const CpuModule *m, StrBuf *out, DiagList *d) {
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMContextSetDiagnosticHandler(ctx, quiet, NULL);
    LLVMModuleRef mod = NULL;
    if (!parse(ctx, m->target->exe_runtime, *m->target->exe_runtime_len, &mod, d)) {
        LLVMContextDispose(ctx);
        return false;
    }
    cpu_prepare_module(m, mod, is_main);
    bool ok = optimise_and_emit(m, mod, "default<O2>", "the executable's runtime", out, d);
    LLVMDisposeModule(mod);
    LLVMContextDispose(ctx);
    return ok;
}

bool cpu_exe_runtime_object(CpuModule *m, StrBuf *out, DiagList *d) {
    double t0 = cpu_seconds();
    bool ok = cached(m, "exe-runtime", build_exe_runtime, out, d);
    m->phase[BACKEND_PHASE_ENGINE] += cpu_seconds() - t0;
    return ok;
}

bool cpu_engine_object(CpuModule *m, StrBuf *out, DiagList *d) {
    double t0 = cpu_seconds();
    bool ok = cached(m, "engine", build_engine, out, d);
    m->phase[BACKEND_PHASE_ENGINE] += cpu_seconds() - t0;
    return ok;
}

static bool parse(LLVMContextRef ctx, const void *data, size_t len, LLVMModuleRef *mod,
                  DiagList *d) {
    LLVMMemoryBufferRef buf =
        LLVMCreateMemoryBufferWithMemoryRange(data, len, "libjit.bc", false);
    bool ok = !LLVMParseBitcodeInContext2(ctx, buf, mod);
    LLVMDisposeMemoryBuffer(buf);
    if (!ok)
        diag_error(d, NULL, "cannot read the embedded libjit bitcode");
    return ok;
}

/* The interface's bitcode: the 13 MB of libjit parsed and cut down to a
 * few hundred kilobytes, once per engine. */
static bool build_interface(const CpuModule *m, StrBuf *out, DiagList *d) {
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef mod;
    bool ok = parse(ctx, m->target->libjit, *m->target->libjit_len, &mod, d);
    if (ok) {
        keep_interface(m, mod);
        LLVMMemoryBufferRef bc = LLVMWriteBitcodeToMemoryBuffer(mod);
        sb_append_n(out, LLVMGetBufferStart(bc), LLVMGetBufferSize(bc));
        LLVMDisposeMemoryBuffer(bc);
        LLVMDisposeModule(mod);
        ok = !out->oom;
    }
    LLVMContextDispose(ctx);
    return ok;
}

bool cpu_libjit_module(CpuModule *m, LLVMModuleRef *mod, DiagList *d) {
    double t0 = cpu_seconds();
    bool ok;
    if (!cpu_uses_engine(&m->opt))
        ok = parse(m->ctx, m->target->libjit, *m->target->libjit_len, mod, d);
    else if (m->opt.cache_dir && *m->opt.cache_dir) {
        StrBuf bc;
        sb_init(&bc);
        ok = cached(m, "interface", build_interface, &bc, d) &&
             parse(m->ctx, bc.data, bc.len, mod, d);
        sb_free(&bc);
    } else {
        ok = parse(m->ctx, m->target->libjit, *m->target->libjit_len, mod, d);
        if (ok)
            keep_interface(m, *mod);
    }
    m->phase[BACKEND_PHASE_BITCODE] += cpu_seconds() - t0;
    return ok;
}

/* ---- the model cache ------------------------------------------------------------ */

/* This glowc's build: its executable's size, modification time and inode,
 * so that an entry another build wrote (whose passes or code generation may
 * differ for the same module) is never read. */
static uint64_t build_stamp(uint64_t h) {
    struct stat st;
    if (stat("/proc/self/exe", &st))
        return 0; /* unknown: no model caching (cpu_model_cached) */
    h = fnv(h, &st.st_size, sizeof st.st_size);
    h = fnv(h, &st.st_mtim, sizeof st.st_mtim);
    return fnv(h, &st.st_ino, sizeof st.st_ino);
}

/* Which JIT modules are cached: those glowc runs itself, with a cache. */
static bool model_cacheable(const CpuModule *m) {
    return m->opt.output == OUTPUT_JIT && m->host && m->opt.cache_dir && *m->opt.cache_dir &&
           m->mod;
}

static void model_path(const CpuModule *m, char *path, size_t len) {
    snprintf(path, len, "%s/model-%016llx.o", m->opt.cache_dir, (unsigned long long)m->model_key);
}

/* The key: the unoptimised module itself (the model's program, its memory
 * plan, every option that changes code, as bitcode), the engine's key (LLVM,
 * libjit, target, CPU, features) and this build. Weights are not in the
 * module (they are passed at run time), so two models that differ only in
 * their weights share an entry, as they share the machine code. */
static uint64_t model_key(const CpuModule *m) {
    uint64_t stamp = build_stamp(m->engine_key);
    if (!stamp)
        return 0;
    LLVMMemoryBufferRef bc = LLVMWriteBitcodeToMemoryBuffer(m->mod);
    uint64_t h = fnv(stamp, LLVMGetBufferStart(bc), LLVMGetBufferSize(bc));
    LLVMDisposeMemoryBuffer(bc);
    return h ? h : 1;
}

/* The model entries a cache keeps: the conformance suite alone compiles a
 * thousand small models, so the oldest (by modification time, which a hit
 * does not change) are removed past MAX_MODELS. Removing an entry another
 * process is reading costs it nothing (it has the file open) or a rebuild. */
enum { MAX_MODELS = 256 };

typedef struct Aged {
    struct timespec t;
    char name[64];
} Aged;

static int older(const void *a, const void *b) {
    const Aged *x = a, *y = b;
    if (x->t.tv_sec != y->t.tv_sec)
        return x->t.tv_sec < y->t.tv_sec ? -1 : 1;
    if (x->t.tv_nsec != y->t.tv_nsec)
        return x->t.tv_nsec < y->t.tv_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void evict_models(const char *dir) {
    DIR *dh = opendir(dir);
    if (!dh)
        return;
    Aged *v = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *de; (de = readdir(dh));) {
        if (strncmp(de->d_name, "model-", 6) || strlen(de->d_name) >= sizeof v->name)
            continue;
        char path[4200];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (stat(path, &st))
            continue;
        if (n == cap) {
            Aged *grown = realloc(v, (cap = cap ? 2 * cap : 512) * sizeof *v);
            if (!grown)
                break;
            v = grown;
        }
        v[n].t = st.st_mtim;
        snprintf(v[n].name, sizeof v[n].name, "%s", de->d_name);
        n++;
    }
    closedir(dh);
    if (n > MAX_MODELS) {
        qsort(v, n, sizeof *v, older);
        for (size_t i = 0; i < n - MAX_MODELS; i++) {
            char path[4200];
            snprintf(path, sizeof path, "%s/%s", dir, v[i].name);
            remove(path);
        }
    }
    free(v);
}

/* An entry: [bitcode length (8)] [the optimised module's bitcode] [its object]. */
bool cpu_model_cached(CpuModule *m, DiagList *d) {
    if (!model_cacheable(m))
        return false;
    double t0 = cpu_seconds();
    m->model_key = model_key(m);
    char path[4200];
    model_path(m, path, sizeof path);
    StrBuf e;
    sb_init(&e);
    bool hit = m->model_key && read_entry(path, m->model_key, &e, d);
    uint64_t bclen = hit && e.len >= 8 ? get64((const unsigned char *)e.data) : 0;
    LLVMModuleRef opt = NULL;
    hit = hit && bclen && bclen < e.len - 8;
    if (hit) {
        LLVMMemoryBufferRef buf =
            LLVMCreateMemoryBufferWithMemoryRange(e.data + 8, bclen, "model.bc", false);
        hit = !LLVMParseBitcodeInContext2(m->ctx, buf, &opt);
        LLVMDisposeMemoryBuffer(buf);
    }
    if (hit) {
        LLVMDisposeModule(m->mod);
        m->mod = opt;
        sb_clear(&m->object);
        sb_append_n(&m->object, e.data + 8 + bclen, e.len - 8 - bclen);
        hit = !m->object.oom;
    }
    sb_free(&e);
    m->phase[BACKEND_PHASE_ENGINE] += cpu_seconds() - t0;
    return hit;
}

bool cpu_model_store(CpuModule *m, DiagList *d) {
    if (!model_cacheable(m) || !m->model_key)
        return true;
    sb_clear(&m->object);
    if (!cpu_emit(m, false, &m->object, d))
        return false;
    LLVMMemoryBufferRef bc = LLVMWriteBitcodeToMemoryBuffer(m->mod);
    uint64_t bclen = LLVMGetBufferSize(bc);
    StrBuf e;
    sb_init(&e);
    sb_append_n(&e, (const char *)&bclen, sizeof bclen);
    sb_append_n(&e, LLVMGetBufferStart(bc), bclen);
    sb_append_n(&e, m->object.data, m->object.len);
    LLVMDisposeMemoryBuffer(bc);
    char path[4200];
    model_path(m, path, sizeof path);
    if (!e.oom)
        write_entry(m->opt.cache_dir, path, m->model_key, &e);
    sb_free(&e);
    evict_models(m->opt.cache_dir);
    return true;
}
