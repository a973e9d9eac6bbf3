/* Memory planning: places the buffers that cross kernel boundaries in one
 * scratch allocation, sharing bytes between buffers whose lifetimes do not
 * overlap. Pure: it works on a finished plan and knows nothing of OpenCL. */
#ifndef CLFUSE_MEMORY_PLAN_H
#define CLFUSE_MEMORY_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "clfuse/status.h"
#include "planner/planner.h"

/* A buffer of `bytes` live from kernel `first` to kernel `last`, both
 * included (the kernel that writes it first to the last one that reads
 * it). */
typedef struct clf__mem_interval {
    uint64_t bytes;
    uint32_t first, last;
} clf__mem_interval;

/* Gives each interval an offset, a multiple of align (a power of two, 0 or
 * 1 for none), such that two intervals live at a common kernel never share a
 * byte, and sets *total to the end of the highest one (the scratch size,
 * itself a multiple of align). Greedy: largest first, each at the lowest
 * offset of the smallest gap it fits in among the intervals already placed
 * that overlap it in time. Empty intervals get offset 0 and take no room.
 * CLF_ERR_OUT_OF_MEMORY, or CLF_ERR_UNSUPPORTED when the total overflows. */
clf_status clf__memory_plan(const clf__mem_interval *iv, size_t n, uint64_t align, uint64_t *offsets,
                            uint64_t *total);

/* The lifetime of plan buffer b: from the first kernel that stores it to
 * the last kernel that reads it (first when none reads it). False when no
 * kernel stores it. */
bool clf__plan_buffer_lifetime(const clf__plan *plan, uint32_t b, uint32_t *first, uint32_t *last);

#endif
