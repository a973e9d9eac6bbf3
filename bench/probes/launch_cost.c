/* What a launch costs the host: the tiny models and a decode step are
 * chains of 7-20 small kernels whose run time on NVIDIA's OpenCL is the
 * host's enqueueing (bench's "host enqueue" column equals its
 * back-to-back time, ~6.6 us a kernel on an H100). This times chains of
 * CHAIN launches of tiny kernels (one work-group of 64 work-items, each
 * kernel 16 arguments: 7 buffers, their 7 element offsets, two uints,
 * as the library's GEMM kernels), per launch, host clock:
 *   enqueue   arguments set once, only clEnqueueNDRangeKernel each launch
 *   set2      two arguments set before each launch (a run's input/output)
 *   set16     all 16 set before each launch (what run.c does today)
 *   event     as enqueue, with an event asked for and released
 *   rotate8   eight kernel objects of eight functions in turn, args once
 *   rotate8s  the same, all 16 arguments set before each launch
 * Each column: host ms spent enqueueing / wall ms to clFinish, per launch
 * in microseconds, the median of ROUNDS chains.
 *     gcc -O2 -o /tmp/launch_cost bench/probes/launch_cost.c -lOpenCL
 *     /tmp/launch_cost            (first GPU, else first device) */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include "probe_cl.h"

#include <time.h>

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

enum { CHAIN = 256, ROUNDS = 9, NK = 8, NBUF = 7 };

static cl_mem bufs[NBUF];

static void set_args(cl_kernel k, int which)
{
    cl_uint a = 0;
    for (int b = 0; b < NBUF; b++) {
        cl_ulong off = (cl_ulong)b;
        if (which == 16 || b < 2)
            clSetKernelArg(k, a, sizeof bufs[b], &bufs[b]);
        a++;
        if (which == 16)
            clSetKernelArg(k, a, sizeof off, &off);
        a++;
    }
    cl_uint n = 64, m = 1;
    if (which == 16) {
        clSetKernelArg(k, a, sizeof n, &n);
        clSetKernelArg(k, a + 1, sizeof m, &m);
    }
}

typedef enum { ENQUEUE, SET2, SET16, EVENT, ROTATE8, ROTATE8S, NMODES } mode;
static const char *names[NMODES] = {"enqueue", "set2", "set16", "event", "rotate8", "rotate8s"};

static void chain_us(cl_command_queue q, cl_kernel *ks, mode m, double *host, double *wall)
{
    double th[ROUNDS], tw[ROUNDS];
    size_t global = 64, local = 64;
    for (int r = -2; r < ROUNDS; r++) {
        clFinish(q);
        double t0 = now_us();
        for (int i = 0; i < CHAIN; i++) {
            cl_kernel k = ks[(m == ROTATE8 || m == ROTATE8S) ? i % NK : 0];
            if (m == SET2)
                set_args(k, 2);
            if (m == SET16 || m == ROTATE8S)
                set_args(k, 16);
            cl_event ev = NULL;
            clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, m == EVENT ? &ev : NULL);
            if (ev)
                clReleaseEvent(ev);
        }
        double t1 = now_us();
        clFinish(q);
        double t2 = now_us();
        if (r >= 0) {
            th[r] = (t1 - t0) / CHAIN;
            tw[r] = (t2 - t0) / CHAIN;
        }
    }
    qsort(th, ROUNDS, sizeof *th, probe_cmp);
    qsort(tw, ROUNDS, sizeof *tw, probe_cmp);
    *host = th[ROUNDS / 2];
    *wall = tw[ROUNDS / 2];
}

int main(void)
{
    cl_device_id dev = probe_device();
    char name[256] = "";
    clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    char src[8192] = "";
    size_t len = 0;
    for (int k = 0; k < NK; k++)
        len += (size_t)snprintf(src + len, sizeof src - len,
                                "kernel void f%d(global float *y, ulong oy, global const float *a, ulong oa,\n"
                                "  global const float *b, ulong ob, global const float *c, ulong oc,\n"
                                "  global const float *d, ulong od, global const float *e, ulong oe,\n"
                                "  global const float *f, ulong of, uint n, uint m) {\n"
                                "    uint i = get_global_id(0);\n"
                                "    if (i < n) y[oy + i] = a[oa + i] * %d.0f + b[ob + i] + c[oc + i] * m + d[od + i]"
                                " - e[oe + i] + f[of + i];\n}\n",
                                k, k + 1);
    const char *s = src;
    cl_program p = clCreateProgramWithSource(ctx, 1, &s, NULL, &err);
    err = clBuildProgram(p, 1, &dev, "", NULL, NULL);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "build: error %d\n", err);
        return 1;
    }
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
    for (int b = 0; b < NBUF; b++) {
        bufs[b] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4096, NULL, &err);
        float zero = 0.5f;
        clEnqueueFillBuffer(q, bufs[b], &zero, 4, 0, 4096, 0, NULL, NULL);
    }
    cl_kernel ks[NK];
    for (int k = 0; k < NK; k++) {
        char fn[8];
        snprintf(fn, sizeof fn, "f%d", k);
        ks[k] = clCreateKernel(p, fn, &err);
        set_args(ks[k], 16);
    }
    clFinish(q);
    printf("device: %s; us a launch (host enqueue / wall to clFinish), median of %d chains of %d\n", name, ROUNDS,
           CHAIN);
    for (int rep = 0; rep < 2; rep++)
        for (int m = 0; m < NMODES; m++) {
            double h, w;
            chain_us(q, ks, (mode)m, &h, &w);
            printf("%-10s %8.2f %8.2f\n", names[m], h, w);
        }
    return 0;
}
