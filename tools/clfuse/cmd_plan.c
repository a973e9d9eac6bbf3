/* clfuse devices, plan and code: what the device is and what the fuser did
 * with a graph. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cmd_devices(const cli_opts *o)
{
    (void)o;
    size_t count = 0;
    clf_status st = clf_devices_list(NULL, 0, &count);
    if (st != CLF_OK) {
        cli_error("no OpenCL platform found (%s); install an OpenCL driver such as pocl-opencl-icd",
                  clf_status_name(st));
        return CLI_FAIL;
    }
    clf_device_desc *d = calloc(count ? count : 1, sizeof *d);
    if (!d) {
        cli_error("out of memory");
        return CLI_FAIL;
    }
    st = clf_devices_list(d, count, &count);
    if (st != CLF_OK) {
        cli_error("listing devices failed: %s", clf_status_name(st));
        free(d);
        return CLI_FAIL;
    }
    /* The default device is the one a context opens with no selector. */
    int dflt = -1;
    clf_context *ctx = NULL;
    if (clf_context_create(NULL, &ctx) == CLF_OK) {
        clf_device_desc cd;
        if (clf_context_device(ctx, &cd) == CLF_OK)
            dflt = (int)cd.index;
        clf_context_destroy(&ctx);
    }
    const char *last_platform = "";
    for (size_t i = 0; i < count; i++) {
        char mem[32], alloc_b[32];
        if (strcmp(last_platform, d[i].platform_name)) {
            printf("platform: %s\n", d[i].platform_name);
            last_platform = d[i].platform_name;
        }
        printf("  [%u] %s%s\n", d[i].index, d[i].device_name, (int)d[i].index == dflt ? "   (default)" : "");
        printf("      type: %s, %s\n", d[i].is_gpu ? "GPU" : d[i].is_cpu ? "CPU" : "accelerator",
               d[i].device_version);
        printf("      compute units: %u, global memory: %s, largest buffer: %s\n", d[i].compute_units,
               cli_bytes_str(d[i].global_mem_bytes, mem, sizeof mem),
               cli_bytes_str(d[i].max_alloc_bytes, alloc_b, sizeof alloc_b));
        printf("      kernels: %s\n", d[i].is_gpu ? "work-group per row, local-memory reductions"
                                                   : "work-item per row, serial loops (CPU variant)");
    }
    if (!count)
        printf("no OpenCL devices\n");
    free(d);
    return CLI_OK;
}

bool *cli_plan_membership(const clf_executable *exe, const cli_model *cm)
{
    size_t nk = clf_executable_kernel_count(exe), nn = clf_onnx_model_node_count(cm->m);
    bool *in = calloc(nk * nn + 1, sizeof *in);
    if (!in)
        return NULL;
    for (size_t k = 0; k < nk; k++) {
        size_t count = 0;
        const uint32_t *ids = clf_executable_kernel_nodes(exe, k, &count);
        for (size_t j = 0; j < nn; j++) {
            clf_onnx_node N;
            clf_onnx_model_node(cm->m, j, &N);
            for (size_t i = 0; i < count && !in[k * nn + j]; i++)
                in[k * nn + j] = ids[i] >= N.first_graph_node && ids[i] < N.end_graph_node;
        }
    }
    return in;
}

/* Opens the device and compiles the graph file: shared by plan, code, dot. */
int cli_compile_file(const cli_opts *o, cli_model *cm, clf_context **ctx, clf_executable **exe)
{
    int rc;
    if ((rc = cli_load(o, NULL, 0, cm)) != CLI_OK)
        return rc;
    if ((rc = cli_context(o, false, ctx)) != CLI_OK || (rc = cli_compile(*ctx, cm->g, o->no_fusion, exe))) {
        clf_context_destroy(ctx);
        cli_model_free(cm);
    }
    return rc;
}

static void stat_row(const char *label, uint64_t fused, uint64_t unfused, bool bytes)
{
    char a[32], b[32];
    if (bytes)
        printf("  %-14s %12s %12s\n", label, cli_bytes_str(fused, a, sizeof a), cli_bytes_str(unfused, b, sizeof b));
    else
        printf("  %-14s %12llu %12llu\n", label, (unsigned long long)fused, (unsigned long long)unfused);
}

int cmd_plan(const cli_opts *o)
{
    cli_model cm;
    clf_context *ctx = NULL;
    clf_executable *exe = NULL;
    int rc = cli_compile_file(o, &cm, &ctx, &exe);
    if (rc)
        return rc;
    bool *in = cli_plan_membership(exe, &cm);
    if (!in) {
        cli_error("out of memory");
        rc = CLI_FAIL;
        goto done;
    }
    clf_device_desc dev;
    clf_context_device(ctx, &dev);
    size_t nk = clf_executable_kernel_count(exe), nn = clf_onnx_model_node_count(cm.m);
    printf("graph %s (%s): %zu node%s, %zu kernel%s%s on %s\n", cm.info.graph_name, o->graph_path, nn,
           nn == 1 ? "" : "s", nk, nk == 1 ? "" : "s", o->no_fusion ? " (fusion off)" : "", dev.device_name);
    for (size_t i = 0; i < clf_executable_input_count(exe); i++) {
        const char *name;
        clf_dtype dt;
        int rank;
        int64_t shape[CLF_MAX_RANK];
        clf_executable_input(exe, i, &name, &dt, &rank, shape);
        printf("%s %s %s[", i ? "      " : "inputs:", name, clf_dtype_name(dt));
        for (int d = 0; d < rank; d++)
            printf(d ? ", %lld" : "%lld", (long long)shape[d]);
        printf("]\n");
    }
    for (size_t k = 0; k < nk; k++) {
        printf("\nkernel %zu  %s\n", k, clf_executable_kernel_name(exe, k));
        printf("  ops:   %s\n", clf_executable_kernel_ops(exe, k));
        printf("  nodes:");
        size_t shown = 0;
        for (size_t j = 0; j < nn; j++) {
            if (!in[k * nn + j])
                continue;
            clf_onnx_node n;
            clf_onnx_model_node(cm.m, j, &n);
            /* Where the node is: its line in a text file, else its index (and name). */
            if (n.line)
                printf("%s %s = %s (line %d)", shown++ ? "," : "", n.outputs[0], n.op_type, n.line);
            else
                printf("%s %s = %s (node %zu%s%s%s)", shown++ ? "," : "", n.outputs[0], n.op_type, j,
                       n.name[0] ? " '" : "", n.name, n.name[0] ? "'" : "");
        }
        printf("%s\n", shown ? "" : " (none)");
    }
    clf_plan_stats s;
    clf_executable_stats(exe, &s);
    printf("\n  %-14s %12s %12s\n", "", o->no_fusion ? "as compiled" : "fused", "unfused");
    stat_row("kernels", s.kernels, s.unfused_kernels, false);
    stat_row("launches", s.launches, s.unfused_launches, false);
    stat_row("tensor reads", s.tensor_reads, s.unfused_tensor_reads, false);
    stat_row("tensor writes", s.tensor_writes, s.unfused_tensor_writes, false);
    stat_row("bytes read", s.bytes_read, s.unfused_bytes_read, true);
    stat_row("bytes written", s.bytes_written, s.unfused_bytes_written, true);
    stat_row("bytes moved", s.bytes_read + s.bytes_written, s.unfused_bytes_read + s.unfused_bytes_written, true);
done:
    free(in);
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
    cli_model_free(&cm);
    return rc;
}

int cmd_code(const cli_opts *o)
{
    cli_model cm;
    clf_context *ctx = NULL;
    clf_executable *exe = NULL;
    int rc = cli_compile_file(o, &cm, &ctx, &exe);
    if (rc)
        return rc;
    size_t nk = clf_executable_kernel_count(exe);
    for (size_t k = 0; k < nk; k++) {
        printf("// ---- kernel %zu of %zu: %s (ops: %s)\n", k, nk, clf_executable_kernel_name(exe, k),
               clf_executable_kernel_ops(exe, k));
        const char *src = clf_executable_kernel_source(exe, k);
        size_t len = strlen(src);
        printf("%s%s\n", src, len && src[len - 1] == '\n' ? "" : "\n");
    }
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
    cli_model_free(&cm);
    return CLI_OK;
}
