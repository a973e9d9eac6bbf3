/* clfuse generate: greedy generation from a decoder exported with its KV
 * cache, through examples/kv_generation.c (the loop of examples/generate_kv). */
#include "cli.h"
#include "kv_generation.h"

int cmd_generate(const cli_opts *o)
{
    clf_context *ctx = NULL;
    int rc = cli_context(o, false, &ctx);
    if (rc != CLI_OK)
        return rc;
    const kv_generation a = {"clfuse", o->graph_path, o->prompt ? o->prompt : "5,17,33,2,91,64",
                             o->steps >= 0 ? o->steps : 16, o->max_len ? o->max_len : 64};
    rc = kv_generate(ctx, &a);
    clf_context_destroy(&ctx);
    return rc == 2 ? CLI_USAGE : rc ? CLI_FAIL : CLI_OK;
}
