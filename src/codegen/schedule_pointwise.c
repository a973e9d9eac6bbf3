/* The pointwise kind's schedule (schedule.h). */
#include "codegen/schedule.h"

void clf__schedule_pointwise(const clf__pointwise_facts *f, const clf__codegen_target *t, clf__schedule *s)
{
    const size_t max_local = t->max_local ? t->max_local : 256;
    *s = (clf__schedule){.form = t->cpu ? "cpu" : "gpu"};
    const bool vectors = f->plain_loads && !t->small_code;
    if (t->cpu) {
        /* Blocks of ITEMS vectors a work-item, in work-groups of 16; the
         * vector along the last axis where every value has that form (on
         * PoCL 5 the lane-by-lane form stays scalar code: a rotary
         * embedding's f16 roundings and index arithmetic an element). */
        s->along_axis = !t->small_code && f->axis_lanes > 0 && f->axis_ok;
        s->vec = s->along_axis ? f->axis_lanes : vectors ? 8 : 1;
        s->items = 16;
        s->wg = max_local < 16 ? max_local : 16;
    } else {
        /* 16 bytes a work-item where the elements are 4 bytes: float4; 8
         * lanes where none is wider than 2 (f16, bf16, bool), so that a
         * storage-float kernel still moves 16 bytes a load. */
        s->vec = vectors ? (f->widest <= 2 ? 8 : 4) : 1;
        s->items = 1;
        s->wg = max_local < 256 ? max_local : 256;
    }
}

size_t clf__pointwise_global(const clf__schedule *s, uint64_t numel)
{
    const uint64_t groups = (numel + (uint64_t)s->vec - 1) / (uint64_t)s->vec;
    const uint64_t items = (groups + (uint64_t)s->items - 1) / (uint64_t)s->items;
    return (size_t)((items + s->wg - 1) / s->wg * s->wg);
}
