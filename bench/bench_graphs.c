/* The BENCH.md suite's graphs (bench_graphs.h). */
#include "bench_graphs.h"

#include <string.h>

size_t bench_reduction_cases(bool gpu, clf_dtype dt, bench_case *out, size_t cap)
{
    const bench_case cases[] = {
        {"rowsum", gpu ? 4096 : 1024, 16384, 3, 0, CLF_F32},       {"softmax", gpu ? 4096 : 1024, 16384, 1, 1, CLF_F32},
        {"softmax_short", gpu ? 65536 : 16384, 256, 1, 1, CLF_F32}, {"layernorm", gpu ? 4096 : 1024, 16384, 1, 1, CLF_F32},
        {"rmsnorm", gpu ? 4096 : 1024, 16384, 1, 1, CLF_F32},      {"horizontal", gpu ? 4096 : 1024, 16384, 1, 0, CLF_F32},
        {"sumall", 1, gpu ? (int64_t)1 << 26 : (int64_t)1 << 24, 1, 0, CLF_F32},
    };
    size_t n = sizeof cases / sizeof cases[0];
    for (size_t i = 0; i < n && i < cap; i++) {
        out[i] = cases[i];
        out[i].dt = dt;
    }
    return n;
}

size_t bench_suite_cases(bool gpu, clf_dtype dt, bench_case *out, size_t cap)
{
    const bench_case pointwise[] = {
        {"chain", 1, gpu ? (int64_t)1 << 26 : (int64_t)1 << 24, 3, 1, CLF_F32},
        {"tiny", 1, 1024, 1, 1, CLF_F32},
    };
    size_t n = 0;
    for (; n < 2; n++)
        if (n < cap) {
            out[n] = pointwise[n];
            out[n].dt = dt;
        }
    return n + bench_reduction_cases(gpu, dt, cap > n ? out + n : NULL, cap > n ? cap - n : 0);
}

/* relu(a*b + c) over n floats: the seed example. */
static void chain(clf_graph *g, int64_t n, clf_dtype dt)
{
    clf_tensor a = clf_input(g, "a", dt, 1, &n);
    clf_tensor b = clf_input(g, "b", dt, 1, &n);
    clf_tensor c = clf_input(g, "c", dt, 1, &n);
    clf_graph_output(g, "y", clf_relu(g, clf_add(g, clf_mul(g, a, b), c)));
}

/* Twenty cheap ops that stay finite on inputs in [-1, 1). */
static void tiny(clf_graph *g, int64_t n, clf_dtype dt)
{
    clf_tensor x = clf_input(g, "x", dt, 1, &n);
    clf_tensor half = clf_scalar(g, dt, 0.5);
    clf_tensor t = x;
    for (int i = 0; i < 5; i++) {
        t = clf_mul(g, t, half);
        t = clf_add(g, t, x);
        t = clf_tanh(g, t);
        t = clf_sub(g, t, half);
    }
    clf_graph_output(g, "y", t);
}

clf_graph *bench_case_graph(const bench_case *c)
{
    clf_graph *g = clf_graph_create();
    if (!g)
        return NULL;
    if (strcmp(c->name, "chain") == 0) {
        chain(g, c->cols, c->dt);
        return g;
    }
    if (strcmp(c->name, "tiny") == 0) {
        tiny(g, c->cols, c->dt);
        return g;
    }
    int64_t s[2] = {c->rows, c->cols}, w[1] = {c->cols};
    int last = -1;
    clf_tensor x = clf_input(g, "x", c->dt, 2, s);
    if (strcmp(c->name, "rowsum") == 0) {
        clf_tensor a = clf_input(g, "a", c->dt, 2, s), b = clf_input(g, "b", c->dt, 2, s);
        clf_graph_output(g, "y", clf_reduce_sum(g, clf_add(g, clf_mul(g, x, a), b), 1, &last, false));
    } else if (strncmp(c->name, "softmax", 7) == 0) {
        clf_graph_output(g, "y", clf_softmax(g, x, -1));
    } else if (strcmp(c->name, "layernorm") == 0) {
        clf_tensor wt = clf_input(g, "w", c->dt, 1, w), b = clf_input(g, "b", c->dt, 1, w);
        clf_graph_output(g, "y", clf_layer_norm(g, x, -1, 1e-5, wt, b));
    } else if (strcmp(c->name, "rmsnorm") == 0) {
        clf_tensor wt = clf_input(g, "w", c->dt, 1, w);
        clf_graph_output(g, "y", clf_rms_norm(g, x, -1, 1e-5, wt));
    } else if (strcmp(c->name, "sumall") == 0) {
        clf_graph_output(g, "y", clf_reduce_sum(g, x, 0, NULL, false));
    } else { /* horizontal */
        clf_graph_output(g, "mean", clf_reduce_mean(g, x, 1, &last, false));
        clf_graph_output(g, "meansq", clf_reduce_mean(g, clf_mul(g, x, x), 1, &last, false));
    }
    return g;
}
