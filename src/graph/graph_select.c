/* Ops that select elements by data or by position: Gather (an index read
 * from a tensor picks the element along one axis) and Concat (the position
 * along one axis picks the input). Both stay index arithmetic inside the
 * kernel that reads them: a gathered load is a load at a computed index,
 * a concatenation a choice between loads. */
#include <stdio.h>
#include <string.h>

#include "util/alloc.h"

#include "graph_builder.h"
#include "graph_internal.h"

/* The checks gather and gather_elements share: both tensors valid, i32 or
 * i64 indices, an axis of data. Returns the axis in 0..rank-1 with *nd and
 * *ni set, or -1 after recording the error (call names the builder). */
static int gather_args(clf_graph *g, const char *call, clf_tensor data, clf_tensor indices, int axis,
                       const clf__node **nd, const clf__node **ni)
{
    if (!clf__graph_usable(g))
        return -1;
    *nd = clf__graph_arg(g, call, "data", data);
    *ni = *nd ? clf__graph_arg(g, call, "indices", indices) : NULL;
    if (!*ni)
        return -1;
    if ((*ni)->dtype != CLF_I32 && (*ni)->dtype != CLF_I64) {
        clf__graph_fail(g, CLF_ERR_DTYPE, call, "indices have dtype %s; %s takes i32 or i64 indices",
                        clf_dtype_name((*ni)->dtype), call + 4);
        return -1;
    }
    int a = (*nd)->rank > 0 ? clf__graph_axis(axis, (*nd)->rank) : -1;
    if (a < 0)
        clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call, "axis %d is out of range for data of rank %d", axis,
                        (*nd)->rank);
    return a;
}

/* ONNX Gather: out[a..., j..., b...] = data[a..., idx[j...], b...]. */
clf_tensor clf_gather(clf_graph *g, clf_tensor data, clf_tensor indices, int axis)
{
    static const char call[] = "clf_gather";
    const clf__node *nd, *ni;
    int a = gather_args(g, call, data, indices, axis, &nd, &ni);
    if (a < 0)
        return CLF_TENSOR_INVALID;
    int rank = nd->rank - 1 + ni->rank;
    if (rank > CLF_MAX_RANK) {
        clf__graph_fail(g, CLF_ERR_SHAPE, call, "the result would have rank %d (at most %d)", rank, CLF_MAX_RANK);
        return CLF_TENSOR_INVALID;
    }
    if (nd->shape[a] == 0 && clf__node_numel(ni) > 0) {
        clf__graph_fail(g, CLF_ERR_SHAPE, call, "axis %d of data is empty: no index is in range", axis);
        return CLF_TENSOR_INVALID;
    }
    clf__node n = {.op = CLF__OP_GATHER, .dtype = nd->dtype, .rank = rank, .ninputs = 2,
                   .inputs = (uint32_t[]){data.node, indices.node}, .attr.gather = {.axis = a}};
    int r = 0;
    for (int d = 0; d < a; d++)
        n.shape[r++] = nd->shape[d];
    for (int d = 0; d < ni->rank; d++)
        n.shape[r++] = ni->shape[d];
    for (int d = a + 1; d < nd->rank; d++)
        n.shape[r++] = nd->shape[d];
    return clf__graph_append(g, call, &n);
}

/* ONNX GatherElements: out[i] = data[i with axis replaced by indices[i]]. */
clf_tensor clf_gather_elements(clf_graph *g, clf_tensor data, clf_tensor indices, int axis)
{
    static const char call[] = "clf_gather_elements";
    const clf__node *nd, *ni;
    int a = gather_args(g, call, data, indices, axis, &nd, &ni);
    if (a < 0)
        return CLF_TENSOR_INVALID;
    char sd[CLF__SHAPE_STR_CAP], si[CLF__SHAPE_STR_CAP];
    bool fits = ni->rank == nd->rank;
    for (int d = 0; fits && d < nd->rank; d++)
        fits = d == a || ni->shape[d] <= nd->shape[d];
    if (!fits) {
        clf__graph_fail(g, CLF_ERR_SHAPE, call, "indices of shape %s do not fit data of shape %s (same rank, no "
                        "larger off axis %d)", clf__graph_shape_str(si, sizeof si, ni->rank, ni->shape),
                        clf__graph_shape_str(sd, sizeof sd, nd->rank, nd->shape), a);
        return CLF_TENSOR_INVALID;
    }
    if (nd->shape[a] == 0 && clf__node_numel(ni) > 0) {
        clf__graph_fail(g, CLF_ERR_SHAPE, call, "axis %d of data is empty: no index is in range", axis);
        return CLF_TENSOR_INVALID;
    }
    clf__node n = {.op = CLF__OP_GATHER_ELEMENTS, .dtype = nd->dtype, .rank = ni->rank, .ninputs = 2,
                   .inputs = (uint32_t[]){data.node, indices.node}, .attr.gather = {.axis = a}};
    memcpy(n.shape, ni->shape, sizeof n.shape);
    return clf__graph_append(g, call, &n);
}

/* ONNX Concat of n tensors of one dtype and rank, equal but along axis. */
clf_tensor clf_concat(clf_graph *g, int n, const clf_tensor *xs, int axis)
{
    static const char call[] = "clf_concat";
    if (!clf__graph_usable(g))
        return CLF_TENSOR_INVALID;
    if (n < 1) {
        clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call, "n = %d: concat needs a tensor", n);
        return CLF_TENSOR_INVALID;
    }
    if (!xs) {
        clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call, "xs is NULL");
        return CLF_TENSOR_INVALID;
    }
    const clf__node *first = clf__graph_arg(g, call, "xs[0]", xs[0]);
    if (!first)
        return CLF_TENSOR_INVALID;
    int a = first->rank > 0 ? clf__graph_axis(axis, first->rank) : -1;
    if (a < 0) {
        clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call, "axis %d is out of range for rank %d", axis, first->rank);
        return CLF_TENSOR_INVALID;
    }
    if (n == 1)
        return xs[0];
    uint32_t *ids = clf__malloc((size_t)n * sizeof *ids);
    if (!ids) {
        clf__graph_fail(g, CLF_ERR_OUT_OF_MEMORY, call, "out of memory");
        return CLF_TENSOR_INVALID;
    }
    clf_tensor t = CLF_TENSOR_INVALID;
    clf__node out = {.op = CLF__OP_CONCAT, .dtype = first->dtype, .rank = first->rank, .ninputs = n,
                     .inputs = ids, .attr.concat = {.axis = a}};
    memcpy(out.shape, first->shape, sizeof out.shape);
    out.shape[a] = 0;
    for (int k = 0; k < n; k++) {
        char arg[32];
        snprintf(arg, sizeof arg, "xs[%d]", k);
        const clf__node *x = clf__graph_arg(g, call, arg, xs[k]);
        if (!x)
            goto done;
        if (x->dtype != out.dtype || x->rank != out.rank) {
            clf__graph_fail(g, x->dtype != out.dtype ? CLF_ERR_DTYPE : CLF_ERR_SHAPE, call,
                            "xs[%d] is %s of rank %d; xs[0] is %s of rank %d", k, clf_dtype_name(x->dtype),
                            x->rank, clf_dtype_name(out.dtype), out.rank);
            goto done;
        }
        for (int d = 0; d < out.rank; d++) {
            if (d != a && x->shape[d] != out.shape[d]) {
                char s0[CLF__SHAPE_STR_CAP], sk[CLF__SHAPE_STR_CAP];
                clf__graph_fail(g, CLF_ERR_SHAPE, call,
                                "xs[%d] has shape %s, which differs from xs[0]'s %s off axis %d", k,
                                clf__graph_shape_str(sk, sizeof sk, x->rank, x->shape),
                                clf__graph_shape_str(s0, sizeof s0, first->rank, first->shape), a);
                goto done;
            }
        }
        if (__builtin_add_overflow(out.shape[a], x->shape[a], &out.shape[a])) {
            clf__graph_fail(g, CLF_ERR_SHAPE, call, "the result is too large along axis %d", a);
            goto done;
        }
        ids[k] = xs[k].node;
    }
    t = clf__graph_append(g, call, &out);
done:
    clf__free(ids);
    return t;
}
