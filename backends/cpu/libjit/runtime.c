/* The runtime a generated program calls for threads: a small pool of
 * pthreads that split a kernel's outer loop into contiguous ranges, one per
 * thread, the caller taking the first, each range claimed in pieces that
 * an idle thread may take over (LJ_PIECES). Compiled into every program (JIT,
 * executable, bundle), so the generated code needs only libc and pthreads.
 *
 * A model is a sequence of a few hundred kernel calls of 5-500 us each, one
 * parallel region per call. Waking a thread through a condition variable
 * costs 10-50 us under a hypervisor -- as much as the smaller calls -- so
 * the workers spin on the job counter between calls, and sleep only after
 * SPIN_NS without work (between inferences). The caller waits for the
 * workers by spinning too: the regions are short and balanced. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/cpu/exe/model_info.h" /* the runtime's interface to executables */
#include "backends/cpu/libjit/libjit.h"

enum { MAX_THREADS = 64 };

/* How long an idle worker spins before it sleeps: long enough to bridge
 * the gap between two kernels (and the caller's own work between them),
 * short enough not to burn a core between inferences for long. */
#define SPIN_NS 2000000L
/* Spins (about 10 us) before a waiting thread also yields its core. */
#define YIELD_AFTER 2000

/* Each thread's range of a job is cut into LJ_PIECES pieces (libjit.h),
 * and a piece is claimed, not assigned: a thread runs the pieces of its own
 * range front to back, then takes from the back of the others' ranges
 * every piece no thread has begun. When another process holds a thread's
 * core (a loaded machine), the running threads do its pieces, instead of
 * every call waiting out the other process's time slice; with the cores
 * free, each thread runs its own range, in LJ_PIECES calls of the kernel.
 * Two, because finer pieces repeat set-up work: bench_conv --split 8
 * against 4 (four and two pieces for each of 2 threads) repeats +3%
 * against -2% of ResNet-50's conv work. Pieces are ranges of whole units,
 * the same ones whoever runs them, so the results are the same bits. */

struct LibjitRuntime {
    int nthreads;
    pthread_t threads[MAX_THREADS];
    /* the job being run, published by `generation` (release) */
    LibjitWorker worker;
    void *const *ops;
    int64_t n;
    _Atomic long generation;
    /* Piece k of thread i's range: piece[i * LJ_PIECES + k] (run_piece). The
     * job's fields are read only by a thread that has claimed a piece, and
     * rewritten only when no piece is RUNNING. */
    _Atomic long piece[MAX_THREADS * LJ_PIECES];
    _Atomic int asleep; /* workers blocked on `wake` */
    _Atomic bool stop;
    pthread_mutex_t mutex;
    pthread_cond_t wake;
    LjScratch scratch[MAX_THREADS]; /* thread i's, touched by thread i alone */
    LjShared shared;                /* every thread's, within one call */
    /* GLOWC_RUNTIME_STATS set: where the threads' time goes (RtStats),
     * printed to stderr by libjit_runtime_free; NULL otherwise, so that
     * the release path pays one test of it per call and per piece. */
    struct RtStats *stats;
};

/* Wall time of the parallel calls (the caller's, from handing out a job
 * to its return), the part of it the caller spent waiting at the end for
 * a piece another thread was running, and each thread's time inside
 * pieces: 1 - busy / (threads x span) is what the split and the hand-offs
 * lose. A thread writes only its own line. */
typedef struct RtThreadStats {
    /* taken: pieces of another's range; sleeps: waits for a job that outlasted SPIN_NS */
    _Alignas(64) long busy_ns, pieces, taken, sleeps;
} RtThreadStats;

struct RtStats {
    long calls, span_ns, wait_ns, waits; /* waits: calls where the caller waited over 1 us */
    RtThreadStats thread[MAX_THREADS];
};

typedef struct WorkerArg {
    LibjitRuntime *rt;
    int index;
} WorkerArg;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* A piece is PENDING until one thread claims it (-> RUNNING -> DONE);
 * its state word is the job's generation g times PIECE_STATES plus that. */
typedef enum PieceState { PENDING, RUNNING, DONE, PIECE_STATES } PieceState;

/* Claims piece `piece` of job g and runs it with scratch sc; false if
 * another thread claimed it first, or the job is no longer g (then the
 * job's fields may already be the next job's: they are read only after
 * the claim). */
static bool run_piece(LibjitRuntime *rt, int piece, long g, LjScratch *sc) {
    long want = g * PIECE_STATES + PENDING;
    if (!atomic_compare_exchange_strong_explicit(&rt->piece[piece], &want,
                                                 g * PIECE_STATES + RUNNING,
                                                 memory_order_acquire, memory_order_relaxed))
        return false;
    int64_t lo, hi;
    lj_piece_bounds(rt->n, rt->nthreads, piece, &lo, &hi);
    if (rt->stats) {
        long t0 = now_ns();
        rt->worker(rt->ops, lo, hi, sc);
        RtThreadStats *ts = &rt->stats->thread[sc - rt->scratch];
        ts->busy_ns += now_ns() - t0;
        ts->pieces++;
        ts->taken += piece / LJ_PIECES != sc - rt->scratch;
    } else {
        rt->worker(rt->ops, lo, hi, sc);
    }
    atomic_store_explicit(&rt->piece[piece], g * PIECE_STATES + DONE, memory_order_release);
    return true;
}

/* Thread `index`'s share of job g: its own pieces, then the others' not
 * begun, each range from its back. */
static void run_share(LibjitRuntime *rt, int index, long g) {
    LjScratch *sc = &rt->scratch[index];
    for (int k = 0; k < LJ_PIECES; k++)
        run_piece(rt, index * LJ_PIECES + k, g, sc);
    for (int t = 1; t < rt->nthreads; t++) {
        int other = (index + t) % rt->nthreads;
        for (int k = LJ_PIECES - 1; k >= 0; k--)
            run_piece(rt, other * LJ_PIECES + k, g, sc);
    }
}

/* Waits for a generation other than `seen` (or stop): spinning, then
 * asleep. Returns the new generation. */
static long wait_for_job(LibjitRuntime *rt, int index, long seen) {
    long g;
    long deadline = 0;
    for (int spins = 0;; spins++) {
        g = atomic_load_explicit(&rt->generation, memory_order_acquire);
        if (g != seen || atomic_load_explicit(&rt->stop, memory_order_relaxed))
            return g;
        cpu_relax();
        if (spins > YIELD_AFTER)
            sched_yield();
        if ((spins & 1023) != 1023)
            continue;
        long t = now_ns();
        if (!deadline)
            deadline = t + SPIN_NS;
        else if (t > deadline)
            break;
    }
    if (rt->stats)
        rt->stats->thread[index].sleeps++;
    pthread_mutex_lock(&rt->mutex);
    atomic_fetch_add(&rt->asleep, 1);
    /* The caller bumps the generation, then looks at `asleep` under the
     * mutex: re-checking here, under the same mutex, loses no wake-up. */
    while ((g = atomic_load(&rt->generation)) == seen && !atomic_load(&rt->stop))
        pthread_cond_wait(&rt->wake, &rt->mutex);
    atomic_fetch_sub(&rt->asleep, 1);
    pthread_mutex_unlock(&rt->mutex);
    return g;
}

static void *thread_main(void *p) {
    WorkerArg *arg = p;
    LibjitRuntime *rt = arg->rt;
    int index = arg->index;
    free(arg);
    long seen = 0;
    for (;;) {
        seen = wait_for_job(rt, index, seen);
        if (atomic_load(&rt->stop))
            break;
        run_share(rt, index, seen);
    }
    return NULL;
}

/* nthreads < 1: every online CPU (the default of glowc's --threads and of
 * compiled executables). */
LibjitRuntime *libjit_runtime_new(int nthreads) {
    LibjitRuntime *rt = calloc(1, sizeof *rt);
    if (!rt)
        return NULL;
    if (nthreads < 1)
        nthreads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    rt->nthreads = nthreads < 1 ? 1 : nthreads > MAX_THREADS ? MAX_THREADS : nthreads;
    pthread_mutex_init(&rt->mutex, NULL);
    pthread_cond_init(&rt->wake, NULL);
    for (int i = 1; i < rt->nthreads; i++) {
        WorkerArg *arg = malloc(sizeof *arg);
        if (!arg) {
            rt->nthreads = i;
            break;
        }
        arg->rt = rt;
        arg->index = i;
        if (pthread_create(&rt->threads[i], NULL, thread_main, arg)) {
            free(arg);
            rt->nthreads = i; /* run with the threads we got */
            break;
        }
    }
    /* One thread has nothing to share: its kernels take their own paths
     * (the ones a --no-threads bundle takes). */
    for (int i = 0; rt->nthreads > 1 && i < rt->nthreads; i++)
        rt->scratch[i].shared = &rt->shared;
    const char *stats = getenv("GLOWC_RUNTIME_STATS");
    if (stats && stats[0] && strcmp(stats, "0") && rt->nthreads > 1) {
        /* aligned: the compiler may assume RtThreadStats' _Alignas */
        rt->stats = aligned_alloc(64, sizeof *rt->stats);
        if (rt->stats)
            memset(rt->stats, 0, sizeof *rt->stats);
    }
    return rt;
}

static void print_stats(const LibjitRuntime *rt) {
    const struct RtStats *st = rt->stats;
    if (!st->calls)
        return;
    double span = (double)st->span_ns, busy = 0;
    for (int i = 0; i < rt->nthreads; i++)
        busy += (double)st->thread[i].busy_ns;
    fprintf(stderr,
            "glowc runtime: %d threads, %ld parallel calls, %.1f us each; threads in pieces "
            "%.1f%% of it; caller waited at the end in %ld calls, %.2f us per call\n",
            rt->nthreads, st->calls, span / 1e3 / (double)st->calls,
            100 * busy / (span * rt->nthreads), st->waits,
            (double)st->wait_ns / 1e3 / (double)st->calls);
    for (int i = 0; i < rt->nthreads; i++)
        fprintf(stderr,
                "  thread %d: in pieces %.1f%% of the calls' time, %ld pieces, %ld of another's, "
                "slept %ld times\n",
                i, 100 * (double)st->thread[i].busy_ns / span, st->thread[i].pieces,
                st->thread[i].taken, st->thread[i].sleeps);
}

void libjit_runtime_free(LibjitRuntime *rt) {
    if (!rt)
        return;
    if (rt->stats)
        print_stats(rt);
    pthread_mutex_lock(&rt->mutex);
    atomic_store(&rt->stop, true);
    pthread_cond_broadcast(&rt->wake);
    pthread_mutex_unlock(&rt->mutex);
    for (int i = 1; i < rt->nthreads; i++)
        pthread_join(rt->threads[i], NULL);
    free(rt->stats);
    pthread_mutex_destroy(&rt->mutex);
    pthread_cond_destroy(&rt->wake);
    for (int i = 0; i < rt->nthreads; i++)
        lj_scratch_release(&rt->scratch[i]);
    lj_shared_free(&rt->shared);
    free(rt);
}

void libjit_runtime_free_strings(LibjitRuntime *rt) {
    for (int i = 0; rt && i < rt->nthreads; i++)
        lj_strs_free(&rt->scratch[i]);
}

void libjit_parallel(LibjitRuntime *rt, int64_t n, LibjitWorker worker, void *const *ops) {
    if (rt)
        lj_shared_reset(&rt->shared); /* published with the job, or used inline */
    if (!rt || rt->nthreads <= 1 || n <= 1) {
        worker(ops, 0, n > 0 ? n : 0, rt ? &rt->scratch[0] : NULL);
        return;
    }
    /* No piece of the last job is RUNNING (the caller waited), so no
     * thread reads these fields now. */
    long t0 = rt->stats ? now_ns() : 0;
    rt->worker = worker;
    rt->ops = ops;
    rt->n = n;
    long g = atomic_load_explicit(&rt->generation, memory_order_relaxed) + 1;
    for (int k = 0; k < rt->nthreads * LJ_PIECES; k++) {
        int64_t lo, hi;
        lj_piece_bounds(n, rt->nthreads, k, &lo, &hi);
        atomic_store_explicit(&rt->piece[k], g * PIECE_STATES + (lo < hi ? PENDING : DONE),
                              memory_order_release);
    }
    atomic_store(&rt->generation, g); /* seq_cst: ordered before `asleep` is read */
    if (atomic_load(&rt->asleep)) {
        pthread_mutex_lock(&rt->mutex);
        pthread_cond_broadcast(&rt->wake);
        pthread_mutex_unlock(&rt->mutex);
    }
    run_share(rt, 0, g);
    long t1 = rt->stats ? now_ns() : 0;
    /* Every piece is claimed now; a thread that lost its core mid-piece
     * (a loaded machine) is waited for by yielding, so that it can get it
     * back. */
    for (int k = 0; k < rt->nthreads * LJ_PIECES; k++)
        for (int spins = 0; atomic_load_explicit(&rt->piece[k], memory_order_acquire) ==
                            g * PIECE_STATES + RUNNING;
             spins++) {
            cpu_relax();
            if (spins > YIELD_AFTER)
                sched_yield();
        }
    if (rt->stats) {
        long t2 = now_ns();
        rt->stats->calls++;
        rt->stats->span_ns += t2 - t0;
        rt->stats->wait_ns += t2 - t1;
        rt->stats->waits += t2 - t1 > 1000;
    }
}

/* ---- the machine's FMA peak (glowc bench --per-node) --------------------------- */

enum { PEAK_CHAINS = 12 };

/* Twelve independent chains of 16-lane FMAs: more than latency (4 cycles)
 * times FMA ports (2) in flight, so the loop runs at the FMA units' rate,
 * never at one chain's latency. Named registers, not an array, so that no
 * optimisation level keeps them in memory. Each thread times its own loop
 * and stores its rate (flop/s; the result kept live through it): handing
 * the work to the threads is then not part of the peak. */
static __attribute__((noinline, min_vector_width(512))) void
fma_chunk(void *const *ops, int64_t lo, int64_t hi, LjScratch *sc) {
    typedef float v16 __attribute__((vector_size(64)));
    int64_t iters = *(const int64_t *)ops[0];
    double *rate = ops[1];
    float s = (float)lo;
    v16 m = {0}, c = {0};
    m += 0.9999f;
    c += 1e-6f;
    v16 a0 = c + s, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, a4 = a0 + 4, a5 = a0 + 5;
    v16 a6 = a0 + 6, a7 = a0 + 7, a8 = a0 + 8, a9 = a0 + 9, a10 = a0 + 10, a11 = a0 + 11;
    long t0 = now_ns();
    for (int64_t it = 0; it < iters; it++) {
#define LJ_FMA(a) a = __builtin_elementwise_fma(a, m, c)
        LJ_FMA(a0); LJ_FMA(a1); LJ_FMA(a2); LJ_FMA(a3); LJ_FMA(a4); LJ_FMA(a5);
        LJ_FMA(a6); LJ_FMA(a7); LJ_FMA(a8); LJ_FMA(a9); LJ_FMA(a10); LJ_FMA(a11);
#undef LJ_FMA
    }
    v16 sum = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;
    for (int l = 0; l < 16; l++)
        s += sum[l];
    long dt = now_ns() - t0;
    double flops = (double)iters * PEAK_CHAINS * 16 * 2;
    for (int64_t t = lo; t < hi; t++)
        rate[t] = (dt > 0 ? flops / ((double)dt * 1e-9) : 0) + (s != s ? 1 : 0);
}

/* One round of `iters` on every thread of rt at once: the sum of the
 * threads' FMA rates, flop/s. */
double libjit_fma_peak(LibjitRuntime *rt, int64_t iters) {
    double rate[MAX_THREADS] = {0};
    void *ops[2] = {&iters, rate};
    int n = rt ? rt->nthreads : 1;
    libjit_parallel(rt, n, fma_chunk, ops);
    double sum = 0;
    for (int t = 0; t < n; t++)
        sum += rate[t];
    return sum;
}

int libjit_failed(LibjitRuntime *rt) {
    for (int i = 0; rt && i < rt->nthreads; i++)
        if (rt->scratch[i].fail_at || rt->scratch[i].fail_why)
            return 1;
    return 0;
}

int64_t libjit_runtime_failure(LibjitRuntime *rt, const char **text) {
    int64_t at = 0;
    const char *why = NULL;
    *text = NULL;
    for (int i = 0; rt && i < rt->nthreads; i++) {
        LjScratch *sc = &rt->scratch[i];
        if (sc->fail_at && (!at || sc->fail_at < at)) {
            at = sc->fail_at;
            *text = sc->fail_text;
        }
        why = why ? why : sc->fail_why;
        sc->fail_at = 0;
        sc->fail_why = NULL;
    }
    if (!at && why) {
        *text = why;
        return LJ_FAILED_RUN;
    }
    return at - 1;
}
