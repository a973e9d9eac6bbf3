/* GEMM region, CPU form: C = A @ B for BATCH products of M x K by K x N.
 * Each work-item is a work-group of its own and computes a TM x TN block
 * of one product, with no barriers, as micro-tiles of WM x WN: for each k a
 * micro-tile loads WN elements of B's row k (VN vectors of VW) and WM
 * scalars of A's column k and accumulates WM * VN vector FMAs in
 * registers, so that the CPU's SIMD units do the work (PoCL does not
 * vectorise across work-items through a loop like this one). The block
 * runs KC steps of k at a time: B's KC x TN panel packed into local memory
 * (clf_pack_b) serves the block's TM / WM micro-tiles of each column from
 * the core's cache, and the block's TM x KC piece of A serves every column,
 * so that B is read from memory M / TM times and A N / TN times instead of
 * once per micro-tile; the sums wait in local memory between k-blocks.
 * Operands come in through clf_load_a / clf_load_b (the prologue applied)
 * and clf_load_bv (VW consecutive elements of a row of B), and where
 * codegen defines CLF_A_VEC through clf_load_av (that many consecutive
 * elements of a row of A); the epilogue and stores through clf_store, and
 * where codegen defines CLF_STORE_VEC clf_store_v (VW consecutive columns
 * of a row). Where codegen defines CLF_ROW_STATS, A's
 * prologue applies that many statistics of its rows (a norm's mean and
 * variance): the block computes them for its TM rows first
 * (clf_row_stats: a loop along the row) and passes each row's to
 * clf_load_a.
 *
 * Codegen prepends CLF_KERNEL_NAME, CLF_PARAMS, CLF_ARGS, M, N, K, BATCH
 * (M may be a kernel argument where sizes are symbolic: the preprocessor
 * never reads it), the load and store functions and the tuning below;
 * without them this file is still valid OpenCL C: a plain 16 x 16 product.
 *
 * Tuning: WM rows (up to 16) and WN columns (4, 8, 16 or 32: VN vectors of
 * VW = min(WN, 16)) per micro-tile; TM and TN multiples of them; TK the
 * k-block KC; CLF_SPAN (default 1) sub-blocks of TN columns a block (COLS
 * columns); CLF_ONE_ROW where M is 1 (B read in place, below), with
 * ONE_ROW_SPLIT slices of ONE_ROW_KCH values of K a block (default 1: K
 * whole). Local memory: (KC + CLF_SPAN * TM) * TN floats, and TM * KC more
 * where CLF_SPAN > 1 (none for one row). The launch is BATCH * ceil(M / TM)
 * * ceil(N / COLS) work-groups of one work-item, times ONE_ROW_SPLIT for
 * one row. ONE_ROW_SPLIT > 1 makes it two launches: this kernel writes
 * the slices' sums (blocks * ONE_ROW_SPLIT * COLS floats) into a region of
 * the executable's scratch (passed after CLF_PARAMS as the buffer and the
 * region's byte offset), then CLF_FINAL_NAME (a work-item a vector of VW
 * columns of a block, the same parameters) adds each column's slices in
 * their order and applies the epilogue. */
#ifndef IDX_T
#define IDX_T uint
#endif
#ifndef WM
#define WM 8
#endif
#ifndef WN
#define WN 8
#endif
#ifndef TM
#define TM WM
#endif
#ifndef TN
#define TN WN
#endif
#if WN > 16
#define VW 16
#else
#define VW WN
#endif
#define VN (WN / VW)

#ifndef CLF_KERNEL_NAME
#define CLF_KERNEL_NAME clf_gemm_cpu_example
#define M 16
#define N 16
#define K 16
#define BATCH 1
#define CLF_PARAMS __global const float *restrict a, __global const float *restrict b, __global float *restrict c
#define CLF_ARGS a, b, c
static inline float clf_load_a(IDX_T bt, IDX_T m, IDX_T k, CLF_PARAMS) { return a[m * K + k]; }
static inline float clf_load_b(IDX_T bt, IDX_T k, IDX_T n, CLF_PARAMS) { return b[k * N + n]; }
#define CLF_VEC_(w) float##w
#define CLF_VEC(w) CLF_VEC_(w)
#define CLF_VLOAD_(w) vload##w
#define CLF_VLOAD(w) CLF_VLOAD_(w)
static inline CLF_VEC(VW) clf_load_bv(IDX_T bt, IDX_T k, IDX_T n, CLF_PARAMS)
{
    return CLF_VLOAD(VW)(0, b + k * N + n);
}
static inline void clf_store(IDX_T bt, IDX_T m, IDX_T n, float acc, CLF_PARAMS) { c[m * N + n] = acc; }
#endif

#define VEC_PASTE_(w) float##w
#define VEC_PASTE(w) VEC_PASTE_(w)
#define VEC_T VEC_PASTE(VW)
#define VSTORE_PASTE_(w) vstore##w
#define VSTORE_PASTE(w) VSTORE_PASTE_(w)
#define VSTORE VSTORE_PASTE(VW)
#define VLOAD_PASTE_(w) vload##w
#define VLOAD_PASTE(w) VLOAD_PASTE_(w)
#define VLOAD VLOAD_PASTE(VW)
#ifndef CLF_SPAN
#define CLF_SPAN 1
#endif
#define COLS (CLF_SPAN * TN) /* a block's columns: CLF_SPAN sub-blocks of TN side by side */
#ifndef ONE_ROW_SPLIT
#define ONE_ROW_SPLIT 1
#endif
#ifndef ONE_ROW_KCH
#define ONE_ROW_KCH K
#endif
#define ONE_ROW_R 4 /* rows of B a step of the one-row sweep */
#define BLOCKS_M ((M + TM - 1) / TM)
#define BLOCKS_N ((N + COLS - 1) / COLS)

#ifndef TK
#define TK 256
#endif
#define KC TK /* the k-block: packed operands of KC steps at a time */
#define MT (TM / WM) /* micro-tiles down a block */
#define NT (TN / WN) /* and across */

/* Element (m, k) of A for row i of the block (its statistics). */
#ifdef CLF_ROW_STATS
#define CLF_LOAD_A(bt, i, m, k) clf_load_a(bt, m, k, *(const clf_row_stat_values *)(st + (i) * CLF_ROW_STATS), CLF_ARGS)
#else
#define CLF_LOAD_A(bt, i, m, k) clf_load_a(bt, m, k, CLF_ARGS)
#endif

/* A's values of one row (row i of the block, element m) for the kn steps
 * of the k-block from k0, into DST(kk) (a macro naming the place of step
 * kk): CLF_A_VEC steps at a time through clf_load_av where codegen gave
 * A's prologue a vector form (an activation's exp or erf sixteen lanes at
 * a time, where one at a time it cost more than the block's FMAs: a
 * 512-row prefill's down projection, silu(gate) * up, on 2 PoCL cores),
 * the rest one by one. */
#ifdef CLF_A_VEC
#ifdef CLF_ROW_STATS
#define CLF_LOAD_AV(bt, i, m, k) clf_load_av(bt, m, k, *(const clf_row_stat_values *)(st + (i) * CLF_ROW_STATS), CLF_ARGS)
#else
#define CLF_LOAD_AV(bt, i, m, k) clf_load_av(bt, m, k, CLF_ARGS)
#endif
#define CLF_PACK_A_ROW(i, m, kn, DST)                                                              \
    {                                                                                              \
        int kk = 0;                                                                                \
        for (; kk + CLF_A_VEC <= (kn); kk += CLF_A_VEC) {                                          \
            float t_[CLF_A_VEC];                                                                   \
            VSTORE_PASTE(CLF_A_VEC)(CLF_LOAD_AV(bt, i, m, k0 + (IDX_T)kk), 0, t_);                 \
            _Pragma("unroll") for (int j_ = 0; j_ < CLF_A_VEC; ++j_)                               \
                DST(kk + j_) = t_[j_];                                                             \
        }                                                                                          \
        for (; kk < (kn); ++kk)                                                                    \
            DST(kk) = CLF_LOAD_A(bt, i, m, k0 + (IDX_T)kk);                                        \
    }
#else
#define CLF_PACK_A_ROW(i, m, kn, DST)                                                              \
    for (int kk = 0; kk < (kn); ++kk)                                                              \
        DST(kk) = CLF_LOAD_A(bt, i, m, k0 + (IDX_T)kk);
#endif

/* Packs the block's B for k in [k0, k0 + kn) into local memory in the order
 * the micro-kernel reads it: nt panels of KC x WN (step k of panel p at
 * [(p * KC + k) * WN]), zero past N, so that every micro-tile's loads of B
 * are consecutive (B's rows are N apart: a step of k is a new page, which
 * ran the unpacked form at about 60% of this one's rate). Each element goes
 * through the prologue once per block. A is read where it lies (the rows
 * of a micro-tile are K apart, each read along k, its lines reused for 16
 * steps): packing it too measured 0-40% slower on PoCL. */
static inline void clf_pack_b(IDX_T bt, IDX_T bn, IDX_T k0, int kn, int nt, __local float *bp, CLF_PARAMS)
{
    for (int kk = 0; kk < kn; ++kk) {
        const IDX_T k = k0 + (IDX_T)kk;
        for (int p = 0; p < nt; ++p) {
            const IDX_T n0 = bn + (IDX_T)(p * WN);
            __local float *dst = bp + (p * KC + kk) * WN;
            if (n0 + WN <= N) {
                for (int v = 0; v < VN; ++v)
                    VSTORE(clf_load_bv(bt, k, n0 + (IDX_T)(v * VW), CLF_ARGS), v, dst);
            } else {
                for (int j = 0; j < WN; ++j)
                    dst[j] = n0 + (IDX_T)j < N ? clf_load_b(bt, k, n0 + (IDX_T)j, CLF_ARGS) : 0.0f;
            }
        }
    }
}

/* Micro-tile (p, q) of a k-block (kn steps from k0): its sums in cs, B's
 * packed panel q, A's value at row i of the micro-tile and step kk through
 * A_AT(i, kk): CLF_A_IN_PLACE reads A where it lies (rows past M read row
 * M - 1, whose sums are never stored), CLF_A_PACKED from ap (CLF_PACK_A:
 * A's prologue is a norm's, evaluated once per block rather than once per
 * micro-tile column). */
#define CLF_A_IN_PLACE(i, kk) CLF_LOAD_A(bt, p * WM + (i), rows[i], k0 + (IDX_T)(kk))
#if CLF_SPAN > 1
#define CLF_A_PACKED(i, kk) apk[((p) * KC + (kk)) * WM + (i)]
#else
#define CLF_A_PACKED(i, kk) ap[(kk) * WM + (i)]
#endif
#define CLF_MICRO_TILE(p, q, A_AT)                                                                 \
    {                                                                                              \
        __local VEC_T *c = csub + ((q) * MT + (p)) * WM * VN;                                      \
        __local const float *b = bp + (q) * KC * WN;                                               \
        IDX_T rows[WM];                                                                            \
        _Pragma("unroll") for (int i = 0; i < WM; ++i) {                                           \
            const IDX_T m = bm + (IDX_T)((p) * WM + i);                                            \
            rows[i] = m < M ? m : M - 1;                                                           \
        }                                                                                          \
        (void)rows;                                                                                \
        VEC_T acc[WM * VN];                                                                        \
        _Pragma("unroll") for (int i = 0; i < WM * VN; ++i)                                        \
            acc[i] = k0 ? c[i] : (VEC_T)(0.0f);                                                    \
        for (int kk = 0; kk < kn; ++kk) {                                                          \
            VEC_T bv[VN];                                                                          \
            _Pragma("unroll") for (int v = 0; v < VN; ++v)                                         \
                bv[v] = VLOAD(v, b + kk * WN);                                                     \
            _Pragma("unroll") for (int i = 0; i < WM; ++i) {                                       \
                const VEC_T av = (VEC_T)(A_AT(i, kk));                                             \
                _Pragma("unroll") for (int v = 0; v < VN; ++v)                                     \
                    acc[i * VN + v] += av * bv[v];                                                 \
            }                                                                                      \
        }                                                                                          \
        _Pragma("unroll") for (int i = 0; i < WM * VN; ++i)                                        \
            c[i] = acc[i];                                                                         \
    }

#if defined(CLF_ONE_ROW) && ONE_ROW_SPLIT > 1
__kernel void CLF_KERNEL_NAME(CLF_PARAMS, __global uchar *restrict partials, const ulong partial_at, const IDX_T numel)
#else
__kernel void CLF_KERNEL_NAME(CLF_PARAMS, const IDX_T numel)
#endif
{
#ifndef CLF_ONE_ROW
    __local float bp[KC * TN];
    __local VEC_T cs[CLF_SPAN * TM * TN / VW]; /* the block's sums, micro-tile by micro-tile */
#if CLF_SPAN > 1
    __local float apk[TM * KC]; /* A's block of a k-block, for every sub-block */
#endif
#endif
#if defined(CLF_ONE_ROW) && ONE_ROW_SPLIT > 1
    /* Work-item g * ONE_ROW_SPLIT + sp: block g's sp-th slice of K. */
    const IDX_T sp = (IDX_T)get_group_id(0) % ONE_ROW_SPLIT, g = (IDX_T)get_group_id(0) / ONE_ROW_SPLIT;
#else
    const IDX_T g = (IDX_T)get_group_id(0);
#endif
    const IDX_T bt = g / (BLOCKS_M * BLOCKS_N);
    const IDX_T block = g % (BLOCKS_M * BLOCKS_N);
    const IDX_T bm = block / BLOCKS_N * TM, bn = block % BLOCKS_N * COLS;
    if (bt >= BATCH)
        return;
    /* The micro-tiles that hold elements of the product: a block past M or
     * N (the blocking is chosen once for every size of a symbolic extent)
     * computes only those. */
    const int mt = M - bm >= TM ? MT : (int)((M - bm + WM - 1) / WM);
#ifdef CLF_ROW_STATS
    float st[TM * CLF_ROW_STATS];
    for (int i = 0; i < mt * WM; ++i)
        clf_row_stats(bt, bm + (IDX_T)i < M ? bm + (IDX_T)i : M - 1, st + i * CLF_ROW_STATS, CLF_ARGS);
#endif
#ifdef CLF_ONE_ROW
    /* One row of A (codegen defines CLF_ONE_ROW where M is 1: a decode
     * step's projections), a work-item's block of COLS columns (CLF_SPAN
     * sub-blocks of TN side by side, as wide as codegen could make them)
     * and its slice of K (all of it, or the sp-th of ONE_ROW_SPLIT). Each
     * element of B is used once, so it is read where it lies, not packed:
     * A's values of KC steps are evaluated once into ap (its prologue: a
     * norm, an activation), then the sweep takes ONE_ROW_R rows of B a
     * step, each along the block's whole width, into sums held in private
     * memory (the core's L1). So B is read in runs of COLS values a row
     * (8 KB of f32 at 2048 columns: two pages) rather than TN (a new page
     * every 512 bytes, which left a strided stream at about 55% of a plain
     * one's rate on 2 PoCL cores; this sweep 1.6-1.9x faster, bench/
     * results/2026-12-07-s37.md). A block this wide leaves few blocks:
     * K's slices give the device its work-items, their sums added by a
     * second launch (CLF_FINAL_NAME, at the end of this file). Columns
     * past the last whole vector inside N add one by one. */
    const int nc = N - bn >= COLS ? COLS : (int)(N - bn); /* the block's columns inside N */
    const int nv = nc / VW;
    float sums[COLS], ap[KC];
    for (int j = 0; j < nc; ++j)
        sums[j] = 0.0f;
#if ONE_ROW_SPLIT > 1
    const IDX_T k_begin = sp * (IDX_T)ONE_ROW_KCH;
    const IDX_T k_end = k_begin >= K ? k_begin : K - k_begin > (IDX_T)ONE_ROW_KCH ? k_begin + (IDX_T)ONE_ROW_KCH : K;
#else
    const IDX_T k_begin = 0, k_end = K;
#endif
    for (IDX_T k0 = k_begin; k0 < k_end; k0 += KC) {
        const int kn = k_end - k0 >= KC ? KC : (int)(k_end - k0);
#define CLF_ONE_ROW_AT(kk) ap[kk]
        CLF_PACK_A_ROW(0, 0, kn, CLF_ONE_ROW_AT)
        int kk = 0;
        for (; kk + ONE_ROW_R <= kn; kk += ONE_ROW_R)
            for (int v = 0; v < nv; ++v) {
                VEC_T s = VLOAD(v, sums);
                _Pragma("unroll") for (int r = 0; r < ONE_ROW_R; ++r)
                    s += (VEC_T)(ap[kk + r]) * clf_load_bv(bt, k0 + (IDX_T)(kk + r), bn + (IDX_T)(v * VW), CLF_ARGS);
                VSTORE(s, v, sums);
            }
        for (; kk < kn; ++kk)
            for (int v = 0; v < nv; ++v) {
                const VEC_T b = clf_load_bv(bt, k0 + (IDX_T)kk, bn + (IDX_T)(v * VW), CLF_ARGS);
                VSTORE(VLOAD(v, sums) + (VEC_T)(ap[kk]) * b, v, sums);
            }
        for (int j = nv * VW; j < nc; ++j)
            for (kk = 0; kk < kn; ++kk)
                sums[j] += ap[kk] * clf_load_b(bt, k0 + (IDX_T)kk, bn + (IDX_T)j, CLF_ARGS);
    }
#if ONE_ROW_SPLIT > 1
    /* The slice's sums for CLF_FINAL_NAME, a launch later, to add. */
    __global float *part = (__global float *)(partials + partial_at) + (g * ONE_ROW_SPLIT + sp) * COLS;
    int j = 0;
    for (; j + VW <= nc; j += VW)
        VSTORE(VLOAD(0, sums + j), 0, part + j);
    for (; j < nc; ++j)
        part[j] = sums[j];
#else
    int j = 0;
#ifdef CLF_STORE_VEC
    for (; j + VW <= nc; j += VW)
        clf_store_v(bt, 0, bn + (IDX_T)j, VLOAD(0, sums + j), CLF_ARGS);
#endif
    for (; j < nc; ++j)
        clf_store(bt, 0, bn + (IDX_T)j, sums[j], CLF_ARGS);
#endif
#else
    /* The block's sub-blocks of TN columns inside N, and the micro-tile
     * columns of sub-block j (those inside N). */
    const int ns = (int)((N - bn < COLS ? N - bn : COLS) + TN - 1) / TN;
#define CLF_SUB_NT(j) (N - (bn + (IDX_T)((j) * TN)) >= TN ? NT : (int)((N - (bn + (IDX_T)((j) * TN)) + WN - 1) / WN))
    for (IDX_T k0 = 0; k0 < K || k0 == 0; k0 += KC) {
        const int kn = k0 >= K ? 0 : K - k0 >= KC ? KC : (int)(K - k0);
#if CLF_SPAN > 1
        /* Several sub-blocks (codegen's CLF_SPAN, where A's loads compute a
         * prologue): A's block of the k-block once into local memory, then
         * each sub-block packs its B and runs its micro-tiles on it, so
         * that the prologue runs once per element for CLF_SPAN sub-blocks. */
        for (int p = 0; p < mt; ++p)
            for (int i = 0; i < WM; ++i) {
                const IDX_T m = bm + (IDX_T)(p * WM + i);
#define CLF_SPAN_AT(kk) apk[(p * KC + (kk)) * WM + i]
                CLF_PACK_A_ROW(p * WM + i, m < M ? m : M - 1, kn, CLF_SPAN_AT)
            }
#endif
        for (int j = 0; j < ns; ++j) {
            const int nt = CLF_SUB_NT(j);
            __local VEC_T *csub = cs + j * (TM * TN / VW);
            clf_pack_b(bt, bn + (IDX_T)(j * TN), k0, kn, nt, bp, CLF_ARGS);
#if CLF_SPAN > 1
            for (int q = 0; q < nt; ++q)
                for (int p = 0; p < mt; ++p)
                    CLF_MICRO_TILE(p, q, CLF_A_PACKED)
#elif defined(CLF_PACK_A)
            /* A's prologue once per element of the block: a micro-tile
             * row's values of the k-block into ap, then every column's
             * micro-tile. */
            for (int p = 0; p < mt; ++p) {
                float ap[KC * WM];
                for (int i = 0; i < WM; ++i) { /* along rows: a row's index arithmetic out of the loop */
                    const IDX_T m = bm + (IDX_T)(p * WM + i);
#define CLF_PACK_AT(kk) ap[(kk) * WM + i]
                    CLF_PACK_A_ROW(p * WM + i, m < M ? m : M - 1, kn, CLF_PACK_AT)
                }
                for (int q = 0; q < nt; ++q)
                    CLF_MICRO_TILE(p, q, CLF_A_PACKED)
            }
#else
            for (int q = 0; q < nt; ++q)
                for (int p = 0; p < mt; ++p)
                    CLF_MICRO_TILE(p, q, CLF_A_IN_PLACE)
#endif
        }
    }
    /* The epilogue, within M and N. */
    for (int j = 0; j < ns; ++j) {
        const int nt = CLF_SUB_NT(j);
        const IDX_T bj = bn + (IDX_T)(j * TN);
        for (int q = 0; q < nt; ++q)
            for (int p = 0; p < mt; ++p)
                for (int i = 0; i < WM; ++i) {
                    const IDX_T m = bm + (IDX_T)(p * WM + i);
                    if (m >= M)
                        break;
                    for (int v = 0; v < VN; ++v) {
#ifdef CLF_STORE_VEC
                        if (bj + (IDX_T)(q * WN + v * VW + VW) <= N) {
                            clf_store_v(bt, m, bj + (IDX_T)(q * WN + v * VW),
                                        cs[j * (TM * TN / VW) + (q * MT + p) * WM * VN + i * VN + v], CLF_ARGS);
                            continue;
                        }
#endif
                        float s[VW];
                        VSTORE(cs[j * (TM * TN / VW) + (q * MT + p) * WM * VN + i * VN + v], 0, s);
                        for (int jj = 0; jj < VW; ++jj) {
                            const IDX_T n = bj + (IDX_T)(q * WN + v * VW + jj);
                            if (n < N)
                                clf_store(bt, m, n, s[jj], CLF_ARGS);
                        }
                    }
                }
    }
#endif
}

#if defined(CLF_ONE_ROW) && ONE_ROW_SPLIT > 1
/* The one-row product's second launch: work-item i takes VW columns (the
 * (i % (COLS / VW))-th vector) of block i / (COLS / VW), adds their
 * ONE_ROW_SPLIT slices' sums in slice order and stores them through the
 * epilogue. */
__kernel void CLF_FINAL_NAME(CLF_PARAMS, __global uchar *restrict partials, const ulong partial_at, const IDX_T numel)
{
    const IDX_T item = (IDX_T)get_global_id(0), g = item / (COLS / VW), j0 = item % (COLS / VW) * VW;
    const IDX_T bt = g / (BLOCKS_M * BLOCKS_N), bn = g % (BLOCKS_M * BLOCKS_N) % BLOCKS_N * COLS;
    if (bt >= BATCH || bn + j0 >= N)
        return;
    __global const float *part = (__global const float *)(partials + partial_at) + g * ONE_ROW_SPLIT * COLS + j0;
    if (bn + j0 + VW <= N) {
        VEC_T s = VLOAD(0, part);
        for (int p = 1; p < ONE_ROW_SPLIT; ++p)
            s += VLOAD(0, part + p * COLS);
#ifdef CLF_STORE_VEC
        clf_store_v(bt, 0, bn + j0, s, CLF_ARGS);
#else
        float v[VW];
        VSTORE(s, 0, v);
        for (int j = 0; j < VW; ++j)
            clf_store(bt, 0, bn + j0 + (IDX_T)j, v[j], CLF_ARGS);
#endif
        return;
    }
    /* The block's last columns past its whole vectors: only those the
     * slices wrote. */
    for (int j = 0; bn + j0 + (IDX_T)j < N; ++j) {
        float t = part[j];
        for (int p = 1; p < ONE_ROW_SPLIT; ++p)
            t += part[p * COLS + j];
        clf_store(bt, 0, bn + j0 + (IDX_T)j, t, CLF_ARGS);
    }
}
#endif
