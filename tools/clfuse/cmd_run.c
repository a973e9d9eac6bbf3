/* clfuse run (a graph on .npy inputs) and clfuse check (the device against
 * the reference interpreter on random inputs). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "host_measure.h"
#include "npy.h"

static const char *npy_dtype_name(clf_dtype dt)
{
    switch (dt) {
    case CLF_F32: return "float32";
    case CLF_F16: return "float16";
    case CLF_BF16: return "bfloat16";
    case CLF_I32: return "int32";
    case CLF_I64: return "int64";
    default: return "bool";
    }
}

static void print_value(FILE *f, clf_dtype dt, const void *data, size_t k)
{
    double v;
    if (hm_float_at(dt, data, k, &v))
        fprintf(f, "%.7g", v);
    else if (dt == CLF_I32)
        fprintf(f, "%d", ((const int32_t *)data)[k]);
    else if (dt == CLF_I64)
        fprintf(f, "%lld", (long long)((const int64_t *)data)[k]);
    else
        fprintf(f, "%s", ((const unsigned char *)data)[k] ? "True" : "False");
}

/* name: dtype shape = [v0, v1, ... vN] with at most 8 values at each end. */
static void print_output(const char *name, clf_dtype dt, int rank, const int64_t *shape, const void *data)
{
    char shp[256];
    size_t n = cli_numel(rank, shape);
    printf("%s: %s %s = [", name, npy_dtype_name(dt), npy_shape_str(rank, shape, shp, sizeof shp));
    for (size_t k = 0; k < n; k++) {
        if (n > 16 && k == 8) {
            printf(", ...");
            k = n - 8;
        }
        if (k)
            printf(", ");
        print_value(stdout, dt, data, k);
    }
    printf("]\n");
}

static const cli_named_file *find_named(const cli_named_file *v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i].name, name))
            return &v[i];
    return NULL;
}

int cmd_run(const cli_opts *o)
{
    int rc = CLI_FAIL;
    npy_array arrays[CLI_MAX_BINDINGS] = {{0}};
    clf_onnx_input_shape given[CLI_MAX_BINDINGS];
    clf_host_binding in[CLI_MAX_BINDINGS], *out = NULL;
    cli_model cm = {0};
    clf_context *ctx = NULL;
    clf_executable *exe = NULL;
    char err[512];

    for (size_t i = 0; i < o->ninputs; i++) {
        if (npy_read(o->inputs[i].path, &arrays[i], err, sizeof err)) {
            cli_error("%s: %s", o->inputs[i].path, err);
            rc = CLI_USAGE;
            goto done;
        }
        given[i] = (clf_onnx_input_shape){.name = o->inputs[i].name, .origin = o->inputs[i].path,
                                          .dtype = arrays[i].dtype, .rank = arrays[i].rank};
        memcpy(given[i].shape, arrays[i].shape, sizeof given[i].shape);
        in[i] = (clf_host_binding){o->inputs[i].name, arrays[i].data};
    }
    if ((rc = cli_load(o, given, o->ninputs, &cm)) != CLI_OK)
        goto done;
    rc = CLI_USAGE;
    for (size_t i = 0; i < clf_onnx_model_input_count(cm.m); i++) {
        clf_onnx_io v;
        clf_onnx_model_input(cm.m, i, &v);
        if (!find_named(o->inputs, o->ninputs, v.name)) {
            cli_error("input '%s' is not given: add --input %s=FILE.npy", v.name, v.name);
            goto done;
        }
    }
    size_t nmodel_out = clf_onnx_model_output_count(cm.m);
    for (size_t i = 0; i < o->noutputs; i++) {
        bool found = false;
        clf_onnx_io v;
        for (size_t k = 0; k < nmodel_out; k++)
            found |= clf_onnx_model_output(cm.m, k, &v) == CLF_OK && !strcmp(v.name, o->outputs[i].name);
        if (!found) {
            char names[256] = "";
            size_t len = 0;
            for (size_t k = 0; k < nmodel_out && len < sizeof names; k++) {
                clf_onnx_model_output(cm.m, k, &v);
                len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", k ? ", " : "", v.name);
            }
            cli_error("the graph has no output named '%s' (its outputs: %s)", o->outputs[i].name, names);
            goto done;
        }
    }
    if ((rc = cli_context(o, false, &ctx)) != CLI_OK || (rc = cli_compile(ctx, cm.g, o->no_fusion, &exe)))
        goto done;
    rc = CLI_FAIL;
    size_t nout = clf_executable_output_count(exe);
    out = calloc(nout + 1, sizeof *out);
    if (!out) {
        cli_error("out of memory");
        goto done;
    }
    for (size_t k = 0; k < nout; k++) {
        const char *name;
        clf_dtype dt;
        int rank;
        int64_t shape[CLF_MAX_RANK];
        clf_executable_output(exe, k, &name, &dt, &rank, shape);
        size_t bytes = cli_numel(rank, shape) * clf_dtype_size(dt);
        out[k] = (clf_host_binding){name, malloc(bytes ? bytes : 1)};
        if (!out[k].data) {
            cli_error("out of memory for output '%s' (%zu bytes)", name, bytes);
            goto done;
        }
    }
    clf_status st = clf_run_host(exe, o->ninputs, in, nout, out);
    if (st != CLF_OK) {
        cli_error("run failed: %s: %s", clf_status_name(st), clf_context_last_error(ctx));
        goto done;
    }
    for (size_t k = 0; k < nout; k++) {
        const char *name;
        clf_dtype dt;
        int rank;
        int64_t shape[CLF_MAX_RANK];
        clf_executable_output(exe, k, &name, &dt, &rank, shape);
        const cli_named_file *f = find_named(o->outputs, o->noutputs, name);
        if (!f) {
            print_output(name, dt, rank, shape, out[k].data);
        } else if (npy_write(f->path, dt, rank, shape, out[k].data, err, sizeof err)) {
            cli_error("%s: %s", f->path, err);
            goto done;
        }
    }
    rc = CLI_OK;
done:
    for (size_t k = 0; out && k < clf_executable_output_count(exe); k++)
        free(out[k].data);
    free(out);
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
    cli_model_free(&cm);
    for (size_t i = 0; i < o->ninputs; i++)
        npy_free(&arrays[i]);
    return rc;
}

int cmd_check(const cli_opts *o)
{
    int rc;
    cli_model cm = {0};
    clf_context *ctx = NULL;
    clf_executable *exe = NULL;
    cli_io io = {0};
    clf_host_binding *want = NULL;
    /* Default tolerance by output dtype: a few ulps of it (f16's ulp at 1
     * is 2^-10, bf16's 2^-7). */
    double tol = o->tol >= 0 ? o->tol : 1e-4;

    if ((rc = cli_load(o, NULL, 0, &cm)) != CLI_OK || (rc = cli_context(o, false, &ctx)) != CLI_OK ||
        (rc = cli_compile(ctx, cm.g, o->no_fusion, &exe)) != CLI_OK || (rc = cli_io_random(exe, o->seed, &io)))
        goto done;
    rc = CLI_FAIL;
    want = calloc(io.nout + 1, sizeof *want);
    if (!want)
        goto oom;
    for (size_t k = 0; k < io.nout; k++) {
        size_t bytes = io.out_numel[k] * clf_dtype_size(io.out_dtype[k]);
        want[k] = (clf_host_binding){io.out[k].name, malloc(bytes ? bytes : 1)};
        if (!want[k].data)
            goto oom;
    }
    clf_status st = clf_run_host(exe, io.nin, io.in, io.nout, io.out);
    if (st != CLF_OK) {
        cli_error("run failed: %s: %s", clf_status_name(st), clf_context_last_error(ctx));
        goto done;
    }
    char msg[512];
    st = clf_reference_run(cm.g, io.nin, io.in, io.nout, want, msg, sizeof msg);
    if (st != CLF_OK) {
        cli_error("reference interpreter failed: %s: %s", clf_status_name(st), msg);
        goto done;
    }
    clf_device_desc dev;
    clf_context_device(ctx, &dev);
    printf("%s on %s against the reference interpreter, random inputs (seed %llu):\n",
           o->no_fusion ? "unfused" : "fused", dev.device_name, (unsigned long long)o->seed);
    double largest = 0;
    size_t bad_total = 0;
    for (size_t k = 0; k < io.nout; k++) {
        clf_dtype dt = io.out_dtype[k];
        size_t n = io.out_numel[k], at = 0, bad = 0;
        double worst = 0;
        for (size_t i = 0; i < n; i++) {
            double g, w;
            if (hm_float_at(dt, io.out[k].data, i, &g) && hm_float_at(dt, want[k].data, i, &w)) {
                double e = isnan(g) && isnan(w) ? 0 : g == w ? 0 : fabs(g - w) / (1 + fabs(w));
                if (isnan(e))
                    e = INFINITY;
                if (e > worst) {
                    worst = e;
                    at = i;
                }
            } else {
                size_t es = clf_dtype_size(dt);
                if (memcmp((char *)io.out[k].data + i * es, (char *)want[k].data + i * es, es)) {
                    if (!bad++)
                        at = i;
                }
            }
        }
        if (dt == CLF_F32 || dt == CLF_F16 || dt == CLF_BF16) {
            double t = o->tol >= 0 ? o->tol : dt == CLF_F16 ? 2e-3 : dt == CLF_BF16 ? 1.6e-2 : 1e-4;
            printf("  %-12s %-7s %9zu elements  largest error %.3g", io.out[k].name, npy_dtype_name(dt), n, worst);
            if (worst > 0) {
                printf(" (element %zu: got ", at);
                print_value(stdout, dt, io.out[k].data, at);
                printf(", want ");
                print_value(stdout, dt, want[k].data, at);
                printf(")");
            }
            if (t != tol)
                printf("  (tolerance %g for %s)", t, npy_dtype_name(dt));
            printf("\n");
            if (worst > largest)
                largest = worst;
            if (worst > t)
                bad_total++;
        } else {
            printf("  %-12s %-7s %9zu elements  %zu mismatches", io.out[k].name, npy_dtype_name(dt), n, bad);
            if (bad) {
                printf(" (first at element %zu: got ", at);
                print_value(stdout, dt, io.out[k].data, at);
                printf(", want ");
                print_value(stdout, dt, want[k].data, at);
                printf(")");
                bad_total++;
                largest = INFINITY;
            }
            printf("\n");
        }
    }
    if (o->tol >= 0)
        printf("largest error: %.3g (tolerance %g)\n", largest, tol);
    else
        printf("largest error: %.3g (tolerance %g, or as shown for float16 and bfloat16)\n", largest, tol);
    if (bad_total) {
        cli_error("check failed: %zu output%s differ from the reference beyond the tolerance", bad_total,
                  bad_total == 1 ? "" : "s");
        goto done;
    }
    rc = CLI_OK;
    goto done;
oom:
    cli_error("out of memory");
done:
    for (size_t k = 0; want && k < io.nout; k++)
        free(want[k].data);
    free(want);
    cli_io_free(&io);
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
    cli_model_free(&cm);
    return rc;
}
