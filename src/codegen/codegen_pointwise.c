/* Writes the OpenCL C for one pointwise kernel of a plan: the region's
 * values as named temporaries in clf_compute(), the loads and stores around
 * it in clf_point() and clf_vec(), prepended to kernels_templates/pointwise.cl. */
#include "codegen/codegen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen_index.h"
#include "codegen/templates.h"
#include "util/strbuf.h"

static const char *const ctype_names[CLF_DTYPE_COUNT] = {"float", "int", "uchar"};
_Static_assert(CLF_DTYPE_COUNT == 3, "one OpenCL type per dtype");

typedef struct memo_entry {
    char *key;
    char *value;
} memo_entry;

typedef struct load_slot {
    uint32_t buffer;
    clf__ix index;
    clf_dtype dtype;
} load_slot;

typedef struct gen {
    const clf_graph *g;
    const clf__plan *plan;
    uint32_t k;
    clf__ixgen ix;
    clf__strbuf idx_code; /* index temporaries, in clf_point / clf_vec */
    clf__strbuf body;     /* clf_compute's statements */
    memo_entry *memo;
    size_t nmemo, cap_memo;
    load_slot *slots;
    size_t nslots, cap_slots;
    int ntemps;
    bool failed;
} gen;

static const char *memo_get(gen *G, const char *key)
{
    for (size_t i = 0; i < G->nmemo; i++)
        if (strcmp(G->memo[i].key, key) == 0)
            return G->memo[i].value;
    return NULL;
}

static const char *memo_put(gen *G, const char *key, const char *value)
{
    if (G->nmemo == G->cap_memo) {
        size_t cap = G->cap_memo ? G->cap_memo * 2 : 64;
        memo_entry *p = realloc(G->memo, cap * sizeof *p);
        if (!p) {
            G->failed = true;
            return "0";
        }
        G->memo = p;
        G->cap_memo = cap;
    }
    memo_entry e = {clf__strdup(key), clf__strdup(value)};
    if (!e.key || !e.value) {
        free(e.key);
        free(e.value);
        G->failed = true;
        return "0";
    }
    G->memo[G->nmemo++] = e;
    return e.value;
}

/* The literal for a scalar value of a dtype, exact for f32. */
static void literal(clf__strbuf *sb, clf_dtype dt, double v)
{
    if (dt == CLF_F32) {
        float f = (float)v;
        if (isnan(f))
            clf__sb_puts(sb, "NAN");
        else if (isinf(f))
            clf__sb_puts(sb, f > 0 ? "INFINITY" : "(-INFINITY)");
        else
            clf__sb_printf(sb, "(%af)", (double)f);
    } else if (dt == CLF_I32) {
        int32_t i = (int32_t)v;
        if (i == INT32_MIN)
            clf__sb_puts(sb, "(-2147483647 - 1)");
        else
            clf__sb_printf(sb, "(%d)", (int)i);
    } else {
        clf__sb_printf(sb, "((uchar)%d)", v != 0);
    }
}

static double constant_value(const clf__node *n)
{
    switch (n->dtype) {
    case CLF_F32:
        return ((const float *)n->data)[0];
    case CLF_I32:
        return ((const int32_t *)n->data)[0];
    default:
        return ((const uint8_t *)n->data)[0];
    }
}

/* printf format of a unary op's expression over $1, by dtype. */
static const char *unary_format(clf_unary_op op, clf_dtype dt)
{
    if (dt == CLF_I32) {
        switch (op) {
        case CLF_UNARY_NEG: return "as_int(0u - as_uint($1))";
        case CLF_UNARY_ABS: return "($1 < 0 ? as_int(0u - as_uint($1)) : $1)";
        case CLF_UNARY_SIGN: return "(($1 > 0) - ($1 < 0))";
        default: return NULL;
        }
    }
    if (dt == CLF_BOOL)
        return op == CLF_UNARY_NOT ? "(uchar)(!$1)" : NULL;
    switch (op) {
    case CLF_UNARY_NEG: return "(-$1)";
    case CLF_UNARY_ABS: return "fabs($1)";
    case CLF_UNARY_EXP: return "exp($1)";
    case CLF_UNARY_LOG: return "log($1)";
    case CLF_UNARY_SQRT: return "sqrt($1)";
    case CLF_UNARY_RSQRT: return "rsqrt($1)";
    case CLF_UNARY_RECIPROCAL: return "(1.0f / $1)";
    case CLF_UNARY_SIN: return "sin($1)";
    case CLF_UNARY_COS: return "cos($1)";
    case CLF_UNARY_TANH: return "tanh($1)";
    case CLF_UNARY_SIGMOID: return "(1.0f / (1.0f + exp(-$1)))";
    case CLF_UNARY_RELU: return "($1 < 0.0f ? 0.0f : $1)";
    case CLF_UNARY_GELU: return "(0.5f * $1 * (1.0f + erf($1 * 0x1.6a09e6p-1f)))";
    case CLF_UNARY_SILU: return "($1 / (1.0f + exp(-$1)))";
    case CLF_UNARY_ERF: return "erf($1)";
    case CLF_UNARY_FLOOR: return "floor($1)";
    case CLF_UNARY_CEIL: return "ceil($1)";
    case CLF_UNARY_SIGN: return "($1 > 0.0f ? 1.0f : ($1 < 0.0f ? -1.0f : $1))";
    default: return NULL;
    }
}

/* printf format of a binary op over $1 and $2, by operand dtype. */
static const char *binary_format(clf_binary_op op, clf_dtype dt)
{
    switch (op) {
    case CLF_BINARY_ADD:
        return dt == CLF_I32 ? "as_int(as_uint($1) + as_uint($2))" : "($1 + $2)";
    case CLF_BINARY_SUB:
        return dt == CLF_I32 ? "as_int(as_uint($1) - as_uint($2))" : "($1 - $2)";
    case CLF_BINARY_MUL:
        return dt == CLF_I32 ? "as_int(as_uint($1) * as_uint($2))" : "($1 * $2)";
    case CLF_BINARY_DIV:
        return dt == CLF_I32 ? "($2 == 0 ? 0 : ($2 == -1 ? as_int(0u - as_uint($1)) : "
                               "$1 / $2))"
                             : "($1 / $2)";
    case CLF_BINARY_POW: return "pow($1, $2)";
    case CLF_BINARY_MAXIMUM:
        return dt == CLF_I32 ? "max($1, $2)" : "(($1 > $2 || isnan($1)) ? $1 : $2)";
    case CLF_BINARY_MINIMUM:
        return dt == CLF_I32 ? "min($1, $2)" : "(($1 < $2 || isnan($1)) ? $1 : $2)";
    case CLF_BINARY_EQ: return "(uchar)($1 == $2)";
    case CLF_BINARY_NE: return "(uchar)($1 != $2)";
    case CLF_BINARY_LT: return "(uchar)($1 < $2)";
    case CLF_BINARY_LE: return "(uchar)($1 <= $2)";
    case CLF_BINARY_GT: return "(uchar)($1 > $2)";
    case CLF_BINARY_GE: return "(uchar)($1 >= $2)";
    case CLF_BINARY_AND: return "(uchar)($1 && $2)";
    case CLF_BINARY_OR: return "(uchar)($1 || $2)";
    default: return NULL;
    }
}

static const char *cast_format(clf_dtype from, clf_dtype to)
{
    if (from == to)
        return "$1";
    if (to == CLF_BOOL)
        return from == CLF_F32 ? "(uchar)($1 != 0.0f)" : "(uchar)($1 != 0)";
    if (to == CLF_I32)
        return from == CLF_F32 ? "convert_int_sat_rtz($1)" : "(int)$1";
    return "(float)$1";
}

/* The i32 bound of clip: rounded toward zero and clamped to int32. */
static int32_t clip_bound_i32(double v)
{
    if (isnan(v))
        return 0;
    if (v <= (double)INT32_MIN)
        return INT32_MIN;
    if (v >= (double)INT32_MAX)
        return INT32_MAX;
    return (int32_t)v;
}

static const char *value_of(gen *G, uint32_t id, const clf__view *v);

/* Appends fmt with $1, $2, $3 replaced by args[0..2]. */
static void subst(clf__strbuf *sb, const char *fmt, const char *const *args)
{
    for (const char *p = fmt; *p; p++) {
        if (p[0] == '$' && p[1] >= '1' && p[1] <= '3') {
            clf__sb_puts(sb, args[p[1] - '1']);
            p++;
        } else {
            clf__sb_putn(sb, p, 1);
        }
    }
}

/* A load slot for buffer at index, reused when the same element is loaded
 * twice; returns its parameter name in clf_compute. */
static const char *load(gen *G, uint32_t buffer, clf__ix index, clf_dtype dt, char *name, size_t cap)
{
    size_t s;
    for (s = 0; s < G->nslots; s++)
        if (G->slots[s].buffer == buffer && G->slots[s].index.temp == index.temp &&
            (index.temp >= 0 || G->slots[s].index.c == index.c))
            break;
    if (s == G->nslots) {
        if (G->nslots == G->cap_slots) {
            size_t c = G->cap_slots ? G->cap_slots * 2 : 16;
            load_slot *p = realloc(G->slots, c * sizeof *p);
            if (!p) {
                G->failed = true;
                snprintf(name, cap, "0");
                return name;
            }
            G->slots = p;
            G->cap_slots = c;
        }
        G->slots[G->nslots++] = (load_slot){buffer, index, dt};
    }
    snprintf(name, cap, "l%zu", s);
    return name;
}

/* Emits the statement computing node n from its input values; returns the
 * temporary's name. */
static const char *compute(gen *G, const clf__node *n, const char *const *args, const char *key)
{
    char name[32];
    snprintf(name, sizeof name, "v%d", G->ntemps++);
    const char *ty = ctype_names[n->dtype];
    clf__strbuf *b = &G->body;
    const clf__node *in0 = clf__graph_node(G->g, n->inputs[0]);
    clf__sb_printf(b, "    const %s %s = ", ty, name);
    switch (n->kind) {
    case CLF__NODE_UNARY: {
        const char *f = unary_format((clf_unary_op)n->op, in0->dtype);
        if (!f) {
            G->failed = true;
            f = "$1";
        }
        subst(b, f, args);
        break;
    }
    case CLF__NODE_BINARY: {
        const char *f = binary_format((clf_binary_op)n->op, in0->dtype);
        if (!f) {
            G->failed = true;
            f = "$1";
        }
        subst(b, f, args);
        break;
    }
    case CLF__NODE_WHERE:
        clf__sb_printf(b, "(%s ? %s : %s)", args[0], args[1], args[2]);
        break;
    case CLF__NODE_CAST:
        subst(b, cast_format(in0->dtype, n->dtype), args);
        break;
    case CLF__NODE_CLIP: {
        /* x below lo becomes lo, then above hi becomes hi; NaN compares
         * false and passes through. */
        clf__strbuf lo = {0}, hi = {0};
        bool has_lo, has_hi;
        if (n->dtype == CLF_I32) {
            int32_t l = clip_bound_i32(n->lo), h = clip_bound_i32(n->hi);
            has_lo = !(isinf(n->lo) && n->lo < 0) && l != INT32_MIN;
            has_hi = !(isinf(n->hi) && n->hi > 0) && h != INT32_MAX;
            literal(&lo, CLF_I32, l);
            literal(&hi, CLF_I32, h);
        } else {
            has_lo = !isnan(n->lo) && !(isinf(n->lo) && n->lo < 0);
            has_hi = !isnan(n->hi) && !(isinf(n->hi) && n->hi > 0);
            literal(&lo, CLF_F32, n->lo);
            literal(&hi, CLF_F32, n->hi);
        }
        const char *cargs[3] = {args[0], clf__sb_str(&lo), clf__sb_str(&hi)};
        if (has_lo && has_hi)
            subst(b, "(($1 < $2 ? $2 : $1) > $3 ? $3 : ($1 < $2 ? $2 : $1))", cargs);
        else if (has_lo)
            subst(b, "($1 < $2 ? $2 : $1)", cargs);
        else if (has_hi)
            subst(b, "($1 > $3 ? $3 : $1)", cargs);
        else
            clf__sb_puts(b, args[0]);
        if (!clf__sb_ok(&lo) || !clf__sb_ok(&hi))
            G->failed = true;
        clf__sb_free(&lo);
        clf__sb_free(&hi);
        break;
    }
    default:
        G->failed = true;
        clf__sb_puts(b, "0");
    }
    clf__sb_printf(b, "; /* %s */\n", clf__node_op_name(n));
    return memo_put(G, key, name);
}

/* The expression for node id's value at view v inside this kernel: a
 * literal, a load slot, or a temporary computed here. */
static const char *value_of(gen *G, uint32_t id, const clf__view *v)
{
    const clf__node *n = clf__graph_node(G->g, id);
    clf__strbuf key = {0};
    clf__sb_printf(&key, "n%u:", id);
    clf__view_key(v, n->rank, &key);
    if (!clf__sb_ok(&key)) {
        G->failed = true;
        return "0";
    }
    const char *hit = memo_get(G, clf__sb_str(&key));
    if (hit) {
        clf__sb_free(&key);
        return hit;
    }
    const char *result;
    char buf[48];
    int32_t src = G->plan->src_buffer[id];
    bool leaf = clf__node_class_of(n) == CLF__CLASS_LEAF;
    if (clf__plan_is_literal(n)) {
        clf__strbuf lit = {0};
        literal(&lit, n->dtype, constant_value(n));
        result = memo_put(G, clf__sb_str(&key), clf__sb_ok(&lit) ? clf__sb_str(&lit) : "0");
        clf__sb_free(&lit);
    } else if (src >= 0 && (leaf || G->plan->producer[id] != (int32_t)G->k)) {
        clf__ix idx = clf__view_linear(&G->ix, v, n->rank, n->shape);
        result = memo_put(G, clf__sb_str(&key), load(G, (uint32_t)src, idx, n->dtype, buf, sizeof buf));
    } else if (clf__node_class_of(n) == CLF__CLASS_MOVEMENT) {
        clf__view in;
        clf__view_input(&G->ix, G->g, n, 0, v, &in);
        result = memo_put(G, clf__sb_str(&key), value_of(G, n->inputs[0], &in));
    } else {
        const char *args[3] = {"0", "0", "0"};
        char *owned[3] = {NULL, NULL, NULL};
        for (int i = 0; i < n->ninputs; i++) {
            clf__view in;
            clf__view_input(&G->ix, G->g, n, i, v, &in);
            owned[i] = clf__strdup(value_of(G, n->inputs[i], &in));
            if (!owned[i])
                G->failed = true;
            else
                args[i] = owned[i];
        }
        result = compute(G, n, args, clf__sb_str(&key));
        for (int i = 0; i < 3; i++)
            free(owned[i]);
    }
    clf__sb_free(&key);
    return result;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* clf_poi_fused_<sorted distinct op names>_<k>, or clf_poi_copy_<k>. */
static char *kernel_name(const clf_graph *g, const clf__plan_kernel *K, uint32_t k)
{
    const char **names = malloc((K->nops ? K->nops : 1) * sizeof *names);
    if (!names)
        return NULL;
    size_t nn = 0;
    for (uint32_t i = 0; i < K->nops; i++)
        names[nn++] = clf__node_op_name(clf__graph_node(g, K->ops[i]));
    qsort(names, nn, sizeof *names, cmp_str);
    clf__strbuf sb = {0};
    clf__sb_puts(&sb, nn ? "clf_poi_fused" : "clf_poi_copy");
    size_t shown = 0;
    for (size_t i = 0; i < nn; i++) {
        if (i && strcmp(names[i], names[i - 1]) == 0)
            continue;
        if (shown++ == 8) {
            clf__sb_puts(&sb, "_etc");
            break;
        }
        clf__sb_printf(&sb, "_%s", names[i]);
    }
    clf__sb_printf(&sb, "_%u", k);
    free(names);
    return clf__sb_take(&sb);
}

void clf__kernel_code_free(clf__kernel_code *c)
{
    if (!c)
        return;
    free(c->name);
    free(c->ops);
    free(c->source);
    free(c->params);
    memset(c, 0, sizeof *c);
}

static const char *vec_suffix(int lane)
{
    static const char *const s[16] = {"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7",
                                      "s8", "s9", "sa", "sb", "sc", "sd", "se", "sf"};
    return s[lane];
}

clf_status clf__codegen_kernel(const clf_graph *g, const clf__plan *plan, uint32_t k,
                               const clf__codegen_target *target, clf__kernel_code *out,
                               char *err, size_t errlen)
{
    const clf__plan_kernel *K = &plan->kernels[k];
    gen G = {.g = g, .plan = plan, .k = k};
    clf__strbuf src = {0}, ops = {0};
    clf_status st = CLF_ERR_OUT_OF_MEMORY;
    memset(out, 0, sizeof *out);
    clf__ixgen_init(&G.ix, &G.idx_code, (uint64_t)K->numel);

    /* Index width: 32 bits when every extent touched fits in 31 bits. */
    uint64_t widest = (uint64_t)K->numel;
    for (uint32_t i = 0; i < K->nreads; i++) {
        const clf__node *bn = clf__graph_node(g, plan->buffers[K->reads[i]].node);
        if ((uint64_t)clf__node_numel(bn) > widest)
            widest = (uint64_t)clf__node_numel(bn);
    }
    out->wide_index = widest > (uint64_t)INT32_MAX;

    /* Values of every store at the region's own linear index i. */
    clf__view at_i = {.linear = true, .lin = {0, 0, (uint64_t)K->numel}};
    const char **store_vals = calloc(K->nstores ? K->nstores : 1, sizeof *store_vals);
    char **owned = calloc(K->nstores ? K->nstores : 1, sizeof *owned);
    if (!store_vals || !owned)
        goto done;
    for (uint32_t s = 0; s < K->nstores; s++) {
        owned[s] = clf__strdup(value_of(&G, K->stores[s].node, &at_i));
        if (!owned[s])
            G.failed = true;
        store_vals[s] = owned[s] ? owned[s] : "0";
    }
    if (G.failed || G.ix.failed || !clf__sb_ok(&G.idx_code) || !clf__sb_ok(&G.body))
        goto done;

    /* Parameters: buffers read, then buffers written. */
    out->nparams = 0;
    out->params = malloc((K->nreads + K->nstores + 1) * sizeof *out->params);
    if (!out->params)
        goto done;
    for (uint32_t i = 0; i < K->nreads; i++)
        out->params[out->nparams++] = K->reads[i];
    for (uint32_t s = 0; s < K->nstores; s++)
        out->params[out->nparams++] = K->stores[s].buffer;

    /* Vector path: every load is at i itself or at one fixed element. */
    bool vec_ok = K->numel > 1;
    for (size_t s = 0; s < G.nslots && vec_ok; s++)
        if (!(G.slots[s].index.temp == 0 || G.slots[s].index.temp < 0))
            vec_ok = false;
    size_t max_local = target->max_local ? target->max_local : 256;
    if (target->cpu) {
        out->vec = vec_ok ? 8 : 1;
        out->items = 16;
        out->local = max_local < 16 ? max_local : 16;
    } else {
        out->vec = vec_ok ? 4 : 1;
        out->items = 1;
        out->local = max_local < 256 ? max_local : 256;
    }
    uint64_t groups = ((uint64_t)K->numel + (uint64_t)out->vec - 1) / (uint64_t)out->vec;
    uint64_t items = (groups + (uint64_t)out->items - 1) / (uint64_t)out->items;
    out->global = (size_t)((items + out->local - 1) / out->local * out->local);

    out->name = kernel_name(g, K, k);
    for (uint32_t i = 0; i < K->nops; i++)
        clf__sb_printf(&ops, i ? " %s" : "%s", clf__node_op_name(clf__graph_node(g, K->ops[i])));
    out->ops = clf__sb_take(&ops);
    if (!out->name || !out->ops)
        goto done;

    /* The generated definitions. */
    clf__sb_printf(&src, "/* %s: generated by libclfuse (codegen v%d) */\n", out->name,
                   CLF__CODEGEN_VERSION);
    clf__sb_printf(&src, "/* ops: %s */\n", out->ops);
    clf__sb_printf(&src, "#define IDX_T %s\n#define VEC %d\n#define ITEMS %d\n#define BLOCKED %d\n",
                   out->wide_index ? "ulong" : "uint", out->vec, out->items, target->cpu ? 1 : 0);
    clf__sb_printf(&src, "#define CLF_KERNEL_NAME %s\n#define CLF_PARAMS", out->name);
    for (uint32_t p = 0; p < out->nparams; p++) {
        const clf__plan_buffer *B = &plan->buffers[out->params[p]];
        const char *ty = ctype_names[clf__graph_node(g, B->node)->dtype];
        bool ro = p < K->nreads;
        clf__sb_printf(&src, "%s __global %s%s *restrict b%u", p ? "," : "", ro ? "const " : "", ty,
                       out->params[p]);
    }
    clf__sb_puts(&src, "\n#define CLF_ARGS");
    for (uint32_t p = 0; p < out->nparams; p++)
        clf__sb_printf(&src, "%s b%u", p ? "," : "", out->params[p]);
    clf__sb_puts(&src, "\n\n");

    /* clf_compute: loaded values in, stored values out. */
    clf__sb_puts(&src, "static inline void clf_compute(");
    for (size_t s = 0; s < G.nslots; s++)
        clf__sb_printf(&src, "%s%s l%zu", s ? ", " : "", ctype_names[G.slots[s].dtype], s);
    for (uint32_t s = 0; s < K->nstores; s++) {
        const clf__node *sn = clf__graph_node(g, K->stores[s].node);
        clf__sb_printf(&src, "%s%s *s%u", (s || G.nslots) ? ", " : "", ctype_names[sn->dtype], s);
    }
    clf__sb_printf(&src, ")\n{\n%s", clf__sb_str(&G.body));
    for (uint32_t s = 0; s < K->nstores; s++)
        clf__sb_printf(&src, "    *s%u = %s;\n", s, store_vals[s]);
    clf__sb_puts(&src, "}\n\n");

    /* clf_point: one element. */
    clf__sb_printf(&src, "static inline void clf_point(IDX_T i, CLF_PARAMS)\n{\n%s",
                   clf__sb_str(&G.idx_code));
    for (uint32_t s = 0; s < K->nstores; s++)
        clf__sb_printf(&src, "    %s s%u;\n", ctype_names[clf__graph_node(g, K->stores[s].node)->dtype], s);
    clf__sb_puts(&src, "    clf_compute(");
    for (size_t s = 0; s < G.nslots; s++) {
        char a[32];
        clf__sb_printf(&src, "%sb%u[%s]", s ? ", " : "", G.slots[s].buffer,
                       clf__ix_str(&G.slots[s].index, a, sizeof a));
    }
    for (uint32_t s = 0; s < K->nstores; s++)
        clf__sb_printf(&src, "%s&s%u", (s || G.nslots) ? ", " : "", s);
    clf__sb_puts(&src, ");\n");
    for (uint32_t s = 0; s < K->nstores; s++)
        clf__sb_printf(&src, "    b%u[i] = s%u;\n", K->stores[s].buffer, s);
    clf__sb_puts(&src, "}\n\n");

    /* clf_vec: VEC elements with vector loads and stores. */
    if (out->vec > 1) {
        int V = out->vec;
        clf__sb_printf(&src, "static inline void clf_vec(IDX_T i, CLF_PARAMS)\n{\n");
        for (size_t s = 0; s < G.nslots; s++) {
            const char *ty = ctype_names[G.slots[s].dtype];
            if (G.slots[s].index.temp == 0)
                clf__sb_printf(&src, "    const %s%d l%zu = vload%d(0, b%u + i);\n", ty, V, s, V,
                               G.slots[s].buffer);
            else
                clf__sb_printf(&src, "    const %s l%zu = b%u[%lld];\n", ty, s, G.slots[s].buffer,
                               (long long)G.slots[s].index.c);
        }
        for (int lane = 0; lane < V; lane++) {
            for (uint32_t s = 0; s < K->nstores; s++)
                clf__sb_printf(&src, "    %s s%u_%d;\n",
                               ctype_names[clf__graph_node(g, K->stores[s].node)->dtype], s, lane);
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
            const char *ty = ctype_names[clf__graph_node(g, K->stores[s].node)->dtype];
            clf__sb_printf(&src, "    vstore%d((%s%d)(", V, ty, V);
            for (int lane = 0; lane < V; lane++)
                clf__sb_printf(&src, "%ss%u_%d", lane ? ", " : "", s, lane);
            clf__sb_printf(&src, "), 0, b%u + i);\n", K->stores[s].buffer);
        }
        clf__sb_puts(&src, "}\n\n");
    }
    clf__sb_puts(&src, "/* ---- kernels_templates/pointwise.cl ---- */\n");
    clf__sb_puts(&src, clf__template_pointwise);
    if (!clf__sb_ok(&src))
        goto done;
    out->source = clf__sb_take(&src);
    if (!out->source)
        goto done;
    st = CLF_OK;

done:
    if (st != CLF_OK) {
        if (G.failed && st == CLF_ERR_OUT_OF_MEMORY)
            snprintf(err, errlen, "codegen: kernel %u: out of memory or unsupported node", k);
        else
            snprintf(err, errlen, "codegen: kernel %u: out of memory", k);
        clf__kernel_code_free(out);
    }
    for (uint32_t s = 0; owned && s < K->nstores; s++)
        free(owned[s]);
    free(owned);
    free(store_vals);
    for (size_t i = 0; i < G.nmemo; i++) {
        free(G.memo[i].key);
        free(G.memo[i].value);
    }
    free(G.memo);
    free(G.slots);
    clf__ixgen_free(&G.ix);
    clf__sb_free(&G.idx_code);
    clf__sb_free(&G.body);
    clf__sb_free(&src);
    clf__sb_free(&ops);
    return st;
}
