/* The structures of dynamic.c (executables of graphs with symbolic
 * dimensions), for it and the tests that look inside. */
#ifndef CLFUSE_RUNTIME_DYNAMIC_H
#define CLFUSE_RUNTIME_DYNAMIC_H

#include <pthread.h>

#include "graph/graph_internal.h"
#include "runtime_internal.h"

/* Specialisations kept besides the stand-in one. */
#define MAX_SPECS 16

struct clf__const_pool {
    struct pooled {
        const void *data;
        uint64_t bytes;
        cl_mem mem;
    } *items;
    size_t n, cap;
    pthread_mutex_t lock;
};

typedef struct spec {
    int64_t values[CLF__MAX_SYMS];
    clf_executable *exe;
    uint64_t used;  /* the dyn clock at its last run */
    unsigned users; /* runs in progress */
} spec;

struct clf__dyn {
    clf_graph *graph; /* the caller's graph, copied with its data and symbols */
    clf_compile_params params;
    pthread_mutex_t lock; /* guards everything below */
    spec **specs; /* MAX_SPECS slots, nspecs used */
    size_t nspecs;
    uint64_t clock;
    clf_executable *last; /* the executable of the last run */
    clf__const_pool pool;
    clf__lift_table *lift; /* the programs the specialisations share */
    clf__kernel_memo *memo; /* and the code generated for their kernels */
    clf__merge_memo *merges; /* and their merged products' weights (one address each: the pool keys on it) */
    /* The scratch every specialisation (and the stand-in executable) binds
     * its intermediates to before a run: one buffer, as large as the
     * largest need seen (grown by half at least), never shrunk; runs of
     * the specialisations follow each other (clf__lift_last_run). */
    cl_mem scratch;
    uint64_t scratch_bytes;
    /* The kernels' state every one of them runs with (share_state):
     * zeroed when made, and left zeroed by every launch that uses it;
     * grows as the scratch does, never shrinks. */
    cl_mem state;
    uint64_t state_bytes;
};

#endif
