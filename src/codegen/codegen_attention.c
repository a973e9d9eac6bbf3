/* Writes the OpenCL C for one attention kernel of a plan (planner.h's
 * attention fields): softmax(logits(Q Kt)) V for every query row in one
 * pass over the keys, the scores and weights never stored. The generated
 * part is the operand loads through their prologues (clf_load_q,
 * clf_load_k, clf_load_v), the logits of one score (clf_logit: scale,
 * masks, casts) and the epilogue's stores of one output element
 * (clf_store), with vector loads of K and V rows for the CPU form and
 * 16-byte raw stages of them for the tensor-core and decode forms where
 * they are 16-bit buffers read by index arithmetic alone; the template holds the online softmax:
 * kernels_templates/attention_cpu.cl (a work-item per block of query
 * rows, vectors along D), attention_gpu.cl (a work-group per block of
 * query rows, K and V tiles through local memory), attention_mma.cl (the
 * same on NVIDIA's tensor cores for f16/bf16 operands) or, for a few query
 * rows over many keys on a GPU, attention_decode.cl (the keys cut into
 * chunks over work-groups, the last of a row's to finish combining the
 * row's chunks). */
#include "codegen/codegen.h"
#include "util/alloc.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "codegen/codegen_expr.h"
#include "codegen/codegen_product.h"
#include "codegen/schedule.h"
#include "codegen/templates.h"
#include "util/strbuf.h"
#include "util/text.h"

/* The scores at the element the logits are evaluated at are `acc`, the
 * accumulated dot product (rounded to the scores' dtype, unless the
 * function keeps storage floats in f32: the tensor-core form). */
#define logits_product clf__cg_product_acc

/* Emits "static inline float clf_logit(IDX_T bt, IDX_T m, IDX_T n, float
 * acc, CLF_PARAMS)": the logits at query m, key n of batch bt whose
 * scores are acc. Causal: asked only at keys the mask keeps, so its WHERE
 * is evaluated as the input it keeps (no load of the mask, whose rows lie
 * SK bytes apart across a work-group's query rows). */
static bool emit_logit(const clf_graph *g, const clf__plan *plan, uint32_t k, bool f32, clf__strbuf *src)
{
    const clf__plan_kernel *K = &plan->kernels[k];
    const clf__node *T = clf__graph_node(g, K->attention.logits);
    clf__cg_hooks hooks = {.load = clf__cg_load_direct, .product = logits_product};
    clf__cg_fn F;
    clf__cg_fn_init(&F, g, plan, k, &hooks);
    F.no_round = f32;
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

/* Whether the logits are the scores times one positive constant at every
 * key the kernel evaluates them at: from the logits back to the scores,
 * only float casts (the tensor-core form keeps its logits in f32, casts
 * and all), MUL or DIV by a positive finite scalar literal and the causal
 * node's kept input; *scale gets the product of the factors (a DIV's
 * taken as its reciprocal). The tensor-core form then folds the scale
 * into its exp2 constant (LOGIT_SCALE in attention_mma.cl). */
static bool logit_plain_scale(const clf_graph *g, const clf__plan_kernel *K, double *scale)
{
    const clf__plan_attention *A = &K->attention;
    double s = 1.0;
    uint32_t id = A->logits;
    for (int steps = 0; id != A->scores; steps++) {
        const clf__node *n = clf__graph_node(g, id);
        if (steps > 16)
            return false;
        if (A->causal && id == A->causal_where) {
            id = n->inputs[A->causal_keep];
            continue;
        }
        if (n->op == CLF__OP_CAST && clf__dtype_is_float(n->dtype)) {
            id = n->inputs[0];
            continue;
        }
        if (n->op != CLF__OP_MUL && n->op != CLF__OP_DIV)
            return false;
        /* The factor: a scalar literal (through movement ops) on the
         * other side; a DIV's only as its divisor. */
        int side = -1;
        double v = 0.0;
        for (int i = n->op == CLF__OP_DIV ? 1 : 0; i < 2 && side < 0; i++)
            if (clf__plan_literal_float(g, n->inputs[i], &v))
                side = i;
        if (side < 0 || !(v > 0.0) || isinf(v))
            return false;
        s = n->op == CLF__OP_DIV ? s / v : s * v;
        id = n->inputs[1 - side];
    }
    /* (as the kernel's f32 literal: neither 0 nor infinite) */
    if (!((float)s > 0.0f) || isinf((float)s))
        return false;
    *scale = s;
    return true;
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

    /* The schedule (schedule.h): the form, its tiles, its launch. */
    const clf_dtype q16 = Q->dtype, k16 = clf__graph_node(g, SC->inputs[1])->dtype,
                    v16 = clf__graph_node(g, O->inputs[1])->dtype;
    const clf_dtype k_stage = clf__cg_stage16_dtype(g, plan, k, SC, 1, true, false),
                    v_stage = clf__cg_stage16_dtype(g, plan, k, O, 1, false, false);
    const clf__attention_facts facts = {
        .batch = batch, .sq = sq, .sk = sk, .d = d, .dv = dv, .numel = (uint64_t)K->numel,
        .mma16 = q16 == k16 && q16 == v16 && (q16 == CLF_F16 || q16 == CLF_BF16) ? q16 : CLF_F32,
        .kv16 = k_stage == v_stage && k_stage != CLF_BOOL};
    clf__attention_schedule as;
    if ((st = clf__schedule_attention(&facts, target, k, &as, err, errlen)) != CLF_OK)
        goto done;
    st = CLF_ERR_OUT_OF_MEMORY;
    const bool decode = as.decode;
    const clf__attention_decode G = as.G;
    const clf_dtype mma = as.mma;
    const int vw = as.vw;

    uint64_t space = (uint64_t)clf__node_numel(SC) > (uint64_t)K->numel ? (uint64_t)clf__node_numel(SC)
                                                                         : (uint64_t)K->numel;
    /* The decode form indexes its chunks' states too. */
    if (decode && as.state_floats > space)
        space = as.state_floats;
    out->wide_index = clf__cg_wide_index(g, plan, K, space);
    st = clf__cg_emit_product_store(g, plan, k, &store_fn, err, errlen);
    if (st != CLF_OK)
        goto done;
    st = CLF_ERR_OUT_OF_MEMORY;
    if (!clf__cg_params(K, &out->params, &out->nparams))
        goto done;
    clf__strbuf nm = {0};
    clf__sb_puts(&nm, "clf_attention");
    out->entry = clf__sb_take(&nm);
    out->ops = clf__cg_op_list(g, K->ops, K->nops);
    if (!out->entry || !out->ops)
        goto done;

    clf__attention_launch(&facts, &as, target->cpu, out);

    clf__cg_source_header(&src, g, K, out->entry, out->ops);
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
    if (decode) {
        clf__sb_printf(&src,
                       "#define SPLIT %llu\n#define CHUNK %llu\n#define WG %llu\n#define VL %llu\n#define KG %llu\n"
                             "#define KP %llu\n#define VU %llu\n",
                       (unsigned long long)G.split, (unsigned long long)G.chunk, (unsigned long long)G.wg,
                       (unsigned long long)G.vl, (unsigned long long)G.kg, (unsigned long long)G.kp,
                       (unsigned long long)G.vu);
        if (G.wide)
            clf__sb_printf(&src, "#define DECODE_WIDE 1\n#define STAGE_BF16 %d\n", k_stage == CLF_BF16 ? 1 : 0);
        /* f16 stages converted by PTX cvt on NVIDIA's driver. */
        if (G.wide && k_stage == CLF_F16 && target->warp_shuffle)
            clf__sb_printf(&src, CLF__SHFL_LINE, 1);
    } else if (mma != CLF_F32) {
        clf__sb_printf(&src,
                       CLF__MMA_LINE "#define MMA_BF16 %d\n#define WARPS %d\n#define WROWS %d\n#define BKT %llu\n%s",
                       mma == CLF_BF16 ? 1 : 0, as.mma_warps, as.mma_rows, (unsigned long long)as.bkt,
                       as.mma_stages == 2 ? "#define STAGES 2\n" : "");
        double logit_scale;
        if (logit_plain_scale(g, K, &logit_scale)) {
            clf__sb_puts(&src, "#define LOGIT_SCALE ");
            clf__cg_literal(&src, CLF_F32, logit_scale);
            clf__sb_puts(&src, "\n");
        }
    } else if (!target->cpu) {
        clf__sb_printf(&src, "#define BQ %llu\n#define BK %llu\n#define TK %llu\n", (unsigned long long)as.bq,
                       (unsigned long long)as.bk, (unsigned long long)as.tk);
        /* The rows' maxima and sums across work-items by shuffles, exp2 by
         * ex2, on NVIDIA's driver. */
        if (target->warp_shuffle) {
            clf__sb_printf(&src, CLF__SHFL_LINE, 1);
            out->schedule.warp_shuffle = true;
        }
    }
    if (target->cpu)
        clf__sb_printf(&src, "#define VW %d\n#define CH %d\n#define RB %llu\n", vw, as.keys, (unsigned long long)as.rb);
    clf__cg_signature(&src, g, plan, out->entry, out->params, out->nparams, K->nreads);
    clf__cg_gather_defs(&src, g, plan, K);
    clf__sb_puts(&src, "\n");
    if (!clf__cg_emit_operand_load(g, plan, k, SC, 0, "clf_load_q", &src) ||
        !clf__cg_emit_operand_load(g, plan, k, SC, 1, "clf_load_k", &src) ||
        !clf__cg_emit_operand_load(g, plan, k, O, 1, "clf_load_v", &src) ||
        !emit_logit(g, plan, k, mma != CLF_F32, &src)) {
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
        /* A group's CH logits in vector code where they have a vector form
         * (CLF_LOGIT_VEC): lane by lane, f16 scores took two software
         * roundings to f16 a logit. */
        if (clf__cg_emit_product_value_vec(g, plan, k, SC, K->attention.logits,
                                           K->attention.causal ? K->attention.causal_where : UINT32_MAX,
                                           K->attention.causal ? K->attention.causal_keep : 0, as.keys, "clf_logit_v",
                                           &src))
            clf__sb_puts(&src, "#define CLF_LOGIT_VEC 1\n");
    }
    if (!target->cpu && !decode && mma == CLF_F32) {
        /* The FMA GPU form reads Q's, K's and V's rows four values a load
         * where D (DV) is a multiple of 4. */
        if (d % 4 == 0) {
            clf__cg_emit_operand_load_vec(g, plan, k, SC, 0, 1, 4, false, "clf_load_q", "clf_load_qv", &src);
            out->schedule.vec_a = clf__cg_emit_operand_load_vec(g, plan, k, SC, 1, 0, 4, false, "clf_load_k",
                                                                "clf_load_kv", &src);
            clf__sb_puts(&src, "#define GPU_VEC_QK 1\n");
        }
        if (dv % 4 == 0) {
            out->schedule.vec_b = clf__cg_emit_operand_load_vec(g, plan, k, O, 1, 1, 4, false, "clf_load_v",
                                                                "clf_load_vv", &src);
            clf__sb_puts(&src, "#define GPU_VEC_V 1\n");
        }
    }
    clf__sb_puts(&src, clf__sb_str(&store_fn));
    if (mma != CLF_F32 || (decode && G.wide)) {
        /* K reaches the scores transposed, V the output as it is; the
         * template asks for piece d8 of a row (values 8 d8 on), or its
         * address for cp.async (the tensor-core form's two stages). */
        const bool at = !decode && as.mma_stages == 2;
        clf__cg_emit_stage16(g, plan, k, SC, 1, true, false, "k", "IDX_T n, IDX_T d8", "n", "d8 * 8", !at, &src);
        clf__cg_emit_stage16(g, plan, k, O, 1, false, false, "v", "IDX_T n, IDX_T d8", "n", "d8 * 8", !at, &src);
    }
    const char *tname = target->cpu       ? "attention_cpu.cl"
                        : decode          ? "attention_decode.cl"
                        : mma != CLF_F32 ? "attention_mma.cl"
                                          : "attention_gpu.cl";
    if (mma != CLF_F32) {
        clf__sb_puts(&src, "/* ---- kernels_templates/mma_sync.cl ---- */\n");
        clf__sb_puts(&src, clf__template_mma_sync);
    }
    clf__sb_printf(&src, "/* ---- kernels_templates/%s ---- */\n", tname);
    clf__sb_puts(&src, target->cpu       ? clf__template_attention_cpu
                       : decode          ? clf__template_attention_decode
                       : mma != CLF_F32 ? clf__template_attention_mma
                                         : clf__template_attention_gpu);
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
    clf__sb_free(&store_fn);
    clf__sb_free(&src);
    return st;
}
