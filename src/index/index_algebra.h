/* Index algebra: the index arithmetic of generated kernels, below both the
 * planner (which walks views to check that fused values line up) and
 * codegen (which emits them). An index value is either a
 * constant or a named temporary ("t3") of type IDX_T emitted once into the
 * kernel; each carries an exclusive upper bound so that needless `%` and
 * `/` disappear. A view is how a region reaches a node's elements: either
 * the node's C-order linear index, or one index per axis. Movement ops map
 * a view of their output to a view of their input; nothing is copied. */
#ifndef CLFUSE_INDEX_ALGEBRA_H
#define CLFUSE_INDEX_ALGEBRA_H

#include <stdbool.h>
#include <stdint.h>

#include "graph/graph_internal.h"
#include "util/strbuf.h"

typedef struct clf__ix {
    int temp;      /* -1: the constant c; else temporary t<temp> (t0 is the region's i) */
    int64_t c;
    uint64_t bound; /* exclusive upper bound of the value */
    uint32_t deps;  /* which variables it depends on: bit 0 is i, then one per clf__ixgen_var */
    const char *var; /* the variable's name (a string that outlives the kernel's codegen) */
} clf__ix;

typedef struct clf__view {
    bool linear;
    clf__ix lin;
    clf__ix dims[CLF_MAX_RANK];
} clf__view;

/* Emits temporaries into code and remembers them by their expression, so
 * that the same index is computed once per kernel. */
/* How a temporary was made, so that index algebra can see through it:
 * DIVMOD is (a / k) % m (m 0: no modulus), MAD is a * k + b, SUM is c +
 * the sum of terms[j] * strides[j] (a view's linear index, strides > 0),
 * LANES is a - off clamped to an input of a concatenation
 * (clf__ix_concat_lanes). */
typedef struct clf__ix_origin {
    enum { CLF__IX_PLAIN, CLF__IX_DIVMOD, CLF__IX_MAD, CLF__IX_SUM, CLF__IX_LANES } kind;
    clf__ix a, b;
    int64_t k, m;
    int nterms;
    int64_t c;
    clf__ix terms[CLF_MAX_RANK];
    int64_t strides[CLF_MAX_RANK];
} clf__ix_origin;

typedef struct clf__ixgen {
    clf__strbuf *code;
    char **keys; /* expression of each temporary */
    clf__ix_origin *origin;
    int ntemps, cap, nvars;
    bool failed;
} clf__ixgen;

/* t0 = i, the region's linear index, bounded by numel. */
void clf__ixgen_init(clf__ixgen *gen, clf__strbuf *code, uint64_t numel);
/* The index i (t0) of a pointwise region. */
clf__ix clf__ix_i(uint64_t bound);
/* A further named index variable (a kernel argument or loop counter such as
 * a reduction's row x and element r), valid below bound; name must be a
 * string literal. */
clf__ix clf__ixgen_var(clf__ixgen *gen, const char *name, uint64_t bound);
/* base * stride + offset, for a linear index built from two variables. */
clf__ix clf__ix_mad(clf__ixgen *gen, clf__ix base, int64_t stride, clf__ix offset);
/* How index x moves with the variable whose deps bit is var_bit: 0 not at
 * all; 1 as the variable itself plus terms that do not depend on it, so
 * that n consecutive values of the variable reach n consecutive elements
 * (one vector load); -1 otherwise (or not known). */
int clf__ix_unit_stride(const clf__ixgen *gen, const clf__ix *x, uint32_t var_bit);
/* Whether x is a multiple of m (m > 0) wherever the variable whose deps bit
 * is var_bit is one (var_bit 0: no such variable), whatever the other
 * variables: x built of constants, that variable and products by
 * multiples of m (a 16-byte piece of 16-bit values whose first index
 * moves with the piece's column, 8 columns at a time). false where not
 * known. */
bool clf__ix_multiple_of(const clf__ixgen *gen, const clf__ix *x, uint32_t var_bit, int64_t m);
/* Input k's position along a concatenation's axis, where x, the position in
 * the concatenation, is the first of w lanes of a vector function (x a
 * multiple of w, as are the inputs' offsets and lengths, so that the w
 * lanes fall in one input): x - off in the input the lanes fall in (of
 * length len, at offset off), clamped into [0, len - w] for the others,
 * whose loads the function makes but does not use, so that they stay in
 * the input. Moves with x as x does (clf__ix_unit_stride). */
clf__ix clf__ix_concat_lanes(clf__ixgen *gen, clf__ix x, int64_t off, int64_t len, int w);
void clf__ixgen_free(clf__ixgen *gen);

clf__ix clf__ix_const(int64_t c);
/* Writes the C expression of an index ("t3", "17") into buf. */
const char *clf__ix_str(const clf__ix *x, char *buf, size_t cap);
/* A short key identifying a view of a node (for value memoisation). */
void clf__view_key(const clf__view *v, int rank, clf__strbuf *out);

/* The same index (same temporary or variable, or equal constants; any two
 * indices below 1 are both 0). */
bool clf__ix_same(const clf__ix *a, const clf__ix *b);

/* The view of a reduction region's full iteration space: shape with the
 * axes in mask reduced, row x (over the kept axes, C order) and element r
 * (over the reduced axes, C order). Linear when the reduced axes are the
 * trailing ones. */
void clf__view_reduction(clf__ixgen *gen, int rank, const int64_t *shape, uint32_t mask, clf__ix x,
                         clf__ix r, clf__view *full);

/* The view's C-order linear index into a tensor of the given shape. */
clf__ix clf__view_linear(clf__ixgen *gen, const clf__view *v, int rank, const int64_t *shape);
/* The view as one index per axis of the given shape. */
void clf__view_dims(clf__ixgen *gen, const clf__view *v, int rank, const int64_t *shape,
                    clf__ix *dims);
/* The view of input k of node n (pointwise broadcast or movement op) given
 * the view of n. */
void clf__view_input(clf__ixgen *gen, const clf_graph *g, const clf__node *n, int k,
                     const clf__view *v, clf__view *in);
/* Whether clf__view_input reads n's inputs numpy-broadcast: an input of
 * n's shape at n's own element (every op but the movement ops, gathers and
 * concat, whose inputs are read elsewhere). */
bool clf__view_input_broadcasts(const clf__node *n);
/* Whether clf__view_input reads n's input at n's linear index (reshape,
 * squeeze, unsqueeze). */
bool clf__view_input_linear(const clf__node *n);

/* Whether movement op n permutes the elements of its input: every element
 * lands at exactly one place of n and every place of n holds one (transpose,
 * reshape, squeeze, unsqueeze, an expand that adds only unit axes; not a
 * broadcast, a slice or a gather). */
bool clf__movement_permutes(const clf_graph *g, const clf__node *n);
/* The other direction of clf__view_input for such an op: given the view of
 * n's input, the view of n at which the same element sits. */
void clf__view_output(clf__ixgen *gen, const clf_graph *g, const clf__node *n, const clf__view *in,
                      clf__view *out);

#endif
