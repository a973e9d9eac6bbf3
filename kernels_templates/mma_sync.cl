/* The tensor-core primitives the tensor-core forms share (attention_mma.cl,
 * gemm_mma.cl), through inline PTX for NVIDIA's sm_80 and later: codegen
 * prepends this file to theirs, after MMA_BF16 (1: bf16 operands, 0: f16)
 * and, for the GEMM, MMA_TF32 (1: f32 operands on TF32's m16n8k8).
 * Under CLF_MMA_EMULATE (a build option, tests only) gemm_mma.cl defines
 * OpenCL C stand-ins instead, and this file is empty. */
#ifndef MMA_BF16
#define MMA_BF16 0
#endif
#ifndef MMA_TF32
#define MMA_TF32 0
#endif
#ifndef CLF_MMA_EMULATE
#define CLF_MMA_EMULATE 0
#endif

#if !CLF_MMA_EMULATE
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
#endif /* !CLF_MMA_EMULATE */
