/* The reference interpreter: evaluates a graph on the host, op by op, with
 * plain loops. f32 ops compute in double and round the result of each op to
 * float; i32 ops wrap as the kernels do. It shares no code with the planner
 * or codegen, so that it can serve as the oracle they are tested against.
 * Slow by design: for checking, not for production. */
#ifndef CLFUSE_REFERENCE_H
#define CLFUSE_REFERENCE_H

#include <stddef.h>

#include "export.h"
#include "graph.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Evaluates every output of g from the bound inputs. Every input and output
 * must be bound exactly once, by name. On failure, if message is not NULL,
 * up to cap bytes of a NUL-terminated explanation are written there (the
 * graph's own message when it is in an error state). */
CLF_API clf_status clf_reference_run(const clf_graph *g, size_t ninputs,
                                     const clf_host_binding *inputs, size_t noutputs,
                                     const clf_host_binding *outputs, char *message, size_t cap);

/* clf_reference_run with the inputs' shapes: input_shapes[i] holds input
 * i's extents (its declared rank of them), which a graph with symbolic
 * dimensions (clf_dim) must be given and which are checked as clf_run_host_shaped
 * checks them; the outputs take the sizes that follow. NULL entries are
 * allowed for inputs without symbolic axes. */
CLF_API clf_status clf_reference_run_shaped(const clf_graph *g, size_t ninputs, const clf_host_binding *inputs,
                                            const int64_t *const *input_shapes, size_t noutputs,
                                            const clf_host_binding *outputs, char *message, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
