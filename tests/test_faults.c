/* Suite "faults": failures injected where PoCL rarely produces them.
 *  - The host allocator (clf_set_allocator): the Nth allocation fails, for
 *    N = 1, 2, ... until a whole context + graph + compile + run succeeds;
 *    each failure must come back as CLF_ERR_OUT_OF_MEMORY (or as the
 *    builder's sticky error), never a crash, and nothing may stay
 *    allocated once everything is destroyed.
 *  - OpenCL (libclfuse_fault.so, fault_cl.h): clCreateBuffer,
 *    clCreateSubBuffer, clBuildProgram, clCreateKernel,
 *    clEnqueueNDRangeKernel, clEnqueueWriteBuffer/ReadBuffer and the program
 *    creators fail with chosen errors; each must come back as the right
 *    status with the OpenCL error's name in the message, leak no OpenCL
 *    object, and leave the context usable. */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clfuse/onnx.h"
#include "fault_cl.h"
#include "runtime/runtime_internal.h"
#include "test_support.h"

/* ---- A counting allocator that fails on request ---------------------------- */

static pthread_mutex_t alloc_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long alloc_calls, alloc_fail_at, alloc_failed;
static long alloc_live;
static unsigned long last_attempt_calls; /* allocations before the destroys of the last attempt */

static bool alloc_should_fail(void)
{
    bool fail = ++alloc_calls == alloc_fail_at;
    if (fail)
        alloc_failed++;
    return fail;
}

static void *t_malloc(size_t n)
{
    pthread_mutex_lock(&alloc_lock);
    void *p = alloc_should_fail() ? NULL : malloc(n);
    if (p)
        alloc_live++;
    pthread_mutex_unlock(&alloc_lock);
    return p;
}

static void *t_realloc(void *old, size_t n)
{
    pthread_mutex_lock(&alloc_lock);
    void *p = alloc_should_fail() ? NULL : realloc(old, n);
    pthread_mutex_unlock(&alloc_lock);
    return p;
}

static void t_free(void *p)
{
    pthread_mutex_lock(&alloc_lock);
    alloc_live--;
    free(p);
    pthread_mutex_unlock(&alloc_lock);
}

/* Arms the allocator: the nth allocation from now fails (0: none). */
static void alloc_arm(unsigned long nth)
{
    pthread_mutex_lock(&alloc_lock);
    alloc_calls = 0;
    alloc_failed = 0;
    alloc_fail_at = nth;
    pthread_mutex_unlock(&alloc_lock);
}

START_TEST(allocator_arguments)
{
    ck_assert_int_eq(clf_set_allocator(t_malloc, NULL, t_free), CLF_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clf_set_allocator(NULL, t_realloc, NULL), CLF_ERR_INVALID_ARGUMENT);
    alloc_arm(0);
    ck_assert_int_eq(clf_set_allocator(t_malloc, t_realloc, t_free), CLF_OK);
    clf_graph *g = clf_graph_create();
    ck_assert_ptr_nonnull(g);
    ck_assert_uint_gt(alloc_calls, 0); /* the graph came from our allocator */
    ck_assert_int_gt(alloc_live, 0);
    clf_graph_destroy(&g);
    ck_assert_int_eq(alloc_live, 0);
    ck_assert_int_eq(clf_set_allocator(NULL, NULL, NULL), CLF_OK);
    unsigned long before = alloc_calls;
    g = clf_graph_create();
    clf_graph_destroy(&g);
    ck_assert_uint_eq(alloc_calls, before); /* the C library's again */
}
END_TEST

#define AN 2000

/* relu(a*b + c) and sum(relu(...) * k) over AN floats, k a tensor constant:
 * a kernel, an intermediate or two and a reduction. Built under the failing
 * allocator; *st receives the first failure. */
static clf_graph *alloc_graph(const float *k, clf_status *st)
{
    clf_graph *g = clf_graph_create();
    if (!g) {
        *st = CLF_ERR_OUT_OF_MEMORY;
        return NULL;
    }
    const int64_t n = AN;
    clf_tensor a = clf_input(g, "a", CLF_F32, 1, &n), b = clf_input(g, "b", CLF_F32, 1, &n),
               c = clf_input(g, "c", CLF_F32, 1, &n);
    clf_tensor y = clf_relu(g, clf_add(g, clf_mul(g, a, b), c));
    clf_graph_output(g, "y", y);
    int axis = 0;
    clf_graph_output(g, "s", clf_reduce_sum(g, clf_mul(g, y, clf_constant(g, CLF_F32, 1, &n, k)), 1, &axis, false));
    *st = clf_graph_status(g, NULL);
    return g;
}

/* The status of a step that failed under injection: out of memory, with a
 * message (when there was memory for one) that says so. */
static void expect_oom(clf_status st, const char *what, const char *msg, unsigned long n)
{
    ck_assert_msg(st == CLF_ERR_OUT_OF_MEMORY, "allocation %lu failed: %s gave %s (%s)", n, what,
                  clf_status_name(st), msg ? msg : "");
    if (msg && *msg)
        ck_assert_msg(strstr(msg, "memory") || strstr(msg, "MEMORY"), "allocation %lu: %s: \"%s\"", n, what, msg);
}

/* Removes the plan entries of dir (the program binaries stay). */
static void drop_plans(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    char path[600];
    for (struct dirent *de; (de = readdir(d));) {
        size_t len = strlen(de->d_name);
        if (len > 7 && strcmp(de->d_name + len - 7, ".clplan") == 0) {
            snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
            ck_assert_int_eq(unlink(path), 0);
        }
    }
    closedir(d);
}

/* Sweep variants: the plan cache off (planner and codegen run every time),
 * cold (they run, then the plan is stored), warm (the plan is loaded). */
enum { PLAN_OFF, PLAN_COLD, PLAN_WARM };
static const char *const plan_variant[] = {"plan cache off", "cold plan cache", "warm plan cache"};
static char sweep_dir[64];

/* The end of an attempt with allocation n failing: disarms the allocator,
 * destroys what the attempt made (model may be NULL), checks that nothing
 * it allocated is left, and says whether no allocation failed. */
static bool attempt_end(unsigned long n, clf_executable **exe, clf_onnx_model **model, clf_graph **g,
                        clf_context **ctx)
{
    last_attempt_calls = alloc_calls;
    bool failed = alloc_failed != 0;
    alloc_arm(0);
    clf_executable_destroy(exe);
    if (model)
        clf_onnx_model_destroy(model);
    clf_graph_destroy(g);
    clf_context_destroy(ctx);
    ck_assert_msg(alloc_live == 0, "allocation %lu failed: %ld allocations left after destroying everything", n,
                  alloc_live);
    return !failed;
}

/* One attempt with allocation n failing: everything made and destroyed,
 * checked. Returns true when no allocation failed (the sweep is over). */
static bool alloc_attempt(unsigned long n, int variant, const float *in3, const float *k, const float *want_y,
                          double want_s)
{
    bool plan_cache = variant != PLAN_OFF;
    if (variant == PLAN_COLD)
        drop_plans(sweep_dir);
    const float *a = in3, *b = in3 + AN, *c = in3 + 2 * AN;
    static float y[AN];
    float s = 0;
    alloc_arm(n);
    clf_status st;
    char msg[256] = "";
    clf_context *ctx = NULL;
    clf_graph *g = NULL;
    clf_executable *exe = NULL;
    st = clf_context_create(clf_context_params(.message = msg, .message_cap = sizeof msg), &ctx);
    if (st != CLF_OK) {
        ck_assert_ptr_null(ctx);
        expect_oom(st, "clf_context_create", msg, n);
        goto out;
    }
    ctx->plan_cache_off = !plan_cache;
    g = alloc_graph(k, &st);
    if (st != CLF_OK) {
        expect_oom(st, "building the graph", NULL, n);
        goto out;
    }
    st = clf_compile(ctx, g, NULL, &exe);
    if (st != CLF_OK) {
        ck_assert_ptr_null(exe);
        expect_oom(st, "clf_compile", clf_context_last_error(ctx), n);
        goto out;
    }
    memset(y, 0xff, sizeof y);
    clf_host_binding in[3] = {{"a", (void *)a}, {"b", (void *)b}, {"c", (void *)c}}, out[2] = {{"y", y}, {"s", &s}};
    st = clf_run_host(exe, 3, in, 2, out);
    if (st != CLF_OK) {
        expect_oom(st, "clf_run_host", clf_context_last_error(ctx), n);
        goto out;
    }
    /* Whatever failed on the way (a cache store, say) was absorbed: the
     * results must still be right. */
    /* Within the rounding of a*b + c, fused into one FMA or not (OpenCL
     * allows either: NVIDIA's compiler contracts, PoCL's does not here). */
    for (int i = 0; i < AN; i++) {
        float ab = fabsf(in3[i] * in3[AN + i]) + fabsf(in3[2 * AN + i]);
        ck_assert_msg(fabsf(y[i] - want_y[i]) <= 2.5e-7f * ab, "allocation %lu: y[%d] = %.9g, want %.9g", n, i,
                      (double)y[i], (double)want_y[i]);
    }
    ck_assert_msg(fabs(s - want_s) <= 1e-3 * fabs(want_s) + 1e-3, "allocation %lu: s = %g, want %g", n, (double)s,
                  want_s);
out:
    return attempt_end(n, &exe, NULL, &g, &ctx);
}

/* _i is the plan cache variant. The program binary comes from a warm disk
 * cache (a failure on that path falls back to a build from source). */
START_TEST(allocation_failures)
{
    snprintf(sweep_dir, sizeof sweep_dir, "/tmp/clfuse-faults-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(sweep_dir));
    setenv("CLFUSE_CACHE_DIR", sweep_dir, 1);
    float *in3 = malloc(3 * AN * sizeof *in3), *k = malloc(AN * sizeof *k), *want_y = malloc(AN * sizeof *want_y);
    clf_test_fill_f32(in3, 3 * AN, -1, 1);
    clf_test_fill_f32(k, AN, 0, 1);
    double want_s = 0;
    for (int i = 0; i < AN; i++) {
        want_y[i] = fmaxf(in3[i] * in3[AN + i] + in3[2 * AN + i], 0.0f);
        want_s += (double)want_y[i] * k[i];
    }
    ck_assert_int_eq(clf_set_allocator(t_malloc, t_realloc, t_free), CLF_OK);
    /* Warm the caches, and count the allocations of a whole attempt. */
    ck_assert(alloc_attempt(0, PLAN_WARM, in3, k, want_y, want_s));
    alloc_arm(0);
    ck_assert(alloc_attempt(0, _i, in3, k, want_y, want_s));
    unsigned long total = last_attempt_calls;
    ck_assert_uint_gt(total, 50);
    unsigned long n = 1;
    while (!alloc_attempt(n, _i, in3, k, want_y, want_s)) {
        n++;
        ck_assert_msg(n < 4 * total + 1000, "no end to the sweep after %lu attempts", n);
    }
    ck_assert_uint_gt(n, total / 2); /* it went through most of the attempt */
    ck_assert_int_eq(clf_set_allocator(NULL, NULL, NULL), CLF_OK);
    fprintf(stderr, "allocation_failures(%s): %lu allocations per attempt, each failed in turn\n",
            plan_variant[_i], n - 1);
    free(in3);
    free(k);
    free(want_y);
}
END_TEST

/* ---- OpenCL failures ---------------------------------------------------- */

#define FN 4096

typedef enum phase { COMPILE, RUN_HOST, RUN_OFFSETS } phase;

static const struct cl_fault {
    const char *fn;
    unsigned long nth;
    cl_int err;
    phase when;
    clf_status want;
    bool cold; /* with an empty disk cache (the build from source runs) */
    /* CLFUSE_WARP_SHUFFLE=1: short rows in the NVIDIA warp-shuffle form
     * (0 otherwise, so that every device builds the same kernels). */
    bool shuffles;
} cl_faults[] = {
    {"clCreateBuffer", 1, CL_MEM_OBJECT_ALLOCATION_FAILURE, COMPILE, CLF_ERR_OUT_OF_MEMORY, false, false},
    {"clCreateBuffer", 2, CL_OUT_OF_RESOURCES, COMPILE, CLF_ERR_OUT_OF_MEMORY, false, false},
    {"clCreateBuffer", 1, CL_OUT_OF_RESOURCES, RUN_HOST, CLF_ERR_OUT_OF_MEMORY, false, false},
    {"clCreateBuffer", 3, CL_OUT_OF_HOST_MEMORY, RUN_HOST, CLF_ERR_OUT_OF_MEMORY, false, false},
    {"clCreateSubBuffer", 1, CL_MEM_OBJECT_ALLOCATION_FAILURE, RUN_OFFSETS, CLF_ERR_OUT_OF_MEMORY, false, false},
    {"clCreateProgramWithSource", 1, CL_OUT_OF_HOST_MEMORY, COMPILE, CLF_ERR_OUT_OF_MEMORY, true, false},
    {"clBuildProgram", 1, CL_BUILD_PROGRAM_FAILURE, COMPILE, CLF_ERR_BUILD, true, false},
    {"clBuildProgram", 1, CL_OUT_OF_HOST_MEMORY, COMPILE, CLF_ERR_OUT_OF_MEMORY, true, false},
    {"clBuildProgram", 2, CL_OUT_OF_RESOURCES, COMPILE, CLF_ERR_OUT_OF_MEMORY, true, false},
    {"clBuildProgram", 1, CL_INVALID_OPERATION, COMPILE, CLF_ERR_BUILD, true, false},
    /* Only a driver refusing the source (CL_BUILD_PROGRAM_FAILURE) makes
     * clf_compile lower again without warp shuffles; other errors stand. */
    {"clBuildProgram", 1, CL_INVALID_OPERATION, COMPILE, CLF_ERR_BUILD, true, true},
    {"clCreateKernel", 1, CL_OUT_OF_RESOURCES, COMPILE, CLF_ERR_OUT_OF_MEMORY, false, false},
    {"clCreateKernel", 2, CL_OUT_OF_HOST_MEMORY, COMPILE, CLF_ERR_OUT_OF_MEMORY, false, false},
    {"clEnqueueNDRangeKernel", 1, CL_OUT_OF_RESOURCES, RUN_HOST, CLF_ERR_OUT_OF_MEMORY, false, false},
    {"clEnqueueNDRangeKernel", 2, CL_MEM_OBJECT_ALLOCATION_FAILURE, RUN_OFFSETS, CLF_ERR_OUT_OF_MEMORY, false, false},
    {"clEnqueueNDRangeKernel", 1, CL_INVALID_WORK_GROUP_SIZE, RUN_OFFSETS, CLF_ERR_OPENCL, false, false},
    {"clEnqueueWriteBuffer", 2, CL_MEM_OBJECT_ALLOCATION_FAILURE, RUN_HOST, CLF_ERR_OUT_OF_MEMORY, false, false},
    {"clEnqueueReadBuffer", 1, CL_OUT_OF_RESOURCES, RUN_HOST, CLF_ERR_OUT_OF_MEMORY, false, false},
    {"clEnqueueReadBuffer", 2, CL_OUT_OF_HOST_MEMORY, RUN_HOST, CLF_ERR_OUT_OF_MEMORY, false, false},
};

static const char *cl_err_name(cl_int e)
{
    switch (e) {
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
    case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_WORK_GROUP_SIZE: return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_OPERATION: return "CL_INVALID_OPERATION";
    default: return "?";
    }
}

/* Two kernels through an intermediate (the reduction needs the max first),
 * a tensor constant, and a split reduction of the whole tensor: every kind
 * of buffer the executable owns. */
static clf_graph *fault_graph(void)
{
    clf_graph *g = clf_graph_create();
    const int64_t shape[2] = {4, FN / 4}, kshape[1] = {FN / 4};
    static float k[FN / 4];
    for (int i = 0; i < FN / 4; i++)
        k[i] = 1.0f + (float)(i % 5);
    clf_tensor a = clf_input(g, "a", CLF_F32, 2, shape), b = clf_input(g, "b", CLF_F32, 2, shape);
    clf_tensor t = clf_mul(g, clf_add(g, a, b), clf_constant(g, CLF_F32, 1, kshape, k));
    int ax0 = 0, ax1 = 1;
    /* A column maximum read along rows goes through memory. */
    clf_tensor colmax = clf_reduce_max(g, t, 1, &ax0, true);
    clf_tensor d = clf_sub(g, t, colmax);
    clf_graph_output(g, "y", clf_mul(g, d, clf_reduce_sum(g, d, 1, &ax1, true)));
    clf_graph_output(g, "s", clf_reduce_sum(g, t, 0, NULL, false));
    ck_assert_int_eq(clf_graph_status(g, NULL), CLF_OK);
    return g;
}

/* Runs exe on fresh inputs (through host memory, or through one device
 * buffer at aligned offsets with clf_enqueue) and checks the results
 * against the reference; returns the status instead when it fails. */
static clf_status run_checked(clf_context *ctx, const clf_graph *g, clf_executable *exe, phase how)
{
    static float a[FN], b[FN], y[FN], yw[FN];
    float s = 0, sw = 0;
    clf_test_fill_f32(a, FN, -1, 1);
    clf_test_fill_f32(b, FN, -1, 1);
    clf_host_binding in[2] = {{"a", a}, {"b", b}}, out[2] = {{"y", y}, {"s", &s}}, want[2] = {{"y", yw}, {"s", &sw}};
    char msg[256];
    ck_assert_int_eq(clf_reference_run(g, 2, in, 2, want, msg, sizeof msg), CLF_OK);
    clf_status st;
    if (how == RUN_HOST) {
        st = clf_run_host(exe, 2, in, 2, out);
    } else {
        clf_device_desc d;
        clf_context_device(ctx, &d);
        size_t bytes = FN * sizeof(float), step = (bytes + d.base_align - 1) / d.base_align * d.base_align;
        cl_int err;
        cl_command_queue q = clf_context_queue(ctx);
        cl_mem buf = clCreateBuffer(clf_context_cl(ctx), CL_MEM_READ_WRITE, d.base_align + 4 * step, NULL, &err);
        ck_assert_ptr_nonnull(buf);
        ck_assert_int_eq(clEnqueueWriteBuffer(q, buf, CL_TRUE, d.base_align, bytes, a, 0, NULL, NULL), CL_SUCCESS);
        ck_assert_int_eq(clEnqueueWriteBuffer(q, buf, CL_TRUE, d.base_align + step, bytes, b, 0, NULL, NULL),
                         CL_SUCCESS);
        clf_buffer_view vi[2] = {{"a", buf, d.base_align}, {"b", buf, d.base_align + step}},
                        vo[2] = {{"y", buf, d.base_align + 2 * step}, {"s", buf, d.base_align + 3 * step}};
        cl_event done = NULL;
        st = clf_enqueue(exe, NULL, 2, vi, 2, vo, 0, NULL, &done);
        if (st == CLF_OK) {
            ck_assert_int_eq(clEnqueueReadBuffer(q, buf, CL_TRUE, d.base_align + 2 * step, bytes, y, 1, &done, NULL),
                             CL_SUCCESS);
            ck_assert_int_eq(clEnqueueReadBuffer(q, buf, CL_TRUE, d.base_align + 3 * step, sizeof s, &s, 0, NULL, NULL),
                             CL_SUCCESS);
            clReleaseEvent(done);
        }
        ck_assert_int_eq(clFinish(q), CL_SUCCESS);
        clReleaseMemObject(buf);
    }
    if (st != CLF_OK)
        return st;
    /* y = d * sum(d) with d = t - max(t): where d is 0 in exact arithmetic
     * an FMA-contracting compiler leaves t's rounding error (about 1e-7 of
     * |t|), times sum(d); the absolute tolerance is that, at y's scale. */
    float scale = 0;
    for (int i = 0; i < FN; i++)
        scale = fmaxf(scale, fabsf(yw[i]));
    ck_assert_msg(clf_test_close(CLF_F32, y, yw, FN, 1e-5, 1e-5 + 1e-6 * scale, msg, sizeof msg), "y: %s", msg);
    ck_assert_msg(clf_test_close(CLF_F32, &s, &sw, 1, 1e-4, 1e-3, msg, sizeof msg), "s: %s", msg);
    return CLF_OK;
}

/* CLFUSE_CACHE_DIR at a new empty directory: the next context's compiles
 * are cold. */
static void fresh_cache_dir(void)
{
    char dir[] = "/tmp/clfuse-faults-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    setenv("CLFUSE_CACHE_DIR", dir, 1);
}

START_TEST(opencl_failures)
{
    const struct cl_fault *f = &cl_faults[_i];
    fresh_cache_dir();
    setenv("CLFUSE_WARP_SHUFFLE", f->shuffles ? "1" : "0", 1);
    /* A program per source, so that the nth build is one kernel's (a
     * merged program that fails is built apart: merged_build_refused). */
    setenv("CLFUSE_ONE_PROGRAM", "0", 1);
    /* The shuffle form is a GPU-template form: PoCL takes it when asked. */
    const clf_compile_params *params = f->shuffles ? clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU) : NULL;
    clf_graph *g = fault_graph();
    long mem0 = clf_fault_live("mem"), ker0 = clf_fault_live("kernel"), prog0 = clf_fault_live("program"),
         ev0 = clf_fault_live("event");
    clf_context *ctx = clf_test_context();
    clf_executable *exe = NULL;
    if (!f->cold) {
        /* Warm the disk cache (plan and program) on another context. */
        clf_context *warm = clf_test_context();
        ck_assert_int_eq(clf_compile(warm, g, params, &exe), CLF_OK);
        clf_executable_destroy(&exe);
        clf_context_destroy(&warm);
    }
    /* The calls went through the interposer: the test is not vacuous. */
    unsigned long calls0 = clf_fault_calls(f->fn);
    if (f->when != COMPILE)
        ck_assert_int_eq(clf_compile(ctx, g, params, &exe), CLF_OK);
    ck_assert_int_eq(clf_fault_arm(f->fn, f->nth, f->err), 0);
    unsigned long inj0 = clf_fault_injected();
    clf_status st = f->when == COMPILE ? clf_compile(ctx, g, params, &exe) : run_checked(ctx, g, exe, f->when);
    clf_fault_clear();
    ck_assert_msg(clf_fault_injected() == inj0 + 1, "%s #%lu was not reached (%lu calls)", f->fn, f->nth,
                  clf_fault_calls(f->fn) - calls0);
    const char *why = clf_context_last_error(ctx);
    ck_assert_msg(st == f->want, "%s #%lu failing with %s: got %s, want %s (%s)", f->fn, f->nth, cl_err_name(f->err),
                  clf_status_name(st), clf_status_name(f->want), why);
    ck_assert_msg(strstr(why, cl_err_name(f->err)), "the message should name %s: \"%s\"", cl_err_name(f->err), why);
    ck_assert_msg(strstr(why, f->fn) || (strcmp(f->fn, "clBuildProgram") == 0 && strstr(why, "failed to build")),
                  "the message should name %s: \"%s\"", f->fn, why);
    if (f->when == COMPILE)
        ck_assert_ptr_null(exe);

    /* The context (and the executable) still work. */
    if (!exe)
        ck_assert_int_eq(clf_compile(ctx, g, params, &exe), CLF_OK);
    ck_assert_int_eq(run_checked(ctx, g, exe, RUN_HOST), CLF_OK);
    ck_assert_int_eq(run_checked(ctx, g, exe, RUN_OFFSETS), CLF_OK);
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
    /* And nothing of OpenCL's leaked. */
    ck_assert_int_eq(clf_fault_live("mem"), mem0);
    ck_assert_int_eq(clf_fault_live("kernel"), ker0);
    ck_assert_int_eq(clf_fault_live("program"), prog0);
    ck_assert_int_eq(clf_fault_live("event"), ev0);
    clf_graph_destroy(&g);
}
END_TEST

/* A binary that the driver refuses to build from the disk cache is
 * discarded and rebuilt from source: the compile succeeds. */
START_TEST(cached_binary_build_fails)
{
    fresh_cache_dir();
    clf_graph *g = fault_graph();
    clf_context *ctx = clf_test_context();
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, g, NULL, &exe), CLF_OK);
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
    ctx = clf_test_context();
    ck_assert_int_eq(clf_fault_arm("clBuildProgram", 1, CL_INVALID_BINARY), 0);
    ck_assert_int_eq(clf_compile(ctx, g, NULL, &exe), CLF_OK);
    clf_fault_clear();
    clf__program_counts c;
    clf__program_cache_counts(ctx, &c);
    ck_assert_uint_eq(c.disk_discards, 1);
    ck_assert_uint_ge(c.source_builds, 1);
    ck_assert_int_eq(run_checked(ctx, g, exe, RUN_HOST), CLF_OK);
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
    clf_graph_destroy(&g);
}
END_TEST

/* Programs built in threads (CLFUSE_BUILD_THREADS): a build that fails in
 * a worker thread is reported on the caller's thread, naming a kernel, the
 * OpenCL error and the build log's place; nothing leaks, and the context
 * then compiles the graph. */
START_TEST(build_failure_in_a_build_thread)
{
    fresh_cache_dir(); /* cold: every program is built */
    setenv("CLFUSE_BUILD_THREADS", "4", 1);
    setenv("CLFUSE_ONE_PROGRAM", "0", 1);
    clf_graph *g = fault_graph();
    long prog0 = clf_fault_live("program"), ker0 = clf_fault_live("kernel");
    clf_context *ctx = clf_test_context();
    clf_executable *exe = NULL;
    unsigned long builds0 = clf_fault_calls("clBuildProgram");
    ck_assert_int_eq(clf_fault_arm("clBuildProgram", 2, CL_BUILD_PROGRAM_FAILURE), 0);
    clf_status st = clf_compile(ctx, g, NULL, &exe);
    clf_fault_clear();
    const char *why = clf_context_last_error(ctx);
    ck_assert_msg(clf_fault_calls("clBuildProgram") >= builds0 + 2, "the second build was not reached");
    ck_assert_msg(st == CLF_ERR_BUILD, "got %s (%s)", clf_status_name(st), why);
    ck_assert_ptr_null(exe);
    ck_assert_msg(strstr(why, "clf_compile: kernel clf_") && strstr(why, "failed to build") &&
                      strstr(why, "CL_BUILD_PROGRAM_FAILURE") && strstr(why, "build log"),
                  "\"%s\"", why);
    ck_assert_int_eq(clf_compile(ctx, g, NULL, &exe), CLF_OK);
    ck_assert_int_eq(run_checked(ctx, g, exe, RUN_HOST), CLF_OK);
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
    unsetenv("CLFUSE_BUILD_THREADS");
    ck_assert_int_eq(clf_fault_live("program"), prog0);
    ck_assert_int_eq(clf_fault_live("kernel"), ker0);
    clf_graph_destroy(&g);
}
END_TEST

/* A merged program (CLFUSE_ONE_PROGRAM=1) that the driver refuses: the
 * sources are built apart (each build counted) and the compile succeeds;
 * nothing leaks. */
START_TEST(merged_build_refused)
{
    fresh_cache_dir();
    setenv("CLFUSE_ONE_PROGRAM", "1", 1);
    clf_graph *g = fault_graph();
    long prog0 = clf_fault_live("program");
    clf_context *ctx = clf_test_context();
    clf_executable *exe = NULL;
    unsigned long builds0 = clf_fault_calls("clBuildProgram");
    ck_assert_int_eq(clf_fault_arm("clBuildProgram", 1, CL_BUILD_PROGRAM_FAILURE), 0);
    clf_status st = clf_compile(ctx, g, NULL, &exe);
    clf_fault_clear();
    ck_assert_msg(st == CLF_OK, "%s: %s", clf_status_name(st), clf_context_last_error(ctx));
    const unsigned long builds = clf_fault_calls("clBuildProgram") - builds0;
    clf__program_counts c;
    clf__program_cache_counts(ctx, &c);
    ck_assert_uint_ge(c.source_builds, 3); /* the merged one, then two or more apart */
    ck_assert_uint_eq(builds, c.source_builds);
    ck_assert_int_eq(run_checked(ctx, g, exe, RUN_HOST), CLF_OK);
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
    unsetenv("CLFUSE_ONE_PROGRAM");
    ck_assert_int_eq(clf_fault_live("program"), prog0);
    clf_graph_destroy(&g);
}
END_TEST

/* clf_enqueue (and clf_run, which is the same path at offset 0) never
 * blocks: no clFinish, no clWaitForEvents, no transfer. */
START_TEST(async_path_does_not_block)
{
    clf_graph *g = fault_graph();
    clf_context *ctx = clf_test_context();
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, g, NULL, &exe), CLF_OK);
    cl_int err;
    cl_mem buf = clCreateBuffer(clf_context_cl(ctx), CL_MEM_READ_WRITE, 8 * FN * sizeof(float), NULL, &err);
    cl_event gate = clCreateUserEvent(clf_context_cl(ctx), &err), done = NULL;
    clf_device_desc d;
    clf_context_device(ctx, &d);
    size_t step = (FN * sizeof(float) + d.base_align - 1) / d.base_align * d.base_align;
    clf_buffer_view vi[2] = {{"a", buf, 0}, {"b", buf, step}}, vo[2] = {{"y", buf, 2 * step}, {"s", buf, 3 * step}};
    unsigned long fin = clf_fault_calls("clFinish"), wait = clf_fault_calls("clWaitForEvents");
    unsigned long rd = clf_fault_calls("clEnqueueReadBuffer"), wr = clf_fault_calls("clEnqueueWriteBuffer");
    /* Held back by a user event that nobody has set: a blocking call in
     * there would hang the test. */
    for (int r = 0; r < 3; r++) {
        ck_assert_int_eq(clf_enqueue(exe, NULL, 2, vi, 2, vo, 1, &gate, &done), CLF_OK);
        clReleaseEvent(done);
    }
    ck_assert_uint_eq(clf_fault_calls("clFinish"), fin);
    ck_assert_uint_eq(clf_fault_calls("clWaitForEvents"), wait);
    ck_assert_uint_eq(clf_fault_calls("clEnqueueReadBuffer"), rd);
    ck_assert_uint_eq(clf_fault_calls("clEnqueueWriteBuffer"), wr);
    ck_assert_int_eq(clSetUserEventStatus(gate, CL_COMPLETE), CL_SUCCESS);
    ck_assert_int_eq(clFinish(clf_context_queue(ctx)), CL_SUCCESS);
    clReleaseEvent(gate);
    clReleaseMemObject(buf);
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
    clf_graph_destroy(&g);
}
END_TEST

/* A kernel whose registers allow only smaller work-groups than planned
 * (CL_KERNEL_WORK_GROUP_SIZE capped at 64 here; an NVIDIA GPU does this for
 * a 1024-lane persistent softmax with a prologue): the compile lowers
 * again within the limit, and the results stay right, for a GPU-form
 * reduction and a GPU-form GEMM. */
START_TEST(kernel_work_group_limit)
{
    clf_context *ctx = NULL;
    ck_assert_int_eq(clf_context_create(clf_context_params(.disable_disk_cache = true), &ctx), CLF_OK);
    clf_graph *g = clf_graph_create();
    const int64_t xs[2] = {3, 4096}, as[2] = {40, 36}, ws[2] = {36, 140};
    clf_tensor x = clf_input(g, "x", CLF_F32, 2, xs);
    clf_graph_output(g, "p", clf_softmax(g, clf_exp(g, clf_neg(g, clf_abs(g, x))), 1));
    clf_tensor a = clf_input(g, "a", CLF_F32, 2, as), w = clf_input(g, "w", CLF_F32, 2, ws);
    clf_graph_output(g, "y", clf_relu(g, clf_matmul(g, a, w)));
    static float xd[3 * 4096], ad[40 * 36], wd[36 * 140], p[3 * 4096], pw[3 * 4096], y[40 * 140], yw[40 * 140];
    clf_test_fill_f32(xd, 3 * 4096, -3, 3);
    clf_test_fill_f32(ad, 40 * 36, -1, 1);
    clf_test_fill_f32(wd, 36 * 140, -1, 1);
    clf_host_binding in[3] = {{"x", xd}, {"a", ad}, {"w", wd}};
    clf_host_binding out[2] = {{"p", p}, {"y", y}}, want[2] = {{"p", pw}, {"y", yw}};
    char msg[256];
    ck_assert_int_eq(clf_reference_run(g, 3, in, 2, want, msg, sizeof msg), CLF_OK);

    clf_fault_cap_work_group(64);
    clf_executable *exe = NULL;
    clf_status st = clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU), &exe);
    clf_fault_cap_work_group(0);
    ck_assert_msg(st == CLF_OK, "%s: %s", clf_status_name(st), clf_context_last_error(ctx));
    bool saw_gemm = false;
    for (size_t k = 0; k < clf_executable_kernel_count(exe); k++) {
        const char *src = clf_executable_kernel_source(exe, k);
        const char *wg = strstr(src, "#define WG ");
        if (wg)
            ck_assert_msg(atoi(wg + 11) <= 64, "kernel %s still planned in groups of %d", clf_executable_kernel_name(exe, k),
                          atoi(wg + 11));
        if (strstr(src, "kernels_templates/gemm.cl")) {
            saw_gemm = true;
            /* (TM / WM) * (TN / WN) work-items within the cap (64 where
             * the device allows as many: 32/4 * 32/4; fewer where a
             * kernel's own limit is lower, as on rusticl's llvmpipe). */
            const char *tm = strstr(src, "#define TM "), *tn = strstr(src, "#define TN "),
                       *wm = strstr(src, "#define WM "), *wn = strstr(src, "#define WN ");
            ck_assert(tm && tn && wm && wn);
            int items = (atoi(tm + 11) / atoi(wm + 11)) * (atoi(tn + 11) / atoi(wn + 11));
            ck_assert_msg(items <= 64 && items >= 16, "GEMM kernel %s: %d work-items a group",
                          clf_executable_kernel_name(exe, k), items);
        }
    }
    ck_assert(saw_gemm);
    ck_assert_int_eq(clf_run_host(exe, 3, in, 2, out), CLF_OK);
    ck_assert_msg(clf_test_close(CLF_F32, p, pw, 3 * 4096, 1e-5, 1e-7, msg, sizeof msg), "p: %s", msg);
    ck_assert_msg(clf_test_close(CLF_F32, y, yw, 40 * 140, 1e-4, 1e-4, msg, sizeof msg), "y: %s", msg);
    clf_executable_destroy(&exe);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

/* A driver whose CL_KERNEL_WORK_GROUP_SIZE is below what a kernel really
 * runs at (NVIDIA's said 256 for a persistent softmax that an H200 runs in
 * groups of 512): a GPU reduction kernel keeps its planned work-groups,
 * which an idle trial launch confirms, and its results stay right. */
START_TEST(understated_work_group_limit)
{
    clf_context *ctx = NULL;
    ck_assert_int_eq(clf_context_create(clf_context_params(.disable_disk_cache = true), &ctx), CLF_OK);
    clf_graph *g = clf_graph_create();
    const int64_t xs[2] = {3, 4096};
    clf_tensor x = clf_input(g, "x", CLF_F32, 2, xs);
    clf_graph_output(g, "p", clf_softmax(g, x, 1));
    static float xd[3 * 4096], p[3 * 4096], pw[3 * 4096];
    clf_test_fill_f32(xd, 3 * 4096, -3, 3);
    clf_host_binding in[1] = {{"x", xd}}, out[1] = {{"p", p}}, want[1] = {{"p", pw}};
    char msg[256];
    ck_assert_int_eq(clf_reference_run(g, 1, in, 1, want, msg, sizeof msg), CLF_OK);

    clf_fault_understate_work_group(64);
    clf_executable *exe = NULL;
    clf_status st = clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU), &exe);
    ck_assert_msg(st == CLF_OK, "%s: %s", clf_status_name(st), clf_context_last_error(ctx));
    ck_assert_uint_eq(clf_executable_kernel_count(exe), 1);
    const char *src = clf_executable_kernel_source(exe, 0);
    ck_assert_msg(strstr(src, "#define WG 256\n") && strstr(src, "#define CACHE 8\n"), "%s", src);
    ck_assert_int_eq(clf_run_host(exe, 1, in, 1, out), CLF_OK);
    clf_fault_understate_work_group(0);
    ck_assert_msg(clf_test_close(CLF_F32, p, pw, 3 * 4096, 1e-5, 1e-7, msg, sizeof msg), "p: %s", msg);
    clf_executable_destroy(&exe);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

/* A driver whose profiling timestamps are not real: the context finds out
 * when it is made (a timed fill), clf_executable_last_profile refuses and
 * says why, and a context without the fault on the same device is believed. */
START_TEST(fake_profiling_timestamps)
{
    clf_graph *g = clf_graph_create();
    const int64_t n = 4096;
    clf_tensor x = clf_input(g, "x", CLF_F32, 1, &n);
    clf_graph_output(g, "y", clf_exp(g, x));
    static float xd[4096], y[4096];
    clf_test_fill_f32(xd, 4096, -1, 1);
    clf_host_binding in[1] = {{"x", xd}}, out[1] = {{"y", y}};
    for (int fake = 1; fake >= 0; fake--) {
        clf_fault_fake_timestamps(fake);
        clf_context *ctx = NULL;
        ck_assert_int_eq(clf_context_create(clf_context_params(.profiling = true), &ctx), CLF_OK);
        clf_fault_fake_timestamps(0);
        clf_executable *exe = NULL;
        ck_assert_int_eq(clf_compile(ctx, g, NULL, &exe), CLF_OK);
        ck_assert_int_eq(clf_run_host(exe, 1, in, 1, out), CLF_OK);
        clf_run_profile p;
        clf_status st = clf_executable_last_profile(exe, &p, NULL, 0);
        if (fake)
            ck_assert(!clf_context_timestamps_real(ctx));
        /* Without the fault, as the device says (rusticl's llvmpipe fakes
         * them itself). */
        if (fake || !clf_context_timestamps_real(ctx)) {
            ck_assert_int_eq(st, CLF_ERR_UNSUPPORTED);
            const char *why = clf_context_last_error(ctx);
            ck_assert_msg(strstr(why, "timestamps are not real") && strstr(why, "16 MiB fill"), "%s", why);
        } else {
            ck_assert_msg(st == CLF_OK, "%s", clf_context_last_error(ctx));
            ck_assert_uint_eq(p.kernels, 1);
            ck_assert_uint_gt(p.kernel_ns_total, 0);
        }
        clf_executable_destroy(&exe);
        clf_context_destroy(&ctx);
    }
    clf_graph_destroy(&g);
}
END_TEST

/* ---- A graph with symbolic sizes under failing allocations -------------- */

#define SD 8 /* width of the symbolic graph's rows */

/* x [S, SD] * w, then a mean over S and a softmax along rows: a
 * specialisation per length, the probes, the lift table and the count
 * constant made again per size. *st receives the builder's status. */
static clf_graph *symbolic_graph(const float *w, clf_status *st)
{
    clf_graph *g = clf_graph_create();
    if (!g) {
        *st = CLF_ERR_OUT_OF_MEMORY;
        return NULL;
    }
    int64_t s = clf_dim(g, "S", 1, 64);
    clf_tensor x = clf_input(g, "x", CLF_F32, 2, (int64_t[]){s, SD});
    clf_tensor h = clf_mul(g, x, clf_constant(g, CLF_F32, 1, (int64_t[]){SD}, w));
    int axis0 = 0;
    clf_graph_output(g, "m", clf_reduce_mean(g, h, 1, &axis0, false));
    clf_graph_output(g, "p", clf_softmax(g, h, -1));
    *st = clf_graph_status(g, NULL);
    return g;
}

/* The reference at the given shapes, its allocations failing no more
 * (an attempt's failure is the library's, not the oracle's). */
static void reference_unfailed(const clf_graph *g, size_t nin, const clf_host_binding *in,
                               const int64_t *const *shapes, size_t nout, const clf_host_binding *out)
{
    char msg[256];
    unsigned long fail_at = alloc_fail_at;
    alloc_fail_at = 0;
    ck_assert_msg(clf_reference_run_shaped(g, nin, in, shapes, nout, out, msg, sizeof msg) == CLF_OK, "%s", msg);
    alloc_fail_at = fail_at;
}

/* One attempt with allocation n failing: compile, run at two lengths
 * against the reference, destroy; true when nothing failed. */
static float symbolic_w[SD];

static bool symbolic_attempt(unsigned long n)
{
    const float *w = symbolic_w;
    static const int64_t lengths[2] = {5, 9};
    static float x[9 * SD], p[9 * SD], wp[9 * SD], m[SD], wm[SD];
    alloc_arm(n);
    clf_status st;
    char msg[256] = "";
    clf_context *ctx = NULL;
    clf_graph *g = NULL;
    clf_executable *exe = NULL;
    st = clf_context_create(clf_context_params(.message = msg, .message_cap = sizeof msg), &ctx);
    if (st != CLF_OK) {
        expect_oom(st, "clf_context_create", msg, n);
        goto out;
    }
    g = symbolic_graph(w, &st);
    if (st != CLF_OK) {
        expect_oom(st, "building the graph", NULL, n);
        goto out;
    }
    st = clf_compile(ctx, g, NULL, &exe);
    if (st != CLF_OK) {
        ck_assert_ptr_null(exe);
        expect_oom(st, "clf_compile", clf_context_last_error(ctx), n);
        goto out;
    }
    for (int k = 0; k < 2; k++) {
        const int64_t xs[2] = {lengths[k], SD};
        const int64_t *shapes[1] = {xs};
        clf_test_fill_f32(x, (size_t)(lengths[k] * SD), -1, 1);
        clf_host_binding in[1] = {{"x", x}}, out[2] = {{"m", m}, {"p", p}}, want[2] = {{"m", wm}, {"p", wp}};
        st = clf_run_host_shaped(exe, 1, in, shapes, 2, out);
        if (st != CLF_OK) {
            expect_oom(st, "clf_run_host_shaped", clf_context_last_error(ctx), n);
            goto out;
        }
        reference_unfailed(g, 1, in, shapes, 2, want);
        ck_assert_msg(clf_test_close(CLF_F32, m, wm, SD, 1e-5, 1e-6, msg, sizeof msg), "allocation %lu: m: %s", n, msg);
        ck_assert_msg(clf_test_close(CLF_F32, p, wp, (size_t)(lengths[k] * SD), 1e-5, 1e-6, msg, sizeof msg),
                      "allocation %lu: p: %s", n, msg);
    }
out:
    return attempt_end(n, &exe, NULL, &g, &ctx);
}

/* Allocations failing in a sample of the points of an attempt (a symbolic
 * compile makes thousands: the probes generate the kernels at a dozen
 * sizes): each of the first 300, then 300 spread over the rest. An
 * attempt's allocations vary a little with what earlier attempts left in
 * the disk cache, so most sampled points, not all, must fail. */
static void sampled_sweep(const char *name, bool (*attempt)(unsigned long n))
{
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/clfuse-faults-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    setenv("CLFUSE_CACHE_DIR", dir, 1);
    ck_assert_int_eq(clf_set_allocator(t_malloc, t_realloc, t_free), CLF_OK);
    ck_assert(attempt(0)); /* warm the caches */
    ck_assert(attempt(0));
    const unsigned long total = last_attempt_calls;
    ck_assert_uint_gt(total, 1000);
    unsigned long tried = 0, failed = 0;
    for (unsigned long n = 1; n < total; n += n < 300 ? 1 : total / 300 + 1, tried++)
        failed += !attempt(n);
    ck_assert_msg(failed >= tried * 9 / 10, "%lu of %lu sampled allocations failed", failed, tried);
    ck_assert_int_eq(clf_set_allocator(NULL, NULL, NULL), CLF_OK);
    fprintf(stderr, "%s: %lu allocations per attempt, %lu of them failed in turn\n", name, total, failed);
}

START_TEST(symbolic_allocation_failures)
{
    clf_test_fill_f32(symbolic_w, SD, -1, 1);
    sampled_sweep("symbolic_allocation_failures", symbolic_attempt);
}
END_TEST

/* Attempt n's load of an ONNX text model with p (its message set here),
 * the graph taken from the model, a context and the compile: false after
 * checking that what failed failed for an allocation. */
static bool onnx_compiled(const char *text, size_t len, clf_onnx_params p, unsigned long n, clf_graph **g,
                          clf_context **ctx, clf_executable **exe)
{
    char msg[256] = "";
    clf_onnx_model *model = NULL;
    p.message = msg;
    p.message_cap = sizeof msg;
    clf_status st = clf_onnx_load_memory(text, len, NULL, &p, &model);
    if (st != CLF_OK) {
        ck_assert_ptr_null(model);
        expect_oom(st, "clf_onnx_load_memory", msg, n);
        return false;
    }
    *g = clf_onnx_model_take_graph(model);
    clf_onnx_model_destroy(&model);
    st = clf_context_create(clf_context_params(.message = msg, .message_cap = sizeof msg), ctx);
    if (st != CLF_OK) {
        expect_oom(st, "clf_context_create", msg, n);
        return false;
    }
    st = clf_compile(*ctx, *g, NULL, exe);
    if (st != CLF_OK) {
        expect_oom(st, "clf_compile", clf_context_last_error(*ctx), n);
        return false;
    }
    return true;
}

/* An ONNX model with a symbolic dimension (its import made again per size,
 * the AST shared by the model and the graph's regen, the weight borrowed):
 * load, compile, take the graph, drop the model, run at two lengths. */
static const char onnx_symbolic_text[] =
    "<ir_version: 8, opset_import: [\"\" : 17]>\n"
    "g (float[S, 4] x) => (float[S, 4] y) <float[4, 4] w = {1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 3, 0, 0, 0, 0, 4}, "
    "int64[1] one = {1}, int64[1] last = {-1}> {\n"
    "  h = MatMul(x, w)\n  shp = Shape(x)\n  s = Gather <axis = 0> (shp, one)\n"
    "  rows = Concat <axis = 0> (last, s)\n  t = Reshape(h, rows)\n  sm = Softmax <axis = 0> (t)\n"
    "  y = Reshape(sm, shp)\n}\n";

static bool onnx_symbolic_attempt(unsigned long n)
{
    static float x[9 * 4], y[9 * 4], wy[9 * 4];
    alloc_arm(n);
    char msg[256] = "";
    clf_context *ctx = NULL;
    clf_graph *g = NULL;
    clf_executable *exe = NULL;
    clf_status st;
    clf_onnx_symbol sym = {"S", 1, 16};
    if (!onnx_compiled(onnx_symbolic_text, sizeof onnx_symbolic_text - 1,
                       (clf_onnx_params){.symbols = &sym, .nsymbols = 1}, n, &g, &ctx, &exe))
        goto out;
    for (int64_t len = 5; len <= 9; len += 4) {
        const int64_t xs[2] = {len, 4};
        const int64_t *shapes[1] = {xs};
        clf_test_fill_f32(x, (size_t)(len * 4), -1, 1);
        clf_host_binding in[1] = {{"x", x}}, out[1] = {{"y", y}}, want[1] = {{"y", wy}};
        st = clf_run_host_shaped(exe, 1, in, shapes, 1, out);
        if (st != CLF_OK) {
            expect_oom(st, "clf_run_host_shaped", clf_context_last_error(ctx), n);
            goto out;
        }
        reference_unfailed(g, 1, in, shapes, 1, want);
        ck_assert_msg(clf_test_close(CLF_F32, y, wy, (size_t)(len * 4), 1e-5, 1e-6, msg, sizeof msg),
                      "allocation %lu: y: %s", n, msg);
    }
out:
    return attempt_end(n, &exe, NULL, &g, &ctx);
}

START_TEST(onnx_symbolic_allocation_failures)
{
    sampled_sweep("onnx_symbolic_allocation_failures", onnx_symbolic_attempt);
}
END_TEST

/* An ONNX model with a KV cache (clf_onnx_kv_cache): present = Concat(past,
 * x) along its rows, past's length derived (T - S); load, compile, run at
 * two sizes on the host (the cache in and out by value). */
static const char onnx_kv_text[] =
    "<ir_version: 8, opset_import: [\"\" : 17]>\n"
    "g (float[S, 4] x, float[P, 4] past) => (float[S, 4] y, float[T, 4] present) <int64[1] zero = {0}> {\n"
    "  present = Concat <axis = 0> (past, x)\n  s = ReduceSum <keepdims = 1> (present, zero)\n"
    "  y = Add(x, s)\n}\n";

static bool onnx_kv_attempt(unsigned long n)
{
    static float x[4 * 4], y[4 * 4], wy[4 * 4], cache[16 * 4], got[16 * 4], want[16 * 4];
    alloc_arm(n);
    char msg[256] = "";
    clf_context *ctx = NULL;
    clf_graph *g = NULL;
    clf_executable *exe = NULL;
    clf_status st;
    clf_onnx_symbol syms[2] = {{"S", 1, 4}, {"T", 1, 16}};
    clf_onnx_derived_dim derived = {"P", "T", "S"};
    clf_onnx_kv_cache kv = {"past", "present", 16};
    if (!onnx_compiled(onnx_kv_text, sizeof onnx_kv_text - 1,
                       (clf_onnx_params){.symbols = syms, .nsymbols = 2, .derived = &derived, .nderived = 1,
                                         .kv_caches = &kv, .nkv_caches = 1},
                       n, &g, &ctx, &exe))
        goto out;
    clf_test_fill_f32(cache, 16 * 4, -1, 1);
    for (int64_t S = 3, T = 5; S >= 1; S -= 2, T += 1) {
        const int64_t xs[2] = {S, 4};
        const int64_t *shapes[3] = {xs, NULL, &T};
        clf_test_fill_f32(x, (size_t)(S * 4), -1, 1);
        clf_host_binding in[3] = {{"x", x}, {"past", cache}, {"T", NULL}};
        clf_host_binding out[2] = {{"y", y}, {"present", got}}, ref[2] = {{"y", wy}, {"present", want}};
        st = clf_run_host_shaped(exe, 3, in, shapes, 2, out);
        if (st != CLF_OK) {
            expect_oom(st, "clf_run_host_shaped", clf_context_last_error(ctx), n);
            goto out;
        }
        reference_unfailed(g, 3, in, shapes, 2, ref);
        ck_assert_msg(clf_test_close(CLF_F32, y, wy, (size_t)(S * 4), 1e-5, 1e-6, msg, sizeof msg),
                      "allocation %lu: y: %s", n, msg);
        ck_assert_msg(clf_test_close(CLF_F32, got, want, 16 * 4, 0, 0, msg, sizeof msg), "allocation %lu: present: %s",
                      n, msg);
        memcpy(cache, got, sizeof cache);
    }
out:
    return attempt_end(n, &exe, NULL, &g, &ctx);
}

START_TEST(onnx_kv_allocation_failures)
{
    sampled_sweep("onnx_kv_allocation_failures", onnx_kv_attempt);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("faults");
    clf_test_add_case(s, "fake_profiling_timestamps", fake_profiling_timestamps);
    clf_test_add_case(s, "allocator_arguments", allocator_arguments);
    TCase *tc = tcase_create("allocation_failures");
    tcase_set_timeout(tc, 1000);
    tcase_add_loop_test(tc, allocation_failures, PLAN_OFF, PLAN_WARM + 1);
    suite_add_tcase(s, tc);
    tc = tcase_create("opencl_failures");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, opencl_failures, 0, (int)(sizeof cl_faults / sizeof cl_faults[0]));
    suite_add_tcase(s, tc);
    clf_test_add_case(s, "cached_binary_build_fails", cached_binary_build_fails);
    clf_test_add_case(s, "build_failure_in_a_build_thread", build_failure_in_a_build_thread);
    clf_test_add_case(s, "merged_build_refused", merged_build_refused);
    clf_test_add_case(s, "async_path_does_not_block", async_path_does_not_block);
    clf_test_add_case(s, "kernel_work_group_limit", kernel_work_group_limit);
    clf_test_add_case(s, "understated_work_group_limit", understated_work_group_limit);
    tc = tcase_create("symbolic_allocation_failures");
    tcase_set_timeout(tc, 1000);
    tcase_add_test(tc, symbolic_allocation_failures);
    tcase_add_test(tc, onnx_symbolic_allocation_failures);
    tcase_add_test(tc, onnx_kv_allocation_failures);
    suite_add_tcase(s, tc);
    return clf_test_run_suite(s);
}
