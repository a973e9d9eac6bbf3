/* Building OpenCL programs, with an in-memory cache per context keyed by
 * the source and build options. */
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_internal.h"
#include "util/strbuf.h"
#include "util/hash.h"
#include "util/log.h"

void clf__program_cache_clear(clf_context *ctx)
{
    for (size_t i = 0; i < ctx->nprograms; i++) {
        clReleaseProgram(ctx->programs[i].program);
        free(ctx->programs[i].source);
        free(ctx->programs[i].options);
    }
    free(ctx->programs);
    ctx->programs = NULL;
    ctx->nprograms = ctx->cap_programs = 0;
}

clf_status clf__program_get(clf_context *ctx, const char *source, const char *options,
                            cl_program *out)
{
    *out = NULL;
    uint64_t h = clf__hash_str(clf__hash_str(CLF__HASH_SEED, source), options);
    for (size_t i = 0; i < ctx->nprograms; i++) {
        clf__cached_program *p = &ctx->programs[i];
        if (p->hash == h && strcmp(p->source, source) == 0 && strcmp(p->options, options) == 0) {
            clf__log(CLF__LOG_CACHE, "memory hit for program %016llx", (unsigned long long)h);
            clRetainProgram(p->program);
            *out = p->program;
            return CLF_OK;
        }
    }
    clf__log(CLF__LOG_CACHE, "memory miss for program %016llx: building", (unsigned long long)h);
    cl_int err;
    size_t len = strlen(source);
    cl_program prog = clCreateProgramWithSource(ctx->cl, 1, &source, &len, &err);
    if (!prog)
        return clf__ctx_fail(ctx, err == CL_OUT_OF_HOST_MEMORY ? CLF_ERR_OUT_OF_MEMORY : CLF_ERR_OPENCL,
                             "clCreateProgramWithSource: %s", clf__cl_error_name(err));
    err = clBuildProgram(prog, 1, &ctx->device, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        size_t loglen = 0;
        clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &loglen);
        char *log = malloc(loglen + 1);
        if (log) {
            log[0] = '\0';
            clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, loglen, log, NULL);
            log[loglen] = '\0';
        }
        clf_status st = clf__ctx_fail(ctx, CLF_ERR_BUILD, "clBuildProgram: %s; build log:\n%s",
                                      clf__cl_error_name(err), log ? log : "(out of memory)");
        free(log);
        clReleaseProgram(prog);
        return st;
    }
    if (ctx->nprograms == ctx->cap_programs) {
        size_t cap = ctx->cap_programs ? ctx->cap_programs * 2 : 16;
        clf__cached_program *p = realloc(ctx->programs, cap * sizeof *p);
        if (!p) {
            *out = prog; /* usable, just not cached */
            return CLF_OK;
        }
        ctx->programs = p;
        ctx->cap_programs = cap;
    }
    clf__cached_program entry = {h, clf__strdup(source), clf__strdup(options), prog};
    if (entry.source && entry.options) {
        clRetainProgram(prog);
        ctx->programs[ctx->nprograms++] = entry;
    } else {
        free(entry.source);
        free(entry.options);
    }
    *out = prog;
    return CLF_OK;
}
