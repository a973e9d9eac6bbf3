/* Suite "runtime_threads": one context and one executable used from several
 * threads at once, as runtime.h allows. Every thread checks every result it
 * gets against its own inputs; the last error is per thread. Meant to run
 * under ThreadSanitizer too (.ci/run builds it with -Db_sanitize=thread).
 * Check's assertions are not thread-safe: threads record the first failure
 * and the test asserts after joining them. */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clfuse/onnx.h"
#include "clfuse/reference.h"
#include "runtime/runtime_internal.h"
#include "test_support.h"

#define NTHREADS 4
#define ITERS 25
#define N 4096

typedef struct worker {
    pthread_t tid;
    int id;
    clf_context *ctx;
    clf_executable *exe;
    bool same_lengths; /* shaped_worker: the lengths every thread runs, not its own */
    char failure[512]; /* "" when every check passed */
} worker;

/* The seed example: y = relu(a*b + c), of N elements or (symbolic) of a
 * length n in 1..N. */
static clf_graph *seed_graph_of(bool symbolic)
{
    clf_graph *g = clf_graph_create();
    const int64_t n = symbolic ? clf_dim(g, "n", 1, N) : N;
    clf_tensor a = clf_input(g, "a", CLF_F32, 1, &n), b = clf_input(g, "b", CLF_F32, 1, &n),
               c = clf_input(g, "c", CLF_F32, 1, &n);
    clf_graph_output(g, "y", clf_relu(g, clf_add(g, clf_mul(g, a, b), c)));
    return g;
}

static clf_graph *seed_graph(void) { return seed_graph_of(false); }
static clf_graph *symbolic_seed_graph(void) { return seed_graph_of(true); }

/* The seed as an ONNX model with n symbolic, its a reshaped through shape
 * arithmetic that folds at each import: one fold whose literals change
 * with n (the shape times one) and one that never does (one plus zero),
 * so that imports at new lengths from several threads at once both find
 * and add folds in the model's memo (onnx/fold_memo.h). */
static clf_graph *onnx_seed_graph(void)
{
    static const char text[] = "<ir_version: 8, opset_import: [\"\" : 17]>\n"
                               "seed (float[n] a, float[n] b, float[n] c) => (float[n] y) {\n"
                               "  one = Constant <value = int64[1] {1}> ()\n"
                               "  zero = Constant <value = int64[1] {0}> ()\n"
                               "  still_one = Add(one, zero)\n"
                               "  s = Shape(a)\n"
                               "  s1 = Mul(s, still_one)\n"
                               "  a1 = Reshape(a, s1)\n"
                               "  m = Mul(a1, b)\n"
                               "  t = Add(m, c)\n"
                               "  y = Relu(t)\n"
                               "}\n";
    char msg[512] = "";
    clf_onnx_symbol sym = {"n", 1, N};
    clf_onnx_model *model = NULL;
    clf_status st = clf_onnx_load_memory(text, sizeof text - 1, NULL,
                                         clf_onnx_params(.symbols = &sym, .nsymbols = 1, .message = msg,
                                                         .message_cap = sizeof msg),
                                         &model);
    ck_assert_msg(st == CLF_OK, "%s", msg);
    clf_graph *g = clf_onnx_model_take_graph(model);
    clf_onnx_model_destroy(&model);
    return g;
}

/* Inputs that differ per thread and iteration, so that a result computed
 * from another caller's inputs cannot pass. */
static void fill(int id, int it, float *a, float *b, float *c)
{
    for (int i = 0; i < N; i++) {
        a[i] = (float)(id * 1000 + it) + (float)i * 0.25f;
        b[i] = (float)((i + id + it) % 7) - 3.0f;
        c[i] = (float)(id - it);
    }
}

/* The first n elements of y against relu(a*b + c). */
static bool check_n(worker *w, int it, int64_t n, const float *a, const float *b, const float *c, const float *y)
{
    for (int64_t i = 0; i < n; i++) {
        float want = fmaxf(a[i] * b[i] + c[i], 0.0f);
        if (!(fabsf(y[i] - want) <= 1e-6f + 1e-6f * fabsf(want))) {
            snprintf(w->failure, sizeof w->failure, "thread %d iteration %d (length %lld): y[%lld] = %g, want %g",
                     w->id, it, (long long)n, (long long)i, (double)y[i], (double)want);
            return false;
        }
    }
    return true;
}

static bool check(worker *w, int it, const float *a, const float *b, const float *c, const float *y)
{
    return check_n(w, it, N, a, b, c, y);
}

static void *host_worker(void *arg)
{
    worker *w = arg;
    float *a = malloc(4 * N * sizeof *a);
    if (!a) {
        snprintf(w->failure, sizeof w->failure, "out of memory");
        return NULL;
    }
    float *b = a + N, *c = b + N, *y = c + N;
    for (int it = 0; it < ITERS; it++) {
        fill(w->id, it, a, b, c);
        memset(y, 0xff, N * sizeof *y);
        clf_host_binding in[3] = {{"a", a}, {"b", b}, {"c", c}}, out[1] = {{"y", y}};
        clf_status st = clf_run_host(w->exe, 3, in, 1, out);
        if (st != CLF_OK) {
            snprintf(w->failure, sizeof w->failure, "thread %d: clf_run_host: %s: %s", w->id, clf_status_name(st),
                     clf_context_last_error(w->ctx));
            break;
        }
        if (!check(w, it, a, b, c, y))
            break;
        /* (Where the device's timestamps are not real, there is no profile
         * to ask for: rusticl's llvmpipe.) */
        if (it % 5 == 0 && clf_context_timestamps_real(w->ctx)) {
            clf_run_profile p;
            st = clf_executable_last_profile(w->exe, &p, NULL, 0);
            if (st != CLF_OK || p.kernels != 1) {
                snprintf(w->failure, sizeof w->failure, "thread %d: clf_executable_last_profile: %s, %zu kernels",
                         w->id, clf_status_name(st), p.kernels);
                break;
            }
        }
    }
    free(a);
    return NULL;
}

/* Reads bytes of m at offset into y after done, waiting on the read's
 * event: a blocking read of Mesa 22.3's rusticl returns before the data is
 * in y about one time in a hundred with four threads sharing a queue (y
 * still the poison; src/runtime/run.c's clf_run_host waits the same way). */
static cl_int read_after(cl_command_queue q, cl_mem m, size_t offset, size_t bytes, float *y, cl_event done)
{
    cl_event read = NULL;
    cl_int err = clEnqueueReadBuffer(q, m, CL_FALSE, offset, bytes, y, 1, &done, &read);
    if (err == CL_SUCCESS)
        err = clWaitForEvents(1, &read);
    if (read)
        clReleaseEvent(read);
    return err;
}

static void *buffer_worker(void *arg)
{
    worker *w = arg;
    cl_context cl = clf_context_cl(w->ctx);
    cl_command_queue q = clf_context_queue(w->ctx);
    float *a = malloc(4 * N * sizeof *a);
    cl_mem m[4] = {NULL};
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < 4 && err == CL_SUCCESS; i++)
        m[i] = clCreateBuffer(cl, CL_MEM_READ_WRITE, N * sizeof *a, NULL, &err);
    if (!a || err != CL_SUCCESS) {
        snprintf(w->failure, sizeof w->failure, "thread %d: setup failed", w->id);
        goto out;
    }
    float *b = a + N, *c = b + N, *y = c + N;
    for (int it = 0; it < ITERS; it++) {
        fill(w->id, it + 100, a, b, c);
        memset(y, 0xff, N * sizeof *y);
        clEnqueueWriteBuffer(q, m[0], CL_TRUE, 0, N * sizeof *a, a, 0, NULL, NULL);
        clEnqueueWriteBuffer(q, m[1], CL_TRUE, 0, N * sizeof *a, b, 0, NULL, NULL);
        clEnqueueWriteBuffer(q, m[2], CL_TRUE, 0, N * sizeof *a, c, 0, NULL, NULL);
        clf_buffer_binding in[3] = {{"a", m[0]}, {"b", m[1]}, {"c", m[2]}}, out[1] = {{"y", m[3]}};
        cl_event done = NULL;
        clf_status st = clf_run(w->exe, 3, in, 1, out, 0, NULL, &done);
        if (st != CLF_OK) {
            snprintf(w->failure, sizeof w->failure, "thread %d: clf_run: %s: %s", w->id, clf_status_name(st),
                     clf_context_last_error(w->ctx));
            break;
        }
        err = read_after(q, m[3], 0, N * sizeof *y, y, done);
        clReleaseEvent(done);
        if (err != CL_SUCCESS) {
            snprintf(w->failure, sizeof w->failure, "thread %d: read: %d", w->id, err);
            break;
        }
        if (!check(w, it + 100, a, b, c, y))
            break;
    }
out:
    for (int i = 0; i < 4; i++)
        if (m[i])
            clReleaseMemObject(m[i]);
    free(a);
    return NULL;
}

/* clf_enqueue from each thread on its own queue, with a, b, c and y packed
 * in one buffer at aligned offsets: runs of one executable on several
 * queues, each making its sub-buffers. */
static void *offset_worker(void *arg)
{
    worker *w = arg;
    cl_context cl = clf_context_cl(w->ctx);
    clf_device_desc d;
    clf_context_device(w->ctx, &d);
    size_t step = (N * sizeof(float) + d.base_align - 1) / d.base_align * d.base_align;
    cl_int err = CL_SUCCESS;
    cl_command_queue q = clf_test_queue(w->ctx, &err);
    cl_mem m = q ? clCreateBuffer(cl, CL_MEM_READ_WRITE, 4 * step, NULL, &err) : NULL;
    float *a = malloc(4 * N * sizeof *a);
    if (!q || !m || !a) {
        snprintf(w->failure, sizeof w->failure, "thread %d: setup failed (%d)", w->id, err);
        goto out;
    }
    float *b = a + N, *c = b + N, *y = c + N;
    for (int it = 0; it < ITERS; it++) {
        fill(w->id, it + 200, a, b, c);
        clEnqueueWriteBuffer(q, m, CL_FALSE, 0, N * sizeof *a, a, 0, NULL, NULL);
        clEnqueueWriteBuffer(q, m, CL_FALSE, step, N * sizeof *a, b, 0, NULL, NULL);
        clEnqueueWriteBuffer(q, m, CL_FALSE, 2 * step, N * sizeof *a, c, 0, NULL, NULL);
        clf_buffer_view in[3] = {{"a", m, 0}, {"b", m, step}, {"c", m, 2 * step}}, out[1] = {{"y", m, 3 * step}};
        cl_event done = NULL;
        clf_status st = clf_enqueue(w->exe, q, 3, in, 1, out, 0, NULL, &done);
        if (st != CLF_OK) {
            snprintf(w->failure, sizeof w->failure, "thread %d: clf_enqueue: %s: %s", w->id, clf_status_name(st),
                     clf_context_last_error(w->ctx));
            break;
        }
        memset(y, 0xff, N * sizeof *y);
        err = read_after(q, m, 3 * step, N * sizeof *y, y, done);
        clReleaseEvent(done);
        if (err != CL_SUCCESS) {
            snprintf(w->failure, sizeof w->failure, "thread %d: read: %d", w->id, err);
            break;
        }
        if (!check(w, it + 200, a, b, c, y))
            break;
    }
out:
    if (m)
        clReleaseMemObject(m);
    if (q)
        clReleaseCommandQueue(q);
    free(a);
    return NULL;
}

/* Runs fn on NTHREADS threads over one executable of make's graph. */
/* Runs fn in NTHREADS threads on ctx (and exe, which may be NULL), then
 * asserts that none recorded a failure. */
static void run_threads(void *(*fn)(void *), clf_context *ctx, clf_executable *exe)
{
    worker w[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        w[i] = (worker){.id = i, .ctx = ctx, .exe = exe};
        ck_assert_int_eq(pthread_create(&w[i].tid, NULL, fn, &w[i]), 0);
    }
    for (int i = 0; i < NTHREADS; i++)
        ck_assert_int_eq(pthread_join(w[i].tid, NULL), 0);
    for (int i = 0; i < NTHREADS; i++)
        ck_assert_msg(w[i].failure[0] == '\0', "%s", w[i].failure);
}

static void run_workers_on(void *(*fn)(void *), bool profiling, clf_graph *(*make)(void))
{
    clf_context *ctx = NULL;
    ck_assert_int_eq(clf_context_create(clf_context_params(.profiling = profiling), &ctx), CLF_OK);
    clf_graph *g = make();
    clf_executable *exe = NULL;
    clf_status st = clf_compile(ctx, g, NULL, &exe);
    ck_assert_msg(st == CLF_OK, "%s: %s", clf_status_name(st), clf_context_last_error(ctx));
    run_threads(fn, ctx, exe);
    clf_executable_destroy(&exe);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}

static void run_workers(void *(*fn)(void *), bool profiling) { run_workers_on(fn, profiling, seed_graph); }

START_TEST(run_host_from_threads) { run_workers(host_worker, true); }
END_TEST

START_TEST(run_buffers_from_threads) { run_workers(buffer_worker, false); }
END_TEST

START_TEST(enqueue_offsets_from_threads) { run_workers(offset_worker, false); }
END_TEST

/* Compiles on one context from several threads (the program cache is
 * shared): the same graph in half the threads, another in the rest. */
static void *compile_worker(void *arg)
{
    worker *w = arg;
    clf_graph *g = clf_graph_create();
    const int64_t n = 64;
    clf_tensor x = clf_input(g, "x", CLF_F32, 1, &n);
    clf_graph_output(g, "y", w->id % 2 ? clf_exp(g, clf_neg(g, x)) : clf_sigmoid(g, x));
    float in[64], out[64];
    for (int i = 0; i < 64; i++)
        in[i] = (float)i / 16.0f - 2.0f;
    for (int it = 0; it < 3 && !w->failure[0]; it++) {
        clf_executable *exe = NULL;
        clf_status st = clf_compile(w->ctx, g, NULL, &exe);
        if (st == CLF_OK)
            st = clf_run_host(exe, 1, (clf_host_binding[]){{"x", in}}, 1, (clf_host_binding[]){{"y", out}});
        if (st != CLF_OK)
            snprintf(w->failure, sizeof w->failure, "thread %d: %s: %s", w->id, clf_status_name(st),
                     clf_context_last_error(w->ctx));
        for (int i = 0; st == CLF_OK && i < 64; i++) {
            float want = w->id % 2 ? expf(-in[i]) : 1.0f / (1.0f + expf(-in[i]));
            if (!(fabsf(out[i] - want) <= 1e-5f * (1.0f + fabsf(want)))) {
                snprintf(w->failure, sizeof w->failure, "thread %d: y[%d] = %g, want %g", w->id, i, (double)out[i],
                         (double)want);
                break;
            }
        }
        clf_executable_destroy(&exe);
    }
    clf_graph_destroy(&g);
    return NULL;
}

START_TEST(compile_from_threads)
{
    clf_context *ctx = clf_test_context();
    run_threads(compile_worker, ctx, NULL);
    clf_context_destroy(&ctx);
}
END_TEST

/* A graph of several kernels that differ (a GEMM with its epilogue, a
 * row softmax after it, a column sum of x): variant 0 or 1 differ in the
 * activation, so that threads share some programs and not others. */
static clf_graph *kernels_graph(int variant)
{
    enum { R = 16, D = 64 };
    clf_graph *g = clf_graph_create();
    const int64_t xs[2] = {R, D}, ws[2] = {D, D};
    clf_tensor x = clf_input(g, "x", CLF_F32, 2, xs), w = clf_input(g, "w", CLF_F32, 2, ws);
    clf_tensor h = clf_matmul(g, x, w);
    h = variant ? clf_sigmoid(g, h) : clf_relu(g, h);
    clf_graph_output(g, "y", clf_softmax(g, h, -1));
    int ax0 = 0;
    clf_graph_output(g, "s", clf_reduce_sum(g, clf_mul(g, x, x), 1, &ax0, false));
    return g;
}

/* Compiles kernels_graph on the shared context, each compile building its
 * programs in threads of its own (CLFUSE_BUILD_THREADS, set before the
 * workers start), and checks the results against the reference. */
static void *parallel_build_worker(void *arg)
{
    worker *w = arg;
    clf_graph *g = kernels_graph(w->id % 2);
    float x[16 * 64], wt[64 * 64], y[16 * 64], s[64], yw[16 * 64], sw[64];
    for (int it = 0; it < 3 && !w->failure[0]; it++) {
        for (int i = 0; i < 16 * 64; i++)
            x[i] = (float)((i * 7 + w->id * 13 + it) % 23) / 11.0f - 1.0f;
        for (int i = 0; i < 64 * 64; i++)
            wt[i] = (float)((i * 5 + w->id + it) % 17) / 16.0f - 0.5f;
        clf_host_binding in[2] = {{"x", x}, {"w", wt}}, out[2] = {{"y", y}, {"s", s}}, want[2] = {{"y", yw}, {"s", sw}};
        char msg[256];
        if (clf_reference_run(g, 2, in, 2, want, msg, sizeof msg) != CLF_OK) {
            snprintf(w->failure, sizeof w->failure, "thread %d: reference: %s", w->id, msg);
            break;
        }
        clf_executable *exe = NULL;
        clf_status st = clf_compile(w->ctx, g, NULL, &exe);
        if (st == CLF_OK && clf_executable_kernel_count(exe) < 2)
            snprintf(w->failure, sizeof w->failure, "thread %d: %zu kernel(s); the test wants several", w->id,
                     clf_executable_kernel_count(exe));
        if (st == CLF_OK)
            st = clf_run_host(exe, 2, in, 2, out);
        if (st != CLF_OK)
            snprintf(w->failure, sizeof w->failure, "thread %d: %s: %s", w->id, clf_status_name(st),
                     clf_context_last_error(w->ctx));
        else if (!clf_test_close(CLF_F32, y, yw, 16 * 64, 1e-5, 1e-6, msg, sizeof msg) ||
                 !clf_test_close(CLF_F32, s, sw, 64, 1e-5, 1e-5, msg, sizeof msg))
            snprintf(w->failure, sizeof w->failure, "thread %d iteration %d: %s", w->id, it, msg);
        clf_executable_destroy(&exe);
    }
    clf_graph_destroy(&g);
    return NULL;
}

/* Both ways of getting a compile's programs: in build threads (a program
 * per source) and as the graph's one program (PoCL's default); after the
 * threads, one more compile's kernels come from one program or from as
 * many as they have, as asked. Each way also with the compile's progress
 * logged (CLFUSE_LOGS=cache: build threads log as they finish). */
START_TEST(parallel_builds_from_threads)
{
    setenv("CLFUSE_BUILD_THREADS", "3", 1);
    for (int way = 0; way < 4; way++) {
        const int one = way % 2;
        if (way >= 2)
            setenv("CLFUSE_LOGS", "cache", 1);
        setenv("CLFUSE_ONE_PROGRAM", one ? "1" : "0", 1);
        clf_context *ctx = clf_test_context();
        run_threads(parallel_build_worker, ctx, NULL);
        clf_graph *g = kernels_graph(0);
        clf_executable *exe = NULL;
        ck_assert_int_eq(clf_compile(ctx, g, NULL, &exe), CLF_OK);
        ck_assert_uint_ge(exe->nkernels, 2);
        cl_program first = NULL;
        size_t same = 0;
        for (size_t k = 0; k < exe->nkernels; k++) {
            cl_program p = NULL;
            ck_assert_int_eq(clGetKernelInfo(exe->kernels[k].kernel, CL_KERNEL_PROGRAM, sizeof p, &p, NULL),
                             CL_SUCCESS);
            if (k == 0)
                first = p;
            same += p == first;
        }
        ck_assert_msg(one ? same == exe->nkernels : same == 1, "%zu of %zu kernels share the first's program (%s)",
                      same, exe->nkernels, one ? "one program asked" : "a program per source asked");
        clf_executable_destroy(&exe);
        clf_graph_destroy(&g);
        clf_context_destroy(&ctx);
    }
    unsetenv("CLFUSE_LOGS");
    unsetenv("CLFUSE_ONE_PROGRAM");
    unsetenv("CLFUSE_BUILD_THREADS");
}
END_TEST

/* Each thread reads its own last failure: thread i binds a wrong name of
 * its own and must see that name, never another thread's. */
static void *error_worker(void *arg)
{
    worker *w = arg;
    char bad[32], want[64];
    snprintf(bad, sizeof bad, "nope%d", w->id);
    snprintf(want, sizeof want, "\"%s\"", bad);
    float x[N], y[N];
    for (int it = 0; it < ITERS && !w->failure[0]; it++) {
        clf_host_binding in[3] = {{"a", x}, {"b", x}, {bad, x}}, out[1] = {{"y", y}};
        clf_status st = clf_run_host(w->exe, 3, in, 1, out);
        const char *msg = clf_context_last_error(w->ctx);
        if (st != CLF_ERR_NOT_FOUND || !strstr(msg, want))
            snprintf(w->failure, sizeof w->failure, "thread %d: %s, \"%s\" should name %s", w->id,
                     clf_status_name(st), msg, want);
    }
    return NULL;
}

START_TEST(errors_per_thread) { run_workers(error_worker, false); }
END_TEST


/* One executable of a graph with a symbolic length, each thread running
 * its own lengths: the specialisations share their cl_kernels (their
 * arguments set under one lock, source_lift.h), so a thread that saw
 * another's arguments would compute over the wrong length or buffers. */
static void *shaped_worker(void *arg)
{
    worker *w = arg;
    float *a = malloc(4 * N * sizeof *a);
    if (!a) {
        snprintf(w->failure, sizeof w->failure, "out of memory");
        return NULL;
    }
    float *b = a + N, *c = b + N, *y = c + N;
    for (int it = 0; it < ITERS; it++) {
        /* Lengths of its own, a few of them (or everyone's same few). */
        const int64_t n = N - (w->same_lengths ? 0 : 64 * w->id) - (it % 3) * 7;
        fill(w->id, it, a, b, c);
        memset(y, 0xff, N * sizeof *y);
        clf_host_binding in[3] = {{"a", a}, {"b", b}, {"c", c}}, out[1] = {{"y", y}};
        const int64_t *shapes[3] = {&n, &n, &n};
        clf_status st = clf_run_host_shaped(w->exe, 3, in, shapes, 1, out);
        if (st != CLF_OK) {
            snprintf(w->failure, sizeof w->failure, "thread %d: clf_run_host_shaped: %s: %s", w->id,
                     clf_status_name(st), clf_context_last_error(w->ctx));
            break;
        }
        if (!check_n(w, it, n, a, b, c, y))
            break;
    }
    free(a);
    return NULL;
}

START_TEST(shaped_runs_from_threads) { run_workers_on(shaped_worker, false, symbolic_seed_graph); }
END_TEST

/* The graph onnx_shaped_runs_from_threads' threads each compile. */
static const clf_graph *threads_graph;

/* shaped_worker on an executable of the thread's own, at the lengths
 * every thread runs: the executables share the graph's regen, so their
 * imports of one length run at once and find and add the same folds in
 * its memo. */
static void *own_executable_shaped_worker(void *arg)
{
    worker *w = arg;
    w->same_lengths = true;
    clf_status st = clf_compile(w->ctx, threads_graph, NULL, &w->exe);
    if (st != CLF_OK) {
        snprintf(w->failure, sizeof w->failure, "thread %d: clf_compile: %s: %s", w->id, clf_status_name(st),
                 clf_context_last_error(w->ctx));
        return NULL;
    }
    shaped_worker(w);
    clf_executable_destroy(&w->exe);
    return NULL;
}

START_TEST(onnx_shaped_runs_from_threads)
{
    clf_context *ctx = NULL;
    ck_assert_int_eq(clf_context_create(clf_context_params(.profiling = false), &ctx), CLF_OK);
    clf_graph *g = onnx_seed_graph();
    threads_graph = g;
    run_threads(own_executable_shaped_worker, ctx, NULL);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

static void add(Suite *s, const char *name, const TTest *t)
{
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, t);
    suite_add_tcase(s, tc);
}

int main(void)
{
    Suite *s = suite_create("runtime_threads");
    add(s, "run_host_from_threads", run_host_from_threads);
    add(s, "run_buffers_from_threads", run_buffers_from_threads);
    add(s, "enqueue_offsets_from_threads", enqueue_offsets_from_threads);
    add(s, "compile_from_threads", compile_from_threads);
    add(s, "parallel_builds_from_threads", parallel_builds_from_threads);
    add(s, "errors_per_thread", errors_per_thread);
    add(s, "shaped_runs_from_threads", shaped_runs_from_threads);
    add(s, "onnx_shaped_runs_from_threads", onnx_shaped_runs_from_threads);
    return clf_test_run_suite(s);
}
