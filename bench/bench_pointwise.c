/* Benchmarks `chain` (relu(a*b + c)) and `tiny` (20 pointwise ops on 1024
 * elements) from shared BENCH.md: fused against unfused against the copy
 * roofline, on the default device (CLFUSE_DEVICE picks another).
 *
 *     bench_pointwise [--size N] [--runs R] [--markdown]
 *
 * Sizes default to BENCH.md's: 2^26 on a GPU, 2^24 on a CPU device. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "bench_graphs.h"

typedef struct row {
    const char *name;
    double fused_ms, unfused_ms, fused_wall_ms, unfused_wall_ms;
    uint64_t min_bytes, kernels, unfused_kernels;
    double err;
} row;

static int run_case(clf_context *ctx, const char *name, clf_graph *g, uint64_t min_bytes, int runs, double tol,
                    row *r)
{
    bench_variant var[2] = {{0}};
    int rc = -1;
    memset(r, 0, sizeof *r);
    r->name = name;
    r->min_bytes = min_bytes;
    for (int v = 0; v < 2; v++) {
        if (bench_variant_time(ctx, g, clf_compile_params(.disable_fusion = v == 1), 5, runs, name, &var[v]) != 0)
            goto done;
        fprintf(stderr, "%s: %s compile %.1f ms\n", name, v ? "unfused" : "fused", var[v].compile_ms);
        double err = bench_check(ctx, var[v].exe, g, &var[v].io);
        if (!(err <= tol)) {
            fprintf(stderr, "%s: %s result wrong: error %g\n", name, v ? "unfused" : "fused", err);
            goto done;
        }
        if (err > r->err)
            r->err = err;
    }
    r->fused_ms = var[0].t.device_ms;
    r->fused_wall_ms = var[0].t.wall_ms;
    r->unfused_ms = var[1].t.device_ms;
    r->unfused_wall_ms = var[1].t.wall_ms;
    clf_plan_stats s;
    clf_executable_stats(var[0].exe, &s);
    r->kernels = s.kernels;
    r->unfused_kernels = s.unfused_kernels;
    rc = 0;
done:
    for (int v = 0; v < 2; v++)
        bench_variant_release(&var[v]);
    return rc;
}

int main(int argc, char **argv)
{
    bench_args a = {.runs = 50, .style = CLF_KERNEL_STYLE_AUTO};
    if (!bench_parse_args(argc, argv, "bench_pointwise", BENCH_OPT_SIZE, &a))
        return 2;
    int64_t n = a.size;
    const int runs = a.runs;
    const bool markdown = a.markdown;
    clf_context *ctx = bench_profiling_context("bench_pointwise");
    if (!ctx)
        return 1;
    clf_device_desc dev;
    clf_context_device(ctx, &dev);
    if (n <= 0)
        n = dev.is_gpu ? (int64_t)1 << 26 : (int64_t)1 << 24;
    double copy_ms = hm_copy_ms(ctx, (size_t)n * 4, 3, runs);
    double copy_gbs = 2.0 * 4 * (double)n / (copy_ms * 1e6);

    row rows[2];
    uint64_t es = clf_dtype_size(a.dtype);
    double tol = a.dtype == CLF_F32 ? 1e-5 : bench_tolerance(a.dtype);
    clf_graph *g1 = bench_case_graph(&(bench_case){"chain", 1, n, 3, 1, a.dtype}),
              *g2 = bench_case_graph(&(bench_case){"tiny", 1, 1024, 1, 1, a.dtype});
    int rc = run_case(ctx, "chain", g1, 4 * es * (uint64_t)n, runs, tol, &rows[0]) ||
             run_case(ctx, "tiny", g2, 2 * es * 1024, runs * 4, tol, &rows[1]);
    clf_graph_destroy(&g1);
    clf_graph_destroy(&g2);
    if (rc) {
        clf_context_destroy(&ctx);
        return 1;
    }
    const char *sep = markdown ? " | " : "  ";
    printf("device: %s (%s); %s tensors; chain size %lld; medians of %d runs; device time from profiling events\n",
           dev.device_name, dev.platform_name, clf_dtype_name(a.dtype), (long long)n, runs);
    printf("copy roofline: %.3f ms for %lld floats = %.0f GB/s (%s)\n\n", copy_ms, (long long)n, copy_gbs,
           hm_copy_method(ctx));
    if (markdown)
        printf("| case | kernels fused/unfused | fused ms | unfused ms | speed-up | fused GB/s | of copy | "
               "fused wall ms | unfused wall ms |\n|---|---|---|---|---|---|---|---|---|\n");
    else
        printf("%-6s %9s %10s %11s %8s %10s %8s %10s %12s\n", "case", "kernels", "fused ms", "unfused ms",
               "speedup", "fused GB/s", "of copy", "fused wall", "unfused wall");
    for (int i = 0; i < 2; i++) {
        row *r = &rows[i];
        double gbs = (double)r->min_bytes / (r->fused_ms * 1e6);
        if (markdown)
            printf("| %s%s%llu/%llu%s%.4f%s%.4f%s%.2fx%s%.0f%s%.0f%%%s%.4f%s%.4f |\n", r->name, sep,
                   (unsigned long long)r->kernels, (unsigned long long)r->unfused_kernels, sep, r->fused_ms, sep,
                   r->unfused_ms, sep, r->unfused_ms / r->fused_ms, sep, gbs, sep, 100 * gbs / copy_gbs, sep,
                   r->fused_wall_ms, sep, r->unfused_wall_ms);
        else
            printf("%-6s %5llu/%-3llu %10.4f %11.4f %7.2fx %10.0f %7.0f%% %10.4f %12.4f\n", r->name,
                   (unsigned long long)r->kernels, (unsigned long long)r->unfused_kernels, r->fused_ms,
                   r->unfused_ms, r->unfused_ms / r->fused_ms, gbs, 100 * gbs / copy_gbs, r->fused_wall_ms,
                   r->unfused_wall_ms);
    }
    clf_context_destroy(&ctx);
    return 0;
}
