/* Shared pieces of the benchmark programs: device-timed medians, the copy
 * roofline, random inputs, and result lines. Every figure is a median of
 * profiled runs after warm-up, with outputs poisoned before the timed runs
 * and checked against the reference interpreter after them. */
#ifndef CLFUSE_BENCH_COMMON_H
#define CLFUSE_BENCH_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <clfuse/clfuse.h>

#include "host_measure.h"

typedef struct bench_timing {
    double device_ms; /* median span from first kernel start to last kernel end */
    double wall_ms;   /* median host time of enqueue + finish */
    double min_ms;    /* the shortest device time */
} bench_timing;

/* The options the benchmark programs share: --runs R, --markdown, and
 * where opts has them --only NAME with --style cpu|gpu (BENCH_OPT_ONLY),
 * --autotune (BENCH_OPT_AUTOTUNE), --size N or M,N,K (BENCH_OPT_SIZE); every program
 * takes --dtype f32|f16|bf16. */
enum { BENCH_OPT_ONLY = 1, BENCH_OPT_AUTOTUNE = 2, BENCH_OPT_SIZE = 4 };
typedef struct bench_args {
    int runs;              /* at least 1 */
    bool markdown, autotune;
    const char *only;      /* NULL: every case */
    clf_kernel_style style;
    int64_t size;          /* 0: the program's default */
    int64_t mnk[3];        /* --size M,N,K: a product's extents (0 where --size N or none) */
    clf_dtype dtype;       /* --dtype f32|f16|bf16 (every program): the tensors' dtype */
} bench_args;

/* Parses argv into *a, which holds the defaults; on an option it does not
 * know, prints a usage line naming prog and returns false. */
bool bench_parse_args(int argc, char **argv, const char *prog, unsigned opts, bench_args *a);

/* The largest error bench_check may report for results of dtype dt: a few
 * ulps of the type (f32 1e-4, f16 4e-3, bf16 3e-2). */
double bench_tolerance(clf_dtype dt);

/* A context on the default device with queue profiling, or NULL after
 * printing why (naming prog). */
clf_context *bench_profiling_context(const char *prog);

/* Device buffers for each input and output of exe; inputs filled with
 * uniform values in [lo, hi) (host copies kept in host_in), outputs
 * poisoned. */
typedef struct bench_io {
    size_t n_in, n_out;
    clf_buffer_binding in[8], out[8];
    void *host_in[8];
    clf_host_binding hin[8];
} bench_io;

int bench_io_create(clf_context *ctx, clf_executable *exe, float lo, float hi, bench_io *io);
void bench_io_destroy(bench_io *io);

/* Times exe over runs after warm-up runs. Returns 0 on success. */
int bench_time(clf_executable *exe, bench_io *io, int warmup, int runs, bench_timing *out);
/* The same over nsets input/output sets, set r % nsets on run r (warm-up
 * runs counted in), so that inputs larger together than the caches are
 * not all in them. */
int bench_time_sets(clf_executable *exe, bench_io *sets, int nsets, int warmup, int runs, bench_timing *out);

/* One variant of a benchmark graph (fused, unfused, autotuned...): its
 * executable, its buffers (inputs uniform in [-1, 1)) and its timing. */
typedef struct bench_variant {
    clf_executable *exe;
    bench_io io;       /* zeroed until created: releasing it is then a no-op */
    double compile_ms; /* host time of clf_compile */
    bench_timing t;
} bench_variant;

/* Compiles g with p, creates the variant's buffers and times it (warm-up,
 * runs). Returns 0 on success, else -1 after printing what failed, under
 * name, to stderr; either way bench_variant_release frees it. */
int bench_variant_time(clf_context *ctx, const clf_graph *g, const clf_compile_params *p, int warmup, int runs,
                       const char *name, bench_variant *v);
void bench_variant_release(bench_variant *v);

/* Reads the outputs back and compares them with the reference interpreter
 * on the same inputs; returns the largest abs error scaled by (1 + |ref|). */
double bench_check(clf_context *ctx, clf_executable *exe, const clf_graph *g, bench_io *io);

#endif
