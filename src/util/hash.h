/* 64-bit FNV-1a, for cache keys (not for security). */
#ifndef CLFUSE_HASH_H
#define CLFUSE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define CLF__HASH_SEED 0xcbf29ce484222325ull

uint64_t clf__hash_bytes(uint64_t h, const void *data, size_t n);
uint64_t clf__hash_str(uint64_t h, const char *s);

#endif
