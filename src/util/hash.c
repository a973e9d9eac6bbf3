#include "util/hash.h"

#include <string.h>

uint64_t clf__hash_bytes(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

uint64_t clf__hash_str(uint64_t h, const char *s) { return clf__hash_bytes(h, s, strlen(s) + 1); }
