/* Reductions and the composites built on them. The primitive reductions
 * (sum, prod, max, min, argmax, argmin) become REDUCE nodes; mean, variance,
 * softmax, log-softmax, layer norm and RMS norm are decomposed here, at build
 * time, into REDUCE and pointwise nodes, so that fusion (not a hand-written
 * kernel) is what makes them fast. The exact node sequence of each
 * composite is stated before its builder: the planner and the tests rely on
 * it. Every error names the public call, composites included. */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>

#include "graph_builder.h"
#include "graph_internal.h"
#include "graph_symbols.h"

static_assert(CLF__REDUCE_KIND_COUNT == 6, "update reduce_dtypes and the reference interpreter");
static_assert(CLF_REDUCE_COUNT == 5, "update clf_reduce");

/* Records CLF_ERR_DTYPE unless x is a float (or, with allow_int, i32 or
 * i64). what names the operation in the message ("sum", "softmax"). */
static bool check_dtype(clf_graph *g, const char *call, const char *what, const clf__node *x,
                        bool allow_int)
{
    if (clf__dtype_is_float(x->dtype) || (allow_int && (x->dtype == CLF_I32 || x->dtype == CLF_I64)))
        return true;
    clf__graph_fail(g, CLF_ERR_DTYPE, call, "x has dtype %s; %s takes %s", clf_dtype_name(x->dtype),
                    what, allow_int ? "f32, f16, bf16, i32 or i64" : "f32, f16 or bf16");
    return false;
}

/* The composite builders (mean, var, softmax, log_softmax, the norms)
 * compute the storage floats in f32: when t is a valid f16 or bf16 tensor,
 * *dt gets its dtype and the caller builds on clf_cast(t, f32) and casts
 * its result back once, so intermediates (exp sums, squares) neither lose
 * precision nor overflow the storage type. */
static bool storage_float(const clf_graph *g, clf_tensor t, clf_dtype *dt)
{
    clf_dtype d;
    if (!clf_tensor_valid(t) || clf_tensor_dtype(g, t, &d) != CLF_OK || !clf__dtype_is_storage(d))
        return false;
    *dt = d;
    return true;
}

static clf_tensor up_f32(clf_graph *g, clf_tensor t)
{
    clf_dtype d;
    return storage_float(g, t, &d) ? clf_cast(g, t, CLF_F32) : t;
}

/* Turns an ONNX axes list for a tensor of rank r into a bit mask of input
 * axes: negative axes count from the end, naxes 0 means every axis, and an
 * axis out of range or repeated is CLF_ERR_INVALID_ARGUMENT. Returns false
 * after recording the error. */
static bool axes_mask(clf_graph *g, const char *call, int r, int naxes, const int *axes,
                      uint32_t *mask)
{
    if (!clf__graph_axes_list(g, call, naxes, axes))
        return false;
    uint32_t m = 0;
    if (naxes == 0) {
        m = r > 0 ? (1u << r) - 1 : 0; /* r <= CLF_MAX_RANK < 32 */
    }
    /* Stops at the first bad entry, so at most r + 1 entries are read. */
    bool seen[CLF_MAX_RANK] = {false};
    for (int i = 0; i < naxes; i++) {
        int a = clf__graph_list_axis(g, call, i, axes[i], r, "rank", seen);
        if (a < 0)
            return false;
        m |= 1u << a;
    }
    *mask = m;
    return true;
}

/* One axis argument (softmax, argmax, layer norm): normalised to 0..r-1, or
 * -1 after recording CLF_ERR_INVALID_ARGUMENT. */
static int single_axis(clf_graph *g, const char *call, int axis, int r)
{
    int a = clf__graph_axis(axis, r);
    if (a < 0)
        clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call, "axis %d is out of range for rank %d", axis, r);
    return a;
}

/* The number of elements each output of a reduction over mask folds: the
 * product of the reduced extents (1 for an empty mask), as a double. */
static double reduced_count(const clf__node *x, uint32_t mask)
{
    double n = 1;
    for (int a = 0; a < x->rank; a++) {
        if (mask & (1u << a))
            n *= (double)x->shape[a];
    }
    return n;
}

/* Records the REDUCE node kind(x) over the input axes in mask; x has been
 * checked by the caller (handle, dtype, axes). The shape is x's with the
 * reduced axes removed, or set to 1 with keepdims; the dtype is x's, or i32
 * for argmax/argmin. */
static clf_tensor reduce_node(clf_graph *g, const char *call, clf__reduce_kind kind, clf_tensor x,
                              uint32_t mask, bool keepdims, bool select_last)
{
    if (!clf__graph_usable(g))
        return CLF_TENSOR_INVALID;
    const clf__node *in = clf__graph_arg(g, call, "x", x);
    if (!in)
        return CLF_TENSOR_INVALID;
    bool arg = clf__reduce_is_arg(kind);
    clf__node n = {.op = CLF__OP_REDUCE,
                   .dtype = arg ? CLF_I32 : in->dtype,
                   .ninputs = 1,
                   .inputs = (uint32_t[]){x.node},
                   .attr.reduce = {.kind = kind, .mask = mask, .keepdims = keepdims, .select_last = arg && select_last}};
    for (int a = 0; a < in->rank; a++) {
        if (!(mask & (1u << a)))
            n.shape[n.rank++] = in->shape[a];
        else if (keepdims)
            n.shape[n.rank++] = 1;
    }
    return clf__graph_append(g, call, &n);
}

/* mean over mask, as three nodes after x:
 *   s = REDUCE SUM(x, mask, keepdims); c = scalar f32 n; DIV(s, c)
 * with n the product of the reduced extents (n = 0 gives 0/0 = NaN).
 * *count receives the scalar's handle so that callers dividing by the same
 * n again can share it. */
static clf_tensor mean_nodes(clf_graph *g, const char *call, clf_tensor x, const clf__node *in,
                             uint32_t mask, bool keepdims, clf_tensor *count)
{
    double n = reduced_count(in, mask); /* in is invalidated by the appends */
    clf_tensor s = reduce_node(g, call, CLF__REDUCE_SUM, x, mask, keepdims, false);
    clf_tensor c = clf__graph_scalar(g, call, CLF_F32, n);
    clf__graph_count_gen(g, c, x.node, mask, 0);
    if (count)
        *count = c;
    return clf__graph_binary(g, call, CLF_BINARY_DIV, s, c);
}

/* ---- Primitive reductions and mean ------------------------------------ */

/* The public reductions: checks x, its dtype and the axes, then records one
 * REDUCE node (mean: the three nodes of mean_nodes). */
static clf_tensor reduce(clf_graph *g, const char *call, clf_reduce_op op, clf_tensor x, int naxes,
                         const int *axes, bool keepdims)
{
    static const clf__reduce_kind kinds[CLF_REDUCE_COUNT] = {
        [CLF_REDUCE_SUM] = CLF__REDUCE_SUM,
        [CLF_REDUCE_MEAN] = CLF__REDUCE_SUM,
        [CLF_REDUCE_MAX] = CLF__REDUCE_MAX,
        [CLF_REDUCE_MIN] = CLF__REDUCE_MIN,
        [CLF_REDUCE_PROD] = CLF__REDUCE_PROD,
    };
    static const char *const names[CLF_REDUCE_COUNT] = {
#define REDUCE_NAME_(E, n) [CLF_REDUCE_##E] = #n,
        CLF_REDUCE_OP_LIST(REDUCE_NAME_)
#undef REDUCE_NAME_
    };
    if (!clf__graph_usable(g))
        return CLF_TENSOR_INVALID;
    const clf__node *in = clf__graph_arg(g, call, "x", x);
    uint32_t mask;
    if (!in || !check_dtype(g, call, names[op], in, op != CLF_REDUCE_MEAN) ||
        !axes_mask(g, call, in->rank, naxes, axes, &mask))
        return CLF_TENSOR_INVALID;
    clf_dtype sdt;
    if (op == CLF_REDUCE_MEAN && storage_float(g, x, &sdt))
        return clf_cast(g, reduce(g, call, op, clf_cast(g, x, CLF_F32), naxes, axes, keepdims), sdt);
    if (op == CLF_REDUCE_MEAN)
        return mean_nodes(g, call, x, in, mask, keepdims, NULL);
    return reduce_node(g, call, kinds[op], x, mask, keepdims, false);
}

clf_tensor clf_reduce(clf_graph *g, clf_reduce_op op, clf_tensor x, int naxes, const int *axes,
                      bool keepdims)
{
    if (!clf__graph_usable(g))
        return CLF_TENSOR_INVALID;
    if ((unsigned)op >= CLF_REDUCE_COUNT) {
        clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, "clf_reduce", "op %d is not a clf_reduce_op",
                        (int)op);
        return CLF_TENSOR_INVALID;
    }
    return reduce(g, "clf_reduce", op, x, naxes, axes, keepdims);
}

/* clf_reduce_sum, clf_reduce_mean, clf_reduce_max, clf_reduce_min,
 * clf_reduce_prod. */
#define REDUCE_BUILDER_(E, n)                                                                           \
    clf_tensor clf_reduce_##n(clf_graph *g, clf_tensor x, int naxes, const int *axes, bool keepdims)   \
    {                                                                                                   \
        return reduce(g, "clf_reduce_" #n, CLF_REDUCE_##E, x, naxes, axes, keepdims);                  \
    }
CLF_REDUCE_OP_LIST(REDUCE_BUILDER_)
#undef REDUCE_BUILDER_

/* ArgMax / ArgMin: one REDUCE node over one non-empty axis, giving i32
 * indices (so the axis may not be longer than INT32_MAX). */
static clf_tensor arg_reduce(clf_graph *g, const char *call, clf__reduce_kind kind, clf_tensor x,
                             int axis, bool keepdims, bool select_last)
{
    const char *what = kind == CLF__REDUCE_ARGMAX ? "argmax" : "argmin";
    if (!clf__graph_usable(g))
        return CLF_TENSOR_INVALID;
    const clf__node *in = clf__graph_arg(g, call, "x", x);
    if (!in || !check_dtype(g, call, what, in, true))
        return CLF_TENSOR_INVALID;
    int a = single_axis(g, call, axis, in->rank);
    if (a < 0)
        return CLF_TENSOR_INVALID;
    if (in->shape[a] == 0) {
        clf__graph_fail(g, CLF_ERR_SHAPE, call, "%s over an empty axis (axis %d has extent 0)", what,
                        axis);
        return CLF_TENSOR_INVALID;
    }
    if (in->shape[a] > INT32_MAX) {
        clf__graph_fail(g, CLF_ERR_SHAPE, call,
                        "axis %d has extent %" PRId64 ", more than an i32 index can hold", axis,
                        in->shape[a]);
        return CLF_TENSOR_INVALID;
    }
    return reduce_node(g, call, kind, x, 1u << a, keepdims, select_last);
}

clf_tensor clf_argmax(clf_graph *g, clf_tensor x, int axis, bool keepdims, bool select_last_index)
{
    return arg_reduce(g, "clf_argmax", CLF__REDUCE_ARGMAX, x, axis, keepdims, select_last_index);
}

clf_tensor clf_argmin(clf_graph *g, clf_tensor x, int axis, bool keepdims, bool select_last_index)
{
    return arg_reduce(g, "clf_argmin", CLF__REDUCE_ARGMIN, x, axis, keepdims, select_last_index);
}

/* ---- Variance --------------------------------------------------------- */

/* Variance, as these nodes after x (8 in all, 7 when correction is 0):
 *   s1 = REDUCE SUM(x, mask, keepdims=true); c = scalar n; m = DIV(s1, c)
 *   d = SUB(x, m); q = MUL(d, d); s2 = REDUCE SUM(q, mask, keepdims)
 *   [c2 = scalar max(n - correction, 0), only when correction is 1]
 *   out = DIV(s2, c2 or c)
 * The divisor is clamped at 0 as torch.var does, so that a sample variance
 * of an empty set is 0/0 = NaN rather than 0/-1. */
clf_tensor clf_reduce_var(clf_graph *g, clf_tensor x, int naxes, const int *axes, bool keepdims,
                          int correction)
{
    static const char call[] = "clf_reduce_var";
    if (!clf__graph_usable(g))
        return CLF_TENSOR_INVALID;
    const clf__node *in = clf__graph_arg(g, call, "x", x);
    uint32_t mask;
    if (!in || !check_dtype(g, call, "var", in, false) ||
        !axes_mask(g, call, in->rank, naxes, axes, &mask))
        return CLF_TENSOR_INVALID;
    if (correction != 0 && correction != 1) {
        clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call, "correction is %d; it must be 0 or 1",
                        correction);
        return CLF_TENSOR_INVALID;
    }
    clf_dtype sdt;
    if (storage_float(g, x, &sdt))
        return clf_cast(g, clf_reduce_var(g, clf_cast(g, x, CLF_F32), naxes, axes, keepdims, correction), sdt);
    double n = reduced_count(in, mask);
    clf_tensor c;
    clf_tensor m = mean_nodes(g, call, x, in, mask, true, &c);
    clf_tensor d = clf__graph_binary(g, call, CLF_BINARY_SUB, x, m);
    clf_tensor q = clf__graph_binary(g, call, CLF_BINARY_MUL, d, d);
    clf_tensor s = reduce_node(g, call, CLF__REDUCE_SUM, q, mask, keepdims, false);
    if (correction != 0) {
        c = clf__graph_scalar(g, call, CLF_F32, n > correction ? n - correction : 0.0);
        clf__graph_count_gen(g, c, x.node, mask, correction);
    }
    return clf__graph_binary(g, call, CLF_BINARY_DIV, s, c);
}

/* ---- Softmax ---------------------------------------------------------- */

/* Checks the x and axis of softmax / log_softmax and gives x's node and the
 * normalised axis; false after recording the error. */
static bool softmax_args(clf_graph *g, const char *call, const char *what, clf_tensor x, int axis,
                         int *a)
{
    if (!clf__graph_usable(g))
        return false;
    const clf__node *in = clf__graph_arg(g, call, "x", x);
    if (!in || !check_dtype(g, call, what, in, false))
        return false;
    *a = single_axis(g, call, axis, in->rank);
    return *a >= 0;
}

/* The shared start of softmax and log_softmax over axis a, 4 nodes:
 * m = REDUCE MAX(x) (keepdims); *d = SUB(x, m); *e = EXP(*d);
 * *s = REDUCE SUM(*e) (keepdims). */
static void softmax_terms(clf_graph *g, const char *call, clf_tensor x, int a, clf_tensor *d, clf_tensor *e,
                          clf_tensor *s)
{
    uint32_t r = 1u << a;
    clf_tensor m = reduce_node(g, call, CLF__REDUCE_MAX, x, r, true, false);
    *d = clf__graph_binary(g, call, CLF_BINARY_SUB, x, m);
    *e = clf__graph_unary(g, call, CLF_UNARY_EXP, *d);
    *s = reduce_node(g, call, CLF__REDUCE_SUM, *e, r, true, false);
}

/* Softmax, as 5 nodes after x (r the one-axis mask, keepdims on both
 * reductions):
 *   m = REDUCE MAX(x, r); d = SUB(x, m); e = EXP(d);
 *   s = REDUCE SUM(e, r); out = DIV(e, s) */
clf_tensor clf_softmax(clf_graph *g, clf_tensor x, int axis)
{
    static const char call[] = "clf_softmax";
    int a;
    if (!softmax_args(g, call, "softmax", x, axis, &a))
        return CLF_TENSOR_INVALID;
    clf_dtype sdt;
    if (storage_float(g, x, &sdt))
        return clf_cast(g, clf_softmax(g, clf_cast(g, x, CLF_F32), axis), sdt);
    clf_tensor d, e, s;
    softmax_terms(g, call, x, a, &d, &e, &s);
    return clf__graph_binary(g, call, CLF_BINARY_DIV, e, s);
}

/* Log-softmax, as 6 nodes after x (keepdims on both reductions):
 *   m = REDUCE MAX(x, r); d = SUB(x, m); e = EXP(d);
 *   s = REDUCE SUM(e, r); l = LOG(s); out = SUB(d, l) */
clf_tensor clf_log_softmax(clf_graph *g, clf_tensor x, int axis)
{
    static const char call[] = "clf_log_softmax";
    int a;
    if (!softmax_args(g, call, "log_softmax", x, axis, &a))
        return CLF_TENSOR_INVALID;
    clf_dtype sdt;
    if (storage_float(g, x, &sdt))
        return clf_cast(g, clf_log_softmax(g, clf_cast(g, x, CLF_F32), axis), sdt);
    clf_tensor d, e, s;
    softmax_terms(g, call, x, a, &d, &e, &s);
    clf_tensor l = clf__graph_unary(g, call, CLF_UNARY_LOG, s);
    return clf__graph_binary(g, call, CLF_BINARY_SUB, d, l);
}

/* ---- Layer norm and RMS norm ----------------------------------------- */

/* Checks what the norms share: x is f32, axis is in range (ONNX: -r..r-1),
 * epsilon is neither negative nor NaN. Gives the normalised axis, the mask
 * of axes axis..r-1 and the element count n of one normalised group. */
static bool norm_args(clf_graph *g, const char *call, const char *what, clf_tensor x, int *axis,
                      double epsilon, uint32_t *mask, double *n)
{
    if (!clf__graph_usable(g))
        return false;
    const clf__node *in = clf__graph_arg(g, call, "x", x);
    if (!in || !check_dtype(g, call, what, in, false))
        return false;
    int a = single_axis(g, call, *axis, in->rank);
    if (a < 0)
        return false;
    if (isnan(epsilon) || epsilon < 0) {
        clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call, "epsilon is %g; it must be >= 0", epsilon);
        return false;
    }
    *axis = a;
    *mask = ((1u << in->rank) - 1) & ~((1u << a) - 1);
    *n = reduced_count(in, *mask);
    return true;
}

/* Checks an optional affine operand (scale or bias) of a norm: when t is
 * valid it must be an f32 tensor of this graph that broadcasts against
 * x.shape[axis:] without changing it (rank <= rank(x) - axis, each extent
 * 1 or equal to x's). */
static bool affine_arg(clf_graph *g, const char *call, const char *arg, clf_tensor t, clf_tensor x,
                       int axis)
{
    if (!clf_tensor_valid(t))
        return true;
    const clf__node *p = clf__graph_arg(g, call, arg, t);
    if (!p)
        return false;
    if (p->dtype != CLF_F32) {
        clf__graph_fail(g, CLF_ERR_DTYPE, call, "%s has dtype %s; it must be f32", arg,
                        clf_dtype_name(p->dtype));
        return false;
    }
    const clf__node *in = clf__graph_node(g, x.node);
    int tail = in->rank - axis;
    bool ok = p->rank <= tail;
    for (int i = 0; ok && i < p->rank; i++) {
        int64_t e = p->shape[i], want = in->shape[in->rank - p->rank + i];
        ok = e == 1 || e == want;
    }
    if (!ok) {
        char sp[CLF__SHAPE_STR_CAP], sx[CLF__SHAPE_STR_CAP];
        clf__graph_fail(g, CLF_ERR_SHAPE, call,
                        "%s has shape %s, which does not broadcast against x.shape[%d:] = %s", arg,
                        clf__graph_shape_str(sp, sizeof sp, p->rank, p->shape), axis,
                        clf__graph_shape_str(sx, sizeof sx, tail, in->shape + axis));
        return false;
    }
    return true;
}

/* Layer norm over axes axis..r-1 (mask r, keepdims on every reduction), as
 * 11 nodes after x, plus one for scale and one for bias:
 *   s1 = REDUCE SUM(x, r); c = scalar n; mean = DIV(s1, c)
 *   d = SUB(x, mean); q = MUL(d, d); s2 = REDUCE SUM(q, r); var = DIV(s2, c)
 *   ce = scalar eps; ve = ADD(var, ce); rs = RSQRT(ve); out = MUL(d, rs)
 *   [out = MUL(out, scale)] [out = ADD(out, bias)]
 * c is shared by both divisions. */
clf_tensor clf_layer_norm(clf_graph *g, clf_tensor x, int axis, double epsilon, clf_tensor scale,
                          clf_tensor bias)
{
    static const char call[] = "clf_layer_norm";
    uint32_t r;
    double n;
    clf_dtype sdt = CLF_F32, d2;
    bool sx = storage_float(g, x, &sdt);
    if (sx || storage_float(g, scale, &d2) || storage_float(g, bias, &d2)) {
        clf_tensor y = clf_layer_norm(g, up_f32(g, x), axis, epsilon, up_f32(g, scale), up_f32(g, bias));
        return sx ? clf_cast(g, y, sdt) : y;
    }
    if (!norm_args(g, call, "layer_norm", x, &axis, epsilon, &r, &n) ||
        !affine_arg(g, call, "scale", scale, x, axis) || !affine_arg(g, call, "bias", bias, x, axis))
        return CLF_TENSOR_INVALID;
    clf_tensor s1 = reduce_node(g, call, CLF__REDUCE_SUM, x, r, true, false);
    clf_tensor c = clf__graph_scalar(g, call, CLF_F32, n);
    clf__graph_count_gen(g, c, x.node, r, 0);
    clf_tensor mean = clf__graph_binary(g, call, CLF_BINARY_DIV, s1, c);
    clf_tensor d = clf__graph_binary(g, call, CLF_BINARY_SUB, x, mean);
    clf_tensor q = clf__graph_binary(g, call, CLF_BINARY_MUL, d, d);
    clf_tensor s2 = reduce_node(g, call, CLF__REDUCE_SUM, q, r, true, false);
    clf_tensor var = clf__graph_binary(g, call, CLF_BINARY_DIV, s2, c);
    clf_tensor ce = clf__graph_scalar(g, call, CLF_F32, epsilon);
    clf_tensor ve = clf__graph_binary(g, call, CLF_BINARY_ADD, var, ce);
    clf_tensor rs = clf__graph_unary(g, call, CLF_UNARY_RSQRT, ve);
    clf_tensor out = clf__graph_binary(g, call, CLF_BINARY_MUL, d, rs);
    if (clf_tensor_valid(scale))
        out = clf__graph_binary(g, call, CLF_BINARY_MUL, out, scale);
    if (clf_tensor_valid(bias))
        out = clf__graph_binary(g, call, CLF_BINARY_ADD, out, bias);
    return out;
}

/* RMS norm over axes axis..r-1, as 8 nodes after x, plus one for scale:
 *   q = MUL(x, x); s = REDUCE SUM(q, r, keepdims); c = scalar n;
 *   ms = DIV(s, c); ce = scalar eps; me = ADD(ms, ce); rs = RSQRT(me);
 *   out = MUL(x, rs) [out = MUL(out, scale)] */
clf_tensor clf_rms_norm(clf_graph *g, clf_tensor x, int axis, double epsilon, clf_tensor scale)
{
    static const char call[] = "clf_rms_norm";
    uint32_t r;
    double n;
    clf_dtype sdt = CLF_F32, d2;
    bool sx = storage_float(g, x, &sdt);
    if (sx || storage_float(g, scale, &d2)) {
        clf_tensor y = clf_rms_norm(g, up_f32(g, x), axis, epsilon, up_f32(g, scale));
        return sx ? clf_cast(g, y, sdt) : y;
    }
    if (!norm_args(g, call, "rms_norm", x, &axis, epsilon, &r, &n) ||
        !affine_arg(g, call, "scale", scale, x, axis))
        return CLF_TENSOR_INVALID;
    clf_tensor q = clf__graph_binary(g, call, CLF_BINARY_MUL, x, x);
    clf_tensor s = reduce_node(g, call, CLF__REDUCE_SUM, q, r, true, false);
    clf_tensor c = clf__graph_scalar(g, call, CLF_F32, n);
    clf__graph_count_gen(g, c, x.node, r, 0);
    clf_tensor ms = clf__graph_binary(g, call, CLF_BINARY_DIV, s, c);
    clf_tensor ce = clf__graph_scalar(g, call, CLF_F32, epsilon);
    clf_tensor me = clf__graph_binary(g, call, CLF_BINARY_ADD, ms, ce);
    clf_tensor rs = clf__graph_unary(g, call, CLF_UNARY_RSQRT, me);
    clf_tensor out = clf__graph_binary(g, call, CLF_BINARY_MUL, x, rs);
    if (clf_tensor_valid(scale))
        out = clf__graph_binary(g, call, CLF_BINARY_MUL, out, scale);
    return out;
}
