/* The driver quirk table's reproducers (src/runtime/driver_quirks.h): for
 * every row whose platform has a device here, its case shows the driver
 * still does what the row says, so the table stays true. A row that no
 * longer reproduces fails, naming the row: the driver was fixed, and the
 * workaround and the README line may go. Exits 77 (skip) when no row's
 * platform has a device (rusticl needs RUSTICL_ENABLE=llvmpipe or a GPU;
 * NVIDIA's driver an NVIDIA GPU).
 *
 * Each reproducer runs in a child process, which makes its own OpenCL
 * context (PoCL hangs on a context made before fork()). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <CL/cl.h>

#include "runtime/driver_quirks.h"

/* The first device of the platform named name whose name starts with
 * device (NULL: any), or NULL. */
static cl_device_id device_of(const char *name, const char *device, cl_platform_id *plat)
{
    cl_platform_id ps[16];
    cl_uint np = 0;
    if (clGetPlatformIDs(16, ps, &np) != CL_SUCCESS)
        return NULL;
    for (cl_uint i = 0; i < np && i < 16; i++) {
        char pn[256] = "";
        cl_device_id ds[16];
        cl_uint nd = 0;
        clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, sizeof pn - 1, pn, NULL);
        if (strcmp(pn, name) != 0 || clGetDeviceIDs(ps[i], CL_DEVICE_TYPE_ALL, 16, ds, &nd) != CL_SUCCESS)
            continue;
        for (cl_uint j = 0; j < nd && j < 16; j++) {
            char dn[256] = "";
            clGetDeviceInfo(ds[j], CL_DEVICE_NAME, sizeof dn - 1, dn, NULL);
            if (!device || strncmp(dn, device, strlen(device)) == 0) {
                *plat = ps[i];
                return ds[j];
            }
        }
    }
    return NULL;
}

/* What a reproducer works with: the row's device, a context and a queue
 * on it, and (run_kernel) a kernel built from source. Any OpenCL failure
 * ends the child with status 2. */
typedef struct probe {
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue q;
} probe;

static probe probe_open(const char *platform, const char *device)
{
    probe P = {0};
    cl_platform_id plat;
    cl_int err;
    P.dev = device_of(platform, device, &plat);
    P.ctx = P.dev ? clCreateContext(NULL, 1, &P.dev, NULL, NULL, &err) : NULL;
    P.q = P.ctx ? clCreateCommandQueue(P.ctx, P.dev, 0, &err) : NULL;
    if (!P.q)
        exit(2);
    return P;
}

/* src's kernel k, built (its program released with it); status 2 when
 * it does not build. */
static cl_kernel build_kernel(const probe *P, const char *src)
{
    cl_int err;
    cl_program p = clCreateProgramWithSource(P->ctx, 1, &src, NULL, &err);
    if (!p || clBuildProgram(p, 1, &P->dev, "", NULL, NULL) != CL_SUCCESS)
        exit(2);
    cl_kernel k = clCreateKernel(p, "k", &err);
    clReleaseProgram(p); /* the kernel keeps it */
    if (!k)
        exit(2);
    return k;
}

/* Builds src's kernel k(__global T *buf[, uint n]), runs one work-item on
 * buf (bytes, in and out) and returns the seconds from the build to the
 * launch's end (rusticl compiles for the device at the kernel and its
 * first launch, so this is its build time). */
static double run_kernel(const probe *P, const char *src, void *buf, size_t bytes, const cl_uint *n)
{
    struct timespec t0, t1;
    cl_int err;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cl_kernel k = build_kernel(P, src);
    cl_mem m = clCreateBuffer(P->ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, buf, &err);
    size_t one = 1;
    if (!m || clSetKernelArg(k, 0, sizeof m, &m) != CL_SUCCESS ||
        (n && clSetKernelArg(k, 1, sizeof *n, n) != CL_SUCCESS) ||
        clEnqueueNDRangeKernel(P->q, k, 1, NULL, &one, &one, 0, NULL, NULL) != CL_SUCCESS ||
        clEnqueueReadBuffer(P->q, m, CL_TRUE, 0, bytes, buf, 0, NULL, NULL) != CL_SUCCESS)
        exit(2);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    clReleaseMemObject(m);
    clReleaseKernel(k);
    return (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
}

/* CLF__QUIRK_ABORTS_ON_FOREIGN_BINARY: a binary of garbage handed to
 * clCreateProgramWithBinary and clBuildProgram; the child dies of a signal
 * where the row holds, exits 0 where the driver refused it. */
static void foreign_binary(const probe *P)
{
    unsigned char bin[256];
    for (size_t i = 0; i < sizeof bin; i++)
        bin[i] = (unsigned char)(i * 37 + 11);
    const unsigned char *b = bin;
    size_t len = sizeof bin;
    cl_int st = CL_SUCCESS, err;
    cl_program p = clCreateProgramWithBinary(P->ctx, 1, &P->dev, &len, &b, &st, &err);
    if (p)
        err = clBuildProgram(p, 1, &P->dev, "", NULL, NULL);
    printf("    the driver returned: clCreateProgramWithBinary %d, binary status %d, clBuildProgram %d\n",
           p ? CL_SUCCESS : err, st, p ? err : 0);
    exit(0);
}

/* CLF__QUIRK_LOOP_TRIPS_65535: a loop of 100000 steps of an LCG (which no
 * compiler folds) against the host's; exits 0 when the device stopped at
 * 65535 steps, 1 when it ran them all. */
static uint32_t lcg(uint32_t c, uint32_t steps)
{
    for (uint32_t i = 0; i < steps; i++)
        c = c * 1664525u + 1013904223u;
    return c;
}

static void loop_trips(const probe *P)
{
    const char *src = "__kernel void k(__global uint *o, uint n)\n{\n    uint c = 7u;\n"
                      "    for (uint i = 0; i < n; ++i)\n        c = c * 1664525u + 1013904223u;\n    o[0] = c;\n}\n";
    const cl_uint n = 100000;
    uint32_t got[4] = {0};
    run_kernel(P, src, got, sizeof got, &n);
    printf("    a loop of %u steps gave %08x; all of them %08x, 65535 of them %08x\n", n, got[0], lcg(7u, n),
           lcg(7u, 65535));
    exit(got[0] == lcg(7u, 65535) ? 0 : 1);
}

/* CLF__QUIRK_ZERO_PLUS_X_FOLDED: 0.0f + x for an x of -0 read from memory;
 * exits 0 when the result is -0 (folded), 1 when +0 (IEEE). */
static void zero_plus_x(const probe *P)
{
    float v[2] = {1.0f, -0.0f};
    run_kernel(P, "__kernel void k(__global float *o) { o[0] = 0.0f + o[1]; }\n", v, sizeof v, NULL);
    printf("    0.0f + -0.0f gave %s0\n", signbit(v[0]) ? "-" : "+");
    exit(signbit(v[0]) ? 0 : 1);
}

/* CLF__QUIRK_SLOW_INLINED_CODE: the build time of four chained sin
 * written out for eight lanes against one lane (Mesa's shader cache off:
 * the setenv comes before the driver loads); exits 0 when eight lanes build at
 * least four times slower, 1 when not. */
static void slow_inlined_code(const probe *P)
{
    const char *one = "static float f(float x) { return sin(sin(sin(sin(x)))); }\n"
                      "__kernel void k(__global float *y) { y[0] = f(y[0]); }\n";
    const char *eight = "static float f(float x) { return sin(sin(sin(sin(x)))); }\n"
                        "__kernel void k(__global float *y)\n{\n    float8 v = vload8(0, y);\n"
                        "    v = (float8)(f(v.s0), f(v.s1), f(v.s2), f(v.s3), f(v.s4), f(v.s5), f(v.s6), f(v.s7));\n"
                        "    vstore8(v, 0, y);\n}\n";
    float y[8] = {0.5f};
    double t1 = run_kernel(P, one, y, sizeof y, NULL), t8 = run_kernel(P, eight, y, sizeof y, NULL);
    printf("    four chained sin build in %.2f s for one lane, %.2f s for eight\n", t1, t8);
    exit(t8 >= 4 * t1 ? 0 : 1);
}

/* CLF__QUIRK_OVERLAPPING_SUB_BUFFERS: sub-buffers [0, 320) and [0, 64) of
 * one buffer, each written by a kernel in that order, released in that
 * order; the child dies of a signal where the row holds, exits 0 where
 * the driver released both. */
static void overlapping_sub_buffers(const probe *P)
{
    cl_kernel k = build_kernel(P, "__kernel void k(__global float *o) { o[get_global_id(0)] = 1.0f; }\n");
    cl_int err;
    cl_mem whole = clCreateBuffer(P->ctx, CL_MEM_READ_WRITE, 4096, NULL, &err);
    if (!whole)
        exit(2);
    const cl_buffer_region regions[2] = {{0, 320}, {0, 64}};
    cl_mem sub[2];
    for (int i = 0; i < 2; i++) {
        size_t n = 16;
        sub[i] = clCreateSubBuffer(whole, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &regions[i], &err);
        if (!sub[i] || clSetKernelArg(k, 0, sizeof sub[i], &sub[i]) != CL_SUCCESS ||
            clEnqueueNDRangeKernel(P->q, k, 1, NULL, &n, NULL, 0, NULL, NULL) != CL_SUCCESS ||
            clFinish(P->q) != CL_SUCCESS)
            exit(2);
    }
    clReleaseMemObject(sub[0]);
    clReleaseMemObject(sub[1]);
    printf("    both sub-buffers released\n");
    exit(0);
}

int main(void)
{
    int ran = 0, failed = 0;
    for (size_t i = 0; i < clf__driver_quirk_count; i++) {
        const clf__driver_quirk *q = &clf__driver_quirk_table[i];
        fflush(stdout);
        /* Everything OpenCL in the child, the device lookup too: a driver
         * initialised before fork() has no worker threads after it. */
        pid_t pid = fork();
        if (pid == 0) {
            /* Before the driver is first loaded (device_of): Mesa reads
             * it when it makes the device, and a shader cache warm from an
             * earlier run made the build fast (a rusticl run sharing
             * MESA_SHADER_CACHE_DIR with the run before failed). */
            if (q->quirk == CLF__QUIRK_SLOW_INLINED_CODE)
                setenv("MESA_SHADER_CACHE_DISABLE", "true", 1);
            cl_platform_id plat;
            if (!device_of(q->platform, q->device, &plat))
                exit(77);
            const probe P = probe_open(q->platform, q->device);
            if (q->quirk == CLF__QUIRK_ABORTS_ON_FOREIGN_BINARY)
                foreign_binary(&P);
            if (q->quirk == CLF__QUIRK_LOOP_TRIPS_65535)
                loop_trips(&P);
            if (q->quirk == CLF__QUIRK_ZERO_PLUS_X_FOLDED)
                zero_plus_x(&P);
            if (q->quirk == CLF__QUIRK_SLOW_INLINED_CODE)
                slow_inlined_code(&P);
            if (q->quirk == CLF__QUIRK_OVERLAPPING_SUB_BUFFERS)
                overlapping_sub_buffers(&P);
            exit(2);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
            printf("SKIP %s: no %s %s device here\n", q->reproducer, q->platform, q->device ? q->device : "");
            continue;
        }
        bool reproduced = false;
        if (q->quirk == CLF__QUIRK_ABORTS_ON_FOREIGN_BINARY || q->quirk == CLF__QUIRK_OVERLAPPING_SUB_BUFFERS)
            reproduced = WIFSIGNALED(status);
        if (q->quirk == CLF__QUIRK_LOOP_TRIPS_65535 || q->quirk == CLF__QUIRK_ZERO_PLUS_X_FOLDED ||
            q->quirk == CLF__QUIRK_SLOW_INLINED_CODE)
            reproduced = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        ran++;
        if (reproduced) {
            printf("PASS %s: %s %s\n", q->reproducer, q->platform, q->what);
        } else {
            failed++;
            printf("FAIL %s: %s no longer %s (%s %d): the row in src/runtime/driver_quirks.c, its workaround and "
                   "its README line may go\n",
                   q->reproducer, q->platform, q->what, WIFSIGNALED(status) ? "signal" : "exit status",
                   WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        }
    }
    printf("%d reproduced, %d did not, %zu rows\n", ran - failed, failed, clf__driver_quirk_count);
    if (!ran)
        return 77;
    return failed ? 1 : 0;
}
