/* clf_cache_write: new entries written into a cache input in place (a KV
 * cache), and the rule of its length at each size. */
#include <inttypes.h>
#include <string.h>

#include "graph_builder.h"
#include "graph_symbols.h"

clf_tensor clf_cache_write(clf_graph *g, clf_tensor cache, clf_tensor x, int axis, int64_t len)
{
    static const char call[] = "clf_cache_write";
    if (!clf__graph_usable(g))
        return CLF_TENSOR_INVALID;
    const clf__node *c = clf__graph_arg(g, call, "cache", cache);
    const clf__node *in = c ? clf__graph_arg(g, call, "x", x) : NULL;
    if (!in)
        return CLF_TENSOR_INVALID;
    if (c->op != CLF__OP_INPUT) {
        clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call,
                        "cache is a %s, not a graph input: the cache written in place is the caller's buffer",
                        clf__node_op_name(c));
        return CLF_TENSOR_INVALID;
    }
    if (in->dtype != c->dtype || in->rank != c->rank) {
        clf__graph_fail(g, in->dtype != c->dtype ? CLF_ERR_DTYPE : CLF_ERR_SHAPE, call,
                        "x is %s of rank %d; cache is %s of rank %d", clf_dtype_name(in->dtype), in->rank,
                        clf_dtype_name(c->dtype), c->rank);
        return CLF_TENSOR_INVALID;
    }
    int a = c->rank > 0 ? clf__graph_axis(axis, c->rank) : -1;
    if (a < 0) {
        clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call, "axis %d is out of range for rank %d", axis, c->rank);
        return CLF_TENSOR_INVALID;
    }
    for (int d = 0; d < c->rank; d++) {
        if (d != a && (in->shape[d] != c->shape[d] || in->sym[d] != c->sym[d])) {
            char sc[CLF__SHAPE_STR_CAP], sx[CLF__SHAPE_STR_CAP];
            clf__graph_fail(g, CLF_ERR_SHAPE, call, "x has shape %s, which differs from the cache's %s off axis %d",
                            clf__graph_shape_str(sx, sizeof sx, in->rank, in->shape),
                            clf__graph_shape_str(sc, sizeof sc, c->rank, c->shape), a);
            return CLF_TENSOR_INVALID;
        }
    }
    int64_t cap = c->shape[a];
    if (c->sym[a]) {
        clf__graph_fail(g, CLF_ERR_SHAPE, call,
                        "the cache's axis %d is symbolic %s: declare the cache with its capacity there", a,
                        clf__graph_sym_name(g, c->sym[a]));
        return CLF_TENSOR_INVALID;
    }
    for (size_t i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op == CLF__OP_CACHE_WRITE && g->nodes[i].inputs[0] == cache.node) {
            clf__graph_fail(g, CLF_ERR_INVALID_ARGUMENT, call, "input '%s' is written by cache write %zu already",
                            c->name, i);
            return CLF_TENSOR_INVALID;
        }
    int s = clf__graph_dim_token(g, len);
    int64_t at_len = s ? g->syms[s - 1].rep : len;
    if (s) {
        const clf__dim_sym *L = &g->syms[s - 1];
        if (L->hi == 0 || L->hi > cap) {
            clf__graph_fail(g, CLF_ERR_SHAPE, call,
                            "len is %s, whose upper bound %s%" PRId64 " exceeds the cache's capacity %" PRId64,
                            L->name, L->hi ? "" : "(none) ", L->hi, cap);
            return CLF_TENSOR_INVALID;
        }
    } else if (len < 0 || len > cap) {
        clf__graph_fail(g, CLF_ERR_SHAPE, call, "len %" PRId64 " is outside the cache's capacity 0..%" PRId64, len,
                        cap);
        return CLF_TENSOR_INVALID;
    }
    if (in->sym[a] && !s) {
        /* A fixed length after a symbolic number of new entries: S <= len
         * must hold at every size S may take. */
        const clf__dim_sym *S = &g->syms[in->sym[a] - 1];
        if (S->hi == 0 || S->hi > len) {
            clf__graph_fail(g, CLF_ERR_SHAPE, call,
                            "x has %s entries along axis %d, whose upper bound %s%" PRId64 " exceeds len %" PRId64,
                            S->name, a, S->hi ? "" : "(none) ", S->hi, len);
            return CLF_TENSOR_INVALID;
        }
    }
    if (in->shape[a] > at_len) {
        clf__graph_fail(g, CLF_ERR_SHAPE, call,
                        "x has %" PRId64 " entries along axis %d, more than the length %" PRId64 " after the write",
                        in->shape[a], a, at_len);
        return CLF_TENSOR_INVALID;
    }
    uint32_t ids[2] = {cache.node, x.node};
    clf__node n = {.op = CLF__OP_CACHE_WRITE, .dtype = c->dtype, .rank = c->rank, .ninputs = 2, .inputs = ids,
                   .attr.cache = {.axis = a, .len = at_len, .len_sym = (uint8_t)s}};
    memcpy(n.shape, c->shape, sizeof n.shape);
    return clf__graph_append(g, call, &n);
}
