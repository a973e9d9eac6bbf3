/* The public ONNX API (onnx.h): reading a model's bytes from a file or
 * memory, choosing the syntax, running the reader and the importer, and
 * answering questions about the result. The model keeps the AST (names,
 * declarations, nodes) and the import's tables; the tensor data of the
 * AST is released as soon as the graph holds its copy. */
#include "clfuse/onnx.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx_ast.h"
#include "onnx_import.h"
#include "graph/graph_generalise.h"
#include "graph/graph_symbols.h"
#include "util/alloc.h"
#include "util/log.h"

/* An input or output as the queries give it, fixed at load time so that
 * the answers do not need the graph (which the caller may have taken). */
typedef struct io_entry {
    const clf__onnx_value *decl;
    clf_tensor t;
    clf_dtype dtype;
    int rank;
    int64_t shape[CLF_MAX_RANK];
} io_entry;

/* The AST, shared by the model and, where dimensions stay symbolic, by its
 * graph's regen, which imports it again at each new size (where the graph
 * is made node by node, try_by_nodes, only at sizes past its tables' rows)
 * and whose graphs borrow its initializers' bytes. */
typedef struct shared_ast {
    clf__onnx_model ast;
    int refs;
} shared_ast;

static void shared_release(shared_ast *a)
{
    if (a && __atomic_sub_fetch(&a->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        clf__onnx_ast_free(&a->ast);
        clf__free(a);
    }
}

struct clf_onnx_model {
    shared_ast *shared;
    clf__onnx_import imp;
    clf_graph *graph; /* NULL once taken */
    io_entry *inputs, *outputs;
    size_t ninputs, noutputs;
};

#define ERR_CAP 1024

/* Writes "NAME:[LINE:COL: ]reason" (text positions join the name without
 * a space, as compilers write them) to the caller's buffer, control
 * characters (a name's newline) written as '?'. */
static void report(const clf_onnx_params *p, const char *name, const char *reason)
{
    if (!p || !p->message || !p->message_cap)
        return;
    bool positioned = reason[0] >= '0' && reason[0] <= '9';
    snprintf(p->message, p->message_cap, "%s:%s%s", name, positioned ? "" : " ", reason);
    /* One line, whatever bytes a model's names hold. */
    for (char *c = p->message; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
}

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static clf_status fail(const clf_onnx_params *p, const char *name, clf_status st, const char *fmt, ...)
{
    char reason[ERR_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    report(p, name, reason);
    return st;
}

void clf_onnx_model_destroy(clf_onnx_model **m)
{
    if (!m || !*m)
        return;
    clf_onnx_model *M = *m;
    M->imp.g = NULL; /* the model's graph is M->graph */
    clf__onnx_import_free(&M->imp);
    clf_graph_destroy(&M->graph);
    shared_release(M->shared);
    clf__free(M->inputs);
    clf__free(M->outputs);
    clf__free(M);
    *m = NULL;
}

static const clf__onnx_import_value *find_value(const clf_onnx_model *m, const char *name)
{
    for (size_t i = m->imp.nvalues; i-- > 0;)
        if (!strcmp(m->imp.values[i].name, name))
            return &m->imp.values[i];
    return NULL;
}

static void fill_io(const clf_onnx_model *m, io_entry *e, const clf__onnx_value *decl)
{
    e->decl = decl;
    const clf__onnx_import_value *v = find_value(m, decl->name);
    e->t = v ? v->t : CLF_TENSOR_INVALID;
    if (clf_tensor_valid(e->t)) {
        clf_tensor_dtype(m->graph, e->t, &e->dtype);
        clf_tensor_shape(m->graph, e->t, &e->rank, e->shape);
    }
}

/* ---- Symbolic dimensions: the model imported again at each size ------------ */

static clf_status check_symbols(const clf_onnx_params *p, char *err, size_t cap)
{
    if (!p->symbols) {
        snprintf(err, cap, "clf_onnx_params: nsymbols is %zu but symbols is NULL", p->nsymbols);
        return CLF_ERR_INVALID_ARGUMENT;
    }
    if (p->ninputs) {
        snprintf(err, cap, "clf_onnx_params: give the sizes of other dimensions through dim_names, not inputs, "
                           "when dimensions are symbolic");
        return CLF_ERR_INVALID_ARGUMENT;
    }
    if (p->ndims && (!p->dim_names || !p->dim_values)) {
        snprintf(err, cap, "clf_onnx_params: ndims is %zu but dim_names or dim_values is NULL", p->ndims);
        return CLF_ERR_INVALID_ARGUMENT;
    }
    for (size_t i = 0; i < p->nsymbols; i++) {
        const clf_onnx_symbol *S = &p->symbols[i];
        if (!S->name || !S->name[0] || S->lo < 0 || S->hi < 0 || (S->hi && S->hi < S->lo)) {
            snprintf(err, cap, "clf_onnx_params: symbol %zu ('%s') has no name or bounds %lld..%lld (want 0 <= lo "
                               "<= hi, or hi 0 for none)",
                     i, S->name ? S->name : "", (long long)S->lo, (long long)S->hi);
            return CLF_ERR_INVALID_ARGUMENT;
        }
        for (size_t j = 0; j < i; j++)
            if (!strcmp(p->symbols[j].name, S->name)) {
                snprintf(err, cap, "clf_onnx_params: symbol '%s' is given twice", S->name);
                return CLF_ERR_INVALID_ARGUMENT;
            }
        for (size_t j = 0; j < p->ndims; j++)
            if (p->dim_names[j] && !strcmp(p->dim_names[j], S->name)) {
                snprintf(err, cap, "clf_onnx_params: '%s' is both given a size and kept symbolic", S->name);
                return CLF_ERR_INVALID_ARGUMENT;
            }
    }
    if ((p->nderived && !p->derived) || (p->nkv_caches && !p->kv_caches)) {
        const bool d = p->nderived && !p->derived;
        snprintf(err, cap, "clf_onnx_params: %s is %zu but %s is NULL", d ? "nderived" : "nkv_caches",
                 d ? p->nderived : p->nkv_caches, d ? "derived" : "kv_caches");
        return CLF_ERR_INVALID_ARGUMENT;
    }
    if (p->nsymbols > 64) {
        snprintf(err, cap, "clf_onnx_params: %zu symbols; a graph has at most 64", p->nsymbols);
        return CLF_ERR_UNSUPPORTED;
    }
    return CLF_OK;
}

/* What the graph's regen keeps: the AST and the dimension sizes of the
 * params, the symbols' after them. */
typedef struct regen_state {
    shared_ast *shared;
    const char **names; /* nfixed + nsyms; the strings are copies in strings */
    int64_t *values;    /* the fixed sizes (the symbols' are given to make) */
    size_t nfixed, nsyms;
    clf_onnx_derived_dim *derived; /* the params', their strings in strings */
    size_t nderived;
    clf_onnx_kv_cache *kv;
    size_t nkv;
    char *strings;
    clf__fold_memo *folds; /* the imports' constant folds, kept for the next */
    void **tables;         /* the graph's PREFIX tables (try_by_nodes) */
    size_t ntables;
} regen_state;

static void regen_release(void *state)
{
    regen_state *R = state;
    shared_release(R->shared);
    clf__free(R->names);
    clf__free(R->values);
    clf__free(R->derived);
    clf__free(R->kv);
    clf__free(R->strings);
    clf__fold_memo_free(R->folds);
    for (size_t i = 0; i < R->ntables; i++)
        clf__free(R->tables[i]);
    clf__free(R->tables);
    clf__free(R);
}

/* Imports the AST with the fixed sizes and the symbols at values, the
 * initializers borrowed. */
static clf_status import_at(const regen_state *R, const int64_t *values, clf__onnx_import *imp, char *err,
                            size_t cap)
{
    const size_t n = R->nfixed + R->nsyms;
    int64_t *all = clf__calloc(n ? n : 1, sizeof *all);
    if (!all) {
        memset(imp, 0, sizeof *imp);
        snprintf(err, cap, "out of memory");
        return CLF_ERR_OUT_OF_MEMORY;
    }
    memcpy(all, R->values, R->nfixed * sizeof *all);
    memcpy(all + R->nfixed, values, R->nsyms * sizeof *all);
    clf_status st =
        clf__onnx_import_model(&R->shared->ast,
                               clf_onnx_params(.dim_names = R->names, .dim_values = all, .ndims = n,
                                               .derived = R->derived, .nderived = R->nderived, .kv_caches = R->kv,
                                               .nkv_caches = R->nkv),
                               true, R->folds, imp, err, cap);
    clf__free(all);
    return st;
}

/* The regen's make: the graph at values. */
static clf_status regen_make(void *state, const int64_t *values, clf_graph **out, char *err, size_t cap)
{
    *out = NULL;
    clf__onnx_import imp;
    clf_status st = import_at(state, values, &imp, err, cap);
    if (st == CLF_OK) {
        *out = imp.g;
        imp.g = NULL;
        clf__onnx_import_free(&imp);
    }
    return st;
}

/* A copy of s at *at, which moves past it (NULL stays NULL). */
static const char *keep_str(char **at, const char *s)
{
    if (!s)
        return NULL;
    size_t len = strlen(s) + 1;
    char *copy = *at;
    memcpy(copy, s, len);
    *at += len;
    return copy;
}

/* A regen for m's AST with p's fixed sizes and symbols (NULL when out of
 * memory). */
static regen_state *regen_state_new(clf_onnx_model *m, const clf_onnx_params *p)
{
    regen_state *R = clf__calloc(1, sizeof *R);
    if (!R)
        return NULL;
    R->nfixed = p->ndims;
    R->nsyms = p->nsymbols;
    R->nderived = p->nderived; /* check_symbols: the arrays are there */
    R->nkv = p->nkv_caches;
    size_t bytes = 0;
    for (size_t i = 0; i < p->ndims; i++)
        bytes += strlen(p->dim_names[i]) + 1;
    for (size_t i = 0; i < p->nsymbols; i++)
        bytes += strlen(p->symbols[i].name) + 1;
    for (size_t i = 0; i < R->nderived; i++) {
        const clf_onnx_derived_dim *D = &p->derived[i];
        bytes += (D->name ? strlen(D->name) : 0) + (D->plus ? strlen(D->plus) : 0) +
                 (D->minus ? strlen(D->minus) : 0) + 3;
    }
    for (size_t i = 0; i < R->nkv; i++)
        bytes += (p->kv_caches[i].past ? strlen(p->kv_caches[i].past) : 0) +
                 (p->kv_caches[i].present ? strlen(p->kv_caches[i].present) : 0) + 2;
    R->names = clf__calloc(R->nfixed + R->nsyms + 1, sizeof *R->names);
    R->values = clf__calloc(R->nfixed + 1, sizeof *R->values);
    R->derived = clf__calloc(R->nderived + 1, sizeof *R->derived);
    R->kv = clf__calloc(R->nkv + 1, sizeof *R->kv);
    R->strings = clf__malloc(bytes + 1);
    R->folds = clf__fold_memo_new();
    if (!R->names || !R->values || !R->derived || !R->kv || !R->strings || !R->folds) {
        clf__free(R->names);
        clf__free(R->values);
        clf__free(R->derived);
        clf__free(R->kv);
        clf__free(R->strings);
        clf__fold_memo_free(R->folds);
        clf__free(R);
        return NULL;
    }
    char *at = R->strings;
    for (size_t i = 0; i < R->nderived; i++) {
        const clf_onnx_derived_dim *D = &p->derived[i];
        R->derived[i] = (clf_onnx_derived_dim){keep_str(&at, D->name), keep_str(&at, D->plus), keep_str(&at, D->minus)};
    }
    for (size_t i = 0; i < R->nkv; i++) {
        const clf_onnx_kv_cache *C = &p->kv_caches[i];
        R->kv[i] = (clf_onnx_kv_cache){keep_str(&at, C->past), keep_str(&at, C->present), C->capacity};
    }
    for (size_t i = 0; i < R->nfixed + R->nsyms; i++) {
        const char *name = i < R->nfixed ? p->dim_names[i] : p->symbols[i - R->nfixed].name;
        size_t len = strlen(name) + 1;
        memcpy(at, name, len);
        R->names[i] = at;
        at += len;
        if (i < R->nfixed)
            R->values[i] = p->dim_values[i];
    }
    __atomic_add_fetch(&m->shared->refs, 1, __ATOMIC_RELAXED);
    R->shared = m->shared;
    return R;
}

/* Sizes of g's symbols for the imports that check whether g can be made
 * again node by node: k = 0 and 1, two sizes above the lower bound, each
 * symbol's pair unlike the others' (clf__graph_generalise tells the
 * symbols apart by them); k = 2, the lower bounds (at least 1: the size-1
 * class of a decoder's steps). False where the bounds leave no room. */
static bool check_sizes(const clf_graph *g, int k, int64_t *v)
{
    for (size_t s = 0; s < g->nsyms; s++) {
        const clf__dim_sym *S = &g->syms[s];
        const int64_t lo = S->lo > 1 ? S->lo : 1;
        v[s] = k == 0 ? lo + 5 + 2 * (int64_t)s : k == 1 ? lo + 11 + 3 * (int64_t)s : lo;
        if (S->hi && v[s] > S->hi)
            return false;
    }
    return true;
}

/* The sizes try_by_nodes imports the model at for its tables: each
 * symbol's upper bound, or less where the product of the sizes times the
 * largest (a batch of square masks the import folds) would pass
 * TOP_IMPORT_ELEMS: then every symbol is cut to one power of two. Sizes
 * past a table's rows are imported again (clf__graph_specialise). */
#define TOP_IMPORT_ELEMS ((double)(1 << 22))

static void top_sizes(const clf_graph *g, int64_t *v)
{
    for (int64_t cut = (int64_t)1 << 30;; cut /= 2) {
        double product = 1, largest = 1;
        for (size_t s = 0; s < g->nsyms; s++) {
            const int64_t hi = g->syms[s].hi;
            v[s] = hi && hi < cut ? hi : cut;
            product *= (double)v[s];
            largest = (double)v[s] > largest ? (double)v[s] : largest;
        }
        if (product * largest <= TOP_IMPORT_ELEMS || cut == 1)
            return;
    }
}

/* Moves g's PREFIX tables (pointing into the graph at the upper bounds)
 * into R, which keeps them as long as the graph and its copies; false
 * when out of memory. */
static bool keep_tables(regen_state *R, clf_graph *g)
{
    for (size_t i = 0; i < g->nnodes; i++) {
        clf__node *n = &g->nodes[i];
        if (n->gen.kind != CLF__GEN_PREFIX)
            continue;
        const size_t bytes = clf__graph_prefix_table_bytes(n);
        void **tables = clf__realloc(R->tables, (R->ntables + 1) * sizeof *tables);
        void *copy = clf__malloc(bytes ? bytes : 1);
        if (tables)
            R->tables = tables;
        if (!tables || !copy) {
            clf__free(copy);
            return false;
        }
        memcpy(copy, n->gen.table, bytes);
        n->gen.table = R->tables[R->ntables++] = copy;
    }
    return true;
}

/* Imports the model at three more sizes and, where every extent and
 * constant that changes with them is a symbol's size or made from shapes
 * (graph_generalise.h), makes g (the import at the stand-in sizes) again
 * node by node from then on: a new size costs a copy of the graph, not an
 * import. Where a constant is a table's rows (a position embedding), the
 * model is imported at the symbols' upper bounds too (top_sizes), for the
 * tables. Else g keeps its regen; the log says why. */
static void try_by_nodes(regen_state *R, clf_graph *g, clf__graph_regen *regen)
{
    enum { NCHECK = 3 };
    clf__onnx_import imps[NCHECK + 1];
    int64_t values[NCHECK + 1][CLF__MAX_SYMS];
    clf__graph_at at[NCHECK + 1];
    size_t n = 0;
    char why[400] = "", err[320];
    bool ok = true;
    for (int k = 0; ok && k < NCHECK; k++) {
        if (!(ok = check_sizes(g, k, values[k]))) {
            snprintf(why, sizeof why, "the bounds leave no room for the sizes it is checked at");
        } else if (import_at(R, values[k], &imps[k], err, sizeof err) != CLF_OK) {
            snprintf(why, sizeof why, "an import at other sizes failed: %s", err);
            ok = false;
        } else {
            at[n++] = (clf__graph_at){imps[k].g, values[k]};
        }
    }
    bool wants_table = false;
    bool by_nodes = ok && clf__graph_generalise(g, at, n, NULL, &wants_table, why, sizeof why);
    if (wants_table &&
        (top_sizes(g, values[n]), import_at(R, values[n], &imps[n], err, sizeof err) == CLF_OK)) {
        at[n] = (clf__graph_at){imps[n].g, values[n]};
        n++;
        by_nodes = clf__graph_generalise(g, at, n, &at[n - 1], NULL, why, sizeof why);
        if (by_nodes && !keep_tables(R, g)) {
            /* No tables pointing into the import about to go: the regen
             * makes the graph at new sizes as before. */
            for (size_t i = 0; i < g->nnodes; i++)
                if (g->nodes[i].gen.kind == CLF__GEN_PREFIX)
                    memset(&g->nodes[i].gen, 0, sizeof g->nodes[i].gen);
            by_nodes = false;
            snprintf(why, sizeof why, "out of memory for its tables");
        }
    }
    for (size_t k = 0; k < n; k++)
        clf__onnx_import_free(&imps[k]);
    if (by_nodes) {
        /* Checked at these sizes and the stand-in's; larger ones are
         * checked as runs meet them (clf__graph_specialise_checked). */
        for (size_t s = 0; s < g->nsyms; s++) {
            regen->upto[s] = g->syms[s].rep;
            for (size_t k = 0; k < n; k++)
                regen->upto[s] = values[k][s] > regen->upto[s] ? values[k][s] : regen->upto[s];
        }
        regen->by_nodes = true;
        clf__log(CLF__LOG_CACHE, "symbolic sizes: the model's graph is made again node by node at new sizes");
    } else {
        clf__log(CLF__LOG_CACHE, "symbolic sizes: the model is imported again at each new size: %s", why);
    }
}

/* Imports m's AST at the symbols' stand-in sizes, keeping its data, and
 * makes the graph symbolic with a regen that imports it again (made node
 * by node instead where it can be: try_by_nodes). */
static clf_status import_symbolic(clf_onnx_model *m, const clf_onnx_params *p, char *err, size_t cap)
{
    const clf__onnx_model *ast = &m->shared->ast;
    int64_t lo[64], hi[64], values[64];
    const char *names[64];
    for (size_t i = 0; i < p->nsymbols; i++) {
        names[i] = p->symbols[i].name;
        lo[i] = p->symbols[i].lo;
        hi[i] = p->symbols[i].hi;
        values[i] = clf__graph_dim_rep(lo[i], hi[i]);
    }
    regen_state *R = regen_state_new(m, p);
    clf__graph_regen *regen = R ? clf__graph_regen_new(regen_make, regen_release, R) : NULL;
    if (!regen) {
        if (R)
            regen_release(R);
        snprintf(err, cap, "out of memory");
        return CLF_ERR_OUT_OF_MEMORY;
    }
    /* The model's import, at the stand-in sizes: its graph becomes the
     * symbolic one. */
    clf_status st = import_at(R, values, &m->imp, err, cap);
    clf_graph *g = m->imp.g;
    /* Which axes of the inputs and outputs are the symbols, by their
     * declarations' dim_param. */
    const char *(*dims)[CLF_MAX_RANK] = NULL;
    if (st == CLF_OK) {
        size_t nio = g->ninputs + g->noutputs, k = 0;
        dims = clf__calloc(nio ? nio : 1, sizeof *dims);
        if (!dims) {
            snprintf(err, cap, "out of memory");
            st = CLF_ERR_OUT_OF_MEMORY;
        }
        for (int i = 0; dims && i < ast->ninputs && k < g->ninputs; i++) {
            if (ast->inputs[i].init)
                continue;
            for (int d = 0; d < ast->inputs[i].type.rank && d < CLF_MAX_RANK; d++)
                dims[k][d] = ast->inputs[i].type.dims[d].param;
            k++;
        }
        for (int i = 0; dims && i < ast->noutputs && (size_t)i < g->noutputs; i++)
            for (int d = 0; d < ast->outputs[i].type.rank && d < CLF_MAX_RANK; d++)
                dims[g->ninputs + (size_t)i][d] = ast->outputs[i].type.dims[d].param;
        /* A KV cache's input and output hold its capacity on the axis where
         * their declarations differ: no symbol there. */
        for (size_t c = 0; dims && c < R->nkv; c++) {
            long in = -1, out = -1;
            for (size_t t = 0; t < g->ninputs; t++)
                if (!strcmp(g->nodes[g->inputs[t]].name, R->kv[c].past))
                    in = (long)t;
            for (size_t t = 0; t < g->noutputs; t++)
                if (!strcmp(g->outputs[t].name, R->kv[c].present))
                    out = (long)(g->ninputs + t);
            for (int d = 0; in >= 0 && out >= 0 && d < CLF_MAX_RANK; d++) {
                const char *a = dims[in][d], *b = dims[out][d];
                if ((a || b) && (!a || !b || strcmp(a, b)))
                    dims[in][d] = dims[out][d] = NULL;
            }
        }
    }
    if (st == CLF_OK)
        st = clf__graph_make_symbolic(g, p->nsymbols, names, lo, hi, (const char *const(*)[CLF_MAX_RANK])dims, regen,
                                      err, cap);
    clf__free(dims);
    if (st != CLF_OK)
        clf__graph_regen_release(regen);
    else
        try_by_nodes(R, g, regen);
    return st;
}

/* Reads and imports size bytes; name and base_dir as the callers say. */
static clf_status load(const void *data, size_t size, const char *base_dir, const char *name,
                       const clf_onnx_params *p, clf_onnx_model **out)
{
    char err[ERR_CAP] = "";
    if (!size)
        return fail(p, name, CLF_ERR_MODEL, "the model is empty (0 bytes)");
    clf_onnx_format format = p ? p->format : CLF_ONNX_FORMAT_AUTO;
    if (format == CLF_ONNX_FORMAT_AUTO)
        format = clf__onnx_looks_like_text(data, size) ? CLF_ONNX_FORMAT_TEXT : CLF_ONNX_FORMAT_BINARY;
    if (format != CLF_ONNX_FORMAT_TEXT && format != CLF_ONNX_FORMAT_BINARY)
        return fail(p, name, CLF_ERR_INVALID_ARGUMENT, "clf_onnx_params.format %d is not a clf_onnx_format",
                    (int)format);
    const bool symbolic = p && p->nsymbols;
    clf_status st = symbolic ? check_symbols(p, err, sizeof err) : CLF_OK;
    if (st != CLF_OK)
        return fail(p, name, st, "%s", err);
    clf_onnx_model *m = clf__calloc(1, sizeof *m);
    if (m && !(m->shared = clf__calloc(1, sizeof *m->shared)))
        clf__free(m), m = NULL;
    if (!m)
        return fail(p, name, CLF_ERR_OUT_OF_MEMORY, "out of memory");
    m->shared->refs = 1;
    st = format == CLF_ONNX_FORMAT_TEXT ? clf__onnx_parse_text(data, size, &m->shared->ast, err, sizeof err)
                                        : clf__onnx_read_binary(data, size, base_dir, &m->shared->ast, err, sizeof err);
    if (st == CLF_OK && symbolic) {
        st = import_symbolic(m, p, err, sizeof err);
    } else if (st == CLF_OK) {
        st = clf__onnx_import_model(&m->shared->ast, p, false, NULL, &m->imp, err, sizeof err);
        /* The graph has its own copy of every constant now. */
        if (st == CLF_OK)
            clf__onnx_release_data(&m->shared->ast);
    }
    m->graph = m->imp.g; /* the model's even when a later step failed, so that it is destroyed */
    if (st != CLF_OK)
        goto failed;
    for (int i = 0; i < m->shared->ast.ninputs; i++)
        m->ninputs += !m->shared->ast.inputs[i].init;
    m->noutputs = (size_t)m->shared->ast.noutputs;
    m->inputs = clf__calloc(m->ninputs ? m->ninputs : 1, sizeof *m->inputs);
    m->outputs = clf__calloc(m->noutputs ? m->noutputs : 1, sizeof *m->outputs);
    if (!m->inputs || !m->outputs) {
        st = CLF_ERR_OUT_OF_MEMORY;
        snprintf(err, sizeof err, "out of memory");
        goto failed;
    }
    for (int i = 0, k = 0; i < m->shared->ast.ninputs; i++)
        if (!m->shared->ast.inputs[i].init)
            fill_io(m, &m->inputs[k++], &m->shared->ast.inputs[i]);
    for (size_t i = 0; i < m->noutputs; i++)
        fill_io(m, &m->outputs[i], &m->shared->ast.outputs[i]);
    *out = m;
    return CLF_OK;
failed:
    report(p, name, err);
    clf_onnx_model_destroy(&m);
    return st;
}

clf_status clf_onnx_load_memory(const void *data, size_t size, const char *base_dir, const clf_onnx_params *params,
                                clf_onnx_model **out)
{
    const char *name = params && params->name ? params->name : "<memory>";
    if (!out)
        return fail(params, name, CLF_ERR_INVALID_ARGUMENT, "clf_onnx_load_memory: out is NULL");
    *out = NULL;
    if (!data && size)
        return fail(params, name, CLF_ERR_INVALID_ARGUMENT, "clf_onnx_load_memory: data is NULL");
    return load(data, size, base_dir, name, params, out);
}

/* The folder holding path ("." for a bare file name) into buf. */
static bool folder_of(const char *path, char *buf, size_t cap)
{
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) : 0;
    if (slash && n == 0)
        n = 1; /* "/model.onnx" */
    if (n + 2 > cap)
        return false;
    if (slash)
        memcpy(buf, path, n);
    else
        buf[n++] = '.';
    buf[n] = 0;
    return true;
}

clf_status clf_onnx_load_file(const char *path, const clf_onnx_params *params, clf_onnx_model **out)
{
    const char *name = params && params->name ? params->name : path;
    if (!out || !path)
        return fail(params, name ? name : "<null>", CLF_ERR_INVALID_ARGUMENT, "clf_onnx_load_file: %s is NULL",
                    out ? "path" : "out");
    *out = NULL;
    char dir[4096];
    if (!folder_of(path, dir, sizeof dir))
        return fail(params, name, CLF_ERR_INVALID_ARGUMENT, "the path is too long");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(params, name, CLF_ERR_IO, "cannot open: %s", strerror(errno));
    clf_status st;
    struct stat sb;
    void *map = NULL;
    char *buf = NULL;
    size_t size = 0;
    if (fstat(fd, &sb) != 0) {
        st = fail(params, name, CLF_ERR_IO, "cannot stat: %s", strerror(errno));
        goto done;
    }
    if (S_ISDIR(sb.st_mode)) {
        st = fail(params, name, CLF_ERR_IO, "is a folder, not a model file");
        goto done;
    }
    /* A regular file is mapped: its bytes are paged in as the reader goes
     * and never copied. Anything else (a pipe) is read whole. */
    if (S_ISREG(sb.st_mode) && sb.st_size > 0 && (uintmax_t)sb.st_size <= SIZE_MAX) {
        size = (size_t)sb.st_size;
        map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED)
            map = NULL;
    }
    if (!map) {
        size_t cap = 0;
        size = 0;
        for (;;) {
            if (size == cap) {
                size_t nc = cap ? cap * 2 : 65536;
                char *nb = nc > cap ? clf__realloc(buf, nc) : NULL;
                if (!nb) {
                    st = fail(params, name, CLF_ERR_OUT_OF_MEMORY, "out of memory reading the file");
                    goto done;
                }
                buf = nb;
                cap = nc;
            }
            ssize_t r = read(fd, buf + size, cap - size);
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0) {
                st = fail(params, name, CLF_ERR_IO, "read error: %s", strerror(errno));
                goto done;
            }
            if (r == 0)
                break;
            size += (size_t)r;
        }
    }
    st = load(map ? map : buf, size, dir, name, params, out);
done:
    if (map)
        munmap(map, size);
    clf__free(buf);
    close(fd);
    return st;
}

clf_graph *clf_onnx_model_graph(clf_onnx_model *m) { return m ? m->graph : NULL; }

clf_graph *clf_onnx_model_take_graph(clf_onnx_model *m)
{
    if (!m)
        return NULL;
    clf_graph *g = m->graph;
    m->graph = NULL;
    return g;
}

clf_status clf_onnx_model_get_info(const clf_onnx_model *m, clf_onnx_model_info *out)
{
    if (!m || !out)
        return CLF_ERR_INVALID_ARGUMENT;
    *out = (clf_onnx_model_info){m->shared->ast.name, m->shared->ast.producer, m->shared->ast.ir_version, m->shared->ast.opset, m->shared->ast.format};
    return CLF_OK;
}

size_t clf_onnx_model_input_count(const clf_onnx_model *m) { return m ? m->ninputs : 0; }
size_t clf_onnx_model_output_count(const clf_onnx_model *m) { return m ? m->noutputs : 0; }

static void describe_io(const io_entry *e, clf_onnx_io *out)
{
    const clf__onnx_type *t = &e->decl->type;
    memset(out, 0, sizeof *out);
    out->name = e->decl->name;
    out->onnx_dtype = clf__onnx_elem_name(t->elem);
    out->onnx_elem_type = t->elem;
    out->rank = t->has_shape ? t->rank : -1;
    for (int d = 0; t->has_shape && d < t->rank; d++) {
        out->dim_params[d] = t->dims[d].param;
        out->dims[d] = t->dims[d].param ? -1 : t->dims[d].value;
    }
    out->tensor = e->t;
    out->dtype = e->dtype;
    out->graph_rank = e->rank;
    memcpy(out->shape, e->shape, sizeof out->shape);
}

clf_status clf_onnx_model_input(const clf_onnx_model *m, size_t i, clf_onnx_io *out)
{
    if (!m || !out)
        return CLF_ERR_INVALID_ARGUMENT;
    if (i >= m->ninputs)
        return CLF_ERR_NOT_FOUND;
    describe_io(&m->inputs[i], out);
    return CLF_OK;
}

clf_status clf_onnx_model_output(const clf_onnx_model *m, size_t i, clf_onnx_io *out)
{
    if (!m || !out)
        return CLF_ERR_INVALID_ARGUMENT;
    if (i >= m->noutputs)
        return CLF_ERR_NOT_FOUND;
    describe_io(&m->outputs[i], out);
    return CLF_OK;
}

size_t clf_onnx_model_node_count(const clf_onnx_model *m) { return m ? (size_t)m->shared->ast.nnodes : 0; }

clf_status clf_onnx_model_node(const clf_onnx_model *m, size_t i, clf_onnx_node *out)
{
    if (!m || !out)
        return CLF_ERR_INVALID_ARGUMENT;
    if (i >= (size_t)m->shared->ast.nnodes)
        return CLF_ERR_NOT_FOUND;
    const clf__onnx_node *n = &m->shared->ast.nodes[i];
    *out = (clf_onnx_node){
        .name = n->name,
        .op_type = n->op,
        .domain = n->domain,
        .inputs = n->inputs,
        .outputs = n->outputs,
        .ninputs = (size_t)n->ninputs,
        .noutputs = (size_t)n->noutputs,
        .first_graph_node = m->imp.nodes[i].first,
        .end_graph_node = m->imp.nodes[i].end,
        .line = n->pos.line,
        .col = n->pos.col,
    };
    return CLF_OK;
}

size_t clf_onnx_model_value_count(const clf_onnx_model *m) { return m ? m->imp.nvalues : 0; }

clf_status clf_onnx_model_value(const clf_onnx_model *m, size_t i, clf_onnx_value *out)
{
    if (!m || !out)
        return CLF_ERR_INVALID_ARGUMENT;
    if (i >= m->imp.nvalues)
        return CLF_ERR_NOT_FOUND;
    const clf__onnx_import_value *v = &m->imp.values[i];
    *out = (clf_onnx_value){v->name, v->t, v->producer};
    return CLF_OK;
}

clf_status clf_onnx_model_find_value(const clf_onnx_model *m, const char *name, clf_onnx_value *out)
{
    if (!m || !name || !out)
        return CLF_ERR_INVALID_ARGUMENT;
    const clf__onnx_import_value *v = find_value(m, name);
    if (!v)
        return CLF_ERR_NOT_FOUND;
    *out = (clf_onnx_value){v->name, v->t, v->producer};
    return CLF_OK;
}
