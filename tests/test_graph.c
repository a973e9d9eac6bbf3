/* The graph builder: shape and dtype inference of every builder, the
 * normalised movement attributes, and every error a caller can cause
 * (status, message naming the call and the argument, stickiness). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_generalise.h"
#include "graph/graph_builder.h"
#include "graph/graph_internal.h"
#include "graph/graph_merge_products.h"
#include "graph/graph_symbols.h"
#include "graph/op_table.h"
#include "util/strbuf.h"
#include "util/text.h"
#include "test_support.h"

#if defined(__SANITIZE_ADDRESS__)
#define TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_UNDER_ASAN 1
#endif
#endif
#ifdef TEST_UNDER_ASAN
/* The out-of-memory test asks for an impossible allocation; under ASan that
 * must return NULL as it does without ASan. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}
#endif

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define AXES(...) ((const int[]){__VA_ARGS__})

/* ---- Helpers ---------------------------------------------------------- */

static const char *msg_of(const clf_graph *g)
{
    const char *m = NULL;
    clf_graph_status(g, &m);
    return m ? m : "(null)";
}

/* Fails unless t is valid in g with the given rank and extents. */
static void expect_shape_(const clf_graph *g, clf_tensor t, int rank, const int64_t *want, int line)
{
    ck_assert_msg(clf_tensor_valid(t), "line %d: invalid tensor; graph says: %s", line, msg_of(g));
    int r = -1;
    int64_t s[CLF_MAX_RANK];
    ck_assert_msg(clf_tensor_shape(g, t, &r, s) == CLF_OK, "line %d: clf_tensor_shape failed", line);
    ck_assert_msg(r == rank, "line %d: rank %d, want %d", line, r, rank);
    for (int i = 0; i < rank; i++)
        ck_assert_msg(s[i] == want[i], "line %d: shape[%d] = %lld, want %lld", line, i, (long long)s[i],
                      (long long)want[i]);
}
#define EXPECT_SHAPE(g, t, rank, want) expect_shape_((g), (t), (rank), (want), __LINE__)

static void expect_dtype_(const clf_graph *g, clf_tensor t, clf_dtype want, int line)
{
    clf_dtype dt = CLF_DTYPE_COUNT;
    ck_assert_msg(clf_tensor_dtype(g, t, &dt) == CLF_OK, "line %d: clf_tensor_dtype failed: %s", line,
                  msg_of(g));
    ck_assert_msg(dt == want, "line %d: dtype %s, want %s", line, clf_dtype_name(dt),
                  clf_dtype_name(want));
}
#define EXPECT_DTYPE(g, t, want) expect_dtype_((g), (t), (want), __LINE__)

/* Fails unless g holds status st and its message contains s1 and, unless
 * NULL, s2. where (a line or a case number) goes into failure messages. */
static void expect_error_(const clf_graph *g, clf_status st, const char *s1, const char *s2, int where)
{
    const char *m = NULL;
    clf_status got = clf_graph_status(g, &m);
    ck_assert_msg(got == st, "at %d: status %s, want %s (message: %s)", where, clf_status_name(got),
                  clf_status_name(st), m);
    ck_assert_msg(m != NULL, "at %d: no message", where);
    ck_assert_msg(strstr(m, s1) != NULL, "at %d: message \"%s\" lacks \"%s\"", where, m, s1);
    if (s2)
        ck_assert_msg(strstr(m, s2) != NULL, "at %d: message \"%s\" lacks \"%s\"", where, m, s2);
}

/* Runs a builder call that must fail: it returns CLF_TENSOR_INVALID, adds
 * no node, and leaves status st with a message containing s1 and s2. */
#define EXPECT_FAIL(g, expr, st, s1, s2)                                                                \
    do {                                                                                                \
        size_t before_ = clf_graph_node_count(g);                                                       \
        clf_tensor t_ = (expr);                                                                         \
        ck_assert_msg(!clf_tensor_valid(t_), "line %d: %s succeeded", __LINE__, #expr);                 \
        ck_assert_msg(clf_graph_node_count(g) == before_, "line %d: failed call added a node",          \
                      __LINE__);                                                                        \
        expect_error_((g), (st), (s1), (s2), __LINE__);                                                 \
    } while (0)

/* A fresh graph with x: f32 [2,3], i: i32 [2,3], b: bool [2,3], v: f32 [4]. */
typedef struct fixture {
    clf_graph *g;
    clf_tensor x, i, b, v;
} fixture;

static fixture fx(void)
{
    fixture f;
    f.g = clf_graph_create();
    ck_assert_ptr_nonnull(f.g);
    f.x = clf_input(f.g, "x", CLF_F32, 2, SHAPE(2, 3));
    f.i = clf_input(f.g, "i", CLF_I32, 2, SHAPE(2, 3));
    f.b = clf_input(f.g, "b", CLF_BOOL, 2, SHAPE(2, 3));
    f.v = clf_input(f.g, "v", CLF_F32, 1, SHAPE(4));
    ck_assert_msg(clf_graph_status(f.g, NULL) == CLF_OK, "fixture: %s", msg_of(f.g));
    return f;
}

static const clf__node *node_of(const clf_graph *g, clf_tensor t)
{
    ck_assert(clf_tensor_valid(t));
    return clf__graph_node(g, t.node);
}

/* ---- Status, version, dtypes ---------------------------------------- */

/* The key writers' number formats write what printf would, and texts
 * (util/text.h) are copies that references share. */
START_TEST(test_strbuf_numbers_and_texts)
{
    static const long long ints[] = {0, 7, -7, 10, 4096, -4096, 2147483647, INT64_MAX, INT64_MIN};
    static const unsigned long long hexes[] = {0, 1, 0xf, 0x10, 0xabcdef, 0x8000000000000000ull, UINT64_MAX};
    static const int widths[] = {0, 1, 2, 8, 16};
    char want[64];
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) {
        clf__strbuf sb = {0};
        clf__sb_put_i64(&sb, ints[i]);
        snprintf(want, sizeof want, "%lld", ints[i]);
        ck_assert_str_eq(clf__sb_str(&sb), want);
        clf__sb_free(&sb);
    }
    for (size_t i = 0; i < sizeof hexes / sizeof *hexes; i++)
        for (size_t w = 0; w < sizeof widths / sizeof *widths; w++) {
            clf__strbuf sb = {0};
            clf__sb_put_hex(&sb, hexes[i], widths[w]);
            snprintf(want, sizeof want, "%0*llx", widths[w], hexes[i]);
            ck_assert_str_eq(clf__sb_str(&sb), want);
            clf__sb_free(&sb);
        }
    clf__strbuf sb = {0};
    clf__sb_puts(&sb, "a source");
    const char *t = clf__text_take(&sb);
    ck_assert_ptr_nonnull(t);
    ck_assert_ptr_null(sb.data);
    ck_assert_str_eq(t, "a source");
    ck_assert_uint_eq(clf__text_len(t), 8);
    ck_assert_ptr_eq(clf__text_ref(t), t);
    clf__text_release(t);
    ck_assert_str_eq(t, "a source"); /* the second reference holds it */
    clf__text_release(t);
    ck_assert_ptr_null(clf__text_ref(NULL));
    clf__text_release(NULL);
    const char *part = clf__text_new("abcdef", 3), *same = clf__text_new("abc", 3), *other = clf__text_new("abd", 3);
    ck_assert_str_eq(part, "abc");
    ck_assert(clf__text_hash(part) == clf__text_hash(same) && clf__text_hash(part) != clf__text_hash(other));
    clf__text_release(part);
    clf__text_release(same);
    clf__text_release(other);
    /* A buffer that never grew is the empty text; a long one whole. */
    clf__strbuf empty = {0}, big = {0};
    const char *none = clf__text_take(&empty);
    ck_assert_ptr_nonnull(none);
    ck_assert_str_eq(none, "");
    ck_assert_uint_eq(clf__text_len(none), 0);
    clf__text_release(none);
    for (int i = 0; i < 5000; i++)
        clf__sb_put_i64(&big, i % 10);
    const char *digits = clf__text_take(&big), *copy = clf__text_new(digits, 5000);
    ck_assert(clf__text_hash(digits) == clf__text_hash(copy)); /* taken or copied, one hash */
    clf__text_release(copy);
    ck_assert_uint_eq(clf__text_len(digits), 5000);
    ck_assert_uint_eq(strlen(digits), 5000);
    ck_assert(digits[0] == '0' && digits[4999] == '9' && digits[1234] == '4');
    clf__text_release(digits);
}
END_TEST

START_TEST(test_status_names)
{
#define CHECK_STATUS_(name, value, desc)                                                                \
    ck_assert_str_eq(clf_status_name(name), #name);                                                     \
    ck_assert_str_eq(clf_status_str(name), desc);                                                       \
    ck_assert_int_eq((int)name, value);
    CLF_STATUS_LIST(CHECK_STATUS_)
#undef CHECK_STATUS_
    ck_assert_str_eq(clf_status_name((clf_status)1), "CLF_UNKNOWN_STATUS");
    ck_assert_str_eq(clf_status_name((clf_status)-99), "CLF_UNKNOWN_STATUS");
    ck_assert_ptr_nonnull(clf_status_str((clf_status)-99));
    ck_assert_str_ne(clf_status_str((clf_status)-99), clf_status_str(CLF_OK));
}
END_TEST

START_TEST(test_version)
{
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", CLFUSE_VERSION_MAJOR, CLFUSE_VERSION_MINOR,
             CLFUSE_VERSION_PATCH);
    ck_assert_str_eq(clf_version(), want);
    ck_assert_str_eq(clf_version(), "0.1.0");
}
END_TEST

START_TEST(test_dtype_info)
{
    ck_assert_str_eq(clf_dtype_name(CLF_F32), "f32");
    ck_assert_str_eq(clf_dtype_name(CLF_I32), "i32");
    ck_assert_str_eq(clf_dtype_name(CLF_BOOL), "bool");
    ck_assert_ptr_null(clf_dtype_name(CLF_DTYPE_COUNT));
    ck_assert_ptr_null(clf_dtype_name((clf_dtype)-1));
    ck_assert_uint_eq(clf_dtype_size(CLF_F32), 4);
    ck_assert_uint_eq(clf_dtype_size(CLF_I32), 4);
    ck_assert_uint_eq(clf_dtype_size(CLF_BOOL), 1);
    ck_assert_uint_eq(clf_dtype_size(CLF_DTYPE_COUNT), 0);
    ck_assert_uint_eq(clf_dtype_size((clf_dtype)-1), 0);
}
END_TEST

/* ---- Graph lifetime --------------------------------------------------- */

START_TEST(test_graph_create_destroy)
{
    clf_graph *a = clf_graph_create(), *b = clf_graph_create();
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_ne(a->serial, 0);
    ck_assert_uint_ne(b->serial, 0);
    ck_assert_uint_ne(a->serial, b->serial);
    const char *m = NULL;
    ck_assert_int_eq(clf_graph_status(a, &m), CLF_OK);
    ck_assert_str_eq(m, "");
    ck_assert_int_eq(clf_graph_status(a, NULL), CLF_OK);
    ck_assert_uint_eq(clf_graph_node_count(a), 0);
    clf_graph_destroy(&a);
    ck_assert_ptr_null(a);
    clf_graph_destroy(&a); /* pointer to NULL */
    clf_graph_destroy(NULL);
    clf_graph_destroy(&b);
    ck_assert_ptr_null(b);
}
END_TEST

START_TEST(test_null_graph)
{
    clf_graph *g = NULL;
    clf_tensor t = CLF_TENSOR_INVALID;
    ck_assert(!clf_tensor_valid(clf_input(g, "x", CLF_F32, 1, SHAPE(2))));
    ck_assert(!clf_tensor_valid(clf_scalar(g, CLF_F32, 1.0)));
    ck_assert(!clf_tensor_valid(clf_constant(g, CLF_F32, 1, SHAPE(1), (float[]){1})));
    ck_assert(!clf_tensor_valid(clf_unary(g, CLF_UNARY_EXP, t)));
    ck_assert(!clf_tensor_valid(clf_binary(g, CLF_BINARY_ADD, t, t)));
    ck_assert(!clf_tensor_valid(clf_exp(g, t)));
    ck_assert(!clf_tensor_valid(clf_add(g, t, t)));
    ck_assert(!clf_tensor_valid(clf_where(g, t, t, t)));
    ck_assert(!clf_tensor_valid(clf_clip(g, t, 0, 1)));
    ck_assert(!clf_tensor_valid(clf_cast(g, t, CLF_I32)));
    ck_assert(!clf_tensor_valid(clf_reshape(g, t, 1, SHAPE(2))));
    ck_assert(!clf_tensor_valid(clf_transpose(g, t, 0, NULL)));
    ck_assert(!clf_tensor_valid(clf_expand(g, t, 1, SHAPE(2))));
    ck_assert(!clf_tensor_valid(clf_slice(g, t, 0, NULL, NULL, NULL, NULL)));
    ck_assert(!clf_tensor_valid(clf_squeeze(g, t, 0, NULL)));
    ck_assert(!clf_tensor_valid(clf_unsqueeze(g, t, 1, AXES(0))));
    ck_assert_int_eq(clf_graph_output(g, "y", t), CLF_ERR_INVALID_ARGUMENT);
    const char *m = NULL;
    ck_assert_int_eq(clf_graph_status(g, &m), CLF_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(m);
    ck_assert_ptr_nonnull(strstr(m, "NULL"));
    ck_assert_uint_eq(clf_graph_node_count(g), 0);
    int r = 0;
    clf_dtype dt;
    ck_assert_int_eq(clf_tensor_shape(g, t, &r, NULL), CLF_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clf_tensor_dtype(g, t, &dt), CLF_ERR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_tensor_queries)
{
    fixture f = fx();
    int r = -1;
    ck_assert_int_eq(clf_tensor_shape(f.g, f.x, &r, NULL), CLF_OK);
    ck_assert_int_eq(r, 2);
    int64_t s[CLF_MAX_RANK] = {0};
    ck_assert_int_eq(clf_tensor_shape(f.g, f.x, NULL, s), CLF_OK);
    ck_assert_int_eq(s[0], 2);
    ck_assert_int_eq(s[1], 3);
    ck_assert_int_eq(clf_tensor_dtype(f.g, f.i, NULL), CLF_OK);
    EXPECT_DTYPE(f.g, f.b, CLF_BOOL);
    /* Invalid, foreign and out-of-range handles are refused without
     * touching the graph (the queries take a const graph). */
    clf_graph *h = clf_graph_create();
    clf_tensor y = clf_input(h, "y", CLF_F32, 0, NULL);
    ck_assert_int_eq(clf_tensor_shape(f.g, CLF_TENSOR_INVALID, &r, s), CLF_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clf_tensor_shape(f.g, y, &r, s), CLF_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clf_tensor_dtype(f.g, y, NULL), CLF_ERR_INVALID_ARGUMENT);
    clf_tensor far = {f.x.graph, 1000};
    ck_assert_int_eq(clf_tensor_shape(f.g, far, &r, s), CLF_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clf_graph_status(f.g, NULL), CLF_OK);
    clf_graph_destroy(&h);
    clf_graph_destroy(&f.g);
}
END_TEST

/* ---- Leaves ------------------------------------------------------------ */

START_TEST(test_input)
{
    clf_graph *g = clf_graph_create();
    char name[] = "tokens";
    clf_tensor a = clf_input(g, name, CLF_I32, 3, SHAPE(2, 0, 5));
    clf_tensor s = clf_input(g, "s", CLF_F32, 0, NULL);
    clf_tensor big = clf_input(g, "big", CLF_F32, 8, SHAPE(1, 2, 3, 4, 5, 6, 7, 8));
    EXPECT_SHAPE(g, a, 3, SHAPE(2, 0, 5));
    EXPECT_DTYPE(g, a, CLF_I32);
    EXPECT_SHAPE(g, s, 0, NULL);
    EXPECT_SHAPE(g, big, 8, SHAPE(1, 2, 3, 4, 5, 6, 7, 8));
    ck_assert_uint_eq(clf_graph_node_count(g), 3);
    ck_assert_uint_eq(a.graph, g->serial);
    ck_assert_uint_eq(a.node, 0);
    ck_assert_uint_eq(s.node, 1);
    /* The name is copied and the input listed in declaration order. */
    name[0] = 'X';
    const clf__node *n = node_of(g, a);
    ck_assert_int_eq(n->op, CLF__OP_INPUT);
    ck_assert_str_eq(n->name, "tokens");
    ck_assert_int_eq(n->ninputs, 0);
    ck_assert_uint_eq(g->ninputs, 3);
    ck_assert_uint_eq(g->inputs[0], a.node);
    ck_assert_uint_eq(g->inputs[2], big.node);
    ck_assert_int_eq(clf__node_numel(n), 0);
    ck_assert_int_eq(clf__node_numel(node_of(g, s)), 1);
    ck_assert_int_eq(clf__node_numel(node_of(g, big)), 40320);
    /* A bool tensor of 2^62 elements fits (2^62 bytes). */
    clf_tensor huge = clf_input(g, "huge", CLF_BOOL, 1, SHAPE(INT64_C(1) << 62));
    EXPECT_SHAPE(g, huge, 1, SHAPE(INT64_C(1) << 62));
    ck_assert_int_eq(clf_graph_status(g, NULL), CLF_OK);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(test_input_errors)
{
    struct {
        const char *name;
        clf_dtype dt;
        int rank;
        const int64_t *shape;
        clf_status st;
        const char *s1, *s2;
    } cases[] = {
        {NULL, CLF_F32, 1, SHAPE(2), CLF_ERR_INVALID_ARGUMENT, "clf_input: name is NULL", NULL},
        {"", CLF_F32, 1, SHAPE(2), CLF_ERR_INVALID_ARGUMENT, "clf_input: name is empty", NULL},
        {"x", CLF_F32, 1, SHAPE(2), CLF_ERR_INVALID_ARGUMENT, "clf_input: name \"x\"", "input"},
        {"out", CLF_F32, 1, SHAPE(2), CLF_ERR_INVALID_ARGUMENT, "clf_input: name \"out\"", "output"},
        {"y", CLF_DTYPE_COUNT, 1, SHAPE(2), CLF_ERR_DTYPE, "clf_input: dtype 6", NULL},
        {"y", (clf_dtype)-1, 1, SHAPE(2), CLF_ERR_DTYPE, "clf_input: dtype -1", NULL},
        {"y", CLF_F32, -1, SHAPE(2), CLF_ERR_SHAPE, "clf_input: rank -1", NULL},
        {"y", CLF_F32, 9, SHAPE(1, 1, 1, 1, 1, 1, 1, 1, 1), CLF_ERR_SHAPE, "clf_input: rank 9", NULL},
        {"y", CLF_F32, 2, NULL, CLF_ERR_INVALID_ARGUMENT, "clf_input: shape is NULL", NULL},
        {"y", CLF_F32, 2, SHAPE(2, -3), CLF_ERR_SHAPE, "clf_input: shape[1] = -3", "negative"},
        /* 2^62 f32 elements need 2^64 bytes. */
        {"y", CLF_F32, 1, SHAPE(INT64_C(1) << 62), CLF_ERR_SHAPE, "clf_input:", "too large"},
        {"y", CLF_I32, 3, SHAPE(INT64_C(1) << 31, INT64_C(1) << 31, 4), CLF_ERR_SHAPE,
         "clf_input:", "[2147483648,2147483648,4]"},
        /* Zero-size, but the other extents' product would overflow strides. */
        {"y", CLF_BOOL, 3, SHAPE(0, INT64_C(1) << 40, INT64_C(1) << 40), CLF_ERR_SHAPE,
         "clf_input:", "too large"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        clf_graph *g = clf_graph_create();
        ck_assert(clf_tensor_valid(clf_input(g, "x", CLF_F32, 1, SHAPE(2))));
        ck_assert_int_eq(clf_graph_output(g, "out", (clf_tensor){g->serial, 0}), CLF_OK);
        size_t before = clf_graph_node_count(g);
        clf_tensor t = clf_input(g, cases[k].name, cases[k].dt, cases[k].rank, cases[k].shape);
        ck_assert_msg(!clf_tensor_valid(t), "case %zu succeeded", k);
        ck_assert_uint_eq(clf_graph_node_count(g), before);
        ck_assert_uint_eq(g->ninputs, 1);
        expect_error_(g, cases[k].st, cases[k].s1, cases[k].s2, (int)k);
        clf_graph_destroy(&g);
    }
}
END_TEST

START_TEST(test_scalar)
{
    struct {
        clf_dtype dt;
        double value, want;
    } cases[] = {
        {CLF_F32, 2.5, 2.5},
        {CLF_F32, 0.1, (double)0.1f},
        {CLF_I32, 3.7, 3},
        {CLF_I32, -3.7, -3},
        {CLF_I32, 1e10, 2147483647.0},
        {CLF_I32, 2147483648.0, 2147483647.0},
        {CLF_I32, 2147483646.9, 2147483646.0},
        {CLF_I32, -2147483648.9, -2147483648.0},
        {CLF_I32, -2147483649.0, -2147483648.0},
        {CLF_I32, -1e10, -2147483648.0},
        {CLF_I32, INFINITY, 2147483647.0},
        {CLF_I32, NAN, 0},
        {CLF_BOOL, 0.5, 1},
        {CLF_BOOL, -2, 1},
        {CLF_BOOL, 0.0, 0},
        {CLF_BOOL, -0.0, 0},
    };
    clf_graph *g = clf_graph_create();
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        clf_tensor t = clf_scalar(g, cases[k].dt, cases[k].value);
        EXPECT_SHAPE(g, t, 0, NULL);
        EXPECT_DTYPE(g, t, cases[k].dt);
        const clf__node *n = node_of(g, t);
        ck_assert_int_eq(n->op, CLF__OP_CONSTANT);
        ck_assert_msg(n->attr.constant.scalar == cases[k].want, "case %zu: scalar %g, want %g", k, n->attr.constant.scalar,
                      cases[k].want);
        ck_assert_ptr_nonnull(n->data);
        double stored;
        if (cases[k].dt == CLF_F32)
            stored = *(const float *)n->data;
        else if (cases[k].dt == CLF_I32)
            stored = *(const int32_t *)n->data;
        else
            stored = *(const uint8_t *)n->data;
        ck_assert_msg(stored == cases[k].want, "case %zu: data %g, want %g", k, stored, cases[k].want);
    }
    EXPECT_FAIL(g, clf_scalar(g, (clf_dtype)7, 1.0), CLF_ERR_DTYPE, "clf_scalar: dtype 7", NULL);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(test_constant)
{
    clf_graph *g = clf_graph_create();
    float src[6] = {1, 2, 3, 4, 5, 6};
    clf_tensor c = clf_constant(g, CLF_F32, 2, SHAPE(2, 3), src);
    EXPECT_SHAPE(g, c, 2, SHAPE(2, 3));
    src[0] = 99; /* copied, not referenced */
    const clf__node *n = node_of(g, c);
    ck_assert_int_eq(n->op, CLF__OP_CONSTANT);
    ck_assert_ptr_ne(n->data, src);
    ck_assert_float_eq(((const float *)n->data)[0], 1);
    ck_assert_float_eq(((const float *)n->data)[5], 6);

    uint8_t bits[3] = {1, 0, 1};
    clf_tensor cb = clf_constant(g, CLF_BOOL, 1, SHAPE(3), bits);
    EXPECT_DTYPE(g, cb, CLF_BOOL);
    ck_assert_int_eq(memcmp(node_of(g, cb)->data, bits, 3), 0);

    int32_t seven = 7;
    clf_tensor c0 = clf_constant(g, CLF_I32, 0, NULL, &seven);
    EXPECT_SHAPE(g, c0, 0, NULL);
    ck_assert_int_eq(*(const int32_t *)node_of(g, c0)->data, 7);
    ck_assert(node_of(g, c0)->attr.constant.scalar == 7);

    /* Zero-size constants may pass NULL data. */
    clf_tensor ce = clf_constant(g, CLF_F32, 2, SHAPE(3, 0), NULL);
    EXPECT_SHAPE(g, ce, 2, SHAPE(3, 0));
    ck_assert_int_eq(clf__node_numel(node_of(g, ce)), 0);

    EXPECT_FAIL(g, clf_constant(g, CLF_F32, 2, SHAPE(2, 3), NULL), CLF_ERR_INVALID_ARGUMENT,
                "clf_constant: data is NULL", NULL);
    clf_graph_destroy(&g);

    g = clf_graph_create();
    EXPECT_FAIL(g, clf_constant(g, CLF_F32, 1, SHAPE(-1), src), CLF_ERR_SHAPE,
                "clf_constant: shape[0] = -1", NULL);
    clf_graph_destroy(&g);
    g = clf_graph_create();
    EXPECT_FAIL(g, clf_constant(g, CLF_I32, 2, SHAPE(INT64_C(1) << 40, INT64_C(1) << 30), src),
                CLF_ERR_SHAPE, "clf_constant: shape [1099511627776,1073741824]", "too large");
    clf_graph_destroy(&g);
    g = clf_graph_create();
    EXPECT_FAIL(g, clf_constant(g, (clf_dtype)7, 1, SHAPE(1), src), CLF_ERR_DTYPE,
                "clf_constant: dtype 7", NULL);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(test_constant_out_of_memory)
{
    /* 2^59 f32 elements are 2^61 bytes: the size is legal, the allocation
     * cannot succeed. data is never read because the copy is not made. */
    clf_graph *g = clf_graph_create();
    float one = 1;
    EXPECT_FAIL(g, clf_constant(g, CLF_F32, 1, SHAPE(INT64_C(1) << 59), &one), CLF_ERR_OUT_OF_MEMORY,
                "clf_constant:", "memory");
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(test_outputs)
{
    fixture f = fx();
    clf_tensor y = clf_relu(f.g, f.x);
    ck_assert_int_eq(clf_graph_output(f.g, "y", y), CLF_OK);
    ck_assert_int_eq(clf_graph_output(f.g, "y_again", y), CLF_OK); /* same node, second name */
    ck_assert_int_eq(clf_graph_output(f.g, "x_out", f.x), CLF_OK); /* an input may be an output */
    ck_assert_uint_eq(f.g->noutputs, 3);
    ck_assert_str_eq(f.g->outputs[0].name, "y");
    ck_assert_uint_eq(f.g->outputs[0].node, y.node);
    ck_assert_uint_eq(f.g->outputs[1].node, y.node);
    ck_assert_uint_eq(f.g->outputs[2].node, f.x.node);
    /* Names are copied. */
    char name[] = "copy";
    ck_assert_int_eq(clf_graph_output(f.g, name, y), CLF_OK);
    name[0] = 'X';
    ck_assert_str_eq(f.g->outputs[3].name, "copy");
    /* An input may not take an output's name. */
    EXPECT_FAIL(f.g, clf_input(f.g, "y", CLF_F32, 0, NULL), CLF_ERR_INVALID_ARGUMENT,
                "clf_input: name \"y\"", "output");
    clf_graph_destroy(&f.g);

    struct {
        const char *name;
        int which; /* 0: y, 1: invalid, 2: foreign, 3: out of range */
        const char *s1, *s2;
    } cases[] = {
        {NULL, 0, "clf_graph_output: name is NULL", NULL},
        {"", 0, "clf_graph_output: name is empty", NULL},
        {"x", 0, "clf_graph_output: name \"x\"", "input"},
        {"y", 0, "clf_graph_output: name \"y\"", "output"},
        {"z", 1, "clf_graph_output: t is CLF_TENSOR_INVALID", NULL},
        {"z", 2, "clf_graph_output: t belongs to another graph", NULL},
        {"z", 3, "clf_graph_output: t (node 77)", NULL},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        f = fx();
        clf_graph *h = clf_graph_create();
        clf_tensor foreign = clf_input(h, "q", CLF_F32, 0, NULL);
        y = clf_relu(f.g, f.x);
        ck_assert_int_eq(clf_graph_output(f.g, "y", y), CLF_OK);
        clf_tensor t = cases[k].which == 0   ? y
                       : cases[k].which == 1 ? CLF_TENSOR_INVALID
                       : cases[k].which == 2 ? foreign
                                             : (clf_tensor){f.g->serial, 77};
        ck_assert_int_eq(clf_graph_output(f.g, cases[k].name, t), CLF_ERR_INVALID_ARGUMENT);
        ck_assert_uint_eq(f.g->noutputs, 1);
        expect_error_(f.g, CLF_ERR_INVALID_ARGUMENT, cases[k].s1, cases[k].s2, (int)k);
        /* Once errored, clf_graph_output returns the graph's status. */
        ck_assert_int_eq(clf_graph_output(f.g, "fine", y), CLF_ERR_INVALID_ARGUMENT);
        ck_assert_uint_eq(f.g->noutputs, 1);
        clf_graph_destroy(&h);
        clf_graph_destroy(&f.g);
    }

    /* ... and not CLF_ERR_INVALID_ARGUMENT when the first error was another. */
    f = fx();
    ck_assert(!clf_tensor_valid(clf_add(f.g, f.x, f.v)));
    ck_assert_int_eq(clf_graph_output(f.g, "fine", f.x), CLF_ERR_SHAPE);
    clf_graph_destroy(&f.g);
}
END_TEST

START_TEST(test_long_names)
{
    /* Names longer than the message buffer are kept whole; the message is
     * truncated, not overflowed. */
    char name[2000];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    clf_graph *g = clf_graph_create();
    clf_tensor t = clf_input(g, name, CLF_F32, 0, NULL);
    ck_assert(clf_tensor_valid(t));
    ck_assert_uint_eq(strlen(node_of(g, t)->name), sizeof name - 1);
    EXPECT_FAIL(g, clf_input(g, name, CLF_F32, 0, NULL), CLF_ERR_INVALID_ARGUMENT,
                "clf_input: name \"nnnn", NULL);
    const char *m = msg_of(g);
    ck_assert_uint_lt(strlen(m), sizeof g->message);
    clf_graph_destroy(&g);
}
END_TEST

/* ---- Pointwise -------------------------------------------------------- */

/* Dtypes each unary op takes, written out independently of the library. */
static int is_float(clf_dtype dt) { return dt == CLF_F32 || dt == CLF_F16 || dt == CLF_BF16; }

static int unary_takes(clf_unary_op op, clf_dtype dt)
{
    if (op == CLF_UNARY_NOT)
        return dt == CLF_BOOL;
    if (op == CLF_UNARY_ISNAN)
        return is_float(dt);
    if (op == CLF_UNARY_NEG || op == CLF_UNARY_ABS || op == CLF_UNARY_SIGN)
        return is_float(dt) || dt == CLF_I32 || dt == CLF_I64;
    return is_float(dt);
}

typedef clf_tensor (*unary_fn)(clf_graph *, clf_tensor);
static const struct {
    clf_unary_op op;
    unary_fn fn;
    const char *builder, *op_name;
} unary_ops[] = {
    {CLF_UNARY_NEG, clf_neg, "neg", "neg"},
    {CLF_UNARY_ABS, clf_abs, "abs", "abs"},
    {CLF_UNARY_EXP, clf_exp, "exp", "exp"},
    {CLF_UNARY_LOG, clf_log, "log", "log"},
    {CLF_UNARY_SQRT, clf_sqrt, "sqrt", "sqrt"},
    {CLF_UNARY_RSQRT, clf_rsqrt, "rsqrt", "rsqrt"},
    {CLF_UNARY_RECIPROCAL, clf_reciprocal, "reciprocal", "reciprocal"},
    {CLF_UNARY_SIN, clf_sin, "sin", "sin"},
    {CLF_UNARY_COS, clf_cos, "cos", "cos"},
    {CLF_UNARY_TANH, clf_tanh, "tanh", "tanh"},
    {CLF_UNARY_SIGMOID, clf_sigmoid, "sigmoid", "sigmoid"},
    {CLF_UNARY_RELU, clf_relu, "relu", "relu"},
    {CLF_UNARY_GELU, clf_gelu, "gelu", "gelu"},
    {CLF_UNARY_SILU, clf_silu, "silu", "silu"},
    {CLF_UNARY_ERF, clf_erf, "erf", "erf"},
    {CLF_UNARY_FLOOR, clf_floor, "floor", "floor"},
    {CLF_UNARY_CEIL, clf_ceil, "ceil", "ceil"},
    {CLF_UNARY_SIGN, clf_sign, "sign", "sign"},
    {CLF_UNARY_NOT, clf_logical_not, "logical_not", "not"},
    {CLF_UNARY_ISNAN, clf_isnan, "isnan", "isnan"},
};

START_TEST(test_unary_ops)
{
    ck_assert_uint_eq(sizeof unary_ops / sizeof unary_ops[0], CLF_UNARY_COUNT);
    for (size_t k = 0; k < CLF_UNARY_COUNT; k++) {
        for (int dt = 0; dt < CLF_DTYPE_COUNT; dt++) {
            for (int via_enum = 0; via_enum < 2; via_enum++) {
                clf_graph *g = clf_graph_create();
                clf_tensor x = clf_input(g, "x", (clf_dtype)dt, 3, SHAPE(4, 0, 1));
                clf_tensor y = via_enum ? clf_unary(g, unary_ops[k].op, x) : unary_ops[k].fn(g, x);
                if (unary_takes(unary_ops[k].op, (clf_dtype)dt)) {
                    EXPECT_SHAPE(g, y, 3, SHAPE(4, 0, 1));
                    EXPECT_DTYPE(g, y, unary_ops[k].op == CLF_UNARY_ISNAN ? CLF_BOOL : (clf_dtype)dt);
                    const clf__node *n = node_of(g, y);
                    ck_assert_int_eq(n->op, clf__op_of_unary(unary_ops[k].op));
                    ck_assert_int_eq(n->ninputs, 1);
                    ck_assert_uint_eq(n->inputs[0], x.node);
                    ck_assert_str_eq(clf__node_op_name(n), unary_ops[k].op_name);
                    ck_assert_int_eq(clf__node_class_of(n), CLF__CLASS_POINTWISE);
                } else {
                    char s1[64], s2[64];
                    snprintf(s1, sizeof s1, "clf_%s: x has dtype %s",
                             via_enum ? "unary" : unary_ops[k].builder, clf_dtype_name(dt));
                    snprintf(s2, sizeof s2, "; %s takes ", unary_ops[k].builder);
                    ck_assert(!clf_tensor_valid(y));
                    expect_error_(g, CLF_ERR_DTYPE, s1, s2, __LINE__);
                }
                clf_graph_destroy(&g);
            }
        }
    }
}
END_TEST

START_TEST(test_unary_messages)
{
    fixture f = fx();
    EXPECT_FAIL(f.g, clf_exp(f.g, f.i), CLF_ERR_DTYPE, "clf_exp: x has dtype i32; exp takes f32", NULL);
    clf_graph_destroy(&f.g);
    f = fx();
    EXPECT_FAIL(f.g, clf_neg(f.g, f.b), CLF_ERR_DTYPE, "clf_neg: x has dtype bool; neg takes f32, f16, bf16, i32 or i64",
                NULL);
    clf_graph_destroy(&f.g);
    f = fx();
    EXPECT_FAIL(f.g, clf_logical_not(f.g, f.x), CLF_ERR_DTYPE,
                "clf_logical_not: x has dtype f32; logical_not takes bool", NULL);
    clf_graph_destroy(&f.g);
    f = fx();
    EXPECT_FAIL(f.g, clf_unary(f.g, CLF_UNARY_COUNT, f.x), CLF_ERR_INVALID_ARGUMENT, "clf_unary: op 20",
                NULL);
    clf_graph_destroy(&f.g);
    f = fx();
    EXPECT_FAIL(f.g, clf_unary(f.g, (clf_unary_op)-1, f.x), CLF_ERR_INVALID_ARGUMENT, "clf_unary: op -1",
                NULL);
    clf_graph_destroy(&f.g);
    f = fx();
    EXPECT_FAIL(f.g, clf_sqrt(f.g, CLF_TENSOR_INVALID), CLF_ERR_INVALID_ARGUMENT,
                "clf_sqrt: x is CLF_TENSOR_INVALID", NULL);
    clf_graph_destroy(&f.g);
}
END_TEST

/* Dtypes each binary op takes, and what it gives, written out
 * independently of the library. */
static int binary_takes(clf_binary_op op, clf_dtype dt)
{
    switch (op) {
    case CLF_BINARY_POW:
        return is_float(dt);
    case CLF_BINARY_EQ:
    case CLF_BINARY_NE:
        return 1;
    case CLF_BINARY_AND:
    case CLF_BINARY_OR:
        return dt == CLF_BOOL;
    default:
        return dt != CLF_BOOL;
    }
}

typedef clf_tensor (*binary_fn)(clf_graph *, clf_tensor, clf_tensor);
static const struct {
    clf_binary_op op;
    binary_fn fn;
    const char *builder, *op_name;
    int gives_bool;
} binary_ops[] = {
    {CLF_BINARY_ADD, clf_add, "add", "add", 0},
    {CLF_BINARY_SUB, clf_sub, "sub", "sub", 0},
    {CLF_BINARY_MUL, clf_mul, "mul", "mul", 0},
    {CLF_BINARY_DIV, clf_div, "div", "div", 0},
    {CLF_BINARY_POW, clf_pow, "pow", "pow", 0},
    {CLF_BINARY_MAXIMUM, clf_maximum, "maximum", "maximum", 0},
    {CLF_BINARY_MINIMUM, clf_minimum, "minimum", "minimum", 0},
    {CLF_BINARY_EQ, clf_eq, "eq", "eq", 1},
    {CLF_BINARY_NE, clf_ne, "ne", "ne", 1},
    {CLF_BINARY_LT, clf_lt, "lt", "lt", 1},
    {CLF_BINARY_LE, clf_le, "le", "le", 1},
    {CLF_BINARY_GT, clf_gt, "gt", "gt", 1},
    {CLF_BINARY_GE, clf_ge, "ge", "ge", 1},
    {CLF_BINARY_AND, clf_logical_and, "logical_and", "and", 0},
    {CLF_BINARY_OR, clf_logical_or, "logical_or", "or", 0},
};

START_TEST(test_binary_ops)
{
    ck_assert_uint_eq(sizeof binary_ops / sizeof binary_ops[0], CLF_BINARY_COUNT);
    for (size_t k = 0; k < CLF_BINARY_COUNT; k++) {
        for (int dt = 0; dt < CLF_DTYPE_COUNT; dt++) {
            for (int via_enum = 0; via_enum < 2; via_enum++) {
                clf_graph *g = clf_graph_create();
                clf_tensor a = clf_input(g, "a", (clf_dtype)dt, 2, SHAPE(2, 1));
                clf_tensor b = clf_input(g, "b", (clf_dtype)dt, 1, SHAPE(5));
                clf_tensor y =
                    via_enum ? clf_binary(g, binary_ops[k].op, a, b) : binary_ops[k].fn(g, a, b);
                if (binary_takes(binary_ops[k].op, (clf_dtype)dt)) {
                    EXPECT_SHAPE(g, y, 2, SHAPE(2, 5));
                    EXPECT_DTYPE(g, y, binary_ops[k].gives_bool ? CLF_BOOL : (clf_dtype)dt);
                    const clf__node *n = node_of(g, y);
                    ck_assert_int_eq(n->op, clf__op_of_binary(binary_ops[k].op));
                    ck_assert_int_eq(n->ninputs, 2);
                    ck_assert_uint_eq(n->inputs[0], a.node);
                    ck_assert_uint_eq(n->inputs[1], b.node);
                    ck_assert_str_eq(clf__node_op_name(n), binary_ops[k].op_name);
                    ck_assert_int_eq(clf__node_class_of(n), CLF__CLASS_POINTWISE);
                } else {
                    char s1[80], s2[64];
                    snprintf(s1, sizeof s1, "clf_%s: a and b have dtype %s",
                             via_enum ? "binary" : binary_ops[k].builder, clf_dtype_name(dt));
                    snprintf(s2, sizeof s2, "; %s takes ", binary_ops[k].builder);
                    ck_assert(!clf_tensor_valid(y));
                    expect_error_(g, CLF_ERR_DTYPE, s1, s2, __LINE__);
                }
                clf_graph_destroy(&g);
            }
        }
    }
}
END_TEST

/* Broadcasting of two shapes: rank 0, size 1 and size 0 extents. */
START_TEST(test_broadcasting)
{
    struct {
        int ra;
        int64_t a[CLF_MAX_RANK];
        int rb;
        int64_t b[CLF_MAX_RANK];
        int rw;
        int64_t w[CLF_MAX_RANK];
    } ok[] = {
        {2, {2, 3}, 1, {3}, 2, {2, 3}},
        {1, {3}, 2, {2, 3}, 2, {2, 3}},
        {3, {2, 1, 4}, 2, {3, 1}, 3, {2, 3, 4}},
        {0, {0}, 2, {2, 3}, 2, {2, 3}},
        {2, {2, 3}, 0, {0}, 2, {2, 3}},
        {0, {0}, 0, {0}, 0, {0}},
        {2, {0, 3}, 2, {1, 3}, 2, {0, 3}},
        {1, {1}, 1, {0}, 1, {0}},
        {1, {0}, 0, {0}, 1, {0}},
        {2, {1, 1}, 1, {1}, 2, {1, 1}},
        {8, {1, 2, 1, 2, 1, 2, 1, 2}, 3, {1, 3, 2}, 8, {1, 2, 1, 2, 1, 2, 3, 2}},
    };
    for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
        clf_graph *g = clf_graph_create();
        clf_tensor a = clf_input(g, "a", CLF_F32, ok[k].ra, ok[k].a);
        clf_tensor b = clf_input(g, "b", CLF_F32, ok[k].rb, ok[k].b);
        EXPECT_SHAPE(g, clf_mul(g, a, b), ok[k].rw, ok[k].w);
        EXPECT_SHAPE(g, clf_mul(g, b, a), ok[k].rw, ok[k].w);
        clf_graph_destroy(&g);
    }
    fixture f = fx();
    EXPECT_FAIL(f.g, clf_add(f.g, f.x, f.v), CLF_ERR_SHAPE,
                "clf_add: shapes [2,3] (a) and [4] (b) do not broadcast", NULL);
    clf_graph_destroy(&f.g);
    clf_graph *g = clf_graph_create();
    clf_tensor z = clf_input(g, "z", CLF_I32, 1, SHAPE(0));
    clf_tensor t = clf_input(g, "t", CLF_I32, 1, SHAPE(2));
    EXPECT_FAIL(g, clf_sub(g, z, t), CLF_ERR_SHAPE,
                "clf_sub: shapes [0] (a) and [2] (b) do not broadcast", NULL);
    clf_graph_destroy(&g);
    g = clf_graph_create();
    clf_tensor s = clf_input(g, "s", CLF_F32, 0, NULL);
    clf_tensor m = clf_input(g, "m", CLF_F32, 2, SHAPE(3, 2));
    clf_tensor n = clf_input(g, "n", CLF_F32, 2, SHAPE(2, 3));
    EXPECT_SHAPE(g, clf_add(g, s, m), 2, SHAPE(3, 2));
    EXPECT_FAIL(g, clf_binary(g, CLF_BINARY_MAXIMUM, m, n), CLF_ERR_SHAPE,
                "clf_binary: shapes [3,2] (a) and [2,3] (b) do not broadcast", NULL);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(test_binary_errors)
{
    fixture f = fx();
    EXPECT_FAIL(f.g, clf_add(f.g, f.x, f.i), CLF_ERR_DTYPE,
                "clf_add: a has dtype f32 and b has dtype i32", NULL);
    clf_graph_destroy(&f.g);
    f = fx();
    EXPECT_FAIL(f.g, clf_eq(f.g, f.b, f.i), CLF_ERR_DTYPE,
                "clf_eq: a has dtype bool and b has dtype i32", NULL);
    clf_graph_destroy(&f.g);
    f = fx();
    EXPECT_FAIL(f.g, clf_pow(f.g, f.i, f.i), CLF_ERR_DTYPE,
                "clf_pow: a and b have dtype i32; pow takes f32", NULL);
    clf_graph_destroy(&f.g);
    f = fx();
    EXPECT_FAIL(f.g, clf_lt(f.g, f.b, f.b), CLF_ERR_DTYPE,
                "clf_lt: a and b have dtype bool; lt takes f32, f16, bf16, i32 or i64", NULL);
    clf_graph_destroy(&f.g);
    f = fx();
    EXPECT_FAIL(f.g, clf_logical_and(f.g, f.x, f.x), CLF_ERR_DTYPE,
                "clf_logical_and: a and b have dtype f32; logical_and takes bool", NULL);
    clf_graph_destroy(&f.g);
    f = fx();
    EXPECT_FAIL(f.g, clf_binary(f.g, CLF_BINARY_COUNT, f.x, f.x), CLF_ERR_INVALID_ARGUMENT,
                "clf_binary: op 15", NULL);
    clf_graph_destroy(&f.g);
    f = fx();
    EXPECT_FAIL(f.g, clf_mul(f.g, CLF_TENSOR_INVALID, f.x), CLF_ERR_INVALID_ARGUMENT,
                "clf_mul: a is CLF_TENSOR_INVALID", NULL);
    clf_graph_destroy(&f.g);
    f = fx();
    EXPECT_FAIL(f.g, clf_mul(f.g, f.x, CLF_TENSOR_INVALID), CLF_ERR_INVALID_ARGUMENT,
                "clf_mul: b is CLF_TENSOR_INVALID", NULL);
    clf_graph_destroy(&f.g);
}
END_TEST

START_TEST(test_where)
{
    clf_graph *g = clf_graph_create();
    clf_tensor c = clf_input(g, "c", CLF_BOOL, 2, SHAPE(2, 1));
    clf_tensor a = clf_input(g, "a", CLF_I32, 2, SHAPE(1, 3));
    clf_tensor b = clf_input(g, "b", CLF_I32, 0, NULL);
    clf_tensor y = clf_where(g, c, a, b);
    EXPECT_SHAPE(g, y, 2, SHAPE(2, 3));
    EXPECT_DTYPE(g, y, CLF_I32);
    const clf__node *n = node_of(g, y);
    ck_assert_int_eq(n->op, CLF__OP_WHERE);
    ck_assert_int_eq(n->ninputs, 3);
    ck_assert_uint_eq(n->inputs[0], c.node);
    ck_assert_uint_eq(n->inputs[1], a.node);
    ck_assert_uint_eq(n->inputs[2], b.node);
    ck_assert_str_eq(clf__node_op_name(n), "where");
    /* The cond alone may carry the largest rank; bool values are fine too. */
    clf_tensor c3 = clf_input(g, "c3", CLF_BOOL, 3, SHAPE(4, 1, 1));
    EXPECT_SHAPE(g, clf_where(g, c3, c, c), 3, SHAPE(4, 2, 1));
    EXPECT_DTYPE(g, clf_where(g, c3, c, c), CLF_BOOL);
    /* b alone sets an extent, and 0 against 1 gives 0. */
    clf_tensor z = clf_input(g, "z", CLF_I32, 3, SHAPE(0, 1, 3));
    EXPECT_SHAPE(g, clf_where(g, c, a, z), 3, SHAPE(0, 2, 3));
    clf_graph_destroy(&g);

    fixture f = fx();
    EXPECT_FAIL(f.g, clf_where(f.g, f.x, f.x, f.x), CLF_ERR_DTYPE, "clf_where: cond has dtype f32",
                NULL);
    clf_graph_destroy(&f.g);
    f = fx();
    EXPECT_FAIL(f.g, clf_where(f.g, f.b, f.x, f.i), CLF_ERR_DTYPE,
                "clf_where: a has dtype f32 and b has dtype i32", NULL);
    clf_graph_destroy(&f.g);
    f = fx();
    EXPECT_FAIL(f.g, clf_where(f.g, f.b, f.x, f.v), CLF_ERR_SHAPE,
                "clf_where: shapes [2,3] (cond), [2,3] (a) and [4] (b) do not broadcast", NULL);
    clf_graph_destroy(&f.g);
    f = fx();
    EXPECT_FAIL(f.g, clf_where(f.g, CLF_TENSOR_INVALID, f.x, f.x), CLF_ERR_INVALID_ARGUMENT,
                "clf_where: cond is CLF_TENSOR_INVALID", NULL);
    clf_graph_destroy(&f.g);
    f = fx();
    EXPECT_FAIL(f.g, clf_where(f.g, f.b, f.x, CLF_TENSOR_INVALID), CLF_ERR_INVALID_ARGUMENT,
                "clf_where: b is CLF_TENSOR_INVALID", NULL);
    clf_graph_destroy(&f.g);
}
END_TEST

START_TEST(test_clip)
{
    fixture f = fx();
    clf_tensor y = clf_clip(f.g, f.x, -1.5, INFINITY);
    EXPECT_SHAPE(f.g, y, 2, SHAPE(2, 3));
    EXPECT_DTYPE(f.g, y, CLF_F32);
    const clf__node *n = node_of(f.g, y);
    ck_assert_int_eq(n->op, CLF__OP_CLIP);
    ck_assert(n->attr.clip.lo == -1.5);
    ck_assert(isinf(n->attr.clip.hi) && n->attr.clip.hi > 0);
    ck_assert_str_eq(clf__node_op_name(n), "clip");
    clf_tensor yi = clf_clip(f.g, f.i, 5, 2); /* lo > hi is allowed */
    EXPECT_DTYPE(f.g, yi, CLF_I32);
    ck_assert(node_of(f.g, yi)->attr.clip.lo == 5 && node_of(f.g, yi)->attr.clip.hi == 2);
    clf_graph_destroy(&f.g);

    f = fx();
    EXPECT_FAIL(f.g, clf_clip(f.g, f.b, 0, 1), CLF_ERR_DTYPE,
                "clf_clip: x has dtype bool; clip takes f32, f16, bf16 or i32", NULL);
    clf_graph_destroy(&f.g);
    f = fx();
    EXPECT_FAIL(f.g, clf_clip(f.g, f.x, NAN, 1), CLF_ERR_INVALID_ARGUMENT, "clf_clip: lo is NaN", NULL);
    clf_graph_destroy(&f.g);
    f = fx();
    EXPECT_FAIL(f.g, clf_clip(f.g, f.x, 0, NAN), CLF_ERR_INVALID_ARGUMENT, "clf_clip: hi is NaN", NULL);
    clf_graph_destroy(&f.g);
}
END_TEST

START_TEST(test_cast)
{
    for (int from = 0; from < CLF_DTYPE_COUNT; from++) {
        for (int to = 0; to < CLF_DTYPE_COUNT; to++) {
            clf_graph *g = clf_graph_create();
            clf_tensor x = clf_input(g, "x", (clf_dtype)from, 2, SHAPE(3, 0));
            clf_tensor y = clf_cast(g, x, (clf_dtype)to);
            EXPECT_SHAPE(g, y, 2, SHAPE(3, 0));
            EXPECT_DTYPE(g, y, (clf_dtype)to);
            ck_assert_int_eq(node_of(g, y)->op, CLF__OP_CAST);
            ck_assert_str_eq(clf__node_op_name(node_of(g, y)), "cast");
            clf_graph_destroy(&g);
        }
    }
    fixture f = fx();
    EXPECT_FAIL(f.g, clf_cast(f.g, f.x, CLF_DTYPE_COUNT), CLF_ERR_DTYPE, "clf_cast: dtype 6", NULL);
    clf_graph_destroy(&f.g);
    /* A bool tensor that fits can become an f32 tensor that does not. */
    clf_graph *g = clf_graph_create();
    clf_tensor big = clf_input(g, "big", CLF_BOOL, 1, SHAPE(INT64_C(1) << 62));
    EXPECT_FAIL(g, clf_cast(g, big, CLF_F32), CLF_ERR_SHAPE, "clf_cast: the result", "too large");
    clf_graph_destroy(&g);
}
END_TEST

/* ---- Handles and stickiness ------------------------------------------- */

START_TEST(test_foreign_handles)
{
    fixture f = fx(), h = fx();
    EXPECT_FAIL(f.g, clf_add(f.g, f.x, h.x), CLF_ERR_INVALID_ARGUMENT,
                "clf_add: b belongs to another graph", NULL);
    clf_graph_destroy(&f.g);
    f = fx();
    EXPECT_FAIL(f.g, clf_relu(f.g, h.x), CLF_ERR_INVALID_ARGUMENT,
                "clf_relu: x belongs to another graph", NULL);
    clf_graph_destroy(&f.g);
    f = fx();
    EXPECT_FAIL(f.g, clf_transpose(f.g, h.x, 0, NULL), CLF_ERR_INVALID_ARGUMENT,
                "clf_transpose: x belongs to another graph", NULL);
    clf_graph_destroy(&f.g);
    f = fx();
    EXPECT_FAIL(f.g, clf_where(f.g, f.b, h.x, f.x), CLF_ERR_INVALID_ARGUMENT,
                "clf_where: a belongs to another graph", NULL);
    clf_graph_destroy(&f.g);
    /* A handle of a destroyed graph is foreign too. */
    f = fx();
    clf_tensor stale = h.x;
    clf_graph_destroy(&h.g);
    EXPECT_FAIL(f.g, clf_exp(f.g, stale), CLF_ERR_INVALID_ARGUMENT,
                "clf_exp: x belongs to another graph", NULL);
    clf_graph_destroy(&f.g);
    /* Right graph, node index past the end. */
    f = fx();
    clf_tensor far = {f.g->serial, 4};
    EXPECT_FAIL(f.g, clf_reshape(f.g, far, 1, SHAPE(6)), CLF_ERR_INVALID_ARGUMENT,
                "clf_reshape: x (node 4) is not a node of this graph", NULL);
    clf_graph_destroy(&f.g);
}
END_TEST

START_TEST(test_sticky_error)
{
    fixture f = fx();
    clf_tensor good = clf_relu(f.g, f.x);
    ck_assert(clf_tensor_valid(good));
    ck_assert(!clf_tensor_valid(clf_add(f.g, f.x, f.v)));
    const char *m1 = NULL;
    ck_assert_int_eq(clf_graph_status(f.g, &m1), CLF_ERR_SHAPE);
    char first[sizeof f.g->message];
    snprintf(first, sizeof first, "%s", m1);
    size_t count = clf_graph_node_count(f.g);

    /* Valid calls now do nothing... */
    ck_assert(!clf_tensor_valid(clf_relu(f.g, f.x)));
    ck_assert(!clf_tensor_valid(clf_input(f.g, "new", CLF_F32, 0, NULL)));
    ck_assert(!clf_tensor_valid(clf_scalar(f.g, CLF_F32, 1)));
    ck_assert(!clf_tensor_valid(clf_reshape(f.g, f.x, 1, SHAPE(6))));
    ck_assert(!clf_tensor_valid(clf_slice(f.g, f.x, 0, NULL, NULL, NULL, NULL)));
    ck_assert_int_eq(clf_graph_output(f.g, "y", good), CLF_ERR_SHAPE);
    /* ... and a second bad call does not replace the first error. */
    ck_assert(!clf_tensor_valid(clf_exp(f.g, f.i)));
    ck_assert(!clf_tensor_valid(clf_input(f.g, NULL, CLF_F32, 0, NULL)));
    ck_assert_uint_eq(clf_graph_node_count(f.g), count);
    ck_assert_uint_eq(f.g->noutputs, 0);
    const char *m2 = NULL;
    ck_assert_int_eq(clf_graph_status(f.g, &m2), CLF_ERR_SHAPE);
    ck_assert_str_eq(m2, first);
    ck_assert_ptr_nonnull(strstr(m2, "clf_add"));
    /* Existing handles can still be queried. */
    EXPECT_SHAPE(f.g, good, 2, SHAPE(2, 3));
    /* Other graphs are unaffected. */
    fixture h = fx();
    ck_assert(clf_tensor_valid(clf_relu(h.g, h.x)));
    ck_assert_int_eq(clf_graph_status(h.g, NULL), CLF_OK);
    clf_graph_destroy(&h.g);
    clf_graph_destroy(&f.g);
}
END_TEST

/* ---- Movement --------------------------------------------------------- */

START_TEST(test_reshape)
{
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_F32, 3, SHAPE(2, 3, 4));
    EXPECT_SHAPE(g, clf_reshape(g, x, 2, SHAPE(6, -1)), 2, SHAPE(6, 4));
    EXPECT_SHAPE(g, clf_reshape(g, x, 2, SHAPE(0, -1)), 2, SHAPE(2, 12));
    EXPECT_SHAPE(g, clf_reshape(g, x, 3, SHAPE(0, 0, -1)), 3, SHAPE(2, 3, 4));
    EXPECT_SHAPE(g, clf_reshape(g, x, 1, SHAPE(-1)), 1, SHAPE(24));
    EXPECT_SHAPE(g, clf_reshape(g, x, 4, SHAPE(-1, 0, 2, 1)), 4, SHAPE(4, 3, 2, 1));
    EXPECT_SHAPE(g, clf_reshape(g, x, 3, SHAPE(4, 3, 2)), 3, SHAPE(4, 3, 2));
    clf_tensor r = clf_reshape(g, x, 2, SHAPE(4, 6));
    const clf__node *n = node_of(g, r);
    ck_assert_int_eq(n->op, CLF__OP_RESHAPE);
    ck_assert_int_eq(n->ninputs, 1);
    ck_assert_uint_eq(n->inputs[0], x.node);
    ck_assert_int_eq(n->dtype, CLF_F32);
    ck_assert_str_eq(clf__node_op_name(n), "reshape");
    ck_assert_int_eq(clf__node_class_of(n), CLF__CLASS_MOVEMENT);

    clf_tensor s = clf_input(g, "s", CLF_I32, 0, NULL);
    clf_tensor s11 = clf_reshape(g, s, 2, SHAPE(1, -1));
    EXPECT_SHAPE(g, s11, 2, SHAPE(1, 1));
    EXPECT_DTYPE(g, s11, CLF_I32);
    EXPECT_SHAPE(g, clf_reshape(g, s11, 0, NULL), 0, NULL);
    clf_tensor z = clf_input(g, "z", CLF_F32, 2, SHAPE(0, 3));
    EXPECT_SHAPE(g, clf_reshape(g, z, 2, SHAPE(-1, 3)), 2, SHAPE(0, 3));
    EXPECT_SHAPE(g, clf_reshape(g, z, 3, SHAPE(0, 5, 7)), 3, SHAPE(0, 5, 7)); /* 0 copies z's 0 */
    EXPECT_SHAPE(g, clf_reshape(g, z, 1, SHAPE(0)), 1, SHAPE(0));
    ck_assert_int_eq(clf_graph_status(g, NULL), CLF_OK);
    clf_graph_destroy(&g);

    struct {
        int rank;
        const int64_t *shape;
        clf_status st;
        const char *s1, *s2;
    } bad[] = {
        {2, SHAPE(-1, -1), CLF_ERR_SHAPE, "clf_reshape: shape[0] and shape[1] are both -1", NULL},
        {2, SHAPE(4, -2), CLF_ERR_SHAPE, "clf_reshape: shape[1] = -2", NULL},
        {4, SHAPE(1, 1, 1, 0), CLF_ERR_SHAPE, "clf_reshape: shape[3] = 0", "rank 3"},
        {2, SHAPE(5, 5), CLF_ERR_SHAPE, "clf_reshape: x has shape [2,3,4] (24 elements)", "shape [5,5]"},
        {2, SHAPE(5, -1), CLF_ERR_SHAPE, "clf_reshape: x has shape [2,3,4] (24 elements)",
         "shape [5,-1]"},
        {2, SHAPE(INT64_C(1) << 62, INT64_C(1) << 62), CLF_ERR_SHAPE, "clf_reshape: x has shape", NULL},
        {9, SHAPE(1, 1, 1, 1, 1, 1, 1, 1, 24), CLF_ERR_SHAPE, "clf_reshape: rank 9", NULL},
        {-1, NULL, CLF_ERR_SHAPE, "clf_reshape: rank -1", NULL},
        {2, NULL, CLF_ERR_INVALID_ARGUMENT, "clf_reshape: shape is NULL", NULL},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        g = clf_graph_create();
        x = clf_input(g, "x", CLF_F32, 3, SHAPE(2, 3, 4));
        ck_assert(!clf_tensor_valid(clf_reshape(g, x, bad[k].rank, bad[k].shape)));
        expect_error_(g, bad[k].st, bad[k].s1, bad[k].s2, (int)k);
        clf_graph_destroy(&g);
    }
    g = clf_graph_create();
    z = clf_input(g, "z", CLF_F32, 2, SHAPE(0, 3));
    EXPECT_FAIL(g, clf_reshape(g, z, 2, SHAPE(0, -1)), CLF_ERR_SHAPE,
                "clf_reshape: shape[1] = -1 cannot be inferred", NULL);
    clf_graph_destroy(&g);
    /* allowzero = 0: a 0 copies x's extent, so [3,0] means [3,3] here. */
    g = clf_graph_create();
    z = clf_input(g, "z", CLF_F32, 2, SHAPE(0, 3));
    EXPECT_FAIL(g, clf_reshape(g, z, 2, SHAPE(3, 0)), CLF_ERR_SHAPE,
                "clf_reshape: x has shape [0,3] (0 elements), which shape [3,0] cannot hold", NULL);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(test_transpose)
{
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_F32, 3, SHAPE(2, 3, 4));
    clf_tensor t = clf_transpose(g, x, 3, AXES(2, 0, 1));
    EXPECT_SHAPE(g, t, 3, SHAPE(4, 2, 3));
    const clf__node *n = node_of(g, t);
    ck_assert_int_eq(n->op, CLF__OP_TRANSPOSE);
    ck_assert_int_eq(n->attr.transpose.perm[0], 2);
    ck_assert_int_eq(n->attr.transpose.perm[1], 0);
    ck_assert_int_eq(n->attr.transpose.perm[2], 1);
    ck_assert_uint_eq(n->inputs[0], x.node);
    ck_assert_str_eq(clf__node_op_name(n), "transpose");
    clf_tensor rev = clf_transpose(g, x, 0, NULL);
    EXPECT_SHAPE(g, rev, 3, SHAPE(4, 3, 2));
    n = node_of(g, rev);
    ck_assert_int_eq(n->attr.transpose.perm[0], 2);
    ck_assert_int_eq(n->attr.transpose.perm[1], 1);
    ck_assert_int_eq(n->attr.transpose.perm[2], 0);
    clf_tensor s = clf_input(g, "s", CLF_BOOL, 0, NULL);
    EXPECT_SHAPE(g, clf_transpose(g, s, 0, NULL), 0, NULL);
    clf_tensor z = clf_input(g, "z", CLF_I32, 2, SHAPE(0, 5));
    clf_tensor zt = clf_transpose(g, z, 2, AXES(1, 0));
    EXPECT_SHAPE(g, zt, 2, SHAPE(5, 0));
    EXPECT_DTYPE(g, zt, CLF_I32);
    clf_graph_destroy(&g);

    struct {
        int n;
        const int *perm;
        const char *s1;
    } bad[] = {
        {2, AXES(0, 5), "clf_transpose: perm[1] = 5 is out of range for rank 2"},
        {2, AXES(-1, 0), "clf_transpose: perm[0] = -1 is out of range for rank 2"},
        {2, AXES(1, 1), "clf_transpose: perm[1] = 1 repeats"},
        {3, AXES(0, 1, 2), "clf_transpose: perm has 3 entries but x has rank 2"},
        {1, AXES(0), "clf_transpose: perm has 1 entries"},
        {-1, AXES(0), "clf_transpose: perm has -1 entries"},
        {2, NULL, "clf_transpose: perm is NULL"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        g = clf_graph_create();
        x = clf_input(g, "x", CLF_F32, 2, SHAPE(2, 3));
        EXPECT_FAIL(g, clf_transpose(g, x, bad[k].n, bad[k].perm), CLF_ERR_INVALID_ARGUMENT, bad[k].s1,
                    NULL);
        clf_graph_destroy(&g);
    }
}
END_TEST

START_TEST(test_expand)
{
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_F32, 2, SHAPE(3, 1));
    clf_tensor e = clf_expand(g, x, 3, SHAPE(2, 1, 4));
    EXPECT_SHAPE(g, e, 3, SHAPE(2, 3, 4));
    const clf__node *n = node_of(g, e);
    ck_assert_int_eq(n->op, CLF__OP_EXPAND);
    ck_assert_uint_eq(n->inputs[0], x.node);
    ck_assert_str_eq(clf__node_op_name(n), "expand");
    /* Bidirectional: a smaller target keeps x's extents. */
    EXPECT_SHAPE(g, clf_expand(g, x, 1, SHAPE(1)), 2, SHAPE(3, 1));
    EXPECT_SHAPE(g, clf_expand(g, x, 0, NULL), 2, SHAPE(3, 1));
    EXPECT_SHAPE(g, clf_expand(g, x, 2, SHAPE(1, 5)), 2, SHAPE(3, 5));
    EXPECT_SHAPE(g, clf_expand(g, x, 1, SHAPE(0)), 2, SHAPE(3, 0));
    clf_tensor s = clf_input(g, "s", CLF_I32, 0, NULL);
    clf_tensor es = clf_expand(g, s, 2, SHAPE(2, 2));
    EXPECT_SHAPE(g, es, 2, SHAPE(2, 2));
    EXPECT_DTYPE(g, es, CLF_I32);
    clf_graph_destroy(&g);

    g = clf_graph_create();
    x = clf_input(g, "x", CLF_F32, 2, SHAPE(2, 3));
    EXPECT_FAIL(g, clf_expand(g, x, 1, SHAPE(4)), CLF_ERR_SHAPE,
                "clf_expand: x has shape [2,3], which does not broadcast with shape [4]", NULL);
    clf_graph_destroy(&g);
    g = clf_graph_create();
    x = clf_input(g, "x", CLF_F32, 2, SHAPE(2, 3));
    EXPECT_FAIL(g, clf_expand(g, x, 2, SHAPE(2, -3)), CLF_ERR_SHAPE, "clf_expand: shape[1] = -3", NULL);
    clf_graph_destroy(&g);
    g = clf_graph_create();
    x = clf_input(g, "x", CLF_F32, 2, SHAPE(2, 3));
    EXPECT_FAIL(g, clf_expand(g, x, 9, SHAPE(1, 1, 1, 1, 1, 1, 1, 2, 3)), CLF_ERR_SHAPE,
                "clf_expand: rank 9", NULL);
    clf_graph_destroy(&g);
    g = clf_graph_create();
    x = clf_input(g, "x", CLF_F32, 2, SHAPE(2, 3));
    EXPECT_FAIL(g, clf_expand(g, x, 1, NULL), CLF_ERR_INVALID_ARGUMENT, "clf_expand: shape is NULL",
                NULL);
    clf_graph_destroy(&g);
}
END_TEST

/* One-axis slices of a [10] tensor, per ONNX, with the start index and the
 * extent the node must hold. */
START_TEST(test_slice_one_axis)
{
    struct {
        int64_t start, end, step, want_start, want_extent;
    } cases[] = {
        {2, 8, 3, 2, 2}, /* ceil(6/3) */
        {2, 9, 3, 2, 3}, /* ceil(7/3) */
        {0, 10, 1, 0, 10},
        {-3, -1, 1, 7, 2},     /* negative count from the end */
        {-100, 100, 1, 0, 10}, /* clamped to [0, 10] */
        {100, 200, 1, 10, 0},  /* start past the end */
        {5, 2, 1, 5, 0},       /* empty, not negative */
        {0, 10, 100, 0, 1},
        {0, INT64_MAX, 1, 0, 10},
        {INT64_MIN, INT64_MAX, 4, 0, 3},
        {-1, -11, -1, 9, 10},              /* full reverse: end -11 + 10 = -1 */
        {INT64_MAX, INT64_MIN, -1, 9, 10}, /* start clamps to 9, end to -1 */
        {9, -100, -2, 9, 5},               /* 9,7,5,3,1 */
        {8, 2, -3, 8, 2},                  /* 8,5 */
        {100, 5, -1, 9, 4},                /* start clamps to dim-1 */
        {-100, 5, -1, 0, 0},               /* start clamps to 0, end 5: empty */
        {5, 5, -1, 5, 0},
        {3, -1, -1, 3, 0}, /* end -1 means 9 here: empty */
        {9, -100, INT64_MIN, 9, 1},
        {0, 10, INT64_MAX, 0, 1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        clf_graph *g = clf_graph_create();
        clf_tensor x = clf_input(g, "x", CLF_F32, 1, SHAPE(10));
        clf_tensor y = clf_slice(g, x, 1, &cases[k].start, &cases[k].end, NULL, &cases[k].step);
        ck_assert_msg(clf_tensor_valid(y), "case %zu: %s", k, msg_of(g));
        const clf__node *n = node_of(g, y);
        ck_assert_int_eq(n->op, CLF__OP_SLICE);
        ck_assert_msg(n->shape[0] == cases[k].want_extent, "case %zu: extent %lld, want %lld", k,
                      (long long)n->shape[0], (long long)cases[k].want_extent);
        ck_assert_msg(n->attr.slice.start[0] == cases[k].want_start, "case %zu: start %lld, want %lld", k,
                      (long long)n->attr.slice.start[0], (long long)cases[k].want_start);
        ck_assert_int_eq(n->attr.slice.step[0], cases[k].step);
        /* Every index the node reads is inside the input. */
        if (n->shape[0] > 0) {
            int64_t last =
                n->attr.slice.start[0] + (n->shape[0] - 1) * (cases[k].step == INT64_MIN ? 0 : cases[k].step);
            ck_assert_msg(n->attr.slice.start[0] >= 0 && n->attr.slice.start[0] < 10 && last >= 0 && last < 10, "case %zu", k);
        }
        clf_graph_destroy(&g);
    }
}
END_TEST

START_TEST(test_slice_many_axes)
{
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_I32, 3, SHAPE(4, 5, 6));
    /* Negative and unordered axes; axis 1 untouched. */
    clf_tensor y = clf_slice(g, x, 2, SHAPE(1, 1), SHAPE(-1, 3), AXES(-1, 0), NULL);
    EXPECT_SHAPE(g, y, 3, SHAPE(2, 5, 4));
    EXPECT_DTYPE(g, y, CLF_I32);
    const clf__node *n = node_of(g, y);
    ck_assert_int_eq(n->attr.slice.start[0], 1);
    ck_assert_int_eq(n->attr.slice.start[1], 0);
    ck_assert_int_eq(n->attr.slice.start[2], 1);
    ck_assert_int_eq(n->attr.slice.step[0], 1);
    ck_assert_int_eq(n->attr.slice.step[1], 1);
    ck_assert_int_eq(n->attr.slice.step[2], 1);
    ck_assert_uint_eq(n->inputs[0], x.node);
    ck_assert_str_eq(clf__node_op_name(n), "slice");
    /* axes NULL means 0..n-1; steps per axis. */
    clf_tensor r = clf_slice(g, x, 2, SHAPE(-1, 0), SHAPE(INT64_MIN, 5), NULL, SHAPE(-1, 2));
    EXPECT_SHAPE(g, r, 3, SHAPE(4, 3, 6));
    n = node_of(g, r);
    ck_assert_int_eq(n->attr.slice.start[0], 3);
    ck_assert_int_eq(n->attr.slice.step[0], -1);
    ck_assert_int_eq(n->attr.slice.start[1], 0);
    ck_assert_int_eq(n->attr.slice.step[1], 2);
    ck_assert_int_eq(n->attr.slice.step[2], 1);
    /* n = 0 is an identity slice. */
    EXPECT_SHAPE(g, clf_slice(g, x, 0, NULL, NULL, NULL, NULL), 3, SHAPE(4, 5, 6));
    /* Zero-size axes stay empty whatever the step. */
    clf_tensor z = clf_input(g, "z", CLF_F32, 2, SHAPE(0, 3));
    EXPECT_SHAPE(g, clf_slice(g, z, 1, SHAPE(-1), SHAPE(INT64_MIN), NULL, SHAPE(-1)), 2, SHAPE(0, 3));
    EXPECT_SHAPE(g, clf_slice(g, z, 1, SHAPE(0), SHAPE(5), NULL, NULL), 2, SHAPE(0, 3));
    ck_assert_int_eq(clf_graph_status(g, NULL), CLF_OK);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(test_slice_errors)
{
    struct {
        int n;
        const int64_t *starts, *ends;
        const int *axes;
        const int64_t *steps;
        const char *s1;
    } bad[] = {
        {1, SHAPE(0), SHAPE(1), NULL, SHAPE(0), "clf_slice: steps[0] is 0"},
        {2, SHAPE(0, 0), SHAPE(1, 1), AXES(0, 1), SHAPE(1, 0), "clf_slice: steps[1] is 0"},
        {1, SHAPE(0), SHAPE(1), AXES(3), NULL, "clf_slice: axes[0] = 3 is out of range for rank 3"},
        {1, SHAPE(0), SHAPE(1), AXES(-4), NULL, "clf_slice: axes[0] = -4 is out of range for rank 3"},
        {2, SHAPE(0, 0), SHAPE(1, 1), AXES(2, -1), NULL, "clf_slice: axes[1] = -1 repeats"},
        {1, NULL, SHAPE(1), NULL, NULL, "clf_slice: starts is NULL"},
        {1, SHAPE(0), NULL, NULL, NULL, "clf_slice: ends is NULL"},
        {4, SHAPE(0, 0, 0, 0), SHAPE(1, 1, 1, 1), NULL, NULL, "clf_slice: n = 4 exceeds the rank 3"},
        {-1, SHAPE(0), SHAPE(1), NULL, NULL, "clf_slice: n is negative"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        clf_graph *g = clf_graph_create();
        clf_tensor x = clf_input(g, "x", CLF_F32, 3, SHAPE(4, 5, 6));
        EXPECT_FAIL(g, clf_slice(g, x, bad[k].n, bad[k].starts, bad[k].ends, bad[k].axes, bad[k].steps),
                    CLF_ERR_INVALID_ARGUMENT, bad[k].s1, NULL);
        clf_graph_destroy(&g);
    }
}
END_TEST

START_TEST(test_squeeze)
{
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_F32, 4, SHAPE(1, 3, 1, 2));
    clf_tensor all = clf_squeeze(g, x, 0, NULL);
    EXPECT_SHAPE(g, all, 2, SHAPE(3, 2));
    const clf__node *n = node_of(g, all);
    ck_assert_int_eq(n->op, CLF__OP_SQUEEZE);
    ck_assert_uint_eq(n->inputs[0], x.node);
    ck_assert_str_eq(clf__node_op_name(n), "squeeze");
    EXPECT_SHAPE(g, clf_squeeze(g, x, 2, AXES(0, -2)), 2, SHAPE(3, 2));
    EXPECT_SHAPE(g, clf_squeeze(g, x, 1, AXES(2)), 3, SHAPE(1, 3, 2));
    clf_tensor one = clf_input(g, "one", CLF_BOOL, 3, SHAPE(1, 1, 1));
    clf_tensor s = clf_squeeze(g, one, 0, NULL);
    EXPECT_SHAPE(g, s, 0, NULL);
    EXPECT_DTYPE(g, s, CLF_BOOL);
    clf_tensor z = clf_input(g, "z", CLF_F32, 2, SHAPE(0, 1));
    EXPECT_SHAPE(g, clf_squeeze(g, z, 0, NULL), 1, SHAPE(0));
    clf_tensor none = clf_input(g, "none", CLF_F32, 1, SHAPE(3));
    EXPECT_SHAPE(g, clf_squeeze(g, none, 0, NULL), 1, SHAPE(3));
    clf_graph_destroy(&g);

    struct {
        int n;
        const int *axes;
        clf_status st;
        const char *s1, *s2;
    } bad[] = {
        {1, AXES(1), CLF_ERR_SHAPE, "clf_squeeze: axes[0] = 1", "extent 3"},
        {2, AXES(0, 3), CLF_ERR_SHAPE, "clf_squeeze: axes[1] = 3", "extent 2"},
        {1, AXES(4), CLF_ERR_INVALID_ARGUMENT, "clf_squeeze: axes[0] = 4 is out of range for rank 4",
         NULL},
        {2, AXES(0, -4), CLF_ERR_INVALID_ARGUMENT, "clf_squeeze: axes[1] = -4 repeats", NULL},
        {1, NULL, CLF_ERR_INVALID_ARGUMENT, "clf_squeeze: axes is NULL", NULL},
        {-1, AXES(0), CLF_ERR_INVALID_ARGUMENT, "clf_squeeze: naxes is negative", NULL},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        g = clf_graph_create();
        x = clf_input(g, "x", CLF_F32, 4, SHAPE(1, 3, 1, 2));
        EXPECT_FAIL(g, clf_squeeze(g, x, bad[k].n, bad[k].axes), bad[k].st, bad[k].s1, bad[k].s2);
        clf_graph_destroy(&g);
    }
}
END_TEST

START_TEST(test_unsqueeze)
{
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_F32, 2, SHAPE(3, 4));
    clf_tensor u = clf_unsqueeze(g, x, 2, AXES(0, 3));
    EXPECT_SHAPE(g, u, 4, SHAPE(1, 3, 4, 1));
    const clf__node *n = node_of(g, u);
    ck_assert_int_eq(n->op, CLF__OP_UNSQUEEZE);
    ck_assert_uint_eq(n->inputs[0], x.node);
    ck_assert_str_eq(clf__node_op_name(n), "unsqueeze");
    EXPECT_SHAPE(g, clf_unsqueeze(g, x, 1, AXES(-1)), 3, SHAPE(3, 4, 1));
    EXPECT_SHAPE(g, clf_unsqueeze(g, x, 1, AXES(1)), 3, SHAPE(3, 1, 4));
    EXPECT_SHAPE(g, clf_unsqueeze(g, x, 2, AXES(-1, 1)), 4, SHAPE(3, 1, 4, 1));
    EXPECT_SHAPE(g, clf_unsqueeze(g, x, 0, NULL), 2, SHAPE(3, 4));
    clf_tensor s = clf_input(g, "s", CLF_I32, 0, NULL);
    clf_tensor s1 = clf_unsqueeze(g, s, 1, AXES(0));
    EXPECT_SHAPE(g, s1, 1, SHAPE(1));
    EXPECT_DTYPE(g, s1, CLF_I32);
    clf_tensor z = clf_input(g, "z", CLF_F32, 1, SHAPE(0));
    EXPECT_SHAPE(g, clf_unsqueeze(g, z, 1, AXES(0)), 2, SHAPE(1, 0));
    clf_tensor r7 = clf_input(g, "r7", CLF_F32, 7, SHAPE(1, 2, 3, 4, 5, 6, 7));
    EXPECT_SHAPE(g, clf_unsqueeze(g, r7, 1, AXES(-8)), 8, SHAPE(1, 1, 2, 3, 4, 5, 6, 7));
    clf_graph_destroy(&g);

    struct {
        int n;
        const int *axes;
        clf_status st;
        const char *s1;
    } bad[] = {
        {2, AXES(0, -4), CLF_ERR_INVALID_ARGUMENT, "clf_unsqueeze: axes[1] = -4 repeats"},
        {1, AXES(3), CLF_ERR_INVALID_ARGUMENT,
         "clf_unsqueeze: axes[0] = 3 is out of range for output rank 3"},
        {1, AXES(-4), CLF_ERR_INVALID_ARGUMENT, "clf_unsqueeze: axes[0] = -4 is out of range"},
        {1, NULL, CLF_ERR_INVALID_ARGUMENT, "clf_unsqueeze: axes is NULL"},
        {-1, AXES(0), CLF_ERR_INVALID_ARGUMENT, "clf_unsqueeze: naxes is negative"},
        {7, AXES(0, 1, 2, 3, 4, 5, 6), CLF_ERR_SHAPE, "clf_unsqueeze: x has rank 2; 7 more axes"},
        {1000000, AXES(0), CLF_ERR_SHAPE, "clf_unsqueeze: x has rank 2; 1000000 more axes"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        g = clf_graph_create();
        x = clf_input(g, "x", CLF_F32, 2, SHAPE(3, 4));
        EXPECT_FAIL(g, clf_unsqueeze(g, x, bad[k].n, bad[k].axes), bad[k].st, bad[k].s1, NULL);
        clf_graph_destroy(&g);
    }
}
END_TEST

/* Movement ops on an invalid handle name the argument. */
START_TEST(test_movement_invalid_handles)
{
    struct {
        const char *s1;
    } want[] = {{"clf_reshape: x is CLF_TENSOR_INVALID"}, {"clf_transpose: x is CLF_TENSOR_INVALID"},
                {"clf_expand: x is CLF_TENSOR_INVALID"},  {"clf_slice: x is CLF_TENSOR_INVALID"},
                {"clf_squeeze: x is CLF_TENSOR_INVALID"}, {"clf_unsqueeze: x is CLF_TENSOR_INVALID"}};
    for (int k = 0; k < 6; k++) {
        clf_graph *g = clf_graph_create();
        clf_tensor t = CLF_TENSOR_INVALID, y;
        switch (k) {
        case 0:
            y = clf_reshape(g, t, 1, SHAPE(1));
            break;
        case 1:
            y = clf_transpose(g, t, 0, NULL);
            break;
        case 2:
            y = clf_expand(g, t, 1, SHAPE(1));
            break;
        case 3:
            y = clf_slice(g, t, 0, NULL, NULL, NULL, NULL);
            break;
        case 4:
            y = clf_squeeze(g, t, 0, NULL);
            break;
        default:
            y = clf_unsqueeze(g, t, 1, AXES(0));
            break;
        }
        ck_assert(!clf_tensor_valid(y));
        expect_error_(g, CLF_ERR_INVALID_ARGUMENT, want[k].s1, NULL, k);
        clf_graph_destroy(&g);
    }
}
END_TEST

/* ---- Reductions --------------------------------------------------------- */

/* Fails unless node id of g is a REDUCE of the given kind, mask and
 * keepdims reading node src. */
static void expect_reduce_(const clf_graph *g, uint32_t id, clf__reduce_kind kind, uint32_t mask,
                           bool keepdims, uint32_t src, int line)
{
    const clf__node *n = clf__graph_node(g, id);
    ck_assert_msg(n->op == CLF__OP_REDUCE, "line %d: node %u is %s, not a reduce", line, id,
                  clf__node_op_name(n));
    ck_assert_msg(n->attr.reduce.kind == kind, "line %d: node %u is %s", line, id, clf__node_op_name(n));
    ck_assert_msg(n->attr.reduce.mask == mask, "line %d: node %u has mask %#x, want %#x", line, id,
                  n->attr.reduce.mask, mask);
    ck_assert_msg(n->attr.reduce.keepdims == keepdims, "line %d: node %u keepdims %d", line, id, n->attr.reduce.keepdims);
    ck_assert_msg(n->ninputs == 1 && n->inputs[0] == src, "line %d: node %u reads %u, want %u", line,
                  id, n->inputs[0], src);
}
#define EXPECT_REDUCE(g, id, kind, mask, keepdims, src)                                                 \
    expect_reduce_((g), (id), (kind), (mask), (keepdims), (src), __LINE__)

START_TEST(test_reduce_shapes)
{
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_F32, 3, SHAPE(2, 3, 4));
    clf_tensor i = clf_input(g, "i", CLF_I32, 3, SHAPE(2, 3, 4));

    clf_tensor t = clf_reduce_sum(g, x, 1, AXES(1), false);
    EXPECT_SHAPE(g, t, 2, SHAPE(2, 4));
    EXPECT_DTYPE(g, t, CLF_F32);
    EXPECT_REDUCE(g, t.node, CLF__REDUCE_SUM, 0x2, false, x.node);
    ck_assert_str_eq(clf__node_op_name(node_of(g, t)), "sum");
    ck_assert_int_eq(clf__node_class_of(node_of(g, t)), CLF__CLASS_REDUCTION);

    t = clf_reduce_sum(g, x, 1, AXES(1), true);
    EXPECT_SHAPE(g, t, 3, SHAPE(2, 1, 4));
    EXPECT_REDUCE(g, t.node, CLF__REDUCE_SUM, 0x2, true, x.node);

    /* Negative axes, listed in any order. */
    t = clf_reduce_max(g, x, 2, AXES(-1, 0), false);
    EXPECT_SHAPE(g, t, 1, SHAPE(3));
    EXPECT_REDUCE(g, t.node, CLF__REDUCE_MAX, 0x5, false, x.node);
    t = clf_reduce_min(g, i, 2, AXES(2, -3), true);
    EXPECT_SHAPE(g, t, 3, SHAPE(1, 3, 1));
    EXPECT_DTYPE(g, t, CLF_I32);
    EXPECT_REDUCE(g, t.node, CLF__REDUCE_MIN, 0x5, true, i.node);

    /* naxes 0: every axis. */
    t = clf_reduce_prod(g, i, 0, NULL, false);
    EXPECT_SHAPE(g, t, 0, NULL);
    EXPECT_REDUCE(g, t.node, CLF__REDUCE_PROD, 0x7, false, i.node);
    t = clf_reduce_sum(g, x, 0, AXES(1), true); /* axes ignored when naxes is 0 */
    EXPECT_SHAPE(g, t, 3, SHAPE(1, 1, 1));
    EXPECT_REDUCE(g, t.node, CLF__REDUCE_SUM, 0x7, true, x.node);

    /* All axes listed explicitly is the same node. */
    t = clf_reduce_sum(g, x, 3, AXES(2, 0, 1), false);
    EXPECT_SHAPE(g, t, 0, NULL);
    EXPECT_REDUCE(g, t.node, CLF__REDUCE_SUM, 0x7, false, x.node);

    /* clf_reduce records what the named builders record. */
    static const clf__reduce_kind kinds[] = {CLF__REDUCE_SUM, CLF__REDUCE_SUM, CLF__REDUCE_MAX,
                                             CLF__REDUCE_MIN, CLF__REDUCE_PROD};
    for (int op = 0; op < CLF_REDUCE_COUNT; op++) {
        size_t before = clf_graph_node_count(g);
        t = clf_reduce(g, (clf_reduce_op)op, x, 1, AXES(-2), true);
        EXPECT_SHAPE(g, t, 3, SHAPE(2, 1, 4));
        EXPECT_DTYPE(g, t, CLF_F32);
        /* mean is sum, scalar, div */
        EXPECT_REDUCE(g, (uint32_t)before, kinds[op], 0x2, true, x.node);
        ck_assert_uint_eq(clf_graph_node_count(g), before + (op == CLF_REDUCE_MEAN ? 3 : 1));
    }
    ck_assert_int_eq(clf_graph_status(g, NULL), CLF_OK);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(test_reduce_rank0_and_zero_size)
{
    clf_graph *g = clf_graph_create();
    clf_tensor s = clf_input(g, "s", CLF_F32, 0, NULL);
    clf_tensor z = clf_input(g, "z", CLF_F32, 3, SHAPE(2, 0, 3));

    /* A reduction of a scalar over its (zero) axes is a REDUCE with mask 0. */
    clf_tensor t = clf_reduce_sum(g, s, 0, NULL, false);
    EXPECT_SHAPE(g, t, 0, NULL);
    EXPECT_REDUCE(g, t.node, CLF__REDUCE_SUM, 0, false, s.node);
    t = clf_reduce_max(g, s, 0, NULL, true);
    EXPECT_SHAPE(g, t, 0, NULL);
    EXPECT_REDUCE(g, t.node, CLF__REDUCE_MAX, 0, true, s.node);
    size_t before = clf_graph_node_count(g);
    t = clf_reduce_mean(g, s, 0, NULL, false);
    EXPECT_SHAPE(g, t, 0, NULL);
    ck_assert(clf__graph_node(g, (uint32_t)before + 1)->attr.constant.scalar == 1.0);

    /* Reducing the empty axis gives a non-empty result... */
    t = clf_reduce_sum(g, z, 1, AXES(1), false);
    EXPECT_SHAPE(g, t, 2, SHAPE(2, 3));
    t = clf_reduce_prod(g, z, 1, AXES(1), true);
    EXPECT_SHAPE(g, t, 3, SHAPE(2, 1, 3));
    /* ... and keeping it gives an empty one. */
    t = clf_reduce_max(g, z, 1, AXES(0), false);
    EXPECT_SHAPE(g, t, 2, SHAPE(0, 3));
    t = clf_reduce_min(g, z, 0, NULL, false);
    EXPECT_SHAPE(g, t, 0, NULL);
    /* mean over an empty set divides by 0. */
    before = clf_graph_node_count(g);
    t = clf_reduce_mean(g, z, 2, AXES(0, 1), false);
    EXPECT_SHAPE(g, t, 1, SHAPE(3));
    ck_assert(clf__graph_node(g, (uint32_t)before + 1)->attr.constant.scalar == 0.0);
    /* argmax over a non-empty axis of a zero-size tensor is fine. */
    t = clf_argmax(g, z, 2, false, false);
    EXPECT_SHAPE(g, t, 2, SHAPE(2, 0));
    ck_assert_int_eq(clf_graph_status(g, NULL), CLF_OK);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(test_argmax_argmin)
{
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_F32, 3, SHAPE(2, 3, 4));
    clf_tensor i = clf_input(g, "i", CLF_I32, 2, SHAPE(5, 6));

    clf_tensor t = clf_argmax(g, x, 1, false, false);
    EXPECT_SHAPE(g, t, 2, SHAPE(2, 4));
    EXPECT_DTYPE(g, t, CLF_I32);
    EXPECT_REDUCE(g, t.node, CLF__REDUCE_ARGMAX, 0x2, false, x.node);
    ck_assert(!node_of(g, t)->attr.reduce.select_last);
    ck_assert_str_eq(clf__node_op_name(node_of(g, t)), "argmax");

    t = clf_argmax(g, x, -1, true, true);
    EXPECT_SHAPE(g, t, 3, SHAPE(2, 3, 1));
    EXPECT_REDUCE(g, t.node, CLF__REDUCE_ARGMAX, 0x4, true, x.node);
    ck_assert(node_of(g, t)->attr.reduce.select_last);

    t = clf_argmin(g, i, 0, false, true);
    EXPECT_SHAPE(g, t, 1, SHAPE(6));
    EXPECT_DTYPE(g, t, CLF_I32);
    EXPECT_REDUCE(g, t.node, CLF__REDUCE_ARGMIN, 0x1, false, i.node);
    ck_assert(node_of(g, t)->attr.reduce.select_last);
    ck_assert_str_eq(clf__node_op_name(node_of(g, t)), "argmin");

    /* Plain reductions never set select_last. */
    t = clf_reduce_max(g, x, 1, AXES(0), false);
    ck_assert(!node_of(g, t)->attr.reduce.select_last);
    ck_assert_int_eq(clf_graph_status(g, NULL), CLF_OK);
    clf_graph_destroy(&g);
}
END_TEST

/* Every error of the reduction builders, each on a fresh fixture: status,
 * the call's name and the argument. */
START_TEST(test_reduce_errors)
{
    for (int k = 0;; k++) {
        fixture f = fx();
        clf_graph *g = f.g, *other = clf_graph_create();
        clf_tensor s = clf_input(g, "s", CLF_F32, 0, NULL);
        clf_tensor z = clf_input(g, "z", CLF_F32, 2, SHAPE(2, 0));
        clf_tensor foreign = clf_input(other, "w", CLF_F32, 1, SHAPE(3));
        clf_tensor iv = clf_input(g, "iv", CLF_I32, 1, SHAPE(3));
        clf_tensor w3 = clf_input(g, "w3", CLF_F32, 1, SHAPE(3));
        clf_tensor w4 = clf_input(g, "w4", CLF_F32, 1, SHAPE(4));
        clf_tensor w23 = clf_input(g, "w23", CLF_F32, 2, SHAPE(2, 3));
        clf_tensor n = CLF_TENSOR_INVALID;
        clf_status st;
        const char *s1, *s2;
        size_t before = clf_graph_node_count(g);
        clf_tensor t;
        switch (k) {
#define CASE_(expr, status, a, b)                                                                       \
    case __COUNTER__ - base_:                                                                           \
        t = (expr);                                                                                     \
        st = (status);                                                                                  \
        s1 = (a);                                                                                       \
        s2 = (b);                                                                                       \
        break;
        enum { base_ = __COUNTER__ + 1 };
            CASE_(clf_reduce_sum(g, f.x, 1, AXES(2), false), CLF_ERR_INVALID_ARGUMENT, "clf_reduce_sum:",
                  "axes[0] = 2 is out of range for rank 2")
            CASE_(clf_reduce_max(g, f.x, 2, AXES(0, -3), false), CLF_ERR_INVALID_ARGUMENT,
                  "clf_reduce_max:", "axes[1] = -3 is out of range")
            CASE_(clf_reduce_min(g, f.x, 2, AXES(1, -1), true), CLF_ERR_INVALID_ARGUMENT,
                  "clf_reduce_min:", "axes[1] = -1 repeats an axis")
            CASE_(clf_reduce_prod(g, f.x, -1, AXES(0), false), CLF_ERR_INVALID_ARGUMENT,
                  "clf_reduce_prod:", "naxes is negative")
            CASE_(clf_reduce_mean(g, f.x, 1, NULL, false), CLF_ERR_INVALID_ARGUMENT, "clf_reduce_mean:",
                  "axes is NULL")
            CASE_(clf_reduce_sum(g, s, 1, AXES(0), false), CLF_ERR_INVALID_ARGUMENT, "clf_reduce_sum:",
                  "out of range for rank 0")
            CASE_(clf_reduce_mean(g, f.i, 0, NULL, false), CLF_ERR_DTYPE, "clf_reduce_mean:",
                  "x has dtype i32; mean takes f32")
            CASE_(clf_reduce_sum(g, f.b, 0, NULL, false), CLF_ERR_DTYPE, "clf_reduce_sum:",
                  "x has dtype bool; sum takes f32, f16, bf16, i32 or i64")
            CASE_(clf_reduce_max(g, f.b, 0, NULL, false), CLF_ERR_DTYPE, "clf_reduce_max:", "bool")
            CASE_(clf_reduce_sum(g, n, 0, NULL, false), CLF_ERR_INVALID_ARGUMENT, "clf_reduce_sum:",
                  "x is CLF_TENSOR_INVALID")
            CASE_(clf_reduce_sum(g, foreign, 0, NULL, false), CLF_ERR_INVALID_ARGUMENT, "clf_reduce_sum:",
                  "x belongs to another graph")
            CASE_(clf_reduce(g, (clf_reduce_op)CLF_REDUCE_COUNT, f.x, 0, NULL, false),
                  CLF_ERR_INVALID_ARGUMENT, "clf_reduce:", "is not a clf_reduce_op")
            CASE_(clf_reduce(g, CLF_REDUCE_SUM, f.x, 1, AXES(5), false), CLF_ERR_INVALID_ARGUMENT,
                  "clf_reduce:", "axes[0] = 5")
            CASE_(clf_argmax(g, f.x, 2, false, false), CLF_ERR_INVALID_ARGUMENT, "clf_argmax:",
                  "axis 2 is out of range for rank 2")
            CASE_(clf_argmin(g, s, 0, false, false), CLF_ERR_INVALID_ARGUMENT, "clf_argmin:",
                  "axis 0 is out of range for rank 0")
            CASE_(clf_argmax(g, f.b, 0, false, false), CLF_ERR_DTYPE, "clf_argmax:",
                  "bool; argmax takes f32, f16, bf16, i32 or i64")
            CASE_(clf_argmax(g, z, 1, false, false), CLF_ERR_SHAPE, "clf_argmax:",
                  "argmax over an empty axis")
            CASE_(clf_argmin(g, z, -1, true, true), CLF_ERR_SHAPE, "clf_argmin:",
                  "argmin over an empty axis")
            CASE_(clf_reduce_var(g, f.i, 0, NULL, false, 0), CLF_ERR_DTYPE, "clf_reduce_var:",
                  "i32; var takes f32")
            CASE_(clf_reduce_var(g, f.x, 0, NULL, false, 2), CLF_ERR_INVALID_ARGUMENT, "clf_reduce_var:",
                  "correction is 2")
            CASE_(clf_reduce_var(g, f.x, 0, NULL, false, -1), CLF_ERR_INVALID_ARGUMENT,
                  "clf_reduce_var:", "correction is -1")
            CASE_(clf_reduce_var(g, f.x, 2, AXES(0, 0), false, 1), CLF_ERR_INVALID_ARGUMENT,
                  "clf_reduce_var:", "axes[1] = 0 repeats")
            CASE_(clf_softmax(g, f.x, 3), CLF_ERR_INVALID_ARGUMENT,
                  "clf_softmax: axis 3 is out of range for rank 2", NULL)
            CASE_(clf_softmax(g, f.x, -3), CLF_ERR_INVALID_ARGUMENT, "clf_softmax:", "axis -3")
            CASE_(clf_softmax(g, f.i, 0), CLF_ERR_DTYPE, "clf_softmax:", "i32; softmax takes f32")
            CASE_(clf_softmax(g, s, 0), CLF_ERR_INVALID_ARGUMENT, "clf_softmax:", "rank 0")
            CASE_(clf_softmax(g, foreign, 0), CLF_ERR_INVALID_ARGUMENT, "clf_softmax:",
                  "x belongs to another graph")
            CASE_(clf_log_softmax(g, f.x, 2), CLF_ERR_INVALID_ARGUMENT, "clf_log_softmax:",
                  "axis 2 is out of range")
            CASE_(clf_log_softmax(g, f.b, 0), CLF_ERR_DTYPE, "clf_log_softmax:", "bool")
            CASE_(clf_layer_norm(g, f.x, 2, 1e-5, n, n), CLF_ERR_INVALID_ARGUMENT, "clf_layer_norm:",
                  "axis 2 is out of range for rank 2")
            CASE_(clf_layer_norm(g, f.i, 1, 1e-5, n, n), CLF_ERR_DTYPE, "clf_layer_norm:",
                  "i32; layer_norm takes f32")
            CASE_(clf_layer_norm(g, f.x, 1, -1e-5, n, n), CLF_ERR_INVALID_ARGUMENT, "clf_layer_norm:",
                  "epsilon")
            CASE_(clf_layer_norm(g, f.x, 1, NAN, n, n), CLF_ERR_INVALID_ARGUMENT, "clf_layer_norm:",
                  "epsilon is nan")
            CASE_(clf_layer_norm(g, f.x, -1, 1e-5, iv, n), CLF_ERR_DTYPE, "clf_layer_norm:",
                  "scale has dtype i32")
            CASE_(clf_layer_norm(g, f.x, -1, 1e-5, w4, n), CLF_ERR_SHAPE, "clf_layer_norm:",
                  "scale has shape [4], which does not broadcast against x.shape[1:] = [3]")
            CASE_(clf_layer_norm(g, f.x, 1, 1e-5, w3, w23), CLF_ERR_SHAPE, "clf_layer_norm:",
                  "bias has shape [2,3]")
            CASE_(clf_layer_norm(g, f.x, 0, 1e-5, w3, foreign), CLF_ERR_INVALID_ARGUMENT,
                  "clf_layer_norm:", "bias belongs to another graph")
            CASE_(clf_rms_norm(g, f.x, 1, 1e-5, w4), CLF_ERR_SHAPE, "clf_rms_norm:",
                  "scale has shape [4]")
            CASE_(clf_rms_norm(g, f.x, 1, INFINITY, iv), CLF_ERR_DTYPE, "clf_rms_norm:",
                  "scale has dtype i32")
            CASE_(clf_rms_norm(g, f.x, -3, 1e-5, n), CLF_ERR_INVALID_ARGUMENT, "clf_rms_norm:",
                  "axis -3 is out of range for rank 2")
            CASE_(clf_rms_norm(g, f.b, 0, 1e-5, n), CLF_ERR_DTYPE, "clf_rms_norm:", "bool")
            CASE_(clf_rms_norm(g, f.x, 0, -INFINITY, n), CLF_ERR_INVALID_ARGUMENT, "clf_rms_norm:",
                  "epsilon")
#undef CASE_
        default:
            clf_graph_destroy(&other);
            clf_graph_destroy(&g);
            ck_assert_int_gt(k, 40);
            return;
        }
        ck_assert_msg(!clf_tensor_valid(t), "case %d succeeded", k);
        ck_assert_msg(clf_graph_node_count(g) == before, "case %d added a node", k);
        expect_error_(g, st, s1, s2, k);
        /* Sticky: a valid reduction now does nothing. */
        ck_assert(!clf_tensor_valid(clf_reduce_sum(g, f.x, 0, NULL, false)));
        ck_assert(!clf_tensor_valid(clf_softmax(g, f.x, 1)));
        expect_error_(g, st, s1, s2, k);
        clf_graph_destroy(&other);
        clf_graph_destroy(&g);
    }
}
END_TEST

START_TEST(test_reduce_null_graph)
{
    clf_tensor t = {1, 0};
    ck_assert(!clf_tensor_valid(clf_reduce_sum(NULL, t, 0, NULL, false)));
    ck_assert(!clf_tensor_valid(clf_reduce(NULL, CLF_REDUCE_MEAN, t, 0, NULL, false)));
    ck_assert(!clf_tensor_valid(clf_argmax(NULL, t, 0, false, false)));
    ck_assert(!clf_tensor_valid(clf_reduce_var(NULL, t, 0, NULL, false, 0)));
    ck_assert(!clf_tensor_valid(clf_softmax(NULL, t, 0)));
    ck_assert(!clf_tensor_valid(clf_log_softmax(NULL, t, 0)));
    ck_assert(!clf_tensor_valid(clf_layer_norm(NULL, t, 0, 0, t, t)));
    ck_assert(!clf_tensor_valid(clf_rms_norm(NULL, t, 0, 0, t)));
}
END_TEST

/* ---- Composite decompositions ----------------------------------------- */

/* One expected node of a decomposition: op, the reduce kind of a reduce,
 * and its inputs as offsets: k >= 0 is the k-th
 * node added by the composite, X the composite's x, -2 .. the other given
 * handles (see expect_nodes_). */
typedef struct want_node {
    clf__op op;
    int reduce_kind;
    int ninputs;
    int in[2];
} want_node;

enum { X = -1, P1 = -2, P2 = -3 };

/* Fails unless the nodes from first on are exactly want[0..count), wired
 * as described, and the composite's result t is the last of them. */
static void expect_nodes_(const clf_graph *g, uint32_t first, clf_tensor t, const want_node *want,
                          size_t count, clf_tensor x, clf_tensor p1, clf_tensor p2, int line)
{
    ck_assert_msg(clf_tensor_valid(t), "line %d: %s", line, msg_of(g));
    ck_assert_msg(clf_graph_node_count(g) == first + count, "line %d: %zu nodes added, want %zu", line,
                  clf_graph_node_count(g) - first, count);
    ck_assert_msg(t.node == first + count - 1, "line %d: the result is not the last node", line);
    for (size_t k = 0; k < count; k++) {
        const clf__node *n = clf__graph_node(g, first + (uint32_t)k);
        ck_assert_msg(n->op == want[k].op, "line %d: node +%zu is %s", line, k, clf__node_op_name(n));
        if (n->op == CLF__OP_REDUCE)
            ck_assert_msg((int)n->attr.reduce.kind == want[k].reduce_kind, "line %d: node +%zu is %s", line, k,
                          clf__node_op_name(n));
        ck_assert_msg(n->ninputs == want[k].ninputs, "line %d: node +%zu has %d inputs", line, k,
                      n->ninputs);
        for (int j = 0; j < n->ninputs; j++) {
            int w = want[k].in[j];
            uint32_t src = w == X ? x.node : w == P1 ? p1.node : w == P2 ? p2.node : first + (uint32_t)w;
            ck_assert_msg(n->inputs[j] == src, "line %d: node +%zu input %d is %u, want %u", line, k, j,
                          n->inputs[j], src);
        }
    }
}
#define EXPECT_NODES(g, first, t, want, x, p1, p2)                                                      \
    expect_nodes_((g), (first), (t), (want), sizeof(want) / sizeof((want)[0]), (x), (p1), (p2), __LINE__)

#define R_(op, src) {CLF__OP_REDUCE, CLF__REDUCE_##op, 1, {src, 0}}
#define U_(op, src) {CLF__OP_##op, 0, 1, {src, 0}}
#define B_(op, a, b) {CLF__OP_##op, 0, 2, {a, b}}
#define C_ {CLF__OP_CONSTANT, 0, 0, {0, 0}}

static double scalar_at(const clf_graph *g, uint32_t id)
{
    const clf__node *n = clf__graph_node(g, id);
    ck_assert_int_eq(n->op, CLF__OP_CONSTANT);
    ck_assert_int_eq(n->dtype, CLF_F32);
    ck_assert_int_eq(n->rank, 0);
    return n->attr.constant.scalar;
}

START_TEST(test_mean_and_var_structure)
{
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_F32, 3, SHAPE(2, 3, 4));
    clf_tensor none = CLF_TENSOR_INVALID;

    static const want_node mean[] = {R_(SUM, X), C_, B_(DIV, 0, 1)};
    uint32_t first = (uint32_t)clf_graph_node_count(g);
    clf_tensor t = clf_reduce_mean(g, x, 2, AXES(0, 2), false);
    EXPECT_NODES(g, first, t, mean, x, none, none);
    EXPECT_SHAPE(g, t, 1, SHAPE(3));
    EXPECT_REDUCE(g, first, CLF__REDUCE_SUM, 0x5, false, x.node);
    ck_assert(scalar_at(g, first + 1) == 8.0);

    /* var, correction 0: the mean's count is the divisor too. */
    static const want_node var0[] = {R_(SUM, X),    C_,           B_(DIV, 0, 1), B_(SUB, X, 2),
                                     B_(MUL, 3, 3), R_(SUM, 4),   B_(DIV, 5, 1)};
    first = (uint32_t)clf_graph_node_count(g);
    t = clf_reduce_var(g, x, 1, AXES(-1), false, 0);
    EXPECT_NODES(g, first, t, var0, x, none, none);
    EXPECT_SHAPE(g, t, 2, SHAPE(2, 3));
    EXPECT_REDUCE(g, first, CLF__REDUCE_SUM, 0x4, true, x.node);
    EXPECT_REDUCE(g, first + 5, CLF__REDUCE_SUM, 0x4, false, first + 4);
    EXPECT_SHAPE(g, ((clf_tensor){t.graph, first + 3}), 3, SHAPE(2, 3, 4));
    ck_assert(scalar_at(g, first + 1) == 4.0);

    /* var, correction 1: a second scalar n - 1. */
    static const want_node var1[] = {R_(SUM, X),  C_,         B_(DIV, 0, 1), B_(SUB, X, 2), B_(MUL, 3, 3),
                                     R_(SUM, 4), C_,         B_(DIV, 5, 6)};
    first = (uint32_t)clf_graph_node_count(g);
    t = clf_reduce_var(g, x, 0, NULL, true, 1);
    EXPECT_NODES(g, first, t, var1, x, none, none);
    EXPECT_SHAPE(g, t, 3, SHAPE(1, 1, 1));
    EXPECT_REDUCE(g, first + 5, CLF__REDUCE_SUM, 0x7, true, first + 4);
    ck_assert(scalar_at(g, first + 1) == 24.0);
    ck_assert(scalar_at(g, first + 6) == 23.0);
    ck_assert_int_eq(clf_graph_status(g, NULL), CLF_OK);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(test_softmax_structure)
{
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_F32, 3, SHAPE(2, 3, 4));
    clf_tensor none = CLF_TENSOR_INVALID;

    /* max, sub, exp, sum, div: 5 nodes, both reductions with keepdims. */
    static const want_node softmax[] = {R_(MAX, X), B_(SUB, X, 0), U_(EXP, 1), R_(SUM, 2),
                                        B_(DIV, 2, 3)};
    uint32_t first = (uint32_t)clf_graph_node_count(g);
    clf_tensor t = clf_softmax(g, x, -2);
    EXPECT_NODES(g, first, t, softmax, x, none, none);
    EXPECT_SHAPE(g, t, 3, SHAPE(2, 3, 4));
    EXPECT_REDUCE(g, first, CLF__REDUCE_MAX, 0x2, true, x.node);
    EXPECT_REDUCE(g, first + 3, CLF__REDUCE_SUM, 0x2, true, first + 2);
    EXPECT_SHAPE(g, ((clf_tensor){t.graph, first}), 3, SHAPE(2, 1, 4));

    static const want_node log_softmax[] = {R_(MAX, X), B_(SUB, X, 0), U_(EXP, 1),
                                            R_(SUM, 2), U_(LOG, 3),    B_(SUB, 1, 4)};
    first = (uint32_t)clf_graph_node_count(g);
    t = clf_log_softmax(g, x, 2);
    EXPECT_NODES(g, first, t, log_softmax, x, none, none);
    EXPECT_SHAPE(g, t, 3, SHAPE(2, 3, 4));
    EXPECT_REDUCE(g, first, CLF__REDUCE_MAX, 0x4, true, x.node);
    EXPECT_REDUCE(g, first + 3, CLF__REDUCE_SUM, 0x4, true, first + 2);
    ck_assert_int_eq(clf_graph_status(g, NULL), CLF_OK);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(test_norm_structure)
{
    clf_graph *g = clf_graph_create();
    clf_tensor x = clf_input(g, "x", CLF_F32, 3, SHAPE(2, 3, 4));
    clf_tensor scale = clf_input(g, "scale", CLF_F32, 2, SHAPE(3, 4));
    clf_tensor bias = clf_input(g, "bias", CLF_F32, 1, SHAPE(1));
    clf_tensor none = CLF_TENSOR_INVALID;

    static const want_node ln[] = {
        R_(SUM, X),    C_,         B_(DIV, 0, 1), B_(SUB, X, 2), B_(MUL, 3, 3), R_(SUM, 4),
        B_(DIV, 5, 1), C_,         B_(ADD, 6, 7), U_(RSQRT, 8),  B_(MUL, 3, 9),
    };
    uint32_t first = (uint32_t)clf_graph_node_count(g);
    clf_tensor t = clf_layer_norm(g, x, 1, 1e-5, none, none);
    EXPECT_NODES(g, first, t, ln, x, none, none);
    EXPECT_SHAPE(g, t, 3, SHAPE(2, 3, 4));
    EXPECT_REDUCE(g, first, CLF__REDUCE_SUM, 0x6, true, x.node);
    EXPECT_REDUCE(g, first + 5, CLF__REDUCE_SUM, 0x6, true, first + 4);
    ck_assert(scalar_at(g, first + 1) == 12.0);
    ck_assert(scalar_at(g, first + 7) == (double)1e-5f);

    static const want_node ln_scale_bias[] = {
        R_(SUM, X),    C_,          B_(DIV, 0, 1), B_(SUB, X, 2),   B_(MUL, 3, 3),    R_(SUM, 4),
        B_(DIV, 5, 1), C_,          B_(ADD, 6, 7), U_(RSQRT, 8),    B_(MUL, 3, 9),    B_(MUL, 10, P1),
        B_(ADD, 11, P2),
    };
    first = (uint32_t)clf_graph_node_count(g);
    t = clf_layer_norm(g, x, -2, 0.5, scale, bias);
    EXPECT_NODES(g, first, t, ln_scale_bias, x, scale, bias);
    EXPECT_SHAPE(g, t, 3, SHAPE(2, 3, 4));
    ck_assert(scalar_at(g, first + 7) == 0.5);

    /* Only bias; axis 0 normalises everything. */
    static const want_node ln_bias[] = {
        R_(SUM, X),    C_,          B_(DIV, 0, 1), B_(SUB, X, 2),   B_(MUL, 3, 3),    R_(SUM, 4),
        B_(DIV, 5, 1), C_,          B_(ADD, 6, 7), U_(RSQRT, 8),    B_(MUL, 3, 9),    B_(ADD, 10, P2),
    };
    first = (uint32_t)clf_graph_node_count(g);
    t = clf_layer_norm(g, x, 0, 0, none, bias);
    EXPECT_NODES(g, first, t, ln_bias, x, none, bias);
    EXPECT_REDUCE(g, first, CLF__REDUCE_SUM, 0x7, true, x.node);
    ck_assert(scalar_at(g, first + 1) == 24.0);

    static const want_node rms[] = {
        B_(MUL, X, X), R_(SUM, 0), C_, B_(DIV, 1, 2), C_, B_(ADD, 3, 4), U_(RSQRT, 5), B_(MUL, X, 6),
    };
    first = (uint32_t)clf_graph_node_count(g);
    t = clf_rms_norm(g, x, -1, 1e-6, none);
    EXPECT_NODES(g, first, t, rms, x, none, none);
    EXPECT_SHAPE(g, t, 3, SHAPE(2, 3, 4));
    EXPECT_REDUCE(g, first + 1, CLF__REDUCE_SUM, 0x4, true, first);
    ck_assert(scalar_at(g, first + 2) == 4.0);
    ck_assert(scalar_at(g, first + 4) == (double)1e-6f);

    static const want_node rms_scale[] = {
        B_(MUL, X, X), R_(SUM, 0),    C_, B_(DIV, 1, 2), C_, B_(ADD, 3, 4), U_(RSQRT, 5),
        B_(MUL, X, 6), B_(MUL, 7, P1),
    };
    first = (uint32_t)clf_graph_node_count(g);
    t = clf_rms_norm(g, x, 1, 1e-6, scale);
    EXPECT_NODES(g, first, t, rms_scale, x, scale, none);
    ck_assert_int_eq(clf_graph_status(g, NULL), CLF_OK);
    clf_graph_destroy(&g);
}
END_TEST

#undef R_
#undef U_
#undef B_
#undef C_

/* ---- Node facts used by later stages ---------------------------------- */

START_TEST(test_node_info)
{
    fixture f = fx();
    clf_tensor c = clf_scalar(f.g, CLF_F32, 1);
    struct {
        clf_tensor t;
        const char *name;
        clf__node_class cls;
    } want[] = {
        {f.x, "input", CLF__CLASS_LEAF},
        {c, "constant", CLF__CLASS_LEAF},
        {clf_logical_not(f.g, f.b), "not", CLF__CLASS_POINTWISE},
        {clf_logical_and(f.g, f.b, f.b), "and", CLF__CLASS_POINTWISE},
        {clf_logical_or(f.g, f.b, f.b), "or", CLF__CLASS_POINTWISE},
        {clf_add(f.g, f.x, c), "add", CLF__CLASS_POINTWISE},
        {clf_relu(f.g, f.x), "relu", CLF__CLASS_POINTWISE},
        {clf_transpose(f.g, f.x, 0, NULL), "transpose", CLF__CLASS_MOVEMENT},
        {clf_squeeze(f.g, f.x, 0, NULL), "squeeze", CLF__CLASS_MOVEMENT},
    };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        const clf__node *n = node_of(f.g, want[k].t);
        ck_assert_str_eq(clf__node_op_name(n), want[k].name);
        ck_assert_int_eq(clf__node_class_of(n), want[k].cls);
    }
    ck_assert_int_eq(clf__node_numel(node_of(f.g, f.x)), 6);
    ck_assert_int_eq(clf__node_numel(node_of(f.g, c)), 1);
    ck_assert_uint_eq(clf_graph_node_count(f.g), 12); /* 4 inputs, 1 scalar, 7 ops */
    clf_graph_destroy(&f.g);
}
END_TEST

/* ---- The op table ------------------------------------------------------ */

/* Every op has a row: a name, arity bounds that hold its class; every
 * unary and binary op of the public enums has reference arithmetic and an
 * OpenCL expression for each dtype it takes, and nothing for the others;
 * names and ONNX names are unique, ONNX forms' opset ranges are ranges and
 * only binary rows fold. A row left out (zeroed) fails here. */
START_TEST(test_op_table_rows_are_complete)
{
    for (int op = 0; op < CLF__OP_COUNT; op++) {
        const clf__op_info *r = clf__op_info_of((clf__op)op);
        ck_assert_msg(r->name && r->name[0], "op %d has no row", op);
        ck_assert_msg(r->min_inputs >= 0 && (r->max_inputs < 0 || r->max_inputs >= r->min_inputs), "%s: arity",
                      r->name);
        ck_assert_msg((r->cls == CLF__CLASS_LEAF) == (r->max_inputs == 0), "%s: leaf iff no inputs", r->name);
        for (int i = 0; i < CLF__ONNX_FORMS; i++) {
            const clf__onnx_form *f = &r->onnx[i];
            if (!f->name)
                continue;
            ck_assert_msg(f->since >= 1 && (!f->until || f->until >= f->since), "%s: opsets of %s", r->name, f->name);
            ck_assert_msg(!f->fold || clf__op_is_binary((clf__op)op), "%s: %s folds a non-binary op", r->name,
                          f->name);
            ck_assert_msg(!f->mean || f->fold, "%s: %s divides without folding", r->name, f->name);
            for (int o = 0; o <= op; o++)
                for (int j = 0; j < CLF__ONNX_FORMS && (o < op || j < i); j++) {
                    const char *other = clf__op_info_of((clf__op)o)->onnx[j].name;
                    ck_assert_msg(!other || strcmp(other, f->name) != 0, "ONNX %s twice", f->name);
                }
        }
        for (int o = 0; o < op; o++)
            ck_assert_msg(strcmp(clf__op_info_of((clf__op)o)->name, r->name) != 0, "%s named twice", r->name);
        bool table_op = clf__op_is_unary((clf__op)op) || clf__op_is_binary((clf__op)op);
        ck_assert_msg(table_op == (r->cls == CLF__CLASS_POINTWISE && r->rule != CLF__DT_OWN),
                      "%s: public pointwise ops and only they are expressions of the table", r->name);
        if (!table_op)
            continue;
        ck_assert_int_eq(r->min_inputs, clf__op_is_unary((clf__op)op) ? 1 : 2);
        ck_assert_msg(r->dtypes != 0 && r->builder, "%s takes no dtype or has no builder", r->name);
        ck_assert_msg(r->fuzz != CLF__FUZZ_NONE, "%s: the fuzzer cannot draw it", r->name);
        /* A float row takes every float: the storage floats use f32's
         * expression and reference (dtype_table.h). */
        if (r->dtypes & CLF__DTM_F32)
            ck_assert_msg((r->dtypes & CLF__DTM_FLOAT) == CLF__DTM_FLOAT, "%s takes f32 but not f16/bf16", r->name);
        for (int dt = 0; dt < CLF_DTYPE_COUNT; dt++) {
            bool takes = r->dtypes & CLF__DTM(dt);
            if (clf__dtype_compute((clf_dtype)dt) != (clf_dtype)dt) {
                ck_assert_msg(r->cl[dt] == NULL, "%s: storage dtype %s has its own expression", r->name,
                              clf_dtype_name((clf_dtype)dt));
                continue;
            }
            ck_assert_msg(takes == (r->cl[dt] != NULL), "%s: OpenCL expression for %s", r->name,
                          clf_dtype_name((clf_dtype)dt));
            if (takes)
                ck_assert_msg(dt == CLF_F32 ? r->ref_float != NULL : r->ref_int != NULL,
                              "%s: no reference arithmetic for %s", r->name, clf_dtype_name((clf_dtype)dt));
        }
    }
    /* The flattened enum keeps the public order. */
    ck_assert_int_eq(clf__op_of_unary(CLF_UNARY_NOT), CLF__OP_NOT);
    ck_assert_int_eq(clf__op_of_binary(CLF_BINARY_OR), CLF__OP_OR);
    ck_assert_int_eq(clf__op_unary(CLF__OP_EXP), CLF_UNARY_EXP);
    ck_assert_int_eq(clf__op_from_onnx("Relu", 13, NULL), CLF__OP_RELU);
    ck_assert_int_eq(clf__op_from_onnx("Erf", 8, NULL), CLF__OP_COUNT); /* Erf is opset 9 */
    ck_assert_int_eq(clf__op_from_onnx("NoSuchOp", 18, NULL), CLF__OP_COUNT);
    /* Sum, Max, Min and Mean are fold forms of add, maximum, minimum. */
    const clf__onnx_form *f = NULL;
    ck_assert_int_eq(clf__op_from_onnx("Mean", 13, &f), CLF__OP_ADD);
    ck_assert(f && f->fold && f->mean);
    ck_assert_int_eq(clf__op_from_onnx("Add", 13, &f), CLF__OP_ADD);
    ck_assert(f && !f->fold);
    ck_assert_int_eq(clf__op_from_onnx("Max", 13, &f), CLF__OP_MAXIMUM);
    ck_assert(f && f->fold && !f->mean);
    ck_assert_int_eq(clf__op_from_onnx("Sum", 5, NULL), CLF__OP_COUNT); /* opset 5's Sum: consumed_inputs */
    ck_assert_int_eq(clf__op_from_onnx("Sum", -1, &f), CLF__OP_ADD); /* at any opset */
    ck_assert(f && f->since == 6);
}
END_TEST

/* clf__op_from_onnx (a sorted index of the table's ONNX names) gives what
 * a walk over the table in its order gives: for every name the table has,
 * at every opset from 1 to 30 and at "any" (-1), and for names it lacks. */
static clf__op op_from_onnx_walk(const char *onnx, int64_t opset, const clf__onnx_form **form)
{
    for (int op = 0; op < CLF__OP_COUNT; op++)
        for (int i = 0; i < CLF__ONNX_FORMS; i++) {
            const clf__onnx_form *f = &clf__op_table[op].onnx[i];
            if (f->name && !strcmp(f->name, onnx) &&
                (opset < 0 || (opset >= f->since && (!f->until || opset <= f->until)))) {
                *form = f;
                return (clf__op)op;
            }
        }
    return CLF__OP_COUNT;
}

START_TEST(test_onnx_names_find_the_table_first_row)
{
    int names = 0, found = 0;
    for (int op = 0; op < CLF__OP_COUNT; op++)
        for (int i = 0; i < CLF__ONNX_FORMS; i++) {
            const char *name = clf__op_table[op].onnx[i].name;
            if (!name)
                continue;
            names++;
            for (int64_t opset = -1; opset <= 30; opset++) {
                const clf__onnx_form *want = NULL, *got = NULL;
                clf__op w = op_from_onnx_walk(name, opset, &want), g = clf__op_from_onnx(name, opset, &got);
                ck_assert_msg(w == g && (w == CLF__OP_COUNT || want == got), "%s at opset %lld: %d, want %d", name,
                              (long long)opset, (int)g, (int)w);
                found += g != CLF__OP_COUNT;
            }
            ck_assert_int_eq(clf__op_from_onnx(name, -1, NULL), op_from_onnx_walk(name, -1, &(const clf__onnx_form *){0}));
        }
    ck_assert_int_gt(names, 30);
    ck_assert_int_gt(found, names); /* most names hold at several opsets */
    static const char *const absent[] = {"", "A", "Zzz", "add", "Relu ", "Conv2D", "~"};
    for (size_t k = 0; k < sizeof absent / sizeof *absent; k++)
        ck_assert_int_eq(clf__op_from_onnx(absent[k], -1, NULL), CLF__OP_COUNT);
}
END_TEST

/* A graph as an import at size S makes it (graph_generalise.h): z =
 * where(causal [1, S, S], 1, 0) @ (x + pos * two + rows), x [S, 4] an
 * input, the constants made from S: pos[i] = i ([S, 1]; odd_at gives it
 * another value at that size), two = 2 everywhere ([S, 4]), rows[i][j] =
 * 100 i + j ([S, 4], rows of a table), causal[0][i][j] = j <= i; and x
 * flattened ([4 S]). */
static clf_graph *made_at(int64_t S, int64_t odd_at)
{
    clf_graph *g = clf_graph_create();
    int64_t xs[2] = {S, 4}, ps[2] = {S, 1}, ms[3] = {1, S, S};
    float *pos = malloc((size_t)S * sizeof *pos), *two = malloc((size_t)S * 4 * sizeof *two),
          *rows = malloc((size_t)S * 4 * sizeof *rows);
    uint8_t *mask = malloc((size_t)(S * S));
    for (int64_t i = 0; i < S; i++) {
        pos[i] = (float)i + (S == odd_at ? 5.0f : 0.0f);
        for (int j = 0; j < 4; j++) {
            two[i * 4 + j] = 2;
            rows[i * 4 + j] = (float)(100 * i + j);
        }
        for (int64_t j = 0; j < S; j++)
            mask[i * S + j] = j <= i;
    }
    clf_tensor x = clf_input(g, "x", CLF_F32, 2, xs);
    clf_tensor y = clf_binary(g, CLF_BINARY_ADD, x, clf_binary(g, CLF_BINARY_MUL, clf_constant(g, CLF_F32, 2, ps, pos),
                                                        clf_constant(g, CLF_F32, 2, xs, two)));
    y = clf_binary(g, CLF_BINARY_ADD, y, clf_constant(g, CLF_F32, 2, xs, rows));
    clf_tensor m = clf_where(g, clf_constant(g, CLF_BOOL, 3, ms, mask), clf_scalar(g, CLF_F32, 1),
                             clf_scalar(g, CLF_F32, 0));
    ck_assert_int_eq(clf_graph_output(g, "z", clf_matmul(g, m, y)), CLF_OK);
    /* x flattened: an axis of 4 S, a dimension derived from S. */
    ck_assert_int_eq(clf_graph_output(g, "flat", clf_reshape(g, x, 1, (const int64_t[1]){4 * S})), CLF_OK);
    free(pos);
    free(two);
    free(rows);
    free(mask);
    return g;
}

/* made_at(2) with S (1..20, stand-in 2) declared on x's axis 0 and z's
 * axis 1. */
static clf_graph *symbolic_made_at_2(int64_t odd_at)
{
    clf_graph *g = made_at(2, odd_at);
    const char *names[1] = {"S"};
    const int64_t lo[1] = {1}, hi[1] = {20};
    const char *dims[3][CLF_MAX_RANK] = {{"S"}, {NULL, "S"}, {NULL}};
    char err[200];
    ck_assert_int_eq(clf__graph_make_symbolic(g, 1, names, lo, hi, (const char *const(*)[CLF_MAX_RANK])dims, NULL,
                                              err, sizeof err),
                     CLF_OK);
    return g;
}

/* made_at at sizes v[0..n) (n <= 4), each paired with its size in at
 * for clf__graph_generalise. */
typedef struct made_sizes {
    clf_graph *g[4];
    clf__graph_at at[4];
    int n;
} made_sizes;

static made_sizes made_at_sizes(const int64_t *v, int n, int64_t odd_at)
{
    made_sizes m = {.n = n};
    for (int k = 0; k < n; k++) {
        m.g[k] = made_at(v[k], odd_at);
        m.at[k] = (clf__graph_at){m.g[k], &v[k]};
    }
    return m;
}

static void made_sizes_free(made_sizes *m)
{
    for (int k = 0; k < m->n; k++)
        clf_graph_destroy(&m->g[k]);
}

static bool any_generated(const clf_graph *g)
{
    for (size_t i = 0; i < g->nnodes; i++)
        if (g->nodes[i].gen.kind != CLF__GEN_NONE)
            return true;
    return false;
}

START_TEST(test_generalise_finds_symbols_and_generators)
{
    const int64_t v[4] = {6, 12, 1, 20};
    made_sizes m = made_at_sizes(v, 4, 0);
    const clf__graph_at *at = m.at;
    clf_graph *g = symbolic_made_at_2(0);
    char why[400] = "";
    /* Without the graph at the upper bound the rows have no table. */
    bool wants_table = false;
    ck_assert(!clf__graph_generalise(g, at, 3, NULL, &wants_table, why, sizeof why));
    ck_assert_msg(strstr(why, "no generator") && wants_table, "%s", why);
    ck_assert(!any_generated(g));
    ck_assert_msg(clf__graph_generalise(g, at, 3, &at[3], NULL, why, sizeof why), "%s", why);
    int kinds[8] = {0};
    for (size_t i = 0; i < g->nnodes; i++)
        kinds[g->nodes[i].gen.kind]++;
    ck_assert_int_eq(kinds[CLF__GEN_IOTA], 1);
    ck_assert_int_eq(kinds[CLF__GEN_SPLAT], 1);
    ck_assert_int_eq(kinds[CLF__GEN_PREFIX], 1);
    ck_assert_int_eq(kinds[CLF__GEN_CAUSAL], 1);
    /* A table's bytes whatever the constant's extent on its axis, 0 too
     * (a derived dimension's stand-in may be). */
    clf__node table = {.dtype = CLF_F32, .rank = 3, .shape = {2, 0, 4}, .gen = {.axis = 1, .rows = 20}};
    ck_assert_uint_eq(clf__graph_prefix_table_bytes(&table), 2 * 20 * 4 * sizeof(float));
    /* The flattened axis: 4 S, derived. */
    ck_assert_uint_eq(g->nderived, 1);
    ck_assert_int_eq(g->syms[1].rule, CLF__DIM_SCALED);
    ck_assert(g->syms[1].k == 4 && g->syms[1].c == 0);
    ck_assert_str_eq(g->syms[1].name, "4*S");
    const char *names[CLF_MAX_RANK];
    ck_assert_int_eq(clf_tensor_dim_names(g, (clf_tensor){g->serial, g->outputs[1].node}, names), CLF_OK);
    ck_assert_str_eq(names[0], g->syms[1].name);
    /* No new symbol once one is derived. */
    ck_assert_int_eq(clf_dim(g, "T", 1, 8), 0);
    ck_assert_int_eq(g->status, CLF_ERR_UNSUPPORTED);
    g->status = CLF_OK;
    /* At a size none of them had, node by node, as made there. */
    const int64_t nine = 9;
    clf_graph *s = NULL, *want = made_at(9, 0);
    ck_assert_int_eq(clf__graph_specialise(g, &nine, false, &s, why, sizeof why), CLF_OK);
    ck_assert_uint_eq(s->nnodes, want->nnodes);
    for (size_t i = 0; i < s->nnodes; i++) {
        const clf__node *a = &s->nodes[i], *b = &want->nodes[i];
        ck_assert_msg(!memcmp(a->shape, b->shape, sizeof a->shape), "node %zu", i);
        if (a->op == CLF__OP_CONSTANT)
            ck_assert_msg(!memcmp(a->data, b->data, (size_t)clf__node_numel(a) * clf_dtype_size(a->dtype)),
                          "node %zu", i);
    }
    clf_graph_destroy(&s);
    clf_graph_destroy(&want);
    clf_graph_destroy(&g);
    made_sizes_free(&m);
}
END_TEST

/* A regen that makes made_at(values[0]), counting its calls. */
static int made_again;
static clf_status make_again(void *state, const int64_t *values, clf_graph **out, char *err, size_t cap)
{
    (void)state, (void)err, (void)cap;
    made_again++;
    *out = made_at(values[0], 0);
    return CLF_OK;
}
static void release_nothing(void *state) { (void)state; }

START_TEST(test_generalise_tables_past_their_rows_made_again)
{
    const int64_t v[4] = {6, 12, 1, 12};
    made_sizes m = made_at_sizes(v, 4, 0);
    const clf__graph_at *at = m.at;
    clf_graph *g = symbolic_made_at_2(0);
    char why[400] = "";
    /* The table from a graph at 12, short of the bound 20. */
    ck_assert_msg(clf__graph_generalise(g, at, 3, &at[3], NULL, why, sizeof why), "%s", why);
    g->regen = clf__graph_regen_new(make_again, release_nothing, NULL);
    g->regen->by_nodes = true;
    g->regen->upto[0] = 12;
    for (int64_t size = 9; size <= 15; size += 6) {
        made_again = 0;
        clf_graph *s = NULL, *want = made_at(size, 0);
        ck_assert_int_eq(clf__graph_specialise(g, &size, false, &s, why, sizeof why), CLF_OK);
        /* 9 rows: node by node; 15: past the table, made again. */
        ck_assert_int_eq(made_again, size > 12);
        for (size_t i = 0; i < s->nnodes; i++)
            if (s->nodes[i].op == CLF__OP_CONSTANT)
                ck_assert_msg(!memcmp(s->nodes[i].data, want->nodes[i].data,
                                      (size_t)clf__node_numel(&want->nodes[i]) * clf_dtype_size(want->nodes[i].dtype)),
                              "size %lld, node %zu", (long long)size, i);
        clf_graph_destroy(&s);
        clf_graph_destroy(&want);
    }
    clf_graph_destroy(&g);
    made_sizes_free(&m);
}
END_TEST

/* y = x + pos, x [S, 4] an input, pos[i] = i ([S, 1]), but i + 5 from
 * S = odd_from on (a rule no size below shows, as a sliding window's). */
static int64_t small_odd_from;
static clf_graph *small_at(int64_t S)
{
    clf_graph *g = clf_graph_create();
    int64_t xs[2] = {S, 4}, ps[2] = {S, 1};
    float *pos = malloc((size_t)S * sizeof *pos);
    for (int64_t i = 0; i < S; i++)
        pos[i] = (float)i + (S >= small_odd_from ? 5.0f : 0.0f);
    clf_tensor y = clf_binary(g, CLF_BINARY_ADD, clf_input(g, "x", CLF_F32, 2, xs), clf_constant(g, CLF_F32, 2, ps, pos));
    ck_assert_int_eq(clf_graph_output(g, "y", y), CLF_OK);
    free(pos);
    return g;
}

/* The largest size make_small_again makes (as a KV cache's capacity
 * bounds an import). */
static int64_t small_capacity;
static clf_status make_small_again(void *state, const int64_t *values, clf_graph **out, char *err, size_t cap)
{
    (void)state;
    made_again++;
    if (values[0] > small_capacity) {
        snprintf(err, cap, "past the capacity");
        return CLF_ERR_SHAPE;
    }
    *out = small_at(values[0]);
    return CLF_OK;
}

/* Sizes past those checked are checked as they come, at twice the size
 * checked before (the size asked for where the regen cannot make that):
 * where the graph made node by node agrees with the regen's, the range
 * grows; where not, every later size is the regen's. */
START_TEST(test_generalise_checks_larger_sizes_as_they_come)
{
    /* 0: agrees everywhere, made up to 36; 1: disagrees from 20; 2:
     * disagrees from 17, made up to 18 (the check at the size asked for,
     * whose graph is the result). */
    static const int64_t odd_from[3] = {1000, 20, 17}, capacity[3] = {36, 1000, 18};
    for (int sc = 0; sc < 3; sc++) {
        const bool disagree = sc > 0;
        small_odd_from = odd_from[sc];
        small_capacity = capacity[sc];
        const int64_t v[3] = {6, 12, 1};
        clf_graph *made[3];
        clf__graph_at at[3];
        for (int k = 0; k < 3; k++) {
            made[k] = small_at(v[k]);
            at[k] = (clf__graph_at){made[k], &v[k]};
        }
        clf_graph *g = small_at(2);
        const char *names[1] = {"S"};
        const int64_t lo[1] = {1}, hi[1] = {40};
        const char *dims[2][CLF_MAX_RANK] = {{"S"}, {"S"}};
        char why[400] = "";
        ck_assert_int_eq(clf__graph_make_symbolic(g, 1, names, lo, hi, (const char *const(*)[CLF_MAX_RANK])dims,
                                                  NULL, why, sizeof why),
                         CLF_OK);
        ck_assert_msg(clf__graph_generalise(g, at, 3, NULL, NULL, why, sizeof why), "%s", why);
        g->regen = clf__graph_regen_new(make_small_again, release_nothing, NULL);
        g->regen->by_nodes = true;
        g->regen->upto[0] = 12;
        /* size, how many graphs the regen made for it (a check, the size
         * itself), and upto after */
        static const int64_t steps[3][4][3] = {{{10, 0, 12}, {17, 1, 24}, {23, 0, 24}, {30, 2, 30}},
                                               {{10, 0, 12}, {17, 2, 12}, {15, 1, 12}, {5, 1, 12}},
                                               {{10, 0, 12}, {17, 2, 12}, {15, 1, 12}, {5, 1, 12}}};
        for (int k = 0; k < 4; k++) {
            const int64_t size = steps[sc][k][0];
            made_again = 0;
            clf_graph *sg = NULL, *want = small_at(size);
            ck_assert_int_eq(clf__graph_specialise(g, &size, false, &sg, why, sizeof why), CLF_OK);
            ck_assert_msg(made_again == steps[sc][k][1], "case %d, size %lld: made %d", sc, (long long)size,
                          made_again);
            ck_assert_int_eq(g->regen->upto[0], steps[sc][k][2]);
            ck_assert_int_eq(g->regen->by_nodes, !disagree || k == 0);
            const uint32_t pos = sg->nodes[0].op == CLF__OP_CONSTANT ? 0 : 1;
            const clf__node *c = &sg->nodes[pos], *w = &want->nodes[pos];
            ck_assert(c->op == CLF__OP_CONSTANT && !memcmp(c->data, w->data, (size_t)size * sizeof(float)));
            clf_graph_destroy(&sg);
            clf_graph_destroy(&want);
        }
        clf_graph_destroy(&g);
        for (int k = 0; k < 3; k++)
            clf_graph_destroy(&made[k]);
    }
}
END_TEST

START_TEST(test_generalise_refuses_what_the_checks_contradict)
{
    const int64_t v[4] = {6, 12, 1, 20};
    char why[400] = "";
    /* The positions are i at 6, 12 and 20 but not at 1: the fit from the
     * first two holds, the check at S=1 refuses it. */
    made_sizes m = made_at_sizes(v, 4, 1);
    const clf__graph_at *at = m.at;
    clf_graph *g = symbolic_made_at_2(1);
    ck_assert(!clf__graph_generalise(g, at, 3, &at[3], NULL, why, sizeof why));
    ck_assert_msg(strstr(why, "at S=1") && strstr(why, "values"), "%s", why);
    ck_assert(!any_generated(g));
    for (size_t i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op != CLF__OP_INPUT)
            for (int d = 0; d < g->nodes[i].rank; d++)
                ck_assert_msg(!g->nodes[i].sym[d] || i == g->outputs[0].node, "node %zu kept a mark", i);
    /* Another graph at one size: not the same nodes. */
    clf_graph *other = made_at(12, 0);
    int64_t ones[2] = {12, 4};
    clf_graph_output(other, "extra", clf_unary(other, CLF_UNARY_EXP, clf_input(other, "w", CLF_F32, 2, ones)));
    clf__graph_at two[2] = {at[0], {other, &v[1]}};
    ck_assert(!clf__graph_generalise(g, two, 2, NULL, NULL, why, sizeof why));
    ck_assert_msg(strstr(why, "nodes"), "%s", why);
    clf_graph_destroy(&other);
    clf_graph_destroy(&g);
    made_sizes_free(&m);
}
END_TEST

/* ---- Products that read one operand, merged (graph_merge_products.h) ---- */

/* Weights of at most 64 values, copied into the graph; or borrowed (as a
 * model's initializers are) from static storage, slot by slot. */
static clf_tensor weight(clf_graph *g, int64_t rows, int64_t cols, float base, bool borrowed)
{
    static float slots[8][64];
    static int slot;
    float local[64];
    float *w = borrowed ? slots[slot++ % 8] : local;
    ck_assert_int_le(rows * cols, 64);
    for (int64_t i = 0; i < rows * cols; i++)
        w[i] = base + 0.01f * (float)i;
    int64_t shape[2] = {rows, cols};
    return borrowed ? clf__graph_constant_borrowed(g, CLF_F32, 2, shape, w)
                            : clf_constant(g, CLF_F32, 2, shape, w);
}

/* x [2, 3, 8] times: q [8, 5] and k [8, 3] (one group), transposed t1 [4,
 * 8] and t2 [2, 8] (another: exporters' Gemm transB), a lone product of
 * another K, one with a computed b; every product an output. */
static clf_graph *products_graph(uint32_t *ids, bool borrowed)
{
    clf_graph *g = clf_graph_create();
    int64_t xs[3] = {2, 3, 8}, ys[2] = {3, 6}, zs[2] = {8, 2};
    clf_tensor x = clf_input(g, "x", CLF_F32, 3, xs), y = clf_input(g, "y", CLF_F32, 2, ys);
    clf_tensor z = clf_input(g, "z", CLF_F32, 2, zs);
    const int perm[2] = {1, 0};
    clf_tensor p[6];
    p[0] = clf_matmul(g, x, weight(g, 8, 5, 0.5f, borrowed));
    p[1] = clf_matmul(g, x, clf_transpose(g, weight(g, 4, 8, -0.25f, borrowed), 2, perm));
    p[2] = clf_matmul(g, y, weight(g, 6, 4, 0.1f, borrowed));
    p[3] = clf_matmul(g, x, weight(g, 8, 3, -1.0f, borrowed));
    p[4] = clf_matmul(g, x, clf_unary(g, CLF_UNARY_EXP, z));
    p[5] = clf_matmul(g, x, clf_transpose(g, weight(g, 2, 8, 0.75f, borrowed), 2, perm));
    static const char *names[6] = {"q", "t1", "lone", "k", "computed", "t2"};
    for (int i = 0; i < 6; i++) {
        ck_assert(clf_tensor_valid(p[i]));
        ids[i] = p[i].node;
        /* Read through a movement op by a pointwise op (a product that is
         * an output, even through movement ops, stays). */
        const clf__node *n = &g->nodes[p[i].node];
        int64_t flat[2] = {clf__node_numel(n) / n->shape[n->rank - 1], n->shape[n->rank - 1]};
        clf_tensor read = clf_unary(g, CLF_UNARY_NEG, clf_reshape(g, p[i], 2, flat));
        ck_assert_int_eq(clf_graph_output(g, names[i], read), CLF_OK);
    }
    return g;
}

static void run_products(const clf_graph *g, float *out /* 6 x 48 */)
{
    float x[48], y[18], z[16];
    for (int i = 0; i < 48; i++)
        x[i] = (float)((i * 37) % 17) / 8.0f - 1.0f;
    for (int i = 0; i < 18; i++)
        y[i] = (float)((i * 11) % 7) / 4.0f - 0.5f;
    for (int i = 0; i < 16; i++)
        z[i] = (float)(i % 5) / 5.0f;
    for (int i = 0; i < 6 * 48; i++)
        out[i] = NAN;
    clf_host_binding in[3] = {{"x", x}, {"y", y}, {"z", z}};
    clf_host_binding o[6] = {{"q", out}, {"t1", out + 48}, {"lone", out + 96}, {"k", out + 144},
                             {"computed", out + 192}, {"t2", out + 240}};
    char msg[256];
    ck_assert_msg(clf_reference_run(g, 3, in, 6, o, msg, sizeof msg) == CLF_OK, "%s", msg);
}

START_TEST(test_merge_products_groups_and_slices)
{
    uint32_t ids[6];
    clf_graph *g = products_graph(ids, false);
    clf__merged_graph m;
    char err[128];
    ck_assert_int_eq(clf__graph_merge_products(g, NULL, NULL, &m, err, sizeof err), CLF_OK);
    ck_assert_ptr_nonnull(m.g);
    /* Two groups: {q, k} and {t1, t2}, in the order their first members come. */
    ck_assert_uint_eq(m.nproducts, 2);
    ck_assert_uint_eq(m.products[0].nmembers, 2);
    ck_assert_uint_eq(m.products[0].members[0], ids[0]);
    ck_assert_uint_eq(m.products[0].members[1], ids[3]);
    ck_assert_uint_eq(m.products[1].nmembers, 2);
    ck_assert_uint_eq(m.products[1].members[0], ids[1]);
    ck_assert_uint_eq(m.products[1].members[1], ids[5]);
    const clf__node *qk = &m.g->nodes[m.products[0].node], *tt = &m.g->nodes[m.products[1].node];
    ck_assert_int_eq(qk->op, CLF__OP_MATMUL);
    ck_assert_int_eq(qk->shape[2], 8); /* 5 + 3 */
    ck_assert_int_eq(tt->shape[2], 6); /* 4 + 2 */
    /* q|k's b is [8, 8], row r = q's row r then k's; t1|t2's the transpose of
     * [6, 8], t1's rows then t2's. */
    const clf__node *w = &m.g->nodes[qk->inputs[1]];
    ck_assert_int_eq(w->op, CLF__OP_CONSTANT);
    ck_assert_int_eq(w->shape[0], 8);
    ck_assert_int_eq(w->shape[1], 8);
    const float *wd = w->data;
    ck_assert_float_eq(wd[1 * 8 + 4], 0.5f + 0.01f * (1 * 5 + 4));
    ck_assert_float_eq(wd[1 * 8 + 5], -1.0f + 0.01f * (1 * 3 + 0));
    const clf__node *tr = &m.g->nodes[tt->inputs[1]];
    ck_assert_int_eq(tr->op, CLF__OP_TRANSPOSE);
    const float *td = m.g->nodes[tr->inputs[0]].data;
    ck_assert_float_eq(td[4 * 8 + 3], 0.75f + 0.01f * 3);
    /* Each member is now its slice (read by the outputs' reshapes), starting
     * at 0 and 5. */
#define READ_BY(o) (m.g->nodes[m.g->nodes[m.g->outputs[o].node].inputs[0]].inputs[0])
    const clf__node *sq = &m.g->nodes[READ_BY(0)], *sk = &m.g->nodes[READ_BY(3)];
    ck_assert_int_eq(sq->op, CLF__OP_SLICE);
    ck_assert_int_eq(sk->op, CLF__OP_SLICE);
    ck_assert_int_eq(sq->attr.slice.start[2], 0);
    ck_assert_int_eq(sk->attr.slice.start[2], 5);
    ck_assert_int_eq(sk->shape[2], 3);
    /* The others are copies: the lone product and the computed b. */
    ck_assert_int_eq(m.g->nodes[READ_BY(2)].op, CLF__OP_MATMUL);
    ck_assert_int_eq(m.g->nodes[READ_BY(4)].op, CLF__OP_MATMUL);
    ck_assert_uint_eq(m.g->nnodes, g->nnodes + 2 + 3); /* a constant and a product; and a transpose */
    /* Origins: the merged product is both members; a slice (a view its
     * readers index) and the concatenation none; a copy its original. */
    uint32_t o[8];
    ck_assert_uint_eq(clf__merged_origins(&m, m.products[0].node, o, 8), 2);
    ck_assert_uint_eq(o[0], ids[0]);
    ck_assert_uint_eq(o[1], ids[3]);
    ck_assert_uint_eq(clf__merged_origins(&m, READ_BY(3), o, 8), 0);
    ck_assert_uint_eq(clf__merged_origins(&m, READ_BY(2), o, 8), 1);
    ck_assert_uint_eq(o[0], ids[2]);
#undef READ_BY
    ck_assert_uint_eq(clf__merged_origins(&m, qk->inputs[1], o, 8), 0);
    /* The same values, bit for bit (each dot product sums K in one order). */
    float a[6 * 48], b[6 * 48];
    run_products(g, a);
    run_products(m.g, b);
    for (int i = 0; i < 6 * 48; i++)
        if (!isnan(a[i]) || !isnan(b[i]))
            ck_assert_msg(a[i] == b[i], "element %d: %g merged, %g not", i, (double)b[i], (double)a[i]);
    ck_assert(!isnan(a[144]) && !isnan(a[240]));
    clf__merged_graph_free(&m);
    clf_graph_destroy(&g);
}
END_TEST

START_TEST(test_merge_products_memo_and_nothing_to_merge)
{
    /* Borrowed weights (a model's): one concatenation per group in the
     * memo, at one address (the constant pool's key), borrowed by the
     * copies. Weights a graph owns (an import's folds, freed with it, whose
     * addresses a later one may reuse): a concatenation each copy owns. */
    for (int borrowed = 1; borrowed >= 0; borrowed--) {
        uint32_t ids[6];
        clf_graph *g = products_graph(ids, borrowed);
        clf__merge_memo *memo = clf__merge_memo_new();
        clf__merged_graph m1, m2;
        char err[128];
        ck_assert_int_eq(clf__graph_merge_products(g, NULL, memo, &m1, err, sizeof err), CLF_OK);
        ck_assert_int_eq(clf__graph_merge_products(g, NULL, memo, &m2, err, sizeof err), CLF_OK);
        for (size_t p = 0; p < 2; p++) {
            const clf__node *a = &m1.g->nodes[m1.products[p].node], *b = &m2.g->nodes[m2.products[p].node];
            uint32_t wa = a->inputs[1], wb = b->inputs[1];
            if (m1.g->nodes[wa].op == CLF__OP_TRANSPOSE) {
                wa = m1.g->nodes[wa].inputs[0];
                wb = m2.g->nodes[wb].inputs[0];
            }
            ck_assert_ptr_nonnull(m1.g->nodes[wa].data);
            ck_assert_int_eq(m1.g->nodes[wa].borrowed, borrowed);
            ck_assert_int_eq(m1.g->nodes[wa].data == m2.g->nodes[wb].data, borrowed);
            ck_assert_mem_eq(m1.g->nodes[wa].data, m2.g->nodes[wb].data, 48 * sizeof(float));
        }
        /* A copied constant (the lone product's weight) keeps its mark. */
        const clf__node *lone = &m1.g->nodes[m1.g->nodes[m1.g->nodes[m1.g->outputs[2].node].inputs[0]].inputs[0]];
        ck_assert_int_eq(lone->op, CLF__OP_MATMUL);
        ck_assert_int_eq(m1.g->nodes[lone->inputs[1]].borrowed, borrowed);
        clf__merged_graph_free(&m1);
        clf__merged_graph_free(&m2);
        clf__merge_memo_free(memo);
        clf_graph_destroy(&g);
    }
    clf_graph *g;
    clf__merged_graph m1;
    char err[128];

    /* Products of one a that are outputs (even through a movement op), or
     * one of two kept apart, stay apart; read by a pointwise op, merged. */
    for (int c = 0; c < 3; c++) {
        g = clf_graph_create();
        int64_t xs[2] = {5, 8};
        clf_tensor x = clf_input(g, "x", CLF_F32, 2, xs);
        clf_tensor a = clf_matmul(g, x, weight(g, 8, 4, 0.0f, false));
        clf_tensor b = clf_matmul(g, x, weight(g, 8, 4, 1.0f, false));
        if (c == 0) {
            const int perm[2] = {1, 0};
            ck_assert_int_eq(clf_graph_output(g, "a", a), CLF_OK);
            ck_assert_int_eq(clf_graph_output(g, "b", clf_transpose(g, b, 2, perm)), CLF_OK);
        } else {
            ck_assert_int_eq(clf_graph_output(g, "y", clf_binary(g, CLF_BINARY_MUL, a, b)), CLF_OK);
        }
        uint8_t *apart = calloc(g->nnodes, 1);
        apart[a.node] = c == 1;
        ck_assert_int_eq(clf__graph_merge_products(g, apart, NULL, &m1, err, sizeof err), CLF_OK);
        if (c < 2)
            ck_assert_msg(m1.g == NULL, "case %d merged", c);
        else
            ck_assert_msg(m1.g != NULL && m1.nproducts == 1, "case %d not merged", c);
        free(apart);
        clf__merged_graph_free(&m1);
        clf_graph_destroy(&g);
    }
}
END_TEST

static Suite *graph_suite(void)
{
    Suite *s = suite_create("graph");
    TCase *tc = tcase_create("graph");
    tcase_add_test(tc, test_strbuf_numbers_and_texts);
    tcase_add_test(tc, test_status_names);
    tcase_add_test(tc, test_version);
    tcase_add_test(tc, test_dtype_info);
    tcase_add_test(tc, test_graph_create_destroy);
    tcase_add_test(tc, test_null_graph);
    tcase_add_test(tc, test_tensor_queries);
    tcase_add_test(tc, test_input);
    tcase_add_test(tc, test_input_errors);
    tcase_add_test(tc, test_scalar);
    tcase_add_test(tc, test_constant);
    tcase_add_test(tc, test_constant_out_of_memory);
    tcase_add_test(tc, test_outputs);
    tcase_add_test(tc, test_long_names);
    tcase_add_test(tc, test_unary_ops);
    tcase_add_test(tc, test_unary_messages);
    tcase_add_test(tc, test_binary_ops);
    tcase_add_test(tc, test_broadcasting);
    tcase_add_test(tc, test_binary_errors);
    tcase_add_test(tc, test_where);
    tcase_add_test(tc, test_clip);
    tcase_add_test(tc, test_cast);
    tcase_add_test(tc, test_foreign_handles);
    tcase_add_test(tc, test_sticky_error);
    tcase_add_test(tc, test_reshape);
    tcase_add_test(tc, test_transpose);
    tcase_add_test(tc, test_expand);
    tcase_add_test(tc, test_slice_one_axis);
    tcase_add_test(tc, test_slice_many_axes);
    tcase_add_test(tc, test_slice_errors);
    tcase_add_test(tc, test_squeeze);
    tcase_add_test(tc, test_unsqueeze);
    tcase_add_test(tc, test_movement_invalid_handles);
    tcase_add_test(tc, test_node_info);
    tcase_add_test(tc, test_reduce_shapes);
    tcase_add_test(tc, test_reduce_rank0_and_zero_size);
    tcase_add_test(tc, test_argmax_argmin);
    tcase_add_test(tc, test_reduce_errors);
    tcase_add_test(tc, test_reduce_null_graph);
    tcase_add_test(tc, test_mean_and_var_structure);
    tcase_add_test(tc, test_softmax_structure);
    tcase_add_test(tc, test_norm_structure);
    tcase_add_test(tc, test_op_table_rows_are_complete);
    tcase_add_test(tc, test_onnx_names_find_the_table_first_row);
    tcase_add_test(tc, test_generalise_finds_symbols_and_generators);
    tcase_add_test(tc, test_generalise_refuses_what_the_checks_contradict);
    tcase_add_test(tc, test_generalise_tables_past_their_rows_made_again);
    tcase_add_test(tc, test_generalise_checks_larger_sizes_as_they_come);
    tcase_add_test(tc, test_merge_products_groups_and_slices);
    tcase_add_test(tc, test_merge_products_memo_and_nothing_to_merge);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return clf_test_run_suite(graph_suite());
}
