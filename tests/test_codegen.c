/* Planner and codegen without a device: plans, kernel names, generated
 * source properties (index width, vector path, template), and the fusion
 * legality rule. Nothing here touches OpenCL. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "codegen/codegen_expr.h"
#include "codegen/schedule.h"
#include "codegen/templates.h"
#include "planner/planner.h"
#include "test_support.h"
#include "util/text.h"

static clf__plan plan_of(const clf_graph *g, bool fuse)
{
    clf__plan p;
    char err[256] = "";
    clf__plan_options o = {.disable_fusion = !fuse};
    clf_status st = clf__plan_build(g, &o, &p, err, sizeof err);
    ck_assert_msg(st == CLF_OK, "plan: %s", err);
    return p;
}

static clf__kernel_code code_of(const clf_graph *g, const clf__plan *p, uint32_t k, bool cpu)
{
    clf__kernel_code c;
    char err[256] = "";
    clf__codegen_target t = {.cpu = cpu};
    clf_status st = clf__codegen_kernel(g, p, k, &t, &c, err, sizeof err);
    ck_assert_msg(st == CLF_OK, "codegen: %s", err);
    return c;
}

static clf__kernel_code code_of_target(const clf_graph *g, const clf__plan *p, uint32_t k,
                                       const clf__codegen_target *t)
{
    clf__kernel_code c;
    char err[256] = "";
    clf_status st = clf__codegen_kernel(g, p, k, t, &c, err, sizeof err);
    ck_assert_msg(st == CLF_OK, "codegen: %s", err);
    return c;
}

START_TEST(chain_plan_and_name)
{
    int64_t n = 1000;
    clf_graph *g = clf_graph_create();
    clf_tensor a = clf_input(g, "a", CLF_F32, 1, &n), b = clf_input(g, "b", CLF_F32, 1, &n);
    clf_tensor cc = clf_input(g, "c", CLF_F32, 1, &n);
    clf_graph_output(g, "y", clf_relu(g, clf_add(g, clf_mul(g, a, b), cc)));
    clf__plan p = plan_of(g, true);
    ck_assert_uint_eq(p.nkernels, 1);
    ck_assert_uint_eq(p.stats.tensor_reads, 3);
    ck_assert_uint_eq(p.stats.tensor_writes, 1);
    ck_assert_uint_eq(p.stats.bytes_read, 3 * 4000);
    ck_assert_uint_eq(p.stats.bytes_written, 4000);
    clf__kernel_code c = code_of(g, &p, 0, false);
    ck_assert_str_eq(c.name, "clf_poi_fused_add_mul_relu_0");
    ck_assert_str_eq(c.ops, "mul add relu");
    ck_assert_ptr_nonnull(strstr(c.source, "#define IDX_T uint"));
    ck_assert_ptr_nonnull(strstr(c.source, "vload4(0, b0 + i)")); /* identity loads vectorise */
    ck_assert_int_eq(c.vec, 4);
    ck_assert_uint_eq(c.global % c.local, 0);
    ck_assert_uint_ge(c.global * (size_t)c.vec * (size_t)c.items, 1000);
    ck_assert_ptr_nonnull(strstr(c.source, "__kernel void CLF_KERNEL_NAME")); /* the template follows */
    clf__kernel_code_free(&c);
    clf__plan_free(&p);

    p = plan_of(g, false);
    ck_assert_uint_eq(p.nkernels, 3);
    ck_assert_uint_eq(p.stats.tensor_reads, 5);
    ck_assert_uint_eq(p.stats.tensor_writes, 3);
    clf__plan_free(&p);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(wide_index_over_2_31)
{
    /* 2^31 + 8 bool elements: a region whose indices need 64 bits. The
     * plan and the source are made without allocating anything. */
    int64_t n = ((int64_t)1 << 31) + 8;
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_BOOL, 1, &n);
    clf_graph_output(g, "y", clf_logical_not(g, x));
    clf__plan p = plan_of(g, true);
    clf__kernel_code c = code_of(g, &p, 0, false);
    ck_assert(c.wide_index);
    ck_assert_ptr_nonnull(strstr(c.source, "#define IDX_T ulong"));
    clf__kernel_code_free(&c);
    clf__plan_free(&p);
    clf_graph_destroy(&g);

    /* Just under the limit stays 32-bit. */
    n = ((int64_t)1 << 31) - 1;
    g = clf_graph_create();
    x = clf_input(g, "x", CLF_BOOL, 1, &n);
    clf_graph_output(g, "y", clf_logical_not(g, x));
    p = plan_of(g, true);
    c = code_of(g, &p, 0, false);
    ck_assert(!c.wide_index);
    clf__kernel_code_free(&c);
    clf__plan_free(&p);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(movement_chain_is_index_arithmetic)
{
    /* relu(transpose(x) + reshape(expand(b))) : one kernel, no copies, and
     * the transposed load is not vectorised. */
    int64_t xs[2] = {3, 4}, bs[1] = {3}, es[2] = {4, 3};
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_F32, 2, xs);
    clf_tensor b = clf_input(g, "b", CLF_F32, 1, bs);
    clf_tensor t = clf_transpose(g, x, 0, NULL);
    clf_tensor e = clf_expand(g, b, 2, es);
    int64_t flat[1] = {12}, back[2] = {4, 3};
    clf_tensor r = clf_reshape(g, clf_reshape(g, e, 1, flat), 2, back);
    clf_graph_output(g, "y", clf_relu(g, clf_add(g, t, r)));
    ck_assert_int_eq(clf_graph_status(g, NULL), CLF_OK);
    clf__plan p = plan_of(g, true);
    ck_assert_uint_eq(p.nkernels, 1);
    ck_assert_uint_eq(p.stats.tensor_reads, 2);
    clf__kernel_code c = code_of(g, &p, 0, false);
    ck_assert_int_eq(c.vec, 1);
    ck_assert_ptr_nonnull(strstr(c.source, " % ")); /* index decomposition */
    clf__kernel_code_free(&c);
    clf__plan_free(&p);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(multi_output_and_shapes)
{
    int64_t s[2] = {8, 16}, row[1] = {16};
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_F32, 2, s);
    clf_tensor w = clf_input(g, "w", CLF_F32, 1, row);
    clf_tensor ex = clf_exp(g, x);
    clf_graph_output(g, "e", ex);
    clf_graph_output(g, "e2", clf_mul(g, ex, clf_scalar(g, CLF_F32, 2.0)));
    clf_graph_output(g, "w2", clf_neg(g, w)); /* another shape: another kernel */
    clf__plan p = plan_of(g, true);
    ck_assert_uint_eq(p.nkernels, 2);
    int two = p.kernels[0].nstores == 2 ? 0 : 1;
    ck_assert_uint_eq(p.kernels[two].nstores, 2);
    ck_assert_uint_eq(p.kernels[two].nreads, 1); /* x once; the scalar is a literal */
    clf__kernel_code c = code_of(g, &p, (uint32_t)two, true);
    ck_assert_str_eq(c.name, two == 0 ? "clf_poi_fused_exp_mul_0" : "clf_poi_fused_exp_mul_1");
    ck_assert_ptr_nonnull(strstr(c.source, "#define BLOCKED 1")); /* the CPU variant */
    ck_assert_ptr_nonnull(strstr(c.source, "0x1p+1f"));           /* exact literal for 2.0 */
    clf__kernel_code_free(&c);
    clf__plan_free(&p);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(deep_chain_is_cut)
{
    int64_t n = 64;
    clf_graph *g = clf_graph_create();
    clf_tensor t = clf_input(g, "x", CLF_F32, 1, &n);
    for (int i = 0; i < 200; i++)
        t = clf_neg(g, t);
    clf_graph_output(g, "y", t);
    clf__plan p = plan_of(g, true);
    ck_assert_uint_gt(p.nkernels, 1);
    ck_assert_uint_lt(p.nkernels, 10);
    uint32_t inter = 0;
    for (uint32_t b = 0; b < p.nbuffers; b++)
        inter += p.buffers[b].kind == CLF__BUF_INTERMEDIATE;
    ck_assert_uint_ge(inter, p.nkernels - 1); /* each kernel but the last writes a cut */
    clf__plan_free(&p);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(cycle_is_refused)
{
    /* a: [4]; b = exp(a) [4,1]-reshaped output forces its own kernel; c = a
     * shape [4] output that reads b through a reshape. Merging c into a's
     * kernel would make that kernel run before and after b's. */
    int64_t n = 4, col[2] = {4, 1}, flat[1] = {4};
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_F32, 1, &n);
    clf_tensor a = clf_exp(g, x);
    clf_graph_output(g, "a", a);
    clf_tensor b = clf_reshape(g, clf_sin(g, a), 2, col);
    clf_tensor bb = clf_cos(g, b);
    clf_graph_output(g, "b", bb);
    clf_graph_output(g, "c", clf_add(g, a, clf_reshape(g, bb, 1, flat)));
    clf__plan p = plan_of(g, true);
    ck_assert_uint_eq(p.nkernels, 3);
    clf__plan_free(&p);
    clf_graph_destroy(&g);

    /* The predicate itself: r0 <- r1 <- m: m may not join r0. */
    uint32_t d1[1] = {0};
    const uint32_t *deps[2] = {NULL, d1};
    uint32_t nd[2] = {0, 1};
    uint32_t m_deps[1] = {1};
    ck_assert(!clf__fusion_legal(0, m_deps, 1, 2, deps, nd));
    ck_assert(clf__fusion_legal(1, m_deps, 1, 2, deps, nd));
}
END_TEST

/* The reduction-alignment walk gives up past clf__align_walk_cap visited
 * (node, view) pairs and refuses the merge: a plan still comes out (the
 * epilogue goes through memory), with its memo intact (this path once freed
 * the memo's array under it; ASan runs this suite). A softmax over the
 * first axis: over the last one, the planner's quick check (region_kinds.c,
 * below_full) answers without the walk. */
START_TEST(alignment_walk_cap_refuses_merges)
{
    clf_graph *g = clf_graph_create();
    const int64_t s[2] = {64, 4};
    clf_graph_output(g, "y", clf_softmax(g, clf_input(g, "x", CLF_F32, 2, s), 0));
    clf__plan plan;
    char err[256] = "";
    ck_assert_int_eq(clf__plan_build(g, NULL, &plan, err, sizeof err), CLF_OK);
    ck_assert_uint_eq(plan.nkernels, 1);
    clf__plan_free(&plan);
    size_t saved = clf__align_walk_cap;
    for (size_t cap = 1; cap <= 3; cap++) {
        clf__align_walk_cap = cap;
        clf_status st = clf__plan_build(g, NULL, &plan, err, sizeof err);
        clf__align_walk_cap = saved;
        ck_assert_msg(st == CLF_OK, "cap %zu: %s", cap, err);
        ck_assert_uint_gt(plan.nkernels, 1);
        clf__plan_free(&plan);
    }
    clf_graph_destroy(&g);
}
END_TEST

/* A layer norm over empty rows (extents of 0): the planner joins what the
 * alignment walk allows there, and every kernel is written (the quick
 * check once fused what the walk refuses at extent 0, and codegen then
 * found a reduction read away from its row: the fuzzer's seed 1, graph
 * 140). */
START_TEST(empty_rows_plan_generates)
{
    clf_graph *g = clf_graph_create();
    const int64_t s[4] = {2, 1, 0, 0};
    clf_tensor y = clf_layer_norm(g, clf_input(g, "x", CLF_F32, 4, s), 2, 1e-5, CLF_TENSOR_INVALID,
                                  CLF_TENSOR_INVALID);
    clf_graph_output(g, "y", clf_transpose(g, y, 4, (int[]){2, 1, 0, 3}));
    clf__plan p = plan_of(g, true);
    for (int cpu = 0; cpu < 2; cpu++)
        for (uint32_t k = 0; k < p.nkernels; k++) {
            clf__kernel_code c = code_of(g, &p, k, cpu);
            clf__kernel_code_free(&c);
        }
    clf__plan_free(&p);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(literals_are_exact)
{
    clf_graph *g = clf_graph_create();
    int64_t n = 5;
    clf_tensor x = clf_input(g, "x", CLF_F32, 1, &n);
    clf_tensor t = clf_add(g, x, clf_scalar(g, CLF_F32, 0.1));
    t = clf_maximum(g, t, clf_scalar(g, CLF_F32, NAN));
    t = clf_minimum(g, t, clf_scalar(g, CLF_F32, -INFINITY));
    clf_graph_output(g, "y", t);
    clf__plan p = plan_of(g, true);
    clf__kernel_code c = code_of(g, &p, 0, false);
    ck_assert_ptr_nonnull(strstr(c.source, "0x1.99999ap-4f"));
    ck_assert_ptr_nonnull(strstr(c.source, "NAN"));
    ck_assert_ptr_nonnull(strstr(c.source, "(-INFINITY)"));
    ck_assert_ptr_null(strstr(c.source, "fast-relaxed"));
    clf__kernel_code_free(&c);
    clf__plan_free(&p);
    clf_graph_destroy(&g);
}
END_TEST

/* The reduction kernel's source for target t (plan with fusion). */
static char *reduction_source(const clf_graph *g, const clf__codegen_target *t, size_t *local)
{
    clf__plan p = plan_of(g, true);
    ck_assert_uint_eq(p.nkernels, 1);
    clf__kernel_code c;
    char err[256] = "";
    ck_assert_msg(clf__codegen_kernel(g, &p, 0, t, &c, err, sizeof err) == CLF_OK, "codegen: %s", err);
    char *src = strdup(c.source);
    *local = c.local;
    clf__kernel_code_free(&c);
    clf__plan_free(&p);
    return src;
}

START_TEST(gpu_lanes_of_a_warp_combine_by_shuffles)
{
    /* On NVIDIA GPUs (warp_shuffle) rows of at most 32 lanes combine by
     * warp shuffles, field by field of every stage's accumulator (float and
     * int: argmax keeps an index), in work-groups of 64; long rows (512
     * lanes) and other GPUs keep local memory. The shuffle form itself only
     * builds on NVIDIA: the GPU suites run it there. */
    int64_t s[2] = {64, 256}, l[2] = {16, 16384};
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_F32, 2, s);
    clf_graph_output(g, "y", clf_softmax(g, x, -1));
    clf_graph_output(g, "i", clf_argmax(g, x, -1, false, false));
    clf__codegen_target nv = {.cpu = false, .warp_shuffle = true}, other = {.cpu = false};
    size_t local = 0;
    char *src = reduction_source(g, &nv, &local);
    ck_assert_ptr_nonnull(strstr(src, "#define CLF_SHFL 1"));
    ck_assert_ptr_nonnull(strstr(src, "shfl.sync.bfly.b32"));
    ck_assert_ptr_nonnull(strstr(src, "clf_shfl_int(a.i"));   /* argmax's index */
    ck_assert_ptr_nonnull(strstr(src, "clf_shfl_float(a.v")); /* and value */
    ck_assert_ptr_nonnull(strstr(src, "static inline clf_acc1 clf_shfl1(clf_acc1 a, int m)"));
    ck_assert_uint_eq(local, 64);
    free(src);
    src = reduction_source(g, &other, &local);
    ck_assert_ptr_nonnull(strstr(src, "#define CLF_SHFL 0"));
    ck_assert_ptr_null(strstr(src, "shfl.sync"));
    ck_assert_uint_eq(local, 256);
    free(src);
    clf_graph_destroy(&g);

    g = clf_graph_create();
    clf_graph_output(g, "y", clf_softmax(g, clf_input(g, "x", CLF_F32, 2, l), -1));
    src = reduction_source(g, &nv, &local);
    ck_assert_ptr_nonnull(strstr(src, "#define CLF_SHFL 0"));
    ck_assert_ptr_null(strstr(src, "shfl.sync"));
    free(src);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(cpu_reduction_vector_loop)
{
    /* CPU reductions run their rows VEC elements at a time where every
     * value has a vector form: consecutive elements as vector loads,
     * strided ones gathered; int values and short rows keep the scalar
     * form. GPU reductions of rows of whole float4s take float4 units,
     * consecutive ones through aligned float4 pointers. */
    int64_t s[2] = {64, 40}, t[2] = {40, 64}, si[2] = {64, 41}, short_row[2] = {8, 15};
    int last = -1, first = 0;
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_F32, 2, s), xt = clf_input(g, "xt", CLF_F32, 2, t);
    clf_tensor xi = clf_input(g, "xi", CLF_I32, 2, si), xs = clf_input(g, "xs", CLF_F32, 2, short_row);
    clf_graph_output(g, "soft", clf_softmax(g, x, -1));
    clf_graph_output(g, "col", clf_reduce_sum(g, xt, 1, &first, false));
    clf_graph_output(g, "isum", clf_reduce_sum(g, xi, 1, &last, false));
    clf_graph_output(g, "ssum", clf_reduce_sum(g, xs, 1, &last, false));
    clf__plan p = plan_of(g, true);
    ck_assert_uint_eq(p.nkernels, 4);
    int seen = 0;
    for (uint32_t k = 0; k < p.nkernels; k++) {
        clf__kernel_code c = code_of(g, &p, k, true), gc = code_of(g, &p, k, false);
        if (strstr(c.ops, "exp")) { /* softmax: vector loads, stores and sums */
            ck_assert_ptr_nonnull(strstr(c.source, "#define VEC 8"));
            ck_assert_ptr_nonnull(strstr(c.source, "vload8(0, b"));
            ck_assert_ptr_nonnull(strstr(c.source, "vstore8((float8)("));
            ck_assert_ptr_nonnull(strstr(c.source, "const float8 v"));
            ck_assert_ptr_nonnull(strstr(gc.source, "#define VEC 4\n"));
            ck_assert_ptr_nonnull(strstr(gc.source, "= *(const __global float4 *)(b"));
            ck_assert_ptr_nonnull(strstr(gc.source, "    *(__global float4 *)(b"));
            ck_assert_ptr_null(strstr(c.source, "__global float8 *")); /* CPU: vload8, vstore8 */
            seen |= 1;
        } else if (strstr(c.source, "int s")) { /* the int sum */
            ck_assert_ptr_nonnull(strstr(c.source, "#define VEC 1\n"));
            ck_assert_ptr_null(strstr(c.source, "void clf_vload("));
            ck_assert_ptr_null(strstr(gc.source, "void clf_vload("));
            seen |= 2;
        } else if (strstr(c.source, "#define RLEN 40u")) { /* the column sum: gathered */
            ck_assert_ptr_nonnull(strstr(c.source, "#define VEC 8"));
            ck_assert_ptr_nonnull(strstr(c.source, "clf_at_t"));
            ck_assert_ptr_nonnull(strstr(gc.source, "#define VEC 4\n"));
            ck_assert_ptr_nonnull(strstr(gc.source, "clf_at_t"));
            seen |= 4;
        } else { /* rows of 15 */
            ck_assert_ptr_nonnull(strstr(c.source, "#define RLEN 15u"));
            ck_assert_ptr_nonnull(strstr(c.source, "#define VEC 1\n"));
            ck_assert_ptr_nonnull(strstr(gc.source, "#define VEC 1\n"));
            seen |= 8;
        }
        clf__kernel_code_free(&c);
        clf__kernel_code_free(&gc);
    }
    ck_assert_int_eq(seen, 15);
    clf__plan_free(&p);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(rows_of_rank_3_and_4_in_both_forms)
{
    /* Issue 15: softmax over the last axis of [B, H, S, T] and layer norm
     * over the last two axes of [B, S, D1, D2] are one kernel, as 2-D rows
     * are, in the GPU form (float4 units through aligned pointers, the
     * persistent row) and the CPU form (float8 units): the row's results
     * are read from the row state (row->r), x at x * T + r, and the norm's
     * weights of [D1, D2] at r itself, contiguous. Softmax over [B, S, T]
     * runs the same way. */
    int64_t s4[4] = {2, 3, 4, 64}, s3[3] = {5, 6, 32}, ln[4] = {2, 3, 4, 8}, w[2] = {4, 8};
    clf__codegen_target gpu = {.cpu = false}, cpu = {.cpu = true};
    for (int rank = 3; rank <= 4; rank++) {
        clf_graph *g = clf_graph_create();
        clf_graph_output(g, "y", clf_softmax(g, clf_input(g, "x", CLF_F32, rank, rank == 4 ? s4 : s3), -1));
        clf__plan p = plan_of(g, true);
        ck_assert_uint_eq(p.nkernels, 1);
        ck_assert_uint_eq(p.stats.tensor_reads, 1);
        ck_assert_uint_eq(p.stats.tensor_writes, 1);
        clf__plan_free(&p);
        size_t local = 0;
        char *src = reduction_source(g, &gpu, &local);
        ck_assert_ptr_nonnull(strstr(src, "#define CLF_KERNEL_NAME clf_per_fused_div_exp_max_sub_sum\n"));
        ck_assert_ptr_nonnull(strstr(src, "#define NSTAGES 2\n"));
        ck_assert_ptr_nonnull(strstr(src, "#define VEC 4\n"));
        ck_assert_ptr_nonnull(strstr(src, rank == 4 ? "= x * 64u + r;" : "= x * 32u + r;"));
        ck_assert_ptr_nonnull(strstr(src, "= *(const __global float4 *)(b0 + t1);"));
        ck_assert_ptr_nonnull(strstr(src, "(v1 / row->r"));
        free(src);
        src = reduction_source(g, &cpu, &local);
        ck_assert_ptr_nonnull(strstr(src, "#define CLF_KERNEL_NAME clf_red_fused_div_exp_max_sub_sum\n"));
        ck_assert_ptr_nonnull(strstr(src, "#define VEC 8\n"));
        ck_assert_ptr_nonnull(strstr(src, "vload8(0, b0 + t1)"));
        ck_assert_ptr_nonnull(strstr(src, "- row->r"));
        free(src);
        clf_graph_destroy(&g);
    }

    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_F32, 4, ln);
    clf_tensor sc = clf_input(g, "w", CLF_F32, 2, w), b = clf_input(g, "b", CLF_F32, 2, w);
    clf_graph_output(g, "y", clf_layer_norm(g, x, 2, 1e-5, sc, b));
    size_t local = 0;
    char *src = reduction_source(g, &gpu, &local);
    ck_assert_ptr_nonnull(strstr(src, "#define RLEN 32u\n"));
    ck_assert_ptr_nonnull(strstr(src, "= *(const __global float4 *)(b1 + r);"));
    ck_assert_ptr_nonnull(strstr(src, "= *(const __global float4 *)(b2 + r);"));
    free(src);
    src = reduction_source(g, &cpu, &local);
    ck_assert_ptr_nonnull(strstr(src, "= vload8(0, b1 + r);"));
    ck_assert_ptr_nonnull(strstr(src, "= vload8(0, b2 + r);"));
    ck_assert_ptr_null(strstr(src, "clf_at_t")); /* nothing gathered */
    free(src);
    clf_graph_destroy(&g);
}
END_TEST

/* The GPU GEMM tiling without autotuning: 128 x 128 for large products;
 * small ones get tiles no larger than the product, shrunk until the tiles
 * cover the compute units (a tiny model's 16 x 32 projection on a 132-unit
 * GPU), never below 16 x 16; every choice is one the device can run. */
START_TEST(gemm_default_tiles_fit_small_products)
{
    clf__codegen_target gpu = {.cpu = false, .max_local = 1024, .compute_units = 132, .local_mem = 49152};
    char why[160];
    clf__gemm_config c = clf__gemm_default_config(&gpu, 4096, 4096, 4096, 1);
    ck_assert(c.tm == 128 && c.tn == 128);
    c = clf__gemm_default_config(&gpu, 16, 32, 32, 1);
    ck_assert_msg(c.tm == 16 && c.tn == 16, "16 x 32 product: %dx%d tile", c.tm, c.tn);
    c = clf__gemm_default_config(&gpu, 8, 8, 8, 8); /* attention scores of 8 heads */
    ck_assert(c.tm == 16 && c.tn == 16);
    c = clf__gemm_default_config(&gpu, 64, 1000, 32, 1); /* a vocabulary projection */
    uint64_t tiles = (uint64_t)((64 + c.tm - 1) / c.tm) * (uint64_t)((1000 + c.tn - 1) / c.tn);
    ck_assert_msg(tiles >= 132 || (c.tm == 16 && c.tn == 16), "%dx%d leaves units idle", c.tm, c.tn);
    ck_assert(c.tm <= 64 && c.tn <= 64);
    c = clf__gemm_default_config(&gpu, 100, 8192, 64, 1); /* enough tiles already at 64 x 64 */
    ck_assert(c.tm == 64 && c.tn == 64);
    static const int64_t sizes[][4] = {{1, 1, 1, 1}, {3, 200, 5, 1}, {200, 3, 9, 7}, {16, 2048, 2048, 1},
                                       {127, 127, 127, 1}, {8, 8, 8, 256}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        c = clf__gemm_default_config(&gpu, sizes[i][0], sizes[i][1], sizes[i][2], sizes[i][3]);
        ck_assert_msg(clf__gemm_config_valid(&c, false, gpu.max_local, gpu.local_mem, why, sizeof why), "%s", why);
    }
    clf__codegen_target small = {.cpu = false, .max_local = 32, .compute_units = 4};
    c = clf__gemm_default_config(&small, 300, 300, 300, 1);
    ck_assert_msg(clf__gemm_config_valid(&c, false, 32, 0, why, sizeof why), "%s", why);
}
END_TEST

/* The CPU GEMM form packs A (CLF_PACK_A: its prologue evaluated once per
 * element of a block) where A has a prologue of its own, here a SiLU
 * (an MLP's activation) and a cast from f16; a plain A (a buffer as it lies) is
 * read in place; the GPU forms never pack it. */
START_TEST(cpu_gemm_packs_an_operand_with_a_prologue)
{
    int64_t xs[2] = {64, 96}, ws[2] = {96, 32};
    for (int c = 0; c < 3; c++) {
        clf_graph *g = clf_graph_create();
        clf_tensor x = clf_input(g, "x", c == 2 ? CLF_F16 : CLF_F32, 2, xs), w = clf_input(g, "w", CLF_F32, 2, ws);
        clf_tensor a = c == 0   ? x
                       : c == 1 ? clf_mul(g, x, clf_sigmoid(g, x))
                                : clf_cast(g, x, CLF_F32);
        ck_assert_int_eq(clf_graph_output(g, "y", clf_matmul(g, a, w)), CLF_OK);
        clf__plan p = plan_of(g, true);
        ck_assert_msg(p.nkernels == 1, "case %d: %u kernels", c, p.nkernels);
        for (int cpu = 0; cpu < 2; cpu++) {
            clf__kernel_code code = code_of(g, &p, 0, cpu);
            const bool packs = strstr(code.source, "#define CLF_PACK_A 1") != NULL;
            ck_assert_msg(packs == (cpu && c > 0), "case %d, %s form: A %s", c, cpu ? "CPU" : "GPU",
                          packs ? "packed" : "read in place");
            /* Packed A's prologue (sigmoid, the f16 conversion) and the
             * plain epilogue in vectors of the micro-tile's width. */
            const bool av = strstr(code.source, "static inline float16 clf_load_av(") != NULL;
            const bool sv = strstr(code.source, "static inline void clf_store_v(") != NULL;
            ck_assert_msg(av == (cpu && c > 0) && sv == (bool)cpu, "case %d, %s form: vector A %d, store %d", c,
                          cpu ? "CPU" : "GPU", av, sv);
            clf__kernel_code_free(&code);
        }
        clf__plan_free(&p);
        clf_graph_destroy(&g);
    }
}
END_TEST

/* How an index moves with a variable (clf__ix_unit_stride): the variable
 * itself, a row's offset plus it, it times 1 plus an offset, an ascending
 * slice of step 1 (start + it) are consecutive; a stride of 4, a
 * reversed slice and an index that does not depend on it are not (0 for
 * the last). */
START_TEST(index_unit_stride)
{
    clf__strbuf code = {0};
    clf__ixgen gen;
    clf__ixgen_init(&gen, &code, 64);
    clf__ix x = clf__ixgen_var(&gen, "x", 5), r = clf__ixgen_var(&gen, "r", 4096);
    ck_assert_int_eq(clf__ix_unit_stride(&gen, &r, r.deps), 1);
    ck_assert_int_eq(clf__ix_unit_stride(&gen, &x, r.deps), 0);
    clf__ix row = clf__ix_mad(&gen, x, 4098, r);
    ck_assert_int_eq(clf__ix_unit_stride(&gen, &row, r.deps), 1);
    ck_assert_int_eq(clf__ix_unit_stride(&gen, &row, x.deps), -1);
    clf__ix shifted = clf__ix_mad(&gen, r, 1, clf__ix_const(2));
    ck_assert_int_eq(clf__ix_unit_stride(&gen, &shifted, r.deps), 1);
    clf__ix strided = clf__ix_mad(&gen, r, 4, x);
    ck_assert_int_eq(clf__ix_unit_stride(&gen, &strided, r.deps), -1);
    /* Slices of a [5, 4098] tensor's rows, through the movement algebra. */
    int64_t shape[2] = {5, 4098}, lo[1] = {2}, hi[1] = {4098}, rlo[1] = {-1}, rhi[1] = {INT64_MIN}, back[1] = {-1};
    const int ax[1] = {1};
    clf_graph *g = clf_graph_create();
    clf_tensor t = clf_input(g, "t", CLF_F32, 2, shape);
    clf_tensor fwd = clf_slice(g, t, 1, lo, hi, ax, NULL), rev = clf_slice(g, t, 1, rlo, rhi, ax, back);
    const clf_tensor slices[2] = {fwd, rev};
    for (int k = 0; k < 2; k++) {
        clf__view v = {.linear = false}, in;
        v.dims[0] = x;
        v.dims[1] = r;
        clf__view_input(&gen, g, clf__graph_node(g, slices[k].node), 0, &v, &in);
        clf__ix at = clf__view_linear(&gen, &in, 2, shape);
        ck_assert_int_eq(clf__ix_unit_stride(&gen, &at, r.deps), k == 0 ? 1 : -1);
    }
    /* Multiples of 8 wherever r is one (clf__ix_multiple_of): x * 4096 + r
     * and the slice from 8; not x * 4098 + r, the slice from 2, nor x
     * alone (any value); a constant by its value. */
    clf__ix aligned = clf__ix_mad(&gen, x, 4096, r);
    ck_assert(clf__ix_multiple_of(&gen, &aligned, r.deps, 8));
    ck_assert(!clf__ix_multiple_of(&gen, &row, r.deps, 8));
    ck_assert(!clf__ix_multiple_of(&gen, &x, r.deps, 8));
    ck_assert(clf__ix_multiple_of(&gen, &x, x.deps, 8));
    const clf__ix c16 = clf__ix_const(16), c12 = clf__ix_const(12);
    ck_assert(clf__ix_multiple_of(&gen, &c16, r.deps, 8) && !clf__ix_multiple_of(&gen, &c12, r.deps, 8));
    /* Columns 2 .. 4095 or 8 .. 4095 of a [5, 4096] tensor's rows. */
    int64_t wide[2] = {5, 4096}, lo8[1] = {8}, hi8[1] = {4096};
    clf_tensor u = clf_input(g, "u", CLF_F32, 2, wide);
    for (int k = 0; k < 2; k++) {
        clf_tensor sl = clf_slice(g, u, 1, k ? lo8 : lo, hi8, ax, NULL);
        clf__view v = {.linear = false}, in;
        v.dims[0] = x;
        v.dims[1] = r;
        clf__view_input(&gen, g, clf__graph_node(g, sl.node), 0, &v, &in);
        clf__ix at = clf__view_linear(&gen, &in, 2, wide);
        ck_assert(clf__ix_unit_stride(&gen, &at, r.deps) == 1);
        ck_assert(clf__ix_multiple_of(&gen, &at, r.deps, 8) == (k == 1));
    }
    ck_assert(!gen.failed);
    clf_graph_destroy(&g);
    clf__ixgen_free(&gen);
    clf__sb_free(&code);
}
END_TEST

/* The schedule each writer records (CLFUSE_LOGS=schedule): the device
 * form and the choices behind it, for cases whose choice is known. */
/* The CPU GEMM tiling without autotuning: blocks of up to 128 x 128 of
 * 8 x 32 micro-tiles where vectors are 16 floats (6 x 16 where 8, 4 x 8
 * where 4), one-row
 * micro-tiles for one-row products, blocks shrunk until every compute unit
 * has two, the packed operands within the device's local memory (32 KiB on
 * llvmpipe), k-blocks multiples of 16; every choice one the form runs. */
START_TEST(cpu_gemm_default_blocks)
{
    clf__codegen_target avx512 = {.cpu = true, .compute_units = 16, .local_mem = 2097152, .float_width = 16};
    clf__codegen_target avx2 = {.cpu = true, .compute_units = 4, .local_mem = 32768, .float_width = 8};
    char why[200];
    clf__gemm_config c = clf__gemm_default_config(&avx512, 4096, 4096, 4096, 1);
    ck_assert(c.tm == 128 && c.tn == 128 && c.wm == 8 && c.wn == 32 && c.tk == 256);
    c = clf__gemm_default_config(&avx512, 1, 2048, 2048, 1); /* a decode step's projection */
    ck_assert_msg(c.wm == 1 && c.tm == 1, "%dx%d/%dx%d", c.tm, c.tn, c.wm, c.wn);
    ck_assert_msg(2048 / c.tn >= 32, "%d columns a block leave units idle", c.tn);
    c = clf__gemm_default_config(&avx2, 512, 512, 512, 1);
    ck_assert(c.wm == 6 && c.wn == 16);
    /* 128-bit vectors (SSE, NEON): 4 x 8. */
    clf__codegen_target neon = {.cpu = true, .compute_units = 8, .local_mem = 65536, .float_width = 4};
    c = clf__gemm_default_config(&neon, 512, 512, 512, 1);
    ck_assert_msg(c.wm == 4 && c.wn == 8, "%dx%d", c.wm, c.wn);
    static const int64_t sizes[][4] = {{1, 1, 1, 1},     {3, 200, 5, 1},    {200, 3, 9, 7},   {40, 50, 17, 1},
                                       {37, 53, 29, 1},  {127, 127, 127, 1}, {8, 8, 8, 256},  {1024, 512, 2048, 1},
                                       {1, 4096, 40, 1}, {300, 2, 4000, 1}};
    /* The CPU form on a GPU (kernel_style CPU): 48 KiB of local memory. */
    clf__codegen_target gpu48k = {.cpu = true, .compute_units = 132, .local_mem = 49152, .float_width = 1};
    const clf__codegen_target *targets[4] = {&avx512, &avx2, &gpu48k, &neon};
    c = clf__gemm_default_config(&gpu48k, 100, 100, 16, 32); /* attention's 100 x 100 scores */
    ck_assert_msg(clf__gemm_config_valid(&c, true, 1, gpu48k.local_mem, why, sizeof why), "%dx%dx%d/%dx%d: %s", c.tm,
                  c.tn, c.tk, c.wm, c.wn, why);
    for (int64_t m = 1; m <= 300; m += 7)
        for (int64_t n = 1; n <= 300; n += 11) {
            c = clf__gemm_default_config(&gpu48k, m, n, 64, 1);
            ck_assert_msg(clf__gemm_config_valid(&c, true, 1, gpu48k.local_mem, why, sizeof why),
                          "%lld x %lld: %dx%dx%d/%dx%d: %s", (long long)m, (long long)n, c.tm, c.tn, c.tk, c.wm, c.wn,
                          why);
        }
    for (int t = 0; t < 4; t++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            c = clf__gemm_default_config(targets[t], sizes[i][0], sizes[i][1], sizes[i][2], sizes[i][3]);
            ck_assert_msg(clf__gemm_config_valid(&c, true, 1, targets[t]->local_mem, why, sizeof why),
                          "%lld x %lld x %lld: %dx%dx%d/%dx%d: %s", (long long)sizes[i][0], (long long)sizes[i][1],
                          (long long)sizes[i][2], c.tm, c.tn, c.tk, c.wm, c.wn, why);
        }
    /* The form's limits are stated. */
    c = (clf__gemm_config){.tm = 32, .tn = 64, .tk = 1, .wm = 8, .wn = 32};
    ck_assert(!clf__gemm_config_valid(&c, true, 1, 2097152, why, sizeof why) && strstr(why, "tk"));
    c = (clf__gemm_config){.tm = 256, .tn = 256, .tk = 1024, .wm = 8, .wn = 32};
    ck_assert(!clf__gemm_config_valid(&c, true, 1, 32768, why, sizeof why) && strstr(why, "local memory"));
}
END_TEST

/* The reduction kind's chooser alone (schedule.h): facts in, choices out,
 * no graph and no device. */
START_TEST(reduction_schedule_from_facts)
{
    const clf__codegen_target cpu16 = {.cpu = true, .fp64 = true, .max_local = 4096, .compute_units = 16,
                                       .float_width = 16},
                              gpu = {.max_local = 1024, .compute_units = 132, .local_mem = 49152};
    clf__codegen_target nv = gpu, llvmpipe = {.cpu = true, .max_local = 32, .compute_units = 2, .max_loop_trips = 65535};
    nv.warp_shuffle = true;
    char err[256] = "";
    size_t gl, lo, fg, fl;
    clf__schedule s;
    /* softmax_short's shape: two sweeps and an epilogue, 16384 rows of 256. */
    clf__reduction_facts softmax = {.rows = 16384, .rlen = 256, .nstages = 2, .has_epilogue = true,
                                    .nreductions = 2, .nslots = 1, .shuffle_ok = true, .vector_ok = true};
    clf__schedule_reduction_sweeps(&softmax, &cpu16, &s);
    ck_assert_int_eq(s.sum, CLF__SUM_PLAIN);
    ck_assert(!s.online_softmax);
    ck_assert_int_eq(clf__schedule_reduction_launch(&softmax, &cpu16, 0, &s, err, sizeof err), CLF_OK);
    ck_assert_str_eq(s.form, "cpu");
    ck_assert_int_eq(s.vec, 16);
    ck_assert_uint_eq(s.split, 1);
    ck_assert_uint_eq(s.rows_per_item, 16); /* 4096 elements a work-item, 64 work-items a core */
    clf__reduction_geometry(&s, softmax.rows, true, &gl, &lo, &fg, &fl);
    ck_assert_uint_eq(lo, 1);
    ck_assert_uint_eq(gl, 16384 / 16);
    ck_assert_uint_eq(fg, 0);
    /* Fewer rows keep every core busy first; long rows and symbolic sizes
     * keep one a work-item. */
    clf__reduction_facts few = softmax;
    few.rows = 2048;
    ck_assert_int_eq(clf__schedule_reduction_launch(&few, &cpu16, 0, &s, err, sizeof err), CLF_OK);
    ck_assert_uint_eq(s.rows_per_item, 2);
    clf__reduction_geometry(&s, 2047, true, &gl, &lo, &fg, &fl); /* a partial last item */
    ck_assert_uint_eq(gl, 1024);
    few.rows = 1000;
    ck_assert_int_eq(clf__schedule_reduction_launch(&few, &cpu16, 0, &s, err, sizeof err), CLF_OK);
    ck_assert_uint_eq(s.rows_per_item, 1);
    clf__reduction_facts longer = softmax;
    longer.rlen = 4096;
    ck_assert_int_eq(clf__schedule_reduction_launch(&longer, &cpu16, 0, &s, err, sizeof err), CLF_OK);
    ck_assert_uint_eq(s.rows_per_item, 1);
    clf__codegen_target varying = cpu16;
    varying.sizes_vary = true;
    ck_assert_int_eq(clf__schedule_reduction_launch(&softmax, &varying, 0, &s, err, sizeof err), CLF_OK);
    ck_assert_uint_eq(s.rows_per_item, 1);
    /* Where the vector form fails the writer asks again: scalar. */
    clf__reduction_facts scalar = softmax;
    scalar.vector_ok = false;
    ck_assert_int_eq(clf__schedule_reduction_launch(&scalar, &cpu16, 0, &s, err, sizeof err), CLF_OK);
    ck_assert_int_eq(s.vec, 1);
    /* On NVIDIA: a persistent row on a warp's lanes with shuffles, the
     * work-group holding whole rows; without a shuffle for a field, no
     * shuffles. */
    clf__schedule_reduction_sweeps(&softmax, &nv, &s);
    ck_assert_int_eq(clf__schedule_reduction_launch(&softmax, &nv, 0, &s, err, sizeof err), CLF_OK);
    ck_assert_str_eq(s.form, "persistent");
    ck_assert(s.warp_shuffle && s.lanes <= 32 && s.wg == 64 && s.vec == 4 && s.cache > 0);
    clf__reduction_geometry(&s, softmax.rows, false, &gl, &lo, &fg, &fl);
    ck_assert_uint_eq(lo, 64);
    ck_assert_uint_eq(gl, softmax.rows / (64 / s.lanes) * 64);
    clf__reduction_facts no_shuffle = softmax;
    no_shuffle.shuffle_ok = false;
    ck_assert_int_eq(clf__schedule_reduction_launch(&no_shuffle, &nv, 0, &s, err, sizeof err), CLF_OK);
    ck_assert(!s.warp_shuffle);
    /* Long rows of an odd length on a GPU: online softmax where the kernel
     * is softmax's pair, two sweeps otherwise; Kahan's sums past 32768. */
    clf__reduction_facts odd = softmax;
    odd.rlen = 40001;
    odd.online_pair = true;
    clf__schedule_reduction_sweeps(&odd, &gpu, &s);
    ck_assert(s.online_softmax);
    ck_assert_int_eq(s.sum, CLF__SUM_KAHAN);
    odd.online_pair = false;
    clf__schedule_reduction_sweeps(&odd, &gpu, &s);
    ck_assert(!s.online_softmax);
    odd.online_pair = true;
    odd.rlen = 40000; /* whole float4s: the vector form's reloads win */
    clf__schedule_reduction_sweeps(&odd, &gpu, &s);
    ck_assert(!s.online_softmax);
    /* One long row summed: split, the final kernel combining a row's chunks. */
    clf__reduction_facts sum = {.rows = 1, .rlen = (uint64_t)1 << 24, .nstages = 1, .nreductions = 1, .nslots = 1,
                                .vector_ok = true};
    clf__schedule_reduction_sweeps(&sum, &gpu, &s);
    ck_assert_int_eq(clf__schedule_reduction_launch(&sum, &gpu, 0, &s, err, sizeof err), CLF_OK);
    ck_assert_str_eq(s.form, "split");
    ck_assert(s.split > 1 && s.split * s.chunk >= sum.rlen && (s.split - 1) * s.chunk < sum.rlen);
    ck_assert_int_eq(s.vec, 1);
    clf__reduction_geometry(&s, sum.rows, false, &gl, &lo, &fg, &fl);
    ck_assert_uint_eq(gl, s.split * s.wg);
    ck_assert_uint_eq(fg, s.wg);
    /* A driver that ends loops early: a row that can split is cut into
     * chunks within its limit; one swept twice cannot, and is refused. */
    clf__schedule_reduction_sweeps(&sum, &llvmpipe, &s);
    ck_assert_int_eq(clf__schedule_reduction_launch(&sum, &llvmpipe, 0, &s, err, sizeof err), CLF_OK);
    ck_assert(s.chunk <= llvmpipe.max_loop_trips);
    clf__reduction_facts twice = sum;
    twice.nstages = 2;
    clf__schedule_reduction_sweeps(&twice, &llvmpipe, &s);
    ck_assert_int_eq(clf__schedule_reduction_launch(&twice, &llvmpipe, 7, &s, err, sizeof err), CLF_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err, "kernel 7"));
    ck_assert_ptr_nonnull(strstr(err, "ends every loop"));
}
END_TEST

/* The pointwise kind's chooser alone (schedule.h). */
START_TEST(pointwise_schedule_from_facts)
{
    const clf__codegen_target cpu = {.cpu = true, .max_local = 4096, .compute_units = 2},
                              gpu = {.max_local = 1024, .compute_units = 132},
                              small = {.cpu = true, .max_local = 32, .small_code = true},
                              narrow_gpu = {.max_local = 64};
    clf__schedule s;
    /* Rows of 64 floats on a CPU: 16 lanes along the axis, else 8
     * consecutive elements, else scalar; blocks of 16 a work-item. */
    clf__pointwise_facts f = {.numel = 4096, .plain_loads = true, .widest = 4, .axis_lanes = 16, .axis_ok = true};
    clf__schedule_pointwise(&f, &cpu, &s);
    ck_assert_str_eq(s.form, "cpu");
    ck_assert(s.along_axis && s.vec == 16 && s.items == 16 && s.wg == 16);
    ck_assert_uint_eq(clf__pointwise_global(&s, f.numel), 16); /* 4096 / (16 x 16) = 16 work-items */
    f.axis_ok = false;
    clf__schedule_pointwise(&f, &cpu, &s);
    ck_assert(!s.along_axis && s.vec == 8);
    f.plain_loads = false;
    clf__schedule_pointwise(&f, &cpu, &s);
    ck_assert_int_eq(s.vec, 1);
    ck_assert_uint_eq(clf__pointwise_global(&s, f.numel), 256);
    /* A driver whose compiler slows down with code size: scalar, always. */
    f = (clf__pointwise_facts){.numel = 4096, .plain_loads = true, .widest = 4, .axis_lanes = 16, .axis_ok = true};
    clf__schedule_pointwise(&f, &small, &s);
    ck_assert(!s.along_axis && s.vec == 1 && s.wg == 16);
    /* GPUs: 16 bytes a work-item (float4, or 8 halves), 256 a work-group
     * or the device's limit; the axis is no GPU form. */
    clf__schedule_pointwise(&f, &gpu, &s);
    ck_assert_str_eq(s.form, "gpu");
    ck_assert(!s.along_axis && s.vec == 4 && s.items == 1 && s.wg == 256);
    ck_assert_uint_eq(clf__pointwise_global(&s, 1000), 256);
    f.widest = 2;
    clf__schedule_pointwise(&f, &gpu, &s);
    ck_assert_int_eq(s.vec, 8);
    clf__schedule_pointwise(&f, &narrow_gpu, &s);
    ck_assert_uint_eq(s.wg, 64);
    ck_assert_uint_eq(clf__pointwise_global(&s, 4096), 512);
}
END_TEST

/* The GEMM kind's chooser alone (schedule.h): facts in, forms out. */
START_TEST(gemm_schedule_from_facts)
{
    clf__codegen_target h200 = {.max_local = 1024, .compute_units = 132, .local_mem = 49152, .warp_shuffle = true,
                                .tensor_cores = true},
                        cpu16 = {.cpu = true, .max_local = 4096, .compute_units = 16, .local_mem = 65536,
                                 .float_width = 16};
    char err[256] = "";
    clf__gemm_schedule s;
    clf__kernel_code out;
    /* An f16 prefill product: the tensor cores, two stages at least. */
    clf__gemm_facts f = {.m = 512, .n = 8192, .k = 2048, .batch = 1, .numel = 512 * 8192, .a_k_fast = true,
                         .b_n_fast = true, .a_plain = true, .b_plain = true, .a16 = CLF_F16, .b16 = CLF_F16,
                         .b_batch_shared = true};
    ck_assert_int_eq(clf__schedule_gemm(&f, &h200, 0, &s, err, sizeof err), CLF_OK);
    ck_assert_int_eq(s.mma, CLF__MMA_F16);
    ck_assert(s.cfg.mma && s.stages >= 2 && s.rows.rows_max == 0);
    memset(&out, 0, sizeof out);
    clf__gemm_launch(&f, &s, false, &out);
    ck_assert_str_eq(out.schedule.form, "tensor-cores");
    ck_assert_uint_eq(out.local, 32u * (size_t)(s.cfg.tm / s.cfg.wm) * (size_t)(s.cfg.tn / s.cfg.wn));
    ck_assert_uint_eq(out.global % out.local, 0);
    /* A norm's row statistics in A's loads: not the tensor-core form. */
    clf__gemm_facts stats = f;
    stats.row_stats = true;
    ck_assert_int_eq(clf__schedule_gemm(&stats, &h200, 0, &s, err, sizeof err), CLF_OK);
    ck_assert_int_eq(s.mma, CLF__MMA_NONE);
    /* f32 operands: TF32's products only where allowed. */
    clf__gemm_facts f32 = f;
    f32.a16 = f32.b16 = CLF_F32;
    f32.a_f32 = f32.b_f32 = true;
    ck_assert_int_eq(clf__schedule_gemm(&f32, &h200, 0, &s, err, sizeof err), CLF_OK);
    ck_assert_int_eq(s.mma, CLF__MMA_NONE);
    ck_assert(s.vec_a && s.vec_b); /* the portable tiles with float4 loads */
    h200.tf32 = true;
    ck_assert_int_eq(clf__schedule_gemm(&f32, &h200, 0, &s, err, sizeof err), CLF_OK);
    ck_assert_int_eq(s.mma, CLF__MMA_TF32);
    h200.tf32 = false;
    /* A decode step's row: the few-rows form, 8 halves a load, K split
     * until the blocks give every compute unit four. */
    clf__gemm_facts row = f;
    row.m = 1;
    row.numel = 8192;
    ck_assert_int_eq(clf__schedule_gemm(&row, &h200, 0, &s, err, sizeof err), CLF_OK);
    ck_assert_int_eq(s.rows.rows_max, 1);
    ck_assert_int_eq(s.rows.w, 8);
    ck_assert(s.rows.split > 1 && s.rows.blocks * s.rows.split >= 4 * 132);
    clf__gemm_launch(&row, &s, false, &out);
    ck_assert_str_eq(out.schedule.form, "gpu-rows");
    /* The same row on 16 CPU cores: one-row blocks, K sliced, a final
     * launch adding the slices. */
    ck_assert_int_eq(clf__schedule_gemm(&row, &cpu16, 0, &s, err, sizeof err), CLF_OK);
    ck_assert(s.one_row && s.cpu_blocks && s.pack_a); /* f16 A: packed, converted once */
    ck_assert(s.one_row_split > 1 && s.one_row_kch * s.one_row_split >= row.k);
    memset(&out, 0, sizeof out);
    clf__gemm_launch(&row, &s, true, &out);
    ck_assert_str_eq(out.schedule.form, "cpu-one-row");
    ck_assert(out.final_global > 0 && out.scratch_bytes > 0);
    /* Nothing to compute: no launch. */
    clf__gemm_facts empty = f;
    empty.numel = 0;
    ck_assert_int_eq(clf__schedule_gemm(&empty, &cpu16, 0, &s, err, sizeof err), CLF_OK);
    clf__gemm_launch(&empty, &s, true, &out);
    ck_assert_uint_eq(out.global, 0);
    /* A pinned tiling the CPU form cannot take is refused, naming the kernel. */
    clf__gemm_config bad = {.tm = 32, .tn = 64, .tk = 1, .wm = 8, .wn = 32};
    cpu16.gemm = &bad;
    ck_assert_int_eq(clf__schedule_gemm(&f32, &cpu16, 3, &s, err, sizeof err), CLF_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(err, "kernel 3"));
    ck_assert_ptr_nonnull(strstr(err, "tk"));
}
END_TEST

/* The attention kind's chooser alone (schedule.h). */
START_TEST(attention_schedule_from_facts)
{
    const clf__codegen_target h200 = {.max_local = 1024, .compute_units = 132, .local_mem = 49152,
                                      .warp_shuffle = true, .tensor_cores = true},
                              cpu16 = {.cpu = true, .max_local = 4096, .compute_units = 16, .local_mem = 65536,
                                       .float_width = 16};
    char err[256] = "";
    clf__attention_schedule s;
    clf__kernel_code out;
    /* f16 prefill, B8 H16 S1024 D64: the tensor cores, four warps of 32
     * query rows, tiles of 64 keys. */
    clf__attention_facts f = {.batch = 128, .sq = 1024, .sk = 1024, .d = 64, .dv = 64,
                              .numel = 128 * 1024 * 64, .mma16 = CLF_F16};
    ck_assert_int_eq(clf__schedule_attention(&f, &h200, 0, &s, err, sizeof err), CLF_OK);
    ck_assert(!s.decode && s.mma == CLF_F16 && s.mma_warps == 4 && s.mma_rows == 32 && s.bkt == 64);
    memset(&out, 0, sizeof out);
    clf__attention_launch(&f, &s, false, &out);
    ck_assert_str_eq(out.schedule.form, "tensor-cores");
    ck_assert_uint_eq(out.local, 128);
    ck_assert_uint_eq(out.global, 128u * (1024 / 128) * 128);
    ck_assert_int_eq(out.schedule.tiles.tm, 128);
    ck_assert_int_eq(out.schedule.tiles.wm, 32);
    /* K and V not plain buffers: one stage, through registers; plain: two,
     * by cp.async (2 x 64 x (72 + 72) x 2 bytes fit 48 KiB). */
    ck_assert_int_eq(s.mma_stages, 1);
    ck_assert_int_eq(out.schedule.copy_stages, 0);
    f.kv16 = true;
    ck_assert_int_eq(clf__schedule_attention(&f, &h200, 0, &s, err, sizeof err), CLF_OK);
    ck_assert(s.mma == CLF_F16 && s.bkt == 64 && s.mma_stages == 2);
    clf__attention_launch(&f, &s, false, &out);
    ck_assert_int_eq(out.schedule.copy_stages, 2);
    /* A pinned tiling (CLFUSE_ATTENTION_TILE) is taken as it is: 2 warps of
     * 16 rows, tiles of 128 keys; 3 warps, or rows 24, are refused by name. */
    clf__attention_tile pin = {.warps = 2, .rows = 16, .bkt = 128};
    clf__codegen_target pinned = h200;
    pinned.attention_tile = &pin;
    ck_assert_int_eq(clf__schedule_attention(&f, &pinned, 0, &s, err, sizeof err), CLF_OK);
    ck_assert(s.mma_warps == 2 && s.mma_rows == 16 && s.bkt == 128);
    clf__attention_launch(&f, &s, false, &out);
    ck_assert_uint_eq(out.global, 128u * (1024 / 32) * 64);
    pin.warps = 3;
    ck_assert_int_eq(clf__schedule_attention(&f, &pinned, 5, &s, err, sizeof err), CLF_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err, "kernel 5"));
    ck_assert_ptr_nonnull(strstr(err, "CLFUSE_ATTENTION_TILE"));
    pin.warps = 2;
    pin.rows = 24;
    ck_assert_int_eq(clf__schedule_attention(&f, &pinned, 5, &s, err, sizeof err), CLF_ERR_UNSUPPORTED);
    pin.rows = 16;
    /* Stages pinned: 1 where two would be chosen; 2 refused where K and V
     * are not plain buffers, or where two stages of 128 keys exceed 48
     * KiB (2 x 128 x 144 x 2 bytes); 3 refused. */
    ck_assert_int_eq(clf__schedule_attention(&f, &pinned, 0, &s, err, sizeof err), CLF_OK);
    ck_assert(s.bkt == 128 && s.mma_stages == 1); /* unpinned stages: one of 128 keys, 36864 bytes */
    pin.bkt = 64;
    pin.stages = 1;
    ck_assert_int_eq(clf__schedule_attention(&f, &pinned, 0, &s, err, sizeof err), CLF_OK);
    ck_assert(s.mma_stages == 1 && s.bkt == 64);
    pin.stages = 2;
    ck_assert_int_eq(clf__schedule_attention(&f, &pinned, 0, &s, err, sizeof err), CLF_OK);
    ck_assert_int_eq(s.mma_stages, 2);
    pin.bkt = 128;
    ck_assert_int_eq(clf__schedule_attention(&f, &pinned, 5, &s, err, sizeof err), CLF_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err, "exceed"));
    pin.bkt = 64;
    pin.stages = 3;
    ck_assert_int_eq(clf__schedule_attention(&f, &pinned, 5, &s, err, sizeof err), CLF_ERR_UNSUPPORTED);
    pin.stages = 2;
    f.kv16 = false;
    ck_assert_int_eq(clf__schedule_attention(&f, &pinned, 5, &s, err, sizeof err), CLF_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err, "which they are not"));
    /* Heads of 128: eight warps of 16 rows, tiles of 64 keys still fit 48
     * KiB, two stages of them do not. */
    f.d = f.dv = 128;
    f.kv16 = true;
    ck_assert_int_eq(clf__schedule_attention(&f, &h200, 0, &s, err, sizeof err), CLF_OK);
    ck_assert(s.bkt == 64 && s.mma_warps == 8 && s.mma_rows == 16 && s.mma_stages == 1);
    f.kv16 = false;
    /* f32: the FMA form's register tiles. Heads of 128: 64 rows over
     * tiles of 32 or 16 keys exceed 48 KiB, 32 rows over 16 keys, two a
     * work-item, fit (4 x (32 x 132 + 16 x 132 + 16 x 128 + 24 x 36) =
     * 36992 bytes): 8 x 8 work-items. */
    f.mma16 = CLF_F32;
    ck_assert_int_eq(clf__schedule_attention(&f, &h200, 0, &s, err, sizeof err), CLF_OK);
    ck_assert(s.mma == CLF_F32 && s.bq == 32 && s.bk == 16 && s.tk == 2);
    clf__attention_launch(&f, &s, false, &out);
    ck_assert_str_eq(out.schedule.form, "gpu");
    ck_assert_uint_eq(out.local, 64);
    ck_assert_uint_eq(out.global, 128u * (1024 / 32) * 64);
    /* Heads of 64: 64 rows over 32 keys, four a work-item (45184 bytes):
     * 16 x 8 work-items. */
    f.d = f.dv = 64;
    ck_assert_int_eq(clf__schedule_attention(&f, &h200, 0, &s, err, sizeof err), CLF_OK);
    ck_assert(s.bq == 64 && s.bk == 32 && s.tk == 4);
    clf__attention_launch(&f, &s, false, &out);
    ck_assert_uint_eq(out.local, 128);
    /* A device of 32 work-items a group (rusticl): 16 rows x 8 key
     * columns; one of a single work-item: four rows, one column of keys;
     * seven query rows: a block of 8. */
    clf__codegen_target small = h200;
    small.max_local = 32;
    ck_assert_int_eq(clf__schedule_attention(&f, &small, 0, &s, err, sizeof err), CLF_OK);
    ck_assert(s.bq == 16 && s.bk == 32 && s.tk == 4);
    small.max_local = 1;
    ck_assert_int_eq(clf__schedule_attention(&f, &small, 0, &s, err, sizeof err), CLF_OK);
    ck_assert(s.bq == 4 && s.bk == s.tk);
    clf__attention_launch(&f, &s, false, &out);
    ck_assert_uint_eq(out.local, 1);
    f.sq = 7;
    ck_assert_int_eq(clf__schedule_attention(&f, &h200, 0, &s, err, sizeof err), CLF_OK);
    ck_assert(s.bq == 8 && s.bk == 32);
    f.sq = 1024;
    /* Its tiling pinned (CLFUSE_ATTENTION_TILE=fma,rows,keys,keys_per_item):
     * 16 rows over 64 keys, 8 a work-item, taken; keys not a power of two
     * of work-items, or 1024 work-items over 256 rows, refused by name. */
    clf__attention_tile fma = {.rows = 16, .bkt = 64, .fma_keys = 8};
    clf__codegen_target fma_pinned = h200;
    fma_pinned.attention_tile = &fma;
    ck_assert_int_eq(clf__schedule_attention(&f, &fma_pinned, 0, &s, err, sizeof err), CLF_OK);
    ck_assert(s.bq == 16 && s.bk == 64 && s.tk == 8);
    fma.bkt = 24;
    ck_assert_int_eq(clf__schedule_attention(&f, &fma_pinned, 3, &s, err, sizeof err), CLF_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err, "fma,rows,keys,keys_per_item"));
    ck_assert_ptr_nonnull(strstr(err, "power of two"));
    fma.rows = 256;
    fma.bkt = 128;
    fma.fma_keys = 4;
    ck_assert_int_eq(clf__schedule_attention(&f, &fma_pinned, 3, &s, err, sizeof err), CLF_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err, "work-items"));
    f.d = f.dv = 128;
    /* One query row over 4096 keys: the keys split, chunks covering them. */
    clf__attention_facts dec = {.batch = 32, .sq = 1, .sk = 4096, .d = 128, .dv = 128, .numel = 32 * 128,
                                .mma16 = CLF_F16};
    ck_assert_int_eq(clf__schedule_attention(&dec, &h200, 0, &s, err, sizeof err), CLF_OK);
    ck_assert(s.decode && s.mma == CLF_F32 && s.G.split > 1 && s.G.split * s.G.chunk >= 4096 && s.G.local > 0);
    ck_assert(!s.G.wide && s.G.vl == 128 && s.G.kg == 1);
    memset(&out, 0, sizeof out);
    clf__attention_launch(&dec, &s, false, &out);
    ck_assert_str_eq(out.schedule.form, "split-keys");
    ck_assert(out.state_bytes >= s.state_floats * 4);
    ck_assert_int_eq(out.schedule.vec, 1);
    /* K and V of 16-bit values as they lie: 16-byte loads, 16 work-items
     * across a V row of 128 (8 columns each), 8 groups of them; not with
     * CLFUSE_DECODE_WIDE=0, nor for a row of 72 (9 loads: not a power of two). */
    dec.kv16 = true;
    ck_assert_int_eq(clf__schedule_attention(&dec, &h200, 0, &s, err, sizeof err), CLF_OK);
    ck_assert(s.decode && s.G.wide && s.G.vl == 16 && s.G.kg == s.G.wg / 16 && s.G.kp % 8 == 0);
    clf__attention_launch(&dec, &s, false, &out);
    ck_assert_int_eq(out.schedule.vec, 8);
    /* A chunk pinned (CLFUSE_DECODE_CHUNK): 256 keys, 16 chunks; 100 (not a
     * multiple of the work-group's 128 keys) and 8192 refused by name. */
    clf__codegen_target chunked = h200;
    chunked.decode_chunk = 256;
    ck_assert_int_eq(clf__schedule_attention(&dec, &chunked, 0, &s, err, sizeof err), CLF_OK);
    ck_assert(s.decode && s.G.chunk == 256 && s.G.split == 16 && s.G.wide);
    chunked.decode_chunk = 100;
    ck_assert_int_eq(clf__schedule_attention(&dec, &chunked, 4, &s, err, sizeof err), CLF_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err, "CLFUSE_DECODE_CHUNK"));
    ck_assert_ptr_nonnull(strstr(err, "kernel 4"));
    chunked.decode_chunk = 8192;
    ck_assert_int_eq(clf__schedule_attention(&dec, &chunked, 4, &s, err, sizeof err), CLF_ERR_UNSUPPORTED);
    clf__codegen_target narrow = h200;
    narrow.no_decode_wide = true;
    ck_assert_int_eq(clf__schedule_attention(&dec, &narrow, 0, &s, err, sizeof err), CLF_OK);
    ck_assert(s.decode && !s.G.wide);
    dec.dv = 72;
    ck_assert_int_eq(clf__schedule_attention(&dec, &h200, 0, &s, err, sizeof err), CLF_OK);
    ck_assert(s.decode && !s.G.wide);
    dec.dv = 128;
    dec.kv16 = false;
    /* 16 CPU cores: vectors of 16, 4 query rows a work-item where that
     * leaves every core work, 1 for a decode step of 32 heads. */
    f.mma16 = CLF_F16;
    ck_assert_int_eq(clf__schedule_attention(&f, &cpu16, 0, &s, err, sizeof err), CLF_OK);
    ck_assert(s.vw == 16 && s.rb == 4 && s.keys > 1 && s.mma == CLF_F32 && !s.decode);
    ck_assert_int_eq(clf__schedule_attention(&dec, &cpu16, 0, &s, err, sizeof err), CLF_OK);
    ck_assert(s.rb == 1 && !s.decode);
    memset(&out, 0, sizeof out);
    clf__attention_launch(&dec, &s, true, &out);
    ck_assert_str_eq(out.schedule.form, "cpu");
    ck_assert_uint_eq(out.global, 32);
    ck_assert_uint_eq(out.schedule.rows, 1);
    /* Heads too wide for a GPU's tiles are refused, naming the kernel. */
    clf__attention_facts wide = f;
    wide.d = wide.dv = 8192;
    ck_assert_int_eq(clf__schedule_attention(&wide, &h200, 5, &s, err, sizeof err), CLF_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err, "kernel 5"));
}
END_TEST

START_TEST(schedules_name_their_choices)
{
    clf__codegen_target gpu = {.cpu = false, .max_local = 1024, .compute_units = 132, .local_mem = 49152},
                        nv = gpu, cpu = {.cpu = true, .max_local = 4096, .compute_units = 2, .fp64 = true};
    nv.warp_shuffle = true;
    char err[256], line[320];
    /* A softmax over rows of 256: a multi-sweep row in registers on GPUs
     * (lanes of a warp with shuffles on NVIDIA), a row loop on CPUs. */
    int64_t sh[2] = {64, 256};
    clf_graph *g = clf_graph_create();
    clf_graph_output(g, "y", clf_softmax(g, clf_input(g, "x", CLF_F32, 2, sh), 1));
    clf__plan p = plan_of(g, true);
    ck_assert_uint_eq(p.nkernels, 1);
    clf__kernel_code c;
    ck_assert(clf__codegen_kernel(g, &p, 0, &nv, &c, err, sizeof err) == CLF_OK);
    ck_assert_str_eq(c.schedule.form, "persistent");
    ck_assert(c.schedule.warp_shuffle && c.schedule.lanes <= 32 && c.schedule.wg == 64);
    ck_assert_ptr_nonnull(strstr(clf__schedule_str(&c, line, sizeof line), "warp-shuffle"));
    clf__kernel_code_free(&c);
    ck_assert(clf__codegen_kernel(g, &p, 0, &gpu, &c, err, sizeof err) == CLF_OK);
    ck_assert(!c.schedule.warp_shuffle);
    clf__kernel_code_free(&c);
    ck_assert(clf__codegen_kernel(g, &p, 0, &cpu, &c, err, sizeof err) == CLF_OK);
    ck_assert_str_eq(c.schedule.form, "cpu");
    ck_assert_int_eq(c.schedule.sum, CLF__SUM_PLAIN); /* short rows: plain float lanes */
    ck_assert_uint_eq(c.schedule.wg, 1);
    ck_assert_int_eq(c.schedule.vec, 8);
    clf__kernel_code_free(&c);
    clf__codegen_target wide = cpu;
    wide.float_width = 16; /* AVX-512 */
    ck_assert(clf__codegen_kernel(g, &p, 0, &wide, &c, err, sizeof err) == CLF_OK);
    ck_assert_int_eq(c.schedule.vec, 16);
    clf__kernel_code_free(&c);
    clf__plan_free(&p);
    clf_graph_destroy(&g);
    /* Longer rows sum in double lanes on CPUs with doubles. */
    int64_t lsh[2] = {8, 2048};
    g = clf_graph_create();
    clf_graph_output(g, "y", clf_softmax(g, clf_input(g, "x", CLF_F32, 2, lsh), 1));
    p = plan_of(g, true);
    ck_assert(clf__codegen_kernel(g, &p, 0, &cpu, &c, err, sizeof err) == CLF_OK);
    ck_assert_int_eq(c.schedule.sum, CLF__SUM_DOUBLE);
    clf__kernel_code_free(&c);
    clf__plan_free(&p);
    clf_graph_destroy(&g);

    /* A sum of one long row: split into chunks and a final combine. */
    int64_t n = 1 << 22;
    g = clf_graph_create();
    clf_graph_output(g, "s", clf_reduce(g, CLF_REDUCE_SUM, clf_input(g, "x", CLF_F32, 1, &n), 1, (int[]){0}, false));
    p = plan_of(g, true);
    ck_assert(clf__codegen_kernel(g, &p, 0, &gpu, &c, err, sizeof err) == CLF_OK);
    ck_assert_str_eq(c.schedule.form, "split");
    ck_assert(c.schedule.split > 1 && c.schedule.split * c.schedule.chunk >= (uint64_t)n);
    ck_assert_ptr_nonnull(strstr(clf__schedule_str(&c, line, sizeof line), " split="));
    clf__kernel_code_free(&c);
    clf__plan_free(&p);
    clf_graph_destroy(&g);

    /* A product: its tiles, float4 loads of plain operands on GPUs. */
    g = clf_graph_create();
    clf_graph_output(g, "y", clf_matmul(g, clf_input(g, "a", CLF_F32, 2, (int64_t[]){512, 512}),
                                        clf_input(g, "b", CLF_F32, 2, (int64_t[]){512, 512})));
    p = plan_of(g, true);
    ck_assert(clf__codegen_kernel(g, &p, 0, &gpu, &c, err, sizeof err) == CLF_OK);
    ck_assert_str_eq(c.schedule.form, "gpu-tiles");
    ck_assert(c.schedule.tiles.tm > 0 && c.schedule.vec_a && c.schedule.vec_b);
    clf__kernel_code_free(&c);
    ck_assert(clf__codegen_kernel(g, &p, 0, &cpu, &c, err, sizeof err) == CLF_OK);
    ck_assert_str_eq(c.schedule.form, "cpu-blocks");
    clf__kernel_code_free(&c);
    clf__plan_free(&p);
    clf_graph_destroy(&g);

    /* Decode attention, f16, 32 heads of one query over 4096 keys of 128:
     * on a GPU of 132 units the keys split into chunks of 256 (about 4
     * work-groups a unit), a work-group of 128 (a work-item per column of
     * V) per head and chunk, 512 in all, one launch (the last of a head's work-groups combines
     * its chunks): the state holds a counter a head (padded to 32) and
     * every chunk's record; on CPUs a work-item per row. */
    g = clf_graph_create();
    clf_tensor q = clf_input(g, "q", CLF_F16, 4, (int64_t[]){1, 32, 1, 128});
    clf_tensor kk = clf_input(g, "k", CLF_F16, 4, (int64_t[]){1, 32, 4096, 128});
    clf_tensor vv = clf_input(g, "v", CLF_F16, 4, (int64_t[]){1, 32, 4096, 128});
    clf_graph_output(g, "o", clf_attention(g, q, kk, vv, CLF_TENSOR_INVALID, 0, false));
    p = plan_of(g, true);
    ck_assert_uint_eq(p.nkernels, 1);
    ck_assert(clf__codegen_kernel(g, &p, 0, &gpu, &c, err, sizeof err) == CLF_OK);
    ck_assert_str_eq(c.schedule.form, "split-keys");
    ck_assert_uint_eq(c.schedule.split, 16);
    ck_assert_uint_eq(c.schedule.chunk, 256);
    ck_assert_uint_eq(c.schedule.wg, 128);
    ck_assert_uint_eq(c.global, 32 * 16 * 128);
    ck_assert_uint_eq(c.local, 128);
    ck_assert_ptr_null(c.final_name);
    ck_assert_uint_eq(c.scratch_bytes, 0);
    ck_assert_uint_eq(c.state_bytes, (32 + 32 * 16 * (128 + 2)) * sizeof(float));
    ck_assert_ptr_nonnull(strstr(c.source, "kernels_templates/attention_decode.cl"));
    ck_assert_ptr_nonnull(strstr(clf__schedule_str(&c, line, sizeof line), " split=16 chunk=256"));
    /* K staged through local memory in pieces of 128 keys x 64 columns
     * (rows padded to 65 floats), K and V (f16, as they lie) read 8 values
     * a load, V 8 keys a work-item at a time: q 128 + K 128 x 65 + weights
     * 256 + reductions 128 floats + the combine's 3 a chunk (16 chunks). */
    ck_assert_int_eq(c.schedule.tiles.tn, 128);
    ck_assert_int_eq(c.schedule.tiles.tk, 64);
    ck_assert_int_eq(c.schedule.vec, 8);
    ck_assert_uint_eq(c.schedule.lanes, 16);
    ck_assert_uint_eq(c.schedule.unroll, 8);
    ck_assert_ptr_nonnull(strstr(c.source, "#define DECODE_WIDE 1\n"));
    ck_assert_ptr_null(strstr(c.source, "#define BQ ")); /* the prefill forms' geometry is not the decode form's */
    ck_assert_uint_eq(c.schedule.split, 16);
    ck_assert_uint_eq(c.schedule.local_bytes, (128 + 128 * 65 + 256 + 128 + 3 * 16) * sizeof(float));
    ck_assert_ptr_nonnull(strstr(c.source, "#define KP 64\n"));
    ck_assert_ptr_nonnull(strstr(clf__schedule_str(&c, line, sizeof line), " tiles=1x128x64/1x1"));
    clf__kernel_code_free(&c);
    /* Less local memory: narrower pieces (16 columns: 128 + 128 x 17 +
     * 256 + 128 + 3 x 16 floats fit 12 KiB, 32 or 64 columns do not). */
    clf__codegen_target small = gpu;
    small.local_mem = 12288;
    ck_assert(clf__codegen_kernel(g, &p, 0, &small, &c, err, sizeof err) == CLF_OK);
    ck_assert_int_eq(c.schedule.tiles.tk, 16);
    ck_assert_uint_eq(c.schedule.local_bytes, (128 + 128 * 17 + 256 + 128 + 3 * 16) * sizeof(float));
    clf__kernel_code_free(&c);
    ck_assert(clf__codegen_kernel(g, &p, 0, &cpu, &c, err, sizeof err) == CLF_OK);
    ck_assert_str_eq(c.schedule.form, "cpu");
    ck_assert_ptr_null(c.final_name);
    clf__kernel_code_free(&c);
    clf__plan_free(&p);
    clf_graph_destroy(&g);

    /* The same over 8 batches: 256 rows, 8 chunks of 512 a row; the
     * chunk's 512 weights (and the combine's 24 floats) make the local
     * memory 36448 bytes. */
    g = clf_graph_create();
    q = clf_input(g, "q", CLF_F16, 4, (int64_t[]){8, 32, 1, 128});
    kk = clf_input(g, "k", CLF_F16, 4, (int64_t[]){8, 32, 4096, 128});
    vv = clf_input(g, "v", CLF_F16, 4, (int64_t[]){8, 32, 4096, 128});
    clf_graph_output(g, "o", clf_attention(g, q, kk, vv, CLF_TENSOR_INVALID, 0, false));
    p = plan_of(g, true);
    ck_assert(clf__codegen_kernel(g, &p, 0, &gpu, &c, err, sizeof err) == CLF_OK);
    ck_assert_uint_eq(c.schedule.split, 8);
    ck_assert_uint_eq(c.schedule.chunk, 512);
    ck_assert_int_eq(c.schedule.tiles.tk, 64);
    ck_assert_uint_eq(c.schedule.local_bytes, (128 + 128 * 65 + 512 + 128 + 3 * 8) * sizeof(float));
    clf__kernel_code_free(&c);
    clf__plan_free(&p);
    clf_graph_destroy(&g);

    /* A pointwise chain: vector lanes. */
    g = clf_graph_create();
    int64_t m = 4096;
    clf_graph_output(g, "y", clf_relu(g, clf_input(g, "x", CLF_F32, 1, &m)));
    p = plan_of(g, true);
    ck_assert(clf__codegen_kernel(g, &p, 0, &gpu, &c, err, sizeof err) == CLF_OK);
    ck_assert_str_eq(c.schedule.form, "gpu");
    ck_assert_int_eq(c.schedule.vec, 4);
    clf__kernel_code_free(&c);
    clf__plan_free(&p);
    clf_graph_destroy(&g);
}
END_TEST

/* The attention source of q, k, v [2, 4, 40, d] of dtype dt (k and v
 * broadcast from one head when gqa), for target t; the kernel's schedule
 * form in *form (static strings). */
static char *attention_source(clf_dtype dt, int64_t d, bool gqa, const clf__codegen_target *t, const char **form)
{
    int64_t qs[4] = {2, 4, 40, d}, ks[4] = {2, gqa ? 1 : 4, 40, d};
    clf_graph *g = clf_graph_create();
    clf_tensor q = clf_input(g, "q", dt, 4, qs);
    clf_tensor k = clf_input(g, "k", dt, 4, ks), v = clf_input(g, "v", dt, 4, ks);
    ck_assert_int_eq(clf_graph_output(g, "o", clf_attention(g, q, k, v, CLF_TENSOR_INVALID, 0, true)), CLF_OK);
    clf__plan p = plan_of(g, true);
    ck_assert_uint_eq(p.nkernels, 1);
    clf__kernel_code c;
    char err[256] = "";
    ck_assert_msg(clf__codegen_kernel(g, &p, 0, t, &c, err, sizeof err) == CLF_OK, "%s", err);
    *form = c.schedule.form;
    char *src = strdup(c.source);
    clf__kernel_code_free(&c);
    clf__plan_free(&p);
    clf_graph_destroy(&g);
    return src;
}

/* Whether an attention source's clf_logit rounds the scores to f16. */
static bool logit_rounds(const char *src)
{
    const char *fn = strstr(src, "static inline float clf_logit(");
    ck_assert_ptr_nonnull(fn);
    const char *end = strstr(fn, "\n}\n"), *r = strstr(fn, "clf_round_f16(acc)");
    ck_assert_ptr_nonnull(end);
    return r && r < end;
}

/* GQA as exporters write it (K and V [1, 2, 40, 64] unsqueezed, expanded
 * to 4 heads a group and reshaped to [1, 8, 40, 64]): the CPU form's K and
 * V vectors are one vload_half16 each at the shared head's row, the
 * head's index bt / 4 (the linear index bt * 2560 + n * 64 + d divided by
 * the group's 10240 elements); before, sixteen scalar loads each
 * recomputed that division, and the prefill's attention ran 4.7x slower
 * on PoCL (bench_attention f16 B1 H32 HKV8 S512: 139 ms against 29.8 on
 * one thread). */
START_TEST(cpu_attention_reads_a_gqa_head_in_vectors)
{
    int64_t qs[4] = {1, 8, 40, 64}, ks[4] = {1, 2, 40, 64}, ex[5] = {1, 2, 4, 40, 64};
    int ax = 2;
    clf_graph *g = clf_graph_create();
    clf_tensor q = clf_input(g, "q", CLF_F16, 4, qs);
    clf_tensor kv[2] = {clf_input(g, "k", CLF_F16, 4, ks), clf_input(g, "v", CLF_F16, 4, ks)};
    for (int i = 0; i < 2; i++)
        kv[i] = clf_reshape(g, clf_expand(g, clf_unsqueeze(g, kv[i], 1, &ax), 5, ex), 4, qs);
    ck_assert_int_eq(clf_graph_output(g, "o", clf_attention(g, q, kv[0], kv[1], CLF_TENSOR_INVALID, 0, true)), CLF_OK);
    clf__plan p = plan_of(g, true);
    ck_assert_uint_eq(p.nkernels, 1);
    clf__codegen_target cpu = {.cpu = true, .max_local = 4096, .compute_units = 2, .float_width = 16};
    clf__kernel_code c = code_of_target(g, &p, 0, &cpu);
    for (int i = 0; i < 2; i++) {
        const char *fn = strstr(c.source, i == 0 ? "static inline float16 clf_load_kv(" : "static inline float16 clf_load_vv(");
        ck_assert_ptr_nonnull(fn);
        const char *end = strstr(fn, "\n}\n"), *ld = strstr(fn, "vload_half16(0, b");
        ck_assert_ptr_nonnull(end);
        ck_assert_msg(ld && ld < end, "%s: no vector load", i == 0 ? "K" : "V");
        for (const char *div = strstr(fn, " / "); div && div < end; div = strstr(div + 1, " / "))
            ck_assert_msg(div - fn >= 2 && strncmp(div - 2, "bt / 4u", 7) == 0, "%s: a division other than the head's",
                          i == 0 ? "K" : "V");
    }
    ck_assert(c.schedule.vec_a && c.schedule.vec_b);
    clf__kernel_code_free(&c);
    clf__plan_free(&p);
    clf_graph_destroy(&g);
}
END_TEST

/* The CPU form's logits of a group of keys (CH of them) in vector code
 * where every value has a vector form (CLF_LOGIT_VEC, clf_logit_v): f16
 * scores' roundings (lane by lane they were two software roundings a
 * logit), an f32 mask added (a vector load along the keys); a bool mask
 * has none (the scalar clf_logit serves), nor a GPU. */
START_TEST(cpu_attention_logits_of_a_key_group_in_vectors)
{
    clf__codegen_target cpu = {.cpu = true, .max_local = 4096, .compute_units = 2, .float_width = 16};
    clf__codegen_target gpu = {.max_local = 256, .compute_units = 8, .local_mem = 49152};
    for (int c = 0; c < 4; c++) {
        const clf_dtype dt = c == 0 || c == 3 ? CLF_F16 : CLF_F32;
        int64_t qs[4] = {1, 2, 40, 64}, ms[4] = {1, 1, 40, 40};
        clf_graph *g = clf_graph_create();
        clf_tensor q = clf_input(g, "q", dt, 4, qs), k = clf_input(g, "k", dt, 4, qs), v = clf_input(g, "v", dt, 4, qs);
        clf_tensor mask = c == 1 ? clf_input(g, "mask", CLF_F32, 4, ms)
                          : c == 2 ? clf_input(g, "mask", CLF_BOOL, 4, ms)
                                   : CLF_TENSOR_INVALID;
        ck_assert_int_eq(clf_graph_output(g, "o", clf_attention(g, q, k, v, mask, 0, c == 0 || c == 3)), CLF_OK);
        clf__plan p = plan_of(g, true);
        ck_assert_uint_eq(p.nkernels, 1);
        clf__kernel_code code = code_of_target(g, &p, 0, c == 3 ? &gpu : &cpu);
        const bool want = c < 2;
        ck_assert_msg((strstr(code.source, "#define CLF_LOGIT_VEC 1") != NULL) == want, "case %d", c);
        const char *fn = strstr(code.source, "static inline float8 clf_logit_v(");
        ck_assert_msg((fn != NULL) == want, "case %d", c);
        if (fn) {
            const char *end = strstr(fn, "\n}\n");
            ck_assert_ptr_nonnull(end);
            const char *what = c == 0 ? "clf_round_f16_8(" : "vload8(";
            const char *at = strstr(fn, what);
            ck_assert_msg(at && at < end, "case %d: no %s in clf_logit_v", c, what);
        }
        ck_assert_ptr_nonnull(strstr(code.source, "static inline float clf_logit("));
        clf__kernel_code_free(&code);
        clf__plan_free(&p);
        clf_graph_destroy(&g);
    }
}
END_TEST

/* Keys read through a cache's views (a slice to 37 of 100 positions, a
 * head axis added for GQA), as a decoder's attention reads them: the
 * operand's linear index, a sum over its axes, is seen through when the
 * views divide it again, so the load addresses the cache directly (head
 * stride 100 x 64) with no division by the sliced length (37 x 64), a
 * number that differs at every length and that a program shared by every
 * length would take as a parameter. */
START_TEST(cache_view_loads_need_no_division_by_the_length)
{
    clf_graph *g = clf_graph_create();
    clf_tensor q = clf_input(g, "q", CLF_F16, 5, (int64_t[]){1, 2, 4, 1, 64});
    clf_tensor kc = clf_input(g, "kc", CLF_F16, 4, (int64_t[]){1, 2, 100, 64});
    clf_tensor vc = clf_input(g, "vc", CLF_F16, 4, (int64_t[]){1, 2, 100, 64});
    clf_tensor k = clf_unsqueeze(g, clf_slice(g, kc, 1, (int64_t[]){0}, (int64_t[]){37}, (int[]){2}, NULL), 1,
                                 (int[]){2});
    clf_tensor v = clf_unsqueeze(g, clf_slice(g, vc, 1, (int64_t[]){0}, (int64_t[]){37}, (int[]){2}, NULL), 1,
                                 (int[]){2});
    ck_assert_int_eq(clf_graph_output(g, "o", clf_attention(g, q, k, v, CLF_TENSOR_INVALID, 0, true)), CLF_OK);
    clf__plan p = plan_of(g, true);
    ck_assert_uint_eq(p.nkernels, 1);
    clf__kernel_code c = code_of(g, &p, 0, false);
    const char *fns[2] = {"static inline float clf_load_k(", "static inline float clf_load_v("};
    for (int f = 0; f < 2; f++) {
        const char *fn = strstr(c.source, fns[f]);
        ck_assert_ptr_nonnull(fn);
        const char *end = strstr(fn, "\n}\n");
        ck_assert_ptr_nonnull(end);
        char body[2048];
        snprintf(body, sizeof body, "%.*s", (int)(end - fn), fn);
        ck_assert_msg(!strstr(body, "/ 2368u") && !strstr(body, "% 37u"), "%s", body);
        ck_assert_msg(strstr(body, " * 6400u + "), "%s", body);
    }
    clf__kernel_code_free(&c);
    clf__plan_free(&p);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(attention_tensor_cores_where_the_operands_allow)
{
    /* The tensor-core form (inline PTX mma.sync) for f16 and bf16 q, k, v
     * on a target with tensor cores; its source is marked so that a
     * driver's refusal lowers again (clf__codegen_uses_inline_ptx). f32
     * operands, other GPUs and CPUs keep the FMA forms. K and V rows are
     * staged by 16-byte loads when they lie in their buffers as they are
     * (a head broadcast over a batch axis too: GQA), through the generated
     * loads when their rows are not whole 16-byte pieces. */
    clf__codegen_target tc = {.cpu = false, .max_local = 1024, .compute_units = 132, .local_mem = 49152,
                              .warp_shuffle = true, .tensor_cores = true},
                        gpu = {.cpu = false, .max_local = 1024, .compute_units = 132, .local_mem = 49152},
                        cpu = {.cpu = true, .max_local = 4096, .compute_units = 2};
    const char *form = NULL;
    char *src = attention_source(CLF_F16, 64, false, &tc, &form);
    ck_assert_str_eq(form, "tensor-cores");
    ck_assert(clf__codegen_uses_inline_ptx(src));
    ck_assert_ptr_nonnull(strstr(src, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"));
    ck_assert_ptr_nonnull(strstr(src, "#define MMA_BF16 0"));
    ck_assert_ptr_nonnull(strstr(src, "#define CLF_HAVE_STAGE_K 1"));
    ck_assert_ptr_nonnull(strstr(src, "#define CLF_HAVE_STAGE_V 1"));
    /* Its logits stay in f32: the scores are not rounded to f16. */
    ck_assert(!logit_rounds(src));
    free(src);
    src = attention_source(CLF_BF16, 80, true, &tc, &form);
    ck_assert_str_eq(form, "tensor-cores");
    ck_assert_ptr_nonnull(strstr(src, "#define MMA_BF16 1"));
    ck_assert_ptr_nonnull(strstr(src, "#define CLF_HAVE_STAGE_K 1")); /* the shared head read by index */
    free(src);
    src = attention_source(CLF_F16, 36, false, &tc, &form); /* rows of 36: not whole 16-byte pieces */
    ck_assert_str_eq(form, "tensor-cores");
    ck_assert_ptr_null(strstr(src, "#define CLF_HAVE_STAGE_K 1"));
    ck_assert_ptr_null(strstr(src, "#define CLF_HAVE_STAGE_V 1"));
    free(src);
    /* f32: the FMA form, its rows' maxima and sums by warp shuffles where
     * the target has them (marked as such, not as mma). */
    src = attention_source(CLF_F32, 64, false, &tc, &form);
    ck_assert_str_eq(form, "gpu");
    ck_assert_uint_eq(clf__codegen_inline_ptx_forms(src), CLF__PTX_SHUFFLES);
    free(src);
    src = attention_source(CLF_F16, 64, false, &gpu, &form);
    ck_assert_str_eq(form, "gpu");
    ck_assert(!clf__codegen_uses_inline_ptx(src));
    ck_assert(logit_rounds(src));
    free(src);
    src = attention_source(CLF_F16, 64, false, &cpu, &form);
    ck_assert_str_eq(form, "cpu");
    free(src);
}
END_TEST

/* Attention's heads merged back to [B, S, H*D] and fed to a projection:
 * the attention kernel stores them at permuted positions (not at the
 * product's own index i), and the projection's operand is a plain buffer,
 * loaded as float4 tiles on GPUs. */
START_TEST(permuted_store_feeds_a_plain_operand)
{
    clf__codegen_target gpu = {.cpu = false, .max_local = 1024, .compute_units = 132, .local_mem = 49152};
    clf_graph *g = clf_graph_create();
    int64_t qs[4] = {2, 4, 16, 32}, flat[3] = {2, 16, 128};
    clf_tensor q = clf_input(g, "q", CLF_F32, 4, qs), k = clf_input(g, "k", CLF_F32, 4, qs),
               v = clf_input(g, "v", CLF_F32, 4, qs);
    clf_tensor o = clf_attention(g, q, k, v, CLF_TENSOR_INVALID, 0, false);
    clf_tensor m = clf_reshape(g, clf_transpose(g, o, 4, (int[]){0, 2, 1, 3}), 3, flat);
    clf_graph_output(g, "y", clf_matmul(g, m, clf_input(g, "w", CLF_F32, 2, (int64_t[]){128, 64})));
    clf__plan p = plan_of(g, true);
    ck_assert_uint_eq(p.nkernels, 2);
    char err[256];
    clf__kernel_code c;
    ck_assert(clf__codegen_kernel(g, &p, 0, &gpu, &c, err, sizeof err) == CLF_OK);
    const char *store = strstr(c.source, "static inline void clf_store(");
    ck_assert_ptr_nonnull(store);
    char plain[32];
    snprintf(plain, sizeof plain, "b%d[i] =", p.src_buffer[m.node]);
    ck_assert_msg(!strstr(store, plain) && strstr(store, "* 128u"), "%s", store);
    clf__kernel_code_free(&c);
    ck_assert(clf__codegen_kernel(g, &p, 1, &gpu, &c, err, sizeof err) == CLF_OK);
    ck_assert(c.schedule.vec_a);
    clf__kernel_code_free(&c);
    clf__plan_free(&p);
    clf_graph_destroy(&g);
}
END_TEST

/* The GEMM source of relu(a @ b + bias) for a of [m, k] (or, transposed,
 * k x m read through a transpose) and b of [k, n] (or n x k), of dtype
 * dt (a cast from f32 to dt when cast_a), batched over 3 when batched,
 * for target t; the kernel's code in *out (free with
 * clf__kernel_code_free). */
static void gemm_code(clf_dtype dt, int64_t m, int64_t n, int64_t k, bool ta, bool tb, bool cast_a, bool batched,
                      const clf__codegen_target *t, clf__kernel_code *out)
{
    clf_graph *g = clf_graph_create();
    int64_t as[3] = {3, ta ? k : m, ta ? m : k}, bs[3] = {3, tb ? n : k, tb ? k : n}, cs[1] = {n};
    int r = batched ? 3 : 2, off = batched ? 0 : 1;
    clf_tensor a = clf_input(g, "a", cast_a ? CLF_F32 : dt, r, as + off);
    clf_tensor b = clf_input(g, "b", dt, r, bs + off);
    if (cast_a)
        a = clf_cast(g, a, dt);
    const int swap3[3] = {0, 2, 1}, swap2[2] = {1, 0};
    if (ta)
        a = clf_transpose(g, a, r, batched ? swap3 : swap2);
    if (tb)
        b = clf_transpose(g, b, r, batched ? swap3 : swap2);
    clf_tensor y = clf_relu(g, clf_add(g, clf_matmul(g, a, b), clf_input(g, "bias", dt, 1, cs)));
    ck_assert_int_eq(clf_graph_output(g, "y", y), CLF_OK);
    clf__plan p = plan_of(g, true);
    ck_assert_uint_eq(p.nkernels, 1);
    char err[256] = "";
    ck_assert_msg(clf__codegen_kernel(g, &p, 0, t, out, err, sizeof err) == CLF_OK, "%s", err);
    clf__plan_free(&p);
    clf_graph_destroy(&g);
}

/* One-row products: the few-rows form (gemm_rows.cl) before the
 * tensor-core tiles, in static graphs and in those with symbolic sizes;
 * K cut into slices until four work-groups a compute unit, each slice two
 * loads a lane at least, its counters and sums in the kernel's own state.
 * 5 rows: the tensor-core tiles first. */
START_TEST(gemm_one_row_form_order_and_slices)
{
    clf__codegen_target tc = {.cpu = false, .max_local = 1024, .compute_units = 132, .local_mem = 49152,
                              .warp_shuffle = true, .tensor_cores = true};
    clf__codegen_target sym = tc, few = tc, plain = tc;
    sym.sizes_vary = true;
    few.compute_units = 2;
    plain.tensor_cores = false;
    clf__kernel_code c;

    /* 512 columns of f16: 8 blocks of 64, 32 slices of 64 k (32 lanes
     * along K, two loads each). */
    gemm_code(CLF_F16, 1, 512, 2048, false, false, false, false, &tc, &c);
    ck_assert_str_eq(c.schedule.form, "gpu-rows");
    ck_assert_uint_eq(c.schedule.split, 32);
    ck_assert_uint_eq(c.schedule.chunk, 64);
    ck_assert_uint_eq(c.local, 256);
    ck_assert_uint_eq(c.global, 8 * 32 * 256);
    ck_assert_uint_eq(c.state_bytes, (32 + 32 * 8 * 64) * 4);
    ck_assert_ptr_nonnull(strstr(c.source, "#define TN 64\n#define NT 256\n#define W 8\n#define CW 8\n#define U 4\n"
                                           "#define SPLIT 32\n#define KCH 64\n"));
    ck_assert_ptr_nonnull(strstr(c.source, "__global uint *restrict state"));
    clf__kernel_code_free(&c);
    /* 8192 columns: 128 blocks; 4 slices make 512 work-groups (under
     * 528), 8 make 1024. */
    gemm_code(CLF_F16, 1, 8192, 2048, false, false, false, false, &tc, &c);
    ck_assert_uint_eq(c.schedule.split, 8);
    ck_assert_uint_eq(c.schedule.chunk, 256);
    clf__kernel_code_free(&c);
    /* Enough work-groups without slices: no state. */
    gemm_code(CLF_F16, 1, 8192, 2048, false, false, false, false, &few, &c);
    ck_assert_str_eq(c.schedule.form, "gpu-rows");
    ck_assert_uint_eq(c.state_bytes, 0);
    ck_assert_ptr_nonnull(strstr(c.source, "#define SPLIT 1\n"));
    clf__kernel_code_free(&c);
    /* Symbolic sizes: the few-rows form first too. */
    gemm_code(CLF_F16, 1, 512, 2048, false, false, false, false, &sym, &c);
    ck_assert_str_eq(c.schedule.form, "gpu-rows");
    ck_assert_uint_ne(c.state_bytes, 0);
    clf__kernel_code_free(&c);
    /* There the slices do not follow K (SPLIT is read by #if, a literal
     * specialisations cannot share as a parameter): 32 over K = 600 as
     * over 2048, where a static graph gets 8 (two loads a lane at least). */
    gemm_code(CLF_F16, 1, 512, 600, false, false, false, false, &sym, &c);
    ck_assert_uint_eq(c.schedule.split, 32);
    clf__kernel_code_free(&c);
    gemm_code(CLF_F16, 1, 512, 600, false, false, false, false, &tc, &c);
    ck_assert_uint_eq(c.schedule.split, 8);
    clf__kernel_code_free(&c);
    /* 5 rows: the tensor-core tiles; without tensor cores, the few-rows
     * form (8 rows a work-group). */
    gemm_code(CLF_F16, 5, 512, 2048, false, false, false, false, &tc, &c);
    ck_assert_str_eq(c.schedule.form, "tensor-cores");
    clf__kernel_code_free(&c);
    gemm_code(CLF_F16, 5, 512, 2048, false, false, false, false, &plain, &c);
    ck_assert_str_eq(c.schedule.form, "gpu-rows");
    ck_assert_ptr_nonnull(strstr(c.source, "#define ROWS_MAX 8\n"));
    clf__kernel_code_free(&c);
    /* Work-groups of 32 (llvmpipe): a work-item sums a column's lanes, so
     * 32 columns a work-group, not the 64 of eight 16-bit loads (the
     * columns past the 32nd were never stored: CI's rusticl run). */
    clf__codegen_target narrow = plain;
    narrow.max_local = 32;
    gemm_code(CLF_BF16, 1, 36, 4096, false, false, false, false, &narrow, &c);
    ck_assert_str_eq(c.schedule.form, "gpu-rows");
    ck_assert_ptr_nonnull(strstr(c.source, "#define TN 32\n#define NT 32\n#define W 8\n#define CW 8\n"));
    clf__kernel_code_free(&c);
}
END_TEST

/* One-row products on the CPU form (gemm_cpu.cl, CLF_ONE_ROW): blocks of
 * about 2048 columns (of equal widths where N is known, 2048 whatever N
 * where sizes vary), K cut into slices until four work-items a compute
 * unit, each slice 256 values of K at least where K is known, their sums
 * in the executable's scratch for a second launch to add (a work-item a
 * vector of 16 columns). */
START_TEST(gemm_cpu_one_row_blocks_and_slices)
{
    clf__codegen_target cpu = {.cpu = true, .max_local = 4096, .compute_units = 16, .float_width = 16};
    clf__codegen_target sym = cpu, two = cpu;
    sym.sizes_vary = true;
    two.compute_units = 2;
    clf__kernel_code c;

    /* A decode step's gate/up product: 8 blocks of 2048, 8 slices of 256. */
    gemm_code(CLF_F16, 1, 16384, 2048, false, false, false, false, &cpu, &c);
    ck_assert_str_eq(c.schedule.form, "cpu-one-row");
    ck_assert_int_eq(c.schedule.tiles.tn, 2048);
    ck_assert_uint_eq(c.schedule.split, 8);
    ck_assert_uint_eq(c.schedule.chunk, 256);
    ck_assert_uint_eq(c.global, 64);
    ck_assert_uint_eq(c.scratch_bytes, 8 * 8 * 2048 * 4);
    ck_assert_uint_eq(c.final_global, 8 * 2048 / 16);
    ck_assert_uint_eq(c.state_bytes, 0);
    ck_assert_ptr_nonnull(c.final_name);
    ck_assert_ptr_nonnull(
        strstr(c.source, "#define CLF_ONE_ROW 1\n#define ONE_ROW_SPLIT 8\n#define ONE_ROW_KCH 256\n"));
    char final_line[256];
    snprintf(final_line, sizeof final_line, "#define CLF_FINAL_NAME %s\n", c.final_name);
    ck_assert_ptr_nonnull(strstr(c.source, final_line));
    clf__kernel_code_free(&c);
    /* Its down projection: one block, 32 slices (the most); the output
     * projection, K = 2048: 8 slices of 256. */
    gemm_code(CLF_F16, 1, 2048, 8192, false, false, false, false, &cpu, &c);
    ck_assert_uint_eq(c.schedule.split, 32);
    ck_assert_uint_eq(c.schedule.chunk, 256);
    clf__kernel_code_free(&c);
    gemm_code(CLF_F16, 1, 2048, 2048, false, false, false, false, &cpu, &c);
    ck_assert_uint_eq(c.schedule.split, 8);
    ck_assert_uint_eq(c.schedule.chunk, 256);
    clf__kernel_code_free(&c);
    /* N = 3072 in two equal blocks of 1536. */
    gemm_code(CLF_F16, 1, 3072, 2048, false, false, false, false, &cpu, &c);
    ck_assert_int_eq(c.schedule.tiles.tn, 1536);
    clf__kernel_code_free(&c);
    /* Enough blocks without slices on 2 compute units: one launch. */
    gemm_code(CLF_F16, 1, 16384, 2048, false, false, false, false, &two, &c);
    ck_assert_str_eq(c.schedule.form, "cpu-one-row");
    ck_assert_uint_eq(c.schedule.split, 1);
    ck_assert_uint_eq(c.scratch_bytes, 0);
    ck_assert_ptr_null(c.final_name);
    clf__kernel_code_free(&c);
    /* Short K in a static graph: no slice under 256 values. */
    gemm_code(CLF_F32, 1, 256, 500, false, false, false, false, &cpu, &c);
    ck_assert_uint_eq(c.schedule.split, 1);
    clf__kernel_code_free(&c);
    /* Sizes vary: blocks of 2048 whatever N, and slices that do not follow
     * K (ONE_ROW_SPLIT is read by #if): 32 over K = 100 as over 8192. */
    gemm_code(CLF_F32, 1, 3072, 100, false, false, false, false, &sym, &c);
    ck_assert_int_eq(c.schedule.tiles.tn, 2048);
    ck_assert_uint_eq(c.schedule.split, 32);
    clf__kernel_code_free(&c);
    gemm_code(CLF_F32, 1, 2048, 8192, false, false, false, false, &sym, &c);
    ck_assert_uint_eq(c.schedule.split, 32);
    clf__kernel_code_free(&c);
}
END_TEST

START_TEST(gemm_tensor_cores_where_the_operands_allow)
{
    /* The tensor-core form (gemm_mma.cl) for f16 and bf16 operands on a
     * target with tensor cores, its source marked for the fallback; raw
     * 16-byte stages of operands that lie in their buffers as they are
     * (rows of a multiple of 8 values: A's k, B's n; transposed, the
     * underlying rows), the generated loads otherwise (a prologue, odd
     * rows). f32 operands, other GPUs, CPUs, small work-groups and a
     * pinned tiling keep the portable forms. (Operands of two dtypes are
     * refused by the builder; casting one makes both the same.) */
    clf__codegen_target tc = {.cpu = false, .max_local = 1024, .compute_units = 132, .local_mem = 49152,
                              .warp_shuffle = true, .tensor_cores = true};
    clf__codegen_target gpu = tc, cpu = tc, small = tc, pinned = tc;
    gpu.tensor_cores = false;
    cpu.cpu = true;
    small.max_local = 64;
    clf__gemm_config pin = {.tm = 64, .tn = 64, .tk = 16, .wm = 4, .wn = 4};
    pinned.gemm = &pin;
    clf__kernel_code c;
    char line[320];

    gemm_code(CLF_F16, 130, 64, 64, false, false, false, false, &tc, &c);
    ck_assert_str_eq(c.schedule.form, "tensor-cores");
    ck_assert_str_eq(c.schedule.tensor_cores, "mma.m16n8k16.f16");
    ck_assert_str_eq(c.name, "clf_gemm_tc_fused_add_relu_0");
    ck_assert(clf__codegen_uses_inline_ptx(c.source));
    ck_assert_ptr_nonnull(strstr(c.source, CLF__MMA_LINE));
    ck_assert_ptr_nonnull(strstr(c.source, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"));
    ck_assert_ptr_nonnull(strstr(c.source, "kernels_templates/gemm_mma.cl"));
    ck_assert_ptr_nonnull(strstr(c.source, "#define MMA_BF16 0\n"));
    ck_assert_ptr_nonnull(strstr(c.source, "#define CLF_HAVE_STAGE_A 1"));
    ck_assert_ptr_nonnull(strstr(c.source, "#define CLF_HAVE_STAGE_B 1"));
    ck_assert_ptr_nonnull(strstr(c.source, "clf_store(bt, m, n, acc"));
    ck_assert_uint_eq(c.local, 128);
    /* 130 x 64: 128 x 64 blocks would leave most units idle; halved, the
     * longer side first, down to 32 x 32 (5 x 2 blocks of four warps). */
    ck_assert_int_eq(c.schedule.tiles.tm, 32);
    ck_assert_int_eq(c.schedule.tiles.tn, 32);
    ck_assert(c.schedule.tiles.mma);
    ck_assert_uint_eq(c.global, 10 * 128);
    /* Raw operands are copied by cp.async (no registers between). */
    ck_assert_ptr_nonnull(strstr(c.source, "clf_stage_a_at(IDX_T bt"));
    ck_assert_ptr_nonnull(strstr(c.source, "cp.async.cg.shared.global"));
    ck_assert_ptr_nonnull(strstr(c.source, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"));
    ck_assert_ptr_nonnull(strstr(clf__schedule_str(&c, line, sizeof line), " tensor-cores=mma.m16n8k16.f16"));
    clf__kernel_code_free(&c);

    /* Large enough for 128-row blocks on every unit: eight warps of 64 x
     * 32 (work-groups of 256). */
    gemm_code(CLF_F16, 2048, 2048, 64, false, false, false, false, &tc, &c);
    ck_assert_int_eq(c.schedule.tiles.tm, 128);
    ck_assert_int_eq(c.schedule.tiles.tn, 128);
    ck_assert_uint_eq(c.local, 256);
    /* Two stages of padded rows (128 x 40 + 32 x 136 16-bit values: 37 KiB;
     * three would take 56). */
    ck_assert_ptr_nonnull(strstr(c.source, "#define FM 4\n#define FN 4\n#define WARPS_M 2\n#define WARPS_N 4\n"));
    ck_assert_ptr_nonnull(strstr(c.source, "#define STAGES 2\n"));
    ck_assert_ptr_nonnull(strstr(c.source, "#define STAGE_PAD 1\n"));
    clf__kernel_code_free(&c);
    /* Where work-groups of 256 are not allowed, four warps of 64 x 64. */
    clf__codegen_target tc128 = tc;
    tc128.max_local = 128;
    gemm_code(CLF_F16, 2048, 2048, 64, false, false, false, false, &tc128, &c);
    ck_assert_str_eq(c.schedule.form, "tensor-cores");
    ck_assert_int_eq(c.schedule.tiles.tm, 128);
    ck_assert_int_eq(c.schedule.tiles.tn, 128);
    ck_assert_uint_eq(c.local, 128);
    ck_assert_ptr_nonnull(strstr(c.source, "#define FM 4\n#define FN 8\n#define WARPS_M 2\n#define WARPS_N 2\n"));
    clf__kernel_code_free(&c);

    /* A pinned tensor-core tiling: eight warps of 32 x 32 in 128 x 64
     * blocks, three stages of padded rows as they fit (14.5 KiB each). */
    clf__gemm_config pin_tc = {.tm = 128, .tn = 64, .tk = 32, .wm = 32, .wn = 32, .mma = true};
    clf__codegen_target pinned_tc = tc;
    pinned_tc.gemm = &pin_tc;
    gemm_code(CLF_F16, 2048, 2048, 64, false, false, false, false, &pinned_tc, &c);
    ck_assert_str_eq(c.schedule.form, "tensor-cores");
    ck_assert_uint_eq(c.local, 256);
    ck_assert_uint_eq(c.global, 16 * 32 * 256);
    ck_assert_ptr_nonnull(strstr(c.source, "#define FM 2\n#define FN 4\n#define WARPS_M 4\n#define WARPS_N 2\n"));
    ck_assert_ptr_nonnull(strstr(c.source, "#define STAGES 3\n"));
    ck_assert_ptr_nonnull(strstr(c.source, "#define STAGE_PAD 1\n"));
    clf__kernel_code_free(&c);
    /* 128 x 256 blocks: two padded stages would take 53 KiB, so the
     * chunks are permuted (two stages of 48). */
    clf__gemm_config wide_tc = {.tm = 128, .tn = 256, .tk = 32, .wm = 64, .wn = 64, .mma = true};
    pinned_tc.gemm = &wide_tc;
    gemm_code(CLF_F16, 2048, 2048, 64, false, false, false, false, &pinned_tc, &c);
    ck_assert_str_eq(c.schedule.form, "tensor-cores");
    ck_assert_ptr_nonnull(strstr(c.source, "#define STAGES 2\n"));
    ck_assert_ptr_nonnull(strstr(c.source, "#define STAGE_PAD 0\n"));
    clf__kernel_code_free(&c);
    pinned_tc.gemm = &pin_tc;
    /* Tilings the form cannot take: the portable default. */
    clf__gemm_config bad_tc[] = {{96, 64, 32, 48, 32, true}, {256, 256, 32, 128, 64, true}, {128, 64, 16, 64, 32, true}};
    for (size_t i = 0; i < sizeof bad_tc / sizeof bad_tc[0]; i++) {
        pinned_tc.gemm = &bad_tc[i];
        gemm_code(CLF_F16, 2048, 2048, 64, false, false, false, false, &pinned_tc, &c);
        ck_assert_str_eq(c.schedule.form, "gpu-tiles");
        clf__kernel_code_free(&c);
    }
    pinned_tc.gemm = &pin_tc;
    /* A pinned tensor-core tiling f32 operands cannot take: their default
     * portable tiling. */
    gemm_code(CLF_F32, 2048, 2048, 64, false, false, false, false, &pinned_tc, &c);
    ck_assert_str_eq(c.schedule.form, "gpu-tiles");
    ck_assert(!c.schedule.tiles.mma);
    clf__kernel_code_free(&c);
    /* f32 operands on TF32 tensor cores where the target allows it: raw
     * 16-byte stages of 4 f32 values. */
    clf__codegen_target tf32 = tc;
    tf32.tf32 = true;
    gemm_code(CLF_F32, 130, 64, 64, false, false, false, false, &tf32, &c);
    ck_assert_str_eq(c.schedule.form, "tensor-cores");
    ck_assert_str_eq(c.schedule.tensor_cores, "mma.m16n8k8.tf32");
    ck_assert_ptr_nonnull(strstr(c.source, "#define MMA_TF32 1\n"));
    ck_assert_ptr_nonnull(strstr(c.source, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"));
    ck_assert_ptr_nonnull(strstr(c.source, "#define CLF_HAVE_STAGE_A 1"));
    ck_assert_ptr_nonnull(strstr(c.source, ") / 4;\n}"));
    clf__kernel_code_free(&c);
    /* ... and not without it (f16 operands keep their own form). */
    gemm_code(CLF_F32, 130, 64, 64, false, false, false, false, &tc, &c);
    ck_assert_str_eq(c.schedule.form, "gpu-tiles");
    clf__kernel_code_free(&c);
    gemm_code(CLF_F16, 130, 64, 64, false, false, false, false, &tf32, &c);
    ck_assert_str_eq(c.schedule.tensor_cores, "mma.m16n8k16.f16");
    ck_assert_ptr_nonnull(strstr(c.source, "#define MMA_TF32 0\n"));
    clf__kernel_code_free(&c);

    /* bf16, batched, transposed operands whose rows lie in their buffers:
     * raw stages of the underlying rows. */
    gemm_code(CLF_BF16, 24, 40, 48, true, true, false, true, &tc, &c);
    ck_assert_str_eq(c.schedule.form, "tensor-cores");
    ck_assert_str_eq(c.schedule.tensor_cores, "mma.m16n8k16.bf16");
    ck_assert_ptr_nonnull(strstr(c.source, "#define MMA_BF16 1\n"));
    ck_assert_ptr_nonnull(strstr(c.source, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"));
    ck_assert_ptr_nonnull(strstr(c.source, "#define A_K_FAST 0\n#define B_N_FAST 0\n"));
    ck_assert_ptr_nonnull(strstr(c.source, "#define CLF_HAVE_STAGE_A 1")); /* rows of 24 m */
    ck_assert_ptr_nonnull(strstr(c.source, "#define CLF_HAVE_STAGE_B 1"));
    ck_assert_ptr_nonnull(strstr(c.source, "#define FM 1\n"));
    clf__kernel_code_free(&c);

    /* Odd rows and a prologue (a cast): the generated loads. */
    gemm_code(CLF_F16, 70, 17, 70, false, false, true, false, &tc, &c);
    ck_assert_str_eq(c.schedule.form, "tensor-cores");
    ck_assert_ptr_null(strstr(c.source, "#define CLF_HAVE_STAGE_A 1"));
    ck_assert_ptr_null(strstr(c.source, "#define CLF_HAVE_STAGE_B 1"));
    clf__kernel_code_free(&c);

    const clf__codegen_target *portable[] = {&gpu, &small, &pinned};
    for (size_t i = 0; i < 3; i++) {
        gemm_code(CLF_F16, 130, 64, 64, false, false, false, false, portable[i], &c);
        ck_assert_str_eq(c.schedule.form, "gpu-tiles");
        ck_assert(!clf__codegen_uses_inline_ptx(c.source));
        clf__kernel_code_free(&c);
    }
    gemm_code(CLF_F16, 130, 64, 64, false, false, false, false, &cpu, &c);
    ck_assert_str_eq(c.schedule.form, "cpu-blocks");
    ck_assert(!clf__codegen_uses_inline_ptx(c.source));
    clf__kernel_code_free(&c);
    gemm_code(CLF_F32, 130, 64, 64, false, false, false, false, &tc, &c);
    ck_assert_str_eq(c.schedule.form, "gpu-tiles");
    ck_assert(!clf__codegen_uses_inline_ptx(c.source));
    clf__kernel_code_free(&c);
}
END_TEST

/* Kernel-local names (canonical_names.c) are not looked for in the
 * template a source ends with: no template may have an identifier of a
 * generated name's form outside comments and strings, and text after the
 * template's marker is copied as it is. */
START_TEST(templates_have_no_generated_names)
{
    const char *const templates[] = {clf__template_pointwise,      clf__template_reduction_cpu,
                                     clf__template_reduction_gpu,  clf__template_reduction_split,
                                     clf__template_gemm,           clf__template_gemm_cpu,
                                     clf__template_gemm_mma,       clf__template_gemm_rows,
                                     clf__template_attention_cpu,  clf__template_attention_gpu,
                                     clf__template_attention_mma,  clf__template_attention_decode,
                                     clf__template_mma_sync,       clf__template_erf,
                                     clf__template_row_stats};
    for (size_t i = 0; i < sizeof templates / sizeof *templates; i++) {
        const char *n = clf__cg_generated_name(templates[i]);
        ck_assert_msg(!n, "template %zu has a generated name's form: %.20s", i, n);
    }
    /* The storage floats' helpers every f16/bf16 kernel carries (written
     * once into a fixed buffer): whole, and no generated names either. */
    const char *sf = clf__cg_storage_floats();
    ck_assert_ptr_null(clf__cg_generated_name(sf));
    ck_assert_msg(strlen(sf) > 4000 && strlen(sf) < 8000, "%zu bytes", strlen(sf));
    ck_assert_ptr_nonnull(strstr(sf, "clf_round_f16_16(float16 x)"));
    const char *last = "static inline ushort clf_bf16_bits(float x) { return (ushort)(as_uint(x) >> 16); }\n";
    ck_assert_str_eq(sf + strlen(sf) - strlen(last), last);
    const char *probe = "/* b3 s_4 */ x = \"c_5\" + 1e5f + .5e-2 + b12; v_7";
    ck_assert_ptr_eq(clf__cg_generated_name(probe), strstr(probe, "b12"));
    /* Sources are texts (util/text.h): the renamed source is a new one. */
    const char *text = "float b7 = s_9;\n/* ---- kernels_templates/t.cl ---- */\nb7 s_9\n";
    const char *src = clf__text_new(text, strlen(text));
    ck_assert_ptr_nonnull(src);
    const uint32_t params[] = {7}, nodes[] = {9};
    ck_assert(clf__cg_canonical_names(params, 1, nodes, 1, &src));
    ck_assert_str_eq(src, "float b0 = s_0;\n/* ---- kernels_templates/t.cl ---- */\nb7 s_9\n");
    ck_assert_uint_eq(clf__text_len(src), strlen(src));
    clf__text_release(src);
    /* A constant text (the storage floats' helpers) inside the generated
     * part is passed over, and the names after it renamed. */
    const char *head = "float b7;\n", *tail = "b7 s_9;\n/* ---- kernels_templates/t.cl ---- */\nb7\n";
    char *with = malloc(strlen(head) + strlen(sf) + strlen(tail) + 1);
    char *want = malloc(strlen(head) + strlen(sf) + strlen(tail) + 1);
    ck_assert(with && want);
    sprintf(with, "%s%s%s", head, sf, tail);
    sprintf(want, "float b0;\n%sb0 s_0;\n/* ---- kernels_templates/t.cl ---- */\nb7\n", sf);
    const char *with_text = clf__text_new(with, strlen(with));
    ck_assert_ptr_nonnull(with_text);
    ck_assert(clf__cg_canonical_names(params, 1, nodes, 1, &with_text));
    ck_assert_str_eq(with_text, want);
    clf__text_release(with_text);
    free(with);
    free(want);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("codegen");
    TCase *tc = tcase_create("plan_and_source");
    tcase_add_test(tc, chain_plan_and_name);
    tcase_add_test(tc, alignment_walk_cap_refuses_merges);
    tcase_add_test(tc, empty_rows_plan_generates);
    tcase_add_test(tc, wide_index_over_2_31);
    tcase_add_test(tc, movement_chain_is_index_arithmetic);
    tcase_add_test(tc, multi_output_and_shapes);
    tcase_add_test(tc, deep_chain_is_cut);
    tcase_add_test(tc, cycle_is_refused);
    tcase_add_test(tc, literals_are_exact);
    tcase_add_test(tc, cpu_reduction_vector_loop);
    tcase_add_test(tc, gpu_lanes_of_a_warp_combine_by_shuffles);
    tcase_add_test(tc, rows_of_rank_3_and_4_in_both_forms);
    tcase_add_test(tc, gemm_default_tiles_fit_small_products);
    tcase_add_test(tc, cpu_gemm_default_blocks);
    tcase_add_test(tc, cpu_gemm_packs_an_operand_with_a_prologue);
    tcase_add_test(tc, index_unit_stride);
    tcase_add_test(tc, cpu_attention_reads_a_gqa_head_in_vectors);
    tcase_add_test(tc, cpu_attention_logits_of_a_key_group_in_vectors);
    tcase_add_test(tc, schedules_name_their_choices);
    tcase_add_test(tc, reduction_schedule_from_facts);
    tcase_add_test(tc, pointwise_schedule_from_facts);
    tcase_add_test(tc, gemm_schedule_from_facts);
    tcase_add_test(tc, attention_schedule_from_facts);
    tcase_add_test(tc, attention_tensor_cores_where_the_operands_allow);
    tcase_add_test(tc, permuted_store_feeds_a_plain_operand);
    tcase_add_test(tc, gemm_tensor_cores_where_the_operands_allow);
    tcase_add_test(tc, gemm_one_row_form_order_and_slices);
    tcase_add_test(tc, gemm_cpu_one_row_blocks_and_slices);
    tcase_add_test(tc, cache_view_loads_need_no_division_by_the_length);
    tcase_add_test(tc, templates_have_no_generated_names);
    suite_add_tcase(s, tc);
    return clf_test_run_suite(s);
}
