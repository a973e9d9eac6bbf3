/* Codegen: one planned kernel -> OpenCL C source and its launch geometry.
 * Pure: it reads the graph and the plan and never touches OpenCL. */
#ifndef CLFUSE_CODEGEN_H
#define CLFUSE_CODEGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph/graph_internal.h"
#include "planner/planner.h"

/* Bumped whenever generated code changes meaning; part of cache keys. */
#define CLF__CODEGEN_VERSION 1

/* What codegen needs to know of the device. Zero means a GPU-like default. */
typedef struct clf__codegen_target {
    bool cpu;         /* a CPU device: blocked serial loops, no coalescing */
    size_t max_local; /* CL_DEVICE_MAX_WORK_GROUP_SIZE (0: 256) */
    bool fp64;        /* the device has cl_khr_fp64 */
    uint32_t compute_units; /* 0: 1 */
} clf__codegen_target;

typedef struct clf__kernel_code {
    char *name;   /* clf_poi_fused_add_mul_relu_0 */
    char *ops;    /* "mul add relu", in evaluation order */
    char *source; /* the whole program: generated definitions + template */
    uint32_t *params; /* plan buffer ids, in kernel parameter order */
    uint32_t nparams;
    bool wide_index; /* IDX_T is ulong (the last argument's type) */
    int vec, items;
    size_t global, local; /* launch geometry (global 0: nothing to do) */
    /* A split reduction is two launches: this kernel writes scratch_bytes
     * of partial results, then final_name combines them. Both take the
     * parameters, then the scratch buffer, then the row count. */
    char *final_name;
    size_t final_global, final_local;
    uint64_t scratch_bytes;
} clf__kernel_code;

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
void clf__kernel_code_free(clf__kernel_code *code);

#endif
