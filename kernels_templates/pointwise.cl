/* Pointwise region: every work-item computes ITEMS groups of VEC
 * consecutive elements of the region's iteration space.
 *
 * Codegen prepends the definitions below (and tuning #defines) to this file:
 *   CLF_KERNEL_NAME    the kernel's name, after the ops it fused
 *   CLF_PARAMS         the buffer parameters; CLF_ARGS forwards them
 *   clf_point(i, ...)  loads, computes and stores element i
 *   clf_vec(i, ...)    the same for elements i .. i+VEC-1 (when VEC > 1)
 * Without them this file is still valid OpenCL C: a float copy.
 *
 * Tuning:
 *   IDX_T    uint where every extent of the region fits in 31 bits, else ulong
 *   VEC      elements per vector access (1, 2, 4, 8 or 16)
 *   ITEMS    vector groups per work-item
 *   BLOCKED  1: a work-item takes ITEMS consecutive groups (CPU devices: one
 *            long serial loop); 0: consecutive work-items take consecutive
 *            groups, ITEMS strided by the global size (GPUs: coalescing)
 */
#ifndef IDX_T
#define IDX_T uint
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef BLOCKED
#define BLOCKED 0
#endif

#ifndef CLF_KERNEL_NAME
#define CLF_KERNEL_NAME clf_poi_copy_example
#define CLF_PARAMS __global const float *restrict in0, __global float *restrict out0
#define CLF_ARGS in0, out0
static inline void clf_point(IDX_T i, CLF_PARAMS) { out0[i] = in0[i]; }
#endif

__kernel void CLF_KERNEL_NAME(CLF_PARAMS, const IDX_T n)
{
    const IDX_T gid = (IDX_T)get_global_id(0);
    for (int k = 0; k < ITEMS; ++k) {
#if BLOCKED
        const IDX_T i = (gid * (IDX_T)ITEMS + (IDX_T)k) * (IDX_T)VEC;
#else
        const IDX_T i = (gid + (IDX_T)k * (IDX_T)get_global_size(0)) * (IDX_T)VEC;
#endif
        if (i >= n)
            return;
#if VEC > 1
        if (n - i >= (IDX_T)VEC) {
            clf_vec(i, CLF_ARGS);
            continue;
        }
#endif
        for (IDX_T j = i; j < n && j < i + (IDX_T)VEC; ++j)
            clf_point(j, CLF_ARGS);
    }
}
