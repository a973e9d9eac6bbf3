/* Facts about dtypes and nodes that every stage asks: dtype names and
 * sizes, element counts, op names for kernel names and logs, op classes. */
#include <string.h>

#include "graph_internal.h"

static_assert(CLF_DTYPE_COUNT == 3, "update dtype_names and dtype_sizes");

static const char *const dtype_names[CLF_DTYPE_COUNT] = {
    [CLF_F32] = "f32",
    [CLF_I32] = "i32",
    [CLF_BOOL] = "bool",
};

static const size_t dtype_sizes[CLF_DTYPE_COUNT] = {
    [CLF_F32] = sizeof(float),
    [CLF_I32] = sizeof(int32_t),
    [CLF_BOOL] = sizeof(uint8_t),
};

/* Builder names ("logical_not"); clf__node_op_name drops "logical_". */
static const char *const unary_names[CLF_UNARY_COUNT] = {
#define UNARY_NAME_(E, n) [CLF_UNARY_##E] = #n,
    CLF_UNARY_OP_LIST(UNARY_NAME_)
#undef UNARY_NAME_
};

static const char *const binary_names[CLF_BINARY_COUNT] = {
#define BINARY_NAME_(E, n) [CLF_BINARY_##E] = #n,
    CLF_BINARY_OP_LIST(BINARY_NAME_)
#undef BINARY_NAME_
};

const char *clf__unary_op_name(clf_unary_op op) { return unary_names[op]; }

const char *clf__binary_op_name(clf_binary_op op) { return binary_names[op]; }

static const char *const kind_names[CLF__NODE_KIND_COUNT] = {
#define KIND_NAME_(E, n, c) [CLF__NODE_##E] = n,
    CLF__NODE_KIND_LIST(KIND_NAME_)
#undef KIND_NAME_
};

static const clf__node_class kind_classes[CLF__NODE_KIND_COUNT] = {
#define KIND_CLASS_(E, n, c) [CLF__NODE_##E] = CLF__CLASS_##c,
    CLF__NODE_KIND_LIST(KIND_CLASS_)
#undef KIND_CLASS_
};

const char *clf_dtype_name(clf_dtype dt)
{
    if ((unsigned)dt >= CLF_DTYPE_COUNT)
        return NULL;
    return dtype_names[dt];
}

size_t clf_dtype_size(clf_dtype dt)
{
    if ((unsigned)dt >= CLF_DTYPE_COUNT)
        return 0;
    return dtype_sizes[dt];
}

/* The builder guarantees that the product of the non-zero extents fits in
 * int64, so this product cannot overflow. */
int64_t clf__node_numel(const clf__node *n)
{
    int64_t numel = 1;
    for (int i = 0; i < n->rank; i++) {
        if (n->shape[i] == 0)
            return 0;
        numel *= n->shape[i];
    }
    return numel;
}

static const char *strip_logical(const char *name)
{
    static const char prefix[] = "logical_";
    if (strncmp(name, prefix, sizeof prefix - 1) == 0)
        return name + sizeof prefix - 1;
    return name;
}

static const char *const reduce_names[CLF__REDUCE_KIND_COUNT] = {
#define REDUCE_NAME_(E, n) [CLF__REDUCE_##E] = n,
    CLF__REDUCE_KIND_LIST(REDUCE_NAME_)
#undef REDUCE_NAME_
};

/* Unary, binary and reduce nodes are named by their sub-op ("add", "relu", "not",
 * "and"); every other node by its kind ("transpose"). */
const char *clf__node_op_name(const clf__node *n)
{
    assert((unsigned)n->kind < CLF__NODE_KIND_COUNT);
    switch (n->kind) {
    case CLF__NODE_UNARY:
        assert(n->op >= 0 && n->op < CLF_UNARY_COUNT);
        return strip_logical(unary_names[n->op]);
    case CLF__NODE_BINARY:
        assert(n->op >= 0 && n->op < CLF_BINARY_COUNT);
        return strip_logical(binary_names[n->op]);
    case CLF__NODE_REDUCE:
        assert(n->op >= 0 && n->op < CLF__REDUCE_KIND_COUNT);
        return reduce_names[n->op];
    default:
        return kind_names[n->kind];
    }
}

clf__node_class clf__node_class_of(const clf__node *n)
{
    assert((unsigned)n->kind < CLF__NODE_KIND_COUNT);
    return kind_classes[n->kind];
}
