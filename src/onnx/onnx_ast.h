/* The ONNX model as both syntaxes produce it, before any libclfuse op is
 * made: the text parser (onnx_text.c) and the binary reader
 * (onnx_binary.c) each build this AST, and the importer (onnx_import.c)
 * turns it into a clf_graph. Every string and array lives in the model's
 * arena and dies with clf__onnx_ast_free(); tensor data may instead point
 * into memory the arena's cleanups release (the unpacked protobuf, a
 * mapped external file).
 *
 * The text syntax (what onnx.parser reads): an optional <key: value, ...>
 * header, then
 *
 *     name (float[N, 64] x, float[64] w = {...}) => (float[N, 64] y)
 *     <float[1] extra = {0.5}>          (optional initializers / value infos)
 *     {
 *         t = Mul(x, w)
 *         y = Relu <alpha = 1.0> (t)    (attributes in <>, optional)
 *     }
 */
#ifndef CLFUSE_ONNX_AST_H
#define CLFUSE_ONNX_AST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clfuse/onnx.h"

#define CLF__ONNX_MAX_RANK 8
/* The newest ONNX IR version accepted. Debian 12's onnx.proto is IR 8;
 * IR 9 and 10 only add fields and types that libclfuse refuses anyway
 * (float8, int4, function overloads), and exporters write them today. */
#define CLF__ONNX_MAX_IR_VERSION 10
/* The newest opset of the default domain read. Every op the import reads
 * was checked against onnx 1.23's schemas up to it: past opset 18 their
 * new versions add element types (float8, int4, int2, float4, ...), which
 * are refused, and attributes for them (Cast's round_mode, Range's
 * stash_type), which are refused as unknown. A later opset may give an op
 * another meaning, so it is refused rather than read as this one. */
#define CLF__ONNX_MAX_OPSET 28
/* Opset imports appeared in IR 3; older models are not read. */
#define CLF__ONNX_MIN_IR_VERSION 3

/* TensorProto.DataType values. */
enum {
    CLF__ONNX_UNDEFINED = 0,
    CLF__ONNX_FLOAT = 1,
    CLF__ONNX_UINT8 = 2,
    CLF__ONNX_INT8 = 3,
    CLF__ONNX_UINT16 = 4,
    CLF__ONNX_INT16 = 5,
    CLF__ONNX_INT32 = 6,
    CLF__ONNX_INT64 = 7,
    CLF__ONNX_STRING = 8,
    CLF__ONNX_BOOL = 9,
    CLF__ONNX_FLOAT16 = 10,
    CLF__ONNX_DOUBLE = 11,
    CLF__ONNX_UINT32 = 12,
    CLF__ONNX_UINT64 = 13,
    CLF__ONNX_COMPLEX64 = 14,
    CLF__ONNX_COMPLEX128 = 15,
    CLF__ONNX_BFLOAT16 = 16,
};

/* "float", "int64", ... for an element type code; "?" when unknown. */
const char *clf__onnx_elem_name(int elem);
/* The element type named name (as the text syntax spells it), else
 * CLF__ONNX_UNDEFINED. */
int clf__onnx_elem_from_name(const char *name, size_t len);
/* Bytes per element of the types tensors can hold here; 0 for strings,
 * complex and unknown codes. */
size_t clf__onnx_elem_size(int elem);
bool clf__onnx_elem_is_float(int elem);
/* Integer types and bool. */
bool clf__onnx_elem_is_integer(int elem);

/* ---- Arena ------------------------------------------------------------- */

struct clf__onnx_block;
struct clf__onnx_cleanup;

typedef struct clf__onnx_arena {
    struct clf__onnx_block *blocks;
    struct clf__onnx_cleanup *cleanups;
} clf__onnx_arena;

/* Zeroed memory aligned for any type; NULL when out of memory. */
void *clf__onnx_alloc(clf__onnx_arena *a, size_t size);
/* A NUL-terminated copy of n bytes of s. */
char *clf__onnx_strndup(clf__onnx_arena *a, const char *s, size_t n);
/* Calls fn(ctx) when the arena's data is released (clf__onnx_release_data
 * or clf__onnx_arena_free), newest first. false when out of memory (then
 * fn is not called: the caller still owns ctx). */
bool clf__onnx_defer(clf__onnx_arena *a, void (*fn)(void *), void *ctx);
/* Runs the cleanups, then frees every block. */
void clf__onnx_arena_free(clf__onnx_arena *a);

/* ---- The model --------------------------------------------------------- */

typedef struct clf__onnx_pos {
    int line, col; /* 0, 0 where there is no text (binary models) */
} clf__onnx_pos;

/* One extent: a number (param NULL), a symbol such as N (param), or
 * unknown (param "?"). */
typedef struct clf__onnx_dim {
    int64_t value;
    const char *param;
} clf__onnx_dim;

typedef struct clf__onnx_type {
    int elem;       /* CLF__ONNX_UNDEFINED when the value has no declared type */
    bool has_shape; /* "float" alone has none; "float[]" is rank 0 */
    int rank;
    clf__onnx_dim dims[CLF__ONNX_MAX_RANK];
    clf__onnx_pos pos;
} clf__onnx_type;

/* A tensor literal: n elements of type.elem, stored as the element type's
 * own bytes in host order (f32 as float, int64 as int64_t, bool as one
 * byte, float16 as its 16 bits), never widened. data is NULL when n is 0
 * and after clf__onnx_release_data. */
typedef struct clf__onnx_tensor {
    clf__onnx_type type; /* has_shape; numeric dims only */
    size_t n;
    const void *data;
    const char *name; /* the initializer's or attribute's, for messages */
} clf__onnx_tensor;

/* Element k of t read as an integer (integer and bool types; floats are
 * truncated) or as a double (any type). k < t->n. */
int64_t clf__onnx_tensor_int(const clf__onnx_tensor *t, size_t k);
double clf__onnx_tensor_double(const clf__onnx_tensor *t, size_t k);

typedef enum clf__onnx_attr_kind {
    CLF__ONNX_ATTR_INT,
    CLF__ONNX_ATTR_FLOAT,
    CLF__ONNX_ATTR_STRING,
    CLF__ONNX_ATTR_INTS,
    CLF__ONNX_ATTR_FLOATS,
    CLF__ONNX_ATTR_STRINGS,
    CLF__ONNX_ATTR_TENSOR,
    CLF__ONNX_ATTR_REF, /* @name, a function attribute reference */
} clf__onnx_attr_kind;

/* An attribute. INT also sets f (its value as a double) and INTS also
 * floats, as the importer accepts an integer where a number is due. */
typedef struct clf__onnx_attr {
    const char *name;
    clf__onnx_attr_kind kind;
    int64_t i;
    double f;
    const char *s;
    size_t n; /* list length */
    int64_t *ints;
    double *floats;
    const char **strings;
    clf__onnx_tensor *t;
    clf__onnx_pos pos;
} clf__onnx_attr;

typedef struct clf__onnx_node {
    const char *name;   /* "" when unnamed (always, in the text syntax) */
    const char *domain; /* "" for the default domain */
    const char *op;
    const char **inputs; /* "" for an omitted optional input */
    int ninputs;
    const char **outputs;
    int noutputs;
    clf__onnx_attr *attrs;
    int nattrs;
    clf__onnx_pos pos; /* of the first output name */
    clf__onnx_pos op_pos;
} clf__onnx_node;

/* A graph input, output, value info or initializer. */
typedef struct clf__onnx_value {
    const char *name;
    clf__onnx_type type;
    clf__onnx_tensor *init; /* an initializer's value, else NULL */
    clf__onnx_pos pos;
} clf__onnx_value;

typedef struct clf__onnx_model {
    int64_t ir_version; /* -1 when absent */
    int64_t opset;      /* the default domain's opset; -1 when absent */
    clf_onnx_format format;
    const char *name;
    const char *producer;
    clf__onnx_value *inputs; /* in order, initializers listed as inputs included */
    int ninputs;
    clf__onnx_value *outputs;
    int noutputs;
    clf__onnx_value *extras; /* other initializers and value infos (text: the <...> list) */
    int nextras;
    clf__onnx_node *nodes;
    int nnodes;
    clf__onnx_arena arena;
} clf__onnx_model;

/* The attribute named name of node n, or NULL. */
const clf__onnx_attr *clf__onnx_node_attr(const clf__onnx_node *n, const char *name);

/* "node 3 'mm' (MatMul)": how messages name node index of m. */
void clf__onnx_node_label(const clf__onnx_model *m, int index, char *buf, size_t cap);

/* Releases the memory tensor data points into (the arena's cleanups) and
 * sets every tensor's data to NULL; names and types stay. */
void clf__onnx_release_data(clf__onnx_model *m);
void clf__onnx_ast_free(clf__onnx_model *m);

/* ---- Readers ----------------------------------------------------------- */

/* Whether the bytes look like the text syntax (the format AUTO picks). */
bool clf__onnx_looks_like_text(const void *data, size_t size);

/* Parses text (len bytes, need not be NUL-terminated). On failure returns
 * CLF_ERR_MODEL (or CLF_ERR_OUT_OF_MEMORY) and writes "LINE:COL: what was
 * expected" to err; on success out owns its arena. */
clf_status clf__onnx_parse_text(const char *text, size_t len, clf__onnx_model *out, char *err, size_t cap);

/* Decodes a serialized ModelProto. External tensor data is read from
 * files under base_dir (NULL: refused). On failure returns the status and
 * writes the reason (naming the node, initializer or file) to err. The
 * model does not point into data (protobuf-c copies what it decodes), but
 * into the decoded message and the mapped external files, which its
 * arena's cleanups release. */
clf_status clf__onnx_read_binary(const void *data, size_t size, const char *base_dir, clf__onnx_model *out,
                                 char *err, size_t cap);

#endif
