/* GEMM region, GPU form: C = A @ B for BATCH products of M x K by K x N,
 * with the prologue applied while operand tiles load and the epilogue
 * applied to the accumulator before the only store.
 *
 * A work-group of (TM / WM) * (TN / WN) work-items computes one TM x TN tile
 * of one product in steps of TK along K: the A and B tiles go to local
 * memory, then each work-item accumulates a WM x WN block in registers from
 * float4 reads of local memory. A work-item's rows and columns come in runs
 * of 4, the runs TM / WM * 4 (TN / WN * 4) apart, so that the float4 reads
 * of a warp do not collide and its stores are contiguous runs.
 *
 * Codegen prepends (and tuning #defines):
 *   CLF_KERNEL_NAME      the kernel's name, after the ops it fused
 *   CLF_PARAMS/CLF_ARGS  the buffer parameters
 *   M, N, K, BATCH       the product's extents (constants, or for M kernel
 *                        arguments where the sizes are symbolic)
 *   M_WHOLE_TILES        1 where M is a multiple of TM (M itself is never
 *                        read by the preprocessor)
 *   clf_load_a(bt, m, k, ...), clf_load_b(bt, k, n, ...)
 *                        an operand element, prologue applied
 *   clf_store(bt, m, n, acc, ...)
 *                        the epilogue of one element and its stores
 * Where codegen defines CLF_ROW_STATS (and prepends row_stats.cl), A's
 * prologue applies that many statistics of its rows (a norm's): the
 * work-group computes them for its tile's rows first, into local memory,
 * and clf_load_a takes the row's after k.
 * Without them this file is still valid OpenCL C: a plain 64 x 64 product.
 *
 * Tuning: TM, TN (tile, multiples of 4 * the work-items across), TK, WM,
 * WN (multiples of 4), A_K_FAST (1: consecutive work-items load
 * consecutive k of A, for A stored row-major; 0: consecutive m),
 * B_N_FAST (likewise n of B), VEC_A / VEC_B (1: codegen provides
 * clf_load_a4(bt, m, k) / clf_load_b4(bt, k, n), four consecutive k of a
 * row of A / n of a row of B, for operands stored contiguously that way),
 * GROUP_M (tile rows walked together). The launch is 1-D: BATCH *
 * ceil(M / TM) * ceil(N / TN) work-groups of NT work-items. */
#ifndef IDX_T
#define IDX_T uint
#endif
#ifndef TM
#define TM 64
#endif
#ifndef TN
#define TN 64
#endif
#ifndef TK
#define TK 16
#endif
#ifndef WM
#define WM 4
#endif
#ifndef WN
#define WN 4
#endif
#ifndef A_K_FAST
#define A_K_FAST 1
#endif
#ifndef B_N_FAST
#define B_N_FAST 1
#endif

#ifndef CLF_KERNEL_NAME
#define CLF_KERNEL_NAME clf_gemm_example
#define M 64
#define M_WHOLE_TILES 1
#define N 64
#define K 64
#define BATCH 1
#define CLF_PARAMS __global const float *restrict a, __global const float *restrict b, __global float *restrict c
#define CLF_ARGS a, b, c
static inline float clf_load_a(IDX_T bt, IDX_T m, IDX_T k, CLF_PARAMS) { return a[m * K + k]; }
static inline float clf_load_b(IDX_T bt, IDX_T k, IDX_T n, CLF_PARAMS) { return b[k * N + n]; }
static inline void clf_store(IDX_T bt, IDX_T m, IDX_T n, float acc, CLF_PARAMS) { c[m * N + n] = acc; }
#endif

#ifndef VEC_A
#define VEC_A 0
#endif
#ifndef VEC_B
#define VEC_B 0
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif

/* Bounds checks that vanish at compile time where the extent is a multiple
 * of the tile. */
#if M_WHOLE_TILES
#define IN_M(m) (true)
#else
#define IN_M(m) ((m) < M)
#endif
#if N % TN == 0
#define IN_N(n) (true)
#else
#define IN_N(n) ((n) < N)
#endif
#if K == 0
/* Empty operands: the first k-tile, loaded before the loop, must not read
 * them (K % TK == 0 would make every k "in range"). */
#define IN_K(k) (false)
#elif K % TK == 0
#define IN_K(k) (true)
#else
#define IN_K(k) ((k) < K)
#endif

#define TX (TN / WN)  /* work-items across a tile's columns */
#define TY (TM / WM)  /* and down its rows */
#define NT (TX * TY)
#define TILES_M ((M + TM - 1) / TM)
#define TILES_N ((N + TN - 1) / TN)
#define LDA (TM + 4)  /* local row pitch of A^T: shifts banks, keeps float4 alignment */
#define AS_FLOATS (TK * LDA)
#define BS_FLOATS (TK * TN)
/* Elements of each tile one work-item stages through registers. */
#define LA ((TM * TK + NT - 1) / NT)
#define LB ((TK * TN + NT - 1) / NT)
#define LA4 ((TM * TK / 4 + NT - 1) / NT)
#define LB4 ((TK * TN / 4 + NT - 1) / NT)

/* Element (m, k) of A, row mm of the tile (its statistics in st_l). */
#ifdef CLF_ROW_STATS
#define CLF_LOAD_A(bt, mm, m, k)                                                                   \
    clf_load_a(bt, m, k, *(__local const clf_row_stat_values *)(st_l + (mm) * CLF_ROW_STATS), CLF_ARGS)
#else
#define CLF_LOAD_A(bt, mm, m, k) clf_load_a(bt, m, k, CLF_ARGS)
#endif

/* Loads the A and B elements of the k-tile at k0 that work-item t stages
 * into registers (ra/rb, or ra4/rb4 with float4 loads where codegen found
 * the operand contiguous along its fast axis: VEC_A, VEC_B). */
#if VEC_A
#define LOAD_A(k0)                                                                                 \
    for (int s = 0; s < LA4; ++s) {                                                                \
        const int l = t + s * NT;                                                                  \
        const int mm = l / (TK / 4), kq = l % (TK / 4);                                            \
        const IDX_T m = m0 + (IDX_T)mm, k = (k0) + (IDX_T)(kq * 4);                                \
        if ((TM * TK / 4) % NT == 0 || l < TM * TK / 4)                                            \
            ra4[s] = (IN_M(m) && IN_K(k))                            \
                         ? clf_load_a4(bt, m, k, CLF_ARGS) : (float4)(0.0f);                       \
    }
#define STORE_A(buf)                                                                               \
    for (int s = 0; s < LA4; ++s) {                                                                \
        const int l = t + s * NT;                                                                  \
        const int mm = l / (TK / 4), kq = l % (TK / 4);                                            \
        if ((TM * TK / 4) % NT == 0 || l < TM * TK / 4) {                                          \
            __local float *d = as + (buf) * AS_FLOATS + kq * 4 * LDA + mm;                         \
            d[0] = ra4[s].s0; d[LDA] = ra4[s].s1; d[2 * LDA] = ra4[s].s2; d[3 * LDA] = ra4[s].s3;  \
        }                                                                                          \
    }
#else
#define LOAD_A(k0)                                                                                 \
    for (int s = 0; s < LA; ++s) {                                                                 \
        const int l = t + s * NT;                                                                  \
        const int mm = A_K_FAST ? l / TK : l % TM, kk = A_K_FAST ? l % TK : l / TM;                \
        const IDX_T m = m0 + (IDX_T)mm, k = (k0) + (IDX_T)kk;                                      \
        if ((TM * TK) % NT == 0 || l < TM * TK)                                                    \
            ra[s] = (IN_M(m) && IN_K(k))                             \
                        ? CLF_LOAD_A(bt, mm, m, k) : 0.0f;                                         \
    }
#define STORE_A(buf)                                                                               \
    for (int s = 0; s < LA; ++s) {                                                                 \
        const int l = t + s * NT;                                                                  \
        const int mm = A_K_FAST ? l / TK : l % TM, kk = A_K_FAST ? l % TK : l / TM;                \
        if ((TM * TK) % NT == 0 || l < TM * TK)                                                    \
            as[(buf) * AS_FLOATS + kk * LDA + mm] = ra[s];                                         \
    }
#endif
#if VEC_B
#define LOAD_B(k0)                                                                                 \
    for (int s = 0; s < LB4; ++s) {                                                                \
        const int l = t + s * NT;                                                                  \
        const int kk = l / (TN / 4), nq = l % (TN / 4);                                            \
        const IDX_T n = n0 + (IDX_T)(nq * 4), k = (k0) + (IDX_T)kk;                                \
        if ((TK * TN / 4) % NT == 0 || l < TK * TN / 4)                                            \
            rb4[s] = (IN_N(n) && IN_K(k))                            \
                         ? clf_load_b4(bt, k, n, CLF_ARGS) : (float4)(0.0f);                       \
    }
#define STORE_B(buf)                                                                               \
    for (int s = 0; s < LB4; ++s) {                                                                \
        const int l = t + s * NT;                                                                  \
        if ((TK * TN / 4) % NT == 0 || l < TK * TN / 4)                                            \
            bs4[(buf) * BS_FLOATS / 4 + l] = rb4[s];                                               \
    }
#else
#define LOAD_B(k0)                                                                                 \
    for (int s = 0; s < LB; ++s) {                                                                 \
        const int l = t + s * NT;                                                                  \
        const int kk = B_N_FAST ? l / TN : l % TK, nn = B_N_FAST ? l % TN : l / TK;                \
        const IDX_T n = n0 + (IDX_T)nn, k = (k0) + (IDX_T)kk;                                      \
        if ((TK * TN) % NT == 0 || l < TK * TN)                                                    \
            rb[s] = (IN_N(n) && IN_K(k))                             \
                        ? clf_load_b(bt, k, n, CLF_ARGS) : 0.0f;                                   \
    }
#define STORE_B(buf)                                                                               \
    for (int s = 0; s < LB; ++s) {                                                                 \
        const int l = t + s * NT;                                                                  \
        const int kk = B_N_FAST ? l / TN : l % TK, nn = B_N_FAST ? l % TN : l / TK;                \
        if ((TK * TN) % NT == 0 || l < TK * TN)                                                    \
            bs[(buf) * BS_FLOATS + kk * TN + nn] = rb[s];                                          \
    }
#endif

__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
void CLF_KERNEL_NAME(CLF_PARAMS, const IDX_T numel)
{
    /* Two stages: the next k-tile is loaded into registers while this one
     * is multiplied, then stored to the other stage; one barrier a step. */
    __local float4 as4[2 * AS_FLOATS / 4];
    __local float4 bs4[2 * BS_FLOATS / 4];
    __local float *as = (__local float *)as4;
    __local float *bs = (__local float *)bs4;
#if VEC_A
    float4 ra4[LA4];
#else
    float ra[LA];
#endif
#if VEC_B
    float4 rb4[LB4];
#else
    float rb[LB];
#endif

    /* Tiles in groups of GROUP_M tile rows, column by column within a
     * group, so that concurrent work-groups share operand tiles in cache. */
    const IDX_T g = (IDX_T)get_group_id(0);
    const IDX_T bt = g / (TILES_M * TILES_N);
    const IDX_T tile = g % (TILES_M * TILES_N);
    const IDX_T group = tile / (GROUP_M * TILES_N);
    const IDX_T first_m = group * GROUP_M;
    const IDX_T rows = TILES_M - first_m < GROUP_M ? TILES_M - first_m : GROUP_M;
    const IDX_T in_group = tile % (GROUP_M * TILES_N);
    const IDX_T m0 = (first_m + in_group % rows) * TM, n0 = in_group / rows * TN;
    const int t = (int)get_local_id(0);
    const int tx = t % TX, ty = t / TX;

    float4 acc[WM][WN / 4];
    for (int i = 0; i < WM; ++i)
        for (int j = 0; j < WN / 4; ++j)
            acc[i][j] = (float4)(0.0f);

#ifdef CLF_ROW_STATS
    /* The tile's rows' statistics. */
    __local float st_l[TM * CLF_ROW_STATS], st_red[NT];
    clf_row_stats_group(bt, m0, 0, M - m0 < (IDX_T)TM ? (int)(M - m0) : TM, t, NT, st_l, st_red, CLF_ARGS);
#endif
    LOAD_A((IDX_T)0)
    LOAD_B((IDX_T)0)
    STORE_A(0)
    STORE_B(0)
    barrier(CLK_LOCAL_MEM_FENCE);
    int cur = 0;
    for (IDX_T k0 = 0; k0 < K; k0 += TK) {
        const bool more = k0 + TK < K;
        if (more) {
            LOAD_A(k0 + TK)
            LOAD_B(k0 + TK)
        }
        const __local float4 *a4 = as4 + cur * (AS_FLOATS / 4);
        const __local float4 *btile = bs4 + cur * (BS_FLOATS / 4);
#pragma unroll
        for (int kk = 0; kk < TK; ++kk) {
            float4 av[WM / 4], bv[WN / 4];
            for (int i = 0; i < WM / 4; ++i)
                av[i] = a4[(kk * LDA) / 4 + i * TY + ty];
            for (int j = 0; j < WN / 4; ++j)
                bv[j] = btile[(kk * TN) / 4 + j * TX + tx];
            for (int i = 0; i < WM / 4; ++i) {
                for (int j = 0; j < WN / 4; ++j) {
                    acc[4 * i + 0][j] = fma((float4)(av[i].s0), bv[j], acc[4 * i + 0][j]);
                    acc[4 * i + 1][j] = fma((float4)(av[i].s1), bv[j], acc[4 * i + 1][j]);
                    acc[4 * i + 2][j] = fma((float4)(av[i].s2), bv[j], acc[4 * i + 2][j]);
                    acc[4 * i + 3][j] = fma((float4)(av[i].s3), bv[j], acc[4 * i + 3][j]);
                }
            }
        }
        if (more) {
            STORE_A(cur ^ 1)
            STORE_B(cur ^ 1)
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        cur ^= 1;
    }

    for (int i = 0; i < WM; ++i) {
        const IDX_T m = m0 + (IDX_T)(((i / 4) * TY + ty) * 4 + i % 4);
        if (!IN_M(m))
            continue;
        for (int j = 0; j < WN / 4; ++j) {
            const IDX_T n = n0 + (IDX_T)((j * TX + tx) * 4);
            const float4 v = acc[i][j];
            if (IN_N(n + 3)) {
                clf_store(bt, m, n, v.s0, CLF_ARGS);
                clf_store(bt, m, n + 1, v.s1, CLF_ARGS);
                clf_store(bt, m, n + 2, v.s2, CLF_ARGS);
                clf_store(bt, m, n + 3, v.s3, CLF_ARGS);
            } else {
                if (n < N)
                    clf_store(bt, m, n, v.s0, CLF_ARGS);
                if (n + 1 < N)
                    clf_store(bt, m, n + 1, v.s1, CLF_ARGS);
                if (n + 2 < N)
                    clf_store(bt, m, n + 2, v.s2, CLF_ARGS);
            }
        }
    }
}
