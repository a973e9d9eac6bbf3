/* Greedy generation with a KV cache written in place (kv_generation.h). */
#include "kv_generation.h"

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

/* A device buffer holding n int64 values. */
static cl_mem ints(clf_context *ctx, const int64_t *v, int64_t n)
{
    cl_int err;
    return clCreateBuffer(clf_context_cl(ctx), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (size_t)n * sizeof *v,
                          (void *)v, &err);
}

/* The caches: every input past_X with its output present_X, the sequence
 * axis where their declarations name different dimensions (the library
 * finds it the same way), max_len + 1 positions each. Returns the count,
 * 0 with a message in why when there is none or one lacks its axis. */
static size_t find_caches(clf_onnx_model *model, int64_t max_len, char (*past)[128], char (*present)[128],
                          clf_onnx_kv_cache *kv, size_t *bytes, char *why, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < clf_onnx_model_input_count(model) && n < MAX_CACHES; i++) {
        clf_onnx_io io;
        clf_onnx_model_input(model, i, &io);
        if (strncmp(io.name, "past_", 5) != 0)
            continue;
        snprintf(past[n], sizeof past[0], "%s", io.name);
        snprintf(present[n], sizeof present[0], "present_%s", io.name + 5);
        int axis = -1;
        for (size_t o = 0; o < clf_onnx_model_output_count(model); o++) {
            clf_onnx_io oio;
            clf_onnx_model_output(model, o, &oio);
            for (int d = 0; !strcmp(oio.name, present[n]) && d < io.rank && d < oio.rank; d++)
                if (io.dim_params[d] && oio.dim_params[d] && strcmp(io.dim_params[d], oio.dim_params[d]))
                    axis = d;
        }
        if (axis < 0) {
            snprintf(why, cap, "no output %s declared with a sequence axis of its own", present[n]);
            return 0;
        }
        bytes[n] = clf_dtype_size(io.dtype);
        for (int d = 0; d < io.graph_rank; d++)
            bytes[n] *= (size_t)(d == axis ? max_len + 1 : io.shape[d]);
        kv[n] = (clf_onnx_kv_cache){past[n], present[n], max_len + 1};
        n++;
    }
    if (!n)
        snprintf(why, cap, "the model has no past_* inputs (export it with its cache)");
    return n;
}

int kv_generate(clf_context *ctx, const kv_generation *a)
{
    const int64_t max_len = a->max_len;
    const int steps = a->steps;
    int rc = 1;
    char why[512] = "";
    if (max_len < 1 || max_len > (1 << 24)) {
        fprintf(stderr, "%s: the cache length %lld is not from 1 to %d\n", a->prog, (long long)max_len, 1 << 24);
        return 2;
    }
    int64_t *tokens = calloc((size_t)max_len + 1, sizeof *tokens), *mask = calloc((size_t)max_len + 1, sizeof *mask);
    int64_t *pos = calloc((size_t)max_len + 1, sizeof *pos), len = 0;
    double *step_ms = calloc((size_t)(steps > 0 ? steps : 0) + 1, sizeof *step_ms); /* each decode step's */
    char past[MAX_CACHES][128], present[MAX_CACHES][128]; /* 16 KiB: the caches' names */
    clf_onnx_kv_cache kv[MAX_CACHES];
    size_t ncaches = 0, cache_bytes[MAX_CACHES];
    cl_mem caches[MAX_CACHES] = {NULL}, out = NULL;
    float *logits = NULL;
    clf_onnx_model *model = NULL;
    clf_executable *exe = NULL;
    if (!tokens || !mask || !pos || !step_ms) {
        fprintf(stderr, "%s: out of memory\n", a->prog);
        goto done;
    }
    for (const char *p = a->prompt; *p;) {
        char *end;
        if (len == max_len) {
            fprintf(stderr, "%s: the prompt holds more than --max-len %lld tokens\n", a->prog, (long long)max_len);
            rc = 2;
            goto done;
        }
        tokens[len++] = strtoll(p, &end, 10);
        if (end == p || (*end && *end != ',')) {
            fprintf(stderr, "%s: the prompt '%s' is not comma-separated token ids\n", a->prog, a->prompt);
            rc = 2;
            goto done;
        }
        p = *end == ',' ? end + 1 : end;
    }
    if (len == 0 || steps < 0 || len + steps > max_len) {
        fprintf(stderr, "%s: the prompt (%lld tokens) and %d steps must fit in --max-len %lld\n", a->prog,
                (long long)len, steps, (long long)max_len);
        rc = 2;
        goto done;
    }
    for (int64_t i = 0; i <= max_len; i++) {
        mask[i] = i > 0; /* position 0: the masked past */
        pos[i] = i;
    }

    /* A first load at the prompt's sizes names the caches and their
     * shapes; the second declares the sizes symbolic and the caches. */
    const char *fixed_names[] = {"seq", "total", "past"};
    const int64_t fixed_values[] = {len, len + 1, 1};
    const clf_status loaded =
        clf_onnx_load_file(a->model_path,
                           clf_onnx_params(.dim_names = fixed_names, .dim_values = fixed_values, .ndims = 3,
                                           .message = why, .message_cap = sizeof why),
                           &model);
    if (loaded != CLF_OK) {
        fprintf(stderr, "%s: %s\n", a->prog, why);
        rc = loaded == CLF_ERR_OUT_OF_MEMORY ? 1 : 2;
        goto done;
    }
    ncaches = find_caches(model, max_len, past, present, kv, cache_bytes, why, sizeof why);
    clf_onnx_model_destroy(&model);
    if (!ncaches) {
        fprintf(stderr, "%s: %s\n", a->prog, why);
        rc = 2;
        goto done;
    }
    clf_onnx_symbol syms[2] = {{"seq", 1, max_len}, {"total", 2, max_len + 1}};
    clf_onnx_derived_dim derived = {"past", "total", "seq"};
    if (clf_onnx_load_file(a->model_path,
                           clf_onnx_params(.symbols = syms, .nsymbols = 2, .derived = &derived, .nderived = 1,
                                           .kv_caches = kv, .nkv_caches = ncaches, .message = why,
                                           .message_cap = sizeof why),
                           &model) != CLF_OK) {
        fprintf(stderr, "%s: %s\n", a->prog, why);
        goto done;
    }
    clf_onnx_io logits_io;
    clf_onnx_model_output(model, 0, &logits_io);
    const int64_t vocab = logits_io.shape[logits_io.graph_rank - 1];

    double t0 = now_ms();
    if (clf_compile(ctx, clf_onnx_model_graph(model), NULL, &exe) != CLF_OK) {
        fprintf(stderr, "%s: %s\n", a->prog, clf_context_last_error(ctx));
        goto done;
    }
    const double compile_ms = now_ms() - t0;
    for (size_t c = 0; c < ncaches; c++) {
        cl_int err;
        void *zeros = calloc(1, cache_bytes[c]);
        caches[c] = zeros ? clCreateBuffer(clf_context_cl(ctx), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                           cache_bytes[c], zeros, &err)
                          : NULL;
        free(zeros);
        if (!caches[c]) {
            fprintf(stderr, "%s: a cache of %zu bytes could not be made\n", a->prog, cache_bytes[c]);
            goto done;
        }
    }
    logits = malloc((size_t)(len * vocab) * sizeof *logits);
    cl_int err;
    out = logits ? clCreateBuffer(clf_context_cl(ctx), CL_MEM_WRITE_ONLY, (size_t)(len * vocab) * sizeof *logits, NULL,
                                  &err)
                 : NULL;
    if (!out) {
        fprintf(stderr, "%s: the logits' buffers could not be made\n", a->prog);
        goto done;
    }
    printf("prompt:");
    for (int64_t i = 0; i < len; i++)
        printf(" %lld", (long long)tokens[i]);
    printf("\ngenerated:");
    double prompt_ms = 0, again_ms[REPEATS];
    int64_t cached = 0; /* tokens already in the caches */
    /* The prompt, the steps, then the last step REPEATS times more: a
     * length already run (its entries written again, the same values). */
    for (int s = 0; s <= steps + REPEATS; s++) {
        if (s > steps)
            cached = len - 1;
        const int64_t S = len - cached, total = len + 1;
        t0 = now_ms();
        cl_mem b_ids = ints(ctx, tokens + cached, S), b_mask = ints(ctx, mask, total),
               b_pos = ints(ctx, pos + cached, S);
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
        clf_status st = b_ids && b_mask && b_pos
                            ? clf_enqueue_shaped(exe, NULL, 3 + ncaches, in, shapes, 1 + ncaches, outs, 0, NULL, &ev)
                            : CLF_ERR_OUT_OF_MEMORY;
        /* Only the last position's logits. */
        cl_int rd = st == CLF_OK ? clEnqueueReadBuffer(clf_context_queue(ctx), out, CL_TRUE,
                                                       (size_t)((S - 1) * vocab) * sizeof *logits,
                                                       (size_t)vocab * sizeof *logits, logits, 1, &ev, NULL)
                                 : CL_SUCCESS;
        if (ev)
            clReleaseEvent(ev);
        if (b_ids)
            clReleaseMemObject(b_ids);
        if (b_mask)
            clReleaseMemObject(b_mask);
        if (b_pos)
            clReleaseMemObject(b_pos);
        if (st != CLF_OK || rd != CL_SUCCESS) {
            fprintf(stderr, "\n%s: at length %lld: %s\n", a->prog, (long long)len,
                    st != CLF_OK ? clf_context_last_error(ctx) : "reading the logits failed");
            goto done;
        }
        const double ms = now_ms() - t0;
        if (s == 0)
            prompt_ms = ms;
        else if (s <= steps)
            step_ms[s - 1] = ms;
        else
            again_ms[s - steps - 1] = ms;
        cached = len;
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
    rc = 0;
done:
    for (size_t c = 0; c < ncaches; c++)
        if (caches[c])
            clReleaseMemObject(caches[c]);
    if (out)
        clReleaseMemObject(out);
    free(logits);
    free(step_ms);
    free(tokens);
    free(mask);
    free(pos);
    clf_executable_destroy(&exe);
    clf_onnx_model_destroy(&model);
    return rc;
}
