/* relu(a*b + c) over n f16 values (the BENCH.md chain in f16), eight
 * elements a work-item, written four ways, and an f32 reference: which
 * f16 load and store spelling reaches the copy rate on a device without
 * cl_khr_fp16 (bench/probes/half_probe_gpu.sh). Arguments: a, b, c, y, n. */

/* f16 bits (in a uint) to f32, exactly, with integer operations only. */
static inline float8 f16_bits_to_f32(uint8 h)
{
    const uint8 s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    const uint8 nrm = s | ((e + 112u) << 23) | (m << 13);
    const uint8 inf = s | 0x7f800000u | (m << 13);
    /* A subnormal: m * 2^-24, exact in f32. */
    const float8 sub = as_float8(s | as_uint8(convert_float8(m) * 0x1p-24f));
    return e == 0u ? sub : as_float8(e == 0x1fu ? inf : nrm);
}

static inline float8 round_f16(float8 x)
{
    const uint8 u = as_uint8(x), a = u & 0x7fffffffu;
    const uint8 nrm = (a + 0xfffu + ((a >> 13) & 1u)) & 0xffffe000u;
    const uint8 sub = as_uint8((as_float8(a) + 0.5f) - 0.5f);
    uint8 r = a >= 0x38800000u ? nrm : sub;
    r = a >= 0x477ff000u ? (uint8)0x7f800000u : r;
    r = a > 0x7f800000u ? ((a | 0x00400000u) & 0xffffe000u) : r;
    return as_float8((u & 0x80000000u) | r);
}

/* An f16-exact f32 to its f16 bits. */
static inline ushort8 f32_to_f16_bits(float8 x)
{
    const uint8 u = as_uint8(x), a = u & 0x7fffffffu, s = (u >> 16) & 0x8000u;
    const uint8 nrm = (a - 0x38000000u) >> 13;
    const uint8 sub = convert_uint8(as_float8(a) * 0x1p24f);
    uint8 r = a >= 0x38800000u ? nrm : sub;
    r = a >= 0x7f800000u ? (0x7c00u | ((a >> 13) & 0x3ffu)) : r;
    return convert_ushort8(s | r);
}

static inline float8 chain(float8 a, float8 b, float8 c)
{
    const float8 t = round_f16(round_f16(a * b) + c);
    return t < 0.0f ? (float8)0.0f : t;
}

__kernel void k1_vload_half8(__global const half *a, __global const half *b, __global const half *c, __global half *y,
                             uint n)
{
    const uint i = get_global_id(0) * 8u;
    if (i < n)
        vstore_half8_rte(chain(vload_half8(0, a + i), vload_half8(0, b + i), vload_half8(0, c + i)), 0, y + i);
}

__kernel void k2_vloada_half8(__global const half *a, __global const half *b, __global const half *c, __global half *y,
                              uint n)
{
    const uint i = get_global_id(0) * 8u;
    if (i < n)
        vstorea_half8_rte(chain(vloada_half8(0, a + i), vloada_half8(0, b + i), vloada_half8(0, c + i)), 0, y + i);
}

__kernel void k3_ushort8(__global const ushort *a, __global const ushort *b, __global const ushort *c,
                         __global ushort *y, uint n)
{
    const uint i = get_global_id(0) * 8u;
    if (i < n) {
        const float8 x = f16_bits_to_f32(convert_uint8(*(const __global ushort8 *)(a + i)));
        const float8 w = f16_bits_to_f32(convert_uint8(*(const __global ushort8 *)(b + i)));
        const float8 z = f16_bits_to_f32(convert_uint8(*(const __global ushort8 *)(c + i)));
        *(__global ushort8 *)(y + i) = f32_to_f16_bits(chain(x, w, z));
    }
}

/* Loads through vload_half8, stores as ushort8 bits. */
__kernel void k4_vload_store_bits(__global const half *a, __global const half *b, __global const half *c,
                                  __global ushort *y, uint n)
{
    const uint i = get_global_id(0) * 8u;
    if (i < n)
        *(__global ushort8 *)(y + i) = f32_to_f16_bits(chain(vload_half8(0, a + i), vload_half8(0, b + i),
                                                              vload_half8(0, c + i)));
}

/* The f16 copy floor: ushort8 in, ushort8 out. */
__kernel void k5_copy_ushort8(__global const ushort *a, __global const ushort *b, __global const ushort *c,
                              __global ushort *y, uint n)
{
    const uint i = get_global_id(0) * 8u;
    if (i < n)
        *(__global ushort8 *)(y + i) = *(const __global ushort8 *)(a + i);
}

/* f32 for comparison: eight floats a work-item (n/2 of them, the same bytes). */
__kernel void k6_f32(__global const float *a, __global const float *b, __global const float *c, __global float *y,
                     uint n)
{
    const uint i = get_global_id(0) * 8u;
    if (i < n / 2u) {
        const float8 t = vload8(0, a + i) * vload8(0, b + i) + vload8(0, c + i);
        vstore8(t < 0.0f ? (float8)0.0f : t, 0, y + i);
    }
}
