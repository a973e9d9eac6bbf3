#include "codegen/codegen_index.h"

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
            free(gen->keys[i]);
    free(gen->keys);
    memset(gen, 0, sizeof *gen);
}

clf__ix clf__ix_const(int64_t c) { return (clf__ix){-1, c, (uint64_t)c + 1}; }

const char *clf__ix_str(const clf__ix *x, char *buf, size_t cap)
{
    if (x->temp < 0)
        snprintf(buf, cap, "%lld", (long long)x->c);
    else if (x->temp == 0)
        snprintf(buf, cap, "i");
    else
        snprintf(buf, cap, "t%d", x->temp);
    return buf;
}

/* Returns the temporary named by expression expr, emitting it on first use. */
static clf__ix temp_for(clf__ixgen *gen, const char *expr, uint64_t bound)
{
    for (int i = 1; i < gen->ntemps; i++)
        if (gen->keys[i] && strcmp(gen->keys[i], expr) == 0)
            return (clf__ix){i, 0, bound};
    if (gen->ntemps >= gen->cap) {
        int cap = gen->cap ? gen->cap * 2 : 32;
        char **k = realloc(gen->keys, (size_t)cap * sizeof *k);
        if (!k) {
            gen->failed = true;
            return clf__ix_const(0);
        }
        for (int i = gen->cap; i < cap; i++)
            k[i] = NULL;
        gen->keys = k;
        gen->cap = cap;
    }
    char *dup = malloc(strlen(expr) + 1);
    if (!dup) {
        gen->failed = true;
        return clf__ix_const(0);
    }
    strcpy(dup, expr);
    int t = gen->ntemps++;
    gen->keys[t] = dup;
    clf__sb_printf(gen->code, "    const IDX_T t%d = %s;\n", t, expr);
    return (clf__ix){t, 0, bound};
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
    char a[32], e[96];
    snprintf(e, sizeof e, "%s / %lldu", clf__ix_str(&x, a, sizeof a), (long long)d);
    return temp_for(gen, e, bound);
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
    char a[32], e[96];
    snprintf(e, sizeof e, "%s %% %lldu", clf__ix_str(&x, a, sizeof a), (long long)m);
    return temp_for(gen, e, (uint64_t)m);
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
    return temp_for(gen, e, bound);
}

static void strides_of(int rank, const int64_t *shape, int64_t *strides)
{
    int64_t s = 1;
    for (int d = rank; d-- > 0;) {
        strides[d] = s;
        s *= shape[d] ? shape[d] : 1;
    }
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

clf__ix clf__view_linear(clf__ixgen *gen, const clf__view *v, int rank, const int64_t *shape)
{
    if (v->linear)
        return v->lin;
    int64_t strides[CLF_MAX_RANK];
    strides_of(rank, shape, strides);
    /* Sum of dims[d] * strides[d], constants folded. */
    int64_t c = 0;
    uint64_t numel = 1;
    for (int d = 0; d < rank; d++)
        numel *= (uint64_t)shape[d];
    clf__strbuf e = {0};
    int terms = 0;
    clf__ix only = clf__ix_const(0);
    for (int d = 0; d < rank; d++) {
        const clf__ix *x = &v->dims[d];
        if (x->temp < 0) {
            c += x->c * strides[d];
            continue;
        }
        char a[32];
        if (terms)
            clf__sb_puts(&e, " + ");
        if (strides[d] == 1)
            clf__sb_puts(&e, clf__ix_str(x, a, sizeof a));
        else
            clf__sb_printf(&e, "%s * %lldu", clf__ix_str(x, a, sizeof a), (long long)strides[d]);
        only = *x;
        terms++;
    }
    clf__ix r;
    if (terms == 0)
        r = clf__ix_const(c);
    else if (terms == 1 && c == 0 && strides[rank - 1] >= 1 && strcmp(clf__sb_str(&e), "") != 0 &&
             strchr(clf__sb_str(&e), '*') == NULL)
        r = only;
    else {
        if (c)
            clf__sb_printf(&e, " + %lldu", (long long)c);
        r = clf__sb_ok(&e) ? temp_for(gen, clf__sb_str(&e), numel) : clf__ix_const(0);
        if (!clf__sb_ok(&e))
            gen->failed = true;
    }
    clf__sb_free(&e);
    return r;
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

void clf__view_input(clf__ixgen *gen, const clf_graph *g, const clf__node *n, int k,
                     const clf__view *v, clf__view *in)
{
    const clf__node *src = clf__graph_node(g, n->inputs[k]);
    switch (n->kind) {
    case CLF__NODE_RESHAPE:
    case CLF__NODE_SQUEEZE:
    case CLF__NODE_UNSQUEEZE:
        in->linear = true;
        in->lin = clf__view_linear(gen, v, n->rank, n->shape);
        return;
    case CLF__NODE_TRANSPOSE: {
        clf__ix dims[CLF_MAX_RANK];
        clf__view_dims(gen, v, n->rank, n->shape, dims);
        in->linear = false;
        for (int d = 0; d < n->rank; d++)
            in->dims[n->perm[d]] = dims[d];
        return;
    }
    case CLF__NODE_SLICE: {
        clf__ix dims[CLF_MAX_RANK];
        clf__view_dims(gen, v, n->rank, n->shape, dims);
        in->linear = false;
        for (int d = 0; d < n->rank; d++)
            in->dims[d] = ix_affine(gen, n->start[d], dims[d], n->step[d], (uint64_t)src->shape[d]);
        return;
    }
    default: /* EXPAND and every pointwise op broadcast numpy-style */
        broadcast_view(gen, v, n->rank, n->shape, src->rank, src->shape, in);
        return;
    }
}
