/* Symbolic dimensions: the sizes a graph leaves open until a run (clf_dim).
 *
 * A graph keeps concrete shapes throughout, holding each symbol's stand-in
 * size (clf__dim_sym.rep) where it appears, and beside them which extents
 * are which symbol (clf__node.sym). The builder checks every op's shapes
 * concretely as always, then the symbols here (clf__graph_infer_syms: an
 * extent is a symbol only where the op's rule makes it one at every size).
 * A run specialises the graph to its sizes (clf__graph_specialise): the
 * same nodes with the symbols' extents replaced and the constants that
 * follow from shapes (causal masks, element counts) made again. */
#ifndef CLFUSE_GRAPH_SYMBOLS_H
#define CLFUSE_GRAPH_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph_internal.h"

/* clf_dim's values: CLF__DIM_TOKEN - i stands for symbol i. */
#define CLF__DIM_TOKEN ((int64_t)-1024)

/* The symbol a shape entry stands for (1 + its index), or 0 for an
 * ordinary extent. */
int clf__graph_dim_token(const clf_graph *g, int64_t v);

/* Replaces the symbols' values in a caller's shape (rank entries of in)
 * by their stand-in sizes (out) and records which they were (sym, 1 +
 * index; 0 elsewhere). A negative value that is no symbol of g is left
 * for the caller's own check. */
void clf__graph_take_dims(const clf_graph *g, int rank, const int64_t *in, int64_t *out, uint8_t *sym);

/* Fills n->sym from its inputs' (keeping what the builder set for inputs,
 * reshapes and expands) and checks that the op holds at every size; false
 * after recording CLF_ERR_SHAPE on g under call. */
bool clf__graph_infer_syms(clf_graph *g, const char *call, clf__node *n);

/* n->sym for an expand of in to the target shape (rank extents, the
 * symbols among them in shape_sym); false after recording the error. */
bool clf__graph_expand_syms(clf_graph *g, const char *call, const clf__node *in, int rank, const int64_t *shape,
                            const uint8_t *shape_sym, clf__node *n);

/* Marks the f32 scalar constant c as the element count of node's extents
 * on mask less minus, made again at each size, where those extents
 * include a symbolic one. */
void clf__graph_count_gen(clf_graph *g, clf_tensor c, uint32_t node, uint32_t mask, double minus);

/* Whether slicing axis a of in (start, step and the output extent as
 * clf_slice resolved them; end as given) keeps every element at every
 * size; false after recording the error when the axis is symbolic and the
 * slice is not whole. */
bool clf__graph_slice_sym_ok(clf_graph *g, const char *call, const clf__node *in, int a, int64_t start,
                             int64_t end, int64_t step, int64_t extent);

/* n's data (allocated; n->borrowed false) for n's shape, a constant that
 * follows from shapes as from's gen says (s: the graph n is in, for
 * COUNT's node). */
clf_status clf__graph_generate_const(const clf_graph *s, const clf__node *from, clf__node *n, char *err, size_t cap);

/* The bytes of a PREFIX constant's table (n's extents but gen.rows on
 * gen.axis, whatever n's extent there). */
size_t clf__graph_prefix_table_bytes(const clf__node *n);

/* A derived dimension's size at the symbols' sizes values (its rule; a
 * symbol's own: values[a]). */
int64_t clf__graph_dim_value(const clf__dim_sym *S, const int64_t *values);

/* Fills values[nsyms ..] with g's derived dimensions' sizes from the
 * symbols' (values[0 .. nsyms)); false with err where one is negative or
 * too large. */
bool clf__graph_derive(const clf_graph *g, int64_t *values, char *err, size_t cap);

/* "S" for 1 + the index of a symbol (or a derived dimension). */
const char *clf__graph_sym_name(const clf_graph *g, int sym);

/* A regen (graph_internal.h) with one reference, not by_nodes; NULL when
 * out of memory. */
clf__graph_regen *clf__graph_regen_new(clf_status (*make)(void *, const int64_t *, clf_graph **, char *, size_t),
                                       void (*release)(void *), void *state);
/* Counts a graph's reference to r (NULL: nothing). */
void clf__graph_regen_retain(clf__graph_regen *r);
/* Drops one; the last calls r->release. */
void clf__graph_regen_release(clf__graph_regen *r);

/* Makes g a graph whose symbols are the named dimensions (bounds lo..hi,
 * hi 0: none) of its inputs and outputs, made again at given sizes by
 * regen (which g takes): g's shapes must hold each symbol's stand-in size
 * (clf_dim's rule) where dims[t][axis] names it, for input and output
 * tensors in order (ninputs, then noutputs; NULL names: none). Returns
 * CLF_ERR_SHAPE with the message in err where an extent is not the
 * stand-in. */
clf_status clf__graph_make_symbolic(clf_graph *g, size_t nsyms, const char *const *names, const int64_t *lo,
                                    const int64_t *hi, const char *const (*dims)[CLF_MAX_RANK],
                                    clf__graph_regen *regen, char *err, size_t cap);

/* A symbol's stand-in size for bounds lo..hi (hi 0: none), as clf_dim
 * chooses it. */
int64_t clf__graph_dim_rep(int64_t lo, int64_t hi);

/* The graph at the given sizes (values[i] for symbol i, within its
 * bounds): the same nodes, ids, inputs and outputs, shapes at those sizes,
 * no symbols; values NULL: a copy of g, symbols and all. Constants share g's data (borrowed: g must outlive it)
 * unless own_data, then they are copied; those that follow from shapes
 * are made again. A size that makes a tensor too large is refused. A
 * graph with a regen is made again by it at values, and its copy keeps
 * the regen and the constants the regen keeps alive. A graph whose regen
 * is by_nodes is specialised node by node where that was checked
 * (clf__graph_specialise_checked). */
clf_status clf__graph_specialise(const clf_graph *g, const int64_t *values, bool own_data, clf_graph **out,
                                 char *err, size_t cap);

/* clf__graph_specialise node by node, whatever g's regen. */
clf_status clf__graph_specialise_nodes(const clf_graph *g, const int64_t *values, bool own_data, clf_graph **out,
                                       char *err, size_t cap);

/* The symbols' sizes given by tensors' shapes: shape (rank extents) for
 * node id, which must have the node's rank; where a symbolic extent of it
 * gives a symbol's size, values[sym] is set (known[sym] marks those
 * already set, whose sizes must agree) and the bounds are checked; a fixed
 * extent must be as declared. what names the tensor in messages ("input
 * 'x'"). */
clf_status clf__graph_bind_dims(const clf_graph *g, uint32_t node, const char *what, const int64_t *shape,
                                int64_t *values, bool *known, const char **known_from, char *err, size_t cap);

/* Whether name is one of g's symbolic dimensions and no input's: a run's
 * binding of that name gives the dimension's size, no tensor. */
bool clf__graph_names_dim(const clf_graph *g, const char *name);

/* The symbols' sizes from the shapes of inputs given by name (an input
 * without symbolic axes may have a NULL shape), or from a name of a
 * symbol itself (its size in shape[0]); other names are passed over. Each
 * checked as clf__graph_bind_dims does, and every symbol must be given. */
clf_status clf__graph_sizes_of(const clf_graph *g, size_t ninputs, const char *const *names,
                               const int64_t *const *shapes, int64_t *values, char *err, size_t cap);

#endif
