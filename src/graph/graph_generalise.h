/* Making a graph symbolic node by node from copies of it at other sizes.
 *
 * An imported model's graph has no symbolic extents of its own: the ONNX
 * frontend folds its shape arithmetic (Shape -> Gather -> Concat ->
 * Reshape, Range, the masks made from shapes) into concrete extents and
 * constants at the sizes it is imported at, so a new size would import it
 * again (clf__graph_regen). Where imports at other sizes give the same
 * nodes, every extent that changes with the sizes is one symbol's size,
 * and every constant that changes is one that shapes alone make (the
 * generators of clf__const_gen), the graph can be specialised node by node
 * as a graph built with clf_dim is: this finds those marks from two
 * imports and checks them by specialising at the sizes of every import
 * given. */
#ifndef CLFUSE_GRAPH_GENERALISE_H
#define CLFUSE_GRAPH_GENERALISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph_internal.h"

/* A graph and the sizes of g's symbols it was made at (values[i] for
 * g->syms[i]). */
typedef struct clf__graph_at {
    const clf_graph *g;
    const int64_t *values;
} clf__graph_at;

/* Marks g (made at its symbols' stand-in sizes, the symbols declared) so
 * that clf__graph_specialise makes it node by node: each extent and cache
 * length that differs between at[0] and at[1] gets the one symbol whose
 * sizes it has in both, and each constant that differs the generator that
 * gives both; top (NULL: none) is the graph at the symbols' upper bounds,
 * whose constants serve as PREFIX tables (gen.table points into top's
 * data: the caller keeps it alive or moves it). Then g is specialised at
 * the sizes of every at[k] (n >= 2) and at its stand-in sizes, and
 * compared with them node by node (the nodes an output depends on:
 * shapes, attributes, constants' bytes). Returns true when all agree;
 * else false with the first disagreement in why, and g as it was;
 * *wants_table (NULL: not asked) says whether that was a constant no
 * generator gives without top, one a table's rows might. g's regen is not
 * used (nor changed): the caller makes it by_nodes. */
bool clf__graph_generalise(clf_graph *g, const clf__graph_at *at, size_t n, const clf__graph_at *top,
                           bool *wants_table, char *why, size_t cap);

/* g specialised at values (clf__graph_specialise's contract) where g's
 * regen is by_nodes: node by node at sizes up to the regen's upto and
 * within g's PREFIX tables. Past upto, the graph made node by node at
 * sizes v (each symbol past its upto at twice that, or values', within
 * its bounds) is compared with the regen's at v first: where they agree,
 * upto grows to v; where not, by_nodes ends (the log says so) and the
 * regen makes this and every later size. */
clf_status clf__graph_specialise_checked(const clf_graph *g, const int64_t *values, bool own_data, clf_graph **out,
                                         char *err, size_t cap);

#endif
