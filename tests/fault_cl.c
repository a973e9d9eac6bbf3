/* The OpenCL fault injector (fault_cl.h). */
#define _GNU_SOURCE
#include "fault_cl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAULT_API __attribute__((visibility("default")))

enum { F_BUFFER, F_SUBBUFFER, F_PROG_SRC, F_PROG_BIN, F_BUILD, F_KERNEL, F_NDRANGE, F_WRITE, F_READ, F_MARKER,
       NFAULT, C_FINISH = NFAULT, C_WAIT, NCOUNT };

FAULT_API const char *const clf_fault_functions[] = {
    "clCreateBuffer", "clCreateSubBuffer", "clCreateProgramWithSource", "clCreateProgramWithBinary",
    "clBuildProgram", "clCreateKernel", "clEnqueueNDRangeKernel", "clEnqueueWriteBuffer",
    "clEnqueueReadBuffer", "clEnqueueMarkerWithWaitList", "clFinish", "clWaitForEvents"};
FAULT_API const unsigned clf_fault_nfunctions = NFAULT;

enum { L_MEM, L_KERNEL, L_PROGRAM, L_EVENT, NLIVE };
static const char *const live_names[NLIVE] = {"mem", "kernel", "program", "event"};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long calls[NCOUNT], armed_at[NFAULT], injected;
static cl_int armed_err[NFAULT];
static long live[NLIVE];
/* clf_fault_cap_work_group: the largest work-group any kernel allows (0: no cap). */
static size_t wg_cap;
/* clf_fault_understate_work_group: what the query reports, launches unaffected. */
static size_t wg_said;

static int index_of(const char *fn)
{
    for (int i = 0; i < NCOUNT; i++)
        if (strcmp(clf_fault_functions[i], fn) == 0)
            return i;
    return -1;
}

FAULT_API int clf_fault_arm(const char *fn, unsigned long nth, cl_int err)
{
    int i = index_of(fn);
    if (i < 0 || i >= NFAULT || nth == 0)
        return -1;
    pthread_mutex_lock(&lock);
    armed_at[i] = calls[i] + nth;
    armed_err[i] = err;
    pthread_mutex_unlock(&lock);
    return 0;
}

FAULT_API void clf_fault_clear(void)
{
    pthread_mutex_lock(&lock);
    memset(armed_at, 0, sizeof armed_at);
    pthread_mutex_unlock(&lock);
}

FAULT_API unsigned long clf_fault_calls(const char *fn)
{
    int i = index_of(fn);
    pthread_mutex_lock(&lock);
    unsigned long n = i < 0 ? 0 : calls[i];
    pthread_mutex_unlock(&lock);
    return n;
}

FAULT_API unsigned long clf_fault_injected(void)
{
    pthread_mutex_lock(&lock);
    unsigned long n = injected;
    pthread_mutex_unlock(&lock);
    return n;
}

FAULT_API long clf_fault_live(const char *kind)
{
    long n = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < NLIVE; i++)
        if (strcmp(live_names[i], kind) == 0)
            n = live[i];
    pthread_mutex_unlock(&lock);
    return n;
}

/* Counts a call of f; true (with *err) when this one must fail. */
static int fail_now(int f, cl_int *err)
{
    pthread_mutex_lock(&lock);
    unsigned long n = ++calls[f];
    int fail = f < NFAULT && armed_at[f] == n;
    if (fail) {
        armed_at[f] = 0;
        *err = armed_err[f];
        injected++;
    }
    pthread_mutex_unlock(&lock);
    return fail;
}

static void count_live(int kind, long delta)
{
    pthread_mutex_lock(&lock);
    live[kind] += delta;
    pthread_mutex_unlock(&lock);
}

/* The next definition of name after this library (the ICD loader's). */
static void *next(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) {
        fprintf(stderr, "fault_cl: no %s after the interposer\n", name);
        abort(); /* a broken test setup, not a libclfuse failure */
    }
    return p;
}

#define REAL(type, name)                                                                                   \
    static type real_##name;                                                                           \
    if (!real_##name) {                                                                                \
        void *p_ = next(#name);                                                                        \
        memcpy(&real_##name, &p_, sizeof p_);                                                          \
    }

/* ---- Creators ---------------------------------------------------------- */

typedef cl_mem (*create_buffer_fn)(cl_context, cl_mem_flags, size_t, void *, cl_int *);
FAULT_API cl_mem clCreateBuffer(cl_context c, cl_mem_flags flags, size_t size, void *host, cl_int *errcode_ret)
{
    REAL(create_buffer_fn, clCreateBuffer);
    cl_int err;
    if (fail_now(F_BUFFER, &err)) {
        if (errcode_ret)
            *errcode_ret = err;
        return NULL;
    }
    cl_mem m = real_clCreateBuffer(c, flags, size, host, errcode_ret);
    if (m)
        count_live(L_MEM, 1);
    return m;
}

typedef cl_mem (*create_sub_fn)(cl_mem, cl_mem_flags, cl_buffer_create_type, const void *, cl_int *);
FAULT_API cl_mem clCreateSubBuffer(cl_mem b, cl_mem_flags flags, cl_buffer_create_type t, const void *info,
                                   cl_int *errcode_ret)
{
    REAL(create_sub_fn, clCreateSubBuffer);
    cl_int err;
    if (fail_now(F_SUBBUFFER, &err)) {
        if (errcode_ret)
            *errcode_ret = err;
        return NULL;
    }
    cl_mem m = real_clCreateSubBuffer(b, flags, t, info, errcode_ret);
    if (m)
        count_live(L_MEM, 1);
    return m;
}

typedef cl_program (*prog_src_fn)(cl_context, cl_uint, const char **, const size_t *, cl_int *);
FAULT_API cl_program clCreateProgramWithSource(cl_context c, cl_uint n, const char **s, const size_t *l,
                                               cl_int *errcode_ret)
{
    REAL(prog_src_fn, clCreateProgramWithSource);
    cl_int err;
    if (fail_now(F_PROG_SRC, &err)) {
        if (errcode_ret)
            *errcode_ret = err;
        return NULL;
    }
    cl_program p = real_clCreateProgramWithSource(c, n, s, l, errcode_ret);
    if (p)
        count_live(L_PROGRAM, 1);
    return p;
}

typedef cl_program (*prog_bin_fn)(cl_context, cl_uint, const cl_device_id *, const size_t *,
                                  const unsigned char **, cl_int *, cl_int *);
FAULT_API cl_program clCreateProgramWithBinary(cl_context c, cl_uint n, const cl_device_id *d, const size_t *l,
                                               const unsigned char **b, cl_int *st, cl_int *errcode_ret)
{
    REAL(prog_bin_fn, clCreateProgramWithBinary);
    cl_int err;
    if (fail_now(F_PROG_BIN, &err)) {
        if (errcode_ret)
            *errcode_ret = err;
        return NULL;
    }
    cl_program p = real_clCreateProgramWithBinary(c, n, d, l, b, st, errcode_ret);
    if (p)
        count_live(L_PROGRAM, 1);
    return p;
}

typedef cl_int (*build_fn)(cl_program, cl_uint, const cl_device_id *, const char *,
                           void(CL_CALLBACK *)(cl_program, void *), void *);
FAULT_API cl_int clBuildProgram(cl_program p, cl_uint n, const cl_device_id *d, const char *o,
                                void(CL_CALLBACK *notify)(cl_program, void *), void *user)
{
    REAL(build_fn, clBuildProgram);
    cl_int err;
    if (fail_now(F_BUILD, &err))
        return err;
    return real_clBuildProgram(p, n, d, o, notify, user);
}

typedef cl_kernel (*kernel_fn)(cl_program, const char *, cl_int *);
FAULT_API cl_kernel clCreateKernel(cl_program p, const char *name, cl_int *errcode_ret)
{
    REAL(kernel_fn, clCreateKernel);
    cl_int err;
    if (fail_now(F_KERNEL, &err)) {
        if (errcode_ret)
            *errcode_ret = err;
        return NULL;
    }
    cl_kernel k = real_clCreateKernel(p, name, errcode_ret);
    if (k)
        count_live(L_KERNEL, 1);
    return k;
}

typedef cl_event (*user_event_fn)(cl_context, cl_int *);
FAULT_API cl_event clCreateUserEvent(cl_context c, cl_int *errcode_ret)
{
    REAL(user_event_fn, clCreateUserEvent);
    cl_event e = real_clCreateUserEvent(c, errcode_ret);
    if (e)
        count_live(L_EVENT, 1);
    return e;
}

/* ---- Enqueues ------------------------------------------------------------- */

typedef cl_int (*ndrange_fn)(cl_command_queue, cl_kernel, cl_uint, const size_t *, const size_t *,
                             const size_t *, cl_uint, const cl_event *, cl_event *);
FAULT_API cl_int clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel k, cl_uint dim, const size_t *off,
                                        const size_t *global, const size_t *local, cl_uint nw, const cl_event *w,
                                        cl_event *ev)
{
    REAL(ndrange_fn, clEnqueueNDRangeKernel);
    cl_int err;
    if (fail_now(F_NDRANGE, &err))
        return err;
    /* A device that allows work-groups of wg_cap only refuses larger ones
     * (as NVIDIA's does for a kernel whose registers do not fit). */
    if (wg_cap && local && local[0] > wg_cap)
        return CL_OUT_OF_RESOURCES;
    err = real_clEnqueueNDRangeKernel(q, k, dim, off, global, local, nw, w, ev);
    if (err == CL_SUCCESS && ev)
        count_live(L_EVENT, 1);
    return err;
}

typedef cl_int (*write_fn)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void *, cl_uint,
                           const cl_event *, cl_event *);
FAULT_API cl_int clEnqueueWriteBuffer(cl_command_queue q, cl_mem b, cl_bool blocking, size_t off, size_t n,
                                      const void *p, cl_uint nw, const cl_event *w, cl_event *ev)
{
    REAL(write_fn, clEnqueueWriteBuffer);
    cl_int err;
    if (fail_now(F_WRITE, &err))
        return err;
    err = real_clEnqueueWriteBuffer(q, b, blocking, off, n, p, nw, w, ev);
    if (err == CL_SUCCESS && ev)
        count_live(L_EVENT, 1);
    return err;
}

typedef cl_int (*read_fn)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, void *, cl_uint, const cl_event *,
                          cl_event *);
FAULT_API cl_int clEnqueueReadBuffer(cl_command_queue q, cl_mem b, cl_bool blocking, size_t off, size_t n, void *p,
                                     cl_uint nw, const cl_event *w, cl_event *ev)
{
    REAL(read_fn, clEnqueueReadBuffer);
    cl_int err;
    if (fail_now(F_READ, &err))
        return err;
    err = real_clEnqueueReadBuffer(q, b, blocking, off, n, p, nw, w, ev);
    if (err == CL_SUCCESS && ev)
        count_live(L_EVENT, 1);
    return err;
}

typedef cl_int (*marker_fn)(cl_command_queue, cl_uint, const cl_event *, cl_event *);
FAULT_API cl_int clEnqueueMarkerWithWaitList(cl_command_queue q, cl_uint nw, const cl_event *w, cl_event *ev)
{
    REAL(marker_fn, clEnqueueMarkerWithWaitList);
    cl_int err;
    if (fail_now(F_MARKER, &err))
        return err;
    err = real_clEnqueueMarkerWithWaitList(q, nw, w, ev);
    if (err == CL_SUCCESS && ev)
        count_live(L_EVENT, 1);
    return err;
}

/* ---- Counted only ------------------------------------------------------- */


FAULT_API void clf_fault_cap_work_group(size_t cap) { wg_cap = cap; }
FAULT_API void clf_fault_understate_work_group(size_t cap) { wg_said = cap; }

/* clf_fault_fake_timestamps: every profiling timestamp reads the same. */
static int fake_ts;
FAULT_API void clf_fault_fake_timestamps(int on) { fake_ts = on; }

typedef cl_int (*profiling_fn)(cl_event, cl_profiling_info, size_t, void *, size_t *);
FAULT_API cl_int clGetEventProfilingInfo(cl_event e, cl_profiling_info p, size_t size, void *value, size_t *size_ret)
{
    REAL(profiling_fn, clGetEventProfilingInfo);
    cl_int err = real_clGetEventProfilingInfo(e, p, size, value, size_ret);
    const cl_ulong t = 1000;
    if (err == CL_SUCCESS && fake_ts && value && size >= sizeof t)
        memcpy(value, &t, sizeof t);
    return err;
}

typedef cl_int (*kernel_wg_fn)(cl_kernel, cl_device_id, cl_kernel_work_group_info, size_t, void *, size_t *);
FAULT_API cl_int clGetKernelWorkGroupInfo(cl_kernel k, cl_device_id d, cl_kernel_work_group_info p, size_t size,
                                          void *value, size_t *size_ret)
{
    REAL(kernel_wg_fn, clGetKernelWorkGroupInfo);
    cl_int err = real_clGetKernelWorkGroupInfo(k, d, p, size, value, size_ret);
    size_t v;
    const size_t cap = wg_cap && (!wg_said || wg_cap < wg_said) ? wg_cap : wg_said;
    if (err == CL_SUCCESS && p == CL_KERNEL_WORK_GROUP_SIZE && cap && value && size >= sizeof v) {
        memcpy(&v, value, sizeof v);
        if (v > cap)
            memcpy(value, &cap, sizeof cap);
    }
    return err;
}

typedef cl_int (*finish_fn)(cl_command_queue);
FAULT_API cl_int clFinish(cl_command_queue q)
{
    REAL(finish_fn, clFinish);
    cl_int unused;
    fail_now(C_FINISH, &unused);
    return real_clFinish(q);
}

typedef cl_int (*wait_fn)(cl_uint, const cl_event *);
FAULT_API cl_int clWaitForEvents(cl_uint n, const cl_event *e)
{
    REAL(wait_fn, clWaitForEvents);
    cl_int unused;
    fail_now(C_WAIT, &unused);
    return real_clWaitForEvents(n, e);
}

/* ---- Reference counts --------------------------------------------------- */

#define REFCOUNT(obj_t, Name, kind)                                                                         \
    typedef cl_int (*Name##_fn)(obj_t);                                                                \
    FAULT_API cl_int clRetain##Name(obj_t o)                                                           \
    {                                                                                                  \
        REAL(Name##_fn, clRetain##Name);                                                               \
        cl_int err = real_clRetain##Name(o);                                                           \
        if (err == CL_SUCCESS)                                                                         \
            count_live(kind, 1);                                                                       \
        return err;                                                                                    \
    }                                                                                                  \
    FAULT_API cl_int clRelease##Name(obj_t o)                                                          \
    {                                                                                                  \
        REAL(Name##_fn, clRelease##Name);                                                              \
        cl_int err = real_clRelease##Name(o);                                                          \
        if (err == CL_SUCCESS)                                                                         \
            count_live(kind, -1);                                                                      \
        return err;                                                                                    \
    }

REFCOUNT(cl_mem, MemObject, L_MEM)
REFCOUNT(cl_kernel, Kernel, L_KERNEL)
REFCOUNT(cl_program, Program, L_PROGRAM)
REFCOUNT(cl_event, Event, L_EVENT)
