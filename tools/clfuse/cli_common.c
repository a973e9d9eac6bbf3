/* Helpers shared by the commands: errors, loading a graph file, opening the
 * device, compiling, random inputs. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "host_measure.h"

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("clfuse: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

size_t cli_numel(int rank, const int64_t *shape)
{
    size_t n = 1;
    for (int d = 0; d < rank; d++)
        n *= (size_t)shape[d];
    return n;
}

char *cli_bytes_str(uint64_t bytes, char *buf, size_t cap)
{
    if (bytes < 10000)
        snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
    else if (bytes < 1000000)
        snprintf(buf, cap, "%.1f kB", (double)bytes / 1e3);
    else if (bytes < 1000000000ull)
        snprintf(buf, cap, "%.1f MB", (double)bytes / 1e6);
    else
        snprintf(buf, cap, "%.1f GB", (double)bytes / 1e9);
    return buf;
}

int cli_load(const cli_opts *o, const clf_onnx_input_shape *given, size_t ngiven, cli_model *out)
{
    memset(out, 0, sizeof *out);
    char err[1024] = "";
    clf_status st = clf_onnx_load_file(o->graph_path,
                                       clf_onnx_params(.dim_names = o->dim_names, .dim_values = o->dim_values,
                                                       .ndims = o->ndims, .inputs = given, .ninputs = ngiven,
                                                       .message = err, .message_cap = sizeof err),
                                       &out->m);
    if (st != CLF_OK) {
        /* The message names the file (FILE:L:C: for text positions); where
         * it asks for a dimension's size, say which option gives one. */
        bool no_size = st == CLF_ERR_SHAPE && strstr(err, " has no size");
        cli_error("%s%s", err[0] ? err : clf_status_str(st), no_size ? " (--dim NAME=SIZE)" : "");
        return st == CLF_ERR_OUT_OF_MEMORY || st == CLF_ERR_INTERNAL ? CLI_FAIL : CLI_USAGE;
    }
    out->g = clf_onnx_model_graph(out->m);
    clf_onnx_model_get_info(out->m, &out->info);
    return CLI_OK;
}

void cli_model_free(cli_model *cm)
{
    clf_onnx_model_destroy(&cm->m);
    cm->g = NULL;
}

int cli_context(const cli_opts *o, bool profiling, clf_context **out)
{
    char why[512] = "";
    clf_status st = clf_context_create(clf_context_params(.device = o->device, .profiling = profiling,
                                                          .message = why, .message_cap = sizeof why),
                                       out);
    if (st != CLF_OK) {
        cli_error("no OpenCL device%s%s: %s", o->device ? " matching " : "", o->device ? o->device : "",
                  why[0] ? why : clf_status_str(st));
        return st == CLF_ERR_NOT_FOUND && o->device ? CLI_USAGE : CLI_FAIL;
    }
    return CLI_OK;
}

int cli_compile(clf_context *ctx, const clf_graph *g, bool no_fusion, clf_executable **out)
{
    clf_status st = clf_compile(ctx, g, clf_compile_params(.disable_fusion = no_fusion), out);
    if (st != CLF_OK) {
        /* Build logs span lines; the first line says what failed. */
        const char *msg = clf_context_last_error(ctx);
        const char *nl = strchr(msg, '\n');
        cli_error("compile failed: %s: %.*s%s", clf_status_name(st), nl ? (int)(nl - msg) : (int)strlen(msg), msg,
                  nl ? " (CLFUSE_LOGS=output_code shows the source)" : "");
        if (nl && getenv("CLFUSE_VERBOSE"))
            fprintf(stderr, "%s\n", nl + 1);
        return st == CLF_ERR_GRAPH || st == CLF_ERR_SHAPE ? CLI_USAGE : CLI_FAIL;
    }
    return CLI_OK;
}

int cli_io_random(clf_executable *exe, uint64_t seed, cli_io *io)
{
    memset(io, 0, sizeof *io);
    io->nin = clf_executable_input_count(exe);
    io->nout = clf_executable_output_count(exe);
    io->in = calloc(io->nin + 1, sizeof *io->in);
    io->out = calloc(io->nout + 1, sizeof *io->out);
    io->in_numel = calloc(io->nin + 1, sizeof *io->in_numel);
    io->out_numel = calloc(io->nout + 1, sizeof *io->out_numel);
    io->in_dtype = calloc(io->nin + 1, sizeof *io->in_dtype);
    io->out_dtype = calloc(io->nout + 1, sizeof *io->out_dtype);
    if (!io->in || !io->out || !io->in_numel || !io->out_numel || !io->in_dtype || !io->out_dtype)
        goto oom;
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
    for (size_t i = 0; i < io->nin + io->nout; i++) {
        bool is_in = i < io->nin;
        const char *name;
        clf_dtype dt;
        int rank;
        int64_t shape[CLF_MAX_RANK];
        if (is_in)
            clf_executable_input(exe, i, &name, &dt, &rank, shape);
        else
            clf_executable_output(exe, i - io->nin, &name, &dt, &rank, shape);
        size_t n = cli_numel(rank, shape);
        void *p = malloc(n ? n * clf_dtype_size(dt) : 1);
        if (!p)
            goto oom;
        if (is_in) {
            hm_fill_random(p, dt, n, -1.0, 1.0, &s);
            io->in[i] = (clf_host_binding){name, p};
            io->in_numel[i] = n;
            io->in_dtype[i] = dt;
        } else {
            memset(p, 0xff, n * clf_dtype_size(dt));
            io->out[i - io->nin] = (clf_host_binding){name, p};
            io->out_numel[i - io->nin] = n;
            io->out_dtype[i - io->nin] = dt;
        }
    }
    return CLI_OK;
oom:
    cli_error("out of memory for the inputs and outputs");
    cli_io_free(io);
    return CLI_FAIL;
}

void cli_io_free(cli_io *io)
{
    for (size_t i = 0; io->in && i < io->nin; i++)
        free(io->in[i].data);
    for (size_t i = 0; io->out && i < io->nout; i++)
        free(io->out[i].data);
    free(io->in);
    free(io->out);
    free(io->in_numel);
    free(io->out_numel);
    free(io->in_dtype);
    free(io->out_dtype);
    memset(io, 0, sizeof *io);
}
