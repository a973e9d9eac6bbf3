/* The reference interpreter: the oracle every numeric test compares kernels
 * against. It walks the graph's nodes in order (builders only reference
 * earlier nodes, so the node array is a topological order), evaluates every
 * node that some output needs into a host array with plain loops, and copies
 * the outputs' values to the caller's memory. It shares no code with the
 * planner or codegen on purpose: a bug shared by both would hide.
 *
 * SEMANTICS (the kernels implement exactly these)
 *
 * Storage: f32 is float, i32 is int32_t, bool is one byte. A bool read from
 * memory is true when its byte is non-zero; a bool produced by an op is 0 or
 * 1 (a cast from bool to bool, like every same-dtype cast, copies bytes).
 *
 * Arithmetic: an f32 op computes in double from its float operands and
 * rounds its result to float, so each op is correctly rounded (or within a
 * few ulp for the transcendental ones); results are never kept in double
 * from one op to the next. i32 ops wrap around modulo 2^32.
 *
 * Unary, f32:
 *   neg -x         abs fabs(x)      exp, log, sqrt, sin, cos, tanh, erf,
 *   floor, ceil as in C             rsqrt 1/sqrt(x)    reciprocal 1/x
 *   sigmoid 1/(1+exp(-x))           relu  x < 0 ? 0 : x  (relu(NaN) = NaN,
 *                                         relu(-0.0) = -0.0)
 *   gelu 0.5*x*(1+erf(x/sqrt(2)))   silu  x*sigmoid(x)
 *   sign x > 0 ? 1 : x < 0 ? -1 : x  (±0 and NaN are returned unchanged)
 *   (gelu(-inf) and silu(-inf) are -inf*0 = NaN by these formulas.)
 * Unary, i32: neg wraps (neg INT32_MIN = INT32_MIN), abs wraps the same way
 *   (abs INT32_MIN = INT32_MIN), sign gives -1, 0 or 1.
 * Unary, bool: logical_not gives x == 0.
 *
 * Binary (operands share a dtype and broadcast numpy-style):
 *   add, sub, mul: f32 IEEE; i32 wrapping.
 *   div: f32 IEEE (x/0 = ±inf, 0/0 = NaN); i32 truncates toward zero,
 *        x/0 = 0 and INT32_MIN/-1 = INT32_MIN.
 *   pow: f32, C pow().
 *   maximum(a, b) = (a > b || isnan(a)) ? a : b
 *   minimum(a, b) = (a < b || isnan(a)) ? a : b
 *        so a NaN on either side propagates (the same formulas for i32).
 *   eq ne lt le gt ge: bool result, compared as C compares (any comparison
 *        with NaN is false except ne); bool operands compare as truth values.
 *   logical_and, logical_or: bool.
 *
 * where(cond, a, b) = cond != 0 ? a : b (all three broadcast together).
 * clip(x, lo, hi):
 *   f32: lo and hi are rounded to float, then minimum(maximum(x, lo), hi)
 *        with the formulas above (NaN x stays NaN; lo > hi gives hi).
 *   i32: lo and hi are rounded toward zero and clamped to the int32 range
 *        (-INFINITY means INT32_MIN, INFINITY INT32_MAX), then
 *        min(max(x, lo), hi). (The builder refuses NaN bounds; were one to
 *        arrive here it would mean no bound.)
 * cast:
 *   f32 -> i32 truncates toward zero and saturates to [INT32_MIN, INT32_MAX];
 *        NaN -> 0.
 *   any -> bool is x != 0 (NaN -> 1).
 *   bool -> f32 / i32 gives 0 or 1.
 *   i32 -> f32 rounds to nearest (the plain C conversion).
 *   same dtype: a copy.
 *
 * Movement ops, as graph_internal.h normalises them:
 *   reshape, squeeze, unsqueeze: the same C-order element sequence under the
 *     node's shape;
 *   transpose: output axis i is input axis perm[i];
 *   expand: numpy broadcast of the input to the node's shape;
 *   slice: the input index on axis a is start[a] + i * step[a].
 *
 * Reductions (REDUCE nodes; mean, var, softmax and the norms are built from
 * these and pointwise ops by the builder): each output element folds the
 * input elements that share its indices on the kept axes, in C order of
 * the reduced axes. A reduction over no axes (a rank-0 input) folds one
 * element: the identity.
 *   sum:  f32 accumulated in double from +0 and rounded once to float (so a
 *         sum of -0s is +0); i32 wraps modulo 2^32.
 *   prod: f32 in double from 1, rounded once; i32 wraps.
 *   max, min: maximum / minimum above, so any NaN in the set gives NaN.
 *   An empty set (a reduced extent of 0) gives ONNX opset 18's values: sum
 *   0, prod 1, max -inf (i32 INT32_MIN), min +inf (i32 INT32_MAX).
 *   argmax, argmin (one non-empty axis, i32 result): the index along the
 *   axis of the largest / smallest value; of equal values the first, or
 *   the last with select_last; the first NaN wins whatever select_last
 *   says (numpy); -0 and +0 are equal.
 *
 * Every node's elements are visited in C order with a multi-index; the
 * offset of each operand is recomputed from the index and the operand's
 * per-axis strides, which costs O(numel * rank) per node.
 *
 * Bindings: each graph input and output is bound exactly once, by name.
 * Outputs are written only after every node has been evaluated, and inputs
 * are copied first, so an output may share memory with an input. Nothing is
 * written to an output on failure.
 */
#include "clfuse/reference.h"
#include "util/alloc.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Operands a node of the interpreter may read (where reads three). */
#define MAX_OPERANDS 3

#include "graph/graph_internal.h"
#include "graph/graph_symbols.h"

/* Where one operand's elements lie for each multi-index of the node being
 * evaluated: offset = base + sum(idx[a] * stride[a]), in elements. */
typedef struct view {
    int64_t base;
    int64_t stride[CLF_MAX_RANK];
} view;

/* Writes a formatted message to the caller's buffer, if there is one. */
static void set_message(char *message, size_t cap, const char *fmt, ...)
{
    if (!message || cap == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, cap, fmt, ap);
    va_end(ap);
}

static size_t elem_size(clf_dtype dt) { return clf_dtype_size(dt); }

/* Element count of a node, or -1 when the shape is malformed or its byte
 * size does not fit in size_t (the builder should have refused both). */
static int64_t node_numel(const clf__node *n)
{
    if (n->rank < 0 || n->rank > CLF_MAX_RANK)
        return -1;
    size_t esize = elem_size(n->dtype);
    if (esize == 0)
        return -1;
    int64_t numel = 1;
    for (int a = 0; a < n->rank; a++) {
        int64_t e = n->shape[a];
        if (e < 0)
            return -1;
        if (e != 0 && numel > INT64_MAX / e)
            return -1;
        numel *= e;
    }
    if ((uint64_t)numel > SIZE_MAX / esize)
        return -1;
    return numel;
}

/* C-order strides, in elements, of a shape. */
static void c_strides(int rank, const int64_t *shape, int64_t *strides)
{
    int64_t s = 1;
    for (int a = rank - 1; a >= 0; a--) {
        strides[a] = s;
        s *= shape[a] > 0 ? shape[a] : 1;
    }
}

/* The view of an operand broadcast numpy-style (right-aligned, extent 1
 * repeated) to the node's shape. False when the shapes do not broadcast. */
static bool broadcast_view(const clf__node *in, const clf__node *out, view *v)
{
    int64_t in_strides[CLF_MAX_RANK];
    if (in->rank > out->rank)
        return false;
    c_strides(in->rank, in->shape, in_strides);
    int lead = out->rank - in->rank;
    v->base = 0;
    for (int a = 0; a < out->rank; a++) {
        if (a < lead) {
            v->stride[a] = 0;
            continue;
        }
        int64_t e = in->shape[a - lead];
        if (e == out->shape[a])
            v->stride[a] = e == 1 ? 0 : in_strides[a - lead];
        else if (e == 1)
            v->stride[a] = 0;
        else
            return false;
    }
    return true;
}

/* The view of a transpose's input: output axis i walks input axis perm[i].
 * False when perm is not a permutation matching the shapes. */
static bool transpose_view(const clf__node *in, const clf__node *out, view *v)
{
    int64_t in_strides[CLF_MAX_RANK];
    bool seen[CLF_MAX_RANK] = {false};
    if (in->rank != out->rank)
        return false;
    c_strides(in->rank, in->shape, in_strides);
    v->base = 0;
    for (int i = 0; i < out->rank; i++) {
        int p = out->attr.transpose.perm[i];
        if (p < 0 || p >= in->rank || seen[p] || in->shape[p] != out->shape[i])
            return false;
        seen[p] = true;
        v->stride[i] = in_strides[p];
    }
    return true;
}

/* The view of a slice's input: index start[a] + i * step[a] on axis a.
 * False when some selected index would fall outside the input. */
static bool slice_view(const clf__node *in, const clf__node *out, view *v)
{
    int64_t in_strides[CLF_MAX_RANK];
    if (in->rank != out->rank)
        return false;
    c_strides(in->rank, in->shape, in_strides);
    v->base = 0;
    for (int a = 0; a < out->rank; a++) {
        if (out->shape[a] > 0) {
            int64_t first = out->attr.slice.step[a] == 0 ? -1 : out->attr.slice.start[a];
            /* The last index, computed in double so that a corrupt step
             * cannot overflow; exact for any index that fits in memory. */
            double last = (double)out->attr.slice.start[a] + (double)(out->shape[a] - 1) * (double)out->attr.slice.step[a];
            if (first < 0 || first >= in->shape[a] || last < 0 || last >= (double)in->shape[a])
                return false;
        }
        v->base += out->attr.slice.start[a] * in_strides[a];
        v->stride[a] = out->attr.slice.step[a] * in_strides[a];
    }
    return true;
}

static int64_t view_offset(const view *v, int rank, const int64_t *idx)
{
    int64_t off = v->base;
    for (int a = 0; a < rank; a++)
        off += idx[a] * v->stride[a];
    return off;
}

/* Advances a C-order multi-index by one element. */
static void next_index(int rank, const int64_t *shape, int64_t *idx)
{
    for (int a = rank - 1; a >= 0; a--) {
        if (++idx[a] < shape[a])
            return;
        idx[a] = 0;
    }
}

/* Converts a wrapped 32-bit pattern to int32_t without relying on the
 * implementation-defined unsigned-to-signed conversion. */
static int32_t wrap_i32(uint32_t u)
{
    return u <= (uint32_t)INT32_MAX ? (int32_t)u : -(int32_t)(~u) - 1;
}

/* The same for a wrapped 64-bit pattern. */
static int64_t wrap_i64(uint64_t u)
{
    return u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
}

static double maximum_f64(double a, double b) { return (a > b || isnan(a)) ? a : b; }
static double minimum_f64(double a, double b) { return (a < b || isnan(a)) ? a : b; }
/* The same for a reduction, whose order is no one's to rely on: equal
 * zeros resolve by sign (the maximum of -0 and +0 is +0, the minimum -0),
 * as the kernels' accumulators do. */
static double set_maximum_f64(double a, double b) { return a == b ? (signbit(a) ? b : a) : maximum_f64(a, b); }
static double set_minimum_f64(double a, double b) { return a == b ? (signbit(a) ? a : b) : minimum_f64(a, b); }

/* One element of any dtype as an int64 (integers and bool exactly) or as a
 * double (bool: its truth value), through the dtype table. */
static int64_t load_i64(clf_dtype dt, const void *p, int64_t off) { return clf__dtype_info_of(dt)->get_i64(p, off); }

static double load_f64(clf_dtype dt, const void *p, int64_t off) { return clf__dtype_info_of(dt)->get_f64(p, off); }

/* A clip bound for i32: rounded toward zero, clamped to the int32 range; a
 * NaN bound is no bound. */
static int32_t clip_bound_i32(double v, int32_t none)
{
    return isnan(v) ? none : clf__dtype_sat_i32(v);
}

/* The REDUCE checks of check_node: a known kind over input axes only, the
 * dtypes the kind takes, the shape the builder gives (reduced axes dropped,
 * or kept with extent 1), and for argmax/argmin exactly one non-empty
 * reduced axis. */
static bool reduce_ok(const clf__node *in, const clf__node *n)
{
    bool arg = clf__reduce_is_arg(n->attr.reduce.kind);
    if ((unsigned)n->attr.reduce.kind >= CLF__REDUCE_KIND_COUNT ||
        (!clf__dtype_is_float(in->dtype) && in->dtype != CLF_I32 && in->dtype != CLF_I64))
        return false;
    if (n->dtype != (arg ? CLF_I32 : in->dtype) || (n->attr.reduce.mask >> in->rank) != 0)
        return false;
    int r = 0, nreduced = 0, axis = -1;
    for (int a = 0; a < in->rank; a++) {
        bool red = (n->attr.reduce.mask >> a) & 1u;
        if (red) {
            nreduced++;
            axis = a;
        }
        if (red && !n->attr.reduce.keepdims)
            continue;
        if (r >= n->rank || n->shape[r] != (red ? 1 : in->shape[a]))
            return false;
        r++;
    }
    if (r != n->rank)
        return false;
    return !arg || (nreduced == 1 && in->shape[axis] > 0 && in->shape[axis] <= INT32_MAX);
}

/* The views of a MATMUL's operands over the node's axes [batch..., M, N]:
 * a's batch axes broadcast, its rows along M, nothing along N; b's batch
 * axes broadcast, its columns along N, nothing along M. Along K, a steps by
 * 1 and b by its row length. False when the shapes do not fit. */
static bool matmul_views(const clf__node *a, const clf__node *b, const clf__node *n, view *views)
{
    int r = n->rank;
    if (!clf__dtype_is_float(n->dtype) || a->dtype != n->dtype || b->dtype != n->dtype || a->rank < 2 || b->rank < 2 ||
        r < 2 || a->rank > r || b->rank > r || a->shape[a->rank - 1] != b->shape[b->rank - 2] ||
        a->shape[a->rank - 2] != n->shape[r - 2] || b->shape[b->rank - 1] != n->shape[r - 1])
        return false;
    const clf__node *ops[2] = {a, b};
    for (int o = 0; o < 2; o++) {
        const clf__node *x = ops[o];
        int64_t st[CLF_MAX_RANK];
        c_strides(x->rank, x->shape, st);
        int lead = r - x->rank;
        views[o].base = 0;
        for (int d = 0; d < r - 2; d++) {
            int64_t e = d < lead ? 1 : x->shape[d - lead];
            if (e != n->shape[d] && e != 1)
                return false;
            views[o].stride[d] = d < lead || e == 1 ? 0 : st[d - lead];
        }
        views[o].stride[r - 2] = o == 0 ? st[x->rank - 2] : 0;
        views[o].stride[r - 1] = o == 0 ? 0 : st[x->rank - 1];
    }
    return true;
}

/* GATHER: the output is data's shape with axis replaced by the indices'. */
static bool gather_ok(const clf__node *data, const clf__node *idx, const clf__node *n)
{
    int a = n->attr.gather.axis;
    if (n->dtype != data->dtype || (idx->dtype != CLF_I32 && idx->dtype != CLF_I64) || a < 0 ||
        a >= data->rank || n->rank != data->rank - 1 + idx->rank)
        return false;
    for (int d = 0; d < n->rank; d++) {
        int64_t want = d < a ? data->shape[d] : d < a + idx->rank ? idx->shape[d - a] : data->shape[d - idx->rank + 1];
        if (n->shape[d] != want)
            return false;
    }
    return data->shape[a] > 0 || node_numel(idx) == 0;
}

/* GATHER_ELEMENTS: data and indices of one rank, the output of the
 * indices' shape, each extent within data's off the axis. */
static bool gather_elements_ok(const clf__node *data, const clf__node *idx, const clf__node *n)
{
    int a = n->attr.gather.axis;
    if (n->dtype != data->dtype || (idx->dtype != CLF_I32 && idx->dtype != CLF_I64) || a < 0 ||
        a >= data->rank || n->rank != data->rank || idx->rank != data->rank)
        return false;
    for (int d = 0; d < n->rank; d++)
        if (n->shape[d] != idx->shape[d] || (d != a && idx->shape[d] > data->shape[d]))
            return false;
    return data->shape[a] > 0 || node_numel(idx) == 0;
}

/* CONCAT: inputs of the node's dtype and rank, agreeing off axis, whose
 * extents along axis sum to the node's. */
static bool concat_ok(const clf_graph *g, const clf__node *n)
{
    int a = n->attr.concat.axis;
    if (a < 0 || a >= n->rank)
        return false;
    int64_t sum = 0;
    for (int k = 0; k < n->ninputs; k++) {
        const clf__node *x = &g->nodes[n->inputs[k]];
        if (x->dtype != n->dtype || x->rank != n->rank)
            return false;
        for (int d = 0; d < n->rank; d++)
            if (d != a && x->shape[d] != n->shape[d])
                return false;
        sum += x->shape[a];
    }
    return sum == n->shape[a];
}

/* CACHE_WRITE: the cache of the node's shape and dtype, x agreeing off
 * axis, its entries within [0, len). */
static bool cache_write_ok(const clf_graph *g, const clf__node *n)
{
    const clf__node *c = &g->nodes[n->inputs[0]], *x = &g->nodes[n->inputs[1]];
    int a = n->attr.cache.axis;
    if (a < 0 || a >= n->rank || c->rank != n->rank || x->rank != n->rank || c->dtype != n->dtype ||
        x->dtype != n->dtype)
        return false;
    for (int d = 0; d < n->rank; d++)
        if (c->shape[d] != n->shape[d] || (d != a && x->shape[d] != n->shape[d]))
            return false;
    return x->shape[a] <= n->attr.cache.len && n->attr.cache.len <= n->shape[a];
}

/* Evaluates a checked CACHE_WRITE node: the cache, then x's entries at
 * [len - S, len) along axis. */
static void eval_cache_write(const clf_graph *g, const clf__node *n, void *const *vals, void *out)
{
    const clf__node *x = &g->nodes[n->inputs[1]];
    size_t esize = elem_size(n->dtype);
    memcpy(out, vals[n->inputs[0]], (size_t)node_numel(n) * esize);
    int a = n->attr.cache.axis;
    int64_t at = n->attr.cache.len - x->shape[a], idx[CLF_MAX_RANK] = {0}, numel = node_numel(x);
    for (int64_t e = 0; e < numel; e++, next_index(x->rank, x->shape, idx)) {
        int64_t off = 0;
        for (int d = 0; d < n->rank; d++)
            off = off * n->shape[d] + idx[d] + (d == a ? at : 0);
        memcpy((char *)out + (size_t)off * esize, (const char *)vals[n->inputs[1]] + (size_t)e * esize, esize);
    }
}

/* The element of axis extent d that index v names: negative counts from
 * the end, and out of range is clamped (as the kernels do). */
static int64_t gather_index(int64_t v, int64_t d)
{
    if (v < 0)
        v += d;
    return v < 0 ? 0 : v >= d ? d - 1 : v;
}

/* Evaluates a checked GATHER or CONCAT node: each output element copied
 * from the element of the input it selects. */
static void eval_select(const clf_graph *g, const clf__node *n, void *const *vals, void *out)
{
    int64_t numel = node_numel(n), idx[CLF_MAX_RANK] = {0};
    size_t esize = elem_size(n->dtype);
    for (int64_t e = 0; e < numel; e++, next_index(n->rank, n->shape, idx)) {
        const clf__node *src;
        int64_t at[CLF_MAX_RANK];
        const void *from;
        if (n->op == CLF__OP_GATHER) {
            const clf__node *data = &g->nodes[n->inputs[0]], *ix = &g->nodes[n->inputs[1]];
            int a = n->attr.gather.axis;
            int64_t ioff = 0;
            for (int d = 0; d < ix->rank; d++)
                ioff = ioff * ix->shape[d] + idx[a + d];
            for (int d = 0; d < data->rank; d++)
                at[d] = d < a ? idx[d] : d > a ? idx[d + ix->rank - 1] : 0;
            at[a] = gather_index(load_i64(ix->dtype, vals[n->inputs[1]], ioff), data->shape[a]);
            src = data;
            from = vals[n->inputs[0]];
        } else if (n->op == CLF__OP_GATHER_ELEMENTS) {
            const clf__node *data = &g->nodes[n->inputs[0]], *ix = &g->nodes[n->inputs[1]];
            int a = n->attr.gather.axis;
            memcpy(at, idx, sizeof at);
            at[a] = gather_index(load_i64(ix->dtype, vals[n->inputs[1]], e), data->shape[a]);
            src = data;
            from = vals[n->inputs[0]];
        } else {
            int a = n->attr.concat.axis, k = 0;
            memcpy(at, idx, sizeof at);
            while (at[a] >= g->nodes[n->inputs[k]].shape[a])
                at[a] -= g->nodes[n->inputs[k++]].shape[a];
            src = &g->nodes[n->inputs[k]];
            from = vals[n->inputs[k]];
        }
        int64_t off = 0;
        for (int d = 0; d < src->rank; d++)
            off = off * src->shape[d] + at[d];
        memcpy((char *)out + (size_t)e * esize, (const char *)from + (size_t)off * esize, esize);
    }
}

/* Checks, before evaluation, that a node is one this interpreter knows how
 * to evaluate: its inputs are earlier nodes, its dtypes are ones the op
 * takes, and its movement attributes fit its input. The builder guarantees
 * all of this; a failure here is a builder bug, reported rather than read
 * out of bounds. Fills the operand views on success. */
static bool check_node(const clf_graph *g, uint32_t id, view *views)
{
    const clf__node *n = &g->nodes[id];
    const clf__node *in[MAX_OPERANDS] = {NULL};
    if ((unsigned)n->op >= CLF__OP_COUNT)
        return false;
    const clf__op_info *info = clf__op_info_of(n->op);
    if (n->ninputs < info->min_inputs || (info->max_inputs >= 0 && n->ninputs > info->max_inputs))
        return false;
    if (node_numel(n) < 0)
        return false;
    for (int k = 0; k < n->ninputs; k++) {
        if (n->inputs[k] >= id)
            return false;
        if (k < MAX_OPERANDS)
            in[k] = &g->nodes[n->inputs[k]];
    }
    if (n->op == CLF__OP_CONCAT)
        return concat_ok(g, n);
    if (n->op == CLF__OP_CACHE_WRITE)
        return cache_write_ok(g, n);
    if (n->op == CLF__OP_GATHER)
        return gather_ok(in[0], in[1], n);
    if (n->op == CLF__OP_GATHER_ELEMENTS)
        return gather_elements_ok(in[0], in[1], n);
    if (n->ninputs > MAX_OPERANDS)
        return false;

    if (info->cls == CLF__CLASS_POINTWISE && info->rule != CLF__DT_OWN) {
        /* An op of the table: operands of one dtype it takes, the result's
         * dtype by its rule. */
        clf_dtype dt = in[0]->dtype;
        if (!(info->dtypes & CLF__DTM(dt)) || n->dtype != (info->rule == CLF__DT_BOOL ? CLF_BOOL : dt))
            return false;
        for (int k = 0; k < n->ninputs; k++)
            if (in[k]->dtype != dt || !broadcast_view(in[k], n, &views[k]))
                return false;
        return true;
    }
    switch (n->op) {
    case CLF__OP_INPUT:
        return n->name != NULL;
    case CLF__OP_CONSTANT:
        return n->data != NULL || node_numel(n) == 0;
    case CLF__OP_WHERE:
        if (in[0]->dtype != CLF_BOOL || in[1]->dtype != n->dtype || in[2]->dtype != n->dtype)
            return false;
        return broadcast_view(in[0], n, &views[0]) && broadcast_view(in[1], n, &views[1]) &&
               broadcast_view(in[2], n, &views[2]);
    case CLF__OP_CLIP:
        if (n->dtype != in[0]->dtype || n->dtype == CLF_BOOL)
            return false;
        return broadcast_view(in[0], n, &views[0]);
    case CLF__OP_CAST:
        return broadcast_view(in[0], n, &views[0]);
    case CLF__OP_RESHAPE:
    case CLF__OP_SQUEEZE:
    case CLF__OP_UNSQUEEZE:
        return n->dtype == in[0]->dtype && node_numel(in[0]) == node_numel(n);
    case CLF__OP_TRANSPOSE:
        return n->dtype == in[0]->dtype && transpose_view(in[0], n, &views[0]);
    case CLF__OP_EXPAND:
        return n->dtype == in[0]->dtype && broadcast_view(in[0], n, &views[0]);
    case CLF__OP_SLICE:
        return n->dtype == in[0]->dtype && slice_view(in[0], n, &views[0]);
    case CLF__OP_REDUCE:
        return reduce_ok(in[0], n);
    case CLF__OP_MATMUL:
        return matmul_views(in[0], in[1], n, views);
    default:
        return false;
    }
}

/* Evaluates a checked MATMUL node: each element a dot product along K in
 * double, rounded once. */
static void eval_matmul(const clf__node *a, const clf__node *b, const clf__node *n, const view *views,
                        const void *x, const void *y, void *out)
{
    const clf__dtype_info *d = clf__dtype_info_of(n->dtype);
    int64_t kk = a->shape[a->rank - 1], bstep = b->shape[b->rank - 1];
    int64_t numel = node_numel(n), idx[CLF_MAX_RANK] = {0};
    for (int64_t e = 0; e < numel; e++, next_index(n->rank, n->shape, idx)) {
        int64_t oa = view_offset(&views[0], n->rank, idx), ob = view_offset(&views[1], n->rank, idx);
        double acc = 0.0;
        for (int64_t k = 0; k < kk; k++)
            acc += d->get_f64(x, oa + k) * d->get_f64(y, ob + k * bstep);
        d->put_f64(out, e, acc);
    }
}

/* Folds the count values of one reduction set, x[base + sum(i_k * stride_k)]
 * over the reduced multi-index i (extents ext, nr axes), in C order: for
 * sum/prod/max/min the value (floats in double into *f; integers exactly,
 * sums and products wrapping at the type's width, into *i), for
 * argmax/argmin the index along the (one) reduced axis (into *i). */
static void reduce_one(const clf__node *n, clf_dtype dt, const void *x, int64_t base, int nr, const int64_t *ext,
                       const int64_t *stride, int64_t count, double *f, int64_t *i)
{
    clf__reduce_kind kind = n->attr.reduce.kind;
    const bool fl = clf__dtype_is_float(dt);
    const clf__dtype_info *t = clf__dtype_info_of(dt);
    int64_t ridx[CLF_MAX_RANK] = {0};
    double acc;      /* float sum/prod/max/min */
    uint64_t wacc;   /* integer sum/prod, wrapping */
    int64_t iacc;    /* integer max/min */
    double best = 0; /* argmax/argmin */
    int64_t ibest = 0, best_k = 0;

    switch (kind) {
    case CLF__REDUCE_SUM: acc = 0.0; wacc = 0; iacc = 0; break;
    case CLF__REDUCE_PROD: acc = 1.0; wacc = 1; iacc = 0; break;
    case CLF__REDUCE_MAX: acc = -(double)INFINITY; wacc = 0; iacc = dt == CLF_I64 ? INT64_MIN : INT32_MIN; break;
    case CLF__REDUCE_MIN: acc = (double)INFINITY; wacc = 0; iacc = dt == CLF_I64 ? INT64_MAX : INT32_MAX; break;
    default: acc = 0.0; wacc = 0; iacc = 0; break;
    }
    for (int64_t k = 0; k < count; k++, next_index(nr, ext, ridx)) {
        int64_t off = base;
        for (int a = 0; a < nr; a++)
            off += ridx[a] * stride[a];
        const double v = fl ? load_f64(dt, x, off) : 0.0;
        const int64_t iv = fl ? 0 : t->get_i64(x, off);
        switch (kind) {
        case CLF__REDUCE_SUM:
            acc += v;
            wacc += (uint64_t)iv;
            break;
        case CLF__REDUCE_PROD:
            acc *= v;
            wacc *= (uint64_t)iv;
            break;
        case CLF__REDUCE_MAX:
            acc = set_maximum_f64(acc, v);
            iacc = iv > iacc ? iv : iacc;
            break;
        case CLF__REDUCE_MIN:
            acc = set_minimum_f64(acc, v);
            iacc = iv < iacc ? iv : iacc;
            break;
        case CLF__REDUCE_ARGMAX:
        case CLF__REDUCE_ARGMIN: {
            /* numpy: the first NaN wins; otherwise the first (or, with
             * select_last, the last) of the extreme values. */
            if (fl && isnan(v)) {
                *i = k;
                return;
            }
            const bool max = kind == CLF__REDUCE_ARGMAX;
            const bool better = fl ? (max ? v > best : v < best) : (max ? iv > ibest : iv < ibest);
            const bool tie = fl ? v == best : iv == ibest;
            if (k == 0 || better || (n->attr.reduce.select_last && tie)) {
                best = v;
                ibest = iv;
                best_k = k;
            }
            break;
        }
        default: break;
        }
    }
    if (clf__reduce_is_arg(kind))
        *i = best_k;
    else if (fl)
        *f = acc;
    else if (kind == CLF__REDUCE_SUM || kind == CLF__REDUCE_PROD)
        *i = dt == CLF_I64 ? wrap_i64(wacc) : wrap_i32((uint32_t)wacc);
    else
        *i = iacc;
}

/* Evaluates a checked REDUCE node: for each output element (C order), the
 * fold of the input elements that share its kept-axis indices. */
static void eval_reduce(const clf__node *in, const clf__node *n, const void *x, void *out)
{
    int64_t in_strides[CLF_MAX_RANK], ext[CLF_MAX_RANK], rstride[CLF_MAX_RANK];
    int64_t kstride[CLF_MAX_RANK]; /* input stride of each output axis */
    int nr = 0, r = 0;
    int64_t count = 1;

    c_strides(in->rank, in->shape, in_strides);
    for (int a = 0; a < in->rank; a++) {
        if ((n->attr.reduce.mask >> a) & 1u) {
            ext[nr] = in->shape[a];
            rstride[nr++] = in_strides[a];
            count *= in->shape[a];
            if (n->attr.reduce.keepdims)
                kstride[r++] = 0;
        } else {
            kstride[r++] = in_strides[a];
        }
    }
    int64_t numel = node_numel(n), idx[CLF_MAX_RANK] = {0};
    for (int64_t e = 0; e < numel; e++, next_index(n->rank, n->shape, idx)) {
        int64_t base = 0;
        for (int a = 0; a < n->rank; a++)
            base += idx[a] * kstride[a];
        double f = 0.0;
        int64_t i = 0;
        reduce_one(n, in->dtype, x, base, nr, ext, rstride, count, &f, &i);
        if (clf__dtype_is_float(n->dtype))
            clf__dtype_info_of(n->dtype)->put_f64(out, e, f);
        else
            clf__dtype_info_of(n->dtype)->put_i64(out, e, i);
    }
}

/* Evaluates a checked pointwise op of the table with its reference
 * arithmetic: float operands in double, integer and bool operands in int64,
 * the result rounded (f32), wrapped (i32) or made 0/1 (bool) on store. */
static void eval_table_op(const clf_graph *g, const clf__node *n, const clf__op_info *info,
                          const view *views, void *const *vals, void *out)
{
    int64_t numel = node_numel(n), idx[CLF_MAX_RANK] = {0};
    clf_dtype dt = g->nodes[n->inputs[0]].dtype;
    const clf__dtype_info *from = clf__dtype_info_of(dt), *to = clf__dtype_info_of(n->dtype);
    bool fl = from->kind == CLF__DK_FLOAT;
    for (int64_t e = 0; e < numel; e++, next_index(n->rank, n->shape, idx)) {
        double fa[2] = {0, 0};
        int64_t ia[2] = {0, 0};
        for (int k = 0; k < n->ninputs && k < 2; k++) {
            int64_t off = view_offset(&views[k], n->rank, idx);
            const void *v = vals[n->inputs[k]];
            if (fl)
                fa[k] = from->get_f64(v, off);
            else
                ia[k] = from->get_i64(v, off);
        }
        if (fl)
            to->put_f64(out, e, info->ref_float(fa[0], fa[1]));
        else
            to->put_i64(out, e, info->ref_int(ia[0], ia[1]));
    }
}

/* Evaluates one checked node into out (numel elements of its dtype), reading
 * its operands from vals through their views. */
static void eval_node(const clf_graph *g, const clf__node *n, const view *views,
                      void *const *vals, void *out)
{
    int64_t numel = node_numel(n);
    int64_t idx[CLF_MAX_RANK] = {0};
    const void *a = n->ninputs > 0 ? vals[n->inputs[0]] : NULL;
    const void *b = n->ninputs > 1 ? vals[n->inputs[1]] : NULL;
    const void *c = n->ninputs > 2 ? vals[n->inputs[2]] : NULL;
    clf_dtype adt = n->ninputs > 0 ? g->nodes[n->inputs[0]].dtype : n->dtype;
    size_t esize = elem_size(n->dtype);

    if (numel == 0)
        return;

    switch (n->op) {
    case CLF__OP_RESHAPE:
    case CLF__OP_SQUEEZE:
    case CLF__OP_UNSQUEEZE:
        memcpy(out, a, (size_t)numel * esize);
        return;
    case CLF__OP_INPUT:
    case CLF__OP_CONSTANT:
        return; /* handled by the caller */
    case CLF__OP_REDUCE:
        eval_reduce(&g->nodes[n->inputs[0]], n, a, out);
        return;
    case CLF__OP_MATMUL:
        eval_matmul(&g->nodes[n->inputs[0]], &g->nodes[n->inputs[1]], n, views, a, b, out);
        return;
    case CLF__OP_GATHER:
    case CLF__OP_GATHER_ELEMENTS:
    case CLF__OP_CONCAT:
        eval_select(g, n, vals, out);
        return;
    case CLF__OP_CACHE_WRITE:
        eval_cache_write(g, n, vals, out);
        return;
    default:
        break;
    }

    const clf__op_info *info = clf__op_info_of(n->op);
    if (info->cls == CLF__CLASS_POINTWISE && info->rule != CLF__DT_OWN) {
        eval_table_op(g, n, info, views, vals, out);
        return;
    }

    for (int64_t e = 0; e < numel; e++, next_index(n->rank, n->shape, idx)) {
        int64_t oa = n->ninputs > 0 ? view_offset(&views[0], n->rank, idx) : 0;
        switch (n->op) {
        case CLF__OP_WHERE: {
            int64_t ob = view_offset(&views[1], n->rank, idx);
            int64_t oc = view_offset(&views[2], n->rank, idx);
            bool cond = ((const uint8_t *)a)[oa] != 0;
            const char *src = cond ? (const char *)b + (size_t)ob * esize
                                   : (const char *)c + (size_t)oc * esize;
            memcpy((char *)out + (size_t)e * esize, src, esize);
            break;
        }
        case CLF__OP_CLIP:
            if (clf__dtype_is_float(n->dtype)) {
                double x = load_f64(n->dtype, a, oa);
                double lo = (float)n->attr.clip.lo, hi = (float)n->attr.clip.hi;
                clf__dtype_info_of(n->dtype)->put_f64(out, e, minimum_f64(maximum_f64(x, lo), hi));
            } else {
                int32_t x = ((const int32_t *)a)[oa];
                int32_t lo = clip_bound_i32(n->attr.clip.lo, INT32_MIN);
                int32_t hi = clip_bound_i32(n->attr.clip.hi, INT32_MAX);
                x = x > lo ? x : lo;
                ((int32_t *)out)[e] = x < hi ? x : hi;
            }
            break;
        case CLF__OP_CAST: {
            /* As ONNX's Cast: floats to integers truncate and saturate (NaN
             * gives 0), to bool test != 0; integers wrap; an integer rounds
             * to a float once, through f32 for the storage floats, as the
             * kernels convert. */
            const clf__dtype_info *from = clf__dtype_info_of(adt), *to = clf__dtype_info_of(n->dtype);
            if (n->dtype == adt && adt != CLF_BOOL) /* bool to bool gives 0 or 1, as from any type */
                memcpy((char *)out + (size_t)e * esize, (const char *)a + (size_t)oa * esize, esize);
            else if (from->kind == CLF__DK_FLOAT)
                to->put_f64(out, e, from->get_f64(a, oa));
            else
                to->put_i64(out, e, from->get_i64(a, oa));
            break;
        }
        case CLF__OP_TRANSPOSE:
        case CLF__OP_EXPAND:
        case CLF__OP_SLICE:
            memcpy((char *)out + (size_t)e * esize, (const char *)a + (size_t)oa * esize, esize);
            break;
        default:
            break;
        }
    }
}

/* Index in g->inputs of the input named name, or -1. */
static long find_input(const clf_graph *g, const char *name)
{
    for (size_t i = 0; i < g->ninputs; i++) {
        const char *nn = g->nodes[g->inputs[i]].name;
        if (nn && strcmp(nn, name) == 0)
            return (long)i;
    }
    return -1;
}

/* Index in g->outputs of the output named name, or -1. */
static long find_output(const clf_graph *g, const char *name)
{
    for (size_t i = 0; i < g->noutputs; i++) {
        if (g->outputs[i].name && strcmp(g->outputs[i].name, name) == 0)
            return (long)i;
    }
    return -1;
}

/* Matches one list of bindings (inputs or outputs) against the graph's
 * inputs or outputs: every binding names one of them, none twice, and none
 * is left out; data may be NULL only for zero-size tensors. slot[i]
 * receives the binding bound to the graph's i-th input or output. */
static clf_status match_bindings(const clf_graph *g, bool outputs, size_t nb,
                                 const clf_host_binding *b, const clf_host_binding **slot,
                                 char *message, size_t cap)
{
    const char *what = outputs ? "output" : "input";
    size_t count = outputs ? g->noutputs : g->ninputs;

    if (nb > 0 && !b) {
        set_message(message, cap, "clf_reference_run: %zu %s bindings but the array is NULL", nb,
                    what);
        return CLF_ERR_INVALID_ARGUMENT;
    }
    for (size_t i = 0; i < nb; i++) {
        const char *name = b[i].name;
        if (!name) {
            set_message(message, cap, "clf_reference_run: %s binding %zu has a NULL name", what, i);
            return CLF_ERR_INVALID_ARGUMENT;
        }
        long k = outputs ? find_output(g, name) : find_input(g, name);
        if (k < 0) {
            bool other = outputs ? find_input(g, name) >= 0 : find_output(g, name) >= 0;
            set_message(message, cap, "clf_reference_run: %s binding %zu: no graph %s named \"%s\"%s",
                        what, i, what, name,
                        other ? (outputs ? " (it is an input)" : " (it is an output)") : "");
            return CLF_ERR_NOT_FOUND;
        }
        if (slot[k]) {
            set_message(message, cap, "clf_reference_run: %s \"%s\" is bound more than once", what,
                        name);
            return CLF_ERR_INVALID_ARGUMENT;
        }
        uint32_t node = outputs ? g->outputs[k].node : g->inputs[k];
        if (node >= g->nnodes) {
            set_message(message, cap, "clf_reference_run: %s \"%s\" names no node", what, name);
            return CLF_ERR_INTERNAL;
        }
        if (!b[i].data && node_numel(&g->nodes[node]) != 0) {
            set_message(message, cap,
                        "clf_reference_run: %s \"%s\" is bound to NULL but has elements", what,
                        name);
            return CLF_ERR_INVALID_ARGUMENT;
        }
        slot[k] = &b[i];
    }
    for (size_t k = 0; k < count; k++) {
        if (!slot[k]) {
            const char *name = outputs ? g->outputs[k].name : g->nodes[g->inputs[k]].name;
            set_message(message, cap, "clf_reference_run: %s \"%s\" is not bound", what,
                        name ? name : "?");
            return CLF_ERR_INVALID_ARGUMENT;
        }
    }
    return CLF_OK;
}

/* Validates the graph and the bindings, marks the nodes the outputs need,
 * evaluates them in node order (freeing each value after its last use) and
 * copies the outputs' values to the caller's memory. */
clf_status clf_reference_run(const clf_graph *g, size_t ninputs, const clf_host_binding *inputs,
                             size_t noutputs, const clf_host_binding *outputs, char *message,
                             size_t cap)
{
    clf_status st = CLF_OK;
    const clf_host_binding **in_slot = NULL, **out_slot = NULL;
    bool *needed = NULL;
    size_t *last_use = NULL;
    void **vals = NULL;
    size_t nn;

    if (message && cap > 0)
        message[0] = '\0';
    if (!g) {
        set_message(message, cap, "clf_reference_run: graph is NULL");
        return CLF_ERR_INVALID_ARGUMENT;
    }
    if (g->status != CLF_OK) {
        set_message(message, cap, "%s", g->message);
        return CLF_ERR_GRAPH;
    }
    if (g->nsyms) {
        set_message(message, cap,
                    "clf_reference_run: the graph has symbolic dimensions (%s, ...): give the inputs' shapes with "
                    "clf_reference_run_shaped",
                    g->syms[0].name);
        return CLF_ERR_INVALID_ARGUMENT;
    }
    nn = g->nnodes;

    in_slot = clf__calloc(g->ninputs + 1, sizeof *in_slot);
    out_slot = clf__calloc(g->noutputs + 1, sizeof *out_slot);
    needed = clf__calloc(nn + 1, sizeof *needed);
    last_use = clf__calloc(nn + 1, sizeof *last_use);
    vals = clf__calloc(nn + 1, sizeof *vals);
    if (!in_slot || !out_slot || !needed || !last_use || !vals) {
        set_message(message, cap, "clf_reference_run: out of memory");
        st = CLF_ERR_OUT_OF_MEMORY;
        goto cleanup;
    }

    for (size_t i = 0; i < g->ninputs; i++) {
        if (g->inputs[i] >= nn || g->nodes[g->inputs[i]].op != CLF__OP_INPUT) {
            set_message(message, cap, "clf_reference_run: graph input %zu names no input node", i);
            st = CLF_ERR_INTERNAL;
            goto cleanup;
        }
    }
    st = match_bindings(g, false, ninputs, inputs, in_slot, message, cap);
    if (st != CLF_OK)
        goto cleanup;
    st = match_bindings(g, true, noutputs, outputs, out_slot, message, cap);
    if (st != CLF_OK)
        goto cleanup;

    /* Mark what the outputs need, walking backwards: consumers come after
     * their operands. An output's value lives to the end (last_use = nn). */
    for (size_t k = 0; k < g->noutputs; k++) {
        needed[g->outputs[k].node] = true;
        last_use[g->outputs[k].node] = nn;
    }
    for (size_t id = nn; id-- > 0;) {
        const clf__node *n = &g->nodes[id];
        if (!needed[id])
            continue;
        for (int k = 0; k < n->ninputs; k++) {
            uint32_t src = n->inputs[k];
            if (src >= id) {
                set_message(message, cap,
                            "clf_reference_run: node %zu (%s) reads node %u, which is not earlier",
                            id, clf__node_op_name(n), (unsigned)src);
                st = CLF_ERR_INTERNAL;
                goto cleanup;
            }
            needed[src] = true;
            if (last_use[src] < id)
                last_use[src] = id;
        }
    }

    for (size_t id = 0; id < nn; id++) {
        const clf__node *n = &g->nodes[id];
        view views[MAX_OPERANDS];
        if (!needed[id])
            continue;
        if (!check_node(g, (uint32_t)id, views)) {
            set_message(message, cap,
                        "clf_reference_run: node %zu (%s) is malformed (a builder bug)", id,
                        clf__node_op_name(n));
            st = CLF_ERR_INTERNAL;
            goto cleanup;
        }
        size_t bytes = (size_t)node_numel(n) * elem_size(n->dtype);
        if (bytes > 0) {
            vals[id] = clf__malloc(bytes);
            if (!vals[id]) {
                set_message(message, cap,
                            "clf_reference_run: out of memory for node %zu (%s, %zu bytes)", id,
                            clf__node_op_name(n), bytes);
                st = CLF_ERR_OUT_OF_MEMORY;
                goto cleanup;
            }
        }
        if (n->op == CLF__OP_INPUT) {
            long k = find_input(g, n->name);
            if (k < 0) {
                set_message(message, cap, "clf_reference_run: input node %zu is not a graph input",
                            id);
                st = CLF_ERR_INTERNAL;
                goto cleanup;
            }
            /* Copied, so that outputs may share memory with inputs. */
            if (bytes > 0)
                memcpy(vals[id], in_slot[k]->data, bytes);
        } else if (n->op == CLF__OP_CONSTANT) {
            if (bytes > 0)
                memcpy(vals[id], n->data, bytes);
        } else {
            eval_node(g, n, views, vals, vals[id]);
        }
        /* Free operands whose last consumer this node is. */
        for (int k = 0; k < n->ninputs; k++) {
            uint32_t src = n->inputs[k];
            if (last_use[src] == id) {
                clf__free(vals[src]);
                vals[src] = NULL;
            }
        }
    }

    for (size_t k = 0; k < g->noutputs; k++) {
        const clf__node *n = &g->nodes[g->outputs[k].node];
        size_t bytes = (size_t)node_numel(n) * elem_size(n->dtype);
        if (bytes > 0)
            memcpy(out_slot[k]->data, vals[g->outputs[k].node], bytes);
    }

cleanup:
    if (vals) {
        for (size_t id = 0; id < nn; id++)
            clf__free(vals[id]);
    }
    clf__free(vals);
    clf__free(last_use);
    clf__free(needed);
    clf__free(out_slot);
    clf__free(in_slot);
    return st;
}

clf_status clf_reference_run_shaped(const clf_graph *g, size_t ninputs, const clf_host_binding *inputs,
                                    const int64_t *const *input_shapes, size_t noutputs,
                                    const clf_host_binding *outputs, char *message, size_t cap)
{
    if (message && cap > 0)
        message[0] = '\0';
    if (!g || (ninputs && (!inputs || !input_shapes))) {
        set_message(message, cap, "clf_reference_run_shaped: %s is NULL", !g ? "graph" : "a binding array");
        return CLF_ERR_INVALID_ARGUMENT;
    }
    if (g->status != CLF_OK) {
        set_message(message, cap, "%s", g->message);
        return CLF_ERR_GRAPH;
    }
    const char **names = clf__calloc(ninputs + 1, sizeof *names);
    clf_host_binding *kept_in = NULL;
    int64_t values[CLF__MAX_SYMS];
    char err[256] = "";
    clf_graph *spec = NULL;
    clf_status st = CLF_ERR_OUT_OF_MEMORY;
    if (!names) {
        set_message(message, cap, "clf_reference_run_shaped: out of memory");
        goto out;
    }
    for (size_t i = 0; i < ninputs; i++)
        names[i] = inputs[i].name;
    st = clf__graph_sizes_of(g, ninputs, names, input_shapes, values, err, sizeof err);
    if (st == CLF_OK && g->nsyms)
        st = clf__graph_specialise(g, values, false, &spec, err, sizeof err);
    if (st != CLF_OK) {
        set_message(message, cap, "clf_reference_run_shaped: %s", err);
        goto out;
    }
    /* Bindings of dimensions by name gave sizes only. */
    size_t kept = 0;
    kept_in = clf__calloc(ninputs + 1, sizeof *kept_in);
    if (!kept_in) {
        st = CLF_ERR_OUT_OF_MEMORY;
        set_message(message, cap, "clf_reference_run_shaped: out of memory");
        goto out;
    }
    for (size_t i = 0; i < ninputs; i++)
        if (!clf__graph_names_dim(g, inputs[i].name))
            kept_in[kept++] = inputs[i];
    st = clf_reference_run(spec ? spec : g, kept, kept_in, noutputs, outputs, message, cap);
out:
    clf_graph_destroy(&spec);
    clf__free(names);
    clf__free(kept_in);
    return st;
}
