/* The differential graph fuzzer (clfuse-fuzz): random graphs described as
 * plain data, built through the public API, run on the device fused and
 * unfused (and with both kernel styles) and compared with the reference
 * interpreter; a failing graph is shrunk to a small one and printed as a
 * listing and as ONNX text for the clfuse tool.
 *
 * A graph is an array of fz_node in topological order (a node reads only
 * earlier nodes). Each node names an op family from the table in
 * fuzz_ops.c (fz_families) and a "recipe": attributes written so that they
 * stay meaningful when the shrinker changes the shapes under them (a
 * reshape says "merge axes 1..2", not "to [6, 4]"). fz_build turns the
 * recipe into builder calls against the shapes it finds, and records the
 * concrete attributes it used for the printers.
 *
 * Adding an op family is one entry in fz_families: how to pick operands
 * and attributes, how to build, how to print as ONNX, and its tolerance
 * class. */
#ifndef CLFUSE_FUZZ_H
#define CLFUSE_FUZZ_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "clfuse/clfuse.h"

#define FZ_MAX_RANK 6
#define FZ_MAX_NODES 48
#define FZ_MAX_NUMEL 4096
#define FZ_MAX_IN 4     /* operands of one node (concat takes up to 4) */
#define FZ_MAX_CONST 64 /* elements of a tensor constant (gather's literal indices) */

/* Deterministic random numbers (splitmix64). */
typedef struct fz_rng {
    uint64_t s;
} fz_rng;

uint64_t fz_next(fz_rng *r);
/* Uniform in [0, n); 0 when n is 0. */
uint32_t fz_below(fz_rng *r, uint32_t n);
/* True with probability p. */
bool fz_chance(fz_rng *r, double p);
double fz_unit(fz_rng *r);

/* How a graph input's values are drawn (fuzz_data.c). */
typedef enum fz_profile {
    FZ_PROF_NORMAL,   /* f32 uniform in [-2, 2]; i32 and i64 in [-5, 5]; bool 0/1 */
    FZ_PROF_POSITIVE, /* f32 in (0.125, 4] */
    FZ_PROF_INTEGERS, /* f32 small integers in [-4, 4] (ties, exact zeros) */
    FZ_PROF_SPECIAL,  /* f32 with NaN, +-inf, +-0, denormals, large values; i32
                         with INT32_MIN/MAX and 0; i64 with INT64_MIN/MAX,
                         the int32 limits and 0; bool bytes other than 0/1 */
    FZ_PROF_LARGE,    /* f32 of magnitude 1e20..1e30, both signs */
    FZ_PROF_TINY,     /* f32 denormals and tiny normals, both signs */
    FZ_PROF_INDEX,    /* i32/i64 gather indices into an axis of extent ival
                         (fz_index_value): mostly in [-ival, ival), some out
                         of range and at the dtype's limits */
    FZ_PROF_COUNT
} fz_profile;

/* What the generator knows about a node's values. */
typedef struct fz_facts {
    double mag;   /* bound on the magnitude of finite values */
    bool special; /* may hold NaN or +-inf */
    bool exact;   /* computed by ops that every correct device rounds as the
                     reference does: bitwise comparable */
    bool nonneg;  /* no negative values (NaN allowed) */
    int depth;    /* inexact f32 ops on the longest path */
    bool reduced; /* a reduction, composite or contraction lies upstream */
    int kmax;     /* the longest contraction (matmul/gemm K) upstream; 0: none */
} fz_facts;

typedef struct fz_node {
    uint8_t family; /* index into fz_families */
    int sub;        /* the op within the family (clf_unary_op, clf_reduce_op, ...) */
    int nin;
    int in[FZ_MAX_IN];
    /* Recipe. */
    int naxes;
    int axes[FZ_MAX_RANK];
    bool keepdims;
    bool flag;
    int ival;
    int64_t v[3][FZ_MAX_RANK];
    double lo, hi;
    /* Leaves: dtype, shape and values (an index input or constant also
     * its axis extent, in ival). */
    clf_dtype dt;
    int rank;
    int64_t shape[FZ_MAX_RANK];
    fz_profile profile;
    uint64_t data_seed;
    bool cache; /* an input that a cache write writes: nothing else reads it */
    bool output;
    fz_facts facts;
    /* Filled by fz_build: the result's type and the concrete attributes. */
    clf_dtype odt;
    int orank;
    int64_t oshape[CLF_MAX_RANK];
    int nreal;
    int64_t real[3][CLF_MAX_RANK];
    int nrealaxes;
    int realaxes[CLF_MAX_RANK];
} fz_node;

typedef struct fz_graph {
    int n;
    fz_node node[FZ_MAX_NODES];
} fz_graph;

/* A built graph: the clf_graph and each node's tensor. */
typedef struct fz_built {
    clf_graph *g;
    clf_tensor t[FZ_MAX_NODES];
} fz_built;

/* ---- fuzz_ops.c: the op-family table, generation, building, printing --- */

typedef struct fz_gen fz_gen;

/* Tolerance classes for f32 results that are not exact (fuzz_check.c
 * states the numbers). */
typedef enum fz_tol_class {
    FZ_TOL_EXACT,       /* bitwise (NaN matches NaN, -0 matches +0) */
    FZ_TOL_POINTWISE,   /* correctly rounded or few-ulp pointwise math */
    FZ_TOL_REDUCTION,   /* sums in another order, composites */
    FZ_TOL_CONTRACTION, /* matmul/gemm: dot products in another order */
} fz_tol_class;

typedef struct fz_family {
    const char *name;
    /* Relative weight when generating; 0 for leaves. */
    int weight;
    fz_tol_class tol;
    /* Chooses operands among g's nodes and the recipe, fills *n and its
     * facts; false when nothing fits (the generator tries another family). */
    bool (*pick)(fz_gen *G, fz_node *n);
    /* Builds n from its operands' tensors, recording the concrete
     * attributes in n. */
    clf_tensor (*build)(clf_graph *g, fz_node *n, const clf_tensor *in, fz_node *const *args);
    /* Writes ONNX text nodes computing "v<i>" (i = node index); returns
     * false when it cannot express the node. */
    bool (*onnx)(FILE *f, const fz_graph *G, int i);
} fz_family;

enum {
    FZ_FAM_INPUT,
    FZ_FAM_SCALAR,
    FZ_FAM_CONST, /* a tensor constant of index values (clf_constant) */
    FZ_FAM_UNARY,
    FZ_FAM_BINARY,
    FZ_FAM_WHERE,
    FZ_FAM_CLIP,
    FZ_FAM_CAST,
    FZ_FAM_RESHAPE,
    FZ_FAM_TRANSPOSE,
    FZ_FAM_EXPAND,
    FZ_FAM_SLICE,
    FZ_FAM_SQUEEZE,
    FZ_FAM_UNSQUEEZE,
    FZ_FAM_REDUCE,
    FZ_FAM_ARG,
    FZ_FAM_VAR,
    FZ_FAM_SOFTMAX,
    FZ_FAM_LAYER_NORM,
    FZ_FAM_RMS_NORM,
    FZ_FAM_MATMUL,
    FZ_FAM_GEMM,
    FZ_FAM_GATHER,
    FZ_FAM_GATHER_ELEMENTS,
    FZ_FAM_CONCAT,
    FZ_FAM_CACHE_WRITE,
    FZ_FAM_COUNT
};

extern const fz_family fz_families[FZ_FAM_COUNT];

/* Generates graph number index of the run with this seed. force: a family
 * (FZ_FAM_*) that the graph's first op is drawn from, or -1 (none). */
void fz_generate(uint64_t seed, uint64_t index, int force, fz_graph *out);
/* The family named name (fz_families[f].name), or -1. */
int fz_family_by_name(const char *name);
/* Builds G through the public API; false (with the graph's message in
 * msg) when the builder refuses it. Destroy b->g with clf_graph_destroy. */
bool fz_build(fz_graph *G, fz_built *b, char *msg, size_t cap);
/* A listing of G: one line per node, the builder call it makes. */
void fz_print_listing(FILE *f, const fz_graph *G);
/* G as ONNX text for `clfuse check`/`clfuse run` (after fz_build). */
void fz_print_onnx(FILE *f, const fz_graph *G);
/* One index value into an axis of extent d for indices of dtype dt (i32
 * or i64): mostly in [-d, d), sometimes just outside it, far outside it
 * or at the dtype's limits (clf_gather clamps those). The values of
 * FZ_PROF_INDEX inputs and of FZ_FAM_CONST nodes. */
int64_t fz_index_value(fz_rng *r, int64_t d, clf_dtype dt);
/* The number of input nodes and of live (reachable from an output) nodes. */
int fz_live_count(const fz_graph *G);

/* ---- fuzz_check.c: data, device runs, comparison ----------------------- */

typedef struct fz_options {
    bool unfused;     /* also compile with disable_fusion */
    bool styles;      /* also force the CPU and GPU kernel styles */
    bool verbose;
} fz_options;

typedef enum fz_verdict {
    FZ_PASS,    /* every variant agrees with the reference */
    FZ_FAIL,    /* a disagreement, or a compile or run failure: a finding */
    FZ_INVALID, /* the builder refused the graph (a shrinker candidate) */
} fz_verdict;

/* Runs G on ctx (fused, and as o asks unfused and with both kernel styles)
 * and compares every output with the reference. On FZ_FAIL, why describes
 * the first disagreement: variant, output, element, values, tolerance. */
fz_verdict fz_check(clf_context *ctx, fz_graph *G, const fz_options *o, char *why, size_t cap);

/* ---- fuzz_shrink.c -------------------------------------------------- */

/* Reduces G while fz_check keeps failing in the same way (same variant,
 * same kind of failure): outputs dropped, nodes replaced by new inputs or
 * bypassed, dead nodes removed, extents shrunk, input values made plain.
 * Returns the number of accepted reductions; why ends as the shrunk
 * graph's failure. */
int fz_shrink(clf_context *ctx, fz_graph *G, const fz_options *o, char *why, size_t cap);

#endif
