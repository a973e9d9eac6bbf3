/* Writes the OpenCL C for one attention kernel of a plan (planner.h's
 * attention fields): softmax(logits(Q Kt)) V for every query row in one
 * pass over the keys, the scores and weights never stored. The generated
 * part is the operand loads through their prologues (clf_load_q,
 * clf_load_k, clf_load_v), the logits of one score (clf_logit: scale,
 * masks, casts) and the epilogue's stores of one output element
 * (clf_store); the template holds the online softmax:
 * kernels_templates/attention_cpu.cl (a work-item per query row) or
 * attention_gpu.cl (a work-group per block of query rows, K and V tiles
 * through local memory). */
#include "codegen/codegen.h"
#include "util/alloc.h"
#include "util/pow2.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "codegen/codegen_expr.h"
#include "codegen/codegen_product.h"
#include "codegen/templates.h"
#include "util/strbuf.h"

/* The CPU form: keys a fold, rows a work-item (at most), and the
 * work-items a compute unit it keeps at least. On PoCL (AVX-512, 2 cores,
 * f32 B1 H8 S512 D64, one thread) 8 keys and 4 rows took 10.8 ms, 2 rows
 * 11.2, 1 row 12.3, 4 keys and 4 rows 12.5; f16 storage 13.4 ms with 4
 * rows, 19.9 with 1. */
#define CPU_CH 8
#define CPU_RB 4
#define CPU_ITEMS_PER_UNIT 4

/* The scores at the element the logits are evaluated at are `acc`, the
 * accumulated dot product (rounded to the scores' dtype). */
#define logits_product clf__cg_product_acc

/* Emits "static inline float clf_logit(IDX_T bt, IDX_T m, IDX_T n, float
 * acc, CLF_PARAMS)": the logits at query m, key n of batch bt whose
 * scores are acc. Causal: asked only at keys the mask keeps, so its WHERE
 * is evaluated as the input it keeps (no load of the mask, whose rows lie
 * SK bytes apart across a work-group's query rows). */
static bool emit_logit(const clf_graph *g, const clf__plan *plan, uint32_t k, clf__strbuf *src)
{
    const clf__plan_kernel *K = &plan->kernels[k];
    const clf__node *T = clf__graph_node(g, K->attention.logits);
    clf__cg_hooks hooks = {.load = clf__cg_load_direct, .product = logits_product};
    clf__cg_fn F;
    clf__cg_fn_init(&F, g, plan, k, &hooks);
    if (K->attention.causal) {
        /* The kernel asks for the logits only at keys the causal mask
         * keeps: there its WHERE is the kept input. */
        F.forward_node = K->attention.causal_where;
        F.forward_input = K->attention.causal_keep;
    }
    clf__view at = {.linear = true, .lin = clf__ix_i((uint64_t)clf__node_numel(T))};
    char *val = clf__strdup(clf__cg_value(&F, K->attention.logits, &at));
    bool ok = val && !F.failed && !F.ix->failed && clf__sb_ok(&F.idx_code) && clf__sb_ok(&F.body);
    if (ok) {
        clf__sb_puts(src, "static inline float clf_logit(IDX_T bt, IDX_T m, IDX_T n, float acc, CLF_PARAMS)\n{\n");
        clf__sb_puts(src, "    const IDX_T i = (bt * (IDX_T)SQ + m) * (IDX_T)SK + n;\n");
        clf__sb_printf(src, "%s%s    return %s;\n}\n\n", clf__sb_str(&F.idx_code), clf__sb_str(&F.body), val);
    }
    clf__free(val);
    clf__cg_fn_free(&F);
    return ok;
}

clf_status clf__codegen_attention(const clf_graph *g, const clf__plan *plan, uint32_t k,
                                  const clf__codegen_target *target, clf__kernel_code *out, char *err, size_t errlen)
{
    const clf__plan_kernel *K = &plan->kernels[k];
    const clf__node *O = clf__graph_node(g, K->anchor), *SC = clf__graph_node(g, K->attention.scores);
    const clf__node *Q = clf__graph_node(g, SC->inputs[0]);
    clf__strbuf src = {0}, store_fn = {0};
    clf_status st = CLF_ERR_OUT_OF_MEMORY;
    memset(out, 0, sizeof *out);
    if (errlen)
        err[0] = '\0';
    int r = O->rank;
    int64_t sq = SC->shape[r - 2], sk = SC->shape[r - 1], d = Q->shape[Q->rank - 1], dv = O->shape[r - 1];
    int64_t batch = 1;
    for (int a = 0; a < r - 2; a++)
        batch *= O->shape[a];

    /* The GPU form's tiles: BQ query rows a work-group (a power of two up
     * to 64 within the device's limit), BK keys of K and V a tile in local
     * memory (64, halved until both tiles, their rows padded to whole
     * float4s, take at most half of it). */
    size_t max_local = target->max_local ? target->max_local : 256;
    size_t local_mem = target->local_mem ? target->local_mem : 32768;
    uint64_t bq = clf__pow2_at_most(max_local < 64 ? max_local : 64);
    while (bq > 1 && bq / 2 >= (uint64_t)sq)
        bq /= 2;
    uint64_t bk = 64, row_floats = (uint64_t)((d + 3) / 4 * 4 + (dv + 3) / 4 * 4); /* rows padded to float4s */
    while (bk > 1 && bk * row_floats * sizeof(float) > local_mem / 2)
        bk /= 2;
    if (!target->cpu && row_floats * sizeof(float) > local_mem / 2) {
        snprintf(err, errlen, "codegen: kernel %u: attention with head size %lld + %lld does not fit local memory",
                 k, (long long)d, (long long)dv);
        st = CLF_ERR_UNSUPPORTED;
        goto done;
    }
    /* A few query rows over many keys (decode): the split-keys form, a
     * work-group of W per row, each work-item a share of the keys; W = 64,
     * halved until its W partial accumulators take at most half of local
     * memory. */
    bool split_keys = !target->cpu && sq <= 4 && sk >= 64;
    uint64_t w = clf__pow2_at_most(max_local < 64 ? max_local : 64);
    uint64_t dvp = (uint64_t)((dv + 3) / 4 * 4);
    while (w > 1 && w * (dvp + 2) * sizeof(float) > local_mem / 2)
        w /= 2;
    /* A driver that ends loops early (target->max_loop_trips): the sweep
     * over the keys is the longest loop. */
    if (target->max_loop_trips && (uint64_t)sk > target->max_loop_trips) {
        snprintf(err, errlen,
                 "kernel %u: attention over %lld keys needs loops of as many iterations; this driver ends every "
                 "loop after %llu (runtime/driver_quirks.h)",
                 k, (long long)sk, (unsigned long long)target->max_loop_trips);
        st = CLF_ERR_UNSUPPORTED;
        goto done;
    }

    uint64_t space = (uint64_t)clf__node_numel(SC) > (uint64_t)K->numel ? (uint64_t)clf__node_numel(SC)
                                                                         : (uint64_t)K->numel;
    out->wide_index = clf__cg_wide_index(g, plan, K, space);
    st = clf__cg_emit_product_store(g, plan, k, &store_fn, err, errlen);
    if (st != CLF_OK)
        goto done;
    st = CLF_ERR_OUT_OF_MEMORY;
    if (!clf__cg_params(K, &out->params, &out->nparams))
        goto done;
    clf__strbuf nm = {0};
    clf__sb_printf(&nm, "clf_attention_%u", k);
    out->name = clf__sb_take(&nm);
    out->ops = clf__cg_op_list(g, K->ops, K->nops);
    if (!out->name || !out->ops)
        goto done;

    /* The CPU form (attention_cpu.cl): vectors of the device's native
     * float width (16 on PoCL with AVX-512: 12.3 ms against 13.6 with 8
     * in the case above, 1 row; D128 18.7 against 24.1) along D and DV,
     * keys folded CPU_CH at a time, rows blocked CPU_RB a work-item, fewer
     * while that would leave under CPU_ITEMS_PER_UNIT work-items a compute
     * unit (decode: one row a head). */
    int vw = target->float_width >= 16 ? 16 : target->float_width == 0 || target->float_width >= 8 ? 8 : 4;
    uint64_t rb = CPU_RB, units = target->compute_units ? target->compute_units : 1;
    while (rb > 1 && (rb > (uint64_t)sq || (uint64_t)batch * (((uint64_t)sq + rb - 1) / rb) < CPU_ITEMS_PER_UNIT * units))
        rb /= 2;
    uint64_t rows = (uint64_t)batch * (uint64_t)sq;
    if (target->cpu) {
        out->local = 1;
        out->global = (size_t)((uint64_t)batch * (((uint64_t)sq + rb - 1) / rb));
    } else if (split_keys) {
        out->local = (size_t)w;
        out->global = (size_t)(rows * w);
    } else {
        out->local = (size_t)bq;
        out->global = (size_t)((uint64_t)batch * (((uint64_t)sq + bq - 1) / bq) * bq);
    }
    if (K->numel == 0)
        out->global = 0;
    out->vec = 1;
    out->items = 1;
    out->schedule = (clf__schedule){.form = target->cpu ? "cpu" : "gpu", .vec = target->cpu ? vw : 1,
                                    .wg = out->local, .online_softmax = true};
    if (split_keys) {
        out->schedule.form = "split-keys";
        out->schedule.lanes = w;
    } else if (!target->cpu) {
        out->schedule.tiles = (clf__gemm_config){.tm = (int)bq, .tn = (int)bk, .tk = (int)d, .wm = 1, .wn = (int)dv};
    }

    clf__cg_source_header(&src, g, K, out->name, out->ops);
    clf__sb_printf(&src, "#define IDX_T %s\n", out->wide_index ? "ulong" : "uint");
    clf__sb_printf(&src, "#define BATCH %lld\n#define SQ %lld\n#define SK %lld\n#define D %lld\n#define DV %lld\n",
                   (long long)batch, (long long)sq, (long long)sk, (long long)d, (long long)dv);
    clf__sb_puts(&src, "#define M SQ\n#define N DV\n");
    if (K->attention.causal) {
        clf__sb_printf(&src, "#define CAUSAL 1\n#define CAUSAL_OFFSET %lld\n#define CAUSAL_FILL_INF %d\n",
                       (long long)K->attention.causal_offset, isinf(K->attention.causal_fill) ? 1 : 0);
        clf__sb_puts(&src, "#define CAUSAL_FILL ");
        clf__cg_literal(&src, CLF_F32, isinf(K->attention.causal_fill) ? -1.0 : K->attention.causal_fill);
        clf__sb_puts(&src, "\n");
    } else {
        clf__sb_puts(&src, "#define CAUSAL 0\n");
    }
    clf__sb_printf(&src, "#define NAN_FILL %d\n", K->attention.has_nan_fill ? 1 : 0);
    if (K->attention.has_nan_fill) {
        clf__sb_puts(&src, "#define NAN_FILL_VALUE ");
        clf__cg_literal(&src, CLF_F32, K->attention.nan_fill);
        clf__sb_puts(&src, "\n");
    }
    if (!target->cpu)
        clf__sb_printf(&src, "#define BQ %llu\n#define BK %llu\n", (unsigned long long)bq, (unsigned long long)bk);
    if (split_keys)
        clf__sb_printf(&src, "#define SPLIT_KEYS 1\n#define W %llu\n", (unsigned long long)w);
    if (target->cpu)
        clf__sb_printf(&src, "#define VW %d\n#define CH %d\n#define RB %llu\n", vw, CPU_CH, (unsigned long long)rb);
    clf__cg_signature(&src, g, plan, out->name, out->params, out->nparams, K->nreads);
    clf__cg_gather_defs(&src, g, plan, K);
    clf__sb_puts(&src, "\n");
    if (!clf__cg_emit_operand_load(g, plan, k, SC, 0, "clf_load_q", &src) ||
        !clf__cg_emit_operand_load(g, plan, k, SC, 1, "clf_load_k", &src) ||
        !clf__cg_emit_operand_load(g, plan, k, O, 1, "clf_load_v", &src) || !emit_logit(g, plan, k, &src)) {
        snprintf(err, errlen, "codegen: kernel %u: out of memory or an attention operand it cannot load", k);
        st = CLF_ERR_INTERNAL;
        goto done;
    }
    if (target->cpu) {
        /* A vector of a K row is one of kT's columns: along its rows. */
        clf__cg_emit_operand_load_vec(g, plan, k, SC, 0, 1, vw, false, "clf_load_q", "clf_load_qv", &src);
        out->schedule.vec_a = clf__cg_emit_operand_load_vec(g, plan, k, SC, 1, 0, vw, false, "clf_load_k",
                                                            "clf_load_kv", &src);
        out->schedule.vec_b = clf__cg_emit_operand_load_vec(g, plan, k, O, 1, 1, vw, false, "clf_load_v",
                                                            "clf_load_vv", &src);
        out->schedule.rows = rb;
        out->schedule.keys = CPU_CH;
    }
    clf__sb_puts(&src, clf__sb_str(&store_fn));
    clf__sb_printf(&src, "/* ---- kernels_templates/%s ---- */\n", target->cpu ? "attention_cpu.cl" : "attention_gpu.cl");
    clf__sb_puts(&src, target->cpu ? clf__template_attention_cpu : clf__template_attention_gpu);
    if (!clf__sb_ok(&src))
        goto done;
    out->source = clf__sb_take(&src);
    if (out->source)
        st = CLF_OK;

done:
    if (st == CLF_ERR_OUT_OF_MEMORY && !err[0])
        snprintf(err, errlen, "codegen: kernel %u: out of memory", k);
    if (st != CLF_OK)
        clf__kernel_code_free(out);
    clf__sb_free(&store_fn);
    clf__sb_free(&src);
    return st;
}
