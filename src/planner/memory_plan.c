/* Memory planning of intermediates (see memory_plan.h). Plans have tens of
 * intermediates at most, so the quadratic placement is cheap. */
#include "planner/memory_plan.h"

#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"

bool clf__plan_buffer_lifetime(const clf__plan *plan, uint32_t b, uint32_t *first, uint32_t *last)
{
    bool stored = false;
    uint32_t lo = 0, hi = 0;
    for (uint32_t k = 0; k < plan->nkernels; k++) {
        const clf__plan_kernel *K = &plan->kernels[k];
        for (uint32_t s = 0; s < K->nstores; s++) {
            if (K->stores[s].buffer == b && !stored) {
                stored = true;
                lo = hi = k;
            }
        }
        for (uint32_t r = 0; stored && r < K->nreads; r++)
            if (K->reads[r] == b)
                hi = k;
    }
    *first = lo;
    *last = hi;
    return stored;
}

typedef struct placed {
    uint64_t begin, end;
} placed;

static int by_begin(const void *a, const void *b)
{
    const placed *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

static bool round_up(uint64_t v, uint64_t align, uint64_t *out)
{
    if (align <= 1) {
        *out = v;
        return true;
    }
    if (v > UINT64_MAX - (align - 1))
        return false;
    *out = (v + align - 1) & ~(align - 1);
    return true;
}

clf_status clf__memory_plan(const clf__mem_interval *iv, size_t n, uint64_t align, uint64_t *offsets,
                            uint64_t *total)
{
    *total = 0;
    if (n == 0)
        return CLF_OK;
    size_t *order = clf__calloc(n, sizeof *order);
    placed *busy = clf__calloc(n, sizeof *busy);
    bool *done = clf__calloc(n, sizeof *done);
    clf_status st = CLF_ERR_OUT_OF_MEMORY;
    if (!order || !busy || !done)
        goto out;
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    /* Largest first, then earliest, then by index (insertion sort: n is
     * small, and the order must not depend on a sort's stability). */
    for (size_t i = 1; i < n; i++) {
        size_t v = order[i], j = i;
        while (j > 0) {
            const clf__mem_interval *x = &iv[v], *y = &iv[order[j - 1]];
            bool before = x->bytes != y->bytes ? x->bytes > y->bytes
                          : x->first != y->first ? x->first < y->first
                                                 : v < order[j - 1];
            if (!before)
                break;
            order[j] = order[j - 1];
            j--;
        }
        order[j] = v;
    }
    st = CLF_ERR_UNSUPPORTED;
    for (size_t oi = 0; oi < n; oi++) {
        size_t i = order[oi];
        offsets[i] = 0;
        if (iv[i].bytes == 0)
            continue;
        uint64_t need;
        if (!round_up(iv[i].bytes, align, &need))
            goto out;
        /* The placed intervals alive at some kernel of i, by offset. */
        size_t nb = 0;
        for (size_t j = 0; j < n; j++) {
            if (!done[j] || iv[j].first > iv[i].last || iv[i].first > iv[j].last)
                continue;
            busy[nb++] = (placed){offsets[j], offsets[j] + iv[j].bytes};
        }
        qsort(busy, nb, sizeof *busy, by_begin);
        /* Best fit: the smallest gap between busy ranges that holds it;
         * else after the last one. */
        uint64_t best = UINT64_MAX, best_gap = UINT64_MAX, cursor = 0;
        for (size_t b = 0; b <= nb; b++) {
            uint64_t start;
            if (!round_up(cursor, align, &start))
                goto out;
            if (b == nb) {
                if (best == UINT64_MAX)
                    best = start;
                break;
            }
            if (busy[b].begin >= start && busy[b].begin - start >= need && busy[b].begin - start < best_gap) {
                best = start;
                best_gap = busy[b].begin - start;
            }
            if (busy[b].end > cursor)
                cursor = busy[b].end;
        }
        offsets[i] = best;
        done[i] = true;
        uint64_t end;
        if (best > UINT64_MAX - need || !round_up(best + need, align, &end))
            goto out;
        if (end > *total)
            *total = end;
    }
    st = CLF_OK;
out:
    if (st != CLF_OK)
        *total = 0;
    clf__free(order);
    clf__free(busy);
    clf__free(done);
    return st;
}
