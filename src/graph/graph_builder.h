/* Internals shared by the graph builder's files (graph.c, graph_movement.c,
 * graph_reduce.c): error recording, handle checking, shape checking, node
 * append, numpy broadcasting and the pointwise builders under a caller's
 * name. Nothing outside src/graph/ should need this header; readers
 * of the IR use graph_internal.h.
 *
 * Error messages all start with the public call's name and then name the
 * argument: "clf_add: b belongs to another graph". */
#ifndef CLFUSE_GRAPH_BUILDER_H
#define CLFUSE_GRAPH_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph_internal.h"

#if defined(__GNUC__)
#define CLF__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CLF__PRINTF(f, a)
#endif

/* Enough for "[" + 8 extents of up to 20 characters + separators + "]". */
#define CLF__SHAPE_STR_CAP 192

/* Puts g into the error state with status st and the message
 * "<call>: <formatted text>", unless g already holds an error (the first
 * error is kept). g must not be NULL. */
void clf__graph_fail(clf_graph *g, clf_status st, const char *call, const char *fmt, ...)
    CLF__PRINTF(4, 5);

/* True when g is non-NULL and not in the error state, i.e. a builder call
 * on it should do its work. */
bool clf__graph_usable(const clf_graph *g);

/* Resolves the tensor argument named arg of call. Returns the node, or NULL
 * after recording CLF_ERR_INVALID_ARGUMENT when t is CLF_TENSOR_INVALID,
 * belongs to another graph or names no node. The pointer is invalidated by
 * the next append: copy what is needed first. */
const clf__node *clf__graph_arg(clf_graph *g, const char *call, const char *arg, clf_tensor t);

/* Checks a shape argument named arg of call: rank in 0..CLF_MAX_RANK
 * (CLF_ERR_SHAPE), shape non-NULL when rank > 0 (CLF_ERR_INVALID_ARGUMENT)
 * and, unless allow_negative, every extent >= 0 (CLF_ERR_SHAPE). Records
 * the error and returns false on failure. */
bool clf__graph_check_shape(clf_graph *g, const char *call, const char *arg, int rank,
                            const int64_t *shape, bool allow_negative);

/* Appends a copy of *n after checking that its element count and byte size
 * fit in int64 (CLF_ERR_SHAPE) and that memory is available
 * (CLF_ERR_OUT_OF_MEMORY). Takes ownership of n->data and n->name: on
 * failure they are freed. Returns the new node's handle, or
 * CLF_TENSOR_INVALID after recording the error. */
clf_tensor clf__graph_append(clf_graph *g, const char *call, const clf__node *n);

/* clf_constant without the copy: the node borrows data, which must outlive
 * the graph and its copies (an ONNX model's initializers, kept by the
 * graph's regen; specialisations share its device buffer). Scalars and
 * empty tensors are copied as clf_constant does. */
clf_tensor clf__graph_constant_borrowed(clf_graph *g, clf_dtype dtype, int rank, const int64_t *shape,
                                        const void *data);

/* numpy broadcasting of shapes a and b (aligned to the right; equal extents
 * or an extent 1 broadcast; 0 against 1 gives 0). Writes the result to
 * *rank_out / out (which may alias a or b) and returns true, or returns
 * false when the shapes do not broadcast. */
bool clf__graph_broadcast(int rank_a, const int64_t *a, int rank_b, const int64_t *b, int *rank_out,
                          int64_t *out);

/* Writes "[2,3]" ("[]" for rank 0) into buf (CLF__SHAPE_STR_CAP bytes are
 * always enough) and returns buf. */
const char *clf__graph_shape_str(char *buf, size_t cap, int rank, const int64_t *shape);

/* Normalises an axis argument for a tensor of rank r: negative values count
 * from the end. Returns the axis in 0..r-1, or -1 when out of range. */
int clf__graph_axis(int axis, int r);
/* Whether an axes list's count and pointer agree (naxes >= 0, axes not NULL
 * when naxes > 0); false after recording the error. */
bool clf__graph_axes_list(clf_graph *g, const char *call, int naxes, const int *axes);
/* Entry i of an axes list, axes[i], for rank r ("rank" or "output rank" in
 * messages: what): the axis in 0..r-1, marked in seen; or -1 after
 * recording CLF_ERR_INVALID_ARGUMENT when it is out of range or names an
 * axis seen already. */
int clf__graph_list_axis(clf_graph *g, const char *call, int i, int axis, int r, const char *what,
                         bool seen[CLF_MAX_RANK]);

/* clf_unary / clf_binary / clf_scalar with the caller's name for messages:
 * composites (graph_reduce.c) build their primitives through these so that
 * an error names the composite ("clf_softmax: ..."), not the primitive. */
clf_tensor clf__graph_unary(clf_graph *g, const char *call, clf_unary_op op, clf_tensor x);
clf_tensor clf__graph_binary(clf_graph *g, const char *call, clf_binary_op op, clf_tensor a,
                             clf_tensor b);
clf_tensor clf__graph_scalar(clf_graph *g, const char *call, clf_dtype dtype, double value);

#endif
