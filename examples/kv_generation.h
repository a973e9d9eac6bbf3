/* Greedy generation from a decoder exported with its KV cache, the cache
 * written in place: the loop that examples/generate_kv and `clfuse
 * generate` share.
 *
 * The model (tests/models/make_kv_fixture.py): inputs input_ids [1, seq],
 * attention_mask [1, total], position_ids [1, seq], past_key.<i> /
 * past_value.<i> [1, heads, past, head_dim]; outputs logits [1, seq,
 * vocab] and present_key.<i> / present_value.<i> [1, heads, total,
 * head_dim]; seq and total symbolic, past = total - seq derived. Each
 * past_X / present_X pair becomes a cache of max_len + 1 positions in a
 * device buffer that every step updates in place (clf_onnx_kv_cache). The
 * prompt runs first (after one masked, zero past position: the export's
 * past cannot be empty), then `steps` steps of one token each, then the
 * last step again (a length already run). Tokenizer-free. */
#ifndef CLFUSE_EXAMPLES_KV_GENERATION_H
#define CLFUSE_EXAMPLES_KV_GENERATION_H

#include <clfuse/clfuse.h>

typedef struct kv_generation {
    const char *prog;       /* the prefix of error messages */
    const char *model_path; /* a .onnx file */
    const char *prompt;     /* token ids, comma-separated */
    int steps;              /* tokens to generate */
    long long max_len;      /* the caches' positions (prompt + steps at most) */
} kv_generation;

/* Loads the model, compiles it on ctx and generates; prints the prompt,
 * the tokens ("generated: ..."), the compile time, the prompt's time and
 * the decode rate on stdout, an error as one line "PROG: ..." on stderr.
 * Returns 0, 1 (a failure of the library or the device) or 2 (a model
 * file that does not load or has no cache, an empty or malformed prompt,
 * more steps than max_len holds). */
int kv_generate(clf_context *ctx, const kv_generation *a);

#endif
