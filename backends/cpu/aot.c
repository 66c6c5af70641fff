/* Ahead-of-time output of the CPU backend.
 *
 * An executable is the model's module with a constant description of the
 * inputs and outputs, main() (backends/cpu/exe, precompiled once per target
 * and cached, engine.c), the kernel engine and the weights as a constant
 * global: object files that clang-19 links against libc, libm and pthreads. The weights stay in the
 * file's read-only data, mapped rather than copied at run time.
 *
 * A bundle is for linking into someone else's program: NAME.o exports NAME
 * (the entry point) and NAME_runtime_new/_free (threads); NAME.h says how
 * much memory to give it and where each input and output lives; NAME.weights
 * is the constant memory, to be loaded by the caller. */
#include "backends/cpu/cpu_internal.h"
#include "core/file.h"

#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <glob.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Transforms/PassBuilder.h>

extern char **environ;

/* ---- the executable's parts --------------------------------------------------- */

static LLVMValueRef const_string(CpuModule *m, const char *s) {
    LLVMValueRef init = LLVMConstStringInContext2(m->ctx, s, strlen(s), false);
    LLVMValueRef gv = LLVMAddGlobal(m->mod, LLVMTypeOf(init), "glowc_str");
    LLVMSetInitializer(gv, init);
    LLVMSetGlobalConstant(gv, true);
    LLVMSetLinkage(gv, LLVMPrivateLinkage);
    return gv;
}

static LLVMValueRef io_entry(CpuModule *m, LLVMTypeRef io_ty, const LirBuf *w) {
    LLVMTypeRef i32 = LLVMInt32TypeInContext(m->ctx), i64 = LLVMInt64TypeInContext(m->ctx);
    LLVMValueRef dims[8];
    for (int i = 0; i < 8; i++)
        dims[i] = LLVMConstInt(i64, i < w->type.rank ? (unsigned long long)w->type.dims[i] : 1, 0);
    LLVMValueRef fields[6] = {
        const_string(m, w->name),
        LLVMConstInt(i32, (unsigned)w->type.elem, false),
        LLVMConstInt(i32, (unsigned)w->type.rank, false),
        LLVMConstArray2(i64, dims, 8),
        LLVMConstInt(i64, (unsigned long long)w->address, false),
        LLVMConstInt(i64, (unsigned long long)(w->has_shape_slot ? w->shape_slot : -1), true),
    };
    return LLVMConstNamedStruct(io_ty, fields, 6);
}

static LLVMValueRef io_table(CpuModule *m, LLVMTypeRef io_ty, LirBufKind kind, int *count) {
    LLVMValueRef entries[256];
    int n = 0;
    for (int b = 0; b < m->p->nbufs && n < 256; b++) {
        const LirBuf *w = m->p->bufs[b];
        if (w->kind == kind && !w->dead)
            entries[n++] = io_entry(m, io_ty, w);
    }
    *count = n;
    LLVMValueRef init = LLVMConstArray2(io_ty, entries, (uint64_t)n);
    LLVMValueRef gv = LLVMAddGlobal(m->mod, LLVMTypeOf(init), "glowc_io");
    LLVMSetInitializer(gv, init);
    LLVMSetGlobalConstant(gv, true);
    LLVMSetLinkage(gv, LLVMPrivateLinkage);
    return gv;
}

/* The module only declares the weights: they become an object of their own
 * when the executable is written (weights_elf), so that LLVM's optimiser,
 * the IR text the session keeps per step and the code generator never carry
 * a large model's hundred megabytes (printing them took half a minute). */
static LLVMValueRef weights_global(CpuModule *m) {
    size_t bytes = (size_t)(m->p->const_bytes > 0 ? m->p->const_bytes : 1);
    LLVMTypeRef ty = LLVMArrayType2(LLVMInt8TypeInContext(m->ctx), bytes);
    LLVMValueRef gv = LLVMAddGlobal(m->mod, ty, "glowc_weights");
    LLVMSetGlobalConstant(gv, true);
    LLVMSetVisibility(gv, LLVMHiddenVisibility);
    LLVMSetAlignment(gv, 64);
    return gv;
}

/* The executable's runtime is an object of its own (engine.c), which calls
 * glowc_main and reads glowc_model_info: here they are defined with the
 * types of backends/cpu/exe/model_info.h, field by field. */
static LLVMTypeRef io_type(CpuModule *m) {
    LLVMTypeRef ptr = LLVMPointerTypeInContext(m->ctx, 0), i32 = LLVMInt32TypeInContext(m->ctx),
                i64 = LLVMInt64TypeInContext(m->ctx);
    LLVMTypeRef t = LLVMStructCreateNamed(m->ctx, "struct.GlowcIo");
    LLVMTypeRef fields[6] = {ptr, i32, i32, LLVMArrayType2(i64, 8), i64, i64};
    LLVMStructSetBody(t, fields, 6, false);
    return t;
}

static LLVMValueRef model_info_global(CpuModule *m) {
    LLVMTypeRef ptr = LLVMPointerTypeInContext(m->ctx, 0), i32 = LLVMInt32TypeInContext(m->ctx),
                i64 = LLVMInt64TypeInContext(m->ctx);
    LLVMTypeRef t = LLVMStructCreateNamed(m->ctx, "struct.GlowcModelInfo");
    LLVMTypeRef fields[9] = {ptr, i32, i32, ptr, ptr, i64, i64, i64, ptr};
    LLVMStructSetBody(t, fields, 9, false);
    return LLVMAddGlobal(m->mod, t, "glowc_model_info");
}

/* glowc_model_info = {name, #in, #out, inputs, outputs, sizes..., weights}
 * with main.c's declared type, field by field. */
static bool add_model_info(CpuModule *m, DiagList *d) {
    if (!cpu_weights_present(m->p, d)) /* found now, where the session names the file */
        return false;
    LLVMValueRef info = model_info_global(m);
    LLVMTypeRef io_ty = io_type(m);
    LLVMValueRef weights = weights_global(m);
    LLVMTypeRef i32 = LLVMInt32TypeInContext(m->ctx), i64 = LLVMInt64TypeInContext(m->ctx);
    int nin, nout;
    LLVMValueRef ins = io_table(m, io_ty, LB_IN, &nin), outs = io_table(m, io_ty, LB_OUT, &nout);
    const char *base = strrchr(m->p->source, '/');
    LLVMValueRef fields[9] = {
        const_string(m, base ? base + 1 : m->p->source),
        LLVMConstInt(i32, (unsigned)nin, false),
        LLVMConstInt(i32, (unsigned)nout, false),
        ins,
        outs,
        LLVMConstInt(i64, (unsigned long long)m->p->const_bytes, false),
        LLVMConstInt(i64, (unsigned long long)m->p->mutable_bytes, false),
        LLVMConstInt(i64, (unsigned long long)m->p->arena_bytes, false),
        weights,
    };
    LLVMSetInitializer(info, LLVMConstNamedStruct(LLVMGlobalGetValueType(info), fields, 9));
    LLVMSetGlobalConstant(info, true);
    return true;
}

/* NAME_runtime_new(threads) and NAME_runtime_free(rt), exported. */
static void add_bundle_wrappers(CpuModule *m) {
    LLVMTypeRef ptr = LLVMPointerTypeInContext(m->ctx, 0), i32 = LLVMInt32TypeInContext(m->ctx);
    const char *targets[2] = {"libjit_runtime_new", "libjit_runtime_free"};
    const char *suffix[2] = {"_runtime_new", "_runtime_free"};
    for (int k = 0; k < 2; k++) {
        LLVMValueRef callee = LLVMGetNamedFunction(m->mod, targets[k]);
        if (!callee)
            continue;
        LLVMTypeRef fty = k == 0 ? LLVMFunctionType(ptr, &i32, 1, false)
                                 : LLVMFunctionType(LLVMVoidTypeInContext(m->ctx), &ptr, 1, false);
        char name[200];
        snprintf(name, sizeof name, "%s%s", m->entry, suffix[k]);
        LLVMValueRef fn = LLVMAddFunction(m->mod, name, fty);
        LLVMBuilderRef b = LLVMCreateBuilderInContext(m->ctx);
        LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(m->ctx, fn, "entry"));
        LLVMValueRef arg = LLVMGetParam(fn, 0);
        LLVMValueRef r = LLVMBuildCall2(b, LLVMGlobalGetValueType(callee), callee, &arg, 1, "");
        if (k == 0)
            LLVMBuildRet(b, r);
        else
            LLVMBuildRetVoid(b);
        LLVMDisposeBuilder(b);
    }
}

/* Executables hold strings: constants are globals of the module
 * (codegen), inputs are read from numpy's '<Un' files and the run's
 * strings live in the runtime until the outputs are written. A bundle
 * would need an ABI for who owns the characters of its inputs and outputs
 * and for how long, and a --no-threads one has no allocator for the run's
 * strings at all: refused, naming the buffer. */
static bool refuse_strings(const CpuModule *m, DiagList *d) {
    for (int b = 0; b < m->p->nbufs; b++) {
        const LirBuf *w = m->p->bufs[b];
        if (w->dead || w->type.elem != ELEM_STR)
            continue;
        diag_error(d, NULL, "buffer '%s' holds strings (str), which bundles do not support "
                            "(who owns a string's characters, and for how long, is no part "
                            "of their interface): compile an executable (-o) or run with the "
                            "JIT (glowc run)", w->name);
        return false;
    }
    return true;
}

bool cpu_add_output_parts(CpuModule *m, DiagList *d) {
    if (m->opt.output == OUTPUT_BUNDLE && !refuse_strings(m, d))
        return false;
    switch (m->opt.output) {
    case OUTPUT_JIT: return true;
    case OUTPUT_EXECUTABLE: return add_model_info(m, d);
    case OUTPUT_BUNDLE:
        if (!m->opt.no_threads)
            add_bundle_wrappers(m);
        return true;
    }
    return true;
}

/* ---- writing files -------------------------------------------------------------- */

/* Writes path; a failure names `shown` (the file the user asked for, when
 * path is a temporary next to it). */
static bool write_as(const char *path, const char *shown, const void *data, size_t len,
                     DiagList *d) {
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(data, 1, len, f) == len;
    if (f && fclose(f))
        ok = false;
    if (!ok)
        diag_error(d, NULL, "cannot write '%s': %s", shown, strerror(errno));
    return ok;
}

static bool run_tool(char **argv, const char *out, DiagList *d) {
    pid_t pid;
    int status;
    if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) || waitpid(pid, &status, 0) < 0 ||
        !WIFEXITED(status) || WEXITSTATUS(status)) {
        diag_error(d, NULL, "writing '%s': %s failed", out, argv[0]);
        return false;
    }
    return true;
}

/* The fallback kernel (fallback.c with the interpreter, a relocatable object
 * whose only global symbols are libjit_generic and libjit_dynamic, embedded
 * in glowc) goes only into a program whose own code calls it: operators run
 * with --fallback=interp, and the instructions over bounded-dynamic buffers
 * that codegen lists as having no libjit rule. No libjit kernel (so nothing
 * in the kernel engine) calls it. Written next to OUT; the caller removes it. */
static bool needs_fallback(const CpuModule *m) {
    return LLVMGetNamedFunction(m->mod, "libjit_generic") != NULL ||
           LLVMGetNamedFunction(m->mod, "libjit_dynamic") != NULL;
}

static bool write_fallback(const CpuModule *m, const char *out, char *path, size_t len,
                           DiagList *d) {
    snprintf(path, len, "%s.fallback%d.o", out, (int)getpid());
    return write_as(path, out, m->target->fallback, *m->target->fallback_len, d);
}

/* ---- linking for another target --------------------------------------------------- */

#define LLD_PATH "/usr/lib/llvm-19/bin/ld.lld"

/* clang-19's command line up to its inputs: for the host, as it is; for
 * another target, its triple and LLVM's linker (the host's GNU ld reads only
 * host objects), and executables are static, so that they need nothing of
 * the machine they run on (nor qemu a sysroot). `flag` holds --target=. */
static int link_command(const CpuModule *m, bool executable, char **argv, char *flag,
                        size_t len) {
    int n = 0;
    argv[n++] = "clang-19";
    if (m->host) {
        /* LLVM's linker where it is installed: it copies the weights'
         * section into the output through a mapping, where GNU ld reads and
         * writes it (resnet50's 134 MB link, README "Compile time"). */
        if (access(LLD_PATH, X_OK) == 0)
            argv[n++] = "-fuse-ld=lld";
        return n;
    }
    snprintf(flag, len, "--target=%s", m->target->triple);
    argv[n++] = flag;
    argv[n++] = "-fuse-ld=lld";
    if (executable)
        argv[n++] = "-static";
    return n;
}

/* What linking for another target needs, each file (a glob) with the Debian
 * package that brings it: so that a missing cross sysroot is named rather
 * than left to a linker's "cannot find crt1.o". */
static bool have_cross_tools(const CpuModule *m, bool executable, const char *out, DiagList *d) {
    const char *need[][2] = {
        {LLD_PATH, "lld-19"},
        {executable ? m->target->crt : NULL, m->target->crt_package},
        {executable ? m->target->libgcc : NULL, m->target->libgcc_package},
    };
    for (size_t i = 0; i < sizeof need / sizeof *need && !m->host; i++) {
        glob_t g;
        bool found = !need[i][0] || glob(need[i][0], 0, NULL, &g) == 0;
        if (need[i][0] && found)
            globfree(&g);
        if (!found) {
            diag_error(d, NULL,
                       "writing '%s': linking for %s needs %s, which is missing: install the "
                       "Debian package %s",
                       out, m->triple, need[i][0], need[i][1]);
            return false;
        }
    }
    return true;
}

/* ---- the linker's command line ------------------------------------------------------ */

/* clang-19 linking an executable is a process that loads all of clang (25 ms
 * of CPU, a tenth of a small model's compile -o) only to work out where the
 * C runtime's start files and libraries are, the same for every executable.
 * So glowc asks it once (-###: print the linker's command, run nothing),
 * with placeholders where the inputs and the output go, keeps that command
 * in the cache (link-KEY) and runs the linker itself. The key covers the
 * driver's arguments (target, static), the clang-19 and ld.lld files and
 * the environment the driver reads; a command naming a file that is gone
 * (another gcc's start files) is asked for again. Without a cache, the
 * driver links as before. */
#define LINK_INPUTS "GLOWC_LINK_INPUTS"
#define LINK_OUTPUT "GLOWC_LINK_OUTPUT"
enum { LINK_FORMAT = 1, MAX_LINK_ARGS = 128 };

typedef struct LinkLine {
    StrBuf text; /* the arguments, each ending in a NUL */
    char *argv[MAX_LINK_ARGS];
    int argc;
} LinkLine;

/* name's file as posix_spawnp finds it in PATH (name has no '/'). */
static bool in_path(const char *name, char *out, size_t len) {
    const char *path = getenv("PATH");
    for (const char *p = path ? path : ""; *p;) {
        size_t n = strcspn(p, ":");
        snprintf(out, len, "%.*s/%s", (int)n, p, name);
        if (n && access(out, X_OK) == 0)
            return true;
        p += n + (p[n] == ':');
    }
    return false;
}

static uint64_t hash_file(uint64_t h, const char *path) {
    struct stat st;
    if (stat(path, &st))
        return cpu_hash(h, path, strlen(path) + 1);
    h = cpu_hash(h, &st.st_size, sizeof st.st_size);
    h = cpu_hash(h, &st.st_mtim, sizeof st.st_mtim);
    return cpu_hash(h, &st.st_ino, sizeof st.st_ino);
}

static uint64_t link_key(char **driver, int n) {
    int format = LINK_FORMAT;
    uint64_t h = cpu_hash(0, &format, sizeof format);
    for (int i = 0; i < n; i++)
        h = cpu_hash(h, driver[i], strlen(driver[i]) + 1);
    char clang[4200];
    h = in_path(driver[0], clang, sizeof clang) ? hash_file(h, clang) : h;
    h = hash_file(h, LLD_PATH);
    static const char *const env[] = {"LIBRARY_PATH", "COMPILER_PATH", "GCC_EXEC_PREFIX"};
    for (size_t i = 0; i < sizeof env / sizeof *env; i++) {
        const char *v = getenv(env[i]);
        h = cpu_hash(h, v ? v : "", v ? strlen(v) + 1 : 1);
    }
    return h ? h : 1;
}

/* l->argv over l->text; whether it is a command glowc can run: an absolute
 * linker, each placeholder once, every absolute path still there. */
static bool link_line_index(LinkLine *l) {
    l->argc = 0;
    int inputs = 0, outputs = 0;
    for (size_t at = 0; at < l->text.len && l->argc < MAX_LINK_ARGS;) {
        char *a = l->text.data + at;
        size_t n = strnlen(a, l->text.len - at);
        if (at + n == l->text.len)
            return false; /* not NUL-terminated */
        l->argv[l->argc++] = a;
        inputs += !strcmp(a, LINK_INPUTS);
        outputs += !strcmp(a, LINK_OUTPUT);
        if (a[0] == '/' && access(a, l->argc == 1 ? X_OK : F_OK))
            return false;
        at += n + 1;
    }
    return l->argc >= 3 && l->argc < MAX_LINK_ARGS && l->argv[0][0] == '/' && inputs == 1 &&
           outputs == 1;
}

/* The linker's command from the driver's -### output (its last line: each
 * argument in double quotes, '\' escaping the next character) into l->text. */
static bool parse_driver_output(const char *out, LinkLine *l) {
    const char *line = NULL;
    for (const char *p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (p[0] == ' ' && p[1] == '"')
            line = p;
    if (!line)
        return false;
    sb_clear(&l->text);
    for (const char *p = line; *p && *p != '\n';) {
        if (*p == ' ') {
            p++;
            continue;
        }
        if (*p++ != '"')
            return false;
        for (; *p && *p != '"'; p++) {
            if (*p == '\\' && p[1])
                p++;
            sb_putc(&l->text, *p);
        }
        if (*p++ != '"')
            return false;
        sb_putc(&l->text, 0);
    }
    return !l->text.oom && link_line_index(l);
}

/* Runs `driver -### -Wl,INPUTS -o OUTPUT`, its stderr into out. */
static bool ask_driver(char **driver, int n, StrBuf *out) {
    char *argv[24], wl[] = "-Wl," LINK_INPUTS;
    int k = 0;
    for (int i = 0; i < n && k < 18; i++)
        argv[k++] = driver[i];
    char *rest[] = {"-###", wl, "-o", LINK_OUTPUT, NULL};
    for (size_t i = 0; i < sizeof rest / sizeof *rest; i++)
        argv[k++] = rest[i];
    int fds[2];
    if (pipe(fds))
        return false;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    pid_t pid;
    bool spawned = !posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    char buf[4096];
    for (ssize_t r; spawned && (r = read(fds[0], buf, sizeof buf)) != 0;) {
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            break;
        sb_append_n(out, buf, (size_t)r);
    }
    close(fds[0]);
    int status;
    return spawned && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
           !WEXITSTATUS(status) && !out->oom;
}

/* The cached linker command for the driver's arguments, asked for and
 * stored when there is none to use; false: link through the driver. */
static bool link_line(const CpuModule *m, char **driver, int n, LinkLine *l, DiagList *d) {
    sb_init(&l->text);
    uint64_t key = link_key(driver, n);
    if (cpu_cache_read(m, "link", key, &l->text, d) && link_line_index(l))
        return true;
    StrBuf out;
    sb_init(&out);
    bool ok = ask_driver(driver, n, &out) && parse_driver_output(sb_str(&out), l);
    sb_free(&out);
    if (ok)
        cpu_cache_write(m, "link", key, &l->text);
    return ok;
}

/* glowc_weights (weights_global) defined, as an ELF relocatable object for
 * m's target written here field by field: one read-only section holding
 * the weights, 64-byte aligned, and a hidden global symbol over it. LLVM
 * built a constant of the whole blob, copied and emitted it (0.2 s for
 * MobileNet's 14 MB, seconds for VGG's 550 MB); this is one write. Every
 * target of targets.def is 64-bit little-endian, as the hosts glowc runs on
 * are (the structures are written in the host's byte order). */
enum { W_NULL, W_DATA, W_SYMTAB, W_STRTAB, W_SHSTRTAB, W_STACK, W_NSECTIONS };

static bool weights_elf(const CpuModule *m, const char *out, const char *path, DiagList *d) {
    size_t bytes = (size_t)(m->p->const_bytes > 0 ? m->p->const_bytes : 1);
    static const char strtab[] = "\0glowc_weights";
    static const char shstrtab[] =
        "\0.rodata.glowc_weights\0.symtab\0.strtab\0.shstrtab\0.note.GNU-stack";
    enum { N_DATA = 1, N_SYMTAB = 23, N_STRTAB = 31, N_SHSTRTAB = 39, N_STACK = 49 };
    Elf64_Sym syms[2] = {{0}};
    syms[1].st_name = 1;
    syms[1].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT);
    syms[1].st_other = STV_HIDDEN;
    syms[1].st_shndx = W_DATA;
    syms[1].st_size = bytes;
    /* Layout: header, weights (at 64), symbols, names, section headers. */
    uint64_t at_data = (sizeof(Elf64_Ehdr) + 63) & ~63ull, at_sym = (at_data + bytes + 7) & ~7ull;
    uint64_t at_str = at_sym + sizeof syms, at_shstr = at_str + sizeof strtab;
    uint64_t at_sh = (at_shstr + sizeof shstrtab + 7) & ~7ull, size = at_sh + sizeof(Elf64_Shdr) * W_NSECTIONS;
    Elf64_Shdr sh[W_NSECTIONS] = {{0}};
    sh[W_DATA] = (Elf64_Shdr){.sh_name = N_DATA, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC,
                              .sh_offset = at_data, .sh_size = bytes, .sh_addralign = 64};
    sh[W_SYMTAB] = (Elf64_Shdr){.sh_name = N_SYMTAB, .sh_type = SHT_SYMTAB, .sh_offset = at_sym,
                                .sh_size = sizeof syms, .sh_link = W_STRTAB, .sh_info = 1,
                                .sh_addralign = 8, .sh_entsize = sizeof(Elf64_Sym)};
    sh[W_STRTAB] = (Elf64_Shdr){.sh_name = N_STRTAB, .sh_type = SHT_STRTAB, .sh_offset = at_str,
                                .sh_size = sizeof strtab, .sh_addralign = 1};
    sh[W_SHSTRTAB] = (Elf64_Shdr){.sh_name = N_SHSTRTAB, .sh_type = SHT_STRTAB,
                                  .sh_offset = at_shstr, .sh_size = sizeof shstrtab,
                                  .sh_addralign = 1};
    /* No executable stack wanted (the linker warns about objects without it). */
    sh[W_STACK] = (Elf64_Shdr){.sh_name = N_STACK, .sh_type = SHT_PROGBITS, .sh_offset = at_sh,
                               .sh_addralign = 1};
    Elf64_Ehdr eh = {.e_ident = {ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB,
                                 EV_CURRENT, ELFOSABI_NONE},
                     .e_type = ET_REL, .e_machine = (Elf64_Half)m->target->elf_machine,
                     .e_version = EV_CURRENT, .e_shoff = at_sh, .e_ehsize = sizeof eh,
                     .e_shentsize = sizeof(Elf64_Shdr), .e_shnum = W_NSECTIONS,
                     .e_shstrndx = W_SHSTRTAB};
    /* The file is sized first and the weights built in its mapping: no
     * buffer of their size, no copy of it into the file (the file's zeros
     * are the blob's and the gaps' zeros, as calloc's were). */
    /* The blocks are reserved before the mapping is written (a full disk
     * would otherwise show as SIGBUS on the first page it cannot back). */
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644), err = fd < 0 ? errno : 0;
    unsigned char *f = MAP_FAILED;
    if (fd >= 0 && !(err = posix_fallocate(fd, 0, (off_t)size))) {
        f = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        err = f == MAP_FAILED ? errno : 0;
    }
    if (f == MAP_FAILED) {
        diag_error(d, NULL, "cannot write '%s': %s", out, strerror(err));
        if (fd >= 0)
            close(fd);
        return false;
    }
    memcpy(f, &eh, sizeof eh);
    memcpy(f + at_sym, syms, sizeof syms);
    memcpy(f + at_str, strtab, sizeof strtab);
    memcpy(f + at_shstr, shstrtab, sizeof shstrtab);
    memcpy(f + at_sh, sh, sizeof sh);
    bool ok = cpu_weights_blob(m->p, f + at_data, d);
    int unmapped = munmap(f, size), closed = close(fd);
    if (unmapped || closed) {
        diag_error(d, NULL, "cannot write '%s': %s", out, strerror(errno));
        ok = false;
    }
    return ok;
}

/* The precompiled kernels (engine.c) as a file to link, when the module
 * calls them; path[0] stays 0 otherwise. */
static bool write_engine(CpuModule *m, const char *out, char *path, size_t len,
                         DiagList *d) {
    if (!cpu_uses_engine(&m->opt))
        return true;
    StrBuf obj;
    sb_init(&obj);
    snprintf(path, len, "%s.engine.tmp%d", out, (int)getpid());
    bool ok = cpu_engine_object(m, &obj, d) && write_as(path, out, obj.data, obj.len, d);
    sb_free(&obj);
    return ok;
}

/* The executable's runtime (engine.c) as a file to link. */
static bool write_exe_runtime(CpuModule *m, const char *out, char *path, size_t len,
                              DiagList *d) {
    StrBuf obj;
    sb_init(&obj);
    snprintf(path, len, "%s.runtime.tmp%d", out, (int)getpid());
    bool ok = cpu_exe_runtime_object(m, &obj, d) && write_as(path, out, obj.data, obj.len, d);
    sb_free(&obj);
    return ok;
}

/* The weights' object, its time counted as emission. */
static bool weights_timed(CpuModule *m, const char *out, const char *path, DiagList *d) {
    double t0 = cpu_seconds();
    bool ok = weights_elf(m, out, path, d);
    m->phase[BACKEND_PHASE_EMIT] += cpu_seconds() - t0;
    return ok;
}

bool cpu_write_executable(CpuModule *m, const char *path, DiagList *d) {
    StrBuf obj;
    sb_init(&obj);
    char objpath[4200], wpath[4200], tmp[4200], fb[4200] = "", eng[4200] = "", rtp[4200] = "";
    snprintf(objpath, sizeof objpath, "%s.o.tmp%d", path, (int)getpid());
    snprintf(wpath, sizeof wpath, "%s.weights.tmp%d", path, (int)getpid());
    snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
    bool ok = have_cross_tools(m, true, path, d) && cpu_emit(m, false, &obj, d) &&
              write_as(objpath, path, obj.data, obj.len, d) &&
              weights_timed(m, path, wpath, d) &&
              write_engine(m, path, eng, sizeof eng, d) &&
              write_exe_runtime(m, path, rtp, sizeof rtp, d) &&
              (!needs_fallback(m) || write_fallback(m, path, fb, sizeof fb, d));
    if (ok) {
        double t0 = cpu_seconds();
        char *driver[16] = {NULL}, flag[200];
        int n = link_command(m, true, driver, flag, sizeof flag);
        /* The engine before the libraries it calls (static links). */
        const char *inputs[] = {objpath, rtp, wpath, eng[0] ? eng : NULL, "-lm", "-lpthread",
                                fb[0] ? fb : NULL};
        LinkLine l;
        char *argv[MAX_LINK_ARGS + 16] = {NULL};
        int k = 0;
        if (m->opt.cache_dir && *m->opt.cache_dir && link_line(m, driver, n, &l, d)) {
            for (int i = 0; i < l.argc; i++) {
                if (!strcmp(l.argv[i], LINK_OUTPUT))
                    argv[k++] = tmp;
                else if (strcmp(l.argv[i], LINK_INPUTS))
                    argv[k++] = l.argv[i];
                else
                    for (size_t j = 0; j < sizeof inputs / sizeof *inputs; j++)
                        if (inputs[j])
                            argv[k++] = (char *)inputs[j];
            }
            /* No build ID: hashing the output was 14 ms of ResNet-18's link,
             * for a note nothing reads (the executable has no separate
             * debug information to match). */
            argv[k++] = "--build-id=none";
        } else {
            for (k = 0; k < n; k++)
                argv[k] = driver[k];
            argv[k++] = "-o";
            argv[k++] = tmp;
            for (size_t j = 0; j < sizeof inputs / sizeof *inputs; j++)
                if (inputs[j])
                    argv[k++] = (char *)inputs[j];
        }
        ok = run_tool(argv, path, d);
        sb_free(&l.text);
        m->phase[BACKEND_PHASE_LINK] += cpu_seconds() - t0;
    }
    sb_free(&obj);
    remove(objpath);
    remove(wpath);
    if (fb[0])
        remove(fb);
    if (eng[0])
        remove(eng);
    if (rtp[0])
        remove(rtp);
    if (ok && rename(tmp, path)) {
        diag_error(d, NULL, "cannot write '%s': %s", path, strerror(errno));
        ok = false;
    }
    if (!ok)
        remove(tmp);
    return ok;
}

/* The bundle's object in *out (malloc'd): the model's code, with the
 * fallback kernel linked in (ld -r, through temporaries beside `path`) and
 * made local, so that two bundles link into one program. */
static bool bundle_object(CpuModule *m, const char *path, char **out, size_t *len,
                          DiagList *d) {
    StrBuf obj;
    sb_init(&obj);
    *out = NULL;
    bool ok = have_cross_tools(m, false, path, d) && cpu_emit(m, false, &obj, d);
    if (ok && !needs_fallback(m)) {
        *len = obj.len;
        *out = sb_take(&obj);
        return true;
    }
    char tmp[4200], fb[4200] = "", joined[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
    snprintf(joined, sizeof joined, "%s.joined%d", path, (int)getpid());
    ok = ok && write_as(tmp, path, obj.data, obj.len, d);
    if (ok) {
        char *ld[16] = {NULL}, flag[200];
        int n = link_command(m, false, ld, flag, sizeof flag);
        const char *rest[] = {"-r", tmp, fb, "-o", joined};
        for (size_t i = 0; i < sizeof rest / sizeof *rest; i++)
            ld[n++] = (char *)rest[i];
        char *loc[] = {"llvm-objcopy-19", "--localize-symbol=libjit_generic", joined, NULL};
        double t0 = cpu_seconds();
        ok = write_fallback(m, path, fb, sizeof fb, d) && run_tool(ld, path, d) &&
             run_tool(loc, path, d) && (*out = file_read_all(joined, len, d)) != NULL;
        m->phase[BACKEND_PHASE_LINK] += cpu_seconds() - t0;
    }
    sb_free(&obj);
    remove(tmp);
    remove(joined);
    if (fb[0])
        remove(fb);
    return ok;
}

/* ---- bundles -------------------------------------------------------------------- */

/* A no-threads bundle's kernel scratch: slot k's bytes (CPU_SCRATCH_FN k,
 * folded to a constant by O3), placed after the plan's arena. */
typedef struct BundleMemory {
    int64_t arena;   /* the plan's activations, rounded up to BUNDLE_ALIGN */
    int64_t scratch; /* the kernels' slots after it, each rounded up */
} BundleMemory;

enum { BUNDLE_ALIGN = 64 };

static int64_t round_up(int64_t x) {
    return (x + BUNDLE_ALIGN - 1) / BUNDLE_ALIGN * BUNDLE_ALIGN;
}

static bool folded_size(LLVMValueRef fn, int64_t *bytes) {
    if (!fn || LLVMCountBasicBlocks(fn) != 1)
        return false;
    LLVMValueRef ret = LLVMGetBasicBlockTerminator(LLVMGetEntryBasicBlock(fn));
    LLVMValueRef v = ret && LLVMIsAReturnInst(ret) ? LLVMGetOperand(ret, 0) : NULL;
    if (!v || !LLVMIsAConstantInt(v))
        return false;
    *bytes = LLVMConstIntGetSExtValue(v);
    return *bytes >= 0;
}

/* Reads the scratch sizes, then drops their functions from the object. */
static bool static_scratch(CpuModule *m, BundleMemory *mem, DiagList *d) {
    mem->arena = round_up(m->p->arena_bytes);
    mem->scratch = 0;
    for (int k = 0;; k++) {
        char name[40];
        snprintf(name, sizeof name, CPU_SCRATCH_FN "%d", k);
        LLVMValueRef fn = LLVMGetNamedFunction(m->mod, name);
        if (!fn)
            break;
        int64_t bytes;
        if (!folded_size(fn, &bytes)) {
            diag_error(d, NULL, "--no-threads: the kernels' scratch size did not fold to a "
                                "constant (a build problem)");
            return false;
        }
        mem->scratch += round_up(bytes);
        LLVMSetLinkage(fn, LLVMInternalLinkage);
    }
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMErrorRef err = LLVMRunPasses(m->mod, "globaldce", m->tm, po);
    LLVMDisposePassBuilderOptions(po);
    if (err) {
        char *msg = LLVMGetErrorMessage(err);
        diag_error(d, NULL, "LLVM optimisation failed: %s", msg);
        LLVMDisposeErrorMessage(msg);
        return false;
    }
    return true;
}

static bool calls(LLVMValueRef fn, LLVMValueRef callee) {
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
        for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i))
            if (LLVMIsACallInst(i) && LLVMGetCalledValue(i) == callee)
                return true;
    return false;
}

/* The interpreter's kernel allocates (its arena), so a no-threads bundle
 * cannot carry it: every instruction whose code calls it is named. No
 * libjit kernel calls it, and --fallback=interp is refused before, so
 * this guards against a code generation that would. */
static bool check_no_fallback(CpuModule *m, DiagList *d) {
    LLVMValueRef generic = LLVMGetNamedFunction(m->mod, "libjit_generic");
    if (!generic || !LLVMGetFirstUse(generic))
        return true;
    StrBuf sb;
    sb_init(&sb);
    int index = 0;
    for (LirInstr *i = m->p->first; i; i = i->next, index++) {
        const char *w = index < m->ninstrs ? m->instr_worker[index] : NULL;
        LLVMValueRef fn = w ? LLVMGetNamedFunction(m->mod, w) : NULL;
        if (fn && calls(fn, generic))
            sb_printf(&sb, "%snode '%s' (%s, instruction %d)", sb.len ? ", " : "",
                      i->name ? i->name : "?", instr_kind_name(i->kind), index);
    }
    diag_error(d, NULL,
               "--no-threads: %s may run the interpreter's kernel, which allocates memory; "
               "compile without --no-threads",
               sb.len ? sb_str(&sb) : "an instruction");
    sb_free(&sb);
    return false;
}

/* What a no-threads bundle must not call: the thread pool's and the
 * allocators' functions. O3 drops them with the paths that used them; one
 * left is a bug of ours, caught here rather than by the user's linker. */
static bool check_no_threads(CpuModule *m, DiagList *d) {
    static const char *const banned[] = {"pthread_", "malloc", "calloc", "realloc", "free",
                                         "aligned_alloc", "posix_memalign", "mmap", "munmap",
                                         "sysconf", "sched_yield"};
    for (LLVMValueRef fn = LLVMGetFirstFunction(m->mod); fn; fn = LLVMGetNextFunction(fn)) {
        size_t len;
        const char *name = LLVMGetValueName2(fn, &len);
        if (!LLVMIsDeclaration(fn) || !LLVMGetFirstUse(fn))
            continue;
        for (size_t k = 0; k < sizeof banned / sizeof *banned; k++) {
            size_t n = strlen(banned[k]);
            bool prefix = banned[k][n - 1] == '_';
            if (prefix ? !strncmp(name, banned[k], n) : !strcmp(name, banned[k])) {
                diag_error(d, NULL, "--no-threads: the code still calls %s (a build problem)",
                           name);
                return false;
            }
        }
    }
    return true;
}

static void macro_name(const char *s, char *out, size_t len) {
    size_t k = 0;
    for (; *s && k + 1 < len; s++)
        out[k++] = isalnum((unsigned char)*s) ? (char)toupper((unsigned char)*s) : '_';
    out[k] = 0;
}

static const char *elem_ctype(ElemKind e) {
    switch (e) {
#define ELEM(E, nm, ctype, size, onnx, cls)                                                        \
    case ELEM_##E: return #ctype;
#include "core/elems.def"
    default: return "uint8_t";
    }
}

static int elem_onnx(ElemKind e) {
    switch (e) {
#define ELEM(E, nm, ctype, size, onnx, cls)                                                        \
    case ELEM_##E: return onnx;
#include "core/elems.def"
    default: return 0;
    }
}

static bool is_io(const LirBuf *w) {
    return !w->dead && (w->kind == LB_IN || w->kind == LB_OUT);
}

/* Two inputs or outputs whose names make the same macro ("a.b", "a_b")
 * would define it twice: refused, naming both. */
static bool check_macro_names(const CpuModule *m, DiagList *d) {
    for (int a = 0; a < m->p->nbufs; a++) {
        if (!is_io(m->p->bufs[a]))
            continue;
        char x[128], y[128];
        macro_name(m->p->bufs[a]->name, x, sizeof x);
        for (int b = a + 1; b < m->p->nbufs; b++) {
            if (!is_io(m->p->bufs[b]) || m->p->bufs[a]->kind != m->p->bufs[b]->kind)
                continue;
            macro_name(m->p->bufs[b]->name, y, sizeof y);
            if (!strcmp(x, y)) {
                diag_error(d, NULL, "bundle header: '%s' and '%s' both make the macro name %s",
                           m->p->bufs[a]->name, m->p->bufs[b]->name, x);
                return false;
            }
        }
    }
    return true;
}

static void header_io_comment(StrBuf *h, const char *up, const LirBuf *w) {
    char name[128], ty[TYPE_STR_MAX];
    macro_name(w->name, name, sizeof name);
    const char *what = w->kind == LB_IN ? "INPUT" : "OUTPUT";
    sb_printf(h, " *   %-6s %-16s %s at mutables + %lld, %lld bytes: %s_%s_%s_*\n",
              w->kind == LB_IN ? "input" : "output", w->name, type_str(&w->type, ty),
              (long long)w->address, (long long)type_bytes(&w->type), up, what, name);
}

static void header_io(StrBuf *h, const char *up, const LirBuf *w) {
    char name[128], ty[TYPE_STR_MAX], pre[300];
    macro_name(w->name, name, sizeof name);
    snprintf(pre, sizeof pre, "%s_%s_%s", up, w->kind == LB_IN ? "INPUT" : "OUTPUT", name);
    sb_printf(h, "/* %s '%s': %s */\n", w->kind == LB_IN ? "input" : "output", w->name,
              type_str(&w->type, ty));
    sb_printf(h, "#define %s_OFFSET %lld\n", pre, (long long)w->address);
    sb_printf(h, "#define %s_SIZE %lld\n", pre, (long long)type_bytes(&w->type));
    sb_printf(h, "#define %s_TYPE %s\n", pre, elem_ctype(w->type.elem));
    sb_printf(h, "#define %s_ONNX_TYPE %d\n", pre, elem_onnx(w->type.elem));
    sb_printf(h, "#define %s_COUNT %lld\n", pre, (long long)type_numel(&w->type));
    sb_printf(h, "#define %s_RANK %d\n", pre, w->type.rank);
    sb_printf(h, "#define %s_SHAPE {", pre);
    for (int i = 0; i < w->type.rank; i++)
        sb_printf(h, "%s%lld", i ? ", " : "", (long long)w->type.dims[i]);
    sb_printf(h, "%s}\n", w->type.rank ? "" : "1");
}

/* NAME_INPUTS(X) / NAME_OUTPUTS(X): X(MACRO, "name") for each, in order. */
static void header_io_list(StrBuf *h, const CpuModule *m, const char *up, LirBufKind kind) {
    int n = 0;
    for (int b = 0; b < m->p->nbufs; b++)
        n += is_io(m->p->bufs[b]) && m->p->bufs[b]->kind == kind;
    const char *what = kind == LB_IN ? "INPUTS" : "OUTPUTS";
    sb_printf(h, "#define %s_NUM_%s %d\n#define %s_%s(X)", up, what, n, up, what);
    for (int b = 0; b < m->p->nbufs; b++) {
        const LirBuf *w = m->p->bufs[b];
        if (!is_io(w) || w->kind != kind)
            continue;
        char name[128];
        macro_name(w->name, name, sizeof name);
        sb_printf(h, " \\\n    X(%s, \"%s\")", name, w->name);
    }
    sb_printf(h, "\n");
}

static void header_usage(StrBuf *h, const CpuModule *m, const char *model_path,
                         const BundleMemory *mem, const char *up) {
    const char *n = m->entry;
    bool nt = m->opt.no_threads;
    sb_printf(h,
              "/* %s: compiled by glowc from %s for %s, %s.\n"
              " *\n"
              " * Entry point:\n"
              " *   int %s(uint8_t *weights, uint8_t *mutables, uint8_t *activations,\n"
              " *        %*sLibjitRuntime *rt);\n"
              " * returns 0, or 1 + the index of the instruction whose kernel failed.\n"
              " *\n"
              " * Memory, all the caller's, each block %s_ALIGNMENT (%d) byte aligned:\n"
              " *   weights      %s_WEIGHTS_SIZE = %lld bytes, the contents of %s.weights\n"
              " *                (read only; may be shared by calls on several threads)\n"
              " *   mutables     %s_MUTABLE_SIZE = %lld bytes: write each input at its\n"
              " *                _OFFSET before the call, read each output at its _OFFSET after\n"
              " *   activations  %s_ACTIVATIONS_SIZE = %lld bytes of scratch, nothing kept\n"
              " *                between calls\n",
              n, model_path, m->cpu, nt ? "without threads" : "with threads", n,
              (int)strlen(n), "", up,
              BUNDLE_ALIGN, up, (long long)m->p->const_bytes, n, up,
              (long long)m->p->mutable_bytes, up, (long long)(mem->arena + mem->scratch));
    if (nt)
        sb_printf(h,
                  " *                (the plan's %lld, then the kernels' %lld at\n"
                  " *                %s_SCRATCH_OFFSET)\n",
                  (long long)mem->arena, (long long)mem->scratch, up);
    sb_printf(h, " *\n * Inputs and outputs (in mutables):\n");
    for (int b = 0; b < m->p->nbufs; b++)
        if (is_io(m->p->bufs[b]))
            header_io_comment(h, up, m->p->bufs[b]);
    if (nt)
        sb_printf(h,
                  " *\n"
                  " * No threads: the calling thread runs everything; pass rt = NULL (it is\n"
                  " * ignored). %s.o calls no malloc and no pthreads: link it with -lm\n"
                  " * alone. Calls on other threads need their own mutables and activations.\n"
                  " * The kernels take up to about 250 KB of the caller's stack (a matrix\n"
                  " * product's block).\n"
                  " */\n",
                  n);
    else
        sb_printf(h,
                  " *\n"
                  " * Threads: rt from %s_runtime_new(threads; 0: every CPU), freed by\n"
                  " * %s_runtime_free; it also keeps the kernels' scratch between calls.\n"
                  " * rt = NULL: one thread, the kernels' scratch malloc'd per call. Link\n"
                  " * %s.o with -lm -lpthread.\n"
                  " */\n",
                  n, n, n);
}

static void bundle_header(const CpuModule *m, const char *model_path, const BundleMemory *mem,
                          StrBuf *h) {
    char up[128];
    macro_name(m->entry, up, sizeof up);
    const char *n = m->entry;
    header_usage(h, m, model_path, mem, up);
    sb_printf(h, "#ifndef %s_H\n#define %s_H\n\n#include <stdint.h>\n\n", up, up);
    sb_printf(h, "#define %s_NO_THREADS %d\n", up, m->opt.no_threads ? 1 : 0);
    sb_printf(h, "#define %s_ALIGNMENT %d\n", up, BUNDLE_ALIGN);
    sb_printf(h, "#define %s_WEIGHTS_SIZE %lld\n", up, (long long)m->p->const_bytes);
    sb_printf(h, "#define %s_WEIGHTS_ALIGNMENT %d\n", up, BUNDLE_ALIGN);
    sb_printf(h, "#define %s_MUTABLE_SIZE %lld\n", up, (long long)m->p->mutable_bytes);
    sb_printf(h, "#define %s_MUTABLE_ALIGNMENT %d\n", up, BUNDLE_ALIGN);
    sb_printf(h, "#define %s_ACTIVATIONS_SIZE %lld\n", up, (long long)(mem->arena + mem->scratch));
    sb_printf(h, "#define %s_ACTIVATIONS_ALIGNMENT %d\n", up, BUNDLE_ALIGN);
    if (m->opt.no_threads) {
        sb_printf(h, "#define %s_SCRATCH_OFFSET %lld\n", up, (long long)mem->arena);
        sb_printf(h, "#define %s_SCRATCH_SIZE %lld\n", up, (long long)mem->scratch);
    }
    sb_printf(h, "\n");
    header_io_list(h, m, up, LB_IN);
    header_io_list(h, m, up, LB_OUT);
    sb_printf(h, "\n");
    for (int b = 0; b < m->p->nbufs; b++)
        if (is_io(m->p->bufs[b]))
            header_io(h, up, m->p->bufs[b]);
    sb_printf(h, "\ntypedef struct LibjitRuntime LibjitRuntime;\n");
    if (!m->opt.no_threads)
        sb_printf(h,
                  "LibjitRuntime *%s_runtime_new(int threads);\n"
                  "void %s_runtime_free(LibjitRuntime *rt);\n",
                  n, n);
    sb_printf(h,
              "int %s(uint8_t *weights, uint8_t *mutables, uint8_t *activations, "
              "LibjitRuntime *rt);\n\n#endif\n",
              n);
}

bool cpu_write_bundle(CpuModule *m, const char *dir, const char *model_path, DiagList *d) {
    if (mkdir(dir, 0777) && errno != EEXIST) {
        diag_error(d, NULL, "cannot create '%s': %s", dir, strerror(errno));
        return false;
    }
    /* The three files are written all or none (file_write_all). */
    char opath[4200], wpath[4200], hpath[4200], *obj = NULL;
    size_t olen = 0;
    snprintf(opath, sizeof opath, "%s/%s.o", dir, m->entry);
    snprintf(wpath, sizeof wpath, "%s/%s.weights", dir, m->entry);
    snprintf(hpath, sizeof hpath, "%s/%s.h", dir, m->entry);
    StrBuf h;
    sb_init(&h);
    size_t wbytes = (size_t)(m->p->const_bytes > 0 ? m->p->const_bytes : 1);
    unsigned char *blob = calloc(wbytes, 1);
    if (!blob)
        diag_error(d, NULL, "out of memory for %zu bytes of weights", wbytes);
    BundleMemory mem = {m->p->arena_bytes, 0};
    bool ok = blob && check_macro_names(m, d) && cpu_weights_blob(m->p, blob, d);
    if (ok && m->opt.no_threads)
        ok = static_scratch(m, &mem, d) && check_no_fallback(m, d) && check_no_threads(m, d);
    ok = ok && bundle_object(m, opath, &obj, &olen, d);
    if (ok) {
        bundle_header(m, model_path, &mem, &h);
        FileOut files[] = {
            {opath, obj, olen},
            {wpath, blob, (size_t)m->p->const_bytes},
            {hpath, sb_str(&h), h.len},
        };
        ok = file_write_all(files, 3, d);
    }
    free(obj);
    free(blob);
    sb_free(&h);
    return ok;
}
