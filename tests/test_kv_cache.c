/* Suite "kv_cache": a KV cache written in place (clf_cache_write). The
 * builder's rules; the reference's value semantics; a small attention
 * layer run as a prefill and decode steps on device buffers that equals
 * the whole sequence's run, writes only the new positions and builds no
 * program after its first step; host runs; the binding rules. Contexts are
 * made inside each (forked) test. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clfuse/onnx.h"
#include "runtime/runtime_internal.h"
#include "../tools/clfuse/npy.h"
#include "test_support.h"

#define W 16   /* model width */
#define NH 2   /* heads */
#define HD 8   /* head width */
#define CAP 32 /* cache capacity */

/* ---- The builder's rules ------------------------------------------------- */

static void expect_error(clf_graph *g, clf_status want, const char *part1, const char *part2)
{
    const char *msg;
    ck_assert_int_eq(clf_graph_status(g, &msg), want);
    ck_assert_msg(strstr(msg, part1) && strstr(msg, part2), "'%s' lacks '%s' or '%s'", msg, part1, part2);
}

START_TEST(builder_rules)
{
    /* The cache must be an input, laid out for its capacity. */
    clf_graph *g = clf_graph_create();
    int64_t L = clf_dim(g, "L", 1, CAP);
    clf_tensor c = clf_input(g, "c", CLF_F32, 3, (int64_t[]){NH, CAP, HD});
    clf_tensor x = clf_input(g, "x", CLF_F32, 3, (int64_t[]){NH, 1, HD});
    clf_cache_write(g, clf_relu(g, c), x, 1, L);
    expect_error(g, CLF_ERR_INVALID_ARGUMENT, "clf_cache_write", "not a graph input");
    clf_graph_destroy(&g);

    /* The length's bound must fit the capacity. */
    g = clf_graph_create();
    L = clf_dim(g, "L", 1, CAP + 1);
    c = clf_input(g, "c", CLF_F32, 3, (int64_t[]){NH, CAP, HD});
    x = clf_input(g, "x", CLF_F32, 3, (int64_t[]){NH, 1, HD});
    clf_cache_write(g, c, x, 1, L);
    expect_error(g, CLF_ERR_SHAPE, "L", "capacity 32");
    clf_graph_destroy(&g);

    /* A symbolic capacity, new entries of another shape, a second write, more
     * entries than the length. */
    g = clf_graph_create();
    L = clf_dim(g, "L", 1, CAP);
    int64_t T = clf_dim(g, "T", 1, CAP);
    c = clf_input(g, "c", CLF_F32, 3, (int64_t[]){NH, T, HD});
    x = clf_input(g, "x", CLF_F32, 3, (int64_t[]){NH, 1, HD});
    clf_cache_write(g, c, x, 1, L);
    expect_error(g, CLF_ERR_SHAPE, "symbolic T", "capacity");
    clf_graph_destroy(&g);

    g = clf_graph_create();
    c = clf_input(g, "c", CLF_F32, 3, (int64_t[]){NH, CAP, HD});
    x = clf_input(g, "x", CLF_F32, 3, (int64_t[]){NH, 1, HD + 1});
    clf_cache_write(g, c, x, 1, 4);
    expect_error(g, CLF_ERR_SHAPE, "differs from the cache's", "off axis 1");
    clf_graph_destroy(&g);

    g = clf_graph_create();
    c = clf_input(g, "c", CLF_F32, 3, (int64_t[]){NH, CAP, HD});
    x = clf_input(g, "x", CLF_F32, 3, (int64_t[]){NH, 3, HD});
    clf_cache_write(g, c, x, 1, 2);
    expect_error(g, CLF_ERR_SHAPE, "3 entries", "length 2");
    clf_graph_destroy(&g);

    g = clf_graph_create();
    c = clf_input(g, "c", CLF_F32, 3, (int64_t[]){NH, CAP, HD});
    x = clf_input(g, "x", CLF_F32, 3, (int64_t[]){NH, 1, HD});
    ck_assert(clf_tensor_valid(clf_cache_write(g, c, x, 1, 4)));
    clf_cache_write(g, c, x, 1, 5);
    expect_error(g, CLF_ERR_INVALID_ARGUMENT, "'c'", "already");
    clf_graph_destroy(&g);

    /* A fixed length after a symbolic number of new entries: S's bound
     * must not pass it (S = 12 would store before the cache). */
    g = clf_graph_create();
    int64_t S = clf_dim(g, "S", 1, 16);
    c = clf_input(g, "c", CLF_F32, 3, (int64_t[]){NH, CAP, HD});
    x = clf_input(g, "x", CLF_F32, 3, (int64_t[]){NH, S, HD});
    clf_cache_write(g, c, x, 1, 8);
    expect_error(g, CLF_ERR_SHAPE, "upper bound 16", "len 8");
    clf_graph_destroy(&g);

    /* A symbolic end of a slice: [0, L) of a fixed axis only. */
    g = clf_graph_create();
    L = clf_dim(g, "L", 1, CAP);
    c = clf_input(g, "c", CLF_F32, 3, (int64_t[]){NH, CAP, HD});
    clf_tensor v = clf_slice(g, c, 1, (int64_t[]){0}, (int64_t[]){L}, (int[]){1}, NULL);
    ck_assert(clf_tensor_valid(v));
    const char *names[CLF_MAX_RANK];
    ck_assert_int_eq(clf_tensor_dim_names(g, v, names), CLF_OK);
    ck_assert(names[0] == NULL && names[2] == NULL);
    ck_assert_str_eq(names[1], "L");
    clf_slice(g, c, 1, (int64_t[]){1}, (int64_t[]){L}, (int[]){1}, NULL);
    expect_error(g, CLF_ERR_SHAPE, "symbolic L", "[0, L)");
    clf_graph_destroy(&g);
}
END_TEST

/* ---- A small attention layer with a cache ---------------------------------- */

typedef struct layer {
    clf_graph *g;
    float wq[W * W], wk[W * W], wv[W * W], wo[W * W];
} layer;

/* h [1, S, W] -> heads [1, NH, S, HD]. */
static clf_tensor heads(clf_graph *g, clf_tensor h, const float *w, int64_t s)
{
    clf_tensor wt = clf_constant(g, CLF_F32, 2, (int64_t[]){W, W}, w);
    clf_tensor p = clf_reshape(g, clf_matmul(g, h, wt), 4, (int64_t[]){1, s, NH, HD});
    return clf_transpose(g, p, 4, (int[]){0, 2, 1, 3});
}

/* The layer: the new positions' keys and values written into the caches at
 * [L - S, L), causal attention of the new queries over the L cached
 * positions, the output projection. Outputs "out" [1, S, W], "k_out" and
 * "v_out" (the caches, written in place). With write_out false the caches'
 * writes are no outputs (a rule the compile checks). */
static void make_layer(layer *m, bool write_out)
{
    clf_graph *g = m->g = clf_graph_create();
    clf_test_fill_f32(m->wq, W * W, -0.5f, 0.5f);
    clf_test_fill_f32(m->wk, W * W, -0.5f, 0.5f);
    clf_test_fill_f32(m->wv, W * W, -0.5f, 0.5f);
    clf_test_fill_f32(m->wo, W * W, -0.5f, 0.5f);
    int64_t s = clf_dim(g, "S", 1, CAP), l = clf_dim(g, "L", 1, CAP);
    clf_tensor h = clf_input(g, "h", CLF_F32, 3, (int64_t[]){1, s, W});
    clf_tensor kc = clf_input(g, "k_cache", CLF_F32, 4, (int64_t[]){1, NH, CAP, HD});
    clf_tensor vc = clf_input(g, "v_cache", CLF_F32, 4, (int64_t[]){1, NH, CAP, HD});
    clf_tensor q = heads(g, h, m->wq, s);
    clf_tensor kw = clf_cache_write(g, kc, heads(g, h, m->wk, s), 2, l);
    clf_tensor vw = clf_cache_write(g, vc, heads(g, h, m->wv, s), 2, l);
    clf_tensor k = clf_slice(g, kw, 1, (int64_t[]){0}, (int64_t[]){l}, (int[]){2}, NULL);
    clf_tensor v = clf_slice(g, vw, 1, (int64_t[]){0}, (int64_t[]){l}, (int[]){2}, NULL);
    clf_tensor a = clf_attention(g, q, k, v, CLF_TENSOR_INVALID, 0, true);
    a = clf_reshape(g, clf_transpose(g, a, 4, (int[]){0, 2, 1, 3}), 3, (int64_t[]){1, s, W});
    clf_tensor wo = clf_constant(g, CLF_F32, 2, (int64_t[]){W, W}, m->wo);
    clf_graph_output(g, "out", clf_matmul(g, a, wo));
    if (write_out) {
        clf_graph_output(g, "k_out", kw);
        clf_graph_output(g, "v_out", vw);
    }
    const char *msg;
    ck_assert_msg(clf_graph_status(g, &msg) == CLF_OK, "%s", msg);
}

#define CACHE_FLOATS (NH * CAP * HD)
#define SENTINEL 12345.0f

static cl_mem cache_buffer(clf_context *ctx)
{
    float init[CACHE_FLOATS];
    for (int i = 0; i < CACHE_FLOATS; i++)
        init[i] = SENTINEL;
    cl_int err;
    cl_mem m = clCreateBuffer(clf_context_cl(ctx), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof init, init, &err);
    ck_assert_msg(m, "clCreateBuffer: %d", err);
    return m;
}

/* One step on device buffers: the positions [l - s, l) of the sequence
 * hs (rows of W floats) against the caches; out gets s rows. */
static clf_status step(clf_executable *exe, clf_context *ctx, const float *hs, int64_t s, int64_t l, cl_mem kc,
                       cl_mem vc, float *out)
{
    cl_int err;
    cl_context cl = clf_context_cl(ctx);
    cl_mem bh = clCreateBuffer(cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (size_t)(s * W) * sizeof(float),
                               (void *)(hs + (l - s) * W), &err);
    cl_mem bo = clCreateBuffer(cl, CL_MEM_READ_WRITE, (size_t)(s * W) * sizeof(float), NULL, &err);
    ck_assert(bh && bo);
    clf_buffer_view in[3] = {{"h", bh, 0}, {"k_cache", kc, 0}, {"v_cache", vc, 0}};
    clf_buffer_view dim[1] = {{"L", NULL, 0}};
    clf_buffer_view all_in[4] = {in[0], in[1], in[2], dim[0]};
    const int64_t *shapes[4] = {(int64_t[]){1, s, W}, NULL, NULL, (int64_t[]){l}};
    clf_buffer_view outs[3] = {{"out", bo, 0}, {"k_out", kc, 0}, {"v_out", vc, 0}};
    cl_event done = NULL;
    clf_status st = clf_enqueue_shaped(exe, NULL, 4, all_in, shapes, 3, outs, 0, NULL, &done);
    if (st == CLF_OK) {
        ck_assert_int_eq(clWaitForEvents(1, &done), CL_SUCCESS);
        clReleaseEvent(done);
        ck_assert_int_eq(clEnqueueReadBuffer(clf_context_queue(ctx), bo, CL_TRUE, 0, (size_t)(s * W) * sizeof(float),
                                             out, 0, NULL, NULL),
                         CL_SUCCESS);
    }
    clReleaseMemObject(bh);
    clReleaseMemObject(bo);
    return st;
}

static void read_cache_n(clf_context *ctx, cl_mem m, float *out, size_t n)
{
    ck_assert_int_eq(clEnqueueReadBuffer(clf_context_queue(ctx), m, CL_TRUE, 0, n * sizeof(float), out, 0, NULL, NULL),
                     CL_SUCCESS);
}

static void read_cache(clf_context *ctx, cl_mem m, float *out) { read_cache_n(ctx, m, out, CACHE_FLOATS); }

#define TOTAL 12  /* positions in all */
#define PREFILL 5 /* positions of the prefill */

/* Decode of TOTAL - PREFILL steps after a prefill gives the whole
 * sequence's outputs; the caches hold the sequence's keys and values at
 * [0, TOTAL) and nothing was written past it; decode steps after the
 * first build nothing; a step at any length writes its new positions
 * only. */
START_TEST(decode_equals_prefill)
{
    clf_context *ctx = clf_test_context();
    layer m;
    make_layer(&m, true);
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, m.g, NULL, &exe), CLF_OK);
    /* One kernel writes both caches (their new entries have one shape). */
    size_t writers = 0;
    for (size_t k = 0; k < clf_executable_kernel_count(exe); k++)
        writers += strstr(clf_executable_kernel_name(exe, k), "cache_write") != NULL;
    ck_assert_uint_eq(writers, 1);
    float hs[TOTAL * W], whole[TOTAL * W], stepped[TOTAL * W];
    clf_test_fill_f32(hs, TOTAL * W, -1, 1);

    cl_mem k1 = cache_buffer(ctx), v1 = cache_buffer(ctx), k2 = cache_buffer(ctx), v2 = cache_buffer(ctx);
    ck_assert_int_eq(step(exe, ctx, hs, TOTAL, TOTAL, k1, v1, whole), CLF_OK);

    /* Against the reference of the whole sequence (value semantics). */
    float kin[CACHE_FLOATS], vin[CACHE_FLOATS], want[TOTAL * W], kref[CACHE_FLOATS], vref[CACHE_FLOATS];
    for (int i = 0; i < CACHE_FLOATS; i++)
        kin[i] = vin[i] = SENTINEL;
    clf_host_binding hin[4] = {{"h", hs}, {"k_cache", kin}, {"v_cache", vin}, {"L", NULL}};
    const int64_t *hshapes[4] = {(int64_t[]){1, TOTAL, W}, NULL, NULL, (int64_t[]){TOTAL}};
    clf_host_binding hout[3] = {{"out", want}, {"k_out", kref}, {"v_out", vref}};
    char msg[512];
    ck_assert_msg(clf_reference_run_shaped(m.g, 4, hin, hshapes, 3, hout, msg, sizeof msg) == CLF_OK, "%s", msg);
    ck_assert_msg(clf_test_close(CLF_F32, whole, want, TOTAL * W, 1e-4, 1e-5, msg, sizeof msg), "%s", msg);

    /* Prefill, then one position a step. */
    ck_assert_int_eq(step(exe, ctx, hs, PREFILL, PREFILL, k2, v2, stepped), CLF_OK);
    clf__program_counts before = ctx->counts;
    for (int64_t l = PREFILL + 1; l <= TOTAL; l++) {
        ck_assert_int_eq(step(exe, ctx, hs, 1, l, k2, v2, stepped + (l - 1) * W), CLF_OK);
        if (l == PREFILL + 1)
            before = ctx->counts;
    }
    ck_assert_msg(ctx->counts.source_builds == before.source_builds, "decode steps built %llu programs",
                  (unsigned long long)(ctx->counts.source_builds - before.source_builds));
    ck_assert_msg(clf_test_close(CLF_F32, stepped, whole, TOTAL * W, 1e-4, 1e-5, msg, sizeof msg), "%s", msg);

    /* The caches: the sequence's keys and values, the rest untouched. */
    float k1h[CACHE_FLOATS], k2h[CACHE_FLOATS], v2h[CACHE_FLOATS];
    read_cache(ctx, k1, k1h);
    read_cache(ctx, k2, k2h);
    read_cache(ctx, v2, v2h);
    ck_assert_msg(clf_test_close(CLF_F32, k1h, kref, CACHE_FLOATS, 1e-4, 1e-5, msg, sizeof msg), "%s", msg);
    for (int h = 0; h < NH; h++)
        for (int p = 0; p < CAP; p++)
            for (int d = 0; d < HD; d++) {
                int i = (h * CAP + p) * HD + d;
                if (p >= TOTAL) {
                    ck_assert_msg(k2h[i] == SENTINEL && v2h[i] == SENTINEL, "position %d written", p);
                } else {
                    ck_assert_msg(k2h[i] != SENTINEL && v2h[i] != SENTINEL, "position %d not written", p);
                    ck_assert_msg(fabsf(k2h[i] - kref[i]) <= 1e-4f + 1e-4f * fabsf(kref[i]),
                                  "k at head %d position %d: %g, want %g", h, p, k2h[i], kref[i]);
                    ck_assert_msg(fabsf(v2h[i] - vref[i]) <= 1e-4f + 1e-4f * fabsf(vref[i]),
                                  "v at head %d position %d: %g, want %g", h, p, v2h[i], vref[i]);
                }
            }
    /* A step writes its positions [l - s, l) and no other, whatever l and
     * s (one executable): caches all sentinels before, sentinels after
     * everywhere but there (a rewrite of the positions below with the
     * values they held would pass the checks above). */
    static const int64_t writes[][2] = {{1, 1}, {1, 6}, {3, 9}, {1, TOTAL}, {2, CAP}};
    for (size_t w = 0; w < sizeof writes / sizeof writes[0]; w++) {
        const int64_t s = writes[w][0], l = writes[w][1];
        cl_mem k3 = cache_buffer(ctx), v3 = cache_buffer(ctx);
        float hl[CAP * W], o3[CAP * W];
        clf_test_fill_f32(hl, CAP * W, -1, 1);
        ck_assert_int_eq(step(exe, ctx, hl, s, l, k3, v3, o3), CLF_OK);
        read_cache(ctx, k3, k2h);
        read_cache(ctx, v3, v2h);
        for (int h = 0; h < NH; h++)
            for (int p = 0; p < CAP; p++)
                for (int d = 0; d < HD; d++) {
                    const int i = (h * CAP + p) * HD + d;
                    const bool written = p >= l - s && p < l;
                    ck_assert_msg((k2h[i] != SENTINEL) == written && (v2h[i] != SENTINEL) == written,
                                  "s %lld, l %lld: head %d position %d %s", (long long)s, (long long)l, h, p,
                                  written ? "not written" : "written");
                }
        clReleaseMemObject(k3);
        clReleaseMemObject(v3);
    }
    clReleaseMemObject(k1);
    clReleaseMemObject(v1);
    clReleaseMemObject(k2);
    clReleaseMemObject(v2);
    clf_executable_destroy(&exe);
    clf_graph_destroy(&m.g);
    clf_context_destroy(&ctx);
}
END_TEST

/* A host run keeps value semantics: the caches given stay as they are, the
 * outputs' arrays get the caches with the new positions. */
START_TEST(host_run_value_semantics)
{
    clf_context *ctx = clf_test_context();
    layer m;
    make_layer(&m, true);
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, m.g, NULL, &exe), CLF_OK);
    float hs[3 * W], kin[CACHE_FLOATS], vin[CACHE_FLOATS], kcopy[CACHE_FLOATS];
    float out[3 * W], kout[CACHE_FLOATS], vout[CACHE_FLOATS], want[3 * W], kref[CACHE_FLOATS], vref[CACHE_FLOATS];
    clf_test_fill_f32(hs, 3 * W, -1, 1);
    clf_test_fill_f32(kin, CACHE_FLOATS, -1, 1);
    clf_test_fill_f32(vin, CACHE_FLOATS, -1, 1);
    memcpy(kcopy, kin, sizeof kin);
    /* Three new positions after seven cached ones. */
    clf_host_binding in[4] = {{"h", hs}, {"k_cache", kin}, {"v_cache", vin}, {"L", NULL}};
    const int64_t *shapes[4] = {(int64_t[]){1, 3, W}, NULL, NULL, (int64_t[]){10}};
    clf_host_binding o[3] = {{"out", out}, {"k_out", kout}, {"v_out", vout}};
    clf_host_binding r[3] = {{"out", want}, {"k_out", kref}, {"v_out", vref}};
    ck_assert_int_eq(clf_run_host_shaped(exe, 4, in, shapes, 3, o), CLF_OK);
    char msg[512];
    ck_assert_msg(clf_reference_run_shaped(m.g, 4, in, shapes, 3, r, msg, sizeof msg) == CLF_OK, "%s", msg);
    ck_assert_msg(clf_test_close(CLF_F32, out, want, 3 * W, 1e-4, 1e-5, msg, sizeof msg), "%s", msg);
    ck_assert_msg(clf_test_close(CLF_F32, kout, kref, CACHE_FLOATS, 1e-4, 1e-5, msg, sizeof msg), "%s", msg);
    ck_assert_msg(clf_test_close(CLF_F32, vout, vref, CACHE_FLOATS, 1e-4, 1e-5, msg, sizeof msg), "%s", msg);
    ck_assert(memcmp(kin, kcopy, sizeof kin) == 0);
    /* Outside [7, 10) the output cache is the input's. */
    for (int h = 0; h < NH; h++)
        for (int p = 0; p < CAP; p++)
            if (p < 7 || p >= 10)
                ck_assert(memcmp(&kout[(h * CAP + p) * HD], &kin[(h * CAP + p) * HD], HD * sizeof(float)) == 0);
    clf_executable_destroy(&exe);
    clf_graph_destroy(&m.g);
    clf_context_destroy(&ctx);
}
END_TEST

/* The rules a compile and a run check. */
START_TEST(rules_checked)
{
    clf_context *ctx = clf_test_context();
    /* Writes that are no outputs. */
    layer m;
    make_layer(&m, false);
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, m.g, NULL, &exe), CLF_ERR_INVALID_ARGUMENT);
    const char *msg = clf_context_last_error(ctx);
    ck_assert_msg(strstr(msg, "'k_cache'") && strstr(msg, "not a graph output"), "%s", msg);
    clf_graph_destroy(&m.g);

    /* The cache read past its write. */
    clf_graph *g = clf_graph_create();
    clf_tensor c = clf_input(g, "c", CLF_F32, 2, (int64_t[]){CAP, HD});
    clf_tensor x = clf_input(g, "x", CLF_F32, 2, (int64_t[]){1, HD});
    clf_graph_output(g, "c_out", clf_cache_write(g, c, x, 0, 3));
    clf_graph_output(g, "sum", clf_reduce(g, CLF_REDUCE_SUM, c, 1, (int[]){0}, false));
    ck_assert_int_eq(clf_compile(ctx, g, NULL, &exe), CLF_ERR_INVALID_ARGUMENT);
    msg = clf_context_last_error(ctx);
    ck_assert_msg(strstr(msg, "'c'") && strstr(msg, "read by node"), "%s", msg);
    clf_graph_destroy(&g);

    /* A write that is two outputs. */
    g = clf_graph_create();
    c = clf_input(g, "c", CLF_F32, 2, (int64_t[]){CAP, HD});
    x = clf_input(g, "x", CLF_F32, 2, (int64_t[]){1, HD});
    clf_tensor w = clf_cache_write(g, c, x, 0, 3);
    clf_graph_output(g, "c_out", w);
    clf_graph_output(g, "c_out2", w);
    ck_assert_int_eq(clf_compile(ctx, g, NULL, &exe), CLF_ERR_INVALID_ARGUMENT);
    msg = clf_context_last_error(ctx);
    ck_assert_msg(strstr(msg, "'c'") && strstr(msg, "2 graph outputs"), "%s", msg);
    clf_graph_destroy(&g);

    /* The output bound elsewhere than its cache; a length below the new
     * entries; a length outside its bounds; a cache the kernel may not
     * write. */
    make_layer(&m, true);
    ck_assert_int_eq(clf_compile(ctx, m.g, NULL, &exe), CLF_OK);
    cl_mem kc = cache_buffer(ctx), vc = cache_buffer(ctx), other = cache_buffer(ctx);
    cl_int err;
    cl_mem bh = clCreateBuffer(clf_context_cl(ctx), CL_MEM_READ_WRITE, 4 * W * sizeof(float), NULL, &err);
    cl_mem bo = clCreateBuffer(clf_context_cl(ctx), CL_MEM_READ_WRITE, 4 * W * sizeof(float), NULL, &err);
    clf_buffer_view in[4] = {{"h", bh, 0}, {"k_cache", kc, 0}, {"v_cache", vc, 0}, {"L", NULL, 0}};
    const int64_t *shapes[4] = {(int64_t[]){1, 2, W}, NULL, NULL, (int64_t[]){4}};
    clf_buffer_view outs[3] = {{"out", bo, 0}, {"k_out", kc, 0}, {"v_out", other, 0}};
    ck_assert_int_eq(clf_enqueue_shaped(exe, NULL, 4, in, shapes, 3, outs, 0, NULL, NULL), CLF_ERR_INVALID_ARGUMENT);
    msg = clf_context_last_error(ctx);
    ck_assert_msg(strstr(msg, "\"v_out\"") && strstr(msg, "in place into input \"v_cache\""), "%s", msg);
    outs[2].buffer = vc;
    outs[2].offset = 64; /* another offset of the right buffer */
    ck_assert_int_eq(clf_enqueue_shaped(exe, NULL, 4, in, shapes, 3, outs, 0, NULL, NULL), CLF_ERR_INVALID_ARGUMENT);
    outs[2].offset = 0;
    shapes[3] = (int64_t[]){1};
    ck_assert_int_eq(clf_enqueue_shaped(exe, NULL, 4, in, shapes, 3, outs, 0, NULL, NULL), CLF_ERR_SHAPE);
    msg = clf_context_last_error(ctx);
    ck_assert_msg(strstr(msg, "L = 1") && strstr(msg, "outside 2 (the new entries)"), "%s", msg);
    shapes[3] = (int64_t[]){CAP + 1};
    ck_assert_int_eq(clf_enqueue_shaped(exe, NULL, 4, in, shapes, 3, outs, 0, NULL, NULL), CLF_ERR_SHAPE);
    msg = clf_context_last_error(ctx);
    ck_assert_msg(strstr(msg, "dimension 'L'") && strstr(msg, "bounds"), "%s", msg);
    shapes[3] = (int64_t[]){4};
    cl_mem ro = clCreateBuffer(clf_context_cl(ctx), CL_MEM_READ_ONLY, CACHE_FLOATS * sizeof(float), NULL, &err);
    in[1].buffer = outs[1].buffer = ro;
    ck_assert_int_eq(clf_enqueue_shaped(exe, NULL, 4, in, shapes, 3, outs, 0, NULL, NULL), CLF_ERR_INVALID_ARGUMENT);
    msg = clf_context_last_error(ctx);
    ck_assert_msg(strstr(msg, "\"k_cache\"") && strstr(msg, "writable"), "%s", msg);
    in[1].buffer = outs[1].buffer = kc;
    clReleaseMemObject(ro);
    ck_assert_int_eq(clf_enqueue_shaped(exe, NULL, 4, in, shapes, 3, outs, 0, NULL, NULL), CLF_OK);
    ck_assert_int_eq(clFinish(clf_context_queue(ctx)), CL_SUCCESS);
    clReleaseMemObject(kc);
    clReleaseMemObject(vc);
    clReleaseMemObject(other);
    clReleaseMemObject(bh);
    clReleaseMemObject(bo);
    clf_executable_destroy(&exe);
    clf_graph_destroy(&m.g);
    clf_context_destroy(&ctx);
}
END_TEST

/* What the plan writes: the S new entries, not the cache. A write at
 * [len - S, len) of a cache of CAP positions launches over S * NH * HD
 * elements and counts that many bytes written, alone and fused after the
 * ops that compute the entries; the positions around it keep their values
 * (poisoned before, checked after). */
START_TEST(writes_only_the_new_entries)
{
    enum { S = 3, LEN = 11 };
    clf_context *ctx = clf_test_context();
    for (int fused = 0; fused < 2; fused++) {
        clf_graph *g = clf_graph_create();
        clf_tensor c = clf_input(g, "c", CLF_F32, 4, (int64_t[]){1, NH, CAP, HD});
        clf_tensor x = clf_input(g, "x", CLF_F32, 4, (int64_t[]){1, NH, S, HD});
        clf_tensor v = fused ? clf_mul(g, clf_tanh(g, x), clf_scalar(g, CLF_F32, 2.0)) : x;
        ck_assert_int_eq(clf_graph_output(g, "c_out", clf_cache_write(g, c, v, 2, LEN)), CLF_OK);
        clf_executable *exe = NULL;
        ck_assert_int_eq(clf_compile(ctx, g, NULL, &exe), CLF_OK);
        clf_plan_stats st;
        ck_assert_int_eq(clf_executable_stats(exe, &st), CLF_OK);
        ck_assert_uint_eq(st.kernels, 1);
        ck_assert_uint_eq(st.bytes_written, (uint64_t)S * NH * HD * sizeof(float));
        ck_assert_uint_eq(exe->kernels[0].numel, (uint64_t)S * NH * HD);
        float cache[NH * CAP * HD], xs[NH * S * HD];
        for (int i = 0; i < NH * CAP * HD; i++)
            cache[i] = -1000.0f - (float)i;
        for (int i = 0; i < NH * S * HD; i++)
            xs[i] = (float)i / 16.0f;
        cl_int err;
        cl_mem b = clCreateBuffer(clf_context_cl(ctx), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof cache, cache,
                                  &err);
        cl_mem bx = clCreateBuffer(clf_context_cl(ctx), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof xs, xs, &err);
        ck_assert(b && bx);
        clf_buffer_view in[2] = {{"c", b, 0}, {"x", bx, 0}}, out[1] = {{"c_out", b, 0}};
        ck_assert_int_eq(clf_enqueue(exe, NULL, 2, in, 1, out, 0, NULL, NULL), CLF_OK);
        float got[NH * CAP * HD];
        ck_assert_int_eq(clEnqueueReadBuffer(clf_context_queue(ctx), b, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL),
                         CL_SUCCESS);
        for (int h = 0; h < NH; h++)
            for (int p = 0; p < CAP; p++)
                for (int d = 0; d < HD; d++) {
                    int at = (h * CAP + p) * HD + d;
                    float want = cache[at];
                    if (p >= LEN - S && p < LEN) {
                        float xv = xs[(h * S + p - (LEN - S)) * HD + d];
                        want = fused ? tanhf(xv) * 2.0f : xv;
                    }
                    ck_assert_msg(fabsf(got[at] - want) <= 1e-6f * fabsf(want) + 1e-6f, "head %d position %d: %g, want %g",
                                  h, p, got[at], want);
                }
        clReleaseMemObject(b);
        clReleaseMemObject(bx);
        clf_executable_destroy(&exe);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
}
END_TEST

/* A cache write whose new entries are another cache write's result
 * (written straight or through an op): the second cannot join the first's
 * kernel, whose value it reads is the whole first cache, not an expression
 * of the kernel's element; it gets a kernel of its own that loads them
 * from the first cache's buffer. Found by the graph fuzzer (seed 43,
 * graph 89: clf_compile failed with an out-of-memory status). */
START_TEST(chain_of_writes)
{
    enum { CW = 4, CAP1 = 3, CAP2 = 6, LEN2 = 5 };
    clf_context *ctx = clf_test_context();
    for (int through_op = 0; through_op < 2; through_op++) {
        clf_graph *g = clf_graph_create();
        clf_tensor c1 = clf_input(g, "c1", CLF_F32, 2, (int64_t[]){CAP1, CW});
        clf_tensor x = clf_input(g, "x", CLF_F32, 2, (int64_t[]){CAP1, CW});
        clf_tensor c2 = clf_input(g, "c2", CLF_F32, 2, (int64_t[]){CAP2, CW});
        clf_tensor w1 = clf_cache_write(g, c1, x, 0, CAP1);
        clf_tensor w2 = clf_cache_write(g, c2, through_op ? clf_neg(g, w1) : w1, 0, LEN2);
        ck_assert_int_eq(clf_graph_output(g, "w1", w1), CLF_OK);
        ck_assert_int_eq(clf_graph_output(g, "w2", w2), CLF_OK);
        clf_executable *exe = NULL;
        ck_assert_int_eq(clf_compile(ctx, g, NULL, &exe), CLF_OK);
        clf_plan_stats st;
        ck_assert_int_eq(clf_executable_stats(exe, &st), CLF_OK);
        ck_assert_uint_eq(st.kernels, 2);
        float cache1[CAP1 * CW], cache2[CAP2 * CW], xs[CAP1 * CW];
        for (int i = 0; i < CAP1 * CW; i++) {
            cache1[i] = -100.0f - (float)i;
            xs[i] = 1.0f + (float)i / 8.0f;
        }
        for (int i = 0; i < CAP2 * CW; i++)
            cache2[i] = -1000.0f - (float)i;
        cl_int err;
        cl_mem b1 = clCreateBuffer(clf_context_cl(ctx), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof cache1,
                                   cache1, &err);
        cl_mem b2 = clCreateBuffer(clf_context_cl(ctx), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof cache2,
                                   cache2, &err);
        cl_mem bx = clCreateBuffer(clf_context_cl(ctx), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof xs, xs, &err);
        ck_assert(b1 && b2 && bx);
        clf_buffer_view in[3] = {{"c1", b1, 0}, {"x", bx, 0}, {"c2", b2, 0}}, out[2] = {{"w1", b1, 0}, {"w2", b2, 0}};
        ck_assert_int_eq(clf_enqueue(exe, NULL, 3, in, 2, out, 0, NULL, NULL), CLF_OK);
        float got1[CAP1 * CW], got2[CAP2 * CW];
        cl_command_queue q = clf_context_queue(ctx);
        ck_assert_int_eq(clEnqueueReadBuffer(q, b1, CL_TRUE, 0, sizeof got1, got1, 0, NULL, NULL), CL_SUCCESS);
        ck_assert_int_eq(clEnqueueReadBuffer(q, b2, CL_TRUE, 0, sizeof got2, got2, 0, NULL, NULL), CL_SUCCESS);
        for (int i = 0; i < CAP1 * CW; i++)
            ck_assert_msg(got1[i] == xs[i], "w1 element %d: %g, want %g", i, got1[i], xs[i]);
        for (int p = 0; p < CAP2; p++)
            for (int d = 0; d < CW; d++) {
                const int at = p * CW + d;
                float want = cache2[at];
                if (p >= LEN2 - CAP1 && p < LEN2)
                    want = (through_op ? -1.0f : 1.0f) * xs[(p - (LEN2 - CAP1)) * CW + d];
                ck_assert_msg(got2[at] == want, "%s: w2 position %d, %d: %g, want %g",
                              through_op ? "through neg" : "straight", p, d, got2[at], want);
            }
        clReleaseMemObject(b1);
        clReleaseMemObject(b2);
        clReleaseMemObject(bx);
        clf_executable_destroy(&exe);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
}
END_TEST

/* A cache with no elements (a zero extent off its axis): nothing to
 * write, and no buffer to bind (OpenCL has no zero-byte buffers), so the
 * write and its cache take NULL in device runs and any data in host runs.
 * Found by the graph fuzzer's cache_write family. */
START_TEST(empty_cache)
{
    clf_context *ctx = clf_test_context();
    clf_graph *g = clf_graph_create();
    clf_tensor c = clf_input(g, "c", CLF_F32, 2, (int64_t[]){CAP, 0});
    clf_tensor x = clf_input(g, "x", CLF_F32, 2, (int64_t[]){2, 0});
    clf_graph_output(g, "c_out", clf_cache_write(g, c, x, 0, 3));
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, g, NULL, &exe), CLF_OK);
    clf_buffer_view in[2] = {{"c", NULL, 0}, {"x", NULL, 0}}, out[1] = {{"c_out", NULL, 0}};
    ck_assert_int_eq(clf_enqueue(exe, NULL, 2, in, 1, out, 0, NULL, NULL), CLF_OK);
    ck_assert_int_eq(clFinish(clf_context_queue(ctx)), CL_SUCCESS);
    float dummy = 7.0f;
    clf_host_binding hin[2] = {{"c", &dummy}, {"x", NULL}}, hout[1] = {{"c_out", NULL}};
    ck_assert_int_eq(clf_run_host(exe, 2, hin, 1, hout), CLF_OK);
    ck_assert(dummy == 7.0f);
    clf_executable_destroy(&exe);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

/* A cache write of fixed sizes through the plan cache: the second compile
 * loads the plan from disk, marks the output in place from the graph, and
 * runs as the first (value semantics on the host, the rule on devices). */
START_TEST(plan_cache_round_trip)
{
    float cin[CAP * HD], x[2 * HD], got[2][CAP * HD], y[2][HD];
    clf_test_fill_f32(cin, CAP * HD, -1, 1);
    clf_test_fill_f32(x, 2 * HD, -1, 1);
    for (int k = 0; k < 2; k++) {
        clf_context *ctx = clf_test_context();
        clf_graph *g = clf_graph_create();
        clf_tensor c = clf_input(g, "c", CLF_F32, 2, (int64_t[]){CAP, HD});
        clf_tensor xt = clf_input(g, "x", CLF_F32, 2, (int64_t[]){2, HD});
        clf_tensor w = clf_cache_write(g, c, clf_mul(g, xt, clf_scalar(g, CLF_F32, 2.0)), 0, 6);
        clf_graph_output(g, "c_out", w);
        clf_tensor valid = clf_slice(g, w, 1, (int64_t[]){0}, (int64_t[]){6}, (int[]){0}, NULL);
        clf_graph_output(g, "y", clf_reduce(g, CLF_REDUCE_SUM, valid, 1, (int[]){0}, false));
        clf_executable *exe = NULL;
        ck_assert_int_eq(clf_compile(ctx, g, NULL, &exe), CLF_OK);
        if (k == 1)
            ck_assert_msg(ctx->counts.plan_hits == 1 && ctx->counts.plans_built == 0, "plan hits %llu, built %llu",
                          (unsigned long long)ctx->counts.plan_hits, (unsigned long long)ctx->counts.plans_built);
        clf_host_binding in[2] = {{"c", cin}, {"x", x}}, out[2] = {{"c_out", got[k]}, {"y", y[k]}};
        ck_assert_int_eq(clf_run_host(exe, 2, in, 2, out), CLF_OK);
        for (int p = 0; p < CAP; p++)
            for (int d = 0; d < HD; d++) {
                float want = p == 4 || p == 5 ? 2.0f * x[(p - 4) * HD + d] : cin[p * HD + d];
                ck_assert_msg(got[k][p * HD + d] == want, "compile %d: position %d: %g, want %g", k, p,
                              got[k][p * HD + d], want);
            }
        /* The rule holds for the loaded plan too. */
        cl_int err;
        cl_mem a = clCreateBuffer(clf_context_cl(ctx), CL_MEM_READ_WRITE, sizeof cin, NULL, &err);
        cl_mem b = clCreateBuffer(clf_context_cl(ctx), CL_MEM_READ_WRITE, sizeof cin, NULL, &err);
        cl_mem bx = clCreateBuffer(clf_context_cl(ctx), CL_MEM_READ_WRITE, sizeof x, NULL, &err);
        cl_mem by = clCreateBuffer(clf_context_cl(ctx), CL_MEM_READ_WRITE, sizeof y[0], NULL, &err);
        clf_buffer_binding bin[2] = {{"c", a}, {"x", bx}}, bout[2] = {{"c_out", b}, {"y", by}};
        ck_assert_int_eq(clf_run(exe, 2, bin, 2, bout, 0, NULL, NULL), CLF_ERR_INVALID_ARGUMENT);
        bout[0].buffer = a;
        ck_assert_int_eq(clf_run(exe, 2, bin, 2, bout, 0, NULL, NULL), CLF_OK);
        ck_assert_int_eq(clFinish(clf_context_queue(ctx)), CL_SUCCESS);
        clReleaseMemObject(a);
        clReleaseMemObject(b);
        clReleaseMemObject(bx);
        clReleaseMemObject(by);
        clf_executable_destroy(&exe);
        clf_graph_destroy(&g);
        clf_context_destroy(&ctx);
    }
    ck_assert(memcmp(y[0], y[1], sizeof y[0]) == 0);
}
END_TEST

/* ---- An exported decoder with past_key_values (ONNX) ----------------------- */

#define KV_CAP 16
#define KV_LAYERS 2
#define KV_HEADS 2
#define KV_HD 8
#define KV_FLOATS (KV_HEADS * KV_CAP * KV_HD)
#define KV_SEQ 9     /* the fixture's tokens: a prompt of 6, 3 decoded */
#define KV_VOCAB 128 /* logits a token */

static void read_npy(const char *dir, const char *file, npy_array *a)
{
    char path[1200], err[200];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    ck_assert_msg(npy_read(path, a, err, sizeof err) == 0, "%s: %s", path, err);
}

/* One run of the exported decoder on device buffers: seq token ids at
 * positions pos, a mask of total positions, the caches bufs bound as
 * past and present (written in place); the logits [1, seq, V] into
 * logits. */
static clf_status run_decoder(clf_executable *exe, clf_context *ctx, char (*past)[32], char (*present)[32],
                              cl_mem *bufs, const int64_t *ids, const int64_t *mask, const int64_t *pos, int64_t seq,
                              int64_t total, float *logits, size_t nlogits)
{
    cl_int err;
    cl_context cl = clf_context_cl(ctx);
    cl_mem b_ids = clCreateBuffer(cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (size_t)seq * 8, (void *)ids, &err);
    cl_mem b_mask =
        clCreateBuffer(cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (size_t)total * 8, (void *)mask, &err);
    cl_mem b_pos = clCreateBuffer(cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (size_t)seq * 8, (void *)pos, &err);
    cl_mem b_out = clCreateBuffer(cl, CL_MEM_READ_WRITE, nlogits * 4, NULL, &err);
    ck_assert(b_ids && b_mask && b_pos && b_out);
    clf_buffer_view in[3 + 2 * KV_LAYERS] = {{"input_ids", b_ids, 0}, {"attention_mask", b_mask, 0},
                                             {"position_ids", b_pos, 0}};
    clf_buffer_view out[1 + 2 * KV_LAYERS] = {{"logits", b_out, 0}};
    const int64_t ids_shape[2] = {1, seq}, mask_shape[2] = {1, total};
    const int64_t *shapes[3 + 2 * KV_LAYERS] = {ids_shape, mask_shape, ids_shape};
    for (int c = 0; c < 2 * KV_LAYERS; c++) {
        in[3 + c] = (clf_buffer_view){past[c], bufs[c], 0};
        out[1 + c] = (clf_buffer_view){present[c], bufs[c], 0};
    }
    cl_event done = NULL;
    clf_status st =
        clf_enqueue_shaped(exe, NULL, 3 + 2 * KV_LAYERS, in, shapes, 1 + 2 * KV_LAYERS, out, 0, NULL, &done);
    if (st == CLF_OK) {
        ck_assert_int_eq(clWaitForEvents(1, &done), CL_SUCCESS);
        clReleaseEvent(done);
        ck_assert_int_eq(
            clEnqueueReadBuffer(clf_context_queue(ctx), b_out, CL_TRUE, 0, nlogits * 4, logits, 0, NULL, NULL),
            CL_SUCCESS);
    }
    clReleaseMemObject(b_ids);
    clReleaseMemObject(b_mask);
    clReleaseMemObject(b_pos);
    clReleaseMemObject(b_out);
    return st;
}

/* tests/models/llama_torchscript_kv (make_kv_fixture.py): a prompt of 6
 * tokens after a masked past of 1, then 3 decode steps, each run through
 * one executable with the caches in device buffers written in place; the
 * logits and the caches' first `total` positions against onnxruntime's,
 * the positions past them untouched; the decode steps after the first
 * build nothing; the whole sequence in one run gives the steps' logits. */
START_TEST(onnx_decoder_with_past)
{
    const char *src = getenv("CLFUSE_TEST_SOURCE_DIR");
    char dir[1024], path[1200], msg[512] = "";
    snprintf(dir, sizeof dir, "%s/models/llama_torchscript_kv", src ? src : "tests");
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    static const char *const caches[2 * KV_LAYERS] = {"key.0", "value.0", "key.1", "value.1"};
    char past[2 * KV_LAYERS][32], present[2 * KV_LAYERS][32];
    clf_onnx_kv_cache kv[2 * KV_LAYERS];
    for (int c = 0; c < 2 * KV_LAYERS; c++) {
        snprintf(past[c], sizeof past[c], "past_%s", caches[c]);
        snprintf(present[c], sizeof present[c], "present_%s", caches[c]);
        kv[c] = (clf_onnx_kv_cache){past[c], present[c], KV_CAP};
    }
    /* Bounds around the runs (a prompt of 6, then the whole sequence of 9;
     * totals 7 to 10) keep the probes few. */
    clf_onnx_symbol syms[2] = {{"seq", 1, KV_SEQ}, {"total", 2, 10}};
    clf_onnx_derived_dim derived[1] = {{"past", "total", "seq"}};
    clf_onnx_model *model = NULL;
    /* A count without its array is refused, not read. */
    clf_status st = clf_onnx_load_file(path, clf_onnx_params(.symbols = syms, .nsymbols = 2, .nderived = 1,
                                                              .message = msg, .message_cap = sizeof msg),
                                       &model);
    ck_assert_msg(st == CLF_ERR_INVALID_ARGUMENT && strstr(msg, "nderived is 1 but derived is NULL"), "%d: %s", st,
                  msg);
    st = clf_onnx_load_file(path, clf_onnx_params(.symbols = syms, .nsymbols = 2, .derived = derived,
                                                              .nderived = 1, .kv_caches = kv, .nkv_caches = 4,
                                                              .message = msg, .message_cap = sizeof msg),
                                       &model);
    ck_assert_msg(st == CLF_OK, "%s", msg);
    clf_context *ctx = clf_test_context();
    clf_executable *exe = NULL;
    st = clf_compile(ctx, clf_onnx_model_graph(model), NULL, &exe);
    ck_assert_msg(st == CLF_OK, "%s", clf_context_last_error(ctx));

    /* The caches: the masked past position 0 zero, a sentinel after it. */
    cl_int err;
    cl_mem bufs[2 * KV_LAYERS];
    float init[KV_FLOATS];
    for (int i = 0; i < KV_FLOATS; i++)
        init[i] = (i / KV_HD) % KV_CAP == 0 ? 0.0f : SENTINEL;
    for (int c = 0; c < 2 * KV_LAYERS; c++) {
        bufs[c] =
            clCreateBuffer(clf_context_cl(ctx), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof init, init, &err);
        ck_assert(bufs[c]);
    }
    clf__program_counts before = ctx->counts;
    /* The library's logits of every step, and the steps' tokens, positions
     * and last mask: the whole sequence's run below. */
    static float stepped[KV_SEQ * KV_VOCAB], whole[KV_SEQ * KV_VOCAB];
    int64_t all_ids[KV_SEQ], all_pos[KV_SEQ], last_mask[KV_CAP];
    size_t nstepped = 0;
    int64_t nseq = 0, ntotal = 0;
    for (int k = 0; k < 4; k++) {
        npy_array ids, mask, pos, want;
        char f[256];
        snprintf(f, sizeof f, "step%d_input_input_ids.npy", k);
        read_npy(dir, f, &ids);
        snprintf(f, sizeof f, "step%d_input_attention_mask.npy", k);
        read_npy(dir, f, &mask);
        snprintf(f, sizeof f, "step%d_input_position_ids.npy", k);
        read_npy(dir, f, &pos);
        snprintf(f, sizeof f, "step%d_output_logits.npy", k);
        read_npy(dir, f, &want);
        int64_t total = mask.shape[1], seq = ids.shape[1];
        float *got = stepped + nstepped;
        ck_assert(nstepped + want.numel <= sizeof stepped / sizeof stepped[0]);
        st = run_decoder(exe, ctx, past, present, bufs, ids.data, mask.data, pos.data, seq, total, got, want.numel);
        ck_assert_msg(st == CLF_OK, "step %d: %s", k, clf_context_last_error(ctx));
        if (k == 1)
            before = ctx->counts;
        ck_assert_msg(clf_test_close(CLF_F32, got, want.data, want.numel, 1e-4, 1e-4, msg, sizeof msg), "step %d: %s",
                      k, msg);
        nstepped += want.numel;
        memcpy(all_ids + nseq, ids.data, (size_t)seq * sizeof *all_ids);
        memcpy(all_pos + nseq, pos.data, (size_t)seq * sizeof *all_pos);
        memcpy(last_mask, mask.data, (size_t)total * sizeof *last_mask);
        nseq += seq;
        ntotal = total;
        for (int c = 0; c < 2 * KV_LAYERS; c++) {
            npy_array pw;
            snprintf(f, sizeof f, "step%d_output_%s.npy", k, present[c]);
            read_npy(dir, f, &pw);
            ck_assert(pw.shape[2] == total);
            float cache[KV_FLOATS];
            read_cache_n(ctx, bufs[c], cache, KV_FLOATS);
            for (int h = 0; h < KV_HEADS; h++)
                for (int p = 0; p < KV_CAP; p++)
                    for (int d = 0; d < KV_HD; d++) {
                        float g = cache[(h * KV_CAP + p) * KV_HD + d];
                        if (p >= total) {
                            ck_assert_msg(g == SENTINEL, "step %d %s: position %d written", k, present[c], p);
                        } else {
                            float w = ((float *)pw.data)[(h * total + p) * KV_HD + d];
                            ck_assert_msg(fabsf(g - w) <= 1e-4f + 1e-4f * fabsf(w),
                                          "step %d %s: head %d position %d: %g, want %g", k, present[c], h, p, g, w);
                        }
                    }
            npy_free(&pw);
        }
        npy_free(&ids);
        npy_free(&mask);
        npy_free(&pos);
        npy_free(&want);
    }
    ck_assert_msg(ctx->counts.source_builds == before.source_builds, "decode steps built %llu programs",
                  (unsigned long long)(ctx->counts.source_builds - before.source_builds));
    /* Decode equals the whole sequence: the same tokens in one run (after
     * the same masked past position, fresh caches) give the steps'
     * logits. */
    ck_assert_int_eq(nseq, KV_SEQ);
    for (int c = 0; c < 2 * KV_LAYERS; c++) {
        clReleaseMemObject(bufs[c]);
        bufs[c] =
            clCreateBuffer(clf_context_cl(ctx), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof init, init, &err);
        ck_assert(bufs[c]);
    }
    st = run_decoder(exe, ctx, past, present, bufs, all_ids, last_mask, all_pos, nseq, ntotal, whole, nstepped);
    ck_assert_msg(st == CLF_OK, "the whole sequence: %s", clf_context_last_error(ctx));
    ck_assert_msg(clf_test_close(CLF_F32, whole, stepped, nstepped, 1e-4, 1e-4, msg, sizeof msg),
                  "the whole sequence against its decode steps: %s", msg);
    for (int c = 0; c < 2 * KV_LAYERS; c++)
        clReleaseMemObject(bufs[c]);
    clf_executable_destroy(&exe);
    clf_onnx_model_destroy(&model);
    clf_context_destroy(&ctx);
}
END_TEST

int main(void)
{
    clf_test_setup_env();
    Suite *s = suite_create("kv_cache");
    clf_test_add_case(s, "builder_rules", builder_rules);
    clf_test_add_case(s, "decode_equals_prefill", decode_equals_prefill);
    clf_test_add_case(s, "host_run_value_semantics", host_run_value_semantics);
    clf_test_add_case(s, "rules_checked", rules_checked);
    clf_test_add_case(s, "empty_cache", empty_cache);
    clf_test_add_case(s, "chain_of_writes", chain_of_writes);
    clf_test_add_case(s, "writes_only_the_new_entries", writes_only_the_new_entries);
    clf_test_add_case(s, "plan_cache_round_trip", plan_cache_round_trip);
    clf_test_add_case(s, "onnx_decoder_with_past", onnx_decoder_with_past);
    return clf_test_run_suite(s);
}
