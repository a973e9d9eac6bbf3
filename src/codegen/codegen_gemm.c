/* Writes the OpenCL C for one GEMM kernel of a plan: the operand loads
 * with their prologues (clf_load_a, clf_load_b), the epilogue and stores
 * of one product element (clf_store), tile sizes for the device, prepended
 * to kernels_templates/gemm.cl (GPUs), gemm_mma.cl (tensor cores),
 * gemm_rows.cl (GPU products of a few rows) or gemm_cpu.cl (CPU devices). */
#include "codegen/codegen.h"
#include "util/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen_expr.h"
#include "codegen/codegen_product.h"
#include "codegen/schedule.h"
#include "codegen/templates.h"
#include "util/strbuf.h"
#include "util/text.h"

clf_status clf__codegen_gemm(const clf_graph *g, const clf__plan *plan, uint32_t k,
                             const clf__codegen_target *target, clf__kernel_code *out, char *err,
                             size_t errlen)
{
    const clf__plan_kernel *K = &plan->kernels[k];
    const clf__node *mm = clf__graph_node(g, K->anchor);
    clf__strbuf src = {0}, store_fn = {0};
    clf_status st = CLF_ERR_OUT_OF_MEMORY;
    uint32_t *named = NULL;
    memset(out, 0, sizeof *out);
    if (errlen)
        err[0] = '\0';

    /* The schedule (schedule.h): the form, its tiling, the CPU form's parts. */
    clf__gemm_facts facts;
    clf__gemm_facts_of(g, plan, k, &facts);
    clf__gemm_schedule gs;
    if ((st = clf__schedule_gemm(&facts, target, k, &gs, err, errlen)) != CLF_OK)
        goto done;
    st = CLF_ERR_OUT_OF_MEMORY;
    const int64_t M = facts.m, N = facts.n, KK = facts.k, batch = facts.batch;
    const clf__gemm_config cfg = gs.cfg;
    const clf__gemm_rows_form rows = gs.rows;
    const clf__mma_kind mma = gs.mma;
    const bool row_stats = facts.row_stats, a_k_fast = facts.a_k_fast, b_n_fast = facts.b_n_fast;
    const bool b_plain = facts.b_plain, b_plain_swapped = facts.b_plain_swapped;
    const bool pack_a = gs.pack_a, one_row = gs.one_row, cpu_blocks = gs.cpu_blocks, vec_a = gs.vec_a,
               vec_b = gs.vec_b;
    const int64_t span = gs.span;

    /* Index width: 32 bits when every extent touched fits in 31 bits. */
    out->wide_index = clf__cg_wide_index(g, plan, K, (uint64_t)K->numel);

    /* The epilogue: every store's value at the product's element i. */
    st = clf__cg_emit_product_store(g, plan, k, &store_fn, err, errlen);
    if (st != CLF_OK) {
        clf__sb_free(&store_fn);
        goto done;
    }
    st = CLF_ERR_OUT_OF_MEMORY;

    if (!clf__cg_params(K, &out->params, &out->nparams))
        goto done;

    /* Named after its form (clf_gemm_tc_ on the tensor cores) and what it
     * fused besides the product: clf_gemm_fused_add_relu_0. */
    named = clf__malloc((K->nops ? K->nops : 1) * sizeof *named);
    if (!named)
        goto done;
    uint32_t nnamed = 0;
    for (uint32_t i = 0; i < K->nops; i++)
        if (K->ops[i] != K->anchor)
            named[nnamed++] = K->ops[i];
    const char *prefix = rows.rows_max ? "clf_gemm_rows" : mma != CLF__MMA_NONE ? "clf_gemm_tc" : "clf_gemm";
    if (nnamed) {
        out->entry = clf__cg_kernel_name(g, named, nnamed, prefix);
    } else {
        clf__strbuf nm = {0};
        clf__sb_puts(&nm, prefix);
        out->entry = clf__sb_take(&nm);
    }
    out->ops = clf__cg_op_list(g, K->ops, K->nops);
    if (!out->entry || !out->ops)
        goto done;

    clf__gemm_launch(&facts, &gs, target->cpu, out);
    clf__cg_source_header(&src, g, K, out->entry, out->ops);
    clf__sb_printf(&src, "#define IDX_T %s\n", out->wide_index ? "ulong" : "uint");
    clf__sb_printf(&src, "#define M %lld\n#define N %lld\n#define K %lld\n#define BATCH %lld\n", (long long)M,
                   (long long)N, (long long)KK, (long long)batch);
    if (rows.rows_max) {
        clf__sb_printf(&src,
                       "#define ROWS_MAX %d\n#define B_SHARED %d\n#define B_N_FAST %d\n#define TN %d\n#define NT %d\n"
                       "#define W %d\n#define CW %d\n#define U %d\n#define SPLIT %d\n#define KCH %lld\n",
                       rows.rows_max, rows.b_shared ? 1 : 0, b_n_fast ? 1 : 0, rows.tn, rows.nt, rows.w, rows.cw,
                       rows.u, rows.split, (long long)rows.kch);
    } else if (mma != CLF__MMA_NONE) {
        clf__sb_printf(&src,
                       CLF__MMA_LINE "#define MMA_BF16 %d\n#define MMA_TF32 %d\n#define FM %d\n#define FN %d\n#define WARPS_M %d\n"
                                     "#define WARPS_N %d\n#define A_K_FAST %d\n#define B_N_FAST %d\n"
                                     "#ifndef STAGES /* build options may try others */\n#define STAGES %d\n#endif\n"
                                     "#ifndef STAGE_PAD\n#define STAGE_PAD %d\n#endif\n",
                       mma == CLF__MMA_BF16 ? 1 : 0, mma == CLF__MMA_TF32 ? 1 : 0, cfg.wm / 16, cfg.wn / 8, cfg.tm / cfg.wm, cfg.tn / cfg.wn,
                       a_k_fast ? 1 : 0, b_n_fast ? 1 : 0, gs.stages, gs.pad ? 1 : 0);
    } else {
        clf__sb_printf(&src, "#define TM %d\n#define TN %d\n#define TK %d\n#define WM %d\n#define WN %d\n", cfg.tm,
                       cfg.tn, cfg.tk, cfg.wm, cfg.wn);
        /* Whether M is a multiple of the tile's rows, as a literal of its
         * own so that the templates' #if does not read M: M then appears
         * only in code, where a graph with symbolic sizes passes it as an
         * argument (runtime/source_lift.h). */
        clf__sb_printf(&src, "#define M_WHOLE_TILES %d\n", M % cfg.tm == 0 ? 1 : 0);
        clf__sb_printf(&src, "#define A_K_FAST %d\n#define B_N_FAST %d\n#define VEC_A %d\n#define VEC_B %d\n",
                       a_k_fast ? 1 : 0, b_n_fast ? 1 : 0, vec_a ? 1 : 0, vec_b ? 1 : 0);
    }
    clf__cg_signature(&src, g, plan, out->entry, out->params, out->nparams, K->nreads);
    clf__cg_gather_defs(&src, g, plan, K);
    clf__sb_puts(&src, "\n");

    /* Row statistics of A's prologue (planner.c): computed by each block
     * (gemm_cpu.cl) or work-group (row_stats.cl) for its rows. */
    if (row_stats && !clf__cg_emit_row_stats(g, plan, k, target->cpu, target->fp64, &src)) {
        snprintf(err, errlen, "codegen: kernel %u: out of memory or unsupported row statistics", k);
        goto done;
    }
    /* The CPU form evaluates A's prologue, where A has one (a norm's, an
     * activation's, a cast's), once per element of a block, not once per
     * micro-tile column: on 2 cores of PoCL the tiny GPT-2's MLP products
     * with their layer norms took 0.012 ms with A packed against
     * 0.018-0.020 reading it in place (100 runs, CLFUSE_LOGS=perf, two
     * rounds each); bench_decoder's down projection, whose A is
     * silu(gate) * up, took 3077 ms in place at a 512-row prefill against
     * 675 for the gate/up product of twice its flops. Even with one
     * micro-tile column a block (the tiny Llama's down projection, N =
     * 32) packing paid: the fixture's device time 0.048-0.052 ms against
     * 0.064-0.070 (2 cores, four alternating rounds; GPT-2 level). An
     * f32 A read as it lies is used in place (no copy); one in f16 is
     * packed, converted once (schedule_gemm.c's span). */
    if (pack_a)
        clf__sb_puts(&src, "#define CLF_PACK_A 1\n");
    if (one_row)
        clf__sb_printf(&src, "#define CLF_ONE_ROW 1\n#define ONE_ROW_SPLIT %d\n#define ONE_ROW_KCH %lld\n",
                       gs.one_row_split, (long long)gs.one_row_kch);
    if (gs.one_row_split > 1) {
        out->final_name = clf__cg_final_name(out->entry);
        if (!out->final_name)
            goto done;
        clf__sb_printf(&src, "#define CLF_FINAL_NAME %s\n", out->final_name);
    }
    if (span > 1)
        clf__sb_printf(&src, "#define CLF_SPAN %lld\n", (long long)span);
    if (!clf__cg_emit_operand_load(g, plan, k, mm, 0, "clf_load_a", &src) ||
        !clf__cg_emit_operand_load(g, plan, k, mm, 1, "clf_load_b", &src)) {
        snprintf(err, errlen, "codegen: kernel %u: out of memory or unsupported operand prologue", k);
        goto done;
    }
    /* Where the CPU form evaluates A's values into a block (packed, or a
     * row of one), its prologue in vectors along k when it has a vector
     * form (gemm_cpu.cl, CLF_A_VEC): 2 PoCL cores ran bench_decoder's
     * 512-row prefill down projection (A = silu(gate) * up, f16, 512 x
     * 8192 x 2048) in 87-88 ms against 106-109 with the scalar prologue,
     * and with 16 PoCL threads on them (two sub-blocks a block, so A's
     * prologue runs twice as often) 109 against 159. Not where the driver
     * ends loops early (schedule_gemm.c's loops_cut). */
    const int cpu_vw = gs.cpu_vw;
    if ((pack_a || one_row) && cpu_blocks &&
        clf__cg_emit_operand_prologue_vec(g, plan, k, mm, 0, cpu_vw, "clf_load_av", &src))
        clf__sb_printf(&src, "#define CLF_A_VEC %d\n", cpu_vw);
    if (rows.rows_max) {
        /* w of B's values a load: along its rows (n) as it lies, along K
         * where B is a transpose (aligned where the row length and the
         * start, a multiple of w, keep 16 bytes). */
        if (b_n_fast)
            clf__cg_emit_operand_load_vec(g, plan, k, mm, 1, 1, rows.w, b_plain && N % rows.w == 0, "clf_load_b",
                                          "clf_load_bv", &src);
        else
            clf__cg_emit_operand_load_vec(g, plan, k, mm, 1, 0, rows.w, b_plain_swapped && KK % rows.w == 0,
                                          "clf_load_b", "clf_load_bk", &src);
    } else if (mma != CLF__MMA_NONE) {
        /* A plain operand is staged along its rows (fast: A's k, B's n), a
         * transpose of a plain node along that node's rows (A's m, B's k);
         * the template checks a piece's row and first value against the
         * extents. */
        clf__cg_emit_stage16(g, plan, k, mm, 0, !a_k_fast, mma == CLF__MMA_TF32, "a", "IDX_T m, IDX_T k", a_k_fast ? "m" : "k",
                             a_k_fast ? "k" : "m", false, &src);
        clf__cg_emit_stage16(g, plan, k, mm, 1, !b_n_fast, mma == CLF__MMA_TF32, "b", "IDX_T k, IDX_T n", b_n_fast ? "k" : "n",
                             b_n_fast ? "n" : "k", false, &src);
    } else if (target->cpu) {
        clf__cg_emit_operand_load_vec(g, plan, k, mm, 1, 1, cpu_vw, false, "clf_load_b", "clf_load_bv", &src);
    } else {
        if (vec_a)
            clf__cg_emit_operand_load_vec(g, plan, k, mm, 0, 1, 4, true, "clf_load_a", "clf_load_a4", &src);
        if (vec_b)
            clf__cg_emit_operand_load_vec(g, plan, k, mm, 1, 1, 4, true, "clf_load_b", "clf_load_b4", &src);
    }

    clf__sb_puts(&src, clf__sb_str(&store_fn));
    /* The CPU form's epilogue a vector of columns at a time where it has a
     * vector form (gemm_cpu.cl, CLF_STORE_VEC): an activation's exp or erf
     * in vector code, the stores vector stores. The `mlp` block (1024 x
     * 512 x 2048 with bias and GELU, then back) on 2 PoCL cores: 20.8-21.3
     * ms against 22.2-24.3 (GELU one element at a time), 20.7-21.4 with
     * ReLU in its place. Not where the driver ends loops early. */
    if (cpu_blocks &&
        clf__cg_emit_product_store_vec(g, plan, k, cpu_vw, &src))
        clf__sb_puts(&src, "#define CLF_STORE_VEC 1\n");

    if (mma != CLF__MMA_NONE) {
        clf__sb_puts(&src, "/* ---- kernels_templates/mma_sync.cl ---- */\n");
        clf__sb_puts(&src, clf__template_mma_sync);
    }
    if (row_stats && !target->cpu) {
        clf__sb_puts(&src, "/* ---- kernels_templates/row_stats.cl ---- */\n");
        clf__sb_puts(&src, clf__template_row_stats);
    }
    clf__sb_printf(&src, "/* ---- kernels_templates/%s ---- */\n",
                   rows.rows_max     ? "gemm_rows.cl"
                   : target->cpu     ? "gemm_cpu.cl"
                   : mma != CLF__MMA_NONE ? "gemm_mma.cl"
                                     : "gemm.cl");
    clf__sb_puts(&src, rows.rows_max     ? clf__template_gemm_rows
                       : target->cpu     ? clf__template_gemm_cpu
                       : mma != CLF__MMA_NONE ? clf__template_gemm_mma
                                         : clf__template_gemm);
    if (!clf__sb_ok(&src))
        goto done;
    out->source = clf__text_take(&src);
    if (out->source)
        st = CLF_OK;

done:
    if (st == CLF_ERR_OUT_OF_MEMORY && !err[0])
        snprintf(err, errlen, "codegen: kernel %u: out of memory", k);
    if (st != CLF_OK)
        clf__kernel_code_free(out);
    clf__free(named);
    clf__sb_free(&store_fn);
    clf__sb_free(&src);
    return st;
}
