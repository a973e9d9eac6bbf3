/* The seed example: relu(a*b + c) on the default OpenCL device, fused and
 * unfused. Prints the generated kernel, checks both against the reference
 * interpreter, and compares kernels, memory operations and time.
 *
 *     demo_chain [N]          (N elements, default 2^22)
 *     CLFUSE_DEVICE=cpu demo_chain
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <clfuse/clfuse.h>

#define RUNS 21

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Runs exe RUNS times after a warm-up; returns the median device time (ms),
 * or host time where timestamps_real is false. */
/* False where the device's profiling timestamps are not real
 * (clf_context_timestamps_real): then runs are timed by the host. */
static bool timestamps_real = true;

static double time_runs(clf_executable *exe, clf_host_binding *in, clf_host_binding *out)
{
    uint64_t t[RUNS];
    clf_run_host(exe, 3, in, 1, out);
    for (int r = 0; r < RUNS; r++) {
        clf_run_profile p;
        struct timespec h0, h1;
        clock_gettime(CLOCK_MONOTONIC, &h0);
        if (clf_run_host(exe, 3, in, 1, out) != CLF_OK)
            return -1;
        clock_gettime(CLOCK_MONOTONIC, &h1);
        if (!timestamps_real) /* the host's clock, copies included */
            t[r] = (uint64_t)((h1.tv_sec - h0.tv_sec) * 1000000000LL + (h1.tv_nsec - h0.tv_nsec));
        else if (clf_executable_last_profile(exe, &p, NULL, 0) == CLF_OK)
            t[r] = p.span_ns;
        else
            return -1;
    }
    qsort(t, RUNS, sizeof t[0], cmp_u64);
    return (double)t[RUNS / 2] * 1e-6;
}

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? strtoll(argv[1], NULL, 10) : (int64_t)1 << 22;
    if (n <= 0) {
        fprintf(stderr, "demo_chain: N must be a positive element count\n");
        return 2;
    }
    int rc = 1;
    clf_graph *g = clf_graph_create();
    clf_context *ctx = NULL;
    clf_executable *fused = NULL, *unfused = NULL;
    float *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    float *c = malloc((size_t)n * sizeof *c), *y = malloc((size_t)n * sizeof *y);
    float *ref = malloc((size_t)n * sizeof *ref);
    if (!g || !a || !b || !c || !y || !ref) {
        fprintf(stderr, "demo_chain: out of memory\n");
        goto done;
    }

    /* y = relu(a*b + c) */
    clf_tensor ta = clf_input(g, "a", CLF_F32, 1, &n);
    clf_tensor tb = clf_input(g, "b", CLF_F32, 1, &n);
    clf_tensor tc = clf_input(g, "c", CLF_F32, 1, &n);
    clf_graph_output(g, "y", clf_relu(g, clf_add(g, clf_mul(g, ta, tb), tc)));
    const char *msg;
    if (clf_graph_status(g, &msg) != CLF_OK) {
        fprintf(stderr, "demo_chain: graph: %s\n", msg);
        goto done;
    }

    char why[512] = "";
    clf_status st = clf_context_create(clf_context_params(.profiling = true, .message = why,
                                                          .message_cap = sizeof why), &ctx);
    if (st != CLF_OK) {
        fprintf(stderr, "demo_chain: no OpenCL device: %s: %s\n", clf_status_name(st), why);
        goto done;
    }
    clf_device_desc dev;
    clf_context_device(ctx, &dev);
    printf("device: %s (%s)\n\n", dev.device_name, dev.platform_name);
    timestamps_real = clf_context_timestamps_real(ctx);

    if ((st = clf_compile(ctx, g, NULL, &fused)) != CLF_OK ||
        (st = clf_compile(ctx, g, clf_compile_params(.disable_fusion = true), &unfused)) != CLF_OK) {
        fprintf(stderr, "demo_chain: compile: %s: %s\n", clf_status_name(st), clf_context_last_error(ctx));
        goto done;
    }
    printf("generated kernel %s:\n%s\n", clf_executable_kernel_name(fused, 0),
           clf_executable_kernel_source(fused, 0));

    srand(1);
    for (int64_t i = 0; i < n; i++) {
        a[i] = (float)rand() / RAND_MAX * 2 - 1;
        b[i] = (float)rand() / RAND_MAX * 2 - 1;
        c[i] = (float)rand() / RAND_MAX * 2 - 1;
    }
    clf_host_binding in[3] = {{"a", a}, {"b", b}, {"c", c}}, out[1] = {{"y", y}}, rout[1] = {{"y", ref}};
    char rmsg[256];
    if (clf_reference_run(g, 3, in, 1, rout, rmsg, sizeof rmsg) != CLF_OK) {
        fprintf(stderr, "demo_chain: reference: %s\n", rmsg);
        goto done;
    }
    clf_executable *exes[2] = {unfused, fused};
    const char *label[2] = {"unfused", "fused"};
    double ms[2];
    for (int v = 0; v < 2; v++) {
        memset(y, 0xff, (size_t)n * sizeof *y); /* poison: NaN everywhere */
        if ((st = clf_run_host(exes[v], 3, in, 1, out)) != CLF_OK) {
            fprintf(stderr, "demo_chain: run: %s: %s\n", clf_status_name(st), clf_context_last_error(ctx));
            goto done;
        }
        double worst = 0;
        for (int64_t i = 0; i < n; i++) {
            double e = fabs((double)y[i] - ref[i]);
            if (!(e <= worst))
                worst = e; /* NaN poison left behind counts as an error too */
        }
        if (!(worst <= 1e-6)) {
            fprintf(stderr, "demo_chain: %s result differs from the reference by %g\n", label[v], worst);
            goto done;
        }
        ms[v] = time_runs(exes[v], in, out);
    }
    printf("result matches the reference interpreter (%lld elements)\n\n", (long long)n);
    clf_plan_stats s;
    clf_executable_stats(fused, &s);
    printf("%-8s %8s %14s %10s %10s\n", "", "kernels", "memory ops", "MB moved", "time ms");
    printf("%-8s %8llu %6llu (%llu r, %llu w) %10.1f %10.3f\n", "unfused", (unsigned long long)s.unfused_kernels,
           (unsigned long long)(s.unfused_tensor_reads + s.unfused_tensor_writes),
           (unsigned long long)s.unfused_tensor_reads, (unsigned long long)s.unfused_tensor_writes,
           (double)(s.unfused_bytes_read + s.unfused_bytes_written) / 1e6, ms[0]);
    printf("%-8s %8llu %6llu (%llu r, %llu w) %10.1f %10.3f\n", "fused", (unsigned long long)s.kernels,
           (unsigned long long)(s.tensor_reads + s.tensor_writes), (unsigned long long)s.tensor_reads,
           (unsigned long long)s.tensor_writes, (double)(s.bytes_read + s.bytes_written) / 1e6, ms[1]);
    printf("\nfusion: %.2fx faster\n", ms[0] / ms[1]);
    if (!timestamps_real)
        printf("(times from the host's clock, copies included: this device's profiling timestamps are not real)\n");
    rc = 0;
done:
    clf_executable_destroy(&fused);
    clf_executable_destroy(&unfused);
    clf_context_destroy(&ctx);
    clf_graph_destroy(&g);
    free(a);
    free(b);
    free(c);
    free(y);
    free(ref);
    return rc;
}
