/* One-row f16 products (a decode step's x @ W, K x N weights row-major)
 * written several ways (gemv_probe.cl), timed on the decoder's shapes:
 * what the GPU few-rows GEMM form should look like. Device-timed medians,
 * the result checked against a host sum, the copy rate of the same bytes
 * beside (L2 flushed before each timed launch unless NO_FLUSH is set).
 * Build on the GPU machine after `source .gpu/env.sh`:
 *     gcc -O2 -std=c11 -o /tmp/gemv bench/probes/gemv_probe.c -lOpenCL -lm
 *     /tmp/gemv [VARIANT-OPTIONS...]
 * A variant is compiler options (-DTC -DNT -DU -DTREE -DFENCE, see the .cl)
 * with -DSPLIT=S (0: the fewest powers of two giving 2 work-groups a
 * compute unit). */
#include "probe_cl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static unsigned short to_half(float f)
{
    /* Values in [-1, 1) of 2^-10 steps: exact normals or zero. */
    unsigned int u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) == 0)
        return (unsigned short)(u >> 16);
    unsigned int e = ((u >> 23) & 0xff) - 127 + 15;
    return (unsigned short)(((u >> 16) & 0x8000u) | (e << 10) | ((u >> 13) & 0x3ffu));
}

int main(int argc, char **argv)
{
    const int runs = getenv("RUNS") ? atoi(getenv("RUNS")) : 50;
    FILE *f = fopen(getenv("CL_FILE") ? getenv("CL_FILE") : "bench/probes/gemv_probe.cl", "rb");
    if (!f)
        return perror("gemv_probe.cl"), 1;
    char *src = calloc(1, 1 << 20);
    if (fread(src, 1, (1 << 20) - 1, f) == 0)
        return fprintf(stderr, "gemv_probe.cl: empty\n"), 1;
    fclose(f);
    cl_device_id dev = probe_device();
    cl_int err;
    char name[256];
    cl_uint units = 1;
    clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
    printf("device: %s, %u compute units\n", name, units);
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, props, &err);

    static const size_t shapes[][2] = {{2048, 512}, {2048, 2048}, {2048, 8192}, {8192, 2048}};
    const size_t maxkn = 8192 * 2048;
    unsigned short *ha = malloc(8192 * 2), *hb = malloc(maxkn * 2);
    float *fa = malloc(8192 * 4), *fb = malloc(maxkn * 4), *hy = malloc(8192 * 4);
    srand(1);
    for (size_t i = 0; i < 8192; ++i)
        fa[i] = (float)(rand() % 2048 - 1024) / 1024.0f, ha[i] = to_half(fa[i]);
    for (size_t i = 0; i < maxkn; ++i)
        fb[i] = (float)(rand() % 2048 - 1024) / 1024.0f, hb[i] = to_half(fb[i]);
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, 8192 * 2, ha, &err);
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, maxkn * 2, hb, &err);
    cl_mem b2 = clCreateBuffer(ctx, CL_MEM_READ_WRITE, maxkn * 2, NULL, &err);
    cl_mem part = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64 * 8192 * 4, NULL, &err);
    cl_mem flush = clCreateBuffer(ctx, CL_MEM_READ_WRITE, (size_t)128 << 20, NULL, &err);
    cl_mem y = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 8192 * 4, NULL, &err);
    unsigned int zeros[1024] = {0};
    cl_mem cnt = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zeros, zeros, &err);
    if (err)
        return fprintf(stderr, "buffers: %d\n", err), 1;

    static const char *builtin[] = {
        "-DTC=2 -DNT=256 -DU=8 -DTREE=1 -DSPLIT=1",  "-DTC=8 -DNT=256 -DU=8 -DSPLIT=1",
        "-DTC=8 -DNT=512 -DU=8 -DSPLIT=1",           "-DTC=8 -DNT=1024 -DU=4 -DSPLIT=1",
        "-DTC=32 -DNT=256 -DU=8 -DSPLIT=1",          "-DTC=16 -DNT=256 -DU=8 -DSPLIT=1",
        "-DTC=8 -DNT=256 -DU=8 -DSPLIT=0",           "-DTC=8 -DNT=256 -DU=4 -DSPLIT=0",
        "-DTC=16 -DNT=256 -DU=8 -DSPLIT=0",          "-DTC=32 -DNT=256 -DU=8 -DSPLIT=0",
        "-DTC=32 -DNT=512 -DU=8 -DSPLIT=0",          "-DTC=8 -DNT=256 -DU=8 -DSPLIT=0 -DFENCE=1",
        "-DTC=8 -DNT=128 -DU=8 -DSPLIT=0",           "-DTC=8 -DNT=256 -DU=8 -DSPLIT=0 -DTREE=1",
    };
    const char **variants = builtin;
    int nvar = (int)(sizeof builtin / sizeof builtin[0]);
    if (argc > 1)
        variants = (const char **)argv + 1, nvar = argc - 1;
    printf("| K x N | options | S | groups | ms | GB/s | copy GB/s | max err |\n|---|---|---|---|---|---|---|---|\n");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
        const size_t K = shapes[s][0], N = shapes[s][1], bytes = K * N * 2;
        double cms = probe_median_ms(q, NULL, 0, 0, b, b2, bytes, runs, NULL);
        for (int v = 0; v < nvar; ++v) {
            char opts[512];
            snprintf(opts, sizeof opts, "%s", variants[v]);
            cl_program p = clCreateProgramWithSource(ctx, 1, (const char **)&src, NULL, &err);
            if (clBuildProgram(p, 1, &dev, opts, NULL, NULL) != CL_SUCCESS) {
                char log[4096] = "";
                clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
                printf("| %zux%zu | %s | build failed: %.300s |\n", K, N, opts, log);
                clReleaseProgram(p);
                continue;
            }
            const int tc = probe_macro(opts, "TC", 8), nt = probe_macro(opts, "NT", 256), u = probe_macro(opts, "U", 8);
            const size_t tn = (size_t)tc * 8, blocks = N / tn;
            unsigned int S = (unsigned int)probe_macro(opts, "SPLIT", 1);
            if (S == 0)
                for (S = 1; blocks * S < 2 * units && K / (S * 2) >= (size_t)(nt / tc * u); S *= 2)
                    ;
            cl_kernel k = clCreateKernel(p, "gemv_n", &err);
            cl_uint Ku = (cl_uint)K, Nu = (cl_uint)N;
            clSetKernelArg(k, 0, sizeof a, &a);
            clSetKernelArg(k, 1, sizeof b, &b);
            clSetKernelArg(k, 2, sizeof part, &part);
            clSetKernelArg(k, 3, sizeof cnt, &cnt);
            clSetKernelArg(k, 4, sizeof y, &y);
            clSetKernelArg(k, 5, sizeof Ku, &Ku);
            clSetKernelArg(k, 6, sizeof Nu, &Nu);
            clSetKernelArg(k, 7, sizeof S, &S);
            float poison = NAN;
            clEnqueueFillBuffer(q, y, &poison, 4, 0, N * 4, 0, NULL, NULL);
            const size_t groups = blocks * S;
            double ms = probe_median_ms(q, k, groups * (size_t)nt, (size_t)nt, NULL, NULL, 0, runs,
                                        getenv("NO_FLUSH") ? NULL : flush);
            clEnqueueReadBuffer(q, y, CL_TRUE, 0, N * 4, hy, 0, NULL, NULL);
            double worst = 0;
            for (size_t c = 0; c < N; c += 7) {
                double r = 0;
                for (size_t i = 0; i < K; ++i)
                    r += (double)fa[i] * fb[i * N + c];
                double e = fabs(hy[c] - r) / (1.0 + fabs(r));
                if (!(e <= worst))
                    worst = isnan(e) ? INFINITY : e;
            }
            printf("| %zux%zu | %s | %u | %zu | %.4f | %.0f | %.0f | %.1e |\n", K, N, opts, S, groups, ms,
                   bytes / (ms * 1e6), 2.0 * bytes / (cms * 1e6), worst);
            fflush(stdout);
            clReleaseKernel(k);
            clReleaseProgram(p);
        }
    }
    return 0;
}
