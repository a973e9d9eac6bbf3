/* Benchmarks the reduction cases of shared BENCH.md — rowsum, softmax,
 * softmax_short, layernorm, rmsnorm, horizontal — fused against unfused
 * against the copy roofline, on the default device (CLFUSE_DEVICE picks
 * another).
 *
 *     bench_reductions [--runs R] [--markdown] [--only NAME] [--style cpu|gpu]
 *
 * Sizes are BENCH.md's: the GPU sizes on a GPU, the CPU sizes otherwise;
 * sumall (the sum of every element, a split reduction) uses copy's sizes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "bench_graphs.h"

int main(int argc, char **argv)
{
    bench_args a = {.runs = 30, .style = CLF_KERNEL_STYLE_AUTO};
    if (!bench_parse_args(argc, argv, "bench_reductions", BENCH_OPT_ONLY, &a))
        return 2;
    const int runs = a.runs;
    const bool markdown = a.markdown;
    const char *only = a.only;
    const clf_kernel_style style = a.style;
    clf_context *ctx = bench_profiling_context("bench_reductions");
    if (!ctx)
        return 1;
    clf_device_desc dev;
    clf_context_device(ctx, &dev);
    bool gpu = dev.is_gpu;
    bench_case cases[16];
    size_t ncases = bench_reduction_cases(gpu, a.dtype, cases, sizeof cases / sizeof cases[0]);
    size_t copy_n = gpu ? (size_t)1 << 26 : (size_t)1 << 24;
    double copy_ms = hm_copy_ms(ctx, copy_n * 4, 3, runs);
    double copy_gbs = 2.0 * 4 * (double)copy_n / (copy_ms * 1e6);
    printf("device: %s (%s); %s tensors; medians of %d runs; device time from profiling events\n", dev.device_name,
           dev.platform_name, clf_dtype_name(a.dtype), runs);
    printf("copy roofline: %.3f ms for %zu floats = %.0f GB/s (%s)\n\n", copy_ms, copy_n, copy_gbs,
           hm_copy_method(ctx));
    if (markdown)
        printf("| case | shape | kernels fused/unfused | fused kernel | fused ms | unfused ms | speed-up | fused GB/s | "
               "of copy |\n|---|---|---|---|---|---|---|---|---|\n");
    else
        printf("%-14s %-12s %8s %10s %11s %8s %10s %8s  %s\n", "case", "shape", "kernels", "fused ms", "unfused ms",
               "speedup", "fused GB/s", "of copy", "fused kernel");
    int rc = 0;
    for (size_t ci = 0; ci < ncases; ci++) {
        const bench_case *c = &cases[ci];
        if (only && strcmp(only, c->name) != 0)
            continue;
        clf_graph *g = bench_case_graph(c);
        bench_variant var[2] = {{0}};
        bool ok = true;
        for (int v = 0; v < 2 && ok; v++) {
            const clf_compile_params *p = clf_compile_params(.disable_fusion = v == 1, .kernel_style = style);
            if (bench_variant_time(ctx, g, p, 3, runs, c->name, &var[v]) != 0) {
                ok = false;
                break;
            }
            double err = bench_check(ctx, var[v].exe, g, &var[v].io);
            if (!(err <= bench_tolerance(a.dtype))) {
                fprintf(stderr, "%s: %s result wrong: error %g\n", c->name, v ? "unfused" : "fused", err);
                ok = false;
            }
        }
        clf_executable *ex[2] = {var[0].exe, var[1].exe};
        double ms[2] = {var[0].t.device_ms, var[1].t.device_ms};
        if (ok) {
            clf_plan_stats s;
            clf_executable_stats(ex[0], &s);
            double bytes = (double)clf_dtype_size(a.dtype) * (double)c->rows * (double)c->cols * (c->reads + c->writes);
            double gbs = bytes / (ms[0] * 1e6);
            char shape[32];
            snprintf(shape, sizeof shape, "%lldx%lld", (long long)c->rows, (long long)c->cols);
            if (markdown)
                printf("| %s | %s | %llu/%llu | %s | %.4f | %.4f | %.2fx | %.0f | %.0f%% |\n", c->name, shape,
                       (unsigned long long)s.kernels, (unsigned long long)s.unfused_kernels,
                       clf_executable_kernel_name(ex[0], 0), ms[0], ms[1], ms[1] / ms[0], gbs, 100 * gbs / copy_gbs);
            else
                printf("%-14s %-12s %4llu/%-3llu %10.4f %11.4f %7.2fx %10.0f %7.0f%%  %s\n", c->name, shape,
                       (unsigned long long)s.kernels, (unsigned long long)s.unfused_kernels, ms[0], ms[1],
                       ms[1] / ms[0], gbs, 100 * gbs / copy_gbs, clf_executable_kernel_name(ex[0], 0));
            fflush(stdout);
        } else {
            rc = 1;
        }
        for (int v = 0; v < 2; v++)
            bench_variant_release(&var[v]);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
    return rc;
}
