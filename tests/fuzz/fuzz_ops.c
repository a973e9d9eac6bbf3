/* The fuzzer's op-family table: for each family, how the generator picks
 * operands and a recipe (respecting each op's numeric domain through
 * fz_facts), how the recipe becomes builder calls, and how the node is
 * written as ONNX text. Also the generator's driver and the printers. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "graph/op_table.h"

#define BIG 3.0e38 /* a magnitude bound meaning "may overflow float" */

struct fz_gen {
    fz_rng r;
    fz_graph *G;
};

/* ---- Random numbers ----------------------------------------------------- */

uint64_t fz_next(fz_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint32_t fz_below(fz_rng *r, uint32_t n) { return n ? (uint32_t)(fz_next(r) % n) : 0; }

double fz_unit(fz_rng *r) { return (double)(fz_next(r) >> 11) / 9007199254740992.0; }

bool fz_chance(fz_rng *r, double p) { return fz_unit(r) < p; }

/* ---- Shapes --------------------------------------------------------------- */

static int64_t numel_of(int rank, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= shape[i];
    return n;
}

static int64_t node_numel(const fz_node *n) { return numel_of(n->orank, n->oshape); }

/* numpy broadcasting of two shapes into out; false when they do not. */
static bool broadcast(int ra, const int64_t *a, int rb, const int64_t *b, int *ro, int64_t *out)
{
    int r = ra > rb ? ra : rb;
    for (int i = 0; i < r; i++) {
        int64_t x = i < r - ra ? 1 : a[i - (r - ra)];
        int64_t y = i < r - rb ? 1 : b[i - (r - rb)];
        if (x != y && x != 1 && y != 1)
            return false;
        out[i] = x == 1 ? y : x;
    }
    *ro = r;
    return true;
}

static bool broadcasts(const fz_node *a, const fz_node *b)
{
    int r;
    int64_t s[CLF_MAX_RANK * 2];
    return broadcast(a->orank, a->oshape, b->orank, b->oshape, &r, s);
}

static int64_t random_extent(fz_rng *r)
{
    uint32_t k = fz_below(r, 100);
    if (k < 4)
        return 0;
    if (k < 30)
        return 1;
    if (k < 90)
        return 2 + fz_below(r, 6);
    return 8 + fz_below(r, 33);
}

static int random_rank(fz_rng *r)
{
    static const int weights[FZ_MAX_RANK + 1] = {8, 20, 26, 20, 12, 8, 6};
    uint32_t k = fz_below(r, 100);
    for (int i = 0; i <= FZ_MAX_RANK; i++) {
        if (k < (uint32_t)weights[i])
            return i;
        k -= (uint32_t)weights[i];
    }
    return 2;
}

/* Keeps a shape under FZ_MAX_NUMEL by shrinking its largest extents. */
static void cap_shape(int rank, int64_t *shape)
{
    while (numel_of(rank, shape) > FZ_MAX_NUMEL) {
        int big = 0;
        for (int i = 1; i < rank; i++)
            if (shape[i] > shape[big])
                big = i;
        shape[big] = (shape[big] + 1) / 2;
    }
}

/* ---- Facts of leaves ------------------------------------------------------- */

#define I64_MAG 9.2233720368547758e18 /* 2^63 */

static fz_facts leaf_facts(clf_dtype dt, fz_profile p)
{
    fz_facts f = {.mag = 2, .exact = true};
    if (dt == CLF_I32) {
        f.mag = p == FZ_PROF_SPECIAL || p == FZ_PROF_INDEX ? 2147483648.0 : 5;
        return f;
    }
    if (dt == CLF_I64) {
        f.mag = p == FZ_PROF_SPECIAL || p == FZ_PROF_INDEX ? I64_MAG : 5;
        return f;
    }
    if (dt == CLF_BOOL) {
        f.mag = 255;
        f.nonneg = true;
        return f;
    }
    switch (p) {
    case FZ_PROF_POSITIVE: f.mag = 4; f.nonneg = true; break;
    case FZ_PROF_INTEGERS: f.mag = 4; break;
    case FZ_PROF_SPECIAL: f.mag = 1e30; f.special = true; break;
    case FZ_PROF_LARGE: f.mag = 1e30; break;
    case FZ_PROF_TINY: f.mag = 1e-36; break;
    default: break;
    }
    return f;
}

/* ---- Generator helpers ------------------------------------------------------ */

static fz_node *new_node(fz_gen *G)
{
    fz_graph *g = G->G;
    if (g->n >= FZ_MAX_NODES)
        return NULL;
    fz_node *n = &g->node[g->n++];
    memset(n, 0, sizeof *n);
    return n;
}

static fz_profile random_profile(fz_rng *r, clf_dtype dt)
{
    if (dt != CLF_F32)
        return fz_chance(r, 0.25) ? FZ_PROF_SPECIAL : FZ_PROF_NORMAL;
    static const fz_profile pick[] = {FZ_PROF_NORMAL,  FZ_PROF_NORMAL, FZ_PROF_NORMAL, FZ_PROF_POSITIVE,
                                      FZ_PROF_INTEGERS, FZ_PROF_INTEGERS, FZ_PROF_SPECIAL, FZ_PROF_SPECIAL,
                                      FZ_PROF_LARGE,   FZ_PROF_TINY};
    return pick[fz_below(r, sizeof pick / sizeof pick[0])];
}

/* Appends a graph input; returns its index or -1 when the graph is full. */
static int add_input(fz_gen *G, clf_dtype dt, int rank, const int64_t *shape)
{
    fz_node *n = new_node(G);
    if (!n)
        return -1;
    n->family = FZ_FAM_INPUT;
    n->dt = n->odt = dt;
    n->rank = n->orank = rank;
    memcpy(n->shape, shape, sizeof(int64_t) * (size_t)rank);
    memcpy(n->oshape, shape, sizeof(int64_t) * (size_t)rank);
    n->profile = random_profile(&G->r, dt);
    n->data_seed = fz_next(&G->r);
    n->facts = leaf_facts(dt, n->profile);
    return (int)(n - G->G->node);
}

static int add_scalar(fz_gen *G, clf_dtype dt)
{
    static const double f32_values[] = {0, 1, -1, 0.5, 2, 3, -2.5, 1e-3, 1e30, 1e-40};
    fz_node *n = new_node(G);
    if (!n)
        return -1;
    n->family = FZ_FAM_SCALAR;
    n->dt = n->odt = dt;
    n->orank = 0;
    if (dt == CLF_F32)
        n->lo = f32_values[fz_below(&G->r, sizeof f32_values / sizeof f32_values[0])];
    else if (dt == CLF_I32 || dt == CLF_I64)
        n->lo = (double)((int)fz_below(&G->r, 9) - 4);
    else
        n->lo = fz_below(&G->r, 2);
    n->facts = (fz_facts){.mag = fabs(n->lo), .exact = true, .nonneg = n->lo >= 0};
    return (int)(n - G->G->node);
}

/* A shape that broadcasts against `like`: leading axes dropped, some
 * extents replaced by 1. */
static int broadcast_partner(fz_gen *G, const fz_node *like, int64_t *shape)
{
    int rank = like->orank;
    int drop = rank && fz_chance(&G->r, 0.3) ? (int)fz_below(&G->r, (uint32_t)rank + 1) : 0;
    for (int i = drop; i < rank; i++)
        shape[i - drop] = fz_chance(&G->r, 0.25) ? 1 : like->oshape[i];
    return rank - drop;
}

typedef bool (*fz_pred)(const fz_node *n, const void *arg);

/* A random existing node satisfying pred (recent ones more often); -1 if
 * none. A cache write's cache is never one: only its write reads it. */
static int pick_node(fz_gen *G, fz_pred pred, const void *arg)
{
    fz_graph *g = G->G;
    int cand[FZ_MAX_NODES], nc = 0;
    for (int i = 0; i < g->n; i++)
        if (!g->node[i].cache && pred(&g->node[i], arg))
            cand[nc++] = i;
    if (!nc)
        return -1;
    if (fz_chance(&G->r, 0.5))
        return cand[nc - 1];
    return cand[fz_below(&G->r, (uint32_t)nc)];
}

/* Values of a storage float (f16, bf16) come only from casts of exact
 * values (pick_cast), so they are exact too; only the families that move
 * bits (casts, movement) take them, since arithmetic on them would need
 * tolerances per dtype in fuzz_check.c. */
static bool storage_float(clf_dtype dt) { return dt == CLF_F16 || dt == CLF_BF16; }
/* Any node but a scalar, storage floats included: for families that move bits. */
static bool bits_node(const fz_node *n, const void *arg) { return n->family != FZ_FAM_SCALAR; }
/* Any node but a scalar or a storage float. */
static bool any_node(const fz_node *n, const void *arg) { return bits_node(n, arg) && !storage_float(n->odt); }

typedef struct partner_want {
    const fz_node *like;
    clf_dtype dt;
    bool exact;
} partner_want;

static bool is_partner(const fz_node *n, const void *arg)
{
    const partner_want *w = arg;
    return n->odt == w->dt && broadcasts(n, w->like) && (!w->exact || n->facts.exact);
}

/* An operand of dtype dt that broadcasts with `like`: an existing node, a
 * scalar constant or a new input; -1 when the graph is full. */
static int partner(fz_gen *G, int like, clf_dtype dt, bool exact)
{
    uint32_t k = fz_below(&G->r, 10);
    if (k < 5) {
        partner_want w = {&G->G->node[like], dt, exact};
        int p = pick_node(G, is_partner, &w);
        if (p >= 0)
            return p;
    }
    if (k == 5)
        return add_scalar(G, dt);
    int64_t shape[FZ_MAX_RANK];
    int rank = broadcast_partner(G, &G->G->node[like], shape);
    return add_input(G, dt, rank, shape);
}

static fz_facts inexact(fz_facts f)
{
    f.exact = false;
    f.depth++;
    return f;
}

/* ---- Families: leaves ----------------------------------------------------- */

static clf_tensor build_scalar(clf_graph *g, fz_node *n, const clf_tensor *in, fz_node *const *args)
{
    return clf_scalar(g, n->dt, n->lo);
}

static const char *onnx_type(clf_dtype dt)
{
    static const char *const names[CLF_DTYPE_COUNT] = {[CLF_F32] = "float", [CLF_I32] = "int32", [CLF_BOOL] = "bool",
                                                       [CLF_I64] = "int64", [CLF_F16] = "float16",
                                                       [CLF_BF16] = "bfloat16"};
    return names[dt];
}

/* ONNX's TensorProto data type of dt (Cast's 'to'). */
static int onnx_elem(clf_dtype dt)
{
    static const int codes[CLF_DTYPE_COUNT] = {[CLF_F32] = 1, [CLF_I32] = 6, [CLF_BOOL] = 9, [CLF_I64] = 7,
                                               [CLF_F16] = 10, [CLF_BF16] = 16};
    return codes[dt];
}

static void onnx_double(FILE *f, double v)
{
    if (isnan(v))
        fputs("nan", f);
    else if (isinf(v))
        fputs(v > 0 ? "inf" : "-inf", f);
    else
        fprintf(f, "%.9g", v);
}

static bool onnx_scalar(FILE *f, const fz_graph *G, int i)
{
    const fz_node *n = &G->node[i];
    /* Declared as an initializer by fz_print_onnx; nothing to compute. */
    (void)f;
    (void)n;
    return true;
}

/* ---- Families: pointwise -------------------------------------------------- */

/* A unary or binary op of the op table that takes operands of dtype dt and
 * that the fuzzer may draw (a domain other than NONE), or -1. Every op of
 * the table is a candidate, including ones added after this was written. */
static int draw_table_op(fz_gen *G, bool binary, clf_dtype dt)
{
    clf__op cand[CLF__OP_COUNT];
    uint32_t nc = 0;
    for (int op = 0; op < CLF__OP_COUNT; op++) {
        const clf__op_info *info = clf__op_info_of((clf__op)op);
        bool arity_ok = binary ? clf__op_is_binary((clf__op)op) : clf__op_is_unary((clf__op)op);
        if (arity_ok && (info->dtypes & CLF__DTM(dt)) && info->fuzz != CLF__FUZZ_NONE)
            cand[nc++] = (clf__op)op;
    }
    return nc ? (int)cand[fz_below(&G->r, nc)] : -1;
}

static bool pick_unary(fz_gen *G, fz_node *n)
{
    int x = pick_node(G, any_node, NULL);
    if (x < 0)
        return false;
    const fz_node *a = &G->G->node[x];
    fz_facts f = a->facts;
    n->nin = 1;
    n->in[0] = x;
    for (int tries = 0; tries < 8; tries++) {
        int op = draw_table_op(G, false, a->odt);
        if (op < 0)
            return false;
        fz_facts o = inexact(f);
        if (a->odt == CLF_BOOL) {
            o = (fz_facts){.mag = 1, .exact = true, .nonneg = true, .depth = f.depth, .reduced = f.reduced};
        } else if (a->odt == CLF_I32 || a->odt == CLF_I64) {
            o = f;
            o.nonneg = false; /* abs(INT32_MIN) and abs(INT64_MIN) wrap */
        } else {
            switch (clf__op_info_of((clf__op)op)->fuzz) {
            case CLF__FUZZ_NEGATE: o = f; o.nonneg = false; break;
            case CLF__FUZZ_NONNEG: o = f; o.nonneg = true; break;
            case CLF__FUZZ_EXP:
                o.mag = f.mag > 88 ? BIG : exp(f.mag);
                o.special |= f.mag > 88;
                o.nonneg = true;
                break;
            case CLF__FUZZ_LOG: o.mag = 104; o.special = true; break;
            case CLF__FUZZ_SQRT: o.mag = sqrt(f.mag); o.special |= !f.nonneg; o.nonneg = true; break;
            case CLF__FUZZ_RSQRT: o.mag = BIG; o.special = true; o.nonneg = true; break;
            case CLF__FUZZ_RECIPROCAL: o.mag = BIG; o.special = true; o.nonneg = f.nonneg; break;
            case CLF__FUZZ_PERIODIC:
                /* Kept where float argument reduction is not the question. */
                if (f.mag > 1e4)
                    continue;
                o.mag = 1;
                o.nonneg = false;
                break;
            case CLF__FUZZ_UNIT: o.mag = 1; break;
            case CLF__FUZZ_UNIT_NONNEG: o.mag = 1; o.nonneg = true; break;
            case CLF__FUZZ_SMOOTH: o.mag = f.mag; o.nonneg = false; break;
            case CLF__FUZZ_STEP:
            case CLF__FUZZ_SIGN:
                /* Discontinuous: only where the operand is bitwise reproducible. */
                if (!f.exact)
                    continue;
                o = f;
                o.mag = clf__op_info_of((clf__op)op)->fuzz == CLF__FUZZ_SIGN ? 1 : f.mag + 1;
                break;
            case CLF__FUZZ_PREDICATE: /* a bool of any float */
                o = (fz_facts){.mag = 1, .exact = true, .nonneg = true, .depth = f.depth + 1, .reduced = f.reduced};
                break;
            default: continue; /* a domain of binary ops */
            }
        }
        n->sub = (int)clf__op_unary((clf__op)op);
        n->facts = o;
        return true;
    }
    return false;
}

static const char *const unary_names[CLF_UNARY_COUNT] = {
#define NAME_(E, nm) #nm,
    CLF_UNARY_OP_LIST(NAME_)
#undef NAME_
};
static const char *const binary_names[CLF_BINARY_COUNT] = {
#define NAME_(E, nm) #nm,
    CLF_BINARY_OP_LIST(NAME_)
#undef NAME_
};
static const char *const reduce_names[CLF_REDUCE_COUNT] = {
#define NAME_(E, nm) #nm,
    CLF_REDUCE_OP_LIST(NAME_)
#undef NAME_
};

static clf_tensor build_unary(clf_graph *g, fz_node *n, const clf_tensor *in, fz_node *const *args)
{
    return clf_unary(g, (clf_unary_op)n->sub, in[0]);
}

static bool onnx_unary(FILE *f, const fz_graph *G, int i)
{
    const fz_node *n = &G->node[i];
    int a = n->in[0];
    if (n->sub == CLF_UNARY_RSQRT) {
        fprintf(f, "    v%d_s = Sqrt(v%d)\n    v%d = Div(one_f, v%d_s)\n", i, a, i, i);
        return true;
    }
    if (n->sub == CLF_UNARY_SILU) {
        fprintf(f, "    v%d_s = Sigmoid(v%d)\n    v%d = Mul(v%d, v%d_s)\n", i, a, i, a, i);
        return true;
    }
    const char *onnx = clf__op_info_of(clf__op_of_unary((clf_unary_op)n->sub))->onnx[0].name;
    if (!onnx)
        return false;
    fprintf(f, "    v%d = %s(v%d)\n", i, onnx, a);
    return true;
}

static bool pick_binary(fz_gen *G, fz_node *n)
{
    int a = pick_node(G, any_node, NULL);
    if (a < 0)
        return false;
    clf_dtype dt = G->G->node[a].odt;
    int top = draw_table_op(G, true, dt);
    if (top < 0)
        return false;
    clf__fuzz_domain dom = clf__op_info_of((clf__op)top)->fuzz;
    int op = (int)clf__op_binary((clf__op)top);
    bool compare = dom == CLF__FUZZ_COMPARE;
    bool need_exact = compare && dt == CLF_F32;
    if (need_exact && !G->G->node[a].facts.exact)
        return false;
    int b = partner(G, a, dt, need_exact);
    if (b < 0)
        return false;
    if (fz_chance(&G->r, 0.5)) {
        int t = a;
        a = b;
        b = t;
    }
    n->nin = 2;
    n->in[0] = a;
    n->in[1] = b;
    n->sub = op;
    const fz_facts fa = G->G->node[a].facts, fb = G->G->node[b].facts;
    fz_facts o = fa;
    o.depth = fa.depth > fb.depth ? fa.depth : fb.depth;
    o.reduced = fa.reduced || fb.reduced;
    o.kmax = fa.kmax > fb.kmax ? fa.kmax : fb.kmax;
    o.special = fa.special || fb.special;
    o.exact = fa.exact && fb.exact;
    o.nonneg = fa.nonneg && fb.nonneg;
    double m = fa.mag > fb.mag ? fa.mag : fb.mag;
    if (dt != CLF_F32 || compare || dom == CLF__FUZZ_LOGIC) {
        compare = compare || dom == CLF__FUZZ_LOGIC;
        o.mag = compare ? 1 : m;
        o.exact = true;
        if (compare)
            o.nonneg = true;
        n->facts = o;
        return true;
    }
    switch (dom) {
    case CLF__FUZZ_SUM:
    case CLF__FUZZ_DIFFERENCE:
        o.mag = fa.mag + fb.mag;
        o.nonneg = dom == CLF__FUZZ_SUM && o.nonneg;
        break;
    case CLF__FUZZ_PRODUCT: o.mag = fa.mag * fb.mag; break;
    case CLF__FUZZ_QUOTIENT:
    case CLF__FUZZ_POWER:
        o = inexact(o);
        o.mag = BIG;
        o.special = true;
        o.nonneg = dom == CLF__FUZZ_POWER ? fa.nonneg : o.nonneg;
        break;
    case CLF__FUZZ_SELECT: o.mag = m; break;
    default: return false; /* a domain of unary ops */
    }
    if (o.mag > BIG) {
        o.mag = BIG;
        o.special = true;
    }
    n->facts = o;
    return true;
}

static clf_tensor build_binary(clf_graph *g, fz_node *n, const clf_tensor *in, fz_node *const *args)
{
    return clf_binary(g, (clf_binary_op)n->sub, in[0], in[1]);
}

static bool onnx_binary(FILE *f, const fz_graph *G, int i)
{
    const fz_node *n = &G->node[i];
    if (n->sub == CLF_BINARY_NE) {
        fprintf(f, "    v%d_e = Equal(v%d, v%d)\n    v%d = Not(v%d_e)\n", i, n->in[0], n->in[1], i, i);
        return true;
    }
    const char *onnx = clf__op_info_of(clf__op_of_binary((clf_binary_op)n->sub))->onnx[0].name;
    if (!onnx)
        return false;
    fprintf(f, "    v%d = %s(v%d, v%d)\n", i, onnx, n->in[0], n->in[1]);
    return true;
}

static bool pick_where(fz_gen *G, fz_node *n)
{
    int a = pick_node(G, any_node, NULL);
    if (a < 0)
        return false;
    clf_dtype dt = G->G->node[a].odt;
    int c = partner(G, a, CLF_BOOL, true);
    if (c < 0)
        return false;
    int b = partner(G, a, dt, false);
    if (b < 0 || !broadcasts(&G->G->node[b], &G->G->node[c]))
        return false;
    n->nin = 3;
    n->in[0] = c;
    bool swap = fz_chance(&G->r, 0.5);
    n->in[1] = swap ? b : a;
    n->in[2] = swap ? a : b;
    const fz_facts fa = G->G->node[a].facts, fb = G->G->node[b].facts;
    n->facts = fa;
    n->facts.mag = fa.mag > fb.mag ? fa.mag : fb.mag;
    n->facts.special = fa.special || fb.special;
    n->facts.exact = fa.exact && fb.exact;
    n->facts.nonneg = fa.nonneg && fb.nonneg;
    n->facts.depth = fa.depth > fb.depth ? fa.depth : fb.depth;
    n->facts.reduced = fa.reduced || fb.reduced;
    n->facts.kmax = fa.kmax > fb.kmax ? fa.kmax : fb.kmax;
    return true;
}

static clf_tensor build_where(clf_graph *g, fz_node *n, const clf_tensor *in, fz_node *const *args)
{
    return clf_where(g, in[0], in[1], in[2]);
}

static bool onnx_where(FILE *f, const fz_graph *G, int i)
{
    const fz_node *n = &G->node[i];
    fprintf(f, "    v%d = Where(v%d, v%d, v%d)\n", i, n->in[0], n->in[1], n->in[2]);
    return true;
}

/* clip takes f32 and i32. */
static bool f32_or_i32(const fz_node *n, const void *arg)
{
    return (n->odt == CLF_F32 || n->odt == CLF_I32) && any_node(n, arg);
}

/* The reductions and argmax/argmin take f32, i32 and i64. */
static bool reducible(const fz_node *n, const void *arg)
{
    return (n->odt == CLF_F32 || n->odt == CLF_I32 || n->odt == CLF_I64) && any_node(n, arg);
}

static bool pick_clip(fz_gen *G, fz_node *n)
{
    static const double bounds[] = {-INFINITY, -1, -0.5, 0, 0.5, 1, 2, 3e9, INFINITY};
    int x = pick_node(G, f32_or_i32, NULL);
    if (x < 0)
        return false;
    n->nin = 1;
    n->in[0] = x;
    n->lo = bounds[fz_below(&G->r, 6)];
    n->hi = bounds[3 + fz_below(&G->r, 6)];
    n->facts = G->G->node[x].facts;
    double m = fmax(fabs(n->lo), fabs(n->hi));
    if (m < n->facts.mag)
        n->facts.mag = m;
    return true;
}

static clf_tensor build_clip(clf_graph *g, fz_node *n, const clf_tensor *in, fz_node *const *args)
{
    return clf_clip(g, in[0], n->lo, n->hi);
}

static bool onnx_clip(FILE *f, const fz_graph *G, int i)
{
    /* Clip's bounds are inputs of the operand's dtype; i32 bounds are
     * truncated and clamped to the int32 range as clf_clip does. */
    const fz_node *n = &G->node[i];
    const fz_node *x = &G->node[n->in[0]];
    if (x->odt == CLF_I32) {
        double lo = fmin(fmax(trunc(n->lo), INT32_MIN), INT32_MAX), hi = fmin(fmax(trunc(n->hi), INT32_MIN), INT32_MAX);
        fprintf(f, "    v%d_lo = Constant <value = int32 {%d}> ()\n", i, (int)lo);
        fprintf(f, "    v%d_hi = Constant <value = int32 {%d}> ()\n", i, (int)hi);
    } else {
        fprintf(f, "    v%d_lo = Constant <value_float = ", i);
        onnx_double(f, n->lo);
        fprintf(f, "> ()\n    v%d_hi = Constant <value_float = ", i);
        onnx_double(f, n->hi);
        fprintf(f, "> ()\n");
    }
    fprintf(f, "    v%d = Clip(v%d, v%d_lo, v%d_hi)\n", i, n->in[0], i, i);
    return true;
}

static bool pick_cast(fz_gen *G, fz_node *n)
{
    int x = pick_node(G, bits_node, NULL);
    if (x < 0)
        return false;
    const fz_node *a = &G->G->node[x];
    /* The storage floats are drawn from exact values only (an f32 computed
     * exactly, a bool, an integer within 2^24, which f32 holds exactly):
     * their rounding is then the same on every correct device and in the
     * reference, and the result is bitwise comparable. */
    static const clf_dtype draw[] = {CLF_F32, CLF_I32, CLF_BOOL, CLF_I64, CLF_F16, CLF_BF16};
    clf_dtype to = draw[fz_below(&G->r, sizeof draw / sizeof draw[0])];
    /* f32 -> i32, i64 or bool is discontinuous: exact operands only. */
    if (a->odt == CLF_F32 && to != CLF_F32 && !a->facts.exact)
        to = CLF_F32;
    if (storage_float(to) && (a->odt == CLF_I32 || a->odt == CLF_I64) && a->facts.mag > 16777216.0)
        to = CLF_F32;
    n->nin = 1;
    n->in[0] = x;
    n->ival = to;
    n->facts = a->facts;
    if (to == CLF_BOOL)
        n->facts = (fz_facts){.mag = 1, .exact = true, .nonneg = true, .depth = a->facts.depth,
                              .reduced = a->facts.reduced};
    else if (to == CLF_I32 || to == CLF_I64)
        n->facts.special = false;
    const bool from_float = a->odt == CLF_F32 || storage_float(a->odt);
    if (to == CLF_I32 && (from_float || n->facts.mag > 2147483648.0))
        n->facts.mag = 2147483648.0; /* saturated, or wrapped from i64 */
    if (to == CLF_I64 && from_float)
        n->facts.mag = I64_MAG;
    if (to == CLF_F16 && n->facts.mag > 65504.0) {
        n->facts.mag = 65504.0; /* larger values round to infinity */
        n->facts.special = true;
    }
    return true;
}

static clf_tensor build_cast(clf_graph *g, fz_node *n, const clf_tensor *in, fz_node *const *args)
{
    return clf_cast(g, in[0], (clf_dtype)n->ival);
}

static bool onnx_cast(FILE *f, const fz_graph *G, int i)
{
    const fz_node *n = &G->node[i];
    fprintf(f, "    v%d = Cast <to = %d> (v%d)\n", i, onnx_elem((clf_dtype)n->ival), n->in[0]);
    return true;
}

/* ---- Families: movement ---------------------------------------------------- */

static void copy_facts(fz_gen *G, fz_node *n) { n->facts = G->G->node[n->in[0]].facts; }

enum { RESHAPE_FLATTEN, RESHAPE_MERGE, RESHAPE_SPLIT, RESHAPE_ZERO_COPY, RESHAPE_MODES };

static bool pick_reshape(fz_gen *G, fz_node *n)
{
    int x = pick_node(G, bits_node, NULL);
    if (x < 0)
        return false;
    n->nin = 1;
    n->in[0] = x;
    n->ival = (int)fz_below(&G->r, RESHAPE_MODES);
    n->axes[0] = (int)fz_below(&G->r, FZ_MAX_RANK);
    n->v[0][0] = 1 + fz_below(&G->r, 4);
    n->flag = fz_chance(&G->r, 0.5); /* use -1 where it is unambiguous */
    copy_facts(G, n);
    return true;
}

static clf_tensor build_reshape(clf_graph *g, fz_node *n, const clf_tensor *in, fz_node *const *args)
{
    const fz_node *a = args[0];
    int r = a->orank, o = 0;
    int64_t *t = n->real[0];
    bool empty = numel_of(r, a->oshape) == 0;
    switch (n->ival) {
    case RESHAPE_FLATTEN:
        t[o++] = n->flag && !empty ? -1 : numel_of(r, a->oshape);
        break;
    case RESHAPE_MERGE: {
        int k = r >= 2 ? n->axes[0] % (r - 1) : -1;
        for (int i = 0; i < r; i++) {
            if (i == k + 1)
                t[o - 1] *= a->oshape[i];
            else
                t[o++] = a->oshape[i];
        }
        break;
    }
    case RESHAPE_SPLIT: {
        int k = r ? n->axes[0] % r : -1;
        for (int i = 0; i < r; i++) {
            int64_t f = n->v[0][0];
            if (i == k && o + 2 <= FZ_MAX_RANK && a->oshape[i] % f == 0) {
                t[o++] = f;
                t[o++] = n->flag && !empty ? -1 : a->oshape[i] / f;
            } else {
                t[o++] = a->oshape[i];
            }
        }
        break;
    }
    default: /* ONNX's 0: copy the input's extent at that position */
        for (int i = 0; i < r; i++)
            t[o++] = (i + n->axes[0]) % 2 ? 0 : a->oshape[i];
        break;
    }
    n->nreal = o;
    return clf_reshape(g, in[0], o, t);
}

/* An int64 initializer-like Constant named v<i>_<tag>. */
static void onnx_ints(FILE *f, int i, const char *tag, int n, const int64_t *v)
{
    fprintf(f, "    v%d_%s = Constant <value = int64[%d] {", i, tag, n);
    for (int k = 0; k < n; k++)
        fprintf(f, "%s%lld", k ? ", " : "", (long long)v[k]);
    fputs("}> ()\n", f);
}

static void onnx_axes(FILE *f, int i, const char *tag, int n, const int *axes)
{
    int64_t v[CLF_MAX_RANK];
    for (int k = 0; k < n; k++)
        v[k] = axes[k];
    onnx_ints(f, i, tag, n, v);
}

static bool onnx_reshape(FILE *f, const fz_graph *G, int i)
{
    const fz_node *n = &G->node[i];
    if (n->nreal == 0)
        fprintf(f, "    v%d_shape = Constant <value = int64[0] {}> ()\n", i);
    else
        onnx_ints(f, i, "shape", n->nreal, n->real[0]);
    fprintf(f, "    v%d = %s(v%d, v%d_shape)\n", i, n->family == FZ_FAM_RESHAPE ? "Reshape" : "Expand", n->in[0],
            i);
    return true;
}

static bool pick_transpose(fz_gen *G, fz_node *n)
{
    int x = pick_node(G, bits_node, NULL);
    if (x < 0)
        return false;
    int r = G->G->node[x].orank;
    n->nin = 1;
    n->in[0] = x;
    n->flag = fz_chance(&G->r, 0.2); /* perm NULL: reverse */
    for (int i = 0; i < r; i++)
        n->axes[i] = i;
    for (int i = r - 1; i > 0; i--) {
        int j = (int)fz_below(&G->r, (uint32_t)i + 1), t = n->axes[i];
        n->axes[i] = n->axes[j];
        n->axes[j] = t;
    }
    n->naxes = r;
    copy_facts(G, n);
    return true;
}

static clf_tensor build_transpose(clf_graph *g, fz_node *n, const clf_tensor *in, fz_node *const *args)
{
    n->nrealaxes = n->flag ? 0 : n->naxes;
    memcpy(n->realaxes, n->axes, sizeof n->axes);
    return n->flag ? clf_transpose(g, in[0], 0, NULL) : clf_transpose(g, in[0], n->naxes, n->axes);
}

static bool onnx_transpose(FILE *f, const fz_graph *G, int i)
{
    const fz_node *n = &G->node[i];
    if (n->flag) {
        fprintf(f, "    v%d = Transpose(v%d)\n", i, n->in[0]);
        return true;
    }
    fprintf(f, "    v%d = Transpose <perm = [", i);
    for (int k = 0; k < n->naxes; k++)
        fprintf(f, "%s%d", k ? ", " : "", n->axes[k]);
    fprintf(f, "]> (v%d)\n", n->in[0]);
    return true;
}

static bool pick_expand(fz_gen *G, fz_node *n)
{
    int x = pick_node(G, bits_node, NULL);
    if (x < 0)
        return false;
    n->nin = 1;
    n->in[0] = x;
    n->ival = (int)fz_below(&G->r, 3); /* leading axes to add */
    for (int i = 0; i < FZ_MAX_RANK; i++) {
        n->v[0][i] = fz_chance(&G->r, 0.05) ? 0 : 1 + fz_below(&G->r, 5);
        n->v[1][i] = fz_chance(&G->r, 0.5); /* for extents != 1: write 1 (keep) or the extent */
    }
    copy_facts(G, n);
    return true;
}

static clf_tensor build_expand(clf_graph *g, fz_node *n, const clf_tensor *in, fz_node *const *args)
{
    const fz_node *a = args[0];
    int o = 0, lead = n->ival;
    if (a->orank + lead > FZ_MAX_RANK)
        lead = FZ_MAX_RANK - a->orank;
    if (lead < 0)
        lead = 0;
    for (int i = 0; i < lead; i++)
        n->real[0][o++] = n->v[0][i];
    for (int i = 0; i < a->orank; i++) {
        int64_t e = a->oshape[i];
        n->real[0][o++] = e == 1 ? n->v[0][lead + i < FZ_MAX_RANK ? lead + i : 0] : n->v[1][i] ? e : 1;
    }
    n->nreal = o;
    return clf_expand(g, in[0], o, n->real[0]);
}

static bool pick_slice(fz_gen *G, fz_node *n)
{
    static const int64_t ends[] = {-1000000000000LL, -7, -3, -2, -1, 0, 1, 2, 3, 5, 9, INT64_MAX, INT64_MIN};
    static const int64_t steps[] = {1, 1, 1, 1, 2, 3, -1, -1, -2};
    int x = pick_node(G, bits_node, NULL);
    if (x < 0 || G->G->node[x].orank == 0)
        return false;
    int r = G->G->node[x].orank;
    n->nin = 1;
    n->in[0] = x;
    n->naxes = 1 + (int)fz_below(&G->r, (uint32_t)r);
    /* Distinct axes, sometimes negative. */
    int perm[FZ_MAX_RANK];
    for (int i = 0; i < r; i++)
        perm[i] = i;
    for (int i = r - 1; i > 0; i--) {
        int j = (int)fz_below(&G->r, (uint32_t)i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int k = 0; k < n->naxes; k++) {
        n->axes[k] = fz_chance(&G->r, 0.3) ? perm[k] - r : perm[k];
        n->v[0][k] = ends[fz_below(&G->r, sizeof ends / sizeof ends[0])];
        n->v[1][k] = ends[fz_below(&G->r, sizeof ends / sizeof ends[0])];
        n->v[2][k] = steps[fz_below(&G->r, sizeof steps / sizeof steps[0])];
    }
    n->flag = fz_chance(&G->r, 0.2); /* axes NULL: the first naxes axes */
    copy_facts(G, n);
    return true;
}

static clf_tensor build_slice(clf_graph *g, fz_node *n, const clf_tensor *in, fz_node *const *args)
{
    n->nrealaxes = n->naxes;
    for (int k = 0; k < n->naxes; k++)
        n->realaxes[k] = n->flag ? k : n->axes[k];
    return clf_slice(g, in[0], n->naxes, n->v[0], n->v[1], n->flag ? NULL : n->axes, n->v[2]);
}

static bool onnx_slice(FILE *f, const fz_graph *G, int i)
{
    const fz_node *n = &G->node[i];
    onnx_ints(f, i, "starts", n->naxes, n->v[0]);
    onnx_ints(f, i, "ends", n->naxes, n->v[1]);
    onnx_axes(f, i, "axes", n->nrealaxes, n->realaxes);
    onnx_ints(f, i, "steps", n->naxes, n->v[2]);
    fprintf(f, "    v%d = Slice(v%d, v%d_starts, v%d_ends, v%d_axes, v%d_steps)\n", i, n->in[0], i, i, i, i);
    return true;
}

static bool has_unit_axis(const fz_node *n, const void *arg)
{
    for (int i = 0; i < n->orank; i++)
        if (n->oshape[i] == 1)
            return any_node(n, arg);
    return false;
}

static bool pick_squeeze(fz_gen *G, fz_node *n)
{
    int x = pick_node(G, has_unit_axis, NULL);
    if (x < 0)
        return false;
    const fz_node *a = &G->G->node[x];
    n->nin = 1;
    n->in[0] = x;
    n->naxes = 0;
    if (fz_chance(&G->r, 0.6))
        for (int i = 0; i < a->orank; i++)
            if (a->oshape[i] == 1 && fz_chance(&G->r, 0.6))
                n->axes[n->naxes++] = fz_chance(&G->r, 0.3) ? i - a->orank : i;
    copy_facts(G, n);
    return true;
}

static clf_tensor build_squeeze(clf_graph *g, fz_node *n, const clf_tensor *in, fz_node *const *args)
{
    n->nrealaxes = n->naxes;
    memcpy(n->realaxes, n->axes, sizeof n->axes);
    return clf_squeeze(g, in[0], n->naxes, n->axes);
}

static clf_tensor build_unsqueeze(clf_graph *g, fz_node *n, const clf_tensor *in, fz_node *const *args)
{
    n->nrealaxes = n->naxes;
    memcpy(n->realaxes, n->axes, sizeof n->axes);
    return clf_unsqueeze(g, in[0], n->naxes, n->axes);
}

static bool onnx_squeeze(FILE *f, const fz_graph *G, int i)
{
    const fz_node *n = &G->node[i];
    const char *op = n->family == FZ_FAM_SQUEEZE ? "Squeeze" : "Unsqueeze";
    if (n->nrealaxes == 0) {
        fprintf(f, "    v%d = %s(v%d)\n", i, op, n->in[0]);
        return true;
    }
    onnx_axes(f, i, "axes", n->nrealaxes, n->realaxes);
    fprintf(f, "    v%d = %s(v%d, v%d_axes)\n", i, op, n->in[0], i);
    return true;
}

static bool pick_unsqueeze(fz_gen *G, fz_node *n)
{
    int x = pick_node(G, bits_node, NULL);
    if (x < 0 || G->G->node[x].orank >= FZ_MAX_RANK)
        return false;
    int r = G->G->node[x].orank;
    n->nin = 1;
    n->in[0] = x;
    n->naxes = r + 2 <= FZ_MAX_RANK && fz_chance(&G->r, 0.3) ? 2 : 1;
    int orank = r + n->naxes;
    n->axes[0] = (int)fz_below(&G->r, (uint32_t)orank);
    if (n->naxes == 2)
        n->axes[1] = (n->axes[0] + 1 + (int)fz_below(&G->r, (uint32_t)orank - 1)) % orank;
    for (int k = 0; k < n->naxes; k++)
        if (fz_chance(&G->r, 0.3))
            n->axes[k] -= orank;
    copy_facts(G, n);
    return true;
}

/* ---- Families: reductions and composites ----------------------------------- */

/* Chooses a set of distinct axes of a rank-r operand (naxes 0 means every
 * axis, as the API says); returns the number of elements reduced per
 * output. */
static int64_t pick_axes(fz_gen *G, const fz_node *a, fz_node *n)
{
    int r = a->orank;
    n->naxes = 0;
    if (r == 0 || fz_chance(&G->r, 0.2))
        return node_numel(a);
    int64_t cnt = 1;
    for (int i = 0; i < r; i++)
        if (fz_chance(&G->r, 0.4)) {
            n->axes[n->naxes++] = fz_chance(&G->r, 0.3) ? i - r : i;
            cnt *= a->oshape[i];
        }
    if (n->naxes == 0) {
        n->axes[n->naxes++] = r - 1;
        cnt = a->oshape[r - 1];
    }
    return cnt;
}

static bool pick_reduce(fz_gen *G, fz_node *n)
{
    int x = pick_node(G, reducible, NULL);
    if (x < 0)
        return false;
    const fz_node *a = &G->G->node[x];
    n->nin = 1;
    n->in[0] = x;
    n->sub = (int)fz_below(&G->r, CLF_REDUCE_COUNT);
    if (a->odt != CLF_F32 && n->sub == CLF_REDUCE_MEAN)
        n->sub = CLF_REDUCE_SUM;
    n->keepdims = fz_chance(&G->r, 0.5);
    double cnt = (double)pick_axes(G, a, n);
    fz_facts f = a->facts, o = f;
    o.reduced = true;
    if (a->odt == CLF_F32) {
        switch (n->sub) {
        case CLF_REDUCE_SUM:
        case CLF_REDUCE_MEAN:
            /* No overflow of partial sums in either order. */
            if (f.mag * cnt > 1e36)
                return false;
            o = inexact(o);
            o.mag = n->sub == CLF_REDUCE_SUM ? f.mag * cnt : f.mag;
            o.special |= n->sub == CLF_REDUCE_MEAN && cnt == 0;
            break;
        case CLF_REDUCE_PROD:
            if (f.mag > 1 && cnt * log10(f.mag) > 30)
                return false;
            if (f.mag < 1e-3 && cnt > 1)
                return false; /* underflow in one order and not the other */
            o = inexact(o);
            o.mag = f.mag > 1 ? pow(f.mag, cnt) : 1;
            break;
        default: /* max, min: exact */
            o.special |= cnt == 0;
            break;
        }
    }
    n->facts = o;
    return true;
}

static clf_tensor build_reduce(clf_graph *g, fz_node *n, const clf_tensor *in, fz_node *const *args)
{
    n->nrealaxes = n->naxes;
    memcpy(n->realaxes, n->axes, sizeof n->axes);
    return clf_reduce(g, (clf_reduce_op)n->sub, in[0], n->naxes, n->axes, n->keepdims);
}

static bool onnx_reduce(FILE *f, const fz_graph *G, int i)
{
    static const char *const onnx[CLF_REDUCE_COUNT] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
                                                       "ReduceProd"};
    const fz_node *n = &G->node[i];
    if (n->naxes == 0) {
        fprintf(f, "    v%d = %s <keepdims = %d> (v%d)\n", i, onnx[n->sub], n->keepdims, n->in[0]);
        return true;
    }
    onnx_axes(f, i, "axes", n->naxes, n->axes);
    fprintf(f, "    v%d = %s <keepdims = %d> (v%d, v%d_axes)\n", i, onnx[n->sub], n->keepdims, n->in[0], i);
    return true;
}

static bool arg_operand(const fz_node *n, const void *arg)
{
    if (n->orank == 0 || !reducible(n, arg))
        return false;
    if (n->odt == CLF_F32 && !n->facts.exact)
        return false; /* near-ties decided by rounding */
    for (int i = 0; i < n->orank; i++)
        if (n->oshape[i] > 0)
            return true;
    return false;
}

static bool pick_arg(fz_gen *G, fz_node *n)
{
    int x = pick_node(G, arg_operand, NULL);
    if (x < 0)
        return false;
    const fz_node *a = &G->G->node[x];
    int axes[FZ_MAX_RANK], na = 0;
    for (int i = 0; i < a->orank; i++)
        if (a->oshape[i] > 0)
            axes[na++] = i;
    n->nin = 1;
    n->in[0] = x;
    n->sub = (int)fz_below(&G->r, 2);
    n->ival = axes[fz_below(&G->r, (uint32_t)na)];
    if (fz_chance(&G->r, 0.3))
        n->ival -= a->orank;
    n->keepdims = fz_chance(&G->r, 0.5);
    n->flag = fz_chance(&G->r, 0.3);
    n->facts = (fz_facts){.mag = 64, .exact = true, .nonneg = true, .depth = a->facts.depth, .reduced = true};
    return true;
}

static clf_tensor build_arg(clf_graph *g, fz_node *n, const clf_tensor *in, fz_node *const *args)
{
    return (n->sub ? clf_argmin : clf_argmax)(g, in[0], n->ival, n->keepdims, n->flag);
}

static bool onnx_arg(FILE *f, const fz_graph *G, int i)
{
    const fz_node *n = &G->node[i];
    /* ONNX gives int64 indices, clf_argmax i32. */
    fprintf(f, "    v%d_l = %s <axis = %d, keepdims = %d, select_last_index = %d> (v%d)\n", i,
            n->sub ? "ArgMin" : "ArgMax", n->ival, n->keepdims, n->flag, n->in[0]);
    fprintf(f, "    v%d = Cast <to = 6> (v%d_l)\n", i, i);
    return true;
}

static bool f32_node(const fz_node *n, const void *arg) { return n->odt == CLF_F32 && any_node(n, arg); }

static bool pick_var(fz_gen *G, fz_node *n)
{
    int x = pick_node(G, f32_node, NULL);
    if (x < 0)
        return false;
    const fz_node *a = &G->G->node[x];
    n->nin = 1;
    n->in[0] = x;
    n->keepdims = fz_chance(&G->r, 0.5);
    n->ival = (int)fz_below(&G->r, 2);
    double cnt = (double)pick_axes(G, a, n);
    if (a->facts.mag > 1e15 || a->facts.mag * a->facts.mag * cnt > 1e36)
        return false;
    n->facts = inexact(a->facts);
    n->facts.reduced = true;
    n->facts.mag = a->facts.mag * a->facts.mag * (cnt + 1);
    n->facts.special |= cnt <= (double)n->ival;
    n->facts.nonneg = true;
    return true;
}

static clf_tensor build_var(clf_graph *g, fz_node *n, const clf_tensor *in, fz_node *const *args)
{
    n->nrealaxes = n->naxes;
    memcpy(n->realaxes, n->axes, sizeof n->axes);
    return clf_reduce_var(g, in[0], n->naxes, n->axes, n->keepdims, n->ival);
}

static bool onnx_var(FILE *f, const fz_graph *G, int i)
{
    /* No ONNX op: mean((x - mean(x))^2) scaled by n / (n - correction). */
    const fz_node *n = &G->node[i], *a = &G->node[n->in[0]];
    int64_t cnt = 1;
    if (n->naxes == 0) {
        cnt = node_numel(a);
    } else {
        for (int k = 0; k < n->naxes; k++)
            cnt *= a->oshape[n->axes[k] < 0 ? n->axes[k] + a->orank : n->axes[k]];
    }
    if (n->naxes)
        onnx_axes(f, i, "axes", n->naxes, n->axes);
    char ax[32] = "";
    if (n->naxes)
        snprintf(ax, sizeof ax, ", v%d_axes", i);
    fprintf(f, "    v%d_m = ReduceMean <keepdims = 1> (v%d%s)\n", i, n->in[0], ax);
    fprintf(f, "    v%d_d = Sub(v%d, v%d_m)\n    v%d_q = Mul(v%d_d, v%d_d)\n", i, n->in[0], i, i, i, i);
    fprintf(f, "    v%d_s = ReduceSum <keepdims = %d> (v%d_q%s)\n", i, n->keepdims, i, ax);
    fprintf(f, "    v%d_n = Constant <value_float = %lld> ()\n", i, (long long)(cnt - n->ival));
    fprintf(f, "    v%d = Div(v%d_s, v%d_n)\n", i, i, i);
    return true;
}

static bool pick_softmax(fz_gen *G, fz_node *n)
{
    int x = pick_node(G, f32_node, NULL);
    if (x < 0)
        return false;
    const fz_node *a = &G->G->node[x];
    int r = a->orank;
    n->nin = 1;
    n->in[0] = x;
    n->sub = (int)fz_below(&G->r, 2);
    n->ival = r ? (int)fz_below(&G->r, (uint32_t)(2 * r)) - r : 0;
    n->facts = inexact(a->facts);
    n->facts.reduced = true;
    n->facts.mag = n->sub ? 2 * a->facts.mag + 100 : 1;
    n->facts.nonneg = n->sub == 0;
    return true;
}

static clf_tensor build_softmax(clf_graph *g, fz_node *n, const clf_tensor *in, fz_node *const *args)
{
    return (n->sub ? clf_log_softmax : clf_softmax)(g, in[0], n->ival);
}

static bool onnx_softmax(FILE *f, const fz_graph *G, int i)
{
    const fz_node *n = &G->node[i];
    fprintf(f, "    v%d = %s <axis = %d> (v%d)\n", i, n->sub ? "LogSoftmax" : "Softmax", n->ival, n->in[0]);
    return true;
}

/* Layer and RMS norm: in[1], in[2] (optional scale and bias) are new inputs
 * shaped like x.shape[axis:] with some extents 1. */
static bool pick_norm(fz_gen *G, fz_node *n, int nparams)
{
    static const double eps[] = {1e-5, 1e-5, 1e-3, 0};
    int x = pick_node(G, f32_node, NULL);
    if (x < 0)
        return false;
    const fz_node *a = &G->G->node[x];
    if (a->orank == 0 || a->facts.mag > 1e15)
        return false;
    int r = a->orank;
    int axis = (int)fz_below(&G->r, (uint32_t)r);
    double cnt = (double)numel_of(r - axis, a->oshape + axis);
    if (a->facts.mag * a->facts.mag * cnt > 1e36)
        return false;
    n->ival = fz_chance(&G->r, 0.3) ? axis - r : axis;
    /* Epsilon 0 only over exact operands: a row of equal values is then 0 / 0
     * (NaN) on the device as in the reference. Over rounded ones the equal
     * values may differ in their last bit on the device (a softmax of tiny
     * logits: each 1/3) and its float mean by one ulp from them, where the
     * reference's double mean is exact: a finite result against NaN that
     * perturbing the inputs does not reveal. */
    n->lo = eps[fz_below(&G->r, a->facts.exact ? 4 : 3)];
    n->nin = 1;
    n->in[0] = x;
    double pmag = 1;
    for (int k = 0; k < nparams; k++) {
        if (fz_chance(&G->r, 0.3))
            break;
        int64_t shape[FZ_MAX_RANK];
        int pr = r - axis;
        for (int d = 0; d < pr; d++)
            shape[d] = fz_chance(&G->r, 0.2) ? 1 : G->G->node[x].oshape[axis + d];
        int p = add_input(G, CLF_F32, pr, shape);
        if (p < 0)
            return false;
        /* Parameters are ordinary finite values. */
        G->G->node[p].profile = FZ_PROF_NORMAL;
        G->G->node[p].facts = leaf_facts(CLF_F32, FZ_PROF_NORMAL);
        n->in[1 + k] = p;
        n->nin = 2 + k;
        pmag = 2;
    }
    n->facts = inexact(G->G->node[x].facts);
    n->facts.reduced = true;
    n->facts.mag = (sqrt(cnt) + 1) * pmag * 4 + 2;
    n->facts.special |= n->lo == 0;
    n->facts.nonneg = false;
    return true;
}

/* in[1] is the scale, in[2] the bias; a bias comes only with a scale. */
static bool pick_layer_norm(fz_gen *G, fz_node *n) { return pick_norm(G, n, 2); }

static bool pick_rms_norm(fz_gen *G, fz_node *n) { return pick_norm(G, n, 1); }

static clf_tensor build_layer_norm(clf_graph *g, fz_node *n, const clf_tensor *in, fz_node *const *args)
{
    clf_tensor scale = n->nin > 1 ? in[1] : CLF_TENSOR_INVALID;
    clf_tensor bias = n->nin > 2 ? in[2] : CLF_TENSOR_INVALID;
    return clf_layer_norm(g, in[0], n->ival, n->lo, scale, bias);
}

static clf_tensor build_rms_norm(clf_graph *g, fz_node *n, const clf_tensor *in, fz_node *const *args)
{
    return clf_rms_norm(g, in[0], n->ival, n->lo, n->nin > 1 ? in[1] : CLF_TENSOR_INVALID);
}

static bool onnx_norm(FILE *f, const fz_graph *G, int i)
{
    const fz_node *n = &G->node[i];
    bool ln = n->family == FZ_FAM_LAYER_NORM;
    const fz_node *x = &G->node[n->in[0]];
    /* ONNX wants the scale (and LayerNormalization's scale is required):
     * a ones tensor of the normalized shape stands in when absent. */
    int axis = n->ival < 0 ? n->ival + x->orank : n->ival;
    char scale[32];
    if (n->nin > 1) {
        snprintf(scale, sizeof scale, "v%d", n->in[1]);
    } else {
        int64_t shape[CLF_MAX_RANK];
        int pr = x->orank - axis;
        memcpy(shape, x->oshape + axis, sizeof(int64_t) * (size_t)pr);
        onnx_ints(f, i, "sshape", pr, shape);
        fprintf(f, "    v%d_one = Constant <value_float = 1.0> ()\n", i);
        fprintf(f, "    v%d_scale = Expand(v%d_one, v%d_sshape)\n", i, i, i);
        snprintf(scale, sizeof scale, "v%d_scale", i);
    }
    fprintf(f, "    v%d = %s <axis = %d, epsilon = ", i, ln ? "LayerNormalization" : "RMSNormalization", n->ival);
    onnx_double(f, n->lo);
    fprintf(f, "> (v%d, %s", n->in[0], scale);
    if (n->nin > 2)
        fprintf(f, ", v%d", n->in[2]);
    fputs(")\n", f);
    return true;
}

/* ---- Families: contractions (matmul, gemm) ---------------------------------- */

/* Extents of a contraction's own axes (M, N, K): small, with 0 and 1 often;
 * a few past one CPU block (8) and the GPU float4 runs. */
static int64_t contraction_extent(fz_rng *r)
{
    uint32_t k = fz_below(r, 100);
    if (k < 5)
        return 0;
    if (k < 28)
        return 1;
    if (k < 85)
        return 2 + fz_below(r, 8);
    return 10 + fz_below(r, 27);
}

static bool contraction_operand(const fz_node *n, const void *arg)
{
    const int *rank = arg;
    return n->odt == CLF_F32 && n->family != FZ_FAM_SCALAR && n->orank >= rank[0] && n->orank <= rank[1] &&
           n->facts.mag <= 1e30;
}

static fz_facts f32_leaf(fz_profile p) { return leaf_facts(CLF_F32, p); }

/* A new f32 operand of this shape: an input, and often a cheap pointwise
 * op on it that the GEMM may compute in its loads (a prologue): a scale,
 * an activation, the add of a broadcast row, or a cast from i32. plain:
 * ordinary finite values (the other operand is large). Returns the node or
 * -1 when the graph is full. */
static int contraction_input(fz_gen *G, int rank, const int64_t *shape, bool plain)
{
    uint32_t k = fz_below(&G->r, 10);
    if (k == 9 && rank >= 1) { /* cast from i32 */
        int x = add_input(G, CLF_I32, rank, shape);
        fz_node *p = x < 0 ? NULL : new_node(G);
        if (!p)
            return -1;
        G->G->node[x].profile = FZ_PROF_NORMAL;
        G->G->node[x].facts = leaf_facts(CLF_I32, FZ_PROF_NORMAL);
        *p = (fz_node){.family = FZ_FAM_CAST, .nin = 1, .in = {x}, .ival = CLF_F32, .odt = CLF_F32, .orank = rank};
        memcpy(p->oshape, shape, sizeof(int64_t) * (size_t)rank);
        p->facts = (fz_facts){.mag = 5, .exact = true};
        return (int)(p - G->G->node);
    }
    int x = add_input(G, CLF_F32, rank, shape);
    if (x < 0)
        return -1;
    fz_node *in = &G->G->node[x];
    if (plain || in->profile == FZ_PROF_LARGE) {
        in->profile = plain ? FZ_PROF_NORMAL : FZ_PROF_LARGE;
        in->facts = f32_leaf(in->profile);
    }
    if (k < 5)
        return x;
    fz_facts f = G->G->node[x].facts;
    int extra = -1;
    if (k == 8 && rank >= 1) { /* + a broadcast row */
        extra = add_input(G, CLF_F32, 1, shape + rank - 1);
        if (extra < 0)
            return -1;
        G->G->node[extra].profile = FZ_PROF_NORMAL;
        G->G->node[extra].facts = f32_leaf(FZ_PROF_NORMAL);
    } else if (k == 7) { /* * a scalar */
        static const double scales[] = {0.5, -2, 0.25};
        extra = add_scalar(G, CLF_F32);
        if (extra < 0)
            return -1;
        G->G->node[extra].lo = scales[fz_below(&G->r, 3)];
        G->G->node[extra].facts = (fz_facts){.mag = fabs(G->G->node[extra].lo), .exact = true};
    }
    fz_node *p = new_node(G);
    if (!p)
        return -1;
    *p = (fz_node){.nin = 1, .in = {x}, .odt = CLF_F32, .orank = rank};
    memcpy(p->oshape, shape, sizeof(int64_t) * (size_t)rank);
    if (extra >= 0) {
        p->family = FZ_FAM_BINARY;
        p->nin = 2;
        p->in[1] = extra;
        p->sub = k == 8 ? CLF_BINARY_ADD : CLF_BINARY_MUL;
        p->facts = f;
        p->facts.mag = k == 8 ? f.mag + 2 : f.mag * 2;
        p->facts.nonneg = false;
        p->facts.exact = f.exact; /* exact operands: add and mul round as the reference does */
        return (int)(p - G->G->node);
    }
    static const int acts[] = {CLF_UNARY_TANH, CLF_UNARY_RELU, CLF_UNARY_NEG, CLF_UNARY_SIGMOID, CLF_UNARY_GELU};
    p->family = FZ_FAM_UNARY;
    p->sub = acts[fz_below(&G->r, 5)];
    p->facts = f;
    switch (p->sub) {
    case CLF_UNARY_TANH: p->facts = inexact(f); p->facts.mag = 1; p->facts.nonneg = false; break;
    case CLF_UNARY_SIGMOID: p->facts = inexact(f); p->facts.mag = 1; p->facts.nonneg = true; break;
    case CLF_UNARY_GELU: p->facts = inexact(f); p->facts.nonneg = false; break;
    case CLF_UNARY_RELU: p->facts.nonneg = true; break;
    default: p->facts.nonneg = false; break;
    }
    return (int)(p - G->G->node);
}

/* Batch extents of a new operand against the other operand's batch axes
 * (ob of them, extents obs): aligned from the right, each the other's
 * extent or 1; axes the other lacks get 1 to 3. */
static void batch_partner(fz_rng *r, int nb, int ob, const int64_t *obs, int64_t *out)
{
    for (int i = 0; i < nb; i++) {
        int j = i - (nb - ob);
        if (j >= 0 && obs[j] != 1)
            out[i] = fz_chance(r, 0.3) ? 1 : obs[j];
        else
            out[i] = 1 + fz_below(r, 3);
    }
}

/* The facts of alpha * (a @ b) over k terms (+ beta * c). */
static fz_facts contraction_facts(const fz_facts *fa, const fz_facts *fb, int64_t k, double alpha)
{
    fz_facts o = {0};
    o.mag = fabs(alpha) * (double)k * fa->mag * fb->mag;
    o.special = k > 0 && (fa->special || fb->special);
    o.exact = k == 0 && !o.special;
    o.nonneg = k == 0 || (fa->nonneg && fb->nonneg && alpha >= 0);
    o.depth = (fa->depth > fb->depth ? fa->depth : fb->depth) + 1;
    o.reduced = true;
    o.kmax = fa->kmax > fb->kmax ? fa->kmax : fb->kmax;
    if (k > o.kmax)
        o.kmax = (int)k;
    return o;
}

/* Whether a @ b over k terms stays finite in any summation order: partial
 * sums are bounded by k * |a| * |b|. */
static bool contraction_bounded(const fz_facts *fa, const fz_facts *fb, int64_t k)
{
    return fa->mag * fb->mag * (double)(k > 0 ? k : 1) <= 1e36;
}

/* clf_matmul: an existing f32 node (rank 1 to 4) as a or b, or none, and a
 * new operand shaped to fit: 1-D or batched [..., M, K] / [..., K, N] with
 * broadcast batch axes. */
static bool pick_matmul(fz_gen *G, fz_node *n)
{
    static const int ranks[] = {1, 4};
    static const int rank_pick[10] = {1, 1, 2, 2, 2, 2, 3, 3, 4, 4};
    int x = fz_chance(&G->r, 0.75) ? pick_node(G, contraction_operand, ranks) : -1;
    bool x_is_a = fz_chance(&G->r, 0.5);
    int rk = 0, ro;
    int64_t known[FZ_MAX_RANK], other[FZ_MAX_RANK];
    if (x >= 0) {
        rk = G->G->node[x].orank;
        memcpy(known, G->G->node[x].oshape, sizeof(int64_t) * (size_t)rk);
    } else {
        rk = rank_pick[fz_below(&G->r, 10)];
        for (int i = 0; i < rk; i++)
            known[i] = i < rk - 2 ? 1 + fz_below(&G->r, 3) : contraction_extent(&G->r);
    }
    /* K from the known side; the other side's rank, batch and M or N. */
    int64_t k = x_is_a ? known[rk - 1] : known[rk == 1 ? 0 : rk - 2];
    ro = rank_pick[fz_below(&G->r, 10)];
    int ob = rk >= 2 ? rk - 2 : 0;
    if (ro >= 2)
        batch_partner(&G->r, ro - 2, ob, known, other);
    if (ro == 1) {
        other[0] = k;
    } else if (x_is_a) {
        other[ro - 2] = k;
        other[ro - 1] = contraction_extent(&G->r);
    } else {
        other[ro - 2] = contraction_extent(&G->r);
        other[ro - 1] = k;
    }
    int kn = x >= 0 ? x : contraction_input(G, rk, known, false);
    if (kn < 0)
        return false;
    bool plain = G->G->node[kn].facts.mag > 16 || G->G->node[kn].facts.special;
    int on = contraction_input(G, ro, other, plain);
    if (on < 0)
        return false;
    n->nin = 2;
    n->in[0] = x_is_a ? kn : on;
    n->in[1] = x_is_a ? on : kn;
    const fz_facts *fa = &G->G->node[n->in[0]].facts, *fb = &G->G->node[n->in[1]].facts;
    if (!contraction_bounded(fa, fb, k))
        return false;
    n->facts = contraction_facts(fa, fb, k, 1.0);
    return true;
}

static clf_tensor build_matmul(clf_graph *g, fz_node *n, const clf_tensor *in, fz_node *const *args)
{
    return clf_matmul(g, in[0], in[1]);
}

static bool onnx_matmul(FILE *f, const fz_graph *G, int i)
{
    const fz_node *n = &G->node[i];
    fprintf(f, "    v%d = MatMul(v%d, v%d)\n", i, n->in[0], n->in[1]);
    return true;
}

/* clf_gemm: a (M x K, or K x M with trans_a), b (K x N, or N x K with
 * trans_b), alpha, beta and an optional C of shape [N], [M, 1], [1, N],
 * [M, N], [] or a constant; an existing 2-D node may serve as a or b. The
 * recipe: flag = trans_a, keepdims = trans_b, lo = alpha, hi = beta. */
static bool pick_gemm(fz_gen *G, fz_node *n)
{
    static const int ranks[] = {2, 2};
    static const double alphas[] = {1, 1, 0.5, -2, 0, 1.5}, betas[] = {1, 1, 0, -1, 0.25, 2};
    bool ta = fz_chance(&G->r, 0.5), tb = fz_chance(&G->r, 0.5);
    int x = fz_chance(&G->r, 0.6) ? pick_node(G, contraction_operand, ranks) : -1;
    bool x_is_a = fz_chance(&G->r, 0.5);
    int64_t m = contraction_extent(&G->r), nn = contraction_extent(&G->r), k = contraction_extent(&G->r);
    if (x >= 0) {
        const int64_t *s = G->G->node[x].oshape;
        if (x_is_a) {
            m = s[ta ? 1 : 0];
            k = s[ta ? 0 : 1];
        } else {
            k = s[tb ? 1 : 0];
            nn = s[tb ? 0 : 1];
        }
    }
    int64_t sa[2] = {ta ? k : m, ta ? m : k}, sb[2] = {tb ? nn : k, tb ? k : nn};
    int a = x >= 0 && x_is_a ? x : contraction_input(G, 2, sa, false);
    if (a < 0)
        return false;
    int b = x >= 0 && !x_is_a ? x : contraction_input(G, 2, sb, G->G->node[a].facts.mag > 16 || G->G->node[a].facts.special);
    if (b < 0)
        return false;
    const fz_facts fa = G->G->node[a].facts, fb = G->G->node[b].facts;
    if (!contraction_bounded(&fa, &fb, k))
        return false;
    n->nin = 2;
    n->in[0] = a;
    n->in[1] = b;
    n->flag = ta;
    n->keepdims = tb;
    n->lo = alphas[fz_below(&G->r, 6)];
    n->hi = betas[fz_below(&G->r, 6)];
    n->facts = contraction_facts(&fa, &fb, k, n->lo);
    uint32_t ck = fz_below(&G->r, 8);
    if (ck >= 2) {
        int c;
        if (ck == 7) {
            c = add_scalar(G, CLF_F32);
        } else {
            int64_t shapes[5][2] = {{nn, 0}, {m, 1}, {0, 0}, {1, nn}, {m, nn}};
            static const int cr[5] = {1, 2, 0, 2, 2};
            c = add_input(G, CLF_F32, cr[ck - 2], shapes[ck - 2]);
        }
        if (c < 0)
            return false;
        const fz_facts fc = G->G->node[c].facts;
        n->in[2] = c;
        n->nin = 3;
        n->facts.mag += fabs(n->hi) * fc.mag;
        n->facts.special |= fc.special || fc.mag * fabs(n->hi) > 1e36;
        n->facts.exact = n->facts.exact && fc.exact && (n->hi == 0 || n->hi == 1);
        n->facts.nonneg = n->facts.nonneg && fc.nonneg && n->hi >= 0;
        n->facts.depth = n->facts.depth > fc.depth ? n->facts.depth : fc.depth;
    }
    if (n->facts.mag > BIG) {
        n->facts.mag = BIG;
        n->facts.special = true;
    }
    return true;
}

static clf_tensor build_gemm(clf_graph *g, fz_node *n, const clf_tensor *in, fz_node *const *args)
{
    return clf_gemm(g, in[0], in[1], n->nin > 2 ? in[2] : CLF_TENSOR_INVALID, n->lo, n->hi, n->flag, n->keepdims);
}

/* A float attribute written so that the ONNX text parser reads a float. */
static void onnx_float_attr(FILE *f, double v)
{
    char s[40];
    snprintf(s, sizeof s, "%.9g", v);
    fprintf(f, "%s%s", s, strpbrk(s, ".en") ? "" : ".0");
}

static bool onnx_gemm(FILE *f, const fz_graph *G, int i)
{
    const fz_node *n = &G->node[i];
    fprintf(f, "    v%d = Gemm <alpha = ", i);
    onnx_float_attr(f, n->lo);
    fputs(", beta = ", f);
    onnx_float_attr(f, n->hi);
    fprintf(f, ", transA = %d, transB = %d> (v%d, v%d", n->flag, n->keepdims, n->in[0], n->in[1]);
    if (n->nin > 2)
        fprintf(f, ", v%d", n->in[2]);
    fputs(")\n", f);
    return true;
}

/* ---- Families: gather and concat ------------------------------------------- */

int64_t fz_index_value(fz_rng *r, int64_t d, clf_dtype dt)
{
    if (d > 0 && !fz_chance(r, 0.12))
        return (int64_t)fz_below(r, (uint32_t)(2 * d)) - d;
    bool wide = dt == CLF_I64;
    switch (fz_below(r, 6)) {
    case 0: return d;
    case 1: return -d - 1;
    case 2: return d + 1 + (int64_t)fz_below(r, 1000);
    case 3: return -d - 2 - (int64_t)fz_below(r, 1000);
    case 4: return wide ? INT64_MAX : INT32_MAX;
    default: return wide ? INT64_MIN : INT32_MIN;
    }
}

/* The values of a FZ_FAM_CONST node (at most FZ_MAX_CONST); returns their
 * count. */
static int64_t const_values(const fz_node *n, int64_t *v)
{
    fz_rng r = {n->data_seed};
    int64_t count = numel_of(n->rank, n->shape);
    if (count > FZ_MAX_CONST)
        count = FZ_MAX_CONST; /* never made; the builder then refuses the shape */
    for (int64_t i = 0; i < count; i++)
        v[i] = fz_index_value(&r, n->ival, n->dt);
    return count;
}

static clf_tensor build_const(clf_graph *g, fz_node *n, const clf_tensor *in, fz_node *const *args)
{
    int64_t v[FZ_MAX_CONST];
    int32_t w[FZ_MAX_CONST];
    int64_t count = const_values(n, v);
    for (int64_t i = 0; i < count; i++)
        w[i] = (int32_t)v[i];
    if (numel_of(n->rank, n->shape) > FZ_MAX_CONST)
        return clf_constant(g, n->dt, n->rank, n->shape, NULL);
    return clf_constant(g, n->dt, n->rank, n->shape, n->dt == CLF_I64 ? (const void *)v : (const void *)w);
}

static bool onnx_const(FILE *f, const fz_graph *G, int i)
{
    const fz_node *n = &G->node[i];
    int64_t v[FZ_MAX_CONST];
    int64_t count = const_values(n, v);
    fprintf(f, "    v%d = Constant <value = %s", i, onnx_type(n->dt));
    if (n->rank) {
        fputc('[', f);
        for (int d = 0; d < n->rank; d++)
            fprintf(f, "%s%lld", d ? ", " : "", (long long)n->shape[d]);
        fputc(']', f);
    }
    fputs(" {", f);
    for (int64_t k = 0; k < count; k++)
        fprintf(f, "%s%lld", k ? ", " : "", (long long)v[k]);
    fputs("}> ()\n", f);
    return true;
}

/* A new graph input (constant: a tensor constant) of index dtype dt and
 * this shape, its values indexing an axis of extent d. */
static int add_index_leaf(fz_gen *G, clf_dtype dt, int rank, const int64_t *shape, int64_t d, bool constant)
{
    int x = add_input(G, dt, rank, shape);
    if (x < 0)
        return -1;
    fz_node *n = &G->G->node[x];
    n->profile = FZ_PROF_INDEX;
    n->ival = (int)d;
    n->facts = leaf_facts(dt, FZ_PROF_INDEX);
    if (constant)
        n->family = FZ_FAM_CONST;
    return x;
}

/* Appends an op node made here (not drawn): its operands, result type and
 * facts; returns its index or -1 when the graph is full. */
static int add_op(fz_gen *G, int family, int sub, int nin, const int *in, clf_dtype odt, int orank,
                  const int64_t *oshape, fz_facts facts)
{
    fz_node *p = new_node(G);
    if (!p)
        return -1;
    p->family = (uint8_t)family;
    p->sub = sub;
    p->nin = nin;
    memcpy(p->in, in, sizeof(int) * (size_t)nin);
    p->odt = odt;
    p->orank = orank;
    memcpy(p->oshape, oshape, sizeof(int64_t) * (size_t)orank);
    p->facts = facts;
    return (int)(p - G->G->node);
}

/* A shape for gather indices: rank 0 to maxrank (at most 2), small extents,
 * now and then 0. */
static int index_shape(fz_gen *G, int maxrank, int64_t *shape)
{
    uint32_t k = fz_below(&G->r, 100);
    int rank = k < 30 ? 0 : k < 75 ? 1 : 2;
    if (rank > maxrank)
        rank = maxrank;
    for (int i = 0; i < rank; i++) {
        uint32_t e = fz_below(&G->r, 100);
        shape[i] = e < 5 ? 0 : e < 80 ? 1 + fz_below(&G->r, 4) : 5 + fz_below(&G->r, 5);
    }
    return rank;
}

/* Indices the planner must compute and store before the gather reads them:
 * an index input plus a constant, its negation (d itself then clamps), a
 * cast between i32 and i64, or the argmax of a new f32 input over an axis
 * of extent d. Returns the node or -1 when the graph is full. */
static int computed_indices(fz_gen *G, clf_dtype dt, int rank, const int64_t *shape, int64_t d)
{
    uint32_t k = fz_below(&G->r, 5);
    if (k == 4 && d > 0 && rank < FZ_MAX_RANK) {
        int64_t s[FZ_MAX_RANK];
        memcpy(s, shape, sizeof(int64_t) * (size_t)rank);
        s[rank] = d;
        int x = add_input(G, CLF_F32, rank + 1, s);
        if (x < 0)
            return -1;
        fz_facts f = {.mag = (double)d, .exact = true, .nonneg = true, .reduced = true};
        int p = add_op(G, FZ_FAM_ARG, 0, 1, &x, CLF_I32, rank, shape, f);
        if (p >= 0) {
            G->G->node[p].ival = fz_chance(&G->r, 0.5) ? -1 : rank;
            G->G->node[p].flag = fz_chance(&G->r, 0.3);
        }
        return p;
    }
    fz_facts f = leaf_facts(dt, FZ_PROF_INDEX);
    if (k == 2) {
        clf_dtype from = dt == CLF_I64 ? CLF_I32 : CLF_I64;
        int x = add_index_leaf(G, from, rank, shape, d, false);
        if (x < 0)
            return -1;
        int p = add_op(G, FZ_FAM_CAST, 0, 1, &x, dt, rank, shape, f);
        if (p >= 0)
            G->G->node[p].ival = dt;
        return p;
    }
    int x = add_index_leaf(G, dt, rank, shape, d, false);
    if (x < 0)
        return -1;
    if (k == 3)
        return add_op(G, FZ_FAM_UNARY, CLF_UNARY_NEG, 1, &x, dt, rank, shape, f);
    static const double offsets[] = {1, -1, 2, -3};
    int c = add_scalar(G, dt);
    if (c < 0)
        return -1;
    fz_node *cn = &G->G->node[c];
    cn->lo = offsets[fz_below(&G->r, 4)];
    cn->facts = (fz_facts){.mag = fabs(cn->lo), .exact = true, .nonneg = cn->lo >= 0};
    int in[2] = {x, c};
    if (fz_chance(&G->r, 0.5)) {
        in[0] = c;
        in[1] = x;
    }
    return add_op(G, FZ_FAM_BINARY, CLF_BINARY_ADD, 2, in, dt, rank, shape, f);
}

static bool ranked_node(const fz_node *n, const void *arg) { return n->orank >= 1 && any_node(n, arg); }

static bool index_node(const fz_node *n, const void *arg)
{
    const int *maxrank = arg;
    return (n->odt == CLF_I32 || n->odt == CLF_I64) && n->orank <= *maxrank && any_node(n, arg);
}

/* New indices of dtype idt and this shape into an axis of extent d, as k
 * (0 to 9, the caller's draw) picks: computed from other nodes (7 and
 * up), a tensor constant (5 and 6, where small) or a new input. */
static int new_indices(fz_gen *G, clf_dtype idt, uint32_t k, int rank, const int64_t *shape, int64_t d)
{
    if (k >= 7)
        return computed_indices(G, idt, rank, shape, d);
    return add_index_leaf(G, idt, rank, shape, d, k >= 5 && numel_of(rank, shape) <= FZ_MAX_CONST);
}

/* A gather node n (either family) of data x by indices idx (none: -1,
 * false) along axis, written negative now and then. */
static bool gather_node(fz_gen *G, fz_node *n, int x, int idx, int axis)
{
    if (idx < 0)
        return false;
    const fz_node *a = &G->G->node[x];
    n->nin = 2;
    n->in[0] = x;
    n->in[1] = idx;
    n->ival = fz_chance(&G->r, 0.3) ? axis - a->orank : axis;
    n->facts = a->facts; /* a load at an index: the data's values */
    return true;
}

/* clf_gather: data an existing node of any dtype (rank >= 1), along a
 * random axis (ival, negative at times); indices of rank 0 to 2: a new
 * i64 or i32 input, a tensor constant, indices computed from other nodes,
 * or an existing integer node (an argmax's result, i32 arithmetic). */
static bool pick_gather(fz_gen *G, fz_node *n)
{
    int x = pick_node(G, ranked_node, NULL);
    if (x < 0)
        return false;
    const fz_node *a = &G->G->node[x];
    int r = a->orank;
    int axis = (int)fz_below(&G->r, (uint32_t)r);
    for (int t = 0; t < r && a->oshape[axis] == 0; t++)
        axis = (axis + 1) % r; /* a non-empty axis if there is one */
    int64_t d = a->oshape[axis];
    int maxrank = FZ_MAX_RANK - (r - 1);
    if (maxrank > 2)
        maxrank = 2;
    int64_t ishape[FZ_MAX_RANK];
    int irank = index_shape(G, maxrank, ishape);
    if (d == 0) { /* an empty axis: only empty indices are in range */
        if (maxrank == 0)
            return false;
        if (irank == 0)
            irank = 1;
        ishape[0] = 0;
    }
    clf_dtype idt = fz_chance(&G->r, 0.6) ? CLF_I64 : CLF_I32;
    uint32_t k = fz_below(&G->r, 10);
    int idx = -1;
    if (k == 9) {
        idx = pick_node(G, index_node, &maxrank);
        if (idx >= 0 && d == 0 && node_numel(&G->G->node[idx]) > 0)
            idx = -1;
    }
    if (idx < 0)
        idx = new_indices(G, idt, k, irank, ishape, d);
    return gather_node(G, n, x, idx, axis);
}

static clf_tensor build_gather(clf_graph *g, fz_node *n, const clf_tensor *in, fz_node *const *args)
{
    return clf_gather(g, in[0], in[1], n->ival);
}

static bool onnx_gather(FILE *f, const fz_graph *G, int i)
{
    /* ONNX calls an index outside [-d, d) an error; libclfuse clamps it
     * (and so does the reference behind `clfuse check`). */
    const fz_node *n = &G->node[i];
    fprintf(f, "    v%d = Gather <axis = %d> (v%d, v%d)\n", i, n->ival, n->in[0], n->in[1]);
    return true;
}

/* clf_gather_elements: data an existing node of any dtype (rank >= 1), a
 * random axis (negative at times); indices of the data's rank, no larger
 * off the axis (now and then smaller), 1 to 5 along it (0 where the axis
 * is empty): a new i64 or i32 input, a tensor constant, or computed. */
static bool pick_gather_elements(fz_gen *G, fz_node *n)
{
    int x = pick_node(G, ranked_node, NULL);
    if (x < 0)
        return false;
    const fz_node *a = &G->G->node[x];
    int r = a->orank;
    int axis = (int)fz_below(&G->r, (uint32_t)r);
    int64_t d = a->oshape[axis], ishape[FZ_MAX_RANK];
    for (int i = 0; i < r; i++)
        ishape[i] = i == axis ? (d == 0 ? 0 : 1 + fz_below(&G->r, 5))
                    : fz_chance(&G->r, 0.2) && a->oshape[i] > 1 ? 1 + fz_below(&G->r, (uint32_t)a->oshape[i] - 1)
                                                                 : a->oshape[i];
    clf_dtype idt = fz_chance(&G->r, 0.6) ? CLF_I64 : CLF_I32;
    uint32_t k = fz_below(&G->r, 10);
    return gather_node(G, n, x, new_indices(G, idt, k, r, ishape, d), axis);
}

static clf_tensor build_gather_elements(clf_graph *g, fz_node *n, const clf_tensor *in, fz_node *const *args)
{
    return clf_gather_elements(g, in[0], in[1], n->ival);
}

static bool onnx_gather_elements(FILE *f, const fz_graph *G, int i)
{
    /* As Gather: libclfuse clamps an index ONNX calls an error. */
    const fz_node *n = &G->node[i];
    fprintf(f, "    v%d = GatherElements <axis = %d> (v%d, v%d)\n", i, n->ival, n->in[0], n->in[1]);
    return true;
}

/* What a value built from several operands may hold. */
static void join_facts(fz_facts *o, const fz_facts *b)
{
    o->mag = o->mag > b->mag ? o->mag : b->mag;
    o->special = o->special || b->special;
    o->exact = o->exact && b->exact;
    o->nonneg = o->nonneg && b->nonneg;
    o->depth = o->depth > b->depth ? o->depth : b->depth;
    o->reduced = o->reduced || b->reduced;
    o->kmax = o->kmax > b->kmax ? o->kmax : b->kmax;
}

typedef struct concat_want {
    const fz_node *like;
    int axis;
} concat_want;

static bool concat_partner(const fz_node *n, const void *arg)
{
    const concat_want *w = arg;
    if (n->odt != w->like->odt || n->orank != w->like->orank || !any_node(n, arg))
        return false;
    for (int d = 0; d < n->orank; d++)
        if (d != w->axis && n->oshape[d] != w->like->oshape[d])
            return false;
    return true;
}

/* A pointwise op on node x (a concat operand computed in the kernel that
 * reads it): not for bool, neg or abs for integers, neg, abs or tanh for
 * f32. Returns the node or -1 when the graph is full. */
static int pointwise_on(fz_gen *G, int x)
{
    const fz_node *a = &G->G->node[x];
    fz_facts f = a->facts;
    int op;
    if (a->odt == CLF_BOOL) {
        op = CLF_UNARY_NOT;
    } else {
        static const int ops[] = {CLF_UNARY_NEG, CLF_UNARY_ABS, CLF_UNARY_TANH};
        op = ops[fz_below(&G->r, a->odt == CLF_F32 ? 3 : 2)];
        f.nonneg = op == CLF_UNARY_ABS && a->odt == CLF_F32;
        if (op == CLF_UNARY_TANH) {
            f = inexact(f);
            f.mag = 1;
        }
    }
    return add_op(G, FZ_FAM_UNARY, op, 1, &x, a->odt, a->orank, a->oshape, f);
}

/* clf_concat of 2 to 4 operands along a random axis (ival, negative at
 * times): an existing node of rank >= 1 and partners of its dtype and rank
 * that agree off the axis: existing nodes (itself among them) or new
 * inputs of another extent along it, one of them now and then computed. */
static bool pick_concat(fz_gen *G, fz_node *n)
{
    int x = pick_node(G, ranked_node, NULL);
    if (x < 0)
        return false;
    const fz_node *a = &G->G->node[x];
    int r = a->orank;
    int axis = (int)fz_below(&G->r, (uint32_t)r);
    int m = 2 + (int)fz_below(&G->r, 3);
    int at = (int)fz_below(&G->r, (uint32_t)m);
    int computed = fz_chance(&G->r, 0.3) ? (int)fz_below(&G->r, (uint32_t)m) : -1;
    concat_want w = {a, axis};
    n->nin = m;
    n->facts = a->facts;
    for (int s = 0; s < m; s++) {
        int p = s == at ? x : -1;
        if (p < 0 && s != computed && fz_chance(&G->r, 0.3))
            p = pick_node(G, concat_partner, &w);
        if (p < 0) {
            int64_t shape[FZ_MAX_RANK];
            memcpy(shape, a->oshape, sizeof(int64_t) * (size_t)r);
            uint32_t k = fz_below(&G->r, 10);
            shape[axis] = k == 0 ? 0 : k < 3 ? 1 : k < 5 ? a->oshape[axis] : 2 + (int64_t)fz_below(&G->r, 5);
            p = add_input(G, a->odt, r, shape);
            if (p >= 0 && s == computed)
                p = pointwise_on(G, p);
            if (p < 0)
                return false;
        }
        n->in[s] = p;
        join_facts(&n->facts, &G->G->node[p].facts);
    }
    n->ival = fz_chance(&G->r, 0.3) ? axis - r : axis;
    return true;
}

static clf_tensor build_concat(clf_graph *g, fz_node *n, const clf_tensor *in, fz_node *const *args)
{
    return clf_concat(g, n->nin, in, n->ival);
}

static bool onnx_concat(FILE *f, const fz_graph *G, int i)
{
    const fz_node *n = &G->node[i];
    fprintf(f, "    v%d = Concat <axis = %d> (", i, n->ival);
    for (int k = 0; k < n->nin; k++)
        fprintf(f, "%sv%d", k ? ", " : "", n->in[k]);
    fputs(")\n", f);
    return true;
}

/* ---- Cache write ------------------------------------------------------------ */

/* A KV cache written in place (clf_cache_write): a new input, the cache, of
 * x's shape but up to 3 positions more along axis, and x written at
 * [len - S, len) with len - S drawn in 0..capacity - S (v[0][0]). The
 * planner's rules hold by construction: nothing else reads the cache
 * (pick_node passes it over), it is no output, and the write is one
 * (fz_generate sees to both after drawing the outputs). */
static bool writable(const fz_node *n, const void *arg) { return n->orank >= 1 && bits_node(n, arg); }

static bool pick_cache_write(fz_gen *G, fz_node *n)
{
    int x = pick_node(G, writable, NULL);
    if (x < 0)
        return false;
    const fz_node *a = &G->G->node[x];
    int axis = (int)fz_below(&G->r, (uint32_t)a->orank);
    int64_t shape[FZ_MAX_RANK], extra = fz_below(&G->r, 4);
    memcpy(shape, a->oshape, sizeof shape);
    shape[axis] += extra;
    int c = add_input(G, a->odt, a->orank, shape);
    if (c < 0)
        return false;
    G->G->node[c].cache = true;
    n->nin = 2;
    n->in[0] = c;
    n->in[1] = x;
    n->ival = axis;
    n->v[0][0] = fz_below(&G->r, (uint32_t)extra + 1);
    n->facts = G->G->node[c].facts;
    join_facts(&n->facts, &a->facts);
    return true;
}

static clf_tensor build_cache_write(clf_graph *g, fz_node *n, const clf_tensor *in, fz_node *const *args)
{
    int axis = n->ival < args[1]->orank ? n->ival : 0;
    n->nrealaxes = 1;
    n->realaxes[0] = axis;
    n->nreal = 1;
    n->real[0][0] = args[1]->oshape[axis] + n->v[0][0]; /* len */
    return clf_cache_write(g, in[0], in[1], axis, n->real[0][0]);
}

/* As ONNX: Concat(cache[:len - S], x, cache[len:]) along axis. */
static bool onnx_cache_write(FILE *f, const fz_graph *G, int i)
{
    const fz_node *n = &G->node[i];
    const fz_node *x = &G->node[n->in[1]];
    int64_t len = n->real[0][0], start = len - x->oshape[n->realaxes[0]], zero = 0, big = INT64_MAX,
            axis = n->realaxes[0];
    onnx_ints(f, i, "zero", 1, &zero);
    onnx_ints(f, i, "start", 1, &start);
    onnx_ints(f, i, "len", 1, &len);
    onnx_ints(f, i, "end", 1, &big);
    onnx_ints(f, i, "axis", 1, &axis);
    fprintf(f, "    v%d_head = Slice(v%d, v%d_zero, v%d_start, v%d_axis)\n", i, n->in[0], i, i, i);
    fprintf(f, "    v%d_tail = Slice(v%d, v%d_len, v%d_end, v%d_axis)\n", i, n->in[0], i, i, i);
    fprintf(f, "    v%d = Concat <axis = %d> (v%d_head, v%d, v%d_tail)\n", i, n->realaxes[0], i, n->in[1], i);
    return true;
}

/* ---- The table ------------------------------------------------------------- */

static bool pick_none(fz_gen *G, fz_node *n) { return false; }

static bool onnx_input(FILE *f, const fz_graph *G, int i) { return true; }

const fz_family fz_families[FZ_FAM_COUNT] = {
    /* Inputs are built by fz_build itself (they need their names). */
    [FZ_FAM_INPUT] = {"input", 0, FZ_TOL_EXACT, pick_none, NULL, onnx_input},
    [FZ_FAM_SCALAR] = {"scalar", 0, FZ_TOL_EXACT, pick_none, build_scalar, onnx_scalar},
    [FZ_FAM_CONST] = {"constant", 0, FZ_TOL_EXACT, pick_none, build_const, onnx_const},
    [FZ_FAM_UNARY] = {"unary", 14, FZ_TOL_POINTWISE, pick_unary, build_unary, onnx_unary},
    [FZ_FAM_BINARY] = {"binary", 16, FZ_TOL_POINTWISE, pick_binary, build_binary, onnx_binary},
    [FZ_FAM_WHERE] = {"where", 3, FZ_TOL_EXACT, pick_where, build_where, onnx_where},
    [FZ_FAM_CLIP] = {"clip", 3, FZ_TOL_EXACT, pick_clip, build_clip, onnx_clip},
    [FZ_FAM_CAST] = {"cast", 4, FZ_TOL_EXACT, pick_cast, build_cast, onnx_cast},
    [FZ_FAM_RESHAPE] = {"reshape", 5, FZ_TOL_EXACT, pick_reshape, build_reshape, onnx_reshape},
    [FZ_FAM_TRANSPOSE] = {"transpose", 5, FZ_TOL_EXACT, pick_transpose, build_transpose, onnx_transpose},
    [FZ_FAM_EXPAND] = {"expand", 4, FZ_TOL_EXACT, pick_expand, build_expand, onnx_reshape},
    [FZ_FAM_SLICE] = {"slice", 5, FZ_TOL_EXACT, pick_slice, build_slice, onnx_slice},
    [FZ_FAM_SQUEEZE] = {"squeeze", 2, FZ_TOL_EXACT, pick_squeeze, build_squeeze, onnx_squeeze},
    [FZ_FAM_UNSQUEEZE] = {"unsqueeze", 3, FZ_TOL_EXACT, pick_unsqueeze, build_unsqueeze, onnx_squeeze},
    [FZ_FAM_REDUCE] = {"reduce", 9, FZ_TOL_REDUCTION, pick_reduce, build_reduce, onnx_reduce},
    [FZ_FAM_ARG] = {"arg", 3, FZ_TOL_EXACT, pick_arg, build_arg, onnx_arg},
    [FZ_FAM_VAR] = {"var", 2, FZ_TOL_REDUCTION, pick_var, build_var, onnx_var},
    [FZ_FAM_SOFTMAX] = {"softmax", 4, FZ_TOL_REDUCTION, pick_softmax, build_softmax, onnx_softmax},
    [FZ_FAM_LAYER_NORM] = {"layer_norm", 3, FZ_TOL_REDUCTION, pick_layer_norm, build_layer_norm, onnx_norm},
    [FZ_FAM_RMS_NORM] = {"rms_norm", 2, FZ_TOL_REDUCTION, pick_rms_norm, build_rms_norm, onnx_norm},
    [FZ_FAM_MATMUL] = {"matmul", 4, FZ_TOL_CONTRACTION, pick_matmul, build_matmul, onnx_matmul},
    [FZ_FAM_GEMM] = {"gemm", 3, FZ_TOL_CONTRACTION, pick_gemm, build_gemm, onnx_gemm},
    [FZ_FAM_GATHER] = {"gather", 4, FZ_TOL_EXACT, pick_gather, build_gather, onnx_gather},
    [FZ_FAM_GATHER_ELEMENTS] = {"gather_elements", 3, FZ_TOL_EXACT, pick_gather_elements, build_gather_elements,
                                onnx_gather_elements},
    [FZ_FAM_CONCAT] = {"concat", 4, FZ_TOL_EXACT, pick_concat, build_concat, onnx_concat},
    [FZ_FAM_CACHE_WRITE] = {"cache_write", 2, FZ_TOL_EXACT, pick_cache_write, build_cache_write, onnx_cache_write},
};
_Static_assert(FZ_FAM_COUNT == 26, "one fz_families entry per family");

int fz_family_by_name(const char *name)
{
    for (int f = 0; f < FZ_FAM_COUNT; f++)
        if (strcmp(fz_families[f].name, name) == 0)
            return f;
    return -1;
}

/* ---- Building ------------------------------------------------------------- */

bool fz_build(fz_graph *G, fz_built *b, char *msg, size_t cap)
{
    memset(b, 0, sizeof *b);
    b->g = clf_graph_create();
    if (!b->g) {
        snprintf(msg, cap, "out of memory");
        return false;
    }
    for (int i = 0; i < G->n; i++) {
        fz_node *n = &G->node[i];
        clf_tensor t;
        if (n->family == FZ_FAM_INPUT) {
            char name[16];
            snprintf(name, sizeof name, "x%d", i);
            t = clf_input(b->g, name, n->dt, n->rank, n->shape);
        } else {
            clf_tensor in[FZ_MAX_IN];
            fz_node *args[FZ_MAX_IN];
            for (int k = 0; k < n->nin; k++) {
                in[k] = b->t[n->in[k]];
                args[k] = &G->node[n->in[k]];
            }
            t = fz_families[n->family].build(b->g, n, in, args);
        }
        b->t[i] = t;
        if (clf_graph_status(b->g, NULL) != CLF_OK)
            break;
        clf_tensor_dtype(b->g, t, &n->odt);
        clf_tensor_shape(b->g, t, &n->orank, n->oshape);
    }
    for (int i = 0; i < G->n && clf_graph_status(b->g, NULL) == CLF_OK; i++) {
        if (!G->node[i].output)
            continue;
        char name[16];
        snprintf(name, sizeof name, "v%d", i);
        clf_graph_output(b->g, name, b->t[i]);
    }
    const char *m = "";
    if (clf_graph_status(b->g, &m) != CLF_OK) {
        snprintf(msg, cap, "%s", m);
        return false;
    }
    return true;
}

/* ---- Generation -------------------------------------------------------------- */

static int pick_family(fz_rng *r)
{
    int total = 0;
    for (int f = 0; f < FZ_FAM_COUNT; f++)
        total += fz_families[f].weight;
    int k = (int)fz_below(r, (uint32_t)total);
    for (int f = 0; f < FZ_FAM_COUNT; f++) {
        if (k < fz_families[f].weight)
            return f;
        k -= fz_families[f].weight;
    }
    return FZ_FAM_UNARY;
}

void fz_generate(uint64_t seed, uint64_t index, int force, fz_graph *out)
{
    fz_gen G = {.r = {seed * 0x100000001B3ull ^ (index + 1) * 0x9E3779B97F4A7C15ull}, .G = out};
    memset(out, 0, sizeof *out);
    fz_next(&G.r);

    /* One to three inputs sharing a base shape, broadcast variants of it. */
    int64_t base[FZ_MAX_RANK];
    int rank = random_rank(&G.r);
    for (int i = 0; i < rank; i++)
        base[i] = random_extent(&G.r);
    cap_shape(rank, base);
    int ninputs = 1 + (int)fz_below(&G.r, 3);
    for (int k = 0; k < ninputs; k++) {
        static const clf_dtype dts[] = {CLF_F32, CLF_F32, CLF_F32, CLF_F32, CLF_F32, CLF_F32, CLF_F32,
                                        CLF_F32, CLF_I32, CLF_I32, CLF_BOOL, CLF_BOOL, CLF_I64, CLF_I64};
        clf_dtype dt = k == 0 ? CLF_F32 : dts[fz_below(&G.r, sizeof dts / sizeof dts[0])];
        int64_t shape[FZ_MAX_RANK];
        int r = rank;
        memcpy(shape, base, sizeof base);
        if (k > 0) {
            fz_node like = {.orank = rank};
            memcpy(like.oshape, base, sizeof base);
            r = broadcast_partner(&G, &like, shape);
        }
        add_input(&G, dt, r, shape);
    }

    int nops = 1 + (int)fz_below(&G.r, 7);
    for (int op = 0, tries = 0; op < nops && tries < 64 && out->n < FZ_MAX_NODES - 4; tries++) {
        int before = out->n;
        fz_node n;
        memset(&n, 0, sizeof n);
        n.family = (uint8_t)pick_family(&G.r);
        if (op == 0 && force >= 0 && force < FZ_FAM_COUNT && tries < 48)
            n.family = (uint8_t)force;
        if (!fz_families[n.family].pick(&G, &n)) {
            out->n = before;
            continue;
        }
        out->node[out->n++] = n;
        fz_built b;
        char msg[256];
        bool ok = fz_build(out, &b, msg, sizeof msg);
        clf_graph_destroy(&b.g);
        if (!ok || node_numel(&out->node[out->n - 1]) > FZ_MAX_NUMEL) {
            out->n = before;
            continue;
        }
        op++;
    }

    /* Outputs: every node nothing reads, and some intermediates. */
    bool read[FZ_MAX_NODES] = {false};
    for (int i = 0; i < out->n; i++)
        for (int k = 0; k < out->node[i].nin; k++)
            read[out->node[i].in[k]] = true;
    for (int i = 0; i < out->n; i++) {
        fz_node *n = &out->node[i];
        bool leaf = n->family == FZ_FAM_INPUT || n->family == FZ_FAM_SCALAR || n->family == FZ_FAM_CONST;
        n->output = !leaf ? !read[i] || fz_chance(&G.r, 0.2) : fz_chance(&G.r, 0.02);
        /* The rules of clf_cache_write: the write is an output, its cache not. */
        if (n->family == FZ_FAM_CACHE_WRITE)
            n->output = true;
        if (n->cache)
            n->output = false;
    }
    bool any = false;
    for (int i = 0; i < out->n; i++)
        any |= out->node[i].output;
    if (!any)
        out->node[out->n - 1].output = true;
}

int fz_live_count(const fz_graph *G)
{
    bool live[FZ_MAX_NODES] = {false};
    int count = 0;
    for (int i = G->n - 1; i >= 0; i--) {
        if (G->node[i].output)
            live[i] = true;
        if (!live[i])
            continue;
        count++;
        for (int k = 0; k < G->node[i].nin; k++)
            live[G->node[i].in[k]] = true;
    }
    return count;
}

/* ---- Printing ------------------------------------------------------------- */

static void print_shape(FILE *f, int rank, const int64_t *shape)
{
    fputc('[', f);
    for (int i = 0; i < rank; i++)
        fprintf(f, "%s%lld", i ? ", " : "", (long long)shape[i]);
    fputc(']', f);
}

static const char *const profile_names[FZ_PROF_COUNT] = {"normal", "positive", "integers", "special",
                                                         "large",  "tiny",     "index"};

void fz_print_listing(FILE *f, const fz_graph *G)
{
    for (int i = 0; i < G->n; i++) {
        const fz_node *n = &G->node[i];
        fprintf(f, "  v%-2d %-4s ", i, clf_dtype_name(n->odt));
        print_shape(f, n->orank, n->oshape);
        fputs(" = ", f);
        switch (n->family) {
        case FZ_FAM_INPUT:
            fprintf(f, "input (%s values", profile_names[n->profile]);
            if (n->profile == FZ_PROF_INDEX)
                fprintf(f, " into %d", n->ival);
            fputs(")", f);
            break;
        case FZ_FAM_CONST: {
            int64_t v[FZ_MAX_CONST];
            int64_t count = const_values(n, v);
            fputs("constant {", f);
            for (int64_t k = 0; k < count; k++)
                fprintf(f, "%s%lld", k ? ", " : "", (long long)v[k]);
            fprintf(f, "} (index values into %d)", n->ival);
            break;
        }
        case FZ_FAM_SCALAR: fprintf(f, "scalar %.9g", n->lo); break;
        case FZ_FAM_UNARY: fprintf(f, "%s", unary_names[n->sub]); break;
        case FZ_FAM_BINARY: fprintf(f, "%s", binary_names[n->sub]); break;
        case FZ_FAM_REDUCE: fprintf(f, "reduce_%s", reduce_names[n->sub]); break;
        case FZ_FAM_ARG: fprintf(f, "%s", n->sub ? "argmin" : "argmax"); break;
        case FZ_FAM_SOFTMAX: fprintf(f, "%s", n->sub ? "log_softmax" : "softmax"); break;
        default: fprintf(f, "%s", fz_families[n->family].name); break;
        }
        if (n->nin) {
            fputs("(", f);
            for (int k = 0; k < n->nin; k++)
                fprintf(f, "%sv%d", k ? ", " : "", n->in[k]);
            fputs(")", f);
        }
        switch (n->family) {
        case FZ_FAM_CLIP: fprintf(f, " lo %g hi %g", n->lo, n->hi); break;
        case FZ_FAM_CAST: fprintf(f, " to %s", clf_dtype_name((clf_dtype)n->ival)); break;
        case FZ_FAM_RESHAPE:
        case FZ_FAM_EXPAND:
            fputs(" shape ", f);
            print_shape(f, n->nreal, n->real[0]);
            break;
        case FZ_FAM_SLICE:
            for (int k = 0; k < n->naxes; k++)
                fprintf(f, " axis %d [%lld:%lld:%lld]", n->realaxes[k], (long long)n->v[0][k], (long long)n->v[1][k],
                        (long long)n->v[2][k]);
            break;
        case FZ_FAM_TRANSPOSE:
        case FZ_FAM_SQUEEZE:
        case FZ_FAM_UNSQUEEZE:
        case FZ_FAM_REDUCE:
        case FZ_FAM_VAR: {
            int na = n->family == FZ_FAM_TRANSPOSE && n->flag ? 0 : n->naxes;
            fputs(n->family == FZ_FAM_TRANSPOSE ? " perm [" : " axes [", f);
            for (int k = 0; k < na; k++)
                fprintf(f, "%s%d", k ? ", " : "", n->axes[k]);
            fputs("]", f);
            if (n->family == FZ_FAM_REDUCE || n->family == FZ_FAM_VAR)
                fprintf(f, " keepdims %d", n->keepdims);
            if (n->family == FZ_FAM_VAR)
                fprintf(f, " correction %d", n->ival);
            break;
        }
        case FZ_FAM_ARG:
            fprintf(f, " axis %d keepdims %d select_last %d", n->ival, n->keepdims, n->flag);
            break;
        case FZ_FAM_SOFTMAX:
        case FZ_FAM_GATHER:
        case FZ_FAM_GATHER_ELEMENTS:
        case FZ_FAM_CONCAT: fprintf(f, " axis %d", n->ival); break;
        case FZ_FAM_CACHE_WRITE: fprintf(f, " axis %d len %lld", n->realaxes[0], (long long)n->real[0][0]); break;
        case FZ_FAM_GEMM:
            fprintf(f, " alpha %g beta %g trans_a %d trans_b %d", n->lo, n->hi, n->flag, n->keepdims);
            break;
        case FZ_FAM_LAYER_NORM:
        case FZ_FAM_RMS_NORM: fprintf(f, " axis %d epsilon %g", n->ival, n->lo); break;
        default: break;
        }
        if (n->output)
            fputs("  -> output", f);
        fputc('\n', f);
    }
}

static void onnx_value_type(FILE *f, const fz_node *n)
{
    fprintf(f, "%s", onnx_type(n->odt));
    print_shape(f, n->orank, n->oshape);
}

void fz_print_onnx(FILE *f, const fz_graph *G)
{
    fputs("<ir_version: 8, opset_import: [\"\" : 18]>\nfuzz (", f);
    bool first = true;
    for (int i = 0; i < G->n; i++) {
        const fz_node *n = &G->node[i];
        if (n->family != FZ_FAM_INPUT)
            continue;
        fprintf(f, "%s", first ? "" : ", ");
        onnx_value_type(f, n);
        fprintf(f, " v%d", i);
        first = false;
    }
    fputs(") => (", f);
    first = true;
    for (int i = 0; i < G->n; i++) {
        const fz_node *n = &G->node[i];
        if (!n->output)
            continue;
        fprintf(f, "%s", first ? "" : ", ");
        onnx_value_type(f, n);
        fprintf(f, " o%d", i);
        first = false;
    }
    fputs(")\n{\n    one_f = Constant <value_float = 1.0> ()\n", f);
    for (int i = 0; i < G->n; i++) {
        const fz_node *n = &G->node[i];
        if (n->family == FZ_FAM_SCALAR) {
            if (n->dt == CLF_F32) {
                fprintf(f, "    v%d = Constant <value_float = ", i);
                onnx_double(f, (float)n->lo);
                fputs("> ()\n", f);
            } else {
                fprintf(f, "    v%d_i = Constant <value_int = %d> ()\n", i, (int)n->lo);
                fprintf(f, "    v%d = Cast <to = %d> (v%d_i)\n", i, onnx_elem(n->dt), i);
            }
        } else if (n->family != FZ_FAM_INPUT && !fz_families[n->family].onnx(f, G, i)) {
            fprintf(f, "    # v%d (%s) has no ONNX form here\n", i, fz_families[n->family].name);
        }
        if (n->output)
            fprintf(f, "    o%d = Identity(v%d)\n", i, i);
    }
    fputs("}\n", f);
}
