/* Greedy generation with a KV cache written in place.
 *
 *   generate_kv MODEL.onnx [--prompt 1,2,3] [--steps N] [--max-len L]
 *
 * Loads a decoder exported with its cache (tests/models/make_kv_fixture.py;
 * what it takes: kv_generation.h), with the sequence lengths symbolic and
 * each past/present pair a cache of L + 1 positions in a device buffer
 * that every step updates in place (clf_onnx_kv_cache). It runs the prompt,
 * then N steps of one token each, and prints the tokens, the compile time,
 * the prompt's time and the decode rate. Tokenizer-free. The loop
 * (kv_generation.c) is also `clfuse generate`. */
#include <clfuse/clfuse.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv_generation.h"

static int usage(void)
{
    fprintf(stderr, "usage: generate_kv MODEL.onnx [--prompt 1,2,3] [--steps N] [--max-len L]\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage();
    kv_generation a = {"generate_kv", argv[1], "5,17,33,2,91,64", 16, 64};
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--prompt") && i + 1 < argc)
            a.prompt = argv[++i];
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
            a.steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--max-len") && i + 1 < argc)
            a.max_len = atoll(argv[++i]);
        else
            return usage();
    }
    clf_context *ctx = NULL;
    char cmsg[512] = "";
    if (clf_context_create(clf_context_params(.message = cmsg, .message_cap = sizeof cmsg), &ctx) != CLF_OK) {
        fprintf(stderr, "generate_kv: %s\n", cmsg);
        return 1;
    }
    const int rc = kv_generate(ctx, &a);
    clf_context_destroy(&ctx);
    return rc;
}
