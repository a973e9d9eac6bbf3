/* Every host allocation of the library goes through these, so that a
 * caller's allocator (clf_set_allocator) sees them all. Same contracts as
 * the C library's; clf__free(NULL) does nothing, clf__realloc(NULL, n) is
 * clf__malloc(n), and a request of 0 bytes is made as 1. */
#ifndef CLFUSE_UTIL_ALLOC_H
#define CLFUSE_UTIL_ALLOC_H

#include <stddef.h>

void *clf__malloc(size_t size);
/* Zeroed; NULL when n * size overflows. */
void *clf__calloc(size_t n, size_t size);
void *clf__realloc(void *ptr, size_t size);
void clf__free(void *ptr);
/* How many allocations have failed on the calling thread so far. A pass
 * that reports an internal inconsistency after one of its allocations
 * failed (codegen's generators fold both into one flag) reports running out
 * of memory instead: compare this before and after. */
unsigned long clf__alloc_failures(void);

#endif
