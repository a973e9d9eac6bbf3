/* Codegen entry: one planned kernel to its writer. */
#include "codegen/codegen.h"
#include "util/alloc.h"
#include "util/text.h"

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
    [CLF__REGION_GEMM] = {clf__codegen_gemm, "gemm_cpu.cl gemm.cl gemm_mma.cl mma_sync.cl",
                          "register blocks (CPU), local-memory tiles (GPU), mma.sync on f16/bf16 (tensor cores)"},
    [CLF__REGION_ATTENTION] = {clf__codegen_attention,
                               "attention_cpu.cl attention_gpu.cl attention_mma.cl attention_decode.cl "
                               "mma_sync.cl",
                               "query-row blocks a work-item in vectors (CPU), query blocks over K/V tiles in local memory (GPU), "
                               "mma.sync on f16/bf16 (tensor cores), key chunks + combine (GPU decode)"},
    /* The pointwise writer over the new entries, each stored at its place. */
    [CLF__REGION_CACHE_WRITE] = {clf__codegen_pointwise, "pointwise.cl", "blocked loops (CPU), one element a "
                                 "work-item (GPU)"},
};
_Static_assert(CLF__REGION_KIND_COUNT == 5, "a new region kind needs its codegen row");

clf_status clf__codegen_kernel(const clf_graph *g, const clf__plan *plan, uint32_t k,
                               const clf__codegen_target *target, clf__kernel_code *out, char *err,
                               size_t errlen)
{
    clf__region_kind kind = plan->kernels[k].kind;
    if ((unsigned)kind >= CLF__REGION_KIND_COUNT) {
        snprintf(err, errlen, "codegen: kernel %u has no region kind %d", k, (int)kind);
        return CLF_ERR_INTERNAL;
    }
    clf_status st = kinds[kind].write(g, plan, k, target, out, err, errlen);
    if (st != CLF_OK)
        return st;
    out->name = clf__kernel_code_name(out->entry, k);
    if (!out->name) {
        clf__kernel_code_free(out);
        snprintf(err, errlen, "codegen: kernel %u: out of memory", k);
        return CLF_ERR_OUT_OF_MEMORY;
    }
    out->canonical =
        clf__cg_canonical_names(out->params, out->nparams, plan->kernels[k].ops, plan->kernels[k].nops, &out->source);
    return CLF_OK;
}

char *clf__kernel_code_name(const char *entry, uint32_t k)
{
    char *name = entry ? clf__malloc(strlen(entry) + 16) : NULL;
    if (name)
        sprintf(name, "%s_%u", entry, k);
    return name;
}

void clf__kernel_code_free(clf__kernel_code *c)
{
    if (!c)
        return;
    clf__free(c->name);
    clf__free(c->entry);
    clf__free(c->final_name);
    clf__free(c->ops);
    clf__text_release(c->source);
    clf__free(c->params);
    memset(c, 0, sizeof *c);
}

const char *clf__sum_kind_name(clf__sum_kind k)
{
    static const char *const names[] = {[CLF__SUM_NONE] = NULL, [CLF__SUM_PLAIN] = "plain",
                                        [CLF__SUM_DOUBLE] = "double", [CLF__SUM_KAHAN] = "kahan"};
    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : NULL;
}

const char *clf__schedule_str(const clf__kernel_code *c, char *buf, size_t cap)
{
    const clf__schedule *s = &c->schedule;
    size_t off = 0;
#define PUT(...)                                                                                        \
    do {                                                                                                \
        if (off < cap)                                                                                  \
            off += (size_t)snprintf(buf + off, cap - off, __VA_ARGS__);                                 \
    } while (0)
    if (cap)
        buf[0] = '\0';
    PUT("form=%s vec=%d", s->form ? s->form : "?", s->vec ? s->vec : 1);
    if (s->items > 1)
        PUT(" items=%d", s->items);
    if (s->along_axis)
        PUT(" along-axis");
    if (s->lanes)
        PUT(" lanes=%llu", (unsigned long long)s->lanes);
    if (s->wg)
        PUT(" wg=%llu", (unsigned long long)s->wg);
    if (s->cache)
        PUT(" cache=%llu", (unsigned long long)s->cache);
    if (s->split > 1)
        PUT(" split=%llu chunk=%llu", (unsigned long long)s->split, (unsigned long long)s->chunk);
    if (s->online_softmax)
        PUT(" online-softmax");
    if (s->warp_shuffle)
        PUT(" warp-shuffle");
    if (s->sum)
        PUT(" sum=%s", clf__sum_kind_name(s->sum));
    if (s->rows_per_item > 1)
        PUT(" rows-per-item=%llu", (unsigned long long)s->rows_per_item);
    if (s->tiles.tm)
        PUT(" tiles=%dx%dx%d/%dx%d%s%s", s->tiles.tm, s->tiles.tn, s->tiles.tk, s->tiles.wm, s->tiles.wn,
            s->vec_a ? " a4" : "", s->vec_b ? " b4" : "");
    if (s->rows)
        PUT(" rows=%llu keys=%d kv-loads=%s/%s", (unsigned long long)s->rows, s->keys, s->vec_a ? "vector" : "scalar",
            s->vec_b ? "vector" : "scalar");
    if (s->tensor_cores)
        PUT(" tensor-cores=%s", s->tensor_cores);
    if (s->unroll)
        PUT(" unroll=%llu", (unsigned long long)s->unroll);
    if (s->local_bytes)
        PUT(" local-mem=%llu", (unsigned long long)s->local_bytes);
    if (s->copy_stages)
        PUT(" cp.async-stages=%d", s->copy_stages);
    PUT(" global=%zu local=%zu", c->global, c->local);
    if (c->final_name)
        PUT(" final=%zu/%zu", c->final_global, c->final_local);
#undef PUT
    return buf;
}
