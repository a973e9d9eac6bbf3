/* Expressions of generated kernels (see codegen_expr.h): op formats by
 * dtype, exact literals, memoised values, load slots, kernel names. */
#include "codegen/codegen_expr.h"
#include "codegen/codegen.h"
#include "codegen/templates.h"
#include "util/alloc.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef clf__cg_fn gen;

const char *clf__cg_ctype(clf_dtype dt) { return clf__dtype_info_of(dt)->cl_value; }

const char *clf__cg_storage_type(clf_dtype dt) { return clf__dtype_info_of(dt)->cl_storage; }

/* Appends a dtype table spelling with $b, $i, $v and $w replaced. */
static void spell(clf__strbuf *sb, const char *fmt, const char *b, const char *i, const char *v, int w)
{
    for (const char *p = fmt; *p; p++) {
        if (p[0] != '$' || !p[1]) {
            clf__sb_putn(sb, p, 1);
            continue;
        }
        switch (*++p) {
        case 'b': clf__sb_puts(sb, b); break;
        case 'i': clf__sb_printf(sb, "%s", i); break;
        case 'v': clf__sb_puts(sb, v ? v : "0"); break;
        case 'w': clf__sb_printf(sb, "%d", w); break;
        default: clf__sb_putn(sb, p - 1, 2); break;
        }
    }
}

const char *clf__cg_buffer_ref(const clf__plan *plan, uint32_t buffer, char *out, size_t cap)
{
    if (clf__plan_buffer_in_scratch(&plan->buffers[buffer]))
        snprintf(out, cap, "(b%u + o_%u)", buffer, buffer);
    else
        snprintf(out, cap, "b%u", buffer);
    return out;
}

const char *clf__cg_load_expr(const clf__plan *plan, clf_dtype dt, uint32_t buffer, const char *index, char *out,
                              size_t cap)
{
    char b[40];
    clf__cg_buffer_ref(plan, buffer, b, sizeof b);
    clf__strbuf sb = {0};
    spell(&sb, clf__dtype_info_of(dt)->load, b, index, NULL, 1);
    snprintf(out, cap, "%s", clf__sb_ok(&sb) ? clf__sb_str(&sb) : "0");
    clf__sb_free(&sb);
    return out;
}

void clf__cg_load_vec(const clf__plan *plan, clf__strbuf *sb, clf_dtype dt, uint32_t buffer, const char *index,
                      int width, bool aligned)
{
    char b[40];
    clf__cg_buffer_ref(plan, buffer, b, sizeof b);
    const clf__dtype_info *d = clf__dtype_info_of(dt);
    spell(sb, aligned ? d->load_vec_aligned : d->load_vec, b, index, NULL, width);
}

void clf__cg_store(const clf__plan *plan, clf__strbuf *sb, clf_dtype dt, uint32_t buffer, const char *index,
                   const char *value)
{
    char b[40];
    clf__cg_buffer_ref(plan, buffer, b, sizeof b);
    clf__sb_puts(sb, "    ");
    spell(sb, clf__dtype_info_of(dt)->store, b, index, value, 1);
    clf__sb_puts(sb, ";\n");
}

void clf__cg_store_vec(const clf__plan *plan, clf__strbuf *sb, clf_dtype dt, uint32_t buffer, const char *index,
                       const char *value, int width, bool aligned)
{
    char b[40];
    clf__cg_buffer_ref(plan, buffer, b, sizeof b);
    const clf__dtype_info *d = clf__dtype_info_of(dt);
    clf__sb_puts(sb, "    ");
    spell(sb, aligned ? d->store_vec_aligned : d->store_vec, b, index, value, width);
    clf__sb_puts(sb, ";\n");
}

void clf__cg_store_float_vec(const clf__plan *plan, clf__strbuf *sb, clf_dtype dt, uint32_t buffer, const char *index,
                             const char *value, int width)
{
    clf__strbuf v = {0};
    clf__sb_printf(&v, "(float%d)(%s)", width, value);
    clf__cg_store_vec(plan, sb, dt, buffer, index, clf__sb_ok(&v) ? clf__sb_str(&v) : "0", width, false);
    if (!clf__sb_ok(&v))
        sb->failed = true; /* (sticky, as an append's failure) */
    clf__sb_free(&v);
}

void clf__cg_round_vec(clf__strbuf *sb, clf_dtype dt, const char *value, int width)
{
    const char *fn = clf__dtype_info_of(dt)->round_fn;
    if (!fn)
        clf__sb_puts(sb, value);
    else if (width > 1)
        clf__sb_printf(sb, "%s_%d(%s)", fn, width, value);
    else
        clf__sb_printf(sb, "%s(%s)", fn, value);
}

void clf__cg_round(clf__strbuf *sb, clf_dtype dt, const char *value) { clf__cg_round_vec(sb, dt, value, 1); }

void clf__cg_fn_init(clf__cg_fn *f, const clf_graph *g, const clf__plan *plan, uint32_t k,
                     const clf__cg_hooks *hooks)
{
    memset(f, 0, sizeof *f);
    f->g = g;
    f->plan = plan;
    f->k = k;
    f->hooks = *hooks;
    f->forward_node = UINT32_MAX;
    clf__ixgen_init(&f->own_ix, &f->idx_code, 0);
    f->ix = &f->own_ix;
}

void clf__cg_fn_free(clf__cg_fn *f)
{
    for (size_t i = 0; i < f->nmemo; i++) {
        clf__free(f->memo[i].key);
        clf__free(f->memo[i].value);
    }
    clf__free(f->memo);
    clf__free(f->slots);
    clf__ixgen_free(&f->own_ix);
    clf__sb_free(&f->idx_code);
    clf__sb_free(&f->body);
    memset(f, 0, sizeof *f);
}

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
        clf__cg_memo *p = clf__realloc(G->memo, cap * sizeof *p);
        if (!p) {
            G->failed = true;
            return "0";
        }
        G->memo = p;
        G->cap_memo = cap;
    }
    clf__cg_memo e = {clf__strdup(key), clf__strdup(value)};
    if (!e.key || !e.value) {
        clf__free(e.key);
        clf__free(e.value);
        G->failed = true;
        return "0";
    }
    G->memo[G->nmemo++] = e;
    return e.value;
}

/* The literal for a scalar value of a dtype, exact for f32. */
void clf__cg_literal(clf__strbuf *sb, clf_dtype dt, double v)
{
    if (clf__dtype_is_float(dt)) {
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
    } else if (dt == CLF_I64) {
        clf__cg_literal_i64(sb, (int64_t)v);
    } else {
        clf__sb_printf(sb, "((uchar)%d)", v != 0);
    }
}

void clf__cg_literal_i64(clf__strbuf *sb, int64_t v)
{
    if (v == INT64_MIN)
        clf__sb_puts(sb, "(-9223372036854775807L - 1)");
    else
        clf__sb_printf(sb, "(%lldL)", (long long)v);
}

/* The literal of a one-element constant, exact for every dtype. */
static void constant_literal(clf__strbuf *sb, const clf__node *n)
{
    const clf__dtype_info *d = clf__dtype_info_of(n->dtype);
    if (d->kind == CLF__DK_FLOAT)
        clf__cg_literal(sb, n->dtype, d->get_f64(n->data, 0));
    else if (d->kind == CLF__DK_INT && d->size == 8)
        clf__cg_literal_i64(sb, d->get_i64(n->data, 0));
    else
        clf__cg_literal(sb, n->dtype, (double)d->get_i64(n->data, 0));
}

/* printf format of a cast over $1. Any non-zero bool byte is true: a cast
 * from bool gives 0 or 1 (bool to bool as well), never the byte. */
static const char *cast_format(clf_dtype from_dt, clf_dtype to_dt)
{
    /* The storage floats are floats in registers: the cast is the one
     * between their compute types, then the result's rounding (compute). */
    clf_dtype from = clf__dtype_compute(from_dt), to = clf__dtype_compute(to_dt);
    static const char *const from_bool[CLF_DTYPE_COUNT] = {
        [CLF_F32] = "(float)($1 != 0)", [CLF_I32] = "(int)($1 != 0)", [CLF_I64] = "(long)($1 != 0)"};
    if (to == CLF_BOOL)
        return from == CLF_F32 ? "(uchar)($1 != 0.0f)" : "(uchar)($1 != 0)";
    if (from == to)
        return "$1";
    if (from == CLF_BOOL)
        return from_bool[to];
    /* f32 to an integer: NaN is 0 by the test, not by trusting the driver's
     * convert_*_sat (Mesa's gives INT_MIN for NaN). */
    if (from == CLF_F32)
        return to == CLF_I32 ? "(isnan($1) ? 0 : convert_int_sat_rtz($1))"
                             : "(isnan($1) ? 0L : convert_long_sat_rtz($1))";
    /* Between integers: wrap, as C casts do in OpenCL C. i32 to i64 is
     * sign-extended by hand: Mesa 22.3's compiler (rusticl) folds a
     * comparison of `(long)i` with a constant wrongly (`(long)-3 < 0L` is
     * false there), and LLVM makes the same instruction of either. */
    if (to == CLF_I32)
        return "(int)$1";
    if (to == CLF_I64)
        return from == CLF_I32 ? "upsample(($1) >> 31, as_uint($1))" : "(long)$1";
    return "(float)$1";
}

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

long clf__cg_slot_find(clf__cg_slot **slots, size_t *nslots, size_t *cap, uint32_t buffer, clf__ix index,
                       clf_dtype dt)
{
    for (size_t s = 0; s < *nslots; s++)
        if ((*slots)[s].buffer == buffer && clf__ix_same(&(*slots)[s].index, &index))
            return (long)s;
    if (*nslots == *cap) {
        size_t c = *cap ? *cap * 2 : 16;
        clf__cg_slot *p = clf__realloc(*slots, c * sizeof *p);
        if (!p)
            return -1;
        *slots = p;
        *cap = c;
    }
    (*slots)[*nslots] = (clf__cg_slot){buffer, index, dt};
    return (long)(*nslots)++;
}

const char *clf__cg_load_slot(clf__cg_fn *G, uint32_t buffer, clf__ix index, clf_dtype dt, char *name,
                              size_t cap)
{
    long s = clf__cg_slot_find(&G->slots, &G->nslots, &G->cap_slots, buffer, index, dt);
    if (s < 0) {
        G->failed = true;
        snprintf(name, cap, "0");
    } else {
        snprintf(name, cap, "l%ld", s);
    }
    return name;
}

/* Pow's exponent where it is a literal 2, 3 or 4 (a one-element constant,
 * through movement ops: as exporters write GELU's tanh form's cube and the
 * norms' squares), else 0. Only a literal: the kernel memo keys on a
 * literal's value, not on a loaded constant's bytes (kernel_memo.c). PoCL's
 * pow took 0.3 ms for the tiny GPT-2's 4,096 GELUs (x * x * x: 0.01); the
 * products differ from pow's correctly rounded result by an ulp or two, and
 * agree on signed zeros, infinities and NaN. */
static int small_exponent(const clf_graph *g, const clf__node *n)
{
    const clf__node *e = clf__graph_node(g, n->inputs[1]);
    while (clf__node_class_of(e) == CLF__CLASS_MOVEMENT)
        e = clf__graph_node(g, e->inputs[0]);
    if (!clf__plan_is_literal(e) || !e->data || e->dtype == CLF_BOOL)
        return 0;
    const double v = clf__dtype_table[e->dtype].get_f64(e->data, 0);
    return v == 2 || v == 3 || v == 4 ? (int)v : 0;
}

/* Emits the statement computing node n from its input values; returns the
 * temporary's name. */
static const char *compute(gen *G, const clf__node *n, const char *const *args, const char *key)
{
    char name[32];
    snprintf(name, sizeof name, "v%d", G->ntemps++);
    char ty[16];
    clf__strbuf *b = &G->body;
    const clf__node *in0 = clf__graph_node(G->g, n->inputs[0]);
    if (G->vec > 1) {
        /* Vector values are floats (f32, and the storage floats computed in
         * it); scalar operands (literals, row results, loads that do not
         * move with the element) widen. */
        bool f32 = clf__dtype_compute(n->dtype) == CLF_F32;
        for (int i = 0; i < n->ninputs; i++)
            f32 = f32 && clf__dtype_compute(clf__graph_node(G->g, n->inputs[i])->dtype) == CLF_F32;
        if (!f32)
            G->novec = true;
        snprintf(ty, sizeof ty, "float%d", G->vec);
    } else {
        snprintf(ty, sizeof ty, "%s", clf__cg_ctype(n->dtype));
    }
    clf__sb_printf(b, "    const %s %s = ", ty, name);
    /* A storage float's value is rounded to it (dtype_table.h): the
     * expression goes inside its rounding. */
    const char *rnd = G->no_round ? NULL : clf__dtype_info_of(n->dtype)->round_fn;
    if (rnd && G->vec > 1)
        clf__sb_printf(b, "%s_%d(", rnd, G->vec);
    else if (rnd)
        clf__sb_printf(b, "%s(", rnd);
    const char *rnd_tail = rnd ? ")" : "";
    const clf__op_info *info = clf__op_info_of(n->op);
    if (info->cls == CLF__CLASS_POINTWISE && info->rule != CLF__DT_OWN) {
        /* An op of the table: its expression for the operands' dtype. */
        const char *f = info->cl[clf__dtype_compute(in0->dtype)];
        char vf[64];
        const int power = n->op == CLF__OP_POW ? small_exponent(G->g, n) : 0;
        if (power) {
            static const char *const products[5] = {NULL, NULL, "($1 * $1)", "($1 * $1 * $1)",
                                                    "(($1 * $1) * ($1 * $1))"};
            f = products[power];
        } else if (G->vec > 1 && n->op == CLF__OP_POW) { /* pow has no (vector, scalar) overload */
            snprintf(vf, sizeof vf, "pow((float%d)($1), (float%d)($2))", G->vec, G->vec);
            f = vf;
        }
        if (!f) {
            G->failed = true;
            f = "$1";
        }
        subst(b, f, args);
        clf__sb_printf(b, "%s; /* %s */\n", rnd_tail, clf__node_op_name(n));
        return memo_put(G, key, name);
    }
    switch (n->op) {
    case CLF__OP_WHERE:
        clf__sb_printf(b, "(%s ? %s : %s)", args[0], args[1], args[2]);
        break;
    case CLF__OP_CAST:
        subst(b, cast_format(in0->dtype, n->dtype), args);
        break;
    case CLF__OP_CLIP: {
        /* x at or below lo becomes lo, then at or above hi becomes hi (so
         * that a zero at a zero bound of the other sign is the bound: the
         * reference's minimum(maximum(x, lo), hi)); NaN compares false and
         * passes through. */
        clf__strbuf lo = {0}, hi = {0};
        bool has_lo, has_hi;
        if (n->dtype == CLF_I32) {
            int32_t l = clf__dtype_sat_i32(n->attr.clip.lo), h = clf__dtype_sat_i32(n->attr.clip.hi);
            has_lo = !(isinf(n->attr.clip.lo) && n->attr.clip.lo < 0) && l != INT32_MIN;
            has_hi = !(isinf(n->attr.clip.hi) && n->attr.clip.hi > 0) && h != INT32_MAX;
            clf__cg_literal(&lo, CLF_I32, l);
            clf__cg_literal(&hi, CLF_I32, h);
        } else {
            has_lo = !isnan(n->attr.clip.lo) && !(isinf(n->attr.clip.lo) && n->attr.clip.lo < 0);
            has_hi = !isnan(n->attr.clip.hi) && !(isinf(n->attr.clip.hi) && n->attr.clip.hi > 0);
            clf__cg_literal(&lo, CLF_F32, n->attr.clip.lo);
            clf__cg_literal(&hi, CLF_F32, n->attr.clip.hi);
        }
        const char *cargs[3] = {args[0], clf__sb_str(&lo), clf__sb_str(&hi)};
        if (has_lo && has_hi)
            subst(b, "(($1 <= $2 ? $2 : $1) >= $3 ? $3 : ($1 <= $2 ? $2 : $1))", cargs);
        else if (has_lo)
            subst(b, "($1 <= $2 ? $2 : $1)", cargs);
        else if (has_hi)
            subst(b, "($1 >= $3 ? $3 : $1)", cargs);
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
        G->no_expression = n;
        clf__sb_puts(b, "0");
    }
    clf__sb_printf(b, "%s; /* %s */\n", rnd_tail, clf__node_op_name(n));
    return memo_put(G, key, name);
}

/* The memo key of node id at view v, in key; false (and G failed) when out
 * of memory. */
static bool value_key(gen *G, uint32_t id, const clf__view *v, clf__strbuf *key)
{
    clf__sb_printf(key, "n%u:", id);
    clf__view_key(v, clf__graph_node(G->g, id)->rank, key);
    if (!clf__sb_ok(key)) {
        clf__sb_free(key);
        G->failed = true;
        return false;
    }
    return true;
}

const char *clf__cg_known(gen *G, uint32_t id, const clf__view *v)
{
    clf__strbuf key = {0};
    if (!value_key(G, id, v, &key))
        return NULL;
    const char *hit = memo_get(G, clf__sb_str(&key));
    clf__sb_free(&key);
    return hit;
}

void clf__cg_seed(gen *G, uint32_t id, const clf__view *v, const char *value)
{
    clf__strbuf key = {0};
    if (!value_key(G, id, v, &key))
        return;
    memo_put(G, clf__sb_str(&key), value);
    clf__sb_free(&key);
}

const char *clf__cg_load_lanes(clf__cg_fn *f, uint32_t buffer, clf__ix index, clf_dtype dt, char *name, size_t cap)
{
    const int st = clf__ix_unit_stride(f->ix, &index, f->lane_bit);
    if (st == 0)
        return clf__cg_read_expr(f->plan, buffer, &index, dt, name, cap);
    if (st < 0 || f->lane_bit == 0 || buffer == CLF__CG_INDEX_VALUE || clf__dtype_compute(dt) != CLF_F32) {
        f->novec = true;
        snprintf(name, cap, "0");
        return name;
    }
    char at[32];
    snprintf(name, cap, "ld%d", f->ntemps++);
    clf__sb_printf(&f->body, "    const float%d %s = ", f->vec, name);
    clf__cg_load_vec(f->plan, &f->body, dt, buffer, clf__ix_str(&index, at, sizeof at), f->vec, false);
    clf__sb_puts(&f->body, ";\n");
    return name;
}

/* A concatenation along the lanes of a vector function (f->lane_bit), the
 * inputs' offsets and lengths multiples of the lanes: the vector of the
 * input the lanes fall in, chosen by the lanes' first position; each
 * input read at clf__ix_concat_lanes. NULL where that does not hold. */
static const char *concat_lanes(gen *G, const clf__node *n, const clf__ix *dims, char *name, size_t cap)
{
    const int a = n->attr.concat.axis;
    const clf__ix *x = &dims[a];
    if (G->vec < 2 || G->lane_bit == 0 || !x->var || x->deps != G->lane_bit)
        return NULL;
    for (int k = 0; k < n->ninputs; k++)
        if (clf__graph_node(G->g, n->inputs[k])->shape[a] % G->vec != 0)
            return NULL;
    char pos[32];
    clf__ix_str(x, pos, sizeof pos);
    clf__strbuf e = {0};
    int open = 0;
    int64_t off = 0;
    for (int k = 0; k < n->ninputs; k++) {
        const clf__node *in_node = clf__graph_node(G->g, n->inputs[k]);
        const int64_t len = in_node->shape[a];
        if (len == 0)
            continue;
        clf__view in = {.linear = false};
        for (int d = 0; d < n->rank; d++)
            in.dims[d] = dims[d];
        in.dims[a] = clf__ix_concat_lanes(G->ix, *x, off, len, G->vec);
        const char *val = clf__cg_value(G, n->inputs[k], &in);
        if (off + len >= n->shape[a]) {
            clf__sb_printf(&e, "(float%d)(%s)", G->vec, val);
            break;
        }
        clf__sb_printf(&e, "(%s < %lldu ? (float%d)(%s) : ", pos, (long long)(off + len), G->vec, val);
        open++;
        off += len;
    }
    for (; open > 0; open--)
        clf__sb_puts(&e, ")");
    snprintf(name, cap, "v%d", G->ntemps++);
    clf__sb_printf(&G->body, "    const float%d %s = %s; /* concat */\n", G->vec, name,
                   clf__sb_ok(&e) ? clf__sb_str(&e) : "0");
    if (!clf__sb_ok(&e))
        G->failed = true;
    clf__sb_free(&e);
    return name;
}

/* A concatenation at view v: the value of the input the position along the
 * axis falls in, chosen by comparing the position (an index value) with
 * the inputs' offsets; each input is read at its clamped index. */
static const char *concat_value(gen *G, const clf__node *n, const clf__view *v, char *name, size_t cap)
{
    clf__ix dims[CLF_MAX_RANK];
    clf__view_dims(G->ix, v, n->rank, n->shape, dims);
    if (clf__dtype_compute(n->dtype) == CLF_F32) {
        const char *lanes = concat_lanes(G, n, dims, name, cap);
        if (lanes)
            return lanes;
    }
    int a = n->attr.concat.axis;
    int64_t off = 0, pos_c = dims[a].temp < 0 ? dims[a].c : -1;
    char pos[48] = "0";
    if (pos_c < 0) {
        G->hooks.load(G, CLF__CG_INDEX_VALUE, dims[a], CLF_I64, pos, sizeof pos);
        char *p = clf__strdup(pos);
        snprintf(pos, sizeof pos, "%s", p ? p : "0");
        clf__free(p);
    }
    clf__strbuf e = {0};
    int open = 0, last_k = -1;
    /* Inputs empty along the axis are never read (their buffers may be
     * NULL); the last non-empty one is the default branch. */
    for (int k = 0; k < n->ninputs; k++)
        if (clf__graph_node(G->g, n->inputs[k])->shape[a] > 0)
            last_k = k;
    for (int k = 0; k <= last_k; k++) {
        const clf__node *x = clf__graph_node(G->g, n->inputs[k]);
        int64_t len = x->shape[a];
        bool last = k == last_k;
        if (len == 0)
            continue;
        if (pos_c >= 0 && !(pos_c < off + len || last)) { /* a known position past this input */
            off += len;
            continue;
        }
        clf__view in;
        clf__view_input(G->ix, G->g, n, k, v, &in);
        const char *val = clf__cg_value(G, n->inputs[k], &in);
        if (pos_c >= 0 || last) {
            clf__sb_puts(&e, val);
            break;
        }
        clf__sb_printf(&e, "(%s < %lldL ? %s : ", pos, (long long)(off + len), val);
        open++;
        off += len;
    }
    if (last_k < 0) /* every input empty along the axis: so is the result */
        clf__sb_puts(&e, "0");
    for (; open > 0; open--)
        clf__sb_puts(&e, ")");
    snprintf(name, cap, "v%d", G->ntemps++);
    clf__sb_printf(&G->body, "    const %s %s = %s; /* concat */\n", clf__cg_ctype(n->dtype), name,
                   clf__sb_ok(&e) ? clf__sb_str(&e) : "0");
    if (!clf__sb_ok(&e))
        G->failed = true;
    clf__sb_free(&e);
    if (G->vec > 1)
        G->novec = true;
    return name;
}

/* A literal, a load, this kernel's reduction result, or a temporary
 * computed here. */
const char *clf__cg_value(gen *G, uint32_t id, const clf__view *v)
{
    const clf__node *n = clf__graph_node(G->g, id);
    clf__strbuf key = {0};
    if (!value_key(G, id, v, &key))
        return "0";
    const char *hit = memo_get(G, clf__sb_str(&key));
    if (hit) {
        clf__sb_free(&key);
        return hit;
    }
    const char *result;
    char buf[128];
    int32_t src = G->plan->src_buffer[id];
    bool leaf = clf__node_class_of(n) == CLF__CLASS_LEAF;
    if (id == G->forward_node) {
        clf__view in;
        clf__view_input(G->ix, G->g, n, G->forward_input, v, &in);
        result = memo_put(G, clf__sb_str(&key), clf__cg_value(G, n->inputs[G->forward_input], &in));
    } else if (clf__plan_is_literal(n)) {
        clf__strbuf lit = {0};
        constant_literal(&lit, n);
        result = memo_put(G, clf__sb_str(&key), clf__sb_ok(&lit) ? clf__sb_str(&lit) : "0");
        clf__sb_free(&lit);
    } else if (src >= 0 && (leaf || G->plan->producer[id] != (int32_t)G->k)) {
        clf__ix idx = clf__view_linear(G->ix, v, n->rank, n->shape);
        result = memo_put(G, clf__sb_str(&key), G->hooks.load(G, (uint32_t)src, idx, n->dtype, buf, sizeof buf));
    } else if (n->op == CLF__OP_REDUCE || n->op == CLF__OP_MATMUL) {
        /* A reduction or product of this kernel: only its own writer knows
         * where the current row's result or the accumulator lives. */
        const char *(*hook)(gen *, uint32_t, const clf__view *, char *, size_t) =
            n->op == CLF__OP_REDUCE ? G->hooks.reduction : G->hooks.product;
        const char *r = hook ? hook(G, id, v, buf, sizeof buf) : NULL;
        if (!r) {
            G->failed = true;
            r = "0";
        }
        result = memo_put(G, clf__sb_str(&key), r);
    } else if (clf__op_reads_indices(n->op)) {
        /* The data at an index read from the indices (clf__view_input). */
        clf__view in;
        clf__view_input(G->ix, G->g, n, 0, v, &in);
        result = memo_put(G, clf__sb_str(&key), clf__cg_value(G, n->inputs[0], &in));
    } else if (n->op == CLF__OP_CONCAT) {
        result = memo_put(G, clf__sb_str(&key), concat_value(G, n, v, buf, sizeof buf));
    } else if (clf__node_class_of(n) == CLF__CLASS_MOVEMENT) {
        clf__view in;
        clf__view_input(G->ix, G->g, n, 0, v, &in);
        result = memo_put(G, clf__sb_str(&key), clf__cg_value(G, n->inputs[0], &in));
    } else {
        /* Pointwise expressions read at most three operands (where). */
        const char *args[3] = {"0", "0", "0"};
        char *owned[3] = {NULL, NULL, NULL};
        if (n->ninputs > 3)
            G->failed = true;
        for (int i = 0; i < n->ninputs && i < 3; i++) {
            clf__view in;
            clf__view_input(G->ix, G->g, n, i, v, &in);
            owned[i] = clf__strdup(clf__cg_value(G, n->inputs[i], &in));
            if (!owned[i])
                G->failed = true;
            else
                args[i] = owned[i];
        }
        result = compute(G, n, args, clf__sb_str(&key));
        for (int i = 0; i < 3; i++)
            clf__free(owned[i]);
    }
    clf__sb_free(&key);
    return result;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

char *clf__cg_kernel_name(const clf_graph *g, const uint32_t *ops, uint32_t nops, const char *prefix)
{
    const char **names = clf__malloc((nops ? nops : 1) * sizeof *names);
    if (!names)
        return NULL;
    size_t nn = 0;
    for (uint32_t i = 0; i < nops; i++)
        names[nn++] = clf__node_op_name(clf__graph_node(g, ops[i]));
    qsort(names, nn, sizeof *names, cmp_str);
    clf__strbuf sb = {0};
    clf__sb_printf(&sb, nn ? "%s_fused" : "%s_copy", prefix);
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
    clf__free(names);
    return clf__sb_take(&sb);
}

char *clf__cg_op_list(const clf_graph *g, const uint32_t *ops, uint32_t nops)
{
    clf__strbuf sb = {0};
    for (uint32_t i = 0; i < nops; i++)
        clf__sb_printf(&sb, i ? " %s" : "%s", clf__node_op_name(clf__graph_node(g, ops[i])));
    return clf__sb_take(&sb);
}

/* Whether kernel K computes or stores a value of a storage float (and so
 * needs the rounding prelude). */
static bool uses_storage_floats(const clf_graph *g, const clf__plan_kernel *K)
{
    for (uint32_t i = 0; i < K->nops; i++) {
        const clf__node *n = clf__graph_node(g, K->ops[i]);
        if (clf__dtype_is_storage(n->dtype))
            return true;
        /* A load of storage floats cast at once (vector loads convert
         * them through clf_f16_float). */
        for (int j = 0; j < n->ninputs; j++)
            if (clf__dtype_is_storage(clf__graph_node(g, n->inputs[j])->dtype))
                return true;
    }
    for (uint32_t i = 0; i < K->nstores; i++)
        if (clf__dtype_is_storage(clf__graph_node(g, K->stores[i].node)->dtype))
            return true;
    return false;
}

/* Whether an op of kernel K computes through clf_erf (kernels_templates/erf.cl). */
static bool calls_erf(const clf_graph *g, const clf__plan_kernel *K)
{
    for (uint32_t i = 0; i < K->nops; i++) {
        const char *cl = clf__op_info_of(clf__graph_node(g, K->ops[i])->op)->cl[CLF_F32];
        if (cl && strstr(cl, "clf_erf("))
            return true;
    }
    return false;
}

/* The storage floats' helpers, the same text before every kernel with an
 * f16 or bf16 value: written once (clf__cg_storage_floats), not a kernel at a
 * time. Rounding (graph/dtype_table.h) in registers and without
 * cl_khr_fp16: integer round-to-nearest-even of the f32 bits (13 bits off
 * for a normal f16; f16 subnormals, whose quantum is 2^-24, by the float
 * add (|x| + 0.5) - 0.5, which rounds there; inf from 65520; NaN stays a
 * quiet NaN of its payload's top bits, as the host conversion gives), bf16
 * 16 bits off. The same text serves the vector forms (clf_round_f16_4): ?:
 * and comparisons act lane-wise. A round trip through vstore_half_rte into
 * private memory, the obvious spelling, went through the stack on NVIDIA's
 * compiler: an f16 chain ran at 65% of the copy rate. */
static char storage_float_text[8192]; /* 5 KB written; a codegen test checks the end */
static size_t storage_float_len;

static void put_storage_floats(const char *fmt, ...)
{
    if (storage_float_len >= sizeof storage_float_text)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(storage_float_text + storage_float_len, sizeof storage_float_text - storage_float_len, fmt, ap);
    va_end(ap);
    storage_float_len += n > 0 ? (size_t)n : 0;
}

static void write_storage_floats(void)
{
    static const char *const width[] = {"", "2", "4", "8", "16"};
    for (size_t k = 0; k < sizeof width / sizeof width[0]; k++) {
        const char *w = width[k], *sfx = k ? "_" : "";
        put_storage_floats("static inline float%s clf_round_f16%s%s(float%s x)\n{\n"
                           "    const uint%s u = as_uint%s(x), a = u & 0x7fffffffu;\n"
                           "    const uint%s nrm = (a + 0xfffu + ((a >> 13) & 1u)) & 0xffffe000u;\n"
                           "    const uint%s sub = as_uint%s((as_float%s(a) + 0.5f) - 0.5f);\n"
                           "    uint%s r = a >= 0x38800000u ? nrm : sub;\n"
                           "    r = a >= 0x477ff000u ? (uint%s)0x7f800000u : r;\n"
                           "    r = a > 0x7f800000u ? ((a | 0x00400000u) & 0xffffe000u) : r;\n"
                           "    return as_float%s((u & 0x80000000u) | r);\n}\n",
                           w, sfx, w, w, w, w, w, w, w, w, w, w, w);
        /* f16 bit patterns (the low 16 bits of each lane) to f32, for
         * aligned vector loads of raw bits: normals rebiased, subnormals
         * and zeros as m 2^-24, inf and NaN keep their payload. */
        if (k)
            put_storage_floats("static inline float%s clf_f16_float%s(uint%s h)\n{\n"
                               "    const uint%s e = h & 0x7c00u, a = (h & 0x7fffu) << 13;\n"
                               "    uint%s r = a + 0x38000000u;\n"
                               "    r = e == 0x7c00u ? (a | 0x7f800000u) : r;\n"
                               "    r = e == 0u ? as_uint%s(convert_float%s(h & 0x3ffu) * 0x1p-24f) : r;\n"
                               "    return as_float%s(r | ((h & 0x8000u) << 16));\n}\n",
                               w, w, w, w, w, w, w, w);
        put_storage_floats("static inline float%s clf_round_bf16%s%s(float%s x)\n{\n    const uint%s u = as_uint%s(x);\n"
                           "    const uint%s r = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;\n"
                           "    return as_float%s((u & 0x7fffffffu) > 0x7f800000u ? ((u | 0x00400000u) & 0xffff0000u) : r);\n}\n",
                           w, sfx, w, w, w, w, w, w);
    }
    put_storage_floats("static inline ushort clf_bf16_bits(float x) { return (ushort)(as_uint(x) >> 16); }\n");
}

const char *clf__cg_storage_floats(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, write_storage_floats);
    return storage_float_text;
}

void clf__cg_source_header(clf__strbuf *src, const clf_graph *g, const clf__plan_kernel *K, const char *name,
                           const char *ops)
{
    clf__sb_printf(src, "/* %s: generated by libclfuse (codegen v%d) */\n/* ops: %s */\n", name,
                   CLF__CODEGEN_VERSION, ops);
    if (calls_erf(g, K)) {
        clf__sb_puts(src, "/* ---- kernels_templates/erf.cl ---- */\n");
        clf__sb_puts(src, clf__template_erf);
        clf__sb_puts(src, "\n");
    }
    if (uses_storage_floats(g, K))
        clf__sb_puts(src, clf__cg_storage_floats());
}

const char *clf__cg_read_expr(const clf__plan *plan, uint32_t buffer, const clf__ix *index, clf_dtype dt, char *out,
                              size_t cap)
{
    char a[32];
    clf__ix_str(index, a, sizeof a);
    if (buffer == CLF__CG_INDEX_VALUE)
        snprintf(out, cap, "((long)%s)", a);
    else
        clf__cg_load_expr(plan, dt, buffer, a, out, cap);
    return out;
}

void clf__cg_gather_defs(clf__strbuf *src, const clf_graph *g, const clf__plan *plan, const clf__plan_kernel *K)
{
    for (uint32_t i = 0; i < K->nops; i++) {
        const clf__node *n = clf__graph_node(g, K->ops[i]);
        if (!clf__op_reads_indices(n->op))
            continue;
        const uint32_t ixid = clf__plan_gather_indices(g, n);
        const clf__node *ix = clf__graph_node(g, ixid);
        clf__sb_printf(src, "#define CLF_GIX_%u(j) ", K->ops[i]);
        if (clf__plan_is_literal(ix))
            constant_literal(src, ix);
        else
        {
            char rd[128];
            clf__sb_printf(src, "(%s)", clf__cg_load_expr(plan, ix->dtype, (uint32_t)plan->src_buffer[ixid], "j", rd, sizeof rd));
        }
        clf__sb_puts(src, "\n");
    }
}

void clf__cg_signature(clf__strbuf *src, const clf_graph *g, const clf__plan *plan, const char *name,
                       const uint32_t *params, uint32_t nparams, uint32_t nreads)
{
    clf__sb_printf(src, "#define CLF_KERNEL_NAME %s\n#define CLF_PARAMS", name);
    for (uint32_t p = 0; p < nparams; p++) {
        const clf__plan_buffer *B = &plan->buffers[params[p]];
        clf__sb_printf(src, "%s __global %s%s *restrict b%u", p ? "," : "", p < nreads ? "const " : "",
                       clf__cg_storage_type(clf__graph_node(g, B->node)->dtype), params[p]);
        if (clf__plan_buffer_in_scratch(&plan->buffers[params[p]]))
            clf__sb_printf(src, ", const ulong o_%u", params[p]);
    }
    clf__sb_puts(src, "\n#define CLF_ARGS");
    for (uint32_t p = 0; p < nparams; p++) {
        clf__sb_printf(src, "%s b%u", p ? "," : "", params[p]);
        if (clf__plan_buffer_in_scratch(&plan->buffers[params[p]]))
            clf__sb_printf(src, ", o_%u", params[p]);
    }
    clf__sb_puts(src, "\n");
}

bool clf__cg_params(const clf__plan_kernel *K, uint32_t **params, uint32_t *nparams)
{
    *nparams = 0;
    *params = clf__malloc((K->nreads + K->nstores + 1) * sizeof **params);
    if (!*params)
        return false;
    for (uint32_t i = 0; i < K->nreads; i++)
        (*params)[(*nparams)++] = K->reads[i];
    for (uint32_t i = 0; i < K->nstores; i++)
        (*params)[(*nparams)++] = K->stores[i].buffer;
    return true;
}

bool clf__cg_wide_index(const clf_graph *g, const clf__plan *plan, const clf__plan_kernel *K, uint64_t space)
{
    uint64_t widest = space;
    for (uint32_t i = 0; i < K->nreads; i++) {
        const clf__node *bn = clf__graph_node(g, plan->buffers[K->reads[i]].node);
        if ((uint64_t)clf__node_numel(bn) > widest)
            widest = (uint64_t)clf__node_numel(bn);
    }
    return widest > (uint64_t)INT32_MAX;
}

char *clf__cg_final_name(const char *entry)
{
    char *name = clf__malloc(strlen(entry) + sizeof "_final");
    if (name)
        sprintf(name, "%s_final", entry);
    return name;
}
