/* Writes the OpenCL C for one pointwise kernel of a plan: the region's
 * values as named temporaries in clf_compute(), the loads and stores around
 * it in clf_point() and clf_vec(), prepended to kernels_templates/pointwise.cl. */
#include "codegen/codegen.h"
#include "util/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen_expr.h"
#include "codegen/schedule.h"
#include "codegen/templates.h"
#include "util/strbuf.h"
#include "util/text.h"

static const char *vec_suffix(int lane)
{
    static const char *const s[16] = {"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7",
                                      "s8", "s9", "sa", "sb", "sc", "sd", "se", "sf"};
    return s[lane];
}

/* Where a store puts the element the kernel computes at i: "i", or for a
 * cache write, x's element i at its place in the cache, [len - S, len)
 * along the axis. With inner the extent below the axis, x's element i =
 * (o * S + s) * inner + r goes to (o * CAP + len - S + s) * inner + r =
 * i + o * (CAP - S) * inner + (len - S) * inner. NULL when out of memory. */
static char *placed_index(const clf_graph *g, const clf__plan_store *st, uint64_t numel)
{
    const clf__node *w = clf__graph_node(g, st->node);
    if (w->op != CLF__OP_CACHE_WRITE)
        return clf__strdup("i");
    const clf__node *x = clf__graph_node(g, w->inputs[1]);
    int a = w->attr.cache.axis;
    long long inner = 1, S = (long long)x->shape[a], cap = (long long)w->shape[a];
    for (int d = a + 1; d < x->rank; d++)
        inner *= (long long)x->shape[d];
    long long off = (w->attr.cache.len - S) * inner;
    if (off < 0)
        return NULL; /* S > len: the builder and specialise refuse it */
    char buf[160];
    if ((uint64_t)(S * inner) < numel)
        snprintf(buf, sizeof buf, "(i + i / %lldu * %lldu + %lldu)", S * inner, (cap - S) * inner, off);
    else
        snprintf(buf, sizeof buf, "(i + %lldu)", off);
    return clf__strdup(buf);
}

/* The elements a cache write's store puts consecutively (the extent below
 * its axis), for the vector form: 0 for another store. */
static int64_t placed_run(const clf_graph *g, const clf__plan_store *st)
{
    const clf__node *w = clf__graph_node(g, st->node);
    if (w->op != CLF__OP_CACHE_WRITE)
        return 0;
    const clf__node *x = clf__graph_node(g, w->inputs[1]);
    int64_t inner = 1;
    for (int d = w->attr.cache.axis + 1; d < x->rank; d++)
        inner *= x->shape[d];
    return inner;
}

/* Where clf_point and clf_vec store store s: at "i", or for a cache write
 * at a temporary p<s> declared into fn holding placed_index's expression
 * (its own statement: the lifter, runtime/source_lift.c, takes a literal
 * before a statement's '=' for an array size). */
static const char *store_index(clf__strbuf *fn, char *const *store_at, uint32_t s, char *name, size_t cap)
{
    if (strcmp(store_at[s], "i") == 0)
        return "i";
    snprintf(name, cap, "p%u", s);
    clf__sb_printf(fn, "    const IDX_T %s = %s;\n", name, store_at[s]);
    return name;
}

/* The CPU form's clf_vec in vector code: w consecutive elements along
 * the region's last axis (of length len, a multiple of w), i = vx * len +
 * vc with vc a multiple of w, every value a floatW (clf__cg_load_lanes;
 * a concatenation along that axis is the input the lanes fall in). On
 * PoCL 5 the lane-by-lane clf_vec stays scalar: a rotary embedding's f16
 * roundings and index arithmetic an element. Appends nothing and returns
 * false where some value has no vector form. */
static bool emit_lanes_fn(const clf_graph *g, const clf__plan *plan, uint32_t k, int64_t len, int w,
                          char *const *store_at, clf__strbuf *src)
{
    const clf__plan_kernel *K = &plan->kernels[k];
    for (uint32_t s = 0; s < K->nstores; s++) /* vector stores of floats only */
        if (clf__dtype_compute(clf__graph_node(g, K->stores[s].node)->dtype) != CLF_F32)
            return false;
    clf__cg_hooks hooks = {.load = clf__cg_load_lanes};
    clf__cg_fn V;
    clf__cg_fn_init(&V, g, plan, k, &hooks);
    V.vec = w;
    /* One row (a vector's elements, say): vc is i itself, and the source
     * names no extent, as the lane-by-lane form's did (one build for every
     * length where the lanes divide it). */
    const bool one_row = K->numel == len;
    const clf__ix vx = clf__ixgen_var(V.ix, "vx", (uint64_t)(K->numel / len)),
                  vc = clf__ixgen_var(V.ix, "vc", (uint64_t)len);
    V.lane_bit = vc.deps;
    const clf__view at_lin = {.linear = true, .lin = one_row ? vc : clf__ix_mad(V.ix, vx, len, vc)};
    char **vals = clf__calloc(K->nstores, sizeof *vals);
    bool ok = vals != NULL;
    for (uint32_t s = 0; ok && s < K->nstores; s++) {
        vals[s] = clf__strdup(clf__cg_value(&V, K->stores[s].from, &at_lin));
        ok = vals[s] != NULL;
    }
    ok = ok && !V.failed && !V.novec && !V.ix->failed && clf__sb_ok(&V.idx_code) && clf__sb_ok(&V.body);
    clf__strbuf fn = {0};
    if (ok) {
        clf__sb_puts(&fn, "static inline void clf_vec(IDX_T i, CLF_PARAMS)\n{\n");
        if (one_row)
            clf__sb_puts(&fn, "    const IDX_T vc = i;\n");
        else
            clf__sb_printf(&fn, "    const IDX_T vx = i / %lldu, vc = i %% %lldu;\n    (void)vx;\n", (long long)len,
                           (long long)len);
        clf__sb_printf(&fn, "    (void)vc;\n%s%s", clf__sb_str(&V.idx_code), clf__sb_str(&V.body));
        for (uint32_t s = 0; s < K->nstores; s++) {
            char name[16];
            const char *at = store_index(&fn, store_at, s, name, sizeof name);
            clf__cg_store_float_vec(plan, &fn, clf__graph_node(g, K->stores[s].node)->dtype, K->stores[s].buffer, at,
                                    vals[s], w);
        }
        clf__sb_puts(&fn, "}\n\n");
        ok = ok && clf__sb_ok(&fn);
        if (ok)
            clf__sb_puts(src, clf__sb_str(&fn));
    }
    for (uint32_t s = 0; vals && s < K->nstores; s++)
        clf__free(vals[s]);
    clf__free(vals);
    clf__sb_free(&fn);
    clf__cg_fn_free(&V);
    return ok;
}

clf_status clf__codegen_pointwise(const clf_graph *g, const clf__plan *plan, uint32_t k,
                               const clf__codegen_target *target, clf__kernel_code *out,
                               char *err, size_t errlen)
{
    const clf__plan_kernel *K = &plan->kernels[k];
    clf__cg_fn G;
    clf__cg_hooks hooks = {.load = clf__cg_load_slot};
    clf__strbuf src = {0};
    clf__strbuf lanes_fn = {0}; /* the vector form's clf_vec (emit_lanes_fn) */
    clf_status st = CLF_ERR_OUT_OF_MEMORY;
    memset(out, 0, sizeof *out);
    clf__cg_fn_init(&G, g, plan, k, &hooks);

    /* Index width: 32 bits when every extent touched fits in 31 bits. */
    uint64_t space = (uint64_t)K->numel;
    for (uint32_t s = 0; s < K->nstores; s++)
        if ((uint64_t)clf__node_numel(clf__graph_node(g, K->stores[s].node)) > space)
            space = (uint64_t)clf__node_numel(clf__graph_node(g, K->stores[s].node));
    out->wide_index = clf__cg_wide_index(g, plan, K, space);

    /* Values of every store at the region's own linear index i (a cache
     * write's: its new entries', stored at their place in the cache). */
    clf__view at_i = {.linear = true, .lin = clf__ix_i((uint64_t)K->numel)};
    const char **store_vals = clf__calloc(K->nstores ? K->nstores : 1, sizeof *store_vals);
    char **owned = clf__calloc(K->nstores ? K->nstores : 1, sizeof *owned);
    char **store_at = clf__calloc(K->nstores ? K->nstores : 1, sizeof *store_at);
    bool placed = false;
    if (!store_vals || !owned || !store_at)
        goto done;
    for (uint32_t s = 0; s < K->nstores; s++) {
        store_at[s] = placed_index(g, &K->stores[s], (uint64_t)K->numel);
        if (!store_at[s])
            G.failed = true;
        placed = placed || strcmp(store_at[s] ? store_at[s] : "", "i") != 0;
        owned[s] = clf__strdup(clf__cg_value(&G, K->stores[s].from, &at_i));
        if (!owned[s])
            G.failed = true;
        store_vals[s] = owned[s] ? owned[s] : "0";
    }
    if (G.failed || G.ix->failed || !clf__sb_ok(&G.idx_code) || !clf__sb_ok(&G.body))
        goto done;

    /* Parameters: buffers read, then buffers written. */
    out->nparams = 0;
    if (!clf__cg_params(K, &out->params, &out->nparams))
        goto done;

    /* The schedule (schedule.h): its facts first. Vector path: every load
     * is at i itself or at one fixed element. */
    clf__pointwise_facts facts = {.numel = (uint64_t)K->numel, .plain_loads = K->numel > 1 && !placed, .axis_ok = true};
    for (size_t s = 0; s < G.nslots && facts.plain_loads; s++)
        if (!(G.slots[s].index.temp == 0 || G.slots[s].index.temp < 0) || G.slots[s].buffer == CLF__CG_INDEX_VALUE)
            facts.plain_loads = false;
    for (size_t s = 0; s < G.nslots; s++)
        if (clf_dtype_size(G.slots[s].dtype) > facts.widest)
            facts.widest = clf_dtype_size(G.slots[s].dtype);
    for (uint32_t s = 0; s < K->nstores; s++)
        if (clf_dtype_size(clf__graph_node(g, K->stores[s].node)->dtype) > facts.widest)
            facts.widest = clf_dtype_size(clf__graph_node(g, K->stores[s].node)->dtype);
    /* The CPU form's vector along the last axis (emit_lanes_fn): 16
     * lanes, or 8, dividing the axis of the region's elements in the shape
     * of its first store's values (a cache write's: its new entries'),
     * whose rows stay whole in a vector. */
    int64_t axis_len = 0;
    if (target->cpu && K->nstores > 0) {
        const clf__node *o = clf__graph_node(g, K->stores[0].from);
        axis_len = o->rank > 0 ? o->shape[o->rank - 1] : 1;
        int w = axis_len > 0 && axis_len % 16 == 0 ? 16 : axis_len > 0 && axis_len % 8 == 0 ? 8 : 0;
        for (uint32_t s = 0; s < K->nstores && w; s++)
            if (placed_run(g, &K->stores[s]) % w != 0)
                w = 0;
        facts.axis_lanes = clf__node_numel(o) == K->numel ? w : 0;
    }
    clf__schedule sched;
    clf__schedule_pointwise(&facts, target, &sched);
    if (sched.along_axis) {
        bool written = emit_lanes_fn(g, plan, k, axis_len, sched.vec, store_at, &lanes_fn);
        if (!clf__sb_ok(&lanes_fn))
            goto done;
        if (!written) {
            facts.axis_ok = false;
            clf__schedule_pointwise(&facts, target, &sched);
        }
    }
    out->schedule = sched;
    out->vec = sched.vec;
    out->items = sched.items;
    out->local = sched.wg;
    out->global = clf__pointwise_global(&sched, (uint64_t)K->numel);

    out->entry = clf__cg_kernel_name(g, K->ops, K->nops, "clf_poi");
    out->ops = clf__cg_op_list(g, K->ops, K->nops);
    if (!out->entry || !out->ops)
        goto done;

    /* The generated definitions. */
    clf__cg_source_header(&src, g, K, out->entry, out->ops);
    clf__sb_printf(&src, "#define IDX_T %s\n#define VEC %d\n#define ITEMS %d\n#define BLOCKED %d\n",
                   out->wide_index ? "ulong" : "uint", out->vec, out->items, target->cpu ? 1 : 0);
    clf__cg_signature(&src, g, plan, out->entry, out->params, out->nparams, K->nreads);
    clf__cg_gather_defs(&src, g, plan, K);
    clf__sb_puts(&src, "\n");

    /* clf_compute: loaded values in, stored values out. */
    clf__sb_puts(&src, "static inline void clf_compute(");
    for (size_t s = 0; s < G.nslots; s++)
        clf__sb_printf(&src, "%s%s l%zu", s ? ", " : "", clf__cg_ctype(G.slots[s].dtype), s);
    for (uint32_t s = 0; s < K->nstores; s++) {
        const clf__node *sn = clf__graph_node(g, K->stores[s].node);
        clf__sb_printf(&src, "%s%s *s%u", (s || G.nslots) ? ", " : "", clf__cg_ctype(sn->dtype), s);
    }
    clf__sb_printf(&src, ")\n{\n%s", clf__sb_str(&G.body));
    for (uint32_t s = 0; s < K->nstores; s++)
        clf__sb_printf(&src, "    *s%u = %s;\n", s, store_vals[s]);
    clf__sb_puts(&src, "}\n\n");

    /* clf_point: one element. */
    clf__sb_printf(&src, "static inline void clf_point(IDX_T i, CLF_PARAMS)\n{\n%s",
                   clf__sb_str(&G.idx_code));
    for (uint32_t s = 0; s < K->nstores; s++)
        clf__sb_printf(&src, "    %s s%u;\n", clf__cg_ctype(clf__graph_node(g, K->stores[s].node)->dtype), s);
    clf__sb_puts(&src, "    clf_compute(");
    for (size_t s = 0; s < G.nslots; s++) {
        char a[80];
        clf__sb_printf(&src, "%s%s", s ? ", " : "",
                       clf__cg_read_expr(plan, G.slots[s].buffer, &G.slots[s].index, G.slots[s].dtype, a, sizeof a));
    }
    for (uint32_t s = 0; s < K->nstores; s++)
        clf__sb_printf(&src, "%s&s%u", (s || G.nslots) ? ", " : "", s);
    clf__sb_puts(&src, ");\n");
    for (uint32_t s = 0; s < K->nstores; s++) {
        char v[16], name[16];
        snprintf(v, sizeof v, "s%u", s);
        const char *at = store_index(&src, store_at, s, name, sizeof name);
        clf__cg_store(plan, &src, clf__graph_node(g, K->stores[s].node)->dtype, K->stores[s].buffer, at, v);
    }
    clf__sb_puts(&src, "}\n\n");

    /* clf_vec: VEC elements with vector loads and stores. */
    if (sched.along_axis) {
        clf__sb_puts(&src, clf__sb_str(&lanes_fn));
    } else if (out->vec > 1) {
        int V = out->vec;
        clf__sb_printf(&src, "static inline void clf_vec(IDX_T i, CLF_PARAMS)\n{\n");
        for (size_t s = 0; s < G.nslots; s++) {
            const char *ty = clf__cg_ctype(G.slots[s].dtype);
            if (G.slots[s].index.temp == 0) {
                clf__sb_printf(&src, "    const %s%d l%zu = ", ty, V, s);
                clf__cg_load_vec(plan, &src, G.slots[s].dtype, G.slots[s].buffer, "i", V, false);
                clf__sb_puts(&src, ";\n");
            } else {
                char at[32], rd[96];
                snprintf(at, sizeof at, "%lld", (long long)G.slots[s].index.c);
                clf__sb_printf(&src, "    const %s l%zu = %s;\n", ty, s,
                               clf__cg_load_expr(plan, G.slots[s].dtype, G.slots[s].buffer, at, rd, sizeof rd));
            }
        }
        for (int lane = 0; lane < V; lane++) {
            for (uint32_t s = 0; s < K->nstores; s++)
                clf__sb_printf(&src, "    %s s%u_%d;\n",
                               clf__cg_ctype(clf__graph_node(g, K->stores[s].node)->dtype), s, lane);
            clf__sb_puts(&src, "    clf_compute(");
            for (size_t s = 0; s < G.nslots; s++)
                clf__sb_printf(&src, "%sl%zu%s%s", s ? ", " : "", s,
                               G.slots[s].index.temp == 0 ? "." : "",
                               G.slots[s].index.temp == 0 ? vec_suffix(lane) : "");
            for (uint32_t s = 0; s < K->nstores; s++)
                clf__sb_printf(&src, "%s&s%u_%d", (s || G.nslots) ? ", " : "", s, lane);
            clf__sb_puts(&src, ");\n");
        }
        for (uint32_t s = 0; s < K->nstores; s++) {
            clf_dtype sdt = clf__graph_node(g, K->stores[s].node)->dtype;
            clf__strbuf v = {0};
            clf__sb_printf(&v, "(%s%d)(", clf__cg_ctype(sdt), V);
            for (int lane = 0; lane < V; lane++)
                clf__sb_printf(&v, "%ss%u_%d", lane ? ", " : "", s, lane);
            clf__sb_puts(&v, ")");
            clf__cg_store_vec(plan, &src, sdt, K->stores[s].buffer, "i", clf__sb_ok(&v) ? clf__sb_str(&v) : "0", V, false);
            if (!clf__sb_ok(&v))
                G.failed = true;
            clf__sb_free(&v);
        }
        clf__sb_puts(&src, "}\n\n");
    }
    clf__sb_puts(&src, "/* ---- kernels_templates/pointwise.cl ---- */\n");
    clf__sb_puts(&src, clf__template_pointwise);
    if (!clf__sb_ok(&src))
        goto done;
    out->source = clf__text_take(&src);
    if (!out->source)
        goto done;
    st = CLF_OK;

done:
    if (st != CLF_OK) {
        if (G.no_expression && st == CLF_ERR_OUT_OF_MEMORY) {
            st = CLF_ERR_INTERNAL;
            snprintf(err, errlen, "codegen: kernel %u: a %s node has no expression in a pointwise kernel (a planner fault)",
                     k, clf__node_op_name(G.no_expression));
        } else
            snprintf(err, errlen, "codegen: kernel %u: out of memory", k);
        clf__kernel_code_free(out);
    }
    for (uint32_t s = 0; owned && s < K->nstores; s++)
        clf__free(owned[s]);
    for (uint32_t s = 0; store_at && s < K->nstores; s++)
        clf__free(store_at[s]);
    clf__free(owned);
    clf__free(store_at);
    clf__free(store_vals);
    clf__cg_fn_free(&G);
    clf__sb_free(&lanes_fn);
    clf__sb_free(&src);
    return st;
}
