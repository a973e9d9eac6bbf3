/* A monotonic clock in milliseconds, for the compile's progress logs. */
#ifndef CLFUSE_UTIL_CLOCK_H
#define CLFUSE_UTIL_CLOCK_H

#include <time.h>

static inline double clf__now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

#endif
