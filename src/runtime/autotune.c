/* GEMM autotuning (clf_compile_params.autotune, CLFUSE_AUTOTUNE=1): times
 * candidate tile configurations of one GEMM kernel on the device and keeps
 * the fastest on disk, so that later compiles of the same problem class on
 * the same device read it instead of timing again.
 *
 * Key: the program cache's device fields (platform, device, driver, codegen
 * version, templates' hash) and the problem class (codegen's
 * clf__gemm_problem_class: CPU or GPU form, extents rounded up to powers of
 * two, batch, operand layouts). Entry: a cache_file.h file, magic
 * "CLFUSEAT", extension ".cltune", payload "tm,tn,tk,wm,wn" as text, with
 * ",mma" after a tensor-core tiling. A
 * payload that does not parse or names a tiling the device cannot run is
 * discarded like a corrupt file.
 *
 * Timing: every candidate is generated, built (through the program caches)
 * and run on buffers of the kernel's real sizes filled with a non-zero
 * pattern, once to warm up and then TIMED_RUNS times on a profiling queue of
 * its own; the median wins. A candidate that fails to build or run is
 * skipped (logged); when none runs, the default tiling stays. Everything is
 * logged under CLFUSE_LOGS=perf. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "runtime/cache_file.h"
#include "runtime/runtime_internal.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/strbuf.h"

#define MAGIC "CLFUSEAT"
#define FORMAT_VERSION 2u
#define TIMED_RUNS 5

/* Tilings worth trying, by device type and form; invalid ones for the
 * device are skipped. */
static const clf__gemm_config gpu_candidates[] = {
    {128, 128, 8, 16, 8, false}, {128, 128, 16, 8, 8, false}, {128, 128, 8, 8, 8, false},
    {128, 64, 16, 8, 8, false},  {64, 128, 16, 8, 8, false},  {64, 64, 16, 4, 4, false},
    {64, 64, 16, 8, 8, false},   {128, 64, 16, 8, 4, false},  {64, 64, 32, 4, 4, false},
    {32, 32, 16, 4, 4, false},   {128, 128, 32, 8, 8, false},
    /* Small products (tiny models, per-head attention blocks). */
    {32, 16, 16, 4, 4, false},   {16, 32, 16, 4, 4, false},   {16, 16, 16, 4, 4, false},
    {16, 64, 16, 4, 4, false},
};
/* The tensor-core form (gemm_mma.cl): blocks tm x tn, warps of wm x wn. */
static const clf__gemm_config mma_candidates[] = {
    {128, 128, 32, 64, 64, true}, {128, 128, 32, 64, 32, true}, {128, 128, 32, 32, 64, true},
    {128, 64, 32, 64, 32, true},  {64, 128, 32, 32, 64, true},  {128, 64, 32, 32, 32, true},
    {64, 64, 32, 32, 32, true},   {64, 64, 32, 32, 16, true},   {32, 64, 32, 16, 32, true},
    {32, 32, 32, 16, 16, true},
};
/* CPU blocks (tm x tn, k-blocks of tk) of micro-tiles (wm x wn): two
 * 16-float vectors by 8 or 12 rows for AVX-512, one by 6 or 8 for AVX2;
 * the last two fit 32 KiB of local memory (Mesa's llvmpipe). */
static const clf__gemm_config cpu_candidates[] = {
    {128, 128, 256, 8, 32, false}, {64, 128, 256, 8, 32, false},  {128, 64, 256, 8, 32, false},
    {64, 64, 256, 8, 32, false},   {128, 128, 128, 8, 32, false}, {128, 128, 512, 8, 32, false},
    {96, 128, 256, 12, 32, false}, {120, 128, 256, 6, 16, false}, {64, 64, 256, 8, 16, false},
    {32, 32, 128, 8, 16, false},   {32, 32, 64, 8, 16, false},   {24, 32, 64, 6, 16, false},
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median device time of cand in ms, or a negative value when it does not
 * build or run. */
static double time_candidate(clf_context *ctx, cl_command_queue q, const clf_graph *g, const clf__plan *plan,
                             uint32_t k, const clf__codegen_target *target, const clf__gemm_config *cand)
{
    clf__codegen_target t = *target;
    t.gemm = cand;
    clf__kernel_code code;
    char err[256] = "";
    double result = -1.0;
    cl_program prog = NULL;
    cl_kernel kern = NULL;
    cl_mem *mem = NULL;
    if (clf__codegen_kernel(g, plan, k, &t, &code, err, sizeof err) != CLF_OK) {
        clf__log(CLF__LOG_PERF, "autotune: %dx%dx%d/%dx%d: %s", cand->tm, cand->tn, cand->tk, cand->wm, cand->wn, err);
        return -1.0;
    }
    if (code.global == 0 || clf__program_get(ctx, code.source, "", &prog, NULL) != CLF_OK)
        goto out;
    cl_int cerr;
    kern = clCreateKernel(prog, code.entry, &cerr);
    mem = clf__calloc(code.nparams ? code.nparams : 1, sizeof *mem);
    if (!kern || !mem)
        goto out;
    const float pattern = 0.5f;
    cl_uint a = 0;
    for (uint32_t p = 0; p < code.nparams; p++) {
        const clf__plan_buffer *B = &plan->buffers[code.params[p]];
        size_t n = B->bytes < 4 ? 4 : (size_t)(B->bytes + 3) / 4 * 4;
        mem[p] = clCreateBuffer(ctx->cl, CL_MEM_READ_WRITE, n, NULL, &cerr);
        if (!mem[p] || clEnqueueFillBuffer(q, mem[p], &pattern, sizeof pattern, 0, n, 0, NULL, NULL) != CL_SUCCESS ||
            clf__set_buffer_arg(kern, &a, B, mem[p], 0) != CL_SUCCESS)
            goto out;
    }
    uint64_t numel = (uint64_t)plan->kernels[k].numel;
    cl_uint n32 = (cl_uint)numel;
    cl_ulong n64 = numel;
    cerr = code.wide_index ? clSetKernelArg(kern, a, sizeof n64, &n64) : clSetKernelArg(kern, a, sizeof n32, &n32);
    if (cerr != CL_SUCCESS)
        goto out;
    double ms[TIMED_RUNS];
    for (int r = -1; r < TIMED_RUNS; r++) {
        cl_event ev = NULL;
        cerr = clEnqueueNDRangeKernel(q, kern, 1, NULL, &code.global, &code.local, 0, NULL, &ev);
        if (cerr == CL_SUCCESS)
            cerr = clWaitForEvents(1, &ev);
        cl_ulong s = 0, e = 0;
        if (cerr == CL_SUCCESS)
            cerr = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof s, &s, NULL);
        if (cerr == CL_SUCCESS)
            cerr = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof e, &e, NULL);
        if (ev)
            clReleaseEvent(ev);
        if (cerr != CL_SUCCESS) {
            clf__log(CLF__LOG_PERF, "autotune: %s: %s", code.name, clf__cl_error_name(cerr));
            goto out;
        }
        if (r >= 0)
            ms[r] = (double)(e - s) * 1e-6;
    }
    qsort(ms, TIMED_RUNS, sizeof ms[0], cmp_double);
    result = ms[TIMED_RUNS / 2];
out:
    if (result < 0)
        clf__ctx_clear_error(ctx);
    for (uint32_t p = 0; mem && p < code.nparams; p++)
        if (mem[p])
            clReleaseMemObject(mem[p]);
    clf__free(mem);
    if (kern)
        clReleaseKernel(kern);
    if (prog)
        clReleaseProgram(prog);
    clf__kernel_code_free(&code);
    return result;
}

bool clf__gemm_config_parse(const char *text, size_t len, clf__gemm_config *out)
{
    char buf[96];
    if (len == 0 || len >= sizeof buf)
        return false;
    memcpy(buf, text, len);
    buf[len] = '\0';
    int used = 0;
    if (sscanf(buf, "%d,%d,%d,%d,%d%n", &out->tm, &out->tn, &out->tk, &out->wm, &out->wn, &used) != 5)
        return false;
    out->mma = strcmp(buf + used, ",mma") == 0;
    return out->mma || buf[used] == '\0';
}

/* c as clf__gemm_config_parse reads it: "tm,tn,tk,wm,wn", ",mma" after a
 * tensor-core tiling. Returns the text's length. */
static int config_text(const clf__gemm_config *c, char *buf, size_t cap)
{
    return snprintf(buf, cap, "%d,%d,%d,%d,%d%s", c->tm, c->tn, c->tk, c->wm, c->wn, c->mma ? ",mma" : "");
}

/* Whether the device runs c in its form. */
static bool config_valid(const clf__gemm_config *c, const clf__codegen_target *target, char *why, size_t cap)
{
    size_t max_local = target->max_local ? target->max_local : 256;
    return c->mma ? clf__gemm_mma_config_valid(c, max_local, target->local_mem, why, cap)
                  : clf__gemm_config_valid(c, target->cpu, max_local, target->local_mem, why, cap);
}

bool clf__gemm_autotune(clf_context *ctx, const clf_graph *g, const clf__plan *plan, uint32_t k,
                        const clf__codegen_target *target, clf__gemm_config *out)
{
    clf__strbuf key = {0}, cls = {0};
    char *path = NULL;
    bool found = false;
    char why[160];
    /* A kernel the tensor-core form takes tries its tilings alone. */
    const bool tc = clf__gemm_tensor_cores(g, plan, k, target);

    clf__gemm_problem_class(g, plan, k, target, &cls);
    if (ctx->cache_device_key)
        clf__cache_key_field(&key, "device", ctx->cache_device_key);
    clf__cache_key_field(&key, "problem", clf__sb_ok(&cls) ? clf__sb_str(&cls) : "");
    if (!clf__sb_ok(&key) || !clf__sb_ok(&cls))
        goto done;
    if (ctx->cache_dir)
        path = clf__cache_entry_path(ctx->cache_dir, clf__sb_str(&key), ".cltune");
    if (path) {
        clf__cache_entry e;
        if (clf__cache_file_read(ctx, "autotune", path, MAGIC, FORMAT_VERSION, clf__sb_str(&key),
                                 &ctx->counts.disk_discards, &e)) {
            if (clf__gemm_config_parse((const char *)e.payload, e.payload_len, out) && out->mma == tc &&
                config_valid(out, target, why, sizeof why)) {
                found = true;
                char text[96];
                config_text(out, text, sizeof text);
                clf__log(CLF__LOG_PERF, "autotune: %s: %s from the cache", clf__sb_str(&cls), text);
            } else {
                clf__cache_file_discard(ctx, "autotune", path, &e.st, &ctx->counts.disk_discards,
                                        "the tiling does not parse or does not fit the device");
            }
            clf__cache_entry_free(&e);
            if (found)
                goto done;
        }
    }

    cl_int cerr;
#if defined(CL_VERSION_2_0)
    cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx->cl, ctx->device, props, &cerr);
#else
    cl_command_queue q = clCreateCommandQueue(ctx->cl, ctx->device, CL_QUEUE_PROFILING_ENABLE, &cerr);
#endif
    if (!q) {
        clf__log(CLF__LOG_PERF, "autotune: no profiling queue: %s", clf__cl_error_name(cerr));
        goto done;
    }
    const clf__gemm_config *cands = target->cpu ? cpu_candidates : tc ? mma_candidates : gpu_candidates;
    size_t ncands = target->cpu ? sizeof cpu_candidates / sizeof *cpu_candidates
                    : tc        ? sizeof mma_candidates / sizeof *mma_candidates
                                : sizeof gpu_candidates / sizeof *gpu_candidates;
    double best = -1.0;
    for (size_t i = 0; i < ncands; i++) {
        if (!config_valid(&cands[i], target, why, sizeof why))
            continue;
        double ms = time_candidate(ctx, q, g, plan, k, target, &cands[i]);
        char text[96];
        config_text(&cands[i], text, sizeof text);
        clf__log(CLF__LOG_PERF, "autotune: %s: %s: %.4f ms", clf__sb_str(&cls), text, ms);
        if (ms >= 0 && (best < 0 || ms < best)) {
            best = ms;
            *out = cands[i];
        }
    }
    clReleaseCommandQueue(q);
    if (best < 0)
        goto done;
    found = true;
    char text[96];
    int n = config_text(out, text, sizeof text);
    clf__log(CLF__LOG_PERF, "autotune: %s: kept %s (%.4f ms)", clf__sb_str(&cls), text, best);
    if (path) {
        clf__cache_file_write(ctx, "autotune", ctx->cache_dir, path, MAGIC, FORMAT_VERSION, clf__sb_str(&key), text,
                              (size_t)n);
    }
done:
    clf__free(path);
    clf__sb_free(&key);
    clf__sb_free(&cls);
    return found;
}
