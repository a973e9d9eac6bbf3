/* The schedule's choosers: for a region kind, the per-kernel choices
 * (codegen.h's clf__schedule: device form, vector width, lanes,
 * work-group, split, online softmax, how sums accumulate) made from the
 * facts its writer found in the kernel and the device's (the target), with
 * no source written and no device touched. The writer then emits what the
 * schedule says; test_codegen checks the choices without a device.
 *
 * Pointwise kernels (schedule_pointwise.c) are chosen in one step.
 * Reductions (schedule_reduction.c) are chosen in two steps, because what
 * the second needs is known only once the first's choices are written:
 *   clf__schedule_reduction_sweeps  how a row is swept (sums, online
 *                                   softmax), from the region's shape;
 *   clf__schedule_reduction_launch  the form and its geometry, from the
 *                                   functions written with those sweeps. */
#ifndef CLFUSE_CODEGEN_SCHEDULE_H
#define CLFUSE_CODEGEN_SCHEDULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codegen/codegen.h"

/* What the pointwise writer knows of a kernel (a cache write's too). */
typedef struct clf__pointwise_facts {
    uint64_t numel;
    /* Every load is at the kernel's element i or at one fixed element, and
     * every store at i: VEC consecutive elements move as vectors. */
    bool plain_loads;
    size_t widest; /* bytes of the widest element loaded or stored */
    /* CPU devices: 16 or 8, a width that divides the last axis of the
     * kernel's values (and every cache write's rows), else 0 ... */
    int axis_lanes;
    /* ... and whether every value has a form along that axis, lanes of a
     * row as one floatN (assumed until the writer tries it, as
     * clf__reduction_facts.vector_ok). */
    bool axis_ok;
} clf__pointwise_facts;

/* The pointwise form: vector width, elements a work-item (CPU devices
 * take ITEMS blocks of VEC), work-group, and whether the vector runs
 * along the last axis. */
void clf__schedule_pointwise(const clf__pointwise_facts *f, const clf__codegen_target *t, clf__schedule *s);

/* Its launch: enough work-groups of s->wg for numel elements. */
size_t clf__pointwise_global(const clf__schedule *s, uint64_t numel);

/* The reduction forms' fixed widths, which the writer emits as well: the
 * GPU form's vector unit (float4), and the CPU form's interleaved scalar
 * accumulators a row (independent chains the compiler can overlap: 16
 * measured best on PoCL, against 1, 4 and 8) and vector accumulators. */
#define CLF__GPU_VEC 4
#define CLF__CPU_ACCUMULATORS 16
#define CLF__CPU_VACCS 1

/* What the reduction writer knows of a kernel. */
typedef struct clf__reduction_facts {
    uint64_t rows, rlen;
    /* The kernel's reductions are softmax's max M and sum of exp(x - M)
     * (f32): one sweep can compute both. */
    bool online_pair;
    /* Found by writing the scalar functions with the sweeps chosen: */
    int nstages;       /* sweeps the reductions need */
    bool has_epilogue; /* values stored over the full space (one sweep more) */
    int nreductions;   /* reductions the kernel computes (a split's partial results) */
    size_t nslots;     /* values loaded an element (what a persistent row keeps) */
    bool shuffle_ok;   /* every accumulator's field has a 32-bit warp shuffle */
    /* Every value and reduction has a form at the schedule's vector width:
     * assumed until the writer tries it; where it fails the writer chooses
     * again with false. */
    bool vector_ok;
} clf__reduction_facts;

void clf__schedule_reduction_sweeps(const clf__reduction_facts *f, const clf__codegen_target *t, clf__schedule *s);

/* Fills the rest of s (its sweeps chosen by the call above). Fails with
 * CLF_ERR_UNSUPPORTED, naming kernel k, where the driver ends loops sooner
 * than every form's longest loop (target->max_loop_trips). */
clf_status clf__schedule_reduction_launch(const clf__reduction_facts *f, const clf__codegen_target *t, uint32_t k,
                                          clf__schedule *s, char *err, size_t errlen);

/* The launch geometry a reduction's schedule gives: the kernel's global and
 * local sizes, and the split form's final kernel's (0 otherwise). */
void clf__reduction_geometry(const clf__schedule *s, uint64_t rows, bool cpu, size_t *global, size_t *local,
                             size_t *final_global, size_t *final_local);

#endif
