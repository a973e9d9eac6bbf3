/* The shrinker: greedy reductions of a failing graph, each kept only when
 * the graph still fails in the same way. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

/* The kind of a failure: the variant ("fused", "unfused", "fused (GPU
 * style)") and whether it was a compile error, a run error or a wrong
 * value. Shrinking keeps the kind so that it does not slip to another bug. */
static void failure_kind(const char *why, char *kind, size_t cap)
{
    const char *colon = strchr(why, ':');
    const char *space = strstr(why, " output ");
    const char *end = colon;
    if (space && (!end || space < end))
        end = space;
    size_t n = end ? (size_t)(end - why) : strlen(why);
    const char *what = strstr(why, "clf_compile") ? "compile"
                       : strstr(why, "clf_run_host") ? "run"
                       : strstr(why, "clf_reference_run") ? "reference"
                                                          : "value";
    snprintf(kind, cap, "%.*s/%s", (int)(n < 60 ? n : 60), why, what);
}

/* Removes nodes no output needs and renumbers the rest. */
static void drop_dead(fz_graph *G)
{
    bool live[FZ_MAX_NODES] = {false};
    for (int i = G->n - 1; i >= 0; i--) {
        if (G->node[i].output)
            live[i] = true;
        if (live[i])
            for (int k = 0; k < G->node[i].nin; k++)
                live[G->node[i].in[k]] = true;
    }
    int map[FZ_MAX_NODES], m = 0;
    for (int i = 0; i < G->n; i++) {
        map[i] = live[i] ? m : -1;
        if (!live[i])
            continue;
        G->node[m] = G->node[i];
        for (int k = 0; k < G->node[m].nin; k++)
            G->node[m].in[k] = map[G->node[m].in[k]];
        m++;
    }
    G->n = m;
}

typedef struct shrinker {
    clf_context *ctx;
    const fz_options *o;
    char kind[128];
    char *why;
    size_t cap;
    int accepted;
} shrinker;

/* Keeps candidate C (after removing dead nodes) when it fails the same
 * way; returns true when kept. */
static bool try_candidate(shrinker *S, fz_graph *G, fz_graph *C)
{
    drop_dead(C);
    char why[1024], kind[128];
    if (fz_check(S->ctx, C, S->o, why, sizeof why) != FZ_FAIL)
        return false;
    failure_kind(why, kind, sizeof kind);
    if (strcmp(kind, S->kind) != 0)
        return false;
    *G = *C;
    snprintf(S->why, S->cap, "%s", why);
    S->accepted++;
    return true;
}

static void to_input(fz_node *n, uint64_t seed)
{
    fz_facts f = n->facts;
    clf_dtype dt = n->odt;
    int rank = n->orank;
    int64_t shape[CLF_MAX_RANK];
    memcpy(shape, n->oshape, sizeof shape);
    bool out = n->output;
    memset(n, 0, sizeof *n);
    n->family = FZ_FAM_INPUT;
    n->dt = n->odt = dt;
    n->rank = n->orank = rank;
    memcpy(n->shape, shape, sizeof(int64_t) * (size_t)rank);
    memcpy(n->oshape, shape, sizeof shape);
    n->profile = FZ_PROF_NORMAL;
    n->data_seed = seed;
    n->facts = f; /* the tolerance of what it stood for */
    n->output = out;
}

/* One sweep of every reduction; returns true when any was kept. */
static bool sweep(shrinker *S, fz_graph *G)
{
    bool progress = false;
    fz_graph *C = malloc(sizeof *C);
    if (!C)
        return false;

    /* Fewer outputs. */
    for (int i = 0; i < G->n; i++) {
        int outs = 0;
        for (int j = 0; j < G->n; j++)
            outs += G->node[j].output;
        if (!G->node[i].output || outs < 2)
            continue;
        *C = *G;
        C->node[i].output = false;
        if (try_candidate(S, G, C)) {
            progress = true;
            i = -1;
        }
    }
    /* A node bypassed: its readers read an operand of the same type. */
    for (int i = G->n - 1; i >= 0; i--) {
        const fz_node *n = &G->node[i];
        for (int k = 0; i < G->n && k < G->node[i].nin; k++) {
            const fz_node *a = &G->node[n->in[k]];
            if (a->odt != n->odt || a->orank != n->orank ||
                memcmp(a->oshape, n->oshape, sizeof(int64_t) * (size_t)n->orank))
                continue;
            *C = *G;
            int to = n->in[k];
            for (int j = i + 1; j < C->n; j++)
                for (int m = 0; m < C->node[j].nin; m++)
                    if (C->node[j].in[m] == i)
                        C->node[j].in[m] = to;
            C->node[to].output |= C->node[i].output;
            C->node[i].output = false;
            if (try_candidate(S, G, C)) {
                progress = true;
                break;
            }
        }
    }
    /* A node replaced by a new input: cuts off everything above it. */
    for (int i = G->n - 1; i >= 0; i--) {
        if (i >= G->n || G->node[i].family == FZ_FAM_INPUT)
            continue;
        *C = *G;
        to_input(&C->node[i], 0x5EED0000u + (uint64_t)i);
        if (try_candidate(S, G, C))
            progress = true;
    }
    /* Smaller extents: 1, half, one less. */
    for (int i = 0; i < G->n; i++) {
        for (int d = 0; d < G->node[i].rank && G->node[i].family == FZ_FAM_INPUT; d++) {
            int64_t e = G->node[i].shape[d];
            const int64_t cands[] = {1, e / 2, e - 1, 0};
            for (size_t c = 0; c < sizeof cands / sizeof cands[0]; c++) {
                if (cands[c] >= e || (cands[c] == 0 && e != 1))
                    continue;
                *C = *G;
                C->node[i].shape[d] = cands[c];
                if (try_candidate(S, G, C)) {
                    progress = true;
                    break;
                }
            }
        }
    }
    /* Plain values. */
    for (int i = 0; i < G->n; i++) {
        if (G->node[i].family != FZ_FAM_INPUT || G->node[i].profile == FZ_PROF_NORMAL)
            continue;
        *C = *G;
        C->node[i].profile = FZ_PROF_NORMAL;
        if (try_candidate(S, G, C))
            progress = true;
    }
    free(C);
    return progress;
}

int fz_shrink(clf_context *ctx, fz_graph *G, const fz_options *o, char *why, size_t cap)
{
    shrinker S = {.ctx = ctx, .o = o, .why = why, .cap = cap};
    failure_kind(why, S.kind, sizeof S.kind);
    for (int round = 0; round < 20 && sweep(&S, G); round++)
        ;
    /* Rebuild once so that the printed shapes are the shrunk graph's. */
    fz_built b;
    char msg[256];
    fz_build(G, &b, msg, sizeof msg);
    clf_graph_destroy(&b.g);
    return S.accepted;
}
