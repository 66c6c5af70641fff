/* glowc conform: runs ONNX backend test folders (model.onnx plus
 * test_data_set_N with input_K.pb and output_K.pb) and compares with the stored
 * outputs. Each test runs in a child process, so a crash or a hang in one
 * test is reported as that test's failure instead of ending the run; up to
 * --jobs children run at once, and results print in test order. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/interp/interp.h"
#include "core/file.h"
#include "passes/session.h"
#include "tui/cli.h"
#include "tui/options.h"

typedef struct ConformOptions {
    const char *pipeline;
    const Backend *backend;
    double rtol, atol;
    int jobs;
    int timeout_s;
    bool verbose;
    bool no_verify;
    bool fallback;
    bool no_cache;
    bool late_inputs; /* --late-inputs: no input is read at compile time */
    const char *cache_dir; /* the kernel engine's cache (cli_cache_dir), NULL: --no-cache */
    char cache_buf[1024];
} ConformOptions;

typedef enum { R_PASS, R_FAIL, R_SKIP } ResultKind;

/* ---- test discovery --------------------------------------------------------- */

static bool is_dir(const char *p) {
    struct stat st;
    return !stat(p, &st) && S_ISDIR(st.st_mode);
}

static bool file_exists(const char *p) {
    struct stat st;
    return !stat(p, &st) && S_ISREG(st.st_mode);
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of the entries of dir that start with prefix. */
static int list_dir(const char *dir, const char *prefix, char ***out) {
    DIR *dp = opendir(dir);
    if (!dp)
        return -1;
    int n = 0, cap = 16;
    char **names = malloc((size_t)cap * sizeof *names);
    for (struct dirent *e; (e = readdir(dp));) {
        if (e->d_name[0] == '.' || strncmp(e->d_name, prefix, strlen(prefix)))
            continue;
        if (n == cap)
            names = realloc(names, (size_t)(cap *= 2) * sizeof *names);
        names[n++] = strdup(e->d_name);
    }
    closedir(dp);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    *out = names;
    return n;
}

static void free_list(char **names, int n) {
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

static char *join(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", a, b);
    return p;
}

/* ---- one test (in the child) ------------------------------------------------ */

/* Numbered .pb files "<prefix>_<k>.pb" in order of k. */
static int read_pbs(const char *dir, const char *prefix, Arena *a, Tensor **ts,
                    const char **names, int max, DiagList *d) {
    int n = 0;
    for (; n < max; n++) {
        char file[64];
        snprintf(file, sizeof file, "%s_%d.pb", prefix, n);
        char *path = join(dir, file);
        if (!file_exists(path)) {
            free(path);
            break;
        }
        size_t len;
        char *buf = file_read_all(path, &len, d);
        ts[n] = buf ? onnx_read_tensor(buf, len, path, a, &names[n], d) : NULL;
        free(buf);
        free(path);
        if (!ts[n])
            return -1;
    }
    return n;
}

/* The first error on one line; one that ends in ':' ("pass 'P' broke the
 * verifier:") is followed by the next, which says what. */
static void first_error(const DiagList *d, char *out, size_t len) {
    for (const Diag *g = d->head; g; g = g->next) {
        if (g->level != DIAG_ERROR)
            continue;
        size_t n = strlen(g->msg);
        const Diag *next = n && g->msg[n - 1] == ':' ? g->next : NULL;
        const char *nwhere = next && next->where ? next->where : NULL;
        snprintf(out, len, "%s%s%s%s%s%s%s", g->where ? g->where : "", g->where ? ": " : "",
                 g->msg, next ? " " : "", nwhere ? nwhere : "", nwhere ? ": " : "",
                 next ? next->msg : "");
        return;
    }
    snprintf(out, len, "unknown error");
}

/* The ONNX 1.12 test data stores bfloat16 tensors as UINT16 holding the
 * bits: read such a tensor as the kind the other side expects. */
static void bf16_quirk(Tensor *t, const Type *expected) {
    if (t && type_same_shape(&t->type, expected) &&
        ((t->type.elem == ELEM_U16 && expected->elem == ELEM_BF16) ||
         (t->type.elem == ELEM_BF16 && expected->elem == ELEM_U16)))
        t->type.elem = expected->elem;
}

static ResultKind run_data_set(const char *test, const char *set, const ConformOptions *o,
                               char *why, size_t wlen) {
    enum { MAX_IO = 64 };
    Arena *a = arena_new();
    DiagList d;
    diag_init(&d, NULL);
    Tensor *ins[MAX_IO], *want[MAX_IO];
    const char *in_names[MAX_IO], *out_names[MAX_IO];
    ResultKind r = R_FAIL;
    Module *m = NULL;
    Session *s = NULL;
    int nin = read_pbs(set, "input", a, ins, in_names, MAX_IO, &d);
    int nout = nin < 0 ? -1 : read_pbs(set, "output", a, want, out_names, MAX_IO, &d);
    char *model = join(test, "model.onnx");
    if (nin < 0 || nout < 0) {
        /* Test data that is not a tensor (sequences, optionals) or of a kind
         * we lack: the model says whether it uses something unsupported. */
        Session *probe = session_open(model, NULL);
        bool type = d.head && strstr(d.head->msg, "unsupported element type");
        first_error(probe->unsupported ? &probe->diags : &d, why, wlen);
        r = probe->unsupported || type ? R_SKIP : R_FAIL;
        session_free(probe);
        free(model);
        goto done;
    }
    KnownInput known[MAX_IO];
    for (int i = 0; i < nin; i++)
        known[i] = (KnownInput){in_names[i][0] ? in_names[i] : NULL, i, ins[i], NULL,
                                o->late_inputs};
    SessionOptions so = {.known = known, .nknown = nin, .no_verify = o->no_verify,
                         .backend = o->backend, .codegen = {.fallback = o->fallback, .cache_dir = o->cache_dir}, .threads = 1,
                         .max_memory = cli_physical_memory()};
    s = session_open(model, &so);
    free(model);
    if (!s->work || !session_set_pipeline(s, o->pipeline) ||
        (o->backend->compiles && !session_want_codegen(s)) ||
        (o->backend->runs_lir && !session_want_lir(s)) || !session_run(s)) {
        first_error(&s->diags, why, wlen);
        r = s->unsupported ? R_SKIP : R_FAIL;
        goto done;
    }
    m = s->work;
    Function *f = m->main;
    Tensor *args[MAX_IO] = {0};
    for (int p = 0; p < f->nparams && p < MAX_IO; p++) {
        for (int i = 0; i < nin; i++)
            if (in_names[i][0] && !strcmp(in_names[i], f->params[p]->name))
                args[p] = ins[i];
        if (!args[p] && p < nin && !in_names[p][0])
            args[p] = ins[p];
        bf16_quirk(args[p], &f->params[p]->res[0].type);
    }
    if (f->noutputs != nout) {
        snprintf(why, wlen, "model has %d outputs, test data %d", f->noutputs, nout);
        goto done;
    }
    Tensor *got[MAX_IO];
    if (!session_execute(s, args, got, a, &d)) {
        first_error(&d, why, wlen);
        goto done;
    }
    for (int i = 0; i < nout; i++) {
        bf16_quirk(got[i], &want[i]->type);
        TensorDiff df = tensor_compare(got[i], want[i], o->rtol, o->atol);
        if (df.ok)
            continue;
        char g[TYPE_STR_MAX], w[TYPE_STR_MAX];
        if (!df.same_type)
            snprintf(why, wlen, "output '%s' is %s, expected %s", f->output_names[i],
                     type_str(&got[i]->type, g), type_str(&want[i]->type, w));
        else if (want[i]->type.elem == ELEM_STR)
            snprintf(why, wlen,
                     "output '%s': %lld of %lld strings differ; first at %lld: got \"%s\", "
                     "expected \"%s\"",
                     f->output_names[i], (long long)df.mismatches,
                     (long long)tensor_numel(want[i]), (long long)df.worst,
                     tensor_get_str(got[i], df.worst), tensor_get_str(want[i], df.worst));
        else
            snprintf(why, wlen,
                     "output '%s': %lld of %lld elements differ; worst at %lld: got %.9g, "
                     "expected %.9g",
                     f->output_names[i], (long long)df.mismatches,
                     (long long)tensor_numel(want[i]), (long long)df.worst, df.got_at_worst,
                     df.want_at_worst);
        goto done;
    }
    r = R_PASS;
done:
    (void)m;
    session_free(s);
    diag_free(&d);
    arena_destroy(a);
    return r;
}

static ResultKind run_test(const char *test, const ConformOptions *o, char *why, size_t wlen) {
    char **sets;
    int nsets = list_dir(test, "test_data_set_", &sets);
    if (nsets <= 0) {
        snprintf(why, wlen, "no test_data_set_* folders");
        if (nsets == 0)
            free(sets);
        return R_FAIL;
    }
    ResultKind r = R_PASS;
    for (int i = 0; i < nsets && r == R_PASS; i++) {
        char *set = join(test, sets[i]);
        r = run_data_set(test, set, o, why, wlen);
        free(set);
    }
    free_list(sets, nsets);
    return r;
}

/* ---- the parent: children, ordering, progress --------------------------------- */

typedef struct Job {
    pid_t pid;
    int fd;
    int test;
    char buf[1024];
    size_t len;
} Job;

typedef struct Outcome {
    bool done;
    ResultKind kind;
    char *why;
} Outcome;

static void child_main(const char *test, const ConformOptions *o, int fd) {
    alarm((unsigned)o->timeout_s);
    char why[900] = "";
    ResultKind r = run_test(test, o, why, sizeof why);
    char line[1024];
    int n = snprintf(line, sizeof line, "%d %s", (int)r, why);
    if (write(fd, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1)) < 0)
        _exit(3);
    _exit(0);
}

static void finish_job(Job *j, Outcome *out, const ConformOptions *o) {
    int status = 0;
    waitpid(j->pid, &status, 0);
    close(j->fd);
    j->buf[j->len] = 0;
    Outcome *oc = &out[j->test];
    oc->done = true;
    if (j->len >= 2 && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        oc->kind = (ResultKind)(j->buf[0] - '0');
        oc->why = strdup(j->buf + 2);
    } else if (WIFSIGNALED(status)) {
        oc->kind = R_FAIL;
        char msg[128];
        if (WTERMSIG(status) == SIGALRM)
            snprintf(msg, sizeof msg, "timed out after %d s", o->timeout_s);
        else
            snprintf(msg, sizeof msg, "crashed with signal %d (%s)", WTERMSIG(status),
                     strsignal(WTERMSIG(status)));
        oc->why = strdup(msg);
    } else {
        oc->kind = R_FAIL;
        oc->why = strdup("the test process failed");
    }
    j->pid = 0;
}

static void progress(int done, int total, const int *counts) {
    int width = 30, filled = total ? done * width / total : width;
    fprintf(stderr, "\r[");
    for (int i = 0; i < width; i++)
        fputc(i < filled ? '=' : i == filled ? '>' : ' ', stderr);
    fprintf(stderr, "] %d/%d  %d passed, %d failed, %d skipped", done, total, counts[R_PASS],
            counts[R_FAIL], counts[R_SKIP]);
    fflush(stderr);
}

static const char *test_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static int run_all(char **tests, int ntests, const ConformOptions *o) {
    Outcome *out = calloc((size_t)ntests + 1, sizeof *out);
    Job *jobs = calloc((size_t)o->jobs, sizeof *jobs);
    int counts[3] = {0}, next = 0, printed = 0, running = 0;
    bool tty = isatty(STDERR_FILENO);
    while (printed < ntests) {
        while (running < o->jobs && next < ntests) {
            int fds[2];
            if (pipe(fds))
                break;
            fflush(stdout);
            fflush(stderr);
            pid_t pid = fork();
            if (pid == 0) {
                close(fds[0]);
                child_main(tests[next], o, fds[1]);
            }
            close(fds[1]);
            for (int k = 0; k < o->jobs; k++) {
                if (!jobs[k].pid) {
                    jobs[k] = (Job){.pid = pid, .fd = fds[0], .test = next};
                    break;
                }
            }
            next++;
            running++;
        }
        struct pollfd pfd[64];
        int map[64], np = 0;
        for (int k = 0; k < o->jobs && np < 64; k++) {
            if (jobs[k].pid) {
                pfd[np] = (struct pollfd){.fd = jobs[k].fd, .events = POLLIN};
                map[np++] = k;
            }
        }
        if (np && poll(pfd, (nfds_t)np, -1) > 0) {
            for (int i = 0; i < np; i++) {
                if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
                    continue;
                Job *j = &jobs[map[i]];
                ssize_t got = read(j->fd, j->buf + j->len, sizeof j->buf - 1 - j->len);
                if (got > 0) {
                    j->len += (size_t)got;
                    continue;
                }
                finish_job(j, out, o);
                running--;
            }
        }
        /* Print finished results in test order. */
        while (printed < ntests && out[printed].done) {
            Outcome *oc = &out[printed];
            counts[oc->kind]++;
            if (oc->kind != R_PASS || o->verbose) {
                if (tty)
                    fprintf(stderr, "\r\033[K");
                printf("%s %s: %s\n", oc->kind == R_PASS ? "PASS" : oc->kind == R_FAIL ? "FAIL" : "SKIP",
                       test_name(tests[printed]), oc->why);
                fflush(stdout);
            }
            free(oc->why);
            printed++;
            if (tty)
                progress(printed, ntests, counts);
        }
    }
    if (tty)
        fprintf(stderr, "\r\033[K");
    printf("%d passed, %d failed, %d skipped\n", counts[R_PASS], counts[R_FAIL], counts[R_SKIP]);
    free(out);
    free(jobs);
    return counts[R_FAIL] ? 1 : 0;
}

/* A DIR is a test (it holds model.onnx) or a folder of tests. */
static int collect_tests(const char *dir, char ***tests, int *n, int *cap, DiagList *d) {
    char *model = join(dir, "model.onnx");
    bool single = file_exists(model);
    free(model);
    if (single) {
        if (*n == *cap)
            *tests = realloc(*tests, (size_t)(*cap = *cap * 2 + 16) * sizeof **tests);
        (*tests)[(*n)++] = strdup(dir);
        return 0;
    }
    if (!is_dir(dir)) {
        diag_error(d, NULL, "'%s' is not a test folder", dir);
        return -1;
    }
    char **names;
    int k = list_dir(dir, "", &names);
    for (int i = 0; i < k; i++) {
        char *sub = join(dir, names[i]);
        char *m = join(sub, "model.onnx");
        if (file_exists(m)) {
            if (*n == *cap)
                *tests = realloc(*tests, (size_t)(*cap = *cap * 2 + 16) * sizeof **tests);
            (*tests)[(*n)++] = sub;
        } else {
            free(sub);
        }
        free(m);
    }
    if (k >= 0)
        free_list(names, k);
    return 0;
}

int cmd_conform(int argc, char **argv) {
    DiagList d;
    diag_init(&d, NULL);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    ConformOptions o = {.pipeline = "-O0", .backend = &interp_backend, .rtol = 1e-3, .atol = 1e-5,
                        .jobs = cpus > 0 ? (int)cpus : 1, .timeout_s = 300};
    char **tests = NULL;
    int ntests = 0, cap = 0, status = 1;
    const CommandSpec *spec = command_spec("conform");
    for (int i = 1; i < argc; i++) {
        OptionId id;
        const char *v;
        int r = option_next(spec, argc, argv, &i, &id, &v, &d);
        if (r < 0)
            goto done;
        if (r == 0) {
            if (collect_tests(argv[i], &tests, &ntests, &cap, &d) < 0)
                goto done;
            continue;
        }
        switch (id) {
        case OPT_O0: o.pipeline = "-O0"; break;
        case OPT_O1: o.pipeline = "-O1"; break;
        case OPT_O2: o.pipeline = "-O2"; break;
        case OPT_PASSES: o.pipeline = v; break;
        case OPT_NO_VERIFY: o.no_verify = true; break;
        case OPT_VERIFY_EACH: o.no_verify = false; break; /* the default; old scripts say it */
        case OPT_VERBOSE: case OPT_VERBOSE_SHORT: o.verbose = true; break;
        case OPT_NO_CACHE: o.no_cache = true; break;
        case OPT_LATE_INPUTS: o.late_inputs = true; break;
        case OPT_FALLBACK:
            if (strcmp(v, "interp")) {
                diag_error(&d, NULL, "--fallback takes 'interp', not '%s'", v);
                goto done;
            }
            o.fallback = true;
            break;
        case OPT_BACKEND:
            o.backend = backend_find(v);
            if (!o.backend) {
                diag_error(&d, NULL, "conform: unknown backend '%s' (known: %s)", v,
                           backend_names());
                goto done;
            }
            break;
        case OPT_RTOL: case OPT_ATOL:
            if (!cli_parse_tolerance(v, id == OPT_RTOL ? &o.rtol : &o.atol)) {
                diag_error(&d, NULL, "conform: %s takes a number >= 0, not '%s'",
                           option_info(id)->spelling, v);
                goto done;
            }
            break;
        default: { /* --jobs, -j, --timeout */
            bool jobs = id != OPT_TIMEOUT;
            long long n;
            if (!cli_parse_int(v, 1, jobs ? 64 : 86400, &n)) {
                diag_error(&d, NULL, "conform: %s takes 1 to %d, not '%s'",
                           option_info(id)->spelling, jobs ? 64 : 86400, v);
                goto done;
            }
            *(jobs ? &o.jobs : &o.timeout_s) = (int)n;
        }
        }
    }
    if (o.jobs > 64)
        o.jobs = 64; /* the machine's core count, as the default */
    if (!pipeline_check(o.pipeline, &d))
        goto done;
    o.cache_dir = o.no_cache ? NULL : cli_cache_dir(o.cache_buf, sizeof o.cache_buf);
    if (!ntests) {
        diag_error(&d, NULL, "conform: no tests found (give folders holding model.onnx)");
        goto done;
    }
    status = run_all(tests, ntests, &o);
done:
    cli_report(&d);
    for (int i = 0; i < ntests; i++)
        free(tests[i]);
    free(tests);
    diag_free(&d);
    return status;
}
