/* See host_measure.h. */
#include "host_measure.h"

#include <stdlib.h>
#include <stdbool.h>
#include <time.h>

double hm_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

uint64_t hm_xorshift(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

void hm_fill_random(void *p, clf_dtype dt, size_t n, double lo, double hi, uint64_t *state)
{
    for (size_t k = 0; k < n; k++) {
        uint64_t r = hm_xorshift(state) >> 11; /* 53 random bits */
        float f = (float)(lo + (hi - lo) * ((double)r * (1.0 / 9007199254740992.0)));
        if (dt == CLF_F32)
            ((float *)p)[k] = f;
        else if (dt == CLF_F16)
            ((uint16_t *)p)[k] = clf_f16_from_f32(f);
        else if (dt == CLF_BF16)
            ((uint16_t *)p)[k] = clf_bf16_from_f32(f);
        else if (dt == CLF_I32)
            ((int32_t *)p)[k] = (int32_t)(r % 21) - 10;
        else if (dt == CLF_I64)
            ((int64_t *)p)[k] = (int64_t)(r % 21) - 10;
        else
            ((unsigned char *)p)[k] = (unsigned char)(r & 1);
    }
}

bool hm_float_at(clf_dtype dt, const void *p, size_t i, double *v)
{
    if (dt == CLF_F32)
        *v = ((const float *)p)[i];
    else if (dt == CLF_F16)
        *v = clf_f32_from_f16(((const uint16_t *)p)[i]);
    else if (dt == CLF_BF16)
        *v = clf_f32_from_bf16(((const uint16_t *)p)[i]);
    else
        return false;
    return true;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double hm_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The copy on a CPU: clEnqueueCopyBuffer runs on one thread in PoCL (13
 * GB/s), so a kernel whose work-items each copy one contiguous chunk of
 * 16-float vectors, four chunks per compute unit, reads and writes memory
 * from every core, as a fused kernel does. Bytes beyond the last whole
 * vector are not copied (the rate is over what was). */
static const char copy_kernel_source[] =
    "__kernel void hm_copy(__global const float16 *restrict a, __global float16 *restrict b,\n"
    "                      const uint per, const uint n)\n"
    "{\n"
    "    const uint i0 = (uint)get_global_id(0) * per, i1 = min(i0 + per, n);\n"
    "    for (uint i = i0; i < i1; ++i)\n"
    "        b[i] = a[i];\n"
    "}\n";

typedef struct copy_kernel {
    cl_program program;
    cl_kernel kernel;
    size_t items;
} copy_kernel;

static bool copy_kernel_make(clf_context *ctx, uint32_t compute_units, cl_mem a, cl_mem b, size_t bytes,
                             copy_kernel *ck)
{
    cl_context cl = clf_context_cl(ctx);
    cl_device_id dev = NULL;
    clGetCommandQueueInfo(clf_context_queue(ctx), CL_QUEUE_DEVICE, sizeof dev, &dev, NULL);
    const char *src = copy_kernel_source;
    cl_int err;
    ck->program = clCreateProgramWithSource(cl, 1, &src, NULL, &err);
    if (!ck->program || clBuildProgram(ck->program, 1, &dev, "", NULL, NULL) != CL_SUCCESS)
        return false;
    ck->kernel = clCreateKernel(ck->program, "hm_copy", &err);
    if (!ck->kernel)
        return false;
    cl_uint n = (cl_uint)(bytes / 64);
    ck->items = 4 * (size_t)(compute_units ? compute_units : 1);
    cl_uint per = (cl_uint)((n + ck->items - 1) / ck->items);
    return clSetKernelArg(ck->kernel, 0, sizeof a, &a) == CL_SUCCESS &&
           clSetKernelArg(ck->kernel, 1, sizeof b, &b) == CL_SUCCESS &&
           clSetKernelArg(ck->kernel, 2, sizeof per, &per) == CL_SUCCESS &&
           clSetKernelArg(ck->kernel, 3, sizeof n, &n) == CL_SUCCESS;
}

static void copy_kernel_free(copy_kernel *ck)
{
    if (ck->kernel)
        clReleaseKernel(ck->kernel);
    if (ck->program)
        clReleaseProgram(ck->program);
}

const char *hm_copy_method(clf_context *ctx)
{
    clf_device_desc desc;
    clf_context_device(ctx, &desc);
    return desc.is_cpu ? "a copy kernel on every core" : "clEnqueueCopyBuffer";
}

double hm_copy_ms(clf_context *ctx, size_t bytes, int warmup, int runs)
{
    cl_context cl = clf_context_cl(ctx);
    cl_command_queue q = clf_context_queue(ctx);
    clf_device_desc desc;
    clf_context_device(ctx, &desc);
    cl_int err;
    cl_mem a = clCreateBuffer(cl, CL_MEM_READ_WRITE, bytes, NULL, &err);
    cl_mem b = clCreateBuffer(cl, CL_MEM_READ_WRITE, bytes, NULL, &err);
    double *t = malloc((size_t)(runs > 0 ? runs : 1) * sizeof *t), result = -1;
    copy_kernel ck = {NULL, NULL, 0};
    unsigned char one = 1;
    if (!a || !b || !t || runs <= 0 || clEnqueueFillBuffer(q, a, &one, 1, 0, bytes, 0, NULL, NULL) != CL_SUCCESS)
        goto done;
    if (desc.is_cpu && (bytes < 64 || !copy_kernel_make(ctx, desc.compute_units, a, b, bytes, &ck)))
        goto done;
    /* Timestamps a driver does not really provide: the host's clock around
     * each copy instead (clf_context_timestamps_real). */
    const bool events = clf_context_timestamps_real(ctx);
    if (clFinish(q) != CL_SUCCESS)
        goto done;
    for (int r = -warmup; r < runs; r++) {
        cl_event ev;
        cl_ulong t0 = 0, t1 = 0;
        double h0 = hm_now_ms();
        const size_t one_item = 1;
        if (ck.kernel ? clEnqueueNDRangeKernel(q, ck.kernel, 1, NULL, &ck.items, &one_item, 0, NULL, &ev) != CL_SUCCESS
                      : clEnqueueCopyBuffer(q, a, b, 0, 0, bytes, 0, NULL, &ev) != CL_SUCCESS)
            goto done;
        clWaitForEvents(1, &ev);
        double h1 = hm_now_ms();
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
        clReleaseEvent(ev);
        if (r >= 0)
            t[r] = events ? (double)(t1 - t0) * 1e-6 : h1 - h0;
    }
    result = hm_median(t, runs);
    if (ck.kernel) /* the rate over the bytes copied */
        result *= (double)bytes / (double)(bytes / 64 * 64);
done:
    copy_kernel_free(&ck);
    if (a)
        clReleaseMemObject(a);
    if (b)
        clReleaseMemObject(b);
    free(t);
    return result;
}
