/* clfuse dot: the graph in Graphviz's language, each fused kernel a
 * cluster, edges labelled with the bytes of the tensor they carry; rendered
 * with Graphviz's dot when it is installed. */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

extern char **environ;

/* A DOT string literal's body: quotes and backslashes escaped. */
static void put_escaped(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
}

static void type_label(FILE *f, const clf_graph *g, clf_tensor t)
{
    clf_dtype dt;
    int rank;
    int64_t shape[CLF_MAX_RANK];
    if (!clf_tensor_valid(t) || clf_tensor_dtype(g, t, &dt) != CLF_OK || clf_tensor_shape(g, t, &rank, shape))
        return;
    fprintf(f, "%s[", clf_dtype_name(dt));
    for (int d = 0; d < rank; d++)
        fprintf(f, d ? ", %lld" : "%lld", (long long)shape[d]);
    fprintf(f, "]");
}

static uint64_t tensor_bytes(const clf_graph *g, clf_tensor t)
{
    clf_dtype dt;
    int rank;
    int64_t shape[CLF_MAX_RANK];
    if (!clf_tensor_valid(t) || clf_tensor_dtype(g, t, &dt) != CLF_OK || clf_tensor_shape(g, t, &rank, shape))
        return 0;
    return (uint64_t)cli_numel(rank, shape) * clf_dtype_size(dt);
}

/* The DOT node id of a value's source: a graph input, a constant or a node. */
static void source_id(FILE *f, const clf_onnx_value *v)
{
    if (v->producer >= 0)
        fprintf(f, "n%lld", (long long)v->producer);
    else {
        fprintf(f, "\"%s:", v->producer == CLF_ONNX_PRODUCER_INPUT ? "in" : "const");
        put_escaped(f, v->name);
        fputc('"', f);
    }
}

/* The edge's attributes; rank-0 constants are literals in the kernel text. */
static void edge(FILE *f, const clf_graph *g, const clf_onnx_value *v, bool in_registers)
{
    char b[32];
    uint64_t bytes = tensor_bytes(g, v->tensor);
    int rank = -1;
    if (clf_tensor_valid(v->tensor))
        clf_tensor_shape(g, v->tensor, &rank, NULL);
    bool literal = v->producer == CLF_ONNX_PRODUCER_CONSTANT && rank == 0;
    fprintf(f, " [label=\"%s\"%s];\n", literal ? "literal" : bytes ? cli_bytes_str(bytes, b, sizeof b) : "",
            in_registers || literal ? ", style=dashed, color=gray50, fontcolor=gray40" : ", penwidth=1.6");
}

static int write_dot(FILE *f, const cli_opts *o, const cli_model *cm, const clf_executable *exe, const bool *in)
{
    const clf_graph *g = cm->g;
    size_t nk = clf_executable_kernel_count(exe), nn = clf_onnx_model_node_count(cm->m);
    int *primary = calloc(nn + 1, sizeof *primary);
    if (!primary) {
        cli_error("out of memory");
        return -1;
    }
    for (size_t j = 0; j < nn; j++) {
        primary[j] = -1;
        for (size_t k = 0; k < nk && primary[j] < 0; k++)
            if (in[k * nn + j])
                primary[j] = (int)k;
    }
    clf_plan_stats s;
    clf_executable_stats(exe, &s);
    char mf[32], mu[32];
    fprintf(f, "digraph \"");
    put_escaped(f, cm->info.graph_name);
    fprintf(f, "\" {\n  rankdir=TB;\n  fontname=\"Helvetica\"; fontsize=11; labelloc=t;\n"
               "  node [fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=9];\n");
    fprintf(f, "  label=\"");
    put_escaped(f, cm->info.graph_name);
    fprintf(f, ": %llu kernel%s%s (%llu unfused), %s moved (%s unfused)\\nsolid edges go through memory, "
               "dashed ones stay in registers\";\n",
            (unsigned long long)s.kernels, s.kernels == 1 ? "" : "s", o->no_fusion ? " with fusion off" : "",
            (unsigned long long)s.unfused_kernels, cli_bytes_str(s.bytes_read + s.bytes_written, mf, sizeof mf),
            cli_bytes_str(s.unfused_bytes_read + s.unfused_bytes_written, mu, sizeof mu));

    /* Graph inputs and constants that feed nodes. */
    for (size_t i = 0; i < clf_onnx_model_value_count(cm->m); i++) {
        clf_onnx_value value, *v = &value;
        clf_onnx_model_value(cm->m, i, v);
        if (v->producer >= 0)
            continue;
        bool is_input = v->producer == CLF_ONNX_PRODUCER_INPUT;
        fprintf(f, "  ");
        source_id(f, v);
        fprintf(f, " [shape=%s, style=filled, fillcolor=\"%s\", label=\"", is_input ? "ellipse" : "note",
                is_input ? "#dbe7f7" : "#f3f3f3");
        put_escaped(f, v->name);
        fprintf(f, "\\n");
        type_label(f, g, v->tensor);
        fprintf(f, "\"];\n");
    }
    /* One cluster per kernel; nodes no kernel computes (constants, views
     * of constants, Shape) stay outside. */
    for (int k = -1; k < (int)nk; k++) {
        if (k >= 0) {
            fprintf(f, "  subgraph cluster_k%d {\n    label=\"kernel %d: ", k, k);
            put_escaped(f, clf_executable_kernel_name(exe, (size_t)k));
            fprintf(f, "\";\n    style=\"rounded,filled\"; fillcolor=\"#fff4dc\"; color=\"#c98a00\";\n");
        }
        for (size_t j = 0; j < nn; j++) {
            if (primary[j] != k)
                continue;
            clf_onnx_node n;
            clf_onnx_value v;
            clf_onnx_model_node(cm->m, j, &n);
            fprintf(f, "    n%zu [shape=box, style=\"rounded,filled\", fillcolor=white, label=\"", j);
            put_escaped(f, n.op_type);
            fprintf(f, "\\n");
            put_escaped(f, n.outputs[0]);
            if (clf_onnx_model_find_value(cm->m, n.outputs[0], &v) == CLF_OK && clf_tensor_valid(v.tensor)) {
                fprintf(f, "\\n");
                type_label(f, g, v.tensor);
            }
            int also = 0;
            for (size_t k2 = (size_t)(k + 1); k >= 0 && k2 < nk; k2++)
                also += in[k2 * nn + j];
            if (also)
                fprintf(f, "\\n(recomputed in %d more kernel%s)", also, also == 1 ? "" : "s");
            fprintf(f, "\"];\n");
        }
        if (k >= 0)
            fprintf(f, "  }\n");
    }
    /* Edges into nodes. */
    for (size_t j = 0; j < nn; j++) {
        clf_onnx_node n;
        clf_onnx_model_node(cm->m, j, &n);
        for (size_t i = 0; i < n.ninputs; i++) {
            clf_onnx_value v;
            if (!n.inputs[i][0] || clf_onnx_model_find_value(cm->m, n.inputs[i], &v) != CLF_OK)
                continue;
            fprintf(f, "  ");
            source_id(f, &v);
            fprintf(f, " -> n%zu", j);
            bool regs = v.producer >= 0 && primary[j] >= 0 && in[(size_t)primary[j] * nn + (size_t)v.producer];
            edge(f, g, &v, regs);
        }
    }
    /* Graph outputs. */
    for (size_t i = 0; i < clf_onnx_model_output_count(cm->m); i++) {
        clf_onnx_io out;
        clf_onnx_value v;
        clf_onnx_model_output(cm->m, i, &out);
        if (clf_onnx_model_find_value(cm->m, out.name, &v) != CLF_OK)
            continue;
        fprintf(f, "  \"out:");
        put_escaped(f, out.name);
        fprintf(f, "\" [shape=ellipse, style=filled, fillcolor=\"#dcefd6\", label=\"");
        put_escaped(f, out.name);
        fprintf(f, "\\n");
        type_label(f, g, v.tensor);
        fprintf(f, "\"];\n  ");
        source_id(f, &v);
        fprintf(f, " -> \"out:");
        put_escaped(f, out.name);
        fprintf(f, "\"");
        edge(f, g, &v, false);
    }
    fprintf(f, "}\n");
    free(primary);
    return 0;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* Runs dot -T<format> dotfile -o out; returns its exit status, or -1 with
 * errno when it could not be started. */
static int run_graphviz(const char *format, const char *dotfile, const char *out)
{
    char fmt[16];
    snprintf(fmt, sizeof fmt, "-T%s", format);
    const char *prog = getenv("CLFUSE_DOT") ? getenv("CLFUSE_DOT") : "dot";
    char *argv[] = {(char *)prog, fmt, (char *)dotfile, (char *)"-o", (char *)out, NULL};
    pid_t pid;
    int err = posix_spawnp(&pid, prog, NULL, NULL, argv, environ);
    if (err) {
        errno = err;
        return -1;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
        errno = ENOENT; /* the exec inside the spawn failed */
        return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

int cmd_dot(const cli_opts *o)
{
    const char *format = NULL;
    if (o->out_path) {
        if (ends_with(o->out_path, ".svg"))
            format = "svg";
        else if (ends_with(o->out_path, ".png"))
            format = "png";
        else if (!ends_with(o->out_path, ".dot") && !ends_with(o->out_path, ".gv")) {
            cli_error("dot: -o %s: the file name must end in .svg, .png or .dot", o->out_path);
            return CLI_USAGE;
        }
    }
    cli_model cm;
    clf_context *ctx = NULL;
    clf_executable *exe = NULL;
    char *dotpath = NULL;
    int rc = cli_compile_file(o, &cm, &ctx, &exe);
    if (rc)
        return rc;
    rc = CLI_FAIL;
    bool *in = cli_plan_membership(exe, &cm);
    if (!in) {
        cli_error("out of memory");
        goto done;
    }
    if (!o->out_path) {
        rc = write_dot(stdout, o, &cm, exe, in) || fflush(stdout) ? CLI_FAIL : CLI_OK;
        goto done;
    }
    /* FILE.svg -> FILE.dot next to it: the source of the drawing, and what
     * is left when Graphviz is missing. */
    size_t len = strlen(o->out_path);
    dotpath = malloc(len + 5);
    if (!dotpath) {
        cli_error("out of memory");
        goto done;
    }
    memcpy(dotpath, o->out_path, len + 1);
    if (format)
        strcpy(dotpath + len - 4, ".dot");
    FILE *f = fopen(dotpath, "w");
    if (!f) {
        cli_error("%s: cannot create: %s", dotpath, strerror(errno));
        rc = CLI_USAGE;
        goto done;
    }
    int wrc = write_dot(f, o, &cm, exe, in);
    if (fclose(f) || wrc) {
        cli_error("%s: write failed: %s", dotpath, strerror(errno));
        goto done;
    }
    if (!format) {
        fprintf(stderr, "clfuse: wrote %s\n", dotpath);
        rc = CLI_OK;
        goto done;
    }
    int st = run_graphviz(format, dotpath, o->out_path);
    if (st < 0 && errno == ENOENT) {
        fprintf(stderr, "clfuse: Graphviz's dot is not installed; wrote %s instead (render it with: dot -T%s %s "
                        "-o %s)\n", dotpath, format, dotpath, o->out_path);
        rc = CLI_OK;
        goto done;
    }
    if (st != 0) {
        cli_error("dot -T%s %s failed (%s); the graph is in %s", format, dotpath,
                  st < 0 ? strerror(errno) : "non-zero exit", dotpath);
        goto done;
    }
    remove(dotpath);
    fprintf(stderr, "clfuse: wrote %s\n", o->out_path);
    rc = CLI_OK;
done:
    free(dotpath);
    free(in);
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
    cli_model_free(&cm);
    return rc;
}
