/* Driver quirks: what a particular OpenCL implementation gets wrong, each
 * worked around in one place. A row names the platform (CL_PLATFORM_NAME,
 * exactly), the driver versions it was seen on, what the driver does, what
 * libclfuse does about it and the test case that reproduces it
 * (tests/test_quirks.c, which fails when a row no longer reproduces, so
 * the table stays true). README "Portability" lists the rows.
 *
 * Bugs that every driver may have and that cost nothing to avoid are not
 * quirks: they are avoided everywhere (convert_int_sat_rtz of NaN is not
 * trusted on any device: codegen tests isnan first). Facts that can be
 * measured are measured rather than listed (timestamps that are not real:
 * context.c's check_profiling_clock). */
#ifndef CLF_RUNTIME_DRIVER_QUIRKS_H
#define CLF_RUNTIME_DRIVER_QUIRKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum clf__quirk {
    /* clBuildProgram on a program binary the driver did not write aborts the
     * process (rusticl: a Rust panic). Workaround: a binary from the disk
     * cache goes to the driver only if it has the shape the driver writes
     * (the row's binary_is_own); anything else is discarded and the kernel
     * built from source, as for any binary the driver rejects. */
    CLF__QUIRK_ABORTS_ON_FOREIGN_BINARY = 1u << 0,
    /* Every loop of a kernel ends after 65535 iterations, silently
     * (llvmpipe: gallivm's guard against endless loops), so a long serial
     * loop computes a wrong result. Workaround: codegen's
     * target->max_loop_trips: the reduction forms split rows into chunks
     * whose loops stay within it, and refuse a kernel whose loop cannot. */
    CLF__QUIRK_LOOP_TRIPS_65535 = 1u << 1,
    /* The compiler folds 0.0f + x to x, so 0 + (-0) is -0 where IEEE 754
     * gives +0. Seen in results as a GEMM with K = 0 (an accumulator that
     * stays 0) plus a bias of -0. No workaround (the folding is the
     * compiler's); tests that check the sign of such a zero accept -0 on
     * this driver, and the README says so. */
    CLF__QUIRK_ZERO_PLUS_X_FOLDED = 1u << 2,
    /* The compiler inlines every call and its build time grows faster than
     * the code (Mesa 22.3 on llvmpipe with libclc's sin: 4 chained sin
     * written out for 8 lanes build in ~10 s, for one lane in ~1 s; 64 of
     * them in a fused chain did not finish in 14 minutes). Workaround:
     * codegen's target->small_code: pointwise kernels of one element a
     * work-item, fused chains cut at CLF__SMALL_CODE_DEPTH ops. */
    CLF__QUIRK_SLOW_INLINED_CODE = 1u << 3,
    /* Two sub-buffers of one buffer whose regions overlap with different
     * extents, each used by a kernel: releasing the one used first while
     * the other lives crashes the process in the driver (NVIDIA 580, H200;
     * the specialisations of a graph with symbolic sizes, which shared one
     * scratch through sub-buffers, crashed when destroyed). Workaround for
     * every driver: the library makes no sub-buffers of scratch memory;
     * kernels get the scratch buffer and each region's offset (codegen's
     * o_<id>, a split reduction's partial_at, the state's state_at). Only
     * a caller's bindings at offsets are sub-buffers (run.c). */
    CLF__QUIRK_OVERLAPPING_SUB_BUFFERS = 1u << 4,
} clf__quirk;

typedef struct clf__driver_quirk {
    const char *platform;        /* CL_PLATFORM_NAME */
    const char *device;          /* CL_DEVICE_NAME starts so; NULL: every device of the platform */
    const char *seen_on;         /* the driver versions it was seen on (CL_DRIVER_VERSION) */
    uint32_t quirk;              /* one clf__quirk */
    const char *what;            /* what the driver does */
    const char *workaround;      /* what libclfuse does */
    const char *reproducer;      /* the tests/test_quirks.c case */
    /* CLF__QUIRK_ABORTS_ON_FOREIGN_BINARY: whether bin has the driver's own
     * binary format. */
    bool (*binary_is_own)(const unsigned char *bin, size_t len);
} clf__driver_quirk;

extern const clf__driver_quirk clf__driver_quirk_table[];
extern const size_t clf__driver_quirk_count;

/* The quirks (clf__quirk bits) of the driver of a platform and device. */
uint32_t clf__driver_quirks(const char *platform_name, const char *device_name);

/* The row of quirk q for the platform and device, or NULL. */
const clf__driver_quirk *clf__driver_quirk_row(const char *platform_name, const char *device_name, uint32_t q);

#endif
