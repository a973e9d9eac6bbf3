/* What the writers of kernels that end in a product share (GEMM,
 * codegen_gemm.c; attention, codegen_attention.c; codegen_product.h):
 * operand loads through their prologues, scalar and vector, the tests of
 * whether an operand lies in a buffer as it is, the accumulator standing
 * for the product, and the epilogue's store function (at permuted
 * positions where movement ops lie between the product and what is
 * stored). */
#include "codegen/codegen_product.h"
#include "util/alloc.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "codegen/codegen.h"
#include "codegen/codegen_expr.h"
#include "util/strbuf.h"

/* Operand loads are plain buffer reads inside the load functions. */
const char *clf__cg_load_direct(clf__cg_fn *f, uint32_t buffer, clf__ix index, clf_dtype dt, char *name,
                               size_t cap)
{
    return clf__cg_read_expr(f->plan, buffer, &index, dt, name, cap);
}

/* The product at the element being stored is the accumulator; the planner
 * admits no other read of it into the kernel. */
const char *clf__cg_product_acc(clf__cg_fn *f, uint32_t node, const clf__view *v, char *name, size_t cap)
{
    const clf__node *n = clf__graph_node(f->g, node);
    clf__ix at = clf__view_linear(f->ix, v, n->rank, n->shape);
    /* Element i itself; for a product of one element, whose index the
     * algebra folds to the constant 0, also that. */
    if (at.temp != 0 && !(at.temp == -1 && at.c == 0 && clf__node_numel(n) == 1))
        return NULL;
    /* The product of storage floats is rounded to them once, from the f32
     * accumulator (not where the function keeps them in f32: no_round). */
    clf__strbuf sb = {0};
    clf__cg_round(&sb, f->no_round ? CLF_F32 : n->dtype, "acc");
    snprintf(name, cap, "%s", clf__sb_ok(&sb) ? clf__sb_str(&sb) : "acc");
    clf__sb_free(&sb);
    return name;
}

bool clf__cg_operand_plain(const clf__plan *plan, uint32_t k, const clf_graph *g, uint32_t id)
{
    const clf__node *n = clf__graph_node(g, id);
    return plan->src_buffer[id] >= 0 &&
           (clf__node_class_of(n) == CLF__CLASS_LEAF || plan->producer[id] != (int32_t)k);
}

bool clf__cg_operand_plain_swapped(const clf__plan *plan, uint32_t k, const clf_graph *g, uint32_t id,
                                   uint32_t *plain)
{
    const clf__node *op = clf__graph_node(g, id);
    if (clf__cg_operand_plain(plan, k, g, id) || op->op != CLF__OP_TRANSPOSE || op->rank < 2)
        return false;
    for (int a = 0; a < op->rank; a++) {
        int want = a == op->rank - 1 ? a - 1 : a == op->rank - 2 ? a + 1 : a;
        if (op->attr.transpose.perm[a] != want)
            return false;
    }
    *plain = op->inputs[0];
    return clf__cg_operand_plain(plan, k, g, op->inputs[0]);
}

void clf__cg_emit_batch_offset(const clf__node *mm, const clf__node *op, clf__strbuf *src)
{
    int ob = op->rank - 2, nb = mm->rank - 2;
    /* Row-major: element (b..., r, c) is at ((b...) * R + r) * C + c, the
     * batch axes broadcast from the product's. */
    clf__sb_puts(src, "    IDX_T off = 0, rest = bt;\n");
    int64_t stride = op->shape[ob] * op->shape[ob + 1];
    for (int d = nb - 1; d >= 0; d--) {
        int od = d - (nb - ob);
        clf__sb_printf(src, "    const IDX_T d%d = rest %% %lluu; rest /= %lluu;\n", d,
                       (unsigned long long)mm->shape[d], (unsigned long long)mm->shape[d]);
        if (od >= 0 && op->shape[od] != 1)
            clf__sb_printf(src, "    off += d%d * %lluu;\n", d, (unsigned long long)stride);
        if (od >= 0)
            stride *= op->shape[od];
    }
    clf__sb_puts(src, "    (void)rest;\n");
}

/* The buffer holding a MATMUL's operand `id` with `along` (0: the
 * operand's rows, its second-last axis; 1: its columns, the last axis) the
 * contiguous axis, or NULL: the operand itself read in its own row-major
 * layout (along 1), or a TRANSPOSE swapping only the last two axes of a
 * buffer read as it is (along 0: K of Q Kt from K [.., S, D]). *swapped
 * says which. */
static const clf__node *operand_contiguous(const clf__plan *plan, uint32_t k, const clf_graph *g, uint32_t id,
                                           int along, bool *swapped, int32_t *buffer)
{
    uint32_t plain = id;
    *swapped = false;
    if (along == 1 ? !clf__cg_operand_plain(plan, k, g, id) : !clf__cg_operand_plain_swapped(plan, k, g, id, &plain))
        return NULL;
    *swapped = along == 0;
    *buffer = plan->src_buffer[plain];
    return clf__graph_node(g, plain);
}

static bool emit_operand_fn(const clf_graph *g, const clf__plan *plan, uint32_t k, const clf__node *mm, int which,
                            int w, int along, bool stats_param, const char *fname, clf__strbuf *src);

bool clf__cg_emit_operand_load_vec(const clf_graph *g, const clf__plan *plan, uint32_t k, const clf__node *mm,
                                   int which, int along, int w, bool aligned, const char *scalar, const char *fname,
                                   clf__strbuf *src)
{
    const char *rname = which == 0 ? "m" : "k", *cname = which == 0 ? "k" : "n";
    bool swapped;
    int32_t buffer;
    const clf__node *op = operand_contiguous(plan, k, g, mm->inputs[which], along, &swapped, &buffer);
    /* Not a buffer as it lies: the operand's prologue (casts, a GQA head's
     * index arithmetic, an activation) in vectors where it has a vector
     * form, else w scalar loads. */
    if (!op && emit_operand_fn(g, plan, k, mm, which, w, along, false, fname, src))
        return true;
    clf__sb_printf(src, "static inline float%d %s(IDX_T bt, IDX_T %s, IDX_T %s, CLF_PARAMS)\n{\n", w, fname, rname,
                   cname);
    if (op) {
        /* r and c swapped for a transposed buffer. */
        clf__cg_emit_batch_offset(mm, op, src);
        char at[96];
        snprintf(at, sizeof at, "off + %s * %lluu + %s", swapped ? cname : rname,
                 (unsigned long long)op->shape[op->rank - 1], swapped ? rname : cname);
        clf__sb_puts(src, "    return ");
        clf__cg_load_vec(plan, src, op->dtype, (uint32_t)buffer, at, w, aligned);
        clf__sb_puts(src, ";\n}\n\n");
        return true;
    }
    clf__sb_printf(src, "    return (float%d)(", w);
    for (int j = 0; j < w; j++) {
        if (along)
            clf__sb_printf(src, "%s%s(bt, %s, %s + %du, CLF_ARGS)", j ? ", " : "", scalar, rname, cname, j);
        else
            clf__sb_printf(src, "%s%s(bt, %s + %du, %s, CLF_ARGS)", j ? ", " : "", scalar, rname, j, cname);
    }
    clf__sb_puts(src, ");\n}\n\n");
    return false;
}

/* The view of operand op of MATMUL node mm at (bt, r, c), three variables
 * of ix named "bt", rname and cname (string literals), its batch axes
 * broadcast from the product's. */
static void operand_view(clf__ixgen *ix, const clf__node *mm, const clf__node *op, const char *rname,
                         const char *cname, clf__view *v)
{
    int nb = mm->rank - 2, ob = op->rank - 2;
    int64_t batch = 1;
    for (int d = 0; d < nb; d++)
        batch *= mm->shape[d];
    clf__ix bt = clf__ixgen_var(ix, "bt", (uint64_t)(batch ? batch : 1));
    clf__ix r = clf__ixgen_var(ix, rname, (uint64_t)op->shape[op->rank - 2]);
    clf__ix c = clf__ixgen_var(ix, cname, (uint64_t)op->shape[op->rank - 1]);
    clf__ix bdims[CLF_MAX_RANK];
    if (nb > 0) {
        clf__view bv = {.linear = true, .lin = bt};
        clf__view_dims(ix, &bv, nb, mm->shape, bdims);
    }
    v->linear = false;
    for (int d = 0; d < ob; d++)
        v->dims[d] = op->shape[d] == 1 ? clf__ix_const(0) : bdims[d + nb - ob];
    v->dims[ob] = r;
    v->dims[ob + 1] = c;
}

uint32_t clf__cg_row_stats(const clf__plan *plan, uint32_t k, const clf_graph *g, uint32_t *stats, uint32_t cap)
{
    const clf__plan_kernel *K = &plan->kernels[k];
    uint32_t n = 0;
    if (K->kind != CLF__REGION_GEMM)
        return 0;
    for (uint32_t i = 0; i < K->nops; i++)
        if (clf__graph_node(g, K->ops[i])->op == CLF__OP_REDUCE) {
            if (n < cap)
                stats[n] = K->ops[i];
            n++;
        }
    return n;
}

/* Reduction hook of the row statistics: statistic j of the row is st[j],
 * for the first n of them (those computed before the value asked for). */
typedef struct row_stats_ctx {
    const uint32_t *stats;
    uint32_t n;
} row_stats_ctx;

static const char *row_stat_hook(clf__cg_fn *f, uint32_t node, const clf__view *v, char *name, size_t cap)
{
    (void)v; /* at the row: the planner checked every read (clf__plan_row_stats_aligned) */
    const row_stats_ctx *c = f->hooks.user;
    for (uint32_t j = 0; j < c->n; j++)
        if (c->stats[j] == node) {
            snprintf(name, cap, "st.v[%u]", j);
            return name;
        }
    return NULL;
}

/* Statistic j's input at element r of row (bt, m): value F computes,
 * its index temporaries and statements in *code. False when out of memory
 * or not expressible. */
static bool row_stat_input(const clf_graph *g, const clf__plan *plan, uint32_t k, const uint32_t *stats, uint32_t j,
                           clf__strbuf *code, char **value)
{
    const clf__node *mm = clf__graph_node(g, plan->kernels[k].anchor), *op = clf__graph_node(g, mm->inputs[0]);
    row_stats_ctx ctx = {stats, j};
    clf__cg_hooks hooks = {.load = clf__cg_load_direct, .reduction = row_stat_hook, .user = &ctx};
    clf__cg_fn F;
    clf__cg_fn_init(&F, g, plan, k, &hooks);
    /* The input's element (x, r) is the operand's (x, r) (the planner's
     * rule): evaluated at the operand's linear index. */
    clf__view at;
    operand_view(F.ix, mm, op, "m", "r", &at);
    clf__view lin = {.linear = true, .lin = clf__view_linear(F.ix, &at, op->rank, op->shape)};
    *value = clf__strdup(clf__cg_value(&F, clf__graph_node(g, stats[j])->inputs[0], &lin));
    bool ok = *value && !F.failed && !F.ix->failed && clf__sb_ok(&F.idx_code) && clf__sb_ok(&F.body);
    if (ok)
        clf__sb_printf(code, "%s%s", clf__sb_str(&F.idx_code), clf__sb_str(&F.body));
    clf__cg_fn_free(&F);
    return ok && clf__sb_ok(code);
}

bool clf__cg_emit_row_stats(const clf_graph *g, const clf__plan *plan, uint32_t k, bool cpu, bool fp64,
                            clf__strbuf *src)
{
    uint32_t stats[CLF__CG_ROW_STATS_MAX];
    const uint32_t n = clf__cg_row_stats(plan, k, g, stats, CLF__CG_ROW_STATS_MAX);
    if (n > CLF__CG_ROW_STATS_MAX)
        return false;
    const clf__node *mm = clf__graph_node(g, plan->kernels[k].anchor), *op = clf__graph_node(g, mm->inputs[0]);
    const int64_t rlen = op->shape[op->rank - 1];
    /* A row's statistics reach the functions that apply them by value:
     * given a pointer to the kernel's local array, LLVM's interprocedural
     * passes (clang -O2 on PoCL, rusticl, Oclgrind) replaced it, where
     * every call passed one address (a tile of one row), with the array
     * itself inside a function not inlined, and that function read other
     * memory than the kernel's array (NaN a decode step, test fusion
     * row_statistics_in_product_loads "f16 residuals"). */
    clf__sb_printf(src, "#define CLF_ROW_STATS %u\ntypedef struct { float v[CLF_ROW_STATS]; } clf_row_stat_values;\n\n",
                   n);
    bool ok = true;
    if (cpu) { /* one work-item a row: the statistics one after another */
        clf__sb_puts(src, "static inline void clf_row_stats(IDX_T bt, IDX_T m, float *out, CLF_PARAMS)\n{\n"
                          "    (void)bt;\n    clf_row_stat_values st;\n");
        for (uint32_t j = 0; j < n && ok; j++) {
            clf__strbuf body = {0};
            char *val = NULL, head[96], dest[24];
            ok = row_stat_input(g, plan, k, stats, j, &body, &val);
            snprintf(head, sizeof head, "for (IDX_T r = 0; r < %lluu; ++r)", (unsigned long long)rlen);
            snprintf(dest, sizeof dest, "st.v[%u]", j);
            const clf__node *red = clf__graph_node(g, stats[j]);
            if (ok)
                clf__cg_emit_row_reduction(src, red, stats[j], clf__graph_node(g, red->inputs[0])->dtype, fp64, head,
                                           clf__sb_str(&body), val, dest);
            clf__free(val);
            clf__sb_free(&body);
        }
        clf__sb_puts(src, "    for (int j = 0; j < CLF_ROW_STATS; ++j)\n        out[j] = st.v[j];\n}\n\n");
        return ok;
    }
    /* GPU forms: the work-group's lanes combine partial results
     * (row_stats.cl): each statistic's input, identity, combination and
     * rounding, the last three the reduction writer's. */
    clf__strbuf init = {0}, combine = {0}, finish = {0};
    clf__sb_puts(src, "static inline float clf_row_stat_term(int j, IDX_T bt, IDX_T m, IDX_T r, "
                      "clf_row_stat_values st, CLF_PARAMS)\n{\n    (void)bt;\n");
    for (uint32_t j = 0; j < n && ok; j++) {
        clf__strbuf body = {0};
        char *val = NULL;
        ok = row_stat_input(g, plan, k, stats, j, &body, &val);
        if (ok)
            clf__sb_printf(src, "    if (j == %u) {\n%s        return %s;\n    }\n", j, clf__sb_str(&body), val);
        clf__free(val);
        clf__sb_free(&body);
        const clf__node *red = clf__graph_node(g, stats[j]);
        clf__sb_printf(&init, "    if (j == %u)\n", j);
        clf__sb_printf(&combine, "    if (j == %u)\n", j);
        clf__sb_printf(&finish, "    if (j == %u)\n", j);
        clf__cg_emit_float_reduction(&init, &combine, &finish, red, stats[j], clf__graph_node(g, red->inputs[0])->dtype);
    }
    clf__sb_printf(src, "    return 0.0f;\n}\n\nstatic inline float clf_row_stat_init(int j)\n{\n%s    return 0.0f;\n}\n\n"
                        "static inline float clf_row_stat_combine(int j, float x, float y)\n{\n%s    return x;\n}\n\n"
                        "static inline float clf_row_stat_finish(int j, float x)\n{\n%s    return x;\n}\n\n",
                   clf__sb_str(&init), clf__sb_str(&combine), clf__sb_str(&finish));
    ok = ok && clf__sb_ok(&init) && clf__sb_ok(&combine) && clf__sb_ok(&finish);
    clf__sb_free(&init);
    clf__sb_free(&combine);
    clf__sb_free(&finish);
    return ok;
}

/* The hooks' context of an operand's load function: the row statistics
 * it reads (first, so that row_stat_hook reads the context as its
 * row_stats_ctx). */
typedef struct operand_ctx {
    row_stats_ctx stats;
    clf__ix acc_at; /* the vector store's: the product's linear index */
} operand_ctx;

/* The load function of operand `which` of mm: scalar (w 1) or w lanes
 * along the operand's columns (along 1: A's k, B's n) or rows (along 0: a
 * K row as the scores' transposed operand). A vector function that some
 * value of the prologue has no vector form for is not emitted: returns
 * false with nothing appended, as for a failure (out of memory). Row
 * statistics are a parameter only where stats_param (else an A that
 * needs them gets no function). */
static bool emit_operand_fn(const clf_graph *g, const clf__plan *plan, uint32_t k, const clf__node *mm, int which,
                            int w, int along, bool stats_param, const char *fname, clf__strbuf *src)
{
    /* A's loads apply the row statistics the kernel computes (st: the
     * row's, clf__cg_emit_row_stats), where the function may take them. */
    uint32_t stats[CLF__CG_ROW_STATS_MAX];
    uint32_t nstats = which == 0 ? clf__cg_row_stats(plan, k, g, stats, CLF__CG_ROW_STATS_MAX) : 0;
    if (nstats > CLF__CG_ROW_STATS_MAX || (nstats && !stats_param))
        return false;
    operand_ctx ctx = {{stats, nstats}, {0}};
    clf__cg_hooks hooks = {.load = w > 1 ? clf__cg_load_lanes : clf__cg_load_direct,
                           .reduction = nstats ? row_stat_hook : NULL, .user = &ctx};
    clf__cg_fn F;
    clf__cg_fn_init(&F, g, plan, k, &hooks);
    F.vec = w > 1 ? w : 0;
    uint32_t id = mm->inputs[which];
    const clf__node *op = clf__graph_node(g, id);
    const char *rname = which == 0 ? "m" : "k", *cname = which == 0 ? "k" : "n";
    clf__view v;
    operand_view(F.ix, mm, op, rname, cname, &v);
    F.lane_bit = v.dims[op->rank - (along ? 1 : 2)].deps;
    char *val = clf__strdup(clf__cg_value(&F, id, &v));
    bool ok = val && !F.failed && !F.novec && !F.ix->failed && clf__sb_ok(&F.idx_code) && clf__sb_ok(&F.body);
    if (ok) {
        char type[16];
        snprintf(type, sizeof type, w > 1 ? "float%d" : "float", w);
        clf__sb_printf(src, "static inline %s %s(IDX_T bt, IDX_T %s, IDX_T %s, %sCLF_PARAMS)\n{\n", type, fname,
                       rname, cname, nstats ? "clf_row_stat_values st, " : "");
        /* A value that does not move along the lanes is a scalar: widened. */
        clf__sb_printf(src, "    (void)bt;\n%s%s", clf__sb_str(&F.idx_code), clf__sb_str(&F.body));
        if (w > 1)
            clf__sb_printf(src, "    return (%s)(%s);\n}\n\n", type, val);
        else
            clf__sb_printf(src, "    return %s;\n}\n\n", val);
    }
    clf__free(val);
    clf__cg_fn_free(&F);
    return ok;
}

bool clf__cg_emit_operand_load(const clf_graph *g, const clf__plan *plan, uint32_t k, const clf__node *mm, int which,
                               const char *fname, clf__strbuf *src)
{
    return emit_operand_fn(g, plan, k, mm, which, 1, 1, true, fname, src);
}

bool clf__cg_emit_operand_prologue_vec(const clf_graph *g, const clf__plan *plan, uint32_t k, const clf__node *mm,
                                       int which, int w, const char *fname, clf__strbuf *src)
{
    return w > 1 && emit_operand_fn(g, plan, k, mm, which, w, 1, true, fname, src);
}

/* Product hook of the vector store: the product at the lanes being
 * stored (the store's own linear index) is the vector accumulator. */
static const char *product_acc_vec(clf__cg_fn *f, uint32_t node, const clf__view *v, char *name, size_t cap)
{
    const operand_ctx *c = f->hooks.user;
    const clf__node *n = clf__graph_node(f->g, node);
    clf__ix at = clf__view_linear(f->ix, v, n->rank, n->shape);
    if (!clf__ix_same(&at, &c->acc_at))
        return NULL;
    clf__strbuf sb = {0};
    clf__cg_round_vec(&sb, f->no_round ? CLF_F32 : n->dtype, "acc", f->vec);
    snprintf(name, cap, "%s", clf__sb_ok(&sb) ? clf__sb_str(&sb) : "acc");
    clf__sb_free(&sb);
    return name;
}

/* G: a vector function over the product mm's elements (bt, m, n .. n + w
 * - 1), lanes along n, whose product is the accumulator acc (ctx->acc_at:
 * the product's linear index there). */
static void product_lanes_init(clf__cg_fn *G, operand_ctx *ctx, const clf_graph *g, const clf__plan *plan, uint32_t k,
                               const clf__node *mm, int w)
{
    *ctx = (operand_ctx){{NULL, 0}, {0}};
    const clf__cg_hooks hooks = {.load = clf__cg_load_lanes, .product = product_acc_vec, .user = ctx};
    clf__cg_fn_init(G, g, plan, k, &hooks);
    G->vec = w;
    clf__view v;
    operand_view(G->ix, mm, mm, "m", "n", &v);
    G->lane_bit = v.dims[mm->rank - 1].deps;
    ctx->acc_at = clf__view_linear(G->ix, &v, mm->rank, mm->shape);
}

bool clf__cg_emit_product_store_vec(const clf_graph *g, const clf__plan *plan, uint32_t k, int w, clf__strbuf *src)
{
    const clf__plan_kernel *K = &plan->kernels[k];
    const clf__node *mm = clf__graph_node(g, K->anchor);
    if (w < 2 || mm->op != CLF__OP_MATMUL || mm->rank < 2 || K->nstores == 0)
        return false; /* (a product of rank 1, a vector's, has no rows: the scalar store serves) */
    for (uint32_t s = 0; s < K->nstores; s++)
        if (K->stores[s].from != K->stores[s].node)
            return false; /* a permuted store: its lanes are not consecutive */
    /* The product's element (bt, m, n), its lanes along n, and its linear
     * index, which the index algebra splits back into these (a bias at n,
     * a residual at its row's offset + n). */
    operand_ctx ctx;
    clf__cg_fn G;
    product_lanes_init(&G, &ctx, g, plan, k, mm, w);
    bool ok = false;
    clf__strbuf body = {0};
    char **vals = clf__calloc(K->nstores, sizeof *vals);
    if (!vals)
        goto done;
    /* Each store's node at the product's linear index (its shape may be
     * another of the same elements, a reshape's). */
    const clf__view at_lin = {.linear = true, .lin = ctx.acc_at};
    for (uint32_t s = 0; s < K->nstores; s++) {
        vals[s] = clf__strdup(clf__cg_value(&G, K->stores[s].from, &at_lin));
        if (!vals[s])
            G.failed = true;
    }
    ok = !G.failed && !G.novec && !G.ix->failed && clf__sb_ok(&G.idx_code) && clf__sb_ok(&G.body);
    if (ok) {
        char at[32];
        clf__ix_str(&ctx.acc_at, at, sizeof at);
        clf__sb_printf(&body,
                       "static inline void clf_store_v(IDX_T bt, IDX_T m, IDX_T n, float%d acc, CLF_PARAMS)\n{\n"
                       "    (void)bt;\n%s%s",
                       w, clf__sb_str(&G.idx_code), clf__sb_str(&G.body));
        for (uint32_t s = 0; s < K->nstores; s++)
            clf__cg_store_float_vec(plan, &body, clf__graph_node(g, K->stores[s].node)->dtype, K->stores[s].buffer, at,
                                    vals[s], w);
        clf__sb_puts(&body, "}\n\n");
        ok = ok && clf__sb_ok(&body);
        if (ok)
            clf__sb_puts(src, clf__sb_str(&body));
    }
done:
    for (uint32_t s = 0; vals && s < K->nstores; s++)
        clf__free(vals[s]);
    clf__free(vals);
    clf__sb_free(&body);
    clf__cg_fn_free(&G);
    return ok;
}

bool clf__cg_emit_product_value_vec(const clf_graph *g, const clf__plan *plan, uint32_t k, const clf__node *mm,
                                    uint32_t value, uint32_t forward_node, int forward_input, int w, const char *fname,
                                    clf__strbuf *src)
{
    if (w < 2 || mm->op != CLF__OP_MATMUL || mm->rank < 2)
        return false;
    /* As the vector store: the value at the product's linear index. */
    operand_ctx ctx;
    clf__cg_fn G;
    product_lanes_init(&G, &ctx, g, plan, k, mm, w);
    G.forward_node = forward_node;
    G.forward_input = forward_input;
    const clf__view at_lin = {.linear = true, .lin = ctx.acc_at};
    char *val = clf__strdup(clf__cg_value(&G, value, &at_lin));
    bool ok = val && !G.failed && !G.novec && !G.ix->failed && clf__sb_ok(&G.idx_code) && clf__sb_ok(&G.body);
    if (ok)
        clf__sb_printf(src,
                       "static inline float%d %s(IDX_T bt, IDX_T m, IDX_T n, float%d acc, CLF_PARAMS)\n{\n"
                       "    (void)bt;\n%s%s    return (float%d)(%s);\n}\n\n",
                       w, fname, w, clf__sb_str(&G.idx_code), clf__sb_str(&G.body), w, val);
    clf__free(val);
    clf__cg_fn_free(&G);
    return ok;
}

/* The index in node's buffer of the element the movement ops from `from`
 * up to node put from's element i at (a permuted store: each op permutes
 * elements, clf__movement_permutes). */
static clf__ix permuted_index(clf__cg_fn *G, uint32_t node, uint32_t from, uint64_t numel)
{
    const clf__node *n = clf__graph_node(G->g, node);
    uint32_t len = 0;
    for (uint32_t id = node; id != from; id = clf__graph_node(G->g, id)->inputs[0])
        len++;
    uint32_t *chain = clf__malloc((len ? len : 1) * sizeof *chain);
    if (!chain) {
        G->failed = true;
        return clf__ix_const(0);
    }
    uint32_t j = len;
    for (uint32_t id = node; id != from; id = clf__graph_node(G->g, id)->inputs[0])
        chain[--j] = id; /* chain[0] reads from, chain[len - 1] is node */
    clf__view v = {.linear = true, .lin = clf__ix_i(numel)};
    for (j = 0; j < len; j++) {
        clf__view up;
        clf__view_output(G->ix, G->g, clf__graph_node(G->g, chain[j]), &v, &up);
        v = up;
    }
    clf__free(chain);
    return clf__view_linear(G->ix, &v, n->rank, n->shape);
}

clf_status clf__cg_emit_product_store(const clf_graph *g, const clf__plan *plan, uint32_t k, clf__strbuf *src,
                                      char *err, size_t errlen)
{
    const clf__plan_kernel *K = &plan->kernels[k];
    clf__cg_hooks hooks = {.load = clf__cg_load_direct, .product = clf__cg_product_acc};
    clf__cg_fn G;
    clf_status st = CLF_ERR_OUT_OF_MEMORY;
    clf__cg_fn_init(&G, g, plan, k, &hooks);
    clf__view at_i = {.linear = true, .lin = clf__ix_i((uint64_t)K->numel)};
    char **vals = clf__calloc(K->nstores ? K->nstores : 1, sizeof *vals);
    char(*at)[32] = clf__calloc(K->nstores ? K->nstores : 1, sizeof *at);
    if (!vals || !at)
        goto done;
    /* Each store's value at the product's element i: stored at i, or for a
     * permuted store where its movement ops put element i. */
    for (uint32_t s = 0; s < K->nstores; s++) {
        const clf__plan_store *P = &K->stores[s];
        vals[s] = clf__strdup(clf__cg_value(&G, P->from, &at_i));
        if (!vals[s])
            G.failed = true;
        clf__ix dst = P->from == P->node ? at_i.lin : permuted_index(&G, P->node, P->from, (uint64_t)K->numel);
        clf__ix_str(&dst, at[s], sizeof at[s]);
    }
    if (G.failed || G.ix->failed || !clf__sb_ok(&G.idx_code) || !clf__sb_ok(&G.body)) {
        snprintf(err, errlen, "codegen: kernel %u: the %s epilogue reads the product at another element", k,
                 K->kind == CLF__REGION_ATTENTION ? "attention" : "GEMM");
        st = CLF_ERR_INTERNAL;
        goto done;
    }
    clf__sb_puts(src, "static inline void clf_store(IDX_T bt, IDX_T m, IDX_T n, float acc, CLF_PARAMS)\n{\n");
    clf__sb_puts(src, "    const IDX_T i = (bt * (IDX_T)M + m) * (IDX_T)N + n;\n");
    clf__sb_printf(src, "%s%s", clf__sb_str(&G.idx_code), clf__sb_str(&G.body));
    for (uint32_t s = 0; s < K->nstores; s++)
        clf__cg_store(plan, src, clf__graph_node(g, K->stores[s].node)->dtype, K->stores[s].buffer, at[s], vals[s]);
    clf__sb_puts(src, "}\n\n");
    st = clf__sb_ok(src) ? CLF_OK : CLF_ERR_OUT_OF_MEMORY;
done:
    for (uint32_t s = 0; vals && s < K->nstores; s++)
        clf__free(vals[s]);
    clf__free(vals);
    clf__free(at);
    clf__cg_fn_free(&G);
    return st;
}

/* The one buffer read a 16-byte stage of an operand makes (stage16_load):
 * where the operand is that buffer's values moved by index arithmetic
 * alone, its value is that read. */
typedef struct stage16_read {
    int nloads;
    uint32_t buffer;
    clf_dtype dt;
    clf__ix index;
} stage16_read;

static const char *stage16_load(clf__cg_fn *f, uint32_t buffer, clf__ix index, clf_dtype dt, char *name, size_t cap)
{
    stage16_read *r = f->hooks.user;
    if (r->nloads++ == 0)
        *r = (stage16_read){1, buffer, dt, index};
    snprintf(name, cap, "ld%d", r->nloads);
    return name;
}

/* A stage of mm's operand `which`, pieces of `per` values along the
 * operand's rows (along_rows: K of Q Kt, read along D) or columns, of a
 * piece at (bt, sr, sc): its row sr (the other axis) and first column sc
 * (a multiple of per along the staged axis), where the operand is a buffer
 * of 16-bit values (f32 ones where f32_values) moved by index arithmetic
 * alone (transposes, reshapes, head broadcasts, slices) such that the
 * piece's values lie one after another and its first at a multiple of
 * per: the buffer and dtype in *read, and its first value's index in
 * F->ix, whose temporaries F->idx_code computes from bt, sr and sc. The
 * staged axis a multiple of per, so that no piece leaves its row. false
 * (F freed) where that is not so. */
static bool stage16_view(const clf_graph *g, const clf__plan *plan, uint32_t k, const clf__node *mm, int which,
                         bool along_rows, bool f32_values, clf__cg_fn *F, stage16_read *read)
{
    const uint32_t id = mm->inputs[which];
    const clf__node *op = clf__graph_node(g, id);
    const int per = f32_values ? 4 : 8;
    if (op->rank < 2 || op->shape[op->rank - (along_rows ? 2 : 1)] % per != 0)
        return false;
    *read = (stage16_read){0};
    clf__cg_hooks hooks = {.load = stage16_load, .user = read};
    clf__cg_fn_init(F, g, plan, k, &hooks);
    clf__view v;
    /* The operand's rows and columns: sc the staged axis. */
    operand_view(F->ix, mm, op, along_rows ? "sc" : "sr", along_rows ? "sr" : "sc", &v);
    const uint32_t lane = v.dims[op->rank - (along_rows ? 2 : 1)].deps;
    const char *val = clf__cg_value(F, id, &v);
    const bool ok = val && strcmp(val, "ld1") == 0 && read->nloads == 1 && !F->failed && !F->ix->failed &&
                    clf__sb_ok(&F->idx_code) && clf__sb_str(&F->body)[0] == '\0' &&
                    read->buffer != CLF__CG_INDEX_VALUE &&
                    (f32_values ? read->dt == CLF_F32 : read->dt == CLF_F16 || read->dt == CLF_BF16) &&
                    clf__ix_unit_stride(F->ix, &read->index, lane) == 1 &&
                    clf__ix_multiple_of(F->ix, &read->index, lane, per);
    if (!ok)
        clf__cg_fn_free(F);
    return ok;
}

clf_dtype clf__cg_stage16_dtype(const clf_graph *g, const clf__plan *plan, uint32_t k, const clf__node *mm, int which,
                                bool swapped, bool f32_values)
{
    clf__cg_fn F;
    stage16_read read;
    if (!stage16_view(g, plan, k, mm, which, swapped, f32_values, &F, &read))
        return CLF_BOOL;
    clf__cg_fn_free(&F);
    return read.dt;
}

void clf__cg_emit_stage16(const clf_graph *g, const clf__plan *plan, uint32_t k, const clf__node *mm, int which,
                          bool swapped, bool f32_values, const char *name, const char *params, const char *r,
                          const char *col, bool guarded, clf__strbuf *src)
{
    clf__cg_fn F;
    stage16_read read;
    if (!stage16_view(g, plan, k, mm, which, swapped, f32_values, &F, &read))
        return;
    const clf__node *op = clf__graph_node(g, mm->inputs[which]);
    const int64_t extent = op->shape[op->rank - (swapped ? 2 : 1)];
    const int per = f32_values ? 4 : 8;
    char b[40], at[32];
    clf__cg_buffer_ref(plan, read.buffer, b, sizeof b);
    clf__ix_str(&read.index, at, sizeof at);
    clf__sb_printf(src, "#define CLF_HAVE_STAGE_%c 1\n", toupper((unsigned char)name[0]));
    clf__sb_printf(src, guarded ? "static inline uint4 clf_stage_%s(IDX_T bt, %s, CLF_PARAMS)\n{\n"
                                : "static inline __global const uint4 *clf_stage_%s_at(IDX_T bt, %s, CLF_PARAMS)\n{\n",
                   name, params);
    clf__sb_printf(src, "    const IDX_T sr = %s, sc = %s;\n    (void)bt;\n    (void)sr;\n%s", r, col,
                   clf__sb_str(&F.idx_code));
    if (guarded)
        clf__sb_printf(src, "    return sc < %lldu ? ((__global const uint4 *)%s)[(%s) / %d] : (uint4)(0);\n}\n\n",
                       (long long)extent, b, at, per);
    else
        clf__sb_printf(src, "    return (__global const uint4 *)%s + (%s) / %d;\n}\n\n", b, at, per);
    clf__cg_fn_free(&F);
}
