/* Products that read one operand, merged into one (a horizontal fusion).
 *
 * A transformer layer multiplies one normalised activation by three weight
 * matrices (q, k and v) and, in its MLP, by two (gate and up): each is its
 * own GEMM kernel, each launch a few microseconds on a GPU, each reading
 * the activation again. Where two or more MATMULs read the same node as
 * their left operand and constants as their right ones, one MATMUL over
 * the constants concatenated along N computes them all, and each former
 * product is a SLICE of it (a view: its readers index the merged result).
 * clf_compile plans the copy this makes (executable.c); the weights are
 * concatenated once, and a graph with symbolic sizes keeps them for every
 * specialisation (dynamic.c). */
#ifndef CLFUSE_GRAPH_MERGE_PRODUCTS_H
#define CLFUSE_GRAPH_MERGE_PRODUCTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph_internal.h"

/* The most products one merge takes. */
#define CLF__MERGED_MAX_MEMBERS 8

/* The rows (all batches) up to which a GPU product's loads may compute its
 * operand from parts of a merged product: every work-group of codegen's
 * few-rows form (gemm_rows.cl) reads all of A anyway. The planner's
 * prologue rule and clf_compile's products kept apart use it. */
#define CLF__FEW_ROWS 8

/* Whether a MATMUL node has at most CLF__FEW_ROWS rows in all (its
 * elements over its last extent). */
static inline bool clf__product_few_rows(const clf__node *m)
{
    const int64_t cols = m->shape[m->rank - 1];
    return cols > 0 && clf__node_numel(m) / cols <= CLF__FEW_ROWS;
}

/* The K from which a GPU product of few rows takes codegen's few-rows
 * form (gemm_rows.cl; shorter ones take the tiles). */
#define CLF__FEW_ROWS_MIN_K 512

/* Whether MATMUL node m, of first operand a, is a GPU product of the
 * few-rows form's shape: few rows, K of CLF__FEW_ROWS_MIN_K or more. */
static inline bool clf__product_rows_form(const clf__node *m, const clf__node *a)
{
    return clf__product_few_rows(m) && a->rank > 0 && a->shape[a->rank - 1] >= CLF__FEW_ROWS_MIN_K;
}

/* Concatenated weights kept across compiles of graphs that share their
 * constants' data (the specialisations of one graph, whose constants
 * borrow a model's initializers), so that each concatenation is made once
 * and keeps one address (the constant pool finds device buffers of
 * borrowed constants by address). Thread-safe. */
typedef struct clf__merge_memo clf__merge_memo;

clf__merge_memo *clf__merge_memo_new(void);
void clf__merge_memo_free(clf__merge_memo *memo);

/* A copy of a graph with its products merged, and where its nodes came
 * from: origin[i] is the id in the original graph of the copy's node i,
 * or UINT32_MAX for a node the merge made (the concatenated constant, its
 * transpose, the members' slices: views, which the kernels reading them
 * only index); a merged product lists its members. */
typedef struct clf__merged_graph {
    clf_graph *g;
    uint32_t *origin;
    /* The merged products: node ids in g, each with the original ids of
     * its members. */
    size_t nproducts;
    struct clf__merged_product {
        uint32_t node;
        uint32_t nmembers;
        uint32_t members[CLF__MERGED_MAX_MEMBERS];
    } *products;
} clf__merged_graph;

/* Finds in g the groups of two to eight MATMULs that read one node as a
 * (a [.., M, K]) and, as b, a rank-2 constant [K, N_i] (or the transpose
 * of a constant [N_i, K]) of one dtype and form, whose data is present and
 * not made from shapes; none a graph output, even through movement ops
 * (its slice would need a copy where the product stores it in place), nor
 * marked in keep_apart (per node; NULL: none): the caller marks products
 * whose epilogues a merge would move to kernels of their own (executable.c).
 * Where there is at least one group, out->g is a copy of g with each
 * group's first member replaced by the concatenated constant, the merged
 * MATMUL and the member's SLICE of its last axis, and each later member
 * by its SLICE; nodes keep their order (ids shift), the inputs and
 * outputs their names and order. The copy uses g's data (it must not
 * outlive g; its nodes keep their borrowed marks) and takes a group's
 * concatenation from memo where every part is borrowed (its address
 * outlives every copy: the constant pool may share it), else owns it. Where there is no group, out->g is NULL. Fails only for memory
 * (CLF_ERR_OUT_OF_MEMORY, a message in err). */
clf_status clf__graph_merge_products(const clf_graph *g, const uint8_t *keep_apart, clf__merge_memo *memo,
                                     clf__merged_graph *out, char *err, size_t cap);

/* How many groups clf__graph_merge_products would merge in g (keep_apart
 * likewise), without copying anything; 0 also where out of memory (then
 * nothing merges, which is always safe). *tiled (when not NULL) gets
 * whether a group's products have more than CLF__FEW_ROWS rows. */
size_t clf__graph_merge_count(const clf_graph *g, const uint8_t *keep_apart, bool *tiled);

void clf__merged_graph_free(clf__merged_graph *m);

/* The ids in the original graph of the copy's node id (a merged product's
 * members, a copied node's origin, none for the nodes the merge made), at
 * most cap of them, into ids; returns how many. */
size_t clf__merged_origins(const clf__merged_graph *m, uint32_t id, uint32_t *ids, size_t cap);

#endif
