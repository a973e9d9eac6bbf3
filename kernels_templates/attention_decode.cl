/* Attention region, decode form: O = softmax(logits(Q Kt)) V for a few
 * query rows (SQ <= 4) over many keys, as two launches. One work-group
 * per query row could not fill a large GPU (32 heads of one query: 32
 * work-groups on 132 compute units), so the keys are cut into SPLIT chunks
 * of CHUNK and every (row, chunk) pair is a work-group:
 *
 * CLF_KERNEL_NAME, the split: a work-group of WG work-items scores its
 * chunk's keys, a key a work-item: the query sits in local memory (every
 * work-item reads the same float4: a broadcast) and each work-item reads
 * its key's row of K as float4s, so a work-item's loads walk one row from
 * start to end and every cache line fetched is used whole. (Lanes across
 * D would coalesce each load but need a reduction per key; a key per lane
 * needs none.) The chunk's logits go to local memory; their maximum, then
 * each key's weight exp(logit - max) against it, then the weighted sum of
 * V with the work-items across DV: VL consecutive work-items read
 * consecutive elements of a V row (coalesced), KG = WG / VL groups of
 * them take every KG-th key when DV is narrower than the work-group. The
 * chunk's state, its maximum, its sum of weights and its DV unnormalised
 * accumulators, is written to `part` (f32, DV + 2 floats a chunk).
 *
 * CLF_FINAL_NAME, the combine: a work-group of WG per query row, the
 * work-items across DV; each takes the row's maximum over the chunks, then
 * every chunk's sum and accumulators rescaled by exp(chunk max - row max),
 * and stores accumulators / sum through clf_store (the epilogue). No local
 * memory and no barrier: the row's SPLIT states are read by every
 * work-item from the cache.
 *
 * The semantics are attention_cpu.cl's: a maximum of -inf counts as 0 in
 * the exponents (clf_base), so -inf logits weigh 0 and a row of -inf only
 * ends in 0 / 0 = NaN; a NaN logit is not taken by fmax into the maximum
 * but its weight exp(NaN) is NaN, which then reaches the row's sum and
 * accumulators. CAUSAL: query m sees keys n <= m + CAUSAL_OFFSET; with a
 * -inf fill the hidden keys are not visited at all (chunks past a row's
 * last visible key hold an empty state: max -inf, sum 0), with a finite
 * fill every key is (logit CAUSAL_FILL for the hidden ones, clf_logit for
 * the others), which is exactly the unskipped sweep: decode rows have few
 * hidden keys, if any. NAN_FILL: a row whose sum is NaN (or 0: every
 * logit -inf) weighs every key NAN_FILL_VALUE instead, from one more pass
 * over V in the combine (rare).
 *
 * Codegen prepends what attention_cpu.cl takes, and SPLIT, CHUNK, WG, VL,
 * KG and CLF_FINAL_NAME. Launch: BATCH * SQ * SPLIT work-groups of WG,
 * then BATCH * SQ work-groups of WG. Both kernels take the parameters,
 * then `part` (BATCH * SQ * SPLIT * (DV + 2) floats), then numel. Without
 * the definitions this file is valid OpenCL C: one 8 x 8 head over 300
 * keys. */
#ifndef IDX_T
#define IDX_T uint
#endif

#ifndef CLF_KERNEL_NAME
#define CLF_KERNEL_NAME clf_attention_decode_example
#define CLF_FINAL_NAME clf_attention_decode_example_final
#define BATCH 1
#define SQ 1
#define SK 300
#define D 8
#define DV 8
#define CAUSAL 0
#define NAN_FILL 0
#define SPLIT 3
#define CHUNK 128
#define WG 64
#define VL 8
#define KG 8
#define CLF_PARAMS __global const float *restrict q, __global const float *restrict k, __global const float *restrict v, __global float *restrict o
#define CLF_ARGS q, k, v, o
static inline float clf_load_q(IDX_T bt, IDX_T m, IDX_T d, CLF_PARAMS) { return q[m * D + d]; }
static inline float clf_load_k(IDX_T bt, IDX_T d, IDX_T n, CLF_PARAMS) { return k[n * D + d]; }
static inline float clf_load_v(IDX_T bt, IDX_T n, IDX_T d, CLF_PARAMS) { return v[n * DV + d]; }
static inline float clf_logit(IDX_T bt, IDX_T m, IDX_T n, float acc, CLF_PARAMS) { return acc * 0.35355339f; }
static inline void clf_store(IDX_T bt, IDX_T m, IDX_T n, float acc, CLF_PARAMS) { o[m * DV + n] = acc; }
#endif

#define DP ((D + 3) / 4 * 4)
#define D4 (DP / 4)
/* Accumulators a work-item keeps in the weighted sum of V. */
#define DVL ((DV + VL - 1) / VL)
/* A chunk's state in `part`: max, sum, then DV accumulators. */
#define REC (DV + 2)

/* Four consecutive elements of a q row or k column from global memory as
 * a float4, from element 4 * d4 (zeros past D). */
static inline float4 clf_load_q4(IDX_T bt, IDX_T m, IDX_T d4, CLF_PARAMS)
{
    float4 x;
    x.x = 4 * d4 + 0 < D ? clf_load_q(bt, m, 4 * d4 + 0, CLF_ARGS) : 0.0f;
    x.y = 4 * d4 + 1 < D ? clf_load_q(bt, m, 4 * d4 + 1, CLF_ARGS) : 0.0f;
    x.z = 4 * d4 + 2 < D ? clf_load_q(bt, m, 4 * d4 + 2, CLF_ARGS) : 0.0f;
    x.w = 4 * d4 + 3 < D ? clf_load_q(bt, m, 4 * d4 + 3, CLF_ARGS) : 0.0f;
    return x;
}
static inline float4 clf_load_k4(IDX_T bt, IDX_T d4, IDX_T n, CLF_PARAMS)
{
    float4 x;
    x.x = 4 * d4 + 0 < D ? clf_load_k(bt, 4 * d4 + 0, n, CLF_ARGS) : 0.0f;
    x.y = 4 * d4 + 1 < D ? clf_load_k(bt, 4 * d4 + 1, n, CLF_ARGS) : 0.0f;
    x.z = 4 * d4 + 2 < D ? clf_load_k(bt, 4 * d4 + 2, n, CLF_ARGS) : 0.0f;
    x.w = 4 * d4 + 3 < D ? clf_load_k(bt, 4 * d4 + 3, n, CLF_ARGS) : 0.0f;
    return x;
}

/* The exponents' base for a maximum mx: mx, or 0 while every logit is
 * -inf (those keys then weigh exp(-inf) = 0, not exp(-inf - -inf) = NaN). */
static inline float clf_base(float mx) { return mx == -INFINITY ? 0.0f : mx; }

/* The logit of key n for query m; a key the causal mask hides (reached
 * only with a finite fill) has logit CAUSAL_FILL. */
static inline float clf_decode_logit(IDX_T bt, IDX_T m, IDX_T n, __local const float4 *ql, CLF_PARAMS)
{
#if CAUSAL
    if (n > m + CAUSAL_OFFSET)
        return CAUSAL_FILL;
#endif
    float4 s4 = (float4)(0.0f);
#pragma unroll
    for (int d = 0; d < D4; ++d)
        s4 = fma(ql[d], clf_load_k4(bt, d, n, CLF_ARGS), s4);
    return clf_logit(bt, m, n, (s4.x + s4.y) + (s4.z + s4.w), CLF_ARGS);
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void CLF_KERNEL_NAME(CLF_PARAMS, __global float *restrict part,
                                                                            const IDX_T numel)
{
    __local float4 ql[D4];
    __local float w[CHUNK]; /* the chunk's logits, then their weights */
    __local float red[WG];
    const IDX_T lid = (IDX_T)get_local_id(0), grp = (IDX_T)get_group_id(0);
    const IDX_T row = grp / SPLIT, n0 = grp % SPLIT * CHUNK;
    const IDX_T bt = row / SQ, m = row % SQ;
#if CAUSAL && CAUSAL_FILL_INF
    const IDX_T keys = min((IDX_T)SK, (IDX_T)(m + CAUSAL_OFFSET + 1));
#else
    const IDX_T keys = SK;
#endif
    const IDX_T len = n0 < keys ? min((IDX_T)CHUNK, keys - n0) : 0;
    for (IDX_T d = lid; d < (IDX_T)D4; d += WG)
        ql[d] = clf_load_q4(bt, m, d, CLF_ARGS);
    barrier(CLK_LOCAL_MEM_FENCE);

    /* The logits, a key a work-item, and the chunk's maximum. */
    float mx = -INFINITY;
    for (IDX_T j = lid; j < len; j += WG) {
        const float t = clf_decode_logit(bt, m, n0 + j, ql, CLF_ARGS);
        w[j] = t;
        mx = fmax(mx, t);
    }
    red[lid] = mx;
    barrier(CLK_LOCAL_MEM_FENCE);
    mx = -INFINITY;
    for (int i = 0; i < WG; ++i)
        mx = fmax(mx, red[i]);
    const float base = clf_base(mx);
    /* Each work-item turns its own logits into weights (no other reads
     * them before the barrier below). */
    float l = 0.0f;
    for (IDX_T j = lid; j < len; j += WG) {
        const float p = exp(w[j] - base);
        w[j] = p;
        l += p;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    red[lid] = l;

    /* The weighted sum of the chunk's V rows, work-items across DV. */
    const IDX_T g = lid / VL, c = lid % VL;
    float acc[DVL];
#pragma unroll
    for (int e = 0; e < DVL; ++e)
        acc[e] = 0.0f;
    for (IDX_T j = g; j < len; j += KG) {
        const float p = w[j];
#pragma unroll
        for (int e = 0; e < DVL; ++e)
            if (c + e * VL < DV)
                acc[e] = fma(p, clf_load_v(bt, n0 + j, c + e * VL, CLF_ARGS), acc[e]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    __global float *rec = part + grp * (IDX_T)REC;
    if (lid == 0) {
        for (int i = 1; i < WG; ++i)
            l += red[i];
        rec[0] = mx;
        rec[1] = l;
    }
#if KG > 1
    /* KG groups of VL work-items (DV <= VL here, so one accumulator
     * each): the groups' sums added through local memory. */
    barrier(CLK_LOCAL_MEM_FENCE);
    red[lid] = acc[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (g == 0 && c < DV) {
        float s = 0.0f;
        for (int i = 0; i < KG; ++i)
            s += red[i * VL + c];
        rec[2 + c] = s;
    }
#else
#pragma unroll
    for (int e = 0; e < DVL; ++e)
        if (c + e * VL < DV)
            rec[2 + c + e * VL] = acc[e];
#endif
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void CLF_FINAL_NAME(CLF_PARAMS,
                                                                           __global const float *restrict part,
                                                                           const IDX_T numel)
{
    const IDX_T lid = (IDX_T)get_local_id(0), row = (IDX_T)get_group_id(0);
    const IDX_T bt = row / SQ, m = row % SQ;
    __global const float *rec = part + row * (IDX_T)(SPLIT * REC);
    float mx = -INFINITY;
    for (int s = 0; s < SPLIT; ++s)
        mx = fmax(mx, rec[s * REC]);
    const float base = clf_base(mx);
    float l = 0.0f;
    for (int s = 0; s < SPLIT; ++s)
        l += rec[s * REC + 1] * exp(rec[s * REC] - base);
    for (IDX_T d = lid; d < (IDX_T)DV; d += WG) {
        float acc = 0.0f;
        for (int s = 0; s < SPLIT; ++s)
            acc += rec[s * REC + 2 + d] * exp(rec[s * REC] - base);
        float lr = l;
#if NAN_FILL
        /* Every weight of the row NaN (its sum NaN, or 0 for a row of
         * -inf): each key weighs NAN_FILL_VALUE. */
        if (!(l > 0.0f)) {
            acc = 0.0f;
            for (IDX_T n = 0; n < SK; ++n)
                acc += clf_load_v(bt, n, d, CLF_ARGS);
            acc *= NAN_FILL_VALUE;
            lr = 1.0f;
        }
#endif
        clf_store(bt, m, d, acc / lr, CLF_ARGS);
    }
}
