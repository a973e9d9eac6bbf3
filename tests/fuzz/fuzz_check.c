/* The fuzzer's oracle: input data by profile, the reference run (and two
 * runs on slightly perturbed inputs that measure how sensitive each output
 * element is), the device runs, and the NaN-aware comparison.
 *
 * TOLERANCES. An output whose every op is one that each correct device
 * rounds exactly as the reference does (fz_facts.exact: integer and bool
 * ops, movement (gather and concat too), comparisons, where, clip,
 * max/min, floor/ceil/sign, casts, and f32 add/sub/mul of exact
 * operands) must match bit for bit (i32, i64 and bool outputs always do),
 * NaN matching NaN (any payload) and the sign of zero included. Any other
 * f32 output element w (reference) and g (device) must satisfy
 *
 *     |g - w| <= rtol * (|w| + min(1, M)) + (1e-44 + K * 2^-149)
 *                 + (16 + 2 * K) * max_k |w - w_k|
 *
 * where w_k are the reference's results on inputs perturbed by up to 4
 * ulp (relative 4 * 2^-23; a denormal by up to 4 of its ulps, 2^-149),
 * which bounds the cancellation and ill-conditioning that a few ulp of
 * device math may amplify, and rtol = 4e-6 per inexact op on the longest
 * path (pointwise math: exp, log, div, pow, ... a few ulp each in OpenCL)
 * or 1e-5 per op when a reduction, composite or contraction lies upstream
 * (sums in another order; softmax and norms), plus 2 * K * 2^-24 when a
 * contraction does, capped at 1e-3 (2e-3 with a contraction).
 *
 * K is the largest K (terms of one dot product) of a matmul or gemm
 * upstream of the output, 0 when there is none. The reference sums each
 * dot product in double and rounds once; the device sums K f32 products in
 * its own order (tiles, vector lanes, fma or not). Such a sum is backward
 * stable: it is the exact result for products perturbed by at most
 * gamma_K ~ K * 2^-24 relative, K/8 times the 4-ulp (8 * 2^-24) input
 * perturbation that w_k measures; hence a spread factor 16 + 2K, and the
 * rtol term for sums without cancellation. Products in the denormal range
 * are rounded absolutely: K * 2^-149. The generator keeps K * |a| * |b| <=
 * 1e36 (partial sums stay finite in any order). Error thus grows with K:
 * for K = 32 the spread factor is 80 and rtol 1e-5 + 3.8e-6 per op. M is
 * the generator's bound on the output's
 * magnitude: results near 0 by cancellation (log of a sum near 1) keep
 * their operands' absolute error, which perturbing inputs that are exactly
 * 0 or small integers does not show. 1e-44 is a few denormal ulps. NaN must match NaN
 * and an infinity the same infinity, unless a perturbed reference run
 * changes the element's class (finite, infinite, NaN): then the element is
 * unstable and not compared. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

#define NPERTURB 2

typedef struct fz_io {
    int ninputs, noutputs;
    clf_host_binding in[FZ_MAX_NODES];
    clf_host_binding in_p[NPERTURB][FZ_MAX_NODES];
    int in_node[FZ_MAX_NODES];
    clf_host_binding out_want[FZ_MAX_NODES];
    clf_host_binding out_pert[NPERTURB][FZ_MAX_NODES];
    clf_host_binding out_got[FZ_MAX_NODES];
    clf_host_binding out_unfused[FZ_MAX_NODES];
    int out_node[FZ_MAX_NODES];
    size_t out_numel[FZ_MAX_NODES];
    char names[FZ_MAX_NODES][16];
    char onames[FZ_MAX_NODES][16];
} fz_io;

static float special_f32(fz_rng *r)
{
    static const float values[] = {NAN,     -NAN,     INFINITY, -INFINITY, 0.0f,  -0.0f, 1e-40f,
                                   -3e-39f, 1.4e-45f, 1e30f,    -1e30f,    1e-38f, 2.0f, -2.0f};
    return values[fz_below(r, sizeof values / sizeof values[0])];
}

static void fill(const fz_node *n, void *p, size_t count)
{
    fz_rng r = {n->data_seed};
    for (size_t i = 0; i < count; i++) {
        if (n->profile == FZ_PROF_INDEX && (n->dt == CLF_I32 || n->dt == CLF_I64)) {
            int64_t v = fz_index_value(&r, n->ival, n->dt);
            if (n->dt == CLF_I64)
                ((int64_t *)p)[i] = v;
            else
                ((int32_t *)p)[i] = (int32_t)v;
            continue;
        }
        double u = fz_unit(&r);
        if (n->dt == CLF_F32) {
            float *f = p, v;
            double sign = fz_chance(&r, 0.5) ? -1 : 1;
            switch (n->profile) {
            case FZ_PROF_POSITIVE: v = (float)(0.125 + 3.875 * u); break;
            case FZ_PROF_INTEGERS: v = (float)((int)fz_below(&r, 9) - 4); break;
            case FZ_PROF_SPECIAL: v = fz_chance(&r, 0.3) ? special_f32(&r) : (float)(4 * u - 2); break;
            case FZ_PROF_LARGE: v = (float)(sign * pow(10, 20 + 10 * u)); break;
            case FZ_PROF_TINY: v = (float)(sign * pow(10, -45 + 9 * u)); break;
            default: v = (float)(4 * u - 2); break;
            }
            f[i] = v;
        } else if (n->dt == CLF_I32) {
            static const int32_t edges[] = {INT32_MIN, INT32_MAX, 0, -1, 1, INT32_MIN + 1};
            int32_t *q = p;
            if (n->profile == FZ_PROF_SPECIAL)
                q[i] = fz_chance(&r, 0.5) ? edges[fz_below(&r, 6)] : (int32_t)(uint32_t)fz_next(&r);
            else
                q[i] = (int32_t)fz_below(&r, 11) - 5;
        } else if (n->dt == CLF_I64) {
            static const int64_t edges[] = {INT64_MIN, INT64_MAX, 0, -1, 1, INT64_MIN + 1, INT32_MIN, INT32_MAX,
                                            (int64_t)INT32_MAX + 1, (int64_t)INT32_MIN - 1, 1LL << 53, (1LL << 53) + 1};
            int64_t *q = p;
            if (n->profile == FZ_PROF_SPECIAL)
                q[i] = fz_chance(&r, 0.5) ? edges[fz_below(&r, sizeof edges / sizeof edges[0])]
                                          : (int64_t)fz_next(&r);
            else
                q[i] = (int64_t)fz_below(&r, 11) - 5;
        } else {
            uint8_t *b = p;
            if (n->profile == FZ_PROF_SPECIAL)
                b[i] = fz_chance(&r, 0.5) ? 0 : (uint8_t)(1 + fz_below(&r, 255));
            else
                b[i] = (uint8_t)fz_below(&r, 2);
        }
    }
}

/* A copy of f32 data with every finite non-zero value moved by up to 4 ulp
 * (a denormal by up to 4 denormal ulps, keeping its sign: scaling it by
 * 4 * FLT_EPSILON would round back to itself and hide how sensitive an
 * output is to the absolute rounding of denormal products). */
static void perturb(const float *src, float *dst, size_t count, uint64_t seed)
{
    fz_rng r = {seed};
    for (size_t i = 0; i < count; i++) {
        float v = src[i];
        double u = 2 * fz_unit(&r) - 1;
        if (isfinite(v) && v != 0 && fabsf(v) < FLT_MIN) {
            float w = (float)(v + u * 4 * 0x1p-149);
            v = w == 0 || signbit(w) != signbit(v) ? v : w;
        } else if (isfinite(v) && v != 0) {
            v = (float)(v * (1.0 + u * 4.0 * FLT_EPSILON));
        }
        dst[i] = v;
    }
}

static void io_free(fz_io *io)
{
    for (int i = 0; i < io->ninputs; i++) {
        free(io->in[i].data);
        for (int k = 0; k < NPERTURB; k++)
            free(io->in_p[k][i].data);
    }
    for (int i = 0; i < io->noutputs; i++) {
        free(io->out_want[i].data);
        free(io->out_got[i].data);
        free(io->out_unfused[i].data);
        for (int k = 0; k < NPERTURB; k++)
            free(io->out_pert[k][i].data);
    }
}

static bool io_alloc(fz_graph *G, fz_io *io)
{
    memset(io, 0, sizeof *io);
    for (int i = 0; i < G->n; i++) {
        fz_node *n = &G->node[i];
        size_t count = 1;
        for (int d = 0; d < n->orank; d++)
            count *= (size_t)n->oshape[d];
        size_t bytes = count * clf_dtype_size(n->odt) + 1;
        if (n->family == FZ_FAM_INPUT) {
            int k = io->ninputs++;
            snprintf(io->names[k], sizeof io->names[k], "x%d", i);
            io->in_node[k] = i;
            io->in[k] = (clf_host_binding){io->names[k], malloc(bytes)};
            if (!io->in[k].data)
                return false;
            fill(n, io->in[k].data, count);
            for (int p = 0; p < NPERTURB; p++) {
                io->in_p[p][k] = (clf_host_binding){io->names[k], malloc(bytes)};
                if (!io->in_p[p][k].data)
                    return false;
                if (n->dt == CLF_F32)
                    perturb(io->in[k].data, io->in_p[p][k].data, count, n->data_seed + 1 + (uint64_t)p);
                else
                    memcpy(io->in_p[p][k].data, io->in[k].data, bytes);
            }
        }
        if (n->output) {
            int k = io->noutputs++;
            snprintf(io->onames[k], sizeof io->onames[k], "v%d", i);
            io->out_node[k] = i;
            io->out_numel[k] = count;
            clf_host_binding *all[] = {&io->out_want[k], &io->out_got[k], &io->out_unfused[k],
                                       &io->out_pert[0][k], &io->out_pert[1][k]};
            _Static_assert(NPERTURB == 2, "bindings listed above");
            for (size_t j = 0; j < sizeof all / sizeof all[0]; j++) {
                *all[j] = (clf_host_binding){io->onames[k], malloc(bytes)};
                if (!all[j]->data)
                    return false;
                memset(all[j]->data, 0xff, bytes);
            }
        }
    }
    return true;
}

static int fclass(float v) { return isnan(v) ? 2 : isinf(v) ? 1 : 0; }

/* Whether bits h of storage float dt (f16 or bf16) are a NaN. Two NaNs
 * agree whatever their payloads, which neither OpenCL's vstore_half nor
 * ONNX specifies (PoCL stores every NaN with all mantissa bits set; the
 * reference keeps the payload's top bits, as numpy does). */
static bool storage_nan(clf_dtype dt, uint16_t h)
{
    return dt == CLF_F16 ? (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) : (h & 0x7f80u) == 0x7f80u && (h & 0x7fu);
}

/* Compares one output of a device run (got) with want; "label" names the
 * variant. Returns false with a description in why. */
static bool compare_output(const fz_graph *G, const fz_io *io, int k, const void *got, const void *want,
                           const char *label, const char *against, char *why, size_t cap)
{
    const fz_node *n = &G->node[io->out_node[k]];
    size_t count = io->out_numel[k];
    if (n->odt != CLF_F32) {
        size_t es = clf_dtype_size(n->odt);
        const bool storage = n->odt == CLF_F16 || n->odt == CLF_BF16;
        for (size_t i = 0; i < count; i++)
            if (memcmp((const char *)got + i * es, (const char *)want + i * es, es) &&
                !(storage && storage_nan(n->odt, ((const uint16_t *)got)[i]) &&
                  storage_nan(n->odt, ((const uint16_t *)want)[i]))) {
                /* Integers as numbers; f16/bf16 (NaNs aside) and bool as their bits. */
                long long g = n->odt == CLF_I64   ? ((const int64_t *)got)[i]
                              : n->odt == CLF_I32 ? ((const int32_t *)got)[i]
                              : es == 2           ? ((const uint16_t *)got)[i]
                                                  : ((const uint8_t *)got)[i];
                long long w = n->odt == CLF_I64   ? ((const int64_t *)want)[i]
                              : n->odt == CLF_I32 ? ((const int32_t *)want)[i]
                              : es == 2           ? ((const uint16_t *)want)[i]
                                                  : ((const uint8_t *)want)[i];
                snprintf(why, cap, "%s output v%d (%s, %zu elements), element %zu: got %lld, %s %lld", label,
                         io->out_node[k], clf_dtype_name(n->odt), count, i, g, against, w);
                return false;
            }
        return true;
    }
    const float *g = got, *w = want;
    bool exact = n->facts.exact;
    double per_op = n->facts.reduced ? 1e-5 : 4e-6;
    double kterms = n->facts.kmax;
    if (kterms)
        per_op += 2 * kterms * 0x1p-24;
    double rtol = per_op * (n->facts.depth > 0 ? n->facts.depth : 1);
    if (rtol > (kterms ? 2e-3 : 1e-3))
        rtol = kterms ? 2e-3 : 1e-3;
    /* An absolute term at the scale of the output's values (up to 1): a
     * result near 0 by cancellation (log of a sum near 1, x - mean) keeps
     * the absolute error of its operands. */
    double scale = n->facts.mag < 1 ? n->facts.mag : 1;
    for (size_t i = 0; i < count; i++) {
        bool ok;
        double tol = 0;
        if (exact) {
            ok = (isnan(g[i]) && isnan(w[i])) || (g[i] == w[i] && signbit(g[i]) == signbit(w[i]));
        } else {
            bool unstable = false;
            double spread = 0;
            for (int p = 0; p < NPERTURB; p++) {
                float q = ((const float *)io->out_pert[p][k].data)[i];
                unstable |= fclass(q) != fclass(w[i]);
                if (fclass(q) == 0 && fclass(w[i]) == 0 && fabs((double)q - w[i]) > spread)
                    spread = fabs((double)q - w[i]);
            }
            if (unstable)
                continue;
            if (isnan(w[i])) {
                ok = isnan(g[i]);
            } else if (isinf(w[i])) {
                ok = g[i] == w[i];
            } else {
                tol = rtol * (fabs(w[i]) + scale) + 1e-44 + kterms * 0x1p-149 + (16 + 2 * kterms) * spread;
                ok = isfinite(g[i]) && fabs((double)g[i] - w[i]) <= tol;
            }
        }
        if (!ok) {
            snprintf(why, cap,
                     "%s output v%d (f32, %zu elements, %s), element %zu: got %.9g, %s %.9g (tolerance %.3g)", label,
                     io->out_node[k], count, exact ? "exact" : "inexact", i, (double)g[i], against, (double)w[i],
                     tol);
            return false;
        }
    }
    return true;
}

/* Compiles and runs one variant into io->out_got (or out_unfused), then
 * compares with the reference. */
static bool run_variant(clf_context *ctx, const fz_graph *G, const clf_graph *g, fz_io *io,
                        const clf_compile_params *p, const char *label, bool into_unfused, char *why, size_t cap)
{
    clf_executable *exe = NULL;
    clf_status st = clf_compile(ctx, g, p, &exe);
    if (st != CLF_OK) {
        snprintf(why, cap, "%s: clf_compile: %s: %.400s", label, clf_status_name(st), clf_context_last_error(ctx));
        return false;
    }
    clf_host_binding *outs = into_unfused ? io->out_unfused : io->out_got;
    clf_host_binding bind[FZ_MAX_NODES];
    for (int k = 0; k < io->noutputs; k++) {
        size_t bytes = io->out_numel[k] * clf_dtype_size(G->node[io->out_node[k]].odt);
        memset(outs[k].data, 0xff, bytes);
        bind[k] = (clf_host_binding){outs[k].name, bytes ? outs[k].data : NULL};
    }
    st = clf_run_host(exe, (size_t)io->ninputs, io->in, (size_t)io->noutputs, bind);
    bool ok = true;
    if (st != CLF_OK) {
        snprintf(why, cap, "%s: clf_run_host: %s: %.400s", label, clf_status_name(st), clf_context_last_error(ctx));
        ok = false;
    }
    for (int k = 0; ok && k < io->noutputs; k++)
        ok = compare_output(G, io, k, outs[k].data, io->out_want[k].data, label, "reference", why, cap);
    clf_executable_destroy(&exe);
    return ok;
}

/* Whether G has a node whose kernel has a CPU and a GPU form (reductions,
 * matmul and gemm). */
static bool has_styles(const fz_graph *G)
{
    for (int i = 0; i < G->n; i++) {
        fz_tol_class t = fz_families[G->node[i].family].tol;
        if (t == FZ_TOL_REDUCTION || t == FZ_TOL_CONTRACTION || G->node[i].family == FZ_FAM_ARG)
            return true;
    }
    return false;
}

fz_verdict fz_check(clf_context *ctx, fz_graph *G, const fz_options *o, char *why, size_t cap)
{
    fz_built b;
    char msg[512];
    why[0] = 0;
    if (!fz_build(G, &b, msg, sizeof msg)) {
        clf_graph_destroy(&b.g);
        snprintf(why, cap, "the builder refused the graph: %s", msg);
        return FZ_INVALID; /* the generator's or shrinker's doing, not a finding */
    }
    fz_io io;
    bool ok = io_alloc(G, &io);
    if (!ok) {
        snprintf(why, cap, "out of host memory");
        io_free(&io);
        clf_graph_destroy(&b.g);
        return FZ_INVALID;
    }
    clf_status st = clf_reference_run(b.g, (size_t)io.ninputs, io.in, (size_t)io.noutputs, io.out_want, msg, sizeof msg);
    for (int p = 0; st == CLF_OK && p < NPERTURB; p++)
        st = clf_reference_run(b.g, (size_t)io.ninputs, io.in_p[p], (size_t)io.noutputs, io.out_pert[p], msg,
                               sizeof msg);
    if (st != CLF_OK) {
        snprintf(why, cap, "clf_reference_run: %s: %s", clf_status_name(st), msg);
        ok = false;
        goto done;
    }
    ok = run_variant(ctx, G, b.g, &io, NULL, "fused", false, why, cap);
    if (ok && o->unfused) {
        ok = run_variant(ctx, G, b.g, &io, clf_compile_params(.disable_fusion = true), "unfused", true, why, cap);
        /* Fused against unfused, with the reference's tolerances. */
        for (int k = 0; ok && k < io.noutputs; k++)
            ok = compare_output(G, &io, k, io.out_got[k].data, io.out_unfused[k].data, "fused", "unfused", why, cap);
    }
    if (ok && o->styles && has_styles(G)) {
        ok = run_variant(ctx, G, b.g, &io, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_CPU), "fused (CPU style)",
                         false, why, cap);
        if (ok)
            ok = run_variant(ctx, G, b.g, &io, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU),
                             "fused (GPU style)", false, why, cap);
    }
done:
    io_free(&io);
    clf_graph_destroy(&b.g);
    return ok ? FZ_PASS : FZ_FAIL;
}
