/* Executables of graphs with symbolic dimensions (clf_dim).
 *
 * clf_compile keeps a copy of the graph and compiles it at the symbols'
 * stand-in sizes: that executable is the one the caller holds, and
 * answers the queries. A run gives the inputs' shapes
 * (clf_run_host_shaped, clf_enqueue_shaped); their sizes select a
 * specialisation: the graph at those sizes, planned, generated and
 * instantiated at its first run and kept for the next ones (the
 * MAX_SPECS most recently used). Specialisations share the executable's
 * constant buffers (clf__const_pool) and their programs: the literals that
 * change with the sizes are lifted out of the kernels' sources into kernel
 * arguments (source_lift.h), so that a kernel whose structure does not
 * change with the sizes is built once. clf_compile generates (without
 * building) the kernels at probe sizes besides the stand-in ones to learn
 * which literals vary, and builds those generic programs at once (and the
 * kernels of size 1, which take forms of their own): a
 * later run at new sizes plans and generates code, and builds nothing
 * unless its kernels take another form (a variant: a different vector
 * width, tiling or reduction form). The specialisations share one
 * scratch buffer, as large as the largest needs (share_scratch), and run
 * one after another. So do the kernels' state (share_state). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dynamic.h"
#include "graph/graph_symbols.h"
#include "runtime_internal.h"
#include "source_lift.h"
#include "util/alloc.h"
#include "util/log.h"

/* ---- The constant pool --------------------------------------------------- */

cl_mem clf__pool_find(clf__const_pool *pool, const void *data, uint64_t bytes)
{
    cl_mem m = NULL;
    pthread_mutex_lock(&pool->lock);
    for (size_t i = 0; i < pool->n && !m; i++)
        if (pool->items[i].data == data && pool->items[i].bytes == bytes)
            m = pool->items[i].mem;
    if (m)
        clRetainMemObject(m);
    pthread_mutex_unlock(&pool->lock);
    return m;
}

void clf__pool_add(clf__const_pool *pool, const void *data, uint64_t bytes, cl_mem mem)
{
    pthread_mutex_lock(&pool->lock);
    if (pool->n == pool->cap) {
        size_t cap = pool->cap ? 2 * pool->cap : 16;
        void *items = clf__realloc(pool->items, cap * sizeof *pool->items);
        if (!items) { /* not shared: the specialisation keeps its own */
            pthread_mutex_unlock(&pool->lock);
            return;
        }
        pool->items = items;
        pool->cap = cap;
    }
    clRetainMemObject(mem);
    pool->items[pool->n++] = (struct pooled){data, bytes, mem};
    pthread_mutex_unlock(&pool->lock);
}

/* ---- Compiling ------------------------------------------------------------ */

static void dyn_free(struct clf__dyn *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->nspecs; i++) {
        clf_executable_destroy(&d->specs[i]->exe);
        clf__free(d->specs[i]);
    }
    for (size_t i = 0; i < d->pool.n; i++)
        clReleaseMemObject(d->pool.items[i].mem);
    clf__free(d->pool.items);
    clf__free(d->specs);
    if (d->scratch)
        clReleaseMemObject(d->scratch);
    if (d->state)
        clReleaseMemObject(d->state);
    clf__lift_table_free(&d->lift);
    clf__kernel_memo_free(&d->memo);
    clf__merge_memo_free(d->merges);
    clf_graph_destroy(&d->graph);
    pthread_mutex_destroy(&d->pool.lock);
    pthread_mutex_destroy(&d->lock);
    clf__free(d);
}

void clf__dyn_destroy(clf_executable *e)
{
    dyn_free(e->dyn);
    e->dyn = NULL;
}

/* Probe sizes: 1 (where the bounds allow it: extents of 1 give kernels of
 * their own, and a decoder runs one token at a time), then pairs of sizes
 * of one class each, so that the kernel variants that depend on a size's
 * class are seen twice and built generic at compile time: short odd rows
 * (scalar reduction loops on CPUs), then sizes from 17 up by the power of
 * two dividing them (odd, 2, 4, 8, 16 and more: vector widths and their
 * tails, whole GEMM tiles), up to multiples of 128 (rows that fill the CPU
 * GEMM's 128-row blocks, and GPU GEMM tiles chosen for 128 rows and more).
 * Sizes of a class not probed (short even ones) build their variant at
 * first sight. */
#define NPROBES 15

/* Probe size k of symbol s: unlike the stand-in, within the bounds; 0 when
 * the bounds leave none. Further symbols take sizes of the same class. */
static int64_t probe_size(const clf_graph *g, size_t s, int k)
{
    static const int64_t base[NPROBES] = {1, 5, 7, 17, 19, 18, 22, 20, 28, 24, 40, 48, 80, 128, 384};
    const int64_t lo = g->syms[s].lo > 1 ? g->syms[s].lo : 1, hi = g->syms[s].hi;
    if (k == 0)
        return lo == 1 && g->syms[s].rep != 1 ? 1 : 0;
    int64_t v = base[k] + 32 * (int64_t)s;
    if (hi && v > hi)
        v = hi - k;
    if (v < lo)
        v = lo;
    if (v == g->syms[s].rep)
        v = hi && v + 1 > hi ? v - 1 : v + 1;
    return v >= lo && (!hi || v <= hi) && v != g->syms[s].rep ? v : 0;
}

/* Generates the graph's kernels at the sizes values into the lift table,
 * building nothing (as_is: as clf__lift_note says). A size the graph or
 * the planner refuses teaches nothing and leaves no error on the context;
 * only running out of memory while generating is returned (with its
 * message on the context). */
static clf_status generate_at(clf_context *ctx, struct clf__dyn *d, const clf_compile_params *params,
                              const int64_t *values, bool as_is)
{
    char err[256];
    clf_graph *at = NULL;
    if (clf__graph_specialise(d->graph, values, false, &at, err, sizeof err) != CLF_OK)
        return CLF_OK;
    clf__spec_share share = {&d->pool, d->lift, d->memo, d->merges, true, as_is, false};
    clf_executable *none = NULL;
    clf_status st = clf__compile_graph(ctx, at, params, &share, &none);
    clf_graph_destroy(&at);
    if (st == CLF_ERR_OUT_OF_MEMORY)
        return st;
    clf__ctx_clear_error(ctx);
    return CLF_OK;
}

/* Generates the kernels at the probe sizes, building nothing, so that the
 * lift table knows which literals vary before the first build. A probe
 * that does not compile (the planner may refuse a size the stand-in
 * allows) teaches nothing and is not an error. */
static clf_status probe(clf_context *ctx, struct clf__dyn *d, const clf_compile_params *params)
{
    int64_t values[NPROBES][CLF__MAX_SYMS];
    for (int k = 0; k < NPROBES; k++) {
        bool usable = true;
        for (size_t s = 0; s < d->graph->nsyms; s++)
            usable = usable && (values[k][s] = probe_size(d->graph, s, k)) != 0;
        for (int j = 0; j < k && usable; j++)
            usable = memcmp(values[j], values[k], d->graph->nsyms * sizeof values[0][0]) != 0;
        if (!usable)
            continue;
        if (generate_at(ctx, d, params, values[k], k == 0) != CLF_OK)
            return CLF_ERR_OUT_OF_MEMORY;
    }
    return CLF_OK;
}

static const char *sym_list(const clf_graph *g, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < g->nsyms && o + 1 < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%s", i ? ", " : "", g->syms[i].name);
    return buf;
}

clf_status clf__dyn_compile(clf_context *ctx, const clf_graph *g, const clf_compile_params *params,
                            clf_executable **out)
{
    char err[256];
    if (params && params->external_scratch)
        return clf__ctx_fail(ctx, CLF_ERR_UNSUPPORTED,
                             "clf_compile: external_scratch is not supported for a graph with symbolic dimensions");
    /* A size no input's shape carries is bound by name at each run
     * (clf__graph_sizes_of). */
    struct clf__dyn *d = clf__calloc(1, sizeof *d);
    if (!d)
        return clf__ctx_fail(ctx, CLF_ERR_OUT_OF_MEMORY, "clf_compile: out of memory");
    pthread_mutex_init(&d->lock, NULL);
    pthread_mutex_init(&d->pool.lock, NULL);
    if (params)
        d->params = *params;
    int64_t rep[CLF__MAX_SYMS];
    for (size_t s = 0; s < g->nsyms; s++)
        rep[s] = g->syms[s].rep;
    clf_graph *at_rep = NULL;
    clf_status st = clf__graph_specialise(g, NULL, true, &d->graph, err, sizeof err);
    if (st == CLF_OK)
        st = clf__graph_specialise(d->graph, rep, false, &at_rep, err, sizeof err);
    if (st != CLF_OK) {
        dyn_free(d);
        return clf__ctx_fail(ctx, st, "clf_compile: %s", err);
    }
    d->lift = clf__lift_table_new();
    d->memo = clf__kernel_memo_new();
    d->merges = clf__merge_memo_new();
    if (!d->lift || !d->memo || !d->merges) {
        clf_graph_destroy(&at_rep);
        dyn_free(d);
        return clf__ctx_fail(ctx, CLF_ERR_OUT_OF_MEMORY, "clf_compile: out of memory");
    }
    st = probe(ctx, d, params);
    clf_executable *e = NULL;
    clf__spec_share share = {&d->pool, d->lift, d->memo, d->merges, false, false, true};
    if (st == CLF_OK)
        st = clf__compile_graph(ctx, at_rep, params, &share, &e);
    clf_graph_destroy(&at_rep);
    if (st == CLF_OK)
        st = clf__lift_prebuild(ctx, d->lift);
    if (st != CLF_OK) {
        clf_executable_destroy(&e);
        dyn_free(d);
        return st;
    }
    e->dyn = d;
    d->last = e;
    *out = e;
    return CLF_OK;
}

/* A size of v's class for a sibling probe: v plus twice the power of two
 * dividing it (at most 256), so that the two share their divisibility by
 * up to 256 and their magnitude roughly; 0 where the bounds leave none or
 * v is 1 (a class of its own). */
static int64_t sibling_size(const clf__dim_sym *sym, int64_t v)
{
    if (v <= 1)
        return 0;
    int64_t p = 1; /* the power of two dividing v, at most 256 */
    while (p < 256 && v % (2 * p) == 0)
        p *= 2;
    const int64_t step = 2 * p;
    const int64_t lo = sym->lo > 2 ? sym->lo : 2;
    if (!sym->hi || v + step <= sym->hi)
        return v + step;
    return v - step >= lo ? v - step : 0;
}

/* What a specialisation being made gives the lift table's prober. */
typedef struct sibling_probe {
    clf_context *ctx;
    struct clf__dyn *d;
    const int64_t *values;
} sibling_probe;

/* A kernel of the specialisation takes a form not seen yet (a size class
 * the probes missed): generates the kernels at a size of the same class,
 * building nothing, so that the form's first build is the generic one. */
static void probe_sibling(void *arg)
{
    sibling_probe *P = arg;
    const clf_graph *g = P->d->graph;
    int64_t values[CLF__MAX_SYMS];
    bool any = false;
    for (size_t s = 0; s < g->nsyms; s++) {
        int64_t v = sibling_size(&g->syms[s], P->values[s]);
        values[s] = v ? v : P->values[s];
        any |= v != 0;
    }
    if (!any)
        return;
    clf__log(CLF__LOG_CACHE, "symbolic sizes: a kernel form not seen yet, probing a size of its class");
    if (generate_at(P->ctx, P->d, &P->d->params, values, false) != CLF_OK)
        clf__ctx_clear_error(P->ctx); /* a probe that failed only costs the build it would have spared */
}

/* ---- Selecting a specialisation --------------------------------------------- */

clf_status clf__dyn_refuse(clf_executable *e, const char *call)
{
    char list[160];
    return clf__ctx_fail(e->ctx, CLF_ERR_INVALID_ARGUMENT,
                         "%s: the executable has symbolic dimensions (%s): give the inputs' shapes with "
                         "clf_run_host_shaped or clf_enqueue_shaped",
                         call, sym_list(e->dyn->graph, list, sizeof list));
}

clf_executable *clf__dyn_last(clf_executable *e)
{
    pthread_mutex_lock(&e->dyn->lock);
    clf_executable *x = e->dyn->last;
    pthread_mutex_unlock(&e->dyn->lock);
    return x;
}

void clf__dyn_mark_symbolic(const clf_executable *e, bool output, size_t i, int64_t *shape)
{
    const clf_graph *g = e->dyn->graph;
    const char *name = output ? e->outputs[i].name : e->inputs[i].name;
    uint32_t node = UINT32_MAX;
    if (output) {
        for (size_t k = 0; k < g->noutputs; k++)
            if (!strcmp(g->outputs[k].name, name))
                node = g->outputs[k].node;
    } else {
        for (size_t k = 0; k < g->ninputs; k++)
            if (!strcmp(g->nodes[g->inputs[k]].name, name))
                node = g->inputs[k];
    }
    if (node == UINT32_MAX)
        return;
    for (int d = 0; d < g->nodes[node].rank; d++)
        if (g->nodes[node].sym[d])
            shape[d] = -1;
}

static void sizes_str(const clf_graph *g, const int64_t *v, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < g->nsyms && o + 1 < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%s=%" PRId64, i ? " " : "", g->syms[i].name, v[i]);
}

/* The size a shared buffer of have bytes grows to for a need of need:
 * the need, and by half at least (a decoder's needs grow a little with
 * every step). */
static uint64_t grown(uint64_t have, uint64_t need)
{
    const uint64_t half_again = have + have / 2;
    return half_again > need ? half_again : need;
}

/* Binds x's intermediates to the shared scratch, which first grows where
 * x needs more than it has (grown), within the device's largest
 * allocation; every executable bound to the old buffer moves to the new one
 * at once, so that the old one is freed once the runs in flight end. Under
 * d->lock. */
static clf_status share_scratch(clf_executable *e, clf_executable *x, const char *call)
{
    struct clf__dyn *d = e->dyn;
    clf_context *ctx = e->ctx;
    const uint64_t need = x->scratch_bytes;
    if (need == 0)
        return CLF_OK;
    if (need > d->scratch_bytes) {
        uint64_t bytes = grown(d->scratch_bytes, need);
        cl_mem m = NULL;
        clf_status st = clf__scratch_buffer(ctx, need, &bytes, call, &m);
        if (st != CLF_OK)
            return st;
        clf__log(CLF__LOG_CACHE, "symbolic sizes: the specialisations' scratch grows to %llu bytes",
                 (unsigned long long)bytes);
        cl_mem old = d->scratch;
        d->scratch = m;
        d->scratch_bytes = bytes;
        for (size_t i = 0; i <= d->nspecs; i++) {
            clf_executable *y = i < d->nspecs ? d->specs[i]->exe : e;
            if (y->scratch && y->scratch == old)
                clf__executable_bind_scratch(y, m, 0);
        }
        if (old)
            clReleaseMemObject(old);
    }
    if (x->scratch != d->scratch)
        clf__executable_bind_scratch(x, d->scratch, 0);
    return CLF_OK;
}

/* Gives x the shared state buffer, which first grows where x needs more
 * than it has (grown), zeroed. An executable still on an older buffer
 * moves at its own next run: state is no memory plan, only counters that
 * every launch leaves at 0 and partial sums it writes before reading, so
 * any region of a zeroed buffer serves. Under d->lock. */
static clf_status share_state(clf_executable *e, clf_executable *x, const char *call)
{
    struct clf__dyn *d = e->dyn;
    if (x->state_bytes == 0)
        return CLF_OK;
    if (x->state_bytes > d->state_bytes) {
        const uint64_t bytes = grown(d->state_bytes, x->state_bytes);
        cl_mem m = NULL;
        cl_int err = clf__zeroed_buffer(e->ctx, bytes, &m);
        if (err != CL_SUCCESS)
            return clf__ctx_fail(e->ctx, clf__cl_status(err), "%s: %llu bytes of kernels' state: %s", call,
                                 (unsigned long long)bytes, clf__cl_error_name(err));
        clf__log(CLF__LOG_CACHE, "symbolic sizes: the kernels' state grows to %llu bytes", (unsigned long long)bytes);
        if (d->state)
            clReleaseMemObject(d->state);
        d->state = m;
        d->state_bytes = bytes;
    }
    if (x->state != d->state) {
        clRetainMemObject(d->state);
        pthread_mutex_lock(&x->lock);
        cl_mem old = x->state;
        x->state = d->state;
        pthread_mutex_unlock(&x->lock);
        if (old)
            clReleaseMemObject(old);
    }
    return CLF_OK;
}

/* The specialisation to values (*out), made now if there is none: the
 * least recently used one no run is using makes room where all MAX_SPECS
 * are kept. Under d->lock; a failure leaves its message on the context. */
static clf_status spec_at(clf_executable *e, const int64_t *values, const char *call, spec **out)
{
    struct clf__dyn *d = e->dyn;
    char err[320];
    const size_t bytes = d->graph->nsyms * sizeof *values;
    for (size_t i = 0; i < d->nspecs; i++)
        if (!memcmp(values, d->specs[i]->values, bytes)) {
            *out = d->specs[i];
            return CLF_OK;
        }
    char sizes[256];
    sizes_str(d->graph, values, sizes, sizeof sizes);
    clf__log(CLF__LOG_CACHE, "symbolic sizes %s: specialising the graph", sizes);
    /* Room: the least recently used specialisation no run is using. */
    if (d->nspecs == MAX_SPECS) {
        size_t victim = MAX_SPECS;
        for (size_t i = 0; i < d->nspecs; i++)
            if (!d->specs[i]->users && d->specs[i]->exe != d->last &&
                (victim == MAX_SPECS || d->specs[i]->used < d->specs[victim]->used))
                victim = i;
        if (victim == MAX_SPECS)
            return clf__ctx_fail(e->ctx, CLF_ERR_UNSUPPORTED,
                                 "%s: %d specialisations are in use by other runs; no room for %s", call, MAX_SPECS,
                                 sizes);
        clf__log(CLF__LOG_CACHE, "symbolic sizes: dropping the least recently used specialisation");
        clf_executable_destroy(&d->specs[victim]->exe);
        clf__free(d->specs[victim]);
        d->specs[victim] = d->specs[--d->nspecs];
    }
    if (!d->specs && !(d->specs = clf__calloc(MAX_SPECS, sizeof *d->specs)))
        return clf__ctx_fail(e->ctx, CLF_ERR_OUT_OF_MEMORY, "%s: out of memory", call);
    clf_graph *sg = NULL;
    clf_executable *made = NULL;
    spec *fresh = clf__calloc(1, sizeof *fresh);
    if (!fresh)
        return clf__ctx_fail(e->ctx, CLF_ERR_OUT_OF_MEMORY, "%s: out of memory", call);
    clf_status st = clf__graph_specialise(d->graph, values, false, &sg, err, sizeof err);
    if (st != CLF_OK) {
        clf__free(fresh);
        return clf__ctx_fail(e->ctx, st, "%s: at %s: %s", call, sizes, err);
    }
    sibling_probe sib = {e->ctx, d, values};
    clf__spec_share share = {&d->pool, d->lift, d->memo, d->merges, false, false, false};
    clf__lift_set_prober(d->lift, probe_sibling, &sib);
    st = clf__compile_graph(e->ctx, sg, &d->params, &share, &made);
    clf__lift_set_prober(d->lift, NULL, NULL);
    clf_graph_destroy(&sg);
    if (st != CLF_OK) {
        clf__free(fresh);
        return st; /* the compile's own message, on the context */
    }
    *out = d->specs[d->nspecs++] = fresh;
    memcpy((*out)->values, values, bytes);
    (*out)->exe = made;
    return CLF_OK;
}

/* The executable for the sizes the inputs' shapes give: e itself at the
 * stand-in sizes, else a specialisation (spec_at), marked in use (*sp,
 * released by release()), its scratch bound. */
static clf_status select_spec(clf_executable *e, const char *call, size_t ninputs, const char *const *names,
                              const int64_t *const *shapes, clf_executable **x, spec **sp)
{
    struct clf__dyn *d = e->dyn;
    char err[320];
    int64_t values[CLF__MAX_SYMS];
    *x = NULL;
    *sp = NULL;
    clf_status st = clf__graph_sizes_of(d->graph, ninputs, names, shapes, values, err, sizeof err);
    if (st != CLF_OK)
        return clf__ctx_fail(e->ctx, st, "%s: %s", call, err);
    pthread_mutex_lock(&d->lock);
    d->clock++;
    bool at_rep = true;
    for (size_t k = 0; k < d->graph->nsyms && at_rep; k++)
        at_rep = values[k] == d->graph->syms[k].rep;
    if (!at_rep)
        st = spec_at(e, values, call, sp);
    clf_executable *chosen = *sp ? (*sp)->exe : e;
    if (st == CLF_OK)
        st = share_scratch(e, chosen, call);
    if (st == CLF_OK)
        st = share_state(e, chosen, call);
    if (st == CLF_OK) {
        if (*sp) {
            (*sp)->used = d->clock;
            (*sp)->users++;
        }
        *x = chosen;
        d->last = chosen;
    } else {
        *sp = NULL;
    }
    pthread_mutex_unlock(&d->lock);
    return st;
}

static void release(clf_executable *e, spec *sp)
{
    if (!sp)
        return;
    pthread_mutex_lock(&e->dyn->lock);
    sp->users--;
    pthread_mutex_unlock(&e->dyn->lock);
}

/* An executable without symbolic dimensions: the given shapes must be the
 * declared ones. */
static clf_status check_static(clf_executable *e, const char *call, size_t ninputs, const char *const *names,
                               const int64_t *const *shapes)
{
    for (size_t i = 0; i < ninputs; i++) {
        if (!shapes[i] || !names[i])
            continue;
        for (size_t k = 0; k < e->ninputs; k++) {
            const clf__io *io = &e->inputs[k];
            if (strcmp(io->name, names[i]))
                continue;
            for (int a = 0; a < io->rank; a++)
                if (shapes[i][a] != io->shape[a])
                    return clf__ctx_fail(e->ctx, CLF_ERR_SHAPE,
                                         "%s: input '%s': axis %d is %" PRId64 ", but it is declared %" PRId64, call,
                                         names[i], a, shapes[i][a], io->shape[a]);
        }
    }
    return CLF_OK;
}

/* ---- Running ------------------------------------------------------------------ */

/* The executable to run for inputs at input_shapes: e itself, its shapes
 * checked, or e's specialisation to their sizes (*sp, released after the
 * run). bindings: ninputs structs of stride bytes, each starting with its
 * tensor's name (clf_host_binding, clf_buffer_view). */
static clf_status choose(clf_executable *e, const char *call, size_t ninputs, const void *bindings, size_t stride,
                         const int64_t *const *input_shapes, clf_executable **x, spec **sp)
{
    const char **names = clf__calloc(ninputs + 1, sizeof *names);
    if (!names)
        return clf__ctx_fail(e->ctx, CLF_ERR_OUT_OF_MEMORY, "%s: out of memory", call);
    for (size_t i = 0; i < ninputs; i++)
        memcpy(&names[i], (const char *)bindings + i * stride, sizeof names[i]);
    clf_status st = e->dyn ? select_spec(e, call, ninputs, names, input_shapes, x, sp)
                           : check_static(e, call, ninputs, names, input_shapes);
    clf__free(names);
    return st;
}

/* A copy of bindings (n structs of stride bytes, each starting with its
 * name) without those that name a dimension; *kept gets their number. NULL
 * when out of memory. */
static void *without_dims(const clf_executable *e, size_t n, const void *bindings, size_t stride, size_t *kept)
{
    char *copy = clf__malloc((n + 1) * stride);
    *kept = 0;
    for (size_t i = 0; copy && i < n; i++) {
        const char *b = (const char *)bindings + i * stride, *name;
        memcpy(&name, b, sizeof name);
        if (!e->dyn || !clf__graph_names_dim(e->dyn->graph, name))
            memcpy(copy + (*kept)++ * stride, b, stride);
    }
    return copy;
}

CLF_API clf_status clf_run_host_shaped(clf_executable *e, size_t ninputs, const clf_host_binding *inputs,
                                       const int64_t *const *input_shapes, size_t noutputs,
                                       const clf_host_binding *outputs)
{
    static const char call[] = "clf_run_host_shaped";
    if (!e)
        return CLF_ERR_INVALID_ARGUMENT;
    clf__ctx_clear_error(e->ctx);
    if (ninputs && (!inputs || !input_shapes))
        return clf__ctx_fail(e->ctx, CLF_ERR_INVALID_ARGUMENT, "%s: a binding or shape array is NULL", call);
    clf_executable *x = e;
    spec *sp = NULL;
    clf_status st = choose(e, call, ninputs, inputs, sizeof *inputs, input_shapes, &x, &sp);
    if (st != CLF_OK)
        return st;
    size_t kept;
    clf_host_binding *in = without_dims(e, ninputs, inputs, sizeof *inputs, &kept);
    st = in ? clf__run_host(x, kept, in, noutputs, outputs)
            : clf__ctx_fail(e->ctx, CLF_ERR_OUT_OF_MEMORY, "%s: out of memory", call);
    clf__free(in);
    release(e, sp);
    return st;
}

CLF_API clf_status clf_enqueue_shaped(clf_executable *e, cl_command_queue queue, size_t ninputs,
                                      const clf_buffer_view *inputs, const int64_t *const *input_shapes,
                                      size_t noutputs, const clf_buffer_view *outputs, cl_uint nwait,
                                      const cl_event *wait, cl_event *done)
{
    static const char call[] = "clf_enqueue_shaped";
    if (done)
        *done = NULL;
    if (!e)
        return CLF_ERR_INVALID_ARGUMENT;
    clf__ctx_clear_error(e->ctx);
    if ((ninputs && (!inputs || !input_shapes)) || (nwait && !wait))
        return clf__ctx_fail(e->ctx, CLF_ERR_INVALID_ARGUMENT, "%s: a binding, shape or wait array is NULL", call);
    clf_executable *x = e;
    spec *sp = NULL;
    clf_status st = choose(e, call, ninputs, inputs, sizeof *inputs, input_shapes, &x, &sp);
    if (st != CLF_OK)
        return st;
    /* Runs of the specialisations follow each other (run.c waits for the
     * lift table's last run). */
    size_t kept;
    clf_buffer_view *in = without_dims(e, ninputs, inputs, sizeof *inputs, &kept);
    st = in ? clf__enqueue(x, queue, kept, in, noutputs, outputs, nwait, wait, done)
            : clf__ctx_fail(e->ctx, CLF_ERR_OUT_OF_MEMORY, "%s: out of memory", call);
    clf__free(in);
    release(e, sp);
    return st;
}
