/* The planner's inside: the state its phases share, the phases themselves
 * (planner.c) and the rules of each region kind (region_kinds.c). Tests
 * call the phases one at a time; nothing here touches OpenCL. */
#ifndef CLFUSE_PLANNER_INTERNAL_H
#define CLFUSE_PLANNER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "planner/planner.h"

typedef struct clf__u32vec {
    uint32_t *v;
    uint32_t n, cap;
} clf__u32vec;

bool clf__u32vec_push(clf__u32vec *a, uint32_t x);
bool clf__u32vec_has(const clf__u32vec *a, uint32_t x);

/* A kernel in the making: its kind's space (see clf__plan_kernel), the
 * materialised nodes it stores and the regions it reads from. */
/* An attention pattern found before materialisation (clf__plan_find_attention). */
typedef struct clf__attention_match {
    uint32_t anchor; /* the MATMUL of the weights and V */
    clf__plan_attention at;
} clf__attention_match;

typedef struct clf__region {
    clf__region_kind kind;
    clf__plan_attention attention; /* attention regions */
    uint32_t anchor; /* GEMM, attention: the MATMUL node the kernel ends in */
    uint32_t mask;   /* reduction: the reduced axes of shape */
    int rank;
    int64_t shape[CLF_MAX_RANK];
    clf__u32vec members; /* materialised nodes stored by this region */
    clf__u32vec deps;    /* regions it reads from */
    bool closed;         /* started by a depth cut: nothing joins it */
} clf__region;

/* How a materialised node would sit in a region: not at all, as a
 * pointwise kernel's store (or a GEMM's epilogue), over a reduction's full
 * space (a prologue or epilogue value), once per reduced row, or as one of
 * the region's reductions. */
typedef enum clf__role { CLF__ROLE_NONE, CLF__ROLE_POINTWISE, CLF__ROLE_FULL, CLF__ROLE_ROW, CLF__ROLE_REDUCE } clf__role;

/* What the phases share. Each phase reads what the ones before it wrote:
 *   liveness     needed, is_out
 *   attention    attention_of, matches (fusion on only)
 *   materialise  mat, cut, depth (and which operands GEMMs compute in loads)
 *   grow         regions rs[0..nr), region_of, out->stage
 *   order        order (regions in execution order)
 *   buffers      crosses, out->buffers, out->src_buffer
 *   kernels      out->kernels, out->producer
 *   count        out->stats */
typedef struct clf__plan_state {
    const clf_graph *g;
    uint32_t n; /* nodes */
    bool fuse;
    int max_depth;
    bool tiles_reload_operands; /* clf__plan_options' */
    bool sizes_vary;            /* clf__plan_options' */
    const clf__plan_options *opt; /* NULL: the defaults */
    clf__plan *out;
    bool *needed, *is_out, *mat, *cut, *crosses;
    int *depth;
    int32_t *region_of; /* per materialised node: its region; -1 elsewhere */
    uint32_t *stamp;    /* visited marks, compared with mark (no clearing) */
    uint32_t mark;
    clf__region *rs;
    uint32_t nr, cap_r;
    uint32_t *order;
    clf__u32vec stack;
    /* Attention patterns (clf__plan_find_attention): for each node the
     * anchor of the attention kernel computing it in registers, or -1 (the
     * anchor itself holds its own id); matches[] one per anchor. */
    int32_t *attention_of;
    clf__attention_match *matches;
    uint32_t nmatches;
} clf__plan_state;

/* Allocates the state for planning g into out (zeroed). */
clf_status clf__plan_state_init(clf__plan_state *S, const clf_graph *g, const clf__plan_options *opt,
                                clf__plan *out);
void clf__plan_state_free(clf__plan_state *S);

/* The phases, in order; each returns CLF_OK or the failure (err filled). */
clf_status clf__plan_liveness(clf__plan_state *S);
clf_status clf__plan_find_attention(clf__plan_state *S);
clf_status clf__plan_materialise(clf__plan_state *S);
clf_status clf__plan_grow(clf__plan_state *S);
clf_status clf__plan_order(clf__plan_state *S, char *err, size_t errlen);
clf_status clf__plan_buffers(clf__plan_state *S);
clf_status clf__plan_kernels(clf__plan_state *S);
void clf__plan_count(clf__plan_state *S);

/* ---- Region kinds (region_kinds.c) -------------------------------------- */

/* The planner's rules of one region kind. */
typedef struct clf__region_rules {
    clf__region_kind kind;
    const char *name; /* "pointwise", "reduction", "GEMM": in plans and logs */
    /* Whether materialised node m, joining no region, starts one of this
     * kind (the kinds are asked last row first; pointwise takes the rest). */
    bool (*anchors)(const clf__plan_state *S, uint32_t m);
    /* Sets R's space from its first member m. */
    void (*start)(clf__plan_state *S, clf__region *R, uint32_t m);
    /* How m would sit in region R of this kind. */
    clf__role (*role)(const clf_graph *g, const clf__region *R, const clf__node *m);
    /* The kind's legality rule beyond the shared one (clf__fusion_legal):
     * NULL when m may join region r in role ro (*stage: its reduction
     * stage), else why not. NULL pointer: no rule of its own. */
    const char *(*refusal)(clf__plan_state *S, uint32_t r, uint32_t m, clf__role ro, int *stage);
    /* The node whose value the kernel of region r stores as its member m
     * (clf__plan_store's from). NULL pointer: m itself. */
    uint32_t (*store_from)(const clf__plan_state *S, uint32_t r, uint32_t m);
    /* The kind's anchors join regions of their own kind only (as its role
     * admits them), never another kind's. */
    bool own_kind;
} clf__region_rules;

extern const clf__region_rules clf__region_kinds[CLF__REGION_KIND_COUNT];

/* The node whose value the kernel of product region r (GEMM, attention)
 * stores as materialised node m: m itself, stored at the product's element
 * i; the value m permutes, stored at the place m's movement ops put i; or
 * UINT32_MAX when the kernel cannot store m (region_kinds.c states the
 * rule). */
uint32_t clf__product_store_from(const clf__plan_state *S, uint32_t r, uint32_t m);

/* The kind a materialised node starts when it joins no region. */
clf__region_kind clf__region_kind_of_anchor(const clf__plan_state *S, uint32_t m);

/* Whether a product's first operand, node op (its last axis K), reads
 * the reductions stats[0..nstats) (not materialised: the caller cleared
 * their marks) only at its own row: read at row x of op (x over op's
 * elements / K, C order), each is its element x, and so in each one's
 * input below the ones before it; each reduces its input's last axis,
 * whose rows are op's. Then a kernel computing op's row x may compute
 * those reductions for row x first (planner.c, row statistics). */
bool clf__plan_row_stats_aligned(const clf__plan_state *S, uint32_t op, const uint32_t *stats, uint32_t nstats);

bool clf__plan_same_shape(int ra, const int64_t *a, int rb, const int64_t *b);
bool clf__plan_is_computed(const clf__node *n);

#endif
