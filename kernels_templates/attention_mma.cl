/* Attention region, tensor-core form (NVIDIA sm_80 and later, f16 or bf16
 * operands): O = softmax(logits(Q Kt)) V for BATCH x SQ query rows over SK
 * keys, both products on the tensor cores through inline PTX
 * (mma.sync.aligned.m16n8k16, f32 accumulators), as FlashAttention-2
 * computes it.
 *
 * A work-group of WARPS warps takes BQ = WROWS * WARPS consecutive query
 * rows of one batch, a warp WROWS (16 or 32: one or two m tiles). The
 * group walks the keys in tiles of BKT: K's and V's tiles staged in local
 * memory as rows of 16-bit values as they lie ([key][d]), rows padded by 8
 * values so that the lanes' fragment reads (ldmatrix; .trans for V's)
 * fall in different banks. Each warp keeps its query rows as mma A
 * fragments in registers (loaded once), multiplies them by the K tile
 * into WROWS x BKT f32 scores (the mma C layout: lane l holds rows
 * l/4 and l/4 + 8, columns 2(l%4) and 2(l%4)+1 of every 8-column tile),
 * evaluates the logits there (clf_logit: scale, masks; in f32, codegen
 * leaves out the storage float's rounding), folds them into each row's
 * running maximum (the four lanes of a row agree through two shuffles) and
 * sum, rescales its output accumulators, and multiplies the weights,
 * packed to 16 bits in registers (the C layout of two score tiles is the A
 * layout of one k-step), by the V tile. The scores and weights are never
 * stored. The sum is kept per lane over the lane's own keys and added over
 * the row's four lanes at the end.
 *
 * Semantics as attention_cpu.cl's header: a row of -inf logits ends in 0 /
 * 0 = NaN, NaN in Q, K or V reaches its row, CAUSAL skips the tiles past
 * the group's last visible key and takes -inf at a row's hidden keys
 * within a tile; with a finite CAUSAL_FILL within 110 of a row's maximum
 * the row visits its hidden keys from global memory afterwards (rare);
 * NAN_FILL weighs every key NAN_FILL_VALUE in a row whose sum is NaN. The
 * weights are rounded to the operands' 16-bit type before the second
 * product (f16: 11 significant bits, bf16: 8), the scores and logits are
 * not: the result differs from the unfused graph by that rounding. One
 * more difference, FlashAttention's too: within the tile of keys that
 * crosses a row's causal limit, a key the row does not see weighs 0 but
 * its V row is still multiplied, so a NaN or an infinity in V at a key
 * that some later row of the work-group sees reaches the earlier rows
 * (the other forms never read it for them).
 *
 * Codegen prepends kernels_templates/mma_sync.cl (clf_pack2, clf_mma),
 * what attention_cpu.cl takes, MMA_BF16 (1: bf16 operands, 0: f16), WARPS,
 * WROWS, BKT, STAGES and, where the logits are the scores times a positive
 * constant, LOGIT_SCALE (below; PREFETCH 0 reads each tile only after
 * the previous one is multiplied, as a baseline); where the operand is a
 * 16-bit buffer read by index arithmetic alone (transposes, reshapes,
 * broadcast heads, slices: codegen_product.h) it defines (with
 * CLF_HAVE_STAGE_K, CLF_HAVE_STAGE_V) clf_stage_k and clf_stage_v, 8
 * values of a K or V row as raw 16-bit values in one vector load (STAGES
 * 1), or clf_stage_k_at and clf_stage_v_at, their address (STAGES 2), as
 * the schedule chose (on the H100, f16 B8 H16 S1024 D64, one call: two
 * stages 0.158 / 0.122 ms full / causal, one 0.162 / 0.123; causal D128
 * keeps one stage, its two stages of 64 keys exceeding 48 KiB, and took
 * 0.230 against 0.253 with two of 32). Launch: BATCH *
 * ceil(SQ / BQ) work-groups of 32 * WARPS.
 *
 * CLF_MMA_EMULATE (a build option, for testing on devices without PTX):
 * mma.sync, ldmatrix and the shuffles in plain OpenCL C (mma_sync.cl), a
 * warp's registers exchanged through local memory behind barriers, so
 * every warp walks every tile (one with nothing to do keeps its state) and
 * stays to the end; the rest of this file runs as on the GPU. */
#ifndef IDX_T
#define IDX_T uint
#endif

#ifndef CLF_KERNEL_NAME
#define CLF_KERNEL_NAME clf_attention_mma_example
#define BATCH 1
#define SQ 16
#define SK 16
#define D 16
#define DV 16
#define CAUSAL 0
#define NAN_FILL 0
#define MMA_BF16 0
#define CLF_PARAMS __global const half *restrict q, __global const half *restrict k, __global const half *restrict v, __global half *restrict o
#define CLF_ARGS q, k, v, o
static inline float clf_load_q(IDX_T bt, IDX_T m, IDX_T d, CLF_PARAMS) { return vload_half(m * D + d, q); }
static inline float clf_load_k(IDX_T bt, IDX_T d, IDX_T n, CLF_PARAMS) { return vload_half(n * D + d, k); }
static inline float clf_load_v(IDX_T bt, IDX_T n, IDX_T d, CLF_PARAMS) { return vload_half(n * DV + d, v); }
static inline float clf_logit(IDX_T bt, IDX_T m, IDX_T n, float acc, CLF_PARAMS) { return acc * 0.25f; }
static inline void clf_store(IDX_T bt, IDX_T m, IDX_T n, float acc, CLF_PARAMS) { vstore_half_rte(acc, m * DV + n, o); }
#endif

#ifndef WARPS
#define WARPS 4
#endif
/* Query rows a warp takes: 16 (one m tile) or 32 (two, each B fragment
 * read from local memory serving both). */
#ifndef WROWS
#define WROWS 16
#endif
#define MT (WROWS / 16)
#define BQ (WROWS * WARPS)
#ifndef BKT
#define BKT 64
#endif
#ifndef PREFETCH
#define PREFETCH 1
#endif
/* STAGES 2: K's and V's tiles reach local memory by cp.async (16 bytes a
 * copy, no registers held; mma_sync.cl) into two stages, the next tile's
 * copies in flight while the current one is multiplied, one barrier a
 * tile; codegen gives the pieces' addresses (clf_stage_k_at,
 * clf_stage_v_at) where K and V are such buffers. STAGES 1: one
 * stage, filled from registers read a tile ahead (PREFETCH). */
#ifndef STAGES
#define STAGES 1
#endif
#if STAGES == 2 && !(defined(CLF_HAVE_STAGE_K) && defined(CLF_HAVE_STAGE_V))
#error "attention_mma.cl: STAGES 2 needs clf_stage_k_at and clf_stage_v_at"
#endif
#define QBLOCKS ((SQ + BQ - 1) / BQ)
#define DP ((D + 15) / 16 * 16)
#define DVP ((DV + 15) / 16 * 16)
#define KROW (DP + 8)  /* 16-bit values a K row takes in local memory */
/* V staged as it lies, rows of keys ([key][d], 16-byte writes), its B
 * fragments read by ldmatrix .trans. On the H100 (f16, B8 H16 S1024, one
 * call, medians of 20) it took 0.159 / 0.122 ms full / causal at D64 and
 * 0.232 causal at D128 (B4 H32), against 0.183 / 0.138 and 0.281 with V
 * transposed as it was staged (16-bit writes) and read by plain ldmatrix. */
#define VROW (DVP + 8) /* values a V row takes */
#define VTILE (BKT * VROW)
#define NT (BKT / 8)   /* 8-column tiles of the scores */
#define KSTEPS (DP / 16)
#define OT (DVP / 8)   /* 8-column tiles of the output */
#define PSTEPS (BKT / 16)
#define HR (2 * MT)    /* rows a lane holds: rows g and g + 8 of each m tile */
/* exp(x - base) as exp2 of x log2(e) + nb, nb = -base log2(e): one fma
 * and the ex2 instruction a score. On the H100 (f16 B8 H16 S1024 D64, full
 * / causal, 4 x 32 rows over 64 keys, medians of 20 in one call) 0.159 /
 * 0.122 ms against 0.167 / 0.127 with native_exp(x - base). */
#define CLF_EXP_FROM(x, nb) native_exp2(fma((x), M_LOG2E_F, (nb)))
/* HEAVY_FIRST (the default for CAUSAL where every batch's K and V take
 * at most 64 MiB, about an H100's L2 cache): work-groups numbered by
 * query block from the last, every batch's block before the next block,
 * so that the blocks that see the most keys start first and the light
 * ones fill the tail (H100, f16 causal B8 H16 S1024 D64: 0.100 ms against
 * 0.111 in order; D128 B4 H32, 64 MiB: 0.215 against 0.222); otherwise a
 * batch's blocks in order, consecutive work-groups reading one batch's K
 * and V (larger K and V, where the work-groups of a batch no longer run
 * together, would be read from memory again by each: not measured). */
#ifndef HEAVY_FIRST
#define HEAVY_FIRST (CAUSAL && BATCH * SK * (DP + DVP) * 2 <= (64 << 20))
#endif
/* RESCALE_SLACK (LAZY_RESCALE 1): a row's base, the maximum its weights
 * are taken against, moves to a larger logit only where that is more
 * than 5 above it (FlashAttention-4's conditional rescaling): the weights
 * stay below e^5 (f16 holds them, the sums in f32 too), the result is the
 * same function, and after the first tiles the warp rarely rescales its
 * output accumulators (64 multiplies a lane a tile at 4 x 32 x 64).
 * LAZY_RESCALE 0: the base is the running maximum (the warp still skips
 * the rescale where none of its rows' maxima grew). */
#ifndef LAZY_RESCALE
#define LAZY_RESCALE 1
#endif
#if LAZY_RESCALE
#define RESCALE_SLACK 5.0f
#else
#define RESCALE_SLACK 0.0f
#endif
/* FOLD_SCALE: where codegen found the logits to be the scores times a
 * positive constant (LOGIT_SCALE; no masks but the causal one, which the
 * kernel applies itself), the scores stay as the product left them and
 * the scale joins the exp2 constant: one multiply a score fewer, the
 * maxima taken over the scores (a positive scale keeps their order) and
 * kept as logits. -DFOLD_SCALE=0 evaluates clf_logit as elsewhere. */
#if defined(LOGIT_SCALE) && !defined(FOLD_SCALE)
#define FOLD_SCALE 1
#endif
#ifndef FOLD_SCALE
#define FOLD_SCALE 0
#endif
#if FOLD_SCALE
#if !defined(LOGIT_SCALE)
#error "attention_mma.cl: FOLD_SCALE needs LOGIT_SCALE"
#endif
#define CLF_EXP_ARG(x, nb) fma((x), LOGIT_SCALE * M_LOG2E_F, (nb))
#else
#define CLF_EXP_ARG(x, nb) fma((x), M_LOG2E_F, (nb))
#endif

/* EXP_POLY_TILES: the weights of the first EXP_POLY_TILES of a warp's NT
 * 8-key tiles by clf_exp2_poly on the FMA units, the others by ex2 (16
 * a clock a compute unit on sm_90, against 2 x 32 x 64 weights a warp a
 * tile), as FlashAttention-4 shares the exponentials; 0: ex2 only. */
#ifndef EXP_POLY_TILES
#define EXP_POLY_TILES 0
#endif

/* 2^x by a cubic on the fraction (relative error under 8.6e-5, below
 * f16's rounding of the weights): 0 below -126 (-inf included), ex2
 * above 127 and for NaN. */
static inline float clf_exp2_poly(float x)
{
    const float xc = fmax(x, -127.0f), fi = floor(xc), f = xc - fi;
    const float p = fma(fma(fma(0.07706522f, f, 0.22764698f), f, 0.69511634f), f, 1.0f);
    const float r = x >= -126.0f ? as_float(as_int(p) + ((int)fi << 23)) : 0.0f;
    return x <= 127.0f ? r : native_exp2(x);
}

/* B fragments by ldmatrix.x4: four B fragments (b0, b1 of an 8-column
 * tile and b0, b1 of the next) from rows of 16-bit values in local memory
 * (rows 16-byte aligned: KROW and VROW are multiples of 8 values). Lane L
 * gives the address of row L % 8 of matrix L / 8. Along (K's tile, rows
 * [n][k]): matrices 0 and 1 are the tile's two 8-value halves of a k
 * step, 2 and 3 the next tile's. Across (V's, rows [k][n], .trans):
 * matrices 0 and 1 are the k step's two 8-row halves at the tile's 8
 * columns, 2 and 3 the same rows at the next tile's. row0: the first row
 * at the fragment's first value; stride: values a row. H200, f16, B8 H16
 * S1024 D64, full / causal, medians of 50 in one call: 0.213 / 0.144 ms
 * with ldmatrix, 0.231 / 0.165 with two 32-bit local reads a fragment;
 * causal D128 (B4 H32) 0.287 against 0.312. */
static inline __local const ushort *clf_ldsm_row(__local const ushort *row0, int stride, bool along, IDX_T lane)
{
    const IDX_T i = lane / 8, r = lane % 8;
    return along ? row0 + (r + (i / 2) * 8) * stride + (i % 2) * 8 : row0 + (r + (i % 2) * 8) * stride + (i / 2) * 8;
}

static inline void clf_ldsm_b4(__local const ushort *row0, int stride, bool along, IDX_T lane, uint *b)
{
#if CLF_MMA_EMULATE
    /* ldmatrix itself: register i of lane (g, t) holds values 2t, 2t + 1
     * of row g of matrix i (.trans: value g of its rows 2t and 2t + 1),
     * the rows whose addresses lanes 8i .. 8i + 7 give. */
    const IDX_T g = lane / 4, t = lane % 4;
    for (IDX_T i = 0; i < 4; ++i)
        b[i] = along ? *(__local const uint *)(clf_ldsm_row(row0, stride, along, 8 * i + g) + 2 * t)
                     : (uint)clf_ldsm_row(row0, stride, along, 8 * i + 2 * t)[g] |
                           (uint)clf_ldsm_row(row0, stride, along, 8 * i + 2 * t + 1)[g] << 16;
#else
    clf_ldsm_x4((uint)(ulong)clf_ldsm_row(row0, stride, along, lane), !along, b);
#endif
}

/* v of lane (this lane ^ m) of the warp. */
static inline float clf_shfl_xor(float v, int m CLF_MMA_XP)
{
#if CLF_MMA_EMULATE
    const uint lid = (uint)get_local_id(0);
    __local uint *w = mma_x + lid / 32 * 32 * CLF_MMA_WORDS;
    w[lid % 32] = as_uint(v);
    barrier(CLK_LOCAL_MEM_FENCE);
    const float r = as_float(w[(lid % 32) ^ (uint)m]);
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
#else
    float r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(v), "r"(m));
    return r;
#endif
}

/* Whether p holds in any lane of the warp (a uniform branch). */
static inline bool clf_warp_any(bool p CLF_MMA_XP)
{
#if CLF_MMA_EMULATE
    float v = p ? 1.0f : 0.0f;
    for (int m = 1; m < 32; m *= 2)
        v = fmax(v, clf_shfl_xor(v, m CLF_MMA_X));
    return v != 0.0f;
#else
    uint r;
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %1, 0;\n\tvote.sync.any.pred p, p, 0xffffffff;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(r)
                 : "r"((uint)p));
    return r != 0;
#endif
}

/* The maximum and the sum over the four lanes of a row (lanes 4g .. 4g+3). */
static inline float clf_row_max(float v CLF_MMA_XP)
{
    v = fmax(v, clf_shfl_xor(v, 1 CLF_MMA_X));
    return fmax(v, clf_shfl_xor(v, 2 CLF_MMA_X));
}
static inline float clf_row_sum(float v CLF_MMA_XP)
{
    v += clf_shfl_xor(v, 1 CLF_MMA_X);
    return v + clf_shfl_xor(v, 2 CLF_MMA_X);
}

/* Values d8 * 8 .. d8 * 8 + 7 of K's row n (V's row n), as 16-bit values
 * (zeros past D, DV): through the generated loads, whatever their
 * prologue. The values are the 16-bit type's own (the loads return them
 * exactly), so packing them again is exact. */
#if STAGES == 1 && !defined(CLF_HAVE_STAGE_K)
static inline uint4 clf_stage_k(IDX_T bt, IDX_T n, IDX_T d8, CLF_PARAMS)
{
    float x[8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
        x[i] = d8 * 8 + i < D ? clf_load_k(bt, d8 * 8 + i, n, CLF_ARGS) : 0.0f;
    return (uint4)(clf_pack2(x[0], x[1]), clf_pack2(x[2], x[3]), clf_pack2(x[4], x[5]), clf_pack2(x[6], x[7]));
}
#endif
#if STAGES == 1 && !defined(CLF_HAVE_STAGE_V)
static inline uint4 clf_stage_v(IDX_T bt, IDX_T n, IDX_T d8, CLF_PARAMS)
{
    float x[8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
        x[i] = d8 * 8 + i < DV ? clf_load_v(bt, n, d8 * 8 + i, CLF_ARGS) : 0.0f;
    return (uint4)(clf_pack2(x[0], x[1]), clf_pack2(x[2], x[3]), clf_pack2(x[4], x[5]), clf_pack2(x[6], x[7]));
}
#endif

/* A tile of keys n0 .. n0 + BKT - 1 reaches local memory, K as rows of
 * KROW values, V as rows of VROW, each work-item moving KCH pieces of 8
 * values of K rows and VCH of V rows (zeros past `keys`, SK or the last
 * key the group's rows see: such a key must weigh 0 times a finite
 * value); lanes take consecutive pieces of a row (the global reads
 * coalesce). STAGES 2: clf_copy_tile starts its copies. STAGES 1, in two
 * steps, so that its global reads can be in flight while the previous
 * tile is multiplied: clf_fetch_tile reads it into each work-item's
 * registers, clf_put_tile writes them to local memory. */
#define NTHREADS (32 * WARPS)
#define KPIECES (BKT * (DP / 8))
#define VPIECES (BKT * (DVP / 8))
#define KCH ((KPIECES + NTHREADS - 1) / NTHREADS)
#define VCH ((VPIECES + NTHREADS - 1) / NTHREADS)

#if STAGES == 2
static inline void clf_copy_tile(IDX_T bt, IDX_T n0, IDX_T keys, IDX_T lid, __local ushort *ks, __local ushort *vs,
                                 CLF_PARAMS)
{
#pragma unroll
    for (int i = 0; i < KCH; ++i) {
        const IDX_T e = lid + (IDX_T)i * NTHREADS, j = e / (DP / 8), c = e % (DP / 8);
        const bool full = n0 + j < keys && c * 8 < D;
        if (e < KPIECES)
            clf_copy16(ks + j * KROW + c * 8, clf_stage_k_at(bt, full ? n0 + j : 0, full ? c : 0, CLF_ARGS), full);
    }
#pragma unroll
    for (int i = 0; i < VCH; ++i) {
        const IDX_T e = lid + (IDX_T)i * NTHREADS, j = e / (DVP / 8), c = e % (DVP / 8);
        const bool full = n0 + j < keys && c * 8 < DV;
        if (e < VPIECES)
            clf_copy16(vs + j * VROW + c * 8, clf_stage_v_at(bt, full ? n0 + j : 0, full ? c : 0, CLF_ARGS), full);
    }
    clf_copy_commit();
}
#else

static inline void clf_fetch_tile(IDX_T bt, IDX_T n0, IDX_T keys, IDX_T lid, uint4 *kr, uint4 *vr, CLF_PARAMS)
{
#pragma unroll
    for (int i = 0; i < KCH; ++i) {
        const IDX_T e = lid + (IDX_T)i * NTHREADS, j = e / (DP / 8), c = e % (DP / 8);
        kr[i] = e < KPIECES && n0 + j < keys ? clf_stage_k(bt, n0 + j, c, CLF_ARGS) : (uint4)(0);
    }
#pragma unroll
    for (int i = 0; i < VCH; ++i) {
        const IDX_T e = lid + (IDX_T)i * NTHREADS, j = e / (DVP / 8), c = e % (DVP / 8);
        vr[i] = e < VPIECES && n0 + j < keys ? clf_stage_v(bt, n0 + j, c, CLF_ARGS) : (uint4)(0);
    }
}

static inline void clf_put_tile(IDX_T lid, const uint4 *kr, const uint4 *vr, __local ushort *ks, __local ushort *vs)
{
#pragma unroll
    for (int i = 0; i < KCH; ++i) {
        const IDX_T e = lid + (IDX_T)i * NTHREADS, j = e / (DP / 8), c = e % (DP / 8);
        if (e < KPIECES)
            *(__local uint4 *)(ks + j * KROW + c * 8) = kr[i];
    }
#pragma unroll
    for (int i = 0; i < VCH; ++i) {
        const IDX_T e = lid + (IDX_T)i * NTHREADS, j = e / (DVP / 8), c = e % (DVP / 8);
        if (e < VPIECES)
            *(__local uint4 *)(vs + j * VROW + c * 8) = vr[i];
    }
}
#endif

/* Query m's value at d (0 past SQ and D). */
static inline float clf_q_at(IDX_T bt, IDX_T m, IDX_T d, CLF_PARAMS)
{
    return m < SQ && d < D ? clf_load_q(bt, m, d, CLF_ARGS) : 0.0f;
}

/* Keys query m sees: n < clf_row_keys(m). */
static inline IDX_T clf_row_keys(IDX_T m)
{
#if CAUSAL
    return min((IDX_T)SK, (IDX_T)(m + CAUSAL_OFFSET + 1));
#else
    return (IDX_T)SK;
#endif
}

/* A tile's scores s made its logits (FOLD_SCALE: left as they are), -inf
 * at the keys a row does not see (past its causal limit or past SK) where
 * `edge` (a constant where inlined: the tiles that reach such keys check
 * them, the others do no more than the logits ask). */
static inline void clf_tile_logits(float (*s)[NT][4], const bool edge, IDX_T n0, IDX_T t, IDX_T bt, const IDX_T *lrow,
                                   const IDX_T *keys, CLF_PARAMS)
{
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int h = 2 * mt + e / 2;
                const IDX_T n = n0 + j * 8 + 2 * t + (e & 1);
                const bool seen = !edge || n < keys[h];
#if FOLD_SCALE
                s[mt][j][e] = seen ? s[mt][j][e] : -INFINITY;
#else
                s[mt][j][e] = seen ? clf_logit(bt, lrow[h], n, s[mt][j][e], CLF_ARGS) : -INFINITY;
#endif
            }
}

#if CLF_MMA_EMULATE
/* A warp's running state (output accumulators, maxima, sums) copied: an
 * idle warp keeps its own across an emulated tile. */
static inline void clf_copy_state(float (*to_o)[OT][4], float *to_mx, float *to_l, float (*from_o)[OT][4],
                                  const float *from_mx, const float *from_l)
{
    for (int mt = 0; mt < MT; ++mt)
        for (int j = 0; j < OT; ++j)
            for (int e = 0; e < 4; ++e)
                to_o[mt][j][e] = from_o[mt][j][e];
    for (int h = 0; h < HR; ++h) {
        to_mx[h] = from_mx[h];
        to_l[h] = from_l[h];
    }
}
#endif

/* A lane's rows are numbered h = 0 .. HR - 1: row g + 8 (h % 2) of the
 * warp's m tile h / 2. Its accumulators of row h in an mma C fragment c
 * are c[2 (h % 2)] and c[2 (h % 2) + 1]. */
__kernel __attribute__((reqd_work_group_size(32 * WARPS, 1, 1))) void CLF_KERNEL_NAME(CLF_PARAMS, const IDX_T numel)
{
    __local ushort ks[STAGES * BKT * KROW] __attribute__((aligned(16)));
    __local ushort vs[STAGES * VTILE] __attribute__((aligned(16)));
#if CLF_MMA_EMULATE
    __local uint mma_x[NTHREADS * CLF_MMA_WORDS];
#endif
    const IDX_T lid = (IDX_T)get_local_id(0), grp = (IDX_T)get_group_id(0);
    const IDX_T warp = lid / 32, lane = lid % 32, g = lane / 4, t = lane % 4;
#if HEAVY_FIRST
    const IDX_T bt = grp % BATCH, m0 = (QBLOCKS - 1 - grp / BATCH) * BQ;
#else
    const IDX_T bt = grp / QBLOCKS, m0 = grp % QBLOCKS * BQ;
#endif
    const IDX_T mw = m0 + warp * WROWS;
    /* This lane's rows, the rows their logits are evaluated at (a row past
     * SQ computes on zeros and is not stored, but its masks must not be
     * read past theirs) and the keys each sees. */
    IDX_T row[HR], lrow[HR], keys[HR];
#pragma unroll
    for (int h = 0; h < HR; ++h) {
        row[h] = mw + (IDX_T)(16 * (h / 2) + 8 * (h % 2)) + g;
        lrow[h] = min(row[h], (IDX_T)(SQ - 1));
        keys[h] = clf_row_keys(row[h]);
    }

    /* The warp's query rows as A fragments, an m tile at a time. */
    uint qa[MT][KSTEPS][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int s = 0; s < KSTEPS; ++s) {
            const IDX_T c = s * 16 + 2 * t, ra = row[2 * mt], rb = row[2 * mt + 1];
            qa[mt][s][0] = clf_pack2(clf_q_at(bt, ra, c, CLF_ARGS), clf_q_at(bt, ra, c + 1, CLF_ARGS));
            qa[mt][s][1] = clf_pack2(clf_q_at(bt, rb, c, CLF_ARGS), clf_q_at(bt, rb, c + 1, CLF_ARGS));
            qa[mt][s][2] = clf_pack2(clf_q_at(bt, ra, c + 8, CLF_ARGS), clf_q_at(bt, ra, c + 9, CLF_ARGS));
            qa[mt][s][3] = clf_pack2(clf_q_at(bt, rb, c + 8, CLF_ARGS), clf_q_at(bt, rb, c + 9, CLF_ARGS));
        }
    float o[MT][OT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int j = 0; j < OT; ++j)
            o[mt][j][0] = o[mt][j][1] = o[mt][j][2] = o[mt][j][3] = 0.0f;
    float mx[HR], l[HR];
#pragma unroll
    for (int h = 0; h < HR; ++h) {
        mx[h] = -INFINITY;
        l[h] = 0.0f;
    }

    /* Keys of the group's last row, of the warp's last and first rows. */
    const IDX_T last = min((IDX_T)SQ, (IDX_T)(m0 + BQ)) - 1;
    const IDX_T group_keys = clf_row_keys(last);
    const IDX_T warp_keys = clf_row_keys(min((IDX_T)(SQ - 1), (IDX_T)(mw + WROWS - 1)));
    const IDX_T warp_first_keys = clf_row_keys(min((IDX_T)(SQ - 1), mw));
    const bool warp_active = mw < SQ;

#if STAGES == 2
    clf_copy_tile(bt, 0, group_keys, lid, ks, vs, CLF_ARGS);
#else
    uint4 kr[KCH], vr[VCH];
    clf_fetch_tile(bt, 0, group_keys, lid, kr, vr, CLF_ARGS);
#endif
    for (IDX_T n0 = 0, tile = 0; n0 < group_keys; n0 += BKT, ++tile) {
        /* The stage this tile is in. */
        __local const ushort *kt = ks + tile % STAGES * (BKT * KROW), *vt = vs + tile % STAGES * VTILE;
#if STAGES == 2
        /* The tile has arrived, and every warp is done with the previous
         * one, whose stage the next tile takes. */
        CLF_COPY_WAIT(0);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (n0 + BKT < group_keys)
            clf_copy_tile(bt, n0 + BKT, group_keys, lid, ks + (tile + 1) % 2 * (BKT * KROW),
                          vs + (tile + 1) % 2 * VTILE, CLF_ARGS);
#else
        barrier(CLK_LOCAL_MEM_FENCE);
        clf_put_tile(lid, kr, vr, ks, vs);
        barrier(CLK_LOCAL_MEM_FENCE);
#if PREFETCH
        if (n0 + BKT < group_keys)
            clf_fetch_tile(bt, n0 + BKT, group_keys, lid, kr, vr, CLF_ARGS);
#endif
#endif
#if CLF_MMA_EMULATE
        /* The emulated exchanges take every warp of the group: a warp with
         * nothing to do in this tile runs it too, and keeps its state. */
        const bool idle = !warp_active || n0 >= warp_keys;
        float keep_o[MT][OT][4], keep_mx[HR], keep_l[HR];
        clf_copy_state(keep_o, keep_mx, keep_l, o, mx, l);
#else
        if (!warp_active || n0 >= warp_keys) {
#if STAGES == 1 && !PREFETCH
            if (n0 + BKT < group_keys)
                clf_fetch_tile(bt, n0 + BKT, group_keys, lid, kr, vr, CLF_ARGS);
#endif
            continue;
        }
#endif
        float s[MT][NT][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int j = 0; j < NT; ++j)
                s[mt][j][0] = s[mt][j][1] = s[mt][j][2] = s[mt][j][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < KSTEPS; ++kk)
#pragma unroll
            for (int j = 0; j < NT; j += 2) {
                uint b[4];
                clf_ldsm_b4(kt + j * 8 * KROW + kk * 16, KROW, true, lane, b);
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    clf_mma(s[mt][j], qa[mt][kk][0], qa[mt][kk][1], qa[mt][kk][2], qa[mt][kk][3], b[0],
                            b[1] CLF_MMA_X);
                    clf_mma(s[mt][j + 1], qa[mt][kk][0], qa[mt][kk][1], qa[mt][kk][2], qa[mt][kk][3], b[2],
                            b[3] CLF_MMA_X);
                }
            }
        /* Logits; -inf at keys a row does not see (past its causal limit
         * or past SK), checked only in tiles that reach such keys. */
        if (n0 + BKT > warp_first_keys)
            clf_tile_logits(s, true, n0, t, bt, lrow, keys, CLF_ARGS);
        else
            clf_tile_logits(s, false, n0, t, bt, lrow, keys, CLF_ARGS);
        float tmax[HR];
#pragma unroll
        for (int h = 0; h < HR; ++h)
            tmax[h] = -INFINITY;
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int j = 0; j < NT; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    tmax[2 * mt + e / 2] = fmax(tmax[2 * mt + e / 2], s[mt][j][e]);
        /* A row's base moves to the tile's maximum only where that is
         * more than RESCALE_SLACK above it; the warp rescales its output
         * accumulators only where one of its rows moved. */
        float nbase[HR], corr[HR], ps[HR];
        bool moved = false;
#pragma unroll
        for (int h = 0; h < HR; ++h) {
#if FOLD_SCALE
            const float rmax = clf_row_max(tmax[h] CLF_MMA_X) * LOGIT_SCALE;
#else
            const float rmax = clf_row_max(tmax[h] CLF_MMA_X);
#endif
            const bool up = rmax > mx[h] + RESCALE_SLACK;
            /* The base is 0 while every logit so far is -inf
             * (attention_gpu.cl's clf_base). */
            const float base = up ? rmax : mx[h];
            nbase[h] = base == -INFINITY ? 0.0f : -base * M_LOG2E_F;
            corr[h] = up ? CLF_EXP_FROM(mx[h], nbase[h]) : 1.0f;
            moved = moved || up;
            mx[h] = base;
            ps[h] = 0.0f;
        }
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int j = 0; j < NT; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int h = 2 * mt + e / 2;
                    const float a = CLF_EXP_ARG(s[mt][j][e], nbase[h]);
                    s[mt][j][e] = j < EXP_POLY_TILES ? clf_exp2_poly(a) : native_exp2(a);
                    ps[h] += s[mt][j][e];
                }
#pragma unroll
        for (int h = 0; h < HR; ++h)
            l[h] = l[h] * corr[h] + ps[h];
        if (clf_warp_any(moved CLF_MMA_X)) {
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                for (int j = 0; j < OT; ++j)
#pragma unroll
                    for (int e = 0; e < 4; ++e)
                        o[mt][j][e] *= corr[2 * mt + e / 2];
        }
#pragma unroll
        for (int kk = 0; kk < PSTEPS; ++kk) {
            /* The weights of two score tiles: the A fragment of a k step. */
            uint a[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
                a[mt][0] = clf_pack2(s[mt][2 * kk][0], s[mt][2 * kk][1]);
                a[mt][1] = clf_pack2(s[mt][2 * kk][2], s[mt][2 * kk][3]);
                a[mt][2] = clf_pack2(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
                a[mt][3] = clf_pack2(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
            }
#pragma unroll
            for (int j = 0; j < OT; j += 2) {
                uint b[4];
                clf_ldsm_b4(vt + kk * 16 * VROW + j * 8, VROW, false, lane, b);
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    clf_mma(o[mt][j], a[mt][0], a[mt][1], a[mt][2], a[mt][3], b[0], b[1] CLF_MMA_X);
                    clf_mma(o[mt][j + 1], a[mt][0], a[mt][1], a[mt][2], a[mt][3], b[2], b[3] CLF_MMA_X);
                }
            }
        }
#if CLF_MMA_EMULATE
        if (idle)
            clf_copy_state(o, mx, l, keep_o, keep_mx, keep_l);
#endif
#if STAGES == 1 && !PREFETCH
        if (n0 + BKT < group_keys)
            clf_fetch_tile(bt, n0 + BKT, group_keys, lid, kr, vr, CLF_ARGS);
#endif
    }
#if !CLF_MMA_EMULATE
    /* (Emulated, the warp stays for clf_row_sum's exchanges; its rows,
     * past SQ, store nothing.) */
    if (!warp_active)
        return;
#endif
#if CAUSAL && !CAUSAL_FILL_INF
    /* A row whose visible keys stay within 110 of a finite fill: the hidden
     * keys weigh, so its four lanes visit them from global memory, each for
     * its own columns; the sum counts them once, in lane t == 0. */
    for (int h = 0; h < HR; ++h) {
        if (row[h] >= SQ || mx[h] - CAUSAL_FILL > 110.0f)
            continue;
        for (IDX_T n = keys[h]; n < SK; ++n) {
            const float tmax = fmax(mx[h], CAUSAL_FILL), base = tmax == -INFINITY ? 0.0f : tmax;
            const float corr = exp(mx[h] - base), p = exp(CAUSAL_FILL - base);
            mx[h] = tmax;
            l[h] = l[h] * corr + (t == 0 ? p : 0.0f);
            for (int j = 0; j < OT; ++j)
                for (int e = 0; e < 2; ++e) {
                    const IDX_T c = j * 8 + 2 * t + e;
                    const float vv = c < DV ? clf_load_v(bt, n, c, CLF_ARGS) : 0.0f;
                    o[h / 2][j][2 * (h % 2) + e] = o[h / 2][j][2 * (h % 2) + e] * corr + p * vv;
                }
        }
    }
#endif
    float lsum[HR];
#pragma unroll
    for (int h = 0; h < HR; ++h)
        lsum[h] = clf_row_sum(l[h] CLF_MMA_X);
#pragma unroll
    for (int h = 0; h < HR; ++h) {
        if (row[h] >= SQ)
            continue;
#if NAN_FILL
        /* Every weight of the row NaN, or a row of -inf logits (its sum
         * 0): each key weighs NAN_FILL_VALUE. */
        if (!(lsum[h] > 0.0f)) {
            for (int j = 0; j < OT; ++j)
                for (int e = 0; e < 2; ++e) {
                    const IDX_T c = j * 8 + 2 * t + e;
                    float acc = 0.0f;
                    for (IDX_T n = 0; c < DV && n < SK; ++n)
                        acc += clf_load_v(bt, n, c, CLF_ARGS);
                    o[h / 2][j][2 * (h % 2) + e] = NAN_FILL_VALUE * acc;
                }
            lsum[h] = 1.0f;
        }
#endif
#pragma unroll
        for (int j = 0; j < OT; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const IDX_T c = j * 8 + 2 * t + e;
                if (c < DV)
                    clf_store(bt, row[h], c, o[h / 2][j][2 * (h % 2) + e] / lsum[h], CLF_ARGS);
            }
    }
}
