/* Builds an OpenCL C file on the first GPU (or the first device) with the
 * given build options and prints the build log and, for each kernel,
 * CL_KERNEL_WORK_GROUP_SIZE and its private memory: what a driver makes of
 * a generated kernel (with -cl-nv-verbose, NVIDIA's register report).
 *     cl_kernel_info FILE.cl ["OPTIONS"]...
 * With LAUNCH="GLOBAL LOCAL NBUF BYTES NROWS" it also launches each kernel
 * once with NBUF buffers of BYTES bytes and a last uint argument NROWS (the
 * library's reduction kernels; buffers hold values in [-4, 4)), and prints
 * what the enqueue returned; with RUNS=N too, the median device time of N
 * more launches. With BINARY=PATH it writes the program binary there (NVIDIA's
 * is PTX: what the front end made of the kernel, before ptxas). */
#include <stdio.h>
#include <stdlib.h>

#include "probe_cl.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: cl_kernel_info FILE.cl [\"OPTIONS\"]...\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    static char src[1 << 20];
    size_t n = fread(src, 1, sizeof src - 1, f);
    fclose(f);
    src[n] = 0;
    cl_device_id dev = probe_device();
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    for (int a = argc > 2 ? 2 : 1; a < argc; ++a) {
        const char *opts = argc > 2 ? argv[a] : "";
        const char *s = src;
        cl_program p = clCreateProgramWithSource(ctx, 1, &s, NULL, &err);
        err = clBuildProgram(p, 1, &dev, opts, NULL, NULL);
        static char log[1 << 16];
        clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
        printf("== %s: options \"%s\": build %d\n%s\n", argv[1], opts, err, log);
        const char *bin_path = getenv("BINARY");
        size_t bin_size = 0;
        if (!err && bin_path &&
            clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof bin_size, &bin_size, NULL) == CL_SUCCESS) {
            unsigned char *bin = malloc(bin_size + 1);
            FILE *bf = bin ? fopen(bin_path, "wb") : NULL;
            if (bf && clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) == CL_SUCCESS)
                fwrite(bin, 1, bin_size, bf);
            if (bf)
                fclose(bf);
            free(bin);
        }
        cl_kernel ks[16];
        cl_uint nk = 0;
        if (!err)
            clCreateKernelsInProgram(p, 16, ks, &nk);
        for (cl_uint k = 0; k < nk; ++k) {
            char name[256];
            size_t wg = 0;
            cl_ulong priv = 0;
            clGetKernelInfo(ks[k], CL_KERNEL_FUNCTION_NAME, sizeof name, name, NULL);
            clGetKernelWorkGroupInfo(ks[k], dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
            clGetKernelWorkGroupInfo(ks[k], dev, CL_KERNEL_PRIVATE_MEM_SIZE, sizeof priv, &priv, NULL);
            printf("kernel %s: CL_KERNEL_WORK_GROUP_SIZE %zu, private %llu bytes\n", name, wg,
                   (unsigned long long)priv);
            size_t gsz, lsz, bytes;
            unsigned nbuf, nrows;
            const char *l = getenv("LAUNCH");
            if (l && sscanf(l, "%zu %zu %u %zu %u", &gsz, &lsz, &nbuf, &bytes, &nrows) == 5) {
                cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
                cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, props, &err);
                cl_mem bufs[8];
                float *fill = malloc(bytes);
                for (size_t i = 0; i < bytes / sizeof(float); ++i)
                    fill[i] = (float)((i * 2654435761u) % 8192u) / 1024.0f - 4.0f;
                for (unsigned b = 0; b < nbuf && b < 8; ++b) {
                    bufs[b] = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, fill, &err);
                    clSetKernelArg(ks[k], b, sizeof bufs[b], &bufs[b]);
                }
                clSetKernelArg(ks[k], nbuf, sizeof nrows, &nrows);
                err = clEnqueueNDRangeKernel(q, ks[k], 1, NULL, &gsz, &lsz, 0, NULL, NULL);
                cl_int fin = clFinish(q);
                printf("launch %zu/%zu: enqueue %d, finish %d\n", gsz, lsz, err, fin);
                int runs = getenv("RUNS") ? atoi(getenv("RUNS")) : 0;
                if (runs > 0 && !err)
                    printf("median of %d: %.4f ms\n", runs, probe_median_ms(q, ks[k], gsz, lsz, NULL, NULL, 0, runs, NULL));
                free(fill);
                for (unsigned b = 0; b < nbuf && b < 8; ++b)
                    clReleaseMemObject(bufs[b]);
                clReleaseCommandQueue(q);
            }
            clReleaseKernel(ks[k]);
        }
        clReleaseProgram(p);
    }
    return 0;
}
