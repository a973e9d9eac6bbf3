/* Symbolic dimensions (graph_symbols.h): declaring them, the rule each op
 * follows for them, and specialising a graph to sizes. */
#include "graph_symbols.h"

#include "graph_generalise.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "graph_builder.h"
#include "util/alloc.h"

/* ---- Declaring -------------------------------------------------------- */

int64_t clf__graph_dim_rep(int64_t lo, int64_t hi) { return lo >= 2 ? lo : (hi == 0 || hi >= 2) ? 2 : hi; }

int64_t clf_dim(clf_graph *g, const char *name, int64_t lo, int64_t hi)
{
    static const char call[] = "clf_dim";
    if (!clf__graph_usable(g))
        return 0;
    if (!name || !name[0]) {
        clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call, "name is %s", name ? "empty" : "NULL");
        return 0;
    }
    for (size_t i = 0; i < g->nsyms; i++)
        if (!strcmp(g->syms[i].name, name)) {
            clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call, "a dimension named '%s' exists already", name);
            return 0;
        }
    if (lo < 0 || hi < 0 || (hi != 0 && hi < lo)) {
        clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call,
                        "'%s': bounds %" PRId64 "..%" PRId64 " (want 0 <= lo <= hi, or hi 0 for none)", name, lo, hi);
        return 0;
    }
    if (g->nderived) {
        clf__graph_fail(g, CLF_ERR_UNSUPPORTED, call,
                        "'%s': the graph's dimensions are fixed (it has dimensions derived from them)", name);
        return 0;
    }
    if (g->nsyms == CLF__MAX_SYMS) {
        clf__graph_fail(g, CLF_ERR_UNSUPPORTED, call, "'%s': a graph has at most %d symbolic dimensions", name,
                        CLF__MAX_SYMS);
        return 0;
    }
    if (!g->syms) {
        g->syms = clf__calloc(CLF__MAX_SYMS, sizeof *g->syms);
        if (!g->syms) {
            clf__graph_fail(g, CLF_ERR_OUT_OF_MEMORY, call, "out of memory");
            return 0;
        }
    }
    size_t len = strlen(name);
    char *copy = clf__malloc(len + 1);
    if (!copy) {
        clf__graph_fail(g, CLF_ERR_OUT_OF_MEMORY, call, "out of memory");
        return 0;
    }
    memcpy(copy, name, len + 1);
    /* The stand-in is never 1 where the bounds allow otherwise, so that no
     * builder takes the dimension for a broadcast one. */
    int64_t rep = clf__graph_dim_rep(lo, hi);
    g->syms[g->nsyms] = (clf__dim_sym){.name = copy, .lo = lo, .hi = hi, .rep = rep, .a = (uint8_t)g->nsyms};
    return CLF__DIM_TOKEN - (int64_t)g->nsyms++;
}

size_t clf_graph_dim_count(const clf_graph *g) { return g ? g->nsyms : 0; }

clf_status clf_graph_dim(const clf_graph *g, size_t i, const char **name, int64_t *lo, int64_t *hi)
{
    if (!g)
        return CLF_ERR_INVALID_ARGUMENT;
    if (i >= g->nsyms)
        return CLF_ERR_NOT_FOUND;
    if (name)
        *name = g->syms[i].name;
    if (lo)
        *lo = g->syms[i].lo;
    if (hi)
        *hi = g->syms[i].hi;
    return CLF_OK;
}

clf_status clf_tensor_dim_names(const clf_graph *g, clf_tensor t, const char **names)
{
    if (!g || !names || t.graph != g->serial || t.node >= g->nnodes)
        return CLF_ERR_INVALID_ARGUMENT;
    const clf__node *n = &g->nodes[t.node];
    for (int d = 0; d < CLF_MAX_RANK; d++)
        names[d] = d < n->rank && n->sym[d] ? g->syms[n->sym[d] - 1].name : NULL;
    return CLF_OK;
}

int clf__graph_dim_token(const clf_graph *g, int64_t v)
{
    if (v > CLF__DIM_TOKEN || CLF__DIM_TOKEN - v >= (int64_t)g->nsyms)
        return 0;
    return (int)(CLF__DIM_TOKEN - v) + 1;
}

void clf__graph_take_dims(const clf_graph *g, int rank, const int64_t *in, int64_t *out, uint8_t *sym)
{
    for (int d = 0; d < rank; d++) {
        int s = clf__graph_dim_token(g, in[d]);
        sym[d] = (uint8_t)s;
        out[d] = s ? g->syms[s - 1].rep : in[d];
    }
}

const char *clf__graph_sym_name(const clf_graph *g, int sym)
{
    return sym > 0 && (size_t)sym <= g->nsyms + g->nderived ? g->syms[sym - 1].name : "?";
}

int64_t clf__graph_dim_value(const clf__dim_sym *S, const int64_t *values)
{
    switch ((clf__dim_rule)S->rule) {
    case CLF__DIM_SCALED:
        return S->k * values[S->a] + S->c;
    case CLF__DIM_PRODUCT:
        return S->k * values[S->a] * values[S->b];
    case CLF__DIM_DIFFERENCE:
        return values[S->a] - values[S->b] + S->c;
    case CLF__DIM_SYMBOL:
        break;
    }
    return values[S->a];
}

bool clf__graph_derive(const clf_graph *g, int64_t *values, char *err, size_t cap)
{
    for (size_t i = g->nsyms; i < g->nsyms + g->nderived; i++) {
        const clf__dim_sym *S = &g->syms[i];
        /* The symbols' sizes are bounded by the tensors they make (under
         * 2^63 bytes): a product of two in double first. */
        if (S->rule == CLF__DIM_PRODUCT && (double)S->k * (double)values[S->a] * (double)values[S->b] > 9.0e18) {
            snprintf(err, cap, "dimension %s is too large at these sizes", S->name);
            return false;
        }
        values[i] = clf__graph_dim_value(S, values);
        if (values[i] < 0) {
            snprintf(err, cap, "dimension %s is negative at these sizes", S->name);
            return false;
        }
    }
    return true;
}

/* ---- The rule of each op ---------------------------------------------- */

/* One axis of a tensor as the rules see it. */
typedef struct dim_of {
    int64_t ext;
    int sym;
} dim_of;

static dim_of axis_of(const clf__node *n, int d) { return (dim_of){n->shape[d], n->sym[d]}; }

static void describe(const clf_graph *g, dim_of a, char *buf, size_t cap)
{
    if (a.sym)
        snprintf(buf, cap, "symbolic %s", clf__graph_sym_name(g, a.sym));
    else
        snprintf(buf, cap, "%" PRId64, a.ext);
}

/* Two axes that must be the same at every size. */
static bool same_axis(clf_graph *g, const char *call, const char *where, dim_of a, dim_of b)
{
    if (a.sym == b.sym && (a.sym || a.ext == b.ext))
        return true;
    if (!a.sym && !b.sym)
        return true; /* the concrete check has spoken */
    char sa[64], sb[64];
    describe(g, a, sa, sizeof sa);
    describe(g, b, sb, sizeof sb);
    clf__graph_fail(g, CLF_ERR_SHAPE, call, "%s: extent %s meets %s, which may differ at run time", where, sa, sb);
    return false;
}

/* numpy broadcasting of nin shapes (aligned to the right) into r axes of
 * out: a symbol broadcasts against 1 and itself only. */
static bool broadcast_syms(clf_graph *g, const char *call, int nin, const int *ranks, const int64_t *const *ext,
                           const uint8_t *const *sym, int r, uint8_t *out)
{
    for (int d = 0; d < r; d++) {
        dim_of got = {1, 0};
        for (int k = 0; k < nin; k++) {
            int dk = d - (r - ranks[k]);
            if (dk < 0)
                continue;
            dim_of a = {ext[k][dk], sym[k][dk]};
            if (!a.sym && a.ext == 1)
                continue;
            if (!got.sym && got.ext == 1) {
                got = a;
                continue;
            }
            char where[48];
            snprintf(where, sizeof where, "axis %d of the result", d);
            if (!same_axis(g, call, where, got, a))
                return false;
        }
        out[d] = (uint8_t)got.sym;
    }
    return true;
}

static bool broadcast_inputs(clf_graph *g, const char *call, clf__node *n)
{
    int ranks[8];
    const int64_t *ext[8];
    const uint8_t *sym[8];
    int m = n->ninputs;
    if (m > 8) {
        /* Only concat takes more, and it has its own rule. */
        m = 8;
    }
    for (int k = 0; k < m; k++) {
        const clf__node *in = &g->nodes[n->inputs[k]];
        ranks[k] = in->rank;
        ext[k] = in->shape;
        sym[k] = in->sym;
    }
    return broadcast_syms(g, call, m, ranks, ext, sym, n->rank, n->sym);
}

bool clf__graph_expand_syms(clf_graph *g, const char *call, const clf__node *in, int rank, const int64_t *shape,
                            const uint8_t *shape_sym, clf__node *n)
{
    int ranks[2] = {in->rank, rank};
    const int64_t *ext[2] = {in->shape, shape};
    const uint8_t *sym[2] = {in->sym, shape_sym};
    return broadcast_syms(g, call, 2, ranks, ext, sym, n->rank, n->sym);
}

/* Whether n (a reshape, squeeze or unsqueeze) holds as many elements as
 * in at every size: the same symbols, and the same product of the rest. */
static bool same_count(const clf__node *in, const clf__node *n)
{
    int count[CLF__MAX_SYMS + 1] = {0};
    int64_t pin = 1, pout = 1;
    for (int d = 0; d < in->rank; d++) {
        if (in->sym[d])
            count[in->sym[d]]++;
        else
            pin *= in->shape[d];
    }
    for (int d = 0; d < n->rank; d++) {
        if (n->sym[d])
            count[n->sym[d]]--;
        else
            pout *= n->shape[d];
    }
    for (int s = 0; s <= CLF__MAX_SYMS; s++)
        if (count[s])
            return false;
    return pin == pout;
}

static bool has_syms(const clf__node *n)
{
    for (int d = 0; d < n->rank; d++)
        if (n->sym[d])
            return true;
    return false;
}

static bool reshape_syms(clf_graph *g, const char *call, const clf__node *in, clf__node *n)
{
    if (!has_syms(n) && has_syms(in)) {
        /* Not named in a target (squeeze, unsqueeze, a reshape given sizes):
         * the axes other than 1s, in order, must be the input's. */
        int i = 0;
        for (int d = 0; d < n->rank; d++) {
            if (n->shape[d] == 1)
                continue;
            while (i < in->rank && in->shape[i] == 1 && !in->sym[i])
                i++;
            if (i < in->rank && in->shape[i] == n->shape[d])
                n->sym[d] = in->sym[i++];
            else
                break;
        }
    }
    if (same_count(in, n))
        return true;
    for (int d = 0; d < in->rank; d++)
        if (in->sym[d]) {
            clf__graph_fail(g, CLF_ERR_SHAPE, call,
                            "the result does not keep symbolic %s of x (axis %d) as an axis of its own: merging or "
                            "splitting a symbolic dimension is not supported; name it in the target shape with "
                            "clf_dim's value",
                            clf__graph_sym_name(g, in->sym[d]), d);
            return false;
        }
    for (int d = 0; d < n->rank; d++)
        if (n->sym[d]) {
            clf__graph_fail(g, CLF_ERR_SHAPE, call,
                            "the target names symbolic %s, but x holds a fixed number of elements",
                            clf__graph_sym_name(g, n->sym[d]));
            return false;
        }
    return true;
}

static bool matmul_syms(clf_graph *g, const char *call, clf__node *n)
{
    const clf__node *a = &g->nodes[n->inputs[0]], *b = &g->nodes[n->inputs[1]];
    if (!same_axis(g, call, "the contracted axis (K)", axis_of(a, a->rank - 1), axis_of(b, b->rank - 2)))
        return false;
    int ranks[2] = {a->rank - 2, b->rank - 2};
    const int64_t *ext[2] = {a->shape, b->shape};
    const uint8_t *sym[2] = {a->sym, b->sym};
    if (!broadcast_syms(g, call, 2, ranks, ext, sym, n->rank - 2, n->sym))
        return false;
    n->sym[n->rank - 2] = a->sym[a->rank - 2];
    n->sym[n->rank - 1] = b->sym[b->rank - 1];
    return true;
}

static bool concat_syms(clf_graph *g, const char *call, clf__node *n)
{
    int axis = n->attr.concat.axis;
    const clf__node *first = &g->nodes[n->inputs[0]];
    for (int k = 0; k < n->ninputs; k++) {
        const clf__node *in = &g->nodes[n->inputs[k]];
        if (in->sym[axis]) {
            clf__graph_fail(g, CLF_ERR_SHAPE, call,
                            "input %d is symbolic %s along the concat axis %d: not supported (a KV cache is bound "
                            "in place instead)",
                            k, clf__graph_sym_name(g, in->sym[axis]), axis);
            return false;
        }
        for (int d = 0; d < n->rank; d++) {
            if (d == axis)
                continue;
            char where[48];
            snprintf(where, sizeof where, "axis %d of input %d", d, k);
            if (!same_axis(g, call, where, axis_of(first, d), axis_of(in, d)))
                return false;
            n->sym[d] = first->sym[d];
        }
    }
    return true;
}

bool clf__graph_infer_syms(clf_graph *g, const char *call, clf__node *n)
{
    if (g->nsyms == 0)
        return true;
    const clf__node *in = n->ninputs > 0 ? &g->nodes[n->inputs[0]] : NULL;
    switch (n->op) {
    case CLF__OP_INPUT:
    case CLF__OP_CONSTANT:
    case CLF__OP_EXPAND: /* set by their builders */
        return true;
    case CLF__OP_RESHAPE:
    case CLF__OP_SQUEEZE:
    case CLF__OP_UNSQUEEZE:
        return reshape_syms(g, call, in, n);
    case CLF__OP_TRANSPOSE:
        for (int d = 0; d < n->rank; d++)
            n->sym[d] = in->sym[n->attr.transpose.perm[d]];
        return true;
    case CLF__OP_SLICE: /* clf__graph_slice_sym_ok let through whole symbolic axes only; the
                           builder marks a fixed axis cut at a symbolic end */
        for (int d = 0; d < n->rank; d++)
            n->sym[d] = in->sym[d] ? in->sym[d] : n->sym[d];
        return true;
    case CLF__OP_CACHE_WRITE: /* the cache's shape (its axis fixed: the capacity) */
        memcpy(n->sym, in->sym, sizeof n->sym);
        return true;
    case CLF__OP_REDUCE: {
        int o = 0;
        for (int d = 0; d < in->rank; d++) {
            bool reduced = n->attr.reduce.mask >> d & 1;
            if (!reduced)
                n->sym[o++] = in->sym[d];
            else if (n->attr.reduce.keepdims)
                n->sym[o++] = 0;
        }
        return true;
    }
    case CLF__OP_MATMUL:
        return matmul_syms(g, call, n);
    case CLF__OP_GATHER: {
        const clf__node *idx = &g->nodes[n->inputs[1]];
        int a = n->attr.gather.axis, o = 0;
        for (int d = 0; d < a; d++)
            n->sym[o++] = in->sym[d];
        for (int d = 0; d < idx->rank; d++)
            n->sym[o++] = idx->sym[d];
        for (int d = a + 1; d < in->rank; d++)
            n->sym[o++] = in->sym[d];
        return true;
    }
    case CLF__OP_GATHER_ELEMENTS: {
        const clf__node *idx = &g->nodes[n->inputs[1]];
        for (int d = 0; d < n->rank; d++) {
            if (d != n->attr.gather.axis && (in->sym[d] || idx->sym[d]) &&
                !same_axis(g, call, "an axis of data and indices", axis_of(in, d), axis_of(idx, d)))
                return false;
            n->sym[d] = idx->sym[d];
        }
        return true;
    }
    case CLF__OP_CONCAT:
        return concat_syms(g, call, n);
    default:
        break;
    }
    /* Pointwise ops (and where, clip, cast): numpy broadcasting. */
    return broadcast_inputs(g, call, n);
}

bool clf__graph_slice_sym_ok(clf_graph *g, const char *call, const clf__node *in, int a, int64_t start,
                             int64_t end, int64_t step, int64_t extent)
{
    int s = in->sym[a];
    if (!s)
        return true;
    const clf__dim_sym *S = &g->syms[s - 1];
    if (start == 0 && step == 1 && extent == in->shape[a] && S->hi != 0 && end >= S->hi)
        return true;
    if (start == 0 && step == 1 && extent == in->shape[a] && end == INT64_MAX)
        return true;
    clf__graph_fail(g, CLF_ERR_SHAPE, call,
                    "axis %d is symbolic %s: only a whole slice of it (start 0, step 1, end at least its bound) "
                    "is supported",
                    a, S->name);
    return false;
}

void clf__graph_count_gen(clf_graph *g, clf_tensor c, uint32_t node, uint32_t mask, double minus)
{
    if (!clf__graph_usable(g) || !clf_tensor_valid(c) || node >= g->nnodes)
        return;
    const clf__node *of = &g->nodes[node];
    bool symbolic = false;
    for (int d = 0; d < of->rank; d++)
        symbolic = symbolic || (mask >> d & 1 && of->sym[d]);
    if (!symbolic)
        return;
    clf__node *n = &g->nodes[c.node];
    n->gen.kind = CLF__GEN_COUNT;
    n->gen.node = node;
    n->gen.mask = mask;
    n->gen.minus = minus;
}

/* ---- Specialising ------------------------------------------------------ */

static clf_status fail(char *err, size_t cap, clf_status st, const char *fmt, const char *a, long long v)
{
    snprintf(err, cap, fmt, a, v);
    return st;
}

size_t clf__graph_prefix_table_bytes(const clf__node *n)
{
    size_t elems = (size_t)n->gen.rows;
    for (int d = 0; d < n->rank; d++)
        if (d != n->gen.axis)
            elems *= (size_t)n->shape[d];
    return elems * clf_dtype_size(n->dtype);
}

clf_status clf__graph_generate_const(const clf_graph *s, const clf__node *from, clf__node *n, char *err, size_t cap)
{
    const int64_t numel = clf__node_numel(n);
    const size_t size = clf_dtype_size(n->dtype), bytes = (size_t)numel * size;
    uint8_t *c = clf__malloc(bytes ? bytes : 1);
    if (!c)
        return fail(err, cap, CLF_ERR_OUT_OF_MEMORY, "%sout of memory for a constant of %lld bytes made from shapes",
                    "", (long long)bytes);
    switch ((clf__const_gen)from->gen.kind) {
    case CLF__GEN_CAUSAL: {
        /* [.., sq, sk], the leading extents 1 */
        const int64_t sq = n->shape[n->rank - 2], sk = n->shape[n->rank - 1];
        for (int64_t i = 0; i < sq; i++)
            for (int64_t j = 0; j < sk; j++)
                c[i * sk + j] = j <= i + sk - sq;
        break;
    }
    case CLF__GEN_SPLAT:
        for (int64_t i = 0; i < numel; i++)
            memcpy(c + (size_t)i * size, from->gen.splat, size);
        break;
    case CLF__GEN_IOTA: {
        /* The index on axis a of element i is (i / inner) % extent; axis
         * -1: i itself. */
        int64_t inner = 1;
        for (int d = from->gen.axis + 1; from->gen.axis >= 0 && d < n->rank; d++)
            inner *= n->shape[d];
        const int64_t extent = from->gen.axis < 0 ? numel : n->shape[from->gen.axis];
        for (int64_t i = 0; i < numel; i++)
            clf__dtype_table[n->dtype].put_i64(c, i, i / inner % extent);
        break;
    }
    case CLF__GEN_PREFIX: {
        /* n is [outer.., extent, inner..], the table [outer.., rows,
         * inner..]: each outer index takes the first extent rows. */
        const int a = from->gen.axis;
        const int64_t extent = n->shape[a];
        if (extent > from->gen.rows) {
            clf__free(c);
            snprintf(err, cap, "a table of %lld rows cannot give %lld", (long long)from->gen.rows, (long long)extent);
            return CLF_ERR_SHAPE;
        }
        int64_t outer = 1, inner = 1;
        for (int d = 0; d < a; d++)
            outer *= n->shape[d];
        for (int d = a + 1; d < n->rank; d++)
            inner *= n->shape[d];
        const size_t run = (size_t)(extent * inner) * size;
        for (int64_t o = 0; o < outer; o++)
            memcpy(c + (size_t)o * run, (const uint8_t *)from->gen.table + (size_t)(o * from->gen.rows * inner) * size,
                   run);
        break;
    }
    case CLF__GEN_COUNT: {
        /* an f32 scalar */
        const clf__node *of = &s->nodes[from->gen.node];
        double count = 1;
        for (int d = 0; d < of->rank; d++)
            if (from->gen.mask >> d & 1)
                count *= (double)of->shape[d];
        count = count > from->gen.minus ? count - from->gen.minus : 0.0;
        const float f = (float)count;
        memcpy(c, &f, sizeof f);
        n->attr.constant.scalar = (double)f;
        break;
    }
    case CLF__GEN_NONE:
        break;
    }
    n->data = c;
    n->borrowed = false;
    return CLF_OK;
}

static char *dup_str(const char *s)
{
    size_t len = strlen(s);
    char *c = clf__malloc(len + 1);
    if (c)
        memcpy(c, s, len + 1);
    return c;
}

clf__graph_regen *clf__graph_regen_new(clf_status (*make)(void *, const int64_t *, clf_graph **, char *, size_t),
                                       void (*release)(void *), void *state)
{
    clf__graph_regen *r = clf__calloc(1, sizeof *r);
    if (r && pthread_mutex_init(&r->lock, NULL) != 0) {
        clf__free(r);
        r = NULL;
    }
    if (r) {
        r->make = make;
        r->release = release;
        r->state = state;
        r->refs = 1;
    }
    return r;
}

void clf__graph_regen_retain(clf__graph_regen *r)
{
    if (r)
        __atomic_add_fetch(&r->refs, 1, __ATOMIC_RELAXED);
}

void clf__graph_regen_release(clf__graph_regen *r)
{
    if (r && __atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        r->release(r->state);
        pthread_mutex_destroy(&r->lock);
        clf__free(r);
    }
}

clf_status clf__graph_make_symbolic(clf_graph *g, size_t nsyms, const char *const *names, const int64_t *lo,
                                    const int64_t *hi, const char *const (*dims)[CLF_MAX_RANK],
                                    clf__graph_regen *regen, char *err, size_t cap)
{
    for (size_t i = 0; i < nsyms; i++) {
        clf_dim(g, names[i], lo[i], hi[i]);
        if (g->status != CLF_OK)
            return fail(err, cap, g->status, "%s", g->message, 0);
    }
    const size_t nio = g->ninputs + g->noutputs;
    for (size_t t = 0; t < nio; t++) {
        clf__node *n = &g->nodes[t < g->ninputs ? g->inputs[t] : g->outputs[t - g->ninputs].node];
        for (int d = 0; d < n->rank; d++) {
            for (size_t i = 0; dims[t][d] && i < nsyms; i++) {
                if (strcmp(dims[t][d], names[i]) != 0)
                    continue;
                if (n->shape[d] != g->syms[i].rep) {
                    snprintf(err, cap, "axis %d of '%s' is %lld at the stand-in sizes, not %s's %lld", d,
                             t < g->ninputs ? n->name : g->outputs[t - g->ninputs].name, (long long)n->shape[d],
                             names[i], (long long)g->syms[i].rep);
                    return CLF_ERR_SHAPE;
                }
                /* An output is marked for the queries only; its node may be
                 * an input too, already marked. */
                n->sym[d] = (uint8_t)(i + 1);
            }
        }
    }
    g->regen = regen;
    return CLF_OK;
}

clf_status clf__graph_specialise(const clf_graph *g, const int64_t *values, bool own_data, clf_graph **out,
                                 char *err, size_t cap)
{
    *out = NULL;
    if (g->regen && values && !__atomic_load_n(&g->regen->by_nodes, __ATOMIC_ACQUIRE))
        return g->regen->make(g->regen->state, values, out, err, cap);
    if (g->regen && values)
        return clf__graph_specialise_checked(g, values, own_data, out, err, cap);
    return clf__graph_specialise_nodes(g, values, own_data, out, err, cap);
}

clf_status clf__graph_specialise_nodes(const clf_graph *g, const int64_t *values, bool own_data, clf_graph **out,
                                       char *err, size_t cap)
{
    *out = NULL;
    /* The symbols' sizes and the derived dimensions'. */
    int64_t all[CLF__MAX_SYMS];
    if (values) {
        memcpy(all, values, g->nsyms * sizeof *all);
        if (!clf__graph_derive(g, all, err, cap))
            return CLF_ERR_SHAPE;
        values = all;
    }
    clf_graph *s = clf_graph_create();
    if (!s)
        return fail(err, cap, CLF_ERR_OUT_OF_MEMORY, "%sout of memory", "", 0);
    clf_status st = CLF_ERR_OUT_OF_MEMORY;
    s->nodes = clf__calloc(g->nnodes ? g->nnodes : 1, sizeof *s->nodes);
    s->inputs = clf__calloc(g->ninputs ? g->ninputs : 1, sizeof *s->inputs);
    s->outputs = clf__calloc(g->noutputs ? g->noutputs : 1, sizeof *s->outputs);
    if (!s->nodes || !s->inputs || !s->outputs)
        goto oom;
    s->cap_nodes = g->nnodes;
    s->cap_inputs = g->ninputs;
    s->cap_outputs = g->noutputs;
    for (size_t i = 0; i < g->nnodes; i++) {
        const clf__node *from = &g->nodes[i];
        clf__node *n = &s->nodes[i];
        *n = *from;
        n->inputs = NULL;
        n->name = NULL;
        n->data = NULL;
        n->borrowed = false;
        s->nnodes = i + 1;
        double numel = 1;
        for (int d = 0; d < n->rank; d++) {
            if (from->sym[d] && values)
                n->shape[d] = values[from->sym[d] - 1];
            numel *= (double)n->shape[d];
        }
        if (n->op == CLF__OP_CACHE_WRITE && values) {
            /* Its length at these sizes, and S <= len <= the capacity. */
            const int ls = from->attr.cache.len_sym;
            const int64_t len = ls ? values[ls - 1] : from->attr.cache.len;
            const int64_t x = s->nodes[from->inputs[1]].shape[from->attr.cache.axis];
            if (len < x || len > n->shape[from->attr.cache.axis]) {
                snprintf(err, cap, "cache write %zu: its length %s%s%lld is outside %lld (the new entries) to %lld "
                         "(the capacity)",
                         i, ls ? g->syms[ls - 1].name : "", ls ? " = " : "", (long long)len, (long long)x,
                         (long long)n->shape[from->attr.cache.axis]);
                st = CLF_ERR_SHAPE;
                goto out;
            }
            n->attr.cache.len = len;
            n->attr.cache.len_sym = 0;
        }
        if (values) {
            memset(n->sym, 0, sizeof n->sym);
            /* A causal mask keeps its mark: the planner then knows its
             * pattern without reading S x S bytes per size. */
            if (n->gen.kind != CLF__GEN_CAUSAL)
                n->gen.kind = CLF__GEN_NONE;
        }
        if (numel * (double)clf_dtype_size(n->dtype) > 9.0e18) {
            st = fail(err, cap, CLF_ERR_SHAPE, "%snode %lld would be too large at these sizes", "", (long long)i);
            goto out;
        }
        if (from->ninputs) {
            n->inputs = clf__malloc((size_t)from->ninputs * sizeof *n->inputs);
            if (!n->inputs)
                goto oom;
            memcpy(n->inputs, from->inputs, (size_t)from->ninputs * sizeof *n->inputs);
        }
        if (from->name && !(n->name = dup_str(from->name)))
            goto oom;
        if (from->gen.kind != CLF__GEN_NONE && values) {
            st = clf__graph_generate_const(s, from, n, err, cap);
            if (st != CLF_OK)
                goto out;
        } else if (from->data && own_data && !(from->borrowed && g->regen)) {
            size_t bytes = (size_t)clf__node_numel(n) * clf_dtype_size(n->dtype);
            if (!(n->data = clf__malloc(bytes ? bytes : 1)))
                goto oom;
            memcpy(n->data, from->data, bytes);
        } else if (from->data) {
            n->data = from->data;
            n->borrowed = true;
        }
    }
    if (!values && g->regen) {
        clf__graph_regen_retain(g->regen);
        s->regen = g->regen;
    }
    if (!values && g->nsyms) {
        if (!(s->syms = clf__calloc(CLF__MAX_SYMS, sizeof *s->syms)))
            goto oom;
        for (size_t i = 0; i < g->nsyms + g->nderived; i++) {
            s->syms[i] = g->syms[i];
            if (!(s->syms[i].name = dup_str(g->syms[i].name)))
                goto oom;
            if (i < g->nsyms)
                s->nsyms = i + 1;
            else
                s->nderived = i + 1 - g->nsyms;
        }
    }
    memcpy(s->inputs, g->inputs, g->ninputs * sizeof *s->inputs);
    s->ninputs = g->ninputs;
    for (size_t i = 0; i < g->noutputs; i++) {
        s->outputs[i].node = g->outputs[i].node;
        if (!(s->outputs[i].name = dup_str(g->outputs[i].name)))
            goto oom;
        s->noutputs = i + 1;
    }
    *out = s;
    return CLF_OK;
oom:
    st = fail(err, cap, CLF_ERR_OUT_OF_MEMORY, "%sout of memory specialising the graph", "", 0);
out:
    clf_graph_destroy(&s);
    return st;
}

static clf_status bind_one(const clf_graph *g, const clf__node *n, const char *what, const int64_t *shape,
                           int64_t *values, bool *known, const char **known_from, char *err, size_t cap);

clf_status clf__graph_bind_dims(const clf_graph *g, uint32_t node, const char *what, const int64_t *shape,
                                int64_t *values, bool *known, const char **known_from, char *err, size_t cap)
{
    return bind_one(g, &g->nodes[node], what, shape, values, known, known_from, err, cap);
}

static clf_status bind_one(const clf_graph *g, const clf__node *n, const char *what, const int64_t *shape,
                           int64_t *values, bool *known, const char **known_from, char *err, size_t cap)
{
    for (int d = 0; d < n->rank; d++) {
        int64_t v = shape[d];
        int s = n->sym[d];
        if (!s) {
            if (v != n->shape[d]) {
                snprintf(err, cap, "%s: axis %d is %" PRId64 ", but it is declared %" PRId64, what, d, v,
                         n->shape[d]);
                return CLF_ERR_SHAPE;
            }
            continue;
        }
        const clf__dim_sym *S = &g->syms[s - 1];
        if (v < S->lo || (S->hi && v > S->hi)) {
            char hi[32] = "";
            if (S->hi)
                snprintf(hi, sizeof hi, "%" PRId64, S->hi);
            snprintf(err, cap, "%s: axis %d is %s = %" PRId64 ", outside its bounds %" PRId64 "..%s", what, d, S->name,
                     v, S->lo, S->hi ? hi : " (no upper bound)");
            return CLF_ERR_SHAPE;
        }
        if (known[s - 1] && values[s - 1] != v) {
            snprintf(err, cap, "%s: axis %d is %s = %" PRId64 ", but %s gives %s = %" PRId64, what, d, S->name, v,
                     known_from[s - 1], S->name, values[s - 1]);
            return CLF_ERR_SHAPE;
        }
        values[s - 1] = v;
        if (!known[s - 1]) {
            known[s - 1] = true;
            known_from[s - 1] = what;
        }
    }
    return CLF_OK;
}

bool clf__graph_names_dim(const clf_graph *g, const char *name)
{
    if (!name)
        return false;
    for (size_t k = 0; k < g->ninputs; k++)
        if (!strcmp(g->nodes[g->inputs[k]].name, name))
            return false;
    for (size_t k = 0; k < g->nsyms; k++)
        if (!strcmp(g->syms[k].name, name))
            return true;
    return false;
}

clf_status clf__graph_sizes_of(const clf_graph *g, size_t ninputs, const char *const *names,
                               const int64_t *const *shapes, int64_t *values, char *err, size_t cap)
{
    bool known[CLF__MAX_SYMS] = {false};
    const char *from[CLF__MAX_SYMS] = {NULL};
    char what[CLF__MAX_SYMS][80];
    int nwhat = 0;
    for (size_t i = 0; i < ninputs; i++) {
        if (!names[i])
            continue;
        const clf__node *n = NULL;
        uint32_t id = 0;
        for (size_t k = 0; k < g->ninputs && !n; k++)
            if (!strcmp(g->nodes[g->inputs[k]].name, names[i]))
                n = &g->nodes[id = g->inputs[k]];
        if (!n) {
            /* A dimension given by name: its size in shape[0]. Other names
             * are the run's to check. */
            int sym = 0;
            for (size_t k = 0; k < g->nsyms && !sym; k++)
                if (!strcmp(g->syms[k].name, names[i]))
                    sym = (int)k + 1;
            if (!sym)
                continue;
            if (!shapes[i]) {
                snprintf(err, cap, "dimension '%s' is bound without its size", names[i]);
                return CLF_ERR_INVALID_ARGUMENT;
            }
            clf__node one = {.rank = 1, .sym = {(uint8_t)sym}, .shape = {g->syms[sym - 1].rep}};
            char w[80];
            snprintf(w, sizeof w, "dimension '%s'", names[i]);
            const char *wp = "a dimension";
            if (nwhat < CLF__MAX_SYMS) {
                snprintf(what[nwhat], sizeof what[nwhat], "%s", w);
                wp = what[nwhat++];
            }
            clf_status st = bind_one(g, &one, wp, shapes[i], values, known, from, err, cap);
            if (st != CLF_OK)
                return st;
            continue;
        }
        if (n->rank > 0 && !shapes[i]) {
            bool symbolic = has_syms(n);
            if (symbolic) {
                snprintf(err, cap, "input '%s' has symbolic dimensions: its shape is not given", names[i]);
                return CLF_ERR_INVALID_ARGUMENT;
            }
            continue;
        }
        /* Messages name the first input giving each size. */
        const char *w = "an input";
        if (nwhat < CLF__MAX_SYMS) {
            snprintf(what[nwhat], sizeof what[nwhat], "input '%s'", names[i]);
            w = what[nwhat++];
        }
        clf_status st = clf__graph_bind_dims(g, id, w, shapes[i], values, known, from, err, cap);
        if (st != CLF_OK)
            return st;
    }
    for (size_t s = 0; s < g->nsyms; s++)
        if (!known[s]) {
            snprintf(err, cap,
                     "no input bound gives the size of symbolic dimension %s (bind it by its name, its size in "
                     "shape[0])",
                     g->syms[s].name);
            return CLF_ERR_INVALID_ARGUMENT;
        }
    return CLF_OK;
}
