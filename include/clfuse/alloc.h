/* The host allocator libclfuse uses for every allocation of its own (graphs,
 * plans, generated source, executables, caches, error messages). Memory the
 * OpenCL driver allocates is the driver's business and does not go through
 * it.
 *
 * By default it is the C library's malloc, realloc and free. A program may
 * install its own triple, for example to account for memory, to use an
 * arena, or (as the tests do) to make allocations fail on purpose: every
 * failure comes back as CLF_ERR_OUT_OF_MEMORY (or a builder's sticky error)
 * with nothing leaked, never as a crash.
 *
 * The functions are called as the C library's would be, except that
 * libclfuse never asks for 0 bytes, never passes NULL to realloc_fn and
 * never passes NULL to free_fn. They may be called from any thread that
 * calls into libclfuse, so they must be thread-safe when the program uses
 * libclfuse from several threads.
 *
 * Install the allocator before any other libclfuse call, or when no
 * libclfuse object (graph, context, executable) exists and no call is in
 * progress: memory is always freed with the free_fn in place when it is
 * freed, so objects must not outlive the allocator that made them. Not
 * thread-safe with respect to other libclfuse calls. */
#ifndef CLFUSE_ALLOC_H
#define CLFUSE_ALLOC_H

#include <stddef.h>

#include "export.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void *(*clf_malloc_fn)(size_t size);
typedef void *(*clf_realloc_fn)(void *ptr, size_t size);
typedef void (*clf_free_fn)(void *ptr);

/* Installs malloc_fn, realloc_fn and free_fn, all three non-NULL; all three
 * NULL restore the C library's. Anything else is CLF_ERR_INVALID_ARGUMENT
 * and changes nothing. */
CLF_API clf_status clf_set_allocator(clf_malloc_fn malloc_fn, clf_realloc_fn realloc_fn, clf_free_fn free_fn);

#ifdef __cplusplus
}
#endif

#endif
