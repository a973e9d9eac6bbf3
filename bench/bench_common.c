#define _POSIX_C_SOURCE 200809L
#include "bench_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

bool bench_parse_args(int argc, char **argv, const char *prog, unsigned opts, bench_args *a)
{
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(o, "--runs") == 0 && v) {
            a->runs = atoi(v);
            i++;
        } else if (strcmp(o, "--markdown") == 0) {
            a->markdown = true;
        } else if ((opts & BENCH_OPT_ONLY) && strcmp(o, "--only") == 0 && v) {
            a->only = v;
            i++;
        } else if ((opts & BENCH_OPT_ONLY) && strcmp(o, "--style") == 0 && v &&
                   (strcmp(v, "cpu") == 0 || strcmp(v, "gpu") == 0)) {
            a->style = strcmp(v, "gpu") == 0 ? CLF_KERNEL_STYLE_GPU : CLF_KERNEL_STYLE_CPU;
            i++;
        } else if ((opts & BENCH_OPT_AUTOTUNE) && strcmp(o, "--autotune") == 0) {
            a->autotune = true;
        } else if (strcmp(o, "--dtype") == 0 && v &&
                   (strcmp(v, "f32") == 0 || strcmp(v, "f16") == 0 || strcmp(v, "bf16") == 0)) {
            a->dtype = strcmp(v, "f16") == 0 ? CLF_F16 : strcmp(v, "bf16") == 0 ? CLF_BF16 : CLF_F32;
            i++;
        } else if ((opts & BENCH_OPT_SIZE) && strcmp(o, "--size") == 0 && v) {
            long long m, n, k;
            if (sscanf(v, "%lld,%lld,%lld", &m, &n, &k) == 3 && m > 0 && n > 0 && k > 0)
                a->mnk[0] = m, a->mnk[1] = n, a->mnk[2] = k;
            else
                a->size = strtoll(v, NULL, 0);
            i++;
        } else {
            fprintf(stderr, "usage: %s [--runs R] [--markdown] [--dtype f32|f16|bf16]%s%s%s\n", prog,
                    opts & BENCH_OPT_SIZE ? " [--size N|M,N,K]" : "",
                    opts & BENCH_OPT_ONLY ? " [--only NAME] [--style cpu|gpu]" : "",
                    opts & BENCH_OPT_AUTOTUNE ? " [--autotune]" : "");
            return false;
        }
    }
    if (a->runs < 1)
        a->runs = 1;
    return true;
}

double bench_tolerance(clf_dtype dt) { return dt == CLF_F16 ? 4e-3 : dt == CLF_BF16 ? 3e-2 : 1e-4; }

/* Element i of dtype dt as a double (the bench outputs are floats). */
static double value_at(clf_dtype dt, const void *p, size_t i)
{
    double v = 0;
    hm_float_at(dt, p, i, &v);
    return v;
}

/* The profiling context's timestamps are not real (rusticl's llvmpipe):
 * bench_time's device times are the host's. */
static bool host_timed;

clf_context *bench_profiling_context(const char *prog)
{
    char why[512] = "";
    clf_context *ctx = NULL;
    if (clf_context_create(clf_context_params(.profiling = true, .message = why, .message_cap = sizeof why), &ctx) !=
        CLF_OK) {
        fprintf(stderr, "%s: no device: %s\n", prog, why);
        return NULL;
    }
    host_timed = !clf_context_timestamps_real(ctx);
    if (host_timed)
        printf("note: this device's profiling timestamps are not real: \"device\" times below are host times "
               "(enqueue to completion)\n");
    return ctx;
}

int bench_io_create(clf_context *ctx, clf_executable *exe, float lo, float hi, bench_io *io)
{
    memset(io, 0, sizeof *io);
    cl_context cl = clf_context_cl(ctx);
    cl_command_queue q = clf_context_queue(ctx);
    size_t n_in = clf_executable_input_count(exe), n_out = clf_executable_output_count(exe);
    if (n_in > 8 || n_out > 8)
        return -1;
    io->n_in = n_in;
    io->n_out = n_out;
    uint64_t seed = 0x2545F4914F6CDD1Dull;
    for (size_t i = 0; i < io->n_in + io->n_out; i++) {
        bool is_in = i < io->n_in;
        const char *name;
        clf_dtype dt;
        int rank;
        int64_t shape[CLF_MAX_RANK];
        if (is_in)
            clf_executable_input(exe, i, &name, &dt, &rank, shape);
        else
            clf_executable_output(exe, i - io->n_in, &name, &dt, &rank, shape);
        size_t numel = 1;
        for (int d = 0; d < rank; d++)
            numel *= (size_t)shape[d];
        size_t bytes = numel * clf_dtype_size(dt);
        cl_int err;
        cl_mem m = clCreateBuffer(cl, CL_MEM_READ_WRITE, bytes ? bytes : 4, NULL, &err);
        if (!m)
            return -1;
        if (is_in) {
            void *h = malloc(bytes ? bytes : 4);
            if (!h)
                return -1;
            hm_fill_random(h, dt, numel, lo, hi, &seed);
            clEnqueueWriteBuffer(q, m, CL_TRUE, 0, bytes, h, 0, NULL, NULL);
            io->in[i] = (clf_buffer_binding){name, m};
            io->host_in[i] = h;
            io->hin[i] = (clf_host_binding){name, h};
        } else {
            unsigned char poison = 0xff;
            clEnqueueFillBuffer(q, m, &poison, 1, 0, bytes, 0, NULL, NULL);
            io->out[i - io->n_in] = (clf_buffer_binding){name, m};
        }
    }
    clFinish(q);
    return 0;
}

void bench_io_destroy(bench_io *io)
{
    for (size_t i = 0; i < io->n_in; i++) {
        if (io->in[i].buffer)
            clReleaseMemObject(io->in[i].buffer);
        free(io->host_in[i]);
    }
    for (size_t i = 0; i < io->n_out; i++)
        if (io->out[i].buffer)
            clReleaseMemObject(io->out[i].buffer);
    memset(io, 0, sizeof *io);
}

int bench_variant_time(clf_context *ctx, const clf_graph *g, const clf_compile_params *p, int warmup, int runs,
                       const char *name, bench_variant *v)
{
    memset(v, 0, sizeof *v);
    double t0 = hm_now_ms();
    clf_status st = clf_compile(ctx, g, p, &v->exe);
    v->compile_ms = hm_now_ms() - t0;
    if (st != CLF_OK) {
        fprintf(stderr, "%s: compile: %s: %s\n", name, clf_status_name(st), clf_context_last_error(ctx));
        return -1;
    }
    if (bench_io_create(ctx, v->exe, -1.0f, 1.0f, &v->io) != 0) {
        fprintf(stderr, "%s: could not create buffers for the inputs and outputs\n", name);
        return -1;
    }
    if (bench_time(v->exe, &v->io, warmup, runs, &v->t) != 0) {
        fprintf(stderr, "%s: run: %s\n", name, clf_context_last_error(ctx));
        return -1;
    }
    return 0;
}

void bench_variant_release(bench_variant *v)
{
    bench_io_destroy(&v->io);
    clf_executable_destroy(&v->exe);
    memset(v, 0, sizeof *v);
}

int bench_time(clf_executable *exe, bench_io *io, int warmup, int runs, bench_timing *out)
{
    return bench_time_sets(exe, io, 1, warmup, runs, out);
}

int bench_time_sets(clf_executable *exe, bench_io *sets, int nsets, int warmup, int runs, bench_timing *out)
{
    double *dev = malloc((size_t)runs * sizeof *dev), *wall = malloc((size_t)runs * sizeof *wall);
    int rc = -1;
    if (!dev || !wall)
        goto done;
    for (int r = -warmup; r < runs; r++) {
        const bench_io *io = &sets[(r + warmup) % nsets];
        cl_event done;
        double t0 = hm_now_ms();
        if (clf_run(exe, io->n_in, io->in, io->n_out, io->out, 0, NULL, &done) != CLF_OK)
            goto done;
        clWaitForEvents(1, &done);
        double t1 = hm_now_ms();
        clReleaseEvent(done);
        /* A device whose timestamps are not real: its "device time" is the
         * host's (bench_profiling_context says so once). */
        clf_run_profile p = {0};
        if (!host_timed && clf_executable_last_profile(exe, &p, NULL, 0) != CLF_OK)
            goto done;
        if (r >= 0) {
            dev[r] = host_timed ? t1 - t0 : (double)p.span_ns * 1e-6;
            wall[r] = t1 - t0;
        }
    }
    out->min_ms = dev[0];
    for (int r = 1; r < runs; r++)
        if (dev[r] < out->min_ms)
            out->min_ms = dev[r];
    out->device_ms = hm_median(dev, runs);
    out->wall_ms = hm_median(wall, runs);
    rc = 0;
done:
    free(dev);
    free(wall);
    return rc;
}

double bench_check(clf_context *ctx, clf_executable *exe, const clf_graph *g, bench_io *io)
{
    cl_command_queue q = clf_context_queue(ctx);
    clf_host_binding got[8], want[8];
    double worst = 0;
    size_t counts[8];
    clf_dtype dts[8];
    for (size_t o = 0; o < io->n_out; o++) {
        const char *name;
        clf_dtype dt;
        int rank;
        int64_t shape[CLF_MAX_RANK];
        clf_executable_output(exe, o, &name, &dt, &rank, shape);
        size_t numel = 1;
        for (int d = 0; d < rank; d++)
            numel *= (size_t)shape[d];
        counts[o] = numel;
        dts[o] = dt;
        got[o] = (clf_host_binding){name, malloc(numel * 4 + 4)};
        want[o] = (clf_host_binding){name, malloc(numel * 4 + 4)};
        clEnqueueReadBuffer(q, io->out[o].buffer, CL_TRUE, 0, numel * clf_dtype_size(dt), got[o].data, 0, NULL,
                            NULL);
    }
    char msg[256];
    if (clf_reference_run(g, io->n_in, io->hin, io->n_out, want, msg, sizeof msg) != CLF_OK) {
        fprintf(stderr, "reference: %s\n", msg);
        worst = INFINITY;
    }
    for (size_t o = 0; o < io->n_out; o++) {
        for (size_t i = 0; i < counts[o] && isfinite(worst); i++) {
            double a = value_at(dts[o], got[o].data, i), b = value_at(dts[o], want[o].data, i);
            double e = fabs(a - b) / (1 + fabs(b));
            if (!(e <= worst))
                worst = isnan(e) ? INFINITY : e;
        }
        free(got[o].data);
        free(want[o].data);
    }
    return worst;
}
