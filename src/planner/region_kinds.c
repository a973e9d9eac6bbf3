/* The planner's region kinds as data: one row per kind with what starts a
 * region of it, how a materialised node would sit in it and the kind's own
 * legality rule (planner_internal.h). The growth phase (planner.c) asks
 * these rows and knows no kind by name. */
#include "planner/planner_internal.h"
#include "util/alloc.h"

#include <string.h>

#include "index/index_algebra.h"
#include "util/strbuf.h"

bool clf__plan_same_shape(int ra, const int64_t *a, int rb, const int64_t *b)
{
    if (ra != rb)
        return false;
    for (int i = 0; i < ra; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

bool clf__plan_is_computed(const clf__node *n) { return clf__node_class_of(n) != CLF__CLASS_LEAF; }

static int64_t space_numel(const clf__region *R)
{
    int64_t numel = 1;
    for (int d = 0; d < R->rank; d++)
        numel *= R->shape[d];
    return numel;
}

/* Walks what a kernel would inline below a node, checking the rule that
 * makes a reduction's result usable in registers: every read of one of the
 * region's reductions is at the current row. Also finds the reduction stage
 * (1 + the deepest stage read). A read through a gather's data (an index
 * only known at run time) is at another element, whatever the index
 * algebra makes of it where an extent is 1 (codegen cannot read the
 * register there). */
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
    int gathered; /* gathers' data the walk is under */
    bool ok;
} align_walk;

size_t clf__align_walk_cap = (size_t)1 << 16;

static bool seen_before(align_walk *w, uint32_t id, const clf__view *v, int rank)
{
    clf__sb_clear(&w->key);
    clf__sb_printf(&w->key, "n%u:%s", id, w->gathered ? "g:" : "");
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

/* Whether a kernel of region r reads node n (number id) from memory, a
 * leaf or another kernel's value, rather than computing it: where the
 * walk and the quick check below stop. */
static bool loaded_in(const bool *mat, const int32_t *region_of, int32_t r, uint32_t id, const clf__node *n)
{
    return !clf__plan_is_computed(n) || (mat[id] && region_of[id] != r);
}

static void walk_inputs(align_walk *w, const clf__node *n, const clf__view *v);
static bool read_in_place(const clf__plan_state *S, uint32_t r, uint32_t id, int *budget, int *stage);

static void walk_node(align_walk *w, uint32_t id, const clf__view *v)
{
    const clf__node *n = clf__graph_node(w->g, id);
    if (!w->ok || loaded_in(w->mat, w->region_of, w->region, id, n))
        return;
    if (seen_before(w, id, v, n->rank))
        return;
    if (n->op == CLF__OP_REDUCE || n->op == CLF__OP_MATMUL) {
        clf__ix at = clf__view_linear(&w->ix, v, n->rank, n->shape);
        if (w->gathered || !clf__ix_same(&at, &w->x))
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
        const bool data = i == 0 && (n->op == CLF__OP_GATHER || n->op == CLF__OP_GATHER_ELEMENTS);
        clf__view in;
        clf__view_input(&w->ix, w->g, n, i, v, &in);
        w->gathered += data;
        walk_node(w, n->inputs[i], &in);
        w->gathered -= data;
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

/* The walk without index algebra, for the common cases, within a budget
 * of nodes: where it answers yes, the walk would too; elsewhere the walk
 * decides. Whether the nodes the walk would inline below id reach a value
 * of region r (or a product or reduction, which the walk checks): true,
 * too, when the budget ran out. */
static bool reaches_region(const clf__plan_state *S, uint32_t r, uint32_t id, int *budget)
{
    const clf__node *n = clf__graph_node(S->g, id);
    if (loaded_in(S->mat, S->region_of, (int32_t)r, id, n))
        return false;
    if (S->mat[id] || n->op == CLF__OP_REDUCE || n->op == CLF__OP_MATMUL || --*budget < 0)
        return true;
    for (int i = 0; i < n->ninputs; i++)
        if (reaches_region(S, r, n->inputs[i], budget))
            return true;
    return false;
}

/* With node n read at its linear element x (a GEMM region's element, or
 * with stage a reduction region's row: n has that many elements), whether
 * what the walk inlines below it reads the region's values only at x:
 * loads anywhere; the region's values at x, through nodes that read their
 * inputs numpy-broadcast (pointwise ops: an input of their own shape at
 * their element; not gathers or concat, clf__view_input_broadcasts) and
 * reshapes (which keep the linear index); anything else only where it
 * reaches no value of the region. A reduction's row read raises *stage to
 * its stage + 1 (the walk's max_stage). False when that is not so or not
 * known. */
static bool below_in_place(const clf__plan_state *S, uint32_t r, const clf__node *n, int *budget, int *stage)
{
    const bool linear = clf__view_input_linear(n), broadcasts = clf__view_input_broadcasts(n);
    for (int i = 0; i < n->ninputs; i++) {
        const clf__node *in = clf__graph_node(S->g, n->inputs[i]);
        const bool at_x =
            (linear && i == 0) || (broadcasts && clf__plan_same_shape(in->rank, in->shape, n->rank, n->shape));
        if (at_x ? !read_in_place(S, r, n->inputs[i], budget, stage) : reaches_region(S, r, n->inputs[i], budget))
            return false;
    }
    return true;
}

/* below_in_place for node id itself, read at its element x. */
static bool read_in_place(const clf__plan_state *S, uint32_t r, uint32_t id, int *budget, int *stage)
{
    const clf__node *n = clf__graph_node(S->g, id);
    if (loaded_in(S->mat, S->region_of, (int32_t)r, id, n))
        return true;
    if (--*budget < 0)
        return false;
    if (n->op == CLF__OP_MATMUL)
        return !stage; /* a GEMM's product at x; the walk compares a reduction's rows with nothing else */
    if (n->op == CLF__OP_REDUCE) {
        if (stage && S->out->stage[id] + 1 > *stage)
            *stage = S->out->stage[id] + 1;
        return true; /* at x, where the walk's view finds it */
    }
    return below_in_place(S, r, n, budget, stage);
}

static bool full_in_place(const clf__plan_state *S, uint32_t r, const clf__region *R, uint32_t id, int *budget,
                          int *stage);

/* For a reduction region R over its last axes: with node n of R's shape
 * read at the region's element (row x, index r), whether the walk finds
 * only loads and the region's values at row x: through nodes of R's shape
 * that read their inputs numpy-broadcast, and from them inputs of R's
 * shape with its reduced axes 1 (broadcast along them: read at row x, as
 * read_in_place takes them). False when that is not so or not known;
 * *stage as read_in_place. */
static bool below_full(const clf__plan_state *S, uint32_t r, const clf__region *R, const clf__node *n, int *budget,
                       int *stage)
{
    int64_t keep[CLF_MAX_RANK];
    for (int d = 0; d < R->rank; d++)
        keep[d] = (R->mask >> d) & 1u ? 1 : R->shape[d];
    const bool broadcasts = clf__view_input_broadcasts(n);
    for (int i = 0; i < n->ninputs; i++) {
        const uint32_t id = n->inputs[i];
        const clf__node *in = clf__graph_node(S->g, id);
        bool ok;
        if (broadcasts && clf__plan_same_shape(in->rank, in->shape, R->rank, R->shape)) {
            ok = full_in_place(S, r, R, id, budget, stage);
        } else if (broadcasts && clf__plan_same_shape(in->rank, in->shape, R->rank, keep)) {
            ok = read_in_place(S, r, id, budget, stage);
        } else {
            ok = !reaches_region(S, r, id, budget);
        }
        if (!ok)
            return false;
    }
    return true;
}

/* below_full for node id itself (of R's shape, read at the region's
 * element): a product or reduction there is not at row x. */
static bool full_in_place(const clf__plan_state *S, uint32_t r, const clf__region *R, uint32_t id, int *budget,
                          int *stage)
{
    const clf__node *n = clf__graph_node(S->g, id);
    if (loaded_in(S->mat, S->region_of, (int32_t)r, id, n))
        return true;
    return --*budget >= 0 && n->op != CLF__OP_REDUCE && n->op != CLF__OP_MATMUL &&
           below_full(S, r, R, n, budget, stage);
}

/* Whether R reduces its last axes only (rows contiguous). */
static bool reduces_last_axes(const clf__region *R)
{
    for (int d = 0; d + 1 < R->rank; d++)
        if (((R->mask >> d) & 1u) && !((R->mask >> (d + 1)) & 1u))
            return false;
    return true;
}

/* Whether m may join reduction region R (number r) in role ro; *stage gets
 * m's reduction stage when m is a reduction. */
static bool reduction_aligned(const clf__plan_state *S, uint32_t r, const clf__region *R, uint32_t m, clf__role ro,
                              int *stage_out)
{
    const clf_graph *g = S->g;
    const clf__node *mn = clf__graph_node(g, m);
    int64_t rows = 1, rlen = 1;
    for (int d = 0; d < R->rank; d++)
        *(((R->mask >> d) & 1u) ? &rlen : &rows) *= R->shape[d];
    int budget = 64, quick_stage = 0;
    bool quick = false;
    if (rows > 0 && rlen > 0) { /* an empty region's rows are the walk's to judge (codegen asks it too) */
        if (ro == CLF__ROLE_ROW) { /* m's inputs at its row */
            quick = below_in_place(S, r, mn, &budget, &quick_stage);
        } else if (reduces_last_axes(R)) { /* m (full) or its input (reduced) at the region's element */
            quick = ro == CLF__ROLE_FULL ? below_full(S, r, R, mn, &budget, &quick_stage)
                                         : full_in_place(S, r, R, mn->inputs[0], &budget, &quick_stage);
        } else {
            quick = true;
            for (int i = 0; i < (ro == CLF__ROLE_REDUCE ? 1 : mn->ninputs) && quick; i++)
                quick = !reaches_region(S, r, mn->inputs[i], &budget);
        }
    }
    if (quick && (ro != CLF__ROLE_REDUCE || quick_stage < CLF__MAX_REDUCTION_STAGES)) {
        *stage_out = quick_stage;
        return true;
    }
    align_walk w = {.g = g, .mat = S->mat, .region_of = S->region_of, .stage = S->out->stage, .region = (int32_t)r,
                    .ok = true};
    clf__ixgen_init(&w.ix, &w.code, 0);
    w.x = clf__ixgen_var(&w.ix, "x", (uint64_t)rows);
    clf__ix rv = clf__ixgen_var(&w.ix, "r", (uint64_t)rlen);
    clf__view full, row = {.linear = true, .lin = w.x};
    clf__view_reduction(&w.ix, R->rank, R->shape, R->mask, w.x, rv, &full);
    if (ro == CLF__ROLE_REDUCE)
        walk_node(&w, mn->inputs[0], &full);
    else
        walk_inputs(&w, mn, ro == CLF__ROLE_ROW ? &row : &full);
    if (w.ix.failed || (ro == CLF__ROLE_REDUCE && w.max_stage >= CLF__MAX_REDUCTION_STAGES))
        w.ok = false;
    *stage_out = w.max_stage;
    return align_walk_end(&w);
}

/* Whether node id, computed at element i of GEMM region R (number r),
 * reads the region's product only at i, where the accumulator holds it:
 * the walk starts at id's inputs (a member joining the region) or, with
 * self, at id itself (which may be the product). */
static bool gemm_aligned(const clf__plan_state *S, uint32_t r, const clf__region *R, uint32_t id, bool self)
{
    const clf_graph *g = S->g;
    const clf__node *n = clf__graph_node(g, id);
    int budget = 64;
    if (self ? read_in_place(S, r, id, &budget, NULL) : below_in_place(S, r, n, &budget, NULL))
        return true;
    align_walk w = {.g = g, .mat = S->mat, .region_of = S->region_of, .stage = S->out->stage, .region = (int32_t)r,
                    .ok = true};
    int64_t numel = 1;
    for (int d = 0; d < R->rank; d++)
        numel *= R->shape[d];
    clf__ixgen_init(&w.ix, &w.code, (uint64_t)numel);
    w.x = clf__ix_i((uint64_t)numel);
    clf__view at = {.linear = true, .lin = w.x};
    if (self)
        walk_node(&w, id, &at);
    else
        walk_inputs(&w, clf__graph_node(g, id), &at);
    if (w.ix.failed)
        w.ok = false;
    return align_walk_end(&w);
}


bool clf__plan_row_stats_aligned(const clf__plan_state *S, uint32_t op, const uint32_t *stats, uint32_t nstats)
{
    const clf_graph *g = S->g;
    const clf__node *a = clf__graph_node(g, op);
    const int64_t k = a->rank ? a->shape[a->rank - 1] : 0;
    if (a->rank < 1 || k <= 0)
        return false;
    /* Region -2: every materialised node is loaded (none has a region yet). */
    align_walk w = {.g = g, .mat = S->mat, .region_of = S->region_of, .stage = S->out->stage, .region = -2,
                    .ok = true};
    clf__ixgen_init(&w.ix, &w.code, 0);
    w.x = clf__ixgen_var(&w.ix, "x", (uint64_t)(clf__node_numel(a) / k));
    clf__ix r = clf__ixgen_var(&w.ix, "r", (uint64_t)k);
    clf__view at;
    clf__view_reduction(&w.ix, a->rank, a->shape, 1u << (a->rank - 1), w.x, r, &at);
    walk_node(&w, op, &at);
    for (uint32_t j = 0; j < nstats && w.ok; j++) {
        const clf__node *red = clf__graph_node(g, stats[j]), *in = clf__graph_node(g, red->inputs[0]);
        if (clf__node_numel(in) != clf__node_numel(a) || in->shape[in->rank - 1] != k ||
            red->attr.reduce.mask != 1u << (in->rank - 1)) {
            w.ok = false;
            break;
        }
        clf__view row;
        clf__view_reduction(&w.ix, in->rank, in->shape, red->attr.reduce.mask, w.x, r, &row);
        walk_node(&w, red->inputs[0], &row);
    }
    if (w.ix.failed)
        w.ok = false;
    return align_walk_end(&w);
}

/* ---- Pointwise ---------------------------------------------------------- */

static bool pointwise_node(const clf__node *m) { return m->op != CLF__OP_REDUCE && m->op != CLF__OP_MATMUL; }

static bool pointwise_anchors(const clf__plan_state *S, uint32_t m) { return pointwise_node(clf__graph_node(S->g, m)); }

static void pointwise_start(clf__plan_state *S, clf__region *R, uint32_t m)
{
    const clf__node *mn = clf__graph_node(S->g, m);
    R->rank = mn->rank;
    memcpy(R->shape, mn->shape, sizeof mn->shape);
}

static clf__role pointwise_role(const clf_graph *g, const clf__region *R, const clf__node *m)
{
    (void)g;
    return pointwise_node(m) && clf__plan_same_shape(R->rank, R->shape, m->rank, m->shape) ? CLF__ROLE_POINTWISE
                                                                                               : CLF__ROLE_NONE;
}

/* ---- Reduction ---------------------------------------------------------- */

static bool reduction_anchors(const clf__plan_state *S, uint32_t m) { return clf__graph_node(S->g, m)->op == CLF__OP_REDUCE; }

static void reduction_start(clf__plan_state *S, clf__region *R, uint32_t m)
{
    const clf__node *mn = clf__graph_node(S->g, m);
    const clf__node *in = clf__graph_node(S->g, mn->inputs[0]);
    R->mask = mn->attr.reduce.mask;
    R->rank = in->rank;
    memcpy(R->shape, in->shape, sizeof in->shape);
    S->out->stage[m] = 0;
}

static clf__role reduction_role(const clf_graph *g, const clf__region *R, const clf__node *m)
{
    if (m->op == CLF__OP_MATMUL)
        return CLF__ROLE_NONE; /* a product anchors its own kernel */
    if (m->op == CLF__OP_REDUCE) {
        const clf__node *in = clf__graph_node(g, m->inputs[0]);
        return m->attr.reduce.mask == R->mask && clf__plan_same_shape(R->rank, R->shape, in->rank, in->shape)
                   ? CLF__ROLE_REDUCE
                   : CLF__ROLE_NONE;
    }
    if (clf__plan_same_shape(R->rank, R->shape, m->rank, m->shape))
        return CLF__ROLE_FULL;
    int64_t keep[CLF_MAX_RANK], drop[CLF_MAX_RANK];
    int nd = 0;
    for (int d = 0; d < R->rank; d++) {
        bool red = (R->mask >> d) & 1u;
        keep[d] = red ? 1 : R->shape[d];
        if (!red)
            drop[nd++] = R->shape[d];
    }
    if (clf__plan_same_shape(R->rank, keep, m->rank, m->shape) || clf__plan_same_shape(nd, drop, m->rank, m->shape))
        return CLF__ROLE_ROW;
    return CLF__ROLE_NONE;
}

static const char *reduction_refusal(clf__plan_state *S, uint32_t r, uint32_t m, clf__role ro, int *stage)
{
    return reduction_aligned(S, r, &S->rs[r], m, ro, stage) ? NULL
                                                            : "it reads a result of that region at another row";
}

/* ---- GEMM --------------------------------------------------------------- */

static bool gemm_anchors(const clf__plan_state *S, uint32_t m)
{
    return clf__graph_node(S->g, m)->op == CLF__OP_MATMUL && !(S->attention_of && S->attention_of[m] == (int32_t)m);
}

static void gemm_start(clf__plan_state *S, clf__region *R, uint32_t m)
{
    const clf__node *mn = clf__graph_node(S->g, m);
    R->anchor = m;
    R->rank = mn->rank;
    memcpy(R->shape, mn->shape, sizeof mn->shape);
}

/* The epilogue stores element i of each member at the product's element
 * i: any member of the same size (a reshape of the product too) fits, if it
 * reads the product only there (gemm_aligned). An empty product has no
 * element to store at: nothing joins it. */
static clf__role gemm_role(const clf_graph *g, const clf__region *R, const clf__node *m)
{
    (void)g;
    int64_t numel = space_numel(R);
    return m->op != CLF__OP_REDUCE && m->op != CLF__OP_MATMUL && numel > 0 && clf__node_numel(m) == numel
               ? CLF__ROLE_POINTWISE
               : CLF__ROLE_NONE;
}

/* The rule of a product kernel's stores, in words: the kernel computes its
 * product one element i at a time, so it can store a member m that is
 * (a) m's element i, when m is the product or reads it only at i (an
 *     epilogue: bias, activation, a reshape); or
 * (b) a permutation of such a value `from`: m is from moved by movement ops
 *     that move every element to exactly one place (transpose, reshape,
 *     squeeze, unsqueeze; clf__movement_permutes: no broadcast, no slice),
 *     so from's element i is stored at the place those ops put it in m.
 * That is attention's output O [B, H, S, Dv] transposed and reshaped back
 * to [B, S, H * Dv] written by the attention kernel itself, with no copy
 * kernel; O is then stored only if something else reads it. from must be
 * the kernel's own value (the product, or computed from it in registers):
 * moving another kernel's stored value into place is a copy, not an
 * epilogue. */
uint32_t clf__product_store_from(const clf__plan_state *S, uint32_t r, uint32_t m)
{
    const clf_graph *g = S->g;
    const clf__region *R = &S->rs[r];
    if (m == R->anchor || gemm_aligned(S, r, R, m, false))
        return m;
    uint32_t from = m;
    for (;;) {
        const clf__node *n = clf__graph_node(g, from);
        if (clf__node_class_of(n) != CLF__CLASS_MOVEMENT || !clf__movement_permutes(g, n))
            break;
        from = n->inputs[0];
        if (S->mat[from] && S->region_of[from] != (int32_t)r)
            return UINT32_MAX;
    }
    if (from == m || !clf__plan_is_computed(clf__graph_node(g, from)))
        return UINT32_MAX;
    return gemm_aligned(S, r, R, from, true) ? from : UINT32_MAX;
}

static const char *gemm_refusal(clf__plan_state *S, uint32_t r, uint32_t m, clf__role ro, int *stage)
{
    (void)ro;
    (void)stage;
    return clf__product_store_from(S, r, m) != UINT32_MAX
               ? NULL
               : "it reads the product at another element than the one it stores, and is no permutation of a value "
                 "the kernel computes there";
}

/* ---- Attention ---------------------------------------------------------- */

static bool attention_anchors(const clf__plan_state *S, uint32_t m)
{
    return S->attention_of && S->attention_of[m] == (int32_t)m;
}

static void attention_start(clf__plan_state *S, clf__region *R, uint32_t m)
{
    gemm_start(S, R, m);
    for (uint32_t i = 0; i < S->nmatches; i++)
        if (S->matches[i].anchor == m)
            R->attention = S->matches[i].at;
}

/* The epilogue's rule is the GEMM's: a member stores element i of the
 * product, reading the product only there. */
#define attention_role gemm_role
#define attention_refusal gemm_refusal
#define attention_store_from clf__product_store_from
#define gemm_store_from clf__product_store_from

/* ---- Cache write ---------------------------------------------------------- */

/* A kernel over the new entries x of a CACHE_WRITE, storing x's element i
 * at its place in the cache's buffer (the cache input's own: the write is
 * in place), and so for the other cache writes of entries of x's shape
 * that join it; each x's chain (a rotary embedding of new keys) is
 * computed in it. */
static bool cache_write_anchors(const clf__plan_state *S, uint32_t m)
{
    return clf__graph_node(S->g, m)->op == CLF__OP_CACHE_WRITE;
}

static void cache_write_start(clf__plan_state *S, clf__region *R, uint32_t m)
{
    const clf__node *x = clf__graph_node(S->g, clf__graph_node(S->g, m)->inputs[1]);
    R->anchor = m;
    R->rank = x->rank;
    memcpy(R->shape, x->shape, sizeof x->shape);
}

/* Another cache write whose new entries have the region's shape joins it
 * (a layer's keys and values: one kernel stores both); nothing else does. */
static clf__role cache_write_role(const clf_graph *g, const clf__region *R, const clf__node *m)
{
    if (m->op != CLF__OP_CACHE_WRITE)
        return CLF__ROLE_NONE;
    const clf__node *x = clf__graph_node(g, m->inputs[1]);
    return clf__plan_same_shape(R->rank, R->shape, x->rank, x->shape) ? CLF__ROLE_POINTWISE : CLF__ROLE_NONE;
}

/* A cache write's value is the cache with its new entries in place: not an
 * expression of the region's element, and stored in the kernel that reads
 * it. So a write whose new entries read another write of the region (a
 * chain of writes, v5 = cache_write(v4, cache_write(v2, v1))) gets a kernel
 * of its own, which loads them from the first write's buffer. */
static const char *cache_write_refusal(clf__plan_state *S, uint32_t r, uint32_t m, clf__role ro, int *stage)
{
    (void)ro;
    (void)stage;
    int budget = 256;
    return reaches_region(S, r, clf__graph_node(S->g, m)->inputs[1], &budget)
               ? "its new entries read a cache write of that region"
               : NULL;
}

static uint32_t cache_write_store_from(const clf__plan_state *S, uint32_t r, uint32_t m)
{
    (void)r;
    return clf__graph_node(S->g, m)->inputs[1];
}

/* ---- The table ---------------------------------------------------------- */

const clf__region_rules clf__region_kinds[CLF__REGION_KIND_COUNT] = {
    [CLF__REGION_POINTWISE] = {CLF__REGION_POINTWISE, "pointwise", pointwise_anchors, pointwise_start, pointwise_role,
                               NULL, NULL},
    [CLF__REGION_REDUCTION] = {CLF__REGION_REDUCTION, "reduction", reduction_anchors, reduction_start, reduction_role,
                               reduction_refusal, NULL},
    [CLF__REGION_GEMM] = {CLF__REGION_GEMM, "GEMM", gemm_anchors, gemm_start, gemm_role, gemm_refusal, gemm_store_from},
    [CLF__REGION_ATTENTION] = {CLF__REGION_ATTENTION, "attention", attention_anchors, attention_start, attention_role,
                               attention_refusal, attention_store_from},
    [CLF__REGION_CACHE_WRITE] = {CLF__REGION_CACHE_WRITE, "cache write", cache_write_anchors, cache_write_start,
                                 cache_write_role, cache_write_refusal, cache_write_store_from,
                                 .own_kind = true},
};
_Static_assert(CLF__REGION_KIND_COUNT == 5, "a new region kind needs its row in clf__region_kinds");

clf__region_kind clf__region_kind_of_anchor(const clf__plan_state *S, uint32_t m)
{
    for (int k = CLF__REGION_KIND_COUNT; k-- > 1;)
        if (clf__region_kinds[k].anchors(S, m))
            return (clf__region_kind)k;
    return CLF__REGION_POINTWISE;
}

const char *clf__region_kind_name(clf__region_kind kind)
{
    return (unsigned)kind < CLF__REGION_KIND_COUNT ? clf__region_kinds[kind].name : "?";
}
