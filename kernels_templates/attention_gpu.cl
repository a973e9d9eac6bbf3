/* Attention region, GPU form: O = softmax(logits(Q Kt)) V for BATCH x SQ
 * query rows over SK keys, the two products as register tiles on the FMA
 * units. A work-group takes BQ consecutive query rows of one batch (Q
 * through local memory once) and walks the keys in tiles of BK, K and V
 * rows through local memory; the online softmax (running maximum and
 * sum) is kept per row, the scores and weights are never stored in
 * global memory. Lengths need not be multiples of the tiles.
 *
 * Its NT = RG x KG work-items: work-item (rg, kg) computes the scores of
 * the TR = 4 rows rg, rg + RG, rg + 2 RG, rg + 3 RG at the TK keys kg,
 * kg + KG, ... of a tile (float4s along D: every local read of four Q
 * values and four K values feeds sixteen FMAs; rows and keys strided so
 * that the work-items of a warp read consecutive rows of Q and of K,
 * distinct banks), then the same rows' accumulators at the DVP / KG
 * columns 4 (kg + KG i) .. + 3 of V. Between the two, the rows' tile
 * maxima meet (`red4` or shuffles), and the weights go to local memory
 * as a float4 of the four rows a key (`pt4`) for the second product.
 * Each of the KG work-items of a row keeps the row's maximum (all compute
 * the same) and its own part of the row's sum, added up at the end.
 * (The work-item-per-row form it replaced read one float4 of local memory
 * per four FMAs: 1.78 ms on the H200 against SDPA's 1.02 at f32 B8 H16
 * S1024 D64.)
 *
 * Codegen prepends what attention_cpu.cl takes (the loads, clf_logit,
 * clf_store, CAUSAL and NAN_FILL with their values), and BQ, BK and TK;
 * GPU_VEC_QK with clf_load_qv and clf_load_kv (four consecutive values of
 * a Q or K row) where D is a multiple of 4, GPU_VEC_V with clf_load_vv
 * where DV is (else four scalar loads a piece).
 * CAUSAL: tiles past the group's last visible key are skipped; keys past
 * a row's own last get weight 0 and are left out of its output (a NaN in
 * V there stays out; see attention_cpu.cl for the finite-fill check: a
 * row that needs the hidden keys visits them alone, from global memory).
 * HEAVY_FIRST (the causal default): the group's query blocks in reverse,
 * the longest first.
 *
 * Launch: BATCH * ceil(SQ / BQ) work-groups of NT. A few rows over many
 * keys (decode) take attention_decode.cl instead. */
#ifndef IDX_T
#define IDX_T uint
#endif

#ifndef CLF_KERNEL_NAME
#define CLF_KERNEL_NAME clf_attention_gpu_example
#define BATCH 1
#define SQ 8
#define SK 8
#define D 8
#define DV 8
#define BQ 8
#define BK 8
#define TK 2
#define CAUSAL 0
#define NAN_FILL 0
#define CLF_PARAMS __global const float *restrict q, __global const float *restrict k, __global const float *restrict v, __global float *restrict o
#define CLF_ARGS q, k, v, o
static inline float clf_load_q(IDX_T bt, IDX_T m, IDX_T d, CLF_PARAMS) { return q[m * D + d]; }
static inline float clf_load_k(IDX_T bt, IDX_T d, IDX_T n, CLF_PARAMS) { return k[n * D + d]; }
static inline float clf_load_v(IDX_T bt, IDX_T n, IDX_T d, CLF_PARAMS) { return v[n * DV + d]; }
static inline float clf_logit(IDX_T bt, IDX_T m, IDX_T n, float acc, CLF_PARAMS) { return acc * 0.35355339f; }
static inline void clf_store(IDX_T bt, IDX_T m, IDX_T n, float acc, CLF_PARAMS) { o[m * DV + n] = acc; }
#endif

#define TR 4
#define RG (BQ / TR)
#define KG (BK / TK)
#define NT (RG * KG)
#define QBLOCKS ((SQ + BQ - 1) / BQ)
#define DP ((D + 3) / 4 * 4)
#define D4 (DP / 4)
/* V's columns in float4s, KG of them a step (padded with zeros) */
#define DVC4 ((DV + 4 * KG - 1) / (4 * KG))
#define DVP (DVC4 * 4 * KG)
#define DV4 (DVP / 4)
/* local rows: Q and K rows one float4 longer than DP, the weights' and
 * maxima's rows one float4 longer than BQ (banks) */
#define DPP4 (D4 + 1)
#define BQP4 (RG + 1)

#ifndef GPU_VEC_QK
#define GPU_VEC_QK 0
#endif
#ifndef GPU_VEC_V
#define GPU_VEC_V 0
#endif

#ifndef HEAVY_FIRST
#define HEAVY_FIRST CAUSAL
#endif

/* GPU_PREFETCH 1 (off by default: not measured): the next tile of K and V
 * read into registers while the current one is multiplied, written to
 * local memory at the top of the next step. */
#ifndef GPU_PREFETCH
#define GPU_PREFETCH 0
#endif

/* exp2, the hardware's own on NVIDIA's driver (CLF_SHFL's line: ex2, as
 * the tensor-core form); the correctly rounded one elsewhere. */
#if defined(CLF_SHFL) && CLF_SHFL
#define CLF_EXP2(x) native_exp2(x)
#else
#define CLF_EXP2(x) exp2(x)
#endif

/* The running state's base: its maximum, or 0 while every logit so far is
 * -inf (exp is then taken against 0, so those keys weigh 0 rather than
 * -inf - -inf = NaN; a row of -inf only ends in 0 / 0 = NaN, as the
 * unfused softmax gives). */
static inline float clf_base(float mx) { return mx == -INFINITY ? 0.0f : mx; }

static inline float clf_lane4(float4 x, int c) { return c == 0 ? x.x : c == 1 ? x.y : c == 2 ? x.z : x.w; }

/* Values d0 .. d0 + 3 of V's row n from global memory (zeros past DV):
 * the rare paths' reads. */
static inline float4 clf_load_v4(IDX_T bt, IDX_T n, IDX_T d0, CLF_PARAMS)
{
    float4 x;
    x.x = d0 + 0 < DV ? clf_load_v(bt, n, d0 + 0, CLF_ARGS) : 0.0f;
    x.y = d0 + 1 < DV ? clf_load_v(bt, n, d0 + 1, CLF_ARGS) : 0.0f;
    x.z = d0 + 2 < DV ? clf_load_v(bt, n, d0 + 2, CLF_ARGS) : 0.0f;
    x.w = d0 + 3 < DV ? clf_load_v(bt, n, d0 + 3, CLF_ARGS) : 0.0f;
    return x;
}

/* Piece d4 (values 4 d4 .. 4 d4 + 3, zeros past D or DV) of Q's row m,
 * K's row n and V's row n: one vector load where codegen gave one
 * (GPU_VEC_QK, GPU_VEC_V), else four. */
static inline float4 clf_q_piece(IDX_T bt, IDX_T m, IDX_T d4, CLF_PARAMS)
{
#if GPU_VEC_QK
    return clf_load_qv(bt, m, 4 * d4, CLF_ARGS);
#else
    float4 x;
    x.x = 4 * d4 + 0 < D ? clf_load_q(bt, m, 4 * d4 + 0, CLF_ARGS) : 0.0f;
    x.y = 4 * d4 + 1 < D ? clf_load_q(bt, m, 4 * d4 + 1, CLF_ARGS) : 0.0f;
    x.z = 4 * d4 + 2 < D ? clf_load_q(bt, m, 4 * d4 + 2, CLF_ARGS) : 0.0f;
    x.w = 4 * d4 + 3 < D ? clf_load_q(bt, m, 4 * d4 + 3, CLF_ARGS) : 0.0f;
    return x;
#endif
}
static inline float4 clf_k_piece(IDX_T bt, IDX_T n, IDX_T d4, CLF_PARAMS)
{
#if GPU_VEC_QK
    return clf_load_kv(bt, 4 * d4, n, CLF_ARGS);
#else
    float4 x;
    x.x = 4 * d4 + 0 < D ? clf_load_k(bt, 4 * d4 + 0, n, CLF_ARGS) : 0.0f;
    x.y = 4 * d4 + 1 < D ? clf_load_k(bt, 4 * d4 + 1, n, CLF_ARGS) : 0.0f;
    x.z = 4 * d4 + 2 < D ? clf_load_k(bt, 4 * d4 + 2, n, CLF_ARGS) : 0.0f;
    x.w = 4 * d4 + 3 < D ? clf_load_k(bt, 4 * d4 + 3, n, CLF_ARGS) : 0.0f;
    return x;
#endif
}
static inline float4 clf_v_piece(IDX_T bt, IDX_T n, IDX_T d4, CLF_PARAMS)
{
#if GPU_VEC_V
    return 4 * d4 < DV ? clf_load_vv(bt, n, 4 * d4, CLF_ARGS) : (float4)(0.0f);
#else
    return clf_load_v4(bt, n, 4 * d4, CLF_ARGS);
#endif
}

/* GPU_SHFL (CLF_SHFL's default: NVIDIA's driver): the KG work-items of a
 * row block, consecutive lanes of one warp, meet by butterfly shuffles
 * (PTX shfl.sync), no local memory and no barrier; else through red4.
 * GPU_SHFL_EMULATE: the same butterflies through local memory (tests). */
#ifndef GPU_SHFL
#if defined(CLF_SHFL) && CLF_SHFL
#define GPU_SHFL 1
#else
#define GPU_SHFL 0
#endif
#endif

#ifndef GPU_SHFL_EMULATE
#define GPU_SHFL_EMULATE 0
#endif

#if GPU_SHFL && !GPU_SHFL_EMULATE
static inline float clf_bfly(float v, uint m)
{
    float r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(v), "r"(m));
    return r;
}
#endif

/* x's maximum (is_max 1) or sum over the KG work-items of row block rg, in
 * all of them. Through local memory: a barrier after the writes, and the
 * caller's next barrier before red4 is written again. */
static inline float4 clf_across_keys(float4 x, const int is_max, __local float4 *red4, IDX_T rg, IDX_T kg)
{
#if GPU_SHFL
    for (uint m = KG / 2; m > 0; m /= 2) {
#if GPU_SHFL_EMULATE
        /* (the butterfly through red4, for tests on devices without it) */
        barrier(CLK_LOCAL_MEM_FENCE);
        red4[rg * KG + kg] = x;
        barrier(CLK_LOCAL_MEM_FENCE);
        const float4 o = red4[(rg * KG + kg) ^ m];
#else
        const float4 o = (float4)(clf_bfly(x.x, m), clf_bfly(x.y, m), clf_bfly(x.z, m), clf_bfly(x.w, m));
#endif
        x = is_max ? fmax(x, o) : x + o;
    }
    return x;
#else
    red4[kg * BQP4 + rg] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    x = red4[rg];
    for (int g = 1; g < KG; ++g)
        x = is_max ? fmax(x, red4[g * BQP4 + rg]) : x + red4[g * BQP4 + rg];
    return x;
#endif
}

#define KPRE ((BK * D4 + NT - 1) / NT)
#define VPRE ((BK * DV4 + NT - 1) / NT)
/* This work-item's share of the tile of keys n0 .. n0 + BK - 1 of K and V
 * into registers (zeros past SK, D and DV), and from there into the
 * tiles in local memory: straight after each other, or a step apart
 * (GPU_PREFETCH). */
static inline void clf_read_tile(IDX_T bt, IDX_T n0, IDX_T lid, float4 *kr, float4 *vr, CLF_PARAMS)
{
#pragma unroll
    for (int i = 0; i < KPRE; ++i) {
        const IDX_T e = lid + (IDX_T)i * NT, j = e / D4, d4 = e % D4;
        kr[i] = e < (IDX_T)BK * D4 && n0 + j < SK ? clf_k_piece(bt, n0 + j, d4, CLF_ARGS) : (float4)(0.0f);
    }
#pragma unroll
    for (int i = 0; i < VPRE; ++i) {
        const IDX_T e = lid + (IDX_T)i * NT, j = e / DV4, c4 = e % DV4;
        vr[i] = e < (IDX_T)BK * DV4 && n0 + j < SK ? clf_v_piece(bt, n0 + j, c4, CLF_ARGS) : (float4)(0.0f);
    }
}

static inline void clf_write_tile(IDX_T lid, const float4 *kr, const float4 *vr, __local float4 *ks4,
                                  __local float4 *vs4)
{
#pragma unroll
    for (int i = 0; i < KPRE; ++i) {
        const IDX_T e = lid + (IDX_T)i * NT;
        if (e < (IDX_T)BK * D4)
            ks4[e / D4 * DPP4 + e % D4] = kr[i];
    }
#pragma unroll
    for (int i = 0; i < VPRE; ++i) {
        const IDX_T e = lid + (IDX_T)i * NT;
        if (e < (IDX_T)BK * DV4)
            vs4[e] = vr[i];
    }
}

__kernel __attribute__((reqd_work_group_size(NT, 1, 1))) void CLF_KERNEL_NAME(CLF_PARAMS, const IDX_T numel)
{
    /* (no statement that names SQ or SK may hold a __local cast: that keeps
     * symbolic sizes from becoming kernel arguments, runtime/source_lift.h) */
    __local float4 qs4[BQ * DPP4], ks4[BK * DPP4], vs4[BK * DV4], pt4[BK * BQP4], red4[KG * BQP4];
    const IDX_T lid = (IDX_T)get_local_id(0), grp = (IDX_T)get_group_id(0);
    const IDX_T rg = lid / KG, kg = lid % KG;
    const IDX_T bt = grp / QBLOCKS;
#if HEAVY_FIRST
    const IDX_T m0 = (QBLOCKS - 1 - grp % QBLOCKS) * BQ;
#else
    const IDX_T m0 = grp % QBLOCKS * BQ;
#endif
    /* Rows past SQ compute the last row again and store nothing (no test
     * of them around the barriers). */
    IDX_T mc[TR], row_keys[TR];
#pragma unroll
    for (int r = 0; r < TR; ++r) {
        const IDX_T m = m0 + rg + RG * r;
        mc[r] = m < SQ ? m : (IDX_T)(SQ - 1);
#if CAUSAL
        row_keys[r] = min((IDX_T)SK, (IDX_T)(mc[r] + CAUSAL_OFFSET + 1));
#else
        row_keys[r] = SK;
#endif
    }
#if CAUSAL
    const IDX_T last = min((IDX_T)SQ, (IDX_T)(m0 + BQ)) - 1;
    const IDX_T group_keys = min((IDX_T)SK, (IDX_T)(last + CAUSAL_OFFSET + 1));
#else
    const IDX_T group_keys = SK;
#endif
    /* Q's block, rows past SQ as the last row */
    for (IDX_T e = lid; e < (IDX_T)BQ * D4; e += NT) {
        const IDX_T i = e / D4, d4 = e % D4, m = min((IDX_T)(m0 + i), (IDX_T)(SQ - 1));
        qs4[i * DPP4 + d4] = clf_q_piece(bt, m, d4, CLF_ARGS);
    }
    float4 acc[TR][DVC4];
    float mx[TR], l[TR];
#pragma unroll
    for (int r = 0; r < TR; ++r) {
        mx[r] = -INFINITY;
        l[r] = 0.0f;
#pragma unroll
        for (int i = 0; i < DVC4; ++i)
            acc[r][i] = (float4)(0.0f);
    }
    float4 kr[KPRE], vr[VPRE];
#if GPU_PREFETCH
    clf_read_tile(bt, 0, lid, kr, vr, CLF_ARGS);
#endif
    for (IDX_T n0 = 0; n0 < group_keys; n0 += BK) {
        barrier(CLK_LOCAL_MEM_FENCE);
        /* K's and V's tiles, zeros past SK, D and DV */
#if GPU_PREFETCH
        clf_write_tile(lid, kr, vr, ks4, vs4);
        if (n0 + BK < group_keys)
            clf_read_tile(bt, n0 + BK, lid, kr, vr, CLF_ARGS);
#else
        clf_read_tile(bt, n0, lid, kr, vr, CLF_ARGS);
        clf_write_tile(lid, kr, vr, ks4, vs4);
#endif
        barrier(CLK_LOCAL_MEM_FENCE);
        /* the scores of rows rg + RG r at keys kg + KG c */
        float s[TR][TK];
#pragma unroll
        for (int r = 0; r < TR; ++r)
#pragma unroll
            for (int c = 0; c < TK; ++c)
                s[r][c] = 0.0f;
        for (int d4 = 0; d4 < D4; ++d4) {
            float4 qv[TR], kv[TK];
#pragma unroll
            for (int r = 0; r < TR; ++r)
                qv[r] = qs4[(rg + RG * r) * DPP4 + d4];
#pragma unroll
            for (int c = 0; c < TK; ++c)
                kv[c] = ks4[(kg + KG * c) * DPP4 + d4];
#pragma unroll
            for (int r = 0; r < TR; ++r)
#pragma unroll
                for (int c = 0; c < TK; ++c)
                    s[r][c] = fma(qv[r].w, kv[c].w, fma(qv[r].z, kv[c].z, fma(qv[r].y, kv[c].y, fma(qv[r].x, kv[c].x, s[r][c]))));
        }
        /* their logits (-inf past the row's last key) and the rows' maxima
         * over this work-item's keys */
        float tmax[TR];
#pragma unroll
        for (int r = 0; r < TR; ++r) {
            tmax[r] = -INFINITY;
#pragma unroll
            for (int c = 0; c < TK; ++c) {
                const IDX_T n = n0 + kg + KG * c;
                s[r][c] = n < row_keys[r] ? clf_logit(bt, mc[r], n, s[r][c], CLF_ARGS) : -INFINITY;
                tmax[r] = fmax(tmax[r], s[r][c]);
            }
        }
        /* the tile's maxima of the rows, the weights, the rescale */
        const float4 m4 = clf_across_keys((float4)(tmax[0], tmax[1], tmax[2], tmax[3]), 1, red4, rg, kg);
        float corr[TR];
#pragma unroll
        for (int r = 0; r < TR; ++r) {
            /* (x - base first: as one fma with -base log2(e), a base
             * near -FLT_MAX overflows and a large one's rounding weighs) */
            const float nmx = fmax(mx[r], clf_lane4(m4, r)), base = clf_base(nmx);
            corr[r] = CLF_EXP2((mx[r] - base) * M_LOG2E_F);
            mx[r] = nmx;
            float ps = 0.0f;
#pragma unroll
            for (int c = 0; c < TK; ++c) {
                s[r][c] = CLF_EXP2((s[r][c] - base) * M_LOG2E_F);
                ps += s[r][c];
            }
            l[r] = fma(l[r], corr[r], ps);
        }
#pragma unroll
        for (int c = 0; c < TK; ++c)
            pt4[(kg + KG * c) * BQP4 + rg] = (float4)(s[0][c], s[1][c], s[2][c], s[3][c]);
        barrier(CLK_LOCAL_MEM_FENCE);
        /* the accumulators: rescaled, then the tile's weighted V rows */
#pragma unroll
        for (int r = 0; r < TR; ++r)
#pragma unroll
            for (int i = 0; i < DVC4; ++i)
                acc[r][i] *= corr[r];
#if CAUSAL
        if (n0 + BK > row_keys[0]) {
            /* A tile some of the rows do not see all of: their hidden keys
             * are left out, not weighed 0 (a NaN there stays out of the
             * row, as the row-by-row forms give). */
            for (int j = 0; j < BK; ++j) {
                const float4 p = pt4[j * BQP4 + rg];
#pragma unroll
                for (int i = 0; i < DVC4; ++i) {
                    const float4 vv = vs4[j * DV4 + kg + KG * i];
#pragma unroll
                    for (int r = 0; r < TR; ++r)
                        if (n0 + j < row_keys[r])
                            acc[r][i] = fma((float4)(clf_lane4(p, r)), vv, acc[r][i]);
                }
            }
            continue;
        }
#endif
        for (int j = 0; j < BK; ++j) {
            const float4 p = pt4[j * BQP4 + rg];
#pragma unroll
            for (int i = 0; i < DVC4; ++i) {
                const float4 vv = vs4[j * DV4 + kg + KG * i];
                acc[0][i] = fma((float4)(p.x), vv, acc[0][i]);
                acc[1][i] = fma((float4)(p.y), vv, acc[1][i]);
                acc[2][i] = fma((float4)(p.z), vv, acc[2][i]);
                acc[3][i] = fma((float4)(p.w), vv, acc[3][i]);
            }
        }
    }
#if CAUSAL && !CAUSAL_FILL_INF
    /* Rows whose visible keys stay within 110 of a finite fill: the
     * skipped keys weigh (each CAUSAL_FILL), so the row visits them too,
     * from global memory, each of its KG work-items for its columns (the
     * first one counting their weights into the sum). Rare: no barrier. */
#pragma unroll
    for (int r = 0; r < TR; ++r) {
        if (!(mx[r] - CAUSAL_FILL > 110.0f) && row_keys[r] < SK) {
            const float nmx = fmax(mx[r], CAUSAL_FILL), base = clf_base(nmx);
            const float c = exp(mx[r] - base), p = exp(CAUSAL_FILL - base);
            mx[r] = nmx;
            l[r] = l[r] * c + (kg == 0 ? p * (float)(SK - row_keys[r]) : 0.0f);
#pragma unroll
            for (int i = 0; i < DVC4; ++i) {
                const IDX_T d0 = 4 * (kg + KG * i);
                float4 a = acc[r][i] * c;
                for (IDX_T n = row_keys[r]; n < SK; ++n)
                    a = fma((float4)(p), clf_load_v4(bt, n, d0, CLF_ARGS), a);
                acc[r][i] = a;
            }
        }
    }
#endif
    /* the rows' sums over their KG work-items */
#if !GPU_SHFL
    barrier(CLK_LOCAL_MEM_FENCE);
#endif
    const float4 l4 = clf_across_keys((float4)(l[0], l[1], l[2], l[3]), 0, red4, rg, kg);
#pragma unroll
    for (int r = 0; r < TR; ++r) {
        float lr = clf_lane4(l4, r);
#if NAN_FILL
        /* A row whose weights are all NaN (its sum NaN, or 0 for a row of
         * -inf) weighs every key NAN_FILL_VALUE instead (attention_cpu.cl),
         * reading V from global memory. */
        if (!(lr > 0.0f)) {
#pragma unroll
            for (int i = 0; i < DVC4; ++i) {
                const IDX_T d0 = 4 * (kg + KG * i);
                float4 a = (float4)(0.0f);
                for (IDX_T n = 0; n < SK; ++n)
                    a = fma((float4)(NAN_FILL_VALUE), clf_load_v4(bt, n, d0, CLF_ARGS), a);
                acc[r][i] = a;
            }
            lr = 1.0f;
        }
#endif
        const IDX_T m = m0 + rg + RG * r;
        if (m < SQ) {
#pragma unroll
            for (int i = 0; i < DVC4; ++i)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const IDX_T d = 4 * (kg + KG * i) + e;
                    if (d < DV)
                        clf_store(bt, m, d, clf_lane4(acc[r][i], e) / lr, CLF_ARGS);
                }
        }
    }
}
