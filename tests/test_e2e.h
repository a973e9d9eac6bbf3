/* End-to-end helpers shared by the ops, fusion and runtime suites: graph
 * inputs filled with random data, and one call that compiles a graph fused
 * and unfused, runs both on poisoned outputs and compares every output with
 * clf_reference_run. Header-only (static functions) so that each suite
 * stays a single source file in tests/meson.build. */
#ifndef CLFUSE_TEST_E2E_H
#define CLFUSE_TEST_E2E_H

#include <stdlib.h>
#include <string.h>

#include "test_support.h"

#define E2E_MAX_IO 64

/* Host data for a graph's inputs, owned here. */
typedef struct e2e_inputs {
    clf_host_binding b[E2E_MAX_IO];
    size_t bytes[E2E_MAX_IO];
    size_t n;
} e2e_inputs;

static inline int64_t e2e_numel(int rank, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= shape[i];
    return n;
}

/* Declares input `name` and fills it with random values in [lo, hi) (i32:
 * [lo, hi]; bool: random 0/1; f16 and bf16: uint16_t bit patterns of
 * values drawn in f32 and rounded to nearest even). The data stays reachable through
 * e2e_data(in, name) for planting special values. */
static inline clf_tensor e2e_input(clf_graph *g, e2e_inputs *in, const char *name, clf_dtype dt,
                                   int rank, const int64_t *shape, double lo, double hi)
{
    ck_assert_uint_lt(in->n, E2E_MAX_IO);
    size_t numel = (size_t)e2e_numel(rank, shape);
    size_t bytes = numel * clf_dtype_size(dt);
    void *p = malloc(bytes + 1);
    ck_assert_ptr_nonnull(p);
    if (dt == CLF_F32)
        clf_test_fill_f32(p, numel, (float)lo, (float)hi);
    else if (dt == CLF_I32)
        clf_test_fill_i32(p, numel, (int32_t)lo, (int32_t)hi);
    else if (dt == CLF_F16)
        clf_test_fill_f16(p, numel, (float)lo, (float)hi);
    else if (dt == CLF_BF16)
        clf_test_fill_bf16(p, numel, (float)lo, (float)hi);
    else if (dt == CLF_I64)
        clf_test_fill_i64(p, numel, lo <= -9.2e18 ? INT64_MIN : (int64_t)lo, hi >= 9.2e18 ? INT64_MAX : (int64_t)hi);
    else
        clf_test_fill_bool(p, numel);
    in->b[in->n] = (clf_host_binding){name, p};
    in->bytes[in->n] = bytes;
    in->n++;
    return clf_input(g, name, dt, rank, shape);
}

static inline void *e2e_data(const e2e_inputs *in, const char *name)
{
    for (size_t i = 0; i < in->n; i++)
        if (strcmp(in->b[i].name, name) == 0)
            return in->b[i].data;
    ck_abort_msg("no input %s", name);
    return NULL;
}

static inline void e2e_inputs_free(e2e_inputs *in)
{
    for (size_t i = 0; i < in->n; i++)
        free(in->b[i].data);
    in->n = 0;
}

/* A per-output tolerance; a list ends with a NULL name. */
typedef struct e2e_tol {
    const char *name;
    double rtol, atol;
} e2e_tol;

enum { E2E_FUSED = 1, E2E_UNFUSED = 2, E2E_BOTH = 3 };

/* The outputs of the last e2e_check: reference values and the fused
 * results (or the unfused ones when only those ran). */
typedef struct e2e_run {
    size_t n;
    char *name[E2E_MAX_IO];
    clf_dtype dtype[E2E_MAX_IO];
    size_t numel[E2E_MAX_IO];
    void *want[E2E_MAX_IO];
    void *got[E2E_MAX_IO];
    clf_plan_stats stats;        /* of the fused executable */
    clf_plan_stats unfused_stats; /* of the disable_fusion executable */
    size_t kernels, unfused_kernels;
} e2e_run;

static inline void e2e_run_free(e2e_run *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->want[i]);
        free(r->got[i]);
        free(r->name[i]);
    }
    memset(r, 0, sizeof *r);
}

static inline const void *e2e_got(const e2e_run *r, const char *name)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->name[i], name) == 0)
            return r->got[i];
    ck_abort_msg("no output %s", name);
    return NULL;
}

/* Compiles g for each requested variant, runs it with every output
 * poisoned (0xff bytes: NaN for f32, f16 and bf16, -1 for i32, 255 for
 * bool) and checks
 * every output against the reference within rtol/atol (or the output's
 * entry in tols). Fills *r when r is not NULL (free with e2e_run_free). */
static inline void e2e_check(clf_context *ctx, const clf_graph *g, const e2e_inputs *in, double rtol,
                             double atol, const e2e_tol *tols, unsigned variants, e2e_run *r)
{
    e2e_run local;
    if (!r)
        r = &local;
    memset(r, 0, sizeof *r);
    const char *gmsg = "";
    ck_assert_msg(clf_graph_status(g, &gmsg) == CLF_OK, "graph: %s", gmsg);

    clf_executable *exe[2] = {NULL, NULL};
    for (int v = 0; v < 2; v++) {
        if (!(variants & (1u << v)))
            continue;
        clf_status st = clf_compile(ctx, g, v ? clf_compile_params(.disable_fusion = true) : NULL, &exe[v]);
        ck_assert_msg(st == CLF_OK, "clf_compile (%s): %s: %s", v ? "unfused" : "fused",
                      clf_status_name(st), clf_context_last_error(ctx));
        ck_assert_ptr_nonnull(exe[v]);
    }
    clf_executable *any = exe[0] ? exe[0] : exe[1];
    ck_assert_ptr_nonnull(any);
    if (exe[0]) {
        ck_assert_int_eq(clf_executable_stats(exe[0], &r->stats), CLF_OK);
        r->kernels = clf_executable_kernel_count(exe[0]);
    }
    if (exe[1]) {
        ck_assert_int_eq(clf_executable_stats(exe[1], &r->unfused_stats), CLF_OK);
        r->unfused_kernels = clf_executable_kernel_count(exe[1]);
    }

    /* Outputs and the reference. */
    r->n = clf_executable_output_count(any);
    ck_assert_uint_le(r->n, E2E_MAX_IO);
    clf_host_binding want_b[E2E_MAX_IO], got_b[E2E_MAX_IO];
    size_t bytes[E2E_MAX_IO];
    for (size_t i = 0; i < r->n; i++) {
        int rank;
        int64_t shape[CLF_MAX_RANK];
        const char *oname = NULL;
        ck_assert_int_eq(clf_executable_output(any, i, &oname, &r->dtype[i], &rank, shape), CLF_OK);
        r->name[i] = malloc(strlen(oname) + 1);
        ck_assert_ptr_nonnull(r->name[i]);
        strcpy(r->name[i], oname);
        r->numel[i] = (size_t)e2e_numel(rank, shape);
        bytes[i] = r->numel[i] * clf_dtype_size(r->dtype[i]);
        r->want[i] = malloc(bytes[i] + 1);
        r->got[i] = malloc(bytes[i] + 1);
        ck_assert(r->want[i] && r->got[i]);
        memset(r->want[i], 0xff, bytes[i]);
        want_b[i] = (clf_host_binding){r->name[i], r->want[i]};
        /* Zero-size outputs are bound to NULL, as the API allows. */
        got_b[i] = (clf_host_binding){r->name[i], bytes[i] ? r->got[i] : NULL};
    }
    char msg[512] = "";
    clf_status st = clf_reference_run(g, in->n, in->b, r->n, want_b, msg, sizeof msg);
    ck_assert_msg(st == CLF_OK, "clf_reference_run: %s: %s", clf_status_name(st), msg);

    /* Unfused first, so that r->got ends with the fused results. */
    for (int v = 1; v >= 0; v--) {
        if (!exe[v])
            continue;
        const char *label = v ? "unfused" : "fused";
        for (size_t i = 0; i < r->n; i++)
            memset(r->got[i], 0xff, bytes[i]);
        st = clf_run_host(exe[v], in->n, in->b, r->n, got_b);
        ck_assert_msg(st == CLF_OK, "clf_run_host (%s): %s: %s", label, clf_status_name(st),
                      clf_context_last_error(ctx));
        for (size_t i = 0; i < r->n; i++) {
            double rt = rtol, at = atol;
            for (const e2e_tol *t = tols; t && t->name; t++)
                if (strcmp(t->name, r->name[i]) == 0) {
                    rt = t->rtol;
                    at = t->atol;
                }
            char why[256] = "";
            ck_assert_msg(clf_test_close(r->dtype[i], r->got[i], r->want[i], r->numel[i], rt, at, why,
                                         sizeof why),
                          "%s output \"%s\" (%s, %zu elements) differs from the reference: %s", label,
                          r->name[i], clf_dtype_name(r->dtype[i]), r->numel[i], why);
        }
    }
    clf_executable_destroy(&exe[0]);
    clf_executable_destroy(&exe[1]);
    if (r == &local)
        e2e_run_free(r);
}

/* Compiles g with a forced template style and checks it against the
 * reference within rtol/atol (or the output's entry in tols, a list ended
 * by a NULL name; tols may be NULL); returns the kernel count. */
static inline size_t e2e_check_style_tols(clf_context *ctx, const clf_graph *g, const e2e_inputs *in,
                                          clf_kernel_style style, double rtol, double atol, const e2e_tol *tols)
{
    clf_executable *exe = NULL;
    clf_status st = clf_compile(ctx, g, clf_compile_params(.kernel_style = style), &exe);
    ck_assert_msg(st == CLF_OK, "compile: %s", clf_context_last_error(ctx));
    size_t nout = clf_executable_output_count(exe);
    clf_host_binding got[E2E_MAX_IO], want[E2E_MAX_IO];
    size_t numel[E2E_MAX_IO];
    clf_dtype dt[E2E_MAX_IO];
    ck_assert_uint_le(nout, E2E_MAX_IO);
    for (size_t i = 0; i < nout; i++) {
        const char *name;
        int rank;
        int64_t shape[CLF_MAX_RANK];
        clf_executable_output(exe, i, &name, &dt[i], &rank, shape);
        numel[i] = (size_t)e2e_numel(rank, shape);
        size_t bytes = numel[i] * clf_dtype_size(dt[i]);
        got[i] = (clf_host_binding){name, malloc(bytes + 4)};
        want[i] = (clf_host_binding){name, malloc(bytes + 4)};
        memset(got[i].data, 0xff, bytes);
    }
    char msg[256];
    ck_assert_int_eq(clf_reference_run(g, in->n, in->b, nout, want, msg, sizeof msg), CLF_OK);
    st = clf_run_host(exe, in->n, in->b, nout, got);
    ck_assert_msg(st == CLF_OK, "run: %s", clf_context_last_error(ctx));
    for (size_t i = 0; i < nout; i++) {
        char why[256];
        double rt = rtol, at = atol;
        for (const e2e_tol *t = tols; t && t->name; t++)
            if (strcmp(t->name, got[i].name) == 0) {
                rt = t->rtol;
                at = t->atol;
            }
        bool close = clf_test_close(dt[i], got[i].data, want[i].data, numel[i], rt, at, why, sizeof why);
        if (!close) /* the source on stderr: Check refuses messages of its size */
            fprintf(stderr, "%s\n", clf_executable_kernel_source(exe, 0));
        ck_assert_msg(close, "%s style output %s: %s (the first kernel's source is on stderr)",
                      style == CLF_KERNEL_STYLE_GPU ? "GPU" : "CPU", got[i].name, why);
        free(got[i].data);
        free(want[i].data);
    }
    size_t k = clf_executable_kernel_count(exe);
    clf_executable_destroy(&exe);
    return k;
}

/* e2e_check_style_tols with one tolerance for every output. */
static inline size_t e2e_check_style(clf_context *ctx, const clf_graph *g, const e2e_inputs *in, clf_kernel_style style,
                          double rtol, double atol)
{
    return e2e_check_style_tols(ctx, g, in, style, rtol, atol, NULL);
}

/* Fused (both styles) and unfused agree with the reference within
 * rtol/atol or the output's entry in tols (NULL: none); the fused plan has
 * the expected kernel count (E2E_ANY_KERNELS: any). Fills *r as e2e_check
 * does when r is not NULL (free with e2e_run_free). */
#define E2E_ANY_KERNELS ((size_t)-1)
static inline void e2e_check_all_tols(const clf_graph *g, const e2e_inputs *in, size_t want_kernels, double rtol,
                                      double atol, const e2e_tol *tols, e2e_run *r)
{
    clf_context *ctx = clf_test_context();
    e2e_run local;
    if (!r)
        r = &local;
    e2e_check(ctx, g, in, rtol, atol, tols, E2E_BOTH, r);
    size_t want = want_kernels == E2E_ANY_KERNELS ? r->kernels : want_kernels;
    ck_assert_uint_eq(r->kernels, want);
    if (r == &local)
        e2e_run_free(r);
    ck_assert_uint_eq(e2e_check_style_tols(ctx, g, in, CLF_KERNEL_STYLE_CPU, rtol, atol, tols), want);
    ck_assert_uint_eq(e2e_check_style_tols(ctx, g, in, CLF_KERNEL_STYLE_GPU, rtol, atol, tols), want);
    clf_context_destroy(&ctx);
}

/* Fused (both styles) and unfused agree with the reference; the fused plan
 * has the expected kernel count. */
static inline void e2e_check_all(const clf_graph *g, const e2e_inputs *in, size_t want_kernels, double rtol, double atol)
{
    e2e_check_all_tols(g, in, want_kernels, rtol, atol, NULL, NULL);
}


#endif
