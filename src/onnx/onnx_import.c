/* ONNX AST -> clf_graph. Each ONNX node becomes one or a few builder
 * calls; inputs that ONNX passes as tensors but libclfuse takes as
 * attributes (Reshape's shape, Slice's starts, reduction axes, ...) must be
 * Constant nodes or initializers, whose values are kept as literals until
 * an op reads them as data. Literals reach clf_constant in their own bytes
 * where libclfuse has their dtype (f32, i32, bool): a weight is copied
 * once, into the graph. */
#include "onnx_import.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "clfuse/reference.h"
#include "graph/dtype_table.h"
#include "graph/graph_builder.h"
#include "graph/op_table.h"
#include "util/alloc.h"
#include "util/hash.h"
#include "util/log.h"

#define DEFAULT_OPSET 18

/* Declared shapes (AST) become graph shapes here, extent by extent. */
_Static_assert(CLF__ONNX_MAX_RANK == CLF_MAX_RANK, "the AST and the graph hold the same ranks");

typedef struct value {
    const char *name;
    clf_tensor t;
    const clf__onnx_tensor *lit; /* a constant's value, not yet (or also) in the graph */
    int64_t producer;
} value;

typedef struct symbol {
    const char *name;
    int64_t value;
    const char *origin;
} symbol;

typedef struct importer {
    const clf__onnx_model *m;
    int64_t opset;
    clf_graph *g;
    value *values;
    size_t nvalues, cap_values;
    /* The values by name: open addressing over a power-of-two table of
     * indices into values plus one (0: a free slot), at most half full (a
     * graph of thousands of values was a million name comparisons an
     * import, and a symbolic model imports again at every new size). */
    uint32_t *index;
    size_t cap_index;
    symbol *syms;
    size_t nsyms, cap_syms;
    void **owned; /* literals made here (Constant value_ints, Shape, integer lists) */
    size_t nowned, cap_owned;
    int node; /* the node being imported, for messages; -1 outside nodes */
    bool borrow; /* initializers become constants that borrow the AST's bytes */
    /* KV caches written in place (clf_onnx_kv_cache), one per params entry:
     * the input declared with its capacity, the axis, the past length at
     * this import, the write (once the Concat is imported). */
    const clf_onnx_kv_cache *kv;
    struct kv_state {
        clf_tensor storage, past, write;
        int axis;
        int64_t past_len;
    } *kvs;
    size_t nkv;
    /* Bit i: attribute i of the node being imported was read (node_attr);
     * an attribute no rule read is refused (check_attrs_read). */
    uint64_t attrs_read;
    clf__fold_memo *folds; /* folds remembered across imports (NULL: none) */
    char *err;
    size_t cap;
    clf_status status; /* the first failure */
} importer;

/* Records the first failure: "[LINE:COL: ][node K 'name' (Op): ]reason". */
static clf_status vfail(importer *I, clf_status st, clf__onnx_pos pos, const char *fmt, va_list ap)
{
    if (I->status)
        return I->status;
    size_t n = 0;
    if (pos.line)
        n += (size_t)snprintf(I->err, I->cap, "%d:%d: ", pos.line, pos.col);
    if (I->node >= 0 && n < I->cap) {
        clf__onnx_node_label(I->m, I->node, I->err + n, I->cap - n);
        n += strlen(I->err + n);
        n += (size_t)snprintf(I->err + n, n < I->cap ? I->cap - n : 0, ": ");
    }
    if (n < I->cap)
        vsnprintf(I->err + n, I->cap - n, fmt, ap);
    return I->status = st;
}

/* A model that is not valid ONNX, or not one libclfuse can read. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static clf_status fail(importer *I, clf__onnx_pos pos, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    clf_status st = vfail(I, CLF_ERR_MODEL, pos, fmt, ap);
    va_end(ap);
    return st;
}

/* Valid ONNX that libclfuse cannot run (yet). */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static clf_status unsupported(importer *I, clf__onnx_pos pos, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    clf_status st = vfail(I, CLF_ERR_UNSUPPORTED, pos, fmt, ap);
    va_end(ap);
    return st;
}

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static clf_status fail_status(importer *I, clf_status status, clf__onnx_pos pos, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    clf_status st = vfail(I, status, pos, fmt, ap);
    va_end(ap);
    return st;
}

static clf_status oom(importer *I)
{
    if (!I->status) {
        snprintf(I->err, I->cap, "out of memory");
        I->status = CLF_ERR_OUT_OF_MEMORY;
    }
    return I->status;
}

static const clf__onnx_pos nowhere = {0, 0};

static void *own(importer *I, size_t bytes)
{
    if (I->nowned == I->cap_owned) {
        size_t nc = I->cap_owned ? I->cap_owned * 2 : 16;
        void **v = clf__realloc(I->owned, nc * sizeof *v);
        if (!v)
            return NULL;
        I->owned = v;
        I->cap_owned = nc;
    }
    void *p = clf__calloc(1, bytes ? bytes : 1);
    if (p)
        I->owned[I->nowned++] = p;
    return p;
}

static size_t name_slot(const char *name, size_t cap)
{
    return (size_t)clf__hash_words(CLF__HASH_SEED, name, strlen(name)) & (cap - 1);
}

static value *find(importer *I, const char *name)
{
    if (!I->cap_index)
        return NULL;
    for (size_t s = name_slot(name, I->cap_index);; s = (s + 1) & (I->cap_index - 1)) {
        const uint32_t v = I->index[s];
        if (!v)
            return NULL;
        if (!strcmp(I->values[v - 1].name, name))
            return &I->values[v - 1];
    }
}

/* Puts values[i] into the index, which has room. */
static void index_put(importer *I, size_t i)
{
    size_t s = name_slot(I->values[i].name, I->cap_index);
    while (I->index[s])
        s = (s + 1) & (I->cap_index - 1);
    I->index[s] = (uint32_t)(i + 1);
}

static clf_status define(importer *I, clf__onnx_pos pos, const char *name, clf_tensor t, const clf__onnx_tensor *lit,
                         int64_t producer)
{
    if (find(I, name))
        return fail(I, pos, "'%s' is defined twice (ONNX graphs are in SSA form)", name);
    if (I->nvalues == I->cap_values) {
        size_t nc = I->cap_values ? I->cap_values * 2 : 64;
        value *v = clf__realloc(I->values, nc * sizeof *v);
        if (!v)
            return oom(I);
        I->values = v;
        I->cap_values = nc;
    }
    if (I->nvalues + 1 > UINT32_MAX - 1)
        return fail(I, pos, "more than %u values", (unsigned)(UINT32_MAX - 1));
    I->values[I->nvalues++] = (value){name, t, lit, producer};
    if (I->nvalues * 2 > I->cap_index) { /* a table twice as large, every value again */
        const size_t nc = I->cap_index ? I->cap_index * 2 : 256;
        uint32_t *x = clf__calloc(nc, sizeof *x);
        if (!x)
            return oom(I);
        clf__free(I->index);
        I->index = x;
        I->cap_index = nc;
        for (size_t i = 0; i < I->nvalues; i++)
            index_put(I, i);
    } else {
        index_put(I, I->nvalues - 1);
    }
    return CLF_OK;
}

static symbol *find_sym(importer *I, const char *name)
{
    for (size_t i = 0; i < I->nsyms; i++)
        if (!strcmp(I->syms[i].name, name))
            return &I->syms[i];
    return NULL;
}

static clf_status add_sym(importer *I, const char *name, int64_t v, const char *origin)
{
    if (I->nsyms == I->cap_syms) {
        size_t nc = I->cap_syms ? I->cap_syms * 2 : 16;
        symbol *s = clf__realloc(I->syms, nc * sizeof *s);
        if (!s)
            return oom(I);
        I->syms = s;
        I->cap_syms = nc;
    }
    I->syms[I->nsyms++] = (symbol){name, v, origin};
    return CLF_OK;
}

static const char *dtype_onnx_name(clf_dtype dt) { return clf__dtype_info_of(dt)->onnx_name; }

static char *shape_str(int rank, const int64_t *shape, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < rank && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, d ? ", %lld" : "%lld", (long long)shape[d]);
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
    return buf;
}

static char *type_str(const clf__onnx_type *t, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "%s", clf__onnx_elem_name(t->elem));
    if (!t->has_shape)
        return buf;
    n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "[");
    for (int d = 0; d < t->rank && n < cap; d++) {
        if (t->dims[d].param)
            n += (size_t)snprintf(buf + n, cap - n, d ? ", %s" : "%s", t->dims[d].param);
        else
            n += (size_t)snprintf(buf + n, cap - n, d ? ", %lld" : "%lld", (long long)t->dims[d].value);
    }
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
    return buf;
}

/* " at line 3" for a declaration in the text syntax; "" in binary. */
static const char *at_line(const clf__onnx_type *t, char *buf, size_t cap)
{
    if (t->pos.line)
        snprintf(buf, cap, " at line %d", t->pos.line);
    else if (cap)
        buf[0] = 0;
    return buf;
}

/* Graph builder errors are sticky: report the first, at the node, with
 * the builder's own status. */
static clf_status check_graph(importer *I, const clf__onnx_node *n)
{
    const char *msg = "";
    clf_status st = clf_graph_status(I->g, &msg);
    if (st == CLF_OK)
        return CLF_OK;
    if (st == CLF_ERR_OUT_OF_MEMORY)
        return oom(I);
    return fail_status(I, st, n ? n->op_pos : nowhere, "%s", msg);
}

/* ---- Constants ------------------------------------------------------------- */

/* The graph dtype of an ONNX element type, where libclfuse has one. */
static bool elem_dtype(int elem, clf_dtype *dt) { return clf__dtype_from_onnx(elem, dt); }

/* The ONNX element type of a graph dtype. */
static int dtype_elem(clf_dtype dt) { return clf__dtype_info_of(dt)->onnx_type; }

/* Whether p is a literal this import made (folded), not one of the AST's. */
static bool made_here(const importer *I, const void *p)
{
    for (size_t i = 0; i < I->nowned; i++)
        if (I->owned[i] == p)
            return true;
    return false;
}

/* The graph tensor for v, creating a constant from its literal when
 * needed: every element type libclfuse has (int64 included) goes to
 * clf_constant in its own bytes. */
static clf_status materialize(importer *I, const clf__onnx_node *n, value *v, clf_tensor *out)
{
    if (clf_tensor_valid(v->t)) {
        *out = v->t;
        return CLF_OK;
    }
    const clf__onnx_tensor *L = v->lit;
    clf__onnx_pos pos = n ? n->op_pos : L->type.pos;
    int64_t shape[CLF_MAX_RANK];
    for (int d = 0; d < L->type.rank; d++)
        shape[d] = L->type.dims[d].value;
    clf_dtype dt;
    if (!elem_dtype(L->type.elem, &dt))
        return unsupported(I, pos, "constant '%s' is %s; libclfuse computes in float, float16, bfloat16, int32, int64 and bool",
                           v->name, clf__onnx_elem_name(L->type.elem));
    if (L->n && !L->data)
        return fail_status(I, CLF_ERR_INTERNAL, pos, "constant '%s': its data was released", v->name);
    /* The literal's own bytes (rank 0 too: exact for int64 past 2^53),
     * borrowed where the model's graph keeps the AST for importing again
     * (symbolic dimensions): every import shares one copy, and so do the
     * executables' specialisations on the device. */
    if (I->borrow && (size_t)L->n * clf_dtype_size(dt) >= 1024 && !made_here(I, L))
        *out = v->t = clf__graph_constant_borrowed(I->g, dt, L->type.rank, shape, L->data);
    else
        *out = v->t = clf_constant(I->g, dt, L->type.rank, shape, L->data);
    return check_graph(I, n);
}

/* Input k of node n as a graph tensor; k must be present. */
static clf_status input(importer *I, const clf__onnx_node *n, int k, clf_tensor *out)
{
    value *v = find(I, n->inputs[k]);
    /* Presence was checked before the op ran. */
    return materialize(I, n, v, out);
}

static bool has_input(const clf__onnx_node *n, int k) { return k < n->ninputs && n->inputs[k][0]; }

static clf_status need_literal(importer *I, const clf__onnx_node *n, const value *v, const char *what)
{
    if (!v->lit)
        return unsupported(I, n->op_pos, "the %s input '%s' must be a Constant, an initializer or computable from "
                           "them and static shapes (libclfuse takes it when the graph is built)", what, v->name);
    if (v->lit->n && !v->lit->data)
        return fail_status(I, CLF_ERR_INTERNAL, n->op_pos, "the %s input '%s': its data was released", what,
                           v->name);
    return CLF_OK;
}

/* Input k of n as integer values known when the graph is built. */
static clf_status const_ints(importer *I, const clf__onnx_node *n, int k, const char *what, const int64_t **vals,
                             size_t *count)
{
    if (!has_input(n, k))
        return fail(I, n->op_pos, "the %s input (input %d) is required", what, k + 1);
    value *v = find(I, n->inputs[k]);
    if (need_literal(I, n, v, what))
        return I->status;
    const clf__onnx_tensor *L = v->lit;
    if (!clf__onnx_elem_is_integer(L->type.elem) || L->type.elem == CLF__ONNX_BOOL)
        return fail(I, n->op_pos, "the %s input '%s' must hold integers (it is %s)", what, v->name,
                    clf__onnx_elem_name(L->type.elem));
    if (L->type.rank > 1)
        return fail(I, n->op_pos, "the %s input '%s' must be a 1-D tensor", what, v->name);
    if (L->n > CLF_MAX_RANK)
        return unsupported(I, n->op_pos, "the %s input '%s' holds %zu values, more than libclfuse's %d axes",
                           what, v->name, L->n, CLF_MAX_RANK);
    int64_t *out = own(I, L->n * sizeof *out);
    if (!out)
        return oom(I);
    for (size_t j = 0; j < L->n; j++)
        out[j] = clf__onnx_tensor_int(L, j);
    *vals = out;
    *count = L->n;
    return CLF_OK;
}

static clf_status const_scalar(importer *I, const clf__onnx_node *n, int k, const char *what, double *out)
{
    if (!has_input(n, k))
        return fail(I, n->op_pos, "the %s input (input %d) is required", what, k + 1);
    value *v = find(I, n->inputs[k]);
    if (need_literal(I, n, v, what))
        return I->status;
    if (v->lit->n != 1)
        return fail(I, n->op_pos, "the %s input '%s' must hold one value", what, v->name);
    *out = clf__onnx_tensor_double(v->lit, 0);
    return CLF_OK;
}

/* ---- Attributes ------------------------------------------------------------ */

/* Node n's attribute name (NULL when absent), noted as read. */
static const clf__onnx_attr *node_attr(importer *I, const clf__onnx_node *n, const char *name)
{
    const clf__onnx_attr *a = clf__onnx_node_attr(n, name);
    ptrdiff_t i = a ? a - n->attrs : -1;
    if (i >= 0 && i < 64)
        I->attrs_read |= UINT64_C(1) << i;
    return a;
}

/* Attributes an op may carry that do not change what it computes here
 * (Dropout's seed and, before opset 12, its ratio, in inference; saturate only concerns float8, which is
 * refused; stash_type is the precision of the statistics, f32 or wider
 * here anyway). Every other attribute must be read by the op's rule. */
static const struct {
    const char *op, *attr;
} ignored_attrs[] = {
    {"Dropout", "seed"},
    {"Dropout", "ratio"},
    {"Cast", "saturate"},
    {"CastLike", "saturate"},
    {"LayerNormalization", "stash_type"},
    {"RMSNormalization", "stash_type"},
};

/* An attribute of node n that its rule did not read is one libclfuse does
 * not know for the op: refused, not silently ignored. */
static clf_status check_attrs_read(importer *I, const clf__onnx_node *n)
{
    for (int i = 0; i < n->nattrs; i++) {
        if (i < 64 && (I->attrs_read & (UINT64_C(1) << i)))
            continue; /* (no op has 64 attributes: past them, none is read) */
        bool ignored = false;
        for (size_t j = 0; j < sizeof ignored_attrs / sizeof ignored_attrs[0]; j++)
            ignored |= !strcmp(n->op, ignored_attrs[j].op) && !strcmp(n->attrs[i].name, ignored_attrs[j].attr);
        if (!ignored)
            return unsupported(I, n->attrs[i].pos, "attribute '%s' of %s is not supported by libclfuse",
                               n->attrs[i].name, n->op);
    }
    return CLF_OK;
}

static clf_status attr_int(importer *I, const clf__onnx_node *n, const char *name, int64_t dflt, int64_t *out)
{
    const clf__onnx_attr *a = node_attr(I, n, name);
    *out = dflt;
    if (!a)
        return CLF_OK;
    if (a->kind != CLF__ONNX_ATTR_INT)
        return fail(I, a->pos, "attribute '%s' must be an integer", name);
    *out = a->i;
    return CLF_OK;
}

/* An axis attribute: attr_int's, refused when given outside [-CLF_MAX_RANK,
 * CLF_MAX_RANK) (the builders take an int and check it against the rank;
 * 4294967295 must not reach them as -1). */
static clf_status attr_axis(importer *I, const clf__onnx_node *n, const char *name, int64_t dflt, int64_t *out)
{
    if (attr_int(I, n, name, dflt, out))
        return I->status;
    const clf__onnx_attr *a = node_attr(I, n, name);
    if (a && (*out < -CLF_MAX_RANK || *out >= CLF_MAX_RANK))
        return fail(I, a->pos, "attribute '%s' is %lld: an axis must lie in [%d, %d)", name, (long long)*out,
                    -CLF_MAX_RANK, CLF_MAX_RANK);
    return CLF_OK;
}

static clf_status attr_float(importer *I, const clf__onnx_node *n, const char *name, double dflt, double *out)
{
    const clf__onnx_attr *a = node_attr(I, n, name);
    *out = dflt;
    if (!a)
        return CLF_OK;
    if (a->kind != CLF__ONNX_ATTR_FLOAT && a->kind != CLF__ONNX_ATTR_INT)
        return fail(I, a->pos, "attribute '%s' must be a number", name);
    *out = a->f;
    return CLF_OK;
}

/* An ints attribute; *present false when absent. */
static clf_status attr_ints(importer *I, const clf__onnx_node *n, const char *name, const int64_t **vals,
                            size_t *count, bool *present)
{
    const clf__onnx_attr *a = node_attr(I, n, name);
    *present = a != NULL;
    *vals = NULL;
    *count = 0;
    if (!a)
        return CLF_OK;
    if (a->kind == CLF__ONNX_ATTR_INT) {
        *vals = &a->i;
        *count = 1;
        return CLF_OK;
    }
    if (a->kind != CLF__ONNX_ATTR_INTS)
        return fail(I, a->pos, "attribute '%s' must be a list of integers", name);
    *vals = a->ints;
    *count = a->n;
    return CLF_OK;
}

static clf_status to_axes(importer *I, const clf__onnx_node *n, const int64_t *v, size_t count, int *axes)
{
    if (count > CLF_MAX_RANK)
        return unsupported(I, n->op_pos, "more than %d axes", CLF_MAX_RANK);
    for (size_t k = 0; k < count; k++) {
        if (v[k] < -CLF_MAX_RANK || v[k] >= CLF_MAX_RANK)
            return fail(I, n->op_pos, "axis %lld is out of range", (long long)v[k]);
        axes[k] = (int)v[k];
    }
    return CLF_OK;
}

/* Axes from input k (when present) or from the "axes" attribute, whichever
 * the opset's form uses; *given false when neither is there. */
static clf_status axes_of(importer *I, const clf__onnx_node *n, int k, int *axes, int *naxes, bool *given)
{
    const int64_t *v = NULL;
    size_t count = 0;
    bool attr = false;
    if (attr_ints(I, n, "axes", &v, &count, &attr))
        return I->status;
    if (has_input(n, k)) {
        if (attr)
            return fail(I, n->op_pos, "axes given both as an input and as an attribute");
        if (const_ints(I, n, k, "axes", &v, &count))
            return I->status;
    }
    *given = attr || has_input(n, k);
    *naxes = (int)count;
    return to_axes(I, n, v, count, axes);
}

static clf_status want_inputs(importer *I, const clf__onnx_node *n, int lo, int hi)
{
    if (n->ninputs < lo || n->ninputs > hi) {
        if (lo == hi)
            return fail(I, n->op_pos, "%s takes %d input%s, got %d", n->op, lo, lo == 1 ? "" : "s", n->ninputs);
        return fail(I, n->op_pos, "%s takes %d to %d inputs, got %d", n->op, lo, hi, n->ninputs);
    }
    for (int k = 0; k < lo; k++)
        if (!n->inputs[k][0])
            return fail(I, n->op_pos, "input %d is required", k + 1);
    return CLF_OK;
}

/* ---- Ops -------------------------------------------------------------------- */

static const struct {
    const char *onnx;
    clf_reduce_op op;
} reduce_ops[] = {
    {"ReduceSum", CLF_REDUCE_SUM}, {"ReduceMean", CLF_REDUCE_MEAN}, {"ReduceMax", CLF_REDUCE_MAX},
    {"ReduceMin", CLF_REDUCE_MIN}, {"ReduceProd", CLF_REDUCE_PROD},
    /* Composites of a pointwise op and a sum, finished in import_reduce. */
    {"ReduceSumSquare", CLF_REDUCE_SUM}, {"ReduceL1", CLF_REDUCE_SUM}, {"ReduceL2", CLF_REDUCE_SUM},
    {"ReduceLogSum", CLF_REDUCE_SUM}, {"ReduceLogSumExp", CLF_REDUCE_SUM},
};

static const char *const not_yet[] = {"Conv", "ConvTranspose", "Einsum", "MatMulInteger", "QLinearMatMul"};


/* Whether t is an f16 or bf16 tensor (its dtype in *dt): an ONNX node that
 * the importer builds from several graph nodes computes those in f32 and
 * rounds its result once, as one node of the storage type would. */
static bool storage_float(importer *I, clf_tensor t, clf_dtype *dt)
{
    return clf_tensor_dtype(I->g, t, dt) == CLF_OK && clf__dtype_is_storage(*dt);
}

static clf_status import_reduce(importer *I, const clf__onnx_node *n, clf_reduce_op op, clf_tensor *out)
{
    clf_tensor x;
    int axes[CLF_MAX_RANK], naxes = 0;
    bool given;
    int64_t keep, noop;
    if (want_inputs(I, n, 1, 2) || input(I, n, 0, &x) || axes_of(I, n, 1, axes, &naxes, &given) ||
        attr_int(I, n, "keepdims", 1, &keep) || attr_int(I, n, "noop_with_empty_axes", 0, &noop))
        return I->status;
    if (naxes == 0 && noop) {
        *out = x; /* ONNX: an empty axes list with noop_with_empty_axes is the identity */
        return 0;
    }
    const char *o = n->op;
    /* A composite reduction of a storage float is one ONNX node: computed
     * in f32 and rounded once (sum of squares past 65504 is no overflow). */
    clf_dtype sdt;
    bool composite = strcmp(o, "ReduceSum") && strcmp(o, "ReduceMax") && strcmp(o, "ReduceMin") &&
                     strcmp(o, "ReduceProd");
    bool storage = composite && storage_float(I, x, &sdt);
    if (storage)
        x = clf_cast(I->g, x, CLF_F32);
    if (!strcmp(o, "ReduceSumSquare") || !strcmp(o, "ReduceL2"))
        x = clf_mul(I->g, x, x);
    else if (!strcmp(o, "ReduceL1"))
        x = clf_abs(I->g, x);
    else if (!strcmp(o, "ReduceLogSumExp"))
        x = clf_exp(I->g, x);
    clf_tensor r = clf_reduce(I->g, op, x, naxes, axes, keep != 0);
    if (!strcmp(o, "ReduceL2"))
        r = clf_sqrt(I->g, r);
    else if (!strcmp(o, "ReduceLogSum") || !strcmp(o, "ReduceLogSumExp"))
        r = clf_log(I->g, r);
    *out = storage ? clf_cast(I->g, r, sdt) : r;
    return 0;
}

/* Gelu with approximate = "tanh" (opset 20; PyTorch's
 * gelu(approximate='tanh')): 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715
 * x^3))), one ONNX node: a storage float's computed in f32 and rounded
 * once. */
static clf_tensor gelu_tanh_of(importer *I, clf_tensor x)
{
    clf_graph *g = I->g;
    clf_dtype sdt;
    const bool storage = storage_float(I, x, &sdt);
    if (storage)
        x = clf_cast(g, x, CLF_F32);
    clf_tensor x3 = clf_mul(g, clf_mul(g, x, x), x);
    clf_tensor inner = clf_mul(g, clf_add(g, x, clf_mul(g, x3, clf_scalar(g, CLF_F32, 0.044715))),
                               clf_scalar(g, CLF_F32, 0.7978845608028654));
    clf_tensor r = clf_mul(g, clf_mul(g, x, clf_scalar(g, CLF_F32, 0.5)),
                           clf_add(g, clf_tanh(g, inner), clf_scalar(g, CLF_F32, 1.0)));
    return storage ? clf_cast(g, r, sdt) : r;
}

static int rank_of(importer *I, clf_tensor t)
{
    int rank = 0;
    clf_tensor_shape(I->g, t, &rank, NULL);
    return rank;
}

static clf_status import_constant(importer *I, const clf__onnx_node *n)
{
    if (n->nattrs != 1)
        return fail(I, n->op_pos, "Constant takes exactly one of value, value_float, value_floats, value_int, "
                    "value_ints");
    const clf__onnx_attr *a = node_attr(I, n, n->attrs[0].name); /* each name is handled below or refused */
    clf__onnx_tensor *T;
    if (!strcmp(a->name, "value")) {
        if (a->kind != CLF__ONNX_ATTR_TENSOR)
            return fail(I, a->pos, "'value' must be a tensor such as float[2] {1, 2}");
        return define(I, n->pos, n->outputs[0], CLF_TENSOR_INVALID, a->t, CLF_ONNX_PRODUCER_CONSTANT);
    }
    bool is_float = !strcmp(a->name, "value_float") || !strcmp(a->name, "value_floats");
    bool is_list = !strcmp(a->name, "value_floats") || !strcmp(a->name, "value_ints");
    if (!is_float && strcmp(a->name, "value_int") && strcmp(a->name, "value_ints"))
        return unsupported(I, a->pos, "attribute '%s' is not supported (use value, value_float(s) or "
                           "value_int(s))", a->name);
    size_t count = is_list ? a->n : 1;
    if (is_list ? (a->kind != (is_float ? CLF__ONNX_ATTR_FLOATS : CLF__ONNX_ATTR_INTS) &&
                   !(is_float && a->kind == CLF__ONNX_ATTR_INTS) && !(a->n == 0 && a->kind == CLF__ONNX_ATTR_INTS))
                : (a->kind != CLF__ONNX_ATTR_INT && !(is_float && a->kind == CLF__ONNX_ATTR_FLOAT)))
        return fail(I, a->pos, "attribute '%s' has the wrong kind of value", a->name);
    char *data = own(I, count * (is_float ? sizeof(float) : sizeof(int64_t)));
    if (!(T = own(I, sizeof *T)) || !data)
        return oom(I);
    T->type = (clf__onnx_type){.elem = is_float ? CLF__ONNX_FLOAT : CLF__ONNX_INT64, .has_shape = true,
                               .rank = is_list, .pos = a->pos};
    T->type.dims[0].value = (int64_t)count;
    T->n = count;
    T->name = n->outputs[0];
    T->data = data;
    for (size_t k = 0; k < count; k++) {
        if (is_float) {
            float f = (float)(is_list ? a->floats[k] : a->f);
            memcpy(data + k * sizeof f, &f, sizeof f);
        } else {
            int64_t v = is_list ? a->ints[k] : a->i;
            memcpy(data + k * sizeof v, &v, sizeof v);
        }
    }
    return define(I, n->pos, n->outputs[0], CLF_TENSOR_INVALID, T, CLF_ONNX_PRODUCER_CONSTANT);
}

/* Shape(x) is known when the graph is built: a constant int64 vector. */
static clf_status import_shape(importer *I, const clf__onnx_node *n, int index)
{
    clf_tensor x;
    int64_t start, end;
    if (want_inputs(I, n, 1, 1) || input(I, n, 0, &x) || attr_int(I, n, "start", 0, &start) ||
        attr_int(I, n, "end", CLF_MAX_RANK + 1, &end))
        return I->status;
    int rank;
    int64_t shape[CLF_MAX_RANK];
    clf_tensor_shape(I->g, x, &rank, shape);
    if (start < 0)
        start += rank;
    if (end < 0)
        end += rank;
    start = start < 0 ? 0 : start > rank ? rank : start;
    end = end < start ? start : end > rank ? rank : end;
    clf__onnx_tensor *T = own(I, sizeof *T);
    int64_t *data = own(I, (size_t)(end - start) * sizeof *data);
    if (!T || !data)
        return oom(I);
    T->type = (clf__onnx_type){.elem = CLF__ONNX_INT64, .has_shape = true, .rank = 1, .pos = n->op_pos};
    T->type.dims[0].value = end - start;
    T->n = (size_t)(end - start);
    T->name = n->outputs[0];
    T->data = data;
    for (int64_t d = start; d < end; d++)
        data[d - start] = shape[d];
    return define(I, n->pos, n->outputs[0], CLF_TENSOR_INVALID, T, index);
}

static clf_status cast_target(importer *I, const clf__onnx_node *n, int64_t to, clf_dtype *dt)
{
    if (to >= INT32_MIN && to <= INT32_MAX && clf__dtype_from_onnx((int)to, dt))
        return 0;
    return unsupported(I, n->op_pos, "to %s is not supported by libclfuse (float, float16, bfloat16, int32, int64, bool)",
                       clf__onnx_elem_name(to < INT32_MIN || to > INT32_MAX ? -1 : (int)to));
}

/* An op of the table's fold forms (Sum, Max, Min, Mean): any number of
 * inputs broadcast together, folded left with binary op, then divided by
 * their count where mean. */
static clf_status import_fold(importer *I, const clf__onnx_node *n, clf_binary_op op, bool mean, clf_tensor *out)
{
    clf_graph *g = I->g;
    clf_tensor a, b;
    if (want_inputs(I, n, 1, 64) || input(I, n, 0, &a))
        return I->status;
    /* Sums of storage floats: one node, so added in f32 and rounded once
     * (Max and Min are exact either way). */
    clf_dtype sdt = CLF_F32;
    bool storage = op == CLF_BINARY_ADD && n->ninputs > 1 && storage_float(I, a, &sdt);
    if (storage)
        a = clf_cast(g, a, CLF_F32);
    for (int k = 1; k < n->ninputs; k++) {
        if (!n->inputs[k][0])
            return fail(I, n->op_pos, "input %d is empty", k + 1);
        if (input(I, n, k, &b))
            return I->status;
        a = clf_binary(g, op, a, storage ? clf_cast(g, b, CLF_F32) : b);
    }
    if (mean && n->ninputs > 1) {
        clf_dtype dt = CLF_F32;
        clf_tensor_dtype(g, a, &dt);
        a = clf_div(g, a, clf_scalar(g, dt, n->ninputs));
    }
    *out = storage ? clf_cast(g, a, sdt) : a;
    return 0;
}

/* Pow: ONNX lets the exponent's type differ from the base's. An integer
 * base raised to a constant whole exponent from 0 to 64 is exact:
 * products by repeated squaring, wrapping as integer products do (numpy's
 * power). Otherwise both are raised in f32; an integer base's result is
 * rounded to the nearest integer and cast back (exact while it fits a
 * float's 24 bits), an f16 or bf16 base's cast back. */
static clf_status import_pow(importer *I, const clf__onnx_node *n, clf_tensor a, clf_tensor b, clf_tensor *out)
{
    clf_graph *g = I->g;
    clf_dtype da = CLF_F32, db = CLF_F32;
    clf_tensor_dtype(g, a, &da);
    clf_tensor_dtype(g, b, &db);
    const value *e = find(I, n->inputs[1]);
    const double ev = e && e->lit && e->lit->n == 1 && e->lit->data ? clf__onnx_tensor_double(e->lit, 0) : -1.0;
    if ((da == CLF_I32 || da == CLF_I64) && ev >= 0.0 && ev <= 64.0 && ev == (double)(int)ev) {
        clf_tensor r = clf_add(g, clf_mul(g, a, clf_scalar(g, da, 0)), clf_scalar(g, da, 1)), sq = a;
        for (int k = (int)ev; k > 0; k >>= 1) {
            if (k & 1)
                r = clf_mul(g, r, sq);
            if (k > 1)
                sq = clf_mul(g, sq, sq);
        }
        *out = r;
        return CLF_OK;
    }
    clf_tensor x = da == CLF_F32 ? a : clf_cast(g, a, CLF_F32);
    clf_tensor y = db == CLF_F32 ? b : clf_cast(g, b, CLF_F32);
    clf_tensor r = clf_pow(g, x, y);
    if (da == CLF_F32)
        *out = r;
    else if (clf__dtype_is_float(da)) /* f16, bf16: rounded once, as their other ops are */
        *out = clf_cast(g, r, da);
    else /* an integer: to the nearest, as pow in float may land just below it */
        *out = clf_cast(g, clf_floor(g, clf_add(g, r, clf_scalar(g, CLF_F32, 0.5))), da);
    return CLF_OK;
}


/* Split along axis into the node's outputs: by the 'split' input (opset
 * 13) or attribute (before), else into num_outputs (opset 18) or
 * noutputs parts, the last one smaller when the extent does not divide. */
static clf_status import_split(importer *I, const clf__onnx_node *n, clf_tensor *out)
{
    clf_graph *g = I->g;
    clf_tensor x;
    int64_t axis, nout;
    const int64_t *sizes = NULL;
    size_t nsizes = 0;
    bool present = false;
    if (want_inputs(I, n, 1, 2) || input(I, n, 0, &x) || attr_axis(I, n, "axis", 0, &axis) ||
        attr_int(I, n, "num_outputs", n->noutputs, &nout))
        return I->status;
    if (has_input(n, 1)) {
        if (const_ints(I, n, 1, "split", &sizes, &nsizes))
            return I->status;
    } else if (attr_ints(I, n, "split", &sizes, &nsizes, &present)) {
        return I->status;
    }
    int rank;
    int64_t shape[CLF_MAX_RANK];
    clf_tensor_shape(g, x, &rank, shape);
    if (axis < 0)
        axis += rank;
    if (axis < 0 || axis >= rank)
        return fail(I, n->op_pos, "axis %lld is out of range for rank %d", (long long)axis, rank);
    if (nout != n->noutputs)
        return fail(I, n->op_pos, "num_outputs is %lld but the node has %d outputs", (long long)nout, n->noutputs);
    int64_t len = shape[axis], at = 0;
    if (sizes && nsizes != (size_t)n->noutputs)
        return fail(I, n->op_pos, "split has %zu sizes for %d outputs", nsizes, n->noutputs);
    int64_t part = (len + nout - 1) / (nout ? nout : 1);
    for (int k = 0; k < n->noutputs; k++) {
        int64_t sz = sizes ? sizes[k] : (k < n->noutputs - 1 ? part : len - part * (nout - 1));
        if (sz < 0 || at + sz > len)
            return fail(I, n->op_pos, "the split sizes do not fit the extent %lld of axis %lld", (long long)len,
                        (long long)axis);
        int64_t st = at, en = at + sz;
        int ax = (int)axis;
        out[k] = clf_slice(g, x, 1, &st, &en, &ax, NULL);
        at += sz;
    }
    if (at != len)
        return fail(I, n->op_pos, "the split sizes sum to %lld, not the extent %lld of axis %lld", (long long)at,
                    (long long)len, (long long)axis);
    return CLF_OK;
}

/* An iota along axis d of a tensor of the given rank: 0 .. len-1 as i64,
 * extent 1 on every other axis. */
static clf_tensor iota(importer *I, int rank, int d, int64_t len)
{
    int64_t shape[CLF_MAX_RANK];
    for (int k = 0; k < rank; k++)
        shape[k] = k == d ? len : 1;
    int64_t *v = own(I, (size_t)(len ? len : 1) * sizeof *v);
    if (!v) {
        oom(I);
        return CLF_TENSOR_INVALID;
    }
    for (int64_t k = 0; k < len; k++)
        v[k] = k;
    return clf_constant(I->g, CLF_I64, rank, shape, v);
}

/* Trilu: the upper (col - row >= k) or lower (col - row <= k) triangle of
 * the last two axes, zero elsewhere: a where over iota constants, so a
 * mask of constants folds and one of data fuses. */
static clf_status import_trilu(importer *I, const clf__onnx_node *n, clf_tensor x, int64_t k, bool upper,
                               clf_tensor *out)
{
    clf_graph *g = I->g;
    int rank;
    int64_t shape[CLF_MAX_RANK];
    clf_dtype dt;
    clf_tensor_shape(g, x, &rank, shape);
    clf_tensor_dtype(g, x, &dt);
    if (rank < 2)
        return fail(I, n->op_pos, "Trilu needs a tensor of rank 2 or more (this one has rank %d)", rank);
    clf_tensor rows = iota(I, 2, 0, shape[rank - 2]), cols = iota(I, 2, 1, shape[rank - 1]);
    if (I->status)
        return I->status;
    clf_tensor diff = clf_sub(g, cols, rows);
    clf_tensor kk = clf_scalar(g, CLF_I64, (double)k);
    clf_tensor keep = upper ? clf_ge(g, diff, kk) : clf_le(g, diff, kk);
    *out = clf_where(g, keep, x, clf_scalar(g, dt, 0));
    return CLF_OK;
}

/* LayerNormalization's Mean and InvStdDev outputs (ONNX: over the
 * normalised axes, kept with extent 1). */
static clf_status layer_norm_stats(importer *I, const clf__onnx_node *n, clf_tensor x, int axis, double eps,
                                   clf_tensor *out)
{
    clf_graph *g = I->g;
    int rank;
    clf_tensor_shape(g, x, &rank, NULL);
    int a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank)
        return fail(I, n->op_pos, "axis %d is out of range for rank %d", axis, rank);
    int axes[CLF_MAX_RANK], naxes = 0;
    for (int d = a; d < rank; d++)
        axes[naxes++] = d;
    clf_tensor mean = clf_reduce_mean(g, x, naxes, axes, true);
    clf_tensor dev = clf_sub(g, x, mean);
    clf_tensor var = clf_reduce_mean(g, clf_mul(g, dev, dev), naxes, axes, true);
    if (n->noutputs > 1)
        out[1] = mean;
    if (n->noutputs > 2)
        out[2] = clf_rsqrt(g, clf_add(g, var, clf_scalar(g, CLF_F32, eps)));
    return CLF_OK;
}

/* Reshape with allowzero = 1 and a 0 in the shape: the result is empty, so
 * x must be; it is the empty tensor of that shape. */
static clf_status reshape_allowzero(importer *I, const clf__onnx_node *n, clf_tensor x, const int64_t *v, size_t count,
                                    clf_tensor *out)
{
    int rank;
    int64_t shape[CLF_MAX_RANK], numel = 1;
    clf_dtype dt;
    clf_tensor_shape(I->g, x, &rank, shape);
    clf_tensor_dtype(I->g, x, &dt);
    for (int d = 0; d < rank; d++)
        numel *= shape[d];
    for (size_t k = 0; k < count; k++)
        if (v[k] < 0)
            return unsupported(I, n->op_pos, "allowzero=1 with both 0 and -1 in the shape");
    if (numel != 0)
        return fail(I, n->op_pos, "allowzero=1 with a 0 in the shape needs an empty input (this one has %lld "
                    "elements)", (long long)numel);
    *out = clf_constant(I->g, dt, (int)count, v, NULL);
    return CLF_OK;
}


/* GatherND with batch_dims 0: each index tuple (the last axis of indices,
 * q long) picks a slice of data; that is a Gather along the first axis of
 * data with its first q axes flattened, at the tuples' linear indices
 * (computed here for literal indices, by index arithmetic otherwise). */
static clf_status import_gather_nd(importer *I, const clf__onnx_node *n, clf_tensor *out)
{
    clf_graph *g = I->g;
    clf_tensor data, idx;
    int64_t bd;
    if (want_inputs(I, n, 2, 2) || input(I, n, 0, &data) || attr_int(I, n, "batch_dims", 0, &bd))
        return I->status;
    if (bd != 0)
        return unsupported(I, n->op_pos, "batch_dims=%lld (only 0 is supported)", (long long)bd);
    int dr, ir;
    int64_t ds[CLF_MAX_RANK], is[CLF_MAX_RANK];
    clf_tensor_shape(g, data, &dr, ds);
    value *iv = find(I, n->inputs[1]);
    if (iv->lit) {
        ir = iv->lit->type.rank;
        for (int d = 0; d < ir; d++)
            is[d] = iv->lit->type.dims[d].value;
    } else {
        if (input(I, n, 1, &idx))
            return I->status;
        clf_tensor_shape(g, idx, &ir, is);
    }
    if (ir < 1)
        return fail(I, n->op_pos, "indices must have rank 1 or more");
    int64_t q = is[ir - 1];
    if (q < 1 || q > dr)
        return fail(I, n->op_pos, "the index tuples have %lld entries; data has rank %d", (long long)q, dr);
    /* data as [prod(ds[:q]), ds[q:]...] */
    int64_t flat[CLF_MAX_RANK], rows = 1, stride[CLF_MAX_RANK];
    for (int d = 0; d < q; d++)
        rows *= ds[d];
    flat[0] = rows;
    for (int d = (int)q; d < dr; d++)
        flat[d - q + 1] = ds[d];
    stride[q - 1] = 1;
    for (int d = (int)q - 1; d-- > 0;)
        stride[d] = stride[d + 1] * ds[d + 1];
    clf_tensor table = clf_reshape(g, data, dr - (int)q + 1, flat);
    int64_t lin_shape[CLF_MAX_RANK];
    for (int d = 0; d < ir - 1; d++)
        lin_shape[d] = is[d];
    clf_tensor lin;
    if (iv->lit) {
        if (!clf__onnx_elem_is_integer(iv->lit->type.elem) || iv->lit->type.elem == CLF__ONNX_BOOL)
            return fail(I, n->op_pos, "indices must be integers");
        size_t count = iv->lit->n / (size_t)q;
        int64_t *v = own(I, (count ? count : 1) * sizeof *v);
        if (!v)
            return oom(I);
        for (size_t t = 0; t < count; t++) {
            int64_t at = 0;
            for (int64_t k = 0; k < q; k++) {
                int64_t e = clf__onnx_tensor_int(iv->lit, t * (size_t)q + (size_t)k);
                if (e < -ds[k] || e >= ds[k])
                    return fail(I, n->op_pos, "index %lld is out of range for axis %lld of extent %lld",
                                (long long)e, (long long)k, (long long)ds[k]);
                at += (e < 0 ? e + ds[k] : e) * stride[k];
            }
            v[t] = at;
        }
        lin = clf_constant(g, CLF_I64, ir - 1, lin_shape, v);
    } else {
        clf_dtype idt;
        clf_tensor_dtype(g, idx, &idt);
        clf_tensor x64 = idt == CLF_I64 ? idx : clf_cast(g, idx, CLF_I64);
        lin = CLF_TENSOR_INVALID;
        for (int64_t k = 0; k < q; k++) {
            int64_t st = k, en = k + 1;
            int ax = ir - 1;
            clf_tensor e = clf_reshape(g, clf_slice(g, x64, 1, &st, &en, &ax, NULL), ir - 1, lin_shape);
            clf_tensor wrapped = clf_where(g, clf_lt(g, e, clf_scalar(g, CLF_I64, 0)),
                                           clf_add(g, e, clf_scalar(g, CLF_I64, (double)ds[k])), e);
            clf_tensor term = clf_mul(g, wrapped, clf_scalar(g, CLF_I64, (double)stride[k]));
            lin = k ? clf_add(g, lin, term) : term;
        }
    }
    *out = clf_gather(g, table, lin, 0);
    return CLF_OK;
}

/* Imports node n (index idx): its outputs go to out[0 .. n->noutputs). */
static clf_status import_attention(importer *I, const clf__onnx_node *n, clf_tensor *out);

static clf_status import_op(importer *I, const clf__onnx_node *n, int idx, clf_tensor *out)
{
    const char *o = n->op;
    clf_graph *g = I->g;
    clf_tensor a, b, c;
    *out = CLF_TENSOR_INVALID;

    /* The pointwise ops of the op table, by their ONNX names: fold forms
     * (any number of inputs), unary and binary ones. */
    const clf__onnx_form *form = NULL;
    clf__op top = clf__op_from_onnx(o, I->opset, &form);
    if (top != CLF__OP_COUNT && form->fold)
        return import_fold(I, n, clf__op_binary(top), form->mean, out);
    if (top != CLF__OP_COUNT && clf__op_is_unary(top)) {
        bool gelu_tanh = false;
        if (top == CLF__OP_GELU) {
            const clf__onnx_attr *ap = node_attr(I, n, "approximate");
            gelu_tanh = ap && ap->kind == CLF__ONNX_ATTR_STRING && !strcmp(ap->s, "tanh");
            if (ap && !gelu_tanh && (ap->kind != CLF__ONNX_ATTR_STRING || strcmp(ap->s, "none")))
                return unsupported(I, ap->pos,
                                   "approximate=\"%s\" is not supported by libclfuse (only \"none\" and \"tanh\")",
                                   ap->kind == CLF__ONNX_ATTR_STRING ? ap->s : "?");
        }
        if (want_inputs(I, n, 1, 1) || input(I, n, 0, &a))
            return I->status;
        if (gelu_tanh) {
            *out = gelu_tanh_of(I, a);
            return 0;
        }
        *out = clf_unary(g, clf__op_unary(top), a);
        return 0;
    }
    if (top != CLF__OP_COUNT && clf__op_is_binary(top)) {
        if (want_inputs(I, n, 2, 2) || input(I, n, 0, &a) || input(I, n, 1, &b))
            return I->status;
        if (top == CLF__OP_POW)
            return import_pow(I, n, a, b, out);
        *out = clf_binary(g, clf__op_binary(top), a, b);
        return 0;
    }
    for (size_t k = 0; k < sizeof reduce_ops / sizeof reduce_ops[0]; k++)
        if (!strcmp(o, reduce_ops[k].onnx))
            return import_reduce(I, n, reduce_ops[k].op, out);
    for (size_t k = 0; k < sizeof not_yet / sizeof not_yet[0]; k++)
        if (!strcmp(o, not_yet[k]))
            return unsupported(I, n->op_pos, "op %s is not supported by libclfuse yet (of the contractions, only "
                               "MatMul and Gemm are)", o);

    if (!strcmp(o, "Identity") || !strcmp(o, "Dropout")) {
        if (want_inputs(I, n, 1, !strcmp(o, "Dropout") ? 3 : 1))
            return I->status;
        if (n->noutputs > 1 && n->outputs[1][0])
            return unsupported(I, n->op_pos, "Dropout's mask output is not supported");
        if (!strcmp(o, "Dropout") && has_input(n, 2)) {
            double training;
            if (const_scalar(I, n, 2, "training_mode", &training))
                return I->status;
            if (training != 0)
                return unsupported(I, n->op_pos, "Dropout with training_mode true (libclfuse runs inference)");
        }
        value *v = find(I, n->inputs[0]);
        if (!clf_tensor_valid(v->t))
            return define(I, n->pos, n->outputs[0], CLF_TENSOR_INVALID, v->lit, idx) ? I->status : 0;
        *out = v->t;
        return 0;
    }
    if (!strcmp(o, "Where")) {
        if (want_inputs(I, n, 3, 3) || input(I, n, 0, &c) || input(I, n, 1, &a) || input(I, n, 2, &b))
            return I->status;
        *out = clf_where(g, c, a, b);
        return 0;
    }
    if (!strcmp(o, "Clip")) {
        double lo = -INFINITY, hi = INFINITY;
        if (want_inputs(I, n, 1, 3) || input(I, n, 0, &a) || attr_float(I, n, "min", lo, &lo) ||
            attr_float(I, n, "max", hi, &hi))
            return I->status;
        /* Bounds known now become the clip's own; bounds computed at run
         * time are a maximum and a minimum. */
        clf_tensor rlo = CLF_TENSOR_INVALID, rhi = CLF_TENSOR_INVALID;
        for (int k = 1; k <= 2; k++) {
            if (!has_input(n, k))
                continue;
            value *bv = find(I, n->inputs[k]);
            if (bv->lit) {
                if (const_scalar(I, n, k, k == 1 ? "min" : "max", k == 1 ? &lo : &hi))
                    return I->status;
            } else if (input(I, n, k, k == 1 ? &rlo : &rhi)) {
                return I->status;
            }
        }
        a = clf_clip(g, a, lo, hi);
        if (clf_tensor_valid(rlo))
            a = clf_maximum(g, a, rlo);
        if (clf_tensor_valid(rhi))
            a = clf_minimum(g, a, rhi);
        *out = a;
        return 0;
    }
    if (!strcmp(o, "Cast") || !strcmp(o, "CastLike")) {
        clf_dtype dt;
        if (!strcmp(o, "CastLike")) {
            if (want_inputs(I, n, 2, 2) || input(I, n, 0, &a) || input(I, n, 1, &b))
                return I->status;
            clf_tensor_dtype(g, b, &dt);
        } else {
            int64_t to;
            if (want_inputs(I, n, 1, 1) || input(I, n, 0, &a) || attr_int(I, n, "to", -1, &to))
                return I->status;
            if (to < 0)
                return fail(I, n->op_pos, "attribute 'to' is required");
            if (cast_target(I, n, to, &dt))
                return I->status;
        }
        *out = clf_cast(g, a, dt);
        return 0;
    }
    if (!strcmp(o, "Reshape") || !strcmp(o, "Expand")) {
        const int64_t *v;
        size_t count;
        int64_t allowzero = 0; /* Reshape's (Expand has none) */
        if (want_inputs(I, n, 2, 2) || input(I, n, 0, &a) || const_ints(I, n, 1, "shape", &v, &count) ||
            (!strcmp(o, "Reshape") && attr_int(I, n, "allowzero", 0, &allowzero)))
            return I->status;
        if (count > CLF_MAX_RANK)
            return unsupported(I, n->op_pos, "a shape of rank %zu is more than libclfuse's %d", count,
                               CLF_MAX_RANK);
        bool zero_extent = false;
        for (size_t k = 0; k < count; k++)
            zero_extent = zero_extent || (allowzero && v[k] == 0);
        if (o[0] == 'R' && zero_extent)
            return reshape_allowzero(I, n, a, v, count, out);
        *out = o[0] == 'R' ? clf_reshape(g, a, (int)count, v) : clf_expand(g, a, (int)count, v);
        return 0;
    }
    if (!strcmp(o, "Transpose")) {
        const int64_t *v;
        size_t count;
        bool present;
        int perm[CLF_MAX_RANK];
        if (want_inputs(I, n, 1, 1) || input(I, n, 0, &a) || attr_ints(I, n, "perm", &v, &count, &present) ||
            to_axes(I, n, v, count, perm))
            return I->status;
        *out = clf_transpose(g, a, (int)count, present ? perm : NULL);
        return 0;
    }
    if (!strcmp(o, "Squeeze") || !strcmp(o, "Unsqueeze")) {
        int axes[CLF_MAX_RANK], naxes = 0;
        bool given;
        if (want_inputs(I, n, 1, 2) || input(I, n, 0, &a) || axes_of(I, n, 1, axes, &naxes, &given))
            return I->status;
        if (o[0] == 'U' && !given)
            return fail(I, n->op_pos, "axes are required");
        *out = o[0] == 'S' ? clf_squeeze(g, a, naxes, axes) : clf_unsqueeze(g, a, naxes, axes);
        return 0;
    }
    if (!strcmp(o, "Slice")) {
        const int64_t *st = NULL, *en = NULL, *ax = NULL, *sp = NULL;
        size_t ns = 0, ne = 0, na = 0, np = 0;
        bool p1, p2, p3;
        int axes[CLF_MAX_RANK];
        if (want_inputs(I, n, 1, 5) || input(I, n, 0, &a))
            return I->status;
        if (n->ninputs >= 3) { /* opset 10+: starts, ends, axes, steps as inputs */
            if (const_ints(I, n, 1, "starts", &st, &ns) || const_ints(I, n, 2, "ends", &en, &ne) ||
                (has_input(n, 3) && const_ints(I, n, 3, "axes", &ax, &na)) ||
                (has_input(n, 4) && const_ints(I, n, 4, "steps", &sp, &np)))
                return I->status;
        } else if (n->ninputs == 1) { /* opset 1: attributes */
            if (attr_ints(I, n, "starts", &st, &ns, &p1) || attr_ints(I, n, "ends", &en, &ne, &p2) ||
                attr_ints(I, n, "axes", &ax, &na, &p3))
                return I->status;
        } else {
            return fail(I, n->op_pos, "Slice takes data, starts and ends (and optionally axes and steps)");
        }
        if (ns != ne || (ax && na != ns) || (sp && np != ns))
            return fail(I, n->op_pos, "starts, ends, axes and steps must have the same length");
        if (ax && to_axes(I, n, ax, na, axes))
            return I->status;
        if (ns > CLF_MAX_RANK)
            return unsupported(I, n->op_pos, "more than %d axes", CLF_MAX_RANK);
        *out = clf_slice(g, a, (int)ns, st, en, ax ? axes : NULL, sp);
        return 0;
    }
    if (!strcmp(o, "ArgMax") || !strcmp(o, "ArgMin")) {
        int64_t axis, keep, last;
        if (want_inputs(I, n, 1, 1) || input(I, n, 0, &a) || attr_axis(I, n, "axis", 0, &axis) ||
            attr_int(I, n, "keepdims", 1, &keep) || attr_int(I, n, "select_last_index", 0, &last))
            return I->status;
        /* ONNX gives int64 indices; libclfuse's arg reductions give i32. */
        *out = clf_cast(g, (o[3] == 'M' && o[4] == 'a' ? clf_argmax : clf_argmin)(g, a, (int)axis, keep != 0, last != 0),
                        CLF_I64);
        return 0;
    }
    if (!strcmp(o, "Softmax") || !strcmp(o, "LogSoftmax")) {
        int64_t axis;
        if (want_inputs(I, n, 1, 1) || input(I, n, 0, &a) ||
            attr_axis(I, n, "axis", I->opset >= 13 ? -1 : 1, &axis))
            return I->status;
        int rank = rank_of(I, a);
        if (I->opset < 13 && (axis < 0 ? axis + rank : axis) != rank - 1)
            return unsupported(I, n->op_pos, "%s before opset 13 flattens the axes from %lld on; only the last "
                               "axis is supported there (use opset 13+)", o, (long long)axis);
        *out = (o[0] == 'S' ? clf_softmax : clf_log_softmax)(g, a, (int)axis);
        return 0;
    }
    if (!strcmp(o, "LayerNormalization") || !strcmp(o, "RMSNormalization")) {
        bool ln = o[0] == 'L';
        int64_t axis;
        double eps;
        if (want_inputs(I, n, 1, ln ? 3 : 2) || input(I, n, 0, &a) || attr_axis(I, n, "axis", -1, &axis) ||
            attr_float(I, n, "epsilon", 1e-5, &eps))
            return I->status;
        if (!ln)
            for (int k = 1; k < n->noutputs; k++)
                if (n->outputs[k][0])
                    return unsupported(I, n->op_pos, "RMSNormalization has one output");
        b = c = CLF_TENSOR_INVALID;
        if ((has_input(n, 1) && input(I, n, 1, &b)) || (has_input(n, 2) && input(I, n, 2, &c)))
            return I->status;
        *out = ln ? clf_layer_norm(g, a, (int)axis, eps, b, c) : clf_rms_norm(g, a, (int)axis, eps, b);
        if (ln && n->noutputs > 1)
            return layer_norm_stats(I, n, a, (int)axis, eps, out);
        return 0;
    }
    if (!strcmp(o, "Gather") || !strcmp(o, "GatherElements")) {
        int64_t axis;
        if (want_inputs(I, n, 2, 2) || input(I, n, 0, &a) || input(I, n, 1, &b) || attr_axis(I, n, "axis", 0, &axis))
            return I->status;
        *out = (o[6] == 'E' ? clf_gather_elements : clf_gather)(g, a, b, (int)axis);
        return 0;
    }
    if (!strcmp(o, "GatherND"))
        return import_gather_nd(I, n, out);
    if (!strcmp(o, "Concat")) {
        int64_t axis;
        if (want_inputs(I, n, 1, 1 << 16) || attr_axis(I, n, "axis", INT64_MIN, &axis))
            return I->status;
        if (axis == INT64_MIN)
            return fail(I, n->op_pos, "attribute 'axis' is required");
        clf_tensor *xs = own(I, (size_t)n->ninputs * sizeof *xs);
        if (!xs)
            return oom(I);
        int m = 0;
        for (int k = 0; k < n->ninputs; k++) {
            if (!n->inputs[k][0])
                return fail(I, n->op_pos, "input %d is empty", k + 1);
            if (input(I, n, k, &xs[m]))
                return I->status;
            /* An input that adds nothing along the axis is left out
             * (exporters write shape-[0] vectors into concats of shapes). */
            int64_t shp[CLF_MAX_RANK];
            int r = 0;
            clf_tensor_shape(g, xs[m], &r, shp);
            int64_t ax = axis < 0 ? axis + r : axis;
            bool adds = ax >= 0 && ax < r && shp[ax] > 0;
            if (adds || n->ninputs == 1 || m == 0)
                m++;
        }
        *out = clf_concat(g, m, xs, (int)axis);
        return 0;
    }
    if (!strcmp(o, "Split"))
        return import_split(I, n, out);
    if (!strcmp(o, "Attention") && I->opset >= 23)
        return import_attention(I, n, out);
    if (!strcmp(o, "Flatten")) {
        int64_t axis;
        if (want_inputs(I, n, 1, 1) || input(I, n, 0, &a) || attr_axis(I, n, "axis", 1, &axis))
            return I->status;
        int rank;
        int64_t shape[CLF_MAX_RANK];
        clf_tensor_shape(g, a, &rank, shape);
        if (axis < 0)
            axis += rank;
        if (axis < 0 || axis > rank)
            return fail(I, n->op_pos, "axis %lld is out of range for rank %d", (long long)axis, rank);
        int64_t two[2] = {1, 1};
        for (int d = 0; d < rank; d++)
            two[d < axis ? 0 : 1] *= shape[d];
        *out = clf_reshape(g, a, 2, two);
        return 0;
    }
    if (!strcmp(o, "Trilu")) {
        int64_t upper;
        double kd = 0;
        if (want_inputs(I, n, 1, 2) || input(I, n, 0, &a) || attr_int(I, n, "upper", 1, &upper))
            return I->status;
        if (has_input(n, 1) && const_scalar(I, n, 1, "k", &kd))
            return I->status;
        return import_trilu(I, n, a, (int64_t)kd, upper != 0, out);
    }
    if (!strcmp(o, "MatMul")) {
        if (want_inputs(I, n, 2, 2) || input(I, n, 0, &a) || input(I, n, 1, &b))
            return I->status;
        *out = clf_matmul(g, a, b);
        return 0;
    }
    if (!strcmp(o, "Gemm")) {
        int64_t ta, tb;
        double alpha, beta;
        if (want_inputs(I, n, 2, 3) || input(I, n, 0, &a) || input(I, n, 1, &b) ||
            attr_float(I, n, "alpha", 1.0, &alpha) || attr_float(I, n, "beta", 1.0, &beta) ||
            attr_int(I, n, "transA", 0, &ta) || attr_int(I, n, "transB", 0, &tb))
            return I->status;
        c = CLF_TENSOR_INVALID;
        if (has_input(n, 2) && input(I, n, 2, &c))
            return I->status;
        *out = clf_gemm(g, a, b, c, alpha, beta, ta != 0, tb != 0);
        return 0;
    }
    /* A table op whose forms start after (or end before) the model's opset. */
    const clf__onnx_form *other = NULL;
    if (clf__op_from_onnx(o, -1, &other) != CLF__OP_COUNT) {
        if (other->until)
            return unsupported(I, n->op_pos, "op %s is read at opsets %d to %d; the model imports opset %lld", o,
                               other->since, other->until, (long long)I->opset);
        return unsupported(I, n->op_pos, "op %s is read from opset %d on; the model imports opset %lld", o,
                           other->since, (long long)I->opset);
    }
    return unsupported(I, n->op_pos, "op %s is not supported by libclfuse", o);
}

/* ---- Inputs and symbols ----------------------------------------------------- */

static const clf__onnx_value *model_input(const clf__onnx_model *m, const char *name)
{
    for (int i = 0; i < m->ninputs; i++)
        if (!m->inputs[i].init && !strcmp(m->inputs[i].name, name))
            return &m->inputs[i];
    return NULL;
}

static const char *origin_of(const clf_onnx_input_shape *gv) { return gv->origin ? gv->origin : "as given"; }

static clf_status bind_given(importer *I, const clf_onnx_input_shape *gv)
{
    char shp[128], ty[160], line[32];
    if (!gv->name)
        return fail_status(I, CLF_ERR_INVALID_ARGUMENT, nowhere, "clf_onnx_params.inputs: an input shape has no name");
    if (gv->rank < 0 || gv->rank > CLF_MAX_RANK || (unsigned)gv->dtype >= CLF_DTYPE_COUNT)
        return fail_status(I, CLF_ERR_INVALID_ARGUMENT, nowhere, "the shape given for input '%s' has rank %d or "
                           "dtype %d (rank 0 to %d, a clf_dtype)", gv->name, gv->rank, (int)gv->dtype, CLF_MAX_RANK);
    for (int d = 0; d < gv->rank; d++)
        if (gv->shape[d] < 0)
            return fail_status(I, CLF_ERR_INVALID_ARGUMENT, nowhere, "the shape given for input '%s' has a "
                               "negative extent", gv->name);
    const clf__onnx_value *v = model_input(I->m, gv->name);
    if (!v) {
        char names[256] = "";
        size_t len = 0;
        for (int i = 0; i < I->m->ninputs && len < sizeof names; i++)
            if (!I->m->inputs[i].init)
                len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "",
                                        I->m->inputs[i].name);
        return fail_status(I, CLF_ERR_NOT_FOUND, nowhere, "the graph has no input named '%s' (its inputs: %s)",
                           gv->name, len ? names : "none");
    }
    clf_dtype want;
    if (elem_dtype(v->type.elem, &want) && want != gv->dtype)
        return fail_status(I, CLF_ERR_DTYPE, nowhere, "input '%s' (%s) holds %s but the graph declares %s%s",
                           gv->name, origin_of(gv), dtype_onnx_name(gv->dtype), type_str(&v->type, ty, sizeof ty),
                           at_line(&v->type, line, sizeof line));
    if (!v->type.has_shape)
        return CLF_OK;
    bool ok = v->type.rank == gv->rank;
    for (int d = 0; ok && d < gv->rank; d++) {
        const clf__onnx_dim *D = &v->type.dims[d];
        if (!D->param) {
            ok = D->value == gv->shape[d];
        } else if (strcmp(D->param, "?")) {
            symbol *s = find_sym(I, D->param);
            if (s && s->value != gv->shape[d])
                return fail_status(I, CLF_ERR_SHAPE, nowhere, "input '%s' (%s) has shape %s, so %s = %lld, but "
                                   "%s gave %s = %lld", gv->name, origin_of(gv),
                                   shape_str(gv->rank, gv->shape, shp, sizeof shp), D->param,
                                   (long long)gv->shape[d], s->origin, D->param, (long long)s->value);
            if (!s && add_sym(I, D->param, gv->shape[d], origin_of(gv)))
                return I->status;
        }
    }
    if (!ok)
        return fail_status(I, CLF_ERR_SHAPE, nowhere, "input '%s' (%s) has shape %s but the graph declares %s%s",
                           gv->name, origin_of(gv), shape_str(gv->rank, gv->shape, shp, sizeof shp),
                           type_str(&v->type, ty, sizeof ty), at_line(&v->type, line, sizeof line));
    return CLF_OK;
}

/* The KV cache entry whose past (present: false) or present is name, or
 * -1. */
static long kv_of(const importer *I, const char *name, bool present)
{
    for (size_t i = 0; i < I->nkv; i++)
        if (!strcmp(present ? I->kv[i].present : I->kv[i].past, name))
            return (long)i;
    return -1;
}

static const clf__onnx_value *model_output(const clf__onnx_model *m, const char *name)
{
    for (int i = 0; i < m->noutputs; i++)
        if (!strcmp(m->outputs[i].name, name))
            return &m->outputs[i];
    return NULL;
}

/* Declares KV cache k's past input (ONNX value v, rank and shape at this
 * import) with its capacity on the sequence axis, the axis where the
 * declarations of past and present differ, and defines v as its first
 * past-length positions. */
static clf_status make_kv_input(importer *I, size_t k, const clf__onnx_value *v, clf_dtype dt, int rank,
                                const int64_t *shape)
{
    const clf_onnx_kv_cache *C = &I->kv[k];
    const clf__onnx_value *o = model_output(I->m, C->present);
    if (!o)
        return fail_status(I, CLF_ERR_INVALID_ARGUMENT, v->pos, "KV cache '%s': the model has no output '%s'", C->past,
                           C->present);
    if (!v->type.has_shape || !o->type.has_shape || o->type.rank != rank)
        return fail_status(I, CLF_ERR_SHAPE, v->pos,
                           "KV cache '%s': '%s' and '%s' must be declared with shapes of one rank", C->past, C->past,
                           C->present);
    int axis = -1;
    for (int d = 0; d < rank; d++) {
        const clf__onnx_dim *a = &v->type.dims[d], *b = &o->type.dims[d];
        bool same = a->param && b->param ? !strcmp(a->param, b->param) : !a->param && !b->param && a->value == b->value;
        if (!same) {
            if (axis >= 0)
                return fail_status(I, CLF_ERR_SHAPE, v->pos,
                                   "KV cache '%s': '%s' and '%s' differ on axes %d and %d; the sequence axis must be "
                                   "the only one",
                                   C->past, C->past, C->present, axis, d);
            axis = d;
        }
    }
    if (axis < 0)
        return fail_status(I, CLF_ERR_SHAPE, v->pos,
                           "KV cache '%s': '%s' and '%s' are declared alike: no sequence axis",
                           C->past, C->past, C->present);
    if (C->capacity < 1 || shape[axis] > C->capacity)
        return fail_status(I, CLF_ERR_SHAPE, v->pos,
                           "KV cache '%s': its past of %lld positions exceeds its capacity %lld",
                           C->past, (long long)shape[axis], (long long)C->capacity);
    int64_t storage[CLF_MAX_RANK];
    memcpy(storage, shape, (size_t)rank * sizeof *storage);
    storage[axis] = C->capacity;
    clf_tensor t = clf_input(I->g, v->name, dt, rank, storage);
    clf_tensor past = clf_slice(I->g, t, 1, (int64_t[]){0}, &shape[axis], &axis, NULL);
    if (check_graph(I, NULL))
        return I->status;
    I->kvs[k] = (struct kv_state){t, past, CLF_TENSOR_INVALID, axis, shape[axis]};
    return define(I, v->pos, v->name, past, NULL, CLF_ONNX_PRODUCER_INPUT);
}

/* KV cache k's present made of its past (the tensor first, which must be
 * the past itself) and new entries x along axis: the new positions written
 * into the cache in place (clf_cache_write); *view is the cache's first
 * past + new positions. */
static clf_status kv_write(importer *I, const clf__onnx_node *n, size_t k, clf_tensor first, clf_tensor x,
                           int64_t axis, clf_tensor *view)
{
    struct kv_state *K = &I->kvs[k];
    const clf_onnx_kv_cache *C = &I->kv[k];
    if (!clf_tensor_valid(K->storage) || first.graph != K->past.graph || first.node != K->past.node)
        return unsupported(I, n->op_pos, "KV cache '%s': present '%s' must be made of '%s' and the new entries",
                           C->past, C->present, C->past);
    int rank = 0, srank = 0;
    int64_t shape[CLF_MAX_RANK] = {0}, sshape[CLF_MAX_RANK];
    clf_tensor_shape(I->g, x, &rank, shape);
    clf_tensor_shape(I->g, K->storage, &srank, sshape);
    if (rank != srank)
        return fail_status(I, CLF_ERR_SHAPE, n->op_pos, "KV cache '%s': the new entries have rank %d, the cache %d",
                           C->past, rank, srank);
    if ((axis < 0 ? axis + rank : axis) != K->axis)
        return unsupported(I, n->op_pos, "KV cache '%s': the %s is along axis %lld, not the sequence axis %d",
                           C->past, n->op, (long long)axis, K->axis);
    int64_t len = K->past_len + shape[K->axis];
    if (len > C->capacity)
        return fail_status(I, CLF_ERR_SHAPE, n->op_pos,
                           "KV cache '%s': %lld past and %lld new positions exceed its capacity %lld", C->past,
                           (long long)K->past_len, (long long)shape[K->axis], (long long)C->capacity);
    K->write = clf_cache_write(I->g, K->storage, x, K->axis, len);
    *view = clf_slice(I->g, K->write, 1, (int64_t[]){0}, &len, &K->axis, NULL);
    return check_graph(I, n);
}

/* Concat(past, new) making a KV cache's present (kv_write). *done: the
 * node was one. */
static clf_status import_kv_concat(importer *I, const clf__onnx_node *n, bool *done)
{
    *done = false;
    long k = n->noutputs >= 1 ? kv_of(I, n->outputs[0], true) : -1;
    if (k < 0 || strcmp(n->op, "Concat"))
        return CLF_OK;
    const clf_onnx_kv_cache *C = &I->kv[k];
    int64_t axis = 0;
    if (attr_axis(I, n, "axis", INT64_MAX, &axis))
        return I->status;
    clf_tensor x, view;
    /* The first input is the past itself (or an Identity or one-input
     * Concat of it, as the TorchScript exporter writes). */
    const value *first = n->ninputs == 2 ? find(I, n->inputs[0]) : NULL;
    if (!first)
        return unsupported(I, n->op_pos, "KV cache '%s': present '%s' must be Concat('%s', new entries)", C->past,
                           C->present, C->past);
    if (input(I, n, 1, &x) || kv_write(I, n, (size_t)k, first->t, x, axis, &view))
        return I->status;
    *done = true;
    return define(I, n->pos, n->outputs[0], view, NULL, I->node);
}

/* ONNX Attention (opset 23; 24 adds nonpad_kv_seqlen, refused):
 * softmax(Q Kᵀ scale + mask) V through clf_attention, which the planner
 * fuses into one kernel.
 * - Q, K, V are [B, H, S, D], or [B, S, H·D] with q_num_heads and
 *   kv_num_heads (split into heads here, the output merged back).
 * - past_key/past_value are concatenated before K and V along the
 *   sequence (present_key/present_value, BNSH); where the load's
 *   kv_caches name the presents, the new entries are written into the
 *   cache in place (kv_write), as for exporters' Concat.
 * - GQA/MQA (q heads a multiple of the KV heads): query head h reads KV
 *   head h / (Hq / Hkv), by broadcasting a head axis of 1, never a copy.
 * - attn_mask: bool (true attends) or Q's dtype (added), broadcast to
 *   [B, Hq, Sq, Sk]; is_causal aligns as ONNX does (query i sees keys up
 *   to i + the past's length), which is clf_attention's alignment where
 *   the new keys are as many as the queries.
 * - A mask narrower than the keys is padded as ONNX pads it (the keys
 *   past it masked: false, or -inf added).
 * - is_causal with other than one new key a query: the causal mask ONNX
 *   aligns on the past, built as a constant and joined to the mask.
 * - Refused: softcap, the qk_matmul_output output. A row that sees no key
 *   gives NaN (opset 23's softmax of -inf; later opsets define 0). */
static clf_status import_attention(importer *I, const clf__onnx_node *n, clf_tensor *out)
{
    clf_graph *g = I->g;
    clf_tensor q, k, v, mask = CLF_TENSOR_INVALID, pk = CLF_TENSOR_INVALID, pv = CLF_TENSOR_INVALID;
    int64_t causal, qh, kvh, qk_mode, precision;
    double scale, softcap;
    if (want_inputs(I, n, 3, 7) || input(I, n, 0, &q) || input(I, n, 1, &k) || input(I, n, 2, &v) ||
        attr_int(I, n, "is_causal", 0, &causal) || attr_int(I, n, "q_num_heads", 0, &qh) ||
        attr_int(I, n, "kv_num_heads", 0, &kvh) || attr_int(I, n, "qk_matmul_output_mode", 0, &qk_mode) ||
        attr_int(I, n, "softmax_precision", 0, &precision) || attr_float(I, n, "scale", 0.0, &scale) ||
        attr_float(I, n, "softcap", 0.0, &softcap))
        return I->status;
    (void)precision; /* the softmax is computed in f32 (or wider) whatever it asks */
    (void)qk_mode;   /* it concerns the qk_matmul_output output only, refused below */
    if (softcap != 0.0)
        return unsupported(I, n->op_pos, "Attention with softcap is not supported by libclfuse");
    if (n->noutputs > 3 && n->outputs[3][0])
        return unsupported(I, n->op_pos, "Attention's qk_matmul_output output is not supported by libclfuse "
                           "(the scores are never stored)");
    if (has_input(n, 6))
        return unsupported(I, n->op_pos, "Attention's nonpad_kv_seqlen input is not supported by libclfuse");
    if (has_input(n, 4) != has_input(n, 5))
        return fail(I, n->op_pos, "past_key and past_value must be given together");
    if ((has_input(n, 3) && input(I, n, 3, &mask)) || (has_input(n, 4) && input(I, n, 4, &pk)) ||
        (has_input(n, 5) && input(I, n, 5, &pv)))
        return I->status;
    if (scale != 0.0 && !(isfinite(scale) && scale > 0.0))
        return fail(I, n->op_pos, "scale %g must be a positive finite number", scale);
    int rq = rank_of(I, q);
    if (rq != rank_of(I, k) || rq != rank_of(I, v) || (rq != 3 && rq != 4))
        return fail(I, n->op_pos, "Q, K and V must all be 3-D ([B, S, H*D]) or all 4-D ([B, H, S, D]); they have "
                    "ranks %d, %d and %d", rq, rank_of(I, k), rank_of(I, v));
    int64_t sq[CLF_MAX_RANK], sk[CLF_MAX_RANK], sv[CLF_MAX_RANK];
    int r;
    clf_tensor_shape(g, q, &r, sq);
    clf_tensor_shape(g, k, &r, sk);
    clf_tensor_shape(g, v, &r, sv);
    static const int to_heads[4] = {0, 2, 1, 3};
    if (rq == 3) {
        if (qh < 1 || kvh < 1)
            return fail(I, n->op_pos, "3-D Q, K and V need the attributes q_num_heads and kv_num_heads");
        if (sq[2] % qh || sk[2] % kvh || sv[2] % kvh)
            return fail(I, n->op_pos, "hidden sizes %lld, %lld and %lld do not split into %lld query and %lld KV "
                        "heads", (long long)sq[2], (long long)sk[2], (long long)sv[2], (long long)qh, (long long)kvh);
        q = clf_transpose(g, clf_reshape(g, q, 4, (int64_t[]){sq[0], sq[1], qh, sq[2] / qh}), 4, to_heads);
        k = clf_transpose(g, clf_reshape(g, k, 4, (int64_t[]){sk[0], sk[1], kvh, sk[2] / kvh}), 4, to_heads);
        v = clf_transpose(g, clf_reshape(g, v, 4, (int64_t[]){sv[0], sv[1], kvh, sv[2] / kvh}), 4, to_heads);
        if (check_graph(I, n))
            return I->status;
        clf_tensor_shape(g, q, &r, sq);
        clf_tensor_shape(g, k, &r, sk);
        clf_tensor_shape(g, v, &r, sv);
    }
    const int64_t s_new = sk[2];
    /* The presents: the past and the new entries along the sequence. */
    clf_tensor present[2] = {k, v};
    const clf_tensor past[2] = {pk, pv};
    for (int c = 0; c < 2; c++) {
        if (!clf_tensor_valid(past[c]))
            continue;
        long kvi = n->noutputs > 1 + c && n->outputs[1 + c][0] ? kv_of(I, n->outputs[1 + c], true) : -1;
        if (kvi >= 0) {
            if (kv_write(I, n, (size_t)kvi, past[c], present[c], 2, &present[c]))
                return I->status;
        } else {
            present[c] = clf_concat(g, 2, (clf_tensor[]){past[c], present[c]}, 2);
        }
    }
    k = present[0];
    v = present[1];
    if (check_graph(I, n))
        return I->status;
    clf_tensor_shape(g, k, &r, sk);
    clf_tensor_shape(g, v, &r, sv);
    const int64_t hq = sq[1], hkv = sk[1];
    if (sv[1] != hkv || hkv < 1 || hq % hkv)
        return fail(I, n->op_pos, "%lld query heads cannot share %lld key and %lld value heads", (long long)hq,
                    (long long)hkv, (long long)sv[1]);
    int rm = 0;
    int64_t sm[CLF_MAX_RANK];
    clf_dtype mdt = CLF_BOOL;
    if (clf_tensor_valid(mask)) {
        clf_tensor_shape(g, mask, &rm, sm);
        clf_tensor_dtype(g, mask, &mdt);
        if (rm < 1 || rm > 4)
            return fail(I, n->op_pos, "attn_mask has rank %d; it broadcasts to [B, H, S, T] (rank 1 to 4)", rm);
        if (sm[rm - 1] > sk[2])
            return fail(I, n->op_pos, "attn_mask's last axis (%lld) is longer than the keys (%lld)",
                        (long long)sm[rm - 1], (long long)sk[2]);
        if (sm[rm - 1] < sk[2]) {
            /* ONNX pads a narrower mask: the keys past it are masked
             * (false, or -inf added). */
            int64_t ps[CLF_MAX_RANK];
            memcpy(ps, sm, (size_t)rm * sizeof *ps);
            ps[rm - 1] = sk[2] - sm[rm - 1];
            clf_tensor fill = clf_expand(g, clf_scalar(g, mdt, mdt == CLF_BOOL ? 0.0 : -INFINITY), rm, ps);
            mask = clf_concat(g, 2, (clf_tensor[]){mask, fill}, rm - 1);
            if (check_graph(I, n))
                return I->status;
            sm[rm - 1] = sk[2];
        }
    }
    /* is_causal with as many new keys as queries is clf_attention's causal
     * flag (query i sees keys up to i + the past's length). Otherwise ONNX
     * still aligns on the past: a bool constant [Sq, Sk] that keeps key j
     * for query i where j <= i + past, joined to the mask: ANDed with a
     * bool one, -inf where it hides for an additive one. */
    bool causal_flag = causal != 0;
    if (causal && s_new != sq[2]) {
        const int64_t nq = sq[2], nk = sk[2], npast = nk - s_new;
        if (nq > (int64_t)1 << 15 || nk > (int64_t)1 << 20 || nq * nk > (int64_t)1 << 26)
            return unsupported(I, n->op_pos, "Attention with is_causal, %lld queries and %lld new keys: the causal "
                               "mask [%lld, %lld] is too large for libclfuse to build", (long long)nq,
                               (long long)s_new, (long long)nq, (long long)nk);
        uint8_t *keep = clf__malloc(nq * nk > 0 ? (size_t)(nq * nk) : 1);
        if (!keep)
            return fail_status(I, CLF_ERR_OUT_OF_MEMORY, n->op_pos, "out of memory for the causal mask");
        for (int64_t i = 0; i < nq; i++)
            for (int64_t j = 0; j < nk; j++)
                keep[i * nk + j] = j <= i + npast;
        clf_tensor c = clf_constant(g, CLF_BOOL, 2, (int64_t[]){nq, nk}, keep);
        clf__free(keep);
        if (!clf_tensor_valid(mask)) {
            mask = c;
            rm = 2;
            sm[0] = nq;
            sm[1] = nk;
        } else {
            mask = mdt == CLF_BOOL ? clf_logical_and(g, mask, c)
                                   : clf_where(g, c, mask, clf_scalar(g, mdt, -INFINITY));
            if (check_graph(I, n))
                return I->status;
            clf_tensor_shape(g, mask, &rm, sm);
        }
        causal_flag = false;
    }
    const int64_t reps = hq / hkv;
    if (reps > 1) {
        /* [B, Hkv, reps, S, D] queries against [B, Hkv, 1, S, D] keys and
         * values: query head h = j * reps + i reads KV head j. */
        q = clf_reshape(g, q, 5, (int64_t[]){sq[0], hkv, reps, sq[2], sq[3]});
        k = clf_reshape(g, k, 5, (int64_t[]){sk[0], hkv, 1, sk[2], sk[3]});
        v = clf_reshape(g, v, 5, (int64_t[]){sv[0], hkv, 1, sv[2], sv[3]});
        if (clf_tensor_valid(mask)) {
            /* The mask's head axis (third from the end) splits as the
             * queries' did; one of 1 stays 1 on both. */
            if (rm >= 3) {
                int64_t m5[5], h = sm[rm - 3];
                int o = 0;
                if (rm == 4)
                    m5[o++] = sm[0];
                m5[o++] = h == 1 ? 1 : hkv;
                m5[o++] = h == 1 ? 1 : reps;
                m5[o++] = sm[rm - 2];
                m5[o++] = sm[rm - 1];
                mask = clf_reshape(g, mask, o, m5);
            }
        }
    }
    /* [B, Hq, Sq, Dv] (or [B, Hkv, reps, Sq, Dv]), back to the queries'
     * layout. */
    clf_tensor y = clf_attention(g, q, k, v, mask, scale, causal_flag);
    if (check_graph(I, n))
        return I->status;
    int ry;
    int64_t sy[CLF_MAX_RANK];
    clf_tensor_shape(g, y, &ry, sy);
    const int64_t b = sy[0], s_q = sy[ry - 2], dv = sy[ry - 1];
    if (reps > 1)
        y = clf_reshape(g, y, 4, (int64_t[]){b, hq, s_q, dv});
    if (rq == 3)
        y = clf_reshape(g, clf_transpose(g, y, 4, to_heads), 3, (int64_t[]){b, s_q, hq * dv});
    out[0] = y;
    if (n->noutputs > 1)
        out[1] = present[0];
    if (n->noutputs > 2)
        out[2] = present[1];
    return 0;
}

static clf_status make_input(importer *I, const clf__onnx_value *v, const clf_onnx_params *p)
{
    clf_dtype dt;
    char ty[160];
    if (!elem_dtype(v->type.elem, &dt))
        return unsupported(I, v->type.pos, "input '%s' is %s; libclfuse takes float, float16, bfloat16, int32, int64 and bool inputs",
                           v->name, clf__onnx_elem_name(v->type.elem));
    const clf_onnx_input_shape *gv = NULL;
    for (size_t i = 0; i < p->ninputs; i++)
        if (!strcmp(p->inputs[i].name, v->name))
            gv = &p->inputs[i];
    int64_t shape[CLF_MAX_RANK];
    int rank;
    if (!v->type.has_shape) {
        if (!gv)
            return fail_status(I, CLF_ERR_SHAPE, v->type.pos, "input '%s' has no shape (%s): give its shape",
                               v->name, type_str(&v->type, ty, sizeof ty));
        rank = gv->rank;
        memcpy(shape, gv->shape, sizeof shape);
    } else {
        rank = v->type.rank;
        if (rank > CLF_MAX_RANK)
            return unsupported(I, v->type.pos, "input '%s' has rank %d, more than libclfuse's %d", v->name, rank,
                               CLF_MAX_RANK);
        for (int d = 0; d < rank; d++) {
            const clf__onnx_dim *D = &v->type.dims[d];
            if (!D->param) {
                shape[d] = D->value;
            } else if (gv) {
                shape[d] = gv->shape[d];
            } else if (!strcmp(D->param, "?")) {
                return fail_status(I, CLF_ERR_SHAPE, v->type.pos, "dimension %d of input '%s' is unknown ('?'): "
                                   "give the input's shape", d, v->name);
            } else {
                symbol *s = find_sym(I, D->param);
                if (!s)
                    return fail_status(I, CLF_ERR_SHAPE, v->type.pos, "dimension '%s' of input '%s' has no size: "
                                       "give the input's shape or a size for %s", D->param, v->name, D->param);
                shape[d] = s->value;
            }
        }
    }
    long k = kv_of(I, v->name, false);
    if (k >= 0)
        return make_kv_input(I, (size_t)k, v, dt, rank, shape);
    clf_tensor t = clf_input(I->g, v->name, dt, rank, shape);
    if (check_graph(I, NULL))
        return I->status;
    return define(I, v->pos, v->name, t, NULL, CLF_ONNX_PRODUCER_INPUT);
}

/* An output's declared type against what the graph computes. An output
 * declared without a type (binary models may) is not checked. */
static clf_status check_output(importer *I, const clf__onnx_value *v, clf_tensor t)
{
    clf_dtype dt;
    int rank;
    int64_t shape[CLF_MAX_RANK];
    char ty[160], shp[128];
    clf_tensor_dtype(I->g, t, &dt);
    clf_tensor_shape(I->g, t, &rank, shape);
    if (v->type.elem == CLF__ONNX_UNDEFINED)
        return CLF_OK;
    clf_dtype want;
    if (!elem_dtype(v->type.elem, &want))
        return unsupported(I, v->type.pos, "output '%s' is declared %s; libclfuse computes float, float16, bfloat16, int32, int64 and bool",
                           v->name, clf__onnx_elem_name(v->type.elem));
    bool ok = want == dt && (!v->type.has_shape || v->type.rank == rank);
    for (int d = 0; ok && v->type.has_shape && d < rank; d++) {
        const clf__onnx_dim *D = &v->type.dims[d];
        if (!D->param) {
            ok = D->value == shape[d];
        } else if (strcmp(D->param, "?")) {
            symbol *s = find_sym(I, D->param);
            if (s)
                ok = s->value == shape[d];
        }
    }
    if (!ok)
        return fail(I, v->type.pos, "output '%s' is declared %s but the graph computes %s%s", v->name,
                    type_str(&v->type, ty, sizeof ty), dtype_onnx_name(dt), shape_str(rank, shape, shp, sizeof shp));
    return CLF_OK;
}

/* Checks the node's outputs: the first is named, the others only for
 * the ops whose extra outputs may be asked for and are refused by the op. */
static clf_status check_node_outputs(importer *I, const clf__onnx_node *n)
{
    if (n->noutputs < 1)
        return fail(I, n->op_pos, "the node has no output");
    if (!n->outputs[0][0])
        return unsupported(I, n->op_pos, "%s without its first output is not supported", n->op);
    for (int j = 1; j < n->noutputs; j++)
        if (n->outputs[j][0] && strcmp(n->op, "LayerNormalization") && strcmp(n->op, "RMSNormalization") &&
            strcmp(n->op, "Dropout") && strcmp(n->op, "Split") && strcmp(n->op, "Attention"))
            return unsupported(I, n->op_pos, "%s with %d outputs is not supported (libclfuse computes its first)",
                               n->op, n->noutputs);
    return CLF_OK;
}


/* ---- Values known when the graph is built ------------------------------------ */

/* A new literal of elem type, rank and shape, its data zeroed (owned). */
static clf__onnx_tensor *new_literal(importer *I, const char *name, int elem, int rank, const int64_t *shape,
                                     clf__onnx_pos pos)
{
    size_t n = 1;
    for (int d = 0; d < rank; d++)
        if (__builtin_mul_overflow(n, (size_t)shape[d], &n))
            n = SIZE_MAX; /* too many, unless an extent below is 0 */
    for (int d = 0; d < rank; d++)
        if (shape[d] == 0)
            n = 0;
    if (n == SIZE_MAX)
        return NULL;
    size_t bytes;
    if (__builtin_mul_overflow(n, clf__onnx_elem_size(elem), &bytes))
        return NULL;
    clf__onnx_tensor *T = own(I, sizeof *T);
    void *data = own(I, bytes);
    if (!T || !data)
        return NULL;
    T->type = (clf__onnx_type){.elem = elem, .has_shape = true, .rank = rank, .pos = pos};
    for (int d = 0; d < rank; d++)
        T->type.dims[d].value = shape[d];
    T->n = n;
    T->name = name;
    T->data = data;
    return T;
}

/* Most elements a literal made here (ConstantOfShape, Range, a folded
 * node) may hold: shape arithmetic and masks are small; larger values
 * stay in the graph. */
#define MAX_LITERAL_ELEMS ((size_t)1 << 24)

/* ConstantOfShape, Range and Size: literals from literals. */
static clf_status import_literal_op(importer *I, const clf__onnx_node *n, int idx)
{
    const char *o = n->op;
    if (!strcmp(o, "ConstantOfShape")) {
        const int64_t *shape;
        size_t rank;
        if (want_inputs(I, n, 1, 1) || const_ints(I, n, 0, "shape", &shape, &rank))
            return I->status;
        const clf__onnx_attr *a = node_attr(I, n, "value");
        if (a && (a->kind != CLF__ONNX_ATTR_TENSOR || a->t->n != 1))
            return fail(I, a->pos, "'value' must be a one-element tensor");
        int elem = a ? a->t->type.elem : CLF__ONNX_FLOAT;
        size_t es = clf__onnx_elem_size(elem);
        size_t total = 1;
        bool empty = false; /* an extent 0 anywhere: no elements, whatever the others */
        for (size_t d = 0; d < rank; d++)
            empty |= shape[d] == 0;
        for (size_t d = 0; d < rank; d++) {
            if (shape[d] < 0)
                return fail(I, n->op_pos, "the shape has a negative extent (%lld)", (long long)shape[d]);
            if (!empty && (__builtin_mul_overflow(total, (size_t)shape[d], &total) || total > MAX_LITERAL_ELEMS))
                return unsupported(I, n->op_pos, "the constant would have more than %zu elements",
                                   MAX_LITERAL_ELEMS);
        }
        if (!es)
            return unsupported(I, n->op_pos, "value is %s", clf__onnx_elem_name(elem));
        clf__onnx_tensor *T = new_literal(I, n->outputs[0], elem, (int)rank, shape, n->op_pos);
        if (!T)
            return oom(I);
        for (size_t k = 0; k < T->n; k++)
            if (a)
                memcpy((char *)T->data + k * es, a->t->data, es);
        return define(I, n->pos, n->outputs[0], CLF_TENSOR_INVALID, T, idx);
    }
    if (!strcmp(o, "Range")) {
        if (want_inputs(I, n, 3, 3))
            return I->status;
        value *v[3];
        for (int k = 0; k < 3; k++) {
            v[k] = find(I, n->inputs[k]);
            if (need_literal(I, n, v[k], k == 0 ? "start" : k == 1 ? "limit" : "delta"))
                return I->status;
            if (v[k]->lit->n != 1)
                return fail(I, n->op_pos, "Range's inputs are scalars ('%s' holds %zu values)", v[k]->name,
                            v[k]->lit->n);
        }
        int elem = v[0]->lit->type.elem;
        clf_dtype dt;
        if (!elem_dtype(elem, &dt) || elem == CLF__ONNX_BOOL)
            return unsupported(I, n->op_pos, "Range of %s", clf__onnx_elem_name(elem));
        double start = clf__onnx_tensor_double(v[0]->lit, 0), limit = clf__onnx_tensor_double(v[1]->lit, 0),
               delta = clf__onnx_tensor_double(v[2]->lit, 0);
        if (delta == 0 || isnan(delta) || isnan(start) || isnan(limit))
            return fail(I, n->op_pos, "Range with delta %g from %g to %g", delta, start, limit);
        double cnt = ceil((limit - start) / delta);
        if (cnt < 0)
            cnt = 0;
        if (cnt > (double)MAX_LITERAL_ELEMS)
            return unsupported(I, n->op_pos, "Range of more than %zu values", MAX_LITERAL_ELEMS);
        int64_t len = (int64_t)cnt;
        clf__onnx_tensor *T = new_literal(I, n->outputs[0], elem, 1, &len, n->op_pos);
        if (!T)
            return oom(I);
        for (int64_t k = 0; k < len; k++) {
            if (dt == CLF_F32) {
                float f = (float)(start + (double)k * delta);
                memcpy((char *)T->data + k * 4, &f, 4);
            } else {
                int64_t s0 = clf__onnx_tensor_int(v[0]->lit, 0), d0 = clf__onnx_tensor_int(v[2]->lit, 0);
                int64_t x = s0 + k * d0;
                if (dt == CLF_I32) {
                    int32_t x32 = (int32_t)x;
                    memcpy((char *)T->data + k * 4, &x32, 4);
                } else {
                    memcpy((char *)T->data + k * 8, &x, 8);
                }
            }
        }
        return define(I, n->pos, n->outputs[0], CLF_TENSOR_INVALID, T, idx);
    }
    /* Size */
    clf_tensor x;
    if (want_inputs(I, n, 1, 1) || input(I, n, 0, &x))
        return I->status;
    int rank;
    int64_t shape[CLF_MAX_RANK], numel = 1;
    clf_tensor_shape(I->g, x, &rank, shape);
    for (int d = 0; d < rank; d++)
        numel *= shape[d];
    clf__onnx_tensor *T = new_literal(I, n->outputs[0], CLF__ONNX_INT64, 0, NULL, n->op_pos);
    if (!T)
        return oom(I);
    memcpy((void *)T->data, &numel, sizeof numel);
    return define(I, n->pos, n->outputs[0], CLF_TENSOR_INVALID, T, idx);
}

/* Input k of node n: its value (NULL where the input is absent), from vi
 * (import_node's lookups: a value's index plus one per input) where
 * given, else by name. */
static value *input_at(importer *I, const clf__onnx_node *n, int k, const uint32_t *vi)
{
    if (!n->inputs[k][0])
        return NULL;
    return vi ? &I->values[vi[k] - 1] : find(I, n->inputs[k]);
}

/* Whether node n can be evaluated now: it has inputs, each a literal, and
 * they are small. Random ops never are. */
static bool foldable(importer *I, const clf__onnx_node *n, const uint32_t *vi)
{
    if (n->ninputs == 0 || !strncmp(n->op, "Random", 6))
        return false;
    size_t total = 0;
    for (int k = 0; k < n->ninputs; k++) {
        if (!n->inputs[k][0])
            continue;
        const value *v = input_at(I, n, k, vi);
        if (!v || !v->lit || (v->lit->n && !v->lit->data))
            return false;
        total += v->lit->n;
    }
    return total <= MAX_LITERAL_ELEMS;
}

static clf_status import_op(importer *I, const clf__onnx_node *n, int idx, clf_tensor *out);

/* fold_node's hit in the memo: each remembered output becomes the node's
 * literal. */
struct remembered {
    importer *I;
    const clf__onnx_node *n;
    int idx;
};

static bool take_remembered(void *ctx, const clf__fold_output *o)
{
    const struct remembered *r = ctx;
    clf__onnx_tensor *T = new_literal(r->I, r->n->outputs[o->slot], o->elem, o->rank, o->shape, r->n->op_pos);
    if (!T)
        return false;
    if (o->bytes)
        memcpy((void *)T->data, o->data, o->bytes);
    return define(r->I, r->n->pos, r->n->outputs[o->slot], CLF_TENSOR_INVALID, T, r->idx) == CLF_OK;
}

/* Puts a fold's literals (lits[j], NULL where output j has none) in the
 * memo under key. */
static void remember(importer *I, const clf__fold_key *key, clf__onnx_tensor *const *lits, int nout)
{
    if (!I->folds || !key->bytes)
        return;
    clf__fold_output outs[16];
    int64_t shapes[16][CLF__ONNX_MAX_RANK];
    int k = 0;
    for (int j = 0; j < nout; j++) {
        const clf__onnx_tensor *T = lits[j];
        if (!T)
            continue;
        for (int d = 0; d < T->type.rank; d++)
            shapes[k][d] = T->type.dims[d].value;
        outs[k] = (clf__fold_output){j, T->type.elem, T->type.rank, shapes[k], T->data,
                                     T->n * clf__onnx_elem_size(T->type.elem)};
        k++;
    }
    clf__fold_memo_put(I->folds, key, outs, k, I->attrs_read);
}

/* Evaluates node n, whose inputs are all literals, by importing it into a
 * graph of its own and running the reference interpreter: the outputs
 * become literals, and no kernel computes them (the exporters' Shape ->
 * Gather -> Concat -> Reshape chains, masks from Range and Trilu). Returns
 * CLF_OK with *folded false when the node's results are too large. */
static clf_status fold_node(importer *I, const clf__onnx_node *n, int idx, const uint32_t *vi, bool *folded)
{
    *folded = false;
    clf_graph *main_g = I->g;
    clf_tensor saved[64];
    if (n->ninputs > 64 || n->noutputs > 16)
        return CLF_OK;
    /* An earlier import's fold of this node with the same literals. */
    clf__fold_key key = {0};
    if (I->folds) {
        const clf__onnx_tensor *ins[64];
        for (int k = 0; k < n->ninputs; k++) {
            const value *v = input_at(I, n, k, vi);
            ins[k] = v ? v->lit : NULL;
        }
        if (clf__fold_memo_key_make(idx, ins, n->ninputs, &key)) {
            struct remembered r = {I, n, idx};
            uint64_t bits = 0;
            bool stopped;
            const bool hit = clf__fold_memo_get(I->folds, &key, take_remembered, &r, &bits, &stopped);
            if (hit || stopped) {
                clf__fold_memo_key_free(&key);
                if (stopped)
                    return I->status ? I->status : oom(I);
                I->attrs_read = bits;
                *folded = true;
                clf__log(CLF__LOG_FUSION, "onnx node %d (%s '%s'): folded into a constant at load (as at an earlier "
                         "import)", idx, n->op, n->name && n->name[0] ? n->name : n->outputs[0]);
                return CLF_OK;
            }
        }
    }
    for (int k = 0; k < n->ninputs; k++) {
        value *v = input_at(I, n, k, vi);
        saved[k] = v ? v->t : CLF_TENSOR_INVALID;
        if (v)
            v->t = CLF_TENSOR_INVALID; /* the literal goes into the folding graph */
    }
    clf_graph *fg = clf_graph_create();
    clf_tensor outs[16];
    clf_host_binding bind[16];
    char names[16][16];
    clf__onnx_tensor *lits[16] = {NULL};
    size_t before = I->nvalues;
    clf_status st = CLF_OK;
    if (!fg) {
        st = oom(I);
        goto done;
    }
    for (int j = 0; j < 16; j++)
        outs[j] = CLF_TENSOR_INVALID;
    I->g = fg;
    st = import_op(I, n, idx, outs);
    if (!st)
        st = check_graph(I, n);
    I->g = main_g;
    if (st)
        goto done;
    if (I->nvalues != before) { /* Identity of a literal defined its output itself */
        *folded = true;
        goto done;
    }
    int nb = 0;
    for (int j = 0; j < n->noutputs; j++) {
        if (!n->outputs[j][0] || !clf_tensor_valid(outs[j]))
            continue;
        clf_dtype dt;
        int rank;
        int64_t shape[CLF_MAX_RANK], numel = 1;
        clf_tensor_dtype(fg, outs[j], &dt);
        clf_tensor_shape(fg, outs[j], &rank, shape);
        for (int d = 0; d < rank; d++)
            numel *= shape[d];
        if ((size_t)numel > MAX_LITERAL_ELEMS)
            goto done; /* left to the graph */
        lits[j] = new_literal(I, n->outputs[j], dtype_elem(dt), rank, shape, n->op_pos);
        if (!lits[j]) {
            st = oom(I);
            goto done;
        }
        /* The reference binds outputs by the names given to clf_graph_output. */
        snprintf(names[nb], sizeof names[nb], "o%d", j);
        if (clf_graph_output(fg, names[nb], outs[j]) != CLF_OK) {
            I->g = fg; /* the folding graph's error, not the model's */
            st = check_graph(I, n);
            I->g = main_g;
            goto done;
        }
        bind[nb] = (clf_host_binding){names[nb], (void *)lits[j]->data};
        nb++;
    }
    char msg[256];
    clf_status rs = clf_reference_run(fg, 0, NULL, (size_t)nb, bind, msg, sizeof msg);
    if (rs != CLF_OK) {
        st = rs == CLF_ERR_OUT_OF_MEMORY ? oom(I) : fail_status(I, rs, n->op_pos, "folding: %s", msg);
        goto done;
    }
    for (int j = 0; j < n->noutputs; j++)
        if (lits[j] && (st = define(I, n->pos, n->outputs[j], CLF_TENSOR_INVALID, lits[j], idx)))
            goto done;
    *folded = true;
    remember(I, &key, lits, n->noutputs);
    clf__log(CLF__LOG_FUSION, "onnx node %d (%s '%s'): folded into a constant at load", idx, n->op,
             n->name && n->name[0] ? n->name : n->outputs[0]);
done:
    I->g = main_g;
    for (int k = 0; k < n->ninputs; k++) {
        value *v = input_at(I, n, k, vi);
        if (v)
            v->t = saved[k];
    }
    clf_graph_destroy(&fg);
    clf__fold_memo_key_free(&key);
    return st;
}

static clf_status import_node(importer *I, int k, clf__onnx_node_span *span)
{
    const clf__onnx_node *n = &I->m->nodes[k];
    span->first = (uint32_t)clf_graph_node_count(I->g);
    I->attrs_read = 0;
    if (n->domain[0] && strcmp(n->domain, "ai.onnx"))
        return unsupported(I, n->op_pos, "op %s.%s is not supported by libclfuse (only the default ONNX domain)",
                           n->domain, n->op);
    if (check_node_outputs(I, n))
        return I->status;
    /* Each input's value once, for the folding below (at most 64: more go
     * by name). */
    uint32_t vi[64];
    for (int j = 0; j < n->ninputs; j++) {
        const value *v = n->inputs[j][0] ? find(I, n->inputs[j]) : NULL;
        if (n->inputs[j][0] && !v)
            return fail(I, n->op_pos, "input '%s' is not defined by a graph input, an initializer or an earlier node",
                        n->inputs[j]);
        if (j < 64)
            vi[j] = v ? (uint32_t)(v - I->values) + 1 : 0;
    }
    const uint32_t *inputs = n->ninputs <= 64 ? vi : NULL;
    if (!strcmp(n->op, "Constant")) {
        if (import_constant(I, n))
            return I->status;
        I->values[I->nvalues - 1].producer = k;
    } else if (!strcmp(n->op, "Shape")) {
        if (import_shape(I, n, k))
            return I->status;
    } else if (!strcmp(n->op, "ConstantOfShape") || !strcmp(n->op, "Range") || !strcmp(n->op, "Size")) {
        if (import_literal_op(I, n, k))
            return I->status;
    } else {
        bool folded = false;
        if (I->nkv && import_kv_concat(I, n, &folded))
            return I->status;
        if (!folded && foldable(I, n, inputs) && fold_node(I, n, k, inputs, &folded))
            return I->status;
        if (!folded) {
            clf_tensor t[64];
            size_t before = I->nvalues;
            if (n->noutputs > 64)
                return unsupported(I, n->op_pos, "%d outputs (at most 64)", n->noutputs);
            for (int j = 0; j < 64; j++)
                t[j] = CLF_TENSOR_INVALID;
            if (import_op(I, n, k, t) || check_graph(I, n))
                return I->status;
            if (I->nvalues == before) { /* not an Identity of a literal */
                if (!clf_tensor_valid(t[0]))
                    return fail_status(I, CLF_ERR_INTERNAL, n->op_pos, "internal error: no result");
                for (int j = 0; j < n->noutputs; j++) {
                    if (!n->outputs[j][0])
                        continue;
                    if (!clf_tensor_valid(t[j]))
                        return unsupported(I, n->op_pos, "output %d ('%s') of %s is not supported", j + 1,
                                           n->outputs[j], n->op);
                    if (define(I, n->pos, n->outputs[j], t[j], NULL, k))
                        return I->status;
                }
            }
        }
    }
    if (check_attrs_read(I, n))
        return I->status;
    span->end = (uint32_t)clf_graph_node_count(I->g);
    return CLF_OK;
}

static clf_status import_all(importer *I, const clf_onnx_params *p, clf__onnx_import *out)
{
    const clf__onnx_model *m = I->m;
    if (m->ir_version >= 0 && (m->ir_version < CLF__ONNX_MIN_IR_VERSION || m->ir_version > CLF__ONNX_MAX_IR_VERSION))
        return fail(I, nowhere, "ir_version %lld is not one libclfuse reads (%d to %d)", (long long)m->ir_version,
                    CLF__ONNX_MIN_IR_VERSION, CLF__ONNX_MAX_IR_VERSION);
    if (m->opset > CLF__ONNX_MAX_OPSET)
        return fail_status(I, CLF_ERR_UNSUPPORTED, nowhere, "the model imports opset %lld of the default domain; "
                           "libclfuse reads opsets up to %d (a later opset may change what an op means)",
                           (long long)m->opset, CLF__ONNX_MAX_OPSET);
    if (p->ndims && (!p->dim_names || !p->dim_values))
        return fail_status(I, CLF_ERR_INVALID_ARGUMENT, nowhere, "clf_onnx_params: ndims is %zu but dim_names or "
                           "dim_values is NULL", p->ndims);
    if (p->ninputs && !p->inputs)
        return fail_status(I, CLF_ERR_INVALID_ARGUMENT, nowhere, "clf_onnx_params: ninputs is %zu but inputs is NULL",
                           p->ninputs);
    for (size_t i = 0; i < p->ndims; i++) {
        if (!p->dim_names[i] || p->dim_values[i] < 0)
            return fail_status(I, CLF_ERR_INVALID_ARGUMENT, nowhere, "clf_onnx_params: dimension size %zu has no "
                               "name or a negative size", i);
        if (find_sym(I, p->dim_names[i]))
            return fail_status(I, CLF_ERR_INVALID_ARGUMENT, nowhere, "a size for dimension %s is given twice",
                               p->dim_names[i]);
        if (add_sym(I, p->dim_names[i], p->dim_values[i], "the dimension sizes"))
            return I->status;
    }
    if (p->nderived && !p->derived)
        return fail_status(I, CLF_ERR_INVALID_ARGUMENT, nowhere, "clf_onnx_params: nderived is %zu but derived is "
                           "NULL", p->nderived);
    for (size_t i = 0; i < p->nderived; i++) {
        const clf_onnx_derived_dim *D = &p->derived[i];
        symbol *a = D->plus ? find_sym(I, D->plus) : NULL, *b = D->minus ? find_sym(I, D->minus) : NULL;
        if (!D->name || !a || !b)
            return fail_status(I, CLF_ERR_INVALID_ARGUMENT, nowhere,
                               "clf_onnx_params: derived dimension %zu ('%s'): '%s' or '%s' has no size", i,
                               D->name ? D->name : "", D->plus ? D->plus : "", D->minus ? D->minus : "");
        if (a->value < b->value)
            return fail_status(I, CLF_ERR_SHAPE, nowhere, "dimension %s = %s - %s = %lld - %lld is negative", D->name,
                               D->plus, D->minus, (long long)a->value, (long long)b->value);
        if (find_sym(I, D->name))
            return fail_status(I, CLF_ERR_INVALID_ARGUMENT, nowhere, "a size for dimension %s is given twice", D->name);
        if (add_sym(I, D->name, a->value - b->value, "a derived dimension"))
            return I->status;
    }
    if (p->nkv_caches) {
        if (!p->kv_caches)
            return fail_status(I, CLF_ERR_INVALID_ARGUMENT, nowhere, "clf_onnx_params: nkv_caches is %zu but kv_caches "
                               "is NULL", p->nkv_caches);
        I->kv = p->kv_caches;
        I->nkv = p->nkv_caches;
        I->kvs = clf__calloc(I->nkv, sizeof *I->kvs);
        if (!I->kvs)
            return oom(I);
        for (size_t i = 0; i < I->nkv; i++) {
            if (!I->kv[i].past || !I->kv[i].present || !model_input(m, I->kv[i].past))
                return fail_status(I, CLF_ERR_INVALID_ARGUMENT, nowhere, "KV cache %zu: '%s' is no input of the model",
                                   i, I->kv[i].past ? I->kv[i].past : "");
            I->kvs[i] = (struct kv_state){CLF_TENSOR_INVALID, CLF_TENSOR_INVALID, CLF_TENSOR_INVALID, 0, 0};
        }
    }
    for (size_t i = 0; i < p->ninputs; i++)
        if (bind_given(I, &p->inputs[i]))
            return I->status;
    for (int i = 0; i < m->ninputs; i++) {
        const clf__onnx_value *v = &m->inputs[i];
        if (v->init ? define(I, v->pos, v->name, CLF_TENSOR_INVALID, v->init, CLF_ONNX_PRODUCER_CONSTANT)
                    : make_input(I, v, p))
            return I->status;
    }
    for (int i = 0; i < m->nextras; i++)
        if (m->extras[i].init && define(I, m->extras[i].pos, m->extras[i].name, CLF_TENSOR_INVALID,
                                        m->extras[i].init, CLF_ONNX_PRODUCER_CONSTANT))
            return I->status;
    for (int k = 0; k < m->nnodes; k++) {
        I->node = k;
        if (import_node(I, k, &out->nodes[k]))
            return I->status;
    }
    I->node = -1;
    if (m->noutputs == 0)
        return fail(I, nowhere, "the graph has no outputs");
    for (int i = 0; i < m->noutputs; i++) {
        const clf__onnx_value *v = &m->outputs[i];
        value *val = find(I, v->name);
        clf_tensor t;
        if (!val)
            return fail(I, v->pos, "output '%s' is not computed by any node", v->name);
        if (materialize(I, NULL, val, &t) || check_output(I, v, t))
            return I->status;
        long k = kv_of(I, v->name, true);
        if (k >= 0) { /* the cache itself, updated: the caller's buffer */
            if (!clf_tensor_valid(I->kvs[k].write))
                return unsupported(I, v->pos, "KV cache '%s': output '%s' is not Concat('%s', new entries)",
                                   I->kv[k].past, v->name, I->kv[k].past);
            t = I->kvs[k].write;
        }
        if (clf_graph_output(I->g, v->name, t) != CLF_OK) {
            const char *msg;
            clf_status st = clf_graph_status(I->g, &msg);
            return st == CLF_ERR_OUT_OF_MEMORY ? oom(I) : fail_status(I, st, v->pos, "output '%s': %s", v->name, msg);
        }
    }
    return CLF_OK;
}

clf_status clf__onnx_import_model(const clf__onnx_model *m, const clf_onnx_params *p, bool borrow,
                                  clf__fold_memo *folds, clf__onnx_import *out, char *err, size_t cap)
{
    static const clf_onnx_params defaults = {0};
    memset(out, 0, sizeof *out);
    importer I = {.m = m, .opset = m->opset >= 0 ? m->opset : DEFAULT_OPSET, .node = -1, .borrow = borrow,
                  .folds = folds, .err = err, .cap = cap};
    if (cap)
        err[0] = 0;
    I.g = clf_graph_create();
    out->nodes = clf__calloc(m->nnodes ? (size_t)m->nnodes : 1, sizeof *out->nodes);
    if (!I.g || !out->nodes)
        oom(&I);
    else
        import_all(&I, p ? p : &defaults, out);
    if (!I.status) {
        out->values = clf__calloc(I.nvalues ? I.nvalues : 1, sizeof *out->values);
        if (!out->values) {
            oom(&I);
        } else {
            for (size_t i = 0; i < I.nvalues; i++)
                out->values[i] = (clf__onnx_import_value){I.values[i].name, I.values[i].t, I.values[i].producer};
            out->nvalues = I.nvalues;
            out->g = I.g;
            I.g = NULL;
        }
    }
    for (size_t i = 0; i < I.nowned; i++)
        clf__free(I.owned[i]);
    clf__free(I.owned);
    clf__free(I.values);
    clf__free(I.index);
    clf__free(I.syms);
    clf__free(I.kvs);
    clf_graph_destroy(&I.g);
    if (I.status)
        clf__onnx_import_free(out);
    return I.status;
}

void clf__onnx_import_free(clf__onnx_import *r)
{
    if (!r)
        return;
    clf_graph_destroy(&r->g);
    clf__free(r->nodes);
    clf__free(r->values);
    memset(r, 0, sizeof *r);
}
