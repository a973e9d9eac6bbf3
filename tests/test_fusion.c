/* Suite "fusion": what the planner makes of a graph, seen through the
 * public API — kernel counts, names, tensor reads and writes — and that the
 * fused kernels still agree with the reference interpreter. */
#include <check.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "runtime/driver_quirks.h"
#include "runtime/runtime_internal.h"
#include "test_e2e.h"

#define RTOL 1e-5
#define ATOL 1e-6

static clf_executable *compile(clf_context *ctx, const clf_graph *g, bool unfused)
{
    clf_executable *exe = NULL;
    clf_status st = clf_compile(ctx, g, unfused ? clf_compile_params(.disable_fusion = true) : NULL, &exe);
    ck_assert_msg(st == CLF_OK, "clf_compile: %s: %s", clf_status_name(st), clf_context_last_error(ctx));
    return exe;
}

/* relu(a*b + c): the seed example of DESIGN.md. */
START_TEST(chain_relu_mul_add)
{
    clf_context *ctx = clf_test_context();
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    const int64_t n = 1000;
    clf_tensor a = e2e_input(g, &in, "a", CLF_F32, 1, &n, -1.0, 1.0);
    clf_tensor b = e2e_input(g, &in, "b", CLF_F32, 1, &n, -1.0, 1.0);
    clf_tensor c = e2e_input(g, &in, "c", CLF_F32, 1, &n, -1.0, 1.0);
    clf_graph_output(g, "y", clf_relu(g, clf_add(g, clf_mul(g, a, b), c)));

    clf_executable *fused = compile(ctx, g, false), *unfused = compile(ctx, g, true);
    ck_assert_uint_eq(clf_executable_kernel_count(fused), 1);
    ck_assert_str_eq(clf_executable_kernel_name(fused, 0), "clf_poi_fused_add_mul_relu_0");
    const char *ops = clf_executable_kernel_ops(fused, 0);
    ck_assert(strstr(ops, "mul") && strstr(ops, "add") && strstr(ops, "relu"));
    clf_plan_stats s, u;
    ck_assert_int_eq(clf_executable_stats(fused, &s), CLF_OK);
    ck_assert_uint_eq(s.kernels, 1);
    ck_assert_uint_eq(s.launches, 1);
    ck_assert_uint_eq(s.tensor_reads, 3);
    ck_assert_uint_eq(s.tensor_writes, 1);
    ck_assert_uint_eq(s.bytes_read, 3 * 4 * n);
    ck_assert_uint_eq(s.bytes_written, 4 * n);
    ck_assert_uint_eq(s.unfused_kernels, 3);
    ck_assert_uint_eq(s.unfused_launches, 3);
    ck_assert_uint_eq(s.unfused_tensor_reads, 5);
    ck_assert_uint_eq(s.unfused_tensor_writes, 3);
    ck_assert_uint_eq(s.unfused_bytes_read, 5 * 4 * n);
    ck_assert_uint_eq(s.unfused_bytes_written, 3 * 4 * n);
    ck_assert_uint_eq(clf_executable_kernel_count(unfused), 3);
    ck_assert_int_eq(clf_executable_stats(unfused, &u), CLF_OK);
    ck_assert_uint_eq(u.kernels, 3);
    ck_assert_uint_eq(u.tensor_reads, 5);
    ck_assert_uint_eq(u.tensor_writes, 3);
    /* Kernels run in dependency order: mul, add, relu. */
    ck_assert(strstr(clf_executable_kernel_name(unfused, 0), "mul"));
    ck_assert(strstr(clf_executable_kernel_name(unfused, 2), "relu"));
    /* Small graphs index with 32 bits. */
    ck_assert(strstr(clf_executable_kernel_source(fused, 0), "#define IDX_T uint\n"));
    /* The source names its kernel without the plan index (kernels of one
     * source share their program). */
    ck_assert(strstr(clf_executable_kernel_source(fused, 0), "#define CLF_KERNEL_NAME clf_poi_fused_add_mul_relu\n"));
    clf_executable_destroy(&fused);
    clf_executable_destroy(&unfused);
    ck_assert_ptr_null(fused);

    e2e_check(ctx, g, &in, RTOL, ATOL, NULL, E2E_BOTH, NULL);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

/* exp(x) -> transpose -> reshape -> expand -> add -> relu: movement ops are
 * index arithmetic inside one kernel. */
START_TEST(chain_through_movement)
{
    clf_context *ctx = clf_test_context();
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    const int64_t sx[2] = {4, 6}, sy[2] = {3, 24}, s124[2] = {1, 24};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 2, sx, -2.0, 2.0);
    clf_tensor y = e2e_input(g, &in, "y", CLF_F32, 2, sy, -2.0, 2.0);
    clf_tensor t = clf_transpose(g, clf_exp(g, x), 0, NULL); /* [6,4] */
    t = clf_reshape(g, t, 2, s124);                            /* [1,24] */
    t = clf_expand(g, t, 2, sy);                               /* [3,24] */
    clf_graph_output(g, "out", clf_relu(g, clf_sub(g, t, clf_mul(g, y, y))));
    e2e_run r;
    e2e_check(ctx, g, &in, RTOL, ATOL, NULL, E2E_BOTH, &r);
    ck_assert_uint_eq(r.kernels, 1);
    ck_assert_uint_eq(r.stats.tensor_reads, 2);
    ck_assert_uint_eq(r.stats.tensor_writes, 1);
    ck_assert_uint_eq(r.unfused_kernels, 4); /* exp, mul, sub, relu */
    e2e_run_free(&r);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

/* A cast of views of a computed value is built as the views of the cast
 * value (graph.c): an f16 model's layer norm, computed in f32, reshaped to
 * the rows of the next product and cast back to f16, is then the norm's
 * epilogue: the norm's kernel and the product's, in both forms (the cast
 * after the reshape had a kernel of its own in the GPU form). Rows enough
 * (16384 elements) that the product does not compute the norm's
 * statistics itself (planner.c's row statistics). */
START_TEST(cast_of_views_joins_its_value)
{
    clf_context *ctx = clf_test_context();
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    const int64_t sx[3] = {2, 256, 32}, sw[2] = {32, 8}, rows[2] = {512, 32};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F16, 3, sx, -2.0, 2.0);
    clf_tensor w = e2e_input(g, &in, "w", CLF_F16, 2, sw, -1.0, 1.0);
    clf_tensor h = clf_layer_norm(g, clf_cast(g, x, CLF_F32), -1, 1e-5, CLF_TENSOR_INVALID, CLF_TENSOR_INVALID);
    clf_tensor y = clf_cast(g, clf_reshape(g, h, 2, rows), CLF_F16);
    ck_assert_int_eq(clf_graph_output(g, "out", clf_matmul(g, y, w)), CLF_OK);
    ck_assert_uint_eq(e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_GPU, 1e-2, 1e-2), 2);
    ck_assert_uint_eq(e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_CPU, 1e-2, 1e-2), 2);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

/* Outputs that are movement ops (or the input itself) must be written by a
 * kernel all the same. */
START_TEST(movement_outputs)
{
    clf_context *ctx = clf_test_context();
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    const int64_t sx[2] = {5, 6};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 2, sx, -2.0, 2.0);
    clf_tensor i = e2e_input(g, &in, "i", CLF_I32, 2, sx, -1000, 1000);
    clf_graph_output(g, "t", clf_transpose(g, x, 0, NULL));
    clf_graph_output(g, "same", x);
    const int64_t starts[2] = {-1, 1}, ends[2] = {INT64_MIN, 6}, steps[2] = {-2, 2};
    clf_graph_output(g, "rev", clf_slice(g, x, 2, starts, ends, NULL, steps)); /* [3,3] */
    clf_graph_output(g, "irev", clf_slice(g, i, 2, starts, ends, NULL, steps));
    const int axes[1] = {0};
    clf_graph_output(g, "unsq", clf_unsqueeze(g, i, 1, axes)); /* [1,5,6] */
    e2e_run r;
    e2e_check(ctx, g, &in, 0, 0, NULL, E2E_BOTH, &r);
    const float *xd = e2e_data(&in, "x"), *t = e2e_got(&r, "t"), *same = e2e_got(&r, "same");
    const float *rev = e2e_got(&r, "rev");
    for (int a = 0; a < 5; a++)
        for (int b = 0; b < 6; b++) {
            ck_assert(t[b * 5 + a] == xd[a * 6 + b]);
            ck_assert(same[a * 6 + b] == xd[a * 6 + b]);
        }
    /* rows 4, 2, 0; columns 1, 3, 5 */
    ck_assert(rev[0] == xd[4 * 6 + 1] && rev[8] == xd[0 * 6 + 5]);
    ck_assert_uint_ge(r.kernels, 3); /* [6,5], [5,6] and [3,3] at least */
    ck_assert_uint_eq(r.stats.tensor_writes, 5);
    e2e_run_free(&r);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

/* Multi-output: exp(x) and exp(x)*2 from one kernel; outputs of another
 * shape in another kernel; one node bound to two output names. */
START_TEST(multi_output)
{
    clf_context *ctx = clf_test_context();
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    const int64_t sx[2] = {8, 9}, sv[1] = {7};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 2, sx, -2.0, 2.0);
    clf_tensor e = clf_exp(g, x);
    clf_graph_output(g, "e", e);
    clf_graph_output(g, "e2", clf_mul(g, e, clf_scalar(g, CLF_F32, 2.0)));
    clf_executable *exe = compile(ctx, g, false);
    clf_plan_stats s;
    ck_assert_int_eq(clf_executable_stats(exe, &s), CLF_OK);
    ck_assert_uint_eq(clf_executable_kernel_count(exe), 1);
    ck_assert_uint_eq(s.tensor_reads, 1);
    ck_assert_uint_eq(s.tensor_writes, 2);
    ck_assert_uint_eq(s.unfused_kernels, 2);
    clf_executable_destroy(&exe);
    e2e_check(ctx, g, &in, RTOL, ATOL, NULL, E2E_FUSED, NULL);
    clf_graph_destroy(&g);
    e2e_inputs_free(&in);

    /* Different shapes, one depending on the other. */
    g = clf_graph_create();
    x = e2e_input(g, &in, "x", CLF_F32, 2, sx, -2.0, 2.0);
    clf_tensor v = e2e_input(g, &in, "v", CLF_F32, 1, sv, -2.0, 2.0);
    e = clf_exp(g, x);
    clf_graph_output(g, "e", e);
    const int64_t flat[1] = {72};
    clf_graph_output(g, "flat", clf_add(g, clf_reshape(g, e, 1, flat), clf_scalar(g, CLF_F32, 1.0)));
    clf_graph_output(g, "tv", clf_tanh(g, v));
    /* The same node under two names. */
    clf_tensor sq = clf_mul(g, x, x);
    clf_graph_output(g, "sq_a", sq);
    clf_graph_output(g, "sq_b", sq);
    e2e_run r;
    e2e_check(ctx, g, &in, RTOL, ATOL, NULL, E2E_BOTH, &r);
    ck_assert_uint_eq(r.kernels, 3); /* [8,9], [72], [7] */
    ck_assert_uint_eq(r.stats.tensor_writes, 5);
    const float *a = e2e_got(&r, "sq_a"), *b = e2e_got(&r, "sq_b");
    ck_assert(memcmp(a, b, 72 * sizeof(float)) == 0);
    e2e_run_free(&r);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

/* Scalar constants become literals (NaN, ±Inf and INT32_MIN included);
 * tensor constants are buffers uploaded at compile time. */
START_TEST(constants)
{
    clf_context *ctx = clf_test_context();
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    const int64_t sx[2] = {3, 4}, s4[1] = {4}, s31[2] = {3, 1};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 2, sx, -2.0, 2.0);
    clf_tensor k = e2e_input(g, &in, "k", CLF_I32, 2, sx, -100, 100);
    static const float orig[4] = {0.5f, -1.25f, 3.0f, 1e-3f};
    float cf[4];
    memcpy(cf, orig, sizeof cf);
    const int32_t ci[3] = {7, INT32_MIN, -3};
    clf_tensor tf = clf_constant(g, CLF_F32, 1, s4, cf);
    clf_tensor ti = clf_constant(g, CLF_I32, 2, s31, ci);
    memset(cf, 0x7f, sizeof cf); /* clf_constant copied the data */
    clf_graph_output(g, "affine", clf_add(g, clf_mul(g, x, clf_scalar(g, CLF_F32, 2.5)), tf));
    clf_graph_output(g, "plus_inf", clf_add(g, x, clf_scalar(g, CLF_F32, -INFINITY)));
    clf_graph_output(g, "max_nan", clf_maximum(g, x, clf_scalar(g, CLF_F32, NAN)));
    clf_graph_output(g, "imin", clf_minimum(g, k, clf_scalar(g, CLF_I32, -2147483648.0)));
    clf_graph_output(g, "iadd", clf_add(g, k, ti));
    clf_graph_output(g, "bsel", clf_where(g, clf_scalar(g, CLF_BOOL, 1), x, tf));
    clf_graph_output(g, "const_only", clf_mul(g, tf, tf));
    e2e_run r;
    e2e_check(ctx, g, &in, RTOL, ATOL, NULL, E2E_BOTH, &r);
    const float *pi = e2e_got(&r, "plus_inf"), *mn = e2e_got(&r, "max_nan");
    const int32_t *im = e2e_got(&r, "imin");
    for (int i = 0; i < 12; i++)
        ck_assert(pi[i] == -INFINITY && isnan(mn[i]) && im[i] == INT32_MIN);
    const float *af = e2e_got(&r, "affine"), *xd = e2e_data(&in, "x");
    for (int i = 0; i < 12; i++)
        ck_assert(fabsf(af[i] - (xd[i] * 2.5f + orig[i % 4])) <= 1e-5f);
    e2e_run_free(&r);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

/* A chain of 200 pointwise ops is cut into several kernels of bounded size
 * and still matches the reference. */
START_TEST(deep_chain)
{
    clf_context *ctx = clf_test_context();
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    const int64_t n = 100;
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 1, &n, -1.0, 1.0);
    clf_tensor t = x;
    for (int i = 0; i < 200; i++) {
        switch (i % 4) {
        case 0: t = clf_mul(g, t, clf_scalar(g, CLF_F32, 1.01)); break;
        case 1: t = clf_add(g, t, x); break;
        case 2: t = clf_tanh(g, t); break;
        default: t = clf_sub(g, t, clf_scalar(g, CLF_F32, 0.01)); break;
        }
    }
    clf_graph_output(g, "y", t);
    e2e_run r;
    /* 200 ops of rounding, some contracted to fma by the OpenCL compiler;
     * tanh keeps values in (-1, 1) so errors do not grow. */
    e2e_check(ctx, g, &in, 1e-4, 1e-5, NULL, E2E_FUSED, &r);
    ck_assert_uint_ge(r.kernels, 2);
    /* Chains are cut at 64 ops, or at CLF__SMALL_CODE_DEPTH on a compiler
     * that builds large kernels slowly (runtime/driver_quirks.h). */
    ck_assert_uint_le(r.kernels, ctx->quirks & CLF__QUIRK_SLOW_INLINED_CODE ? 200 / CLF__SMALL_CODE_DEPTH + 2 : 20);
    ck_assert_uint_eq(r.stats.unfused_kernels, 200);
    /* Each kernel writes one value: a cut that the next kernel reads, or y.
     * A cut buffer that no other kernel reads is a wasted write. */
    ck_assert_uint_eq(r.stats.tensor_writes, r.kernels);
    e2e_run_free(&r);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

/* Random graphs of pointwise and movement ops over [3,4]-shaped values:
 * fused, unfused and reference agree. */
static clf_tensor random_step(clf_graph *g, const clf_tensor *pool, size_t npool)
{
    clf_tensor a = pool[clf_test_rand() % npool], b = pool[clf_test_rand() % npool];
    static const int64_t s43[2] = {4, 3}, s12[1] = {12}, s34[2] = {3, 4}, s14[2] = {1, 4};
    static const int64_t rs[2] = {-1, -1}, re[2] = {INT64_MIN, INT64_MIN}, rstep[2] = {-1, -1};
    switch (clf_test_rand() % 12) {
    case 0: return clf_add(g, a, b);
    case 1: return clf_mul(g, a, clf_scalar(g, CLF_F32, 0.75));
    case 2: return clf_sub(g, a, b);
    case 3: return clf_tanh(g, a);
    case 4: return clf_maximum(g, a, b);
    case 5: return clf_where(g, clf_gt(g, a, b), clf_sigmoid(g, a), clf_neg(g, b));
    case 6: /* reshape to [4,3], transpose back to [3,4] */
        return clf_transpose(g, clf_reshape(g, a, 2, s43), 0, NULL);
    case 7: /* flatten and back */
        return clf_reshape(g, clf_abs(g, clf_reshape(g, a, 1, s12)), 2, s34);
    case 8: /* reverse both axes */
        return clf_slice(g, a, 2, rs, re, NULL, rstep);
    case 9: { /* row 1 broadcast over the rows */
        const int64_t st[1] = {1}, en[1] = {2};
        const int ax[1] = {0};
        return clf_expand(g, clf_reshape(g, clf_slice(g, a, 1, st, en, ax, NULL), 2, s14), 2, s34);
    }
    case 10: return clf_clip(g, clf_add(g, a, b), -1.5, 1.5);
    default: return clf_sin(g, clf_mul(g, a, b));
    }
}

START_TEST(random_mixed_graphs)
{
    clf_context *ctx = clf_test_context();
    for (int round = 0; round < 2; round++) {
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        const int64_t s[2] = {3, 4};
        clf_tensor pool[64];
        size_t np = 0;
        pool[np++] = e2e_input(g, &in, "a", CLF_F32, 2, s, -1.0, 1.0);
        pool[np++] = e2e_input(g, &in, "b", CLF_F32, 2, s, -1.0, 1.0);
        pool[np++] = clf_transpose(g, e2e_input(g, &in, "c", CLF_F32, 2, (const int64_t[]){4, 3}, -1.0, 1.0),
                                   0, NULL);
        for (int i = 0; i < 14; i++) {
            clf_tensor t = random_step(g, pool, np);
            pool[np++] = t;
        }
        clf_graph_output(g, "last", pool[np - 1]);
        clf_graph_output(g, "mid", pool[np / 2 + 1]);
        clf_graph_output(g, "early", pool[4]);
        e2e_run r;
        e2e_check(ctx, g, &in, 1e-4, 1e-5, NULL, E2E_BOTH, &r);
        ck_assert_uint_le(r.kernels, r.unfused_kernels);
        ck_assert_uint_le(r.stats.tensor_reads + r.stats.tensor_writes,
                          r.stats.unfused_tensor_reads + r.stats.unfused_tensor_writes);
        e2e_run_free(&r);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
}
END_TEST

/* Runs compile with CLFUSE_LOGS=topics and stderr in a temporary file;
 * returns what was printed (free it). */
static char *compile_logged(clf_context *ctx, const clf_graph *g, const char *topics, clf_executable **exe)
{
    char path[] = "/tmp/clfuse-log-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    fflush(stderr);
    int saved = dup(2);
    ck_assert_int_ge(saved, 0);
    ck_assert_int_ge(dup2(fd, 2), 0);
    setenv("CLFUSE_LOGS", topics, 1);
    clf_status st = clf_compile(ctx, g, NULL, exe);
    unsetenv("CLFUSE_LOGS");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ck_assert_int_eq(st, CLF_OK);
    off_t len = lseek(fd, 0, SEEK_END);
    char *text = calloc((size_t)len + 1, 1);
    ck_assert_ptr_nonnull(text);
    ck_assert_int_eq(pread(fd, text, (size_t)len, 0), len);
    close(fd);
    unlink(path);
    return text;
}

START_TEST(logs)
{
    /* No disk cache: a plan read back from it would log no decisions. */
    clf_context *ctx = NULL;
    ck_assert_int_eq(clf_context_create(clf_context_params(.disable_disk_cache = true), &ctx), CLF_OK);
    clf_graph *g = clf_graph_create();
    const int64_t n = 16;
    clf_tensor a = clf_input(g, "a", CLF_F32, 1, &n), b = clf_input(g, "b", CLF_F32, 1, &n);
    clf_graph_output(g, "y", clf_relu(g, clf_add(g, clf_mul(g, a, b), a)));
    clf_graph_output(g, "z", clf_exp(g, b)); /* joins y's kernel: a fusion decision */

    clf_executable *exe = NULL;
    char *text = compile_logged(ctx, g, "output_code", &exe);
    ck_assert_msg(strstr(text, "clf_poi_fused_add_exp_mul_relu_0"), "output_code log: %s", text);
    ck_assert_msg(strstr(text, "__kernel"), "the kernel source is printed: %s", text);
    ck_assert_msg(!strstr(text, "[clfuse:fusion]"), "only the topic asked for: %s", text);
    free(text);
    clf_executable_destroy(&exe);

    text = compile_logged(ctx, g, "fusion", &exe);
    ck_assert_msg(strstr(text, "[clfuse:fusion]"), "fusion log: %s", text);
    ck_assert_msg(strstr(text, "fused into kernel region"), "fusion decisions: %s", text);
    ck_assert_msg(!strstr(text, "__kernel"), "no kernel source without output_code: %s", text);
    free(text);
    clf_executable_destroy(&exe);

    /* Nothing at all without CLFUSE_LOGS. */
    text = compile_logged(ctx, g, "", &exe);
    ck_assert_str_eq(text, "");
    free(text);
    clf_executable_destroy(&exe);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST


/* The planner keeps a reduction's result in registers only where every read
 * of it is at the row being computed. Over rows of a rank-3 and a rank-4
 * tensor (the reduced axis last) x - max(x) fuses into the max's kernel
 * (issue 15: it did not, "at another row"); reading the max transposed over
 * two outer axes, or reversed along one, reads other rows and must go
 * through memory: two kernels, the refusal logged, the values right. */
START_TEST(row_results_read_at_another_row_are_not_fused)
{
    clf_context *ctx = NULL;
    ck_assert_int_eq(clf_context_create(clf_context_params(.disable_disk_cache = true), &ctx), CLF_OK);
    static const int64_t s3[3] = {4, 4, 8}, s4[4] = {2, 3, 4, 8};
    static const int perm[3] = {1, 0, 2}, axis2[1] = {2};
    static const int64_t rstart[1] = {-1}, rend[1] = {INT64_MIN}, rstep[1] = {-1};
    for (int c = 0; c < 4; c++) {
        bool rank4 = c >= 2, elsewhere = c % 2;
        int last = rank4 ? 3 : 2;
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        clf_tensor x = e2e_input(g, &in, "x", CLF_F32, rank4 ? 4 : 3, rank4 ? s4 : s3, -2.0, 2.0);
        clf_tensor m = clf_reduce_max(g, x, 1, &last, true);
        if (elsewhere)
            m = rank4 ? clf_slice(g, m, 1, rstart, rend, axis2, rstep) : clf_transpose(g, m, 3, perm);
        clf_graph_output(g, "y", clf_exp(g, clf_sub(g, x, m)));
        clf_executable *exe = NULL;
        char *text = compile_logged(ctx, g, "fusion", &exe);
        size_t k = clf_executable_kernel_count(exe);
        ck_assert_msg(k == (elsewhere ? 2u : 1u), "case %d (rank %d, %s): %zu kernels\n%s", c, rank4 ? 4 : 3,
                      elsewhere ? "another row" : "its own row", k, text);
        ck_assert_msg(!strstr(text, "at another row") == !elsewhere, "case %d: fusion log:\n%s", c, text);
        free(text);
        clf_executable_destroy(&exe);
        e2e_check(ctx, g, &in, RTOL, ATOL, NULL, E2E_BOTH, NULL);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
}
END_TEST

/* A norm's statistics over the rows of a product's first operand are
 * computed in that product's loads (planner.c, row statistics), in the
 * CPU and GPU forms (gemm_cpu.cl's blocks, row_stats.cl's work-groups; GPU
 * tiles one statistic only): a layer norm, an RMSNorm, a row maximum and
 * a softmax (two stages) before a product are one kernel, batched, with
 * the operand broadcast over the batch, of odd sizes, reading another product's result (a residual: two
 * kernels), and read by two products (each computes them: two kernels);
 * in f16 (a decoder's norm between casts; one row after two residuals).
 * Not where a statistic is read elsewhere too, at another
 * row, or over an operand of more than 8192 elements: the reduction's
 * kernel stays, the refusal logged. Every case against the reference. */
enum { STATS_LAYER_NORM, STATS_RMS, STATS_HALF_RMS, STATS_HALF_RESIDUALS, STATS_MAX, STATS_SOFTMAX,
       STATS_BATCHED, STATS_BROADCAST, STATS_FEW_ROWS, STATS_RESIDUAL, STATS_TWO_PRODUCTS, STATS_ALSO_OUTPUT,
       STATS_OTHER_ROW, STATS_LARGE, STATS_CASES };

static clf_graph *row_stats_graph(int c, e2e_inputs *in)
{
    clf_graph *g = clf_graph_create();
    /* STATS_FEW_ROWS: a layer norm before two products of two rows over
     * K = 1024 sharing B: the GPU's few-rows form (gemm_rows.cl, B_SHARED,
     * K in slices), two statistics. */
    const bool rows_form = c == STATS_FEW_ROWS;
    /* STATS_HALF_RESIDUALS: one row (a decode step) of f16, two residuals
     * (two products' results) before the norm, as a decoder's second
     * layer. */
    const int64_t m = c == STATS_LARGE ? 128 : rows_form ? 2 : c == STATS_HALF_RESIDUALS ? 1 : 7;
    const int64_t k = c == STATS_LARGE ? 128 : rows_form ? 1024 : c == STATS_HALF_RESIDUALS ? 64 : 33;
    const int64_t n = 12;
    const int batched = c == STATS_BATCHED || c == STATS_BROADCAST;
    const int64_t sx[3] = {rows_form ? 2 : 3, m, k}, sw[3] = {3, k, n};
    const bool x3 = c == STATS_BATCHED || rows_form;
    const int last = x3 ? 2 : 1;
    /* STATS_HALF_RMS: f16 storage, the norm in f32 between casts (as
     * bench_decoder's layers). */
    const bool half = c == STATS_HALF_RMS || c == STATS_HALF_RESIDUALS;
    const clf_dtype dt = half ? CLF_F16 : CLF_F32;
    clf_tensor x = e2e_input(g, in, "x", dt, x3 ? 3 : 2, x3 ? sx : sx + 1, -2.0, 2.0);
    clf_tensor w = e2e_input(g, in, "w", dt, batched ? 3 : 2, batched ? sw : sw + 1, -1.0, 1.0);
    clf_tensor gamma = e2e_input(g, in, "gamma", CLF_F32, 1, &k, 0.5, 1.5);
    if (c == STATS_RESIDUAL) { /* h = x @ v + x, a product's result read in the norm */
        const int64_t sv[2] = {k, k};
        clf_tensor v = e2e_input(g, in, "v", CLF_F32, 2, sv, -0.2, 0.2);
        x = clf_add(g, clf_matmul(g, x, v), x);
    }
    if (c == STATS_HALF_RESIDUALS) {
        const int64_t sv[2] = {k, k};
        clf_tensor v1 = e2e_input(g, in, "v1", dt, 2, sv, -0.3, 0.3), v2 = e2e_input(g, in, "v2", dt, 2, sv, -0.3, 0.3);
        x = clf_add(g, x, clf_matmul(g, x, v1));
        x = clf_add(g, x, clf_relu(g, clf_matmul(g, x, v2)));
    }
    clf_tensor a;
    if (half) {
        a = clf_cast(g, clf_rms_norm(g, clf_cast(g, x, CLF_F32), last, 1e-5, gamma), CLF_F16);
    } else if (c == STATS_RMS) {
        clf_tensor ms = clf_reduce(g, CLF_REDUCE_MEAN, clf_mul(g, x, x), 1, &last, true);
        a = clf_mul(g, clf_mul(g, x, clf_rsqrt(g, clf_add(g, ms, clf_scalar(g, CLF_F32, 1e-6)))), gamma);
    } else if (c == STATS_MAX || c == STATS_OTHER_ROW || c == STATS_ALSO_OUTPUT) {
        clf_tensor mx = clf_reduce(g, CLF_REDUCE_MAX, x, 1, &last, true);
        if (c == STATS_OTHER_ROW) { /* the maximum of the rows in reverse order */
            static const int64_t start[1] = {-1}, end[1] = {INT64_MIN}, step[1] = {-1};
            static const int axis0[1] = {0};
            mx = clf_slice(g, mx, 1, start, end, axis0, step);
        }
        if (c == STATS_ALSO_OUTPUT)
            clf_graph_output(g, "max", mx);
        a = clf_sub(g, x, mx);
    } else if (c == STATS_SOFTMAX) {
        a = clf_softmax(g, x, last);
    } else {
        a = clf_layer_norm(g, x, last, 1e-5, gamma, CLF_TENSOR_INVALID);
    }
    clf_graph_output(g, "y", clf_relu(g, clf_matmul(g, a, w)));
    if (c == STATS_TWO_PRODUCTS) /* a norm read by two products (a gate and an up projection) */
        clf_graph_output(g, "z", clf_matmul(g, clf_reshape(g, a, 2, (const int64_t[]){m, k}), w));
    return g;
}

START_TEST(row_statistics_in_product_loads)
{
    static const char *names[STATS_CASES] = {"layer norm", "RMSNorm", "f16 RMSNorm", "f16 residuals", "row max",
                                             "softmax", "batched", "broadcast", "few rows", "residual", "two products",
                                             "statistic also an output",
                                             "statistic of another row", "operand of 16384 elements"};
    clf_context *ctx = NULL;
    ck_assert_int_eq(clf_context_create(clf_context_params(.disable_disk_cache = true), &ctx), CLF_OK);
    clf_device_desc dev;
    ck_assert_int_eq(clf_context_device(ctx, &dev), CLF_OK);
    for (int c = 0; c < STATS_CASES; c++) {
        e2e_inputs in = {0};
        clf_graph *g = row_stats_graph(c, &in);
        const bool folds = c <= STATS_TWO_PRODUCTS;
        const size_t cpu = (folds ? 1u : 2u) + (c == STATS_RESIDUAL || c == STATS_TWO_PRODUCTS) +
                           2 * (c == STATS_HALF_RESIDUALS); /* the residuals' two products */
        const bool half = c == STATS_HALF_RMS || c == STATS_HALF_RESIDUALS;
        const double rtol = half ? 1e-2 : 1e-4, atol = half ? 1e-2 : 1e-5;
        size_t kc = e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_CPU, rtol, atol);
        ck_assert_msg(kc == cpu, "%s: %zu kernels in the CPU form, want %zu", names[c], kc, cpu);
        /* GPU tiles take one statistic (not a mean and then the variance,
         * nor a softmax's maximum and sum); the few-rows form any. */
        const bool one_stat = c == STATS_RMS || half || c == STATS_MAX || c == STATS_FEW_ROWS;
        kc = e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_GPU, rtol, atol);
        ck_assert_msg(!folds || kc == cpu + !one_stat, "%s: %zu kernels in the GPU form", names[c], kc);
        if (c == STATS_FEW_ROWS) {
            clf_executable *exe = NULL;
            ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU), &exe),
                             CLF_OK);
            ck_assert_msg(strstr(clf_executable_kernel_name(exe, 0), "clf_gemm_rows"), "%s",
                          clf_executable_kernel_name(exe, 0));
            clf_executable_destroy(&exe);
        }
        if (dev.is_cpu) {
            clf_executable *exe = NULL;
            char *text = compile_logged(ctx, g, "fusion", &exe);
            ck_assert_msg(!strstr(text, "a statistic of its operand's rows") == !folds, "%s: fusion log:\n%s",
                          names[c], text);
            ck_assert_msg(c != STATS_OTHER_ROW || strstr(text, "at another row than the operand's"),
                          "%s: fusion log:\n%s", names[c], text);
            free(text);
            clf_executable_destroy(&exe);
        }
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
}
END_TEST

static Suite *fusion_suite(void)
{
    Suite *s = suite_create("fusion");
    clf_test_add_case(s, "chain_relu_mul_add", chain_relu_mul_add);
    clf_test_add_case(s, "chain_through_movement", chain_through_movement);
    clf_test_add_case(s, "movement_outputs", movement_outputs);
    clf_test_add_case(s, "multi_output", multi_output);
    clf_test_add_case(s, "constants", constants);
    clf_test_add_case(s, "deep_chain", deep_chain);
    clf_test_add_case(s, "random_mixed_graphs", random_mixed_graphs);
    clf_test_add_case(s, "logs", logs);
    clf_test_add_case(s, "cast_of_views_joins_its_value", cast_of_views_joins_its_value);
    clf_test_add_case(s, "row_results_read_at_another_row_are_not_fused", row_results_read_at_another_row_are_not_fused);
    clf_test_add_case(s, "row_statistics_in_product_loads", row_statistics_in_product_loads);
    return s;
}

int main(void) { return clf_test_run_suite(fusion_suite()); }
