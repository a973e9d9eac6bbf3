/* Times the kernel shapes of red_probe.cl on the first GPU (or the first
 * device), each against the copy roofline measured in the same run, and
 * checks each result against a host computation.
 *     red_probe [rows cols] [variant options...]
 * A variant is a string of build options, e.g.
 *     "-DLANES=256 -DWG=256 -DVEC=4 -DCACHED=0 -DTREE=1"
 * (C comes from cols). Without variants a built-in list runs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_cl.h"

#define RUNS 30

static cl_context ctx;
static cl_command_queue q;
static cl_device_id dev;
static char *src;

static void die(const char *what, cl_int err)
{
    fprintf(stderr, "%s failed: %d\n", what, err);
    exit(1);
}

static cl_program build(const char *opts, char *log, size_t logn)
{
    cl_int err;
    cl_program p = clCreateProgramWithSource(ctx, 1, (const char **)&src, NULL, &err);
    err = clBuildProgram(p, 1, &dev, opts, NULL, NULL);
    if (err) {
        clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, logn, log, NULL);
        clReleaseProgram(p);
        return NULL;
    }
    return p;
}

int main(int argc, char **argv)
{
    size_t rows = 4096, cols = 16384;
    int first = 1;
    if (argc > 2 && atol(argv[1]) > 0) {
        rows = (size_t)atol(argv[1]);
        cols = (size_t)atol(argv[2]);
        first = 3;
    }
    FILE *f = fopen(getenv("RED_PROBE_CL") ? getenv("RED_PROBE_CL") : "bench/probes/red_probe.cl", "rb");
    if (!f) {
        perror("red_probe.cl");
        return 1;
    }
    src = calloc(1, 1 << 20);
    fread(src, 1, (1 << 20) - 1, f);
    fclose(f);

    dev = probe_device();
    cl_int err;
    char name[256], ext[8192] = "";
    clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, sizeof ext, ext, NULL);
    printf("device: %s\nsubgroups: %s\n", name, strstr(ext, "cl_khr_subgroups") ? "yes" : "no");
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
    q = clCreateCommandQueueWithProperties(ctx, dev, props, &err);

    size_t n = rows * cols, bytes = n * sizeof(float);
    float *hx = malloc(bytes), *hy = malloc(bytes), *hw = malloc(cols * 4), *hb = malloc(cols * 4);
    srand(1);
    for (size_t i = 0; i < n; ++i)
        hx[i] = (float)rand() / RAND_MAX * 8.0f - 4.0f;
    for (size_t i = 0; i < cols; ++i) {
        hw[i] = (float)rand() / RAND_MAX + 0.5f;
        hb[i] = (float)rand() / RAND_MAX - 0.5f;
    }
    cl_mem x = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, hx, &err);
    cl_mem y = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    cl_mem w = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, cols * 4, hw, &err);
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, cols * 4, hb, &err);
    if (err)
        die("clCreateBuffer", err);
    double cms = probe_median_ms(q, NULL, 0, 0, x, y, bytes, RUNS, NULL);
    printf("rows %zu cols %zu: copy %.4f ms (%.0f GB/s)\n", rows, cols, cms, 2.0 * bytes / (cms * 1e6));

    static const char *builtin[] = {
        "-DLANES=1024 -DWG=1024 -DVEC=1 -DCACHED=1 -DTREE=0",
        "-DLANES=1024 -DWG=1024 -DVEC=1 -DCACHED=1 -DTREE=1",
        "-DLANES=1024 -DWG=1024 -DVEC=4 -DCACHED=1 -DTREE=1",
        "-DLANES=512 -DWG=512 -DVEC=4 -DCACHED=1 -DTREE=1",
        "-DLANES=256 -DWG=256 -DVEC=4 -DCACHED=1 -DTREE=1",
        "-DLANES=1024 -DWG=1024 -DVEC=4 -DCACHED=0 -DTREE=1",
        "-DLANES=512 -DWG=512 -DVEC=4 -DCACHED=0 -DTREE=1",
        "-DLANES=256 -DWG=256 -DVEC=4 -DCACHED=0 -DTREE=1",
        "-DLANES=256 -DWG=256 -DVEC=1 -DCACHED=0 -DTREE=1",
        "-DLANES=256 -DWG=256 -DVEC=4 -DCACHED=0 -DTREE=1 -DONLINE=1",
        "-DLANES=512 -DWG=512 -DVEC=4 -DCACHED=1 -DTREE=3",
        "-DLANES=256 -DWG=256 -DVEC=4 -DCACHED=0 -DTREE=3",
        "-DLANES=512 -DWG=512 -DVEC=4 -DCACHED=1 -DTREE=2",
    };
    const char **variants = builtin;
    int nvar = (int)(sizeof builtin / sizeof builtin[0]);
    if (argc > first) {
        variants = (const char **)argv + first;
        nvar = argc - first;
    }
    printf("| kernel | options | ms | of copy | max err |\n|---|---|---|---|---|\n");
    for (int v = 0; v < nvar; ++v) {
        char opts[512], log[4096] = "";
        snprintf(opts, sizeof opts, "%s -DC=%zu -cl-std=CL2.0 -DONLINE=%d", variants[v], cols,
                 probe_macro(variants[v], "ONLINE", 0));
        /* -DONLINE given twice would be a redefinition: keep the user's. */
        if (strstr(variants[v], "-DONLINE"))
            snprintf(opts, sizeof opts, "%s -DC=%zu -cl-std=CL2.0", variants[v], cols);
        cl_program p = build(opts, log, sizeof log);
        if (!p) {
            printf("| - | %s | build failed: %.200s |\n", variants[v], log);
            continue;
        }
        int wg = probe_macro(variants[v], "WG", 256), lanes = probe_macro(variants[v], "LANES", 256);
        size_t global = rows / (size_t)(wg / lanes) * (size_t)wg;
        for (int which = 0; which < 2; ++which) {
            cl_kernel k = clCreateKernel(p, which ? "layernorm" : "softmax", &err);
            clSetKernelArg(k, 0, sizeof x, &x);
            clSetKernelArg(k, 1, sizeof y, &y);
            if (which) {
                clSetKernelArg(k, 2, sizeof w, &w);
                clSetKernelArg(k, 3, sizeof b, &b);
            }
            float poison = NAN;
            clEnqueueFillBuffer(q, y, &poison, 4, 0, bytes, 0, NULL, NULL);
            double ms = probe_median_ms(q, k, global, (size_t)wg, NULL, NULL, 0, RUNS, NULL);
            if (ms < 0)
                die("clEnqueueNDRangeKernel", -1);
            clEnqueueReadBuffer(q, y, CL_TRUE, 0, bytes, hy, 0, NULL, NULL);
            double worst = 0;
            for (size_t r = 0; r < rows; r += rows / 64 ? rows / 64 : 1) {
                const float *xr = hx + r * cols;
                double m = -INFINITY, s = 0, mean = 0, var = 0;
                for (size_t c = 0; c < cols; ++c) {
                    m = fmax(m, xr[c]);
                    mean += xr[c];
                }
                mean /= (double)cols;
                for (size_t c = 0; c < cols; ++c) {
                    s += exp(xr[c] - m);
                    var += (xr[c] - mean) * (xr[c] - mean);
                }
                var /= (double)cols;
                for (size_t c = 0; c < cols; ++c) {
                    double ref = which ? (xr[c] - mean) / sqrt(var + 1e-5) * hw[c] + hb[c]
                                       : exp(xr[c] - m) / s;
                    double e = fabs(hy[r * cols + c] - ref) / (fabs(ref) + (which ? 1e-3 : 1e-30));
                    if (!(e <= worst))
                        worst = isnan(e) ? INFINITY : e;
                }
            }
            printf("| %s | %s | %.4f | %.0f%% | %.1e |\n", which ? "layernorm" : "softmax", variants[v], ms,
                   100.0 * cms / ms, worst);
            fflush(stdout);
            clReleaseKernel(k);
        }
        clReleaseProgram(p);
    }
    return 0;
}
