/* Attention region, GPU form: O = softmax(logits(Q Kt)) V for BATCH x SQ
 * query rows over SK keys. A work-group of BQ work-items takes BQ
 * consecutive query rows of one batch, a work-item one row; the group
 * walks the keys in tiles of BK, loading each tile of K and V into local
 * memory once for all its rows (the loads coalesce along D), and every
 * work-item folds the tile's keys into its row with an online softmax
 * (running maximum and sum in registers, accumulators rescaled when the
 * maximum grows). The scores and weights are never stored; lengths need
 * not be multiples of the tiles.
 *
 * The query row, the accumulators and the tiles' rows are float4s (D and
 * DV padded with zeros to DP and DVP, multiples of 4): every local read
 * brings four values, one read for four FMAs (one read per FMA held the
 * H200 to a quarter of its f32 rate). Keys fold in groups of CH: their
 * scores first, then one rescale of the accumulators for the group.
 *
 * Codegen prepends what attention_cpu.cl takes, and BQ and BK. CAUSAL:
 * tiles past the group's last visible key are skipped, and each row stops
 * at its own (see attention_cpu.cl for the finite-fill check; a row that
 * needs the skipped keys visits them alone, from global memory).
 *
 * Launch: BATCH * ceil(SQ / BQ) work-groups of BQ. A few rows over many
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
#define BK 4
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

#define QBLOCKS ((SQ + BQ - 1) / BQ)
#define DP ((D + 3) / 4 * 4)
#define DVP ((DV + 3) / 4 * 4)
#define D4 (DP / 4)
#define DV4 (DVP / 4)
#ifndef CH
#define CH 4
#endif

/* Four consecutive elements of a q row or v row from global memory as a
 * float4, from element 4 * d4 (zeros past D or DV). */
static inline float4 clf_load_q4(IDX_T bt, IDX_T m, IDX_T d4, CLF_PARAMS)
{
    float4 x;
    x.x = 4 * d4 + 0 < D ? clf_load_q(bt, m, 4 * d4 + 0, CLF_ARGS) : 0.0f;
    x.y = 4 * d4 + 1 < D ? clf_load_q(bt, m, 4 * d4 + 1, CLF_ARGS) : 0.0f;
    x.z = 4 * d4 + 2 < D ? clf_load_q(bt, m, 4 * d4 + 2, CLF_ARGS) : 0.0f;
    x.w = 4 * d4 + 3 < D ? clf_load_q(bt, m, 4 * d4 + 3, CLF_ARGS) : 0.0f;
    return x;
}
static inline float4 clf_load_v4(IDX_T bt, IDX_T n, IDX_T d4, CLF_PARAMS)
{
    float4 x;
    x.x = 4 * d4 + 0 < DV ? clf_load_v(bt, n, 4 * d4 + 0, CLF_ARGS) : 0.0f;
    x.y = 4 * d4 + 1 < DV ? clf_load_v(bt, n, 4 * d4 + 1, CLF_ARGS) : 0.0f;
    x.z = 4 * d4 + 2 < DV ? clf_load_v(bt, n, 4 * d4 + 2, CLF_ARGS) : 0.0f;
    x.w = 4 * d4 + 3 < DV ? clf_load_v(bt, n, 4 * d4 + 3, CLF_ARGS) : 0.0f;
    return x;
}

/* Loads the tile of keys n0 .. n0 + BK - 1 into rows of DP and DVP floats
 * (zeros past SK, D and DV). */
static inline void clf_load_tile(IDX_T bt, IDX_T n0, IDX_T lid, __local float *kt, __local float *vt, CLF_PARAMS)
{
    for (IDX_T e = lid; e < (IDX_T)BK * DP; e += BQ) {
        const IDX_T j = e / DP, d = e % DP;
        kt[e] = n0 + j < SK && d < D ? clf_load_k(bt, d, n0 + j, CLF_ARGS) : 0.0f;
    }
    for (IDX_T e = lid; e < (IDX_T)BK * DVP; e += BQ) {
        const IDX_T j = e / DVP, d = e % DVP;
        vt[e] = n0 + j < SK && d < DV ? clf_load_v(bt, n0 + j, d, CLF_ARGS) : 0.0f;
    }
}

static inline float clf_dot4(const float4 *q4, __local const float4 *k4)
{
    float4 s = (float4)(0.0f);
#pragma unroll
    for (int d = 0; d < D4; ++d)
        s = fma(q4[d], k4[d], s);
    return (s.x + s.y) + (s.z + s.w);
}

/* The running state's base: its maximum, or 0 while every logit so far is
 * -inf (exp is then taken against 0, so those keys weigh 0 rather than
 * -inf - -inf = NaN; a row of -inf only ends in 0 / 0 = NaN, as the
 * unfused softmax gives). */
static inline float clf_base(float mx) { return mx == -INFINITY ? 0.0f : mx; }

/* Folds one key's logit t into the running maximum and sum: returns its
 * weight, *corr the factor the accumulators are rescaled by first. */
static inline float clf_fold(float t, float *mx, float *l, float *corr)
{
    const float tmax = fmax(*mx, t), base = clf_base(tmax);
    const float p = exp(t - base);
    *corr = exp(*mx - base);
    *l = *l * *corr + p;
    *mx = tmax;
    return p;
}

/* Folds key n with logit t into one row's state, its V row read from
 * global memory. */
static inline void clf_fold_global(IDX_T bt, IDX_T n, float t, float4 *a4, float *mx, float *l, CLF_PARAMS)
{
    float corr;
    const float p = clf_fold(t, mx, l, &corr);
#pragma unroll
    for (int d = 0; d < DV4; ++d)
        a4[d] = fma((float4)(p), clf_load_v4(bt, n, d, CLF_ARGS), a4[d] * corr);
}

/* Folds keys n0 + j0 .. n0 + j1 - 1 of the tile into one row's state. */
static inline void clf_attend_tile(IDX_T bt, IDX_T m, IDX_T n0, IDX_T j0, IDX_T j1, const float4 *q4, float4 *a4,
                                   float *mx, float *l, __local const float4 *kt4, __local const float4 *vt4,
                                   CLF_PARAMS)
{
    IDX_T j = j0;
    for (; j + CH <= j1; j += CH) {
        float t[CH];
        float tmax = *mx;
#pragma unroll
        for (int c = 0; c < CH; ++c) {
            t[c] = clf_logit(bt, m, n0 + j + c, clf_dot4(q4, kt4 + (j + c) * D4), CLF_ARGS);
            tmax = fmax(tmax, t[c]);
        }
        const float base = clf_base(tmax), corr = exp(*mx - base);
        float p[CH], psum = 0.0f;
#pragma unroll
        for (int c = 0; c < CH; ++c) {
            p[c] = exp(t[c] - base);
            psum += p[c];
        }
        *l = *l * corr + psum;
#pragma unroll
        for (int d = 0; d < DV4; ++d) {
            float4 a = a4[d] * corr;
#pragma unroll
            for (int c = 0; c < CH; ++c)
                a = fma((float4)(p[c]), vt4[(j + c) * DV4 + d], a);
            a4[d] = a;
        }
        *mx = tmax;
    }
    for (; j < j1; ++j) {
        float corr;
        const float p = clf_fold(clf_logit(bt, m, n0 + j, clf_dot4(q4, kt4 + j * D4), CLF_ARGS), mx, l, &corr);
#pragma unroll
        for (int d = 0; d < DV4; ++d)
            a4[d] = fma((float4)(p), vt4[j * DV4 + d], a4[d] * corr);
    }
}

/* Element d of a float4 array of private values. */
static inline float clf_lane(const float4 *x, int d)
{
    const float4 v = x[d / 4];
    const int c = d % 4;
    return c == 0 ? v.x : c == 1 ? v.y : c == 2 ? v.z : v.w;
}

__kernel __attribute__((reqd_work_group_size(BQ, 1, 1))) void CLF_KERNEL_NAME(CLF_PARAMS, const IDX_T numel)
{
    __local float4 kt4[BK * D4], vt4[BK * DV4];
    const IDX_T lid = (IDX_T)get_local_id(0), grp = (IDX_T)get_group_id(0);
    const IDX_T bt = grp / QBLOCKS, m0 = grp % QBLOCKS * BQ, m = m0 + lid;
    const bool active = m < SQ;
    /* Work-items past the last row fold the last row again and store
     * nothing: with a test of `active` around the fold, loop-invariant
     * without a causal mask, PoCL 3.1 gave garbage for every row of a
     * block with idle work-items and more than one tile (the test taken
     * out of the loop of barriers, it seems; oclgrind found the kernel
     * right). */
    const IDX_T mc = active ? m : (IDX_T)(SQ - 1);
    float4 q4[D4], a4[DV4];
#pragma unroll
    for (int d = 0; d < D4; ++d) {
        q4[d] = clf_load_q4(bt, mc, d, CLF_ARGS);
    }
#pragma unroll
    for (int d = 0; d < DV4; ++d)
        a4[d] = (float4)(0.0f);
    float mx = -INFINITY, l = 0.0f;
#if CAUSAL
    const IDX_T last = min((IDX_T)SQ, (IDX_T)(m0 + BQ)) - 1;
    const IDX_T group_keys = min((IDX_T)SK, (IDX_T)(last + CAUSAL_OFFSET + 1));
    const IDX_T row_keys = min((IDX_T)SK, (IDX_T)(mc + CAUSAL_OFFSET + 1));
#else
    const IDX_T group_keys = SK, row_keys = SK;
#endif
    for (IDX_T n0 = 0; n0 < group_keys; n0 += BK) {
        barrier(CLK_LOCAL_MEM_FENCE);
        clf_load_tile(bt, n0, lid, (__local float *)kt4, (__local float *)vt4, CLF_ARGS);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (n0 < row_keys)
            clf_attend_tile(bt, mc, n0, 0, min((IDX_T)BK, row_keys - n0), q4, a4, &mx, &l, kt4, vt4, CLF_ARGS);
    }
#if CAUSAL && !CAUSAL_FILL_INF
    /* Rows whose visible keys stay within 110 of a finite fill: the
     * skipped keys weigh, so the row visits them too, from global memory
     * (rare: no barrier, the rest of the group does not wait). */
    if (active && !(mx - CAUSAL_FILL > 110.0f))
        for (IDX_T n = row_keys; n < SK; ++n)
            clf_fold_global(bt, n, CAUSAL_FILL, a4, &mx, &l, CLF_ARGS);
#endif
#if NAN_FILL
    /* A row whose weights are all NaN (its sum NaN, or 0 for a row of
     * -inf) weighs every key NAN_FILL_VALUE instead (attention_cpu.cl),
     * reading V from global memory. */
    if (active && !(l > 0.0f)) {
        for (int d = 0; d < DV4; ++d)
            a4[d] = (float4)(0.0f);
        for (IDX_T n = 0; n < SK; ++n)
            for (int d = 0; d < DV4; ++d) {
                const float4 v = clf_load_v4(bt, n, d, CLF_ARGS);
                a4[d] = fma((float4)(NAN_FILL_VALUE), v, a4[d]);
            }
        l = 1.0f;
    }
#endif
    if (active) {
#pragma unroll
        for (int d = 0; d < DV; ++d)
            clf_store(bt, m, d, clf_lane(a4, d) / l, CLF_ARGS);
    }
}
