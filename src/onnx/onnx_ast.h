/* The ONNX textual syntax (what onnx.parser reads) for one model: an
 * optional <key: value, ...> header, then
 *
 *     name (float[N, 64] x, float[64] w = {...}) => (float[N, 64] y)
 *     <float[1] extra = {0.5}>          (optional initializers / value infos)
 *     {
 *         t = Mul(x, w)
 *         y = Relu <alpha = 1.0> (t)    (attributes in <>, optional)
 *     }
 *
 * The lexer and parser turn the text into the AST below; every string and
 * array lives in the model's arena and dies with onnx_model_free(). Nothing
 * here knows libclfuse: onnx_import.c maps the AST onto the graph builders.
 */
#ifndef CLFUSE_TOOL_ONNX_TEXT_PARSER_H
#define CLFUSE_TOOL_ONNX_TEXT_PARSER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ONNX_MAX_RANK 8

/* TensorProto.DataType values used by Cast's "to" and by the type names. */
enum {
    ONNX_UNDEFINED = 0,
    ONNX_FLOAT = 1,
    ONNX_UINT8 = 2,
    ONNX_INT8 = 3,
    ONNX_UINT16 = 4,
    ONNX_INT16 = 5,
    ONNX_INT32 = 6,
    ONNX_INT64 = 7,
    ONNX_STRING = 8,
    ONNX_BOOL = 9,
    ONNX_FLOAT16 = 10,
    ONNX_DOUBLE = 11,
    ONNX_UINT32 = 12,
    ONNX_UINT64 = 13,
    ONNX_BFLOAT16 = 16,
};

/* "float", "int64", ... for an element type code; "?" when unknown. */
const char *onnx_elem_name(int elem);
bool onnx_elem_is_float(int elem);

typedef struct onnx_pos {
    int line, col;
} onnx_pos;

/* One extent: a number (param NULL), a symbol such as N (param), or
 * unknown ('?': param "?"). */
typedef struct onnx_dim {
    int64_t value;
    const char *param;
} onnx_dim;

typedef struct onnx_type {
    int elem;
    bool has_shape; /* "float" alone has none; "float[]" is rank 0 */
    int rank;
    onnx_dim dims[ONNX_MAX_RANK];
    onnx_pos pos;
} onnx_type;

/* A tensor literal: values in f (float types) or i (integer and bool types). */
typedef struct onnx_tensor {
    onnx_type type; /* has_shape; no symbolic dims */
    size_t n;
    double *f;
    int64_t *i;
} onnx_tensor;

typedef enum onnx_attr_kind {
    ONNX_ATTR_INT,
    ONNX_ATTR_FLOAT,
    ONNX_ATTR_STRING,
    ONNX_ATTR_INTS,
    ONNX_ATTR_FLOATS,
    ONNX_ATTR_STRINGS,
    ONNX_ATTR_TENSOR,
    ONNX_ATTR_REF, /* @name, a function attribute reference */
} onnx_attr_kind;

typedef struct onnx_attr {
    const char *name;
    onnx_attr_kind kind;
    int64_t i;
    double f;
    const char *s;
    size_t n; /* list length */
    int64_t *ints;
    double *floats;
    const char **strings;
    onnx_tensor *t;
    onnx_pos pos;
} onnx_attr;

typedef struct onnx_node {
    const char *domain; /* "" for the default domain */
    const char *op;
    const char **inputs; /* "" for an omitted optional input */
    int ninputs;
    const char **outputs;
    int noutputs;
    onnx_attr *attrs;
    int nattrs;
    onnx_pos pos; /* of the first output name */
    onnx_pos op_pos;
} onnx_node;

/* A graph input, output, value info or initializer. */
typedef struct onnx_value {
    const char *name;
    onnx_type type;
    onnx_tensor *init; /* an initializer's value, else NULL */
    onnx_pos pos;
} onnx_value;

typedef struct onnx_model {
    int64_t ir_version;      /* -1 when absent */
    int64_t opset;           /* the default domain's opset; -1 when absent */
    const char *name;
    onnx_value *inputs;      /* in order, initializers included */
    int ninputs;
    onnx_value *outputs;
    int noutputs;
    onnx_value *extras;      /* the optional <...> list after the outputs */
    int nextras;
    onnx_node *nodes;
    int nnodes;
    struct onnx_arena *arena;
} onnx_model;

/* Parses text (len bytes, need not be NUL-terminated). On failure returns
 * -1 and writes "LINE:COL: what was expected" to err; -2 when out of memory.
 * On success the model owns its arena: free it with onnx_model_free(). */
int onnx_parse(const char *text, size_t len, onnx_model *out, char *err, size_t cap);
void onnx_model_free(onnx_model *m);

/* The attribute named name of node n, or NULL. */
const onnx_attr *onnx_node_attr(const onnx_node *n, const char *name);

#endif
