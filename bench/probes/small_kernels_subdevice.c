/* Does a small kernel run faster on a sub-device of one compute unit than
 * on the whole CPU device? PoCL 3.1's pthread scheduler wakes every worker
 * for every kernel, so a one-work-group kernel costs ~18 us with 16
 * workers and ~1 us with one (issue 20, models against onnxruntime). This
 * times chains of pointwise kernels (the CPU form's shape: float8, 16 per
 * work-item, work-groups of 16) of n floats, per kernel, wall clock:
 *   whole   the device's own queue
 *   sub1    a queue on a sub-device of 1 compute unit (same context)
 *   sub4    the same on 4 compute units
 *   mixed   kernels alternating between whole and sub1, each waiting for
 *           the previous one's event (what a runtime sending small
 *           kernels aside would do)
 * on the first CPU device (CLFUSE_PROBE_CPU is implied).
 *     gcc -O2 -o /tmp/small_kernels bench/probes/small_kernels_subdevice.c -lOpenCL
 *     /tmp/small_kernels */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include "probe_cl.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static const char *source =
    "kernel void scale(global const float *x, global float *y, uint n) {\n"
    "    size_t base = get_global_id(0) * 16 * 8;\n"
    "    for (int j = 0; j < 16; j++) {\n"
    "        size_t i = base + (size_t)j * 8;\n"
    "        if (i + 8 <= n) vstore8(vload8(0, x + i) * 1.0001f + 0.5f, 0, y + i);\n"
    "        else for (size_t e = i; e < n; e++) y[e] = x[e] * 1.0001f + 0.5f;\n"
    "    }\n"
    "}\n";

enum { CHAIN = 64, ROUNDS = 7 };

/* Median over ROUNDS of the per-kernel wall time of a chain of CHAIN
 * launches; queues[k % nq] takes launch k, after launch k-1's event when
 * nq > 1. */
static double chain_us(cl_command_queue *queues, int nq, cl_kernel k, size_t global, size_t local)
{
    double t[ROUNDS];
    for (int r = -2; r < ROUNDS; r++) {
        double t0 = now_ms();
        cl_event prev = NULL;
        for (int i = 0; i < CHAIN; i++) {
            cl_event ev = NULL;
            clEnqueueNDRangeKernel(queues[i % nq], k, 1, NULL, &global, &local, prev ? 1 : 0, prev ? &prev : NULL,
                                   nq > 1 ? &ev : NULL);
            if (nq > 1)
                clFlush(queues[i % nq]);
            if (prev)
                clReleaseEvent(prev);
            prev = ev;
        }
        for (int q = 0; q < nq; q++)
            clFinish(queues[q]);
        if (prev)
            clReleaseEvent(prev);
        if (r >= 0)
            t[r] = (now_ms() - t0) * 1e3 / CHAIN;
    }
    qsort(t, ROUNDS, sizeof *t, probe_cmp);
    return t[ROUNDS / 2];
}

int main(void)
{
    cl_platform_id plats[8];
    cl_uint np = 0;
    cl_device_id dev = NULL;
    clGetPlatformIDs(8, plats, &np);
    for (cl_uint i = 0; i < np && !dev; i++)
        if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_CPU, 1, &dev, NULL) != CL_SUCCESS)
            dev = NULL;
    if (!dev) {
        fprintf(stderr, "no CPU device\n");
        return 1;
    }
    char name[256] = "";
    cl_uint units = 0;
    clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
    cl_device_id devs[3] = {dev, NULL, NULL};
    cl_uint ndev = 1;
    for (cl_uint want = 1; want <= 4; want *= 4) {
        if (want >= units)
            continue;
        cl_device_partition_property props[] = {CL_DEVICE_PARTITION_BY_COUNTS, (cl_device_partition_property)want,
                                                CL_DEVICE_PARTITION_BY_COUNTS_LIST_END, 0};
        cl_uint got = 0;
        cl_int err = clCreateSubDevices(dev, props, 1, &devs[ndev], &got);
        if (err != CL_SUCCESS || got != 1) {
            fprintf(stderr, "clCreateSubDevices(%u units): error %d\n", want, err);
            return 1;
        }
        ndev++;
    }
    printf("device: %s, %u compute units; %u sub-devices\n", name, units, ndev - 1);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, ndev, devs, NULL, NULL, &err);
    double t0 = now_ms();
    cl_program p = clCreateProgramWithSource(ctx, 1, &source, NULL, &err);
    err = clBuildProgram(p, ndev, devs, "", NULL, NULL);
    printf("build for %u devices: %.0f ms (error %d)\n", ndev, now_ms() - t0, err);
    cl_kernel k = clCreateKernel(p, "scale", &err);
    cl_command_queue q[3];
    for (cl_uint d = 0; d < ndev; d++)
        q[d] = clCreateCommandQueue(ctx, devs[d], 0, &err);
    size_t maxn = (size_t)1 << 24;
    cl_mem x = clCreateBuffer(ctx, CL_MEM_READ_WRITE, maxn * 4, NULL, &err);
    cl_mem y = clCreateBuffer(ctx, CL_MEM_READ_WRITE, maxn * 4, NULL, &err);
    float zero = 0;
    clEnqueueFillBuffer(q[0], x, &zero, 4, 0, maxn * 4, 0, NULL, NULL);
    clFinish(q[0]);
    printf("%10s %8s %10s %10s %10s %10s   (us a kernel, median of %d chains of %d)\n", "floats", "groups",
           "whole", "sub1", ndev > 2 ? "sub4" : "-", "mixed", ROUNDS, CHAIN);
    for (size_t n = 1024; n <= maxn; n *= 4) {
        cl_uint nn = (cl_uint)n;
        clSetKernelArg(k, 0, sizeof x, &x);
        clSetKernelArg(k, 1, sizeof y, &y);
        clSetKernelArg(k, 2, sizeof nn, &nn);
        size_t items = (n + 127) / 128, local = 16, global = (items + local - 1) / local * local;
        double whole = chain_us(&q[0], 1, k, global, local);
        double sub1 = ndev > 1 ? chain_us(&q[1], 1, k, global, local) : -1;
        double sub4 = ndev > 2 ? chain_us(&q[2], 1, k, global, local) : -1;
        cl_command_queue mix[2] = {q[0], ndev > 1 ? q[1] : q[0]};
        double mixed = chain_us(mix, 2, k, global, local);
        printf("%10zu %8zu %10.1f %10.1f %10.1f %10.1f\n", n, global / local, whole, sub1, sub4, mixed);
    }
    return 0;
}
