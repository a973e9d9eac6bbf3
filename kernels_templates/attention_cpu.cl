/* Attention region, CPU form: O = softmax(logits(Q Kt)) V for BATCH x SQ
 * query rows over SK keys, RB consecutive query rows of one batch a
 * work-item, with no local memory and no barriers. A work-item keeps its
 * queries (D values each) and output rows (DV accumulators each) in
 * private floatVW vectors and sweeps the keys once with an online softmax:
 * a running maximum mx and sum l per row, the accumulators rescaled by
 * exp(old max - new max) whenever the maximum grows. The scores and
 * weights are never stored.
 *
 * Vector code, as PoCL does not vectorise across work-items through loops
 * like these: D and DV are cut into chunks of VW (the last one padded with
 * zeros), each chunk of a K or V row one vector load where the operand is
 * a plain buffer (clf_load_kv, clf_load_vv). Keys fold CH at a time: the
 * CH logits of every row first (each K row loaded once for the RB rows,
 * the CH dot products' lanes summed together), then their weights as one
 * floatCH exp, each V row loaded once for the RB rows; the accumulators
 * are rescaled only when a group raises the row's maximum. The logits of
 * the next group are computed before the current one folds (software
 * pipelining: the fold's chain of max, exp and FMAs is long).
 *
 * On PoCL (AVX-512, one thread, f32 B1 H8 S512 D64): 10.8 ms against
 * about 245 for the scalar form this replaced (one row, one key at a time);
 * what each step gave: bench/results/2026-12-02-attention-cpu-pocl.md.
 *
 * Codegen prepends CLF_KERNEL_NAME, CLF_PARAMS, CLF_ARGS, BATCH, SQ, SK, D,
 * DV, VW, CH, RB, CAUSAL (with CAUSAL_OFFSET, CAUSAL_FILL, CAUSAL_FILL_INF),
 * NAN_FILL (with NAN_FILL_VALUE: a row whose weights are NaN weighs every
 * key that instead, as WHERE(ISNAN(w), fill, w) in the graph does), the
 * loads clf_load_q(bt, m, d), clf_load_k(bt, d, n) (K transposed: [D,
 * SK]), clf_load_v(bt, n, d), their vector forms clf_load_qv(bt, m, d),
 * clf_load_kv(bt, d, n), clf_load_vv(bt, n, d) (VW consecutive elements
 * from d, which is a multiple of VW with d + VW <= D or DV), the logits of
 * one score clf_logit(bt, m, n, s) (where CLF_LOGIT_VEC, also those of CH
 * keys n .. n + CH - 1 at once, clf_logit_v(bt, m, n, floatCH s)) and the
 * epilogue clf_store(bt, m, d, o);
 * without them this file is still valid OpenCL C: plain attention of one
 * 8 x 8 head.
 *
 * CAUSAL: query m sees keys n <= m + CAUSAL_OFFSET; the logits of the
 * others are CAUSAL_FILL (-inf when CAUSAL_FILL_INF), which weighs 0 next
 * to any key more than 110 above it (exp underflows to 0 in f32). A row
 * whose visible keys do not rise that far above a finite fill visits the
 * skipped keys too, so the result is the one the unskipped sweep gives.
 * clf_logit is only asked for visible keys (codegen evaluates the causal
 * WHERE as the scores it keeps); a skipped key's logit is CAUSAL_FILL. The
 * RB rows sweep the keys the first of them sees together; each row then
 * takes the few more it sees alone.
 *
 * Launch: BATCH * ceil(SQ / RB) work-items (any local size). A last block
 * short of RB rows computes its last row again in the missing ones and
 * stores none of them. */
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
#define VW 4
#define CH 4
#define RB 2
#define CAUSAL 0
#define NAN_FILL 0
#define CLF_PARAMS __global const float *restrict q, __global const float *restrict k, __global const float *restrict v, __global float *restrict o
#define CLF_ARGS q, k, v, o
static inline float clf_load_q(IDX_T bt, IDX_T m, IDX_T d, CLF_PARAMS) { return q[m * D + d]; }
static inline float clf_load_k(IDX_T bt, IDX_T d, IDX_T n, CLF_PARAMS) { return k[n * D + d]; }
static inline float clf_load_v(IDX_T bt, IDX_T n, IDX_T d, CLF_PARAMS) { return v[n * DV + d]; }
static inline float4 clf_load_qv(IDX_T bt, IDX_T m, IDX_T d, CLF_PARAMS) { return vload4(0, q + m * D + d); }
static inline float4 clf_load_kv(IDX_T bt, IDX_T d, IDX_T n, CLF_PARAMS) { return vload4(0, k + n * D + d); }
static inline float4 clf_load_vv(IDX_T bt, IDX_T n, IDX_T d, CLF_PARAMS) { return vload4(0, v + n * DV + d); }
static inline float clf_logit(IDX_T bt, IDX_T m, IDX_T n, float acc, CLF_PARAMS) { return acc * 0.35355339f; }
static inline void clf_store(IDX_T bt, IDX_T m, IDX_T n, float acc, CLF_PARAMS) { o[m * DV + n] = acc; }
#endif

#define CLF_PASTE_(a, b) a##b
#define CLF_PASTE(a, b) CLF_PASTE_(a, b)
#define VEC_T CLF_PASTE(float, VW)
#define VLOADW CLF_PASTE(vload, VW)
#define VSTOREW CLF_PASTE(vstore, VW)
#define KEYS_T CLF_PASTE(float, CH)
#define VLOADCH CLF_PASTE(vload, CH)
#define DC ((D + VW - 1) / VW)
#define DVC ((DV + VW - 1) / VW)
#define QBLOCKS ((SQ + RB - 1) / RB)

/* Chunk c of a q row, a K row (key n) or a V row: VW elements from c * VW,
 * zeros past D or DV. c is a constant after unrolling, so only the last
 * chunk of a D or DV that VW does not divide takes the scalar path. */
static inline VEC_T clf_q_chunk(IDX_T bt, IDX_T m, int c, CLF_PARAMS)
{
    const IDX_T d0 = (IDX_T)c * VW;
    if (d0 + VW <= D)
        return clf_load_qv(bt, m, d0, CLF_ARGS);
    float x[VW];
    for (int j = 0; j < VW; ++j)
        x[j] = d0 + j < D ? clf_load_q(bt, m, d0 + j, CLF_ARGS) : 0.0f;
    return VLOADW(0, x);
}
static inline VEC_T clf_k_chunk(IDX_T bt, IDX_T n, int c, CLF_PARAMS)
{
    const IDX_T d0 = (IDX_T)c * VW;
    if (d0 + VW <= D)
        return clf_load_kv(bt, d0, n, CLF_ARGS);
    float x[VW];
    for (int j = 0; j < VW; ++j)
        x[j] = d0 + j < D ? clf_load_k(bt, d0 + j, n, CLF_ARGS) : 0.0f;
    return VLOADW(0, x);
}
static inline VEC_T clf_v_chunk(IDX_T bt, IDX_T n, int c, CLF_PARAMS)
{
    const IDX_T d0 = (IDX_T)c * VW;
    if (d0 + VW <= DV)
        return clf_load_vv(bt, n, d0, CLF_ARGS);
    float x[VW];
    for (int j = 0; j < VW; ++j)
        x[j] = d0 + j < DV ? clf_load_v(bt, n, d0 + j, CLF_ARGS) : 0.0f;
    return VLOADW(0, x);
}

/* The sum of a vector's lanes, halves added pairwise. */
static inline float clf_hsum(VEC_T s)
{
#if VW >= 16
    const float8 s8 = s.lo + s.hi;
#elif VW == 8
    const float8 s8 = s;
#endif
#if VW >= 8
    const float4 s4 = s8.lo + s8.hi;
#elif VW == 4
    const float4 s4 = s;
#endif
#if VW >= 4
    const float2 s2 = s4.lo + s4.hi;
#else
    const float2 s2 = s;
#endif
    return s2.x + s2.y;
}

/* The sums of CH vectors' lanes as one floatCH: for CH of 4 or 8 with VW
 * of 8 or 16, halves of pairs of vectors added side by side, so that a
 * shuffle and an add serve two keys (one key at a time, a sum takes
 * log2(VW) of each per key). */
static inline KEYS_T clf_hsum_keys(const VEC_T *s)
{
#if (CH == 4 || CH == 8) && (VW == 8 || VW == 16)
    float8 h[CH];
#pragma unroll
    for (int j = 0; j < CH; ++j)
#if VW == 16
        h[j] = s[j].lo + s[j].hi;
#else
        h[j] = s[j];
#endif
    /* a[i]: lanes 0-3 partial sums of key 2i, 4-7 of key 2i + 1. */
    float8 a[CH / 2];
#pragma unroll
    for (int i = 0; i < CH / 2; ++i)
        a[i] = (float8)(h[2 * i].lo, h[2 * i + 1].lo) + (float8)(h[2 * i].hi, h[2 * i + 1].hi);
    /* b[i]: two lanes a key, keys 4i .. 4i + 3. */
    float8 b[CH / 4];
#pragma unroll
    for (int i = 0; i < CH / 4; ++i)
        b[i] = (float8)(a[2 * i].s01, a[2 * i].s45, a[2 * i + 1].s01, a[2 * i + 1].s45) +
               (float8)(a[2 * i].s23, a[2 * i].s67, a[2 * i + 1].s23, a[2 * i + 1].s67);
#if CH == 8
    return (float8)(b[0].even, b[1].even) + (float8)(b[0].odd, b[1].odd);
#else
    return b[0].even + b[0].odd;
#endif
#else
    float t[CH];
#pragma unroll
    for (int j = 0; j < CH; ++j)
        t[j] = clf_hsum(s[j]);
    return VLOADCH(0, t);
#endif
}

/* The largest lane of a floatCH, by ordered compares (maxps): a NaN logit
 * makes its weight and so the row's sum NaN whatever the maximum. */
static inline float clf_hmax_keys(KEYS_T t)
{
#if CH == 16
    const float8 t8 = select(t.hi, t.lo, t.lo > t.hi);
#elif CH == 8
    const float8 t8 = t;
#endif
#if CH >= 8
    const float4 t4 = select(t8.hi, t8.lo, t8.lo > t8.hi);
#else
    const float4 t4 = t;
#endif
    const float2 t2 = select(t4.hi, t4.lo, t4.lo > t4.hi);
    return t2.x > t2.y ? t2.x : t2.y;
}

/* Lane j (a constant) of a floatCH. */
static inline float clf_key_lane(KEYS_T p, int j)
{
#if CH == 16
    const float8 h = j < 8 ? p.lo : p.hi;
    j %= 8;
#elif CH == 8
    const float8 h = p;
#endif
#if CH >= 8
    const float4 x = j < 4 ? h.lo : h.hi;
    j %= 4;
#else
    const float4 x = p;
#endif
    return j == 0 ? x.x : j == 1 ? x.y : j == 2 ? x.z : x.w;
}

/* The running state's base: its maximum, or 0 while every logit so far is
 * -inf (exp is then taken against 0, so those keys weigh 0 rather than
 * -inf - -inf = NaN; a row of -inf only ends in 0 / 0 = NaN, as the
 * unfused softmax gives). */
static inline float clf_base(float mx) { return mx == -INFINITY ? 0.0f : mx; }

/* The logit of row m's query qr against key n. */
static inline float clf_score(IDX_T bt, IDX_T m, IDX_T n, const VEC_T *qr, CLF_PARAMS)
{
    VEC_T s = (VEC_T)(0.0f);
#pragma unroll
    for (int c = 0; c < DC; ++c)
        s = fma(qr[c], clf_k_chunk(bt, n, c, CLF_ARGS), s);
    return clf_logit(bt, m, n, clf_hsum(s), CLF_ARGS);
}

/* Key n with logit t folded into one row's state (accumulators ar). */
static inline void clf_fold(IDX_T bt, IDX_T n, float t, VEC_T *ar, float *mx, float *l, CLF_PARAMS)
{
    const float tmax = fmax(*mx, t), base = clf_base(tmax);
    const float corr = exp(*mx - base), p = exp(t - base);
    *l = *l * corr + p;
#pragma unroll
    for (int c = 0; c < DVC; ++c)
        ar[c] = fma((VEC_T)(p), clf_v_chunk(bt, n, c, CLF_ARGS), ar[c] * corr);
    *mx = tmax;
}

/* The logits of keys n0 .. n0 + CH - 1 for each of the RB rows (t[r]),
 * each K row loaded once for all of them. */
static inline void clf_logits_group(IDX_T bt, const IDX_T *m, IDX_T n0, const VEC_T *qv, KEYS_T *t, CLF_PARAMS)
{
    VEC_T s[RB][CH];
#pragma unroll
    for (int r = 0; r < RB; ++r)
#pragma unroll
        for (int j = 0; j < CH; ++j)
            s[r][j] = (VEC_T)(0.0f);
#pragma unroll
    for (int c = 0; c < DC; ++c)
#pragma unroll
        for (int j = 0; j < CH; ++j) {
            const VEC_T kc = clf_k_chunk(bt, n0 + j, c, CLF_ARGS);
#pragma unroll
            for (int r = 0; r < RB; ++r)
                s[r][j] = fma(qv[r * DC + c], kc, s[r][j]);
        }
#pragma unroll
    for (int r = 0; r < RB; ++r) {
        /* Lane by lane in registers (through a private array, the lanes
         * went to memory one by one and came back as one vector load,
         * which store forwarding does not serve). */
        const KEYS_T d = clf_hsum_keys(s[r]);
#ifdef CLF_LOGIT_VEC
        t[r] = clf_logit_v(bt, m[r], n0, d, CLF_ARGS);
#else
        KEYS_T tr;
#define CLF_LOGIT_LANE(j, sj) tr.sj = clf_logit(bt, m[r], n0 + j, d.sj, CLF_ARGS)
        CLF_LOGIT_LANE(0, s0);
        CLF_LOGIT_LANE(1, s1);
        CLF_LOGIT_LANE(2, s2);
        CLF_LOGIT_LANE(3, s3);
#if CH >= 8
        CLF_LOGIT_LANE(4, s4);
        CLF_LOGIT_LANE(5, s5);
        CLF_LOGIT_LANE(6, s6);
        CLF_LOGIT_LANE(7, s7);
#endif
#if CH >= 16
        CLF_LOGIT_LANE(8, s8);
        CLF_LOGIT_LANE(9, s9);
        CLF_LOGIT_LANE(10, sa);
        CLF_LOGIT_LANE(11, sb);
        CLF_LOGIT_LANE(12, sc);
        CLF_LOGIT_LANE(13, sd);
        CLF_LOGIT_LANE(14, se);
        CLF_LOGIT_LANE(15, sf);
#endif
#undef CLF_LOGIT_LANE
        t[r] = tr;
#endif
    }
}

/* Keys n0 .. n0 + CH - 1 with logits t[r], visible to every one of the RB
 * rows, folded into their states: one exp of the group's logits and one
 * rescale a row, each V row loaded once for all of them. */
static inline void clf_fold_group(IDX_T bt, IDX_T n0, const KEYS_T *t, VEC_T *av, float *mx, float *l, CLF_PARAMS)
{
    KEYS_T p[RB];
#pragma unroll
    for (int r = 0; r < RB; ++r) {
        const float gmax = clf_hmax_keys(t[r]);
        /* Rescaled only when the maximum grows (rarely, after the first
         * keys): a NaN logit leaves it, and makes its weight NaN. */
        if (gmax > mx[r]) {
            const float corr = exp(mx[r] - clf_base(gmax));
            l[r] *= corr;
#pragma unroll
            for (int c = 0; c < DVC; ++c)
                av[r * DVC + c] *= corr;
            mx[r] = gmax;
        }
        p[r] = exp(t[r] - (KEYS_T)(clf_base(mx[r])));
        const KEYS_T ps = p[r];
#if CH == 16
        const float8 p8 = ps.lo + ps.hi;
#elif CH == 8
        const float8 p8 = ps;
#endif
#if CH >= 8
        const float4 p4 = p8.lo + p8.hi;
#else
        const float4 p4 = ps;
#endif
        l[r] += (p4.x + p4.y) + (p4.z + p4.w);
    }
#pragma unroll
    for (int c = 0; c < DVC; ++c) {
        VEC_T a[RB];
#pragma unroll
        for (int r = 0; r < RB; ++r)
            a[r] = av[r * DVC + c];
#pragma unroll
        for (int j = 0; j < CH; ++j) {
            const VEC_T vc = clf_v_chunk(bt, n0 + j, c, CLF_ARGS);
#pragma unroll
            for (int r = 0; r < RB; ++r)
                a[r] = fma((VEC_T)(clf_key_lane(p[r], j)), vc, a[r]);
        }
#pragma unroll
        for (int r = 0; r < RB; ++r)
            av[r * DVC + c] = a[r];
    }
}

__kernel void CLF_KERNEL_NAME(CLF_PARAMS, const IDX_T numel)
{
    const IDX_T item = (IDX_T)get_global_id(0);
    if (item >= (IDX_T)BATCH * (IDX_T)QBLOCKS)
        return;
    const IDX_T bt = item / QBLOCKS, m0 = item % QBLOCKS * RB;
    IDX_T m[RB];
    VEC_T qv[RB * DC], av[RB * DVC];
    float mx[RB], l[RB];
#pragma unroll
    for (int r = 0; r < RB; ++r) {
        m[r] = min((IDX_T)(m0 + r), (IDX_T)(SQ - 1));
#pragma unroll
        for (int c = 0; c < DC; ++c)
            qv[r * DC + c] = clf_q_chunk(bt, m[r], c, CLF_ARGS);
#pragma unroll
        for (int c = 0; c < DVC; ++c)
            av[r * DVC + c] = (VEC_T)(0.0f);
        mx[r] = -INFINITY;
        l[r] = 0.0f;
    }
    KEYS_T t[RB], tnext[RB];
#pragma unroll
    for (int r = 0; r < RB; ++r)
        tnext[r] = (KEYS_T)(0.0f);
    /* Keys the first row sees (and so every row of the block) together,
     * CH at a time, the rest of them one at a time. */
#if CAUSAL
    const IDX_T common = min((IDX_T)SK, (IDX_T)(m[0] + CAUSAL_OFFSET + 1));
#else
    const IDX_T common = SK;
#endif
    /* Software-pipelined: the logits of group i are computed before group
     * i - 1 folds, so that the fold's chain (max, exp, FMAs) runs beside
     * independent work. One call of each (inlined at -O2 for being the
     * only one; a second made PoCL keep the logits out of line, and
     * always_inline makes clang emit what oclgrind cannot run at -O0). */
    const IDX_T groups = common / CH, n = groups * CH;
    for (IDX_T i = 0; i <= groups; ++i) {
#pragma unroll
        for (int r = 0; r < RB; ++r)
            t[r] = tnext[r];
        if (i < groups)
            clf_logits_group(bt, m, i * CH, qv, tnext, CLF_ARGS);
        if (i > 0)
            clf_fold_group(bt, (i - 1) * CH, t, av, mx, l, CLF_ARGS);
    }
#pragma unroll
    for (int r = 0; r < RB; ++r) {
        VEC_T *ar = av + r * DVC;
#if CAUSAL
        const IDX_T visible = min((IDX_T)SK, (IDX_T)(m[r] + CAUSAL_OFFSET + 1));
#else
        const IDX_T visible = SK;
#endif
        IDX_T nr = n;
        for (; nr < visible; ++nr)
            clf_fold(bt, nr, clf_score(bt, m[r], nr, qv + r * DC, CLF_ARGS), ar, &mx[r], &l[r], CLF_ARGS);
#if CAUSAL && !CAUSAL_FILL_INF
        if (!(mx[r] - CAUSAL_FILL > 110.0f))
            for (; nr < SK; ++nr)
                clf_fold(bt, nr, CAUSAL_FILL, ar, &mx[r], &l[r], CLF_ARGS);
#endif
#if NAN_FILL
        /* Every weight of the row is NaN (the softmax of a NaN, +inf or
         * all -inf row): each key weighs NAN_FILL_VALUE instead. The sum
         * is then NaN, or 0 for a row of -inf (the online sum weighs those
         * keys 0 where the softmax takes -inf - -inf). */
        if (!(l[r] > 0.0f)) {
            for (int c = 0; c < DVC; ++c)
                ar[c] = (VEC_T)(0.0f);
            for (IDX_T nk = 0; nk < SK; ++nk)
                for (int c = 0; c < DVC; ++c)
                    ar[c] = fma((VEC_T)(NAN_FILL_VALUE), clf_v_chunk(bt, nk, c, CLF_ARGS), ar[c]);
            l[r] = 1.0f;
        }
#endif
        if (m0 + r < SQ) {
            for (int c = 0; c < DVC; ++c) {
                float out[VW];
                VSTOREW(ar[c] / l[r], 0, out);
                for (int j = 0; j < VW && c * VW + j < DV; ++j)
                    clf_store(bt, m[r], (IDX_T)(c * VW + j), out[j], CLF_ARGS);
            }
        }
    }
}
