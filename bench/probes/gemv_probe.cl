/* One-row products y = x @ B (x: K f16 values; B: K x N f16, row-major)
 * written several ways, for gemv_probe.c. A work-group takes TN = 8 TC
 * columns: TC work-items side by side along a row of B (16 bytes, 8
 * columns each), KL = NT / TC lanes along K, U loads in flight a lane.
 * SPLIT work-groups share a column block's K (host argument S): each
 * writes its partial sums, the last to finish (an atomic counter a block)
 * adds them. TREE 1: the lanes' sums by a tree in local memory; 0: one
 * work-item a column adds its KL lanes. FENCE 1: membar.gl by inline PTX
 * before the counter; 0: mem_fence. */
#ifndef TC
#define TC 8
#endif
#ifndef NT
#define NT 256
#endif
#ifndef U
#define U 8
#endif
#ifndef TREE
#define TREE 0
#endif
#ifndef FENCE
#define FENCE 0
#endif
#define KL (NT / TC)
#define TN (TC * 8)

static inline float8 f16x8(uint8 h)
{
    const uint8 e = h & 0x7c00u, a = (h & 0x7fffu) << 13;
    uint8 r = a + 0x38000000u;
    r = e == 0x7c00u ? (a | 0x7f800000u) : r;
    r = e == 0u ? as_uint8(convert_float8(h & 0x3ffu) * 0x1p-24f) : r;
    return as_float8(r | ((h & 0x8000u) << 16));
}

__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
void gemv_n(__global const half *a, __global const ushort *b, __global float *part, __global uint *cnt,
            __global float *y, const uint K, const uint N, const uint S)
{
    __local float red[NT * 8];
    __local int last;
    const int t = (int)get_local_id(0), tc = t % TC, kl = t / TC;
    const uint blocks = N / TN, g = (uint)get_group_id(0), cb = g % blocks, sp = g / blocks;
    const uint n = cb * TN + (uint)tc * 8u;
    const uint kch = K / S, k1 = sp * kch + kch;
    float8 acc = 0.0f;
    uint k = sp * kch + (uint)kl;
    for (; k + (U - 1) * KL < k1; k += U * KL) {
        ushort8 v[U];
        for (int u = 0; u < U; ++u)
            v[u] = *(__global const ushort8 *)(b + (size_t)(k + u * KL) * N + n);
        for (int u = 0; u < U; ++u)
            acc = fma((float8)vload_half(k + u * KL, a), f16x8(convert_uint8(v[u])), acc);
    }
    for (; k < k1; k += KL)
        acc = fma((float8)vload_half(k, a), f16x8(convert_uint8(*(__global const ushort8 *)(b + (size_t)k * N + n))), acc);
    vstore8(acc, t, red);
    barrier(CLK_LOCAL_MEM_FENCE);
    float s = 0.0f;
#if TREE
    for (int h = KL / 2; h > 0; h >>= 1) {
        if (kl < h)
            vstore8(vload8(t, red) + vload8(t + h * TC, red), t, red);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (t < TN)
        s = red[t];
#else
    if (t < TN)
        for (int l = 0; l < KL; ++l)
            s += red[l * TN + t];
#endif
    const uint col = cb * TN + (uint)t;
    if (S == 1) {
        if (t < TN)
            y[col] = s;
        return;
    }
    if (t < TN)
        part[sp * N + col] = s;
#if FENCE
    __asm__ volatile("membar.gl;" ::: "memory");
#else
    mem_fence(CLK_GLOBAL_MEM_FENCE);
#endif
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    if (t == 0)
        last = atomic_inc(cnt + cb) == S - 1;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!last)
        return;
    if (t < TN) {
        float r = 0.0f;
        for (uint p = 0; p < S; ++p)
            r += ((volatile __global float *)part)[p * N + col];
        y[col] = r;
    }
    if (t == 0)
        cnt[cb] = 0;
}
