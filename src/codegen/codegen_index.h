/* Index arithmetic for generated kernels. An index value is either a
 * constant or a named temporary ("t3") of type IDX_T emitted once into the
 * kernel; each carries an exclusive upper bound so that needless `%` and
 * `/` disappear. A view is how a region reaches a node's elements: either
 * the node's C-order linear index, or one index per axis. Movement ops map
 * a view of their output to a view of their input; nothing is copied. */
#ifndef CLFUSE_CODEGEN_INDEX_H
#define CLFUSE_CODEGEN_INDEX_H

#include <stdbool.h>
#include <stdint.h>

#include "graph/graph_internal.h"
#include "util/strbuf.h"

typedef struct clf__ix {
    int temp;      /* -1: the constant c; else temporary t<temp> (t0 is the region's i) */
    int64_t c;
    uint64_t bound; /* exclusive upper bound of the value */
} clf__ix;

typedef struct clf__view {
    bool linear;
    clf__ix lin;
    clf__ix dims[CLF_MAX_RANK];
} clf__view;

/* Emits temporaries into code and remembers them by their expression, so
 * that the same index is computed once per kernel. */
typedef struct clf__ixgen {
    clf__strbuf *code;
    char **keys;
    int ntemps, cap;
    bool failed;
} clf__ixgen;

/* t0 = i, the region's linear index, bounded by numel. */
void clf__ixgen_init(clf__ixgen *gen, clf__strbuf *code, uint64_t numel);
void clf__ixgen_free(clf__ixgen *gen);

clf__ix clf__ix_const(int64_t c);
/* Writes the C expression of an index ("t3", "17") into buf. */
const char *clf__ix_str(const clf__ix *x, char *buf, size_t cap);
/* A short key identifying a view of a node (for value memoisation). */
void clf__view_key(const clf__view *v, int rank, clf__strbuf *out);

/* The view's C-order linear index into a tensor of the given shape. */
clf__ix clf__view_linear(clf__ixgen *gen, const clf__view *v, int rank, const int64_t *shape);
/* The view as one index per axis of the given shape. */
void clf__view_dims(clf__ixgen *gen, const clf__view *v, int rank, const int64_t *shape,
                    clf__ix *dims);
/* The view of input k of node n (pointwise broadcast or movement op) given
 * the view of n. */
void clf__view_input(clf__ixgen *gen, const clf_graph *g, const clf__node *n, int k,
                     const clf__view *v, clf__view *in);

#endif
