/* Facts about dtypes and nodes that every stage asks: dtype names and
 * sizes, element counts, op names for kernel names and logs, op classes. */
#include <string.h>

#include "graph/dtype_table.h"
#include "graph_internal.h"

/* Builder names ("logical_not") of the public ops, from the op table. */
const char *clf__unary_op_name(clf_unary_op op) { return clf__op_info_of(clf__op_of_unary(op))->builder; }

const char *clf__binary_op_name(clf_binary_op op) { return clf__op_info_of(clf__op_of_binary(op))->builder; }

const char *clf_dtype_name(clf_dtype dt)
{
    if ((unsigned)dt >= CLF_DTYPE_COUNT)
        return NULL;
    return clf__dtype_table[dt].name;
}

size_t clf_dtype_size(clf_dtype dt)
{
    if ((unsigned)dt >= CLF_DTYPE_COUNT)
        return 0;
    return clf__dtype_table[dt].size;
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

static const char *const reduce_names[CLF__REDUCE_KIND_COUNT] = {
#define REDUCE_NAME_(E, n, arg) [CLF__REDUCE_##E] = n,
    CLF__REDUCE_KIND_LIST(REDUCE_NAME_)
#undef REDUCE_NAME_
};

/* Reduce nodes are named by their kind ("sum", "argmax"); every other node
 * by its op's row ("add", "relu", "not", "transpose"). */
const char *clf__node_op_name(const clf__node *n)
{
    if (n->op == CLF__OP_REDUCE) {
        assert((unsigned)n->attr.reduce.kind < CLF__REDUCE_KIND_COUNT);
        return reduce_names[n->attr.reduce.kind];
    }
    return clf__op_info_of(n->op)->name;
}

clf__node_class clf__node_class_of(const clf__node *n) { return clf__op_info_of(n->op)->cls; }
