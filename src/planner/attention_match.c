/* Recognition of attention, the planner phase between liveness and
 * materialisation: in the decomposed graph, softmax(logits) @ V where the
 * logits are one product Q @ Kt through pointwise ops of its shape:
 *
 *   scores = MATMUL(Q', K')              [b..., Sq, Sk]
 *   logits = pointwise(scores, masks...) [b..., Sq, Sk]   (scale, masks, casts)
 *   max    = REDUCE MAX(logits, last axis, keepdims)
 *   e      = EXP(SUB(logits, max))
 *   sum    = REDUCE SUM(e, last axis, keepdims)
 *   probs  = DIV(e, sum) [CAST] [WHERE(ISNAN(.), fill, .)] [CAST]
 *   anchor = MATMUL(probs, V')           [b..., Sq, Dv]
 *
 * (the WHERE is how PyTorch's exporters guard rows whose keys are all
 * masked: their weights, all NaN, become the fill).
 *
 * Every node from the scores to probs is computed in the attention kernel's
 * registers, so none of them may be read elsewhere (a graph output, another
 * consumer): then the subgraph is planned as before, and the fusion log
 * says why. Q', K' and V' are whatever reaches them through index
 * arithmetic and prologues (GQA's expand of K/V heads, a transposed K, a
 * scaled Q); masks are loads of the logits' other operands. */
#include "planner/planner_internal.h"
#include "util/alloc.h"

#include <math.h>
#include <string.h>

#include "util/log.h"

/* Consumers of each needed node, as CSR: users[first[i] .. first[i+1]). */
typedef struct uses {
    uint32_t *first, *users;
} uses;

static bool uses_build(const clf__plan_state *S, uses *u)
{
    const clf_graph *g = S->g;
    u->first = clf__calloc(S->n + 1, sizeof *u->first);
    size_t total = 0;
    for (uint32_t i = 0; i < S->n; i++)
        total += S->needed[i] ? (size_t)clf__graph_node(g, i)->ninputs : 0;
    u->users = clf__malloc((total ? total : 1) * sizeof *u->users);
    uint32_t *fill = clf__calloc(S->n + 1, sizeof *fill);
    bool ok = u->first && u->users && fill;
    for (uint32_t i = 0; ok && i < S->n; i++)
        for (int k = 0; S->needed[i] && k < clf__graph_node(g, i)->ninputs; k++)
            u->first[clf__graph_node(g, i)->inputs[k] + 1]++;
    for (uint32_t i = 0; ok && i < S->n; i++)
        u->first[i + 1] += u->first[i];
    for (uint32_t i = 0; ok && i < S->n; i++)
        for (int k = 0; S->needed[i] && k < clf__graph_node(g, i)->ninputs; k++) {
            uint32_t in = clf__graph_node(g, i)->inputs[k];
            u->users[u->first[in] + fill[in]++] = i;
        }
    clf__free(fill);
    return ok;
}

static void uses_free(uses *u)
{
    clf__free(u->first);
    clf__free(u->users);
}

static bool last_axis_reduce(const clf__node *n, clf__reduce_kind kind, int rank)
{
    return n->op == CLF__OP_REDUCE && n->attr.reduce.kind == kind && n->attr.reduce.keepdims && n->rank == rank &&
           n->attr.reduce.mask == 1u << (rank - 1);
}

static bool same_shape_nodes(const clf__node *a, const clf__node *b)
{
    return clf__plan_same_shape(a->rank, a->shape, b->rank, b->shape);
}

/* The node a bool or float constant mask reaches the logits from: through
 * movement ops that only add or broadcast leading axes over its trailing
 * [Sq, Sk]; NULL when it is not such a constant. A constant with leading
 * extents other than 1 (a mask the loader folded after expanding it over
 * the batch) is taken where every [Sq, Sk] slice is the first one. */
static const clf__node *trailing_constant(const clf_graph *g, uint32_t id, int64_t sq, int64_t sk)
{
    for (;;) {
        const clf__node *n = clf__graph_node(g, id);
        if (n->rank < 2 || n->shape[n->rank - 2] != sq || n->shape[n->rank - 1] != sk)
            return NULL;
        if (n->op == CLF__OP_CONSTANT) {
            const int64_t numel = clf__node_numel(n), slice = sq * sk;
            if (!n->data || slice < 1 || numel % slice)
                return NULL;
            const size_t bytes = (size_t)slice * clf_dtype_size(n->dtype);
            for (int64_t at = slice; at < numel; at += slice)
                if (memcmp((const char *)n->data + (size_t)at * clf_dtype_size(n->dtype), n->data, bytes))
                    return NULL;
            return n;
        }
        if (n->op != CLF__OP_EXPAND && n->op != CLF__OP_RESHAPE && n->op != CLF__OP_UNSQUEEZE)
            return NULL;
        id = n->inputs[0];
    }
}

/* Whether constant c (bool, [.., Sq, Sk] with leading extents 1) is the
 * causal pattern c[i][j] = (j <= i + off) (keep == true) or its complement
 * (keep == false), for one off >= 0; *off gets it. */
static bool causal_pattern(const clf__node *c, int64_t sq, int64_t sk, bool keep, int64_t *off)
{
    if (c->dtype != CLF_BOOL || sq < 1)
        return false;
    /* A mask made from shapes (clf_attention's causal flag in a graph with
     * symbolic sizes, graph_symbols.c): c[i][j] = j <= i + sk - sq. */
    if (c->gen.kind == CLF__GEN_CAUSAL && c->rank == 2 && c->shape[0] == sq && c->shape[1] == sk) {
        *off = sk - sq;
        return keep && *off >= 0;
    }
    const uint8_t *d = c->data;
    int64_t o = -1;
    for (int64_t j = 0; j < sk; j++)
        if (((d[j] != 0) == keep))
            o = j;
    for (int64_t i = 0; i < sq; i++)
        for (int64_t j = 0; j < sk; j++)
            if ((d[i * sk + j] != 0) != (keep ? j <= i + o : j > i + o))
                return false;
    *off = o;
    return o >= 0;
}

/* Whether constant c (float, [.., Sq, Sk], its first slice read) is an
 * additive causal mask: 0 at c[i][j] with j <= i + off, one fill F
 * elsewhere, for one off >= 0; *off and *fill get them. F is -inf, or
 * where the mask is added in f32 (add_f32) at most -2^127 (finfo.min, as
 * HF's older masks and ConstantOfShape(-3.4e38) fill): x + F rounds to F
 * for every |x| < 2^103, so the logits hold one value there. (A finite F
 * in a narrower type would not do: x + F is not one value.) */
static bool additive_causal_pattern(const clf__node *c, int64_t sq, int64_t sk, bool add_f32, int64_t *off,
                                    double *fill)
{
    if (!clf__dtype_is_float(c->dtype) || c->op != CLF__OP_CONSTANT || sq < 1)
        return false;
    const clf__dtype_info *t = clf__dtype_info_of(c->dtype);
    int64_t o = -1;
    for (int64_t j = 0; j < sk; j++)
        if (t->get_f64(c->data, (size_t)j) == 0.0)
            o = j;
    double f = NAN;
    for (int64_t i = 0; i < sq; i++)
        for (int64_t j = 0; j < sk; j++) {
            double v = t->get_f64(c->data, (size_t)(i * sk + j));
            if (j <= i + o) {
                if (v != 0.0)
                    return false;
            } else if (isnan(f)) {
                if (!(isinf(v) && v < 0) && !(add_f32 && c->dtype == CLF_F32 && v <= -0x1p127))
                    return false;
                f = v;
            } else if (v != f) {
                return false;
            }
        }
    *off = o;
    *fill = isnan(f) ? -INFINITY : f;
    return o >= 0;
}

/* A literal fill value: a scalar constant, -inf or at most -65504 (f16's
 * lowest, HF's finfo.min): keys holding it weigh 0 next to any visible key
 * more than ~104 above it (the kernel checks that per row, else visits the
 * skipped keys too). */
static bool fill_value(const clf_graph *g, uint32_t id, double *fill)
{
    if (!clf__plan_literal_float(g, id, fill))
        return false;
    return isinf(*fill) ? *fill < 0 : *fill <= -65504.0;
}

/* The node id reaches the logits from through movement ops that keep its
 * trailing [Sq, Sk] (as trailing_constant walks them); UINT32_MAX when a
 * node on the way does not. */
static uint32_t through_movement(const clf_graph *g, uint32_t id, int64_t sq, int64_t sk)
{
    for (;;) {
        const clf__node *n = clf__graph_node(g, id);
        if (n->rank < 2 || n->shape[n->rank - 2] != sq || n->shape[n->rank - 1] != sk)
            return UINT32_MAX;
        if (n->op != CLF__OP_EXPAND && n->op != CLF__OP_RESHAPE && n->op != CLF__OP_UNSQUEEZE)
            return id;
        id = n->inputs[0];
    }
}

/* An additive mask built from a condition: the logits are x + m with m,
 * through float casts and the movement through_movement walks, WHERE(cond, 0, F) (or WHERE(cond, F,
 * 0) with the pattern's complement), where cond is the causal pattern or
 * AND(causal pattern, other) (torch's export of a causal mask combined
 * with a key-padding mask from the model's attention_mask input). At the
 * keys the pattern keeps, the WHERE (or the AND, which is other there) is
 * forwarded; at the keys it hides the logits are x + F, which is F itself
 * where F is -inf, or, for logits added in f32, where F <= -2^127
 * (finfo.min, the dynamo exporter's fill): x + F rounds to F for every
 * |x| < 2^103. A finite F in a narrower type (f16's -65504) is not one
 * value there, and is not taken. True with M's causal fields set. */
static bool masked_causal(const clf_graph *g, const clf__node *add, uint32_t addend, clf__plan_attention *M,
                          int64_t sq, int64_t sk)
{
    uint32_t id = addend;
    for (int hops = 0; hops < 16; hops++) { /* (no transpose: the pattern's axes must stay [Sq, Sk]) */
        const clf__node *n = clf__graph_node(g, id);
        bool cast = n->op == CLF__OP_CAST && clf__dtype_is_float(n->dtype);
        if (!cast && through_movement(g, id, sq, sk) == id)
            break;
        id = cast ? n->inputs[0] : through_movement(g, id, sq, sk);
        if (id == UINT32_MAX)
            return false;
    }
    const clf__node *w = clf__graph_node(g, id);
    if (w->op != CLF__OP_WHERE || !clf__dtype_is_float(w->dtype))
        return false;
    for (int zero_side = 1; zero_side <= 2; zero_side++) {
        double zero, fill;
        if (!clf__plan_literal_float(g, w->inputs[zero_side], &zero) || zero != 0.0 ||
            !clf__plan_literal_float(g, w->inputs[3 - zero_side], &fill))
            continue;
        /* F as the ADD sees it: through the casts from the WHERE's type */
        unsigned char cell[8];
        fill = clf__dtype_info_of(w->dtype)->put_f64(cell, 0, fill);
        for (uint32_t c = addend; c != id; c = clf__graph_node(g, c)->inputs[0])
            if (clf__graph_node(g, c)->op == CLF__OP_CAST)
                fill = clf__dtype_info_of(clf__graph_node(g, c)->dtype)->put_f64(cell, 0, fill);
        if (!(isinf(fill) && fill < 0) && !(add->dtype == CLF_F32 && fill <= -0x1p127))
            continue;
        uint32_t fwd = UINT32_MAX;
        int fwd_input = 0;
        int64_t off;
        const clf__node *c = trailing_constant(g, w->inputs[0], sq, sk);
        if (c && causal_pattern(c, sq, sk, zero_side == 1, &off)) {
            fwd = id; /* the WHERE is its zero */
            fwd_input = zero_side;
        } else if (zero_side == 1) {
            uint32_t and_id = through_movement(g, w->inputs[0], sq, sk);
            const clf__node *a = and_id == UINT32_MAX ? NULL : clf__graph_node(g, and_id);
            for (int k = 0; a && a->op == CLF__OP_AND && k < 2 && fwd == UINT32_MAX; k++) {
                c = trailing_constant(g, a->inputs[k], sq, sk);
                if (c && causal_pattern(c, sq, sk, true, &off)) {
                    fwd = and_id; /* the AND is its other operand */
                    fwd_input = 1 - k;
                }
            }
        }
        if (fwd == UINT32_MAX)
            continue;
        M->causal = true;
        M->causal_offset = off;
        M->causal_fill = fill;
        M->causal_where = fwd;
        M->causal_keep = fwd_input;
        return true;
    }
    return false;
}

/* The causal flag: the logits end in WHERE(c, x, fill) or WHERE(c, fill, x)
 * (through float casts only) with c the causal pattern. The fill is taken
 * through those casts, as the logits hold it. */
static void find_causal(const clf_graph *g, clf__plan_attention *M, int64_t sq, int64_t sk)
{
    uint32_t id = M->logits, casts[8];
    int ncasts = 0;
    while (clf__graph_node(g, id)->op == CLF__OP_CAST) {
        if (ncasts == 8 || !clf__dtype_is_float(clf__graph_node(g, id)->dtype))
            return;
        casts[ncasts++] = id;
        id = clf__graph_node(g, id)->inputs[0];
    }
    const clf__node *w = clf__graph_node(g, id);
    /* An additive mask of 0 and -inf in the causal pattern (torch's export
     * of is_causal: Trilu, Equal, Where into -inf and 0, folded to a
     * constant): at the keys kept the logits are the other addend exactly
     * (x + 0), at the others -inf. */
    for (int side = 0; w->op == CLF__OP_ADD && side < 2; side++) {
        const clf__node *c = trailing_constant(g, w->inputs[1 - side], sq, sk);
        int64_t off;
        double fill;
        if (c && additive_causal_pattern(c, sq, sk, w->dtype == CLF_F32, &off, &fill)) {
            /* the fill as the logits hold it, through their casts */
            unsigned char cell[8];
            for (int i = ncasts - 1; i >= 0; i--)
                fill = clf__dtype_info_of(clf__graph_node(g, casts[i])->dtype)->put_f64(cell, 0, fill);
            M->causal = true;
            M->causal_offset = off;
            M->causal_fill = fill;
            M->causal_where = id;
            M->causal_keep = side;
            return;
        }
        if (masked_causal(g, w, w->inputs[1 - side], M, sq, sk))
            return;
    }
    if (w->op != CLF__OP_WHERE)
        return;
    for (int keep_side = 1; keep_side <= 2; keep_side++) {
        double fill;
        const clf__node *c = trailing_constant(g, w->inputs[0], sq, sk);
        int64_t off;
        if (c && fill_value(g, w->inputs[3 - keep_side], &fill) && causal_pattern(c, sq, sk, keep_side == 1, &off)) {
            unsigned char cell[8];
            for (int i = ncasts - 1; i >= 0; i--)
                fill = clf__dtype_info_of(clf__graph_node(g, casts[i])->dtype)->put_f64(cell, 0, fill);
            M->causal = true;
            M->causal_offset = off;
            M->causal_fill = fill;
            M->causal_where = id;
            M->causal_keep = keep_side;
            return;
        }
    }
}

/* Matches the pattern ending at MATMUL node o into M; false (with *why
 * set when the subgraph looked like attention) when it does not apply. */
static bool match(clf__plan_state *S, const uses *u, uint32_t o, clf__attention_match *M, bool *inner,
                  const char **why)
{
    const clf_graph *g = S->g;
    const clf__node *O = clf__graph_node(g, o);
    *why = NULL;
    /* The weights as the product reads them: probs, then casts and
     * WHERE(ISNAN(x), literal, x) (exporters' guard for fully masked
     * rows), back to the DIV. */
    uint32_t pp = O->inputs[0], p = pp, tail[8];
    int ntail = 0;
    bool has_nan_fill = false;
    double nan_fill = 0;
    for (;;) {
        const clf__node *n = clf__graph_node(g, p);
        if (ntail == 8) {
            *why = "more than 8 casts or NaN guards between the softmax and the second product";
            return false;
        }
        if (n->op == CLF__OP_CAST) {
            tail[ntail++] = p;
            p = n->inputs[0];
            continue;
        }
        if (n->op == CLF__OP_WHERE && !has_nan_fill && ntail + 2 <= 8) {
            const clf__node *c = clf__graph_node(g, n->inputs[0]), *f = clf__graph_node(g, n->inputs[1]);
            if (c->op == CLF__OP_ISNAN && c->inputs[0] == n->inputs[2] && clf__plan_is_literal(f) &&
                clf__dtype_is_float(f->dtype)) {
                tail[ntail++] = p;
                tail[ntail++] = n->inputs[0];
                has_nan_fill = true;
                nan_fill = clf__dtype_info_of(f->dtype)->get_f64(f->data, 0);
                p = n->inputs[2];
                continue;
            }
        }
        break;
    }
    const clf__node *P = clf__graph_node(g, p);
    if (P->op != CLF__OP_DIV || P->rank < 2)
        return false;
    int rank = P->rank;
    uint32_t e = P->inputs[0], sm = P->inputs[1];
    const clf__node *E = clf__graph_node(g, e), *SUM = clf__graph_node(g, sm);
    if (E->op != CLF__OP_EXP || !last_axis_reduce(SUM, CLF__REDUCE_SUM, rank) || SUM->inputs[0] != e)
        return false;
    uint32_t d = E->inputs[0];
    const clf__node *D = clf__graph_node(g, d);
    if (D->op != CLF__OP_SUB)
        return false;
    uint32_t t = D->inputs[0], mx = D->inputs[1];
    const clf__node *T = clf__graph_node(g, t), *MX = clf__graph_node(g, mx);
    if (!last_axis_reduce(MX, CLF__REDUCE_MAX, rank) || MX->inputs[0] != t || !same_shape_nodes(T, P) ||
        !same_shape_nodes(E, P) || !same_shape_nodes(D, P))
        return false;
    if (T->dtype != CLF_F32) {
        *why = "the softmax's logits are not f32";
        return false;
    }

    /* The one product under the logits, through pointwise ops of their
     * shape. */
    memset(inner, 0, S->n * sizeof *inner);
    uint32_t scores = UINT32_MAX;
    S->stack.n = 0;
    ++S->mark;
    if (!clf__u32vec_push(&S->stack, t))
        return false;
    while (S->stack.n) {
        uint32_t id = S->stack.v[--S->stack.n];
        if (S->stamp[id] == S->mark)
            continue;
        S->stamp[id] = S->mark;
        const clf__node *n = clf__graph_node(g, id);
        if (!same_shape_nodes(n, T))
            continue;
        if (n->op == CLF__OP_MATMUL) {
            if (scores != UINT32_MAX && scores != id) {
                *why = "the logits read two products";
                return false;
            }
            scores = id;
            continue;
        }
        if (clf__node_class_of(n) != CLF__CLASS_POINTWISE)
            continue;
        for (int k = 0; k < n->ninputs; k++)
            if (!clf__u32vec_push(&S->stack, n->inputs[k]))
                return false;
    }
    if (scores == UINT32_MAX) {
        *why = "the logits are not one Q @ Kt product through pointwise ops";
        return false;
    }
    const clf__node *SC = clf__graph_node(g, scores);
    int64_t sq = SC->shape[rank - 2], sk = SC->shape[rank - 1];
    const clf__node *Q = clf__graph_node(g, SC->inputs[0]);
    int64_t dk = Q->shape[Q->rank - 1], dv = O->shape[rank - 1];
    if (O->rank != rank || sq < 1 || sk < 1 || dk < 1 || dv < 1 || clf__node_numel(O) == 0) {
        *why = O->rank != rank ? "the output's batch axes are not the scores'" : "an extent is 0";
        return false;
    }
    for (int a = 0; a < rank - 2; a++)
        if (O->shape[a] != SC->shape[a]) {
            *why = "the output's batch axes are not the scores'";
            return false;
        }

    /* Inside: the nodes from the scores to probs, those that depend on the
     * scores (ids ascend along every edge, so one pass in id order). */
    inner[scores] = true;
    for (uint32_t id = scores + 1; id <= pp; id++) {
        bool in_tail = false;
        for (int i = 0; i < ntail; i++)
            in_tail = in_tail || tail[i] == id;
        if (S->stamp[id] != S->mark && id != mx && id != d && id != e && id != sm && id != p && !in_tail)
            continue;
        const clf__node *n = clf__graph_node(g, id);
        for (int k = 0; k < n->ninputs && !inner[id]; k++)
            inner[id] = inner[n->inputs[k]];
    }
    for (uint32_t id = scores + 1; id <= pp; id++) {
        const clf__node *n = clf__graph_node(g, id);
        bool softmax = id == mx || id == sm || id == pp;
        if (inner[id] && !softmax && (!same_shape_nodes(n, T) || clf__node_class_of(n) != CLF__CLASS_POINTWISE)) {
            *why = "the logits read the scores through a movement or reduction op";
            return false;
        }
    }
    if (!inner[pp]) {
        *why = "the weights do not depend on the scores";
        return false;
    }
    for (uint32_t id = scores; id <= pp; id++) {
        if (!inner[id])
            continue;
        if (S->is_out[id]) {
            *why = id == scores ? "the scores are also a graph output" : "a value between the scores and the "
                                                                         "weights is also a graph output";
            return false;
        }
        for (uint32_t k = u->first[id]; k < u->first[id + 1]; k++) {
            uint32_t user = u->users[k];
            if (user != o && !inner[user]) {
                *why = "a value between the scores and the weights is read by another node";
                return false;
            }
        }
    }
    *M = (clf__attention_match){.anchor = o,
                                .at = {.scores = scores, .logits = t, .max = mx, .sum = sm, .probs = pp,
                                       .has_nan_fill = has_nan_fill, .nan_fill = nan_fill}};
    find_causal(g, &M->at, sq, sk);
    return true;
}

/* Whether the target's attention kernel takes M's extents
 * (clf__plan_options.attention_fits); true without a target to ask. */
static bool fits_target(const clf__plan_state *S, const clf__attention_match *M, char *why, size_t cap)
{
    if (!S->opt || !S->opt->attention_fits)
        return true;
    const clf_graph *g = S->g;
    const clf__node *O = clf__graph_node(g, M->anchor), *SC = clf__graph_node(g, M->at.scores);
    const clf__node *Q = clf__graph_node(g, SC->inputs[0]);
    int r = O->rank;
    int64_t batch = 1;
    for (int a = 0; a < r - 2; a++)
        batch *= O->shape[a];
    return S->opt->attention_fits(S->opt->target, batch, SC->shape[r - 2], SC->shape[r - 1], Q->shape[Q->rank - 1],
                                  O->shape[r - 1], why, cap);
}

clf_status clf__plan_find_attention(clf__plan_state *S)
{
    const clf_graph *g = S->g;
    if (!S->fuse)
        return CLF_OK;
    S->attention_of = clf__malloc((S->n ? S->n : 1) * sizeof *S->attention_of);
    if (!S->attention_of)
        return CLF_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < S->n; i++)
        S->attention_of[i] = -1;
    uses u = {0};
    bool *inner = clf__calloc(S->n ? S->n : 1, sizeof *inner);
    clf_status st = CLF_ERR_OUT_OF_MEMORY;
    if (!inner || !uses_build(S, &u))
        goto done;
    for (uint32_t o = 0; o < S->n; o++) {
        const clf__node *O = clf__graph_node(g, o);
        if (!S->needed[o] || O->op != CLF__OP_MATMUL || S->attention_of[o] >= 0)
            continue;
        clf__attention_match M;
        const char *why;
        if (!match(S, &u, o, &M, inner, &why)) {
            if (why)
                clf__log(CLF__LOG_FUSION, "matmul %u: not planned as attention: %s", o, why);
            continue;
        }
        char unfit[200];
        if (!fits_target(S, &M, unfit, sizeof unfit)) {
            clf__log(CLF__LOG_FUSION, "matmul %u: not planned as attention: %s", o, unfit);
            continue;
        }
        clf__attention_match *grown = clf__realloc(S->matches, (S->nmatches + 1) * sizeof *grown);
        if (!grown)
            goto done;
        S->matches = grown;
        S->matches[S->nmatches++] = M;
        for (uint32_t id = M.at.scores; id <= M.at.probs; id++)
            if (inner[id])
                S->attention_of[id] = (int32_t)o;
        S->attention_of[o] = (int32_t)o;
        clf__log(CLF__LOG_FUSION, "matmul %u: attention over the scores of matmul %u (softmax %u/%u in registers)%s",
                 o, M.at.scores, M.at.max, M.at.sum, M.at.causal ? ", causal" : "");
    }
    st = CLF_OK;
done:
    uses_free(&u);
    clf__free(inner);
    return st;
}
