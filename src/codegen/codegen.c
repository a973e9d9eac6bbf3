/* Codegen entry: one planned kernel to its writer. */
#include "codegen/codegen.h"
#include "util/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Codegen's rows of the region kinds (the planner's are in
 * planner/region_kinds.c): each kind's writer, the templates it fills and
 * the device forms it chooses among. */
typedef struct codegen_kind {
    clf_status (*write)(const clf_graph *g, const clf__plan *plan, uint32_t k, const clf__codegen_target *target,
                        clf__kernel_code *out, char *err, size_t errlen);
    const char *templates;
    const char *forms;
} codegen_kind;

static const codegen_kind kinds[CLF__REGION_KIND_COUNT] = {
    [CLF__REGION_POINTWISE] = {clf__codegen_pointwise, "pointwise.cl", "blocked loops (CPU), vector lanes (GPU)"},
    [CLF__REGION_REDUCTION] = {clf__codegen_reduction, "reduction_cpu.cl reduction_gpu.cl reduction_split.cl",
                               "row loop (CPU), lanes + tree or warp shuffles (GPU), persistent row, split + final"},
    [CLF__REGION_GEMM] = {clf__codegen_gemm, "gemm_cpu.cl gemm.cl", "register blocks (CPU), local-memory tiles (GPU)"},
};
_Static_assert(CLF__REGION_KIND_COUNT == 3, "a new region kind needs its codegen row");

clf_status clf__codegen_kernel(const clf_graph *g, const clf__plan *plan, uint32_t k,
                               const clf__codegen_target *target, clf__kernel_code *out, char *err,
                               size_t errlen)
{
    clf__region_kind kind = plan->kernels[k].kind;
    if ((unsigned)kind >= CLF__REGION_KIND_COUNT) {
        snprintf(err, errlen, "codegen: kernel %u has no region kind %d", k, (int)kind);
        return CLF_ERR_INTERNAL;
    }
    return kinds[kind].write(g, plan, k, target, out, err, errlen);
}

void clf__kernel_code_free(clf__kernel_code *c)
{
    if (!c)
        return;
    clf__free(c->name);
    clf__free(c->final_name);
    clf__free(c->ops);
    clf__free(c->source);
    clf__free(c->params);
    memset(c, 0, sizeof *c);
}
