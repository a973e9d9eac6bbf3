/* The tensor-core primitives the tensor-core forms share (attention_mma.cl,
 * gemm_mma.cl), through inline PTX for NVIDIA's sm_80 and later: codegen
 * prepends this file to theirs, after MMA_BF16 (1: bf16 operands, 0: f16)
 * and, for the GEMM, MMA_TF32 (1: f32 operands on TF32's m16n8k8).
 * Under CLF_MMA_EMULATE (a build option, tests on devices without PTX)
 * they are OpenCL C stand-ins instead: a warp's fragments meet in local
 * memory (the forms' `mma_x`, passed where CLF_MMA_X stands in calls and
 * CLF_MMA_XP in parameter lists), so every work-item of the group calls
 * them together (barriers).
 *
 * Another vendor's matrix instructions (Intel's subgroup matrix
 * multiply-accumulate, AMD's WMMA/MFMA builtins) would come in as a third
 * branch here: clf_pack2 and clf_mma for its types, with the emulation as
 * the model of what each must compute. Not behind these functions yet:
 * the fragment layout itself (lane l of a 32-lane warp holding rows l / 4
 * and l / 4 + 8, columns 2 (l % 4) and 2 (l % 4) + 1 of a 16 x 8 tile),
 * which the forms' register tiles, their ldmatrix addressing and their
 * epilogues assume; a port would put that mapping behind a few macros too.
 * Not built without such a device to run it. */
#ifndef MMA_BF16
#define MMA_BF16 0
#endif
#ifndef MMA_TF32
#define MMA_TF32 0
#endif
/* CLF_MMA_EMULATE comes from the build options only (undefined reads as
 * 0 in #if): a default defined here would be #undef'd after the first
 * source of a merged program (program_merge.c), and with it the option. */

#if CLF_MMA_EMULATE
#define CLF_MMA_X , mma_x
#define CLF_MMA_XP , __local uint *mma_x
/* Words of mma_x a lane takes in clf_mma: its four A and two B registers. */
#define CLF_MMA_WORDS 6

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

/* s plus row g + 8h of a 16 x 8 tile's A times its column n of B over
 * one k step (the layouts of clf_mma below), the warp's registers laid
 * out a register a row of 32 lanes: wa A's four rows, wb B's two. */
static inline float clf_mma_dot(float s, __local const uint *wa, __local const uint *wb, uint g, uint n, uint h)
{
#if MMA_TF32
    /* A[g + 8h][k]: lane 4g + k%4, register h + 2 (k/4); B[k][n]: lane
     * 4n + k%4, register k/4 (TF32 values). */
    for (uint k = 0; k < 8; ++k)
        s = fma(as_float(wa[(h + 2 * (k / 4)) * 32 + g * 4 + k % 4]), as_float(wb[(k / 4) * 32 + n * 4 + k % 4]), s);
#else
    /* A[g + 8h][k]: lane 4g + k%8/2, register h + 2 (k/8); B[k][n]: lane
     * 4n + k%8/2, register k/8; the half k%2. */
    for (uint k = 0; k < 16; ++k) {
        const uint av = wa[(h + 2 * (k / 8)) * 32 + g * 4 + k % 8 / 2];
        const uint bv = wb[(k / 8) * 32 + n * 4 + k % 8 / 2];
        s = fma(clf_unpack(k % 2 ? av >> 16 : av), clf_unpack(k % 2 ? bv >> 16 : bv), s);
    }
#endif
    return s;
}

/* clf_mma (below) of every lane of the calling warp at once, through
 * CLF_MMA_WORDS words of mma_x a lane. */
static inline void clf_mma(float *c, uint a0, uint a1, uint a2, uint a3, uint bf0, uint bf1 CLF_MMA_XP)
{
    const uint lid = (uint)get_local_id(0), lane = lid % 32, g = lane / 4, t = lane % 4;
    __local uint *w = mma_x + lid / 32 * 32 * CLF_MMA_WORDS;
    const uint r[CLF_MMA_WORDS] = {a0, a1, a2, a3, bf0, bf1};
    for (uint i = 0; i < CLF_MMA_WORDS; ++i)
        w[i * 32 + lane] = r[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    float d[4];
    for (uint h = 0; h < 2; ++h)
        for (uint e = 0; e < 2; ++e)
            d[2 * h + e] = clf_mma_dot(c[2 * h + e], w, w + 4 * 32, g, 2 * t + e, h);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = 0; i < 4; ++i)
        c[i] = d[i];
}

/* cp.async: the copy itself, at once. */
static inline void clf_copy16(__local ushort *dst, __global const uint4 *src, bool full)
{
    *(__local uint4 *)dst = full ? *src : (uint4)(0);
}
#define clf_copy_commit()
#define CLF_COPY_WAIT(n)
#else
#define CLF_MMA_X
#define CLF_MMA_XP
/* Two f32 values as one register of two 16-bit values, lo in the low half
 * (the element of the lower index in an mma fragment; cvt's first source
 * goes to the upper half). */
static inline uint clf_pack2(float lo, float hi)
{
    uint r;
#if MMA_BF16
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#else
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#endif
    return r;
}

/* c += a b for one 16 x 8 tile over 16 terms: a the four A registers
 * (lane l = 4g + t: A[g][2t, 2t+1], A[g+8][2t, 2t+1], A[g][2t+8, 2t+9],
 * A[g+8][2t+8, 2t+9]), b the two B registers (B[2t, 2t+1][g], B[2t+8,
 * 2t+9][g]), c the four f32 accumulators (C[g][2t, 2t+1], C[g+8][2t,
 * 2t+1]). */
static inline void clf_mma(float *c, uint a0, uint a1, uint a2, uint a3, uint bf0, uint bf1)
{
#if MMA_TF32
    /* m16n8k8 on TF32 values: the same registers, a value each (A[g][t],
     * A[g+8][t], A[g][t+4], A[g+8][t+4]; B[t][g], B[t+4][g]). */
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%10, %11, %12, %13};"
        : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(bf0), "r"(bf1), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
#elif MMA_BF16
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%10, %11, %12, %13};"
        : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(bf0), "r"(bf1), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
#else
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%10, %11, %12, %13};"
        : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(bf0), "r"(bf1), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
#endif
}

/* ldmatrix.x4: r[i] from the 8 rows of matrix i in local memory (16-bit
 * values, rows 16 bytes), the address of row L % 8 of matrix L / 8 given
 * by lane L as p; trans: each register holds a column's two values
 * instead of a row's (.trans). The forms emulate it themselves, from the
 * addresses their lanes would give. */
static inline void clf_ldsm_x4(uint p, bool trans, uint *r)
{
    if (trans)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(p));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(p));
}

/* 16 bytes from global to local memory without registers (zeros where
 * !full: the source is not read), in the group of copies the next
 * clf_copy_commit closes; CLF_COPY_WAIT(n) waits until at most the newest
 * n groups of this work-item's copies are still in flight (a barrier
 * after it makes every work-item's arrived copies visible to the group). */
static inline void clf_copy16(__local ushort *dst, __global const uint4 *src, bool full)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
                 :
                 : "r"((uint)(ulong)dst), "l"(src), "r"(full ? 16 : 0));
}
static inline void clf_copy_commit(void) { asm volatile("cp.async.commit_group;"); }
#define CLF_COPY_WAIT(n) asm volatile("cp.async.wait_group " #n ";")
#endif /* CLF_MMA_EMULATE */
