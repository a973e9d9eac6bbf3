/* Attention region, decode form: O = softmax(logits(Q Kt)) V for a few
 * query rows (SQ <= 4) over many keys, as two launches. One work-group
 * per query row could not fill a large GPU (32 heads of one query: 32
 * work-groups on 132 compute units), so the keys are cut into SPLIT chunks
 * of CHUNK and every (row, chunk) pair is a work-group:
 *
 * CLF_KERNEL_NAME, the split: a work-group of WG work-items scores its
 * chunk's keys, a key a work-item, WG keys a pass. The query sits in
 * local memory (every work-item reads the same element: a broadcast). K
 * goes through local memory in pieces of WG keys x KP columns (kt, f32,
 * rows padded by one float): for each piece consecutive work-items load
 * consecutive columns of a K row, so a warp's load covers whole sectors
 * of one row rather than touching 32 rows at one column (a key's own row
 * a work-item made every load instruction fetch 32 sectors and use 8
 * bytes of each, f16); after a barrier each work-item adds its key's
 * partial dot product from its row of the piece, the padding putting the
 * rows that a warp's work-items read at one column in different banks.
 * All KP loads of a work-item's share of a piece are issued before the
 * barrier, and codegen shrinks KP (32 at most) until the kernel's local
 * memory fits the device's. The chunk's logits go to local memory; their
 * maximum, then each key's weight exp(logit - max) against it, then the
 * weighted sum of V with the work-items across DV: VL consecutive
 * work-items read consecutive elements of a V row (coalesced), KG = WG /
 * VL groups of them take every KG-th key when DV is narrower than the
 * work-group, and each work-item loads VU keys' values before adding
 * them (VU x its DVL columns of loads in flight, not one: the sweep is
 * bound by how many loads wait on memory at once). The chunk's state,
 * its maximum, its sum of weights and its DV unnormalised accumulators,
 * is written to the kernel's state (f32, DV + 2 floats a chunk).
 *
 * The combine (clf_combine): the last of a row's SPLIT work-groups to
 * finish (a counter a row) reads the row's chunk states, the work-items
 * across DV, and stores the row; a second launch for it cost a launch gap
 * in every decode layer. No local memory and no barrier: the row's SPLIT
 * states are read by every work-item from the cache.
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
 * DECODE_WIDE (K and V 16-bit buffers read by index arithmetic alone, in
 * whole 16-byte pieces along D and DV; codegen defines clf_stage_k and clf_stage_v,
 * 8 raw values a load, and STAGE_BF16): the same sweeps with 16-byte
 * loads, 8 values a load, where a load of one value a work-item moved 2
 * bytes: K's pieces are read KP / 8 loads a key, and each of the VL = DV
 * / 8 work-items across a V row takes 8 columns, the KG groups' sums
 * added through K's piece of local memory. Where CLF_SHFL is 1 (NVIDIA's
 * driver) f16 values are converted by PTX cvt.
 *
 * Codegen prepends what attention_cpu.cl takes, and SPLIT, CHUNK, WG, VL,
 * KG, KP and VU. Launch: BATCH * SQ * SPLIT work-groups of WG. The kernel
 * takes the parameters, then its state as a buffer and where it starts in
 * it (in uints; zeroed once by the runtime, its counters left at 0 by
 * every launch): BATCH * SQ counters padded to a multiple of 32, then
 * BATCH * SQ * SPLIT * (DV + 2) floats; then numel. Without the
 * definitions this file is valid OpenCL C: one 8 x 8 head over 300 keys. */
#ifndef IDX_T
#define IDX_T uint
#endif

#ifndef CLF_KERNEL_NAME
#define CLF_KERNEL_NAME clf_attention_decode_example
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
#define KP 8
#define VU 4
#define CLF_PARAMS __global const float *restrict q, __global const float *restrict k, __global const float *restrict v, __global float *restrict o
#define CLF_ARGS q, k, v, o
static inline float clf_load_q(IDX_T bt, IDX_T m, IDX_T d, CLF_PARAMS) { return q[m * D + d]; }
static inline float clf_load_k(IDX_T bt, IDX_T d, IDX_T n, CLF_PARAMS) { return k[n * D + d]; }
static inline float clf_load_v(IDX_T bt, IDX_T n, IDX_T d, CLF_PARAMS) { return v[n * DV + d]; }
static inline float clf_logit(IDX_T bt, IDX_T m, IDX_T n, float acc, CLF_PARAMS) { return acc * 0.35355339f; }
static inline void clf_store(IDX_T bt, IDX_T m, IDX_T n, float acc, CLF_PARAMS) { o[m * DV + n] = acc; }
#endif

#ifndef DECODE_WIDE
#define DECODE_WIDE 0
#endif

#if DECODE_WIDE
#if !STAGE_BF16
/* The f16 value of bits h (the low 16) as a float, in registers: vload_half
 * reads memory, and from a private copy NVIDIA's compiler puts that copy
 * in local memory. Normal values: exponent and mantissa moved into f32's
 * places, the exponent rebiased (127 - 15); subnormal ones: the mantissa
 * times 2^-24 (no f32 subnormal in between, which a device may flush); an
 * all-ones exponent: infinity or NaN. */
static inline float clf_f16_bits(uint h)
{
    const uint e = h & 0x7c00u, a = (h & 0x7fffu) << 13, sign = (h & 0x8000u) << 16;
    const float f = e == 0x7c00u ? as_float(a | 0x7f800000u)
                    : e == 0     ? (float)(h & 0x3ffu) * 0x1p-24f
                                 : as_float(a + (112u << 23));
    return as_float(as_uint(f) | sign);
}
#endif

/* DECODE_PTX_CVT (CLF_SHFL's default: NVIDIA's driver) converts f16
 * stages by PTX cvt; -DDECODE_PTX_CVT=0 by clf_f16_bits, to compare. */
#ifndef DECODE_PTX_CVT
#define DECODE_PTX_CVT CLF_SHFL
#endif
#if !STAGE_BF16 && DECODE_PTX_CVT
/* The two f16 values of u as floats by PTX cvt (NVIDIA: one instruction
 * a value, where clf_f16_bits takes about eight). */
static inline void clf_f16x2_bits(uint u, float *lo, float *hi)
{
    float a, b;
    asm("{\n\t.reg .b16 l, h;\n\tmov.b32 {l, h}, %2;\n\tcvt.f32.f16 %0, l;\n\tcvt.f32.f16 %1, h;\n\t}"
        : "=f"(a), "=f"(b)
        : "r"(u));
    *lo = a;
    *hi = b;
}
#endif

/* The 8 16-bit values of a stage as floats. */
static inline void clf_unpack8(uint4 w, float *x)
{
#if STAGE_BF16
    const uint u[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        x[2 * i] = as_float(u[i] << 16);
        x[2 * i + 1] = as_float(u[i] & 0xffff0000u);
    }
#elif DECODE_PTX_CVT
    const uint u[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int i = 0; i < 4; ++i)
        clf_f16x2_bits(u[i], &x[2 * i], &x[2 * i + 1]);
#else
    const uint u[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        x[2 * i] = clf_f16_bits(u[i] & 0xffffu);
        x[2 * i + 1] = clf_f16_bits(u[i] >> 16);
    }
#endif
}
#define KC (KP / 8) /* 16-byte loads a key's piece of K takes */
#endif

/* D rounded up to whole pieces of KP columns (q is zero past D). */
#define DK ((D + KP - 1) / KP * KP)
/* Accumulators a work-item keeps in the weighted sum of V. */
#define DVL ((DV + VL - 1) / VL)
/* A chunk's state in `part`: max, sum, then DV accumulators. */
#define REC (DV + 2)

/* The exponents' base for a maximum mx: mx, or 0 while every logit is
 * -inf (those keys then weigh exp(-inf) = 0, not exp(-inf - -inf) = NaN). */
static inline float clf_base(float mx) { return mx == -INFINITY ? 0.0f : mx; }

/* The logit of key n for query m whose dot product with q is acc; a key
 * the causal mask hides (reached only with a finite fill) has logit
 * CAUSAL_FILL, whatever its row of K holds. */
static inline float clf_decode_logit(IDX_T bt, IDX_T m, IDX_T n, float acc, CLF_PARAMS)
{
#if CAUSAL
    if (n > m + CAUSAL_OFFSET)
        return CAUSAL_FILL;
#endif
    return clf_logit(bt, m, n, acc, CLF_ARGS);
}

/* Reads a float another work-group wrote (atomically: no data race). */
static inline float clf_part_read(__global uint *p) { return as_float(atomic_or(p, 0u)); }

/* The row's output from its SPLIT chunks' states (rec: the row's first),
 * the work-items of the work-group across DV: the row's maximum over the
 * chunks, then every chunk's sum and accumulators rescaled by exp(chunk
 * max - row max), and accumulators / sum stored through clf_store (the
 * epilogue). The chunks' maxima and sums are read once, a chunk a
 * work-item, into local memory (cm: 3 SPLIT floats) where every work-item
 * reads them; each accumulator is read by the one work-item of its
 * column. On the H100 (f16, 32 heads of 128 over 4096 keys, one call):
 * B1 0.061 ms against 0.104 with every work-item reading every maximum
 * and sum atomically (the same addresses, serialised where they meet),
 * B8 0.286 against 0.309. */
static inline void clf_combine(IDX_T bt, IDX_T m, IDX_T lid, __global uint *rec, __local float *cm, CLF_PARAMS)
{
    __local float *cl = cm + SPLIT, *cw = cm + 2 * SPLIT;
    for (IDX_T s = lid; s < (IDX_T)SPLIT; s += WG) {
        cm[s] = clf_part_read(rec + s * REC);
        cl[s] = clf_part_read(rec + s * REC + 1);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    float mx = -INFINITY;
    for (int s = 0; s < SPLIT; ++s)
        mx = fmax(mx, cm[s]);
    const float base = clf_base(mx);
    for (IDX_T s = lid; s < (IDX_T)SPLIT; s += WG)
        cw[s] = exp(cm[s] - base);
    barrier(CLK_LOCAL_MEM_FENCE);
    float l = 0.0f;
    for (int s = 0; s < SPLIT; ++s)
        l += cl[s] * cw[s];
    for (IDX_T d = lid; d < (IDX_T)DV; d += WG) {
        float acc = 0.0f;
        for (int s = 0; s < SPLIT; ++s)
            acc += clf_part_read(rec + s * REC + 2 + d) * cw[s];
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

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void CLF_KERNEL_NAME(CLF_PARAMS, __global uint *restrict state,
                                                                            const uint state_at, const IDX_T numel)
{
    /* The state: a counter a row (padded to 32), then the chunks' states. */
    __global uint *counters = state + state_at;
    __global uint *part = counters + ((IDX_T)(BATCH) * (IDX_T)SQ + 31) / 32 * 32;
    __local int last;
    __local float ql[DK];
    __local float kt[WG * (KP + 1)]; /* a piece of K: WG keys x KP columns */
    __local float w[CHUNK];          /* the chunk's logits, then their weights */
    __local float red[WG];
    __local float cm[3 * SPLIT]; /* the combine's (clf_combine) */
    const IDX_T lid = (IDX_T)get_local_id(0), grp = (IDX_T)get_group_id(0);
    const IDX_T row = grp / SPLIT, n0 = grp % SPLIT * CHUNK;
    const IDX_T bt = row / SQ, m = row % SQ;
#if CAUSAL && CAUSAL_FILL_INF
    const IDX_T keys = min((IDX_T)SK, (IDX_T)(m + CAUSAL_OFFSET + 1));
#else
    const IDX_T keys = SK;
#endif
    const IDX_T len = n0 < keys ? min((IDX_T)CHUNK, keys - n0) : 0;
    for (IDX_T d = lid; d < (IDX_T)DK; d += WG)
        ql[d] = d < (IDX_T)D ? clf_load_q(bt, m, d, CLF_ARGS) : 0.0f;

    /* The logits, a key a work-item, and the chunk's maximum. */
    float mx = -INFINITY;
    for (IDX_T j0 = 0; j0 < len; j0 += WG) {
        float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (IDX_T d0 = 0; d0 < (IDX_T)DK; d0 += KP) {
#if DECODE_WIDE
            /* Load e of the piece: key e / KC, columns 8 (e % KC) on (zeros
             * past D: the stage's guard). */
            uint4 xw[KC];
#pragma unroll
            for (int i = 0; i < KC; ++i) {
                const IDX_T e = lid + (IDX_T)i * WG, r = e / KC, c = e % KC;
                xw[i] = r < len - j0 ? clf_stage_k(bt, n0 + j0 + r, d0 / 8 + c, CLF_ARGS) : (uint4)(0);
            }
            barrier(CLK_LOCAL_MEM_FENCE); /* the previous piece read (and q stored) */
#pragma unroll
            for (int i = 0; i < KC; ++i) {
                const IDX_T e = lid + (IDX_T)i * WG;
                float x[8];
                clf_unpack8(xw[i], x);
#pragma unroll
                for (int u = 0; u < 8; ++u)
                    kt[e / KC * (KP + 1) + e % KC * 8 + u] = x[u];
            }
#else
            /* Element e of the piece: key e / KP, column e % KP. */
            float x[KP];
#pragma unroll
            for (int i = 0; i < KP; ++i) {
                const IDX_T e = lid + (IDX_T)i * WG, r = e / KP, c = e % KP;
                x[i] = r < len - j0 && d0 + c < (IDX_T)D ? clf_load_k(bt, d0 + c, n0 + j0 + r, CLF_ARGS) : 0.0f;
            }
            barrier(CLK_LOCAL_MEM_FENCE); /* the previous piece read (and q stored) */
#pragma unroll
            for (int i = 0; i < KP; ++i) {
                const IDX_T e = lid + (IDX_T)i * WG;
                kt[e / KP * (KP + 1) + e % KP] = x[i];
            }
#endif
            barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
            for (int c = 0; c < KP; ++c)
                s[c & 3] = fma(ql[d0 + c], kt[lid * (KP + 1) + c], s[c & 3]);
        }
        if (lid < len - j0) {
            const float t = clf_decode_logit(bt, m, n0 + j0 + lid, (s[0] + s[1]) + (s[2] + s[3]), CLF_ARGS);
            w[j0 + lid] = t;
            mx = fmax(mx, t);
        }
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
#if DECODE_WIDE
    /* Work-item c of a group takes columns 8c .. 8c + 7. */
    float acc[8];
#pragma unroll
    for (int e = 0; e < 8; ++e)
        acc[e] = 0.0f;
    IDX_T j = g;
    for (; j + (VU - 1) * KG < len; j += VU * KG) {
        uint4 x[VU];
#pragma unroll
        for (int u = 0; u < VU; ++u)
            x[u] = clf_stage_v(bt, n0 + j + u * KG, c, CLF_ARGS);
#pragma unroll
        for (int u = 0; u < VU; ++u) {
            const float p = w[j + u * KG];
            float y[8];
            clf_unpack8(x[u], y);
#pragma unroll
            for (int e = 0; e < 8; ++e)
                acc[e] = fma(p, y[e], acc[e]);
        }
    }
    for (; j < len; j += KG) {
        const float p = w[j];
        float y[8];
        clf_unpack8(clf_stage_v(bt, n0 + j, c, CLF_ARGS), y);
#pragma unroll
        for (int e = 0; e < 8; ++e)
            acc[e] = fma(p, y[e], acc[e]);
    }
#else
    float acc[DVL];
#pragma unroll
    for (int e = 0; e < DVL; ++e)
        acc[e] = 0.0f;
    IDX_T j = g;
    for (; j + (VU - 1) * KG < len; j += VU * KG) {
        /* VU keys' values loaded before any is used. */
        float x[VU][DVL];
#pragma unroll
        for (int u = 0; u < VU; ++u)
#pragma unroll
            for (int e = 0; e < DVL; ++e)
                x[u][e] = c + e * VL < DV ? clf_load_v(bt, n0 + j + u * KG, c + e * VL, CLF_ARGS) : 0.0f;
#pragma unroll
        for (int u = 0; u < VU; ++u) {
            const float p = w[j + u * KG];
#pragma unroll
            for (int e = 0; e < DVL; ++e)
                acc[e] = fma(p, x[u][e], acc[e]);
        }
    }
    for (; j < len; j += KG) {
        const float p = w[j];
#pragma unroll
        for (int e = 0; e < DVL; ++e)
            if (c + e * VL < DV)
                acc[e] = fma(p, clf_load_v(bt, n0 + j, c + e * VL, CLF_ARGS), acc[e]);
    }
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
    __global uint *rec = part + grp * (IDX_T)REC;
    if (lid == 0) {
        for (int i = 1; i < WG; ++i)
            l += red[i];
        atomic_xchg(rec, as_uint(mx));
        atomic_xchg(rec + 1, as_uint(l));
    }
#if DECODE_WIDE
    /* The KG groups' 8 columns a work-item added through K's piece (WG x
     * (KP + 1) floats, KP >= 8; its last reads were before the barriers
     * above). */
#pragma unroll
    for (int e = 0; e < 8; ++e)
        kt[lid * 8 + e] = acc[e];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (g == 0) {
#pragma unroll
        for (int e = 0; e < 8; ++e) {
            float s = 0.0f;
            for (int i = 0; i < KG; ++i)
                s += kt[(i * VL + c) * 8 + e];
            atomic_xchg(rec + 2 + c * 8 + e, as_uint(s));
        }
    }
#elif KG > 1
    /* KG groups of VL work-items (DV <= VL here, so one accumulator
     * each): the groups' sums added through local memory. */
    barrier(CLK_LOCAL_MEM_FENCE);
    red[lid] = acc[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (g == 0 && c < DV) {
        float s = 0.0f;
        for (int i = 0; i < KG; ++i)
            s += red[i * VL + c];
        atomic_xchg(rec + 2 + c, as_uint(s));
    }
#else
#pragma unroll
    for (int e = 0; e < DVL; ++e)
        if (c + e * VL < DV)
            atomic_xchg(rec + 2 + c + e * VL, as_uint(acc[e]));
#endif
    /* Counted in the row's counter; the row's last work-group to finish
     * combines its chunks and sets the counter back to 0 for the next
     * launch (counters start at 0: the runtime zeroes the state once). */
    mem_fence(CLK_GLOBAL_MEM_FENCE);
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (lid == 0) {
        last = atomic_inc(counters + row) == SPLIT - 1;
        mem_fence(CLK_GLOBAL_MEM_FENCE);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!last)
        return;
    clf_combine(bt, m, lid, part + row * (IDX_T)(SPLIT * REC), cm, CLF_ARGS);
    if (lid == 0)
        atomic_xchg(counters + row, 0u);
}
