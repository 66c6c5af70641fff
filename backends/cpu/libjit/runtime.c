/* The runtime a generated program calls for threads: a small pool of
 * pthreads that split a kernel's outer loop into contiguous ranges, one per
 * thread, the caller taking the first. Compiled into every program (JIT,
 * executable, bundle), so the generated code needs only libc and pthreads. */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "backends/cpu/libjit/libjit.h"

enum { MAX_THREADS = 64 };

struct LibjitRuntime {
    int nthreads;
    pthread_t threads[MAX_THREADS];
    pthread_mutex_t mutex;
    pthread_cond_t start, done;
    /* the job being run */
    LibjitWorker worker;
    void *const *ops;
    int64_t n;
    long generation;
    int busy;
    bool stop;
};

typedef struct WorkerArg {
    LibjitRuntime *rt;
    int index;
} WorkerArg;

static void run_range(LibjitRuntime *rt, int index) {
    int64_t per = (rt->n + rt->nthreads - 1) / rt->nthreads;
    int64_t lo = per * index, hi = lo + per < rt->n ? lo + per : rt->n;
    if (lo < hi)
        rt->worker(rt->ops, lo, hi);
}

static void *thread_main(void *p) {
    WorkerArg *arg = p;
    LibjitRuntime *rt = arg->rt;
    long seen = 0;
    pthread_mutex_lock(&rt->mutex);
    for (;;) {
        while (!rt->stop && rt->generation == seen)
            pthread_cond_wait(&rt->start, &rt->mutex);
        if (rt->stop)
            break;
        seen = rt->generation;
        pthread_mutex_unlock(&rt->mutex);
        run_range(rt, arg->index);
        pthread_mutex_lock(&rt->mutex);
        if (--rt->busy == 0)
            pthread_cond_signal(&rt->done);
    }
    pthread_mutex_unlock(&rt->mutex);
    free(arg);
    return NULL;
}

LibjitRuntime *libjit_runtime_new(int nthreads) {
    LibjitRuntime *rt = calloc(1, sizeof *rt);
    if (!rt)
        return NULL;
    rt->nthreads = nthreads < 1 ? 1 : nthreads > MAX_THREADS ? MAX_THREADS : nthreads;
    pthread_mutex_init(&rt->mutex, NULL);
    pthread_cond_init(&rt->start, NULL);
    pthread_cond_init(&rt->done, NULL);
    for (int i = 1; i < rt->nthreads; i++) {
        WorkerArg *arg = malloc(sizeof *arg);
        arg->rt = rt;
        arg->index = i;
        if (pthread_create(&rt->threads[i], NULL, thread_main, arg)) {
            free(arg);
            rt->nthreads = i; /* run with the threads we got */
            break;
        }
    }
    return rt;
}

void libjit_runtime_free(LibjitRuntime *rt) {
    if (!rt)
        return;
    pthread_mutex_lock(&rt->mutex);
    rt->stop = true;
    pthread_cond_broadcast(&rt->start);
    pthread_mutex_unlock(&rt->mutex);
    for (int i = 1; i < rt->nthreads; i++)
        pthread_join(rt->threads[i], NULL);
    pthread_mutex_destroy(&rt->mutex);
    pthread_cond_destroy(&rt->start);
    pthread_cond_destroy(&rt->done);
    free(rt);
}

void libjit_parallel(LibjitRuntime *rt, int64_t n, LibjitWorker worker, void *const *ops) {
    if (!rt || rt->nthreads <= 1 || n <= 1) {
        worker(ops, 0, n > 0 ? n : 0);
        return;
    }
    pthread_mutex_lock(&rt->mutex);
    rt->worker = worker;
    rt->ops = ops;
    rt->n = n;
    rt->busy = rt->nthreads - 1;
    rt->generation++;
    pthread_cond_broadcast(&rt->start);
    pthread_mutex_unlock(&rt->mutex);
    run_range(rt, 0);
    pthread_mutex_lock(&rt->mutex);
    while (rt->busy)
        pthread_cond_wait(&rt->done, &rt->mutex);
    pthread_mutex_unlock(&rt->mutex);
}
