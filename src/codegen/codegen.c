/* Codegen entry: one planned kernel to its writer. */
#include "codegen/codegen.h"
#include "util/alloc.h"

#include <stdlib.h>
#include <string.h>

clf_status clf__codegen_kernel(const clf_graph *g, const clf__plan *plan, uint32_t k,
                               const clf__codegen_target *target, clf__kernel_code *out, char *err,
                               size_t errlen)
{
    if (plan->kernels[k].gemm)
        return clf__codegen_gemm(g, plan, k, target, out, err, errlen);
    return plan->kernels[k].reduction ? clf__codegen_reduction(g, plan, k, target, out, err, errlen)
                                      : clf__codegen_pointwise(g, plan, k, target, out, err, errlen);
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
