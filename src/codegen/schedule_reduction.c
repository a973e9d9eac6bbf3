/* The reduction kind's schedule (schedule.h): how a row is swept and the
 * form that sweeps it, from the kernel's facts and the device's. The
 * measurements behind each constant are cited beside it. */
#include "codegen/schedule.h"
#include "util/pow2.h"

#include <stdio.h>

/* Row elements a GPU lane keeps in registers in a persistent kernel. */
#define CACHE_PER_LANE 16
/* A lane of the scalar GPU form caches at most this many values. */
#define MAX_CACHED_VALUES 64
/* A lane's register budget for a persistent row in the float4 form, in
 * floats (measured on an H200, bench/probes: 32 a lane on 512 lanes keeps a
 * 16384-float softmax at 98% of copy). */
#define GPU_VEC_CACHE 32
/* Lanes a persistent row gets at least: short rows (softmax over 256)
 * spread thinner ran slower on an H200 (32 lanes of 2 float4s: 0.0412 ms,
 * 16 lanes of 4: 0.0383 ms; bench/probes/cases_gpu.sh). */
#define GPU_MIN_LANES 16
/* GPU rows up to this long sum f32 without compensation: each lane adds
 * at most a few hundred elements and the lanes combine in a tree (Kahan's
 * compensation cost a cached softmax 12% of its time on an H200,
 * bench/probes/cases_gpu.sh). */
#define GPU_PLAIN_SUM_RLEN 32768u
/* CPU rows up to this long sum f32 in plain float lanes (each lane adds at
 * most CPU_PLAIN_SUM_RLEN / CPU_VEC elements, then the lanes combine):
 * double lanes cost that softmax 0.45 ms of 3.4 there; longer rows sum in
 * double where the device has it (as accurate as Kahan's compensation and
 * cheaper there), else compensated. */
#define CPU_PLAIN_SUM_RLEN 1024u
/* Rows at least this long, and too few to fill the device, are split. */
#define SPLIT_MIN_RLEN 65536u
/* The CPU form's vector loop: CPU_VEC consecutive elements of a row as one
 * floatN value, so that PoCL's vector math (exp above all) does the work,
 * CPU_VEC_WIDE on devices whose native float vector is that wide (AVX-512:
 * a softmax over 16384 x 256 in 3.9 ms against 4.8 with float8, one PoCL
 * thread, bench/probes/cl_kernel_info). Rows shorter than CPU_VEC_MIN_RLEN
 * stay scalar. */
#define CPU_VEC 8
#define CPU_VEC_WIDE 16
#define CPU_VEC_MIN_RLEN 16
/* Rows a CPU work-item sweeps one after another: short rows in runs of up
 * to CPU_ROWS_PER_ITEM_MAX, a run at most CPU_ITEM_ELEMENTS elements,
 * while every compute unit keeps CPU_ITEMS_PER_UNIT work-items. softmax
 * over 16384 x 256 on 16 PoCL cores, the kernel alone (four rounds,
 * bench/results/2026-12-07-s40.md): one row a work-item 0.347-0.460 ms,
 * 8 rows 0.320-0.357, 16 rows 0.318-0.346. Graphs with symbolic sizes keep
 * one (their specialisations share programs, and rows vary). */
#define CPU_ROWS_PER_ITEM_MAX 16
#define CPU_ITEM_ELEMENTS 4096
#define CPU_ITEMS_PER_UNIT 64

static uint64_t lanes_max_of(const clf__codegen_target *t)
{
    size_t max_local = t->max_local ? t->max_local : 256;
    return clf__pow2_at_most(max_local < 1024 ? max_local : 1024);
}

void clf__schedule_reduction_sweeps(const clf__reduction_facts *f, const clf__codegen_target *t, clf__schedule *s)
{
    *s = (clf__schedule){0};
    s->sum = f->rlen <= (t->cpu ? CPU_PLAIN_SUM_RLEN : GPU_PLAIN_SUM_RLEN) ? CLF__SUM_PLAIN
             : t->cpu && t->fp64                                            ? CLF__SUM_DOUBLE
                                                                            : CLF__SUM_KAHAN;
    /* Online softmax only in the GPU's scalar form (rows whose length is
     * not a multiple of the float4 unit) where a row does not fit in
     * registers: measured, its extra exp and branches cost more than a
     * second sweep over a cached row, and the float4 form's reloads from L2
     * beat it too (bench/results/2026-11-29-reductions-h200.md). */
    s->online_softmax = !t->cpu && f->rlen % CLF__GPU_VEC != 0 && f->rlen > lanes_max_of(t) * CACHE_PER_LANE &&
                        f->online_pair;
}

/* Few long rows: each row cut into chunks reduced in parallel, then a
 * final kernel combines them. A driver that ends loops early
 * (t->max_loop_trips) gets chunks whose serial loop (one element a trip on
 * CPUs, a work-group's lanes' worth on GPUs) stays within its limit. */
static void choose_split(const clf__reduction_facts *f, const clf__codegen_target *t, clf__schedule *s)
{
    const uint64_t cus = t->compute_units ? t->compute_units : 1;
    s->split = 1;
    s->chunk = f->rlen;
    const bool one_sweep = f->nstages == 1 && !f->has_epilogue;
    if (one_sweep && f->rlen >= SPLIT_MIN_RLEN && f->rows < (t->cpu ? 4 : 2) * cus) {
        s->split = t->cpu ? (4 * cus + f->rows - 1) / f->rows : (f->rlen + s->wg * 64 - 1) / (s->wg * 64);
        s->chunk = (f->rlen + s->split - 1) / s->split;
        s->split = (f->rlen + s->chunk - 1) / s->chunk;
    }
    const uint64_t trips_max = t->max_loop_trips, per_trip = t->cpu ? 1 : s->wg;
    if (trips_max && one_sweep && s->chunk > trips_max * per_trip) {
        s->chunk = trips_max * per_trip;
        s->split = (f->rlen + s->chunk - 1) / s->chunk;
    }
}

/* The GPU form's lanes a row and, for rows swept more than once, the
 * elements a lane keeps in registers (persistent: the row read once). */
static void choose_gpu_lanes(const clf__reduction_facts *f, const clf__codegen_target *t, clf__schedule *s)
{
    const uint64_t vec = (uint64_t)s->vec, units = f->rlen / vec, slots = f->nslots ? f->nslots : 1;
    const uint64_t lanes_max = lanes_max_of(t);
    if (f->nstages + (f->has_epilogue ? 1 : 0) > 1) {
        /* A lane's share within its budget (GPU_VEC_CACHE floats, or
         * CACHE_PER_LANE scalars), on as many lanes as that takes, and at
         * least GPU_MIN_LANES where the row has the units. Rows too long
         * even for lanes_max lanes reload each sweep (from L2: the row was
         * just read), or the scalar form caches up to MAX_CACHED_VALUES a
         * lane. */
        uint64_t budget = vec > 1 ? GPU_VEC_CACHE : CACHE_PER_LANE;
        uint64_t per = budget / (vec * slots);
        if (per == 0)
            per = 1;
        uint64_t lanes = clf__pow2_at_least((units + per - 1) / per);
        uint64_t floor = clf__pow2_at_most(units < GPU_MIN_LANES ? (units ? units : 1) : GPU_MIN_LANES);
        if (lanes < floor)
            lanes = floor;
        if (lanes > lanes_max)
            lanes = lanes_max;
        uint64_t per_lane = (units + lanes - 1) / lanes;
        bool fits = vec > 1 ? per_lane * vec * slots <= GPU_VEC_CACHE : per_lane * slots <= MAX_CACHED_VALUES;
        s->cache = fits ? per_lane : 0;
        s->lanes = lanes;
        if (lanes > s->wg)
            s->wg = lanes;
    } else {
        s->lanes = clf__pow2_at_least((units + 3) / 4);
        if (s->lanes > s->wg)
            s->lanes = s->wg;
    }
    /* NVIDIA: a row's lanes within one warp combine by shuffles, in
     * work-groups of 64 (softmax over 256 on an H200: 0.0371 ms against
     * 0.0388-0.0395 through local memory in work-groups of 256, and
     * 0.0389-0.0393 in work-groups of 64; bench/probes/case_variants.py). */
    s->warp_shuffle = t->warp_shuffle && s->lanes <= 32 && f->shuffle_ok;
    if (s->warp_shuffle)
        s->wg = 64;
}

clf_status clf__schedule_reduction_launch(const clf__reduction_facts *f, const clf__codegen_target *t, uint32_t k,
                                          clf__schedule *s, char *err, size_t errlen)
{
    const uint64_t lanes_max = lanes_max_of(t);
    /* Work-groups: one work-item on CPU devices (PoCL then runs each row
     * as a plain loop instead of vectorising across rows with gathers,
     * bench/results/2026-11-29-reductions-pocl.md); 256 on GPUs, unless a
     * persistent row takes more lanes. */
    s->wg = t->cpu ? 1 : lanes_max < 256 ? lanes_max : 256;
    s->lanes = 0;
    s->cache = 0;
    s->rows_per_item = 0;
    s->warp_shuffle = false;
    choose_split(f, t, s);

    /* The vector form where every value of the kernel has one: on CPU
     * devices a loop over CPU_VEC elements at a time (the scalar loop takes
     * the rest of each row), on GPUs float4 units through aligned pointers
     * for rows of whole float4s. */
    const int vn = !t->cpu ? CLF__GPU_VEC : t->float_width >= CPU_VEC_WIDE ? CPU_VEC_WIDE : CPU_VEC;
    const bool lengths_fit =
        t->cpu ? f->rlen >= CPU_VEC_MIN_RLEN : f->rlen >= CLF__GPU_VEC && f->rlen % CLF__GPU_VEC == 0;
    s->vec = s->split == 1 && !s->online_softmax && lengths_fit && f->vector_ok ? vn : 1;

    if (t->cpu) {
        if (s->split == 1) {
            const uint64_t cus = t->compute_units ? t->compute_units : 1;
            uint64_t rpi = 1;
            while (!t->sizes_vary && rpi * 2 <= CPU_ROWS_PER_ITEM_MAX && rpi * 2 * f->rlen <= CPU_ITEM_ELEMENTS &&
                   f->rows / (rpi * 2) >= CPU_ITEMS_PER_UNIT * cus)
                rpi *= 2;
            s->rows_per_item = rpi;
        }
    } else if (s->split == 1) {
        choose_gpu_lanes(f, t, s);
    }

    if (t->max_loop_trips) {
        /* The longest loop: a chunk's sweep in the split form (one element
         * a trip on CPUs, the work-group's lanes on GPUs), else a row's,
         * CLF__CPU_ACCUMULATORS (or one vector) elements a trip on CPUs,
         * lanes x vec on GPUs. */
        const uint64_t vec = (uint64_t)s->vec;
        const uint64_t trips = s->split > 1 ? s->chunk / (t->cpu ? 1 : s->wg)
                               : t->cpu     ? f->rlen / (vec > 1 ? vec * CLF__CPU_VACCS : CLF__CPU_ACCUMULATORS)
                                            : f->rlen / (s->lanes * vec);
        if (trips > t->max_loop_trips) {
            snprintf(err, errlen,
                     "kernel %u: rows of %llu elements need loops of %llu iterations; this driver ends every loop "
                     "after %llu (runtime/driver_quirks.h)",
                     k, (unsigned long long)f->rlen, (unsigned long long)trips,
                     (unsigned long long)t->max_loop_trips);
            return CLF_ERR_UNSUPPORTED;
        }
    }
    s->form = s->split > 1 ? "split" : t->cpu ? "cpu" : s->cache ? "persistent" : "gpu";
    return CLF_OK;
}

void clf__reduction_geometry(const clf__schedule *s, uint64_t rows, bool cpu, size_t *global, size_t *local,
                             size_t *final_global, size_t *final_local)
{
    *final_global = *final_local = 0;
    if (cpu) {
        const uint64_t rpi = s->rows_per_item > 1 ? s->rows_per_item : 1;
        *local = 1;
        *global = s->split > 1 ? (size_t)(rows * s->split) : (size_t)((rows + rpi - 1) / rpi);
        if (s->split > 1) {
            *final_local = 1;
            *final_global = (size_t)rows;
        }
    } else if (s->split > 1) {
        *local = (size_t)s->wg;
        *global = (size_t)(rows * s->split * s->wg);
        *final_local = (size_t)s->wg;
        *final_global = (size_t)(rows * s->wg);
    } else {
        const uint64_t rows_per_wg = s->wg / s->lanes;
        *local = (size_t)s->wg;
        *global = (size_t)((rows + rows_per_wg - 1) / rows_per_wg * s->wg);
    }
}
