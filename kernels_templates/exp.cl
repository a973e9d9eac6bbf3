/* exp for float and its vectors on CPU devices, in plain arithmetic that
 * vectorises. PoCL's scalar exp is a call that does not: the pointwise
 * form, which computes its vector lane by lane, ran a 2^24-float Exp in
 * 9.3-11.1 ms on 16 cores with it and 5.2-8.3 ms with this (a copy of the
 * same bytes: 0.7-0.9 ms; bench/probes/cpu_own_exp.sh). The reduction
 * form's float8 exp was no faster with this, so only pointwise kernels for
 * a CPU device include it (codegen), which then defines exp(x) as
 * clf_exp(x). GPUs keep their own exp.
 *
 * exp(x) = 2^n e^r, n = x log2 e rounded to an integer (by adding and
 * subtracting 1.5 x 2^23), r = x - n ln 2 with ln 2 in two parts (n ln2_hi
 * exact), |r| <= ln 2 / 2, e^r by its Taylor polynomial of degree 7
 * (truncation under 6e-9 relative); 2^n as two normal powers of two (n
 * from -150 to 128), so that results in the subnormal range round once.
 * x is clamped to [-104, 89] first: past the clamp the result is 0 or +inf
 * all the same; NaN stays NaN. 1.0 ulp at most from the correctly rounded
 * exp over its range on PoCL and llvmpipe (test ops/exp_is_accurate bounds
 * it at 2; OpenCL allows 3). No builtin calls (PoCL's
 * rint, floor and fma were calls too). Overloaded functions (clang's
 * overloadable attribute, which every clang-based CPU compiler takes), one
 * per vector width. */
#define CLF_EXP_DEFINE(T, I, AS_I, AS_T)                                                             \
    static inline T __attribute__((overloadable)) clf_exp(T x)                                      \
    {                                                                                               \
        T c = x > -104.0f ? x : (T)(-104.0f); /* NaN goes to -104 here, back at the end */          \
        c = c < 89.0f ? c : (T)(89.0f);                                                             \
        const T j = c * 1.44269504088896341f + 12582912.0f; /* 1.5 x 2^23: rounds to an integer */  \
        const T n = j - 12582912.0f;                                                                \
        const I k = AS_I(j) - 0x4b400000, k1 = k >> 1, k2 = k - k1;                                 \
        const T r = (c - n * 0.693145751953125f) - n * 1.42860682030941723e-6f;                     \
        const T p = 1.0f + r * (1.0f + r * (0.5f + r * (1.66666667e-1f + r * (4.16666667e-2f + r * ( \
                    8.33333333e-3f + r * (1.38888889e-3f + r * 1.98412698e-4f))))));                \
        const T y = p * AS_T((k1 + 127) << 23) * AS_T((k2 + 127) << 23);                            \
        return x != x ? x : y;                                                                      \
    }
CLF_EXP_DEFINE(float, int, as_int, as_float)
CLF_EXP_DEFINE(float2, int2, as_int2, as_float2)
CLF_EXP_DEFINE(float3, int3, as_int3, as_float3)
CLF_EXP_DEFINE(float4, int4, as_int4, as_float4)
CLF_EXP_DEFINE(float8, int8, as_int8, as_float8)
CLF_EXP_DEFINE(float16, int16, as_int16, as_float16)
#undef CLF_EXP_DEFINE
/* Some drivers define exp as a macro of their own (PoCL does). */
#undef exp
#define exp(x) clf_exp(x)
