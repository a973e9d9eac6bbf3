/* The storage floats' helpers, put before every kernel with an f16 or bf16
 * value (codegen_expr.c's clf__cg_source_header), one of each a vector
 * width. Rounding (graph/dtype_table.h) in registers and without the half
 * extension: integer round-to-nearest-even of the f32 bits (13 bits off
 * for a normal f16; f16 subnormals, whose quantum is 2^-24, by the float
 * add (|x| + 0.5) - 0.5, which rounds there; inf from 65520; NaN stays a
 * quiet NaN of its payload's top bits, as the host conversion gives), bf16
 * 16 bits off; ?: and comparisons act lane-wise, so one text serves every
 * width. A round trip through vstore_half_rte into private memory, the
 * obvious spelling, went through the stack on NVIDIA's compiler: an f16
 * chain ran at 65% of the copy rate. clf_f16_float<w>: f16 bit patterns
 * (the low 16 bits of each lane, from aligned vector loads of raw bits) to
 * f32: normals rebiased, subnormals and zeros as m 2^-24, inf and NaN keep
 * their payload. */
static inline float clf_round_f16(float x)
{
    const uint u = as_uint(x), a = u & 0x7fffffffu;
    const uint nrm = (a + 0xfffu + ((a >> 13) & 1u)) & 0xffffe000u;
    const uint sub = as_uint((as_float(a) + 0.5f) - 0.5f);
    uint r = a >= 0x38800000u ? nrm : sub;
    r = a >= 0x477ff000u ? (uint)0x7f800000u : r;
    r = a > 0x7f800000u ? ((a | 0x00400000u) & 0xffffe000u) : r;
    return as_float((u & 0x80000000u) | r);
}
static inline float clf_round_bf16(float x)
{
    const uint u = as_uint(x);
    const uint r = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    return as_float((u & 0x7fffffffu) > 0x7f800000u ? ((u | 0x00400000u) & 0xffff0000u) : r);
}
static inline float2 clf_round_f16_2(float2 x)
{
    const uint2 u = as_uint2(x), a = u & 0x7fffffffu;
    const uint2 nrm = (a + 0xfffu + ((a >> 13) & 1u)) & 0xffffe000u;
    const uint2 sub = as_uint2((as_float2(a) + 0.5f) - 0.5f);
    uint2 r = a >= 0x38800000u ? nrm : sub;
    r = a >= 0x477ff000u ? (uint2)0x7f800000u : r;
    r = a > 0x7f800000u ? ((a | 0x00400000u) & 0xffffe000u) : r;
    return as_float2((u & 0x80000000u) | r);
}
static inline float2 clf_f16_float2(uint2 h)
{
    const uint2 e = h & 0x7c00u, a = (h & 0x7fffu) << 13;
    uint2 r = a + 0x38000000u;
    r = e == 0x7c00u ? (a | 0x7f800000u) : r;
    r = e == 0u ? as_uint2(convert_float2(h & 0x3ffu) * 0x1p-24f) : r;
    return as_float2(r | ((h & 0x8000u) << 16));
}
static inline float2 clf_round_bf16_2(float2 x)
{
    const uint2 u = as_uint2(x);
    const uint2 r = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    return as_float2((u & 0x7fffffffu) > 0x7f800000u ? ((u | 0x00400000u) & 0xffff0000u) : r);
}
static inline float4 clf_round_f16_4(float4 x)
{
    const uint4 u = as_uint4(x), a = u & 0x7fffffffu;
    const uint4 nrm = (a + 0xfffu + ((a >> 13) & 1u)) & 0xffffe000u;
    const uint4 sub = as_uint4((as_float4(a) + 0.5f) - 0.5f);
    uint4 r = a >= 0x38800000u ? nrm : sub;
    r = a >= 0x477ff000u ? (uint4)0x7f800000u : r;
    r = a > 0x7f800000u ? ((a | 0x00400000u) & 0xffffe000u) : r;
    return as_float4((u & 0x80000000u) | r);
}
static inline float4 clf_f16_float4(uint4 h)
{
    const uint4 e = h & 0x7c00u, a = (h & 0x7fffu) << 13;
    uint4 r = a + 0x38000000u;
    r = e == 0x7c00u ? (a | 0x7f800000u) : r;
    r = e == 0u ? as_uint4(convert_float4(h & 0x3ffu) * 0x1p-24f) : r;
    return as_float4(r | ((h & 0x8000u) << 16));
}
static inline float4 clf_round_bf16_4(float4 x)
{
    const uint4 u = as_uint4(x);
    const uint4 r = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    return as_float4((u & 0x7fffffffu) > 0x7f800000u ? ((u | 0x00400000u) & 0xffff0000u) : r);
}
static inline float8 clf_round_f16_8(float8 x)
{
    const uint8 u = as_uint8(x), a = u & 0x7fffffffu;
    const uint8 nrm = (a + 0xfffu + ((a >> 13) & 1u)) & 0xffffe000u;
    const uint8 sub = as_uint8((as_float8(a) + 0.5f) - 0.5f);
    uint8 r = a >= 0x38800000u ? nrm : sub;
    r = a >= 0x477ff000u ? (uint8)0x7f800000u : r;
    r = a > 0x7f800000u ? ((a | 0x00400000u) & 0xffffe000u) : r;
    return as_float8((u & 0x80000000u) | r);
}
static inline float8 clf_f16_float8(uint8 h)
{
    const uint8 e = h & 0x7c00u, a = (h & 0x7fffu) << 13;
    uint8 r = a + 0x38000000u;
    r = e == 0x7c00u ? (a | 0x7f800000u) : r;
    r = e == 0u ? as_uint8(convert_float8(h & 0x3ffu) * 0x1p-24f) : r;
    return as_float8(r | ((h & 0x8000u) << 16));
}
static inline float8 clf_round_bf16_8(float8 x)
{
    const uint8 u = as_uint8(x);
    const uint8 r = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    return as_float8((u & 0x7fffffffu) > 0x7f800000u ? ((u | 0x00400000u) & 0xffff0000u) : r);
}
static inline float16 clf_round_f16_16(float16 x)
{
    const uint16 u = as_uint16(x), a = u & 0x7fffffffu;
    const uint16 nrm = (a + 0xfffu + ((a >> 13) & 1u)) & 0xffffe000u;
    const uint16 sub = as_uint16((as_float16(a) + 0.5f) - 0.5f);
    uint16 r = a >= 0x38800000u ? nrm : sub;
    r = a >= 0x477ff000u ? (uint16)0x7f800000u : r;
    r = a > 0x7f800000u ? ((a | 0x00400000u) & 0xffffe000u) : r;
    return as_float16((u & 0x80000000u) | r);
}
static inline float16 clf_f16_float16(uint16 h)
{
    const uint16 e = h & 0x7c00u, a = (h & 0x7fffu) << 13;
    uint16 r = a + 0x38000000u;
    r = e == 0x7c00u ? (a | 0x7f800000u) : r;
    r = e == 0u ? as_uint16(convert_float16(h & 0x3ffu) * 0x1p-24f) : r;
    return as_float16(r | ((h & 0x8000u) << 16));
}
static inline float16 clf_round_bf16_16(float16 x)
{
    const uint16 u = as_uint16(x);
    const uint16 r = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    return as_float16((u & 0x7fffffffu) > 0x7f800000u ? ((u | 0x00400000u) & 0xffff0000u) : r);
}
static inline ushort clf_bf16_bits(float x) { return (ushort)(as_uint(x) >> 16); }
