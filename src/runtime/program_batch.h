/* The programs of several sources got at once, in threads
 * (program_batch.c). */
#ifndef CLFUSE_PROGRAM_BATCH_H
#define CLFUSE_PROGRAM_BATCH_H

#include "runtime/runtime_internal.h"

typedef struct clf__program_job {
    const char *source; /* in: built with options "" */
    /* out */
    cl_program program; /* retained for the caller; NULL on failure */
    clf_status status;
    cl_int build_err;   /* clBuildProgram's error, CL_SUCCESS otherwise */
    char *message;      /* a failure's detail (heap), else NULL */
    double ms;          /* wall time of this source's get */
    bool built;         /* built from source (not from a cache) */
    bool skipped;       /* not got: an earlier job failed */
} clf__program_job;

/* The number of threads a compile builds its programs in:
 * CLFUSE_BUILD_THREADS (1 to 64), else 1 (program_batch.c says why). A
 * value that is not one fails with CLF_ERR_INVALID_ARGUMENT, naming it. */
clf_status clf__program_batch_threads(clf_context *ctx, unsigned *out);

/* Gets jobs[i].source's program for each of the n jobs through
 * clf__program_get, up to threads at once (the calling thread one of
 * them). Never fails as a whole: each job has its own status; once one
 * fails, the jobs not yet started are skipped. */
void clf__program_get_many(clf_context *ctx, clf__program_job *jobs, size_t n, unsigned threads);

/* Releases the jobs' programs and messages, then the array. */
void clf__program_jobs_free(clf__program_job *jobs, size_t n);

#endif
