/* Reduction region, CPU variant: each work-item owns ROWS_PER_ITEM whole
 * rows and sweeps each row serially, once per reduction stage and once more
 * for the epilogue, with ACCS interleaved accumulators. No barriers, no
 * local memory: what PoCL and other CPU devices run fast.
 *
 * Codegen prepends (see codegen_reduction.c):
 *   CLF_KERNEL_NAME, CLF_PARAMS, CLF_ARGS   as in pointwise.cl
 *   RLEN, NSTAGES, HAS_EPILOGUE            the region's shape
 *   clf_row                                every reduction's result for one row
 *   clf_vals, clf_load(x, r, &v)           the row's loaded values at element r
 *   clf_acc<k>, clf_init<k>, clf_step<k>, clf_combine<k>, clf_finish<k>
 *                                          stage k's accumulators
 *   clf_epilogue(&row, &v, x, r, ...)      stores over the full space
 *   clf_rowout(&row, x, ...)               stores once per row
 * (a clf_step<k> may also store a costly value into an output at the
 * element the epilogue writes there, for the epilogue to read back instead
 * of computing it again: codegen's carries), and, with VEC > 1, their
 * counterparts over VEC consecutive elements r .. r+VEC-1 as floatVEC
 * values (so that exp and the arithmetic run as vector code, which PoCL
 * does not make of the scalar loop by itself):
 *   clf_vvals, clf_vload(x, r, &v)         the row's values, VEC at a time
 *   clf_vacc<k>, clf_vinit<k>, clf_vstep<k>, clf_vcombine<k>(&acc, &vacc)
 *                                          stage k's vector accumulators,
 *                                          folded lane by lane into clf_acc<k>
 *   clf_vepilogue(&row, &v, x, r, ...)     stores over the full space
 * The vector loop takes whole groups of VEC elements with VACCS vector
 * accumulators; the scalar loop takes the rest of the row.
 * Without them this file is valid OpenCL C: a row sum of a float matrix. */
#ifndef IDX_T
#define IDX_T uint
#endif
#ifndef ACCS
#define ACCS 4
#endif
#ifndef ROWS_PER_ITEM
#define ROWS_PER_ITEM 1
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef VACCS
#define VACCS 1
#endif

#ifndef CLF_KERNEL_NAME
#define CLF_KERNEL_NAME clf_red_example
#define CLF_PARAMS __global const float *restrict in0, __global float *restrict out0
#define CLF_ARGS in0, out0
#define RLEN 16u
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

#define CLF_STAGE(k)                                                                               \
    {                                                                                              \
        clf_acc##k acc[ACCS];                                                                      \
        for (int j = 0; j < ACCS; ++j)                                                             \
            clf_init##k(&acc[j]);                                                                  \
        IDX_T r = 0;                                                                               \
        for (; r + ACCS <= RLEN; r += ACCS)                                                        \
            for (int j = 0; j < ACCS; ++j) {                                                       \
                clf_vals v;                                                                        \
                clf_load(x, r + (IDX_T)j, &v, CLF_ARGS);                                           \
                clf_step##k(&acc[j], &row, &v, x, r + (IDX_T)j, CLF_ARGS);                         \
            }                                                                                      \
        for (; r < RLEN; ++r) {                                                                    \
            clf_vals v;                                                                            \
            clf_load(x, r, &v, CLF_ARGS);                                                          \
            clf_step##k(&acc[0], &row, &v, x, r, CLF_ARGS);                                        \
        }                                                                                          \
        for (int j = 1; j < ACCS; ++j)                                                             \
            clf_combine##k(&acc[0], &acc[j]);                                                      \
        clf_finish##k(&row, &acc[0]);                                                              \
    }

#if VEC > 1
#define CLF_VSTAGE(k)                                                                              \
    {                                                                                              \
        clf_acc##k acc;                                                                            \
        clf_init##k(&acc);                                                                         \
        clf_vacc##k vacc[VACCS];                                                                   \
        for (int j = 0; j < VACCS; ++j)                                                            \
            clf_vinit##k(&vacc[j]);                                                                \
        IDX_T r = 0;                                                                               \
        for (; r + (IDX_T)(VEC * VACCS) <= RLEN; r += (IDX_T)(VEC * VACCS))                        \
            for (int j = 0; j < VACCS; ++j) {                                                      \
                clf_vvals v;                                                                       \
                clf_vload(x, r + (IDX_T)(j * VEC), &v, CLF_ARGS);                                  \
                clf_vstep##k(&vacc[j], &row, &v, x, r + (IDX_T)(j * VEC), CLF_ARGS);               \
            }                                                                                      \
        for (; r + (IDX_T)VEC <= RLEN; r += (IDX_T)VEC) {                                          \
            clf_vvals v;                                                                           \
            clf_vload(x, r, &v, CLF_ARGS);                                                         \
            clf_vstep##k(&vacc[0], &row, &v, x, r, CLF_ARGS);                                      \
        }                                                                                          \
        for (; r < RLEN; ++r) {                                                                    \
            clf_vals v;                                                                            \
            clf_load(x, r, &v, CLF_ARGS);                                                          \
            clf_step##k(&acc, &row, &v, x, r, CLF_ARGS);                                           \
        }                                                                                          \
        for (int j = 0; j < VACCS; ++j)                                                            \
            clf_vcombine##k(&acc, &vacc[j]);                                                       \
        clf_finish##k(&row, &acc);                                                                 \
    }
#undef CLF_STAGE
#define CLF_STAGE(k) CLF_VSTAGE(k)
#endif

__kernel void CLF_KERNEL_NAME(CLF_PARAMS, const IDX_T nrows)
{
    const IDX_T first = (IDX_T)get_global_id(0) * (IDX_T)ROWS_PER_ITEM;
    for (IDX_T x = first; x < first + (IDX_T)ROWS_PER_ITEM && x < nrows; ++x) {
        clf_row row;
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
#if HAS_EPILOGUE
        IDX_T r0 = 0;
#if VEC > 1
        for (; r0 + (IDX_T)VEC <= RLEN; r0 += (IDX_T)VEC) {
            clf_vvals v;
            clf_vload(x, r0, &v, CLF_ARGS);
            clf_vepilogue(&row, &v, x, r0, CLF_ARGS);
        }
#endif
        for (IDX_T r = r0; r < RLEN; ++r) {
            clf_vals v;
            clf_load(x, r, &v, CLF_ARGS);
            clf_epilogue(&row, &v, x, r, CLF_ARGS);
        }
#endif
        clf_rowout(&row, x, CLF_ARGS);
    }
}
