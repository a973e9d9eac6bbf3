/* A Llama-3.2-1B-shaped decoder stack with a KV cache written in place:
 * per layer RMS norm, Q/K/V projections (32 query heads, 8 KV heads of 64),
 * rotary embedding of Q and K, the new K and V written into the layer's
 * caches (clf_cache_write) at [L - S, L), causal GQA attention over the
 * caches' first L positions, output projection and residual, RMS norm,
 * SiLU-gated MLP (8192) and residual; f16 storage (f32 with --dtype f32),
 * random weights. S (new positions) and L (cached positions after the
 * step) are symbolic: one executable serves prefill and decode.
 *
 * Reports, each a median over --runs runs (host wall time of enqueue and
 * finish, and the device span from the first kernel's start to the last
 * one's end, profiled):
 *   prefill S=512            a prompt of 512 positions
 *   decode L=128/1024/4096   one position against L cached ones, at an L
 *                            already run (its specialisation kept)
 *   decode steps             consecutive steps L, L+1, ... each a length
 *                            not run before (host work of a new length
 *                            included: what a generation loop pays)
 * and, per kernel, where each case's device time goes. First the stack
 * checks itself: a prefill of 8 positions and one of 7 then a decode step
 * agree on the last position's output (and, with --small, the reference
 * interpreter agrees with both); --check stops there (the test suite's
 * decoder_self_check).
 * --source DIR writes each case's kernel sources to DIR/<case>.cl.
 * Usage: bench_decoder [--layers N] [--small] [--gpu-form] [--dtype f32|f16] [--runs R] [--check]
 *                      [--source DIR] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_common.h"
#include "runtime/dynamic.h"
#include "runtime/runtime_internal.h"

typedef struct dims {
    int64_t d, ff, heads, kv_heads, hd, cap, max_s;
} dims;

static const dims LLAMA_1B = {2048, 8192, 32, 8, 64, 4096, 512};
static const dims SMALL = {64, 128, 4, 2, 16, 64, 16};

#define MAX_LAYERS 16

#define TABLE_HEAD                                                                                             \
    "\n| case | wall ms / step | device ms / step | device ms / layer | first run ms |\n|---|---|---|---|---|\n"

typedef struct stack {
    dims m;
    int layers;
    clf_dtype dt;
    clf_graph *g;
    void *keep[16 * MAX_LAYERS];
    int nkeep;
    unsigned seed;
} stack;

static float rnd(unsigned *seed)
{
    *seed = *seed * 1664525u + 1013904223u;
    return (float)(*seed >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
}

/* n values uniform in [-scale, scale) in dtype dt (f32 or f16), kept. */
static void *values(stack *s, size_t n, float scale)
{
    size_t es = clf_dtype_size(s->dt);
    char *p = malloc(n * es);
    for (size_t i = 0; p && i < n; i++) {
        float v = scale * rnd(&s->seed);
        if (s->dt == CLF_F16) {
            uint16_t h = clf_f16_from_f32(v);
            memcpy(p + i * 2, &h, 2);
        } else {
            memcpy(p + i * 4, &v, 4);
        }
    }
    s->keep[s->nkeep++] = p;
    return p;
}

static clf_tensor weight(stack *s, int64_t rows, int64_t cols)
{
    return clf_constant(s->g, s->dt, 2, (int64_t[]){rows, cols},
                        values(s, (size_t)(rows * cols), 1.0f / sqrtf((float)rows)));
}

/* RMS norm in f32 of h (the stack's dtype), scaled, back in the dtype. */
static clf_tensor norm(stack *s, clf_tensor h)
{
    clf_graph *g = s->g;
    clf_tensor x = s->dt == CLF_F32 ? h : clf_cast(g, h, CLF_F32);
    float *w = malloc((size_t)s->m.d * sizeof *w);
    for (int64_t i = 0; i < s->m.d; i++)
        w[i] = 1.0f + 0.1f * rnd(&s->seed);
    s->keep[s->nkeep++] = w;
    clf_tensor n = clf_rms_norm(g, x, -1, 1e-5, clf_constant(g, CLF_F32, 1, (int64_t[]){s->m.d}, w));
    return s->dt == CLF_F32 ? n : clf_cast(g, n, s->dt);
}

/* The rotary embedding of t [1, S, H, hd]: t * cos + rotate_half(t) * sin
 * with cos, sin [S, hd] broadcast over heads. */
static clf_tensor rope(stack *s, clf_tensor t, clf_tensor cos, clf_tensor sin, int64_t S, int64_t heads)
{
    clf_graph *g = s->g;
    int64_t half = s->m.hd / 2;
    clf_tensor lo = clf_slice(g, t, 1, (int64_t[]){0}, (int64_t[]){half}, (int[]){3}, NULL);
    clf_tensor hi = clf_slice(g, t, 1, (int64_t[]){half}, (int64_t[]){s->m.hd}, (int[]){3}, NULL);
    clf_tensor rot = clf_concat(g, 2, (clf_tensor[]){clf_neg(g, hi), lo}, 3);
    clf_tensor c = clf_reshape(g, cos, 4, (int64_t[]){1, S, 1, s->m.hd});
    clf_tensor sn = clf_reshape(g, sin, 4, (int64_t[]){1, S, 1, s->m.hd});
    (void)heads;
    return clf_add(g, clf_mul(g, t, c), clf_mul(g, rot, sn));
}

static void build(stack *s)
{
    const dims *m = &s->m;
    clf_graph *g = s->g = clf_graph_create();
    const int64_t S = clf_dim(g, "S", 1, m->max_s), L = clf_dim(g, "L", 1, m->cap);
    const int64_t group = m->heads / m->kv_heads;
    clf_tensor h = clf_input(g, "x", s->dt, 3, (int64_t[]){1, S, m->d});
    clf_tensor cos = clf_input(g, "cos", s->dt, 2, (int64_t[]){S, m->hd});
    clf_tensor sin = clf_input(g, "sin", s->dt, 2, (int64_t[]){S, m->hd});
    for (int l = 0; l < s->layers; l++) {
        char kn[32], vn[32];
        snprintf(kn, sizeof kn, "k_cache.%d", l);
        snprintf(vn, sizeof vn, "v_cache.%d", l);
        clf_tensor kc = clf_input(g, kn, s->dt, 4, (int64_t[]){1, m->kv_heads, m->cap, m->hd});
        clf_tensor vc = clf_input(g, vn, s->dt, 4, (int64_t[]){1, m->kv_heads, m->cap, m->hd});
        clf_tensor n = norm(s, h);
        clf_tensor q = clf_reshape(g, clf_matmul(g, n, weight(s, m->d, m->d)), 4, (int64_t[]){1, S, m->heads, m->hd});
        clf_tensor k = clf_reshape(g, clf_matmul(g, n, weight(s, m->d, m->kv_heads * m->hd)), 4,
                                   (int64_t[]){1, S, m->kv_heads, m->hd});
        clf_tensor v = clf_reshape(g, clf_matmul(g, n, weight(s, m->d, m->kv_heads * m->hd)), 4,
                                   (int64_t[]){1, S, m->kv_heads, m->hd});
        q = rope(s, q, cos, sin, S, m->heads);
        k = rope(s, k, cos, sin, S, m->kv_heads);
        /* [1, S, KV, hd] -> [1, KV, S, hd] into the caches. */
        clf_tensor kw = clf_cache_write(g, kc, clf_transpose(g, k, 4, (int[]){0, 2, 1, 3}), 2, L);
        clf_tensor vw = clf_cache_write(g, vc, clf_transpose(g, v, 4, (int[]){0, 2, 1, 3}), 2, L);
        snprintf(kn, sizeof kn, "k_out.%d", l);
        snprintf(vn, sizeof vn, "v_out.%d", l);
        clf_graph_output(g, kn, kw);
        clf_graph_output(g, vn, vw);
        /* GQA: queries [1, KV, group, S, hd] against keys [1, KV, 1, L, hd]. */
        clf_tensor qg = clf_transpose(g, clf_reshape(g, q, 5, (int64_t[]){1, S, m->kv_heads, group, m->hd}), 5,
                                      (int[]){0, 2, 3, 1, 4});
        clf_tensor K = clf_unsqueeze(g, clf_slice(g, kw, 1, (int64_t[]){0}, (int64_t[]){L}, (int[]){2}, NULL), 1,
                                     (int[]){2});
        clf_tensor V = clf_unsqueeze(g, clf_slice(g, vw, 1, (int64_t[]){0}, (int64_t[]){L}, (int[]){2}, NULL), 1,
                                     (int[]){2});
        clf_tensor a = clf_attention(g, qg, K, V, CLF_TENSOR_INVALID, 0, true);
        a = clf_reshape(g, clf_transpose(g, a, 5, (int[]){0, 3, 1, 2, 4}), 3, (int64_t[]){1, S, m->d});
        h = clf_add(g, h, clf_matmul(g, a, weight(s, m->d, m->d)));
        clf_tensor n2 = norm(s, h);
        clf_tensor gate = clf_matmul(g, n2, weight(s, m->d, m->ff));
        clf_tensor up = clf_matmul(g, n2, weight(s, m->d, m->ff));
        clf_tensor act = clf_mul(g, clf_mul(g, gate, clf_sigmoid(g, gate)), up);
        h = clf_add(g, h, clf_matmul(g, act, weight(s, m->ff, m->d)));
    }
    clf_graph_output(g, "y", h);
}

/* ---- Device state of a run ------------------------------------------------- */

typedef struct run_state {
    clf_context *ctx;
    clf_executable *exe;
    stack *s;
    cl_mem x, cos, sin, y;
    cl_mem kc[MAX_LAYERS], vc[MAX_LAYERS];
} run_state;

static cl_mem device_values(run_state *r, size_t n, float scale)
{
    cl_int err;
    void *host = values(r->s, n, scale);
    cl_mem m = clCreateBuffer(clf_context_cl(r->ctx), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              n * clf_dtype_size(r->s->dt), host, &err);
    if (!m)
        fprintf(stderr, "bench_decoder: clCreateBuffer: %d\n", err);
    return m;
}

/* The caches filled with small values, so that a decode step at any L
 * reads finite keys and values. */
static int make_state(run_state *r)
{
    const dims *m = &r->s->m;
    size_t cache = (size_t)(m->kv_heads * m->cap * m->hd);
    r->x = device_values(r, (size_t)(m->max_s * m->d), 1.0f);
    r->cos = device_values(r, (size_t)(m->max_s * m->hd), 1.0f);
    r->sin = device_values(r, (size_t)(m->max_s * m->hd), 1.0f);
    r->y = device_values(r, (size_t)(m->max_s * m->d), 0.0f);
    for (int l = 0; l < r->s->layers; l++) {
        r->kc[l] = device_values(r, cache, 1.0f);
        r->vc[l] = device_values(r, cache, 1.0f);
        if (!r->kc[l] || !r->vc[l])
            return -1;
    }
    return r->x && r->cos && r->sin && r->y ? 0 : -1;
}

/* One step: S new positions, L cached after it; x, cos and sin are read at
 * offset `at` positions (so that a prefill of 7 and a step at position 7 read
 * what a prefill of 8 reads). */
static clf_status step(run_state *r, int64_t S, int64_t L, int64_t at, cl_event *done)
{
    const dims *m = &r->s->m;
    size_t es = clf_dtype_size(r->s->dt);
    clf_buffer_view in[3 + 2 * MAX_LAYERS + 1], out[1 + 2 * MAX_LAYERS];
    const int64_t *shapes[3 + 2 * MAX_LAYERS + 1] = {0};
    int64_t xs[3] = {1, S, m->d}, cs[2] = {S, m->hd}, ls[1] = {L};
    size_t ni = 0, no = 0;
    /* Offsets into x, cos and sin through copies (a binding's offset must
     * be aligned to the device's base address alignment). */
    cl_mem src[3] = {r->x, r->cos, r->sin}, use[3] = {r->x, r->cos, r->sin};
    size_t row[3] = {(size_t)m->d * es, (size_t)m->hd * es, (size_t)m->hd * es};
    for (int i = 0; i < 3 && at; i++) {
        cl_int err;
        use[i] = clCreateBuffer(clf_context_cl(r->ctx), CL_MEM_READ_WRITE, (size_t)S * row[i], NULL, &err);
        if (!use[i] || clEnqueueCopyBuffer(clf_context_queue(r->ctx), src[i], use[i], (size_t)at * row[i], 0,
                                           (size_t)S * row[i], 0, NULL, NULL) != CL_SUCCESS)
            return CLF_ERR_OPENCL;
    }
    in[ni] = (clf_buffer_view){"x", use[0], 0};
    shapes[ni++] = xs;
    in[ni] = (clf_buffer_view){"cos", use[1], 0};
    shapes[ni++] = cs;
    in[ni] = (clf_buffer_view){"sin", use[2], 0};
    shapes[ni++] = cs;
    out[no++] = (clf_buffer_view){"y", r->y, 0};
    static char names[4 * MAX_LAYERS][24];
    for (int l = 0; l < r->s->layers; l++) {
        char *kn = names[4 * l], *vn = names[4 * l + 1], *ko = names[4 * l + 2], *vo = names[4 * l + 3];
        snprintf(kn, sizeof names[0], "k_cache.%d", l);
        snprintf(vn, sizeof names[0], "v_cache.%d", l);
        snprintf(ko, sizeof names[0], "k_out.%d", l);
        snprintf(vo, sizeof names[0], "v_out.%d", l);
        in[ni++] = (clf_buffer_view){kn, r->kc[l], 0};
        in[ni++] = (clf_buffer_view){vn, r->vc[l], 0};
        out[no++] = (clf_buffer_view){ko, r->kc[l], 0};
        out[no++] = (clf_buffer_view){vo, r->vc[l], 0};
    }
    in[ni] = (clf_buffer_view){"L", NULL, 0};
    shapes[ni++] = ls;
    clf_status st = clf_enqueue_shaped(r->exe, NULL, ni, in, shapes, no, out, 0, NULL, done);
    for (int i = 0; i < 3 && at; i++)
        clReleaseMemObject(use[i]); /* the enqueued commands keep them alive */
    return st;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Times runs steps at (S, L) after one warm-up; wall and device medians. */
static int time_steps(run_state *r, int64_t S, int64_t L, int runs, double *wall, double *device)
{
    double w[256], d[256];
    if (runs > 256)
        runs = 256;
    cl_event ev = NULL;
    if (step(r, S, L, 0, &ev) != CLF_OK || clWaitForEvents(1, &ev) != CL_SUCCESS)
        return -1;
    clReleaseEvent(ev);
    for (int i = 0; i < runs; i++) {
        double t0 = now_ms();
        if (step(r, S, L, 0, &ev) != CLF_OK || clWaitForEvents(1, &ev) != CL_SUCCESS)
            return -1;
        w[i] = now_ms() - t0;
        clReleaseEvent(ev);
        clf_run_profile p;
        d[i] = clf_executable_last_profile(r->exe, &p, NULL, 0) == CLF_OK ? (double)p.span_ns * 1e-6 : 0;
    }
    *wall = median(w, runs);
    *device = median(d, runs);
    return 0;
}

/* Reads the last position's output (d values) as f32. */
static void last_row(run_state *r, int64_t S, float *row)
{
    const dims *m = &r->s->m;
    size_t es = clf_dtype_size(r->s->dt);
    unsigned char buf[8192 * 4];
    clEnqueueReadBuffer(clf_context_queue(r->ctx), r->y, CL_TRUE, (size_t)((S - 1) * m->d) * es, (size_t)m->d * es,
                        buf, 0, NULL, NULL);
    for (int64_t i = 0; i < m->d; i++) {
        if (r->s->dt == CLF_F16) {
            uint16_t h;
            memcpy(&h, buf + i * 2, 2);
            row[i] = clf_f32_from_f16(h);
        } else {
            memcpy(&row[i], buf + i * 4, 4);
        }
    }
}

/* A prefill of 8 positions against a prefill of 7 and a decode step. */
static int self_check(run_state *r, bool markdown)
{
    const dims *m = &r->s->m;
    float a[8192], b[8192];
    cl_event ev = NULL;
    if (step(r, 8, 8, 0, &ev) != CLF_OK || clWaitForEvents(1, &ev) != CL_SUCCESS)
        return -1;
    clReleaseEvent(ev);
    last_row(r, 8, a);
    if (step(r, 7, 7, 0, &ev) != CLF_OK || clWaitForEvents(1, &ev) != CL_SUCCESS)
        return -1;
    clReleaseEvent(ev);
    if (step(r, 1, 8, 7, &ev) != CLF_OK || clWaitForEvents(1, &ev) != CL_SUCCESS)
        return -1;
    clReleaseEvent(ev);
    last_row(r, 1, b);
    double worst = 0;
    for (int64_t i = 0; i < m->d; i++) {
        double e = fabs((double)a[i] - (double)b[i]) / (1.0 + fabs((double)a[i]));
        worst = e > worst || isnan(e) ? e : worst;
    }
    double tol = r->s->dt == CLF_F16 ? 3e-2 : 1e-3;
    printf("%sself-check: decode step at position 7 vs prefill of 8, last row: max error %.2e (%s)\n",
           markdown ? "- " : "", worst, worst <= tol ? "ok" : "FAILED");
    return worst <= tol ? 0 : -1;
}

int main(int argc, char **argv)
{
    stack s = {.m = LLAMA_1B, .layers = 2, .dt = CLF_F16, .seed = 11};
    bool markdown = false, check_only = false;
    clf_kernel_style style = CLF_KERNEL_STYLE_AUTO;
    int runs = 50;
    const char *source_dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--small"))
            s.m = SMALL;
        else if (!strcmp(argv[i], "--markdown"))
            markdown = true;
        else if (!strcmp(argv[i], "--check"))
            check_only = true;
        else if (!strcmp(argv[i], "--gpu-form")) /* the GPU kernel forms on any device (a check on PoCL) */
            style = CLF_KERNEL_STYLE_GPU;
        else if (!strcmp(argv[i], "--layers") && i + 1 < argc)
            s.layers = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dtype") && i + 1 < argc)
            s.dt = !strcmp(argv[++i], "f32") ? CLF_F32 : CLF_F16;
        else if (!strcmp(argv[i], "--source") && i + 1 < argc)
            source_dir = argv[++i];
        else {
            fprintf(stderr, "usage: bench_decoder [--layers N] [--small] [--gpu-form] [--dtype f32|f16] [--runs R] "
                            "[--markdown] [--check] [--source DIR]\n");
            return 2;
        }
    }
    if (s.layers < 1 || s.layers > MAX_LAYERS || runs < 1)
        return 2;
    clf_context *ctx = bench_profiling_context("bench_decoder");
    if (!ctx)
        return 1;
    build(&s);
    const char *msg;
    if (clf_graph_status(s.g, &msg) != CLF_OK) {
        fprintf(stderr, "bench_decoder: graph: %s\n", msg);
        return 1;
    }
    run_state r = {.ctx = ctx, .s = &s};
    double t0 = now_ms();
    if (clf_compile(ctx, s.g, clf_compile_params(.kernel_style = style), &r.exe) != CLF_OK) {
        fprintf(stderr, "bench_decoder: clf_compile: %s\n", clf_context_last_error(ctx));
        return 1;
    }
    double compile_ms = now_ms() - t0;
    if (make_state(&r) != 0)
        return 1;
    const dims *m = &s.m;
    printf("%sdecoder stack: %d layers, width %lld, MLP %lld, %lld heads / %lld KV heads of %lld, %s, cache %lld; "
           "clf_compile %.0f ms\n",
           markdown ? "- " : "", s.layers, (long long)m->d, (long long)m->ff, (long long)m->heads,
           (long long)m->kv_heads, (long long)m->hd, clf_dtype_name(s.dt), (long long)m->cap, compile_ms);
    if (self_check(&r, markdown) != 0) {
        fprintf(stderr, "bench_decoder: self-check failed: %s\n", clf_context_last_error(ctx));
        return 1;
    }
    if (check_only)
        return 0;
    if (markdown)
        printf(TABLE_HEAD);
    struct {
        const char *name;
        int64_t S, L;
    } cases[] = {{"prefill S=512", 512, 512}, {"decode L=128", 1, 128}, {"decode L=1024", 1, 1024},
                 {"decode L=4096", 1, 4096}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int64_t S = cases[c].S > m->max_s ? m->max_s : cases[c].S, L = cases[c].L > m->cap ? m->cap : cases[c].L;
        cl_event ev = NULL;
        double f0 = now_ms();
        if (step(&r, S, L, 0, &ev) != CLF_OK || clWaitForEvents(1, &ev) != CL_SUCCESS) {
            fprintf(stderr, "bench_decoder: %s: %s\n", cases[c].name, clf_context_last_error(ctx));
            return 1;
        }
        double first = now_ms() - f0;
        clReleaseEvent(ev);
        double wall, device;
        if (time_steps(&r, S, L, runs, &wall, &device) != 0)
            return 1;
        printf(markdown ? "| %s | %.4f | %.4f | %.4f | %.1f |\n"
                        : "%-16s wall %.4f ms  device %.4f ms  per layer %.4f ms  first %.1f ms\n",
               cases[c].name, wall, device, device / s.layers, first);
        /* Where the step's device time goes, per kernel. */
        {
            uint64_t ns[512];
            clf_run_profile p;
            clf_executable *x = r.exe->dyn ? r.exe->dyn->last : r.exe;
            if (clf_executable_last_profile(r.exe, &p, ns, 512) == CLF_OK) {
                printf("%sper kernel at %s (%zu kernels, %.4f ms of kernels in a %.4f ms span):\n",
                       markdown ? "\n" : "", cases[c].name, p.kernels, (double)p.kernel_ns_total * 1e-6,
                       (double)p.span_ns * 1e-6);
                for (size_t k = 0; k < p.kernels && k < 512 && k < clf_executable_kernel_count(x); k++)
                    if (k < 2 * (size_t)(p.kernels / s.layers)) /* two layers' worth */
                        printf("%s%8.4f ms  %s\n", markdown ? "    " : "  ", (double)ns[k] * 1e-6,
                               clf_executable_kernel_name(x, k));
                if (markdown)
                    printf(TABLE_HEAD);
            }
            if (source_dir) { /* each case's kernel sources, one file a case */
                char path[1024];
                snprintf(path, sizeof path, "%s/%s.cl", source_dir, c == 0 ? "prefill" : c == 1 ? "decode128" : c == 2 ? "decode1024" : "decode4096");
                FILE *f = fopen(path, "w");
                for (size_t k = 0; f && k < clf_executable_kernel_count(x); k++)
                    fprintf(f, "/* ==== kernel %zu: %s ==== */\n%s\n", k, clf_executable_kernel_name(x, k),
                            clf_executable_kernel_source(x, k));
                if (f)
                    fclose(f);
                else
                    fprintf(stderr, "bench_decoder: could not write %s\n", path);
            }
        }
    }
    /* A generation loop: each step a length not run before. */
    int64_t from = m->cap >= 1100 ? 1000 : m->cap / 2, nsteps = 16;
    double w[16];
    for (int64_t i = 0; i < nsteps; i++) {
        cl_event ev = NULL;
        double f0 = now_ms();
        if (step(&r, 1, from + i, 0, &ev) != CLF_OK || clWaitForEvents(1, &ev) != CL_SUCCESS)
            return 1;
        w[i] = now_ms() - f0;
        clReleaseEvent(ev);
    }
    printf(markdown ? "| decode steps L=%lld.. (new lengths) | %.4f | | | |\n"
                    : "decode steps L=%lld.. each a new length: wall %.4f ms / step (median of 16)\n",
           (long long)from, median(w, (int)nsteps));
    clf_executable_destroy(&r.exe);
    clf_graph_destroy(&s.g);
    for (int i = 0; i < s.nkeep; i++)
        free(s.keep[i]);
    clf_context_destroy(&ctx);
    return 0;
}
