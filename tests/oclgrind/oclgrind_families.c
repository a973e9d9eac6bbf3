/* Runs every kernel template family on small shapes, checked against the
 * reference, so that tests/oclgrind/run_oclgrind.sh can run it under
 * oclgrind (--check-api --data-races --uninitialized). Each case also
 * checks that its kernels really come from the family it names (the
 * template's own header comment is part of the generated source), so a
 * planner change cannot quietly leave a family unchecked.
 *
 * Adding a family is one line in `cases` and a graph builder. Exit
 * status: 0 when every case ran and agreed, 1 otherwise, 77 without a
 * device.
 *   oclgrind_families [DEVICE-NAME-PART [CASE-NAME-PREFIX]]
 *   oclgrind_families --list          (the case names, one a line) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clfuse/clfuse.h"

typedef struct inputs {
    clf_host_binding b[6];
    int n;
} inputs;

static uint64_t rng = 0x2545F4914F6CDD1Dull;

static double uniform(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* An input of dtype dt (f32 or bf16): uniform values in [-2, 2), cut to
 * bf16 (their upper 16 bits) for bf16. */
static clf_tensor input_of(clf_graph *g, inputs *in, const char *name, clf_dtype dt, int rank, const int64_t *shape)
{
    size_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= (size_t)shape[i];
    void *p = malloc(n * clf_dtype_size(dt) + 2);
    if (!p)
        return CLF_TENSOR_INVALID;
    for (size_t i = 0; i < n; i++) {
        float f = (float)(4 * uniform() - 2);
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        if (dt == CLF_BF16)
            ((uint16_t *)p)[i] = (uint16_t)(u >> 16);
        else
            ((float *)p)[i] = f;
    }
    in->b[in->n++] = (clf_host_binding){name, p};
    return clf_input(g, name, dt, rank, shape);
}

static clf_tensor input(clf_graph *g, inputs *in, const char *name, int rank, const int64_t *shape)
{
    return input_of(g, in, name, CLF_F32, rank, shape);
}

/* Pointwise: broadcasting, a transpose, a where, a cast, vector loads with
 * a tail (35 elements). */
static void build_pointwise(clf_graph *g, inputs *in)
{
    int64_t s[2] = {5, 7}, bs[1] = {7};
    clf_tensor x = input(g, in, "x", 2, s), b = input(g, in, "b", 1, bs);
    clf_tensor y = clf_relu(g, clf_add(g, clf_mul(g, x, b), clf_scalar(g, CLF_F32, 1)));
    clf_graph_output(g, "y", y);
    clf_tensor t = clf_transpose(g, clf_reshape(g, x, 2, (int64_t[]){7, 5}), 0, NULL);
    clf_graph_output(g, "w", clf_where(g, clf_gt(g, x, t), x, t));
    clf_graph_output(g, "i", clf_cast(g, clf_mul(g, x, clf_scalar(g, CLF_F32, 10)), CLF_I32));
    /* exp, through sigmoid. */
    clf_graph_output(g, "e", clf_sigmoid(g, clf_mul(g, x, clf_scalar(g, CLF_F32, 30))));
}

/* Rows: softmax, layer norm and argmax over 33-wide rows (several stages
 * and an epilogue), reading a graph output that a pointwise kernel wrote
 * (output buffers must be readable by later kernels). */
static void build_rows(clf_graph *g, inputs *in)
{
    int64_t s[2] = {6, 33};
    clf_tensor x = clf_mul(g, input(g, in, "x", 2, s), clf_scalar(g, CLF_F32, 0.5));
    clf_graph_output(g, "h", x);
    clf_graph_output(g, "p", clf_softmax(g, x, -1));
    clf_graph_output(g, "n", clf_layer_norm(g, x, 1, 1e-5, CLF_TENSOR_INVALID, CLF_TENSOR_INVALID));
    clf_graph_output(g, "a", clf_argmax(g, x, 1, false, false));
}

/* Rows too long to cache in a GPU work-group's registers, too few to
 * split: the streaming GPU form. */
static void build_long_rows(clf_graph *g, inputs *in)
{
    int64_t s[2] = {2, 20000};
    int last = 1;
    clf_tensor x = input(g, in, "x", 2, s);
    clf_graph_output(g, "s", clf_reduce_sum(g, x, 1, &last, false));
}

/* One row long enough to split. */
static void build_one_long_row(clf_graph *g, inputs *in)
{
    int64_t s[1] = {70000};
    clf_tensor x = input(g, in, "x", 1, s);
    clf_graph_output(g, "s", clf_reduce_sum(g, x, 0, NULL, false));
    clf_graph_output(g, "m", clf_reduce_max(g, x, 0, NULL, false));
}

/* GEMM, partial tiles and blocks (37 x 45 by 29, none a multiple of a
 * tile, block or float4 run): relu(x @ w + b), the bias and relu in the
 * epilogue. */
static void build_gemm_partial(clf_graph *g, inputs *in)
{
    int64_t sx[2] = {37, 29}, sw[2] = {29, 45}, sb[1] = {45};
    clf_tensor y = clf_add(g, clf_matmul(g, input(g, in, "x", 2, sx), input(g, in, "w", 2, sw)),
                           input(g, in, "b", 1, sb));
    clf_graph_output(g, "y", clf_relu(g, y));
}

/* GEMM with K and N multiples of 4 (36 x 44 by 48): plain row-major
 * operands take the GPU form's float4 tile loads (VEC_A, VEC_B), with
 * partial tiles; a residual in the epilogue. */
static void build_gemm_vec(clf_graph *g, inputs *in)
{
    int64_t sx[2] = {36, 48}, sw[2] = {48, 44}, sr[2] = {36, 44};
    clf_tensor y = clf_matmul(g, input(g, in, "x", 2, sx), input(g, in, "w", 2, sw));
    clf_graph_output(g, "y", clf_add(g, y, input(g, in, "r", 2, sr)));
}

/* Gemm with both operands transposed and a prologue on a (tanh, loaded
 * through clf_load_a), alpha, beta and C [M, 1]; and a product with K = 0
 * (nothing to load: the kernel must not read its empty operands). */
static void build_gemm_transposed(clf_graph *g, inputs *in)
{
    int64_t sa[2] = {29, 37}, sb[2] = {45, 29}, sc[2] = {37, 1}, sz[2] = {5, 0}, sz2[2] = {0, 6};
    clf_tensor a = clf_tanh(g, input(g, in, "a", 2, sa));
    clf_graph_output(g, "y", clf_gemm(g, a, input(g, in, "b", 2, sb), input(g, in, "c", 2, sc), 0.5, -1.0, true, true));
    clf_graph_output(g, "z", clf_matmul(g, input(g, in, "p", 2, sz), input(g, in, "q", 2, sz2)));
}

/* GEMM in the tensor-core form, its mma, ldmatrix and cp.async emulated
 * in OpenCL C (CLF_MMA_EMULATE): bf16 x [37, 40] by w [40, 48] (B staged
 * [k][n], read across) and by a transposed wt [48, 40] (B staged [n][k],
 * along), both raw 16-byte stages, a partial block of rows; the products
 * cast to f32 outputs. */
static void build_gemm_tc(clf_graph *g, inputs *in)
{
    int64_t sx[2] = {37, 40}, sw[2] = {40, 48}, st[2] = {48, 40};
    clf_tensor x = input_of(g, in, "x", CLF_BF16, 2, sx);
    clf_graph_output(g, "y", clf_cast(g, clf_matmul(g, x, input_of(g, in, "w", CLF_BF16, 2, sw)), CLF_F32));
    clf_tensor wt = clf_transpose(g, input_of(g, in, "wt", CLF_BF16, 2, st), 0, NULL);
    clf_graph_output(g, "z", clf_cast(g, clf_matmul(g, x, wt), CLF_F32));
}

/* The same form on f32 operands as TF32 (CLFUSE_TF32=1): x [37, 40] by w
 * [40, 48] (B's TF32 fragments read across by 32-bit loads) and a
 * transposed at [40, 37] by w (A staged [k][m], read across too). */
static void build_gemm_tf32(clf_graph *g, inputs *in)
{
    int64_t sx[2] = {37, 40}, sw[2] = {40, 48}, sa[2] = {40, 37};
    clf_tensor w = input(g, in, "w", 2, sw);
    clf_graph_output(g, "y", clf_matmul(g, input(g, in, "x", 2, sx), w));
    clf_graph_output(g, "z", clf_matmul(g, clf_transpose(g, input(g, in, "at", 2, sa), 0, NULL), w));
}

/* Attention, softmax(q kT / sqrt(d)) v as one kernel, on q [batch, 2, sq,
 * 20] of dt against sk keys (k [.., sk, 20], v [.., sk, 12]), the output
 * as f32 (a bf16 one cast in the store): in the GPU form at 37 x 70 two
 * tiles of keys, the second partial, D and Dv not multiples of 4; in the
 * CPU form blocks of rows with a short last one, a last group of keys
 * taken one by one, vectors with zeros past D and Dv. */
static void attention(clf_graph *g, inputs *in, clf_dtype dt, int64_t batch, int64_t sq, int64_t sk, bool causal)
{
    int64_t sq4[4] = {batch, 2, sq, 20}, sk4[4] = {batch, 2, sk, 20}, sv4[4] = {batch, 2, sk, 12};
    clf_tensor q = input_of(g, in, "q", dt, 4, sq4), k = input_of(g, in, "k", dt, 4, sk4);
    clf_tensor o = clf_attention(g, q, k, input_of(g, in, "v", dt, 4, sv4), CLF_TENSOR_INVALID, 0, causal);
    clf_graph_output(g, "o", dt == CLF_F32 ? o : clf_cast(g, o, CLF_F32));
}
static void build_attention(clf_graph *g, inputs *in) { attention(g, in, CLF_F32, 2, 37, 70, false); }
/* Causal, square: rows stop at their diagonal, tiles past a work-group's
 * last row are skipped. */
static void build_attention_causal(clf_graph *g, inputs *in) { attention(g, in, CLF_F32, 2, 37, 37, true); }
/* Decode: one query row over 150 keys, causal (bottom-right), in the GPU
 * form's decode kernel: on Oclgrind's one compute unit (four work-groups
 * wanted) the 2 rows' keys are cut into two chunks (128 and a partial 22)
 * over work-groups, the last of each row's to finish combining them
 * (marker2 asks for SPLIT 2; the chunk states and counters pass through
 * atomics, which Oclgrind checks for races). */
static void build_attention_decode(clf_graph *g, inputs *in) { attention(g, in, CLF_F32, 1, 1, 150, true); }
/* The tensor-core form, its mma, ldmatrix and shuffles emulated in OpenCL
 * C (CLF_MMA_EMULATE), bf16, one batch of 37 rows over 70 keys: D and Dv
 * padded to whole 16-value steps, three tiles of 32 keys, the last
 * partial, and most of the work-group's warps past the 37 rows (they walk
 * the tiles for the exchanges and store nothing). Causal: bottom-right,
 * tiles past a warp's last key skipped by that warp. */
static void build_attention_tc(clf_graph *g, inputs *in) { attention(g, in, CLF_BF16, 1, 37, 70, false); }
static void build_attention_tc_causal(clf_graph *g, inputs *in) { attention(g, in, CLF_BF16, 1, 37, 70, true); }

/* GEMM over a broadcast batch: a [2, 1, 9, 20] by b [3, 20, 13], a
 * residual [9, 13] read through the batch in the epilogue. */
static void build_gemm_batched(clf_graph *g, inputs *in)
{
    int64_t sa[4] = {2, 1, 9, 20}, sb[3] = {3, 20, 13}, sr[2] = {9, 13};
    clf_tensor y = clf_matmul(g, input(g, in, "a", 4, sa), input(g, in, "b", 3, sb));
    clf_graph_output(g, "y", clf_add(g, y, input(g, in, "r", 2, sr)));
}

/* GEMM whose A is computed in its loads (a sigmoid) over blocks of
 * several sub-blocks of columns (the CPU form's CLF_SPAN: A's block in
 * local memory for all of them), the last sub-block partial: sigmoid(x
 * [37, 70]) @ w [70, 500]. */
static void build_gemm_wide_blocks(clf_graph *g, inputs *in)
{
    int64_t sx[2] = {37, 70}, sw[2] = {70, 500};
    clf_tensor x = clf_sigmoid(g, input(g, in, "x", 2, sx));
    clf_graph_output(g, "y", clf_matmul(g, x, input(g, in, "w", 2, sw)));
}

/* GEMM in the GPU's few-rows form (gemm_rows.cl): relu(x @ w + b) for 3
 * products of one row sharing w [517, 45] (one work-group takes all 3
 * rows; K and N not multiples of 4: a tail of columns and of lanes), and
 * a [2, 513] by a transposed bt [45, 513] (4 k a load, a tail of 1). */
static void build_gemm_rows(clf_graph *g, inputs *in)
{
    int64_t sx[3] = {3, 1, 517}, sw[2] = {517, 45}, sb[1] = {45}, sa[2] = {2, 513}, st[2] = {45, 513};
    clf_tensor y = clf_add(g, clf_matmul(g, input(g, in, "x", 3, sx), input(g, in, "w", 2, sw)),
                           input(g, in, "b", 1, sb));
    clf_graph_output(g, "y", clf_relu(g, y));
    clf_tensor bt = clf_transpose(g, input(g, in, "bt", 2, st), 0, NULL);
    clf_graph_output(g, "z", clf_matmul(g, input(g, in, "a", 2, sa), bt));
}

/* A norm's statistics computed in the product's loads (planner.c's row
 * statistics): x [9, 40] normalised (an RMSNorm: GPU tiles take one
 * statistic) then times w [40, 13]. */
static void build_gemm_row_stats(clf_graph *g, inputs *in)
{
    int64_t sx[2] = {9, 40}, sw[2] = {40, 13};
    clf_tensor x = clf_rms_norm(g, input(g, in, "x", 2, sx), -1, 1e-5, CLF_TENSOR_INVALID);
    clf_graph_output(g, "y", clf_matmul(g, x, input(g, in, "w", 2, sw)));
}

/* The GPU's few-rows form and the CPU form: a layer norm (two statistics,
 * the variance after the mean) of 3 rows of 600 (600 / 256 lanes: a
 * tail), times w [600, 20] shared by the rows. */
static void build_gemm_rows_row_stats(clf_graph *g, inputs *in)
{
    int64_t sx[3] = {3, 1, 600}, sw[2] = {600, 20};
    clf_tensor x = clf_layer_norm(g, input(g, in, "x", 3, sx), -1, 1e-5, CLF_TENSOR_INVALID, CLF_TENSOR_INVALID);
    clf_graph_output(g, "y", clf_matmul(g, x, input(g, in, "w", 2, sw)));
}

/* The CPU form's one-row products with K cut into slices (gemm_cpu.cl,
 * ONE_ROW_SPLIT > 1, and its second launch adding the slices): relu(x)
 * [2, 1, 1100] @ w [1100, 37] + b, 37 columns (two vectors and a tail). */
static void build_gemm_one_row_slices(clf_graph *g, inputs *in)
{
    int64_t sx[3] = {2, 1, 1100}, sw[2] = {1100, 37}, sb[1] = {37};
    clf_tensor y = clf_matmul(g, clf_relu(g, input(g, in, "x", 3, sx)), input(g, in, "w", 2, sw));
    clf_graph_output(g, "y", clf_add(g, y, input(g, in, "b", 1, sb)));
}

typedef struct family_case {
    const char *name;
    void (*build)(clf_graph *g, inputs *in);
    clf_kernel_style style;
    const char *marker;  /* text the family's kernels contain */
    const char *marker2; /* and this one, when not NULL */
    /* The tensor-core forms asked for and emulated (CLFUSE_TENSOR_CORES=1,
     * CLFUSE_BUILD_OPTIONS=-DCLF_MMA_EMULATE=1, CLFUSE_TF32=1); results
     * within a bf16 rounding and 2^-6 (TF32 rounds each operand to 10
     * bits: f16's GEMM tolerance of the half suite). */
    bool mma_emulated;
} family_case;

static const family_case cases[] = {
    {"pointwise", build_pointwise, CLF_KERNEL_STYLE_AUTO, "Pointwise region:", NULL, false},
    {"reduction_cpu", build_rows, CLF_KERNEL_STYLE_CPU, "Reduction region, CPU variant", NULL, false},
    {"reduction_gpu (persistent)", build_rows, CLF_KERNEL_STYLE_GPU, "Reduction region, GPU variant", "clf_per_", false},
    {"reduction_gpu (streaming)", build_long_rows, CLF_KERNEL_STYLE_GPU, "Reduction region, GPU variant",
     "#define CACHE 0", false},
    {"reduction_split (CPU)", build_one_long_row, CLF_KERNEL_STYLE_CPU, "Split reduction", "#define SPLIT_GPU 0", false},
    {"reduction_split (GPU)", build_one_long_row, CLF_KERNEL_STYLE_GPU, "Split reduction", "#define SPLIT_GPU 1", false},
    {"gemm_gpu (partial tiles)", build_gemm_partial, CLF_KERNEL_STYLE_GPU, "GEMM region, GPU form", "#define VEC_B 0", false},
    {"gemm_gpu (float4 loads)", build_gemm_vec, CLF_KERNEL_STYLE_GPU, "GEMM region, GPU form", "#define VEC_B 1", false},
    {"gemm_gpu (transposed, prologue, K = 0)", build_gemm_transposed, CLF_KERNEL_STYLE_GPU, "GEMM region, GPU form",
     "#define A_K_FAST 0", false},
    {"gemm_rows (shared B, transposed B, tails)", build_gemm_rows, CLF_KERNEL_STYLE_GPU,
     "GEMM region, GPU form for products of a few rows", "#define B_N_FAST 0", false},
    {"gemm_gpu (row statistics)", build_gemm_row_stats, CLF_KERNEL_STYLE_GPU, "GEMM region, GPU form",
     "#define CLF_ROW_STATS 1", false},
    {"gemm_rows (row statistics)", build_gemm_rows_row_stats, CLF_KERNEL_STYLE_GPU,
     "GEMM region, GPU form for products of a few rows", "#define CLF_ROW_STATS 2", false},
    {"gemm_cpu (row statistics)", build_gemm_rows_row_stats, CLF_KERNEL_STYLE_CPU, "GEMM region, CPU form",
     "#define CLF_ROW_STATS 2", false},
    {"gemm_cpu (wide blocks, prologue)", build_gemm_wide_blocks, CLF_KERNEL_STYLE_CPU, "GEMM region, CPU form",
     "#define CLF_SPAN ", false},
    {"gemm_cpu (partial blocks)", build_gemm_partial, CLF_KERNEL_STYLE_CPU, "GEMM region, CPU form", NULL, false},
    {"gemm_cpu (one row, slices of K)", build_gemm_one_row_slices, CLF_KERNEL_STYLE_CPU, "GEMM region, CPU form",
     "#define CLF_FINAL_NAME ", false},
    {"gemm_cpu (transposed, prologue, K = 0)", build_gemm_transposed, CLF_KERNEL_STYLE_CPU, "GEMM region, CPU form",
     NULL, false},
    {"gemm_cpu (broadcast batch, residual)", build_gemm_batched, CLF_KERNEL_STYLE_CPU, "GEMM region, CPU form", NULL,
     false},
    {"gemm_gpu (broadcast batch, residual)", build_gemm_batched, CLF_KERNEL_STYLE_GPU, "GEMM region, GPU form", NULL,
     false},
    {"attention_gpu (tiles)", build_attention, CLF_KERNEL_STYLE_GPU, "Attention region, GPU form", "#define CAUSAL 0", false},
    {"attention_gpu (causal)", build_attention_causal, CLF_KERNEL_STYLE_GPU, "Attention region, GPU form",
     "#define CAUSAL 1", false},
    {"attention_decode (chunks, combine)", build_attention_decode, CLF_KERNEL_STYLE_GPU,
     "Attention region, decode form", "#define SPLIT 2\n", false},
    {"attention_cpu (row blocks)", build_attention, CLF_KERNEL_STYLE_CPU, "Attention region, CPU form",
     "#define CAUSAL 0", false},
    {"attention_cpu (causal)", build_attention_causal, CLF_KERNEL_STYLE_CPU, "Attention region, CPU form",
     "#define CAUSAL 1", false},
    {"gemm_mma (emulated: bf16, B both ways)", build_gemm_tc, CLF_KERNEL_STYLE_GPU, "GEMM region, tensor-core form",
     "#define CLF_MMA 1", true},
    {"gemm_mma (emulated: TF32, A and B across)", build_gemm_tf32, CLF_KERNEL_STYLE_GPU,
     "GEMM region, tensor-core form", "#define MMA_TF32 1", true},
    {"attention_mma (emulated: bf16)", build_attention_tc, CLF_KERNEL_STYLE_GPU, "Attention region, tensor-core form",
     "#define CAUSAL 0", true},
    {"attention_mma (emulated: bf16, causal)", build_attention_tc_causal, CLF_KERNEL_STYLE_GPU,
     "Attention region, tensor-core form", "#define CAUSAL 1", true},
};

static bool close_enough(clf_dtype dt, const void *got, const void *want, size_t n, double rtol, double atol,
                         char *why, size_t cap)
{
    for (size_t i = 0; i < n; i++) {
        if (dt == CLF_F32) {
            double g = ((const float *)got)[i], w = ((const float *)want)[i];
            if (!(fabs(g - w) <= rtol * fabs(w) + atol)) {
                snprintf(why, cap, "element %zu: got %.9g, want %.9g", i, g, w);
                return false;
            }
        } else if (((const int32_t *)got)[i] != ((const int32_t *)want)[i]) {
            snprintf(why, cap, "element %zu: got %d, want %d", i, ((const int32_t *)got)[i],
                     ((const int32_t *)want)[i]);
            return false;
        }
    }
    return true;
}

static bool run_case(clf_context *ctx, const family_case *c)
{
    bool ok = false;
    inputs in = {.n = 0};
    clf_host_binding got[4], want[4];
    size_t nout = 0, numel[4];
    clf_dtype dt[4];
    clf_executable *exe = NULL;
    clf_graph *g = clf_graph_create();
    const char *msg = "";
    if (!g) {
        printf("%s: out of memory\n", c->name);
        return false;
    }
    /* 32 x 32 blocks: the emulation's fragment exchange takes local memory
     * of its own, which codegen does not count (its stages fill what
     * oclgrind's 32 KiB allow for 64 x 64 blocks). */
    if (c->mma_emulated) {
        setenv("CLFUSE_TENSOR_CORES", "1", 1);
        setenv("CLFUSE_BUILD_OPTIONS", "-DCLF_MMA_EMULATE=1", 1);
        setenv("CLFUSE_GEMM_TILE", "32,32,32,16,16,mma", 1);
        setenv("CLFUSE_TF32", "1", 1);
    }
    c->build(g, &in);
    if (clf_graph_status(g, &msg) != CLF_OK) {
        printf("%s: graph: %s\n", c->name, msg);
        goto done;
    }
    clf_status st = clf_compile(ctx, g, clf_compile_params(.kernel_style = c->style), &exe);
    if (st != CLF_OK) {
        printf("%s: clf_compile: %s: %s\n", c->name, clf_status_name(st), clf_context_last_error(ctx));
        goto done;
    }
    bool found = false;
    for (size_t k = 0; k < clf_executable_kernel_count(exe); k++) {
        const char *src = clf_executable_kernel_source(exe, k);
        found |= strstr(src, c->marker) && (!c->marker2 || strstr(src, c->marker2));
    }
    if (!found) {
        printf("%s: no kernel comes from this family (none has \"%s\"%s%s)\n", c->name, c->marker,
               c->marker2 ? " and " : "", c->marker2 ? c->marker2 : "");
        goto done;
    }
    nout = clf_executable_output_count(exe);
    for (size_t i = 0; i < nout; i++) {
        const char *name;
        int rank;
        int64_t shape[CLF_MAX_RANK];
        clf_executable_output(exe, i, &name, &dt[i], &rank, shape);
        numel[i] = 1;
        for (int d = 0; d < rank; d++)
            numel[i] *= (size_t)shape[d];
        got[i] = (clf_host_binding){name, calloc(numel[i] + 1, 4)};
        want[i] = (clf_host_binding){name, calloc(numel[i] + 1, 4)};
        if (!got[i].data || !want[i].data) {
            nout = i + 1;
            printf("%s: out of memory\n", c->name);
            goto done;
        }
    }
    char rmsg[256];
    st = clf_reference_run(g, (size_t)in.n, in.b, nout, want, rmsg, sizeof rmsg);
    if (st != CLF_OK) {
        printf("%s: reference: %s\n", c->name, rmsg);
        goto done;
    }
    st = clf_run_host(exe, (size_t)in.n, in.b, nout, got);
    if (st != CLF_OK) {
        printf("%s: clf_run_host: %s: %s\n", c->name, clf_status_name(st), clf_context_last_error(ctx));
        goto done;
    }
    ok = true;
    for (size_t i = 0; i < nout && ok; i++) {
        char why[128];
        if (!close_enough(dt[i], got[i].data, want[i].data, numel[i], c->mma_emulated ? 0x1p-7 : 1e-4,
                          c->mma_emulated ? 0x1p-6 : 1e-5, why, sizeof why)) {
            printf("%s: output %s differs from the reference: %s\n", c->name, got[i].name, why);
            ok = false;
        }
    }
    if (ok)
        printf("%s: %zu kernel(s) agree with the reference\n", c->name, clf_executable_kernel_count(exe));
done:
    if (c->mma_emulated) {
        unsetenv("CLFUSE_TENSOR_CORES");
        unsetenv("CLFUSE_BUILD_OPTIONS");
        unsetenv("CLFUSE_GEMM_TILE");
        unsetenv("CLFUSE_TF32");
    }
    for (size_t i = 0; i < nout; i++) {
        free(got[i].data);
        free(want[i].data);
    }
    for (int i = 0; i < in.n; i++)
        free(in.b[i].data);
    clf_executable_destroy(&exe);
    clf_graph_destroy(&g);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            printf("%s\n", cases[i].name);
        return 0;
    }
    const char *expect = argc > 1 ? argv[1] : NULL; /* part of the device's name */
    const char *only = argc > 2 ? argv[2] : NULL;   /* run the cases whose name starts so */
    char msg[256] = "";
    clf_context *ctx = NULL;
    if (clf_context_create(clf_context_params(.disable_disk_cache = true, .message = msg, .message_cap = sizeof msg),
                           &ctx) != CLF_OK) {
        printf("no OpenCL device: %s; skipped\n", msg);
        return 77;
    }
    clf_device_desc d;
    clf_context_device(ctx, &d);
    printf("device: %s (%s)\n", d.device_name, d.platform_name);
    if (expect && !strstr(d.device_name, expect) && !strstr(d.platform_name, expect)) {
        printf("expected a device named like \"%s\"\n", expect);
        clf_context_destroy(&ctx);
        return 1;
    }
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (!only || strncmp(cases[i].name, only, strlen(only)) == 0)
            failed += !run_case(ctx, &cases[i]);
    clf_context_destroy(&ctx);
    return failed ? 1 : 0;
}
