/* libFuzzer target over the ONNX loader (issue 15, "Bad input").
 *
 * Every input is handed to clf_onnx_load_memory twice, once as a binary
 * ModelProto and once as ONNX text (an input of fewer than 4 KiB also goes
 * through CLF_ONNX_FORMAT_AUTO, the detection). A load must either succeed
 * or fail cleanly: a status, *out set to NULL, a non-empty one-line message
 * (names quoted from a binary model may hold any byte; CLF_FUZZ_ONE_LINE=0
 * turns the one-line check off).
 * A model that loads is queried through every accessor of onnx.h, its
 * graph's status and node count are read, and when the graph is small
 * (CLF_FUZZ_MAX_ELEMS elements over all its nodes) the reference
 * interpreter runs it on deterministic inputs, so that the importer's
 * graphs are also evaluated. Nothing else of the library (no OpenCL) runs.
 *
 * Symbolic dimensions of the test models (N, D, batch, seq, ...) get small
 * sizes by name so that models with dim_params import past their inputs.
 * External tensor data is read from $CLF_FUZZ_BASE_DIR when set (run.sh
 * points it at tests/onnx), else refused.
 *
 * Built and run by tests/fuzz_onnx/run.sh (clang, -fsanitize=fuzzer,
 * address,undefined); a contract violation aborts, as a sanitizer report
 * does, so that libFuzzer saves the input. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clfuse/onnx.h>
#include <clfuse/reference.h>

/* Elements summed over every node of a graph the reference interpreter
 * may run (inputs, constants, intermediates, outputs). */
#define CLF_FUZZ_MAX_ELEMS (1 << 16)
#define CLF_FUZZ_MAX_NODES 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static const char *base_dir;
static int one_line;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *d = getenv("CLF_FUZZ_BASE_DIR");
    base_dir = d && *d ? d : NULL;
    const char *o = getenv("CLF_FUZZ_ONE_LINE");
    one_line = !o || strcmp(o, "0");
    return 0;
}

static void violation(const char *what, clf_onnx_format fmt, const char *msg)
{
    fprintf(stderr, "fuzz_onnx_load: format %d: %s (message: '%s')\n", (int)fmt, what, msg ? msg : "(null)");
    abort();
}

/* Elements of a shape; -1 on a negative extent or past limit. */
static int64_t numel(int rank, const int64_t *shape, int64_t limit)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++) {
        if (shape[d] < 0)
            return -1;
        if (shape[d] == 0)
            return 0;
        if (n > limit / shape[d])
            return -1;
        n *= shape[d];
    }
    return n;
}

static void fill(void *p, clf_dtype dt, int64_t n)
{
    for (int64_t k = 0; k < n; k++) {
        switch (dt) {
        case CLF_F32: ((float *)p)[k] = (float)(k % 7) * 0.5f - 1.5f; break;
        case CLF_I32: ((int32_t *)p)[k] = (int32_t)(k % 5); break;
        case CLF_I64: ((int64_t *)p)[k] = k % 5; break;
        case CLF_BOOL: ((unsigned char *)p)[k] = (unsigned char)(k & 1); break;
        default: break;
        }
    }
}

/* Runs the graph on the reference interpreter when it is small. */
static void reference_run(clf_onnx_model *m, const clf_graph *g)
{
    size_t nnodes = clf_graph_node_count(g);
    size_t nin = clf_onnx_model_input_count(m), nout = clf_onnx_model_output_count(m);
    if (nnodes == 0 || nnodes > CLF_FUZZ_MAX_NODES || nout == 0 || nin > 64 || nout > 64)
        return;
    uint32_t serial = 0;
    clf_onnx_io io;
    if (clf_onnx_model_output(m, 0, &io) != CLF_OK || !clf_tensor_valid(io.tensor))
        return;
    serial = io.tensor.graph;
    int64_t total = 0;
    for (size_t i = 0; i < nnodes; i++) {
        int rank;
        int64_t shape[CLF_MAX_RANK];
        if (clf_tensor_shape(g, (clf_tensor){serial, (uint32_t)i}, &rank, shape) != CLF_OK)
            return;
        int64_t n = numel(rank, shape, CLF_FUZZ_MAX_ELEMS);
        if (n < 0 || (total += n) > CLF_FUZZ_MAX_ELEMS)
            return;
    }

    clf_host_binding in[64], out[64];
    size_t nbound_in = 0, nbound_out = 0;
    for (size_t i = 0; i < nin; i++) {
        clf_dtype dt;
        int rank;
        int64_t shape[CLF_MAX_RANK];
        if (clf_onnx_model_input(m, i, &io) != CLF_OK || clf_tensor_dtype(g, io.tensor, &dt) != CLF_OK ||
            clf_tensor_shape(g, io.tensor, &rank, shape) != CLF_OK)
            goto done;
        int64_t n = numel(rank, shape, CLF_FUZZ_MAX_ELEMS);
        void *p = malloc((size_t)(n > 0 ? n : 1) * 8);
        if (!p)
            goto done;
        fill(p, dt, n);
        in[nbound_in++] = (clf_host_binding){io.name, p};
    }
    for (size_t i = 0; i < nout; i++) {
        int rank;
        int64_t shape[CLF_MAX_RANK];
        if (clf_onnx_model_output(m, i, &io) != CLF_OK || clf_tensor_shape(g, io.tensor, &rank, shape) != CLF_OK)
            goto done;
        int64_t n = numel(rank, shape, CLF_FUZZ_MAX_ELEMS);
        void *p = calloc((size_t)(n > 0 ? n : 1), 8);
        if (!p)
            goto done;
        out[nbound_out++] = (clf_host_binding){io.name, p};
    }
    char msg[512];
    clf_reference_run(g, nbound_in, in, nbound_out, out, msg, sizeof msg);
done:
    for (size_t i = 0; i < nbound_in; i++)
        free(in[i].data);
    for (size_t i = 0; i < nbound_out; i++)
        free(out[i].data);
}

/* Every query of onnx.h on a loaded model. */
static void query(clf_onnx_model *m)
{
    clf_onnx_model_info info = {0};
    if (clf_onnx_model_get_info(m, &info) != CLF_OK)
        violation("clf_onnx_model_get_info failed on a loaded model", info.format, NULL);
    clf_onnx_io io;
    size_t n = clf_onnx_model_input_count(m);
    for (size_t i = 0; i <= n; i++)
        if ((clf_onnx_model_input(m, i, &io) == CLF_OK) != (i < n))
            violation("clf_onnx_model_input disagrees with the input count", info.format, NULL);
    n = clf_onnx_model_output_count(m);
    for (size_t i = 0; i <= n; i++)
        if ((clf_onnx_model_output(m, i, &io) == CLF_OK) != (i < n))
            violation("clf_onnx_model_output disagrees with the output count", info.format, NULL);
    n = clf_onnx_model_node_count(m);
    for (size_t i = 0; i <= n; i++) {
        clf_onnx_node node;
        if ((clf_onnx_model_node(m, i, &node) == CLF_OK) != (i < n))
            violation("clf_onnx_model_node disagrees with the node count", info.format, NULL);
    }
    n = clf_onnx_model_value_count(m);
    for (size_t i = 0; i <= n; i++) {
        clf_onnx_value v, w;
        clf_status st = clf_onnx_model_value(m, i, &v);
        if ((st == CLF_OK) != (i < n))
            violation("clf_onnx_model_value disagrees with the value count", info.format, NULL);
        if (st == CLF_OK && clf_onnx_model_find_value(m, v.name, &w) != CLF_OK)
            violation("clf_onnx_model_find_value does not find a listed value", info.format, v.name);
    }
}

static void load(const uint8_t *data, size_t size, clf_onnx_format fmt)
{
    static const char *const names[] = {"N", "D", "R", "M", "B", "F", "C", "K", "batch", "seq"};
    static const int64_t values[] = {4, 3, 2, 2, 2, 3, 2, 2, 2, 3};
    char msg[1024];
    msg[0] = 0;
    clf_onnx_model *m = (clf_onnx_model *)(uintptr_t)1; /* must be set to NULL on failure */
    clf_status st = clf_onnx_load_memory(data, size, base_dir,
                                         clf_onnx_params(.dim_names = names, .dim_values = values,
                                                         .ndims = sizeof values / sizeof values[0], .format = fmt,
                                                         .message = msg, .message_cap = sizeof msg),
                                         &m);
    if (st != CLF_OK) {
        if (m != NULL)
            violation("a failed load did not set *out to NULL", fmt, msg);
        if (!memchr(msg, 0, sizeof msg))
            violation("the message is not NUL-terminated", fmt, NULL);
        if (!msg[0])
            violation("a failed load wrote no message", fmt, msg);
        if (one_line && strchr(msg, '\n'))
            violation("the message is more than one line", fmt, msg);
        return;
    }
    if (!m)
        violation("a load returned CLF_OK without a model", fmt, NULL);
    query(m);
    clf_graph *g = clf_onnx_model_graph(m);
    const char *gmsg;
    if (!g)
        violation("a loaded model has no graph", fmt, NULL);
    if (clf_graph_status(g, &gmsg) != CLF_OK)
        violation("a loaded model's graph is in an error state", fmt, gmsg);
    if (clf_graph_node_count(g) == 0)
        violation("a loaded model's graph has no nodes", fmt, NULL);
    reference_run(m, g);
    clf_onnx_model_destroy(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    load(data, size, CLF_ONNX_FORMAT_BINARY);
    load(data, size, CLF_ONNX_FORMAT_TEXT);
    if (size < 4096)
        load(data, size, CLF_ONNX_FORMAT_AUTO);
    return 0;
}
