/* A canonical text of a graph: equal for two graphs exactly when they
 * compute the same thing with the same names, so that it can key a cache
 * of compiled plans. */
#ifndef CLFUSE_GRAPH_KEY_H
#define CLFUSE_GRAPH_KEY_H

#include "graph/graph_internal.h"
#include "util/strbuf.h"

/* Appends the canonical text of g to sb: every node in order with its
 * kind, op, dtype, shape, inputs and every attribute field (doubles by
 * their bits), tensor constants by the SHA-256 of their bytes, input
 * names, then the graph's inputs and its outputs with their names. Not the
 * graph's serial number (which differs between equal graphs). Allocation
 * failure is sticky in sb. */
void clf__graph_key(const clf_graph *g, clf__strbuf *sb);

/* Appends what the canonical text says of one node by itself: its op,
 * dtype, shape, attributes and generator (not its inputs, data, name or
 * symbols). */
void clf__graph_key_node(const clf__node *n, clf__strbuf *sb);

#endif
