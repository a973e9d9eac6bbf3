/* Scaled dot-product attention, softmax(q @ kT * scale + mask) @ v, as a
 * composite: built from existing primitives only, in a fixed order that
 * the planner recognises as one ATTENTION region (so keep it):
 *
 *   kt  = TRANSPOSE(k, last two axes swapped)
 *   s   = MATMUL(q, kt)
 *   s   = MUL(s, scalar scale)                   unless scale == 1
 *   s   = WHERE(mask, s, scalar -inf)            bool mask
 *   s   = ADD(s, mask)                           float mask
 *   s   = WHERE(C, s, scalar -inf)               causal: C a bool constant [Sq, Sk],
 *                                                last, so the kernel may skip what it hides
 *   p   = clf_softmax(s, -1)                     (its own 5 nodes; casts for f16/bf16)
 *   out = MATMUL(p, v)
 *
 * Every argument is checked here first, so that an error names
 * clf_attention and the argument, not a primitive it is built from. */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "util/alloc.h"

#include "graph_builder.h"
#include "graph_internal.h"

static const char CALL[] = "clf_attention";

/* What the checks learn about one of q, k, v. */
typedef struct operand {
    clf_dtype dtype;
    int rank;
    int64_t shape[CLF_MAX_RANK];
} operand;

/* Resolves q, k or v: a valid handle of g, rank >= 2, a float dtype (q's,
 * for k and v: want is NULL for q). */
static bool get_operand(clf_graph *g, const char *arg, clf_tensor t, const operand *want, operand *o)
{
    const clf__node *n = clf__graph_arg(g, CALL, arg, t);
    if (!n)
        return false;
    if (!clf__dtype_is_float(n->dtype)) {
        clf__graph_fail(g, CLF_ERR_DTYPE, CALL, "%s has dtype %s; attention takes f32, f16 or bf16", arg,
                        clf_dtype_name(n->dtype));
        return false;
    }
    if (want && n->dtype != want->dtype) {
        clf__graph_fail(g, CLF_ERR_DTYPE, CALL, "%s has dtype %s and q has %s; cast them to one dtype", arg,
                        clf_dtype_name(n->dtype), clf_dtype_name(want->dtype));
        return false;
    }
    if (n->rank < 2) {
        char s[CLF__SHAPE_STR_CAP];
        clf__graph_fail(g, CLF_ERR_SHAPE, CALL, "%s %s has rank %d; attention takes q, k and v of rank >= 2", arg,
                        clf__graph_shape_str(s, sizeof s, n->rank, n->shape), n->rank);
        return false;
    }
    o->dtype = n->dtype;
    o->rank = n->rank;
    memcpy(o->shape, n->shape, sizeof o->shape);
    return true;
}

/* The shape of the scores and probabilities, [batch..., Sq, Sk], with the
 * batch axes of q, k and v broadcast together; false after recording the
 * error when they do not broadcast. */
static bool score_shape(clf_graph *g, const operand *q, const operand *k, const operand *v, int *rank,
                        int64_t *shape)
{
    int r;
    int64_t b[CLF_MAX_RANK];
    if (!clf__graph_broadcast(q->rank - 2, q->shape, k->rank - 2, k->shape, &r, b) ||
        !clf__graph_broadcast(r, b, v->rank - 2, v->shape, &r, b)) {
        char sq[CLF__SHAPE_STR_CAP], sk[CLF__SHAPE_STR_CAP], sv[CLF__SHAPE_STR_CAP];
        clf__graph_fail(g, CLF_ERR_SHAPE, CALL, "the batch axes of q %s, k %s and v %s do not broadcast",
                        clf__graph_shape_str(sq, sizeof sq, q->rank, q->shape),
                        clf__graph_shape_str(sk, sizeof sk, k->rank, k->shape),
                        clf__graph_shape_str(sv, sizeof sv, v->rank, v->shape));
        return false;
    }
    b[r] = q->shape[q->rank - 2];
    b[r + 1] = k->shape[k->rank - 2];
    *rank = r + 2; /* r <= CLF_MAX_RANK - 2: every operand has rank >= 2 */
    memcpy(shape, b, (size_t)*rank * sizeof *shape);
    return true;
}

/* The mask: bool or q's dtype, and broadcast one way to the scores' shape
 * (it may not enlarge them). Gives its dtype. */
static bool check_mask(clf_graph *g, clf_tensor mask, clf_dtype qdt, int rank, const int64_t *shape,
                       clf_dtype *dt)
{
    const clf__node *n = clf__graph_arg(g, CALL, "mask", mask);
    if (!n)
        return false;
    if (n->dtype != CLF_BOOL && n->dtype != qdt) {
        clf__graph_fail(g, CLF_ERR_DTYPE, CALL,
                        "mask has dtype %s; it must be bool (true: the key takes part) or q's dtype %s (added to "
                        "the scores)",
                        clf_dtype_name(n->dtype), clf_dtype_name(qdt));
        return false;
    }
    int r;
    int64_t b[CLF_MAX_RANK];
    bool fits = n->rank <= rank && clf__graph_broadcast(n->rank, n->shape, rank, shape, &r, b) && r == rank &&
                memcmp(b, shape, (size_t)rank * sizeof *b) == 0;
    if (!fits) {
        char sm[CLF__SHAPE_STR_CAP], ss[CLF__SHAPE_STR_CAP];
        clf__graph_fail(g, CLF_ERR_SHAPE, CALL, "mask %s does not broadcast to the scores' shape %s ([..., Sq, Sk])",
                        clf__graph_shape_str(sm, sizeof sm, n->rank, n->shape),
                        clf__graph_shape_str(ss, sizeof ss, rank, shape));
        return false;
    }
    *dt = n->dtype;
    return true;
}

/* The causal mask as a bool constant [sq, sk]: C[i][j] = j <= i + sk - sq
 * (bottom-right aligned: the last query sees every key). */
static clf_tensor causal_constant(clf_graph *g, int64_t sq, int64_t sk)
{
    if (sk > 0 && sq > (int64_t)(SIZE_MAX / 2) / sk) {
        clf__graph_fail(g, CLF_ERR_SHAPE, CALL, "the causal mask [%" PRId64 ",%" PRId64 "] is too large", sq, sk);
        return CLF_TENSOR_INVALID;
    }
    size_t n = (size_t)(sq * sk);
    uint8_t *c = clf__malloc(n ? n : 1);
    if (!c) {
        clf__graph_fail(g, CLF_ERR_OUT_OF_MEMORY, CALL, "out of memory for the causal mask (%zu bytes)", n);
        return CLF_TENSOR_INVALID;
    }
    for (int64_t i = 0; i < sq; i++)
        for (int64_t j = 0; j < sk; j++)
            c[i * sk + j] = j <= i + sk - sq;
    int64_t shape[2] = {sq, sk};
    clf_tensor t = clf_constant(g, CLF_BOOL, 2, shape, c);
    clf__free(c);
    return t;
}

clf_tensor clf_attention(clf_graph *g, clf_tensor q, clf_tensor k, clf_tensor v, clf_tensor mask, double scale,
                         bool causal)
{
    if (!clf__graph_usable(g))
        return CLF_TENSOR_INVALID;
    operand oq, ok, ov;
    if (!get_operand(g, "q", q, NULL, &oq) || !get_operand(g, "k", k, &oq, &ok) || !get_operand(g, "v", v, &oq, &ov))
        return CLF_TENSOR_INVALID;
    int64_t d = oq.shape[oq.rank - 1], sq = oq.shape[oq.rank - 2];
    int64_t sk = ok.shape[ok.rank - 2];
    if (ok.shape[ok.rank - 1] != d) {
        char s1[CLF__SHAPE_STR_CAP], s2[CLF__SHAPE_STR_CAP];
        clf__graph_fail(g, CLF_ERR_SHAPE, CALL, "q %s and k %s: the head sizes (last extents, %" PRId64 " and %" PRId64
                        ") differ",
                        clf__graph_shape_str(s1, sizeof s1, oq.rank, oq.shape),
                        clf__graph_shape_str(s2, sizeof s2, ok.rank, ok.shape), d, ok.shape[ok.rank - 1]);
        return CLF_TENSOR_INVALID;
    }
    if (ov.shape[ov.rank - 2] != sk) {
        char s1[CLF__SHAPE_STR_CAP], s2[CLF__SHAPE_STR_CAP];
        clf__graph_fail(g, CLF_ERR_SHAPE, CALL, "k %s and v %s: the key counts (second to last extents, %" PRId64
                        " and %" PRId64 ") differ",
                        clf__graph_shape_str(s1, sizeof s1, ok.rank, ok.shape),
                        clf__graph_shape_str(s2, sizeof s2, ov.rank, ov.shape), sk, ov.shape[ov.rank - 2]);
        return CLF_TENSOR_INVALID;
    }
    int srank;
    int64_t sshape[CLF_MAX_RANK];
    if (!score_shape(g, &oq, &ok, &ov, &srank, sshape))
        return CLF_TENSOR_INVALID;
    bool has_mask = clf_tensor_valid(mask);
    clf_dtype mdt = CLF_BOOL;
    if (has_mask && !check_mask(g, mask, oq.dtype, srank, sshape, &mdt))
        return CLF_TENSOR_INVALID;
    if (!isfinite(scale)) {
        clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, CALL, "scale is %g; it must be finite (0: 1/sqrt(D))", scale);
        return CLF_TENSOR_INVALID;
    }
    if (scale == 0)
        scale = d > 0 ? 1.0 / sqrt((double)d) : 1.0; /* D = 0: the scores are all 0 whatever the scale */

    int perm[CLF_MAX_RANK];
    for (int a = 0; a < ok.rank; a++)
        perm[a] = a;
    perm[ok.rank - 2] = ok.rank - 1;
    perm[ok.rank - 1] = ok.rank - 2;
    clf_tensor kt = clf_transpose(g, k, ok.rank, perm);
    clf_tensor s = clf_matmul(g, q, kt);
    if (scale != 1.0)
        s = clf__graph_binary(g, CALL, CLF_BINARY_MUL, s, clf__graph_scalar(g, CALL, oq.dtype, scale));
    if (has_mask) {
        if (mdt == CLF_BOOL) {
            clf_tensor ninf = clf__graph_scalar(g, CALL, oq.dtype, -INFINITY);
            s = clf_where(g, mask, s, ninf);
        } else {
            s = clf__graph_binary(g, CALL, CLF_BINARY_ADD, s, mask);
        }
    }
    if (causal) { /* last: the planner skips the keys it hides */
        clf_tensor c = causal_constant(g, sq, sk);
        /* At symbolic lengths the mask is made again at each size. */
        uint8_t ssq = g->nodes[q.node].sym[oq.rank - 2], ssk = g->nodes[k.node].sym[ok.rank - 2];
        if (clf_tensor_valid(c) && (ssq || ssk)) {
            clf__node *cn = &g->nodes[c.node];
            cn->sym[0] = ssq;
            cn->sym[1] = ssk;
            cn->gen.kind = CLF__GEN_CAUSAL;
        }
        clf_tensor ninf = clf__graph_scalar(g, CALL, oq.dtype, -INFINITY);
        s = clf_where(g, c, s, ninf);
    }
    clf_tensor p = clf_softmax(g, s, -1);
    clf_tensor out = clf_matmul(g, p, v);
    return clf__graph_usable(g) ? out : CLF_TENSOR_INVALID;
}
