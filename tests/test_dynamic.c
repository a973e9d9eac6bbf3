/* Suite "dynamic": symbolic dimensions (clf_dim). The rules the builder
 * applies to them and the errors it gives; the reference at given sizes;
 * one executable run at many sizes against the reference; the checks of
 * the shapes a run gives (names, bounds, agreement); specialisations kept,
 * evicted and made again; the constants they share. Contexts are made
 * inside each (forked) test. */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/driver_quirks.h"
#include "runtime/dynamic.h"
#include "runtime/program_merge.h"
#include "runtime/runtime_internal.h"
#include "runtime/source_lift.h"
#include "util/alloc.h"
#include "util/strbuf.h"
#include "util/text.h"
#include "clfuse/onnx.h"
#include "../tools/clfuse/npy.h"
#include "test_support.h"

#define D 24 /* model width */
#define H 16 /* hidden width */

/* ---- The builder's rules ---------------------------------------------------- */

START_TEST(dim_declarations)
{
    clf_graph *g = clf_graph_create();
    int64_t s = clf_dim(g, "S", 1, 4096);
    ck_assert(s < 0);
    int64_t t = clf_dim(g, "T", 0, 0);
    ck_assert(t < 0 && t != s);
    ck_assert_uint_eq(clf_graph_dim_count(g), 2);
    const char *name;
    int64_t lo, hi;
    ck_assert_int_eq(clf_graph_dim(g, 1, &name, &lo, &hi), CLF_OK);
    ck_assert_str_eq(name, "T");
    ck_assert(lo == 0 && hi == 0);
    ck_assert_int_eq(clf_graph_dim(g, 2, &name, &lo, &hi), CLF_ERR_NOT_FOUND);
    /* The stand-in size is never 1 where the bounds allow another. */
    clf_tensor x = clf_input(g, "x", CLF_F32, 3, (int64_t[]){1, s, D});
    int rank;
    int64_t shape[CLF_MAX_RANK];
    ck_assert_int_eq(clf_tensor_shape(g, x, &rank, shape), CLF_OK);
    ck_assert(rank == 3 && shape[1] == 2 && shape[2] == D);
    const char *names[CLF_MAX_RANK];
    ck_assert_int_eq(clf_tensor_dim_names(g, x, names), CLF_OK);
    ck_assert(names[0] == NULL && names[2] == NULL);
    ck_assert_str_eq(names[1], "S");
    /* A second S. */
    ck_assert_int_eq(clf_dim(g, "S", 1, 8), 0);
    const char *msg;
    ck_assert_int_eq(clf_graph_status(g, &msg), CLF_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(msg, "clf_dim") && strstr(msg, "'S' exists"), "%s", msg);
    clf_graph_destroy(&g);

    g = clf_graph_create();
    ck_assert_int_eq(clf_dim(g, "B", 5, 4), 0);
    ck_assert_int_eq(clf_graph_status(g, &msg), CLF_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(msg, "'B'") && strstr(msg, "5..4"), "%s", msg);
    clf_graph_destroy(&g);
}
END_TEST

/* Builds with S and T declared and returns the graph's message after f. */
typedef void (*builder)(clf_graph *g, int64_t s, int64_t t);

static void expect_error(builder f, const char *want1, const char *want2)
{
    clf_graph *g = clf_graph_create();
    int64_t s = clf_dim(g, "S", 1, 64), t = clf_dim(g, "T", 1, 64);
    f(g, s, t);
    const char *msg;
    ck_assert_int_eq(clf_graph_status(g, &msg), CLF_ERR_SHAPE);
    ck_assert_msg(strstr(msg, want1) && strstr(msg, want2), "'%s' lacks '%s' or '%s'", msg, want1, want2);
    clf_graph_destroy(&g);
}

static void add_s_to_t(clf_graph *g, int64_t s, int64_t t)
{
    clf_tensor a = clf_input(g, "a", CLF_F32, 2, (int64_t[]){s, D});
    clf_tensor b = clf_input(g, "b", CLF_F32, 2, (int64_t[]){t, D});
    clf_add(g, a, b);
}

static void add_s_to_fixed(clf_graph *g, int64_t s, int64_t t)
{
    (void)t;
    /* The stand-in of S is 2: a fixed 2 passes the concrete check. */
    clf_tensor a = clf_input(g, "a", CLF_F32, 2, (int64_t[]){s, D});
    clf_tensor b = clf_input(g, "b", CLF_F32, 2, (int64_t[]){2, D});
    clf_mul(g, a, b);
}

static void reshape_merges(clf_graph *g, int64_t s, int64_t t)
{
    (void)t;
    clf_tensor a = clf_input(g, "a", CLF_F32, 2, (int64_t[]){s, D});
    clf_reshape(g, a, 1, (int64_t[]){-1});
}

static void slice_part(clf_graph *g, int64_t s, int64_t t)
{
    (void)t;
    clf_tensor a = clf_input(g, "a", CLF_F32, 2, (int64_t[]){s, D});
    clf_slice(g, a, 1, (int64_t[]){0}, (int64_t[]){1}, (int[]){0}, NULL);
}

static void concat_along(clf_graph *g, int64_t s, int64_t t)
{
    clf_tensor a = clf_input(g, "a", CLF_F32, 2, (int64_t[]){s, D});
    clf_tensor b = clf_input(g, "b", CLF_F32, 2, (int64_t[]){t, D});
    clf_concat(g, 2, (clf_tensor[]){a, b}, 0);
}

static void contract_s_with_t(clf_graph *g, int64_t s, int64_t t)
{
    clf_tensor a = clf_input(g, "a", CLF_F32, 2, (int64_t[]){D, s});
    clf_tensor b = clf_input(g, "b", CLF_F32, 2, (int64_t[]){t, D});
    clf_matmul(g, a, b);
}

START_TEST(builder_refuses)
{
    expect_error(add_s_to_t, "symbolic S", "symbolic T");
    expect_error(add_s_to_fixed, "symbolic S", "meets 2");
    expect_error(reshape_merges, "clf_reshape", "symbolic S");
    expect_error(slice_part, "clf_slice", "symbolic S");
    expect_error(concat_along, "clf_concat", "symbolic S");
    expect_error(contract_s_with_t, "contracted axis", "symbolic T");
}
END_TEST

/* Shapes follow the symbols through reshape (named in the target),
 * transpose, unsqueeze, broadcasting, reductions and matmul. */
START_TEST(symbols_propagate)
{
    clf_graph *g = clf_graph_create();
    int64_t s = clf_dim(g, "S", 1, 64);
    clf_tensor x = clf_input(g, "x", CLF_F32, 3, (int64_t[]){1, s, D});
    clf_tensor r = clf_reshape(g, x, 4, (int64_t[]){1, s, 4, D / 4});
    clf_tensor p = clf_transpose(g, r, 4, (int[]){0, 2, 1, 3});          /* [1, 4, S, 6] */
    clf_tensor u = clf_unsqueeze(g, clf_reduce_sum(g, p, 1, (int[]){3}, false), 1, (int[]){0}); /* [1,1,4,S] */
    clf_tensor m = clf_matmul(g, clf_reshape(g, x, 2, (int64_t[]){s, D}),
                              clf_constant(g, CLF_F32, 2, (int64_t[]){D, 1}, (float[D]){0}));
    ck_assert_int_eq(clf_graph_status(g, NULL), CLF_OK);
    const char *n[CLF_MAX_RANK];
    ck_assert_int_eq(clf_tensor_dim_names(g, p, n), CLF_OK);
    ck_assert(!n[0] && !n[1] && n[2] && !strcmp(n[2], "S") && !n[3]);
    ck_assert_int_eq(clf_tensor_dim_names(g, u, n), CLF_OK);
    ck_assert(!n[0] && !n[1] && !n[2] && n[3] && !strcmp(n[3], "S"));
    ck_assert_int_eq(clf_tensor_dim_names(g, m, n), CLF_OK);
    ck_assert(n[0] && !strcmp(n[0], "S") && !n[1]);
    clf_graph_destroy(&g);
}
END_TEST

/* ---- A small model with a sequence length S ----------------------------------- */

/* x [1, S, D] -> layer norm -> @ w [D, H] + b -> relu -> y [1, S, H];
 * m = mean of y over S [1, 1, H]; a = causal self-attention of y's
 * reshape to heads [1, 2, S, H/2] -> [1, 2, S, H/2]. Weights from seed. */
static clf_graph *model(int64_t lo, int64_t hi)
{
    clf_graph *g = clf_graph_create();
    int64_t s = clf_dim(g, "S", lo, hi);
    float w[D * H], b[H];
    clf_test_fill_f32(w, D * H, -0.3f, 0.3f);
    clf_test_fill_f32(b, H, -0.1f, 0.1f);
    clf_tensor x = clf_input(g, "x", CLF_F32, 3, (int64_t[]){1, s, D});
    clf_tensor n = clf_layer_norm(g, x, -1, 1e-5, CLF_TENSOR_INVALID, CLF_TENSOR_INVALID);
    clf_tensor h = clf_matmul(g, n, clf_constant(g, CLF_F32, 2, (int64_t[]){D, H}, w));
    clf_tensor y = clf_relu(g, clf_add(g, h, clf_constant(g, CLF_F32, 1, (int64_t[]){H}, b)));
    clf_graph_output(g, "y", y);
    clf_graph_output(g, "m", clf_reduce_mean(g, y, 1, (int[]){1}, true));
    clf_tensor q = clf_transpose(g, clf_reshape(g, y, 4, (int64_t[]){1, s, 2, H / 2}), 4, (int[]){0, 2, 1, 3});
    clf_graph_output(g, "a", clf_attention(g, q, q, q, CLF_TENSOR_INVALID, 0, true));
    const char *msg;
    ck_assert_msg(clf_graph_status(g, &msg) == CLF_OK, "%s", msg);
    return g;
}

/* Runs exe at length s on x ([1, s, D]) against the reference of g;
 * false with why (naming s, the output and the error; or the status and
 * the context's message) where they differ. Takes no ck_assert: threads
 * call it. */
static bool compare_at(clf_executable *exe, const clf_graph *g, int64_t s, float *x, char *why, size_t cap)
{
    const size_t ny = (size_t)s * H;
    float *y = malloc(ny * sizeof *y), *a = malloc(ny * sizeof *a), *wy = malloc(ny * sizeof *wy),
          *wa = malloc(ny * sizeof *wa), m[H], wm[H];
    bool ok = y && a && wy && wa;
    why[0] = '\0';
    if (!ok)
        snprintf(why, cap, "S=%lld: out of memory", (long long)s);
    if (ok) {
        memset(y, 0xff, ny * sizeof *y);
        int64_t xs[3] = {1, s, D};
        const int64_t *shapes[1] = {xs};
        clf_host_binding in[1] = {{"x", x}};
        clf_host_binding want[3] = {{"y", wy}, {"m", wm}, {"a", wa}}, got[3] = {{"y", y}, {"m", m}, {"a", a}};
        char msg[200];
        clf_status st = clf_reference_run_shaped(g, 1, in, shapes, 3, want, msg, sizeof msg);
        if (st != CLF_OK)
            snprintf(why, cap, "S=%lld: the reference: %s", (long long)s, msg);
        else if ((st = clf_run_host_shaped(exe, 1, in, shapes, 3, got)) != CLF_OK)
            snprintf(why, cap, "S=%lld: %s: %s", (long long)s, clf_status_name(st),
                     clf_context_last_error(exe->ctx));
        else if (!clf_test_close(CLF_F32, y, wy, ny, 1e-4, 1e-5, msg, sizeof msg))
            snprintf(why, cap, "S=%lld y: %s", (long long)s, msg);
        else if (!clf_test_close(CLF_F32, m, wm, H, 1e-4, 1e-5, msg, sizeof msg))
            snprintf(why, cap, "S=%lld m: %s", (long long)s, msg);
        else if (!clf_test_close(CLF_F32, a, wa, ny, 1e-4, 1e-5, msg, sizeof msg))
            snprintf(why, cap, "S=%lld a: %s", (long long)s, msg);
        ok = st == CLF_OK && !why[0];
    }
    free(y);
    free(a);
    free(wy);
    free(wa);
    return ok;
}

/* Runs exe at length s on random x against the reference of g. */
static void check_at(clf_executable *exe, const clf_graph *g, int64_t s)
{
    const size_t nx = (size_t)s * D;
    float *x = malloc(nx * sizeof *x);
    ck_assert_ptr_nonnull(x);
    clf_test_fill_f32(x, nx, -2, 2);
    char why[400] = "";
    ck_assert_msg(compare_at(exe, g, s, x, why, sizeof why), "%s", why);
    free(x);
}

/* One executable, every length the issue names, each against the reference;
 * a length seen before plans and builds nothing more. */
/* One executable of the model in the given device form, run at many
 * lengths against the reference. */
static void many_lengths(clf_kernel_style style)
{
    clf_context *ctx = clf_test_context();
    clf_graph *g = model(1, 1024);
    clf_executable *exe = NULL;
    clf_test_log ll = clf_test_log_begin("cache");
    clf_status st = clf_compile(ctx, g, clf_compile_params(.kernel_style = style), &exe);
    static char log[1 << 17];
    clf_test_log_end(&ll, log, sizeof log);
    ck_assert_msg(st == CLF_OK, "%s: %s", clf_status_name(st), clf_context_last_error(ctx));
    /* The compile's programs for the kernels' shared forms: where the log
     * names n of them, one build of all n where the context builds
     * several sources as one (PoCL), else "program i of n" for every i. */
    const char *head = strstr(log, "symbolic sizes: ");
    size_t n = 0;
    for (; head; head = strstr(head + 1, "symbolic sizes: "))
        if (sscanf(head, "symbolic sizes: %zu program", &n) == 1)
            break;
    char line[96];
    snprintf(line, sizeof line, "symbolic sizes: the kernels' shared forms: %zu programs as one: ", n);
    ck_assert_msg(n < 2 || !ctx->one_program || strstr(log, line), "no \"%s\" in the compile's log:\n%s", line,
                  log);
    for (size_t i = 1; i <= n && (n < 2 || !ctx->one_program); i++) {
        snprintf(line, sizeof line, "symbolic sizes: program %zu of %zu: ", i, n);
        ck_assert_msg(strstr(log, line), "no \"%s\" in the compile's log:\n%s", line, log);
    }
    /* The queries describe the stand-in; symbolic extents read -1. */
    int rank;
    int64_t shape[CLF_MAX_RANK];
    ck_assert_int_eq(clf_executable_input(exe, 0, NULL, NULL, &rank, shape), CLF_OK);
    ck_assert(rank == 3 && shape[0] == 1 && shape[1] == -1 && shape[2] == D);
    /* So do the statistics, unfused ones included (the stand-in is planned
     * unfused too; its specialisations are not). */
    clf_plan_stats stats;
    ck_assert_int_eq(clf_executable_stats(exe, &stats), CLF_OK);
    ck_assert_uint_gt(stats.kernels, 0);
    ck_assert_uint_gt(stats.unfused_kernels, stats.kernels);
    /* On a CPU, clf_compile built every program: the lengths after it,
     * seen or not, build nothing (their literals are kernel arguments; size
     * 1 has kernels of its own, built at compile time too). A GPU's kernels
     * take more forms (GEMM tiles by rows): a length may build its form's
     * generic program, once, and then a length of the same class (the
     * second of each pair) builds nothing. */
    clf_device_desc dev;
    ck_assert_int_eq(clf_context_device(ctx, &dev), CLF_OK);
    ck_assert_msg(n > 0 || !dev.is_cpu || style != CLF_KERNEL_STYLE_AUTO, "no programs counted:\n%s", log);
    static const int64_t lengths[][2] = {{1, 1},   {2, 2},   {17, 19},   {80, 112},
                                         {1000, 1016}, {17, 17}, {333, 335}, {64, 128}};
    for (size_t i = 0; i < sizeof lengths / sizeof *lengths; i++) {
        clf__program_counts before = ctx->counts;
        check_at(exe, g, lengths[i][0]);
        unsigned long long built = ctx->counts.source_builds - before.source_builds;
        ck_assert_msg(built == 0 || style == CLF_KERNEL_STYLE_GPU || !dev.is_cpu, "S=%lld built %llu programs",
                      (long long)lengths[i][0], built);
        if (i == 5) /* 17 again: the specialisation is kept */
            ck_assert_uint_eq(ctx->counts.plans_built, before.plans_built);
        before = ctx->counts;
        const size_t lexed = clf__lift_sources_lexed(exe->dyn->lift);
        check_at(exe, g, lengths[i][1]);
        built = ctx->counts.source_builds - before.source_builds;
        ck_assert_msg(built == 0, "S=%lld (after S=%lld) built %llu programs", (long long)lengths[i][1],
                      (long long)lengths[i][0], built);
        /* Nor lexes any source: each differs from its group's first one
         * only in literals the group's generic program takes. */
        ck_assert_msg(clf__lift_sources_lexed(exe->dyn->lift) == lexed, "S=%lld (after S=%lld) lexed %zu sources",
                      (long long)lengths[i][1], (long long)lengths[i][0],
                      clf__lift_sources_lexed(exe->dyn->lift) - lexed);
    }
    /* One scratch for every specialisation (S = 17 ran again after larger
     * ones had grown it): each one's intermediates in the executable's
     * buffer, as large as the largest need and less than half as large
     * again. */
    const struct clf__dyn *d = exe->dyn;
    uint64_t largest = 0;
    size_t with = 0;
    for (size_t i = 0; i < d->nspecs; i++) {
        const clf_executable *x = d->specs[i]->exe;
        if (x->scratch_bytes == 0)
            continue;
        with++;
        largest = x->scratch_bytes > largest ? x->scratch_bytes : largest;
        ck_assert_ptr_eq(x->scratch, d->scratch);
    }
    ck_assert_uint_ge(with, 2);
    ck_assert_uint_ge(d->scratch_bytes, largest);
    ck_assert_uint_le(d->scratch_bytes, largest + largest / 2);
    clf_executable_destroy(&exe);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}

START_TEST(one_executable_many_lengths) { many_lengths(CLF_KERNEL_STYLE_AUTO); }
END_TEST

/* A thread of lengths_from_threads: its own lengths of model()'s
 * executable, each against the reference; failure "" when all agree. */
typedef struct length_worker {
    clf_executable *exe;
    const clf_graph *g;
    int id;
    char failure[320];
} length_worker;

static void *length_worker_run(void *arg)
{
    length_worker *w = arg;
    static const int64_t base[] = {3, 29, 90, 200};
    for (size_t i = 0; i < sizeof base / sizeof *base && !w->failure[0]; i++) {
        const int64_t s = base[i] + 2 * w->id; /* new lengths, some of a class no other thread ran */
        const size_t nx = (size_t)s * D;
        float *x = malloc(nx * sizeof *x);
        if (!x) {
            snprintf(w->failure, sizeof w->failure, "thread %d: out of memory", w->id);
            break;
        }
        for (size_t j = 0; j < nx; j++) /* (clf_test_fill_f32's generator is not the thread's own) */
            x[j] = (float)((j * 7 + (size_t)w->id * 3) % 23) / 11.0f - 1.0f;
        char why[280] = "";
        if (!compare_at(w->exe, w->g, s, x, why, sizeof why))
            snprintf(w->failure, sizeof w->failure, "thread %d: %s", w->id, why);
        free(x);
    }
    return NULL;
}

/* Threads running one executable of a symbolic graph at lengths of their
 * own at once: new forms are generated, probed and built (as one program
 * where the context builds so: clf__lift_prepare) while other threads'
 * specialisations get theirs through the same lift table. */
START_TEST(lengths_from_threads)
{
    enum { THREADS = 4 };
    clf_context *ctx = clf_test_context();
    clf_graph *g = model(1, 1024);
    /* The device's forms, then the GPU forms (GEMM tiles by rows: lengths
     * of new forms after the compile). */
    for (int style = CLF_KERNEL_STYLE_AUTO; style <= CLF_KERNEL_STYLE_GPU; style += CLF_KERNEL_STYLE_GPU) {
        clf_executable *exe = NULL;
        clf_status st = clf_compile(ctx, g, clf_compile_params(.kernel_style = (clf_kernel_style)style), &exe);
        ck_assert_msg(st == CLF_OK, "%s: %s", clf_status_name(st), clf_context_last_error(ctx));
        length_worker w[THREADS];
        pthread_t th[THREADS];
        for (int t = 0; t < THREADS; t++) {
            w[t] = (length_worker){.exe = exe, .g = g, .id = t};
            ck_assert_int_eq(pthread_create(&th[t], NULL, length_worker_run, &w[t]), 0);
        }
        for (int t = 0; t < THREADS; t++)
            pthread_join(th[t], NULL);
        for (int t = 0; t < THREADS; t++)
            ck_assert_msg(!w[t].failure[0], "style %d: %s", style, w[t].failure);
        clf_executable_destroy(&exe);
    }
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

/* GPT-2's attention (one qkv product with its bias, cut in three, q and
 * kT scaled by d^-1/4) with a symbolic length: a graph of fixed sizes
 * computes q and k from the product's parts in attention's loads (2
 * kernels, test_attention), but a specialisation stores them by pointwise
 * kernels (4 kernels: q [1, 2, S, 8] and kT [1, 2, 8, S] are two shapes):
 * every new length generates and instantiates its kernels again, and a
 * pointwise kernel is cheap to (planner.c). Right at two lengths, in both
 * forms. */
START_TEST(attention_reads_no_parts_where_sizes_vary)
{
    enum { E = 16, HD = 8 };
    clf_context *ctx = clf_test_context();
    for (int style = CLF_KERNEL_STYLE_CPU; style <= CLF_KERNEL_STYLE_GPU; style++) {
        clf_graph *g = clf_graph_create();
        int64_t s = clf_dim(g, "S", 1, 64);
        float w[E * 3 * E], b[3 * E];
        clf_test_fill_f32(w, E * 3 * E, -0.3f, 0.3f);
        clf_test_fill_f32(b, 3 * E, -0.1f, 0.1f);
        clf_tensor x = clf_input(g, "x", CLF_F32, 2, (int64_t[]){s, E});
        clf_tensor qkv = clf_add(g, clf_matmul(g, x, clf_constant(g, CLF_F32, 2, (int64_t[]){E, 3 * E}, w)),
                                 clf_constant(g, CLF_F32, 1, (int64_t[]){3 * E}, b));
        clf_tensor p[3];
        for (int i = 0; i < 3; i++) {
            const int64_t start = i * E, end = (i + 1) * E;
            const int axis = 1;
            p[i] = clf_transpose(g, clf_reshape(g, clf_slice(g, qkv, 1, &start, &end, &axis, NULL), 4,
                                                (int64_t[]){1, s, E / HD, HD}),
                                 4, (int[]){0, 2, 1, 3});
        }
        clf_tensor f = clf_scalar(g, CLF_F32, pow(HD, -0.25));
        clf_tensor kt = clf_transpose(g, p[1], 4, (int[]){0, 1, 3, 2});
        clf_tensor sc = clf_matmul(g, clf_mul(g, p[0], f), clf_mul(g, kt, f));
        clf_graph_output(g, "a", clf_matmul(g, clf_softmax(g, sc, -1), p[2]));
        clf_executable *exe = NULL;
        clf_status st = clf_compile(ctx, g, clf_compile_params(.kernel_style = (clf_kernel_style)style), &exe);
        ck_assert_msg(st == CLF_OK, "%s: %s", clf_status_name(st), clf_context_last_error(ctx));
        for (int64_t len = 3; len <= 5; len += 2) {
            float xv[5 * E], got[5 * E], want[5 * E];
            clf_test_fill_f32(xv, (size_t)(len * E), -2, 2);
            const int64_t xs[2] = {len, E};
            const int64_t *shapes[1] = {xs};
            clf_host_binding in[1] = {{"x", xv}}, wb[1] = {{"a", want}}, gb[1] = {{"a", got}};
            char msg[320];
            ck_assert_msg(clf_reference_run_shaped(g, 1, in, shapes, 1, wb, msg, sizeof msg) == CLF_OK, "%s", msg);
            st = clf_run_host_shaped(exe, 1, in, shapes, 1, gb);
            ck_assert_msg(st == CLF_OK, "S=%lld: %s: %s", (long long)len, clf_status_name(st),
                          clf_context_last_error(ctx));
            ck_assert_msg(clf_test_close(CLF_F32, got, want, (size_t)(len * E), 1e-4, 1e-5, msg, sizeof msg),
                          "S=%lld: %s", (long long)len, msg);
        }
        const struct clf__dyn *d = exe->dyn;
        ck_assert_uint_ge(d->nspecs, 2);
        for (size_t i = 0; i < d->nspecs; i++)
            ck_assert_uint_eq(clf_executable_kernel_count(d->specs[i]->exe), 4);
        clf_executable_destroy(&exe);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
}
END_TEST

/* One-row products cut into K slices (the GPU form, gemm_rows.cl) keep
 * counters and partial sums in the kernels' state, which every
 * specialisation shares (dynamic.c's share_state): a one-row product
 * beside a value of length S, run at lengths back and forth, each against
 * the reference, leaves no counter set for the next specialisation and
 * reads no other one's sums. */
START_TEST(split_products_share_state_across_lengths)
{
    enum { K = 2048, N = 40 };
    clf_context *ctx = clf_test_context();
    clf_graph *g = clf_graph_create();
    int64_t s = clf_dim(g, "S", 1, 8);
    float *w = malloc(K * N * sizeof *w);
    clf_test_fill_f32(w, K * N, -0.1f, 0.1f);
    clf_tensor x = clf_input(g, "x", CLF_F32, 2, (int64_t[]){1, K});
    clf_graph_output(g, "y", clf_relu(g, clf_matmul(g, x, clf_constant(g, CLF_F32, 2, (int64_t[]){K, N}, w))));
    clf_graph_output(g, "u", clf_relu(g, clf_input(g, "z", CLF_F32, 2, (int64_t[]){s, 4})));
    clf_executable *exe = NULL;
    clf_status st = clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU), &exe);
    ck_assert_msg(st == CLF_OK, "%s", clf_context_last_error(ctx));
    static const int64_t lengths[] = {1, 3, 1, 5, 2, 3, 1};
    float xv[K], z[8 * 4];
    for (size_t i = 0; i < sizeof lengths / sizeof *lengths; i++) {
        const int64_t S = lengths[i];
        float y[N], want[N], u[8 * 4], wu[8 * 4];
        clf_test_fill_f32(xv, K, -1, 1);
        clf_test_fill_f32(z, (size_t)S * 4, -1, 1);
        memset(y, 0xff, sizeof y);
        const int64_t xs[2] = {1, K}, zs[2] = {S, 4};
        const int64_t *shapes[2] = {xs, zs};
        clf_host_binding in[2] = {{"x", xv}, {"z", z}}, got[2] = {{"y", y}, {"u", u}};
        clf_host_binding ref[2] = {{"y", want}, {"u", wu}};
        char msg[320];
        ck_assert_msg(clf_reference_run_shaped(g, 2, in, shapes, 2, ref, msg, sizeof msg) == CLF_OK, "%s", msg);
        st = clf_run_host_shaped(exe, 2, in, shapes, 2, got);
        ck_assert_msg(st == CLF_OK, "S=%lld: %s", (long long)S, clf_context_last_error(ctx));
        ck_assert_msg(clf_test_close(CLF_F32, y, want, N, 1e-4, 1e-5, msg, sizeof msg), "S=%lld y: %s", (long long)S,
                      msg);
        ck_assert_msg(clf_test_close(CLF_F32, u, wu, (size_t)S * 4, 0, 0, msg, sizeof msg), "S=%lld u: %s",
                      (long long)S, msg);
    }
    /* Every specialisation sliced the product and ran with the one state
     * buffer. */
    const struct clf__dyn *d = exe->dyn;
    size_t sliced = 0;
    for (size_t i = 0; i < d->nspecs; i++) {
        const clf_executable *sp = d->specs[i]->exe;
        if (!sp->state_bytes)
            continue;
        sliced++;
        ck_assert_ptr_eq(sp->state, d->state);
        ck_assert_uint_le(sp->state_bytes, d->state_bytes);
    }
    ck_assert_uint_ge(sliced, 3);
    clf_executable_destroy(&exe);
    clf_graph_destroy(&g);
    free(w);
    clf_context_destroy(&ctx);
}
END_TEST

/* The GPU form (on PoCL too): its kernels' forms follow the sizes more. */
START_TEST(many_lengths_gpu_form) { many_lengths(CLF_KERNEL_STYLE_GPU); }
END_TEST

/* Shapes a run gives that do not fit are refused, naming what is wrong,
 * and nothing runs; runs without shapes are refused. */
START_TEST(bad_shapes_refused)
{
    clf_context *ctx = clf_test_context();
    clf_graph *g = clf_graph_create();
    int64_t s = clf_dim(g, "S", 2, 40);
    clf_tensor x = clf_input(g, "x", CLF_F32, 2, (int64_t[]){s, D});
    clf_tensor k = clf_input(g, "k", CLF_F32, 1, (int64_t[]){s});
    clf_graph_output(g, "y", clf_mul(g, x, clf_unsqueeze(g, k, 1, (int[]){1})));
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, g, NULL, &exe), CLF_OK);
    float xb[41 * D] = {0}, kb[41] = {0}, yb[41 * D];
    clf_host_binding in[2] = {{"x", xb}, {"k", kb}}, out[1] = {{"y", yb}};
    struct {
        int64_t xs[2], ks[1];
        const char *want1, *want2;
    } bad[] = {
        {{5, D + 1}, {5}, "input 'x'", "axis 1 is 25, but it is declared 24"},
        {{41, D}, {41}, "S = 41", "bounds 2..40"},
        {{1, D}, {1}, "S = 1", "bounds 2..40"},
        {{5, D}, {6}, "input 'k': axis 0 is S = 6", "input 'x' gives S = 5"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const int64_t *shapes[2] = {bad[i].xs, bad[i].ks};
        clf_status st = clf_run_host_shaped(exe, 2, in, shapes, 1, out);
        const char *msg = clf_context_last_error(ctx);
        ck_assert_int_eq(st, CLF_ERR_SHAPE);
        ck_assert_msg(strstr(msg, "clf_run_host_shaped") && strstr(msg, bad[i].want1) && strstr(msg, bad[i].want2),
                      "case %zu: %s", i, msg);
    }
    /* A shape missing for a symbolic input. */
    const int64_t *partial[2] = {NULL, (int64_t[]){5}};
    ck_assert_int_eq(clf_run_host_shaped(exe, 2, in, partial, 1, out), CLF_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clf_context_last_error(ctx), "input 'x' has symbolic"), "%s", clf_context_last_error(ctx));
    /* Runs without shapes. */
    ck_assert_int_eq(clf_run_host(exe, 2, in, 1, out), CLF_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clf_context_last_error(ctx), "symbolic dimensions (S)"), "%s", clf_context_last_error(ctx));
    ck_assert_int_eq(clf_run(exe, 0, NULL, 0, NULL, 0, NULL, NULL), CLF_ERR_INVALID_ARGUMENT);
    /* The same checks on an executable without symbols. */
    clf_graph *f = clf_graph_create();
    clf_graph_output(f, "y", clf_neg(f, clf_input(f, "x", CLF_F32, 2, (int64_t[]){3, D})));
    clf_executable *fixed = NULL;
    ck_assert_int_eq(clf_compile(ctx, f, NULL, &fixed), CLF_OK);
    const int64_t *fs[1] = {(int64_t[]){4, D}};
    ck_assert_int_eq(clf_run_host_shaped(fixed, 1, in, fs, 1, out), CLF_ERR_SHAPE);
    ck_assert_msg(strstr(clf_context_last_error(ctx), "axis 0 is 4, but it is declared 3"), "%s",
                  clf_context_last_error(ctx));
    fs[0] = (int64_t[]){3, D};
    ck_assert_int_eq(clf_run_host_shaped(fixed, 1, in, fs, 1, out), CLF_OK);
    clf_executable_destroy(&fixed);
    clf_graph_destroy(&f);
    /* A dimension no input carries is given by its name. */
    clf_graph *u = clf_graph_create();
    int64_t t = clf_dim(u, "T", 1, 8);
    clf_tensor ux = clf_input(u, "x", CLF_F32, 1, (int64_t[]){D});
    clf_graph_output(u, "y", clf_expand(u, clf_unsqueeze(u, ux, 1, (int[]){0}), 2, (int64_t[]){t, D}));
    ck_assert_int_eq(clf_graph_status(u, NULL), CLF_OK);
    clf_executable *ue = NULL;
    ck_assert_int_eq(clf_compile(ctx, u, NULL, &ue), CLF_OK);
    float ux_data[D], uy[5 * D];
    clf_test_fill_f32(ux_data, D, -1, 1);
    clf_host_binding uin[2] = {{"x", ux_data}, {"T", NULL}}, uout[1] = {{"y", uy}};
    const int64_t *ushapes[2] = {(int64_t[]){D}, (int64_t[]){5}};
    ck_assert_int_eq(clf_run_host_shaped(ue, 1, uin, ushapes, 1, uout), CLF_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(clf_context_last_error(ctx), "size of symbolic dimension T"), "%s",
                  clf_context_last_error(ctx));
    ck_assert_int_eq(clf_run_host_shaped(ue, 2, uin, ushapes, 1, uout), CLF_OK);
    for (int r = 0; r < 5; r++)
        ck_assert(memcmp(&uy[r * D], ux_data, sizeof ux_data) == 0);
    ushapes[1] = (int64_t[]){9};
    ck_assert_int_eq(clf_run_host_shaped(ue, 2, uin, ushapes, 1, uout), CLF_ERR_SHAPE);
    ck_assert_msg(strstr(clf_context_last_error(ctx), "dimension 'T'") && strstr(clf_context_last_error(ctx), "1..8"),
                  "%s", clf_context_last_error(ctx));
    clf_executable_destroy(&ue);
    clf_graph_destroy(&u);
    clf_executable_destroy(&exe);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

/* More lengths than are kept: the oldest are dropped and made again when
 * asked for; every specialisation shares the executable's constants. */
START_TEST(specialisations_evicted_and_shared)
{
    clf_context *ctx = clf_test_context();
    clf_graph *g = clf_graph_create();
    int64_t s = clf_dim(g, "S", 1, 100);
    float w[D];
    clf_test_fill_f32(w, D, -1, 1);
    clf_tensor x = clf_input(g, "x", CLF_F32, 2, (int64_t[]){s, D});
    clf_graph_output(g, "y", clf_add(g, clf_exp(g, x), clf_constant(g, CLF_F32, 1, (int64_t[]){D}, w)));
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, g, NULL, &exe), CLF_OK);
    for (int64_t n = 3; n < 3 + 20; n++) {
        float xb[(3 + 20) * D], yb[(3 + 20) * D], want[(3 + 20) * D];
        clf_test_fill_f32(xb, (size_t)n * D, -1, 1);
        const int64_t *shapes[1] = {(int64_t[]){n, D}};
        clf_host_binding in[1] = {{"x", xb}}, out[1] = {{"y", yb}}, ref[1] = {{"y", want}};
        char msg[256];
        ck_assert_msg(clf_reference_run_shaped(g, 1, in, shapes, 1, ref, msg, sizeof msg) == CLF_OK, "%s", msg);
        ck_assert_msg(clf_run_host_shaped(exe, 1, in, shapes, 1, out) == CLF_OK, "%s", clf_context_last_error(ctx));
        ck_assert_msg(clf_test_close(CLF_F32, yb, want, (size_t)n * D, 1e-5, 1e-6, msg, sizeof msg), "S=%lld: %s",
                      (long long)n, msg);
    }
    ck_assert_uint_le(exe->dyn->nspecs, 16);
    /* One constant buffer (w), made once. */
    ck_assert_uint_eq(exe->dyn->pool.n, 1);
    for (size_t i = 0; i < exe->dyn->nspecs; i++)
        for (uint32_t b = 0; b < exe->dyn->specs[i]->exe->nbuffers; b++)
            if (exe->dyn->specs[i]->exe->buffers[b].kind == CLF__BUF_CONSTANT &&
                exe->dyn->specs[i]->exe->buffers[b].bytes == sizeof w)
                ck_assert_ptr_eq(exe->dyn->specs[i]->exe->owned[b], exe->dyn->pool.items[0].mem);
    /* S = 3 was dropped: asking again makes it again, correctly. */
    uint64_t plans = ctx->counts.plans_built + ctx->counts.plan_hits;
    float xb[3 * D], yb[3 * D], want[3 * D];
    clf_test_fill_f32(xb, 3 * D, -1, 1);
    const int64_t *shapes[1] = {(int64_t[]){3, D}};
    clf_host_binding in[1] = {{"x", xb}}, out[1] = {{"y", yb}}, ref[1] = {{"y", want}};
    char msg[256];
    ck_assert(clf_reference_run_shaped(g, 1, in, shapes, 1, ref, msg, sizeof msg) == CLF_OK);
    ck_assert_int_eq(clf_run_host_shaped(exe, 1, in, shapes, 1, out), CLF_OK);
    ck_assert(clf_test_close(CLF_F32, yb, want, 3 * D, 1e-5, 1e-6, msg, sizeof msg));
    ck_assert_uint_gt(ctx->counts.plans_built + ctx->counts.plan_hits, plans);
    clf_executable_destroy(&exe);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

/* softmax(x) over rows of D with the rows S symbolic, compiled, and device
 * buffers for x (64 rows) and for y at S = 5 and S = 9. */
typedef struct two_lengths {
    clf_context *ctx;
    clf_graph *g;
    clf_executable *exe;
    float xb[64 * D];
    cl_mem bx, by5, by9;
    clf_buffer_view in[1], o5[1], o9[1];
    const int64_t *s5[1], *s9[1];
} two_lengths;

static void two_lengths_open(two_lengths *T)
{
    static const int64_t five[2] = {5, D}, nine[2] = {9, D};
    T->ctx = clf_test_context();
    T->g = clf_graph_create();
    int64_t s = clf_dim(T->g, "S", 1, 64);
    clf_tensor x = clf_input(T->g, "x", CLF_F32, 2, (int64_t[]){s, D});
    clf_graph_output(T->g, "y", clf_softmax(T->g, x, -1));
    T->exe = NULL;
    ck_assert_int_eq(clf_compile(T->ctx, T->g, NULL, &T->exe), CLF_OK);
    cl_int err;
    cl_context cl = clf_context_cl(T->ctx);
    clf_test_fill_f32(T->xb, 64 * D, -3, 3);
    T->bx = clCreateBuffer(cl, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof T->xb, T->xb, &err);
    T->by5 = clCreateBuffer(cl, CL_MEM_READ_WRITE, 5 * D * sizeof(float), NULL, &err);
    T->by9 = clCreateBuffer(cl, CL_MEM_READ_WRITE, 9 * D * sizeof(float), NULL, &err);
    ck_assert(T->bx && T->by5 && T->by9);
    T->in[0] = (clf_buffer_view){"x", T->bx, 0};
    T->o5[0] = (clf_buffer_view){"y", T->by5, 0};
    T->o9[0] = (clf_buffer_view){"y", T->by9, 0};
    T->s5[0] = five;
    T->s9[0] = nine;
}

/* Both outputs against the reference (the runs finished). */
static void two_lengths_check(two_lengths *T)
{
    float want5[5 * D], want9[9 * D], got[9 * D];
    char msg[256];
    cl_command_queue q = clf_context_queue(T->ctx);
    clf_host_binding hi[1] = {{"x", T->xb}}, r5[1] = {{"y", want5}}, r9[1] = {{"y", want9}};
    ck_assert(clf_reference_run_shaped(T->g, 1, hi, T->s5, 1, r5, msg, sizeof msg) == CLF_OK);
    ck_assert(clf_reference_run_shaped(T->g, 1, hi, T->s9, 1, r9, msg, sizeof msg) == CLF_OK);
    ck_assert_int_eq(clEnqueueReadBuffer(q, T->by5, CL_TRUE, 0, 5 * D * sizeof(float), got, 0, NULL, NULL),
                     CL_SUCCESS);
    ck_assert_msg(clf_test_close(CLF_F32, got, want5, 5 * D, 1e-5, 1e-6, msg, sizeof msg), "S = 5: %s", msg);
    ck_assert_int_eq(clEnqueueReadBuffer(q, T->by9, CL_TRUE, 0, 9 * D * sizeof(float), got, 0, NULL, NULL),
                     CL_SUCCESS);
    ck_assert_msg(clf_test_close(CLF_F32, got, want9, 9 * D, 1e-5, 1e-6, msg, sizeof msg), "S = 9: %s", msg);
}

static void two_lengths_close(two_lengths *T)
{
    clReleaseMemObject(T->bx);
    clReleaseMemObject(T->by5);
    clReleaseMemObject(T->by9);
    clf_executable_destroy(&T->exe);
    clf_graph_destroy(&T->g);
    clf_context_destroy(&T->ctx);
}

/* Device buffers on a queue: runs at two lengths, enqueued back to back,
 * each correct; the events order them. */
START_TEST(enqueue_shaped_buffers)
{
    two_lengths T;
    two_lengths_open(&T);
    cl_event e5 = NULL, e9 = NULL;
    ck_assert_int_eq(clf_enqueue_shaped(T.exe, NULL, 1, T.in, T.s5, 1, T.o5, 0, NULL, &e5), CLF_OK);
    ck_assert_int_eq(clf_enqueue_shaped(T.exe, NULL, 1, T.in, T.s9, 1, T.o9, 0, NULL, &e9), CLF_OK);
    ck_assert(e5 && e9);
    ck_assert_int_eq(clWaitForEvents(1, &e9), CL_SUCCESS);
    cl_int status = 0;
    clGetEventInfo(e5, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
    ck_assert_int_eq(status, CL_COMPLETE);
    two_lengths_check(&T);
    clReleaseEvent(e5);
    clReleaseEvent(e9);
    two_lengths_close(&T);
}
END_TEST

/* Runs at two lengths on two queues: the second (on the context's queue,
 * no wait list) waits for the first (on a queue of its own, held back by a
 * user event), since the specialisations share their scratch; both right
 * once the event is set. */
START_TEST(specialisations_follow_each_other_across_queues)
{
    two_lengths T;
    two_lengths_open(&T);
    cl_int err;
    cl_command_queue q2 = clf_test_queue(T.ctx, &err);
    ck_assert_ptr_nonnull(q2);
    /* Both specialisations made first, so that the runs below only run. */
    cl_event e5 = NULL, e9 = NULL;
    ck_assert_int_eq(clf_enqueue_shaped(T.exe, NULL, 1, T.in, T.s5, 1, T.o5, 0, NULL, &e5), CLF_OK);
    ck_assert_int_eq(clf_enqueue_shaped(T.exe, NULL, 1, T.in, T.s9, 1, T.o9, 0, NULL, &e9), CLF_OK);
    ck_assert_int_eq(clWaitForEvents(1, &e9), CL_SUCCESS);
    clReleaseEvent(e5);
    clReleaseEvent(e9);
    /* Poisoned outputs: the checks below see these runs' results. */
    static const float nan_fill = NAN;
    cl_command_queue q = clf_context_queue(T.ctx);
    ck_assert_int_eq(clEnqueueFillBuffer(q, T.by5, &nan_fill, sizeof nan_fill, 0, 5 * D * sizeof(float), 0, NULL, NULL),
                     CL_SUCCESS);
    ck_assert_int_eq(clEnqueueFillBuffer(q, T.by9, &nan_fill, sizeof nan_fill, 0, 9 * D * sizeof(float), 0, NULL, NULL),
                     CL_SUCCESS);
    ck_assert_int_eq(clFinish(q), CL_SUCCESS);
    cl_event gate = clCreateUserEvent(clf_context_cl(T.ctx), &err);
    ck_assert_ptr_nonnull(gate);
    ck_assert_int_eq(clf_enqueue_shaped(T.exe, q2, 1, T.in, T.s5, 1, T.o5, 1, &gate, &e5), CLF_OK);
    ck_assert_int_eq(clf_enqueue_shaped(T.exe, q, 1, T.in, T.s9, 1, T.o9, 0, NULL, &e9), CLF_OK);
    clFlush(q2);
    clFlush(q);
    nanosleep(&(struct timespec){0, 200 * 1000 * 1000}, NULL);
    cl_int status = 0;
    ck_assert_int_eq(clGetEventInfo(e9, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL), CL_SUCCESS);
    ck_assert_msg(status != CL_COMPLETE, "the run at S = 9 finished before the run at S = 5 it follows began");
    ck_assert_int_eq(clSetUserEventStatus(gate, CL_COMPLETE), CL_SUCCESS);
    ck_assert_int_eq(clWaitForEvents(1, &e9), CL_SUCCESS);
    ck_assert_int_eq(clGetEventInfo(e5, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL), CL_SUCCESS);
    ck_assert_int_eq(status, CL_COMPLETE);
    two_lengths_check(&T);
    clReleaseEvent(gate);
    clReleaseEvent(e5);
    clReleaseEvent(e9);
    clReleaseCommandQueue(q2);
    two_lengths_close(&T);
}
END_TEST

/* ---- Literals lifted out of sources (runtime/source_lift.h) ---------------- */

/* A generated-looking source: the macro N (17 or 64 here) and where it is
 * used, by the text of body. */
/* A source as the lift takes one: a text (util/text.h). */
static const char *lift_source(const char *defines, const char *body)
{
    static const char head[] = "#define CLF_KERNEL_NAME k\n"
                               "#define CLF_PARAMS __global float *restrict out\n"
                               "#define CLF_ARGS out\n";
    static const char tail[] = "#ifndef CLF_KERNEL_NAME\n#define CLF_KERNEL_NAME example\n#define N 8\n#endif\n";
    size_t n = strlen(head) + strlen(defines) + strlen(body) + strlen(tail) + 1;
    char *s = malloc(n);
    ck_assert_ptr_nonnull(s);
    snprintf(s, n, "%s%s%s%s", head, defines, tail, body);
    const char *text = clf__text_new(s, strlen(s));
    ck_assert_ptr_nonnull(text);
    free(s);
    return text;
}

/* The generic source after noting the sources of defines_a and defines_b
 * with body (NULL when nothing is lifted). */
static char *generic_of(const char *defines_a, const char *defines_b, const char *body)
{
    clf__lift_table *t = clf__lift_table_new();
    const char *a = lift_source(defines_a, body), *b = lift_source(defines_b, body);
    ck_assert_int_eq(clf__lift_note(t, a, false), CLF_OK);
    char *generic = clf__lift_generic_source(t, b);
    clf__text_release(a);
    clf__text_release(b);
    clf__lift_table_free(&t);
    return generic;
}

START_TEST(lift_rules)
{
    /* Used in a helper and a kernel that take CLF_PARAMS: a parameter. */
    const char *body = "static inline void put(uint i, CLF_PARAMS) { out[i] = N * 0.5f; }\n"
                       "__kernel void CLF_KERNEL_NAME(CLF_PARAMS, const uint n)\n"
                       "{ uint i = get_global_id(0); if (i < N) put(i, CLF_ARGS); }\n";
    char *g = generic_of("#define N 17u\n", "#define N 64u\n", body);
    ck_assert_ptr_nonnull(g);
    ck_assert_msg(strstr(g, "#define N clf_l0") && strstr(g, "CLF_PARAMS __global float *restrict out, const uint clf_l0") &&
                      strstr(g, "#define CLF_ARGS out, clf_l0") && strstr(g, "#define N 8"),
                  "%s", g);
    free(g);
    /* A float literal in a body; an int one beside a fixed one. */
    g = generic_of("", "", "__kernel void CLF_KERNEL_NAME(CLF_PARAMS, const uint n) { out[0] = 0x1.1p+4f; }\n");
    ck_assert_ptr_null(g); /* one source: nothing varies */
    clf__lift_table *t = clf__lift_table_new();
    const char *a = lift_source("", "__kernel void CLF_KERNEL_NAME(CLF_PARAMS, const uint n) { out[0] = 0x1.1p+4f + 3; }\n");
    const char *b = lift_source("", "__kernel void CLF_KERNEL_NAME(CLF_PARAMS, const uint n) { out[0] = 0x1p+6f + 3; }\n");
    ck_assert_int_eq(clf__lift_note(t, a, false), CLF_OK);
    g = clf__lift_generic_source(t, b);
    ck_assert_msg(g && strstr(g, "const float clf_l0") && strstr(g, "= clf_l0 + 3;"), "%s", g ? g : "(none)");
    free(g);
    clf__text_release(a);
    clf__text_release(b);
    clf__lift_table_free(&t);
    /* Where a run-time value would not do, the literal stays, and two
     * sizes are two programs: a preprocessor condition, a __local array,
     * a private array's bound, a helper without CLF_PARAMS, a double. */
    static const char *fixed[] = {
        "#if N > 20\n#define BIG 1\n#endif\n__kernel void CLF_KERNEL_NAME(CLF_PARAMS, const uint n) { out[0] = N; }\n",
        "__kernel void CLF_KERNEL_NAME(CLF_PARAMS, const uint n) { __local float tile[N]; tile[0] = 1.0f; out[0] = tile[0]; }\n",
        "__kernel void CLF_KERNEL_NAME(CLF_PARAMS, const uint n) { float acc[N]; acc[0] = 1.0f; out[0] = acc[0]; }\n",
        "static inline uint rows(void) { return N; }\n"
        "__kernel void CLF_KERNEL_NAME(CLF_PARAMS, const uint n) { out[0] = rows(); }\n",
    };
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
        g = generic_of("#define N 17\n", "#define N 64\n", fixed[i]);
        ck_assert_msg(g == NULL, "case %zu lifted: %s", i, g);
    }
    g = generic_of("#define X 0.5\n", "#define X 0.25\n",
                   "__kernel void CLF_KERNEL_NAME(CLF_PARAMS, const uint n) { out[0] = X; }\n");
    ck_assert_msg(g == NULL, "a double lifted: %s", g);
    /* Noting a source of a group seen before but for a literal compares
     * the texts, lexing nothing, and notes the literal as varying; one of
     * another literal type is lexed (another skeleton). */
    t = clf__lift_table_new();
    a = lift_source("#define N 17u\n", body);
    b = lift_source("#define N 1024u\n", body);
    const char *c = lift_source("#define N 17\n", body);
    ck_assert_int_eq(clf__lift_note(t, a, false), CLF_OK);
    ck_assert_uint_eq(clf__lift_sources_lexed(t), 1);
    ck_assert_int_eq(clf__lift_note(t, b, false), CLF_OK);
    ck_assert_uint_eq(clf__lift_sources_lexed(t), 1);
    g = clf__lift_generic_source(t, a);
    ck_assert_msg(g && strstr(g, "#define N clf_l0"), "%s", g ? g : "(none)");
    free(g);
    ck_assert_int_eq(clf__lift_note(t, c, false), CLF_OK);
    ck_assert_uint_eq(clf__lift_sources_lexed(t), 2);
    clf__text_release(a);
    clf__text_release(b);
    clf__text_release(c);
    clf__lift_table_free(&t);
}
END_TEST

/* Runs kernel name of prog (out, two lifted literals args, n = 16) and
 * checks out[i] against want(i). */
static void run_lifted(clf_context *ctx, cl_program prog, const char *name, const clf__lift_arg *args,
                       float (*want)(unsigned i))
{
    cl_int err;
    cl_kernel k = clCreateKernel(prog, name, &err);
    ck_assert_msg(err == CL_SUCCESS, "clCreateKernel(%s): %d", name, err);
    cl_mem out = clCreateBuffer(ctx->cl, CL_MEM_READ_WRITE, 16 * sizeof(float), NULL, &err);
    cl_command_queue q = clCreateCommandQueue(ctx->cl, ctx->device, 0, &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    cl_uint n = 16;
    ck_assert_int_eq(clSetKernelArg(k, 0, sizeof out, &out), CL_SUCCESS);
    for (uint32_t j = 0; j < 2; j++)
        ck_assert_int_eq(clSetKernelArg(k, 1 + j, args[j].size, args[j].bytes), CL_SUCCESS);
    ck_assert_int_eq(clSetKernelArg(k, 3, sizeof n, &n), CL_SUCCESS);
    size_t global = 16;
    ck_assert_int_eq(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL), CL_SUCCESS);
    float host[16];
    ck_assert_int_eq(clEnqueueReadBuffer(q, out, CL_TRUE, 0, sizeof host, host, 0, NULL, NULL), CL_SUCCESS);
    for (unsigned i = 0; i < 16; i++)
        ck_assert_msg(host[i] == want(i), "%s: out[%u] = %g, not %g", name, i, (double)host[i], (double)want(i));
    clReleaseCommandQueue(q);
    clReleaseMemObject(out);
    clReleaseKernel(k);
}

static float mod7_times3(unsigned i) { return (float)(i % 7) * 3.0f; }
static float mod5_half(unsigned i) { return (float)(i % 5) * 0.5f; }
static float mod1000_twice(unsigned i) { return (float)(i % 1000) * 2.0f; }
static float div7_plus3(unsigned i) { return (float)(i / 7) + 3.0f; }

/* A generic program built on the device computes what each concrete source
 * computes, with its values passed as arguments. */
START_TEST(lift_program_runs)
{
    clf_context *ctx = clf_test_context();
    clf__lift_table *t = clf__lift_table_new();
    const char *body = "__kernel void CLF_KERNEL_NAME(CLF_PARAMS, const uint n)\n"
                       "{ uint i = get_global_id(0); if (i < n) out[i] = (float)(i % N) * SCALE; }\n";
    const char *a = lift_source("#define N 5u\n#define SCALE 0.5f\n", body);
    const char *b = lift_source("#define N 7u\n#define SCALE 0x1.8p+1f\n", body);
    ck_assert_int_eq(clf__lift_note(t, a, false), CLF_OK);
    cl_program prog;
    size_t slot; /* SIZE_MAX: each program its own (no program of several) */
    clf__lift_arg *args;
    uint32_t nargs;
    cl_int berr;
    clf__program_counts before = ctx->counts;
    ck_assert_int_eq(clf__lift_program(ctx, t, b, &prog, &slot, &args, &nargs, &berr), CLF_OK);
    ck_assert_uint_eq(nargs, 2);
    ck_assert_uint_eq(slot, SIZE_MAX);
    ck_assert_uint_eq(ctx->counts.source_builds, before.source_builds + 1);
    /* Source a: the same program, its own values. */
    clf__lift_arg *args_a;
    uint32_t nargs_a;
    cl_program prog_a;
    ck_assert_int_eq(clf__lift_program(ctx, t, a, &prog_a, &slot, &args_a, &nargs_a, &berr), CLF_OK);
    ck_assert(prog_a == prog && nargs_a == 2);
    ck_assert_uint_eq(ctx->counts.source_builds, before.source_builds + 1);
    /* A third size, with longer literals: matched against the group's
     * first source without lexing, its own values. */
    const size_t lexed = clf__lift_sources_lexed(t);
    const char *e = lift_source("#define N 1000u\n#define SCALE 2.0f\n", body);
    clf__lift_arg *args_e;
    uint32_t nargs_e;
    cl_program prog_e;
    ck_assert_int_eq(clf__lift_program(ctx, t, e, &prog_e, &slot, &args_e, &nargs_e, &berr), CLF_OK);
    ck_assert(prog_e == prog && nargs_e == 2);
    ck_assert_uint_eq(clf__lift_sources_lexed(t), lexed);
    ck_assert_uint_eq(ctx->counts.source_builds, before.source_builds + 1);
    /* Not so: another type of literal (int, not uint: another skeleton),
     * or another token: lexed, another program each. */
    static const char *const others[][2] = {{"#define N 9\n#define SCALE 2.0f\n", NULL},
                                             {"#define N 9u\n#define SCALE 2.0f\n", "(float)(i / N)"}};
    for (int o = 0; o < 2; o++) {
        char *other_body = strdup(body), *at = strstr(other_body, "(float)(i % N)");
        if (others[o][1])
            memcpy(at, others[o][1], strlen(others[o][1]));
        const char *f = lift_source(others[o][0], other_body);
        clf__lift_arg *args_f;
        uint32_t nargs_f;
        cl_program prog_f;
        ck_assert_int_eq(clf__lift_program(ctx, t, f, &prog_f, &slot, &args_f, &nargs_f, &berr), CLF_OK);
        ck_assert(prog_f != prog);
        ck_assert_uint_eq(clf__lift_sources_lexed(t), lexed + 1 + (size_t)o);
        clReleaseProgram(prog_f);
        clf__free(args_f);
        clf__text_release(f);
        free(other_body);
    }
    /* Each source's values through the one program. */
    const clf__lift_arg *sets[3] = {args, args_a, args_e};
    float (*const want[3])(unsigned) = {mod7_times3, mod5_half, mod1000_twice};
    for (int k = 0; k < 3; k++)
        run_lifted(ctx, prog, "k", sets[k], want[k]);
    /* A literal the analysis lifts but the compiler wants constant (an
     * enumerator here): the generic program does not build, and the
     * source is built as it is. */
    const char *c = lift_source("#define N 5\n", "__kernel void CLF_KERNEL_NAME(CLF_PARAMS, const uint n) "
                                           "{ enum { ROWS = N }; out[0] = ROWS; }\n");
    const char *d = lift_source("#define N 9\n", "__kernel void CLF_KERNEL_NAME(CLF_PARAMS, const uint n) "
                                           "{ enum { ROWS = N }; out[0] = ROWS; }\n");
    ck_assert_int_eq(clf__lift_note(t, c, false), CLF_OK);
    cl_program prog_d;
    clf__lift_arg *args_d;
    uint32_t nargs_d;
    ck_assert_int_eq(clf__lift_program(ctx, t, d, &prog_d, &slot, &args_d, &nargs_d, &berr), CLF_OK);
    ck_assert_ptr_nonnull(prog_d);
    ck_assert_uint_eq(nargs_d, 0);
    clReleaseProgram(prog_d);
    clf__free(args_d);
    clf__text_release(c);
    clf__text_release(d);
    clReleaseProgram(prog);
    clReleaseProgram(prog_a);
    clReleaseProgram(prog_e);
    clf__free(args);
    clf__free(args_a);
    clf__free(args_e);
    clf__text_release(e);
    clf__text_release(a);
    clf__text_release(b);
    clf__lift_table_free(&t);
    clf_context_destroy(&ctx);
}
END_TEST

/* Where the context builds several sources as one program (PoCL), the
 * programs a new size's kernels need come from one build
 * (clf__lift_prepare), each kernel at its place in it; a set that does not
 * build as one is built apart after, and the failure is the kernel's own. */
START_TEST(lift_prepare_as_one)
{
    clf_context *ctx = clf_test_context();
    /* (Kernels named clf_*, as codegen names them: a merge renames them.) */
    ctx->one_program = true;
    clf__lift_table *t = clf__lift_table_new();
    static const char *const bodies[2] = {
        "__kernel void clf_k(CLF_PARAMS, const uint n)\n"
        "{ uint i = get_global_id(0); if (i < n) out[i] = (float)(i % N) * SCALE; }\n",
        "__kernel void clf_k(CLF_PARAMS, const uint n)\n"
        "{ uint i = get_global_id(0); if (i < n) out[i] = (float)(i / N) + SCALE; }\n"};
    const char *first[2], *now[2];
    for (int b = 0; b < 2; b++) {
        first[b] = lift_source("#define N 5u\n#define SCALE 0.5f\n", bodies[b]);
        now[b] = lift_source("#define N 7u\n#define SCALE 3.0f\n", bodies[b]);
        ck_assert_int_eq(clf__lift_note(t, first[b], false), CLF_OK);
    }
    /* Not where the context builds apart. */
    clf__program_counts before = ctx->counts;
    ctx->one_program = false;
    ck_assert_int_eq(clf__lift_prepare(ctx, t, now, 2), CLF_OK);
    ck_assert_uint_eq(ctx->counts.source_builds, before.source_builds);
    ctx->one_program = true;
    ck_assert_int_eq(clf__lift_prepare(ctx, t, now, 2), CLF_OK);
    ck_assert_uint_eq(ctx->counts.source_builds, before.source_builds + 1);
    cl_program prog[2];
    size_t slot[2];
    clf__lift_arg *args[2];
    uint32_t nargs;
    cl_int berr;
    for (int b = 0; b < 2; b++) {
        ck_assert_int_eq(clf__lift_program(ctx, t, now[b], &prog[b], &slot[b], &args[b], &nargs, &berr), CLF_OK);
        ck_assert_uint_eq(nargs, 2);
    }
    ck_assert_uint_eq(ctx->counts.source_builds, before.source_builds + 1);
    ck_assert_ptr_eq(prog[0], prog[1]);
    ck_assert(slot[0] != SIZE_MAX && slot[1] != SIZE_MAX && slot[0] != slot[1]);
    /* Prepared again (a memo serves each): nothing more. */
    ck_assert_int_eq(clf__lift_prepare(ctx, t, now, 2), CLF_OK);
    ck_assert_uint_eq(ctx->counts.source_builds, before.source_builds + 1);
    float (*const want[2])(unsigned) = {mod7_times3, div7_plus3};
    for (int b = 0; b < 2; b++) {
        char *name = clf__merged_name("clf_k", slot[b]);
        run_lifted(ctx, prog[b], name, args[b], want[b]);
        clf__free(name);
        clReleaseProgram(prog[b]);
        clf__free(args[b]);
        clf__text_release(first[b]);
        clf__text_release(now[b]);
    }
    /* One source that does not build: the pair is built apart, the good
     * one as its own program, the bad one's failure its own. */
    const char *pair[2] = {
        lift_source("#define N 5u\n", "__kernel void clf_k(CLF_PARAMS) { out[0] = N + 1; }\n"),
        lift_source("#define N 5u\n", "__kernel void clf_k(CLF_PARAMS) { out[0] = clf_nowhere(N); }\n")};
    before = ctx->counts;
    ck_assert_int_eq(clf__lift_prepare(ctx, t, pair, 2), CLF_OK);
    ck_assert_str_eq(clf_context_last_error(ctx), "");
    cl_program good, bad = NULL;
    clf__lift_arg *none;
    ck_assert_int_eq(clf__lift_program(ctx, t, pair[0], &good, &slot[0], &none, &nargs, &berr), CLF_OK);
    ck_assert_uint_eq(slot[0], SIZE_MAX);
    clReleaseProgram(good);
    clf__free(none);
    ck_assert_int_eq(clf__lift_program(ctx, t, pair[1], &bad, &slot[1], &none, &nargs, &berr), CLF_ERR_BUILD);
    ck_assert_ptr_null(bad);
    clf__free(none);
    clf__text_release(pair[0]);
    clf__text_release(pair[1]);
    clf__lift_table_free(&t);
    clf_context_destroy(&ctx);
}
END_TEST

/* ---- ONNX models with symbolic dimensions ------------------------------------ */

/* A model whose shape arithmetic reads S (Shape, Gather, Concat, Reshape),
 * with a softmax along S and a 16 x 16 weight (1 KiB: borrowed). */
static char *onnx_model_text(void)
{
    clf__strbuf sb = {0};
    clf__sb_puts(&sb, "<ir_version: 8, opset_import: [\"\" : 17]>\n"
                      "g (float[1, S, 16] x) => (float[1, S, 16] y, float[1, 16] m) <float[16, 16] w = {");
    for (int i = 0; i < 256; i++)
        clf__sb_printf(&sb, "%s%g", i ? ", " : "", (double)((i * 37 % 29) - 14) / 16.0);
    clf__sb_puts(&sb, "}, int64[1] one = {1}, int64[1] last = {-1}> {\n"
                      "  h = MatMul(x, w)\n"
                      "  shp = Shape(x)\n"
                      "  s = Gather <axis = 0> (shp, one)\n"
                      "  rows = Concat <axis = 0> (s, last)\n"
                      "  flat = Reshape(h, rows)\n"
                      "  sm = Softmax <axis = 0> (flat)\n"
                      "  y = Reshape(sm, shp)\n"
                      "  m = ReduceMean <axes = [1], keepdims = 0> (x)\n"
                      "}\n");
    ck_assert(clf__sb_ok(&sb));
    return clf__sb_take(&sb);
}

START_TEST(onnx_symbolic_dims)
{
    clf_context *ctx = clf_test_context();
    char *text = onnx_model_text();
    char msg[512] = "";
    clf_onnx_model *model = NULL;
    clf_onnx_symbol sym = {"S", 1, 64};
    clf_status st = clf_onnx_load_memory(text, strlen(text), NULL,
                                         clf_onnx_params(.symbols = &sym, .nsymbols = 1, .message = msg,
                                                         .message_cap = sizeof msg),
                                         &model);
    ck_assert_msg(st == CLF_OK, "%s", msg);
    const clf_graph *g = clf_onnx_model_graph(model);
    ck_assert_uint_eq(clf_graph_dim_count(g), 1);
    clf_executable *exe = NULL;
    st = clf_compile(ctx, g, NULL, &exe);
    ck_assert_msg(st == CLF_OK, "%s", clf_context_last_error(ctx));
    int rank;
    int64_t shape[CLF_MAX_RANK];
    ck_assert_int_eq(clf_executable_output(exe, 0, NULL, NULL, &rank, shape), CLF_OK);
    ck_assert(rank == 3 && shape[1] == -1 && shape[2] == 16);
    const clf__program_counts compiled = ctx->counts;
    static const int64_t lengths[] = {1, 5, 17, 40, 5};
    for (size_t i = 0; i < sizeof lengths / sizeof *lengths; i++) {
        const int64_t S = lengths[i];
        size_t n = (size_t)S * 16;
        float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *wy = malloc(n * sizeof *wy), m[16], wm[16];
        clf_test_fill_f32(x, n, -2, 2);
        const int64_t xs[3] = {1, S, 16};
        const int64_t *shapes[1] = {xs};
        clf_host_binding in[1] = {{"x", x}}, got[2] = {{"y", y}, {"m", m}}, want[2] = {{"y", wy}, {"m", wm}};
        ck_assert_msg(clf_reference_run_shaped(g, 1, in, shapes, 2, want, msg, sizeof msg) == CLF_OK, "%s", msg);
        st = clf_run_host_shaped(exe, 1, in, shapes, 2, got);
        ck_assert_msg(st == CLF_OK, "S=%lld: %s", (long long)S, clf_context_last_error(ctx));
        ck_assert_msg(clf_test_close(CLF_F32, y, wy, n, 1e-4, 1e-5, msg, sizeof msg), "S=%lld y: %s", (long long)S, msg);
        ck_assert_msg(clf_test_close(CLF_F32, m, wm, 16, 1e-4, 1e-5, msg, sizeof msg), "S=%lld m: %s", (long long)S,
                      msg);
        ck_assert_msg(ctx->counts.source_builds == compiled.source_builds, "S=%lld built a program", (long long)S);
        free(x);
        free(y);
        free(wy);
    }
    /* The weight, borrowed from the model by every import, is on the
     * device once. */
    ck_assert_uint_eq(exe->dyn->pool.n, 1);
    /* The graph outlives the model it came from. */
    clf_graph *taken = clf_onnx_model_take_graph(model);
    clf_onnx_model_destroy(&model);
    const int64_t *shapes[1] = {(int64_t[]){1, 3, 16}};
    float x3[48] = {0}, y3[48], m3[16];
    clf_host_binding in3[1] = {{"x", x3}}, out3[2] = {{"y", y3}, {"m", m3}};
    ck_assert_msg(clf_reference_run_shaped(taken, 1, in3, shapes, 2, out3, msg, sizeof msg) == CLF_OK, "%s", msg);
    ck_assert_float_eq_tol(y3[0], 1.0f / 3.0f, 1e-6f);
    ck_assert_int_eq(clf_run_host_shaped(exe, 1, in3, shapes, 2, out3), CLF_OK);
    ck_assert_float_eq_tol(y3[47], 1.0f / 3.0f, 1e-6f);
    clf_graph_destroy(&taken);
    clf_executable_destroy(&exe);
    /* Bad declarations of symbols, named. */
    static const char *const names[] = {"S"};
    static const int64_t values[] = {4};
    msg[0] = 0;
    st = clf_onnx_load_memory(text, strlen(text), NULL,
                              clf_onnx_params(.dim_names = names, .dim_values = values, .ndims = 1, .symbols = &sym,
                                              .nsymbols = 1, .message = msg, .message_cap = sizeof msg),
                              &model);
    ck_assert_int_eq(st, CLF_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(msg, "'S' is both given a size and kept symbolic"), "%s", msg);
    clf_onnx_symbol bad = {"S", 9, 4};
    st = clf_onnx_load_memory(text, strlen(text), NULL,
                              clf_onnx_params(.symbols = &bad, .nsymbols = 1, .message = msg, .message_cap = sizeof msg),
                              &model);
    ck_assert_int_eq(st, CLF_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(msg, "bounds 9..4"), "%s", msg);
    free(text);
    clf_context_destroy(&ctx);
}
END_TEST

/* A real exported model (tests/models: Llama, TorchScript exporter, dynamic
 * axes; its Shape -> Gather -> Concat -> Reshape chains read the sizes)
 * with its dim_params symbolic (batch lo[0]..hi[0], seq lo[1]..hi[1]): one
 * executable runs the fixture's two input sets (batch 2, seq 8 and batch
 * 3, seq 5) and matches onnxruntime's outputs for both. by_nodes: whether
 * the bounds leave room for the sizes that make the graph node by node
 * (graph_generalise.h: a new size imports nothing), else the model is
 * imported again at the second set's sizes, taking the folds it shares
 * with the first's from the memo. */
static void exported_model_two_sizes(const int64_t lo[2], const int64_t hi[2], bool by_nodes)
{
    const char *src = getenv("CLFUSE_TEST_SOURCE_DIR");
    char dir[1024], path[1200], msg[512] = "";
    snprintf(dir, sizeof dir, "%s/models/llama_torchscript_ids_dyn", src ? src : "tests");
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    /* The names of its symbolic dimensions, from a load at the first set's
     * sizes. */
    npy_array ids, mask;
    char nerr[200];
    snprintf(path, sizeof path, "%s/input_input_ids.npy", dir);
    ck_assert_msg(npy_read(path, &ids, nerr, sizeof nerr) == 0, "%s: %s", path, nerr);
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    clf_onnx_input_shape given = {.name = "input_ids", .dtype = CLF_I64, .rank = 2, .shape = {ids.shape[0], ids.shape[1]}};
    clf_onnx_model *model = NULL;
    clf_status st = clf_onnx_load_file(path, clf_onnx_params(.inputs = &given, .ninputs = 1, .message = msg,
                                                              .message_cap = sizeof msg),
                                       &model);
    ck_assert_msg(st == CLF_OK, "%s", msg);
    clf_onnx_io io;
    ck_assert_int_eq(clf_onnx_model_input(model, 0, &io), CLF_OK);
    ck_assert(io.rank == 2 && io.dim_params[0] && io.dim_params[1]);
    char names[2][64];
    snprintf(names[0], sizeof names[0], "%s", io.dim_params[0]);
    snprintf(names[1], sizeof names[1], "%s", io.dim_params[1]);
    clf_onnx_model_destroy(&model);
    npy_free(&ids);

    clf_onnx_symbol syms[2] = {{names[0], lo[0], hi[0]}, {names[1], lo[1], hi[1]}};
    clf_test_log ll = clf_test_log_begin("cache");
    st = clf_onnx_load_file(path, clf_onnx_params(.symbols = syms, .nsymbols = 2, .message = msg,
                                                   .message_cap = sizeof msg),
                            &model);
    static char load_log[1 << 16];
    clf_test_log_end(&ll, load_log, sizeof load_log);
    ck_assert_msg(st == CLF_OK, "%s", msg);
    ck_assert_msg(!!strstr(load_log, "made again node by node") == by_nodes, "%s", load_log);
    clf_context *ctx = clf_test_context();
    clf_executable *exe = NULL;
    st = clf_compile(ctx, clf_onnx_model_graph(model), NULL, &exe);
    ck_assert_msg(st == CLF_OK, "%s", clf_context_last_error(ctx));
    static const char *const sets[] = {"", "alt_"};
    for (int k = 0; k < 2; k++) {
        npy_array want;
        snprintf(path, sizeof path, "%s/%sinput_input_ids.npy", dir, sets[k]);
        ck_assert_msg(npy_read(path, &ids, nerr, sizeof nerr) == 0, "%s: %s", path, nerr);
        snprintf(path, sizeof path, "%s/%sinput_attention_mask.npy", dir, sets[k]);
        ck_assert_msg(npy_read(path, &mask, nerr, sizeof nerr) == 0, "%s: %s", path, nerr);
        snprintf(path, sizeof path, "%s/%soutput_logits.npy", dir, sets[k]);
        ck_assert_msg(npy_read(path, &want, nerr, sizeof nerr) == 0, "%s: %s", path, nerr);
        float *got = malloc(want.numel * sizeof *got);
        const int64_t *shapes[2] = {ids.shape, mask.shape};
        clf_host_binding in[2] = {{"input_ids", ids.data}, {"attention_mask", mask.data}}, out[1] = {{"logits", got}};
        /* The second set's import, where there is one, takes the folds
         * whose literals it shares with the first's from the memo
         * (onnx/fold_memo.h); the outputs below are still onnxruntime's. */
        clf_test_log lc = clf_test_log_begin("fusion");
        st = clf_run_host_shaped(exe, 2, in, shapes, 1, out);
        static char log[1 << 20];
        clf_test_log_end(&lc, log, sizeof log);
        ck_assert_msg(st == CLF_OK, "set %d: %s", k, clf_context_last_error(ctx));
        if (by_nodes)
            ck_assert_msg(!strstr(log, "folded into a constant"), "set %d: the model was imported again", k);
        else
            ck_assert_msg(k == 0 || strstr(log, "folded into a constant at load (as at an earlier import)"),
                          "set %d: no fold was taken from an earlier import", k);
        /* The normwise relative error the models suite allows. */
        double num = 0, den = 0;
        for (size_t i = 0; i < want.numel; i++) {
            double d = (double)got[i] - (double)((float *)want.data)[i];
            num += d * d;
            den += (double)((float *)want.data)[i] * (double)((float *)want.data)[i];
        }
        ck_assert_msg(num <= 1e-8 * den, "set %d: relative error %g", k, sqrt(num / den));
        free(got);
        npy_free(&ids);
        npy_free(&mask);
        npy_free(&want);
    }
    clf_executable_destroy(&exe);
    clf_onnx_model_destroy(&model);
    clf_context_destroy(&ctx);
}

/* Bounds around the two sets (few probes and builds on PoCL) leave no room
 * for the sizes that check a graph made node by node. */
START_TEST(onnx_exported_model_two_sizes)
{
    exported_model_two_sizes((const int64_t[2]){2, 5}, (const int64_t[2]){3, 8}, false);
}
END_TEST

/* Wider bounds: the graph is made node by node, its flattened batch * seq
 * axes a product of the two, its rotary tables from an import at the
 * upper bounds. */
START_TEST(onnx_exported_model_two_sizes_by_nodes)
{
    exported_model_two_sizes((const int64_t[2]){1, 1}, (const int64_t[2]){16, 24}, true);
}
END_TEST

/* The same exported model with batch fixed and seq symbolic, loaded twice:
 * with room in the bounds for the sizes that check a graph made node by
 * node (graph_generalise.h: seq 1..24), and without (1..11: imported again
 * at each size). Both run at four lengths, the first importing nothing at
 * a new one; their logits agree. */
START_TEST(onnx_exported_model_by_nodes)
{
    const char *src = getenv("CLFUSE_TEST_SOURCE_DIR");
    char path[1200], msg[512] = "", nerr[200];
    snprintf(path, sizeof path, "%s/models/llama_torchscript_ids_dyn/input_input_ids.npy", src ? src : "tests");
    npy_array ids;
    ck_assert_msg(npy_read(path, &ids, nerr, sizeof nerr) == 0, "%s: %s", path, nerr);
    snprintf(path, sizeof path, "%s/models/llama_torchscript_ids_dyn/model.onnx", src ? src : "tests");
    const int64_t B = ids.shape[0], T = ids.shape[1];
    const char *fixed[1] = {"batch"};
    clf_context *ctx = clf_test_context();
    clf_onnx_model *model[2] = {NULL, NULL};
    clf_executable *exe[2] = {NULL, NULL};
    static const int64_t hi[2] = {24, 11};
    static const char *const says[2] = {"made again node by node", "imported again at each new size"};
    for (int m = 0; m < 2; m++) {
        clf_onnx_symbol seq = {"seq", 1, hi[m]};
        clf_test_log ll = clf_test_log_begin("cache");
        clf_status st = clf_onnx_load_file(path, clf_onnx_params(.dim_names = fixed, .dim_values = &B, .ndims = 1,
                                                                  .symbols = &seq, .nsymbols = 1, .message = msg,
                                                                  .message_cap = sizeof msg),
                                           &model[m]);
        static char log[1 << 16];
        clf_test_log_end(&ll, log, sizeof log);
        ck_assert_msg(st == CLF_OK, "%s", msg);
        ck_assert_msg(strstr(log, says[m]), "model %d: %s", m, log);
        st = clf_compile(ctx, clf_onnx_model_graph(model[m]), NULL, &exe[m]);
        ck_assert_msg(st == CLF_OK, "%s", clf_context_last_error(ctx));
    }
    clf_onnx_io io;
    ck_assert_int_eq(clf_onnx_model_output(model[0], 0, &io), CLF_OK);
    const int64_t vocab = io.shape[io.rank - 1];
    static const int64_t lengths[] = {8, 1, 11, 3};
    for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++) {
        const int64_t L = lengths[l], shape[2] = {B, L};
        int64_t *tok = malloc((size_t)(B * L) * sizeof *tok), *mask = malloc((size_t)(B * L) * sizeof *mask);
        for (int64_t b = 0; b < B; b++)
            for (int64_t t = 0; t < L; t++) {
                tok[b * L + t] = ((const int64_t *)ids.data)[b * T + t % T];
                mask[b * L + t] = 1;
            }
        float *got[2];
        for (int m = 0; m < 2; m++) {
            got[m] = malloc((size_t)(B * L * vocab) * sizeof *got[m]);
            const int64_t *shapes[2] = {shape, shape};
            clf_host_binding in[2] = {{"input_ids", tok}, {"attention_mask", mask}}, out[1] = {{"logits", got[m]}};
            clf_test_log lc = clf_test_log_begin("fusion");
            clf_status st = clf_run_host_shaped(exe[m], 2, in, shapes, 1, out);
            static char log[1 << 20];
            clf_test_log_end(&lc, log, sizeof log);
            ck_assert_msg(st == CLF_OK, "length %lld: %s", (long long)L, clf_context_last_error(ctx));
            ck_assert_msg(m == 1 || !strstr(log, "folded into a constant"), "length %lld: imported again",
                          (long long)L);
        }
        for (int64_t i = 0; i < B * L * vocab; i++)
            ck_assert_msg(fabsf(got[0][i] - got[1][i]) <= 1e-5f * (1 + fabsf(got[1][i])), "length %lld, logit %lld: %g != %g",
                          (long long)L, (long long)i, got[0][i], got[1][i]);
        free(got[0]);
        free(got[1]);
        free(tok);
        free(mask);
    }
    for (int m = 0; m < 2; m++) {
        clf_executable_destroy(&exe[m]);
        clf_onnx_model_destroy(&model[m]);
    }
    npy_free(&ids);
    clf_context_destroy(&ctx);
}
END_TEST

static Suite *dynamic_suite(void)
{
    Suite *s = suite_create("dynamic");
    clf_test_add_case(s, "dim_declarations", dim_declarations);
    clf_test_add_case(s, "builder_refuses", builder_refuses);
    clf_test_add_case(s, "symbols_propagate", symbols_propagate);
    clf_test_add_case(s, "one_executable_many_lengths", one_executable_many_lengths);
    clf_test_add_case(s, "attention_reads_no_parts_where_sizes_vary", attention_reads_no_parts_where_sizes_vary);
    clf_test_add_case(s, "split_products_share_state_across_lengths", split_products_share_state_across_lengths);
    clf_test_add_case(s, "many_lengths_gpu_form", many_lengths_gpu_form);
    clf_test_add_case(s, "lengths_from_threads", lengths_from_threads);
    clf_test_add_case(s, "bad_shapes_refused", bad_shapes_refused);
    clf_test_add_case(s, "specialisations_evicted_and_shared", specialisations_evicted_and_shared);
    clf_test_add_case(s, "enqueue_shaped_buffers", enqueue_shaped_buffers);
    clf_test_add_case(s, "specialisations_follow_each_other_across_queues",
                      specialisations_follow_each_other_across_queues);
    clf_test_add_case(s, "lift_rules", lift_rules);
    clf_test_add_case(s, "lift_program_runs", lift_program_runs);
    clf_test_add_case(s, "lift_prepare_as_one", lift_prepare_as_one);
    clf_test_add_case(s, "onnx_symbolic_dims", onnx_symbolic_dims);
    clf_test_add_case(s, "onnx_exported_model_two_sizes", onnx_exported_model_two_sizes);
    clf_test_add_case(s, "onnx_exported_model_two_sizes_by_nodes", onnx_exported_model_two_sizes_by_nodes);
    clf_test_add_case(s, "onnx_exported_model_by_nodes", onnx_exported_model_by_nodes);
    return s;
}

int main(void)
{
    clf_test_setup_env();
    return clf_test_run_suite(dynamic_suite());
}
