/* Per-operator time of native code through the JIT's probe. */
#include "tui/profile.h"

#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/file.h"
#include "core/print.h"

enum { MAX_LANES = 64 };

typedef struct Event {
    int instr, lane;
    double start, dur; /* seconds since the run began */
} Event;

struct Profile {
    const LirProgram *prog;
    const LirInstr **instr; /* by program index */
    int n;
    double *begin, *total;  /* per instruction: this run's start, the sum over runs */
    /* Per instruction: its time in the current run, and the least over the
     * runs it ran in (the column to set beside a microbenchmark's minimum:
     * the means stray with every run the host slowed). */
    double *run_t, *best;
    bool *ran, *ran_now;
    int runs;
    double run_start;
    double wall;            /* the runs' summed wall time, seconds */
    _Atomic int current;    /* the instruction the workers are running */
    bool tracing;
    pthread_mutex_t mu;     /* lanes and events, from every thread */
    pthread_t lane_thread[MAX_LANES];
    double lane_start[MAX_LANES];
    int nlanes;
    Event *ev;
    int nev, cap;
    /* GLOWC_PROFILE_CPU set: each thread's CPU time in its share of each
     * instruction (lane_cpu[instr * MAX_LANES + lane], summed over runs).
     * A thread's CPU time does not count the time another process held its
     * core, so the largest share's is what the instruction would take on an
     * idle machine: the thread split's balance, measurable under load. */
    bool cpu;
    double *lane_cpu;
    double lane_cpu_start[MAX_LANES];
};

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double thread_cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int lane_of_self(Profile *p) {
    pthread_t self = pthread_self();
    for (int k = 0; k < p->nlanes; k++)
        if (pthread_equal(p->lane_thread[k], self))
            return k;
    if (p->nlanes == MAX_LANES)
        return MAX_LANES - 1;
    p->lane_thread[p->nlanes] = self;
    return p->nlanes++;
}

static void add_event(Profile *p, int instr, int lane, double start, double end) {
    if (p->nev == p->cap) {
        int cap = p->cap ? 2 * p->cap : 1024;
        Event *grown = realloc(p->ev, (size_t)cap * sizeof *grown);
        if (!grown)
            return;
        p->ev = grown;
        p->cap = cap;
    }
    p->ev[p->nev++] = (Event){instr, lane, start - p->run_start, end - start};
}

/* The calling thread is lane 0 (it registers first, at BEGIN). Workers
 * only take the mutex while tracing: timing alone costs two clock reads. */
static void probe(void *ctx, int instr, int event) {
    Profile *p = ctx;
    bool chunk = event == PROBE_CHUNK_BEGIN || event == PROBE_CHUNK_END;
    if (chunk && !p->tracing && !p->cpu)
        return;
    double t = now_s();
    switch ((ProbeEvent)event) {
    case PROBE_BEGIN:
        p->current = instr;
        p->begin[instr] = t;
        return;
    case PROBE_END:
        p->total[instr] += t - p->begin[instr];
        p->run_t[instr] += t - p->begin[instr];
        p->ran[instr] = p->ran_now[instr] = true;
        if (p->tracing) {
            pthread_mutex_lock(&p->mu);
            add_event(p, instr, lane_of_self(p), p->begin[instr], t);
            pthread_mutex_unlock(&p->mu);
        }
        return;
    case PROBE_CHUNK_BEGIN:
    case PROBE_CHUNK_END:
        pthread_mutex_lock(&p->mu);
        int lane = lane_of_self(p);
        if (event == PROBE_CHUNK_BEGIN)
            p->lane_start[lane] = t;
        else if (p->tracing)
            add_event(p, -1 - p->current, lane, p->lane_start[lane], t);
        pthread_mutex_unlock(&p->mu);
        /* read outside the mutex: the CPU time of this thread's share alone */
        if (p->cpu && event == PROBE_CHUNK_BEGIN)
            p->lane_cpu_start[lane] = thread_cpu_s();
        else if (p->cpu)
            p->lane_cpu[p->current * MAX_LANES + lane] += thread_cpu_s() - p->lane_cpu_start[lane];
        return;
    }
}

static Profile *profile_new(const Backend *be, BackendExec *e) {
    Profile *p = calloc(1, sizeof *p);
    p->prog = be->program(e);
    for (const LirInstr *i = p->prog->first; i; i = i->next)
        p->n++;
    p->instr = calloc((size_t)p->n + 1, sizeof *p->instr);
    p->begin = calloc((size_t)p->n + 1, sizeof *p->begin);
    p->total = calloc((size_t)p->n + 1, sizeof *p->total);
    p->ran = calloc((size_t)p->n + 1, sizeof *p->ran);
    p->run_t = calloc((size_t)p->n + 1, sizeof *p->run_t);
    p->best = calloc((size_t)p->n + 1, sizeof *p->best);
    p->ran_now = calloc((size_t)p->n + 1, sizeof *p->ran_now);
    for (int k = 0; p->best && k <= p->n; k++)
        p->best[k] = -1; /* ran in no run yet */
    int k = 0;
    for (const LirInstr *i = p->prog->first; i; i = i->next)
        p->instr[k++] = i;
    const char *cpu = getenv("GLOWC_PROFILE_CPU");
    p->cpu = cpu && cpu[0] && strcmp(cpu, "0");
    if (p->cpu)
        p->lane_cpu = calloc((size_t)(p->n + 1) * MAX_LANES, sizeof *p->lane_cpu);
    p->cpu = p->lane_cpu != NULL;
    pthread_mutex_init(&p->mu, NULL);
    return p;
}

void profile_free(Profile *p) {
    if (!p)
        return;
    pthread_mutex_destroy(&p->mu);
    free(p->instr);
    free(p->begin);
    free(p->total);
    free(p->ran);
    free(p->run_t);
    free(p->best);
    free(p->ran_now);
    free(p->ev);
    free(p->lane_cpu);
    free(p);
}

static bool run_once(const Backend *be, BackendExec *e, Tensor *const *inputs, DiagList *d) {
    Arena *a = arena_new();
    const LirProgram *p = be->program(e);
    Tensor **outs = arena_alloc_array(a, (size_t)p->nbufs + 1, sizeof(Tensor *));
    bool ok = be->run(e, inputs, outs, a, d);
    arena_destroy(a);
    return ok;
}

Profile *profile_run(const Backend *be, BackendExec *e, Tensor *const *inputs, int warm, int runs,
                     bool trace, DiagList *d) {
    for (int k = 0; k < warm; k++)
        if (!run_once(be, e, inputs, d))
            return NULL;
    Profile *p = profile_new(be, e);
    if (!be->set_probe(e, probe, p)) {
        diag_error(d, NULL, "the native code was compiled without instrumentation");
        profile_free(p);
        return NULL;
    }
    bool ok = true;
    for (int k = 0; ok && k < runs; k++) {
        p->tracing = trace && k == runs - 1;
        p->nlanes = 0;
        lane_of_self(p); /* the caller is lane 0 */
        p->run_start = now_s();
        ok = run_once(be, e, inputs, d);
        p->wall += now_s() - p->run_start;
        for (int i = 0; i < p->n; i++) {
            if (p->ran_now[i] && (p->best[i] < 0 || p->run_t[i] < p->best[i]))
                p->best[i] = p->run_t[i];
            p->run_t[i] = 0;
            p->ran_now[i] = false;
        }
    }
    p->runs = runs;
    be->set_probe(e, NULL, NULL);
    if (!ok) {
        profile_free(p);
        return NULL;
    }
    return p;
}

double profile_total_ms(const Profile *p) {
    double sum = 0;
    for (int k = 0; k < p->n; k++)
        sum += p->total[k];
    return sum * 1e3 / (p->runs ? p->runs : 1);
}

/* Multiply-adds count two. Only the kinds whose time is arithmetic. */
static double instr_flops(const LirInstr *i) {
    if (i->kind < IK_FIRST_COMPUTE || i->nops < 2)
        return 0;
    const Type *y = &i->ops[0]->type, *x = &i->ops[1]->type;
    switch (NODE_OF_IK(i->kind)) {
    case NK_CONV: {
        const Type *w = &i->ops[2]->type;
        return 2.0 * (double)type_numel(y) * (double)(type_numel(w) / w->dims[0]);
    }
    case NK_CONV_TRANSPOSE: { /* each input element meets (M/group) x taps weights */
        const Type *w = &i->ops[2]->type;
        return 2.0 * (double)type_numel(x) * (double)(type_numel(w) / w->dims[0]);
    }
    case NK_CONV_WEIGHT_GRAD: { /* each dW entry sums N x output positions terms */
        const Type *dy = &i->ops[2]->type;
        return 2.0 * (double)type_numel(y) * (double)(type_numel(dy) / dy->dims[1]);
    }
    case NK_WINOGRAD_CONV: /* the direct conv's count: an effective rate, comparable */
        return 2.0 * (double)type_numel(y) * (double)x->dims[1] * 9;
    case NK_FULLY_CONNECTED:
    case NK_MATMUL:
    case NK_GEMM:
        return 2.0 * (double)type_numel(y) * (double)x->dims[x->rank - 1];
    default: return 0;
    }
}

double profile_program_flops(const LirProgram *p) {
    double sum = 0;
    for (const LirInstr *i = p ? p->first : NULL; i; i = i->next)
        sum += instr_flops(i);
    return sum;
}

typedef struct Row {
    int instr;
    double total;
} Row;

static int by_time(const void *a, const void *b) {
    const Row *x = a, *y = b;
    return x->total > y->total ? -1 : x->total < y->total ? 1 : x->instr - y->instr;
}

static void shape_str(const Type *t, char *buf, size_t size) {
    int n = snprintf(buf, size, "%s", t->rank ? "" : "scalar");
    for (int k = 0; k < t->rank && n >= 0 && (size_t)n < size; k++)
        n += snprintf(buf + n, size - (size_t)n, k ? "x%lld" : "%lld", (long long)t->dims[k]);
}

void profile_print(const Profile *p, double peak_gflops, double end_to_end_ms, StrBuf *out) {
    Row *rows = calloc((size_t)p->n + 1, sizeof *rows);
    int nrows = 0;
    double runs = p->runs ? p->runs : 1, sum_ms = profile_total_ms(p);
    for (int k = 0; k < p->n; k++)
        if (p->ran[k])
            rows[nrows++] = (Row){k, p->total[k]};
    qsort(rows, (size_t)nrows, sizeof *rows, by_time);
    sb_printf(out, "%4s %9s %9s %6s %8s %6s  ", "#", "ms", "min", "%", "GFLOP/s", "%peak");
    if (p->cpu)
        sb_printf(out, "%9s %9s  ", "cpu ms", "share ms");
    sb_printf(out, "%-18s %-16s %s\n", "kind", "shape", "node");
    double cpu_sum = 0, share_sum = 0;
    for (int r = 0; r < nrows; r++) {
        const LirInstr *i = p->instr[rows[r].instr];
        double ms = rows[r].total * 1e3 / runs, flops = instr_flops(i);
        char shape[96], gf[16] = "-", pk[16] = "-";
        shape_str(&i->ops[0]->type, shape, sizeof shape);
        if (flops > 0 && ms > 0) {
            double g = flops / (ms * 1e-3) * 1e-9;
            snprintf(gf, sizeof gf, "%.1f", g);
            if (peak_gflops > 0)
                snprintf(pk, sizeof pk, "%.1f", 100 * g / peak_gflops);
        }
        sb_printf(out, "%4d %9.3f %9.3f %6.2f %8s %6s  ", rows[r].instr, ms,
                  p->best[rows[r].instr] * 1e3, sum_ms > 0 ? 100 * ms / sum_ms : 0, gf, pk);
        if (p->cpu) {
            /* every thread's CPU time, and the largest share's */
            double cpu = 0, share = 0;
            for (int l = 0; l < MAX_LANES; l++) {
                double c = p->lane_cpu[rows[r].instr * MAX_LANES + l] * 1e3 / runs;
                cpu += c;
                share = c > share ? c : share;
            }
            cpu_sum += cpu;
            share_sum += share;
            sb_printf(out, "%9.3f %9.3f  ", cpu, share);
        }
        sb_printf(out, "%-18s %-16s %s\n", instr_kind_name(i->kind), shape,
                  i->name && i->name[0] ? i->name : "-");
    }
    double wall_ms = p->wall * 1e3 / runs;
    sb_printf(out, "%d instructions: per-node total %.3f ms, end-to-end %.3f ms (%.1f%%; means "
                   "of the same %d runs)\n",
              nrows, sum_ms, wall_ms, wall_ms > 0 ? 100 * sum_ms / wall_ms : 0, p->runs);
    if (end_to_end_ms > 0)
        sb_printf(out, "end-to-end without the probe: %.3f ms (median)\n", end_to_end_ms);
    if (p->cpu)
        sb_printf(out, "thread CPU time: %.3f ms over all threads, %.3f ms in the largest shares\n",
                  cpu_sum, share_sum);
    free(rows);
}

static json_t *trace_event(const Profile *p, const Event *e) {
    int instr = e->instr >= 0 ? e->instr : -1 - e->instr;
    const LirInstr *i = p->instr[instr];
    char shape[96];
    shape_str(&i->ops[0]->type, shape, sizeof shape);
    const char *name = i->name && i->name[0] ? i->name : instr_kind_name(i->kind);
    /* microseconds, as the format wants; a share of a parallel instruction
     * is named like the instruction, in category "thread" */
    return json_pack("{s:s, s:s, s:s, s:f, s:f, s:i, s:i, s:{s:s, s:s, s:i}}", "name", name, "cat",
                     e->instr >= 0 ? "instruction" : "thread", "ph", "X", "ts", e->start * 1e6,
                     "dur", e->dur * 1e6, "pid", 1, "tid", e->lane, "args", "kind",
                     instr_kind_name(i->kind), "shape", shape, "instr", instr);
}

bool profile_write_trace(const Profile *p, const char *path, DiagList *d) {
    json_t *events = json_array();
    for (int l = 0; l < p->nlanes; l++) {
        char lane[32];
        snprintf(lane, sizeof lane, l ? "worker %d" : "main", l);
        json_array_append_new(events, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name",
                                                "thread_name", "ph", "M", "pid", 1, "tid", l,
                                                "args", "name", lane));
    }
    for (int k = 0; k < p->nev; k++)
        json_array_append_new(events, trace_event(p, &p->ev[k]));
    json_t *root = json_pack("{s:o, s:s}", "traceEvents", events, "displayTimeUnit", "ms");
    char *text = root ? json_dumps(root, JSON_INDENT(1)) : NULL;
    json_decref(root);
    if (!text) {
        diag_error(d, NULL, "--trace: out of memory building the trace");
        return false;
    }
    FileOut f = {path, text, strlen(text)};
    bool ok = file_write_all(&f, 1, d);
    free(text);
    return ok;
}
