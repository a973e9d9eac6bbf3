/* Shared pieces of the clfuse command-line tool: options, loading a model
 * (through onnx.h), opening a device, random inputs, and the commands'
 * entry points.
 * Exit statuses: CLI_OK, CLI_FAIL (runtime or device failure), CLI_USAGE
 * (bad usage, bad graph file, bad inputs). Every error is one line on
 * stderr starting with "clfuse: ". */
#ifndef CLFUSE_TOOL_CLI_H
#define CLFUSE_TOOL_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <clfuse/clfuse.h>

enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

#define CLI_MAX_BINDINGS 64
#define CLI_MAX_DIMS 32

typedef struct cli_named_file {
    const char *name, *path;
} cli_named_file;

typedef struct cli_opts {
    const char *graph_path;
    const char *device;
    bool no_fusion;
    bool fused_only; /* bench: no unfused run */
    const char *dim_names[CLI_MAX_DIMS]; /* --dim NAME=SIZE */
    int64_t dim_values[CLI_MAX_DIMS];
    size_t ndims;
    cli_named_file inputs[CLI_MAX_BINDINGS];
    size_t ninputs;
    cli_named_file outputs[CLI_MAX_BINDINGS];
    size_t noutputs;
    const char *out_path; /* dot -o */
    int runs;             /* bench; 0: default */
    double tol;           /* check; < 0: default */
    uint64_t seed;
    const char *prompt;   /* generate: token ids; NULL: default */
    int steps;            /* generate; < 0: default */
    long long max_len;    /* generate; 0: default */
} cli_opts;

/* A loaded model file. */
typedef struct cli_model {
    clf_onnx_model *m;
    clf_graph *g; /* the model's */
    clf_onnx_model_info info;
} cli_model;

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
void cli_error(const char *fmt, ...);

/* Loads o->graph_path with the --dim sizes and the given input shapes;
 * prints the error and returns CLI_USAGE/CLI_FAIL on failure. */
int cli_load(const cli_opts *o, const clf_onnx_input_shape *given, size_t ngiven, cli_model *out);
void cli_model_free(cli_model *cm);

/* Opens the device (o->device, else CLFUSE_DEVICE, else the default). */
int cli_context(const cli_opts *o, bool profiling, clf_context **out);
int cli_compile(clf_context *ctx, const clf_graph *g, bool no_fusion, clf_executable **out);

/* Host buffers for every input (random, reproducible from seed) and
 * output of exe, bound by name. */
typedef struct cli_io {
    size_t nin, nout;
    clf_host_binding *in, *out;
    size_t *in_numel, *out_numel;
    clf_dtype *in_dtype, *out_dtype;
} cli_io;

int cli_io_random(clf_executable *exe, uint64_t seed, cli_io *io);
void cli_io_free(cli_io *io);

size_t cli_numel(int rank, const int64_t *shape);
/* "4.0 MB", "512 B" */
char *cli_bytes_str(uint64_t bytes, char *buf, size_t cap);

/* Opens the device and compiles the graph file (plan, code, dot); on
 * failure everything is freed and the error printed. */
int cli_compile_file(const cli_opts *o, cli_model *cm, clf_context **ctx, clf_executable **exe);
/* in[k * nnodes + j]: whether kernel k computes (part of) ONNX node j;
 * malloc'd, NULL when out of memory. */
bool *cli_plan_membership(const clf_executable *exe, const cli_model *cm);

int cmd_devices(const cli_opts *o);
int cmd_run(const cli_opts *o);
int cmd_check(const cli_opts *o);
int cmd_plan(const cli_opts *o);
int cmd_code(const cli_opts *o);
int cmd_dot(const cli_opts *o);
int cmd_bench(const cli_opts *o);
int cmd_generate(const cli_opts *o);

#endif
