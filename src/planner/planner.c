/* Fusion planner: which nodes are computed in which kernel and which values
 * cross kernel boundaries through buffers.
 *
 * Every value that must live in memory is "materialised": graph outputs,
 * reductions and products, and with fusion off every pointwise op; with
 * fusion on a chain deeper than max_fused_depth is cut by a buffer so that
 * kernels stay a sane size. Everything else is inlined into each kernel
 * that needs it, movement ops as index arithmetic. Materialised values share
 * a kernel region when the region's kind takes them (region_kinds.c) and
 * the merge is legal (clf__fusion_legal).
 *
 * clf__plan_build runs the phases of planner_internal.h in order; each is a
 * function of its own so that tests can look between them. */
#include "planner/planner_internal.h"
#include "util/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_merge_products.h"
#include "index/index_algebra.h"
#include "util/log.h"

#define DEFAULT_MAX_FUSED_DEPTH 64

bool clf__u32vec_push(clf__u32vec *a, uint32_t x)
{
    if (a->n == a->cap) {
        uint32_t cap = a->cap ? a->cap * 2 : 8;
        uint32_t *p = clf__realloc(a->v, cap * sizeof *p);
        if (!p)
            return false;
        a->v = p;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return true;
}

bool clf__u32vec_has(const clf__u32vec *a, uint32_t x)
{
    for (uint32_t i = 0; i < a->n; i++)
        if (a->v[i] == x)
            return true;
    return false;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

bool clf__plan_is_literal(const clf__node *n)
{
    return n->op == CLF__OP_CONSTANT && clf__node_numel(n) == 1;
}

bool clf__plan_literal_float(const clf_graph *g, uint32_t id, double *v)
{
    const clf__node *n = clf__graph_node(g, id);
    while (clf__node_class_of(n) == CLF__CLASS_MOVEMENT)
        n = clf__graph_node(g, n->inputs[0]);
    if (!clf__plan_is_literal(n) || !clf__dtype_is_float(n->dtype))
        return false;
    *v = clf__dtype_info_of(n->dtype)->get_f64(n->data, 0);
    return true;
}

uint32_t clf__plan_gather_indices(const clf_graph *g, const clf__node *gather)
{
    uint32_t id = gather->inputs[1];
    while (clf__view_input_linear(clf__graph_node(g, id)))
        id = clf__graph_node(g, id)->inputs[0];
    return clf__plan_is_computed(clf__graph_node(g, id)) ? gather->inputs[1] : id;
}

bool clf__fusion_legal(uint32_t r, const uint32_t *m_deps, uint32_t nm_deps, uint32_t nregions,
                       const uint32_t *const *region_deps, const uint32_t *region_ndeps)
{
    /* Merging m into r is illegal when m depends on r through some other
     * region s (m -> s -> ... -> r): the merged kernel would have to run
     * both before and after s. Search from m's dependencies other than r. */
    bool ok = true;
    uint8_t *seen = clf__calloc(nregions ? nregions : 1, 1);
    uint32_t *stack = clf__malloc((nregions ? nregions : 1) * sizeof *stack);
    if (!seen || !stack) {
        ok = false; /* refusing a merge is always safe */
        goto done;
    }
    uint32_t top = 0;
    for (uint32_t i = 0; i < nm_deps; i++)
        if (m_deps[i] != r && !seen[m_deps[i]]) {
            seen[m_deps[i]] = 1;
            stack[top++] = m_deps[i];
        }
    while (top && ok) {
        uint32_t s = stack[--top];
        for (uint32_t i = 0; i < region_ndeps[s]; i++) {
            uint32_t d = region_deps[s][i];
            if (d == r) {
                ok = false;
                break;
            }
            if (!seen[d]) {
                seen[d] = 1;
                stack[top++] = d;
            }
        }
    }
done:
    clf__free(seen);
    clf__free(stack);
    return ok;
}

/* Materialised nodes that node m reads, found by walking its inputs through
 * inlined nodes. stamp/mark implement a visited set without clearing. */
static bool collect_deps(const clf_graph *g, const bool *mat, uint32_t m, uint32_t *stamp,
                         uint32_t mark, clf__u32vec *stack, clf__u32vec *out, clf__u32vec *gather_ix)
{
    stack->n = 0;
    const clf__node *mn = clf__graph_node(g, m);
    if (clf__op_reads_indices(mn->op) && mat[mn->inputs[1]] && !clf__u32vec_push(gather_ix, mn->inputs[1]))
        return false;
    for (int i = 0; i < mn->ninputs; i++)
        if (!clf__u32vec_push(stack, mn->inputs[i]))
            return false;
    while (stack->n) {
        uint32_t id = stack->v[--stack->n];
        if (stamp[id] == mark)
            continue;
        stamp[id] = mark;
        const clf__node *n = clf__graph_node(g, id);
        if (!clf__plan_is_computed(n))
            continue;
        if (mat[id]) {
            if (!clf__u32vec_push(out, id))
                return false;
            continue;
        }
        if (clf__op_reads_indices(n->op) && mat[n->inputs[1]] && !clf__u32vec_push(gather_ix, n->inputs[1]))
            return false;
        for (int i = 0; i < n->ninputs; i++)
            if (!clf__u32vec_push(stack, n->inputs[i]))
                return false;
    }
    return true;
}

/* Most pointwise ops a GEMM recomputes in its operand loads: they run once
 * per tile that loads the element, not once per element. */
#define MAX_PROLOGUE_OPS 16

/* Whether n is a constant of more than one axis longer than 1 (a table,
 * not a scalar or a vector: a bias). */
static bool constant_table(const clf__node *n)
{
    int k = 0;
    for (int d = 0; d < n->rank; d++)
        k += n->shape[d] > 1;
    return n->op == CLF__OP_CONSTANT && k > 1;
}

/* Whether attention's loads may compute an operand of product mm (its
 * scores or its output) from parts of a larger product through scalars and
 * vectors (GPU forms: f32 operands only; not in a graph whose sizes vary;
 * below). */
static bool attention_reads_parts(bool gpu, bool sizes_vary, const clf__node *mm)
{
    return !sizes_vary && (!gpu || mm->dtype == CLF_F32);
}

/* Scores (batch x heads x queries x keys) up to which attention's loads
 * compute an operand from any parts of a product, tables too (a query's
 * rotation): they load K again for each block of queries (each block of 4
 * on CPUs), so what they recompute grows with the scores, where a kernel
 * of its own costs a launch (4-7 us through NVIDIA's OpenCL). Not for
 * 16-bit operands on GPUs: the tensor-core form's loads through such
 * prologues have not run on a GPU. */
#define SMALL_ATTENTION_SCORES 65536

/* Whether a prologue may read parts of a product larger than its operand. */
typedef enum parts_rule {
    PARTS_NONE,
    PARTS_ANY,
    PARTS_VECTORS, /* where it reads no constant of more than one axis longer than 1 */
} parts_rule;

/* The parts rule of attention's loads of an operand of product mm, whose
 * scores are scores (the attention_reads_parts and SMALL_ATTENTION_SCORES
 * rules). */
static parts_rule attention_parts(bool gpu, bool sizes_vary, const clf__node *mm, const clf__node *scores)
{
    if (!attention_reads_parts(gpu, sizes_vary, mm))
        return PARTS_NONE;
    return clf__node_numel(scores) <= SMALL_ATTENTION_SCORES ? PARTS_ANY : PARTS_VECTORS;
}

/* Whether the GEMM consuming operand node op should compute it in its loads
 * (a prologue) rather than read it from a buffer. A prologue is refused when
 * it reads another GEMM's product (that GEMM's epilogue computes it once
 * instead; a product larger than the operand, whose parts the prologue
 * reads, is accepted where parts is PARTS_ANY, or PARTS_VECTORS and the
 * prologue reads no constant table of more than one axis: a merged
 * product's or one like GPT-2's q/k/v, which no epilogue can combine,
 * graph_merge_products.h), when it loads more than one tensor
 * of the operand's size (the tiles would read more bytes than one stored
 * operand), when it is long, and, where tiles reload operands (GPU forms),
 * when it applies a reduction's result: on the H200 the f16 prefill's q/k/v products with an
 * RMSNorm as prologue took 0.140 / 0.075 / 0.075 ms against 0.031 / 0.024
 * / 0.023 reading the norm's output (its own kernel: 0.012), the tensor-core
 * form staging A through registers instead of raw copies. With row_stats
 * (a small operand whose loads compute its rows' statistics,
 * fold_row_stats) it may read products and several operand-sized tensors
 * and be twice as long: what the blocks recompute is a few thousand
 * elements, where the kernel it saves is a launch. Returns NULL to
 * accept, else the reason. */
static const char *prologue_refusal(const clf_graph *g, const bool *mat, uint32_t op, bool tiles_reload,
                                    parts_rule parts, bool row_stats)
{
    while (clf__node_class_of(clf__graph_node(g, op)) == CLF__CLASS_MOVEMENT && !mat[op])
        op = clf__graph_node(g, op)->inputs[0];
    const clf__node *head = clf__graph_node(g, op);
    if (!clf__plan_is_computed(head) || mat[op])
        return NULL; /* a load through index arithmetic */
    int64_t numel = clf__node_numel(head);
    const char *why = NULL;
    clf__u32vec stack = {0}, seen = {0};
    int full = 0, ops = 0;
    bool reads_parts = false, reads_table = false;
    if (!clf__u32vec_push(&stack, op))
        return "out of memory";
    while (stack.n && !why) {
        uint32_t id = stack.v[--stack.n];
        if (clf__u32vec_has(&seen, id))
            continue;
        if (!clf__u32vec_push(&seen, id)) {
            why = "out of memory";
            break;
        }
        const clf__node *n = clf__graph_node(g, id);
        if (!clf__plan_is_computed(n) || mat[id]) {
            reads_parts |= n->op == CLF__OP_MATMUL;
            reads_table |= constant_table(n);
            if (n->op == CLF__OP_MATMUL && !row_stats && (clf__node_numel(n) <= numel || parts == PARTS_NONE))
                why = "it reads another GEMM's product (that GEMM's epilogue computes it once instead)";
            else if (tiles_reload && clf__node_class_of(n) == CLF__CLASS_REDUCTION)
                why = "it applies a reduction's result, which every tile would apply again (stored once instead)";
            else if (!row_stats && !clf__plan_is_literal(n) && clf__node_numel(n) * 2 > numel && ++full > 1)
                why = "it loads several operand-sized tensors (storing it once reads fewer bytes)";
            continue;
        }
        if (clf__node_class_of(n) == CLF__CLASS_POINTWISE && ++ops > (row_stats ? 2 : 1) * MAX_PROLOGUE_OPS)
            why = "it is too long to recompute for every tile";
        for (int i = 0; i < n->ninputs && !why; i++)
            if (!clf__u32vec_push(&stack, n->inputs[i]))
                why = "out of memory";
    }
    if (!why && reads_parts && reads_table && parts == PARTS_VECTORS)
        why = "it reads parts of another GEMM's product and a constant table, which a large attention would "
              "apply again for each block of queries (stored once instead)";
    clf__free(stack.v);
    clf__free(seen.v);
    return why;
}

/* Row statistics in a product's loads: a norm's REDUCE nodes over the
 * rows of a GEMM's first operand, which its prologue applies (mean and
 * variance, or the mean square), are computed by the GEMM kernel itself:
 * each block of the CPU form computes them for its rows before its sweep
 * (gemm_cpu.cl), each work-group of the GPU tiles and of the few-rows
 * form for its rows with its work-items (row_stats.cl; never the
 * tensor-core form, codegen_gemm.c), where a reduction kernel of its own
 * stored them (or the normalised operand) before: a kernel fewer a norm,
 * five of the tiny GPT-2's sixteen. Only for operands of at most
 * ROW_STATS_MAX_OPERAND elements (decode steps, small batches: every
 * block of columns computes its rows' statistics again), in a graph
 * whose sizes vary only of one row (its specialisations share programs
 * built for a few sizes: a decision by size would make plans no build
 * covered, where one row is a class of its own), at most
 * ROW_STATS_MAX reductions, each over the last axis of an input of the
 * operand's rows (clf__plan_row_stats_aligned), floats, read by nothing
 * but this prologue. */
#define ROW_STATS_MAX_OPERAND 8192
#define ROW_STATS_MAX 4

/* Whether materialised node id may be a row statistic of an operand of
 * numel elements whose rows are k long. */
static bool row_stat_candidate(const clf__plan_state *S, uint32_t id, int64_t numel, int64_t k)
{
    const clf__node *n = clf__graph_node(S->g, id);
    if (n->op != CLF__OP_REDUCE || S->is_out[id] || (S->attention_of && S->attention_of[id] >= 0))
        return false;
    const clf__reduce_kind kind = (clf__reduce_kind)n->attr.reduce.kind;
    const clf__node *in = clf__graph_node(S->g, n->inputs[0]);
    return !clf__reduce_is_arg(kind) && in->rank >= 1 && n->attr.reduce.mask == 1u << (in->rank - 1) &&
           in->shape[in->rank - 1] == k && clf__node_numel(in) == numel && clf__dtype_compute(in->dtype) == CLF_F32;
}

/* Index of id in v, or -1. */
static long u32vec_find(const clf__u32vec *v, uint32_t id)
{
    for (uint32_t i = 0; i < v->n; i++)
        if (v->v[i] == id)
            return (long)i;
    return -1;
}

/* Whether node id, walked in the prologue (nodes: those walked), reaches
 * one of the statistics below it (reach: per walked node, 0 unknown, 1
 * no, 2 yes). */
static bool reaches_stat(const clf_graph *g, const clf__u32vec *nodes, const clf__u32vec *stats, uint8_t *reach,
                         uint32_t id, int depth)
{
    long at = u32vec_find(nodes, id);
    if (at < 0)
        return false;
    if (depth >= 512)
        return true; /* not known: the readers are checked as if it did */
    if (reach[at])
        return reach[at] == 2;
    bool yes = u32vec_find(stats, id) >= 0;
    const clf__node *n = clf__graph_node(g, id);
    for (int i = 0; i < n->ninputs && !yes; i++)
        yes = reaches_stat(g, nodes, stats, reach, n->inputs[i], depth + 1);
    reach[at] = yes ? 2 : 1;
    return yes;
}

/* How many reads of node id are other products' (of products: the
 * needed MATMUL nodes no attention kernel computes; not mm) first
 * operands, or the movement ops between such a product and id that are
 * not in the prologue's nodes (whose reads the caller counts). */
static uint32_t other_products_reading(const clf__plan_state *S, const clf__u32vec *products, uint32_t mm,
                                       uint32_t id, const clf__u32vec *nodes)
{
    const clf_graph *g = S->g;
    uint32_t count = 0;
    for (uint32_t j = 0; j < products->n; j++) {
        const uint32_t p = products->v[j];
        if (p == mm)
            continue;
        for (uint32_t at = clf__graph_node(g, p)->inputs[0];;) {
            if (at == id) {
                count++;
                break;
            }
            const clf__node *m = clf__graph_node(g, at);
            if (clf__node_class_of(m) != CLF__CLASS_MOVEMENT || S->mat[at] || u32vec_find(nodes, at) >= 0)
                break;
            at = m->inputs[0];
        }
    }
    return count;
}

/* Computes the row statistics of product mm's first operand in its loads
 * where the rule above allows: clears their marks and returns true, or
 * returns false. Either way a statistic another product computes in its
 * loads that cannot be one here is stored again (that product then loads
 * it). readers: each node's consumers, graph outputs counted; products:
 * the needed MATMUL nodes no attention kernel computes. */
static bool fold_row_stats(clf__plan_state *S, const uint32_t *readers, const clf__u32vec *products, uint32_t mm)
{
    const clf_graph *g = S->g;
    const uint32_t op = clf__graph_node(g, mm)->inputs[0];
    const clf__node *a = clf__graph_node(g, op);
    const int64_t numel = clf__node_numel(a), k = a->rank ? a->shape[a->rank - 1] : 0;
    if (!readers || numel <= 0 || numel > ROW_STATS_MAX_OPERAND || k <= 0 || (S->sizes_vary && numel != k) ||
        !clf__plan_is_computed(a) || S->mat[op])
        return false;
    /* The prologue's nodes, walked through the candidates. */
    clf__u32vec nodes = {0}, stats = {0}, stack = {0};
    bool ok = clf__u32vec_push(&stack, op), folded = false;
    while (ok && stack.n) {
        const uint32_t id = stack.v[--stack.n];
        const clf__node *n = clf__graph_node(g, id);
        if (!clf__plan_is_computed(n) || u32vec_find(&nodes, id) >= 0)
            continue;
        if (S->mat[id] || (n->op == CLF__OP_REDUCE && !(S->attention_of && S->attention_of[id] >= 0))) {
            /* A statistic another product computes in its loads (of the
             * same operand) is one here too; one that cannot be is stored
             * again (that product then loads it). */
            if (stats.n == ROW_STATS_MAX || !row_stat_candidate(S, id, numel, k)) {
                S->mat[id] = true;
                continue; /* loaded */
            }
            ok = clf__u32vec_push(&stats, id);
        }
        ok = ok && clf__u32vec_push(&nodes, id);
        for (int i = 0; ok && i < n->ninputs; i++)
            ok = clf__u32vec_push(&stack, n->inputs[i]);
    }
    uint8_t *reach = ok && stats.n ? clf__calloc(nodes.n, 1) : NULL;
    /* Nothing but the prologue reads a statistic, or a node it reaches:
     * another kernel would have to compute them too. Other products whose
     * first operand is such a node (through movement ops: a norm's output
     * read by two products, as GPU tiles keep a gate and an up projection
     * apart) compute them in their loads as well. */
    for (uint32_t i = 0; reach && i < nodes.n; i++) {
        const uint32_t id = nodes.v[i];
        if (!reaches_stat(g, &nodes, &stats, reach, id, 0))
            continue;
        uint32_t in_prologue = id == op;
        for (uint32_t j = 0; j < nodes.n; j++) {
            const clf__node *n = clf__graph_node(g, nodes.v[j]);
            for (int e = 0; e < n->ninputs; e++)
                in_prologue += n->inputs[e] == id;
        }
        in_prologue += other_products_reading(S, products, mm, id, &nodes);
        if (in_prologue != readers[id]) {
            clf__free(reach);
            reach = NULL;
        }
    }
    if (reach) {
        for (uint32_t j = 0; j < stats.n; j++)
            S->mat[stats.v[j]] = false;
        qsort(stats.v, stats.n, sizeof *stats.v, cmp_u32);
        /* GPU tiles of a small product have few work-items, and each
         * statistic is a sweep along the rows, one after another, before
         * the product's: there one statistic (an RMSNorm's), not a mean
         * and then the variance around it. On the H100 the tiny GPT-2
         * with its layer norms in its products' loads ran 0.107 ms back to
         * back against 0.096 with the norms' own kernels, the tiny Llama
         * with its RMSNorms there 0.109 against 0.122 (same call). */
        const char *why = S->tiles_reload_operands && stats.n > 1 &&
                                  !clf__product_rows_form(clf__graph_node(g, mm), clf__graph_node(g, op))
                              ? "GPU tiles sweep the rows once a statistic before the product's, and this has more "
                                "than one (stored once instead)"
                              : prologue_refusal(g, S->mat, op, S->tiles_reload_operands, PARTS_ANY, true);
        if (!why && !clf__plan_row_stats_aligned(S, op, stats.v, stats.n))
            why = "a statistic is read at another row than the operand's";
        folded = !why;
        for (uint32_t j = 0; j < stats.n; j++) {
            S->mat[stats.v[j]] = !folded;
            if (folded)
                clf__log(CLF__LOG_FUSION, "node %u (%s): computed in matmul %u's loads of a, for each block's "
                         "rows (a statistic of its operand's rows)", stats.v[j],
                         clf__node_op_name(clf__graph_node(g, stats.v[j])), mm);
            else
                clf__log(CLF__LOG_FUSION, "node %u (%s): stored, not computed in matmul %u's loads of a: %s",
                         stats.v[j], clf__node_op_name(clf__graph_node(g, stats.v[j])), mm, why);
        }
    }
    clf__free(reach);
    clf__free(nodes.v);
    clf__free(stats.v);
    clf__free(stack.v);
    return folded;
}

/* Whether node r is what operand k of product mm loads, through movement
 * ops. */
static bool operand_leaf(const clf_graph *g, const clf__node *mm, uint32_t r)
{
    for (int k = 0; k < mm->ninputs; k++) {
        uint32_t id = mm->inputs[k];
        while (id != r && clf__node_class_of(clf__graph_node(g, id)) == CLF__CLASS_MOVEMENT)
            id = clf__graph_node(g, id)->inputs[0];
        if (id == r)
            return true;
    }
    return false;
}

bool clf__plan_epilogue_fits_attention(const clf_graph *g, const clf__plan *p, uint32_t k, bool sizes_vary)
{
    const clf__plan_kernel *K = &p->kernels[k];
    const clf__node *mm = clf__graph_node(g, K->anchor);
    if (K->kind != CLF__REGION_GEMM || !attention_reads_parts(true, sizes_vary, mm))
        return false;
    /* The prologue: the kernel's nodes the product reads (marked from the
     * product down; ops ascend, and a node's inputs come before it). What
     * it reads stays with the merged product (an RMSNorm computed in the
     * loads). The rest (the epilogue, and what the kernel computes beside
     * it from other products) reads only the product, its own nodes, the
     * product's operands, products it would merge with and literals or
     * vectors. */
    enum { PROLOGUE = 1, OWN = 2 };
    uint8_t *mark = clf__calloc(g->nnodes, 1);
    if (!mark)
        return false;
    mark[K->anchor] = PROLOGUE;
    for (uint32_t o = K->nops; o-- > 0;) {
        const clf__node *n = clf__graph_node(g, K->ops[o]);
        if (mark[K->ops[o]] == PROLOGUE)
            for (int i = 0; i < n->ninputs; i++)
                mark[n->inputs[i]] = PROLOGUE;
        else
            mark[K->ops[o]] = OWN;
    }
    bool fits = true;
    for (uint32_t o = 0; o < K->nops && fits; o++) {
        const clf__node *e = clf__graph_node(g, K->ops[o]);
        for (int i = 0; i < e->ninputs && fits && mark[K->ops[o]] == OWN; i++) {
            uint32_t id = e->inputs[i]; /* through movement ops (the product is none) */
            while (clf__node_class_of(clf__graph_node(g, id)) == CLF__CLASS_MOVEMENT)
                id = clf__graph_node(g, id)->inputs[0];
            const clf__node *n = clf__graph_node(g, id);
            const bool partner = n->op == CLF__OP_MATMUL && n->inputs[0] == mm->inputs[0];
            fits = id == K->anchor || mark[id] == OWN || partner || operand_leaf(g, mm, id) ||
                   (n->op == CLF__OP_CONSTANT && !constant_table(n));
        }
    }
    clf__free(mark);
    if (!fits)
        return false;
    for (uint32_t s = 0; s < K->nstores; s++)
        for (uint32_t j = 0; j < p->nkernels; j++) {
            const clf__plan_kernel *J = &p->kernels[j];
            if (j == k || J->kind == CLF__REGION_ATTENTION)
                continue;
            for (uint32_t r = 0; r < J->nreads; r++)
                if (J->reads[r] == K->stores[s].buffer)
                    return false;
        }
    return true;
}

void clf__plan_free(clf__plan *p)
{
    if (!p)
        return;
    for (uint32_t k = 0; k < p->nkernels; k++) {
        clf__free(p->kernels[k].stores);
        clf__free(p->kernels[k].reads);
        clf__free(p->kernels[k].ops);
    }
    clf__free(p->kernels);
    clf__free(p->buffers);
    clf__free(p->src_buffer);
    clf__free(p->producer);
    clf__free(p->stage);
    memset(p, 0, sizeof *p);
}

static const char *shape_str(char *buf, size_t cap, int rank, const int64_t *shape)
{
    size_t off = 0;
    off += (size_t)snprintf(buf + off, cap - off, "[");
    for (int i = 0; i < rank && off < cap; i++)
        off += (size_t)snprintf(buf + off, cap - off, i ? ",%lld" : "%lld", (long long)shape[i]);
    if (off < cap)
        snprintf(buf + off, cap - off, "]");
    return buf;
}

/* Orders regions so that every region comes after those it reads from
 * (depth-first post-order, ties by creation order). */
static bool order_regions(const clf__region *rs, uint32_t nr, uint32_t *order)
{
    uint8_t *state = clf__calloc(nr ? nr : 1, 1);
    uint32_t *stack = clf__malloc((nr ? nr : 1) * sizeof *stack);
    uint32_t *iter = clf__calloc(nr ? nr : 1, sizeof *iter);
    bool ok = state && stack && iter;
    uint32_t pos = 0;
    for (uint32_t root = 0; ok && root < nr; root++) {
        if (state[root])
            continue;
        uint32_t top = 0;
        stack[top++] = root;
        state[root] = 1;
        while (top) {
            uint32_t r = stack[top - 1];
            if (iter[r] < rs[r].deps.n) {
                uint32_t d = rs[r].deps.v[iter[r]++];
                if (state[d] == 0) {
                    state[d] = 1;
                    stack[top++] = d;
                } else if (state[d] == 1) {
                    ok = false; /* a cycle: the legality check failed us */
                    break;
                }
            } else {
                state[r] = 2;
                order[pos++] = r;
                top--;
            }
        }
    }
    clf__free(state);
    clf__free(stack);
    clf__free(iter);
    return ok;
}

clf_status clf__plan_state_init(clf__plan_state *S, const clf_graph *g, const clf__plan_options *opt,
                                clf__plan *out)
{
    uint32_t n = (uint32_t)g->nnodes, n1 = n ? n : 1;
    memset(S, 0, sizeof *S);
    memset(out, 0, sizeof *out);
    S->g = g;
    S->n = n;
    S->out = out;
    S->max_depth = opt && opt->max_fused_depth > 0 ? opt->max_fused_depth : DEFAULT_MAX_FUSED_DEPTH;
    S->fuse = !(opt && opt->disable_fusion);
    S->tiles_reload_operands = opt && opt->tiles_reload_operands;
    S->sizes_vary = opt && opt->sizes_vary;
    S->opt = opt;
    S->needed = clf__calloc(n1, sizeof *S->needed);
    S->mat = clf__calloc(n1, sizeof *S->mat);
    S->is_out = clf__calloc(n1, sizeof *S->is_out);
    S->cut = clf__calloc(n1, sizeof *S->cut);
    S->crosses = clf__calloc(n1, sizeof *S->crosses);
    S->depth = clf__calloc(n1, sizeof *S->depth);
    S->region_of = clf__malloc(n1 * sizeof *S->region_of);
    S->stamp = clf__calloc(n1, sizeof *S->stamp);
    out->nnodes = n;
    out->src_buffer = clf__malloc(n1 * sizeof *out->src_buffer);
    out->producer = clf__malloc(n1 * sizeof *out->producer);
    out->stage = clf__malloc(n1 * sizeof *out->stage);
    if (!out->stage || !S->needed || !S->mat || !S->is_out || !S->cut || !S->crosses || !S->depth ||
        !S->region_of || !S->stamp || !out->src_buffer || !out->producer)
        return CLF_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < n; i++) {
        S->region_of[i] = -1;
        out->stage[i] = -1;
        out->src_buffer[i] = -1;
        out->producer[i] = -1;
    }
    return CLF_OK;
}

void clf__plan_state_free(clf__plan_state *S)
{
    for (uint32_t r = 0; r < S->nr; r++) {
        clf__free(S->rs[r].members.v);
        clf__free(S->rs[r].deps.v);
    }
    clf__free(S->rs);
    clf__free(S->needed);
    clf__free(S->mat);
    clf__free(S->is_out);
    clf__free(S->cut);
    clf__free(S->crosses);
    clf__free(S->depth);
    clf__free(S->region_of);
    clf__free(S->stamp);
    clf__free(S->stack.v);
    clf__free(S->order);
    clf__free(S->attention_of);
    clf__free(S->matches);
    memset(S, 0, sizeof *S);
}

/* ---- Liveness: what the outputs need ------------------------------------ */

clf_status clf__plan_liveness(clf__plan_state *S)
{
    const clf_graph *g = S->g;
    for (size_t o = 0; o < g->noutputs; o++) {
        S->needed[g->outputs[o].node] = true;
        S->is_out[g->outputs[o].node] = true;
    }
    for (uint32_t i = S->n; i-- > 0;) {
        if (!S->needed[i])
            continue;
        const clf__node *nd = clf__graph_node(g, i);
        for (int k = 0; k < nd->ninputs; k++)
            S->needed[nd->inputs[k]] = true;
    }
    return CLF_OK;
}

/* ---- Materialisation: what lives in memory ------------------------------ */

/* Whether the GEMM that reads operand node op should read it as stored by
 * an attention kernel in op's own layout: op is the attention's output
 * moved by movement ops that permute elements (its heads merged back, O
 * [B, H, S, Dv] to [B, S, H * Dv], as a model's o_proj reads it), and
 * nothing else reads the output or the ops between. The attention kernel
 * then stores op instead of its output (a permuted store, region_kinds.c)
 * for the same bytes, and the GEMM's loads of op are plain row-major reads
 * (float4 tiles) instead of index arithmetic through a transpose.
 * readers: each node's consumers, graph outputs counted. */
static bool operand_stored_by_attention(const clf__plan_state *S, const uint32_t *readers, uint32_t op)
{
    const clf_graph *g = S->g;
    uint32_t id = op;
    for (;;) {
        const clf__node *n = clf__graph_node(g, id);
        if (clf__node_class_of(n) != CLF__CLASS_MOVEMENT || !clf__movement_permutes(g, n) || S->mat[id])
            return false;
        id = n->inputs[0];
        if (readers[id] != 1)
            return false;
        if (S->attention_of[id] == (int32_t)id)
            return true;
    }
}

/* Whether value id is a product's result, or computed from one by at most
 * depth pointwise or movement ops (a bias, a cast, a reshape): how a
 * layer's attention or MLP output reaches the residual sum. */
static bool from_product(const clf_graph *g, uint32_t id, int depth)
{
    const clf__node *n = clf__graph_node(g, id);
    if (n->op == CLF__OP_MATMUL)
        return true;
    const clf__node_class c = clf__node_class_of(n);
    if (depth == 0 || (c != CLF__CLASS_POINTWISE && c != CLF__CLASS_MOVEMENT))
        return false;
    for (int k = 0; k < n->ninputs; k++)
        if (from_product(g, n->inputs[k], depth - 1))
            return true;
    return false;
}

/* Whether a reader of value v (directly or through movement ops, at most
 * depth of them) adds it to a product's result: v is a residual stream's
 * value that the next residual sum reads, in another kernel than the norm
 * that reads it too. A post-LN sum (BERT: LN(x + attention)) is read only
 * by its norm's nodes, in one kernel, and has no such reader. Readers come
 * after v in the node order. */
static bool summed_with_product(const clf__plan_state *S, uint32_t v, int depth)
{
    const clf_graph *g = S->g;
    for (uint32_t j = v + 1; j < S->n; j++) {
        const clf__node *r = clf__graph_node(g, j);
        if (!S->needed[j])
            continue;
        const clf__node_class c = clf__node_class_of(r);
        for (int k = 0; k < r->ninputs; k++) {
            if (r->inputs[k] != v)
                continue;
            if (c == CLF__CLASS_MOVEMENT && depth > 0 && summed_with_product(S, j, depth - 1))
                return true;
            if (c != CLF__CLASS_POINTWISE)
                continue;
            for (int o = 0; o < r->ninputs; o++)
                if (r->inputs[o] != v && from_product(g, r->inputs[o], 3))
                    return true;
        }
    }
    return false;
}

clf_status clf__plan_materialise(clf__plan_state *S)
{
    const clf_graph *g = S->g;
    bool *mat = S->mat;
    uint32_t *readers = NULL;
    clf__u32vec products = {0}, deps = {0}, gather_ix = {0};
    clf_status st = CLF_OK;
    if (S->fuse) {
        readers = clf__calloc(S->n ? S->n : 1, sizeof *readers);
        if (!readers)
            return CLF_ERR_OUT_OF_MEMORY;
        for (uint32_t i = 0; i < S->n; i++)
            if (S->needed[i] && clf__graph_node(g, i)->op == CLF__OP_MATMUL &&
                !(S->attention_of && S->attention_of[i] >= 0) && !clf__u32vec_push(&products, i)) {
                clf__free(readers);
                clf__free(products.v);
                return CLF_ERR_OUT_OF_MEMORY;
            }
        for (uint32_t i = 0; i < S->n; i++)
            for (int k = 0; S->needed[i] && k < clf__graph_node(g, i)->ninputs; k++)
                readers[clf__graph_node(g, i)->inputs[k]]++;
        for (size_t o = 0; o < g->noutputs; o++)
            readers[g->outputs[o].node]++;
    }
    for (uint32_t i = 0; i < S->n; i++) {
        if (!S->needed[i])
            continue;
        const clf__node *nd = clf__graph_node(g, i);
        if (!clf__plan_is_computed(nd)) {
            mat[i] = S->is_out[i]; /* a leaf output still needs a copy kernel */
            continue;
        }
        /* An attention kernel computes everything from its scores to its
         * weights in registers (attention_match.c). */
        int32_t att = S->attention_of ? S->attention_of[i] : -1;
        if (att >= 0 && att != (int32_t)i) {
            S->depth[i] = 0;
            if (nd->op != CLF__OP_MATMUL)
                continue;
        }
        /* A GEMM computes its operands in its loads unless that costs
         * more than storing them (then they are stored by another kernel);
         * so do attention's products, except for the weights. */
        if (nd->op == CLF__OP_MATMUL && S->fuse) {
            for (int k = 0; k < nd->ninputs; k++) {
                uint32_t in = nd->inputs[k];
                if (att == (int32_t)i && k == 0)
                    continue;
                if (readers && S->nmatches && operand_stored_by_attention(S, readers, in)) {
                    mat[in] = true;
                    clf__log(CLF__LOG_FUSION, "node %u (%s): operand %c of matmul %u stored by the attention "
                             "kernel it permutes, in the layout the matmul reads",
                             in, clf__node_op_name(clf__graph_node(g, in)), k ? 'b' : 'a', i);
                    continue;
                }
                while (clf__node_class_of(clf__graph_node(g, in)) == CLF__CLASS_MOVEMENT && !mat[in])
                    in = clf__graph_node(g, in)->inputs[0];
                if (k == 0 && att < 0 && fold_row_stats(S, readers, &products, i)) {
                    clf__log(CLF__LOG_FUSION, "node %u (%s): fused into matmul %u's loads of a (prologue)", in,
                             clf__node_op_name(clf__graph_node(g, in)), i);
                    continue;
                }
                /* A merged product's parts are read in the loads of CPU
                 * forms (cheap there) and of GPU products of a few rows
                 * (every work-group of the few-rows form reads all of A);
                 * GPU tiles store them (the tensor-core form stages a
                 * prologue's operand through registers: slower).
                 * Attention's loads read parts through scalars and vectors
                 * (GPT-2's q and k, with their biases, scaled by
                 * sqrt(scale) each, slices of one product: a kernel fewer
                 * a layer); through tables (a query's rotation) only in
                 * a small attention (SMALL_ATTENTION_SCORES). On GPUs only
                 * for f32 operands: the tensor-core form stages K and V
                 * as they lie in memory where they are stored (on the
                 * H100, f16 B8 H16 S1024 D64 causal: 0.145 ms, 0.202 with
                 * K through a prologue, `bench_attention --split-scale`).
                 * And not where sizes vary: with a decode step's query
                 * rotation there (computed from the positions) each
                 * layer's attention source differed and every new length
                 * instantiated each (generate_kv's later new lengths 0.73
                 * -> 1.16 ms on PoCL), where a pointwise kernel of its own
                 * is cheap. */
                const clf__node *scores = att == (int32_t)i ? clf__graph_node(g, nd->inputs[0]) : nd;
                const parts_rule parts =
                    att >= 0 ? attention_parts(S->tiles_reload_operands, S->sizes_vary, nd, scores)
                    : !S->tiles_reload_operands || clf__product_few_rows(nd) ? PARTS_ANY
                                                                              : PARTS_NONE;
                const char *why = prologue_refusal(g, mat, nd->inputs[k], S->tiles_reload_operands, parts, false);
                if (why) {
                    mat[in] = true;
                    clf__log(CLF__LOG_FUSION, "node %u (%s): operand %c of matmul %u stored, not "
                             "fused as a prologue: %s", in, clf__node_op_name(clf__graph_node(g, in)),
                             k ? 'b' : 'a', i, why);
                } else if (clf__plan_is_computed(clf__graph_node(g, in)) && !mat[in]) {
                    clf__log(CLF__LOG_FUSION, "node %u (%s): fused into matmul %u's loads of %c (prologue)",
                             in, clf__node_op_name(clf__graph_node(g, in)), i, k ? 'b' : 'a');
                }
            }
        }
        /* A gather reads its indices from memory inside the index
         * arithmetic of its loads: computed indices are stored first. */
        if (clf__op_reads_indices(nd->op)) {
            uint32_t ix = clf__plan_gather_indices(g, nd);
            if (clf__plan_is_computed(clf__graph_node(g, ix)) && !mat[ix]) {
                mat[ix] = true;
                clf__log(CLF__LOG_FUSION, "node %u (%s): stored: gather %u reads its indices from memory", ix,
                         clf__node_op_name(clf__graph_node(g, ix)), i);
            }
        }
        if (att >= 0 && att != (int32_t)i)
            continue; /* attention's scores */
        /* Reductions and products anchor their kernels; outputs must be
         * stored. */
        if (S->is_out[i] || nd->op == CLF__OP_REDUCE || nd->op == CLF__OP_MATMUL || nd->op == CLF__OP_CACHE_WRITE ||
            (!S->fuse && clf__node_class_of(nd) == CLF__CLASS_POINTWISE)) {
            mat[i] = true;
            continue;
        }
        /* A value computed from several stored results (products', or
         * values stored by this rule; not reductions': a softmax's
         * exp(x - max) stays in its kernel), read more than once, and
         * added by a reader to a product's result is stored once: a
         * decoder's residual stream (h = x + attention + MLP, read by the
         * next norm and the next residual) was else summed again in every
         * reader, each layer reading every layer before it
         * (bench_decoder's sixth layer: 12 buffers a product's loads). The
         * product computing its last term stores it in its epilogue: no
         * kernel more. A sum that only its norm reads (post-LN) stays in
         * the norm's loads: stored, the norm's kernel loaded it back (the
         * tiny BERT on PoCL's 2 cores 7% slower). */
        if (readers && readers[i] > 1 && clf__node_class_of(nd) == CLF__CLASS_POINTWISE) {
            deps.n = gather_ix.n = 0;
            if (!collect_deps(g, mat, i, S->stamp, ++S->mark, &S->stack, &deps, &gather_ix)) {
                st = CLF_ERR_OUT_OF_MEMORY;
                break;
            }
            uint32_t stored = 0;
            for (uint32_t j = 0; j < deps.n; j++) {
                const clf__node *c = clf__graph_node(g, deps.v[j]);
                stored += c->op == CLF__OP_MATMUL || clf__node_class_of(c) == CLF__CLASS_POINTWISE;
            }
            if (stored >= 2 && summed_with_product(S, i, 4)) {
                mat[i] = true;
                clf__log(CLF__LOG_FUSION, "node %u (%s): stored: it reads several stored results and has %u readers",
                         i, clf__node_op_name(nd), readers[i]);
                S->depth[i] = 0;
                continue;
            }
        }
        int d = 1;
        for (int k = 0; k < nd->ninputs; k++) {
            uint32_t in = nd->inputs[k];
            if (clf__plan_is_computed(clf__graph_node(g, in)) && !mat[in] && S->depth[in] + 1 > d)
                d = S->depth[in] + 1;
        }
        if (d > S->max_depth) {
            mat[i] = true;
            S->cut[i] = true;
            clf__log(CLF__LOG_FUSION, "node %u (%s): cut into a buffer: fused chain depth %d > %d",
                     i, clf__node_op_name(nd), d, S->max_depth);
            d = 0;
        }
        S->depth[i] = d;
    }
    clf__free(readers);
    clf__free(products.v);
    clf__free(deps.v);
    clf__free(gather_ix.v);
    return st;
}

/* ---- Growth: regions, in topological order of their first member -------- */

/* The region materialised node m joins, or -1: the most recent region whose
 * kind takes m and where the merge is legal. mregions are the regions m
 * reads from, mgix the materialised gather indices it evaluates. */
static int32_t choose_region(clf__plan_state *S, uint32_t m, const clf__u32vec *mregions, const clf__u32vec *mgix,
                             const uint32_t **rdeps, uint32_t *rndeps)
{
    const clf_graph *g = S->g;
    const clf__node *mn = clf__graph_node(g, m);
    char sbuf[128];
    const clf__region_kind kind = clf__region_kind_of_anchor(S, m);
    const bool own_kind = clf__region_kinds[kind].own_kind;
    for (uint32_t r = 0; r < S->nr; r++) {
        rdeps[r] = S->rs[r].deps.v;
        rndeps[r] = S->rs[r].deps.n;
    }
    /* Prefer the most recent region: it is most likely to share the values
     * m reads. */
    for (uint32_t r = S->nr; r-- > 0;) {
        const clf__region_rules *K = &clf__region_kinds[S->rs[r].kind];
        if (own_kind && S->rs[r].kind != kind)
            continue;
        clf__role ro = S->rs[r].closed ? CLF__ROLE_NONE : K->role(g, &S->rs[r], mn);
        if (ro == CLF__ROLE_NONE)
            continue;
        bool computes_ix = false;
        for (uint32_t i = 0; i < mgix->n; i++)
            computes_ix = computes_ix || S->region_of[mgix->v[i]] == (int32_t)r;
        if (computes_ix) {
            clf__log(CLF__LOG_FUSION,
                     "node %u (%s): not fused into region %u: a gather it evaluates reads its "
                     "indices from memory, and that region computes them",
                     m, clf__node_op_name(mn), r);
            continue;
        }
        int st_m = 0;
        const char *why = K->refusal ? K->refusal(S, r, m, ro, &st_m) : NULL;
        if (why) {
            clf__log(CLF__LOG_FUSION, "node %u (%s): not fused into %s region %u: %s", m, clf__node_op_name(mn),
                     K->name, r, why);
            continue;
        }
        if (clf__fusion_legal(r, mregions->v, mregions->n, S->nr, rdeps, rndeps)) {
            if (ro == CLF__ROLE_REDUCE)
                S->out->stage[m] = (int8_t)st_m;
            if (clf__log_enabled(CLF__LOG_FUSION)) /* the shape's text is not made for nothing */
                clf__log(CLF__LOG_FUSION, "node %u (%s %s): fused into kernel region %u", m, clf__node_op_name(mn),
                         shape_str(sbuf, sizeof sbuf, mn->rank, mn->shape), r);
            return (int32_t)r;
        }
        clf__log(CLF__LOG_FUSION,
                 "node %u (%s): not fused into region %u: it reads that region through "
                 "another kernel (a cycle)",
                 m, clf__node_op_name(mn), r);
    }
    return -1;
}

/* A new region started by materialised node m; -1 when out of memory. */
static int32_t start_region(clf__plan_state *S, uint32_t m)
{
    if (S->nr == S->cap_r) {
        uint32_t cap = S->cap_r ? S->cap_r * 2 : 8;
        clf__region *p = clf__realloc(S->rs, cap * sizeof *p);
        if (!p)
            return -1;
        S->rs = p;
        S->cap_r = cap;
    }
    const clf__node *mn = clf__graph_node(S->g, m);
    clf__region *R = &S->rs[S->nr];
    memset(R, 0, sizeof *R);
    R->kind = clf__region_kind_of_anchor(S, m);
    clf__region_kinds[R->kind].start(S, R, m);
    /* Joining a cut's kernel would grow the chain the cut bounds and store
     * the cut for no reader. */
    R->closed = S->cut[m];
    char sbuf[128];
    if (clf__log_enabled(CLF__LOG_FUSION))
        clf__log(CLF__LOG_FUSION, "node %u (%s %s): starts kernel region %u%s", m, clf__node_op_name(mn),
                 shape_str(sbuf, sizeof sbuf, mn->rank, mn->shape), S->nr, S->fuse ? "" : " (fusion disabled)");
    return (int32_t)S->nr++;
}

clf_status clf__plan_grow(clf__plan_state *S)
{
    const clf_graph *g = S->g;
    clf_status st = CLF_ERR_OUT_OF_MEMORY;
    clf__u32vec mdeps = {0}, mregions = {0}, mgix = {0};
    const uint32_t **rdeps = NULL;
    uint32_t *rndeps = NULL;
    for (uint32_t m = 0; m < S->n; m++) {
        if (!S->mat[m])
            continue;
        mdeps.n = 0;
        mregions.n = 0;
        mgix.n = 0;
        if (!collect_deps(g, S->mat, m, S->stamp, ++S->mark, &S->stack, &mdeps, &mgix))
            goto done;
        for (uint32_t i = 0; i < mdeps.n; i++) {
            uint32_t r = (uint32_t)S->region_of[mdeps.v[i]];
            if (!clf__u32vec_has(&mregions, r) && !clf__u32vec_push(&mregions, r))
                goto done;
        }
        int32_t chosen = -1;
        /* A cut starts a kernel: merged upward, it would inline the chain
         * it exists to cut. */
        if (S->fuse && !S->cut[m]) {
            clf__free(rdeps);
            clf__free(rndeps);
            rdeps = clf__malloc((S->nr ? S->nr : 1) * sizeof *rdeps);
            rndeps = clf__malloc((S->nr ? S->nr : 1) * sizeof *rndeps);
            if (!rdeps || !rndeps)
                goto done;
            chosen = choose_region(S, m, &mregions, &mgix, rdeps, rndeps);
        }
        if (chosen < 0 && (chosen = start_region(S, m)) < 0)
            goto done;
        clf__region *R = &S->rs[chosen];
        if (!clf__u32vec_push(&R->members, m))
            goto done;
        for (uint32_t i = 0; i < mregions.n; i++)
            if (mregions.v[i] != (uint32_t)chosen && !clf__u32vec_has(&R->deps, mregions.v[i]) &&
                !clf__u32vec_push(&R->deps, mregions.v[i]))
                goto done;
        S->region_of[m] = chosen;
    }
    st = CLF_OK;
done:
    clf__free(mdeps.v);
    clf__free(mregions.v);
    clf__free(mgix.v);
    clf__free(rdeps);
    clf__free(rndeps);
    return st;
}

/* ---- Ordering ----------------------------------------------------------- */

clf_status clf__plan_order(clf__plan_state *S, char *err, size_t errlen)
{
    S->order = clf__malloc((S->nr ? S->nr : 1) * sizeof *S->order);
    if (!S->order)
        return CLF_ERR_OUT_OF_MEMORY;
    if (!order_regions(S->rs, S->nr, S->order)) {
        snprintf(err, errlen, "planner: kernel regions form a cycle");
        return CLF_ERR_INTERNAL;
    }
    return CLF_OK;
}

/* ---- Buffers ------------------------------------------------------------ */

/* Which materialised values another kernel reads: only those need an
 * intermediate buffer (a reduction used only in its own kernel stays in
 * registers). */
static bool find_crossings(clf__plan_state *S)
{
    const clf_graph *g = S->g;
    clf__u32vec *stack = &S->stack;
    for (uint32_t r = 0; r < S->nr; r++) {
        ++S->mark;
        stack->n = 0;
        for (uint32_t j = 0; j < S->rs[r].members.n; j++) {
            const clf__node *mn = clf__graph_node(g, S->rs[r].members.v[j]);
            for (int i = 0; i < mn->ninputs; i++)
                if (!clf__u32vec_push(stack, mn->inputs[i]))
                    return false;
        }
        while (stack->n) {
            uint32_t id = stack->v[--stack->n];
            if (S->stamp[id] == S->mark)
                continue;
            S->stamp[id] = S->mark;
            const clf__node *nd = clf__graph_node(g, id);
            if (!clf__plan_is_computed(nd))
                continue;
            if (S->mat[id] && S->region_of[id] != (int32_t)r) {
                S->crosses[id] = true;
                continue;
            }
            for (int i = 0; i < nd->ninputs; i++)
                if (!clf__u32vec_push(stack, nd->inputs[i]))
                    return false;
        }
    }
    return true;
}

/* Every input, every output, then constants and intermediates as kernels
 * need them. */
clf_status clf__plan_buffers(clf__plan_state *S)
{
    const clf_graph *g = S->g;
    clf__plan *out = S->out;
    if (!find_crossings(S))
        return CLF_ERR_OUT_OF_MEMORY;
    uint32_t cap_b = (uint32_t)(g->ninputs + g->noutputs) + S->n + 1;
    out->buffers = clf__calloc(cap_b, sizeof *out->buffers);
    if (!out->buffers)
        return CLF_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < g->ninputs; i++) {
        const clf__node *nd = clf__graph_node(g, g->inputs[i]);
        out->buffers[out->nbuffers] = (clf__plan_buffer){
            CLF__BUF_INPUT, g->inputs[i], (uint32_t)i,
            (uint64_t)clf__node_numel(nd) * clf_dtype_size(nd->dtype), 0};
        out->src_buffer[g->inputs[i]] = (int32_t)out->nbuffers++;
    }
    for (size_t o = 0; o < g->noutputs; o++) {
        uint32_t id = g->outputs[o].node;
        const clf__node *nd = clf__graph_node(g, id);
        out->buffers[out->nbuffers] = (clf__plan_buffer){
            CLF__BUF_OUTPUT, id, (uint32_t)o, (uint64_t)clf__node_numel(nd) * clf_dtype_size(nd->dtype), 0};
        /* A cache write is stored in its cache input's buffer, and read
         * from there. */
        if (nd->op == CLF__OP_CACHE_WRITE) {
            int32_t in = out->src_buffer[nd->inputs[0]];
            out->buffers[out->nbuffers].in_place = (uint32_t)in + 1;
            out->src_buffer[id] = in;
        }
        /* A computed output is read back from where it is stored; a
         * constant stays a literal or gets its own buffer below (read from
         * its output buffer, the copy kernel read what it was writing). */
        if (out->src_buffer[id] < 0 && clf__plan_is_computed(nd))
            out->src_buffer[id] = (int32_t)out->nbuffers;
        out->nbuffers++;
    }
    uint32_t nconst = 0, ninter = 0;
    for (uint32_t i = 0; i < S->n; i++) {
        const clf__node *nd = clf__graph_node(g, i);
        if (!S->needed[i] || out->src_buffer[i] >= 0)
            continue;
        uint64_t bytes = (uint64_t)clf__node_numel(nd) * clf_dtype_size(nd->dtype);
        if (nd->op == CLF__OP_CONSTANT && !clf__plan_is_literal(nd)) {
            out->buffers[out->nbuffers] = (clf__plan_buffer){CLF__BUF_CONSTANT, i, nconst++, bytes, 0};
            out->src_buffer[i] = (int32_t)out->nbuffers++;
        } else if (S->mat[i] && clf__plan_is_computed(nd) && S->crosses[i]) {
            out->buffers[out->nbuffers] = (clf__plan_buffer){CLF__BUF_INTERMEDIATE, i, ninter++, bytes, 0};
            out->src_buffer[i] = (int32_t)out->nbuffers++;
        }
    }
    return CLF_OK;
}

/* ---- Kernels: stores, reads and the ops each evaluates ------------------ */

static clf_status fill_kernel(clf__plan_state *S, uint32_t k)
{
    const clf_graph *g = S->g;
    clf__plan *out = S->out;
    uint32_t rid = S->order[k];
    const clf__region *R = &S->rs[rid];
    clf__plan_kernel *K = &out->kernels[k];
    clf__u32vec reads = {0}, ops = {0}, *stack = &S->stack;
    K->rank = R->rank;
    memcpy(K->shape, R->shape, sizeof K->shape);
    K->kind = R->kind;
    K->anchor = R->anchor;
    if (R->kind == CLF__REGION_ATTENTION)
        K->attention = R->attention;
    K->reduce_mask = R->mask;
    K->rows = K->rlen = 1;
    for (int d = 0; d < R->rank; d++)
        *(((R->mask >> d) & 1u) ? &K->rlen : &K->rows) *= R->shape[d];
    K->numel = R->kind == CLF__REGION_REDUCTION ? K->rows : K->rows * K->rlen;
    uint32_t cap_s = R->members.n + (uint32_t)g->noutputs;
    K->stores = clf__malloc(cap_s * sizeof *K->stores);
    if (!K->stores)
        return CLF_ERR_OUT_OF_MEMORY;
    const clf__region_rules *kind = &clf__region_kinds[R->kind];
    for (uint32_t j = 0; j < R->members.n; j++) {
        uint32_t m = R->members.v[j], from = m;
        out->producer[m] = (int32_t)k;
        for (uint32_t b = 0; b < out->nbuffers; b++) {
            const clf__plan_buffer *B = &out->buffers[b];
            if (B->node != m || (B->kind != CLF__BUF_OUTPUT && B->kind != CLF__BUF_INTERMEDIATE))
                continue;
            uint32_t to = B->in_place ? B->in_place - 1 : b;
            if (from == m && kind->store_from) {
                from = kind->store_from(S, rid, m);
                if (from == UINT32_MAX)
                    return CLF_ERR_INTERNAL; /* growth admitted m by this rule */
                if (from != m && R->kind == CLF__REGION_CACHE_WRITE)
                    clf__log(CLF__LOG_FUSION,
                             "node %u (cache_write): kernel %u stores its new entries, node %u (%s), in place in "
                             "the cache input's buffer",
                             m, k, from, clf__node_op_name(clf__graph_node(g, from)));
                else if (from != m)
                    clf__log(CLF__LOG_FUSION,
                             "node %u (%s): stored by kernel %u as node %u (%s) at permuted positions: the "
                             "movement ops between them permute elements (no copy kernel)",
                             m, clf__node_op_name(clf__graph_node(g, m)), k, from,
                             clf__node_op_name(clf__graph_node(g, from)));
            }
            K->stores[K->nstores++] = (clf__plan_store){m, to, from};
        }
    }
    /* Walk from the members through what this kernel computes. */
    ++S->mark;
    stack->n = 0;
    for (uint32_t j = 0; j < R->members.n; j++)
        if (!clf__u32vec_push(stack, R->members.v[j]))
            goto fail;
    while (stack->n) {
        uint32_t id = stack->v[--stack->n];
        if (S->stamp[id] == S->mark)
            continue;
        S->stamp[id] = S->mark;
        const clf__node *nd = clf__graph_node(g, id);
        bool here = S->region_of[id] == (int32_t)rid;
        if (!clf__plan_is_computed(nd) || (S->mat[id] && !here)) {
            if (out->src_buffer[id] >= 0 && !clf__u32vec_push(&reads, (uint32_t)out->src_buffer[id]))
                goto fail;
            continue;
        }
        if (!clf__u32vec_push(&ops, id))
            goto fail;
        /* A cache write's kernel reads its new entries, not the cache. */
        for (int i = nd->op == CLF__OP_CACHE_WRITE; i < nd->ninputs; i++)
            if (!clf__u32vec_push(stack, nd->inputs[i]))
                goto fail;
    }
    if (reads.n)
        qsort(reads.v, reads.n, sizeof *reads.v, cmp_u32);
    if (ops.n)
        qsort(ops.v, ops.n, sizeof *ops.v, cmp_u32);
    K->reads = reads.v;
    K->nreads = reads.n;
    K->ops = ops.v;
    K->nops = ops.n;
    return CLF_OK;
fail:
    clf__free(reads.v);
    clf__free(ops.v);
    return CLF_ERR_OUT_OF_MEMORY;
}

clf_status clf__plan_kernels(clf__plan_state *S)
{
    S->out->kernels = clf__calloc(S->nr ? S->nr : 1, sizeof *S->out->kernels);
    if (!S->out->kernels)
        return CLF_ERR_OUT_OF_MEMORY;
    S->out->nkernels = S->nr;
    for (uint32_t k = 0; k < S->nr; k++) {
        clf_status st = fill_kernel(S, k);
        if (st != CLF_OK)
            return st;
    }
    return CLF_OK;
}

/* ---- Statistics --------------------------------------------------------- */

void clf__plan_count(clf__plan_state *S)
{
    clf__plan *out = S->out;
    for (uint32_t k = 0; k < out->nkernels; k++) {
        const clf__plan_kernel *K = &out->kernels[k];
        out->stats.kernels++;
        if (K->numel == 0)
            continue;
        out->stats.launches++;
        out->stats.tensor_reads += K->nreads;
        out->stats.tensor_writes += K->nstores;
        for (uint32_t i = 0; i < K->nreads; i++)
            out->stats.bytes_read += out->buffers[K->reads[i]].bytes;
        for (uint32_t i = 0; i < K->nstores; i++) {
            /* A cache write writes its new entries in place, not the cache. */
            const clf__node *sn = clf__graph_node(S->g, K->stores[i].node);
            out->stats.bytes_written +=
                sn->op == CLF__OP_CACHE_WRITE
                    ? (uint64_t)clf__node_numel(clf__graph_node(S->g, sn->inputs[1])) * clf_dtype_size(sn->dtype)
                    : out->buffers[K->stores[i].buffer].bytes;
        }
    }
    clf__log(CLF__LOG_SCHEDULE, "plan: %u kernels, %llu launches, %llu tensor reads, %llu writes",
             out->nkernels, (unsigned long long)out->stats.launches,
             (unsigned long long)out->stats.tensor_reads,
             (unsigned long long)out->stats.tensor_writes);
}

/* The rules of cache writes (graph.h, clf_cache_write): each is one graph
 * output, and nothing else the outputs need reads its cache input (the
 * write changes it in place, so another reader would see it before or
 * after the write by the order of kernels). */
static clf_status check_cache_writes(const clf_graph *g, const bool *needed, char *err, size_t errlen)
{
    for (uint32_t i = 0; i < g->nnodes; i++) {
        const clf__node *w = clf__graph_node(g, i);
        if (w->op != CLF__OP_CACHE_WRITE)
            continue;
        const clf__node *c = clf__graph_node(g, w->inputs[0]);
        size_t outs = 0;
        for (size_t o = 0; o < g->noutputs; o++)
            outs += g->outputs[o].node == i;
        if (outs > 1) {
            snprintf(err, errlen, "cache write %u into input '%s' is %zu graph outputs; it may be one", i, c->name,
                     outs);
            return CLF_ERR_INVALID_ARGUMENT;
        }
        if (!outs) {
            snprintf(err, errlen,
                     "cache write %u into input '%s' is not a graph output: declare it one, bound to the input's "
                     "buffer (clf_cache_write)",
                     i, c->name);
            return CLF_ERR_INVALID_ARGUMENT;
        }
        for (uint32_t j = 0; j < g->nnodes; j++) {
            const clf__node *r = clf__graph_node(g, j);
            for (int k = 0; j != i && needed[j] && k < r->ninputs; k++)
                if (r->inputs[k] == w->inputs[0]) {
                    snprintf(err, errlen,
                             "input '%s' is the cache of cache write %u and is read by node %u (%s) too: read it "
                             "through the write's result",
                             c->name, i, j, clf__node_op_name(r));
                    return CLF_ERR_INVALID_ARGUMENT;
                }
        }
        for (size_t o = 0; o < g->noutputs; o++)
            if (g->outputs[o].node == w->inputs[0]) {
                snprintf(err, errlen, "input '%s' is the cache of cache write %u and output '%s' too", c->name, i,
                         g->outputs[o].name);
                return CLF_ERR_INVALID_ARGUMENT;
            }
    }
    return CLF_OK;
}

clf_status clf__plan_build(const clf_graph *g, const clf__plan_options *opt, clf__plan *out, char *err,
                           size_t errlen)
{
    clf__plan_state S;
    if (errlen)
        err[0] = '\0';
    clf_status st = clf__plan_state_init(&S, g, opt, out);
    if (st == CLF_OK)
        st = clf__plan_liveness(&S);
    if (st == CLF_OK)
        st = check_cache_writes(g, S.needed, err, errlen);
    if (st == CLF_OK)
        st = clf__plan_find_attention(&S);
    if (st == CLF_OK)
        st = clf__plan_materialise(&S);
    if (st == CLF_OK)
        st = clf__plan_grow(&S);
    if (st == CLF_OK)
        st = clf__plan_order(&S, err, errlen);
    if (st == CLF_OK)
        st = clf__plan_buffers(&S);
    if (st == CLF_OK)
        st = clf__plan_kernels(&S);
    if (st == CLF_OK)
        clf__plan_count(&S);
    if (st == CLF_ERR_OUT_OF_MEMORY)
        snprintf(err, errlen, "planner: out of memory");
    else if (st == CLF_ERR_INTERNAL && errlen && !err[0])
        snprintf(err, errlen, "planner: a kernel cannot store a value its region admitted");
    if (st != CLF_OK)
        clf__plan_free(out);
    clf__plan_state_free(&S);
    return st;
}
