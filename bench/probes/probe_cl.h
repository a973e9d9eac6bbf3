/* What the probe programs share: the device they run on and device-timed
 * medians. Header-only, so that each probe still builds with one gcc line. */
#ifndef CLFUSE_PROBE_CL_H
#define CLFUSE_PROBE_CL_H

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first GPU of any platform (with PROBE_DEVICE=cpu the first CPU), else
 * the first device of the first platform. */
static cl_device_id probe_device(void)
{
    cl_platform_id plats[8];
    cl_uint np = 0;
    cl_device_id dev = NULL;
    clGetPlatformIDs(8, plats, &np);
    cl_int err = CL_DEVICE_NOT_FOUND;
    const char *want = getenv("PROBE_DEVICE"); /* "cpu": the first CPU device instead */
    const cl_device_type type = want && strcmp(want, "cpu") == 0 ? CL_DEVICE_TYPE_CPU : CL_DEVICE_TYPE_GPU;
    for (cl_uint i = 0; i < np && err; ++i)
        err = clGetDeviceIDs(plats[i], type, 1, &dev, NULL);
    if (err && np)
        clGetDeviceIDs(plats[0], CL_DEVICE_TYPE_ALL, 1, &dev, NULL);
    return dev;
}

static int probe_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* -D<name>=<int> in compiler options opts, else dflt. */
static inline int probe_macro(const char *opts, const char *name, int dflt)
{
    char key[32];
    snprintf(key, sizeof key, "-D%s=", name);
    const char *p = strstr(opts, key);
    return p ? atoi(p + strlen(key)) : dflt;
}

/* The median device time (profiling events, queue q made with profiling)
 * of runs launches of kernel k over global/local work-items after three
 * untimed ones; with k NULL, of copies of bytes from a to b. flush (NULL:
 * none), a buffer of 128 MiB: a copy within it before each launch, so
 * that the launch finds nothing of its own in the L2. -1 when a launch
 * fails. */
static double probe_median_ms(cl_command_queue q, cl_kernel k, size_t global, size_t local, cl_mem a, cl_mem b,
                              size_t bytes, int runs, cl_mem flush)
{
    double *t = malloc((size_t)(runs > 0 ? runs : 1) * sizeof *t), med = -1;
    for (int i = -3; t && i < runs; ++i) {
        cl_event e;
        if (flush)
            clEnqueueCopyBuffer(q, flush, flush, 0, (size_t)64 << 20, (size_t)64 << 20, 0, NULL, NULL);
        cl_int err = k ? clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, &e)
                       : clEnqueueCopyBuffer(q, a, b, 0, 0, bytes, 0, NULL, &e);
        if (err != CL_SUCCESS)
            goto out;
        clWaitForEvents(1, &e);
        cl_ulong t0 = 0, t1 = 0;
        clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
        clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
        clReleaseEvent(e);
        if (i >= 0)
            t[i] = (double)(t1 - t0) * 1e-6;
    }
    if (t && runs > 0) {
        qsort(t, (size_t)runs, sizeof *t, probe_cmp);
        med = t[runs / 2];
    }
out:
    free(t);
    return med;
}

#endif
