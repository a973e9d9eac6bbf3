/* Suite "attention": softmax(Q·Kᵀ·scale + mask)·V, built by clf_attention,
 * by hand from primitives the way exporters write it, and loaded from ONNX
 * text, checked against the reference interpreter on the default device.
 *
 * Every graph runs four ways, fused and with disable_fusion, each in the
 * CPU and the GPU form of the kernels (both forced on PoCL), and every
 * output must agree with the reference: f32 within rtol 1e-4, atol 1e-5;
 * f16 and bf16 within a few ulps of the storage type. The reference's own
 * answers are checked too where they are known without it: clf_attention
 * against a plain double-precision attention on the host, NaN rows where
 * no key is visible (as PyTorch), the mean of V where a finite fill masks
 * a whole row.
 *
 * The fused plan's kernel count is asserted in one place,
 * assert_kernel_counts(), at the end of each test, after every correctness
 * check has passed: one kernel for prefill-shaped attention (the planner's
 * ATTENTION region), at most two for decode (Sq <= 4 with Sk >= 1024: a
 * split over the keys and a combine), one where the output is transposed
 * back to [B, S, H*D] (the attention kernel stores it there: a permuted
 * store), two where one more kernel follows (a GEMM reading that
 * transposed output, or a copy through a view that moves elements other
 * than by a permutation: a slice, a broadcast), more than one where the
 * scores or probabilities are graph outputs themselves (no fusion then).
 *
 * Shapes are small and shared between cases where possible (B = 2, H = 4,
 * S = 32, D = 64), so that PoCL's and libclfuse's caches, shared by the
 * forked cases, build each unfused kernel once. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "graph/graph_internal.h"
#include "runtime/runtime_internal.h"
#include "test_e2e.h"
#include "test_support.h"

/* ---- Tolerances ---------------------------------------------------------- */

/* f32: the GEMMs and the row sums accumulate in f32 against the
 * reference's f64. f16 and bf16: 4 ulps of the storage type relative, and
 * 4 ulps at 1/2 absolute for outputs near 0 (weighted means of values in
 * [-1, 1) that cancel): the reference rounds the scores, the logits and
 * the weights node by node, the fused forms keep the softmax in f32 and
 * the tensor-core form rounds the unnormalised weights to the operands'
 * type instead, which moves an output by a few ulps of its inputs' scale
 * (1.4 and 1.2 ulps at 1/2 seen on the H200 in f16 and bf16). */
static double rtol_of(clf_dtype dt)
{
    return dt == CLF_F16 ? 4 * 0x1p-11 : dt == CLF_BF16 ? 4 * 0x1p-8 : 1e-4;
}
static double atol_of(clf_dtype dt)
{
    return dt == CLF_F16 ? 4 * 0x1p-12 : dt == CLF_BF16 ? 4 * 0x1p-9 : 1e-5;
}

/* ---- Kernel counts: the one place they are asserted ---------------------- */

typedef enum want_kernels {
    PREFILL,   /* exactly 1 (an output transposed back to [B, S, H*D]
                * included: a permuted store) */
    PROJECTED, /* exactly 2: the q, k, v projections' one GEMM, then
                * attention */
    THREE,     /* exactly 3: the projections' GEMM, a pointwise kernel
                * storing q and k, attention */
    TWO,       /* exactly 2: attention, then a GEMM reading its output or a
                * copy of it through a slice or a broadcast */
    DECODE,    /* Sq <= 4, Sk >= 1024: at most 2 */
    NOT_FUSED, /* scores or probabilities are outputs: more than 1 */
} want_kernels;

static const char *want_str(want_kernels w)
{
    return w == PREFILL     ? "1 (prefill)"
           : w == PROJECTED ? "2 (the projections' GEMM, then attention)"
           : w == THREE     ? "3 (the projections' GEMM, q and k stored, attention)"
           : w == TWO      ? "2 (attention, then a GEMM or a copy)"
           : w == DECODE   ? "<= 2 (decode)"
                           : "> 1 (scores are an output)";
}

static bool kernels_ok(size_t got, want_kernels w)
{
    switch (w) {
    case PREFILL: return got == 1;
    case PROJECTED:
    case TWO: return got == 2;
    case THREE: return got == 3;
    case DECODE: return got >= 1 && got <= 2;
    case NOT_FUSED: return got > 1;
    }
    return false;
}

/* The counts seen so far in this (forked) test, asserted by
 * assert_kernel_counts() once every correctness check has passed, so that
 * a wrong count never hides a wrong result. */
static char kernel_log[4096];
static size_t kernel_log_len;
static int kernel_mismatches;

static void note_kernels(const char *label, const char *form, size_t got, want_kernels w)
{
    bool ok = kernels_ok(got, w);
    kernel_mismatches += !ok;
    if (kernel_log_len < sizeof kernel_log) {
        int n = snprintf(kernel_log + kernel_log_len, sizeof kernel_log - kernel_log_len, "\n  %s %s (%s form): %zu kernels, want %s",
                         ok ? "  " : "!!", label, form, got, want_str(w));
        if (n > 0)
            kernel_log_len += (size_t)n;
    }
}

static void assert_kernel_counts(void)
{
    int bad = kernel_mismatches;
    kernel_mismatches = 0;
    kernel_log_len = 0;
    ck_assert_msg(bad == 0, "fused kernel counts (!! marks the wrong ones; every result was right):%s", kernel_log);
    kernel_log[0] = '\0';
}

/* ---- Running a graph four ways against the reference --------------------- */

/* The reference's outputs, kept for checks of their own. */
typedef struct ref_outputs {
    size_t n;
    char name[8][64];
    clf_dtype dtype[8];
    int rank[8];
    int64_t shape[8][CLF_MAX_RANK];
    size_t numel[8];
    void *data[8];
} ref_outputs;

static void ref_free(ref_outputs *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->data[i]);
    memset(r, 0, sizeof *r);
}

static const void *ref_get(const ref_outputs *r, const char *name)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->name[i], name) == 0)
            return r->data[i];
    ck_abort_msg("no output %s", name);
    return NULL;
}

static const struct variant {
    const char *name;
    bool unfused;
    clf_kernel_style style;
} VARIANTS[] = {
    {"fused, CPU", false, CLF_KERNEL_STYLE_CPU},
    {"fused, GPU", false, CLF_KERNEL_STYLE_GPU},
    {"unfused, CPU", true, CLF_KERNEL_STYLE_CPU},
    {"unfused, GPU", true, CLF_KERNEL_STYLE_GPU},
};

/* Runs g fused and unfused in both kernel forms, every output poisoned
 * first and compared with the reference within the tolerance of its dtype;
 * notes the fused kernel counts against want under label. Gives the
 * reference outputs in *ref when ref is not NULL (free with ref_free). */
static void check_graph(clf_context *ctx, const char *label, const clf_graph *g, const e2e_inputs *in,
                        want_kernels want, ref_outputs *ref)
{
    const char *gmsg = "";
    ck_assert_msg(clf_graph_status(g, &gmsg) == CLF_OK, "%s: graph: %s", label, gmsg);
    ref_outputs local = {0};
    ref_outputs *r = ref ? ref : &local;
    memset(r, 0, sizeof *r);
    void *got[8];
    clf_host_binding want_b[8], got_b[8];
    size_t bytes[8];
    size_t nv = sizeof VARIANTS / sizeof VARIANTS[0];
    for (size_t v = 0; v < nv; v++) {
        clf_executable *exe = NULL;
        clf_status st = clf_compile(ctx, g, clf_compile_params(.disable_fusion = VARIANTS[v].unfused,
                                                               .kernel_style = VARIANTS[v].style),
                                    &exe);
        ck_assert_msg(st == CLF_OK, "%s (%s): clf_compile: %s: %s", label, VARIANTS[v].name, clf_status_name(st),
                      clf_context_last_error(ctx));
        if (v == 0) {
            /* The outputs, and the reference once. */
            r->n = clf_executable_output_count(exe);
            ck_assert_uint_le(r->n, 8);
            for (size_t i = 0; i < r->n; i++) {
                const char *name = NULL;
                ck_assert_int_eq(clf_executable_output(exe, i, &name, &r->dtype[i], &r->rank[i], r->shape[i]), CLF_OK);
                ck_assert_uint_lt(strlen(name), sizeof r->name[i]);
                strcpy(r->name[i], name); /* the executable's copy dies with it */
                r->numel[i] = (size_t)e2e_numel(r->rank[i], r->shape[i]);
                bytes[i] = r->numel[i] * clf_dtype_size(r->dtype[i]);
                r->data[i] = malloc(bytes[i] + 1);
                got[i] = malloc(bytes[i] + 1);
                ck_assert(r->data[i] && got[i]);
                memset(r->data[i], 0xff, bytes[i]);
                want_b[i] = (clf_host_binding){r->name[i], r->data[i]};
                got_b[i] = (clf_host_binding){r->name[i], bytes[i] ? got[i] : NULL};
            }
            char msg[512] = "";
            st = clf_reference_run(g, in->n, in->b, r->n, want_b, msg, sizeof msg);
            ck_assert_msg(st == CLF_OK, "%s: clf_reference_run: %s: %s", label, clf_status_name(st), msg);
        }
        /* The GPU forms run twice: the decode form's counters, which its
         * launch leaves at 0, serve the next. */
        const int runs = VARIANTS[v].style == CLF_KERNEL_STYLE_GPU ? 2 : 1;
        for (int run = 0; run < runs; run++) {
            for (size_t i = 0; i < r->n; i++)
                memset(got[i], 0xff, bytes[i]);
            st = clf_run_host(exe, in->n, in->b, r->n, got_b);
            ck_assert_msg(st == CLF_OK, "%s (%s): clf_run_host: %s: %s", label, VARIANTS[v].name,
                          clf_status_name(st), clf_context_last_error(ctx));
            for (size_t i = 0; i < r->n; i++) {
                char why[256] = "";
                ck_assert_msg(clf_test_close(r->dtype[i], got[i], r->data[i], r->numel[i], rtol_of(r->dtype[i]),
                                             atol_of(r->dtype[i]), why, sizeof why),
                              "%s (%s, run %d): output \"%s\" (%s, %zu elements) differs from the reference: %s",
                              label, VARIANTS[v].name, run + 1, r->name[i], clf_dtype_name(r->dtype[i]),
                              r->numel[i], why);
            }
        }
        if (!VARIANTS[v].unfused) {
            clf_plan_stats s;
            ck_assert_int_eq(clf_executable_stats(exe, &s), CLF_OK);
            note_kernels(label, VARIANTS[v].style == CLF_KERNEL_STYLE_GPU ? "GPU" : "CPU", (size_t)s.kernels, want);
            /* Every attention form is one launch (the decode form combines
             * a row's chunks in its last work-group). */
            ck_assert_msg(want == NOT_FUSED || s.launches == s.kernels, "%s (%s): %llu launches for %llu kernels",
                          label, VARIANTS[v].name, (unsigned long long)s.launches, (unsigned long long)s.kernels);
        }
        clf_executable_destroy(&exe);
    }
    for (size_t i = 0; i < r->n; i++)
        free(got[i]);
    if (r == &local)
        ref_free(r);
}

/* ---- An attention computed apart from the library ------------------------ */

/* softmax(q kT scale + bias) v in double on the host, for f32 q [n, sq, d]
 * and k [n / group, sk, d], v [n / group, sk, dv] (query head h reads
 * key/value head h / group), bias NULL or [n, sq, sk] (-inf: masked);
 * causal as clf_attention has it (j <= i + sk - sq). out is [n, sq, dv]. */
static void host_attention(const float *q, const float *k, const float *v, const double *bias, int64_t n,
                           int64_t group, int64_t sq, int64_t sk, int64_t d, int64_t dv, double scale, bool causal,
                           double *out)
{
    double *s = malloc((size_t)(sk ? sk : 1) * sizeof *s);
    ck_assert_ptr_nonnull(s);
    for (int64_t h = 0; h < n; h++) {
        const float *kh = k + (h / group) * sk * d, *vh = v + (h / group) * sk * dv;
        for (int64_t i = 0; i < sq; i++) {
            double m = -INFINITY;
            for (int64_t j = 0; j < sk; j++) {
                double acc = 0;
                for (int64_t c = 0; c < d; c++)
                    acc += (double)q[(h * sq + i) * d + c] * kh[j * d + c];
                acc *= scale;
                if (bias)
                    acc += bias[(h * sq + i) * sk + j];
                if (causal && j > i + sk - sq)
                    acc = -INFINITY;
                s[j] = acc;
                m = isnan(acc) || isnan(m) ? NAN : fmax(m, acc);
            }
            double sum = 0;
            for (int64_t j = 0; j < sk; j++) {
                s[j] = exp(s[j] - m);
                sum += s[j];
            }
            for (int64_t c = 0; c < dv; c++) {
                double acc = 0;
                for (int64_t j = 0; j < sk; j++)
                    acc += s[j] / sum * vh[j * dv + c];
                out[(h * sq + i) * dv + c] = acc;
            }
        }
    }
    free(s);
}

/* The reference's f32 output against host_attention's (NaN where it has
 * NaN), within rtol 1e-4 and atol 1e-5. */
static void check_against_host(const char *label, const float *got, const double *want, size_t numel)
{
    for (size_t i = 0; i < numel; i++) {
        if (isnan(want[i])) {
            ck_assert_msg(isnan(got[i]), "%s: element %zu is %g; a plain attention gives NaN", label, i, got[i]);
            continue;
        }
        ck_assert_msg(fabs(got[i] - want[i]) <= 1e-5 + 1e-4 * fabs(want[i]),
                      "%s: element %zu is %.9g; a plain attention gives %.9g", label, i, got[i], want[i]);
    }
}

/* host_attention of the inputs q, k and v (n heads of sq queries over sk
 * keys of d), their scores biased by bias ([n, sq, sk], -inf for a hidden
 * key; NULL: none): one query head a KV head, scale 1/8 (D = 64), no
 * causal flag. Heap; the caller frees it. */
static double *plain_host_of(const e2e_inputs *in, const double *bias, int64_t n, int64_t sq, int64_t sk, int64_t d)
{
    double *host = malloc(sizeof(double) * (size_t)(n * sq * d));
    ck_assert_ptr_nonnull(host);
    host_attention(e2e_data(in, "q"), e2e_data(in, "k"), e2e_data(in, "v"), bias, n, 1, sq, sk, d, d, 0.125, false,
                   host);
    return host;
}

/* The fused output got against plain_host_of's. */
static void check_biased(const char *label, const e2e_inputs *in, const float *got, const double *bias, int64_t n,
                         int64_t sq, int64_t sk, int64_t d)
{
    double *host = plain_host_of(in, bias, n, sq, sk, d);
    check_against_host(label, got, host, (size_t)(n * sq * d));
    free(host);
}

/* ---- Graph building helpers ----------------------------------------------- */

static clf_tensor in4(clf_graph *g, e2e_inputs *in, const char *name, clf_dtype dt, int64_t a, int64_t b, int64_t c,
                      int64_t d)
{
    int64_t s[4] = {a, b, c, d};
    return e2e_input(g, in, name, dt, 4, s, -1.0, 1.0);
}

static clf_tensor scalar_f32(clf_graph *g, double v) { return clf_scalar(g, CLF_F32, v); }

/* kT: the last two axes of a rank-4 k swapped. */
static clf_tensor transpose_last2(clf_graph *g, clf_tensor k)
{
    static const int perm[4] = {0, 1, 3, 2};
    return clf_transpose(g, k, 4, perm);
}

/* clf_attention (no mask, the default scale) of inputs q [b, h, sq, d],
 * k [b, h, sk, d] and v [b, h, sk, dv] of dtype dt (drawn in that order),
 * as the graph's output "out". */
static void plain_attention(clf_graph *g, e2e_inputs *in, clf_dtype dt, int64_t b, int64_t h, int64_t sq, int64_t sk,
                            int64_t d, int64_t dv, bool causal)
{
    clf_tensor q = in4(g, in, "q", dt, b, h, sq, d);
    clf_tensor k = in4(g, in, "k", dt, b, h, sk, d);
    clf_tensor v = in4(g, in, "v", dt, b, h, sk, dv);
    ck_assert_int_eq(clf_graph_output(g, "out", clf_attention(g, q, k, v, CLF_TENSOR_INVALID, 0, causal)), CLF_OK);
}

/* One attention built with clf_attention on f32 q [b, h, sq, d] and k, v
 * [b, h, sk, d] / [b, h, sk, dv], no mask, checked four ways and against
 * host_attention. */
static void check_plain(clf_context *ctx, const char *label, int64_t b, int64_t h, int64_t sq, int64_t sk, int64_t d,
                        int64_t dv, bool causal, want_kernels want)
{
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    plain_attention(g, &in, CLF_F32, b, h, sq, sk, d, dv, causal);
    ref_outputs ref;
    check_graph(ctx, label, g, &in, want, &ref);
    size_t numel = (size_t)(b * h * sq * dv);
    double *host = malloc(numel * sizeof *host + 1);
    ck_assert_ptr_nonnull(host);
    host_attention(e2e_data(&in, "q"), e2e_data(&in, "k"), e2e_data(&in, "v"), NULL, b * h, 1, sq, sk, d, dv,
                   1.0 / sqrt((double)d), causal, host);
    check_against_host(label, ref_get(&ref, "out"), host, numel);
    free(host);
    ref_free(&ref);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}

/* ---- clf_attention --------------------------------------------------------- */

/* The node sequence the planner recognises (graph_attention.c): the
 * builder must keep it. Leaves (inputs, constants, scalars) are left out. */
static void op_sequence(const clf_graph *g, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < g->nnodes; i++) {
        const clf__node *n = clf__graph_node(g, i);
        if (n->op == CLF__OP_INPUT || n->op == CLF__OP_CONSTANT)
            continue;
        int w = snprintf(buf + len, cap - len, "%s%s", len ? " " : "", clf__node_op_name(n));
        ck_assert(w > 0 && (size_t)w < cap - len);
        len += (size_t)w;
    }
}

START_TEST(builder_records_the_pattern)
{
    static const struct {
        clf_dtype dt;
        double scale;
        bool causal;
        int mask; /* 0 none, 1 bool, 2 float */
        const char *want;
    } cases[] = {
        {CLF_F32, 1.0, false, 0, "transpose matmul max sub exp sum div matmul"},
        {CLF_F32, 0.0, false, 0, "transpose matmul mul max sub exp sum div matmul"},
        {CLF_F32, 0.5, true, 0, "transpose matmul mul where max sub exp sum div matmul"},
        {CLF_F32, 0.0, true, 1, "transpose matmul mul where where max sub exp sum div matmul"},
        {CLF_F32, 0.0, false, 2, "transpose matmul mul add max sub exp sum div matmul"},
        {CLF_F16, 0.0, true, 2, "transpose matmul mul add where cast max sub exp sum div cast matmul"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        clf_graph *g = clf_graph_create();
        int64_t qs[4] = {2, 4, 8, 16}, ks[4] = {2, 1, 10, 16}, ms[4] = {2, 1, 8, 10};
        clf_tensor q = clf_input(g, "q", cases[c].dt, 4, qs);
        clf_tensor k = clf_input(g, "k", cases[c].dt, 4, ks);
        clf_tensor v = clf_input(g, "v", cases[c].dt, 4, ks);
        clf_tensor m = cases[c].mask == 0 ? CLF_TENSOR_INVALID
                       : clf_input(g, "m", cases[c].mask == 1 ? CLF_BOOL : cases[c].dt, 4, ms);
        size_t before = clf_graph_node_count(g);
        clf_tensor out = clf_attention(g, q, k, v, m, cases[c].scale, cases[c].causal);
        const char *msg;
        ck_assert_msg(clf_graph_status(g, &msg) == CLF_OK, "%s", msg);
        ck_assert(clf_tensor_valid(out));
        ck_assert_uint_gt(clf_graph_node_count(g), before);
        char seq[512];
        op_sequence(g, seq, sizeof seq);
        ck_assert_msg(strcmp(seq, cases[c].want) == 0, "case %zu: %s, want %s", c, seq, cases[c].want);
        /* The result: [2, 4, 8, 16] of q's dtype (k and v broadcast over heads). */
        int rank;
        int64_t shape[CLF_MAX_RANK];
        clf_dtype dt;
        ck_assert_int_eq(clf_tensor_shape(g, out, &rank, shape), CLF_OK);
        ck_assert_int_eq(clf_tensor_dtype(g, out, &dt), CLF_OK);
        ck_assert_int_eq(rank, 4);
        ck_assert(shape[0] == 2 && shape[1] == 4 && shape[2] == 8 && shape[3] == 16);
        ck_assert_int_eq(dt, cases[c].dt);
        /* The scale's scalar is of the scores' dtype; the causal constant is
         * bool [Sq, Sk] with C[i][j] = j <= i + Sk - Sq. */
        for (uint32_t i = 0; i < g->nnodes; i++) {
            const clf__node *n = clf__graph_node(g, i);
            if (n->op == CLF__OP_MUL) {
                const clf__node *s = clf__graph_node(g, n->inputs[1]);
                ck_assert_int_eq(s->op, CLF__OP_CONSTANT);
                ck_assert_int_eq(s->dtype, cases[c].dt);
                ck_assert_int_eq(s->rank, 0);
                double want = cases[c].scale ? cases[c].scale : 0.25;
                ck_assert(s->attr.constant.scalar == want);
            }
            if (n->op == CLF__OP_CONSTANT && n->dtype == CLF_BOOL) {
                ck_assert_int_eq(n->rank, 2);
                ck_assert(n->shape[0] == 8 && n->shape[1] == 10);
                const uint8_t *d = n->data;
                for (int a = 0; a < 8; a++)
                    for (int b = 0; b < 10; b++)
                        ck_assert_int_eq(d[a * 10 + b], b <= a + 2);
            }
        }
        clf_graph_destroy(&g);
    }
}
END_TEST

START_TEST(no_mask)
{
    clf_context *ctx = clf_test_context();
    check_plain(ctx, "no mask [2,4,32,64]", 2, 4, 32, 32, 64, 64, false, PREFILL);
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

START_TEST(causal_square)
{
    clf_context *ctx = clf_test_context();
    static const int64_t S[] = {1, 7, 64};
    for (size_t i = 0; i < sizeof S / sizeof S[0]; i++) {
        char label[64];
        snprintf(label, sizeof label, "causal S = %lld", (long long)S[i]);
        check_plain(ctx, label, 2, 2, S[i], S[i], 32, 32, true, PREFILL);
    }
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

START_TEST(causal_long_sequence)
{
    clf_context *ctx = clf_test_context();
    check_plain(ctx, "causal S = 1000", 1, 1, 1000, 1000, 64, 64, true, PREFILL);
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* One query against a long KV cache (causal with Sq = 1 sees every key). */
START_TEST(decode)
{
    clf_context *ctx = clf_test_context();
    check_plain(ctx, "decode Sq = 1, Sk = 4096", 1, 4, 1, 4096, 64, 64, false, DECODE);
    check_plain(ctx, "decode Sq = 1, Sk = 1000, causal", 1, 4, 1, 1000, 64, 64, true, DECODE);
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* Sq != Sk: the causal diagonal is aligned to the bottom right. Sq < Sk is
 * a chunk of queries after a KV cache; Sq > Sk leaves the first Sq - Sk
 * queries without a key: NaN rows. */
START_TEST(causal_bottom_right)
{
    clf_context *ctx = clf_test_context();
    check_plain(ctx, "causal Sq = 5, Sk = 12", 2, 2, 5, 12, 32, 32, true, PREFILL);
    check_plain(ctx, "causal Sq = 12, Sk = 5", 2, 2, 12, 5, 32, 32, true, PREFILL);

    /* The last query of Sq < Sk sees every key: it is the plain attention's
     * last row; the first sees Sk - Sq + 1 keys. */
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor q = in4(g, &in, "q", CLF_F32, 1, 1, 3, 16);
    clf_tensor k = in4(g, &in, "k", CLF_F32, 1, 1, 8, 16);
    clf_tensor v = in4(g, &in, "v", CLF_F32, 1, 1, 8, 16);
    ck_assert_int_eq(clf_graph_output(g, "c", clf_attention(g, q, k, v, CLF_TENSOR_INVALID, 0, true)), CLF_OK);
    ck_assert_int_eq(clf_graph_output(g, "p", clf_attention(g, q, k, v, CLF_TENSOR_INVALID, 0, false)), CLF_OK);
    float c[48], p[48];
    clf_host_binding out[2] = {{"c", c}, {"p", p}};
    char msg[256];
    ck_assert_int_eq(clf_reference_run(g, in.n, in.b, 2, out, msg, sizeof msg), CLF_OK);
    for (int d = 0; d < 16; d++)
        ck_assert_float_eq(c[2 * 16 + d], p[2 * 16 + d]);
    ck_assert(memcmp(c, p, sizeof c) != 0);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

START_TEST(head_sizes)
{
    clf_context *ctx = clf_test_context();
    static const int64_t D[][2] = {{32, 32}, {80, 80}, {128, 128}, {64, 40}}; /* 64 is every other case's */
    for (size_t i = 0; i < sizeof D / sizeof D[0]; i++) {
        char label[64];
        snprintf(label, sizeof label, "D = %lld, Dv = %lld", (long long)D[i][0], (long long)D[i][1]);
        check_plain(ctx, label, 1, 2, 33, 33, D[i][0], D[i][1], false, PREFILL);
    }
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* The CPU form's blocks and tails (attention_cpu.cl): several query rows a
 * work-item with Sq not a multiple of them (the last block repeats its last
 * row and stores it once), causal rows of one block seeing different
 * numbers of keys, fewer keys than a fold group, D and Dv not multiples of
 * the vector width (zeros past them). */
START_TEST(cpu_form_blocks_and_tails)
{
    clf_context *ctx = clf_test_context();
    static const struct {
        int64_t b, h, sq, sk, d, dv;
        bool causal;
    } C[] = {
        {2, 4, 10, 10, 20, 12, true}, /* 3 blocks of 4 rows, the last with 2; no group before row 7 */
        {1, 8, 37, 53, 80, 80, true}, /* bottom-right diagonal, groups and single keys */
        {1, 8, 5, 3, 16, 8, false},   /* 3 keys: no group of 8 */
        {3, 3, 7, 29, 24, 40, false},
    };
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) {
        char label[96];
        snprintf(label, sizeof label, "B %lld H %lld Sq %lld Sk %lld D %lld Dv %lld%s", (long long)C[i].b,
                 (long long)C[i].h, (long long)C[i].sq, (long long)C[i].sk, (long long)C[i].d, (long long)C[i].dv,
                 C[i].causal ? " causal" : "");
        check_plain(ctx, label, C[i].b, C[i].h, C[i].sq, C[i].sk, C[i].d, C[i].dv, C[i].causal, PREFILL);
    }
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* The GPU form with a last block of query rows short of a work-group
 * (idle work-items) and more than one tile of keys, without a causal mask
 * (and heads not a multiple of 4, causal):
 * PoCL 3.1 gave garbage for every row (the `active` test around the tile
 * fold, the same every iteration, was taken out of the loop of barriers);
 * oclgrind found the kernel right. */
START_TEST(gpu_form_partial_block_many_tiles)
{
    clf_context *ctx = clf_test_context();
    check_plain(ctx, "Sq 37 (of a block of 64), Sk 70 (two tiles)", 2, 2, 37, 70, 20, 12, false, PREFILL);
    check_plain(ctx, "Sq 100, Sk 100", 1, 2, 100, 100, 16, 16, false, PREFILL);
    /* heads not a multiple of 4: tiles loaded by four scalar loads a piece */
    check_plain(ctx, "Sq 37, Sk 70 causal, D 30, Dv 18", 1, 2, 37, 70, 30, 18, true, PREFILL);
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* The GPU form's rows meeting across work-items by butterflies (GPU_SHFL:
 * PTX shuffles on NVIDIA's driver, its default there; elsewhere emulated
 * through local memory): rows spread over 8, 4 and 2 work-items (heads
 * of 64 and 128, a work-group limit of 16: 4 rows x 4 columns of keys),
 * causal and not, several tiles, rows of a last block past Sq; and the
 * form reading the next tile ahead (GPU_PREFETCH, through local memory). */
START_TEST(gpu_form_shuffles)
{
    clf_context *ctx = clf_test_context();
    if (!clf_test_on_nvidia(ctx))
        ck_assert_int_eq(setenv("CLFUSE_BUILD_OPTIONS", "-DGPU_SHFL=1 -DGPU_SHFL_EMULATE=1", 1), 0);
    check_plain(ctx, "Sq 37, Sk 70, D 64", 2, 2, 37, 70, 64, 64, false, PREFILL);
    check_plain(ctx, "Sq 70 causal, D 128 (Dv 100)", 1, 2, 70, 70, 128, 100, true, PREFILL);
    /* with the next tile read ahead into registers (GPU_PREFETCH) */
    ck_assert_int_eq(setenv("CLFUSE_BUILD_OPTIONS", "-DGPU_PREFETCH=1", 1), 0);
    check_plain(ctx, "read ahead: Sq 37, Sk 70 causal, D 64 (Dv 40)", 2, 2, 37, 70, 64, 40, true, PREFILL);
    if (!clf_test_on_nvidia(ctx))
        ck_assert_int_eq(setenv("CLFUSE_BUILD_OPTIONS", "-DGPU_SHFL=1 -DGPU_SHFL_EMULATE=1", 1), 0);
    else
        unsetenv("CLFUSE_BUILD_OPTIONS");
    ctx->max_local = 16; /* (the schedule's limit) */
    check_plain(ctx, "a work-group of 16: Sq 37, Sk 70, D 32", 1, 2, 37, 70, 32, 32, true, PREFILL);
    clf_context_destroy(&ctx);
    unsetenv("CLFUSE_BUILD_OPTIONS");
    assert_kernel_counts();
}
END_TEST

/* Each text of bad as CLFUSE_ATTENTION_TILE fails the compile of a plain
 * attention of dt (GPU style), with an error naming the variable. */
static void check_tiles_refused(clf_context *ctx, clf_dtype dt, const char *const *bad, size_t n)
{
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    plain_attention(g, &in, dt, 1, 2, 40, 40, 40, 24, false);
    for (size_t b = 0; b < n; b++) {
        ck_assert_int_eq(setenv("CLFUSE_ATTENTION_TILE", bad[b], 1), 0);
        clf_executable *exe = NULL;
        clf_status st = clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU), &exe);
        ck_assert_msg(st != CLF_OK, "CLFUSE_ATTENTION_TILE=%s: compiled", bad[b]);
        ck_assert_msg(strstr(clf_context_last_error(ctx), "CLFUSE_ATTENTION_TILE") != NULL,
                      "CLFUSE_ATTENTION_TILE=%s: the error does not name it: %s", bad[b],
                      clf_context_last_error(ctx));
    }
    unsetenv("CLFUSE_ATTENTION_TILE");
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}

/* The GPU form's tiling pinned (CLFUSE_ATTENTION_TILE=fma,rows,keys,
 * keys_per_item) is the one its kernels run, and gives the reference's
 * results: 8 rows over tiles of 64 keys, 16 a work-item (4 across a tile),
 * and 16 rows over 8 keys, one a work-item (32 work-items: llvmpipe's
 * limit); text that is not a tiling, or one the form cannot run, is a
 * compile error naming the variable. */
START_TEST(gpu_form_pinned_tilings)
{
    clf_context *ctx = clf_test_context();
    static const char *const tiles[] = {"fma,8,64,16", "fma,16,8,1"};
    static const char *const lines[] = {"#define BQ 8\n#define BK 64\n#define TK 16\n",
                                        "#define BQ 16\n#define BK 8\n#define TK 1\n"};
    for (size_t t = 0; t < 2; t++) {
        ck_assert_int_eq(setenv("CLFUSE_ATTENTION_TILE", tiles[t], 1), 0);
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        plain_attention(g, &in, CLF_F32, 1, 2, 37, 70, 40, 24, t == 1);
        e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_GPU, 1e-4, 1e-5);
        clf_executable *exe = NULL;
        ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU), &exe), CLF_OK);
        ck_assert_uint_eq(clf_executable_kernel_count(exe), 1);
        const char *src = clf_executable_kernel_source(exe, 0);
        ck_assert_msg(src && strstr(src, lines[t]), "%s: the kernel's tiling is not the pinned one", tiles[t]);
        clf_executable_destroy(&exe);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    static const char *const bad[] = {"fma,32,16", "fma,30,16,2", "fma,32,24,8", "fma,32,16,2,", "fma,32,16,0"};
    check_tiles_refused(ctx, CLF_F32, bad, sizeof bad / sizeof bad[0]);
    clf_context_destroy(&ctx);
}
END_TEST

/* k and v with a head axis of 1 serve every query head (MQA), and
 * [B, Hkv, 1, Sk, D] serves G query heads each ([B, Hkv, G, Sq, D], GQA). */
START_TEST(kv_heads_broadcast)
{
    clf_context *ctx = clf_test_context();
    for (int gqa = 0; gqa < 2; gqa++) {
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        int64_t qs[5] = {1, 2, 4, 32, 64}, ks[5] = {1, 2, 1, 32, 64};
        int64_t mq[4] = {1, 8, 32, 64}, mk[4] = {1, 1, 32, 64};
        clf_tensor q = gqa ? e2e_input(g, &in, "q", CLF_F32, 5, qs, -1, 1) : e2e_input(g, &in, "q", CLF_F32, 4, mq, -1, 1);
        clf_tensor k = gqa ? e2e_input(g, &in, "k", CLF_F32, 5, ks, -1, 1) : e2e_input(g, &in, "k", CLF_F32, 4, mk, -1, 1);
        clf_tensor v = gqa ? e2e_input(g, &in, "v", CLF_F32, 5, ks, -1, 1) : e2e_input(g, &in, "v", CLF_F32, 4, mk, -1, 1);
        ck_assert_int_eq(clf_graph_output(g, "out", clf_attention(g, q, k, v, CLF_TENSOR_INVALID, 0, true)), CLF_OK);
        ref_outputs ref;
        check_graph(ctx, gqa ? "GQA by broadcast (2 kv heads, 4 each)" : "MQA by broadcast (8 heads)", g, &in, PREFILL,
                    &ref);
        double host[8 * 32 * 64];
        host_attention(e2e_data(&in, "q"), e2e_data(&in, "k"), e2e_data(&in, "v"), NULL, 8, gqa ? 4 : 8, 32, 32, 64, 64,
                       0.125, true, host);
        check_against_host("kv heads broadcast", ref_get(&ref, "out"), host, 8 * 32 * 64);
        ref_free(&ref);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* A bool mask [B, 1, Sq, Sk] (true: the key takes part) with some rows
 * fully masked: those rows are NaN, as PyTorch gives, and only those. */
START_TEST(bool_mask_fully_masked_rows)
{
    clf_context *ctx = clf_test_context();
    enum { B = 2, H = 4, S = 32, D = 64 };
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor q = in4(g, &in, "q", CLF_F32, B, H, S, D);
    clf_tensor k = in4(g, &in, "k", CLF_F32, B, H, S, D);
    clf_tensor v = in4(g, &in, "v", CLF_F32, B, H, S, D);
    clf_tensor m = in4(g, &in, "m", CLF_BOOL, B, 1, S, S);
    uint8_t *md = e2e_data(&in, "m");
    bool dead[B][S] = {{false}};
    static const int rows[][2] = {{0, 0}, {0, 5}, {1, 31}};
    for (size_t r = 0; r < 3; r++) {
        memset(md + (rows[r][0] * S + rows[r][1]) * S, 0, S);
        dead[rows[r][0]][rows[r][1]] = true;
    }
    memset(md + (1 * S + 3) * S, 1, S); /* and one row with every key */
    ck_assert_int_eq(clf_graph_output(g, "out", clf_attention(g, q, k, v, m, 0, false)), CLF_OK);
    ref_outputs ref;
    check_graph(ctx, "bool mask", g, &in, PREFILL, &ref);
    const float *out = ref_get(&ref, "out");
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < S; i++)
                for (int d = 0; d < D; d++) {
                    float x = out[((b * H + h) * S + i) * D + d];
                    ck_assert_msg(dead[b][i] ? isnan(x) : isfinite(x), "b %d h %d row %d: %g", b, h, i, x);
                }
    double *bias = malloc(sizeof(double) * B * H * S * S);
    ck_assert_ptr_nonnull(bias);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int ij = 0; ij < S * S; ij++)
                bias[(b * H + h) * S * S + ij] = md[b * S * S + ij] ? 0.0 : -INFINITY;
    check_biased("bool mask", &in, out, bias, B * H, S, S, D);
    free(bias);
    ref_free(&ref);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* A bool key-padding mask [B, 1, 1, Sk] (BERT's attention mask: each
 * sequence's last keys are padding), broadcast over heads and queries. */
START_TEST(bool_padding_mask)
{
    clf_context *ctx = clf_test_context();
    enum { B = 2, H = 4, S = 32, D = 64 };
    static const int valid[B] = {20, 27};
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor q = in4(g, &in, "q", CLF_F32, B, H, S, D);
    clf_tensor k = in4(g, &in, "k", CLF_F32, B, H, S, D);
    clf_tensor v = in4(g, &in, "v", CLF_F32, B, H, S, D);
    clf_tensor m = in4(g, &in, "m", CLF_BOOL, B, 1, 1, S);
    uint8_t *md = e2e_data(&in, "m");
    for (int b = 0; b < B; b++)
        for (int j = 0; j < S; j++)
            md[b * S + j] = j < valid[b];
    ck_assert_int_eq(clf_graph_output(g, "out", clf_attention(g, q, k, v, m, 0, false)), CLF_OK);
    ref_outputs ref;
    check_graph(ctx, "bool padding mask [B,1,1,Sk]", g, &in, PREFILL, &ref);
    double *bias = malloc(sizeof(double) * B * H * S * S);
    ck_assert_ptr_nonnull(bias);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < S; i++)
                for (int j = 0; j < S; j++)
                    bias[((b * H + h) * S + i) * S + j] = j < valid[b] ? 0.0 : -INFINITY;
    check_biased("bool padding mask", &in, ref_get(&ref, "out"), bias, B * H, S, S, D);
    free(bias);
    ref_free(&ref);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* A float mask added to the scores, [B, 1, Sq, Sk] and [1, 1, Sq, Sk],
 * with a few -inf entries (no whole row); and a bias of each head's own,
 * [1, H, Sq, Sk] and [B, H, Sq, Sk] (ALiBi, relative positions). */
START_TEST(additive_mask)
{
    clf_context *ctx = clf_test_context();
    enum { B = 2, H = 4, S = 32, D = 64 };
    static const struct {
        bool per_batch, per_head;
        const char *label;
    } shapes[] = {{true, false, "additive mask [B,1,Sq,Sk]"},
                  {false, false, "additive mask [1,1,Sq,Sk]"},
                  {false, true, "additive bias [1,H,Sq,Sk]"},
                  {true, true, "additive bias [B,H,Sq,Sk]"}};
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
        const bool per_batch = shapes[c].per_batch, per_head = shapes[c].per_head;
        int64_t mb = per_batch ? B : 1, mh = per_head ? H : 1;
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        clf_tensor q = in4(g, &in, "q", CLF_F32, B, H, S, D);
        clf_tensor k = in4(g, &in, "k", CLF_F32, B, H, S, D);
        clf_tensor v = in4(g, &in, "v", CLF_F32, B, H, S, D);
        int64_t ms[4] = {mb, mh, S, S};
        clf_tensor m = e2e_input(g, &in, "m", CLF_F32, 4, ms, -4.0, 0.0);
        float *md = e2e_data(&in, "m");
        for (int64_t i = 0; i < mb * mh * S * S; i += 37)
            md[i] = -INFINITY;
        ck_assert_int_eq(clf_graph_output(g, "out", clf_attention(g, q, k, v, m, 0, false)), CLF_OK);
        ref_outputs ref;
        check_graph(ctx, shapes[c].label, g, &in, PREFILL, &ref);
        double *bias = malloc(sizeof(double) * B * H * S * S);
        ck_assert_ptr_nonnull(bias);
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++)
                for (int ij = 0; ij < S * S; ij++)
                    bias[(b * H + h) * S * S + ij] =
                        md[((per_batch ? b : 0) * mh + (per_head ? h : 0)) * S * S + ij];
        check_biased(shapes[c].label, &in, ref_get(&ref, "out"), bias, B * H, S, S, D);
        free(bias);
        ref_free(&ref);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* A NaN in one element of Q makes that query's scores, and so its output
 * row, NaN (the row max propagates it); every other row is unaffected. */
START_TEST(nan_in_q_propagates_to_its_row)
{
    clf_context *ctx = clf_test_context();
    enum { B = 2, H = 4, S = 32, D = 64 };
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor q = in4(g, &in, "q", CLF_F32, B, H, S, D);
    clf_tensor k = in4(g, &in, "k", CLF_F32, B, H, S, D);
    clf_tensor v = in4(g, &in, "v", CLF_F32, B, H, S, D);
    int nb = 1, nh = 2, ni = 3;
    ((float *)e2e_data(&in, "q"))[((nb * H + nh) * S + ni) * D + 5] = NAN;
    ck_assert_int_eq(clf_graph_output(g, "out", clf_attention(g, q, k, v, CLF_TENSOR_INVALID, 0, true)), CLF_OK);
    ref_outputs ref;
    check_graph(ctx, "NaN in q", g, &in, PREFILL, &ref);
    const float *out = ref_get(&ref, "out");
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < S; i++)
                for (int d = 0; d < D; d++) {
                    float x = out[((b * H + h) * S + i) * D + d];
                    bool bad = b == nb && h == nh && i == ni;
                    ck_assert_msg(bad ? isnan(x) : isfinite(x), "b %d h %d row %d: %g", b, h, i, x);
                }
    ref_free(&ref);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* A NaN in K at key j of one head makes the score of key j NaN in every
 * row that sees it, and so those rows' outputs NaN (the row max
 * propagates it): every row of the head without a mask, the rows from j
 * on when causal (the others skip key j, or mask its score to -inf
 * unfused). Every form (check_graph's variants) against the reference. */
START_TEST(nan_in_k_reaches_the_rows_that_see_its_key)
{
    clf_context *ctx = clf_test_context();
    enum { B = 2, H = 2, S = 40, D = 32 };
    const int nb = 0, nh = 1, nj = 23;
    for (int causal = 0; causal < 2; causal++) {
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        clf_tensor q = in4(g, &in, "q", CLF_F32, B, H, S, D);
        clf_tensor k = in4(g, &in, "k", CLF_F32, B, H, S, D);
        clf_tensor v = in4(g, &in, "v", CLF_F32, B, H, S, D);
        ((float *)e2e_data(&in, "k"))[((nb * H + nh) * S + nj) * D + 4] = NAN;
        ck_assert_int_eq(clf_graph_output(g, "out", clf_attention(g, q, k, v, CLF_TENSOR_INVALID, 0, causal)),
                         CLF_OK);
        ref_outputs ref;
        check_graph(ctx, causal ? "NaN in k, causal" : "NaN in k", g, &in, PREFILL, &ref);
        const float *out = ref_get(&ref, "out");
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++)
                for (int i = 0; i < S; i++)
                    for (int d = 0; d < D; d++) {
                        const float x = out[((b * H + h) * S + i) * D + d];
                        const bool bad = b == nb && h == nh && (!causal || i >= nj);
                        ck_assert_msg(bad ? isnan(x) : isfinite(x), "causal %d: b %d h %d row %d: %g", causal, b, h,
                                      i, x);
                    }
        ref_free(&ref);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* A NaN in V at key j of one head. Without a mask every row reads key j:
 * that column of the head's output is NaN in every row, in every form, as
 * in the unfused graph. Causal: the fused forms PoCL runs skip the keys a
 * row does not see, so the rows before j stay finite (the unfused graph
 * multiplies their weight 0 by NaN: README, "Attention") and the rows from
 * j on are NaN in that column; every other element is the reference's. */
START_TEST(nan_in_v_reaches_the_rows_that_see_its_key)
{
    clf_context *ctx = clf_test_context();
    enum { B = 2, H = 2, S = 40, D = 32 };
    const int nb = 1, nh = 0, nj = 17, nd = 9;
    for (int causal = 0; causal < 2; causal++) {
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        clf_tensor q = in4(g, &in, "q", CLF_F32, B, H, S, D);
        clf_tensor k = in4(g, &in, "k", CLF_F32, B, H, S, D);
        clf_tensor v = in4(g, &in, "v", CLF_F32, B, H, S, D);
        ((float *)e2e_data(&in, "v"))[((nb * H + nh) * S + nj) * D + nd] = NAN;
        ck_assert_int_eq(clf_graph_output(g, "out", clf_attention(g, q, k, v, CLF_TENSOR_INVALID, 0, causal)),
                         CLF_OK);
        ref_outputs ref;
        if (!causal)
            check_graph(ctx, "NaN in v", g, &in, PREFILL, &ref);
        const float *want = causal ? NULL : ref_get(&ref, "out");
        static float want_c[B * H * S * D], got[B * H * S * D];
        if (causal) {
            clf_host_binding wb = {"out", want_c};
            char msg[256];
            ck_assert_msg(clf_reference_run(g, in.n, in.b, 1, &wb, msg, sizeof msg) == CLF_OK, "%s", msg);
            want = want_c;
        }
        for (int style = 0; style < 2; style++) {
            const float *out = want;
            if (causal) {
                clf_executable *exe = NULL;
                clf_kernel_style ks = style ? CLF_KERNEL_STYLE_GPU : CLF_KERNEL_STYLE_CPU;
                ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.kernel_style = ks), &exe), CLF_OK);
                ck_assert_uint_eq(clf_executable_kernel_count(exe), 1);
                clf_host_binding ob = {"out", got};
                ck_assert_int_eq(clf_run_host(exe, in.n, in.b, 1, &ob), CLF_OK);
                clf_executable_destroy(&exe);
                out = got;
            }
            for (int b = 0; b < B; b++)
                for (int h = 0; h < H; h++)
                    for (int i = 0; i < S; i++)
                        for (int d = 0; d < D; d++) {
                            size_t at = (size_t)((b * H + h) * S + i) * D + d;
                            bool column = b == nb && h == nh && d == nd;
                            bool nan = column && (!causal || i >= nj);
                            ck_assert_msg(nan ? isnan(out[at]) : isfinite(out[at]),
                                          "causal %d, style %d: b %d h %d row %d column %d: %g", causal, style, b, h,
                                          i, d, out[at]);
                            if (causal && !column)
                                ck_assert_msg(fabs(out[at] - want[at]) <= 1e-4 * fabs(want[at]) + 1e-5,
                                              "causal, style %d, element %zu: %g against %g", style, at, out[at],
                                              want[at]);
                        }
        }
        if (!causal)
            ref_free(&ref);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* f16 and bf16 storage: causal with an additive mask of the same dtype. */
static void check_half(clf_dtype dt)
{
    clf_context *ctx = clf_test_context();
    enum { B = 2, H = 2, S = 32, D = 64 };
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor q = in4(g, &in, "q", dt, B, H, S, D);
    clf_tensor k = in4(g, &in, "k", dt, B, H, S, D);
    clf_tensor v = in4(g, &in, "v", dt, B, H, S, D);
    int64_t ms[4] = {B, 1, S, S};
    clf_tensor m = e2e_input(g, &in, "m", dt, 4, ms, -2.0, 0.0);
    ck_assert_int_eq(clf_graph_output(g, "out", clf_attention(g, q, k, v, m, 0, true)), CLF_OK);
    check_graph(ctx, dt == CLF_F16 ? "f16" : "bf16", g, &in, PREFILL, NULL);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}

START_TEST(f16_storage) { check_half(CLF_F16); }
END_TEST

START_TEST(bf16_storage) { check_half(CLF_BF16); }
END_TEST

/* CLFUSE_TENSOR_CORES=1 asks for the tensor-core form (inline PTX
 * mma.sync) whatever the device: a driver that refuses it (PoCL, any
 * device but NVIDIA's) must give the FMA form, built and right, through
 * clf_compile's lowering again; on NVIDIA the form itself runs. */
START_TEST(tensor_cores_a_driver_refuses_fall_back)
{
    clf_context *ctx = clf_test_context();
    clf_device_desc dev;
    ck_assert_int_eq(clf_context_device(ctx, &dev), CLF_OK);
    bool nvidia = strstr(dev.platform_name, "NVIDIA") != NULL;
    ck_assert_int_eq(setenv("CLFUSE_TENSOR_CORES", "1", 1), 0);
    for (int t = 0; t < 2; t++) {
        clf_dtype dt = t ? CLF_BF16 : CLF_F16;
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        plain_attention(g, &in, dt, 1, 2, 40, 70, 32, 24, true);
        check_graph(ctx, t ? "tensor cores asked, bf16" : "tensor cores asked, f16", g, &in, PREFILL, NULL);
        clf_executable *exe = NULL;
        ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU), &exe), CLF_OK);
        bool mma = strstr(clf_executable_kernel_source(exe, 0), CLF__MMA_LINE) != NULL;
        ck_assert_msg(mma == nvidia, "tensor-core form %s on %s", mma ? "kept" : "dropped", dev.platform_name);
        clf_executable_destroy(&exe);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    unsetenv("CLFUSE_TENSOR_CORES");
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* The tensor-core form (attention_mma.cl) at the tilings
 * CLFUSE_ATTENTION_TILE pins (warps, query rows a warp, keys a tile) and
 * the schedule's own, its mma, ldmatrix (.trans for V) and shuffles emulated in
 * OpenCL C where the device is not NVIDIA's (CLF_MMA_EMULATE): query
 * rows past the last block and past a warp's first m tile, keys past the
 * last tile, causal with Sq != Sk, heads of 40 (padded to 48) with V of
 * 24, f16 and bf16. Each run against the reference; each source must be
 * the tensor-core form at the tiling asked for. A tiling the form cannot
 * run is refused by name, and text that is not one too. */
static void check_tensor_core_tile(clf_context *ctx, const char *label, const clf_graph *g, const e2e_inputs *in,
                                   const char *want_line, bool two_stages, bool folded)
{
    clf_executable *exe = NULL;
    clf_status st = clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU), &exe);
    ck_assert_msg(st == CLF_OK, "%s: clf_compile: %s: %s", label, clf_status_name(st), clf_context_last_error(ctx));
    const char *src = clf_executable_kernel_source(exe, 0);
    ck_assert_msg(strstr(src, CLF__MMA_LINE) != NULL, "%s: not the tensor-core form", label);
    ck_assert_msg(!want_line || strstr(src, want_line) != NULL, "%s: no \"%s\" in its source", label, want_line);
    ck_assert_msg((strstr(src, "#define STAGES 2\n") != NULL) == two_stages, "%s: %s two stages by cp.async", label,
                  two_stages ? "not" : "unexpectedly");
    ck_assert_msg((strstr(src, "#define LOGIT_SCALE ") != NULL) == folded, "%s: the scale %s into exp2", label,
                  folded ? "not folded" : "folded");
    const char *name = NULL;
    clf_dtype dt;
    int rank;
    int64_t shape[CLF_MAX_RANK];
    ck_assert_int_eq(clf_executable_output(exe, 0, &name, &dt, &rank, shape), CLF_OK);
    const size_t n = (size_t)e2e_numel(rank, shape), bytes = n * clf_dtype_size(dt);
    void *want = malloc(bytes), *got = malloc(bytes);
    ck_assert(want && got);
    clf_host_binding wb = {name, want}, gb = {name, got};
    char msg[512] = "";
    st = clf_reference_run(g, in->n, in->b, 1, &wb, msg, sizeof msg);
    ck_assert_msg(st == CLF_OK, "%s: clf_reference_run: %s", label, msg);
    memset(got, 0xff, bytes);
    st = clf_run_host(exe, in->n, in->b, 1, &gb);
    ck_assert_msg(st == CLF_OK, "%s: clf_run_host: %s: %s", label, clf_status_name(st), clf_context_last_error(ctx));
    char why[256] = "";
    ck_assert_msg(clf_test_close(dt, got, want, n, rtol_of(dt), atol_of(dt), why, sizeof why),
                  "%s: differs from the reference: %s", label, why);
    free(want);
    free(got);
    clf_executable_destroy(&exe);
}

/* CLFUSE_BUILD_OPTIONS for the tensor-core form's tests: on a device
 * other than NVIDIA's the emulation, unoptimised (tensor_cores_pinned_tilings
 * says why), then `extra` (NULL for none). */
static void tensor_core_options(bool nvidia, const char *extra)
{
    char opts[256];
    snprintf(opts, sizeof opts, "%s%s%s", nvidia ? "" : "-DCLF_MMA_EMULATE=1 -cl-opt-disable",
             !nvidia && extra ? " " : "", extra ? extra : "");
    if (opts[0])
        ck_assert_int_eq(setenv("CLFUSE_BUILD_OPTIONS", opts, 1), 0);
    else
        unsetenv("CLFUSE_BUILD_OPTIONS");
}

START_TEST(tensor_cores_pinned_tilings)
{
    /* Emulated on PoCL: one thread, as PoCL 3.1 makes the emulation's
     * exchange array (mma_x) a static symbol that concurrent work-groups
     * share (NOTES.md, 2026-12-03; results then vary from run to run), and
     * built with -cl-opt-disable, as under oclgrind: optimised, the
     * unrolled loops put hundreds of barriers in one kernel and PoCL took
     * 6 minutes to build this test's kernels (8 s unoptimised). */
    ck_assert_int_eq(setenv("POCL_MAX_PTHREAD_COUNT", "1", 1), 0);
    clf_context *ctx = clf_test_context();
    const bool nvidia = clf_test_on_nvidia(ctx);
    const size_t max_local = clf_test_kernel_group_limit(ctx);
    if (max_local < 256 || ctx->max_local < 256) {
        /* The schedule's own tiling takes 256 work-items (llvmpipe allows 32). */
        printf("attention tensor_cores_pinned_tilings: skipped: kernels of 256 work-items do not run here (%zu)\n",
               max_local);
        clf_context_destroy(&ctx);
        return;
    }
    ck_assert_int_eq(setenv("CLFUSE_TENSOR_CORES", "1", 1), 0);
    /* K and V are plain buffers: two stages (cp.async) unless pinned to
     * one, or where two do not fit 48 KiB (none here: heads of 40 and 24). */
    static const char *const tiles[] = {"", "8,16,32,1", "4,32,32,2", "2,32,64", "1,16,16,2", "4,32,128,1"};
    tensor_core_options(nvidia, NULL);
    for (size_t t = 0; t < sizeof tiles / sizeof tiles[0]; t++) {
        int warps = 0, rows = 0, keys = 0, stages = 2;
        if (*tiles[t]) {
            ck_assert_int_ge(sscanf(tiles[t], "%d,%d,%d,%d", &warps, &rows, &keys, &stages), 3);
            if ((size_t)(32 * warps) > max_local)
                continue; /* the device's work-group limit (llvmpipe: 32) */
            ck_assert_int_eq(setenv("CLFUSE_ATTENTION_TILE", tiles[t], 1), 0);
        } else {
            unsetenv("CLFUSE_ATTENTION_TILE");
        }
        char want_line[64], label[160];
        snprintf(want_line, sizeof want_line, "#define WARPS %d\n#define WROWS %d\n#define BKT %d\n", warps, rows,
                 keys);
        for (int c = 0; c < 2; c++) {
            const clf_dtype dt = c ? CLF_BF16 : CLF_F16;
            clf_graph *g = clf_graph_create();
            e2e_inputs in = {0};
            /* f16: causal, 70 query rows over 90 keys (the last 70 of them
             * visible in turn); bf16: 37 rows over 150 keys. */
            const int64_t sq = c ? 37 : 70, sk = c ? 150 : 90;
            plain_attention(g, &in, dt, 1, 2, sq, sk, 40, 24, c == 0);
            snprintf(label, sizeof label, "%s%s, tiling \"%s\"", clf_dtype_name(dt), c ? "" : " causal", tiles[t]);
            check_tensor_core_tile(ctx, label, g, &in, *tiles[t] ? want_line : NULL, stages == 2, true);
            e2e_inputs_free(&in);
            clf_graph_destroy(&g);
        }
    }
    /* Logits that are not the scores times a constant (an additive mask
     * over [Sq, Sk]): clf_logit evaluated a score, no scale folded. The
     * mask rises by 0.5 a key to 0 at a row's last visible key (plus
     * noise), so that a row that sees keys of the second tile finds its
     * maximum there, more than the kernel's slack (5) above the first
     * tile's: its output is rescaled after the first tile too. (The logits
     * that weigh stay small: the reference rounds them to f16.) */
    unsetenv("CLFUSE_ATTENTION_TILE");
    {
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        clf_tensor q = in4(g, &in, "q", CLF_F16, 1, 2, 70, 40), k = in4(g, &in, "k", CLF_F16, 1, 2, 90, 40);
        clf_tensor v = in4(g, &in, "v", CLF_F16, 1, 2, 90, 24), mask = in4(g, &in, "mask", CLF_F16, 1, 1, 70, 90);
        uint16_t *mk = e2e_data(&in, "mask");
        for (int i = 0; i < 70 * 90; i++)
            mk[i] = clf_test_to_f16(clf_test_from_f16(mk[i]) + 0.5f * (float)(i % 90 - i / 90 - 20));
        ck_assert_int_eq(clf_graph_output(g, "out", clf_attention(g, q, k, v, mask, 0, true)), CLF_OK);
        check_tensor_core_tile(ctx, "f16 causal, an additive mask", g, &in, NULL, true, false);
        /* Every weight by the cubic 2^x (EXP_POLY_TILES, a build option),
         * the mask's -inf-free rows and the causal -inf keys included. */
        tensor_core_options(nvidia, "-DEXP_POLY_TILES=8");
        check_tensor_core_tile(ctx, "f16 causal, an additive mask, weights by clf_exp2_poly", g, &in, NULL, true,
                               false);
        tensor_core_options(nvidia, NULL);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    /* Refused: a tiling the form cannot run (3 warps, 3 stages), and text
     * that is not one. */
    static const char *const bad[] = {"3,16,32", "4,32", "4,32,64,3", "4,32,64,"};
    check_tiles_refused(ctx, CLF_F16, bad, sizeof bad / sizeof bad[0]);
    unsetenv("CLFUSE_BUILD_OPTIONS");
    unsetenv("CLFUSE_TENSOR_CORES");
    clf_context_destroy(&ctx);
}
END_TEST

/* The 16-byte stages (codegen_product.c's stage16_view) of K and V read
 * through index arithmetic: [B, S, H, D] inputs transposed to [B, H, S,
 * D] (a transformer's projections), and V a slice of a wider buffer,
 * whose pieces start at a multiple of 8 values (staged) or do not (the
 * generated loads). The tensor-core form (two stages by cp.async where both
 * are staged) and the decode form (16-byte loads), against the reference. */
START_TEST(stages_through_views)
{
    ck_assert_int_eq(setenv("POCL_MAX_PTHREAD_COUNT", "1", 1), 0); /* as tensor_cores_pinned_tilings */
    clf_context *ctx = clf_test_context();
    const bool nvidia = clf_test_on_nvidia(ctx);
    if (clf_test_kernel_group_limit(ctx) < 256 || ctx->max_local < 256) {
        printf("attention stages_through_views: skipped: kernels of 256 work-items do not run here\n");
        clf_context_destroy(&ctx);
        return;
    }
    ck_assert_int_eq(setenv("CLFUSE_TENSOR_CORES", "1", 1), 0);
    tensor_core_options(nvidia, NULL);
    static const int heads_first[4] = {0, 2, 1, 3};
    /* V from columns [start, start + 32) of a [.., 48] buffer: start 8
     * keeps whole pieces, 4 does not. */
    static const int64_t v_start[3] = {-1, 8, 4};
    for (int one_row = 0; one_row < 2; one_row++)
        for (int c = 0; c < 3; c++) {
            clf_graph *g = clf_graph_create();
            e2e_inputs in = {0};
            const int64_t sq = one_row ? 1 : 70, sk = one_row ? 300 : 90;
            int64_t qs[4] = {1, sq, 2, 40}, ks[4] = {1, sk, 2, 40}, vs[4] = {1, sk, 2, c == 0 ? 32 : 48};
            clf_tensor q = clf_transpose(g, e2e_input(g, &in, "q", CLF_F16, 4, qs, -1, 1), 4, heads_first);
            clf_tensor k = clf_transpose(g, e2e_input(g, &in, "k", CLF_F16, 4, ks, -1, 1), 4, heads_first);
            clf_tensor v = clf_transpose(g, e2e_input(g, &in, "v", CLF_F16, 4, vs, -1, 1), 4, heads_first);
            if (c > 0) {
                const int64_t st[1] = {v_start[c]}, en[1] = {v_start[c] + 32};
                const int ax[1] = {3};
                v = clf_slice(g, v, 1, st, en, ax, NULL);
            }
            ck_assert_int_eq(clf_graph_output(g, "out", clf_attention(g, q, k, v, CLF_TENSOR_INVALID, 0, !one_row)),
                             CLF_OK);
            char label[160];
            snprintf(label, sizeof label, "%s, [B, S, H, D] inputs%s", one_row ? "decode" : "f16 causal",
                     c == 0 ? "" : c == 1 ? ", V a slice at 8" : ", V a slice at 4");
            const bool staged = c != 2;
            if (!one_row) {
                check_tensor_core_tile(ctx, label, g, &in, NULL, staged, true);
            } else {
                clf_executable *exe = NULL;
                clf_status st = clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU), &exe);
                ck_assert_msg(st == CLF_OK, "%s: clf_compile: %s", label, clf_context_last_error(ctx));
                const char *src = clf_executable_kernel_source(exe, 0);
                ck_assert_msg(strstr(src, "attention_decode.cl") != NULL, "%s: not the one_row form", label);
                ck_assert_msg((strstr(src, "#define DECODE_WIDE 1") != NULL) == staged, "%s: %s 16-byte loads",
                              label, staged ? "no" : "unexpectedly");
                clf_executable_destroy(&exe);
                check_graph(ctx, label, g, &in, DECODE, NULL);
            }
            e2e_inputs_free(&in);
            clf_graph_destroy(&g);
        }
    unsetenv("CLFUSE_BUILD_OPTIONS");
    unsetenv("CLFUSE_TENSOR_CORES");
    clf_context_destroy(&ctx);
}
END_TEST

/* ---- Exporter idioms, built from primitives ------------------------------ */

enum { IB = 2, IH = 4, IS = 32, ID = 64 };

/* softmax(s, -1) @ v as the output "out", checked four ways. */
static void finish_idiom(clf_context *ctx, const char *label, clf_graph *g, e2e_inputs *in, clf_tensor s, clf_tensor v,
                         want_kernels want, ref_outputs *ref)
{
    ck_assert_int_eq(clf_graph_output(g, "out", clf_matmul(g, clf_softmax(g, s, -1), v)), CLF_OK);
    check_graph(ctx, label, g, in, want, ref);
}

/* The plain attention of the idioms' inputs q, k, v [IB, IH, IS, ID]
 * (host, double), for comparison with what an idiom computes. */
static double *plain_host(const e2e_inputs *in, const double *bias)
{
    return plain_host_of(in, bias, IB * IH, IS, IS, ID);
}

START_TEST(idiom_div_by_sqrt_d)
{
    clf_context *ctx = clf_test_context();
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor q = in4(g, &in, "q", CLF_F32, IB, IH, IS, ID);
    clf_tensor k = in4(g, &in, "k", CLF_F32, IB, IH, IS, ID);
    clf_tensor v = in4(g, &in, "v", CLF_F32, IB, IH, IS, ID);
    clf_tensor s = clf_div(g, clf_matmul(g, q, transpose_last2(g, k)), clf_sqrt(g, scalar_f32(g, ID)));
    ref_outputs ref;
    finish_idiom(ctx, "div by sqrt(d)", g, &in, s, v, PREFILL, &ref);
    double *host = plain_host(&in, NULL);
    check_against_host("div by sqrt(d)", ref_get(&ref, "out"), host, IB * IH * IS * ID);
    free(host);
    ref_free(&ref);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* The scale on q before the product, and (as some exporters split it)
 * d^-1/4 on both q and kT. */
START_TEST(idiom_scale_q_before_matmul)
{
    clf_context *ctx = clf_test_context();
    for (int both = 0; both < 2; both++) {
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        clf_tensor q = in4(g, &in, "q", CLF_F32, IB, IH, IS, ID);
        clf_tensor k = in4(g, &in, "k", CLF_F32, IB, IH, IS, ID);
        clf_tensor v = in4(g, &in, "v", CLF_F32, IB, IH, IS, ID);
        double f = both ? pow(ID, -0.25) : 0.125;
        clf_tensor qs = clf_mul(g, q, scalar_f32(g, f));
        clf_tensor kt = transpose_last2(g, k);
        if (both)
            kt = clf_mul(g, kt, scalar_f32(g, f));
        ref_outputs ref;
        finish_idiom(ctx, both ? "d^-1/4 on q and kT" : "scale on q", g, &in, clf_matmul(g, qs, kt), v, PREFILL, &ref);
        double *host = plain_host(&in, NULL);
        check_against_host("scale on q", ref_get(&ref, "out"), host, IB * IH * IS * ID);
        free(host);
        ref_free(&ref);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* A constant [k, n] (a bias: k = 0, [n]) of small values that vary. */
static clf_tensor weights(clf_graph *g, int64_t k, int64_t n, unsigned seed)
{
    const int64_t count = (k ? k : 1) * n, shape[2] = {k, n};
    float *w = malloc((size_t)count * sizeof *w);
    ck_assert_ptr_nonnull(w);
    for (int64_t i = 0; i < count; i++)
        w[i] = (float)((i * 7919 + seed * 104729) % 2001 - 1000) / 8000.0f;
    clf_tensor t = k ? clf_constant(g, CLF_F32, 2, shape, w) : clf_constant(g, CLF_F32, 1, shape + 1, w);
    free(w);
    return t;
}

/* q, k and v as exporters write them from one activation x [B*S, E]:
 * GPT-2's one product x Wqkv + bqkv cut in three, or BERT's three products
 * with their biases; heads split, q and kT each scaled by d^-1/4 (the
 * dynamo exporter's SDPA). The projections are one GEMM (BERT's three
 * merged: graph_merge_products.h), and attention's loads add the biases
 * and scales to its slices: 2 kernels in both forms, 8 rows (the GPU's
 * few-rows form) or 32 (GPU tiles). */
START_TEST(idiom_projections_sliced_and_scaled)
{
    const int64_t B = 2, H = 2, D = 16, E = H * D;
    clf_context *ctx = clf_test_context();
    for (int one = 0; one < 2; one++)
        for (int64_t S = 4; S <= 16; S += 12) {
            clf_graph *g = clf_graph_create();
            e2e_inputs in = {0};
            const int64_t xs[2] = {B * S, E};
            clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 2, xs, -1.0, 1.0);
            clf_tensor p[3];
            clf_tensor qkv = one ? clf_add(g, clf_matmul(g, x, weights(g, E, 3 * E, 1)), weights(g, 0, 3 * E, 2))
                                 : CLF_TENSOR_INVALID;
            for (int i = 0; i < 3; i++) {
                if (one) {
                    const int64_t start = i * E, end = (i + 1) * E;
                    const int axis = 1;
                    p[i] = clf_slice(g, qkv, 1, &start, &end, &axis, NULL);
                } else {
                    p[i] = clf_add(g, clf_matmul(g, x, weights(g, E, E, 3 + i)), weights(g, 0, E, 6 + i));
                }
                const int64_t heads[4] = {B, S, H, D};
                static const int swap[4] = {0, 2, 1, 3};
                p[i] = clf_transpose(g, clf_reshape(g, p[i], 4, heads), 4, swap);
            }
            clf_tensor f = scalar_f32(g, pow(D, -0.25));
            clf_tensor s = clf_matmul(g, clf_mul(g, p[0], f), clf_mul(g, transpose_last2(g, p[1]), f));
            char label[64];
            snprintf(label, sizeof label, "%s, %lld rows", one ? "one product cut in three" : "three products",
                     (long long)(B * S));
            finish_idiom(ctx, label, g, &in, s, p[2], PROJECTED, NULL);
            e2e_inputs_free(&in);
            clf_graph_destroy(&g);
        }
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* x [h, D] rotated as Llama's exporters write it: x * cos + rotate_half(x)
 * * sin, cos and sin constant tables [S, D] broadcast over batch and heads
 * (rotate_half: concat(-x2, x1) of x's halves along D). */
static clf_tensor rotated(clf_graph *g, clf_tensor x, clf_tensor cos, clf_tensor sin, int64_t D)
{
    const int64_t zero = 0, half = D / 2, end = D;
    const int axis = 3;
    clf_tensor halves[2] = {clf_neg(g, clf_slice(g, x, 1, &half, &end, &axis, NULL)),
                            clf_slice(g, x, 1, &zero, &half, &axis, NULL)};
    return clf_add(g, clf_mul(g, x, cos), clf_mul(g, clf_concat(g, 2, halves, 3), sin));
}

/* Llama's q and k: three products of one activation (merged into one:
 * graph_merge_products.h), each query and key rotated by constant tables.
 * A small attention (8 rows; B H S S = 512 scores, SMALL_ATTENTION_SCORES
 * in planner.c) rotates them in its loads: 2 kernels; a larger one (256
 * rows, 131072 scores, which would rotate each K row again for every block
 * of queries) stores them by a pointwise kernel first: 3. Both forms. */
START_TEST(idiom_rotated_parts_small_attention)
{
    const int64_t B = 1, H = 2, D = 16, E = H * D;
    clf_context *ctx = clf_test_context();
    for (int64_t S = 8; S <= 256; S *= 32) {
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        const int64_t xs[2] = {B * S, E}, ts[2] = {S, D};
        clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 2, xs, -1.0, 1.0);
        float *table = malloc((size_t)(S * D) * sizeof *table);
        ck_assert_ptr_nonnull(table);
        for (int64_t i = 0; i < S * D; i++)
            table[i] = (float)cos(0.01 * (double)(i / D) * (double)(1 + i % (D / 2)));
        clf_tensor cos_t = clf_constant(g, CLF_F32, 2, ts, table);
        for (int64_t i = 0; i < S * D; i++)
            table[i] = (float)sin(0.01 * (double)(i / D) * (double)(1 + i % (D / 2)));
        clf_tensor sin_t = clf_constant(g, CLF_F32, 2, ts, table);
        free(table);
        clf_tensor p[3];
        for (int i = 0; i < 3; i++) {
            const int64_t heads[4] = {B, S, H, D};
            static const int swap[4] = {0, 2, 1, 3};
            p[i] = clf_transpose(g, clf_reshape(g, clf_matmul(g, x, weights(g, E, E, 11 + i)), 4, heads), 4, swap);
        }
        clf_tensor q = rotated(g, p[0], cos_t, sin_t, D), k = rotated(g, p[1], cos_t, sin_t, D);
        clf_tensor sc = clf_mul(g, clf_matmul(g, q, transpose_last2(g, k)), scalar_f32(g, 0.25));
        char label[64];
        snprintf(label, sizeof label, "rotated q and k, %lld rows", (long long)(B * S));
        finish_idiom(ctx, label, g, &in, sc, p[2], S == 8 ? PROJECTED : THREE, NULL);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* K arrives transposed already: an input [B, H, D, Sk]. */
START_TEST(idiom_k_pretransposed)
{
    clf_context *ctx = clf_test_context();
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor q = in4(g, &in, "q", CLF_F32, IB, IH, IS, ID);
    clf_tensor kt = in4(g, &in, "kt", CLF_F32, IB, IH, ID, IS);
    clf_tensor v = in4(g, &in, "v", CLF_F32, IB, IH, IS, ID);
    clf_tensor s = clf_mul(g, clf_matmul(g, q, kt), scalar_f32(g, 0.125));
    ref_outputs ref;
    finish_idiom(ctx, "k given transposed", g, &in, s, v, PREFILL, &ref);
    /* The host attention takes k [.., Sk, D]: transpose kt back. */
    const float *ktd = e2e_data(&in, "kt");
    float *kd = malloc(sizeof(float) * IB * IH * IS * ID);
    double *host = malloc(sizeof(double) * IB * IH * IS * ID);
    ck_assert(kd && host);
    for (int n = 0; n < IB * IH; n++)
        for (int j = 0; j < IS; j++)
            for (int c = 0; c < ID; c++)
                kd[(n * IS + j) * ID + c] = ktd[(n * ID + c) * IS + j];
    host_attention(e2e_data(&in, "q"), kd, e2e_data(&in, "v"), NULL, IB * IH, 1, IS, IS, ID, ID, 0.125, false, host);
    check_against_host("k given transposed", ref_get(&ref, "out"), host, IB * IH * IS * ID);
    free(kd);
    free(host);
    ref_free(&ref);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* where(mask, s, fill) with a finite fill (float32's lowest as HF writes
 * it, and -1e9): a fully masked row then has equal scores everywhere,
 * uniform weights, and its output is the mean of V over the keys. */
START_TEST(idiom_where_finite_fill)
{
    clf_context *ctx = clf_test_context();
    static const double fills[] = {-3.4028e38, -1e9};
    for (size_t f = 0; f < 2; f++) {
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        clf_tensor q = in4(g, &in, "q", CLF_F32, IB, IH, IS, ID);
        clf_tensor k = in4(g, &in, "k", CLF_F32, IB, IH, IS, ID);
        clf_tensor v = in4(g, &in, "v", CLF_F32, IB, IH, IS, ID);
        clf_tensor m = in4(g, &in, "m", CLF_BOOL, IB, 1, IS, IS);
        uint8_t *md = e2e_data(&in, "m");
        memset(md + (1 * IS + 7) * IS, 0, IS); /* batch 1, query 7: no key */
        clf_tensor s = clf_mul(g, clf_matmul(g, q, transpose_last2(g, k)), scalar_f32(g, 0.125));
        s = clf_where(g, m, s, scalar_f32(g, fills[f]));
        char label[64];
        snprintf(label, sizeof label, "where fill %g", fills[f]);
        ref_outputs ref;
        finish_idiom(ctx, label, g, &in, s, v, PREFILL, &ref);
        const float *out = ref_get(&ref, "out"), *vd = e2e_data(&in, "v");
        for (int h = 0; h < IH; h++)
            for (int c = 0; c < ID; c++) {
                double mean = 0;
                for (int j = 0; j < IS; j++)
                    mean += vd[((1 * IH + h) * IS + j) * ID + c];
                mean /= IS;
                float x = out[((1 * IH + h) * IS + 7) * ID + c];
                ck_assert_msg(fabs(x - mean) <= 1e-5 + 1e-4 * fabs(mean), "%s: head %d, element %d is %g; mean of v %g",
                              label, h, c, x, mean);
            }
        ref_free(&ref);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* Constant additive masks of 0 and -inf that are not the causal pattern
 * stay masks read by the kernel (no causal flag): a sliding window of 3
 * keys, the strict lower triangle (row 0 sees nothing: NaN, as unfused),
 * and a diagonal offset that starts at key 1 in row 0; and one that is
 * (key j <= i + 2) becomes the flag. So does the causal pattern filled
 * with f32's lowest (HF's older masks: x + fill rounds to fill) and one
 * the loader folded expanded over the batch ([B, 1, Sq, Sk], every slice
 * the pattern); not with a fill of -1e9 (x + fill is not one value) nor
 * where one batch's slice differs. Each against the reference. */
START_TEST(additive_masks_other_than_causal)
{
    clf_context *ctx = clf_test_context();
    enum { KINDS = 8 };
    static const char *const labels[KINDS] = {"sliding window",    "strict lower triangle",
                                              "offset from key 1", "causal, offset 2",
                                              "causal, fill f32's lowest", "causal, expanded over the batch",
                                              "expanded, one batch not causal", "causal, fill -1e9"};
    static const bool flagged[KINDS] = {false, false, false, true, true, true, false, false};
    for (int kind = 0; kind < KINDS; kind++) {
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        clf_tensor q = in4(g, &in, "q", CLF_F32, IB, IH, IS, ID);
        clf_tensor k = in4(g, &in, "k", CLF_F32, IB, IH, IS, ID);
        clf_tensor v = in4(g, &in, "v", CLF_F32, IB, IH, IS, ID);
        static float mask[IB * IS * IS];
        const bool per_batch = kind == 5 || kind == 6;
        const float fill = kind == 4 ? -3.4028234663852886e38f : kind == 7 ? -1e9f : -INFINITY;
        for (int b = 0; b < (per_batch ? IB : 1); b++)
            for (int i = 0; i < IS; i++)
                for (int j = 0; j < IS; j++) {
                    bool keep = kind == 0   ? j <= i && j >= i - 2
                                : kind == 1 ? j < i
                                : kind == 2 ? j >= 1 && j <= i + 1
                                : kind == 3 ? j <= i + 2
                                : kind == 6 && b == 1 ? j <= i + 1
                                            : j <= i;
                    mask[(b * IS + i) * IS + j] = keep ? 0.0f : fill;
                }
        clf_tensor m = per_batch ? clf_constant(g, CLF_F32, 4, (int64_t[]){IB, 1, IS, IS}, mask)
                                 : clf_constant(g, CLF_F32, 2, (int64_t[]){IS, IS}, mask);
        clf_tensor sc = clf_add(g, clf_mul(g, clf_matmul(g, q, transpose_last2(g, k)), scalar_f32(g, 0.125)), m);
        finish_idiom(ctx, labels[kind], g, &in, sc, v, PREFILL, NULL);
        clf_executable *exe = NULL;
        ck_assert_int_eq(clf_compile(ctx, g, NULL, &exe), CLF_OK);
        const char *src = clf_executable_kernel_source(exe, 0);
        ck_assert_msg(strstr(src, flagged[kind] ? "#define CAUSAL 1\n" : "#define CAUSAL 0\n"), "%s: the causal flag %s",
                      labels[kind], flagged[kind] ? "is missing" : "is set");
        if (kind == 3)
            ck_assert_ptr_nonnull(strstr(src, "#define CAUSAL_OFFSET 2\n"));
        clf_executable_destroy(&exe);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* The causal mask as torch's exporters write it with the model's
 * attention_mask: scores + WHERE(AND(causal pattern, key padding [B,1,1,Sk]),
 * 0, fill), the pattern a bool constant [1,1,Sq,Sk] (batch 1: its last 5
 * keys are padding). With fill -inf (TorchScript) or f32's lowest (dynamo:
 * x + fill rounds to fill) the kernel takes the causal flag and evaluates
 * only the padding at the keys it visits; with -1e9 (x + fill is not one
 * value) it reads the whole mask. And the pattern alone, WHERE(causal, 0,
 * -inf), and its complement, WHERE(NOT causal, -inf, 0); and that mask
 * transposed, which is not causal (its keys j >= i), though its constant
 * is the pattern. Each against a plain attention with the mask as a
 * bias. */
START_TEST(idiom_causal_and_padding_mask)
{
    clf_context *ctx = clf_test_context();
    static const struct {
        double fill;
        int form; /* 0: AND with padding, 1: the pattern alone, 2: its complement, 3: the pattern's mask
                   * transposed (keys j >= i: not causal, though its constant is the pattern) */
        bool causal;
    } cases[] = {{-INFINITY, 0, true}, {-3.4028234663852886e38, 0, true}, {-1e9, 0, false},
                 {-INFINITY, 1, true}, {-INFINITY, 2, true}, {-INFINITY, 3, false}};
    static uint8_t pattern[IS * IS], hidden[IS * IS];
    for (int i = 0; i < IS; i++)
        for (int j = 0; j < IS; j++) {
            pattern[i * IS + j] = j <= i;
            hidden[i * IS + j] = j > i;
        }
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        clf_tensor q = in4(g, &in, "q", CLF_F32, IB, IH, IS, ID);
        clf_tensor k = in4(g, &in, "k", CLF_F32, IB, IH, IS, ID);
        clf_tensor v = in4(g, &in, "v", CLF_F32, IB, IH, IS, ID);
        int form = cases[c].form;
        clf_tensor cond = clf_constant(g, CLF_BOOL, 4, (int64_t[]){1, 1, IS, IS}, form == 2 ? hidden : pattern);
        uint8_t *pd = NULL;
        if (form == 0) {
            clf_tensor pad = in4(g, &in, "pad", CLF_BOOL, IB, 1, 1, IS);
            pd = e2e_data(&in, "pad");
            for (int b = 0; b < IB; b++)
                for (int j = 0; j < IS; j++)
                    pd[b * IS + j] = !(b == 1 && j >= IS - 5);
            cond = clf_logical_and(g, cond, pad);
        }
        clf_tensor zero = scalar_f32(g, 0.0), fill = scalar_f32(g, cases[c].fill);
        clf_tensor mask = form == 2 ? clf_where(g, cond, fill, zero) : clf_where(g, cond, zero, fill);
        if (form == 3)
            mask = transpose_last2(g, mask);
        clf_tensor s = clf_add(g, clf_mul(g, clf_matmul(g, q, transpose_last2(g, k)), scalar_f32(g, 0.125)), mask);
        char label[96];
        snprintf(label, sizeof label, "%s, fill %g",
                 form == 0 ? "causal AND padding" : form == 1 ? "causal" : form == 2 ? "NOT causal" : "transposed",
                 cases[c].fill);
        ref_outputs ref;
        finish_idiom(ctx, label, g, &in, s, v, PREFILL, &ref);
        double *bias = malloc(sizeof(double) * IB * IH * IS * IS);
        ck_assert_ptr_nonnull(bias);
        for (int b = 0; b < IB; b++)
            for (int h = 0; h < IH; h++)
                for (int i = 0; i < IS; i++)
                    for (int j = 0; j < IS; j++)
                        bias[((b * IH + h) * IS + i) * IS + j] =
                            (form == 3 ? j >= i : j <= i) && (!pd || pd[b * IS + j]) ? 0.0 : (double)(float)cases[c].fill;
        check_biased(label, &in, ref_get(&ref, "out"), bias, IB * IH, IS, IS, ID);
        clf_executable *exe = NULL;
        ck_assert_int_eq(clf_compile(ctx, g, NULL, &exe), CLF_OK);
        const char *src = clf_executable_kernel_source(exe, 0);
        ck_assert_msg(strstr(src, cases[c].causal ? "#define CAUSAL 1\n" : "#define CAUSAL 0\n"),
                      "%s: the causal flag %s", label, cases[c].causal ? "is missing" : "is set");
        clf_executable_destroy(&exe);
        free(bias);
        ref_free(&ref);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* An additive mask broadcast over batch and heads: [Sq, Sk] (rank 2), and
 * a key-padding mask [B, 1, 1, Sk]. */
START_TEST(idiom_additive_mask_broadcast)
{
    clf_context *ctx = clf_test_context();
    for (int pad = 0; pad < 2; pad++) {
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        clf_tensor q = in4(g, &in, "q", CLF_F32, IB, IH, IS, ID);
        clf_tensor k = in4(g, &in, "k", CLF_F32, IB, IH, IS, ID);
        clf_tensor v = in4(g, &in, "v", CLF_F32, IB, IH, IS, ID);
        int64_t ms2[2] = {IS, IS}, ms4[4] = {IB, 1, 1, IS};
        clf_tensor m = pad ? e2e_input(g, &in, "m", CLF_F32, 4, ms4, -3.0, 0.0)
                           : e2e_input(g, &in, "m", CLF_F32, 2, ms2, -3.0, 0.0);
        float *md = e2e_data(&in, "m");
        if (pad)
            for (int j = IS - 5; j < IS; j++)
                md[1 * IS + j] = -3.4028e38f; /* batch 1: the last 5 keys are padding */
        clf_tensor s = clf_add(g, clf_mul(g, clf_matmul(g, q, transpose_last2(g, k)), scalar_f32(g, 0.125)), m);
        ref_outputs ref;
        finish_idiom(ctx, pad ? "key padding mask [B,1,1,Sk]" : "mask [Sq,Sk]", g, &in, s, v, PREFILL, &ref);
        double *bias = malloc(sizeof(double) * IB * IH * IS * IS);
        ck_assert_ptr_nonnull(bias);
        for (int b = 0; b < IB; b++)
            for (int h = 0; h < IH; h++)
                for (int i = 0; i < IS; i++)
                    for (int j = 0; j < IS; j++)
                        bias[((b * IH + h) * IS + i) * IS + j] = pad ? md[b * IS + j] : md[i * IS + j];
        double *host = plain_host(&in, bias);
        check_against_host("additive mask broadcast", ref_get(&ref, "out"), host, IB * IH * IS * ID);
        free(bias);
        free(host);
        ref_free(&ref);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* GQA and MQA as HF's repeat_kv writes them: K and V [B, Hkv, Sk, D]
 * unsqueezed to [B, Hkv, 1, Sk, D], expanded to [B, Hkv, G, Sk, D] and
 * reshaped to [B, Hkv * G, Sk, D]; G = 4 (Hkv = 2) and 8 (Hkv = 1), one
 * batch and two. */
START_TEST(idiom_gqa_repeat_kv)
{
    clf_context *ctx = clf_test_context();
    static const int64_t cfg[][3] = {{2, 4, 1}, {1, 8, 1}, {2, 4, 2}, {1, 8, 2}}; /* Hkv, G, B */
    for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
        int64_t hkv = cfg[c][0], grp = cfg[c][1], nb = cfg[c][2], h = hkv * grp;
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        clf_tensor q = in4(g, &in, "q", CLF_F32, nb, h, IS, ID);
        clf_tensor kv[2];
        for (int t = 0; t < 2; t++) {
            clf_tensor x = in4(g, &in, t ? "v" : "k", CLF_F32, nb, hkv, IS, ID);
            int ax = 2;
            int64_t es[5] = {nb, hkv, grp, IS, ID}, rs[4] = {nb, h, IS, ID};
            kv[t] = clf_reshape(g, clf_expand(g, clf_unsqueeze(g, x, 1, &ax), 5, es), 4, rs);
        }
        clf_tensor s = clf_mul(g, clf_matmul(g, q, transpose_last2(g, kv[0])), scalar_f32(g, 0.125));
        char label[64];
        snprintf(label, sizeof label, "repeat_kv Hkv = %lld, G = %lld, B = %lld", (long long)hkv, (long long)grp,
                 (long long)nb);
        ref_outputs ref;
        finish_idiom(ctx, label, g, &in, s, kv[1], PREFILL, &ref);
        /* Batch b's heads follow batch b - 1's: head n of the nb * h reads
         * K and V head n / G of the nb * Hkv. */
        double *host = malloc(sizeof(double) * nb * h * IS * ID);
        ck_assert_ptr_nonnull(host);
        host_attention(e2e_data(&in, "q"), e2e_data(&in, "k"), e2e_data(&in, "v"), NULL, nb * h, grp, IS, IS, ID, ID,
                       0.125, false, host);
        check_against_host(label, ref_get(&ref, "out"), host, (size_t)(nb * h * IS * ID));
        free(host);
        ref_free(&ref);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* A causal WHERE with a finite fill (f16's lowest) after an additive mask
 * that brings every visible logit within 2 of it: the hidden keys weigh
 * (about e^-1 each), so the kernels must visit them after all, in the tile
 * form (Sq = 40) and the split-keys form (Sq = 2 over 300 keys); and the
 * split-keys form with a bool mask that hides one query's every key. */
START_TEST(finite_fill_and_decode_masks)
{
    clf_context *ctx = clf_test_context();
    static const int64_t shapes[][2] = {{40, 40}, {2, 300}};
    for (size_t c = 0; c < 2; c++) {
        int64_t sq = shapes[c][0], sk = shapes[c][1];
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        clf_tensor q = in4(g, &in, "q", CLF_F32, 1, 2, sq, 64);
        clf_tensor k = in4(g, &in, "k", CLF_F32, 1, 2, sk, 64);
        clf_tensor v = in4(g, &in, "v", CLF_F32, 1, 2, sk, 64);
        int64_t ms[4] = {1, 1, sq, sk};
        clf_tensor m = e2e_input(g, &in, "m", CLF_F32, 4, ms, -65503.5, -65502.5);
        uint8_t *cm = malloc((size_t)(sq * sk));
        ck_assert_ptr_nonnull(cm);
        for (int64_t i = 0; i < sq; i++)
            for (int64_t j = 0; j < sk; j++)
                cm[i * sk + j] = j <= i + sk - sq;
        clf_tensor causal = clf_constant(g, CLF_BOOL, 2, (int64_t[]){sq, sk}, cm);
        free(cm);
        clf_tensor s = clf_mul(g, clf_matmul(g, q, transpose_last2(g, k)), scalar_f32(g, 0.125));
        s = clf_where(g, causal, clf_add(g, s, m), scalar_f32(g, -65504.0));
        char label[64];
        snprintf(label, sizeof label, "finite fill in reach, Sq = %lld, Sk = %lld", (long long)sq, (long long)sk);
        finish_idiom(ctx, label, g, &in, s, v, c ? DECODE : PREFILL, NULL);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    /* Decode with a bool mask: query 1 sees no key (NaN), query 0 half. */
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor q = in4(g, &in, "q", CLF_F32, 2, 2, 2, 64);
    clf_tensor k = in4(g, &in, "k", CLF_F32, 2, 2, 300, 64);
    clf_tensor v = in4(g, &in, "v", CLF_F32, 2, 2, 300, 64);
    clf_tensor m = in4(g, &in, "m", CLF_BOOL, 2, 1, 2, 300);
    uint8_t *md = e2e_data(&in, "m");
    for (int j = 0; j < 300; j++) {
        md[j] = j % 2;
        md[300 + j] = 0;
    }
    ck_assert_int_eq(clf_graph_output(g, "out", clf_attention(g, q, k, v, m, 0, false)), CLF_OK);
    ref_outputs ref;
    check_graph(ctx, "decode, bool mask", g, &in, DECODE, &ref);
    const float *out = ref_get(&ref, "out");
    for (int i = 0; i < 2 * 2 * 2 * 64; i++) {
        bool dead = (i / 64) % 2 == 1 && i / (2 * 2 * 64) == 0;
        ck_assert_msg(dead ? isnan(out[i]) : isfinite(out[i]), "element %d: %g", i, out[i]);
    }
    ref_free(&ref);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* ---- Decode: the keys split into chunks over work-groups ---------------- */

/* The GPU decode form (attention_decode.cl) cuts the keys into chunks of
 * 128 to 512, whole multiples of its work-group (64 here, or a work-item
 * per column of V up to 256), and sums V with its work-items across DV.
 * Keys fewer than the smallest chunk (one short chunk on every device),
 * counts that are no multiple of 64 (a short last chunk), value rows
 * narrower than the work-group (its groups of work-items take alternate
 * keys and are added at the end), not a power of two, and wider than 256
 * (two accumulators a work-item). K goes through local memory in pieces
 * of up to 32 columns: D = 80 ends in a half piece, D = 37 (odd, no
 * multiple of 4) in a piece of 5 columns, D = 16 is one narrower piece.
 * V is read 16 keys at a time a work-item: short chunks (22 keys, 44)
 * end in single keys. */
START_TEST(decode_chunk_edges)
{
    clf_context *ctx = clf_test_context();
    static const int64_t cases[][4] = {/* sk, d, dv, heads */
                                       {100, 64, 64, 2},
                                       {777, 32, 32, 4},
                                       {1000, 16, 16, 2},
                                       {300, 80, 40, 2},
                                       {200, 16, 320, 1},
                                       {150, 37, 19, 2}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char label[96];
        snprintf(label, sizeof label, "decode Sk = %lld, D = %lld, Dv = %lld", (long long)cases[i][0],
                 (long long)cases[i][1], (long long)cases[i][2]);
        check_plain(ctx, label, 1, cases[i][3], 1, cases[i][0], cases[i][1], cases[i][2], false, DECODE);
    }
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* CLFUSE_DECODE_CHUNK pins the decode form's keys a chunk: 256 is taken
 * (and computes the reference's values), 100 (not a multiple of the
 * work-group's keys) and text that is not a count are refused by name. */
START_TEST(decode_chunk_pin)
{
    clf_context *ctx = clf_test_context();
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    plain_attention(g, &in, CLF_F32, 1, 2, 1, 700, 64, 64, false);
    ck_assert_int_eq(setenv("CLFUSE_DECODE_CHUNK", "256", 1), 0);
    clf_executable *exe = NULL;
    clf_status st = clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU), &exe);
    ck_assert_msg(st == CLF_OK, "CLFUSE_DECODE_CHUNK=256: %s", clf_context_last_error(ctx));
    const char *src = clf_executable_kernel_source(exe, 0);
    ck_assert_ptr_nonnull(strstr(src, "attention_decode.cl"));
    ck_assert_ptr_nonnull(strstr(src, "#define CHUNK 256\n"));
    ck_assert_ptr_nonnull(strstr(src, "#define SPLIT 3\n"));
    clf_executable_destroy(&exe);
    check_graph(ctx, "decode, chunks of 256 pinned", g, &in, DECODE, NULL);
    static const char *const bad[] = {"100", "12x", "0"};
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
        ck_assert_int_eq(setenv("CLFUSE_DECODE_CHUNK", bad[b], 1), 0);
        st = clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU), &exe);
        ck_assert_msg(st != CLF_OK, "CLFUSE_DECODE_CHUNK=%s: compiled", bad[b]);
        ck_assert_msg(strstr(clf_context_last_error(ctx), "CLFUSE_DECODE_CHUNK") != NULL,
                      "CLFUSE_DECODE_CHUNK=%s: the error does not name it: %s", bad[b], clf_context_last_error(ctx));
    }
    unsetenv("CLFUSE_DECODE_CHUNK");
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

/* Two to four queries, causal: the bottom-right diagonal hides the last
 * Sq - 1 - i keys from query i (clf_attention); and a causal constant of
 * offset 10 with a -inf fill, so that each query sees only its first
 * 11 to 14 keys and every later chunk is empty (its state max -inf, sum
 * 0, which the combine must weigh 0 and not NaN). */
START_TEST(decode_causal_few_queries)
{
    clf_context *ctx = clf_test_context();
    for (int64_t sq = 2; sq <= 4; sq++) {
        char label[64];
        snprintf(label, sizeof label, "decode causal Sq = %lld, Sk = 700", (long long)sq);
        check_plain(ctx, label, 1, 2, sq, 700, 32, 32, true, DECODE);
    }
    enum { SQ = 4, SK = 300, OFF = 10, H = 2, D = 64 };
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor q = in4(g, &in, "q", CLF_F32, 1, H, SQ, D);
    clf_tensor k = in4(g, &in, "k", CLF_F32, 1, H, SK, D);
    clf_tensor v = in4(g, &in, "v", CLF_F32, 1, H, SK, D);
    uint8_t cm[SQ * SK];
    double *bias = malloc(sizeof(double) * H * SQ * SK);
    ck_assert_ptr_nonnull(bias);
    for (int i = 0; i < SQ; i++)
        for (int j = 0; j < SK; j++) {
            cm[i * SK + j] = j <= i + OFF;
            for (int h = 0; h < H; h++)
                bias[(h * SQ + i) * SK + j] = cm[i * SK + j] ? 0.0 : -INFINITY;
        }
    clf_tensor causal = clf_constant(g, CLF_BOOL, 2, (int64_t[]){SQ, SK}, cm);
    clf_tensor sc = clf_mul(g, clf_matmul(g, q, transpose_last2(g, k)), scalar_f32(g, 0.125));
    sc = clf_where(g, causal, sc, scalar_f32(g, -INFINITY));
    ref_outputs ref;
    finish_idiom(ctx, "decode causal offset 10 of 300 keys", g, &in, sc, v, DECODE, &ref);
    check_biased("decode causal offset 10", &in, ref_get(&ref, "out"), bias, H, SQ, SK, D);
    free(bias);
    ref_free(&ref);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* Decode over 1000 keys (several chunks) with a bool mask and a NaN in
 * k: query 0 sees no key (NaN in both heads, as PyTorch), query 1 only
 * the last key (its V row, from the last chunk alone), query 2 every key
 * (NaN in head 1, whose key 700 holds the NaN), query 3 every key but
 * 700 (finite in both: a masked key's logit is the fill, whatever its
 * score). */
START_TEST(decode_nan_and_masked_rows)
{
    clf_context *ctx = clf_test_context();
    enum { H = 2, SQ = 4, SK = 1000, D = 64, NAN_KEY = 700 };
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor q = in4(g, &in, "q", CLF_F32, 1, H, SQ, D);
    clf_tensor k = in4(g, &in, "k", CLF_F32, 1, H, SK, D);
    clf_tensor v = in4(g, &in, "v", CLF_F32, 1, H, SK, D);
    clf_tensor m = in4(g, &in, "m", CLF_BOOL, 1, 1, SQ, SK);
    ((float *)e2e_data(&in, "k"))[(1 * SK + NAN_KEY) * D + 5] = NAN;
    uint8_t *md = e2e_data(&in, "m");
    for (int j = 0; j < SK; j++) {
        md[0 * SK + j] = 0;
        md[1 * SK + j] = j == SK - 1;
        md[2 * SK + j] = 1;
        md[3 * SK + j] = j != NAN_KEY;
    }
    ck_assert_int_eq(clf_graph_output(g, "out", clf_attention(g, q, k, v, m, 0, false)), CLF_OK);
    ref_outputs ref;
    check_graph(ctx, "decode, NaN in k and masked rows", g, &in, DECODE, &ref);
    const float *out = ref_get(&ref, "out"), *vd = e2e_data(&in, "v");
    for (int h = 0; h < H; h++)
        for (int i = 0; i < SQ; i++)
            for (int d = 0; d < D; d++) {
                float x = out[(h * SQ + i) * D + d];
                bool nan = i == 0 || (i == 2 && h == 1);
                ck_assert_msg(nan ? isnan(x) : isfinite(x), "head %d query %d: %g", h, i, x);
                if (i == 1)
                    ck_assert_msg(fabsf(x - vd[(h * SK + SK - 1) * D + d]) <= 1e-6f, "head %d query 1: %g, v %g", h,
                                  x, vd[(h * SK + SK - 1) * D + d]);
            }
    ref_free(&ref);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* The exporters' guard WHERE(ISNAN(p), 0, p) after the softmax, over sq
 * queries (see nan_guard_rows). */
static void nan_guard_case(clf_context *ctx, int64_t sq)
{
    enum { H = 2, SK = 300, D = 64 };
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor q = in4(g, &in, "q", CLF_F32, 1, H, sq, D);
    clf_tensor k = in4(g, &in, "k", CLF_F32, 1, H, SK, D);
    clf_tensor v = in4(g, &in, "v", CLF_F32, 1, H, SK, D);
    clf_tensor m = in4(g, &in, "m", CLF_BOOL, 1, 1, sq, SK);
    ((float *)e2e_data(&in, "q"))[(1 * sq + 0) * D + 3] = NAN;
    uint8_t *md = e2e_data(&in, "m");
    for (int64_t i = 0; i < sq; i++)
        for (int j = 0; j < SK; j++)
            md[i * SK + j] = i == 0 ? 1 : i == 1 ? 0 : j % 3 != 0;
    clf_tensor sc = clf_mul(g, clf_matmul(g, q, transpose_last2(g, k)), scalar_f32(g, 0.125));
    sc = clf_where(g, m, sc, scalar_f32(g, -INFINITY));
    clf_tensor p = clf_softmax(g, sc, -1);
    p = clf_where(g, clf_isnan(g, p), scalar_f32(g, 0.0), p);
    ck_assert_int_eq(clf_graph_output(g, "out", clf_matmul(g, p, v)), CLF_OK);
    ref_outputs ref;
    check_graph(ctx, sq <= 4 ? "NaN guard, decode" : "NaN guard, tiles", g, &in, sq <= 4 ? DECODE : PREFILL, &ref);
    const float *out = ref_get(&ref, "out");
    for (int h = 0; h < H; h++)
        for (int64_t i = 0; i < sq; i++)
            for (int d = 0; d < D; d++) {
                float x = out[(h * sq + i) * D + d];
                bool zero = i == 1 || (h == 1 && i == 0);
                ck_assert_msg(zero ? x == 0.0f : isfinite(x), "head %d query %lld: %g", h, (long long)i, x);
            }
    ref_free(&ref);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}

/* A row whose weights are all NaN weighs every key 0 under the guard, so
 * its output is 0: query 0 of head 1 has a NaN in q (every logit NaN),
 * query 1 sees no key (every weight -inf - -inf = NaN; the kernels gave
 * NaN there while they took only a NaN sum for NaN weights, where a row of
 * -inf sums to 0). Decode (Sq = 2) and the tile form (Sq = 40). */
START_TEST(nan_guard_rows)
{
    clf_context *ctx = clf_test_context();
    nan_guard_case(ctx, 2);
    nan_guard_case(ctx, 40);
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* The shape of the issue's decode benchmark, f16: one query over 4096
 * keys of 128 (two heads rather than 32), within f16's tolerance. */
START_TEST(decode_f16_long)
{
    clf_context *ctx = clf_test_context();
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    plain_attention(g, &in, CLF_F16, 1, 2, 1, 4096, 128, 128, true);
    check_graph(ctx, "decode f16 Sk = 4096, D = 128", g, &in, DECODE, NULL);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* Decode in f16 and bf16 with grouped KV heads (GQA by broadcast: K and V
 * [B, Hkv, 1, Sk, D] serve G query heads each), over a key count that no
 * chunk divides: the split-keys form with 16-bit storage, against the
 * reference within the dtype's tolerance. */
START_TEST(decode_half_gqa)
{
    clf_context *ctx = clf_test_context();
    static const clf_dtype dts[2] = {CLF_F16, CLF_BF16};
    for (int t = 0; t < 2; t++) {
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        int64_t qs[5] = {1, 2, 4, 1, 64}, ks[5] = {1, 2, 1, 700, 64};
        clf_tensor q = e2e_input(g, &in, "q", dts[t], 5, qs, -1, 1);
        clf_tensor k = e2e_input(g, &in, "k", dts[t], 5, ks, -1, 1);
        clf_tensor v = e2e_input(g, &in, "v", dts[t], 5, ks, -1, 1);
        ck_assert_int_eq(clf_graph_output(g, "out", clf_attention(g, q, k, v, CLF_TENSOR_INVALID, 0, true)), CLF_OK);
        check_graph(ctx, t ? "decode bf16 GQA (2 kv heads, 4 each), Sk = 700" : "decode f16 GQA (2 kv heads, 4 each), Sk = 700",
                    g, &in, DECODE, NULL);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* The layout around attention in a transformer block: q, k, v come from
 * projections as [B, S, H*D], are reshaped to [B, S, H, D] and transposed
 * to [B, H, S, D]; the output goes back the same way to [B, S, H*D]. */
START_TEST(idiom_output_transposed_reshaped)
{
    clf_context *ctx = clf_test_context();
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    static const int perm[4] = {0, 2, 1, 3};
    int64_t flat[3] = {IB, IS, IH * ID}, split[4] = {IB, IS, IH, ID};
    clf_tensor x[3];
    static const char *names[3] = {"q", "k", "v"};
    for (int t = 0; t < 3; t++)
        x[t] = clf_transpose(g, clf_reshape(g, e2e_input(g, &in, names[t], CLF_F32, 3, flat, -1, 1), 4, split), 4, perm);
    clf_tensor s = clf_mul(g, clf_matmul(g, x[0], transpose_last2(g, x[1])), scalar_f32(g, 0.125));
    clf_tensor o = clf_matmul(g, clf_softmax(g, s, -1), x[2]);
    o = clf_reshape(g, clf_transpose(g, o, 4, perm), 3, flat);
    ck_assert_int_eq(clf_graph_output(g, "out", o), CLF_OK);
    ref_outputs ref;
    check_graph(ctx, "[B,S,H*D] in and out", g, &in, PREFILL, &ref);
    /* The host attention on [B*H, S, D] copies. */
    float *c[3];
    for (int t = 0; t < 3; t++) {
        const float *src = e2e_data(&in, names[t]);
        c[t] = malloc(sizeof(float) * IB * IH * IS * ID);
        ck_assert_ptr_nonnull(c[t]);
        for (int b = 0; b < IB; b++)
            for (int i = 0; i < IS; i++)
                for (int h = 0; h < IH; h++)
                    for (int d = 0; d < ID; d++)
                        c[t][((b * IH + h) * IS + i) * ID + d] = src[((b * IS + i) * IH + h) * ID + d];
    }
    double *host = malloc(sizeof(double) * IB * IH * IS * ID), *back = malloc(sizeof(double) * IB * IH * IS * ID);
    ck_assert(host && back);
    host_attention(c[0], c[1], c[2], NULL, IB * IH, 1, IS, IS, ID, ID, 0.125, false, host);
    for (int b = 0; b < IB; b++)
        for (int i = 0; i < IS; i++)
            for (int h = 0; h < IH; h++)
                for (int d = 0; d < ID; d++)
                    back[((b * IS + i) * IH + h) * ID + d] = host[((b * IH + h) * IS + i) * ID + d];
    check_against_host("[B,S,H*D]", ref_get(&ref, "out"), back, IB * IH * IS * ID);
    for (int t = 0; t < 3; t++)
        free(c[t]);
    free(host);
    free(back);
    ref_free(&ref);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* ---- The output's layout: permuted stores --------------------------------- */

static const int BSHD[4] = {0, 2, 1, 3};

/* clf_attention on f32 (or dt) inputs q, k, v [IB, IH, IS, ID]. */
static clf_tensor idiom_attention(clf_graph *g, e2e_inputs *in, clf_dtype dt)
{
    clf_tensor q = in4(g, in, "q", dt, IB, IH, IS, ID);
    clf_tensor k = in4(g, in, "k", dt, IB, IH, IS, ID);
    clf_tensor v = in4(g, in, "v", dt, IB, IH, IS, ID);
    return clf_attention(g, q, k, v, CLF_TENSOR_INVALID, 0, false);
}

/* O [B, H, S, D] to [B, S, H*D], as a transformer merges the heads. */
static clf_tensor merge_heads(clf_graph *g, clf_tensor o)
{
    int64_t flat[3] = {IB, IS, IH * ID};
    return clf_reshape(g, clf_transpose(g, o, 4, BSHD), 3, flat);
}

/* The merged heads feed the next projection (a model's o_proj): the
 * attention kernel stores them in the layout the GEMM reads, and the GEMM
 * is the second kernel. */
START_TEST(transposed_output_feeds_a_matmul)
{
    clf_context *ctx = clf_test_context();
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor o = merge_heads(g, idiom_attention(g, &in, CLF_F32));
    int64_t ws[2] = {IH * ID, 48};
    clf_tensor w = e2e_input(g, &in, "w", CLF_F32, 2, ws, -0.1, 0.1);
    ck_assert_int_eq(clf_graph_output(g, "y", clf_matmul(g, o, w)), CLF_OK);
    check_graph(ctx, "merged heads into a matmul", g, &in, TWO, NULL);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* Permuted stores beside others: the output read directly and through the
 * merged heads (both stored by the one kernel); an epilogue before the
 * transpose; a transpose alone ([B, S, H, D]); the merged heads both an
 * output and read by a GEMM. */
START_TEST(transposed_output_variants)
{
    clf_context *ctx = clf_test_context();
    static const char *labels[] = {"output direct and merged", "epilogue, then merged", "transposed only",
                                   "merged, an output and a GEMM operand"};
    for (int c = 0; c < 4; c++) {
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        clf_tensor o = idiom_attention(g, &in, CLF_F32);
        want_kernels want = PREFILL;
        if (c == 0) {
            ck_assert_int_eq(clf_graph_output(g, "o", o), CLF_OK);
            ck_assert_int_eq(clf_graph_output(g, "out", merge_heads(g, o)), CLF_OK);
        } else if (c == 1) {
            clf_tensor e = clf_add(g, clf_mul(g, o, scalar_f32(g, 2.0)), scalar_f32(g, 0.5));
            ck_assert_int_eq(clf_graph_output(g, "out", merge_heads(g, e)), CLF_OK);
        } else if (c == 2) {
            ck_assert_int_eq(clf_graph_output(g, "out", clf_transpose(g, o, 4, BSHD)), CLF_OK);
        } else {
            clf_tensor m = merge_heads(g, o);
            int64_t ws[2] = {IH * ID, 16};
            clf_tensor w = e2e_input(g, &in, "w", CLF_F32, 2, ws, -0.1, 0.1);
            ck_assert_int_eq(clf_graph_output(g, "out", m), CLF_OK);
            ck_assert_int_eq(clf_graph_output(g, "y", clf_matmul(g, m, w)), CLF_OK);
            want = TWO;
        }
        check_graph(ctx, labels[c], g, &in, want, NULL);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* Views of the output that are no permutation the planner knows (half the
 * rows of the merged heads, a broadcast, the rows reversed by a slice of
 * step -1): the attention kernel stores O and a copy kernel the view, as
 * before permuted stores. */
START_TEST(view_after_attention_not_a_permutation)
{
    clf_context *ctx = clf_test_context();
    static const char *labels[] = {"slice of the merged heads", "broadcast", "rows reversed"};
    for (int c = 0; c < 3; c++) {
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        clf_tensor o = idiom_attention(g, &in, CLF_F32), out;
        if (c == 0) {
            int64_t start = 0, end = IS / 2;
            int axis = 1;
            out = clf_slice(g, merge_heads(g, o), 1, &start, &end, &axis, NULL);
        } else if (c == 1) {
            int axis = 0;
            int64_t es[5] = {2, IB, IH, IS, ID};
            out = clf_expand(g, clf_unsqueeze(g, o, 1, &axis), 5, es);
        } else {
            int64_t start = -1, end = INT64_MIN, step = -1;
            int axis = 2;
            out = clf_slice(g, o, 1, &start, &end, &axis, &step);
        }
        ck_assert_int_eq(clf_graph_output(g, "out", out), CLF_OK);
        check_graph(ctx, labels[c], g, &in, TWO, NULL);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* f16 and bf16 storage: the merged heads stored by the attention kernel,
 * rounded once. */
START_TEST(transposed_output_half)
{
    clf_context *ctx = clf_test_context();
    for (int b = 0; b < 2; b++) {
        clf_dtype dt = b ? CLF_BF16 : CLF_F16;
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        ck_assert_int_eq(clf_graph_output(g, "out", merge_heads(g, idiom_attention(g, &in, dt))), CLF_OK);
        check_graph(ctx, b ? "bf16 merged heads" : "f16 merged heads", g, &in, PREFILL, NULL);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* The scores (or the probabilities, HF's output_attentions) are graph
 * outputs too: they must be written, so attention is not one kernel. */
START_TEST(scores_also_an_output)
{
    clf_context *ctx = clf_test_context();
    /* 0: the scaled scores an output, 1: the probabilities, 2: the raw
     * product Q Kt. */
    for (int probs = 0; probs < 3; probs++) {
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        clf_tensor q = in4(g, &in, "q", CLF_F32, IB, IH, IS, ID);
        clf_tensor k = in4(g, &in, "k", CLF_F32, IB, IH, IS, ID);
        clf_tensor v = in4(g, &in, "v", CLF_F32, IB, IH, IS, ID);
        clf_tensor raw = clf_matmul(g, q, transpose_last2(g, k));
        clf_tensor s = clf_mul(g, raw, scalar_f32(g, 0.125));
        clf_tensor p = clf_softmax(g, s, -1);
        ck_assert_int_eq(clf_graph_output(g, probs == 1 ? "probs" : "scores", probs == 1 ? p : probs ? raw : s),
                         CLF_OK);
        ck_assert_int_eq(clf_graph_output(g, "out", clf_matmul(g, p, v)), CLF_OK);
        /* CLFUSE_LOGS=fusion says why. */
        static char log[1 << 14];
        clf_test_log lc = clf_test_log_begin("fusion");
        clf_executable *exe = NULL;
        clf_status st = clf_compile(ctx, g, NULL, &exe);
        clf_test_log_end(&lc, log, sizeof log);
        ck_assert_int_eq(st, CLF_OK);
        clf_executable_destroy(&exe);
        ck_assert_msg(strstr(log, probs == 2 ? "not planned as attention: the scores are also a graph output"
                                             : "not planned as attention: a value between the scores and the "
                                               "weights is also a graph output"),
                      "%s", log);
        ref_outputs ref;
        check_graph(ctx, probs == 1 ? "probabilities an output" : "scores an output", g, &in, NOT_FUSED, &ref);
        double *host = plain_host(&in, NULL);
        check_against_host("scores an output", ref_get(&ref, "out"), host, IB * IH * IS * ID);
        free(host);
        ref_free(&ref);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}
END_TEST

/* ---- ONNX text models ----------------------------------------------------- */

static clf_onnx_model *load_fixture(const char *file)
{
    const char *dir = getenv("CLFUSE_TEST_SOURCE_DIR");
    ck_assert_msg(dir != NULL, "CLFUSE_TEST_SOURCE_DIR is not set (tests/meson.build sets it)");
    char path[1024], msg[512] = "";
    snprintf(path, sizeof path, "%s/onnx/%s", dir, file);
    clf_onnx_model *m = NULL;
    clf_status st = clf_onnx_load_file(path, clf_onnx_params(.message = msg, .message_cap = sizeof msg), &m);
    ck_assert_msg(st == CLF_OK, "%s: %s: %s", file, clf_status_name(st), msg);
    return m;
}

/* Random data for every input of m (named by the model, which must outlive
 * in): values in [-1, 1), an input named "mask" in [-2, 0). */
static void onnx_inputs(const clf_onnx_model *m, e2e_inputs *in)
{
    for (size_t i = 0; i < clf_onnx_model_input_count(m); i++) {
        clf_onnx_io io;
        ck_assert_int_eq(clf_onnx_model_input(m, i, &io), CLF_OK);
        ck_assert_int_eq(io.dtype, CLF_F32);
        size_t numel = (size_t)e2e_numel(io.graph_rank, io.shape);
        float *p = malloc(numel * sizeof *p + 1);
        ck_assert_ptr_nonnull(p);
        bool mask = strcmp(io.name, "mask") == 0;
        clf_test_fill_f32(p, numel, mask ? -2.0f : -1.0f, mask ? 0.0f : 1.0f);
        ck_assert_uint_lt(in->n, E2E_MAX_IO);
        in->b[in->n] = (clf_host_binding){io.name, p};
        in->bytes[in->n] = numel * sizeof *p;
        in->n++;
    }
}

/* Checks fixture file four ways, and that its output "out" is the
 * attention clf_attention builds on the same inputs (q, k, v [B, H, S, D],
 * "mask" if the model has one, causal as given); out_bshd: the model
 * writes [B, S, H*D]. */
static void check_onnx(const char *file, bool causal, bool out_bshd)
{
    clf_context *ctx = clf_test_context();
    clf_onnx_model *m = load_fixture(file);
    e2e_inputs in = {0};
    onnx_inputs(m, &in);
    ref_outputs ref;
    check_graph(ctx, file, clf_onnx_model_graph(m), &in, PREFILL, &ref);
    if (causal) {
        /* The mask, whichever way the exporter built it, is the kernel's
         * causal flag: the keys past the diagonal are skipped, not read. */
        clf_executable *exe = NULL;
        ck_assert_int_eq(clf_compile(ctx, clf_onnx_model_graph(m), NULL, &exe), CLF_OK);
        bool flagged = false;
        for (size_t k = 0; k < clf_executable_kernel_count(exe); k++)
            flagged |= strstr(clf_executable_kernel_source(exe, k), "#define CAUSAL 1\n") != NULL;
        ck_assert_msg(flagged, "%s: the causal mask is not the kernel's causal flag", file);
        clf_executable_destroy(&exe);
    }

    /* The same attention from clf_attention, by the reference. */
    clf_graph *g = clf_graph_create();
    clf_tensor t[4] = {CLF_TENSOR_INVALID, CLF_TENSOR_INVALID, CLF_TENSOR_INVALID, CLF_TENSOR_INVALID};
    static const char *names[4] = {"q", "k", "v", "mask"};
    int64_t qshape[CLF_MAX_RANK] = {0};
    for (size_t i = 0; i < clf_onnx_model_input_count(m); i++) {
        clf_onnx_io io;
        clf_onnx_model_input(m, i, &io);
        for (int n = 0; n < 4; n++)
            if (strcmp(io.name, names[n]) == 0) {
                t[n] = clf_input(g, io.name, io.dtype, io.graph_rank, io.shape);
                if (n == 0)
                    memcpy(qshape, io.shape, sizeof qshape);
            }
    }
    clf_tensor o = clf_attention(g, t[0], t[1], t[2], t[3], 0, causal);
    if (out_bshd) {
        static const int perm[4] = {0, 2, 1, 3};
        int64_t flat[3] = {qshape[0], qshape[2], qshape[1] * qshape[3]};
        o = clf_reshape(g, clf_transpose(g, o, 4, perm), 3, flat);
    }
    ck_assert_int_eq(clf_graph_output(g, "out", o), CLF_OK);
    size_t numel = ref.numel[0];
    ck_assert_str_eq(ref.name[0], "out");
    float *want = malloc(numel * sizeof *want + 1);
    ck_assert_ptr_nonnull(want);
    clf_host_binding ob = {"out", want};
    char msg[512];
    ck_assert_msg(clf_reference_run(g, in.n, in.b, 1, &ob, msg, sizeof msg) == CLF_OK, "%s", msg);
    char why[256];
    ck_assert_msg(clf_test_close(CLF_F32, ref.data[0], want, numel, 1e-5, 1e-6, why, sizeof why),
                  "%s is not clf_attention's attention: %s", file, why);
    free(want);
    clf_graph_destroy(&g);
    ref_free(&ref);
    e2e_inputs_free(&in);
    clf_onnx_model_destroy(&m);
    clf_context_destroy(&ctx);
    assert_kernel_counts();
}

/* The HF / exporter form: Transpose, MatMul, Div by Sqrt(d), Add mask,
 * Softmax, MatMul, then the heads merged back to [B, S, H*D]. */
START_TEST(onnx_hf_additive_mask) { check_onnx("attention_hf_mask.onnxtxt", false, true); }
END_TEST

/* The causal mask of torch's exporter: Trilu of ones, Equal 0, Where into
 * -inf and 0, added to the scores; the frontend folds it into a constant. */
START_TEST(onnx_causal_trilu) { check_onnx("attention_causal_trilu.onnxtxt", true, false); }
END_TEST

/* The causal mask of GPT-2's export: Range, Unsqueeze and LessOrEqual into
 * a bool constant, Where with float32's lowest. */
START_TEST(onnx_causal_range) { check_onnx("attention_causal_range.onnxtxt", true, false); }
END_TEST

/* ---- Bad input -------------------------------------------------------------- */

/* A head too wide for the GPU form's tiles of K and V in the device's
 * local memory (d + dv floats a key, more than half of it): the planner
 * asks codegen whether its kernel takes the attention before it plans one,
 * so the graph runs as its products and softmax instead of failing to
 * compile (as it did). Two queries over two keys, d = dv just past the
 * limit (131,172 floats on PoCL's 2 MiB), against the reference. */
START_TEST(head_too_wide_for_local_memory_runs_unfused)
{
    clf_context *ctx = clf_test_context();
    cl_ulong local_mem = 0;
    ck_assert_int_eq(clGetDeviceInfo(ctx->device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local_mem, &local_mem, NULL),
                     CL_SUCCESS);
    int64_t d = (int64_t)(local_mem / 16) + 100;
    if (d > (int64_t)1 << 20) {
        clf_context_destroy(&ctx);
        printf("head_too_wide_for_local_memory_runs_unfused: %llu bytes of local memory: skipped\n",
               (unsigned long long)local_mem);
        return;
    }
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor q = in4(g, &in, "q", CLF_F32, 1, 1, 2, d);
    clf_tensor k = in4(g, &in, "k", CLF_F32, 1, 1, 2, d);
    clf_tensor v = in4(g, &in, "v", CLF_F32, 1, 1, 2, d);
    ck_assert_int_eq(clf_graph_output(g, "out", clf_attention(g, q, k, v, CLF_TENSOR_INVALID, 0.001, false)), CLF_OK);
    e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_GPU, 1e-4, 1e-5);
    clf_executable *exe = NULL;
    static char log[1 << 14];
    clf_test_log lc = clf_test_log_begin("fusion"); /* CLFUSE_LOGS=fusion says why */
    clf_status st = clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU), &exe);
    clf_test_log_end(&lc, log, sizeof log);
    ck_assert_int_eq(st, CLF_OK);
    ck_assert_msg(strstr(log, "not planned as attention: a head of "), "%s", log);
    for (size_t i = 0; i < clf_executable_kernel_count(exe); i++)
        ck_assert_msg(!strstr(clf_executable_kernel_name(exe, i), "attention"), "kernel %zu is %s", i,
                      clf_executable_kernel_name(exe, i));
    clf_executable_destroy(&exe);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

/* Builds q, k, v (and a mask) of the given shapes and dtypes on a fresh
 * graph and calls clf_attention: it must fail with status want, a message
 * holding every part, record no node, and leave the graph failed. */
typedef struct spec {
    clf_dtype dt;
    int rank;
    int64_t shape[CLF_MAX_RANK];
} spec;

static void expect_bad(spec q, spec k, spec v, const spec *mask, double scale, clf_status want, const char *part1,
                       const char *part2)
{
    clf_graph *g = clf_graph_create();
    clf_tensor tq = clf_input(g, "q", q.dt, q.rank, q.shape);
    clf_tensor tk = clf_input(g, "k", k.dt, k.rank, k.shape);
    clf_tensor tv = clf_input(g, "v", v.dt, v.rank, v.shape);
    clf_tensor tm = mask ? clf_input(g, "m", mask->dt, mask->rank, mask->shape) : CLF_TENSOR_INVALID;
    ck_assert_int_eq(clf_graph_status(g, NULL), CLF_OK);
    size_t before = clf_graph_node_count(g);
    clf_tensor o = clf_attention(g, tq, tk, tv, tm, scale, false);
    ck_assert(!clf_tensor_valid(o));
    const char *msg = NULL;
    ck_assert_int_eq(clf_graph_status(g, &msg), want);
    ck_assert_msg(strncmp(msg, "clf_attention: ", 15) == 0, "message: %s", msg);
    ck_assert_msg(strstr(msg, part1) != NULL, "'%s' not in: %s", part1, msg);
    ck_assert_msg(!part2 || strstr(msg, part2) != NULL, "'%s' not in: %s", part2, msg);
    ck_assert_uint_eq(clf_graph_node_count(g), before);
    /* Sticky: a later good call does nothing. */
    ck_assert(!clf_tensor_valid(clf_attention(g, tq, tq, tq, CLF_TENSOR_INVALID, 0, false)));
    ck_assert_int_eq(clf_graph_status(g, NULL), want);
    clf_graph_destroy(&g);
}

START_TEST(bad_arguments_are_clear_errors)
{
    const spec q = {CLF_F32, 4, {2, 4, 8, 64}}, kv = {CLF_F32, 4, {2, 4, 10, 64}};
    /* Mismatched D. */
    expect_bad(q, (spec){CLF_F32, 4, {2, 4, 10, 32}}, kv, NULL, 0, CLF_ERR_SHAPE, "head sizes", "64 and 32");
    /* Mismatched Sk. */
    expect_bad(q, kv, (spec){CLF_F32, 4, {2, 4, 11, 64}}, NULL, 0, CLF_ERR_SHAPE, "key counts", "10 and 11");
    /* Integer dtypes, and floats that differ. */
    expect_bad((spec){CLF_I32, 4, {2, 4, 8, 64}}, kv, kv, NULL, 0, CLF_ERR_DTYPE, "q has dtype i32", "f32, f16 or bf16");
    expect_bad(q, (spec){CLF_I32, 4, {2, 4, 10, 64}}, kv, NULL, 0, CLF_ERR_DTYPE, "k has dtype i32", NULL);
    expect_bad(q, kv, (spec){CLF_F16, 4, {2, 4, 10, 64}}, NULL, 0, CLF_ERR_DTYPE, "v has dtype f16", "q has f32");
    /* Masks: unbroadcastable, enlarging the scores, of another dtype. */
    expect_bad(q, kv, kv, &(spec){CLF_BOOL, 4, {2, 1, 8, 9}}, 0, CLF_ERR_SHAPE, "mask [2,1,8,9] does not broadcast",
               "[2,4,8,10]");
    expect_bad(q, kv, kv, &(spec){CLF_F32, 5, {3, 2, 4, 8, 10}}, 0, CLF_ERR_SHAPE, "mask [3,2,4,8,10]", NULL);
    expect_bad(q, kv, kv, &(spec){CLF_I32, 4, {2, 1, 8, 10}}, 0, CLF_ERR_DTYPE, "mask has dtype i32", "bool");
    expect_bad(q, kv, kv, &(spec){CLF_F16, 4, {2, 1, 8, 10}}, 0, CLF_ERR_DTYPE, "mask has dtype f16", NULL);
    /* Ranks below 2; batch axes that do not broadcast. */
    expect_bad((spec){CLF_F32, 1, {64}}, kv, kv, NULL, 0, CLF_ERR_SHAPE, "q [64] has rank 1", NULL);
    expect_bad(q, (spec){CLF_F32, 4, {3, 4, 10, 64}}, (spec){CLF_F32, 4, {3, 4, 10, 64}}, NULL, 0, CLF_ERR_SHAPE,
               "batch axes", NULL);
    /* A scale that is not finite. */
    expect_bad(q, kv, kv, NULL, NAN, CLF_ERR_INVALID_ARGUMENT, "scale is nan", NULL);
    expect_bad(q, kv, kv, NULL, INFINITY, CLF_ERR_INVALID_ARGUMENT, "scale is inf", NULL);

    /* Handles: NULL graph, an invalid or foreign tensor. */
    ck_assert(!clf_tensor_valid(clf_attention(NULL, CLF_TENSOR_INVALID, CLF_TENSOR_INVALID, CLF_TENSOR_INVALID,
                                              CLF_TENSOR_INVALID, 0, false)));
    clf_graph *g = clf_graph_create(), *other = clf_graph_create();
    clf_tensor tq = clf_input(g, "q", CLF_F32, 4, q.shape);
    clf_tensor tk = clf_input(other, "k", CLF_F32, 4, kv.shape);
    ck_assert(!clf_tensor_valid(clf_attention(g, tq, tk, tq, CLF_TENSOR_INVALID, 0, false)));
    const char *msg;
    ck_assert_int_eq(clf_graph_status(g, &msg), CLF_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(msg, "clf_attention: k") != NULL, "%s", msg);
    clf_graph_destroy(&g);
    clf_graph_destroy(&other);
}
END_TEST

int main(void)
{
    clf_test_setup_env();
    Suite *s = suite_create("attention");
    clf_test_add_case(s, "builder_records_the_pattern", builder_records_the_pattern);
    clf_test_add_case(s, "head_too_wide_for_local_memory_runs_unfused", head_too_wide_for_local_memory_runs_unfused);
    clf_test_add_case(s, "bad_arguments_are_clear_errors", bad_arguments_are_clear_errors);
    clf_test_add_case(s, "no_mask", no_mask);
    clf_test_add_case(s, "causal_square", causal_square);
    clf_test_add_variant_case(s, "causal_long_sequence", causal_long_sequence);
    clf_test_add_case(s, "decode", decode);
    clf_test_add_case(s, "causal_bottom_right", causal_bottom_right);
    clf_test_add_variant_case(s, "head_sizes", head_sizes);
    clf_test_add_variant_case(s, "cpu_form_blocks_and_tails", cpu_form_blocks_and_tails);
    clf_test_add_variant_case(s, "gpu_form_partial_block_many_tiles", gpu_form_partial_block_many_tiles);
    clf_test_add_variant_case(s, "gpu_form_shuffles", gpu_form_shuffles);
    clf_test_add_variant_case(s, "gpu_form_pinned_tilings", gpu_form_pinned_tilings);
    clf_test_add_variant_case(s, "kv_heads_broadcast", kv_heads_broadcast);
    clf_test_add_case(s, "bool_mask_fully_masked_rows", bool_mask_fully_masked_rows);
    clf_test_add_case(s, "additive_mask", additive_mask);
    clf_test_add_case(s, "bool_padding_mask", bool_padding_mask);
    clf_test_add_case(s, "nan_in_q_propagates_to_its_row", nan_in_q_propagates_to_its_row);
    clf_test_add_case(s, "nan_in_k_reaches_the_rows_that_see_its_key", nan_in_k_reaches_the_rows_that_see_its_key);
    clf_test_add_case(s, "f16_storage", f16_storage);
    clf_test_add_variant_case(s, "bf16_storage", bf16_storage);
    clf_test_add_case(s, "tensor_cores_a_driver_refuses_fall_back", tensor_cores_a_driver_refuses_fall_back);
    clf_test_add_case(s, "tensor_cores_pinned_tilings", tensor_cores_pinned_tilings);
    clf_test_add_case(s, "stages_through_views", stages_through_views);
    clf_test_add_case(s, "idiom_div_by_sqrt_d", idiom_div_by_sqrt_d);
    clf_test_add_case(s, "idiom_scale_q_before_matmul", idiom_scale_q_before_matmul);
    clf_test_add_case(s, "idiom_k_pretransposed", idiom_k_pretransposed);
    clf_test_add_case(s, "idiom_where_finite_fill", idiom_where_finite_fill);
    clf_test_add_case(s, "idiom_additive_mask_broadcast", idiom_additive_mask_broadcast);
    clf_test_add_case(s, "idiom_causal_and_padding_mask", idiom_causal_and_padding_mask);
    clf_test_add_case(s, "idiom_gqa_repeat_kv", idiom_gqa_repeat_kv);
    clf_test_add_case(s, "idiom_projections_sliced_and_scaled", idiom_projections_sliced_and_scaled);
    clf_test_add_case(s, "idiom_rotated_parts_small_attention", idiom_rotated_parts_small_attention);
    clf_test_add_case(s, "idiom_output_transposed_reshaped", idiom_output_transposed_reshaped);
    clf_test_add_case(s, "transposed_output_feeds_a_matmul", transposed_output_feeds_a_matmul);
    clf_test_add_variant_case(s, "transposed_output_variants", transposed_output_variants);
    clf_test_add_case(s, "view_after_attention_not_a_permutation", view_after_attention_not_a_permutation);
    clf_test_add_variant_case(s, "transposed_output_half", transposed_output_half);
    clf_test_add_case(s, "finite_fill_and_decode_masks", finite_fill_and_decode_masks);
    clf_test_add_variant_case(s, "decode_chunk_edges", decode_chunk_edges);
    clf_test_add_case(s, "decode_chunk_pin", decode_chunk_pin);
    clf_test_add_case(s, "decode_causal_few_queries", decode_causal_few_queries);
    clf_test_add_case(s, "decode_nan_and_masked_rows", decode_nan_and_masked_rows);
    clf_test_add_case(s, "nan_guard_rows", nan_guard_rows);
    clf_test_add_variant_case(s, "decode_f16_long", decode_f16_long);
    clf_test_add_case(s, "decode_half_gqa", decode_half_gqa);
    clf_test_add_case(s, "scores_also_an_output", scores_also_an_output);
    clf_test_add_case(s, "onnx_hf_additive_mask", onnx_hf_additive_mask);
    clf_test_add_case(s, "onnx_causal_trilu", onnx_causal_trilu);
    clf_test_add_case(s, "nan_in_v_reaches_the_rows_that_see_its_key", nan_in_v_reaches_the_rows_that_see_its_key);
    clf_test_add_case(s, "additive_masks_other_than_causal", additive_masks_other_than_causal);
    clf_test_add_case(s, "onnx_causal_range", onnx_causal_range);
    return clf_test_run_suite(s);
}
