/* clfuse: run, inspect and draw ONNX models (binary .onnx files or the
 * ONNX textual syntax). This file parses the command line and dispatches
 * to the commands. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Which options a command takes. */
enum {
    OPT_DEVICE = 1 << 0,
    OPT_NOFUSION = 1 << 1,
    OPT_DIM = 1 << 2,
    OPT_INPUT = 1 << 3,
    OPT_OUTPUT = 1 << 4,
    OPT_O = 1 << 5,
    OPT_RUNS = 1 << 6,
    OPT_TOL = 1 << 7,
    OPT_SEED = 1 << 8,
    OPT_FUSED_ONLY = 1 << 9,
    OPT_GENERATE = 1 << 10, /* --prompt, --steps, --max-len */
};

typedef struct command {
    const char *name;
    int (*fn)(const cli_opts *);
    bool takes_graph;
    unsigned opts;
    const char *summary;
    const char *usage;
} command;

static const char device_help[] =
    "  --device D          device: an index, gpu, cpu or part of a device or platform name\n"
    "                      (default: $CLFUSE_DEVICE, else the first GPU, else the first device)\n";
static const char dim_help[] = "  --dim NAME=SIZE     size of a symbolic dimension such as N in float[N, 64]\n";

static const command commands[] = {
    {"devices", cmd_devices, false, 0, "list OpenCL platforms and devices with the facts the planner uses",
     "usage: clfuse devices\n\n"
     "Lists every OpenCL device with its index (what --device and CLFUSE_DEVICE=<n>\n"
     "select), type, compute units, memory, and marks the default device.\n"},
    {"run", cmd_run, true, OPT_DEVICE | OPT_NOFUSION | OPT_DIM | OPT_INPUT | OPT_OUTPUT,
     "run a graph on .npy inputs",
     "usage: clfuse run GRAPH --input NAME=FILE.npy ... [--output NAME=FILE.npy ...]\n"
     "                  [--device D] [--no-fusion] [--dim NAME=SIZE ...]\n\n"
     "Runs GRAPH on the device. Every graph input must be given as a NumPy .npy file\n"
     "(float32, int32, int64 or bool, C order); shapes and dtypes are checked against the\n"
     "graph, and symbolic dimensions take their sizes from the inputs. Outputs named\n"
     "with --output are written as .npy; the others are printed.\n\n"
     "  --input NAME=FILE   an input of the graph\n"
     "  --output NAME=FILE  where to write an output\n"
     "  --no-fusion         one kernel per op\n"},
    {"plan", cmd_plan, true, OPT_DEVICE | OPT_NOFUSION | OPT_DIM,
     "show the fusion plan: kernels, the nodes each fuses, launches and bytes",
     "usage: clfuse plan GRAPH [--device D] [--no-fusion] [--dim NAME=SIZE ...]\n\n"
     "Compiles GRAPH and prints each kernel with the ONNX nodes it fuses, then\n"
     "kernels, launches, tensors and bytes read and written, fused against unfused.\n"},
    {"code", cmd_code, true, OPT_DEVICE | OPT_NOFUSION | OPT_DIM, "print the generated OpenCL C",
     "usage: clfuse code GRAPH [--device D] [--no-fusion] [--dim NAME=SIZE ...]\n\n"
     "Prints the OpenCL C source of every kernel, in launch order.\n"},
    {"dot", cmd_dot, true, OPT_DEVICE | OPT_NOFUSION | OPT_DIM | OPT_O,
     "draw the graph with its fused kernels (Graphviz)",
     "usage: clfuse dot GRAPH [-o FILE.svg|FILE.png|FILE.dot] [--device D] [--no-fusion]\n"
     "                  [--dim NAME=SIZE ...]\n\n"
     "Draws the graph: each fused kernel is a cluster, edges carry the bytes of the\n"
     "tensor (solid: through memory, dashed: kept in registers inside a kernel).\n"
     "With -o FILE.svg or FILE.png it runs Graphviz's dot; when dot is not installed\n"
     "it writes FILE.dot instead and says so. Without -o the .dot text goes to stdout.\n"},
    {"bench", cmd_bench, true, OPT_DEVICE | OPT_DIM | OPT_RUNS | OPT_SEED | OPT_FUSED_ONLY,
     "time fused against unfused with GB/s and the copy roofline",
     "usage: clfuse bench GRAPH [--runs N] [--device D] [--dim NAME=SIZE ...] [--seed S]\n"
     "                    [--fused-only]\n\n"
     "Runs GRAPH fused and unfused on random inputs, N times each after a warm-up\n"
     "(default 20), and prints the median device time, the bytes moved, GB/s and\n"
     "that as a fraction of the device's copy bandwidth (the roofline: a buffer\n"
     "copy; on CPU devices a copy kernel on every core).\n"
     "  --fused-only        time the fused graph alone (no unfused compile: a model\n"
     "                      unfused is a hundred kernels or more to build)\n"},
    {"check", cmd_check, true, OPT_DEVICE | OPT_NOFUSION | OPT_DIM | OPT_TOL | OPT_SEED,
     "compare the device with the reference interpreter on random inputs",
     "usage: clfuse check GRAPH [--tol T] [--device D] [--no-fusion] [--dim NAME=SIZE ...]\n"
     "                    [--seed S]\n\n"
     "Runs GRAPH on the device and on the reference interpreter with the same random\n"
     "inputs and reports the largest error of each output: |got - want| / (1 + |want|)\n"
     "for float outputs, mismatches for integer and bool ones. Exits 1 when an error\n"
     "exceeds T (default 1e-4 for float32 outputs, 2e-3 for float16 and 1.6e-2 for\n"
     "bfloat16: two ulps of the type).\n"},
    {"generate", cmd_generate, true, OPT_DEVICE | OPT_GENERATE,
     "greedy generation from a decoder exported with its KV cache, the cache updated in place",
     "usage: clfuse generate MODEL.onnx [--prompt 1,2,3] [--steps N] [--max-len L] [--device D]\n\n"
     "Runs the prompt (token ids), then N greedy steps of one token each (default 16)\n"
     "against caches of L + 1 positions (default 64) that every step updates in\n"
     "place, and prints the tokens, the compile time, the prompt's time and the\n"
     "decode rate. The model: inputs input_ids, attention_mask, position_ids and\n"
     "past_* (one per cache), outputs logits and present_*, with the sequence\n"
     "lengths symbolic (seq, total; tests/models/make_kv_fixture.py exports one).\n"
     "The loop is examples/generate_kv's.\n\n"},
};

static void main_usage(FILE *f)
{
    fprintf(f, "usage: clfuse COMMAND [ARGS]   (clfuse COMMAND --help for details)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nGRAPH is an ONNX model: a binary .onnx file, or a file in the ONNX textual syntax, e.g.\n\n"
               "  <ir_version: 8, opset_import: [\"\" : 18]>\n"
               "  chain (float[N] a, float[N] b, float[N] c) => (float[N] y) {\n"
               "      t = Mul(a, b)\n"
               "      u = Add(t, c)\n"
               "      y = Relu(u)\n"
               "  }\n");
}

/* NAME=VALUE into its parts (VALUE points into arg). */
static int split_eq(const char *opt, const char *arg, char *name, size_t cap, const char **val)
{
    const char *eq = arg ? strchr(arg, '=') : NULL;
    if (!eq || eq == arg || !eq[1] || (size_t)(eq - arg) >= cap) {
        cli_error("%s wants NAME=%s, got '%s'", opt, !strcmp(opt, "--dim") ? "SIZE" : "FILE", arg ? arg : "");
        return -1;
    }
    memcpy(name, arg, (size_t)(eq - arg));
    name[eq - arg] = 0;
    *val = eq + 1;
    return 0;
}

/* An option's whole number within [lo, hi] ("--runs: 'x' is not a count
 * from 1 to 100000" otherwise; what: count or length). */
static int parse_whole(const char *opt, const char *val, long long lo, long long hi, const char *what, long long *out)
{
    char *end;
    long long v = strtoll(val, &end, 10);
    if (*end || !*val || v < lo || v > hi) {
        cli_error("%s: '%s' is not a %s from %lld to %lld", opt, val, what, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* Storage for option names split out of argv. */
static char name_store[CLI_MAX_BINDINGS * 3][128];
static size_t nname_store;

static int parse(const command *c, int argc, char **argv, cli_opts *o)
{
    memset(o, 0, sizeof *o);
    o->tol = -1;
    o->seed = 1;
    o->steps = -1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        /* --opt=value is accepted as well as --opt value */
        char optbuf[32];
        const char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
        if (eq && (size_t)(eq - a) < sizeof optbuf) {
            memcpy(optbuf, a, (size_t)(eq - a));
            optbuf[eq - a] = 0;
            a = optbuf;
            next = eq + 1;
        }
#define TAKE_VALUE()                                                                                           \
    do {                                                                                                       \
        if (!next) {                                                                                           \
            cli_error("%s: option %s needs a value (see clfuse %s --help)", c->name, a, c->name);              \
            return -1;                                                                                         \
        }                                                                                                      \
        val = next;                                                                                            \
        if (!eq)                                                                                               \
            i++;                                                                                               \
    } while (0)
        if (!strcmp(a, "--device") && (c->opts & OPT_DEVICE)) {
            TAKE_VALUE();
            o->device = val;
        } else if (!strcmp(a, "--no-fusion") && (c->opts & OPT_NOFUSION) && !eq) {
            o->no_fusion = true;
        } else if (!strcmp(a, "--fused-only") && (c->opts & OPT_FUSED_ONLY) && !eq) {
            o->fused_only = true;
        } else if ((!strcmp(a, "--input") || !strcmp(a, "-i")) && (c->opts & OPT_INPUT)) {
            TAKE_VALUE();
            if (o->ninputs == CLI_MAX_BINDINGS || nname_store == sizeof name_store / sizeof name_store[0]) {
                cli_error("too many --input options");
                return -1;
            }
            char *nm = name_store[nname_store++];
            if (split_eq("--input", val, nm, sizeof name_store[0], &o->inputs[o->ninputs].path))
                return -1;
            for (size_t k = 0; k < o->ninputs; k++)
                if (!strcmp(o->inputs[k].name, nm)) {
                    cli_error("input '%s' is given twice", nm);
                    return -1;
                }
            o->inputs[o->ninputs++].name = nm;
        } else if (!strcmp(a, "--output") && (c->opts & OPT_OUTPUT)) {
            TAKE_VALUE();
            if (o->noutputs == CLI_MAX_BINDINGS || nname_store == sizeof name_store / sizeof name_store[0]) {
                cli_error("too many --output options");
                return -1;
            }
            char *nm = name_store[nname_store++];
            if (split_eq("--output", val, nm, sizeof name_store[0], &o->outputs[o->noutputs].path))
                return -1;
            for (size_t k = 0; k < o->noutputs; k++)
                if (!strcmp(o->outputs[k].name, nm)) {
                    cli_error("output '%s' is given twice", nm);
                    return -1;
                }
            o->outputs[o->noutputs++].name = nm;
        } else if (!strcmp(a, "--dim") && (c->opts & OPT_DIM)) {
            TAKE_VALUE();
            if (o->ndims == CLI_MAX_DIMS || nname_store == sizeof name_store / sizeof name_store[0]) {
                cli_error("too many --dim options");
                return -1;
            }
            char *nm = name_store[nname_store++];
            const char *sz;
            if (split_eq("--dim", val, nm, sizeof name_store[0], &sz))
                return -1;
            char *end;
            errno = 0;
            long long v = strtoll(sz, &end, 10);
            if (errno || *end || v < 0) {
                cli_error("--dim %s: '%s' is not a size (a non-negative integer)", nm, sz);
                return -1;
            }
            o->dim_names[o->ndims] = nm;
            o->dim_values[o->ndims++] = v;
        } else if (!strcmp(a, "-o") && (c->opts & OPT_O)) {
            TAKE_VALUE();
            o->out_path = val;
        } else if (!strcmp(a, "--runs") && (c->opts & OPT_RUNS)) {
            TAKE_VALUE();
            long long v;
            if (parse_whole("--runs", val, 1, 100000, "count", &v))
                return -1;
            o->runs = (int)v;
        } else if (!strcmp(a, "--tol") && (c->opts & OPT_TOL)) {
            TAKE_VALUE();
            char *end;
            double v = strtod(val, &end);
            if (*end || !(v >= 0)) {
                cli_error("--tol: '%s' is not a non-negative number", val);
                return -1;
            }
            o->tol = v;
        } else if (!strcmp(a, "--seed") && (c->opts & OPT_SEED)) {
            TAKE_VALUE();
            char *end;
            o->seed = strtoull(val, &end, 10);
            if (*end || !*val) {
                cli_error("--seed: '%s' is not a number", val);
                return -1;
            }
        } else if (!strcmp(a, "--prompt") && (c->opts & OPT_GENERATE)) {
            TAKE_VALUE();
            o->prompt = val;
        } else if (!strcmp(a, "--steps") && (c->opts & OPT_GENERATE)) {
            TAKE_VALUE();
            long long v;
            if (parse_whole("--steps", val, 0, 1000000, "count", &v))
                return -1;
            o->steps = (int)v;
        } else if (!strcmp(a, "--max-len") && (c->opts & OPT_GENERATE)) {
            TAKE_VALUE();
            if (parse_whole("--max-len", val, 1, 1 << 24, "length", &o->max_len))
                return -1;
        } else if (a[0] == '-' && a[1]) {
            cli_error("%s: unknown option '%s' (see clfuse %s --help)", c->name, argv[i], c->name);
            return -1;
        } else if (c->takes_graph && !o->graph_path) {
            o->graph_path = a;
        } else {
            cli_error("%s: unexpected argument '%s' (see clfuse %s --help)", c->name, a, c->name);
            return -1;
        }
#undef TAKE_VALUE
    }
    if (c->takes_graph && !o->graph_path) {
        cli_error("%s: no GRAPH file given (see clfuse %s --help)", c->name, c->name);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        main_usage(stderr);
        return CLI_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        if (argc > 2 && !strcmp(argv[1], "help")) {
            for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
                if (!strcmp(commands[i].name, argv[2])) {
                    fputs(commands[i].usage, stdout);
                    if (commands[i].opts & OPT_DEVICE)
                        fputs(device_help, stdout);
                    if (commands[i].opts & OPT_DIM)
                        fputs(dim_help, stdout);
                    return CLI_OK;
                }
        }
        main_usage(stdout);
        return CLI_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("clfuse %s\n", CLFUSE_TOOL_VERSION);
        return CLI_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        const command *c = &commands[i];
        if (strcmp(c->name, argv[1]))
            continue;
        for (int k = 2; k < argc; k++)
            if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
                fputs(c->usage, stdout);
                if (c->opts & OPT_DEVICE)
                    fputs(device_help, stdout);
                if (c->opts & OPT_DIM)
                    fputs(dim_help, stdout);
                return CLI_OK;
            }
        cli_opts o;
        if (parse(c, argc - 2, argv + 2, &o))
            return CLI_USAGE;
        return c->fn(&o);
    }
    cli_error("unknown command '%s' (commands: devices, run, plan, code, dot, bench, check, generate)", argv[1]);
    return CLI_USAGE;
}
