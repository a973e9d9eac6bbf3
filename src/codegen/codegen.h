/* Codegen: one planned kernel -> OpenCL C source and its launch geometry.
 * Pure: it reads the graph and the plan and never touches OpenCL. */
#ifndef CLFUSE_CODEGEN_H
#define CLFUSE_CODEGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph/graph_internal.h"
#include "planner/planner.h"
#include "util/strbuf.h"

/* The line a tensor-core kernel's source carries (inline PTX mma.sync). */
#define CLF__MMA_LINE "#define CLF_MMA 1\n"
/* The line (a printf format, 1 or 0) of a kernel whose source may use
 * inline PTX other than mma.sync (target->warp_shuffle: the shuffle
 * forms, the decode form's f16 conversions); a driver that refuses it
 * gets the kernel again without (executable.c). */
#define CLF__SHFL_LINE "#define CLF_SHFL %d\n"

/* Bumped whenever generated code changes meaning; part of cache keys. */
#define CLF__CODEGEN_VERSION 1

/* A GEMM kernel's tiling: a work-group computes tm x tn of the product in
 * steps of tk along K, each work-item wm x wn of it (CPU form: a
 * work-item's block alone, tm == wm, tn == wn, tk == 1). mma: the
 * tensor-core form's tiling (gemm_mma.cl), each warp wm x wn of the block,
 * tk 32; written "tm,tn,tk,wm,wn,mma" in CLFUSE_GEMM_TILE and the tuner's
 * entries. */
typedef struct clf__gemm_config {
    int tm, tn, tk, wm, wn;
    bool mma;
} clf__gemm_config;

/* The tensor-core attention form's tiling (attention_mma.cl): warps a
 * work-group, query rows a warp (16 or 32), keys a tile, and stages of
 * tiles in local memory (1: filled through registers, 2: by cp.async; 0:
 * the schedule's); written "warps,rows,keys[,stages]" in
 * CLFUSE_ATTENTION_TILE. Or, where fma_keys is not 0, the FMA GPU form's
 * (attention_gpu.cl): rows query rows a work-group, bkt keys a tile,
 * fma_keys of them a work-item; written "fma,rows,keys,keys_per_item". */
typedef struct clf__attention_tile {
    int warps, rows, bkt, stages, fma_keys;
} clf__attention_tile;

/* The deepest fused chain for target->small_code. */
#define CLF__SMALL_CODE_DEPTH 8

/* What codegen needs to know of the device. Zero means a GPU-like default. */
typedef struct clf__codegen_target {
    bool cpu;         /* a CPU device: blocked serial loops, no coalescing */
    size_t max_local; /* CL_DEVICE_MAX_WORK_GROUP_SIZE (0: 256) */
    bool fp64;        /* the device has cl_khr_fp64 */
    uint32_t compute_units; /* 0: 1 */
    size_t local_mem; /* CL_DEVICE_LOCAL_MEM_SIZE (0: 32 KiB) */
    int float_width;  /* CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, else _NATIVE_ (0: unknown, 8 assumed) */
    bool warp_shuffle; /* an NVIDIA GPU: inline PTX shuffles within a 32-lane warp */
    bool tensor_cores; /* an NVIDIA GPU of sm_80 or later: inline PTX mma.sync on f16/bf16 operands */
    bool tf32;         /* f32 GEMM operands may run on the tensor cores as TF32 (clf_compile_params.allow_tf32) */
    bool no_gemm_rows; /* GPU GEMMs of at most 8 rows keep the tiled forms (CLFUSE_GEMM_ROWS=0), not gemm_rows.cl */
    bool no_decode_wide; /* the decode attention form loads a value at a time (CLFUSE_DECODE_WIDE=0) */
    uint32_t decode_chunk; /* the decode attention form's keys a chunk, pinned (CLFUSE_DECODE_CHUNK); 0: the
                              schedule's */
    /* Products that read one operand are merged before planning
     * (graph_merge_products.h; CLFUSE_MERGE_PRODUCTS=0 keeps them apart).
     * Not codegen's choice: here because the plan cache keys on the target. */
    bool merge_products;
    /* The driver ends every loop after this many iterations, silently (0: no
     * limit; llvmpipe's 65535, runtime/driver_quirks.h): loops are cut so
     * that none runs longer, or codegen refuses the kernel. */
    uint32_t max_loop_trips;
    /* The driver's compiler inlines every call and slows down faster than
     * the code grows (Mesa's, on llvmpipe, with libclc's sin: driver_quirks.h):
     * pointwise kernels take one element a work-item, and the planner cuts
     * fused chains at SMALL_CODE_DEPTH ops. */
    bool small_code;
    const clf__gemm_config *gemm; /* GEMM tiling (autotuned); NULL: the device type's default */
    const clf__attention_tile *attention_tile; /* pinned tensor-core attention tiling; NULL: the schedule's */
    /* The graph has symbolic sizes: its specialisations share programs, so
     * choices that would follow an extent other than 1 do not (the CPU
     * GEMM's blocking). */
    bool sizes_vary;
} clf__codegen_target;

/* How a reduction's f32 sums accumulate: in plain float lanes (short
 * rows), in double (long rows on CPU devices with doubles) or with Kahan's
 * compensation (the rest). NONE: the kernel has no such sums to choose for. */
typedef enum { CLF__SUM_NONE, CLF__SUM_PLAIN, CLF__SUM_DOUBLE, CLF__SUM_KAHAN } clf__sum_kind;

/* "plain", "double", "kahan" (NULL for NONE). */
const char *clf__sum_kind_name(clf__sum_kind k);

/* The per-kernel choices a writer makes from the plan, the target and what
 * the kernel's loads allow, before it emits the source; kept with the code
 * and printed under CLFUSE_LOGS=schedule (clf__schedule_str). Fields that do
 * not apply to a kind stay 0 / NULL. */
typedef struct clf__schedule {
    const char *form; /* the device form: "cpu", "gpu", "persistent", "split", "cpu-blocks",
                         "cpu-one-row", "gpu-tiles", "gpu-rows" */
    int vec;          /* elements a vector unit carries (1: scalar) */
    int items;        /* pointwise on CPU devices: vectors (or elements) a work-item takes, in a row */
    bool along_axis;  /* CPU pointwise: the vector's lanes are consecutive elements of the last axis */
    uint64_t lanes;   /* GPU reductions: work-items a row is spread over */
    uint64_t wg;      /* work-group size the form is written for */
    uint64_t cache;   /* persistent reductions: elements a lane keeps in registers */
    uint64_t split, chunk; /* split reductions: chunks a row is cut into, elements each */
    uint64_t rows_per_item; /* CPU reductions: rows a work-item sweeps, one after the other */
    bool online_softmax;   /* max and sum in one sweep */
    bool warp_shuffle;     /* lanes combine through inline-PTX shuffles */
    clf__sum_kind sum;     /* how f32 sums accumulate (reductions) */
    clf__gemm_config tiles; /* GEMM tiling (tm 0: none) */
    bool vec_a, vec_b;      /* GEMM: float4 tile loads of a, b; CPU attention: vector loads of K, V rows */
    uint64_t rows;          /* CPU attention: query rows a work-item */
    int keys;               /* CPU attention: keys folded at a time */
    const char *tensor_cores; /* the tensor-core instruction used, or NULL */
    uint64_t unroll;          /* loads a work-item issues before using them (decode attention's V) */
    uint64_t local_bytes;     /* local memory the kernel takes, where the form sizes it to the device */
    int copy_stages;          /* tensor-core attention: stages of K/V tiles filled by cp.async (0: through
                                 registers) */
} clf__schedule;

typedef struct clf__kernel_code {
    char *name;   /* clf_poi_fused_add_mul_relu_0: the entry and the kernel's index in the plan */
    /* The kernel function in the source, clf_poi_fused_add_mul_relu: the
     * same for kernels of one source (the layers of a model), which share
     * their program (canonical_names.c). */
    char *entry;
    char *ops;    /* "mul add relu", in evaluation order */
    /* The whole program: generated definitions + template. A text
     * (util/text.h): the kernel memo and the executables share it. */
    const char *source;
    uint32_t *params; /* plan buffer ids, in kernel parameter order */
    uint32_t nparams;
    bool canonical; /* the source's ids are ordinals (clf__cg_canonical_names did its work) */
    bool wide_index; /* IDX_T is ulong (the last argument's type) */
    int vec, items;
    size_t global, local; /* launch geometry (global 0: nothing to do) */
    /* A split reduction is two launches: this kernel writes scratch_bytes
     * of partial results, then final_name (an entry of the same source)
     * combines them. Both take the parameters, then the scratch buffer and
     * the partial results' byte offset in it, then the row count. */
    char *final_name;
    size_t final_global, final_local;
    uint64_t scratch_bytes;
    /* Bytes of state the kernel keeps between its work-groups (the
     * few-rows GEMM's slices of K, gemm_rows.cl, and the decode attention's
     * chunks of keys, attention_decode.cl: counters it finds zero and
     * leaves zero, and partial results): a region of a zeroed buffer,
     * passed as the buffer and the region's start in uints after
     * CLF_PARAMS and the lifted literals. */
    uint64_t state_bytes;
    clf__schedule schedule;
} clf__kernel_code;

/* One line: "form=gpu vec=4 lanes=64 wg=256 ...", with the launch
 * geometry; the fields that apply only. Returns buf. */
const char *clf__schedule_str(const clf__kernel_code *code, char *buf, size_t cap);

/* Dispatches to the writer of the kernel's kind (codegen_pointwise.c,
 * codegen_reduction.c). */
clf_status clf__codegen_kernel(const clf_graph *g, const clf__plan *plan, uint32_t k,
                               const clf__codegen_target *target, clf__kernel_code *out,
                               char *err, size_t errlen);
clf_status clf__codegen_pointwise(const clf_graph *g, const clf__plan *plan, uint32_t k,
                                  const clf__codegen_target *target, clf__kernel_code *out,
                                  char *err, size_t errlen);
clf_status clf__codegen_reduction(const clf_graph *g, const clf__plan *plan, uint32_t k,
                                  const clf__codegen_target *target, clf__kernel_code *out,
                                  char *err, size_t errlen);
/* Emits a block computing reduction node n (id) of values of type in_dt
 * along a row in one work-item, into dest (a float lvalue): its
 * accumulator (f32 sums in double where fp64, else compensated), then
 * loop_head ("for (...)") around body, the statements computing the
 * element, and the step taking value, then the result, rounded to n's
 * dtype. The reduction writer's accumulator code (codegen_reduction.c);
 * the GEMM writer's row statistics use it (codegen_product.c). */
void clf__cg_emit_row_reduction(clf__strbuf *sb, const clf__node *n, uint32_t id, clf_dtype in_dt, bool fp64,
                                const char *loop_head, const char *body, const char *value, const char *dest);
/* Appends, for reduction node n (id) of values of type in_dt kept in one
 * float accumulator (sums plain), the bodies ("{ ... }") of three
 * functions of floats: init returns the identity, combine the result of
 * x and y combined, finish x rounded to n's dtype; the reduction writer's
 * accumulator code, so that the GPU's row statistics (row_stats.cl) keep
 * its semantics (NaN, signed zeros). */
void clf__cg_emit_float_reduction(clf__strbuf *init, clf__strbuf *combine, clf__strbuf *finish, const clf__node *n,
                                  uint32_t id, clf_dtype in_dt);
clf_status clf__codegen_gemm(const clf_graph *g, const clf__plan *plan, uint32_t k,
                             const clf__codegen_target *target, clf__kernel_code *out, char *err,
                             size_t errlen);
clf_status clf__codegen_attention(const clf_graph *g, const clf__plan *plan, uint32_t k,
                                  const clf__codegen_target *target, clf__kernel_code *out, char *err, size_t errlen);
/* Whether target's attention kernel takes an attention of batch x sq
 * queries over sk keys with heads of d (q, k) and dv (v): its tiles of K
 * and V, or a decode step's pieces, fit the local memory, and its sweep
 * over the keys the driver's loops; false with why written. The planner
 * asks before it plans one (clf__plan_options.attention_fits). */
bool clf__cg_attention_fits(const clf__codegen_target *target, int64_t batch, int64_t sq, int64_t sk, int64_t d,
                            int64_t dv, char *why, size_t cap);
void clf__kernel_code_free(clf__kernel_code *code);
/* The name shown for kernel k of a plan whose function is entry:
 * "<entry>_<k>" (heap; NULL when out of memory). Writers name the function
 * by its region and ops; the plan index goes into the name shown, not into
 * the source, which kernels of one form share. */
char *clf__kernel_code_name(const char *entry, uint32_t k);

/* Generated code kept by kernel key (kernel_memo.c): the key holds what a
 * writer reads of the graph, the plan and the target, with ids as their
 * order of appearance, so that the layers of a model, or a kernel a new
 * size leaves alone, find the code generated before. Thread-safe. */
typedef struct clf__kernel_memo clf__kernel_memo;
clf__kernel_memo *clf__kernel_memo_new(void);
void clf__kernel_memo_free(clf__kernel_memo **m);
/* clf__codegen_kernel through the memo: a copy of the code of a kernel of
 * the same key (with kernel k's parameters and name), else the code
 * generated, kept when its source came out canonical. */
clf_status clf__codegen_kernel_memo(clf__kernel_memo *m, const clf_graph *g, const clf__plan *plan, uint32_t k,
                                    const clf__codegen_target *target, clf__kernel_code *out, char *err,
                                    size_t errlen);
/* The kernels the memo gave so far. */
unsigned long clf__kernel_memo_hits(clf__kernel_memo *m);
/* Renames, in *source, the identifiers codegen made of plan ids to ordinals
 * within the kernel: parameter b<params[p]> to b<p>, and the names made of
 * node nodes[i] (s_, c_, v_, i_, n_, r_, CLF_GIX_ followed by the id) to
 * the prefix and i (*source, a text, is replaced by a new one). False (and
 * the source untouched) where that cannot be done exactly or memory ran out
 * (canonical_names.c). */
bool clf__cg_canonical_names(const uint32_t *params, uint32_t nparams, const uint32_t *nodes, uint32_t nnodes,
                             const char **source);
/* The first identifier of text (outside comments, strings and numbers)
 * that has the form of a name codegen makes of an id, or NULL. NULL for
 * every template, which clf__cg_canonical_names does not read. */
const char *clf__cg_generated_name(const char *text);
/* Whether a generated kernel's source uses inline PTX (the warp-shuffle
 * form, target->warp_shuffle, or a tensor-core form, target->tensor_cores):
 * a form a driver other than NVIDIA's, or an older GPU, may refuse to
 * build. Read from the source, which the plan cache keeps. */
bool clf__codegen_uses_inline_ptx(const char *source);
/* Which inline-PTX forms a source uses: CLF__PTX_SHUFFLES, CLF__PTX_MMA. */
#define CLF__PTX_SHUFFLES 1u
#define CLF__PTX_MMA 2u
unsigned clf__codegen_inline_ptx_forms(const char *source);

/* The class of GEMM kernel k's problem, for autotuning's cache key: form,
 * extents rounded up to powers of two, batch, operand layouts. */
void clf__gemm_problem_class(const clf_graph *g, const clf__plan *plan, uint32_t k, const clf__codegen_target *target,
                             clf__strbuf *out);
/* Whether GEMM kernel k runs in the tensor-core form (gemm_mma.cl) on
 * target: the autotuner, which knows the portable form only, leaves it. */
bool clf__gemm_tensor_cores(const clf_graph *g, const clf__plan *plan, uint32_t k, const clf__codegen_target *target);
/* Whether GEMM kernel k runs in the few-rows form (gemm_rows.cl) on
 * target: it has no tiling, and the autotuner leaves it. */
bool clf__gemm_rows(const clf_graph *g, const clf__plan *plan, uint32_t k, const clf__codegen_target *target);
/* The GEMM tiling used without autotuning, for batch M x N x K products. */
clf__gemm_config clf__gemm_default_config(const clf__codegen_target *target, int64_t m, int64_t n, int64_t k,
                                          int64_t batch);
/* Whether the device can run tensor-core tiling c (clf__gemm_config.mma);
 * else why not, in why. */
bool clf__gemm_mma_config_valid(const clf__gemm_config *c, size_t max_local, size_t local_mem, char *why, size_t cap);
/* Whether c can be generated for the device type; else the reason in why. */
bool clf__gemm_config_valid(const clf__gemm_config *c, bool cpu, size_t max_local, size_t local_mem, char *why,
                            size_t cap);

#endif
