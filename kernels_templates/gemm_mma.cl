/* GEMM region, tensor-core form (NVIDIA sm_80 and later, f16 or bf16
 * operands, or f32 ones as TF32 where the caller allows it): C = A @ B for
 * BATCH products of M x K by K x N on the tensor cores through inline PTX
 * (mma.sync.aligned.m16n8k16, or m16n8k8 on TF32; f32 accumulators), the
 * prologue applied while operand tiles load and the epilogue applied to
 * each accumulator before its only store, as gemm.cl does.
 *
 * MMA_TF32: values take two 16-bit units in the stages and a k step is 16
 * of them, so that every staged row still takes 64 bytes; in those units a
 * TF32 fragment is where the 16-bit one is, and ldmatrix reads it along the
 * rows (across, 32-bit reads); each fragment register is rounded to TF32
 * (cvt.rna) as it is read.
 *
 * A work-group of WARPS_M x WARPS_N warps computes one BM x BN block of one
 * product (BM = 16 FM WARPS_M, BN = 8 FN WARPS_N); each warp a 16 FM x 8 FN
 * block made of FM x FN mma tiles of 16 x 8 (FM x FN x 4 f32 accumulators
 * a lane). The block walks K in steps of BK (32 16-bit values, 16 f32)
 * through STAGES stages in local memory. Each operand is staged in its own
 * layout: A as [m][k] (A_K_FAST) or [k][m]; B as [k][n] (B_N_FAST) or
 * [n][k]; so that every piece of 16 bytes a work-item stages is one
 * write; rows padded by 16 bytes (STAGE_PAD, codegen's choice where two
 * stages of them fit in the 48 KiB a kernel may take) or, unpadded, with
 * their 16-byte chunks permuted (SWZ), so that the 8 rows an ldmatrix
 * reads fall in 8 different groups of 4 banks.
 * Fragments are read by ldmatrix.x4: A's four registers of a 16 x 16 tile,
 * B's two registers of two 8-column tiles; .trans where the staged rows
 * run along the fragment's columns ([k][m] for A, [k][n] for B).
 *
 * Operands reach local memory in pieces of 16 bytes (PV values) along the
 * staged rows: clf_stage_a/clf_stage_b read a piece through the generated
 * loads (clf_load_a, clf_load_b: prologue applied; their values are the
 * 16-bit type's own, so packing them is exact) into registers, written to
 * the stage after the step in hand is multiplied; where the operand lies
 * in a buffer as it is (rows a multiple of a piece) codegen defines
 * clf_stage_a_at/clf_stage_b_at (with CLF_HAVE_STAGE_A, CLF_HAVE_STAGE_B),
 * the piece's address, and it is copied by cp.async (16 bytes, zeros past
 * the extents), STAGES - 1 steps ahead of the one multiplied. One barrier
 * a step. Past M, N and K the stages hold zeros, and stores are guarded;
 * K = 0 stores the epilogue of 0, as gemm.cl does.
 *
 * Codegen prepends kernels_templates/mma_sync.cl (clf_pack2, clf_mma) and
 * what gemm.cl takes (without the tiling), MMA_BF16 (1: bf16 operands, 0:
 * f16), MMA_TF32, FM, FN, WARPS_M, WARPS_N, STAGES, STAGE_PAD, A_K_FAST and
 * B_N_FAST.
 * Launch: BATCH * ceil(M / BM) * ceil(N / BN) work-groups of NTHREADS.
 *
 * CLF_MMA_EMULATE (a build option, for testing on devices without PTX):
 * clf_pack2, ldmatrix, cp.async and clf_mma_block in plain OpenCL C, the
 * warp's fragments exchanged through local memory, so that the rest of
 * this file runs anywhere. */
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
#ifndef FN
#define FN 4
#endif
#ifndef WARPS_M
#define WARPS_M 2
#endif
#ifndef WARPS_N
#define WARPS_N 2
#endif
#ifndef STAGES
#define STAGES 2
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
#ifndef MMA_TF32
#define MMA_TF32 0
#endif

/* 16-bit units a value takes in the stages, values a 16-byte piece holds,
 * and values a k step takes: 64 bytes of each staged row either way (an
 * m16n8k16 16-bit mma or an m16n8k8 TF32 one per 16 units). */
#define VW (MMA_TF32 ? 2 : 1)
#define PV (8 / VW)
#define BK (32 / VW)
#define BKU 32

#define BM (16 * FM * WARPS_M)
#define BN (8 * FN * WARPS_N)
#define NTHREADS (32 * WARPS_M * WARPS_N)
#define TILES_M ((M + BM - 1) / BM)
#define TILES_N ((N + BN - 1) / BN)

/* The staged layouts: rows, and 16-bit units a row takes. */
#if A_K_FAST
#define A_ROWS BM
#define A_ROW BKU
#else
#define A_ROWS BK
#define A_ROW (BM * VW)
#endif
#if B_N_FAST
#define B_ROWS BK
#define B_ROW (BN * VW)
#else
#define B_ROWS BN
#define B_ROW BKU
#endif
/* STAGE_PAD 1: rows padded by 16 bytes instead of their chunks permuted
 * (more local memory: two stages of 128 x 128 blocks, not three). */
#ifndef STAGE_PAD
#define STAGE_PAD 0
#endif
#define A_STAGE (A_ROWS * (A_ROW + 8 * STAGE_PAD))
#define B_STAGE (B_ROWS * (B_ROW + 8 * STAGE_PAD))
#define APIECES (A_ROWS * A_ROW / 8)
#define BPIECES (B_ROWS * B_ROW / 8)
/* Where value c of staged row r lies in a stage whose rows take `row`
 * values (a power of two, at least 16): the row's 16-byte chunks are
 * permuted, chunk c / 8 stored at (c / 8) ^ key(r), so that the 8 rows an
 * ldmatrix reads at one chunk, and 8 pieces along a column, fall in 8
 * different groups of 4 banks: key r % 8 for rows of 8 chunks or more (128
 * bytes: every row starts in bank 0), else (r / (8 / chunks)) % chunks
 * (2 or 4 rows share 128 bytes). */
#define SWZ_KEY(r, row) ((row) >= 64 ? (r) % 8 : (r) / (64 / (row)) % ((row) / 8))
#if STAGE_PAD
#define SWZ(r, c, row) ((r) * ((row) + 8) + (c))
#else
#define SWZ(r, c, row) ((r) * (row) + ((((c) / 8) ^ SWZ_KEY(r, row)) * 8) + (c) % 8)
#endif

#define ACH ((APIECES + NTHREADS - 1) / NTHREADS)
#define BCH ((BPIECES + NTHREADS - 1) / NTHREADS)

/* Staged through registers (the generated loads) or by cp.async. */
#ifdef CLF_HAVE_STAGE_A
#define ASYNC_A 1
#else
#define ASYNC_A 0
#endif
#ifdef CLF_HAVE_STAGE_B
#define ASYNC_B 1
#else
#define ASYNC_B 0
#endif

#if CLF_MMA_EMULATE
/* clf_unpack, clf_pack2 and clf_mma_dot: kernels_templates/mma_sync.cl. */

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
                for (uint e = 0; e < 2; ++e)
                    acc[i][j][2 * h + e] = clf_mma_dot(acc[i][j][2 * h + e], w + i * 4 * 32,
                                                       w + (FM * 4 + j * 2) * 32, g, 2 * t + e, h);
    barrier(CLK_LOCAL_MEM_FENCE);
}

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

#endif

/* Waits for all but the newest STAGES - 2 groups of this work-item's
 * copies (clf_copy16, mma_sync.cl). */
#if STAGES == 2
#define clf_copy_wait() CLF_COPY_WAIT(0)
#elif STAGES == 3
#define clf_copy_wait() CLF_COPY_WAIT(1)
#else
#define clf_copy_wait() CLF_COPY_WAIT(2)
#endif

/* An f32 value's bits rounded to TF32 (10 mantissa bits), to nearest,
 * ties away from zero, as cvt.rna.tf32.f32 does. */
static inline uint clf_tf32(uint u)
{
#if CLF_MMA_EMULATE
    return isfinite(as_float(u)) ? (u + 0x1000u) & 0xffffe000u : u;
#else
    uint r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(as_float(u)));
    return r;
#endif
}

/* The four registers of an mma fragment from a stage s of rows of `row`
 * values (SWZ): register i holds rows r0 + dr + ro(i) + g and values dc +
 * co(i) + 2t, + 1 of the fragment's matrix (A: rows m, values k; B: rows
 * n, values k), with (ro, co)(i) = (8 (i % 2), 8 (i / 2)) for A (a_order:
 * a0..a3 of a 16 x 16 tile) and (8 (i / 2), 8 (i % 2)) for B (b0, b1 of
 * two 8-row tiles). along: the staged rows are the matrix's rows, else
 * its columns (staged row c, value r). r0: the warp's first row, a
 * multiple of its extent (a power of two, at least 16); dr, dc: multiples
 * of 16 within it. So the lane's address at (r0 + dr, dc) is the one at
 * (r0, 0) moved by whole rows and its chunk index XORed (no carries, and
 * the key SWZ applies is the same for rows 16 apart): the address of the
 * warp's origin is computed once, each fragment's is an add and an XOR of
 * constants. clf_ldsm_at: the address (16-bit units from s) lane `lane`
 * gives ldmatrix. */
static inline int clf_ldsm_at(int row, bool along, bool a_order, int r0, int dr, int dc, int lane)
{
    /* Lane L gives the address of row L % 8 of matrix L / 8. */
    const int i = lane / 8, l = lane % 8;
    const int ro = 8 * (a_order ? i % 2 : i / 2), co = 8 * (a_order ? i / 2 : i % 2);
    const int origin = along ? SWZ(r0 + ro + l, co, row) : SWZ(co + l, r0 + ro, row);
#if STAGE_PAD
    return along ? origin + dr * (row + 8) + dc : origin + dc * (row + 8) + dr;
#else
    return along ? (origin + dr * row) ^ (dc / 8 * 8) : (origin + dc * row) ^ (dr / 8 * 8);
#endif
}

static inline void clf_frag4(__local const ushort *s, int row, bool along, bool a_order, int r0, int dr, int dc,
                             uint lane, uint *f)
{
#if MMA_TF32
    /* In 16-bit units the TF32 fragments are the 16-bit ones (register i:
     * value (dc + co(i)) / 2 + t of rows r0 + dr + ro(i) + g), so ldmatrix
     * reads them along the rows; across, where ldmatrix .trans would
     * transpose halves of values, four 32-bit reads. */
    if (!along) {
        const int g = (int)lane / 4, t = (int)lane % 4;
        for (int i = 0; i < 4; ++i) {
            const int r = r0 + dr + g + 8 * (a_order ? i % 2 : i / 2), c = (dc + 8 * (a_order ? i / 2 : i % 2)) / 2 + t;
            f[i] = clf_tf32(*(__local const uint *)(s + SWZ(c, 2 * r, row)));
        }
        return;
    }
#endif
#if CLF_MMA_EMULATE
    /* ldmatrix itself: register i of lane (g, t) holds values 2t, 2t + 1
     * of row g of matrix i (.trans: value g of its rows 2t and 2t + 1),
     * the rows at the addresses lanes 8i .. 8i + 7 give (clf_ldsm_at). */
    const int g = (int)lane / 4, t = (int)lane % 4;
    for (int i = 0; i < 4; ++i)
        f[i] = along ? *(__local const uint *)(s + clf_ldsm_at(row, along, a_order, r0, dr, dc, 8 * i + g) + 2 * t)
                     : (uint)s[clf_ldsm_at(row, along, a_order, r0, dr, dc, 8 * i + 2 * t) + g] |
                           (uint)s[clf_ldsm_at(row, along, a_order, r0, dr, dc, 8 * i + 2 * t + 1) + g] << 16;
#else
    clf_ldsm_x4((uint)(ulong)(s + clf_ldsm_at(row, along, a_order, r0, dr, dc, (int)lane)), !along, f);
#endif
#if MMA_TF32
    for (int i = 0; i < 4; ++i)
        f[i] = clf_tf32(f[i]);
#endif
}

/* PV values as the 16 bytes a piece of a stage takes: packed to 16-bit
 * pairs, or TF32's f32 bits (rounded when fragments are read). */
static inline uint4 clf_piece(const float *x)
{
#if MMA_TF32
    return (uint4)(as_uint(x[0]), as_uint(x[1]), as_uint(x[2]), as_uint(x[3]));
#else
    return (uint4)(clf_pack2(x[0], x[1]), clf_pack2(x[2], x[3]), clf_pack2(x[4], x[5]), clf_pack2(x[6], x[7]));
#endif
}

/* A piece of A (zeros past M and K): A_K_FAST: A[m][k .. k + PV - 1];
 * else A[m .. m + PV - 1][k]. */
#if !ASYNC_A
static inline uint4 clf_stage_a(IDX_T bt, IDX_T m, IDX_T k, CLF_PARAMS)
{
    float x[PV];
#pragma unroll
    for (int i = 0; i < PV; ++i)
#if A_K_FAST
        x[i] = k + i < K ? clf_load_a(bt, m, k + i, CLF_ARGS) : 0.0f;
#else
        x[i] = m + i < M ? clf_load_a(bt, m + i, k, CLF_ARGS) : 0.0f;
#endif
    return clf_piece(x);
}
#endif

/* A piece of B (zeros past K and N): B_N_FAST: B[k][n .. n + PV - 1];
 * else B[k .. k + PV - 1][n]. */
#if !ASYNC_B
static inline uint4 clf_stage_b(IDX_T bt, IDX_T k, IDX_T n, CLF_PARAMS)
{
    float x[PV];
#pragma unroll
    for (int i = 0; i < PV; ++i)
#if B_N_FAST
        x[i] = n + i < N ? clf_load_b(bt, k, n + i, CLF_ARGS) : 0.0f;
#else
        x[i] = k + i < K ? clf_load_b(bt, k + i, n, CLF_ARGS) : 0.0f;
#endif
    return clf_piece(x);
}
#endif

/* Piece e of a staged tile whose rows take `row` 16-bit units: its row and
 * first unit (consecutive work-items on consecutive pieces of a row). */
#define PIECE_ROW(e, row) ((e) / ((row) / 8))
#define PIECE_COL(e, row) ((e) % ((row) / 8) * 8)
#define PIECE_AT(e, row) SWZ(PIECE_ROW(e, row), PIECE_COL(e, row), row)

/* Starts the step at k0: A's and B's pieces of work-item lid, copied into
 * the stage sa, sb (cp.async) or read into registers ra, rb (clf_put
 * writes them). */
static inline void clf_fetch(IDX_T bt, IDX_T m0, IDX_T n0, IDX_T k0, IDX_T lid, __local ushort *sa,
                             __local ushort *sb, uint4 *ra, uint4 *rb, CLF_PARAMS)
{
#pragma unroll
    for (int i = 0; i < ACH; ++i) {
        const IDX_T e = lid + (IDX_T)i * NTHREADS;
        if (APIECES % NTHREADS != 0 && e >= APIECES)
            break;
        const IDX_T row = PIECE_ROW(e, A_ROW), col = PIECE_COL(e, A_ROW);
#if A_K_FAST
        const IDX_T m = m0 + row, k = k0 + col / VW;
#else
        const IDX_T m = m0 + col / VW, k = k0 + row;
#endif
        const bool in = m < M && k < K;
#if ASYNC_A
        clf_copy16(sa + PIECE_AT(e, A_ROW), clf_stage_a_at(bt, in ? m : 0, in ? k : 0, CLF_ARGS), in);
#else
        ra[i] = in ? clf_stage_a(bt, m, k, CLF_ARGS) : (uint4)(0);
#endif
    }
#pragma unroll
    for (int i = 0; i < BCH; ++i) {
        const IDX_T e = lid + (IDX_T)i * NTHREADS;
        if (BPIECES % NTHREADS != 0 && e >= BPIECES)
            break;
        const IDX_T row = PIECE_ROW(e, B_ROW), col = PIECE_COL(e, B_ROW);
#if B_N_FAST
        const IDX_T k = k0 + row, n = n0 + col / VW;
#else
        const IDX_T k = k0 + col / VW, n = n0 + row;
#endif
        const bool in = n < N && k < K;
#if ASYNC_B
        clf_copy16(sb + PIECE_AT(e, B_ROW), clf_stage_b_at(bt, in ? k : 0, in ? n : 0, CLF_ARGS), in);
#else
        rb[i] = in ? clf_stage_b(bt, k, n, CLF_ARGS) : (uint4)(0);
#endif
    }
}

/* Writes pieces r (chunks of them, of a tile of `pieces` whose staged rows
 * take `row` 16-bit units), read by clf_fetch into registers, to stage s. */
static inline void clf_put_pieces(IDX_T lid, const uint4 *r, int chunks, int pieces, int row, __local ushort *s)
{
#pragma unroll
    for (int i = 0; i < chunks; ++i) {
        const IDX_T e = lid + (IDX_T)i * NTHREADS;
        if (pieces % NTHREADS == 0 || e < (IDX_T)pieces)
            *(__local uint4 *)(s + PIECE_AT(e, row)) = r[i];
    }
}

/* Writes the pieces clf_fetch read into registers to the stage sa, sb. */
static inline void clf_put(IDX_T lid, const uint4 *ra, const uint4 *rb, __local ushort *sa, __local ushort *sb)
{
#if !ASYNC_A
    clf_put_pieces(lid, ra, ACH, APIECES, A_ROW, sa);
#endif
#if !ASYNC_B
    clf_put_pieces(lid, rb, BCH, BPIECES, B_ROW, sb);
#endif
}

__kernel __attribute__((reqd_work_group_size(NTHREADS, 1, 1))) void CLF_KERNEL_NAME(CLF_PARAMS, const IDX_T numel)
{
    __local ushort as[STAGES * A_STAGE] __attribute__((aligned(16)));
    __local ushort bs[STAGES * B_STAGE] __attribute__((aligned(16)));
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
    /* The warp's block in the group's. */
    const int wm = (int)(warp / WARPS_N) * (16 * FM), wn = (int)(warp % WARPS_N) * (8 * FN);

    float acc[FM][FN][4];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j)
            acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;

    uint4 ra[ACH], rb[BCH];
    const IDX_T steps = (K + BK - 1) / BK;
    /* The first STAGES - 1 steps. */
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if ((IDX_T)s < steps) {
            clf_fetch(bt, m0, n0, (IDX_T)s * BK, lid, as + s * A_STAGE, bs + s * B_STAGE, ra, rb, CLF_ARGS);
            clf_put(lid, ra, rb, as + s * A_STAGE, bs + s * B_STAGE);
        }
        clf_copy_commit();
    }
    for (IDX_T kt = 0; kt < steps; ++kt) {
        /* Step kt has arrived, and every warp is done with step kt - 1,
         * whose stage the step STAGES - 1 ahead takes. */
        clf_copy_wait();
        barrier(CLK_LOCAL_MEM_FENCE);
        const IDX_T next = kt + STAGES - 1, nst = next % STAGES;
        if (next < steps)
            clf_fetch(bt, m0, n0, next * BK, lid, as + nst * A_STAGE, bs + nst * B_STAGE, ra, rb, CLF_ARGS);
        clf_copy_commit();
        __local const ushort *sa = as + kt % STAGES * A_STAGE, *sb = bs + kt % STAGES * B_STAGE;
#pragma unroll
        for (int kk = 0; kk < BKU; kk += 16) {
            uint af[FM][4], bf[FN][2];
#pragma unroll
            for (int i = 0; i < FM; ++i)
                clf_frag4(sa, A_ROW, A_K_FAST, true, wm, 16 * i, kk, lane, af[i]);
#pragma unroll
            for (int j = 0; j < FN; j += 2)
                clf_frag4(sb, B_ROW, !B_N_FAST, false, wn, 8 * j, kk, lane, bf[j]);
            clf_mma_block(acc, af, bf CLF_MMA_X);
        }
        if (next < steps)
            clf_put(lid, ra, rb, as + nst * A_STAGE, bs + nst * B_STAGE);
    }

#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const IDX_T m = m0 + (IDX_T)(wm + i * 16 + h * 8) + g;
            if (m >= M)
                continue;
#pragma unroll
            for (int j = 0; j < FN; ++j) {
                const IDX_T n = n0 + (IDX_T)(wn + j * 8) + 2 * t;
                if (n < N)
                    clf_store(bt, m, n, acc[i][j][2 * h], CLF_ARGS);
                if (n + 1 < N)
                    clf_store(bt, m, n + 1, acc[i][j][2 * h + 1], CLF_ARGS);
            }
        }
}
