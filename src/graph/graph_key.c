/* The canonical text of a graph (graph_key.h). Every field of clf__node is
 * written, and of the attribute union the member its op uses: a field this file forgets would let two
 * different graphs share a cached plan, so the size of the node is pinned
 * below and a new field fails the build until it is added here. */
#include "graph/graph_key.h"

#include <inttypes.h>
#include <string.h>

#include "util/sha256.h"

#if UINTPTR_MAX == UINT64_MAX
static_assert(sizeof(clf__node) == 312, "clf__node changed: write the new field in clf__graph_key");
static_assert(sizeof(clf__graph_output) == 16, "clf__graph_output changed: update clf__graph_key");
static_assert(sizeof(struct clf_graph) == 632, "clf_graph changed: write the new field in clf__graph_key");
#endif
static_assert(CLF__OP_COUNT == 52, "a new op: check that put_attr writes its attributes");

static uint64_t bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

/* " name=v0,v1,..." a field at a time (the kernel memo's keys write a
 * node's for every kernel of a new size). */
static void put_i64s(clf__strbuf *sb, const char *name, const int64_t *v, int n)
{
    clf__sb_putn(sb, " ", 1);
    clf__sb_puts(sb, name);
    for (int i = 0; i < n; i++) {
        clf__sb_putn(sb, i ? "," : "=", 1);
        clf__sb_put_i64(sb, v[i]);
    }
}

/* " name=v", without printf. */
static void put_int(clf__strbuf *sb, const char *name, long long v)
{
    clf__sb_putn(sb, " ", 1);
    clf__sb_puts(sb, name);
    clf__sb_putn(sb, "=", 1);
    clf__sb_put_i64(sb, v);
}

/* " name=<16 hexadecimal digits>" (name NULL: the digits alone). */
static void put_hex64(clf__strbuf *sb, const char *name, uint64_t v)
{
    if (name) {
        clf__sb_putn(sb, " ", 1);
        clf__sb_puts(sb, name);
        clf__sb_putn(sb, "=", 1);
    }
    clf__sb_put_hex(sb, v, 16);
}

static void put_str(clf__strbuf *sb, const char *name, const char *s)
{
    /* Length-prefixed, so that any bytes in a name are unambiguous. */
    clf__sb_printf(sb, " %s=%zu:", name, strlen(s));
    clf__sb_puts(sb, s);
}

/* The attributes of n's op (the union member its op uses). */
static void put_attr(clf__strbuf *sb, const clf__node *n, int rank)
{
    switch (n->op) {
    case CLF__OP_TRANSPOSE:
        clf__sb_puts(sb, " perm");
        for (int k = 0; k < rank; k++) {
            clf__sb_putn(sb, k ? "," : "=", 1);
            clf__sb_put_i64(sb, n->attr.transpose.perm[k]);
        }
        break;
    case CLF__OP_SLICE:
        put_i64s(sb, "start", n->attr.slice.start, rank);
        put_i64s(sb, "step", n->attr.slice.step, rank);
        break;
    case CLF__OP_CLIP:
        put_hex64(sb, "lo", bits(n->attr.clip.lo));
        put_hex64(sb, "hi", bits(n->attr.clip.hi));
        break;
    case CLF__OP_REDUCE:
        put_int(sb, "kind", (int)n->attr.reduce.kind);
        clf__sb_puts(sb, " mask=");
        clf__sb_put_hex(sb, n->attr.reduce.mask, 0);
        put_int(sb, "keepdims", (int)n->attr.reduce.keepdims);
        put_int(sb, "last", (int)n->attr.reduce.select_last);
        break;
    case CLF__OP_CONSTANT:
        put_hex64(sb, "scalar", bits(n->attr.constant.scalar));
        break;
    case CLF__OP_GATHER:
    case CLF__OP_GATHER_ELEMENTS:
        put_int(sb, "axis", n->attr.gather.axis);
        break;
    case CLF__OP_CONCAT:
        put_int(sb, "axis", n->attr.concat.axis);
        break;
    case CLF__OP_CACHE_WRITE:
        put_int(sb, "axis", n->attr.cache.axis);
        put_int(sb, "len", n->attr.cache.len);
        put_int(sb, "len_sym", (int)n->attr.cache.len_sym);
        break;
    default: /* no attributes */
        break;
    }
}

void clf__graph_key_node(const clf__node *n, clf__strbuf *sb)
{
    int rank = n->rank < 0 ? 0 : n->rank > CLF_MAX_RANK ? CLF_MAX_RANK : n->rank;
    /* " op=%d dtype=%d rank=%d", without printf (see put_i64s). */
    clf__sb_puts(sb, " op=");
    clf__sb_put_i64(sb, (int)n->op);
    clf__sb_puts(sb, " dtype=");
    clf__sb_put_i64(sb, (int)n->dtype);
    clf__sb_puts(sb, " rank=");
    clf__sb_put_i64(sb, n->rank);
    put_i64s(sb, "shape", n->shape, rank);
    put_attr(sb, n, rank);
    if (n->gen.kind) {
        put_int(sb, "gen", (int)n->gen.kind);
        clf__sb_putn(sb, ",", 1);
        clf__sb_put_i64(sb, n->gen.node);
        clf__sb_putn(sb, ",", 1);
        clf__sb_put_hex(sb, n->gen.mask, 0);
        clf__sb_putn(sb, ",", 1);
        put_hex64(sb, NULL, bits(n->gen.minus));
        clf__sb_putn(sb, ",", 1);
        clf__sb_put_i64(sb, n->gen.axis);
        uint64_t splat;
        memcpy(&splat, n->gen.splat, sizeof splat);
        clf__sb_putn(sb, ",", 1);
        put_hex64(sb, NULL, splat);
        clf__sb_putn(sb, ",", 1);
        clf__sb_put_i64(sb, n->gen.rows);
    }
}

void clf__graph_key(const clf_graph *g, clf__strbuf *sb)
{
    clf__sb_printf(sb, "nodes %zu\n", g->nnodes);
    for (size_t i = 0; i < g->nnodes; i++) {
        const clf__node *n = &g->nodes[i];
        int rank = n->rank < 0 ? 0 : n->rank > CLF_MAX_RANK ? CLF_MAX_RANK : n->rank;
        clf__sb_printf(sb, "%zu", i);
        clf__graph_key_node(n, sb);
        clf__sb_printf(sb, " in");
        for (int k = 0; k < n->ninputs; k++)
            clf__sb_printf(sb, "%c%" PRIu32, k ? ',' : '=', n->inputs[k]);
        if (n->data) {
            int64_t numel = clf__node_numel(n);
            size_t bytes = (size_t)numel * clf_dtype_size(n->dtype);
            clf__sha256 s;
            unsigned char d[32];
            clf__sha256_init(&s);
            clf__sha256_update(&s, n->data, bytes);
            clf__sha256_final(&s, d);
            clf__sb_printf(sb, " data=%zu:", bytes);
            for (int k = 0; k < 32; k++)
                clf__sb_printf(sb, "%02x", d[k]);
        }
        if (n->name)
            put_str(sb, "name", n->name);
        for (int d = 0; d < rank; d++)
            if (n->sym[d])
                clf__sb_printf(sb, " sym%d=%d", d, (int)n->sym[d]);
        clf__sb_puts(sb, "\n");
    }
    clf__sb_printf(sb, "inputs %zu", g->ninputs);
    for (size_t i = 0; i < g->ninputs; i++)
        clf__sb_printf(sb, "%c%" PRIu32, i ? ',' : ' ', g->inputs[i]);
    for (size_t i = 0; i < g->nsyms; i++) {
        clf__sb_printf(sb, "\nsym %" PRId64 "..%" PRId64 " rep %" PRId64, g->syms[i].lo, g->syms[i].hi, g->syms[i].rep);
        put_str(sb, "name", g->syms[i].name);
    }
    for (size_t i = g->nsyms; i < g->nsyms + g->nderived; i++) {
        const clf__dim_sym *S = &g->syms[i];
        clf__sb_printf(sb, "\nderived %d %d %d %" PRId64 " %" PRId64 " rep %" PRId64, (int)S->rule, (int)S->a,
                       (int)S->b, S->k, S->c, S->rep);
    }
    /* A graph made again at each size (an imported model): its nodes are
     * the stand-in import's, and what it becomes is the importer's. */
    if (g->regen)
        clf__sb_puts(sb, "\nregen");
    clf__sb_printf(sb, "\noutputs %zu\n", g->noutputs);
    for (size_t i = 0; i < g->noutputs; i++) {
        clf__sb_printf(sb, "%" PRIu32, g->outputs[i].node);
        put_str(sb, "name", g->outputs[i].name);
        clf__sb_puts(sb, "\n");
    }
}
