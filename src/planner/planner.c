/* Fusion planner, first version: vertical fusion of pointwise and movement
 * ops, several outputs of one shape from one kernel.
 *
 * Every value that must live in memory is "materialised": graph outputs,
 * and with fusion off every pointwise op; with fusion on a chain deeper than
 * max_fused_depth is cut by a buffer so that kernels stay a sane size.
 * Everything else is inlined into each kernel that needs it, movement ops
 * as index arithmetic. Materialised values of one shape share a kernel when
 * that is legal (see clf__fusion_legal). */
#include "planner/planner.h"
#include "util/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/index_algebra.h"
#include "util/log.h"

#define DEFAULT_MAX_FUSED_DEPTH 64

typedef struct u32vec {
    uint32_t *v;
    uint32_t n, cap;
} u32vec;

static bool vec_push(u32vec *a, uint32_t x)
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

static bool vec_has(const u32vec *a, uint32_t x)
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

typedef struct region {
    bool reduction;  /* a reduction region: shape is the reduced input's, mask its reduced axes */
    bool gemm;       /* a GEMM region: shape is the product's; anchor is its MATMUL node */
    uint32_t anchor;
    uint32_t mask;
    int rank;
    int64_t shape[CLF_MAX_RANK];
    u32vec members; /* materialised nodes stored by this region */
    u32vec deps;    /* regions it reads from */
    bool closed;    /* started by a depth cut: nothing joins it */
} region;

bool clf__plan_is_literal(const clf__node *n)
{
    return n->op == CLF__OP_CONSTANT && clf__node_numel(n) == 1;
}

static bool is_computed(const clf__node *n) { return clf__node_class_of(n) != CLF__CLASS_LEAF; }

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

static bool same_shape(int ra, const int64_t *a, int rb, const int64_t *b)
{
    if (ra != rb)
        return false;
    for (int i = 0; i < ra; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

/* Materialised nodes that node m reads, found by walking its inputs through
 * inlined nodes. stamp/mark implement a visited set without clearing. */
static bool collect_deps(const clf_graph *g, const bool *mat, uint32_t m, uint32_t *stamp,
                         uint32_t mark, u32vec *stack, u32vec *out, u32vec *gather_ix)
{
    stack->n = 0;
    const clf__node *mn = clf__graph_node(g, m);
    if (clf__op_reads_indices(mn->op) && mat[mn->inputs[1]] && !vec_push(gather_ix, mn->inputs[1]))
        return false;
    for (int i = 0; i < mn->ninputs; i++)
        if (!vec_push(stack, mn->inputs[i]))
            return false;
    while (stack->n) {
        uint32_t id = stack->v[--stack->n];
        if (stamp[id] == mark)
            continue;
        stamp[id] = mark;
        const clf__node *n = clf__graph_node(g, id);
        if (!is_computed(n))
            continue;
        if (mat[id]) {
            if (!vec_push(out, id))
                return false;
            continue;
        }
        if (clf__op_reads_indices(n->op) && mat[n->inputs[1]] && !vec_push(gather_ix, n->inputs[1]))
            return false;
        for (int i = 0; i < n->ninputs; i++)
            if (!vec_push(stack, n->inputs[i]))
                return false;
    }
    return true;
}

/* How a materialised node would sit in a region: not at all, as a
 * pointwise kernel's store, over a reduction's full space (a prologue or
 * epilogue value), or once per reduced row. */
typedef enum role { ROLE_NONE, ROLE_POINTWISE, ROLE_FULL, ROLE_ROW, ROLE_REDUCE } role;

static role role_in(const clf_graph *g, const region *R, const clf__node *m)
{
    if (m->op == CLF__OP_MATMUL)
        return ROLE_NONE; /* a product anchors its own kernel */
    if (R->gemm) {
        /* The epilogue stores element i of each member at the product's
         * element i: any member of the same size (a reshape of the product
         * too) fits, if it reads the product only there (gemm_aligned). */
        int64_t numel = 1;
        for (int d = 0; d < R->rank; d++)
            numel *= R->shape[d];
        /* An empty product has no element to store at: nothing joins it. */
        return m->op != CLF__OP_REDUCE && numel > 0 && clf__node_numel(m) == numel ? ROLE_POINTWISE : ROLE_NONE;
    }
    if (!R->reduction)
        return m->op != CLF__OP_REDUCE && same_shape(R->rank, R->shape, m->rank, m->shape)
                   ? ROLE_POINTWISE
                   : ROLE_NONE;
    if (m->op == CLF__OP_REDUCE) {
        const clf__node *in = clf__graph_node(g, m->inputs[0]);
        return m->attr.reduce.mask == R->mask && same_shape(R->rank, R->shape, in->rank, in->shape)
                   ? ROLE_REDUCE
                   : ROLE_NONE;
    }
    if (same_shape(R->rank, R->shape, m->rank, m->shape))
        return ROLE_FULL;
    int64_t keep[CLF_MAX_RANK], drop[CLF_MAX_RANK];
    int nd = 0;
    for (int d = 0; d < R->rank; d++) {
        bool red = (R->mask >> d) & 1u;
        keep[d] = red ? 1 : R->shape[d];
        if (!red)
            drop[nd++] = R->shape[d];
    }
    if (same_shape(R->rank, keep, m->rank, m->shape) || same_shape(nd, drop, m->rank, m->shape))
        return ROLE_ROW;
    return ROLE_NONE;
}

/* Walks what a kernel would inline below a node, checking the rule that
 * makes a reduction's result usable in registers: every read of one of the
 * region's reductions is at the current row. Also finds the reduction stage
 * (1 + the deepest stage read). */
typedef struct align_walk {
    const clf_graph *g;
    const bool *mat;
    const int32_t *region_of;
    const int8_t *stage;
    int32_t region;
    clf__ixgen ix;
    clf__strbuf code, key;
    clf__ix x;
    char **seen;
    size_t nseen, cap_seen;
    int max_stage;
    bool ok;
} align_walk;

size_t clf__align_walk_cap = (size_t)1 << 16;

static bool seen_before(align_walk *w, uint32_t id, const clf__view *v, int rank)
{
    clf__sb_clear(&w->key);
    clf__sb_printf(&w->key, "n%u:", id);
    clf__view_key(v, rank, &w->key);
    const char *k = clf__sb_str(&w->key);
    for (size_t i = 0; i < w->nseen; i++)
        if (strcmp(w->seen[i], k) == 0)
            return true;
    if (w->nseen == w->cap_seen) {
        size_t cap = w->cap_seen ? w->cap_seen * 2 : 64;
        if (cap > clf__align_walk_cap && w->cap_seen < clf__align_walk_cap)
            cap = clf__align_walk_cap;
        char **p = w->nseen >= clf__align_walk_cap ? NULL : clf__realloc(w->seen, cap * sizeof *p);
        if (!p) { /* too big to check, or out of memory: refuse the merge */
            w->ok = false;
            return true;
        }
        w->seen = p;
        w->cap_seen = cap;
    }
    w->seen[w->nseen] = clf__strdup(k);
    if (!w->seen[w->nseen]) {
        w->ok = false;
        return true;
    }
    w->nseen++;
    return false;
}

static void walk_inputs(align_walk *w, const clf__node *n, const clf__view *v);

static void walk_node(align_walk *w, uint32_t id, const clf__view *v)
{
    const clf__node *n = clf__graph_node(w->g, id);
    if (!w->ok || !is_computed(n) || (w->mat[id] && w->region_of[id] != w->region))
        return; /* a leaf or another kernel's value: a load */
    if (seen_before(w, id, v, n->rank))
        return;
    if (n->op == CLF__OP_REDUCE || n->op == CLF__OP_MATMUL) {
        clf__ix at = clf__view_linear(&w->ix, v, n->rank, n->shape);
        if (!clf__ix_same(&at, &w->x))
            w->ok = false;
        else if (n->op == CLF__OP_REDUCE && w->stage[id] + 1 > w->max_stage)
            w->max_stage = w->stage[id] + 1;
        return;
    }
    walk_inputs(w, n, v);
}

static void walk_inputs(align_walk *w, const clf__node *n, const clf__view *v)
{
    for (int i = 0; i < n->ninputs && w->ok; i++) {
        clf__view in;
        clf__view_input(&w->ix, w->g, n, i, v, &in);
        walk_node(w, n->inputs[i], &in);
    }
}

/* Frees a walk's state and gives its verdict. */
static bool align_walk_end(align_walk *w)
{
    for (size_t i = 0; i < w->nseen; i++)
        clf__free(w->seen[i]);
    clf__free(w->seen);
    clf__ixgen_free(&w->ix);
    clf__sb_free(&w->code);
    clf__sb_free(&w->key);
    return w->ok;
}

/* Whether m may join reduction region R (number r) in role ro; *stage gets
 * m's reduction stage when m is a reduction. */
static bool reduction_aligned(const clf_graph *g, const bool *mat, const int32_t *region_of,
                              const int8_t *stage, uint32_t r, const region *R, uint32_t m, role ro,
                              int *stage_out)
{
    align_walk w = {.g = g, .mat = mat, .region_of = region_of, .stage = stage, .region = (int32_t)r,
                    .ok = true};
    clf__ixgen_init(&w.ix, &w.code, 0);
    int64_t rows = 1, rlen = 1;
    for (int d = 0; d < R->rank; d++)
        *(((R->mask >> d) & 1u) ? &rlen : &rows) *= R->shape[d];
    w.x = clf__ixgen_var(&w.ix, "x", (uint64_t)rows);
    clf__ix rv = clf__ixgen_var(&w.ix, "r", (uint64_t)rlen);
    clf__view full, row = {.linear = true, .lin = w.x};
    clf__view_reduction(&w.ix, R->rank, R->shape, R->mask, w.x, rv, &full);
    const clf__node *mn = clf__graph_node(g, m);
    if (ro == ROLE_REDUCE)
        walk_node(&w, mn->inputs[0], &full);
    else
        walk_inputs(&w, mn, ro == ROLE_ROW ? &row : &full);
    if (w.ix.failed || (ro == ROLE_REDUCE && w.max_stage >= CLF__MAX_REDUCTION_STAGES))
        w.ok = false;
    *stage_out = w.max_stage;
    return align_walk_end(&w);
}

/* Whether pointwise node m may join GEMM region R (number r): every read of
 * the region's product is at the element being stored, where the
 * accumulator holds it. */
static bool gemm_aligned(const clf_graph *g, const bool *mat, const int32_t *region_of,
                         const int8_t *stage, uint32_t r, const region *R, uint32_t m)
{
    align_walk w = {.g = g, .mat = mat, .region_of = region_of, .stage = stage, .region = (int32_t)r,
                    .ok = true};
    int64_t numel = 1;
    for (int d = 0; d < R->rank; d++)
        numel *= R->shape[d];
    clf__ixgen_init(&w.ix, &w.code, (uint64_t)numel);
    w.x = clf__ix_i((uint64_t)numel);
    clf__view at = {.linear = true, .lin = w.x};
    walk_inputs(&w, clf__graph_node(g, m), &at);
    if (w.ix.failed)
        w.ok = false;
    return align_walk_end(&w);
}

/* Most pointwise ops a GEMM recomputes in its operand loads: they run once
 * per tile that loads the element, not once per element. */
#define MAX_PROLOGUE_OPS 16

/* Whether the GEMM consuming operand node op should compute it in its loads
 * (a prologue) rather than read it from a buffer. A prologue is refused when
 * it reads another GEMM's product (that GEMM's epilogue computes it once
 * instead), when it loads more than one tensor of the operand's size (the
 * tiles would read more bytes than one stored operand) or when it is long.
 * Returns NULL to accept, else the reason. */
static const char *prologue_refusal(const clf_graph *g, const bool *mat, uint32_t op)
{
    while (clf__node_class_of(clf__graph_node(g, op)) == CLF__CLASS_MOVEMENT && !mat[op])
        op = clf__graph_node(g, op)->inputs[0];
    const clf__node *head = clf__graph_node(g, op);
    if (!is_computed(head) || mat[op])
        return NULL; /* a load through index arithmetic */
    int64_t numel = clf__node_numel(head);
    const char *why = NULL;
    u32vec stack = {0}, seen = {0};
    int full = 0, ops = 0;
    if (!vec_push(&stack, op))
        return "out of memory";
    while (stack.n && !why) {
        uint32_t id = stack.v[--stack.n];
        if (vec_has(&seen, id))
            continue;
        if (!vec_push(&seen, id)) {
            why = "out of memory";
            break;
        }
        const clf__node *n = clf__graph_node(g, id);
        if (!is_computed(n) || mat[id]) {
            if (n->op == CLF__OP_MATMUL)
                why = "it reads another GEMM's product (that GEMM's epilogue computes it once instead)";
            else if (!clf__plan_is_literal(n) && clf__node_numel(n) * 2 > numel && ++full > 1)
                why = "it loads several operand-sized tensors (storing it once reads fewer bytes)";
            continue;
        }
        if (clf__node_class_of(n) == CLF__CLASS_POINTWISE && ++ops > MAX_PROLOGUE_OPS)
            why = "it is too long to recompute for every tile";
        for (int i = 0; i < n->ninputs && !why; i++)
            if (!vec_push(&stack, n->inputs[i]))
                why = "out of memory";
    }
    clf__free(stack.v);
    clf__free(seen.v);
    return why;
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
static bool order_regions(region *rs, uint32_t nr, uint32_t *order)
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

clf_status clf__plan_build(const clf_graph *g, const clf__plan_options *opt, clf__plan *out,
                           char *err, size_t errlen)
{
    clf_status st = CLF_ERR_OUT_OF_MEMORY;
    uint32_t n = (uint32_t)g->nnodes;
    int maxd = opt && opt->max_fused_depth > 0 ? opt->max_fused_depth : DEFAULT_MAX_FUSED_DEPTH;
    bool fuse = !(opt && opt->disable_fusion);
    bool *needed = clf__calloc(n ? n : 1, sizeof *needed);
    bool *mat = clf__calloc(n ? n : 1, sizeof *mat);
    bool *is_out = clf__calloc(n ? n : 1, sizeof *is_out);
    bool *cut = clf__calloc(n ? n : 1, sizeof *cut);
    bool *crosses = NULL;
    int *depth = clf__calloc(n ? n : 1, sizeof *depth);
    int32_t *region_of = clf__malloc((n ? n : 1) * sizeof *region_of);
    uint32_t *stamp = clf__calloc(n ? n : 1, sizeof *stamp);
    region *rs = NULL;
    uint32_t nr = 0, cap_r = 0;
    u32vec stack = {0}, mdeps = {0}, mregions = {0}, mgix = {0};
    uint32_t *order = NULL;
    const uint32_t **rdeps = NULL;
    uint32_t *rndeps = NULL;
    char sbuf[128];

    memset(out, 0, sizeof *out);
    out->nnodes = n;
    out->src_buffer = clf__malloc((n ? n : 1) * sizeof *out->src_buffer);
    out->producer = clf__malloc((n ? n : 1) * sizeof *out->producer);
    out->stage = clf__malloc((n ? n : 1) * sizeof *out->stage);
    if (!out->stage || !needed || !mat || !is_out || !cut || !depth || !region_of || !stamp || !out->src_buffer ||
        !out->producer)
        goto fail;
    for (uint32_t i = 0; i < n; i++) {
        region_of[i] = -1;
        out->stage[i] = -1;
        out->src_buffer[i] = -1;
        out->producer[i] = -1;
    }

    /* What the outputs need. */
    for (size_t o = 0; o < g->noutputs; o++) {
        needed[g->outputs[o].node] = true;
        is_out[g->outputs[o].node] = true;
    }
    for (uint32_t i = n; i-- > 0;) {
        if (!needed[i])
            continue;
        const clf__node *nd = clf__graph_node(g, i);
        for (int k = 0; k < nd->ninputs; k++)
            needed[nd->inputs[k]] = true;
    }

    /* What is materialised. */
    for (uint32_t i = 0; i < n; i++) {
        if (!needed[i])
            continue;
        const clf__node *nd = clf__graph_node(g, i);
        if (!is_computed(nd)) {
            mat[i] = is_out[i]; /* a leaf output still needs a copy kernel */
            continue;
        }
        /* A GEMM computes its operands in its loads unless that costs
         * more than storing them (then they are stored by another kernel). */
        if (nd->op == CLF__OP_MATMUL && fuse) {
            for (int k = 0; k < nd->ninputs; k++) {
                uint32_t in = nd->inputs[k];
                while (clf__node_class_of(clf__graph_node(g, in)) == CLF__CLASS_MOVEMENT && !mat[in])
                    in = clf__graph_node(g, in)->inputs[0];
                const char *why = prologue_refusal(g, mat, nd->inputs[k]);
                if (why) {
                    mat[in] = true;
                    clf__log(CLF__LOG_FUSION, "node %u (%s): operand %c of matmul %u stored, not "
                             "fused as a prologue: %s", in, clf__node_op_name(clf__graph_node(g, in)),
                             k ? 'b' : 'a', i, why);
                } else if (is_computed(clf__graph_node(g, in)) && !mat[in]) {
                    clf__log(CLF__LOG_FUSION, "node %u (%s): fused into matmul %u's loads of %c (prologue)",
                             in, clf__node_op_name(clf__graph_node(g, in)), i, k ? 'b' : 'a');
                }
            }
        }
        /* A gather reads its indices from memory inside the index
         * arithmetic of its loads: computed indices are stored first. */
        if (clf__op_reads_indices(nd->op)) {
            uint32_t ix = nd->inputs[1];
            if (is_computed(clf__graph_node(g, ix)) && !mat[ix]) {
                mat[ix] = true;
                clf__log(CLF__LOG_FUSION, "node %u (%s): stored: gather %u reads its indices from memory", ix,
                         clf__node_op_name(clf__graph_node(g, ix)), i);
            }
        }
        /* Reductions and products anchor their kernels; outputs must be
         * stored. */
        if (is_out[i] || nd->op == CLF__OP_REDUCE || nd->op == CLF__OP_MATMUL ||
            (!fuse && clf__node_class_of(nd) == CLF__CLASS_POINTWISE)) {
            mat[i] = true;
            continue;
        }
        int d = 1;
        for (int k = 0; k < nd->ninputs; k++) {
            uint32_t in = nd->inputs[k];
            if (is_computed(clf__graph_node(g, in)) && !mat[in] && depth[in] + 1 > d)
                d = depth[in] + 1;
        }
        if (d > maxd) {
            mat[i] = true;
            cut[i] = true;
            clf__log(CLF__LOG_FUSION, "node %u (%s): cut into a buffer: fused chain depth %d > %d",
                     i, clf__node_op_name(nd), d, maxd);
            d = 0;
        }
        depth[i] = d;
    }

    /* Regions, in topological order of their first member. */
    uint32_t mark = 0;
    for (uint32_t m = 0; m < n; m++) {
        if (!mat[m])
            continue;
        const clf__node *mn = clf__graph_node(g, m);
        mdeps.n = 0;
        mregions.n = 0;
        mgix.n = 0;
        ++mark;
        if (!collect_deps(g, mat, m, stamp, mark, &stack, &mdeps, &mgix))
            goto fail;
        for (uint32_t i = 0; i < mdeps.n; i++) {
            uint32_t r = (uint32_t)region_of[mdeps.v[i]];
            if (!vec_has(&mregions, r) && !vec_push(&mregions, r))
                goto fail;
        }
        int32_t chosen = -1;
        /* A cut starts a kernel: merged upward, it would inline the chain
         * it exists to cut. */
        if (fuse && !cut[m]) {
            clf__free(rdeps);
            clf__free(rndeps);
            rdeps = clf__malloc((nr ? nr : 1) * sizeof *rdeps);
            rndeps = clf__malloc((nr ? nr : 1) * sizeof *rndeps);
            if (!rdeps || !rndeps)
                goto fail;
            for (uint32_t r = 0; r < nr; r++) {
                rdeps[r] = rs[r].deps.v;
                rndeps[r] = rs[r].deps.n;
            }
            /* Prefer the most recent region: it is most likely to share
             * the values m reads. */
            for (uint32_t r = nr; r-- > 0;) {
                role ro = rs[r].closed ? ROLE_NONE : role_in(g, &rs[r], mn);
                if (ro == ROLE_NONE)
                    continue;
                bool computes_ix = false;
                for (uint32_t i = 0; i < mgix.n; i++)
                    computes_ix = computes_ix || region_of[mgix.v[i]] == (int32_t)r;
                if (computes_ix) {
                    clf__log(CLF__LOG_FUSION,
                             "node %u (%s): not fused into region %u: a gather it evaluates reads its "
                             "indices from memory, and that region computes them",
                             m, clf__node_op_name(mn), r);
                    continue;
                }
                int st_m = 0;
                if (rs[r].gemm && !gemm_aligned(g, mat, region_of, out->stage, r, &rs[r], m)) {
                    clf__log(CLF__LOG_FUSION,
                             "node %u (%s): not fused into GEMM region %u: it reads the product at "
                             "another element than the one it stores",
                             m, clf__node_op_name(mn), r);
                    continue;
                }
                if (rs[r].reduction &&
                    !reduction_aligned(g, mat, region_of, out->stage, r, &rs[r], m, ro, &st_m)) {
                    clf__log(CLF__LOG_FUSION,
                             "node %u (%s): not fused into reduction region %u: it reads a result "
                             "of that region at another row",
                             m, clf__node_op_name(mn), r);
                    continue;
                }
                if (clf__fusion_legal(r, mregions.v, mregions.n, nr, rdeps, rndeps)) {
                    if (ro == ROLE_REDUCE)
                        out->stage[m] = (int8_t)st_m;
                    chosen = (int32_t)r;
                    clf__log(CLF__LOG_FUSION, "node %u (%s %s): fused into kernel region %u", m,
                             clf__node_op_name(mn), shape_str(sbuf, sizeof sbuf, mn->rank, mn->shape),
                             r);
                    break;
                }
                clf__log(CLF__LOG_FUSION,
                         "node %u (%s): not fused into region %u: it reads that region through "
                         "another kernel (a cycle)",
                         m, clf__node_op_name(mn), r);
            }
        }
        if (chosen < 0) {
            if (nr == cap_r) {
                uint32_t cap = cap_r ? cap_r * 2 : 8;
                region *p = clf__realloc(rs, cap * sizeof *p);
                if (!p)
                    goto fail;
                rs = p;
                cap_r = cap;
            }
            memset(&rs[nr], 0, sizeof rs[nr]);
            if (mn->op == CLF__OP_REDUCE) {
                const clf__node *in = clf__graph_node(g, mn->inputs[0]);
                rs[nr].reduction = true;
                rs[nr].mask = mn->attr.reduce.mask;
                rs[nr].rank = in->rank;
                memcpy(rs[nr].shape, in->shape, sizeof in->shape);
                out->stage[m] = 0;
            } else if (mn->op == CLF__OP_MATMUL) {
                rs[nr].gemm = true;
                rs[nr].anchor = m;
                rs[nr].rank = mn->rank;
                memcpy(rs[nr].shape, mn->shape, sizeof mn->shape);
            } else {
                rs[nr].rank = mn->rank;
                memcpy(rs[nr].shape, mn->shape, sizeof mn->shape);
            }
            /* Joining a cut's kernel would grow the chain the cut bounds and
             * store the cut for no reader. */
            rs[nr].closed = cut[m];
            chosen = (int32_t)nr++;
            clf__log(CLF__LOG_FUSION, "node %u (%s %s): starts kernel region %d%s", m,
                     clf__node_op_name(mn), shape_str(sbuf, sizeof sbuf, mn->rank, mn->shape),
                     chosen, fuse ? "" : " (fusion disabled)");
        }
        region *R = &rs[chosen];
        if (!vec_push(&R->members, m))
            goto fail;
        for (uint32_t i = 0; i < mregions.n; i++)
            if (mregions.v[i] != (uint32_t)chosen && !vec_has(&R->deps, mregions.v[i]) &&
                !vec_push(&R->deps, mregions.v[i]))
                goto fail;
        region_of[m] = chosen;
    }

    order = clf__malloc((nr ? nr : 1) * sizeof *order);
    if (!order)
        goto fail;
    if (!order_regions(rs, nr, order)) {
        snprintf(err, errlen, "planner: kernel regions form a cycle");
        st = CLF_ERR_INTERNAL;
        goto fail;
    }

    /* Which materialised values another kernel reads: only those need an
     * intermediate buffer (a reduction used only in its own kernel stays in
     * registers). */
    crosses = clf__calloc(n ? n : 1, sizeof *crosses);
    if (!crosses)
        goto fail;
    for (uint32_t r = 0; r < nr; r++) {
        ++mark;
        stack.n = 0;
        for (uint32_t j = 0; j < rs[r].members.n; j++) {
            const clf__node *mn = clf__graph_node(g, rs[r].members.v[j]);
            for (int i = 0; i < mn->ninputs; i++)
                if (!vec_push(&stack, mn->inputs[i]))
                    goto fail;
        }
        while (stack.n) {
            uint32_t id = stack.v[--stack.n];
            if (stamp[id] == mark)
                continue;
            stamp[id] = mark;
            const clf__node *nd = clf__graph_node(g, id);
            if (!is_computed(nd))
                continue;
            if (mat[id] && region_of[id] != (int32_t)r) {
                crosses[id] = true;
                continue;
            }
            for (int i = 0; i < nd->ninputs; i++)
                if (!vec_push(&stack, nd->inputs[i]))
                    goto fail;
        }
    }

    /* Buffers: every input, every output, then constants and intermediates
     * as kernels need them. */
    uint32_t cap_b = (uint32_t)(g->ninputs + g->noutputs) + n + 1;
    out->buffers = clf__calloc(cap_b, sizeof *out->buffers);
    out->kernels = clf__calloc(nr ? nr : 1, sizeof *out->kernels);
    if (!out->buffers || !out->kernels)
        goto fail;
    for (size_t i = 0; i < g->ninputs; i++) {
        const clf__node *nd = clf__graph_node(g, g->inputs[i]);
        out->buffers[out->nbuffers] = (clf__plan_buffer){
            CLF__BUF_INPUT, g->inputs[i], (uint32_t)i,
            (uint64_t)clf__node_numel(nd) * clf_dtype_size(nd->dtype)};
        out->src_buffer[g->inputs[i]] = (int32_t)out->nbuffers++;
    }
    for (size_t o = 0; o < g->noutputs; o++) {
        uint32_t id = g->outputs[o].node;
        const clf__node *nd = clf__graph_node(g, id);
        out->buffers[out->nbuffers] = (clf__plan_buffer){
            CLF__BUF_OUTPUT, id, (uint32_t)o, (uint64_t)clf__node_numel(nd) * clf_dtype_size(nd->dtype)};
        /* A computed output is read back from where it is stored; a
         * constant stays a literal or gets its own buffer below (read from
         * its output buffer, the copy kernel read what it was writing). */
        if (out->src_buffer[id] < 0 && is_computed(nd))
            out->src_buffer[id] = (int32_t)out->nbuffers;
        out->nbuffers++;
    }
    uint32_t nconst = 0, ninter = 0;
    for (uint32_t i = 0; i < n; i++) {
        const clf__node *nd = clf__graph_node(g, i);
        if (!needed[i] || out->src_buffer[i] >= 0)
            continue;
        uint64_t bytes = (uint64_t)clf__node_numel(nd) * clf_dtype_size(nd->dtype);
        if (nd->op == CLF__OP_CONSTANT && !clf__plan_is_literal(nd)) {
            out->buffers[out->nbuffers] = (clf__plan_buffer){CLF__BUF_CONSTANT, i, nconst++, bytes};
            out->src_buffer[i] = (int32_t)out->nbuffers++;
        } else if (mat[i] && is_computed(nd) && crosses[i]) {
            out->buffers[out->nbuffers] = (clf__plan_buffer){CLF__BUF_INTERMEDIATE, i, ninter++, bytes};
            out->src_buffer[i] = (int32_t)out->nbuffers++;
        }
    }

    /* Kernels: stores, reads and the ops each evaluates. */
    out->nkernels = nr;
    for (uint32_t k = 0; k < nr; k++) {
        region *R = &rs[order[k]];
        clf__plan_kernel *K = &out->kernels[k];
        u32vec reads = {0}, ops = {0};
        K->rank = R->rank;
        memcpy(K->shape, R->shape, sizeof K->shape);
        K->reduction = R->reduction;
        K->gemm = R->gemm;
        K->matmul = R->anchor;
        K->reduce_mask = R->mask;
        K->rows = K->rlen = 1;
        for (int d = 0; d < R->rank; d++)
            *(((R->mask >> d) & 1u) ? &K->rlen : &K->rows) *= R->shape[d];
        K->numel = R->reduction ? K->rows : K->rows * K->rlen;
        uint32_t cap_s = R->members.n + (uint32_t)g->noutputs;
        K->stores = clf__malloc(cap_s * sizeof *K->stores);
        if (!K->stores)
            goto fail;
        for (uint32_t j = 0; j < R->members.n; j++) {
            uint32_t m = R->members.v[j];
            out->producer[m] = (int32_t)k;
            for (uint32_t b = 0; b < out->nbuffers; b++) {
                const clf__plan_buffer *B = &out->buffers[b];
                if (B->node == m && (B->kind == CLF__BUF_OUTPUT || B->kind == CLF__BUF_INTERMEDIATE))
                    K->stores[K->nstores++] = (clf__plan_store){m, b};
            }
        }
        /* Walk from the members through what this kernel computes. */
        ++mark;
        stack.n = 0;
        for (uint32_t j = 0; j < R->members.n; j++)
            if (!vec_push(&stack, R->members.v[j]))
                goto kfail;
        while (stack.n) {
            uint32_t id = stack.v[--stack.n];
            if (stamp[id] == mark)
                continue;
            stamp[id] = mark;
            const clf__node *nd = clf__graph_node(g, id);
            bool here = region_of[id] == (int32_t)order[k];
            if (!is_computed(nd) || (mat[id] && !here)) {
                if (out->src_buffer[id] >= 0 && !vec_push(&reads, (uint32_t)out->src_buffer[id]))
                    goto kfail;
                continue;
            }
            if (!vec_push(&ops, id))
                goto kfail;
            for (int i = 0; i < nd->ninputs; i++)
                if (!vec_push(&stack, nd->inputs[i]))
                    goto kfail;
        }
        if (reads.n)
            qsort(reads.v, reads.n, sizeof *reads.v, cmp_u32);
        if (ops.n)
            qsort(ops.v, ops.n, sizeof *ops.v, cmp_u32);
        K->reads = reads.v;
        K->nreads = reads.n;
        K->ops = ops.v;
        K->nops = ops.n;
        continue;
    kfail:
        clf__free(reads.v);
        clf__free(ops.v);
        goto fail;
    }

    /* Statistics. */
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
        for (uint32_t i = 0; i < K->nstores; i++)
            out->stats.bytes_written += out->buffers[K->stores[i].buffer].bytes;
    }
    clf__log(CLF__LOG_SCHEDULE, "plan: %u kernels, %llu launches, %llu tensor reads, %llu writes",
             out->nkernels, (unsigned long long)out->stats.launches,
             (unsigned long long)out->stats.tensor_reads,
             (unsigned long long)out->stats.tensor_writes);
    st = CLF_OK;
    goto done;

fail:
    if (st == CLF_ERR_OUT_OF_MEMORY)
        snprintf(err, errlen, "planner: out of memory");
    clf__plan_free(out);
done:
    for (uint32_t r = 0; r < nr; r++) {
        clf__free(rs[r].members.v);
        clf__free(rs[r].deps.v);
    }
    clf__free(rs);
    clf__free(needed);
    clf__free(mat);
    clf__free(is_out);
    clf__free(cut);
    clf__free(crosses);
    clf__free(depth);
    clf__free(region_of);
    clf__free(stamp);
    clf__free(stack.v);
    clf__free(mdeps.v);
    clf__free(mregions.v);
    clf__free(mgix.v);
    clf__free(order);
    clf__free(rdeps);
    clf__free(rndeps);
    return st;
}
