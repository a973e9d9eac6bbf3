/* Suite "memory": memory planning (intermediates that share scratch by
 * lifetime), the caller's scratch buffer, and runs on the caller's buffers
 * at byte offsets and on the caller's queue (clf_enqueue). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/memory_plan.h"
#include "runtime/runtime_internal.h"
#include "test_support.h"

/* ---- The placement itself --------------------------------------------- */

/* No two intervals alive at one kernel share a byte; offsets are aligned;
 * everything fits in the total. */
static void check_placement(const clf__mem_interval *iv, size_t n, uint64_t align, const uint64_t *off,
                            uint64_t total)
{
    for (size_t i = 0; i < n; i++) {
        if (!iv[i].bytes)
            continue;
        ck_assert_uint_eq(off[i] % align, 0);
        ck_assert_uint_le(off[i] + iv[i].bytes, total);
        for (size_t j = 0; j < i; j++) {
            if (!iv[j].bytes || iv[i].first > iv[j].last || iv[j].first > iv[i].last)
                continue;
            ck_assert_msg(off[i] + iv[i].bytes <= off[j] || off[j] + iv[j].bytes <= off[i],
                          "intervals %zu and %zu are alive together and overlap", i, j);
        }
    }
    ck_assert_uint_eq(total % align, 0);
}

START_TEST(placement)
{
    /* A chain: each value read by the next kernel only. The first and the
     * third never live together, so they share; so do the second and the
     * fourth. */
    clf__mem_interval chain[4] = {{1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}};
    uint64_t off[16], total;
    ck_assert_int_eq(clf__memory_plan(chain, 4, 128, off, &total), CLF_OK);
    check_placement(chain, 4, 128, off, total);
    ck_assert_uint_eq(total, 2 * 1024);
    ck_assert_uint_eq(off[0], off[2]);
    ck_assert_uint_eq(off[1], off[3]);

    /* Best fit: a value goes into the smallest hole that holds it. At
     * kernel 2, B and F are alive and leave holes of 5000 (where A was) and
     * 2000 (where C was) bytes: G takes the second. */
    clf__mem_interval holes[5] = {
        {5000, 0, 0}, /* A */
        {4000, 0, 3}, /* B */
        {2000, 0, 0}, /* C */
        {1900, 0, 3}, /* F */
        {1800, 2, 2}, /* G */
    };
    ck_assert_int_eq(clf__memory_plan(holes, 5, 1, off, &total), CLF_OK);
    check_placement(holes, 5, 1, off, total);
    ck_assert_uint_eq(off[1], 5000);
    ck_assert_uint_eq(off[3], 11000);
    ck_assert_uint_eq(off[4], 9000);
    ck_assert_uint_eq(total, 12900);

    /* Everything alive at once: the sum, each aligned; empty ones take no
     * room; no intervals at all is size 0. */
    clf__mem_interval all[3] = {{10, 0, 5}, {0, 0, 5}, {300, 2, 3}};
    ck_assert_int_eq(clf__memory_plan(all, 3, 64, off, &total), CLF_OK);
    check_placement(all, 3, 64, off, total);
    ck_assert_uint_eq(total, 64 + 320);
    ck_assert_int_eq(clf__memory_plan(NULL, 0, 64, off, &total), CLF_OK);
    ck_assert_uint_eq(total, 0);

    /* Random interval sets: always a valid placement, never above the sum. */
    for (int rep = 0; rep < 200; rep++) {
        clf__mem_interval r[16];
        size_t n = 1 + clf_test_rand() % 16;
        uint64_t sum = 0;
        for (size_t i = 0; i < n; i++) {
            uint32_t a = (uint32_t)(clf_test_rand() % 10), b = (uint32_t)(clf_test_rand() % 10);
            r[i] = (clf__mem_interval){clf_test_rand() % 5000, a < b ? a : b, a < b ? b : a};
            sum += (r[i].bytes + 127) / 128 * 128;
        }
        ck_assert_int_eq(clf__memory_plan(r, n, 128, off, &total), CLF_OK);
        check_placement(r, n, 128, off, total);
        ck_assert_uint_le(total, sum);
    }

    /* A size that overflows when aligned is an error, not a wrap. */
    clf__mem_interval huge[1] = {{UINT64_MAX - 3, 0, 0}};
    ck_assert_int_eq(clf__memory_plan(huge, 1, 128, off, &total), CLF_ERR_UNSUPPORTED);
}
END_TEST

/* ---- A chain with cuts ---------------------------------------------------- */

#define CN 4096
#define CHAIN 200

/* sin applied CHAIN times: the planner cuts a chain deeper than 64 ops, so
 * the kernels hand values on through intermediates, each read by the next
 * kernel only. */
static clf_graph *chain_graph(void)
{
    clf_graph *g = clf_graph_create();
    const int64_t n = CN;
    clf_tensor t = clf_input(g, "x", CLF_F32, 1, &n);
    for (int i = 0; i < CHAIN; i++)
        t = clf_sin(g, t);
    clf_graph_output(g, "y", t);
    ck_assert_int_eq(clf_graph_status(g, NULL), CLF_OK);
    return g;
}

static void chain_reference(const clf_graph *g, const float *x, float *y)
{
    clf_host_binding in[1] = {{"x", (void *)x}}, out[1] = {{"y", y}};
    char msg[256];
    ck_assert_msg(clf_reference_run(g, 1, in, 1, out, msg, sizeof msg) == CLF_OK, "%s", msg);
}

static void check_chain(const float *got, const float *want)
{
    char msg[256];
    ck_assert_msg(clf_test_close(CLF_F32, got, want, CN, 1e-4, 1e-5, msg, sizeof msg), "%s", msg);
}

START_TEST(chain_shares_scratch)
{
    clf_context *ctx = clf_test_context();
    clf_graph *g = chain_graph();
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, g, NULL, &exe), CLF_OK);
    clf_plan_stats s;
    ck_assert_int_eq(clf_executable_stats(exe, &s), CLF_OK);
    ck_assert_uint_ge(s.kernels, 3);
    ck_assert_uint_eq(s.intermediate_buffers, s.kernels - 1);
    ck_assert_uint_eq(s.intermediate_bytes, (s.kernels - 1) * CN * sizeof(float));
    /* Two buffers are enough for a chain, whatever its length. */
    ck_assert_uint_lt(s.peak_intermediate_bytes, s.intermediate_bytes);
    ck_assert_uint_eq(s.peak_intermediate_bytes, 2 * CN * sizeof(float));
    size_t scratch = 0;
    ck_assert_int_eq(clf_executable_scratch_size(exe, &scratch), CLF_OK);
    ck_assert_uint_eq(scratch, s.peak_intermediate_bytes);
    /* Sharing does not change results. */
    float *x = malloc(CN * sizeof *x), *y = malloc(CN * sizeof *y), *want = malloc(CN * sizeof *want);
    clf_test_fill_f32(x, CN, -3, 3);
    chain_reference(g, x, want);
    for (int rep = 0; rep < 2; rep++) {
        memset(y, 0xff, CN * sizeof *y);
        clf_host_binding in[1] = {{"x", x}}, out[1] = {{"y", y}};
        ck_assert_int_eq(clf_run_host(exe, 1, in, 1, out), CLF_OK);
        check_chain(y, want);
    }
    free(x);
    free(y);
    free(want);
    clf_executable_destroy(&exe);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

/* Several intermediates alive at once, reductions split in two launches with
 * partial results in the scratch too: the stats add up and results stay
 * right. */
START_TEST(reductions_share_scratch)
{
    clf_context *ctx = clf_test_context();
    clf_graph *g = clf_graph_create();
    const int64_t shape[2] = {2, 100000};
    clf_tensor x = clf_input(g, "x", CLF_F32, 2, shape);
    int ax1 = 1, ax0 = 0;
    clf_tensor m = clf_reduce_max(g, x, 1, &ax1, true);          /* an intermediate [2,1] */
    clf_tensor e = clf_exp(g, clf_sub(g, x, m));
    clf_tensor s1 = clf_reduce_sum(g, e, 1, &ax1, true);
    clf_tensor col = clf_reduce_sum(g, clf_div(g, e, s1), 1, &ax0, false); /* reads across rows */
    clf_graph_output(g, "col", col);
    clf_graph_output(g, "total", clf_reduce_sum(g, x, 0, NULL, false));
    ck_assert_int_eq(clf_graph_status(g, NULL), CLF_OK);
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, g, NULL, &exe), CLF_OK);
    clf_plan_stats s;
    ck_assert_int_eq(clf_executable_stats(exe, &s), CLF_OK);
    ck_assert_uint_ge(s.intermediate_buffers, 1);
    ck_assert_uint_le(s.peak_intermediate_bytes, s.intermediate_bytes + s.intermediate_buffers * 1024);
    ck_assert_uint_gt(s.peak_intermediate_bytes, 0);
    float *xin = malloc(2 * 100000 * sizeof *xin), *cg = malloc(100000 * sizeof *cg), *cw = malloc(100000 * sizeof *cw);
    float tg, tw;
    clf_test_fill_f32(xin, 2 * 100000, -2, 2);
    clf_host_binding in[1] = {{"x", xin}}, out[2] = {{"col", cg}, {"total", &tg}}, want[2] = {{"col", cw}, {"total", &tw}};
    char msg[256];
    ck_assert_int_eq(clf_reference_run(g, 1, in, 2, want, msg, sizeof msg), CLF_OK);
    ck_assert_int_eq(clf_run_host(exe, 1, in, 2, out), CLF_OK);
    ck_assert_msg(clf_test_close(CLF_F32, cg, cw, 100000, 1e-4, 1e-9, msg, sizeof msg), "col: %s", msg);
    ck_assert_msg(clf_test_close(CLF_F32, &tg, &tw, 1, 1e-4, 1e-3, msg, sizeof msg), "total: %s", msg);
    free(xin);
    free(cg);
    free(cw);
    clf_executable_destroy(&exe);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

/* ---- The caller's scratch --------------------------------------------------- */

static void expect_error(clf_context *ctx, clf_status got, clf_status want, const char *needle)
{
    const char *why = clf_context_last_error(ctx);
    ck_assert_msg(got == want, "got %s, want %s (%s)", clf_status_name(got), clf_status_name(want), why);
    ck_assert_msg(strstr(why, needle), "\"%s\" should mention \"%s\"", why, needle);
}

START_TEST(caller_scratch)
{
    clf_context *ctx = clf_test_context();
    clf_device_desc d;
    ck_assert_int_eq(clf_context_device(ctx, &d), CLF_OK);
    ck_assert_uint_ge(d.base_align, 1);
    clf_graph *g = chain_graph();
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.external_scratch = true), &exe), CLF_OK);
    ck_assert_ptr_null(exe->scratch); /* nothing allocated for it */
    size_t need = 0;
    ck_assert_int_eq(clf_executable_scratch_size(exe, &need), CLF_OK);
    ck_assert_uint_eq(need, 2 * CN * sizeof(float));
    float *x = malloc(CN * sizeof *x), *y = malloc(CN * sizeof *y), *want = malloc(CN * sizeof *want);
    clf_test_fill_f32(x, CN, -3, 3);
    chain_reference(g, x, want);
    clf_host_binding in[1] = {{"x", x}}, out[1] = {{"y", y}};

    /* No scratch yet: the run says what to do. */
    expect_error(ctx, clf_run_host(exe, 1, in, 1, out), CLF_ERR_INVALID_ARGUMENT, "clf_executable_set_scratch");

    cl_int err;
    cl_context cl = clf_context_cl(ctx);
    size_t off = 2 * (size_t)d.base_align, total = off + need + 4096;
    cl_mem small = clCreateBuffer(cl, CL_MEM_READ_WRITE, need - 4, NULL, &err);
    cl_mem big = clCreateBuffer(cl, CL_MEM_READ_WRITE, total, NULL, &err);
    ck_assert(small && big);
    expect_error(ctx, clf_executable_set_scratch(exe, small, 0), CLF_ERR_INVALID_ARGUMENT, "needs 32768 bytes");
    expect_error(ctx, clf_executable_set_scratch(exe, big, total - need + 4), CLF_ERR_INVALID_ARGUMENT,
                 "needs 32768 bytes");
    if (d.base_align > 1)
        expect_error(ctx, clf_executable_set_scratch(exe, big, 4), CLF_ERR_INVALID_ARGUMENT,
                     "CL_DEVICE_MEM_BASE_ADDR_ALIGN");
    expect_error(ctx, clf_executable_set_scratch(exe, NULL, 0), CLF_ERR_INVALID_ARGUMENT, "buffer is NULL");
    /* Still none after the refusals. */
    expect_error(ctx, clf_run_host(exe, 1, in, 1, out), CLF_ERR_INVALID_ARGUMENT, "clf_executable_set_scratch");

    /* A good one, in the middle of a buffer whose other bytes must stay. */
    unsigned char *pattern = malloc(total), *back = malloc(total);
    memset(pattern, 0xa5, total);
    cl_command_queue q = clf_context_queue(ctx);
    ck_assert_int_eq(clEnqueueWriteBuffer(q, big, CL_TRUE, 0, total, pattern, 0, NULL, NULL), CL_SUCCESS);
    ck_assert_int_eq(clf_executable_set_scratch(exe, big, off), CLF_OK);
    clReleaseMemObject(big); /* the executable holds its own reference */
    ck_assert_int_eq(clf_run_host(exe, 1, in, 1, out), CLF_OK);
    check_chain(y, want);
    ck_assert_int_eq(clEnqueueReadBuffer(q, exe->scratch, CL_TRUE, 0, total, back, 0, NULL, NULL), CL_SUCCESS);
    ck_assert_int_eq(memcmp(back, pattern, off), 0);
    ck_assert_int_eq(memcmp(back + off + need, pattern + off + need, total - off - need), 0);
    ck_assert_int_ne(memcmp(back + off, pattern + off, need), 0); /* the intermediates went there */

    /* Replaced by another: a sub-buffer, used as it is (the kernels get it
     * and their regions' offsets in it); its parent's bytes before it
     * stay. */
    const size_t psize = need + 2 * d.base_align;
    cl_mem parent = clCreateBuffer(cl, CL_MEM_READ_WRITE, psize, NULL, &err);
    ck_assert_int_eq(clEnqueueWriteBuffer(q, parent, CL_TRUE, 0, psize, pattern, 0, NULL, NULL), CL_SUCCESS);
    cl_buffer_region r = {d.base_align, need + d.base_align};
    cl_mem sub = clCreateSubBuffer(parent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
    ck_assert_ptr_nonnull(sub);
    ck_assert_int_eq(clf_executable_set_scratch(exe, sub, 0), CLF_OK);
    ck_assert_ptr_eq(exe->scratch, sub);
    memset(y, 0, CN * sizeof *y);
    ck_assert_int_eq(clf_run_host(exe, 1, in, 1, out), CLF_OK);
    check_chain(y, want);
    ck_assert_int_eq(clEnqueueReadBuffer(q, parent, CL_TRUE, 0, psize, back, 0, NULL, NULL), CL_SUCCESS);
    ck_assert_int_eq(memcmp(back, pattern, d.base_align), 0);
    ck_assert_int_ne(memcmp(back + d.base_align, pattern + d.base_align, need), 0);
    clReleaseMemObject(sub);
    clReleaseMemObject(parent);
    clReleaseMemObject(small);

    /* A graph without intermediates needs none, and takes NULL. */
    clf_graph *g2 = clf_graph_create();
    const int64_t n = 8;
    clf_graph_output(g2, "y", clf_exp(g2, clf_input(g2, "x", CLF_F32, 1, &n)));
    clf_executable *exe2 = NULL;
    ck_assert_int_eq(clf_compile(ctx, g2, clf_compile_params(.external_scratch = true), &exe2), CLF_OK);
    ck_assert_int_eq(clf_executable_scratch_size(exe2, &need), CLF_OK);
    ck_assert_uint_eq(need, 0);
    ck_assert_int_eq(clf_executable_set_scratch(exe2, NULL, 0), CLF_OK);
    float x8[8] = {0, 1, 2, 3, 4, 5, 6, 7}, y8[8];
    clf_host_binding in8[1] = {{"x", x8}}, out8[1] = {{"y", y8}};
    ck_assert_int_eq(clf_run_host(exe2, 1, in8, 1, out8), CLF_OK);
    ck_assert(fabsf(y8[3] - expf(3)) < 1e-4f);
    clf_executable_destroy(&exe2);
    clf_graph_destroy(&g2);

    free(pattern);
    free(back);
    free(x);
    free(y);
    free(want);
    clf_executable_destroy(&exe);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

/* A scratch bound anew, also one bound before, is the one the kernels of
 * every later run get (twice each: a second run with nothing else new),
 * and the one before is left alone. */
START_TEST(scratch_swapped_back_and_forth)
{
    clf_context *ctx = clf_test_context();
    clf_graph *g = chain_graph();
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.external_scratch = true), &exe), CLF_OK);
    size_t need = 0;
    ck_assert_int_eq(clf_executable_scratch_size(exe, &need), CLF_OK);
    ck_assert_uint_gt(need, 0);
    float *x = malloc(CN * sizeof *x), *y = malloc(CN * sizeof *y), *want = malloc(CN * sizeof *want);
    unsigned char *pattern = malloc(need), *back = malloc(need);
    memset(pattern, 0x5a, need);
    cl_int err;
    cl_context cl = clf_context_cl(ctx);
    cl_command_queue q = clf_context_queue(ctx);
    cl_mem s[2] = {clCreateBuffer(cl, CL_MEM_READ_WRITE, need, NULL, &err),
                   clCreateBuffer(cl, CL_MEM_READ_WRITE, need, NULL, &err)};
    ck_assert(s[0] && s[1]);
    for (int round = 0; round < 4; round++) {
        const int now = round % 2, other = 1 - now;
        clf_test_fill_f32(x, CN, -3 - round, 3 + round);
        chain_reference(g, x, want);
        /* The other one poisoned: no kernel of this run may write it. */
        ck_assert_int_eq(clEnqueueWriteBuffer(q, s[other], CL_TRUE, 0, need, pattern, 0, NULL, NULL), CL_SUCCESS);
        ck_assert_int_eq(clf_executable_set_scratch(exe, s[now], 0), CLF_OK);
        for (int run = 0; run < 2; run++) {
            clf_host_binding in[1] = {{"x", x}}, out[1] = {{"y", y}};
            memset(y, 0, CN * sizeof *y);
            ck_assert_int_eq(clf_run_host(exe, 1, in, 1, out), CLF_OK);
            check_chain(y, want);
        }
        ck_assert_int_eq(clEnqueueReadBuffer(q, s[other], CL_TRUE, 0, need, back, 0, NULL, NULL), CL_SUCCESS);
        ck_assert_msg(memcmp(back, pattern, need) == 0, "round %d: a kernel wrote the scratch bound before", round);
        ck_assert_int_eq(clEnqueueReadBuffer(q, s[now], CL_TRUE, 0, need, back, 0, NULL, NULL), CL_SUCCESS);
        ck_assert_msg(memcmp(back, pattern, need) != 0, "round %d: the intermediates went elsewhere", round);
    }
    clReleaseMemObject(s[0]);
    clReleaseMemObject(s[1]);
    free(pattern);
    free(back);
    free(x);
    free(y);
    free(want);
    clf_executable_destroy(&exe);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

/* ---- Offsets and the caller's queue ---------------------------------------- */

#define ON 1000

/* y = a * b + a over ON floats. */
static clf_graph *offset_graph(void)
{
    clf_graph *g = clf_graph_create();
    const int64_t n = ON;
    clf_tensor a = clf_input(g, "a", CLF_F32, 1, &n), b = clf_input(g, "b", CLF_F32, 1, &n);
    clf_graph_output(g, "y", clf_add(g, clf_mul(g, a, b), a));
    ck_assert_int_eq(clf_graph_status(g, NULL), CLF_OK);
    return g;
}

START_TEST(offsets_and_queue)
{
    clf_context *ctx = clf_test_context();
    clf_device_desc d;
    ck_assert_int_eq(clf_context_device(ctx, &d), CLF_OK);
    const size_t al = d.base_align, bytes = ON * sizeof(float);
    clf_graph *g = offset_graph();
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, g, NULL, &exe), CLF_OK);
    cl_context cl = clf_context_cl(ctx);
    cl_int err;
    cl_command_queue q = clf_test_queue(ctx, &err);
    ck_assert_msg(q, "clf_test_queue: %d", err);

    /* a, b and y packed in one buffer at aligned offsets, b after a. */
    size_t off_a = al, off_b = al * (1 + (bytes + al - 1) / al), off_y = off_b + al * ((bytes + al - 1) / al);
    size_t total = off_y + bytes + al;
    float *host = malloc(total), a[ON], b[ON], y[ON];
    memset(host, 0x7f, total);
    clf_test_fill_f32(a, ON, -1, 1);
    clf_test_fill_f32(b, ON, -1, 1);
    memcpy((char *)host + off_a, a, bytes);
    memcpy((char *)host + off_b, b, bytes);
    cl_mem buf = clCreateBuffer(cl, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, total, host, &err);
    ck_assert_ptr_nonnull(buf);
    cl_event gate = clCreateUserEvent(cl, &err), done = NULL;
    clf_buffer_view in[2] = {{"a", buf, off_a}, {"b", buf, off_b}}, out[1] = {{"y", buf, off_y}};
    ck_assert_int_eq(clf_enqueue(exe, q, 2, in, 1, out, 1, &gate, &done), CLF_OK);
    ck_assert_ptr_nonnull(done);
    cl_command_queue dq = NULL;
    ck_assert_int_eq(clGetEventInfo(done, CL_EVENT_COMMAND_QUEUE, sizeof dq, &dq, NULL), CL_SUCCESS);
    ck_assert_ptr_eq(dq, q); /* on the caller's queue */
    cl_int status = CL_COMPLETE;
    ck_assert_int_eq(clGetEventInfo(done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL), CL_SUCCESS);
    ck_assert_int_ne(status, CL_COMPLETE); /* held back by the wait list */
    ck_assert_int_eq(clSetUserEventStatus(gate, CL_COMPLETE), CL_SUCCESS);
    float *back = malloc(total);
    ck_assert_int_eq(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, total, back, 1, &done, NULL), CL_SUCCESS);
    memcpy(y, (char *)back + off_y, bytes);
    for (int i = 0; i < ON; i++)
        ck_assert_msg(fabsf(y[i] - (a[i] * b[i] + a[i])) <= 1e-6f, "y[%d] = %g", i, (double)y[i]);
    /* Bytes outside the tensors are untouched. */
    ck_assert_int_eq(memcmp(back, host, off_a), 0);
    ck_assert_int_eq(memcmp((char *)back + off_y + bytes, (char *)host + off_y + bytes, total - off_y - bytes), 0);
    clReleaseEvent(done);
    clReleaseEvent(gate);

    /* Through a sub-buffer of the caller's, plus an offset in it. */
    cl_buffer_region r = {al, total - al};
    cl_mem sub = clCreateSubBuffer(buf, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
    ck_assert_ptr_nonnull(sub);
    clf_buffer_view in2[2] = {{"a", sub, 0}, {"b", sub, off_b - al}}, out2[1] = {{"y", buf, off_y}};
    float zero[ON] = {0};
    ck_assert_int_eq(clEnqueueWriteBuffer(q, buf, CL_TRUE, off_y, bytes, zero, 0, NULL, NULL), CL_SUCCESS);
    ck_assert_int_eq(clf_enqueue(exe, NULL, 2, in2, 1, out2, 0, NULL, &done), CL_SUCCESS);
    ck_assert_int_eq(clEnqueueReadBuffer(q, buf, CL_TRUE, off_y, bytes, y, 1, &done, NULL), CL_SUCCESS);
    for (int i = 0; i < ON; i++)
        ck_assert_msg(fabsf(y[i] - (a[i] * b[i] + a[i])) <= 1e-6f, "sub-buffer run: y[%d] = %g", i, (double)y[i]);
    clReleaseEvent(done);

    /* Refused before anything is enqueued, naming the tensor. */
    clf_buffer_view bad[2] = {{"a", buf, off_a}, {"b", buf, off_b}}, bout[1] = {{"y", buf, off_y}};
    if (al > 4) {
        bad[1].offset = off_b + 4;
        expect_error(ctx, clf_enqueue(exe, q, 2, bad, 1, bout, 0, NULL, &done), CLF_ERR_INVALID_ARGUMENT,
                     "input \"b\": offset");
        expect_error(ctx, clf_enqueue(exe, q, 2, bad, 1, bout, 0, NULL, &done), CLF_ERR_INVALID_ARGUMENT,
                     "CL_DEVICE_MEM_BASE_ADDR_ALIGN");
        ck_assert_ptr_null(done);
    }
    bad[1].offset = total - bytes + al;
    expect_error(ctx, clf_enqueue(exe, q, 2, bad, 1, bout, 0, NULL, &done), CLF_ERR_INVALID_ARGUMENT,
                 "input \"b\" needs 4000 bytes from offset");
    bad[1].offset = off_b;
    bout[0].offset = off_b; /* y over b */
    expect_error(ctx, clf_enqueue(exe, q, 2, bad, 1, bout, 0, NULL, &done), CLF_ERR_INVALID_ARGUMENT,
                 "output \"y\" aliases input \"b\"");
    bout[0].offset = off_b + ((bytes / 2) / al) * al; /* half over b */
    expect_error(ctx, clf_enqueue(exe, q, 2, bad, 1, bout, 0, NULL, &done), CLF_ERR_INVALID_ARGUMENT,
                 "overlapping bytes");
    /* A queue of another context. */
    clf_context *other = clf_test_context();
    bout[0].offset = off_y;
    expect_error(ctx, clf_enqueue(exe, clf_context_queue(other), 2, bad, 1, bout, 0, NULL, &done),
                 CLF_ERR_INVALID_ARGUMENT, "another OpenCL context");
    /* A buffer of another context. */
    cl_mem foreign = clCreateBuffer(clf_context_cl(other), CL_MEM_READ_WRITE, bytes, NULL, &err);
    clf_buffer_view fin[2] = {{"a", foreign, 0}, {"b", buf, off_b}};
    expect_error(ctx, clf_enqueue(exe, q, 2, fin, 1, bout, 0, NULL, &done), CLF_ERR_INVALID_ARGUMENT,
                 "input \"a\": the buffer belongs to another OpenCL context");
    clReleaseMemObject(foreign);
    clf_context_destroy(&other);
    ck_assert_int_eq(clFinish(q), CL_SUCCESS);

    clReleaseMemObject(sub);
    clReleaseMemObject(buf);
    clReleaseCommandQueue(q);
    free(host);
    free(back);
    clf_executable_destroy(&exe);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("memory");
    clf_test_add_case(s, "placement", placement);
    clf_test_add_case(s, "chain_shares_scratch", chain_shares_scratch);
    clf_test_add_case(s, "reductions_share_scratch", reductions_share_scratch);
    clf_test_add_case(s, "caller_scratch", caller_scratch);
    clf_test_add_case(s, "scratch_swapped_back_and_forth", scratch_swapped_back_and_forth);
    clf_test_add_case(s, "offsets_and_queue", offsets_and_queue);
    return clf_test_run_suite(s);
}
