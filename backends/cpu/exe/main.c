/* main() of an executable glowc compiles: reads inputs from .npy files (or
 * fills them from the same fixed-seed generator as glowc run), runs the
 * model, writes one .npy per output and prints each output's type, or
 * times runs (--bench N). Needs only libc, libm and pthreads; the weights
 * are in the binary. The .npy code is core/npy.c, linked in as bitcode. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backends/cpu/exe/model_info.h"
#include "core/npy.h"

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

static bool parse(int argc, char **argv, Args *a) {
    for (int i = 1; i < argc; i++) {
        bool v = i + 1 < argc;
        if (!strcmp(argv[i], "--input") && v && a->ninputs < 64) {
            char *arg = argv[++i], *eq = strchr(arg, '=');
            if (!eq)
                return false;
            *eq = 0;
            a->names[a->ninputs] = arg;
            a->files[a->ninputs++] = eq + 1;
        } else if (!strcmp(argv[i], "--output-dir") && v) {
            a->out_dir = argv[++i];
        } else if (!strcmp(argv[i], "--bench") && v) {
            a->bench = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--threads") && v) {
            a->threads = atoi(argv[++i]);
        } else {
            return false;
        }
    }
    return a->bench >= 0 && a->threads >= 0;
}

static Type io_type(const GlowcIo *io) {
    Type t = {.elem = (ElemKind)io->elem, .rank = io->rank};
    for (int i = 0; i < io->rank; i++)
        t.dims[i] = io->dims[i];
    return t;
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0, got;
    char *buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    *len = n;
    return buf;
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
            fprintf(stderr, "error: the model has no input '%s'\n", a->names[k]);
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
            char *buf = read_file(a->files[k], &len);
            if (!buf) {
                fprintf(stderr, "error: cannot read '%s': %s\n", a->files[k], strerror(errno));
                return false;
            }
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

/* The inputs are read into a scratch arena, freed before the run: the
 * program's own memory is the weights, the mutables and the activations. */
static bool load_inputs_scratch(const Args *a, uint8_t *mutables, DiagList *d) {
    Arena *scratch = arena_new();
    bool ok = scratch && load_inputs(a, mutables, scratch, d);
    arena_destroy(scratch);
    return ok;
}

static bool write_outputs(const Args *a, const uint8_t *mutables, DiagList *d) {
    const GlowcModelInfo *m = &glowc_model_info;
    const char *dir = a->out_dir ? a->out_dir : ".";
    if (a->out_dir && mkdir(dir, 0777) && errno != EEXIST) {
        fprintf(stderr, "error: cannot create '%s': %s\n", dir, strerror(errno));
        return false;
    }
    for (int i = 0; i < m->noutputs; i++) {
        const GlowcIo *io = &m->outputs[i];
        Tensor t = {.type = io_type(io), .data = (void *)(mutables + io->offset)};
        StrBuf sb;
        sb_init(&sb);
        npy_write(&t, &sb);
        char path[4096], tmp[4200];
        snprintf(path, sizeof path, "%s/", dir);
        size_t n = strlen(path);
        for (const char *s = io->name; *s && n + 5 < sizeof path; s++)
            path[n++] = *s == '/' ? '_' : *s;
        snprintf(path + n, sizeof path - n, ".npy");
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        FILE *f = fopen(tmp, "wb");
        bool ok = f && fwrite(sb.data, 1, sb.len, f) == sb.len;
        ok = f && !fclose(f) && ok && !rename(tmp, path);
        sb_free(&sb);
        if (!ok) {
            fprintf(stderr, "error: cannot write '%s'\n", path);
            remove(tmp);
            return false;
        }
        char ts[TYPE_STR_MAX];
        printf("%s: %s\n", io->name, type_str(&t.type, ts));
    }
    (void)d;
    return true;
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

/* The default --threads: every online CPU. */
static int online_cpus(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

static int run(const Args *a, uint8_t *mutables, uint8_t *acts) {
    const GlowcModelInfo *m = &glowc_model_info;
    /* Even for one thread: the runtime keeps the kernels' scratch from call
     * to call (libjit.h), which keeps the heap at its largest request. */
    LibjitRuntime *rt = libjit_runtime_new(a->threads ? a->threads : online_cpus());
    int status = glowc_main((uint8_t *)m->weights, mutables, acts, rt); /* warm-up or the run */
    if (!status && a->bench > 0) {
        double *t = malloc((size_t)a->bench * sizeof *t);
        for (int i = 0; i < a->bench && !status; i++) {
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
    libjit_runtime_free(rt);
    if (status)
        fprintf(stderr, "error: instruction %d failed\n", status - 1);
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
    int status = 1;
    if (mutables && acts && load_inputs_scratch(&a, mutables, &d) && !run(&a, mutables, acts) &&
        (a.bench || write_outputs(&a, mutables, &d)))
        status = 0;
    StrBuf sb;
    sb_init(&sb);
    diag_render(&d, &sb);
    fputs(sb_str(&sb), stderr);
    sb_free(&sb);
    diag_free(&d);
    arena_destroy(arena);
    return status;
}
