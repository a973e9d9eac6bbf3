/* Writes the OpenCL C for one reduction kernel of a plan: the prologue of
 * each reduction stage, its accumulators, the epilogue over the full space
 * and the per-row stores, prepended to kernels_templates/reduction_cpu.cl or
 * reduction_gpu.cl by device.
 *
 * Every full-space function (clf_load, clf_step<k>, clf_epilogue) computes
 * its indices from the row x and element r through one shared set of index
 * temporaries (the CLF_FULL_INDEX macro). Loads that vary with r are the
 * row's values: clf_load fetches them into a clf_vals, which the GPU
 * template can keep in registers across sweeps; other loads are inline. */
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

#define MAX_STAGES CLF__MAX_REDUCTION_STAGES
/* Gathered indices one kernel may use in its vector loop. */
#define MAX_GATHERS 32

typedef struct red_ctx {
    const clf_graph *g;
    const clf__plan *plan;
    const clf__plan_kernel *K;
    clf__ixgen full_ix; /* shared by the full-space functions */
    clf__strbuf full_idx;
    uint32_t r_bit;
    clf__cg_slot *slots; /* the row's values (clf_vals) */
    size_t nslots, cap_slots;
    bool failed;
    /* Vector loop: index temporaries loaded lane by lane (clf_at_t<n>). */
    int gathers[MAX_GATHERS];
    int ngathers;
    /* Vector loads and stores at provably aligned places go through
     * floatN pointers (GPUs: one wide memory access instead of several). */
    bool aligned_access;
    /* The vector loop's f32 max and min keep NaN and signed zeros apart
     * (vec_acc_fields): CPU devices. */
    bool split_minmax;
} red_ctx;

/* What a function's hooks need: the kernel and the function's own row x. */
typedef struct fn_ctx {
    red_ctx *rc;
    clf__ix x;
    bool full; /* a full-space function: r-varying loads come from clf_vals */
} fn_ctx;

/* Values the CPU form computes once and carries from a stage to the
 * epilogue. softmax's exp(x - max) is computed in the sum's stage and again
 * in the epilogue, and on a CPU device that exp, not memory, is what the
 * kernel waits for (PoCL, 1024 x 16384: 15-18 ms carried against 24-28 ms
 * computed twice, timed by bench/probes/cl_kernel_info). So a stage that
 * computes such a value also stores it into one of the kernel's f32
 * full-space outputs, at the element the epilogue will write there, and the
 * epilogue reads it back (as cy<i>) before writing anything: one value per
 * output at most. Outputs never share memory with what a kernel reads
 * (clf_run refuses such bindings, the plan keeps live buffers apart, and
 * this kernel does not read the buffer), so the early store changes no
 * load. GPUs keep the row in registers instead (carrying measured no gain
 * on an H200). */
#define MAX_CARRIES 8
typedef struct carries {
    struct {
        uint32_t node;   /* the value carried */
        int stage;       /* the last stage that computes it, which stores it */
        uint32_t buffer; /* the output it travels in */
    } c[MAX_CARRIES];
    int n;
    clf__ix at; /* the current element's place in every full-space output */
} carries;

static const char *vec_lane(int lane)
{
    static const char *const s[16] = {"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7",
                                      "s8", "s9", "sa", "sb", "sc", "sd", "se", "sf"};
    return s[lane];
}

/* Whether an index of stride 1 in r (clf__ix_unit_stride) is a multiple of n
 * whenever r is: r itself, plus terms a * k with n dividing k, plus
 * constants that n divides. Buffers start at CL_DEVICE_MEM_BASE_ADDR_ALIGN
 * (at least the size of a long16), so such an index of a float buffer is a
 * floatN-aligned address. */
static bool r_aligned(const clf__ixgen *gen, const clf__ix *ix, uint32_t r_bit, int64_t n)
{
    if (ix->temp < 0)
        return ix->c % n == 0;
    if (ix->var)
        return ix->deps == r_bit;
    if (ix->temp > 0 && ix->temp < gen->ntemps) {
        const clf__ix_origin *o = &gen->origin[ix->temp];
        bool term = o->k % n == 0 || (o->a.temp < 0 && (o->a.c * o->k) % n == 0);
        return o->kind == CLF__IX_MAD && term && r_aligned(gen, &o->b, r_bit, n);
    }
    return false;
}

/* Whether vector access n wide at index ix (of stride 1 in r) may go
 * through a floatN pointer: one wide memory access on a GPU, where vloadN
 * of an address not known to be aligned may become n narrow ones. */
static bool aligned_vec(const red_ctx *rc, const clf__ix *ix, int n)
{
    return rc->aligned_access && r_aligned(&rc->full_ix, ix, rc->r_bit, n);
}

/* The lane-by-lane accessor of a gathered index: clf_at_t<n>(x, r, ...)
 * (the buffers too: a gather's index reads its indices). */
static bool note_gather(red_ctx *rc, int temp)
{
    for (int i = 0; i < rc->ngathers; i++)
        if (rc->gathers[i] == temp)
            return true;
    if (rc->ngathers == MAX_GATHERS)
        return false;
    rc->gathers[rc->ngathers++] = temp;
    return true;
}

/* Appends the floatN value of buffer b at index ix for elements r .. r+n-1:
 * one vector load where they are consecutive, else a gather through
 * clf_at_t<n>. Returns false when the index has no vector form. */
static bool vec_load_expr(red_ctx *rc, clf__strbuf *sb, uint32_t b, const clf__ix *ix, clf_dtype dt, int n)
{
    char a[32], rd[96];
    int st = clf__ix_unit_stride(&rc->full_ix, ix, rc->r_bit);
    if (st == 1) {
        clf__cg_load_vec(rc->plan, sb, dt, b, clf__ix_str(ix, a, sizeof a), n, aligned_vec(rc, ix, n));
        return true;
    }
    if (st == 0) {
        clf__sb_printf(sb, "(float%d)(%s)", n, clf__cg_load_expr(rc->plan, dt, b, clf__ix_str(ix, a, sizeof a), rd, sizeof rd));
        return true;
    }
    if (ix->var || ix->temp <= 0 || !note_gather(rc, ix->temp))
        return false;
    clf__sb_printf(sb, "(float%d)(", n);
    for (int j = 0; j < n; j++) {
        char at[64];
        snprintf(at, sizeof at, "clf_at_t%d(x, r + %du, CLF_ARGS)", ix->temp, j);
        clf__sb_printf(sb, "%s%s", j ? ", " : "", clf__cg_load_expr(rc->plan, dt, b, at, rd, sizeof rd));
    }
    clf__sb_puts(sb, ")");
    return true;
}

static const char *load_hook(clf__cg_fn *f, uint32_t buffer, clf__ix index, clf_dtype dt, char *name,
                             size_t cap)
{
    fn_ctx *fc = f->hooks.user;
    if (f->vec > 1 && clf__dtype_compute(dt) != CLF_F32) {
        f->novec = true;
        snprintf(name, cap, "0");
        return name;
    }
    /* The row's own elements (varying with x and r) are what a persistent
     * kernel keeps; per-column data such as a norm's weight is reloaded
     * from cache instead. */
    uint32_t row_bits = fc->rc->r_bit | fc->x.deps;
    if (fc->full && (index.deps & row_bits) == row_bits) {
        long s = clf__cg_slot_find(&fc->rc->slots, &fc->rc->nslots, &fc->rc->cap_slots, buffer, index, dt);
        if (s < 0) {
            f->failed = true;
            snprintf(name, cap, "0");
        } else {
            snprintf(name, cap, "v->l%ld", s);
        }
        return name;
    }
    snprintf(name, cap, "ld%d", f->ntemps++);
    if (f->vec > 1 && (index.deps & fc->rc->r_bit)) {
        clf__sb_printf(&f->body, "    const float%d %s = ", f->vec, name);
        if (!vec_load_expr(fc->rc, &f->body, buffer, &index, dt, f->vec))
            f->novec = true;
        clf__sb_puts(&f->body, ";\n");
        return name;
    }
    char rd[96];
    clf__sb_printf(&f->body, "    const %s %s = %s;\n", clf__cg_ctype(dt), name,
                   clf__cg_read_expr(f->plan, buffer, &index, dt, rd, sizeof rd));
    return name;
}

/* This kernel's reduction results live in the row state, valid only for
 * the current row (the planner checked that every read is there). */
static const char *reduction_hook(clf__cg_fn *f, uint32_t node, const clf__view *v, char *name, size_t cap)
{
    fn_ctx *fc = f->hooks.user;
    const clf__node *n = clf__graph_node(f->g, node);
    clf__ix at = clf__view_linear(f->ix, v, n->rank, n->shape);
    if (!clf__ix_same(&at, &fc->x))
        return NULL;
    snprintf(name, cap, "row->r_%u", node);
    return name;
}

static bool is_arg(const clf__node *n) { return clf__reduce_is_arg(n->attr.reduce.kind); }

/* Accumulator code for reduction node id of kind n->attr.reduce.kind over elements of
 * type in_dt: its fields, initial values, update by one element (value v
 * at index r), combination of two partial accumulators (a, b), and the
 * finished result. Kahan summation keeps long f32 sums accurate and is
 * switched off at infinities, where it would turn them into NaN. */
static void emit_acc_fields(clf__strbuf *sb, const clf__node *n, uint32_t id, clf_dtype in_dt, clf__sum_kind sk)
{
    const char *t = clf__cg_ctype(in_dt);
    switch (n->attr.reduce.kind) {
    case CLF__REDUCE_SUM:
        if (clf__dtype_compute(in_dt) == CLF_F32 && sk == CLF__SUM_DOUBLE)
            clf__sb_printf(sb, "    double s_%u;\n", id);
        else if (clf__dtype_compute(in_dt) == CLF_F32 && sk == CLF__SUM_KAHAN)
            clf__sb_printf(sb, "    float s_%u, c_%u;\n", id, id);
        else
            clf__sb_printf(sb, "    %s s_%u;\n", t, id);
        break;
    case CLF__REDUCE_ARGMAX:
    case CLF__REDUCE_ARGMIN:
        clf__sb_printf(sb, "    %s v_%u;\n    int i_%u;\n", t, id, id);
        break;
    default:
        clf__sb_printf(sb, "    %s s_%u;\n", t, id);
    }
}

/* OpenCL C's name of integer type dt (i32 or i64): sums and products
 * wrap through its unsigned twin, as_u<name>. */
static const char *int_name(clf_dtype dt) { return dt == CLF_I64 ? "long" : "int"; }
/* The lowest and highest values of integer type dt in OpenCL C (i32 or
 * i64): max's and min's starting values. */
static const char *int_lowest(clf_dtype dt) { return dt == CLF_I64 ? "(-9223372036854775807L - 1)" : "(-2147483647 - 1)"; }
static const char *int_highest(clf_dtype dt) { return dt == CLF_I64 ? "9223372036854775807L" : "2147483647"; }

static void emit_acc_init(clf__strbuf *sb, const clf__node *n, uint32_t id, clf_dtype in_dt, clf__sum_kind sk)
{
    bool f = clf__dtype_compute(in_dt) == CLF_F32;
    switch (n->attr.reduce.kind) {
    case CLF__REDUCE_SUM:
        if (f && sk == CLF__SUM_DOUBLE)
            clf__sb_printf(sb, "    a->s_%u = 0.0;\n", id);
        else if (f && sk == CLF__SUM_KAHAN)
            clf__sb_printf(sb, "    a->s_%u = 0.0f;\n    a->c_%u = 0.0f;\n", id, id);
        else
            clf__sb_printf(sb, f ? "    a->s_%u = 0.0f;\n" : "    a->s_%u = 0;\n", id);
        break;
    case CLF__REDUCE_PROD:
        clf__sb_printf(sb, f ? "    a->s_%u = 1.0f;\n" : "    a->s_%u = 1;\n", id);
        break;
    case CLF__REDUCE_MAX:
        clf__sb_printf(sb, "    a->s_%u = %s;\n", id, f ? "-INFINITY" : int_lowest(in_dt));
        break;
    case CLF__REDUCE_MIN:
        clf__sb_printf(sb, "    a->s_%u = %s;\n", id, f ? "INFINITY" : int_highest(in_dt));
        break;
    case CLF__REDUCE_ARGMAX:
        clf__sb_printf(sb, "    a->v_%u = %s;\n", id, f ? "-INFINITY" : int_lowest(in_dt));
        clf__sb_printf(sb, "    a->i_%u = 0;\n", id);
        break;
    case CLF__REDUCE_ARGMIN:
        clf__sb_printf(sb, "    a->v_%u = %s;\n", id, f ? "INFINITY" : int_highest(in_dt));
        clf__sb_printf(sb, "    a->i_%u = 0;\n", id);
        break;
    case CLF__REDUCE_KIND_COUNT: /* refused by the builder */
        break;
    }
}

/* Kahan addition of the expression y (evaluated once) into s and c. */
static void emit_kahan(clf__strbuf *sb, uint32_t id, const char *y)
{
    clf__sb_printf(sb,
                   "    {\n        const float y = (%s) - a->c_%u;\n        const float t = a->s_%u + y;\n"
                   "        a->c_%u = isfinite(t) ? (t - a->s_%u) - y : 0.0f;\n        a->s_%u = t;\n    }\n",
                   y, id, id, id, id, id);
}

static void emit_acc_step(clf__strbuf *sb, const clf__node *n, uint32_t id, clf_dtype in_dt, const char *v, clf__sum_kind sk)
{
    bool f = clf__dtype_compute(in_dt) == CLF_F32;
    switch (n->attr.reduce.kind) {
    case CLF__REDUCE_SUM:
        if (f && sk == CLF__SUM_DOUBLE)
            clf__sb_printf(sb, "    a->s_%u += (double)(%s);\n", id, v);
        else if (f && sk == CLF__SUM_KAHAN)
            emit_kahan(sb, id, v);
        else if (f)
            clf__sb_printf(sb, "    a->s_%u += %s;\n", id, v);
        else
            clf__sb_printf(sb, "    a->s_%u = as_%s(as_u%s(a->s_%u) + as_u%s(%s));\n", id, int_name(in_dt), int_name(in_dt), id,
                           int_name(in_dt), v);
        break;
    case CLF__REDUCE_PROD:
        if (f)
            clf__sb_printf(sb, "    a->s_%u *= %s;\n", id, v);
        else
            clf__sb_printf(sb, "    a->s_%u = as_%s(as_u%s(a->s_%u) * as_u%s(%s));\n", id, int_name(in_dt), int_name(in_dt), id,
                           int_name(in_dt), v);
        break;
    case CLF__REDUCE_MAX:
    case CLF__REDUCE_MIN: {
        const bool mx = n->attr.reduce.kind == CLF__REDUCE_MAX;
        /* NaN, once seen, stays: no comparison with NaN is true. Equal
         * zeros resolve by sign whatever the order (max +0, min -0). */
        char acc[24];
        snprintf(acc, sizeof acc, "a->s_%u", id);
        if (f)
            clf__sb_printf(sb, "    %s = %s %s %s || isnan(%s) || (%s == %s && signbit(%s)) ? %s : %s;\n", acc, v,
                           mx ? ">" : "<", acc, v, v, acc, mx ? acc : v, v, acc);
        else
            clf__sb_printf(sb, "    %s = %s(%s, %s);\n", acc, mx ? "max" : "min", acc, v);
        break;
    }
    default: { /* argmax / argmin: the first NaN wins; ties keep the first index unless select_last */
        const char *cmp = n->attr.reduce.kind == CLF__REDUCE_ARGMAX ? ">" : "<";
        if (f)
            clf__sb_printf(sb,
                           "    if (!isnan(a->v_%u) && (%s %s a->v_%u || isnan(%s))) {\n"
                           "        a->v_%u = %s;\n        a->i_%u = (int)r;\n    }\n",
                           id, v, cmp, id, v, id, v, id);
        else
            clf__sb_printf(sb, "    if (%s %s a->v_%u) {\n        a->v_%u = %s;\n        a->i_%u = (int)r;\n    }\n", v,
                           cmp, id, id, v, id);
        if (n->attr.reduce.select_last)
            clf__sb_printf(sb, "    else if (%s == a->v_%u) {\n        a->i_%u = (int)r;\n    }\n", v, id, id);
        break;
    }
    }
}

static void emit_acc_combine(clf__strbuf *sb, const clf__node *n, uint32_t id, clf_dtype in_dt, clf__sum_kind sk)
{
    bool f = clf__dtype_compute(in_dt) == CLF_F32;
    char bv[48];
    switch (n->attr.reduce.kind) {
    case CLF__REDUCE_SUM:
        if (f && sk != CLF__SUM_KAHAN) {
            clf__sb_printf(sb, "    a->s_%u += b->s_%u;\n", id, id);
        } else if (f) {
            snprintf(bv, sizeof bv, "b->s_%u - b->c_%u", id, id);
            emit_kahan(sb, id, bv);
        } else {
            clf__sb_printf(sb, "    a->s_%u = as_%s(as_u%s(a->s_%u) + as_u%s(b->s_%u));\n", id, int_name(in_dt),
                           int_name(in_dt), id, int_name(in_dt), id);
        }
        break;
    case CLF__REDUCE_PROD:
    case CLF__REDUCE_MAX:
    case CLF__REDUCE_MIN:
        snprintf(bv, sizeof bv, "b->s_%u", id);
        emit_acc_step(sb, n, id, in_dt, bv, sk);
        break;
    default: {
        /* Partial results cover interleaved indices: compare by value, then
         * by index. */
        const char *f_tpl =
            "    if (isnan(a->v$) ? (isnan(b->v$) && b->i$ < a->i$)\n"
            "                    : (isnan(b->v$) || b->v$ CMP a->v$ || (b->v$ == a->v$ && b->i$ TIE a->i$))) {\n"
            "        a->v$ = b->v$;\n        a->i$ = b->i$;\n    }\n";
        const char *i_tpl = "    if (b->v$ CMP a->v$ || (b->v$ == a->v$ && b->i$ TIE a->i$)) {\n"
                            "        a->v$ = b->v$;\n        a->i$ = b->i$;\n    }\n";
        for (const char *p = f ? f_tpl : i_tpl; *p; p++) {
            if (*p == '$')
                clf__sb_printf(sb, "_%u", id);
            else if (strncmp(p, "CMP", 3) == 0) {
                clf__sb_puts(sb, n->attr.reduce.kind == CLF__REDUCE_ARGMAX ? ">" : "<");
                p += 2;
            } else if (strncmp(p, "TIE", 3) == 0) {
                clf__sb_puts(sb, n->attr.reduce.select_last ? ">" : "<");
                p += 2;
            } else
                clf__sb_putn(sb, p, 1);
        }
    }
    }
}

static void emit_acc_finish(clf__strbuf *sb, const clf__node *n, uint32_t id, clf_dtype in_dt, clf__sum_kind sk)
{
    char v[48];
    if (is_arg(n))
        snprintf(v, sizeof v, "a->i_%u", id);
    else if (n->attr.reduce.kind == CLF__REDUCE_SUM && clf__dtype_compute(in_dt) == CLF_F32 && sk == CLF__SUM_DOUBLE)
        snprintf(v, sizeof v, "(float)a->s_%u", id);
    else if (n->attr.reduce.kind == CLF__REDUCE_SUM && clf__dtype_compute(in_dt) == CLF_F32 && sk == CLF__SUM_KAHAN)
        snprintf(v, sizeof v, "a->s_%u - a->c_%u", id, id);
    else
        snprintf(v, sizeof v, "a->s_%u", id);
    /* A storage float's result is rounded to it once, from the f32 sum. */
    clf__sb_printf(sb, "    row->r_%u = ", id);
    clf__cg_round(sb, n->dtype, v);
    clf__sb_puts(sb, ";\n");
}


void clf__cg_emit_row_reduction(clf__strbuf *sb, const clf__node *n, uint32_t id, clf_dtype in_dt, bool fp64,
                                const char *loop_head, const char *body, const char *value, const char *dest)
{
    const clf__sum_kind sk = fp64 ? CLF__SUM_DOUBLE : CLF__SUM_KAHAN;
    clf__sb_puts(sb, "    {\n    struct {\n");
    emit_acc_fields(sb, n, id, in_dt, sk);
    clf__sb_printf(sb, "    } acc, *a = &acc;\n    struct {\n        float r_%u;\n    } out, *row = &out;\n", id);
    emit_acc_init(sb, n, id, in_dt, sk);
    clf__sb_printf(sb, "    %s {\n%s", loop_head, body);
    emit_acc_step(sb, n, id, in_dt, value, sk);
    clf__sb_puts(sb, "    }\n");
    emit_acc_finish(sb, n, id, in_dt, sk);
    clf__sb_printf(sb, "    %s = out.r_%u;\n    }\n", dest, id);
}

void clf__cg_emit_float_reduction(clf__strbuf *init, clf__strbuf *combine, clf__strbuf *finish, const clf__node *n,
                                  uint32_t id, clf_dtype in_dt)
{
    /* One float accumulator (plain sums) a, b of this function's shape. */
    clf__strbuf fields = {0};
    emit_acc_fields(&fields, n, id, in_dt, CLF__SUM_PLAIN);
    const char *f = clf__sb_ok(&fields) ? clf__sb_str(&fields) : "";
    clf__sb_printf(init, "{\n    struct {\n%s    } acc, *a = &acc;\n", f);
    emit_acc_init(init, n, id, in_dt, CLF__SUM_PLAIN);
    clf__sb_printf(init, "    return a->s_%u;\n}\n", id);
    clf__sb_printf(combine, "{\n    struct {\n%s    } xa = {x}, xb = {y}, *a = &xa, *b = &xb;\n", f);
    emit_acc_combine(combine, n, id, in_dt, CLF__SUM_PLAIN);
    clf__sb_printf(combine, "    return a->s_%u;\n}\n", id);
    clf__sb_printf(finish, "{\n    struct {\n%s    } xa = {x}, *a = &xa;\n    struct {\n        float r_%u;\n    } out, "
                           "*row = &out;\n", f, id);
    emit_acc_finish(finish, n, id, in_dt, CLF__SUM_PLAIN);
    clf__sb_printf(finish, "    return out.r_%u;\n}\n", id);
    clf__sb_free(&fields);
}

/* The vector loop's accumulators (schedule_reduction.c's CPU_VEC): the fields of
 * emit_acc_fields as vectors of n lanes, one partial result per lane,
 * combined lane by lane into the scalar accumulator at the end of the
 * row. Only f32 sum, prod, max and min have this form. */
static bool is_minmax(const clf__node *n)
{
    return n->attr.reduce.kind == CLF__REDUCE_MAX || n->attr.reduce.kind == CLF__REDUCE_MIN;
}

static bool vec_acc_ok(const clf__node *n, clf_dtype in_dt)
{
    return clf__dtype_compute(in_dt) == CLF_F32 && !is_arg(n);
}

/* With split (rc->split_minmax), a max or min lane keeps three things: s,
 * the plain comparison's result (`v > s ? v : s`: one instruction, and a
 * dependency chain of one), n, the last NaN seen (0 if none), and z, whether
 * a zero of the winning sign (+0 for max, -0 for min) was seen. The exact
 * rule of emit_acc_step (NaN stays, equal zeros resolve by sign) chains
 * five operations through s; with one PoCL thread it cost that softmax 0.67
 * ms of 3.4 (bench/probes/cl_kernel_info). vec_acc_fix puts the rule back
 * into each lane before the lanes combine. */
static void vec_acc_fields(clf__strbuf *sb, const clf__node *n, uint32_t id, clf__sum_kind sk, int vn, bool split)
{
    if (n->attr.reduce.kind == CLF__REDUCE_SUM && sk == CLF__SUM_DOUBLE)
        clf__sb_printf(sb, "    double%d s_%u;\n", vn, id);
    else if (n->attr.reduce.kind == CLF__REDUCE_SUM && sk == CLF__SUM_KAHAN)
        clf__sb_printf(sb, "    float%d s_%u, c_%u;\n", vn, id, id);
    else if (split && is_minmax(n))
        clf__sb_printf(sb, "    float%d s_%u, n_%u;\n    int%d z_%u;\n", vn, id, id, vn, id);
    else
        clf__sb_printf(sb, "    float%d s_%u;\n", vn, id);
}

static void vec_acc_init(clf__strbuf *sb, const clf__node *n, uint32_t id, clf__sum_kind sk, bool split)
{
    emit_acc_init(sb, n, id, CLF_F32, sk);
    if (split && is_minmax(n))
        clf__sb_printf(sb, "    a->n_%u = 0.0f;\n    a->z_%u = 0;\n", id, id);
}

/* A split max or min lane's exact result, into the copy f of the vector
 * accumulator that the lanes are read from. */
static void vec_acc_fix(clf__strbuf *sb, const clf__node *n, uint32_t id, bool split)
{
    if (!split || !is_minmax(n))
        return;
    clf__sb_printf(sb, "    f.s_%u = f.z_%u != 0 && f.s_%u == 0.0f ? %s : f.s_%u;\n", id, id, id,
                   n->attr.reduce.kind == CLF__REDUCE_MAX ? "0.0f" : "-0.0f", id);
    clf__sb_printf(sb, "    f.s_%u = f.n_%u != f.n_%u ? f.n_%u : f.s_%u;\n", id, id, id, id, id);
}

/* One vector of elements v (a floatN, or a scalar that widens) into the
 * accumulators: sums in double lanes or Kahan-compensated lanes as in
 * emit_acc_step, split max and min as vec_acc_fields says, the rest as in
 * emit_acc_step. */
static void vec_acc_step(clf__strbuf *sb, const clf__node *n, uint32_t id, const char *v, clf__sum_kind sk, int vn,
                         bool split)
{
    if (split && is_minmax(n)) {
        const bool mx = n->attr.reduce.kind == CLF__REDUCE_MAX;
        clf__sb_printf(sb, "    {\n        const float%d y = (float%d)(%s);\n", vn, vn, v);
        clf__sb_printf(sb, "        a->s_%u = y %s a->s_%u ? y : a->s_%u;\n", id, mx ? ">" : "<", id, id);
        clf__sb_printf(sb, "        a->n_%u = y != y ? y : a->n_%u;\n", id, id);
        clf__sb_printf(sb, "        a->z_%u |= as_int%d(y) == %s;\n    }\n", id, vn, mx ? "0" : "(-2147483647 - 1)");
    } else if (n->attr.reduce.kind == CLF__REDUCE_SUM && sk == CLF__SUM_DOUBLE)
        clf__sb_printf(sb, "    a->s_%u += convert_double%d((float%d)(%s));\n", id, vn, vn, v);
    else if (n->attr.reduce.kind == CLF__REDUCE_SUM && sk == CLF__SUM_PLAIN)
        clf__sb_printf(sb, "    a->s_%u += (float%d)(%s);\n", id, vn, v);
    else if (n->attr.reduce.kind == CLF__REDUCE_SUM)
        clf__sb_printf(sb,
                       "    {\n        const float%d y = (float%d)(%s) - a->c_%u;\n        const float%d t = a->s_%u + y;\n"
                       "        a->c_%u = isfinite(t) ? (t - a->s_%u) - y : 0.0f;\n        a->s_%u = t;\n    }\n",
                       vn, vn, v, id, vn, id, id, id, id);
    else
        emit_acc_step(sb, n, id, CLF_F32, v, sk);
}

/* Lane l of vector accumulator b into a scalar accumulator t. */
static void vec_acc_lane(clf__strbuf *sb, const clf__node *n, uint32_t id, clf__sum_kind sk, int l)
{
    clf__sb_printf(sb, "        t.s_%u = b->s_%u.%s;\n", id, id, vec_lane(l));
    if (n->attr.reduce.kind == CLF__REDUCE_SUM && sk == CLF__SUM_KAHAN)
        clf__sb_printf(sb, "        t.c_%u = b->c_%u.%s;\n", id, id, vec_lane(l));
}

/* Online softmax. A kernel whose only reductions are M = max(A) and
 * S = sum(exp(A - M)) (softmax and log_softmax decomposed) can compute both
 * in one sweep: a running maximum, and a sum rescaled by exp(old - new)
 * whenever the maximum grows. Elements equal to -inf add nothing unless the
 * whole row is -inf, where the decomposition gives NaN (-inf - -inf), as the
 * finish reproduces. Returns true with M's and S's ids when the kernel has
 * that shape. */
static bool online_softmax_pair(const clf_graph *g, const clf__plan *plan, const clf__plan_kernel *K, uint32_t k,
                                uint32_t *m_out, uint32_t *s_out)
{
    uint32_t m = 0, sm = 0;
    int nred = 0;
    for (uint32_t i = 0; i < K->nops; i++) {
        uint32_t id = K->ops[i];
        const clf__node *n = clf__graph_node(g, id);
        if (n->op != CLF__OP_REDUCE || plan->producer[id] != (int32_t)k)
            continue;
        nred++;
        if (n->attr.reduce.kind == CLF__REDUCE_MAX && plan->stage[id] == 0 && n->dtype == CLF_F32)
            m = id;
        else if (n->attr.reduce.kind == CLF__REDUCE_SUM && plan->stage[id] == 1 && n->dtype == CLF_F32)
            sm = id;
    }
    if (nred != 2 || !m || !sm)
        return false;
    const clf__node *M = clf__graph_node(g, m), *S = clf__graph_node(g, sm);
    const clf__node *E = clf__graph_node(g, S->inputs[0]);
    if (E->op != CLF__OP_EXP)
        return false;
    const clf__node *D = clf__graph_node(g, E->inputs[0]);
    if (D->op != CLF__OP_SUB || D->inputs[0] != M->inputs[0])
        return false;
    const clf__node *A = clf__graph_node(g, M->inputs[0]);
    if (D->rank != A->rank || memcmp(D->shape, A->shape, (size_t)A->rank * sizeof *A->shape) != 0)
        return false;
    /* The subtrahend is M itself, seen through shape-only movement ops. */
    uint32_t b = D->inputs[1];
    for (;;) {
        if (b == m)
            break;
        const clf__node *B = clf__graph_node(g, b);
        if (B->op != CLF__OP_RESHAPE && B->op != CLF__OP_SQUEEZE && B->op != CLF__OP_UNSQUEEZE &&
            B->op != CLF__OP_EXPAND)
            return false;
        b = B->inputs[0];
    }
    *m_out = m;
    *s_out = sm;
    return true;
}

static void emit_online_fields(clf__strbuf *sb, uint32_t m, uint32_t s)
{
    clf__sb_printf(sb, "    float s_%u;\n    float s_%u;\n    int n_%u;\n", m, s, s);
}

static void emit_online_init(clf__strbuf *sb, uint32_t m, uint32_t s)
{
    clf__sb_printf(sb, "    a->s_%u = -INFINITY;\n    a->s_%u = 0.0f;\n    a->n_%u = 0;\n", m, s, s);
}

static void emit_online_step(clf__strbuf *sb, uint32_t m, uint32_t s, const char *v)
{
    clf__sb_printf(sb,
                   "    {\n        const float y = %s;\n        a->n_%u++;\n"
                   "        if (isnan(y) || isnan(a->s_%u)) {\n            a->s_%u = NAN;\n            a->s_%u = NAN;\n"
                   "        } else if (y > a->s_%u || (y == 0.0f && signbit(a->s_%u))) {\n"
                   "            a->s_%u = a->s_%u * exp(a->s_%u - y) + exp(y - y);\n"
                   "            a->s_%u = y;\n        } else if (y != -INFINITY) {\n            a->s_%u += exp(y - a->s_%u);\n"
                   "        }\n    }\n",
                   v, s, m, m, s, m, m, s, s, m, m, s, m);
}

static void emit_online_combine(clf__strbuf *sb, uint32_t m, uint32_t s)
{
    clf__sb_printf(sb,
                   "    a->n_%u += b->n_%u;\n"
                   "    if (isnan(a->s_%u) || isnan(b->s_%u)) {\n        a->s_%u = NAN;\n        a->s_%u = NAN;\n    } else {\n"
                   "        const float mx = a->s_%u > b->s_%u || (a->s_%u == b->s_%u && !signbit(a->s_%u)) ? a->s_%u : b->s_%u;\n"
                   "        a->s_%u = (a->s_%u == 0.0f ? 0.0f : a->s_%u * exp(a->s_%u - mx)) +\n"
                   "                (b->s_%u == 0.0f ? 0.0f : b->s_%u * exp(b->s_%u - mx));\n"
                   "        a->s_%u = mx;\n    }\n",
                   s, s, m, m, m, s, m, m, m, m, m, m, m, s, s, s, m, s, s, m, m);
}

static void emit_online_finish(clf__strbuf *sb, uint32_t m, uint32_t s)
{
    clf__sb_printf(sb, "    row->r_%u = a->s_%u;\n    row->r_%u = a->n_%u > 0 && a->s_%u == -INFINITY ? NAN : a->s_%u;\n", m, m, s,
                   s, m, s);
}

/* Appends a function's index temporaries and statements. */
static void append_fn_body(clf__strbuf *src, const clf__cg_fn *f, bool own_index)
{
    if (own_index)
        clf__sb_puts(src, clf__sb_str(&f->idx_code));
    clf__sb_puts(src, clf__sb_str(&f->body));
}

/* Whether store node id of kernel K is written over the full space (in
 * the epilogue), not once per row (clf_rowout). */
static bool full_store(const clf_graph *g, const clf__plan_kernel *K, uint32_t id)
{
    const clf__node *n = clf__graph_node(g, id);
    return n->op != CLF__OP_REDUCE && n->rank == K->rank &&
           memcmp(n->shape, K->shape, (size_t)n->rank * sizeof *n->shape) == 0;
}

/* Ops worth a store and a load to compute once (see carries). */
static bool costly(const clf__node *n) { return clf__op_info_of(n->op)->cost == CLF__COST_COSTLY; }

/* Adds to cy the next value worth carrying (see carries): the last op of
 * the kernel, in plan order, that is costly, f32 over the full space, not
 * carried yet, computed by the epilogue epi as now written and by one of
 * the stages, in the next f32 full-space output the kernel does not read.
 * False when there is none. */
static bool add_carry(red_ctx *rc, const clf__view *full, clf__cg_fn *stages, int nstages, clf__cg_fn *epi,
                      carries *cy)
{
    const clf__plan_kernel *K = rc->K;
    int f32_outputs = 0;
    uint32_t b = 0;
    for (uint32_t i = 0; i < K->nstores && f32_outputs <= cy->n; i++) {
        uint32_t id = K->stores[i].node;
        if (!full_store(rc->g, K, id) || clf__graph_node(rc->g, id)->dtype != CLF_F32)
            continue;
        b = K->stores[i].buffer;
        f32_outputs++;
    }
    if (cy->n == MAX_CARRIES || f32_outputs <= cy->n)
        return false;
    for (uint32_t j = 0; j < K->nreads; j++)
        if (K->reads[j] == b)
            return false;
    for (uint32_t j = K->nops; j-- > 0;) {
        uint32_t id = K->ops[j];
        const clf__node *n = clf__graph_node(rc->g, id);
        bool carried = false;
        for (int c = 0; c < cy->n; c++)
            carried = carried || cy->c[c].node == id;
        if (carried || !costly(n) || n->dtype != CLF_F32 || !full_store(rc->g, K, id) ||
            !clf__cg_known(epi, id, full))
            continue;
        for (int s = nstages; s-- > 0;)
            if (clf__cg_known(&stages[s], id, full)) {
                cy->c[cy->n].node = id;
                cy->c[cy->n].stage = s;
                cy->c[cy->n].buffer = b;
                cy->at = clf__view_linear(&rc->full_ix, full, K->rank, K->shape);
                cy->n++;
                return true;
            }
    }
    return false;
}

/* Appends the store of floatN value v to buffer b at index at for elements
 * r .. r+n-1: one vector store where they are consecutive, else lane by
 * lane. False when the index has no vector form. */
static bool vec_store(red_ctx *rc, clf__strbuf *sb, uint32_t b, const clf__ix *at, clf_dtype dt, int n, const char *v)
{
    char a[32];
    int st = clf__ix_unit_stride(&rc->full_ix, at, rc->r_bit);
    if (st == 0 || (st < 0 && (at->var || at->temp <= 0 || !note_gather(rc, at->temp))))
        return false;
    char val[160];
    snprintf(val, sizeof val, "(float%d)(%s)", n, v);
    if (st == 1) {
        clf__cg_store_vec(rc->plan, sb, dt, b, clf__ix_str(at, a, sizeof a), val, n, aligned_vec(rc, at, n));
    } else {
        clf__sb_printf(sb, "    {\n        const float%d y = %s;\n", n, val);
        for (int l = 0; l < n; l++) {
            char ix[64], lane[8];
            snprintf(ix, sizeof ix, "clf_at_t%d(x, r + %du, CLF_ARGS)", at->temp, l);
            snprintf(lane, sizeof lane, "y.%s", vec_lane(l));
            clf__sb_puts(sb, "    ");
            clf__cg_store(rc->plan, sb, dt, b, ix, lane);
        }
        clf__sb_puts(sb, "    }\n");
    }
    return true;
}

/* Warp shuffles for the GPU form's cross-lane step on NVIDIA (CLF_SHFL in
 * reduction_gpu.cl): clf_shfl<k>(a, m), stage k's accumulator of the lane
 * m lanes across, field by field, from the fields text emit_acc_fields and
 * emit_online_fields wrote for that stage ("    float s3, c3;\n    int i4;").
 * Appends to out and returns true, or false when a field's type has no
 * 32-bit shuffle (then the kernel combines in local memory). */
static bool shfl_fns(clf__strbuf *out, const clf__strbuf *fields, int k)
{
    clf__strbuf body = {0};
    for (const char *p = clf__sb_str(fields); *p;) {
        const char *end = strchr(p, '\n');
        if (!end)
            break;
        char type[16];
        int n = 0;
        if (sscanf(p, " %15s %n", type, &n) != 1 || (strcmp(type, "float") != 0 && strcmp(type, "int") != 0)) {
            clf__sb_free(&body);
            return false;
        }
        for (const char *q = p + n; q < end;) {
            int len = (int)strcspn(q, ",; \n");
            if (len)
                clf__sb_printf(&body, "    r.%.*s = clf_shfl_%s(a.%.*s, m);\n", len, q, type, len, q);
            q += len;
            while (q < end && (*q == ',' || *q == ';' || *q == ' '))
                q++;
        }
        p = end + 1;
    }
    clf__sb_printf(out, "static inline clf_acc%d clf_shfl%d(clf_acc%d a, int m)\n{\n    clf_acc%d r;\n%s    return r;\n}\n\n",
                   k, k, k, k, clf__sb_str(&body));
    bool ok = clf__sb_ok(&body);
    clf__sb_free(&body);
    return ok;
}

unsigned clf__codegen_inline_ptx_forms(const char *source)
{
    char on[32];
    snprintf(on, sizeof on, CLF__SHFL_LINE, 1);
    return (strstr(source, on) ? CLF__PTX_SHUFFLES : 0u) | (strstr(source, CLF__MMA_LINE) ? CLF__PTX_MMA : 0u);
}

bool clf__codegen_uses_inline_ptx(const char *source) { return clf__codegen_inline_ptx_forms(source) != 0; }

/* The 32-bit butterfly shuffles shfl_fns' functions use (PTX shfl.sync). */
static const char shfl_prims[] =
    "static inline float clf_shfl_float(float v, int m)\n{\n    float r;\n"
    "    asm volatile(\"shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;\" : \"=f\"(r) : \"f\"(v), \"r\"(m));\n"
    "    return r;\n}\n\n"
    "static inline int clf_shfl_int(int v, int m)\n{\n    int r;\n"
    "    asm volatile(\"shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;\" : \"=r\"(r) : \"r\"(v), \"r\"(m));\n"
    "    return r;\n}\n\n";

/* The epilogue's body (scalar): the carried values, if any, read first,
 * then every full-space store. Returns whether the kernel has any. */
static bool scalar_epilogue(red_ctx *rc, clf__cg_fn *epi, const clf__view *full, const carries *cy)
{
    const clf__plan_kernel *K = rc->K;
    char a[32], name[16];
    bool any = false;
    for (int c = 0; c < cy->n; c++) {
        snprintf(name, sizeof name, "cy%d", c);
        char rd[96];
        clf__sb_printf(&epi->body, "    const float %s = %s;\n", name,
                       clf__cg_load_expr(rc->plan, CLF_F32, cy->c[c].buffer, clf__ix_str(&cy->at, a, sizeof a), rd, sizeof rd));
        clf__cg_seed(epi, cy->c[c].node, full, name);
    }
    for (uint32_t i = 0; i < K->nstores; i++) {
        uint32_t id = K->stores[i].node;
        if (!full_store(rc->g, K, id))
            continue;
        char *v = clf__strdup(clf__cg_value(epi, id, full));
        clf__ix at = clf__view_linear(&rc->full_ix, full, K->rank, K->shape);
        if (!v) {
            epi->failed = true;
            return true;
        }
        clf__cg_store(rc->plan, &epi->body, clf__graph_node(rc->g, id)->dtype, K->stores[i].buffer, clf__ix_str(&at, a, sizeof a), v);
        clf__free(v);
        any = true;
    }
    return any;
}

/* The CPU form's vector loop: definitions of clf_vvals, clf_vload,
 * clf_vacc<k>, clf_vinit<k>, clf_vstep<k>, clf_vcombine<k> and
 * clf_vepilogue, the vector counterparts of the scalar functions over vn
 * consecutive elements r .. r+vn-1 of a row. Loads where those elements are
 * consecutive in memory are vector loads, others are gathered lane by lane;
 * stores likewise. Appends them to out and returns true, or returns false
 * when some value or reduction of the kernel has no vector form (then the
 * scalar loop does all the work). */
static bool vector_form(red_ctx *rc, uint32_t k, clf__ix x, const clf__view *full, int nstages, bool has_epilogue,
                        const carries *cy, clf__sum_kind sk, int vn, clf__strbuf *out)
{
    const clf_graph *g = rc->g;
    const clf__plan *plan = rc->plan;
    const clf__plan_kernel *K = rc->K;
    fn_ctx vctx = {rc, x, true};
    clf__cg_hooks vh = {.load = load_hook, .reduction = reduction_hook, .user = &vctx};
    clf__cg_fn fn[MAX_STAGES + 1]; /* the stages, then the epilogue */
    clf__strbuf accs[MAX_STAGES] = {{0}}, lanes[MAX_STAGES] = {{0}}, fixes[MAX_STAGES] = {{0}}, load = {0};
    bool ok = true;
    for (int s = 0; s <= MAX_STAGES; s++) {
        clf__cg_fn_init(&fn[s], g, plan, k, &vh);
        fn[s].ix = &rc->full_ix;
        fn[s].vec = vn;
    }
    clf__cg_fn *epi = &fn[MAX_STAGES];
    for (uint32_t i = 0; i < K->nops && ok; i++) {
        uint32_t id = K->ops[i];
        const clf__node *n = clf__graph_node(g, id);
        if (n->op != CLF__OP_REDUCE || plan->producer[id] != (int32_t)k)
            continue;
        int s = plan->stage[id];
        clf_dtype in_dt = clf__graph_node(g, n->inputs[0])->dtype;
        if (s < 0 || s >= nstages || !vec_acc_ok(n, in_dt)) {
            ok = false;
            break;
        }
        char *v = clf__strdup(clf__cg_value(&fn[s], n->inputs[0], full));
        if (!v) {
            ok = false;
            break;
        }
        vec_acc_step(&fn[s].body, n, id, v, sk, vn, rc->split_minmax);
        clf__free(v);
        vec_acc_fields(&accs[s], n, id, sk, vn, rc->split_minmax);
        vec_acc_fix(&fixes[s], n, id, rc->split_minmax);
    }
    /* Each lane's partial results of every reduction of a stage, combined
     * into the scalar accumulator as one more partial accumulator. */
    for (int s = 0; s < nstages && ok; s++)
        for (int l = 0; l < vn; l++) {
            clf__sb_printf(&lanes[s], "    {\n        clf_acc%d t;\n", s);
            for (uint32_t i = 0; i < K->nops; i++) {
                uint32_t id = K->ops[i];
                const clf__node *n = clf__graph_node(g, id);
                if (n->op == CLF__OP_REDUCE && plan->producer[id] == (int32_t)k && plan->stage[id] == s)
                    vec_acc_lane(&lanes[s], n, id, sk, l);
            }
            clf__sb_printf(&lanes[s], "        clf_combine%d(a, &t);\n    }\n", s);
        }
    for (int c = 0; c < cy->n && ok; c++) {
        /* A stage stores each carried value, the epilogue reads it back:
         * both or neither, or the scalar loop does the work. */
        const char *known = clf__cg_known(&fn[cy->c[c].stage], cy->c[c].node, full);
        char *v = known ? clf__strdup(known) : NULL;
        char name[16];
        ok = v && vec_store(rc, &fn[cy->c[c].stage].body, cy->c[c].buffer, &cy->at, CLF_F32, vn, v);
        clf__free(v);
        snprintf(name, sizeof name, "cy%d", c);
        clf__sb_printf(&epi->body, "    const float%d %s = ", vn, name);
        ok = ok && vec_load_expr(rc, &epi->body, cy->c[c].buffer, &cy->at, CLF_F32, vn);
        clf__sb_puts(&epi->body, ";\n");
        clf__cg_seed(epi, cy->c[c].node, full, name);
    }
    for (uint32_t i = 0; i < K->nstores && ok; i++) {
        uint32_t id = K->stores[i].node;
        if (!full_store(g, K, id))
            continue; /* stored once per row, by clf_rowout */
        clf_dtype sdt = clf__graph_node(g, id)->dtype;
        char *v = clf__dtype_compute(sdt) == CLF_F32 ? clf__strdup(clf__cg_value(epi, id, full)) : NULL;
        clf__ix at = clf__view_linear(&rc->full_ix, full, K->rank, K->shape);
        ok = v && vec_store(rc, &epi->body, K->stores[i].buffer, &at, sdt, vn, v);
        clf__free(v);
    }
    for (size_t s = 0; s < rc->nslots && ok; s++) {
        if (clf__dtype_compute(rc->slots[s].dtype) != CLF_F32) {
            ok = false;
            break;
        }
        clf__sb_printf(&load, "    v->l%zu = ", s);
        ok = vec_load_expr(rc, &load, rc->slots[s].buffer, &rc->slots[s].index, rc->slots[s].dtype, vn);
        clf__sb_puts(&load, ";\n");
    }
    for (int s = 0; s <= MAX_STAGES; s++)
        ok = ok && !fn[s].failed && !fn[s].novec;
    for (int s = 0; s < MAX_STAGES; s++)
        ok = ok && clf__sb_ok(&accs[s]) && clf__sb_ok(&lanes[s]) && clf__sb_ok(&fixes[s]);
    ok = ok && !rc->full_ix.failed;
    if (ok) {
        for (int i = 0; i < rc->ngathers; i++)
            clf__sb_printf(out, "static inline IDX_T clf_at_t%d(IDX_T x, IDX_T r, CLF_PARAMS)\n{\n    CLF_FULL_INDEX\n    return t%d;\n}\n\n",
                           rc->gathers[i], rc->gathers[i]);
        clf__sb_puts(out, "typedef struct {\n");
        for (size_t s = 0; s < rc->nslots; s++)
            clf__sb_printf(out, "    float%d l%zu;\n", vn, s);
        if (rc->nslots == 0)
            clf__sb_puts(out, "    uchar unused;\n");
        clf__sb_puts(out, "} clf_vvals;\n\n");
        clf__sb_printf(out, "static inline void clf_vload(IDX_T x, IDX_T r, clf_vvals *v, CLF_PARAMS)\n{\n    "
                            "CLF_FULL_INDEX\n%s}\n\n", clf__sb_str(&load));
        for (int s = 0; s < nstages; s++) {
            clf__sb_printf(out, "typedef struct {\n%s} clf_vacc%d;\n\n", clf__sb_str(&accs[s]), s);
            clf__sb_printf(out, "static inline void clf_vinit%d(clf_vacc%d *a)\n{\n", s, s);
            for (uint32_t i = 0; i < K->nops; i++) {
                const clf__node *n = clf__graph_node(g, K->ops[i]);
                if (n->op == CLF__OP_REDUCE && plan->stage[K->ops[i]] == s && plan->producer[K->ops[i]] == (int32_t)k)
                    vec_acc_init(out, n, K->ops[i], sk, rc->split_minmax);
            }
            clf__sb_printf(out, "}\n\nstatic inline void clf_vstep%d(clf_vacc%d *a, const clf_row *row, const clf_vvals *v, "
                                "IDX_T x, IDX_T r, CLF_PARAMS)\n{\n    CLF_FULL_INDEX\n", s, s);
            append_fn_body(out, &fn[s], false);
            clf__sb_printf(out, "}\n\nstatic inline void clf_vcombine%d(clf_acc%d *a, const clf_vacc%d *b)\n{\n", s, s, s);
            if (fixes[s].len)
                clf__sb_printf(out, "    clf_vacc%d f = *b;\n%s    b = &f;\n", s, clf__sb_str(&fixes[s]));
            clf__sb_printf(out, "%s}\n\n", clf__sb_str(&lanes[s]));
        }
        if (has_epilogue) {
            clf__sb_puts(out, "static inline void clf_vepilogue(const clf_row *row, const clf_vvals *v, IDX_T x, IDX_T r, "
                              "CLF_PARAMS)\n{\n    CLF_FULL_INDEX\n");
            append_fn_body(out, epi, false);
            clf__sb_puts(out, "}\n\n");
        }
        ok = clf__sb_ok(out);
    }
    for (int s = 0; s <= MAX_STAGES; s++)
        clf__cg_fn_free(&fn[s]);
    for (int s = 0; s < MAX_STAGES; s++) {
        clf__sb_free(&accs[s]);
        clf__sb_free(&lanes[s]);
        clf__sb_free(&fixes[s]);
    }
    ok = ok && clf__sb_ok(&load);
    clf__sb_free(&load);
    return ok;
}

clf_status clf__codegen_reduction(const clf_graph *g, const clf__plan *plan, uint32_t k,
                                  const clf__codegen_target *target, clf__kernel_code *out, char *err,
                                  size_t errlen)
{
    const clf__plan_kernel *K = &plan->kernels[k];
    clf_status st = CLF_ERR_OUT_OF_MEMORY;
    red_ctx rc = {.g = g, .plan = plan, .K = K};
    clf__cg_fn stage_fn[MAX_STAGES], epi_fn, row_fn;
    fn_ctx full_ctx, row_ctx;
    clf__strbuf src = {0}, vdefs = {0}, accs[MAX_STAGES] = {{0}};
    carries cy = {.n = 0};
    clf__strbuf shfl_defs = {0};
    int nstages = 0;
    bool has_epilogue = false, fns_ready = false, shfl = false;
    memset(out, 0, sizeof *out);

    clf__ixgen_init(&rc.full_ix, &rc.full_idx, 0);
    clf__ix x = clf__ixgen_var(&rc.full_ix, "x", (uint64_t)K->rows);
    clf__ix r = clf__ixgen_var(&rc.full_ix, "r", (uint64_t)K->rlen);
    rc.r_bit = r.deps;
    clf__view full;
    clf__view_reduction(&rc.full_ix, K->rank, K->shape, K->reduce_mask, x, r, &full);

    full_ctx = (fn_ctx){&rc, x, true};
    clf__cg_hooks fh = {.load = load_hook, .reduction = reduction_hook, .user = &full_ctx};
    for (int s = 0; s < MAX_STAGES; s++) {
        clf__cg_fn_init(&stage_fn[s], g, plan, k, &fh);
        stage_fn[s].ix = &rc.full_ix;
    }
    clf__cg_fn_init(&epi_fn, g, plan, k, &fh);
    epi_fn.ix = &rc.full_ix;
    clf__cg_hooks rh = {.load = load_hook, .reduction = reduction_hook, .user = &row_ctx};
    clf__cg_fn_init(&row_fn, g, plan, k, &rh);
    row_ctx = (fn_ctx){&rc, clf__ixgen_var(row_fn.ix, "x", (uint64_t)K->rows), false};
    fns_ready = true;

    /* How rows are swept (schedule.h), then the stages: each reduction
     * accumulates its input at the full view. */
    uint32_t on_m = 0, on_s = 0;
    clf__reduction_facts facts = {.rows = (uint64_t)K->rows, .rlen = (uint64_t)K->rlen, .vector_ok = true};
    facts.online_pair = online_softmax_pair(g, plan, K, k, &on_m, &on_s);
    clf__schedule sched;
    clf__schedule_reduction_sweeps(&facts, target, &sched);
    const bool online = sched.online_softmax;
    const clf__sum_kind sk = sched.sum;
    for (uint32_t i = 0; i < K->nops; i++) {
        uint32_t id = K->ops[i];
        const clf__node *n = clf__graph_node(g, id);
        if (n->op != CLF__OP_REDUCE || plan->producer[id] != (int32_t)k || (online && id == on_s))
            continue;
        if (online && id == on_m) {
            nstages = 1;
            char *v = clf__strdup(clf__cg_value(&stage_fn[0], n->inputs[0], &full));
            if (!v)
                goto done;
            emit_online_step(&stage_fn[0].body, on_m, on_s, v);
            clf__free(v);
            emit_online_fields(&accs[0], on_m, on_s);
            continue;
        }
        int s = plan->stage[id];
        if (s < 0 || s >= MAX_STAGES) {
            snprintf(err, errlen, "codegen: kernel %u: reduction node %u has stage %d", k, id, s);
            st = CLF_ERR_INTERNAL;
            goto done;
        }
        if (s + 1 > nstages)
            nstages = s + 1;
        clf_dtype in_dt = clf__graph_node(g, n->inputs[0])->dtype;
        char *v = clf__strdup(clf__cg_value(&stage_fn[s], n->inputs[0], &full));
        if (!v)
            goto done;
        emit_acc_step(&stage_fn[s].body, n, id, in_dt, v, sk);
        clf__free(v);
        emit_acc_fields(&accs[s], n, id, in_dt, sk);
    }

    /* Stores: full-space values in the epilogue, the rest once per row. */
    clf__view at_x = {.linear = true, .lin = row_ctx.x};
    has_epilogue = scalar_epilogue(&rc, &epi_fn, &full, &cy);
    for (uint32_t i = 0; i < K->nstores; i++) {
        uint32_t id = K->stores[i].node;
        if (full_store(g, K, id))
            continue;
        char *v = clf__strdup(clf__cg_value(&row_fn, id, &at_x));
        if (!v)
            goto done;
        clf__cg_store(plan, &row_fn.body, clf__graph_node(g, id)->dtype, K->stores[i].buffer, "x", v);
        clf__free(v);
    }
    /* CPU devices: costly values the epilogue shares with a stage are
     * carried (see carries), one at a time, the epilogue rewritten after
     * each (a carried value may leave another unneeded). */
    while (target->cpu && has_epilogue && !online && add_carry(&rc, &full, stage_fn, nstages, &epi_fn, &cy)) {
        clf__cg_fn_free(&epi_fn);
        clf__cg_fn_init(&epi_fn, g, plan, k, &fh);
        epi_fn.ix = &rc.full_ix;
        scalar_epilogue(&rc, &epi_fn, &full, &cy);
    }
    for (int c = 0; c < cy.n; c++) {
        char a[32];
        const char *known = clf__cg_known(&stage_fn[cy.c[c].stage], cy.c[c].node, &full);
        char *v = known ? clf__strdup(known) : NULL; /* add_carry found it there */
        if (!v)
            goto done;
        clf__cg_store(plan, &stage_fn[cy.c[c].stage].body, CLF_F32, cy.c[c].buffer, clf__ix_str(&cy.at, a, sizeof a), v);
        clf__free(v);
    }
    bool failed = rc.full_ix.failed || row_fn.ix->failed || epi_fn.failed || row_fn.failed;
    for (int s = 0; s < MAX_STAGES; s++)
        failed = failed || stage_fn[s].failed;
    if (failed) {
        snprintf(err, errlen,
                 "codegen: kernel %u: a reduction result is read away from its row, or out of memory", k);
        st = CLF_ERR_INTERNAL;
        goto done;
    }

    /* Parameters: buffers read, then buffers written. */
    if (!clf__cg_params(K, &out->params, &out->nparams))
        goto done;
    out->wide_index = clf__cg_wide_index(g, plan, K, (uint64_t)K->rows * (uint64_t)K->rlen);

    /* The form and its geometry (schedule.h), from what the functions
     * written above need. */
    facts.nstages = nstages;
    facts.has_epilogue = has_epilogue;
    for (uint32_t i = 0; i < K->nops; i++)
        facts.nreductions += clf__graph_node(g, K->ops[i])->op == CLF__OP_REDUCE && plan->producer[K->ops[i]] == (int32_t)k;
    facts.nslots = rc.nslots;
    facts.shuffle_ok = target->warp_shuffle && !target->cpu;
    for (int s = 0; s < nstages && facts.shuffle_ok; s++)
        facts.shuffle_ok = shfl_fns(&shfl_defs, &accs[s], s);
    if ((st = clf__schedule_reduction_launch(&facts, target, k, &sched, err, errlen)) != CLF_OK)
        goto done;
    rc.split_minmax = target->cpu;
    if (sched.vec > 1) {
        rc.aligned_access = !target->cpu;
        if (!vector_form(&rc, k, full_ctx.x, &full, nstages, has_epilogue, &cy, sk, sched.vec, &vdefs)) {
            clf__sb_clear(&vdefs);
            facts.vector_ok = false; /* the scalar form, chosen again */
            if ((st = clf__schedule_reduction_launch(&facts, target, k, &sched, err, errlen)) != CLF_OK)
                goto done;
        }
    }
    st = CLF_ERR_OUT_OF_MEMORY; /* until the source is written */
    const int vec = sched.vec;
    const uint64_t split = sched.split, chunk = sched.chunk, wg = sched.wg, lanes = sched.lanes;
    const uint64_t cache = sched.cache;
    shfl = sched.warp_shuffle;
    clf__reduction_geometry(&sched, (uint64_t)K->rows, target->cpu, &out->global, &out->local, &out->final_global,
                            &out->final_local);
    if (split > 1)
        out->scratch_bytes = (uint64_t)K->rows * split * 16u * (uint64_t)facts.nreductions;
    out->vec = 1;
    out->items = 1;
    out->schedule = sched;

    out->entry = clf__cg_kernel_name(g, K->ops, K->nops, cache ? "clf_per" : "clf_red");
    out->ops = clf__cg_op_list(g, K->ops, K->nops);
    if (!out->entry || !out->ops)
        goto done;

    /* The generated definitions. */
    clf__cg_source_header(&src, g, K, out->entry, out->ops);
    if (sk == CLF__SUM_DOUBLE)
        clf__sb_puts(&src, "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n");
    clf__sb_printf(&src, "#define IDX_T %s\n#define RLEN %lluu\n#define NSTAGES %d\n#define HAS_EPILOGUE %d\n",
                   out->wide_index ? "ulong" : "uint", (unsigned long long)K->rlen, nstages, has_epilogue);
    if (target->cpu)
        clf__sb_printf(&src, "#define ROWS_PER_ITEM %lluu\n#define ACCS %d\n#define VEC %d\n#define VACCS %d\n",
                       (unsigned long long)(sched.rows_per_item > 1 ? sched.rows_per_item : 1), CLF__CPU_ACCUMULATORS,
                       vec, CLF__CPU_VACCS);
    if (split > 1) {
        out->final_name = clf__cg_final_name(out->entry);
        if (!out->final_name)
            goto done;
        clf__sb_printf(&src, "#define SPLIT %lluu\n#define CHUNK %lluu\n#define SPLIT_GPU %d\n#define WG %llu\n"
                             "#define CLF_FINAL_NAME %s\n",
                       (unsigned long long)split, (unsigned long long)chunk, !target->cpu, (unsigned long long)wg,
                       out->final_name);
    } else if (!target->cpu) {
        clf__sb_printf(&src, "#define WG %llu\n#define LANES %llu\n#define CACHE %d\n#define VEC %d\n" CLF__SHFL_LINE,
                       (unsigned long long)wg, (unsigned long long)lanes, (int)cache, vec, shfl);
    }
    clf__cg_signature(&src, g, plan, out->entry, out->params, out->nparams, K->nreads);
    clf__cg_gather_defs(&src, g, plan, K);
    clf__sb_puts(&src, "\n/* Index temporaries of the full space, shared by clf_load, clf_step<k> and clf_epilogue. */\n");
    clf__sb_puts(&src, "#define CLF_FULL_INDEX");
    for (const char *p = clf__sb_str(&rc.full_idx); *p; p++) {
        if (*p == '\n')
            clf__sb_puts(&src, " \\\n");
        else
            clf__sb_putn(&src, p, 1);
    }
    clf__sb_puts(&src, "\n\ntypedef struct {\n");
    int nres = 0;
    for (uint32_t i = 0; i < K->nops; i++) {
        const clf__node *n = clf__graph_node(g, K->ops[i]);
        if (n->op == CLF__OP_REDUCE && plan->producer[K->ops[i]] == (int32_t)k) {
            clf__sb_printf(&src, "    %s r_%u;\n", clf__cg_ctype(n->dtype), K->ops[i]);
            nres++;
        }
    }
    clf__sb_puts(&src, "} clf_row;\n\ntypedef struct {\n");
    for (size_t s = 0; s < rc.nslots; s++)
        clf__sb_printf(&src, "    %s l%zu;\n", clf__cg_ctype(rc.slots[s].dtype), s);
    if (rc.nslots == 0)
        clf__sb_puts(&src, "    uchar unused;\n");
    clf__sb_puts(&src, "} clf_vals;\n\n");
    clf__sb_puts(&src, "static inline void clf_load(IDX_T x, IDX_T r, clf_vals *v, CLF_PARAMS)\n{\n    CLF_FULL_INDEX\n");
    for (size_t s = 0; s < rc.nslots; s++) {
        char a[96];
        clf__sb_printf(&src, "    v->l%zu = %s;\n", s,
                       clf__cg_read_expr(plan, rc.slots[s].buffer, &rc.slots[s].index, rc.slots[s].dtype, a, sizeof a));
    }
    clf__sb_puts(&src, "}\n\n");
    for (int s = 0; s < nstages; s++) {
        clf__sb_printf(&src, "typedef struct {\n%s} clf_acc%d;\n\n", clf__sb_str(&accs[s]), s);
        clf__sb_printf(&src, "static inline void clf_init%d(clf_acc%d *a)\n{\n", s, s);
        clf__strbuf tmp = {0};
        for (uint32_t i = 0; i < K->nops; i++) {
            const clf__node *n = clf__graph_node(g, K->ops[i]);
            if (online && K->ops[i] == on_m && s == 0)
                emit_online_init(&src, on_m, on_s);
            else if (n->op == CLF__OP_REDUCE && plan->stage[K->ops[i]] == s && plan->producer[K->ops[i]] == (int32_t)k &&
                     !(online && (K->ops[i] == on_m || K->ops[i] == on_s)))
                emit_acc_init(&src, n, K->ops[i], clf__graph_node(g, n->inputs[0])->dtype, sk);
        }
        clf__sb_printf(&src, "}\n\nstatic inline void clf_step%d(clf_acc%d *a, const clf_row *row, const clf_vals *v, "
                             "IDX_T x, IDX_T r, CLF_PARAMS)\n{\n    CLF_FULL_INDEX\n", s, s);
        append_fn_body(&src, &stage_fn[s], false);
        clf__sb_printf(&src, "}\n\nstatic inline void clf_combine%d(clf_acc%d *a, const clf_acc%d *b)\n{\n", s, s, s);
        for (uint32_t i = 0; i < K->nops; i++) {
            const clf__node *n = clf__graph_node(g, K->ops[i]);
            if (online && K->ops[i] == on_m && s == 0)
                emit_online_combine(&tmp, on_m, on_s);
            else if (n->op == CLF__OP_REDUCE && plan->stage[K->ops[i]] == s && plan->producer[K->ops[i]] == (int32_t)k &&
                     !(online && (K->ops[i] == on_m || K->ops[i] == on_s)))
                emit_acc_combine(&tmp, n, K->ops[i], clf__graph_node(g, n->inputs[0])->dtype, sk);
        }
        clf__sb_puts(&src, clf__sb_str(&tmp));
        clf__sb_clear(&tmp);
        clf__sb_printf(&src, "}\n\nstatic inline void clf_finish%d(clf_row *row, const clf_acc%d *a)\n{\n", s, s);
        for (uint32_t i = 0; i < K->nops; i++) {
            const clf__node *n = clf__graph_node(g, K->ops[i]);
            if (online && K->ops[i] == on_m && s == 0)
                emit_online_finish(&src, on_m, on_s);
            else if (n->op == CLF__OP_REDUCE && plan->stage[K->ops[i]] == s && plan->producer[K->ops[i]] == (int32_t)k &&
                     !(online && (K->ops[i] == on_m || K->ops[i] == on_s)))
                emit_acc_finish(&src, n, K->ops[i], clf__graph_node(g, n->inputs[0])->dtype, sk);
        }
        clf__sb_puts(&src, "}\n\n");
        if (!clf__sb_ok(&tmp))
            src.failed = true;
        clf__sb_free(&tmp);
    }
    if (has_epilogue) {
        clf__sb_puts(&src, "static inline void clf_epilogue(const clf_row *row, const clf_vals *v, IDX_T x, IDX_T r, "
                           "CLF_PARAMS)\n{\n    CLF_FULL_INDEX\n");
        append_fn_body(&src, &epi_fn, false);
        clf__sb_puts(&src, "}\n\n");
    }
    clf__sb_puts(&src, "static inline void clf_rowout(const clf_row *row, IDX_T x, CLF_PARAMS)\n{\n");
    append_fn_body(&src, &row_fn, true);
    clf__sb_puts(&src, "}\n\n");
    if (vec > 1)
        clf__sb_puts(&src, clf__sb_str(&vdefs));
    if (shfl) {
        clf__sb_puts(&src, shfl_prims);
        clf__sb_puts(&src, clf__sb_str(&shfl_defs));
    }
    (void)nres;
    const char *tname = split > 1 ? "split" : target->cpu ? "cpu" : "gpu";
    clf__sb_printf(&src, "/* ---- kernels_templates/reduction_%s.cl ---- */\n", tname);
    clf__sb_puts(&src, split > 1    ? clf__template_reduction_split
                       : target->cpu ? clf__template_reduction_cpu
                                     : clf__template_reduction_gpu);
    if (!clf__sb_ok(&src))
        goto done;
    out->source = clf__text_take(&src);
    if (!out->source)
        goto done;
    st = CLF_OK;

done:
    if (st == CLF_ERR_OUT_OF_MEMORY)
        snprintf(err, errlen, "codegen: kernel %u: out of memory", k);
    if (st != CLF_OK)
        clf__kernel_code_free(out);
    if (fns_ready) {
        for (int s = 0; s < MAX_STAGES; s++)
            clf__cg_fn_free(&stage_fn[s]);
        clf__cg_fn_free(&epi_fn);
        clf__cg_fn_free(&row_fn);
    }
    for (int s = 0; s < MAX_STAGES; s++)
        clf__sb_free(&accs[s]);
    clf__ixgen_free(&rc.full_ix);
    clf__sb_free(&rc.full_idx);
    clf__free(rc.slots);
    clf__sb_free(&src);
    clf__sb_free(&vdefs);
    clf__sb_free(&shfl_defs);
    return st;
}
