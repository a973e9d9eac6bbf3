#include "test_support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

void clf_test_setup_env(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    char tmpl[] = "/tmp/clfuse-test-XXXXXX";
    const char *dir = mkdtemp(tmpl);
    if (dir) {
        char path[512];
        if (!getenv("POCL_CACHE_DIR")) {
            snprintf(path, sizeof path, "%s/pocl", dir);
            setenv("POCL_CACHE_DIR", path, 1);
        }
        snprintf(path, sizeof path, "%s/clfuse", dir);
        setenv("CLFUSE_CACHE_DIR", path, 1);
    }
    const char *seed = getenv("CLFUSE_TEST_SEED");
    if (seed)
        rng_state = strtoull(seed, NULL, 0) | 1;
}

int clf_test_run_suite(Suite *s)
{
    clf_test_setup_env();
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}

void clf_test_add_case(Suite *s, const char *name, const TTest *t)
{
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, t);
    suite_add_tcase(s, tc);
}

void clf_test_add_variant_case(Suite *s, const char *name, const TTest *t)
{
    TCase *tc = tcase_create(name);
    tcase_set_tags(tc, "variant");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, t);
    suite_add_tcase(s, tc);
}

uint64_t clf_test_rand(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    rng_state = x;
    return x;
}

float clf_test_uniform(float lo, float hi)
{
    double u = (double)(clf_test_rand() >> 11) / 9007199254740992.0;
    return (float)(lo + (hi - lo) * u);
}

void clf_test_fill_f32(float *p, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++)
        p[i] = clf_test_uniform(lo, hi);
}

void clf_test_fill_i32(int32_t *p, size_t n, int32_t lo, int32_t hi)
{
    uint64_t span = (uint64_t)((int64_t)hi - (int64_t)lo) + 1;
    for (size_t i = 0; i < n; i++)
        p[i] = (int32_t)((int64_t)lo + (int64_t)(clf_test_rand() % span));
}

void clf_test_fill_i64(int64_t *p, size_t n, int64_t lo, int64_t hi)
{
    uint64_t span = (uint64_t)hi - (uint64_t)lo + 1; /* 0: the whole range */
    for (size_t i = 0; i < n; i++) {
        uint64_t r = clf_test_rand() * 0x9e3779b97f4a7c15ull ^ clf_test_rand();
        p[i] = (int64_t)((uint64_t)lo + (span ? r % span : r));
    }
}

void clf_test_fill_bool(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(clf_test_rand() & 1);
}

uint16_t clf_test_to_f16(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) /* NaN: quiet, the top payload bits kept */
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) /* 65520 and above (inf too) */
        return (uint16_t)(sign | 0x7c00u);
    uint32_t e = a >> 23;
    if (a >= 0x38800000u) { /* a normal half: rebias the exponent, round 13 bits off */
        uint32_t h = (a - 0x38000000u) >> 13, rem = a & 0x1fffu;
        if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
            h++;
        return (uint16_t)(sign | h);
    }
    if (e < 102) /* below 2^-25 (f32 subnormals too): +-0 */
        return sign;
    /* A subnormal half: the value in units of 2^-24 is m * 2^(e - 126). */
    uint32_t m = (a & 0x7fffffu) | 0x800000u, shift = 126 - e; /* 14..24 */
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (q & 1u)))
        q++;
    return (uint16_t)(sign | q);
}

uint16_t clf_test_to_bf16(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x0040u);
    uint32_t h = u >> 16, rem = u & 0xffffu;
    if (rem > 0x8000u || (rem == 0x8000u && (h & 1u)))
        h++; /* a carry into the exponent is right, up to inf */
    return (uint16_t)h;
}

float clf_test_from_f16(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return (float)((h & 0x8000u) ? copysign(v, -1.0) : v);
}

float clf_test_from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

void clf_test_fill_f16(uint16_t *p, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++)
        p[i] = clf_test_to_f16(clf_test_uniform(lo, hi));
}

void clf_test_fill_bf16(uint16_t *p, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++)
        p[i] = clf_test_to_bf16(clf_test_uniform(lo, hi));
}

int clf_test_close(clf_dtype dt, const void *got, const void *want, size_t n, double rtol,
                   double atol, char *msg, size_t cap)
{
    for (size_t i = 0; i < n; i++) {
        if (dt == CLF_F32) {
            double g = ((const float *)got)[i], w = ((const float *)want)[i];
            int ok;
            if (isnan(w))
                ok = isnan(g);
            else if (isinf(w))
                ok = g == w;
            else
                ok = !isnan(g) && fabs(g - w) <= atol + rtol * fabs(w);
            if (!ok) {
                snprintf(msg, cap, "element %zu: got %.9g, want %.9g", i, g, w);
                return 0;
            }
        } else if (dt == CLF_F16 || dt == CLF_BF16) {
            uint16_t gb = ((const uint16_t *)got)[i], wb = ((const uint16_t *)want)[i];
            double g = dt == CLF_F16 ? clf_test_from_f16(gb) : clf_test_from_bf16(gb);
            double w = dt == CLF_F16 ? clf_test_from_f16(wb) : clf_test_from_bf16(wb);
            int ok;
            if (isnan(w))
                ok = isnan(g);
            else if (rtol == 0 && atol == 0)
                ok = gb == wb;
            else if (isinf(w))
                ok = g == w;
            else
                ok = !isnan(g) && fabs(g - w) <= atol + rtol * fabs(w);
            if (!ok) {
                snprintf(msg, cap, "element %zu: got %.9g (0x%04x), want %.9g (0x%04x)", i, g, (unsigned)gb, w,
                         (unsigned)wb);
                return 0;
            }
        } else if (dt == CLF_I64) {
            int64_t g = ((const int64_t *)got)[i], w = ((const int64_t *)want)[i];
            if (g != w) {
                snprintf(msg, cap, "element %zu: got %lld, want %lld", i, (long long)g, (long long)w);
                return 0;
            }
        } else if (dt == CLF_I32) {
            int32_t g = ((const int32_t *)got)[i], w = ((const int32_t *)want)[i];
            if (g != w) {
                snprintf(msg, cap, "element %zu: got %d, want %d", i, (int)g, (int)w);
                return 0;
            }
        } else {
            uint8_t g = ((const uint8_t *)got)[i], w = ((const uint8_t *)want)[i];
            if (g != w) {
                snprintf(msg, cap, "element %zu: got %u, want %u", i, g, w);
                return 0;
            }
        }
    }
    return 1;
}

clf_context *clf_test_context(void)
{
    clf_context *ctx = NULL;
    clf_status st = clf_context_create(NULL, &ctx);
    ck_assert_msg(st == CLF_OK, "clf_context_create: %s", clf_status_name(st));
    return ctx;
}

bool clf_test_on_nvidia(clf_context *ctx)
{
    clf_device_desc dev;
    ck_assert_int_eq(clf_context_device(ctx, &dev), CLF_OK);
    return strstr(dev.platform_name, "NVIDIA") != NULL;
}

size_t clf_test_kernel_group_limit(clf_context *ctx)
{
    cl_command_queue queue = clf_context_queue(ctx);
    cl_device_id dev = NULL;
    cl_context cl = NULL;
    ck_assert_int_eq(clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL), CL_SUCCESS);
    ck_assert_int_eq(clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof cl, &cl, NULL), CL_SUCCESS);
    size_t device_limit = 0, kernel_limit = 0;
    ck_assert_int_eq(clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof device_limit, &device_limit, NULL),
                     CL_SUCCESS);
    const char *src = "__kernel void k(__global float *x) { x[get_global_id(0)] = 0.0f; }";
    cl_int err;
    cl_program p = clCreateProgramWithSource(cl, 1, &src, NULL, &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    ck_assert_int_eq(clBuildProgram(p, 1, &dev, "", NULL, NULL), CL_SUCCESS);
    cl_kernel k = clCreateKernel(p, "k", &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    ck_assert_int_eq(clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof kernel_limit, &kernel_limit,
                                              NULL),
                     CL_SUCCESS);
    clReleaseKernel(k);
    clReleaseProgram(p);
    return kernel_limit < device_limit ? kernel_limit : device_limit;
}

cl_command_queue clf_test_queue(clf_context *ctx, cl_int *err)
{
    cl_device_id dev = NULL;
    *err = clGetCommandQueueInfo(clf_context_queue(ctx), CL_QUEUE_DEVICE, sizeof dev, &dev, NULL);
    if (*err != CL_SUCCESS)
        return NULL;
    /* clCreateCommandQueue is the OpenCL 1.2 call every driver keeps. */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
    cl_command_queue q = clCreateCommandQueue(clf_context_cl(ctx), dev, 0, err);
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
    return q;
}

clf_test_log clf_test_log_begin(const char *topics)
{
    clf_test_log lc = {.path = "/tmp/clfuse-test-log-XXXXXX"};
    lc.fd = mkstemp(lc.path);
    ck_assert_int_ge(lc.fd, 0);
    fflush(stderr);
    lc.saved = dup(2);
    dup2(lc.fd, 2);
    setenv("CLFUSE_LOGS", topics, 1);
    return lc;
}

void clf_test_log_end(clf_test_log *lc, char *log, size_t cap)
{
    unsetenv("CLFUSE_LOGS");
    fflush(stderr);
    dup2(lc->saved, 2);
    close(lc->saved);
    ssize_t n = pread(lc->fd, log, cap - 1, 0);
    log[n > 0 ? n : 0] = '\0';
    close(lc->fd);
    unlink(lc->path);
}
