/* The fusion planner: decides which nodes are computed in which kernel and
 * which values cross kernel boundaries through buffers. Pure: it reads the
 * graph and writes a clf__plan; it knows nothing of OpenCL. */
#ifndef CLFUSE_PLANNER_H
#define CLFUSE_PLANNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph/graph_internal.h"

/* Reductions of one kernel that read each other form stages, each a sweep
 * over the row; the templates unroll at most this many. */
#define CLF__MAX_REDUCTION_STAGES 4

typedef enum clf__buffer_kind {
    CLF__BUF_INPUT,        /* a graph input; index = position in g->inputs */
    CLF__BUF_OUTPUT,       /* a graph output; index = position in g->outputs */
    CLF__BUF_CONSTANT,     /* a tensor constant uploaded at compile time */
    CLF__BUF_INTERMEDIATE, /* a value that crosses a kernel boundary */
} clf__buffer_kind;

typedef struct clf__plan_buffer {
    clf__buffer_kind kind;
    uint32_t node;  /* the node whose value the buffer holds */
    uint32_t index; /* see clf__buffer_kind */
    uint64_t bytes;
    /* OUTPUT of a cache write: 1 + the INPUT buffer the value is written in
     * place in (its kernel stores there, the runtime binds both to one
     * memory); 0 otherwise. */
    uint32_t in_place;
} clf__plan_buffer;

/* Whether the buffer is a region of the executable's scratch: kernels get
 * the scratch buffer and the region's offset in elements (codegen_expr.h's
 * o_<id>) rather than a buffer or sub-buffer of its own. */
static inline bool clf__plan_buffer_in_scratch(const clf__plan_buffer *B)
{
    return B->kind == CLF__BUF_INTERMEDIATE;
}

/* One value a kernel writes: node's value into buffer. A kernel that ends
 * in a product (GEMM, attention) may write it as the value `from` that it
 * computes at the product's element i, stored where the movement ops
 * between from and node put element i (a permuted store: the heads of an
 * attention output merged back into [B, S, H * Dv] without a copy kernel;
 * region_kinds.c has the rule). from == node otherwise. */
typedef struct clf__plan_store {
    uint32_t node;
    uint32_t buffer;
    uint32_t from;
} clf__plan_store;

/* The kinds of kernel the planner makes. Each kind's rules are a row of
 * the planner's kind table (planner/region_kinds.c: what starts a region,
 * what may join it) and of codegen's (codegen/codegen.c: its writer,
 * templates and device forms). */
typedef enum clf__region_kind {
    CLF__REGION_POINTWISE, /* elementwise over one shape, several stores */
    CLF__REGION_REDUCTION, /* rows of a reduced space, prologue and epilogue */
    CLF__REGION_GEMM,      /* one MATMUL, prologues in its loads, epilogue in its stores */
    CLF__REGION_ATTENTION, /* softmax(Q Kt + ...) V: scores and weights in registers */
    CLF__REGION_CACHE_WRITE, /* new entries stored into a cache input in place */
    CLF__REGION_KIND_COUNT
} clf__region_kind;

/* "pointwise", "reduction", "GEMM", "attention", "cache write". */
const char *clf__region_kind_name(clf__region_kind kind);

/* What an attention kernel computes in registers (clf__plan_kernel). */
typedef struct clf__plan_attention {
    uint32_t scores, logits, max, sum, probs;
    bool causal;
    int64_t causal_offset;
    double causal_fill; /* the logits' value at the keys skipped (through the casts after the WHERE) */
    /* The causal WHERE and the input it keeps (1 or 2), or the ADD of an
     * additive causal mask and its other addend (0 or 1): at every key the
     * kernel computes the logits of, the node is that input. */
    uint32_t causal_where;
    int causal_keep;
    /* The weights pass WHERE(ISNAN(w), nan_fill, w): a row whose softmax
     * is NaN (every weight at once) weighs every key nan_fill. */
    bool has_nan_fill;
    double nan_fill;
} clf__plan_attention;

typedef struct clf__plan_kernel {
    /* A pointwise kernel iterates over shape, the shape every store shares.
     * A reduction kernel iterates over rows x elements of shape, the input
     * of its reductions, with the axes in reduce_mask reduced: rows is the
     * product of the kept extents, rlen of the reduced ones.
     * A GEMM kernel computes the MATMUL node anchor (its operands through
     * their prologues in its loads) and stores every store of shape, the
     * product's, from its accumulator (the epilogue). numel is the
     * product's element count.
     * A cache-write kernel iterates over shape, the new entries', and
     * stores each at its place in the cache (anchor: the CACHE_WRITE). */
    clf__region_kind kind;
    uint32_t anchor;
    /* An attention kernel computes the MATMUL anchor (the weights times V)
     * as a GEMM kernel would, its epilogue likewise, but its first operand
     * in registers: for each query row the scores (the MATMUL node scores,
     * Q times Kt), the logits (the value softmax normalises: the scores
     * through scale, masks, casts, evaluated per score), their softmax
     * (the REDUCE nodes max and sum, never stored) and probs (the DIV or
     * its cast that anchor reads). Keys j > i + causal_offset of query i
     * are skipped where causal is set: the logits there are -inf, or so far
     * below the row's maximum that they weigh exactly 0 (attention_match.c);
     * the kernel evaluates the logits only at the keys it keeps, where the
     * causal WHERE is its kept input, and takes causal_fill elsewhere. */
    clf__plan_attention attention;
    uint32_t reduce_mask;
    int64_t rows, rlen;
    int rank;
    int64_t shape[CLF_MAX_RANK];
    int64_t numel; /* pointwise: elements; reduction: rows (the launch's work) */
    clf__plan_store *stores;
    uint32_t nstores;
    uint32_t *reads; /* buffers loaded, ascending, each once */
    uint32_t nreads;
    uint32_t *ops; /* computed nodes evaluated here, ascending */
    uint32_t nops;
} clf__plan_kernel;

typedef struct clf__plan_stats {
    uint64_t kernels, launches, tensor_reads, tensor_writes, bytes_read, bytes_written;
} clf__plan_stats;

/* A node is read from src_buffer[node] by any kernel that does not compute
 * it itself; -1 for nodes that are never materialised (inlined everywhere)
 * and for scalar constants, which become literals. */
typedef struct clf__plan {
    clf__plan_buffer *buffers;
    uint32_t nbuffers;
    clf__plan_kernel *kernels; /* in execution order */
    uint32_t nkernels;
    int32_t *src_buffer; /* per node */
    int32_t *producer;   /* per node: the kernel whose stores or registers hold it, or -1 */
    int8_t *stage;       /* per reduction node: 0 for a reduction of loaded values, 1 + the
                            deepest stage it reads in its own kernel otherwise; -1 elsewhere */
    uint32_t nnodes;
    clf__plan_stats stats;
} clf__plan;

typedef struct clf__plan_options {
    bool disable_fusion; /* every pointwise op its own kernel; movement ops stay views */
    int max_fused_depth; /* 0: default; a chain deeper than this is cut by a buffer */
    /* GEMM tiles load an operand element once per tile of the other
     * operand (the GPU forms): a prologue that applies a row statistic (a
     * norm's) is stored by its own kernel instead of recomputed. */
    bool tiles_reload_operands;
    /* The graph is one specialisation of a graph with symbolic sizes,
     * whose kernels each new size generates and instantiates again:
     * attention's loads compute no operand from parts of a product there
     * (planner.c). */
    bool sizes_vary;
    /* Whether the target's attention kernel takes an attention of these
     * extents (batch the product of the leading axes; codegen_attention.c
     * says, through the runtime); false with why written. NULL: every
     * one. One it does not take is planned as its products and softmax. */
    bool (*attention_fits)(const void *target, int64_t batch, int64_t sq, int64_t sk, int64_t d, int64_t dv,
                           char *why, size_t cap);
    const void *target;
} clf__plan_options;

/* How many (node, view) pairs the reduction-alignment walk visits before it
 * gives up and refuses the merge (default 65536). Tests lower it to reach
 * that path; not meant to change while plans are built. */
extern size_t clf__align_walk_cap;

/* Plans g (which must have status CLF_OK). On failure returns an error
 * status with a message in err. */
clf_status clf__plan_build(const clf_graph *g, const clf__plan_options *opt, clf__plan *out,
                           char *err, size_t errlen);
void clf__plan_free(clf__plan *plan);

/* True when a node is a scalar constant that codegen writes as a literal. */
bool clf__plan_is_literal(const clf__node *n);
/* Whether node id is, through movement ops, a float literal; *v gets
 * its value. */
bool clf__plan_literal_float(const clf_graph *g, uint32_t id, double *v);

/* The node whose buffer a gather's kernel reads its indices from, in C
 * order: the indices, or through reshapes (which keep C order) the graph
 * input or constant they view, which needs no kernel to store them. */
uint32_t clf__plan_gather_indices(const clf_graph *g, const clf__node *gather);

/* Whether the epilogue of GEMM kernel k of plan p (of g), a GPU plan made
 * with sizes_vary as clf__plan_options', could be computed by the attention
 * kernels that read its stores instead, were its product a part of a
 * larger one (graph_merge_products.h): an f32 product in a graph whose
 * sizes do not vary (the planner's rule for attention's loads), every
 * store read by attention kernels only, and the kernel's nodes outside
 * its prologue (its epilogue, and what it computes beside it from other
 * products) reading nothing but the product, their own kind, the
 * product's operands, products of the same left operand (those it would
 * merge with) and constants attention's loads may apply to such parts
 * (literals and vectors: a bias). What the prologue reads (an RMSNorm
 * computed in the loads) stays with the merged product. Out of memory:
 * false. */
bool clf__plan_epilogue_fits_attention(const clf_graph *g, const clf__plan *p, uint32_t k, bool sizes_vary);

/* Whether a materialised node m may join kernel region r of plan-in-progress
 * `deps` (region-level dependency lists): the rule, in words, is that the
 * merged kernel must not depend on itself through another kernel. Exposed for
 * tests. nregions regions; dep_start/dep_list form a CSR adjacency of region
 * -> regions it reads from; m_deps are the regions node m reads from. */
bool clf__fusion_legal(uint32_t r, const uint32_t *m_deps, uint32_t nm_deps, uint32_t nregions,
                       const uint32_t *const *region_deps, const uint32_t *region_ndeps);

#endif
