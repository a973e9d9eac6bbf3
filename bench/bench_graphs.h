/* The graphs of the BENCH.md suite (../shared/BENCH.md), shared by the
 * benchmark programs: the pointwise cases (chain, tiny) and the reduction
 * cases (rowsum, softmax, softmax_short, layernorm, rmsnorm, horizontal,
 * sumall), with BENCH.md's sizes for a GPU or a CPU. GEMM cases come with
 * GEMM. */
#ifndef CLFUSE_BENCH_GRAPHS_H
#define CLFUSE_BENCH_GRAPHS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <clfuse/clfuse.h>

typedef struct bench_case {
    const char *name;
    int64_t rows, cols; /* x is [rows, cols]; the pointwise cases are [1, n] */
    int reads, writes;  /* full-size tensors moved at the floor */
    clf_dtype dt;       /* of every tensor (0: f32; f16 and bf16 for the storage runs) */
} bench_case;

/* The reduction cases at BENCH.md's sizes, in dtype dt; returns their number. */
size_t bench_reduction_cases(bool gpu, clf_dtype dt, bench_case *out, size_t cap);
/* Every case of the suite (pointwise, then reductions); returns the number. */
size_t bench_suite_cases(bool gpu, clf_dtype dt, bench_case *out, size_t cap);
/* The graph of a case (NULL when out of memory). */
clf_graph *bench_case_graph(const bench_case *c);

#endif
