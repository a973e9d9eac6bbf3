/* Greedy generation with a KV cache written in place.
 *
 *   generate_kv MODEL.onnx [--prompt 1,2,3] [--steps N] [--max-len L]
 *
 * Loads a decoder exported with its cache (tests/models/make_kv_fixture.py:
 * inputs input_ids [1, seq], attention_mask [1, total], position_ids
 * [1, seq], past_key.<i> / past_value.<i> [1, heads, past, head_dim];
 * outputs logits [1, seq, vocab] and present_key.<i> / present_value.<i>
 * [1, heads, total, head_dim]), with seq and total symbolic, past = total -
 * seq derived, and each past/present pair a cache of L + 1 positions in a
 * device buffer that every step updates in place (clf_onnx_kv_cache). It
 * runs the prompt (after one masked, zero past position: the export's past
 * cannot be empty), then N steps of one token each, and prints the tokens,
 * the compile time, the prompt's time and the decode rate. Tokenizer-free. */
#include <clfuse/clfuse.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_CACHES 64

/* How many times the last step runs again, timed as a seen length. */
#define REPEATS 5

static int cmp_ms(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int usage(void)
{
    fprintf(stderr, "usage: generate_kv MODEL.onnx [--prompt 1,2,3] [--steps N] [--max-len L]\n");
    return 2;
}

/* A device buffer holding n int64 values. */
static cl_mem ints(clf_context *ctx, const int64_t *v, int64_t n)
{
    cl_int err;
    return clCreateBuffer(clf_context_cl(ctx), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (size_t)n * sizeof *v,
                          (void *)v, &err);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage();
    const char *path = argv[1], *prompt = "5,17,33,2,91,64";
    int steps = 16;
    int64_t max_len = 64;
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
    int64_t *tokens = calloc((size_t)max_len + 1, sizeof *tokens), *mask = calloc((size_t)max_len + 1, sizeof *mask);
    int64_t *pos = calloc((size_t)max_len + 1, sizeof *pos), len = 0;
    for (const char *p = prompt; *p && len < max_len;) {
        char *end;
        tokens[len++] = strtoll(p, &end, 10);
        if (end == p)
            return usage();
        p = *end == ',' ? end + 1 : end;
    }
    if (len == 0 || steps < 0 || len + steps > max_len) {
        fprintf(stderr, "generate_kv: the prompt (%lld tokens) and %d steps must fit in --max-len %lld\n",
                (long long)len, steps, (long long)max_len);
        return 2;
    }
    for (int64_t i = 0; i <= max_len; i++) {
        mask[i] = i > 0; /* position 0: the masked past */
        pos[i] = i;
    }

    /* The caches: every input named past_* with its output present_*. */
    char why[512] = "";
    clf_onnx_model *model = NULL;
    const char *fixed_names[] = {"seq", "total", "past"};
    const int64_t fixed_values[] = {len, len + 1, 1};
    if (clf_onnx_load_file(path, clf_onnx_params(.dim_names = fixed_names, .dim_values = fixed_values, .ndims = 3,
                                                 .message = why, .message_cap = sizeof why),
                           &model) != CLF_OK) {
        fprintf(stderr, "generate_kv: %s\n", why);
        return 1;
    }
    static char past[MAX_CACHES][128], present[MAX_CACHES][128];
    clf_onnx_kv_cache kv[MAX_CACHES];
    size_t ncaches = 0, cache_bytes[MAX_CACHES];
    for (size_t i = 0; i < clf_onnx_model_input_count(model) && ncaches < MAX_CACHES; i++) {
        clf_onnx_io io;
        clf_onnx_model_input(model, i, &io);
        if (strncmp(io.name, "past_", 5) != 0)
            continue;
        snprintf(past[ncaches], sizeof past[0], "%s", io.name);
        snprintf(present[ncaches], sizeof present[0], "present_%s", io.name + 5);
        /* The sequence axis: where the declarations of past and present
         * name different dimensions (the library finds it the same way). */
        int axis = -1;
        for (size_t o = 0; o < clf_onnx_model_output_count(model); o++) {
            clf_onnx_io oio;
            clf_onnx_model_output(model, o, &oio);
            for (int d = 0; !strcmp(oio.name, present[ncaches]) && d < io.rank && d < oio.rank; d++)
                if (io.dim_params[d] && oio.dim_params[d] && strcmp(io.dim_params[d], oio.dim_params[d]))
                    axis = d;
        }
        if (axis < 0) {
            fprintf(stderr, "generate_kv: no output %s declared with a sequence axis of its own\n", present[ncaches]);
            return 1;
        }
        size_t bytes = clf_dtype_size(io.dtype);
        for (int d = 0; d < io.graph_rank; d++)
            bytes *= (size_t)(d == axis ? max_len + 1 : io.shape[d]);
        cache_bytes[ncaches] = bytes;
        kv[ncaches] = (clf_onnx_kv_cache){past[ncaches], present[ncaches], max_len + 1};
        ncaches++;
    }
    clf_onnx_model_destroy(&model);
    if (!ncaches) {
        fprintf(stderr, "generate_kv: the model has no past_* inputs (export it with its cache)\n");
        return 1;
    }
    clf_onnx_symbol syms[2] = {{"seq", 1, max_len}, {"total", 2, max_len + 1}};
    clf_onnx_derived_dim derived = {"past", "total", "seq"};
    if (clf_onnx_load_file(path, clf_onnx_params(.symbols = syms, .nsymbols = 2, .derived = &derived, .nderived = 1,
                                                 .kv_caches = kv, .nkv_caches = ncaches, .message = why,
                                                 .message_cap = sizeof why),
                           &model) != CLF_OK) {
        fprintf(stderr, "generate_kv: %s\n", why);
        return 1;
    }
    clf_onnx_io logits_io;
    clf_onnx_model_output(model, 0, &logits_io);
    const int64_t vocab = logits_io.shape[logits_io.graph_rank - 1];

    clf_context *ctx = NULL;
    char cmsg[512] = "";
    if (clf_context_create(clf_context_params(.message = cmsg, .message_cap = sizeof cmsg), &ctx) != CLF_OK) {
        fprintf(stderr, "generate_kv: %s\n", cmsg);
        return 1;
    }
    clf_executable *exe = NULL;
    double t0 = now_ms();
    if (clf_compile(ctx, clf_onnx_model_graph(model), NULL, &exe) != CLF_OK) {
        fprintf(stderr, "generate_kv: %s\n", clf_context_last_error(ctx));
        return 1;
    }
    const double compile_ms = now_ms() - t0;
    cl_mem caches[MAX_CACHES];
    for (size_t c = 0; c < ncaches; c++) {
        cl_int err;
        void *zeros = calloc(1, cache_bytes[c]);
        caches[c] = clCreateBuffer(clf_context_cl(ctx), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, cache_bytes[c],
                                   zeros, &err);
        free(zeros);
        if (!caches[c]) {
            fprintf(stderr, "generate_kv: clCreateBuffer: %d\n", err);
            return 1;
        }
    }
    float *logits = malloc((size_t)(len * vocab) * sizeof *logits);
    cl_int err;
    cl_mem out = clCreateBuffer(clf_context_cl(ctx), CL_MEM_WRITE_ONLY, (size_t)(len * vocab) * sizeof *logits, NULL,
                                &err);
    printf("prompt:");
    for (int64_t i = 0; i < len; i++)
        printf(" %lld", (long long)tokens[i]);
    printf("\ngenerated:");
    double prompt_ms = 0, again_ms[REPEATS];
    double *step_ms = calloc((size_t)steps + 1, sizeof *step_ms); /* each decode step's */
    if (!step_ms) {
        fprintf(stderr, "generate_kv: out of memory\n");
        return 1;
    }
    int64_t done = 0; /* tokens already in the caches */
    /* The prompt, the steps, then the last step REPEATS times more: a
     * length already run (its entries written again, the same values). */
    for (int s = 0; s <= steps + REPEATS; s++) {
        if (s > steps)
            done = len - 1;
        const int64_t S = len - done, total = len + 1;
        t0 = now_ms();
        cl_mem b_ids = ints(ctx, tokens + done, S), b_mask = ints(ctx, mask, total), b_pos = ints(ctx, pos + done, S);
        clf_buffer_view in[3 + MAX_CACHES] = {{"input_ids", b_ids, 0}, {"attention_mask", b_mask, 0},
                                              {"position_ids", b_pos, 0}};
        clf_buffer_view outs[1 + MAX_CACHES] = {{logits_io.name, out, 0}};
        const int64_t ids_shape[2] = {1, S}, mask_shape[2] = {1, total};
        const int64_t *shapes[3 + MAX_CACHES] = {ids_shape, mask_shape, ids_shape};
        for (size_t c = 0; c < ncaches; c++) {
            in[3 + c] = (clf_buffer_view){past[c], caches[c], 0};
            outs[1 + c] = (clf_buffer_view){present[c], caches[c], 0};
        }
        cl_event ev = NULL;
        if (clf_enqueue_shaped(exe, NULL, 3 + ncaches, in, shapes, 1 + ncaches, outs, 0, NULL, &ev) != CLF_OK) {
            fprintf(stderr, "\ngenerate_kv: at length %lld: %s\n", (long long)len, clf_context_last_error(ctx));
            return 1;
        }
        /* Only the last position's logits. */
        clEnqueueReadBuffer(clf_context_queue(ctx), out, CL_TRUE, (size_t)((S - 1) * vocab) * sizeof *logits,
                            (size_t)vocab * sizeof *logits, logits, 1, &ev, NULL);
        clReleaseEvent(ev);
        clReleaseMemObject(b_ids);
        clReleaseMemObject(b_mask);
        clReleaseMemObject(b_pos);
        const double ms = now_ms() - t0;
        if (s == 0)
            prompt_ms = ms;
        else if (s <= steps)
            step_ms[s - 1] = ms;
        else
            again_ms[s - steps - 1] = ms;
        done = len;
        if (s >= steps)
            continue;
        int64_t best = 0;
        for (int64_t v = 1; v < vocab; v++)
            if (logits[v] > logits[best])
                best = v;
        tokens[len++] = best;
        printf(" %lld", (long long)best);
        fflush(stdout);
    }
    qsort(again_ms, REPEATS, sizeof *again_ms, cmp_ms);
    double steps_ms = 0;
    for (int s = 0; s < steps; s++)
        steps_ms += step_ms[s];
    printf("\nclf_compile %.0f ms; prompt of %lld tokens %.2f ms; %d decode steps %.2f ms each (%.1f tokens/s, "
           "every length new); the last step again %.2f ms (median of %d, a length already run)\n",
           compile_ms, (long long)(len - steps), prompt_ms, steps, steps ? steps_ms / steps : 0.0,
           steps_ms > 0 ? 1e3 * steps / steps_ms : 0.0, again_ms[REPEATS / 2], REPEATS);
    /* The first decode step is the first with one token: it meets the
     * decode kernels' forms (their programs loaded or built); the later
     * steps are new lengths of forms already met. */
    if (steps > 1) {
        const double first = step_ms[0];
        qsort(step_ms + 1, (size_t)steps - 1, sizeof *step_ms, cmp_ms);
        printf("first decode step %.2f ms (the decode forms met); later new lengths %.2f ms (median of %d)\n", first,
               step_ms[1 + (steps - 1) / 2], steps - 1);
    }
    free(step_ms);
    for (size_t c = 0; c < ncaches; c++)
        clReleaseMemObject(caches[c]);
    clReleaseMemObject(out);
    free(logits);
    free(tokens);
    free(mask);
    free(pos);
    clf_executable_destroy(&exe);
    clf_onnx_model_destroy(&model);
    clf_context_destroy(&ctx);
    return 0;
}
