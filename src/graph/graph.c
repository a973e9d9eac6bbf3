/* The graph builder: graph lifetime and queries, leaves (inputs, constants,
 * outputs) and pointwise ops, plus the internals that graph_movement.c
 * shares through graph_builder.h (error recording, handle and shape
 * checking, node append, broadcasting). */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_builder.h"
#include "util/alloc.h"
#include "graph_internal.h"
#include "graph_symbols.h"

/* The library's only global: the serial of the next graph. It starts at 1
 * because serial 0 is what CLF_TENSOR_INVALID carries. */
static atomic_uint_least32_t next_serial = 1;

/* Bit masks of accepted dtypes. */

/* ---- Graph lifetime and queries -------------------------------------- */

clf_graph *clf_graph_create(void)
{
    clf_graph *g = clf__calloc(1, sizeof *g);
    if (!g)
        return NULL;
    uint32_t serial;
    do { /* after 2^32 graphs the counter wraps; 0 is never handed out */
        serial = (uint32_t)atomic_fetch_add(&next_serial, 1);
    } while (serial == 0);
    g->serial = serial;
    g->status = CLF_OK;
    g->message[0] = '\0';
    return g;
}

void clf_graph_destroy(clf_graph **gp)
{
    if (!gp || !*gp)
        return;
    clf_graph *g = *gp;
    for (size_t i = 0; i < g->nnodes; i++) {
        if (!g->nodes[i].borrowed)
            clf__free(g->nodes[i].data);
        clf__free((void *)g->nodes[i].name);
        clf__free(g->nodes[i].inputs);
    }
    for (size_t i = 0; i < g->noutputs; i++)
        clf__free(g->outputs[i].name);
    clf__free(g->nodes);
    clf__free(g->inputs);
    clf__free(g->outputs);
    for (size_t i = 0; i < g->nsyms + g->nderived; i++)
        clf__free(g->syms[i].name);
    clf__free(g->syms);
    clf__graph_regen_release(g->regen);
    clf__free(g);
    *gp = NULL;
}

clf_status clf_graph_status(const clf_graph *g, const char **message)
{
    if (!g) {
        if (message)
            *message = "clf_graph_status: g is NULL";
        return CLF_ERR_INVALID_ARGUMENT;
    }
    if (message)
        *message = g->message;
    return g->status;
}

size_t clf_graph_node_count(const clf_graph *g)
{
    return g ? g->nnodes : 0;
}

/* The node t names in g, or NULL; records nothing (g is const). */
static const clf__node *lookup(const clf_graph *g, clf_tensor t)
{
    if (!g || t.graph != g->serial || t.node >= g->nnodes)
        return NULL;
    return &g->nodes[t.node];
}

clf_status clf_tensor_shape(const clf_graph *g, clf_tensor t, int *rank, int64_t *shape)
{
    const clf__node *n = lookup(g, t);
    if (!n)
        return CLF_ERR_INVALID_ARGUMENT;
    if (rank)
        *rank = n->rank;
    if (shape)
        memcpy(shape, n->shape, (size_t)n->rank * sizeof *shape);
    return CLF_OK;
}

clf_status clf_tensor_dtype(const clf_graph *g, clf_tensor t, clf_dtype *dtype)
{
    const clf__node *n = lookup(g, t);
    if (!n)
        return CLF_ERR_INVALID_ARGUMENT;
    if (dtype)
        *dtype = n->dtype;
    return CLF_OK;
}

/* ---- Internals shared with graph_movement.c and graph_reduce.c ------- */

void clf__graph_fail(clf_graph *g, clf_status st, const char *call, const char *fmt, ...)
{
    assert(g && st != CLF_OK);
    if (g->status != CLF_OK)
        return;
    g->status = st;
    int len = snprintf(g->message, sizeof g->message, "%s: ", call);
    if (len < 0 || (size_t)len >= sizeof g->message)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->message + len, sizeof g->message - (size_t)len, fmt, ap);
    va_end(ap);
}

bool clf__graph_usable(const clf_graph *g)
{
    return g && g->status == CLF_OK;
}

const clf__node *clf__graph_arg(clf_graph *g, const char *call, const char *arg, clf_tensor t)
{
    if (t.graph == 0) {
        clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call, "%s is CLF_TENSOR_INVALID", arg);
        return NULL;
    }
    if (t.graph != g->serial) {
        clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call, "%s belongs to another graph", arg);
        return NULL;
    }
    if (t.node >= g->nnodes) {
        clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call,
                        "%s (node %" PRIu32 ") is not a node of this graph", arg, t.node);
        return NULL;
    }
    return &g->nodes[t.node];
}

bool clf__graph_check_shape(clf_graph *g, const char *call, const char *arg, int rank,
                            const int64_t *shape, bool allow_negative)
{
    if (rank < 0 || rank > CLF_MAX_RANK) {
        clf__graph_fail(g, CLF_ERR_SHAPE, call, "rank %d is out of range 0..%d", rank, CLF_MAX_RANK);
        return false;
    }
    if (rank > 0 && !shape) {
        clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call, "%s is NULL", arg);
        return false;
    }
    for (int i = 0; i < rank && !allow_negative; i++) {
        if (shape[i] < 0) {
            clf__graph_fail(g, CLF_ERR_SHAPE, call, "%s[%d] = %" PRId64 " is negative", arg, i,
                            shape[i]);
            return false;
        }
    }
    return true;
}

/* Element count of a shape, or -1 when elem times the product of its
 * non-zero extents does not fit in int64 and size_t. Counting only the
 * non-zero extents keeps every stride a consumer may compute in range,
 * even for zero-size tensors. */
static int64_t checked_numel(int rank, const int64_t *shape, size_t elem)
{
    int64_t bytes = (int64_t)elem;
    bool empty = false;
    for (int i = 0; i < rank; i++) {
        if (shape[i] == 0) {
            empty = true;
            continue;
        }
        if (__builtin_mul_overflow(bytes, shape[i], &bytes))
            return -1;
    }
    if ((uint64_t)bytes > SIZE_MAX)
        return -1;
    return empty ? 0 : bytes / (int64_t)elem;
}

clf_tensor clf__graph_append(clf_graph *g, const char *call, const clf__node *given)
{
    clf_tensor t = CLF_TENSOR_INVALID;
    clf__node node = *given, *n = &node;
    if (!clf__graph_infer_syms(g, call, n))
        goto cleanup;
    size_t elem = clf_dtype_size(n->dtype);
    assert(elem > 0 && n->rank >= 0 && n->rank <= CLF_MAX_RANK);
    if (checked_numel(n->rank, n->shape, elem) < 0) {
        char s[CLF__SHAPE_STR_CAP];
        clf__graph_fail(g, CLF_ERR_SHAPE, call, "the result, shape %s of %s, is too large",
                        clf__graph_shape_str(s, sizeof s, n->rank, n->shape), clf_dtype_name(n->dtype));
        goto cleanup;
    }
    if (g->nnodes >= UINT32_MAX) {
        clf__graph_fail(g, CLF_ERR_OUT_OF_MEMORY, call, "the graph is full (%zu nodes)", g->nnodes);
        goto cleanup;
    }
    if (g->nnodes == g->cap_nodes) {
        size_t cap = g->cap_nodes ? 2 * g->cap_nodes : 16;
        clf__node *nodes =
            cap <= SIZE_MAX / sizeof *nodes ? clf__realloc(g->nodes, cap * sizeof *nodes) : NULL;
        if (!nodes) {
            clf__graph_fail(g, CLF_ERR_OUT_OF_MEMORY, call, "out of memory growing the graph");
            goto cleanup;
        }
        g->nodes = nodes;
        g->cap_nodes = cap;
    }
    uint32_t *inputs = NULL;
    if (n->ninputs > 0) {
        assert(n->inputs);
        inputs = clf__malloc((size_t)n->ninputs * sizeof *inputs);
        if (!inputs) {
            clf__graph_fail(g, CLF_ERR_OUT_OF_MEMORY, call, "out of memory growing the graph");
            goto cleanup;
        }
        memcpy(inputs, n->inputs, (size_t)n->ninputs * sizeof *inputs);
    }
    g->nodes[g->nnodes] = *n;
    g->nodes[g->nnodes].inputs = inputs;
    t = (clf_tensor){g->serial, (uint32_t)g->nnodes};
    g->nnodes++;
cleanup:
    if (!clf_tensor_valid(t)) {
        if (!n->borrowed)
            clf__free(n->data);
        clf__free((void *)n->name);
    }
    return t;
}

bool clf__graph_broadcast(int rank_a, const int64_t *a, int rank_b, const int64_t *b, int *rank_out,
                          int64_t *out)
{
    int r = rank_a > rank_b ? rank_a : rank_b;
    int64_t res[CLF_MAX_RANK];
    assert(r <= CLF_MAX_RANK);
    for (int i = 0; i < r; i++) {
        int ia = i - (r - rank_a), ib = i - (r - rank_b);
        int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
        if (da == db || db == 1)
            res[i] = da;
        else if (da == 1)
            res[i] = db;
        else
            return false;
    }
    *rank_out = r;
    for (int i = 0; i < r; i++)
        out[i] = res[i];
    return true;
}

const char *clf__graph_shape_str(char *buf, size_t cap, int rank, const int64_t *shape)
{
    size_t len = 0;
    assert(cap > 0);
    buf[0] = '\0';
    for (int i = 0; i <= rank && len < cap; i++) {
        int w;
        if (i == rank)
            w = snprintf(buf + len, cap - len, "%s]", rank == 0 ? "[" : "");
        else
            w = snprintf(buf + len, cap - len, "%s%" PRId64, i == 0 ? "[" : ",", shape[i]);
        if (w < 0)
            break;
        len += (size_t)w;
    }
    return buf;
}

int clf__graph_axis(int axis, int r)
{
    if (axis < -r || axis >= r)
        return -1;
    return axis < 0 ? axis + r : axis;
}

bool clf__graph_axes_list(clf_graph *g, const char *call, int naxes, const int *axes)
{
    if (naxes >= 0 && (naxes == 0 || axes))
        return true;
    clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call, "%s", naxes < 0 ? "naxes is negative" : "axes is NULL");
    return false;
}

int clf__graph_list_axis(clf_graph *g, const char *call, int i, int axis, int r, const char *what,
                         bool seen[CLF_MAX_RANK])
{
    int a = clf__graph_axis(axis, r);
    if (a < 0) {
        clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call, "axes[%d] = %d is out of range for %s %d", i, axis,
                        what, r);
        return -1;
    }
    if (seen[a]) {
        clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call, "axes[%d] = %d repeats an axis", i, axis);
        return -1;
    }
    seen[a] = true;
    return a;
}

/* ---- Leaves ----------------------------------------------------------- */

/* Records an error unless dt is a clf_dtype value. */
static bool check_dtype_arg(clf_graph *g, const char *call, const char *arg, clf_dtype dt)
{
    if ((unsigned)dt >= CLF_DTYPE_COUNT) {
        clf__graph_fail(g, CLF_ERR_DTYPE, call, "%s %d is not a clf_dtype", arg, (int)dt);
        return false;
    }
    return true;
}

/* Records an error unless name can name a new input or output: non-NULL,
 * non-empty and not used by any input or output yet. */
static bool check_name(clf_graph *g, const char *call, const char *name)
{
    if (!name) {
        clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call, "name is NULL");
        return false;
    }
    if (name[0] == '\0') {
        clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call, "name is empty");
        return false;
    }
    for (size_t i = 0; i < g->ninputs; i++) {
        if (strcmp(g->nodes[g->inputs[i]].name, name) == 0) {
            clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call, "name \"%s\" is already used by an input",
                            name);
            return false;
        }
    }
    for (size_t i = 0; i < g->noutputs; i++) {
        if (strcmp(g->outputs[i].name, name) == 0) {
            clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call,
                            "name \"%s\" is already used by an output", name);
            return false;
        }
    }
    return true;
}

/* A heap copy of name, or NULL after recording CLF_ERR_OUT_OF_MEMORY. */
static char *copy_name(clf_graph *g, const char *call, const char *name)
{
    size_t len = strlen(name) + 1;
    char *copy = clf__malloc(len);
    if (!copy) {
        clf__graph_fail(g, CLF_ERR_OUT_OF_MEMORY, call, "out of memory copying name");
        return NULL;
    }
    memcpy(copy, name, len);
    return copy;
}

/* Makes room for one more entry in a growable array of elem-sized items;
 * records CLF_ERR_OUT_OF_MEMORY and returns false when it cannot. */
static bool reserve(clf_graph *g, const char *call, void **items, size_t count, size_t *cap, size_t elem)
{
    if (count < *cap)
        return true;
    size_t ncap = *cap ? 2 * *cap : 8;
    void *p = ncap <= SIZE_MAX / elem ? clf__realloc(*items, ncap * elem) : NULL;
    if (!p) {
        clf__graph_fail(g, CLF_ERR_OUT_OF_MEMORY, call, "out of memory growing the graph");
        return false;
    }
    *items = p;
    *cap = ncap;
    return true;
}

clf_tensor clf_input(clf_graph *g, const char *name, clf_dtype dtype, int rank, const int64_t *shape)
{
    static const char call[] = "clf_input";
    int64_t dims[CLF_MAX_RANK];
    uint8_t sym[CLF_MAX_RANK] = {0};
    if (!clf__graph_usable(g) || !check_name(g, call, name) || !check_dtype_arg(g, call, "dtype", dtype))
        return CLF_TENSOR_INVALID;
    if (shape && rank > 0 && rank <= CLF_MAX_RANK) {
        clf__graph_take_dims(g, rank, shape, dims, sym);
        shape = dims;
    }
    if (!clf__graph_check_shape(g, call, "shape", rank, shape, false))
        return CLF_TENSOR_INVALID;
    /* Reserve first, so that every INPUT node is listed in g->inputs. */
    void *inputs = g->inputs;
    bool ok = reserve(g, call, &inputs, g->ninputs, &g->cap_inputs, sizeof *g->inputs);
    g->inputs = inputs;
    if (!ok)
        return CLF_TENSOR_INVALID;
    clf__node n = {.op = CLF__OP_INPUT, .dtype = dtype, .rank = rank};
    if (rank > 0) {
        memcpy(n.shape, shape, (size_t)rank * sizeof *shape);
        memcpy(n.sym, sym, sizeof n.sym);
    }
    n.name = copy_name(g, call, name);
    if (!n.name)
        return CLF_TENSOR_INVALID;
    clf_tensor t = clf__graph_append(g, call, &n);
    if (clf_tensor_valid(t))
        g->inputs[g->ninputs++] = t.node;
    return t;
}

clf_tensor clf_scalar(clf_graph *g, clf_dtype dtype, double value)
{
    return clf__graph_scalar(g, "clf_scalar", dtype, value);
}

clf_tensor clf__graph_scalar(clf_graph *g, const char *call, clf_dtype dtype, double value)
{
    if (!clf__graph_usable(g) || !check_dtype_arg(g, call, "dtype", dtype))
        return CLF_TENSOR_INVALID;
    clf__node n = {.op = CLF__OP_CONSTANT, .dtype = dtype, .rank = 0};
    n.data = clf__malloc(clf_dtype_size(dtype));
    if (!n.data) {
        clf__graph_fail(g, CLF_ERR_OUT_OF_MEMORY, call, "out of memory");
        return CLF_TENSOR_INVALID;
    }
    n.attr.constant.scalar = clf__dtype_info_of(dtype)->put_f64(n.data, 0, value);
    return clf__graph_append(g, call, &n);
}

/* A constant node: a copy of numel elements of data, or (borrow, rank > 0)
 * data itself. Rank-0 constants also get scalar, as clf_scalar's do.
 * Zero-size constants keep data NULL. */
static clf_tensor constant_node(clf_graph *g, clf_dtype dtype, int rank, const int64_t *shape, const void *data,
                                bool borrow)
{
    static const char call[] = "clf_constant";
    if (!clf__graph_usable(g) || !check_dtype_arg(g, call, "dtype", dtype) ||
        !clf__graph_check_shape(g, call, "shape", rank, shape, false))
        return CLF_TENSOR_INVALID;
    size_t elem = clf_dtype_size(dtype);
    int64_t numel = checked_numel(rank, shape, elem);
    if (numel < 0) {
        char s[CLF__SHAPE_STR_CAP];
        clf__graph_fail(g, CLF_ERR_SHAPE, call, "shape %s of %s is too large",
                        clf__graph_shape_str(s, sizeof s, rank, shape), clf_dtype_name(dtype));
        return CLF_TENSOR_INVALID;
    }
    if (numel > 0 && !data) {
        clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call, "data is NULL");
        return CLF_TENSOR_INVALID;
    }
    clf__node n = {.op = CLF__OP_CONSTANT, .dtype = dtype, .rank = rank};
    if (rank > 0)
        memcpy(n.shape, shape, (size_t)rank * sizeof *shape);
    if (numel > 0 && borrow && rank > 0) {
        n.data = (void *)(uintptr_t)data;
        n.borrowed = true;
    } else if (numel > 0) {
        size_t bytes = (size_t)numel * elem;
        n.data = clf__malloc(bytes);
        if (!n.data) {
            clf__graph_fail(g, CLF_ERR_OUT_OF_MEMORY, call, "out of memory copying %zu bytes of data",
                            bytes);
            return CLF_TENSOR_INVALID;
        }
        memcpy(n.data, data, bytes);
        if (rank == 0)
            n.attr.constant.scalar = clf__dtype_info_of(dtype)->get_f64(n.data, 0);
    }
    return clf__graph_append(g, call, &n);
}

clf_tensor clf_constant(clf_graph *g, clf_dtype dtype, int rank, const int64_t *shape, const void *data)
{
    return constant_node(g, dtype, rank, shape, data, false);
}

clf_tensor clf__graph_constant_borrowed(clf_graph *g, clf_dtype dtype, int rank, const int64_t *shape,
                                        const void *data)
{
    return constant_node(g, dtype, rank, shape, data, true);
}

clf_status clf_graph_output(clf_graph *g, const char *name, clf_tensor t)
{
    static const char call[] = "clf_graph_output";
    if (!g)
        return CLF_ERR_INVALID_ARGUMENT;
    if (g->status != CLF_OK)
        return g->status;
    if (!check_name(g, call, name) || !clf__graph_arg(g, call, "t", t))
        return g->status;
    void *outputs = g->outputs;
    bool ok = reserve(g, call, &outputs, g->noutputs, &g->cap_outputs, sizeof *g->outputs);
    g->outputs = outputs;
    if (!ok)
        return g->status;
    char *copy = copy_name(g, call, name);
    if (!copy)
        return g->status;
    g->outputs[g->noutputs++] = (clf__graph_output){copy, t.node};
    return CLF_OK;
}

/* ---- Pointwise -------------------------------------------------------- */

/* "f32", "f32 or i32", "f32, f16, bf16, i32 or i64": the dtypes in mask,
 * floats first, for messages, written to buf. */
static const char *mask_str(unsigned mask, char *buf, size_t cap)
{
    static const clf_dtype order[] = {CLF_F32, CLF_F16, CLF_BF16, CLF_I32, CLF_I64, CLF_BOOL};
    static_assert(sizeof order / sizeof order[0] == CLF_DTYPE_COUNT, "every dtype in the message order");
    int total = 0, seen = 0;
    for (int dt = 0; dt < CLF_DTYPE_COUNT; dt++)
        total += (mask >> dt) & 1u;
    size_t n = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < CLF_DTYPE_COUNT && n < cap; k++) {
        clf_dtype dt = order[k];
        if (!((mask >> dt) & 1u))
            continue;
        const char *sep = seen == 0 ? "" : seen == total - 1 ? " or " : ", ";
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", sep, clf_dtype_name(dt));
        seen++;
    }
    return buf;
}

/* Records a unary node after checking x and its dtype; call names the
 * public function in messages. */
static clf_tensor unary(clf_graph *g, const char *call, clf_unary_op op, clf_tensor x)
{
    assert((unsigned)op < CLF_UNARY_COUNT);
    if (!clf__graph_usable(g))
        return CLF_TENSOR_INVALID;
    const clf__node *in = clf__graph_arg(g, call, "x", x);
    if (!in)
        return CLF_TENSOR_INVALID;
    const clf__op_info *info = clf__op_info_of(clf__op_of_unary(op));
    unsigned ok = info->dtypes;
    if (!(ok & (1u << in->dtype))) {
        char mb[64];
        clf__graph_fail(g, CLF_ERR_DTYPE, call, "x has dtype %s; %s takes %s", clf_dtype_name(in->dtype),
                        clf__unary_op_name(op), mask_str(ok, mb, sizeof mb));
        return CLF_TENSOR_INVALID;
    }
    clf__node n = {.op = clf__op_of_unary(op),
                   .dtype = info->rule == CLF__DT_BOOL ? CLF_BOOL : in->dtype,
                   .rank = in->rank,
                   .ninputs = 1,
                   .inputs = (uint32_t[]){x.node}};
    memcpy(n.shape, in->shape, sizeof n.shape);
    return clf__graph_append(g, call, &n);
}

/* Records a binary node after checking a and b, their dtypes and that
 * their shapes broadcast. */
static clf_tensor binary(clf_graph *g, const char *call, clf_binary_op op, clf_tensor a, clf_tensor b)
{
    assert((unsigned)op < CLF_BINARY_COUNT);
    if (!clf__graph_usable(g))
        return CLF_TENSOR_INVALID;
    const clf__node *na = clf__graph_arg(g, call, "a", a);
    const clf__node *nb = na ? clf__graph_arg(g, call, "b", b) : NULL;
    if (!nb)
        return CLF_TENSOR_INVALID;
    if (na->dtype != nb->dtype) {
        clf__graph_fail(g, CLF_ERR_DTYPE, call, "a has dtype %s and b has dtype %s; %s needs one dtype",
                        clf_dtype_name(na->dtype), clf_dtype_name(nb->dtype), clf__binary_op_name(op));
        return CLF_TENSOR_INVALID;
    }
    const clf__op_info *info = clf__op_info_of(clf__op_of_binary(op));
    unsigned ok = info->dtypes;
    if (!(ok & (1u << na->dtype))) {
        char mb[64];
        clf__graph_fail(g, CLF_ERR_DTYPE, call, "a and b have dtype %s; %s takes %s",
                        clf_dtype_name(na->dtype), clf__binary_op_name(op), mask_str(ok, mb, sizeof mb));
        return CLF_TENSOR_INVALID;
    }
    clf__node n = {.op = clf__op_of_binary(op), .ninputs = 2, .inputs = (uint32_t[]){a.node, b.node}};
    n.dtype = info->rule == CLF__DT_BOOL ? CLF_BOOL : na->dtype;
    if (!clf__graph_broadcast(na->rank, na->shape, nb->rank, nb->shape, &n.rank, n.shape)) {
        char sa[CLF__SHAPE_STR_CAP], sb[CLF__SHAPE_STR_CAP];
        clf__graph_fail(g, CLF_ERR_SHAPE, call, "shapes %s (a) and %s (b) do not broadcast",
                        clf__graph_shape_str(sa, sizeof sa, na->rank, na->shape),
                        clf__graph_shape_str(sb, sizeof sb, nb->rank, nb->shape));
        return CLF_TENSOR_INVALID;
    }
    return clf__graph_append(g, call, &n);
}

clf_tensor clf_unary(clf_graph *g, clf_unary_op op, clf_tensor x)
{
    if (!clf__graph_usable(g))
        return CLF_TENSOR_INVALID;
    if ((unsigned)op >= CLF_UNARY_COUNT) {
        clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, "clf_unary", "op %d is not a clf_unary_op",
                        (int)op);
        return CLF_TENSOR_INVALID;
    }
    return unary(g, "clf_unary", op, x);
}

clf_tensor clf_binary(clf_graph *g, clf_binary_op op, clf_tensor a, clf_tensor b)
{
    if (!clf__graph_usable(g))
        return CLF_TENSOR_INVALID;
    if ((unsigned)op >= CLF_BINARY_COUNT) {
        clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, "clf_binary", "op %d is not a clf_binary_op",
                        (int)op);
        return CLF_TENSOR_INVALID;
    }
    return binary(g, "clf_binary", op, a, b);
}

clf_tensor clf__graph_unary(clf_graph *g, const char *call, clf_unary_op op, clf_tensor x)
{
    return unary(g, call, op, x);
}

clf_tensor clf__graph_binary(clf_graph *g, const char *call, clf_binary_op op, clf_tensor a, clf_tensor b)
{
    return binary(g, call, op, a, b);
}

/* clf_neg, clf_exp, ..., clf_add, ..., clf_logical_or: one per op. */
#define UNARY_BUILDER_(E, n)                                                                            \
    clf_tensor clf_##n(clf_graph *g, clf_tensor x)                                                      \
    {                                                                                                   \
        return unary(g, "clf_" #n, CLF_UNARY_##E, x);                                                   \
    }
CLF_UNARY_OP_LIST(UNARY_BUILDER_)
#undef UNARY_BUILDER_

#define BINARY_BUILDER_(E, n)                                                                           \
    clf_tensor clf_##n(clf_graph *g, clf_tensor a, clf_tensor b)                                        \
    {                                                                                                   \
        return binary(g, "clf_" #n, CLF_BINARY_##E, a, b);                                              \
    }
CLF_BINARY_OP_LIST(BINARY_BUILDER_)
#undef BINARY_BUILDER_

/* Records cond ? a : b after checking the dtypes (cond bool, a and b alike)
 * and that all three shapes broadcast together. */
clf_tensor clf_where(clf_graph *g, clf_tensor cond, clf_tensor a, clf_tensor b)
{
    static const char call[] = "clf_where";
    if (!clf__graph_usable(g))
        return CLF_TENSOR_INVALID;
    const clf__node *nc = clf__graph_arg(g, call, "cond", cond);
    const clf__node *na = nc ? clf__graph_arg(g, call, "a", a) : NULL;
    const clf__node *nb = na ? clf__graph_arg(g, call, "b", b) : NULL;
    if (!nb)
        return CLF_TENSOR_INVALID;
    if (nc->dtype != CLF_BOOL) {
        clf__graph_fail(g, CLF_ERR_DTYPE, call, "cond has dtype %s; where takes a bool cond",
                        clf_dtype_name(nc->dtype));
        return CLF_TENSOR_INVALID;
    }
    if (na->dtype != nb->dtype) {
        clf__graph_fail(g, CLF_ERR_DTYPE, call,
                        "a has dtype %s and b has dtype %s; where needs one dtype",
                        clf_dtype_name(na->dtype), clf_dtype_name(nb->dtype));
        return CLF_TENSOR_INVALID;
    }
    clf__node n = {.op = CLF__OP_WHERE,
                   .dtype = na->dtype,
                   .ninputs = 3,
                   .inputs = (uint32_t[]){cond.node, a.node, b.node}};
    if (!clf__graph_broadcast(nc->rank, nc->shape, na->rank, na->shape, &n.rank, n.shape) ||
        !clf__graph_broadcast(n.rank, n.shape, nb->rank, nb->shape, &n.rank, n.shape)) {
        char sc[CLF__SHAPE_STR_CAP], sa[CLF__SHAPE_STR_CAP], sb[CLF__SHAPE_STR_CAP];
        clf__graph_fail(g, CLF_ERR_SHAPE, call, "shapes %s (cond), %s (a) and %s (b) do not broadcast",
                        clf__graph_shape_str(sc, sizeof sc, nc->rank, nc->shape),
                        clf__graph_shape_str(sa, sizeof sa, na->rank, na->shape),
                        clf__graph_shape_str(sb, sizeof sb, nb->rank, nb->shape));
        return CLF_TENSOR_INVALID;
    }
    return clf__graph_append(g, call, &n);
}

/* Records min(max(x, lo), hi); the bounds are kept as given. */
clf_tensor clf_clip(clf_graph *g, clf_tensor x, double lo, double hi)
{
    static const char call[] = "clf_clip";
    if (!clf__graph_usable(g))
        return CLF_TENSOR_INVALID;
    const clf__node *in = clf__graph_arg(g, call, "x", x);
    if (!in)
        return CLF_TENSOR_INVALID;
    if (!clf__dtype_is_float(in->dtype) && in->dtype != CLF_I32) {
        clf__graph_fail(g, CLF_ERR_DTYPE, call, "x has dtype %s; clip takes f32, f16, bf16 or i32",
                        clf_dtype_name(in->dtype));
        return CLF_TENSOR_INVALID;
    }
    if (isnan(lo) || isnan(hi)) {
        clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call,
                        "%s is NaN; use -INFINITY or INFINITY for no bound", isnan(lo) ? "lo" : "hi");
        return CLF_TENSOR_INVALID;
    }
    clf__node n = {.op = CLF__OP_CLIP,
                   .dtype = in->dtype,
                   .rank = in->rank,
                   .ninputs = 1,
                   .inputs = (uint32_t[]){x.node},
                   .attr.clip = {lo, hi}};
    memcpy(n.shape, in->shape, sizeof n.shape);
    return clf__graph_append(g, call, &n);
}

/* Movement ops a cast is moved above: they move every element to one
 * place (no slice, which drops some, no expand, which copies). */
static bool cast_commutes(const clf__node *n)
{
    return n->op == CLF__OP_RESHAPE || n->op == CLF__OP_SQUEEZE || n->op == CLF__OP_UNSQUEEZE ||
           n->op == CLF__OP_TRANSPOSE;
}

/* Whether node id is a chain of such views of a computed value (no leaf,
 * no other movement op below them). */
static bool views_of_value(const clf_graph *g, uint32_t id)
{
    const clf__node *n = clf__graph_node(g, id);
    if (!cast_commutes(n))
        return false;
    while (cast_commutes(n))
        n = clf__graph_node(g, n->inputs[0]);
    return clf__node_class_of(n) != CLF__CLASS_LEAF && clf__node_class_of(n) != CLF__CLASS_MOVEMENT;
}

/* A cast of views (reshapes, transposes) of a computed value is built as
 * those views of the cast value: the cast then has the value's shape, so
 * the kernel computing the value takes it as an epilogue (an f16 model's
 * layer norm, reshaped to the rows of the next product and cast to f16;
 * attention's output, transposed, merged into heads and cast) rather than
 * a kernel of its own. */
clf_tensor clf_cast(clf_graph *g, clf_tensor x, clf_dtype dtype)
{
    static const char call[] = "clf_cast";
    if (!clf__graph_usable(g))
        return CLF_TENSOR_INVALID;
    const clf__node *in = clf__graph_arg(g, call, "x", x);
    if (!in || !check_dtype_arg(g, call, "dtype", dtype))
        return CLF_TENSOR_INVALID;
    if (in->dtype != dtype && views_of_value(g, x.node)) {
        clf__node view = *in;
        clf_tensor y = clf_cast(g, (clf_tensor){g->serial, in->inputs[0]}, dtype);
        if (!clf__graph_usable(g))
            return CLF_TENSOR_INVALID;
        view.dtype = dtype;
        view.inputs = (uint32_t[]){y.node};
        return clf__graph_append(g, call, &view);
    }
    clf__node n = {
        .op = CLF__OP_CAST, .dtype = dtype, .rank = in->rank, .ninputs = 1, .inputs = (uint32_t[]){x.node}};
    memcpy(n.shape, in->shape, sizeof n.shape);
    return clf__graph_append(g, call, &n);
}
