/* See host_measure.h. */
#include "host_measure.h"

#include <stdlib.h>
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

double hm_copy_ms(clf_context *ctx, size_t bytes, int warmup, int runs)
{
    cl_context cl = clf_context_cl(ctx);
    cl_command_queue q = clf_context_queue(ctx);
    cl_int err;
    cl_mem a = clCreateBuffer(cl, CL_MEM_READ_WRITE, bytes, NULL, &err);
    cl_mem b = clCreateBuffer(cl, CL_MEM_READ_WRITE, bytes, NULL, &err);
    double *t = malloc((size_t)(runs > 0 ? runs : 1) * sizeof *t), result = -1;
    unsigned char one = 1;
    if (!a || !b || !t || runs <= 0 || clEnqueueFillBuffer(q, a, &one, 1, 0, bytes, 0, NULL, NULL) != CL_SUCCESS)
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
        if (clEnqueueCopyBuffer(q, a, b, 0, 0, bytes, 0, NULL, &ev) != CL_SUCCESS)
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
done:
    if (a)
        clReleaseMemObject(a);
    if (b)
        clReleaseMemObject(b);
    free(t);
    return result;
}
