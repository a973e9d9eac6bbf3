/* Benchmarks fused attention, softmax(Q Kᵀ scale + mask) V, built with the
 * graph builder, on the default device (CLFUSE_DEVICE picks another):
 *
 *     bench_attention [--dtype f32|f16|bf16] [--b B] [--h H] [--hkv HKV] [--sq SQ] [--sk SK]
 *                     [--s S] [--d D] [--dv DV] [--scale X] [--causal] [--iters N] [--warmup W]
 *                     [--sets N] [--rows N] [--unfused] [--primitives] [--gqa expand|broadcast]
 *                     [--split-scale] [--source FILE]
 *
 * q is [B, H, Sq, D], k [B, Hkv, Sk, D], v [B, Hkv, Sk, Dv]; with Hkv < H
 * (grouped-query attention) k and v are broadcast to H heads in the graph
 * (unsqueeze, expand, reshape: head h reads kv head h / (H / Hkv), as
 * torch's repeat_interleave); --split-scale multiplies q and k by
 * sqrt(scale) each instead of the scores by scale (attention's loads
 * then compute them); --gqa broadcast splits q's heads instead,
 * [B, Hkv, H / Hkv, Sq, D] against k and v [B, Hkv, 1, Sk, D], the batch
 * axes broadcast (the form clf_attention documents for GQA). --causal masks key j from query i when
 * j > i + Sk - Sq (bottom-right aligned). --scale 0 (the default) is
 * 1/sqrt(D).
 *
 * The graph is clf_attention where include/clfuse/graph.h declares it
 * (meson defines HAVE_CLF_ATTENTION), else, or with --primitives, the same
 * decomposition in primitives (attention_primitives). --unfused also times
 * the graph compiled with fusion off.
 *
 * Prints the plan's kernels, the median and minimum device time over
 * --iters runs after --warmup (profiling events: the span from the first
 * kernel's start to the last one's end; the host's clock where the device's
 * timestamps are not real), TFLOP/s (4 B H Sq Sk D, halved for causal when
 * Sq == Sk) and GB/s (q, k, v read once and the output written once), and
 * checks the output against a host reference in double on --rows sampled
 * rows (and that every element was written); a wrong result fails the
 * program. Inputs are uniform in [-2, 2), rotated among --sets copies so
 * that repeated runs do not all hit the cache. The last line of each
 * variant is a RESULT line of key=value pairs for scripts. --source writes
 * the fused plan's kernel sources to FILE. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

typedef struct attn_case {
    clf_dtype dt;
    int64_t b, h, hkv, sq, sk, d, dv;
    double scale; /* 0: 1/sqrt(d) */
    bool causal;
    /* q and k each multiplied by sqrt(scale) before the product (as
     * PyTorch's dynamo export of SDPA writes it): prologues on attention's
     * loads of Q and K, instead of the scale on the scores. */
    bool split_scale;
} attn_case;

/* softmax(q kᵀ scale + mask) v in primitives, the decomposition
 * clf_attention stands for: a bool mask selects (false: -inf), a float
 * mask is added; causal keeps key j for query i when j <= i + Sk - Sq. */
static clf_tensor attention_primitives(clf_graph *g, clf_tensor q, clf_tensor k, clf_tensor v, clf_tensor mask,
                                       double scale, bool causal)
{
    int rq = 0, rk = 0;
    int64_t sq[CLF_MAX_RANK], sk[CLF_MAX_RANK];
    clf_dtype dt = CLF_F32;
    if (clf_tensor_shape(g, q, &rq, sq) != CLF_OK || clf_tensor_shape(g, k, &rk, sk) != CLF_OK || rq < 2 || rk < 2 ||
        clf_tensor_dtype(g, q, &dt) != CLF_OK)
        return CLF_TENSOR_INVALID;
    const int64_t nq = sq[rq - 2], nk = sk[rk - 2], d = sq[rq - 1];
    if (scale == 0)
        scale = 1.0 / sqrt((double)d);
    int perm[CLF_MAX_RANK];
    for (int i = 0; i < rk; i++)
        perm[i] = i;
    perm[rk - 2] = rk - 1;
    perm[rk - 1] = rk - 2;
    clf_tensor s = clf_matmul(g, q, clf_transpose(g, k, rk, perm));
    s = clf_mul(g, s, clf_scalar(g, dt, scale));
    clf_tensor ninf = clf_scalar(g, dt, -INFINITY);
    if (clf_tensor_valid(mask)) {
        clf_dtype mdt = CLF_F32;
        clf_tensor_dtype(g, mask, &mdt);
        s = mdt == CLF_BOOL ? clf_where(g, mask, s, ninf) : clf_add(g, s, mask);
    }
    if (causal) {
        unsigned char *keep = malloc((size_t)(nq * nk) + 1);
        if (!keep)
            return CLF_TENSOR_INVALID;
        for (int64_t i = 0; i < nq; i++)
            for (int64_t j = 0; j < nk; j++)
                keep[i * nk + j] = j <= i + nk - nq;
        int64_t cs[2] = {nq, nk};
        clf_tensor c = clf_constant(g, CLF_BOOL, 2, cs, keep);
        free(keep);
        s = clf_where(g, c, s, ninf);
    }
    return clf_matmul(g, clf_softmax(g, s, -1), v);
}

/* The attention of the graph: clf_attention where the header has it,
 * else (or with primitives) attention_primitives. */
static clf_tensor attention(clf_graph *g, clf_tensor q, clf_tensor k, clf_tensor v, clf_tensor mask, double scale,
                            bool causal, bool primitives)
{
#ifdef HAVE_CLF_ATTENTION
    if (!primitives)
        return clf_attention(g, q, k, v, mask, scale, causal);
#else
    (void)primitives;
#endif
    return attention_primitives(g, q, k, v, mask, scale, causal);
}

/* x [B, Hkv, S, E] seen as [B, H, S, E], head h reading head h / (H / Hkv). */
static clf_tensor kv_to_heads(clf_graph *g, clf_tensor x, const attn_case *c, int64_t s, int64_t e)
{
    if (c->hkv == c->h)
        return x;
    int ax = 2;
    int64_t ex[5] = {c->b, c->hkv, c->h / c->hkv, s, e}, rs[4] = {c->b, c->h, s, e};
    return clf_reshape(g, clf_expand(g, clf_unsqueeze(g, x, 1, &ax), 5, ex), 4, rs);
}

/* With gqa_broadcast (and Hkv < H) the heads are split instead: q
 * [B, Hkv, H / Hkv, Sq, D] against k and v [B, Hkv, 1, Sk, D], the batch
 * axes broadcast by the products, the output reshaped back to H heads. */
static clf_graph *case_graph(const attn_case *c, bool primitives, bool gqa_broadcast)
{
    clf_graph *g = clf_graph_create();
    if (!g)
        return NULL;
    int64_t sq[4] = {c->b, c->h, c->sq, c->d}, sk[4] = {c->b, c->hkv, c->sk, c->d}, sv[4] = {c->b, c->hkv, c->sk, c->dv};
    clf_tensor q = clf_input(g, "q", c->dt, 4, sq), k = clf_input(g, "k", c->dt, 4, sk);
    clf_tensor v = clf_input(g, "v", c->dt, 4, sv), out;
    double scale = c->scale;
    if (c->split_scale) {
        clf_tensor r = clf_scalar(g, c->dt, sqrt(c->scale != 0 ? c->scale : 1.0 / sqrt((double)c->d)));
        q = clf_mul(g, q, r);
        k = clf_mul(g, k, r);
        scale = 1.0;
    }
    if (gqa_broadcast && c->hkv < c->h) {
        int ax = 2;
        int64_t qs[5] = {c->b, c->hkv, c->h / c->hkv, c->sq, c->d}, os[4] = {c->b, c->h, c->sq, c->dv};
        out = attention(g, clf_reshape(g, q, 5, qs), clf_unsqueeze(g, k, 1, &ax), clf_unsqueeze(g, v, 1, &ax),
                        CLF_TENSOR_INVALID, scale, c->causal, primitives);
        out = clf_reshape(g, out, 4, os);
    } else {
        out = attention(g, q, kv_to_heads(g, k, c, c->sk, c->d), kv_to_heads(g, v, c, c->sk, c->dv),
                        CLF_TENSOR_INVALID, scale, c->causal, primitives);
    }
    clf_graph_output(g, "out", out);
    return g;
}

static double case_flops(const attn_case *c)
{
    double f = 2.0 * (double)(c->b * c->h) * (double)(c->sq * c->sk) * (double)(c->d + c->dv);
    return c->causal && c->sq == c->sk ? f / 2 : f;
}

static double case_bytes(const attn_case *c)
{
    double e = (double)clf_dtype_size(c->dt);
    return e * ((double)(c->b * c->h * c->sq) * (double)(c->d + c->dv) +
                (double)(c->b * c->hkv * c->sk) * (double)(c->d + c->dv));
}

/* s rounded to the dtype, as a scalar of the graph is. */
static double rounded(clf_dtype dt, double s)
{
    if (dt == CLF_F16)
        return clf_f32_from_f16(clf_f16_from_f32((float)s));
    if (dt == CLF_BF16)
        return clf_f32_from_bf16(clf_bf16_from_f32((float)s));
    return (float)s;
}

/* The scale the graph multiplies the scores by, in effect. */
static double graph_scale(const attn_case *c)
{
    double s = c->scale != 0 ? c->scale : 1.0 / sqrt((double)c->d);
    return c->split_scale ? rounded(c->dt, sqrt(s)) * rounded(c->dt, sqrt(s)) : rounded(c->dt, s);
}

static const void *host_input(const bench_io *io, const char *name)
{
    for (size_t i = 0; i < io->n_in; i++)
        if (strcmp(io->in[i].name, name) == 0)
            return io->host_in[i];
    return NULL;
}

static double at(clf_dtype dt, const void *p, int64_t i)
{
    double v = 0;
    hm_float_at(dt, p, (size_t)i, &v);
    return v;
}

/* Output row (b, h, i) in double from the host inputs into want[0..dv). */
static void reference_row(const attn_case *c, const bench_io *io, int64_t b, int64_t h, int64_t i, double *p,
                          double *want)
{
    const void *q = host_input(io, "q"), *k = host_input(io, "k"), *v = host_input(io, "v");
    const int64_t hk = h / (c->h / c->hkv), D = c->d, Dv = c->dv, Sk = c->sk;
    const int64_t qo = ((b * c->h + h) * c->sq + i) * D, ko = (b * c->hkv + hk) * Sk * D,
                  vo = (b * c->hkv + hk) * Sk * Dv;
    const double scale = graph_scale(c);
    double mx = -INFINITY;
    for (int64_t j = 0; j < Sk; j++) {
        double s = 0;
        for (int64_t t = 0; t < D; t++)
            s += at(c->dt, q, qo + t) * at(c->dt, k, ko + j * D + t);
        p[j] = c->causal && j > i + Sk - c->sq ? -INFINITY : s * scale;
        if (p[j] > mx)
            mx = p[j];
    }
    double sum = 0;
    for (int64_t j = 0; j < Sk; j++)
        sum += p[j] = exp(p[j] - mx);
    for (int64_t t = 0; t < Dv; t++)
        want[t] = 0;
    for (int64_t j = 0; j < Sk; j++)
        for (int64_t t = 0; t < Dv; t++)
            want[t] += p[j] / sum * at(c->dt, v, vo + j * Dv + t);
}

typedef struct check_result {
    int rows;
    int64_t unwritten; /* output elements that are not finite (the poison is NaN) */
    double max_err;    /* max |got - want| / (1 + |want|) over the sampled rows */
    double rel_norm;   /* ||got - want|| / ||want|| over the sampled rows */
} check_result;

/* Reads out back and compares `rows` sampled rows (the first and last among
 * them) with reference_row. */
static int check_output(clf_context *ctx, const attn_case *c, const bench_io *io, int rows, check_result *r)
{
    const int64_t nrows = c->b * c->h * c->sq, n = nrows * c->dv;
    size_t bytes = (size_t)n * clf_dtype_size(c->dt);
    void *y = malloc(bytes ? bytes : 1);
    double *p = malloc((size_t)c->sk * sizeof *p), *want = malloc((size_t)c->dv * sizeof *want);
    int rc = -1;
    memset(r, 0, sizeof *r);
    if (!y || !p || !want)
        goto done;
    if (clEnqueueReadBuffer(clf_context_queue(ctx), io->out[0].buffer, CL_TRUE, 0, bytes, y, 0, NULL, NULL) !=
        CL_SUCCESS)
        goto done;
    for (int64_t e = 0; e < n; e++)
        if (!isfinite(at(c->dt, y, e)))
            r->unwritten++;
    double num = 0, den = 0;
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    for (int s = 0; s < rows; s++) {
        int64_t row = s == 0 ? 0 : s == 1 ? nrows - 1 : (int64_t)(hm_xorshift(&seed) % (uint64_t)nrows);
        int64_t i = row % c->sq, h = row / c->sq % c->h, b = row / (c->sq * c->h);
        reference_row(c, io, b, h, i, p, want);
        for (int64_t t = 0; t < c->dv; t++) {
            double got = at(c->dt, y, row * c->dv + t), e = fabs(got - want[t]) / (1 + fabs(want[t]));
            if (!(e <= r->max_err))
                r->max_err = isnan(e) ? INFINITY : e;
            num += (got - want[t]) * (got - want[t]);
            den += want[t] * want[t];
        }
        r->rows++;
    }
    r->rel_norm = den > 0 ? sqrt(num / den) : sqrt(num);
    if (isnan(r->rel_norm))
        r->rel_norm = INFINITY;
    rc = 0;
done:
    free(y);
    free(p);
    free(want);
    return rc;
}

/* The errors a correct result stays under: intermediates (scores, weights)
 * are rounded to f16/bf16 by the primitive graph, so those dtypes get the
 * rounding of a few such values at scores of up to |40 * scale|. */
static double max_err_tolerance(clf_dtype dt) { return dt == CLF_F16 ? 1e-2 : dt == CLF_BF16 ? 8e-2 : 1e-4; }
static double rel_tolerance(clf_dtype dt) { return dt == CLF_F16 ? 1e-2 : dt == CLF_BF16 ? 8e-2 : 1e-4; }

typedef struct options {
    attn_case c;
    int iters, warmup, sets, rows;
    bool unfused, primitives, gqa_broadcast;
    const char *source; /* --source: where the fused kernels' sources go */
} options;

static bool parse_args(int argc, char **argv, options *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int64_t *dim = strcmp(a, "--b") == 0     ? &o->c.b
                       : strcmp(a, "--h") == 0   ? &o->c.h
                       : strcmp(a, "--hkv") == 0 ? &o->c.hkv
                       : strcmp(a, "--sq") == 0  ? &o->c.sq
                       : strcmp(a, "--sk") == 0  ? &o->c.sk
                       : strcmp(a, "--d") == 0   ? &o->c.d
                       : strcmp(a, "--dv") == 0  ? &o->c.dv
                                                 : NULL;
        int *count = strcmp(a, "--iters") == 0    ? &o->iters
                     : strcmp(a, "--warmup") == 0 ? &o->warmup
                     : strcmp(a, "--sets") == 0   ? &o->sets
                     : strcmp(a, "--rows") == 0   ? &o->rows
                                                  : NULL;
        if (dim && v) {
            *dim = strtoll(v, NULL, 0);
            i++;
        } else if (count && v) {
            *count = atoi(v);
            i++;
        } else if (strcmp(a, "--s") == 0 && v) { /* both Sq and Sk; a later --sq or --sk overrides */
            o->c.sq = o->c.sk = strtoll(v, NULL, 0);
            i++;
        } else if (strcmp(a, "--scale") == 0 && v) {
            o->c.scale = strtod(v, NULL);
            i++;
        } else if (strcmp(a, "--dtype") == 0 && v &&
                   (strcmp(v, "f32") == 0 || strcmp(v, "f16") == 0 || strcmp(v, "bf16") == 0)) {
            o->c.dt = strcmp(v, "f16") == 0 ? CLF_F16 : strcmp(v, "bf16") == 0 ? CLF_BF16 : CLF_F32;
            i++;
        } else if (strcmp(a, "--causal") == 0) {
            o->c.causal = true;
        } else if (strcmp(a, "--split-scale") == 0) {
            o->c.split_scale = true;
        } else if (strcmp(a, "--unfused") == 0) {
            o->unfused = true;
        } else if (strcmp(a, "--primitives") == 0) {
            o->primitives = true;
        } else if (strcmp(a, "--source") == 0 && v) {
            o->source = v;
            i++;
        } else if (strcmp(a, "--gqa") == 0 && v && (strcmp(v, "expand") == 0 || strcmp(v, "broadcast") == 0)) {
            o->gqa_broadcast = strcmp(v, "broadcast") == 0;
            i++;
        } else {
            fprintf(stderr,
                    "usage: bench_attention [--dtype f32|f16|bf16] [--b B] [--h H] [--hkv HKV] [--sq SQ] [--sk SK] "
                    "[--s S] [--d D] [--dv DV] [--scale X] [--causal] [--iters N] [--warmup W] [--sets N] "
                    "[--rows N] [--unfused] [--primitives] [--gqa expand|broadcast] [--split-scale] [--source FILE]\n");
            return false;
        }
    }
    if (o->c.hkv == 0)
        o->c.hkv = o->c.h;
    if (o->c.dv == 0)
        o->c.dv = o->c.d;
    attn_case *c = &o->c;
    if (c->b < 1 || c->h < 1 || c->hkv < 1 || c->sq < 1 || c->sk < 1 || c->d < 1 || c->dv < 1 || c->h % c->hkv) {
        fprintf(stderr, "bench_attention: every extent must be >= 1 and H a multiple of Hkv\n");
        return false;
    }
    if (c->causal && c->sq > c->sk) {
        fprintf(stderr, "bench_attention: causal with Sq > Sk masks every key of the first rows\n");
        return false;
    }
    if (o->iters < 1)
        o->iters = 1;
    if (o->warmup < 0)
        o->warmup = 0;
    if (o->rows < 2)
        o->rows = 2;
    return true;
}

/* Compiles, times, checks and prints one variant (fused or unfused);
 * returns 0 when it ran and its result is right. */
static int run_variant(clf_context *ctx, const options *o, const clf_graph *g, bool unfused, bool host_timed,
                       const char *graph_kind)
{
    const attn_case *c = &o->c;
    const char *name = unfused ? "unfused" : "fused";
    clf_executable *exe = NULL;
    bench_io sets[8];
    int nsets = 0, rc = 1;
    memset(sets, 0, sizeof sets);
    double t0 = hm_now_ms();
    clf_status st = clf_compile(ctx, g, clf_compile_params(.disable_fusion = unfused), &exe);
    double compile_ms = hm_now_ms() - t0;
    if (st != CLF_OK) {
        fprintf(stderr, "%s: compile: %s: %s\n", name, clf_status_name(st), clf_context_last_error(ctx));
        printf("RESULT variant=%s ok=0 why=compile\n", name);
        return 1;
    }
    if (o->source && !unfused) {
        FILE *f = fopen(o->source, "w");
        for (size_t k = 0; f && k < clf_executable_kernel_count(exe); k++)
            fprintf(f, "/* ==== kernel %zu ==== */\n%s\n", k, clf_executable_kernel_source(exe, k));
        if (!f || fclose(f) != 0)
            fprintf(stderr, "%s: could not write %s\n", name, o->source);
    }
    /* Enough copies of the inputs that one pass over them exceeds 256 MiB
     * (a GPU's last-level cache is 50-100 MB), at most 8. */
    int want_sets = o->sets > 0 ? o->sets : (int)ceil(256.0 * 1048576.0 / case_bytes(c));
    want_sets = want_sets < 1 ? 1 : want_sets > 8 ? 8 : want_sets;
    for (; nsets < want_sets; nsets++)
        if (bench_io_create(ctx, exe, -2.0f, 2.0f, &sets[nsets]) != 0) {
            fprintf(stderr, "%s: could not create buffers for the inputs and outputs\n", name);
            goto done;
        }
    bench_timing t;
    int iters = unfused ? (o->iters + 3) / 4 : o->iters, warmup = unfused ? (o->warmup + 1) / 2 : o->warmup;
    if (iters < 1)
        iters = 1;
    if (bench_time_sets(exe, sets, nsets, warmup, iters, &t) != 0) {
        fprintf(stderr, "%s: run: %s\n", name, clf_context_last_error(ctx));
        printf("RESULT variant=%s ok=0 why=run\n", name);
        goto done;
    }
    /* The checked run: set 0's output poisoned first, so that an element no
     * kernel writes stays NaN. */
    cl_command_queue q = clf_context_queue(ctx);
    size_t out_bytes = (size_t)(c->b * c->h * c->sq * c->dv) * clf_dtype_size(c->dt);
    unsigned char poison = 0xff;
    cl_event ev = NULL;
    check_result cr;
    if (clEnqueueFillBuffer(q, sets[0].out[0].buffer, &poison, 1, 0, out_bytes, 0, NULL, NULL) != CL_SUCCESS ||
        clFinish(q) != CL_SUCCESS ||
        clf_run(exe, sets[0].n_in, sets[0].in, sets[0].n_out, sets[0].out, 0, NULL, &ev) != CLF_OK) {
        fprintf(stderr, "%s: checked run: %s\n", name, clf_context_last_error(ctx));
        printf("RESULT variant=%s ok=0 why=run\n", name);
        goto done;
    }
    clWaitForEvents(1, &ev);
    clReleaseEvent(ev);
    if (check_output(ctx, c, &sets[0], o->rows, &cr) != 0) {
        fprintf(stderr, "%s: could not read the output back\n", name);
        printf("RESULT variant=%s ok=0 why=readback\n", name);
        goto done;
    }
    clf_plan_stats s;
    clf_executable_stats(exe, &s);
    char names[512] = "";
    for (size_t k = 0; k < clf_executable_kernel_count(exe); k++) {
        size_t len = strlen(names);
        if (len + 4 >= sizeof names) {
            snprintf(names + sizeof names - 5, 5, "...");
            break;
        }
        snprintf(names + len, sizeof names - len, "%s%s", k ? " " : "", clf_executable_kernel_name(exe, k));
    }
    double tflops = case_flops(c) / (t.device_ms * 1e9), gbs = case_bytes(c) / (t.device_ms * 1e6);
    bool ok = cr.unwritten == 0 && cr.max_err <= max_err_tolerance(c->dt) && cr.rel_norm <= rel_tolerance(c->dt);
    printf("%s: %llu kernels (%llu unfused) [%s]; compile %.0f ms; scratch %.1f MB\n", name,
           (unsigned long long)s.kernels, (unsigned long long)s.unfused_kernels, names, compile_ms,
           (double)s.peak_intermediate_bytes / 1e6);
    printf("%s: device median %.4f ms, min %.4f ms over %d runs (%d warm-up, %d input sets); host median %.4f ms; "
           "%.2f TFLOP/s, %.0f GB/s\n",
           name, t.device_ms, t.min_ms, iters, warmup, nsets, t.wall_ms, tflops, gbs);
    printf("%s: check of %d rows: max error %.2e (tolerance %.0e), relative norm error %.2e (tolerance %.0e), "
           "%lld elements unwritten: %s\n",
           name, cr.rows, cr.max_err, max_err_tolerance(c->dt), cr.rel_norm, rel_tolerance(c->dt),
           (long long)cr.unwritten, ok ? "ok" : "WRONG");
    printf("RESULT variant=%s ok=%d graph=%s kernels=%llu median_ms=%.5f min_ms=%.5f tflops=%.3f gbs=%.1f "
           "max_err=%.3e rel_err=%.3e compile_ms=%.0f timing=%s\n",
           name, ok, graph_kind, (unsigned long long)s.kernels, t.device_ms, t.min_ms, tflops, gbs, cr.max_err,
           cr.rel_norm, compile_ms, host_timed ? "host" : "events");
    if (!ok)
        fprintf(stderr, "bench_attention: %s result WRONG: max error %g, relative norm error %g, %lld unwritten\n",
                name, cr.max_err, cr.rel_norm, (long long)cr.unwritten);
    rc = ok ? 0 : 1;
done:
    for (int i = 0; i < nsets; i++)
        bench_io_destroy(&sets[i]);
    clf_executable_destroy(&exe);
    fflush(stdout);
    return rc;
}

int main(int argc, char **argv)
{
    options o = {.c = {CLF_F32, 1, 2, 0, 64, 64, 32, 0, 0, false}, .iters = 50, .warmup = 5, .rows = 64};
    if (!parse_args(argc, argv, &o))
        return 2;
    const attn_case *c = &o.c;
    clf_context *ctx = bench_profiling_context("bench_attention");
    if (!ctx)
        return 1;
    bool host_timed = !clf_context_timestamps_real(ctx);
    clf_device_desc dev;
    clf_context_device(ctx, &dev);
#ifdef HAVE_CLF_ATTENTION
    const char *graph_kind = o.primitives ? "primitives" : "clf_attention";
#else
    const char *graph_kind = "primitives";
#endif
    printf("device: %s (%s)\n", dev.device_name, dev.platform_name);
    printf("attention %s B=%lld H=%lld Hkv=%lld%s Sq=%lld Sk=%lld D=%lld Dv=%lld%s scale=%.6g graph=%s; "
           "%.3g GFLOP, %.1f MB moved at least\n",
           clf_dtype_name(c->dt), (long long)c->b, (long long)c->h, (long long)c->hkv,
           c->hkv < c->h ? (o.gqa_broadcast ? " (broadcast)" : " (expanded)") : "", (long long)c->sq,
           (long long)c->sk, (long long)c->d, (long long)c->dv, c->causal ? " causal" : "", graph_scale(c), graph_kind,
           case_flops(c) / 1e9, case_bytes(c) / 1e6);
    fflush(stdout);
    clf_graph *g = case_graph(c, o.primitives, o.gqa_broadcast);
    const char *msg = "out of memory";
    int rc = 1;
    if (!g || clf_graph_status(g, &msg) != CLF_OK) {
        fprintf(stderr, "bench_attention: graph: %s\n", msg);
        printf("RESULT variant=fused ok=0 why=graph\n");
        goto done;
    }
    rc = run_variant(ctx, &o, g, false, host_timed, graph_kind);
    if (o.unfused && run_variant(ctx, &o, g, true, host_timed, graph_kind) != 0)
        rc = 1;
done:
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
    return rc;
}
