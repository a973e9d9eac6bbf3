/* Running an executable: binding inputs and outputs, enqueueing kernels in
 * plan order, host-memory convenience, profiling of the last run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_internal.h"
#include "util/log.h"

/* Resolves named bindings to a per-buffer table of cl_mem. */
static clf_status bind(clf_executable *e, const char *what, const clf__io *io, size_t nio, size_t n,
                       const char *const *names, const cl_mem *mems, cl_mem *table)
{
    clf_context *ctx = e->ctx;
    if (n != nio)
        return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT, "clf_run: %zu %s bound, the graph has %zu",
                             n, what, nio);
    for (size_t i = 0; i < n; i++) {
        if (!names[i])
            return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT, "clf_run: %s binding %zu has a NULL name",
                                 what, i);
        size_t j;
        for (j = 0; j < nio; j++)
            if (strcmp(io[j].name, names[i]) == 0)
                break;
        if (j == nio)
            return clf__ctx_fail(ctx, CLF_ERR_NOT_FOUND, "clf_run: the graph has no %s named \"%s\"",
                                 what, names[i]);
        if (table[io[j].buffer])
            return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT, "clf_run: %s \"%s\" is bound twice",
                                 what, names[i]);
        if (!mems[i]) {
            if (io[j].bytes)
                return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT,
                                     "clf_run: %s \"%s\" (%llu bytes) is bound to NULL", what, names[i],
                                     (unsigned long long)io[j].bytes);
            continue;
        }
        size_t size = 0;
        cl_int err = clGetMemObjectInfo(mems[i], CL_MEM_SIZE, sizeof size, &size, NULL);
        if (err != CL_SUCCESS)
            return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT, "clf_run: %s \"%s\": not a buffer (%s)",
                                 what, names[i], clf__cl_error_name(err));
        if (size < io[j].bytes)
            return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT,
                                 "clf_run: %s \"%s\" needs %llu bytes, the buffer has %zu", what,
                                 names[i], (unsigned long long)io[j].bytes, size);
        table[io[j].buffer] = mems[i];
    }
    return CLF_OK;
}

/* Enqueues every kernel with its buffers from table. */
static clf_status enqueue(clf_executable *e, cl_mem *table, cl_uint nwait, const cl_event *wait,
                          cl_event *done)
{
    clf_context *ctx = e->ctx;
    cl_event prev = NULL;
    for (size_t k = 0; k < e->nkernels; k++) {
        if (e->events[k]) {
            clReleaseEvent(e->events[k]);
            e->events[k] = NULL;
        }
    }
    for (size_t k = 0; k < e->nkernels; k++) {
        clf__exe_kernel *K = &e->kernels[k];
        if (K->global == 0 || K->numel == 0)
            continue;
        cl_int err = CL_SUCCESS;
        cl_uint a = 0;
        for (; a < K->nparams && err == CL_SUCCESS; a++) {
            cl_mem m = table[K->params[a]] ? table[K->params[a]] : e->owned[K->params[a]];
            err = clSetKernelArg(K->kernel, a, sizeof m, &m);
        }
        if (err == CL_SUCCESS) {
            if (K->wide_index) {
                cl_ulong n = K->numel;
                err = clSetKernelArg(K->kernel, a, sizeof n, &n);
            } else {
                cl_uint n = (cl_uint)K->numel;
                err = clSetKernelArg(K->kernel, a, sizeof n, &n);
            }
        }
        if (err != CL_SUCCESS) {
            if (prev)
                clReleaseEvent(prev);
            return clf__ctx_fail(ctx, CLF_ERR_OPENCL, "clf_run: clSetKernelArg(%s, %u): %s", K->name, a,
                                 clf__cl_error_name(err));
        }
        /* Chain events so that out-of-order queues keep plan order too. */
        cl_event ev = NULL;
        err = clEnqueueNDRangeKernel(ctx->queue, K->kernel, 1, NULL, &K->global, &K->local,
                                     prev ? 1 : nwait, prev ? &prev : (nwait ? wait : NULL), &ev);
        if (prev)
            clReleaseEvent(prev);
        prev = NULL;
        if (err != CL_SUCCESS)
            return clf__ctx_fail(ctx,
                                 err == CL_OUT_OF_RESOURCES || err == CL_MEM_OBJECT_ALLOCATION_FAILURE
                                     ? CLF_ERR_OUT_OF_MEMORY
                                     : CLF_ERR_OPENCL,
                                 "clf_run: clEnqueueNDRangeKernel(%s, global %zu, local %zu): %s", K->name,
                                 K->global, K->local, clf__cl_error_name(err));
        e->events[k] = ev;
        clRetainEvent(ev);
        prev = ev;
    }
    if (!prev) {
        /* Nothing to launch (zero-size outputs): still honour the wait list. */
        cl_int err = clEnqueueMarkerWithWaitList(ctx->queue, nwait, nwait ? wait : NULL, &prev);
        if (err != CL_SUCCESS)
            return clf__ctx_fail(ctx, CLF_ERR_OPENCL, "clf_run: clEnqueueMarkerWithWaitList: %s",
                                 clf__cl_error_name(err));
    }
    e->ran = true;
    if (done)
        *done = prev;
    else
        clReleaseEvent(prev);
    return CLF_OK;
}

CLF_API clf_status clf_run(clf_executable *e, size_t ninputs, const clf_buffer_binding *inputs,
                           size_t noutputs, const clf_buffer_binding *outputs, cl_uint nwait,
                           const cl_event *wait, cl_event *done)
{
    if (done)
        *done = NULL;
    if (!e)
        return CLF_ERR_INVALID_ARGUMENT;
    clf_context *ctx = e->ctx;
    clf__ctx_clear_error(ctx);
    if ((ninputs && !inputs) || (noutputs && !outputs) || (nwait && !wait))
        return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT, "clf_run: a binding or wait list is NULL");
    clf_status st = CLF_ERR_OUT_OF_MEMORY;
    cl_mem *table = calloc(e->nbuffers ? e->nbuffers : 1, sizeof *table);
    const char **names = malloc((ninputs + noutputs + 1) * sizeof *names);
    cl_mem *mems = malloc((ninputs + noutputs + 1) * sizeof *mems);
    if (!table || !names || !mems) {
        clf__ctx_fail(ctx, st, "clf_run: out of memory");
        goto done;
    }
    for (size_t i = 0; i < ninputs; i++) {
        names[i] = inputs[i].name;
        mems[i] = inputs[i].buffer;
    }
    for (size_t i = 0; i < noutputs; i++) {
        names[ninputs + i] = outputs[i].name;
        mems[ninputs + i] = outputs[i].buffer;
    }
    st = bind(e, "input", e->inputs, e->ninputs, ninputs, names, mems, table);
    if (st == CLF_OK)
        st = bind(e, "output", e->outputs, e->noutputs, noutputs, names + ninputs, mems + ninputs, table);
    if (st != CLF_OK)
        goto done;
    /* Outputs are written with restrict pointers: no output may share a
     * buffer with an input or another output. */
    for (size_t i = 0; i < noutputs; i++) {
        if (!outputs[i].buffer)
            continue;
        for (size_t j = 0; j < ninputs + noutputs; j++) {
            if (j == ninputs + i || mems[j] != outputs[i].buffer)
                continue;
            st = clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT,
                               "clf_run: output \"%s\" aliases %s \"%s\" (the same cl_mem)",
                               outputs[i].name, j < ninputs ? "input" : "output", names[j]);
            goto done;
        }
    }
    st = enqueue(e, table, nwait, wait, done);
done:
    free(table);
    free(names);
    free(mems);
    return st;
}

/* Device buffers for host runs, made on first use and kept. */
static clf_status staging(clf_executable *e, const clf__io *io, bool is_input)
{
    if (e->host_staging[io->buffer] || io->bytes == 0)
        return CLF_OK;
    cl_int err;
    e->host_staging[io->buffer] = clCreateBuffer(e->ctx->cl, is_input ? CL_MEM_READ_ONLY : CL_MEM_WRITE_ONLY,
                                                 (size_t)io->bytes, NULL, &err);
    if (!e->host_staging[io->buffer])
        return clf__ctx_fail(e->ctx, err == CL_OUT_OF_HOST_MEMORY ? CLF_ERR_OUT_OF_MEMORY : CLF_ERR_OPENCL,
                             "clf_run_host: clCreateBuffer for \"%s\" (%llu bytes): %s", io->name,
                             (unsigned long long)io->bytes, clf__cl_error_name(err));
    return CLF_OK;
}

static const clf__io *find_io(const clf__io *io, size_t n, const char *name)
{
    for (size_t i = 0; name && i < n; i++)
        if (strcmp(io[i].name, name) == 0)
            return &io[i];
    return NULL;
}

CLF_API clf_status clf_run_host(clf_executable *e, size_t ninputs, const clf_host_binding *inputs,
                                size_t noutputs, const clf_host_binding *outputs)
{
    if (!e)
        return CLF_ERR_INVALID_ARGUMENT;
    clf_context *ctx = e->ctx;
    clf__ctx_clear_error(ctx);
    if ((ninputs && !inputs) || (noutputs && !outputs))
        return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT, "clf_run_host: a binding array is NULL");
    clf_status st = CLF_ERR_OUT_OF_MEMORY;
    clf_buffer_binding *bi = calloc(ninputs + 1, sizeof *bi), *bo = calloc(noutputs + 1, sizeof *bo);
    cl_event done = NULL;
    if (!bi || !bo) {
        clf__ctx_fail(ctx, st, "clf_run_host: out of memory");
        goto out;
    }
    /* NULL data is refused before anything is enqueued. */
    for (int pass = 0; pass < 2; pass++) {
        size_t n = pass ? noutputs : ninputs;
        const clf_host_binding *hb = pass ? outputs : inputs;
        for (size_t i = 0; i < n; i++) {
            const clf__io *io = find_io(pass ? e->outputs : e->inputs, pass ? e->noutputs : e->ninputs,
                                        hb[i].name);
            if (io && io->bytes && !hb[i].data) {
                st = clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT, "clf_run_host: %s \"%s\" has NULL data",
                                   pass ? "output" : "input", hb[i].name);
                goto out;
            }
            if (io && (st = staging(e, io, !pass)) != CLF_OK)
                goto out;
            (pass ? bo : bi)[i] = (clf_buffer_binding){hb[i].name, io ? e->host_staging[io->buffer] : NULL};
        }
    }
    /* Counts, duplicates and unknown names are checked by clf_run before it
     * enqueues a kernel; the writes below only touch our staging buffers. */
    cl_event *writes = calloc(ninputs + 1, sizeof *writes);
    cl_uint nw = 0;
    if (!writes) {
        st = clf__ctx_fail(ctx, CLF_ERR_OUT_OF_MEMORY, "clf_run_host: out of memory");
        goto out;
    }
    for (size_t i = 0; i < ninputs; i++) {
        const clf__io *io = find_io(e->inputs, e->ninputs, inputs[i].name);
        if (!io || !io->bytes)
            continue;
        cl_int err = clEnqueueWriteBuffer(ctx->queue, bi[i].buffer, CL_FALSE, 0, (size_t)io->bytes,
                                          inputs[i].data, 0, NULL, &writes[nw]);
        if (err != CL_SUCCESS) {
            st = clf__ctx_fail(ctx, CLF_ERR_OPENCL, "clf_run_host: clEnqueueWriteBuffer(\"%s\"): %s", io->name,
                               clf__cl_error_name(err));
            break;
        }
        nw++;
    }
    if (st == CLF_OK)
        st = clf_run(e, ninputs, bi, noutputs, bo, nw, writes, &done);
    for (cl_uint i = 0; i < nw; i++)
        clReleaseEvent(writes[i]);
    free(writes);
    if (st != CLF_OK) {
        clFinish(ctx->queue);
        goto out;
    }
    for (size_t i = 0; i < noutputs; i++) {
        const clf__io *io = find_io(e->outputs, e->noutputs, outputs[i].name);
        if (!io || !io->bytes)
            continue;
        cl_int err = clEnqueueReadBuffer(ctx->queue, bo[i].buffer, CL_TRUE, 0, (size_t)io->bytes,
                                         outputs[i].data, 1, &done, NULL);
        if (err != CL_SUCCESS) {
            st = clf__ctx_fail(ctx, CLF_ERR_OPENCL, "clf_run_host: clEnqueueReadBuffer(\"%s\"): %s", io->name,
                               clf__cl_error_name(err));
            clFinish(ctx->queue);
            goto out;
        }
    }
    clWaitForEvents(1, &done);
    if (ctx->profiling && clf__log_enabled(CLF__LOG_PERF)) {
        for (size_t k = 0; k < e->nkernels; k++) {
            cl_ulong t0 = 0, t1 = 0;
            if (!e->events[k])
                continue;
            clGetEventProfilingInfo(e->events[k], CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
            clGetEventProfilingInfo(e->events[k], CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
            clf__log(CLF__LOG_PERF, "%s: %.3f ms", e->kernels[k].name, (double)(t1 - t0) * 1e-6);
        }
    }
out:
    if (done)
        clReleaseEvent(done);
    free(bi);
    free(bo);
    return st;
}

CLF_API clf_status clf_executable_last_profile(clf_executable *e, clf_run_profile *out, uint64_t *kernel_ns,
                                               size_t cap)
{
    if (!e || !out)
        return CLF_ERR_INVALID_ARGUMENT;
    memset(out, 0, sizeof *out);
    if (!e->ctx->profiling)
        return clf__ctx_fail(e->ctx, CLF_ERR_UNSUPPORTED,
                             "clf_executable_last_profile: the context's queue has no profiling "
                             "(set clf_context_params.profiling)");
    if (!e->ran)
        return clf__ctx_fail(e->ctx, CLF_ERR_UNSUPPORTED, "clf_executable_last_profile: no run yet");
    cl_ulong first = 0, last = 0;
    size_t idx = 0;
    for (size_t k = 0; k < e->nkernels; k++) {
        if (!e->events[k])
            continue;
        cl_ulong t0 = 0, t1 = 0;
        clWaitForEvents(1, &e->events[k]);
        cl_int err = clGetEventProfilingInfo(e->events[k], CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
        if (err == CL_SUCCESS)
            err = clGetEventProfilingInfo(e->events[k], CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
        if (err != CL_SUCCESS)
            return clf__ctx_fail(e->ctx, CLF_ERR_OPENCL, "clGetEventProfilingInfo: %s", clf__cl_error_name(err));
        if (!out->kernels || t0 < first)
            first = t0;
        if (t1 > last)
            last = t1;
        out->kernel_ns_total += t1 - t0;
        if (kernel_ns && idx < cap)
            kernel_ns[idx] = t1 - t0;
        idx++;
        out->kernels++;
    }
    out->span_ns = out->kernels ? last - first : 0;
    return CLF_OK;
}
