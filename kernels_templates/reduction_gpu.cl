/* Reduction region, GPU variant: LANES work-items share a row (a work-group
 * of WG items takes WG / LANES rows), each lane strides over the row, and
 * each stage ends in a tree reduction in local memory. With CACHE > 0 every
 * lane keeps its CACHE elements' loaded values in registers, so that a row
 * is read from memory once however many stages and epilogue sweeps use it
 * (the persistent form, named clf_per_...).
 *
 * Codegen prepends the same definitions as for reduction_cpu.cl, plus:
 *   WG, LANES   work-group size and lanes per row (powers of two, LANES <= WG)
 *   CACHE       elements cached per lane (0: reload every sweep); when set,
 *               CACHE * LANES >= RLEN
 * Without them this file is valid OpenCL C: a row sum of a float matrix. */
#ifndef IDX_T
#define IDX_T uint
#endif
#ifndef WG
#define WG 256
#endif
#ifndef LANES
#define LANES 256
#endif
#ifndef CACHE
#define CACHE 0
#endif

#ifndef CLF_KERNEL_NAME
#define CLF_KERNEL_NAME clf_red_example
#define CLF_PARAMS __global const float *restrict in0, __global float *restrict out0
#define CLF_ARGS in0, out0
#define RLEN 1024u
#define NSTAGES 1
#define HAS_EPILOGUE 0
typedef struct { float r0; } clf_row;
typedef struct { float l0; } clf_vals;
typedef struct { float s; } clf_acc0;
static inline void clf_load(IDX_T x, IDX_T r, clf_vals *v, CLF_PARAMS) { v->l0 = in0[x * RLEN + r]; }
static inline void clf_init0(clf_acc0 *a) { a->s = 0.0f; }
static inline void clf_step0(clf_acc0 *a, const clf_row *row, const clf_vals *v, IDX_T x, IDX_T r, CLF_PARAMS) { a->s += v->l0; }
static inline void clf_combine0(clf_acc0 *a, const clf_acc0 *b) { a->s += b->s; }
static inline void clf_finish0(clf_row *row, const clf_acc0 *a) { row->r0 = a->s; }
static inline void clf_rowout(const clf_row *row, IDX_T x, CLF_PARAMS) { out0[x] = row->r0; }
#endif

#define ROWS_PER_WG (WG / LANES)

#if CACHE > 0
/* The lane's c-th element of its row. */
/* Idle lanes (rows past the end) loaded nothing: they skip the sweep as a
 * whole, so that the bound inside stays a compile-time constant. */
#define CLF_SWEEP(body)                                                                            \
    if (rlen) {                                                                                    \
        _Pragma("unroll") for (int c = 0; c < CACHE; ++c) {                                        \
            const IDX_T r = (IDX_T)lane + (IDX_T)c * (IDX_T)LANES;                                 \
            if (r < RLEN) {                                                                        \
                const clf_vals v = cache[c];                                                       \
                body;                                                                              \
            }                                                                                      \
        }                                                                                          \
    }
#else
#define CLF_SWEEP(body)                                                                            \
    for (IDX_T r = (IDX_T)lane; r < rlen; r += (IDX_T)LANES) {                                     \
        clf_vals v;                                                                                \
        clf_load(x, r, &v, CLF_ARGS);                                                              \
        body;                                                                                      \
    }
#endif

/* Stage k: each lane accumulates its share, then the row's lanes combine
 * theirs in a tree over local memory; every lane gets the result. */
#define CLF_STAGE(k)                                                                               \
    {                                                                                              \
        clf_acc##k a;                                                                              \
        clf_init##k(&a);                                                                           \
        CLF_SWEEP(clf_step##k(&a, &row, &v, x, r, CLF_ARGS))                                       \
        scratch##k[lid] = a;                                                                       \
        barrier(CLK_LOCAL_MEM_FENCE);                                                              \
        for (int s = LANES / 2; s > 0; s >>= 1) {                                                  \
            if (lane < s) {                                                                        \
                clf_acc##k mine = scratch##k[lid], other = scratch##k[lid + s];                    \
                clf_combine##k(&mine, &other);                                                     \
                scratch##k[lid] = mine;                                                            \
            }                                                                                      \
            barrier(CLK_LOCAL_MEM_FENCE);                                                          \
        }                                                                                          \
        const clf_acc##k total = scratch##k[lid - lane];                                           \
        clf_finish##k(&row, &total);                                                               \
    }

__kernel void CLF_KERNEL_NAME(CLF_PARAMS, const IDX_T nrows)
{
#if NSTAGES > 0
    __local clf_acc0 scratch0[WG];
#endif
#if NSTAGES > 1
    __local clf_acc1 scratch1[WG];
#endif
#if NSTAGES > 2
    __local clf_acc2 scratch2[WG];
#endif
#if NSTAGES > 3
    __local clf_acc3 scratch3[WG];
#endif
    const int lid = (int)get_local_id(0);
    const int lane = lid % LANES;
    const IDX_T x0 = (IDX_T)get_group_id(0) * (IDX_T)ROWS_PER_WG + (IDX_T)(lid / LANES);
    /* Lanes of rows past the end still take part in every barrier. */
    const bool valid = x0 < nrows;
    const IDX_T x = valid ? x0 : 0;
    const IDX_T rlen = valid ? RLEN : 0;
    clf_row row;
#if CACHE > 0
    clf_vals cache[CACHE];
    if (rlen) {
#pragma unroll
        for (int c = 0; c < CACHE; ++c) {
            const IDX_T r = (IDX_T)lane + (IDX_T)c * (IDX_T)LANES;
            if (r < RLEN)
                clf_load(x, r, &cache[c], CLF_ARGS);
        }
    }
#endif
    (void)rlen;
#if NSTAGES > 0
    CLF_STAGE(0)
#endif
#if NSTAGES > 1
    CLF_STAGE(1)
#endif
#if NSTAGES > 2
    CLF_STAGE(2)
#endif
#if NSTAGES > 3
    CLF_STAGE(3)
#endif
    if (!valid)
        return;
#if HAS_EPILOGUE
    CLF_SWEEP(clf_epilogue(&row, &v, x, r, CLF_ARGS))
#endif
    if (lane == 0)
        clf_rowout(&row, x, CLF_ARGS);
}
