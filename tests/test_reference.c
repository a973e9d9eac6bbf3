/* Check suite "reference": the host interpreter against hand-computed
 * values, op by op, plus broadcasting, movement ops, rank 0, zero-size
 * tensors, NaN/Inf, i32 wrap-around and the binding and error rules. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "clfuse/clfuse.h"
#include "test_support.h"

/* Under AddressSanitizer, let the deliberately impossible allocation of
 * error_out_of_memory return NULL instead of stopping the process. */
#if defined(__SANITIZE_ADDRESS__)
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }
#endif

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* ---- helpers ---------------------------------------------------------- */

/* Runs g with one input "x" and one output "y", failing the test on error. */
static void run_xy(clf_graph *g, const void *x, void *y)
{
    char msg[256];
    clf_host_binding in[] = {{"x", (void *)x}};
    clf_host_binding out[] = {{"y", y}};
    clf_status st = clf_reference_run(g, 1, in, 1, out, msg, sizeof msg);
    ck_assert_msg(st == CLF_OK, "clf_reference_run: %s: %s", clf_status_name(st), msg);
}

/* Runs g with inputs "a", "b" and output "y". */
static void run_aby(clf_graph *g, const void *a, const void *b, void *y)
{
    char msg[256];
    clf_host_binding in[] = {{"a", (void *)a}, {"b", (void *)b}};
    clf_host_binding out[] = {{"y", y}};
    clf_status st = clf_reference_run(g, 2, in, 1, out, msg, sizeof msg);
    ck_assert_msg(st == CLF_OK, "clf_reference_run: %s: %s", clf_status_name(st), msg);
}

static void expect_graph_ok(clf_graph *g)
{
    const char *m = NULL;
    clf_status st = clf_graph_status(g, &m);
    ck_assert_msg(st == CLF_OK, "graph: %s: %s", clf_status_name(st), m ? m : "");
}

/* Float comparison that also insists on the sign of zeros. */
static void expect_f32(const float *got, const float *want, size_t n, double rtol, const char *what)
{
    char msg[256];
    ck_assert_msg(clf_test_close(CLF_F32, got, want, n, rtol, 0.0, msg, sizeof msg), "%s: %s", what,
                  msg);
    for (size_t i = 0; i < n; i++) {
        if (want[i] == 0.0f)
            ck_assert_msg(signbit(got[i]) == signbit(want[i]), "%s: element %zu: sign of zero",
                          what, i);
    }
}

static void expect_i32(const int32_t *got, const int32_t *want, size_t n, const char *what)
{
    char msg[256];
    ck_assert_msg(clf_test_close(CLF_I32, got, want, n, 0, 0, msg, sizeof msg), "%s: %s", what,
                  msg);
}

static void expect_bool(const uint8_t *got, const uint8_t *want, size_t n, const char *what)
{
    char msg[256];
    ck_assert_msg(clf_test_close(CLF_BOOL, got, want, n, 0, 0, msg, sizeof msg), "%s: %s", what,
                  msg);
}

/* ---- unary ------------------------------------------------------------ */

typedef struct unary_case_f32 {
    clf_unary_op op;
    size_t n;
    float x[8];
    float want[8];
} unary_case_f32;

static const unary_case_f32 unary_f32_cases[] = {
    {CLF_UNARY_NEG, 4, {1, -0.0f, INFINITY, NAN}, {-1, 0.0f, -INFINITY, NAN}},
    {CLF_UNARY_ABS, 4, {-3, -0.0f, -INFINITY, NAN}, {3, 0.0f, INFINITY, NAN}},
    {CLF_UNARY_EXP, 6, {0, 1, -1, 2, -INFINITY, 100}, {1, 2.7182818f, 0.36787944f, 7.3890561f, 0, INFINITY}},
    {CLF_UNARY_LOG, 6, {1, 2.7182818f, 0.5f, 0, -1, INFINITY}, {0, 1, -0.69314718f, -INFINITY, NAN, INFINITY}},
    {CLF_UNARY_SQRT, 5, {4, 2, 0, -1, -0.0f}, {2, 1.4142135f, 0, NAN, -0.0f}},
    {CLF_UNARY_RSQRT, 4, {4, 0.25f, 0, INFINITY}, {0.5f, 2, INFINITY, 0}},
    {CLF_UNARY_RECIPROCAL, 4, {2, -4, 0, -0.0f}, {0.5f, -0.25f, INFINITY, -INFINITY}},
    {CLF_UNARY_SIN, 3, {0, 1, -0.5f}, {0, 0.84147098f, -0.47942554f}},
    {CLF_UNARY_COS, 3, {0, 1, 3.14159265f}, {1, 0.54030231f, -1}},
    {CLF_UNARY_TANH, 5, {0, 1, -1, 20, -INFINITY}, {0, 0.76159416f, -0.76159416f, 1, -1}},
    {CLF_UNARY_SIGMOID, 6, {0, 1, -1, INFINITY, -INFINITY, NAN}, {0.5f, 0.73105858f, 0.26894142f, 1, 0, NAN}},
    {CLF_UNARY_RELU, 6, {-1, 2, -0.0f, NAN, -INFINITY, INFINITY}, {0, 2, -0.0f, NAN, 0, INFINITY}},
    {CLF_UNARY_GELU, 5, {0, 1, -1, 2, INFINITY}, {0, 0.84134475f, -0.15865525f, 1.9544997f, INFINITY}},
    {CLF_UNARY_SILU, 5, {0, 1, -1, 2, INFINITY}, {0, 0.73105858f, -0.26894142f, 1.7615942f, INFINITY}},
    {CLF_UNARY_ERF, 5, {0, 0.5f, -1, INFINITY, -INFINITY}, {0, 0.52049988f, -0.84270079f, 1, -1}},
    {CLF_UNARY_FLOOR, 5, {1.5f, -1.5f, -0.0f, 2, -0.5f}, {1, -2, -0.0f, 2, -1}},
    {CLF_UNARY_CEIL, 5, {1.5f, -1.5f, -0.5f, 2, 0.25f}, {2, -1, -0.0f, 2, 1}},
    {CLF_UNARY_SIGN, 7, {3, -2, 0, -0.0f, NAN, INFINITY, -1e-30f}, {1, -1, 0, -0.0f, NAN, 1, -1}},
};

/* Gather and concat on values worked out by hand. */
START_TEST(gather_and_concat_values)
{
    clf_graph *g = clf_graph_create();
    const int64_t ts[2] = {3, 2}, is[2] = {2, 2};
    const float table[6] = {10, 11, 20, 21, 30, 31};
    const int64_t ids[4] = {2, -1, 0, 7}; /* -1 is the last row; 7 is clamped to 2 */
    clf_tensor t = clf_constant(g, CLF_F32, 2, ts, table);
    clf_tensor i = clf_constant(g, CLF_I64, 2, is, ids);
    clf_graph_output(g, "rows", clf_gather(g, t, i, 0));      /* [2, 2, 2] */
    const int32_t col = -1;
    clf_graph_output(g, "col", clf_gather(g, t, clf_constant(g, CLF_I32, 0, NULL, &col), 1)); /* [3] */
    /* Four parts: more operands than a pointwise op has (the interpreter
     * freed values still to be read when it looked at three). */
    clf_tensor parts[4] = {t, clf_neg(g, t), t, clf_abs(g, clf_neg(g, t))};
    clf_graph_output(g, "cat", clf_concat(g, 4, parts, 1));   /* [3, 8] */
    const int64_t es[2] = {2, 2};
    const int64_t eidx[4] = {1, 0, -1, 9}; /* rows picked per column: 1, 0 | 2 (from the end), 2 (clamped) */
    clf_graph_output(g, "elems", clf_gather_elements(g, t, clf_constant(g, CLF_I64, 2, es, eidx), 0));
    expect_graph_ok(g);
    float rows[8], colv[3], cat[24], elems[4];
    clf_host_binding out[4] = {{"rows", rows}, {"col", colv}, {"cat", cat}, {"elems", elems}};
    char msg[256];
    ck_assert_int_eq(clf_reference_run(g, 0, NULL, 4, out, msg, sizeof msg), CLF_OK);
    const float want_elems[4] = {20, 11, 30, 31};
    expect_f32(elems, want_elems, 4, 0, "gather_elements");
    const float want_rows[8] = {30, 31, 30, 31, 10, 11, 30, 31};
    expect_f32(rows, want_rows, 8, 0, "gather rows");
    const float want_col[3] = {11, 21, 31};
    expect_f32(colv, want_col, 3, 0, "gather col");
    const float want_cat[24] = {10, 11, -10, -11, 10, 11, 10, 11, 20, 21, -20, -21, 20, 21, 20, 21,
                                30, 31, -30, -31, 30, 31, 30, 31};
    expect_f32(cat, want_cat, 24, 0, "concat");
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(unary_f32_ops)
{
    for (size_t c = 0; c < NELEMS(unary_f32_cases); c++) {
        const unary_case_f32 *k = &unary_f32_cases[c];
        clf_graph *g = clf_graph_create();
        int64_t shape[1] = {(int64_t)k->n};
        clf_tensor x = clf_input(g, "x", CLF_F32, 1, shape);
        clf_graph_output(g, "y", clf_unary(g, k->op, x));
        expect_graph_ok(g);
        float y[8];
        run_xy(g, k->x, y);
        char what[64];
        snprintf(what, sizeof what, "unary op %d", (int)k->op);
        expect_f32(y, k->want, k->n, 2e-7, what);
        clf_graph_destroy(&g);
    }
}
END_TEST

START_TEST(unary_f32_named_builders)
{
    /* The per-op builders record the same node as clf_unary. */
    clf_graph *g = clf_graph_create();
    int64_t shape[1] = {3};
    clf_tensor x = clf_input(g, "x", CLF_F32, 1, shape);
    clf_graph_output(g, "y", clf_relu(g, clf_neg(g, x)));
    expect_graph_ok(g);
    float xv[3] = {1, -2, 0}, y[3], want[3] = {0, 2, -0.0f};
    run_xy(g, xv, y);
    expect_f32(y, want, 3, 0, "relu(neg(x))");
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(unary_i32_ops)
{
    static const struct {
        clf_unary_op op;
        int32_t x[5];
        int32_t want[5];
    } cases[] = {
        {CLF_UNARY_NEG, {5, -7, 0, INT32_MIN, INT32_MAX}, {-5, 7, 0, INT32_MIN, -INT32_MAX}},
        {CLF_UNARY_ABS, {-5, 3, 0, INT32_MIN, INT32_MAX}, {5, 3, 0, INT32_MIN, INT32_MAX}},
        {CLF_UNARY_SIGN, {-9, 0, 12, INT32_MIN, INT32_MAX}, {-1, 0, 1, -1, 1}},
    };
    for (size_t c = 0; c < NELEMS(cases); c++) {
        clf_graph *g = clf_graph_create();
        int64_t shape[1] = {5};
        clf_tensor x = clf_input(g, "x", CLF_I32, 1, shape);
        clf_graph_output(g, "y", clf_unary(g, cases[c].op, x));
        expect_graph_ok(g);
        int32_t y[5];
        run_xy(g, cases[c].x, y);
        expect_i32(y, cases[c].want, 5, "i32 unary");
        clf_graph_destroy(&g);
    }
}
END_TEST

START_TEST(unary_bool_not)
{
    clf_graph *g = clf_graph_create();
    int64_t shape[1] = {4};
    clf_tensor x = clf_input(g, "x", CLF_BOOL, 1, shape);
    clf_graph_output(g, "y", clf_logical_not(g, x));
    expect_graph_ok(g);
    uint8_t xv[4] = {0, 1, 1, 0}, y[4], want[4] = {1, 0, 0, 1};
    run_xy(g, xv, y);
    expect_bool(y, want, 4, "not");
    clf_graph_destroy(&g);
}
END_TEST

/* ---- binary ----------------------------------------------------------- */

typedef struct binary_case_f32 {
    clf_binary_op op;
    size_t n;
    float a[6], b[6], want[6];
} binary_case_f32;

static const binary_case_f32 binary_f32_cases[] = {
    {CLF_BINARY_ADD, 4, {1, 16777216, INFINITY, -0.0f}, {2, 1, -INFINITY, -0.0f}, {3, 16777216, NAN, -0.0f}},
    {CLF_BINARY_SUB, 3, {5, 0, INFINITY}, {7, 0, INFINITY}, {-2, 0, NAN}},
    {CLF_BINARY_MUL, 4, {3, -0.0f, INFINITY, 1e30f}, {-2, 5, 0, 1e30f}, {-6, -0.0f, NAN, INFINITY}},
    {CLF_BINARY_DIV, 5, {1, -1, 0, 1, 7}, {0, 0, 0, 3, -2}, {INFINITY, -INFINITY, NAN, 0.33333334f, -3.5f}},
    {CLF_BINARY_POW, 5, {2, 4, -8, 0, 2}, {10, 0.5f, 0.33333334f, 0, -1}, {1024, 2, NAN, 1, 0.5f}},
    {CLF_BINARY_MAXIMUM, 5, {1, 3, NAN, 1, -INFINITY}, {2, 2, 1, NAN, -5}, {2, 3, NAN, NAN, -5}},
    {CLF_BINARY_MINIMUM, 5, {1, 3, NAN, 1, INFINITY}, {2, 2, 1, NAN, 5}, {1, 2, NAN, NAN, 5}},
};

START_TEST(binary_f32_ops)
{
    for (size_t c = 0; c < NELEMS(binary_f32_cases); c++) {
        const binary_case_f32 *k = &binary_f32_cases[c];
        clf_graph *g = clf_graph_create();
        int64_t shape[1] = {(int64_t)k->n};
        clf_tensor a = clf_input(g, "a", CLF_F32, 1, shape);
        clf_tensor b = clf_input(g, "b", CLF_F32, 1, shape);
        clf_graph_output(g, "y", clf_binary(g, k->op, a, b));
        expect_graph_ok(g);
        float y[6];
        run_aby(g, k->a, k->b, y);
        char what[64];
        snprintf(what, sizeof what, "binary op %d", (int)k->op);
        expect_f32(y, k->want, k->n, 2e-7, what);
        clf_graph_destroy(&g);
    }
}
END_TEST

START_TEST(binary_i32_wrap_and_division)
{
    static const struct {
        clf_binary_op op;
        int32_t a[6], b[6], want[6];
    } cases[] = {
        {CLF_BINARY_ADD, {INT32_MAX, INT32_MIN, 1, -1, 0, 100}, {1, -1, 2, -2, 0, -100},
         {INT32_MIN, INT32_MAX, 3, -3, 0, 0}},
        {CLF_BINARY_SUB, {INT32_MIN, INT32_MAX, 0, 5, -5, 0}, {1, -1, INT32_MIN, 7, -7, 0},
         {INT32_MAX, INT32_MIN, INT32_MIN, -2, 2, 0}},
        {CLF_BINARY_MUL, {65536, 46341, -3, INT32_MIN, 7, 0}, {65536, 46341, 4, -1, -6, 9},
         {0, -2147479015, -12, INT32_MIN, -42, 0}},
        {CLF_BINARY_DIV, {7, -7, 7, 5, INT32_MIN, -7}, {2, 2, -2, 0, -1, 0},
         {3, -3, -3, 0, INT32_MIN, 0}},
        {CLF_BINARY_MAXIMUM, {1, -5, INT32_MIN, 3, 0, 9}, {2, -6, INT32_MAX, 3, -1, 8},
         {2, -5, INT32_MAX, 3, 0, 9}},
        {CLF_BINARY_MINIMUM, {1, -5, INT32_MIN, 3, 0, 9}, {2, -6, INT32_MAX, 3, -1, 8},
         {1, -6, INT32_MIN, 3, -1, 8}},
    };
    for (size_t c = 0; c < NELEMS(cases); c++) {
        clf_graph *g = clf_graph_create();
        int64_t shape[1] = {6};
        clf_tensor a = clf_input(g, "a", CLF_I32, 1, shape);
        clf_tensor b = clf_input(g, "b", CLF_I32, 1, shape);
        clf_graph_output(g, "y", clf_binary(g, cases[c].op, a, b));
        expect_graph_ok(g);
        int32_t y[6];
        run_aby(g, cases[c].a, cases[c].b, y);
        char what[64];
        snprintf(what, sizeof what, "i32 binary op %d", (int)cases[c].op);
        expect_i32(y, cases[c].want, 6, what);
        clf_graph_destroy(&g);
    }
}
END_TEST

START_TEST(comparisons_f32_nan)
{
    static const float a[5] = {1, 2, NAN, NAN, -0.0f};
    static const float b[5] = {2, 2, 1, NAN, 0.0f};
    static const struct {
        clf_binary_op op;
        uint8_t want[5];
    } cases[] = {
        {CLF_BINARY_EQ, {0, 1, 0, 0, 1}}, {CLF_BINARY_NE, {1, 0, 1, 1, 0}},
        {CLF_BINARY_LT, {1, 0, 0, 0, 0}}, {CLF_BINARY_LE, {1, 1, 0, 0, 1}},
        {CLF_BINARY_GT, {0, 0, 0, 0, 0}}, {CLF_BINARY_GE, {0, 1, 0, 0, 1}},
    };
    for (size_t c = 0; c < NELEMS(cases); c++) {
        clf_graph *g = clf_graph_create();
        int64_t shape[1] = {5};
        clf_tensor ta = clf_input(g, "a", CLF_F32, 1, shape);
        clf_tensor tb = clf_input(g, "b", CLF_F32, 1, shape);
        clf_graph_output(g, "y", clf_binary(g, cases[c].op, ta, tb));
        expect_graph_ok(g);
        clf_dtype dt;
        clf_tensor_dtype(g, clf_binary(g, cases[c].op, ta, tb), &dt);
        ck_assert_int_eq(dt, CLF_BOOL);
        uint8_t y[5];
        run_aby(g, a, b, y);
        expect_bool(y, cases[c].want, 5, "f32 comparison");
        clf_graph_destroy(&g);
    }
}
END_TEST

START_TEST(comparisons_i32_and_bool)
{
    static const int32_t a[4] = {INT32_MIN, 3, -1, INT32_MAX};
    static const int32_t b[4] = {INT32_MAX, 3, 0, INT32_MIN};
    static const struct {
        clf_binary_op op;
        uint8_t want[4];
    } cases[] = {
        {CLF_BINARY_EQ, {0, 1, 0, 0}}, {CLF_BINARY_NE, {1, 0, 1, 1}},
        {CLF_BINARY_LT, {1, 0, 1, 0}}, {CLF_BINARY_LE, {1, 1, 1, 0}},
        {CLF_BINARY_GT, {0, 0, 0, 1}}, {CLF_BINARY_GE, {0, 1, 0, 1}},
    };
    for (size_t c = 0; c < NELEMS(cases); c++) {
        clf_graph *g = clf_graph_create();
        int64_t shape[1] = {4};
        clf_tensor ta = clf_input(g, "a", CLF_I32, 1, shape);
        clf_tensor tb = clf_input(g, "b", CLF_I32, 1, shape);
        clf_graph_output(g, "y", clf_binary(g, cases[c].op, ta, tb));
        expect_graph_ok(g);
        uint8_t y[4];
        run_aby(g, a, b, y);
        expect_bool(y, cases[c].want, 4, "i32 comparison");
        clf_graph_destroy(&g);
    }

    static const uint8_t p[4] = {0, 0, 1, 1}, q[4] = {0, 1, 0, 1};
    static const struct {
        clf_binary_op op;
        uint8_t want[4];
    } bcases[] = {
        {CLF_BINARY_AND, {0, 0, 0, 1}},
        {CLF_BINARY_OR, {0, 1, 1, 1}},
        {CLF_BINARY_EQ, {1, 0, 0, 1}},
        {CLF_BINARY_NE, {0, 1, 1, 0}},
    };
    for (size_t c = 0; c < NELEMS(bcases); c++) {
        clf_graph *g = clf_graph_create();
        int64_t shape[1] = {4};
        clf_tensor ta = clf_input(g, "a", CLF_BOOL, 1, shape);
        clf_tensor tb = clf_input(g, "b", CLF_BOOL, 1, shape);
        clf_graph_output(g, "y", clf_binary(g, bcases[c].op, ta, tb));
        expect_graph_ok(g);
        uint8_t y[4];
        run_aby(g, p, q, y);
        expect_bool(y, bcases[c].want, 4, "bool binary");
        clf_graph_destroy(&g);
    }
}
END_TEST

/* ---- broadcasting ----------------------------------------------------- */

START_TEST(broadcast_row_and_column)
{
    /* [2,3] + [3]: the row repeats. */
    clf_graph *g = clf_graph_create();
    int64_t sa[2] = {2, 3}, sb[1] = {3};
    clf_tensor a = clf_input(g, "a", CLF_F32, 2, sa);
    clf_tensor b = clf_input(g, "b", CLF_F32, 1, sb);
    clf_graph_output(g, "y", clf_add(g, a, b));
    expect_graph_ok(g);
    float av[6] = {1, 2, 3, 4, 5, 6}, bv[3] = {10, 20, 30}, y[6];
    float want[6] = {11, 22, 33, 14, 25, 36};
    run_aby(g, av, bv, y);
    expect_f32(y, want, 6, 0, "[2,3] + [3]");
    clf_graph_destroy(&g);

    /* [2,1] * [1,3] -> [2,3]: an outer product. */
    g = clf_graph_create();
    int64_t sc[2] = {2, 1}, sd[2] = {1, 3};
    a = clf_input(g, "a", CLF_F32, 2, sc);
    b = clf_input(g, "b", CLF_F32, 2, sd);
    clf_tensor p = clf_mul(g, a, b);
    clf_graph_output(g, "y", p);
    expect_graph_ok(g);
    int rank;
    int64_t shape[CLF_MAX_RANK];
    clf_tensor_shape(g, p, &rank, shape);
    ck_assert_int_eq(rank, 2);
    ck_assert(shape[0] == 2 && shape[1] == 3);
    float cv[2] = {2, 3}, dv[3] = {1, 10, 100};
    float want2[6] = {2, 20, 200, 3, 30, 300};
    run_aby(g, cv, dv, y);
    expect_f32(y, want2, 6, 0, "[2,1] * [1,3]");
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(broadcast_rank0_and_rank3)
{
    /* A rank-0 input against [2,2], and [2,1,2] against [3,1] -> [2,3,2]. */
    clf_graph *g = clf_graph_create();
    int64_t sb[2] = {2, 2};
    clf_tensor a = clf_input(g, "a", CLF_I32, 0, NULL);
    clf_tensor b = clf_input(g, "b", CLF_I32, 2, sb);
    clf_graph_output(g, "y", clf_sub(g, a, b));
    expect_graph_ok(g);
    int32_t av = 10, bv[4] = {1, 2, 3, 4}, y[4], want[4] = {9, 8, 7, 6};
    run_aby(g, &av, bv, y);
    expect_i32(y, want, 4, "scalar - [2,2]");
    clf_graph_destroy(&g);

    g = clf_graph_create();
    int64_t s1[3] = {2, 1, 2}, s2[2] = {3, 1};
    a = clf_input(g, "a", CLF_I32, 3, s1);
    b = clf_input(g, "b", CLF_I32, 2, s2);
    clf_graph_output(g, "y", clf_add(g, a, b));
    expect_graph_ok(g);
    int32_t a3[4] = {1, 2, 3, 4}, b3[3] = {100, 200, 300}, y3[12];
    int32_t want3[12] = {101, 102, 201, 202, 301, 302, 103, 104, 203, 204, 303, 304};
    run_aby(g, a3, b3, y3);
    expect_i32(y3, want3, 12, "[2,1,2] + [3,1]");
    clf_graph_destroy(&g);
}
END_TEST

/* ---- where, clip, cast ------------------------------------------------ */

START_TEST(where_broadcast)
{
    /* cond [2,1], a [3], b scalar constant -> [2,3]. */
    clf_graph *g = clf_graph_create();
    int64_t sc[2] = {2, 1}, sa[1] = {3};
    clf_tensor c = clf_input(g, "x", CLF_BOOL, 2, sc);
    clf_tensor a = clf_input(g, "a", CLF_F32, 1, sa);
    clf_tensor b = clf_scalar(g, CLF_F32, -1.5);
    clf_graph_output(g, "y", clf_where(g, c, a, b));
    expect_graph_ok(g);
    uint8_t cv[2] = {1, 0};
    float av[3] = {1, NAN, 3}, y[6];
    float want[6] = {1, NAN, 3, -1.5f, -1.5f, -1.5f};
    clf_host_binding in[] = {{"a", av}, {"x", cv}};
    clf_host_binding out[] = {{"y", y}};
    char msg[256];
    ck_assert_int_eq(clf_reference_run(g, 2, in, 1, out, msg, sizeof msg), CLF_OK);
    expect_f32(y, want, 6, 0, "where");
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(clip_f32)
{
    static const struct {
        double lo, hi;
        float want[6];
    } cases[] = {
        {-1, 1, {-1, -0.5f, 0, 1, NAN, 1}},
        {-INFINITY, 0.25, {-3, -0.5f, 0, 0.25f, NAN, 0.25f}},
        {0, INFINITY, {0, 0, 0, 2, NAN, INFINITY}},
        {2, 1, {1, 1, 1, 1, NAN, 1}}, /* lo > hi gives hi */
    };
    static const float x[6] = {-3, -0.5f, 0, 2, NAN, INFINITY};
    for (size_t c = 0; c < NELEMS(cases); c++) {
        clf_graph *g = clf_graph_create();
        int64_t shape[1] = {6};
        clf_tensor t = clf_input(g, "x", CLF_F32, 1, shape);
        clf_graph_output(g, "y", clf_clip(g, t, cases[c].lo, cases[c].hi));
        expect_graph_ok(g);
        float y[6];
        run_xy(g, x, y);
        expect_f32(y, cases[c].want, 6, 0, "clip f32");
        clf_graph_destroy(&g);
    }
}
END_TEST

START_TEST(clip_i32)
{
    static const struct {
        double lo, hi;
        int32_t want[5];
    } cases[] = {
        {-INFINITY, 2.7, {INT32_MIN, -3, 0, 2, 2}},   /* 2.7 -> 2 */
        {-2.7, INFINITY, {-2, -2, 0, 3, INT32_MAX}},  /* -2.7 -> -2 */
        {-1e20, 1e20, {INT32_MIN, -3, 0, 3, INT32_MAX}},
        {1, 0, {0, 0, 0, 0, 0}},
    };
    static const int32_t x[5] = {INT32_MIN, -3, 0, 3, INT32_MAX};
    for (size_t c = 0; c < NELEMS(cases); c++) {
        clf_graph *g = clf_graph_create();
        int64_t shape[1] = {5};
        clf_tensor t = clf_input(g, "x", CLF_I32, 1, shape);
        clf_graph_output(g, "y", clf_clip(g, t, cases[c].lo, cases[c].hi));
        expect_graph_ok(g);
        int32_t y[5];
        run_xy(g, x, y);
        char what[64];
        snprintf(what, sizeof what, "clip i32 case %zu", c);
        expect_i32(y, cases[c].want, 5, what);
        clf_graph_destroy(&g);
    }
}
END_TEST

START_TEST(cast_rules)
{
    int64_t shape[1] = {8};
    static const float xf[8] = {1.9f, -1.9f, NAN, 3e9f, -3e9f, INFINITY, -0.0f, 2147483520.0f};

    /* f32 -> i32: truncate, saturate, NaN -> 0. */
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_F32, 1, shape);
    clf_graph_output(g, "y", clf_cast(g, x, CLF_I32));
    expect_graph_ok(g);
    int32_t yi[8];
    int32_t want_i[8] = {1, -1, 0, INT32_MAX, INT32_MIN, INT32_MAX, 0, 2147483520};
    run_xy(g, xf, yi);
    expect_i32(yi, want_i, 8, "f32 -> i32");
    clf_graph_destroy(&g);

    /* f32 -> bool: x != 0, NaN -> 1. */
    g = clf_graph_create();
    x = clf_input(g, "x", CLF_F32, 1, shape);
    clf_graph_output(g, "y", clf_cast(g, x, CLF_BOOL));
    expect_graph_ok(g);
    uint8_t yb[8], want_b[8] = {1, 1, 1, 1, 1, 1, 0, 1};
    run_xy(g, xf, yb);
    expect_bool(yb, want_b, 8, "f32 -> bool");
    clf_graph_destroy(&g);

    /* i32 -> f32 (round to nearest) and i32 -> bool. */
    static const int32_t xi[8] = {0, -5, 16777217, INT32_MAX, INT32_MIN, 1, -1, 123};
    g = clf_graph_create();
    x = clf_input(g, "x", CLF_I32, 1, shape);
    clf_graph_output(g, "y", clf_cast(g, x, CLF_F32));
    clf_graph_output(g, "z", clf_cast(g, x, CLF_BOOL));
    expect_graph_ok(g);
    float yf[8];
    float want_f[8] = {0, -5, 16777216.0f, 2147483648.0f, -2147483648.0f, 1, -1, 123};
    uint8_t want_zb[8] = {0, 1, 1, 1, 1, 1, 1, 1};
    {
        clf_host_binding in[] = {{"x", (void *)xi}};
        clf_host_binding out[] = {{"z", yb}, {"y", yf}};
        ck_assert_int_eq(clf_reference_run(g, 1, in, 2, out, NULL, 0), CLF_OK);
    }
    expect_f32(yf, want_f, 8, 0, "i32 -> f32");
    expect_bool(yb, want_zb, 8, "i32 -> bool");
    clf_graph_destroy(&g);

    /* bool -> f32, bool -> i32, and same-dtype casts copy. */
    static const uint8_t xb[8] = {0, 1, 1, 0, 0, 1, 0, 1};
    g = clf_graph_create();
    x = clf_input(g, "x", CLF_BOOL, 1, shape);
    clf_graph_output(g, "f", clf_cast(g, x, CLF_F32));
    clf_graph_output(g, "i", clf_cast(g, x, CLF_I32));
    clf_graph_output(g, "b", clf_cast(g, x, CLF_BOOL));
    expect_graph_ok(g);
    float bf[8];
    int32_t bi[8];
    uint8_t bb[8];
    {
        clf_host_binding in[] = {{"x", (void *)xb}};
        clf_host_binding out[] = {{"f", bf}, {"i", bi}, {"b", bb}};
        ck_assert_int_eq(clf_reference_run(g, 1, in, 3, out, NULL, 0), CLF_OK);
    }
    float want_bf[8] = {0, 1, 1, 0, 0, 1, 0, 1};
    int32_t want_bi[8] = {0, 1, 1, 0, 0, 1, 0, 1};
    expect_f32(bf, want_bf, 8, 0, "bool -> f32");
    expect_i32(bi, want_bi, 8, "bool -> i32");
    expect_bool(bb, xb, 8, "bool -> bool");
    clf_graph_destroy(&g);

    /* f32 -> f32 keeps NaN, -0.0 and infinities. */
    g = clf_graph_create();
    x = clf_input(g, "x", CLF_F32, 1, shape);
    clf_graph_output(g, "y", clf_cast(g, x, CLF_F32));
    expect_graph_ok(g);
    float ff[8];
    run_xy(g, xf, ff);
    expect_f32(ff, xf, 8, 0, "f32 -> f32");
    clf_graph_destroy(&g);
}
END_TEST

/* ---- movement --------------------------------------------------------- */

START_TEST(transpose_2d_and_3d)
{
    clf_graph *g = clf_graph_create();
    int64_t s[2] = {2, 3};
    clf_tensor x = clf_input(g, "x", CLF_I32, 2, s);
    clf_graph_output(g, "y", clf_transpose(g, x, 0, NULL)); /* reverse: [3,2] */
    expect_graph_ok(g);
    int32_t xv[6] = {0, 1, 2, 3, 4, 5}, y[6], want[6] = {0, 3, 1, 4, 2, 5};
    run_xy(g, xv, y);
    expect_i32(y, want, 6, "transpose 2d");
    clf_graph_destroy(&g);

    /* [2,3,4] with perm {1,2,0} -> [3,4,2]; out[i][j][k] = in[k][i][j]. */
    g = clf_graph_create();
    int64_t s3[3] = {2, 3, 4};
    x = clf_input(g, "x", CLF_I32, 3, s3);
    int perm[3] = {1, 2, 0};
    clf_tensor t = clf_transpose(g, x, 3, perm);
    clf_graph_output(g, "y", t);
    expect_graph_ok(g);
    int rank;
    int64_t shape[CLF_MAX_RANK];
    clf_tensor_shape(g, t, &rank, shape);
    ck_assert(rank == 3 && shape[0] == 3 && shape[1] == 4 && shape[2] == 2);
    int32_t in3[24], out3[24], want3[24];
    for (int i = 0; i < 24; i++)
        in3[i] = i;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 2; k++)
                want3[(i * 4 + j) * 2 + k] = in3[(k * 3 + i) * 4 + j];
    run_xy(g, in3, out3);
    expect_i32(out3, want3, 24, "transpose 3d");
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(reshape_infer_and_zero)
{
    /* [2,3,4] -> reshape {0, -1} = [2,12] -> reshape {4, -1} = [4,6];
     * the element sequence is unchanged. */
    clf_graph *g = clf_graph_create();
    int64_t s[3] = {2, 3, 4};
    clf_tensor x = clf_input(g, "x", CLF_F32, 3, s);
    int64_t r1[2] = {0, -1}, r2[2] = {4, -1};
    clf_tensor a = clf_reshape(g, x, 2, r1);
    clf_tensor b = clf_reshape(g, a, 2, r2);
    clf_graph_output(g, "y", b);
    expect_graph_ok(g);
    int rank;
    int64_t shape[CLF_MAX_RANK];
    clf_tensor_shape(g, a, &rank, shape);
    ck_assert(rank == 2 && shape[0] == 2 && shape[1] == 12);
    clf_tensor_shape(g, b, &rank, shape);
    ck_assert(rank == 2 && shape[0] == 4 && shape[1] == 6);
    float xv[24], y[24];
    for (int i = 0; i < 24; i++)
        xv[i] = (float)i * 0.5f;
    run_xy(g, xv, y);
    expect_f32(y, xv, 24, 0, "reshape");
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(expand_numpy)
{
    /* [3,1] expanded to [2,3,4]: out[i][j][k] = in[j]. */
    clf_graph *g = clf_graph_create();
    int64_t s[2] = {3, 1}, to[3] = {2, 3, 4};
    clf_tensor x = clf_input(g, "x", CLF_I32, 2, s);
    clf_graph_output(g, "y", clf_expand(g, x, 3, to));
    expect_graph_ok(g);
    int32_t xv[3] = {7, 8, 9}, y[24], want[24];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++)
                want[(i * 3 + j) * 4 + k] = xv[j];
    run_xy(g, xv, y);
    expect_i32(y, want, 24, "expand");
    clf_graph_destroy(&g);

    /* Bidirectional: [1,3] expanded with shape {2,1} gives [2,3]. */
    g = clf_graph_create();
    int64_t s2[2] = {1, 3}, to2[2] = {2, 1};
    x = clf_input(g, "x", CLF_I32, 2, s2);
    clf_graph_output(g, "y", clf_expand(g, x, 2, to2));
    expect_graph_ok(g);
    int32_t want2[6] = {7, 8, 9, 7, 8, 9};
    run_xy(g, xv, y);
    expect_i32(y, want2, 6, "expand bidirectional");
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(slice_steps)
{
    /* x = [0..9]; x[8:1:-3] = {8, 5, 2}; x[-3:] = {7, 8, 9}. */
    clf_graph *g = clf_graph_create();
    int64_t s[1] = {10};
    clf_tensor x = clf_input(g, "x", CLF_I32, 1, s);
    int64_t st1[1] = {8}, en1[1] = {1}, sp1[1] = {-3};
    int64_t st2[1] = {-3}, en2[1] = {INT64_MAX};
    clf_graph_output(g, "y", clf_slice(g, x, 1, st1, en1, NULL, sp1));
    clf_graph_output(g, "z", clf_slice(g, x, 1, st2, en2, NULL, NULL));
    expect_graph_ok(g);
    int32_t xv[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, y[3], z[3];
    clf_host_binding in[] = {{"x", xv}};
    clf_host_binding out[] = {{"y", y}, {"z", z}};
    char msg[256];
    ck_assert_int_eq(clf_reference_run(g, 1, in, 2, out, msg, sizeof msg), CLF_OK);
    int32_t wy[3] = {8, 5, 2}, wz[3] = {7, 8, 9};
    expect_i32(y, wy, 3, "slice negative step");
    expect_i32(z, wz, 3, "slice from end");
    clf_graph_destroy(&g);

    /* Out-of-range starts and ends clamp: x[-100:100:4] = {0, 4, 8} and
     * x[100:-100:-4] = {9, 5, 1}. */
    g = clf_graph_create();
    x = clf_input(g, "x", CLF_I32, 1, s);
    int64_t st3[1] = {-100}, en3[1] = {100}, sp3[1] = {4};
    int64_t st4[1] = {100}, en4[1] = {-100}, sp4[1] = {-4};
    clf_graph_output(g, "y", clf_slice(g, x, 1, st3, en3, NULL, sp3));
    clf_graph_output(g, "z", clf_slice(g, x, 1, st4, en4, NULL, sp4));
    expect_graph_ok(g);
    ck_assert_int_eq(clf_reference_run(g, 1, in, 2, out, msg, sizeof msg), CLF_OK);
    int32_t wy3[3] = {0, 4, 8}, wz3[3] = {9, 5, 1};
    expect_i32(y, wy3, 3, "slice clamped");
    expect_i32(z, wz3, 3, "slice clamped, negative step");
    clf_graph_destroy(&g);

    /* 2-D, axis 1 reversed entirely and axis 0 from 1: x[1:, ::-1] of a
     * [3,4] tensor. */
    g = clf_graph_create();
    int64_t s2[2] = {3, 4};
    x = clf_input(g, "x", CLF_I32, 2, s2);
    int64_t starts[2] = {1, -1}, ends[2] = {INT64_MAX, INT64_MIN}, steps[2] = {1, -1};
    int axes[2] = {0, 1};
    clf_graph_output(g, "y", clf_slice(g, x, 2, starts, ends, axes, steps));
    expect_graph_ok(g);
    int32_t x2[12], y2[8];
    for (int i = 0; i < 12; i++)
        x2[i] = i;
    int32_t w2[8] = {7, 6, 5, 4, 11, 10, 9, 8};
    run_xy(g, x2, y2);
    expect_i32(y2, w2, 8, "slice 2d reversed");
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(squeeze_unsqueeze)
{
    clf_graph *g = clf_graph_create();
    int64_t s[4] = {1, 3, 1, 2};
    clf_tensor x = clf_input(g, "x", CLF_F32, 4, s);
    int ax[1] = {2};
    clf_tensor a = clf_squeeze(g, x, 1, ax);  /* [1,3,2] */
    clf_tensor b = clf_squeeze(g, x, 0, NULL); /* [3,2] */
    int uax[2] = {0, 3};
    clf_tensor c = clf_unsqueeze(g, b, 2, uax); /* [1,3,2,1] */
    clf_graph_output(g, "a", a);
    clf_graph_output(g, "y", c);
    expect_graph_ok(g);
    int rank;
    int64_t shape[CLF_MAX_RANK];
    clf_tensor_shape(g, a, &rank, shape);
    ck_assert(rank == 3 && shape[0] == 1 && shape[1] == 3 && shape[2] == 2);
    clf_tensor_shape(g, c, &rank, shape);
    ck_assert(rank == 4 && shape[0] == 1 && shape[1] == 3 && shape[2] == 2 && shape[3] == 1);
    float xv[6] = {1, 2, 3, 4, 5, 6}, ya[6], yc[6];
    clf_host_binding in[] = {{"x", xv}};
    clf_host_binding out[] = {{"a", ya}, {"y", yc}};
    ck_assert_int_eq(clf_reference_run(g, 1, in, 2, out, NULL, 0), CLF_OK);
    expect_f32(ya, xv, 6, 0, "squeeze");
    expect_f32(yc, xv, 6, 0, "unsqueeze");
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(movement_chained)
{
    /* x [2,3] -> transpose [3,2] -> slice rows reversed [3,2] -> reshape [6]
     * -> + [6] constant. x = {{0,1,2},{3,4,5}}; xT = {{0,3},{1,4},{2,5}};
     * reversed rows = {{2,5},{1,4},{0,3}}. */
    clf_graph *g = clf_graph_create();
    int64_t s[2] = {2, 3};
    clf_tensor x = clf_input(g, "x", CLF_F32, 2, s);
    clf_tensor t = clf_transpose(g, x, 0, NULL);
    int64_t st[1] = {-1}, en[1] = {INT64_MIN}, sp[1] = {-1};
    int ax[1] = {0};
    clf_tensor sl = clf_slice(g, t, 1, st, en, ax, sp);
    int64_t flat[1] = {-1};
    clf_tensor r = clf_reshape(g, sl, 1, flat);
    float cv[6] = {100, 200, 300, 400, 500, 600};
    int64_t cs[1] = {6};
    clf_tensor c = clf_constant(g, CLF_F32, 1, cs, cv);
    clf_graph_output(g, "y", clf_add(g, r, c));
    expect_graph_ok(g);
    float xv[6] = {0, 1, 2, 3, 4, 5}, y[6];
    float want[6] = {102, 205, 301, 404, 500, 603};
    run_xy(g, xv, y);
    expect_f32(y, want, 6, 0, "chained movement");
    clf_graph_destroy(&g);

    /* unsqueeze + expand + transpose feeding a binary op with broadcasting:
     * v [3] -> [3,1] -> expand [3,2] -> transpose [2,3] = {{1,10,100},
     * {1,10,100}}, times v [3] broadcast over the rows. */
    g = clf_graph_create();
    int64_t sv[1] = {3};
    clf_tensor v = clf_input(g, "x", CLF_F32, 1, sv);
    int uax[1] = {1};
    int64_t to[2] = {3, 2};
    clf_tensor e = clf_transpose(g, clf_expand(g, clf_unsqueeze(g, v, 1, uax), 2, to), 0, NULL);
    clf_graph_output(g, "y", clf_mul(g, e, v));
    expect_graph_ok(g);
    float vv[3] = {1, 10, 100};
    float want2[6] = {1, 100, 10000, 1, 100, 10000};
    run_xy(g, vv, y);
    expect_f32(y, want2, 6, 0, "expand/transpose chain");
    clf_graph_destroy(&g);
}
END_TEST

/* ---- rank 0, zero size, constants, outputs ---------------------------- */

START_TEST(rank0)
{
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_F32, 0, NULL);
    clf_tensor two = clf_scalar(g, CLF_F32, 2.0);
    clf_graph_output(g, "y", clf_mul(g, clf_neg(g, x), two));
    expect_graph_ok(g);
    float xv = 1.25f, y = 0;
    run_xy(g, &xv, &y);
    ck_assert(y == -2.5f);
    clf_graph_destroy(&g);

    /* A rank-0 value reshaped to [1,1] and expanded to [2,2]. */
    g = clf_graph_create();
    x = clf_input(g, "x", CLF_I32, 0, NULL);
    int64_t one[2] = {1, 1}, to[2] = {2, 2};
    clf_graph_output(g, "y", clf_expand(g, clf_reshape(g, x, 2, one), 2, to));
    expect_graph_ok(g);
    int32_t xi = -4, yi[4], want[4] = {-4, -4, -4, -4};
    run_xy(g, &xi, yi);
    expect_i32(yi, want, 4, "rank0 expand");
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(zero_size)
{
    /* [0,3] + [3] -> [0,3]; NULL data is allowed for both. */
    clf_graph *g = clf_graph_create();
    int64_t sa[2] = {0, 3}, sb[1] = {3};
    clf_tensor a = clf_input(g, "a", CLF_F32, 2, sa);
    clf_tensor b = clf_input(g, "b", CLF_F32, 1, sb);
    clf_tensor s = clf_add(g, a, b);
    int perm[2] = {1, 0};
    clf_graph_output(g, "y", s);
    clf_graph_output(g, "t", clf_transpose(g, s, 2, perm));
    expect_graph_ok(g);
    float bv[3] = {1, 2, 3};
    clf_host_binding in[] = {{"a", NULL}, {"b", bv}};
    clf_host_binding out[] = {{"y", NULL}, {"t", NULL}};
    char msg[256];
    clf_status st = clf_reference_run(g, 2, in, 2, out, msg, sizeof msg);
    ck_assert_msg(st == CLF_OK, "%s", msg);
    clf_graph_destroy(&g);

    /* A zero-size slice of a non-empty tensor. */
    g = clf_graph_create();
    int64_t sx[1] = {4};
    clf_tensor x = clf_input(g, "x", CLF_I32, 1, sx);
    int64_t st1[1] = {2}, en1[1] = {2};
    clf_graph_output(g, "y", clf_slice(g, x, 1, st1, en1, NULL, NULL));
    expect_graph_ok(g);
    int32_t xv[4] = {1, 2, 3, 4};
    clf_host_binding in2[] = {{"x", xv}};
    clf_host_binding out2[] = {{"y", NULL}};
    ck_assert_int_eq(clf_reference_run(g, 1, in2, 1, out2, NULL, 0), CLF_OK);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(outputs_shared_and_aliased)
{
    /* One node under two names, an input as an output, and an output
     * written over its own input's memory. */
    clf_graph *g = clf_graph_create();
    int64_t s[1] = {3};
    clf_tensor x = clf_input(g, "x", CLF_F32, 1, s);
    clf_tensor n = clf_neg(g, x);
    clf_graph_output(g, "y", n);
    clf_graph_output(g, "y2", n);
    clf_graph_output(g, "same", x);
    /* An unused branch is not evaluated but must not disturb anything. */
    (void)clf_log(g, clf_exp(g, x));
    expect_graph_ok(g);
    float xv[3] = {1, 2, 3}, y2[3], same[3];
    clf_host_binding in[] = {{"x", xv}};
    clf_host_binding out[] = {{"same", same}, {"y", xv}, {"y2", y2}};
    ck_assert_int_eq(clf_reference_run(g, 1, in, 3, out, NULL, 0), CLF_OK);
    float want[3] = {-1, -2, -3}, orig[3] = {1, 2, 3};
    expect_f32(xv, want, 3, 0, "aliased output");
    expect_f32(y2, want, 3, 0, "second name");
    expect_f32(same, orig, 3, 0, "input as output");
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(constants)
{
    clf_graph *g = clf_graph_create();
    int64_t s[2] = {2, 2};
    int32_t cv[4] = {1, 2, 3, 4};
    clf_tensor c = clf_constant(g, CLF_I32, 2, s, cv);
    cv[0] = 99; /* the graph copied the data */
    clf_tensor k = clf_scalar(g, CLF_I32, 3.9); /* converted: 3 */
    clf_graph_output(g, "y", clf_mul(g, c, k));
    expect_graph_ok(g);
    int32_t y[4], want[4] = {3, 6, 9, 12};
    clf_host_binding out[] = {{"y", y}};
    ck_assert_int_eq(clf_reference_run(g, 0, NULL, 1, out, NULL, 0), CLF_OK);
    expect_i32(y, want, 4, "constants");
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(large_transpose)
{
    /* 10^6 elements through transpose + add: a check that the interpreter
     * is linear in the element count. */
    enum { N = 1000 };
    clf_graph *g = clf_graph_create();
    int64_t s[2] = {N, N};
    clf_tensor x = clf_input(g, "x", CLF_F32, 2, s);
    clf_graph_output(g, "y", clf_add(g, clf_transpose(g, x, 0, NULL), x));
    expect_graph_ok(g);
    float *xv = malloc(sizeof(float) * N * N), *y = malloc(sizeof(float) * N * N);
    ck_assert(xv && y);
    for (int i = 0; i < N * N; i++)
        xv[i] = (float)i;
    run_xy(g, xv, y);
    for (int i = 0; i < N; i += 37)
        for (int j = 0; j < N; j += 41)
            ck_assert(y[i * N + j] == (float)(j * N + i) + (float)(i * N + j));
    free(xv);
    free(y);
    clf_graph_destroy(&g);
}
END_TEST

/* ---- errors ----------------------------------------------------------- */

/* ---- reductions ------------------------------------------------------- */

typedef clf_tensor (*reduce_fn)(clf_graph *, clf_tensor, int, const int *, bool);

/* y = fn(x, axes, keepdims) for x of dtype dt and the given shape; checks
 * that the result has rank want_rank and writes its values to y. */
static void run_reduce(reduce_fn fn, clf_dtype dt, int rank, const int64_t *shape, const void *x,
                       int naxes, const int *axes, bool keepdims, int want_rank, void *y)
{
    clf_graph *g = clf_graph_create();
    clf_tensor t = fn(g, clf_input(g, "x", dt, rank, shape), naxes, axes, keepdims);
    clf_graph_output(g, "y", t);
    expect_graph_ok(g);
    int r = -1;
    clf_tensor_shape(g, t, &r, NULL);
    ck_assert_int_eq(r, want_rank);
    run_xy(g, x, y);
    clf_graph_destroy(&g);
}

START_TEST(reduce_one_axis)
{
    static const int64_t s23[2] = {2, 3};
    static const float x[6] = {1, 2, 3, 4, 5, 6};
    static const int32_t xi[6] = {1, -2, 3, 4, 5, -6};
    static const struct {
        reduce_fn fn;
        int axis;
        bool keepdims;
        size_t n;
        float want[3];
    } cases[] = {
        {clf_reduce_sum, 0, false, 3, {5, 7, 9}},   {clf_reduce_sum, 1, false, 2, {6, 15}},
        {clf_reduce_sum, -1, true, 2, {6, 15}},     {clf_reduce_prod, 0, false, 3, {4, 10, 18}},
        {clf_reduce_prod, 1, true, 2, {6, 120}},    {clf_reduce_max, 1, false, 2, {3, 6}},
        {clf_reduce_max, -2, false, 3, {4, 5, 6}},  {clf_reduce_min, 0, true, 3, {1, 2, 3}},
        {clf_reduce_min, 1, false, 2, {1, 4}},      {clf_reduce_mean, 1, false, 2, {2, 5}},
        {clf_reduce_mean, 0, true, 3, {2.5f, 3.5f, 4.5f}},
    };
    for (size_t c = 0; c < NELEMS(cases); c++) {
        float y[3];
        int axes[1] = {cases[c].axis};
        run_reduce(cases[c].fn, CLF_F32, 2, s23, x, 1, axes, cases[c].keepdims,
                   cases[c].keepdims ? 2 : 1, y);
        char what[64];
        snprintf(what, sizeof what, "f32 case %zu", c);
        expect_f32(y, cases[c].want, cases[c].n, 0, what);
    }

    static const struct {
        reduce_fn fn;
        int axis;
        size_t n;
        int32_t want[3];
    } icases[] = {
        {clf_reduce_sum, 0, 3, {5, 3, -3}}, {clf_reduce_sum, 1, 2, {2, 3}},
        {clf_reduce_prod, 1, 2, {-6, -120}}, {clf_reduce_max, 1, 2, {3, 5}},
        {clf_reduce_min, 0, 3, {1, -2, -6}},
    };
    for (size_t c = 0; c < NELEMS(icases); c++) {
        int32_t y[3];
        int axes[1] = {icases[c].axis};
        run_reduce(icases[c].fn, CLF_I32, 2, s23, xi, 1, axes, false, 1, y);
        char what[64];
        snprintf(what, sizeof what, "i32 case %zu", c);
        expect_i32(y, icases[c].want, icases[c].n, what);
    }
}
END_TEST

START_TEST(reduce_several_and_all_axes)
{
    static const int64_t shape[3] = {2, 3, 2};
    float x[12];
    for (int k = 0; k < 12; k++)
        x[k] = (float)k;
    float y[4];

    run_reduce(clf_reduce_sum, CLF_F32, 3, shape, x, 2, (const int[]){0, 2}, false, 1, y);
    expect_f32(y, (const float[]){14, 22, 30}, 3, 0, "sum {0,2}");
    run_reduce(clf_reduce_max, CLF_F32, 3, shape, x, 2, (const int[]){0, 1}, true, 3, y);
    expect_f32(y, (const float[]){10, 11}, 2, 0, "max {0,1} keepdims");
    run_reduce(clf_reduce_min, CLF_F32, 3, shape, x, 2, (const int[]){-1, 0}, false, 1, y);
    expect_f32(y, (const float[]){0, 2, 4}, 3, 0, "min {-1,0}");
    run_reduce(clf_reduce_prod, CLF_F32, 3, shape, x, 1, (const int[]){1}, false, 2, y);
    expect_f32(y, (const float[]){0, 15, 480, 693}, 4, 0, "prod {1}");
    run_reduce(clf_reduce_sum, CLF_F32, 3, shape, x, 0, NULL, false, 0, y);
    expect_f32(y, (const float[]){66}, 1, 0, "sum all");
    run_reduce(clf_reduce_mean, CLF_F32, 3, shape, x, 3, (const int[]){2, 1, 0}, true, 3, y);
    expect_f32(y, (const float[]){5.5f}, 1, 0, "mean all keepdims");
    run_reduce(clf_reduce_max, CLF_F32, 3, shape, x, 0, NULL, true, 3, y);
    expect_f32(y, (const float[]){11}, 1, 0, "max all");

    /* Rank 4, axes {0, 3}, against a plain loop. */
    static const int64_t s4[4] = {2, 3, 2, 3};
    int32_t xi[36], yi[6], want[6] = {0};
    clf_test_fill_i32(xi, 36, -100, 100);
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 2; c++)
                for (int d = 0; d < 3; d++)
                    want[b * 2 + c] += xi[((a * 3 + b) * 2 + c) * 3 + d];
    run_reduce(clf_reduce_sum, CLF_I32, 4, s4, xi, 2, (const int[]){3, 0}, false, 2, yi);
    expect_i32(yi, want, 6, "rank-4 sum {0,3}");

    /* The reduction reads a transposed input correctly. */
    clf_graph *g = clf_graph_create();
    static const int64_t s23[2] = {2, 3};
    clf_tensor t = clf_transpose(g, clf_input(g, "x", CLF_F32, 2, s23), 0, NULL);
    clf_graph_output(g, "y", clf_reduce_sum(g, t, 1, (const int[]){1}, false));
    expect_graph_ok(g);
    run_xy(g, x, y);
    expect_f32(y, (const float[]){3, 5, 7}, 3, 0, "sum of a transpose");
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(reduce_empty_sets)
{
    static const int64_t s20[2] = {2, 0}, s03[2] = {0, 3};
    const int ax1[1] = {1};
    float y[2];
    run_reduce(clf_reduce_sum, CLF_F32, 2, s20, NULL, 1, ax1, false, 1, y);
    expect_f32(y, (const float[]){0, 0}, 2, 0, "sum of nothing");
    run_reduce(clf_reduce_prod, CLF_F32, 2, s20, NULL, 1, ax1, true, 2, y);
    expect_f32(y, (const float[]){1, 1}, 2, 0, "prod of nothing");
    run_reduce(clf_reduce_max, CLF_F32, 2, s20, NULL, 1, ax1, false, 1, y);
    expect_f32(y, (const float[]){-INFINITY, -INFINITY}, 2, 0, "max of nothing");
    run_reduce(clf_reduce_min, CLF_F32, 2, s20, NULL, 1, ax1, false, 1, y);
    expect_f32(y, (const float[]){INFINITY, INFINITY}, 2, 0, "min of nothing");
    run_reduce(clf_reduce_mean, CLF_F32, 2, s20, NULL, 1, ax1, false, 1, y);
    expect_f32(y, (const float[]){NAN, NAN}, 2, 0, "mean of nothing");

    int32_t yi[3];
    run_reduce(clf_reduce_sum, CLF_I32, 2, s03, NULL, 1, (const int[]){0}, false, 1, yi);
    expect_i32(yi, (const int32_t[]){0, 0, 0}, 3, "i32 sum of nothing");
    run_reduce(clf_reduce_prod, CLF_I32, 2, s03, NULL, 1, (const int[]){0}, false, 1, yi);
    expect_i32(yi, (const int32_t[]){1, 1, 1}, 3, "i32 prod of nothing");
    run_reduce(clf_reduce_max, CLF_I32, 2, s03, NULL, 0, NULL, false, 0, yi);
    expect_i32(yi, (const int32_t[]){INT32_MIN}, 1, "i32 max of nothing");
    run_reduce(clf_reduce_min, CLF_I32, 2, s03, NULL, 0, NULL, false, 0, yi);
    expect_i32(yi, (const int32_t[]){INT32_MAX}, 1, "i32 min of nothing");

    /* An empty result: [0,3] summed over axis 1 is [0]. */
    clf_graph *g = clf_graph_create();
    clf_graph_output(g, "y", clf_reduce_sum(g, clf_input(g, "x", CLF_F32, 2, s03), 1, ax1, false));
    clf_graph_output(g, "a", clf_argmax(g, clf_input(g, "z", CLF_F32, 2, s03), 1, false, false));
    expect_graph_ok(g);
    clf_host_binding in[] = {{"x", NULL}, {"z", NULL}};
    clf_host_binding out[] = {{"y", NULL}, {"a", NULL}};
    ck_assert_int_eq(clf_reference_run(g, 2, in, 2, out, NULL, 0), CLF_OK);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(reduce_rank0_identity)
{
    float x = -2.5f, y = 0;
    reduce_fn fns[] = {clf_reduce_sum, clf_reduce_prod, clf_reduce_max, clf_reduce_min, clf_reduce_mean};
    for (size_t k = 0; k < NELEMS(fns); k++) {
        run_reduce(fns[k], CLF_F32, 0, NULL, &x, 0, NULL, k % 2 == 0, 0, &y);
        ck_assert_msg(y == -2.5f, "fn %zu: %g", k, y);
    }
    int32_t xi = INT32_MIN, yi = 0;
    run_reduce(clf_reduce_sum, CLF_I32, 0, NULL, &xi, 0, NULL, false, 0, &yi);
    ck_assert_int_eq(yi, INT32_MIN);
}
END_TEST

START_TEST(reduce_nan_inf_and_precision)
{
    static const int64_t s34[2] = {3, 4};
    static const float x[12] = {1,         NAN, 3,         -INFINITY, /* NaN in the middle */
                                NAN,       1,   2,         3,         /* NaN first */
                                INFINITY, -INFINITY, 0, 1};           /* inf - inf */
    const int ax1[1] = {1};
    float y[3];
    run_reduce(clf_reduce_max, CLF_F32, 2, s34, x, 1, ax1, false, 1, y);
    expect_f32(y, (const float[]){NAN, NAN, INFINITY}, 3, 0, "max with NaN");
    run_reduce(clf_reduce_min, CLF_F32, 2, s34, x, 1, ax1, false, 1, y);
    expect_f32(y, (const float[]){NAN, NAN, -INFINITY}, 3, 0, "min with NaN");
    run_reduce(clf_reduce_sum, CLF_F32, 2, s34, x, 1, ax1, false, 1, y);
    expect_f32(y, (const float[]){NAN, NAN, NAN}, 3, 0, "sum with NaN, inf - inf");
    run_reduce(clf_reduce_prod, CLF_F32, 2, s34, x, 1, ax1, false, 1, y);
    expect_f32(y, (const float[]){NAN, NAN, NAN}, 3, 0, "prod with NaN, 0 * inf");

    /* Accumulated in double, rounded once: float steps would give 0. */
    static const int64_t s4[1] = {4};
    static const float big[4] = {16777216.0f, 1, 1, -16777216.0f};
    run_reduce(clf_reduce_sum, CLF_F32, 1, s4, big, 0, NULL, false, 0, y);
    ck_assert(y[0] == 2.0f);
    /* A product that leaves the float range halfway is still exact. */
    static const float p[4] = {1e30f, 1e30f, 1e-30f, 1e-30f};
    run_reduce(clf_reduce_prod, CLF_F32, 1, s4, p, 0, NULL, false, 0, y);
    ck_assert_msg(fabsf(y[0] - 1.0f) < 1e-6f, "prod %g", y[0]);
    /* A sum of -0s starts from +0. */
    static const float negz[4] = {-0.0f, -0.0f, -0.0f, -0.0f};
    run_reduce(clf_reduce_sum, CLF_F32, 1, s4, negz, 0, NULL, false, 0, y);
    expect_f32(y, (const float[]){0.0f}, 1, 0, "sum of -0s");
    run_reduce(clf_reduce_max, CLF_F32, 1, s4, negz, 0, NULL, false, 0, y);
    expect_f32(y, (const float[]){-0.0f}, 1, 0, "max of -0s");
}
END_TEST

START_TEST(reduce_i32_wrap)
{
    static const int64_t s32[2] = {3, 2};
    static const int32_t x[6] = {INT32_MAX, 1, INT32_MIN, -1, 65536, 65536};
    int32_t y[3];
    run_reduce(clf_reduce_sum, CLF_I32, 2, s32, x, 1, (const int[]){1}, false, 1, y);
    expect_i32(y, (const int32_t[]){INT32_MIN, INT32_MAX, 131072}, 3, "sum wraps");
    run_reduce(clf_reduce_prod, CLF_I32, 2, s32, x, 1, (const int[]){-1}, false, 1, y);
    expect_i32(y, (const int32_t[]){INT32_MAX, INT32_MIN, 0}, 3, "prod wraps");
    static const int32_t x2[2] = {INT32_MAX, 2};
    static const int64_t s2[1] = {2};
    run_reduce(clf_reduce_prod, CLF_I32, 1, s2, x2, 0, NULL, false, 0, y);
    ck_assert_int_eq(y[0], -2);
    run_reduce(clf_reduce_max, CLF_I32, 2, s32, x, 1, (const int[]){0}, false, 1, y);
    expect_i32(y, (const int32_t[]){INT32_MAX, 65536}, 2, "i32 max");
    run_reduce(clf_reduce_min, CLF_I32, 2, s32, x, 1, (const int[]){0}, false, 1, y);
    expect_i32(y, (const int32_t[]){INT32_MIN, -1}, 2, "i32 min");
}
END_TEST

/* Runs argmax or argmin of x along axis with both select_last settings. */
static void run_arg(bool is_max, clf_dtype dt, int rank, const int64_t *shape, const void *x, int axis,
                    bool keepdims, int32_t *first, int32_t *last)
{
    clf_graph *g = clf_graph_create();
    clf_tensor in = clf_input(g, "x", dt, rank, shape);
    clf_tensor (*fn)(clf_graph *, clf_tensor, int, bool, bool) = is_max ? clf_argmax : clf_argmin;
    clf_graph_output(g, "f", fn(g, in, axis, keepdims, false));
    clf_graph_output(g, "l", fn(g, in, axis, keepdims, true));
    expect_graph_ok(g);
    char msg[256];
    clf_host_binding ins[] = {{"x", (void *)x}};
    clf_host_binding outs[] = {{"f", first}, {"l", last}};
    clf_status st = clf_reference_run(g, 1, ins, 2, outs, msg, sizeof msg);
    ck_assert_msg(st == CLF_OK, "%s", msg);
    clf_graph_destroy(&g);
}

START_TEST(argmax_argmin_values)
{
    static const int64_t s45[2] = {5, 4};
    static const float x[20] = {
        1,     3,    3,  2,  /* a tie for the max */
        2,     1,    1,  5,  /* a tie for the min */
        1,     NAN,  5,  NAN, /* the first NaN wins */
        -0.0f, 0.0f, -1, -1, /* -0 == +0 */
        NAN,   9,    -9, 9,
    };
    int32_t f[5], l[5];
    run_arg(true, CLF_F32, 2, s45, x, 1, false, f, l);
    expect_i32(f, (const int32_t[]){1, 3, 1, 0, 0}, 5, "argmax");
    expect_i32(l, (const int32_t[]){2, 3, 1, 1, 0}, 5, "argmax select_last");
    run_arg(false, CLF_F32, 2, s45, x, -1, true, f, l);
    expect_i32(f, (const int32_t[]){0, 1, 1, 2, 0}, 5, "argmin");
    expect_i32(l, (const int32_t[]){0, 2, 1, 3, 0}, 5, "argmin select_last");

    /* Along axis 0. */
    static const int64_t s23[2] = {2, 3};
    static const float c[6] = {1, 5, 3, 4, 2, 3};
    run_arg(true, CLF_F32, 2, s23, c, 0, true, f, l);
    expect_i32(f, (const int32_t[]){1, 0, 0}, 3, "argmax axis 0");
    expect_i32(l, (const int32_t[]){1, 0, 1}, 3, "argmax axis 0 select_last");

    /* i32. */
    static const int64_t s3[1] = {3};
    static const int32_t xi[3] = {7, INT32_MIN, 7};
    run_arg(true, CLF_I32, 1, s3, xi, 0, false, f, l);
    ck_assert_int_eq(f[0], 0);
    ck_assert_int_eq(l[0], 2);
    run_arg(false, CLF_I32, 1, s3, xi, 0, false, f, l);
    ck_assert_int_eq(f[0], 1);
    ck_assert_int_eq(l[0], 1);
}
END_TEST

/* ---- composites ------------------------------------------------------- */

START_TEST(softmax_values)
{
    /* Rows near 1e4: exp(x) alone would overflow; subtracting the max
     * keeps the result finite. */
    static const int64_t s23[2] = {2, 3};
    static const float x[6] = {10000, 10001, 10002, -INFINITY, 0, -INFINITY};
    clf_graph *g = clf_graph_create();
    clf_tensor in = clf_input(g, "x", CLF_F32, 2, s23);
    clf_graph_output(g, "y", clf_softmax(g, in, -1));
    expect_graph_ok(g);
    float y[6];
    run_xy(g, x, y);
    double s = 1 + exp(-1.0) + exp(-2.0);
    float want[6] = {(float)(exp(-2.0) / s), (float)(exp(-1.0) / s), (float)(1 / s), 0, 1, 0};
    expect_f32(y, want, 6, 1e-6, "softmax rows");
    double total = 0;
    for (int k = 0; k < 3; k++) {
        ck_assert(isfinite(y[k]));
        total += y[k];
    }
    ck_assert_msg(fabs(total - 1) < 1e-6, "row sums to %.9g", total);
    clf_graph_destroy(&g);

    /* Along axis 0: columns {1, 3} and {2, 2}. */
    g = clf_graph_create();
    in = clf_input(g, "x", CLF_F32, 2, (const int64_t[]){2, 2});
    clf_graph_output(g, "y", clf_softmax(g, in, 0));
    expect_graph_ok(g);
    run_xy(g, (const float[]){1, 2, 3, 2}, y);
    double e = exp(-2.0);
    float want0[4] = {(float)(e / (1 + e)), 0.5f, (float)(1 / (1 + e)), 0.5f};
    expect_f32(y, want0, 4, 1e-6, "softmax axis 0");
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(log_softmax_values)
{
    static const int64_t s23[2] = {2, 3};
    static const float x[6] = {1, 2, 3, 10000, 10000, 10000};
    clf_graph *g = clf_graph_create();
    clf_graph_output(g, "y", clf_log_softmax(g, clf_input(g, "x", CLF_F32, 2, s23), 1));
    expect_graph_ok(g);
    float y[6];
    run_xy(g, x, y);
    double l = log(1 + exp(-1.0) + exp(-2.0));
    float want[6] = {(float)(-2 - l), (float)(-1 - l), (float)(-l), (float)-log(3.0),
                     (float)-log(3.0), (float)-log(3.0)};
    expect_f32(y, want, 6, 1e-6, "log_softmax");
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(layer_norm_values)
{
    static const int64_t s23[2] = {2, 3}, s3[1] = {3};
    static const float x[6] = {1, 2, 3, 2, 4, 9};
    static const float scale[3] = {0.5f, 1, 2}, bias[3] = {0, 1, -1};
    const double eps = 1e-5;
    clf_graph *g = clf_graph_create();
    clf_tensor in = clf_input(g, "x", CLF_F32, 2, s23);
    clf_tensor sc = clf_input(g, "scale", CLF_F32, 1, s3);
    clf_tensor bi = clf_input(g, "bias", CLF_F32, 1, s3);
    clf_graph_output(g, "rows", clf_layer_norm(g, in, -1, eps, sc, bi));
    clf_graph_output(g, "all", clf_layer_norm(g, in, 0, eps, CLF_TENSOR_INVALID, CLF_TENSOR_INVALID));
    expect_graph_ok(g);
    float rows[6], all[6];
    clf_host_binding ins[] = {{"x", (void *)x}, {"scale", (void *)scale}, {"bias", (void *)bias}};
    clf_host_binding outs[] = {{"rows", rows}, {"all", all}};
    char msg[256];
    ck_assert_msg(clf_reference_run(g, 3, ins, 2, outs, msg, sizeof msg) == CLF_OK, "%s", msg);
    /* Row 0: mean 2, var 2/3. Row 1: mean 5, var (9+1+16)/3 = 26/3. */
    double r0 = 1 / sqrt(2.0 / 3 + eps), r1 = 1 / sqrt(26.0 / 3 + eps);
    float want_rows[6] = {(float)(-1 * r0 * 0.5), (float)(0 * r0 * 1 + 1), (float)(1 * r0 * 2 - 1),
                          (float)(-3 * r1 * 0.5), (float)(-1 * r1 * 1 + 1), (float)(4 * r1 * 2 - 1)};
    expect_f32(rows, want_rows, 6, 2e-6, "layer_norm rows, scale, bias");
    /* All six: mean 21/6 = 3.5, var sum((x-3.5)^2)/6 = 41.5/6. */
    double ra = 1 / sqrt(41.5 / 6 + eps);
    float want_all[6];
    for (int k = 0; k < 6; k++)
        want_all[k] = (float)((x[k] - 3.5) * ra);
    expect_f32(all, want_all, 6, 2e-6, "layer_norm over all axes");
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(rms_norm_values)
{
    static const int64_t s22[2] = {2, 2}, s2[1] = {2};
    static const float x[4] = {1, 2, 3, 4}, scale[2] = {2, 0.5f};
    const double eps = 1e-6;
    clf_graph *g = clf_graph_create();
    clf_tensor in = clf_input(g, "x", CLF_F32, 2, s22);
    clf_tensor sc = clf_input(g, "scale", CLF_F32, 1, s2);
    clf_graph_output(g, "rows", clf_rms_norm(g, in, 1, eps, sc));
    clf_graph_output(g, "all", clf_rms_norm(g, in, -2, eps, CLF_TENSOR_INVALID));
    expect_graph_ok(g);
    float rows[4], all[4];
    clf_host_binding ins[] = {{"x", (void *)x}, {"scale", (void *)scale}};
    clf_host_binding outs[] = {{"rows", rows}, {"all", all}};
    char msg[256];
    ck_assert_msg(clf_reference_run(g, 2, ins, 2, outs, msg, sizeof msg) == CLF_OK, "%s", msg);
    /* Mean squares: row 0 (1+4)/2 = 2.5, row 1 (9+16)/2 = 12.5, all 30/4. */
    double r0 = 1 / sqrt(2.5 + eps), r1 = 1 / sqrt(12.5 + eps), ra = 1 / sqrt(7.5 + eps);
    float want_rows[4] = {(float)(1 * r0 * 2), (float)(2 * r0 * 0.5), (float)(3 * r1 * 2),
                          (float)(4 * r1 * 0.5)};
    float want_all[4] = {(float)(1 * ra), (float)(2 * ra), (float)(3 * ra), (float)(4 * ra)};
    expect_f32(rows, want_rows, 4, 2e-6, "rms_norm rows, scale");
    expect_f32(all, want_all, 4, 2e-6, "rms_norm all");
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(var_values)
{
    static const int64_t s24[2] = {2, 4}, s1[1] = {1};
    static const float x[8] = {1, 2, 3, 4, 2, 2, 2, 2};
    clf_graph *g = clf_graph_create();
    clf_tensor in = clf_input(g, "x", CLF_F32, 2, s24);
    clf_tensor one = clf_input(g, "one", CLF_F32, 1, s1);
    clf_graph_output(g, "pop", clf_reduce_var(g, in, 1, (const int[]){1}, false, 0));
    clf_graph_output(g, "sample", clf_reduce_var(g, in, 1, (const int[]){-1}, true, 1));
    clf_graph_output(g, "all0", clf_reduce_var(g, in, 0, NULL, false, 0));
    clf_graph_output(g, "all1", clf_reduce_var(g, in, 0, NULL, false, 1));
    clf_graph_output(g, "single", clf_reduce_var(g, one, 0, NULL, false, 1));
    expect_graph_ok(g);
    float pop[2], sample[2], all0, all1, single;
    float onev = 3;
    clf_host_binding ins[] = {{"x", (void *)x}, {"one", &onev}};
    clf_host_binding outs[] = {{"pop", pop},   {"sample", sample}, {"all0", &all0},
                               {"all1", &all1}, {"single", &single}};
    char msg[256];
    ck_assert_msg(clf_reference_run(g, 2, ins, 5, outs, msg, sizeof msg) == CLF_OK, "%s", msg);
    /* Row 0: mean 2.5, squared deviations 5; row 1: all equal. */
    expect_f32(pop, (const float[]){1.25f, 0}, 2, 1e-7, "population variance");
    expect_f32(sample, (const float[]){(float)(5.0 / 3), 0}, 2, 1e-7, "sample variance");
    /* All eight: mean 2.25, squared deviations 5.5. */
    expect_f32(&all0, (const float[]){0.6875f}, 1, 1e-7, "variance of all, correction 0");
    expect_f32(&all1, (const float[]){(float)(5.5 / 7)}, 1, 1e-7, "variance of all, correction 1");
    /* One element, correction 1: 0/0. */
    ck_assert(isnan(single));
    clf_graph_destroy(&g);
}
END_TEST

/* A graph with inputs "a" [2], "b" [2] and output "y" = a + b. */
static clf_graph *two_input_graph(void)
{
    clf_graph *g = clf_graph_create();
    int64_t s[1] = {2};
    clf_tensor a = clf_input(g, "a", CLF_F32, 1, s);
    clf_tensor b = clf_input(g, "b", CLF_F32, 1, s);
    clf_graph_output(g, "y", clf_add(g, a, b));
    expect_graph_ok(g);
    return g;
}

START_TEST(error_bindings)
{
    clf_graph *g = two_input_graph();
    float a[2] = {1, 2}, b[2] = {3, 4}, y[2] = {-7, -7};
    char msg[256];
    clf_status st;

    /* missing input */
    clf_host_binding in1[] = {{"a", a}};
    clf_host_binding out[] = {{"y", y}};
    st = clf_reference_run(g, 1, in1, 1, out, msg, sizeof msg);
    ck_assert_int_eq(st, CLF_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(msg, "\"b\"") != NULL, "message: %s", msg);

    /* missing output */
    clf_host_binding in2[] = {{"a", a}, {"b", b}};
    st = clf_reference_run(g, 2, in2, 0, NULL, msg, sizeof msg);
    ck_assert_int_eq(st, CLF_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(msg, "\"y\"") != NULL, "message: %s", msg);

    /* duplicate input */
    clf_host_binding in3[] = {{"a", a}, {"b", b}, {"a", b}};
    st = clf_reference_run(g, 3, in3, 1, out, msg, sizeof msg);
    ck_assert_int_eq(st, CLF_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(msg, "\"a\"") != NULL, "message: %s", msg);

    /* duplicate output */
    clf_host_binding out2[] = {{"y", y}, {"y", y}};
    st = clf_reference_run(g, 2, in2, 2, out2, msg, sizeof msg);
    ck_assert_int_eq(st, CLF_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(msg, "\"y\"") != NULL, "message: %s", msg);

    /* unknown names */
    clf_host_binding in4[] = {{"a", a}, {"b", b}, {"c", b}};
    st = clf_reference_run(g, 3, in4, 1, out, msg, sizeof msg);
    ck_assert_int_eq(st, CLF_ERR_NOT_FOUND);
    ck_assert_msg(strstr(msg, "\"c\"") != NULL, "message: %s", msg);
    clf_host_binding out3[] = {{"y", y}, {"zz", y}};
    st = clf_reference_run(g, 2, in2, 2, out3, msg, sizeof msg);
    ck_assert_int_eq(st, CLF_ERR_NOT_FOUND);
    ck_assert_msg(strstr(msg, "\"zz\"") != NULL, "message: %s", msg);

    /* an input bound as an output, and an output as an input */
    clf_host_binding out4[] = {{"a", y}};
    st = clf_reference_run(g, 2, in2, 1, out4, msg, sizeof msg);
    ck_assert_int_eq(st, CLF_ERR_NOT_FOUND);
    clf_host_binding in5[] = {{"a", a}, {"y", b}};
    st = clf_reference_run(g, 2, in5, 1, out, msg, sizeof msg);
    ck_assert_int_eq(st, CLF_ERR_NOT_FOUND);

    /* NULL name, NULL data, NULL arrays */
    clf_host_binding in6[] = {{"a", a}, {NULL, b}};
    st = clf_reference_run(g, 2, in6, 1, out, msg, sizeof msg);
    ck_assert_int_eq(st, CLF_ERR_INVALID_ARGUMENT);
    clf_host_binding in7[] = {{"a", a}, {"b", NULL}};
    st = clf_reference_run(g, 2, in7, 1, out, msg, sizeof msg);
    ck_assert_int_eq(st, CLF_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(msg, "\"b\"") != NULL, "message: %s", msg);
    clf_host_binding out5[] = {{"y", NULL}};
    st = clf_reference_run(g, 2, in2, 1, out5, msg, sizeof msg);
    ck_assert_int_eq(st, CLF_ERR_INVALID_ARGUMENT);
    st = clf_reference_run(g, 2, NULL, 1, out, msg, sizeof msg);
    ck_assert_int_eq(st, CLF_ERR_INVALID_ARGUMENT);

    /* Nothing was written by any failed run; a tiny message buffer is
     * truncated, not overrun; a NULL message buffer is fine. */
    ck_assert(y[0] == -7 && y[1] == -7);
    char tiny[4] = {'x', 'x', 'x', 'x'};
    st = clf_reference_run(g, 1, in1, 1, out, tiny, 3);
    ck_assert_int_eq(st, CLF_ERR_INVALID_ARGUMENT);
    ck_assert(tiny[2] == '\0' && tiny[3] == 'x');
    ck_assert_int_eq(clf_reference_run(g, 1, in1, 1, out, NULL, 0), CLF_ERR_INVALID_ARGUMENT);

    /* and the happy path still works */
    ck_assert_int_eq(clf_reference_run(g, 2, in2, 1, out, msg, sizeof msg), CLF_OK);
    ck_assert_str_eq(msg, "");
    ck_assert(y[0] == 4 && y[1] == 6);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(error_graph_state)
{
    clf_graph *g = clf_graph_create();
    int64_t s2[1] = {2}, s3[1] = {3};
    clf_tensor a = clf_input(g, "a", CLF_F32, 1, s2);
    clf_tensor b = clf_input(g, "b", CLF_F32, 1, s3);
    clf_tensor bad = clf_add(g, a, b); /* [2] + [3] does not broadcast */
    ck_assert(!clf_tensor_valid(bad));
    const char *gmsg = NULL;
    ck_assert_int_ne(clf_graph_status(g, &gmsg), CLF_OK);
    char msg[512];
    float av[2] = {0}, bv[3] = {0};
    clf_host_binding in[] = {{"a", av}, {"b", bv}};
    clf_status st = clf_reference_run(g, 2, in, 0, NULL, msg, sizeof msg);
    ck_assert_int_eq(st, CLF_ERR_GRAPH);
    ck_assert_str_eq(msg, gmsg);
    clf_graph_destroy(&g);

    ck_assert_int_eq(clf_reference_run(NULL, 0, NULL, 0, NULL, msg, sizeof msg),
                     CLF_ERR_INVALID_ARGUMENT);
    ck_assert(strlen(msg) > 0);
}
END_TEST

START_TEST(error_out_of_memory)
{
    /* A one-element input expanded to 2^40 elements: the 4 TiB allocation
     * fails cleanly and the output (never written) may be a small buffer.
     * A host that overcommits memory could grant it and then kill the test
     * while filling it: cap this (forked) process's address space first,
     * except under AddressSanitizer, whose shadow memory needs more. */
#if !defined(__SANITIZE_ADDRESS__)
    struct rlimit cap = {(rlim_t)1 << 36, (rlim_t)1 << 36};
    setrlimit(RLIMIT_AS, &cap);
#endif
    clf_graph *g = clf_graph_create();
    int64_t one[1] = {1}, huge[2] = {INT64_C(1) << 20, INT64_C(1) << 20};
    clf_tensor x = clf_input(g, "x", CLF_F32, 1, one);
    clf_graph_output(g, "y", clf_expand(g, x, 2, huge));
    expect_graph_ok(g);
    float xv = 1, y = 0;
    char msg[256];
    clf_host_binding in[] = {{"x", &xv}};
    clf_host_binding out[] = {{"y", &y}};
    ck_assert_int_eq(clf_reference_run(g, 1, in, 1, out, msg, sizeof msg), CLF_ERR_OUT_OF_MEMORY);
    ck_assert(strlen(msg) > 0);
    ck_assert(y == 0);
    clf_graph_destroy(&g);
}
END_TEST

static Suite *reference_suite(void)
{
    Suite *s = suite_create("reference");
    TCase *tc = tcase_create("ops");
    tcase_add_test(tc, unary_f32_ops);
    tcase_add_test(tc, gather_and_concat_values);
    tcase_add_test(tc, unary_f32_named_builders);
    tcase_add_test(tc, unary_i32_ops);
    tcase_add_test(tc, unary_bool_not);
    tcase_add_test(tc, binary_f32_ops);
    tcase_add_test(tc, binary_i32_wrap_and_division);
    tcase_add_test(tc, comparisons_f32_nan);
    tcase_add_test(tc, comparisons_i32_and_bool);
    tcase_add_test(tc, where_broadcast);
    tcase_add_test(tc, clip_f32);
    tcase_add_test(tc, clip_i32);
    tcase_add_test(tc, cast_rules);
    suite_add_tcase(s, tc);

    tc = tcase_create("shapes");
    tcase_add_test(tc, broadcast_row_and_column);
    tcase_add_test(tc, broadcast_rank0_and_rank3);
    tcase_add_test(tc, transpose_2d_and_3d);
    tcase_add_test(tc, reshape_infer_and_zero);
    tcase_add_test(tc, expand_numpy);
    tcase_add_test(tc, slice_steps);
    tcase_add_test(tc, squeeze_unsqueeze);
    tcase_add_test(tc, movement_chained);
    tcase_add_test(tc, rank0);
    tcase_add_test(tc, zero_size);
    tcase_add_test(tc, outputs_shared_and_aliased);
    tcase_add_test(tc, constants);
    tcase_add_test(tc, large_transpose);
    suite_add_tcase(s, tc);

    tc = tcase_create("reductions");
    tcase_add_test(tc, reduce_one_axis);
    tcase_add_test(tc, reduce_several_and_all_axes);
    tcase_add_test(tc, reduce_empty_sets);
    tcase_add_test(tc, reduce_rank0_identity);
    tcase_add_test(tc, reduce_nan_inf_and_precision);
    tcase_add_test(tc, reduce_i32_wrap);
    tcase_add_test(tc, argmax_argmin_values);
    tcase_add_test(tc, softmax_values);
    tcase_add_test(tc, log_softmax_values);
    tcase_add_test(tc, layer_norm_values);
    tcase_add_test(tc, rms_norm_values);
    tcase_add_test(tc, var_values);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_test(tc, error_bindings);
    tcase_add_test(tc, error_graph_state);
    tcase_add_test(tc, error_out_of_memory);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return clf_test_run_suite(reference_suite());
}
