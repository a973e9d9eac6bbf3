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

/* Each word xored in and multiplied by FNV's prime, its high half folded
 * down so that every bit reaches the low ones a table masks; the tail
 * with its length. */
uint64_t clf__hash_words(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t w;
    for (; n >= 8; p += 8, n -= 8) {
        memcpy(&w, p, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 32;
    }
    w = (uint64_t)n << 56;
    for (size_t i = 0; i < n; i++)
        w |= (uint64_t)p[i] << (8 * i);
    h = (h ^ w) * 0x100000001b3ull;
    return h ^ (h >> 32);
}
