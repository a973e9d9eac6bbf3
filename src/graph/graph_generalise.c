/* Making a graph symbolic node by node from copies of it at other sizes
 * (graph_generalise.h). */
#include "graph_generalise.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "graph_symbols.h"
#include "util/alloc.h"
#include "util/log.h"

static bool say(char *why, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
    return false;
}

/* "seq=5 total=9" */
static const char *sizes_text(const clf_graph *g, const int64_t *values, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < g->nsyms && o + 1 < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%s=%" PRId64, i ? " " : "", g->syms[i].name, values[i]);
    return buf;
}

/* Which nodes an output depends on (1) in g, whose nodes' inputs come
 * before them. NULL when out of memory. */
static uint8_t *live_nodes(const clf_graph *g)
{
    uint8_t *live = clf__calloc(g->nnodes ? g->nnodes : 1, 1);
    if (!live)
        return NULL;
    for (size_t o = 0; o < g->noutputs; o++)
        live[g->outputs[o].node] = 1;
    for (size_t i = g->nnodes; i-- > 0;)
        for (int k = 0; live[i] && k < g->nodes[i].ninputs; k++)
            live[g->nodes[i].inputs[k]] = 1;
    return live;
}

/* Whether h has g's nodes, inputs and outputs: the same ops, dtypes,
 * ranks and edges. */
static bool same_nodes(const clf_graph *g, const clf_graph *h, char *why, size_t cap)
{
    if (h->nnodes != g->nnodes || h->ninputs != g->ninputs || h->noutputs != g->noutputs)
        return say(why, cap, "%zu nodes at one size, %zu at another", g->nnodes, h->nnodes);
    for (size_t o = 0; o < g->noutputs; o++)
        if (h->outputs[o].node != g->outputs[o].node)
            return say(why, cap, "output %zu is node %u at one size, %u at another", o, g->outputs[o].node,
                       h->outputs[o].node);
    for (size_t i = 0; i < g->nnodes; i++) {
        const clf__node *a = &g->nodes[i], *b = &h->nodes[i];
        if (a->op != b->op || a->dtype != b->dtype || a->rank != b->rank || a->ninputs != b->ninputs ||
            (a->ninputs && memcmp(a->inputs, b->inputs, (size_t)a->ninputs * sizeof *a->inputs)))
            return say(why, cap, "node %zu is %s at one size, %s at another (or its inputs differ)", i,
                       clf__node_op_name(a), clf__node_op_name(b));
    }
    return true;
}

/* 1 + the one symbol of g whose sizes are ea at A and eb at B; 0 when none
 * or several are. */
static int symbol_of(const clf_graph *g, const clf__graph_at *A, const clf__graph_at *B, int64_t ea, int64_t eb)
{
    int found = 0;
    for (size_t s = 0; s < g->nsyms; s++)
        if (A->values[s] == ea && B->values[s] == eb) {
            if (found)
                return 0;
            found = (int)s + 1;
        }
    return found;
}

/* Whether r is a candidate better than *best (of *n as good so far):
 * rules without a constant term come first (two sizes fit k * s + c to
 * nearly anything); *n counts the candidates as good as the best. */
static void consider(const clf__dim_sym *r, clf__dim_sym *best, int *n)
{
    const int rank = r->c != 0, best_rank = best->c != 0;
    if (!*n || rank < best_rank) {
        *best = *r;
        *n = 1;
    } else if (rank == best_rank) {
        ++*n;
    }
}

/* The rule a derived dimension of sizes ea at A and eb at B follows, of k
 * * s + c, k * s * t and s - t + c (clf__dim_rule), into *rule: the one
 * without a constant term, else the one with; false when none or several
 * as good fit (the checks would tell them apart, but a guess is not worth
 * an import's time). */
static bool rule_for(const clf_graph *g, const int64_t *va, const int64_t *vb, int64_t ea, int64_t eb,
                     clf__dim_sym *rule)
{
    int n = 0;
    for (size_t a = 0; a < g->nsyms; a++) {
        const int64_t da = vb[a] - va[a];
        if (da > 0 && (eb - ea) % da == 0 && (eb - ea) / da >= 1) {
            const int64_t k = (eb - ea) / da;
            consider(&(clf__dim_sym){.rule = CLF__DIM_SCALED, .a = (uint8_t)a, .k = k, .c = ea - k * va[a]}, rule,
                     &n);
        }
        for (size_t b = 0; b < g->nsyms; b++) {
            if (b == a)
                continue;
            const int64_t pa = va[a] * va[b];
            if (a < b && pa > 0 && ea % pa == 0 && eb == ea / pa * vb[a] * vb[b])
                consider(&(clf__dim_sym){.rule = CLF__DIM_PRODUCT, .a = (uint8_t)a, .b = (uint8_t)b, .k = ea / pa},
                         rule, &n);
            const int64_t c = ea - (va[a] - va[b]);
            if (eb == vb[a] - vb[b] + c)
                consider(&(clf__dim_sym){.rule = CLF__DIM_DIFFERENCE, .a = (uint8_t)a, .b = (uint8_t)b, .c = c}, rule,
                         &n);
        }
    }
    return n == 1;
}

/* 1 + the index of g's derived dimension of sizes ea at A and eb at B,
 * added where none is; 0 where no one rule gives them (or out of room). */
static int derived_of(clf_graph *g, const clf__graph_at *A, const clf__graph_at *B, int64_t ea, int64_t eb)
{
    int64_t va[CLF__MAX_SYMS], vb[CLF__MAX_SYMS];
    char err[160];
    memcpy(va, A->values, g->nsyms * sizeof *va);
    memcpy(vb, B->values, g->nsyms * sizeof *vb);
    if (!clf__graph_derive(g, va, err, sizeof err) || !clf__graph_derive(g, vb, err, sizeof err))
        return 0;
    for (size_t i = g->nsyms; i < g->nsyms + g->nderived; i++)
        if (va[i] == ea && vb[i] == eb)
            return (int)i + 1;
    clf__dim_sym r;
    if (!rule_for(g, va, vb, ea, eb, &r) || g->nsyms + g->nderived == CLF__MAX_SYMS)
        return 0;
    const char *a = g->syms[r.a].name, *b = g->syms[r.b].name;
    /* Its name, for messages and queries: "4*S", "T-S", "S+1". */
    char name[160], k[24] = "", c[24] = "";
    if (r.k != 1 && r.rule != CLF__DIM_DIFFERENCE)
        snprintf(k, sizeof k, "%" PRId64 "*", r.k);
    if (r.c)
        snprintf(c, sizeof c, "%+" PRId64, r.c);
    const char *op = r.rule == CLF__DIM_PRODUCT ? "*" : r.rule == CLF__DIM_DIFFERENCE ? "-" : "";
    snprintf(name, sizeof name, "%s%s%s%s%s", k, a, op, r.rule == CLF__DIM_SCALED ? "" : b, c);
    int64_t rep[CLF__MAX_SYMS];
    for (size_t s = 0; s < g->nsyms; s++)
        rep[s] = g->syms[s].rep;
    size_t len = strlen(name) + 1;
    if (!(r.name = clf__malloc(len)))
        return 0;
    memcpy(r.name, name, len);
    r.rep = clf__graph_dim_value(&r, rep);
    g->syms[g->nsyms + g->nderived] = r;
    return (int)(g->nsyms + g->nderived++) + 1;
}

/* 1 + the index of g's one symbol of sizes ea at A and eb at B, else
 * (where derive) of its derived dimension of those sizes (derived_of); 0
 * where there is none. */
static int dim_for(clf_graph *g, const clf__graph_at *A, const clf__graph_at *B, int64_t ea, int64_t eb, bool derive)
{
    const int s = symbol_of(g, A, B, ea, eb);
    return s || !derive ? s : derived_of(g, A, B, ea, eb);
}

/* The bytes of a constant node's data. */
static size_t const_bytes(const clf__node *n) { return (size_t)clf__node_numel(n) * clf_dtype_size(n->dtype); }

static bool same_shape(const clf__node *a, const clf__node *b)
{
    return !memcmp(a->shape, b->shape, (size_t)a->rank * sizeof a->shape[0]);
}

/* Whether the generator cand, made at c's shape in graph at, gives c's
 * data. */
static bool generates(const clf_graph *at, const clf__node *c, const clf__node *cand)
{
    clf__node n = *c, from = *c;
    n.data = NULL;
    from.gen = cand->gen;
    char err[120];
    if (clf__graph_generate_const(at, &from, &n, err, sizeof err) != CLF_OK)
        return false;
    const bool same = !memcmp(n.data, c->data, const_bytes(c));
    clf__free(n.data);
    return same;
}

/* The PREFIX generator of constant n (g's, its extents marked) from the
 * same constant t of the graph at the upper bounds: n's one symbolic axis
 * cut from t; false where n has not one or t does not fit. */
static bool prefix_of(const clf__node *n, const clf__node *t, clf__node *cand)
{
    int axis = -1;
    for (int d = 0; d < n->rank; d++)
        if (n->sym[d]) {
            if (axis >= 0)
                return false;
            axis = d;
        }
    if (axis < 0 || t->rank != n->rank || !t->data)
        return false;
    for (int d = 0; d < n->rank; d++)
        if (d != axis && t->shape[d] != n->shape[d])
            return false;
    cand->gen.kind = CLF__GEN_PREFIX;
    cand->gen.axis = axis;
    cand->gen.table = t->data;
    cand->gen.rows = t->shape[axis];
    return true;
}

/* Finds the generator that gives constant i at A and at B, into g's node;
 * false when none does. */
static bool fit_constant(clf_graph *g, size_t i, const clf__graph_at *A, const clf__graph_at *B,
                         const clf__graph_at *top)
{
    const clf__node *a = &A->g->nodes[i], *b = &B->g->nodes[i];
    clf__node cand = {0};
    /* One value everywhere (ConstantOfShape, an Expand of a scalar). */
    if (const_bytes(a) && clf_dtype_size(a->dtype) <= sizeof cand.gen.splat) {
        cand.gen.kind = CLF__GEN_SPLAT;
        memcpy(cand.gen.splat, a->data, clf_dtype_size(a->dtype));
        if (generates(A->g, a, &cand) && generates(B->g, b, &cand))
            goto found;
    }
    memset(&cand.gen, 0, sizeof cand.gen);
    /* Positions (Range(0, n)), on the last axis first, then in C order
     * (-1: a Range over a flattened batch * seq). */
    if (a->dtype != CLF_BOOL) {
        for (int d = a->rank - 1; d >= -1; d--) {
            cand.gen.kind = CLF__GEN_IOTA;
            cand.gen.axis = d;
            if (generates(A->g, a, &cand) && generates(B->g, b, &cand))
                goto found;
        }
    }
    memset(&cand.gen, 0, sizeof cand.gen);
    /* A causal mask, [.., sq, sk] with the leading extents 1. */
    if (a->dtype == CLF_BOOL && a->rank >= 2 && clf__node_numel(a) == a->shape[a->rank - 2] * a->shape[a->rank - 1]) {
        cand.gen.kind = CLF__GEN_CAUSAL;
        if (generates(A->g, a, &cand) && generates(B->g, b, &cand))
            goto found;
    }
    memset(&cand.gen, 0, sizeof cand.gen);
    /* Rows of a table that the sizes cut: positions 0..n-1 looked up. */
    if (top && prefix_of(&g->nodes[i], &top->g->nodes[i], &cand) && generates(A->g, a, &cand) &&
        generates(B->g, b, &cand))
        goto found;
    return false;
found:
    g->nodes[i].gen = cand.gen;
    return true;
}

/* Marks g's live nodes from A and B (see clf__graph_generalise). */
static bool fit(clf_graph *g, const uint8_t *live, const clf__graph_at *A, const clf__graph_at *B,
                const clf__graph_at *top, bool *wants_table, char *why, size_t cap)
{
    char sa[160], sb[160];
    for (size_t i = 0; i < g->nnodes; i++) {
        if (!live[i])
            continue;
        clf__node *n = &g->nodes[i];
        const clf__node *a = &A->g->nodes[i], *b = &B->g->nodes[i];
        for (int d = 0; d < n->rank; d++) {
            if (a->shape[d] == b->shape[d])
                continue;
            /* An input's sizes are bound by runs: symbols only. */
            const int s = dim_for(g, A, B, a->shape[d], b->shape[d], n->op != CLF__OP_INPUT);
            if (!s || (n->sym[d] && n->sym[d] != s))
                return say(why, cap, "node %zu (%s) axis %d is %" PRId64 " at %s and %" PRId64 " at %s: %s", i,
                           clf__node_op_name(n), d, a->shape[d], sizes_text(g, A->values, sa, sizeof sa),
                           b->shape[d], sizes_text(g, B->values, sb, sizeof sb),
                           s ? "another dimension's size" : "no one dimension's size");
            n->sym[d] = (uint8_t)s;
        }
        if (n->op == CLF__OP_CACHE_WRITE) {
            if (a->attr.cache.axis != b->attr.cache.axis)
                return say(why, cap, "cache write %zu writes another axis at another size", i);
            if (a->attr.cache.len != b->attr.cache.len) {
                const int s = dim_for(g, A, B, a->attr.cache.len, b->attr.cache.len, true);
                if (!s)
                    return say(why, cap, "cache write %zu: its length is %" PRId64 " at %s and %" PRId64
                                         " at %s, no one dimension's size",
                               i, a->attr.cache.len, sizes_text(g, A->values, sa, sizeof sa), b->attr.cache.len,
                               sizes_text(g, B->values, sb, sizeof sb));
                n->attr.cache.len_sym = (uint8_t)s;
            }
        } else if (memcmp(&a->attr, &b->attr, sizeof a->attr)) {
            return say(why, cap, "node %zu (%s): its attributes change with the sizes", i, clf__node_op_name(n));
        }
        if (n->op == CLF__OP_CONSTANT && n->gen.kind == CLF__GEN_NONE &&
            (!same_shape(a, b) || memcmp(a->data, b->data, const_bytes(a))) && !fit_constant(g, i, A, B, top)) {
            if (!top && wants_table)
                *wants_table = true;
            return say(why, cap, "constant node %zu (%s, rank %d) changes with the sizes in a way no generator gives",
                       i, clf_dtype_name(n->dtype), n->rank);
        }
    }
    return true;
}

/* Whether g specialised at values has h's live nodes (h made there). */
static bool agrees_at(const clf_graph *g, const uint8_t *live, const clf_graph *h, const int64_t *values, char *why,
                      size_t cap)
{
    char err[320], sz[160];
    clf_graph *s = NULL;
    clf_status st = clf__graph_specialise_nodes(g, values, false, &s, err, sizeof err);
    if (st != CLF_OK)
        return say(why, cap, "at %s: %s", sizes_text(g, values, sz, sizeof sz), err);
    bool ok = true;
    for (size_t i = 0; ok && i < g->nnodes; i++) {
        if (!live[i])
            continue;
        const clf__node *x = &s->nodes[i], *y = &h->nodes[i];
        const char *what = NULL;
        if (!same_shape(x, y))
            what = "shape";
        else if (x->op == CLF__OP_CACHE_WRITE ? x->attr.cache.len != y->attr.cache.len
                                               : memcmp(&x->attr, &y->attr, sizeof x->attr) != 0)
            what = "attributes";
        else if (x->op == CLF__OP_CONSTANT && memcmp(x->data, y->data, const_bytes(x)))
            what = "values";
        if (what)
            ok = say(why, cap, "at %s, node %zu (%s): its %s differ from the model's made there",
                     sizes_text(g, values, sz, sizeof sz), i, clf__node_op_name(x), what);
    }
    clf_graph_destroy(&s);
    return ok;
}

bool clf__graph_generalise(clf_graph *g, const clf__graph_at *at, size_t n, const clf__graph_at *top,
                           bool *wants_table, char *why, size_t cap)
{
    if (wants_table)
        *wants_table = false;
    if (n < 2)
        return say(why, cap, "two graphs at other sizes are needed");
    if (!g->nsyms)
        return say(why, cap, "the graph has no symbolic dimensions");
    for (size_t k = 0; k < n; k++)
        if (!same_nodes(g, at[k].g, why, cap))
            return false;
    if (top && !same_nodes(g, top->g, why, cap))
        return false;
    uint8_t *live = live_nodes(g);
    clf__node *saved = clf__malloc((g->nnodes ? g->nnodes : 1) * sizeof *saved);
    int64_t rep[CLF__MAX_SYMS];
    if (!live || !saved) {
        clf__free(live);
        clf__free(saved);
        return say(why, cap, "out of memory");
    }
    memcpy(saved, g->nodes, g->nnodes * sizeof *saved);
    const size_t nderived = g->nderived;
    for (size_t s = 0; s < g->nsyms; s++)
        rep[s] = g->syms[s].rep;
    bool ok = fit(g, live, &at[0], &at[1], top, wants_table, why, cap) && agrees_at(g, live, g, rep, why, cap);
    for (size_t k = 0; ok && k < n; k++)
        ok = agrees_at(g, live, at[k].g, at[k].values, why, cap);
    if (!ok) {
        memcpy(g->nodes, saved, g->nnodes * sizeof *saved);
        for (size_t i = g->nsyms + nderived; i < g->nsyms + g->nderived; i++) {
            clf__free(g->syms[i].name);
            memset(&g->syms[i], 0, sizeof g->syms[i]);
        }
        g->nderived = nderived;
    }
    clf__free(saved);
    clf__free(live);
    return ok;
}

/* Whether each PREFIX table of g has the rows its constant takes at the
 * sizes values (the symbols'; the derived dimensions' follow). */
static bool tables_cover(const clf_graph *g, const int64_t *values)
{
    int64_t all[CLF__MAX_SYMS];
    char err[160];
    memcpy(all, values, g->nsyms * sizeof *all);
    if (!clf__graph_derive(g, all, err, sizeof err))
        return false;
    for (size_t i = 0; i < g->nnodes; i++) {
        const clf__node *n = &g->nodes[i];
        if (n->gen.kind == CLF__GEN_PREFIX && n->sym[n->gen.axis] && all[n->sym[n->gen.axis] - 1] > n->gen.rows)
            return false;
    }
    return true;
}

/* Whether every size of values is within the regen's upto. */
static bool checked(const clf_graph *g, const int64_t *values)
{
    for (size_t s = 0; s < g->nsyms; s++)
        if (values[s] > g->regen->upto[s])
            return false;
    return true;
}

clf_status clf__graph_specialise_checked(const clf_graph *g, const int64_t *values, bool own_data, clf_graph **out,
                                         char *err, size_t cap)
{
    clf__graph_regen *r = g->regen;
    char why[400] = "", sz[160];
    clf_graph *made = NULL; /* the regen's graph at values, where the check made it */
    pthread_mutex_lock(&r->lock);
    bool nodes = r->by_nodes && checked(g, values);
    if (r->by_nodes && !nodes) {
        /* The sizes to check at: past upto, twice upto (or the size asked
         * for, if more) within the bounds; where the tables lack the rows
         * or the regen cannot make the graph there (a cache's capacity),
         * the sizes asked for. */
        int64_t v[2][CLF__MAX_SYMS];
        for (size_t s = 0; s < g->nsyms; s++) {
            v[1][s] = v[0][s] = values[s];
            if (values[s] > r->upto[s]) {
                const int64_t twice = 2 * r->upto[s] > values[s] ? 2 * r->upto[s] : values[s];
                v[0][s] = g->syms[s].hi && twice > g->syms[s].hi ? g->syms[s].hi : twice;
            }
        }
        for (int t = 0; t < 2; t++) {
            clf_graph *h = NULL;
            char merr[320];
            if ((t == 1 && !memcmp(v[0], v[1], g->nsyms * sizeof v[0][0])) || !tables_cover(g, v[t]) ||
                r->make(r->state, v[t], &h, merr, sizeof merr) != CLF_OK)
                continue;
            uint8_t *live = live_nodes(g);
            if (live && same_nodes(g, h, why, sizeof why) && agrees_at(g, live, h, v[t], why, sizeof why)) {
                for (size_t s = 0; s < g->nsyms; s++)
                    r->upto[s] = v[t][s] > r->upto[s] ? v[t][s] : r->upto[s];
                nodes = true;
                clf__log(CLF__LOG_CACHE, "symbolic sizes: made node by node up to %s (checked against an import)",
                         sizes_text(g, v[t], sz, sizeof sz));
            } else if (live) {
                __atomic_store_n(&r->by_nodes, false, __ATOMIC_RELEASE);
                clf__log(CLF__LOG_CACHE, "symbolic sizes: the model is imported again at each new size from now: %s",
                         why);
                if (t == 1) /* made at the sizes asked for: the result */
                    made = h, h = NULL;
            }
            clf__free(live);
            clf_graph_destroy(&h);
            break;
        }
    }
    pthread_mutex_unlock(&r->lock);
    if (nodes)
        return clf__graph_specialise_nodes(g, values, own_data, out, err, cap);
    if (made) {
        *out = made;
        return CLF_OK;
    }
    return r->make(r->state, values, out, err, cap);
}
