/* Getting the programs of several sources at once: a cold compile of a
 * many-kernel graph builds its programs in threads, each through
 * clf__program_get (memory cache, disk cache, build), so that a driver
 * that builds in parallel does; the results come back per source for the
 * caller to use in order.
 *
 * Whether it pays is the driver's, and on none measured it did (the tiny
 * Llama fixture cold, bench/cold_compile_threads.sh): PoCL 3.1 holds one
 * compiler lock per process (9.8-10.9 s serial, 9.8-10.6 s in 16 threads
 * on 16 cores); NVIDIA's 580 driver builds the 16 programs in 0.61-0.63 s
 * serial, 0.65-0.67 s in threads; rusticl's build is a few ms a program
 * (its llvmpipe compiles at the first launch). So the default is 1 thread,
 * the calling one; CLFUSE_BUILD_THREADS asks for more, for a driver whose
 * builds are long and run at once.
 *
 * Failures are kept per source (status, clBuildProgram's error, the
 * detail a worker thread recorded), because a thread's last error is its
 * own: the caller reports them as it reaches each kernel. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/program_batch.h"
#include "util/alloc.h"
#include "util/log.h"

enum { MAX_THREADS = 64 };

typedef struct batch {
    clf_context *ctx;
    clf__program_job *jobs;
    size_t n;
    _Atomic size_t next;
} batch;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void run_job(clf_context *ctx, clf__program_job *j)
{
    clf__program_counts before, after;
    clf__program_cache_counts(ctx, &before);
    const double t0 = now_ms();
    j->status = clf__program_get(ctx, j->source, "", &j->program, &j->build_err);
    j->ms = now_ms() - t0;
    clf__program_cache_counts(ctx, &after);
    /* Another thread's build may land between the two counts; the flag is
     * for the progress log only. */
    j->built = after.source_builds != before.source_builds;
    if (j->status != CLF_OK) {
        j->message = clf__strdup(clf_context_last_error(ctx));
        clf__ctx_clear_error(ctx);
    }
}

static void *worker(void *arg)
{
    batch *b = arg;
    for (;;) {
        const size_t i = atomic_fetch_add(&b->next, 1);
        if (i >= b->n)
            break;
        run_job(b->ctx, &b->jobs[i]);
    }
    return NULL;
}

clf_status clf__build_threads(clf_context *ctx, unsigned *out)
{
    const char *env = getenv("CLFUSE_BUILD_THREADS");
    if (env && *env) {
        char *end;
        const long v = strtol(env, &end, 10);
        if (*end != '\0' || v < 1 || v > MAX_THREADS)
            return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT,
                                 "clf_compile: CLFUSE_BUILD_THREADS=\"%s\" is not a number of threads from 1 to %d",
                                 env, MAX_THREADS);
        *out = (unsigned)v;
        return CLF_OK;
    }
    *out = 1;
    return CLF_OK;
}

void clf__program_get_many(clf_context *ctx, clf__program_job *jobs, size_t n, unsigned threads)
{
    for (size_t i = 0; i < n; i++) {
        jobs[i].program = NULL;
        jobs[i].status = CLF_OK;
        jobs[i].build_err = CL_SUCCESS;
        jobs[i].message = NULL;
        jobs[i].ms = 0.0;
        jobs[i].built = false;
    }
    batch b = {.ctx = ctx, .jobs = jobs, .n = n};
    atomic_init(&b.next, 0);
    size_t want = threads < n ? threads : n;
    pthread_t tid[MAX_THREADS];
    size_t started = 0;
    /* The calling thread works too; threads that cannot start leave their
     * share to the others. */
    for (; want > 1 && started < want - 1 && started < MAX_THREADS; started++)
        if (pthread_create(&tid[started], NULL, worker, &b) != 0)
            break;
    if (started)
        clf__log(CLF__LOG_CACHE, "getting %zu programs in %zu threads", n, started + 1);
    worker(&b);
    for (size_t t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
}

void clf__program_jobs_free(clf__program_job *jobs, size_t n)
{
    for (size_t i = 0; jobs && i < n; i++) {
        if (jobs[i].program)
            clReleaseProgram(jobs[i].program);
        clf__free(jobs[i].message);
    }
    clf__free(jobs);
}
