/* GEMM region, tensor-core form (NVIDIA sm_80 and later, f16 or bf16
 * operands): C = A @ B for BATCH products of M x K by K x N on the tensor
 * cores through inline PTX (mma.sync.aligned.m16n8k16, f32 accumulators),
 * the prologue applied while operand tiles load and the epilogue applied
 * to each accumulator before its only store, as gemm.cl does.
 *
 * A work-group of four warps computes one BM x BN block of one product
 * (BM = 32 * FM, BN = 64): the warps in a 2 x 2 grid, each a 16 FM x 32
 * block made of FM x 4 mma tiles of 16 x 8 (FM x 4 x 4 f32 accumulators a
 * lane). The block walks K in steps of BK = 32: A's step staged in local
 * memory as rows of 16-bit values ([m][k]), B's transposed ([n][k]), both
 * rows padded by 8 values, so that every mma fragment is a 32-bit read
 * and the 32 lanes of a warp read 32 different banks (lane (g, t) reads
 * word g * 20 + t of a row pair: g * 20 mod 32 takes 8 values 4 apart).
 * Two stages: the next step is read into registers (clf_fetch) while this
 * one is multiplied, then written to the other stage (clf_put); one
 * barrier a step. Past M, N and K the stages hold zeros, and stores are
 * guarded; K = 0 stores the epilogue of 0, as gemm.cl does.
 *
 * Operands reach local memory as pieces of 8 values, packed to 16 bits:
 * along k (A_K_FAST: A's rows; B_N_FAST 0: B's columns, a transposed B),
 * one 16-byte local write; or across (8 rows of A at one k, 8 columns of
 * B), eight 16-bit writes into the transposed layout, lanes on
 * consecutive k so that a warp's writes fill consecutive words.
 * clf_stage_a/clf_stage_b read a piece through the generated loads
 * (clf_load_a, clf_load_b: prologue applied; their values are the 16-bit
 * type's own, so packing them is exact); codegen defines them instead (with
 * CLF_HAVE_STAGE_A, CLF_HAVE_STAGE_B) as one 16-byte load of raw values
 * when the operand lies in a buffer as it is, rows a multiple of 8 values.
 *
 * Codegen prepends kernels_templates/mma_sync.cl (clf_pack2, clf_mma) and
 * what gemm.cl takes (without the tiling), MMA_BF16 (1:
 * bf16 operands, 0: f16), FM, A_K_FAST and B_N_FAST. Launch: BATCH *
 * ceil(M / BM) * ceil(N / BN) work-groups of 128.
 *
 * CLF_MMA_EMULATE (a build option, for testing on devices without PTX):
 * clf_pack2 and clf_mma_block in plain OpenCL C, the warp's fragments exchanged
 * through local memory, so that the rest of this file runs anywhere. */
#ifndef IDX_T
#define IDX_T uint
#endif

#ifndef CLF_KERNEL_NAME
#define CLF_KERNEL_NAME clf_gemm_mma_example
#define M 64
#define N 64
#define K 64
#define BATCH 1
#define MMA_BF16 0
#define CLF_PARAMS __global const half *restrict a, __global const half *restrict b, __global half *restrict c
#define CLF_ARGS a, b, c
static inline float clf_load_a(IDX_T bt, IDX_T m, IDX_T k, CLF_PARAMS) { return vload_half(m * K + k, a); }
static inline float clf_load_b(IDX_T bt, IDX_T k, IDX_T n, CLF_PARAMS) { return vload_half(k * N + n, b); }
static inline void clf_store(IDX_T bt, IDX_T m, IDX_T n, float acc, CLF_PARAMS) { vstore_half_rte(acc, m * N + n, c); }
#endif

#ifndef FM
#define FM 2
#endif
#ifndef A_K_FAST
#define A_K_FAST 1
#endif
#ifndef B_N_FAST
#define B_N_FAST 1
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef CLF_MMA_EMULATE
#define CLF_MMA_EMULATE 0
#endif

#define FN 4
#define BM (32 * FM)
#define BN (16 * FN)
#define BK 32
#define ROW (BK + 8) /* 16-bit values a staged row of A or B takes */
#define NTHREADS 128
#define TILES_M ((M + BM - 1) / BM)
#define TILES_N ((N + BN - 1) / BN)
#define APIECES (BM * BK / 8)
#define BPIECES (BN * BK / 8)
#define ACH ((APIECES + NTHREADS - 1) / NTHREADS)
#define BCH ((BPIECES + NTHREADS - 1) / NTHREADS)

#if CLF_MMA_EMULATE
/* The 16-bit value h as f32, and x rounded to nearest even as one. */
static inline float clf_unpack(uint h)
{
#if MMA_BF16
    return as_float((h & 0xffffu) << 16);
#else
    const ushort s = (ushort)h;
    return vload_half(0, (__private const half *)&s);
#endif
}

static inline uint clf_pack1(float x)
{
#if MMA_BF16
    const uint u = as_uint(x);
    return isnan(x) ? (u >> 16) | 0x40u : (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
#else
    ushort s;
    vstore_half_rte(x, 0, (__private half *)&s);
    return s;
#endif
}

static inline uint clf_pack2(float lo, float hi) { return clf_pack1(lo) | clf_pack1(hi) << 16; }

/* Registers of one lane's fragments in a k step (clf_mma_block). */
#define FRAG_WORDS (FM * 4 + FN * 2)

/* clf_mma_block of every lane of the calling warp: each lane leaves its
 * fragments in x (FRAG_WORDS words a lane, register-major), then computes
 * its elements of C from the others' (the layouts of the PTX clf_mma
 * below). Every work-item of the group calls it together (barriers). */
static inline void clf_mma_block(float acc[FM][FN][4], uint af[FM][4], uint bf[FN][2], __local uint *x)
{
    const uint lid = (uint)get_local_id(0), lane = lid % 32, g = lane / 4, t = lane % 4;
    __local uint *w = x + lid / 32 * 32 * FRAG_WORDS;
    for (uint i = 0; i < FM; ++i)
        for (uint r = 0; r < 4; ++r)
            w[(i * 4 + r) * 32 + lane] = af[i][r];
    for (uint j = 0; j < FN; ++j)
        for (uint r = 0; r < 2; ++r)
            w[(FM * 4 + j * 2 + r) * 32 + lane] = bf[j][r];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = 0; i < FM; ++i)
        for (uint j = 0; j < FN; ++j)
            for (uint h = 0; h < 2; ++h)
                for (uint e = 0; e < 2; ++e) {
                    float s = acc[i][j][2 * h + e];
                    const uint n = 2 * t + e;
                    for (uint k = 0; k < 16; ++k) {
                        /* A[g + 8h][k]: lane 4g + k%8/2, register h + 2 (k/8);
                         * B[k][n]: lane 4n + k%8/2, register k/8; the half
                         * k%2. */
                        const uint av = w[(i * 4 + h + 2 * (k / 8)) * 32 + g * 4 + k % 8 / 2];
                        const uint bv = w[(FM * 4 + j * 2 + k / 8) * 32 + n * 4 + k % 8 / 2];
                        s = fma(clf_unpack(k % 2 ? av >> 16 : av), clf_unpack(k % 2 ? bv >> 16 : bv), s);
                    }
                    acc[i][j][2 * h + e] = s;
                }
    barrier(CLK_LOCAL_MEM_FENCE);
}
#define CLF_MMA_X , mma_x
#else
/* clf_pack2 and clf_mma: kernels_templates/mma_sync.cl, prepended. */

/* acc[i][j] += A tile i (af[i]) times B tile j (bf[j]) over one 16-deep
 * k step, for every 16 x 8 tile of the warp's block. */
static inline void clf_mma_block(float acc[FM][FN][4], uint af[FM][4], uint bf[FN][2])
{
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j)
            clf_mma(acc[i][j], af[i][0], af[i][1], af[i][2], af[i][3], bf[j][0], bf[j][1]);
}
#define CLF_MMA_X
#endif

/* A piece of A as 16-bit values (zeros past M and K): A_K_FAST: A[m][k ..
 * k + 7]; else A[m .. m + 7][k]. */
#ifndef CLF_HAVE_STAGE_A
static inline uint4 clf_stage_a(IDX_T bt, IDX_T m, IDX_T k, CLF_PARAMS)
{
    float x[8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#if A_K_FAST
        x[i] = k + i < K ? clf_load_a(bt, m, k + i, CLF_ARGS) : 0.0f;
#else
        x[i] = m + i < M ? clf_load_a(bt, m + i, k, CLF_ARGS) : 0.0f;
#endif
    return (uint4)(clf_pack2(x[0], x[1]), clf_pack2(x[2], x[3]), clf_pack2(x[4], x[5]), clf_pack2(x[6], x[7]));
}
#endif

/* A piece of B (zeros past K and N): B_N_FAST: B[k][n .. n + 7]; else
 * B[k .. k + 7][n]. */
#ifndef CLF_HAVE_STAGE_B
static inline uint4 clf_stage_b(IDX_T bt, IDX_T k, IDX_T n, CLF_PARAMS)
{
    float x[8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#if B_N_FAST
        x[i] = n + i < N ? clf_load_b(bt, k, n + i, CLF_ARGS) : 0.0f;
#else
        x[i] = k + i < K ? clf_load_b(bt, k + i, n, CLF_ARGS) : 0.0f;
#endif
    return (uint4)(clf_pack2(x[0], x[1]), clf_pack2(x[2], x[3]), clf_pack2(x[4], x[5]), clf_pack2(x[6], x[7]));
}
#endif

/* Where piece e of a step of rows rows goes (rows of a staged tile: m of A,
 * n of B): along k, row e / 4 and k (e % 4) * 8; across, rows (e / BK) * 8
 * .. + 7 and k e % BK (lanes on consecutive k). */
#define ALONG_ROW(e) ((e) / (BK / 8))
#define ALONG_K(e) ((e) % (BK / 8) * 8)
#define ACROSS_ROW(e) ((e) / BK * 8)
#define ACROSS_K(e) ((e) % BK)

/* Reads work-item lid's pieces of the step at k0 into registers. */
static inline void clf_fetch(IDX_T bt, IDX_T m0, IDX_T n0, IDX_T k0, IDX_T lid, uint4 *ra, uint4 *rb, CLF_PARAMS)
{
#pragma unroll
    for (int i = 0; i < ACH; ++i) {
        const IDX_T e = lid + (IDX_T)i * NTHREADS;
#if A_K_FAST
        const IDX_T m = m0 + ALONG_ROW(e), k = k0 + ALONG_K(e);
#else
        const IDX_T m = m0 + ACROSS_ROW(e), k = k0 + ACROSS_K(e);
#endif
        ra[i] = (APIECES % NTHREADS == 0 || e < APIECES) && m < M && k < K ? clf_stage_a(bt, m, k, CLF_ARGS) : (uint4)(0);
    }
#pragma unroll
    for (int i = 0; i < BCH; ++i) {
        const IDX_T e = lid + (IDX_T)i * NTHREADS;
#if B_N_FAST
        const IDX_T n = n0 + ACROSS_ROW(e), k = k0 + ACROSS_K(e);
#else
        const IDX_T n = n0 + ALONG_ROW(e), k = k0 + ALONG_K(e);
#endif
        rb[i] = (BPIECES % NTHREADS == 0 || e < BPIECES) && n < N && k < K ? clf_stage_b(bt, k, n, CLF_ARGS) : (uint4)(0);
    }
}

/* Writes pieces r (chunks of them, of a tile of `pieces`) into the staged
 * rows s: along k or across (see ALONG_ROW). */
static inline void clf_put_pieces(IDX_T lid, const uint4 *r, int chunks, int pieces, bool along, __local ushort *s)
{
#pragma unroll
    for (int i = 0; i < chunks; ++i) {
        const IDX_T e = lid + (IDX_T)i * NTHREADS;
        if (e >= (IDX_T)pieces)
            continue;
        const uint4 x = r[i];
        if (along) {
            *(__local uint4 *)(s + ALONG_ROW(e) * ROW + ALONG_K(e)) = x;
        } else {
            __local ushort *col = s + ACROSS_ROW(e) * ROW + ACROSS_K(e);
            col[0 * ROW] = (ushort)x.x;
            col[1 * ROW] = (ushort)(x.x >> 16);
            col[2 * ROW] = (ushort)x.y;
            col[3 * ROW] = (ushort)(x.y >> 16);
            col[4 * ROW] = (ushort)x.z;
            col[5 * ROW] = (ushort)(x.z >> 16);
            col[6 * ROW] = (ushort)x.w;
            col[7 * ROW] = (ushort)(x.w >> 16);
        }
    }
}

__kernel __attribute__((reqd_work_group_size(NTHREADS, 1, 1))) void CLF_KERNEL_NAME(CLF_PARAMS, const IDX_T numel)
{
    __local ushort as[2 * BM * ROW] __attribute__((aligned(16)));
    __local ushort bs[2 * BN * ROW] __attribute__((aligned(16)));
#if CLF_MMA_EMULATE
    __local uint mma_x[NTHREADS * FRAG_WORDS];
#endif
    /* Blocks in groups of GROUP_M block rows, column by column within a
     * group (gemm.cl), so that concurrent work-groups share operand tiles
     * in cache. */
    const IDX_T grp = (IDX_T)get_group_id(0);
    const IDX_T bt = grp / (TILES_M * TILES_N);
    const IDX_T tile = grp % (TILES_M * TILES_N);
    const IDX_T group = tile / (GROUP_M * TILES_N);
    const IDX_T first_m = group * GROUP_M;
    const IDX_T rows = TILES_M - first_m < GROUP_M ? TILES_M - first_m : GROUP_M;
    const IDX_T in_group = tile % (GROUP_M * TILES_N);
    const IDX_T m0 = (first_m + in_group % rows) * BM, n0 = in_group / rows * BN;
    const IDX_T lid = (IDX_T)get_local_id(0), warp = lid / 32, lane = lid % 32, g = lane / 4, t = lane % 4;
    const IDX_T wm = warp / 2 * (16 * FM), wn = warp % 2 * (8 * FN); /* the warp's block in the group's */

    float acc[FM][FN][4];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j)
            acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;

    uint4 ra[ACH], rb[BCH];
    clf_fetch(bt, m0, n0, 0, lid, ra, rb, CLF_ARGS);
    clf_put_pieces(lid, ra, ACH, APIECES, A_K_FAST, as);
    clf_put_pieces(lid, rb, BCH, BPIECES, !B_N_FAST, bs);
    barrier(CLK_LOCAL_MEM_FENCE);
    int cur = 0;
    for (IDX_T k0 = 0; k0 < K; k0 += BK) {
        const bool more = k0 + BK < K;
        if (more)
            clf_fetch(bt, m0, n0, k0 + BK, lid, ra, rb, CLF_ARGS);
        /* Lane (g, t)'s fragments start at row g, value 2t of the warp's
         * first tile. */
        __local const ushort *sa = as + cur * (BM * ROW) + (wm + g) * ROW + 2 * t;
        __local const ushort *sb = bs + cur * (BN * ROW) + (wn + g) * ROW + 2 * t;
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            uint af[FM][4], bf[FN][2];
#pragma unroll
            for (int i = 0; i < FM; ++i) {
                __local const ushort *p = sa + i * 16 * ROW + kk * 16;
                af[i][0] = *(__local const uint *)p;
                af[i][1] = *(__local const uint *)(p + 8 * ROW);
                af[i][2] = *(__local const uint *)(p + 8);
                af[i][3] = *(__local const uint *)(p + 8 * ROW + 8);
            }
#pragma unroll
            for (int j = 0; j < FN; ++j) {
                __local const ushort *p = sb + j * 8 * ROW + kk * 16;
                bf[j][0] = *(__local const uint *)p;
                bf[j][1] = *(__local const uint *)(p + 8);
            }
            clf_mma_block(acc, af, bf CLF_MMA_X);
        }
        if (more) {
            clf_put_pieces(lid, ra, ACH, APIECES, A_K_FAST, as + (cur ^ 1) * (BM * ROW));
            clf_put_pieces(lid, rb, BCH, BPIECES, !B_N_FAST, bs + (cur ^ 1) * (BN * ROW));
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        cur ^= 1;
    }

#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const IDX_T m = m0 + wm + (IDX_T)(i * 16 + h * 8) + g;
            if (m >= M)
                continue;
#pragma unroll
            for (int j = 0; j < FN; ++j) {
                const IDX_T n = n0 + wn + (IDX_T)(j * 8) + 2 * t;
                if (n < N)
                    clf_store(bt, m, n, acc[i][j][2 * h], CLF_ARGS);
                if (n + 1 < N)
                    clf_store(bt, m, n + 1, acc[i][j][2 * h + 1], CLF_ARGS);
            }
        }
}
