/* The schedule's choosers: for a region kind, the per-kernel choices
 * (codegen.h's clf__schedule: device form, vector width, lanes,
 * work-group, split, online softmax, how sums accumulate) made from the
 * facts its writer found in the kernel and the device's (the target), with
 * no source written and no device touched. The writer then emits what the
 * schedule says; test_codegen checks the choices without a device.
 *
 * Pointwise kernels (schedule_pointwise.c), GEMMs (schedule_gemm.c) and
 * attention (schedule_attention.c) are chosen in one step.
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

/* What the GEMM writer knows of a kernel: the product's extents and its
 * operands as the kernel reads them (clf__gemm_facts_of, from the graph). */
typedef struct clf__gemm_facts {
    int64_t m, n, k, batch;
    uint64_t numel;          /* the kernel's elements (0: nothing to launch) */
    bool row_stats;          /* A's loads compute row statistics (a norm's, planner.c) */
    bool a_k_fast, b_n_fast; /* the operands lie as they are (else transposed: strided rows) */
    bool a_plain, b_plain;   /* read straight from a buffer, no prologue (codegen_product.h) */
    bool b_plain_swapped;    /* B a transpose of a buffer read straight */
    clf_dtype a16, b16;      /* the 16-bit dtype an operand's loads return (CLF_F32: none) */
    bool a_f32, b_f32;       /* the operands are f32 themselves (TF32's products) */
    bool b_batch_shared;     /* B has no batch axis over 1: one B for the whole batch */
} clf__gemm_facts;

void clf__gemm_facts_of(const clf_graph *g, const clf__plan *plan, uint32_t k, clf__gemm_facts *f);

/* The tensor-core form's operands: none (the portable forms), f16, bf16 or
 * f32 on TF32's products. */
typedef enum { CLF__MMA_NONE, CLF__MMA_F16, CLF__MMA_BF16, CLF__MMA_TF32 } clf__mma_kind;

/* The few-rows form (gemm_rows.cl): a GPU product of at most 8 rows a
 * work-group (a decode step's x @ W). */
typedef struct clf__gemm_rows_form {
    int rows_max; /* 0: not this form; else 1 or 8 */
    int tn, nt, w, u;
    int cw;      /* columns a work-item: w where B lies as it is, 1 where transposed (loads along K) */
    int split;   /* slices of K, a work-group each (1: K whole) */
    int64_t kch; /* K values a slice: a multiple of w */
    int64_t blocks; /* work-groups a slice: (b_shared ? 1 : batch) * ceil(N / tn) */
    bool b_shared;
} clf__gemm_rows_form;

/* A GEMM kernel's choices: its form and tiling, and the CPU form's parts. */
typedef struct clf__gemm_schedule {
    clf__gemm_config cfg;     /* the tiling (the tensor-core form's where mma is set) */
    clf__mma_kind mma;        /* the tensor-core form, or NONE */
    int stages;               /* tensor cores: stages of tiles in local memory ... */
    bool pad;                 /* ... with padded rows (else permuted chunks) */
    clf__gemm_rows_form rows; /* the few-rows form (rows_max 0: not it) */
    bool loops_cut;           /* the driver ends loops early: the CPU form's older parts only */
    bool cpu_blocks;          /* the CPU form's blocks, where its newer parts may run */
    bool one_row;             /* ... for one row (CLF_ONE_ROW) */
    bool pack_a;              /* the CPU form packs A (its prologue evaluated once a block) */
    int64_t span;             /* CPU blocks of span sub-blocks of tn columns side by side */
    int one_row_split;        /* one row: slices of K (a final launch adds them) ... */
    int64_t one_row_kch;      /* ... of this many values */
    bool vec_a, vec_b;        /* GPU tiles: float4 loads of A, of B */
    int cpu_vw;               /* gemm_cpu.cl's vector width (B, A's prologue, the epilogue) */
} clf__gemm_schedule;

/* Fails with CLF_ERR_INVALID_ARGUMENT, naming kernel k, where a pinned
 * tiling (target->gemm) does not fit the form or the device. */
clf_status clf__schedule_gemm(const clf__gemm_facts *f, const clf__codegen_target *target, uint32_t k,
                              clf__gemm_schedule *s, char *err, size_t errlen);

/* The launch geometry, scratch and state of the schedule, and out->schedule. */
void clf__gemm_launch(const clf__gemm_facts *f, const clf__gemm_schedule *s, bool cpu, clf__kernel_code *out);

/* What the attention writer knows of a kernel: the heads' extents. */
typedef struct clf__attention_facts {
    int64_t batch, sq, sk, d, dv; /* batch x heads, query rows, keys, head width of Q/K and of V */
    uint64_t numel;               /* the output's elements (0: nothing to launch) */
    clf_dtype mma16;              /* Q, K and V all f16 or all bf16: that dtype; else CLF_F32 */
    bool kv16;                    /* K and V are buffers of one 16-bit dtype read by index arithmetic
                                   * alone, in pieces of 16 bytes along D and DV (clf__cg_stage16_dtype) */
} clf__attention_facts;

/* The decode form's geometry for rows query rows over sk keys of d with
 * value rows of dv: wg work-items a work-group, vl of them across DV in
 * the weighted sum of V (kg = wg / vl groups of them take alternate keys),
 * split chunks of chunk keys a row; K staged in pieces of wg keys x kp
 * columns, V read vu keys at a time. local: the bytes of local memory the
 * split kernel takes (kp shrinks until they fit local_mem; 0 if they do
 * not fit even at kp 1). wide: K and V read 8 16-bit values a load (16
 * bytes), each of the vl work-items across DV taking 8 columns. */
typedef struct clf__attention_decode {
    uint64_t wg, vl, kg, split, chunk, kp, vu, local;
    bool wide;
} clf__attention_decode;

/* An attention kernel's choices. */
typedef struct clf__attention_schedule {
    bool decode;             /* the split-keys form (attention_decode.cl) ... */
    clf__attention_decode G; /* ... and its geometry */
    uint64_t bq, bk, tk;     /* the GPU form: query rows a work-group, keys a tile, keys a work-item */
    clf_dtype mma;           /* the tensor-core form's operands (f16, bf16); CLF_F32: not that form */
    int mma_warps;           /* ... warps a work-group ... */
    int mma_rows;            /* ... query rows a warp (16 or 32) */
    uint64_t bkt;            /* ... keys a tile ... */
    int mma_stages;          /* ... stages of tiles in local memory (2: filled by cp.async, f->kv16;
                              * 1: through registers) */
    uint64_t state_floats;   /* the decode form's chunks' states */
    int vw;                  /* the CPU form's vector width ... */
    uint64_t rb;             /* ... query rows a work-item ... */
    int keys;                /* ... keys a fold */
} clf__attention_schedule;

/* Fails with CLF_ERR_UNSUPPORTED, naming kernel k, where the heads do not
 * fit the device (clf__cg_attention_fits). */
clf_status clf__schedule_attention(const clf__attention_facts *f, const clf__codegen_target *target, uint32_t k,
                                   clf__attention_schedule *s, char *err, size_t errlen);

/* The launch geometry and state of the schedule, and out->schedule. */
void clf__attention_launch(const clf__attention_facts *f, const clf__attention_schedule *s, bool cpu,
                           clf__kernel_code *out);

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
