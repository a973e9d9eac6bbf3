/* Switches read from the environment. */
#ifndef CLFUSE_UTIL_ENV_H
#define CLFUSE_UTIL_ENV_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The switch the variable name sets: unset or empty gives otherwise, "0"
 * off, any other value on (CLFUSE_WARP_SHUFFLE, CLFUSE_TENSOR_CORES,
 * CLFUSE_ONE_PROGRAM, CLFUSE_TF32). */
static inline bool clf__env_switch(const char *name, bool otherwise)
{
    const char *v = getenv(name);
    return v && *v ? strcmp(v, "0") != 0 : otherwise;
}

#endif
