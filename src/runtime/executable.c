/* Compiling a graph: the lowered executable from the plan cache, else plan
 * (fused and, for the statistics, unfused), generate each kernel and place
 * the intermediates; then build it and allocate the buffers it owns. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "planner/memory_plan.h"
#include "util/alloc.h"
#include "util/clock.h"
#include "util/env.h"
#include "runtime/driver_quirks.h"
#include "runtime/program_batch.h"
#include "runtime/program_merge.h"
#include "runtime/runtime_internal.h"
#include "runtime/source_lift.h"
#include "util/strbuf.h"
#include "util/text.h"
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

void clf__exe_mark_in_place(clf_executable *e, const clf_graph *g)
{
    for (uint32_t b = 0; b < e->nbuffers; b++) {
        clf__plan_buffer *B = &e->buffers[b];
        const clf__node *n = clf__graph_node(g, B->node);
        if (B->kind != CLF__BUF_OUTPUT || n->op != CLF__OP_CACHE_WRITE)
            continue;
        for (uint32_t c = 0; c < e->nbuffers; c++)
            if (e->buffers[c].kind == CLF__BUF_INPUT && e->buffers[c].node == n->inputs[0]) {
                B->in_place = c + 1;
                e->outputs[B->index].written_into = e->buffers[c].index + 1;
                e->inputs[e->buffers[c].index].written = true;
            }
    }
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

void clf__compile_target(const clf_context *ctx, const clf_compile_params *params, clf__codegen_target *out)
{
    clf_kernel_style style = params ? params->kernel_style : CLF_KERNEL_STYLE_AUTO;
    *out = (clf__codegen_target){.cpu = style == CLF_KERNEL_STYLE_AUTO ? ctx->desc.is_cpu && !ctx->desc.is_gpu
                                                                       : style == CLF_KERNEL_STYLE_CPU,
                                 .max_local = ctx->max_local,
                                 .fp64 = ctx->fp64,
                                 .compute_units = ctx->desc.compute_units};
    cl_ulong local_mem = 0;
    if (clGetDeviceInfo(ctx->device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local_mem, &local_mem, NULL) == CL_SUCCESS)
        out->local_mem = (size_t)local_mem;
    /* The width the driver prefers kernels to be written in; its hardware's
     * where it names none. */
    cl_uint float_width = 0;
    if (clGetDeviceInfo(ctx->device, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, sizeof float_width, &float_width,
                        NULL) != CL_SUCCESS ||
        float_width == 0)
        (void)clGetDeviceInfo(ctx->device, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, sizeof float_width, &float_width,
                              NULL);
    out->float_width = (int)float_width;
    /* NVIDIA GPUs take inline PTX warp shuffles; CLFUSE_WARP_SHUFFLE=0 or 1
     * overrides the vendor test (1 on a device without PTX: its build
     * fails and clf_compile lowers again without them). */
    out->warp_shuffle = !out->cpu && clf__env_switch("CLFUSE_WARP_SHUFFLE", ctx->nvidia_gpu);
    /* Tensor cores through inline PTX mma.sync (sm_80 and later);
     * CLFUSE_TENSOR_CORES=0 or 1 overrides, with the same fallback. */
    out->tensor_cores = !out->cpu && clf__env_switch("CLFUSE_TENSOR_CORES", ctx->nvidia_sm80);
    /* GEMMs of a few rows in their own form (gemm_rows.cl); CLFUSE_GEMM_ROWS=0
     * gives them the tiled forms (to compare). */
    out->no_gemm_rows = !clf__env_switch("CLFUSE_GEMM_ROWS", true);
    out->no_decode_wide = !clf__env_switch("CLFUSE_DECODE_WIDE", true);
    /* Products that read one operand as one (q/k/v, gate/up); off unfused. */
    out->merge_products = !(params && params->disable_fusion) && clf__env_switch("CLFUSE_MERGE_PRODUCTS", true);
    /* TF32 only when asked for (it rounds f32 operands). */
    out->tf32 = (params && params->allow_tf32) || clf__env_switch("CLFUSE_TF32", false);
    if (ctx->quirks & CLF__QUIRK_LOOP_TRIPS_65535)
        out->max_loop_trips = 65535;
    out->small_code = (ctx->quirks & CLF__QUIRK_SLOW_INLINED_CODE) != 0;
}

/* A new, empty executable on ctx. */
static clf_status exe_new(clf_context *ctx, clf_executable **out)
{
    clf_executable *e = clf__calloc(1, sizeof *e);
    *out = NULL;
    if (!e)
        return clf__ctx_fail(ctx, CLF_ERR_OUT_OF_MEMORY, "clf_compile: out of memory");
    e->ctx = ctx;
    if (pthread_mutex_init(&e->lock, NULL) != 0) {
        clf__free(e);
        return clf__ctx_fail(ctx, CLF_ERR_OUT_OF_MEMORY, "clf_compile: pthread_mutex_init failed");
    }
    e->lock_ready = true;
    *out = e;
    return CLF_OK;
}

/* The planner's options for a compile's fused plan. */
static bool attention_fits(const void *target, int64_t batch, int64_t sq, int64_t sk, int64_t d, int64_t dv,
                           char *why, size_t cap)
{
    return clf__cg_attention_fits((const clf__codegen_target *)target, batch, sq, sk, d, dv, why, cap);
}

static clf__plan_options plan_options(const clf_compile_params *params, const clf__codegen_target *target)
{
    return (clf__plan_options){.disable_fusion = params && params->disable_fusion,
                               .max_fused_depth = target->small_code ? CLF__SMALL_CODE_DEPTH : 0,
                               .tiles_reload_operands = !target->cpu,
                               .sizes_vary = target->sizes_vary,
                               .attention_fits = attention_fits,
                               .target = target};
}

/* g with its products merged into *merged (graph_merge_products.h; nothing
 * there where none merge). Where the target's GEMM loads do not compute a
 * merged product's parts (GPU tiles, products of more than CLF__FEW_ROWS
 * rows: the planner stores such an operand), a product whose kernel in g's
 * own plan stores anything but the product itself (an epilogue: a bias, an
 * activation, up's silu(gate) * up) stays apart: merged, that work would
 * be a kernel of its own, unless attention's loads would do it (BERT's v
 * and its bias). That plan is made only where products of more than
 * CLF__FEW_ROWS rows would merge (not for a decode step), and the copy
 * once, after it. */
static clf_status merge_products(clf_context *ctx, const clf_graph *g, const clf_compile_params *params,
                                 const clf__codegen_target *target, const clf__spec_share *share,
                                 clf__merged_graph *merged)
{
    char err[256];
    memset(merged, 0, sizeof *merged);
    bool tiled = false;
    if (!clf__graph_merge_count(g, NULL, &tiled))
        return CLF_OK;
    clf_status st = CLF_OK;
    uint8_t *apart = NULL;
    if (!target->cpu && tiled) {
        clf__plan plan = {0};
        clf__plan_options popt = plan_options(params, target);
        if (!(apart = clf__calloc(g->nnodes, 1))) {
            st = CLF_ERR_OUT_OF_MEMORY;
            snprintf(err, sizeof err, "clf_compile: out of memory");
        } else {
            st = clf__plan_build(g, &popt, &plan, err, sizeof err);
        }
        for (uint32_t k = 0; st == CLF_OK && k < plan.nkernels; k++) {
            const clf__plan_kernel *K = &plan.kernels[k];
            if (K->kind != CLF__REGION_GEMM)
                continue;
            if (!clf__product_few_rows(clf__graph_node(g, K->anchor)) &&
                (K->nstores != 1 || K->stores[0].node != K->anchor) &&
                !clf__plan_epilogue_fits_attention(g, &plan, k, popt.sizes_vary))
                apart[K->anchor] = 1;
        }
        clf__plan_free(&plan);
    }
    if (st == CLF_OK)
        st = clf__graph_merge_products(g, apart, share ? share->merges : NULL, merged, err, sizeof err);
    clf__free(apart);
    return st == CLF_OK ? st : clf__ctx_fail(ctx, st, "%s", err);
}

/* Lowering: plan the graph (fused and, for the statistics, unfused: not
 * for a specialisation or a probe, whose statistics reach no caller since
 * clf_executable_stats gives the stand-in's), generate every kernel
 * (a specialisation's through the memo its graph's specialisations share)
 * and place the intermediates in scratch memory. Fills e's lowered fields
 * (everything the plan cache stores); no OpenCL. */
static clf_status lower(clf_context *ctx, const clf_graph *g, const clf__merged_graph *merged,
                        const clf_compile_params *params, const clf__codegen_target *target,
                        const clf__spec_share *share, clf_executable *e)
{
    char err[256] = "";
    clf__plan plan = {0}, unfused = {0};
    clf__mem_interval *iv = NULL;
    uint64_t *ivoff = NULL;
    clf_status st;
    unsigned long failures = clf__alloc_failures();
    clf__plan_options popt = plan_options(params, target);
    st = clf__plan_build(g, &popt, &plan, err, sizeof err);
    if (st != CLF_OK)
        goto fail_msg;
    clf__plan_options uopt = {.disable_fusion = true};
    st = !share || share->stats ? clf__plan_build(g, &uopt, &unfused, err, sizeof err) : CLF_OK;
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
    e->offsets = clf__calloc(plan.nbuffers ? plan.nbuffers : 1, sizeof *e->offsets);
    e->kernels = clf__calloc(plan.nkernels ? plan.nkernels : 1, sizeof *e->kernels);
    if (!e->inputs || !e->outputs || !e->buffers || !e->offsets || !e->kernels)
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
        }
    }
    clf__exe_mark_in_place(e, g);

    /* Kernels. */
    const char *env_tune = getenv("CLFUSE_AUTOTUNE");
    bool autotune = (params && params->autotune) || (env_tune && strcmp(env_tune, "1") == 0);
    for (uint32_t k = 0; k < plan.nkernels; k++) {
        clf__kernel_code code;
        clf__codegen_target tk = *target;
        clf__gemm_config tuned;
        /* The autotuner times the tilings of the GEMM's form (portable or
         * tensor-core); the few-rows form has none. */
        if (autotune && plan.kernels[k].kind == CLF__REGION_GEMM && !target->gemm &&
            !clf__gemm_rows(g, &plan, k, target) && clf__gemm_autotune(ctx, g, &plan, k, target, &tuned))
            tk.gemm = &tuned;
        st = share && share->memo ? clf__codegen_kernel_memo(share->memo, g, &plan, k, &tk, &code, err, sizeof err)
                                  : clf__codegen_kernel(g, &plan, k, &tk, &code, err, sizeof err);
        if (st != CLF_OK)
            goto fail_msg;
        if (clf__log_enabled(CLF__LOG_SCHEDULE)) {
            char line[320];
            clf__log(CLF__LOG_SCHEDULE, "kernel %u %s (%s): %s", k, code.name,
                     clf__region_kind_name(plan.kernels[k].kind), clf__schedule_str(&code, line, sizeof line));
        }
        clf__exe_kernel *K = &e->kernels[e->nkernels++];
        K->name = code.name;
        K->entry = code.entry;
        K->ops = code.ops;
        K->source = code.source;
        K->params = code.params;
        K->nparams = code.nparams;
        K->wide_index = code.wide_index;
        K->final_name = code.final_name;
        K->numel = (uint64_t)plan.kernels[k].numel;
        K->global = code.global;
        K->local = code.local;
        K->final_global = code.final_global;
        K->final_local = code.final_local;
        if (K->final_name && K->numel) {
            K->partial_bytes = code.scratch_bytes;
            e->stats.launches++; /* the split's second launch */
        }
        if (K->numel)
            K->state_bytes = code.state_bytes;
        if (plan.kernels[k].nops) {
            /* The caller's node ids: a merged product is each of its members. */
            const size_t most = plan.kernels[k].nops * (merged->g ? CLF__MERGED_MAX_MEMBERS : 1);
            K->nodes = clf__malloc(most * sizeof *K->nodes);
            if (!K->nodes) {
                st = CLF_ERR_OUT_OF_MEMORY;
                snprintf(err, sizeof err, "clf_compile: out of memory");
                goto fail_msg;
            }
            if (merged->g) {
                for (uint32_t i = 0; i < plan.kernels[k].nops; i++)
                    K->nnodes += (uint32_t)clf__merged_origins(merged, plan.kernels[k].ops[i], K->nodes + K->nnodes,
                                                     most - K->nnodes);
            } else {
                memcpy(K->nodes, plan.kernels[k].ops, plan.kernels[k].nops * sizeof *K->nodes);
                K->nnodes = plan.kernels[k].nops;
            }
        }
    }

    /* Memory plan: intervals for the intermediates, then the partial
     * results of split reductions (alive within their kernel). */
    size_t niv = 0, cap = (size_t)plan.nbuffers + e->nkernels + 1;
    iv = clf__calloc(cap, sizeof *iv);
    ivoff = clf__calloc(cap, sizeof *ivoff);
    if (!iv || !ivoff) {
        st = CLF_ERR_OUT_OF_MEMORY;
        snprintf(err, sizeof err, "clf_compile: out of memory");
        goto fail_msg;
    }
    for (uint32_t b = 0; b < plan.nbuffers; b++) {
        uint32_t first, last;
        if (plan.buffers[b].kind != CLF__BUF_INTERMEDIATE || plan.buffers[b].bytes == 0 ||
            !clf__plan_buffer_lifetime(&plan, b, &first, &last))
            continue;
        iv[niv++] = (clf__mem_interval){plan.buffers[b].bytes, first, last};
        e->stats.intermediate_buffers++;
        e->stats.intermediate_bytes += plan.buffers[b].bytes;
    }
    for (size_t k = 0; k < e->nkernels; k++) {
        if (!e->kernels[k].partial_bytes)
            continue;
        iv[niv++] = (clf__mem_interval){e->kernels[k].partial_bytes, (uint32_t)k, (uint32_t)k};
        e->stats.intermediate_buffers++;
        e->stats.intermediate_bytes += e->kernels[k].partial_bytes;
    }
    st = clf__memory_plan(iv, niv, ctx->base_align, ivoff, &e->scratch_bytes);
    if (st != CLF_OK) {
        snprintf(err, sizeof err, "clf_compile: %s while placing the intermediates",
                 st == CLF_ERR_OUT_OF_MEMORY ? "out of memory" : "size overflow");
        goto fail_msg;
    }
    niv = 0;
    for (uint32_t b = 0; b < plan.nbuffers; b++) {
        uint32_t first, last;
        if (plan.buffers[b].kind == CLF__BUF_INTERMEDIATE && plan.buffers[b].bytes &&
            clf__plan_buffer_lifetime(&plan, b, &first, &last))
            e->offsets[b] = ivoff[niv++];
    }
    for (size_t k = 0; k < e->nkernels; k++)
        if (e->kernels[k].partial_bytes)
            e->kernels[k].partial_offset = ivoff[niv++];
    e->stats.peak_intermediate_bytes = e->scratch_bytes;
    if (clf__alloc_failures() != failures) {
        /* Generated source is built in strings whose allocation failures are
         * sticky and not all checked by the writers: a kernel made while an
         * allocation failed may be incomplete, so none is used. */
        st = CLF_ERR_OUT_OF_MEMORY;
        snprintf(err, sizeof err, "clf_compile: out of memory while planning or generating code");
        goto fail_msg;
    }
    clf__log(CLF__LOG_SCHEDULE, "memory plan: %llu intermediates, %llu bytes, in %llu bytes of scratch",
             (unsigned long long)e->stats.intermediate_buffers, (unsigned long long)e->stats.intermediate_bytes,
             (unsigned long long)e->scratch_bytes);
    st = CLF_OK;
    goto out;

fail_msg:
    if (st == CLF_ERR_INTERNAL && clf__alloc_failures() != failures) {
        /* The planner's and codegen's consistency checks also trip when an
         * allocation inside them failed. */
        st = CLF_ERR_OUT_OF_MEMORY;
        snprintf(err, sizeof err, "clf_compile: out of memory while planning or generating code");
    }
    clf__ctx_fail(ctx, st, "%s", err);
out:
    clf__free(iv);
    clf__free(ivoff);
    clf__plan_free(&plan);
    clf__plan_free(&unfused);
    return st;
}

cl_int clf__zeroed_buffer(clf_context *ctx, uint64_t bytes, cl_mem *out)
{
    void *zeros = bytes <= SIZE_MAX ? clf__calloc(1, (size_t)bytes) : NULL;
    cl_int err = CL_OUT_OF_HOST_MEMORY;
    *out = NULL;
    if (zeros)
        *out = clCreateBuffer(ctx->cl, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, (size_t)bytes, zeros, &err);
    clf__free(zeros);
    return *out ? CL_SUCCESS : err;
}

/* The kernels' own state (clf__exe_kernel.state_at): regions of one
 * zeroed buffer, placed by the memory planner as buffers all live at once
 * (none sharing a byte), and that buffer, except for the executables of a
 * graph with symbolic sizes, whose buffer dynamic.c shares. */
static clf_status make_kernel_state(clf_context *ctx, clf_executable *e)
{
    size_t n = 0;
    for (size_t k = 0; k < e->nkernels; k++)
        n += e->kernels[k].state_bytes != 0;
    if (!n)
        return CLF_OK;
    clf__mem_interval *iv = clf__malloc(n * sizeof *iv);
    uint64_t *off = clf__malloc(n * sizeof *off), total = 0;
    clf_status st = iv && off ? CLF_OK : CLF_ERR_OUT_OF_MEMORY;
    for (size_t k = 0, i = 0; k < e->nkernels && st == CLF_OK; k++)
        if (e->kernels[k].state_bytes)
            iv[i++] = (clf__mem_interval){e->kernels[k].state_bytes, 0, (uint32_t)e->nkernels};
    if (st == CLF_OK)
        st = clf__memory_plan(iv, n, ctx->base_align, off, &total);
    if (st == CLF_OK && total >= ((uint64_t)1 << 34))
        st = CLF_ERR_UNSUPPORTED; /* state_at counts uints in 32 bits */
    for (size_t k = 0, i = 0; k < e->nkernels && st == CLF_OK; k++)
        if (e->kernels[k].state_bytes)
            e->kernels[k].state_at = (uint32_t)(off[i++] / sizeof(cl_uint));
    clf__free(iv);
    clf__free(off);
    e->state_bytes = total;
    cl_int err = CL_SUCCESS;
    if (st == CLF_OK && !e->lift)
        err = clf__zeroed_buffer(ctx, total, &e->state);
    if (st != CLF_OK)
        return clf__ctx_fail(ctx, st, "clf_compile: %s while placing the kernels' state",
                             st == CLF_ERR_OUT_OF_MEMORY ? "out of memory" : "size overflow");
    if (err == CL_SUCCESS)
        return CLF_OK;
    return clf__ctx_fail(ctx, clf__cl_status(err), "clf_compile: %llu bytes of kernels' state: %s",
                         (unsigned long long)total, clf__cl_error_name(err));
}

/* The largest work-group the device says kernel k runs in
 * (CL_KERNEL_WORK_GROUP_SIZE: registers per work-item on GPUs); 0 when there
 * is no kernel or no answer. */
static size_t kernel_fit(const clf_context *ctx, cl_kernel k)
{
    size_t fit = 0;
    if (!k || clGetKernelWorkGroupInfo(k, ctx->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof fit, &fit, NULL) != CL_SUCCESS)
        return 0;
    return fit;
}

/* Whether kernel K, a GPU reduction kernel (kernels_templates/
 * reduction_gpu.cl: given no rows, it touches no memory), runs one idle
 * work-group of its planned size. CL_KERNEL_WORK_GROUP_SIZE can be far
 * below what a kernel runs at: NVIDIA's driver reported 256 for a
 * 56-register kernel that an H200 runs in groups of 512 (bench/probes/
 * cl_kernel_info.c), which would lower a persistent softmax into a kernel
 * that reloads its rows. A launch the kernel's registers do not allow
 * fails with CL_OUT_OF_RESOURCES. */
static bool idle_launch_runs(clf_context *ctx, const clf_executable *e, const clf__exe_kernel *K)
{
    if (K->final_kernel || K->local <= 1 || !strstr(K->source, "/* ---- kernels_templates/reduction_gpu.cl ---- */"))
        return false;
    cl_int err;
    cl_mem dummy = clCreateBuffer(ctx->cl, CL_MEM_READ_WRITE, 64, NULL, &err);
    if (!dummy)
        return false;
    cl_command_queue q = clCreateCommandQueue(ctx->cl, ctx->device, 0, &err);
    cl_uint last = 0;
    for (uint32_t p = 0; q && err == CL_SUCCESS && p < K->nparams; p++)
        err = clf__set_buffer_arg(K->kernel, &last, &e->buffers[K->params[p]], dummy, 0);
    for (uint32_t p = 0; q && err == CL_SUCCESS && p < K->nlift; p++)
        err = clSetKernelArg(K->kernel, last++, K->lift[p].size, K->lift[p].bytes);
    const cl_ulong none64 = 0;
    const cl_uint none32 = 0;
    if (q && err == CL_SUCCESS)
        err = K->wide_index ? clSetKernelArg(K->kernel, last, sizeof none64, &none64)
                            : clSetKernelArg(K->kernel, last, sizeof none32, &none32);
    size_t global = K->local, local = K->local;
    if (q && err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(q, K->kernel, 1, NULL, &global, &local, 0, NULL, NULL);
    if (q && err == CL_SUCCESS)
        err = clFinish(q);
    if (q)
        clReleaseCommandQueue(q);
    clReleaseMemObject(dummy);
    return q && err == CL_SUCCESS;
}

/* The distinct sources of e's kernels in the order they first come, into
 * srcs; src_of[k] is kernel k's place among them. Returns their count. */
static size_t index_sources(const clf_executable *e, const char **srcs, size_t *src_of)
{
    size_t n = 0;
    for (size_t k = 0; k < e->nkernels; k++) {
        size_t j = 0;
        while (j < n && strcmp(srcs[j], e->kernels[k].source) != 0)
            j++;
        if (j == n)
            srcs[n++] = e->kernels[k].source;
        src_of[k] = j;
    }
    return n;
}

/* The programs of the n distinct sources got ahead of the kernel loop, in
 * e->build_threads threads (program_batch.c): *jobs, one job per source.
 * None with one thread: the loop gets each as it comes, logging as it
 * goes. */
static clf_status get_programs(clf_context *ctx, clf_executable *e, const char *const *srcs, size_t n,
                               clf__program_job **jobs)
{
    *jobs = NULL;
    if (n < 2 || e->build_threads < 2)
        return CLF_OK;
    *jobs = clf__calloc(n, sizeof **jobs);
    if (!*jobs)
        return clf__ctx_fail(ctx, CLF_ERR_OUT_OF_MEMORY, "clf_compile: out of memory");
    for (size_t j = 0; j < n; j++)
        (*jobs)[j].source = srcs[j];
    clf__program_get_many(ctx, *jobs, n, e->build_threads);
    return CLF_OK;
}

/* One program for the n distinct sources, where the context builds so
 * (ctx->one_program, program_merge.c): *merged (retained), in which source
 * j's kernel functions have clf__merged_name(entry, j). NULL where the
 * merged program does not build: the caller then gets each source's
 * program, so that a failure names its kernel. Only running out of memory
 * fails. */
static clf_status get_merged(clf_context *ctx, const clf_executable *e, const char *const *srcs, size_t n,
                             cl_program *merged)
{
    *merged = NULL;
    if (!ctx->one_program || n < 2)
        return CLF_OK;
    char *text = clf__merge_sources(srcs, n);
    if (!text)
        return clf__ctx_fail(ctx, CLF_ERR_OUT_OF_MEMORY, "clf_compile: out of memory");
    /* Said before the build, which takes PoCL seconds for a model. */
    clf__log(CLF__LOG_CACHE, "one program for %zu sources of %zu kernels: loading or building it", n,
             e->nkernels);
    const double t0 = clf__now_ms();
    cl_int build_err;
    bool built = false;
    clf_status st = clf__program_get_built(ctx, text, "", merged, &build_err, &built);
    const double ms = clf__now_ms() - t0;
    clf__free(text);
    if (st == CLF_OK)
        clf__log(CLF__LOG_CACHE, "one program for %zu sources of %zu kernels: %s in %.1f ms", n, e->nkernels,
                 built ? "built" : "cached", ms);
    else if (st == CLF_ERR_BUILD)
        clf__log(CLF__LOG_PERF, "the %zu sources as one program did not build; building them apart: %s", n,
                 clf_context_last_error(ctx));
    else
        return st;
    clf__ctx_clear_error(ctx);
    return CLF_OK;
}

/* Instantiating a lowered executable: constant buffers, the scratch (unless
 * the caller supplies it), programs and kernels. */
static clf_status instantiate(clf_context *ctx, const clf_graph *g, clf_executable *e)
{
    clf_status st;
    clf__program_job *jobs = NULL;
    const char **srcs = NULL; /* the distinct sources (not for a symbolic graph's specialisations) */
    size_t nsrcs = 0, *src_of = NULL;
    cl_program merged = NULL;
    e->owned = clf__calloc(e->nbuffers ? e->nbuffers : 1, sizeof *e->owned);
    e->events = clf__calloc(e->nkernels ? e->nkernels : 1, sizeof *e->events);
    e->starts = clf__calloc(e->nkernels ? e->nkernels : 1, sizeof *e->starts);
    e->elem_bytes = clf__calloc(e->nbuffers ? e->nbuffers : 1, sizeof *e->elem_bytes);
    if (!e->owned || !e->events || !e->starts || !e->elem_bytes)
        return clf__ctx_fail(ctx, CLF_ERR_OUT_OF_MEMORY, "clf_compile: out of memory");
    for (uint32_t b = 0; b < e->nbuffers; b++) {
        const clf__plan_buffer *B = &e->buffers[b];
        e->elem_bytes[b] = (uint8_t)clf__dtype_info_of(clf__graph_node(g, B->node)->dtype)->size;
        if (B->kind != CLF__BUF_CONSTANT || B->bytes == 0)
            continue;
        if (B->bytes > ctx->desc.max_alloc_bytes && ctx->desc.max_alloc_bytes) {
            st = clf__ctx_fail(ctx, CLF_ERR_UNSUPPORTED,
                               "clf_compile: a constant of %llu bytes exceeds the device's "
                               "CL_DEVICE_MAX_MEM_ALLOC_SIZE (%llu)",
                               (unsigned long long)B->bytes, (unsigned long long)ctx->desc.max_alloc_bytes);
            goto out;
        }
        cl_int cerr;
        const clf__node *cn = clf__graph_node(g, B->node);
        /* A specialisation shares the constants its graph borrowed (those
         * of the executable's own graph) with the others. */
        bool shared = e->pool && cn->borrowed;
        if (shared && (e->owned[b] = clf__pool_find(e->pool, cn->data, B->bytes)) != NULL)
            continue;
        e->owned[b] = clCreateBuffer(ctx->cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (size_t)B->bytes,
                                     cn->data, &cerr);
        if (shared && e->owned[b])
            clf__pool_add(e->pool, cn->data, B->bytes, e->owned[b]);
        if (!e->owned[b]) {
            st = clf__ctx_fail(ctx, clf__cl_status(cerr), "clf_compile: clCreateBuffer(%llu bytes of constant): %s",
                               (unsigned long long)B->bytes, clf__cl_error_name(cerr));
            goto out;
        }
    }
    if (e->scratch_bytes && !e->external_scratch) {
        uint64_t bytes = e->scratch_bytes;
        st = clf__scratch_buffer(ctx, e->scratch_bytes, &bytes, "clf_compile", &e->scratch);
        if (st != CLF_OK)
            goto out;
    }
    e->scratch_ready = e->scratch_bytes == 0 || !e->external_scratch;
    st = make_kernel_state(ctx, e);
    if (st != CLF_OK)
        goto out;

    if (clf__log_enabled(CLF__LOG_OUTPUT_CODE))
        for (size_t k = 0; k < e->nkernels; k++) {
            const clf__exe_kernel *K = &e->kernels[k];
            fprintf(stderr, "[clfuse:output_code] kernel %s (ops: %s), global %zu, local %zu\n%s\n", K->name,
                    K->ops, K->global, K->local, K->source);
        }
    /* A symbolic graph's specialisations get their programs through the
     * lift table (it builds under its lock): what they need built, as one
     * program where the context builds so, else each as its kernel comes;
     * the others get theirs ahead: as one program, or in threads. */
    if (e->lift && e->nkernels > 1) {
        srcs = clf__calloc(e->nkernels, sizeof *srcs);
        if (!srcs) {
            st = clf__ctx_fail(ctx, CLF_ERR_OUT_OF_MEMORY, "clf_compile: out of memory");
            goto out;
        }
        for (size_t k = 0; k < e->nkernels; k++)
            srcs[k] = e->kernels[k].source;
        st = clf__lift_prepare(ctx, e->lift, srcs, e->nkernels);
        if (st != CLF_OK)
            goto out;
    } else if (e->nkernels > 1) {
        srcs = clf__calloc(e->nkernels, sizeof *srcs);
        src_of = clf__calloc(e->nkernels, sizeof *src_of);
        if (!srcs || !src_of) {
            st = clf__ctx_fail(ctx, CLF_ERR_OUT_OF_MEMORY, "clf_compile: out of memory");
            goto out;
        }
        nsrcs = index_sources(e, srcs, src_of);
        st = get_merged(ctx, e, srcs, nsrcs, &merged);
        if (st == CLF_OK && !merged)
            st = get_programs(ctx, e, srcs, nsrcs, &jobs);
        if (st != CLF_OK)
            goto out;
    }
    for (size_t k = 0; k < e->nkernels; k++) {
        clf__exe_kernel *K = &e->kernels[k];
        cl_program prog = NULL;
        size_t slot = SIZE_MAX; /* a symbolic graph's: the source's place in a program of several */
        cl_int build_err = CL_SUCCESS;
        /* Progress of a long compile (a cold build takes PoCL 0.1-0.5 s a
         * program), read only where it is logged: specialisations of
         * symbolic graphs come through here at run time. */
        const clf__program_job *J = jobs ? &jobs[src_of[k]] : NULL;
        bool built = false;
        double ms = 0.0;
        if (merged) {
            clRetainProgram(merged);
            prog = merged;
        } else if (J && !J->skipped) {
            /* Logged with the first kernel of its source; the others share it. */
            const bool first = J->source == K->source;
            st = J->status;
            build_err = J->build_err;
            if (st == CLF_OK) {
                clRetainProgram(J->program);
                prog = J->program;
                built = first && J->built;
                ms = first ? J->ms : 0.0;
            } else
                clf__ctx_fail(ctx, st, "%s", J->message ? J->message : "(out of memory)");
        } else {
            const double t_build = clf__now_ms();
            if (e->lift) {
                /* (Counted only where logged: specialisations come here at
                 * run time, from the caller's threads.) */
                const bool logged = clf__log_enabled(CLF__LOG_CACHE);
                clf__program_counts before = {0}, after;
                if (logged)
                    clf__program_cache_counts(ctx, &before);
                st = clf__lift_program(ctx, e->lift, K->source, &prog, &slot, &K->lift, &K->nlift, &build_err);
                if (logged) {
                    clf__program_cache_counts(ctx, &after);
                    built = after.source_builds != before.source_builds;
                }
            } else
                st = clf__program_get_built(ctx, K->source, "", &prog, &build_err, &built);
            ms = clf__now_ms() - t_build;
        }
        if (st == CLF_OK && merged && clf__log_enabled(CLF__LOG_CACHE))
            clf__log(CLF__LOG_CACHE, "kernel %zu of %zu (%s): in the graph's one program", k + 1, e->nkernels,
                     K->name);
        else if (st == CLF_OK && clf__log_enabled(CLF__LOG_CACHE))
            clf__log(CLF__LOG_CACHE, "kernel %zu of %zu (%s): %s in %.1f ms", k + 1, e->nkernels, K->name,
                     built ? "built" : "cached", ms);
        if (st != CLF_OK) {
            e->ptx_refused = build_err == CL_BUILD_PROGRAM_FAILURE ? clf__codegen_inline_ptx_forms(K->source) : 0u;
            if (st == CLF_ERR_BUILD) {
                /* Keep the log, name the kernel. */
                char *log = clf__strdup(clf_context_last_error(ctx));
                clf__ctx_fail(ctx, st, "clf_compile: kernel %s failed to build: %s", K->name, log ? log : "");
                clf__free(log);
            }
            goto out;
        }
        cl_int cerr = CL_SUCCESS;
        const char *failed = K->name;
        /* In a program of several sources (the graph's one program, or a
         * symbolic graph's built as one), the kernel functions of the
         * source's place. */
        const size_t place = e->lift ? slot : merged ? src_of[k] : SIZE_MAX;
        char *entry = place != SIZE_MAX ? clf__merged_name(K->entry, place) : NULL,
             *final = place != SIZE_MAX ? clf__merged_name(K->final_name, place) : NULL;
        if (place != SIZE_MAX && (!entry || (K->final_name && !final))) {
            cerr = CL_OUT_OF_HOST_MEMORY;
        } else if (e->lift) {
            /* A symbolic graph's executables share their kernels (the table's). */
            if (clf__lift_kernel(e->lift, prog, entry ? entry : K->entry, &K->kernel, &cerr) == CLF_OK &&
                K->final_name) {
                failed = K->final_name;
                clf__lift_kernel(e->lift, prog, final ? final : K->final_name, &K->final_kernel, &cerr);
            }
            if (cerr == CL_SUCCESS && (!K->kernel || (K->final_name && !K->final_kernel)))
                cerr = CL_OUT_OF_HOST_MEMORY;
        } else {
            K->kernel = clCreateKernel(prog, entry ? entry : K->entry, &cerr);
            if (K->kernel && K->final_name) {
                failed = K->final_name;
                K->final_kernel = clCreateKernel(prog, final ? final : K->final_name, &cerr);
            }
        }
        clf__free(entry);
        clf__free(final);
        clReleaseProgram(prog);
        if (!K->kernel || (K->final_name && !K->final_kernel)) {
            st = clf__ctx_fail(ctx, clf__cl_status(cerr), "clf_compile: clCreateKernel(%s): %s", failed,
                               clf__cl_error_name(cerr));
            goto out;
        }
        /* The device may allow this kernel smaller work-groups than the
         * device-wide limit codegen planned with (its registers). */
        const size_t fit = kernel_fit(ctx, K->kernel), fit2 = kernel_fit(ctx, K->final_kernel);
        bool narrow = fit && K->local > fit;
        const bool narrow2 = fit2 && K->final_local > fit2;
        bool idle_ran = false;
        if (narrow && !narrow2) {
            if (e->lift) /* its arguments are shared */
                pthread_mutex_lock(clf__lift_run_lock(e->lift));
            idle_ran = idle_launch_runs(ctx, e, K);
            if (e->lift)
                pthread_mutex_unlock(clf__lift_run_lock(e->lift));
        }
        if (idle_ran) {
            clf__log(CLF__LOG_PERF, "kernel %s: CL_KERNEL_WORK_GROUP_SIZE says %zu, an idle work-group of %zu ran",
                     K->name, fit, K->local);
            narrow = false;
        }
        if (narrow || narrow2) {
            const size_t limit = narrow2 && (!fit || fit2 < fit) ? fit2 : fit;
            if (!e->fit_local || limit < e->fit_local)
                e->fit_local = limit;
            st = clf__ctx_fail(ctx, CLF_ERR_UNSUPPORTED,
                               "clf_compile: kernel %s is launched in work-groups of %zu but the device allows it "
                               "only %zu (CL_KERNEL_WORK_GROUP_SIZE)",
                               K->name, K->local > limit ? K->local : K->final_local, limit);
            goto out;
        }
    }
    st = CLF_OK;
out:
    if (merged)
        clReleaseProgram(merged);
    clf__program_jobs_free(jobs, jobs ? nsrcs : 0);
    clf__free(srcs);
    clf__free(src_of);
    return st;
}

CLF_API clf_status clf_compile(clf_context *ctx, const clf_graph *g, const clf_compile_params *params,
                               clf_executable **out)
{
    if (g && g->nsyms && ctx && out && g->status == CLF_OK) {
        *out = NULL;
        clf__ctx_clear_error(ctx);
        return clf__dyn_compile(ctx, g, params, out);
    }
    return clf__compile_graph(ctx, g, params, NULL, out);
}

/* CLFUSE_ATTENTION_TILE's text: "warps,rows,keys[,stages]" (the
 * tensor-core form's tiling) or "fma,rows,keys,keys_per_item" (the FMA GPU
 * form's). False if it is neither. */
static bool attention_tile_parse(const char *text, clf__attention_tile *t)
{
    int used = 0, used4 = 0;
    *t = (clf__attention_tile){0};
    if (strncmp(text, "fma,", 4) == 0)
        return sscanf(text + 4, "%d,%d,%d%n", &t->rows, &t->bkt, &t->fma_keys, &used) == 3 &&
               text[4 + used] == '\0' && t->fma_keys >= 1;
    const int got = sscanf(text, "%d,%d,%d%n,%d%n", &t->warps, &t->rows, &t->bkt, &used, &t->stages, &used4);
    return got >= 3 && text[got == 4 ? used4 : used] == '\0' && (got != 4 || t->stages >= 1);
}

clf_status clf__compile_graph(clf_context *ctx, const clf_graph *g, const clf_compile_params *params,
                              const clf__spec_share *share, clf_executable **out)
{
    const double t_start = clf__now_ms();
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
    if (params && (int)params->kernel_style != CLF_KERNEL_STYLE_AUTO &&
        params->kernel_style != CLF_KERNEL_STYLE_CPU && params->kernel_style != CLF_KERNEL_STYLE_GPU)
        return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT, "clf_compile: params->kernel_style %d is not a clf_kernel_style",
                             (int)params->kernel_style);

    clf_status st;
    clf_executable *e = NULL;
    clf__merged_graph merged = {0};
    st = exe_new(ctx, &e);
    if (st != CLF_OK)
        return st;

    clf__codegen_target target;
    clf__compile_target(ctx, params, &target);
    /* The representative and the specialisations of a graph with symbolic
     * sizes share programs: their choices must not follow the sizes. */
    target.sizes_vary = share != NULL;
    char *key = NULL, *first_key = NULL;
    /* CLFUSE_GEMM_TILE=tm,tn,tk,wm,wn pins the GEMM tiling, ",mma" after it
     * the tensor-core form's (for tuning by hand; codegen refuses one the
     * device type cannot run). */
    clf__gemm_config pinned;
    const char *tile = getenv("CLFUSE_GEMM_TILE");
    if (tile && *tile) {
        if (!clf__gemm_config_parse(tile, strlen(tile), &pinned)) {
            st = clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT,
                               "clf_compile: CLFUSE_GEMM_TILE=\"%s\" is not five integers tm,tn,tk,wm,wn "
                               "(then \",mma\" for the tensor-core form)",
                               tile);
            goto fail;
        }
        target.gemm = &pinned;
    }
    /* CLFUSE_ATTENTION_TILE=warps,rows,keys[,stages] pins the tensor-core
     * attention form's tiling, fma,rows,keys,keys_per_item the FMA GPU
     * form's (for tuning by hand; codegen refuses one it cannot run). */
    clf__attention_tile attention_pinned = {0};
    const char *attention_tile = getenv("CLFUSE_ATTENTION_TILE");
    if (attention_tile && *attention_tile) {
        if (!attention_tile_parse(attention_tile, &attention_pinned)) {
            st = clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT,
                               "clf_compile: CLFUSE_ATTENTION_TILE=\"%s\" is not three integers warps,rows,keys "
                               "(then \",stages\", 1 or 2), nor \"fma,\" then three, rows,keys,keys_per_item",
                               attention_tile);
            goto fail;
        }
        target.attention_tile = &attention_pinned;
    }
    /* CLFUSE_DECODE_CHUNK=keys pins the decode attention form's chunk (for
     * tuning by hand; codegen refuses one it cannot run). */
    const char *decode_chunk = getenv("CLFUSE_DECODE_CHUNK");
    if (decode_chunk && *decode_chunk) {
        int used = 0;
        unsigned chunk = 0;
        if (sscanf(decode_chunk, "%u%n", &chunk, &used) != 1 || decode_chunk[used] != '\0' || chunk == 0 ||
            chunk > 65536) {
            st = clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT,
                               "clf_compile: CLFUSE_DECODE_CHUNK=\"%s\" is not a count of keys", decode_chunk);
            goto fail;
        }
        target.decode_chunk = chunk;
    }
    unsigned build_threads;
    st = clf__program_batch_threads(ctx, &build_threads);
    if (st != CLF_OK)
        goto fail;
    /* The graph planned: g with its products merged (the cache keys on g). */
    if (target.merge_products && (st = merge_products(ctx, g, params, &target, share, &merged)) != CLF_OK)
        goto fail;
    const clf_graph *gp = merged.g ? merged.g : g;
    /* Whoever asks for the planner's decisions gets them: plan (and store)
     * instead of loading the plan. */
    bool planner_logs = clf__log_enabled(CLF__LOG_FUSION) || clf__log_enabled(CLF__LOG_SCHEDULE);
    /* first_key: the key of the first attempt, which is what the next
     * compile of this graph looks up. A plan is stored only once it has
     * instantiated, and under that key, so that a plan lowered again
     * (below) is found at once next time, not the one that did not fit. */
    for (int attempt = 0;; attempt++) {
        /* Specialisations of a graph with symbolic sizes are not stored:
         * one file per length a caller ever ran would grow without end,
         * and hashing every constant per length costs more than it saves. */
        key = share ? NULL : clf__plan_cache_key(ctx, g, params, &target);
        if (key && planner_logs)
            clf__log(CLF__LOG_CACHE, "plan cache not read: CLFUSE_LOGS asks for the planner's decisions");
        bool loaded = key && !planner_logs && clf__plan_cache_load(ctx, key, gp, e);
        if (!loaded) {
            pthread_mutex_lock(&ctx->lock);
            ctx->counts.plans_built++;
            pthread_mutex_unlock(&ctx->lock);
            st = lower(ctx, gp, &merged, params, &target, share, e);
            if (st != CLF_OK)
                goto fail;
        }
        /* A specialisation takes the shared scratch dynamic.c binds. */
        e->external_scratch = (params && params->external_scratch) || share;
        e->build_threads = build_threads;
        if (share && share->sources_only) {
            st = CLF_OK;
            for (size_t k = 0; k < e->nkernels && st == CLF_OK; k++)
                st = clf__lift_note(share->lift, e->kernels[k].source, share->as_is);
            clf__free(key);
            clf_executable_destroy(&e);
            clf__merged_graph_free(&merged);
            return st == CLF_OK ? st : clf__ctx_fail(ctx, st, "clf_compile: out of memory");
        }
        const double t_lowered = clf__now_ms();
        e->pool = share ? share->pool : NULL;
        e->lift = share ? share->lift : NULL;
        st = instantiate(ctx, gp, e);
        if (st == CLF_OK && share)
            clf__log(CLF__LOG_CACHE, "symbolic sizes: specialisation planned and generated in %.2f ms, instantiated in "
                     "%.2f ms",
                     t_lowered - t_start, clf__now_ms() - t_lowered);
        if (st == CLF_OK) {
            const char *store_key = first_key ? first_key : key;
            if (store_key && (!loaded || first_key))
                clf__plan_cache_store(ctx, store_key, e);
            break;
        }
        if (((e->ptx_refused & CLF__PTX_SHUFFLES) && target.warp_shuffle) ||
            ((e->ptx_refused & CLF__PTX_MMA) && target.tensor_cores)) {
            /* A driver that does not take a form's inline PTX (shuffles,
             * mma): the same plan without that form (local memory, f32
             * FMAs, which every OpenCL device has); a kernel of the other
             * form that fails too comes back here. Other build errors
             * leave fit_local 0 and fail below. */
            clf__log(CLF__LOG_PERF, "a kernel with inline PTX did not build, lowering again without its form: %s",
                     clf_context_last_error(ctx));
            if (e->ptx_refused & CLF__PTX_SHUFFLES)
                target.warp_shuffle = false;
            if (e->ptx_refused & CLF__PTX_MMA)
                target.tensor_cores = false;
        } else {
            /* A kernel's registers allow smaller work-groups than planned:
             * lower again within the largest power of two every kernel
             * allows (the plan cache keys on the limit, so the next compile
             * finds it). */
            size_t fit = e->fit_local, p2 = 1;
            while (p2 * 2 <= fit)
                p2 *= 2;
            if (!fit || attempt == 3 || p2 >= target.max_local)
                goto fail;
            clf__log(CLF__LOG_PERF, "a kernel allows work-groups of %zu only: lowering again with %zu", fit, p2);
            target.max_local = p2;
        }
        if (!first_key)
            first_key = key;
        else
            clf__free(key);
        key = NULL;
        clf_executable_destroy(&e);
        st = exe_new(ctx, &e);
        if (st != CLF_OK) {
            clf__free(first_key);
            clf__merged_graph_free(&merged);
            return st;
        }
        clf__ctx_clear_error(ctx);
    }
    clf__free(key);
    clf__free(first_key);
    clf__merged_graph_free(&merged);
    *out = e;
    return CLF_OK;

fail:
    clf__free(key);
    clf__free(first_key);
    clf_executable_destroy(&e);
    clf__merged_graph_free(&merged);
    return st;
}

CLF_API void clf_executable_destroy(clf_executable **pe)
{
    if (!pe || !*pe)
        return;
    clf_executable *e = *pe;
    if (e->dyn)
        clf__dyn_destroy(e); /* the specialisations, and the constants they share */
    for (size_t k = 0; k < e->nkernels; k++) {
        clf__exe_kernel *K = &e->kernels[k];
        if (K->kernel)
            clReleaseKernel(K->kernel);
        if (K->final_kernel)
            clReleaseKernel(K->final_kernel);
        if (e->starts && e->starts[k])
            clReleaseEvent(e->starts[k]);
        if (e->events && e->events[k])
            clReleaseEvent(e->events[k]);
        clf__free(K->name);
        clf__free(K->entry);
        clf__free(K->final_name);
        clf__free(K->ops);
        clf__text_release(K->source);
        clf__free(K->lift);
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
    clf__free(e->offsets);
    clf__free(e->elem_bytes);
    if (e->scratch)
        clReleaseMemObject(e->scratch);
    if (e->state)
        clReleaseMemObject(e->state);
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

CLF_API clf_status clf_executable_scratch_size(const clf_executable *exe, size_t *bytes)
{
    if (!exe || !bytes)
        return CLF_ERR_INVALID_ARGUMENT;
    *bytes = (size_t)exe->scratch_bytes;
    return CLF_OK;
}

clf_status clf__scratch_buffer(clf_context *ctx, uint64_t need, uint64_t *bytes, const char *call, cl_mem *out)
{
    const uint64_t max = ctx->desc.max_alloc_bytes;
    *out = NULL;
    if (max && need > max)
        return clf__ctx_fail(ctx, CLF_ERR_UNSUPPORTED,
                             "%s: the intermediates need %llu bytes of scratch, more than the device's "
                             "CL_DEVICE_MAX_MEM_ALLOC_SIZE (%llu)",
                             call, (unsigned long long)need, (unsigned long long)max);
    if (max && *bytes > max)
        *bytes = max;
    cl_int err = CL_SUCCESS;
    *out = clCreateBuffer(ctx->cl, CL_MEM_READ_WRITE, (size_t)*bytes, NULL, &err);
    if (!*out)
        return clf__ctx_fail(ctx, clf__cl_status(err), "%s: clCreateBuffer(%llu bytes of scratch): %s", call,
                             (unsigned long long)*bytes, clf__cl_error_name(err));
    return CLF_OK;
}

CLF_API clf_status clf_executable_set_scratch(clf_executable *e, cl_mem buffer, size_t offset)
{
    if (!e)
        return CLF_ERR_INVALID_ARGUMENT;
    clf_context *ctx = e->ctx;
    clf__ctx_clear_error(ctx);
    if (e->dyn)
        return clf__ctx_fail(ctx, CLF_ERR_UNSUPPORTED,
                             "clf_executable_set_scratch: not supported for a graph with symbolic dimensions (its "
                             "specialisations share a scratch buffer of the executable's, grown on demand)");
    if (!buffer) {
        if (e->scratch_bytes == 0 && offset == 0)
            return CLF_OK;
        return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT,
                             "clf_executable_set_scratch: buffer is NULL, the executable needs %llu bytes of scratch",
                             (unsigned long long)e->scratch_bytes);
    }
    cl_context bctx = NULL;
    size_t size = 0;
    cl_int err = clGetMemObjectInfo(buffer, CL_MEM_CONTEXT, sizeof bctx, &bctx, NULL);
    if (err == CL_SUCCESS)
        err = clGetMemObjectInfo(buffer, CL_MEM_SIZE, sizeof size, &size, NULL);
    if (err != CL_SUCCESS)
        return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT, "clf_executable_set_scratch: not a buffer (%s)",
                             clf__cl_error_name(err));
    if (bctx != ctx->cl)
        return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT,
                             "clf_executable_set_scratch: the buffer belongs to another OpenCL context");
    if (offset > size || size - offset < e->scratch_bytes)
        return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT,
                             "clf_executable_set_scratch: the executable needs %llu bytes of scratch, the buffer "
                             "has %zu from offset %zu",
                             (unsigned long long)e->scratch_bytes, offset <= size ? size - offset : (size_t)0, offset);
    /* The regions' offsets are multiples of the alignment (a sub-buffer's
     * origin is too), which the kernels' aligned vector accesses need. */
    if (offset % ctx->base_align)
        return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT,
                             "clf_executable_set_scratch: offset %zu is not a multiple of the device's "
                             "CL_DEVICE_MEM_BASE_ADDR_ALIGN (%llu bytes)",
                             offset, (unsigned long long)ctx->base_align);
    clf__executable_bind_scratch(e, buffer, offset);
    return CLF_OK;
}

void clf__executable_bind_scratch(clf_executable *e, cl_mem buffer, size_t offset)
{
    clRetainMemObject(buffer);
    /* Under the lock, so that no run sets arguments meanwhile; commands in
     * flight keep the old buffer. */
    pthread_mutex_lock(&e->lock);
    cl_mem old = e->scratch;
    e->scratch = buffer;
    e->scratch_at = offset;
    e->scratch_ready = true;
    pthread_mutex_unlock(&e->lock);
    if (old)
        clReleaseMemObject(old);
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
    if (!exe)
        return CLF_ERR_INVALID_ARGUMENT;
    clf_status st = io_info(exe->inputs, exe->ninputs, i, name, dtype, rank, shape);
    if (st == CLF_OK && shape && exe->dyn)
        clf__dyn_mark_symbolic(exe, false, i, shape);
    return st;
}

CLF_API clf_status clf_executable_output(const clf_executable *exe, size_t i, const char **name,
                                         clf_dtype *dtype, int *rank, int64_t *shape)
{
    if (!exe)
        return CLF_ERR_INVALID_ARGUMENT;
    clf_status st = io_info(exe->outputs, exe->noutputs, i, name, dtype, rank, shape);
    if (st == CLF_OK && shape && exe->dyn)
        clf__dyn_mark_symbolic(exe, true, i, shape);
    return st;
}
