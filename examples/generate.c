/* Greedy generation with one executable for every sequence length.
 *
 *   generate MODEL.onnx [--prompt 1,2,3] [--steps N] [--max-len L]
 *
 * Loads a decoder exported to ONNX with dynamic axes (input_ids and, if the
 * model has it, attention_mask: [batch, sequence] int64; logits [batch,
 * sequence, vocab] f32) with the batch fixed to 1 and the sequence length
 * symbolic (clf_onnx_params.symbols), compiles it once, runs the prompt,
 * then N steps that each append the most likely next token and run the
 * whole sequence again at its new length. Prints the tokens, the compile
 * time, the prompt's time and the steps' rate. Tokenizer-free: token ids
 * in, token ids out.
 *
 * The steps recompute every position (the model has no cache inputs; see
 * generate_kv.c for a decoder exported with its KV cache): this shows one
 * compile serving every length (no OpenCL build after clf_compile where
 * the kernels take forms seen before), not a decoder's per-token cost. */
#include <clfuse/clfuse.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int usage(void)
{
    fprintf(stderr, "usage: generate MODEL.onnx [--prompt 1,2,3] [--steps N] [--max-len L]\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage();
    const char *path = argv[1], *prompt = "1,2,3,4,5,6,7,8";
    int steps = 16;
    int64_t max_len = 256;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--prompt") && i + 1 < argc)
            prompt = argv[++i];
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
            steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--max-len") && i + 1 < argc)
            max_len = atoll(argv[++i]);
        else
            return usage();
    }
    int64_t *tokens = calloc((size_t)max_len, sizeof *tokens), *ones = calloc((size_t)max_len, sizeof *ones);
    int64_t len = 0;
    for (const char *p = prompt; *p && len < max_len;) {
        char *end;
        tokens[len++] = strtoll(p, &end, 10);
        p = *end == ',' ? end + 1 : end;
        if (end == p && *p)
            return usage();
    }
    for (int64_t i = 0; i < max_len; i++)
        ones[i] = 1;
    if (len == 0 || steps < 0 || len + steps > max_len) {
        fprintf(stderr, "generate: the prompt (%lld tokens) and %d steps must fit in --max-len %lld\n", (long long)len,
                steps, (long long)max_len);
        return 2;
    }

    /* The names of the inputs' dimensions, from a load at the prompt's
     * length; then the model with the batch fixed and the sequence
     * symbolic. */
    char why[512] = "";
    clf_onnx_input_shape shape = {.name = NULL, .dtype = CLF_I64, .rank = 2, .shape = {1, len}};
    clf_onnx_model *model = NULL;
    shape.name = "input_ids"; /* the first input, as exporters write it */
    if (clf_onnx_load_file(path, clf_onnx_params(.inputs = &shape, .ninputs = 1, .message = why,
                                                 .message_cap = sizeof why),
                           &model) != CLF_OK) {
        fprintf(stderr, "generate: %s\n", why);
        return 1;
    }
    clf_onnx_io ids_io;
    if (clf_onnx_model_input(model, 0, &ids_io) != CLF_OK || ids_io.rank != 2 || !ids_io.dim_params[0] ||
        !ids_io.dim_params[1]) {
        fprintf(stderr, "generate: the model's first input is not input_ids [batch, sequence] with named axes\n");
        return 1;
    }
    char batch[128], seq[128], mask_name[128] = "";
    snprintf(batch, sizeof batch, "%s", ids_io.dim_params[0]);
    snprintf(seq, sizeof seq, "%s", ids_io.dim_params[1]);
    const size_t ninputs = clf_onnx_model_input_count(model);
    if (ninputs > 1) {
        clf_onnx_io io;
        clf_onnx_model_input(model, 1, &io);
        snprintf(mask_name, sizeof mask_name, "%s", io.name);
    }
    clf_onnx_model_destroy(&model);
    const char *fixed[] = {batch};
    const int64_t one = 1;
    clf_onnx_symbol sym = {seq, 1, max_len};
    if (clf_onnx_load_file(path, clf_onnx_params(.dim_names = fixed, .dim_values = &one, .ndims = 1, .symbols = &sym,
                                                 .nsymbols = 1, .message = why, .message_cap = sizeof why),
                           &model) != CLF_OK) {
        fprintf(stderr, "generate: %s\n", why);
        return 1;
    }
    clf_onnx_io logits_io;
    clf_onnx_model_output(model, 0, &logits_io);
    const int64_t vocab = logits_io.shape[logits_io.graph_rank - 1];

    clf_context *ctx = NULL;
    char cmsg[512] = "";
    if (clf_context_create(clf_context_params(.message = cmsg, .message_cap = sizeof cmsg), &ctx) != CLF_OK) {
        fprintf(stderr, "generate: %s\n", cmsg);
        return 1;
    }
    clf_executable *exe = NULL;
    double t0 = now_ms();
    if (clf_compile(ctx, clf_onnx_model_graph(model), NULL, &exe) != CLF_OK) {
        fprintf(stderr, "generate: %s\n", clf_context_last_error(ctx));
        return 1;
    }
    const double compile_ms = now_ms() - t0;
    float *logits = malloc((size_t)(max_len * vocab) * sizeof *logits);
    printf("prompt:");
    for (int64_t i = 0; i < len; i++)
        printf(" %lld", (long long)tokens[i]);
    printf("\ngenerated:");
    double prompt_ms = 0, steps_ms = 0;
    for (int s = 0; s <= steps; s++) {
        const int64_t dims[2] = {1, len};
        const int64_t *shapes[2] = {dims, dims};
        clf_host_binding in[2] = {{"input_ids", tokens}, {mask_name, ones}};
        clf_host_binding out[1] = {{logits_io.name, logits}};
        t0 = now_ms();
        if (clf_run_host_shaped(exe, mask_name[0] ? 2 : 1, in, shapes, 1, out) != CLF_OK) {
            fprintf(stderr, "\ngenerate: at length %lld: %s\n", (long long)len, clf_context_last_error(ctx));
            return 1;
        }
        const double ms = now_ms() - t0;
        if (s == 0)
            prompt_ms = ms;
        else
            steps_ms += ms;
        if (s == steps)
            break;
        /* The most likely token after the last position. */
        const float *last = logits + (len - 1) * vocab;
        int64_t best = 0;
        for (int64_t v = 1; v < vocab; v++)
            if (last[v] > last[best])
                best = v;
        tokens[len++] = best;
        printf(" %lld", (long long)best);
        fflush(stdout);
    }
    printf("\nclf_compile %.0f ms; prompt of %lld tokens %.2f ms; %d steps %.2f ms each (%.1f tokens/s, every "
           "length new)\n",
           compile_ms, (long long)(len - steps), prompt_ms, steps, steps ? steps_ms / steps : 0.0,
           steps_ms > 0 ? 1e3 * steps / steps_ms : 0.0);
    free(logits);
    free(tokens);
    free(ones);
    clf_executable_destroy(&exe);
    clf_onnx_model_destroy(&model);
    clf_context_destroy(&ctx);
    return 0;
}
