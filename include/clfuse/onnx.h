/* ONNX models: a binary .onnx file (a serialized ModelProto) or the ONNX
 * text syntax (what onnx.parser reads) loaded into a clf_graph.
 *
 * Loading reads the model, converts it to a clf_graph through the public
 * builders of graph.h (as a C user would), and keeps what the caller may
 * want to ask about it: the declared inputs and outputs with their ONNX
 * types and symbolic dimensions (dim_param), and each ONNX node with the
 * graph nodes its import recorded (to match against
 * clf_executable_kernel_nodes). Symbolic dimensions take their sizes from
 * clf_onnx_params: the shapes of inputs as they will be given, or sizes by
 * dimension name. Initializers become graph constants, copied once from
 * the file's bytes (f32 weights are never converted on the way). Tensor
 * data stored outside the model (TensorProto.data_location = EXTERNAL) is
 * read from files in the model's folder, and only there.
 *
 * Errors: a load that fails returns a status, sets *out to NULL and writes
 * a one-line message to params->message (when given) that names the model
 * (its path, or params->name), the place (LINE:COL for text, the node's
 * index, name and op_type, the tensor, the external file) and the problem:
 *
 *     model.onnx: node 3 'MatMul_3' (MatMul): clf_matmul: a [1,4] and b [3,1] ...
 *     model.onnxtxt:2:7: node 0 (Einsum): op Einsum is not supported by libclfuse yet ...
 *     model.onnx: initializer 'w': external data 'w.bin': 64 bytes from offset 0 ...
 *
 * Statuses: CLF_ERR_IO (the file cannot be opened or read),
 * CLF_ERR_MODEL (not a model, or a malformed one: truncated or corrupt
 * protobuf, a syntax error, a wrong ir_version, no graph, an undefined
 * name, an attribute of the wrong type, external data missing or out of
 * bounds), CLF_ERR_UNSUPPORTED (a valid model libclfuse cannot run: an op,
 * dtype or attribute value it does not have), CLF_ERR_SHAPE /
 * CLF_ERR_DTYPE / CLF_ERR_NOT_FOUND (given input shapes that do not fit
 * the model, and the graph builders' own errors), CLF_ERR_OUT_OF_MEMORY.
 *
 * Ownership: a clf_onnx_model owns its graph (unless taken with
 * clf_onnx_model_take_graph) and every string its queries return; those
 * stay valid until clf_onnx_model_destroy. Nothing of the caller's (data,
 * params, the strings in params) is kept after a load returns.
 * Thread-safety: a model may be queried from several threads at once;
 * loading different models at once is safe. Host memory comes from the
 * allocator of alloc.h.
 */
#ifndef CLFUSE_ONNX_H
#define CLFUSE_ONNX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "graph.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clf_onnx_model clf_onnx_model;

/* Which syntax the bytes are in. AUTO takes ONNX text when the data is
 * printable text starting with '<', '#' or a name, else a binary
 * ModelProto. */
typedef enum clf_onnx_format {
    CLF_ONNX_FORMAT_AUTO = 0,
    CLF_ONNX_FORMAT_BINARY = 1,
    CLF_ONNX_FORMAT_TEXT = 2,
} clf_onnx_format;

/* The shape (and dtype) an input will be given with: fixes the sizes of
 * its symbolic dimensions and is checked against its declaration. */
typedef struct clf_onnx_input_shape {
    const char *name;
    const char *origin; /* where the shape comes from, for messages ("x.npy"); may be NULL */
    int64_t shape[CLF_MAX_RANK];
    clf_dtype dtype;
    int rank;
} clf_onnx_input_shape;

/* A dimension of the model (an input's or output's dim_param) kept
 * symbolic, as clf_dim declares one: the graph is compiled once and run at
 * any size within lo..hi (hi 0: no bound) through clf_run_host_shaped or
 * clf_enqueue_shaped. */
typedef struct clf_onnx_symbol {
    const char *name;
    int64_t lo, hi;
} clf_onnx_symbol;

/* A KV cache of an exported decoder written in place: the graph input
 * past (e.g. "past_key.0", declared [B, H, past, D]) and the graph output
 * present (declared [B, H, total, D], computed as Concat(past, new) along
 * the axis where their dim_params differ). The input is declared instead
 * with capacity positions on that axis, the caller's buffer holding the
 * first `past` of them; the Concat becomes clf_cache_write, and the output
 * present is that buffer, updated: [B, H, capacity, D], bound to the same
 * memory as past (graph.h and runtime.h state the rules). The past length
 * is a size of the import (dim_names, symbols or derived below). */
typedef struct clf_onnx_kv_cache {
    const char *past, *present;
    int64_t capacity;
} clf_onnx_kv_cache;

/* A dimension whose size follows from two others at every import: name =
 * plus - minus (a decoder's past length: total - seq), never negative. It
 * is no symbol of the graph: it follows from the symbols' sizes. */
typedef struct clf_onnx_derived_dim {
    const char *name, *plus, *minus;
} clf_onnx_derived_dim;

/* Zero means default for every field. */
typedef struct clf_onnx_params {
    /* Sizes of symbolic dimensions by name: dim_names[i] is dim_values[i]. */
    const char *const *dim_names;
    const int64_t *dim_values;
    size_t ndims;
    /* Shapes of inputs as they will be given. */
    const clf_onnx_input_shape *inputs;
    size_t ninputs;
    /* AUTO: detected from the bytes. */
    clf_onnx_format format;
    /* How messages name the model: default the path (clf_onnx_load_file)
     * or "<memory>" (clf_onnx_load_memory). */
    const char *name;
    /* Where the reason for a failed load is written (a NUL-terminated
     * line of at most message_cap bytes); may be NULL. */
    char *message;
    size_t message_cap;
    /* Dimensions kept symbolic (not named in dim_names, nor fixed by
     * inputs). The model is imported at their stand-in sizes (clf_dim's
     * rule), and at a few more sizes at load: where those imports show
     * every extent and constant that changes to follow from the sizes in
     * a way the library can make (README, ONNX: Shapes), the graph is made
     * at each new size a run gives node by node; else the model is
     * imported again at each new size (as clf_run_host_shaped says,
     * programs are built per kernel form, not per size). Shape arithmetic
     * (Shape, Gather, Concat, Reshape, Range, Trilu) folds at every size,
     * so any model whose shapes follow from its inputs' works. The axes of
     * inputs and outputs whose dim_param names a symbol are symbolic.
     * Initializers are kept by the graph (which outlives the model) and
     * shared by every size (one device copy per executable). */
    const clf_onnx_symbol *symbols;
    size_t nsymbols;
    /* Dimensions that follow from others (clf_onnx_derived_dim). */
    const clf_onnx_derived_dim *derived;
    size_t nderived;
    /* KV caches written in place (clf_onnx_kv_cache). */
    const clf_onnx_kv_cache *kv_caches;
    size_t nkv_caches;
} clf_onnx_params;

#define clf_onnx_params(...) (&(const clf_onnx_params){__VA_ARGS__})

/* Loads the model at path (binary or text). External tensor data is read
 * from the folder holding the file. params may be NULL. */
CLF_API clf_status clf_onnx_load_file(const char *path, const clf_onnx_params *params, clf_onnx_model **out);
/* Loads a model from size bytes at data (not kept). base_dir is the folder
 * external tensor data is read from; NULL refuses external data. */
CLF_API clf_status clf_onnx_load_memory(const void *data, size_t size, const char *base_dir,
                                        const clf_onnx_params *params, clf_onnx_model **out);
/* Frees the model (and its graph unless taken) and sets *m to NULL;
 * accepts NULL and a pointer to NULL. */
CLF_API void clf_onnx_model_destroy(clf_onnx_model **m);

/* The graph, owned by the model (NULL once taken). */
CLF_API clf_graph *clf_onnx_model_graph(clf_onnx_model *m);
/* Hands the graph to the caller, who destroys it with clf_graph_destroy;
 * the tensors the queries below return name nodes of that graph. NULL if
 * already taken. */
CLF_API clf_graph *clf_onnx_model_take_graph(clf_onnx_model *m);

typedef struct clf_onnx_model_info {
    const char *graph_name;    /* GraphProto.name ("" when absent) */
    const char *producer_name; /* ModelProto.producer_name ("" when absent, and for text) */
    int64_t ir_version;        /* -1 when absent (text without a header) */
    int64_t opset;             /* the default domain's opset version; -1 when absent */
    clf_onnx_format format;    /* the syntax that was read: BINARY or TEXT */
} clf_onnx_model_info;

CLF_API clf_status clf_onnx_model_get_info(const clf_onnx_model *m, clf_onnx_model_info *out);

/* A graph input (an initializer is not one, even when listed among the
 * graph's inputs) or output: its declaration and what the graph made of it. */
typedef struct clf_onnx_io {
    const char *name;
    /* The declared element type: "float", "int64", ...; "?" when undeclared. */
    const char *onnx_dtype;
    /* Declared dimension d is symbolic when dim_params[d] is not NULL: its
     * dim_param ("batch"), or "?" when the model names no size; dims[d] is
     * then -1. Otherwise dims[d] is its size. */
    const char *dim_params[CLF_MAX_RANK];
    int64_t dims[CLF_MAX_RANK];
    int64_t shape[CLF_MAX_RANK]; /* the shape in the graph (graph_rank extents) */
    clf_tensor tensor;           /* the graph's input, or the value bound to the output */
    int32_t onnx_elem_type;      /* TensorProto.DataType of the declaration; 0 when undeclared */
    int rank;                    /* declared rank; -1 when no shape is declared */
    int graph_rank;
    clf_dtype dtype; /* the graph's dtype */
} clf_onnx_io;

CLF_API size_t clf_onnx_model_input_count(const clf_onnx_model *m);
CLF_API size_t clf_onnx_model_output_count(const clf_onnx_model *m);
/* Fills *out for input (output) i, in the model's order; CLF_ERR_NOT_FOUND
 * past the end. */
CLF_API clf_status clf_onnx_model_input(const clf_onnx_model *m, size_t i, clf_onnx_io *out);
CLF_API clf_status clf_onnx_model_output(const clf_onnx_model *m, size_t i, clf_onnx_io *out);

/* One ONNX node. */
typedef struct clf_onnx_node {
    const char *name;                /* "" when unnamed */
    const char *op_type;
    const char *domain;              /* "" for the default domain */
    const char *const *inputs;       /* "" for an omitted optional input */
    const char *const *outputs;
    size_t ninputs, noutputs;
    /* The graph nodes (ids as in clf_executable_kernel_nodes) its import
     * recorded: [first_graph_node, end_graph_node); empty for constants. */
    uint32_t first_graph_node, end_graph_node;
    int line, col;                   /* where the text syntax has it; 0 for binary models */
} clf_onnx_node;

CLF_API size_t clf_onnx_model_node_count(const clf_onnx_model *m);
CLF_API clf_status clf_onnx_model_node(const clf_onnx_model *m, size_t i, clf_onnx_node *out);

/* Producers of a value other than a node. */
#define CLF_ONNX_PRODUCER_INPUT (-1)
#define CLF_ONNX_PRODUCER_CONSTANT (-2) /* an initializer */

/* A named value of the model, in the order they were defined: graph
 * inputs, initializers, then node outputs. */
typedef struct clf_onnx_value {
    const char *name;
    clf_tensor tensor;  /* CLF_TENSOR_INVALID for a constant only read as an attribute (a shape, axes) */
    int64_t producer;   /* the index of the node defining it, or CLF_ONNX_PRODUCER_* */
} clf_onnx_value;

CLF_API size_t clf_onnx_model_value_count(const clf_onnx_model *m);
CLF_API clf_status clf_onnx_model_value(const clf_onnx_model *m, size_t i, clf_onnx_value *out);
/* The value named name; CLF_ERR_NOT_FOUND when there is none. */
CLF_API clf_status clf_onnx_model_find_value(const clf_onnx_model *m, const char *name, clf_onnx_value *out);

#ifdef __cplusplus
}
#endif

#endif
