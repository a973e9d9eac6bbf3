/* Split reduction, for few long rows (the sum of every element of a large
 * tensor): each row's elements are cut into SPLIT chunks reduced in
 * parallel into partial accumulators, then a second kernel combines each
 * row's partials in order and makes the row's stores. One reduction stage,
 * no full-space epilogue.
 *
 * Codegen prepends the definitions of reduction_cpu.cl (one stage: clf_acc0
 * and its functions, clf_load, clf_rowout), plus:
 *   SPLIT        chunks per row; CHUNK elements each (the last may be short)
 *   SPLIT_GPU    1: a work-group of WG lanes per chunk with a tree reduction
 *                in local memory; 0: a work-item per chunk (CPU devices)
 *   CLF_FINAL_NAME  the second kernel's name
 * The partial buffer holds nrows * SPLIT accumulators. Without the
 * definitions this file is valid OpenCL C: a split sum of float rows. */
#ifndef IDX_T
#define IDX_T uint
#endif
#ifndef WG
#define WG 256
#endif
#ifndef SPLIT_GPU
#define SPLIT_GPU 1
#endif

#ifndef CLF_KERNEL_NAME
#define CLF_KERNEL_NAME clf_red_split_example
#define CLF_FINAL_NAME clf_red_split_example_final
#define CLF_PARAMS __global const float *restrict in0, __global float *restrict out0
#define CLF_ARGS in0, out0
#define RLEN 65536u
#define SPLIT 16u
#define CHUNK 4096u
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

/* Partial accumulator of chunk `chunk` of row x. The accumulators lie
 * partial_at bytes into partials (a region of the executable's scratch
 * buffer, passed with its offset rather than as a sub-buffer). */
__kernel void CLF_KERNEL_NAME(CLF_PARAMS, __global uchar *restrict partials, const ulong partial_at,
                              const IDX_T nrows)
{
    __global clf_acc0 *restrict partial = (__global clf_acc0 *)(partials + partial_at);
    clf_row row; /* unused by a single stage; the step functions take it */
#if SPLIT_GPU
    __local clf_acc0 scratch[WG];
    const int lid = (int)get_local_id(0);
    const IDX_T item = (IDX_T)get_group_id(0);
#else
    const IDX_T item = (IDX_T)get_global_id(0);
#endif
    const IDX_T x = item / SPLIT, chunk = item % SPLIT;
    const IDX_T start = chunk * CHUNK;
    const IDX_T end = start + CHUNK < RLEN ? start + CHUNK : RLEN;
    clf_acc0 a;
    clf_init0(&a);
#if SPLIT_GPU
    if (x < nrows)
        for (IDX_T r = start + (IDX_T)lid; r < end; r += WG) {
            clf_vals v;
            clf_load(x, r, &v, CLF_ARGS);
            clf_step0(&a, &row, &v, x, r, CLF_ARGS);
        }
    scratch[lid] = a;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (lid < s) {
            clf_acc0 mine = scratch[lid], other = scratch[lid + s];
            clf_combine0(&mine, &other);
            scratch[lid] = mine;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0 && x < nrows)
        partial[item] = scratch[0];
#else
    if (x >= nrows)
        return;
    for (IDX_T r = start; r < end; ++r) {
        clf_vals v;
        clf_load(x, r, &v, CLF_ARGS);
        clf_step0(&a, &row, &v, x, r, CLF_ARGS);
    }
    partial[item] = a;
#endif
}

/* Each row's partials combined, then the row's stores: on a GPU a
 * work-group per row (lanes stride over the partials, then a tree in local
 * memory), on a CPU a work-item per row in chunk order. */
__kernel void CLF_FINAL_NAME(CLF_PARAMS, __global const uchar *restrict partials, const ulong partial_at,
                             const IDX_T nrows)
{
    __global const clf_acc0 *restrict partial = (__global const clf_acc0 *)(partials + partial_at);
#if SPLIT_GPU
    __local clf_acc0 scratch[WG];
    const int lid = (int)get_local_id(0);
    const IDX_T x = (IDX_T)get_group_id(0);
    clf_acc0 a;
    clf_init0(&a);
    for (IDX_T j = (IDX_T)lid; j < SPLIT; j += WG) {
        clf_acc0 b = partial[x * SPLIT + j];
        clf_combine0(&a, &b);
    }
    scratch[lid] = a;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (lid < s) {
            clf_acc0 mine = scratch[lid], other = scratch[lid + s];
            clf_combine0(&mine, &other);
            scratch[lid] = mine;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid != 0 || x >= nrows)
        return;
    a = scratch[0];
#else
    const IDX_T x = (IDX_T)get_global_id(0);
    if (x >= nrows)
        return;
    clf_acc0 a = partial[x * SPLIT];
    for (IDX_T j = 1; j < SPLIT; ++j) {
        clf_acc0 b = partial[x * SPLIT + j];
        clf_combine0(&a, &b);
    }
#endif
    clf_row row;
    clf_finish0(&row, &a);
    clf_rowout(&row, x, CLF_ARGS);
}
