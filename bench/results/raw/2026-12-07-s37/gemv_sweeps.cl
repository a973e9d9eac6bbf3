#define K 2048
#define N 16384
#ifndef COLS
#define COLS 512
#endif
#define TN 128
#define VW 16
#define KC 256
/* V1: the library's order: sub-blocks of TN outer, k inner, registers. */
__kernel void v1(__global const float *restrict a, __global const half *restrict b, __global float *restrict c, const uint n)
{
    const uint bn = get_global_id(0) * COLS;
    float sums[COLS], ap[KC];
    for (int j = 0; j < COLS; ++j) sums[j] = 0.0f;
    for (uint k0 = 0; k0 < K; k0 += KC) {
        for (int kk = 0; kk < KC; ++kk) ap[kk] = a[k0 + kk];
        for (int s0 = 0; s0 < COLS; s0 += TN) {
            float16 acc[TN / VW];
            for (int v = 0; v < TN / VW; ++v) acc[v] = vload16(0, sums + s0 + v * VW);
            for (int kk = 0; kk < KC; ++kk) {
                const float16 av = (float16)(ap[kk]);
#pragma unroll
                for (int v = 0; v < TN / VW; ++v)
                    acc[v] += av * vload_half16(0, b + (size_t)(k0 + kk) * N + bn + s0 + v * VW);
            }
            for (int v = 0; v < TN / VW; ++v) vstore16(acc[v], 0, sums + s0 + v * VW);
        }
    }
    for (int j = 0; j < COLS; ++j) c[bn + j] = sums[j];
}
/* V2: k outer (R rows at a time), every column of the strip inner, sums in private memory. */
#ifndef R
#define R 2
#endif
__kernel void v2(__global const float *restrict a, __global const half *restrict b, __global float *restrict c, const uint n)
{
    const uint bn = get_global_id(0) * COLS;
    float sums[COLS];
    for (int j = 0; j < COLS; ++j) sums[j] = 0.0f;
    for (uint k = 0; k < K; k += R) {
        float av[R];
        for (int r = 0; r < R; ++r) av[r] = a[k + r];
        for (int v = 0; v < COLS / VW; ++v) {
            float16 s = vload16(v, sums);
#pragma unroll
            for (int r = 0; r < R; ++r)
                s += (float16)(av[r]) * vload_half16(0, b + (size_t)(k + r) * N + bn + v * VW);
            vstore16(s, v, sums);
        }
    }
    for (int j = 0; j < COLS; ++j) c[bn + j] = sums[j];
}
/* V3: v2 over a K slice of KS rows (SPLIT = K / KS slices a strip), partial sums stored. */
#ifndef KS
#define KS 256
#endif
__kernel void v3(__global const float *restrict a, __global const half *restrict b, __global float *restrict c, const uint n)
{
    const uint g = get_global_id(0), strip = g / (K / KS), slice = g % (K / KS);
    const uint bn = strip * COLS, k0 = slice * KS;
    float sums[COLS];
    for (int j = 0; j < COLS; ++j) sums[j] = 0.0f;
    for (uint k = k0; k < k0 + KS; k += R) {
        float av[R];
        for (int r = 0; r < R; ++r) av[r] = a[k + r];
        for (int v = 0; v < COLS / VW; ++v) {
            float16 s = vload16(v, sums);
#pragma unroll
            for (int r = 0; r < R; ++r)
                s += (float16)(av[r]) * vload_half16(0, b + (size_t)(k + r) * N + bn + v * VW);
            vstore16(s, v, sums);
        }
    }
    for (int j = 0; j < COLS; ++j) c[(size_t)slice * N + bn + j] = sums[j];
}
/* V4: v3 with the slices' exchange (atomics) and the last adding them. c holds counters then partials. */
__kernel void v4(__global const float *restrict a, __global const half *restrict b, __global uint *restrict c, const uint n)
{
    const uint g = get_global_id(0), strip = g / (K / KS), slice = g % (K / KS);
    const uint bn = strip * COLS, k0 = slice * KS;
    float sums[COLS];
    for (int j = 0; j < COLS; ++j) sums[j] = 0.0f;
    for (uint k = k0; k < k0 + KS; k += R) {
        float av[R];
        for (int r = 0; r < R; ++r) av[r] = a[k + r];
        for (int v = 0; v < COLS / VW; ++v) {
            float16 s = vload16(v, sums);
#pragma unroll
            for (int r = 0; r < R; ++r)
                s += (float16)(av[r]) * vload_half16(0, b + (size_t)(k + r) * N + bn + v * VW);
            vstore16(s, v, sums);
        }
    }
    __global uint *counters = c, *part = c + 64 + (strip * (K / KS) + slice) * COLS;
#ifdef PLAIN
    for (int j = 0; j < COLS; ++j) ((__global float *)part)[j] = sums[j];
#else
    for (int j = 0; j < COLS; ++j) atomic_xchg(part + j, as_uint(sums[j]));
#endif
    mem_fence(CLK_GLOBAL_MEM_FENCE);
    if (atomic_inc(counters + strip) != K / KS - 1) return;
    mem_fence(CLK_GLOBAL_MEM_FENCE);
    __global uint *p0 = c + 64 + strip * (K / KS) * COLS;
    for (int j = 0; j < COLS; ++j) sums[j] = 0.0f;
    for (int p = 0; p < K / KS; ++p)
        for (int j = 0; j < COLS; ++j)
#ifdef PLAIN
            sums[j] += ((__global float *)p0)[p * COLS + j];
#else
            sums[j] += as_float(atomic_or(p0 + p * COLS + j, 0u));
#endif
    atomic_xchg(counters + strip, 0u);
    for (int j = 0; j < COLS; ++j) ((__global float *)p0)[j] = sums[j];
}
