/* Contexts: a device, its OpenCL context and queue, the per-thread last
 * error, the mapping of OpenCL errors to statuses, and the program caches'
 * lifetime. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/driver_quirks.h"
#include "runtime/runtime_internal.h"
#include "util/alloc.h"
#include "util/env.h"
#include "util/log.h"

/* cl_nv_device_attribute_query (NVIDIA's cl_ext.h; the Khronos headers
 * Debian ships may lack it). */
#ifndef CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV
#define CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV 0x4000
#endif

const char *clf__cl_error_name(cl_int err)
{
    switch (err) {
#define E(x) case x: return #x;
    E(CL_SUCCESS) E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE) E(CL_COMPILER_NOT_AVAILABLE)
    E(CL_MEM_OBJECT_ALLOCATION_FAILURE) E(CL_OUT_OF_RESOURCES) E(CL_OUT_OF_HOST_MEMORY)
    E(CL_PROFILING_INFO_NOT_AVAILABLE) E(CL_MEM_COPY_OVERLAP) E(CL_BUILD_PROGRAM_FAILURE)
    E(CL_MAP_FAILURE) E(CL_MISALIGNED_SUB_BUFFER_OFFSET) E(CL_COMPILE_PROGRAM_FAILURE)
    E(CL_LINKER_NOT_AVAILABLE) E(CL_LINK_PROGRAM_FAILURE) E(CL_INVALID_VALUE)
    E(CL_INVALID_DEVICE_TYPE) E(CL_INVALID_PLATFORM) E(CL_INVALID_DEVICE) E(CL_INVALID_CONTEXT)
    E(CL_INVALID_QUEUE_PROPERTIES) E(CL_INVALID_COMMAND_QUEUE) E(CL_INVALID_HOST_PTR)
    E(CL_INVALID_MEM_OBJECT) E(CL_INVALID_BINARY) E(CL_INVALID_BUILD_OPTIONS) E(CL_INVALID_PROGRAM)
    E(CL_INVALID_PROGRAM_EXECUTABLE) E(CL_INVALID_KERNEL_NAME) E(CL_INVALID_KERNEL_DEFINITION)
    E(CL_INVALID_KERNEL) E(CL_INVALID_ARG_INDEX) E(CL_INVALID_ARG_VALUE) E(CL_INVALID_ARG_SIZE)
    E(CL_INVALID_KERNEL_ARGS) E(CL_INVALID_WORK_DIMENSION) E(CL_INVALID_WORK_GROUP_SIZE)
    E(CL_INVALID_WORK_ITEM_SIZE) E(CL_INVALID_GLOBAL_OFFSET) E(CL_INVALID_EVENT_WAIT_LIST)
    E(CL_INVALID_EVENT) E(CL_INVALID_OPERATION) E(CL_INVALID_BUFFER_SIZE) E(CL_INVALID_GLOBAL_WORK_SIZE)
    E(CL_IMAGE_FORMAT_MISMATCH) E(CL_IMAGE_FORMAT_NOT_SUPPORTED) E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    E(CL_DEVICE_PARTITION_FAILED) E(CL_KERNEL_ARG_INFO_NOT_AVAILABLE) E(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    E(CL_INVALID_IMAGE_SIZE) E(CL_INVALID_SAMPLER) E(CL_INVALID_GL_OBJECT)
    E(CL_INVALID_MIP_LEVEL) E(CL_INVALID_PROPERTY) E(CL_INVALID_IMAGE_DESCRIPTOR)
    E(CL_INVALID_COMPILER_OPTIONS) E(CL_INVALID_LINKER_OPTIONS) E(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef E
    default: return "CL_UNKNOWN_ERROR";
    }
}

clf_status clf__cl_status(cl_int err)
{
    switch (err) {
    case CL_OUT_OF_HOST_MEMORY:
    case CL_OUT_OF_RESOURCES:
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
        return CLF_ERR_OUT_OF_MEMORY;
    case CL_BUILD_PROGRAM_FAILURE:
    case CL_COMPILE_PROGRAM_FAILURE:
    case CL_LINK_PROGRAM_FAILURE:
    case CL_INVALID_BINARY:
        return CLF_ERR_BUILD;
    default:
        return CLF_ERR_OPENCL;
    }
}

/* The last failure's detail is kept per thread and per context, so that
 * threads sharing a context each read their own (as errno is per thread).
 * A thread's table hangs off one process-wide pthread key and is freed when
 * the thread exits; the destroying thread's entry goes with the context.
 * Entries are keyed by the context's id, never reused, so that a stale entry
 * of a destroyed context cannot show up on a new one at the same address.
 * Each entry is its own allocation: a pointer returned by
 * clf_context_last_error stays valid while other contexts' entries come
 * and go. */
typedef struct thread_error {
    uint64_t ctx_id;
    clf__strbuf sb;
} thread_error;

typedef struct thread_errors {
    thread_error **v;
    size_t n, cap;
} thread_errors;

static pthread_key_t errors_key;
static pthread_once_t errors_once = PTHREAD_ONCE_INIT;
static bool errors_key_ok;
static _Atomic uint64_t next_ctx_id = 1;

static void free_thread_errors(void *p)
{
    thread_errors *t = p;
    for (size_t i = 0; i < t->n; i++) {
        clf__sb_free(&t->v[i]->sb);
        clf__free(t->v[i]);
    }
    clf__free(t->v);
    clf__free(t);
}

static void make_errors_key(void) { errors_key_ok = pthread_key_create(&errors_key, free_thread_errors) == 0; }

/* The calling thread's error buffer for context id (made when create is
 * set; NULL when absent or out of memory). */
static clf__strbuf *thread_error_buf(uint64_t id, bool create)
{
    pthread_once(&errors_once, make_errors_key);
    if (!errors_key_ok)
        return NULL;
    thread_errors *t = pthread_getspecific(errors_key);
    for (size_t i = 0; t && i < t->n; i++)
        if (t->v[i]->ctx_id == id)
            return &t->v[i]->sb;
    if (!create)
        return NULL;
    if (!t) {
        t = clf__calloc(1, sizeof *t);
        if (!t || pthread_setspecific(errors_key, t) != 0) {
            clf__free(t);
            return NULL;
        }
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 4;
        thread_error **v = clf__realloc(t->v, cap * sizeof *v);
        if (!v)
            return NULL;
        t->v = v;
        t->cap = cap;
    }
    thread_error *e = clf__calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->ctx_id = id;
    t->v[t->n++] = e;
    return &e->sb;
}

/* Drops the calling thread's entry for context id, and its table once empty
 * (so that the main thread, whose key destructors never run, leaks none). */
static void thread_error_forget(uint64_t id)
{
    pthread_once(&errors_once, make_errors_key);
    if (!errors_key_ok)
        return;
    thread_errors *t = pthread_getspecific(errors_key);
    for (size_t i = 0; t && i < t->n; i++) {
        if (t->v[i]->ctx_id != id)
            continue;
        clf__sb_free(&t->v[i]->sb);
        clf__free(t->v[i]);
        t->v[i] = t->v[--t->n];
        break;
    }
    if (t && t->n == 0) {
        pthread_setspecific(errors_key, NULL);
        free_thread_errors(t);
    }
}

clf_status clf__ctx_fail(clf_context *ctx, clf_status status, const char *fmt, ...)
{
    if (!ctx)
        return status;
    clf__strbuf *sb = thread_error_buf(ctx->id, true);
    if (!sb)
        return status;
    clf__sb_clear(sb);
    sb->failed = false;
    va_list ap;
    va_start(ap, fmt);
    char small[1024];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof small) {
        char *big = clf__malloc((size_t)n + 1);
        if (big) {
            va_start(ap, fmt);
            vsnprintf(big, (size_t)n + 1, fmt, ap);
            va_end(ap);
            clf__sb_puts(sb, big);
            clf__free(big);
            return status;
        }
    }
    clf__sb_puts(sb, small);
    return status;
}

void clf__ctx_clear_error(clf_context *ctx)
{
    clf__strbuf *sb = thread_error_buf(ctx->id, false);
    if (sb)
        clf__sb_clear(sb);
}

static void write_msg(const clf_context_params *p, const char *msg)
{
    if (p && p->message && p->message_cap) {
        snprintf(p->message, p->message_cap, "%s", msg);
    }
}

/* Whether the queue's profiling timestamps measure anything: a fill of
 * 16 MiB timed by its event. A device that fills 16 MiB in under 300 ns
 * (53 TB/s) does not exist; rusticl's llvmpipe reports 0 to 3 ns for every
 * command (and a timer resolution of 0). Fake timestamps set
 * c->profiling_fake with the figures in c->profiling_why; a device where
 * the probe cannot run (no memory for the buffer) is taken at its word. */
static void check_profiling_clock(clf_context *c)
{
    const size_t bytes = (size_t)16 << 20;
    cl_int err;
    cl_mem buf = clCreateBuffer(c->cl, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (!buf)
        return;
    const cl_uint zero = 0;
    cl_ulong t0 = 0, t1 = 0, ns = 0;
    cl_event ev = NULL;
    struct timespec h0 = {0}, h1;
    /* The second fill is the one timed: the first may carry the buffer's
     * allocation on the device. */
    for (int rep = 0; rep < 2 && err == CL_SUCCESS; rep++) {
        if (ev)
            clReleaseEvent(ev);
        ev = NULL;
        err = clEnqueueFillBuffer(c->queue, buf, &zero, sizeof zero, 0, bytes, 0, NULL, &ev);
        if (err == CL_SUCCESS)
            err = clWaitForEvents(1, &ev);
        if (rep == 0)
            clock_gettime(CLOCK_MONOTONIC, &h0);
    }
    clock_gettime(CLOCK_MONOTONIC, &h1);
    if (err == CL_SUCCESS)
        err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
    if (err == CL_SUCCESS)
        err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
    if (ev)
        clReleaseEvent(ev);
    clReleaseMemObject(buf);
    if (err != CL_SUCCESS)
        return;
    ns = t1 >= t0 ? t1 - t0 : 0;
    double host_us = (double)(h1.tv_sec - h0.tv_sec) * 1e6 + (double)(h1.tv_nsec - h0.tv_nsec) * 1e-3;
    if (t1 < t0 || ns < 300) {
        c->profiling_fake = true;
        snprintf(c->profiling_why, sizeof c->profiling_why,
                 "%s's profiling timestamps are not real: a 16 MiB fill took %.0f us on the host and %llu ns by "
                 "its event", c->desc.device_name, host_us, (unsigned long long)ns);
        clf__log(CLF__LOG_PERF, "%s", c->profiling_why);
    }
}

/* Finishes a context around a chosen device: limits, the lock, the disk
 * cache, the check of its profiling clock. Fails only when the lock cannot
 * be made. */
static clf_status finish_context(clf_context *c, bool disable_disk_cache)
{
    size_t wg = 0;
    if (clGetDeviceInfo(c->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL) != CL_SUCCESS)
        wg = 64;
    c->max_local = wg;
    c->base_align = c->desc.base_align;
    size_t extlen = 0;
    if (clGetDeviceInfo(c->device, CL_DEVICE_EXTENSIONS, 0, NULL, &extlen) == CL_SUCCESS && extlen) {
        char *ext = clf__malloc(extlen + 1);
        if (ext && clGetDeviceInfo(c->device, CL_DEVICE_EXTENSIONS, extlen, ext, NULL) == CL_SUCCESS) {
            ext[extlen] = '\0';
            c->fp64 = strstr(ext, "cl_khr_fp64") != NULL;
        }
        clf__free(ext);
    }
    char vendor[128] = "";
    c->nvidia_gpu = c->desc.is_gpu &&
                    clGetDeviceInfo(c->device, CL_DEVICE_VENDOR, sizeof vendor - 1, vendor, NULL) == CL_SUCCESS &&
                    strstr(vendor, "NVIDIA") != NULL;
    /* cl_nv_device_attribute_query's CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV:
     * mma.sync m16n8k16 (the tensor-core forms) needs sm_80 or later. */
    cl_uint cc_major = 0;
    if (c->nvidia_gpu &&
        clGetDeviceInfo(c->device, CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV, sizeof cc_major, &cc_major, NULL) != CL_SUCCESS)
        cc_major = 0;
    c->nvidia_sm80 = cc_major >= 8;
    c->quirks = clf__driver_quirks(c->desc.platform_name, c->desc.device_name);
    c->one_program = clf__env_switch("CLFUSE_ONE_PROGRAM",
                                     strstr(c->desc.platform_name, "Portable Computing Language") != NULL);
    if (pthread_mutex_init(&c->lock, NULL) != 0)
        return CLF_ERR_OUT_OF_MEMORY;
    c->lock_ready = true;
    clf__disk_cache_init(c, disable_disk_cache);
    if (c->profiling)
        check_profiling_clock(c);
    return CLF_OK;
}

CLF_API clf_status clf_context_create(const clf_context_params *params, clf_context **out)
{
    char msg[512] = "";
    if (!out) {
        write_msg(params, "clf_context_create: out is NULL");
        return CLF_ERR_INVALID_ARGUMENT;
    }
    *out = NULL;
    clf_context *c = clf__calloc(1, sizeof *c);
    if (!c) {
        write_msg(params, "clf_context_create: out of memory");
        return CLF_ERR_OUT_OF_MEMORY;
    }
    c->id = atomic_fetch_add(&next_ctx_id, 1);
    const char *sel = params && params->device ? params->device : getenv("CLFUSE_DEVICE");
    uint32_t index = 0;
    clf_status st = clf__device_select(sel, &c->platform, &c->device, &index, msg, sizeof msg);
    if (st != CLF_OK)
        goto fail;
    clf__device_describe(c->platform, c->device, index, &c->desc);
    cl_int err;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)c->platform, 0};
    c->cl = clCreateContext(props, 1, &c->device, NULL, NULL, &err);
    if (!c->cl) {
        snprintf(msg, sizeof msg, "clCreateContext on %s: %s", c->desc.device_name, clf__cl_error_name(err));
        st = clf__cl_status(err);
        goto fail;
    }
    c->profiling = (params && params->profiling) || clf__log_enabled(CLF__LOG_PERF);
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
    /* clCreateCommandQueue is the OpenCL 1.2 call; every 2.x/3.0 driver keeps it. */
    c->queue = clCreateCommandQueue(c->cl, c->device, c->profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &err);
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
    if (!c->queue) {
        snprintf(msg, sizeof msg, "clCreateCommandQueue on %s: %s", c->desc.device_name, clf__cl_error_name(err));
        st = clf__cl_status(err);
        goto fail;
    }
    st = finish_context(c, params && params->disable_disk_cache);
    if (st != CLF_OK) {
        snprintf(msg, sizeof msg, "clf_context_create: pthread_mutex_init failed");
        goto fail;
    }
    clf__log(CLF__LOG_SCHEDULE, "context on device %u: %s (%s)", index, c->desc.device_name,
             c->desc.platform_name);
    *out = c;
    return CLF_OK;
fail:
    write_msg(params, msg);
    clf_context_destroy(&c);
    return st;
}

CLF_API clf_status clf_context_from_cl(cl_context context, cl_device_id device,
                                       cl_command_queue queue, clf_context **out)
{
    if (!out)
        return CLF_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (!context || !device || !queue)
        return CLF_ERR_INVALID_ARGUMENT;
    cl_context qctx = NULL;
    cl_device_id qdev = NULL;
    if (clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof qctx, &qctx, NULL) != CL_SUCCESS ||
        clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof qdev, &qdev, NULL) != CL_SUCCESS ||
        qctx != context || qdev != device)
        return CLF_ERR_INVALID_ARGUMENT;
    clf_context *c = clf__calloc(1, sizeof *c);
    if (!c)
        return CLF_ERR_OUT_OF_MEMORY;
    c->id = atomic_fetch_add(&next_ctx_id, 1);
    cl_platform_id plat = NULL;
    clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof plat, &plat, NULL);
    c->platform = plat;
    c->device = device;
    c->cl = context;
    c->queue = queue;
    clRetainContext(context);
    clRetainCommandQueue(queue);
    cl_command_queue_properties qp = 0;
    clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof qp, &qp, NULL);
    c->profiling = (qp & CL_QUEUE_PROFILING_ENABLE) != 0;
    clf__device_describe(plat, device, 0, &c->desc);
    if (finish_context(c, false) != CLF_OK) {
        clf_context_destroy(&c);
        return CLF_ERR_OUT_OF_MEMORY;
    }
    *out = c;
    return CLF_OK;
}

CLF_API void clf_context_destroy(clf_context **ctx)
{
    if (!ctx || !*ctx)
        return;
    clf_context *c = *ctx;
    clf__program_cache_clear(c);
    clf__disk_cache_free(c);
    thread_error_forget(c->id);
    if (c->lock_ready)
        pthread_mutex_destroy(&c->lock);
    if (c->queue)
        clReleaseCommandQueue(c->queue);
    if (c->cl)
        clReleaseContext(c->cl);
    clf__free(c);
    *ctx = NULL;
}

CLF_API const char *clf_context_last_error(const clf_context *ctx)
{
    if (!ctx)
        return "clf_context_last_error: ctx is NULL";
    const clf__strbuf *sb = thread_error_buf(ctx->id, false);
    return sb ? clf__sb_str(sb) : "";
}

CLF_API clf_status clf_context_device(const clf_context *ctx, clf_device_desc *out)
{
    if (!ctx || !out)
        return CLF_ERR_INVALID_ARGUMENT;
    *out = ctx->desc;
    return CLF_OK;
}

CLF_API cl_command_queue clf_context_queue(const clf_context *ctx) { return ctx ? ctx->queue : NULL; }

CLF_API cl_context clf_context_cl(const clf_context *ctx) { return ctx ? ctx->cl : NULL; }

CLF_API bool clf_context_timestamps_real(const clf_context *ctx)
{
    return ctx && ctx->profiling && !ctx->profiling_fake;
}
