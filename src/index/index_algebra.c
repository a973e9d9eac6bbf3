#include "index/index_algebra.h"
#include "util/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void clf__ixgen_init(clf__ixgen *gen, clf__strbuf *code, uint64_t numel)
{
    memset(gen, 0, sizeof *gen);
    gen->code = code;
    gen->ntemps = 1; /* t0 is i */
    (void)numel;
}

void clf__ixgen_free(clf__ixgen *gen)
{
    for (int i = 0; i < gen->ntemps; i++)
        if (gen->keys)
            clf__free(gen->keys[i]);
    clf__free(gen->keys);
    clf__free(gen->origin);
    memset(gen, 0, sizeof *gen);
}

clf__ix clf__ix_const(int64_t c) { return (clf__ix){-1, c, (uint64_t)c + 1, 0, NULL}; }

clf__ix clf__ix_i(uint64_t bound) { return (clf__ix){0, 0, bound, 1, "i"}; }

const char *clf__ix_str(const clf__ix *x, char *buf, size_t cap)
{
    if (x->temp < 0)
        snprintf(buf, cap, "%lld", (long long)x->c);
    else if (x->var)
        snprintf(buf, cap, "%s", x->var);
    else
        snprintf(buf, cap, "t%d", x->temp);
    return buf;
}

/* Returns the temporary named by expression expr, emitting it on first use. */
static clf__ix temp_for(clf__ixgen *gen, const char *expr, uint64_t bound, uint32_t deps,
                        clf__ix_origin origin)
{
    for (int i = 1; i < gen->ntemps; i++)
        if (gen->keys[i] && strcmp(gen->keys[i], expr) == 0)
            return (clf__ix){i, 0, bound, deps, NULL};
    if (gen->ntemps >= gen->cap) {
        int cap = gen->cap ? gen->cap * 2 : 32;
        /* Each array's new slots are cleared as soon as it has them: when
         * the other's growth fails, clf__ixgen_free still frees keys. */
        char **k = clf__realloc(gen->keys, (size_t)cap * sizeof *k);
        if (k) {
            gen->keys = k;
            for (int i = gen->cap; i < cap; i++)
                k[i] = NULL;
        }
        clf__ix_origin *o = clf__realloc(gen->origin, (size_t)cap * sizeof *o);
        if (o) {
            gen->origin = o;
            for (int i = gen->cap; i < cap; i++)
                o[i] = (clf__ix_origin){0};
        }
        if (!k || !o) {
            gen->failed = true;
            return clf__ix_const(0);
        }
        gen->cap = cap;
    }
    char *dup = clf__malloc(strlen(expr) + 1);
    if (!dup) {
        gen->failed = true;
        return clf__ix_const(0);
    }
    strcpy(dup, expr);
    int t = gen->ntemps++;
    gen->keys[t] = dup;
    gen->origin[t] = origin;
    clf__sb_printf(gen->code, "    const IDX_T t%d = %s;\n", t, expr);
    return (clf__ix){t, 0, bound, deps, NULL};
}

static clf__ix_origin origin_of(const clf__ixgen *gen, const clf__ix *x)
{
    if (x->temp > 0 && x->temp < gen->ntemps && !x->var)
        return gen->origin[x->temp];
    return (clf__ix_origin){0};
}

bool clf__ix_same(const clf__ix *a, const clf__ix *b)
{
    /* An index below 1 is 0 whatever its name: the row x of a region with
     * one row, say, is the constant 0 a rank-1 reduction's result is read at. */
    bool za = a->temp < 0 ? a->c == 0 : a->bound <= 1, zb = b->temp < 0 ? b->c == 0 : b->bound <= 1;
    if (za || zb)
        return za && zb;
    if (a->temp < 0 || b->temp < 0)
        return a->temp < 0 && b->temp < 0 && a->c == b->c;
    return a->temp == b->temp;
}

/* c + the sum of terms[j] * strides[j] over n terms (none constant,
 * strides > 0), a temporary below bound that division and modulus see
 * through (ix_div, ix_mod); one term of stride 1 and no constant is that
 * term. */
static clf__ix ix_sum(clf__ixgen *gen, int n, const clf__ix *terms, const int64_t *strides, int64_t c,
                      uint64_t bound)
{
    if (n == 0)
        return clf__ix_const(c);
    if (n == 1 && strides[0] == 1 && c == 0)
        return terms[0];
    clf__strbuf e = {0};
    clf__ix_origin o = {.kind = CLF__IX_SUM, .nterms = n, .c = c};
    uint32_t deps = 0;
    for (int j = 0; j < n; j++) {
        char a[32];
        if (j)
            clf__sb_puts(&e, " + ");
        if (strides[j] == 1)
            clf__sb_puts(&e, clf__ix_str(&terms[j], a, sizeof a));
        else
            clf__sb_printf(&e, "%s * %lldu", clf__ix_str(&terms[j], a, sizeof a), (long long)strides[j]);
        o.terms[j] = terms[j];
        o.strides[j] = strides[j];
        deps |= terms[j].deps;
    }
    if (c)
        clf__sb_printf(&e, " + %lldu", (long long)c);
    clf__ix r = clf__ix_const(0);
    if (clf__sb_ok(&e))
        r = temp_for(gen, clf__sb_str(&e), bound, deps, o);
    else
        gen->failed = true;
    clf__sb_free(&e);
    return r;
}

/* The part of sum origin o below d, when the terms of strides under d
 * (and c % d) stay below d and every other stride is a multiple of d:
 * then o / d is the high part's sum over d and o % d the low part's.
 * *high gets the terms of strides over d (strides divided by d), *low
 * the others; false when o does not split at d. */
typedef struct sum_part {
    int n;
    clf__ix terms[CLF_MAX_RANK];
    int64_t strides[CLF_MAX_RANK];
    int64_t c;
    uint64_t bound;
} sum_part;

static bool sum_split(const clf__ix_origin *o, int64_t d, sum_part *high, sum_part *low)
{
    if (o->kind != CLF__IX_SUM || o->c < 0 || d <= 0)
        return false;
    *high = (sum_part){.c = o->c / d};
    *low = (sum_part){.c = o->c % d};
    uint64_t low_max = (uint64_t)low->c, high_max = (uint64_t)high->c;
    for (int j = 0; j < o->nterms; j++) {
        uint64_t top = o->terms[j].bound ? o->terms[j].bound - 1 : 0;
        if (o->strides[j] >= d) {
            if (o->strides[j] % d)
                return false;
            high->terms[high->n] = o->terms[j];
            high->strides[high->n++] = o->strides[j] / d;
            high_max += top * (uint64_t)(o->strides[j] / d);
        } else {
            low->terms[low->n] = o->terms[j];
            low->strides[low->n++] = o->strides[j];
            low_max += top * (uint64_t)o->strides[j];
        }
    }
    high->bound = high_max + 1;
    low->bound = low_max + 1;
    return low_max < (uint64_t)d;
}

/* x / d. */
static clf__ix ix_div(clf__ixgen *gen, clf__ix x, int64_t d)
{
    if (d <= 0) /* only in zero-size regions, which never run */
        return clf__ix_const(0);
    if (d == 1)
        return x;
    uint64_t bound = (x.bound + (uint64_t)d - 1) / (uint64_t)d;
    if (x.temp < 0)
        return clf__ix_const(x.c / d);
    if (bound <= 1)
        return clf__ix_const(0);
    /* A linear index a * k + b with b < k (a reduction row's element: x *
     * rlen + r) splits at k: dividing by a multiple of k reads a alone (an
     * outer axis of the row, in terms of x), by a divisor of k leaves a *
     * (k / d) + b / d (an axis within the row, where b / d is r's). */
    clf__ix_origin o = origin_of(gen, &x);
    if (o.kind == CLF__IX_MAD && o.k > 0 && d % o.k == 0 && o.b.bound <= (uint64_t)o.k)
        return ix_div(gen, o.a, d / o.k); /* (a * k + b) / (k * q) = a / q for b < k */
    if (o.kind == CLF__IX_MAD && o.k > 0 && o.k % d == 0)
        return clf__ix_mad(gen, o.a, o.k / d, ix_div(gen, o.b, d)); /* exact: d divides a * k */
    if (o.kind == CLF__IX_SUM && o.c >= 0) {
        /* (a * s + rest) / (s * q) = a / q, for the term of the largest
         * stride s and the rest below s (a view's linear index divided
         * past its outer axis: a GQA head's K read as bt * S * D + n * D +
         * d, divided by the group's elements, is bt / group). */
        int top = 0;
        for (int j = 1; j < o.nterms; j++)
            if (o.strides[j] > o.strides[top])
                top = j;
        const int64_t s = o.strides[top];
        uint64_t rest = (uint64_t)o.c;
        for (int j = 0; j < o.nterms && rest < (uint64_t)s; j++)
            if (j != top) {
                const uint64_t top_j = o.terms[j].bound ? o.terms[j].bound - 1 : 0;
                rest = top_j > ((uint64_t)s - rest) / (uint64_t)o.strides[j] ? (uint64_t)s
                                                                                : rest + top_j * (uint64_t)o.strides[j];
            }
        if (s > 0 && d % s == 0 && rest < (uint64_t)s)
            return ix_div(gen, o.terms[top], d / s);
    }
    sum_part high, low;
    if (sum_split(&o, d, &high, &low)) /* a view's linear index: the axes outside d */
        return ix_sum(gen, high.n, high.terms, high.strides, high.c, high.bound < bound ? high.bound : bound);
    char a[32], e[96];
    snprintf(e, sizeof e, "%s / %lldu", clf__ix_str(&x, a, sizeof a), (long long)d);
    return temp_for(gen, e, bound, x.deps,
                    (clf__ix_origin){.kind = CLF__IX_DIVMOD, .a = x, .b = clf__ix_const(0), .k = d});
}

/* x % m, elided when x < m already. */
static clf__ix ix_mod(clf__ixgen *gen, clf__ix x, int64_t m)
{
    if (m <= 0) /* only in zero-size regions, which never run */
        return clf__ix_const(0);
    if (x.bound <= (uint64_t)m)
        return x;
    if (m == 1)
        return clf__ix_const(0);
    if (x.temp < 0)
        return clf__ix_const(x.c % m);
    clf__ix_origin o = origin_of(gen, &x), rec;
    if (o.kind == CLF__IX_MAD && o.k > 0 && o.k % m == 0)
        return ix_mod(gen, o.b, m); /* (a * k + b) % m = b % m where m divides k */
    if (o.kind == CLF__IX_MAD && o.k > 0 && m % o.k == 0 && o.b.bound <= (uint64_t)o.k)
        /* (a * k + b) % (k * q) = (a % q) * k + b for b < k: a row of a
         * vector function's lanes (vx * 64 + vc) within a merged
         * product's row of 2048, still moving with vc. */
        return clf__ix_mad(gen, ix_mod(gen, o.a, m / o.k), o.k, o.b);
    sum_part high, low;
    if (sum_split(&o, m, &high, &low)) /* a view's linear index: the axes within m */
        return ix_sum(gen, low.n, low.terms, low.strides, low.c, low.bound);
    if (o.kind == CLF__IX_DIVMOD && o.m == 0)
        rec = (clf__ix_origin){.kind = CLF__IX_DIVMOD, .a = o.a, .b = clf__ix_const(0), .k = o.k, .m = m};
    else
        rec = (clf__ix_origin){.kind = CLF__IX_DIVMOD, .a = x, .b = clf__ix_const(0), .k = 1, .m = m};
    char a[32], e[96];
    snprintf(e, sizeof e, "%s %% %lldu", clf__ix_str(&x, a, sizeof a), (long long)m);
    return temp_for(gen, e, (uint64_t)m, x.deps, rec);
}

/* start + x * step, for an index known to stay in [0, bound). */
static clf__ix ix_affine(clf__ixgen *gen, int64_t start, clf__ix x, int64_t step, uint64_t bound)
{
    if (x.temp < 0)
        return clf__ix_const(start + x.c * step);
    if (start == 0 && step == 1)
        return x;
    char a[32], e[128];
    const char *xs = clf__ix_str(&x, a, sizeof a);
    if (step >= 0)
        snprintf(e, sizeof e, "%lldu + %s * %lldu", (long long)start, xs, (long long)step);
    else
        snprintf(e, sizeof e, "%lldu - %s * %lldu", (long long)start, xs, (long long)-step);
    /* An ascending slice is x * step + start, which division, modulus and
     * clf__ix_unit_stride see through. */
    clf__ix_origin o = {0};
    if (step > 0)
        o = (clf__ix_origin){.kind = CLF__IX_MAD, .a = x, .b = clf__ix_const(start), .k = step};
    return temp_for(gen, e, bound, x.deps, o);
}

static void strides_of(int rank, const int64_t *shape, int64_t *strides)
{
    int64_t s = 1;
    for (int d = rank; d-- > 0;) {
        strides[d] = s;
        s *= shape[d] ? shape[d] : 1;
    }
}

clf__ix clf__ixgen_var(clf__ixgen *gen, const char *name, uint64_t bound)
{
    gen->nvars++;
    return (clf__ix){1000000 + gen->nvars, 0, bound, 1u << gen->nvars, name};
}

clf__ix clf__ix_mad(clf__ixgen *gen, clf__ix base, int64_t stride, clf__ix offset)
{
    if (base.temp < 0 && offset.temp < 0)
        return clf__ix_const(base.c * stride + offset.c);
    char a[32], b[32], e[128];
    snprintf(e, sizeof e, "%s * %lldu + %s", clf__ix_str(&base, a, sizeof a), (long long)stride,
             clf__ix_str(&offset, b, sizeof b));
    uint64_t bound = (base.bound ? base.bound - 1 : 0) * (uint64_t)stride + offset.bound;
    return temp_for(gen, e, bound, base.deps | offset.deps,
                    (clf__ix_origin){.kind = CLF__IX_MAD, .a = base, .b = offset, .k = stride});
}

int clf__ix_unit_stride(const clf__ixgen *gen, const clf__ix *x, uint32_t var_bit)
{
    if (!(x->deps & var_bit))
        return 0;
    if (x->var)
        return x->deps == var_bit ? 1 : -1;
    if (x->temp <= 0 || x->temp >= gen->ntemps)
        return -1;
    const clf__ix_origin *o = &gen->origin[x->temp];
    if (o->kind == CLF__IX_MAD) {
        if (!(o->a.deps & var_bit)) /* a * k + (... + v) */
            return clf__ix_unit_stride(gen, &o->b, var_bit) == 1 ? 1 : -1;
        if (!(o->b.deps & var_bit) && o->k == 1) /* (... + v) * 1 + b */
            return clf__ix_unit_stride(gen, &o->a, var_bit) == 1 ? 1 : -1;
        return -1;
    }
    if (o->kind == CLF__IX_LANES) /* x - off, clamped where it is not used */
        return clf__ix_unit_stride(gen, &o->a, var_bit) == 1 ? 1 : -1;
    if (o->kind == CLF__IX_SUM) { /* c + terms: one of stride 1 moves with v */
        int moving = -1;
        for (int j = 0; j < o->nterms; j++)
            if (o->terms[j].deps & var_bit) {
                if (moving >= 0 || o->strides[j] != 1)
                    return -1;
                moving = j;
            }
        return moving >= 0 && clf__ix_unit_stride(gen, &o->terms[moving], var_bit) == 1 ? 1 : -1;
    }
    return -1;
}

bool clf__ix_multiple_of(const clf__ixgen *gen, const clf__ix *x, uint32_t var_bit, int64_t m)
{
    if (x->temp < 0)
        return x->c % m == 0;
    if (x->var)
        return var_bit && x->deps == var_bit;
    if (x->temp <= 0 || x->temp >= gen->ntemps)
        return false;
    const clf__ix_origin *o = &gen->origin[x->temp];
    if (o->kind == CLF__IX_MAD) /* a * k + b */
        return (o->k % m == 0 || clf__ix_multiple_of(gen, &o->a, var_bit, m)) &&
               clf__ix_multiple_of(gen, &o->b, var_bit, m);
    if (o->kind == CLF__IX_SUM) { /* c + terms[j] * strides[j] */
        if (o->c % m != 0)
            return false;
        for (int j = 0; j < o->nterms; j++)
            if (o->strides[j] % m != 0 && !clf__ix_multiple_of(gen, &o->terms[j], var_bit, m))
                return false;
        return true;
    }
    return false;
}

clf__ix clf__ix_concat_lanes(clf__ixgen *gen, clf__ix x, int64_t off, int64_t len, int w)
{
    const int64_t top = len - w > 0 ? len - w : 0;
    char a[32], e[160];
    const char *xs = clf__ix_str(&x, a, sizeof a);
    if (off == 0)
        snprintf(e, sizeof e, "min(%s, (IDX_T)%lld)", xs, (long long)top);
    else
        snprintf(e, sizeof e, "(%s < (IDX_T)%lld ? (IDX_T)0 : min((IDX_T)(%s - %lld), (IDX_T)%lld))", xs,
                 (long long)off, xs, (long long)off, (long long)top);
    return temp_for(gen, e, (uint64_t)top + 1, x.deps, (clf__ix_origin){.kind = CLF__IX_LANES, .a = x});
}

void clf__view_dims(clf__ixgen *gen, const clf__view *v, int rank, const int64_t *shape,
                    clf__ix *dims)
{
    if (!v->linear) {
        for (int d = 0; d < rank; d++)
            dims[d] = v->dims[d];
        return;
    }
    int64_t strides[CLF_MAX_RANK];
    strides_of(rank, shape, strides);
    for (int d = 0; d < rank; d++)
        dims[d] = shape[d] == 1 ? clf__ix_const(0)
                                : ix_mod(gen, ix_div(gen, v->lin, strides[d]), shape[d]);
}

/* When every axis of dims is (src / strides[d]) % shape[d] of one source
 * index below numel (a view made by clf__view_dims), that source. */
static bool recompose(const clf__ixgen *gen, const clf__ix *dims, int rank, const int64_t *shape,
                      const int64_t *strides, clf__ix *src)
{
    bool have = false;
    uint64_t numel = 1;
    for (int d = 0; d < rank; d++)
        numel *= (uint64_t)shape[d];
    for (int d = 0; d < rank; d++) {
        if (shape[d] == 1) {
            if (dims[d].temp >= 0 || dims[d].c != 0)
                return false;
            continue;
        }
        clf__ix_origin o = origin_of(gen, &dims[d]);
        clf__ix s;
        if (o.kind == CLF__IX_DIVMOD && o.k == strides[d] &&
            (o.m == shape[d] || (o.m == 0 && dims[d].bound <= (uint64_t)shape[d])))
            s = o.a;
        else if (strides[d] == 1 && dims[d].temp >= 0 && dims[d].bound <= (uint64_t)shape[d] &&
                 o.kind == CLF__IX_PLAIN && d == 0)
            s = dims[d]; /* the outermost axis is the source itself */
        else
            return false;
        if (have && !clf__ix_same(&s, src))
            return false;
        *src = s;
        have = true;
    }
    return have && src->bound <= numel;
}

clf__ix clf__view_linear(clf__ixgen *gen, const clf__view *v, int rank, const int64_t *shape)
{
    if (v->linear)
        return v->lin;
    int64_t strides[CLF_MAX_RANK];
    strides_of(rank, shape, strides);
    clf__ix src;
    if (recompose(gen, v->dims, rank, shape, strides, &src))
        return src;
    /* Sum of dims[d] * strides[d], constants folded. */
    int64_t c = 0;
    uint64_t numel = 1;
    clf__ix terms[CLF_MAX_RANK];
    int64_t tstrides[CLF_MAX_RANK];
    int n = 0;
    for (int d = 0; d < rank; d++) {
        numel *= (uint64_t)shape[d];
        if (v->dims[d].temp < 0) {
            c += v->dims[d].c * strides[d];
            continue;
        }
        terms[n] = v->dims[d];
        tstrides[n++] = strides[d];
    }
    return ix_sum(gen, n, terms, tstrides, c, numel);
}

void clf__view_reduction(clf__ixgen *gen, int rank, const int64_t *shape, uint32_t mask, clf__ix x,
                         clf__ix r, clf__view *full)
{
    int64_t kept[CLF_MAX_RANK], red[CLF_MAX_RANK], rlen = 1;
    int nk = 0, nr = 0;
    bool suffix = true;
    for (int d = 0; d < rank; d++) {
        if (mask & (1u << d)) {
            red[nr++] = shape[d];
            rlen *= shape[d];
        } else {
            kept[nk++] = shape[d];
            if (nr > 0)
                suffix = false;
        }
    }
    if (suffix) {
        full->linear = true;
        full->lin = nr == 0 ? x : nk == 0 ? r : clf__ix_mad(gen, x, rlen, r);
        return;
    }
    clf__view xv = {.linear = true, .lin = x}, rv = {.linear = true, .lin = r};
    clf__ix kd[CLF_MAX_RANK], rd[CLF_MAX_RANK];
    clf__view_dims(gen, &xv, nk, kept, kd);
    clf__view_dims(gen, &rv, nr, red, rd);
    full->linear = false;
    for (int d = 0, ik = 0, ir = 0; d < rank; d++)
        full->dims[d] = (mask & (1u << d)) ? rd[ir++] : kd[ik++];
}

void clf__view_key(const clf__view *v, int rank, clf__strbuf *out)
{
    char a[32];
    if (v->linear) {
        clf__sb_printf(out, "L%s", clf__ix_str(&v->lin, a, sizeof a));
        return;
    }
    clf__sb_puts(out, "D");
    for (int d = 0; d < rank; d++)
        clf__sb_printf(out, "%s,", clf__ix_str(&v->dims[d], a, sizeof a));
}

/* Numpy broadcast of a view of shape (rank, shape) to an input of shape
 * (irank, ishape), aligned right. */
static void broadcast_view(clf__ixgen *gen, const clf__view *v, int rank, const int64_t *shape,
                           int irank, const int64_t *ishape, clf__view *in)
{
    int64_t inumel = 1;
    bool same = irank == rank;
    for (int d = 0; d < irank; d++) {
        inumel *= ishape[d];
        if (same && ishape[d] != shape[d])
            same = false;
    }
    if (same) {
        *in = *v;
        return;
    }
    if (inumel == 1) {
        in->linear = true;
        in->lin = clf__ix_const(0);
        return;
    }
    clf__ix dims[CLF_MAX_RANK];
    clf__view_dims(gen, v, rank, shape, dims);
    in->linear = false;
    int off = rank - irank;
    for (int d = 0; d < irank; d++)
        in->dims[d] = ishape[d] == 1 ? clf__ix_const(0) : dims[d + off];
}

/* The index along axis d of gather n's data: the index read from the
 * indices at ix (CLF_GIX_<n>, which the kernel defines), negative counting
 * from the end, clamped into [0, d). The sign test is in the indices' own
 * type: Mesa 22.3's compiler (rusticl) gets `(long)i < 0` wrong for an int
 * i (always false), and the widening is not needed for it. */
static clf__ix ix_gathered(clf__ixgen *gen, uint32_t node, clf__ix ix, int64_t d)
{
    char a[32], expr[192];
    clf__ix_str(&ix, a, sizeof a);
    snprintf(expr, sizeof expr, "(IDX_T)clamp((long)CLF_GIX_%u(%s) + (CLF_GIX_%u(%s) < 0 ? %lldL : 0L), 0L, %lldL)",
             node, a, node, a, (long long)d, (long long)d - 1);
    return temp_for(gen, expr, (uint64_t)d, ix.deps, (clf__ix_origin){0});
}

/* The index into a concat input of extent len starting at off along the
 * axis, for output index x there: x - off, clamped into the input (the
 * element read where x falls in another input is not used). */
static clf__ix ix_concat_part(clf__ixgen *gen, clf__ix x, int64_t off, int64_t len)
{
    if (x.temp < 0) {
        int64_t c = x.c - off;
        return clf__ix_const(c < 0 ? 0 : c >= len ? len - 1 : c);
    }
    if (off == 0 && x.bound <= (uint64_t)len)
        return x;
    char a[32], expr[160];
    clf__ix_str(&x, a, sizeof a);
    if (off == 0)
        snprintf(expr, sizeof expr, "min(%s, (IDX_T)%lld)", a, (long long)len - 1);
    else
        snprintf(expr, sizeof expr, "(%s < (IDX_T)%lld ? (IDX_T)0 : min((IDX_T)(%s - %lld), (IDX_T)%lld))", a,
                 (long long)off, a, (long long)off, (long long)len - 1);
    return temp_for(gen, expr, (uint64_t)len, x.deps, (clf__ix_origin){0});
}

bool clf__view_input_linear(const clf__node *n)
{
    return n->op == CLF__OP_RESHAPE || n->op == CLF__OP_SQUEEZE || n->op == CLF__OP_UNSQUEEZE;
}

bool clf__view_input_broadcasts(const clf__node *n)
{
    switch (n->op) {
    case CLF__OP_RESHAPE:
    case CLF__OP_SQUEEZE:
    case CLF__OP_UNSQUEEZE:
    case CLF__OP_TRANSPOSE:
    case CLF__OP_SLICE:
    case CLF__OP_GATHER:
    case CLF__OP_GATHER_ELEMENTS:
    case CLF__OP_CONCAT:
        return false;
    default:
        return true;
    }
}

void clf__view_input(clf__ixgen *gen, const clf_graph *g, const clf__node *n, int k,
                     const clf__view *v, clf__view *in)
{
    const clf__node *src = clf__graph_node(g, n->inputs[k]);
    if (clf__view_input_broadcasts(n)) { /* EXPAND and every pointwise op */
        broadcast_view(gen, v, n->rank, n->shape, src->rank, src->shape, in);
        return;
    }
    if (clf__view_input_linear(n)) {
        in->linear = true;
        in->lin = clf__view_linear(gen, v, n->rank, n->shape);
        return;
    }
    switch (n->op) {
    case CLF__OP_TRANSPOSE: {
        clf__ix dims[CLF_MAX_RANK];
        clf__view_dims(gen, v, n->rank, n->shape, dims);
        in->linear = false;
        for (int d = 0; d < n->rank; d++)
            in->dims[n->attr.transpose.perm[d]] = dims[d];
        return;
    }
    case CLF__OP_SLICE: {
        clf__ix dims[CLF_MAX_RANK];
        clf__view_dims(gen, v, n->rank, n->shape, dims);
        in->linear = false;
        for (int d = 0; d < n->rank; d++)
            in->dims[d] = ix_affine(gen, n->attr.slice.start[d], dims[d], n->attr.slice.step[d], (uint64_t)src->shape[d]);
        return;
    }
    case CLF__OP_GATHER: {
        clf__ix dims[CLF_MAX_RANK];
        clf__view_dims(gen, v, n->rank, n->shape, dims);
        const clf__node *ix = clf__graph_node(g, n->inputs[1]);
        int a = n->attr.gather.axis;
        clf__view iv = {.linear = false};
        for (int d = 0; d < ix->rank; d++)
            iv.dims[d] = dims[a + d];
        if (k == 1) {
            *in = iv;
            return;
        }
        in->linear = false;
        for (int d = 0; d < src->rank; d++)
            if (d != a) /* (axis a is the gathered index, below: with indices of rank 0, dims[a - 1] is none) */
                in->dims[d] = d < a ? dims[d] : dims[d + ix->rank - 1];
        uint32_t id = (uint32_t)(n - g->nodes);
        in->dims[a] = ix_gathered(gen, id, clf__view_linear(gen, &iv, ix->rank, ix->shape), src->shape[a]);
        return;
    }
    case CLF__OP_GATHER_ELEMENTS: {
        if (k == 1) { /* the indices: the output's own shape */
            *in = *v;
            return;
        }
        clf__ix dims[CLF_MAX_RANK];
        clf__view_dims(gen, v, n->rank, n->shape, dims);
        int a = n->attr.gather.axis;
        in->linear = false;
        for (int d = 0; d < n->rank; d++)
            in->dims[d] = dims[d];
        uint32_t id = (uint32_t)(n - g->nodes);
        in->dims[a] = ix_gathered(gen, id, clf__view_linear(gen, v, n->rank, n->shape), src->shape[a]);
        return;
    }
    case CLF__OP_CONCAT: {
        clf__ix dims[CLF_MAX_RANK];
        clf__view_dims(gen, v, n->rank, n->shape, dims);
        int a = n->attr.concat.axis;
        int64_t off = 0;
        for (int j = 0; j < k; j++)
            off += clf__graph_node(g, n->inputs[j])->shape[a];
        in->linear = false;
        for (int d = 0; d < n->rank; d++)
            in->dims[d] = d == a ? ix_concat_part(gen, dims[d], off, src->shape[a]) : dims[d];
        return;
    }
    default: /* read numpy-broadcast or linearly, above */
        return;
    }
}

bool clf__movement_permutes(const clf_graph *g, const clf__node *n)
{
    switch (n->op) {
    case CLF__OP_RESHAPE:
    case CLF__OP_SQUEEZE:
    case CLF__OP_UNSQUEEZE:
    case CLF__OP_TRANSPOSE:
        return true;
    case CLF__OP_EXPAND: /* as many elements out as in: only unit axes added */
        return clf__node_numel(n) == clf__node_numel(clf__graph_node(g, n->inputs[0]));
    default:
        return false;
    }
}

void clf__view_output(clf__ixgen *gen, const clf_graph *g, const clf__node *n, const clf__view *in,
                      clf__view *out)
{
    const clf__node *src = clf__graph_node(g, n->inputs[0]);
    if (n->op == CLF__OP_TRANSPOSE) {
        /* Output axis d is input axis perm[d]. */
        clf__ix dims[CLF_MAX_RANK];
        clf__view_dims(gen, in, src->rank, src->shape, dims);
        out->linear = false;
        for (int d = 0; d < n->rank; d++)
            out->dims[d] = dims[n->attr.transpose.perm[d]];
        return;
    }
    /* The rest keep the C-order linear index. */
    out->linear = true;
    out->lin = clf__view_linear(gen, in, src->rank, src->shape);
}
