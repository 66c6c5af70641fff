/* glowc run: a model on the reference interpreter, inputs from .npy files
 * (or a fixed-seed generator), one .npy per output. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backends/interp/interp.h"
#include "core/npy.h"
#include "core/print.h"
#include "tui/cli.h"

enum { MAX_ARGS = 64 };

typedef struct RunArgs {
    const char *model;
    const char *out_dir;
    const char *input_names[MAX_ARGS];
    const char *input_files[MAX_ARGS];
    int ninputs;
    DimBinding dims[MAX_ARGS];
    int ndims;
} RunArgs;

static bool parse_args(int argc, char **argv, RunArgs *ra, DiagList *d) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_value = i + 1 < argc;
        if (!strcmp(a, "--input") && has_value) {
            const char *v = argv[++i], *eq = strchr(v, '=');
            if (!eq || eq == v || !eq[1] || ra->ninputs == MAX_ARGS) {
                diag_error(d, NULL, "--input expects NAME=FILE.npy, got '%s'", v);
                return false;
            }
            ra->input_names[ra->ninputs] = strndup(v, (size_t)(eq - v));
            ra->input_files[ra->ninputs++] = eq + 1;
        } else if (!strcmp(a, "--output-dir") && has_value) {
            ra->out_dir = argv[++i];
        } else if (!strcmp(a, "--dim") && has_value && ra->ndims < MAX_ARGS) {
            if (!cli_parse_dim(argv[++i], &ra->dims[ra->ndims++], d))
                return false;
        } else if (a[0] == '-' && a[1]) {
            diag_error(d, NULL, "run: unknown option '%s' (or missing value)", a);
            return false;
        } else if (!ra->model) {
            ra->model = a;
        } else {
            diag_error(d, NULL, "run: more than one model given ('%s' and '%s')", ra->model, a);
            return false;
        }
    }
    if (!ra->model) {
        diag_error(d, NULL, "run: no model given");
        return false;
    }
    return true;
}

/* xorshift64*: a fixed sequence, so the same model gets the same inputs. */
static uint64_t next_random(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

/* Floats uniform in [-1, 1); integers in [0, 10); booleans fair. */
static void fill_random(Tensor *t, uint64_t seed) {
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    int64_t n = tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = next_random(&s);
        if (elem_is_float(t->type.elem))
            tensor_set_f64(t, i, (double)(r >> 11) / 9007199254740992.0 * 2 - 1);
        else if (t->type.elem == ELEM_BOOL)
            tensor_set_i64(t, i, (int64_t)(r >> 63));
        else
            tensor_set_i64(t, i, (int64_t)(r % 10));
    }
}

static Tensor *load_npy(const char *path, Arena *a, DiagList *d) {
    size_t len;
    char *buf = cli_read_file(path, &len, d);
    if (!buf)
        return NULL;
    Tensor *t = npy_read(buf, len, path, a, d);
    free(buf);
    return t;
}

/* Output names may hold '/' or ':' (ONNX names are free text). */
static char *output_file_name(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 8;
    char *p = malloc(n);
    snprintf(p, n, "%s/", dir);
    char *q = p + strlen(p);
    for (const char *s = name; *s; s++)
        *q++ = (*s == '/' || *s == '\\') ? '_' : *s;
    strcpy(q, ".npy");
    return p;
}

static void print_output(const char *name, const Tensor *t) {
    StrBuf sb;
    sb_init(&sb);
    print_type(&t->type, &sb);
    sb_append(&sb, " [");
    int64_t n = tensor_numel(t), show = n < 8 ? n : 8;
    for (int64_t i = 0; i < show; i++) {
        if (i)
            sb_append(&sb, ", ");
        print_elem(t, i, &sb);
    }
    sb_append(&sb, n > show ? ", ...]" : "]");
    printf("%s: %s\n", name, sb_str(&sb));
    sb_free(&sb);
}

static int run_model(RunArgs *ra, DiagList *d) {
    Arena *a = arena_new();
    Tensor *given[MAX_ARGS];
    KnownInput known[MAX_ARGS];
    for (int i = 0; i < ra->ninputs; i++) {
        given[i] = load_npy(ra->input_files[i], a, d);
        if (!given[i]) {
            arena_destroy(a);
            return 1;
        }
        known[i] = (KnownInput){ra->input_names[i], -1, given[i]};
    }
    CliLoadOptions lo = {.dims = ra->dims, .ndims = ra->ndims, .known = known,
                         .nknown = ra->ninputs};
    Module *m = cli_load_model(ra->model, &lo, d);
    if (!m) {
        arena_destroy(a);
        return 1;
    }
    Function *f = m->main;
    Tensor **inputs = arena_alloc_array(a, (size_t)f->nparams + 1, sizeof(Tensor *));
    bool *used = arena_alloc_array(a, (size_t)ra->ninputs + 1, sizeof(bool));
    for (int p = 0; p < f->nparams; p++) {
        const Node *param = f->params[p];
        for (int i = 0; i < ra->ninputs; i++) {
            if (!strcmp(ra->input_names[i], param->name)) {
                inputs[p] = given[i];
                used[i] = true;
            }
        }
        if (!inputs[p]) {
            inputs[p] = tensor_new(a, &param->res[0].type);
            fill_random(inputs[p], (uint64_t)p + 1);
            char b[TYPE_STR_MAX];
            fprintf(stderr,
                    "glowc: input '%s' (%s) not given: filled from the fixed-seed generator\n",
                    param->name, type_str(&param->res[0].type, b));
        }
    }
    for (int i = 0; i < ra->ninputs; i++)
        if (!used[i])
            diag_error(d, NULL, "--input %s: the model has no input of that name",
                       ra->input_names[i]);
    Tensor **outputs = arena_alloc_array(a, (size_t)f->noutputs + 1, sizeof(Tensor *));
    bool ok = !diag_has_errors(d) && interp_run(f, inputs, outputs, a, d, NULL, NULL);
    const char *dir = ra->out_dir ? ra->out_dir : ".";
    if (ok && ra->out_dir && mkdir(dir, 0777) && errno != EEXIST) {
        diag_error(d, NULL, "cannot create output directory '%s': %s", dir, strerror(errno));
        ok = false;
    }
    /* Serialise every output first, then write: a failure leaves no output. */
    StrBuf *bufs = calloc((size_t)f->noutputs + 1, sizeof(StrBuf));
    for (int i = 0; ok && i < f->noutputs; i++) {
        if (!npy_write(outputs[i], &bufs[i])) {
            diag_error(d, NULL, "output '%s': cannot write %s as .npy", f->output_names[i],
                       elem_name(outputs[i]->type.elem));
            ok = false;
        }
    }
    for (int i = 0; ok && i < f->noutputs; i++) {
        char *path = output_file_name(dir, f->output_names[i]);
        ok = cli_write_file(path, bufs[i].data, bufs[i].len, d);
        free(path);
    }
    for (int i = 0; ok && i < f->noutputs; i++)
        print_output(f->output_names[i], outputs[i]);
    for (int i = 0; i < f->noutputs; i++)
        sb_free(&bufs[i]);
    free(bufs);
    module_destroy(m);
    arena_destroy(a);
    return ok ? 0 : 1;
}

int cmd_run(int argc, char **argv) {
    DiagList d;
    diag_init(&d, NULL);
    RunArgs ra = {0};
    int status = parse_args(argc, argv, &ra, &d) ? run_model(&ra, &d) : 1;
    cli_report(&d);
    for (int i = 0; i < ra.ninputs; i++)
        free((char *)ra.input_names[i]);
    for (int i = 0; i < ra.ndims; i++)
        free((char *)ra.dims[i].name);
    diag_free(&d);
    return status;
}
