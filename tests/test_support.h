/* Shared test helpers: isolated cache directories, random data, float
 * comparison against the reference, and a per-test OpenCL context. */
#ifndef CLFUSE_TEST_SUPPORT_H
#define CLFUSE_TEST_SUPPORT_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "clfuse/clfuse.h"

/* Points POCL_CACHE_DIR and CLFUSE_CACHE_DIR at a fresh temporary folder
 * (once per process) and seeds the random generator. Call from main(). */
void clf_test_setup_env(void);

/* Runs a suite with Check's default fork mode and returns the number of
 * failures (use as main's exit status). */
int clf_test_run_suite(Suite *s);

/* Adds test t to s as a test case of its own, named name, so that
 * CK_RUN_CASE=name runs it alone; 600 s timeout (a cold PoCL build of the
 * emulated tensor-core tilings took over 300 s on a loaded 2-core machine). */
void clf_test_add_case(Suite *s, const char *name, const TTest *t);
/* A case that runs a kernel family another case of the suite runs already,
 * on more shapes, dtypes or tilings: tagged "variant", which the sanitizer
 * run of .ci/run leaves out (CK_EXCLUDE_TAGS=variant) since the library
 * code it reaches is the other case's; every other run runs it. */
void clf_test_add_variant_case(Suite *s, const char *name, const TTest *t);

/* Deterministic xorshift random numbers. */
uint64_t clf_test_rand(void);
float clf_test_uniform(float lo, float hi);
/* Fills n f32 values uniformly in [lo, hi). */
void clf_test_fill_f32(float *p, size_t n, float lo, float hi);
void clf_test_fill_i32(int32_t *p, size_t n, int32_t lo, int32_t hi);
void clf_test_fill_i64(int64_t *p, size_t n, int64_t lo, int64_t hi);
void clf_test_fill_bool(uint8_t *p, size_t n);
/* Fills n f16 (IEEE binary16) or bf16 (bfloat16) bit patterns with values
 * drawn uniformly from [lo, hi) in f32 and rounded to nearest even (so hi
 * itself may appear). */
void clf_test_fill_f16(uint16_t *p, size_t n, float lo, float hi);
void clf_test_fill_bf16(uint16_t *p, size_t n, float lo, float hi);

/* The tests' own conversions, written apart from the library's so that
 * each checks the other: f32 to f16 and to bf16 round to nearest even
 * (f16: |x| >= 65520 gives +-inf, subnormals kept; NaN gives a quiet NaN
 * of the same sign); f16 and bf16 to f32 are exact. */
uint16_t clf_test_to_f16(float x);
uint16_t clf_test_to_bf16(float x);
float clf_test_from_f16(uint16_t h);
float clf_test_from_bf16(uint16_t h);

/* Compares n elements of dtype: floats within atol + rtol*|want| (NaN must
 * match NaN, infinities must match exactly), others exactly. f16 and bf16
 * (uint16_t bit patterns) are compared by value the same way, except that
 * with rtol and atol both 0 they must match bit for bit (so -0 is not +0;
 * any NaN still matches any NaN). On mismatch writes the first bad index
 * and both values into msg and returns 0. */
int clf_test_close(clf_dtype dt, const void *got, const void *want, size_t n, double rtol,
                   double atol, char *msg, size_t cap);

/* A context on the default device, created inside the (forked) test. Fails
 * the test with the reason when none can be made. */
clf_context *clf_test_context(void);

/* Whether ctx's device is on NVIDIA's platform (whose driver takes the
 * inline PTX of the tensor-core and shuffle forms). */
bool clf_test_on_nvidia(clf_context *ctx);

/* The work-items a work-group of a kernel on ctx's device may take: the
 * device's limit, or a kernel's own where that is lower (rusticl's
 * llvmpipe allows 32 a kernel however large the device limit reads). */
size_t clf_test_kernel_group_limit(clf_context *ctx);

/* A new in-order queue on ctx's device, for runs the caller enqueues on a
 * queue of its own (release it with clReleaseCommandQueue); NULL with *err
 * set when none can be made. Safe to call from any thread. */
cl_command_queue clf_test_queue(clf_context *ctx, cl_int *err);

/* stderr sent to a temporary file with CLFUSE_LOGS=topics, until
 * clf_test_log_end puts it back and gives what was written (cap bytes at
 * most, NUL-terminated). */
typedef struct clf_test_log {
    char path[32];
    int fd, saved;
} clf_test_log;
clf_test_log clf_test_log_begin(const char *topics);
void clf_test_log_end(clf_test_log *lc, char *log, size_t cap);

#endif
