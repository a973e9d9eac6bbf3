/* Suite "runtime": devices and contexts, adopting the caller's OpenCL
 * objects, clf_run on device buffers with events, the errors a run or a
 * compile must report before anything is enqueued, profiling, and object
 * lifetimes. Every context is made inside its (forked) test: PoCL hangs
 * when a context made before fork() is used after it. */
#include <check.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/runtime_internal.h"
#include "test_e2e.h"

#define N 64

/* y = exp(a) * b + 1 over N floats, and its reference on given data. */
static clf_graph *small_graph(void)
{
    clf_graph *g = clf_graph_create();
    const int64_t n = N;
    clf_tensor a = clf_input(g, "a", CLF_F32, 1, &n), b = clf_input(g, "b", CLF_F32, 1, &n);
    clf_graph_output(g, "y", clf_add(g, clf_mul(g, clf_exp(g, a), b), clf_scalar(g, CLF_F32, 1.0)));
    ck_assert_int_eq(clf_graph_status(g, NULL), CLF_OK);
    return g;
}

static void reference(const clf_graph *g, const float *a, const float *b, float *y)
{
    clf_host_binding in[2] = {{"a", (void *)a}, {"b", (void *)b}}, out[1] = {{"y", y}};
    char msg[256];
    ck_assert_msg(clf_reference_run(g, 2, in, 1, out, msg, sizeof msg) == CLF_OK, "%s", msg);
}

static void check_close(const float *got, const float *want)
{
    char msg[256];
    ck_assert_msg(clf_test_close(CLF_F32, got, want, N, 1e-5, 1e-6, msg, sizeof msg), "%s", msg);
}

/* Compiles and runs the small graph on ctx through host memory. */
static void run_small(clf_context *ctx)
{
    clf_graph *g = small_graph();
    clf_executable *exe = NULL;
    clf_status st = clf_compile(ctx, g, NULL, &exe);
    ck_assert_msg(st == CLF_OK, "%s: %s", clf_status_name(st), clf_context_last_error(ctx));
    float a[N], b[N], y[N], want[N];
    clf_test_fill_f32(a, N, -1, 1);
    clf_test_fill_f32(b, N, -1, 1);
    memset(y, 0xff, sizeof y);
    reference(g, a, b, want);
    clf_host_binding in[2] = {{"a", a}, {"b", b}}, out[1] = {{"y", y}};
    st = clf_run_host(exe, 2, in, 1, out);
    ck_assert_msg(st == CLF_OK, "%s: %s", clf_status_name(st), clf_context_last_error(ctx));
    check_close(y, want);
    clf_executable_destroy(&exe);
    clf_graph_destroy(&g);
}

START_TEST(devices_list)
{
    size_t count = 0;
    ck_assert_int_eq(clf_devices_list(NULL, 0, &count), CLF_OK);
    ck_assert_uint_ge(count, 1);
    clf_device_desc d[8];
    size_t count2 = 0;
    memset(d, 0, sizeof d);
    ck_assert_int_eq(clf_devices_list(d, 8, &count2), CLF_OK);
    ck_assert_uint_eq(count2, count);
    for (size_t i = 0; i < count && i < 8; i++) {
        ck_assert_uint_eq(d[i].index, i);
        ck_assert_uint_gt(strlen(d[i].device_name), 0);
        ck_assert_uint_gt(strlen(d[i].platform_name), 0);
        ck_assert_uint_gt(d[i].max_alloc_bytes, 0);
        ck_assert_uint_gt(d[i].global_mem_bytes, 0);
        ck_assert_uint_gt(d[i].compute_units, 0);
    }
}
END_TEST

START_TEST(context_selectors)
{
    clf_device_desc d0, got;
    size_t count = 0;
    ck_assert_int_eq(clf_devices_list(&d0, 1, &count), CLF_OK);
    ck_assert_uint_ge(count, 1);
    bool have_cpu = d0.is_cpu;

    clf_context *ctx = NULL;
    ck_assert_int_eq(clf_context_create(NULL, &ctx), CLF_OK);
    ck_assert_ptr_nonnull(clf_context_queue(ctx));
    ck_assert_ptr_nonnull(clf_context_cl(ctx));
    ck_assert_str_eq(clf_context_last_error(ctx), "");
    clf_context_destroy(&ctx);
    ck_assert_ptr_null(ctx);

    ck_assert_int_eq(clf_context_create(clf_context_params(.device = "0"), &ctx), CLF_OK);
    ck_assert_int_eq(clf_context_device(ctx, &got), CLF_OK);
    ck_assert_str_eq(got.device_name, d0.device_name);
    ck_assert_uint_eq(got.index, 0);
    clf_context_destroy(&ctx);

    if (have_cpu) { /* PoCL in CI */
        ck_assert_int_eq(clf_context_create(clf_context_params(.device = "cpu"), &ctx), CLF_OK);
        ck_assert_int_eq(clf_context_device(ctx, &got), CLF_OK);
        ck_assert(got.is_cpu);
        clf_context_destroy(&ctx);
    }

    /* A substring of the device name, in another case. */
    char sub[16] = "";
    size_t len = strlen(d0.device_name);
    size_t take = len < 6 ? len : 6;
    for (size_t i = 0; i < take; i++)
        sub[i] = (char)(islower((unsigned char)d0.device_name[i]) ? toupper((unsigned char)d0.device_name[i])
                                                                   : tolower((unsigned char)d0.device_name[i]));
    ck_assert_int_eq(clf_context_create(clf_context_params(.device = sub), &ctx), CLF_OK);
    ck_assert_int_eq(clf_context_device(ctx, &got), CLF_OK);
    ck_assert_str_eq(got.device_name, d0.device_name);
    run_small(ctx);
    clf_context_destroy(&ctx);

    /* A selector that matches nothing. */
    char msg[256] = "untouched";
    clf_status st = clf_context_create(
        clf_context_params(.device = "no-such-device-xyz", .message = msg, .message_cap = sizeof msg), &ctx);
    ck_assert_int_eq(st, CLF_ERR_NOT_FOUND);
    ck_assert_ptr_null(ctx);
    ck_assert_msg(strstr(msg, "no-such-device-xyz"), "message names the selector: %s", msg);
    /* An index past the end. */
    char idx[32];
    snprintf(idx, sizeof idx, "%zu", count);
    st = clf_context_create(clf_context_params(.device = idx, .message = msg, .message_cap = sizeof msg), &ctx);
    ck_assert_int_eq(st, CLF_ERR_NOT_FOUND);
    ck_assert_ptr_null(ctx);
    /* A tiny message buffer is still NUL-terminated. */
    char tiny[4] = {'x', 'x', 'x', 'x'};
    st = clf_context_create(clf_context_params(.device = "no-such-device-xyz", .message = tiny, .message_cap = 4),
                            &ctx);
    ck_assert_int_eq(st, CLF_ERR_NOT_FOUND);
    ck_assert(memchr(tiny, 0, sizeof tiny) != NULL);
    ck_assert_int_eq(clf_context_create(NULL, NULL), CLF_ERR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(device_env)
{
    char msg[256] = "";
    clf_context *ctx = NULL;
    setenv("CLFUSE_DEVICE", "no-such-device-xyz", 1);
    clf_status st = clf_context_create(clf_context_params(.message = msg, .message_cap = sizeof msg), &ctx);
    ck_assert_int_eq(st, CLF_ERR_NOT_FOUND);
    ck_assert_ptr_null(ctx);
    ck_assert_msg(strstr(msg, "no-such-device-xyz"), "%s", msg);
    /* params.device wins over the environment. */
    ck_assert_int_eq(clf_context_create(clf_context_params(.device = "0"), &ctx), CLF_OK);
    clf_context_destroy(&ctx);
    setenv("CLFUSE_DEVICE", "0", 1);
    ck_assert_int_eq(clf_context_create(NULL, &ctx), CLF_OK);
    clf_device_desc d;
    ck_assert_int_eq(clf_context_device(ctx, &d), CLF_OK);
    ck_assert_uint_eq(d.index, 0);
    run_small(ctx);
    clf_context_destroy(&ctx);
    unsetenv("CLFUSE_DEVICE");
}
END_TEST

/* The first device, found with plain OpenCL calls. */
static void first_device(cl_platform_id *plat, cl_device_id *dev)
{
    cl_uint np = 0;
    ck_assert_int_eq(clGetPlatformIDs(1, plat, &np), CL_SUCCESS);
    ck_assert_uint_ge(np, 1);
    cl_uint nd = 0;
    ck_assert_int_eq(clGetDeviceIDs(*plat, CL_DEVICE_TYPE_ALL, 1, dev, &nd), CL_SUCCESS);
}

#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

START_TEST(context_from_cl)
{
    cl_platform_id plat;
    cl_device_id dev;
    first_device(&plat, &dev);
    cl_int err;
    cl_context cl = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    cl_command_queue q = clCreateCommandQueue(cl, dev, 0, &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    cl_context cl2 = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    ck_assert_int_eq(err, CL_SUCCESS);

    clf_context *ctx = (clf_context *)1;
    /* A queue of another context. */
    ck_assert_int_eq(clf_context_from_cl(cl2, dev, q, &ctx), CLF_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(ctx);
    ck_assert_int_eq(clf_context_from_cl(NULL, dev, q, &ctx), CLF_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clf_context_from_cl(cl, dev, NULL, &ctx), CLF_ERR_INVALID_ARGUMENT);

    ck_assert_int_eq(clf_context_from_cl(cl, dev, q, &ctx), CLF_OK);
    ck_assert_ptr_eq(clf_context_cl(ctx), cl);
    ck_assert_ptr_eq(clf_context_queue(ctx), q);
    run_small(ctx);
    clf_context_destroy(&ctx);
    /* Our objects survive: the context held its own references. PoCL's
     * worker threads drop their references to finished commands' queue
     * asynchronously, so wait for the count to settle before checking that
     * libclfuse released all of its own. */
    cl_uint refs = 0;
    ck_assert_int_eq(clFinish(q), CL_SUCCESS);
    for (int tries = 0; tries < 200; tries++) {
        ck_assert_int_eq(clGetCommandQueueInfo(q, CL_QUEUE_REFERENCE_COUNT, sizeof refs, &refs, NULL), CL_SUCCESS);
        if (refs == 1)
            break;
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    ck_assert_uint_eq(refs, 1);
    ck_assert_int_eq(clGetContextInfo(cl, CL_CONTEXT_REFERENCE_COUNT, sizeof refs, &refs, NULL), CL_SUCCESS);
    ck_assert_uint_ge(refs, 1);
    ck_assert_int_eq(clFinish(q), CL_SUCCESS);
    clReleaseCommandQueue(q);
    clReleaseContext(cl);
    clReleaseContext(cl2);
}
END_TEST

/* clf_run on the caller's buffers, after a wait list, giving an event. */
START_TEST(run_buffers_events)
{
    clf_context *ctx = clf_test_context();
    clf_graph *g = small_graph();
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, g, NULL, &exe), CLF_OK);
    cl_context cl = clf_context_cl(ctx);
    cl_command_queue q = clf_context_queue(ctx);
    float a[N], b[N], y[N], want[N];
    clf_test_fill_f32(a, N, -1, 1);
    clf_test_fill_f32(b, N, -1, 1);
    memset(y, 0xff, sizeof y);
    reference(g, a, b, want);
    cl_int err;
    cl_mem ba = clCreateBuffer(cl, CL_MEM_READ_ONLY, sizeof a, NULL, &err);
    cl_mem bb = clCreateBuffer(cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof b, b, &err);
    cl_mem by = clCreateBuffer(cl, CL_MEM_WRITE_ONLY | CL_MEM_COPY_HOST_PTR, sizeof y, y, &err);
    ck_assert(ba && bb && by);
    cl_event gate = clCreateUserEvent(cl, &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    cl_event wrote = NULL;
    ck_assert_int_eq(clEnqueueWriteBuffer(q, ba, CL_FALSE, 0, sizeof a, a, 1, &gate, &wrote), CL_SUCCESS);
    cl_event wait[2] = {gate, wrote}, done = NULL;
    clf_buffer_binding in[2] = {{"b", bb}, {"a", ba}}, out[1] = {{"y", by}};
    ck_assert_int_eq(clf_run(exe, 2, in, 1, out, 2, wait, &done), CLF_OK);
    ck_assert_ptr_nonnull(done);
    /* Held back by the user event. */
    cl_int status = CL_COMPLETE;
    ck_assert_int_eq(clGetEventInfo(done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL),
                     CL_SUCCESS);
    ck_assert_int_ne(status, CL_COMPLETE);
    ck_assert_int_eq(clSetUserEventStatus(gate, CL_COMPLETE), CL_SUCCESS);
    ck_assert_int_eq(clWaitForEvents(1, &done), CL_SUCCESS);
    ck_assert_int_eq(clEnqueueReadBuffer(q, by, CL_TRUE, 0, sizeof y, y, 0, NULL, NULL), CL_SUCCESS);
    check_close(y, want);

    /* Again without a done event and without a wait list. */
    memset(y, 0xff, sizeof y);
    ck_assert_int_eq(clEnqueueWriteBuffer(q, by, CL_TRUE, 0, sizeof y, y, 0, NULL, NULL), CL_SUCCESS);
    ck_assert_int_eq(clf_run(exe, 2, in, 1, out, 0, NULL, NULL), CL_SUCCESS);
    ck_assert_int_eq(clEnqueueReadBuffer(q, by, CL_TRUE, 0, sizeof y, y, 0, NULL, NULL), CL_SUCCESS);
    check_close(y, want);

    clReleaseEvent(done);
    clReleaseEvent(wrote);
    clReleaseEvent(gate);
    clReleaseMemObject(ba);
    clReleaseMemObject(bb);
    clReleaseMemObject(by);
    clf_executable_destroy(&exe);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

/* A failed clf_run returns the error, says why, and leaves the output
 * buffer as it was: nothing was enqueued. */
static void expect_run_error(clf_context *ctx, clf_executable *exe, cl_mem by, size_t nin,
                             const clf_buffer_binding *in, size_t nout, const clf_buffer_binding *out,
                             clf_status want, const char *needle)
{
    cl_event done = (cl_event)1;
    clf_status st = clf_run(exe, nin, in, nout, out, 0, NULL, &done);
    ck_assert_msg(st == want, "got %s, want %s (%s)", clf_status_name(st), clf_status_name(want),
                  clf_context_last_error(ctx));
    ck_assert_ptr_null(done);
    const char *why = clf_context_last_error(ctx);
    ck_assert_msg(strstr(why, needle), "\"%s\" should mention \"%s\"", why, needle);
    float y[N];
    ck_assert_int_eq(clFinish(clf_context_queue(ctx)), CL_SUCCESS);
    ck_assert_int_eq(clEnqueueReadBuffer(clf_context_queue(ctx), by, CL_TRUE, 0, sizeof y, y, 0, NULL, NULL),
                     CL_SUCCESS);
    for (int i = 0; i < N; i++)
        ck_assert_msg(y[i] == 1234.0f, "element %d of the output changed to %g", i, (double)y[i]);
}

START_TEST(run_errors)
{
    clf_context *ctx = clf_test_context();
    clf_graph *g = small_graph();
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, g, NULL, &exe), CLF_OK);
    cl_context cl = clf_context_cl(ctx);
    float a[N], y[N];
    clf_test_fill_f32(a, N, -1, 1);
    for (int i = 0; i < N; i++)
        y[i] = 1234.0f;
    cl_int err;
    cl_mem ba = clCreateBuffer(cl, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof a, a, &err);
    cl_mem bb = clCreateBuffer(cl, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof a, a, &err);
    cl_mem by = clCreateBuffer(cl, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof y, y, &err);
    cl_mem small = clCreateBuffer(cl, CL_MEM_READ_WRITE, sizeof a / 2, NULL, &err);
    ck_assert(ba && bb && by && small);
    const clf_buffer_binding out[1] = {{"y", by}};

    expect_run_error(ctx, exe, by, 2, (clf_buffer_binding[]){{NULL, ba}, {"b", bb}}, 1, out,
                     CLF_ERR_INVALID_ARGUMENT, "NULL name");
    expect_run_error(ctx, exe, by, 2, (clf_buffer_binding[]){{"a", ba}, {"nope", bb}}, 1, out,
                     CLF_ERR_NOT_FOUND, "nope");
    expect_run_error(ctx, exe, by, 2, (clf_buffer_binding[]){{"a", ba}, {"b", bb}}, 1,
                     (clf_buffer_binding[]){{"z", by}}, CLF_ERR_NOT_FOUND, "z");
    expect_run_error(ctx, exe, by, 2, (clf_buffer_binding[]){{"a", ba}, {"a", bb}}, 1, out,
                     CLF_ERR_INVALID_ARGUMENT, "twice");
    expect_run_error(ctx, exe, by, 1, (clf_buffer_binding[]){{"a", ba}}, 1, out, CLF_ERR_INVALID_ARGUMENT,
                     "1 input");
    expect_run_error(ctx, exe, by, 2, (clf_buffer_binding[]){{"a", ba}, {"b", bb}}, 0, NULL,
                     CLF_ERR_INVALID_ARGUMENT, "output");
    expect_run_error(ctx, exe, by, 2, (clf_buffer_binding[]){{"a", ba}, {"b", small}}, 1, out,
                     CLF_ERR_INVALID_ARGUMENT, "\"b\"");
    expect_run_error(ctx, exe, by, 2, (clf_buffer_binding[]){{"a", ba}, {"b", NULL}}, 1, out,
                     CLF_ERR_INVALID_ARGUMENT, "\"b\"");
    expect_run_error(ctx, exe, by, 2, (clf_buffer_binding[]){{"a", ba}, {"b", by}}, 1, out,
                     CLF_ERR_INVALID_ARGUMENT, "aliases");
    /* More outputs bound than the graph has. */
    expect_run_error(ctx, exe, by, 2, (clf_buffer_binding[]){{"a", ba}, {"b", bb}}, 2,
                     (clf_buffer_binding[]){{"y", by}, {"y", by}}, CLF_ERR_INVALID_ARGUMENT, "2 output");
    /* Still usable after all that. */
    ck_assert_int_eq(clf_run(exe, 2, (clf_buffer_binding[]){{"a", ba}, {"b", bb}}, 1, out, 0, NULL, NULL), CLF_OK);
    ck_assert_int_eq(clEnqueueReadBuffer(clf_context_queue(ctx), by, CL_TRUE, 0, sizeof y, y, 0, NULL, NULL),
                     CL_SUCCESS);
    ck_assert(y[0] != 1234.0f);
    ck_assert_str_eq(clf_context_last_error(ctx), "");

    /* clf_run_host: NULL data, and the host output stays untouched. */
    float b[N], hy[N];
    for (int i = 0; i < N; i++)
        hy[i] = 1234.0f;
    clf_test_fill_f32(b, N, -1, 1);
    clf_status st = clf_run_host(exe, 2, (clf_host_binding[]){{"a", a}, {"b", NULL}}, 1,
                                 (clf_host_binding[]){{"y", hy}});
    ck_assert_int_eq(st, CLF_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clf_context_last_error(ctx), "\"b\""), "%s", clf_context_last_error(ctx));
    st = clf_run_host(exe, 2, (clf_host_binding[]){{"a", a}, {"b", b}}, 1, (clf_host_binding[]){{"y", NULL}});
    ck_assert_int_eq(st, CLF_ERR_INVALID_ARGUMENT);
    st = clf_run_host(exe, 2, (clf_host_binding[]){{"a", a}, {"q", b}}, 1, (clf_host_binding[]){{"y", hy}});
    ck_assert_int_eq(st, CLF_ERR_NOT_FOUND);
    st = clf_run_host(exe, 2, (clf_host_binding[]){{"a", a}, {"a", b}}, 1, (clf_host_binding[]){{"y", hy}});
    ck_assert_int_eq(st, CLF_ERR_INVALID_ARGUMENT);
    st = clf_run_host(exe, 2, NULL, 1, (clf_host_binding[]){{"y", hy}});
    ck_assert_int_eq(st, CLF_ERR_INVALID_ARGUMENT);
    for (int i = 0; i < N; i++)
        ck_assert(hy[i] == 1234.0f);
    ck_assert_int_eq(clf_run_host(NULL, 0, NULL, 0, NULL), CLF_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clf_run(NULL, 0, NULL, 0, NULL, 0, NULL, NULL), CLF_ERR_INVALID_ARGUMENT);
    clReleaseMemObject(ba);
    clReleaseMemObject(bb);
    clReleaseMemObject(by);
    clReleaseMemObject(small);
    clf_executable_destroy(&exe);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

START_TEST(compile_errors)
{
    clf_context *ctx = clf_test_context();
    clf_graph *g = clf_graph_create();
    const int64_t s3[1] = {3}, s4[1] = {4};
    clf_tensor a = clf_input(g, "a", CLF_F32, 1, s3), b = clf_input(g, "b", CLF_F32, 1, s4);
    clf_graph_output(g, "y", clf_add(g, a, b)); /* [3] + [4]: a sticky error */
    const char *gmsg = NULL;
    ck_assert_int_eq(clf_graph_status(g, &gmsg), CLF_ERR_SHAPE);
    ck_assert_uint_gt(strlen(gmsg), 0);
    clf_executable *exe = (clf_executable *)1;
    ck_assert_int_eq(clf_compile(ctx, g, NULL, &exe), CLF_ERR_GRAPH);
    ck_assert_ptr_null(exe);
    ck_assert_msg(strstr(clf_context_last_error(ctx), gmsg), "\"%s\" should contain \"%s\"",
                  clf_context_last_error(ctx), gmsg);
    clf_graph_destroy(&g);

    /* No outputs. */
    g = clf_graph_create();
    clf_exp(g, clf_input(g, "a", CLF_F32, 1, s3));
    exe = (clf_executable *)1;
    ck_assert_int_eq(clf_compile(ctx, g, NULL, &exe), CLF_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(exe);
    ck_assert_msg(strstr(clf_context_last_error(ctx), "no outputs"), "%s", clf_context_last_error(ctx));
    ck_assert_int_eq(clf_compile(ctx, NULL, NULL, &exe), CLF_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clf_compile(ctx, g, NULL, NULL), CLF_ERR_INVALID_ARGUMENT);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

START_TEST(profiling)
{
    clf_graph *g = small_graph();
    float a[N], b[N], y[N];
    clf_test_fill_f32(a, N, -1, 1);
    clf_test_fill_f32(b, N, -1, 1);
    clf_host_binding in[2] = {{"a", a}, {"b", b}}, out[1] = {{"y", y}};
    for (int on = 0; on < 2; on++) {
        clf_context *ctx = NULL;
        ck_assert_int_eq(clf_context_create(clf_context_params(.profiling = on), &ctx), CLF_OK);
        clf_executable *fused = NULL, *unfused = NULL;
        ck_assert_int_eq(clf_compile(ctx, g, NULL, &fused), CLF_OK);
        ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.disable_fusion = true), &unfused), CLF_OK);
        clf_run_profile p;
        uint64_t ns[8] = {0};
        /* Before any run: unsupported either way. */
        ck_assert_int_eq(clf_executable_last_profile(fused, &p, ns, 8), CLF_ERR_UNSUPPORTED);
        ck_assert_int_eq(clf_run_host(fused, 2, in, 1, out), CLF_OK);
        ck_assert_int_eq(clf_run_host(unfused, 2, in, 1, out), CLF_OK);
        if (!on) {
            ck_assert_int_eq(clf_executable_last_profile(fused, &p, ns, 8), CLF_ERR_UNSUPPORTED);
            ck_assert_msg(strstr(clf_context_last_error(ctx), "profiling"), "%s", clf_context_last_error(ctx));
        } else if (ctx->profiling_fake) {
            /* A driver whose timestamps are not real (rusticl's llvmpipe;
             * forced in the faults suite): refused, saying so, never
             * figures made of them. */
            ck_assert_int_eq(clf_executable_last_profile(fused, &p, ns, 8), CLF_ERR_UNSUPPORTED);
            ck_assert_msg(strstr(clf_context_last_error(ctx), "timestamps are not real"), "%s",
                          clf_context_last_error(ctx));
            ck_assert_uint_eq(p.kernels, 0);
        } else {
            ck_assert_int_eq(clf_executable_last_profile(fused, &p, ns, 8), CLF_OK);
            ck_assert_uint_eq(p.kernels, 1);
            ck_assert_uint_gt(ns[0], 0);
            ck_assert_uint_eq(p.kernel_ns_total, ns[0]);
            ck_assert_uint_ge(p.span_ns, ns[0]);
            memset(ns, 0, sizeof ns);
            ck_assert_int_eq(clf_executable_last_profile(unfused, &p, ns, 2), CLF_OK);
            ck_assert_uint_eq(p.kernels, 3); /* exp, mul, add */
            ck_assert(ns[0] > 0 && ns[1] > 0 && ns[2] == 0); /* only cap entries written */
            ck_assert_uint_ge(p.kernel_ns_total, ns[0] + ns[1]);
            ck_assert_uint_ge(p.span_ns, p.kernel_ns_total);
            ck_assert_int_eq(clf_executable_last_profile(unfused, &p, NULL, 0), CLF_OK);
        }
        ck_assert_int_eq(clf_executable_last_profile(fused, NULL, NULL, 0), CLF_ERR_INVALID_ARGUMENT);
        clf_executable_destroy(&fused);
        clf_executable_destroy(&unfused);
        clf_context_destroy(&ctx);
    }
    clf_graph_destroy(&g);
}
END_TEST

/* The executable keeps what it needs: the graph may go first. */
START_TEST(executable_outlives_graph)
{
    clf_context *ctx = clf_test_context();
    clf_graph *g = small_graph();
    float a[N], b[N], y[N], want[N];
    clf_test_fill_f32(a, N, -1, 1);
    clf_test_fill_f32(b, N, -1, 1);
    reference(g, a, b, want);
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, g, NULL, &exe), CLF_OK);
    clf_graph_destroy(&g);
    ck_assert_ptr_null(g);
    ck_assert_uint_eq(clf_executable_input_count(exe), 2);
    ck_assert_uint_eq(clf_executable_output_count(exe), 1);
    const char *name = NULL;
    clf_dtype dt;
    int rank = -1;
    int64_t shape[CLF_MAX_RANK];
    ck_assert_int_eq(clf_executable_output(exe, 0, &name, &dt, &rank, shape), CLF_OK);
    ck_assert_str_eq(name, "y");
    ck_assert(dt == CLF_F32 && rank == 1 && shape[0] == N);
    ck_assert_int_eq(clf_executable_input(exe, 1, &name, &dt, &rank, shape), CLF_OK);
    ck_assert_str_eq(name, "b");
    ck_assert_int_eq(clf_executable_input(exe, 2, &name, &dt, &rank, shape), CLF_ERR_NOT_FOUND);
    ck_assert_int_eq(clf_executable_output(exe, 1, &name, &dt, &rank, shape), CLF_ERR_NOT_FOUND);
    for (int k = 0; k < 2; k++) {
        memset(y, 0xff, sizeof y);
        clf_host_binding in[2] = {{"a", a}, {"b", b}}, out[1] = {{"y", y}};
        ck_assert_int_eq(clf_run_host(exe, 2, in, 1, out), CLF_OK);
        check_close(y, want);
    }
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
}
END_TEST

START_TEST(destroy_accepts_null)
{
    clf_context *ctx = NULL;
    clf_executable *exe = NULL;
    clf_graph *g = NULL;
    clf_context_destroy(NULL);
    clf_context_destroy(&ctx);
    clf_executable_destroy(NULL);
    clf_executable_destroy(&exe);
    clf_graph_destroy(NULL);
    clf_graph_destroy(&g);
    ck_assert(ctx == NULL && exe == NULL && g == NULL);
    ck_assert_ptr_nonnull(clf_context_last_error(NULL));
    ck_assert_ptr_null(clf_context_queue(NULL));
    ck_assert_int_eq(clf_context_device(NULL, NULL), CLF_ERR_INVALID_ARGUMENT);
}
END_TEST


static Suite *runtime_suite(void)
{
    Suite *s = suite_create("runtime");
    clf_test_add_case(s, "devices_list", devices_list);
    clf_test_add_case(s, "context_selectors", context_selectors);
    clf_test_add_case(s, "device_env", device_env);
    clf_test_add_case(s, "context_from_cl", context_from_cl);
    clf_test_add_case(s, "run_buffers_events", run_buffers_events);
    clf_test_add_case(s, "run_errors", run_errors);
    clf_test_add_case(s, "compile_errors", compile_errors);
    clf_test_add_case(s, "profiling", profiling);
    clf_test_add_case(s, "executable_outlives_graph", executable_outlives_graph);
    clf_test_add_case(s, "destroy_accepts_null", destroy_accepts_null);
    return s;
}

int main(void) { return clf_test_run_suite(runtime_suite()); }
