/* The graph IR as the rest of the library sees it: nodes in an array owned
 * by the graph, referred to by index. The public builder (graph.c) is the
 * only writer; the reference interpreter, planner and codegen read it. */
#ifndef CLFUSE_GRAPH_INTERNAL_H
#define CLFUSE_GRAPH_INTERNAL_H

#include <assert.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clfuse/graph.h"

#include "graph/dtype_table.h"
#include "graph/op_table.h"

/* The primitive reductions a REDUCE node performs (mean and variance are
 * composites over SUM): X(enum suffix, name, arg), arg 1 where the result
 * is the position of a value (an i32), not a value. */
#define CLF__REDUCE_KIND_LIST(X)                                                                   \
    X(SUM, "sum", 0) X(PROD, "prod", 0) X(MAX, "max", 0) X(MIN, "min", 0) X(ARGMAX, "argmax", 1)  \
    X(ARGMIN, "argmin", 1)

typedef enum clf__reduce_kind {
#define CLF__REDUCE_KIND_ENUM_(E, n, arg) CLF__REDUCE_##E,
    CLF__REDUCE_KIND_LIST(CLF__REDUCE_KIND_ENUM_)
#undef CLF__REDUCE_KIND_ENUM_
    CLF__REDUCE_KIND_COUNT
} clf__reduce_kind;

/* Whether a reduction of kind yields a position (argmax, argmin). */
static inline bool clf__reduce_is_arg(clf__reduce_kind kind)
{
    static const bool arg[CLF__REDUCE_KIND_COUNT] = {
#define CLF__REDUCE_KIND_ARG_(E, n, a) [CLF__REDUCE_##E] = a,
        CLF__REDUCE_KIND_LIST(CLF__REDUCE_KIND_ARG_)
#undef CLF__REDUCE_KIND_ARG_
    };
    return (unsigned)kind < CLF__REDUCE_KIND_COUNT && arg[kind];
}

/* One recorded value. Movement attributes are normalised by the builder so
 * that consumers never re-derive ONNX rules:
 *  - RESHAPE, SQUEEZE, UNSQUEEZE: only the output shape matters (a reshape
 *    of the C-order element sequence);
 *  - TRANSPOSE: output axis i is input axis attr.transpose.attr.transpose.perm[i];
 *  - EXPAND: numpy broadcast of the input to the output shape (input aligned
 *    to the right, extents 1 repeated);
 *  - SLICE: input index on axis a = start[a] + i * step[a] (attr.slice) for output index
 *    i on axis a (axes not sliced have start 0, step 1);
 *  - CLIP: attr.clip.lo and hi as given (±inf for none), applied in the input dtype;
 *  - REDUCE: attr.reduce.kind is a clf__reduce_kind; mask has bit a set for each
 *    reduced input axis a; keepdims says whether the node's shape keeps
 *    them (extent 1); ARGMAX/ARGMIN reduce one axis, give i32 and pick the
 *    last of equal values when select_last is set;
 *  - MATMUL: inputs[0] is [batch..., M, K] and inputs[1] [batch..., K, N],
 *    both of rank >= 2 and f32; their batch axes broadcast numpy-style to
 *    the node's [batch..., M, N] (1-D operands and ONNX Gemm's transposes,
 *    alpha, beta and C are movement and pointwise nodes around it);
 *  - GATHER: inputs data and indices (i32 or i64); attr.gather.axis of data
 *    is indexed by the indices, whose axes take its place in the output;
 *  - GATHER_ELEMENTS: inputs data and indices of one rank; the output has
 *    the indices' shape, and element i reads data at i with attr.gather.axis
 *    replaced by indices[i];
 *  - CONCAT: ninputs >= 2 inputs of one dtype and rank concatenated along
 *    attr.concat.axis;
 *  - CACHE_WRITE: inputs[0] is the cache, a graph INPUT [.., CAP, ..],
 *    and inputs[1] the new entries x [.., S, ..] (the same shape off
 *    attr.cache.axis): the node is the cache with x at [len - S, len)
 *    along axis, len = attr.cache.len (the symbol len_sym where set);
 *    computed in place in the cache input's buffer (planner: its own
 *    region kind);
 *  - CONSTANT: data holds numel elements of dtype in C order, owned by the
 *    graph; rank-0 constants made by clf_scalar also keep
 *    attr.constant.attr.constant.scalar = value.
 * Inputs of pointwise nodes broadcast numpy-style to the node's shape. */
typedef struct clf__node {
    clf__op op;
    clf_dtype dtype;
    int rank;
    int64_t shape[CLF_MAX_RANK];
    int ninputs;
    uint32_t *inputs; /* ninputs node ids, owned by the graph */
    /* The attributes of the op, by op (see above). */
    union {
        struct {
            int perm[CLF_MAX_RANK];
        } transpose;
        struct {
            int64_t start[CLF_MAX_RANK];
            int64_t step[CLF_MAX_RANK];
        } slice;
        struct {
            double lo, hi;
        } clip;
        struct {
            clf__reduce_kind kind;
            uint32_t mask;
            bool keepdims;
            bool select_last;
        } reduce;
        struct {
            double scalar;
        } constant;
        struct {
            int axis;
        } gather;
        struct {
            int axis;
        } concat;
        struct {
            int axis;
            int64_t len;     /* the cache's length after the write */
            uint8_t len_sym; /* 1 + the symbol len is, or 0 */
        } cache;
    } attr;
    void *data;       /* CONSTANT only */
    const char *name; /* INPUT only; owned by the graph */
    /* Symbolic dimensions (graph_symbols.h): sym[d] is 0 when extent d is
     * fixed, else 1 + the index of the graph's symbol it is; shape[d] then
     * holds the symbol's representative size. */
    uint8_t sym[CLF_MAX_RANK];
    /* A CONSTANT whose values follow from shapes (clf__const_gen): made
     * again when the graph is specialised to other sizes. */
    struct {
        uint8_t kind;  /* clf__const_gen */
        uint32_t node; /* COUNT: the node whose extents are counted */
        uint32_t mask; /* COUNT: which of its axes */
        double minus;  /* COUNT: subtracted from the count (not below 0) */
        int axis;      /* IOTA: the axis whose index is the value; PREFIX: the axis cut */
        uint8_t splat[8]; /* SPLAT: the element every position holds, its bytes */
        const void *table; /* PREFIX: the node's shape but gen.rows on gen.axis, in C order */
        int64_t rows;
    } gen;
    bool borrowed; /* data belongs to the graph this one was specialised from */
} clf__node;

/* How a CONSTANT's values follow from shapes. */
typedef enum clf__const_gen {
    CLF__GEN_NONE,
    CLF__GEN_CAUSAL, /* bool [.., sq, sk], leading extents 1: C[i][j] = j <= i + sk - sq (clf_attention's
                        causal mask; an imported model's, graph_generalise.h) */
    CLF__GEN_COUNT,  /* f32 scalar: the product of gen.node's extents on gen.mask, less gen.minus */
    CLF__GEN_SPLAT,  /* any dtype: every element is gen.splat */
    CLF__GEN_IOTA,   /* integer or float: each element is its index on gen.axis (-1: its index in C order) */
    CLF__GEN_PREFIX, /* any dtype: the first extents on gen.axis of gen.table, kept alive by the graph's
                        regen (a position embedding's rows, a rotary table) */
} clf__const_gen;

/* How a derived dimension's size follows from symbols a and b (indices of
 * the graph's symbols; graph_generalise.h finds them). */
typedef enum clf__dim_rule {
    CLF__DIM_SYMBOL,     /* a symbol itself (clf_dim) */
    CLF__DIM_SCALED,     /* k * a + c */
    CLF__DIM_PRODUCT,    /* k * a * b */
    CLF__DIM_DIFFERENCE, /* a - b + c */
} clf__dim_rule;

/* A symbolic dimension (clf_dim), or one derived from them (index nsyms
 * and after: no bounds, never bound by a run, its size computed). rep is
 * the size the graph's shapes hold for it while building. */
typedef struct clf__dim_sym {
    char *name;
    int64_t lo, hi, rep;
    uint8_t rule; /* clf__dim_rule */
    uint8_t a, b;
    int64_t k, c;
} clf__dim_sym;

/* Symbolic dimensions a graph may declare, derived ones included (sym[]
 * holds 1 + the index). */
#define CLF__MAX_SYMS 64

typedef struct clf__graph_output {
    char *name;
    uint32_t node;
} clf__graph_output;

/* How a graph is made again at given sizes when it cannot be specialised
 * node by node: a model whose import folds its shapes into constants
 * (onnx/) is imported again. make builds the graph at values (one per
 * symbol, within bounds; no symbols in it). The graph and its copies share
 * one, counted (clf__graph_regen_new, _retain, _release).
 *
 * by_nodes: the graph is specialised node by node after all
 * (graph_generalise.h) at sizes up to upto[s] for each symbol s, the
 * largest it was checked at; a size past them is checked first (the graph
 * made there both ways and compared, at twice the size checked before:
 * clf__graph_specialise), and one disagreement ends by_nodes. The regen
 * keeps alive the constants and tables the graph borrows. */
typedef struct clf__graph_regen {
    clf_status (*make)(void *state, const int64_t *values, clf_graph **out, char *err, size_t cap);
    void (*release)(void *state);
    void *state;
    int refs;
    pthread_mutex_t lock; /* by_nodes and upto, which runs at new sizes change */
    bool by_nodes;
    int64_t upto[CLF__MAX_SYMS];
} clf__graph_regen;

struct clf_graph {
    uint32_t serial; /* non-zero, unique per process; tags clf_tensor handles */
    clf__node *nodes;
    size_t nnodes, cap_nodes;
    uint32_t *inputs; /* node ids of INPUT nodes, in declaration order */
    size_t ninputs, cap_inputs;
    clf__graph_output *outputs;
    size_t noutputs, cap_outputs;
    clf__dim_sym *syms; /* symbolic dimensions, then the derived ones; CLF__MAX_SYMS in all */
    size_t nsyms, nderived;
    clf__graph_regen *regen; /* NULL: specialised node by node */
    clf_status status;
    char message[512];
};

static inline const clf__node *clf__graph_node(const clf_graph *g, uint32_t id)
{
    assert(id < g->nnodes);
    return &g->nodes[id];
}

/* Number of elements of a node (shapes are overflow-checked when built). */
int64_t clf__node_numel(const clf__node *n);
/* Short op name used in kernel names and logs: "add", "relu", "transpose". */
const char *clf__node_op_name(const clf__node *n);
clf__node_class clf__node_class_of(const clf__node *n);
/* Builder names of valid ops, for messages: "exp", "logical_not", "add". */
const char *clf__unary_op_name(clf_unary_op op);
const char *clf__binary_op_name(clf_binary_op op);

#endif
