/* Turns a parsed ONNX text model into a clf_graph through the public
 * builders, mapping ONNX op names and attributes onto libclfuse ops.
 * Symbolic dimensions (float[N, 64]) take their sizes from the shapes of
 * the inputs given, or from explicit NAME=SIZE bindings. */
#ifndef CLFUSE_TOOL_ONNX_IMPORT_H
#define CLFUSE_TOOL_ONNX_IMPORT_H

#include <stddef.h>
#include <stdint.h>

#include <clfuse/graph.h>

#include "onnx_ast.h"

/* The shape of an input as given (an .npy file); origin names it in
 * messages. */
typedef struct import_given {
    const char *name;
    const char *origin;
    clf_dtype dtype;
    int rank;
    int64_t shape[CLF_MAX_RANK];
} import_given;

typedef struct import_dim {
    const char *name;
    int64_t value;
} import_dim;

/* Per ONNX node: the clf nodes its import recorded, [first, end). */
typedef struct import_node {
    uint32_t first, end;
} import_node;

/* A named value of the model. */
typedef struct import_value {
    const char *name;
    clf_tensor t;   /* invalid for a constant that was only read as an attribute */
    int producer;   /* index of the ONNX node, -1 for a graph input, -2 for a constant/initializer */
} import_value;

typedef struct import_result {
    clf_graph *g;
    import_node *nodes; /* model->nnodes entries */
    import_value *values;
    size_t nvalues;
} import_result;

/* Builds out->g. Returns 0; or 2 with "LINE:COL: reason" (or a reason
 * without a position) in err for a bad model or bad given shapes; or 1 when
 * out of memory. */
int onnx_import(const onnx_model *m, const import_given *given, size_t ngiven, const import_dim *dims,
                size_t ndims, import_result *out, char *err, size_t cap);
void import_result_free(import_result *r);

/* The value named name, or NULL. */
const import_value *import_find(const import_result *r, const char *name);

#endif
