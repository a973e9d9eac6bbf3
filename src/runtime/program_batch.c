/* Getting the programs of several sources at once: a cold compile of a
 * many-kernel graph builds its programs in threads, each through
 * clf__program_get (memory cache, disk cache, build), so that a driver
 * that builds in parallel does; the results come back per source for the
 * caller to use in order.
 *
 * Whether it pays is the driver's, and on none measured did it (PoCL 3.1,
 * NVIDIA 580, rusticl: bench/results/2026-12-03-cold-compile-threads.md),
 * so a compile builds in the calling thread unless CLFUSE_BUILD_THREADS
 * asks for more, for a driver whose builds are long and run at once.
 *
 * Failures are kept per source (status, clBuildProgram's error, the
 * detail a worker thread recorded), because a thread's last error is its
 * own: the caller reports them as it reaches each kernel. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/program_batch.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/log.h"

enum { MAX_THREADS = 64 };

typedef struct batch {
    clf_context *ctx;
    clf__program_job *jobs;
    size_t n;
    _Atomic size_t next;
    _Atomic bool failed;
} batch;

static void run_job(clf_context *ctx, clf__program_job *j)
{
    const double t0 = clf__now_ms();
    j->status = clf__program_get_built(ctx, j->source, "", &j->program, &j->build_err, &j->built);
    j->ms = clf__now_ms() - t0;
    if (j->status != CLF_OK) {
        j->message = clf__strdup(clf_context_last_error(ctx));
        clf__ctx_clear_error(ctx);
    }
}

/* Jobs are claimed in order; after a failure the rest are skipped: the
 * caller reaches the failed one first and reports it, and a driver that
 * refuses a form (inline PTX) is not made to build every kernel in it. */
static void *worker(void *arg)
{
    batch *b = arg;
    for (;;) {
        const size_t i = atomic_fetch_add(&b->next, 1);
        if (i >= b->n)
            break;
        if (atomic_load(&b->failed)) {
            b->jobs[i].skipped = true;
            continue;
        }
        run_job(b->ctx, &b->jobs[i]);
        if (b->jobs[i].status != CLF_OK)
            atomic_store(&b->failed, true);
    }
    return NULL;
}

clf_status clf__program_batch_threads(clf_context *ctx, unsigned *out)
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
        jobs[i].skipped = false;
    }
    batch b = {.ctx = ctx, .jobs = jobs, .n = n};
    atomic_init(&b.next, 0);
    atomic_init(&b.failed, false);
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
