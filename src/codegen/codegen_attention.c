/* Writes the OpenCL C for one attention kernel of a plan (planner.h's
 * attention fields): softmax(logits(Q Kt)) V for every query row in one
 * pass over the keys, the scores and weights never stored. The generated
 * part is the operand loads through their prologues (clf_load_q,
 * clf_load_k, clf_load_v), the logits of one score (clf_logit: scale,
 * masks, casts) and the epilogue's stores of one output element
 * (clf_store), with vector loads of K and V rows for the CPU form and
 * 16-byte raw stages of them for the tensor-core form where they lie in
 * their buffers as they are; the template holds the online softmax:
 * kernels_templates/attention_cpu.cl (a work-item per block of query
 * rows, vectors along D), attention_gpu.cl (a work-group per block of
 * query rows, K and V tiles through local memory), attention_mma.cl (the
 * same on NVIDIA's tensor cores for f16/bf16 operands) or, for a few query
 * rows over many keys on a GPU, attention_decode.cl (the keys cut into
 * chunks over work-groups, the last of a row's to finish combining the
 * row's chunks). */
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
#include "util/text.h"

/* The CPU form: keys a fold, rows a work-item (at most), and the
 * work-items a compute unit it keeps at least. On PoCL (AVX-512, 2 cores,
 * f32 B1 H8 S512 D64, one thread) 8 keys and 4 rows took 10.8 ms, 2 rows
 * 11.2, 1 row 12.3, 4 keys and 4 rows 12.5; f16 storage 13.4 ms with 4
 * rows, 19.9 with 1. */
#define CPU_CH 8
#define CPU_RB 4
#define CPU_ITEMS_PER_UNIT 4

/* The scores at the element the logits are evaluated at are `acc`, the
 * accumulated dot product (rounded to the scores' dtype, unless the
 * function keeps storage floats in f32: the tensor-core form). */
#define logits_product clf__cg_product_acc

/* The decode form (attention_decode.cl) aims for this many work-groups a
 * compute unit: its sweep is bound by memory, which wants many loads in
 * flight on every unit. */
#define DECODE_GROUPS_PER_UNIT 8
/* Keys a chunk of the decode form: at least one pass of the work-group's
 * keys, at most 512 (its weights sit in local memory, and the states stay
 * a small part of the traffic). A work-group's time is a chain of rounds
 * of loads, each waiting on memory (the query, each piece of K, each
 * group of V's loads): on the H200 a chunk of 128 keys took about 30 us
 * whatever the number of chunks (32 heads over 128 keys, one chunk each:
 * 0.036 ms; over 1024, 8 chunks each: 0.020), so chunks are as short as
 * the device's fill allows and each round loads as much as it can. */
#define DECODE_CHUNK_MIN 64
#define DECODE_CHUNK_MAX 512

/* Columns of K a piece of the decode form's staging (kt, WG keys x KP
 * columns through local memory) at most: a warp's 32 work-items load
 * consecutive columns of one row; heads of up to 64 in one piece. */
#define DECODE_PIECE_MAX 64
/* Loads of V a work-item of the decode form issues before using them: as
 * the sweep over V is bound by how many loads wait on memory at once, a
 * chunk of 64 keys in two rounds where a work-item takes one column. */
#define DECODE_V_LOADS 32

/* The decode form's geometry for rows query rows over sk keys of d with
 * value rows of dv: wg work-items a work-group, vl of them across DV in
 * the weighted sum of V (kg = wg / vl groups of them take alternate keys),
 * split chunks of chunk keys a row; K staged in pieces of wg keys x kp
 * columns, V read vu keys at a time. local: the bytes of local memory the
 * split kernel takes (kp shrinks until they fit local_mem; 0 if they do
 * not fit even at kp 1). */
typedef struct decode_geometry {
    uint64_t wg, vl, kg, split, chunk, kp, vu, local;
} decode_geometry;

/* The split kernel's local memory: q (d rounded up to whole pieces), the
 * piece of K (rows padded by one float), the chunk's weights, and one
 * float a work-item for the reductions. */
static uint64_t decode_local_bytes(const decode_geometry *G, int64_t d)
{
    uint64_t dk = ((uint64_t)d + G->kp - 1) / G->kp * G->kp;
    return (dk + G->wg * (G->kp + 1) + G->chunk + G->wg) * sizeof(float);
}

static decode_geometry decode_geometry_of(const clf__codegen_target *target, uint64_t rows, int64_t sk, int64_t d,
                                          int64_t dv)
{
    decode_geometry G;
    const uint64_t lanes_max = clf__pow2_at_most(target->max_local ? target->max_local : 256);
    const uint64_t cus = target->compute_units ? target->compute_units : 1;
    const uint64_t local_mem = target->local_mem ? target->local_mem : 32768;
    /* A work-item per column of V up to 256 columns, and at least 64 so
     * that a chunk's logits take few passes. */
    const uint64_t dv2 = clf__pow2_at_least((uint64_t)dv);
    G.wg = dv2 < 64 ? 64 : dv2 > 256 ? 256 : dv2;
    if (G.wg > lanes_max)
        G.wg = lanes_max;
    G.vl = dv2 < G.wg ? dv2 : G.wg;
    G.kg = G.wg / G.vl;
    /* Enough chunks that rows x split work-groups fill the device, each a
     * whole number of passes of wg keys within the bounds above. */
    const uint64_t want = DECODE_GROUPS_PER_UNIT * cus, nrows = rows ? rows : 1;
    G.split = (want + nrows - 1) / nrows;
    uint64_t chunk = ((uint64_t)sk + G.split - 1) / G.split;
    chunk = (chunk + G.wg - 1) / G.wg * G.wg;
    const uint64_t lo = G.wg > DECODE_CHUNK_MIN ? G.wg : DECODE_CHUNK_MIN;
    G.chunk = chunk < lo ? lo : chunk > DECODE_CHUNK_MAX ? DECODE_CHUNK_MAX : chunk;
    G.split = ((uint64_t)sk + G.chunk - 1) / G.chunk;
    /* Pieces as wide as D up to DECODE_PIECE_MAX columns, narrower while
     * the local memory does not fit. */
    const uint64_t d2 = clf__pow2_at_least((uint64_t)d);
    G.kp = d2 < DECODE_PIECE_MAX ? d2 : DECODE_PIECE_MAX;
    while (G.kp > 1 && decode_local_bytes(&G, d) > local_mem)
        G.kp /= 2;
    G.local = decode_local_bytes(&G, d) <= local_mem ? decode_local_bytes(&G, d) : 0;
    /* DECODE_V_LOADS loads of V in flight: vu keys of dvl columns each. */
    const uint64_t dvl = ((uint64_t)dv + G.vl - 1) / G.vl;
    G.vu = DECODE_V_LOADS / dvl > 1 ? DECODE_V_LOADS / dvl : 2;
    return G;
}

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

/* The operands' 16-bit type when both products can run on the tensor
 * cores: Q, K and V all f16 or all bf16, on a target with them (else
 * CLF_F32: the f32 FMA forms). */
static clf_dtype mma_dtype(const clf_graph *g, const clf__node *SC, const clf__node *O,
                           const clf__codegen_target *target)
{
    clf_dtype q = clf__graph_node(g, SC->inputs[0])->dtype, k = clf__graph_node(g, SC->inputs[1])->dtype;
    clf_dtype v = clf__graph_node(g, O->inputs[1])->dtype;
    if (target->cpu || !target->tensor_cores || q != k || q != v || (q != CLF_F16 && q != CLF_BF16))
        return CLF_F32;
    return q;
}

/* Bytes of the tensor-core form's tiles of bkt keys: K as rows of dp16 + 8
 * 16-bit values, V transposed as dvp16 rows of bkt + 8. */
static uint64_t mma_tiles_bytes(uint64_t bkt, uint64_t dp16, uint64_t dvp16)
{
    return (bkt * (dp16 + 8) + dvp16 * (bkt + 8)) * 2;
}

bool clf__cg_attention_fits(const clf__codegen_target *target, int64_t batch, int64_t sq, int64_t sk, int64_t d,
                            int64_t dv, char *why, size_t cap)
{
    const uint64_t local_mem = target->local_mem ? target->local_mem : 32768;
    const uint64_t row_floats = (uint64_t)((d + 3) / 4 * 4 + (dv + 3) / 4 * 4); /* a key of K and V, float4s */
    if (!target->cpu && row_floats * sizeof(float) > local_mem / 2) {
        snprintf(why, cap, "a head of %lld + %lld floats does not fit the kernel's tiles in %llu bytes of local "
                 "memory", (long long)d, (long long)dv, (unsigned long long)local_mem);
        return false;
    }
    const bool decode = !target->cpu && sq <= 4 && sk >= 64;
    if (decode && decode_geometry_of(target, (uint64_t)batch * (uint64_t)sq, sk, d, dv).local == 0) {
        snprintf(why, cap, "a decode step's head of %lld floats does not fit %llu bytes of local memory",
                 (long long)d, (unsigned long long)local_mem);
        return false;
    }
    if (target->max_loop_trips && (uint64_t)sk > target->max_loop_trips) {
        snprintf(why, cap, "its sweep over %lld keys needs loops of as many iterations; this driver ends every "
                 "loop after %llu (runtime/driver_quirks.h)", (long long)sk,
                 (unsigned long long)target->max_loop_trips);
        return false;
    }
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
    /* (The planner asked clf__cg_attention_fits before it planned this
     * kernel; a plan made without asking is refused here.) */
    char unfit[200];
    if (!clf__cg_attention_fits(target, batch, sq, sk, d, dv, unfit, sizeof unfit)) {
        snprintf(err, errlen, "codegen: kernel %u: attention: %s", k, unfit);
        st = CLF_ERR_UNSUPPORTED;
        goto done;
    }
    /* A few query rows over many keys (decode): the keys split over
     * work-groups, then a combine (attention_decode.cl). */
    const uint64_t rows = (uint64_t)batch * (uint64_t)sq;
    const bool decode = !target->cpu && sq <= 4 && sk >= 64;
    const decode_geometry G = decode ? decode_geometry_of(target, rows, sk, d, dv) : (decode_geometry){0};
    /* The tensor-core form (attention_mma.cl): f16 or bf16 operands on a
     * target with mma.sync, eight warps a work-group (four where the
     * device allows fewer than 256 work-items), tiles of BKT keys (32 for
     * heads up to 64, else 64; halved while K's and V's tiles of 16-bit
     * values, rows padded, exceed 48 KiB, the static local memory a kernel
     * may take, or the device's), the next tile read while the current one
     * is multiplied. On the H200 (f16, B8 H16 S1024, medians of 50, one
     * call; full / causal at D = 64, then causal at D = 128, B4 H32): 4
     * warps, tiles of 64: 0.273 / 0.179, 0.351 ms without reading ahead,
     * 0.309 / 0.187, 0.352 with; 8 warps reading ahead: tiles of 64 0.255 /
     * 0.177, 0.313; tiles of 32 0.233 / 0.167, 0.342. */
    clf_dtype mma = decode || max_local < 128 || d > 256 || dv > 256 ? CLF_F32 : mma_dtype(g, SC, O, target);
    int mma_warps = max_local >= 256 ? 8 : 4;
    uint64_t bkt = d <= 64 ? 32 : 64, dp16 = (uint64_t)((d + 15) / 16 * 16), dvp16 = (uint64_t)((dv + 15) / 16 * 16);
    size_t mma_local = local_mem < 49152 ? local_mem : 49152;
    while (bkt > 16 && mma_tiles_bytes(bkt, dp16, dvp16) > mma_local)
        bkt /= 2;
    if (mma_tiles_bytes(bkt, dp16, dvp16) > mma_local)
        mma = CLF_F32;

    uint64_t space = (uint64_t)clf__node_numel(SC) > (uint64_t)K->numel ? (uint64_t)clf__node_numel(SC)
                                                                         : (uint64_t)K->numel;
    /* The decode form indexes its chunks' states too. */
    const uint64_t state_floats = rows * G.split * (uint64_t)(dv + 2);
    if (decode && state_floats > space)
        space = state_floats;
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

    /* The CPU form (attention_cpu.cl): vectors of the device's native
     * float width (16 on PoCL with AVX-512: 12.3 ms against 13.6 with 8
     * in the case above, 1 row; D128 18.7 against 24.1) along D and DV,
     * keys folded CPU_CH at a time, rows blocked CPU_RB a work-item, fewer
     * while that would leave under CPU_ITEMS_PER_UNIT work-items a compute
     * unit (decode: one row a head). */
    int vw = target->float_width >= 16 ? 16 : target->float_width == 0 || target->float_width >= 8 ? 8 : 4;
    uint64_t rb = CPU_RB, units = target->compute_units ? target->compute_units : 1;
    while (rb > 1 &&
           (rb > (uint64_t)sq || (uint64_t)batch * (((uint64_t)sq + rb - 1) / rb) < CPU_ITEMS_PER_UNIT * units))
        rb /= 2;
    if (target->cpu) {
        out->local = 1;
        out->global = (size_t)((uint64_t)batch * (((uint64_t)sq + rb - 1) / rb));
    } else if (decode) {
        out->local = (size_t)G.wg;
        out->global = (size_t)(rows * G.split * G.wg);
        /* counters (padded to 32), then the chunks' states (attention_decode.cl) */
        out->state_bytes = ((rows + 31) / 32 * 32 + state_floats) * 4u;
    } else if (mma != CLF_F32) {
        out->local = (size_t)(32 * mma_warps);
        out->global = (size_t)((uint64_t)batch * (((uint64_t)sq + 16 * mma_warps - 1) / (16 * mma_warps)) * out->local);
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
    if (decode) {
        out->schedule.form = "split-keys";
        out->schedule.lanes = G.vl;
        out->schedule.split = G.split;
        out->schedule.chunk = G.chunk;
        /* The scores' tile: one query row x wg keys, kp columns of K a
         * piece, a key a work-item. */
        out->schedule.tiles = (clf__gemm_config){.tm = 1, .tn = (int)G.wg, .tk = (int)G.kp, .wm = 1, .wn = 1};
        out->schedule.unroll = G.vu;
        out->schedule.local_bytes = G.local;
    } else if (mma != CLF_F32) {
        out->schedule.form = "tensor-cores";
        out->schedule.tiles =
            (clf__gemm_config){.tm = 16 * mma_warps, .tn = (int)bkt, .tk = 16, .wm = 16, .wn = (int)bkt};
        out->schedule.tensor_cores = mma == CLF_F16 ? "mma.m16n8k16.f16" : "mma.m16n8k16.bf16";
    } else if (!target->cpu) {
        out->schedule.tiles = (clf__gemm_config){.tm = (int)bq, .tn = (int)bk, .tk = (int)d, .wm = 1, .wn = (int)dv};
    }

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
    if (decode)
        clf__sb_printf(&src,
                       "#define SPLIT %llu\n#define CHUNK %llu\n#define WG %llu\n#define VL %llu\n#define KG %llu\n"
                             "#define KP %llu\n#define VU %llu\n",
                       (unsigned long long)G.split, (unsigned long long)G.chunk, (unsigned long long)G.wg,
                       (unsigned long long)G.vl, (unsigned long long)G.kg, (unsigned long long)G.kp,
                       (unsigned long long)G.vu);
    else if (mma != CLF_F32)
        clf__sb_printf(&src, CLF__MMA_LINE "#define MMA_BF16 %d\n#define WARPS %d\n#define BKT %llu\n",
                       mma == CLF_BF16 ? 1 : 0, mma_warps, (unsigned long long)bkt);
    else if (!target->cpu)
        clf__sb_printf(&src, "#define BQ %llu\n#define BK %llu\n", (unsigned long long)bq, (unsigned long long)bk);
    if (target->cpu)
        clf__sb_printf(&src, "#define VW %d\n#define CH %d\n#define RB %llu\n", vw, CPU_CH, (unsigned long long)rb);
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
        out->schedule.rows = rb;
        out->schedule.keys = CPU_CH;
        /* A group's CH logits in vector code where they have a vector form
         * (CLF_LOGIT_VEC): lane by lane, f16 scores took two software
         * roundings to f16 a logit. */
        if (clf__cg_emit_product_value_vec(g, plan, k, SC, K->attention.logits,
                                           K->attention.causal ? K->attention.causal_where : UINT32_MAX,
                                           K->attention.causal ? K->attention.causal_keep : 0, CPU_CH, "clf_logit_v",
                                           &src))
            clf__sb_puts(&src, "#define CLF_LOGIT_VEC 1\n");
    }
    clf__sb_puts(&src, clf__sb_str(&store_fn));
    if (mma != CLF_F32) {
        /* K reaches the scores transposed, V the output as it is; the
         * template asks for piece d8 of a row (values 8 d8 on). */
        clf__cg_emit_stage16(g, plan, k, SC, 1, true, false, "k", "IDX_T n, IDX_T d8", "n", "d8 * 8", true, &src);
        clf__cg_emit_stage16(g, plan, k, O, 1, false, false, "v", "IDX_T n, IDX_T d8", "n", "d8 * 8", true, &src);
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
