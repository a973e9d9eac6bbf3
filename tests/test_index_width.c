/* Index width: a region whose iteration space or buffer offsets pass 2^31
 * elements is indexed with 64-bit integers (IDX_T ulong), checked on the
 * generated source of graphs that are compiled but never allocated; and,
 * with the argument "run", one real logical_not over a bool tensor of more
 * than 2^31 elements where the device allows an allocation that large
 * (exit 77, skipped, where it does not). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_support.h"

#define BIG (((int64_t)1 << 31) + 64) /* just past 2^31 */

/* Compiles g and returns whether every kernel uses idx (after "#define
 * IDX_T "); fails the test on a compile error. */
static bool all_kernels_use(clf_context *ctx, const clf_graph *g, const char *idx, clf_kernel_style style)
{
    clf_executable *exe = NULL;
    clf_status st = clf_compile(ctx, g, clf_compile_params(.kernel_style = style), &exe);
    ck_assert_msg(st == CLF_OK, "clf_compile: %s: %s", clf_status_name(st), clf_context_last_error(ctx));
    char want[64];
    snprintf(want, sizeof want, "#define IDX_T %s\n", idx);
    bool all = clf_executable_kernel_count(exe) > 0;
    for (size_t k = 0; k < clf_executable_kernel_count(exe); k++)
        all &= strstr(clf_executable_kernel_source(exe, k), want) != NULL;
    clf_executable_destroy(&exe);
    return all;
}

START_TEST(small_regions_use_32_bit_indices)
{
    int64_t s[2] = {1000, 1000};
    int last = 1;
    clf_context *ctx = clf_test_context();
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_F32, 2, s);
    clf_graph_output(g, "y", clf_exp(g, x));
    clf_graph_output(g, "s", clf_reduce_sum(g, x, 1, &last, false));
    ck_assert(all_kernels_use(ctx, g, "uint", CLF_KERNEL_STYLE_CPU));
    ck_assert(all_kernels_use(ctx, g, "uint", CLF_KERNEL_STYLE_GPU));
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

START_TEST(pointwise_past_2_31_elements_uses_64_bit_indices)
{
    int64_t n = BIG;
    clf_context *ctx = clf_test_context();
    clf_graph *g = clf_graph_create();
    clf_graph_output(g, "y", clf_logical_not(g, clf_input(g, "x", CLF_BOOL, 1, &n)));
    ck_assert(all_kernels_use(ctx, g, "ulong", CLF_KERNEL_STYLE_AUTO));
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

START_TEST(small_region_at_large_offsets_uses_64_bit_indices)
{
    /* The region is 2^30 elements, but it reads the third row of a
     * [3, 2^30] input: offsets reach 3 * 2^30. */
    int64_t s[2] = {3, (int64_t)1 << 30}, st = 2, en = 3;
    int axis = 0;
    clf_context *ctx = clf_test_context();
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_BOOL, 2, s);
    clf_graph_output(g, "y", clf_logical_not(g, clf_slice(g, x, 1, &st, &en, &axis, NULL)));
    ck_assert(all_kernels_use(ctx, g, "ulong", CLF_KERNEL_STYLE_AUTO));
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

START_TEST(reduction_past_2_31_elements_uses_64_bit_indices)
{
    /* 2^20 rows of 2^12: the output is small, the reduced space is 2^32. */
    int64_t s[2] = {(int64_t)1 << 20, (int64_t)1 << 12};
    int last = 1;
    clf_context *ctx = clf_test_context();
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_F32, 2, s);
    clf_graph_output(g, "s", clf_reduce_sum(g, x, 1, &last, false));
    clf_graph_output(g, "p", clf_softmax(g, x, -1));
    ck_assert(all_kernels_use(ctx, g, "ulong", CLF_KERNEL_STYLE_CPU));
    ck_assert(all_kernels_use(ctx, g, "ulong", CLF_KERNEL_STYLE_GPU));
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
}
END_TEST

/* The real run: y = logical_not(x) over BIG bools. Returns the exit status. */
static int real_run(void)
{
    clf_context *ctx = NULL;
    char msg[256] = "";
    if (clf_context_create(clf_context_params(.message = msg, .message_cap = sizeof msg), &ctx) != CLF_OK) {
        printf("no OpenCL device (%s): skipped\n", msg);
        return 77;
    }
    clf_device_desc d;
    clf_context_device(ctx, &d);
    long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t host_free = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    uint64_t need = (uint64_t)BIG;
    printf("device %s: max allocation %llu bytes, global memory %llu bytes; host memory free %llu bytes; "
           "the run needs two buffers of %llu bytes on each\n",
           d.device_name, (unsigned long long)d.max_alloc_bytes, (unsigned long long)d.global_mem_bytes,
           (unsigned long long)host_free, (unsigned long long)need);
    if (d.max_alloc_bytes < need || d.global_mem_bytes < 2 * need + (256u << 20) ||
        host_free < 2 * need + (2048ull << 20) /* PoCL's buffers live in host memory too */) {
        printf("the device or host cannot hold a bool tensor of 2^31 + 64 elements: skipped\n");
        clf_context_destroy(&ctx);
        return 77;
    }
    int rc = 1;
    int64_t n = BIG;
    clf_executable *exe = NULL;
    clf_graph *g = clf_graph_create();
    uint8_t *x = malloc((size_t)need), *y = malloc((size_t)need);
    if (!g || !x || !y) {
        printf("out of host memory: skipped\n");
        rc = 77;
        goto done;
    }
    clf_graph_output(g, "y", clf_logical_not(g, clf_input(g, "x", CLF_BOOL, 1, &n)));
    if (clf_compile(ctx, g, NULL, &exe) != CLF_OK) {
        printf("clf_compile: %s\n", clf_context_last_error(ctx));
        goto done;
    }
    /* A pattern whose every 2^31-periodic alias differs: x[i] = (i >> 3) & 1. */
    for (size_t i = 0; i < (size_t)need; i++)
        x[i] = (uint8_t)((i >> 3) & 1);
    memset(y, 7, (size_t)need);
    clf_host_binding in = {"x", x}, out = {"y", y};
    clf_status st = clf_run_host(exe, 1, &in, 1, &out);
    if (st != CLF_OK) {
        printf("clf_run_host: %s: %s\n", clf_status_name(st), clf_context_last_error(ctx));
        goto done;
    }
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < (size_t)need; i += (i < (size_t)1 << 31) ? 4099 : 1)
        if (y[i] != !x[i] && bad++ == 0)
            first = i;
    if (y[need - 1] != !x[need - 1] && bad++ == 0)
        first = (size_t)need - 1;
    if (bad) {
        printf("%zu wrong elements, the first at %zu: got %u, want %u\n", bad, first, y[first], !x[first]);
        goto done;
    }
    printf("logical_not over %lld bools: every 4099th element below 2^31 and every one above it agree\n",
           (long long)n);
    rc = 0;
done:
    free(x);
    free(y);
    clf_executable_destroy(&exe);
    clf_graph_destroy(&g);
    clf_context_destroy(&ctx);
    return rc;
}

int main(int argc, char **argv)
{
    clf_test_setup_env();
    if (argc > 1 && strcmp(argv[1], "run") == 0)
        return real_run();
    Suite *s = suite_create("index_width");
    clf_test_add_case(s, "small_regions_use_32_bit_indices", small_regions_use_32_bit_indices);
    clf_test_add_case(s, "pointwise_past_2_31_elements_uses_64_bit_indices",
                      pointwise_past_2_31_elements_uses_64_bit_indices);
    clf_test_add_case(s, "small_region_at_large_offsets_uses_64_bit_indices",
                      small_region_at_large_offsets_uses_64_bit_indices);
    clf_test_add_case(s, "reduction_past_2_31_elements_uses_64_bit_indices",
                      reduction_past_2_31_elements_uses_64_bit_indices);
    return clf_test_run_suite(s);
}
