/* Products that read one operand, merged into one (graph_merge_products.h). */
#include "graph_merge_products.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "util/alloc.h"
#include "util/log.h"
#include "util/strbuf.h"

#define MAX_MEMBERS CLF__MERGED_MAX_MEMBERS

/* How a product's b is a constant: as it is ([K, N]) or through a
 * transpose of a constant [N, K] (ONNX Gemm's transB, as exporters write
 * a Linear layer). */
typedef enum b_form { B_NONE, B_DIRECT, B_TRANSPOSED } b_form;

typedef struct candidate {
    uint32_t node, a, weight; /* the product, its a, the constant */
    b_form form;
    int64_t k, n;
} candidate;

/* ---- The memo of concatenations ----------------------------------------- */

typedef struct memo_entry {
    b_form form;
    size_t nparts;
    const void *parts[MAX_MEMBERS];
    void *data;
} memo_entry;

struct clf__merge_memo {
    pthread_mutex_t lock;
    memo_entry *entries;
    size_t n, cap;
};

clf__merge_memo *clf__merge_memo_new(void)
{
    clf__merge_memo *m = clf__calloc(1, sizeof *m);
    if (m && pthread_mutex_init(&m->lock, NULL) != 0) {
        clf__free(m);
        m = NULL;
    }
    return m;
}

void clf__merge_memo_free(clf__merge_memo *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++)
        clf__free(m->entries[i].data);
    clf__free(m->entries);
    pthread_mutex_destroy(&m->lock);
    clf__free(m);
}

/* ---- Finding the groups -------------------------------------------------- */

/* Whether node i is a product whose b is a constant, and how; an output
 * (through movement ops) and a node in keep_apart are not. */
static bool as_candidate(const clf_graph *g, uint32_t i, const bool *is_output, const uint8_t *keep_apart,
                         candidate *c)
{
    const clf__node *n = &g->nodes[i];
    if (n->op != CLF__OP_MATMUL || n->ninputs != 2 || is_output[i] || (keep_apart && keep_apart[i]))
        return false;
    const clf__node *b = &g->nodes[n->inputs[1]];
    uint32_t w = n->inputs[1];
    b_form form = B_DIRECT;
    if (b->op == CLF__OP_TRANSPOSE && b->rank == 2 && b->attr.transpose.perm[0] == 1) {
        w = b->inputs[0];
        form = B_TRANSPOSED;
    }
    const clf__node *wn = &g->nodes[w];
    if (b->rank != 2 || wn->op != CLF__OP_CONSTANT || wn->rank != 2 || !wn->data || wn->gen.kind != CLF__GEN_NONE)
        return false;
    *c = (candidate){.node = i, .a = n->inputs[0], .weight = w, .form = form, .k = b->shape[0], .n = b->shape[1]};
    return true;
}

static bool same_group(const clf_graph *g, const candidate *x, const candidate *y)
{
    return x->a == y->a && x->form == y->form && x->k == y->k &&
           g->nodes[x->weight].dtype == g->nodes[y->weight].dtype &&
           g->nodes[x->node].dtype == g->nodes[y->node].dtype;
}

/* ---- Concatenating the constants ----------------------------------------- */

/* The members' constants concatenated along N: [K, sum N] row by row
 * (direct), or [sum N, K] one after another (transposed). */
static void *concatenate(const clf_graph *g, const candidate *m, size_t nm)
{
    const size_t es = clf_dtype_size(g->nodes[m[0].weight].dtype);
    int64_t ntot = 0;
    for (size_t j = 0; j < nm; j++)
        ntot += m[j].n;
    const size_t bytes = (size_t)(m[0].k * ntot) * es;
    uint8_t *c = clf__malloc(bytes ? bytes : 1);
    if (!c)
        return NULL;
    if (m[0].form == B_TRANSPOSED) {
        size_t at = 0;
        for (size_t j = 0; j < nm; j++) {
            const size_t part = (size_t)(m[j].n * m[j].k) * es;
            memcpy(c + at, g->nodes[m[j].weight].data, part);
            at += part;
        }
    } else {
        for (int64_t k = 0; k < m[0].k; k++) {
            uint8_t *row = c + (size_t)(k * ntot) * es;
            for (size_t j = 0; j < nm; j++) {
                const size_t part = (size_t)m[j].n * es;
                memcpy(row, (const uint8_t *)g->nodes[m[j].weight].data + (size_t)k * part, part);
                row += part;
            }
        }
    }
    return c;
}

/* The concatenation from the memo (made there if new), or NULL. */
static void *memo_concatenation(clf__merge_memo *memo, const clf_graph *g, const candidate *m, size_t nm)
{
    void *data = NULL;
    pthread_mutex_lock(&memo->lock);
    for (size_t i = 0; i < memo->n && !data; i++) {
        const memo_entry *E = &memo->entries[i];
        bool same = E->form == m[0].form && E->nparts == nm;
        for (size_t j = 0; same && j < nm; j++)
            same = E->parts[j] == g->nodes[m[j].weight].data;
        if (same)
            data = E->data;
    }
    if (!data && memo->n == memo->cap) {
        size_t cap = memo->cap ? 2 * memo->cap : 16;
        memo_entry *grown = clf__realloc(memo->entries, cap * sizeof *grown);
        if (grown) {
            memo->entries = grown;
            memo->cap = cap;
        }
    }
    if (!data && memo->n < memo->cap) {
        memo_entry E = {.form = m[0].form, .nparts = nm};
        for (size_t j = 0; j < nm; j++)
            E.parts[j] = g->nodes[m[j].weight].data;
        if ((E.data = concatenate(g, m, nm)) != NULL)
            memo->entries[memo->n++] = E;
        data = E.data;
    }
    pthread_mutex_unlock(&memo->lock);
    return data;
}

/* ---- The copy ------------------------------------------------------------- */

typedef struct copier {
    const clf_graph *g;
    clf__merged_graph *out;
    uint32_t *remap; /* g's id -> the copy's */
} copier;

/* Appends *n to the copy with the given inputs (ids in the copy) and origin.
 * n's data becomes the copy's (freed with it unless borrowed) only where
 * this succeeds. */
static bool emit(copier *C, const clf__node *n, const uint32_t *inputs, uint32_t origin)
{
    clf_graph *s = C->out->g;
    uint32_t *in = NULL;
    char *name = NULL;
    if ((n->ninputs && !(in = clf__malloc((size_t)n->ninputs * sizeof *in))) ||
        (n->name && !(name = clf__strdup(n->name)))) {
        clf__free(in);
        return false;
    }
    if (n->ninputs)
        memcpy(in, inputs, (size_t)n->ninputs * sizeof *in);
    clf__node *d = &s->nodes[s->nnodes];
    *d = *n;
    d->inputs = in;
    d->name = name;
    C->out->origin[s->nnodes++] = origin;
    return true;
}

/* The group's constant, its transpose where the form has one, the merged
 * product; returns the product's id in the copy, or UINT32_MAX. */
static uint32_t emit_product(copier *C, clf__merge_memo *memo, const candidate *m, size_t nm)
{
    const clf_graph *g = C->g;
    clf_graph *s = C->out->g;
    int64_t ntot = 0;
    for (size_t j = 0; j < nm; j++)
        ntot += m[j].n;
    const clf__node *w = &g->nodes[m[0].weight];
    clf__node c = {.op = CLF__OP_CONSTANT, .dtype = w->dtype, .rank = 2};
    c.shape[0] = m[0].form == B_TRANSPOSED ? ntot : m[0].k;
    c.shape[1] = m[0].form == B_TRANSPOSED ? m[0].k : ntot;
    /* The memo keys on addresses: only parts whose data outlives every
     * copy (borrowed: a model's initializers) keep theirs. */
    bool stable = memo != NULL;
    for (size_t j = 0; j < nm; j++)
        stable = stable && g->nodes[m[j].weight].borrowed;
    c.data = stable ? memo_concatenation(memo, g, m, nm) : concatenate(g, m, nm);
    c.borrowed = stable;
    if (!c.data)
        return UINT32_MAX;
    if (!emit(C, &c, NULL, UINT32_MAX)) {
        if (!stable)
            clf__free(c.data);
        return UINT32_MAX;
    }
    uint32_t b = (uint32_t)s->nnodes - 1;
    if (m[0].form == B_TRANSPOSED) {
        clf__node t = {.op = CLF__OP_TRANSPOSE, .dtype = w->dtype, .rank = 2, .ninputs = 1};
        t.shape[0] = m[0].k;
        t.shape[1] = ntot;
        t.attr.transpose.perm[0] = 1;
        t.attr.transpose.perm[1] = 0;
        if (!emit(C, &t, &b, UINT32_MAX))
            return UINT32_MAX;
        b = (uint32_t)s->nnodes - 1;
    }
    clf__node p = g->nodes[m[0].node];
    p.shape[p.rank - 1] = ntot;
    p.sym[p.rank - 1] = 0;
    const uint32_t in[2] = {C->remap[m[0].a], b};
    if (!emit(C, &p, in, m[0].node))
        return UINT32_MAX;
    const uint32_t id = (uint32_t)s->nnodes - 1;
    struct clf__merged_product *P = &C->out->products[C->out->nproducts++];
    P->node = id;
    P->nmembers = (uint32_t)nm;
    for (size_t j = 0; j < nm; j++)
        P->members[j] = m[j].node;
    return id;
}

/* Member j's slice of the merged product. */
static bool emit_slice(copier *C, const candidate *m, size_t j, uint32_t product)
{
    const clf__node *mn = &C->g->nodes[m[j].node];
    clf__node sl = {.op = CLF__OP_SLICE, .dtype = mn->dtype, .rank = mn->rank, .ninputs = 1};
    memcpy(sl.shape, mn->shape, sizeof sl.shape);
    memcpy(sl.sym, mn->sym, sizeof sl.sym);
    for (int d = 0; d < sl.rank; d++)
        sl.attr.slice.step[d] = 1;
    for (size_t i = 0; i < j; i++)
        sl.attr.slice.start[sl.rank - 1] += m[i].n;
    if (!emit(C, &sl, &product, UINT32_MAX)) /* a view: its member is the merged product's */
        return false;
    C->remap[m[j].node] = (uint32_t)C->out->g->nnodes - 1;
    return true;
}

void clf__merged_graph_free(clf__merged_graph *m)
{
    /* The copied nodes' data is the original graph's (the nodes the merge
     * made, origin UINT32_MAX, hold none but the concatenations). */
    for (size_t i = 0; m->g && i < m->g->nnodes; i++)
        if (m->origin[i] != UINT32_MAX)
            m->g->nodes[i].data = NULL;
    clf_graph_destroy(&m->g);
    clf__free(m->origin);
    clf__free(m->products);
    memset(m, 0, sizeof *m);
}

/* The candidates of a graph and their groups. */
typedef struct groups {
    candidate *cand;
    uint32_t *cand_of; /* per node: its candidate, or UINT32_MAX */
    int32_t *first;    /* per candidate: its group's first candidate */
    int32_t *size;     /* per candidate that is a group's first: its members */
    size_t n, ngroups; /* candidates; groups of two or more */
} groups;

static void groups_free(groups *G)
{
    clf__free(G->cand);
    clf__free(G->cand_of);
    clf__free(G->first);
    clf__free(G->size);
    memset(G, 0, sizeof *G);
}

/* Finds g's groups (clf__graph_merge_products's rules); false when out of
 * memory. */
static bool find_groups(const clf_graph *g, const uint8_t *keep_apart, groups *G)
{
    memset(G, 0, sizeof *G);
    const size_t nn = g->nnodes ? g->nnodes : 1;
    G->cand = clf__malloc(nn * sizeof *G->cand);
    G->cand_of = clf__malloc(nn * sizeof *G->cand_of);
    G->first = clf__malloc(nn * sizeof *G->first);
    G->size = clf__calloc(nn, sizeof *G->size);
    bool *is_output = clf__calloc(nn, sizeof *is_output);
    if (!G->cand || !G->cand_of || !G->first || !G->size || !is_output) {
        clf__free(is_output);
        groups_free(G);
        return false;
    }
    /* Outputs, and what a movement op that is one moves (in reverse order,
     * a node is marked before its inputs take its mark). */
    for (size_t o = 0; o < g->noutputs; o++)
        is_output[g->outputs[o].node] = true;
    for (uint32_t i = (uint32_t)g->nnodes; i-- > 0;)
        if (is_output[i] && clf__node_class_of(&g->nodes[i]) == CLF__CLASS_MOVEMENT)
            is_output[g->nodes[i].inputs[0]] = true;
    /* Candidates, then groups: each candidate joins the first earlier one
     * of its kind whose group has room. */
    for (uint32_t i = 0; i < g->nnodes; i++) {
        G->cand_of[i] = UINT32_MAX;
        if (as_candidate(g, i, is_output, keep_apart, &G->cand[G->n]))
            G->cand_of[i] = (uint32_t)G->n++;
    }
    clf__free(is_output);
    for (size_t c = 0; c < G->n; c++) {
        G->first[c] = (int32_t)c;
        for (size_t e = 0; e < c; e++)
            if (G->first[e] == (int32_t)e && G->size[e] < MAX_MEMBERS && same_group(g, &G->cand[e], &G->cand[c])) {
                G->first[c] = (int32_t)e;
                break;
            }
        G->size[G->first[c]]++;
    }
    for (size_t c = 0; c < G->n; c++)
        if (G->first[c] == (int32_t)c && G->size[c] > 1)
            G->ngroups++;
    return true;
}

size_t clf__graph_merge_count(const clf_graph *g, const uint8_t *keep_apart, bool *tiled)
{
    groups G;
    if (tiled)
        *tiled = false;
    if (g->nsyms || g->regen || !find_groups(g, keep_apart, &G))
        return 0;
    const size_t n = G.ngroups;
    for (size_t c = 0; tiled && c < G.n; c++)
        if (G.size[G.first[c]] > 1 && !clf__product_few_rows(clf__graph_node(g, G.cand[c].node)))
            *tiled = true;
    groups_free(&G);
    return n;
}

clf_status clf__graph_merge_products(const clf_graph *g, const uint8_t *keep_apart, clf__merge_memo *memo,
                                     clf__merged_graph *out, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    if (g->nsyms || g->regen)
        return CLF_OK; /* merged per specialisation (dynamic.c) */
    clf_status st = CLF_ERR_OUT_OF_MEMORY;
    groups G;
    copier C = {.g = g, .out = out};
    if (!find_groups(g, keep_apart, &G))
        goto fail;
    if (!G.ngroups) {
        groups_free(&G);
        return CLF_OK;
    }
    /* The copy: a constant, maybe a transpose, and a product more per group. */
    const size_t cap_nodes = g->nnodes + 3 * G.ngroups;
    out->g = clf_graph_create();
    out->origin = clf__malloc(cap_nodes * sizeof *out->origin);
    out->products = clf__calloc(G.ngroups, sizeof *out->products);
    C.remap = clf__malloc(g->nnodes * sizeof *C.remap);
    clf_graph *s = out->g;
    if (!s || !out->origin || !out->products || !C.remap || !(s->nodes = clf__calloc(cap_nodes, sizeof *s->nodes)) ||
        !(s->inputs = clf__calloc(g->ninputs ? g->ninputs : 1, sizeof *s->inputs)) ||
        !(s->outputs = clf__calloc(g->noutputs ? g->noutputs : 1, sizeof *s->outputs)))
        goto fail;
    s->cap_nodes = cap_nodes;
    s->cap_inputs = g->ninputs;
    s->cap_outputs = g->noutputs;
    uint32_t *product_of = clf__malloc((G.n ? G.n : 1) * sizeof *product_of); /* per group's first: its product */
    uint32_t *inputs = NULL;
    size_t cap_inputs = 0;
    bool ok = product_of != NULL;
    for (uint32_t i = 0; ok && i < g->nnodes; i++) {
        const uint32_t c = G.cand_of[i];
        if (c != UINT32_MAX && G.size[G.first[c]] > 1) {
            candidate m[MAX_MEMBERS];
            size_t nm = 0, j = 0;
            for (size_t e = (size_t)G.first[c]; e < G.n; e++)
                if (G.first[e] == G.first[c]) {
                    if (e == c)
                        j = nm;
                    m[nm++] = G.cand[e];
                }
            if (j == 0)
                ok = (product_of[c] = emit_product(&C, memo, m, nm)) != UINT32_MAX;
            ok = ok && emit_slice(&C, m, j, product_of[G.first[c]]);
            continue;
        }
        const clf__node *n = &g->nodes[i];
        if ((size_t)n->ninputs > cap_inputs) {
            uint32_t *grown = clf__realloc(inputs, (size_t)n->ninputs * sizeof *inputs);
            if (!(ok = grown != NULL))
                break;
            inputs = grown;
            cap_inputs = (size_t)n->ninputs;
        }
        for (int k = 0; k < n->ninputs; k++)
            inputs[k] = C.remap[n->inputs[k]];
        ok = emit(&C, n, inputs, i); /* g's data: clf__merged_graph_free leaves it */
        C.remap[i] = (uint32_t)s->nnodes - 1;
    }
    clf__free(inputs);
    clf__free(product_of);
    for (size_t i = 0; ok && i < g->ninputs; i++)
        s->inputs[s->ninputs++] = C.remap[g->inputs[i]];
    for (size_t i = 0; ok && i < g->noutputs; i++) {
        s->outputs[i].node = C.remap[g->outputs[i].node];
        ok = (s->outputs[i].name = clf__strdup(g->outputs[i].name)) != NULL;
        s->noutputs = i + 1;
    }
    if (ok)
        st = CLF_OK;
    for (size_t p = 0; ok && p < out->nproducts && clf__log_enabled(CLF__LOG_FUSION); p++) {
        clf__strbuf sb = {0};
        const struct clf__merged_product *P = &out->products[p];
        for (uint32_t j = 0; j < P->nmembers; j++)
            clf__sb_printf(&sb, "%s%u", j ? ", " : "", P->members[j]);
        clf__log(CLF__LOG_FUSION, "products %s (matmul) read one operand: merged into node %u, each a slice of it "
                 "(the planner's messages number the merged graph's nodes)",
                 clf__sb_str(&sb), P->node);
        clf__sb_free(&sb);
    }
fail:
    groups_free(&G);
    clf__free(C.remap);
    if (st != CLF_OK) {
        clf__merged_graph_free(out);
        snprintf(err, cap, "clf_compile: out of memory merging products");
    }
    return st;
}

size_t clf__merged_origins(const clf__merged_graph *m, uint32_t id, uint32_t *ids, size_t cap)
{
    for (size_t p = 0; p < m->nproducts; p++)
        if (m->products[p].node == id) {
            size_t n = 0;
            for (; n < m->products[p].nmembers && n < cap; n++)
                ids[n] = m->products[p].members[n];
            return n;
        }
    if (m->origin[id] == UINT32_MAX || !cap)
        return 0;
    ids[0] = m->origin[id];
    return 1;
}
