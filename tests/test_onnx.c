/* The ONNX frontend (onnx.h): binary models built here with protobuf-c's
 * generated structs and packer, the fixtures tests/onnx/make_models.py
 * wrote with the onnx Python package (text and binary of one model, raw
 * weights, external data), and, where libonnx-testdata is installed, a set
 * of ONNX's own node tests. Graphs are checked with the reference
 * interpreter, one through clf_compile/clf_run_host on PoCL; bad input
 * (truncation at every byte, flipped bytes, garbage, bad external data,
 * failing allocations) must give a status and a message, never a crash. */
#define _XOPEN_SOURCE 700 /* nftw, symlink, mkdtemp */
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../tools/clfuse/npy.h"
#include "onnx.pb-c.h"
#include "onnx/fold_memo.h"
#include "onnx/onnx_ast.h"
#include "runtime/driver_quirks.h"
#include "runtime/runtime_internal.h"
#include "test_support.h"

/* ---- Fixture paths ------------------------------------------------------- */

static const char *source_dir(void)
{
    const char *d = getenv("CLFUSE_TEST_SOURCE_DIR");
    ck_assert_msg(d != NULL, "CLFUSE_TEST_SOURCE_DIR is not set (tests/meson.build sets it)");
    return d;
}

static void fixture(char *buf, size_t cap, const char *sub, const char *name)
{
    snprintf(buf, cap, "%s/%s/%s", source_dir(), sub, name);
}

/* ---- A pool for what the builders allocate ---------------------------------- */

static void *pool[8192];
static size_t npool;

static void *P(size_t n)
{
    ck_assert(npool < sizeof pool / sizeof pool[0]);
    void *p = calloc(1, n ? n : 1);
    ck_assert_ptr_nonnull(p);
    return pool[npool++] = p;
}

static char *S(const char *s)
{
    char *p = P(strlen(s) + 1);
    strcpy(p, s);
    return p;
}

static void pool_free(void)
{
    while (npool)
        free(pool[--npool]);
}

/* ---- Building models --------------------------------------------------------- */

#define MAXN 32

typedef struct mdl {
    Onnx__ModelProto m;
    Onnx__GraphProto g;
    Onnx__OperatorSetIdProto opset;
    Onnx__OperatorSetIdProto *opsets[1];
    Onnx__NodeProto *nodes[MAXN];
    Onnx__ValueInfoProto *ins[MAXN], *outs[MAXN], *vis[MAXN];
    Onnx__TensorProto *inits[MAXN];
} mdl;

static void mdl_init(mdl *M, const char *name)
{
    memset(M, 0, sizeof *M);
    onnx__model_proto__init(&M->m);
    onnx__graph_proto__init(&M->g);
    onnx__operator_set_id_proto__init(&M->opset);
    M->m.has_ir_version = 1;
    M->m.ir_version = 8;
    M->m.producer_name = S("test_onnx");
    M->opset.domain = S("");
    M->opset.has_version = 1;
    M->opset.version = 17;
    M->opsets[0] = &M->opset;
    M->m.n_opset_import = 1;
    M->m.opset_import = M->opsets;
    M->m.graph = &M->g;
    M->g.name = S(name);
    M->g.node = M->nodes;
    M->g.input = M->ins;
    M->g.output = M->outs;
    M->g.value_info = M->vis;
    M->g.initializer = M->inits;
}

/* dims: "N" (a dim_param), "?" (neither) or a number. */
static Onnx__ValueInfoProto *vi(const char *name, int elem, int rank, const char *const *dims)
{
    Onnx__ValueInfoProto *v = P(sizeof *v);
    Onnx__TypeProto *t = P(sizeof *t);
    Onnx__TypeProto__Tensor *tt = P(sizeof *tt);
    onnx__value_info_proto__init(v);
    onnx__type_proto__init(t);
    onnx__type_proto__tensor__init(tt);
    v->name = S(name);
    v->type = t;
    t->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    t->tensor_type = tt;
    tt->has_elem_type = 1;
    tt->elem_type = elem;
    if (rank >= 0) {
        Onnx__TensorShapeProto *sh = P(sizeof *sh);
        onnx__tensor_shape_proto__init(sh);
        sh->n_dim = (size_t)rank;
        sh->dim = P((size_t)rank * sizeof *sh->dim);
        for (int d = 0; d < rank; d++) {
            Onnx__TensorShapeProto__Dimension *D = P(sizeof *D);
            onnx__tensor_shape_proto__dimension__init(D);
            if (dims[d][0] >= '0' && dims[d][0] <= '9') {
                D->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                D->dim_value = atoll(dims[d]);
            } else if (strcmp(dims[d], "?")) {
                D->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
                D->dim_param = S(dims[d]);
            }
            sh->dim[d] = D;
        }
        tt->shape = sh;
    }
    return v;
}

static void add_input(mdl *M, Onnx__ValueInfoProto *v) { M->ins[M->g.n_input++] = v; }
static void add_output(mdl *M, Onnx__ValueInfoProto *v) { M->outs[M->g.n_output++] = v; }
static void add_init(mdl *M, Onnx__TensorProto *t) { M->inits[M->g.n_initializer++] = t; }

static Onnx__TensorProto *tensor(const char *name, int elem, int rank, const int64_t *dims)
{
    Onnx__TensorProto *t = P(sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = S(name);
    t->has_data_type = 1;
    t->data_type = elem;
    t->n_dims = (size_t)rank;
    t->dims = P((size_t)(rank ? rank : 1) * sizeof *t->dims);
    if (rank)
        memcpy(t->dims, dims, (size_t)rank * sizeof *dims);
    return t;
}

static void set_raw(Onnx__TensorProto *t, const void *data, size_t bytes)
{
    t->has_raw_data = 1;
    t->raw_data.len = bytes;
    t->raw_data.data = P(bytes);
    memcpy(t->raw_data.data, data, bytes);
}

static void set_external(Onnx__TensorProto *t, const char *location, const char *offset, const char *length)
{
    const char *keys[3] = {"location", "offset", "length"}, *vals[3] = {location, offset, length};
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    t->external_data = P(3 * sizeof *t->external_data);
    for (int i = 0; i < 3; i++) {
        if (!vals[i])
            continue;
        Onnx__StringStringEntryProto *e = P(sizeof *e);
        onnx__string_string_entry_proto__init(e);
        e->key = S(keys[i]);
        e->value = S(vals[i]);
        t->external_data[t->n_external_data++] = e;
    }
}

/* inputs and outputs: names separated by commas ("" for an omitted one). */
static char **names(const char *list, size_t *n)
{
    *n = 0;
    if (!list[0])
        return P(sizeof(char *));
    char **out = P(MAXN * sizeof *out);
    const char *p = list;
    for (;;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        char *s = P(len + 1);
        memcpy(s, p, len);
        out[(*n)++] = s;
        if (!c)
            return out;
        p = c + 1;
    }
}

static Onnx__NodeProto *add_node(mdl *M, const char *op, const char *name, const char *ins, const char *outs)
{
    Onnx__NodeProto *n = P(sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = S(op);
    n->name = name ? S(name) : NULL;
    n->input = names(ins, &n->n_input);
    n->output = names(outs, &n->n_output);
    n->attribute = P(MAXN * sizeof *n->attribute);
    M->nodes[M->g.n_node++] = n;
    return n;
}

static Onnx__AttributeProto *add_attr(Onnx__NodeProto *n, const char *name, Onnx__AttributeProto__AttributeType type)
{
    Onnx__AttributeProto *a = P(sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = S(name);
    a->has_type = 1;
    a->type = type;
    n->attribute[n->n_attribute++] = a;
    return a;
}

static void attr_int(Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = add_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

static uint8_t *pack(const mdl *M, size_t *len)
{
    *len = onnx__model_proto__get_packed_size(&M->m);
    uint8_t *buf = P(*len);
    ck_assert_uint_eq(onnx__model_proto__pack(&M->m, buf), *len);
    return buf;
}

/* ---- The basic model, in several storage forms ---------------------------------- */

/* y = where(mask, reshape(x @ w + b, [-1, 3]), zero), p = softmax(y),
 * kk = k + ki; x: float[N, 4], k: int32[3]. Initializers w float[4, 3],
 * b float[3], shape int64[2], ki int32[3], mask bool[3], zero float[]. */
enum form { RAW, TYPED, EXTERNAL };

static const float W[12] = {0.5f, -1.25f, 2, 0.125f, 3, -0.75f, 1, 1, -2, 0.25f, -0.5f, 4};
static const float B[3] = {0.1f, -0.2f, 0.3f};
static const int64_t SHAPE_V[2] = {-1, 3};
static const int32_t KI[3] = {7, -8, 9};
static const uint8_t MASK[3] = {1, 0, 1};
static const float ZERO = -1.5f;

static void build_basic(mdl *M, enum form form, const char *location)
{
    mdl_init(M, "basic");
    static const char *const xd[] = {"N", "4"}, *const kd[] = {"3"}, *const yd[] = {"N", "3"};
    add_input(M, vi("x", 1, 2, xd));
    add_input(M, vi("k", 6, 1, kd));
    add_output(M, vi("y", 1, 2, yd));
    add_output(M, vi("p", 1, 2, yd));
    add_output(M, vi("kk", 6, 1, kd));
    Onnx__TensorProto *w = tensor("w", 1, 2, (const int64_t[]){4, 3}), *b = tensor("b", 1, 1, (const int64_t[]){3});
    Onnx__TensorProto *shape = tensor("shape", 7, 1, (const int64_t[]){2});
    Onnx__TensorProto *ki = tensor("ki", 6, 1, (const int64_t[]){3}), *mask = tensor("mask", 9, 1, (const int64_t[]){3});
    Onnx__TensorProto *zero = tensor("zero", 1, 0, NULL);
    if (form == TYPED) {
        w->n_float_data = 12;
        w->float_data = P(sizeof W);
        memcpy(w->float_data, W, sizeof W);
        b->n_float_data = 3;
        b->float_data = P(sizeof B);
        memcpy(b->float_data, B, sizeof B);
        shape->n_int64_data = 2;
        shape->int64_data = P(sizeof SHAPE_V);
        memcpy(shape->int64_data, SHAPE_V, sizeof SHAPE_V);
        ki->n_int32_data = 3;
        ki->int32_data = P(sizeof KI);
        memcpy(ki->int32_data, KI, sizeof KI);
        mask->n_int32_data = 3;
        mask->int32_data = P(3 * sizeof(int32_t));
        for (int i = 0; i < 3; i++)
            mask->int32_data[i] = MASK[i];
        zero->n_float_data = 1;
        zero->float_data = P(sizeof ZERO);
        zero->float_data[0] = ZERO;
    } else {
        if (form == EXTERNAL) { /* w at 3 (unaligned), b after it; see write_basic_data */
            set_external(w, location, "3", "48");
            set_external(b, location, "51", NULL);
        } else {
            set_raw(w, W, sizeof W);
            set_raw(b, B, sizeof B);
        }
        set_raw(shape, SHAPE_V, sizeof SHAPE_V);
        set_raw(ki, KI, sizeof KI);
        set_raw(mask, MASK, sizeof MASK);
        set_raw(zero, &ZERO, sizeof ZERO);
    }
    add_init(M, w);
    add_init(M, b);
    add_init(M, shape);
    add_init(M, ki);
    add_init(M, mask);
    add_init(M, zero);
    add_node(M, "MatMul", "mm", "x,w", "h");
    add_node(M, "Add", "bias", "h,b", "y0");
    add_node(M, "Reshape", "rs", "y0,shape", "y1");
    add_node(M, "Where", "sel", "mask,y1,zero", "y");
    attr_int(add_node(M, "Softmax", "sm", "y", "p"), "axis", -1);
    add_node(M, "Add", "kadd", "k,ki", "kk");
}

/* The data file of the EXTERNAL form: 3 bytes of padding, w, b. */
static void write_basic_data(const char *path, size_t truncate_to)
{
    unsigned char buf[3 + sizeof W + sizeof B] = {0xde, 0xad, 0xbe};
    memcpy(buf + 3, W, sizeof W);
    memcpy(buf + 3 + sizeof W, B, sizeof B);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    size_t n = truncate_to && truncate_to < sizeof buf ? truncate_to : sizeof buf;
    ck_assert_uint_eq(fwrite(buf, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

/* ---- Loading and running ----------------------------------------------------------- */

static char msg[2048];

static clf_onnx_model *load_mem(const void *data, size_t size, const char *base_dir, const clf_onnx_params *p)
{
    clf_onnx_params q = p ? *p : (clf_onnx_params){0};
    q.message = msg;
    q.message_cap = sizeof msg;
    msg[0] = 0;
    clf_onnx_model *m = (clf_onnx_model *)1;
    clf_status st = clf_onnx_load_memory(data, size, base_dir, &q, &m);
    ck_assert_msg(st == CLF_OK, "load: %s: %s", clf_status_name(st), msg);
    ck_assert_ptr_nonnull(m);
    return m;
}

static clf_onnx_model *load_path(const char *path, const clf_onnx_params *p)
{
    clf_onnx_params q = p ? *p : (clf_onnx_params){0};
    q.message = msg;
    q.message_cap = sizeof msg;
    msg[0] = 0;
    clf_onnx_model *m = NULL;
    clf_status st = clf_onnx_load_file(path, &q, &m);
    ck_assert_msg(st == CLF_OK, "load %s: %s: %s", path, clf_status_name(st), msg);
    return m;
}

/* The model's graph compiled on ctx, fused or with fusion off. */
static clf_executable *compile_model_style(clf_context *ctx, clf_onnx_model *m, bool fused, clf_kernel_style style)
{
    clf_executable *exe = NULL;
    clf_status st = clf_compile(ctx, clf_onnx_model_graph(m),
                                clf_compile_params(.disable_fusion = !fused, .kernel_style = style), &exe);
    ck_assert_msg(st == CLF_OK, "clf_compile (%s, style %d): %s: %s", fused ? "fused" : "unfused", (int)style,
                  clf_status_name(st), clf_context_last_error(ctx));
    return exe;
}

/* compile_model_style in the device's own forms. */
static clf_executable *compile_model(clf_context *ctx, clf_onnx_model *m, bool fused)
{
    return compile_model_style(ctx, m, fused, CLF_KERNEL_STYLE_AUTO);
}

/* Loading must fail with status st and a message holding every part. */
static void expect_fail_mem(const void *data, size_t size, const char *base_dir, const clf_onnx_params *p,
                            clf_status st, const char *const *parts)
{
    clf_onnx_params q = p ? *p : (clf_onnx_params){0};
    q.message = msg;
    q.message_cap = sizeof msg;
    msg[0] = 0;
    clf_onnx_model *m = (clf_onnx_model *)1;
    clf_status got = clf_onnx_load_memory(data, size, base_dir, &q, &m);
    ck_assert_msg(got == st, "status %s, want %s (message: %s)", clf_status_name(got), clf_status_name(st), msg);
    ck_assert_ptr_null(m);
    for (; parts && *parts; parts++)
        ck_assert_msg(strstr(msg, *parts), "'%s' not in the message: %s", *parts, msg);
}

static void expect_fail_path(const char *path, const clf_onnx_params *p, clf_status st, const char *const *parts)
{
    clf_onnx_params q = p ? *p : (clf_onnx_params){0};
    q.message = msg;
    q.message_cap = sizeof msg;
    msg[0] = 0;
    clf_onnx_model *m = (clf_onnx_model *)1;
    clf_status got = clf_onnx_load_file(path, &q, &m);
    ck_assert_msg(got == st, "%s: status %s, want %s (message: %s)", path, clf_status_name(got), clf_status_name(st),
                  msg);
    ck_assert_ptr_null(m);
    ck_assert_msg(!strncmp(msg, path, strlen(path)), "the message does not start with the file: %s", msg);
    for (; parts && *parts; parts++)
        ck_assert_msg(strstr(msg, *parts), "'%s' not in the message: %s", *parts, msg);
}

#define PARTS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* Host buffers for every input (random) and output of a graph. */
typedef struct io_set {
    size_t nin, nout;
    clf_host_binding in[16], out[16];
    clf_dtype out_dt[16];
    size_t out_n[16];
} io_set;

static size_t numel(int rank, const int64_t *shape)
{
    size_t n = 1;
    for (int d = 0; d < rank; d++)
        n *= (size_t)shape[d];
    return n;
}

/* Random inputs for every input of m, buffers for every output. */
static void io_make(clf_onnx_model *m, io_set *io)
{
    memset(io, 0, sizeof *io);
    io->nin = clf_onnx_model_input_count(m);
    io->nout = clf_onnx_model_output_count(m);
    ck_assert_uint_le(io->nin, 16);
    ck_assert_uint_le(io->nout, 16);
    for (size_t i = 0; i < io->nin; i++) {
        clf_onnx_io d;
        ck_assert_int_eq(clf_onnx_model_input(m, i, &d), CLF_OK);
        size_t n = numel(d.graph_rank, d.shape);
        void *p = calloc(n ? n : 1, clf_dtype_size(d.dtype));
        if (d.dtype == CLF_F32)
            clf_test_fill_f32(p, n, -2, 2);
        else if (d.dtype == CLF_I32)
            clf_test_fill_i32(p, n, -100, 100);
        else
            clf_test_fill_bool(p, n);
        io->in[i] = (clf_host_binding){d.name, p};
    }
    for (size_t i = 0; i < io->nout; i++) {
        clf_onnx_io d;
        ck_assert_int_eq(clf_onnx_model_output(m, i, &d), CLF_OK);
        io->out_n[i] = numel(d.graph_rank, d.shape);
        io->out_dt[i] = d.dtype;
        io->out[i] = (clf_host_binding){d.name, calloc(io->out_n[i] ? io->out_n[i] : 1, clf_dtype_size(d.dtype))};
    }
}

static void io_free(io_set *io)
{
    for (size_t i = 0; i < io->nin; i++)
        free(io->in[i].data);
    for (size_t i = 0; i < io->nout; i++)
        free(io->out[i].data);
}

static void reference(clf_onnx_model *m, io_set *io)
{
    char why[512] = "";
    clf_status st = clf_reference_run(clf_onnx_model_graph(m), io->nin, io->in, io->nout, io->out, why, sizeof why);
    ck_assert_msg(st == CLF_OK, "reference: %s: %s", clf_status_name(st), why);
}

/* Runs a and b on the same inputs (by name) and checks every output is
 * bit for bit the same. */
static void same_results(clf_onnx_model *a, clf_onnx_model *b)
{
    io_set ia, ib;
    io_make(a, &ia);
    io_make(b, &ib);
    ck_assert_uint_eq(ia.nin, ib.nin);
    ck_assert_uint_eq(ia.nout, ib.nout);
    for (size_t i = 0; i < ib.nin; i++) /* b's inputs take a's values */
        for (size_t j = 0; j < ia.nin; j++)
            if (!strcmp(ib.in[i].name, ia.in[j].name)) {
                clf_onnx_io d;
                clf_onnx_model_input(b, i, &d);
                memcpy(ib.in[i].data, ia.in[j].data, numel(d.graph_rank, d.shape) * clf_dtype_size(d.dtype));
            }
    reference(a, &ia);
    reference(b, &ib);
    for (size_t i = 0; i < ia.nout; i++) {
        ck_assert_str_eq(ia.out[i].name, ib.out[i].name);
        ck_assert_int_eq(ia.out_dt[i], ib.out_dt[i]);
        ck_assert_uint_eq(ia.out_n[i], ib.out_n[i]);
        ck_assert_msg(!memcmp(ia.out[i].data, ib.out[i].data, ia.out_n[i] * clf_dtype_size(ia.out_dt[i])),
                      "output %s differs", ia.out[i].name);
    }
    io_free(&ia);
    io_free(&ib);
}

/* The basic model's outputs computed here, for x and k. */
static void basic_expected(const float *x, const int32_t *k, size_t n, float *y, float *p, int32_t *kk)
{
    for (size_t r = 0; r < n; r++) {
        double mx = -INFINITY, sum = 0;
        for (int c = 0; c < 3; c++) {
            double acc = 0;
            for (int i = 0; i < 4; i++)
                acc += (double)x[r * 4 + i] * W[i * 3 + c];
            float h = (float)acc;
            float y0 = h + B[c];
            y[r * 3 + c] = MASK[c] ? y0 : ZERO;
            mx = fmax(mx, y[r * 3 + c]);
        }
        for (int c = 0; c < 3; c++)
            sum += exp(y[r * 3 + c] - mx);
        for (int c = 0; c < 3; c++)
            p[r * 3 + c] = (float)(exp(y[r * 3 + c] - mx) / sum);
    }
    for (int i = 0; i < 3; i++)
        kk[i] = k[i] + KI[i];
}

static void check_basic(clf_onnx_model *m, size_t n)
{
    float *x = malloc(n * 4 * sizeof *x), *y = malloc(n * 3 * sizeof *y), *p = malloc(n * 3 * sizeof *p);
    float *wy = malloc(n * 3 * sizeof *wy), *wp = malloc(n * 3 * sizeof *wp);
    int32_t k[3] = {1, 2, 3}, kk[3], wkk[3];
    clf_test_fill_f32(x, n * 4, -2, 2);
    clf_host_binding in[] = {{"x", x}, {"k", k}}, out[] = {{"y", y}, {"p", p}, {"kk", kk}};
    char why[512] = "";
    clf_status st = clf_reference_run(clf_onnx_model_graph(m), 2, in, 3, out, why, sizeof why);
    ck_assert_msg(st == CLF_OK, "%s: %s", clf_status_name(st), why);
    basic_expected(x, k, n, wy, wp, wkk);
    ck_assert_msg(clf_test_close(CLF_F32, y, wy, n * 3, 1e-6, 1e-6, why, sizeof why), "y: %s", why);
    ck_assert_msg(clf_test_close(CLF_F32, p, wp, n * 3, 1e-5, 1e-6, why, sizeof why), "p: %s", why);
    ck_assert_msg(clf_test_close(CLF_I32, kk, wkk, 3, 0, 0, why, sizeof why), "kk: %s", why);
    free(x);
    free(y);
    free(p);
    free(wy);
    free(wp);
}

/* Removes what nftw finds, deepest first. */
static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static char temp_dirs[4][256];
static int ntemp_dirs;

static void remove_temp_dirs(void)
{
    while (ntemp_dirs)
        nftw(temp_dirs[--ntemp_dirs], remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh folder under /tmp for files a test writes, removed when the
 * test's process exits. */
static void temp_dir(char *buf, size_t cap)
{
    snprintf(buf, cap, "/tmp/clfuse-onnx-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(buf));
    ck_assert_int_lt(ntemp_dirs, 4);
    if (!ntemp_dirs)
        atexit(remove_temp_dirs);
    snprintf(temp_dirs[ntemp_dirs++], sizeof temp_dirs[0], "%s", buf);
}

static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

/* ---- Loading and running binary models ------------------------------------------- */

START_TEST(binary_model_loads_and_runs)
{
    mdl M;
    size_t len;
    build_basic(&M, RAW, NULL);
    const uint8_t *bytes = pack(&M, &len);
    clf_onnx_model *m = load_mem(bytes, len, NULL, clf_onnx_params(.dim_names = (const char *const[]){"N"},
                                                                    .dim_values = (const int64_t[]){5}, .ndims = 1));
    check_basic(m, 5);
    clf_onnx_model_info info;
    ck_assert_int_eq(clf_onnx_model_get_info(m, &info), CLF_OK);
    ck_assert_str_eq(info.graph_name, "basic");
    ck_assert_str_eq(info.producer_name, "test_onnx");
    ck_assert_int_eq(info.ir_version, 8);
    ck_assert_int_eq(info.opset, 17);
    ck_assert_int_eq(info.format, CLF_ONNX_FORMAT_BINARY);
    clf_onnx_model_destroy(&m);
    ck_assert_ptr_null(m);
    clf_onnx_model_destroy(&m);
    clf_onnx_model_destroy(NULL);
    pool_free();
}
END_TEST

/* Initializers in raw_data and in the typed fields (float_data, int64_data,
 * int32_data of int32 and of bool) make the same graph. */
START_TEST(raw_and_typed_initializers_are_equal)
{
    mdl R, T;
    size_t rl, tl;
    build_basic(&R, RAW, NULL);
    build_basic(&T, TYPED, NULL);
    const uint8_t *rb = pack(&R, &rl), *tb = pack(&T, &tl);
    const clf_onnx_params *p = clf_onnx_params(.dim_names = (const char *const[]){"N"},
                                               .dim_values = (const int64_t[]){3}, .ndims = 1);
    clf_onnx_model *a = load_mem(rb, rl, NULL, p), *b = load_mem(tb, tl, NULL, p);
    ck_assert_uint_eq(clf_graph_node_count(clf_onnx_model_graph(a)), clf_graph_node_count(clf_onnx_model_graph(b)));
    check_basic(a, 3);
    check_basic(b, 3);
    same_results(a, b);
    clf_onnx_model_destroy(&a);
    clf_onnx_model_destroy(&b);
    pool_free();
}
END_TEST

/* Inputs and outputs with their declarations (dim_param names), nodes with
 * their graph nodes, values by name; the graph can be taken. */
START_TEST(inputs_outputs_and_nodes_are_queryable)
{
    char path[1024];
    fixture(path, sizeof path, "onnx", "mlp_raw.onnx");
    clf_onnx_input_shape x = {.name = "x", .origin = "x.npy", .shape = {5, 8}, .dtype = CLF_F32, .rank = 2};
    clf_onnx_model *m = load_path(path, clf_onnx_params(.inputs = &x, .ninputs = 1));
    ck_assert_uint_eq(clf_onnx_model_input_count(m), 1); /* the initializers are not inputs */
    ck_assert_uint_eq(clf_onnx_model_output_count(m), 1);
    clf_onnx_io d;
    ck_assert_int_eq(clf_onnx_model_input(m, 0, &d), CLF_OK);
    ck_assert_str_eq(d.name, "x");
    ck_assert_str_eq(d.onnx_dtype, "float");
    ck_assert_int_eq(d.onnx_elem_type, 1);
    ck_assert_int_eq(d.rank, 2);
    ck_assert_str_eq(d.dim_params[0], "B");
    ck_assert_int_eq(d.dims[0], -1);
    ck_assert_ptr_null(d.dim_params[1]);
    ck_assert_int_eq(d.dims[1], 8);
    ck_assert_int_eq(d.dtype, CLF_F32);
    ck_assert_int_eq(d.graph_rank, 2);
    ck_assert_int_eq(d.shape[0], 5);
    ck_assert_int_eq(d.shape[1], 8);
    ck_assert(clf_tensor_valid(d.tensor));
    ck_assert_int_eq(clf_onnx_model_input(m, 1, &d), CLF_ERR_NOT_FOUND);
    ck_assert_int_eq(clf_onnx_model_output(m, 0, &d), CLF_OK);
    ck_assert_str_eq(d.name, "y");
    ck_assert_int_eq(d.rank, 3);
    ck_assert_str_eq(d.dim_params[0], "B");
    ck_assert_int_eq(d.dims[1], 2);
    ck_assert_int_eq(d.graph_rank, 3);
    ck_assert_int_eq(d.shape[0], 5);
    ck_assert_int_eq(clf_onnx_model_output(m, 1, &d), CLF_ERR_NOT_FOUND);

    clf_onnx_model_info info;
    clf_onnx_model_get_info(m, &info);
    ck_assert_str_eq(info.graph_name, "mlp_raw");
    ck_assert_str_eq(info.producer_name, "make_models.py");
    ck_assert_int_eq(info.opset, 17);

    ck_assert_uint_eq(clf_onnx_model_node_count(m), 5);
    clf_onnx_node n;
    ck_assert_int_eq(clf_onnx_model_node(m, 0, &n), CLF_OK);
    ck_assert_str_eq(n.name, "mm1");
    ck_assert_str_eq(n.op_type, "MatMul");
    ck_assert_str_eq(n.domain, "");
    ck_assert_uint_eq(n.ninputs, 2);
    ck_assert_str_eq(n.inputs[1], "w1");
    ck_assert_str_eq(n.outputs[0], "h0");
    ck_assert_uint_lt(n.first_graph_node, n.end_graph_node);
    ck_assert_int_eq(n.line, 0);
    ck_assert_int_eq(clf_onnx_model_node(m, 4, &n), CLF_OK);
    ck_assert_str_eq(n.op_type, "Reshape");
    ck_assert_uint_le(n.end_graph_node, clf_graph_node_count(clf_onnx_model_graph(m)));
    ck_assert_int_eq(clf_onnx_model_node(m, 5, &n), CLF_ERR_NOT_FOUND);

    clf_onnx_value v;
    ck_assert_int_eq(clf_onnx_model_find_value(m, "x", &v), CLF_OK);
    ck_assert_int_eq(v.producer, CLF_ONNX_PRODUCER_INPUT);
    ck_assert_int_eq(clf_onnx_model_find_value(m, "w1", &v), CLF_OK);
    ck_assert_int_eq(v.producer, CLF_ONNX_PRODUCER_CONSTANT);
    ck_assert(clf_tensor_valid(v.tensor));
    ck_assert_int_eq(clf_onnx_model_find_value(m, "shape", &v), CLF_OK);
    ck_assert(!clf_tensor_valid(v.tensor)); /* only read as Reshape's shape */
    ck_assert_int_eq(clf_onnx_model_find_value(m, "h2", &v), CLF_OK);
    ck_assert_int_eq(v.producer, 2);
    ck_assert_int_eq(clf_onnx_model_find_value(m, "nope", &v), CLF_ERR_NOT_FOUND);
    size_t nv = clf_onnx_model_value_count(m);
    ck_assert_uint_eq(nv, 1 + 5 + 5); /* x, the initializers, the node outputs */
    ck_assert_int_eq(clf_onnx_model_value(m, 0, &v), CLF_OK);
    ck_assert_str_eq(v.name, "x");
    ck_assert_int_eq(clf_onnx_model_value(m, nv, &v), CLF_ERR_NOT_FOUND);

    /* The graph outlives the model once taken. */
    clf_graph *g = clf_onnx_model_take_graph(m);
    ck_assert_ptr_nonnull(g);
    ck_assert_ptr_null(clf_onnx_model_graph(m));
    ck_assert_ptr_null(clf_onnx_model_take_graph(m));
    ck_assert_int_eq(clf_onnx_model_input(m, 0, &d), CLF_OK); /* still answers */
    clf_onnx_model_destroy(&m);
    float xs[40] = {0}, ys[20];
    clf_host_binding in[] = {{"x", xs}}, out[] = {{"y", ys}};
    ck_assert_int_eq(clf_reference_run(g, 1, in, 1, out, NULL, 0), CLF_OK);
    clf_graph_destroy(&g);
}
END_TEST

/* An initializer that is also listed among the graph's inputs is a
 * constant, not an input. */
START_TEST(initializer_listed_as_input_is_a_constant)
{
    mdl M;
    size_t len;
    build_basic(&M, RAW, NULL);
    static const char *const wd[] = {"4", "3"};
    add_input(&M, vi("w", 1, 2, wd));
    const uint8_t *bytes = pack(&M, &len);
    clf_onnx_model *m = load_mem(bytes, len, NULL, clf_onnx_params(.dim_names = (const char *const[]){"N"},
                                                                    .dim_values = (const int64_t[]){2}, .ndims = 1));
    ck_assert_uint_eq(clf_onnx_model_input_count(m), 2);
    clf_onnx_value v;
    ck_assert_int_eq(clf_onnx_model_find_value(m, "w", &v), CLF_OK);
    ck_assert_int_eq(v.producer, CLF_ONNX_PRODUCER_CONSTANT);
    check_basic(m, 2);
    clf_onnx_model_destroy(&m);
    pool_free();
}
END_TEST

/* ---- Text and binary ----------------------------------------------------------------- */

static const struct {
    const char *name;
    const char *dims[4];
    int64_t sizes[4];
} graphs[] = {
    {"chain", {"N"}, {100}},
    {"layernorm", {"B"}, {5}},
    {"mlp", {"M", "D", "F"}, {6, 8, 12}},
    {"movement", {NULL}, {0}},
    {"reduce13", {NULL}, {0}},
    {"softmax", {"R", "C"}, {4, 33}},
};

/* tests/graphs/G.onnxtxt and tests/onnx/G.onnx (written from it by onnx
 * itself) give the same graph and the same results. */
START_TEST(text_and_binary_give_the_same_graph)
{
    char tpath[1024], bpath[1024], file[64];
    size_t nd = 0;
    while (nd < 4 && graphs[_i].dims[nd])
        nd++;
    const clf_onnx_params *p = clf_onnx_params(.dim_names = graphs[_i].dims, .dim_values = graphs[_i].sizes,
                                               .ndims = nd);
    snprintf(file, sizeof file, "%s.onnxtxt", graphs[_i].name);
    fixture(tpath, sizeof tpath, "graphs", file);
    snprintf(file, sizeof file, "%s.onnx", graphs[_i].name);
    fixture(bpath, sizeof bpath, "onnx", file);
    clf_onnx_model *t = load_path(tpath, p), *b = load_path(bpath, p);
    clf_onnx_model_info ti, bi;
    clf_onnx_model_get_info(t, &ti);
    clf_onnx_model_get_info(b, &bi);
    ck_assert_int_eq(ti.format, CLF_ONNX_FORMAT_TEXT);
    ck_assert_int_eq(bi.format, CLF_ONNX_FORMAT_BINARY);
    ck_assert_str_eq(ti.graph_name, bi.graph_name);
    ck_assert_uint_eq(clf_graph_node_count(clf_onnx_model_graph(t)), clf_graph_node_count(clf_onnx_model_graph(b)));
    ck_assert_uint_eq(clf_onnx_model_node_count(t), clf_onnx_model_node_count(b));
    ck_assert_uint_eq(clf_onnx_model_input_count(t), clf_onnx_model_input_count(b));
    for (size_t i = 0; i < clf_onnx_model_input_count(t); i++) {
        clf_onnx_io x, y;
        clf_onnx_model_input(t, i, &x);
        clf_onnx_model_input(b, i, &y);
        ck_assert_str_eq(x.name, y.name);
        ck_assert_str_eq(x.onnx_dtype, y.onnx_dtype);
        ck_assert_int_eq(x.rank, y.rank);
        for (int d = 0; d < x.rank; d++) {
            ck_assert_int_eq(x.dims[d], y.dims[d]);
            ck_assert((x.dim_params[d] == NULL) == (y.dim_params[d] == NULL));
            if (x.dim_params[d])
                ck_assert_str_eq(x.dim_params[d], y.dim_params[d]);
        }
    }
    clf_onnx_node n;
    ck_assert_int_eq(clf_onnx_model_node(t, 0, &n), CLF_OK);
    ck_assert_int_gt(n.line, 0); /* text nodes know their line */
    same_results(t, b);
    clf_onnx_model_destroy(&t);
    clf_onnx_model_destroy(&b);
}
END_TEST

/* The shape arithmetic the TorchScript exporter writes (Shape, Gather,
 * Unsqueeze, Concat into a Reshape) and a mask from Range and Trilu fold
 * into constants at load: the graph holds none of their nodes (an input,
 * the two constants, the reshape, the mask's where), CLFUSE_LOGS=fusion
 * names each folded node, and the result is the reshaped input masked. */
START_TEST(shape_chains_and_masks_fold_at_load)
{
    static const char text[] =
        "<ir_version: 8, opset_import: [\"\" : 17]>\n"
        "g (float[4, 6] x) => (float[4, 2, 3] y) {\n"
        "  shp = Shape(x)\n"
        "  zero = Constant<value = int64 {0}>()\n"
        "  rows = Gather<axis = 0>(shp, zero)\n"
        "  ax = Constant<value = int64[1] {0}>()\n"
        "  rows1 = Unsqueeze(rows, ax)\n"
        "  rest = Constant<value = int64[2] {2, 3}>()\n"
        "  to = Concat<axis = 0>(rows1, rest)\n"
        "  r = Reshape(x, to)\n"
        "  three = Constant<value = int64 {3}>()\n"
        "  one = Constant<value = int64 {1}>()\n"
        "  idx = Range(zero, three, one)\n"
        "  fl = Cast<to = 1>(idx)\n"
        "  sq = Constant<value = int64[2] {2, 3}>()\n"
        "  ones = ConstantOfShape<value = float[1] {1.0}>(sq)\n"
        "  tri = Trilu<upper = 0>(ones)\n"
        "  keep = Greater(tri, fl)\n"
        "  nil = Constant<value = float {0.0}>()\n"
        "  y = Where(keep, r, nil)\n"
        "}\n";
    static char log[1 << 14];
    clf_test_log lc = clf_test_log_begin("fusion");
    clf_onnx_model *m = load_mem(text, strlen(text), NULL, NULL);
    clf_test_log_end(&lc, log, sizeof log);
    /* (Shape, Range and ConstantOfShape are constants as they are read.) */
    static const char *const folded[] = {"Gather 'rows'", "Unsqueeze 'rows1'", "Concat 'to'",
                                         "Cast 'fl'",     "Trilu 'tri'",       "Greater 'keep'"};
    for (size_t i = 0; i < sizeof folded / sizeof folded[0]; i++) {
        char want[96];
        snprintf(want, sizeof want, "(%s): folded into a constant at load", folded[i]);
        ck_assert_msg(strstr(log, want), "no \"%s\" in:\n%s", want, log);
    }
    const clf_graph *g = clf_onnx_model_graph(m);
    ck_assert_uint_le(clf_graph_node_count(g), 6);
    float x[24], y[24];
    for (int i = 0; i < 24; i++)
        x[i] = (float)i - 5.5f;
    clf_host_binding in = {"x", x}, out = {"y", y};
    ck_assert_int_eq(clf_reference_run(g, 1, &in, 1, &out, msg, sizeof msg), CLF_OK);
    /* y[a][b][c] = x[a][3b + c] where tri[b][c] (c <= b) > c, i.e. 1 > c
     * where c <= b: kept at c = 0 only. */
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 2; b++)
            for (int c = 0; c < 3; c++) {
                int at = (a * 2 + b) * 3 + c;
                ck_assert_msg(y[at] == (c == 0 ? x[at] : 0.0f), "y[%d][%d][%d] = %g", a, b, c, y[at]);
            }
    clf_onnx_model_destroy(&m);
}
END_TEST

/* ConstantOfShape with an extent 0 has no elements, however many the
 * others would make: it loads; without the 0 it is refused as too large. */
START_TEST(constant_of_shape_extents_overflowing)
{
    static const char empty[] = "<ir_version: 8, opset_import: [\"\" : 17]>\n"
                                "g (float[4] a) => (float[4] y) {\n"
                                "  s = Constant<value = int64[3] {100000, 100000, 0}>()\n"
                                "  z = ConstantOfShape<value = float[1] {1.0}>(s)\n"
                                "  n = Size(z)\n"
                                "  f = Cast<to = 1>(n)\n"
                                "  y = Add(a, f)\n}\n";
    clf_onnx_model *m = load_mem(empty, strlen(empty), NULL, NULL);
    float a[4] = {1, 2, 3, 4}, y[4];
    clf_host_binding in = {"a", a}, out = {"y", y};
    ck_assert_int_eq(clf_reference_run(clf_onnx_model_graph(m), 1, &in, 1, &out, msg, sizeof msg), CLF_OK);
    for (int i = 0; i < 4; i++)
        ck_assert(y[i] == a[i]); /* Size(z) is 0 */
    clf_onnx_model_destroy(&m);
    static const char huge[] = "<ir_version: 8, opset_import: [\"\" : 17]>\n"
                               "g (float[4] a) => (float[4] y) {\n"
                               "  s = Constant<value = int64[2] {100000, 100000}>()\n"
                               "  z = ConstantOfShape<value = float[1] {1.0}>(s)\n"
                               "  y = Relu(a)\n}\n";
    expect_fail_mem(huge, strlen(huge), NULL, NULL, CLF_ERR_UNSUPPORTED,
                    PARTS("node 1 (ConstantOfShape): the constant would have more than"));
}
END_TEST

/* A table op in a model whose opset is older than the op's first form
 * read is refused with that opset named (Sum is read from opset 6 on; its
 * opset 1 form has consumed_inputs). */
START_TEST(ops_before_their_first_opset_are_refused)
{
    static const char sum[] = "<ir_version: 3, opset_import: [\"\" : 5]>\n"
                              "g (float[4] a, float[4] b) => (float[4] y) {\n  y = Sum(a, b)\n}\n";
    expect_fail_mem(sum, strlen(sum), NULL, NULL, CLF_ERR_UNSUPPORTED,
                    PARTS("node 0 (Sum): op Sum is read from opset 6 on; the model imports opset 5"));
}
END_TEST

/* An attribute the op's rule does not read is refused, naming it and the
 * op, not ignored; the few that change nothing here pass. */
START_TEST(unknown_attributes_are_refused)
{
    static const char relu[] = "<ir_version: 8, opset_import: [\"\" : 17]>\n"
                               "g (float[4] a) => (float[4] y) {\n  y = Relu<alpha = 0.5>(a)\n}\n";
    expect_fail_mem(relu, strlen(relu), NULL, NULL, CLF_ERR_UNSUPPORTED,
                    PARTS("node 0 (Relu): attribute 'alpha' of Relu is not supported by libclfuse"));
    static const char softmax[] = "<ir_version: 8, opset_import: [\"\" : 17]>\n"
                                  "g (float[2, 4] a) => (float[2, 4] y) {\n"
                                  "  y = Softmax<axis = -1, axes = [0]>(a)\n}\n";
    expect_fail_mem(softmax, strlen(softmax), NULL, NULL, CLF_ERR_UNSUPPORTED,
                    PARTS("attribute 'axes' of Softmax is not supported"));
    static const char seed[] = "<ir_version: 8, opset_import: [\"\" : 17]>\n"
                               "g (float[4] a) => (float[4] y) {\n  y = Dropout<seed = 3>(a)\n}\n";
    clf_onnx_model *m = load_mem(seed, strlen(seed), NULL, NULL);
    clf_onnx_model_destroy(&m);
}
END_TEST

/* The same model through text in memory: messages name "<memory>" or
 * params.name; the format can be forced. */
START_TEST(text_in_memory_and_forced_formats)
{
    static const char text[] = "<ir_version: 8, opset_import: [\"\" : 17]>\n"
                               "g (float[4] a) => (float[4] y) {\n  y = Frob(a)\n}\n";
    expect_fail_mem(text, strlen(text), NULL, NULL, CLF_ERR_UNSUPPORTED,
                    PARTS("<memory>:3:7: node 0 (Frob): op Frob is not supported"));
    expect_fail_mem(text, strlen(text), NULL, clf_onnx_params(.name = "m.onnxtxt"), CLF_ERR_UNSUPPORTED,
                    PARTS("m.onnxtxt:3:7: "));
    expect_fail_mem(text, strlen(text), NULL, clf_onnx_params(.format = CLF_ONNX_FORMAT_BINARY), CLF_ERR_MODEL,
                    PARTS("<memory>: "));
    mdl M;
    size_t len;
    build_basic(&M, RAW, NULL);
    const uint8_t *bytes = pack(&M, &len);
    expect_fail_mem(bytes, len, NULL, clf_onnx_params(.format = CLF_ONNX_FORMAT_TEXT), CLF_ERR_MODEL,
                    PARTS("<memory>:1:"));
    expect_fail_mem(bytes, len, NULL, clf_onnx_params(.format = (clf_onnx_format)7), CLF_ERR_INVALID_ARGUMENT,
                    PARTS("format 7"));
    static const char good[] = "# a comment first\ng (float[2] a) => (float[2] y) <float[2] w = {1.5, -2}> {\n"
                               "  y = Mul(a, w)\n}\n";
    char bom[sizeof good + 3] = "\xef\xbb\xbf";
    strcat(bom, good);
    for (int k = 0; k < 2; k++) { /* also after a UTF-8 byte order mark */
        clf_onnx_model *m = k ? load_mem(bom, strlen(bom), NULL, NULL) : load_mem(good, strlen(good), NULL, NULL);
        float a[2] = {2, 3}, y[2];
        clf_host_binding in[] = {{"a", a}}, out[] = {{"y", y}};
        ck_assert_int_eq(clf_reference_run(clf_onnx_model_graph(m), 1, in, 1, out, NULL, 0), CLF_OK);
        ck_assert(y[0] == 3.0f && y[1] == -6.0f);
        clf_onnx_model_destroy(&m);
    }
    pool_free();
}
END_TEST

/* The text parser stores literals in their element type's bytes, as the
 * binary reader does (tests link the library's objects: the AST is
 * reachable). */
START_TEST(text_literals_keep_their_bytes)
{
    static const char text[] = "g (float[2] a) => (float[2] y) <float[2] f = {1.5, -2}, int64[2] i = {-3, 4000000000},"
                               " bool[3] b = {0, 1, 5}, float16[3] h = {1.0, -0.5, 65504}, bfloat16[1] bf = {3.0},"
                               " uint8[1] u = {255}, double[1] d = {0.1}> {\n  y = Mul(a, f)\n}\n";
    clf__onnx_model m;
    char err[256] = "";
    ck_assert_msg(clf__onnx_parse_text(text, strlen(text), &m, err, sizeof err) == CLF_OK, "%s", err);
    ck_assert_int_eq(m.nextras, 7);
    const clf__onnx_tensor *f = m.extras[0].init, *i = m.extras[1].init, *b = m.extras[2].init;
    const clf__onnx_tensor *h = m.extras[3].init, *bf = m.extras[4].init, *u = m.extras[5].init;
    const clf__onnx_tensor *d = m.extras[6].init;
    ck_assert(!memcmp(f->data, (const float[]){1.5f, -2.0f}, 8));
    ck_assert(!memcmp(i->data, (const int64_t[]){-3, 4000000000}, 16));
    ck_assert(!memcmp(b->data, (const uint8_t[]){0, 1, 1}, 3));
    ck_assert(!memcmp(h->data, (const uint16_t[]){0x3c00, 0xb800, 0x7bff}, 6));
    ck_assert(!memcmp(bf->data, (const uint16_t[]){0x4040}, 2));
    ck_assert(!memcmp(u->data, (const uint8_t[]){255}, 1));
    ck_assert(!memcmp(d->data, (const double[]){0.1}, 8));
    ck_assert(clf__onnx_tensor_double(h, 1) == -0.5 && clf__onnx_tensor_double(h, 2) == 65504);
    ck_assert(clf__onnx_tensor_double(bf, 0) == 3.0);
    ck_assert_int_eq(clf__onnx_tensor_int(i, 1), 4000000000);
    ck_assert_int_eq(clf__onnx_tensor_int(u, 0), 255);
    ck_assert(clf__onnx_tensor_double(f, 1) == -2.0);
    clf__onnx_ast_free(&m);
    static const char bad[] = "g (float[2] a) => (float[2] y) <int8[1] q = {300}> {\n  y = Relu(a)\n}\n";
    ck_assert_int_eq(clf__onnx_parse_text(bad, strlen(bad), &m, err, sizeof err), CLF_ERR_MODEL);
    ck_assert_msg(strstr(err, "1:46: 300 does not fit in int8"), "%s", err);
    static const char huge[] = "g (float[2] a) => (float[2] y) <float[1000000000] w = {1}> {\n  y = Relu(a)\n}\n";
    ck_assert_int_eq(clf__onnx_parse_text(huge, strlen(huge), &m, err, sizeof err), CLF_ERR_MODEL);
    ck_assert_msg(strstr(err, "more values than the rest of the text could list"), "%s", err);
}
END_TEST

/* ---- External data ----------------------------------------------------------------------- */

/* The model with w and b in DATA beside it, at unaligned offsets. */
static void write_external_model(const char *dir, const char *location, char *model_path, size_t cap)
{
    mdl M;
    size_t len;
    build_basic(&M, EXTERNAL, location);
    const uint8_t *bytes = pack(&M, &len);
    snprintf(model_path, cap, "%s/model.onnx", dir);
    write_file(model_path, bytes, len);
    pool_free();
}

static const char *const N_NAME[] = {"N"};
static const int64_t N_TWO[] = {2};
static const clf_onnx_params N_IS_2 = {.dim_names = N_NAME, .dim_values = N_TWO, .ndims = 1};

START_TEST(external_data_loads)
{
    char dir[256], data[512], path[512];
    temp_dir(dir, sizeof dir);
    snprintf(data, sizeof data, "%s/weights.bin", dir);
    write_basic_data(data, 0);
    write_external_model(dir, "weights.bin", path, sizeof path);
    clf_onnx_model *m = load_path(path, &N_IS_2);
    check_basic(m, 2);
    clf_onnx_model_destroy(&m);
    /* From memory, with the folder given. */
    FILE *f = fopen(path, "rb");
    unsigned char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    m = load_mem(buf, n, dir, &N_IS_2);
    check_basic(m, 2);
    clf_onnx_model_destroy(&m);
    /* Without a folder it is refused, naming the tensor. */
    expect_fail_mem(buf, n, NULL, &N_IS_2, CLF_ERR_MODEL,
                    PARTS("<memory>: initializer 'w': external data 'weights.bin'", "from memory"));
    /* A link inside the folder to a file inside it is fine; in a subfolder too. */
    char sub[512], link[512];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    snprintf(link, sizeof link, "%s/sub/w.bin", dir);
    ck_assert_int_eq(symlink("../weights.bin", link), 0);
    write_external_model(dir, "sub/w.bin", path, sizeof path);
    m = load_path(path, &N_IS_2);
    check_basic(m, 2);
    clf_onnx_model_destroy(&m);
    /* onnx's own external-data writer (save_as_external_data). */
    char raw[1024], ext[1024];
    fixture(raw, sizeof raw, "onnx", "mlp_raw.onnx");
    fixture(ext, sizeof ext, "onnx", "mlp_external.onnx");
    const clf_onnx_params *p = clf_onnx_params(.dim_names = (const char *const[]){"B"},
                                               .dim_values = (const int64_t[]){7}, .ndims = 1);
    clf_onnx_model *a = load_path(raw, p), *b = load_path(ext, p);
    same_results(a, b);
    clf_onnx_model_destroy(&a);
    clf_onnx_model_destroy(&b);
}
END_TEST

/* Each bad external reference errors, naming the file, the tensor and the
 * problem. */
START_TEST(external_data_errors)
{
    char dir[256], other[256], data[512], path[512], link[512];
    temp_dir(dir, sizeof dir);
    temp_dir(other, sizeof other);
    snprintf(data, sizeof data, "%s/weights.bin", dir);
    write_basic_data(data, 0);

    write_external_model(dir, "missing.bin", path, sizeof path);
    expect_fail_path(path, &N_IS_2, CLF_ERR_MODEL, PARTS("initializer 'w'", "'missing.bin'", "cannot open"));

    snprintf(data, sizeof data, "%s/short.bin", dir);
    write_basic_data(data, 40); /* w needs bytes 3..51 */
    write_external_model(dir, "short.bin", path, sizeof path);
    expect_fail_path(path, &N_IS_2, CLF_ERR_MODEL,
                     PARTS("initializer 'w'", "'short.bin'", "the file has 40 bytes; the tensor needs 48 from offset 3"));

    write_basic_data(data, 55); /* w fits, b (51..63) does not */
    expect_fail_path(path, &N_IS_2, CLF_ERR_MODEL, PARTS("initializer 'b'", "the file has 55 bytes"));

    write_external_model(dir, "/etc/passwd", path, sizeof path);
    expect_fail_path(path, &N_IS_2, CLF_ERR_MODEL, PARTS("initializer 'w'", "absolute path"));

    write_external_model(dir, "../weights.bin", path, sizeof path);
    expect_fail_path(path, &N_IS_2, CLF_ERR_MODEL, PARTS("initializer 'w'", "'..'"));
    write_external_model(dir, "a/../../x.bin", path, sizeof path);
    expect_fail_path(path, &N_IS_2, CLF_ERR_MODEL, PARTS("'..'"));

    /* A link out of the folder, to a file that exists. */
    snprintf(data, sizeof data, "%s/outside.bin", other);
    write_basic_data(data, 0);
    snprintf(link, sizeof link, "%s/escape.bin", dir);
    ck_assert_int_eq(symlink(data, link), 0);
    write_external_model(dir, "escape.bin", path, sizeof path);
    expect_fail_path(path, &N_IS_2, CLF_ERR_MODEL, PARTS("initializer 'w'", "outside the model's folder"));

    snprintf(data, sizeof data, "%s/adir", dir);
    ck_assert_int_eq(mkdir(data, 0700), 0);
    write_external_model(dir, "adir", path, sizeof path);
    expect_fail_path(path, &N_IS_2, CLF_ERR_MODEL, PARTS("'adir'", "not a regular file"));

    /* Offsets and lengths the model states. */
    mdl M;
    size_t len;
    const char *cases[][4] = {
        /* location, offset, length, expected part */
        {"weights.bin", "1000000", "48", "the file has 63 bytes; the tensor needs 48 from offset 1000000"},
        {"weights.bin", "3", "40", "length 40 does not match the tensor's 48 bytes"},
        {"weights.bin", "12abc", NULL, "offset '12abc' is not a number"},
        {"weights.bin", "-4", NULL, "offset '-4' is not a number"},
        {"weights.bin", "99999999999999999999", NULL, "is not a number"},
        {NULL, "3", NULL, "without a 'location'"},
        {"", "3", NULL, "no location"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        build_basic(&M, EXTERNAL, "weights.bin");
        Onnx__TensorProto *w = M.inits[0];
        w->n_external_data = 0;
        set_external(w, cases[c][0], cases[c][1], cases[c][2]);
        const uint8_t *bytes = pack(&M, &len);
        write_file(path, bytes, len);
        expect_fail_path(path, &N_IS_2, CLF_ERR_MODEL, PARTS("initializer 'w'", cases[c][3]));
        pool_free();
    }
}
END_TEST

/* ---- Bad models --------------------------------------------------------------------------- */

static void expect_model_fail(const mdl *M, clf_status st, const char *const *parts)
{
    size_t len;
    const uint8_t *bytes = pack(M, &len);
    expect_fail_mem(bytes, len, NULL, &N_IS_2, st, parts);
}

START_TEST(bad_models_are_refused_clearly)
{
    mdl M;
    build_basic(&M, RAW, NULL);
    M.m.ir_version = 99;
    expect_model_fail(&M, CLF_ERR_MODEL, PARTS("ir_version 99 is not one libclfuse reads"));
    M.m.ir_version = 2;
    expect_model_fail(&M, CLF_ERR_MODEL, PARTS("ir_version 2"));
    M.m.has_ir_version = 0;
    expect_model_fail(&M, CLF_ERR_MODEL, PARTS("not an ONNX model: it has no ir_version"));
    M.m.has_ir_version = 1;
    M.m.ir_version = 8;
    M.m.graph = NULL;
    expect_model_fail(&M, CLF_ERR_MODEL, PARTS("the model has no graph"));
    M.m.graph = &M.g;
    M.m.n_opset_import = 0;
    expect_model_fail(&M, CLF_ERR_MODEL, PARTS("imports no opset"));
    M.m.n_opset_import = 1;
    M.opset.version = 99; /* past the newest opset read: refused, not read as opset 28 */
    expect_model_fail(&M, CLF_ERR_UNSUPPORTED,
                      PARTS("the model imports opset 99 of the default domain", "reads opsets up to 28"));
    M.opset.version = 28; /* the newest read: the same model loads */
    {
        size_t len;
        const uint8_t *bytes = pack(&M, &len);
        clf_onnx_model *model = load_mem(bytes, len, NULL, &N_IS_2);
        clf_onnx_model_destroy(&model);
    }
    M.opset.version = 17;

    /* An unknown op, named by index, name and op_type. */
    M.nodes[1]->op_type = "Frob";
    expect_model_fail(&M, CLF_ERR_UNSUPPORTED, PARTS("<memory>: node 1 'bias' (Frob): op Frob is not supported"));
    M.nodes[1]->op_type = S("Add");
    M.nodes[1]->domain = "com.example";
    expect_model_fail(&M, CLF_ERR_UNSUPPORTED, PARTS("node 1 'bias' (Add): op com.example.Add"));
    M.nodes[1]->domain = NULL;

    /* Attributes of the wrong type. */
    Onnx__AttributeProto *axis = M.nodes[4]->attribute[0];
    axis->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    axis->has_f = 1;
    axis->f = 1.5f;
    expect_model_fail(&M, CLF_ERR_MODEL, PARTS("node 4 'sm' (Softmax): attribute 'axis' must be an integer"));
    axis->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    axis->has_s = 1;
    axis->s = (ProtobufCBinaryData){2, (uint8_t *)"-1"};
    expect_model_fail(&M, CLF_ERR_MODEL, PARTS("attribute 'axis' must be an integer"));
    axis->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED;
    axis->has_s = axis->has_f = 0;
    axis->has_i = 0;
    expect_model_fail(&M, CLF_ERR_MODEL, PARTS("node 4 'sm' (Softmax): attribute 'axis' has no value"));
    axis->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
    Onnx__GraphProto body = ONNX__GRAPH_PROTO__INIT;
    axis->g = &body;
    expect_model_fail(&M, CLF_ERR_UNSUPPORTED, PARTS("attribute 'axis' is a graph", "not supported"));
    axis->g = NULL;
    axis->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    axis->has_i = 1;
    /* An axis past what an int holds is refused, not taken modulo 2^32
     * (4294967295 was read as -1, the last axis). */
    const int64_t axis_i = axis->i;
    axis->i = 4294967295LL;
    expect_model_fail(&M, CLF_ERR_MODEL,
                      PARTS("node 4 'sm' (Softmax): attribute 'axis' is 4294967295: an axis must lie in [-8, 8)"));
    axis->i = -9;
    expect_model_fail(&M, CLF_ERR_MODEL, PARTS("attribute 'axis' is -9"));
    axis->i = axis_i;

    /* Names that are not defined, outputs nobody computes. */
    M.nodes[2]->input[0] = "zz";
    expect_model_fail(&M, CLF_ERR_MODEL, PARTS("node 2 'rs' (Reshape): input 'zz' is not defined"));
    M.nodes[2]->input[0] = S("y0");
    M.outs[2]->name = "ghost";
    expect_model_fail(&M, CLF_ERR_MODEL, PARTS("output 'ghost' is not computed by any node"));
    M.outs[2]->name = S("kk");

    /* Tensors whose data does not fit their shape or type. */
    Onnx__TensorProto *w = M.inits[0];
    w->raw_data.len = 40;
    expect_model_fail(&M, CLF_ERR_MODEL, PARTS("initializer 'w': raw_data holds 40 bytes", "needs 48"));
    w->raw_data.len = 48;
    w->dims[0] = -4;
    expect_model_fail(&M, CLF_ERR_MODEL, PARTS("initializer 'w': dimension 0 of the tensor is -4"));
    w->dims[0] = 4;
    w->has_data_type = 0;
    expect_model_fail(&M, CLF_ERR_MODEL, PARTS("initializer 'w': the tensor has no data_type"));
    w->has_data_type = 1;
    w->data_type = 8;
    expect_model_fail(&M, CLF_ERR_UNSUPPORTED, PARTS("initializer 'w': string tensors are not supported"));
    w->data_type = 1;
    Onnx__TensorProto *ki = M.inits[3];
    ki->has_raw_data = 0;
    ki->n_int32_data = 2;
    ki->int32_data = P(2 * sizeof(int32_t));
    expect_model_fail(&M, CLF_ERR_MODEL, PARTS("initializer 'ki': int32_data holds 2 values but the tensor's shape has 3"));
    ki->n_int32_data = 0;
    ki->n_float_data = 3;
    ki->float_data = P(3 * sizeof(float));
    expect_model_fail(&M, CLF_ERR_MODEL, PARTS("initializer 'ki': int32 values must be in int32_data or raw_data"));
    ki->n_float_data = 0;
    ki->has_raw_data = 1;
    Onnx__TensorProto *mask = M.inits[4];
    mask->data_type = 3; /* int8 */
    mask->has_raw_data = 0;
    mask->n_int32_data = 3;
    mask->int32_data = P(3 * sizeof(int32_t));
    mask->int32_data[1] = 300;
    expect_model_fail(&M, CLF_ERR_MODEL, PARTS("initializer 'mask': int32_data value 300 at 1 does not fit in int8"));
    mask->data_type = 9;
    mask->n_int32_data = 0;
    mask->has_raw_data = 1;

    /* Input declarations libclfuse cannot take. */
    Onnx__TypeProto *xt = M.ins[0]->type;
    xt->tensor_type->elem_type = 11;
    expect_model_fail(&M, CLF_ERR_UNSUPPORTED, PARTS("input 'x' is double"));
    /* An int64 input is taken; the MatMul it feeds refuses the dtype. */
    xt->tensor_type->elem_type = 7;
    expect_model_fail(&M, CLF_ERR_DTYPE, PARTS("node 0 'mm' (MatMul): clf_matmul: a has dtype i64"));
    xt->tensor_type->elem_type = 1;
    M.ins[0]->type = NULL;
    expect_model_fail(&M, CLF_ERR_MODEL, PARTS("input 'x': has no tensor type"));
    Onnx__TypeProto seq = ONNX__TYPE_PROTO__INIT;
    Onnx__TypeProto__Sequence s = ONNX__TYPE_PROTO__SEQUENCE__INIT;
    seq.value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
    seq.sequence_type = &s;
    M.ins[0]->type = &seq;
    expect_model_fail(&M, CLF_ERR_UNSUPPORTED, PARTS("input 'x': is a sequence"));
    M.ins[0]->type = xt;

    /* Given shapes that do not fit. */
    size_t len;
    const uint8_t *bytes = pack(&M, &len);
    clf_onnx_input_shape bad = {.name = "x", .origin = "x.npy", .shape = {2, 5}, .dtype = CLF_F32, .rank = 2};
    expect_fail_mem(bytes, len, NULL, clf_onnx_params(.inputs = &bad, .ninputs = 1), CLF_ERR_SHAPE,
                    PARTS("input 'x' (x.npy) has shape [2, 5] but the graph declares float[N, 4]"));
    bad = (clf_onnx_input_shape){.name = "q", .shape = {2}, .rank = 1};
    expect_fail_mem(bytes, len, NULL, clf_onnx_params(.inputs = &bad, .ninputs = 1), CLF_ERR_NOT_FOUND,
                    PARTS("no input named 'q' (its inputs: x, k)"));
    bad = (clf_onnx_input_shape){.name = "k", .shape = {3}, .dtype = CLF_F32, .rank = 1};
    expect_fail_mem(bytes, len, NULL, clf_onnx_params(.inputs = &bad, .ninputs = 1), CLF_ERR_DTYPE,
                    PARTS("input 'k' (as given) holds float but the graph declares int32[3]"));
    expect_fail_mem(bytes, len, NULL, NULL, CLF_ERR_SHAPE, PARTS("dimension 'N' of input 'x' has no size"));
    expect_fail_mem(bytes, len, NULL,
                    clf_onnx_params(.dim_names = (const char *const[]){"N", "N"},
                                    .dim_values = (const int64_t[]){2, 3}, .ndims = 2),
                    CLF_ERR_INVALID_ARGUMENT, PARTS("dimension N is given twice"));
    expect_fail_mem(bytes, len, NULL, clf_onnx_params(.ndims = 1), CLF_ERR_INVALID_ARGUMENT, PARTS("ndims is 1"));
    pool_free();

    /* Not models at all. */
    expect_fail_mem("", 0, NULL, NULL, CLF_ERR_MODEL, PARTS("<memory>: the model is empty"));
    static const unsigned char junk[] = {0xff, 0xff, 0xff, 0xff, 0x07, 0x12};
    expect_fail_mem(junk, sizeof junk, NULL, NULL, CLF_ERR_MODEL, PARTS("protobuf-c cannot decode"));
    clf_onnx_model *m = (clf_onnx_model *)1;
    ck_assert_int_eq(clf_onnx_load_memory(NULL, 4, NULL, NULL, &m), CLF_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(m);
    ck_assert_int_eq(clf_onnx_load_memory(junk, 4, NULL, NULL, NULL), CLF_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(clf_onnx_load_file(NULL, NULL, &m), CLF_ERR_INVALID_ARGUMENT);
    expect_fail_path("/nonexistent/model.onnx", NULL, CLF_ERR_IO, PARTS("cannot open"));
    expect_fail_path("/tmp", NULL, CLF_ERR_IO, PARTS("is a folder"));
}
END_TEST

/* protobuf-c recurses per nested message: graphs nested in attributes
 * 20000 deep are refused before it runs, not a stack overflow. */
static size_t put_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    do {
        p[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return n;
}

START_TEST(deep_nesting_is_refused)
{
    const int levels = 20000;
    size_t cap = (size_t)levels * 16 + 64;
    uint8_t *a = malloc(cap), *b = malloc(cap);
    size_t len = 0;
    /* From the inside out: GraphProto{node(1): NodeProto{attribute(5):
     * AttributeProto{g(6): GraphProto ...}}}, then ModelProto{graph(7)}. */
    for (int l = 0; l < levels; l++) {
        static const uint8_t tags[] = {0x32 /* AttributeProto.g */, 0x2a /* NodeProto.attribute */,
                                       0x0a /* GraphProto.node */};
        for (int t = 0; t < 3; t++) {
            size_t n = 0;
            b[n++] = tags[t];
            n += put_varint(b + n, len);
            memcpy(b + n, a, len);
            len += n;
            uint8_t *x = a;
            a = b;
            b = x;
        }
    }
    size_t n = 0;
    b[n++] = 0x08; /* ir_version 8 */
    b[n++] = 0x08;
    b[n++] = 0x3a; /* graph */
    n += put_varint(b + n, len);
    memcpy(b + n, a, len);
    n += len;
    expect_fail_mem(b, n, NULL, NULL, CLF_ERR_MODEL, PARTS("nest more than"));
    free(a);
    free(b);
}
END_TEST

/* Every proper prefix of a model fails cleanly (the CI runs this under
 * ASan: no crash, no leak); so do flipped bytes and garbage, or they load. */
START_TEST(truncated_and_corrupt_bytes_fail_cleanly)
{
    mdl M;
    size_t len;
    build_basic(&M, TYPED, NULL);
    M.nodes[4]->attribute[0]->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    const uint8_t *full = pack(&M, &len);
    uint8_t *bytes = malloc(len);
    for (size_t cut = 0; cut < len; cut++) { /* a buffer of exactly cut bytes, for ASan */
        uint8_t *exact = malloc(cut ? cut : 1);
        memcpy(exact, full, cut);
        clf_onnx_model *m = (clf_onnx_model *)1;
        msg[0] = 0;
        clf_status st = clf_onnx_load_memory(exact, cut, NULL,
                                             clf_onnx_params(.dim_names = (const char *const[]){"N"},
                                                             .dim_values = (const int64_t[]){2}, .ndims = 1,
                                                             .format = CLF_ONNX_FORMAT_BINARY, .message = msg,
                                                             .message_cap = sizeof msg),
                                             &m);
        ck_assert_msg(st == CLF_ERR_MODEL, "cut at %zu of %zu: %s (%s)", cut, len, clf_status_name(st), msg);
        ck_assert_ptr_null(m);
        ck_assert_msg(!strncmp(msg, "<memory>: ", 10), "cut at %zu: %s", cut, msg);
        free(exact);
    }
    clf_onnx_model *m = load_mem(full, len, NULL, &N_IS_2);
    clf_onnx_model_destroy(&m);
    /* Each byte flipped in turn, three ways. */
    size_t loaded = 0, refused = 0;
    for (size_t i = 0; i < len; i++)
        for (int k = 0; k < 3; k++) {
            static const uint8_t masks[] = {0x01, 0x80, 0xff};
            memcpy(bytes, full, len);
            bytes[i] ^= masks[k];
            m = NULL;
            clf_status st = clf_onnx_load_memory(bytes, len, NULL,
                                                 clf_onnx_params(.dim_names = (const char *const[]){"N"},
                                                                 .dim_values = (const int64_t[]){2}, .ndims = 1,
                                                                 .message = msg, .message_cap = sizeof msg),
                                                 &m);
            if (st == CLF_OK) {
                loaded++;
                clf_onnx_model_destroy(&m);
            } else {
                refused++;
                ck_assert_ptr_null(m);
                ck_assert_msg(msg[0], "flip %zu/%d: %s without a message", i, k, clf_status_name(st));
            }
        }
    ck_assert_uint_gt(refused, 0);
    fprintf(stderr, "flipped bytes: %zu loaded, %zu refused\n", loaded, refused);
    /* Random garbage of every length up to 600. */
    for (size_t n = 1; n < 600; n++) {
        uint8_t *g = malloc(n);
        for (size_t i = 0; i < n; i++)
            g[i] = (uint8_t)clf_test_rand();
        m = NULL;
        clf_status st = clf_onnx_load_memory(g, n, NULL, clf_onnx_params(.message = msg, .message_cap = sizeof msg), &m);
        ck_assert_msg(st != CLF_OK || m != NULL, "garbage of %zu bytes", n);
        clf_onnx_model_destroy(&m);
        free(g);
    }
    free(bytes);
    pool_free();
}
END_TEST

/* ---- On the device ------------------------------------------------------------------- */

/* A binary model with external weights compiled and run on PoCL matches
 * the reference interpreter. */
START_TEST(binary_model_runs_on_the_device)
{
    char path[1024];
    fixture(path, sizeof path, "onnx", "mlp_external.onnx");
    clf_onnx_model *m = load_path(path, clf_onnx_params(.dim_names = (const char *const[]){"B"},
                                                        .dim_values = (const int64_t[]){9}, .ndims = 1));
    io_set want, got;
    io_make(m, &want);
    reference(m, &want);
    io_make(m, &got);
    memcpy(got.in[0].data, want.in[0].data, 9 * 8 * sizeof(float));
    clf_context *ctx = clf_test_context();
    clf_executable *exe = NULL;
    clf_status st = clf_compile(ctx, clf_onnx_model_graph(m), NULL, &exe);
    ck_assert_msg(st == CLF_OK, "%s: %s", clf_status_name(st), clf_context_last_error(ctx));
    st = clf_run_host(exe, got.nin, got.in, got.nout, got.out);
    ck_assert_msg(st == CLF_OK, "%s: %s", clf_status_name(st), clf_context_last_error(ctx));
    char why[256];
    ck_assert_msg(clf_test_close(CLF_F32, got.out[0].data, want.out[0].data, got.out_n[0], 1e-5, 1e-5, why, sizeof why),
                  "%s", why);
    clf_plan_stats s;
    clf_executable_stats(exe, &s);
    ck_assert_uint_le(s.kernels, 2); /* relu(x @ w1 + b1) and the Gemm with its bias */
    io_free(&want);
    io_free(&got);
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
    clf_onnx_model_destroy(&m);
}
END_TEST

/* ---- Memory ---------------------------------------------------------------------------- */

/* An allocator that counts live bytes (and their peak) and can fail its
 * Nth call. */
static size_t live, peak;
static unsigned long calls, fail_at;

static void *c_malloc(size_t n)
{
    if (fail_at && ++calls == fail_at)
        return NULL;
    size_t *p = malloc(n + 16);
    if (!p)
        return NULL;
    p[0] = n;
    live += n;
    peak = live > peak ? live : peak;
    return (char *)p + 16;
}

static void c_free(void *q)
{
    size_t *p = (size_t *)((char *)q - 16);
    live -= p[0];
    free(p);
}

static void *c_realloc(void *q, size_t n)
{
    void *r = c_malloc(n);
    if (!r)
        return NULL;
    size_t old = ((size_t *)((char *)q - 16))[0];
    memcpy(r, q, old < n ? old : n);
    c_free(q);
    return r;
}

/* y = x + w with w a 4 MB f32 initializer: loading costs the graph's copy
 * of w, plus protobuf-c's when w is inside the model, never a widened one
 * (w as doubles would be 8 MB more). */
START_TEST(weights_are_not_widened)
{
    enum { ROWS = 1024, COLS = 1024 };
    const size_t bytes = (size_t)ROWS * COLS * sizeof(float);
    float *w = malloc(bytes);
    for (size_t i = 0; i < (size_t)ROWS * COLS; i++)
        w[i] = (float)i * 0.5f;
    char dir[256], path[512], data[512];
    temp_dir(dir, sizeof dir);
    snprintf(data, sizeof data, "%s/w.bin", dir);
    write_file(data, w, bytes);
    for (int external = 0; external < 2; external++) {
        mdl M;
        size_t len;
        mdl_init(&M, "big");
        static const char *const d[] = {"1024", "1024"};
        add_input(&M, vi("x", 1, 2, d));
        add_output(&M, vi("y", 1, 2, d));
        Onnx__TensorProto *t = tensor("w", 1, 2, (const int64_t[]){ROWS, COLS});
        if (external)
            set_external(t, "w.bin", NULL, NULL);
        else
            set_raw(t, w, bytes);
        add_init(&M, t);
        add_node(&M, "Add", "add", "x,w", "y");
        const uint8_t *b = pack(&M, &len);
        snprintf(path, sizeof path, "%s/big%d.onnx", dir, external);
        write_file(path, b, len);
        pool_free();

        live = peak = 0;
        fail_at = 0;
        ck_assert_int_eq(clf_set_allocator(c_malloc, c_realloc, c_free), CLF_OK);
        clf_onnx_model *m = load_path(path, NULL);
        size_t after = live;
        ck_assert_int_eq(clf_set_allocator(NULL, NULL, NULL), CLF_OK);
        fprintf(stderr, "4 MB weight %s: peak %zu bytes, %zu live after loading\n",
                external ? "in an external file" : "in raw_data", peak, after);
        ck_assert_uint_lt(after, bytes + bytes / 8);
        ck_assert_uint_lt(peak, (external ? 1 : 2) * bytes + bytes / 8);
        ck_assert_int_eq(clf_set_allocator(c_malloc, c_realloc, c_free), CLF_OK);
        clf_onnx_model_destroy(&m);
        ck_assert_uint_eq(live, 0);
        ck_assert_int_eq(clf_set_allocator(NULL, NULL, NULL), CLF_OK);
    }
    free(w);
}
END_TEST

/* Every allocation of a load failing in turn gives CLF_ERR_OUT_OF_MEMORY
 * with nothing leaked: a binary model with external data, and a text one. */
START_TEST(allocation_failures_are_reported)
{
    char dir[256], data[512], path[512], tpath[1024];
    temp_dir(dir, sizeof dir);
    snprintf(data, sizeof data, "%s/weights.bin", dir);
    write_basic_data(data, 0);
    write_external_model(dir, "weights.bin", path, sizeof path);
    fixture(tpath, sizeof tpath, "graphs", "layernorm.onnxtxt");
    const char *paths[] = {path, tpath};
    const clf_onnx_params *params[] = {&N_IS_2, clf_onnx_params(.dim_names = (const char *const[]){"B"},
                                                                  .dim_values = (const int64_t[]){2}, .ndims = 1)};
    for (int k = 0; k < 2; k++) {
        unsigned long n;
        for (n = 1;; n++) {
            calls = 0;
            fail_at = n;
            live = 0;
            ck_assert_int_eq(clf_set_allocator(c_malloc, c_realloc, c_free), CLF_OK);
            clf_onnx_model *m = (clf_onnx_model *)1;
            clf_onnx_params q = *params[k];
            q.message = msg;
            q.message_cap = sizeof msg;
            clf_status st = clf_onnx_load_file(paths[k], &q, &m);
            clf_onnx_model_destroy(&m);
            ck_assert_uint_eq(live, 0);
            ck_assert_int_eq(clf_set_allocator(NULL, NULL, NULL), CLF_OK);
            if (st == CLF_OK && calls < n)
                break;
            ck_assert_msg(st == CLF_ERR_OUT_OF_MEMORY, "%s, allocation %lu failing: %s (%s)", paths[k], n,
                          clf_status_name(st), msg);
            ck_assert_ptr_null(m);
            ck_assert_msg(strstr(msg, "out of memory"), "%s", msg);
        }
        fprintf(stderr, "%s: %lu allocations, each failed in turn\n", paths[k], n - 1);
        ck_assert_uint_gt(n, 10);
    }
    fail_at = 0;
}
END_TEST

/* ---- ONNX's own node tests (libonnx-testdata) -------------------------------------------- */

#define NODE_TESTS "/usr/share/libonnx-testdata/data/node"

/* Node tests whose models libclfuse reads. Not here: those that pass
 * shapes, axes or bounds as graph inputs (int64 tensors libclfuse would
 * need as constants: Reshape, Squeeze, Slice, Clip, ReduceSum-13's axes),
 * and LayerNormalization's tests, which ask for its Mean and InvStdDev
 * outputs. */

static const char *const node_tests[] = {
    "test_relu", "test_add", "test_add_bcast", "test_mul", "test_sub", "test_div", "test_exp", "test_sigmoid",
    "test_tanh", "test_abs", "test_neg", "test_erf", "test_sqrt", "test_floor", "test_ceil", "test_sign",
    "test_pow", "test_identity", "test_matmul_2d", "test_matmul_3d", "test_gemm_default_no_bias",
    "test_gemm_all_attributes", "test_softmax_axis_1", "test_softmax_default_axis", "test_transpose_default",
    "test_where_example", "test_max_example", "test_sum_example",
    "test_mean_example", "test_not_2d", "test_and2d", "test_equal", "test_less", "test_greater",
    "test_argmax_default_axis_example", "test_reduce_mean_default_axes_keepdims_example", "test_reduce_max_default_axes_keepdim_example",
};

/* A TensorProto file's values as f32, i32 or bool (int64 narrowed to i32). */
static void *read_pb(const char *path, clf_dtype *dt, size_t *n)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    static uint8_t buf[1 << 20];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, len, buf);
    ck_assert_msg(t != NULL, "%s: not a TensorProto", path);
    *n = 1;
    for (size_t d = 0; d < t->n_dims; d++)
        *n *= (size_t)t->dims[d];
    void *out = calloc(*n ? *n : 1, 8);
    const uint8_t *raw = t->has_raw_data ? t->raw_data.data : NULL;
    for (size_t i = 0; i < *n; i++) {
        switch (t->data_type) {
        case 1: *dt = CLF_F32; memcpy((float *)out + i, raw ? raw + 4 * i : (uint8_t *)&t->float_data[i], 4); break;
        case 6: *dt = CLF_I32; memcpy((int32_t *)out + i, raw ? raw + 4 * i : (uint8_t *)&t->int32_data[i], 4); break;
        case 9: *dt = CLF_BOOL; ((uint8_t *)out)[i] = raw ? raw[i] : (uint8_t)t->int32_data[i]; break;
        case 7: {
            int64_t v;
            memcpy(&v, raw ? raw + 8 * i : (uint8_t *)&t->int64_data[i], 8);
            *dt = CLF_I64;
            ((int64_t *)out)[i] = v;
            break;
        }
        default: ck_abort_msg("%s: data_type %d", path, t->data_type);
        }
    }
    onnx__tensor_proto__free_unpacked(t, NULL);
    return out;
}

START_TEST(onnx_node_tests_match)
{
    struct stat sb;
    if (stat(NODE_TESTS, &sb) != 0) {
        fprintf(stderr, "onnx_node_tests_match: %s not installed (libonnx-testdata): skipped\n", NODE_TESTS);
        return;
    }
    char path[1024];
    snprintf(path, sizeof path, NODE_TESTS "/%s/model.onnx", node_tests[_i]);
    clf_onnx_model *m = load_path(path, NULL);
    io_set io;
    io_make(m, &io);
    for (size_t i = 0; i < io.nin; i++) {
        clf_dtype dt;
        size_t n;
        snprintf(path, sizeof path, NODE_TESTS "/%s/test_data_set_0/input_%zu.pb", node_tests[_i], i);
        free(io.in[i].data);
        io.in[i].data = read_pb(path, &dt, &n);
    }
    reference(m, &io);
    for (size_t i = 0; i < io.nout; i++) {
        clf_dtype dt;
        size_t n;
        char why[256];
        snprintf(path, sizeof path, NODE_TESTS "/%s/test_data_set_0/output_%zu.pb", node_tests[_i], i);
        void *want = read_pb(path, &dt, &n);
        ck_assert_int_eq(dt, io.out_dt[i]);
        ck_assert_uint_eq(n, io.out_n[i]);
        ck_assert_msg(clf_test_close(dt, io.out[i].data, want, n, 1e-4, 1e-5, why, sizeof why), "%s: %s: %s",
                      node_tests[_i], io.out[i].name, why);
        free(want);
    }
    io_free(&io);
    clf_onnx_model_destroy(&m);
}
END_TEST

/* Found by the graph fuzzer's ONNX printer: Identity of a constant as a
 * graph output ("defined twice" when folded), and a Concat input empty
 * off the axis but not along it, which must stay. */
START_TEST(identity_of_a_constant_and_concat_of_empty_tensors)
{
    static const char t1[] = "g (float[2] x) => (float[2] y, float[] o) {\n  c = Constant <value_float = 1.0> ()\n"
                             "  y = Add(x, c)\n  o = Identity(c)\n}\n";
    static const char t2[] = "g (float[0, 2, 3] a, float[0, 2, 3] b) => (float[0, 2, 6] y) {\n"
                             "  y = Concat <axis = 2> (a, b)\n}\n";
    const char *const texts[2] = {t1, t2};
    for (int i = 0; i < 2; i++) {
        char text[512] = "";
        clf_onnx_model *m = NULL;
        clf_status st = clf_onnx_load_memory(texts[i], strlen(texts[i]), NULL,
                                             clf_onnx_params(.message = text, .message_cap = sizeof text), &m);
        ck_assert_msg(st == CLF_OK, "model %d: %s", i, text);
        clf_onnx_model_destroy(&m);
    }
}
END_TEST

/* Pow of an integer base by a constant whole exponent is exact, wrapping
 * as numpy's int64 power does: 3^17 is 129140163 (through f32 it was
 * 129140160), 100003^17 wraps; an exponent given as a float 0 gives ones. */
START_TEST(integer_pow_by_a_constant_exponent_is_exact)
{
    static const char text[] = "g (int64[5] x) => (int64[5] y, int64[5] z, int64[5] w) {\n"
                               "  e = Constant <value = int64 {17}> ()\n  y = Pow(x, e)\n"
                               "  two = Constant <value = int64 {2}> ()\n  z = Pow(x, two)\n"
                               "  zero = Constant <value = float {0}> ()\n  w = Pow(x, zero)\n}\n";
    clf_onnx_model *m = load_mem(text, strlen(text), NULL, NULL);
    clf_context *ctx = clf_test_context();
    clf_executable *exe = NULL;
    ck_assert_int_eq(clf_compile(ctx, clf_onnx_model_graph(m), NULL, &exe), CLF_OK);
    int64_t x[5] = {3, 100003, -7, 2, 0};
    int64_t got[3][5];
    memset(got, 0x5a, sizeof got);
    clf_host_binding in = {"x", x}, out[3] = {{"y", got[0]}, {"z", got[1]}, {"w", got[2]}};
    ck_assert_int_eq(clf_run_host(exe, 1, &in, 3, out), CLF_OK);
    static const int exps[3] = {17, 2, 0};
    for (int o = 0; o < 3; o++)
        for (int i = 0; i < 5; i++) {
            uint64_t want = 1;
            for (int k = 0; k < exps[o]; k++)
                want *= (uint64_t)x[i];
            ck_assert_msg(got[o][i] == (int64_t)want, "%lld^%d: got %lld, want %lld", (long long)x[i], exps[o],
                          (long long)got[o][i], (long long)(int64_t)want);
        }
    ck_assert_int_eq(got[0][0], 129140163);
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
    clf_onnx_model_destroy(&m);
}
END_TEST

/* Pow of an f16 or bf16 base is raised in f32 and rounded once to the
 * base's type: not to a whole number (found by an audit: every storage
 * float went through the integer bases' rounding, so f16 x^0.5 of 0.3
 * gave 1 and GPT-2's f16 GELU lost its x^3's fraction). */
START_TEST(storage_float_pow_keeps_fractions)
{
    static const clf_dtype dts[2] = {CLF_F16, CLF_BF16};
    static const char *const names[2] = {"float16", "bfloat16"};
    const float x[5] = {2.0f, 3.0f, 0.3f, 1.7f, 0.0f};
    for (int t = 0; t < 2; t++) {
        char text[512];
        snprintf(text, sizeof text,
                 "g (%s[5] x, float[1] e) => (%s[5] y, %s[5] z, %s[5] w) {\n"
                 "  half = Constant <value = float {0.5}> ()\n  y = Pow(x, half)\n"
                 "  three = Constant <value = int64 {3}> ()\n  z = Pow(x, three)\n"
                 "  w = Pow(x, e)\n}\n",
                 names[t], names[t], names[t], names[t]);
        clf_onnx_model *m = load_mem(text, strlen(text), NULL, NULL);
        clf_context *ctx = clf_test_context();
        for (int fused = 0; fused < 2; fused++) {
            clf_executable *exe = compile_model(ctx, m, fused);
            uint16_t xs[5], got[3][5];
            for (int i = 0; i < 5; i++)
                xs[i] = dts[t] == CLF_F16 ? clf_test_to_f16(x[i]) : clf_test_to_bf16(x[i]);
            float e = 1.5f;
            clf_host_binding in[2] = {{"x", xs}, {"e", &e}}, out[3] = {{"y", got[0]}, {"z", got[1]}, {"w", got[2]}};
            ck_assert_int_eq(clf_run_host(exe, 2, in, 3, out), CLF_OK);
            for (int o = 0; o < 3; o++)
                for (int i = 0; i < 5; i++) {
                    const float xi = dts[t] == CLF_F16 ? clf_test_from_f16(xs[i]) : clf_test_from_bf16(xs[i]);
                    const float want = powf(xi, o == 0 ? 0.5f : o == 1 ? 3.0f : 1.5f);
                    const float g = dts[t] == CLF_F16 ? clf_test_from_f16(got[o][i]) : clf_test_from_bf16(got[o][i]);
                    /* within one rounding of the storage type */
                    const float tol = (dts[t] == CLF_F16 ? 0x1p-10f : 0x1p-7f) * fabsf(want);
                    ck_assert_msg(fabsf(g - want) <= tol, "%s %s: %g ^ %s: got %g, want %g", names[t],
                                  fused ? "fused" : "unfused", xi, o == 0 ? "0.5" : o == 1 ? "3" : "1.5", g, want);
                }
            clf_executable_destroy(&exe);
        }
        clf_context_destroy(&ctx);
        clf_onnx_model_destroy(&m);
    }
}
END_TEST

/* Gelu with approximate = "tanh" (opset 20, PyTorch's
 * gelu(approximate='tanh'), which the dynamo exporter writes as it) is
 * 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), fused and not, in f32
 * and in f16 (computed in f32, rounded once); "none" stays erf's. */
START_TEST(gelu_tanh_approximation)
{
    enum { NX = 9 };
    const float x[NX] = {-6.0f, -3.0f, -1.0f, -0.25f, 0.0f, 0.5f, 1.0f, 2.5f, 7.0f};
    for (int half = 0; half < 2; half++) {
        const char *ty = half ? "float16" : "float";
        char text[512];
        snprintf(text, sizeof text,
                 "<ir_version: 9, opset_import: [\"\" : 20]>\n"
                 "g (%s[%d] x) => (%s[%d] y, %s[%d] z) {\n"
                 "  y = Gelu <approximate = \"tanh\"> (x)\n  z = Gelu <approximate = \"none\"> (x)\n}\n",
                 ty, NX, ty, NX, ty, NX);
        clf_onnx_model *m = load_mem(text, strlen(text), NULL, NULL);
        clf_context *ctx = clf_test_context();
        for (int fused = 0; fused < 2; fused++) {
            clf_executable *exe = compile_model(ctx, m, fused);
            float xf[NX], yf[NX], zf[NX];
            uint16_t xh[NX], yh[NX], zh[NX];
            for (int i = 0; i < NX; i++) {
                xh[i] = clf_test_to_f16(x[i]);
                xf[i] = x[i];
            }
            clf_host_binding in[1] = {{"x", half ? (void *)xh : (void *)xf}},
                             out[2] = {{"y", half ? (void *)yh : (void *)yf}, {"z", half ? (void *)zh : (void *)zf}};
            ck_assert_int_eq(clf_run_host(exe, 1, in, 2, out), CLF_OK);
            for (int i = 0; i < NX; i++) {
                const double v = x[i];
                const double t = 0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
                const double e = 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
                const double gy = half ? clf_test_from_f16(yh[i]) : yf[i], gz = half ? clf_test_from_f16(zh[i]) : zf[i];
                const double tol = half ? 1e-3 * fabs(t) + 1e-4 : 1e-5 * fabs(t) + 1e-6;
                ck_assert_msg(fabs(gy - t) <= tol, "%s %s: tanh gelu(%g) = %.9g, want %.9g", ty,
                              fused ? "fused" : "unfused", v, gy, t);
                ck_assert_msg(fabs(gz - e) <= (half ? 1e-3 * fabs(e) + 1e-4 : 1e-5 * fabs(e) + 1e-6),
                              "%s: erf gelu(%g) = %.9g, want %.9g", ty, v, gz, e);
            }
            /* The two differ where the check can tell them apart. */
            ck_assert(fabs((half ? clf_test_from_f16(yh[2]) : yf[2]) - (half ? clf_test_from_f16(zh[2]) : zf[2])) >
                      1e-4);
            clf_executable_destroy(&exe);
        }
        clf_context_destroy(&ctx);
        clf_onnx_model_destroy(&m);
    }
}
END_TEST

/* tests/onnx/attention_op/<name> (a .npy the fixture scripts wrote) into *a. */
static void attention_npy(const char *name, npy_array *a)
{
    char path[1024], err[256];
    fixture(path, sizeof path, "onnx/attention_op", name);
    ck_assert_msg(npy_read(path, a, err, sizeof err) == 0, "%s: %s", path, err);
}

/* ONNX's Attention op (opset 23; tests/onnx/attention_op/make_cases.py:
 * onnx's reference implementation computed the outputs): MHA, GQA with a
 * causal flag and an additive mask, 3-D MQA with a bool padding mask, a
 * past with its presents, f16 with a per-head mask, masks narrower than
 * the keys (float and bool: ONNX pads them), causal with other than one
 * new key a query (no past; a past with an additive mask and the presents;
 * a past with a bool mask: ONNX aligns on the past). Each runs fused (one
 * attention kernel; in the device's forms and in the GPU forms) and
 * unfused against the reference's outputs. */
START_TEST(attention_op_cases)
{
    enum { NCASES = 10 };
    clf_context *ctx = clf_test_context();
    for (int c = 0; c < NCASES; c++) {
        char path[1024], file[64];
        snprintf(file, sizeof file, "case%d.onnx", c);
        fixture(path, sizeof path, "onnx/attention_op", file);
        clf_onnx_model *m = load_path(path, NULL);
        const size_t nin = clf_onnx_model_input_count(m), nout = clf_onnx_model_output_count(m);
        npy_array in[8], want[4];
        clf_host_binding hin[8], hout[4];
        void *got[4];
        ck_assert(nin <= 8 && nout <= 4);
        for (size_t j = 0; j < nin; j++) {
            clf_onnx_io io;
            ck_assert_int_eq(clf_onnx_model_input(m, j, &io), CLF_OK);
            snprintf(file, sizeof file, "case%d_in%zu.npy", c, j);
            attention_npy(file, &in[j]);
            hin[j] = (clf_host_binding){io.name, in[j].data};
        }
        for (size_t j = 0; j < nout; j++) {
            clf_onnx_io io;
            ck_assert_int_eq(clf_onnx_model_output(m, j, &io), CLF_OK);
            snprintf(file, sizeof file, "case%d_out%zu.npy", c, j);
            attention_npy(file, &want[j]);
            ck_assert_int_eq(want[j].dtype, io.dtype);
            got[j] = calloc(want[j].numel ? want[j].numel : 1, clf_dtype_size(want[j].dtype));
            hout[j] = (clf_host_binding){io.name, got[j]};
        }
        /* Fused in the device's forms and in the GPU forms, then unfused. */
        static const char *const runs[] = {"fused", "fused, GPU forms", "unfused"};
        for (int run = 0; run < 3; run++) {
            const bool fused = run < 2;
            clf_executable *exe =
                compile_model_style(ctx, m, fused, run == 1 ? CLF_KERNEL_STYLE_GPU : CLF_KERNEL_STYLE_AUTO);
            if (fused) {
                size_t att = 0;
                for (size_t k = 0; k < clf_executable_kernel_count(exe); k++)
                    att += strstr(clf_executable_kernel_name(exe, k), "attention") != NULL;
                ck_assert_msg(att == 1, "case %d (%s): %zu attention kernels", c, runs[run], att);
            }
            ck_assert_int_eq(clf_run_host(exe, nin, hin, nout, hout), CLF_OK);
            for (size_t j = 0; j < nout; j++) {
                const bool half = want[j].dtype == CLF_F16;
                char diff[256];
                ck_assert_msg(clf_test_close(want[j].dtype, got[j], want[j].data, want[j].numel, half ? 4e-3 : 1e-5,
                                             half ? 2e-3 : 1e-6, diff, sizeof diff),
                              "case %d output %zu (%s): %s", c, j, runs[run], diff);
            }
            clf_executable_destroy(&exe);
        }
        for (size_t j = 0; j < nin; j++)
            npy_free(&in[j]);
        for (size_t j = 0; j < nout; j++) {
            npy_free(&want[j]);
            free(got[j]);
        }
        clf_onnx_model_destroy(&m);
    }
    clf_context_destroy(&ctx);
}
END_TEST

/* The Attention op's presents as KV caches written in place (the load's
 * kv_caches name them): case 3's past of 3 positions lies in caches of 8,
 * the op writes the 2 new ones at [3, 5) and reads the cache where it
 * lies; the output and the caches' first 5 positions are the reference's,
 * the positions past them untouched. */
START_TEST(attention_op_presents_in_place)
{
    enum { CAP = 8, HK = 2, D = 8, PAST = 3, NEW = 2 };
    char path[1024], file[64];
    fixture(path, sizeof path, "onnx/attention_op", "case3.onnx");
    const clf_onnx_kv_cache kv[2] = {{"pk", "present_key", CAP}, {"pv", "present_value", CAP}};
    clf_onnx_model *m = load_path(path, clf_onnx_params(.kv_caches = kv, .nkv_caches = 2));
    npy_array in[5], want[3];
    for (int j = 0; j < 5; j++) {
        snprintf(file, sizeof file, "case3_in%d.npy", j);
        attention_npy(file, &in[j]);
    }
    for (int j = 0; j < 3; j++) {
        snprintf(file, sizeof file, "case3_out%d.npy", j);
        attention_npy(file, &want[j]);
    }
    clf_context *ctx = clf_test_context();
    clf_executable *exe = NULL;
    ck_assert_msg(clf_compile(ctx, clf_onnx_model_graph(m), NULL, &exe) == CLF_OK, "%s",
                  clf_context_last_error(ctx));
    cl_context cl = clf_context_cl(ctx);
    cl_int e;
    cl_mem bq = clCreateBuffer(cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, in[0].numel * 4, in[0].data, &e);
    cl_mem bk = clCreateBuffer(cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, in[1].numel * 4, in[1].data, &e);
    cl_mem bv = clCreateBuffer(cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, in[2].numel * 4, in[2].data, &e);
    cl_mem by = clCreateBuffer(cl, CL_MEM_READ_WRITE, want[0].numel * 4, NULL, &e);
    cl_mem caches[2];
    float init[2][HK * CAP * D];
    for (int c = 0; c < 2; c++) {
        const float *past = in[3 + c].data;
        for (int h = 0; h < HK; h++)
            for (int p = 0; p < CAP; p++)
                for (int d = 0; d < D; d++)
                    init[c][(h * CAP + p) * D + d] = p < PAST ? past[(h * PAST + p) * D + d] : 777.0f;
        caches[c] = clCreateBuffer(cl, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof init[c], init[c], &e);
        ck_assert(caches[c]);
    }
    ck_assert(bq && bk && bv && by);
    clf_buffer_view bin[5] = {{"q", bq, 0}, {"k", bk, 0}, {"v", bv, 0}, {"pk", caches[0], 0}, {"pv", caches[1], 0}};
    clf_buffer_view bout[3] = {{"y", by, 0}, {"present_key", caches[0], 0}, {"present_value", caches[1], 0}};
    ck_assert_msg(clf_enqueue(exe, NULL, 5, bin, 3, bout, 0, NULL, NULL) == CLF_OK, "%s",
                  clf_context_last_error(ctx));
    cl_command_queue queue = clf_context_queue(ctx);
    float y[64], cache[HK * CAP * D];
    ck_assert(want[0].numel <= 64);
    ck_assert_int_eq(clEnqueueReadBuffer(queue, by, CL_TRUE, 0, want[0].numel * 4, y, 0, NULL, NULL), CL_SUCCESS);
    char diff[256];
    ck_assert_msg(clf_test_close(CLF_F32, y, want[0].data, want[0].numel, 1e-5, 1e-6, diff, sizeof diff), "y: %s",
                  diff);
    for (int c = 0; c < 2; c++) {
        ck_assert_int_eq(clEnqueueReadBuffer(queue, caches[c], CL_TRUE, 0, sizeof cache, cache, 0, NULL, NULL),
                         CL_SUCCESS);
        const float *pw = want[1 + c].data; /* [1, HK, PAST + NEW, D] */
        for (int h = 0; h < HK; h++)
            for (int p = 0; p < CAP; p++)
                for (int d = 0; d < D; d++) {
                    const float g = cache[(h * CAP + p) * D + d];
                    const float w = p < PAST + NEW ? pw[(h * (PAST + NEW) + p) * D + d] : 777.0f;
                    ck_assert_msg(fabsf(g - w) <= 1e-6f, "cache %d head %d position %d: %g, want %g", c, h, p, g, w);
                }
        clReleaseMemObject(caches[c]);
    }
    clReleaseMemObject(bq);
    clReleaseMemObject(bk);
    clReleaseMemObject(bv);
    clReleaseMemObject(by);
    for (int j = 0; j < 5; j++)
        npy_free(&in[j]);
    for (int j = 0; j < 3; j++)
        npy_free(&want[j]);
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
    clf_onnx_model_destroy(&m);
}
END_TEST

/* A block as PyTorch's dynamo exporter writes it at opset 23
 * (tests/onnx/attention_op/make_sdpa_block.py): RMSNormalization, the
 * projections, causal GQA through ONNX Attention, Gelu approximate="tanh",
 * a residual. Fused it plans to three kernels (a few more on llvmpipe) in
 * the CPU forms and in the GPU forms, the attention one of them and
 * causal; fused and unfused it gives onnxruntime's output. */
START_TEST(attention_op_exported_block)
{
    char path[1024];
    fixture(path, sizeof path, "onnx/attention_op", "sdpa_block23.onnx");
    clf_onnx_model *m = load_path(path, NULL);
    npy_array x, want;
    attention_npy("sdpa_block23_x.npy", &x);
    attention_npy("sdpa_block23_y.npy", &want);
    clf_onnx_io in_io, out_io;
    ck_assert_int_eq(clf_onnx_model_input(m, 0, &in_io), CLF_OK);
    ck_assert_int_eq(clf_onnx_model_output(m, 0, &out_io), CLF_OK);
    float *got = calloc(want.numel, sizeof *got);
    ck_assert_ptr_nonnull(got);
    clf_context *ctx = clf_test_context();
    /* Fused (the device's forms, then the GPU forms: there the q, k and v
     * products merge too, their biases added in attention's loads), then
     * unfused. */
    for (int form = 0; form < 3; form++) {
        const bool fused = form < 2;
        clf_executable *exe =
            compile_model_style(ctx, m, fused, form == 1 ? CLF_KERNEL_STYLE_GPU : CLF_KERNEL_STYLE_AUTO);
        if (fused) {
            /* (llvmpipe cuts fused chains short: SMALL_CODE_DEPTH) */
            const size_t nk = clf_executable_kernel_count(exe);
            if (ctx->quirks & CLF__QUIRK_SLOW_INLINED_CODE)
                ck_assert_uint_le(nk, 6);
            else
                ck_assert_msg(nk == 3, "form %d: %zu kernels", form, nk);
            size_t att = 0;
            for (size_t k = 0; k < nk; k++)
                if (strstr(clf_executable_kernel_name(exe, k), "attention")) {
                    att++;
                    ck_assert_ptr_nonnull(strstr(clf_executable_kernel_source(exe, k), "#define CAUSAL 1\n"));
                }
            ck_assert_uint_eq(att, 1);
        }
        clf_host_binding hin = {in_io.name, x.data}, hout = {out_io.name, got};
        ck_assert_int_eq(clf_run_host(exe, 1, &hin, 1, &hout), CLF_OK);
        char diff[256];
        ck_assert_msg(clf_test_close(CLF_F32, got, want.data, want.numel, 1e-4, 1e-5, diff, sizeof diff), "form %d: %s",
                      form, diff);
        clf_executable_destroy(&exe);
    }
    clf_context_destroy(&ctx);
    free(got);
    npy_free(&x);
    npy_free(&want);
    clf_onnx_model_destroy(&m);
}
END_TEST

/* is_causal with no query rows and three keys (new keys other than the
 * queries, so the causal mask is built as a constant, here of no
 * element): it loads, compiles and runs, an empty output. */
START_TEST(attention_op_causal_without_queries)
{
    static const char text[] = "<ir_version: 10, opset_import: [\"\" : 23]>\n"
                               "g (float[1, 2, 0, 8] q, float[1, 2, 3, 8] k, float[1, 2, 3, 8] v) => "
                               "(float[1, 2, 0, 8] y) {\n  y = Attention <is_causal = 1> (q, k, v)\n}\n";
    clf_onnx_model *m = load_mem(text, strlen(text), NULL, NULL);
    clf_context *ctx = clf_test_context();
    float kv[48] = {0};
    clf_host_binding in[3] = {{"q", NULL}, {"k", kv}, {"v", kv}}, out[1] = {{"y", NULL}};
    for (int fused = 1; fused >= 0; fused--) {
        clf_executable *exe = compile_model(ctx, m, fused);
        ck_assert_int_eq(clf_run_host(exe, 3, in, 1, out), CLF_OK);
        clf_executable_destroy(&exe);
    }
    clf_context_destroy(&ctx);
    clf_onnx_model_destroy(&m);
}
END_TEST

/* What the Attention op's import refuses is said, naming the attribute,
 * input or output; an unknown attribute stays refused as for every op. */
START_TEST(attention_op_refusals)
{
    static const struct {
        const char *node, *outs, *want;
    } cases[] = {
        {"y = Attention <softcap = 2.0> (q, k, v)", "float[1, 2, 4, 8] y", "softcap"},
        {"y, pk, pv, qk = Attention (q, k, v)", "float[1, 2, 4, 8] y, float[1, 2, 4, 8] qk", "qk_matmul_output"},
        {"y = Attention <window = 3> (q, k, v)", "float[1, 2, 4, 8] y", "window"},
        {"y = Attention (q3, k3, v3)", "float[1, 4, 16] y", "q_num_heads and kv_num_heads"},
        {"y = Attention (q, k, v, m9)", "float[1, 2, 4, 8] y", "longer than the keys"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char text[1024], why[512] = "";
        snprintf(text, sizeof text,
                 "<ir_version: 10, opset_import: [\"\" : 23]>\n"
                 "g (float[1, 2, 4, 8] q, float[1, 2, 4, 8] k, float[1, 2, 4, 8] v, float[1, 2, 2, 8] k2, "
                 "float[1, 2, 2, 8] v2, float[1, 4, 16] q3, float[1, 4, 16] k3, float[1, 4, 16] v3, float[1, 1, 4, 9] m9) "
                 "=> (%s) {\n"
                 "  %s\n}\n",
                 cases[c].outs, cases[c].node);
        clf_onnx_model *m = NULL;
        clf_status st = clf_onnx_load_memory(text, strlen(text), NULL,
                                             clf_onnx_params(.message = why, .message_cap = sizeof why), &m);
        ck_assert_msg(st != CLF_OK && strstr(why, cases[c].want), "case %zu: %s: \"%s\" should name %s", c,
                      clf_status_name(st), why, cases[c].want);
        ck_assert_ptr_null(m);
    }
}
END_TEST

/* Every input that once crashed the loader (tests/fuzz_onnx/crashes: a
 * Slice with its starts or ends omitted dereferenced NULL; a name with a
 * newline made a two-line message) is now refused with a one-line message. */
START_TEST(fuzzer_crashes_are_refused_in_one_line)
{
    static const char *const files[] = {"slice-omitted-starts.onnxtxt", "slice-omitted-starts.onnx",
                                        "slice-omitted-ends.onnxtxt", "slice-omitted-starts-fuzzed.onnx",
                                        "message-newline-in-name.onnx"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[1024], text[512] = "";
        fixture(path, sizeof path, "fuzz_onnx/crashes", files[i]);
        clf_onnx_model *m = NULL;
        clf_status st = clf_onnx_load_file(path, clf_onnx_params(.message = text, .message_cap = sizeof text,
                                                                 .dim_names = (const char *const[]){"B"},
                                                                 .dim_values = (const int64_t[]){2}, .ndims = 1),
                                           &m);
        ck_assert_msg(st != CLF_OK && m == NULL, "%s: loaded", files[i]);
        ck_assert_msg(text[0] && !strchr(text, '\n'), "%s: message '%s'", files[i], text);
    }
}
END_TEST

/* ---- float16 and bfloat16 (tests/onnx/make_models.py: mlp16, norm16, cast16) ------------------ */

/* The expected values are numpy's emulation of libclfuse's semantics (each node computes in
 * float32 and rounds its value to float16 or bfloat16, to nearest even; LayerNormalization and
 * Softmax round once), in tests/onnx/half/MODEL.{in,out}.NAME.npy: '<f2' for float16, '<u2'
 * bfloat16 bits, '<f4' float. */

typedef struct npy16 {
    char descr[4];
    int rank;
    int64_t shape[CLF_MAX_RANK];
    size_t n;
    void *data;
} npy16;

/* tests/onnx/half/NAME: a version 1.0 .npy file in C order. */
static void npy16_read(const char *name, npy16 *a)
{
    char path[1024], hdr[512];
    unsigned char pre[10];
    fixture(path, sizeof path, "onnx/half", name);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    ck_assert_uint_eq(fread(pre, 1, sizeof pre, f), sizeof pre);
    ck_assert_msg(!memcmp(pre, "\x93NUMPY", 6) && pre[6] == 1, "%s: not a version 1.0 .npy file", path);
    size_t len = pre[8] | (size_t)pre[9] << 8;
    ck_assert_uint_lt(len, sizeof hdr);
    ck_assert_uint_eq(fread(hdr, 1, len, f), len);
    hdr[len] = 0;
    memset(a, 0, sizeof *a);
    const char *d = strstr(hdr, "'descr': '"), *s = strstr(hdr, "'shape': (");
    ck_assert_msg(d && s && strstr(hdr, "'fortran_order': False"), "%s: header %s", path, hdr);
    memcpy(a->descr, d + strlen("'descr': '"), 3);
    ck_assert_msg(!strcmp(a->descr, "<f2") || !strcmp(a->descr, "<u2") || !strcmp(a->descr, "<f4"), "%s: %s",
                  path, a->descr);
    a->n = 1;
    for (s += strlen("'shape': ("); *s != ')';) {
        char *e;
        long long v = strtoll(s, &e, 10);
        ck_assert_msg(e != s && a->rank < CLF_MAX_RANK, "%s: shape in %s", path, hdr);
        a->shape[a->rank++] = v;
        a->n *= (size_t)v;
        for (s = e; *s == ',' || *s == ' ';)
            s++;
    }
    size_t es = (size_t)(a->descr[2] - '0');
    a->data = calloc(a->n ? a->n : 1, es);
    ck_assert_uint_eq(fread(a->data, es, a->n, f), a->n);
    fclose(f);
}

/* The dtype a .npy file of tests/onnx/half holds. */
static clf_dtype npy16_dtype(const npy16 *a)
{
    return !strcmp(a->descr, "<f2") ? CLF_F16 : !strcmp(a->descr, "<u2") ? CLF_BF16 : CLF_F32;
}

/* IEEE binary16 and bfloat16 bits as doubles, written here, not the library's. */
static double f16_value(uint16_t h)
{
    int e = (h >> 10) & 0x1f, f = h & 0x3ff;
    double v = e == 31 ? (f ? NAN : INFINITY) : e ? ldexp(1024 + f, e - 25) : ldexp(f, -24);
    return h & 0x8000 ? -v : v;
}

static double bf16_value(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Bits of a float16 or bfloat16 as integers in the order of their values (+0 and -0 both 0), so
 * that a difference counts units in the last place. */
static long ord16(uint16_t h) { return h & 0x8000 ? -(long)(h & 0x7fff) : (long)h; }

/* n elements of dt, got against want: NaN where want is NaN, infinities exactly, other values
 * within ulps units in the last place of dt or atol (for float32: equal or within atol). */
static void expect_close16(const char *what, clf_dtype dt, const void *got, const void *want, size_t n, long ulps,
                           double atol)
{
    for (size_t i = 0; i < n; i++) {
        double g, w;
        long d = 0;
        uint16_t gb = 0, wb = 0;
        if (dt == CLF_F32) {
            float gf, wf;
            memcpy(&gf, (const float *)got + i, 4);
            memcpy(&wf, (const float *)want + i, 4);
            g = gf;
            w = wf;
        } else {
            gb = ((const uint16_t *)got)[i];
            wb = ((const uint16_t *)want)[i];
            g = dt == CLF_F16 ? f16_value(gb) : bf16_value(gb);
            w = dt == CLF_F16 ? f16_value(wb) : bf16_value(wb);
            d = labs(ord16(gb) - ord16(wb));
        }
        if (isnan(w)) {
            ck_assert_msg(isnan(g), "%s[%zu]: got %.9g (0x%04x), want NaN", what, i, g, gb);
            continue;
        }
        int ok = isinf(w) ? g == w : g == w || (dt != CLF_F32 && d <= ulps) || fabs(g - w) <= atol;
        ck_assert_msg(ok, "%s[%zu]: got %.9g (0x%04x), want %.9g (0x%04x): %ld %s ulps apart (%ld allowed, atol %g)",
                      what, i, g, gb, w, wb, d, dt == CLF_F16 ? "float16" : "bfloat16", ulps, atol);
    }
}

/* How closely an output must match: ulps of its dtype, or atol. */
typedef struct tol16 {
    const char *name;
    long ulps;
    double atol;
} tol16;

typedef struct run16 {
    size_t nin, nout;
    clf_host_binding in[16], out[16];
    npy16 in_npy[16], want[16];
    clf_dtype out_dt[16];
} run16;

/* m's inputs from tests/onnx/half/DATA.in.NAME.npy, buffers for its outputs and their expected
 * values from DATA.out.NAME.npy; each file's dtype and size must be the model's. */
static void run16_make(clf_onnx_model *m, const char *data, run16 *r)
{
    char file[256];
    memset(r, 0, sizeof *r);
    r->nin = clf_onnx_model_input_count(m);
    r->nout = clf_onnx_model_output_count(m);
    ck_assert_uint_le(r->nin, 16);
    ck_assert_uint_le(r->nout, 16);
    for (size_t i = 0; i < r->nin; i++) {
        clf_onnx_io d;
        ck_assert_int_eq(clf_onnx_model_input(m, i, &d), CLF_OK);
        snprintf(file, sizeof file, "%s.in.%s.npy", data, d.name);
        npy16_read(file, &r->in_npy[i]);
        ck_assert_msg(npy16_dtype(&r->in_npy[i]) == d.dtype, "%s: %s, the input is %s", file, r->in_npy[i].descr,
                      clf_dtype_name(d.dtype));
        ck_assert_uint_eq(r->in_npy[i].n, numel(d.graph_rank, d.shape));
        r->in[i] = (clf_host_binding){d.name, r->in_npy[i].data};
    }
    for (size_t i = 0; i < r->nout; i++) {
        clf_onnx_io d;
        ck_assert_int_eq(clf_onnx_model_output(m, i, &d), CLF_OK);
        snprintf(file, sizeof file, "%s.out.%s.npy", data, d.name);
        npy16_read(file, &r->want[i]);
        ck_assert_msg(npy16_dtype(&r->want[i]) == d.dtype, "%s: %s, the output is %s", file, r->want[i].descr,
                      clf_dtype_name(d.dtype));
        ck_assert_uint_eq(r->want[i].n, numel(d.graph_rank, d.shape));
        r->out_dt[i] = d.dtype;
        ck_assert_uint_eq(clf_dtype_size(d.dtype), d.dtype == CLF_F32 ? 4 : 2);
        r->out[i] = (clf_host_binding){d.name, calloc(r->want[i].n ? r->want[i].n : 1, clf_dtype_size(d.dtype))};
    }
}

static void run16_free(run16 *r)
{
    for (size_t i = 0; i < r->nin; i++)
        free(r->in_npy[i].data);
    for (size_t i = 0; i < r->nout; i++) {
        free(r->want[i].data);
        free(r->out[i].data);
    }
}

static void run16_check(const run16 *r, const char *how, const tol16 *tols, size_t ntols)
{
    for (size_t i = 0; i < r->nout; i++) {
        long ulps = 0;
        double atol = 0;
        for (size_t t = 0; t < ntols; t++)
            if (!strcmp(tols[t].name, r->out[i].name)) {
                ulps = tols[t].ulps;
                atol = tols[t].atol;
            }
        char what[128];
        snprintf(what, sizeof what, "%s: %s", how, r->out[i].name);
        expect_close16(what, r->out_dt[i], r->out[i].data, r->want[i].data, r->want[i].n, ulps, atol);
    }
}

/* tests/onnx/MODEL.onnx (B = 3 where it has that dimension) on DATA's inputs, by the reference
 * interpreter and on the device fused and unfused, against DATA's expected outputs within tols
 * (outputs not named there: exactly). */
static void check_half_model(const char *model, const char *data, const tol16 *tols, size_t ntols)
{
    char path[1024];
    fixture(path, sizeof path, "onnx", model);
    clf_onnx_model *m = load_path(path, clf_onnx_params(.dim_names = (const char *const[]){"B"},
                                                        .dim_values = (const int64_t[]){3}, .ndims = 1));
    run16 r;
    run16_make(m, data, &r);
    char why[512] = "", how[128];
    clf_status st = clf_reference_run(clf_onnx_model_graph(m), r.nin, r.in, r.nout, r.out, why, sizeof why);
    ck_assert_msg(st == CLF_OK, "%s: reference: %s: %s", model, clf_status_name(st), why);
    snprintf(how, sizeof how, "%s, reference", model);
    run16_check(&r, how, tols, ntols);
    clf_context *ctx = clf_test_context();
    for (int unfused = 0; unfused < 2; unfused++) {
        for (size_t i = 0; i < r.nout; i++)
            memset(r.out[i].data, 0xff, r.want[i].n * clf_dtype_size(r.out_dt[i]));
        clf_executable *exe = NULL;
        st = clf_compile(ctx, clf_onnx_model_graph(m), clf_compile_params(.disable_fusion = unfused), &exe);
        ck_assert_msg(st == CLF_OK, "%s: compile: %s: %s", model, clf_status_name(st), clf_context_last_error(ctx));
        st = clf_run_host(exe, r.nin, r.in, r.nout, r.out);
        ck_assert_msg(st == CLF_OK, "%s: run: %s: %s", model, clf_status_name(st), clf_context_last_error(ctx));
        snprintf(how, sizeof how, "%s, device%s", model, unfused ? ", unfused" : "");
        run16_check(&r, how, tols, ntols);
        clf_executable_destroy(&exe);
    }
    clf_context_destroy(&ctx);
    run16_free(&r);
    clf_onnx_model_destroy(&m);
}

static void expect_io(clf_onnx_model *m, int output, size_t i, const char *name, clf_dtype dt, int elem,
                      const char *onnx_dtype)
{
    clf_onnx_io d;
    ck_assert_int_eq(output ? clf_onnx_model_output(m, i, &d) : clf_onnx_model_input(m, i, &d), CLF_OK);
    ck_assert_str_eq(d.name, name);
    ck_assert_msg(d.dtype == dt, "%s '%s': dtype %s, want %s", output ? "output" : "input", name,
                  clf_dtype_name(d.dtype) ? clf_dtype_name(d.dtype) : "?", clf_dtype_name(dt));
    ck_assert_int_eq(d.onnx_elem_type, elem);
    ck_assert_str_eq(d.onnx_dtype, onnx_dtype);
    clf_dtype gd;
    ck_assert_int_eq(clf_tensor_dtype(clf_onnx_model_graph(m), d.tensor, &gd), CLF_OK);
    ck_assert_int_eq(gd, dt);
}

/* A value (an initializer) of m is a graph tensor of dtype dt. */
static void expect_value_dtype(clf_onnx_model *m, const char *name, clf_dtype dt)
{
    clf_onnx_value v;
    ck_assert_int_eq(clf_onnx_model_find_value(m, name, &v), CLF_OK);
    ck_assert_msg(clf_tensor_valid(v.tensor), "'%s' has no graph tensor", name);
    clf_dtype got;
    ck_assert_int_eq(clf_tensor_dtype(clf_onnx_model_graph(m), v.tensor, &got), CLF_OK);
    ck_assert_msg(got == dt, "'%s' is %s in the graph, want %s", name, clf_dtype_name(got) ? clf_dtype_name(got) : "?",
                  clf_dtype_name(dt));
}

/* The dtypes' names and sizes; the models' inputs, outputs and initializers declared float16 and
 * bfloat16 are CLF_F16 and CLF_BF16 in the graph (weights stay 2 bytes, not widened). */
START_TEST(half_models_declare_f16_and_bf16)
{
    ck_assert_str_eq(clf_dtype_name(CLF_F16), "f16");
    ck_assert_str_eq(clf_dtype_name(CLF_BF16), "bf16");
    ck_assert_uint_eq(clf_dtype_size(CLF_F16), 2);
    ck_assert_uint_eq(clf_dtype_size(CLF_BF16), 2);
    char path[1024];
    const clf_onnx_params *b3 = clf_onnx_params(.dim_names = (const char *const[]){"B"},
                                                 .dim_values = (const int64_t[]){3}, .ndims = 1);
    static const char *const mlps[] = {"mlp16.onnx", "mlp16_int32.onnx"};
    for (int k = 0; k < 2; k++) {
        fixture(path, sizeof path, "onnx", mlps[k]);
        clf_onnx_model *m = load_path(path, b3);
        ck_assert_uint_eq(clf_onnx_model_input_count(m), 1);
        ck_assert_uint_eq(clf_onnx_model_output_count(m), 2);
        expect_io(m, 0, 0, "x", CLF_F16, 10, "float16");
        expect_io(m, 1, 0, "h", CLF_F16, 10, "float16");
        expect_io(m, 1, 1, "y", CLF_F16, 10, "float16");
        clf_onnx_io d;
        clf_onnx_model_input(m, 0, &d);
        ck_assert_int_eq(d.graph_rank, 2);
        ck_assert_int_eq(d.shape[0], 3);
        ck_assert_str_eq(d.dim_params[0], "B");
        expect_value_dtype(m, "w1", CLF_F16);
        expect_value_dtype(m, "w2", CLF_F16);
        clf_onnx_model_destroy(&m);
    }
    fixture(path, sizeof path, "onnx", "norm16.onnx");
    clf_onnx_model *m = load_path(path, NULL);
    expect_io(m, 0, 0, "x", CLF_F16, 10, "float16");
    expect_io(m, 1, 0, "ln", CLF_F16, 10, "float16");
    expect_io(m, 1, 1, "sm", CLF_F16, 10, "float16");
    clf_onnx_model_destroy(&m);
    fixture(path, sizeof path, "onnx", "cast16.onnx");
    m = load_path(path, NULL);
    expect_io(m, 0, 0, "x", CLF_F32, 1, "float");
    expect_io(m, 0, 1, "b", CLF_BF16, 16, "bfloat16");
    static const struct {
        const char *name;
        clf_dtype dt;
    } outs[] = {{"xh", CLF_F16},  {"xb", CLF_BF16},   {"xhf", CLF_F32},   {"xbf", CLF_F32},
                {"zb", CLF_BF16}, {"cl16", CLF_F16},  {"clb", CLF_BF16},  {"wbx", CLF_F32},
                {"whbx", CLF_BF16}, {"bm", CLF_BF16}, {"bf", CLF_F32},    {"bh", CLF_F16}};
    ck_assert_uint_eq(clf_onnx_model_output_count(m), sizeof outs / sizeof outs[0]);
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++)
        expect_io(m, 1, i, outs[i].name, outs[i].dt, outs[i].dt == CLF_F16 ? 10 : outs[i].dt == CLF_BF16 ? 16 : 1,
                  outs[i].dt == CLF_F16 ? "float16" : outs[i].dt == CLF_BF16 ? "bfloat16" : "float");
    expect_value_dtype(m, "wb", CLF_BF16);
    expect_value_dtype(m, "wr", CLF_BF16);
    clf_onnx_model_destroy(&m);
}
END_TEST

/* MatMul, Add, a GELU spelled out and Relu on float16: h = x @ w1 + b1 is exact (quarters), so
 * bit for bit; y within 2 float16 ulps or 2^-8 (one ulp of Erf or of a float32 sum's rounding,
 * carried through the second MatMul). The weights in raw_data and in int32_data (float16 bits,
 * one per entry) give the same results. */
START_TEST(f16_mlp_matches_numpy)
{
    static const tol16 tols[] = {{"h", 0, 0}, {"y", 2, 1.0 / 256}};
    check_half_model("mlp16.onnx", "mlp16", tols, 2);
    check_half_model("mlp16_int32.onnx", "mlp16", tols, 2);
}
END_TEST

/* LayerNormalization and Softmax on float16 compute in float32 and round once: rows near the
 * float16 maximum neither overflow nor become NaN; within 1 ulp, and exactly where the math is
 * (a row of 65504s: ln = bias, sm = 1/16). */
START_TEST(f16_layer_norm_and_softmax_near_the_max)
{
    static const tol16 tols[] = {{"ln", 1, 0}, {"sm", 1, 0}};
    check_half_model("norm16.onnx", "norm16", tols, 2);
    /* Row 3 exactly, on the reference interpreter. */
    char path[1024];
    fixture(path, sizeof path, "onnx", "norm16.onnx");
    clf_onnx_model *m = load_path(path, NULL);
    run16 r;
    run16_make(m, "norm16", &r);
    char why[512] = "";
    ck_assert_int_eq(clf_reference_run(clf_onnx_model_graph(m), r.nin, r.in, r.nout, r.out, why, sizeof why), CLF_OK);
    for (int k = 0; k < 16; k++)
        ck_assert_uint_eq(((uint16_t *)r.out[1].data)[48 + k], 0x2c00); /* 0.0625 */
    expect_close16("norm16 ln row 3", CLF_F16, (uint16_t *)r.out[0].data + 48, (uint16_t *)r.want[0].data + 48, 16, 0, 0);
    run16_free(&r);
    clf_onnx_model_destroy(&m);
}
END_TEST

/* Cast and CastLike between float, float16 and bfloat16, Mul and Add on bfloat16, casts of
 * initializers: every conversion rounds to nearest even (2049 -> 2048, 2051 -> 2052 in float16;
 * 1 + 2^-8 -> 1 and 2052 -> 2048 in bfloat16), overflows to infinity (65520, -70000 in float16;
 * 1e5 from bfloat16 to float16), keeps -0, subnormals and NaN; bit for bit. */
START_TEST(f16_bf16_casts_round_to_nearest_even)
{
    check_half_model("cast16.onnx", "cast16", NULL, 0);
}
END_TEST

/* float16 and bfloat16 literals of the text syntax round to nearest even (2049 -> 2048,
 * 65520 -> inf, 3e-8 -> the smallest subnormal; 1 + 2^-8 -> 1, 1 + 3 * 2^-8 -> 1 + 2^-6), keep
 * -0, and multiply by ones unchanged, on the reference interpreter and on the device. */
START_TEST(text_f16_and_bf16_literals_round_to_nearest_even)
{
    static const char text[] =
        "<ir_version: 8, opset_import: [\"\" : 17]>\n"
        "g (float16[6] a, bfloat16[4] b) => (float16[6] y, bfloat16[4] z)\n"
        "  <float16[6] w = {1.5, 2049, 65520, -0.0, 3e-8, 65504},\n"
        "   bfloat16[4] v = {1.00390625, 1.01171875, 3.0e38, -2.5}> {\n"
        "  y = Mul(a, w)\n  z = Mul(b, v)\n}\n";
    static const uint16_t want_y[6] = {0x3e00, 0x6800, 0x7c00, 0x8000, 0x0001, 0x7bff};
    static const uint16_t want_z[4] = {0x3f80, 0x3f82, 0x7f62, 0xc020};
    uint16_t a[6], b[4], y[6], z[4];
    for (int i = 0; i < 6; i++)
        a[i] = 0x3c00; /* 1 */
    for (int i = 0; i < 4; i++)
        b[i] = 0x3f80; /* 1 */
    clf_onnx_model *m = load_mem(text, strlen(text), NULL, NULL);
    expect_io(m, 0, 0, "a", CLF_F16, 10, "float16");
    expect_io(m, 0, 1, "b", CLF_BF16, 16, "bfloat16");
    expect_io(m, 1, 0, "y", CLF_F16, 10, "float16");
    expect_io(m, 1, 1, "z", CLF_BF16, 16, "bfloat16");
    clf_host_binding in[] = {{"a", a}, {"b", b}}, out[] = {{"y", y}, {"z", z}};
    char why[512] = "";
    memset(y, 0xff, sizeof y);
    memset(z, 0xff, sizeof z);
    clf_status st = clf_reference_run(clf_onnx_model_graph(m), 2, in, 2, out, why, sizeof why);
    ck_assert_msg(st == CLF_OK, "reference: %s: %s", clf_status_name(st), why);
    expect_close16("reference: y", CLF_F16, y, want_y, 6, 0, 0);
    expect_close16("reference: z", CLF_BF16, z, want_z, 4, 0, 0);
    ck_assert_uint_eq(y[3], 0x8000); /* -0, not +0 */
    clf_context *ctx = clf_test_context();
    clf_executable *exe = NULL;
    st = clf_compile(ctx, clf_onnx_model_graph(m), NULL, &exe);
    ck_assert_msg(st == CLF_OK, "compile: %s: %s", clf_status_name(st), clf_context_last_error(ctx));
    memset(y, 0xff, sizeof y);
    memset(z, 0xff, sizeof z);
    st = clf_run_host(exe, 2, in, 2, out);
    ck_assert_msg(st == CLF_OK, "run: %s: %s", clf_status_name(st), clf_context_last_error(ctx));
    expect_close16("device: y", CLF_F16, y, want_y, 6, 0, 0);
    expect_close16("device: z", CLF_BF16, z, want_z, 4, 0, 0);
    ck_assert_uint_eq(y[3], 0x8000);
    clf_executable_destroy(&exe);
    clf_context_destroy(&ctx);
    clf_onnx_model_destroy(&m);
}
END_TEST

/* Every node's value is rounded to its float16 or bfloat16 type, also inside a fused kernel, after a
 * MatMul and after a reduction: (v + 1024) - 1024 in float16 is v rounded to an integer (0.3 -> 0,
 * 0.7 -> 1), (v + 256) - 256 in bfloat16 to an even integer; kept in float32 between nodes, it would
 * be v. Exact, so bit for bit; fused and unfused on the device and on the reference interpreter. */
START_TEST(f16_bf16_every_node_rounds)
{
    static const char text[] =
        "<ir_version: 8, opset_import: [\"\" : 17]>\n"
        "g (float16[4] x, bfloat16[4] b, float16[2, 2] p) => (float16[4] y, bfloat16[4] z, float16[2, 2] q,"
        " float16[2] r)\n"
        "  <float16[1] c = {1024}, bfloat16[1] d = {256}, float16[2, 2] eye = {1, 0, 0, 1}, int64[1] ax = {1}> {\n"
        "  t = Add(x, c)\n  y = Sub(t, c)\n"
        "  u = Add(b, d)\n  z = Sub(u, d)\n"
        "  mm = MatMul(p, eye)\n  mc = Add(mm, c)\n  q = Sub(mc, c)\n"
        "  s = ReduceSum <keepdims = 0> (p, ax)\n  sc = Add(s, c)\n  r = Sub(sc, c)\n}\n";
    /* x and p: 0.3, 0.7, -0.2, 0.25 in float16; b: 0.3, 1.2, -0.2, 3 in bfloat16 */
    uint16_t x[4] = {0x34cd, 0x399a, 0xb266, 0x3400}, b[4] = {0x3e9a, 0x3f9a, 0xbe4d, 0x4040};
    uint16_t p[4] = {0x34cd, 0x399a, 0xb266, 0x3400};
    static const uint16_t want_y[4] = {0, 0x3c00, 0, 0}, want_z[4] = {0, 0x4000, 0, 0x4080};
    static const uint16_t want_q[4] = {0, 0x3c00, 0, 0}, want_r[2] = {0x3c00, 0}; /* r: 1 and 0.05 rounded */
    uint16_t y[4], z[4], q[4], r[2];
    clf_onnx_model *m = load_mem(text, strlen(text), NULL, NULL);
    clf_host_binding in[] = {{"x", x}, {"b", b}, {"p", p}}, out[] = {{"y", y}, {"z", z}, {"q", q}, {"r", r}};
    clf_context *ctx = clf_test_context();
    for (int k = 0; k < 3; k++) {
        memset(y, 0xff, sizeof y);
        memset(z, 0xff, sizeof z);
        memset(q, 0xff, sizeof q);
        memset(r, 0xff, sizeof r);
        const char *how = k == 0 ? "reference" : k == 1 ? "device" : "device, unfused";
        char why[512] = "";
        clf_status st;
        if (k == 0) {
            st = clf_reference_run(clf_onnx_model_graph(m), 3, in, 4, out, why, sizeof why);
            ck_assert_msg(st == CLF_OK, "reference: %s: %s", clf_status_name(st), why);
        } else {
            clf_executable *exe = compile_model(ctx, m, k != 2);
            st = clf_run_host(exe, 3, in, 4, out);
            ck_assert_msg(st == CLF_OK, "run: %s: %s", clf_status_name(st), clf_context_last_error(ctx));
            clf_executable_destroy(&exe);
        }
        char what[64];
        snprintf(what, sizeof what, "%s: y", how);
        expect_close16(what, CLF_F16, y, want_y, 4, 0, 0);
        snprintf(what, sizeof what, "%s: z", how);
        expect_close16(what, CLF_BF16, z, want_z, 4, 0, 0);
        snprintf(what, sizeof what, "%s: q", how);
        expect_close16(what, CLF_F16, q, want_q, 4, 0, 0);
        snprintf(what, sizeof what, "%s: r", how);
        expect_close16(what, CLF_F16, r, want_r, 2, 0, 0);
    }
    clf_context_destroy(&ctx);
    clf_onnx_model_destroy(&m);
}
END_TEST

/* One ONNX node is one value, rounded once to float16 even where libclfuse builds it from
 * several graph ops: Gemm (the product is not rounded before C is added), a variadic Sum,
 * ReduceL2 (the sum of squares is not rounded, so a norm over 256 is not infinite), and Mean of
 * two float16 inputs (which must load). a = [1024, 300], b = [0.3, 0.3], c = [-1024, -300];
 * Gemm: [1024, 0.3] @ [1, 1]^T + (-1024). Exact in float32, so bit for bit; onnxruntime 1.32.0's
 * CPU provider gives these bits too. */
static const struct {
    const char *name, *text;
    size_t n;
    uint16_t want[2];
} once16[] = {
    {"Gemm", "g (float16[1, 2] p, float16[2, 1] w, float16[1, 1] d) => (float16[1, 1] y) {\n  y = Gemm(p, w, d)\n}\n",
     1, {0x34cd}},
    {"Sum", "g (float16[2] a, float16[2] b, float16[2] c) => (float16[2] y) {\n  y = Sum(a, b, c)\n}\n", 2,
     {0x34cd, 0x34cd}},
    {"ReduceL2", "<ir_version: 8, opset_import: [\"\" : 18]>\ng (float16[1, 2] a) => (float16[1, 1] y) <int64[1] ax = {1}> {\n"
                 "  y = ReduceL2 <keepdims = 1> (a, ax)\n}\n", 1, {0x642b}}, /* 1067 */
    {"Mean", "g (float16[2] a, float16[2] b) => (float16[2] y) {\n  y = Mean(a, b)\n}\n", 2,
     {0x6000, 0x58b1}}, /* 512, 150.125 */
};

START_TEST(f16_single_onnx_nodes_round_once)
{
    static uint16_t a[2] = {0x6400, 0x5cb0}, b[2] = {0x34cd, 0x34cd}, c[2] = {0xe400, 0xdcb0};
    static uint16_t p[2] = {0x6400, 0x34cd}, w[2] = {0x3c00, 0x3c00}, d[1] = {0xe400};
    const char *text = once16[_i].text;
    clf_onnx_model *m = NULL;
    char text_msg[512] = "";
    clf_status st = clf_onnx_load_memory(text, strlen(text), NULL,
                                         clf_onnx_params(.message = text_msg, .message_cap = sizeof text_msg), &m);
    ck_assert_msg(st == CLF_OK, "%s on float16: %s: %s", once16[_i].name, clf_status_name(st), text_msg);
    clf_host_binding in[6];
    size_t nin = 0;
    for (size_t i = 0; i < clf_onnx_model_input_count(m); i++) {
        clf_onnx_io io;
        clf_onnx_model_input(m, i, &io);
        void *data = !strcmp(io.name, "a") ? a : !strcmp(io.name, "b") ? b : !strcmp(io.name, "c") ? c
                   : !strcmp(io.name, "p") ? p : !strcmp(io.name, "w") ? (void *)w : d;
        in[nin++] = (clf_host_binding){io.name, data};
    }
    uint16_t y[2];
    clf_host_binding out[] = {{"y", y}};
    clf_context *ctx = clf_test_context();
    for (int k = 0; k < 2; k++) {
        char what[64], why[512] = "";
        memset(y, 0xff, sizeof y);
        if (k == 0) {
            st = clf_reference_run(clf_onnx_model_graph(m), nin, in, 1, out, why, sizeof why);
            ck_assert_msg(st == CLF_OK, "reference: %s: %s", clf_status_name(st), why);
        } else {
            clf_executable *exe = NULL;
            st = clf_compile(ctx, clf_onnx_model_graph(m), NULL, &exe);
            ck_assert_msg(st == CLF_OK, "compile: %s: %s", clf_status_name(st), clf_context_last_error(ctx));
            st = clf_run_host(exe, nin, in, 1, out);
            ck_assert_msg(st == CLF_OK, "run: %s: %s", clf_status_name(st), clf_context_last_error(ctx));
            clf_executable_destroy(&exe);
        }
        snprintf(what, sizeof what, "%s, %s", once16[_i].name, k ? "device" : "reference");
        expect_close16(what, CLF_F16, y, once16[_i].want, once16[_i].n, 0, 0);
    }
    clf_context_destroy(&ctx);
    clf_onnx_model_destroy(&m);
}
END_TEST

/* Float16 and bfloat16 initializers whose data does not fit, and a float input given as float16. */
START_TEST(bad_f16_initializers_are_refused_clearly)
{
    static const char *const d4[] = {"4"};
    static const uint16_t bits[4] = {0x3c00, 0x4000, 0xc000, 0x3800}; /* 1, 2, -2, 0.5 */
    for (int elem = 10; elem <= 16; elem += 6) {
        const char *tn = elem == 10 ? "float16" : "bfloat16";
        mdl M;
        mdl_init(&M, "bad16");
        add_input(&M, vi("x", elem, 1, d4));
        add_output(&M, vi("y", elem, 1, d4));
        Onnx__TensorProto *w = tensor("w16", elem, 1, (const int64_t[]){4});
        set_raw(w, bits, 8);
        add_init(&M, w);
        add_node(&M, "Add", "add", "x,w16", "y");
        size_t len;
        const uint8_t *bytes = pack(&M, &len);
        clf_onnx_model *m = load_mem(bytes, len, NULL, NULL); /* the good model loads */
        expect_io(m, 0, 0, "x", elem == 10 ? CLF_F16 : CLF_BF16, elem, tn);
        clf_onnx_model_destroy(&m);

        w->raw_data.len = 7;
        char part[128];
        snprintf(part, sizeof part, "a %s tensor of 4 elements needs 8", tn);
        expect_model_fail(&M, CLF_ERR_MODEL, PARTS("initializer 'w16': raw_data holds 7 bytes", part));
        w->raw_data.data = P(10); /* room for the 10 bytes the packer reads */
        memcpy(w->raw_data.data, bits, 8);
        w->raw_data.len = 10;
        expect_model_fail(&M, CLF_ERR_MODEL, PARTS("initializer 'w16': raw_data holds 10 bytes", part));
        /* int32_data: one value per element, each a uint16 bit pattern. */
        w->has_raw_data = 0;
        w->n_int32_data = 3;
        w->int32_data = P(4 * sizeof(int32_t));
        expect_model_fail(&M, CLF_ERR_MODEL,
                          PARTS("initializer 'w16': int32_data holds 3 values but the tensor's shape has 4"));
        w->n_int32_data = 4;
        w->int32_data[2] = 70000;
        snprintf(part, sizeof part, "int32_data value 70000 at 2 does not fit in %s", tn);
        expect_model_fail(&M, CLF_ERR_MODEL, PARTS("initializer 'w16'", part));
        w->int32_data[2] = 0xc000;
        w->n_float_data = 4;
        w->float_data = P(4 * sizeof(float));
        snprintf(part, sizeof part, "%s values must be in int32_data or raw_data", tn);
        expect_model_fail(&M, CLF_ERR_MODEL, PARTS("initializer 'w16'", part));
        w->n_float_data = 0;
        bytes = pack(&M, &len);
        m = load_mem(bytes, len, NULL, NULL); /* int32_data that fits loads */
        clf_onnx_model_destroy(&m);
        pool_free();
    }
    /* mlp16's x is float16: a float32 array for it is refused, a float16 one taken. */
    char path[1024];
    fixture(path, sizeof path, "onnx", "mlp16.onnx");
    clf_onnx_input_shape given = {.name = "x", .origin = "x32.npy", .dtype = CLF_F32, .rank = 2, .shape = {3, 8}};
    expect_fail_path(path, clf_onnx_params(.inputs = &given, .ninputs = 1), CLF_ERR_DTYPE,
                     PARTS("input 'x' (x32.npy) holds float but the graph declares float16[B, 8]"));
    given.dtype = CLF_BF16;
    expect_fail_path(path, clf_onnx_params(.inputs = &given, .ninputs = 1), CLF_ERR_DTYPE,
                     PARTS("input 'x' (x32.npy) holds bfloat16 but the graph declares float16[B, 8]"));
    given.dtype = CLF_F16;
    clf_onnx_model *m = load_path(path, clf_onnx_params(.inputs = &given, .ninputs = 1));
    clf_onnx_model_destroy(&m);
}
END_TEST

/* The fold memo (onnx/fold_memo.h): a fold is found again only by its
 * node and the same input types, shapes and bytes; string inputs are not
 * remembered; past CLF__FOLD_MEMO_BYTES the memo starts again. */
static bool take_first(void *ctx, const clf__fold_output *o)
{
    clf__fold_output *got = ctx;
    if (got->slot >= 0)
        return true; /* only the first output is kept */
    *got = *o;
    return true;
}

static bool stop_taking(void *ctx, const clf__fold_output *o)
{
    (void)ctx;
    (void)o;
    return false;
}

/* Whether M holds node's fold of ins (the first output in *got), by a key
 * made and freed here. */
static bool memo_finds(clf__fold_memo *M, int node, const clf__onnx_tensor *const *ins, int nin, clf__fold_output *got)
{
    clf__fold_key key;
    ck_assert(clf__fold_memo_key_make(node, ins, nin, &key));
    uint64_t bits;
    bool stopped;
    got->slot = -1;
    bool hit = clf__fold_memo_get(M, &key, take_first, got, &bits, &stopped);
    ck_assert(!stopped);
    clf__fold_memo_key_free(&key);
    return hit;
}

/* Remembers out as node's fold of ins. */
static void memo_put(clf__fold_memo *M, int node, const clf__onnx_tensor *const *ins, int nin,
                     const clf__fold_output *out)
{
    clf__fold_key key;
    ck_assert(clf__fold_memo_key_make(node, ins, nin, &key));
    clf__fold_memo_put(M, &key, out, 1, 0);
    clf__fold_memo_key_free(&key);
}

START_TEST(fold_memo_finds_only_the_same_literals)
{
    clf__fold_memo *M = clf__fold_memo_new();
    ck_assert_ptr_nonnull(M);
    int64_t shape_vals[2] = {4, 7};
    clf__onnx_tensor shape = {.type = {.elem = CLF__ONNX_INT64, .has_shape = true, .rank = 1, .dims = {{.value = 2}}},
                              .n = 2, .data = shape_vals};
    const clf__onnx_tensor *ins[2] = {&shape, NULL};
    clf__fold_key key;
    ck_assert(clf__fold_memo_key_make(5, ins, 2, &key));
    clf__fold_output got = {.slot = -1};
    uint64_t bits = 0;
    bool stopped;
    ck_assert(!clf__fold_memo_get(M, &key, take_first, &got, &bits, &stopped) && !stopped);
    const int64_t out_shape[1] = {1};
    const int64_t out_val = 28;
    clf__fold_output out = {1, CLF__ONNX_INT64, 1, out_shape, &out_val, sizeof out_val};
    clf__fold_memo_put(M, &key, &out, 1, 0x5);
    ck_assert(clf__fold_memo_get(M, &key, take_first, &got, &bits, &stopped));
    ck_assert_int_eq(got.slot, 1);
    ck_assert_int_eq(got.elem, CLF__ONNX_INT64);
    ck_assert(got.rank == 1 && got.shape[0] == 1 && got.bytes == sizeof out_val);
    ck_assert_int_eq(*(const int64_t *)got.data, 28);
    ck_assert_uint_eq(bits, 0x5);
    ck_assert(!clf__fold_memo_get(M, &key, stop_taking, NULL, &bits, &stopped) && stopped);
    clf__fold_memo_key_free(&key);
    /* Another node, other bytes, another shape, an input present where it
     * was absent: not found. */
    ck_assert(!memo_finds(M, 6, ins, 2, &got));
    shape_vals[1] = 8;
    ck_assert(!memo_finds(M, 5, ins, 2, &got));
    shape_vals[1] = 7;
    shape.type.rank = 2;
    shape.type.dims[0].value = 1;
    shape.type.dims[1].value = 2;
    ck_assert(!memo_finds(M, 5, ins, 2, &got));
    shape.type.rank = 1;
    shape.type.dims[0].value = 2;
    const clf__onnx_tensor *both[2] = {&shape, &shape};
    ck_assert(!memo_finds(M, 5, both, 2, &got));
    /* The first key again: still there. */
    ck_assert(memo_finds(M, 5, ins, 2, &got));
    /* Strings are not remembered. */
    const char *words[1] = {"a"};
    clf__onnx_tensor str = {.type = {.elem = CLF__ONNX_STRING, .has_shape = true, .rank = 1, .dims = {{.value = 1}}},
                            .n = 1, .data = words};
    const clf__onnx_tensor *sin[1] = {&str};
    ck_assert(!clf__fold_memo_key_make(5, sin, 1, &key));
    ck_assert_ptr_null(key.bytes);
    /* Nor inputs whose key alone passes what an entry may take. */
    const size_t nbig = CLF__FOLD_MEMO_ENTRY_BYTES / sizeof(int64_t) + 1;
    int64_t *big_vals = calloc(nbig, sizeof *big_vals);
    ck_assert_ptr_nonnull(big_vals);
    clf__onnx_tensor big_in = {.type = {.elem = CLF__ONNX_INT64, .has_shape = true, .rank = 1,
                                        .dims = {{.value = (int64_t)nbig}}},
                               .n = nbig, .data = big_vals};
    const clf__onnx_tensor *bin[1] = {&big_in};
    ck_assert(!clf__fold_memo_key_make(5, bin, 1, &key));
    ck_assert_ptr_null(key.bytes);
    free(big_vals);
    /* Bounded: entries of a ninth of the bound each; after ten, the first
     * is gone and the last is there. */
    const size_t big = CLF__FOLD_MEMO_BYTES / 9;
    uint8_t *blob = calloc(1, big);
    ck_assert_ptr_nonnull(blob);
    const int64_t blob_shape[1] = {(int64_t)big};
    clf__fold_output bout = {0, CLF__ONNX_UINT8, 1, blob_shape, blob, big};
    for (int i = 0; i < 10; i++)
        memo_put(M, 100 + i, ins, 2, &bout);
    ck_assert(!memo_finds(M, 100, ins, 2, &got));
    ck_assert(memo_finds(M, 109, ins, 2, &got));
    ck_assert(got.bytes == big);
    /* One entry larger than CLF__FOLD_MEMO_ENTRY_BYTES is not kept. */
    uint8_t *huge = calloc(1, CLF__FOLD_MEMO_BYTES / 4);
    ck_assert_ptr_nonnull(huge);
    const int64_t huge_shape[1] = {(int64_t)(CLF__FOLD_MEMO_BYTES / 4)};
    clf__fold_output hout = {0, CLF__ONNX_UINT8, 1, huge_shape, huge, CLF__FOLD_MEMO_BYTES / 4};
    memo_put(M, 200, ins, 2, &hout);
    ck_assert(!memo_finds(M, 200, ins, 2, &got));
    free(blob);
    free(huge);
    clf__fold_memo_free(M);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("onnx");
    clf_test_add_case(s, "binary_model_loads_and_runs", binary_model_loads_and_runs);
    clf_test_add_case(s, "raw_and_typed_initializers_are_equal", raw_and_typed_initializers_are_equal);
    clf_test_add_case(s, "inputs_outputs_and_nodes_are_queryable", inputs_outputs_and_nodes_are_queryable);
    clf_test_add_case(s, "initializer_listed_as_input_is_a_constant", initializer_listed_as_input_is_a_constant);
    TCase *tc = tcase_create("text_and_binary_give_the_same_graph");
    tcase_add_loop_test(tc, text_and_binary_give_the_same_graph, 0, (int)(sizeof graphs / sizeof graphs[0]));
    suite_add_tcase(s, tc);
    clf_test_add_case(s, "text_in_memory_and_forced_formats", text_in_memory_and_forced_formats);
    clf_test_add_case(s, "shape_chains_and_masks_fold_at_load", shape_chains_and_masks_fold_at_load);
    clf_test_add_case(s, "fold_memo_finds_only_the_same_literals", fold_memo_finds_only_the_same_literals);
    clf_test_add_case(s, "unknown_attributes_are_refused", unknown_attributes_are_refused);
    clf_test_add_case(s, "ops_before_their_first_opset_are_refused", ops_before_their_first_opset_are_refused);
    clf_test_add_case(s, "constant_of_shape_extents_overflowing", constant_of_shape_extents_overflowing);
    clf_test_add_case(s, "text_literals_keep_their_bytes", text_literals_keep_their_bytes);
    clf_test_add_case(s, "external_data_loads", external_data_loads);
    clf_test_add_case(s, "external_data_errors", external_data_errors);
    clf_test_add_case(s, "bad_models_are_refused_clearly", bad_models_are_refused_clearly);
    clf_test_add_case(s, "deep_nesting_is_refused", deep_nesting_is_refused);
    clf_test_add_case(s, "truncated_and_corrupt_bytes_fail_cleanly", truncated_and_corrupt_bytes_fail_cleanly);
    clf_test_add_case(s, "binary_model_runs_on_the_device", binary_model_runs_on_the_device);
    clf_test_add_case(s, "weights_are_not_widened", weights_are_not_widened);
    clf_test_add_case(s, "allocation_failures_are_reported", allocation_failures_are_reported);
    clf_test_add_case(s, "fuzzer_crashes_are_refused_in_one_line", fuzzer_crashes_are_refused_in_one_line);
    clf_test_add_case(s, "identity_of_a_constant_and_concat_of_empty_tensors",
                      identity_of_a_constant_and_concat_of_empty_tensors);
    clf_test_add_case(s, "integer_pow_by_a_constant_exponent_is_exact", integer_pow_by_a_constant_exponent_is_exact);
    clf_test_add_case(s, "storage_float_pow_keeps_fractions", storage_float_pow_keeps_fractions);
    clf_test_add_case(s, "gelu_tanh_approximation", gelu_tanh_approximation);
    clf_test_add_case(s, "attention_op_cases", attention_op_cases);
    clf_test_add_case(s, "attention_op_presents_in_place", attention_op_presents_in_place);
    clf_test_add_case(s, "attention_op_exported_block", attention_op_exported_block);
    clf_test_add_case(s, "attention_op_refusals", attention_op_refusals);
    clf_test_add_case(s, "attention_op_causal_without_queries", attention_op_causal_without_queries);
    clf_test_add_case(s, "half_models_declare_f16_and_bf16", half_models_declare_f16_and_bf16);
    clf_test_add_case(s, "f16_mlp_matches_numpy", f16_mlp_matches_numpy);
    clf_test_add_case(s, "f16_layer_norm_and_softmax_near_the_max", f16_layer_norm_and_softmax_near_the_max);
    clf_test_add_case(s, "f16_bf16_casts_round_to_nearest_even", f16_bf16_casts_round_to_nearest_even);
    clf_test_add_case(s, "bad_f16_initializers_are_refused_clearly", bad_f16_initializers_are_refused_clearly);
    clf_test_add_case(s, "f16_bf16_every_node_rounds", f16_bf16_every_node_rounds);
    clf_test_add_case(s, "text_f16_and_bf16_literals_round_to_nearest_even",
                      text_f16_and_bf16_literals_round_to_nearest_even);
    tc = tcase_create("f16_single_onnx_nodes_round_once");
    tcase_add_loop_test(tc, f16_single_onnx_nodes_round_once, 0, (int)(sizeof once16 / sizeof once16[0]));
    suite_add_tcase(s, tc);
    tc = tcase_create("onnx_node_tests_match");
    tcase_add_loop_test(tc, onnx_node_tests_match, 0, (int)(sizeof node_tests / sizeof node_tests[0]));
    suite_add_tcase(s, tc);
    return clf_test_run_suite(s);
}
