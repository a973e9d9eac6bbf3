/* Turns an ONNX AST (either syntax) into a clf_graph through the public
 * builders, mapping ONNX op names and attributes onto libclfuse ops.
 * Symbolic dimensions (float[N, 64]) take their sizes from the shapes of
 * the inputs given, or from sizes given by name (clf_onnx_params). */
#ifndef CLFUSE_ONNX_IMPORT_H
#define CLFUSE_ONNX_IMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clfuse/graph.h"
#include "clfuse/onnx.h"
#include "fold_memo.h"
#include "onnx_ast.h"

/* Per ONNX node: the graph nodes its import recorded, [first, end). */
typedef struct clf__onnx_node_span {
    uint32_t first, end;
} clf__onnx_node_span;

/* A named value of the model. */
typedef struct clf__onnx_import_value {
    const char *name; /* the AST's */
    clf_tensor t;     /* invalid for a constant that was only read as an attribute */
    int64_t producer; /* the ONNX node's index, or CLF_ONNX_PRODUCER_INPUT / _CONSTANT */
} clf__onnx_import_value;

typedef struct clf__onnx_import {
    clf_graph *g;
    clf__onnx_node_span *nodes; /* one per AST node */
    clf__onnx_import_value *values;
    size_t nvalues;
} clf__onnx_import;

/* Builds out->g from m, with the sizes and shapes of p (may be NULL;
 * p->symbols is the caller's business, onnx_model.c). borrow: the
 * initializers become constants borrowing m's bytes, which must outlive
 * the graph. folds (may be NULL): the folds of m's earlier imports, taken
 * and added to. On failure returns the status and writes "[LINE:COL: ][node
 * K 'name' (Op): ]reason" to err, and out is empty. Strings in out point
 * into m. */
clf_status clf__onnx_import_model(const clf__onnx_model *m, const clf_onnx_params *p, bool borrow,
                                  clf__fold_memo *folds, clf__onnx_import *out, char *err, size_t cap);
void clf__onnx_import_free(clf__onnx_import *r);

#endif
