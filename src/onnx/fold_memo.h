/* Constant folds remembered across the imports of one model.
 *
 * A model with symbolic dimensions whose graph cannot be made node by
 * node is imported again at every new size (onnx_model.c's regen), and
 * its imports at the sizes that check whether it can be are several more;
 * the importer folds the nodes whose inputs
 * are all literals (the exporters' Shape -> Gather -> Concat -> Reshape
 * chains, masks from Range) by running the reference interpreter on a
 * graph of one node. Most of those folds see the same literals at every
 * size. The memo keeps each fold's results by the node's index and its
 * input literals' types, shapes and bytes, so that a later import takes
 * them instead of folding again. A fold's results depend on nothing else:
 * the node's attributes and the model's opset are the AST's, which the
 * memo belongs to.
 *
 * Thread-safe: the imports of one model may run at once (runs at new sizes
 * from several threads). Bounded: when the entries pass CLF__FOLD_MEMO_BYTES
 * the memo starts again empty. */
#ifndef CLFUSE_ONNX_FOLD_MEMO_H
#define CLFUSE_ONNX_FOLD_MEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "onnx_ast.h"

#define CLF__FOLD_MEMO_BYTES ((size_t)8 << 20)
/* The most one entry (key and results) may take. */
#define CLF__FOLD_MEMO_ENTRY_BYTES (CLF__FOLD_MEMO_BYTES / 8)

typedef struct clf__fold_memo clf__fold_memo;

/* An empty memo, or NULL when out of memory. */
clf__fold_memo *clf__fold_memo_new(void);
void clf__fold_memo_free(clf__fold_memo *M);

/* A fold's key: node's index and its inputs (ins[k] NULL for an absent
 * input), written by clf__fold_memo_key_make; freed by _key_free. */
typedef struct clf__fold_key {
    uint8_t *bytes;
    size_t len;
    uint64_t hash;
} clf__fold_key;

/* false (the key then empty) where an input has no bytes to compare (a
 * string tensor, or none read), the key alone passes
 * CLF__FOLD_MEMO_ENTRY_BYTES, or memory ran out: such a fold is neither
 * looked up nor remembered. */
bool clf__fold_memo_key_make(int node, const clf__onnx_tensor *const *ins, int nin, clf__fold_key *key);
void clf__fold_memo_key_free(clf__fold_key *key);

/* One result of a fold: output slot, element type (clf__onnx_elem), shape
 * and bytes. */
typedef struct clf__fold_output {
    int slot;
    int elem;
    int rank;
    const int64_t *shape;
    const void *data;
    size_t bytes;
} clf__fold_output;

/* Called for each remembered output of a hit, under the memo's lock;
 * returns false to stop (out of memory). */
typedef bool (*clf__fold_take)(void *ctx, const clf__fold_output *out);

/* Whether key was folded before; if so, take sees each output in order and
 * *attrs_read is the attribute bits the fold read. false also when take
 * stopped (*stopped then true). */
bool clf__fold_memo_get(clf__fold_memo *M, const clf__fold_key *key, clf__fold_take take, void *ctx,
                        uint64_t *attrs_read, bool *stopped);

/* Remembers key's nout outputs and attribute bits (copied). Out of memory
 * or too large: nothing is remembered. */
void clf__fold_memo_put(clf__fold_memo *M, const clf__fold_key *key, const clf__fold_output *outs, int nout,
                        uint64_t attrs_read);

#endif
