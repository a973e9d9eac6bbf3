/* The f16 chain relu(round(round(a*b) + c)) over n f16 values, L
 * elements a work-item (build with -DL=2, 4 or 8), with its loads and
 * stores spelled three ways, with and without the rounding of
 * intermediates, and f16 copies: what lanes and spelling reach the copy
 * rate on NVIDIA's driver (bench/probes/half_lanes_gpu.sh). PTX variants
 * need -DPTX=1 (NVIDIA only). Arguments: a, b, c, y, n. */
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define FLOATL CAT(float, L)
#define UINTL CAT(uint, L)
#define USHORTL CAT(ushort, L)
#define VLOAD_HALF CAT(vload_half, L)
#define VSTORE_HALF_RTE CAT(CAT(vstore_half, L), _rte)
#define AS_FLOATL CAT(as_float, L)
#define AS_UINTL CAT(as_uint, L)

/* The library's register rounding to f16 (codegen_expr.c's clf_round_f16_N). */
static inline FLOATL round_f16(FLOATL x)
{
    const UINTL u = AS_UINTL(x), a = u & 0x7fffffffu;
    const UINTL nrm = (a + 0xfffu + ((a >> 13) & 1u)) & 0xffffe000u;
    const UINTL sub = AS_UINTL((AS_FLOATL(a) + 0.5f) - 0.5f);
    UINTL r = a >= 0x38800000u ? nrm : sub;
    r = a >= 0x477ff000u ? (UINTL)0x7f800000u : r;
    r = a > 0x7f800000u ? ((a | 0x00400000u) & 0xffffe000u) : r;
    return AS_FLOATL((u & 0x80000000u) | r);
}

static inline FLOATL chain(FLOATL a, FLOATL b, FLOATL c)
{
    const FLOATL t = round_f16(round_f16(a * b) + c);
    return t < 0.0f ? (FLOATL)0.0f : t;
}

/* Rounding through a private f16 round trip (vstore_half_rte, vload_half):
 * hardware conversions where the compiler has them (F16C on x86). */
static inline FLOATL round_f16_private(FLOATL x)
{
    ushort t[L];
    VSTORE_HALF_RTE(x, 0, (__private half *)t);
    return VLOAD_HALF(0, (__private const half *)t);
}

static inline FLOATL chain_private(FLOATL a, FLOATL b, FLOATL c)
{
    const FLOATL t = round_f16_private(round_f16_private(a * b) + c);
    return t < 0.0f ? (FLOATL)0.0f : t;
}

static inline FLOATL chain_unrounded(FLOATL a, FLOATL b, FLOATL c)
{
    const FLOATL t = a * b + c;
    return t < 0.0f ? (FLOATL)0.0f : t;
}

__kernel void v_vload_half(__global const half *a, __global const half *b, __global const half *c, __global half *y,
                           uint n)
{
    const uint i = get_global_id(0) * L;
    if (i < n)
        VSTORE_HALF_RTE(chain(VLOAD_HALF(0, a + i), VLOAD_HALF(0, b + i), VLOAD_HALF(0, c + i)), 0, y + i);
}

__kernel void v_vload_half_unrounded(__global const half *a, __global const half *b, __global const half *c,
                                     __global half *y, uint n)
{
    const uint i = get_global_id(0) * L;
    if (i < n)
        VSTORE_HALF_RTE(chain_unrounded(VLOAD_HALF(0, a + i), VLOAD_HALF(0, b + i), VLOAD_HALF(0, c + i)), 0,
                        y + i);
}

__kernel void v_vload_half_round_private(__global const half *a, __global const half *b, __global const half *c,
                                         __global half *y, uint n)
{
    const uint i = get_global_id(0) * L;
    if (i < n)
        VSTORE_HALF_RTE(chain_private(VLOAD_HALF(0, a + i), VLOAD_HALF(0, b + i), VLOAD_HALF(0, c + i)), 0, y + i);
}

/* Element by element vload_half, L of them a work-item. */
__kernel void v_scalar_vload_half(__global const half *a, __global const half *b, __global const half *c,
                                  __global half *y, uint n)
{
    const uint i = get_global_id(0) * L;
    if (i < n)
        for (int j = 0; j < L; ++j) {
            const float t = vload_half(i + j, a) * vload_half(i + j, b);
            vstore_half_rte(fmax(t + vload_half(i + j, c), 0.0f), i + j, y);
        }
}

__kernel void v_copy_ushort(__global const ushort *a, __global const ushort *b, __global const ushort *c,
                            __global ushort *y, uint n)
{
    const uint i = get_global_id(0) * L;
    if (i < n)
        *(__global USHORTL *)(y + i) = *(const __global USHORTL *)(a + i);
}

/* The chain's bytes with no arithmetic: three ushort vectors in, their
 * xor out. */
__kernel void v_xor_ushort(__global const ushort *a, __global const ushort *b, __global const ushort *c,
                           __global ushort *y, uint n)
{
    const uint i = get_global_id(0) * L;
    if (i < n)
        *(__global USHORTL *)(y + i) =
            *(const __global USHORTL *)(a + i) ^ *(const __global USHORTL *)(b + i) ^ *(const __global USHORTL *)(c + i);
}

#if PTX
/* Two f16 in a uint (low half first) to f32, and back with rounding to
 * nearest even, through PTX's cvt. */
static inline float2 h2_to_f2(uint u)
{
    float lo, hi;
    asm("{ .reg .b16 l, h; mov.b32 {l, h}, %2; cvt.f32.f16 %0, l; cvt.f32.f16 %1, h; }"
        : "=f"(lo), "=f"(hi)
        : "r"(u));
    return (float2)(lo, hi);
}

static inline uint f2_to_h2(float2 v)
{
    uint u;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(u) : "f"(v.y), "f"(v.x));
    return u;
}

/* Round to f16 and back in two instructions. */
static inline float round_f16_ptx(float x)
{
    float r;
    asm("{ .reg .b16 h; cvt.rn.f16.f32 h, %1; cvt.f32.f16 %0, h; }" : "=f"(r) : "f"(x));
    return r;
}

#if L == 8
#define LOADL(p, i) load8((const __global uint4 *)((p) + (i)))
#define STOREL(p, i, v) (*(__global uint4 *)((p) + (i)) = store8(v))
static inline float8 load8(const __global uint4 *p)
{
    const uint4 u = *p;
    return (float8)(h2_to_f2(u.x), h2_to_f2(u.y), h2_to_f2(u.z), h2_to_f2(u.w));
}
static inline uint4 store8(float8 v)
{
    return (uint4)(f2_to_h2(v.s01), f2_to_h2(v.s23), f2_to_h2(v.s45), f2_to_h2(v.s67));
}
#elif L == 4
#define LOADL(p, i) load4((const __global uint2 *)((p) + (i)))
#define STOREL(p, i, v) (*(__global uint2 *)((p) + (i)) = store4(v))
static inline float4 load4(const __global uint2 *p)
{
    const uint2 u = *p;
    return (float4)(h2_to_f2(u.x), h2_to_f2(u.y));
}
static inline uint2 store4(float4 v) { return (uint2)(f2_to_h2(v.s01), f2_to_h2(v.s23)); }
#else
#define LOADL(p, i) h2_to_f2(*(const __global uint *)((p) + (i)))
#define STOREL(p, i, v) (*(__global uint *)((p) + (i)) = f2_to_h2(v))
#endif

__kernel void v_ptx(__global const ushort *a, __global const ushort *b, __global const ushort *c, __global ushort *y,
                    uint n)
{
    const uint i = get_global_id(0) * L;
    if (i < n)
        STOREL(y, i, chain(LOADL(a, i), LOADL(b, i), LOADL(c, i)));
}

__kernel void v_ptx_round_ptx(__global const ushort *a, __global const ushort *b, __global const ushort *c,
                              __global ushort *y, uint n)
{
    const uint i = get_global_id(0) * L;
    if (i < n) {
        const FLOATL x = LOADL(a, i), w = LOADL(b, i), z = LOADL(c, i);
        FLOATL t;
#if L == 8
        t.s0 = round_f16_ptx(round_f16_ptx(x.s0 * w.s0) + z.s0);
        t.s1 = round_f16_ptx(round_f16_ptx(x.s1 * w.s1) + z.s1);
        t.s2 = round_f16_ptx(round_f16_ptx(x.s2 * w.s2) + z.s2);
        t.s3 = round_f16_ptx(round_f16_ptx(x.s3 * w.s3) + z.s3);
        t.s4 = round_f16_ptx(round_f16_ptx(x.s4 * w.s4) + z.s4);
        t.s5 = round_f16_ptx(round_f16_ptx(x.s5 * w.s5) + z.s5);
        t.s6 = round_f16_ptx(round_f16_ptx(x.s6 * w.s6) + z.s6);
        t.s7 = round_f16_ptx(round_f16_ptx(x.s7 * w.s7) + z.s7);
#elif L == 4
        t.s0 = round_f16_ptx(round_f16_ptx(x.s0 * w.s0) + z.s0);
        t.s1 = round_f16_ptx(round_f16_ptx(x.s1 * w.s1) + z.s1);
        t.s2 = round_f16_ptx(round_f16_ptx(x.s2 * w.s2) + z.s2);
        t.s3 = round_f16_ptx(round_f16_ptx(x.s3 * w.s3) + z.s3);
#else
        t.s0 = round_f16_ptx(round_f16_ptx(x.s0 * w.s0) + z.s0);
        t.s1 = round_f16_ptx(round_f16_ptx(x.s1 * w.s1) + z.s1);
#endif
        STOREL(y, i, t < 0.0f ? (FLOATL)0.0f : t);
    }
}
#endif
