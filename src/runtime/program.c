/* Getting a built OpenCL program for a source and build options: from the
 * context's memory cache, else from the on-disk cache, else built from
 * source and stored on disk. Safe to call from several threads on one
 * context: the memory cache is locked, builds run outside the lock. */
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_internal.h"
#include "util/alloc.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/strbuf.h"

void clf__program_cache_clear(clf_context *ctx)
{
    for (size_t i = 0; i < ctx->nprograms; i++) {
        clReleaseProgram(ctx->programs[i].program);
        clf__free(ctx->programs[i].source);
        clf__free(ctx->programs[i].options);
    }
    clf__free(ctx->programs);
    ctx->programs = NULL;
    ctx->nprograms = ctx->cap_programs = 0;
}

void clf__program_cache_counts(clf_context *ctx, clf__program_counts *out)
{
    pthread_mutex_lock(&ctx->lock);
    *out = ctx->counts;
    pthread_mutex_unlock(&ctx->lock);
}

/* The cached program for source and options, retained; NULL if absent.
 * Called with ctx->lock held. */
static cl_program lookup(clf_context *ctx, uint64_t h, const char *source, const char *options)
{
    for (size_t i = 0; i < ctx->nprograms; i++) {
        clf__cached_program *p = &ctx->programs[i];
        if (p->hash == h && strcmp(p->source, source) == 0 && strcmp(p->options, options) == 0) {
            clRetainProgram(p->program);
            return p->program;
        }
    }
    return NULL;
}

/* Adds prog to the memory cache (which takes its own reference); out of
 * memory only means it is not cached. Called with ctx->lock held. */
static void insert(clf_context *ctx, uint64_t h, const char *source, const char *options, cl_program prog)
{
    if (ctx->nprograms == ctx->cap_programs) {
        size_t cap = ctx->cap_programs ? ctx->cap_programs * 2 : 16;
        clf__cached_program *p = clf__realloc(ctx->programs, cap * sizeof *p);
        if (!p)
            return;
        ctx->programs = p;
        ctx->cap_programs = cap;
    }
    clf__cached_program entry = {h, clf__strdup(source), clf__strdup(options), prog};
    if (entry.source && entry.options) {
        clRetainProgram(prog);
        ctx->programs[ctx->nprograms++] = entry;
    } else {
        clf__free(entry.source);
        clf__free(entry.options);
    }
}

/* Builds source; a failure records the OpenCL error and the build log. */
static clf_status build_source(clf_context *ctx, const char *source, const char *options, cl_program *out,
                               cl_int *build_err)
{
    *out = NULL;
    cl_int err;
    size_t len = strlen(source);
    cl_program prog = clCreateProgramWithSource(ctx->cl, 1, &source, &len, &err);
    if (!prog)
        return clf__ctx_fail(ctx, clf__cl_status(err), "clCreateProgramWithSource: %s",
                             clf__cl_error_name(err));
    pthread_mutex_lock(&ctx->lock);
    ctx->counts.source_builds++;
    pthread_mutex_unlock(&ctx->lock);
    err = clBuildProgram(prog, 1, &ctx->device, options, NULL, NULL);
    if (build_err)
        *build_err = err;
    size_t loglen = 0;
    clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &loglen);
    char *log = clf__malloc(loglen + 1);
    if (log) {
        log[0] = '\0';
        clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, loglen, log, NULL);
        log[loglen] = '\0';
    }
    if (err == CL_SUCCESS && log && strspn(log, " \t\r\n") < strlen(log))
        /* Warnings, or what options such as -cl-nv-verbose ask the driver
         * to report (registers, spills). */
        clf__log(CLF__LOG_PERF, "build log (options \"%s\"):\n%s", options, log);
    if (err != CL_SUCCESS) {
        clf_status st = clf__ctx_fail(ctx, clf__cl_status(err) == CLF_ERR_OPENCL ? CLF_ERR_BUILD : clf__cl_status(err),
                                      "clBuildProgram: %s; build log:\n%s", clf__cl_error_name(err),
                                      log ? log : "(out of memory)");
        clf__free(log);
        clReleaseProgram(prog);
        return st;
    }
    clf__free(log);
    *out = prog;
    return CLF_OK;
}

clf_status clf__program_get(clf_context *ctx, const char *source, const char *options,
                            cl_program *out, cl_int *build_err)
{
    return clf__program_get_built(ctx, source, options, out, build_err, NULL);
}

clf_status clf__program_get_built(clf_context *ctx, const char *source, const char *options, cl_program *out,
                                  cl_int *build_err, bool *built)
{
    *out = NULL;
    if (built)
        *built = false;
    if (build_err)
        *build_err = CL_SUCCESS;
    /* CLFUSE_BUILD_OPTIONS: extra clBuildProgram options for every program
     * (part of the cache keys, as options are). */
    const char *extra = getenv("CLFUSE_BUILD_OPTIONS");
    if (options[0] == '\0' && extra)
        options = extra;
    const size_t slen = strlen(source);
    uint64_t h = clf__hash_words(clf__hash_words(CLF__HASH_SEED ^ slen, source, slen), options, strlen(options));
    pthread_mutex_lock(&ctx->lock);
    cl_program prog = lookup(ctx, h, source, options);
    if (prog)
        ctx->counts.memory_hits++;
    pthread_mutex_unlock(&ctx->lock);
    if (prog) {
        clf__log(CLF__LOG_CACHE, "memory hit for program %016llx", (unsigned long long)h);
        *out = prog;
        return CLF_OK;
    }
    clf__log(CLF__LOG_CACHE, "memory miss for program %016llx", (unsigned long long)h);
    prog = clf__disk_cache_load(ctx, source, options);
    if (!prog) {
        clf_status st = build_source(ctx, source, options, &prog, build_err);
        if (st != CLF_OK)
            return st;
        if (built)
            *built = true;
        clf__disk_cache_store(ctx, source, options, prog);
    }
    /* Another thread may have built the same program meanwhile: keep one. */
    pthread_mutex_lock(&ctx->lock);
    cl_program other = lookup(ctx, h, source, options);
    if (!other)
        insert(ctx, h, source, options, prog);
    pthread_mutex_unlock(&ctx->lock);
    if (other) {
        clReleaseProgram(prog);
        prog = other;
    }
    *out = prog;
    return CLF_OK;
}
