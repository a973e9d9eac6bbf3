/* Contractions: ONNX MatMul and Gemm. Both become one MATMUL node over
 * operands of rank >= 2 with broadcast batch axes; everything else ONNX
 * asks for (1-D operands, Gemm's transposes, alpha, beta and C) is built
 * from movement and pointwise nodes around it, so that the planner can fuse
 * it into the GEMM kernel's loads and stores:
 *
 *   clf_matmul(a, b):  [reshape a to [1, K]] [reshape b to [K, 1]]
 *                      MATMUL [reshape dropping the added axes]
 *   clf_gemm:          [transpose a] [transpose b] MATMUL [mul alpha]
 *                      [add (c [mul beta])]
 *
 * (bracketed nodes only where needed: alpha == 1 adds no mul). */
#include <inttypes.h>
#include <string.h>

#include "graph_builder.h"
#include "graph_internal.h"

/* Operands are floats (f32, f16, bf16), all of one dtype: the product
 * accumulates in f32 and is rounded to it once (dtype_table.h). first is
 * the first operand's node, NULL when n is the first. */
static bool check_float(clf_graph *g, const char *call, const char *arg, const clf__node *n)
{
    if (clf__dtype_is_float(n->dtype))
        return true;
    clf__graph_fail(g, CLF_ERR_DTYPE, call, "%s has dtype %s; %s takes f32, f16 or bf16", arg,
                    clf_dtype_name(n->dtype), call);
    return false;
}

static bool check_same(clf_graph *g, const char *call, const char *arg, const clf__node *n, clf_dtype want)
{
    if (n->dtype == want)
        return true;
    clf__graph_fail(g, CLF_ERR_DTYPE, call, "%s has dtype %s and a has %s; cast them to one dtype", arg,
                    clf_dtype_name(n->dtype), clf_dtype_name(want));
    return false;
}

/* The MATMUL node of a [..., M, K] and b [..., K, N], both rank >= 2 and
 * already checked to be f32. */
static clf_tensor matmul_node(clf_graph *g, const char *call, clf_tensor a, clf_tensor b)
{
    const clf__node *na = clf__graph_arg(g, call, "a", a);
    if (!na)
        return CLF_TENSOR_INVALID;
    clf__node an = *na;
    const clf__node *nb = clf__graph_arg(g, call, "b", b);
    if (!nb)
        return CLF_TENSOR_INVALID;
    clf__node bn = *nb;
    int64_t ka = an.shape[an.rank - 1], kb = bn.shape[bn.rank - 2];
    if (ka != kb) {
        char sa[CLF__SHAPE_STR_CAP], sb[CLF__SHAPE_STR_CAP];
        clf__graph_fail(g, CLF_ERR_SHAPE, call,
                        "a %s and b %s: a's last extent (%" PRId64 ") is not b's second to last (%" PRId64
                        ")",
                        clf__graph_shape_str(sa, sizeof sa, an.rank, an.shape),
                        clf__graph_shape_str(sb, sizeof sb, bn.rank, bn.shape), ka, kb);
        return CLF_TENSOR_INVALID;
    }
    int rank;
    int64_t shape[CLF_MAX_RANK];
    if (!clf__graph_broadcast(an.rank - 2, an.shape, bn.rank - 2, bn.shape, &rank, shape)) {
        char sa[CLF__SHAPE_STR_CAP], sb[CLF__SHAPE_STR_CAP];
        clf__graph_fail(g, CLF_ERR_SHAPE, call, "the batch axes of a %s and b %s do not broadcast",
                        clf__graph_shape_str(sa, sizeof sa, an.rank, an.shape),
                        clf__graph_shape_str(sb, sizeof sb, bn.rank, bn.shape));
        return CLF_TENSOR_INVALID;
    }
    if (rank + 2 > CLF_MAX_RANK) {
        clf__graph_fail(g, CLF_ERR_SHAPE, call, "the result would have rank %d (at most %d)", rank + 2,
                        CLF_MAX_RANK);
        return CLF_TENSOR_INVALID;
    }
    clf__node n = {.op = CLF__OP_MATMUL, .dtype = an.dtype, .rank = rank + 2, .ninputs = 2,
                   .inputs = (uint32_t[]){a.node, b.node}};
    memcpy(n.shape, shape, (size_t)rank * sizeof *shape);
    n.shape[rank] = an.shape[an.rank - 2];
    n.shape[rank + 1] = bn.shape[bn.rank - 1];
    return clf__graph_append(g, call, &n);
}

clf_tensor clf_matmul(clf_graph *g, clf_tensor a, clf_tensor b)
{
    static const char call[] = "clf_matmul";
    if (!clf__graph_usable(g))
        return CLF_TENSOR_INVALID;
    const clf__node *na = clf__graph_arg(g, call, "a", a);
    if (!na || !check_float(g, call, "a", na))
        return CLF_TENSOR_INVALID;
    int ra = na->rank;
    int64_t ka = ra ? na->shape[ra - 1] : 0;
    clf_dtype dt = na->dtype;
    const clf__node *nb = clf__graph_arg(g, call, "b", b);
    if (!nb || !check_float(g, call, "b", nb) || !check_same(g, call, "b", nb, dt))
        return CLF_TENSOR_INVALID;
    int rb = nb->rank;
    int64_t kb = rb ? nb->shape[0] : 0;
    if (ra == 0 || rb == 0) {
        clf__graph_fail(g, CLF_ERR_SHAPE, call, "%s is a scalar; matmul takes tensors of rank >= 1",
                        ra == 0 ? "a" : "b");
        return CLF_TENSOR_INVALID;
    }
    /* 1-D operands: a [K] is [1, K], b [K] is [K, 1]. */
    if (ra == 1) {
        int64_t s[2] = {1, ka};
        a = clf_reshape(g, a, 2, s);
    }
    if (rb == 1) {
        int64_t s[2] = {kb, 1};
        b = clf_reshape(g, b, 2, s);
    }
    clf_tensor y = matmul_node(g, call, a, b);
    if ((ra > 1 && rb > 1) || !clf_tensor_valid(y) || !clf__graph_usable(g))
        return y;
    const clf__node *ny = clf__graph_node(g, y.node);
    int64_t s[CLF_MAX_RANK];
    int r = ny->rank - 2;
    memcpy(s, ny->shape, (size_t)r * sizeof *s);
    if (ra > 1)
        s[r++] = ny->shape[ny->rank - 2];
    if (rb > 1)
        s[r++] = ny->shape[ny->rank - 1];
    return clf_reshape(g, y, r, s);
}

clf_tensor clf_gemm(clf_graph *g, clf_tensor a, clf_tensor b, clf_tensor c, double alpha, double beta,
                    bool trans_a, bool trans_b)
{
    static const char call[] = "clf_gemm";
    if (!clf__graph_usable(g))
        return CLF_TENSOR_INVALID;
    const clf__node *na = clf__graph_arg(g, call, "a", a);
    if (!na || !check_float(g, call, "a", na))
        return CLF_TENSOR_INVALID;
    if (na->rank != 2) {
        clf__graph_fail(g, CLF_ERR_SHAPE, call, "a has rank %d; gemm takes 2-D a and b", na->rank);
        return CLF_TENSOR_INVALID;
    }
    clf_dtype dt = na->dtype;
    const clf__node *nb = clf__graph_arg(g, call, "b", b);
    if (!nb || !check_float(g, call, "b", nb) || !check_same(g, call, "b", nb, dt))
        return CLF_TENSOR_INVALID;
    if (nb->rank != 2) {
        clf__graph_fail(g, CLF_ERR_SHAPE, call, "b has rank %d; gemm takes 2-D a and b", nb->rank);
        return CLF_TENSOR_INVALID;
    }
    int64_t m = na->shape[trans_a ? 1 : 0], n = nb->shape[trans_b ? 0 : 1];
    bool has_c = clf_tensor_valid(c);
    if (has_c) {
        const clf__node *nc = clf__graph_arg(g, call, "c", c);
        if (!nc || !check_float(g, call, "c", nc) || !check_same(g, call, "c", nc, dt))
            return CLF_TENSOR_INVALID;
        /* C broadcasts one way: to [M, N] and nothing bigger. */
        int64_t mn[2] = {m, n}, out[CLF_MAX_RANK];
        int r;
        if (nc->rank > 2 || !clf__graph_broadcast(nc->rank, nc->shape, 2, mn, &r, out) || out[0] != m ||
            out[1] != n) {
            char sc[CLF__SHAPE_STR_CAP];
            clf__graph_fail(g, CLF_ERR_SHAPE, call, "c %s does not broadcast to [%" PRId64 ",%" PRId64 "]",
                            clf__graph_shape_str(sc, sizeof sc, nc->rank, nc->shape), m, n);
            return CLF_TENSOR_INVALID;
        }
    }
    /* Gemm is one op: for storage floats alpha * a @ b + beta * c is
     * computed in f32 and rounded once (the casts are loads in the GEMM). */
    if (clf__dtype_is_storage(dt)) {
        clf_tensor y = clf_gemm(g, clf_cast(g, a, CLF_F32), clf_cast(g, b, CLF_F32),
                                has_c ? clf_cast(g, c, CLF_F32) : CLF_TENSOR_INVALID, alpha, beta, trans_a, trans_b);
        return clf__graph_usable(g) ? clf_cast(g, y, dt) : CLF_TENSOR_INVALID;
    }
    if (trans_a)
        a = clf_transpose(g, a, 0, NULL);
    if (trans_b)
        b = clf_transpose(g, b, 0, NULL);
    if (!clf__graph_usable(g))
        return CLF_TENSOR_INVALID;
    clf_tensor y = matmul_node(g, call, a, b);
    if (alpha != 1.0)
        y = clf__graph_binary(g, call, CLF_BINARY_MUL, y, clf__graph_scalar(g, call, dt, alpha));
    if (has_c) {
        clf_tensor t = beta == 1.0 ? c
                                   : clf__graph_binary(g, call, CLF_BINARY_MUL, c,
                                                       clf__graph_scalar(g, call, dt, beta));
        y = clf__graph_binary(g, call, CLF_BINARY_ADD, y, t);
    }
    return clf__graph_usable(g) ? y : CLF_TENSOR_INVALID;
}
