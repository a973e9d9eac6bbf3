/* What the clfuse tool and the benchmark programs both need around a
 * compiled graph, on the host: random inputs, medians, and the device's
 * copy rate (the memory roofline of shared BENCH.md: clEnqueueCopyBuffer on
 * GPUs, a copy kernel over every core on CPUs).
 * Not part of the library: a static library of tools/common. */
#ifndef CLFUSE_TOOLS_HOST_MEASURE_H
#define CLFUSE_TOOLS_HOST_MEASURE_H

#include <clfuse/clfuse.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

/* The next value of a xorshift64 generator (state never 0). */
uint64_t hm_xorshift(uint64_t *state);

/* Fills n values of dtype dt at p from the generator: f32 uniform in
 * [lo, hi), i32 in [-10, 10], bool 0 or 1. */
void hm_fill_random(void *p, clf_dtype dt, size_t n, double lo, double hi, uint64_t *state);
/* Element i of host data of a float dtype (f32, f16, bf16) as a double in
 * *v; false for the other dtypes. */
bool hm_float_at(clf_dtype dt, const void *p, size_t i, double *v);

/* The host's monotonic clock in ms. */
double hm_now_ms(void);

/* The median of v[0..n) (sorts v); n > 0. */
double hm_median(double *v, int n);

/* The median device time in ms of a copy of bytes bytes on the context's
 * queue (which must have profiling) over runs timed copies after warmup
 * untimed ones (host time where the device's timestamps are not real:
 * clf_context_timestamps_real); -1 when a buffer or copy fails. On a GPU
 * the copy is clEnqueueCopyBuffer; on a CPU, where drivers copy on one
 * thread (PoCL: 13 GB/s), a kernel copying from every compute unit, so
 * that the roofline is the memory's rate and not one core's. */
double hm_copy_ms(clf_context *ctx, size_t bytes, int warmup, int runs);
/* How hm_copy_ms copies on ctx's device, for the benchmarks' legends. */
const char *hm_copy_method(clf_context *ctx);

#endif
