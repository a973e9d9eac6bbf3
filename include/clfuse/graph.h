/* Graph builder.
 *
 * A clf_graph records tensor operations; nothing is computed when a builder
 * function is called. Values are named by clf_tensor handles, small value
 * types that stay valid as long as their graph.
 *
 * Validation is eager and errors are sticky: a bad call (shapes that do not
 * broadcast, an axis out of range, a dtype the op does not take, a NULL, a
 * handle from another graph) returns CLF_TENSOR_INVALID, records a message
 * naming the call and the argument, and puts the graph into an error state.
 * Later builder calls on that graph do nothing and return CLF_TENSOR_INVALID;
 * clf_graph_status() returns the first error and clf_compile() refuses the
 * graph with it. Nothing aborts the caller.
 *
 * Semantics follow the ONNX operators of the same names (numpy broadcasting,
 * Reshape's 0 and -1, Slice's clamping and negative steps, Squeeze, Unsqueeze,
 * Expand, Where, Clip, Cast). NaN propagates as in numpy: maximum(NaN, 0) and
 * relu(NaN) are NaN.
 *
 * Ownership: the graph owns every node; clf_graph_destroy() frees them all.
 * Thread-safety: a graph may be used by one thread at a time; different
 * graphs are independent.
 */
#ifndef CLFUSE_GRAPH_H
#define CLFUSE_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CLF_MAX_RANK 8

/* Element types. f32 is stored as float, i32 as int32_t, i64 as int64_t
 * (token ids, indices, shapes; arithmetic wraps as i32's does), bool as one
 * byte: any non-zero byte is true, and bool results hold 0 or 1.
 *
 * f16 (IEEE binary16) and bf16 (bfloat16, the high half of an f32) are
 * storage types, held in host memory as uint16_t bit patterns (see the
 * conversions below). Kernels compute them in f32 and round every value of
 * an f16 or bf16 tensor to its type (nearest even), as the reference
 * interpreter does; reductions and matmul accumulate in f32 and round once;
 * softmax, log_softmax, layer_norm, rms_norm, mean and var of them compute
 * in f32 throughout and round their result. No device needs cl_khr_fp16. */
typedef enum clf_dtype {
    CLF_F32 = 0,
    CLF_I32 = 1,
    CLF_BOOL = 2,
    CLF_I64 = 3,
    CLF_F16 = 4,
    CLF_BF16 = 5,
    CLF_DTYPE_COUNT
} clf_dtype;

/* "f32", "i32", "bool", "i64", "f16", "bf16"; NULL for an unknown value. */
CLF_API const char *clf_dtype_name(clf_dtype dt);
/* Bytes per element; 0 for an unknown value. */
CLF_API size_t clf_dtype_size(clf_dtype dt);

/* Host conversions between f32 and the 16-bit floats' bit patterns, as the
 * kernels convert: round to nearest even; f16 overflows to +-inf from
 * 65520 up and keeps subnormals; NaN stays a (quiet) NaN of its sign. */
CLF_API uint16_t clf_f16_from_f32(float x);
CLF_API float clf_f32_from_f16(uint16_t bits);
CLF_API uint16_t clf_bf16_from_f32(float x);
CLF_API float clf_f32_from_bf16(uint16_t bits);

/* Opaque graph handle. */
typedef struct clf_graph clf_graph;

/* A value in a graph: the graph's serial number and the node's index.
 * The zero value (CLF_TENSOR_INVALID) names nothing. */
typedef struct clf_tensor {
    uint32_t graph;
    uint32_t node;
} clf_tensor;

#ifdef __cplusplus
#define CLF_TENSOR_INVALID (clf_tensor{0, 0})
#else
#define CLF_TENSOR_INVALID ((clf_tensor){0, 0})
#endif

/* True when t names a node (of some graph); says nothing of errors. */
static inline bool clf_tensor_valid(clf_tensor t) { return t.graph != 0; }

/* Returns NULL only when out of memory. */
CLF_API clf_graph *clf_graph_create(void);
/* Frees the graph and sets *g to NULL; accepts NULL and a pointer to NULL. */
CLF_API void clf_graph_destroy(clf_graph **g);

/* CLF_OK, or the first error recorded; *message (if message is not NULL)
 * points to the graph's message, valid until the graph is destroyed; it is
 * "" when there is no error. */
CLF_API clf_status clf_graph_status(const clf_graph *g, const char **message);

/* Number of nodes recorded (inputs, constants and ops). */
CLF_API size_t clf_graph_node_count(const clf_graph *g);

/* Shape and dtype of a value. rank receives the rank, shape (CLF_MAX_RANK
 * entries) the extents; either may be NULL. */
CLF_API clf_status clf_tensor_shape(const clf_graph *g, clf_tensor t, int *rank, int64_t *shape);
CLF_API clf_status clf_tensor_dtype(const clf_graph *g, clf_tensor t, clf_dtype *dtype);

/* ---- Symbolic dimensions --------------------------------------------- */

/* A dimension whose size is given at each run: a sequence length, a batch.
 * Returns a value standing for it (negative, different for each dimension
 * of the graph) to write in the shapes given to clf_input, clf_reshape and
 * clf_expand; the shapes of everything computed from those follow it (an
 * elementwise op of [1, S, 64] and [64] is [1, S, 64]). Each run gives
 * its size through the shapes of the inputs it binds (clf_run_host_shaped,
 * clf_enqueue_shaped, clf_reference_run_shaped), checked to agree and to
 * lie in lo..hi (hi 0: no upper bound); one executable serves every size
 * (runtime.h). name is unique among the graph's dimensions.
 *
 * While the graph is built, shapes hold a stand-in size: lo, or 2 when lo
 * is below 2 (hi permitting), and clf_tensor_shape reports it. What the
 * graph may do with a symbolic dimension: broadcast it against 1 or
 * itself, transpose, reshape, squeeze or unsqueeze around it (a reshape
 * names it in its target shape), reduce over it (mean, variance and the
 * norms count it at each size), contract over it, gather along it, and
 * attention over it (also causal). What it may not (the builder records
 * CLF_ERR_SHAPE naming the dimension): meet a fixed extent other than 1 or
 * another symbolic dimension in one axis, be merged with or split from
 * other axes by a reshape, be sliced (other than whole; a fixed axis may be
 * sliced to [0, S) of a dimension S, clf_cache_write), or be the axis of
 * a concat. Returns 0 after recording an error (a bad name or bounds, more
 * than 64 dimensions). */
CLF_API int64_t clf_dim(clf_graph *g, const char *name, int64_t lo, int64_t hi);
/* The graph's symbolic dimensions, in the order they were declared. */
CLF_API size_t clf_graph_dim_count(const clf_graph *g);
CLF_API clf_status clf_graph_dim(const clf_graph *g, size_t i, const char **name, int64_t *lo, int64_t *hi);
/* Which dimensions of t are symbolic: names[d] (CLF_MAX_RANK entries) is
 * the name of axis d's symbolic dimension, or NULL where the extent is
 * fixed. In a graph loaded from ONNX with symbols, an axis may hold a
 * size derived from them, named by its rule ("batch*seq", "4*seq",
 * "total-seq+1"): not one of clf_graph_dim's. */
CLF_API clf_status clf_tensor_dim_names(const clf_graph *g, clf_tensor t, const char **names);

/* ---- Leaves ---------------------------------------------------------- */

/* A named graph input of the given dtype and shape (rank 0..CLF_MAX_RANK,
 * every extent >= 0). Names are unique among inputs and outputs. */
CLF_API clf_tensor clf_input(clf_graph *g, const char *name, clf_dtype dtype, int rank,
                             const int64_t *shape);
/* A rank-0 constant; value is converted to dtype as clf_cast does (i32,
 * i64: truncated toward zero and saturated, NaN becomes 0; bool: value !=
 * 0). An i64 beyond 2^53 cannot be given exactly as a double: use
 * clf_constant. */
CLF_API clf_tensor clf_scalar(clf_graph *g, clf_dtype dtype, double value);
/* A tensor constant; data (C order, dtype elements) is copied. */
CLF_API clf_tensor clf_constant(clf_graph *g, clf_dtype dtype, int rank, const int64_t *shape,
                                const void *data);

/* Binds a graph input or output, by name, to host memory holding its
 * elements in C order (clf_run_host, clf_reference_run). Zero-size tensors
 * may be bound to NULL. */
typedef struct clf_host_binding {
    const char *name;
    void *data;
} clf_host_binding;

/* Marks t as a graph output under a name unique among inputs and outputs. */
CLF_API clf_status clf_graph_output(clf_graph *g, const char *name, clf_tensor t);

/* ---- Pointwise ------------------------------------------------------- */

/* X(enum suffix, builder name). f32 only, except: neg, abs and sign take f32,
 * i32 and i64; logical_not takes bool; isnan takes f32 and gives bool. */
#define CLF_UNARY_OP_LIST(X)                                                                       \
    X(NEG, neg) X(ABS, abs) X(EXP, exp) X(LOG, log) X(SQRT, sqrt) X(RSQRT, rsqrt)                  \
    X(RECIPROCAL, reciprocal) X(SIN, sin) X(COS, cos) X(TANH, tanh) X(SIGMOID, sigmoid)            \
    X(RELU, relu) X(GELU, gelu) X(SILU, silu) X(ERF, erf) X(FLOOR, floor) X(CEIL, ceil)            \
    X(SIGN, sign) X(NOT, logical_not) X(ISNAN, isnan)

typedef enum clf_unary_op {
#define CLF_UNARY_ENUM_(E, n) CLF_UNARY_##E,
    CLF_UNARY_OP_LIST(CLF_UNARY_ENUM_)
#undef CLF_UNARY_ENUM_
    CLF_UNARY_COUNT
} clf_unary_op;

/* X(enum suffix, builder name). Both operands have the same dtype and
 * broadcast as numpy does. add, sub, mul, div, maximum, minimum take f32
 * and i32 (i32 wraps on overflow; i32 division truncates toward zero and
 * x/0 is 0); pow takes f32; eq, ne, lt, le, gt, ge take f32 and i32 (eq and
 * ne also bool) and give bool; and, or take bool. */
#define CLF_BINARY_OP_LIST(X)                                                                      \
    X(ADD, add) X(SUB, sub) X(MUL, mul) X(DIV, div) X(POW, pow) X(MAXIMUM, maximum)                \
    X(MINIMUM, minimum) X(EQ, eq) X(NE, ne) X(LT, lt) X(LE, le) X(GT, gt) X(GE, ge) X(AND, logical_and)    \
    X(OR, logical_or)

typedef enum clf_binary_op {
#define CLF_BINARY_ENUM_(E, n) CLF_BINARY_##E,
    CLF_BINARY_OP_LIST(CLF_BINARY_ENUM_)
#undef CLF_BINARY_ENUM_
    CLF_BINARY_COUNT
} clf_binary_op;

CLF_API clf_tensor clf_unary(clf_graph *g, clf_unary_op op, clf_tensor x);
CLF_API clf_tensor clf_binary(clf_graph *g, clf_binary_op op, clf_tensor a, clf_tensor b);

/* One builder per unary and binary op: clf_neg(g, x), clf_add(g, a, b), ... */
#define CLF_UNARY_DECL_(E, n) CLF_API clf_tensor clf_##n(clf_graph *g, clf_tensor x);
CLF_UNARY_OP_LIST(CLF_UNARY_DECL_)
#undef CLF_UNARY_DECL_
#define CLF_BINARY_DECL_(E, n) CLF_API clf_tensor clf_##n(clf_graph *g, clf_tensor a, clf_tensor b);
CLF_BINARY_OP_LIST(CLF_BINARY_DECL_)
#undef CLF_BINARY_DECL_

/* cond ? a : b, elementwise; cond is bool, a and b share a dtype; all three
 * broadcast together. */
CLF_API clf_tensor clf_where(clf_graph *g, clf_tensor cond, clf_tensor a, clf_tensor b);
/* min(max(x, lo), hi) for f32 or i32 x; pass -INFINITY / INFINITY for no
 * bound (i32: the bounds are truncated toward zero and clamped to the int32 range). NaN
 * in x stays NaN. lo > hi gives hi everywhere, as ONNX Clip does. */
CLF_API clf_tensor clf_clip(clf_graph *g, clf_tensor x, double lo, double hi);
/* Converts x to dtype: f32 -> i32 or i64 truncates toward zero and
 * saturates (NaN becomes 0); between integer types the value wraps (two's
 * complement, as numpy's astype and ONNX Cast do); to f32 rounds to
 * nearest; to bool is x != 0; from bool gives 0 or 1. */
CLF_API clf_tensor clf_cast(clf_graph *g, clf_tensor x, clf_dtype dtype);

/* ---- Movement (index arithmetic, never a copy inside a fused kernel) -- */

/* ONNX Reshape (allowzero = 0): an extent of 0 copies the input's extent at
 * that position and one extent may be -1 (inferred). */
CLF_API clf_tensor clf_reshape(clf_graph *g, clf_tensor x, int rank, const int64_t *shape);
/* ONNX Transpose: output axis i is input axis perm[i]; perm == NULL (with
 * nperm 0) reverses the axes. */
CLF_API clf_tensor clf_transpose(clf_graph *g, clf_tensor x, int nperm, const int *perm);
/* ONNX Expand: x broadcast against shape (bidirectionally). */
CLF_API clf_tensor clf_expand(clf_graph *g, clf_tensor x, int rank, const int64_t *shape);
/* ONNX Slice: for each listed axis, starts/ends are clamped as ONNX says and
 * negative values count from the end; axes NULL means 0..n-1, steps NULL
 * means 1; a step may be negative but not 0. In a graph with symbolic
 * dimensions an end that is one of them (clf_dim's value) is that
 * dimension, not a count from the end: [0, L) of a fixed axis at least L's
 * upper bound long (start 0, step 1), a KV cache's valid part. */
CLF_API clf_tensor clf_slice(clf_graph *g, clf_tensor x, int n, const int64_t *starts,
                             const int64_t *ends, const int *axes, const int64_t *steps);
/* ONNX Squeeze: removes the listed size-1 axes (naxes 0: every size-1 axis). */
CLF_API clf_tensor clf_squeeze(clf_graph *g, clf_tensor x, int naxes, const int *axes);
/* ONNX Unsqueeze: inserts size-1 axes at the listed output positions. */
CLF_API clf_tensor clf_unsqueeze(clf_graph *g, clf_tensor x, int naxes, const int *axes);

/* ONNX Gather: out[a..., j..., b...] = data[a..., indices[j...], b...] with
 * the indices (i32 or i64, any shape) along axis of data; the result has
 * rank rank(data) - 1 + rank(indices). A negative index counts from the
 * end, as ONNX says; an index outside [-d, d) is clamped into the axis (ONNX
 * calls it an error, which a kernel cannot report; the reference clamps
 * the same way). Inside a kernel the gathered element is a load at an
 * index read from indices: an embedding lookup fuses into what reads it. */
CLF_API clf_tensor clf_gather(clf_graph *g, clf_tensor data, clf_tensor indices, int axis);
/* ONNX GatherElements: indices (i32 or i64) of data's rank, no larger than
 * data off axis; element i of the result is data at i with its axis
 * coordinate replaced by indices[i] (negative from the end, clamped as in
 * clf_gather). */
CLF_API clf_tensor clf_gather_elements(clf_graph *g, clf_tensor data, clf_tensor indices, int axis);
/* ONNX Concat of n >= 1 tensors xs of one dtype and rank whose shapes agree
 * off axis. Inside a kernel each element is read from the input its
 * position along axis falls in; nothing is copied. */
CLF_API clf_tensor clf_concat(clf_graph *g, int n, const clf_tensor *xs, int axis);

/* A KV cache written in place. cache is a graph input laid out for its
 * capacity CAP along axis (fixed: [B, H, CAP, D] for a cache of up to CAP
 * positions); x holds the new entries, cache's shape but S along axis
 * (fixed or symbolic); len is the cache's length after the write (a
 * clf_dim whose upper bound is at most CAP, or a number; S <= len at every
 * size). The result is the cache with x at [len - S, len) along axis and
 * every other entry as it was; read its valid part through
 * clf_slice(result, 0, len) (len may be the symbolic end of a slice), so
 * attention reads the cache where it lies.
 *
 * Rules (the runtime checks them): the result must be a graph output, and
 * a device run binds it to the same memory (cl_mem and offset) as the
 * cache input; the kernel then writes the S new entries there and nothing
 * else: positions outside [len - S, len) are not touched. A host run
 * (clf_run_host, _shaped) gives value semantics: the output's host array
 * receives the whole updated cache. The cache input may be read only
 * through its write (one write per cache input). */
CLF_API clf_tensor clf_cache_write(clf_graph *g, clf_tensor cache, clf_tensor x, int axis, int64_t len);

/* ---- Reductions ------------------------------------------------------ */

/* X(enum suffix, builder name). ONNX ReduceSum, ReduceMean, ReduceMax,
 * ReduceMin, ReduceProd. sum, max, min and prod take the floats, i32 and i64
 * (integer sums and products wrap at their width, as numpy's); mean takes
 * the floats. Over an empty set (a reduced extent of 0): sum is 0, prod is
 * 1, max is -inf (integers: their lowest), min is +inf (their highest), as
 * ONNX (opset 18) defines; mean is NaN (0/0). */
#define CLF_REDUCE_OP_LIST(X) X(SUM, sum) X(MEAN, mean) X(MAX, max) X(MIN, min) X(PROD, prod)

typedef enum clf_reduce_op {
#define CLF_REDUCE_ENUM_(E, n) CLF_REDUCE_##E,
    CLF_REDUCE_OP_LIST(CLF_REDUCE_ENUM_)
#undef CLF_REDUCE_ENUM_
    CLF_REDUCE_COUNT
} clf_reduce_op;

/* Reduces x over the listed axes (negative counts from the end; naxes 0
 * means every axis, as ONNX's default noop_with_empty_axes = 0 does).
 * keepdims keeps each reduced axis with extent 1. Repeated axes are an
 * error. NaN propagates through max and min. Equal zeros resolve by sign,
 * whatever the order of the elements: the max of -0 and +0 is +0, the min
 * -0 (IEEE 754-2019 maximum and minimum). */
CLF_API clf_tensor clf_reduce(clf_graph *g, clf_reduce_op op, clf_tensor x, int naxes, const int *axes,
                              bool keepdims);
#define CLF_REDUCE_DECL_(E, n)                                                                     \
    CLF_API clf_tensor clf_reduce_##n(clf_graph *g, clf_tensor x, int naxes, const int *axes,       \
                                      bool keepdims);
CLF_REDUCE_OP_LIST(CLF_REDUCE_DECL_)
#undef CLF_REDUCE_DECL_

/* ONNX ArgMax / ArgMin over one axis of a float, i32 or i64 x, giving i32
 * indices (ONNX gives int64: the importer casts them). Ties give the first index,
 * or the last with select_last_index. The first NaN wins, as in numpy. The
 * axis must not be empty. */
CLF_API clf_tensor clf_argmax(clf_graph *g, clf_tensor x, int axis, bool keepdims, bool select_last_index);
CLF_API clf_tensor clf_argmin(clf_graph *g, clf_tensor x, int axis, bool keepdims, bool select_last_index);

/* Variance of f32 x over the listed axes: sum((x - mean)^2) / (n -
 * correction), correction 0 (population) or 1 (sample, as torch.var). */
CLF_API clf_tensor clf_reduce_var(clf_graph *g, clf_tensor x, int naxes, const int *axes, bool keepdims,
                                  int correction);

/* ---- Contractions ---------------------------------------------------- */

/* ONNX MatMul of f32 a and b (numpy matmul): a is [..., M, K] and b
 * [..., K, N], giving [..., M, N] with the batch axes broadcast; a 1-D a is
 * [1, K] and a 1-D b is [K, 1], the added axis removed from the result. The
 * planner fuses pointwise ops after the product into the GEMM kernel
 * (epilogue) and cheap pointwise ops on a or b into its loads (prologue). */
CLF_API clf_tensor clf_matmul(clf_graph *g, clf_tensor a, clf_tensor b);
/* ONNX Gemm: alpha * A' @ B' + beta * C, with A' = transpose(a) when
 * trans_a (a is [K, M]) else a ([M, K]), B' likewise ([K, N] or [N, K]);
 * c is optional (CLF_TENSOR_INVALID) and broadcasts to [M, N]. The
 * transposes are index arithmetic in the GEMM's loads, never copies. */
CLF_API clf_tensor clf_gemm(clf_graph *g, clf_tensor a, clf_tensor b, clf_tensor c, double alpha, double beta,
                            bool trans_a, bool trans_b);

/* ---- Composites (decomposed into the primitives above) ---------------- */

/* ONNX Softmax / LogSoftmax (opset 13) of f32 x along axis: exp(x - max) /
 * sum(exp(x - max)); log_softmax is (x - max) - log(sum(exp(x - max))). */
CLF_API clf_tensor clf_softmax(clf_graph *g, clf_tensor x, int axis);
CLF_API clf_tensor clf_log_softmax(clf_graph *g, clf_tensor x, int axis);
/* Scaled dot-product attention, softmax(q @ kT * scale + mask) @ v, as
 * PyTorch's scaled_dot_product_attention computes it: q [..., Sq, D],
 * k [..., Sk, D] and v [..., Sk, Dv] of one dtype (f32, f16 or bf16), their
 * batch axes broadcast numpy-style (a k and v with a head axis of 1 serve
 * every query head), giving [..., Sq, Dv]. mask is optional
 * (CLF_TENSOR_INVALID) and broadcasts to the scores [..., Sq, Sk] without
 * enlarging them: a bool mask keeps the scores where it is true (true: the
 * key takes part, as SDPA's boolean attn_mask) and makes them -inf
 * elsewhere; a mask of q's dtype is added to them. scale 0 means
 * 1/sqrt(D); any other value must be finite. causal lets query i see keys
 * j <= i + Sk - Sq (aligned to the bottom right, as FlashAttention: the
 * last query sees every key, which suits a KV cache; with Sq == Sk it is
 * PyTorch's is_causal). A query that sees no key (a fully masked row, or
 * causal with Sq > Sk) gives NaN, as in PyTorch. Decomposed into
 * transpose, matmul, mul, where or add, softmax and matmul, which the
 * planner fuses; f16 and bf16 round every intermediate as those ops do. */
CLF_API clf_tensor clf_attention(clf_graph *g, clf_tensor q, clf_tensor k, clf_tensor v, clf_tensor mask,
                                 double scale, bool causal);
/* ONNX LayerNormalization of f32 x over axes [axis, rank): (x - mean) /
 * sqrt(var + epsilon) * scale + bias, var the population variance. scale
 * and bias are optional (CLF_TENSOR_INVALID) and broadcast against
 * x.shape[axis:]. */
CLF_API clf_tensor clf_layer_norm(clf_graph *g, clf_tensor x, int axis, double epsilon, clf_tensor scale,
                                  clf_tensor bias);
/* RMS normalization (ONNX RMSNormalization) of f32 x over axes [axis, rank):
 * x * rsqrt(mean(x * x) + epsilon) * scale, scale optional. */
CLF_API clf_tensor clf_rms_norm(clf_graph *g, clf_tensor x, int axis, double epsilon, clf_tensor scale);

#ifdef __cplusplus
}
#endif

#endif
