/* main() of an executable glowc compiles: reads inputs from .npy files (or
 * fills them from the same fixed-seed generator as glowc run), runs the
 * model, writes one .npy per output and prints each output's type, or
 * times runs (--bench N). Needs only libc, libm and pthreads; the weights
 * are in the binary. The .npy code is core/npy.c, linked in as bitcode. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "backends/cpu/exe/model_info.h"
#include "core/file.h"
#include "core/npy.h"
#include "core/str_ops.h"

typedef struct Args {
    const char *names[64], *files[64];
    int ninputs;
    const char *out_dir;
    int bench, threads;
} Args;

static int usage(const char *prog) {
    fprintf(stderr,
            "usage: %s [--input NAME=FILE.npy]... [--output-dir DIR] [--bench N] [--threads T]\n",
            prog);
    return 1;
}

/* A whole decimal count in [lo, hi] ("2x" and overflow are not). */
static bool count_value(const char *opt, const char *v, long lo, long hi, int *out) {
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (!isdigit((unsigned char)v[0]) || *end || errno || n < lo || n > hi) {
        fprintf(stderr, "error: %s takes %ld to %ld, not '%s'\n", opt, lo, hi, v);
        return false;
    }
    *out = (int)n;
    return true;
}

static bool add_input(Args *a, char *arg) {
    char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1]) {
        fprintf(stderr, "error: --input expects NAME=FILE.npy, got '%s'\n", arg);
        return false;
    }
    *eq = 0;
    for (int k = 0; k < a->ninputs; k++) {
        if (!strcmp(a->names[k], arg)) {
            fprintf(stderr, "error: --input %s given twice\n", arg);
            return false;
        }
    }
    if (a->ninputs == 64) {
        fprintf(stderr, "error: --input: more than 64 given\n");
        return false;
    }
    a->names[a->ninputs] = arg;
    a->files[a->ninputs++] = eq + 1;
    return true;
}

/* One error saying what is wrong, then the usage. */
static bool parse(int argc, char **argv, Args *a) {
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        bool known = !strcmp(o, "--input") || !strcmp(o, "--output-dir") ||
                     !strcmp(o, "--bench") || !strcmp(o, "--threads");
        if (!known) {
            fprintf(stderr, "error: unknown %s '%s'\n", o[0] == '-' ? "option" : "argument", o);
            return false;
        }
        if (i + 1 == argc) {
            fprintf(stderr, "error: %s needs a value\n", o);
            return false;
        }
        char *v = argv[++i];
        bool ok = true;
        if (!strcmp(o, "--input"))
            ok = add_input(a, v);
        else if (!strcmp(o, "--output-dir"))
            a->out_dir = v;
        else if (!strcmp(o, "--bench"))
            ok = count_value(o, v, 1, 1000000, &a->bench);
        else
            ok = count_value(o, v, 1, 64, &a->threads);
        if (!ok)
            return false;
    }
    return true;
}

static Type io_type(const GlowcIo *io) {
    Type t = {.elem = (ElemKind)io->elem, .rank = io->rank};
    for (int i = 0; i < io->rank; i++)
        t.dims[i] = io->dims[i];
    return t;
}

/* An output's type after a run: a bounded-dynamic one at its run-time size. */
static Type output_type(const GlowcIo *io, const uint8_t *mutables) {
    Type t = io_type(io);
    if (io->shape_offset >= 0)
        memcpy(t.dims, mutables + io->shape_offset, (size_t)t.rank * sizeof(int64_t));
    return t;
}

/* The generator of glowc run: xorshift64*, floats in [-1, 1). */
static void fill_random(Tensor *t, uint64_t seed) {
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (int64_t i = 0; i < tensor_numel(t); i++) {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        uint64_t r = s * 2685821657736338717ull;
        if (elem_is_float(t->type.elem))
            tensor_set_f64(t, i, (double)(r >> 11) / 9007199254740992.0 * 2 - 1);
        else if (t->type.elem == ELEM_BOOL)
            tensor_set_i64(t, i, (int64_t)(r >> 63));
        else
            tensor_set_i64(t, i, (int64_t)(r % 10));
    }
}

static bool load_inputs(const Args *a, uint8_t *mutables, Arena *arena, DiagList *d) {
    const GlowcModelInfo *m = &glowc_model_info;
    for (int k = 0; k < a->ninputs; k++) {
        bool found = false;
        for (int i = 0; i < m->ninputs && !found; i++)
            found = !strcmp(m->inputs[i].name, a->names[k]);
        if (!found) {
            fprintf(stderr, "error: --input %s: the model has no input of that name (its inputs:",
                    a->names[k]);
            for (int i = 0; i < m->ninputs; i++)
                fprintf(stderr, "%s '%s'", i ? "," : "", m->inputs[i].name);
            fprintf(stderr, "%s)\n", m->ninputs ? "" : " none");
            return false;
        }
    }
    for (int i = 0; i < m->ninputs; i++) {
        const GlowcIo *io = &m->inputs[i];
        Type want = io_type(io);
        Tensor *t = NULL;
        for (int k = 0; k < a->ninputs; k++) {
            if (strcmp(a->names[k], io->name))
                continue;
            size_t len;
            char *buf = file_read_all(a->files[k], &len, d);
            if (!buf)
                return false;
            t = npy_read(buf, len, a->files[k], arena, d);
            free(buf);
            if (!t)
                return false;
            if (!type_equal(&t->type, &want)) {
                char w[TYPE_STR_MAX], g[TYPE_STR_MAX];
                fprintf(stderr, "error: input '%s' must be %s, '%s' holds %s\n", io->name,
                        type_str(&want, w), a->files[k], type_str(&t->type, g));
                return false;
            }
        }
        if (!t) {
            t = tensor_new(arena, &want);
            fill_random(t, (uint64_t)i + 1);
            fprintf(stderr, "input '%s' not given: filled from the fixed-seed generator\n",
                    io->name);
        }
        memcpy(mutables + io->offset, t->data, tensor_bytes(t));
    }
    return true;
}

static bool has_string_inputs(void) {
    const GlowcModelInfo *m = &glowc_model_info;
    for (int i = 0; i < m->ninputs; i++)
        if (m->inputs[i].elem == ELEM_STR)
            return true;
    return false;
}

/* The inputs are read into a scratch arena, freed before the run: the
 * program's own memory is the weights, the mutables and the activations.
 * A string input's slots point at characters in that arena, which then
 * lives until the end (*keep). */
static bool load_inputs_scratch(const Args *a, uint8_t *mutables, Arena **keep, DiagList *d) {
    Arena *scratch = arena_new();
    bool ok = scratch && load_inputs(a, mutables, scratch, d);
    if (ok && has_string_inputs())
        *keep = scratch;
    else
        arena_destroy(scratch);
    return ok;
}

/* <dir>/<name>.npy, '/' in the name made '_' as glowc run does. */
static char *output_path(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 8;
    char *p = malloc(n);
    if (!p)
        return NULL;
    char *q = p + snprintf(p, n, "%s/", dir);
    for (const char *s = name; *s; s++)
        *q++ = *s == '/' ? '_' : *s;
    strcpy(q, ".npy");
    return p;
}

/* Every output or none (file_write_all); then their types on stdout. */
static bool write_outputs(const Args *a, const uint8_t *mutables, DiagList *d) {
    const GlowcModelInfo *m = &glowc_model_info;
    const char *dir = a->out_dir ? a->out_dir : ".";
    int n = m->noutputs;
    StrBuf *bufs = calloc((size_t)n + 1, sizeof *bufs);
    FileOut *files = calloc((size_t)n + 1, sizeof *files);
    bool ok = bufs && files;
    for (int i = 0; ok && i < n; i++) {
        const GlowcIo *io = &m->outputs[i];
        Tensor t = {.type = output_type(io, mutables), .data = (void *)(mutables + io->offset)};
        sb_init(&bufs[i]);
        char *path = output_path(dir, io->name);
        ok = path && npy_write(&t, &bufs[i]);
        files[i] = (FileOut){path, bufs[i].data, bufs[i].len};
    }
    if (!ok)
        diag_error(d, NULL, "out of memory");
    if (ok && a->out_dir && mkdir(dir, 0777) && errno != EEXIST) {
        diag_error(d, NULL, "cannot create '%s': %s", dir, strerror(errno));
        ok = false;
    }
    ok = ok && file_write_all(files, n, d);
    for (int i = 0; ok && i < n; i++) {
        char ts[TYPE_STR_MAX];
        Type t = output_type(&m->outputs[i], mutables);
        printf("%s: %s\n", m->outputs[i].name, type_str(&t, ts));
    }
    for (int i = 0; bufs && files && i < n; i++) {
        sb_free(&bufs[i]);
        free((char *)files[i].path);
    }
    free(bufs);
    free(files);
    return ok;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* The run's failure: the instruction, and what a kernel that failed on
 * its input read (libjit_runtime_failure; a string that is no number). */
static void report_failure(LibjitRuntime *rt, int status) {
    const char *text;
    int64_t elem = libjit_runtime_failure(rt, &text);
    if (elem == -2) {
        fprintf(stderr, "error: instruction %d failed: %s\n", status - 1, text);
        return;
    }
    if (elem < 0) {
        fprintf(stderr, "error: instruction %d failed\n", status - 1);
        return;
    }
    fprintf(stderr, "error: instruction %d failed: " STR_NOT_A_NUMBER "\n", status - 1,
            (long long)elem, text ? text : "");
}

/* Runs the model (warm-up and --bench N runs, or the one run), then writes
 * the outputs while the runtime still holds the strings they point at. */
static int run(const Args *a, uint8_t *mutables, uint8_t *acts, DiagList *d) {
    const GlowcModelInfo *m = &glowc_model_info;
    /* Even for one thread: the runtime keeps the kernels' scratch from call
     * to call (libjit.h), which keeps the heap at its largest request. */
    LibjitRuntime *rt = libjit_runtime_new(a->threads); /* 0: every CPU */
    int status = glowc_main((uint8_t *)m->weights, mutables, acts, rt); /* warm-up or the run */
    if (!status && a->bench > 0) {
        double *t = malloc((size_t)a->bench * sizeof *t);
        for (int i = 0; i < a->bench && !status; i++) {
            libjit_runtime_free_strings(rt); /* the last run's */
            double t0 = now_ms();
            status = glowc_main((uint8_t *)m->weights, mutables, acts, rt);
            t[i] = now_ms() - t0;
        }
        qsort(t, (size_t)a->bench, sizeof *t, cmp_double);
        int n = a->bench;
        double median = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
        printf("median %.3f ms, min %.3f ms\n", median, t[0]);
        free(t);
    }
    if (status)
        report_failure(rt, status);
    else if (!a->bench && !write_outputs(a, mutables, d))
        status = 1;
    libjit_runtime_free(rt);
    return status;
}

int main(int argc, char **argv) {
    Args a = {0};
    if (!parse(argc, argv, &a))
        return usage(argv[0]);
    const GlowcModelInfo *m = &glowc_model_info;
    Arena *arena = arena_new();
    DiagList d;
    diag_init(&d, NULL);
    uint8_t *mutables = arena_alloc_big(arena, (size_t)m->mutable_bytes + 64);
    uint8_t *acts = arena_alloc_big(arena, (size_t)m->activation_bytes + 64);
    Arena *strs = NULL; /* the string inputs' characters */
    int status = 1;
    if (mutables && acts && load_inputs_scratch(&a, mutables, &strs, &d) &&
        !run(&a, mutables, acts, &d))
        status = 0;
    arena_destroy(strs);
    StrBuf sb;
    sb_init(&sb);
    diag_render(&d, &sb);
    fputs(sb_str(&sb), stderr);
    sb_free(&sb);
    diag_free(&d);
    arena_destroy(arena);
    return status;
}
