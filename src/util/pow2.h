/* Powers of two for tile, lane and work-group sizes. */
#ifndef CLF_UTIL_POW2_H
#define CLF_UTIL_POW2_H

#include <stdbool.h>
#include <stdint.h>

/* The smallest power of two at least v (1 for v <= 1). */
static inline uint64_t clf__pow2_at_least(uint64_t v)
{
    uint64_t p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

/* The largest power of two at most v (1 for v <= 1). */
static inline uint64_t clf__pow2_at_most(uint64_t v)
{
    uint64_t p = 1;
    while (p * 2 <= v)
        p <<= 1;
    return p;
}

/* Whether v is a power of two (1 is; 0 is not). */
static inline bool clf__is_pow2(uint64_t v) { return v && !(v & (v - 1)); }

#endif
