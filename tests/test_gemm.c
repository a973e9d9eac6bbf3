/* GEMM and its fusion on PoCL: matmul and gemm against the reference on
 * edge shapes (not multiples of any tile, K = 1, K = 0, M or N = 1, 1-D
 * operands, broadcast batches, transposed operands), fused and unfused, in
 * both template forms (GPU form forced on the CPU device), and the kernel
 * counts of epilogue and prologue fusion. */
#include <dirent.h>
#include <sys/stat.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_merge_products.h"
#include "runtime/driver_quirks.h"
#include "runtime/runtime_internal.h"
#include "test_e2e.h"
#include "test_support.h"

/* Products of K terms in [-1, 1): f32 accumulation against the double
 * reference stays well inside these. */
#define RTOL 1e-4
#define ATOL 1e-4

static clf_tensor input2(clf_graph *g, e2e_inputs *in, const char *name, int64_t r, int64_t c)
{
    int64_t s[2] = {r, c};
    return e2e_input(g, in, name, CLF_F32, 2, s, -1.0, 1.0);
}

/* relu(x @ w + b) for an m x k by k x n product: one kernel. */
static void check_linear_relu(int64_t m, int64_t n, int64_t k)
{
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = input2(g, &in, "x", m, k);
    clf_tensor w = input2(g, &in, "w", k, n);
    int64_t bs[1] = {n};
    clf_tensor b = e2e_input(g, &in, "b", CLF_F32, 1, bs, -1.0, 1.0);
    clf_tensor y = clf_relu(g, clf_add(g, clf_matmul(g, x, w), b));
    ck_assert_int_eq(clf_graph_output(g, "y", y), CLF_OK);
    e2e_check_all(g, &in, 1, RTOL, ATOL);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}

START_TEST(linear_relu_edge_shapes)
{
    /* Not multiples of any tile; one of each extent 1; K = 1; a full
     * 128 x 128 tile with a K tail; skinny both ways; K and N multiples
     * of 4 (float4 tile loads) with partial tiles. */
    static const int64_t shapes[][3] = {
        {37, 53, 29}, {1, 40, 17}, {40, 1, 17}, {19, 23, 1}, {1, 1, 1},
        {128, 128, 70}, {3, 200, 5}, {200, 3, 9}, {65, 130, 33},
        /* Rows of whole float4s (vector tile loads) with partial tiles. */
        {33, 44, 48}, {130, 136, 36},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        check_linear_relu(shapes[i][0], shapes[i][1], shapes[i][2]);
}
END_TEST

START_TEST(matmul_one_d_operands)
{
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    int64_t k[1] = {13};
    clf_tensor v = e2e_input(g, &in, "v", CLF_F32, 1, k, -1.0, 1.0);
    clf_tensor u = e2e_input(g, &in, "u", CLF_F32, 1, k, -1.0, 1.0);
    clf_tensor a = input2(g, &in, "a", 7, 13);
    clf_tensor b = input2(g, &in, "b", 13, 5);
    clf_tensor vb = clf_matmul(g, v, b);  /* [5] */
    clf_tensor av = clf_matmul(g, a, u);  /* [7] */
    clf_tensor vu = clf_matmul(g, v, u);  /* [] */
    int rank;
    int64_t shape[CLF_MAX_RANK];
    ck_assert_int_eq(clf_tensor_shape(g, vb, &rank, shape), CLF_OK);
    ck_assert_int_eq(rank, 1);
    ck_assert_int_eq(shape[0], 5);
    ck_assert_int_eq(clf_tensor_shape(g, av, &rank, shape), CLF_OK);
    ck_assert_int_eq(rank, 1);
    ck_assert_int_eq(shape[0], 7);
    ck_assert_int_eq(clf_tensor_shape(g, vu, &rank, shape), CLF_OK);
    ck_assert_int_eq(rank, 0);
    ck_assert_int_eq(clf_graph_output(g, "vb", vb), CLF_OK);
    ck_assert_int_eq(clf_graph_output(g, "av", av), CLF_OK);
    ck_assert_int_eq(clf_graph_output(g, "vu", vu), CLF_OK);
    e2e_check_all(g, &in, 3, RTOL, ATOL);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

/* A product of one element read through a view the epilogue fuses (a
 * whole slice of an extent-1 axis, a reshape): the index algebra folds the
 * element's index to 0, which is still the product's element (found by the
 * graph fuzzer: codegen refused it with CLF_ERR_INTERNAL). */
START_TEST(one_element_product_through_views)
{
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor a = input2(g, &in, "a", 1, 4);
    clf_tensor b = input2(g, &in, "b", 4, 1);
    clf_tensor p = clf_matmul(g, a, b); /* [1, 1] */
    clf_tensor sl = clf_slice(g, p, 1, (int64_t[]){-7}, (int64_t[]){2}, (int[]){1}, NULL);
    clf_tensor r = clf_reshape(g, clf_relu(g, p), 1, (int64_t[]){1});
    ck_assert_int_eq(clf_graph_output(g, "sl", sl), CLF_OK);
    ck_assert_int_eq(clf_graph_output(g, "r", r), CLF_OK);
    e2e_check_all(g, &in, 1, RTOL, ATOL); /* one kernel */
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(matmul_broadcast_batch)
{
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    int64_t sa[4] = {2, 1, 5, 8}, sb[3] = {3, 8, 4};
    clf_tensor a = e2e_input(g, &in, "a", CLF_F32, 4, sa, -1.0, 1.0);
    clf_tensor b = e2e_input(g, &in, "b", CLF_F32, 3, sb, -1.0, 1.0);
    clf_tensor y = clf_matmul(g, a, b);
    int rank;
    int64_t shape[CLF_MAX_RANK];
    ck_assert_int_eq(clf_tensor_shape(g, y, &rank, shape), CLF_OK);
    ck_assert_int_eq(rank, 4);
    ck_assert(shape[0] == 2 && shape[1] == 3 && shape[2] == 5 && shape[3] == 4);
    /* A residual read through the batch broadcast in the epilogue. */
    int64_t sr[2] = {5, 4};
    clf_tensor res = e2e_input(g, &in, "res", CLF_F32, 2, sr, -1.0, 1.0);
    ck_assert_int_eq(clf_graph_output(g, "y", clf_add(g, y, res)), CLF_OK);
    e2e_check_all(g, &in, 1, RTOL, ATOL);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(gemm_transposes_alpha_beta)
{
    /* Every transpose combination and C broadcast from [N], [M, 1] and []. */
    for (int t = 0; t < 4; t++) {
        bool ta = t & 1, tb = (t >> 1) & 1;
        int64_t m = 21, n = 18, k = 11;
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        clf_tensor a = ta ? input2(g, &in, "a", k, m) : input2(g, &in, "a", m, k);
        clf_tensor b = tb ? input2(g, &in, "b", n, k) : input2(g, &in, "b", k, n);
        int64_t cn[1] = {n}, cm[2] = {m, 1};
        clf_tensor c = t == 0 ? e2e_input(g, &in, "c", CLF_F32, 1, cn, -1.0, 1.0)
                     : t == 1 ? e2e_input(g, &in, "c", CLF_F32, 2, cm, -1.0, 1.0)
                     : t == 2 ? e2e_input(g, &in, "c", CLF_F32, 0, NULL, -1.0, 1.0)
                              : CLF_TENSOR_INVALID;
        clf_tensor y = clf_gemm(g, a, b, c, 0.5, -2.0, ta, tb);
        ck_assert_int_eq(clf_graph_output(g, "y", y), CLF_OK);
        e2e_check_all(g, &in, 1, RTOL, ATOL);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
}
END_TEST

START_TEST(zero_sized_products)
{
    /* K = 0 is a product of zeros plus the bias; M = 0 has no elements. */
    static const int64_t shapes[][3] = {{6, 5, 0}, {0, 5, 3}};
    for (size_t i = 0; i < 2; i++) {
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        clf_tensor x = input2(g, &in, "x", shapes[i][0], shapes[i][2]);
        clf_tensor w = input2(g, &in, "w", shapes[i][2], shapes[i][1]);
        int64_t bs[1] = {shapes[i][1]};
        clf_tensor b = e2e_input(g, &in, "b", CLF_F32, 1, bs, -1.0, 1.0);
        ck_assert_int_eq(clf_graph_output(g, "y", clf_add(g, clf_matmul(g, x, w), b)), CLF_OK);
        clf_context *ctx = clf_test_context();
        e2e_check(ctx, g, &in, RTOL, ATOL, NULL, E2E_BOTH, NULL);
        clf_context_destroy(&ctx);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
}
END_TEST

/* K = 0 in the GPU form: the first k-tile is loaded before the k loop, and
 * with K % TK == 0 the bounds check on k compiled to "true", so every
 * work-item read its empty operands (oclgrind: "Invalid read" at address
 * 0 in clf_gemm_*; a GPU may fault). The check must compile to "false"
 * instead; oclgrind's gemm_gpu K = 0 case checks the reads themselves. */
START_TEST(gpu_form_reads_nothing_when_k_is_zero)
{
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    /* 24 rows: the tiled form (8 rows or fewer take gemm_rows.cl). */
    clf_tensor x = input2(g, &in, "x", 24, 0);
    clf_tensor w = input2(g, &in, "w", 0, 8);
    ck_assert_int_eq(clf_graph_output(g, "y", clf_matmul(g, x, w)), CLF_OK);
    clf_context *ctx = clf_test_context();
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU), &exe), CLF_OK);
    ck_assert_uint_eq(clf_executable_kernel_count(exe), 1);
    const char *src = clf_executable_kernel_source(exe, 0);
    ck_assert_ptr_nonnull(strstr(src, "GEMM region, GPU form"));
    ck_assert_ptr_nonnull(strstr(src, "#define K 0\n"));
    const char *guard = strstr(src, "#if K == 0\n");
    ck_assert_msg(guard != NULL, "the GPU form has no K == 0 case for its bounds check on k");
    const char *next = strstr(guard, "#define IN_K(k) ");
    ck_assert_ptr_nonnull(next);
    ck_assert_msg(strncmp(next, "#define IN_K(k) (false)", 23) == 0, "with K = 0, IN_K is %.30s", next);
    clf_executable_destroy(&exe);
    ck_assert_uint_eq(e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_GPU, RTOL, ATOL), 1);
    clf_context_destroy(&ctx);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

/* Products of at most 8 rows a work-group over K of 512 or more take the
 * GPU's few-rows form (gemm_rows.cl: B spread over every work-item, lanes
 * along K meeting in local memory): one row or a few, B shared by a batch
 * (all its rows in one work-group) or one per product, B as it lies (4
 * columns a load, a tail of fewer) or transposed (4 k a load, a tail of
 * fewer), the epilogue fused; 9 rows, or K under 512, keep the tiled form. */
START_TEST(gpu_rows_form_few_rows)
{
    static const struct {
        int64_t batch_a, batch_b, m, n, k;
        bool tb, bias;
        int rows_max, shared, n_fast; /* rows_max 0: the tiled form */
    } cases[] = {
        {1, 1, 1, 37, 530, false, true, 1, 1, 1},  /* N = 9 x 4 + 1 */
        {3, 1, 1, 40, 640, false, false, 8, 1, 1}, /* 3 products of one row, one B */
        {2, 2, 5, 20, 520, false, false, 8, 0, 1}, /* a B per product */
        {1, 1, 2, 45, 526, true, true, 8, 1, 0},   /* transposed, K = 131 x 4 + 2 */
        {1, 1, 1, 33, 512, true, false, 1, 1, 0},  /* transposed, whole float4s of K */
        {1, 1, 9, 8, 600, false, false, 0, 0, 1},  /* 9 rows: tiled */
        {1, 1, 1, 8, 511, false, true, 0, 0, 1},   /* K = 511: tiled */
    };
    clf_context *ctx = clf_test_context();
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        int64_t sa[3] = {cases[c].batch_a, cases[c].m, cases[c].k};
        int64_t sb[3] = {cases[c].batch_b, cases[c].tb ? cases[c].n : cases[c].k,
                         cases[c].tb ? cases[c].k : cases[c].n};
        clf_tensor a = e2e_input(g, &in, "a", CLF_F32, 3, sa, -1.0, 1.0);
        clf_tensor b = e2e_input(g, &in, "b", CLF_F32, 3, sb, -1.0, 1.0);
        if (cases[c].tb) {
            int perm[3] = {0, 2, 1};
            b = clf_transpose(g, b, 3, perm);
        }
        clf_tensor y = clf_matmul(g, a, b);
        if (cases[c].bias) {
            int64_t sn[1] = {cases[c].n};
            y = clf_relu(g, clf_add(g, y, e2e_input(g, &in, "bias", CLF_F32, 1, sn, -1.0, 1.0)));
        }
        ck_assert_int_eq(clf_graph_output(g, "y", y), CLF_OK);
        clf_executable *exe = NULL;
        clf_status st = clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU), &exe);
        ck_assert_msg(st == CLF_OK, "case %zu: %s", c, clf_context_last_error(ctx));
        ck_assert_uint_eq(clf_executable_kernel_count(exe), 1);
        const char *src = clf_executable_kernel_source(exe, 0);
        if (cases[c].rows_max) {
            ck_assert_msg(strstr(src, "kernels_templates/gemm_rows.cl") != NULL, "case %zu: %s", c, src);
            char want[96];
            snprintf(want, sizeof want, "#define ROWS_MAX %d\n#define B_SHARED %d\n#define B_N_FAST %d\n",
                     cases[c].rows_max, cases[c].shared, cases[c].n_fast);
            ck_assert_msg(strstr(src, want) != NULL, "case %zu: wants %s", c, want);
            const char *name = clf_executable_kernel_name(exe, 0);
            const char *prefix = cases[c].bias ? "clf_gemm_rows_fused_add_relu" : "clf_gemm_rows";
            ck_assert_msg(strncmp(name, prefix, strlen(prefix)) == 0, "case %zu: %s", c, name);
        } else {
            ck_assert_msg(strstr(src, "kernels_templates/gemm.cl") != NULL, "case %zu", c);
        }
        clf_executable_destroy(&exe);
        ck_assert_uint_eq(e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_GPU, RTOL, ATOL), 1);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
}
END_TEST

/* A few-rows product too narrow to fill the device cuts K into slices, a
 * work-group each, whose sums meet through global memory: the last
 * work-group of a column block adds them, applies the epilogue and sets
 * the block's counter back to 0 (gemm_rows.cl). Each case runs three times
 * in one executable (the counters must be 0 again before each launch) and
 * in a second executable of the same graph (counters of its own, the plan
 * from the cache): one row against B as it lies, transposed, a B per
 * product, and 5 rows of one B. */
START_TEST(gpu_rows_form_split_k)
{
    static const struct {
        int64_t batch_a, batch_b, m, n, k;
        bool tb;
    } cases[] = {
        {1, 1, 1, 40, 2048, false}, /* 2 blocks of 32 columns (f32), the last short */
        {1, 1, 1, 12, 4099, true},  /* K = 4099: the last slice's tail */
        {3, 3, 1, 33, 1500, false}, /* a B per product: a counter per product and block */
        {1, 1, 5, 24, 1024, false}, /* 5 rows of one B */
    };
    clf_context *ctx = clf_test_context();
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        int64_t sa[3] = {cases[c].batch_a, cases[c].m, cases[c].k};
        int64_t sb[3] = {cases[c].batch_b, cases[c].tb ? cases[c].n : cases[c].k, cases[c].tb ? cases[c].k : cases[c].n};
        int64_t sn[1] = {cases[c].n};
        clf_tensor a = e2e_input(g, &in, "a", CLF_F32, 3, sa, -1.0, 1.0);
        clf_tensor b = e2e_input(g, &in, "b", CLF_F32, 3, sb, -1.0, 1.0);
        if (cases[c].tb)
            b = clf_transpose(g, b, 3, (int[]){0, 2, 1});
        clf_tensor y = clf_relu(g, clf_add(g, clf_matmul(g, a, b), e2e_input(g, &in, "bias", CLF_F32, 1, sn, -1.0, 1.0)));
        ck_assert_int_eq(clf_graph_output(g, "y", y), CLF_OK);
        size_t numel = (size_t)(cases[c].batch_a * cases[c].m * cases[c].n);
        size_t a_numel = (size_t)(cases[c].batch_a * cases[c].m * cases[c].k);
        float *want = malloc(numel * sizeof *want), *got = malloc(numel * sizeof *got), *ad = e2e_data(&in, "a");
        ck_assert(want && got);
        char msg[256];
        clf_host_binding wb = {"y", want}, gb = {"y", got};
        for (int e = 0; e < 2; e++) {
            clf_executable *exe = NULL;
            clf_status st = clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU), &exe);
            ck_assert_msg(st == CLF_OK, "case %zu: %s", c, clf_context_last_error(ctx));
            ck_assert_uint_eq(clf_executable_kernel_count(exe), 1);
            const char *src = clf_executable_kernel_source(exe, 0), *at = strstr(src, "#define SPLIT ");
            ck_assert_msg(strstr(src, "kernels_templates/gemm_rows.cl") && at && atoi(at + 14) > 1,
                          "case %zu: not split: %s", c, src);
            for (int run = 0; run < 3; run++) {
                /* New values of a each run: a run that stored nothing
                 * would leave the last run's results in the device's
                 * output buffer. */
                for (size_t i = 0; i < a_numel; i++)
                    ad[i] = 0.75f - ad[i];
                ck_assert_int_eq(clf_reference_run(g, in.n, in.b, 1, &wb, msg, sizeof msg), CLF_OK);
                memset(got, 0xff, numel * sizeof *got);
                st = clf_run_host(exe, in.n, in.b, 1, &gb);
                ck_assert_msg(st == CLF_OK, "case %zu: %s", c, clf_context_last_error(ctx));
                char why[256];
                ck_assert_msg(clf_test_close(CLF_F32, got, want, numel, RTOL, ATOL, why, sizeof why),
                              "case %zu, executable %d, run %d: %s", c, e, run, why);
            }
            clf_executable_destroy(&exe);
        }
        free(want);
        free(got);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
}
END_TEST

/* The GPU form loads operand tiles as float4s through float4 pointers
 * where rows are whole float4s (NVIDIA's compiler makes vload4 of an
 * address it cannot prove aligned four scalar loads), and element by
 * element where they are not (x's rows of 18 floats here), right either
 * way. */
START_TEST(gpu_form_float4_tile_loads)
{
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = input2(g, &in, "x", 70, 18);
    clf_tensor w = input2(g, &in, "w", 18, 36);
    clf_tensor v = input2(g, &in, "v", 36, 20);
    ck_assert_int_eq(clf_graph_output(g, "y", clf_matmul(g, clf_matmul(g, x, w), v)), CLF_OK);
    clf_context *ctx = clf_test_context();
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_GPU), &exe), CLF_OK);
    ck_assert_uint_eq(clf_executable_kernel_count(exe), 2);
    const char *first = clf_executable_kernel_source(exe, 0), *second = clf_executable_kernel_source(exe, 1);
    /* x @ w: A's rows (18) are not whole float4s, B's (36) are. */
    ck_assert_msg(!strstr(first, "clf_load_a4(IDX_T") && strstr(first, "#define VEC_A 0\n"), "%s", first);
    const char *b4 = strstr(first, "return *(const __global float4 *)(b");
    ck_assert_msg(b4 && strstr(b4, " + off + k * 36u + n);"), "%s", first);
    ck_assert_ptr_null(strstr(first, "vload4(0, b"));
    /* (x @ w) @ v: both operands' rows are whole float4s. */
    ck_assert_msg(strstr(second, "#define VEC_A 1\n") && strstr(second, "#define VEC_B 1\n"), "%s", second);
    /* A, x @ w, is an intermediate: a region of the scratch from its offset. */
    const char *a4 = strstr(second, "return *(const __global float4 *)((b");
    ck_assert_msg(a4 && strstr(a4, " + o_") && strstr(a4, ") + off + m * 36u + k);"), "%s", second);
    clf_executable_destroy(&exe);
    ck_assert_uint_eq(e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_GPU, RTOL, ATOL), 2);
    clf_context_destroy(&ctx);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

/* A cheap prologue on each operand (scale, add of a broadcast row, cast
 * from i32, activation) runs in the GEMM's loads: one kernel. */
START_TEST(prologue_fused)
{
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = input2(g, &in, "x", 33, 20);
    int64_t ws[2] = {20, 17};
    clf_tensor wi = e2e_input(g, &in, "wi", CLF_I32, 2, ws, -3, 3);
    int64_t rs[1] = {20};
    clf_tensor shift = e2e_input(g, &in, "shift", CLF_F32, 1, rs, -1.0, 1.0);
    clf_tensor a = clf_tanh(g, clf_add(g, clf_mul(g, x, clf_scalar(g, CLF_F32, 0.5)), shift));
    clf_tensor b = clf_mul(g, clf_cast(g, wi, CLF_F32), clf_scalar(g, CLF_F32, 0.25));
    ck_assert_int_eq(clf_graph_output(g, "y", clf_matmul(g, a, b)), CLF_OK);
    e2e_check_all(g, &in, 1, RTOL, ATOL);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

/* A graph output that is a constant: the prologue's scale (a literal) and
 * a constant vector. The planner read each from its own output buffer, so
 * the kernel that stores it named the buffer twice and failed to build
 * ("redefinition of parameter 'b0'"; clfuse-fuzz --seed 11 --index 55
 * --family matmul). */
START_TEST(constant_outputs_beside_a_prologue)
{
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = input2(g, &in, "x", 9, 6);
    clf_tensor w = input2(g, &in, "w", 6, 1);
    clf_tensor half = clf_scalar(g, CLF_F32, 0.5);
    static const float values[3] = {1.5f, -2.0f, 0.25f};
    int64_t s3[1] = {3};
    clf_tensor v = clf_constant(g, CLF_F32, 1, s3, values);
    ck_assert_int_eq(clf_graph_output(g, "y", clf_matmul(g, clf_mul(g, x, half), w)), CLF_OK);
    ck_assert_int_eq(clf_graph_output(g, "half", half), CLF_OK);
    ck_assert_int_eq(clf_graph_output(g, "v", v), CLF_OK);
    ck_assert_int_eq(clf_graph_output(g, "v2", clf_add(g, v, v)), CLF_OK);
    clf_context *ctx = clf_test_context();
    e2e_run r;
    e2e_check(ctx, g, &in, RTOL, ATOL, NULL, E2E_BOTH, &r);
    ck_assert(*(const float *)e2e_got(&r, "half") == 0.5f);
    ck_assert(((const float *)e2e_got(&r, "v"))[1] == -2.0f);
    e2e_run_free(&r);
    clf_context_destroy(&ctx);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

/* An operand that adds two full-size tensors would be loaded twice per
 * tile: it is stored once by its own kernel instead. */
START_TEST(prologue_refused_when_it_reads_more)
{
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = input2(g, &in, "x", 33, 20);
    clf_tensor z = input2(g, &in, "z", 33, 20);
    clf_tensor w = input2(g, &in, "w", 20, 17);
    ck_assert_int_eq(clf_graph_output(g, "y", clf_matmul(g, clf_add(g, x, z), w)), CLF_OK);
    e2e_check_all(g, &in, 2, RTOL, ATOL);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

/* BENCH.md's mlp block, x + (gelu(x @ w1 + b1) @ w2 + b2): two GEMM
 * kernels, the bias and gelu in the first one's epilogue, the bias and
 * residual in the second's. */
/* Products that read one operand merged into one (graph_merge_products.h):
 * a layer's q, k, v (read through a reshape) and gate, up (silu(gate) * up
 * the down projection's operand) over one x, at 1 row (a decode step) and
 * 12. Against the reference fused, unfused and in both forms; the merged
 * kernel lists every member among its nodes; CLFUSE_MERGE_PRODUCTS=0 keeps
 * them apart. GPU products of more than CLF__FEW_ROWS rows whose kernels
 * store more than the product stay apart there (their epilogues would be
 * kernels of their own); CPU forms compute the parts in their loads. */
static clf_tensor small_weight(clf_graph *g, int64_t k, int64_t n, unsigned seed)
{
    float *w = malloc((size_t)(k * n) * sizeof *w);
    for (int64_t i = 0; i < k * n; i++)
        w[i] = (float)((i * 7919 + seed * 104729) % 2001 - 1000) / 20000.0f;
    int64_t shape[2] = {k, n};
    clf_tensor t = clf_constant(g, CLF_F32, 2, shape, w);
    free(w);
    return t;
}

static size_t compiled_kernels(clf_context *ctx, const clf_graph *g, clf_kernel_style style)
{
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.kernel_style = style), &exe), CLF_OK);
    size_t k = clf_executable_kernel_count(exe);
    clf_executable_destroy(&exe);
    return k;
}

START_TEST(merged_products)
{
    const int64_t K = 520, D = 24, F = 40, O = 16;
    for (int64_t rows = 1; rows <= 12; rows += 11) {
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        clf_tensor x = input2(g, &in, "x", rows, K);
        clf_tensor p[5];
        for (unsigned i = 0; i < 5; i++)
            p[i] = clf_matmul(g, x, small_weight(g, K, i < 3 ? D : F, i + 1));
        static const char *names[3] = {"q", "k", "v"};
        for (int i = 0; i < 3; i++) {
            int64_t heads[3] = {rows, 2, D / 2};
            ck_assert_int_eq(clf_graph_output(g, names[i], clf_neg(g, clf_reshape(g, p[i], 3, heads))), CLF_OK);
        }
        clf_tensor act = clf_mul(g, clf_mul(g, p[3], clf_sigmoid(g, p[3])), p[4]);
        ck_assert_int_eq(clf_graph_output(g, "y", clf_matmul(g, act, small_weight(g, F, O, 9))), CLF_OK);
        clf_context *ctx = clf_test_context();
        e2e_check(ctx, g, &in, RTOL, ATOL, NULL, E2E_BOTH, NULL);
        /* Merged: one product, one kernel for the three reshaped outputs,
         * the down projection. Apart: five products, v's epilogue computing
         * the three outputs, up's silu(gate) * up. GPU tiles (12 rows) keep
         * v and up apart, whose kernels store more than their products
         * there, and merge q, k and gate: 4 kernels. */
        const size_t merged = 3, apart = 6, gpu_tiles = 4;
        ck_assert_uint_eq(e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_CPU, RTOL, ATOL), merged);
        ck_assert_uint_eq(e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_GPU, RTOL, ATOL),
                          rows <= CLF__FEW_ROWS ? merged : gpu_tiles);
        clf_executable *exe = NULL;
        ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_CPU), &exe), CLF_OK);
        size_t found = 0;
        for (size_t k = 0; k < clf_executable_kernel_count(exe); k++) {
            size_t n = 0;
            const uint32_t *ids = clf_executable_kernel_nodes(exe, k, &n);
            size_t members = 0;
            for (size_t j = 0; j < n; j++)
                for (int i = 0; i < 5; i++)
                    members += ids[j] == p[i].node;
            if (members == 5)
                found++;
        }
        ck_assert_uint_eq(found, 1);
        clf_executable_destroy(&exe);
        setenv("CLFUSE_MERGE_PRODUCTS", "0", 1);
        ck_assert_uint_eq(compiled_kernels(ctx, g, CLF_KERNEL_STYLE_CPU), apart);
        ck_assert_uint_eq(compiled_kernels(ctx, g, CLF_KERNEL_STYLE_GPU), apart);
        unsetenv("CLFUSE_MERGE_PRODUCTS");
        clf_context_destroy(&ctx);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
}
END_TEST

START_TEST(mlp_two_kernels)
{
    int64_t m = 24, d = 20, ff = 36;
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = input2(g, &in, "x", m, d);
    clf_tensor w1 = input2(g, &in, "w1", d, ff);
    clf_tensor w2 = input2(g, &in, "w2", ff, d);
    int64_t s1[1] = {ff}, s2[1] = {d};
    clf_tensor b1 = e2e_input(g, &in, "b1", CLF_F32, 1, s1, -1.0, 1.0);
    clf_tensor b2 = e2e_input(g, &in, "b2", CLF_F32, 1, s2, -1.0, 1.0);
    clf_tensor h = clf_gelu(g, clf_add(g, clf_matmul(g, x, w1), b1));
    clf_tensor y = clf_add(g, x, clf_add(g, clf_matmul(g, h, w2), b2));
    ck_assert_int_eq(clf_graph_output(g, "y", y), CLF_OK);
    e2e_check_all(g, &in, 2, RTOL, ATOL);

    clf_context *ctx = clf_test_context();
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, g, NULL, &exe), CLF_OK);
    ck_assert_uint_eq(clf_executable_kernel_count(exe), 2);
    for (size_t k = 0; k < 2; k++)
        ck_assert_msg(strncmp(clf_executable_kernel_name(exe, k), "clf_gemm_fused_add", 18) == 0,
                      "kernel %zu is %s", k, clf_executable_kernel_name(exe, k));
    ck_assert_ptr_nonnull(strstr(clf_executable_kernel_name(exe, 0), "gelu"));
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

/* One row of A on the CPU form (a decode step's projections) reads B where
 * it lies into vector sums (gemm_cpu.cl, CLF_ONE_ROW): whole blocks of
 * vectors, a block's last columns past its whole vectors (N = 53, 1000),
 * blocks several TN wide (N = 1500, 2048),
 * one column, K = 0 and 1, a batch of one-row products, f16 weights, and
 * A through a prologue (an activation; an RMS norm, whose statistics the
 * kernel computes), each against the reference; the CPU form's kernel
 * must take the one-row path (but on llvmpipe, whose loops end early).
 * K long enough to be cut into slices where the blocks are fewer than four
 * a compute unit (ONE_ROW_SPLIT > 1, the slices' sums added by a second
 * launch): slices not a multiple of the sweep's four rows (K = 1000, 1001:
 * the last slice shorter), a batch, blocks past one k-block a slice (N =
 * 2100, K = 4000); each executable run twice, x negated the second time,
 * so that a run cannot pass on what the first left. */
START_TEST(cpu_one_row_products)
{
    static const struct {
        int64_t batch, n, k;
        clf_dtype wdt;
        int prologue; /* 0: none, 1: relu, 2: rms norm */
    } cases[] = {
        {1, 256, 64, CLF_F32, 0}, {1, 53, 300, CLF_F32, 0}, {1, 1000, 33, CLF_F32, 1}, {1, 1, 17, CLF_F32, 0},
        {1, 40, 0, CLF_F32, 0},   {1, 96, 1, CLF_F32, 0},   {3, 70, 24, CLF_F32, 0},   {1, 512, 128, CLF_F16, 0},
        {1, 200, 96, CLF_F16, 2},
        /* blocks of several TN columns (CLF_ONE_ROW > 1 on 2 compute
         * units), the last one short of a whole TN and of a whole vector */
        {1, 1500, 300, CLF_F32, 1}, {1, 2048, 40, CLF_F16, 2},
        /* slices of K; none where N = 0 (no blocks: the fuzzer's seed 40
         * graph 15 divided by their count) */
        {1, 300, 1000, CLF_F32, 0}, {1, 37, 1001, CLF_F16, 1}, {3, 70, 700, CLF_F16, 2}, {1, 2100, 4000, CLF_F16, 0},
        {1, 0, 600, CLF_F32, 0},
    };
    clf_context *ctx = clf_test_context();
    clf_device_desc dev;
    ck_assert_int_eq(clf_context_device(ctx, &dev), CLF_OK);
    const int64_t units = dev.compute_units ? (int64_t)dev.compute_units : 1;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        int64_t sx[3] = {cases[c].batch, 1, cases[c].k}, sw[2] = {cases[c].k, cases[c].n}, sb[1] = {cases[c].n};
        clf_tensor x = e2e_input(g, &in, "x", CLF_F32, 3, sx, -1.0, 1.0);
        clf_tensor w = e2e_input(g, &in, "w", cases[c].wdt, 2, sw, -1.0, 1.0);
        if (cases[c].prologue == 1)
            x = clf_relu(g, x);
        else if (cases[c].prologue == 2)
            x = clf_rms_norm(g, x, -1, 1e-5, CLF_TENSOR_INVALID);
        if (cases[c].wdt != CLF_F32)
            w = clf_cast(g, w, CLF_F32);
        clf_tensor y = clf_add(g, clf_matmul(g, x, w), e2e_input(g, &in, "b", CLF_F32, 1, sb, -1.0, 1.0));
        ck_assert_int_eq(clf_graph_output(g, "y", y), CLF_OK);
        size_t kernels = e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_CPU, RTOL, ATOL);
        ck_assert_uint_ge(kernels, 1);
        const bool sliced =
            cases[c].n > 0 && cases[c].batch * ((cases[c].n + 2047) / 2048) < 4 * units && cases[c].k >= 512;
        clf_executable *exe = NULL;
        ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_CPU), &exe), CLF_OK);
        if (sliced) { /* twice, x negated the second time */
            const size_t numel = (size_t)(cases[c].batch * cases[c].n);
            float *want = malloc(numel * sizeof *want), *got = malloc(numel * sizeof *got);
            clf_host_binding wb = {"y", want}, o = {"y", got};
            char why[256];
            for (int run = 0; run < 2; run++) {
                if (run == 1)
                    for (size_t i = 0; i < in.n; i++)
                        if (strcmp(in.b[i].name, "x") == 0)
                            for (size_t e = 0; e < in.bytes[i] / sizeof(float); e++)
                                ((float *)in.b[i].data)[e] = -((float *)in.b[i].data)[e];
                ck_assert_int_eq(clf_reference_run(g, in.n, in.b, 1, &wb, why, sizeof why), CLF_OK);
                memset(got, 0xff, numel * sizeof *got);
                ck_assert_int_eq(clf_run_host(exe, in.n, in.b, 1, &o), CLF_OK);
                ck_assert_msg(clf_test_close(CLF_F32, got, want, numel, RTOL, ATOL, why, sizeof why),
                              "case %zu run %d: %s", c, run, why);
            }
            free(want);
            free(got);
        }
        bool one_row = false, split = false;
        for (size_t i = 0; i < clf_executable_kernel_count(exe); i++) {
            const char *src = clf_executable_kernel_source(exe, i);
            one_row |= strstr(src, "#define CLF_ONE_ROW ") != NULL;
            const char *at = strstr(src, "#define ONE_ROW_SPLIT "); /* codegen's, before the template's default */
            split |= at && atoi(at + strlen("#define ONE_ROW_SPLIT ")) > 1;
        }
        const bool loops_cut = ctx->quirks & CLF__QUIRK_LOOP_TRIPS_65535;
        ck_assert_msg(one_row || cases[c].k == 0 || cases[c].n == 0 || loops_cut,
                      "case %zu (batch %lld, N %lld, K %lld): no kernel takes the one-row path", c,
                      (long long)cases[c].batch, (long long)cases[c].n, (long long)cases[c].k);
        ck_assert_msg(loops_cut || split == sliced, "case %zu (batch %lld, N %lld, K %lld): K %s into slices", c,
                      (long long)cases[c].batch, (long long)cases[c].n, (long long)cases[c].k,
                      split ? "cut" : "not cut");
        clf_executable_destroy(&exe);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
}
END_TEST

/* The CPU form's blocks of several sub-blocks of columns (gemm_cpu.cl,
 * CLF_SPAN), where A's loads compute a prologue (an activation, an RMS
 * norm with its row statistics) or convert f16: A's block is evaluated
 * once into local memory for every sub-block. N = 512 x the compute units
 * - 68, so that the device's blocks span two sub-blocks and the last is
 * short of a whole one; a batch; K past one k-block. Each against the
 * reference, and on a CPU (but llvmpipe) the kernel must take the wide
 * blocks. */
START_TEST(cpu_blocks_of_several_sub_blocks)
{
    clf_context *ctx = clf_test_context();
    clf_device_desc dev;
    ck_assert_int_eq(clf_context_device(ctx, &dev), CLF_OK);
    const int64_t n = 512 * (int64_t)(dev.compute_units ? dev.compute_units : 1) - 68;
    static const struct {
        int64_t batch, m, k;
        int prologue; /* 0: f16 A as it lies, 1: sigmoid, 2: rms norm */
    } cases[] = {{1, 37, 300, 1}, {1, 5, 33, 2}, {1, 64, 48, 0}, {2, 20, 24, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        int64_t sx[3] = {cases[c].batch, cases[c].m, cases[c].k}, sw[2] = {cases[c].k, n};
        clf_tensor x = e2e_input(g, &in, "x", cases[c].prologue ? CLF_F32 : CLF_F16, 3, sx, -1.0, 1.0);
        clf_tensor w = e2e_input(g, &in, "w", CLF_F32, 2, sw, -1.0, 1.0);
        x = cases[c].prologue == 0   ? clf_cast(g, x, CLF_F32)
            : cases[c].prologue == 1 ? clf_sigmoid(g, x)
                                     : clf_rms_norm(g, x, -1, 1e-5, CLF_TENSOR_INVALID);
        ck_assert_int_eq(clf_graph_output(g, "y", clf_relu(g, clf_matmul(g, x, w))), CLF_OK);
        e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_CPU, RTOL, ATOL);
        clf_executable *exe = NULL;
        ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_CPU), &exe), CLF_OK);
        bool wide = false;
        for (size_t i = 0; i < clf_executable_kernel_count(exe); i++) {
            const char *span = strstr(clf_executable_kernel_source(exe, i), "#define CLF_SPAN ");
            wide |= span && atoi(span + 17) > 1;
        }
        /* (A GPU running the CPU form has too little local memory for
         * them; a driver that ends loops early, llvmpipe, takes none.) */
        ck_assert_msg(wide || !dev.is_cpu || ctx->quirks & CLF__QUIRK_LOOP_TRIPS_65535, "case %zu (batch %lld, M %lld, K %lld, N %lld): no kernel takes blocks of several "
                      "sub-blocks", c, (long long)cases[c].batch, (long long)cases[c].m, (long long)cases[c].k,
                      (long long)n);
        clf_executable_destroy(&exe);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
}
END_TEST

/* The CPU form computes A's prologue and the epilogue sixteen (VW)
 * columns at a time where they have a vector form (clf_load_av,
 * clf_store_v): SwiGLU's silu(gate) * up read through slices of an f16
 * tensor with K past a whole vector, a norm's row statistics, one row, a
 * GELU epilogue with a bias and a residual into f16 and f32 outputs with N
 * past a whole vector; and where they have none (A reversed along k, a
 * transposed store) the scalar functions alone, right either way. */
START_TEST(cpu_prologues_and_epilogues_in_vectors)
{
    clf_context *ctx = clf_test_context();
    /* The CPU form takes them on any device (a GPU asked for it too:
     * its vector types are the same OpenCL C), but not where the driver
     * ends loops early. */
    const bool vectors = !(ctx->quirks & CLF__QUIRK_LOOP_TRIPS_65535);
    for (int c = 0; c < 5; c++) {
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        const int64_t m = c == 2 ? 1 : 37, k = c == 1 ? 48 : 300, n = c == 3 ? 40 : 53;
        clf_tensor a;
        bool vec_a = true, vec_store = true;
        if (c == 0 || c == 2) { /* silu(gate) * up from one f16 tensor */
            int64_t sg[2] = {m, 2 * k}, lo[1] = {0}, mid[1] = {k}, hi[1] = {2 * k};
            const int ax[1] = {1};
            clf_tensor gu = e2e_input(g, &in, "gu", CLF_F16, 2, sg, -2.0, 2.0);
            a = clf_mul(g, clf_silu(g, clf_slice(g, gu, 1, lo, mid, ax, NULL)),
                        clf_slice(g, gu, 1, mid, hi, ax, NULL));
        } else if (c == 1) { /* a norm's row statistics */
            a = clf_rms_norm(g, input2(g, &in, "x", m, k), -1, 1e-5, CLF_TENSOR_INVALID);
        } else if (c == 4) {
            a = clf_sigmoid(g, input2(g, &in, "x", m, k));
        } else { /* A reversed along k: no vector form */
            int64_t lo[1] = {-1}, hi[1] = {INT64_MIN}, step[1] = {-1};
            const int ax[1] = {1};
            a = clf_sigmoid(g, clf_slice(g, input2(g, &in, "x", m, k), 1, lo, hi, ax, step));
            vec_a = false;
        }
        int64_t sw[2] = {k, n}, sb[1] = {n}, sr[2] = {m, n};
        const clf_dtype wdt = c == 0 || c == 2 ? CLF_F16 : CLF_F32;
        clf_tensor w = e2e_input(g, &in, "w", wdt, 2, sw, -1.0, 1.0);
        clf_tensor p = clf_matmul(g, a, w);
        clf_tensor y = clf_gelu(g, clf_add(g, p, e2e_input(g, &in, "b", wdt, 1, sb, -1.0, 1.0)));
        if (c == 1) { /* a residual, and a second output */
            y = clf_add(g, y, e2e_input(g, &in, "r", CLF_F32, 2, sr, -1.0, 1.0));
            ck_assert_int_eq(clf_graph_output(g, "h", clf_cast(g, y, CLF_F16)), CLF_OK);
        }
        if (c == 4) { /* stored transposed */
            const int perm[2] = {1, 0};
            y = clf_transpose(g, y, 2, perm);
            vec_store = false;
        }
        const char *why = NULL;
        clf_graph_output(g, "y", y);
        ck_assert_msg(clf_graph_status(g, &why) == CLF_OK, "case %d: %s", c, why);
        e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_CPU, wdt == CLF_F16 ? 2e-3 : RTOL, wdt == CLF_F16 ? 2e-3 : ATOL);
        clf_executable *exe = NULL;
        ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.kernel_style = CLF_KERNEL_STYLE_CPU), &exe), CLF_OK);
        bool load_av = false, store_v = false;
        for (size_t i = 0; i < clf_executable_kernel_count(exe); i++) {
            const char *src = clf_executable_kernel_source(exe, i);
            load_av |= strstr(src, "#define CLF_A_VEC ") != NULL;
            store_v |= strstr(src, "#define CLF_STORE_VEC 1") != NULL;
        }
        ck_assert_msg(load_av == (vectors && vec_a), "case %d: A's prologue in vectors: %d", c, load_av);
        ck_assert_msg(store_v == (vectors && vec_store), "case %d: the epilogue in vectors: %d", c, store_v);
        clf_executable_destroy(&exe);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
    clf_context_destroy(&ctx);
}
END_TEST

/* The CPU form at tilings other than its default (CLFUSE_GEMM_TILE, what
 * the tuner and a user pinning by hand get): blocks of one micro-tile and
 * of several, every micro-tile width, k-blocks shorter than K, on a
 * product with partial blocks and a K tail, a broadcast batch with a
 * residual, both operands transposed with a bias, and K = 0. Each tiling
 * needs at most 24 KiB of local memory ((tk + tm) * tn floats), which
 * every device here has (llvmpipe 32 KiB; 64 x 64 x 256 needed 80 KiB
 * and was refused on an H200's 48). */
START_TEST(cpu_form_pinned_tilings)
{
    static const char *const tiles[] = {
        "8,8,16,8,8", "16,32,16,8,16", "24,64,32,8,32", "32,16,48,16,16", "12,12,16,3,4", "64,32,128,16,32",
        "16,32,32,4,8", /* the default micro-tile where vectors are 4 floats */
    };
    clf_context *ctx = clf_test_context();
    for (size_t t = 0; t < sizeof tiles / sizeof tiles[0]; t++) {
        setenv("CLFUSE_GEMM_TILE", tiles[t], 1);
        for (int c = 0; c < 4; c++) {
            clf_graph *g = clf_graph_create();
            e2e_inputs in = {0};
            clf_tensor y;
            if (c == 0) { /* partial blocks both ways, a K tail past every k-block */
                clf_tensor x = input2(g, &in, "x", 37, 70), w = input2(g, &in, "w", 70, 53);
                int64_t bs[1] = {53};
                y = clf_relu(g, clf_add(g, clf_matmul(g, x, w), e2e_input(g, &in, "b", CLF_F32, 1, bs, -1.0, 1.0)));
            } else if (c == 1) { /* a broadcast batch, a residual through it */
                int64_t sa[4] = {2, 1, 9, 20}, sb[3] = {3, 20, 13}, sr[2] = {9, 13};
                clf_tensor a = e2e_input(g, &in, "a", CLF_F32, 4, sa, -1.0, 1.0);
                clf_tensor b = e2e_input(g, &in, "b", CLF_F32, 3, sb, -1.0, 1.0);
                y = clf_add(g, clf_matmul(g, a, b), e2e_input(g, &in, "r", CLF_F32, 2, sr, -1.0, 1.0));
            } else { /* both transposed with a bias; c == 3: K = 0 */
                int64_t k = c == 3 ? 0 : 33, cn[1] = {19};
                clf_tensor a = input2(g, &in, "a", k, 26), b = input2(g, &in, "b", 19, k);
                y = clf_gemm(g, a, b, e2e_input(g, &in, "c", CLF_F32, 1, cn, -1.0, 1.0), 0.5, -2.0, true, true);
            }
            ck_assert_int_eq(clf_graph_output(g, "y", y), CLF_OK);
            size_t kernels = e2e_check_style(ctx, g, &in, CLF_KERNEL_STYLE_CPU, RTOL, ATOL);
            ck_assert_msg(kernels == 1, "tiling %s, case %d: %zu kernels", tiles[t], c, kernels);
            e2e_inputs_free(&in);
            clf_graph_destroy(&g);
        }
    }
    unsetenv("CLFUSE_GEMM_TILE");
    clf_context_destroy(&ctx);
}
END_TEST

/* A longer epilogue: scaling, residual add, clip, activation, and outputs
 * of other dtypes (a comparison, a cast), all on the accumulator: one
 * kernel. */
START_TEST(long_epilogue_one_kernel)
{
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = input2(g, &in, "x", 45, 23);
    clf_tensor w = input2(g, &in, "w", 23, 38);
    clf_tensor r = input2(g, &in, "r", 45, 38);
    clf_tensor p = clf_mul(g, clf_matmul(g, x, w), clf_scalar(g, CLF_F32, 0.75));
    clf_tensor y = clf_sigmoid(g, clf_clip(g, clf_add(g, p, r), -1.5, 1.5));
    ck_assert_int_eq(clf_graph_output(g, "y", y), CLF_OK);
    ck_assert_int_eq(clf_graph_output(g, "big", clf_gt(g, clf_abs(g, r), clf_scalar(g, CLF_F32, 0.5))), CLF_OK);
    /* A cast in the same epilogue: relu(p) as bool is p > 0, about half of
     * each (no truncation to integers: f32 sums in another order may fall
     * on the other side of an integer boundary). */
    ck_assert_int_eq(clf_graph_output(g, "positive", clf_cast(g, clf_relu(g, p), CLF_BOOL)), CLF_OK);
    e2e_check_all(g, &in, 1, RTOL, ATOL);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(kernel_named_after_epilogue)
{
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    /* 16 rows: a GPU gives 8 or fewer the few-rows form (clf_gemm_rows_). */
    clf_tensor x = input2(g, &in, "x", 16, 8);
    clf_tensor w = input2(g, &in, "w", 8, 8);
    int64_t bs[1] = {8};
    clf_tensor b = e2e_input(g, &in, "b", CLF_F32, 1, bs, -1.0, 1.0);
    ck_assert_int_eq(clf_graph_output(g, "y", clf_relu(g, clf_add(g, clf_matmul(g, x, w), b))), CLF_OK);
    clf_context *ctx = clf_test_context();
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, g, NULL, &exe), CLF_OK);
    ck_assert_str_eq(clf_executable_kernel_name(exe, 0), "clf_gemm_fused_add_relu_0");
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

/* Two values of the product stored by one kernel, and a transposed read of
 * it that the accumulator cannot serve (a second kernel reads it). */
START_TEST(epilogue_outputs_and_misaligned_reads)
{
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = input2(g, &in, "x", 16, 9);
    clf_tensor w = input2(g, &in, "w", 9, 16);
    clf_tensor p = clf_matmul(g, x, w);
    ck_assert_int_eq(clf_graph_output(g, "relu", clf_relu(g, p)), CLF_OK);
    ck_assert_int_eq(clf_graph_output(g, "plus", clf_add(g, p, clf_scalar(g, CLF_F32, 1.0))), CLF_OK);
    e2e_check_all(g, &in, 1, RTOL, ATOL);
    ck_assert_int_eq(clf_graph_output(g, "flip", clf_add(g, p, clf_transpose(g, p, 0, NULL))), CLF_OK);
    e2e_check_all(g, &in, 2, RTOL, ATOL);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

/* A gather of the product at an index known only at run time reads another
 * element, even where the product has one element and every valid index
 * is that one (the index algebra makes both 0 there; codegen cannot read
 * the register: fuzz seed 51 graph 6 failed the compile with
 * CLF_ERR_INTERNAL). Its own kernel, in both styles; for a product of
 * several elements too. */
START_TEST(gather_of_the_product_reads_another_element)
{
    for (int64_t n = 1; n <= 3; n += 2) {
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        /* As many gathered as the product has (what may join its kernel):
         * one by a scalar index, three by three indices. */
        const int64_t vs[1] = {14}, ws[2] = {14, n}, is[1] = {n};
        clf_tensor v = e2e_input(g, &in, "v", CLF_F32, 1, vs, -1.0, 1.0);
        clf_tensor w = e2e_input(g, &in, "w", CLF_F32, 2, ws, -1.0, 1.0);
        clf_tensor i = e2e_input(g, &in, "i", CLF_I32, n == 1 ? 0 : 1, is, -n, n - 1); /* negative: from the end */
        clf_tensor p = clf_matmul(g, v, w);                              /* [n] */
        ck_assert_int_eq(clf_graph_output(g, "y", clf_add(g, clf_gather(g, p, i, 0), clf_scalar(g, CLF_F32, 1.0))),
                         CLF_OK);
        e2e_check_all(g, &in, 2, RTOL, ATOL);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
    }
}
END_TEST

/* The product transposed (after an epilogue, then reshaped) as an output
 * beside a plain one: the GEMM stores it at permuted positions, one kernel;
 * batched, the last two axes swapped with a head axis between. */
START_TEST(transposed_outputs_stored_by_the_gemm)
{
    clf_graph *g = clf_graph_create();
    e2e_inputs in = {0};
    clf_tensor x = input2(g, &in, "x", 16, 9);
    clf_tensor w = input2(g, &in, "w", 9, 12);
    clf_tensor p = clf_matmul(g, x, w);
    clf_tensor t = clf_transpose(g, clf_relu(g, p), 0, NULL);
    ck_assert_int_eq(clf_graph_output(g, "t", clf_reshape(g, t, 2, (int64_t[]){6, 32})), CLF_OK);
    ck_assert_int_eq(clf_graph_output(g, "plus", clf_add(g, p, clf_scalar(g, CLF_F32, 1.0))), CLF_OK);
    e2e_check_all(g, &in, 1, RTOL, ATOL);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);

    g = clf_graph_create();
    in = (e2e_inputs){0};
    int64_t xs[3] = {3, 10, 7}, ws[3] = {3, 7, 6};
    clf_tensor b = clf_matmul(g, e2e_input(g, &in, "x", CLF_F32, 3, xs, -1, 1), e2e_input(g, &in, "w", CLF_F32, 3, ws, -1, 1));
    ck_assert_int_eq(clf_graph_output(g, "t", clf_transpose(g, b, 3, (int[]){2, 0, 1})), CLF_OK);
    e2e_check_all(g, &in, 1, RTOL, ATOL);
    e2e_inputs_free(&in);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(bad_arguments_are_clear_errors)
{
    int64_t s23[2] = {2, 3}, s43[2] = {4, 3}, s3[1] = {3};
    const char *msg;

    clf_graph *g = clf_graph_create();
    clf_tensor a = clf_input(g, "a", CLF_F32, 2, s23);
    clf_tensor b = clf_input(g, "b", CLF_F32, 2, s43);
    ck_assert(!clf_tensor_valid(clf_matmul(g, a, b)));
    ck_assert_int_eq(clf_graph_status(g, &msg), CLF_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(msg, "clf_matmul"));
    ck_assert_ptr_nonnull(strstr(msg, "[2,3]"));
    clf_graph_destroy(&g);

    g = clf_graph_create();
    a = clf_input(g, "a", CLF_I32, 2, s23);
    b = clf_input(g, "b", CLF_F32, 1, s3);
    ck_assert(!clf_tensor_valid(clf_matmul(g, a, b)));
    ck_assert_int_eq(clf_graph_status(g, &msg), CLF_ERR_DTYPE);
    ck_assert_ptr_nonnull(strstr(msg, "i32"));
    clf_graph_destroy(&g);

    g = clf_graph_create();
    a = clf_input(g, "a", CLF_F32, 0, NULL);
    b = clf_input(g, "b", CLF_F32, 1, s3);
    ck_assert(!clf_tensor_valid(clf_matmul(g, a, b)));
    ck_assert_int_eq(clf_graph_status(g, &msg), CLF_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(msg, "scalar"));
    clf_graph_destroy(&g);

    /* Batch axes that do not broadcast. */
    g = clf_graph_create();
    int64_t ba[3] = {2, 2, 3}, bb[3] = {3, 3, 4};
    a = clf_input(g, "a", CLF_F32, 3, ba);
    b = clf_input(g, "b", CLF_F32, 3, bb);
    ck_assert(!clf_tensor_valid(clf_matmul(g, a, b)));
    ck_assert_int_eq(clf_graph_status(g, &msg), CLF_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(msg, "batch"));
    clf_graph_destroy(&g);

    /* Gemm: C that does not broadcast to [M, N], and 3-D operands. */
    g = clf_graph_create();
    int64_t s34[2] = {3, 4}, c5[1] = {5};
    a = clf_input(g, "a", CLF_F32, 2, s23);
    b = clf_input(g, "b", CLF_F32, 2, s34);
    clf_tensor c = clf_input(g, "c", CLF_F32, 1, c5);
    ck_assert(!clf_tensor_valid(clf_gemm(g, a, b, c, 1.0, 1.0, false, false)));
    ck_assert_int_eq(clf_graph_status(g, &msg), CLF_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(msg, "clf_gemm: c [5]"));
    clf_graph_destroy(&g);

    g = clf_graph_create();
    a = clf_input(g, "a", CLF_F32, 3, ba);
    b = clf_input(g, "b", CLF_F32, 2, s34);
    ck_assert(!clf_tensor_valid(clf_gemm(g, a, b, CLF_TENSOR_INVALID, 1.0, 0.0, false, false)));
    ck_assert_int_eq(clf_graph_status(g, &msg), CLF_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(msg, "rank 3"));
    clf_graph_destroy(&g);
}
END_TEST

/* The path of the only autotuning entry in the cache directory, or "". */
static void tune_entry(char *path, size_t cap, int *count)
{
    const char *dir = getenv("CLFUSE_CACHE_DIR");
    ck_assert_ptr_nonnull(dir);
    path[0] = '\0';
    *count = 0;
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n > 7 && strcmp(e->d_name + n - 7, ".cltune") == 0) {
            snprintf(path, cap, "%s/%s", dir, e->d_name);
            (*count)++;
        }
    }
    closedir(d);
}

/* Autotuning times the candidates once, keeps the winner on disk, reads it
 * back for another product of the same class (rounded extents) without
 * timing again, and replaces a damaged entry; results stay right whichever
 * tiling wins. */
START_TEST(autotune_keeps_the_winner_on_disk)
{
    clf_context *ctx = clf_test_context();
    char path[1024];
    int count;
    ino_t inode[3];
    for (int round = 0; round < 3; round++) {
        /* 40, 41, 42 rows: one class, three graphs (no plan cache hit). */
        int64_t m = 40 + round;
        clf_graph *g = clf_graph_create();
        e2e_inputs in = {0};
        clf_tensor x = input2(g, &in, "x", m, 36);
        clf_tensor w = input2(g, &in, "w", 36, 24);
        ck_assert_int_eq(clf_graph_output(g, "y", clf_relu(g, clf_matmul(g, x, w))), CLF_OK);
        clf_executable *exe = NULL;
        ck_assert_int_eq(clf_compile(ctx, g, clf_compile_params(.autotune = true), &exe), CLF_OK);
        tune_entry(path, sizeof path, &count);
        ck_assert_int_eq(count, 1);
        struct stat st;
        ck_assert_int_eq(stat(path, &st), 0);
        inode[round] = st.st_ino;
        size_t n = (size_t)m * 24;
        clf_host_binding got = {"y", malloc(n * sizeof(float))}, want = {"y", malloc(n * sizeof(float))};
        char msg[256];
        ck_assert_int_eq(clf_reference_run(g, in.n, in.b, 1, &want, msg, sizeof msg), CLF_OK);
        ck_assert_int_eq(clf_run_host(exe, in.n, in.b, 1, &got), CLF_OK);
        ck_assert_msg(clf_test_close(CLF_F32, got.data, want.data, n, RTOL, ATOL, msg, sizeof msg), "%s", msg);
        free(got.data);
        free(want.data);
        clf_executable_destroy(&exe);
        e2e_inputs_free(&in);
        clf_graph_destroy(&g);
        if (round == 1) {
            /* Read, not rewritten (a store renames a new file over it). */
            ck_assert_msg(inode[1] == inode[0], "the second compile of the class timed again");
            /* Damage the payload: the next compile must discard and re-tune. */
            FILE *f = fopen(path, "r+b");
            ck_assert_ptr_nonnull(f);
            ck_assert_int_eq(fseek(f, -3, SEEK_END), 0);
            fputs("zz", f);
            fclose(f);
        }
    }
    ck_assert_msg(inode[2] != inode[1], "a damaged entry was not replaced");
    clf_context_destroy(&ctx);
}
END_TEST

int main(void)
{
    clf_test_setup_env();
    Suite *s = suite_create("gemm");
    clf_test_add_case(s, "linear_relu_edge_shapes", linear_relu_edge_shapes);
    clf_test_add_case(s, "matmul_one_d_operands", matmul_one_d_operands);
    clf_test_add_case(s, "one_element_product_through_views", one_element_product_through_views);
    clf_test_add_case(s, "matmul_broadcast_batch", matmul_broadcast_batch);
    clf_test_add_case(s, "gemm_transposes_alpha_beta", gemm_transposes_alpha_beta);
    clf_test_add_case(s, "zero_sized_products", zero_sized_products);
    clf_test_add_case(s, "gpu_form_reads_nothing_when_k_is_zero", gpu_form_reads_nothing_when_k_is_zero);
    clf_test_add_case(s, "gpu_form_float4_tile_loads", gpu_form_float4_tile_loads);
    clf_test_add_case(s, "gpu_rows_form_few_rows", gpu_rows_form_few_rows);
    clf_test_add_case(s, "gpu_rows_form_split_k", gpu_rows_form_split_k);
    clf_test_add_case(s, "prologue_fused", prologue_fused);
    clf_test_add_case(s, "prologue_refused_when_it_reads_more", prologue_refused_when_it_reads_more);
    clf_test_add_case(s, "constant_outputs_beside_a_prologue", constant_outputs_beside_a_prologue);
    clf_test_add_case(s, "mlp_two_kernels", mlp_two_kernels);
    clf_test_add_case(s, "merged_products", merged_products);
    clf_test_add_case(s, "kernel_named_after_epilogue", kernel_named_after_epilogue);
    clf_test_add_case(s, "cpu_form_pinned_tilings", cpu_form_pinned_tilings);
    clf_test_add_case(s, "cpu_one_row_products", cpu_one_row_products);
    clf_test_add_case(s, "cpu_blocks_of_several_sub_blocks", cpu_blocks_of_several_sub_blocks);
    clf_test_add_case(s, "cpu_prologues_and_epilogues_in_vectors", cpu_prologues_and_epilogues_in_vectors);
    clf_test_add_case(s, "long_epilogue_one_kernel", long_epilogue_one_kernel);
    clf_test_add_case(s, "epilogue_outputs_and_misaligned_reads", epilogue_outputs_and_misaligned_reads);
    clf_test_add_case(s, "gather_of_the_product_reads_another_element", gather_of_the_product_reads_another_element);
    clf_test_add_case(s, "transposed_outputs_stored_by_the_gemm", transposed_outputs_stored_by_the_gemm);
    clf_test_add_case(s, "bad_arguments_are_clear_errors", bad_arguments_are_clear_errors);
    clf_test_add_case(s, "autotune_keeps_the_winner_on_disk", autotune_keeps_the_winner_on_disk);
    return clf_test_run_suite(s);
}
