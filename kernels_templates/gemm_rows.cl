/* GEMM region, GPU form for products of a few rows (a decode step's
 * x @ W: one row per sequence): C = A @ B for BATCH products of M x K by
 * K x N where every work-group's rows number at most ROWS_MAX.
 *
 * Such a product reads B once and does two flops a value of it: memory
 * bound, its time is B's bytes over the bandwidth. The tiled forms give
 * it one row of tiles (N / TN work-groups, most of a 16- or 32-row tile
 * idle); this form spreads B over every work-item instead. A work-group
 * takes TN columns of every row; its NT work-items split K into KL lanes
 * and each lane reads its share of B's rows of those columns, so that a
 * warp's loads are whole runs of B. The lanes' partial sums meet in local
 * memory, where work-item c adds column c's. A product too narrow to fill
 * the device (a decode step's k and v projections: 512 columns) also cuts
 * K into SPLIT slices of KCH, one work-group each: the slices' sums meet
 * in global memory, added by the last work-group of the block to finish,
 * which applies the epilogue (one launch; the H200, one row of K = 2048
 * by N = 512 in f16: 0.0074 ms split 32 ways against 0.0183 unsplit).
 *
 * B_N_FAST 1 (B stored K x N, row-major): a work-item takes W adjacent
 * columns a k (clf_load_bv: 16 bytes, W = 8 16-bit values or 4 f32); the
 * TN / W column groups of a k run side by side, the lanes k apart.
 * B_N_FAST 0 (B a transpose of an N x K buffer): a work-item takes one
 * column, W consecutive k a load (clf_load_bk), the KL lanes of a column
 * side by side along its K values. Each work-item issues U loads before
 * using any.
 *
 * Codegen prepends:
 *   CLF_KERNEL_NAME      the kernel's name, after the ops it fused
 *   CLF_PARAMS/CLF_ARGS  the buffer parameters
 *   M, N, K, BATCH       the product's extents (M and BATCH are read only
 *                        in code: a symbolic graph passes them as
 *                        arguments, runtime/source_lift.h)
 *   ROWS_MAX             the most rows a work-group takes (1 or 8)
 *   B_SHARED             1 where B is the same for every product of the
 *                        batch: a work-group then takes BATCH * M rows,
 *                        each of B's values read once; 0: a work-group
 *                        per product and column block
 *   TN, NT               columns and work-items of a work-group (TN <=
 *                        NT: a work-item sums a column's lanes)
 *   SPLIT, KCH           slices of K and K values a slice (a multiple of
 *                        W); SPLIT > 1 adds two parameters after
 *                        CLF_PARAMS, a buffer and where the kernel's state
 *                        starts in it (in uints): BLOCKS counters (padded
 *                        to a multiple of 32), 0 before the first launch
 *                        and left 0 by each, then BLOCKS * SPLIT *
 *                        ROWS_MAX * TN partial sums (a region of its own,
 *                        zeroed once)
 *   W, CW, U             values a load of B, columns a work-item (W where
 *                        B_N_FAST, else 1), loads in flight
 *   clf_load_a(bt, m, k, ...), clf_load_b(bt, k, n, ...)
 *                        an operand element, prologue applied
 *   clf_load_bv(bt, k, n, ...) (B_N_FAST) / clf_load_bk(bt, k, n, ...)
 *                        B's W values from (k, n) along n / along k
 *   clf_store(bt, m, n, acc, ...)
 *                        the epilogue of one element and its stores
 *   CLF_ROW_STATS        (where A's prologue applies statistics of its
 *                        rows, with row_stats.cl before this file) the
 *                        work-group computes its rows' first, over the
 *                        whole K whatever its slice; clf_load_a takes
 *                        the row's after k
 * The launch is 1-D: SPLIT * BLOCKS work-groups of NT work-items, BLOCKS
 * = (B_SHARED ? 1 : BATCH) * ceil(N / TN). */
#ifndef IDX_T
#define IDX_T uint
#endif
#ifndef B_N_FAST
#define B_N_FAST 1
#endif
#ifndef ROWS_MAX
#define ROWS_MAX 1
#endif
#ifndef TN
#define TN 16
#endif
#ifndef NT
#define NT 256
#endif
#ifndef W
#define W 4
#endif
#ifndef CW
#define CW (B_N_FAST ? W : 1)
#endif
#ifndef U
#define U 4
#endif
#ifndef SPLIT
#define SPLIT 1
#endif

#ifndef CLF_KERNEL_NAME
#define CLF_KERNEL_NAME clf_gemm_rows_example
#define M 1
#define N 64
#define K 64
#define BATCH 1
#define B_SHARED 1
#define KCH K
#define CLF_PARAMS __global const float *restrict a, __global const float *restrict b, __global float *restrict c
#define CLF_ARGS a, b, c
static inline float clf_load_a(IDX_T bt, IDX_T m, IDX_T k, CLF_PARAMS) { return a[m * K + k]; }
static inline float clf_load_b(IDX_T bt, IDX_T k, IDX_T n, CLF_PARAMS) { return b[k * N + n]; }
static inline float4 clf_load_bv(IDX_T bt, IDX_T k, IDX_T n, CLF_PARAMS) { return vload4(0, b + k * N + n); }
static inline void clf_store(IDX_T bt, IDX_T m, IDX_T n, float acc, CLF_PARAMS) { c[m * N + n] = acc; }
#endif

#if B_N_FAST
#define CG (TN / CW)  /* column groups of a work-group */
#else
#define CG TN
#endif
#define KL (NT / CG)  /* lanes along K */
#define TILES_N ((N + TN - 1) / TN)
#define CLF_CAT_(a, b) a##b
#define CLF_CAT(a, b) CLF_CAT_(a, b)
#define VW CLF_CAT(float, W) /* one load of B: W values */
#define VSTORE CLF_CAT(vstore, W)

__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
#if SPLIT > 1
void CLF_KERNEL_NAME(CLF_PARAMS, __global uint *restrict state, const uint state_at, const IDX_T numel)
#else
void CLF_KERNEL_NAME(CLF_PARAMS, const IDX_T numel)
#endif
{
    __local float red[NT * CW];
    const int t = (int)get_local_id(0);
    /* Work-group g: block blk = g % BLOCKS (its product bt0 and columns
     * from n0), the sp-th of the SPLIT slices of K. */
#if B_SHARED
    const IDX_T blocks = (IDX_T)TILES_N;
#else
    const IDX_T blocks = (IDX_T)(BATCH) * (IDX_T)TILES_N;
#endif
    const IDX_T g = (IDX_T)get_group_id(0), blk = g % blocks, sp = g / blocks;
#if B_SHARED
    const IDX_T bt0 = 0, rows = (IDX_T)(BATCH) * (IDX_T)(M);
#else
    const IDX_T bt0 = blk / TILES_N, rows = (IDX_T)(M);
#endif
    const IDX_T n0 = blk % TILES_N * TN;
    const IDX_T k_end = min((IDX_T)(K), (sp + 1) * (IDX_T)(KCH));
#if B_N_FAST
    const int cg = t % CG, kl = t / CG;
    const IDX_T n = n0 + (IDX_T)(cg * CW);
#else
    const int cg = t / KL, kl = t % KL;
    const IDX_T n = n0 + (IDX_T)cg;
#endif
    /* A row r of the work-group is product bt0 + r / M, row r % M (B_SHARED)
     * or row r of product bt0. */
#if B_SHARED
#define ROW_BT(r) ((r) / (IDX_T)(M))
#define ROW_M(r) ((r) % (IDX_T)(M))
#else
#define ROW_BT(r) (bt0)
#define ROW_M(r) (r)
#endif

#ifdef CLF_ROW_STATS
    __local float st_l[ROWS_MAX * CLF_ROW_STATS];
    clf_row_stats_group(bt0, 0, B_SHARED, (int)rows, t, NT, st_l, red, CLF_ARGS);
#define CLF_LOAD_A(bt, r, m, k)                                                                    \
    clf_load_a(bt, m, k, *(__local const clf_row_stat_values *)(st_l + (r) * CLF_ROW_STATS), CLF_ARGS)
#else
#define CLF_LOAD_A(bt, r, m, k) clf_load_a(bt, m, k, CLF_ARGS)
#endif

    float acc[ROWS_MAX][CW];
    for (int r = 0; r < ROWS_MAX; ++r)
        for (int j = 0; j < CW; ++j)
            acc[r][j] = 0.0f;

    /* U loads of B issued before their values are used, so that a
     * work-item keeps U x 16 bytes in flight (the sweep is bound by how
     * many loads wait on memory at once). */
#if B_N_FAST
    /* Lane kl takes k = kl, kl + KL, ... of its slice; a load is W = CW
     * columns, each multiplied by row r's value at k. */
#define ROW_FMA(r, k, b_)                                                                          \
    {                                                                                              \
        const float av = CLF_LOAD_A(ROW_BT(r), r, ROW_M(r), (k));                                  \
        for (int j = 0; j < W; ++j)                                                                \
            acc[r][j] = fma(av, b_[j], acc[r][j]);                                                 \
    }
#define LOAD(k) clf_load_bv(bt0, (k), n, CLF_ARGS)
#define KSTEP KL
    /* Whether the work-item's columns take whole loads: all CW in range. */
    const bool whole = n + (IDX_T)(CW - 1) < N;
#else
    /* Lane kl takes k = W kl, W (kl + KL), ... of its slice: W consecutive
     * k of one column a load, against row r's W values there. */
#define ROW_FMA(r, k, b_)                                                                          \
    {                                                                                              \
        float s = acc[r][0];                                                                       \
        for (int j = 0; j < W; ++j)                                                                \
            s = fma(CLF_LOAD_A(ROW_BT(r), r, ROW_M(r), (k) + (IDX_T)j), b_[j], s);                 \
        acc[r][0] = s;                                                                             \
    }
#define LOAD(k) clf_load_bk(bt0, (k), n, CLF_ARGS)
#define KSTEP (W * KL)
    /* Whether the work-item has a column (its loads are along K). */
    const bool whole = n < N;
#endif
    /* One load's values against every row. */
#define STEP(k, bv)                                                                                \
    {                                                                                              \
        float b_[W];                                                                               \
        VSTORE(bv, 0, b_);                                                                         \
        for (int r = 0; r < ROWS_MAX; ++r)                                                         \
            if ((IDX_T)r < rows)                                                                   \
                ROW_FMA((IDX_T)r, k, b_)                                                           \
    }
    IDX_T k = sp * (IDX_T)(KCH) + (IDX_T)kl * (IDX_T)(KSTEP / KL);
    if (whole) {
        for (; k + (U - 1) * KSTEP + (KSTEP / KL - 1) < k_end; k += U * KSTEP) {
            VW bv[U];
            for (int u = 0; u < U; ++u)
                bv[u] = LOAD(k + (IDX_T)(u * KSTEP));
            for (int u = 0; u < U; ++u)
                STEP(k + (IDX_T)(u * KSTEP), bv[u])
        }
        for (; k + (KSTEP / KL - 1) < k_end; k += KSTEP) {
            const VW bv = LOAD(k);
            STEP(k, bv)
        }
    }
    /* What no whole load covers: B_N_FAST, the last columns (fewer than
     * CW) for every k of the slice; else the slice's last k (fewer than W:
     * KCH is a multiple of W, so only the last slice has them) of the lane
     * whose step they start. */
#if B_N_FAST
    if (!whole) {
        for (k = sp * (IDX_T)(KCH) + (IDX_T)kl; k < k_end; k += KL) {
            for (int j = 0; j < CW; ++j) {
                if (n + (IDX_T)j < N) {
                    const float bv = clf_load_b(bt0, k, n + (IDX_T)j, CLF_ARGS);
                    for (int r = 0; r < ROWS_MAX; ++r)
                        if ((IDX_T)r < rows)
                            acc[r][j] = fma(CLF_LOAD_A(ROW_BT((IDX_T)r), r, ROW_M((IDX_T)r), k), bv,
                                            acc[r][j]);
                }
            }
        }
    }
#else
    if (whole) {
        for (; k < k_end; ++k) {
            const float bv = clf_load_b(bt0, k, n, CLF_ARGS);
            for (int r = 0; r < ROWS_MAX; ++r)
                if ((IDX_T)r < rows)
                    acc[r][0] = fma(CLF_LOAD_A(ROW_BT((IDX_T)r), r, ROW_M((IDX_T)r), k), bv, acc[r][0]);
        }
    }
#endif

    /* The lanes' sums, a row at a time: work-item c < TN adds column n0 +
     * c's KL lanes (in lane order), then stores it (SPLIT 1) or keeps it
     * for the slices' sum. */
    float sum[ROWS_MAX];
    for (int r = 0; r < ROWS_MAX; ++r)
        sum[r] = 0.0f;
    for (int r = 0; r < ROWS_MAX; ++r) {
        if ((IDX_T)r >= rows)
            break; /* rows is the same for the whole work-group */
        for (int j = 0; j < CW; ++j)
            red[t * CW + j] = acc[r][j];
        barrier(CLK_LOCAL_MEM_FENCE);
        if (t < TN) {
            for (int l = 0; l < KL; ++l)
#if B_N_FAST
                sum[r] += red[l * TN + t]; /* lane l's column group t / CW, value t % CW */
#else
                sum[r] += red[t * KL + l];
#endif
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const IDX_T col = n0 + (IDX_T)t;
#if SPLIT > 1
    /* The slices meet through global memory: each work-group writes its
     * sums (partial: BLOCKS x SPLIT x ROWS_MAX x TN floats) and counts
     * itself in its block's counter; the last of the block's SPLIT adds
     * the slices in their order (the same sum whichever finishes last),
     * stores, and sets the counter back to 0 for the next launch
     * (counters start at 0: the runtime zeroes them once). Every access
     * that another work-group's meets is atomic, so that the exchange is
     * no data race (OpenCL 1.2's atomics: exchange to write, or with 0 to
     * read). */
    __local int last;
    __global uint *counters = state + state_at, *partial = counters + (blocks + 31) / 32 * 32;
    if (t < TN)
        for (int r = 0; r < ROWS_MAX && (IDX_T)r < rows; ++r)
            atomic_xchg(partial + ((blk * SPLIT + sp) * ROWS_MAX + (IDX_T)r) * TN + (IDX_T)t, as_uint(sum[r]));
    mem_fence(CLK_GLOBAL_MEM_FENCE);
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (t == 0) {
        last = atomic_inc(counters + blk) == SPLIT - 1;
        mem_fence(CLK_GLOBAL_MEM_FENCE);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!last)
        return;
    if (t < TN) {
        for (int r = 0; r < ROWS_MAX && (IDX_T)r < rows; ++r) {
            float s = 0.0f;
            for (int p = 0; p < SPLIT; ++p)
                s += as_float(
                    atomic_or(partial + ((blk * SPLIT + (IDX_T)p) * ROWS_MAX + (IDX_T)r) * TN + (IDX_T)t, 0u));
            sum[r] = s;
        }
    }
    if (t == 0)
        atomic_xchg(counters + blk, 0u);
#endif
    if (t < TN && col < N)
        for (int r = 0; r < ROWS_MAX && (IDX_T)r < rows; ++r)
            clf_store(ROW_BT((IDX_T)r), ROW_M((IDX_T)r), col, sum[r], CLF_ARGS);
}
