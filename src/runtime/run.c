/* Running an executable: binding inputs and outputs, enqueueing kernels in
 * plan order, host-memory convenience, profiling of the last run. Runs of
 * one executable may come from several threads: setting kernel arguments
 * and enqueueing happen under the executable's lock, and each host run
 * takes its own staging buffers from a pool. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime_internal.h"
#include "runtime/source_lift.h"
#include "util/alloc.h"
#include "util/log.h"

/* The memory a buffer binding touches: the tensor's bytes from the buffer's
 * start, placed in its parent when it is a sub-buffer. */
typedef struct span {
    cl_mem root;
    size_t begin, end;
} span;

static span span_of(cl_mem m, uint64_t bytes)
{
    span s = {m, 0, (size_t)bytes};
    cl_mem parent = NULL;
    size_t offset = 0;
    if (clGetMemObjectInfo(m, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof parent, &parent, NULL) == CL_SUCCESS && parent &&
        clGetMemObjectInfo(m, CL_MEM_OFFSET, sizeof offset, &offset, NULL) == CL_SUCCESS)
        s = (span){parent, offset, offset + (size_t)bytes};
    return s;
}

/* Resolves named bindings to a per-buffer table of cl_mem. A binding with
 * an offset is given to the kernels as a sub-buffer made here (of the
 * buffer's parent when it is itself a sub-buffer); those go to made[], to be
 * released once enqueued. */
static clf_status bind(clf_executable *e, const char *what, const clf__io *io, size_t nio, size_t n,
                       const clf_buffer_view *bs, cl_mem *table, cl_mem *made, size_t *nmade)
{
    clf_context *ctx = e->ctx;
    if (n != nio)
        return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT, "clf_run: %zu %s bound, the graph has %zu",
                             n, what, nio);
    for (size_t i = 0; i < n; i++) {
        const char *name = bs[i].name;
        cl_mem mem = bs[i].buffer;
        size_t offset = bs[i].offset;
        if (!name)
            return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT, "clf_run: %s binding %zu has a NULL name",
                                 what, i);
        size_t j;
        for (j = 0; j < nio; j++)
            if (strcmp(io[j].name, name) == 0)
                break;
        if (j == nio)
            return clf__ctx_fail(ctx, CLF_ERR_NOT_FOUND, "clf_run: the graph has no %s named \"%s\"",
                                 what, name);
        if (table[io[j].buffer])
            return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT, "clf_run: %s \"%s\" is bound twice",
                                 what, name);
        if (io == e->outputs && io[j].written_into) {
            /* A cache write: the memory of its cache input (bound first). */
            const clf__io *in = &e->inputs[io[j].written_into - 1];
            cl_mem have = table[in->buffer];
            span a = {NULL, 0, 0}, b = {NULL, 0, 0};
            if (in->bytes == 0)
                continue; /* an empty cache: nothing is written, any binding will do */
            if (have && mem) {
                a = span_of(have, in->bytes);
                b = span_of(mem, io[j].bytes);
            }
            if (!have || !mem || a.root != b.root || a.begin != b.begin + offset)
                return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT,
                                     "clf_run: output \"%s\" is the cache written in place into input \"%s\": "
                                     "bind it to the same buffer and offset as that input",
                                     name, in->name);
            table[io[j].buffer] = have;
            continue;
        }
        if (!mem) {
            if (io[j].bytes)
                return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT,
                                     "clf_run: %s \"%s\" (%llu bytes) is bound to NULL", what, name,
                                     (unsigned long long)io[j].bytes);
            continue;
        }
        size_t size = 0;
        cl_context mctx = NULL;
        cl_int err = clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof size, &size, NULL);
        if (err == CL_SUCCESS)
            err = clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof mctx, &mctx, NULL);
        if (err != CL_SUCCESS)
            return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT, "clf_run: %s \"%s\": not a buffer (%s)",
                                 what, name, clf__cl_error_name(err));
        if (mctx != ctx->cl)
            return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT,
                                 "clf_run: %s \"%s\": the buffer belongs to another OpenCL context", what, name);
        if (io == e->inputs && io[j].written) {
            /* A cache its write updates in place: the kernel writes it. */
            cl_mem_flags flags = 0;
            clGetMemObjectInfo(mem, CL_MEM_FLAGS, sizeof flags, &flags, NULL);
            if (flags & CL_MEM_READ_ONLY)
                return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT,
                                     "clf_run: input \"%s\" is a cache written in place: its buffer must be "
                                     "writable (it is CL_MEM_READ_ONLY)",
                                     name);
        }
        if (offset > size || size - offset < io[j].bytes)
            return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT,
                                 "clf_run: %s \"%s\" needs %llu bytes from offset %zu, the buffer has %zu", what,
                                 name, (unsigned long long)io[j].bytes, offset, size);
        if (offset && io[j].bytes) {
            cl_mem root = mem, parent = NULL;
            size_t total = offset, poff = 0;
            if (clGetMemObjectInfo(mem, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof parent, &parent, NULL) == CL_SUCCESS &&
                parent && clGetMemObjectInfo(mem, CL_MEM_OFFSET, sizeof poff, &poff, NULL) == CL_SUCCESS) {
                root = parent;
                total += poff;
            }
            if (total % ctx->base_align)
                return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT,
                                     "clf_run: %s \"%s\": offset %zu%s is not a multiple of the device's "
                                     "CL_DEVICE_MEM_BASE_ADDR_ALIGN (%llu bytes); use an aligned offset or "
                                     "copy the tensor",
                                     what, name, total, poff ? " (with the sub-buffer's own offset)" : "",
                                     (unsigned long long)ctx->base_align);
            cl_buffer_region r = {total, (size_t)io[j].bytes};
            /* Flags 0: the sub-buffer inherits the parent's access flags. */
            mem = clCreateSubBuffer(root, 0, CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
            if (!mem)
                return clf__ctx_fail(ctx, clf__cl_status(err),
                                     "clf_run: %s \"%s\": clCreateSubBuffer(offset %zu, %llu bytes): %s", what,
                                     name, total, (unsigned long long)io[j].bytes, clf__cl_error_name(err));
            made[(*nmade)++] = mem;
        }
        table[io[j].buffer] = mem;
    }
    return CLF_OK;
}

cl_int clf__set_buffer_arg(cl_kernel kern, cl_uint *a, const clf__plan_buffer *B, cl_mem mem, cl_ulong at)
{
    cl_int err = clSetKernelArg(kern, (*a)++, sizeof mem, &mem);
    if (err == CL_SUCCESS && clf__plan_buffer_in_scratch(B))
        err = clSetKernelArg(kern, (*a)++, sizeof at, &at);
    return err;
}

/* Sets kernel k's arguments from table. Called with e->lock held. */
static cl_int set_args(clf_executable *e, clf__exe_kernel *K, cl_kernel kern, cl_mem *table, cl_uint *failed_arg)
{
    cl_int err = CL_SUCCESS;
    cl_uint a = 0;
    for (uint32_t p = 0; p < K->nparams && err == CL_SUCCESS; p++) {
        const uint32_t b = K->params[p];
        if (clf__plan_buffer_in_scratch(&e->buffers[b]))
            err = clf__set_buffer_arg(kern, &a, &e->buffers[b], e->scratch,
                                      (e->scratch_at + e->offsets[b]) / e->elem_bytes[b]);
        else
            err = clf__set_buffer_arg(kern, &a, &e->buffers[b], table[b] ? table[b] : e->owned[b], 0);
    }
    /* Literals lifted out of the source (source_lift.h), after CLF_PARAMS. */
    for (uint32_t l = 0; l < K->nlift && err == CL_SUCCESS; l++, a++)
        err = clSetKernelArg(kern, a, K->lift[l].size, K->lift[l].bytes);
    if (err == CL_SUCCESS && K->partial_bytes) { /* the partial results: the scratch, and where in it */
        const cl_ulong at = e->scratch_at + K->partial_offset;
        err = clSetKernelArg(kern, a++, sizeof e->scratch, &e->scratch);
        if (err == CL_SUCCESS)
            err = clSetKernelArg(kern, a++, sizeof at, &at);
    }
    if (err == CL_SUCCESS && K->state_bytes) { /* its state: the buffer, and where in it */
        err = clSetKernelArg(kern, a++, sizeof e->state, &e->state);
        if (err == CL_SUCCESS)
            err = clSetKernelArg(kern, a++, sizeof K->state_at, &K->state_at);
    }
    if (err == CL_SUCCESS) {
        if (K->wide_index) {
            cl_ulong n = K->numel;
            err = clSetKernelArg(kern, a, sizeof n, &n);
        } else {
            cl_uint n = (cl_uint)K->numel;
            err = clSetKernelArg(kern, a, sizeof n, &n);
        }
    } else {
        a--;
    }
    *failed_arg = a;
    return err;
}

/* Whether event ev belongs to queue q (an unreadable queue counts as
 * another). */
static bool event_of_queue(cl_event ev, cl_command_queue q)
{
    cl_command_queue of = NULL;
    return clGetEventInfo(ev, CL_EVENT_COMMAND_QUEUE, sizeof of, &of, NULL) == CL_SUCCESS && of == q;
}

/* Enqueues every kernel with its buffers from table, after the wait list
 * and after the executable's previous run (runs share intermediates). The
 * lock covers setting arguments through enqueueing: OpenCL captures the
 * arguments at enqueue, so another thread may set its own afterwards.
 * events (nkernels entries, may be NULL) receives this run's retained
 * per-kernel events. */
static clf_status enqueue(clf_executable *e, cl_command_queue queue, cl_mem *table, cl_uint nwait,
                          const cl_event *wait, cl_event *done, cl_event *events)
{
    clf_context *ctx = e->ctx;
    clf_status st = CLF_OK;
    cl_event *evs = clf__calloc(e->nkernels ? e->nkernels : 1, sizeof *evs);
    cl_event *first = clf__malloc(((size_t)nwait + 1) * sizeof *first);
    if (!evs || !first) {
        clf__free(evs);
        clf__free(first);
        return clf__ctx_fail(ctx, CLF_ERR_OUT_OF_MEMORY, "clf_run: out of memory");
    }
    pthread_mutex_lock(&e->lock);
    if (!e->scratch_ready) {
        pthread_mutex_unlock(&e->lock);
        clf__free(evs);
        clf__free(first);
        return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT,
                             "clf_run: the executable was compiled with external_scratch and has no scratch "
                             "buffer yet: give it %llu bytes with clf_executable_set_scratch",
                             (unsigned long long)e->scratch_bytes);
    }
    /* The kernels of a symbolic graph's executables are shared: their
     * arguments are set and captured under the table's lock. */
    pthread_mutex_t *shared = e->lift ? clf__lift_run_lock(e->lift) : NULL;
    if (shared)
        pthread_mutex_lock(shared);
    /* The previous run: this executable's, or for a symbolic graph's
     * specialisation, any specialisation's (they share their scratch). */
    cl_event *last = shared ? clf__lift_last_run(e->lift) : &e->last;
    /* On an in-order queue the kernels run in the order enqueued: only the
     * first (after the wait list) and the last (the run's event) need
     * events, unless profiling wants each kernel's. Events per kernel cost
     * several microseconds each on NVIDIA's driver, a third of a small
     * model's run. */
    cl_command_queue_properties qp = 0;
    clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof qp, &qp, NULL);
    /* Wait lists only where the queue does not order the kernels itself
     * (an in-order queue runs them in the order enqueued; dropping the
     * waits there changed no time measured on the H200). */
    const bool out_of_order = (qp & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) != 0;
    bool chain = out_of_order || (qp & CL_QUEUE_PROFILING_ENABLE);
    /* The previous run's last event, unless this in-order queue ran it. */
    cl_uint nfirst = nwait;
    if (nwait)
        memcpy(first, wait, nwait * sizeof *first);
    if (*last && (out_of_order || !event_of_queue(*last, queue)))
        first[nfirst++] = *last;
    size_t last_k = e->nkernels;
    for (size_t k = 0; k < e->nkernels; k++)
        if (!(e->kernels[k].global == 0 || e->kernels[k].numel == 0))
            last_k = k;
    bool launched = false;
    cl_event prev = NULL;
    for (size_t k = 0; k < e->nkernels; k++) {
        clf__exe_kernel *K = &e->kernels[k];
        if (K->global == 0 || K->numel == 0)
            continue;
        cl_uint a;
        cl_int err = set_args(e, K, K->kernel, table, &a);
        if (err == CL_SUCCESS && K->final_kernel)
            err = set_args(e, K, K->final_kernel, table, &a);
        if (err != CL_SUCCESS) {
            st = clf__ctx_fail(ctx, clf__cl_status(err), "clf_run: clSetKernelArg(%s, %u): %s", K->name, a,
                               clf__cl_error_name(err));
            break;
        }
        /* Chain events so that out-of-order queues keep plan order too. */
        cl_event ev = NULL;
        bool want_ev = chain || k == last_k || K->final_kernel;
        cl_uint nw = launched ? (prev && out_of_order ? 1 : 0) : nfirst;
        const cl_event *w = launched ? (nw ? &prev : NULL) : (nfirst ? first : NULL);
        err = clEnqueueNDRangeKernel(queue, K->kernel, 1, NULL, &K->global, &K->local, nw, w, want_ev ? &ev : NULL);
        launched = true;
        if (err != CL_SUCCESS) {
            st = clf__ctx_fail(ctx, clf__cl_status(err),
                               "clf_run: clEnqueueNDRangeKernel(%s, global %zu, local %zu): %s", K->name,
                               K->global, K->local, clf__cl_error_name(err));
            break;
        }
        if (K->final_kernel) {
            /* A split reduction's combining launch; its first launch is kept
             * for profiling. */
            cl_event fin = NULL;
            err = clEnqueueNDRangeKernel(queue, K->final_kernel, 1, NULL, &K->final_global, &K->final_local,
                                         out_of_order ? 1 : 0, out_of_order ? &ev : NULL, &fin);
            if (err != CL_SUCCESS) {
                clReleaseEvent(ev);
                st = clf__ctx_fail(ctx, clf__cl_status(err), "clf_run: clEnqueueNDRangeKernel(%s final): %s",
                                   K->name, clf__cl_error_name(err));
                break;
            }
            if (e->starts[k])
                clReleaseEvent(e->starts[k]);
            e->starts[k] = ev;
            ev = fin;
        }
        evs[k] = ev;
        if (chain || k == last_k) {
            prev = ev;
        } else {
            if (ev)
                clReleaseEvent(ev); /* a split reduction's: the queue orders what follows */
            evs[k] = NULL;
            prev = NULL;
        }
    }
    cl_event marker = NULL;
    if (st != CLF_OK && launched && !prev) {
        /* A failure part-way on an in-order queue: an event for what went in. */
        if (clEnqueueMarkerWithWaitList(queue, 0, NULL, &marker) == CL_SUCCESS)
            prev = marker;
    }
    if (st == CLF_OK && !prev && !launched) {
        /* Nothing to launch (zero-size outputs): still honour the wait list. */
        cl_int err = clEnqueueMarkerWithWaitList(queue, nfirst, nfirst ? first : NULL, &marker);
        if (err != CL_SUCCESS)
            st = clf__ctx_fail(ctx, clf__cl_status(err), "clf_run: clEnqueueMarkerWithWaitList: %s",
                               clf__cl_error_name(err));
        prev = marker;
    }
    if (prev) {
        /* Even after a failure part-way, the next run waits for what went in. */
        if (*last)
            clReleaseEvent(*last);
        *last = prev;
        clRetainEvent(prev);
    }
    if (st == CLF_OK) {
        for (size_t k = 0; k < e->nkernels; k++) {
            if (e->events[k])
                clReleaseEvent(e->events[k]);
            e->events[k] = evs[k]; /* the reference moves */
            if (events && evs[k])
                clRetainEvent(evs[k]);
            if (events)
                events[k] = evs[k];
            evs[k] = NULL;
        }
        e->ran = true;
    }
    if (st == CLF_OK && done) {
        /* Under the lock: once it is released, another thread's run may
         * release *last and e->events, this run's last references to
         * prev but the caller's (a crash on an H200 under load). */
        clRetainEvent(prev);
        *done = prev;
    }
    if (shared)
        pthread_mutex_unlock(shared);
    pthread_mutex_unlock(&e->lock);
    for (size_t k = 0; k < e->nkernels; k++)
        if (evs[k])
            clReleaseEvent(evs[k]);
    if (marker)
        clReleaseEvent(marker);
    clf__free(first);
    clf__free(evs);
    return st;
}

static const clf__io *find_io(const clf__io *io, size_t n, const char *name)
{
    for (size_t i = 0; name && i < n; i++)
        if (strcmp(io[i].name, name) == 0)
            return &io[i];
    return NULL;
}

/* Outputs are written through restrict pointers: no output may share memory
 * with an input or another output, whether through the same cl_mem,
 * overlapping offsets of one buffer or overlapping sub-buffers. table holds
 * the resolved bindings (sub-buffers for offsets). */
static clf_status check_aliasing(clf_executable *e, const cl_mem *table)
{
    size_t n = e->ninputs + e->noutputs;
    for (size_t i = e->ninputs; i < n; i++) {
        const clf__io *oi = &e->outputs[i - e->ninputs];
        cl_mem mi = table[oi->buffer];
        if (!mi || !oi->bytes)
            continue;
        span so = span_of(mi, oi->bytes);
        for (size_t j = 0; j < n; j++) {
            const clf__io *oj = j < e->ninputs ? &e->inputs[j] : &e->outputs[j - e->ninputs];
            cl_mem mj = table[oj->buffer];
            if (j == i || !mj || !oj->bytes || (j < e->ninputs && oi->written_into == j + 1))
                continue; /* a cache write and its cache: one memory (bind checked it) */
            span sj = span_of(mj, oj->bytes);
            if (mj == mi || (so.root == sj.root && so.begin < sj.end && sj.begin < so.end))
                return clf__ctx_fail(e->ctx, CLF_ERR_INVALID_ARGUMENT, "clf_run: output \"%s\" aliases %s \"%s\" (%s)",
                                     oi->name, j < e->ninputs ? "input" : "output", oj->name,
                                     mj == mi ? "the same cl_mem" : "overlapping bytes of one buffer");
        }
    }
    return CLF_OK;
}

/* clf_run on queue, with this run's per-kernel events (retained) in events
 * when not NULL. */
static clf_status run_bound(clf_executable *e, cl_command_queue queue, size_t ninputs,
                            const clf_buffer_view *inputs, size_t noutputs, const clf_buffer_view *outputs,
                            cl_uint nwait, const cl_event *wait, cl_event *done, cl_event *events)
{
    clf_context *ctx = e->ctx;
    if ((ninputs && !inputs) || (noutputs && !outputs) || (nwait && !wait))
        return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT, "clf_run: a binding or wait list is NULL");
    for (cl_uint i = 0; i < nwait; i++)
        if (!wait[i])
            return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT, "clf_run: wait list entry %u is NULL", i);
    if (!queue) {
        queue = ctx->queue;
    } else {
        cl_context qctx = NULL;
        cl_device_id qdev = NULL;
        cl_int err = clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof qctx, &qctx, NULL);
        if (err == CL_SUCCESS)
            err = clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof qdev, &qdev, NULL);
        if (err != CL_SUCCESS)
            return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT, "clf_enqueue: not a command queue (%s)",
                                 clf__cl_error_name(err));
        if (qctx != ctx->cl || qdev != ctx->device)
            return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT,
                                 "clf_enqueue: the queue belongs to another OpenCL context or device than the "
                                 "executable's");
    }
    clf_status st = CLF_ERR_OUT_OF_MEMORY;
    size_t nmade = 0;
    cl_mem *table = clf__calloc(e->nbuffers ? e->nbuffers : 1, sizeof *table);
    cl_mem *made = clf__calloc(ninputs + noutputs + 1, sizeof *made);
    if (!table || !made) {
        clf__ctx_fail(ctx, st, "clf_run: out of memory");
        goto done;
    }
    st = bind(e, "input", e->inputs, e->ninputs, ninputs, inputs, table, made, &nmade);
    if (st == CLF_OK)
        st = bind(e, "output", e->outputs, e->noutputs, noutputs, outputs, table, made, &nmade);
    if (st == CLF_OK)
        st = check_aliasing(e, table);
    if (st == CLF_OK)
        st = enqueue(e, queue, table, nwait, wait, done, events);
    /* Submitted, not only queued: the caller (or the next run, on another
     * queue) may wait for this run's events from another queue, which
     * OpenCL allows only once this queue is flushed. PoCL submits at once;
     * rusticl waits for a flush, and such a wait hung there. */
    if (st == CLF_OK)
        clFlush(queue);
done:
    /* Commands enqueued keep the sub-buffers they use alive. */
    for (size_t i = 0; i < nmade; i++)
        clReleaseMemObject(made[i]);
    clf__free(table);
    clf__free(made);
    return st;
}

/* clf_buffer_binding as clf_buffer_view at offset 0 (NULL when out of
 * memory; n + 1 entries so that an empty list is not NULL). */
static clf_buffer_view *views_of(const clf_buffer_binding *b, size_t n)
{
    clf_buffer_view *v = clf__calloc(n + 1, sizeof *v);
    for (size_t i = 0; v && b && i < n; i++)
        v[i] = (clf_buffer_view){b[i].name, b[i].buffer, 0};
    return v;
}

/* clf_run and clf_run_host: bindings as views at offset 0, then run_bound. */
static clf_status run_bindings(clf_executable *e, size_t ninputs, const clf_buffer_binding *inputs, size_t noutputs,
                               const clf_buffer_binding *outputs, cl_uint nwait, const cl_event *wait, cl_event *done,
                               cl_event *events)
{
    if ((ninputs && !inputs) || (noutputs && !outputs))
        return clf__ctx_fail(e->ctx, CLF_ERR_INVALID_ARGUMENT, "clf_run: a binding or wait list is NULL");
    clf_buffer_view *vi = views_of(inputs, ninputs), *vo = views_of(outputs, noutputs);
    clf_status st = vi && vo ? run_bound(e, NULL, ninputs, vi, noutputs, vo, nwait, wait, done, events)
                             : clf__ctx_fail(e->ctx, CLF_ERR_OUT_OF_MEMORY, "clf_run: out of memory");
    clf__free(vi);
    clf__free(vo);
    return st;
}

CLF_API clf_status clf_run(clf_executable *e, size_t ninputs, const clf_buffer_binding *inputs,
                           size_t noutputs, const clf_buffer_binding *outputs, cl_uint nwait,
                           const cl_event *wait, cl_event *done)
{
    if (done)
        *done = NULL;
    if (!e)
        return CLF_ERR_INVALID_ARGUMENT;
    clf__ctx_clear_error(e->ctx);
    if (e->dyn)
        return clf__dyn_refuse(e, "clf_run");
    return run_bindings(e, ninputs, inputs, noutputs, outputs, nwait, wait, done, NULL);
}

clf_status clf__enqueue(clf_executable *e, cl_command_queue queue, size_t ninputs, const clf_buffer_view *inputs,
                        size_t noutputs, const clf_buffer_view *outputs, cl_uint nwait, const cl_event *wait,
                        cl_event *done)
{
    return run_bound(e, queue, ninputs, inputs, noutputs, outputs, nwait, wait, done, NULL);
}

CLF_API clf_status clf_enqueue(clf_executable *e, cl_command_queue queue, size_t ninputs,
                               const clf_buffer_view *inputs, size_t noutputs, const clf_buffer_view *outputs,
                               cl_uint nwait, const cl_event *wait, cl_event *done)
{
    if (done)
        *done = NULL;
    if (!e)
        return CLF_ERR_INVALID_ARGUMENT;
    clf__ctx_clear_error(e->ctx);
    if (e->dyn)
        return clf__dyn_refuse(e, "clf_enqueue");
    return run_bound(e, queue, ninputs, inputs, noutputs, outputs, nwait, wait, done, NULL);
}

void clf__staging_free_all(clf_executable *e)
{
    while (e->staging_free) {
        clf__staging *s = e->staging_free;
        e->staging_free = s->next;
        for (uint32_t b = 0; s->mem && b < e->nbuffers; b++)
            if (s->mem[b])
                clReleaseMemObject(s->mem[b]);
        clf__free(s->mem);
        clf__free(s);
    }
}

/* A staging set not in use by another host run: from the pool, else new. */
static clf__staging *staging_take(clf_executable *e)
{
    pthread_mutex_lock(&e->lock);
    clf__staging *s = e->staging_free;
    if (s)
        e->staging_free = s->next;
    pthread_mutex_unlock(&e->lock);
    if (s)
        return s;
    s = clf__calloc(1, sizeof *s);
    if (s && !(s->mem = clf__calloc(e->nbuffers ? e->nbuffers : 1, sizeof *s->mem))) {
        clf__free(s);
        s = NULL;
    }
    return s;
}

/* Returns a set to the pool once nothing enqueued uses it any more. */
static void staging_give(clf_executable *e, clf__staging *s)
{
    pthread_mutex_lock(&e->lock);
    s->next = e->staging_free;
    e->staging_free = s;
    pthread_mutex_unlock(&e->lock);
}

/* The staging slot of io: its own buffer's, or for a cache write its cache
 * input's (the kernel writes the new entries there; the output is read
 * back from it). */
static uint32_t staging_slot(const clf_executable *e, const clf__io *io, bool is_input)
{
    return !is_input && io->written_into ? e->inputs[io->written_into - 1].buffer : io->buffer;
}

/* The set's buffer for io, made on first use and kept with the set. */
static clf_status staging_buffer(clf_executable *e, clf__staging *s, const clf__io *io, bool is_input)
{
    uint32_t slot = staging_slot(e, io, is_input);
    if (s->mem[slot] || io->bytes == 0)
        return CLF_OK;
    cl_int err;
    s->mem[slot] = clCreateBuffer(e->ctx->cl, is_input && !io->written ? CL_MEM_READ_ONLY : CL_MEM_READ_WRITE,
                                  (size_t)io->bytes, NULL, &err);
    if (!s->mem[slot])
        return clf__ctx_fail(e->ctx, clf__cl_status(err), "clf_run_host: clCreateBuffer for \"%s\" (%llu bytes): %s",
                             io->name, (unsigned long long)io->bytes, clf__cl_error_name(err));
    return CLF_OK;
}

CLF_API clf_status clf_run_host(clf_executable *e, size_t ninputs, const clf_host_binding *inputs,
                                size_t noutputs, const clf_host_binding *outputs)
{
    if (!e)
        return CLF_ERR_INVALID_ARGUMENT;
    clf__ctx_clear_error(e->ctx);
    if (e->dyn)
        return clf__dyn_refuse(e, "clf_run_host");
    return clf__run_host(e, ninputs, inputs, noutputs, outputs);
}

clf_status clf__run_host(clf_executable *e, size_t ninputs, const clf_host_binding *inputs, size_t noutputs,
                         const clf_host_binding *outputs)
{
    clf_context *ctx = e->ctx;
    if ((ninputs && !inputs) || (noutputs && !outputs))
        return clf__ctx_fail(ctx, CLF_ERR_INVALID_ARGUMENT, "clf_run_host: a binding array is NULL");
    clf_status st = CLF_ERR_OUT_OF_MEMORY;
    clf_buffer_binding *bi = clf__calloc(ninputs + 1, sizeof *bi), *bo = clf__calloc(noutputs + 1, sizeof *bo);
    cl_event *writes = clf__calloc(ninputs + 1, sizeof *writes), *reads = clf__calloc(noutputs + 1, sizeof *reads);
    cl_event *events = clf__calloc(e->nkernels + 1, sizeof *events);
    clf__staging *stage = staging_take(e);
    cl_event done = NULL;
    cl_uint nw = 0, nr = 0;
    if (!bi || !bo || !writes || !reads || !events || !stage) {
        clf__ctx_fail(ctx, st, "clf_run_host: out of memory");
        goto out;
    }
    /* NULL data and tensors the device cannot hold are refused before
     * anything is enqueued. */
    st = CLF_OK;
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
            if (io && ctx->desc.max_alloc_bytes && io->bytes > ctx->desc.max_alloc_bytes) {
                st = clf__ctx_fail(ctx, CLF_ERR_UNSUPPORTED,
                                   "clf_run_host: %s \"%s\" (%llu bytes) exceeds the device's "
                                   "CL_DEVICE_MAX_MEM_ALLOC_SIZE (%llu)",
                                   pass ? "output" : "input", hb[i].name, (unsigned long long)io->bytes,
                                   (unsigned long long)ctx->desc.max_alloc_bytes);
                goto out;
            }
        }
    }
    for (int pass = 0; pass < 2; pass++) {
        size_t n = pass ? noutputs : ninputs;
        const clf_host_binding *hb = pass ? outputs : inputs;
        for (size_t i = 0; i < n; i++) {
            const clf__io *io = find_io(pass ? e->outputs : e->inputs, pass ? e->noutputs : e->ninputs,
                                        hb[i].name);
            if (io && (st = staging_buffer(e, stage, io, !pass)) != CLF_OK)
                goto out;
            (pass ? bo : bi)[i] = (clf_buffer_binding){hb[i].name, io ? stage->mem[staging_slot(e, io, !pass)] : NULL};
        }
    }
    /* Counts, duplicates and unknown names are checked by clf_run before it
     * enqueues a kernel; the writes below only touch our staging buffers. */
    for (size_t i = 0; i < ninputs; i++) {
        const clf__io *io = find_io(e->inputs, e->ninputs, inputs[i].name);
        if (!io || !io->bytes)
            continue;
        cl_int err = clEnqueueWriteBuffer(ctx->queue, bi[i].buffer, CL_FALSE, 0, (size_t)io->bytes,
                                          inputs[i].data, 0, NULL, &writes[nw]);
        if (err != CL_SUCCESS) {
            st = clf__ctx_fail(ctx, clf__cl_status(err), "clf_run_host: clEnqueueWriteBuffer(\"%s\"): %s",
                               io->name, clf__cl_error_name(err));
            break;
        }
        nw++;
    }
    if (st == CLF_OK)
        st = run_bindings(e, ninputs, bi, noutputs, bo, nw, writes, &done, events);
    if (st != CLF_OK) {
        clFinish(ctx->queue); /* nothing of ours may still use the staging set */
        goto out;
    }
    /* The reads are waited for by their events, not made blocking: Mesa
     * 22.3's rusticl returned from a blocking read before the data was in
     * the host's memory, about one run in 25 with four threads sharing the
     * queue (runtime_threads/shaped_runs_from_threads: the output was all
     * there 200 ms later). Waiting on each read's event costs no driver
     * anything. */
    for (size_t i = 0; i < noutputs; i++) {
        const clf__io *io = find_io(e->outputs, e->noutputs, outputs[i].name);
        if (!io || !io->bytes)
            continue;
        cl_int err = clEnqueueReadBuffer(ctx->queue, bo[i].buffer, CL_FALSE, 0, (size_t)io->bytes,
                                         outputs[i].data, 1, &done, &reads[nr]);
        if (err != CL_SUCCESS) {
            st = clf__ctx_fail(ctx, clf__cl_status(err), "clf_run_host: clEnqueueReadBuffer(\"%s\"): %s",
                               io->name, clf__cl_error_name(err));
            clFinish(ctx->queue);
            goto out;
        }
        nr++;
    }
    /* The kernels first, so that a kernel's failure is named as one. */
    cl_int err = clWaitForEvents(1, &done);
    if (err != CL_SUCCESS) {
        st = clf__ctx_fail(ctx, CLF_ERR_OPENCL, "clf_run_host: a kernel failed (clWaitForEvents: %s)",
                           clf__cl_error_name(err));
        clFinish(ctx->queue); /* the reads behind it may not touch the caller's memory later */
        goto out;
    }
    err = nr ? clWaitForEvents(nr, reads) : CL_SUCCESS;
    if (err != CL_SUCCESS) {
        st = clf__ctx_fail(ctx, CLF_ERR_OPENCL, "clf_run_host: reading the outputs failed (clWaitForEvents: %s)",
                           clf__cl_error_name(err));
        clFinish(ctx->queue);
        goto out;
    }
    if (ctx->profiling && clf__log_enabled(CLF__LOG_PERF)) {
        for (size_t k = 0; k < e->nkernels; k++) {
            cl_ulong t0 = 0, t1 = 0;
            if (!events[k])
                continue;
            clGetEventProfilingInfo(events[k], CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
            clGetEventProfilingInfo(events[k], CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
            clf__log(CLF__LOG_PERF, "%s: %.3f ms", e->kernels[k].name, (double)(t1 - t0) * 1e-6);
        }
    }
out:
    if (stage)
        staging_give(e, stage);
    for (cl_uint i = 0; i < nw; i++)
        clReleaseEvent(writes[i]);
    for (cl_uint i = 0; i < nr; i++)
        clReleaseEvent(reads[i]);
    for (size_t k = 0; events && k < e->nkernels; k++)
        if (events[k])
            clReleaseEvent(events[k]);
    if (done)
        clReleaseEvent(done);
    clf__free(writes);
    clf__free(reads);
    clf__free(events);
    clf__free(bi);
    clf__free(bo);
    return st;
}

CLF_API clf_status clf_executable_last_profile(clf_executable *e, clf_run_profile *out, uint64_t *kernel_ns,
                                               size_t cap)
{
    if (!e || !out)
        return CLF_ERR_INVALID_ARGUMENT;
    if (e->dyn) /* the specialisation that ran last */
        e = clf__dyn_last(e);
    memset(out, 0, sizeof *out);
    if (!e->ctx->profiling)
        return clf__ctx_fail(e->ctx, CLF_ERR_UNSUPPORTED,
                             "clf_executable_last_profile: the context's queue has no profiling "
                             "(set clf_context_params.profiling)");
    if (e->ctx->profiling_fake)
        return clf__ctx_fail(e->ctx, CLF_ERR_UNSUPPORTED, "clf_executable_last_profile: %s; time runs on the host",
                             e->ctx->profiling_why);
    cl_event *evs = clf__calloc(e->nkernels + 1, sizeof *evs);
    if (!evs)
        return clf__ctx_fail(e->ctx, CLF_ERR_OUT_OF_MEMORY, "clf_executable_last_profile: out of memory");
    /* A snapshot of the last run's events, so that other threads may run
     * while this one waits. */
    pthread_mutex_lock(&e->lock);
    bool ran = e->ran;
    cl_event *starts = clf__calloc(e->nkernels + 1, sizeof *starts);
    for (size_t k = 0; k < e->nkernels; k++) {
        if ((evs[k] = e->events[k]))
            clRetainEvent(evs[k]);
        if (starts && evs[k] && (starts[k] = e->starts[k]))
            clRetainEvent(starts[k]);
    }
    pthread_mutex_unlock(&e->lock);
    clf_status st = CLF_OK;
    if (!ran) {
        st = clf__ctx_fail(e->ctx, CLF_ERR_UNSUPPORTED, "clf_executable_last_profile: no run yet");
        goto out;
    }
    cl_ulong first = 0, last = 0;
    size_t idx = 0;
    for (size_t k = 0; k < e->nkernels; k++) {
        if (!evs[k])
            continue;
        cl_ulong t0 = 0, t1 = 0;
        cl_int err = clWaitForEvents(1, &evs[k]);
        if (err == CL_SUCCESS)
            err = clGetEventProfilingInfo(starts && starts[k] ? starts[k] : evs[k], CL_PROFILING_COMMAND_START,
                                          sizeof t0, &t0, NULL);
        if (err == CL_SUCCESS)
            err = clGetEventProfilingInfo(evs[k], CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
        if (err != CL_SUCCESS) {
            st = clf__ctx_fail(e->ctx, clf__cl_status(err), "clf_executable_last_profile: %s",
                               clf__cl_error_name(err));
            memset(out, 0, sizeof *out);
            goto out;
        }
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
out:
    for (size_t k = 0; k < e->nkernels; k++) {
        if (evs[k])
            clReleaseEvent(evs[k]);
        if (starts && starts[k])
            clReleaseEvent(starts[k]);
    }
    clf__free(evs);
    clf__free(starts);
    return st;
}
