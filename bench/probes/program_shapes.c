/* How a driver's build time splits, for issue 20's cold compile ("one
 * program per thread, or one program holding several kernels: measure
 * which"). Reads the output of `clfuse code MODEL` (kernels separated by
 * "// ---- kernel" lines), keeps the distinct sources, and times on the
 * default device (probe_device; CLFUSE_PROBE_CPU=1 takes the first CPU):
 *   serial     each source built alone (clBuildProgram), one after another
 *   compile    each source compiled alone (clCompileProgram), no link
 *   link1      each compiled source linked alone (clLinkProgram)
 *   trivial    one program of 1, then of 16 copies of a one-line kernel
 *   larger     one program of 1, then of 16 kernels of 200 lines: its
 *              build, and the first launch of one of them (PoCL compiles
 *              a kernel's work-group function then)
 * after one untimed build (the driver's first build loads its libraries).
 *     gcc -O2 -o /tmp/program_shapes bench/probes/program_shapes.c -lOpenCL
 *     clfuse code model.onnx > /tmp/code.txt && /tmp/program_shapes /tmp/code.txt */
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

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)n + 1);
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    if (p)
        p[n] = '\0';
    fclose(f);
    return p;
}

static double build_ms(cl_context ctx, cl_device_id dev, const char *src, int *ok)
{
    const double t0 = now_ms();
    cl_int err;
    cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    err = p ? clBuildProgram(p, 1, &dev, "", NULL, NULL) : err;
    const double t = now_ms() - t0;
    *ok = err == CL_SUCCESS;
    if (p)
        clReleaseProgram(p);
    return t;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: program_shapes CODE.txt\n");
        return 2;
    }
    char *all = read_all(argv[1]);
    if (!all) {
        perror(argv[1]);
        return 1;
    }
    enum { MAXK = 256 };
    char *src[MAXK];
    int n = 0;
    const char *mark = "// ---- kernel";
    for (char *p = strstr(all, mark); p && n < MAXK;) {
        char *next = strstr(p + 1, mark);
        if (next)
            next[-1] = '\0';
        int dup = 0;
        const char *body = strchr(p, '\n');
        for (int i = 0; i < n && !dup && body; i++) /* the same text after the marker line */
            dup = strchr(src[i], '\n') && strcmp(strchr(src[i], '\n'), body) == 0;
        if (!dup)
            src[n++] = p;
        p = next;
    }
    cl_device_id dev = NULL;
    const char *want_cpu = getenv("CLFUSE_PROBE_CPU");
    if (want_cpu && *want_cpu) {
        cl_platform_id plats[8];
        cl_uint np = 0;
        clGetPlatformIDs(8, plats, &np);
        for (cl_uint i = 0; i < np && !dev; i++)
            if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_CPU, 1, &dev, NULL) != CL_SUCCESS)
                dev = NULL;
    } else
        dev = probe_device();
    char name[256] = "";
    clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    if (!ctx) {
        fprintf(stderr, "no context (%d)\n", err);
        return 1;
    }
    int ok;
    const char *warm = "__kernel void warm(__global float *x) { x[get_global_id(0)] = 1.0f; }";
    if (n == 0) {
        fprintf(stderr, "%s: no \"%s\" lines (the output of clfuse code)\n", argv[1], mark);
        return 1;
    }
    const double first = build_ms(ctx, dev, warm, &ok);
    printf("device %s: %d distinct sources; first build in the process %.1f ms\n", name, n, first);

    double serial = 0;
    for (int i = 0; i < n; i++) {
        const double t = build_ms(ctx, dev, src[i], &ok);
        serial += t;
        printf("  source %2d: build %7.1f ms%s\n", i, t, ok ? "" : " (FAILED)");
    }
    printf("serial builds: %.1f ms (%.1f a source)\n", serial, serial / n);

    double compile = 0, link = 0;
    for (int i = 0; i < n; i++) {
        cl_program p = clCreateProgramWithSource(ctx, 1, (const char **)&src[i], NULL, &err);
        double t0 = now_ms();
        err = clCompileProgram(p, 1, &dev, "", 0, NULL, NULL, NULL, NULL);
        compile += now_ms() - t0;
        if (err != CL_SUCCESS)
            printf("  source %d: clCompileProgram %d\n", i, err);
        t0 = now_ms();
        cl_program l = clLinkProgram(ctx, 1, &dev, "", 1, &p, NULL, NULL, &err);
        link += now_ms() - t0;
        if (!l)
            printf("  source %d: clLinkProgram %d\n", i, err);
        else
            clReleaseProgram(l);
        clReleaseProgram(p);
    }
    printf("compile alone: %.1f ms; link alone: %.1f ms (sums over the sources)\n", compile, link);

    for (int copies = 1; copies <= 16; copies *= 16) {
        static char buf[1 << 16];
        size_t used = 0;
        for (int c = 0; c < copies; c++)
            used += (size_t)snprintf(buf + used, sizeof buf - used,
                                     "__kernel void k%d(__global float *x, __global const float *y) "
                                     "{ size_t i = get_global_id(0); x[i] = fmax(y[i] * %d.0f, 0.0f); }\n",
                                     c, c + 1);
        const double t = build_ms(ctx, dev, buf, &ok);
        printf("trivial: one program of %2d kernels: %.1f ms%s\n", copies, t, ok ? "" : " (FAILED)");
    }
    /* The first launch of one kernel from a program of 1 or 16 larger
     * kernels: PoCL compiles a kernel's work-group function at its first
     * launch; does that grow with the program around it? */
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64 * sizeof(float), NULL, &err);
    for (int copies = 1; copies <= 16; copies *= 16) {
        static char big[1 << 20];
        size_t used = 0;
        for (int c = 0; c < copies; c++) {
            used += (size_t)snprintf(big + used, sizeof big - used,
                                     "__kernel void k%d(__global float *x) {\n  size_t i = get_global_id(0);\n"
                                     "  float a = x[i], b = a * 0.5f;\n",
                                     c);
            for (int line = 0; line < 200; line++)
                used += (size_t)snprintf(big + used, sizeof big - used,
                                         "  a = fma(a, %d.25f, b); b = native_sin(b) + a * %d.0f;\n", line + c, line);
            used += (size_t)snprintf(big + used, sizeof big - used, "  x[i] = a + b;\n}\n");
        }
        const char *text = big;
        cl_program p = clCreateProgramWithSource(ctx, 1, &text, NULL, &err);
        double t0 = now_ms();
        err = clBuildProgram(p, 1, &dev, "", NULL, NULL);
        const double tb = now_ms() - t0;
        cl_kernel k = err == CL_SUCCESS ? clCreateKernel(p, "k0", &err) : NULL;
        if (!k || clSetKernelArg(k, 0, sizeof buf, &buf) != CL_SUCCESS) {
            printf("larger kernels: program of %d: build or kernel failed (%d)\n", copies, err);
            return 1;
        }
        size_t global = 64, local = 8;
        double launch[2] = {0, 0};
        for (int run = 0; run < 2; run++) {
            t0 = now_ms();
            if (clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL) != CL_SUCCESS ||
                clFinish(q) != CL_SUCCESS) {
                printf("larger kernels: program of %d: the launch failed\n", copies);
                return 1;
            }
            launch[run] = now_ms() - t0;
        }
        const double first = launch[0], second = launch[1];
        printf("larger kernels: program of %2d: build %.1f ms, first launch of one %.1f ms, second %.2f ms\n", copies,
               tb, first, second);
        clReleaseKernel(k);
        clReleaseProgram(p);
    }
    clReleaseMemObject(buf);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    free(all);
    return 0;
}
