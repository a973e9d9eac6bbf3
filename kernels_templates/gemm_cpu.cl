/* GEMM region, CPU form: C = A @ B for BATCH products of M x K by K x N.
 * Each work-item computes a WM x WN block of one product alone, with no
 * local memory and no barriers: for each k it loads a vector of WN
 * elements of B's row k and WM scalars of A's column k and accumulates WM
 * vector FMAs, so that the CPU's SIMD units do the work (PoCL does not
 * vectorise across work-items through a loop like this one). Operands come
 * in through clf_load_a / clf_load_b (the prologue applied) and
 * clf_load_bv (WN consecutive elements of a row of B); the epilogue and
 * stores through clf_store.
 *
 * Codegen prepends CLF_KERNEL_NAME, CLF_PARAMS, CLF_ARGS, M, N, K, BATCH,
 * M_WHOLE_TILES (1 where M is a multiple of WM; the preprocessor never
 * reads M, which may be a kernel argument where sizes are symbolic),
 * the load and store functions and the tuning below; without them this file
 * is still valid OpenCL C: a plain 16 x 16 product.
 *
 * Tuning: WM rows (up to 16) and WN columns (4, 8 or 16: the vector width)
 * per work-item; TM == WM, TN == WN, TK == 1. The launch is BATCH *
 * ceil(M / WM) * ceil(N / WN) work-items. */
#ifndef IDX_T
#define IDX_T uint
#endif
#ifndef WM
#define WM 8
#endif
#ifndef WN
#define WN 8
#endif

#ifndef CLF_KERNEL_NAME
#define CLF_KERNEL_NAME clf_gemm_cpu_example
#define M 16
#define M_WHOLE_TILES 1
#define N 16
#define K 16
#define BATCH 1
#define CLF_PARAMS __global const float *restrict a, __global const float *restrict b, __global float *restrict c
#define CLF_ARGS a, b, c
static inline float clf_load_a(IDX_T bt, IDX_T m, IDX_T k, CLF_PARAMS) { return a[m * K + k]; }
static inline float clf_load_b(IDX_T bt, IDX_T k, IDX_T n, CLF_PARAMS) { return b[k * N + n]; }
#define CLF_VEC_(w) float##w
#define CLF_VEC(w) CLF_VEC_(w)
#define CLF_VLOAD_(w) vload##w
#define CLF_VLOAD(w) CLF_VLOAD_(w)
static inline CLF_VEC(WN) clf_load_bv(IDX_T bt, IDX_T k, IDX_T n, CLF_PARAMS)
{
    return CLF_VLOAD(WN)(0, b + k * N + n);
}
static inline void clf_store(IDX_T bt, IDX_T m, IDX_T n, float acc, CLF_PARAMS) { c[m * N + n] = acc; }
#endif

#define VEC_PASTE_(w) float##w
#define VEC_PASTE(w) VEC_PASTE_(w)
#define VEC_T VEC_PASTE(WN)
#define VSTORE_PASTE_(w) vstore##w
#define VSTORE_PASTE(w) VSTORE_PASTE_(w)
#define VSTORE VSTORE_PASTE(WN)
#define TILES_M ((M + WM - 1) / WM)
#define TILES_N ((N + WN - 1) / WN)

__kernel void CLF_KERNEL_NAME(CLF_PARAMS, const IDX_T numel)
{
    const IDX_T g = (IDX_T)get_global_id(0);
    const IDX_T bt = g / (TILES_M * TILES_N);
    const IDX_T tile = g % (TILES_M * TILES_N);
    const IDX_T m0 = tile / TILES_N * WM, n0 = tile % TILES_N * WN;
    if (bt >= BATCH)
        return;

#if M_WHOLE_TILES && N % WN == 0
    if (true) {
#elif M_WHOLE_TILES
    if (n0 + WN <= N) {
#elif N % WN == 0
    if (m0 + WM <= M) {
#else
    if (m0 + WM <= M && n0 + WN <= N) {
#endif
        VEC_T acc[WM];
#pragma unroll
        for (int i = 0; i < WM; ++i)
            acc[i] = (VEC_T)(0.0f);
        for (IDX_T k = 0; k < K; ++k) {
            const VEC_T bv = clf_load_bv(bt, k, n0, CLF_ARGS);
#pragma unroll
            for (int i = 0; i < WM; ++i)
                acc[i] += (VEC_T)(clf_load_a(bt, m0 + (IDX_T)i, k, CLF_ARGS)) * bv;
        }
        for (int i = 0; i < WM; ++i) {
            float v[WN];
            VSTORE(acc[i], 0, v);
            for (int j = 0; j < WN; ++j)
                clf_store(bt, m0 + (IDX_T)i, n0 + (IDX_T)j, v[j], CLF_ARGS);
        }
        return;
    }

    /* An edge block: scalar, bounds checked. */
    for (int i = 0; i < WM; ++i) {
        const IDX_T m = m0 + (IDX_T)i;
        if (m >= M)
            break;
        for (int j = 0; j < WN; ++j) {
            const IDX_T n = n0 + (IDX_T)j;
            if (n >= N)
                break;
            float acc = 0.0f;
            for (IDX_T k = 0; k < K; ++k)
                acc += clf_load_a(bt, m, k, CLF_ARGS) * clf_load_b(bt, k, n, CLF_ARGS);
            clf_store(bt, m, n, acc, CLF_ARGS);
        }
    }
}
