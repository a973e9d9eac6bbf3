/* clfuse bench: the graph fused against unfused on the device, median
 * device time of the kernels (OpenCL profiling), GB/s over the bytes the
 * plan moves, that as a fraction of the device's buffer-copy bandwidth, and
 * the wall-clock time of a run as a caller sees it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "host_measure.h"

#define WARMUP 3

/* The host's monotonic clock in seconds (tools/common's, in ms). */
static double now_s(void) { return hm_now_ms() * 1e-3; }

/* Progress on stderr for runs that take a while: a line at most every
 * second, rewritten in place on a terminal. */
typedef struct progress {
    double start, last;
    bool shown, tty;
} progress;

static void progress_step(progress *p, const char *what, int done, int total)
{
    double t = now_s();
    if (t - p->start < 1.0 || t - p->last < (p->tty ? 0.2 : 1.0))
        return;
    p->last = t;
    p->shown = true;
    fprintf(stderr, p->tty ? "\rclfuse: bench: %s run %d/%d " : "clfuse: bench: %s run %d/%d\n", what, done, total);
}

static void progress_end(progress *p)
{
    if (p->shown && p->tty)
        fprintf(stderr, "\r%60s\r", "");
}

/* Median device time (ms) of exe over runs. */
static int time_exe(clf_context *ctx, clf_executable *exe, cli_io *io, int runs, const char *what, progress *p,
                    double *ms)
{
    double *t = malloc((size_t)runs * sizeof *t);
    if (!t) {
        cli_error("out of memory");
        return CLI_FAIL;
    }
    /* A device whose timestamps are not real: the host's time of each run
     * (with its copies of the inputs and outputs; the header says so). */
    const bool events = clf_context_timestamps_real(ctx);
    for (int r = -WARMUP; r < runs; r++) {
        double h0 = hm_now_ms();
        clf_status st = clf_run_host(exe, io->nin, io->in, io->nout, io->out);
        double h1 = hm_now_ms();
        clf_run_profile prof = {0};
        if (st == CLF_OK && events)
            st = clf_executable_last_profile(exe, &prof, NULL, 0);
        if (st != CLF_OK) {
            cli_error("%s run failed: %s: %s", what, clf_status_name(st), clf_context_last_error(ctx));
            free(t);
            return CLI_FAIL;
        }
        if (r >= 0)
            t[r] = events ? (double)prof.span_ns * 1e-6 : h1 - h0;
        progress_step(p, what, r + WARMUP + 1, runs + WARMUP);
    }
    *ms = hm_median(t, runs);
    free(t);
    return CLI_OK;
}

/* Wall-clock time of one inference as a caller sees it: inputs already in
 * device buffers, clf_run, then waiting for its event; the median over
 * runs (ms), in *lat_ms. *thru_ms gets the time per run of runs back to
 * back with one wait at the end (what a serving loop pipelines), *host_ms
 * the host's share of that: the time until the last clf_run returned (when
 * it is close to *thru_ms, the host's enqueueing is what limits). Bytes of
 * the host copies are left out, as PyTorch's timings leave them out. */
static int wall_exe(clf_context *ctx, clf_executable *exe, const cli_io *io, int runs, double *lat_ms,
                    double *thru_ms, double *host_ms)
{
    int rc = CLI_FAIL;
    size_t n = io->nin + io->nout;
    clf_buffer_binding *b = calloc(n ? n : 1, sizeof *b);
    double *t = malloc((size_t)runs * sizeof *t);
    cl_context cl = clf_context_cl(ctx);
    cl_command_queue q = clf_context_queue(ctx);
    if (!b || !t) {
        cli_error("out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        bool in = i < io->nin;
        const clf_host_binding *h = in ? &io->in[i] : &io->out[i - io->nin];
        size_t bytes = (in ? io->in_numel[i] * clf_dtype_size(io->in_dtype[i])
                           : io->out_numel[i - io->nin] * clf_dtype_size(io->out_dtype[i - io->nin]));
        cl_int err = CL_SUCCESS;
        b[i].name = h->name;
        if (bytes == 0)
            continue;
        b[i].buffer = clCreateBuffer(cl, CL_MEM_READ_WRITE, bytes, NULL, &err);
        if (err == CL_SUCCESS && in)
            err = clEnqueueWriteBuffer(q, b[i].buffer, CL_TRUE, 0, bytes, h->data, 0, NULL, NULL);
        if (err != CL_SUCCESS) {
            cli_error("could not make a device buffer of %zu bytes (OpenCL error %d)", bytes, (int)err);
            goto done;
        }
    }
    for (int r = -WARMUP; r < runs; r++) {
        cl_event ev = NULL;
        double t0 = now_s();
        clf_status st = clf_run(exe, io->nin, b, io->nout, b + io->nin, 0, NULL, &ev);
        if (st == CLF_OK) {
            clWaitForEvents(1, &ev);
            clReleaseEvent(ev);
        }
        if (st != CLF_OK) {
            cli_error("run failed: %s: %s", clf_status_name(st), clf_context_last_error(ctx));
            goto done;
        }
        if (r >= 0)
            t[r] = (now_s() - t0) * 1e3;
    }
    *lat_ms = hm_median(t, runs);
    double t0 = now_s();
    for (int r = 0; r < runs; r++)
        if (clf_run(exe, io->nin, b, io->nout, b + io->nin, 0, NULL, NULL) != CLF_OK) {
            cli_error("run failed: %s", clf_context_last_error(ctx));
            goto done;
        }
    *host_ms = (now_s() - t0) * 1e3 / runs;
    clFinish(q);
    *thru_ms = (now_s() - t0) * 1e3 / runs;
    rc = CLI_OK;
done:
    for (size_t i = 0; b && i < n; i++)
        if (b[i].buffer)
            clReleaseMemObject(b[i].buffer);
    free(b);
    free(t);
    return rc;
}

/* Copy bandwidth of the device (GB/s, read + write) over n bytes; 0 when
 * the copy fails. */
static double copy_gbs(clf_context *ctx, size_t n, int runs)
{
    double ms = hm_copy_ms(ctx, n, WARMUP, runs);
    return ms > 0 ? 2.0 * (double)n / (ms * 1e-3) / 1e9 : 0;
}

int cmd_bench(const cli_opts *o)
{
    int runs = o->runs ? o->runs : 20;
    cli_model cm = {0};
    clf_context *ctx = NULL, *wctx = NULL;
    clf_executable *fused = NULL, *unfused = NULL, *wfused = NULL, *wunfused = NULL;
    cli_io io = {0};
    int rc;
    if ((rc = cli_load(o, NULL, 0, &cm)) != CLI_OK || (rc = cli_context(o, true, &ctx)) != CLI_OK ||
        (rc = cli_compile(ctx, cm.g, false, &fused)) != CLI_OK ||
        (!o->fused_only && (rc = cli_compile(ctx, cm.g, true, &unfused)) != CLI_OK) ||
        (rc = cli_io_random(fused, o->seed, &io)))
        goto done;
    /* Wall-clock runs on a queue without profiling, as a caller's would be
     * (profiling makes every kernel carry an event). */
    if ((rc = cli_context(o, false, &wctx)) != CLI_OK || (rc = cli_compile(wctx, cm.g, false, &wfused)) != CLI_OK ||
        (!o->fused_only && (rc = cli_compile(wctx, cm.g, true, &wunfused)) != CLI_OK))
        goto done;
    clf_executable *wexes[2] = {wunfused, wfused};
    progress p = {.start = now_s(), .tty = isatty(2)};
    const int first = o->fused_only ? 1 : 0; /* the variants timed: unfused (0), fused (1) */
    double ms[2] = {0, 0};
    clf_executable *exes[2] = {unfused, fused};
    const char *label[2] = {"unfused", "fused"};
    double lat[2] = {0, 0}, thru[2] = {0, 0}, host[2] = {0, 0};
    for (int v = first; v < 2; v++)
        if ((rc = time_exe(ctx, exes[v], &io, runs, label[v], &p, &ms[v])) != CLI_OK ||
            (rc = wall_exe(wctx, wexes[v], &io, runs, &lat[v], &thru[v], &host[v])) != CLI_OK)
            goto done;
    clf_plan_stats s;
    clf_executable_stats(fused, &s);
    uint64_t moved[2] = {s.unfused_bytes_read + s.unfused_bytes_written, s.bytes_read + s.bytes_written};
    uint64_t kernels[2] = {s.unfused_kernels, s.kernels}, launches[2] = {s.unfused_launches, s.launches};
    clf_device_desc dev;
    clf_context_device(ctx, &dev);
    size_t copy_bytes = (size_t)(moved[1] / 2);
    if (copy_bytes < ((size_t)1 << 20))
        copy_bytes = (size_t)1 << 20;
    if (dev.max_alloc_bytes && copy_bytes > dev.max_alloc_bytes)
        copy_bytes = (size_t)dev.max_alloc_bytes;
    double roof = copy_gbs(ctx, copy_bytes, runs < 10 ? runs : 10);
    progress_end(&p);

    printf("bench %s on %s: median device time of %d runs after %d warm-up, random inputs\n\n", cm.info.graph_name,
           dev.device_name, runs, WARMUP);
    printf("%-8s %8s %9s %12s %11s %9s %10s %12s %12s %12s\n", "", "kernels", "launches", "bytes moved", "time ms",
           "GB/s", "of copy", "wall ms/run", "back-to-back", "host enqueue");
    for (int v = first; v < 2; v++) {
        char b[32];
        double gbs = ms[v] > 0 ? (double)moved[v] / (ms[v] * 1e-3) / 1e9 : 0;
        printf("%-8s %8llu %9llu %12s %11.4f %9.2f", label[v], (unsigned long long)kernels[v],
               (unsigned long long)launches[v], cli_bytes_str(moved[v], b, sizeof b), ms[v], gbs);
        if (roof > 0)
            printf(" %9.0f%%", 100.0 * gbs / roof);
        else
            printf(" %10s", "n/a");
        printf(" %12.4f %12.4f %12.4f\n", lat[v], thru[v], host[v]);
    }
    char cb[32];
    if (roof > 0)
        printf("\ncopy roofline: %.2f GB/s (%s, %s, read + write)\n", roof, hm_copy_method(ctx),
               cli_bytes_str(copy_bytes, cb, sizeof cb));
    else
        printf("\ncopy roofline: could not be measured\n");
    if (!clf_context_timestamps_real(ctx))
        printf("time ms: this device's profiling timestamps are not real: host time of clf_run_host, copies included;\n");
    else
        printf("time ms: device time from the first kernel's start to the last one's end (profiling events);\n");
    printf("wall ms/run: clf_run on device buffers to its event's completion (a queue without profiling), median;\n"
           "back-to-back: %d runs"
           " enqueued then one clFinish, per run; host enqueue: of that, until the last clf_run returned\n",
           runs);
    if (ms[1] > 0 && !o->fused_only)
        printf("fusion: %.2fx %s\n", ms[0] >= ms[1] ? ms[0] / ms[1] : ms[1] / ms[0],
               ms[0] >= ms[1] ? "faster" : "slower");
    rc = CLI_OK;
done:
    cli_io_free(&io);
    clf_executable_destroy(&fused);
    clf_executable_destroy(&unfused);
    clf_executable_destroy(&wfused);
    clf_executable_destroy(&wunfused);
    clf_context_destroy(&ctx);
    clf_context_destroy(&wctx);
    cli_model_free(&cm);
    return rc;
}
