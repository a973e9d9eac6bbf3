/* Attention region, CPU form: O = softmax(logits(Q Kt)) V for BATCH x SQ
 * query rows over SK keys, one work-item per query row, with no local
 * memory and no barriers. A work-item keeps its query (D values) and its
 * output row (DV accumulators) in private arrays and sweeps the keys once
 * with an online softmax: a running maximum mx and sum l, the accumulators
 * rescaled by exp(old max - new max) whenever the maximum grows. The
 * scores and weights are never stored.
 *
 * Codegen prepends CLF_KERNEL_NAME, CLF_PARAMS, CLF_ARGS, BATCH, SQ, SK, D,
 * DV, CAUSAL (with CAUSAL_OFFSET, CAUSAL_FILL, CAUSAL_FILL_INF), NAN_FILL
 * (with NAN_FILL_VALUE: a row whose weights are NaN weighs every key
 * that instead, as WHERE(ISNAN(w), fill, w) in the graph does), the loads
 * clf_load_q(bt, m, d), clf_load_k(bt, d, n) (K transposed: [D, SK]),
 * clf_load_v(bt, n, d), the logits of one score clf_logit(bt, m, n, s) and
 * the epilogue clf_store(bt, m, d, o); without them this file is still
 * valid OpenCL C: plain attention of one 8 x 8 head.
 *
 * CAUSAL: query m sees keys n <= m + CAUSAL_OFFSET; the logits of the
 * others are CAUSAL_FILL (-inf when CAUSAL_FILL_INF), which weighs 0 next
 * to any key more than 110 above it (exp underflows to 0 in f32). A row
 * whose visible keys do not rise that far above a finite fill visits the
 * skipped keys too, so the result is the one the unskipped sweep gives.
 * clf_logit is only asked for visible keys (codegen evaluates the causal
 * WHERE as the scores it keeps); a skipped key's logit is CAUSAL_FILL. */
#ifndef IDX_T
#define IDX_T uint
#endif

#ifndef CLF_KERNEL_NAME
#define CLF_KERNEL_NAME clf_attention_cpu_example
#define BATCH 1
#define SQ 8
#define SK 8
#define D 8
#define DV 8
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

/* Key n with logit t folded into the running state. */
static inline void clf_fold(IDX_T bt, IDX_T n, float t, float *acc, float *mx, float *l, CLF_PARAMS)
{
    const float mnew = fmax(*mx, t);
    /* The maximum stays -inf while every logit so far is -inf: exp is then
     * taken against 0, so those keys weigh 0 (not -inf - -inf = NaN) and
     * only a row of -inf ends in 0 / 0 = NaN, as the unfused softmax. */
    const float base = mnew == -INFINITY ? 0.0f : mnew;
    const float corr = exp(*mx - base), p = exp(t - base);
    *l = *l * corr + p;
    for (IDX_T d = 0; d < DV; ++d)
        acc[d] = acc[d] * corr + p * clf_load_v(bt, n, d, CLF_ARGS);
    *mx = mnew;
}

/* One key: its score, logit and weight folded into the running state. */
static inline void clf_attend(IDX_T bt, IDX_T m, IDX_T n, const float *qrow, float *acc, float *mx, float *l,
                              CLF_PARAMS)
{
    float s = 0.0f;
    for (IDX_T d = 0; d < D; ++d)
        s += qrow[d] * clf_load_k(bt, d, n, CLF_ARGS);
    clf_fold(bt, n, clf_logit(bt, m, n, s, CLF_ARGS), acc, mx, l, CLF_ARGS);
}

__kernel void CLF_KERNEL_NAME(CLF_PARAMS, const IDX_T numel)
{
    const IDX_T row = (IDX_T)get_global_id(0);
    if (row >= (IDX_T)BATCH * (IDX_T)SQ)
        return;
    const IDX_T bt = row / SQ, m = row % SQ;
    float qrow[D], acc[DV];
    for (IDX_T d = 0; d < D; ++d)
        qrow[d] = clf_load_q(bt, m, d, CLF_ARGS);
    for (IDX_T d = 0; d < DV; ++d)
        acc[d] = 0.0f;
    float mx = -INFINITY, l = 0.0f;
#if CAUSAL
    const IDX_T visible = min((IDX_T)SK, (IDX_T)(m + CAUSAL_OFFSET + 1));
#else
    const IDX_T visible = SK;
#endif
    IDX_T n = 0;
    for (; n < visible; ++n)
        clf_attend(bt, m, n, qrow, acc, &mx, &l, CLF_ARGS);
#if CAUSAL && !CAUSAL_FILL_INF
    if (!(mx - CAUSAL_FILL > 110.0f))
        for (; n < SK; ++n)
            clf_fold(bt, n, CAUSAL_FILL, acc, &mx, &l, CLF_ARGS);
#endif
#if NAN_FILL
    /* Every weight of the row is NaN (the softmax of a NaN, +inf or
     * all -inf row): each key weighs NAN_FILL_VALUE instead. The sum is
     * then NaN, or 0 for a row of -inf (the online sum weighs those keys
     * 0 where the softmax takes -inf - -inf). */
    if (!(l > 0.0f)) {
        for (IDX_T d = 0; d < DV; ++d)
            acc[d] = 0.0f;
        for (IDX_T k = 0; k < SK; ++k)
            for (IDX_T d = 0; d < DV; ++d)
                acc[d] += NAN_FILL_VALUE * clf_load_v(bt, k, d, CLF_ARGS);
        l = 1.0f;
    }
#endif
    for (IDX_T d = 0; d < DV; ++d)
        clf_store(bt, m, d, acc[d] / l, CLF_ARGS);
}
