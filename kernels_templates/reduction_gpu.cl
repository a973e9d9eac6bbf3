/* Reduction region, GPU variant: LANES work-items share a row (a work-group
 * of WG items takes WG / LANES rows), each lane strides over the row, and
 * each stage ends in a reduction across the row's lanes (in local memory,
 * or by warp shuffles).
 * With CACHE > 0 every lane keeps what it loaded in registers, so that a
 * row is read from memory once however many stages and epilogue sweeps use
 * it (the persistent form, named clf_per_...).
 *
 * Codegen prepends the same definitions as for reduction_cpu.cl, plus:
 *   WG, LANES   work-group size and lanes per row (powers of two, LANES <= WG)
 *   VEC         1, or 4: lanes load and compute float4 units of four
 *               consecutive elements through the vector functions
 *               (clf_vvals, clf_vload, clf_vstep<k>, clf_vepilogue, ...);
 *               codegen then makes RLEN a multiple of 4. Measured on an
 *               H200 (bench/probes): float4 units take a cached softmax
 *               from 75% to 98% of the copy roofline.
 *   CACHE       units cached per lane (0: reload every sweep, the reloads
 *               hitting L2); when set, CACHE * LANES * VEC >= RLEN
 *   CLF_SHFL    1 on NVIDIA GPUs with LANES <= 32: lanes combine by warp
 *               shuffles, clf_shfl<k>(a, m) giving lane ^ m's clf_acc<k>
 *               (inline PTX), instead of local memory
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
#ifndef VEC
#define VEC 1
#endif
#ifndef CLF_SHFL
#define CLF_SHFL 0
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
/* The units of a row: float4s, or single elements. */
#define UNITS (RLEN / VEC)
/* Partial results combined per step of the cross-lane reduction: one
 * barrier per FAN-fold step instead of one per halving (measured on an
 * H200: the binary tree left a cached softmax at 68% of copy, this 75%). */
#define FAN 16

#if VEC > 1
#define clf_unit clf_vvals
#define CLF_LOAD_UNIT(u, v) clf_vload(x, (u) * (IDX_T)VEC, (v), CLF_ARGS)
#define CLF_PARTIAL(k) clf_vacc##k
#define CLF_PARTIAL_INIT(k, p) clf_vinit##k(p)
#define CLF_PARTIAL_STEP(k, p, v, u) clf_vstep##k((p), &row, (v), x, (u) * (IDX_T)VEC, CLF_ARGS)
#define CLF_LANE_TOTAL(k, a, p)                                                                    \
    clf_acc##k a;                                                                                  \
    clf_init##k(&a);                                                                               \
    clf_vcombine##k(&a, &p);
#define CLF_EPILOGUE_UNIT(v, u) clf_vepilogue(&row, (v), x, (u) * (IDX_T)VEC, CLF_ARGS)
#else
#define clf_unit clf_vals
#define CLF_LOAD_UNIT(u, v) clf_load(x, (u), (v), CLF_ARGS)
#define CLF_PARTIAL(k) clf_acc##k
#define CLF_PARTIAL_INIT(k, p) clf_init##k(p)
#define CLF_PARTIAL_STEP(k, p, v, u) clf_step##k((p), &row, (v), x, (u), CLF_ARGS)
#define CLF_LANE_TOTAL(k, a, p) clf_acc##k a = p;
#define CLF_EPILOGUE_UNIT(v, u) clf_epilogue(&row, (v), x, (u), CLF_ARGS)
#endif

#if CACHE > 0
/* The lane's c-th unit of its row is cache[c]. Idle lanes (rows past the
 * end) loaded nothing: they skip the sweep as a whole, so that the bound
 * inside stays a compile-time constant. */
#define CLF_SWEEP(body)                                                                            \
    if (valid) {                                                                                   \
        _Pragma("unroll") for (int c = 0; c < CACHE; ++c) {                                        \
            const IDX_T u = (IDX_T)lane + (IDX_T)c * (IDX_T)LANES;                                 \
            if (UNITS % LANES == 0 || u < UNITS) {                                                 \
                const clf_unit v = cache[c];                                                       \
                body;                                                                              \
            }                                                                                      \
        }                                                                                          \
    }
#else
#define CLF_SWEEP(body)                                                                            \
    for (IDX_T u = (IDX_T)lane; u < units; u += (IDX_T)LANES) {                                    \
        clf_unit v;                                                                                \
        CLF_LOAD_UNIT(u, &v);                                                                      \
        body;                                                                                      \
    }
#endif

#if CLF_SHFL
/* The row's lanes are consecutive lanes of one 32-lane warp (NVIDIA; LANES
 * <= 32): they combine their partial results a by butterfly shuffles
 * (clf_shfl<k>(a, m): lane ^ m's accumulator), no local memory, no
 * barrier. Every lane ends with the same total. Measured on an H200 for
 * softmax over 256: 0.0371 ms against 0.0388-0.0395 through local memory
 * (bench/probes/case_variants.py, shfl_wg64). */
#define CLF_CROSS_LANES(k)                                                                         \
    for (int m = LANES / 2; m > 0; m /= 2) {                                                       \
        const clf_acc##k o = clf_shfl##k(a, m);                                                    \
        clf_combine##k(&a, &o);                                                                    \
    }                                                                                              \
    clf_finish##k(&row, &a);
#else
/* The row's lanes combine their partial results a in local memory, FAN at a
 * time, until few enough are left for every lane to combine them all
 * itself. */
#define CLF_CROSS_LANES(k)                                                                         \
        __local clf_acc##k *part = scratch##k + (lid - lane);                                      \
        part[lane] = a;                                                                            \
        barrier(CLK_LOCAL_MEM_FENCE);                                                              \
        int n = LANES;                                                                             \
        for (; n > FAN; n /= FAN) {                                                                \
            /* Lane i < n / FAN folds in i + j * n / FAN: only lanes of this                      \
             * step write, and only places no other lane reads in it. */                           \
            const int q = n / FAN;                                                                 \
            if (lane < q) {                                                                        \
                clf_acc##k mine = part[lane];                                                      \
                for (int j = 1; j < FAN; ++j) {                                                    \
                    const clf_acc##k other = part[lane + j * q];                                   \
                    clf_combine##k(&mine, &other);                                                 \
                }                                                                                  \
                part[lane] = mine;                                                                 \
            }                                                                                      \
            barrier(CLK_LOCAL_MEM_FENCE);                                                          \
        }                                                                                          \
        clf_acc##k total = part[0];                                                                \
        for (int j = 1; j < n; ++j) {                                                              \
            const clf_acc##k other = part[j];                                                      \
            clf_combine##k(&total, &other);                                                        \
        }                                                                                          \
        clf_finish##k(&row, &total);
#endif

/* Stage k: each lane accumulates its share, then the row's lanes combine
 * theirs. */
#define CLF_STAGE(k)                                                                               \
    {                                                                                              \
        CLF_PARTIAL(k) p;                                                                          \
        CLF_PARTIAL_INIT(k, &p);                                                                   \
        CLF_SWEEP(CLF_PARTIAL_STEP(k, &p, &v, u))                                                  \
        CLF_LANE_TOTAL(k, a, p)                                                                    \
        CLF_CROSS_LANES(k)                                                                         \
    }

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void CLF_KERNEL_NAME(CLF_PARAMS, const IDX_T nrows)
{
    /* One scratch array per stage: a stage's last reads need no barrier
     * before the next stage writes. */
#if NSTAGES > 0 && !CLF_SHFL
    __local clf_acc0 scratch0[WG];
#endif
#if NSTAGES > 1 && !CLF_SHFL
    __local clf_acc1 scratch1[WG];
#endif
#if NSTAGES > 2 && !CLF_SHFL
    __local clf_acc2 scratch2[WG];
#endif
#if NSTAGES > 3 && !CLF_SHFL
    __local clf_acc3 scratch3[WG];
#endif
    const int lid = (int)get_local_id(0);
    const int lane = lid % LANES;
    const IDX_T x0 = (IDX_T)get_group_id(0) * (IDX_T)ROWS_PER_WG + (IDX_T)(lid / LANES);
    /* Lanes of rows past the end still take part in every barrier. */
    const bool valid = x0 < nrows;
    const IDX_T x = valid ? x0 : 0;
    const IDX_T units = valid ? UNITS : 0;
    clf_row row;
#if CACHE > 0
    clf_unit cache[CACHE];
    if (valid) {
#pragma unroll
        for (int c = 0; c < CACHE; ++c) {
            const IDX_T u = (IDX_T)lane + (IDX_T)c * (IDX_T)LANES;
            if (UNITS % LANES == 0 || u < UNITS)
                CLF_LOAD_UNIT(u, &cache[c]);
        }
    }
#endif
    (void)units;
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
    CLF_SWEEP(CLF_EPILOGUE_UNIT(&v, u))
#endif
    if (lane == 0)
        clf_rowout(&row, x, CLF_ARGS);
}
