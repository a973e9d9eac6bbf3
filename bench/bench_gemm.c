/* Benchmarks the GEMM cases of shared BENCH.md — gemm_epilogue,
 * relu(x @ w + bias), and mlp, x + (gelu(x @ w1 + b1) @ w2 + b2) — fused
 * against unfused and, where CLBlast was found at build time, against
 * CLBlast's SGEMM alone and CLBlast's SGEMM followed by libclfuse's
 * epilogue kernel, on the default device (CLFUSE_DEVICE picks another).
 *
 *     bench_gemm [--runs R] [--markdown] [--dtype f32|f16|bf16] [--size N|M,N,K] [--only NAME]
 *                [--style cpu|gpu] [--autotune]
 *
 * Sizes are BENCH.md's: the GPU sizes on a GPU, the CPU sizes otherwise;
 * --size N makes gemm_epilogue N x N x N, --size M,N,K M x K by K x N (one
 * row: a decode step's projection).
 * GFLOP/s count 2*M*N*K per product; the mlp counts both products. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_CLBLAST
#include <clblast_c.h>
#endif

#include "bench_common.h"

typedef struct bench_case {
    const char *name;
    int64_t m, n, k; /* gemm_epilogue: M x K by K x N; mlp: M tokens, d = n, ff = k */
    clf_dtype dt;    /* of every tensor */
} bench_case;

static clf_graph *case_graph(const bench_case *c)
{
    clf_graph *g = clf_graph_create();
    if (strcmp(c->name, "gemm_epilogue") == 0) {
        int64_t sx[2] = {c->m, c->k}, sw[2] = {c->k, c->n}, sb[1] = {c->n};
        clf_tensor x = clf_input(g, "x", c->dt, 2, sx), w = clf_input(g, "w", c->dt, 2, sw);
        clf_tensor b = clf_input(g, "bias", c->dt, 1, sb);
        clf_graph_output(g, "y", clf_relu(g, clf_add(g, clf_matmul(g, x, w), b)));
    } else { /* mlp */
        int64_t sx[2] = {c->m, c->n}, s1[2] = {c->n, c->k}, s2[2] = {c->k, c->n}, b1s[1] = {c->k}, b2s[1] = {c->n};
        clf_tensor x = clf_input(g, "x", c->dt, 2, sx);
        clf_tensor w1 = clf_input(g, "w1", c->dt, 2, s1), b1 = clf_input(g, "b1", c->dt, 1, b1s);
        clf_tensor w2 = clf_input(g, "w2", c->dt, 2, s2), b2 = clf_input(g, "b2", c->dt, 1, b2s);
        clf_tensor h = clf_gelu(g, clf_add(g, clf_matmul(g, x, w1), b1));
        clf_graph_output(g, "y", clf_add(g, x, clf_add(g, clf_matmul(g, h, w2), b2)));
    }
    return g;
}

static double case_flops(const bench_case *c)
{
    if (strcmp(c->name, "gemm_epilogue") == 0)
        return 2.0 * (double)c->m * (double)c->n * (double)c->k;
    return 4.0 * (double)c->m * (double)c->n * (double)c->k;
}

/* A host input's element reader: its data and dtype. */
typedef struct host_tensor {
    const void *p;
    clf_dtype dt;
} host_tensor;

static host_tensor host_input(const bench_io *io, const char *name, clf_dtype dt)
{
    for (size_t i = 0; i < io->n_in; i++)
        if (strcmp(io->in[i].name, name) == 0)
            return (host_tensor){io->host_in[i], dt};
    return (host_tensor){NULL, dt};
}

/* Element i of t as a double. */
static double at(host_tensor t, int64_t i)
{
    double v = 0;
    hm_float_at(t.dt, t.p, (size_t)i, &v);
    return v;
}

/* v rounded to nearest even in dtype dt, as a kernel that stores it does
 * (range limits aside). */
static double round_to(clf_dtype dt, double v)
{
    if (dt == CLF_F32)
        return (float)v;
    int bits = dt == CLF_F16 ? 11 : 8, e;
    if (dt == CLF_F16 && fabs(v) < ldexp(1.0, -14))
        return ldexp(nearbyint(ldexp(v, 24)), -24);
    double m = frexp(v, &e);
    return ldexp(nearbyint(ldexp(m, bits)), e - bits);
}

/* The case's output at (i, j) in double from the host inputs; mlp's hidden
 * activation rounded to the dtype, as the graph stores it. */
static double case_element(const bench_case *c, const bench_io *io, int64_t i, int64_t j)
{
    if (strcmp(c->name, "gemm_epilogue") == 0) {
        host_tensor x = host_input(io, "x", c->dt), w = host_input(io, "w", c->dt), b = host_input(io, "bias", c->dt);
        double acc = at(b, j);
        for (int64_t k = 0; k < c->k; k++)
            acc += at(x, i * c->k + k) * at(w, k * c->n + j);
        return acc < 0 ? 0 : acc;
    }
    host_tensor x = host_input(io, "x", c->dt), w1 = host_input(io, "w1", c->dt), b1 = host_input(io, "b1", c->dt);
    host_tensor w2 = host_input(io, "w2", c->dt), b2 = host_input(io, "b2", c->dt);
    double acc = at(b2, j);
    for (int64_t f = 0; f < c->k; f++) {
        double h = at(b1, f);
        for (int64_t d = 0; d < c->n; d++)
            h += at(x, i * c->n + d) * at(w1, d * c->k + f);
        h = round_to(c->dt, 0.5 * h * (1.0 + erf(h / sqrt(2.0))));
        acc += h * at(w2, f * c->n + j);
    }
    return at(x, i * c->n + j) + acc;
}

/* The largest error over 64 sampled elements, scaled by 1 + the largest
 * |want| among them (the output's scale: an element near 0 after
 * cancellation carries the absolute error of its terms; the reference
 * interpreter would take minutes on these sizes). */
static double sampled_check(clf_context *ctx, const bench_case *c, const bench_io *io)
{
    int64_t rows = c->m, cols = c->n;
    size_t bytes = (size_t)(rows * cols) * clf_dtype_size(c->dt);
    void *y = malloc(bytes);
    if (!y)
        return INFINITY;
    clEnqueueReadBuffer(clf_context_queue(ctx), io->out[0].buffer, CL_TRUE, 0, bytes, y, 0, NULL, NULL);
    double worst = 0, scale = 0;
    uint64_t seed = 88172645463325252ull;
    for (int s = 0; s < 64; s++) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        int64_t i = (int64_t)(seed % (uint64_t)rows), j = (int64_t)((seed >> 32) % (uint64_t)cols);
        if (s == 0)
            i = rows - 1, j = cols - 1;
        double want = case_element(c, io, i, j), got = at((host_tensor){y, c->dt}, i * cols + j);
        double e = fabs(got - want);
        if (!(e <= worst))
            worst = e;
        if (fabs(want) > scale)
            scale = fabs(want);
    }
    free(y);
    return worst / (1.0 + scale);
}

#ifdef HAVE_CLBLAST
/* CLBlast's SGEMM of the case's first product (x @ w), alone and followed
 * by libclfuse's epilogue kernel relu(p + bias) in its own executable. */
static int time_clblast(clf_context *ctx, const bench_case *c, int runs, double *gemm_ms, double *with_epi_ms)
{
    cl_context cl = clf_context_cl(ctx);
    cl_command_queue q = clf_context_queue(ctx);
    size_t m = (size_t)c->m, n = (size_t)c->n, k = (size_t)c->k;
    cl_int e1, e2, e3;
    cl_mem a = clCreateBuffer(cl, CL_MEM_READ_WRITE, m * k * 4, NULL, &e1);
    cl_mem b = clCreateBuffer(cl, CL_MEM_READ_WRITE, k * n * 4, NULL, &e2);
    cl_mem p = clCreateBuffer(cl, CL_MEM_READ_WRITE, m * n * 4, NULL, &e3);
    int rc = 1;
    double *t = calloc((size_t)runs, sizeof *t), *t2 = calloc((size_t)runs, sizeof *t2);
    clf_graph *g = clf_graph_create();
    clf_executable *epi = NULL;
    bench_io io = {0};
    bool have_io = false;
    if (e1 || e2 || e3 || !t || !t2)
        goto done;
    float one = 1.0f;
    clEnqueueFillBuffer(q, a, &one, 4, 0, m * k * 4, 0, NULL, NULL);
    clEnqueueFillBuffer(q, b, &one, 4, 0, k * n * 4, 0, NULL, NULL);
    int64_t sp[2] = {c->m, c->n}, sb[1] = {c->n};
    clf_tensor pin = clf_input(g, "p", CLF_F32, 2, sp), bias = clf_input(g, "bias", CLF_F32, 1, sb);
    clf_graph_output(g, "y", clf_relu(g, clf_add(g, pin, bias)));
    if (clf_compile(ctx, g, NULL, &epi) != CLF_OK || bench_io_create(ctx, epi, -1.0f, 1.0f, &io) != 0)
        goto done;
    have_io = true;
    for (int r = -2; r < runs; r++) {
        /* CLBlast may run helper kernels (padding, transposes) before the
         * one whose event it returns: time from a marker before the call
         * to one after it. */
        cl_event before = NULL, ev = NULL, after = NULL;
        clEnqueueMarkerWithWaitList(q, 0, NULL, &before);
        CLBlastStatusCode s = CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, m, n, k,
                                           1.0f, a, 0, k, b, 0, n, 0.0f, p, 0, n, &q, &ev);
        if (s != CLBlastSuccess) {
            fprintf(stderr, "CLBlastSgemm: status %d\n", (int)s);
            clReleaseEvent(before);
            goto done;
        }
        clEnqueueMarkerWithWaitList(q, 0, NULL, &after);
        clWaitForEvents(1, &after);
        cl_ulong st = 0, en = 0, est = 0, een = 0;
        clGetEventProfilingInfo(before, CL_PROFILING_COMMAND_END, sizeof st, &st, NULL);
        clGetEventProfilingInfo(after, CL_PROFILING_COMMAND_END, sizeof en, &en, NULL);
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof est, &est, NULL);
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof een, &een, NULL);
        clReleaseEvent(before);
        clReleaseEvent(after);
        clReleaseEvent(ev);
        bench_timing et;
        if (bench_time(epi, &io, 0, 1, &et) != 0)
            goto done;
        if (r >= 0) {
            t[r] = (double)(en - st) * 1e-6;
            if (getenv("BENCH_GEMM_DEBUG"))
                fprintf(stderr, "CLBlast: markers %.3f ms, its event %.3f ms\n", t[r], (double)(een - est) * 1e-6);
            t2[r] = t[r] + et.device_ms;
        }
    }
    *gemm_ms = hm_median(t, runs);
    *with_epi_ms = hm_median(t2, runs);
    rc = 0;
done:
    if (have_io)
        bench_io_destroy(&io);
    clf_executable_destroy(&epi);
    clf_graph_destroy(&g);
    free(t);
    free(t2);
    if (a)
        clReleaseMemObject(a);
    if (b)
        clReleaseMemObject(b);
    if (p)
        clReleaseMemObject(p);
    return rc;
}
#endif

int main(int argc, char **argv)
{
    bench_args a = {.runs = 20, .style = CLF_KERNEL_STYLE_AUTO};
    if (!bench_parse_args(argc, argv, "bench_gemm", BENCH_OPT_ONLY | BENCH_OPT_AUTOTUNE | BENCH_OPT_SIZE, &a))
        return 2;
    const int runs = a.runs;
    const bool markdown = a.markdown, autotune = a.autotune;
    const char *only = a.only;
    const clf_kernel_style style = a.style;
    clf_context *ctx = bench_profiling_context("bench_gemm");
    if (!ctx)
        return 1;
    clf_device_desc dev;
    clf_context_device(ctx, &dev);
    bool gpu = dev.is_gpu;
    int64_t side = a.size > 0 ? a.size : gpu ? 4096 : 1024;
    bench_case cases[] = {
        {"gemm_epilogue", a.mnk[0] ? a.mnk[0] : side, a.mnk[0] ? a.mnk[1] : side, a.mnk[0] ? a.mnk[2] : side,
         a.dtype},
        {"mlp", gpu ? 8192 : 1024, gpu ? 1024 : 512, gpu ? 4096 : 2048, a.dtype},
    };
    printf("device: %s (%s); %s tensors; medians of %d runs; device time from profiling events%s\n", dev.device_name,
           dev.platform_name, clf_dtype_name(a.dtype), runs, autotune ? "; autotuned" : "");
#ifdef HAVE_CLBLAST
    printf("CLBlast: the first product alone, and followed by libclfuse's relu(p + bias) kernel\n\n");
#else
    printf("CLBlast: not found at build time\n\n");
#endif
    if (markdown)
        printf("| case | M,N,K (mlp: M,d,ff) | kernels fused/unfused | fused kernels | fused ms | GFLOP/s | unfused ms | "
               "CLBlast GEMM ms | CLBlast GEMM + epilogue ms | max error |\n|---|---|---|---|---|---|---|---|---|---|\n");
    int rc = 0;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const bench_case *c = &cases[ci];
        if (only && strcmp(only, c->name) != 0)
            continue;
        clf_graph *g = case_graph(c);
        bench_variant var[2] = {{0}};
        double err[2] = {0, 0};
        bool ok = true;
        for (int v = 0; v < 2 && ok; v++) {
            const clf_compile_params *p = clf_compile_params(.disable_fusion = v == 1, .kernel_style = style,
                                                             .autotune = autotune && v == 0);
            ok = bench_variant_time(ctx, g, p, 2, v ? (runs + 1) / 2 : runs, c->name, &var[v]) == 0;
            if (ok)
                err[v] = sampled_check(ctx, c, &var[v].io);
        }
        clf_executable *ex[2] = {var[0].exe, var[1].exe};
        double ms[2] = {var[0].t.device_ms, var[1].t.device_ms};
        double cb = NAN, cbe = NAN;
#ifdef HAVE_CLBLAST
        if (ok && c->dt == CLF_F32 && strcmp(c->name, "gemm_epilogue") == 0 && time_clblast(ctx, c, runs, &cb, &cbe) != 0)
            fprintf(stderr, "%s: CLBlast run failed\n", c->name);
#endif
        if (ok) {
            clf_plan_stats s;
            clf_executable_stats(ex[0], &s);
            char shape[48], names[256] = "";
            snprintf(shape, sizeof shape, "%lld,%lld,%lld", (long long)c->m, (long long)c->n, (long long)c->k);
            for (size_t k = 0; k < clf_executable_kernel_count(ex[0]); k++)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? " " : "",
                         clf_executable_kernel_name(ex[0], k));
            double gfs = case_flops(c) / (ms[0] * 1e6);
            double e = err[0] > err[1] ? err[0] : err[1];
            if (markdown)
                printf("| %s | %s | %llu/%llu | %s | %.3f | %.0f | %.3f | %.3f | %.3f | %.1e |\n", c->name, shape,
                       (unsigned long long)s.kernels, (unsigned long long)s.unfused_kernels, names, ms[0], gfs, ms[1],
                       cb, cbe, e);
            else
                printf("%-14s %-16s kernels %llu/%llu  fused %.3f ms (%.0f GFLOP/s)  unfused %.3f ms  CLBlast %.3f ms, "
                       "+epilogue %.3f ms  error %.1e  [%s]\n",
                       c->name, shape, (unsigned long long)s.kernels, (unsigned long long)s.unfused_kernels, ms[0], gfs,
                       ms[1], cb, cbe, e, names);
            /* TF32 (CLFUSE_TF32=1) keeps f16's 10 mantissa bits. */
            const char *tf32 = getenv("CLFUSE_TF32");
            bool f32_exact = c->dt == CLF_F32 && !(tf32 && strcmp(tf32, "1") == 0);
            if (!(e <= (f32_exact ? 1e-3 : bench_tolerance(c->dt == CLF_F32 ? CLF_F16 : c->dt)))) {
                fprintf(stderr, "%s: result wrong: error %g\n", c->name, e);
                rc = 1;
            }
            fflush(stdout);
        } else {
            rc = 1;
        }
        for (int v = 0; v < 2; v++)
            bench_variant_release(&var[v]);
        clf_graph_destroy(&g);
    }
#ifdef HAVE_CLBLAST
    /* CLBlast caches programs of our context: release them while it lives. */
    CLBlastClearCache();
#endif
    clf_context_destroy(&ctx);
    return rc;
}
