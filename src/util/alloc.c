/* The replaceable host allocator (include/clfuse/alloc.h). */
#include "util/alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clfuse/alloc.h"

static clf_malloc_fn a_malloc = malloc;
static clf_realloc_fn a_realloc = realloc;
static clf_free_fn a_free = free;
static _Thread_local unsigned long failures;

unsigned long clf__alloc_failures(void) { return failures; }

CLF_API clf_status clf_set_allocator(clf_malloc_fn malloc_fn, clf_realloc_fn realloc_fn, clf_free_fn free_fn)
{
    if (!malloc_fn && !realloc_fn && !free_fn) {
        a_malloc = malloc;
        a_realloc = realloc;
        a_free = free;
        return CLF_OK;
    }
    if (!malloc_fn || !realloc_fn || !free_fn)
        return CLF_ERR_INVALID_ARGUMENT;
    a_malloc = malloc_fn;
    a_realloc = realloc_fn;
    a_free = free_fn;
    return CLF_OK;
}

void *clf__malloc(size_t size)
{
    void *p = a_malloc(size ? size : 1);
    if (!p)
        failures++;
    return p;
}

void *clf__calloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) {
        failures++;
        return NULL;
    }
    size_t bytes = n * size;
    void *p = clf__malloc(bytes);
    if (p)
        memset(p, 0, bytes ? bytes : 1);
    return p;
}

void *clf__realloc(void *ptr, size_t size)
{
    if (!ptr)
        return clf__malloc(size);
    void *p = a_realloc(ptr, size ? size : 1);
    if (!p)
        failures++;
    return p;
}

void clf__free(void *ptr)
{
    if (ptr)
        a_free(ptr);
}
