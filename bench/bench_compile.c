/* clf_compile time, cold and warm, of the seed example, relu(a*b + c) over
 * 2^20 floats, and of every graph of the BENCH.md suite (bench_graphs.h):
 *   cold      empty libclfuse and PoCL caches: plan, codegen, build from source
 *   warm      a new context (empty memory cache), plan cache and program
 *             binaries on disk: no planning, no codegen, no build (the median
 *             of RUNS contexts)
 * and, for the seed example only:
 *   no-disk   a new context with disable_disk_cache, the driver's own cache
 *             warm: what the disk caches save over the driver's cache alone
 *   memory    a second compile on the same context (memory cache hit)
 * Both caches point at fresh directories made here (the environment's are
 * ignored), and each graph is compiled for the first time in this process,
 * so its first compile is cold. Context creation is not timed.
 * Usage: bench_compile [runs] [--markdown]   (CLFUSE_DEVICE selects the device) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "bench_graphs.h"

/* Times one clf_compile on a new context (and, with again, a second one on
 * the same context into *again). Returns ms, or a negative value on error. */
static double time_compile(const clf_graph *g, bool disable_disk, double *again, uint64_t *kernels)
{
    clf_context *ctx = NULL;
    char msg[512] = "";
    if (clf_context_create(clf_context_params(.disable_disk_cache = disable_disk, .message = msg,
                                              .message_cap = sizeof msg),
                           &ctx) != CLF_OK) {
        fprintf(stderr, "bench_compile: %s\n", msg);
        return -1;
    }
    clf_executable *exe = NULL;
    double t0 = hm_now_ms();
    clf_status st = clf_compile(ctx, g, NULL, &exe);
    double t = hm_now_ms() - t0;
    if (st == CLF_OK && kernels) {
        clf_plan_stats s;
        clf_executable_stats(exe, &s);
        *kernels = s.kernels;
    }
    if (st == CLF_OK && again) {
        clf_executable *exe2 = NULL;
        t0 = hm_now_ms();
        st = clf_compile(ctx, g, NULL, &exe2);
        *again = hm_now_ms() - t0;
        clf_executable_destroy(&exe2);
    }
    if (st != CLF_OK)
        fprintf(stderr, "bench_compile: %s: %s\n", clf_status_name(st), clf_context_last_error(ctx));
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
    return st == CLF_OK ? t : -1;
}

/* Cold once, then warm `runs` times (median and minimum: the machine may
 * be shared); 0 on success. */
static int cold_warm(const clf_graph *g, int runs, double *cold, double *warm, double *warm_min, uint64_t *kernels)
{
    double *w = calloc((size_t)runs, sizeof *w);
    if (!w)
        return 1;
    *cold = time_compile(g, false, NULL, kernels);
    int rc = *cold < 0;
    for (int r = 0; r < runs && !rc; r++)
        rc = (w[r] = time_compile(g, false, NULL, NULL)) < 0;
    *warm_min = w[0];
    for (int r = 1; r < runs; r++)
        if (w[r] < *warm_min)
            *warm_min = w[r];
    *warm = rc ? -1 : hm_median(w, runs);
    free(w);
    return rc;
}

int main(int argc, char **argv)
{
    int runs = 20;
    bool markdown = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--markdown") == 0)
            markdown = true;
        else
            runs = atoi(argv[i]);
    }
    if (runs < 1)
        runs = 1;
    char tmpl[] = "/tmp/clfuse-bench-compile-XXXXXX", path[600];
    if (!mkdtemp(tmpl)) {
        perror("mkdtemp");
        return 1;
    }
    /* Before any OpenCL call: PoCL reads POCL_CACHE_DIR once. */
    snprintf(path, sizeof path, "%s/pocl", tmpl);
    setenv("POCL_CACHE_DIR", path, 1);
    snprintf(path, sizeof path, "%s/clfuse", tmpl);
    setenv("CLFUSE_CACHE_DIR", path, 1);
    unsetenv("CLFUSE_CACHE");

    clf_device_desc d;
    clf_context *ctx = NULL;
    if (clf_context_create(NULL, &ctx) != CLF_OK || clf_context_device(ctx, &d) != CLF_OK) {
        fprintf(stderr, "bench_compile: no device\n");
        return 1;
    }
    clf_context_destroy(&ctx);
    printf("device: %s (%s)\n", d.device_name, d.platform_name);

    /* The seed example. */
    clf_graph *g = bench_case_graph(&(bench_case){"chain", 1, 1 << 20, 3, 1, CLF_F32});
    double *nodisk = calloc((size_t)runs, sizeof *nodisk), *mem = calloc((size_t)runs, sizeof *mem);
    if (!g || !nodisk || !mem)
        return 1;
    double cold, warm, warm_min;
    int rc = cold_warm(g, runs, &cold, &warm, &warm_min, NULL);
    for (int r = 0; r < runs && !rc; r++) {
        rc = time_compile(g, false, &mem[r], NULL) < 0;
        rc = rc || (nodisk[r] = time_compile(g, true, NULL, NULL)) < 0;
    }
    if (rc)
        return 1;
    printf("compile relu(a*b+c), 2^20 f32, median of %d:\n", runs);
    printf("  cold     %9.3f ms  (empty caches: plan, codegen, build from source)\n", cold);
    printf("  warm     %9.3f ms  (new context, plan and binary from the disk cache; min %.3f)\n", warm, warm_min);
    printf("  no-disk  %9.3f ms  (new context, disk cache off, driver cache warm)\n", hm_median(nodisk, runs));
    printf("  memory   %9.3f ms  (same context, memory cache)\n", hm_median(mem, runs));
    free(nodisk);
    free(mem);
    clf_graph_destroy(&g);

    /* The suite. */
    bench_case cases[32];
    size_t n = bench_suite_cases(d.is_gpu, CLF_F32, cases, sizeof cases / sizeof cases[0]);
    double sum_cold = 0, sum_warm = 0, sum_min = 0;
    printf("\nBENCH.md suite (%s sizes), warm = median of %d:\n", d.is_gpu ? "GPU" : "CPU", runs);
    if (markdown)
        printf("| case | shape | kernels | cold ms | warm ms | warm min ms |\n|---|---|---|---|---|---|\n");
    else
        printf("  %-14s %-14s %7s %10s %9s %9s\n", "case", "shape", "kernels", "cold ms", "warm ms", "warm min");
    for (size_t i = 0; i < n && !rc; i++) {
        g = bench_case_graph(&cases[i]);
        uint64_t kernels = 0;
        rc = !g || cold_warm(g, runs, &cold, &warm, &warm_min, &kernels);
        clf_graph_destroy(&g);
        if (rc)
            break;
        char shape[40];
        snprintf(shape, sizeof shape, "%lldx%lld", (long long)cases[i].rows, (long long)cases[i].cols);
        if (markdown)
            printf("| %s | %s | %llu | %.1f | %.3f | %.3f |\n", cases[i].name, shape, (unsigned long long)kernels, cold,
                   warm, warm_min);
        else
            printf("  %-14s %-14s %7llu %10.1f %9.3f %9.3f\n", cases[i].name, shape, (unsigned long long)kernels, cold,
                   warm, warm_min);
        sum_cold += cold;
        sum_warm += warm;
        sum_min += warm_min;
    }
    if (!rc) {
        if (markdown)
            printf("| whole suite | | | %.1f | %.3f | %.3f |\n", sum_cold, sum_warm, sum_min);
        else
            printf("  %-14s %-14s %7s %10.1f %9.3f %9.3f\n", "whole suite", "", "", sum_cold, sum_warm, sum_min);
    }
    return rc;
}
