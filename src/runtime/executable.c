/* Compiling a graph: plan (fused and, for the statistics, unfused), generate
 * each kernel, build it, and allocate the buffers the executable owns. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "util/alloc.h"
#include "runtime/runtime_internal.h"
#include "util/strbuf.h"
#include "util/log.h"

static void stats_from(const clf__plan_stats *fused, const clf__plan_stats *unfused, clf_plan_stats *out)
{
    *out = (clf_plan_stats){
        .kernels = fused->kernels,
        .launches = fused->launches,
        .tensor_reads = fused->tensor_reads,
        .tensor_writes = fused->tensor_writes,
        .bytes_read = fused->bytes_read,
        .bytes_written = fused->bytes_written,
        .unfused_kernels = unfused->kernels,
        .unfused_launches = unfused->launches,
        .unfused_tensor_reads = unfused->tensor_reads,
        .unfused_tensor_writes = unfused->tensor_writes,
        .unfused_bytes_read = unfused->bytes_read,
        .unfused_bytes_written = unfused->bytes_written,
    };
}

static clf_status copy_io(clf__io *io, const clf__node *n, const char *name, uint32_t buffer)
{
    io->name = clf__strdup(name);
    if (!io->name)
        return CLF_ERR_OUT_OF_MEMORY;
    io->dtype = n->dtype;
    io->rank = n->rank;
    memcpy(io->shape, n->shape, sizeof n->shape);
    io->bytes = (uint64_t)clf__node_numel(n) * clf_dtype_size(n->dtype);
    io->buffer = buffer;
    return CLF_OK;
}

CLF_API clf_status clf_compile(clf_context *ctx, const clf_graph *g, const clf_compile_params *params,
                               clf_executable **out)
{
    if (!out)
        return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT, "clf_compile: out is NULL");
    *out = NULL;
    if (!ctx)
        return CLF_ERR_INVALID_ARGUMENT;
    clf__ctx_clear_error(ctx);
    if (!g)
        return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT, "clf_compile: graph is NULL");
    const char *gmsg = "";
    if (clf_graph_status(g, &gmsg) != CLF_OK)
        return clf__ctx_fail(ctx, CLF_ERR_GRAPH, "clf_compile: the graph is in an error state: %s", gmsg);
    if (g->noutputs == 0)
        return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT, "clf_compile: the graph has no outputs");

    char err[256] = "";
    clf__plan plan = {0}, unfused = {0};
    clf_status st;
    clf_executable *e = clf__calloc(1, sizeof *e);
    if (!e)
        return clf__ctx_fail(ctx, CLF_ERR_OUT_OF_MEMORY, "clf_compile: out of memory");
    e->ctx = ctx;
    if (pthread_mutex_init(&e->lock, NULL) != 0) {
        clf__free(e);
        return clf__ctx_fail(ctx, CLF_ERR_OUT_OF_MEMORY, "clf_compile: pthread_mutex_init failed");
    }
    e->lock_ready = true;

    clf__plan_options popt = {.disable_fusion = params && params->disable_fusion};
    st = clf__plan_build(g, &popt, &plan, err, sizeof err);
    if (st != CLF_OK)
        goto fail_msg;
    clf__plan_options uopt = {.disable_fusion = true};
    st = clf__plan_build(g, &uopt, &unfused, err, sizeof err);
    if (st != CLF_OK)
        goto fail_msg;
    stats_from(&plan.stats, &unfused.stats, &e->stats);

    /* Inputs, outputs and the buffer table. */
    st = CLF_ERR_OUT_OF_MEMORY;
    snprintf(err, sizeof err, "clf_compile: out of memory");
    e->ninputs = g->ninputs;
    e->noutputs = g->noutputs;
    e->inputs = clf__calloc(g->ninputs ? g->ninputs : 1, sizeof *e->inputs);
    e->outputs = clf__calloc(g->noutputs, sizeof *e->outputs);
    e->nbuffers = plan.nbuffers;
    e->buffers = clf__malloc((plan.nbuffers ? plan.nbuffers : 1) * sizeof *e->buffers);
    e->owned = clf__calloc(plan.nbuffers ? plan.nbuffers : 1, sizeof *e->owned);
    e->kernels = clf__calloc(plan.nkernels ? plan.nkernels : 1, sizeof *e->kernels);
    e->events = clf__calloc(plan.nkernels ? plan.nkernels : 1, sizeof *e->events);
    e->starts = clf__calloc(plan.nkernels ? plan.nkernels : 1, sizeof *e->starts);
    if (!e->inputs || !e->outputs || !e->buffers || !e->owned || !e->kernels || !e->events || !e->starts)
        goto fail_msg;
    memcpy(e->buffers, plan.buffers, plan.nbuffers * sizeof *plan.buffers);
    for (uint32_t b = 0; b < plan.nbuffers; b++) {
        const clf__plan_buffer *B = &plan.buffers[b];
        const clf__node *n = clf__graph_node(g, B->node);
        if (B->kind == CLF__BUF_INPUT) {
            if (copy_io(&e->inputs[B->index], n, n->name, b) != CLF_OK)
                goto fail_msg;
        } else if (B->kind == CLF__BUF_OUTPUT) {
            if (copy_io(&e->outputs[B->index], n, g->outputs[B->index].name, b) != CLF_OK)
                goto fail_msg;
        } else if (B->bytes > 0) {
            cl_int cerr;
            if (B->bytes > ctx->desc.max_alloc_bytes && ctx->desc.max_alloc_bytes) {
                st = clf__ctx_fail(ctx, CLF_ERR_UNSUPPORTED,
                                   "clf_compile: a %s of %llu bytes exceeds the device's "
                                   "CL_DEVICE_MAX_MEM_ALLOC_SIZE (%llu)",
                                   B->kind == CLF__BUF_CONSTANT ? "constant" : "intermediate",
                                   (unsigned long long)B->bytes,
                                   (unsigned long long)ctx->desc.max_alloc_bytes);
                goto fail;
            }
            if (B->kind == CLF__BUF_CONSTANT)
                e->owned[b] = clCreateBuffer(ctx->cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                             (size_t)B->bytes, n->data, &cerr);
            else
                e->owned[b] = clCreateBuffer(ctx->cl, CL_MEM_READ_WRITE, (size_t)B->bytes, NULL, &cerr);
            if (!e->owned[b]) {
                st = clf__ctx_fail(ctx, clf__cl_status(cerr),
                                   "clf_compile: clCreateBuffer(%llu bytes): %s",
                                   (unsigned long long)B->bytes, clf__cl_error_name(cerr));
                goto fail;
            }
        }
    }

    /* Kernels. */
    clf_kernel_style style = params ? params->kernel_style : CLF_KERNEL_STYLE_AUTO;
    clf__codegen_target target = {.cpu = style == CLF_KERNEL_STYLE_AUTO ? ctx->desc.is_cpu && !ctx->desc.is_gpu
                                                                        : style == CLF_KERNEL_STYLE_CPU,
                                  .max_local = ctx->max_local,
                                  .fp64 = ctx->fp64,
                                  .compute_units = ctx->desc.compute_units};
    for (uint32_t k = 0; k < plan.nkernels; k++) {
        clf__kernel_code code;
        st = clf__codegen_kernel(g, &plan, k, &target, &code, err, sizeof err);
        if (st != CLF_OK)
            goto fail_msg;
        clf__exe_kernel *K = &e->kernels[e->nkernels++];
        K->name = code.name;
        K->ops = code.ops;
        K->source = code.source;
        K->params = code.params;
        K->nparams = code.nparams;
        K->wide_index = code.wide_index;
        if (plan.kernels[k].nops) {
            K->nodes = clf__malloc(plan.kernels[k].nops * sizeof *K->nodes);
            if (!K->nodes) {
                st = CLF_ERR_OUT_OF_MEMORY;
                snprintf(err, sizeof err, "clf_compile: out of memory");
                goto fail_msg;
            }
            memcpy(K->nodes, plan.kernels[k].ops, plan.kernels[k].nops * sizeof *K->nodes);
            K->nnodes = plan.kernels[k].nops;
        }
        K->numel = (uint64_t)plan.kernels[k].numel;
        K->global = code.global;
        K->local = code.local;
        K->final_global = code.final_global;
        K->final_local = code.final_local;
        char *final_name = code.final_name;
        code.final_name = NULL;
        if (final_name && K->numel) {
            cl_int serr;
            K->scratch = clCreateBuffer(ctx->cl, CL_MEM_READ_WRITE, (size_t)code.scratch_bytes, NULL, &serr);
            if (!K->scratch) {
                clf__free(final_name);
                st = clf__ctx_fail(ctx, clf__cl_status(serr), "clf_compile: clCreateBuffer(%llu bytes of partial "
                                   "results for %s): %s", (unsigned long long)code.scratch_bytes, K->name,
                                   clf__cl_error_name(serr));
                goto fail;
            }
            e->stats.launches++; /* the split's second launch */
        }
        if (clf__log_enabled(CLF__LOG_OUTPUT_CODE))
            fprintf(stderr, "[clfuse:output_code] kernel %s (ops: %s), global %zu, local %zu\n%s\n",
                    K->name, K->ops, K->global, K->local, K->source);
        cl_program prog;
        st = clf__program_get(ctx, K->source, "", &prog);
        if (st != CLF_OK) {
            if (st == CLF_ERR_BUILD) {
                /* Keep the log, name the kernel. */
                char *log = clf__strdup(clf_context_last_error(ctx));
                clf__ctx_fail(ctx, st, "clf_compile: kernel %s failed to build: %s", K->name,
                              log ? log : "");
                clf__free(log);
            }
            clf__free(final_name);
            goto fail;
        }
        cl_int cerr;
        K->kernel = clCreateKernel(prog, K->name, &cerr);
        if (K->kernel && final_name)
            K->final_kernel = clCreateKernel(prog, final_name, &cerr);
        clReleaseProgram(prog);
        if (final_name && !K->final_kernel) {
            st = clf__ctx_fail(ctx, clf__cl_status(cerr), "clf_compile: clCreateKernel(%s): %s", final_name,
                               clf__cl_error_name(cerr));
            clf__free(final_name);
            goto fail;
        }
        clf__free(final_name);
        if (!K->kernel) {
            st = clf__ctx_fail(ctx, clf__cl_status(cerr), "clf_compile: clCreateKernel(%s): %s", K->name,
                               clf__cl_error_name(cerr));
            goto fail;
        }
    }
    clf__plan_free(&plan);
    clf__plan_free(&unfused);
    *out = e;
    return CLF_OK;

fail_msg:
    clf__ctx_fail(ctx, st, "%s", err);
fail:
    clf__plan_free(&plan);
    clf__plan_free(&unfused);
    clf_executable_destroy(&e);
    return st;
}

CLF_API void clf_executable_destroy(clf_executable **pe)
{
    if (!pe || !*pe)
        return;
    clf_executable *e = *pe;
    for (size_t k = 0; k < e->nkernels; k++) {
        clf__exe_kernel *K = &e->kernels[k];
        if (K->kernel)
            clReleaseKernel(K->kernel);
        if (K->final_kernel)
            clReleaseKernel(K->final_kernel);
        if (K->scratch)
            clReleaseMemObject(K->scratch);
        if (e->starts && e->starts[k])
            clReleaseEvent(e->starts[k]);
        if (e->events && e->events[k])
            clReleaseEvent(e->events[k]);
        clf__free(K->name);
        clf__free(K->ops);
        clf__free(K->source);
        clf__free(K->params);
        clf__free(K->nodes);
    }
    for (uint32_t b = 0; b < e->nbuffers; b++) {
        if (e->owned && e->owned[b])
            clReleaseMemObject(e->owned[b]);
    }
    for (size_t i = 0; e->inputs && i < e->ninputs; i++)
        clf__free(e->inputs[i].name);
    for (size_t i = 0; e->outputs && i < e->noutputs; i++)
        clf__free(e->outputs[i].name);
    clf__free(e->inputs);
    clf__free(e->outputs);
    clf__free(e->buffers);
    clf__free(e->owned);
    clf__staging_free_all(e);
    if (e->last)
        clReleaseEvent(e->last);
    if (e->lock_ready)
        pthread_mutex_destroy(&e->lock);
    clf__free(e->kernels);
    clf__free(e->events);
    clf__free(e->starts);
    clf__free(e);
    *pe = NULL;
}

CLF_API clf_status clf_executable_stats(const clf_executable *exe, clf_plan_stats *out)
{
    if (!exe || !out)
        return CLF_ERR_INVALID_ARGUMENT;
    *out = exe->stats;
    return CLF_OK;
}

CLF_API size_t clf_executable_kernel_count(const clf_executable *exe) { return exe ? exe->nkernels : 0; }

CLF_API const char *clf_executable_kernel_name(const clf_executable *exe, size_t i)
{
    return exe && i < exe->nkernels ? exe->kernels[i].name : NULL;
}

CLF_API const char *clf_executable_kernel_ops(const clf_executable *exe, size_t i)
{
    return exe && i < exe->nkernels ? exe->kernels[i].ops : NULL;
}

CLF_API const char *clf_executable_kernel_source(const clf_executable *exe, size_t i)
{
    return exe && i < exe->nkernels ? exe->kernels[i].source : NULL;
}

CLF_API const uint32_t *clf_executable_kernel_nodes(const clf_executable *exe, size_t i, size_t *count)
{
    if (!exe || i >= exe->nkernels) {
        if (count)
            *count = 0;
        return NULL;
    }
    if (count)
        *count = exe->kernels[i].nnodes;
    return exe->kernels[i].nodes;
}

CLF_API size_t clf_executable_input_count(const clf_executable *exe) { return exe ? exe->ninputs : 0; }

CLF_API size_t clf_executable_output_count(const clf_executable *exe) { return exe ? exe->noutputs : 0; }

static clf_status io_info(const clf__io *io, size_t n, size_t i, const char **name, clf_dtype *dtype,
                          int *rank, int64_t *shape)
{
    if (!io || i >= n)
        return CLF_ERR_NOT_FOUND;
    if (name)
        *name = io[i].name;
    if (dtype)
        *dtype = io[i].dtype;
    if (rank)
        *rank = io[i].rank;
    if (shape)
        memcpy(shape, io[i].shape, (size_t)io[i].rank * sizeof *shape);
    return CLF_OK;
}

CLF_API clf_status clf_executable_input(const clf_executable *exe, size_t i, const char **name,
                                        clf_dtype *dtype, int *rank, int64_t *shape)
{
    return exe ? io_info(exe->inputs, exe->ninputs, i, name, dtype, rank, shape) : CLF_ERR_INVALID_ARGUMENT;
}

CLF_API clf_status clf_executable_output(const clf_executable *exe, size_t i, const char **name,
                                         clf_dtype *dtype, int *rank, int64_t *shape)
{
    return exe ? io_info(exe->outputs, exe->noutputs, i, name, dtype, rank, shape) : CLF_ERR_INVALID_ARGUMENT;
}
