/* One executable, many sequence lengths: a pre-norm transformer block
 * (RMS norm, Q/K/V projections, causal attention, output projection and
 * residual, RMS norm, SiLU-gated MLP and residual; f32, random weights)
 * whose sequence length S is symbolic (clf_dim). Reports clf_compile's
 * time (the stand-in, the probes and the generic builds), then per length:
 *   first   the first run at a length never run before: plan, codegen and
 *           instantiate a specialisation (no OpenCL build where its kernels
 *           take a form seen before), then run
 *   seen    the median of later runs at that length
 * and the programs built during the first run (the context's counter).
 * Runs go through clf_run_host_shaped: host copies in and out included.
 * Usage: bench_dynamic [width] [--markdown]   (CLFUSE_DEVICE selects the device) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "runtime/runtime_internal.h"

#define HEAD_DIM 64
#define RUNS 7

static float *random_floats(size_t n, float scale, unsigned *seed)
{
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; p && i < n; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        p[i] = scale * ((float)(*seed >> 8) / (float)(1u << 24) * 2.0f - 1.0f);
    }
    return p;
}

static clf_tensor weight(clf_graph *g, int64_t rows, int64_t cols, unsigned *seed, float **keep, int *nkeep)
{
    float *w = random_floats((size_t)(rows * cols), 1.0f / (float)rows, seed);
    keep[(*nkeep)++] = w;
    return clf_constant(g, CLF_F32, 2, (int64_t[]){rows, cols}, w);
}

/* The block at width d (heads of HEAD_DIM), MLP 3d, S in 1..4096. */
static clf_graph *block(int64_t d, float **keep, int *nkeep)
{
    unsigned seed = 7;
    clf_graph *g = clf_graph_create();
    const int64_t s = clf_dim(g, "S", 1, 4096), hd = HEAD_DIM, nheads = d / HEAD_DIM;
    clf_tensor x = clf_input(g, "x", CLF_F32, 3, (int64_t[]){1, s, d});
    clf_tensor n = clf_rms_norm(g, x, -1, 1e-5, CLF_TENSOR_INVALID);
    clf_tensor heads[3];
    for (int k = 0; k < 3; k++) {
        clf_tensor p = clf_matmul(g, n, weight(g, d, d, &seed, keep, nkeep));
        heads[k] = clf_transpose(g, clf_reshape(g, p, 4, (int64_t[]){1, s, nheads, hd}), 4, (int[]){0, 2, 1, 3});
    }
    clf_tensor a = clf_attention(g, heads[0], heads[1], heads[2], CLF_TENSOR_INVALID, 0, true);
    a = clf_reshape(g, clf_transpose(g, a, 4, (int[]){0, 2, 1, 3}), 3, (int64_t[]){1, s, d});
    clf_tensor h = clf_add(g, x, clf_matmul(g, a, weight(g, d, d, &seed, keep, nkeep)));
    clf_tensor m = clf_rms_norm(g, h, -1, 1e-5, CLF_TENSOR_INVALID);
    clf_tensor up = clf_matmul(g, m, weight(g, d, 3 * d, &seed, keep, nkeep));
    clf_tensor gate = clf_matmul(g, m, weight(g, d, 3 * d, &seed, keep, nkeep));
    clf_tensor act = clf_mul(g, clf_mul(g, gate, clf_sigmoid(g, gate)), up);
    clf_graph_output(g, "y", clf_add(g, h, clf_matmul(g, act, weight(g, 3 * d, d, &seed, keep, nkeep))));
    return g;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int64_t d = argc > 1 && argv[1][0] != '-' ? atoll(argv[1]) : 256;
    if (d < HEAD_DIM || d % HEAD_DIM) {
        fprintf(stderr, "bench_dynamic: the width must be a multiple of %d\n", HEAD_DIM);
        return 2;
    }
    bool markdown = argc > 1 && !strcmp(argv[argc - 1], "--markdown");
    float *keep[8];
    int nkeep = 0;
    clf_graph *g = block(d, keep, &nkeep);
    const char *msg;
    if (clf_graph_status(g, &msg) != CLF_OK) {
        fprintf(stderr, "bench_dynamic: %s\n", msg);
        return 1;
    }
    clf_context *ctx = NULL;
    char cmsg[512] = "";
    if (clf_context_create(clf_context_params(.disable_disk_cache = true, .message = cmsg, .message_cap = sizeof cmsg),
                           &ctx) != CLF_OK) {
        fprintf(stderr, "bench_dynamic: %s\n", cmsg);
        return 1;
    }
    clf_executable *exe = NULL;
    double t0 = hm_now_ms();
    clf_status st = clf_compile(ctx, g, NULL, &exe);
    double compile_ms = hm_now_ms() - t0;
    if (st != CLF_OK) {
        fprintf(stderr, "bench_dynamic: clf_compile: %s\n", clf_context_last_error(ctx));
        return 1;
    }
    const unsigned long long builds_compile = ctx->counts.source_builds;
    printf(markdown ? "Block width %lld, %lld heads of %d, MLP %lld, f32; clf_compile %.0f ms (%llu programs built)\n\n"
                    : "width %lld, %lld heads of %d, MLP %lld, f32: clf_compile %.0f ms, %llu programs built\n",
           (long long)d, (long long)(d / HEAD_DIM), HEAD_DIM, (long long)(3 * d), compile_ms, builds_compile);
    if (markdown)
        printf("| S | first run (ms) | seen (ms, median of %d) | first / seen | programs built |\n"
               "|---|---|---|---|---|\n",
               RUNS);
    else
        printf("%6s %12s %12s %8s %7s\n", "S", "first ms", "seen ms", "ratio", "builds");
    static const int64_t lengths[] = {1, 7, 9, 33, 100, 257, 512, 1024, 1000, 2047};
    unsigned seed = 11;
    int failed = 0;
    for (size_t i = 0; i < sizeof lengths / sizeof *lengths; i++) {
        const int64_t s = lengths[i];
        float *x = random_floats((size_t)(s * d), 1.0f, &seed), *y = malloc((size_t)(s * d) * sizeof *y);
        const int64_t xs[3] = {1, s, d};
        const int64_t *shapes[1] = {xs};
        clf_host_binding in[1] = {{"x", x}}, out[1] = {{"y", y}};
        unsigned long long before = ctx->counts.source_builds;
        t0 = hm_now_ms();
        st = clf_run_host_shaped(exe, 1, in, shapes, 1, out);
        double first = hm_now_ms() - t0;
        unsigned long long built = ctx->counts.source_builds - before;
        double seen[RUNS];
        for (int r = 0; r < RUNS && st == CLF_OK; r++) {
            t0 = hm_now_ms();
            st = clf_run_host_shaped(exe, 1, in, shapes, 1, out);
            seen[r] = hm_now_ms() - t0;
        }
        if (st != CLF_OK) {
            fprintf(stderr, "bench_dynamic: S=%lld: %s\n", (long long)s, clf_context_last_error(ctx));
            failed = 1;
            free(x);
            free(y);
            break;
        }
        qsort(seen, RUNS, sizeof *seen, cmp_double);
        printf(markdown ? "| %lld | %.2f | %.2f | %.2f | %llu |\n" : "%6lld %12.2f %12.2f %8.2f %7llu\n", (long long)s,
               first, seen[RUNS / 2], first / seen[RUNS / 2], built);
        free(x);
        free(y);
    }
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
    clf_graph_destroy(&g);
    for (int k = 0; k < nkeep; k++)
        free(keep[k]);
    return failed;
}
