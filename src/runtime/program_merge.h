/* Several kernel sources as one program (program_merge.c). */
#ifndef CLFUSE_PROGRAM_MERGE_H
#define CLFUSE_PROGRAM_MERGE_H

#include <stddef.h>

/* The n sources as one translation unit, source i's clf_ identifiers
 * prefixed clfk<i>_ and its macros undefined after it (heap; NULL when
 * out of memory). */
char *clf__merge_sources(const char *const *sources, size_t n);

/* What kernel function entry of source i is called in the merged program
 * (heap; NULL when entry is NULL or out of memory). */
char *clf__merged_name(const char *entry, size_t i);

#endif
