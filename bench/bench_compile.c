/* clf_compile time of the seed example, relu(a*b + c) over 2^20 floats:
 *   cold      empty libclfuse and PoCL caches: plan, codegen, build from source
 *   warm      a new context (empty memory cache), entry on disk: plan, codegen,
 *             load the binary (the median of RUNS contexts)
 *   no-disk   a new context with disable_disk_cache, the driver's own cache
 *             warm: what the disk cache saves over the driver's cache alone
 *   memory    a second compile on the same context (memory cache hit)
 * Both caches point at fresh directories made here (the environment's are
 * ignored), so the first compile is cold. Context creation is not timed.
 * Usage: bench_compile [runs]   (CLFUSE_DEVICE selects the device) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

static clf_graph *seed_graph(void)
{
    clf_graph *g = clf_graph_create();
    const int64_t n = 1 << 20;
    clf_tensor a = clf_input(g, "a", CLF_F32, 1, &n), b = clf_input(g, "b", CLF_F32, 1, &n),
               c = clf_input(g, "c", CLF_F32, 1, &n);
    clf_graph_output(g, "y", clf_relu(g, clf_add(g, clf_mul(g, a, b), c)));
    return g;
}

/* Times one clf_compile on a new context (and, with again, a second one on
 * the same context into *again). Returns ms, or a negative value on error. */
static double time_compile(const clf_graph *g, bool disable_disk, double *again)
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
    double t0 = bench_now_ms();
    clf_status st = clf_compile(ctx, g, NULL, &exe);
    double t = bench_now_ms() - t0;
    if (st == CLF_OK && again) {
        clf_executable *exe2 = NULL;
        t0 = bench_now_ms();
        st = clf_compile(ctx, g, NULL, &exe2);
        *again = bench_now_ms() - t0;
        clf_executable_destroy(&exe2);
    }
    if (st != CLF_OK)
        fprintf(stderr, "bench_compile: %s: %s\n", clf_status_name(st), clf_context_last_error(ctx));
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
    return st == CLF_OK ? t : -1;
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 20;
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

    clf_graph *g = seed_graph();
    double *warm = calloc((size_t)runs, sizeof *warm), *nodisk = calloc((size_t)runs, sizeof *nodisk);
    double *mem = calloc((size_t)runs, sizeof *mem);
    if (!warm || !nodisk || !mem)
        return 1;
    double cold = time_compile(g, false, NULL);
    int rc = cold < 0;
    for (int r = 0; r < runs && !rc; r++) {
        warm[r] = time_compile(g, false, &mem[r]);
        nodisk[r] = time_compile(g, true, NULL);
        rc = warm[r] < 0 || nodisk[r] < 0;
    }
    if (!rc) {
        clf_device_desc d;
        clf_context *ctx = NULL;
        if (clf_context_create(NULL, &ctx) == CLF_OK && clf_context_device(ctx, &d) == CLF_OK)
            printf("device: %s (%s)\n", d.device_name, d.platform_name);
        clf_context_destroy(&ctx);
        printf("compile relu(a*b+c), 2^20 f32, median of %d:\n", runs);
        printf("  cold     %9.3f ms  (empty caches: build from source)\n", cold);
        printf("  warm     %9.3f ms  (new context, binary from the disk cache)\n", bench_median(warm, runs));
        printf("  no-disk  %9.3f ms  (new context, disk cache off, driver cache warm)\n", bench_median(nodisk, runs));
        printf("  memory   %9.3f ms  (same context, memory cache)\n", bench_median(mem, runs));
    }
    free(warm);
    free(nodisk);
    free(mem);
    clf_graph_destroy(&g);
    return rc;
}
