/* Row-reduction kernel shapes for the GPU (probe, not the library's
 * template): softmax and layer norm over rows of C floats, written several
 * ways so that one device call can compare them. Macros:
 *   C        row length          LANES  work-items per row (power of two)
 *   WG       work-group size (WG / LANES rows per group)
 *   VEC      1 or 4: scalar or float4 loads
 *   CACHED   1: the row stays in registers (persistent); 0: each sweep
 *            reloads it (the re-reads hit L2)
 *   ONLINE   softmax only: max and sum in one sweep (running max)
 *   TREE     0: binary tree over local memory (log2 LANES barriers)
 *            1: fan-in of F per level (few barriers)
 *            2: sub-group reduce, then the tree over sub-group partials
 *            3: NVIDIA warp shuffle (inline PTX), then fan-in */
#ifndef VEC
#define VEC 1
#endif
#ifndef F
#define F 16
#endif
#define ROWS (WG / LANES)
#define NV (C / VEC)               /* vectors per row */
#define PER ((NV + LANES - 1) / LANES) /* vectors per lane */

#if VEC == 4
typedef float4 vt;
#define VLOAD(p, i) (((const __global float4 *)(p))[i])
#define VSTORE(v, p, i) (((__global float4 *)(p))[i] = (v))
#define HSUM(v) ((v).s0 + (v).s1 + (v).s2 + (v).s3)
#define HMAX(v) fmax(fmax((v).s0, (v).s1), fmax((v).s2, (v).s3))
#else
typedef float vt;
#define VLOAD(p, i) ((p)[i])
#define VSTORE(v, p, i) ((p)[i] = (v))
#define HSUM(v) (v)
#define HMAX(v) (v)
#endif

#define OP_SUM(a, b) ((a) + (b))
#define OP_MAX(a, b) fmax((a), (b))

#if TREE == 3
static inline float shfl_xor(float v, int m)
{
    float r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(v), "r"(m));
    return r;
}
#endif

/* Reduces v over the LANES lanes of this row; every lane gets the result.
 * s holds WG floats, used by this reduction only. */
#define DEF_REDUCE(name, OP)                                                                       \
    static inline float name(float v, __local float *s, int lid, int lane)                        \
    {                                                                                              \
        __local float *rs = s + (lid - lane);                                                      \
        if (TREE == 0) {                                                                           \
            s[lid] = v;                                                                            \
            barrier(CLK_LOCAL_MEM_FENCE);                                                          \
            for (int h = LANES / 2; h > 0; h >>= 1) {                                              \
                if (lane < h)                                                                      \
                    s[lid] = OP(s[lid], s[lid + h]);                                               \
                barrier(CLK_LOCAL_MEM_FENCE);                                                      \
            }                                                                                      \
            return rs[0];                                                                          \
        }                                                                                          \
        int n = LANES;                                                                             \
        if (TREE == 3) {                                                                           \
            for (int m = 16; m > 0 && m < LANES; m >>= 1)                                          \
                v = OP(v, shfl_xor_w(v, m));                                                       \
            if (LANES <= 32)                                                                       \
                return v;                                                                          \
            if ((lane & 31) == 0)                                                                  \
                rs[lane >> 5] = v;                                                                 \
            n = LANES / 32;                                                                        \
        } else if (TREE == 2) {                                                                    \
            v = SG_RED_##OP(v);                                                                    \
            const int sgs = (int)get_max_sub_group_size();                                         \
            if (LANES <= sgs)                                                                      \
                return v;                                                                          \
            if ((lane % sgs) == 0)                                                                 \
                rs[lane / sgs] = v;                                                                \
            n = LANES / sgs;                                                                       \
        } else {                                                                                   \
            s[lid] = v;                                                                            \
        }                                                                                          \
        barrier(CLK_LOCAL_MEM_FENCE);                                                              \
        while (n > F) {                                                                            \
            const int q = n / F;                                                                   \
            if (lane < q) {                                                                        \
                float a = rs[lane];                                                                \
                for (int j = 1; j < F; ++j)                                                        \
                    a = OP(a, rs[lane + j * q]);                                                   \
                rs[lane] = a;                                                                      \
            }                                                                                      \
            barrier(CLK_LOCAL_MEM_FENCE);                                                          \
            n = q;                                                                                 \
        }                                                                                          \
        float a = rs[0];                                                                           \
        for (int j = 1; j < n; ++j)                                                                \
            a = OP(a, rs[j]);                                                                      \
        return a;                                                                                  \
    }

#if TREE == 3
#define shfl_xor_w shfl_xor
#else
#define shfl_xor_w(v, m) (v)
#endif
#if TREE == 2
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#define SG_RED_OP_SUM(v) sub_group_reduce_add(v)
#define SG_RED_OP_MAX(v) sub_group_reduce_max(v)
#else
#define SG_RED_OP_SUM(v) (v)
#define SG_RED_OP_MAX(v) (v)
#define get_max_sub_group_size() 32
#endif

DEF_REDUCE(red_sum, OP_SUM)
DEF_REDUCE(red_max, OP_MAX)

#if CACHED
#define SWEEP(body)                                                                                \
    _Pragma("unroll") for (int c = 0; c < PER; ++c) {                                              \
        const int i = lane + c * LANES;                                                            \
        if (NV % LANES == 0 || i < NV) {                                                           \
            const vt v = cache[c];                                                                 \
            body;                                                                                  \
        }                                                                                          \
    }
#else
#define SWEEP(body)                                                                                \
    _Pragma("unroll 4") for (int i = lane; i < NV; i += LANES) {                                   \
        const vt v = VLOAD(xr, i);                                                                 \
        body;                                                                                      \
    }
#endif

#define PROLOGUE                                                                                   \
    __local float s0[WG], s1[WG];                                                                  \
    const int lid = (int)get_local_id(0), lane = lid % LANES;                                      \
    const size_t row = get_group_id(0) * ROWS + (size_t)(lid / LANES);                             \
    const __global float *xr = x + row * C;                                                        \
    __global float *yr = y + row * C;                                                              \
    CACHE_LOAD

#if CACHED
#define CACHE_LOAD                                                                                 \
    vt cache[PER];                                                                                 \
    _Pragma("unroll") for (int c = 0; c < PER; ++c) {                                              \
        const int i = lane + c * LANES;                                                            \
        if (NV % LANES == 0 || i < NV)                                                             \
            cache[c] = VLOAD(xr, i);                                                               \
    }
#else
#define CACHE_LOAD
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void softmax(__global const float *restrict x, __global float *restrict y)
{
    PROLOGUE
#if ONLINE
    float m = -INFINITY, d = 0.0f;
    SWEEP({
        const float vm = HMAX(v);
        if (vm > m) { d *= exp(m - vm); m = vm; }
        d += HSUM(exp(v - m));
    })
    const float gm = red_max(m, s0, lid, lane);
    const float gs = red_sum(d * exp(m - gm), s1, lid, lane);
#else
    float m = -INFINITY;
    SWEEP(m = fmax(m, HMAX(v)))
    const float gm = red_max(m, s0, lid, lane);
    float d = 0.0f;
    SWEEP(d += HSUM(exp(v - gm)))
    const float gs = red_sum(d, s1, lid, lane);
#endif
    const float inv = 1.0f / gs;
    SWEEP(VSTORE(exp(v - gm) * inv, yr, i))
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void layernorm(__global const float *restrict x, __global float *restrict y,
               __global const float *restrict w, __global const float *restrict b)
{
    PROLOGUE
    float a = 0.0f;
    SWEEP(a += HSUM(v))
    const float mean = red_sum(a, s0, lid, lane) * (1.0f / C);
    float q = 0.0f;
    SWEEP({ const vt dv = v - mean; q += HSUM(dv * dv); })
    const float rstd = rsqrt(red_sum(q, s1, lid, lane) * (1.0f / C) + 1e-5f);
    SWEEP(VSTORE((v - mean) * rstd * VLOAD(w, i) + VLOAD(b, i), yr, i))
}

__kernel void copy4(__global const float4 *restrict x, __global float4 *restrict y)
{
    const size_t i = get_global_id(0);
    y[i] = x[i];
}
