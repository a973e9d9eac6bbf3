/* 64-bit FNV-1a, for cache keys (not for security). */
#ifndef CLFUSE_HASH_H
#define CLFUSE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define CLF__HASH_SEED 0xcbf29ce484222325ull

uint64_t clf__hash_bytes(uint64_t h, const void *data, size_t n);
uint64_t clf__hash_str(uint64_t h, const char *s);
/* A hash of n bytes taken eight at a time, for keys that stay in memory
 * and are compared whole after (sources, skeletons): about eight times
 * faster than clf__hash_bytes on long text, and not the same value. Never
 * for what is written to disk. */
uint64_t clf__hash_words(uint64_t h, const void *data, size_t n);

#endif
