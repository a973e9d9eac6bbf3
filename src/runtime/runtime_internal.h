/* Internals shared by the runtime's files: the context and executable
 * structures, error recording and the program cache. */
#ifndef CLFUSE_RUNTIME_INTERNAL_H
#define CLFUSE_RUNTIME_INTERNAL_H

#include "clfuse/runtime.h"
#include "planner/planner.h"
#include "util/strbuf.h"

typedef struct clf__cached_program {
    uint64_t hash;
    char *source;
    char *options;
    cl_program program;
} clf__cached_program;

struct clf_context {
    cl_platform_id platform;
    cl_device_id device;
    cl_context cl;
    cl_command_queue queue;
    clf_device_desc desc;
    bool profiling;
    size_t max_local;
    clf__strbuf error; /* the last failure's detail */
    clf__cached_program *programs;
    size_t nprograms, cap_programs;
};

typedef struct clf__io {
    char *name;
    clf_dtype dtype;
    int rank;
    int64_t shape[CLF_MAX_RANK];
    uint64_t bytes;
    uint32_t buffer; /* plan buffer id */
} clf__io;

typedef struct clf__exe_kernel {
    char *name, *ops, *source;
    cl_kernel kernel;
    uint32_t *params;
    uint32_t nparams;
    uint32_t *nodes; /* the plan kernel's ops, for clf_executable_kernel_nodes */
    uint32_t nnodes;
    bool wide_index;
    uint64_t numel;
    size_t global, local;
} clf__exe_kernel;

struct clf_executable {
    clf_context *ctx;
    clf__io *inputs, *outputs;
    size_t ninputs, noutputs;
    uint32_t nbuffers;
    clf__plan_buffer *buffers; /* the plan's buffer table */
    cl_mem *owned;             /* per buffer: constants and intermediates (else NULL) */
    clf__exe_kernel *kernels;
    size_t nkernels;
    clf_plan_stats stats;
    cl_mem *host_staging; /* per buffer: inputs and outputs for clf_run_host */
    cl_event *events;     /* per kernel: events of the last run (NULL when skipped) */
    bool ran;
};

/* Records the last failure on ctx and returns status. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
clf_status clf__ctx_fail(clf_context *ctx, clf_status status, const char *fmt, ...);
void clf__ctx_clear_error(clf_context *ctx);
const char *clf__cl_error_name(cl_int err);

/* Builds source for the context's device or returns the cached program
 * (retained for the caller). A build failure records the build log. */
clf_status clf__program_get(clf_context *ctx, const char *source, const char *options,
                            cl_program *out);
void clf__program_cache_clear(clf_context *ctx);

/* Fills desc from an OpenCL device. */
void clf__device_describe(cl_platform_id platform, cl_device_id device, uint32_t index,
                          clf_device_desc *desc);
/* Chooses a device by selector (see clf_context_params.device). */
clf_status clf__device_select(const char *selector, cl_platform_id *platform, cl_device_id *device,
                              uint32_t *index, char *msg, size_t cap);

#endif
