/* Reductions and reduction fusion on PoCL: every reduction and composite
 * against the reference, fused and unfused, with both template families
 * (CPU and GPU forms forced on the CPU device), and the kernel counts the
 * plan must reach. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/driver_quirks.h"
#include "runtime/runtime_internal.h"
#include "test_e2e.h"
#include "test_support.h"

START_TEST(rowsum_prologue_one_kernel)
{
    int64_t s[2] = {37, 301};
    int axis = -1;
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 2, s, -1, 1);
    clf_tensor y = e2e_input(g, &in, "y", CLF_F32, 2, s, -1, 1);
    clf_graph_output(g, "s", clf_reduce_sum(g, clf_add(g, clf_mul(g, x, y), x), 1, &axis, false));
    e2e_check_all(g, &in, 1, 1e-5, 1e-5);

    clf_context *ctx = clf_test_context();
    clf_executable *exe;
    ck_assert_int_eq(clf_compile(ctx, g, NULL, &exe), CLF_OK);
    ck_assert_str_eq(clf_executable_kernel_name(exe, 0), "clf_red_fused_add_mul_sum_0");
    clf_plan_stats st;
    clf_executable_stats(exe, &st);
    ck_assert_uint_eq(st.tensor_reads, 2);
    ck_assert_uint_eq(st.tensor_writes, 1);
    ck_assert_uint_eq(st.unfused_kernels, 3);
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(every_reduction_over_axes)
{
    int64_t s[3] = {5, 6, 7};
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 3, s, -2, 2);
    clf_tensor xi = e2e_input(g, &in, "xi", CLF_I32, 3, s, -50, 50);
    int mid[1] = {1}, outer[2] = {0, 2}, last[1] = {-1};
    clf_graph_output(g, "sum_mid", clf_reduce_sum(g, x, 1, mid, false));
    clf_graph_output(g, "mean_outer", clf_reduce_mean(g, x, 2, outer, true));
    clf_graph_output(g, "max_last", clf_reduce_max(g, x, 1, last, false));
    clf_graph_output(g, "min_all", clf_reduce_min(g, x, 0, NULL, false));
    clf_graph_output(g, "prod_mid", clf_reduce_prod(g, x, 1, mid, true));
    clf_graph_output(g, "isum_last", clf_reduce_sum(g, xi, 1, last, false));
    clf_graph_output(g, "imax_outer", clf_reduce_max(g, xi, 2, outer, false));
    clf_graph_output(g, "argmax_mid", clf_argmax(g, x, 1, false, false));
    clf_graph_output(g, "argmin_last", clf_argmin(g, xi, -1, true, true));
    clf_graph_output(g, "var_last", clf_reduce_var(g, x, 1, last, false, 1));
    clf_context *ctx = clf_test_context();
    e2e_check(ctx, g, &in, 1e-5, 1e-5, NULL, E2E_BOTH, NULL);
    e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_CPU, 1e-5, 1e-5);
    e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_GPU, 1e-5, 1e-5);
    clf_context_destroy(&ctx);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(softmax_one_kernel)
{
    int64_t s[2] = {9, 200};
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 2, s, -5, 5);
    clf_graph_output(g, "y", clf_softmax(g, x, -1));
    e2e_check_all(g, &in, 1, 1e-5, 1e-6);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(log_softmax_one_kernel)
{
    int64_t s[3] = {4, 33, 3};
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 3, s, -5, 5);
    clf_graph_output(g, "y", clf_log_softmax(g, x, 1)); /* a middle axis */
    e2e_check_all(g, &in, 1, 1e-5, 1e-5);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(layer_norm_one_kernel)
{
    int64_t s[2] = {7, 130}, w[1] = {130};
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 2, s, -3, 5);
    clf_tensor sc = e2e_input(g, &in, "w", CLF_F32, 1, w, -1, 1);
    clf_tensor b = e2e_input(g, &in, "b", CLF_F32, 1, w, -1, 1);
    clf_graph_output(g, "y", clf_layer_norm(g, x, -1, 1e-5, sc, b));
    e2e_check_all(g, &in, 1, 1e-4, 1e-5);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(rms_norm_one_kernel)
{
    int64_t s[2] = {6, 257}, w[1] = {257};
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 2, s, -3, 3);
    clf_tensor sc = e2e_input(g, &in, "w", CLF_F32, 1, w, -1, 1);
    clf_graph_output(g, "y", clf_rms_norm(g, x, -1, 1e-6, sc));
    e2e_check_all(g, &in, 1, 1e-5, 1e-6);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(horizontal_mean_and_mean_of_squares)
{
    int64_t s[2] = {11, 500};
    int last = -1;
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 2, s, -2, 2);
    clf_graph_output(g, "mean", clf_reduce_mean(g, x, 1, &last, false));
    clf_graph_output(g, "meansq", clf_reduce_mean(g, clf_mul(g, x, x), 1, &last, false));
    e2e_check_all(g, &in, 1, 1e-5, 1e-6);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(long_sum_is_accurate)
{
    /* 10^7 positive values in one row: the relative error against the f64
     * sum stays under 1e-5 in both template families. */
    int64_t n = 10000000;
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 1, &n, 0.0, 1.0);
    clf_graph_output(g, "s", clf_reduce_sum(g, x, 0, NULL, false));
    const float *xd = e2e_data(&in, "x");
    double exact = 0;
    for (int64_t i = 0; i < n; i++)
        exact += xd[i];
    clf_context *ctx = clf_test_context();
    for (int style = CLF_KERNEL_STYLE_CPU; style <= CLF_KERNEL_STYLE_GPU; style++) {
        clf_executable *exe;
        ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.kernel_style = (clf_kernel_style)style), &exe),
                         CLF_OK);
        clf_plan_stats st;
        clf_executable_stats(exe, &st);
        ck_assert_uint_eq(st.kernels, 1);
        ck_assert_uint_eq(st.launches, 2); /* split: partial sums, then their combination */
        float got = NAN;
        clf_host_binding out = {"s", &got};
        ck_assert_int_eq(clf_run_host(exe, 1, in.b, 1, &out), CLF_OK);
        double rel = fabs(got - exact) / exact;
        ck_assert_msg(rel < 1e-5, "style %d: sum %.9g, exact %.9g, relative error %g", style, got, exact, rel);
        clf_executable_destroy(&exe);
    }
    clf_context_destroy(&ctx);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(softmax_of_large_values)
{
    /* Rows near 1e4: exp would overflow without the max subtraction. */
    int64_t s[2] = {4, 300};
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 2, s, 9990, 10010);
    clf_graph_output(g, "y", clf_softmax(g, x, -1));
    clf_graph_output(g, "ly", clf_log_softmax(g, x, -1));
    e2e_check_all(g, &in, 1, 1e-4, 1e-6);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(nan_inf_and_empty_rows)
{
    /* NaN and infinities in rows, reductions over empty axes and over no
     * rows at all. */
    int64_t s[2] = {4, 9}, e[2] = {3, 0}, z[2] = {0, 5};
    int last = -1;
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 2, s, -3, 3);
    float *xd = e2e_data(&in, "x");
    xd[1 * 9 + 4] = NAN;
    xd[2 * 9 + 0] = INFINITY;
    xd[3 * 9 + 8] = -INFINITY;
    clf_graph_output(g, "sum", clf_reduce_sum(g, x, 1, &last, false));
    clf_graph_output(g, "max", clf_reduce_max(g, x, 1, &last, true));
    clf_graph_output(g, "min", clf_reduce_min(g, x, 1, &last, false));
    clf_graph_output(g, "amax", clf_argmax(g, x, 1, false, false));
    clf_graph_output(g, "soft", clf_softmax(g, x, 1));
    clf_tensor xe = e2e_input(g, &in, "xe", CLF_F32, 2, e, 0, 1);
    clf_graph_output(g, "esum", clf_reduce_sum(g, xe, 1, &last, false));
    clf_graph_output(g, "eprod", clf_reduce_prod(g, xe, 1, &last, false));
    clf_graph_output(g, "emax", clf_reduce_max(g, xe, 1, &last, false));
    clf_graph_output(g, "emin", clf_reduce_min(g, xe, 1, &last, false));
    clf_tensor xz = e2e_input(g, &in, "xz", CLF_F32, 2, z, 0, 1);
    clf_graph_output(g, "zsum", clf_reduce_sum(g, xz, 1, &last, false));
    clf_context *ctx = clf_test_context();
    e2e_run r;
    e2e_check(ctx, g, &in, 1e-5, 1e-6, NULL, E2E_BOTH, &r);
    const float *emax = e2e_got(&r, "emax"), *eprod = e2e_got(&r, "eprod");
    ck_assert(isinf(emax[0]) && emax[0] < 0);
    ck_assert(eprod[2] == 1.0f);
    const float *sum = e2e_got(&r, "sum");
    ck_assert(isnan(sum[1]) && isinf(sum[2]) && isinf(sum[3]) && sum[3] < 0);
    e2e_run_free(&r);
    e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_CPU, 1e-5, 1e-6);
    e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_GPU, 1e-5, 1e-6);
    clf_context_destroy(&ctx);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(online_softmax_edge_rows)
{
    /* Rows too long for the GPU form's registers run softmax's max and sum
     * in one sweep (a running maximum and a rescaled sum); rows that start at
     * -inf, are all -inf, hold +inf or NaN must still give what the
     * decomposition gives, in both forms. */
    int64_t s[2] = {6, 20001}; /* not whole float4s: the scalar form */
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 2, s, -3, 3);
    float *xd = e2e_data(&in, "x");
    const float rows[6][5] = {{-INFINITY, 1, 2, -INFINITY, 0},
                              {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY},
                              {INFINITY, 1, 2, 3, 4},
                              {1, NAN, 2, 3, 4},
                              {5, 4, 3, 2, 1},
                              {1, 2, 3, 4, 100}};
    for (int r = 0; r < 6; r++)
        memcpy(xd + r * s[1], rows[r], sizeof rows[r]);
    for (int64_t i = 5; i < s[1]; i++)
        xd[1 * s[1] + i] = -INFINITY; /* row 1 is -inf throughout */
    clf_graph_output(g, "y", clf_softmax(g, x, -1));
    clf_graph_output(g, "ly", clf_log_softmax(g, x, -1));
    e2e_check_all(g, &in, 1, 1e-5, 1e-6);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(misaligned_reduction_reads_stay_correct)
{
    /* s = sum(x, axis 1) has shape [N]; s broadcast against x [N, N] reads
     * s along columns, not rows: the planner must not read the row's
     * register for it. */
    int64_t s[2] = {6, 6};
    int one = 1;
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 2, s, -1, 1);
    clf_tensor sum = clf_reduce_sum(g, x, 1, &one, false);
    clf_graph_output(g, "y", clf_add(g, x, sum));
    clf_graph_output(g, "s", sum);
    e2e_check_all(g, &in, 2, 1e-5, 1e-6);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

/* i64 reductions are exact (ONNX models sum int64 attention masks and
 * shapes): sums past 2^32, products past 2^32, max and min, argmax and
 * argmin of values that differ only above bit 32, and rows long enough
 * to be split, in both forms, fused and unfused, against the reference,
 * and the reference against plain int64 arithmetic. */
START_TEST(int64_reductions_are_exact)
{
    int64_t s[2] = {5, 300}, sp[2] = {4, 30}, sl[2] = {2, 100000};
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = e2e_input(g, &in, "x", CLF_I64, 2, s, -1099511627776.0, 1099511627776.0); /* +-2^40 */
    clf_tensor p = e2e_input(g, &in, "p", CLF_I64, 2, sp, -4, 4);
    clf_tensor a = e2e_input(g, &in, "a", CLF_I64, 2, s, 0, 3);
    clf_tensor l = e2e_input(g, &in, "l", CLF_I64, 2, sl, -1099511627776.0, 1099511627776.0);
    int64_t *ad = e2e_data(&in, "a");
    for (int i = 0; i < 5 * 300; i++)
        ad[i] = ad[i] * ((int64_t)1 << 33) + (i % 7); /* the low 32 bits alone would rank them otherwise */
    int64_t *pd = e2e_data(&in, "p");
    for (int c = 0; c < 30; c++)
        pd[c] = c % 2 ? 3 : -2; /* row 0's product: -(6^15), past 2^32 */
    int last = -1, first = 0;
    clf_graph_output(g, "sum", clf_reduce_sum(g, x, 1, &last, false));
    clf_graph_output(g, "max", clf_reduce_max(g, x, 1, &first, false));
    clf_graph_output(g, "min", clf_reduce_min(g, x, 0, NULL, false));
    clf_graph_output(g, "prod", clf_reduce_prod(g, p, 1, &last, false));
    clf_graph_output(g, "argmax", clf_argmax(g, a, -1, false, false));
    clf_graph_output(g, "argmin", clf_argmin(g, a, -1, false, true));
    clf_graph_output(g, "long", clf_reduce_sum(g, l, 1, &last, true));
    clf_context *ctx = clf_test_context();
    e2e_check(ctx, g, &in, 0, 0, NULL, E2E_BOTH, NULL);
    e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_CPU, 0, 0);
    e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_GPU, 0, 0);
    /* The reference itself, against int64 arithmetic. */
    int64_t sum[5], mx[300], mn, prod[4], lsum[2];
    int32_t amax[5], amin[5];
    clf_host_binding out[7] = {{"sum", sum},     {"max", mx},       {"min", &mn},     {"prod", prod},
                               {"argmax", amax}, {"argmin", amin}, {"long", lsum}};
    char msg[256];
    ck_assert_msg(clf_reference_run(g, in.n, in.b, 7, out, msg, sizeof msg) == CLF_OK, "%s", msg);
    const int64_t *xd = e2e_data(&in, "x"), *ld = e2e_data(&in, "l");
    int64_t want_min = INT64_MAX;
    for (int r = 0; r < 5; r++) {
        int64_t w = 0, best = INT64_MIN, worst = INT64_MAX;
        int bi = 0, wi = 0;
        for (int c = 0; c < 300; c++) {
            w += xd[r * 300 + c];
            want_min = xd[r * 300 + c] < want_min ? xd[r * 300 + c] : want_min;
            const int64_t v = ad[r * 300 + c];
            if (v > best) {
                best = v;
                bi = c;
            }
            if (v <= worst) { /* select_last */
                worst = v;
                wi = c;
            }
        }
        ck_assert_int_eq(sum[r], w);
        ck_assert_int_eq(amax[r], bi);
        ck_assert_int_eq(amin[r], wi);
    }
    ck_assert_int_eq(mn, want_min);
    for (int c = 0; c < 300; c++) {
        int64_t w = INT64_MIN;
        for (int r = 0; r < 5; r++)
            w = xd[r * 300 + c] > w ? xd[r * 300 + c] : w;
        ck_assert_int_eq(mx[c], w);
    }
    for (int r = 0; r < 4; r++) {
        int64_t w = 1;
        for (int c = 0; c < 30; c++)
            w *= pd[r * 30 + c];
        ck_assert_int_eq(prod[r], w);
    }
    ck_assert(prod[0] < INT32_MIN); /* -(6^15) */
    for (int r = 0; r < 2; r++) {
        int64_t w = 0;
        for (int c = 0; c < 100000; c++)
            w += ld[r * 100000 + c];
        ck_assert_int_eq(lsum[r], w);
    }
    clf_context_destroy(&ctx);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(few_long_rows_split)
{
    /* Three rows of 200000: too few rows to fill a device, so each is split;
     * two reductions and their per-row epilogue stay one planned kernel. */
    int64_t s[2] = {3, 200000};
    int last = -1;
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 2, s, -1, 2);
    clf_graph_output(g, "mean", clf_reduce_mean(g, x, 1, &last, false));
    clf_graph_output(g, "meansq", clf_reduce_mean(g, clf_mul(g, x, x), 1, &last, true));
    clf_graph_output(g, "max", clf_reduce_max(g, x, 1, &last, false));
    clf_graph_output(g, "amin", clf_argmin(g, x, 1, false, false));
    e2e_check_all(g, &in, 1, 1e-5, 1e-6); /* argmin reduces the same axis: the same kernel */
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

/* The CPU form forced on g, against the reference, on the device as it is
 * and as if it had no fp64 (sums of rows longer than 1024 in
 * Kahan-compensated float lanes instead of double ones); the kernels that must take the vector loop (their names
 * containing want_vec, NULL for all) do. */
static void check_cpu_vector(const clf_graph *g, const e2e_inputs *in, const char *want_vec, double rtol, double atol)
{
    clf_context *ctx = clf_test_context();
    const bool device_fp64 = ctx->fp64; /* double lanes only where the device has cl_khr_fp64 */
    for (int nofp64 = 0; nofp64 < 2; nofp64++) {
        if (nofp64)
            ctx->fp64 = false; /* codegen's choice only; the device is unchanged */
        e2e_check_style(ctx, g, in, CLF_KERNEL_STYLE_CPU, rtol, atol);
        clf_executable *exe = NULL;
        ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_CPU), &exe), CLF_OK);
        size_t vector_kernels = 0;
        for (size_t k = 0; k < clf_executable_kernel_count(exe); k++) {
            const char *src = clf_executable_kernel_source(exe, k);
            bool vec = strstr(src, "void clf_vload(") != NULL;
            const char *name = clf_executable_kernel_name(exe, k), *ops = strstr(src, "/* ops: ");
            ck_assert_ptr_nonnull(ops);
            bool sums = false;
            for (const char *o = ops + 8; *o && *o != '*'; o++)
                sums = sums || (strncmp(o, "sum", 3) == 0 && (o[3] == ' ' || o[3] == '*'));
            const char *rlen = strstr(src, "#define RLEN ");
            ck_assert_ptr_nonnull(rlen);
            /* rows up to 1024 sum in plain float lanes */
            const bool long_rows = strtoul(rlen + strlen("#define RLEN "), NULL, 10) > 1024;
            ck_assert_int_eq(strstr(src, "double8") != NULL || strstr(src, "double16") != NULL,
                             vec && device_fp64 && !nofp64 && sums && long_rows);
            if (want_vec && !strstr(name, want_vec))
                continue;
            ck_assert_msg(vec, "kernel %s has no vector loop", name);
            vector_kernels++;
        }
        ck_assert_uint_ge(vector_kernels, 1);
        clf_executable_destroy(&exe);
    }
    clf_context_destroy(&ctx);
}

START_TEST(cpu_vector_loop_edge_values)
{
    /* Rows of 61 = 7 vectors of 8 and a scalar tail of 5 (or 3 of 16 and
     * 13), with NaN and infinities in vector lanes and in the tail, a NaN
     * then a larger value in one lane (a split max or min keeps the NaN), a
     * row of -inf and a row that is one large value, and rows of 1500 (sums
     * in double or compensated lanes): every reduction and composite of the
     * CPU form's vector loop against the reference. */
    int64_t s[2] = {7, 61}, w[1] = {61};
    int last = -1;
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 2, s, -3, 3);
    clf_tensor p = e2e_input(g, &in, "p", CLF_F32, 2, s, 0.5, 1.5);
    clf_tensor wt = e2e_input(g, &in, "w", CLF_F32, 1, w, -1, 1);
    clf_tensor b = e2e_input(g, &in, "b", CLF_F32, 1, w, -1, 1);
    float *xd = e2e_data(&in, "x");
    xd[1 * 61 + 9] = NAN;       /* lane 1 of the second vector */
    xd[2 * 61 + 58] = INFINITY; /* the tail */
    xd[3 * 61 + 7] = -INFINITY; /* the last lane of the first vector */
    for (int i = 0; i < 61; i++)
        xd[4 * 61 + i] = -INFINITY;
    xd[5 * 61 + 33] = 1e4f;
    xd[6 * 61 + 2] = NAN; /* then lane 2's larger and smaller values */
    xd[6 * 61 + 18] = 100.0f;
    xd[6 * 61 + 34] = -100.0f;
    /* Rows of 1500 sum in double lanes (Kahan's without fp64). */
    int64_t ls[2] = {4, 1500};
    clf_tensor xl = e2e_input(g, &in, "xl", CLF_F32, 2, ls, -3, 3);
    float *xld = e2e_data(&in, "xl");
    xld[1 * 1500 + 700] = NAN;
    xld[2 * 1500 + 1499] = INFINITY;
    clf_graph_output(g, "long_sum", clf_reduce_sum(g, xl, 1, &last, false));
    clf_graph_output(g, "long_soft", clf_softmax(g, xl, -1));
    clf_graph_output(g, "long_ln", clf_layer_norm(g, xl, -1, 1e-5, CLF_TENSOR_INVALID, CLF_TENSOR_INVALID));
    clf_graph_output(g, "sum", clf_reduce_sum(g, x, 1, &last, false));
    clf_graph_output(g, "max", clf_reduce_max(g, x, 1, &last, false));
    clf_graph_output(g, "min", clf_reduce_min(g, x, 1, &last, false));
    clf_graph_output(g, "prod", clf_reduce_prod(g, p, 1, &last, false));
    clf_graph_output(g, "powsum", clf_reduce_sum(g, clf_pow(g, p, clf_scalar(g, CLF_F32, 2.5)), 1, &last, false));
    clf_graph_output(g, "soft", clf_softmax(g, x, -1));
    clf_graph_output(g, "lsoft", clf_log_softmax(g, x, -1));
    clf_graph_output(g, "ln", clf_layer_norm(g, p, -1, 1e-5, wt, b));
    clf_graph_output(g, "rms", clf_rms_norm(g, p, -1, 1e-5, wt));
    check_cpu_vector(g, &in, NULL, 1e-5, 1e-6);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(cpu_vector_loop_gathers)
{
    /* Reduced elements that are not consecutive in memory: a softmax over
     * the first axis (gathered loads and scattered stores), a sum over a
     * transposed view, a sum over a strided slice; and a row that mixes in
     * a comparison (no vector form: the scalar loop) next to them. */
    int64_t s[2] = {43, 24}, t[2] = {24, 43}, starts[1] = {1}, ends[1] = {43}, steps[1] = {2};
    int first = 0, last = -1, one = 1;
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 2, s, -3, 3);
    clf_tensor xt = e2e_input(g, &in, "xt", CLF_F32, 2, t, -3, 3);
    clf_graph_output(g, "soft0", clf_softmax(g, x, 0));
    clf_graph_output(g, "tsum", clf_reduce_sum(g, clf_transpose(g, xt, 0, NULL), 1, &last, false));
    clf_graph_output(g, "ssum", clf_reduce_max(g, clf_slice(g, xt, 1, starts, ends, &one, steps), 1, &last, false));
    clf_tensor pos = clf_gt(g, xt, clf_scalar(g, CLF_F32, 0.0));
    clf_graph_output(g, "where", clf_reduce_sum(g, clf_where(g, pos, xt, clf_scalar(g, CLF_F32, 0.0)), 1, &first,
                                                  false));
    check_cpu_vector(g, &in, "exp", 1e-5, 1e-6);
    clf_context *ctx = clf_test_context();
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_CPU), &exe), CLF_OK);
    for (size_t k = 0; k < clf_executable_kernel_count(exe); k++) {
        const char *src = clf_executable_kernel_source(exe, k);
        if (strstr(clf_executable_kernel_name(exe, k), "exp"))
            ck_assert_ptr_nonnull(strstr(src, "(x, r + 0u, CLF_ARGS)] = y.s0;")); /* the scattered store */
        if (strstr(clf_executable_kernel_name(exe, k), "where"))
            ck_assert_ptr_null(strstr(src, "void clf_vload("));
    }
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

/* Whether the generated function of src that starts with head (up to its
 * closing brace at the start of a line) contains needle. */
static bool fn_has(const char *src, const char *head, const char *needle)
{
    const char *b = strstr(src, head), *e = b ? strstr(b, "\n}\n") : NULL;
    ck_assert_msg(b && e, "no function %s", head);
    const char *hit = strstr(b, needle);
    return hit && hit < e;
}

START_TEST(max_and_min_of_signed_zeros_do_not_depend_on_order)
{
    /* The maximum of a row holding -0 and +0 is +0, the minimum -0,
     * wherever they sit (first or last, in a vector lane or the scalar
     * tail, in another lane's partial result): the reference and both
     * kernel styles, fused and alone, whatever order they combine in. */
    enum { ROWS = 8, LEN = 37 };
    int64_t s[2] = {ROWS, LEN};
    int last = -1;
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 2, s, -3, -1); /* zeros are each row's max */
    clf_tensor y = e2e_input(g, &in, "y", CLF_F32, 2, s, 1, 3);   /* and each row's min */
    float *xd = e2e_data(&in, "x"), *yd = e2e_data(&in, "y");
    /* {0, 16}, {16, 0}: one vector lane sees both zeros, in each order */
    const int at[ROWS][2] = {{0, 1}, {1, 0}, {0, LEN - 1}, {LEN - 1, 0}, {3, 35}, {35, 3}, {0, 16}, {16, 0}};
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < 2; j++) {
            xd[i * LEN + at[i][j]] = j ? 0.0f : -0.0f;
            yd[i * LEN + at[i][j]] = j ? 0.0f : -0.0f;
        }
    for (int i = 0; i < LEN; i++) /* a row of zeros of both signs */
        xd[4 * LEN + i] = yd[4 * LEN + i] = i % 3 ? -0.0f : 0.0f;
    clf_graph_output(g, "max", clf_reduce_max(g, x, 1, &last, false));
    clf_graph_output(g, "min", clf_reduce_min(g, y, 1, &last, false));
    clf_graph_output(g, "soft", clf_softmax(g, x, -1)); /* max as a softmax's first stage */
    clf_context *ctx = clf_test_context();
    float want_max[ROWS], want_min[ROWS];
    float *want_soft = malloc(sizeof(float) * ROWS * LEN);
    clf_host_binding want[3] = {{"max", want_max}, {"min", want_min}, {"soft", want_soft}};
    char msg[256];
    ck_assert_int_eq(clf_reference_run(g, in.n, in.b, 3, want, msg, sizeof msg), CLF_OK);
    for (int i = 0; i < ROWS; i++) {
        ck_assert_msg(want_max[i] == 0 && !signbit(want_max[i]), "reference max of row %d: %g", i, want_max[i]);
        ck_assert_msg(want_min[i] == 0 && signbit(want_min[i]), "reference min of row %d: %g", i, want_min[i]);
    }
    for (int v = 0; v < 3; v++) {
        clf_executable *exe = NULL;
        ck_assert_int_eq(clf_compile(ctx, g,
                                     v == 2 ? clf_compile_params(.disable_fusion = true)
                                            : clf_compile_params(.kernel_style = v ? CLF_KERNEL_STYLE_GPU
                                                                                   : CLF_KERNEL_STYLE_CPU),
                                     &exe),
                         CLF_OK);
        float got_max[ROWS], got_min[ROWS];
        float *got_soft = malloc(sizeof(float) * ROWS * LEN);
        clf_host_binding got[3] = {{"max", got_max}, {"min", got_min}, {"soft", got_soft}};
        ck_assert_int_eq(clf_run_host(exe, in.n, in.b, 3, got), CLF_OK);
        for (int i = 0; i < ROWS; i++) {
            ck_assert_msg(got_max[i] == 0 && !signbit(got_max[i]), "variant %d: max of row %d: %g", v, i, got_max[i]);
            ck_assert_msg(got_min[i] == 0 && signbit(got_min[i]), "variant %d: min of row %d: %g", v, i, got_min[i]);
        }
        char why[256];
        ck_assert_msg(clf_test_close(CLF_F32, got_soft, want_soft, ROWS * LEN, 1e-5, 1e-6, why, sizeof why), "%s", why);
        free(got_soft);
        clf_executable_destroy(&exe);
    }
    free(want_soft);
    clf_context_destroy(&ctx);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(warp_shuffles_a_driver_refuses_fall_back)
{
    /* CLFUSE_WARP_SHUFFLE=1 asks for the NVIDIA form (inline PTX shuffles)
     * whatever the device. PoCL cannot build it: clf_compile must lower
     * again without shuffles and give kernels that build and compute the
     * right rows; with 0 the form is off from the start. */
    int64_t s[2] = {40, 256};
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 2, s, -4, 4);
    clf_graph_output(g, "y", clf_softmax(g, x, -1));
    clf_context *ctx = clf_test_context();
    for (int force = 1; force >= 0; force--) {
        ck_assert_int_eq(setenv("CLFUSE_WARP_SHUFFLE", force ? "1" : "0", 1), 0);
        ck_assert_uint_eq(e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_GPU, 1e-5, 1e-6), 1);
        clf_executable *exe = NULL;
        ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU), &exe), CLF_OK);
        ck_assert_ptr_nonnull(strstr(clf_executable_kernel_source(exe, 0), "#define CLF_SHFL 0"));
        clf_executable_destroy(&exe);
    }
    unsetenv("CLFUSE_WARP_SHUFFLE");
    clf_context_destroy(&ctx);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

/* The CPU form with several short rows a work-item (the schedule's
 * rows_per_item, ROWS_PER_ITEM): rows of 77 (a vector loop, a scalar tail
 * and softmax's carried exp), 64 (a layer norm) and 16 (a row sum and a
 * row max), as many rows as give 8 rows a work-item on this device, plus
 * 5 (the last work-item's rows past the end stay idle), with NaN, Inf and
 * a large value in rows, against the reference. */
START_TEST(cpu_rows_per_item_with_a_partial_last_item)
{
    clf_context *ctx = clf_test_context();
    const int64_t cus = ctx->desc.compute_units ? (int64_t)ctx->desc.compute_units : 1;
    const int64_t rows = 8 * 64 * cus + 5;
    int64_t s77[2] = {rows, 77}, s64[2] = {rows, 64}, s16[2] = {rows, 16}, w[1] = {64};
    int last = -1;
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 2, s77, -4, 4);
    clf_tensor p = e2e_input(g, &in, "p", CLF_F32, 2, s64, -2, 2);
    clf_tensor q = e2e_input(g, &in, "q", CLF_F32, 2, s16, -2, 2);
    clf_tensor wt = e2e_input(g, &in, "w", CLF_F32, 1, w, -1, 1);
    float *xd = e2e_data(&in, "x");
    xd[1 * 77 + 3] = NAN;
    xd[9 * 77 + 75] = INFINITY;
    xd[(rows - 1) * 77 + 10] = 1e4f;
    clf_graph_output(g, "soft", clf_softmax(g, x, -1));
    clf_graph_output(g, "ln", clf_layer_norm(g, p, -1, 1e-5, wt, CLF_TENSOR_INVALID));
    clf_graph_output(g, "sum", clf_reduce_sum(g, q, 1, &last, false));
    clf_graph_output(g, "max", clf_reduce_max(g, q, 1, &last, false));
    e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_CPU, 1e-5, 1e-6);
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_CPU), &exe), CLF_OK);
    size_t several = 0;
    for (size_t k = 0; k < clf_executable_kernel_count(exe); k++) {
        const char *rpi = strstr(clf_executable_kernel_source(exe, k), "#define ROWS_PER_ITEM ");
        ck_assert_ptr_nonnull(rpi);
        several += strtoul(rpi + strlen("#define ROWS_PER_ITEM "), NULL, 10) > 1;
    }
    ck_assert_uint_eq(several, clf_executable_kernel_count(exe));
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(cpu_form_carries_exp_to_the_epilogue)
{
    /* The CPU form computes a softmax's exp once: the sum's stage stores
     * it into the output, the epilogue reads it back (scalar and vector
     * functions alike). Checked on rows with a scalar tail (77 = 9 vectors
     * of 8 and 5, or 4 of 16 and 13), on columns of 37 (gathers and scatters), with a second output
     * that is the carried value itself, with an epilogue that also reads x,
     * with a layer norm in the same kernel (its output may carry an exp),
     * and with values that overflow exp and NaN. A layer norm alone has
     * nothing costly to carry; the GPU form carries nothing. */
    int64_t s[2] = {6, 77}, cs[2] = {37, 5}, w[1] = {77};
    int last = -1;
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 2, s, -4, 4);
    clf_tensor c = e2e_input(g, &in, "c", CLF_F32, 2, cs, -4, 4);
    clf_tensor d = e2e_input(g, &in, "d", CLF_F32, 2, s, -4, 4);
    clf_tensor p = e2e_input(g, &in, "p", CLF_F32, 2, s, 0.5, 1.5);
    clf_tensor wt = e2e_input(g, &in, "w", CLF_F32, 1, w, -1, 1);
    float *xd = e2e_data(&in, "x");
    xd[1 * 77 + 3] = NAN;
    xd[2 * 77 + 75] = INFINITY;
    xd[3 * 77 + 10] = 1e4f;
    clf_graph_output(g, "soft", clf_softmax(g, x, -1));
    clf_graph_output(g, "soft0", clf_softmax(g, c, 0));
    clf_tensor e = clf_exp(g, clf_sub(g, d, clf_reduce_max(g, d, 1, &last, true)));
    clf_graph_output(g, "e", e);
    clf_graph_output(g, "plus", clf_add(g, clf_div(g, e, clf_reduce_sum(g, e, 1, &last, true)), d));
    clf_graph_output(g, "ln", clf_layer_norm(g, p, -1, 1e-5, wt, CLF_TENSOR_INVALID));
    check_cpu_vector(g, &in, "exp", 1e-5, 1e-6);
    clf_context *ctx = clf_test_context();
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_CPU), &exe), CLF_OK);
    size_t carried = 0;
    for (size_t k = 0; k < clf_executable_kernel_count(exe); k++) {
        const char *src = clf_executable_kernel_source(exe, k), *name = clf_executable_kernel_name(exe, k);
        if (strstr(name, "exp")) {
            for (int v = 0; v < 2; v++) {
                const char *epi = v ? "void clf_vepilogue(" : "void clf_epilogue(";
                ck_assert_msg(!fn_has(src, epi, "exp("), "%s: exp in %s", name, epi);
                /* float16 on devices with a native float vector that wide */
                ck_assert_msg(fn_has(src, epi, v ? "const float8 cy0 = " : "const float cy0 = ") ||
                                  (v && fn_has(src, epi, "const float16 cy0 = ")),
                              "%s", name);
            }
            carried++;
        }
    }
    ck_assert_uint_eq(carried, 2);
    clf_executable_destroy(&exe);
    clf_graph *lg = clf_graph_create();
    clf_graph_output(lg, "ln", clf_layer_norm(lg, clf_input(lg, "p", CLF_F32, 2, s), -1, 1e-5, CLF_TENSOR_INVALID,
                                              CLF_TENSOR_INVALID));
    ck_assert_int_eq(clf_compile(ctx, lg, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_CPU), &exe), CLF_OK);
    ck_assert_uint_eq(clf_executable_kernel_count(exe), 1);
    ck_assert_ptr_null(strstr(clf_executable_kernel_source(exe, 0), " cy0 = "));
    clf_executable_destroy(&exe);
    clf_graph_destroy(&lg);
    ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU), &exe), CLF_OK);
    for (size_t k = 0; k < clf_executable_kernel_count(exe); k++)
        ck_assert_ptr_null(strstr(clf_executable_kernel_source(exe, k), " cy0 = "));
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

/* Compiles g in the GPU form and checks that every kernel's source has
 * each of the wanted geometry lines. */
static void check_gpu_geometry(clf_context *ctx, const clf_graph *g, const char *const *want, size_t nwant)
{
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU), &exe), CLF_OK);
    for (size_t k = 0; k < clf_executable_kernel_count(exe); k++)
        for (size_t i = 0; i < nwant; i++)
            ck_assert_msg(strstr(clf_executable_kernel_source(exe, k), want[i]), "kernel %s lacks \"%s\"",
                          clf_executable_kernel_name(exe, k), want[i]);
    clf_executable_destroy(&exe);
}

START_TEST(gpu_geometry_by_row_length)
{
    /* The GPU form's geometry (forced on PoCL, checked against the
     * reference with NaN and Inf in rows): rows of whole float4s run in
     * float4 units, persistent with at most 32 floats a lane; short rows on
     * 16 lanes at least; rows too long for 1024 lanes reload each
     * sweep; rows of another length stay scalar. */
    const struct {
        int64_t rows, rlen;
        const char *want[4];
    } cases[] = {
        {5, 4096, {"#define VEC 4\n", "#define LANES 128\n", "#define CACHE 8\n", "clf_per_"}},
        {9, 256, {"#define VEC 4\n", "#define LANES 16\n", "#define CACHE 4\n", "#define WG 256\n"}},
        {3, 40000, {"#define VEC 4\n", "#define LANES 1024\n", "#define CACHE 0\n", "clf_red_"}},
        {4, 4099, {"#define VEC 1\n", "#define LANES 512\n", "#define CACHE 9\n", "clf_per_"}},
        {7, 6, {"#define VEC 1\n", "#define LANES 4\n", "#define CACHE 2\n", "clf_per_"}},
    };
    clf_context *ctx = clf_test_context();
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int64_t s[2] = {cases[c].rows, cases[c].rlen}, w[1] = {cases[c].rlen};
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 2, s, -3, 3);
        clf_tensor wt = e2e_input(g, &in, "w", CLF_F32, 1, w, -1, 1);
        float *xd = e2e_data(&in, "x");
        xd[1 * s[1] + s[1] - 2] = NAN;
        xd[2 * s[1] + 1] = INFINITY;
        clf_graph_output(g, "soft", clf_softmax(g, x, -1));
        clf_graph_output(g, "rms", clf_rms_norm(g, x, -1, 1e-5, wt));
        ck_assert_uint_ge(e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_GPU, 1e-5, 1e-6), 1);
        check_gpu_geometry(ctx, g, cases[c].want, 4);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
}
END_TEST

START_TEST(gpu_float4_units_of_sliced_rows)
{
    /* Rows of whole float4s read through slices of a [5, 4098] input
     * (x[:, :4096] and x[:, 2:]): their elements are consecutive (x * 4098
     * + r and x * 4098 + 2 + r) but not float4-aligned, so the GPU form's
     * float4 units read them by vload4 (the index algebra proves x * RLEN
     * + r and r aligned, not these), while the outputs, stored at x * 4096
     * + r, go through float4 pointers; both softmaxes share one kernel and
     * stay right. */
    const int64_t s[2] = {5, 4098}, lo[1] = {0}, hi[1] = {4096}, lo2[1] = {2}, hi2[1] = {4098};
    const int ax[1] = {1};
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 2, s, -3, 3);
    float *xd = e2e_data(&in, "x");
    xd[3 * 4098 + 4097] = NAN; /* in the tail's row 3 only */
    clf_graph_output(g, "head", clf_softmax(g, clf_slice(g, x, 1, lo, hi, ax, NULL), -1));
    clf_graph_output(g, "tail", clf_softmax(g, clf_slice(g, x, 1, lo2, hi2, ax, NULL), -1));
    clf_context *ctx = clf_test_context();
    ck_assert_uint_eq(e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_GPU, 1e-5, 1e-6), 1);
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU), &exe), CLF_OK);
    const char *src = clf_executable_kernel_source(exe, 0);
    ck_assert_ptr_nonnull(strstr(src, "#define VEC 4\n"));
    ck_assert_ptr_nonnull(strstr(src, "vload4(0, b0 + "));
    ck_assert_ptr_null(strstr(src, "*(const __global float4 *)(b0"));
    ck_assert_ptr_null(strstr(src, "clf_at_t"));
    ck_assert_ptr_nonnull(strstr(src, "    *(__global float4 *)(b"));
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(gpu_rows_past_the_end_stay_idle)
{
    /* Found by clfuse-fuzz (seed 1, index 22). A persistent GPU-style kernel
     * (rows cached in registers) runs rows past the end of the tensor as
     * idle lanes that only join the barriers: they load nothing, so their
     * sweeps must not read the cache either. Sweeping up to RLEN instead of
     * the lane's own length read uninitialised registers, which PoCL's
     * optimiser may treat as undefined behaviour; here it corrupted the
     * heap. Three rows of six: one work-group, most of its rows past the
     * end. */
    int64_t s[4] = {3, 1, 1, 6};
    int64_t same[4] = {0, 1, 0, 6};
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 4, s, 0.25, 2);
    clf_tensor y = clf_reshape(g, x, 4, same);
    clf_graph_output(g, "y", y);
    clf_graph_output(g, "amin", clf_argmin(g, y, -2, false, false));
    clf_graph_output(g, "rms", clf_rms_norm(g, clf_sqrt(g, y), 3, 1e-5, CLF_TENSOR_INVALID));
    for (int rep = 0; rep < 3; rep++)
        e2e_check_all(g, &in, 3, 1e-5, 1e-6);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

/* Runs g (one f32 output "y" of n elements) fused with each kernel style
 * and unfused, and checks every element against want (computed in f64):
 * |got - want| <= atol + rtol * |want|. */
static void check_against_f64(const clf_graph *g, const e2e_inputs *in, const double *want, size_t n, double rtol,
                              double atol)
{
    clf_context *ctx = clf_test_context();
    const clf_compile_params variants[3] = {{.kernel_style = CLF_KERNEL_STYLE_CPU},
                                            {.kernel_style = CLF_KERNEL_STYLE_GPU},
                                            {.disable_fusion = true}};
    const char *names[3] = {"fused, CPU style", "fused, GPU style", "unfused"};
    float *got = malloc(n * sizeof *got);
    ck_assert_ptr_nonnull(got);
    for (int v = 0; v < 3; v++) {
        clf_executable *exe = NULL;
        ck_assert_msg(clf_compile(ctx, g, &variants[v], &exe) == CLF_OK, "%s", clf_context_last_error(ctx));
        clf_host_binding out = {"y", got};
        ck_assert_int_eq(clf_run_host(exe, in->n, in->b, 1, &out), CLF_OK);
        double worst = 0;
        size_t at = 0;
        for (size_t i = 0; i < n; i++) {
            double excess = fabs(got[i] - want[i]) - (atol + rtol * fabs(want[i]));
            if (!(excess <= worst)) {
                worst = isnan(excess) ? INFINITY : excess;
                at = i;
            }
        }
        ck_assert_msg(worst <= 0, "%s: element %zu: got %.9g, f64 %.9g (tolerance %g + %g * |f64|)", names[v], at,
                      (double)got[at], want[at], atol, rtol);
        clf_executable_destroy(&exe);
    }
    free(got);
    clf_context_destroy(&ctx);
}

START_TEST(long_mixed_sign_sum_and_mean_are_accurate)
{
    /* 10^7 values in [-1, 1): the sum nearly cancels, so its error is
     * measured against the sum of magnitudes. Tolerance: |sum - f64| <=
     * 1e-6 * sum|x| (an f32 sum in a naive order may be off by about
     * 1e-7 * 10^7 = 1 times sum|x| in the worst case; the double or Kahan
     * accumulators stay near 1e-7). The mean within 1e-6 * mean|x|. */
    int64_t n = 10000000;
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 1, &n, -1.0, 1.0);
    clf_graph_output(g, "y", clf_reduce_sum(g, x, 0, NULL, false));
    const float *xd = e2e_data(&in, "x");
    double exact = 0, mag = 0;
    for (int64_t i = 0; i < n; i++) {
        exact += xd[i];
        mag += fabs(xd[i]);
    }
    check_against_f64(g, &in, &exact, 1, 0, 1e-6 * mag);
    clf_graph_destroy(&g);
    g = clf_graph_create();
    x = clf_input(g, "x", CLF_F32, 1, &n);
    clf_graph_output(g, "y", clf_reduce_mean(g, x, 0, NULL, false));
    double mean = exact / (double)n;
    check_against_f64(g, &in, &mean, 1, 0, 1e-6 * mag / (double)n);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(softmax_of_large_magnitude_rows_is_accurate)
{
    /* Rows offset by 1e6, 1e4 and -1e6 with a spread of +-40 around the
     * offset, and one row of values up to 1e30 in magnitude (one-hot
     * softmax). Against softmax computed in f64 from the same floats:
     * rtol 1e-5 (x - max is exact in float here, Sterbenz; exp and the sum
     * add a few ulp) plus atol 1e-30 for the underflowed tail. */
    enum { R = 4, C = 999 };
    int64_t s[2] = {R, C};
    const double offset[R] = {1e6, 1e4, -1e6, 0};
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 2, s, -40, 40);
    float *xd = e2e_data(&in, "x");
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++)
            xd[r * C + c] = r == 3 ? (float)(xd[r * C + c] * 2.5e28) : (float)(xd[r * C + c] + offset[r]);
    clf_graph_output(g, "y", clf_softmax(g, x, -1));
    double *want = malloc(sizeof(double) * R * C);
    ck_assert_ptr_nonnull(want);
    for (int r = 0; r < R; r++) {
        double m = -INFINITY, sum = 0;
        for (int c = 0; c < C; c++)
            m = fmax(m, xd[r * C + c]);
        for (int c = 0; c < C; c++)
            sum += exp((double)xd[r * C + c] - m);
        for (int c = 0; c < C; c++)
            want[r * C + c] = exp((double)xd[r * C + c] - m) / sum;
    }
    check_against_f64(g, &in, want, R * C, 1e-5, 1e-30);
    free(want);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(layer_norm_of_rows_with_a_large_mean_is_accurate)
{
    /* Rows of mean about 1e4 and standard deviation about 1: a variance
     * computed as E[x^2] - E[x]^2 in float would lose every digit
     * (1e8 - 1e8). Against layer norm in f64 from the same floats:
     * atol 2e-3, rtol 1e-4. The mean rounded to float is off by up to half
     * an ulp of 1e4 (4.9e-4), which shifts every normalised value by that
     * much over a standard deviation of 1; twice that covers it and the
     * variance's own rounding. */
    enum { R = 4, C = 1024 };
    int64_t s[2] = {R, C};
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 2, s, 1e4 - 1.732, 1e4 + 1.732);
    const float *xd = e2e_data(&in, "x");
    clf_graph_output(g, "y", clf_layer_norm(g, x, 1, 1e-5, CLF_TENSOR_INVALID, CLF_TENSOR_INVALID));
    double *want = malloc(sizeof(double) * R * C);
    ck_assert_ptr_nonnull(want);
    for (int r = 0; r < R; r++) {
        double mean = 0, var = 0;
        for (int c = 0; c < C; c++)
            mean += xd[r * C + c];
        mean /= C;
        for (int c = 0; c < C; c++)
            var += (xd[r * C + c] - mean) * (xd[r * C + c] - mean);
        var /= C;
        for (int c = 0; c < C; c++)
            want[r * C + c] = (xd[r * C + c] - mean) / sqrt(var + 1e-5);
    }
    check_against_f64(g, &in, want, R * C, 1e-4, 2e-3);
    free(want);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

/* Issue 15: a reduction over the last axis of a tensor of any rank is one
 * row per element of the outer axes and fuses as 2-D rows do. The rows
 * of each rank differ in length (float4 and float8 units, a scalar tail,
 * rows shorter than a vector) and some outer axes are 1. For each rank:
 * one kernel in the default, CPU and GPU forms, reading only the inputs
 * and writing only y, against the reference. */
typedef enum { LAST_SOFTMAX, LAST_LOG_SOFTMAX, LAST_LAYER_NORM, LAST_RMS_NORM } last_axis_op;

static void last_axis_at_ranks_1_to_6(last_axis_op op, double rtol, double atol)
{
    static const int64_t shapes[6][6] = {{67}, {5, 48}, {3, 5, 33}, {2, 3, 4, 64}, {2, 1, 3, 2, 20}, {2, 2, 1, 3, 2, 7}};
    clf_context *ctx = clf_test_context();
    for (int rank = 1; rank <= 6; rank++) {
        const int64_t *s = shapes[rank - 1];
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        clf_tensor x = e2e_input(g, &in, "x", CLF_F32, rank, s, -4, 4), y;
        switch (op) {
        case LAST_SOFTMAX: y = clf_softmax(g, x, -1); break;
        case LAST_LOG_SOFTMAX: y = clf_log_softmax(g, x, -1); break;
        case LAST_LAYER_NORM: {
            clf_tensor w = e2e_input(g, &in, "w", CLF_F32, 1, &s[rank - 1], -1, 1);
            y = clf_layer_norm(g, x, -1, 1e-5, w, e2e_input(g, &in, "b", CLF_F32, 1, &s[rank - 1], -1, 1));
            break;
        }
        default: y = clf_rms_norm(g, x, -1, 1e-6, e2e_input(g, &in, "w", CLF_F32, 1, &s[rank - 1], -1, 1)); break;
        }
        clf_graph_output(g, "y", y);
        e2e_run r;
        e2e_check(ctx, g, &in, rtol, atol, NULL, E2E_FUSED, &r);
        ck_assert_msg(r.stats.kernels == 1 && r.stats.launches == 1,
                      "rank %d: %llu kernels, %llu launches (want 1)", rank, (unsigned long long)r.stats.kernels,
                      (unsigned long long)r.stats.launches);
        ck_assert_uint_eq(r.stats.tensor_reads, in.n);
        ck_assert_uint_eq(r.stats.tensor_writes, 1);
        ck_assert_uint_gt(r.stats.unfused_kernels, 1);
        e2e_run_free(&r);
        for (int style = CLF_KERNEL_STYLE_CPU; style <= CLF_KERNEL_STYLE_GPU; style++) {
            size_t k = e2e_check_style(ctx, g, &in, (clf_kernel_style)style, rtol, atol);
            ck_assert_msg(k == 1, "rank %d, %s form: %zu kernels (want 1)", rank,
                          style == CLF_KERNEL_STYLE_GPU ? "GPU" : "CPU", k);
        }
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
}

START_TEST(last_axis_softmax_one_kernel_at_ranks_1_to_6)
{
    last_axis_at_ranks_1_to_6(LAST_SOFTMAX, 1e-5, 1e-6);
}
END_TEST

START_TEST(last_axis_log_softmax_one_kernel_at_ranks_1_to_6)
{
    last_axis_at_ranks_1_to_6(LAST_LOG_SOFTMAX, 1e-5, 1e-5);
}
END_TEST

START_TEST(last_axis_layer_norm_one_kernel_at_ranks_1_to_6)
{
    last_axis_at_ranks_1_to_6(LAST_LAYER_NORM, 1e-4, 1e-5);
}
END_TEST

START_TEST(last_axis_rms_norm_one_kernel_at_ranks_1_to_6)
{
    last_axis_at_ranks_1_to_6(LAST_RMS_NORM, 1e-5, 1e-6);
}
END_TEST

/* Compiles g in the default, CPU and GPU forms and checks each against the
 * reference; every form must plan want kernels. */
static void check_kernels_every_form(clf_context *ctx, const clf_graph *g, const e2e_inputs *in, size_t want,
                                     const char *what, double rtol, double atol)
{
    e2e_run r;
    e2e_check(ctx, g, in, rtol, atol, NULL, E2E_FUSED, &r);
    ck_assert_msg(r.stats.kernels == want, "%s: %llu kernels (want %zu)", what, (unsigned long long)r.stats.kernels,
                  want);
    e2e_run_free(&r);
    for (int style = CLF_KERNEL_STYLE_CPU; style <= CLF_KERNEL_STYLE_GPU; style++) {
        size_t k = e2e_check_style(ctx, g, in, (clf_kernel_style)style, rtol, atol);
        ck_assert_msg(k == want, "%s, %s form: %zu kernels (want %zu)", what,
                      style == CLF_KERNEL_STYLE_GPU ? "GPU" : "CPU", k, want);
    }
}

/* A row's result read back over the row, whichever way it was kept: with
 * keepdims, without it and unsqueezed or reshaped back, or expanded to the
 * row's shape; and the result without keepdims stored as an output beside
 * the normalised rows. Each graph is one kernel at rank 4 ([B, H, S, T])
 * and rank 3. */
START_TEST(row_results_kept_or_flattened_fuse_at_ranks_3_and_4)
{
    clf_context *ctx = clf_test_context();
    static const int64_t s4[4] = {2, 3, 4, 20}, s3[3] = {3, 5, 12};
    for (int rank = 3; rank <= 4; rank++) {
        const int64_t *s = rank == 4 ? s4 : s3;
        int last = rank - 1;
        int64_t kept[4];
        for (int d = 0; d < rank; d++) /* s3 has three entries */
            kept[d] = s[d];
        kept[last] = 1;
        for (int form = 0; form < 4; form++) {
            clf_graph *g = clf_graph_create();
            e2e_inputs in = {0};
            clf_tensor x = e2e_input(g, &in, "x", CLF_F32, rank, s, 0.5, 2), y;
            const char *what;
            switch (form) {
            case 0:
                what = "x / sum(x, keepdims)";
                y = clf_div(g, x, clf_reduce_sum(g, x, 1, &last, true));
                break;
            case 1: {
                what = "x / unsqueeze(sum(x))";
                clf_tensor sm = clf_reduce_sum(g, x, 1, &last, false);
                clf_graph_output(g, "sum", sm);
                y = clf_div(g, x, clf_unsqueeze(g, sm, 1, &last));
                break;
            }
            case 2:
                what = "x - reshape(mean(x))";
                y = clf_sub(g, x, clf_reshape(g, clf_reduce_mean(g, x, 1, &last, false), rank, kept));
                break;
            default:
                what = "exp(x - expand(max(x, keepdims)))";
                y = clf_exp(g, clf_sub(g, x, clf_expand(g, clf_reduce_max(g, x, 1, &last, true), rank, s)));
                break;
            }
            clf_graph_output(g, "y", y);
            char msg[96];
            snprintf(msg, sizeof msg, "rank %d, %s", rank, what);
            check_kernels_every_form(ctx, g, &in, 1, msg, 1e-5, 1e-6);
            e2e_inputs_free(&in);
            clf_graph_destroy(&g);
        }
    }
    clf_context_destroy(&ctx);
}
END_TEST

/* Norms over several trailing axes: layer norm over the last two axes of
 * [B, S, D1, D2] with scale and bias of [D1, D2], and over the last three
 * with a scale broadcast from [D2]; RMS norm over the last three axes of a
 * rank-5 tensor. One kernel each, in every form. */
START_TEST(norms_over_several_trailing_axes_one_kernel)
{
    clf_context *ctx = clf_test_context();
    static const int64_t s[4] = {2, 3, 4, 8}, w2[2] = {4, 8}, w1[1] = {8}, s5[5] = {2, 2, 3, 2, 5}, w5[3] = {3, 2, 5};
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 4, s, -3, 5);
    clf_tensor w = e2e_input(g, &in, "w", CLF_F32, 2, w2, -1, 1);
    clf_graph_output(g, "y", clf_layer_norm(g, x, 2, 1e-5, w, e2e_input(g, &in, "b", CLF_F32, 2, w2, -1, 1)));
    check_kernels_every_form(ctx, g, &in, 1, "layer norm over the last two axes", 1e-4, 1e-5);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);

    g = clf_graph_create();
    x = e2e_input(g, &in, "x", CLF_F32, 4, s, -3, 5);
    clf_graph_output(g, "y", clf_layer_norm(g, x, 1, 1e-5, e2e_input(g, &in, "w", CLF_F32, 1, w1, -1, 1),
                                            CLF_TENSOR_INVALID));
    check_kernels_every_form(ctx, g, &in, 1, "layer norm over the last three axes", 1e-4, 1e-5);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);

    g = clf_graph_create();
    x = e2e_input(g, &in, "x", CLF_F32, 5, s5, -3, 3);
    clf_graph_output(g, "y", clf_rms_norm(g, x, 2, 1e-6, e2e_input(g, &in, "w", CLF_F32, 3, w5, -1, 1)));
    check_kernels_every_form(ctx, g, &in, 1, "rms norm over the last three axes", 1e-5, 1e-6);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

/* Softmax over each axis of a rank-4 tensor, and a sum over axes 1 and 3
 * read back by a division: the trailing axis is the case issue 15 fixed;
 * the others (whose rows are strided) fused before and must still be one
 * correct kernel. */
START_TEST(softmax_over_each_axis_of_a_rank_4_tensor)
{
    clf_context *ctx = clf_test_context();
    static const int64_t s[4] = {2, 5, 3, 8};
    for (int axis = 3; axis >= 0; axis--) {
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        clf_graph_output(g, "y", clf_softmax(g, e2e_input(g, &in, "x", CLF_F32, 4, s, -5, 5), axis));
        char msg[64];
        snprintf(msg, sizeof msg, "softmax over axis %d", axis);
        check_kernels_every_form(ctx, g, &in, 1, msg, 1e-5, 1e-6);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    const int axes[2] = {1, 3};
    clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 4, s, 0.5, 2);
    clf_graph_output(g, "y", clf_div(g, x, clf_reduce_sum(g, x, 2, axes, true)));
    check_kernels_every_form(ctx, g, &in, 1, "x / sum over axes 1 and 3", 1e-5, 1e-6);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

/* A driver that ends every loop after 65535 iterations (llvmpipe,
 * runtime/driver_quirks.h), its quirk set on this device's context: a long
 * row's sum splits into chunks whose loops stay within the limit, in both
 * forms, and stays exact; a softmax whose rows cannot split is refused,
 * naming the limit, instead of computing a wrong result. */
START_TEST(loop_trip_limit_splits_rows)
{
    clf_context *ctx = clf_test_context();
    ctx->quirks |= CLF__QUIRK_LOOP_TRIPS_65535;
    int64_t n = 3000000;
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_F32, 1, &n);
    clf_graph_output(g, "s", clf_reduce_sum(g, x, 0, NULL, false));
    float *xd = malloc((size_t)n * sizeof *xd);
    for (int64_t i = 0; i < n; i++)
        xd[i] = 1.0f;
    for (int style = CLF_KERNEL_STYLE_CPU; style <= CLF_KERNEL_STYLE_GPU; style++) {
        clf_executable *exe = NULL;
        ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.kernel_style = (clf_kernel_style)style), &exe), CLF_OK);
        const char *src = clf_executable_kernel_source(exe, 0), *chunk = strstr(src, "#define CHUNK "),
                   *wg = strstr(src, "#define WG ");
        ck_assert(chunk && wg);
        long per_trip = style == CLF_KERNEL_STYLE_CPU ? 1 : atol(wg + 11);
        ck_assert_msg(atol(chunk + 14) / per_trip <= 65535, "style %d: chunks of %ld, %ld a trip", style,
                      atol(chunk + 14), per_trip);
        float got = 0;
        clf_host_binding in = {"x", xd}, out = {"s", &got};
        ck_assert_int_eq(clf_run_host(exe, 1, &in, 1, &out), CLF_OK);
        ck_assert_msg(got == 3000000.0f, "style %d: sum %.1f", style, (double)got);
        clf_executable_destroy(&exe);
    }
    clf_graph_destroy(&g);
    free(xd);
    int64_t s2[2] = {1, 2000000};
    int last = -1;
    g = clf_graph_create();
    x = clf_input(g, "x", CLF_F32, 2, s2);
    clf_graph_output(g, "p", clf_softmax(g, x, last));
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_CPU), &exe),
                     CLF_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(clf_context_last_error(ctx), "ends every loop after 65535"), "%s", clf_context_last_error(ctx));
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("reductions");
    TCase *tc = tcase_create("reductions");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, loop_trip_limit_splits_rows);
    tcase_add_test(tc, rowsum_prologue_one_kernel);
    tcase_add_test(tc, every_reduction_over_axes);
    tcase_add_test(tc, softmax_one_kernel);
    tcase_add_test(tc, log_softmax_one_kernel);
    tcase_add_test(tc, layer_norm_one_kernel);
    tcase_add_test(tc, rms_norm_one_kernel);
    tcase_add_test(tc, horizontal_mean_and_mean_of_squares);
    tcase_add_test(tc, long_sum_is_accurate);
    tcase_add_test(tc, few_long_rows_split);
    tcase_add_test(tc, softmax_of_large_values);
    tcase_add_test(tc, nan_inf_and_empty_rows);
    tcase_add_test(tc, misaligned_reduction_reads_stay_correct);
    tcase_add_test(tc, online_softmax_edge_rows);
    tcase_add_test(tc, cpu_vector_loop_edge_values);
    tcase_add_test(tc, cpu_vector_loop_gathers);
    tcase_add_test(tc, cpu_form_carries_exp_to_the_epilogue);
    tcase_add_test(tc, cpu_rows_per_item_with_a_partial_last_item);
    tcase_add_test(tc, warp_shuffles_a_driver_refuses_fall_back);
    tcase_add_test(tc, max_and_min_of_signed_zeros_do_not_depend_on_order);
    suite_add_tcase(s, tc);
    clf_test_add_case(s, "gpu_rows_past_the_end_stay_idle", gpu_rows_past_the_end_stay_idle);
    clf_test_add_case(s, "gpu_geometry_by_row_length", gpu_geometry_by_row_length);
    clf_test_add_case(s, "gpu_float4_units_of_sliced_rows", gpu_float4_units_of_sliced_rows);
    clf_test_add_case(s, "long_mixed_sign_sum_and_mean_are_accurate", long_mixed_sign_sum_and_mean_are_accurate);
    clf_test_add_case(s, "softmax_of_large_magnitude_rows_is_accurate", softmax_of_large_magnitude_rows_is_accurate);
    clf_test_add_case(s, "layer_norm_of_rows_with_a_large_mean_is_accurate",
                      layer_norm_of_rows_with_a_large_mean_is_accurate);
    clf_test_add_case(s, "last_axis_softmax_one_kernel_at_ranks_1_to_6", last_axis_softmax_one_kernel_at_ranks_1_to_6);
    clf_test_add_case(s, "last_axis_log_softmax_one_kernel_at_ranks_1_to_6",
                      last_axis_log_softmax_one_kernel_at_ranks_1_to_6);
    clf_test_add_case(s, "last_axis_layer_norm_one_kernel_at_ranks_1_to_6",
                      last_axis_layer_norm_one_kernel_at_ranks_1_to_6);
    clf_test_add_case(s, "last_axis_rms_norm_one_kernel_at_ranks_1_to_6", last_axis_rms_norm_one_kernel_at_ranks_1_to_6);
    clf_test_add_case(s, "row_results_kept_or_flattened_fuse_at_ranks_3_and_4",
                      row_results_kept_or_flattened_fuse_at_ranks_3_and_4);
    clf_test_add_case(s, "norms_over_several_trailing_axes_one_kernel", norms_over_several_trailing_axes_one_kernel);
    clf_test_add_case(s, "softmax_over_each_axis_of_a_rank_4_tensor", softmax_over_each_axis_of_a_rank_4_tensor);
    TCase *tc64 = tcase_create("int64");
    tcase_set_timeout(tc64, 600);
    tcase_add_test(tc64, int64_reductions_are_exact);
    suite_add_tcase(s, tc64);
    return clf_test_run_suite(s);
}
