/* Movement ops (reshape, transpose, expand, slice, squeeze, unsqueeze):
 * ONNX's rules for each are applied here, once, and the node keeps only the
 * normalised result described in graph_internal.h (output shape; perm for
 * TRANSPOSE; per-input-axis start/step for SLICE). */
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "graph_builder.h"
#include "graph_internal.h"
#include "graph_symbols.h"

/* A movement node reading *x (the caller's, alive until the append) with
 * the given output shape. */
static clf__node movement_node(clf__op op, const clf__node *in, const clf_tensor *x, int rank,
                               const int64_t *shape)
{
    clf__node n = {.op = op, .dtype = in->dtype, .rank = rank, .ninputs = 1, .inputs = (uint32_t *)&x->node};
    for (int i = 0; i < rank; i++)
        n.shape[i] = shape[i];
    return n;
}

/* ONNX Reshape with allowzero = 0: 0 copies the input extent at the same
 * position, one -1 is inferred, and the element count must not change. */
clf_tensor clf_reshape(clf_graph *g, clf_tensor x, int rank, const int64_t *shape)
{
    static const char call[] = "clf_reshape";
    if (!clf__graph_usable(g))
        return CLF_TENSOR_INVALID;
    const clf__node *in = clf__graph_arg(g, call, "x", x);
    int64_t given[CLF_MAX_RANK];
    uint8_t sym[CLF_MAX_RANK] = {0};
    if (in && shape && rank > 0 && rank <= CLF_MAX_RANK) {
        clf__graph_take_dims(g, rank, shape, given, sym);
        shape = given;
    }
    if (!in || !clf__graph_check_shape(g, call, "shape", rank, shape, true))
        return CLF_TENSOR_INVALID;
    int64_t out[CLF_MAX_RANK];
    int infer = -1;
    for (int i = 0; i < rank; i++) {
        if (shape[i] == 0) {
            if (i >= in->rank) {
                clf__graph_fail(g, CLF_ERR_SHAPE, call,
                                "shape[%d] = 0 copies an extent, but x has rank %d", i, in->rank);
                return CLF_TENSOR_INVALID;
            }
            out[i] = in->shape[i];
            sym[i] = in->sym[i];
        } else if (shape[i] == -1) {
            if (infer >= 0) {
                clf__graph_fail(g, CLF_ERR_SHAPE, call, "shape[%d] and shape[%d] are both -1", infer, i);
                return CLF_TENSOR_INVALID;
            }
            infer = i;
            out[i] = 1;
        } else if (shape[i] < 0) {
            clf__graph_fail(g, CLF_ERR_SHAPE, call,
                            "shape[%d] = %" PRId64 " is invalid (only -1 may be negative)", i, shape[i]);
            return CLF_TENSOR_INVALID;
        } else {
            out[i] = shape[i];
        }
    }
    /* known: the product of the given extents; overflow means "too many". */
    int64_t numel = clf__node_numel(in), known = 1;
    bool overflow = false, zero = false;
    for (int i = 0; i < rank; i++) {
        zero = zero || out[i] == 0;
        if (!zero && !overflow)
            overflow = __builtin_mul_overflow(known, out[i], &known);
    }
    if (zero) {
        known = 0;
        overflow = false;
    }
    if (infer >= 0 && known == 0) {
        clf__graph_fail(g, CLF_ERR_SHAPE, call,
                        "shape[%d] = -1 cannot be inferred: the other extents multiply to 0", infer);
        return CLF_TENSOR_INVALID;
    }
    bool fits = !overflow && (infer >= 0 ? numel % known == 0 : known == numel);
    if (!fits) {
        char sx[CLF__SHAPE_STR_CAP], ss[CLF__SHAPE_STR_CAP];
        clf__graph_fail(g, CLF_ERR_SHAPE, call,
                        "x has shape %s (%" PRId64 " elements), which shape %s cannot hold",
                        clf__graph_shape_str(sx, sizeof sx, in->rank, in->shape), numel,
                        clf__graph_shape_str(ss, sizeof ss, rank, shape));
        return CLF_TENSOR_INVALID;
    }
    if (infer >= 0)
        out[infer] = numel / known;
    clf__node n = movement_node(CLF__OP_RESHAPE, in, &x, rank, out);
    memcpy(n.sym, sym, sizeof n.sym);
    return clf__graph_append(g, call, &n);
}

/* ONNX Transpose: output axis i is input axis perm[i]; nperm 0 reverses. */
clf_tensor clf_transpose(clf_graph *g, clf_tensor x, int nperm, const int *perm)
{
    static const char call[] = "clf_transpose";
    if (!clf__graph_usable(g))
        return CLF_TENSOR_INVALID;
    const clf__node *in = clf__graph_arg(g, call, "x", x);
    if (!in)
        return CLF_TENSOR_INVALID;
    int r = in->rank, p[CLF_MAX_RANK];
    if (nperm == 0) {
        for (int i = 0; i < r; i++)
            p[i] = r - 1 - i;
    } else {
        if (!perm) {
            clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call, "perm is NULL");
            return CLF_TENSOR_INVALID;
        }
        if (nperm != r) {
            clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call, "perm has %d entries but x has rank %d",
                            nperm, r);
            return CLF_TENSOR_INVALID;
        }
        bool seen[CLF_MAX_RANK] = {false};
        for (int i = 0; i < r; i++) {
            if (perm[i] < 0 || perm[i] >= r) {
                clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call,
                                "perm[%d] = %d is out of range for rank %d", i, perm[i], r);
                return CLF_TENSOR_INVALID;
            }
            if (seen[perm[i]]) {
                clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call, "perm[%d] = %d repeats an axis", i,
                                perm[i]);
                return CLF_TENSOR_INVALID;
            }
            seen[perm[i]] = true;
            p[i] = perm[i];
        }
    }
    int64_t out[CLF_MAX_RANK];
    for (int i = 0; i < r; i++)
        out[i] = in->shape[p[i]];
    clf__node n = movement_node(CLF__OP_TRANSPOSE, in, &x, r, out);
    memcpy(n.attr.transpose.perm, p, (size_t)r * sizeof *p);
    return clf__graph_append(g, call, &n);
}

/* ONNX Expand: x and shape broadcast against each other. */
clf_tensor clf_expand(clf_graph *g, clf_tensor x, int rank, const int64_t *shape)
{
    static const char call[] = "clf_expand";
    if (!clf__graph_usable(g))
        return CLF_TENSOR_INVALID;
    const clf__node *in = clf__graph_arg(g, call, "x", x);
    int64_t given[CLF_MAX_RANK];
    uint8_t sym[CLF_MAX_RANK] = {0};
    if (in && shape && rank > 0 && rank <= CLF_MAX_RANK) {
        clf__graph_take_dims(g, rank, shape, given, sym);
        shape = given;
    }
    if (!in || !clf__graph_check_shape(g, call, "shape", rank, shape, false))
        return CLF_TENSOR_INVALID;
    int rout;
    int64_t out[CLF_MAX_RANK];
    if (!clf__graph_broadcast(in->rank, in->shape, rank, shape, &rout, out)) {
        char sx[CLF__SHAPE_STR_CAP], ss[CLF__SHAPE_STR_CAP];
        clf__graph_fail(g, CLF_ERR_SHAPE, call, "x has shape %s, which does not broadcast with shape %s",
                        clf__graph_shape_str(sx, sizeof sx, in->rank, in->shape),
                        clf__graph_shape_str(ss, sizeof ss, rank, shape));
        return CLF_TENSOR_INVALID;
    }
    clf__node n = movement_node(CLF__OP_EXPAND, in, &x, rout, out);
    if (!clf__graph_expand_syms(g, call, in, rank, shape, sym, &n))
        return CLF_TENSOR_INVALID;
    return clf__graph_append(g, call, &n);
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* ceil(a / b) for a >= 0, b > 0, without overflow. */
static int64_t ceil_div(int64_t a, int64_t b)
{
    return a / b + (a % b != 0);
}

/* One axis of ONNX Slice: negative start/end count from the end, then for
 * step > 0 both clamp to [0, dim]; for step < 0 start clamps to
 * [0, dim-1] and end to [-1, dim-1]. The extent is
 * max(0, ceil((end - start) / step)). */
static void slice_axis(int64_t dim, int64_t start, int64_t end, int64_t step, int64_t *start_out,
                       int64_t *extent)
{
    if (start < 0)
        start += dim;
    if (end < 0)
        end += dim;
    if (step > 0) {
        start = clamp64(start, 0, dim);
        end = clamp64(end, 0, dim);
        *start_out = start;
        *extent = end > start ? ceil_div(end - start, step) : 0;
    } else if (dim == 0) {
        *start_out = 0;
        *extent = 0;
    } else {
        start = clamp64(start, 0, dim - 1);
        end = clamp64(end, -1, dim - 1);
        *start_out = start;
        if (start <= end)
            *extent = 0;
        else if (step == INT64_MIN) /* -step would overflow; start - end <= dim < -step */
            *extent = 1;
        else
            *extent = ceil_div(start - end, -step);
    }
}

/* ONNX Slice; stores, for every input axis, the first index read and the
 * step (0 and 1 on axes not sliced). */
clf_tensor clf_slice(clf_graph *g, clf_tensor x, int n, const int64_t *starts, const int64_t *ends,
                     const int *axes, const int64_t *steps)
{
    static const char call[] = "clf_slice";
    if (!clf__graph_usable(g))
        return CLF_TENSOR_INVALID;
    const clf__node *in = clf__graph_arg(g, call, "x", x);
    if (!in)
        return CLF_TENSOR_INVALID;
    int r = in->rank;
    const char *bad = n < 0              ? "n is negative"
                      : n > 0 && !starts ? "starts is NULL"
                      : n > 0 && !ends   ? "ends is NULL"
                                         : NULL;
    if (bad) {
        clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call, "%s", bad);
        return CLF_TENSOR_INVALID;
    }
    if (!axes && n > r) {
        clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call, "n = %d exceeds the rank %d of x", n, r);
        return CLF_TENSOR_INVALID;
    }
    clf__node node = movement_node(CLF__OP_SLICE, in, &x, r, in->shape);
    for (int a = 0; a < r; a++)
        node.attr.slice.step[a] = 1;
    bool seen[CLF_MAX_RANK] = {false};
    for (int i = 0; i < n; i++) {
        int a = axes ? clf__graph_list_axis(g, call, i, axes[i], r, "rank", seen) : i;
        if (a < 0)
            return CLF_TENSOR_INVALID;
        int64_t step = steps ? steps[i] : 1;
        if (step == 0) {
            clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call, "steps[%d] is 0", i);
            return CLF_TENSOR_INVALID;
        }
        node.attr.slice.step[a] = step;
        int end_sym = clf__graph_dim_token(g, ends[i]);
        if (end_sym) {
            /* [start, L) of a fixed axis, L symbolic: the first L entries of
             * a buffer with room for more (a KV cache's valid part). */
            const clf__dim_sym *L = &g->syms[end_sym - 1];
            if (in->sym[a] || starts[i] != 0 || step != 1 || L->hi == 0 || L->hi > in->shape[a]) {
                clf__graph_fail(g, CLF_ERR_SHAPE, call,
                                "ends[%d] is symbolic %s: supported as [0, %s) of a fixed axis no shorter than "
                                "%s's upper bound (axis %d: %" PRId64 "%s, start %" PRId64 ", step %" PRId64
                                ", bound %" PRId64 ")",
                                i, L->name, L->name, L->name, a, in->shape[a], in->sym[a] ? " symbolic" : "",
                                starts[i], step, L->hi);
                return CLF_TENSOR_INVALID;
            }
            node.attr.slice.start[a] = 0;
            node.shape[a] = L->rep;
            node.sym[a] = (uint8_t)end_sym;
            continue;
        }
        slice_axis(in->shape[a], starts[i], ends[i], step, &node.attr.slice.start[a], &node.shape[a]);
        if (!clf__graph_slice_sym_ok(g, call, in, a, node.attr.slice.start[a], ends[i], step, node.shape[a]))
            return CLF_TENSOR_INVALID;
    }
    return clf__graph_append(g, call, &node);
}

/* ONNX Squeeze: removes the listed axes, which must have extent 1, or
 * every extent-1 axis when naxes is 0. */
clf_tensor clf_squeeze(clf_graph *g, clf_tensor x, int naxes, const int *axes)
{
    static const char call[] = "clf_squeeze";
    if (!clf__graph_usable(g))
        return CLF_TENSOR_INVALID;
    const clf__node *in = clf__graph_arg(g, call, "x", x);
    if (!in)
        return CLF_TENSOR_INVALID;
    int r = in->rank;
    bool drop[CLF_MAX_RANK] = {false};
    if (!clf__graph_axes_list(g, call, naxes, axes))
        return CLF_TENSOR_INVALID;
    if (naxes == 0) {
        for (int a = 0; a < r; a++)
            drop[a] = in->shape[a] == 1;
    }
    for (int i = 0; i < naxes; i++) {
        int a = clf__graph_list_axis(g, call, i, axes[i], r, "rank", drop);
        if (a < 0)
            return CLF_TENSOR_INVALID;
        if (in->shape[a] != 1) {
            clf__graph_fail(g, CLF_ERR_SHAPE, call,
                            "axes[%d] = %d names an axis of extent %" PRId64 ", not 1", i, axes[i],
                            in->shape[a]);
            return CLF_TENSOR_INVALID;
        }
    }
    int rout = 0;
    int64_t out[CLF_MAX_RANK];
    for (int a = 0; a < r; a++) {
        if (!drop[a])
            out[rout++] = in->shape[a];
    }
    clf__node n = movement_node(CLF__OP_SQUEEZE, in, &x, rout, out);
    return clf__graph_append(g, call, &n);
}

/* ONNX Unsqueeze: inserts extent-1 axes at the listed positions of the
 * output (negative positions count from the output's end). */
clf_tensor clf_unsqueeze(clf_graph *g, clf_tensor x, int naxes, const int *axes)
{
    static const char call[] = "clf_unsqueeze";
    if (!clf__graph_usable(g))
        return CLF_TENSOR_INVALID;
    const clf__node *in = clf__graph_arg(g, call, "x", x);
    if (!in)
        return CLF_TENSOR_INVALID;
    int r = in->rank;
    if (!clf__graph_axes_list(g, call, naxes, axes))
        return CLF_TENSOR_INVALID;
    if (naxes > CLF_MAX_RANK - r) {
        clf__graph_fail(g, CLF_ERR_SHAPE, call, "x has rank %d; %d more axes exceed the maximum rank %d",
                        r, naxes, CLF_MAX_RANK);
        return CLF_TENSOR_INVALID;
    }
    int rout = r + naxes;
    bool ins[CLF_MAX_RANK] = {false};
    for (int i = 0; i < naxes; i++) {
        if (clf__graph_list_axis(g, call, i, axes[i], rout, "output rank", ins) < 0)
            return CLF_TENSOR_INVALID;
    }
    int64_t out[CLF_MAX_RANK];
    for (int a = 0, j = 0; a < rout; a++)
        out[a] = ins[a] ? 1 : in->shape[j++];
    clf__node n = movement_node(CLF__OP_UNSQUEEZE, in, &x, rout, out);
    return clf__graph_append(g, call, &n);
}
